"""The explorer's state transitions and panels, without a browser."""
import re

import graphviz
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.records.traces.model import _num
from autodiff_viz.views import minidot, render
from autodiff_viz.views import page as page_module
from autodiff_viz.views.widgets import ExplorerState, show


def small_tape():
    w = adv.Variable([0.5, -1.0], name="w")
    c = adv.constant([1.0, 2.0], name="c")
    with adv.GradientTape(persistent=True) as tape:
        h = adv.tanh(w)
        loss = adv.sum(h * h + h * c)
    return tape, w, c, loss


@pytest.fixture
def explorer():
    tape, w, c, loss = small_tape()
    return show(tape, target=loss, sources=[w, c])


def node_of(svg, gid_suffix):
    m = re.search(rf'<g id="[^"]*-{gid_suffix}" class="([^"]*)">', svg)
    return m.group(1) if m else None


def test_a_new_explorer_starts_at_the_first_step_so_next_moves_at_once(explorer):
    st = explorer.state
    steps = st.trace.steps
    assert st.mode == "backward" and st.step == 1 and st.current == steps[0] == st.trace.target
    assert explorer.graph.step == 1
    explorer.step_forward()
    assert st.current == steps[1] and explorer.graph.step == 2
    explorer.step_back()
    assert st.current == steps[0]
    explorer.go(99)
    assert st.step == len(steps)
    explorer.go(-5)
    assert st.step == 0 and st.current is None
    explorer.graph.step = 3                      # the page's ◀ ▶ and slider set the synced trait
    assert st.step == 3 and f"step 3 / {len(steps)}" in explorer.step_text.value


def _pending(payload, k, mode_index):
    return {row[0] for row in payload["els"] if row[mode_index] is not None and k < row[mode_index]}


@pytest.mark.parametrize("mode", ["backward", "forward"])
def test_the_browser_plan_paints_the_same_steps_as_the_reference_semantics(explorer, mode):
    st = explorer.state
    explorer.collapse.value = "none"
    explorer.view.value = "backward"
    explorer.mode.value = mode
    p = st.payload()
    mi = 1 if mode == "backward" else 2
    runs = p["cur"][mode]
    for k in range(st.max_step + 1):
        st.set_step(k)
        ref = st.step_classes()
        pend = _pending(p, k, mi)
        assert {f"bwd_{e}" for e in ref["pending_edges"]} == {g for g in pend if g[4:].startswith("e")}
        boxes = [b for first, b in runs if first <= k]
        assert (boxes[-1] if boxes and k else None) == ref["current"]
        just = set(p["just"][mode].get(k, []))
        assert just == {f"bwd_{e}" for e in ref["just_done_edges"]}
        if mode == "backward":
            hidden_grads = {g[4:] for g in pend if g[4:].startswith("n")}
            assert hidden_grads == set(ref["unknown_grad"])


def test_stepping_and_selecting_never_redraw(explorer, monkeypatch):
    calls = []
    monkeypatch.setattr(render, "svg", lambda src: calls.append(src) or "<svg></svg>")
    drawing = explorer.graph.drawing
    panels = set()
    explorer.go(0)
    for _ in range(explorer.state.max_step):
        explorer.step_forward()
        panels.add(explorer.step_panel.value)
    explorer.click(explorer.state.trace.nodes[0].id)
    explorer.step_back()
    assert explorer.graph.drawing is drawing and calls == []
    assert len(panels) == explorer.state.max_step


def test_the_current_node_is_tagged_in_the_svg(explorer):
    st = explorer.state
    svg = st.drawing("backward", None).svg
    for nid in st.trace.steps:
        classes = node_of(svg, f"bwd_{nid}")
        assert classes is not None and f"adv-node-{nid}" in classes.split()


def test_clicking_a_node_fills_the_inspector_and_names_come_first(explorer):
    st = explorer.state
    tanh = next(n for n in st.trace.nodes if n.op == "tanh")
    explorer.click(st.box_of(tanh.id))
    assert st.selected == tanh.id and explorer.tabs.selected_index == 1
    html = explorer.inspector.value
    assert "<b>h</b>" in html and "tanh" in html and "local Jacobian" in html and f"<code>{tanh.id}</code>" in html
    d = 1 - np.tanh([0.5, -1.0]) ** 2
    assert _num(d[0]) in html and _num(d[1]) in html
    assert explorer.graph.selected == st.box_of(tanh.id)
    assert ("h (tanh)", tanh.id) in [(label.split(" — ")[0], v) for label, v in st.node_options()]
    explorer.node_pick.value = st.trace.target
    assert explorer.graph.selected == st.box_of(st.trace.target)
    with pytest.raises(KeyError):
        st.select("n999")


