"""Accuracy as a property of every op: the worst error in ulps of each elementwise op and its gradient.

Every elementwise rule of the table (``autodiff_viz.core.rules.TABLE``) is evaluated in float32 and float64
on a grid that includes the tails (±20, ±80, ±700, ±1e30), subnormals, ±0, ±∞ and NaN, and compared with a
reference computed by ``mpmath`` at 50 digits (exact to the last bit of both dtypes). The error of one
value is ``|ours − exact| / ulp(exact)`` in that dtype — 0.5 is the best a rounded result can do; a
result that should be NaN or ±∞ and is not (or the reverse) counts as ∞. The gradient is the rule's own
VJP, taken by a tape (``∂/∂x Σ f(x)`` is ``f′(x)`` entrywise for an elementwise op), against the exact
derivative; where the derivative has a kink, the reference is TensorFlow's convention (0 at ``relu``'s
and ``abs``'s kink, half to each at a tie of ``maximum``).

Ops that select or compare (``where``, ``clip``, ``maximum`` values, comparisons, ``floor`` …) must be
*exact*: their values are compared with numpy bit for bit.

:data:`BOUNDS` is the one table of documented bounds; ``tests/test_accuracy.py`` fails when an op's worst
error passes its bound, and when an elementwise rule has no reference here (a new op is measured from
its first day). ``python tools/accuracy.py --write`` regenerates ``docs/accuracy.md``, with TensorFlow's
own worst error beside ours where TensorFlow is installed.
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.core import rules as R  # noqa: E402
from autodiff_viz.core.engine import call  # noqa: E402

try:
    import mpmath as mp
except ImportError:     # the suite needs it; tests skip with the reason
    mp = None

DTYPES = ("float32", "float64")


# ----- the grid ----------------------------------------------------------------------------------------------
def grid(dtype):
    """Every input the unary ops are evaluated at, in ``dtype`` (values past its range become ±∞)."""
    tiny = np.finfo(dtype).smallest_subnormal
    normal = np.finfo(dtype).tiny
    mags = [tiny, tiny * 3, normal / 7, normal, 1e-30, 1e-12, 1e-7, 1e-4, 1e-3, 0.01, 0.1, 0.25, 0.5, 0.75,
            0.9, 0.99, 1.0, 1.01, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0, 17.5, 20.0, 30.0, 40.0, 80.0, 88.0, 89.0,
            100.0, 300.0, 700.0, 709.0, 711.0, 1e4, 1e10, 1e30, 3e38, 1e300]
    dense = list(np.linspace(0.05, 20.0, 30))
    with np.errstate(over="ignore"):
        values = np.array([0.0] + mags + dense + [np.inf], dtype=np.float64).astype(dtype)
    values = np.unique(np.concatenate([values, -values, np.array([np.nan], dtype=dtype)]))
    return values


def pair_grid(dtype):
    """The inputs of binary ops: every pair of a smaller set (signs, tails, ±0, ±∞, NaN)."""
    base = np.array([0.0, 1e-300, 1e-30, 1e-5, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, 20.0, 80.0, 700.0, 1e30,
                     np.inf], dtype=np.float64)
    with np.errstate(over="ignore"):
        vals = np.unique(np.concatenate([base, -base, [np.nan]]).astype(dtype))
    a, b = np.meshgrid(vals, vals, indexing="ij")
    return a.reshape(-1), b.reshape(-1)


# ----- references ------------------------------------------------------------------------------------------
_MEMO = {}


def _mp(f):
    """``f`` on an mpf, NaN where it has no real value (a complex result, a domain error); remembered, so
    the page's TensorFlow column reuses the references of ours."""
    def safe(*xs):
        key = (f, tuple(float(v) for v in xs))
        if key not in _MEMO:
            _MEMO[key] = _exact(*xs)
        return _MEMO[key]

    def _exact(*xs):
        if any(np.isnan(v) for v in xs):
            return mp.nan
        try:
            with mp.workdps(50):
                y = f(*[mp.mpf(float(v)) for v in xs])
        except (ZeroDivisionError, OverflowError):     # a pole, or past mpmath's range: not scored
            return None
        except ValueError as exc:
            return None if "pole" in str(exc) else mp.nan
        except TypeError:
            return mp.nan
        if isinstance(y, mp.mpc):
            return mp.nan if y.imag != 0 else y.real
        return y
    return safe


def _deep(f):
    """``f()`` at 400 digits: ``1 − x`` must keep a subnormal ``x`` (``erfcinv``, ``ndtri`` near 0)."""
    with mp.workdps(400):
        return +f()


def _wide(x, f):
    """``f()`` with 2·log₁₀|x| more digits: I₀e − I₁e cancels to ~1/(2|x|) of each (39 digits at 3e38)."""
    with mp.workdps(50 + 2 * int(mp.log10(abs(x) + 1))):
        return +f()


def _sig(x):
    return 1 / (1 + mp.exp(-x))


def _phi(x):
    return mp.erfc(-x / mp.sqrt(2)) / 2


def _where(cond, a, b):
    return a if cond else b


_SELU_A, _SELU_L = mp.mpf("1.6732632423543772848170429916717") if mp else 0, \
    mp.mpf("1.0507009873554804934193349852946") if mp else 0


