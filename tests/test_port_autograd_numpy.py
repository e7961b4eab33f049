"""HIPS autograd's tests/test_numpy.py, ported: numpy functions, indexing and methods on tensors.

Each test names the autograd test it comes from. The functions call numpy on
tensors (``np.cumsum(x)`` dispatches to the rule) or tensor methods
(``x.ravel()``); each case checks forward and reverse mode, to second order,
against finite differences (tests/autograd_port_check.py). Shapes are
smaller than autograd's, to keep the file fast.

Not ported, or ported in this package's spelling (deliberate differences):
# - test_numpy_version: autograd.numpy is a wrapper module; here np is numpy itself.
# - test_array_from_scalar and the np.array([...]) of tracked values in test_1d_array, test_2d_array,
#   test_*_fanout, test_array_from_arrays*, test_max_equal_values*, test_min_3_way_equality,
#   test_maximum_equal_values_2d: np.array/np.asarray of a tensor is this package's explicit escape to
#   numpy (numpy gives it no dispatch hook); those building arrays are ported with adv.stack.
# - test_r_* and test_c_*: np.r_ / np.c_ convert each item with np.array (the same escape); ported
#   with adv.concatenate, which is what they compute.
# - test_mean/std/var_list_of_boxes: np.mean([x, x + 2]) converts the list with np.array before any
#   dispatch; ported with adv.mean / adv.std / adv.var, which must stack the tensors on the tape.
# - test_make_diagonal: np.make_diagonal is autograd's own function, not numpy's.
"""
import numpy as np
from autograd_port_check import Draws, check_grads, combo_check, fresh_draws  # noqa: F401  (autouse)

import autodiff_viz as adv

rng = Draws(1)
R = rng.normals


# ----- products ----------------------------------------------------------------
def test_dot():
    """autograd tests/test_numpy.py::test_dot"""
    mat1, mat2, vect1, vect2, vect3 = R(4, 5), R(4, 5), R(4), R(5), R(5)
    fun = lambda x, y: np.dot(x, y)  # noqa: E731
    check_grads(fun, mat1, vect2)
    check_grads(fun, mat1, mat2.T)
    check_grads(fun, vect1, mat1)
    check_grads(fun, vect2, vect3)


def test_dot_with_floats():
    """autograd tests/test_numpy.py::test_dot_with_floats"""
    mat1, vect1, float1 = R(4, 5), R(4), float(R())
    fun = lambda x, y: np.dot(x, y)  # noqa: E731
    check_grads(fun, mat1, float1)
    check_grads(fun, float1, mat1)
    check_grads(fun, vect1, float1)
    check_grads(fun, float1, vect1)


def test_outer():
    """autograd tests/test_numpy.py::test_outer"""
    vect2, vect3 = R(5), R(5)
    fun = lambda x, y: np.outer(x, y)  # noqa: E731
    check_grads(fun, vect2, vect3)
    check_grads(fun, vect2.T, vect3)
    check_grads(fun, vect2.T, vect3.T)


# ----- reductions ----------------------------------------------------------------
def test_max():
    """autograd tests/test_numpy.py::test_max"""
    check_grads(lambda x: np.max(x), R(4, 5))


def test_max_axis():
    """autograd tests/test_numpy.py::test_max_axis"""
    check_grads(lambda x: np.max(x, axis=1), R(3, 4, 5))


def test_max_axis_keepdims():
    """autograd tests/test_numpy.py::test_max_axis_keepdims"""
    check_grads(lambda x: np.max(x, axis=1, keepdims=True), R(3, 4, 5))


def test_min():
    """autograd tests/test_numpy.py::test_min"""
    check_grads(lambda x: np.min(x), R(4, 5))


def test_min_axis():
    """autograd tests/test_numpy.py::test_min_axis"""
    check_grads(lambda x: np.min(x, axis=1), R(3, 4, 5))


def test_min_axis_keepdims():
    """autograd tests/test_numpy.py::test_min_axis_keepdims"""
    check_grads(lambda x: np.min(x, axis=1, keepdims=True), R(3, 4, 5))


def test_sum_1():
    """autograd tests/test_numpy.py::test_sum_1"""
    check_grads(lambda x: np.sum(x), R(4, 5))


def test_sum_2():
    """autograd tests/test_numpy.py::test_sum_2"""
    check_grads(lambda x: np.sum(x, axis=0), R(4, 5))


