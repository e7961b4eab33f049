"""The rule table: every differentiable op, declared once.

Each entry says, side by side:

* the op's **forward** in numpy;
* per input, the **chain-rule factor** as text (what a graph edge shows,
  ``∂y/∂x = 1 − y²``), the **VJP** ``vjp(g, y, *inputs, **params)`` and the
  **JVP** ``jvp(dx, y, *inputs, **params)``; ``None`` instead of an input's
  rule means that input has no gradient (indices, conditions, comparisons).

Conventions that keep the table short:

* ``y`` is the op's output; unary inputs are ``x``, binary ones ``a`` and ``b``.
* Cotangents ``g`` have shape ``batch + y.shape`` and tangents ``dx`` have
  ``batch + x.shape``; axes in params are negative, so a reduction over
  ``axis`` means the same axis with or without batch axes in front.
* For ``elementwise`` ops the engine undoes broadcasting (VJP) and aligns
  tangents (JVP), so their rules are the textbook formulas.
* VJPs and JVPs call rules (``exp(x)``), not numpy, so the same formula runs on
  numpy arrays in a plain backward pass and on tensors when an outer tape
  records the pass (higher-order derivatives).

Nothing outside this package knows an op's derivative. ``TABLE`` maps op
names to rules; :func:`define` adds one (also for user code: custom ops).
The table is one table kept in sections: this file holds arithmetic,
elementwise functions, reductions and shapes; ``linalg.py`` the matrix
functions (``adv.linalg``), ``nn.py`` the neural-network ops that are worth
showing as one factor (convolution, pooling) and ``attention.py`` attention. Each section
registers its rules with :func:`define` when the package is imported.
"""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from ..engine import In, Rule, lift, unbroadcast
from ..tensor import Tensor

TABLE: dict[str, Rule] = {}


def define(name, forward, *, elementwise=False, variadic=False, doc="", saves="all", **inputs) -> Rule:
    """Add a rule to the table and return it.

    Each keyword names an input in order; its value is ``(factor, vjp, jvp)``
    or ``None`` for an input without gradient. ``saves``: which values the
    VJPs read (``"all"``, ``"inputs"``, ``"output"``, ``"nothing"``; see
    :class:`~autodiff_viz.engine.Rule`): a walk lets go of the rest early.

        >>> cube = define("cube", lambda x: x ** 3, elementwise=True,
        ...               x=("3x²", lambda g, y, x: g * 3 * x * x, lambda dx, y, x: dx * 3 * x * x))
    """
    specs = []
    for input_name, entry in inputs.items():
        if entry is None:
            specs.append(In(input_name))
        else:
            factor, vjp, jvp = entry
            specs.append(In(input_name, factor, vjp, jvp))
    rule = Rule(name, forward, specs, elementwise=elementwise, variadic=variadic, doc=doc, saves=saves)
    TABLE[name] = rule
    return rule


def _alias(rule: Rule, name: str, doc: str = "") -> Rule:
    TABLE[name] = rule.renamed(name, doc)
    return TABLE[name]


def _batch(g, y):
    """The leading batch axes of a cotangent or tangent ``g`` for an output ``y``."""
    return g.shape[:g.ndim - y.ndim]


def _keepdims_shape(shape, axis):
    """``shape`` with the reduced (negative) ``axis`` set to 1."""
    n = len(shape)
    return tuple(1 if i - n in axis else s for i, s in enumerate(shape))


