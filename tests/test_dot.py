"""DOT views: golden files, escaping, collapsing, folding big graphs.

Golden files live in tests/golden/. After an intended change of the drawing,
regenerate them with ``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_dot.py``
and review the diff.
"""
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.views import dot, render

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


@pytest.fixture
def no_locations():
    """Golden drawings must not depend on file paths and line numbers."""
    old = adv.config.capture_locations
    adv.config.capture_locations = False
    yield
    adv.config.capture_locations = old


def tanh_square():
    w = adv.Variable([0.5, -1.0], name="w")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.tanh(w) ** 2)
    return tape.trace(loss)


def fan_out():
    x = adv.Variable(0.7, name="x")
    with adv.GradientTape() as tape:
        a = adv.sin(x)
        y = a * x + adv.exp(a)
    return tape.trace(y)


def dense_layer():
    x = adv.constant([[1.0, 2.0]], name="x")
    W = adv.Variable([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], name="W")
    b = adv.Variable([0.0, 0.1, -0.1], name="b")
    with adv.GradientTape() as tape:
        with adv.name_scope("dense"):
            h = adv.nn.relu(x @ W + b)
        loss = adv.sum(h) + adv.argmax(h).astype("float64")
    return tape.trace(loss)


CASES = {"tanh_square": tanh_square, "fan_out": fan_out, "dense_layer": dense_layer}