def test_sum_3():
    """autograd tests/test_numpy.py::test_sum_3"""
    check_grads(lambda x: np.sum(x, axis=0, keepdims=True), R(4, 5))


def test_sum_with_axis_tuple():
    """autograd tests/test_numpy.py::test_sum_with_axis_tuple"""
    check_grads(lambda x: np.sum(x, axis=(1, 2)), R(4, 5, 3))


def test_plain_numpy_reductions_on_box():
    """autograd tests/test_numpy.py::test_plain_numpy_reductions_on_box: numpy's sum/prod/max/min on a
    tracked value give the gradient of the package's own op"""
    base = np.abs(R(5)) + 0.5
    for plain, own in [(np.sum, adv.sum), (np.prod, adv.prod), (np.max, adv.max), (np.min, adv.min)]:
        fun_plain = lambda a, r=plain: r(np.exp(a) * base)  # noqa: E731
        fun_own = lambda a, r=own: r(adv.exp(a) * base)  # noqa: E731
        check_grads(fun_plain, 0.7)
        assert np.isclose(float(adv.grad(fun_plain)(0.7)), float(adv.grad(fun_own)(0.7)))


def test_mean_1():
    """autograd tests/test_numpy.py::test_mean_1"""
    check_grads(lambda x: np.mean(x), R(4, 5))


def test_mean_2():
    """autograd tests/test_numpy.py::test_mean_2"""
    check_grads(lambda x: np.mean(x, axis=0), R(4, 5))


def test_mean_3():
    """autograd tests/test_numpy.py::test_mean_3"""
    check_grads(lambda x: np.mean(x, axis=0, keepdims=True), R(4, 5))


def test_mean_list_of_boxes():
    """autograd tests/test_numpy.py::test_mean_list_of_boxes"""
    assert float(adv.grad(lambda x: adv.mean([x, x + 2]))(0.0)) == 1.0
    assert float(adv.grad(lambda x: adv.mean((x, x + 2)))(0.0)) == 1.0


def test_std_list_of_boxes():
    """autograd tests/test_numpy.py::test_std_list_of_boxes: symmetric around the mean, so 0 at x = 0"""
    assert float(adv.grad(lambda x: adv.std([x, x + 2]))(0.0)) == 0.0
    assert float(adv.grad(lambda x: adv.std((x, x + 2)))(0.0)) == 0.0


def test_var_list_of_boxes():
    """autograd tests/test_numpy.py::test_var_list_of_boxes"""
    assert float(adv.grad(lambda x: adv.var([x, x + 2]))(0.0)) == 0.0
    assert float(adv.grad(lambda x: adv.var((x, x + 2)))(0.0)) == 0.0


def test_non_numpy_sum():
    """autograd tests/test_numpy.py::test_non_numpy_sum: Python's sum over tensors"""
    check_grads(lambda x, y: sum([x, y]), R(4, 5), R(4, 5), argnums=(0, 1))


def test_prod_1():
    """autograd tests/test_numpy.py::test_prod_1"""
    check_grads(lambda x: np.prod(x), R(2, 3) ** 2 / 10.0 + 0.1)


def test_prod_2():
    """autograd tests/test_numpy.py::test_prod_2"""
    check_grads(lambda x: np.prod(x, axis=0), R(2, 3) ** 2 + 0.1)


def test_prod_3():
    """autograd tests/test_numpy.py::test_prod_3"""
    check_grads(lambda x: np.prod(x, axis=0, keepdims=True), R(2, 3) ** 2 + 0.1)


def test_prod_4():
    """autograd tests/test_numpy.py::test_prod_4"""
    check_grads(lambda x: np.prod(x), R(7) ** 2 + 0.1)


def test_var_ddof():
    """autograd tests/test_numpy.py::test_var_ddof"""
    B, C, D = R(3), R(3, 4), R(1, 3)
    combo_check(np.var, (0,))([B, C, D], axis=[None], keepdims=[True, False], ddof=[0, 1])
    combo_check(np.var, (0,))([C, D], axis=[None, 1], keepdims=[True, False], ddof=[2])


def test_std_ddof():
    """autograd tests/test_numpy.py::test_std_ddof"""
    B, C, D = R(3), R(3, 4), R(1, 3)
    combo_check(np.std, (0,))([B, C, D], axis=[None], keepdims=[True, False], ddof=[0, 1])
    combo_check(np.std, (0,))([C, D], axis=[None, 1], keepdims=[True, False], ddof=[2])