def _shift(axes, nb):
    """A permutation for ``batch + shape`` that keeps the batch axes in front."""
    return tuple(range(nb)) + tuple(nb + a for a in axes)


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
    choice at b = 0) and −∞ for b < 0 (aᵇ → ∞, ln a → −∞). For a < 0 it is not defined; 0 is used."""
    pos = a > 0
    return where(pos, where(pos, y, 0) * log(where(pos, a, 1)), where(a == 0, where(b < 0, -np.inf, 0), 0))


power = define(
    "power", np.power, elementwise=True, doc="y = aᵇ",
    a=("b·aᵇ⁻¹ (0 where b = 0)", lambda g, y, a, b: g * b * a ** _power_a_exponent(b),
       lambda da, y, a, b: da * b * a ** _power_a_exponent(b)),
    b=("y·ln a (a > 0); at a = 0: 0 if b ≥ 0, −∞ if b < 0", lambda g, y, a, b: g * _power_b(y, a, b),
       lambda db, y, a, b: db * _power_b(y, a, b)))

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

def _tanh_vjp(g, y, x):
    """``ḡ·(1 − y²)``. On plain arrays of one shape and dtype it is made in one buffer (PyTorch's fused
    kernel holds one too): a step of a wide tanh network peaks two activations lower, same bits."""
    if type(g) is np.ndarray and type(y) is np.ndarray and y.ndim and g.shape == y.shape and g.dtype == y.dtype:
        d = np.multiply(y, y)
        np.subtract(1, d, out=d)
        return np.multiply(g, d, out=d)
    return g * (1 - y * y)


tanh = define(
    "tanh", np.tanh, elementwise=True, doc="y = tanh x", saves="output",
    x=("1 − y²", _tanh_vjp, lambda dx, y, x: dx * (1 - y * y)))

sin = define(
    "sin", np.sin, elementwise=True, doc="y = sin x",
    x=("cos x", lambda g, y, x: g * cos(x), lambda dx, y, x: dx * cos(x)))

cos = define(
    "cos", np.cos, elementwise=True, doc="y = cos x",
    x=("−sin x", lambda g, y, x: -g * sin(x), lambda dx, y, x: -dx * sin(x)))


def _sigmoid(x):
    """½·(1 + tanh(x/2)), which equals 1/(1 + e⁻ˣ) and never overflows.

    The four steps run in one buffer (the same operations in the same order,
    so the same values): an LSTM runs this at every gate of every time step,
    and on a large activation three fresh temporaries cost more than the
    arithmetic (3× on a 64×24×24×6 array).
    """
    t = np.multiply(x, 0.5)
    if type(t) is not np.ndarray:       # a 0-d input gives a numpy scalar: nothing to reuse
        return 0.5 * (1.0 + np.tanh(t))
    np.tanh(t, out=t)
    np.add(t, 1.0, out=t)
    return np.multiply(t, 0.5, out=t)


sigmoid = define(
    "sigmoid", _sigmoid, elementwise=True, doc="y = σ(x) = 1/(1 + e⁻ˣ)", saves="output",
    x=("y(1 − y)", lambda g, y, x: g * (y * (1 - y)), lambda dx, y, x: dx * (y * (1 - y))))

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

cast = define(
    "cast", lambda x, dtype: x.astype(dtype), doc="y = x as another dtype (no gradient to integers)",
    x=("1", lambda g, y, x, dtype: cast(g, dtype=x.dtype), lambda dx, y, x, dtype: cast(dx, dtype=y.dtype)))

# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------
def _mT(a):
    """Swap the last two axes (a matrix transpose that keeps batch axes)."""
    n = a.ndim
    return a.T if n == 2 else transpose(a, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _mm_shapes(x, w):
    """Shapes of ``x``, ``w`` and ``y`` with 1-D operands promoted to matrices."""
    xs = (1,) + x.shape if x.ndim == 1 else x.shape
    ws = w.shape + (1,) if w.ndim == 1 else w.shape
    ys = np.broadcast_shapes(xs[:-2], ws[:-2]) + (xs[-2], ws[-1])
    return xs, ws, ys


def _rows(a, n):
    """``a`` as one matrix of rows of length ``n``: every leading axis folded into the rows.

    Where one operand is a plain matrix ``W``, ``x @ W`` is the same product
    for every row of ``x`` whatever stack the rows sit in, so the VJPs fold
    the stack into one matrix and make one BLAS product (twice as fast as
    ``np.matmul``'s product per matrix of the stack followed by a sum over
    the stack, for a 32×50×64 ``x``).
    """
    return a.reshape((-1, n))


def _matmul_vjp_x(g, y, x, w):
    if x.ndim == 2 and w.ndim == 2:      # the common cases first: no promotion, nothing broadcast
        return g @ w.T
    if x.ndim > 2 and w.ndim == 2:       # rows of a stack times one matrix (Dense on a sequence): see _rows
        return (_rows(g, w.shape[1]) @ w.T).reshape(g.shape[:-1] + (w.shape[0],))
    if x.ndim == 2 and w.ndim == 1:      # matrix @ vector: an outer product per cotangent
        return g.reshape(g.shape + (1,)) * w
    B = _batch(g, y)
    xs, ws, ys = _mm_shapes(x, w)
    gx = g.reshape(B + ys) @ _mT(w.reshape(ws))
    return unbroadcast(gx, xs, len(ys)).reshape(B + x.shape)


def _matmul_vjp_w(g, y, x, w):
    if x.ndim == 2 and w.ndim == 2:
        return x.T @ g
    if x.ndim > 2 and w.ndim == 2 and g.ndim == y.ndim:
        return _rows(x, w.shape[0]).T @ _rows(g, w.shape[1])
    if x.ndim == 2 and w.ndim == 1:      # one matrix product for the whole batch of cotangents
        return g @ x
    B = _batch(g, y)
    xs, ws, ys = _mm_shapes(x, w)
    gw = _mT(x.reshape(xs)) @ g.reshape(B + ys)
    return unbroadcast(gw, ws, len(ys)).reshape(B + w.shape)


def _matmul_jvp_x(dx, y, x, w):
    B = dx.shape[:dx.ndim - x.ndim]
    xs, ws, ys = _mm_shapes(x, w)
    ones = (1,) * (len(ys) - len(xs))
    return (dx.reshape(B + ones + xs) @ w.reshape(ws)).reshape(B + y.shape)


def _matmul_jvp_w(dw, y, x, w):
    if x.ndim == 2 and w.ndim == 1:
        return dw @ x.T
    B = dw.shape[:dw.ndim - w.ndim]
    xs, ws, ys = _mm_shapes(x, w)
    ones = (1,) * (len(ys) - len(ws))
    return (x.reshape(xs) @ dw.reshape(B + ones + ws)).reshape(B + y.shape)


matmul = define(
    "matmul", np.matmul, doc="y = x @ W", saves="inputs",
    x=("· Wᵀ", _matmul_vjp_x, _matmul_jvp_x),
    W=("xᵀ ·", _matmul_vjp_w, _matmul_jvp_w))

# ---------------------------------------------------------------------------
# Reductions (axis: a tuple of negative axes)
# ---------------------------------------------------------------------------
def _spread(g, y, x, axis):
    """Broadcast a reduced gradient back over the reduced axes of ``x``."""
    B = _batch(g, y)
    return broadcast_to(g.reshape(B + _keepdims_shape(x.shape, axis)), shape=B + x.shape)


def _count(x, axis):
    return math.prod([x.shape[a] for a in axis])


sum = define(
    "sum", lambda x, axis, keepdims: np.add.reduce(x, axis=axis, keepdims=keepdims), doc="y = Σ x over axis",
    saves="nothing",
    x=("1", lambda g, y, x, axis, keepdims: _spread(g, y, x, axis),
        lambda dx, y, x, axis, keepdims: sum(dx, axis=axis, keepdims=keepdims)))

def _mean(x, axis, keepdims):
    """``np.mean``; for floating ``x`` the same sum-then-divide without numpy's Python-level wrapper."""
    if x.dtype.kind not in "fc" or x.size == 0:
        return np.mean(x, axis=axis, keepdims=keepdims)
    return np.add.reduce(x, axis=axis, keepdims=keepdims) / _count(x, axis)


mean = define(
    "mean", _mean, doc="y = mean of x over axis", saves="nothing",
    # ḡ/n on the reduced cotangent, then spread: one division per output entry instead of per input entry
    x=("1/n", lambda g, y, x, axis, keepdims: _spread(g / _count(x, axis), y, x, axis),
        lambda dx, y, x, axis, keepdims: mean(dx, axis=axis, keepdims=keepdims)))


def _argext_share(g, y, x, axis):
    """The gradient of a max/min reduction, split evenly between tied winners."""
    B = _batch(g, y)
    keep = _keepdims_shape(x.shape, axis)
    hit = cast(x == y.reshape(keep), dtype=x.dtype)
    return g.reshape(B + keep) * (hit / sum(hit, axis=axis, keepdims=True))


