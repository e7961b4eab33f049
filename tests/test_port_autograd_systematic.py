"""HIPS autograd's tests/test_systematic.py, ported: numpy's functions over grids of shapes and keywords.

Each test names the autograd test it comes from. ``combo_check(fun, argnums)``
runs the gradient check (forward and reverse mode, second order, against
finite differences; tests/autograd_port_check.py) on every combination of
the listed arguments and keywords. The functions are numpy's own
(``np.var`` on a tensor dispatches to the rule), so a case also checks the
dispatch.

Not ported (this package deliberately does not support it):
# - complex inputs (the test_complex halves of stat_check / unary_ufunc_check / binary_ufunc_check,
#   the C(...) operands of kron, dot, outer, matmul, tensordot, einsum): no complex dtype here.
# - test_real, test_real_ic, test_imag, test_conj, test_conjugate, test_angle: functions of complex
#   numbers (on real input they are the identity or zero), for the same reason.
# - test_msort: np.msort is gone from numpy 2 (autograd runs it only on numpy < 2).
"""
import operator as op

import numpy as np
from autograd_port_check import Draws, combo_check, fresh_draws  # noqa: F401  (fresh_draws: autouse)

rng = Draws(0)
R = rng.normals


def transform(lims, x):
    return x * (lims[1] - lims[0]) + lims[0]


def stat_check(fun, **kwargs):
    """A statistic (sum, mean, var ...) of a scalar, vectors and matrices, with axis and keepdims."""
    x, A, B, C, D = 3.5, R(), R(3), R(2, 3), R(1, 3)
    check = combo_check(fun, (0,), **kwargs)
    check([x, A])
    check([B, C, D], axis=[None, 0], keepdims=[True, False])
    check([C, D], axis=[None, 0, 1], keepdims=[True, False])


def unary_ufunc_check(fun, lims=(-2, 2), **kwargs):
    """An elementwise function on a scalar, a vector and matrices with values inside ``lims``."""
    check = combo_check(fun, (0,), **kwargs)
    check([transform(lims, 0.4), transform(lims, rng.uniform(size=2)),
           transform(lims, rng.uniform(size=(3, 2))), transform(lims, rng.uniform(size=(1, 2)))])


def _four(lims):
    return [transform(lims, 0.6), transform(lims, rng.uniform(size=2)),
            transform(lims, rng.uniform(size=(3, 2))), transform(lims, rng.uniform(size=(1, 2)))]


def binary_ufunc_check(fun, lims_A=(-2, 2), lims_B=(-2, 2), **kwargs):
    """A binary function on every pair of shapes (), (2,), (3, 2), (1, 2): broadcasting included."""
    combo_check(fun, (0, 1), **kwargs)(_four(lims_A), _four(lims_B))


# autograd needs a variant whose two arguments are never the same array (kinks where x == y);
# here the two lists are always drawn separately, so it is the same check.
binary_ufunc_check_no_same_args = binary_ufunc_check


# ----- statistics ------------------------------------------------------------
def test_max():
    """autograd tests/test_systematic.py::test_max"""
    stat_check(np.max)


def test_mean():
    """autograd tests/test_systematic.py::test_mean"""
    stat_check(np.mean)


def test_min():
    """autograd tests/test_systematic.py::test_min"""
    stat_check(np.min)


def test_sum():
    """autograd tests/test_systematic.py::test_sum"""
    stat_check(np.sum)


def test_prod():
    """autograd tests/test_systematic.py::test_prod"""
    stat_check(np.prod)


def test_var():
    """autograd tests/test_systematic.py::test_var"""
    stat_check(np.var)


def test_std():
    """autograd tests/test_systematic.py::test_std"""
    stat_check(np.std)


# ----- unary ufuncs ----------------------------------------------------------
def test_sin():
    """autograd tests/test_systematic.py::test_sin"""
    unary_ufunc_check(np.sin)


def test_abs():
    """autograd tests/test_systematic.py::test_abs"""
    unary_ufunc_check(np.abs, lims=[0.1, 4.0])


