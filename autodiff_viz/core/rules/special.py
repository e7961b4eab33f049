"""Special functions (``tf.math.lgamma``, ``digamma``, ``erfinv``, the Bessel functions …): their rules.

The forwards are scipy's (``scipy.special``), computed in the input's precision; scipy is optional, and an op
here without it raises an ImportError that names the op and the install line. Each derivative is the
textbook one, written with the rules themselves (so a second derivative works too):

* ``d/dx ln Γ(x) = ψ(x)``, ``d/dx ψ(x) = ψ⁽¹⁾(x)``, ``d/dx ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁺¹⁾(x)``;
* ``d/dx erf⁻¹(x) = (√π/2)·e^(y²)``, ``d/dx Φ⁻¹(p) = √(2π)·e^(y²/2)``;
* ``d/dx I₀(x) = I₁(x)``, ``d/dx I₁(x) = I₀(x) − I₁(x)/x``, and the scaled ``Iₙe(x) = e^(−|x|)·Iₙ(x)``;
* ``∂P(a, x)/∂x = e^(−x)·x^(a−1)/Γ(a)`` (regularized incomplete gamma), ``∂I_x(a, b)/∂x = x^(a−1)(1−x)^(b−1)/B(a, b)``.

As in TensorFlow, the shape parameters (``a`` of ``igamma``, ``a``/``b`` of ``betainc``, ``n`` of
``polygamma``, ``x`` of ``zeta``) have no gradient here: a path through them gives None.
"""
from __future__ import annotations

import numpy as np

from . import accurate
from .elementwise import _unary, exp, log, sign, square
from .table import define


def _special(name):
    try:
        import scipy.special as sp
    except ImportError:
        raise ImportError(f"{name}: this special function is computed by scipy, which is not installed. "
                          "Fix: pip install scipy") from None
    return getattr(sp, name)


def _scipy(name, domain=None):
    """``scipy.special.<name>``, computed in float64 and rounded to the inputs' dtype (float32 inputs get a
    correctly rounded result, not float32 arithmetic's), or an ImportError a learner can act on. ``domain``:
    the open interval outside which the function has no real value (NaN there, whatever scipy returns)."""
    def forward(*args):
        dtype = np.result_type(*[np.asarray(a).dtype for a in args], np.float32)
        wide = [np.asarray(a, dtype=np.float64) for a in args]
        out = np.asarray(_special(name)(*wide))
        if domain is not None:
            lo, hi = domain
            x = wide[-1]
            out = np.where((x < lo) | (x > hi), np.nan, out)
        return out.astype(dtype, copy=False)
    forward.__name__ = name
    return forward


def _unscaled(order):
    """``Iₙ(x) = (e^(|x|/2)·Iₙe(x))·e^(|x|/2)``: the scaled function times ``e^|x|`` in two halves, so the
    result is finite wherever it is representable (``e^|x|`` alone overflows first); ±∞ at ±∞."""
    def forward(x):
        dtype = np.result_type(np.asarray(x).dtype, np.float32)
        w = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            half = np.exp(np.abs(w) / 2)
            out = (half * _special(f"i{order}e")(w)) * half
        out = np.where(np.isinf(w), np.inf if order == 0 else np.sign(w) * np.inf, out)
        return out.astype(dtype, copy=False)
    forward.__name__ = f"i{order}"
    return forward


_SQRT_PI_2 = float(np.sqrt(np.pi) / 2)
_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))
_SQRT_2PI = float(np.sqrt(2 * np.pi))


def _lgamma(x):
    """scipy's ``gammaln``, and ``−ln|x|`` where |x| < 1e-300 (there ``Γ(x) ≈ 1/x``; scipy overflows at a
    negative subnormal); float64 in [½, 2.5], around the zeros 1 and 2, from a series
    (:func:`accurate.lgamma_near_zeros`)."""
    out = _scipy("gammaln")(x)
    small = np.abs(np.asarray(x)) < 1e-300
    if np.any(small & (np.asarray(x) != 0)):
        with np.errstate(divide="ignore"):
            out = np.where(small, -np.log(np.abs(np.asarray(x, dtype=np.float64))), out).astype(out.dtype)
    w = np.asarray(x)
    if w.dtype == np.float64:
        out = accurate.patch(out, w, (w >= 0.5) & (w <= 2.5), accurate.lgamma_near_zeros)
    return out


