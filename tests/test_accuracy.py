"""Accuracy as a property of every op (issue 43): each elementwise op and its gradient, in float32 and
float64, within its documented bound of the exact value.

``tools/accuracy.py`` holds the grid (±0, subnormals, ±1e-30 … ±1e30 with the tails ±20, ±80, ±700, ±∞,
NaN), the ``mpmath`` references and the one table of bounds (``BOUNDS``, shown in docs/accuracy.md). A new
elementwise rule without a reference fails here, so it is measured from its first day.
"""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import autodiff_viz as adv

pytest.importorskip("mpmath", reason="the accuracy references are computed with mpmath (pip install mpmath)")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import accuracy  # noqa: E402

RESULTS = {}


def _measured(name, dtype):
    if (name, dtype) not in RESULTS:
        RESULTS[name, dtype] = accuracy.measure(name, dtype)
    return RESULTS[name, dtype]


def test_every_elementwise_rule_has_a_reference_and_a_bound():
    for name in accuracy.elementwise_rules():
        assert accuracy.kind_of(name), f"rule {name!r} is elementwise but tools/accuracy.py has no reference for it"
        if accuracy.kind_of(name) != "exact":
            assert set(accuracy.BOUNDS.get(name, {})) == set(accuracy.DTYPES), f"{name}: no bound in BOUNDS"


@pytest.mark.parametrize("dtype", accuracy.DTYPES)
@pytest.mark.parametrize("name", [n for n in accuracy.elementwise_rules() if accuracy.kind_of(n)])
def test_op_and_gradient_stay_within_their_documented_bound(name, dtype):
    value, gradient = _measured(name, dtype)
    where = accuracy.WHERE.get((name, dtype), (None, None))
    if accuracy.kind_of(name) == "exact":
        assert value == 0.0, f"{name} ({dtype}) no longer equals numpy's values bit for bit"
        return
    bound_value, bound_gradient = accuracy.BOUNDS[name][dtype]
    assert value <= bound_value, (f"{name} ({dtype}): {value:.3g} ulps at x = {where[0]}, documented bound "
                                  f"{bound_value} (docs/accuracy.md)")
    assert gradient <= bound_gradient, (f"{name}′ ({dtype}): {gradient:.3g} ulps at x = {where[1]}, documented "
                                        f"bound {bound_gradient}")


def test_the_vanishing_gradient_plot_of_sigmoid_has_no_cliff():
    """Issue 43: float32 sigmoid was ½(1 + tanh(x/2)): 6 % off at −16 and exactly 0 (value and gradient)
    below −17. On the range of the vanishing-gradient lesson both are now the exact values to a few ulps,
    on both sides, and positive: a log plot shows the straight line e^(−|x|) of the math."""
    x = adv.Variable(np.arange(-40.0, 40.0, 0.5, dtype=np.float32))
    with adv.GradientTape() as tape:
        y = adv.sigmoid(x)
    slope = tape.gradient(y, x).numpy()
    exact = 1 / (1 + np.exp(-x.numpy().astype(np.float64)))
    np.testing.assert_allclose(y.numpy(), exact, rtol=4e-7)
    e = np.exp(-np.abs(x.numpy().astype(np.float64)))
    np.testing.assert_allclose(slope, e / (1 + e) ** 2, rtol=4e-7)
    assert np.all(slope > 0) and np.all(y.numpy() > 0)


def test_tanh_gradient_at_saturation_is_the_exact_slope_not_zero():
    x = adv.Variable(np.array([-30.0, -12.0, 0.0, 9.5, 30.0], dtype=np.float32))
    with adv.GradientTape() as tape:
        y = adv.tanh(x)
    slope = tape.gradient(y, x).numpy()
    exact = 1 / np.cosh(x.numpy().astype(np.float64)) ** 2
    np.testing.assert_allclose(slope, exact, rtol=4e-7)
    assert math.isclose(float(slope[2]), 1.0)


def test_second_derivatives_of_the_stable_forms_are_the_math():
    """The stable gradients are written with the rules, so an outer tape differentiates them again."""
    for f, d2 in [(adv.tanh, lambda v: -2 * np.tanh(v) / np.cosh(v) ** 2),
                  (adv.sigmoid, lambda v: (s := 1 / (1 + np.exp(-v))) * (1 - s) * (1 - 2 * s))]:
        x = adv.Variable(np.array([-3.0, -0.5, 0.0, 0.7, 4.0]))
        with adv.GradientTape() as outer:
            with adv.GradientTape() as inner:
                y = f(x)
            g = inner.gradient(y, x)
        np.testing.assert_allclose(outer.gradient(g, x).numpy(), d2(x.numpy()), rtol=1e-12, atol=1e-15)


def test_gelu_left_tail_is_the_same_entry_by_entry_and_vectorized():
    """A float64 GELU patches its left tail (x < −3.4) in Python floats when it has at most 8 such entries and
    vectorized beyond: both give the exact value and slope to a few ulps, and the same numbers."""
    tail = np.array([-3.5, -7.6, -30.0, -37.99, -39.5, -45.0])
    few, many = adv.Variable(tail), adv.Variable(np.concatenate([tail, np.linspace(-20.0, -3.5, 40)]))
    out = []
    for x in (few, many):
        with adv.GradientTape() as tape:
            y = adv.nn.gelu(x)
        out.append((y.numpy()[:len(tail)], tape.gradient(y, x).numpy()[:len(tail)]))
    f, df = accuracy.UNARY["gelu"]
    for (y, g) in out:
        for xi, yi, gi in zip(tail, y, g):
            assert accuracy._error(yi, accuracy._mp(f)(xi), "float64") <= 4, xi
            assert accuracy._error(gi, accuracy._mp(df)(xi), "float64") <= 4, xi
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=4e-16, atol=1e-320)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=4e-16, atol=1e-320)