def test_absolute():
    """autograd tests/test_systematic.py::test_absolute"""
    unary_ufunc_check(np.absolute, lims=[0.1, 4.0])


def test_arccosh():
    """autograd tests/test_systematic.py::test_arccosh"""
    unary_ufunc_check(np.arccosh, lims=[1.1, 4.0])


def test_arcsinh():
    """autograd tests/test_systematic.py::test_arcsinh"""
    unary_ufunc_check(np.arcsinh, lims=[-0.9, 0.9])


def test_arctanh():
    """autograd tests/test_systematic.py::test_arctanh"""
    unary_ufunc_check(np.arctanh, lims=[-0.9, 0.9])


def test_ceil():
    """autograd tests/test_systematic.py::test_ceil"""
    unary_ufunc_check(np.ceil, lims=[-1.5, 1.5])


def test_cos():
    """autograd tests/test_systematic.py::test_cos"""
    unary_ufunc_check(np.cos)


def test_cosh():
    """autograd tests/test_systematic.py::test_cosh"""
    unary_ufunc_check(np.cosh)


def test_deg2rad():
    """autograd tests/test_systematic.py::test_deg2rad"""
    unary_ufunc_check(np.deg2rad)


def test_degrees():
    """autograd tests/test_systematic.py::test_degrees"""
    unary_ufunc_check(lambda x: np.degrees(x) / 50.0)


def test_exp():
    """autograd tests/test_systematic.py::test_exp"""
    unary_ufunc_check(np.exp)


def test_exp2():
    """autograd tests/test_systematic.py::test_exp2"""
    unary_ufunc_check(np.exp2)


def test_expm1():
    """autograd tests/test_systematic.py::test_expm1"""
    unary_ufunc_check(np.expm1)


def test_fabs():
    """autograd tests/test_systematic.py::test_fabs"""
    unary_ufunc_check(np.fabs, lims=[0.1, 4.0])


def test_floor():
    """autograd tests/test_systematic.py::test_floor"""
    unary_ufunc_check(np.floor, lims=[-1.5, 1.5])


def test_log():
    """autograd tests/test_systematic.py::test_log"""
    unary_ufunc_check(np.log, lims=[0.2, 2.0])


def test_log10():
    """autograd tests/test_systematic.py::test_log10"""
    unary_ufunc_check(np.log10, lims=[0.2, 2.0])


def test_log1p():
    """autograd tests/test_systematic.py::test_log1p"""
    unary_ufunc_check(np.log1p, lims=[0.2, 2.0])


def test_log2():
    """autograd tests/test_systematic.py::test_log2"""
    unary_ufunc_check(np.log2, lims=[0.2, 2.0])


def test_rad2deg():
    """autograd tests/test_systematic.py::test_rad2deg"""
    unary_ufunc_check(lambda x: np.rad2deg(x) / 50.0)


def test_radians():
    """autograd tests/test_systematic.py::test_radians"""
    unary_ufunc_check(np.radians)


def test_sign():
    """autograd tests/test_systematic.py::test_sign"""
    unary_ufunc_check(np.sign)


def test_sinh():
    """autograd tests/test_systematic.py::test_sinh"""
    unary_ufunc_check(np.sinh)


def test_sqrt():
    """autograd tests/test_systematic.py::test_sqrt"""
    unary_ufunc_check(np.sqrt, lims=[1.0, 3.0])


def test_square():
    """autograd tests/test_systematic.py::test_square"""
    unary_ufunc_check(np.square)


def test_tan():
    """autograd tests/test_systematic.py::test_tan"""
    unary_ufunc_check(np.tan, lims=[-1.1, 1.1])


def test_tanh():
    """autograd tests/test_systematic.py::test_tanh"""
    unary_ufunc_check(np.tanh)


# ----- binary ufuncs ---------------------------------------------------------
def test_add():
    """autograd tests/test_systematic.py::test_add"""
    binary_ufunc_check(np.add)