# ----- scans, flips, rolls ---------------------------------------------------------
def test_flipud():
    """autograd tests/test_numpy.py::test_flipud"""
    check_grads(lambda x: np.flipud(x), R(4, 5))


def test_fliplr():
    """autograd tests/test_numpy.py::test_fliplr"""
    check_grads(lambda x: np.fliplr(x), R(4, 5))


def test_rot90():
    """autograd tests/test_numpy.py::test_rot90"""
    check_grads(lambda x: np.rot90(x), R(4, 5))


def test_cumsum_axis0():
    """autograd tests/test_numpy.py::test_cumsum_axis0"""
    check_grads(lambda x: np.cumsum(x, axis=0), R(4, 5))


def test_cumsum_axis1():
    """autograd tests/test_numpy.py::test_cumsum_axis1"""
    check_grads(lambda x: np.cumsum(x, axis=1), R(4, 5))


def test_cumsum_1d():
    """autograd tests/test_numpy.py::test_cumsum_1d"""
    check_grads(lambda x: np.cumsum(x), R(6))


def test_cumsum_no_axis():
    """autograd tests/test_numpy.py::test_cumsum_no_axis"""
    check_grads(lambda x: np.cumsum(x), R(4, 5))


def test_roll():
    """autograd tests/test_numpy.py::test_roll"""
    check_grads(lambda x: np.roll(x, 2, axis=1), R(4, 5))


def test_roll_no_axis():
    """autograd tests/test_numpy.py::test_roll_no_axis (named so there; it rolls the flattened array here)"""
    check_grads(lambda x: np.roll(x, 2), R(4, 5))


# ----- indexing ------------------------------------------------------------------
def test_index_ints():
    """autograd tests/test_numpy.py::test_index_ints"""
    check_grads(lambda x: x[3, 0, 1], R(5, 6, 4))


def test_index_slice():
    """autograd tests/test_numpy.py::test_index_slice"""
    check_grads(lambda x: x[::-1, 2:4, :], R(5, 6, 4))


def test_index_lists():
    """autograd tests/test_numpy.py::test_index_lists"""
    check_grads(lambda x: x[[0, 1, 2], :, :], R(5, 6, 4))


def test_index_mixed():
    """autograd tests/test_numpy.py::test_index_mixed"""
    check_grads(lambda x: x[3, 2:, [1, 3]], R(5, 6, 4))


def test_vector_slice():
    """autograd tests/test_numpy.py::test_vector_slice"""
    check_grads(lambda x: x[2:4], R(5))


def test_index_slice_fanout():
    """autograd tests/test_numpy.py::test_index_slice_fanout"""
    check_grads(lambda x: x[::-1, 2:4, :] + x[::-1, 3:5, :], R(5, 6, 4))


def test_index_multiple_slices():
    """autograd tests/test_numpy.py::test_index_multiple_slices"""
    check_grads(lambda x: x[2:6][1:3], R(7))


def test_multi_index():
    """autograd tests/test_numpy.py::test_multi_index: a repeated index accumulates"""
    check_grads(lambda x: np.sum(x[[0, 0]]), R(3))


def test_multi_index2():
    """autograd tests/test_numpy.py::test_multi_index2"""
    check_grads(lambda x: np.sum(x[[0, 1, 0]]), R(3))


def test_index_dot_slices():
    """autograd tests/test_numpy.py::test_index_dot_slices"""
    check_grads(lambda x: np.dot(x[:2], x[2:]), R(4))


def test_cast_to_int():
    """autograd tests/test_numpy.py::test_cast_to_int: integer indices made from the input itself"""
    inds = np.ones(5)[:, None]

    def fun(W):
        glued = np.concatenate((W, inds), axis=1)
        new_W = glued[:, :-1]
        new_inds = glued[:, -1].astype(np.int64)
        assert new_inds.dtype == np.int64
        return new_W[new_inds].sum()
    check_grads(fun, R(5, 4))


# ----- shapes ----------------------------------------------------------------------
def test_reshape_method():
    """autograd tests/test_numpy.py::test_reshape_method"""
    check_grads(lambda x: x.reshape((5 * 4, 6)), R(5, 6, 4))


def test_reshape_call():
    """autograd tests/test_numpy.py::test_reshape_call"""
    check_grads(lambda x: np.reshape(x, (5 * 4, 6)), R(5, 6, 4))