def _inf_aware(f, at_inf):
    """``f`` with its limits at ±∞ given explicitly (mpmath's arithmetic with inf gives NaN for ∞/∞)."""
    def g(x):
        if mp.isinf(x):
            return at_inf(x)
        return f(x)
    return g


#: op → (reference value, reference derivative) as functions of mpf; params: the rule's keyword arguments
UNARY = {
    "exp": (mp.exp, mp.exp), "log": (mp.log, lambda x: 1 / x), "sqrt": (mp.sqrt, lambda x: 1 / (2 * mp.sqrt(x))),
    "square": (lambda x: x * x, lambda x: 2 * x), "negative": (lambda x: -x, lambda x: mp.mpf(-1)),
    "abs": (abs, lambda x: mp.sign(x)), "sign": (mp.sign, lambda x: mp.mpf(0)),
    "tanh": (mp.tanh, lambda x: mp.sech(x) ** 2), "sin": (mp.sin, mp.cos), "cos": (mp.cos, lambda x: -mp.sin(x)),
    "tan": (mp.tan, lambda x: 1 + mp.tan(x) ** 2), "sinh": (mp.sinh, mp.cosh), "cosh": (mp.cosh, mp.sinh),
    "arcsin": (mp.asin, lambda x: 1 / mp.sqrt(1 - x * x)), "arccos": (mp.acos, lambda x: -1 / mp.sqrt(1 - x * x)),
    "arctan": (mp.atan, lambda x: 1 / (1 + x * x)), "arcsinh": (mp.asinh, lambda x: 1 / mp.sqrt(x * x + 1)),
    "arccosh": (mp.acosh, lambda x: 1 / mp.sqrt(x * x - 1) if x >= 1 else mp.nan),
    "arctanh": (mp.atanh, lambda x: 1 / (1 - x * x)),
    "log1p": (mp.log1p, lambda x: 1 / (1 + x)), "expm1": (mp.expm1, mp.exp),
    "log2": (lambda x: mp.log(x, 2), lambda x: 1 / (x * mp.log(2))),
    "log10": (lambda x: mp.log(x, 10), lambda x: 1 / (x * mp.log(10))),
    "exp2": (lambda x: mp.power(2, x), lambda x: mp.power(2, x) * mp.log(2)),
    "reciprocal": (lambda x: 1 / x, lambda x: -1 / (x * x)),
    "cbrt": (lambda x: mp.sign(x) * mp.cbrt(abs(x)), lambda x: 1 / (3 * mp.cbrt(abs(x)) ** 2)),
    "erf": (mp.erf, lambda x: 2 / mp.sqrt(mp.pi) * mp.exp(-x * x)),
    "erfc": (mp.erfc, lambda x: -2 / mp.sqrt(mp.pi) * mp.exp(-x * x)),
    "sigmoid": (_sig, lambda x: _sig(x) * _sig(-x)),
    "softplus": (lambda x: mp.log1p(mp.exp(x)) if x < 0 else x + mp.log1p(mp.exp(-x)), _sig),
    "log_sigmoid": (lambda x: -(mp.log1p(mp.exp(-x)) if x > 0 else -x + mp.log1p(mp.exp(x))), lambda x: _sig(-x)),
    "relu": (lambda x: _where(x > 0, x, mp.mpf(0)), lambda x: mp.mpf(1 if x > 0 else 0)),
    "leaky_relu": (lambda x: _where(x > 0, x, x / 5), lambda x: mp.mpf(1) if x > 0 else mp.mpf(1) / 5),
    "elu": (lambda x: _where(x > 0, x, mp.expm1(x)), lambda x: mp.mpf(1) if x > 0 else mp.exp(x)),
    "selu": (lambda x: _SELU_L * _where(x > 0, x, _SELU_A * mp.expm1(x)),
             lambda x: _SELU_L if x > 0 else _SELU_L * _SELU_A * mp.exp(x)),
    "gelu": (lambda x: x * _phi(x), lambda x: _phi(x) + x * mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)),
    "silu": (lambda x: x * _sig(x), lambda x: _sig(x) * (1 + x * _sig(-x))),
    "softsign": (lambda x: x / (1 + abs(x)), lambda x: 1 / (1 + abs(x)) ** 2),
    "hard_sigmoid": (lambda x: min(max(x / 6 + mp.mpf(1) / 2, 0), 1),
                     lambda x: mp.mpf(1) / 6 if -3 < x < 3 else mp.mpf(0)),
    "lgamma": (lambda x: mp.log(abs(mp.gamma(x))), mp.digamma), "digamma": (mp.digamma, lambda x: mp.psi(1, x)),
    "erfinv": (mp.erfinv, lambda x: mp.sqrt(mp.pi) / 2 * mp.exp(mp.erfinv(x) ** 2)),
    "erfcinv": (lambda x: _deep(lambda: mp.erfinv(1 - x)) if 0 <= x <= 2 else mp.nan,
                lambda x: _deep(lambda: -mp.sqrt(mp.pi) / 2 * mp.exp(mp.erfinv(1 - x) ** 2)) if 0 <= x <= 2
                else mp.nan),
    "ndtri": (lambda p: _deep(lambda: mp.sqrt(2) * mp.erfinv(2 * p - 1)) if 0 <= p <= 1 else mp.nan,
              lambda p: _deep(lambda: mp.sqrt(2 * mp.pi) * mp.exp(mp.erfinv(2 * p - 1) ** 2)) if 0 <= p <= 1
              else mp.nan),
    "bessel_i0": (lambda x: mp.besseli(0, x), lambda x: mp.besseli(1, x)),
    "bessel_i1": (lambda x: mp.besseli(1, x), lambda x: mp.besseli(0, x) - mp.besseli(1, x) / x),
    "bessel_i0e": (lambda x: mp.exp(-abs(x)) * mp.besseli(0, x),
                   lambda x: _wide(x, lambda: mp.exp(-abs(x)) * (mp.besseli(1, x) - mp.sign(x) * mp.besseli(0, x)))),
    "bessel_i1e": (lambda x: mp.exp(-abs(x)) * mp.besseli(1, x),
                   lambda x: _wide(x, lambda: mp.exp(-abs(x)) * (mp.besseli(0, x)
                                                                 - mp.besseli(1, x) * (mp.sign(x) + 1 / x)))),
} if mp else {}

