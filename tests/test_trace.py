"""Traces: what the record holds, and that its numbers are the chain rule's.

The edge numbers are checked against independent computations: local
Jacobians against central finite differences of the op's forward, node
gradients against ``tape.gradient``, and each node's gradient against the
sum of the contributions on its outgoing edges.
"""
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.core import rules
from autodiff_viz.records.traces.model import VALUE_LIMIT, Summary
from autodiff_viz.views import render

RNG = np.random.default_rng(7)


def _line_of(text):
    """Line number in this file of the first line containing ``text``."""
    with open(__file__, encoding="utf-8") as f:
        for k, line in enumerate(f, start=1):
            if text in line:
                return k
    raise AssertionError(text)


def _mlp():
    x = adv.constant(RNG.normal(size=(3, 2)), name="x")
    W = adv.Variable(RNG.normal(size=(2, 4)), name="W")
    b = adv.Variable(RNG.normal(size=(4,)), name="b")
    with adv.GradientTape(persistent=True) as tape:
        with adv.name_scope("dense"):
            h = adv.tanh(x @ W + b)  # the dense line
        loss = adv.mean(h * h)
    return tape, loss, (x, W, b, h)


def test_nodes_in_tape_order_with_kinds_scope_and_location():
    tape, loss, (x, W, b, h) = _mlp()
    tr = tape.trace(loss)
    assert [n.id for n in tr.nodes] == [f"n{k}" for k in range(len(tr.nodes))]
    assert [(n.kind, n.op) for n in tr.nodes] == [
        ("constant", "constant"), ("variable", "variable"), ("op", "matmul"), ("variable", "variable"),
        ("op", "add"), ("op", "tanh"), ("op", "multiply"), ("op", "mean")]
    assert [n.index for n in tr.nodes if n.kind == "op"] == [0, 1, 2, 3, 4]
    assert tr.node(tr.node_id_of(W)).name == "W"
    assert tr.node_id_of(h) == "n5" and tr.node_id_of(h._id) == "n5"
    assert tr.node_id_of(adv.constant(1.0)) is None
    tanh = tr.node("n5")
    assert tanh.scope == "dense" and tr.node("n7").scope == ""
    assert tanh.location.file == os.path.abspath(__file__)
    assert tanh.location.line == _line_of("# the dense line")
    assert tanh.location.code == "h = adv.tanh(x @ W + b)  # the dense line"
    assert tanh.shape == (3, 4) and tanh.dtype == "float64"
    np.testing.assert_array_equal(tanh.value.data, h.numpy())
    assert tr.target == "n7"


def test_target_defaults_to_last_op_and_sources_to_watched():
    tape, loss, (x, W, b, h) = _mlp()
    tr = tape.trace()
    assert tr.target == tr.node_id_of(loss)
    assert tr.sources == [tr.node_id_of(W), tr.node_id_of(b)]


def test_factor_text_is_the_rule_tables():
    tape, loss, _ = _mlp()
    tr = tape.trace(loss)
    for e in tr.edges:
        op = tr.node(e.dst).op
        spec = rules.TABLE[op].spec(e.input_index)
        assert e.input_name == spec.name
        assert e.factor == f"∂y/∂{spec.name} = {spec.factor}"
    assert tr.edges_into("n5")[0].factor == "∂y/∂x = 1 − y²"


def test_node_gradients_equal_tape_gradient():
    tape, loss, (x, W, b, h) = _mlp()
    tr = tape.trace(loss)
    gW, gb, gh = tape.gradient(loss, [W, b, h])
    np.testing.assert_allclose(tr.node(tr.node_id_of(W)).grad.data, gW.numpy())
    np.testing.assert_allclose(tr.node(tr.node_id_of(b)).grad.data, gb.numpy())
    np.testing.assert_allclose(tr.node(tr.node_id_of(h)).grad.data, gh.numpy())
    assert tr.node(tr.target).grad.data == 1.0