def _digamma(x):
    """scipy's ``psi``; for x < 0 (not an integer, computed in float64) by reflection with an exact reduction
    (:func:`accurate.digamma_negative`)."""
    dtype = np.result_type(np.asarray(x).dtype, np.float32)
    w = np.asarray(x, dtype=np.float64)
    out = np.asarray(_scipy("psi")(w))
    out = accurate.patch(out, w, (w < 0) & (w > -2.0 ** 52) & (w != np.round(w)), accurate.digamma_negative)
    return np.asarray(out).astype(dtype, copy=False)


lgamma = _unary("lgamma", _lgamma, "y = ln abs(Γ(x))", "ψ(x)", lambda y, x: digamma(x))


digamma = _unary("digamma", _digamma, "y = ψ(x) = d/dx ln Γ(x)", "ψ⁽¹⁾(x)",
                 lambda y, x: polygamma(1, x))


polygamma = define(
    "polygamma", _scipy("polygamma"), elementwise=True, doc="y = ψ⁽ⁿ⁾(x), the n-th derivative of ψ",
    n=None,
    x=("ψ⁽ⁿ⁺¹⁾(x)", lambda g, y, n, x: g * polygamma(n + 1, x), lambda dx, y, n, x: dx * polygamma(n + 1, x)))


erfinv = _unary("erfinv", _scipy("erfinv"), "y = erf⁻¹(x) (±∞ at ±1)", "(√π/2)·e^(y²)",
                lambda y, x: _SQRT_PI_2 * exp(square(y)))


def _erfcinv(x):
    """scipy's ``erfcinv``, and Newton's method below 1e-300 (:func:`accurate.erfcinv_tiny`: scipy returns ∞
    at the smallest subnormal)."""
    out = _scipy("erfcinv", (0, 2))(x)
    w = np.asarray(x)
    if w.dtype == np.float64:
        out = accurate.patch(out, w, (w > 0) & (w < 1e-300), accurate.erfcinv_tiny)
    return out


def _plain(x, y):
    """Are ``x`` and ``y`` plain float arrays (a backward pass without an outer tape)?"""
    return type(x) is np.ndarray and type(y) is np.ndarray and x.ndim and x.dtype in _F32_F64 and \
        x.shape == y.shape


erfcinv = _unary("erfcinv", _erfcinv, "y = erfc⁻¹(x)", "−(√π/2)·e^(y²)",
                 lambda y, x: -_SQRT_PI_2 * (accurate.inverse_slope(x, y, False) if _plain(x, y)
                                             else exp(square(y))))


ndtri = _unary("ndtri", _scipy("ndtri", (0, 1)), "y = Φ⁻¹(p), the standard normal quantile", "√(2π)·e^(y²/2)",
               lambda y, x: _SQRT_2PI * (accurate.inverse_slope(x, y, True) if _plain(x, y)
                                         else exp(0.5 * square(y))))


bessel_i0 = _unary("bessel_i0", _unscaled(0), "y = I₀(x), modified Bessel function of order 0", "I₁(x)",
                   lambda y, x: bessel_i1(x))


def _bessel_slope(name, formula):
    """The rule's derivative: on plain float arrays :func:`accurate.bessel_slope` (I₀e − I₁e without its
    cancellation for large |x|, I₁(x)/x without its loss at a subnormal x), else the textbook formula."""
    def d(y, x):
        return accurate.bessel_slope(name, x) if _plain(x, y) and accurate.have_scipy() else formula(y, x)
    return d


bessel_i1 = _unary("bessel_i1", _unscaled(1), "y = I₁(x), modified Bessel function of order 1",
                   "I₀(x) − I₁(x)/x", _bessel_slope("bessel_i1", lambda y, x: bessel_i0(x) - y / x))