#: limits at ±∞ where mpmath's own arithmetic has none (∞/∞, ∞ − ∞): op → (value at −∞, value at +∞)
LIMITS = {"sigmoid": (0, 1), "softplus": (0, math.inf), "log_sigmoid": (-math.inf, 0), "tanh": (-1, 1),
          "silu": (0, math.inf), "softsign": (-1, 1), "gelu": (0, math.inf), "elu": (-1, math.inf),
          "selu": (-1.7580993408473766, math.inf), "erf": (-1, 1), "erfc": (2, 0), "arctan": (-math.pi / 2,
                                                                                               math.pi / 2),
          "bessel_i0e": (0, 0), "bessel_i1e": (0, 0), "leaky_relu": (-math.inf, math.inf),
          "relu": (0, math.inf), "hard_sigmoid": (0, 1), "exp": (0, math.inf), "expm1": (-1, math.inf),
          "exp2": (0, math.inf), "reciprocal": (0, 0), "cbrt": (-math.inf, math.inf),
          "bessel_i0": (math.inf, math.inf), "bessel_i1": (-math.inf, math.inf), "lgamma": (math.inf, math.inf)}

#: op → the largest |x| its grid goes to, where mpmath would take minutes beyond (or the function overflows
#: both ways there)
DOMAIN = {"digamma": 1e4, "polygamma": 1e4, "lgamma": 1e10, "bessel_i0": 700.0, "bessel_i1": 700.0}
GRAD_LIMITS = {"sigmoid": (0, 0), "softplus": (0, 1), "log_sigmoid": (1, 0), "tanh": (0, 0), "silu": (0, 1),
               "softsign": (0, 0), "gelu": (0, 1), "elu": (0, 1), "selu": (0, 1.0507009873554805), "erf": (0, 0),
               "erfc": (0, 0), "arctan": (0, 0), "relu": (0, 1), "leaky_relu": (0.2, 1), "hard_sigmoid": (0, 0),
               "exp": (0, math.inf), "expm1": (0, math.inf), "exp2": (0, math.inf), "reciprocal": (0, 0),
               "cbrt": (0, 0), "bessel_i0e": (0, 0), "bessel_i1e": (0, 0), "bessel_i0": (-math.inf, math.inf),
               "bessel_i1": (math.inf, math.inf)}

PARAMS = {"leaky_relu": {"alpha": 0.2}, "elu": {"alpha": 1.0}, "gelu": {"approximate": False}}

#: op → (value, ∂/∂a, ∂/∂b)
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: 1, lambda a, b: 1),
    "subtract": (lambda a, b: a - b, lambda a, b: 1, lambda a, b: -1),
    "multiply": (lambda a, b: a * b, lambda a, b: b, lambda a, b: a),
    "divide": (lambda a, b: a / b, lambda a, b: 1 / b, lambda a, b: -a / (b * b)),
    "arctan2": (mp.atan2, lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b)),
    "hypot": (mp.hypot, lambda a, b: a / mp.hypot(a, b), lambda a, b: b / mp.hypot(a, b)),
    "logaddexp": (lambda a, b: max(a, b) + mp.log1p(mp.exp(-abs(a - b))), lambda a, b: 1 / (1 + mp.exp(b - a)),
                  lambda a, b: 1 / (1 + mp.exp(a - b))),
    "logaddexp2": (lambda a, b: max(a, b) + mp.log1p(mp.power(2, -abs(a - b))) / mp.log(2),
                   lambda a, b: 1 / (1 + mp.power(2, b - a)), lambda a, b: 1 / (1 + mp.power(2, a - b))),
    "power": (mp.power, lambda a, b: b * mp.power(a, b - 1), lambda a, b: mp.power(a, b) * mp.log(a)),
} if mp else {}

NUMPY_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                "arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
                "power": np.power}
SIGNED_ZERO = {"arctan2", "divide"}     # ops whose value depends on the sign of a zero input