def test_nothing_is_shown_before_the_step_that_computes_it(explorer):
    st = explorer.state
    w = next(n for n in st.trace.nodes if n.name == "w")
    explorer.click(w.id)
    explorer.go(0)
    assert "not computed yet" in explorer.inspector.value and "ḡ" in explorer.inspector.value
    explorer.go(st.max_step)
    assert "not computed yet" not in explorer.inspector.value
    explorer.view.value = "tape"
    p = st.payload()
    assert p["kind"] == "html" and 'class="adv-t-grad"' in p["body"]
    rows = {r[0]: r for r in p["els"]}
    assert rows[f"row_{st.trace.target}"][1] == 0                       # the seed is known at step 0
    assert all(rows[f"row_{n.id}"][1] >= 1 for n in st.trace.nodes if n.grad is not None and n.id != st.trace.target)
    assert rows[f"row_{w.id}"][1] == st.max_step


def test_clicking_an_edge_shows_its_factor_in_numbers(explorer):
    st = explorer.state
    explorer.collapse.value = "none"
    tanh = next(n for n in st.trace.nodes if n.op == "tanh")
    e = st.trace.edges_into(tanh.id)[0]
    explorer.go(0)
    explorer.click_edge(e.id)
    html = explorer.edge_panel.value
    assert explorer.tabs.selected_index == 2 and "has not reached this edge" in html
    explorer.go(st.max_step)
    html = explorer.edge_panel.value
    gx = np.asarray(e.upstream.data).ravel() @ e.jacobian
    for v in gx:
        assert f"<td>{_num(v)}</td>" in html
    assert "ḡ_y" in html and "∂y/∂x" in html and "has not reached" not in html


def test_label_toggles_only_change_a_synced_list(explorer):
    drawing = explorer.graph.drawing
    explorer.labels["value"].value = False
    explorer.labels["grad"].value = False
    assert explorer.graph.hidden == ["grad", "value"] and explorer.graph.drawing is drawing
    explorer.labels["value"].value = True
    assert explorer.graph.hidden == ["grad"]
    with pytest.raises(ValueError, match="label kind"):
        explorer.state.set_label("colour", True)


def test_view_switch_draws_each_fold_state_once_and_caches_it(explorer):
    st = explorer.state
    made = st.drawings_made
    explorer.view.value = "forward"
    assert "fwd_" in explorer.graph.drawing["body"] and "bwd_" not in explorer.graph.drawing["body"]
    explorer.view.value = "backward"
    explorer.view.value = "forward"
    assert st.drawings_made == made + 2
    explorer.view.value = "tape"
    assert "adv-tape-table" in explorer.graph.drawing["body"] and "<svg" not in explorer.graph.drawing["body"]
    explorer.collapse.value = "layers"
    explorer.view.value = "both"
    assert st.drawings_made == made + 3
    with pytest.raises(ValueError, match="view must be"):
        st.set_view("sideways")


def test_forward_mode_starts_at_its_first_op(explorer):
    explorer.mode.value = "forward"
    st = explorer.state
    assert st.step == 1 and st.current == st.ops[0] and explorer.graph.mode == "forward"
    assert set(st.step_classes()["not_computed"]) == set(st.ops[1:])
    explorer.go(0)
    explorer.step_forward()
    assert st.current == st.ops[0]
    assert "h = tanh(x=" in explorer.step_panel.value


def test_chain_rule_panel_numbers_multiply_out(explorer):
    st = explorer.state
    tr = st.trace
    k = tr.steps.index(next(n.id for n in tr.nodes if n.op == "tanh")) + 1
    st.set_step(k)
    html = st.step_html()
    e = tr.edges_into(st.current)[0]
    up = np.asarray(e.upstream.data).ravel()
    gx = up @ e.jacobian
    np.testing.assert_allclose(gx, np.asarray(e.contribution.data).ravel())
    for v in list(gx) + list(up):
        assert f"<td>{_num(v)}</td>" in html
    assert "ḡ_x" in html and "ḡ_y" in html and "∂y/∂x" in html


