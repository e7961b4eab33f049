"""Elementwise rules: arithmetic, the functions of one number (``exp``, ``tanh`` …), and ops without a gradient.

The engine undoes broadcasting (VJP) and aligns tangents (JVP) for every rule here, so each is the textbook
formula: ``∂/∂x tanh(x) = 1 − y²``, ``∂(a·b)/∂a = b``.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import accurate
from .table import define

# ---------------------------------------------------------------------------
# Elementwise arithmetic
# ---------------------------------------------------------------------------
add = define(
    "add", np.add, elementwise=True, doc="y = a + b", saves="nothing",
    a=("1", lambda g, y, a, b: g, lambda da, y, a, b: da),
    b=("1", lambda g, y, a, b: g, lambda db, y, a, b: db))


subtract = define(
    "subtract", np.subtract, elementwise=True, doc="y = a − b", saves="nothing",
    a=("1", lambda g, y, a, b: g, lambda da, y, a, b: da),
    b=("−1", lambda g, y, a, b: -g, lambda db, y, a, b: -db))


multiply = define(
    "multiply", np.multiply, elementwise=True, doc="y = a · b", saves="inputs",
    a=("b", lambda g, y, a, b: g * b, lambda da, y, a, b: da * b),
    b=("a", lambda g, y, a, b: g * a, lambda db, y, a, b: a * db))


divide = define(
    "divide", np.true_divide, elementwise=True, doc="y = a / b",
    a=("1/b", lambda g, y, a, b: g / b, lambda da, y, a, b: da / b),
    b=("−a/b²", lambda g, y, a, b: -g * y / b, lambda db, y, a, b: -db * y / b))


def _power_a_exponent(b):
    """b − 1 for ∂aᵇ/∂a = b·aᵇ⁻¹; 1 where b = 0, so that 0·a¹ is exactly 0 (a⁰ = 1 is constant, also at a = 0)."""
    if np.all(_raw(b) != 0):
        return b - 1
    return where(b == 0, 1, b - 1)


def _power_b(y, a, b):
    """∂aᵇ/∂b = aᵇ·ln a for a > 0. At a = 0 the limit a → 0⁺: 0 for b ≥ 0 (aᵇ·ln a → 0, and PyTorch's
    choice at b = 0) and −∞ for b < 0 (aᵇ → ∞, ln a → −∞). For a < 0, ln a is not real: where aᵇ itself is
    NaN (a fractional b) the slope is NaN too, so the NaN is not hidden from an optimizer; where aᵇ is real
    (an integer b) it is 0, TensorFlow's choice."""
    pos = a > 0
    return where(pos, where(pos, y, 0) * log(where(pos, a, 1)),
                 where(a == 0, where(b < 0, -np.inf, 0), where(y != y, np.nan, 0)))


def _power_base(y, a, b):
    """``a^(b−1)``, the factor of ``∂aᵇ/∂a = b·aᵇ⁻¹`` (``a¹`` where b = 0). On plain float arrays where ``b − 1``
    was rounded (a b that is neither an integer nor in [½, 2]; a scalar b is checked in Python floats) it is
    :func:`accurate.power_base_slope`: the rounding of ``b − 1`` would be amplified by ln a."""
    fast = type(y) is np.ndarray and y.ndim and y.dtype in _F32_F64 and type(a) is np.ndarray and \
        type(b) is np.ndarray and b.dtype in _F32_F64
    if fast and not b.ndim:                         # a ** 2.5: the common case, no numpy call on the scalar
        bf = float(b)
        if bf == 0:
            return a ** 1
        e = b - 1
        ef = float(e)
        if b.dtype == np.float32:                   # b − 1 of a float32 is exact in Python's float64
            exact = bf - 1.0 == ef
        else:                                       # two-sum: the rounding error of bf − 1
            bv = ef - bf
            exact = (bf - (ef - bv)) + (-1.0 - bv) == 0
        return a ** e if exact else accurate.power_base_slope(y, a, b, e)
    e = _power_a_exponent(b)
    if fast and np.any(accurate.rounding_of_b_minus_1(b, e)):
        return accurate.power_base_slope(y, a, b, e)
    return a ** e


def _power_exponent(y, a, b):
    """:func:`_power_b`; on plain float arrays with the entries where ``aᵇ`` is subnormal recomputed
    (:func:`accurate.power_exponent_slope`)."""
    out = _power_b(y, a, b)
    if type(y) is np.ndarray and y.ndim and y.dtype in _F32_F64 and type(a) is np.ndarray and \
            type(b) is np.ndarray:
        out = accurate.power_exponent_slope(out, y, a, b)
    return out