def test_sum_of_fan_out_contributions_equals_node_gradient():
    x = adv.Variable(RNG.normal(size=(3,)), name="x")
    with adv.GradientTape() as tape:
        a = adv.sin(x)
        y = adv.sum(a * x + adv.exp(a) + x * x)
    tr = tape.trace(y)
    fan_outs = 0
    for n in tr.nodes:
        if n.grad is None or n.id == tr.target:
            continue
        out = [e for e in tr.edges_from(n.id) if e.contribution is not None]
        total = sum(e.contribution.data for e in out)
        np.testing.assert_allclose(total, n.grad.data, rtol=1e-12)
        fan_outs += len(out) >= 2
    assert fan_outs == 2          # x feeds sin, multiply, multiply twice; a feeds multiply and exp
    assert len([e for e in tr.edges_from("n0") if e.contribution is not None]) == 4


def _fd_jacobian(rule, values, params, i, eps=1e-6):
    """Central finite differences of the rule's numpy forward with respect to input ``i``."""
    x = values[i].astype(np.float64)
    y = np.asarray(rule.forward(*values, **params))
    J = np.zeros((y.size, x.size))
    for j in range(x.size):
        d = np.zeros(x.size)
        d[j] = eps
        plus = list(values)
        minus = list(values)
        plus[i] = x + d.reshape(x.shape)
        minus[i] = x - d.reshape(x.shape)
        J[:, j] = (np.asarray(rule.forward(*plus, **params)) -
                   np.asarray(rule.forward(*minus, **params))).ravel() / (2 * eps)
    return J


def _program(name):
    a = adv.Variable(RNG.uniform(0.5, 1.5, size=(2, 3)), name="a")
    b = adv.Variable(RNG.uniform(0.5, 1.5, size=(3,)), name="b")
    m = adv.Variable(RNG.normal(size=(3, 2)), name="m")
    return a, b, m, {
        "tanh": lambda: adv.tanh(a),
        "multiply_broadcast": lambda: a * b,
        "divide_broadcast": lambda: a / b,
        "power": lambda: a ** b,
        "matmul": lambda: a @ m,
        "sum_axis": lambda: adv.sum(a, axis=0),
        "mean": lambda: adv.mean(a),
        "max_axis": lambda: adv.max(a, axis=1),
        "softmax": lambda: adv.nn.softmax(a),
        "log_softmax": lambda: adv.nn.log_softmax(a),
        "logsumexp": lambda: adv.nn.logsumexp(a, axis=1),
        "getitem": lambda: a[1, ::2],
        "transpose": lambda: adv.transpose(a),
        "concatenate": lambda: adv.concatenate([a, m.T], axis=0),
        "stack": lambda: adv.stack([b, b * 2.0]),
        "maximum": lambda: adv.maximum(a, b),
        "broadcast_to": lambda: adv.broadcast_to(b, (2, 3)),
        "sigmoid": lambda: adv.nn.sigmoid(a),
    }[name]


@pytest.mark.parametrize("name", ["tanh", "multiply_broadcast", "divide_broadcast", "power", "matmul", "sum_axis",
                                  "mean", "max_axis", "softmax", "log_softmax", "logsumexp", "getitem", "transpose",
                                  "concatenate", "stack", "maximum", "broadcast_to", "sigmoid"])
def test_edge_jacobian_equals_finite_differences(name):
    a, b, m, f = _program(name)
    with adv.GradientTape() as tape:
        f()
    tr = tape.trace()
    checked = 0
    for rec, n in zip(tape.nodes, [n for n in tr.nodes if n.kind == "op"]):
        values = [t._value for t in rec.inputs]
        for e in tr.edges_into(n.id):
            if not e.differentiable:
                continue
            J = _fd_jacobian(rec.rule, values, rec.params, e.input_index)
            assert e.jacobian.shape == J.shape
            np.testing.assert_allclose(e.jacobian, J, atol=1e-6, err_msg=f"{n.op} input {e.input_name}")
            checked += 1
    assert checked >= 1


def test_contribution_is_upstream_times_local_jacobian():
    tape, loss, _ = _mlp()
    tr = tape.trace(loss)
    for e in tr.edges:
        if e.contribution is None:
            continue
        expected = e.upstream.data.ravel() @ e.jacobian
        np.testing.assert_allclose(e.contribution.data.ravel(), expected, rtol=1e-10, atol=1e-14)