@pytest.mark.parametrize("view", ["forward", "backward", "both"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case, view, no_locations):
    text = CASES[case]().to_dot(view)
    path = os.path.join(GOLDEN, f"{case}.{view}.dot")
    if UPDATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        assert text == f.read(), f"{path} differs; if intended, regenerate with UPDATE_GOLDEN=1"


def test_same_program_same_dot_text():
    assert tanh_square().to_dot("both") == tanh_square().to_dot("both")


def test_backward_view_has_factors_contributions_and_accumulation():
    tr = fan_out()
    text = tr.to_dot("backward")
    assert "ḡ_x = ḡ_y · cos x" in text and "ḡ_a = ḡ_y · b" in text      # whole formulas, no dangling dots
    assert '"bwd_acc_n0"' in text and '"bwd_acc_n1"' in text    # x and a both fan out
    # each contribution arrives at the Σ node, the Σ node feeds the tensor
    assert len(re.findall(r'-> "bwd_acc_n0"', text)) == 2
    assert '"bwd_acc_n0" -> "bwd_n0"' in text
    assert "ḡ = 1 (seed)" in text


def test_both_view_shows_both_panels_with_linked_ids():
    text = tanh_square().to_dot("both")
    assert "subgraph cluster_forward" in text and "subgraph cluster_backward" in text
    for nid in ("n0", "n1", "n3", "n4"):
        assert f'"fwd_{nid}"' in text and f'"bwd_{nid}"' in text
    assert 'label="w\\n(2,) float64' in text              # titled by name, no internal id


def _svg_texts(svg):
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    return root, ["".join(t.itertext()) for t in root.iter(ns + "text")]


def test_labels_are_escaped_in_dot_and_svg():
    evil = '<script>alert("x")</script> & &lt; \\N'
    x = adv.Variable([1.0, 2.0], name=evil)
    with adv.GradientTape() as tape:
        y = adv.sum(x * x)
    tr = tape.trace(y).with_marks([("n0", '"quoted" <b>reason</b>')])
    for view in dot.VIEWS:
        svg = render.svg(tr.to_dot(view))
        root, texts = _svg_texts(svg)
        assert not list(root.iter("{http://www.w3.org/2000/svg}script"))
        assert "<script>" not in svg
        assert evil in texts
        assert '⚠ "quoted" <b>reason</b>' in texts


def test_marks_and_highlight_are_drawn():
    tr = tanh_square()
    text = tr.with_marks([("n1", "saturates"), ("e0", "tiny factor")]).to_dot("backward", highlight=["n4"])
    node = next(line for line in text.splitlines() if line.startswith('  "bwd_n1" ['))
    assert 'color="#d62728"' in node and "⚠ saturates" in node
    edge = next(line for line in text.splitlines() if 'id="bwd_e0"' in line)
    assert 'color="#d62728"' in edge and "⚠ tiny factor" in edge
    target = next(line for line in text.splitlines() if line.startswith('  "bwd_n4" ['))
    assert 'penwidth="3"' in target and 'color="#1f77b4"' in target


def _edges(text, prefix="fwd_"):
    return sorted(re.findall(rf'"{prefix}(\w+)" -> "{prefix}(\w+)"', text))


def two_layers():
    x = adv.constant(np.ones((2, 3)), name="x")
    W1 = adv.Variable(np.full((3, 4), 0.1), name="W1")
    W2 = adv.Variable(np.full((4, 1), 0.2), name="W2")
    with adv.GradientTape() as tape:
        with adv.name_scope("model"):
            with adv.name_scope("dense_1"):
                h = adv.tanh(x @ W1)
            with adv.name_scope("dense_2"):
                out = h @ W2
        loss = adv.mean(out * out)
    return tape.trace(loss)


def test_collapse_layers_keeps_edges_between_layers():
    tr = two_layers()
    # n0 x, n1 W1, n2 matmul, n3 tanh | n4 W2, n5 matmul | n6 multiply, n7 mean
    assert _edges(tr.to_dot("forward", collapse=None)) == sorted([
        ("n0", "n2"), ("n1", "n2"), ("n2", "n3"), ("n3", "n5"), ("n4", "n5"), ("n5", "n6"), ("n5", "n6"),
        ("n6", "n7")])
    text = tr.to_dot("forward", collapse="layers")
    # the named input x stays outside the layer it feeds; each weight is drawn beside its layer; the line
    # loss = adv.mean(out * out), written beside the model, is one box titled loss
    assert _edges(text) == [("g1", "g2"), ("g2", "g3"), ("n0", "g1"), ("n1", "g1"), ("n4", "g2")]
    assert re.search(r'"fwd_g3" \[[^\]]*label="loss\\n', text)
    assert "dense_1" in text and "dense_2" in text and "[model/dense_1]" in text
    crossing = next(line for line in text.splitlines() if '"fwd_g1" -> "fwd_g2"' in line)
    assert "h (2, 4)" in crossing                        # the tensor that crosses, by the learner's name
    squared = next(line for line in text.splitlines() if '"fwd_g2" -> "fwd_g3"' in line)
    assert "out (2, 1)" in squared and "2 edges" in squared   # out * out: one tensor used twice
    assert _edges(tr.to_dot("backward", collapse="layers"), "bwd_") == [
        ("g1", "n0"), ("g1", "n1"), ("g2", "g1"), ("g2", "n4"), ("g3", "g2")]


def test_collapse_by_depth():
    tr = two_layers()
    one = tr.to_dot("forward", collapse=1)
    assert _edges(one) == [("g0", "g3"), ("n0", "g0"), ("n1", "g0"), ("n4", "g0")]
    assert "ops" not in one.split("subgraph cluster_legend")[0]        # no op counts, what a learner reads
    folded = tr.to_dot("forward", expanded=())       # "auto", all folded: the weights are counted inside the box
    assert _edges(folded) == [("g0", "g3"), ("n0", "g0")] and "2 weights" in folded
    assert tr.to_dot("forward", collapse=2) == tr.to_dot("forward", collapse="layers")


@pytest.mark.parametrize("kwargs, match", [
    ({"view": "sideways"}, "view must be one of"), ({"collapse": "scopes"}, "collapse must be"),
    ({"collapse": True}, "collapse must be"),
    ({"collapse": 0}, "collapse must be")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tanh_square().to_dot(**kwargs)


def rnn(steps, scoped=False):
    rng = np.random.default_rng(0)
    xs = adv.constant(rng.normal(size=(steps, 1, 3)), name="xs")
    W = adv.Variable(rng.normal(size=(3, 4)) * 0.3, name="W")
    U = adv.Variable(rng.normal(size=(4, 4)) * 0.3, name="U")
    h = adv.constant(np.zeros((1, 4)), name="h0")
    with adv.GradientTape() as tape:
        for t in range(steps):
            if scoped:
                with adv.name_scope(f"step_{t}"):
                    h = adv.tanh(xs[t] @ W + h @ U)
            else:
                h = adv.tanh(xs[t] @ W + h @ U)
        loss = adv.sum(h * h)
    return tape.trace(loss)


def _box_count(text):
    """Drawn boxes, not counting the small copies of a shared weight beside each use."""
    return len([m for m in re.findall(r'^  "([a-z]+_\w+)" \[', text, flags=re.M) if "_at_" not in m])


@pytest.mark.parametrize("scoped", [False, True])
def test_rnn_over_200_steps_folds_to_a_readable_drawing(scoped):
    tr = rnn(200, scoped)
    assert len(tr.nodes) > 1000
    for view in ("forward", "backward"):
        text = tr.to_dot(view)
        assert _box_count(text) <= dot.NODE_BUDGET + 10        # boxes plus a few Σ nodes
        svg = render.svg(text)
        root, texts = _svg_texts(svg)
        if scoped:      # 200 scopes of one structure in a row: one box "× 200" with ‖ḡ‖ of each step
            assert any("× 200" in t for t in texts) and "folded into one box" not in text
        else:
            assert "folded into one box" in text and "budget=None" in text
            assert any("folded middle of the tape" in t for t in texts)
        width = float(root.get("width").rstrip("pt"))
        height = float(root.get("height").rstrip("pt"))
        assert width < 4000 and height < 8000                # a page you can scroll, not a smear
    assert _box_count(tr.to_dot("forward", collapse=None, budget=None)) == len(tr.nodes)


def test_small_graph_is_never_folded():
    text = rnn(3).to_dot("forward")
    assert "folded" not in text.split("subgraph cluster_legend")[0]


# ---------------------------------------------------------------------------
# Fold by meaning, the learner's names, rolled loops
# ---------------------------------------------------------------------------
def mlp_with_loss_and_function():
    rng = np.random.default_rng(0)
    model = adv.Sequential([adv.layers.Dense(16, activation="tanh"), adv.layers.Dense(3)])
    x = adv.constant(rng.normal(size=(8, 4)), name="x")
    labels = rng.integers(0, 3, size=8)
    loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)

    def sharpen(z):
        return adv.tanh(z) * 2.0

    with adv.GradientTape() as tape:
        logits = model(x)
        scores = sharpen(logits)
        loss = loss_fn(labels, scores)
    return tape.trace(loss), model


def test_layers_losses_and_the_users_functions_are_folded_boxes_by_default():
    tr, model = mlp_with_loss_and_function()
    m, (d1, d2) = model.name, (layer.name for layer in model.layers)
    assert set(tr.groups()) == {m, f"{m}/{d1}", f"{m}/{d2}", "sharpen()", "sparse_categorical_crossentropy"}
    lay = dot.layout(tr)
    # the model is drawn open one level: its layers are the boxes; the loss and the function stay one box
    assert sorted(b.title for b in lay.boxes.values() if b.kind == "group") == sorted([
        d1, d2, "sharpen()", "sparse_categorical_crossentropy"])
    assert {b.what for b in lay.boxes.values() if b.kind == "group"} == {"layer", "function"}
    opened = dot.layout(tr, expanded=())             # everything folded: the model is one box
    assert m in {b.title for b in opened.boxes.values()}
    # box ids are the same whatever is open: the SVG element of a box never changes its id
    ids = {b.key: b.id for b in lay.boxes.values() if b.key}
    assert all(ids[b.key] == b.id for b in opened.boxes.values() if b.key in ids)
    # the edge out of a folded box states its backward formula (a generic sentence for the learner's function)
    text = tr.to_dot("backward")
    vjp = next(line for line in text.splitlines() if "through sharpen()" in line)
    assert "ḡ_logits = ḡ_" in vjp and "back through sharpen(), op by op" in vjp and "norm " in vjp
    assert "ḡ_sharpen(…) = (softmax(sharpen(…)) − onehot(labels)) / N" in text     # the loss's own formula
    assert "VJP of" not in text
    everything = tr.to_dot("forward", expanded=set(tr.groups()))
    assert '"fwd_g' not in everything


def test_a_mark_inside_a_folded_box_opens_it_unless_the_boxes_are_given():
    """A failed check or a broken path marked inside a layer is drawn, not hidden in the folded box."""
    tr, model = mlp_with_loss_and_function()
    inner = model.layers[1].name
    node = next(n for n in tr.nodes if n.kind == "op" and n.scope.endswith(inner))
    marked = tr.with_marks([(node.id, "gradient check failed")])
    key = f"{model.name}/{inner}"
    assert dot.marked_keys(marked) == {model.name, key} and dot.marked_keys(tr) == frozenset()
    assert node.id in {b.id for b in dot.layout(marked).boxes.values()}       # drawn as itself, open around it
    assert "gradient check failed" in marked.to_dot("backward")
    folded = dot.layout(marked, expanded=())                                    # asked for: everything folded
    assert node.id not in {b.id for b in folded.boxes.values()}
    edge = next(e for e in tr.edges if e.dst == node.id)
    assert dot.marked_keys(tr.with_marks([(edge.id, "tiny factor")])) >= {model.name}
    from autodiff_viz.views.widgets import ExplorerState
    state = ExplorerState(marked)
    assert state.expanded == {model.name, key}          # the explorer starts with the mark in sight
    state.collapse_all()
    assert state.expanded == frozenset()                # and the learner can still fold it


def test_the_vjp_of_a_folded_box_is_the_sum_of_the_gradients_that_cross_it():
    x = adv.constant(np.array([[0.5, -1.0]]), name="x")
    W = adv.Variable(np.array([[1.0, 2.0], [3.0, -1.0]]), name="W")
    with adv.GradientTape() as tape:
        tape.watch(x)
        with adv.name_scope("layer"):
            h = adv.tanh(x @ W) + x
        loss = adv.sum(h * h)
    tr = tape.trace(loss)
    label = next(line for line in tr.to_dot("backward").splitlines() if '-> "bwd_n0"' in line)
    g = tr.node(tr.node_id_of(x)).grad.data
    assert f"norm {np.linalg.norm(g):.3g}" in label
    assert "ḡ_x = ḡ through the branch + ḡ_h (skip)" in label       # h = tanh(x·W) + x: a residual


def test_nodes_are_titled_with_the_learners_names_and_the_op_beneath():
    W = adv.Variable([[0.5, -1.0], [2.0, 0.1], [0.3, 0.3]], name="W")
    x = adv.constant([[1.0, 2.0, 3.0]], name="x")
    with adv.GradientTape() as tape:
        hidden = adv.tanh(x @ W)
        loss = adv.sum(hidden)
    tr = tape.trace(loss)
    text = tr.to_dot("forward")
    assert 'label="hidden\\ntanh\\n(1, 2) float64' in text
    assert 'label="loss\\nsum\\nscalar float64' in text
    assert 'label="matmul\\n(1, 2)' in text                 # not the assigned value: titled by its op
    # a (3, 2) weight printed as a matrix, one row per line
    assert 'label="W\\n(3, 2) float64\\n[0.5, -1]\\n[2, 0.1]\\n[0.3, 0.3]"' in text
    assert "n3 ·" not in text                                  # ids stay in the tooltip, for the inspector
    assert 'tooltip="n3 tanh' in text


def test_rolled_loop_over_rnn_steps_with_gradient_norm_per_step():
    rng = np.random.default_rng(0)
    model = adv.Sequential([adv.layers.SimpleRNN(4), adv.layers.Dense(1)])
    seq = adv.constant(rng.normal(size=(2, 6, 3)))
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(seq)))
    tr = tape.trace(loss)
    (loop,) = tr.loops()
    rnn_layer = model.layers[0]
    assert loop.count == 6 and loop.key == f"{model.name}/{rnn_layer.name}/{rnn_layer.cell.name}*"
    assert len({len(s) for s in loop.steps[1:]}) == 1          # the same ops every step
    for t in range(5):                      # h(t) is read by step t+1
        assert any(e.dst in loop.steps[t + 1] for e in tr.edges_from(loop.outputs[t]))
    assert loop.grad_norms == [tr.node(h).grad.stats["norm"] for h in loop.outputs]
    assert loop.value_norms == [tr.node(h).value.stats["norm"] for h in loop.outputs]
    opened = {model.name, f"{model.name}/{rnn_layer.name}"}
    rolled = tr.to_dot("forward", expanded=opened)
    assert "× 6 steps (rolled)" in rolled and '"fwd_l0" -> "fwd_l0"' in rolled and "t → t+1" in rolled
    from autodiff_viz.views import minidot
    drawn = ET.fromstring(minidot.svg(rolled))              # the built-in renderer draws the loop too
    assert any(g.get("id") == "fwd_l0_loop" for g in drawn.iter("{http://www.w3.org/2000/svg}g"))
    unrolled = tr.to_dot("forward", expanded=opened | {loop.key})
    assert "rolled" not in unrolled.split("subgraph cluster_legend")[0]
    assert all(f"{rnn_layer.cell.name} (SimpleRNNCell) · step {t} of 6\\n→" in unrolled for t in range(1, 7))
    short = rnn(3)                                          # 3 steps or fewer: unrolled by default
    assert short.loops() == [] or all(lp.count <= dot.ROLL_ABOVE for lp in short.loops())