#: ops whose values must equal numpy's bit for bit (selections, comparisons, steps) and their numpy function
EXACT = {
    "maximum": np.maximum, "minimum": np.minimum, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": np.round, "mod": np.mod, "floor_divide": np.floor_divide, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal, "equal": np.equal,
    "not_equal": np.not_equal, "where": lambda c, a, b: np.where(c, a, b), "clip": np.clip,
}

#: ops whose first arguments are shape parameters (no gradient): the parameters used, and a domain for x
SHAPED = {
    "polygamma": ((1.0,), (lambda n, x: mp.psi(int(n), x)), (lambda n, x: mp.psi(int(n) + 1, x)), (0, 1e30)),
    "igamma": ((2.5,), (lambda a, x: mp.gammainc(a, 0, x, regularized=True)),
               (lambda a, x: mp.exp(-x) * x ** (a - 1) / mp.gamma(a)), (0, 1e30)),
    "igammac": ((2.5,), (lambda a, x: mp.gammainc(a, x, mp.inf, regularized=True)),
                (lambda a, x: -mp.exp(-x) * x ** (a - 1) / mp.gamma(a)), (0, 1e30)),
    "betainc": ((2.0, 3.0), (lambda a, b, x: mp.betainc(a, b, 0, x, regularized=True)),
                (lambda a, b, x: x ** (a - 1) * (1 - x) ** (b - 1) / mp.beta(a, b)), (0, 1)),
    "zeta": ((3.0,), (lambda s, q: mp.zeta(s, q)), (lambda s, q: -s * mp.zeta(s + 1, q)), (1e-3, 1e30)),
}

#: op → {dtype: (worst ulps of the value, of the gradient)}: the documented bounds (docs/accuracy.md)
BOUNDS = {  # measured on this grid, rounded up to a power of two (at least 4 ulps)
    "abs": {"float32": (4, 4), "float64": (4, 4)},
    "add": {"float32": (4, 4), "float64": (4, 4)},
    "arccos": {"float32": (4, 4), "float64": (4, 4)},
    "arccosh": {"float32": (4, 4), "float64": (4, 4)},
    "arcsin": {"float32": (4, 4), "float64": (4, 4)},
    "arcsinh": {"float32": (4, 4), "float64": (4, 4)},
    "arctan": {"float32": (4, 4), "float64": (4, 4)},
    "arctan2": {"float32": (4, 4), "float64": (4, 4)},
    "arctanh": {"float32": (4, 4), "float64": (4, 4)},
    "bessel_i0": {"float32": (4, 4), "float64": (8, 8)},
    "bessel_i0e": {"float32": (4, 4), "float64": (8, 4)},
    "bessel_i1": {"float32": (4, 4), "float64": (8, 8)},
    "bessel_i1e": {"float32": (4, 4), "float64": (8, 8)},
    "betainc": {"float32": (4, 4), "float64": (4, 4)},
    "cbrt": {"float32": (4, 4), "float64": (4, 8)},
    "cos": {"float32": (4, 4), "float64": (4, 4)},
    "cosh": {"float32": (4, 4), "float64": (4, 4)},
    "digamma": {"float32": (4, 4), "float64": (4, 8)},
    "divide": {"float32": (4, 4), "float64": (4, 4)},
    "elu": {"float32": (4, 4), "float64": (4, 4)},
    "erf": {"float32": (4, 4), "float64": (4, 4)},
    "erfc": {"float32": (4, 4), "float64": (4, 4)},
    "erfcinv": {"float32": (4, 4), "float64": (4, 4)},
    "erfinv": {"float32": (4, 4), "float64": (4, 4)},
    "exp": {"float32": (4, 4), "float64": (4, 4)},
    "exp2": {"float32": (4, 4), "float64": (4, 4)},
    "expm1": {"float32": (4, 4), "float64": (4, 4)},
    "gelu": {"float32": (4, 4), "float64": (8, 4)},
    "hard_sigmoid": {"float32": (4, 4), "float64": (4, 4)},
    "hypot": {"float32": (4, 4), "float64": (4, 4)},
    "igamma": {"float32": (4, 4), "float64": (8, 4)},
    "igammac": {"float32": (4, 4), "float64": (16, 4)},
    "leaky_relu": {"float32": (4, 4), "float64": (4, 4)},
    "lgamma": {"float32": (4, 4), "float64": (4, 4)},
    "log": {"float32": (4, 4), "float64": (4, 4)},
    "log10": {"float32": (4, 4), "float64": (4, 4)},
    "log1p": {"float32": (4, 4), "float64": (4, 4)},
    "log2": {"float32": (4, 4), "float64": (4, 4)},
    "log_sigmoid": {"float32": (4, 4), "float64": (4, 4)},
    "logaddexp": {"float32": (8, 4), "float64": (8, 4)},
    "logaddexp2": {"float32": (8, 4), "float64": (4, 4)},
    "multiply": {"float32": (4, 4), "float64": (4, 4)},
    "ndtri": {"float32": (4, 4), "float64": (4, 4)},
    "negative": {"float32": (4, 4), "float64": (4, 4)},
    "polygamma": {"float32": (4, 4), "float64": (4, 8)},
    "power": {"float32": (4, 8), "float64": (4, 4)},
    "reciprocal": {"float32": (4, 4), "float64": (4, 4)},
    "relu": {"float32": (4, 4), "float64": (4, 4)},
    "selu": {"float32": (4, 4), "float64": (4, 4)},
    "sigmoid": {"float32": (4, 4), "float64": (4, 4)},
    "sign": {"float32": (4, 4), "float64": (4, 4)},
    "silu": {"float32": (4, 4), "float64": (8, 8)},
    "sin": {"float32": (4, 4), "float64": (4, 4)},
    "sinh": {"float32": (4, 4), "float64": (4, 4)},
    "softplus": {"float32": (4, 4), "float64": (4, 4)},
    "softsign": {"float32": (4, 4), "float64": (4, 4)},
    "sqrt": {"float32": (4, 4), "float64": (4, 4)},
    "square": {"float32": (4, 4), "float64": (4, 4)},
    "subtract": {"float32": (4, 4), "float64": (4, 4)},
    "tan": {"float32": (4, 4), "float64": (4, 4)},
    "tanh": {"float32": (4, 4), "float64": (4, 4)},
    "zeta": {"float32": (4, 4), "float64": (8, 4)},
}