def test_jacobian_only_for_small_sides():
    big = adv.Variable(np.ones(65))
    small = adv.Variable(np.ones(8))
    with adv.GradientTape() as tape:
        adv.sum(big) + adv.sum(adv.tanh(small))
    tr = tape.trace()
    by_op = {tr.node(e.dst).op + str(tr.node(e.src).shape): e for e in tr.edges}
    assert by_op["sum(65,)"].jacobian is None
    assert by_op["tanh(8,)"].jacobian.shape == (8, 8)


@pytest.mark.parametrize("make, reason", [
    (lambda x: adv.argmax(x).astype("float64") + x[0], "argmax has no gradient"),
    (lambda x: adv.cast(x > 0.0, "float64") * x, "greater has no gradient"),
    (lambda x: adv.stop_gradient(x) * 2.0 + x, "stop_gradient has no gradient"),
    (lambda x: adv.cast(adv.cast(x, "int64"), "float64") + x, "no gradient flows through integers"),
])
def test_edges_without_gradient_are_marked_with_the_reason(make, reason):
    x = adv.Variable([0.5, -1.0, 2.0], name="x")
    with adv.GradientTape() as tape:
        y = adv.sum(make(x))
    tr = tape.trace(y)
    dead = [e for e in tr.edges if not e.differentiable]
    assert dead and any(reason in e.no_grad_reason for e in dead)
    assert all(e.contribution is None and e.jacobian is None and not e.on_path for e in dead)
    assert tr.node("n0").on_path    # the direct path still carries a gradient


def test_nodes_off_the_path_are_not_on_path():
    x = adv.Variable(1.5, name="x")
    c = adv.constant(2.0, name="c")
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(c)
        u = adv.exp(c)          # recorded (c is watched), but depends on no source
        y = x * u
        z = adv.sin(x)          # does not lead to y
    tr = tape.trace(y, sources=[x])
    assert tr.sources == [tr.node_id_of(x)]
    on = {tr.node(n.id).title: n.on_path for n in tr.nodes}
    assert on == {"c": False, "u": False, "x": True, "y": True, "z": False}   # the learner's names
    assert tr.node(tr.node_id_of(z)).grad is None and tr.node(tr.node_id_of(u)).grad is None
    assert tr.node(tr.node_id_of(c)).kind == "watched"
    assert tape.trace(y).node(tr.node_id_of(c)).on_path   # by default every watched tensor is a source


def test_sources_restrict_the_path():
    a = adv.Variable(1.0, name="a")
    b = adv.Variable(2.0, name="b")
    with adv.GradientTape() as tape:
        y = adv.sin(a) * adv.cos(b)
    tr = tape.trace(y, sources=a)
    assert tr.node(tr.node_id_of(a)).on_path
    assert not tr.node(tr.node_id_of(b)).on_path
    assert not tr.node(tr.node_id_of(b)).grad


def test_trace_uses_no_gradient_call_and_records_nothing():
    x = adv.Variable(2.0)
    with adv.GradientTape() as outer:
        with adv.GradientTape() as tape:
            y = x * x
        n_outer = len(outer.nodes)
        tr = tape.trace(y)
        assert len(outer.nodes) == n_outer
    assert tr.node(tr.node_id_of(x)).grad.data == 4.0
    assert tape.gradient(y, x).numpy() == 4.0       # a non-persistent tape is not used up


def test_target_not_on_tape_gives_a_note_and_no_gradients():
    """build_trace (what adv.show draws) notes it; tape.trace refuses it (tests/test_diagnosis_trace_edges.py)."""
    from autodiff_viz.records.traces.build import build_trace
    x = adv.Variable(2.0)
    with adv.GradientTape() as tape:
        y = x * 3.0
    outside = y + 1.0
    tr = build_trace(tape, outside)
    assert tr.target is None and all(n.grad is None for n in tr.nodes)
    assert "not recorded by this tape" in tr.notes[0]


def test_big_values_keep_summary_statistics():
    v = np.linspace(-3.0, 5.0, VALUE_LIMIT + 1)
    x = adv.Variable(v)
    with adv.GradientTape() as tape:
        adv.sum(x * 2.0)
    leaf = tape.trace().node("n0")
    assert leaf.value.data is None
    assert leaf.value.stats == pytest.approx({"min": -3.0, "mean": 1.0, "max": 5.0, "norm": np.linalg.norm(v)})
    assert leaf.value.brief() == f"min -3 … max 5, norm {np.linalg.norm(v):.4g}"   # says what each number is
    assert Summary.of(np.arange(3.0)).brief() == "[0, 1, 2]"