def _argext_jvp(dx, y, x, axis, keepdims):
    keep = _keepdims_shape(x.shape, axis)
    hit = cast(x == y.reshape(keep), dtype=x.dtype)
    return sum(dx * (hit / sum(hit, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims)


max = define(
    "max", lambda x, axis, keepdims: np.maximum.reduce(x, axis=axis, keepdims=keepdims), doc="y = max of x over axis",
    x=("[x = max]/count", lambda g, y, x, axis, keepdims: _argext_share(g, y, x, axis), _argext_jvp))

min = define(
    "min", lambda x, axis, keepdims: np.minimum.reduce(x, axis=axis, keepdims=keepdims), doc="y = min of x over axis",
    x=("[x = min]/count", lambda g, y, x, axis, keepdims: _argext_share(g, y, x, axis), _argext_jvp))


def _logsumexp(x, axis, keepdims):
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.add.reduce(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _lse_weights(y, x, axis):
    """softmax(x) along axis, from the op's own output."""
    return exp(x - y.reshape(_keepdims_shape(x.shape, axis)))


logsumexp = define(
    "logsumexp", _logsumexp, doc="y = ln Σ eˣ over axis, computed without overflow",
    x=("softmax(x)",
       lambda g, y, x, axis, keepdims: g.reshape(_batch(g, y) + _keepdims_shape(x.shape, axis)) * _lse_weights(y, x, axis),
       lambda dx, y, x, axis, keepdims: sum(dx * _lse_weights(y, x, axis), axis=axis, keepdims=keepdims)))


def _softmax(x, axis):
    e = np.exp(x - np.maximum.reduce(x, axis=axis, keepdims=True))
    return e / np.add.reduce(e, axis=axis, keepdims=True)


softmax = define(
    "softmax", _softmax, doc="yᵢ = eˣⁱ / Σⱼ eˣʲ along axis", saves="output",
    x=("diag(y) − y yᵀ",
       lambda g, y, x, axis: y * (g - sum(g * y, axis=axis, keepdims=True)),
       lambda dx, y, x, axis: y * (dx - sum(dx * y, axis=axis, keepdims=True))))

def _log_softmax(x, axis):
    """``(x − m) − ln Σ e^(x − m)`` with ``m`` the (finite) max: the shifted ``x`` is made once and used twice."""
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    if not math.isfinite(np.add.reduce(m, axis=None)):     # one reduction: an infinite (or NaN) max shows in the sum
        m = np.where(np.isfinite(m), m, 0)
    shifted = x - m
    total = np.add.reduce(np.exp(shifted), axis=axis, keepdims=True)
    shifted -= np.log(total, out=total)
    return shifted


log_softmax = define(
    "log_softmax", _log_softmax, doc="y = x − logsumexp(x) along axis", saves="output",
    x=("I − softmax(x)",
       lambda g, y, x, axis: g - exp(y) * sum(g, axis=axis, keepdims=True),
       lambda dx, y, x, axis: dx - sum(exp(y) * dx, axis=axis, keepdims=True)))

# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------
reshape = define(
    "reshape", lambda x, shape: np.reshape(x, shape), doc="y = x with another shape", saves="nothing",
    x=("reshape back", lambda g, y, x, shape: g.reshape(_batch(g, y) + x.shape),
       lambda dx, y, x, shape: dx.reshape(dx.shape[:dx.ndim - x.ndim] + y.shape)))

expand_dims = _alias(reshape, "expand_dims", "y = x with a new axis of size 1")
squeeze = _alias(reshape, "squeeze", "y = x without axes of size 1")


def _inverse(axes):
    return tuple(np.argsort(axes))


transpose = define(
    "transpose", lambda x, axes: np.transpose(x, axes), doc="y = x with its axes permuted",
    x=("transpose back",
       lambda g, y, x, axes: transpose(g, axes=_shift(_inverse(axes), g.ndim - y.ndim)),
       lambda dx, y, x, axes: transpose(dx, axes=_shift(axes, dx.ndim - x.ndim))))

def _broadcast_to(x, shape):
    """``np.broadcast_to``; a small result is filled in instead (numpy's view costs more than the copy there)."""
    if math.prod(shape) <= _SMALL and x.ndim <= len(shape):
        out = np.empty(shape, dtype=x.dtype)
        out[...] = x
        return out
    return np.broadcast_to(x, shape)


_SMALL = 4096


broadcast_to = define(
    "broadcast_to", _broadcast_to, doc="y = x repeated to a shape",
    x=("sum over copies",
       lambda g, y, x, shape: unbroadcast(g, x.shape, y.ndim),
       lambda dx, y, x, shape: broadcast_to(
           lift(dx, x.ndim, len(shape)), shape=dx.shape[:dx.ndim - x.ndim] + tuple(shape))))


def _getitem(x, index, lead):
    if lead == 0:
        return x[index]
    core = np.moveaxis(x, tuple(range(lead)), tuple(range(-lead, 0)))[index]
    return np.moveaxis(core, tuple(range(-lead, 0)), tuple(range(lead)))


def _has_array(index):
    return any(isinstance(i, (np.ndarray, list)) for i in index)


def _scatter(g, index, shape, lead):
    """Zeros of ``g.shape[:lead] + shape`` with ``g`` added at ``index`` (repeats add up)."""
    if lead:
        g = np.moveaxis(g, tuple(range(lead)), tuple(range(-lead, 0)))
    out = np.zeros(tuple(shape) + g.shape[g.ndim - lead:], dtype=g.dtype)
    if _has_array(index):
        np.add.at(out, index, g)
    else:
        out[index] += g
    if lead:
        out = np.moveaxis(out, tuple(range(-lead, 0)), tuple(range(lead)))
    return out


getitem = define(
    "getitem", _getitem, doc="y = x[index] (index never holds Ellipsis; lead: batch axes to skip)",
    x=("select", lambda g, y, x, index, lead: scatter(g, index=index, shape=x.shape[lead:], lead=g.ndim - y.ndim + lead),
       lambda dx, y, x, index, lead: getitem(dx, index=index, lead=dx.ndim - x.ndim + lead)))

take = _alias(getitem, "take", "y = x[..., indices, ...] along one axis")

scatter = define(
    "scatter", _scatter, doc="y = zeros(shape) with g added at index (the transpose of getitem)",
    g=("place", lambda g2, y, g, index, shape, lead: getitem(g2, index=index, lead=g2.ndim - y.ndim + lead),
       lambda dg, y, g, index, shape, lead: scatter(dg, index=index, shape=shape, lead=dg.ndim - g.ndim + lead)))


def _slot(axis, start, stop):
    """An index selecting ``start:stop`` along non-negative ``axis``."""
    return (slice(None),) * axis + (slice(start, stop),)


def _concat_slot(xs, i, axis):
    ax = axis % xs[0].ndim
    start = int(np.sum([x.shape[ax] for x in xs[:i]], dtype=int))
    return _slot(ax, start, start + xs[i].shape[ax])


concatenate = define(
    "concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis), variadic=True,
    doc="y = the inputs joined along an existing axis",
    x=("slice back",
       lambda g, y, *xs, i, axis: getitem(g, index=_concat_slot(xs, i, axis), lead=g.ndim - y.ndim),
       lambda dx, y, *xs, i, axis: scatter(dx, index=_concat_slot(xs, i, axis), shape=y.shape,
                                           lead=dx.ndim - xs[i].ndim)))

stack = define(
    "stack", lambda *xs, axis: np.stack(xs, axis=axis), variadic=True,
    doc="y = the inputs joined along a new axis",
    x=("slice back",
       lambda g, y, *xs, i, axis: getitem(g, index=(slice(None),) * (axis % y.ndim) + (i,), lead=g.ndim - y.ndim),
       lambda dx, y, *xs, i, axis: scatter(dx, index=(slice(None),) * (axis % y.ndim) + (i,), shape=y.shape,
                                           lead=dx.ndim - xs[i].ndim)))


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
    """A piecewise-constant function: its derivative is 0 wherever it exists (and undefined at the jumps)."""
    return define(name, forward, elementwise=True, doc=doc + "; piecewise constant, so the gradient is 0",
                  x=("0 (piecewise constant)", lambda g, y, x: g * 0, lambda dx, y, x: dx * 0))


_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))

log1p = _unary("log1p", np.log1p, "y = ln(1 + x), accurate for small x", "1/(1 + x)", lambda y, x: 1 / (1 + x))
expm1 = _unary("expm1", np.expm1, "y = eˣ − 1, accurate for small x", "eˣ = y + 1", lambda y, x: y + 1)
log2 = _unary("log2", np.log2, "y = log₂ x", "1/(x·ln 2)", lambda y, x: 1 / (x * _LN2))
log10 = _unary("log10", np.log10, "y = log₁₀ x", "1/(x·ln 10)", lambda y, x: 1 / (x * _LN10))
exp2 = _unary("exp2", np.exp2, "y = 2ˣ", "y·ln 2", lambda y, x: y * _LN2)
sinh = _unary("sinh", np.sinh, "y = sinh x", "cosh x", lambda y, x: cosh(x))
cosh = _unary("cosh", np.cosh, "y = cosh x", "sinh x", lambda y, x: sinh(x))
tan = _unary("tan", np.tan, "y = tan x", "1 + y²", lambda y, x: 1 + y * y)
arcsin = _unary("arcsin", np.arcsin, "y = arcsin x (NaN outside [−1, 1])", "1/√(1 − x²)",
                lambda y, x: 1 / sqrt(1 - x * x))
arccos = _unary("arccos", np.arccos, "y = arccos x (NaN outside [−1, 1])", "−1/√(1 − x²)",
                lambda y, x: -1 / sqrt(1 - x * x))
arctan = _unary("arctan", np.arctan, "y = arctan x", "1/(1 + x²)", lambda y, x: 1 / (1 + x * x))
arcsinh = _unary("arcsinh", np.arcsinh, "y = arsinh x", "1/√(x² + 1)", lambda y, x: 1 / sqrt(x * x + 1))
arccosh = _unary("arccosh", np.arccosh, "y = arcosh x (NaN below 1)", "1/√(x² − 1)",
                 lambda y, x: 1 / sqrt(x * x - 1))
arctanh = _unary("arctanh", np.arctanh, "y = artanh x (NaN outside [−1, 1], ±∞ at ±1)", "1/(1 − x²)",
                 lambda y, x: 1 / (1 - x * x))
reciprocal = _unary("reciprocal", np.reciprocal, "y = 1/x", "−1/x² = −y²", lambda y, x: -(y * y))
cbrt = _unary("cbrt", np.cbrt, "y = ∛x", "1/(3y²)", lambda y, x: 1 / (3 * y * y))


def _erf(x):
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:     # scipy is optional: math.erf entry by entry is exact, only slower
        import math
        return np.vectorize(math.erf, otypes=[np.result_type(x, np.float32)])(x)
    return scipy_erf(x)


_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))
erf = _unary("erf", _erf, "y = erf x = (2/√π)∫₀ˣ e^(−t²) dt", "(2/√π)·e^(−x²)",
             lambda y, x: _TWO_OVER_SQRT_PI * exp(-(x * x)))