def test_logaddexp():
    """autograd tests/test_systematic.py::test_logaddexp"""
    binary_ufunc_check(np.logaddexp)


def test_logaddexp2():
    """autograd tests/test_systematic.py::test_logaddexp2"""
    binary_ufunc_check(np.logaddexp2)


def test_remainder():
    """autograd tests/test_systematic.py::test_remainder"""
    binary_ufunc_check_no_same_args(np.remainder, lims_A=[-0.9, 0.9], lims_B=[0.7, 1.9])


def test_true_divide():
    """autograd tests/test_systematic.py::test_true_divide"""
    binary_ufunc_check(np.true_divide, lims_B=[0.8, 1.2])


def test_mod():
    """autograd tests/test_systematic.py::test_mod"""
    binary_ufunc_check_no_same_args(np.mod, lims_B=[0.8, 2.1])


def test_true_divide_neg():
    """autograd tests/test_systematic.py::test_true_divide_neg"""
    binary_ufunc_check(np.true_divide, lims_B=[-0.3, -2.0])


def test_mod_neg():
    """autograd tests/test_systematic.py::test_mod_neg"""
    binary_ufunc_check_no_same_args(np.mod, lims_B=[-0.3, -2.0])


def test_op_mul():
    """autograd tests/test_systematic.py::test_op_mul"""
    binary_ufunc_check(op.mul)


def test_op_add():
    """autograd tests/test_systematic.py::test_op_add"""
    binary_ufunc_check(op.add)


def test_op_sub():
    """autograd tests/test_systematic.py::test_op_sub"""
    binary_ufunc_check(op.sub)


def test_op_mod():
    """autograd tests/test_systematic.py::test_op_mod"""
    binary_ufunc_check_no_same_args(op.mod, lims_B=[0.3, 2.0])


def test_op_mod_neg():
    """autograd tests/test_systematic.py::test_op_mod_neg"""
    binary_ufunc_check_no_same_args(op.mod, lims_B=[-0.3, -2.0])


# ----- shapes, products, indexing -------------------------------------------
def test_transpose():
    """autograd tests/test_systematic.py::test_transpose"""
    combo_check(np.transpose, [0])(
        [R(2, 3, 4)], axes=[None, [0, 1, 2], [0, 2, 1], [2, 0, 1], [2, 1, 0], [1, 0, 2], [1, 2, 0]])


def test_moveaxis():
    """autograd tests/test_systematic.py::test_moveaxis"""
    combo_check(np.moveaxis, [0])([R(2, 3, 4)], source=[0, 1, 2], destination=[0, 1, 2])


def test_repeat():
    """autograd tests/test_systematic.py::test_repeat"""
    combo_check(np.repeat, [0])([R(2, 3, 4), R(3, 1)], repeats=[0, 1, 2], axis=[None, 0, 1])


def test_diff():
    """autograd tests/test_systematic.py::test_diff"""
    combo_check(np.diff, [0])([R(5, 5), R(5, 5, 5)], n=[1, 2], axis=[0, 1])
    combo_check(np.diff, [0])([R(1), R(1, 1)], axis=[0])
    combo_check(np.diff, [0])([R(1, 1), R(3, 1)], axis=[1])


def test_gradient():
    """autograd tests/test_systematic.py::test_gradient"""
    combo_check(np.gradient, [0])([R(5, 5), R(5, 5, 5)], axis=[None, 0, 1, -1])
    combo_check(np.gradient, [0])([R(5, 5, 5)], axis=[(0, 1), (0, -1)])


def test_tile():
    """autograd tests/test_systematic.py::test_tile"""
    combo_check(np.tile, [0])([R(2, 1, 3, 1)], reps=[(1, 4, 1, 2)])
    combo_check(np.tile, [0])([R(1, 2)], reps=[(1, 2), (2, 3), (3, 2, 1)])
    combo_check(np.tile, [0])([R(1)], reps=[(2,), 2])