def test_marks_are_added_to_a_copy():
    tape, loss, (x, W, b, h) = _mlp()
    tr = tape.trace(loss)
    marked = tr.with_marks([(h, "saturated tanh"), (("n1", "n2"), "weight read here"), ("e0", "x edge")])
    assert tr.marks == []
    assert [(m.ref, m.reason) for m in marked.marks] == [("n5", "saturated tanh"), ("e1", "weight read here"),
                                                          ("e0", "x edge")]
    assert marked.with_marks({"n7": "loss"}).marks_of("n7") == ["loss"]
    with pytest.raises(ValueError, match="n99"):
        tr.with_marks([("n99", "?")])
    with pytest.raises(ValueError, match="not in this trace"):
        tr.with_marks([(adv.constant(1.0), "?")])


def test_tape_table_lists_every_node_with_factor():
    tape, loss, _ = _mlp()
    table = tape.trace(loss).table()
    text = str(table)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "node", "op", "inputs", "shape", "value", "ḡ", "factor"]
    assert len(lines) == 2 + 8
    tanh_row = next(line for line in lines if " tanh " in line)
    assert tanh_row.split()[:5] == ["2", "n5", "tanh", "'h'", "n4"]       # the learner's name beside the op
    assert "ḡ_x = ḡ_y · (1 − y²)" in tanh_row                             # the chain-rule step, whole
    assert len(table) == 8
    assert table.to_html().count("<tr") == 9


def test_tape_table_at_a_step_shows_only_gradients_computed_so_far():
    tape, loss, _ = _mlp()
    tr = tape.trace(loss)
    grad_of = {n: r["ḡ"] for n, r in zip((n.id for n in tr.nodes), tr.table(step=0).rows)}
    assert [n for n, g in grad_of.items() if g] == [tr.target]          # step 0: only the seed
    for k in range(len(tr.steps) + 1):
        known = {r["node"] for r in tr.table(step=k).rows if r["ḡ"]}
        assert known == {n for n in tr.grad_known(k) if tr.node(n).grad is not None}
        # ḡ of a node is known once every op reading it (on the path) has been stepped
        for nid in known - {tr.target}:
            readers = [e.dst for e in tr.edges_from(nid) if e.contribution is not None]
            assert all(r in tr.steps[:k] for r in readers)
    assert {r["node"] for r in tr.table(step=len(tr.steps)).rows if r["ḡ"]} == \
        {r["node"] for r in tr.table().rows if r["ḡ"]}


def test_table_html_escapes_names():
    x = adv.Variable([1.0], name="<script>alert(1)</script>")
    with adv.GradientTape() as tape:
        adv.sum(x)
    html = tape.table()._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_without_dot_the_notebook_still_gets_an_svg_from_the_built_in_renderer(monkeypatch, tmp_path):
    """No Graphviz ``dot`` on PATH: the displayed trace is drawn by the built-in renderer, fitted to the width.

    The picture has the same boxes and edge formulas as Graphviz's; a note above it says how to install
    Graphviz for its layout. Asking for Graphviz's SVG explicitly (``to_svg()``) still says what is missing.
    """
    tape, loss, _ = _mlp()
    tr = tape.trace(loss)
    monkeypatch.setenv("PATH", str(tmp_path))
    bundle = tr._repr_mimebundle_()
    image = bundle["image/svg+xml"]
    root = ET.fromstring(image)
    assert root.tag.endswith("svg")
    drawn = " ".join(" ".join(root.itertext()).split())        # long formulas are wrapped for display
    assert "dense" in drawn and "back through dense" in drawn and "VJP of" not in drawn
    assert re.search(r'<svg style="max-width:100%;(min-width:\d+px;)?height:auto"', bundle["text/html"])
    for words in ("built-in renderer", "apt-get install graphviz", "brew install graphviz"):
        assert words in bundle["text/html"]
    with pytest.raises(render.GraphvizNotFound, match="brew install graphviz"):
        tr.to_svg()


