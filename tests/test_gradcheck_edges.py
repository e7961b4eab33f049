"""check_grads(..., per_edge=True): each recorded op checked alone, so a wrong rule is named."""
import os

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.records.gradcheck import GradientCheckError, check_edges

HERE = os.path.abspath(__file__)


def line_of(tag: str) -> str:
    return code_lines.line_of(HERE, tag)


def define_cube(name, slope):
    """A course's custom op ``y = x³`` whose VJP uses ``slope·x²`` (3 is right); its JVP is right."""
    return adv.rules.define(
        name, lambda x: x ** 3, elementwise=True, doc="y = x³",
        x=("3x²", lambda g, y, x: g * slope * x * x, lambda dx, y, x: dx * 3 * x * x))


@pytest.fixture
def wrong_cube():
    yield define_cube("test_wrong_cube", 2)
    adv.rules.TABLE.pop("test_wrong_cube")


@pytest.fixture
def right_cube():
    yield define_cube("test_right_cube", 3)
    adv.rules.TABLE.pop("test_right_cube")


def mlp(x, W):
    return adv.sum(adv.nn.softmax(adv.tanh(x @ W) * 2.0, axis=-1) ** 2)  # <- mlp


def test_every_edge_of_a_correct_function_passes():
    rng = np.random.default_rng(0)
    report = adv.check_grads(mlp, [rng.normal(size=(3, 2)), rng.normal(size=(2, 4))], per_edge=True)
    assert report.ok
    ops = [(e.op, e.input_name, e.mode) for e in report.edges]
    assert ops == [(op, name, mode) for op, names in [("matmul", ("x", "W")), ("tanh", ("x",)),
                                                     ("multiply", ("a",)), ("softmax", ("x",)),
                                                     ("power", ("a",)), ("sum", ("x",))]
                   for name in names for mode in ("reverse", "forward")]
    tanh = next(e for e in report.edges if e.op == "tanh")
    assert tanh.factor == adv.rules.TABLE["tanh"].inputs[0].factor
    assert tanh.location == line_of("mlp")
    assert all(e.max_abs_error < 1e-8 for e in report.edges)
    assert report.failing_edges() == [] and report.marks() == {}


def test_a_rule_with_a_wrong_vjp_is_named(wrong_cube, right_cube):
    def f(x):
        return adv.sum(adv.sin(wrong_cube(x)))  # <- wrong-op
    report = adv.check_grads(f, [np.array([0.5, -1.0])], per_edge=True)
    assert not report.ok
    bad = report.failing_edges()
    assert [(e.op, e.input_name, e.mode) for e in bad] == [("test_wrong_cube", "x", "reverse")]
    assert bad[0].location == line_of("wrong-op")
    np.testing.assert_allclose(bad[0].max_abs_error, 1.0)      # |2x² − 3x²| at x = −1
    assert all(e.ok for e in report.edges if e.op != "test_wrong_cube")
    assert "MISMATCH" in str(report) and "test_wrong_cube" in str(report)
    assert "MISMATCH" in report._repr_html_()

    fixed = adv.check_grads(lambda x: adv.sum(adv.sin(right_cube(x))), [np.array([0.5, -1.0])], per_edge=True)
    assert fixed.ok and len(fixed.edges) == 6


def test_failing_edge_is_marked_on_the_trace(wrong_cube):
    report = adv.check_grads(lambda x: adv.sum(wrong_cube(x) * 2.0), [np.array([1.5])], per_edge=True)
    (edge_ref, reason), = report.marks().items()
    trace = report.trace()
    marked = [m for m in trace.marks if "gradient check failed" in m.reason]
    assert len(marked) == 1
    edge = trace.edge(marked[0].ref)
    assert trace.node(edge.dst).op == "test_wrong_cube"
    assert trace.node_id_of(edge_ref[0]) == edge.src and trace.node_id_of(edge_ref[1]) == edge.dst


def test_wrong_custom_gradient_is_caught_whole_and_per_edge():
    @adv.custom_gradient
    def bad_square(x):
        return x * x, lambda dy: dy * x            # should be 2·x·dy

    @adv.custom_gradient
    def good_square(x):
        return x * x, lambda dy: dy * 2.0 * x

    point = [np.array([1.0, -2.0])]
    report = adv.check_grads(lambda x: adv.sum(bad_square(x)), point, modes=("reverse",), per_edge=True)
    assert not report.ok
    assert [r.ok for r in report.rows] == [False]
    assert [(e.op, e.ok) for e in report.edges] == [("custom:bad_square", False), ("sum", True)]

    report = adv.check_grads(lambda x: adv.sum(good_square(x)), point, modes=("reverse",), per_edge=True)
    assert report.ok and [e.op for e in report.edges] == ["custom:good_square", "sum"]


def test_raise_on_error_shows_the_edge_table(wrong_cube):
    with pytest.raises(GradientCheckError, match="per edge") as info:
        adv.check_grads(lambda x: adv.sum(wrong_cube(x)), [np.array([2.0])], per_edge=True, raise_on_error=True)
    assert "test_wrong_cube" in str(info.value)


def test_check_edges_alone_and_the_trace_needs_per_edge():
    rows = check_edges(lambda a, b: adv.sum(a * b), [np.ones(2), np.arange(2.0)], argnums=1)
    assert [(r.op, r.input_name) for r in rows] == [("multiply", "b")] * 2 + [("sum", "x")] * 2
    assert all(r.ok for r in rows)
    with pytest.raises(ValueError, match="per_edge=True"):
        adv.check_grads(lambda a: adv.sum(a), [np.ones(2)]).trace()


def test_integer_cast_output_is_reported_not_checked():
    rows = check_edges(lambda a: adv.sum(adv.cast(a, "float32")), [np.ones(2)])
    cast = [r for r in rows if r.op == "cast"]
    assert cast and all(r.ok and "float32" in r.note for r in cast)


def test_an_edge_made_in_a_notebook_cell_is_placed_as_the_cell():
    """The where column says "cell [7], line 2" (as explain does), not the kernel's temporary file name."""
    namespace = {"adv": adv}
    exec(compile("def f(x):\n    return adv.sum(adv.tanh(x))\n", "<ipython-input-7-0a1b2c3d>", "exec"), namespace)
    report = adv.check_grads(namespace["f"], [np.array([0.3, -0.2])], per_edge=True)
    assert {e.location for e in report.edges} == {"cell [7], line 2"}