power = define(
    "power", np.power, elementwise=True, doc="y = aᵇ",
    a=("b·aᵇ⁻¹ (0 where b = 0)", lambda g, y, a, b: g * b * _power_base(y, a, b),
       lambda da, y, a, b: da * b * _power_base(y, a, b)),
    b=("y·ln a (a > 0); at a = 0: 0 if b ≥ 0, −∞ if b < 0; a < 0: NaN where y is",
       lambda g, y, a, b: g * _power_exponent(y, a, b), lambda db, y, a, b: db * _power_exponent(y, a, b)))


negative = define(
    "negative", np.negative, elementwise=True, doc="y = −x", saves="nothing",
    x=("−1", lambda g, y, x: -g, lambda dx, y, x: -dx))


# ---------------------------------------------------------------------------
# Elementwise functions
# ---------------------------------------------------------------------------
exp = define(
    "exp", np.exp, elementwise=True, doc="y = eˣ", saves="output",
    x=("eˣ = y", lambda g, y, x: g * y, lambda dx, y, x: dx * y))


log = define(
    "log", np.log, elementwise=True, doc="y = ln x",
    x=("1/x", lambda g, y, x: g / x, lambda dx, y, x: dx / x))


sqrt = define(
    "sqrt", np.sqrt, elementwise=True, doc="y = √x",
    x=("1/(2y)", lambda g, y, x: g / (2 * y), lambda dx, y, x: dx / (2 * y)))


square = define(
    "square", np.square, elementwise=True, doc="y = x²",
    x=("2x", lambda g, y, x: g * (2 * x), lambda dx, y, x: dx * (2 * x)))


sign = define(
    "sign", np.sign, elementwise=True, doc="y = sign(x); its derivative is 0 wherever it exists",
    x=("0", lambda g, y, x: g * 0, lambda dx, y, x: dx * 0))


abs = define(
    "abs", np.abs, elementwise=True, doc="y = |x| (gradient 0 at x = 0, as TensorFlow)",
    x=("sign(x)", lambda g, y, x: g * sign(x), lambda dx, y, x: dx * sign(x)))


def _sech2(x):
    """``1 − tanh²x = sech²x = (1 / cosh x)²``, from ``x``.

    Why not ``1 − y²`` from the output: where tanh saturates, ``y`` rounds to ±1 and ``1 − y²`` to 0
    (from |x| ≈ 9 in float32, 19 in float64), while the true slope is ``4e^(−2|x|)``, far from 0 — the
    vanishing-gradient plot on a log axis would show a cliff that is not in the math. ``cosh`` is accurate to
    an ulp or two everywhere, and squaring ``1/cosh x`` (not dividing by ``cosh²x``, which overflows first)
    underflows only where sech² itself does. On a plain array it is three ufuncs in one buffer; on tensors (an
    outer tape recording the backward pass) it is computed with the rules themselves.
    """
    if type(x) is np.ndarray and x.ndim and x.dtype.kind == "f":
        c = np.cosh(x)
        np.reciprocal(c, out=c)
        return np.multiply(c, c, out=c)
    e = exp(-2 * abs(x))
    return 4 * e / square(1 + e)


_SMALL = 64             # arrays up to this many entries take tanh's slope as (ḡ / cosh x) / cosh x
_EXACT_BELOW = 0.25     # 1 − y² below this (|y| > 0.87) loses more than a few ulps: sech² from x there


def _tanh_vjp(g, y, x):
    """``ḡ·sech²x`` (:func:`_sech2`): on a small array ``(ḡ / cosh x) / cosh x`` (three ufuncs, as
    ``ḡ·(1 − y²)``); on a large one ``1 − y²`` where |y| ≤ 0.87 (on all of it when no entry is saturated), and
    sech² from ``x`` where 1 − y² would lose more than a few ulps.
    Without ``x`` (a caller holding only the output) it is ``ḡ·(1 − y²)``, made in one buffer: exact where |y|
    is well below 1, the form TensorFlow and PyTorch use."""
    if x is None:
        if type(g) is np.ndarray and type(y) is np.ndarray and y.ndim and g.shape == y.shape and \
                g.dtype == y.dtype:
            d = np.multiply(y, y)
            np.subtract(1, d, out=d)
            return np.multiply(g, d, out=d)
        return g * (1 - y * y)
    if type(g) is np.ndarray and type(x) is np.ndarray and type(y) is np.ndarray and x.ndim and \
            g.shape == x.shape == y.shape and g.dtype == x.dtype == y.dtype and x.dtype.kind == "f":
        if x.size <= _SMALL:               # a few entries: the per-call cost of ufuncs is what counts
            c = np.cosh(x)
            out = np.divide(g, c)
            return np.divide(out, c, out=out)
        d = np.multiply(y, y)              # many entries: cosh costs ten multiplies; take 1 − y², exact to a
        np.subtract(1, d, out=d)           # few ulps while |y| ≤ 0.87 everywhere (one min to know)
        if d.min() >= _EXACT_BELOW:
            return np.multiply(g, d, out=d)
        if x.dtype == np.float64:          # some saturated: (ḡ / cosh x) / cosh x throughout costs less than
            c = np.cosh(x)                 # gathering them (and stays within 4 ulps in float64)
            out = np.divide(g, c, out=d)
            return np.divide(out, c, out=out)
        steep = np.flatnonzero(d < _EXACT_BELOW)      # float32: sech² from x on the saturated entries only
        d.reshape(-1)[steep] = _sech2(x.reshape(-1)[steep])
        return np.multiply(g, d, out=d)
    d = _sech2(x)
    if type(g) is np.ndarray and type(d) is np.ndarray and d.dtype == g.dtype and (
            d.shape == g.shape or d.shape == np.broadcast_shapes(g.shape, d.shape)):
        return np.multiply(g, d, out=d)
    return g * d