_GELU_C = float(np.sqrt(2 / np.pi))
_SQRT_HALF, _INV_SQRT_2PI = float(np.sqrt(0.5)), float(1 / np.sqrt(2 * np.pi))


def _gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x * _SQRT_HALF))


def _gelu_d(x, approximate):
    if approximate:
        t = tanh(_GELU_C * (x + 0.044715 * x * x * x))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (_GELU_C * (1 + 3 * 0.044715 * x * x))
    return 0.5 * (1 + erf(x * _SQRT_HALF)) + x * exp(-0.5 * x * x) * _INV_SQRT_2PI


gelu = define(
    "gelu", _gelu, elementwise=True,
    doc="y = x·Φ(x) (approximate=True: 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))), as Keras)",
    x=("Φ(x) + x·φ(x)", lambda g, y, x, approximate: g * _gelu_d(x, approximate),
       lambda dx, y, x, approximate: dx * _gelu_d(x, approximate)))

silu = _unary("silu", lambda x: x * _sigmoid(x), "y = x·σ(x) (also called swish)", "σ(x)·(1 + x(1 − σ(x)))",
              lambda y, x: sigmoid(x) * (1 + x * (1 - sigmoid(x))))


def _elu(x, alpha):
    return _select(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


elu = define(
    "elu", _elu, elementwise=True, doc="y = x if x > 0 else α(eˣ − 1)",
    x=("1 if x > 0 else y + α", lambda g, y, x, alpha: where(x > 0, g, g * (y + alpha)),
       lambda dx, y, x, alpha: where(x > 0, dx, dx * (y + alpha))))

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

selu = _unary("selu", lambda x: _SELU_SCALE * _elu(x, _SELU_ALPHA),
              "y = λ·(x if x > 0 else α(eˣ − 1)), λ ≈ 1.0507, α ≈ 1.6733",
              "λ if x > 0 else y + λα", lambda y, x: where(x > 0, _SELU_SCALE, y + _SELU_SCALE * _SELU_ALPHA))
softsign = _unary("softsign", lambda x: x / (1 + np.abs(x)), "y = x/(1 + |x|)", "1/(1 + |x|)²",
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
    doc="y = x rounded to `decimals` places (halves to even, as numpy); piecewise constant, so the gradient is 0",
    x=("0 (piecewise constant)", lambda g, y, x, decimals: g * 0, lambda dx, y, x, decimals: dx * 0))

arctan2 = define(
    "arctan2", np.arctan2, elementwise=True, doc="y = atan2(a, b), the angle of the point (b, a)",
    a=("b/(a² + b²)", lambda g, y, a, b: g * (b / (a * a + b * b)), lambda da, y, a, b: da * (b / (a * a + b * b))),
    b=("−a/(a² + b²)", lambda g, y, a, b: g * (-a / (a * a + b * b)),
       lambda db, y, a, b: db * (-a / (a * a + b * b))))

hypot = define(
    "hypot", np.hypot, elementwise=True, doc="y = √(a² + b²) without overflow",
    a=("a/y", lambda g, y, a, b: g * (a / y), lambda da, y, a, b: da * (a / y)),
    b=("b/y", lambda g, y, a, b: g * (b / y), lambda db, y, a, b: db * (b / y)))

logaddexp = define(
    "logaddexp", np.logaddexp, elementwise=True, doc="y = ln(eᵃ + eᵇ) without overflow",
    a=("eᵃ⁻ʸ", lambda g, y, a, b: g * exp(a - y), lambda da, y, a, b: da * exp(a - y)),
    b=("eᵇ⁻ʸ", lambda g, y, a, b: g * exp(b - y), lambda db, y, a, b: db * exp(b - y)))

logaddexp2 = define(
    "logaddexp2", np.logaddexp2, elementwise=True, doc="y = log₂(2ᵃ + 2ᵇ) without overflow",
    a=("2ᵃ⁻ʸ", lambda g, y, a, b: g * exp2(a - y), lambda da, y, a, b: da * exp2(a - y)),
    b=("2ᵇ⁻ʸ", lambda g, y, a, b: g * exp2(b - y), lambda db, y, a, b: db * exp2(b - y)))

mod = define(
    "mod", np.mod, elementwise=True, doc="y = a mod b = a − ⌊a/b⌋·b (the sign of b, as numpy and Python %)",
    a=("1", lambda g, y, a, b: g, lambda da, y, a, b: da),
    b=("−⌊a/b⌋", lambda g, y, a, b: g * -floor(a / b), lambda db, y, a, b: db * -floor(a / b)))

floor_divide = define(
    "floor_divide", np.floor_divide, elementwise=True,
    doc="y = ⌊a/b⌋ (a // b); piecewise constant, so the gradient is 0",
    a=("0 (piecewise constant)", lambda g, y, a, b: g * 0, lambda da, y, a, b: da * 0),
    b=("0 (piecewise constant)", lambda g, y, a, b: g * 0, lambda db, y, a, b: db * 0))

# ---------------------------------------------------------------------------
# The numpy surface: reductions and scans (axis: a tuple of negative axes)
# ---------------------------------------------------------------------------
def _centered(x, axis):
    return x - mean(x, axis=axis, keepdims=True)


var = define(
    "var", lambda x, axis, ddof, keepdims: np.var(x, axis=axis, ddof=ddof, keepdims=keepdims),
    doc="y = Σ(x − x̄)²/(n − ddof) over axis",
    x=("2(x − x̄)/(n − ddof)",
       lambda g, y, x, axis, ddof, keepdims: _spread(g, y, x, axis) * (_centered(x, axis) * (2.0 / (_count(x, axis) - ddof))),
       lambda dx, y, x, axis, ddof, keepdims: sum(dx * _centered(x, axis), axis=axis, keepdims=keepdims)
       * (2.0 / (_count(x, axis) - ddof))))

def _over_std(y):
    """1/y where the standard deviation y > 0, else 0 (all entries equal: 0 is a subgradient, as for norm)."""
    return where(y > 0, 1 / where(y > 0, y, 1), 0)


std = define(
    "std", lambda x, axis, ddof, keepdims: np.std(x, axis=axis, ddof=ddof, keepdims=keepdims),
    doc="y = √(Σ(x − x̄)²/(n − ddof)) over axis (gradient 0 where y = 0: a subgradient)",
    x=("(x − x̄)/((n − ddof)·y)",
       lambda g, y, x, axis, ddof, keepdims: _spread(g * _over_std(y), y, x, axis)
       * (_centered(x, axis) * (1.0 / (_count(x, axis) - ddof))),
       lambda dx, y, x, axis, ddof, keepdims: sum(dx * _centered(x, axis), axis=axis, keepdims=keepdims)
       * (_over_std(y) * (1.0 / (_count(x, axis) - ddof)))))


def _scan(f, x, axis, reverse):
    if reverse:
        return np.flip(f(np.flip(x, axis), axis=axis), axis)
    return f(x, axis=axis)


cumsum = define(
    "cumsum", lambda x, axis, reverse: _scan(np.cumsum, x, axis, reverse),
    doc="yᵢ = Σⱼ≤ᵢ xⱼ along axis (reverse: Σⱼ≥ᵢ)",
    x=("1 for j ≤ i: g summed from the end", lambda g, y, x, axis, reverse: cumsum(g, axis=axis, reverse=not reverse),
       lambda dx, y, x, axis, reverse: cumsum(dx, axis=axis, reverse=reverse)))

def _along_last(t, axis, nb, reverse):
    """``t`` (``nb`` batch axes in front) with ``axis`` moved last, reversed along it if ``reverse``."""
    n = t.ndim - nb
    perm = tuple(k for k in range(n) if k != axis % n) + (axis % n,)
    t = transpose(t, axes=_shift(perm, nb))
    if reverse:
        t = getitem(t, index=(slice(None),) * (n - 1) + (slice(None, None, -1),), lead=nb)
    return t


def _from_last(t, axis, nb, reverse):
    """The inverse of :func:`_along_last`."""
    n = t.ndim - nb
    if reverse:
        t = getitem(t, index=(slice(None),) * (n - 1) + (slice(None, None, -1),), lead=nb)
    perm = tuple(k for k in range(n) if k != axis % n) + (axis % n,)
    return transpose(t, axes=_shift(_inverse(perm), nb))


def _cumprod_table(x, axis, reverse):
    """J[..., j, i] = ∂yᵢ/∂xⱼ = Πₖ≤ᵢ,ₖ≠ⱼ xₖ (0 for i < j), along the scan axis moved last: exact with zeros."""
    xt = _along_last(x, axis, 0, reverse)
    n = xt.shape[-1]
    ones = np.ones(xt.shape[:-1] + (1,), dtype=_raw(x).dtype)
    before = cumprod(concatenate(ones, xt[..., :-1], axis=-1), axis=-1, reverse=False)
    later = np.arange(n)[None, :] > np.arange(n)[:, None]                  # [k > j]
    after = cumprod(where(later, xt.reshape(xt.shape[:-1] + (1, n)), 1), axis=-1, reverse=False)
    upper = np.arange(n)[None, :] >= np.arange(n)[:, None]                 # [i ≥ j]
    return where(upper, after, 0) * before.reshape(before.shape + (1,))


def _cumprod_vjp(g, y, x, axis, reverse):
    if np.all(_raw(x) != 0):
        return cumsum(g * y, axis=axis, reverse=not reverse) / x
    nb = g.ndim - y.ndim
    gt = _along_last(g, axis, nb, reverse)
    gx = sum(gt.reshape(gt.shape[:-1] + (1, gt.shape[-1])) * _cumprod_table(x, axis, reverse), axis=(-1,),
             keepdims=False)
    return _from_last(gx, axis, nb, reverse)


def _cumprod_jvp(dx, y, x, axis, reverse):
    if np.all(_raw(x) != 0):
        return y * cumsum(dx / x, axis=axis, reverse=reverse)
    nb = dx.ndim - x.ndim
    dt = _along_last(dx, axis, nb, reverse)
    dy = sum(dt.reshape(dt.shape + (1,)) * _cumprod_table(x, axis, reverse), axis=(-2,), keepdims=False)
    return _from_last(dy, axis, nb, reverse)


cumprod = define(
    "cumprod", lambda x, axis, reverse: _scan(np.cumprod, x, axis, reverse),
    doc="yᵢ = Πⱼ≤ᵢ xⱼ along axis (reverse: Πⱼ≥ᵢ); exact with zeros (an n×n table along the axis then)",
    x=("Πₖ≤ᵢ,ₖ≠ⱼ xₖ for j ≤ i", _cumprod_vjp, _cumprod_jvp))


def _prod_others(y, x, axis):
    """For every entry, the product of the *other* entries it was multiplied with (exact with zeros)."""
    keep = _keepdims_shape(x.shape, axis)
    if np.all(_raw(x) != 0):
        return y.reshape(keep) / x
    n = x.ndim
    perm = tuple(i for i in range(n) if i - n not in axis) + tuple(a % n for a in axis)
    xt = transpose(x, axes=perm)
    lead = xt.shape[:n - len(axis)]
    flat = xt.reshape(lead + (-1,))
    ones = np.ones(lead + (1,), dtype=_raw(x).dtype)
    before = cumprod(concatenate(ones, flat[..., :-1], axis=-1), axis=-1, reverse=False)
    after = cumprod(concatenate(flat[..., 1:], ones, axis=-1), axis=-1, reverse=True)
    return transpose((before * after).reshape(xt.shape), axes=_inverse(perm))


prod = define(
    "prod", lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims), doc="y = Π x over axis",
    x=("Π of the other entries", lambda g, y, x, axis, keepdims: _spread(g, y, x, axis) * _prod_others(y, x, axis),
       lambda dx, y, x, axis, keepdims: sum(dx * _prod_others(y, x, axis), axis=axis, keepdims=keepdims)))