def test_one_box_per_layer_rolls_a_long_loop_as_the_rolled_argument_says():
    """collapse='layers' (the explorer's "one box per layer") draws an RNN cell's 6 calls as one rolled box
    by default, each call with rolled=False; it used to ignore ``rolled`` and draw every call (with the
    RNN's weights fanned out to each, 1.3 s in Graphviz for 50 steps)."""
    rng = np.random.default_rng(0)
    model = adv.Sequential([adv.layers.SimpleRNN(4), adv.layers.Dense(1)])
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(adv.constant(rng.normal(size=(2, 6, 3))))))
    tr = tape.trace(loss)
    cell = model.layers[0].cell.name
    rolled = tr.to_dot("forward", collapse="layers")
    assert "× 6 steps (rolled)" in rolled and rolled.count(f"{cell} (SimpleRNNCell)") == 1
    unrolled = tr.to_dot("forward", collapse="layers", rolled=False)
    assert "rolled)" not in unrolled and all(f"{cell} (SimpleRNNCell) · step {t} of 6\\n→" in unrolled
                                             for t in range(1, 7))       # each call says which time step it is
    assert tr.to_dot("forward", collapse=3, rolled=False) == unrolled      # the innermost depth is the same
    render.svg(rolled)


def test_a_long_name_cannot_break_graphviz():
    x = adv.Variable([1.0, 2.0], name="w" * 40000)
    with adv.GradientTape() as tape:
        y = adv.sum(x * x)
    text = tape.trace(y).to_dot("both")
    assert max(len(line) for line in text.splitlines()) < 16384
    render.svg(text)