def test_notebook_display_is_svg_when_dot_exists():
    """The displayed trace is Graphviz's SVG, scaled to the output width (the legend is never cut off)."""
    tape, loss, _ = _mlp()
    bundle = tape.trace(loss)._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg")
    drawn = " ".join(" ".join(ET.fromstring(bundle["image/svg+xml"]).itertext()).split())   # wrapped lines joined
    assert "back through dense" in drawn and "VJP of" not in drawn
    assert re.search(r'<svg style="max-width:100%;(min-width:\d+px;)?height:auto"', bundle["text/html"])
    assert "ḡ_x = ḡ_y · (1 − y²)" in render.svg(tape.trace(loss).to_dot("backward", expanded={"dense"}))


def test_an_unwatched_source_gets_no_gradient_in_the_trace_as_in_tape_gradient():
    c = adv.constant([1.0, 2.0], name="c")
    w = adv.Variable([0.5, -0.5], name="w")
    with adv.GradientTape(persistent=True) as tape:
        loss = adv.sum(c * w)
    assert tape.gradient(loss, c) is None
    trace = tape.trace(loss, [c, w])
    c_node = next(n for n in trace.nodes if n.name == "c")
    w_node = next(n for n in trace.nodes if n.name == "w")
    assert c_node.grad is None
    assert w_node.grad is not None
    assert any("not watched" in note for note in trace.notes)


def test_locations_read_as_notebook_cells():
    from autodiff_viz.base import naming
    from autodiff_viz.records.traces.model import Location
    cell = "/tmp/ipykernel_14940/1163429555.py"
    assert naming.place(cell, 8) == "cell, line 8"                       # no IPython here: count unknown
    assert naming.place("<ipython-input-3-1f2e3d>", 8) == "cell [3], line 8"
    assert str(Location("/home/me/train.py", 12, "loss = f(x)")) == "/home/me/train.py:12"

    class Shell:
        class compile:
            _filename_map = {cell: 3}

    import types
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: Shell
    import sys
    old = sys.modules.get("IPython")
    sys.modules["IPython"] = fake
    try:
        assert str(Location(cell, 8)) == "cell [3], line 8"
    finally:
        if old is None:
            del sys.modules["IPython"]
        else:
            sys.modules["IPython"] = old


@pytest.mark.parametrize("line, name", [
    ("h = adv.tanh(x @ W + b)  # hidden", "h"), ("self.h = adv.tanh(z)", "self.h"), ("loss += adv.sum(p)", "loss"),
    ("z: adv.Tensor = a @ b", "z"), ("a, b = adv.split(x, 2)", None), ("out[0] = f(x)", None),
    ("adv.sum(x)", None), ("h = adv.tanh(", None), ("a = b = f(x)", None)])
def test_the_learners_name_is_the_lines_assignment_target(line, name):
    from autodiff_viz.base.naming import assigned_name
    assert assigned_name(line) == name


def test_only_the_last_op_of_a_line_gets_its_name_and_each_loop_iteration_gets_it():
    x = adv.Variable([0.1, 0.2], name="x")
    with adv.GradientTape() as tape:
        h = x
        for _ in range(3):
            h = adv.tanh(h * 2.0)
        loss = adv.sum(h)
    tr = tape.trace(loss)
    assert [(n.op, n.label) for n in tr.nodes if n.kind == "op"] == [
        ("multiply", None), ("tanh", "h"), ("multiply", None), ("tanh", "h"), ("multiply", None),
        ("tanh", "h"), ("sum", "loss")]
    back = adv.Trace.from_json(tr.to_json())
    assert [n.title for n in back.nodes] == [n.title for n in tr.nodes]


def test_an_op_whose_value_leaves_the_tape_on_its_line_is_not_named_after_the_assignment():
    """``loss = loss - math.log(probs[i])`` assigns a Python number: the getitem is not 'loss'."""
    import math
    logits = adv.Variable([[0.5, -0.2]], name="logits")
    with adv.GradientTape() as tape:
        probs = adv.nn.softmax(logits)
        loss = 0.0
        loss = loss - math.log(probs[0, 1])
    ops = [n for n in tape.trace(probs).nodes if n.kind == "op"]
    assert [(n.op, n.label) for n in ops] == [("softmax", "probs"), ("getitem", None)]