def test_reshape_method_nolist():
    """autograd tests/test_numpy.py::test_reshape_method_nolist"""
    check_grads(lambda x: x.reshape(5 * 4, 6), R(5, 6, 4))


def test_ravel_method():
    """autograd tests/test_numpy.py::test_ravel_method"""
    check_grads(lambda x: x.ravel(), R(5, 6, 4))


def test_ravel_call():
    """autograd tests/test_numpy.py::test_ravel_call"""
    check_grads(lambda x: np.ravel(x), R(5, 6, 4))


def test_flatten_method():
    """autograd tests/test_numpy.py::test_flatten_method"""
    check_grads(lambda x: x.flatten(), R(5, 6, 4))


def test_simple_append_list():
    """autograd tests/test_numpy.py::test_simple_append_list"""
    check_grads(np.append, [1.0, 2.0, 3.0], 4.0, argnums=(0, 1))


def test_simple_append_arr():
    """autograd tests/test_numpy.py::test_simple_append_arr"""
    check_grads(np.append, np.array([1.0, 2.0, 3.0]), 4.0, argnums=(0, 1))


def test_simple_append_list_2D():
    """autograd tests/test_numpy.py::test_simple_append_list_2D"""
    check_grads(np.append, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]], argnums=(0, 1), axis=0)


def test_simple_concatenate():
    """autograd tests/test_numpy.py::test_simple_concatenate"""
    A = R(5, 6, 4)
    check_grads(lambda x: np.concatenate((A, x)), R(4, 6, 4))


def test_concatenate_axis_0():
    """autograd tests/test_numpy.py::test_concatenate_axis_0"""
    B = R(5, 6, 4)
    check_grads(lambda x: np.concatenate((B, x, B)), R(5, 6, 4))


def test_concatenate_axis_1():
    """autograd tests/test_numpy.py::test_concatenate_axis_1"""
    B = R(5, 6, 4)
    check_grads(lambda x: np.concatenate((B, x, B), axis=1), R(5, 6, 4))


def test_concatenate_axis_1_unnamed():
    """autograd tests/test_numpy.py::test_concatenate_axis_1_unnamed: the axis given by position"""
    B = R(5, 6, 4)
    check_grads(lambda x: np.concatenate((B, x, B), 1), R(5, 6, 4))


def test_trace():
    """autograd tests/test_numpy.py::test_trace"""
    for offset in (-3, 0, 2):
        check_grads(lambda x: np.trace(x, offset=offset), R(4, 5))


def test_trace2():
    """autograd tests/test_numpy.py::test_trace2"""
    for offset in (-3, 0, 2):
        check_grads(lambda x: np.trace(x, offset=offset), R(5, 4))


def test_trace_extradims():
    """autograd tests/test_numpy.py::test_trace_extradims"""
    for offset in (-2, 0, 3):
        check_grads(lambda x: np.trace(x, offset=offset), R(5, 6, 4, 3))


def test_diag():
    """autograd tests/test_numpy.py::test_diag"""
    check_grads(lambda x: np.diag(x), R(5, 5))


def test_transpose():
    """autograd tests/test_numpy.py::test_transpose"""
    check_grads(lambda x: x.T, R(4, 4))


def test_triu():
    """autograd tests/test_numpy.py::test_triu"""
    check_grads(lambda x: np.triu(x, k=2), R(5, 5))


def test_tril():
    """autograd tests/test_numpy.py::test_tril"""
    check_grads(lambda x: np.tril(x, k=2), R(5, 5))


def test_clip():
    """autograd tests/test_numpy.py::test_clip"""
    x = R(5, 5)
    x[np.abs(x - 0.1) < 0.05] += 0.1          # keep finite differences off the kinks
    x[np.abs(x - 1.1) < 0.05] += 0.1
    check_grads(lambda x: np.clip(x, a_min=0.1, a_max=1.1), x)


def test_where():
    """autograd tests/test_numpy.py::test_where"""
    C = R(4, 5) > 0
    check_grads(lambda x, y: np.where(C, x, y), R(4, 5), R(4, 5), argnums=(0, 1))


def test_squeeze_func():
    """autograd tests/test_numpy.py::test_squeeze_func"""
    check_grads(lambda x: np.squeeze(x), R(5, 1, 4))


def test_squeeze_method():
    """autograd tests/test_numpy.py::test_squeeze_method"""
    check_grads(lambda x: x.squeeze(), R(5, 1, 4))