tanh = define(
    "tanh", np.tanh, elementwise=True, doc="y = tanh x",
    x=("1 − y²", _tanh_vjp, lambda dx, y, x: dx * _sech2(x)))


sin = define(
    "sin", np.sin, elementwise=True, doc="y = sin x",
    x=("cos x", lambda g, y, x: g * cos(x), lambda dx, y, x: dx * cos(x)))


cos = define(
    "cos", np.cos, elementwise=True, doc="y = cos x",
    x=("−sin x", lambda g, y, x: -g * sin(x), lambda dx, y, x: -dx * sin(x)))


def _sigmoid(x):
    """``1/(1 + e⁻ˣ)`` to within an ulp or two over the whole range, never overflowing.

    With ``e = e^(−|x|)`` (in (0, 1], so it cannot overflow) it is ``1/(1 + e)``
    for ``x ≥ 0`` and ``e/(1 + e)`` for ``x < 0``: each a ratio of exactly
    rounded terms, so the relative error stays at a few ulps also far in the
    negative tail, where σ(x) ≈ eˣ is tiny but far from 0. The textbook
    ``½(1 + tanh(x/2))`` loses it there: ``1 + tanh`` cancels, giving 6 %
    error at x = −16 in float32 and exactly 0 below about −17 (a cliff on a
    log plot of the vanishing gradient that is not in the math). The steps
    run in two buffers: an LSTM runs this at every gate of every time step.
    """
    e = np.exp(-np.abs(x))
    if type(e) is not np.ndarray:       # a 0-d input gives a numpy scalar: nothing to reuse
        return e / (1 + e) if x < 0 else 1 / (1 + e)
    d = np.add(e, 1.0)
    np.divide(1.0, d, out=d)
    neg = x < 0
    np.multiply(e, d, out=e)
    return _select(neg, e, d)


def _sigmoid_d(x):
    """``σ′(x) = σ(x)·σ(−x) = e/(1 + e)²`` with ``e = e^(−|x|)``, from ``x``: a few ulps everywhere. The
    output form ``y(1 − y)`` is 0 wherever ``y`` rounds to 1 (x > 17 in float32), where the slope is ``e⁻ˣ``."""
    if type(x) is np.ndarray and x.ndim and x.dtype.kind == "f":
        e = np.abs(x)
        np.negative(e, out=e)
        np.exp(e, out=e)
        d = np.add(e, 1.0)
        np.multiply(d, d, out=d)
        return np.divide(e, d, out=e)
    e = exp(-abs(x))
    return e / square(1 + e)


sigmoid = define(
    "sigmoid", _sigmoid, elementwise=True, doc="y = σ(x) = 1/(1 + e⁻ˣ)",
    x=("y(1 − y)", lambda g, y, x: g * _sigmoid_d(x), lambda dx, y, x: dx * _sigmoid_d(x)))


relu = define(
    "relu", lambda x: np.maximum(x, 0), elementwise=True,
    doc="y = max(x, 0) (gradient 0 at 0; ḡ is selected, not multiplied: exactly 0 where x ≤ 0, even for a NaN/∞ ḡ)",
    x=("[x > 0]", lambda g, y, x: where(x > 0, g, 0), lambda dx, y, x: where(x > 0, dx, 0)))


leaky_relu = define(
    "leaky_relu", lambda x, alpha: _select(x > 0, x, alpha * x), elementwise=True,
    doc="y = x if x > 0 else α·x",
    x=("1 if x > 0 else α", lambda g, y, x, alpha: where(x > 0, g, alpha * g),
       lambda dx, y, x, alpha: where(x > 0, dx, alpha * dx)))


softplus = define(
    "softplus", lambda x: np.logaddexp(0, x), elementwise=True, doc="y = ln(1 + eˣ)",
    x=("σ(x)", lambda g, y, x: g * sigmoid(x), lambda dx, y, x: dx * sigmoid(x)))


def _tie_share(a, b, g):
    """g where a wins, half of g where a and b tie (the subgradient both halves share)."""
    return where(a == b, 0.5 * g, 0)