def test_ops_in_the_users_own_function_know_the_function_and_the_call():
    def block(z):
        a = adv.tanh(z)
        return a * 2.0

    x = adv.Variable([0.1, 0.2], name="x")
    with adv.GradientTape() as tape:
        y = block(x)
        y = block(y)
        loss = adv.sum(y)
    tr = tape.trace(loss)
    ops = [n for n in tr.nodes if n.kind == "op"]
    assert [(n.op, n.function, n.call) for n in ops] == [
        ("tanh", "block", 1), ("multiply", "block", 1), ("tanh", "block", 2), ("multiply", "block", 2),
        ("sum", None, None)]
    assert ops[0].label == "a"
    assert set(tr.groups()) == {"block()", "block()#2"}


def test_edge_formulas_are_whole_and_say_when_the_batch_is_summed():
    tape, loss, (x, W, b, h) = _mlp()
    tr = tape.trace(loss)
    by = {(tr.node(e.dst).op, e.input_name): e.formula for e in tr.edges}
    assert by[("matmul", "x")] == "ḡ_x = ḡ_y · Wᵀ"
    assert by[("matmul", "W")] == "ḡ_W = xᵀ · ḡ_y"
    assert by[("add", "b")].startswith("ḡ_b = Σ_batch ḡ_y") and "sums the rows" in by[("add", "b")]
    assert by[("add", "a")] == "ḡ_a = ḡ_y"
    assert by[("tanh", "x")] == "ḡ_x = ḡ_y · (1 − y²)"


def test_a_statement_over_several_lines_still_names_its_value():
    w = adv.Variable([0.1, 0.2], name="w")
    with adv.GradientTape() as tape:
        total = adv.sum(
            adv.tanh(w) * 2.0,
        )
    tr = tape.trace(total)
    assert tr.node(tr.target).title == "total"


def test_a_function_called_inside_another_is_nested_in_its_box():
    def helper(z):
        return adv.sin(z) * 3.0

    def block(z):
        a = adv.tanh(z)
        b = helper(a)
        return b + a

    x = adv.Variable([0.1, 0.2], name="x")
    with adv.GradientTape() as tape:
        y = block(x)
        y = block(y)
        loss = adv.sum(y)
    tr = tape.trace(loss)
    assert [(n.function, n.call) for n in tr.nodes if n.kind == "op"] == [
        ("block", 1), ("helper", 1), ("helper", 1), ("block", 1),
        ("block", 2), ("helper", 2), ("helper", 2), ("block", 2), (None, None)]
    assert list(tr.groups()) == ["block()", "block()/helper()", "block()#2", "block()#2/helper()"]
    assert tr.node(tr.node_id_of(y)).title == "block(…)"           # what `return b + a` hands back



def test_path_holds_the_nodes_and_edges_from_a_source_to_the_target_and_nothing_beside():
    x = adv.constant([[1.0, 2.0]], name="x")
    W = adv.Variable([[0.5], [-1.0]], name="W")
    c = adv.Variable([3.0], name="c")
    with adv.GradientTape(persistent=True) as tape:
        h = adv.tanh(x @ W)
        side = adv.sum(W * 2.0)                   # reads W but never reaches the loss
        loss = adv.sum(h * c)
    trace = tape.trace(loss, [W, c])
    nid = trace.node_id_of
    product = trace.edges_from(nid(W))[0].dst
    mixed = trace.edges_from(nid(h))[0].dst
    chain = [nid(W), product, nid(h), mixed, nid(loss)]
    pairs = list(zip(chain, chain[1:]))
    assert trace.path(W) == chain + [trace._edge_index()[3][p].id for p in pairs]
    assert trace.path(c) == [nid(c), mixed, nid(loss), trace._edge_index()[3][(nid(c), mixed)].id,
                             trace._edge_index()[3][(mixed, nid(loss))].id]
    assert nid(side) in trace.path(W, side) and nid(loss) not in trace.path(W, side)
    assert trace.path(x, W) == []                  # W does not depend on x
    lit = trace.to_dot("backward", collapse=None, highlight=trace.path(W))
    assert lit.count('penwidth="3"') == len(trace.path(W))
    with pytest.raises(ValueError, match="path: 'e0' is not a node id"):
        trace.path("e0")
    with pytest.raises(ValueError, match="path: the tensor .* is not in this trace"):
        trace.path(adv.constant(1.0))
    with pytest.raises(TypeError, match="path: give a tensor"):
        trace.path(2.5)