def test_kron():
    """autograd tests/test_systematic.py::test_kron"""
    combo_check(np.kron, [0, 1])([R(5, 5), R(4, 4), R(5), R(5, 1), R(1, 5), R()],
                                 [R(3, 3), R(2, 2), R(3), R(1, 3), R(3, 1), R()])


def test_inner():
    """autograd tests/test_systematic.py::test_inner"""
    combo_check(np.inner, [0, 1])([1.5, R(3), R(2, 3)], [0.3, R(3), R(4, 3)])


def test_dot():
    """autograd tests/test_systematic.py::test_dot (autograd checks order 3; order 2 here)"""
    combo_check(np.dot, [0, 1])([1.5, R(3), R(2, 3), R(2, 2, 3)], [0.3, R(3), R(3, 4), R(2, 3, 4)])


def test_outer():
    """autograd tests/test_systematic.py::test_outer"""
    combo_check(np.outer, [0, 1])([R(3)], [R(3)])


def test_matmul():
    """autograd tests/test_systematic.py::test_matmul"""
    combo_check(np.matmul, [0, 1])([R(3), R(2, 3), R(2, 2, 3)], [R(3), R(3, 4), R(2, 3, 4)])


def test_matmul_broadcast():
    """autograd tests/test_systematic.py::test_matmul_broadcast"""
    combo_check(np.matmul, [0, 1])([R(1, 2, 2)], [R(3, 2, 1)])


def test_tensordot_1():
    """autograd tests/test_systematic.py::test_tensordot_1"""
    combo_check(np.tensordot, [0, 1])([R(1, 3), R(2, 3, 2)], [R(3), R(3, 1), R(3, 4, 2)], axes=[[(1,), (0,)]])


def test_tensordot_2():
    """autograd tests/test_systematic.py::test_tensordot_2"""
    combo_check(np.tensordot, [0, 1])([R(3), R(3, 1), R(3, 4, 2)], [R(1, 3), R(2, 3, 2)], axes=[[(0,), (1,)]])


def test_tensordot_3():
    """autograd tests/test_systematic.py::test_tensordot_3"""
    combo_check(np.tensordot, [0, 1])([R(2, 3), R(2, 3, 4)], [R(1, 2, 3), R(2, 2, 3, 4)],
                                      axes=[[(0, 1), (1, 2)], [(1, 0), (2, 1)]])


def test_tensordot_4():
    """autograd tests/test_systematic.py::test_tensordot_4"""
    combo_check(np.tensordot, [0, 1])([R(2, 2), R(4, 2, 2)], [R(2, 2), R(2, 2, 4)], axes=[1, 2])


def test_tensordot_5():
    """autograd tests/test_systematic.py::test_tensordot_5"""
    combo_check(np.tensordot, [0, 1])([R(4)], [R()], axes=[0])


def test_tensordot_6():
    """autograd tests/test_systematic.py::test_tensordot_6"""
    combo_check(np.tensordot, [0, 1])([R(2, 6)], [R(6, 3)], axes=[[[-1], [0]]])


def test_tensordot_7():
    """autograd tests/test_systematic.py::test_tensordot_7"""
    combo_check(np.tensordot, [0, 1])([R(2, 6)], [R(6, 3)], axes=[[-1, 0]])


def test_tensordot_8():
    """autograd tests/test_systematic.py::test_tensordot_8"""
    combo_check(np.tensordot, [0, 1])([R(2)], [R(2, 2)], axes=[[0, 1]])


def test_maximum():
    """autograd tests/test_systematic.py::test_maximum (its own arguments: the gradient is undefined where they tie)"""
    combo_check(np.maximum, [0, 1])([R(1), R(1, 4), R(3, 4)], [R(1), R(1, 4), R(3, 4)])


def test_fmax():
    """autograd tests/test_systematic.py::test_fmax"""
    combo_check(np.fmax, [0, 1])([R(1), R(1, 4), R(3, 4)], [R(1), R(1, 4), R(3, 4)])