maximum = define(
    "maximum", np.maximum, elementwise=True, doc="y = max(a, b); ties share the gradient",
    a=("[a > b]", lambda g, y, a, b: where(a > b, g, _tie_share(a, b, g)),
       lambda da, y, a, b: where(a > b, da, _tie_share(a, b, da))),
    b=("[b > a]", lambda g, y, a, b: where(b > a, g, _tie_share(a, b, g)),
       lambda db, y, a, b: where(b > a, db, _tie_share(a, b, db))))


minimum = define(
    "minimum", np.minimum, elementwise=True, doc="y = min(a, b); ties share the gradient",
    a=("[a < b]", lambda g, y, a, b: where(a < b, g, _tie_share(a, b, g)),
       lambda da, y, a, b: where(a < b, da, _tie_share(a, b, da))),
    b=("[b < a]", lambda g, y, a, b: where(b < a, g, _tie_share(a, b, g)),
       lambda db, y, a, b: where(b < a, db, _tie_share(a, b, db))))


_SAME_WIDTH_INT = {2: np.int16, 4: np.int32, 8: np.int64}


_SELECT_MIN_SIZE = 1024     # below this, np.where's branches cost less than _select's extra calls (measured)


def _select_operand(v, dtype):
    """``v`` as an integer bit pattern of ``dtype``'s width, or None when numpy's own promotion is needed."""
    if type(v) is np.ndarray:
        if v.dtype == dtype:
            return v.view(_SAME_WIDTH_INT[dtype.itemsize])
        if v.ndim:
            return None
    elif not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
        return None
    if np.result_type(dtype, v) != dtype:
        return None
    return np.asarray(v, dtype=dtype).view(_SAME_WIDTH_INT[dtype.itemsize])


def _into(out, other):
    """``out`` if ``out ∘ other`` broadcasts to ``out``'s shape (a buffer for the result), else None."""
    return out if other.shape == out.shape or not other.ndim else None


def _select(cond, a, b):
    """``np.where(cond, a, b)``, bit for bit, without branches where the operands allow it.

    Why: ``np.where`` picks entry by entry with a branch, and on a condition
    that is true about half the time at random (``x > 0`` for relu) the
    processor mispredicts every other branch: 1.7 ms for the 221 184 entries of
    LeNet's first activation, against 0.06 ms for a multiply. Every VJP that
    masks a gradient (relu, leaky_relu, elu, clip, maximum/minimum, triu/tril,
    the ``where`` rule itself) goes through here. For float operands of one
    dtype the selection is done on the bit patterns, vectorized:
    ``b ^ ((a ^ b) & k)`` with ``k`` all ones where ``cond`` holds (``a & k``
    when ``b`` is +0). The result is exactly ``np.where``'s, NaN payloads and
    signed zeros included, so a masked-out entry is 0 even where ``ḡ`` is NaN
    or ∞ (as PyTorch's and JAX's select; TensorFlow's relu gradient
    multiplies by the mask and gives NaN there). Anything else (other
    dtypes, mixed promotion, a non-bool condition) is ``np.where``, and so
    are conditions under :data:`_SELECT_MIN_SIZE` entries, where the few
    extra numpy calls cost more than the branches.
    """
    if type(cond) is np.ndarray and cond.dtype == np.bool_ and cond.size >= _SELECT_MIN_SIZE:
        arr = a if type(a) is np.ndarray else b
        if type(arr) is np.ndarray and arr.dtype.kind == "f" and arr.dtype.itemsize in _SAME_WIDTH_INT:
            dtype = arr.dtype
            ab, bb = _select_operand(a, dtype), _select_operand(b, dtype)
            if ab is not None and bb is not None:
                bits = _SAME_WIDTH_INT[dtype.itemsize]
                if not bb.ndim and not bb:         # where(cond, a, +0)
                    k = np.negative(cond.view(np.int8)).astype(bits)        # −1 (all ones) where cond
                    src = ab
                elif not ab.ndim and not ab:       # where(cond, +0, b)
                    k = (cond.view(np.int8) - np.int8(1)).astype(bits)      # all ones where not cond
                    src = bb
                else:
                    k = np.negative(cond.view(np.int8)).astype(bits)
                    src = np.bitwise_xor(ab, bb)
                    out = np.bitwise_and(src, k, out=_into(src, k))
                    return np.bitwise_xor(out, bb, out=out).view(dtype)
                return np.bitwise_and(src, k, out=_into(k, src)).view(dtype)
    return np.where(cond, a, b)


where = define(
    "where", _select, elementwise=True,
    doc="y = a where cond else b (a select: the side not chosen gets exactly 0, even where ḡ is NaN or ∞)",
    cond=None,
    a=("[cond]", lambda g, y, c, a, b: where(c, g, 0), lambda da, y, c, a, b: where(c, da, 0)),
    b=("[not cond]", lambda g, y, c, a, b: where(c, 0, g), lambda db, y, c, a, b: where(c, 0, db)))