def test_breadcrumb_lists_the_boxes_from_the_outermost_down():
    tr = two_layers()
    assert dot.breadcrumb(tr, "model/dense_2") == ["model", "model/dense_2"]
    with pytest.raises(KeyError, match="trace.groups"):
        dot.breadcrumb(tr, "nope")


def test_to_svg_with_the_builtin_renderer_needs_no_graphviz(monkeypatch, tmp_path):
    tr = two_layers()
    monkeypatch.setenv("PATH", str(tmp_path))               # no `dot` on PATH
    svg = tr.to_svg("both", renderer="builtin")
    root = ET.fromstring(svg)
    assert any(g.get("id") == "bwd_g0" for g in root.iter("{http://www.w3.org/2000/svg}g"))
    with pytest.raises(ValueError, match="renderer must be"):
        tr.to_svg(renderer="canvas")


@pytest.mark.parametrize("budget", [1, 2, 3, 5])
def test_any_budget_folds_into_at_most_that_many_boxes_with_every_node_drawn_once(budget):
    tr = rnn(6)
    lay = dot.layout(tr, None, budget=budget)
    assert len(lay.boxes) <= max(budget, 3)              # at least: the first box, the fold, the last
    drawn = [m for b in lay.boxes.values() for m in b.members]
    assert sorted(drawn) == sorted(n.id for n in tr.nodes)
    assert all(lay.owner[m] == b.id for b in lay.boxes.values() for m in b.members)