def test_why_none_panel_explains_names_and_flashes_the_unwatched_constant(explorer):
    st = explorer.state
    html = explorer.why.value
    assert "not_watched" in html and "tape.watch" in html and "&#x27;c&#x27;" in html
    assert not re.search(r"\b[ne]\d+\b", re.sub(r"<[^>]*>", "", html))      # no internal ids in the prose
    c_id = next(n.id for n in st.trace.nodes if n.name == "c")
    marked = [m.ref for m in st.trace.marks]
    assert c_id in marked
    assert any(e.id in marked for e in st.trace.edges if e.src == c_id)
    assert explorer.tabs.selected_index == 3
    assert "⚠ not watched" in st.drawing("backward").svg
    explorer.flash_buttons[0].click()
    assert explorer.graph.flash[1:] and st.box_of(c_id) in explorer.graph.flash[1:]


def test_why_none_for_a_loss_computed_outside_the_tape():
    w = adv.Variable([1.0, 2.0], name="w")
    with adv.GradientTape() as tape:
        y = w * 3.0
    loss = adv.sum(y)
    st = ExplorerState.from_tape(tape, target=loss, sources=[w])
    assert [ex.reason for _, ex, _ in st.explanations] == ["computed_outside_tape"]
    assert "computed_outside_tape" in st.why_none_html()


def test_jacobian_panel_shows_J_its_column_sums_and_vjp():
    x = adv.Variable([1.0, 2.0, 3.0], name="x")
    with adv.GradientTape() as tape:
        y = x[:2] * x[1:]           # y0 = x0 x1, y1 = x1 x2
    v = np.array([2.0, -1.0])
    st = ExplorerState.from_tape(tape, target=y, sources=[x], output_gradients=v)
    (row,) = st.jacobian_rows
    J = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 2.0]])
    np.testing.assert_allclose(row["J"], J)
    np.testing.assert_allclose(row["ones"], J.sum(0))
    np.testing.assert_allclose(row["vJ"], v @ J)
    with adv.GradientTape() as t2:
        y2 = x[:2] * x[1:]
    np.testing.assert_allclose(row["ones"], t2.gradient(y2, x).numpy())
    html = st.jacobian_html()
    assert "1ᵀJ" in html and "vᵀJ" in html and "<td>-3</td>" not in html and "<td>4</td>" in html
    with pytest.raises(ValueError, match="output_gradients has shape"):
        ExplorerState.from_tape(tape, target=y, sources=[x], output_gradients=np.ones(3))


def test_show_does_not_use_up_a_non_persistent_tape():
    w = adv.Variable([1.0, 2.0], name="w")
    with adv.GradientTape() as tape:
        loss = adv.sum(w * w)
    show(tape, target=loss)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [2.0, 4.0])


def test_show_accepts_a_trace_read_back_from_json():
    tape, w, c, loss = small_tape()
    tr = adv.Trace.from_json(tape.trace(loss, [w]).to_json())
    ex = adv.show(tr)
    assert ex.state.trace.steps == tr.steps and "<svg" in ex.graph.drawing["body"]
    with pytest.raises(TypeError, match="show"):
        adv.show(tr, target=loss)
    with pytest.raises(TypeError, match="GradientTape or a Trace"):
        adv.show(42)


def test_tape_show_is_the_explorer():
    tape, w, c, loss = small_tape()
    ex = tape.show(loss, [w])
    assert type(ex).__name__ == "Explorer" and not ex.state.explanations


EVIL = '<script>alert("x") & 1</script>'


def test_labels_are_escaped_in_every_output():
    evil = adv.Variable([1.0], name=EVIL)
    with adv.name_scope(EVIL):
        pass
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.exp(evil))
    ex = show(tape, target=loss)
    st = ex.state
    outputs = [st.inspector_html(), st.jacobian_html(), st.step_html(), ex.step_text.value]
    st.select(st.trace.node_id_of(evil))
    outputs.append(st.inspector_html())
    for view in ("forward", "backward", "both", "tape"):
        st.set_view(view)
        outputs.append(st.graph_html())
        outputs.append(st.payload()["body"])
    outputs.append(page_module.html_document(st.trace))
    for text in outputs:
        assert "<script>alert" not in text
    assert any("&lt;script&gt;alert(&quot;x&quot;) &amp; 1&lt;/script&gt;" in t for t in outputs)
    # titles travel as JSON and the page writes them with textContent, never as HTML
    titles = [b["t"] for b in st.payload("forward")["boxes"].values()]
    assert any(EVIL in t for t in titles)
    assert "textContent = " in adv.widgets.frontend.CORE_JS and ".innerHTML = d.body" not in \
        adv.widgets.frontend.CORE_JS.replace("canvas.innerHTML = d.body", "")