def _inside(x, lo, hi, g):
    return where(x >= lo, where(x <= hi, g, 0), 0)


def _below(x, lo, hi, g):
    """``g`` where the output is ``lo``: ``x < lo ≤ hi`` (an entry equal to ``lo`` is ``x``'s, as PyTorch)."""
    return where(x < lo, where(lo <= hi, g, 0), 0)


def _above(x, lo, hi, g):
    """``g`` where the output is ``hi``: ``max(x, lo) > hi`` (also when ``lo > hi``: numpy then returns ``hi``)."""
    return where(x > hi, g, where(lo > hi, g, 0))


clip = define(
    "clip", np.clip, elementwise=True,
    doc="y = min(max(x, lo), hi); each output entry is x, lo or hi, and that one gets the gradient (slope 1)",
    x=("[lo ≤ x ≤ hi]", lambda g, y, x, lo, hi: _inside(x, lo, hi, g),
       lambda dx, y, x, lo, hi: _inside(x, lo, hi, dx)),
    lo=("[x < lo ≤ hi]", lambda g, y, x, lo, hi: _below(x, lo, hi, g),
        lambda dlo, y, x, lo, hi: _below(x, lo, hi, dlo)),
    hi=("[max(x, lo) > hi]", lambda g, y, x, lo, hi: _above(x, lo, hi, g),
        lambda dhi, y, x, lo, hi: _above(x, lo, hi, dhi)))


# ---------------------------------------------------------------------------
# Ops without a gradient
# ---------------------------------------------------------------------------
less = define("less", np.less, elementwise=True, a=None, b=None)


less_equal = define("less_equal", np.less_equal, elementwise=True, a=None, b=None)


greater = define("greater", np.greater, elementwise=True, a=None, b=None)


greater_equal = define("greater_equal", np.greater_equal, elementwise=True, a=None, b=None)


equal = define("equal", np.equal, elementwise=True, a=None, b=None)


not_equal = define("not_equal", np.not_equal, elementwise=True, a=None, b=None)


argmax = define("argmax", lambda x, axis: np.argmax(x, axis=axis), doc="index of the largest entry", x=None)


argmin = define("argmin", lambda x, axis: np.argmin(x, axis=axis), doc="index of the smallest entry", x=None)


one_hot = define("one_hot", lambda indices, depth, dtype: (indices[..., None] == np.arange(depth)).astype(dtype),
                 doc="y[..., k] = 1 where indices == k (out-of-range indices give a row of zeros)",
                 indices=None)


argsort = define("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable"),
                 doc="indices that sort x along axis", x=None)


any_ = define("any", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
             doc="is any entry nonzero (over axis)", x=None)


all_ = define("all", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
             doc="are all entries nonzero (over axis)", x=None)


stop_gradient = define("stop_gradient", lambda x: x, doc="y = x, but no gradient flows back", x=None)


numpy_function = define(
    "numpy_function", lambda *xs, function, value: value, variadic=True,
    doc="y = a Python function run on the inputs' numpy values (tf.numpy_function; value: its result, computed "
        "once): the tape cannot see inside it, so no gradient flows back", x=None)


cast = define(
    "cast", lambda x, dtype: x.astype(dtype), doc="y = x as another dtype (no gradient to integers)",
    x=("1", lambda g, y, x, dtype: cast(g, dtype=x.dtype), lambda dx, y, x, dtype: cast(dx, dtype=y.dtype)))


# ---------------------------------------------------------------------------
# The numpy surface: more elementwise functions
# ---------------------------------------------------------------------------
def _raw(a):
    """The numpy value of a rule argument (a tensor while an outer tape records the pass)."""
    return a._value if isinstance(a, Tensor) else a


def _unary(name, forward, doc, factor, d):
    """An elementwise rule ``y = f(x)`` with derivative ``d(y, x)``, written with rule calls."""
    return define(name, forward, elementwise=True, doc=doc,
                  x=(factor, lambda g, y, x: g * d(y, x), lambda dx, y, x: dx * d(y, x)))


def _zero(name, forward, doc):
    """A piecewise-constant function: no gradient on the tape, as TensorFlow (``tf.floor``'s gradient is None).

    Its derivative is 0 wherever it exists (undefined at the jumps), but
    TensorFlow registers no gradient for Floor/Ceil/Round, so
    ``tape.gradient`` through it alone is None, and ``explain`` names the op
    (``non_differentiable_op``) instead of calling a silently frozen model
    ``connected``. PyTorch and JAX return zeros instead; ``adv.grad``
    (``unconnected_gradients="zero"``) gives zeros as they do.
    """
    return define(name, forward, elementwise=True, doc=doc + "; piecewise constant: no gradient (TensorFlow's None)",
                  x=None)


