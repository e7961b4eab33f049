"""The explorer's state transitions and panels, without a browser."""
import re

import graphviz
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.widgets import ExplorerState, minidot, show, svgtools


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


def test_step_forward_and_back_walk_the_backward_pass_in_tape_order(explorer):
    st = explorer.state
    steps = st.trace.steps
    assert st.mode == "backward" and st.step == len(steps)
    st.set_step(0)
    assert st.current is None
    st.step_forward()
    assert st.current == steps[0] == st.trace.target
    st.step_forward()
    assert st.current == steps[1]
    st.step_back()
    assert st.current == steps[0]
    st.set_step(99)
    assert st.step == len(steps)
    st.step_back(), st.set_step(-5)
    assert st.step == 0


def test_step_classes_split_edges_into_done_and_pending(explorer):
    st = explorer.state
    tr = st.trace
    flowing = {e.id for e in tr.edges if e.contribution is not None}
    st.set_step(0)
    c0 = st.step_classes()
    assert set(c0["pending_edges"]) == flowing and not c0["done_edges"]
    st.set_step(1)
    c1 = st.step_classes()
    just = {e.id for e in tr.edges_into(tr.target) if e.contribution is not None}
    assert set(c1["just_done_edges"]) == just == set(c1["done_edges"])
    st.set_step(st.max_step)
    cn = st.step_classes()
    assert set(cn["done_edges"]) == flowing and not cn["pending_edges"] and not cn["unknown_grad"]


def test_stepping_only_changes_the_style_not_the_drawing(explorer, monkeypatch):
    calls = []
    monkeypatch.setattr(adv.render, "svg", lambda src: calls.append(src) or "<svg></svg>")
    svg_before = explorer.graph.value
    styles = set()
    explorer.slider.value = 0
    for _ in range(explorer.state.max_step):
        explorer.next.click()
        styles.add(explorer.style.value)
    explorer.back.click()
    assert explorer.graph.value == svg_before and calls == []
    assert len(styles) == explorer.state.max_step
    cur = explorer.state.current
    assert f"g.node.adv-node-{cur} :is(polygon, path, ellipse) {{ {svgtools.CURRENT}" in explorer.style.value


def test_the_current_node_is_tagged_in_the_svg(explorer):
    st = explorer.state
    svg = st.drawing().svg
    for nid in st.trace.steps:
        classes = node_of(svg, f"bwd_{nid}")
        assert classes is not None and f"adv-node-{nid}" in classes.split()


def test_select_node_updates_inspector_and_rejects_unknown_ids(explorer):
    st = explorer.state
    tanh = next(n for n in st.trace.nodes if n.op == "tanh")
    explorer.node_pick.value = tanh.id
    assert st.selected == tanh.id
    html = explorer.inspector.value
    assert "tanh" in html and "∂y/∂x = 1 − y²" in html and "local Jacobian" in html
    # the Jacobian of tanh at w is diag(1 - tanh(w)^2), printed in the heat-map table
    d = 1 - np.tanh([0.5, -1.0]) ** 2
    assert adv.trace._num(d[0]) in html and adv.trace._num(d[1]) in html
    assert f".adv-node-{tanh.id} :is(polygon, path, ellipse) {{ {svgtools.SELECTED}" in explorer.style.value
    with pytest.raises(KeyError):
        st.select("n999")


def test_label_toggles_hide_label_kinds_by_css(explorer):
    explorer.labels["value"].value = False
    assert ".adv-t-value { display: none; }" in explorer.style.value
    explorer.labels["grad"].value = False
    assert ".adv-t-grad" in explorer.style.value and ".adv-t-contrib" in explorer.style.value
    explorer.labels["value"].value = True
    assert ".adv-t-value { display: none; }" not in explorer.style.value
    with pytest.raises(ValueError, match="label kind"):
        explorer.state.set_label("colour", True)


def test_view_switch_draws_each_view_once_and_caches_it(explorer):
    st = explorer.state
    made = st.drawings_made
    explorer.view.value = "forward"
    assert "adv-fwd" in explorer.graph.value and "adv-bwd" not in explorer.graph.value
    explorer.view.value = "backward"
    explorer.view.value = "forward"
    assert st.drawings_made == made + 2
    explorer.view.value = "tape"
    assert "adv-tape-table" in explorer.graph.value and "<svg" not in explorer.graph.value
    explorer.collapse.value = "layers"
    explorer.view.value = "both"
    assert st.drawings_made == made + 3
    with pytest.raises(ValueError, match="view must be"):
        st.set_view("sideways")