bessel_i0e = _unary("bessel_i0e", _scipy("i0e"), "y = e^(−|x|)·I₀(x)", "I₁e(x) − sign(x)·y",
                    _bessel_slope("bessel_i0e", lambda y, x: bessel_i1e(x) - sign(x) * y))


bessel_i1e = _unary("bessel_i1e", _scipy("i1e"), "y = e^(−|x|)·I₁(x)", "I₀e(x) − y·(sign(x) + 1/x)",
                    _bessel_slope("bessel_i1e", lambda y, x: bessel_i0e(x) - sign(x) * y - y / x))


def _floats(*vs):
    """Are these plain float arrays (a backward pass without an outer tape)?"""
    return all(type(v) is np.ndarray and v.dtype in _F32_F64 for v in vs) and accurate.have_scipy()


def _igamma_dx(x, a):
    if _floats(x, a):
        return accurate.gamma_density(a, x)
    return exp(-x + (a - 1) * log(x) - lgamma(a))


def _incomplete_gamma(upper):
    """scipy's ``gammainc`` (``upper``: ``gammaincc``), in float64 where the tail is small: P for x < ¼ by its
    series, Q for a + 1 < x < 745 by its continued fraction, each with its prefactor a product of powers
    (:func:`accurate.igamma_small`, :func:`accurate.igammac_large`)."""
    plain = _scipy("gammaincc" if upper else "gammainc")

    def forward(a, x):
        out = plain(a, x)
        w, av = np.asarray(x), np.asarray(a)
        if w.dtype == np.float64 and av.dtype.kind == "f" and np.shape(out):
            w, av = np.broadcast_to(w, out.shape), np.broadcast_to(av, out.shape)
            if upper:
                sel = (w > av + 1) & (w < 745) & (av > 0)                # Q underflows beyond 745
                fix = accurate.igammac_large
            else:
                sel = (w > 0) & (w < 0.25) & (av > 0)
                fix = accurate.igamma_small
            if sel.any():
                out = np.array(out)
                out[sel] = fix(av[sel].astype(np.float64), w[sel])
        return out
    forward.__name__ = "gammaincc" if upper else "gammainc"
    return forward


igamma = define(
    "igamma", _incomplete_gamma(False), elementwise=True, doc="y = P(a, x), the regularized lower incomplete gamma",
    a=None,
    x=("e^(−x)·x^(a−1)/Γ(a)", lambda g, y, a, x: g * _igamma_dx(x, a), lambda dx, y, a, x: dx * _igamma_dx(x, a)))


igammac = define(
    "igammac", _incomplete_gamma(True), elementwise=True, doc="y = Q(a, x) = 1 − P(a, x)",
    a=None,
    x=("−e^(−x)·x^(a−1)/Γ(a)", lambda g, y, a, x: -g * _igamma_dx(x, a),
       lambda dx, y, a, x: -dx * _igamma_dx(x, a)))


def _betainc_dx(a, b, x):
    if _floats(a, b, x):
        return accurate.beta_density(a, b, x)
    return exp((a - 1) * log(x) + (b - 1) * log(1 - x) - (lgamma(a) + lgamma(b) - lgamma(a + b)))


betainc = define(
    "betainc", _scipy("betainc"), elementwise=True, doc="y = I_x(a, b), the regularized incomplete beta",
    a=None, b=None,
    x=("x^(a−1)(1−x)^(b−1)/B(a, b)", lambda g, y, a, b, x: g * _betainc_dx(a, b, x),
       lambda dx, y, a, b, x: dx * _betainc_dx(a, b, x)))


zeta = define(
    "zeta", _scipy("zeta"), elementwise=True, doc="y = ζ(x, q) = Σₖ (k + q)^(−x), Hurwitz's zeta",
    x=None,
    q=("−x·ζ(x + 1, q)", lambda g, y, x, q: -g * x * zeta(x + 1, q), lambda dq, y, x, q: -dq * x * zeta(x + 1, q)))
