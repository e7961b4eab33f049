"""HIPS autograd's tests/test_binary_ops.py, ported: arithmetic between every pair of shapes.

Each test names the autograd test it comes from. Arguments are every pair of
a scalar, a vector, a matrix and a matrix with a broadcast axis (shapes ()
(4,) (3, 4) (1, 4)), so each case also checks that gradients sum over
broadcast axes. Derivatives of both arguments, forward and reverse mode, to
second order, against finite differences (tests/autograd_port_check.py).

Not ported (this package deliberately does not support it):
# (none: every case of the file is ported; the "rev"-only hypot case keeps autograd's modes
#  and adds forward mode, which this package has for every op)
"""
import itertools
import operator

import numpy as np
from autograd_port_check import check_grads

import autodiff_viz as adv

rs = np.random.default_rng(0)
SHAPED = [2.0, rs.normal(size=4), rs.normal(size=(3, 4)), rs.normal(size=(1, 4))]


def arg_pairs():
    return itertools.product(SHAPED, SHAPED)


def _gap_from_zero(x):
    return np.sqrt(np.asarray(x) ** 2 + 0.5)


def test_mul():
    """autograd tests/test_binary_ops.py::test_mul"""
    for a, b in arg_pairs():
        check_grads(lambda x, y: x * y, a, b, argnums=(0, 1))


def test_add():
    """autograd tests/test_binary_ops.py::test_add"""
    for a, b in arg_pairs():
        check_grads(lambda x, y: x + y, a, b, argnums=(0, 1))


def test_sub():
    """autograd tests/test_binary_ops.py::test_sub"""
    for a, b in arg_pairs():
        check_grads(lambda x, y: x - y, a, b, argnums=(0, 1))


def test_div():
    """autograd tests/test_binary_ops.py::test_div"""
    for a, b in arg_pairs():
        check_grads(lambda x, y: x / y, _gap_from_zero(a), _gap_from_zero(b), argnums=(0, 1))


def test_mod():
    """autograd tests/test_binary_ops.py::test_mod (x == y, where the gradient is undefined, is skipped as there)"""
    for a, b in arg_pairs():
        if a is not b:
            check_grads(lambda x, y: x % y, _gap_from_zero(a), _gap_from_zero(b), argnums=(0, 1))


def test_pow():
    """autograd tests/test_binary_ops.py::test_pow (bases kept away from 0, as there)"""
    for a, b in arg_pairs():
        check_grads(lambda x, y: x ** y, np.abs(a) + 1.1, b, argnums=(0, 1))


def test_arctan2():
    """autograd tests/test_binary_ops.py::test_arctan2"""
    for a, b in arg_pairs():
        check_grads(np.arctan2, a, b, argnums=(0, 1))


def test_hypot():
    """autograd tests/test_binary_ops.py::test_hypot"""
    for a, b in arg_pairs():
        check_grads(np.hypot, a, b, argnums=(0, 1))


COMPARISONS = [
    lambda x, y: np.sum(x < y) + 0.0,
    lambda x, y: np.sum(x <= y) + 0.0,
    lambda x, y: np.sum(x > y) + 0.0,
    lambda x, y: np.sum(x >= y) + 0.0,
    lambda x, y: np.sum(x == y) + 0.0,
    lambda x, y: np.sum(x != y) + 0.0,
]


def test_comparison_grads():
    """autograd tests/test_binary_ops.py::test_comparison_grads: comparisons have zero gradient"""
    for a, b in arg_pairs():
        for fun in COMPARISONS:
            ga = adv.grad(fun, 0)(a, b)
            gb = adv.grad(fun, 1)(a, b)
            assert ga.shape == np.shape(a) and gb.shape == np.shape(b)
            assert np.all(ga.numpy() == 0) and np.all(gb.numpy() == 0)


def test_comparison_values():
    """autograd tests/test_binary_ops.py::test_comparison_values"""
    for a, b in arg_pairs():
        for fun in COMPARISONS:
            value, _ = adv.value_and_grad(fun)(a, b)
            assert float(value) == float(fun(np.asarray(a), np.asarray(b)))


def test_operators_match_numpy_on_every_pair():
    """Not in autograd (added beside the port): on every pair the values equal numpy's."""
    ops = [operator.mul, operator.add, operator.sub, operator.truediv, operator.mod, np.arctan2, np.hypot]
    for a, b in arg_pairs():
        for op in ops:
            x, y = _gap_from_zero(a), _gap_from_zero(b)
            np.testing.assert_allclose(op(adv.constant(x), adv.constant(y)).numpy(), op(x, y))