# ---------------------------------------------------------------------------
# Folding, names, gradient colours, scale
# ---------------------------------------------------------------------------
def mlp_tape():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 4)), rng.integers(0, 3, size=8)
    model = adv.Sequential([adv.layers.Dense(16, activation="tanh"), adv.layers.Dense(3)])
    with adv.GradientTape() as tape:
        logits = model(x)
        loss = adv.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
    return tape, loss


def test_clicking_a_folded_box_opens_it_and_the_breadcrumb_folds_it_back():
    tape, loss = mlp_tape()
    ex = show(tape, target=loss)
    st = ex.state
    ex.handle({"event": "collapse_all"})          # from everything folded (the default opens a model one level)
    folded = st.foldable()
    assert folded and all(ex.graph.drawing["boxes"][b]["f"] for b in folded)
    first = ex.graph.drawing
    made = st.drawings_made
    ex.click(folded[0])
    opened = ex.graph.drawing
    assert opened is not first and opened["crumbs"] and len(opened["boxes"]) > len(first["boxes"])
    assert st.drawings_made == made          # the model opened one level is the default drawing, made already
    key = opened["crumbs"][0][0]
    ex.handle({"event": "fold", "box": key})
    assert ex.graph.drawing is first and st.drawings_made == made     # cached: no new layout
    ex.click(folded[0])
    inner = [b for b in st.foldable() if b not in folded]
    if inner:
        ex.click(inner[0])
        assert len(ex.graph.drawing["crumbs"]) == 2
    ex.handle({"event": "collapse_all"})
    assert ex.graph.drawing is first and not st.expanded
    ex.handle({"event": "expand", "box": "not-a-box"})           # a stale click does nothing harmful
    assert ex.graph.drawing is first


def test_steps_inside_a_folded_box_are_told_apart():
    tape, loss = mlp_tape()
    st = show(tape, target=loss).state
    p = st.payload()
    folded = set(st.foldable())
    runs = p["cur"]["backward"]
    assert sum(run[1] in folded for run in runs) >= 1
    assert runs[0][0] == 1 and all(a[0] < b[0] for a, b in zip(runs, runs[1:]))
    assert "inside" in adv.widgets.frontend.CORE_JS          # the page shows "k / n inside" on the folded box


def test_nodes_are_titled_by_the_learners_names():
    w = adv.Variable([0.5, -1.0], name="w")
    with adv.GradientTape() as tape:
        hidden = adv.tanh(w * 2.0)
        loss = adv.sum(hidden * hidden)
    ex = show(tape, target=loss)
    st = ex.state
    titles = {b["t"] for b in st.payload("backward")["boxes"].values()}
    assert {"hidden (tanh)", "loss (sum)", "w (variable)"} <= titles
    assert "step 1 / " in ex.step_text.value and "loss (sum)" in ex.step_text.value
    assert ">hidden<" in st.drawing("forward", None).svg or "hidden" in st.drawing("forward", None).svg


def test_colour_by_gradient_uses_a_log_scale_and_greys_exact_zeros():
    from autodiff_viz.views.widgets.state import HEAT_RAMP, HEAT_ZERO, heat_colours
    colours, (lo, hi) = heat_colours({"a": 1e-6, "b": 1.0, "c": 1e3, "d": 0.0})
    assert (lo, hi) == (-6, 3) and colours["a"] == HEAT_RAMP[0] and colours["c"] == HEAT_RAMP[-1]
    assert colours["d"] == HEAT_ZERO and colours["b"] not in (HEAT_RAMP[0], HEAT_RAMP[-1])
    x = adv.Variable([-1.0, 2.0], name="x")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.nn.relu(x) * 3.0)
    ex = show(tape, target=loss)
    p = ex.state.payload("backward")
    assert p["heat"] and p["heat_range"] and p["heat_ramp"].startswith("linear-gradient")
    drawn = {row[0] for row in p["els"]}
    assert set(p["heat"]) <= drawn
    ex.graph.heat = True
    assert ex.state.heat