def test_minimum():
    """autograd tests/test_systematic.py::test_minimum"""
    combo_check(np.minimum, [0, 1])([R(1), R(1, 4), R(3, 4)], [R(1), R(1, 4), R(3, 4)])


def test_fmin():
    """autograd tests/test_systematic.py::test_fmin"""
    combo_check(np.fmin, [0, 1])([R(1), R(1, 4), R(3, 4)], [R(1), R(1, 4), R(3, 4)])


def test_sort():
    """autograd tests/test_systematic.py::test_sort"""
    combo_check(np.sort, [0])([R(1), R(7)])


def test_partition():
    """autograd tests/test_systematic.py::test_partition"""
    combo_check(np.partition, [0])([R(7), R(14)], kth=[0, 3, 6])


def test_atleast_1d():
    """autograd tests/test_systematic.py::test_atleast_1d"""
    combo_check(np.atleast_1d, [0])([1.2, R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5)])


def test_atleast_2d():
    """autograd tests/test_systematic.py::test_atleast_2d"""
    combo_check(np.atleast_2d, [0])([1.2, R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5)])


def test_atleast_3d():
    """autograd tests/test_systematic.py::test_atleast_3d"""
    combo_check(np.atleast_3d, [0])([1.2, R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5), R(2, 4, 3, 5)])


# ----- einsum ----------------------------------------------------------------
def test_einsum_transpose():
    """autograd tests/test_systematic.py::test_einsum_transpose"""
    combo_check(np.einsum, [1])(["ij->ji"], [R(1, 1), R(4, 4), R(3, 4)])


def test_einsum_matmult():
    """autograd tests/test_systematic.py::test_einsum_matmult"""
    combo_check(np.einsum, [1, 2])(["ij,jk->ik"], [R(2, 3)], [R(3, 4)])


def test_einsum_matmult_broadcast():
    """autograd tests/test_systematic.py::test_einsum_matmult_broadcast"""
    combo_check(np.einsum, [1, 2])(["...ij,...jk->...ik"], [R(2, 3), R(2, 2, 3)], [R(3, 4), R(2, 3, 4)])


def test_einsum_matmult_broadcast_leadzero():
    """autograd tests/test_systematic.py::test_einsum_matmult_broadcast_leadzero"""
    combo_check(np.einsum, [1, 2])(["...ij,...jk->...ik"], [R(0, 2, 3)], [R(0, 3, 4)])


def test_einsum_covsum():
    """autograd tests/test_systematic.py::test_einsum_covsum"""
    combo_check(np.einsum, [1, 2])(["ijk,lji->lki"], [R(3, 4, 4)], [R(4, 4, 3)])


def test_einsum_ellipses():
    """autograd tests/test_systematic.py::test_einsum_ellipses"""
    combo_check(np.einsum, [1, 2])(["...jk,...lj->...lk", "...,...->..."], [R(4, 4), R(3, 4, 4)],
                                   [R(4, 4), R(3, 4, 4)])


def test_einsum_ellipses_tail():
    """autograd tests/test_systematic.py::test_einsum_ellipses_tail"""
    combo_check(np.einsum, [1, 2])(["jk...,lj...->lk..."], [R(3, 2), R(3, 2, 4)], [R(2, 3), R(2, 3, 4)])


def test_einsum_ellipses_center():
    """autograd tests/test_systematic.py::test_einsum_ellipses_center"""
    combo_check(np.einsum, [1, 2])(["j...k,lj...->lk..."], [R(2, 2), R(2, 2, 2)], [R(2, 2), R(2, 2, 2)])


def test_einsum_three_args():
    """autograd tests/test_systematic.py::test_einsum_three_args"""
    combo_check(np.einsum, [1, 2])(["ijk,lji,lli->lki"], [R(3, 4, 4)], [R(4, 4, 3)], [R(4, 4, 3)])