def test_a_folded_layer_is_titled_as_summary_names_it_and_a_plain_scope_is_not():
    layer = adv.layers.Dense(2, name="same_name", dtype="float64")
    x = adv.constant([[1.0, 2.0]])
    with adv.GradientTape() as tape:
        y = adv.sum(layer(x))
    tr = tape.trace(y)
    assert tr.kinds == {"same_name": "Dense"}
    assert 'label="same_name (Dense)' in tr.to_dot("forward")
    assert adv.Trace.from_json(tr.to_json()).kinds == {"same_name": "Dense"}
    with adv.GradientTape() as tape2:                  # a plain name_scope that reuses the name is no layer
        tape2.watch(x)
        with adv.name_scope("same_name"):
            z = adv.sum(adv.tanh(x))
    plain = tape2.trace(z)
    assert plain.kinds == {} and "(Dense)" not in plain.to_dot("forward")


def _node_tops(svg_text: str) -> dict:
    """``{node id: (top, bottom)}`` of each drawn box in Graphviz's SVG (y grows downwards)."""
    out = {}
    for m in re.finditer(r'<g id="([^"]+)" class="node">(.*?)</g>\s*</g>', svg_text, re.S):
        ys = [float(y) for y in re.findall(r"[\d.-]+,([\d.-]+)", " ".join(re.findall(r'points="([^"]+)"',
                                                                                   m.group(2))))]
        if ys:
            out[m.group(1)] = (min(ys), max(ys))
    return out


def test_the_legend_is_under_a_big_picture_not_beside_it():
    """A tall picture (here 50 boxes: a chain of 48 ops) keeps its legend under the boxes: beside them, the
    legend's width adds to the picture's and shrinks every label at notebook width (Whisper with its encoder
    opened was 934 pt wide and 8.2 px for that reason)."""
    x = adv.Variable(np.linspace(-1, 1, 4), name="x")
    with adv.GradientTape() as tape:
        h = x
        for _ in range(16):
            h = adv.sin(adv.tanh(h) * 0.9) + 0.1
        loss = adv.sum(h)
    tr = tape.trace(loss)
    assert len(dot.layout(tr).boxes) > 40
    tops = _node_tops(render.svg(tr.to_dot("backward")))
    legend = tops.pop("bwd_legend")
    assert legend[0] > max(bottom for _, bottom in tops.values())