def test_forward_mode_walks_ops_one_at_a_time(explorer):
    explorer.mode.value = "forward"
    st = explorer.state
    assert st.step == 0 and explorer.slider.max == len(st.ops)
    cls0 = st.step_classes()
    assert set(cls0["not_computed"]) == set(st.ops)
    explorer.next.click()
    assert st.current == st.ops[0]
    assert st.ops[0] not in st.step_classes()["not_computed"]
    assert f"{st.ops[0]} = tanh(x=" in explorer.step_panel.value


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
        assert f"<td>{adv.trace._num(v)}</td>" in html
    assert "ḡ_x" in html and "ḡ_y" in html and "∂y/∂x" in html


def test_why_none_panel_explains_and_marks_the_unwatched_constant(explorer):
    st = explorer.state
    html = explorer.why.value
    assert "not_watched" in html and "tape.watch" in html and "&#x27;c&#x27;" in html
    c_id = next(n.id for n in st.trace.nodes if n.name == "c")
    marked = [m.ref for m in st.trace.marks]
    assert c_id in marked
    broken = [e for e in st.trace.edges if e.src == c_id]
    assert any(e.id in marked for e in broken)
    assert explorer.tabs.selected_index == 2
    assert "⚠ not watched" in st.drawing("backward").svg


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
    assert ex.state.trace.steps == tr.steps and "<svg" in ex.graph.value
    with pytest.raises(TypeError, match="show"):
        adv.show(tr, target=loss)
    with pytest.raises(TypeError, match="GradientTape or a Trace"):
        adv.show(42)


def test_tape_show_is_the_explorer():
    tape, w, c, loss = small_tape()
    ex = tape.show(loss, [w])
    assert type(ex).__name__ == "Explorer" and not ex.state.explanations


def test_labels_are_escaped_in_every_output():
    evil = adv.Variable([1.0], name="<script>alert(1)</script>")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.exp(evil))
    ex = show(tape, target=loss)
    st = ex.state
    outputs = [ex.graph.value, st.inspector_html(), st.jacobian_html(), st.step_html()]
    st.select(st.trace.node_id_of(evil))
    outputs.append(st.inspector_html())
    for view in ("forward", "backward", "both", "tape"):
        st.set_view(view)
        outputs.append(st.graph_html())
    for text in outputs:
        assert "<script>" not in text
    assert any("&lt;script&gt;" in t for t in outputs)


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
    assert "dot` program was not found" in ex.graph.value and "apt-get install graphviz" in ex.graph.value
    svg = st.drawing().svg
    for n in st.trace.nodes:
        assert f"adv-node-{n.id}" in svg
    for e in st.trace.edges:
        assert f"adv-edge-{e.id}" in svg
    before = ex.graph.value
    ex.slider.value = 1
    ex.next.click()
    assert ex.graph.value == before and f"adv-node-{st.current}" in ex.style.value
    ex.view.value = "tape"
    assert "adv-tape-table" in ex.graph.value


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
def test_training_view_as_a_fit_callback_plots_loss_and_layer_gradients():
    from autodiff_viz.widgets import TrainingView
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]])
    model = adv.Sequential([adv.layers.Dense(4, activation="tanh", name="hidden"),
                            adv.layers.Dense(1, name="out")])
    model.compile(optimizer=adv.optimizers.SGD(0.05), loss="mse")
    view = TrainingView(probe=(x[:16], y[:16]))
    history = model.fit(x, y, epochs=4, batch_size=16, callbacks=[view], verbose=0)
    assert view.losses == pytest.approx(history.history["loss"])
    assert len(view.grad_history) == 4 and set(view.grad_history[0]) == {"hidden", "out"}
    assert all(v > 0 for v in view.grad_history[-1].values())
    assert "<polyline" in view.curve.value and "epoch (1 … 4)" in view.curve.value
    assert "hidden" in view.bars.value and "‖ḡ‖ =" in view.bars.value and "since epoch 1" in view.bars.value
    assert "epoch 4" in view.title.value


def test_training_view_fed_by_hand_escapes_layer_names():
    from autodiff_viz.widgets import TrainingView
    view = TrainingView()
    assert "no gradient measured yet" in view.bars.value
    view.update(0, 1.0, {"<b>l1</b>": 0.5}, val_loss=1.2)
    view.update(1, 0.5, {"<b>l1</b>": 0.25}, val_loss=0.9)
    assert view.losses == [1.0, 0.5] and view.val_losses == [1.2, 0.9]
    assert "<b>l1</b>" not in view.bars.value and "&lt;b&gt;l1&lt;/b&gt;" in view.bars.value
    assert "×0.5 since epoch 1" in view.bars.value and "val_loss (dashed)" in view.curve.value