def test_einsum2_transpose():
    """autograd tests/test_systematic.py::test_einsum2_transpose"""
    combo_check(np.einsum, [0])([R(1, 1), R(4, 4), R(3, 4)], [(0, 1)], [(1, 0)])


def test_einsum2_matmult():
    """autograd tests/test_systematic.py::test_einsum2_matmult"""
    combo_check(np.einsum, [0, 2])([R(2, 3)], [(0, 1)], [R(3, 4)], [(1, 2)], [(0, 2)])


def test_einsum2_matmult_broadcast():
    """autograd tests/test_systematic.py::test_einsum2_matmult_broadcast"""
    combo_check(np.einsum, [0, 2])([R(2, 3), R(2, 2, 3)], [(Ellipsis, 0, 1)], [R(3, 4), R(2, 3, 4)],
                                   [(Ellipsis, 1, 2)], [(Ellipsis, 0, 2)])


def test_einsum2_covsum():
    """autograd tests/test_systematic.py::test_einsum2_covsum"""
    combo_check(np.einsum, [0, 2])([R(3, 4, 4)], [(0, 1, 2)], [R(4, 4, 3)], [(3, 1, 0)], [(3, 2, 0)])


def test_einsum2_three_args():
    """autograd tests/test_systematic.py::test_einsum2_three_args"""
    combo_check(np.einsum, [0, 2])([R(3, 4, 4)], [(0, 1, 2)], [R(4, 4, 3)], [(3, 1, 0)], [R(4, 4, 3)],
                                   [(3, 3, 0)], [(3, 2, 0)])


def test_einsum_naked_sum():
    """autograd tests/test_systematic.py::test_einsum_naked_sum"""
    combo_check(np.einsum, [1, 2])(["k,nk->"], [R(5)], [R(10, 5)])


def test_einsum_naked_sum2():
    """autograd tests/test_systematic.py::test_einsum_naked_sum2"""
    combo_check(np.einsum, [1])(["abcd->bd"], [R(3, 2, 3, 2)])


def test_einsum_naked_sum_ellipsis():
    """autograd tests/test_systematic.py::test_einsum_naked_sum_ellipsis"""
    combo_check(np.einsum, [1, 2])(["...k,...nk->..."], [R(3, 5)], [R(3, 10, 5)])


def test_einsum_no_output_indices():
    """autograd tests/test_systematic.py::test_einsum_no_output_indices"""
    combo_check(np.einsum, [1, 2])(["ij,k"], [R(3, 4)], [R(3)])


# ----- diagonals, triangles, axes ------------------------------------------
def test_trace():
    """autograd tests/test_systematic.py::test_trace"""
    combo_check(np.trace, [0])([R(5, 5), R(4, 5), R(5, 4), R(3, 4, 5)], offset=[-1, 0, 1])


def test_diag():
    """autograd tests/test_systematic.py::test_diag"""
    combo_check(np.diag, [0])([R(5, 5)], k=[-1, 0, 1])


def test_diag_flat():
    """autograd tests/test_systematic.py::test_diag_flat"""
    combo_check(np.diag, [0])([R(5)], k=[-1, 0, 1])


def test_tril():
    """autograd tests/test_systematic.py::test_tril"""
    combo_check(np.tril, [0])([R(5, 5)], k=[-1, 0, 1])


def test_triu():
    """autograd tests/test_systematic.py::test_triu"""
    combo_check(np.triu, [0])([R(5, 5)], k=[-1, 0, 1])


def test_tril_3d():
    """autograd tests/test_systematic.py::test_tril_3d"""
    combo_check(np.tril, [0])([R(5, 5, 4)], k=[-1, 0, 1])


def test_triu_3d():
    """autograd tests/test_systematic.py::test_triu_3d"""
    combo_check(np.triu, [0])([R(5, 5, 4)], k=[-1, 0, 1])


def test_swapaxes():
    """autograd tests/test_systematic.py::test_swapaxes"""
    combo_check(np.swapaxes, [0])([R(3, 4, 5)], axis1=[0, 1, 2], axis2=[0, 1, 2])


