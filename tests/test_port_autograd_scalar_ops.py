"""HIPS autograd's tests/test_scalar_ops.py, ported: numpy's elementwise functions on scalars.

Each test names the autograd test it comes from. The functions call numpy
(``np.sin(x)`` on a tensor dispatches to the rule), so each case checks the
dispatch as well as the VJP and JVP, to second order, against finite
differences (tests/autograd_port_check.py).

Not ported (this package deliberately does not support it):
# (none: every scalar case of the file is ported)
"""
import numpy as np
from autograd_port_check import Draws, check_grads, fresh_draws  # noqa: F401  (fresh_draws: autouse)

import autodiff_viz as adv

rng = Draws(1)


def randn():
    return float(rng.normal())


def rand():
    return float(rng.uniform())


def test_abs():
    """autograd tests/test_scalar_ops.py::test_abs"""
    fun = lambda x: 3.0 * np.abs(x)  # noqa: E731
    check_grads(fun, 1.1)
    check_grads(fun, -1.1)
    check_grads(fun, 0.0, order=1)


def test_absolute():
    """autograd tests/test_scalar_ops.py::test_absolute"""
    fun = lambda x: 3.0 * np.absolute(x)  # noqa: E731
    check_grads(fun, 1.1)
    check_grads(fun, -1.1)
    check_grads(fun, 0.0, order=1)


def test_sin():
    """autograd tests/test_scalar_ops.py::test_sin"""
    check_grads(lambda x: 3.0 * np.sin(x), randn())


def test_sign():
    """autograd tests/test_scalar_ops.py::test_sign"""
    fun = lambda x: 3.0 * np.sign(x)  # noqa: E731
    check_grads(fun, 1.1)
    check_grads(fun, -1.1)


def test_exp():
    """autograd tests/test_scalar_ops.py::test_exp"""
    check_grads(lambda x: 3.0 * np.exp(x), randn())


def test_log():
    """autograd tests/test_scalar_ops.py::test_log"""
    check_grads(lambda x: 3.0 * np.log(x), abs(randn()) + 0.1)


def test_log2():
    """autograd tests/test_scalar_ops.py::test_log2"""
    check_grads(lambda x: 3.0 * np.log2(x), abs(randn()) + 0.1)


def test_log10():
    """autograd tests/test_scalar_ops.py::test_log10"""
    check_grads(lambda x: 3.0 * np.log10(x), abs(randn()) + 0.1)


def test_log1p():
    """autograd tests/test_scalar_ops.py::test_log1p"""
    check_grads(lambda x: 3.0 * np.log1p(x), abs(randn()))


def test_expm1():
    """autograd tests/test_scalar_ops.py::test_expm1"""
    check_grads(lambda x: 3.0 * np.expm1(x), abs(randn()))


def test_exp2():
    """autograd tests/test_scalar_ops.py::test_exp2"""
    check_grads(lambda x: 3.0 * np.exp2(x), abs(randn()))


def test_neg():
    """autograd tests/test_scalar_ops.py::test_neg"""
    check_grads(lambda x: 3.0 * -x, randn())


def test_cos():
    """autograd tests/test_scalar_ops.py::test_cos"""
    check_grads(lambda x: 3.0 * np.cos(x), randn())


def test_tan():
    """autograd tests/test_scalar_ops.py::test_tan"""
    check_grads(lambda x: 3.0 * np.tan(x), randn())


def test_cosh():
    """autograd tests/test_scalar_ops.py::test_cosh"""
    check_grads(lambda x: 3.0 * np.cosh(x), randn())


def test_sinh():
    """autograd tests/test_scalar_ops.py::test_sinh"""
    check_grads(lambda x: 3.0 * np.sinh(x), randn())


def test_tanh():
    """autograd tests/test_scalar_ops.py::test_tanh"""
    check_grads(lambda x: 3.0 * np.tanh(x), randn())


def test_arccos():
    """autograd tests/test_scalar_ops.py::test_arccos"""
    check_grads(lambda x: 3.0 * np.arccos(x), 0.1)


def test_arcsin():
    """autograd tests/test_scalar_ops.py::test_arcsin"""
    check_grads(lambda x: 3.0 * np.arcsin(x), 0.1)


def test_arctan():
    """autograd tests/test_scalar_ops.py::test_arctan"""
    check_grads(lambda x: 3.0 * np.arctan(x), 0.2)


def test_arccosh():
    """autograd tests/test_scalar_ops.py::test_arccosh"""
    check_grads(lambda x: 3.0 * np.arccosh(x), randn() ** 2 + 1.2)