def test_repeat():
    """autograd tests/test_numpy.py::test_repeat"""
    check_grads(lambda x: np.repeat(x, 2, axis=1), R(5, 3, 4))


def test_repeat_axis1_rep1():
    """autograd tests/test_numpy.py::test_repeat_axis1_rep1"""
    check_grads(lambda x: np.repeat(x, 1, axis=1), R(5, 3, 4))


def test_repeat_axis0():
    """autograd tests/test_numpy.py::test_repeat_axis0"""
    check_grads(lambda x: np.repeat(x, 2, axis=0), R(5, 3))


def test_repeat_1d_axis0():
    """autograd tests/test_numpy.py::test_repeat_1d_axis0"""
    check_grads(lambda x: np.repeat(x, 2, axis=0), R(5))


def test_repeat_axis0_rep1():
    """autograd tests/test_numpy.py::test_repeat_axis0_rep1"""
    check_grads(lambda x: np.repeat(x, 1, axis=0), R(5, 1))


def test_expand_dims():
    """autograd tests/test_numpy.py::test_expand_dims"""
    check_grads(lambda x: np.expand_dims(x, 2), R(5, 1, 4))


def test_tensordot_kwargs_by_position():
    """autograd tests/test_numpy.py::test_tensordot_kwargs_by_position: axes given by position"""
    fun = lambda x: np.tensordot(x * np.ones((2, 2)), x * np.ones((2, 2)), 2)  # noqa: E731
    assert float(adv.grad(fun)(1.0)) == 8.0


def test_diagonal():
    """autograd tests/test_numpy.py::test_diagonal"""
    check_grads(lambda D: np.diagonal(D, axis1=-1, axis2=-2), R(4, 4))
    check_grads(lambda D: np.diagonal(D, axis1=-1, axis2=-2), R(3, 4, 4))


def test_nan_to_num():
    """autograd tests/test_numpy.py::test_nan_to_num"""
    y = np.array([0.0, np.nan, np.inf, -np.inf])
    check_grads(lambda x: np.sum(np.sin(np.nan_to_num(x + y))), R(4))


def test_len():
    """autograd tests/test_numpy.py::test_len"""
    def fun(x):
        assert len(x) == 3
        return x
    check_grads(fun, R(3, 2))


def test_scalar_array_box_attributes():
    """autograd tests/test_numpy.py::test_scalar_array_box_attributes: a tracked scalar is a 0-d array"""
    def fun(x):
        assert x.shape == () and x.ndim == 0 and x.size == 1 and x.dtype == np.float64
        return x ** 2
    assert float(adv.grad(fun)(3.0)) == 6.0


def test_astype():
    """autograd tests/test_numpy.py::test_astype: the gradient has the dtype of the input"""
    x = np.arange(3, dtype="float32")
    g = adv.grad(lambda x: np.sum(np.sin(x.astype("float64"))))(x)
    assert g.dtype == np.dtype("float32")


def test_linspace():
    """autograd tests/test_numpy.py::test_linspace: differentiable in start and stop"""
    for num in [0, 1, 5]:
        fun = lambda x, y, num=num: np.linspace(x, y, num)  # noqa: E731
        check_grads(fun, 1.2, 3.4, argnums=(0, 1))
        check_grads(fun, 1.2, -3.4, argnums=(0, 1))
        check_grads(fun, 1.2, 1.2, argnums=(0, 1))


def test_gradient():
    """autograd tests/test_numpy.py::test_gradient: np.gradient (central differences) is linear"""
    check_grads(np.gradient, R(6))
    check_grads(np.gradient, R(4, 4))
    for a in [None, 0, 1, -1, (0, 1), (0, -1)]:
        check_grads(np.gradient, R(3, 4, 5), axis=a)


# ----- arrays built from tracked values (adv.stack: see the note at the top) ------
def test_1d_array():
    """autograd tests/test_numpy.py::test_1d_array"""
    check_grads(lambda x: adv.stack([x, x * 1.0, x + 2.5]), 3.0)


def test_2d_array():
    """autograd tests/test_numpy.py::test_2d_array"""
    check_grads(lambda x: adv.stack([adv.stack([x, x * 1.0, x + 2.5]), adv.stack([x ** 2, x, x / 2.0])]), 3.0)