def _norm(x, ord, axis, keepdims):
    if ord is None or ord == "fro" or (ord == 2 and len(axis) == 1):
        return np.sqrt(np.sum(np.square(np.abs(x)), axis=axis, keepdims=keepdims))
    return np.linalg.norm(x, ord=ord, axis=axis if len(axis) == 2 else axis[0], keepdims=keepdims)


def _split_ties(hit, axis, dtype):
    hit = cast(hit, dtype=dtype)
    return hit / sum(hit, axis=axis, keepdims=True)


def _norm_direction(y, x, ord, axis):
    """∂‖x‖/∂x (x.shape): the norm is positively homogeneous, so VJP and JVP both use it."""
    yk = y.reshape(_keepdims_shape(x.shape, axis))
    if ord is None or ord == "fro" or (ord == 2 and len(axis) == 1):
        safe = where(yk > 0, yk, 1)
        return where(yk > 0, x / safe, 0)          # 0 at x = 0 (a subgradient), as PyTorch
    if len(axis) == 1:
        if ord == 1:
            return sign(x)
        if ord in (np.inf, -np.inf):
            return sign(x) * _split_ties(abs(x) == yk, axis, _raw(x).dtype)
        if ord == 0:
            return x * 0
        p = float(ord)
        safe = where(yk > 0, yk, 1)
        return where(yk > 0, sign(x) * (abs(x) / safe) ** (p - 1), 0)
    r, c = axis
    if ord in (1, -1, np.inf, -np.inf):
        inner, outer = ((r,), (c,)) if ord in (1, -1) else ((c,), (r,))
        s = sum(abs(x), axis=inner, keepdims=True)
        return sign(x) * _split_ties(s == yk, outer, _raw(x).dtype)
    # ord 2, -2, 'nuc': from the singular vectors of the values (not recorded for second derivatives)
    xv = np.moveaxis(_raw(x), (r, c), (-2, -1))
    u, _, vh = np.linalg.svd(xv, full_matrices=False)
    if ord == "nuc":
        d = u @ vh
    else:
        k = 0 if ord == 2 else -1
        d = u[..., :, k:k + 1 if k == 0 else None] @ vh[..., k:k + 1 if k == 0 else None, :]
    return np.moveaxis(d, (-2, -1), (r, c))


