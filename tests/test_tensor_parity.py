"""Tensors and variables behave as TensorFlow 2 eager tensors / numpy arrays where learners rely on it.

Each test is a defect a tester found: a value handed out that aliases the tensor, a copied variable that a tape
confuses with its original, a constant that follows a variable, silent truncation, missing operators.
"""
import copy
import warnings

import numpy as np
import pytest

import autodiff_viz as adv


# ----- D1: values handed out never alias the tensor -------------------------------------------------
def test_numpy_returns_a_copy_that_the_user_may_change():
    x = adv.constant([1.0, 2.0, 3.0])
    a = x.numpy()
    a -= a.mean()
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    v = adv.Variable([3.0, 4.0])
    v[0].numpy()[...] = 100.0
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])


def test_changing_numpy_of_a_constant_does_not_change_a_recorded_gradient():
    c = adv.constant([1.0, 2.0])
    v = adv.Variable([3.0, 4.0])
    with adv.GradientTape() as tape:
        y = adv.sum(v * c)
    c.numpy()[:] = 100.0
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [1.0, 2.0])


def test_np_asarray_is_a_read_only_view_and_np_array_a_writable_copy():
    v = adv.Variable([3.0, 4.0])
    a = np.asarray(v)
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 99.0
    b = np.array(v)
    b[0] = 99.0
    c = np.asarray(v, dtype=np.float32)
    c[0] = 5.0
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    t = adv.constant([1.0, 2.0])
    assert not np.asarray(t).flags.writeable and np.asarray(t, copy=True).flags.writeable
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float32, copy=False)
    assert float(adv.constant(2.5)) == 2.5 and int(adv.constant(3)) == 3 and len(t) == 2
    np.testing.assert_array_equal(np.exp(np.asarray(t)), np.exp([1.0, 2.0]))


def test_internal_numpy_paths_still_work_with_read_only_views():
    x = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        y = adv.sum(x * x) + adv.sum(x * 3.0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [5.0, 7.0])
    x.assign_sub(np.asarray(adv.constant([0.5, 0.5])))
    np.testing.assert_allclose(x.numpy(), [0.5, 1.5])
    acc = np.zeros(2)
    acc += adv.constant([1.0, 2.0])
    np.testing.assert_allclose(acc, [1.0, 2.0])


# ----- D2: copies of a variable are new variables ----------------------------------------------------
@pytest.mark.parametrize("make_copy", [copy.deepcopy, copy.copy])
def test_a_copied_variable_is_an_independent_variable(make_copy):
    a = adv.Variable([1.0, 1.0], name="a", trainable=True)
    b = make_copy(a)
    assert type(b) is adv.Variable and b is not a and hash(b) != hash(a)
    assert b.name == "a" and b.trainable and b.dtype == a.dtype
    with adv.GradientTape() as tape:
        y = adv.sum(a * 2.0 + b * 3.0)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(gb.numpy(), [3.0, 3.0])
    b.assign([5.0, 6.0])
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0])


def test_a_deepcopied_structure_keeps_one_copy_per_variable_and_shares_immutable_tensors():
    v = adv.Variable([1.0], trainable=False)
    t = adv.constant([2.0])
    vs = copy.deepcopy({"v": v, "again": v, "t": t})
    assert vs["v"] is vs["again"] and vs["v"] is not v and not vs["v"].trainable
    assert vs["t"] is t and copy.copy(t) is t       # immutable: the same tensor, as deepcopy of a str


# ----- D3: constant(variable) is a snapshot ----------------------------------------------------------
def test_constant_of_a_variable_is_a_new_tensor_with_its_current_value():
    w = adv.Variable([1.0, 2.0], name="w")
    snap = adv.constant(w, name="snapshot")
    assert type(snap) is adv.Tensor and w.name == "w" and snap.name == "snapshot"
    w.assign([7.0, 8.0])
    np.testing.assert_array_equal(snap.numpy(), [1.0, 2.0])
    plain = adv.constant(w)
    assert type(plain) is adv.Tensor and hash(plain) != hash(w)
    f32 = adv.constant(w, dtype="float32")
    assert f32.dtype == np.float32 and w.dtype == np.float64