_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))


log1p = _unary("log1p", np.log1p, "y = ln(1 + x), accurate for small x", "1/(1 + x)", lambda y, x: 1 / (1 + x))


expm1 = _unary("expm1", np.expm1, "y = eˣ − 1, accurate for small x", "eˣ = y + 1", lambda y, x: exp(x))


log2 = _unary("log2", np.log2, "y = log₂ x", "1/(x·ln 2)", lambda y, x: (1 / _LN2) / x)


log10 = _unary("log10", np.log10, "y = log₁₀ x", "1/(x·ln 10)", lambda y, x: (1 / _LN10) / x)


exp2 = _unary("exp2", np.exp2, "y = 2ˣ", "y·ln 2", lambda y, x: y * _LN2)


sinh = _unary("sinh", np.sinh, "y = sinh x", "cosh x", lambda y, x: cosh(x))


cosh = _unary("cosh", np.cosh, "y = cosh x", "sinh x", lambda y, x: sinh(x))


tan = _unary("tan", np.tan, "y = tan x", "1 + y²", lambda y, x: 1 + y * y)


arcsin = _unary("arcsin", np.arcsin, "y = arcsin x (NaN outside [−1, 1])", "1/√(1 − x²)",
                lambda y, x: 1 / sqrt((1 - x) * (1 + x)))


arccos = _unary("arccos", np.arccos, "y = arccos x (NaN outside [−1, 1])", "−1/√(1 − x²)",
                lambda y, x: -1 / sqrt((1 - x) * (1 + x)))


arctan = _unary("arctan", np.arctan, "y = arctan x", "1/(1 + x²)", lambda y, x: 1 / (1 + x * x))


arcsinh = _unary("arcsinh", np.arcsinh, "y = arsinh x", "1/√(x² + 1)", lambda y, x: 1 / hypot(x, 1.0))


arccosh = _unary("arccosh", np.arccosh, "y = arcosh x (NaN below 1)", "1/√(x² − 1)",
                 lambda y, x: 1 / (sqrt(x - 1) * sqrt(x + 1)))


arctanh = _unary("arctanh", np.arctanh, "y = artanh x (NaN outside [−1, 1], ±∞ at ±1)", "1/(1 − x²)",
                 lambda y, x: 1 / ((1 - x) * (1 + x)))


reciprocal = _unary("reciprocal", np.reciprocal, "y = 1/x", "−1/x² = −y²", lambda y, x: -(y * y))


cbrt = _unary("cbrt", np.cbrt, "y = ∛x", "1/(3y²)", lambda y, x: 1 / (3 * y * y))


def _erf(x):
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:     # scipy is optional: math.erf entry by entry is exact, only slower
        import math
        return np.vectorize(math.erf, otypes=[np.result_type(x, np.float32)])(x)
    return scipy_erf(x)


def _erfc(x):
    """``1 − erf x`` without the cancellation of ``1 − erf`` for large x (scipy's, else ``math.erfc`` per entry).
    Float64 beyond x = 2 is ``erfcx(x)·e^(−x²)`` (:func:`accurate.erfc_tail`): scipy's erfc rounds x² there."""
    if not accurate.have_scipy():
        import math
        return np.vectorize(math.erfc, otypes=[np.result_type(x, np.float32)])(x)
    out = accurate.special("erfc")(x)
    if type(x) is np.ndarray and x.dtype == np.float64:
        out = accurate.patch(out, x, x > 2, accurate.erfc_tail)
    return out


_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))


def _exp_neg_square(x):
    """``e^(−x²)`` without the rounding of ``x²``: ``x = h + l`` with ``h`` holding half the mantissa bits, so
    ``h²`` is exact and ``e^(−x²) = e^(−h²)·e^(−(x − h)(x + h))``. Computing ``x²`` first costs ``x²·ε``
    relative (60 ulps at x = 8 in float32, 200 at x = 16 in float64). ``h`` is a constant of ``x``'s value,
    and the derivative of the product is still ``−2x·e^(−x²)``, so higher derivatives are unchanged."""
    raw = _raw(x)
    bits = 12 if np.asarray(raw).dtype == np.float32 else 26
    m, e = np.frexp(raw)
    h = np.ldexp(np.round(m * 2.0 ** bits) / 2.0 ** bits, e).astype(np.asarray(raw).dtype)
    # past |x| = 40 the result underflows in float64 (e^(−1600)); the second factor alone could overflow there
    return where(abs(x) < 40, exp(-(h * h)) * exp(-((x - h) * (x + h))), 0.0)


erf = _unary("erf", _erf, "y = erf x = (2/√π)∫₀ˣ e^(−t²) dt", "(2/√π)·e^(−x²)",
             lambda y, x: _TWO_OVER_SQRT_PI * _exp_neg_square(x))


