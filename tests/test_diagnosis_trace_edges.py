"""Edge cases of the why-None diagnosis, traces and exercise mode that a tester found answered wrongly."""
import json

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.records.traces.model import VALUE_LIMIT, Summary


# ----- 1. Variable.assign on the path ---------------------------------------------
@pytest.mark.parametrize("method", ["assign", "assign_add"])
def test_an_assign_on_the_path_is_named_as_where_the_gradient_stops(method):
    v = adv.Variable([1.0, 2.0], name="v")
    u = adv.Variable([0.0, 0.0], name="u")
    with adv.GradientTape() as tape:
        getattr(u, method)(v * 2.0)
        loss = adv.sum(u * 3.0)
    e = tape.explain(loss, v)
    assert e.reason == "non_differentiable_op" and e.op == method and f".{method}()" in e.message
    assert "'u'" in e.message and "assign" in e.message and "Fix: use the tensor itself" in e.message
    assert "genuinely zero" not in e.message
    assert e.location is not None and e.location.endswith(str(e.locations[0][1]))
    assert tape.gradient(loss, v) is None


def test_assigning_the_source_itself_is_found_too():
    v = adv.Variable([1.0, 2.0], name="v")
    u = adv.Variable([0.0, 0.0], name="u")
    with adv.GradientTape() as tape:
        u.assign(v)
        loss = adv.sum(u * 3.0)
    assert tape.explain(loss, v).op == "assign"


@pytest.mark.parametrize("held", [[5.0, 7.0], [2.0, 4.0]], ids=["other values", "equal to v * 2, not assigned"])
def test_a_variable_that_was_not_assigned_from_the_source_is_still_not_used(held):
    """The assign is found from the engine's note of it, not by comparing values."""
    v = adv.Variable([1.0, 2.0], name="v")
    u = adv.Variable(held, name="u")
    with adv.GradientTape() as tape:
        _ = v * 2.0
        loss = adv.sum(u * 3.0)
    assert tape.explain(loss, v).reason == "not_used"


# ----- 2. an integer index cast from the source ------------------------------------
@pytest.mark.parametrize("table", [lambda: adv.constant([10.0, 20.0, 30.0]),
                                   lambda: adv.Variable([10.0, 20.0, 30.0], name="table")])
def test_an_integer_index_cast_from_the_source_is_integer_dtype(table):
    v = adv.Variable([0.0, 2.0], name="v")
    t = table()
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.take(t, adv.cast(v, "int64")))
    e = tape.explain(loss, v)
    assert e.reason == "integer_dtype" and e.op == "cast"
    assert "an unnamed constant" not in e.message and "index" in e.message


def test_an_integer_cast_the_loss_does_not_use_leaves_not_used():
    v = adv.Variable([0.0, 2.0], name="v")
    w = adv.Variable([1.0, 1.0], name="w")
    with adv.GradientTape() as tape:
        _ = adv.cast(v, "int64")
        loss = adv.sum(w * 2.0)
    assert tape.explain(loss, v).reason == "not_used"


# ----- 3. zero-size arrays in JSON ---------------------------------------------------
def test_a_trace_with_an_empty_tensor_on_the_path_reads_back():
    v = adv.Variable([1.0, 2.0], name="v")
    with adv.GradientTape() as tape:
        loss = adv.sum(v[:0]) + adv.sum(v)
    tr = tape.trace(loss)
    back = adv.Trace.from_json(tr.to_json())
    empty = [e for e in tr.edges if e.jacobian is not None and e.jacobian.size == 0]
    assert empty and empty[0].jacobian.shape == (0, 2)
    assert back.edge(empty[0].id).jacobian.shape == (0, 2)
    assert back.to_json() == tr.to_json()


def _one_node_trace(value: dict) -> str:
    """The JSON of a trace with one constant node whose value is the summary dict ``value``."""
    return json.dumps({"schema": "autodiff_viz.trace", "version": 1, "target": None, "sources": [], "steps": [],
                       "notes": [], "marks": [], "edges": [], "kinds": {},
                       "nodes": [{"id": "n0", "kind": "constant", "op": "constant", "name": None, "tensor_id": 1,
                                  "index": None, "scope": "", "value": value, "grad": None, "location": None,
                                  "params": {}, "on_path": False}]})


@pytest.mark.parametrize("shape", [(0,), (0, 2), (2, 0), (2, 0, 3), (3, 2, 0)])
def test_empty_summaries_keep_their_shape(shape):
    node = adv.Trace.from_json(_one_node_trace(Summary.of(np.zeros(shape)).to_dict())).nodes[0]
    assert node.value.data.shape == shape


def test_an_empty_array_with_the_wrong_nesting_is_still_refused():
    value = dict(Summary.of(np.zeros((0, 2))).to_dict(), data=[[], []])
    with pytest.raises(adv.TraceFormatError, match=r"nodes\[0\].value.data: has shape \(2, 0\)"):
        adv.Trace.from_json(_one_node_trace(value))


# ----- 4. value_limit ---------------------------------------------------------------------
def test_tape_trace_passes_value_limit_through():
    v = adv.Variable(np.arange(10.0), name="v")
    with adv.GradientTape() as tape:
        loss = adv.sum(v * v)
    assert tape.trace(loss).node(tape.trace(loss).node_id_of(v)).value.data is not None
    small = tape.trace(loss, value_limit=4)
    assert small.node(small.node_id_of(v)).value.data is None
    assert small.node(small.node_id_of(v)).value.stats["max"] == 9.0
    assert tape.trace(loss, value_limit=None).node(small.node_id_of(v)).value.data.size == 10 <= VALUE_LIMIT
    for bad in (-1, 2.5, "10", True):
        with pytest.raises(ValueError, match="value_limit"):
            tape.trace(loss, value_limit=bad)