def test_constant_with_a_name_does_not_rename_its_input():
    x = adv.Variable(2.0)
    with adv.GradientTape() as tape:
        t = x * 3.0
        named = adv.constant(t, name="named")
        y = named * named
    assert t.name is None and named.name == "named"
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * 6.0 * 3.0)   # still the same tensor for the tape


# ----- D6: integer and bool variables refuse values they would truncate ------------------------------
@pytest.mark.parametrize("call, value", [("assign", [3.7, 4.2]), ("assign_add", 0.7), ("assign_sub", 0.5),
                                         ("assign", [np.nan, 1.0]), ("assign_add", adv.constant(0.7))])
def test_integer_variables_refuse_values_they_would_truncate(call, value):
    iv = adv.Variable([5, 6], name="step")
    with pytest.raises(TypeError, match=r"(?s)'step'.*int64.*float64.*round"):
        getattr(iv, call)(value)
    np.testing.assert_array_equal(iv.numpy(), [5, 6])


def test_integer_and_bool_variables_take_values_that_fit():
    iv = adv.Variable([5, 6])
    iv.assign([3.0, 4.0]).assign_add(1).assign_sub(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(iv.numpy(), [3, 4])
    assert iv.dtype == np.int64
    mask = adv.Variable([True, False], name="mask")
    mask.assign([0, 1])
    np.testing.assert_array_equal(mask.numpy(), [False, True])
    with pytest.raises(TypeError, match=r"'mask'.*bool"):
        mask.assign([0.5, 2.0])
    small = adv.Variable(np.array([1, 2], dtype=np.int8), name="s")
    with pytest.raises(TypeError, match="int8"):
        small.assign([300, 1])
    np.testing.assert_array_equal(small.numpy(), [1, 2])


# ----- D7: logical and bitwise operators ---------------------------------------------------------------
def test_logical_operators_on_bool_tensors():
    x = adv.constant([0.0, 2.0, 4.0])
    inside = (x > 1) & (x < 3)
    assert isinstance(inside, adv.Tensor) and inside.dtype == np.bool_
    np.testing.assert_array_equal(inside.numpy(), [False, True, False])
    np.testing.assert_array_equal(((x < 1) | (x > 3)).numpy(), [True, False, True])
    np.testing.assert_array_equal(((x > 1) ^ (x > 3)).numpy(), [False, True, False])
    np.testing.assert_array_equal((~(x > 1)).numpy(), [True, False, False])
    np.testing.assert_array_equal((np.array([True, True, False]) & (x > 1)).numpy(), [False, True, False])
    np.testing.assert_array_equal(((x > 1) & True).numpy(), [False, True, True])


def test_bitwise_operators_on_integer_tensors_and_a_clear_error_for_floats():
    i = adv.constant([12, 10])
    np.testing.assert_array_equal((i & 6).numpy(), [4, 2])
    np.testing.assert_array_equal((i | 1).numpy(), [13, 11])
    np.testing.assert_array_equal((3 ^ i).numpy(), [15, 9])
    np.testing.assert_array_equal((~i).numpy(), [-13, -11])
    x = adv.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match=r"&.*float64.*x > 0"):
        x & (x > 1)
    with pytest.raises(TypeError, match=r"~.*float64"):
        ~x


def test_logical_operators_carry_no_gradient_and_do_not_break_the_tape():
    x = adv.Variable([0.0, 2.0, 4.0])
    with adv.GradientTape() as tape:
        y = adv.sum(adv.where((x > 1) & (x < 3), x * x, x))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 4.0, 1.0])


# ----- D8: format specs ------------------------------------------------------------------------------------
def test_format_specs_work_on_scalars_and_single_values():
    loss = adv.constant(0.123456)
    assert f"{loss:.4f}" == "0.1235" and f"{adv.Variable(2.5):6.2f}" == "  2.50"
    assert f"{adv.constant([1.5]):.1f}" == "1.5" and f"{adv.constant(7):03d}" == "007"
    assert f"{loss}" == str(loss)
    with pytest.raises(TypeError, match=r"shape \(2,\).*mean"):
        f"{adv.constant([1.0, 2.0]):.2f}"