norm = define(
    "norm", _norm, doc="y = ‖x‖ over axis (np.linalg.norm: vector ord 1, 2, ∞, p; matrix 'fro', 1, 2, ∞, 'nuc')",
    x=("x/‖x‖ (ord 2); sign(x) (ord 1); sign(x)·[|x| = max]/count (ord ∞)",
       lambda g, y, x, ord, axis, keepdims: _spread(g, y, x, axis) * _norm_direction(y, x, ord, axis),
       lambda dx, y, x, ord, axis, keepdims: sum(dx * _norm_direction(y, x, ord, axis), axis=axis, keepdims=keepdims)))


def _along(idx, axis):
    """The full advanced index that picks ``idx`` along ``axis`` and keeps every other axis in place."""
    n = idx.ndim
    ax = axis % n
    return tuple(idx if k == ax else np.arange(idx.shape[k]).reshape((-1,) + (1,) * (n - 1 - k))
                 for k in range(n))


def _sort_order(x, axis):
    return np.argsort(_raw(x), axis=axis, kind="stable")


sort = define(
    "sort", lambda x, axis: np.sort(x, axis=axis, kind="stable"), doc="y = x sorted along axis (values)",
    x=("permute back",
       lambda g, y, x, axis: getitem(g, index=_along(np.argsort(_sort_order(x, axis), axis=axis), axis),
                                     lead=g.ndim - y.ndim),
       lambda dx, y, x, axis: getitem(dx, index=_along(_sort_order(x, axis), axis), lead=dx.ndim - x.ndim)))