#: op → why its bound is what it is, where it is above a few ulps
NOTES = {
    "sigmoid": "computed as e/(1 + e) or 1/(1 + e) with e = e^(−|x|), its gradient as e/(1 + e)² from x: a few "
               "ulps everywhere, in both tails (the textbook ½(1 + tanh(x/2)) had 6 % error at x = −16 in "
               "float32 and 0 below −17; the output form y(1 − y) of the gradient is 0 above x ≈ 17)",
    "tanh": "the gradient is sech²x = 4e/(1 + e)², e = e^(−2|x|), from x: 1 − y² from the output is 0 where y "
            "rounds to ±1 (|x| > 9 in float32), while the true slope is 4e^(−2|x|)",
    "logaddexp": "value: numpy's max + log1p(e^(−|a − b|)), which cancels where the result is near 0 (7 ulps "
                 "at (−1.5, −0.3)); gradient σ(a − b) with the rounding of a − b undone (a − b = s + t exactly, "
                 "σ(s + t) = σ(s)(1 + t·σ(−s))): the rounding alone was amplified by |a − b| (328 ulps at "
                 "a − b = −700 in float64; TensorFlow's e^(a − y) loses the same way)",
    "logaddexp2": "as logaddexp, the slope 1/(1 + 2^(b − a)) from exp2 (σ((a − b)·ln 2) also rounded the product)",
    "power": "∂/∂a = b·a^(b−1) as b·y/a where b − 1 is rounded (its rounding was amplified by ln a: 401 ulps "
             "at a = 1e-300, b = −1e-5 in float64); ∂/∂b = y·ln a as (a^(b/2)·ln a)·a^(b/2) where y is "
             "subnormal; a subnormal a^(b−1) times b keeps 5 ulps in float32 (a = 80, b = −20); values at "
             "a = 0 are conventions (rules.power) and not scored",
    "gelu": "x·Φ(x) with Φ from scipy's ndtr, float32 in float64; float64 below −3.4 as ½x·erfcx(−x/√2)·"
            "e^(−x²/2) with x² split (ndtr rounds x/√2 and x², 350 ulps at x = −30; between −3.4 and −2 off "
            "the grid it still loses up to 19 ulps: patching there would touch most 1000-entry arrays). The "
            "gradient Φ(x) + x·φ(x) has a zero at x₀ ≈ −0.7518 where the sum cancels (239 ulps at −0.75 in "
            "float32): float32 in float64, float64 from its Taylor polynomial within 0.2 of x₀",
    "erfc": "float64 beyond x = 2 as erfcx(x)·e^(−x²) with x² split: scipy's erfc rounds x² (286 ulps at "
            "x = 16)",
    "silu": "float32 in float64, value and gradient: σ(−100) is subnormal in float32 (the gradient kept 45 "
            "ulps of its rounding), and the gradient σ(x)(1 + x·σ(−x)) cancels near its zero at x ≈ −1.278 "
            "(float64 loses bits there too, off the grid)",
    "bessel_i0e": "the gradient −sign(x)·(I₀e − I₁e)(|x|): the difference of scipy's values cancels for large "
                  "|x| (both ≈ 1/√(2π|x|); 8.7e15 ulps at 3e38), so it is a trapezoidal sum of its integral "
                  "below 30 and its asymptotic series above; float32 in float64; the value is scipy's",
    "bessel_i1e": "the gradient (I₀e − I₁e)(|x|) − I₁e(|x|)/|x| as bessel_i0e, one trapezoidal sum for 2 < |x| < "
                  "30, its Taylor polynomial within 0.8 of its zero at |x| ≈ 1.545 (where the difference "
                  "cancels), ½ + x²/16 for I₁(x)/x below 1e-5 (a subnormal x kept few bits of y/x)",
    "bessel_i1": "the gradient I₀(x) − I₁(x)/x, with I₁(x)/x = ½ + x²/16 below 1e-5 (a subnormal x kept few "
                 "bits of the quotient)",
    "betainc": "the gradient x^(a−1)(1−x)^(b−1)/B(a, b) as that product of powers (as one exponential of the "
               "sum of logs it carried the sum's rounding times ln x: 189 ulps at x = 2e-308)",
    "igamma": "scipy's, but float64 below x = ¼ by its series with the prefactor x^a·e^(−x)/Γ(a + 1) a product "
              "of powers (scipy's e^(a·ln x − x − ln Γ(a)) carries its argument's rounding times its size: 44 "
              "ulps at x = 1e-12); the gradient e^(−x)·x^(a−1)/Γ(a) as that product (52 ulps as one exponential "
              "at x = 80)",
    "igammac": "scipy's, but float64 for a + 1 < x < 745 by Legendre's continued fraction with the prefactor a "
               "product of powers (339 ulps at x = 700); below a + 1 scipy's 1 − P loses up to 45 ulps beside "
               "a + 1 (8 on the grid); the gradient as igamma",
    "lgamma": "float64 in [½, 2.5] from the series of ln Γ(2 + t) (scipy's gammaln lost 182 ulps at 1.99, "
              "next to its zeros at 1 and 2); the gradient is digamma",
    "digamma": "float64 x < 0 by reflection, ψ(1 − x) − π·cot(πr) with r = x − round(x) exact (scipy's psi: 35 "
               "ulps at −8.99, 1.4e6 beside a pole); next to each negative zero of ψ (one between each two "
               "poles) the reflection cancels, unboundedly close to the zero (1760 ulps at −8.696, off the "
               "grid)",
    "erfcinv": "below 1e-300 by Newton's method on ln erfc (scipy returns ∞ at 5e-324, where it is 27.2); the "
               "gradient −(√π/2)·e^(y²) as −(√π/2)·erfcx(|y|)/min(x, 2 − x) where |y| ≥ 1 (e^(y²) amplified the "
               "rounding of y by 2y²: 1230 ulps at x = 2e-308 in float64)",
    "ndtri": "the gradient √(2π)·e^(y²/2) as √(π/2)·erfcx(|y|/√2)/min(p, 1 − p) where |y| ≥ 1 (e^(y²/2) "
             "amplified the rounding of y in the far tails: 782 ulps in float64)",
}