def test_rollaxis():
    """autograd tests/test_systematic.py::test_rollaxis"""
    combo_check(np.rollaxis, [0])([R(2, 3, 4)], axis=[0, 1, 2], start=[0, 1, 2])


def test_cross():
    """autograd tests/test_systematic.py::test_cross"""
    combo_check(np.cross, [0, 1])([R(3, 3)], [R(3, 3)], axisa=[-1, 0, 1], axisb=[-1, 0, 1], axisc=[-1, 0, 1],
                                  axis=[None, -1, 0, 1])


# ----- splitting and joining -------------------------------------------------
def test_vsplit_2d():
    """autograd tests/test_systematic.py::test_vsplit_2d"""
    combo_check(np.vsplit, [0])([R(4, 8)], [4, [1, 2]])


def test_vsplit_3d():
    """autograd tests/test_systematic.py::test_vsplit_3d"""
    combo_check(np.vsplit, [0])([R(4, 4, 4)], [2, [1, 2]])


def test_hsplit_2d():
    """autograd tests/test_systematic.py::test_hsplit_2d"""
    combo_check(np.hsplit, [0])([R(4, 8)], [4, [1, 2]])


def test_hsplit_3d():
    """autograd tests/test_systematic.py::test_hsplit_3d"""
    combo_check(np.hsplit, [0])([R(4, 4, 4)], [2, [1, 2]])


def test_dsplit_3d():
    """autograd tests/test_systematic.py::test_dsplit_3d"""
    combo_check(np.dsplit, [0])([R(4, 4, 4)], [2, [1, 2]])


def test_split_1d():
    """autograd tests/test_systematic.py::test_split_1d"""
    combo_check(np.split, [0])([R(1), R(7)], [1], axis=[0])


def test_split_2d():
    """autograd tests/test_systematic.py::test_split_2d"""
    combo_check(np.split, [0])([R(4, 8)], [4, [1, 2]], axis=[0, 1])


def test_split_3d():
    """autograd tests/test_systematic.py::test_split_3d"""
    combo_check(np.split, [0])([R(4, 4, 4)], [2, [1, 2]], axis=[0, 1, 2])


def test_array_split_1d():
    """autograd tests/test_systematic.py::test_array_split_1d"""
    combo_check(np.array_split, [0])([R(1), R(7)], [1, 3], axis=[0])


def test_array_split_2d():
    """autograd tests/test_systematic.py::test_array_split_2d"""
    combo_check(np.array_split, [0])([R(7, 7)], [4, [3, 5]], axis=[0, 1])


def test_array_split_3d():
    """autograd tests/test_systematic.py::test_array_split_3d"""
    combo_check(np.array_split, [0])([R(7, 7, 7)], [4, [3, 5]], axis=[0, 1, 2])


def test_concatenate_1ist():
    """autograd tests/test_systematic.py::test_concatenate_1ist (a tuple of arrays, differentiated as one argument)"""
    combo_check(lambda a, b, axis: np.concatenate((a, b), axis=axis), [0, 1])([R(1)], [R(3)], axis=[0])


def test_concatenate_tuple():
    """autograd tests/test_systematic.py::test_concatenate_tuple"""
    combo_check(lambda a, b, axis: np.concatenate([a, b], axis=axis), [0, 1])([R(1)], [R(3)], axis=[0])


def test_concatenate_2d():
    """autograd tests/test_systematic.py::test_concatenate_2d"""
    combo_check(lambda a, b, axis: np.concatenate((a, b), axis=axis), [0, 1])([R(2, 2)], [R(2, 2)], axis=[0, 1])


def test_concatenate_3d():
    """autograd tests/test_systematic.py::test_concatenate_3d"""
    combo_check(lambda a, b, axis: np.concatenate((a, b), axis=axis), [0, 1])(
        [R(2, 2, 2)], [R(2, 2, 2)], axis=[0, 1, 2])