# ---------------------------------------------------------------------------
# The numpy surface: shapes and indexing (most are a gather: getitem under their own name)
# ---------------------------------------------------------------------------
take_along_axis = _alias(getitem, "take_along_axis", "y = x[..., indices, ...] with one index per entry along axis")
flip = _alias(getitem, "flip", "y = x reversed along axes")
roll = _alias(getitem, "roll", "y = x shifted cyclically along axes")
repeat = _alias(getitem, "repeat", "y = each entry of x repeated along an axis")
tile = _alias(getitem, "tile", "y = x repeated as whole blocks")
diagonal = _alias(getitem, "diagonal", "y = the entries x[..., i, i + offset]")
diag = _alias(scatter, "diag", "y = a matrix with x on the k-th diagonal, zeros elsewhere")


def _pad(x, pad_width, mode, value):
    full = ((0, 0),) * (x.ndim - len(pad_width)) + tuple(pad_width)
    if mode == "constant":
        return np.pad(x, full, mode="constant", constant_values=value)
    return np.pad(x, full, mode=mode)


def _pad_vjp(g, y, x, pad_width, mode, value):
    nb = g.ndim - y.ndim
    if mode == "constant":
        return getitem(g, index=tuple(slice(b, b + n) for (b, _), n in zip(pad_width, x.shape)), lead=nb)
    for k, ((b, a), n) in enumerate(zip(pad_width, x.shape)):
        if b or a:
            source = np.pad(np.arange(n), (b, a), mode=mode)
            shape = g.shape[nb:nb + k] + (n,) + g.shape[nb + k + 1:]
            g = scatter(g, index=(slice(None),) * k + (source,), shape=shape, lead=nb)
    return g


pad = define(
    "pad", _pad, doc="y = x with borders added (constant value, or mirrored/edge/wrapped entries of x)",
    x=("1 on the copied entries (mirrored/wrapped copies add up)", _pad_vjp,
       lambda dx, y, x, pad_width, mode, value: pad(dx, pad_width=pad_width, mode=mode, value=0.0)))


def _tri(x, k, upper):
    shape = x.shape[-2:]
    return np.triu(np.ones(shape, dtype=bool), k) if upper else np.tril(np.ones(shape, dtype=bool), k)


triu = define(
    "triu", lambda x, k: np.triu(x, k), doc="y = x on and above the k-th diagonal, 0 below",
    x=("[j − i ≥ k]", lambda g, y, x, k: where(_tri(x, k, True), g, 0),
       lambda dx, y, x, k: where(_tri(x, k, True), dx, 0)))

tril = define(
    "tril", lambda x, k: np.tril(x, k), doc="y = x on and below the k-th diagonal, 0 above",
    x=("[j − i ≤ k]", lambda g, y, x, k: where(_tri(x, k, False), g, 0),
       lambda dx, y, x, k: where(_tri(x, k, False), dx, 0)))

# ---------------------------------------------------------------------------
# einsum: contractions (dot, inner, outer, tensordot are einsum under their own names)
# ---------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _explicit(subscripts, ndims):
    """``(inputs, output)`` letter strings of ``subscripts`` with ``...`` spelled out in fresh letters."""
    return _explicit_cached(subscripts, tuple(ndims))


@functools.lru_cache(maxsize=512)
def _explicit_cached(subscripts, ndims):
    # Cached: a training loop parses the same few subscripts (and their VJPs' subscripts) at every step.
    ins, out = subscripts.split("->")
    ins = ins.split(",")
    fresh = [c for c in _LETTERS if c not in subscripts]
    width = 0
    for s, n in zip(ins, ndims):
        if "..." in s:
            width = builtins.max(width, n - len(s.replace("...", "")))
    dots = "".join(fresh[:width])
    ins = tuple(s.replace("...", dots[width - (n - len(s.replace("...", ""))):]) if "..." in s else s
                for s, n in zip(ins, ndims))
    return ins, out.replace("...", dots)


