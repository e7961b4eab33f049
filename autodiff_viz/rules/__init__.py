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

import numpy as np

from ..engine import In, Rule, lift, unbroadcast

TABLE: dict[str, Rule] = {}


def define(name, forward, *, elementwise=False, variadic=False, doc="", **inputs) -> Rule:
    """Add a rule to the table and return it.

    Each keyword names an input in order; its value is ``(factor, vjp, jvp)``
    or ``None`` for an input without gradient.

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
    rule = Rule(name, forward, specs, elementwise=elementwise, variadic=variadic, doc=doc)
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
    "add", np.add, elementwise=True, doc="y = a + b",
    a=("1", lambda g, y, a, b: g, lambda da, y, a, b: da),
    b=("1", lambda g, y, a, b: g, lambda db, y, a, b: db))

subtract = define(
    "subtract", np.subtract, elementwise=True, doc="y = a − b",
    a=("1", lambda g, y, a, b: g, lambda da, y, a, b: da),
    b=("−1", lambda g, y, a, b: -g, lambda db, y, a, b: -db))

multiply = define(
    "multiply", np.multiply, elementwise=True, doc="y = a · b",
    a=("b", lambda g, y, a, b: g * b, lambda da, y, a, b: da * b),
    b=("a", lambda g, y, a, b: g * a, lambda db, y, a, b: a * db))

divide = define(
    "divide", np.true_divide, elementwise=True, doc="y = a / b",
    a=("1/b", lambda g, y, a, b: g / b, lambda da, y, a, b: da / b),
    b=("−a/b²", lambda g, y, a, b: -g * y / b, lambda db, y, a, b: -db * y / b))


def _log_base(a):
    """ln a where a > 0, else 0: the b-derivative of aᵇ is only defined for a > 0."""
    return where(a > 0, log(where(a > 0, a, 1)), 0)


power = define(
    "power", np.power, elementwise=True, doc="y = aᵇ",
    a=("b·aᵇ⁻¹", lambda g, y, a, b: g * b * a ** (b - 1), lambda da, y, a, b: da * b * a ** (b - 1)),
    b=("y·ln a", lambda g, y, a, b: g * y * _log_base(a), lambda db, y, a, b: db * y * _log_base(a)))

negative = define(
    "negative", np.negative, elementwise=True, doc="y = −x",
    x=("−1", lambda g, y, x: -g, lambda dx, y, x: -dx))

# ---------------------------------------------------------------------------
# Elementwise functions
# ---------------------------------------------------------------------------
exp = define(
    "exp", np.exp, elementwise=True, doc="y = eˣ",
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

tanh = define(
    "tanh", np.tanh, elementwise=True, doc="y = tanh x",
    x=("1 − y²", lambda g, y, x: g * (1 - y * y), lambda dx, y, x: dx * (1 - y * y)))

sin = define(
    "sin", np.sin, elementwise=True, doc="y = sin x",
    x=("cos x", lambda g, y, x: g * cos(x), lambda dx, y, x: dx * cos(x)))

cos = define(
    "cos", np.cos, elementwise=True, doc="y = cos x",
    x=("−sin x", lambda g, y, x: -g * sin(x), lambda dx, y, x: -dx * sin(x)))


def _sigmoid(x):
    # 0.5·(1 + tanh(x/2)) equals 1/(1 + e⁻ˣ) and never overflows.
    return 0.5 * (1.0 + np.tanh(0.5 * x))


sigmoid = define(
    "sigmoid", _sigmoid, elementwise=True, doc="y = σ(x) = 1/(1 + e⁻ˣ)",
    x=("y(1 − y)", lambda g, y, x: g * (y * (1 - y)), lambda dx, y, x: dx * (y * (1 - y))))

relu = define(
    "relu", lambda x: np.maximum(x, 0), elementwise=True, doc="y = max(x, 0) (gradient 0 at 0)",
    x=("[x > 0]", lambda g, y, x: where(x > 0, g, 0), lambda dx, y, x: where(x > 0, dx, 0)))

leaky_relu = define(
    "leaky_relu", lambda x, alpha: np.where(x > 0, x, alpha * x), elementwise=True,
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

where = define(
    "where", np.where, elementwise=True, doc="y = a where cond else b",
    cond=None,
    a=("[cond]", lambda g, y, c, a, b: where(c, g, 0), lambda da, y, c, a, b: where(c, da, 0)),
    b=("[not cond]", lambda g, y, c, a, b: where(c, 0, g), lambda db, y, c, a, b: where(c, 0, db)))


def _inside(x, lo, hi, g):
    return where(x >= lo, where(x <= hi, g, 0), 0)


clip = define(
    "clip", np.clip, elementwise=True, doc="y = min(max(x, lo), hi); gradient 1 inside [lo, hi]",
    x=("[lo ≤ x ≤ hi]", lambda g, y, x, lo, hi: _inside(x, lo, hi, g),
       lambda dx, y, x, lo, hi: _inside(x, lo, hi, dx)),
    lo=None, hi=None)

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


def _matmul_vjp_x(g, y, x, w):
    if x.ndim == 2 and w.ndim == 2:      # the common cases first: no promotion, nothing broadcast
        return g @ w.T
    if x.ndim == 2 and w.ndim == 1:      # matrix @ vector: an outer product per cotangent
        return g.reshape(g.shape + (1,)) * w
    B = _batch(g, y)
    xs, ws, ys = _mm_shapes(x, w)
    gx = g.reshape(B + ys) @ _mT(w.reshape(ws))
    return unbroadcast(gx, xs, len(ys)).reshape(B + x.shape)


def _matmul_vjp_w(g, y, x, w):
    if x.ndim == 2 and w.ndim == 2:
        return x.T @ g
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
    "matmul", np.matmul, doc="y = x @ W",
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
    return int(np.prod([x.shape[a] for a in axis]))


sum = define(
    "sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims), doc="y = Σ x over axis",
    x=("1", lambda g, y, x, axis, keepdims: _spread(g, y, x, axis),
        lambda dx, y, x, axis, keepdims: sum(dx, axis=axis, keepdims=keepdims)))

mean = define(
    "mean", lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims), doc="y = mean of x over axis",
    x=("1/n", lambda g, y, x, axis, keepdims: _spread(g, y, x, axis) / _count(x, axis),
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
    "max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims), doc="y = max of x over axis",
    x=("[x = max]/count", lambda g, y, x, axis, keepdims: _argext_share(g, y, x, axis), _argext_jvp))

min = define(
    "min", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims), doc="y = min of x over axis",
    x=("[x = min]/count", lambda g, y, x, axis, keepdims: _argext_share(g, y, x, axis), _argext_jvp))


def _logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
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
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


softmax = define(
    "softmax", _softmax, doc="yᵢ = eˣⁱ / Σⱼ eˣʲ along axis",
    x=("diag(y) − y yᵀ",
       lambda g, y, x, axis: y * (g - sum(g * y, axis=axis, keepdims=True)),
       lambda dx, y, x, axis: y * (dx - sum(dx * y, axis=axis, keepdims=True))))

log_softmax = define(
    "log_softmax", lambda x, axis: x - _logsumexp(x, axis, True), doc="y = x − logsumexp(x) along axis",
    x=("I − softmax(x)",
       lambda g, y, x, axis: g - exp(y) * sum(g, axis=axis, keepdims=True),
       lambda dx, y, x, axis: dx - sum(exp(y) * dx, axis=axis, keepdims=True)))

# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------
reshape = define(
    "reshape", lambda x, shape: np.reshape(x, shape), doc="y = x with another shape",
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

broadcast_to = define(
    "broadcast_to", lambda x, shape: np.broadcast_to(x, shape), doc="y = x repeated to a shape",
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
# The other sections of the table (they use the rules above)
# ---------------------------------------------------------------------------
from . import attention, linalg, nn  # noqa: E402,F401