def test_arcsinh():
    """autograd tests/test_scalar_ops.py::test_arcsinh"""
    check_grads(lambda x: 3.0 * np.arcsinh(x), randn())


def test_arctanh():
    """autograd tests/test_scalar_ops.py::test_arctanh"""
    check_grads(lambda x: 3.0 * np.arctanh(x), 0.2)


def test_sqrt():
    """autograd tests/test_scalar_ops.py::test_sqrt"""
    check_grads(lambda x: 3.0 * np.sqrt(x), 10.0 * rand() + 0.1)


def test_power_arg0():
    """autograd tests/test_scalar_ops.py::test_power_arg0 (and the y == 0 special case, autograd #116)"""
    y = randn() ** 2 + 1.0
    check_grads(lambda x: np.power(x, y), rand() ** 2 + 1.0)
    fun = lambda x: np.power(x, 0.0)  # noqa: E731
    assert float(adv.grad(fun)(0.0)) == 0.0
    assert float(adv.grad(adv.grad(fun))(0.0)) == 0.0


def test_power_arg1():
    """autograd tests/test_scalar_ops.py::test_power_arg1"""
    x = randn() ** 2
    check_grads(lambda y: np.power(x, y), rand() ** 2)


def test_power_arg1_zero():
    """autograd tests/test_scalar_ops.py::test_power_arg1_zero: 0.0 ** y for y > 0 has derivative 0 in y"""
    check_grads(lambda y: np.power(0.0, y), rand() ** 2 + 0.1)


def test_mod_arg0():
    """autograd tests/test_scalar_ops.py::test_mod_arg0"""
    check_grads(lambda x, y: np.mod(x, y), 0.3, 0.7, argnums=0)


def test_mod_arg1():
    """autograd tests/test_scalar_ops.py::test_mod_arg1"""
    check_grads(lambda x, y: np.mod(x, y), 0.3, 0.7, argnums=1)


def test_divide_arg0():
    """autograd tests/test_scalar_ops.py::test_divide_arg0"""
    check_grads(lambda x, y: np.divide(x, y), rand(), rand() + 0.1, argnums=0)


def test_divide_arg1():
    """autograd tests/test_scalar_ops.py::test_divide_arg1"""
    check_grads(lambda x, y: np.divide(x, y), rand(), rand() + 0.1, argnums=1)


def test_multiply_arg0():
    """autograd tests/test_scalar_ops.py::test_multiply_arg0"""
    check_grads(lambda x, y: np.multiply(x, y), rand(), rand(), argnums=0)


def test_multiply_arg1():
    """autograd tests/test_scalar_ops.py::test_multiply_arg1"""
    check_grads(lambda x, y: np.multiply(x, y), rand(), rand(), argnums=1)


def test_true_divide_arg0():
    """autograd tests/test_scalar_ops.py::test_true_divide_arg0"""
    check_grads(lambda x, y: np.true_divide(x, y), rand(), rand() + 0.1, argnums=0)


def test_true_divide_arg1():
    """autograd tests/test_scalar_ops.py::test_true_divide_arg1"""
    check_grads(lambda x, y: np.true_divide(x, y), rand(), rand() + 0.1, argnums=1)


def test_reciprocal():
    """autograd tests/test_scalar_ops.py::test_reciprocal"""
    check_grads(lambda x: np.reciprocal(x), rand() + 0.1)


def test_negative():
    """autograd tests/test_scalar_ops.py::test_negative"""
    check_grads(lambda x: np.negative(x), rand())


def test_rad2deg():
    """autograd tests/test_scalar_ops.py::test_rad2deg"""
    check_grads(lambda x: 3.0 * np.rad2deg(x), 10.0 * rand())


def test_deg2rad():
    """autograd tests/test_scalar_ops.py::test_deg2rad"""
    check_grads(lambda x: 3.0 * np.deg2rad(x), 10.0 * rand())


def test_radians():
    """autograd tests/test_scalar_ops.py::test_radians"""
    check_grads(lambda x: 3.0 * np.radians(x), 10.0 * rand())


def test_degrees():
    """autograd tests/test_scalar_ops.py::test_degrees"""
    check_grads(lambda x: 3.0 * np.degrees(x), 10.0 * rand())


def test_sinc():
    """autograd tests/test_scalar_ops.py::test_sinc"""
    check_grads(lambda x: 3.0 * np.sinc(x), 10.0 * rand())