def test_1d_array_fanout():
    """autograd tests/test_numpy.py::test_1d_array_fanout"""
    def fun(x):
        A = adv.stack([x, x * 1.0, x + 2.5])
        return A + A
    check_grads(fun, 3.0)


def test_2d_array_fanout():
    """autograd tests/test_numpy.py::test_2d_array_fanout"""
    def fun(x):
        A = adv.stack([adv.stack([x, x * 1.0, x + 2.5]), adv.stack([x ** 2, x, x / 2.0])])
        return A + A
    check_grads(fun, 3.0)


def test_array_from_arrays():
    """autograd tests/test_numpy.py::test_array_from_arrays"""
    check_grads(lambda x: adv.stack([x, x]), R(3, 2))


def test_array_from_arrays_2():
    """autograd tests/test_numpy.py::test_array_from_arrays_2"""
    check_grads(lambda x: adv.stack([adv.stack([2 * x, x + 1]), adv.stack([x, x])]), R(3, 2))


def test_max_equal_values():
    """autograd tests/test_numpy.py::test_max_equal_values: tied maxima share the gradient"""
    check_grads(lambda x: np.max(adv.stack([x, x])), 1.0)


def test_max_equal_values_2d():
    """autograd tests/test_numpy.py::test_max_equal_values_2d"""
    fun = lambda x: np.max(adv.stack([adv.stack([x, x]), adv.stack([x, 0.5 + 0 * x])]), axis=1)  # noqa: E731
    check_grads(fun, 1.0)
    check_grads(fun, -1.0)


def test_min_3_way_equality():
    """autograd tests/test_numpy.py::test_min_3_way_equality"""
    def fun(x):
        h = 0.5 + 0 * x
        return np.min(adv.stack([adv.stack([x, x, x]), adv.stack([x, h, h]), adv.stack([h, h, h]),
                                 adv.stack([x, x, h])]), axis=0)
    check_grads(fun, 1.0)
    check_grads(fun, -1.0)


def test_maximum_equal_values():
    """autograd tests/test_numpy.py::test_maximum_equal_values"""
    check_grads(lambda x: np.maximum(x, x), 1.0)


def test_maximum_equal_values_2d():
    """autograd tests/test_numpy.py::test_maximum_equal_values_2d"""
    def fun(x):
        h = 0.5 + 0 * x
        return np.maximum(adv.stack([x, x, h]), adv.stack([adv.stack([x, h, x]), adv.stack([x, x, h])]))
    check_grads(fun, 1.0)
    check_grads(fun, -1.0)
    check_grads(fun, 2.0)


# ----- np.r_ / np.c_ (adv.concatenate: see the note at the top) --------------------
def test_r_basic():
    """autograd tests/test_numpy.py::test_r_basic"""
    check_grads(lambda x: adv.concatenate([x]), R(3, 2))


def test_r_double():
    """autograd tests/test_numpy.py::test_r_double"""
    check_grads(lambda x: adv.concatenate([x, x]), R(3, 2))


def test_no_relation():
    """autograd tests/test_numpy.py::test_no_relation: an output that does not depend on the input"""
    c = R(3, 2)
    check_grads(lambda x: c, R(3, 2))


def test_r_no_relation():
    """autograd tests/test_numpy.py::test_r_no_relation"""
    c = R(3, 2)
    check_grads(lambda x: adv.concatenate([c]), R(3, 2))


def test_r_node_and_const():
    """autograd tests/test_numpy.py::test_r_node_and_const"""
    c = R(3, 2)
    check_grads(lambda x: adv.concatenate([x, c]), R(3, 2))


def test_r_mixed():
    """autograd tests/test_numpy.py::test_r_mixed"""
    c = R(3, 2)
    check_grads(lambda x: adv.concatenate([x, c, x]), R(3, 2))


def test_r_slicing():
    """autograd tests/test_numpy.py::test_r_slicing (np.r_[x, c, 1:10])"""
    c = R(5)
    check_grads(lambda x: adv.concatenate([x, c, np.arange(1.0, 10.0)]), R(5))


def test_c_():
    """autograd tests/test_numpy.py::test_c_ (np.c_[x, c, x]: along the last axis)"""
    c = R(3, 2)
    check_grads(lambda x: adv.concatenate([x, c, x], axis=-1), R(3, 2))


def test_c_mixed():
    """autograd tests/test_numpy.py::test_c_mixed"""
    c = R(3, 2)
    check_grads(lambda x: adv.concatenate([x, c, x], axis=1), R(3, 2))