@functools.lru_cache(maxsize=512)
def _pair_plan(sa, sb, so):
    """How ``sa,sb->so`` is one batched matrix product: ``(batch, left, inner, right, perm_a, perm_b, perm_out)``.

    ``a`` transposed by ``perm_a`` is ``batch + left + inner``, ``b`` by
    ``perm_b`` is ``batch + inner + right``, and the product (``batch + left
    + right``) transposed by ``perm_out`` is ``so``; a permutation that
    changes nothing is None. None for a contraction that is not such a
    product (a repeated index, an index summed inside one operand only).
    Cached, so that the per-call work is only the shapes and the product.
    """
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb) or len(set(so)) != len(so):
        return None
    if any(c not in so and c not in other for s, other in ((sa, sb), (sb, sa)) for c in s):
        return None     # an index summed inside one operand only
    batch = "".join(c for c in so if c in sa and c in sb)
    left = "".join(c for c in so if c in sa and c not in sb)
    right = "".join(c for c in so if c in sb and c not in sa)
    inner = "".join(c for c in sa if c in sb and c not in so)
    if len(batch) + len(left) + len(right) != len(so):
        return None

    def perm(src, dst):
        p = tuple(src.index(c) for c in dst)
        return None if p == tuple(range(len(p))) else p

    return batch, left, inner, right, perm(sa, batch + left + inner), perm(sb, batch + inner + right), \
        perm(batch + left + right, so)


def _einsum_pair(a, b, sa, sb, so):
    """A two-operand contraction as one (batched) matrix product, or None when einsum must do it.

    ``np.matmul`` on stacked operands is one BLAS product per matrix of the
    stack (transposed operands are passed to BLAS as such, not copied);
    ``np.einsum`` without ``optimize`` would loop in C without BLAS, and with
    it would plan the path at every call.
    """
    plan = _pair_plan(sa, sb, so)
    if plan is None:
        return None
    batch, left, inner, right, perm_a, perm_b, perm_out = plan
    size = dict(zip(sa, a.shape))
    for c, n in zip(sb, b.shape):
        if size.setdefault(c, n) != n:
            return None     # axes that broadcast: einsum does that
    bshape = tuple([size[c] for c in batch])
    rows, inn, cols = (math.prod([size[c] for c in cs]) for cs in (left, inner, right))
    A = a if perm_a is None else a.transpose(perm_a)
    if A.shape != bshape + (rows, inn):
        A = A.reshape(bshape + (rows, inn))
    B = b if perm_b is None else b.transpose(perm_b)
    if B.shape != bshape + (inn, cols):
        B = B.reshape(bshape + (inn, cols))
    out = np.matmul(A, B)
    full = bshape + tuple([size[c] for c in left + right])
    if out.shape != full:
        out = out.reshape(full)
    return out if perm_out is None else out.transpose(perm_out)


def _einsum(*xs, subscripts):
    if len(xs) == 2:
        (sa, sb), so = _explicit(subscripts, [x.ndim for x in xs])
        out = _einsum_pair(xs[0], xs[1], sa, sb, so)
        if out is not None:
            return out
    return np.einsum(subscripts, *xs, optimize=len(xs) > 2)


def _einsum_vjp(g, y, *xs, i, subscripts):
    ins, out = _explicit(subscripts, [x.ndim for x in xs])
    target = ins[i]
    used = set(out).union(*[set(s) for k, s in enumerate(ins) if k != i])
    fresh = iter(c for c in _LETTERS if c not in "".join(ins) + out)
    operands = [g] + [x for k, x in enumerate(xs) if k != i]
    subs = ["..." + out] + [s for k, s in enumerate(ins) if k != i]
    dtype = _raw(xs[i]).dtype
    result = ""
    for c, n in zip(target, xs[i].shape):
        if c in result:             # a repeated index (a diagonal): tie a fresh letter to it with an identity
            f = next(fresh)
            operands.append(np.eye(n, dtype=dtype))
            subs.append(c + f)
            result += f
        else:
            if c not in used:       # summed only inside this operand: its gradient is copied along c
                operands.append(np.ones(n, dtype=dtype))
                subs.append(c)
            result += c
    gx = einsum(*operands, subscripts=",".join(subs) + "->..." + result)
    x_shape, n = xs[i].shape, xs[i].ndim
    if gx.shape[gx.ndim - n:] == x_shape:
        return gx
    # numpy's einsum broadcasts axes of size 1 against the other operands' (this one's or theirs): the gradient
    # of a broadcast axis of x is the sum over its copies, and an axis of x met by a broadcast one gets copies
    spread = tuple(k - n for k, size in enumerate(x_shape) if size == 1 and gx.shape[gx.ndim - n + k] != 1)
    if spread:
        gx = sum(gx, axis=spread, keepdims=True)
    if gx.shape[gx.ndim - n:] != x_shape:
        gx = broadcast_to(gx, shape=gx.shape[:gx.ndim - n] + x_shape)
    return gx


def _einsum_jvp(dx, y, *xs, i, subscripts):
    ins, out = _explicit(subscripts, [x.ndim for x in xs])
    ins = ["..." + s if k == i else s for k, s in enumerate(ins)]
    return einsum(*[dx if k == i else x for k, x in enumerate(xs)], subscripts=",".join(ins) + "->..." + out)


einsum = define(
    "einsum", _einsum, variadic=True, doc="y = Σ over the contracted indices of the product of the operands",
    x=("einsum of ḡ with the other operands", _einsum_vjp, _einsum_jvp))
dot = _alias(einsum, "dot", "y = a · b (numpy's dot: the last axis of a with the second-to-last of b)")
inner = _alias(einsum, "inner", "y = Σ a·b over the last axes")
outer = _alias(einsum, "outer", "yᵢⱼ = aᵢ·bⱼ")
tensordot = _alias(einsum, "tensordot", "y = Σ a·b over the given pairs of axes")


# ---------------------------------------------------------------------------
# The other sections of the table (they use the rules above)
# ---------------------------------------------------------------------------
from . import attention, linalg, nn  # noqa: E402,F401