def _pair(fun):
    """``fun`` of one array or of a pair of arrays (as autograd's tuple arguments), both differentiated."""
    return lambda a, b=None: fun(a) if b is None else fun((a, b))


def test_vstack_1d():
    """autograd tests/test_systematic.py::test_vstack_1d"""
    combo_check(np.vstack, [0])([R(2)])
    combo_check(_pair(np.vstack), [0, 1])([R(2)], [R(2)])


def test_vstack_2d():
    """autograd tests/test_systematic.py::test_vstack_2d"""
    combo_check(np.vstack, [0])([R(2, 3)])
    combo_check(_pair(np.vstack), [0, 1])([R(2, 4)], [R(1, 4)])


def test_vstack_3d():
    """autograd tests/test_systematic.py::test_vstack_3d"""
    combo_check(np.vstack, [0])([R(2, 3, 4)])
    combo_check(_pair(np.vstack), [0, 1])([R(2, 3, 4)], [R(5, 3, 4)])


def test_hstack_1d():
    """autograd tests/test_systematic.py::test_hstack_1d"""
    combo_check(np.hstack, [0])([R(2)])
    combo_check(_pair(np.hstack), [0, 1])([R(2)], [R(2)])


def test_hstack_2d():
    """autograd tests/test_systematic.py::test_hstack_2d"""
    combo_check(np.hstack, [0])([R(3, 2)])
    combo_check(_pair(np.hstack), [0, 1])([R(3, 4)], [R(3, 5)])


def test_hstack_3d():
    """autograd tests/test_systematic.py::test_hstack_3d"""
    combo_check(np.hstack, [0])([R(2, 3, 4)])
    combo_check(_pair(np.hstack), [0, 1])([R(2, 1, 4)], [R(2, 5, 4)])


def test_stack_1d():
    """autograd tests/test_systematic.py::test_stack_1d"""
    combo_check(lambda a, axis: np.stack((a,), axis=axis), [0])([R(2)], axis=[0, 1])
    combo_check(lambda a, b, axis: np.stack((a, b), axis=axis), [0, 1])([R(2)], [R(2)], axis=[0, 1])


def test_row_stack_1d():
    """autograd tests/test_systematic.py::test_row_stack_1d (np.row_stack is np.vstack in numpy 2)"""
    combo_check(np.vstack, [0])([R(2)])
    combo_check(_pair(np.vstack), [0, 1])([R(2)], [R(2)])


def test_row_stack_2d():
    """autograd tests/test_systematic.py::test_row_stack_2d (np.row_stack is np.vstack in numpy 2)"""
    combo_check(np.vstack, [0])([R(2, 3)])
    combo_check(_pair(np.vstack), [0, 1])([R(2, 4)], [R(1, 4)])


def test_column_stack_1d():
    """autograd tests/test_systematic.py::test_column_stack_1d"""
    combo_check(_pair(np.column_stack), [0])([R(2)])
    combo_check(_pair(np.column_stack), [0, 1])([R(2)], [R(2)])


def test_column_stack_2d():
    """autograd tests/test_systematic.py::test_column_stack_2d"""
    combo_check(_pair(np.column_stack), [0])([R(2, 2)])
    combo_check(_pair(np.column_stack), [0, 1])([R(2, 2)], [R(2, 2)])


def test_select():
    """autograd tests/test_systematic.py::test_select"""
    conds = [R(3, 4, 5) > 0, R(3, 4, 5) > 0, R(3, 4, 5) > 0]
    combo_check(lambda a, b, c, default: np.select(conds, [a, b, c], default=default), [0, 1, 2])(
        [R(3, 4, 5)], [R(3, 4, 5)], [R(3, 4, 5)], default=[0.0, 1.1])


def test_pad():
    """autograd tests/test_systematic.py::test_pad"""
    combo_check(np.pad, [0])([R(2, 2)], [0, 3, (3,), (3, 2), ((3, 2),), ((1, 2), (3, 4)), ((0, 0), (0, 0))],
                             ["constant"])