erfc = _unary("erfc", _erfc, "y = erfc x = 1 − erf x, accurate where erf x is near 1", "−(2/√π)·e^(−x²)",
              lambda y, x: -_TWO_OVER_SQRT_PI * _exp_neg_square(x))


_GELU_C = float(np.sqrt(2 / np.pi))


_SQRT_HALF, _INV_SQRT_2PI = float(np.sqrt(0.5)), float(1 / np.sqrt(2 * np.pi))
_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))


def _gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x ** 3)))
    if type(x) is np.ndarray and x.dtype in _F32_F64 and accurate.have_scipy():
        return accurate.gelu(x)      # 2Φ(x) = erfc(−x/√2), float32 in float64; the float64 left tail from erfcx
    phi = _erfc(-x * _SQRT_HALF)
    y = 0.5 * x * phi
    if np.any(phi == 0):                          # x → −∞: the product is −∞·0, whose limit is 0
        y = np.where(phi == 0, 0.0 * phi, y)
    return y


def _gelu_d(x, approximate, y=None):
    if approximate:
        t = tanh(_GELU_C * (x + 0.044715 * x * x * x))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (_GELU_C * (1 + 3 * 0.044715 * x * x))
    if type(x) is np.ndarray and x.dtype in _F32_F64 and accurate.have_scipy():
        return accurate.gelu_slope(x, y)     # plain arrays: one pass per step, the tail and the zero patched
    return 0.5 * erfc(-x * _SQRT_HALF) + x * _exp_neg_square(x * _SQRT_HALF) * _INV_SQRT_2PI


gelu = define(
    "gelu", _gelu, elementwise=True,
    doc="y = x·Φ(x) (approximate=True: 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))), as Keras)",
    x=("Φ(x) + x·φ(x)", lambda g, y, x, approximate: g * _gelu_d(x, approximate, y),
       lambda dx, y, x, approximate: dx * _gelu_d(x, approximate, y)))


def _silu(x):
    """``x·σ(x)``; float32 in float64 (σ of a large negative x is subnormal in float32, and the product would
    keep its few bits)."""
    if np.asarray(x).dtype == np.float32:
        return _silu(np.asarray(x, dtype=np.float64)).astype(np.float32)
    y = x * _sigmoid(x)
    if np.any(np.isneginf(x)):      # −∞·σ(−∞) is −∞·0: the limit is 0 (from below)
        return np.where(np.isneginf(x), np.asarray(-0.0, dtype=np.asarray(y).dtype), y)
    return y


def _silu_d(x):
    """``σ(x)·(1 + x·σ(−x))`` from ``a = e^min(x, 0)`` and ``b = e^(−max(x, 0))`` (neither overflows):
    ``σ(x) = a/(a + b)``, ``σ(−x) = b/(a + b)``, in two buffers on a plain float array; float32 in float64,
    rounded once (the sum cancels near the slope's zero at x ≈ −1.278, and σ is subnormal in float32 below
    −87: x times it kept 45 ulps of its rounding)."""
    if type(x) is np.ndarray and x.ndim and x.dtype in _F32_F64:
        w = x.astype(np.float64) if x.dtype == np.float32 else x
        a = np.minimum(w, 0.0)
        np.exp(a, out=a)
        b = np.maximum(w, 0.0)
        np.negative(b, out=b)
        np.exp(b, out=b)
        s = np.add(a, b)
        np.reciprocal(s, out=s)
        np.multiply(a, s, out=a)                # σ(x)
        np.multiply(b, s, out=b)                # σ(−x)
        np.multiply(b, w, out=b)
        np.add(b, 1.0, out=b)
        np.multiply(a, b, out=a)
        return a.astype(np.float32) if w is not x else a
    return sigmoid(x) * (1 + x * sigmoid(-x))


silu = _unary("silu", _silu, "y = x·σ(x) (also called swish)", "σ(x)·(1 + x(1 − σ(x)))",
              lambda y, x: _silu_d(x))