def test_from_tape_explains_only_the_sources_without_a_gradient(monkeypatch):
    from autodiff_viz.diagnosis import walk as diagnosis
    tape, w, c, loss = small_tape()
    asked, walked = [], []
    real_many, real_one = diagnosis.explain_many, diagnosis._explain_one
    monkeypatch.setattr(diagnosis, "explain_many", lambda t, y, ss: asked.extend(ss) or real_many(t, y, ss))
    monkeypatch.setattr(diagnosis, "_explain_one", lambda t, y, s: walked.append(s) or real_one(t, y, s))
    st = ExplorerState.from_tape(tape, target=loss, sources=[w, c])
    assert asked == [c] and walked == [c] and [ex.reason for _, ex, _ in st.explanations] == ["not_watched"]


def test_a_chain_over_the_node_budget_opens_folded_and_steps_without_new_drawings():
    v = adv.Variable(np.linspace(-1, 1, 4), name="v")
    with adv.GradientTape() as tape:
        z = v
        for _ in range(400):
            z = adv.sin(z)
        total = adv.sum(z)
    ex = show(tape, target=total)
    st = ex.state
    p = ex.graph.drawing
    assert "folded" in p["note"] and p["n"]["backward"] == 401
    assert len(p["cur"]["backward"]) < 100           # run-length coded: steps in the folded middle share a run
    made = st.drawings_made
    for k in range(0, 401, 40):
        ex.go(k)
    assert st.drawings_made == made


# ---------------------------------------------------------------------------
# Without the Graphviz binary
# ---------------------------------------------------------------------------
@pytest.fixture
def no_dot(monkeypatch):
    """Graphviz's ``dot`` missing: the python package raises as it does when the binary is not on PATH."""
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(graphviz.ExecutableNotFound):
        graphviz.Source("digraph { a }").pipe(format="svg")


def test_without_dot_the_explorer_renders_a_real_graph_and_says_why(no_dot):
    tape, w, c, loss = small_tape()
    ex = show(tape, target=loss, sources=[w, c])
    st = ex.state
    assert st.renderer == "builtin"
    note = ex.graph.drawing["note"]
    assert "dot` program was not found" in note and "apt-get install graphviz" in note
    svg = st.drawing("both", None).svg
    for n in st.trace.nodes:
        assert f"adv-node-{n.id}" in svg
    for e in st.trace.edges:
        assert f"adv-edge-{e.id}" in svg
    before = ex.graph.drawing
    ex.go(1)
    ex.step_forward()
    assert ex.graph.drawing is before and ex.graph.step == 2
    ex.view.value = "tape"
    assert "adv-tape-table" in ex.graph.drawing["body"]
    page = page_module.html_document(st.trace)
    assert page.count("<svg") == 2


def test_builtin_renderer_keeps_ids_styles_and_escapes_labels():
    evil = adv.Variable([1.0], name='<script>"x" & y</script>')
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.exp(evil))
    tr = tape.trace(loss)
    svg = minidot.svg(tr.to_dot("both"))
    assert "<script>" not in svg and "&lt;script&gt;&quot;x&quot; &amp; y&lt;/script&gt;" in svg
    ids = set(re.findall(r'<g id="([^"]+)" class="(?:node|edge)', svg))
    assert {f"fwd_{n.id}" for n in tr.nodes} <= ids and {f"bwd_{n.id}" for n in tr.nodes} <= ids
    assert 'stroke="#1f4e99"' in svg       # the target's outline, from dot.STYLES


def test_parse_attrs_reads_dot_escapes():
    attrs = minidot.parse_attrs(r'[label="a \"b\"\nc\\d" color="#444" style=invis x=<<b>t</b>>]')
    assert attrs == {"label": 'a "b"\nc\\d', "color": "#444", "style": "invis", "x": "<b>t</b>"}