# ----- 5. tape.trace of a target the tape did not record -------------------------------------
def _loss_after_tape():
    """``(tape, w, loss)`` with the loss computed after the tape's ``with`` block."""
    w = adv.Variable([1.0, 2.0], name="w")
    with adv.GradientTape() as tape:
        y = w * 2.0
    return tape, w, adv.sum(y)


def test_trace_of_a_loss_computed_after_the_tape_says_why():
    tape, w, loss = _loss_after_tape()
    with pytest.raises(ValueError, match=r"(?s)computed_outside_tape.*after the tape's `with` block.*Fix: compute"):
        tape.trace(loss)
    assert tape.explain(loss, w).reason == "computed_outside_tape"


def test_trace_of_a_constant_target_says_why():
    w = adv.Variable([1.0, 2.0], name="w")
    with adv.GradientTape() as tape:
        _ = w * 2.0
        inside = adv.constant(1.0)
    with pytest.raises(ValueError, match="computed_outside_tape"):
        tape.trace(adv.constant(1.0))
    with pytest.raises(ValueError, match=r"(?s)not_watched.*Fix: make the inputs adv.Variable"):
        tape.trace(inside)


def test_show_still_explains_a_target_off_the_tape():
    from autodiff_viz.views.widgets.state import ExplorerState
    tape, w, loss = _loss_after_tape()
    state = ExplorerState.from_tape(tape, loss)
    assert [ex.reason for _, ex, _ in state.explanations] == ["computed_outside_tape"]


# ----- 6. exercise mode ---------------------------------------------------------------------------
def test_compare_with_a_target_off_the_tape_says_why():
    tape, w, loss = _loss_after_tape()
    with pytest.raises(ValueError, match=r"(?s)tape.compare\(\).*computed_outside_tape"):
        tape.compare(loss, {w: np.full(2, 2.0)})


def test_compare_an_unwatched_constant_by_tensor_or_by_name_alike():
    w = adv.Variable([1.0, 2.0], name="w")
    c = adv.constant([1.0, 2.0])
    with adv.GradientTape(persistent=True) as tape:
        loss = adv.sum(w * c)
    by_tensor = tape.compare(loss, {c: np.array([1.0, 2.0])}).rows[0]
    by_name = tape.compare(loss, {"c": np.array([1.0, 2.0])}).rows[0]
    assert tape.gradient(loss, c) is None
    for row in (by_tensor, by_name):
        assert row.status == "no_gradient" and row.tape_shape == (2,) and "not_watched" in row.message
    assert by_tensor.node == by_name.node is not None


def test_a_no_gradient_row_has_the_tensors_shape_and_the_diagnosis():
    x = adv.constant([1.0, 2.0, 3.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        unused = adv.exp(x)
        loss = adv.sum(x * 3.0)
    row = tape.compare(loss, {unused: np.zeros(3)}).rows[0]
    assert row.status == "no_gradient" and row.tape_shape == (3,) and "not_used" in row.message
    assert "(3,) / (3,)" in str(tape.compare(loss, {unused: np.zeros(3)}))


# ----- 7. smaller things ---------------------------------------------------------------------------
def test_trace_format_error_is_exported():
    assert adv.TraceFormatError is adv.TraceFormatError
    with pytest.raises(adv.TraceFormatError):
        adv.Trace.from_json("{}")


def test_stop_gradient_is_explained_as_a_deliberate_cut():
    v = adv.Variable([1.0, 2.0], name="v")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.stop_gradient(v) * 2.0)
    e = tape.explain(loss, v)
    assert e.reason == "non_differentiable_op" and e.op == "stop_gradient"
    assert "smoothly" not in e.message and "unchanged" in e.message and "remove adv.stop_gradient" in e.message


def _small_trace():
    v = adv.Variable([1.0, 2.0], name="v")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.tanh(v))
    return tape.trace(loss)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"expanded": "mlp"}, TypeError, r"expanded=\{'mlp'\}"),
    ({"expanded": 3}, TypeError, "collection of box keys"),
    ({"expanded": [1]}, TypeError, "as strings"),
    ({"budget": 0}, ValueError, "at least 1"),
    ({"budget": -5}, ValueError, "at least 1"),
    ({"budget": "x"}, TypeError, "whole number of boxes"),
    ({"budget": 2.5}, TypeError, "whole number of boxes"),
])
def test_to_dot_refuses_bad_fold_arguments(kwargs, error, words):
    with pytest.raises(error, match=words):
        _small_trace().to_dot(**kwargs)


def test_to_dot_accepts_good_fold_arguments():
    tr = _small_trace()
    assert tr.to_dot(budget=None) and tr.to_dot(budget=np.int64(3)) and tr.to_dot(expanded=set(tr.groups()))
    with pytest.raises(ValueError, match="no box of this trace is called 'x'"):     # a name of no box: refused
        tr.to_dot(expanded={"x"})


def test_save_refuses_an_unknown_view_before_writing(tmp_path):
    path = tmp_path / "x.json"
    with pytest.raises(ValueError, match=r"view must be one of \('forward', 'backward', 'both'\).*'nope'"):
        _small_trace().save(path, view="nope")
    assert not path.exists()
    assert _small_trace().save(path, view="backward") == str(path) and path.exists()