def _elu(x, alpha):
    return _select(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


elu = define(
    "elu", _elu, elementwise=True, doc="y = x if x > 0 else α(eˣ − 1)",
    x=("1 if x > 0 else y + α", lambda g, y, x, alpha: where(x > 0, g, g * (alpha * exp(minimum(x, 0)))),
       lambda dx, y, x, alpha: where(x > 0, dx, dx * (alpha * exp(minimum(x, 0))))))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


selu = _unary("selu", lambda x: _SELU_SCALE * _elu(x, _SELU_ALPHA),
              "y = λ·(x if x > 0 else α(eˣ − 1)), λ ≈ 1.0507, α ≈ 1.6733",
              "λ if x > 0 else y + λα",
              lambda y, x: where(x > 0, _SELU_SCALE, (_SELU_SCALE * _SELU_ALPHA) * exp(minimum(x, 0))))


softsign = _unary("softsign", lambda x: np.where(np.isinf(x), np.sign(x), x / (1 + np.abs(x))), "y = x/(1 + |x|)",
                  "1/(1 + |x|)²",
                  lambda y, x: 1 / square(1 + abs(x)))


hard_sigmoid = define(
    "hard_sigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1), elementwise=True,
    doc="y = relu6(x + 3)/6 = clip(x/6 + ½, 0, 1) (Keras 3)",
    x=("1/6 if −3 < x < 3 else 0", lambda g, y, x: where(x > -3, where(x < 3, g / 6, 0), 0),
       lambda dx, y, x: where(x > -3, where(x < 3, dx / 6, 0), 0)))


log_sigmoid = _unary("log_sigmoid", lambda x: -np.logaddexp(0, -x), "y = ln σ(x) = −softplus(−x)",
                     "σ(−x) = 1 − σ(x)", lambda y, x: sigmoid(-x))


floor = _zero("floor", np.floor, "y = ⌊x⌋")


ceil = _zero("ceil", np.ceil, "y = ⌈x⌉")


trunc = _zero("trunc", np.trunc, "y = x rounded towards 0")


round = define(
    "round", lambda x, decimals: np.round(x, decimals), elementwise=True,
    doc="y = x rounded to `decimals` places (halves to even, as numpy); piecewise constant: no gradient "
        "(TensorFlow's None; see _zero)", x=None)


def _over_r2(v, a, b):
    """``v/(a² + b²)`` as ``(v/r)/r``, ``r = hypot(a, b)``: ``a² + b²`` under- or overflows long before r does."""
    r = hypot(a, b)
    return v / r / r


arctan2 = define(
    "arctan2", np.arctan2, elementwise=True, doc="y = atan2(a, b), the angle of the point (b, a)",
    a=("b/(a² + b²)", lambda g, y, a, b: g * _over_r2(b, a, b), lambda da, y, a, b: da * _over_r2(b, a, b)),
    b=("−a/(a² + b²)", lambda g, y, a, b: g * _over_r2(-a, a, b), lambda db, y, a, b: db * _over_r2(-a, a, b)))


hypot = define(
    "hypot", np.hypot, elementwise=True, doc="y = √(a² + b²) without overflow",
    a=("a/y", lambda g, y, a, b: g * (a / y), lambda da, y, a, b: da * (a / y)),
    b=("b/y", lambda g, y, a, b: g * (b / y), lambda db, y, a, b: db * (b / y)))


def _lae_slope(a, b, base2=False):
    """``σ(a − b)`` (``base2``: ``1/(1 + 2^(b − a))``); on plain float arrays without the rounding of ``a − b``
    (:func:`accurate.logaddexp_slope`), with the rules otherwise (an outer tape recording the pass)."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype in _F32_F64 and b.dtype in _F32_F64 and \
            (a.ndim or b.ndim):
        return accurate.logaddexp_slope(a, b, base2)
    return sigmoid((a - b) * _LN2) if base2 else sigmoid(a - b)


logaddexp = define(
    "logaddexp", np.logaddexp, elementwise=True, doc="y = ln(eᵃ + eᵇ) without overflow",
    a=("eᵃ⁻ʸ", lambda g, y, a, b: g * _lae_slope(a, b), lambda da, y, a, b: da * _lae_slope(a, b)),
    b=("eᵇ⁻ʸ", lambda g, y, a, b: g * _lae_slope(b, a), lambda db, y, a, b: db * _lae_slope(b, a)))


logaddexp2 = define(
    "logaddexp2", np.logaddexp2, elementwise=True, doc="y = log₂(2ᵃ + 2ᵇ) without overflow",
    a=("2ᵃ⁻ʸ", lambda g, y, a, b: g * _lae_slope(a, b, True), lambda da, y, a, b: da * _lae_slope(a, b, True)),
    b=("2ᵇ⁻ʸ", lambda g, y, a, b: g * _lae_slope(b, a, True), lambda db, y, a, b: db * _lae_slope(b, a, True)))


mod = define(
    "mod", np.mod, elementwise=True, doc="y = a mod b = a − ⌊a/b⌋·b (the sign of b, as numpy and Python %)",
    a=("1", lambda g, y, a, b: g, lambda da, y, a, b: da),
    b=("−⌊a/b⌋", lambda g, y, a, b: g * -floor(a / b), lambda db, y, a, b: db * -floor(a / b)))


floor_divide = define(
    "floor_divide", np.floor_divide, elementwise=True,
    doc="y = ⌊a/b⌋ (a // b); piecewise constant, so the gradient is 0",
    a=("0 (piecewise constant)", lambda g, y, a, b: g * 0, lambda da, y, a, b: da * 0),
    b=("0 (piecewise constant)", lambda g, y, a, b: g * 0, lambda db, y, a, b: db * 0))