# ----- measuring -------------------------------------------------------------------------------------------
def _ulp(value, dtype):
    """The spacing of ``dtype`` at the exact ``value`` (the smallest subnormal at 0)."""
    info = np.finfo(dtype)
    a = abs(value)
    if a < info.tiny:
        return mp.mpf(float(info.smallest_subnormal))
    e = mp.floor(mp.log(a, 2))
    if mp.power(2, e) > a:        # mp.log can land one below at an exact power of two
        e -= 1
    if mp.power(2, e + 1) <= a:
        e += 1
    return mp.power(2, e - info.nmant)


def _error(got, exact, dtype, near_overflow=False):
    """``|got − exact|`` in ulps of ``dtype`` at ``exact``; ∞ where one is NaN/∞ and the other is not; 0 at a
    pole (``exact`` None), and — with ``near_overflow`` — where ``exact`` is within 16× of the largest float
    (a formula's intermediate may overflow there, legitimately)."""
    if exact is None:
        return 0.0
    if near_overflow and not mp.isnan(exact) and abs(exact) > np.finfo(dtype).max / 16:
        return 0.0
    got = float(got)
    if mp.isnan(exact):
        return 0.0 if math.isnan(got) else math.inf
    if math.isnan(got):
        return math.inf
    big = float(np.finfo(dtype).max)
    if mp.isinf(exact) or abs(exact) > big * (1 + 2.0 ** -(np.finfo(dtype).nmant + 1)):
        sign = 1 if exact > 0 else -1
        return 0.0 if math.isinf(got) and (got > 0) == (sign > 0) else math.inf
    if math.isinf(got):
        return math.inf
    return float(abs(mp.mpf(got) - exact) / _ulp(exact, dtype))


def _ours(name, dtype, *xs, params=None):
    """The op's values and its gradient with respect to each float input (a tape over Σ f)."""
    rule = R.TABLE[name]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        vs = [adv.Variable(np.asarray(x, dtype=dtype)) for x in xs]
        with adv.GradientTape() as tape:
            y = call(rule, *vs, **(params or {}))
            total = adv.sum(y)
        grads = tape.gradient(total, vs)
    return y.numpy(), [None if g is None else g.numpy() for g in grads]


#: (op, dtype) → (input of the worst value, input of the worst gradient), for the page and for debugging
WHERE = {}


class _Worst:
    """The largest error seen, and where."""

    def __init__(self):
        self.value, self.at = 0.0, None

    def see(self, error, at):
        if error > self.value or self.at is None and error == self.value:
            self.value, self.at = error, at


def _limit(table, name, x):
    lo, hi = table[name]
    return mp.mpf(hi if x > 0 else lo)


def measure_unary(name, dtype):
    f, df = UNARY[name]
    x = grid(dtype)
    if name in DOMAIN:
        x = x[~(np.abs(x) > DOMAIN[name])]
    y, (g,) = _ours(name, dtype, x, params=PARAMS.get(name))
    wv, wg = _Worst(), _Worst()
    for xi, yi, gi in zip(x, y, g if g is not None else [None] * len(x)):
        exact = _limit(LIMITS, name, xi) if np.isinf(xi) and name in LIMITS else _mp(f)(xi)
        wv.see(_error(yi, exact, dtype), float(xi))
        if gi is not None and np.isfinite(xi):          # a derivative at ±∞ is a limit: not scored
            wg.see(_error(gi, _mp(df)(xi), dtype, near_overflow=True), float(xi))
    WHERE[name, dtype] = (wv.at, wg.at)
    return wv.value, wg.value