# ---------------------------------------------------------------------------
# Live training view
# ---------------------------------------------------------------------------
def small_regression(n=64):
    """``(model, x, y)``: a Dense 4 tanh → Dense 1 network compiled with SGD and MSE, and a linear target."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]])
    model = adv.Sequential([adv.layers.Dense(4, activation="tanh", name="hidden"),
                            adv.layers.Dense(1, name="out")])
    model.compile(optimizer=adv.optimizers.SGD(0.05), loss="mse")
    return model, x, y


def test_training_view_as_a_fit_callback_plots_loss_and_layer_gradients():
    from autodiff_viz.views.widgets import TrainingView
    model, x, y = small_regression()
    view = TrainingView(probe=(x[:16], y[:16]))
    history = model.fit(x, y, epochs=4, batch_size=16, callbacks=[view], verbose=0)
    assert view.losses == pytest.approx(history.history["loss"])
    assert len(view.grad_history) == 4 and set(view.grad_history[0]) == {"hidden", "out"}
    assert all(v > 0 for v in view.grad_history[-1].values())
    assert "<polyline" in view.curve.value and "epoch (1 … 4)" in view.curve.value
    assert "hidden" in view.bars.value and "‖ḡ‖ =" in view.bars.value and "since epoch 1" in view.bars.value
    assert "epoch 4" in view.title.value


def test_training_view_fed_by_hand_escapes_layer_names():
    from autodiff_viz.views.widgets import TrainingView
    view = TrainingView()
    assert "no gradient measured yet" in view.bars.value
    view.update(0, 1.0, {"<b>l1</b>": 0.5}, val_loss=1.2)
    view.update(1, 0.5, {"<b>l1</b>": 0.25}, val_loss=0.9)
    assert view.losses == [1.0, 0.5] and view.val_losses == [1.2, 0.9]
    assert "<b>l1</b>" not in view.bars.value and "&lt;b&gt;l1&lt;/b&gt;" in view.bars.value
    assert "×0.5 since epoch 1" in view.bars.value and "val_loss (dashed)" in view.curve.value


def test_training_views_compared_side_by_side_share_one_scale_and_plot_layer_norms_over_epochs():
    from autodiff_viz.views.widgets import TrainingView
    slow = TrainingView()
    fast = TrainingView(compare_with=slow)
    for epoch, (a, b) in enumerate([(2.35, 2.22), (2.25, 0.9), (2.16, 0.12)]):
        slow.update(epoch, a, {"dense": 1e-4 * (epoch + 1), "out": 0.5})
        fast.update(epoch, b, {"dense": 0.3, "out": 0.2})
    ys = [[float(p.split(",")[1]) for p in re.search(r'<polyline[^>]*points="([^"]*)"', v.curve.value).group(1).split()]
          for v in (slow, fast)]
    assert ys[0][-1] - ys[0][0] < (ys[1][-1] - ys[1][0]) / 5       # 2.35→2.16 looks small next to 2.22→0.12
    assert "2.35" in slow.curve.value and "2.35" in fast.curve.value and "0.12" in slow.curve.value
    assert slow.history.value.count("<polyline") == 2 and "1e-4" in fast.history.value
    alone = TrainingView()
    alone.update(0, 2.35, None)
    alone.update(1, 2.16, None)
    assert "2.16" in alone.curve.value and "0.12" not in alone.curve.value


def test_a_recurrent_layer_over_20_steps_is_drawn_rolled_with_a_time_slider():
    rng = np.random.default_rng(0)
    rnn = adv.layers.SimpleRNN(4)
    with adv.GradientTape() as tape:
        h = rnn(rng.normal(size=(2, 20, 3)))
        loss = adv.sum(h * h)
    ex = show(tape, target=loss)
    st = ex.state
    (loop,) = st.loops()
    assert loop.count == 20 and ex.time.max == 19 and "loop over time" in ex.tabs.titles
    ex.go(st.max_step)
    ex.time.value = 5
    html = ex.loop_panel.value
    assert "t = 5" in html and "<svg" in html and 'class="adv-loop-t"' in html and "ḡ_h(5)" in html
    assert "vanishes" in html or "explodes" in html or "stays within" in html
    full = ex.loop_panel.value.count("<circle")
    assert full == 20
    ex.go(1)                                       # the walk has not reached step 5 of the loop
    assert "not computed yet" in ex.loop_panel.value and ex.loop_panel.value.count("<circle") == 0
    # opening the loop box unrolls it (a new fold state), the breadcrumb rolls it back
    while st.foldable() and not any(b.kind == "loop" for b in st.layout().boxes.values()):
        ex.click(st.foldable()[0])
    rolled = [b for b in st.layout().boxes.values() if b.kind == "loop"]
    assert rolled and rolled[0].count == 20
    ex.click_edge(f"{rolled[0].id}_loop")                   # the edge t → t+1 opens the loop over time
    assert ex.tabs.selected_index == len(ex.tabs.children) - 1
    ex.click(rolled[0].id)
    assert not any(b.kind == "loop" for b in st.layout().boxes.values())
    assert any("unrolled" in title for _, title in ex.graph.drawing["crumbs"])


def test_html_written_offline_loads_nothing_from_the_network():
    import nbformat

    from autodiff_viz.course import run_notebooks
    tape, w, c, loss = small_tape()
    ex = show(tape, target=loss, sources=[w, c])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"), nbformat.v4.new_code_cell(
        "ex", outputs=[nbformat.v4.new_output("display_data", data=ex._repr_mimebundle_())])]
    page = run_notebooks.offline_exporter().from_notebook_node(run_notebooks.static_copy(nb))[0]
    external = re.findall(r'(?:src|href)\s*=\s*["\'](https?:[^"\']*)', html_unescape(page))
    assert external == [] and "require.min.js" not in page and "mathjax" not in page.lower()
    assert "advMount" in html_unescape(page)                   # the explorer's static copy, with its script


def html_unescape(text):
    import html
    return html.unescape(text)


def test_a_big_trace_lists_a_bounded_node_menu_but_every_box_can_be_clicked():
    v = adv.Variable(np.linspace(-1, 1, 4), name="v")
    with adv.GradientTape() as tape:
        z = v
        for _ in range(300):
            z = adv.sin(z)
        total = adv.sum(z)
    ex = show(tape, target=total)
    st = ex.state
    options = st.node_options(limit=20)
    ids = [v for _, v in options]
    assert len(ids) <= 22 and st.trace.target in ids
    tail = st.trace.nodes[-3].id                       # drawn alone after the folded middle, not in a short menu
    ex.node_pick.options = options
    ex.click(st.box_of(tail))
    assert st.selected == tail and ex.node_pick.value is None and "node id" in ex.inspector.value


def _label_words(tagged) -> dict:
    """``{drawn element: [(class, word), ...]}``: every word of every label line with the class of its line."""
    out, cur = {}, None
    for line in tagged.svg.splitlines():
        m = re.match(r'<g id="[^"]*?-((?:fwd|bwd)_[^"]*)" class="(?:node|edge)', line)
        if m:
            cur = out.setdefault(m.group(1), [])
        elif line.startswith("<g "):
            cur = None
        t = re.match(r'<text class="([^"]*)"[^>]*>(.*)</text>$', line)
        if t and cur is not None:
            cur.extend((t.group(1), w) for w in t.group(2).replace("&#160;", " ").split())
    return out


@pytest.mark.parametrize("draw", [render.svg, minidot.svg], ids=["graphviz", "builtin"])
def test_a_wrapped_label_line_keeps_the_class_of_the_line_it_continues(draw):
    """The explorer draws the notebook's wrapped DOT (render.readable: ``ḡ_W = xᵀ · (ḡ_y ⊙ f'(z))`` and
    ``ḡ = min … max …, norm …`` split at 24 characters, continuation lines indented), so at 850 px its
    labels stay readable. Each continuation line must carry the class of the line it continues, else
    unticking "gradients ḡ" or "∂y/∂x factors" would leave the tail of a formula on screen. Word for
    word, the classes of the wrapped drawing equal those of the unwrapped one (small CNN, every op)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "pictures"))
    import make_pictures

    from autodiff_viz.views.widgets import svgtools
    adv.backend.clear_session()
    trace = make_pictures.cnn()[0]
    st = ExplorerState(trace, render_dot=draw)
    st.set_collapse(None)
    continued = set()
    for view in ("forward", "backward"):
        source = st._to_dot(view)
        plain = _label_words(svgtools.tag_svg(draw(source), trace, st.layout(), "p"))
        wrapped_svg = draw(render.readable(source))
        wrapped = _label_words(svgtools.tag_svg(wrapped_svg, trace, st.layout(), "p"))
        assert wrapped == plain
        continued |= set(re.findall(r'<text class="([^"]*)"[^>]*>(?: &#160;|  )', st.drawing(view).svg))
    assert {"adv-t-grad", "adv-t-factor", "adv-t-value"} <= continued     # the explorer draws the wrapped DOT