# ----- D9: == and != with things that are not numbers -------------------------------------------------
def test_equality_with_none_or_a_string_is_false_as_tensorflow():
    t = adv.constant([1.0, 2.0])
    assert (t == None) is False and (t != None) is True      # noqa: E711
    assert (t == "a") is False and (t != "a") is True
    assert t in [None, t] and t not in [None, "a"]
    np.testing.assert_array_equal((t == [1.0, 3.0]).numpy(), [True, False])


# ----- D10: integer sources give None with a warning --------------------------------------------------
def test_integer_sources_get_none_with_a_warning_as_tensorflow():
    w = adv.Variable([1.0, 2.0], name="w")
    step = adv.Variable(3, name="step")
    with adv.GradientTape(persistent=True) as tape:
        y = adv.sum(w * w) * step
    with pytest.warns(UserWarning, match=r"'step'.*int64.*None"):
        gw, gs = tape.gradient(y, [w, step])
    np.testing.assert_allclose(gw.numpy(), [6.0, 12.0])
    assert gs is None
    with pytest.warns(UserWarning, match="int64"):
        jw, js = tape.jacobian(y, [w, step])
    assert js is None and jw.shape == (2,)
    with pytest.warns(UserWarning):
        zero = tape.gradient(y, step, unconnected_gradients="zero")
    assert zero.shape == () and zero.dtype == np.int64 and zero.numpy() == 0
    with pytest.raises(TypeError, match="sources must be tensors"):
        tape.gradient(y, [w, 3])


def test_messages_about_unnamed_tensors_read_well():
    step = adv.Variable([1, 2])
    with adv.GradientTape() as tape:
        y = step * 2
    with pytest.warns(UserWarning) as caught:
        tape.gradient(y, step)
    text = str(caught[0].message)
    assert "  " not in text and "unnamed" in text
    v = adv.Variable([1.0, 2.0])
    with pytest.raises(ValueError) as err:
        v.assign([1.0, 2.0, 3.0])
    assert "  " not in str(err.value) and "shape (2,)" in str(err.value)


# ----- minor: indices, item assignment, read_value ------------------------------------------------
def test_integer_scalar_tensors_are_indices():
    assert [10, 20, 30][adv.constant(1)] == 20 and list(range(adv.constant(3))) == [0, 1, 2]
    np.testing.assert_array_equal(np.arange(5)[adv.constant([1, 3])], [1, 3])
    with pytest.raises(TypeError):
        [1, 2][adv.constant(1.0)]


def test_item_assignment_explains_the_fix():
    t = adv.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="adv.where"):
        t[0] = 5.0
    v = adv.Variable([1.0, 2.0], name="v")
    with pytest.raises(TypeError, match=r"'v'.*assign"):
        v[0] = 5.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_assign_on_a_slice_of_a_variable_writes_into_it():
    """TensorFlow's v[0:2].assign(new) writes into v (issue 43; more in tests/test_variable_slices.py); a
    tensor that is not a slice read off a variable still has no assign."""
    v = adv.Variable([1.0, 2.0, 3.0], name="v")
    assert v[0:2].assign([5.0, 6.0]) is v
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0, 3.0])
    assert not hasattr(adv.constant(1.0), "assign") and not isinstance(v[0:2], adv.Variable)
    v.assign_add([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0, 4.0])


def test_read_value_as_tensorflow_and_value_as_keras():
    v = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        y = adv.sum(v.read_value() * 3.0) + adv.sum(v.value)
    snap = v.value
    v.assign([5.0, 5.0])
    assert type(snap) is adv.Tensor
    np.testing.assert_array_equal(snap.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [4.0, 4.0])


def test_no_warning_for_float_sources():
    x = adv.Variable(1.0)
    with adv.GradientTape() as tape:
        y = x * x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(tape.gradient(y, x)) == 2.0