def measure_binary(name, dtype):
    f, da, db = BINARY[name]
    a, b = pair_grid(dtype)
    if name == "power":                    # the principal branch: a > 0 (a < 0 is tested in test_rules)
        a = np.abs(a)
    y, (ga, gb) = _ours(name, dtype, a, b)
    wv, wg = _Worst(), _Worst()
    with np.errstate(all="ignore"):
        ieee = NUMPY_BINARY[name](a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    for ai, bi, yi, gai, gbi, wi in zip(a, b, y, ga, gb, ieee):
        if not (np.isfinite(ai) and np.isfinite(bi)):
            continue                       # ∞ − ∞, ∞/∞ …: IEEE's answers, checked in tests/test_rules.py
        at = (float(ai), float(bi))
        if name in SIGNED_ZERO and ((ai == 0 and np.signbit(ai)) or (bi == 0 and np.signbit(bi))):
            wv.see(0.0 if (yi == wi or (np.isnan(yi) and np.isnan(wi))) else math.inf, at)
            continue                       # a signed zero, which mpmath has not: IEEE's value (numpy in float64)
        wv.see(_error(yi, _mp(f)(ai, bi), dtype), at)
        if name == "power" and ai == 0:
            continue                       # the slopes of aᵇ at a = 0 are conventions (see rules.power)
        for gi, d in ((gai, da), (gbi, db)):
            wg.see(_error(gi, _mp(d)(ai, bi), dtype, near_overflow=True), at)
    WHERE[name, dtype] = (wv.at, wg.at)
    return wv.value, wg.value


def measure_shaped(name, dtype):
    params, f, df, (lo, hi) = SHAPED[name]
    x = grid(dtype)
    if name in DOMAIN:
        x = x[~(np.abs(x) > DOMAIN[name])]
    x = x[(x >= lo) & (x <= hi)]
    y, grads = _ours(name, dtype, *[np.full(x.shape, p) for p in params], x)
    g = grads[-1]
    wv, wg = _Worst(), _Worst()
    for xi, yi, gi in zip(x, y, g):
        wv.see(_error(yi, _mp(f)(*params, xi), dtype), float(xi))
        if np.isfinite(xi):
            wg.see(_error(gi, _mp(df)(*params, xi), dtype), float(xi))
    WHERE[name, dtype] = (wv.at, wg.at)
    return wv.value, wg.value


def measure_exact(name, dtype):
    """0 when the values equal numpy's bit for bit (NaN where numpy's is NaN), else ∞."""
    x = grid(dtype)
    a, b = pair_grid(dtype)
    with np.errstate(all="ignore"):
        if name in ("floor", "ceil", "trunc"):
            got, want = _ours(name, dtype, x)[0], EXACT[name](x)
        elif name == "round":
            got, want = _ours(name, dtype, x, params={"decimals": 0})[0], np.round(x)
        elif name == "where":
            got = call(R.TABLE[name], adv.constant(a > b), adv.constant(a), adv.constant(b)).numpy()
            want = np.where(a > b, a, b)
        elif name == "clip":
            got = call(R.TABLE[name], adv.constant(x), adv.constant(x.dtype.type(-2)),
                       adv.constant(x.dtype.type(3))).numpy()
            want = np.clip(x, x.dtype.type(-2), x.dtype.type(3))
        else:
            got, want = _ours(name, dtype, a, b)[0], EXACT[name](a, b)
    same = (got == want) | (np.isnan(got.astype(float)) & np.isnan(want.astype(float)))
    return (0.0 if np.all(same) else math.inf), 0.0


def kind_of(name):
    for kind, table in (("unary", UNARY), ("binary", BINARY), ("shaped", SHAPED), ("exact", EXACT)):
        if name in table:
            return kind
    return None


def elementwise_rules():
    """Every elementwise rule of the table (new ones included automatically)."""
    return sorted(n for n, r in R.TABLE.items() if r.elementwise)


def measure(name, dtype):
    kind = kind_of(name)
    fn = {"unary": measure_unary, "binary": measure_binary, "shaped": measure_shaped, "exact": measure_exact}[kind]
    return fn(name, dtype)


def measure_all():
    """``{op: {dtype: (value ulps, gradient ulps)}}`` for every elementwise rule with a reference."""
    return {name: {dt: measure(name, dt) for dt in DTYPES} for name in elementwise_rules() if kind_of(name)}


# ----- TensorFlow's own error, for the page ------------------------------------------------------------------
TF_NAMES = {"arcsin": "math.asin", "arccos": "math.acos", "arctan": "math.atan", "arcsinh": "math.asinh",
            "arccosh": "math.acosh", "arctanh": "math.atanh", "relu": "nn.relu", "gelu": "nn.gelu",
            "silu": "nn.silu", "elu": "nn.elu", "selu": "nn.selu", "softsign": "nn.softsign",
            "leaky_relu": "nn.leaky_relu", "negative": "math.negative", "cbrt": None, "exp2": None,
            "log2": None, "log10": None, "hard_sigmoid": None, "arctan2": "math.atan2", "logaddexp": None,
            "logaddexp2": None, "hypot": None, "power": "math.pow", "reciprocal": "math.reciprocal",
            "sign": "math.sign", "abs": "math.abs", "square": "math.square"}


def tensorflow_error(name, dtype):
    """TensorFlow's worst error (value, gradient) on the same grid, or None without TensorFlow or the op."""
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    except ImportError:
        return None
    path = TF_NAMES.get(name, f"math.{name}")
    if path is None or kind_of(name) not in ("unary", "binary"):
        return None
    fn = tf
    for part in path.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            return None
    kwargs = {"alpha": 0.2} if name == "leaky_relu" else {}
    if kind_of(name) == "unary":
        x = grid(dtype)
        inputs = [x[~(np.abs(x) > DOMAIN[name])] if name in DOMAIN else x]     # as ours (mpmath's minutes)
    else:
        a, b = pair_grid(dtype)
        keep = np.isfinite(a) & np.isfinite(b)
        inputs = [np.abs(a[keep]) if name == "power" else a[keep], b[keep]]
    vs = [tf.Variable(x) for x in inputs]
    try:
        with tf.GradientTape() as tape:
            y = fn(*vs, **kwargs)
            total = tf.reduce_sum(y)
        grads = tape.gradient(total, vs)
    except Exception:     # noqa: BLE001  (no float kernel or no gradient for this op in TensorFlow)
        return None
    worst_v = worst_g = 0.0
    refs = UNARY.get(name) or BINARY.get(name)
    for i in range(len(inputs[0])):
        xs = [x[i] for x in inputs]
        if kind_of(name) == "unary" and np.isinf(xs[0]) and name in LIMITS:
            exact = _limit(LIMITS, name, xs[0])
        else:
            exact = _mp(refs[0])(*xs)
        worst_v = max(worst_v, _error(y.numpy()[i], exact, dtype))
        for k, g in enumerate(grads):
            if g is None:
                continue
            if kind_of(name) == "unary" and np.isinf(xs[0]) and name in GRAD_LIMITS:
                dexact = _limit(GRAD_LIMITS, name, xs[0])
            else:
                dexact = _mp(refs[1 + k])(*xs)
            worst_g = max(worst_g, _error(np.asarray(g)[i], dexact, dtype))
    return worst_v, worst_g


# ----- the page --------------------------------------------------------------------------------------------
def _fmt(v):
    if v is None:
        return "–"
    if math.isinf(v):
        return "∞"
    return f"{v:.3g}" if v < 1e4 else f"{v:.1e}"


def page(results, tf_results=None):
    lines = ["# Accuracy of every elementwise op", "",
             "<!-- Generated by tools/accuracy.py (`python tools/accuracy.py --write`); the bounds are the "
             "table BOUNDS there. -->", "",
             "Every elementwise op of the rule table, and its gradient, in float32 and float64 over ±0, "
             "subnormals, ±1e-30 … ±1e30 (with ±20, ±80, ±700), ±∞ and NaN, against `mpmath` at 50 digits. "
             "The numbers are the **worst error in ulps** over that grid (0.5 is a correctly rounded "
             "result; ∞ means a NaN or ∞ where the exact value is finite, or the reverse). `exact` ops must "
             "equal numpy bit for bit. `tests/test_accuracy.py` fails when an op passes its bound.", "",
             "| op | float32 value | float32 gradient | float64 value | float64 gradient | bound (f32 / f64: "
             "value, gradient) | TensorFlow float32 (value, gradient) |",
             "|---|---:|---:|---:|---:|---|---|"]
    for name, per in results.items():
        b = BOUNDS.get(name, {})
        bound = " / ".join(f"{_fmt(b[dt][0])}, {_fmt(b[dt][1])}" if dt in b else "–" for dt in DTYPES)
        tfr = (tf_results or {}).get(name)
        tf_text = f"{_fmt(tfr[0])}, {_fmt(tfr[1])}" if tfr else "–"
        if kind_of(name) == "exact":
            lines.append(f"| `{name}` | exact | – | exact | – | exact | {tf_text} |")
            continue
        lines.append(f"| `{name}` | {_fmt(per['float32'][0])} | {_fmt(per['float32'][1])} | "
                     f"{_fmt(per['float64'][0])} | {_fmt(per['float64'][1])} | {bound} | {tf_text} |")
    lines += ["", "## Where an op is above a few ulps, and why", ""]
    lines += [f"* `{name}`: {text}" for name, text in sorted(NOTES.items())]
    return "\n".join(lines) + "\n"


def main(argv):
    results = measure_all()
    tf_results = {n: tensorflow_error(n, "float32") for n in results} if "--write" in argv else None
    for name, per in results.items():
        print(f"{name:14s}", "  ".join(f"{dt}: {_fmt(v)} / {_fmt(g)}" for dt, (v, g) in per.items()),
              "" if not tf_results else f"  TF f32: {tf_results.get(name)}")
    if "--write" in argv:
        (ROOT / "docs" / "accuracy.md").write_text(page(results, tf_results))


if __name__ == "__main__":
    main(sys.argv[1:])
