"""Keras 3's ``keras.ops`` names whose meaning is Keras' own: numpy names Keras adds (``nanmean``, ``quantile``,
``isclose`` …), TensorFlow-like ops in Keras' signatures (``top_k``, ``segment_sum``, ``slice_update`` …) and
JAX-style control flow (``scan``, ``fori_loop``, ``switch``, ``associative_scan``).

They are built from the core ops, so each differentiable one has its gradient from the one rule table; the
tests (predicates, counts, windows, ``unique`` …) return constants, as in Keras. ``adv.ops`` gathers them with
the rest of ``keras.ops``; they are kept out of the package's top level, where numpy's and TensorFlow's
meanings of the same names (``adv.unique``, ``adv.scan``, ``adv.slice``) stay.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..tensor import Tensor, constant
from . import (
    abs,
    cast,
    cumprod,
    cumsum,
    diag,
    diff,
    divide,
    exp,
    expand_dims,
    flip,
    full,
    log,
    max,
    mean,
    min,
    moveaxis,
    ones_like,
    power,
    prod,
    reshape,
    shape,
    sort,
    sqrt,
    square,
    stack,
    sum,
    take,
    tensordot,
    trunc,
    where,
    zeros,
    zeros_like,
)
from .tf_names import in_top_k as _tf_in_top_k
from .tf_names import range as _tf_range
from .tf_names import scatter_nd as _scatter_nd
from .tf_names import slice as _tf_slice
from .tf_names import tensor_scatter_nd_add as _scatter_add
from .tf_names import tensor_scatter_nd_update as _scatter_update
from .tf_names import top_k as _tf_top_k


# ----- numpy names Keras 3 adds (keras.ops.numpy) -------------------------------------------------------
def _t(x):
    return x if isinstance(x, Tensor) else constant(x)


def _np(x):
    """The values of ``x`` for a result that is a constant although it depends on them: the read is recorded
    as an escape, so a tape that differentiates through it says the gradient is partial."""
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _peek(x):
    """The values of ``x`` for a test, a count or a position (no gradient by definition): not an escape."""
    return x._value if isinstance(x, Tensor) else np.asarray(x)


def _flags(values):
    """Booleans computed from the values: a test, not a function of them (no gradient, as in Keras)."""
    return constant(np.asarray(values, dtype=bool))


def isnan(x):
    """``keras.ops.isnan``: which entries are NaN (booleans, no gradient)."""
    return _flags(np.isnan(_peek(x)))


def isinf(x):
    """``keras.ops.isinf``: which entries are ±inf (booleans, no gradient)."""
    return _flags(np.isinf(_peek(x)))


def isfinite(x):
    """``keras.ops.isfinite``: which entries are neither NaN nor ±inf (booleans, no gradient)."""
    return _flags(np.isfinite(_peek(x)))


def isneginf(x):
    """``keras.ops.isneginf``: which entries are −inf."""
    return _flags(np.isneginf(_peek(x)))


def isposinf(x):
    """``keras.ops.isposinf``: which entries are +inf."""
    return _flags(np.isposinf(_peek(x)))


def isreal(x):
    """``keras.ops.isreal``: which entries have no imaginary part."""
    return _flags(np.isreal(_peek(x)))


def signbit(x):
    """``keras.ops.signbit``: which entries have the sign bit set (−0.0 included)."""
    return _flags(np.signbit(_peek(x)))


def logical_and(x1, x2):
    """``keras.ops.logical_and`` (booleans)."""
    return _flags(np.logical_and(_peek(x1), _peek(x2)))


def logical_or(x1, x2):
    """``keras.ops.logical_or`` (booleans)."""
    return _flags(np.logical_or(_peek(x1), _peek(x2)))


def logical_xor(x1, x2):
    """``keras.ops.logical_xor`` (booleans)."""
    return _flags(np.logical_xor(_peek(x1), _peek(x2)))


def logical_not(x):
    """``keras.ops.logical_not`` (booleans)."""
    return _flags(np.logical_not(_peek(x)))


def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """``keras.ops.isclose``: ``|x1 − x2| ≤ atol + rtol·|x2|`` entry by entry (booleans)."""
    return _flags(np.isclose(_peek(x1), _peek(x2), rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """``keras.ops.allclose``: whether every entry is close (one boolean)."""
    return _flags(np.allclose(_peek(x1), _peek(x2), rtol=rtol, atol=atol, equal_nan=equal_nan))


def isin(x1, x2, assume_unique=False, invert=False):
    """``keras.ops.isin``: which entries of ``x1`` occur in ``x2`` (booleans)."""
    return _flags(np.isin(_peek(x1), _peek(x2), assume_unique=assume_unique, invert=invert))


def _default_float(dtype):
    return "float32" if dtype is None else dtype


def arange(start, stop=None, step=None, dtype=None):
    """``keras.ops.arange``: ``start, start + step, …`` below ``stop`` (``arange(n)`` is ``0 … n−1``); int32
    when every bound is an integer, else float32, as Keras (numpy gives int64 / float64)."""
    return _tf_range(start, stop, 1 if step is None else step, dtype=dtype)


def full_like(x, fill_value, dtype=None):
    """``keras.ops.full_like``: ``x``'s shape (and dtype unless given), every entry ``fill_value``."""
    return full(shape(x), fill_value, dtype=dtype or _t(x).dtype)


def empty(shape, dtype=None):
    """``keras.ops.empty``: a tensor of that shape whose values are unspecified (zeros here), float32."""
    return zeros(shape, dtype=_default_float(dtype))


def empty_like(x, dtype=None):
    """``keras.ops.empty_like``: as :func:`empty`, shaped like ``x``."""
    return zeros_like(x, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """``keras.ops.tri``: ones on and below the ``k``-th diagonal of an ``N × M`` matrix, float32."""
    return constant(np.tri(N, M, k), dtype=_default_float(dtype))


def _spaced(values, dtype):
    return constant(values, dtype=_default_float(dtype))


def _steps(start, stop, num, endpoint, dtype):
    """``start + (stop − start)·t`` for ``num`` evenly spaced ``t`` in [0, 1] (or [0, 1) without ``endpoint``),
    differentiable in ``start`` and ``stop``; their float dtype, else float32."""
    a, b = _t(start), _t(stop)
    kinds = [v.dtype for v in (a, b) if v.dtype.kind == "f"]
    dt = dtype or (np.result_type(*kinds) if kinds and (isinstance(start, (Tensor, np.ndarray)) or
                                                       isinstance(stop, (Tensor, np.ndarray))) else "float32")
    a, b = cast(a, dt), cast(b, dt)
    t = np.arange(num) / ((num - 1) if endpoint and num > 1 else builtins.max(num, 1))
    t = constant(t.reshape((-1,) + (1,) * a.ndim).astype(dt))
    return a + (b - a) * t, dt


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``keras.ops.logspace``: ``base ** linspace(start, stop, num)``, differentiable in ``start`` and ``stop``."""
    e, dt = _steps(start, stop, num, endpoint, dtype)
    out = power(cast(constant(base), dt), e)
    return moveaxis(out, 0, axis) if axis else out


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``keras.ops.geomspace``: ``num`` numbers evenly spaced on a log scale from ``start`` to ``stop``,
    ``exp(linspace(log start, log stop))`` (positive bounds), differentiable in both."""
    arrays = [v for v in (start, stop) if isinstance(v, (Tensor, np.ndarray)) and v.dtype.kind == "f"]
    dt = dtype or (np.result_type(*[v.dtype for v in arrays]) if arrays else "float32")
    e, _ = _steps(log(cast(_t(start), dt)), log(cast(_t(stop), dt)), num, endpoint, dt)
    out = exp(e)
    return moveaxis(out, 0, axis) if axis else out


def bartlett(x):
    """``keras.ops.bartlett``: the Bartlett (triangular) window of ``x`` points (float32)."""
    return _spaced(np.bartlett(int(_peek(x))), None)


def blackman(x):
    """``keras.ops.blackman``: the Blackman window of ``x`` points (float32)."""
    return _spaced(np.blackman(int(_peek(x))), None)


def hamming(x):
    """``keras.ops.hamming``: the Hamming window of ``x`` points (float32)."""
    return _spaced(np.hamming(int(_peek(x))), None)


def hanning(x):
    """``keras.ops.hanning``: the Hann window of ``x`` points (float32)."""
    return _spaced(np.hanning(int(_peek(x))), None)


def kaiser(x, beta):
    """``keras.ops.kaiser``: the Kaiser window of ``x`` points with shape parameter ``beta`` (float32)."""
    return _spaced(np.kaiser(int(_peek(x)), float(_peek(beta))), None)


def average(x, axis=None, weights=None):
    """``keras.ops.average``: ``Σ w·x / Σ w`` along ``axis`` (the mean without weights); ``weights`` 1-D along
    ``axis`` or shaped like ``x``. Differentiable in ``x`` and in ``weights``."""
    x = _t(x)
    if weights is None:
        return mean(x, axis=axis)
    w = _t(weights)
    if axis is not None and w.ndim == 1 and x.ndim > 1:
        shape_ = [1] * x.ndim
        shape_[axis] = -1
        w = reshape(w, shape_)
    w = cast(w, x.dtype)
    return sum(x * w, axis=axis) / sum(w * ones_like(x), axis=axis)


def ptp(x, axis=None, keepdims=False):
    """``keras.ops.ptp``: ``max − min`` along ``axis`` ("peak to peak")."""
    return max(x, axis=axis, keepdims=keepdims) - min(x, axis=axis, keepdims=keepdims)


def quantile(x, q, axis=None, method="linear", keepdims=False):
    """``keras.ops.quantile``: the ``q``-th quantiles (``q`` in [0, 1], a number or 1-D) of ``x`` along
    ``axis`` (all entries when None), by sorting and interpolating between the two nearest order statistics
    (``method="linear"``; also ``lower``, ``higher``, ``nearest``, ``midpoint``). The result is a weighted sum
    of sorted entries, so ḡ goes to the one or two entries each quantile reads."""
    x = _t(x)
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        raise ValueError(f"quantile: method={method!r} is not one of linear, lower, higher, nearest, midpoint.")
    qs = np.asarray(_peek(q), dtype=np.float64)
    q_shape = qs.shape
    if (qs < 0).any() or (qs > 1).any():
        raise ValueError(f"quantile: q must be in [0, 1], got {qs.tolist()}.")
    flat = axis is None
    data = reshape(x, (-1,)) if flat else moveaxis(x, axis, -1)
    s = sort(data, axis=-1)
    n = s.shape[-1]
    pos = qs.reshape(-1) * (n - 1)
    lo, hi = np.floor(pos).astype(int), np.ceil(pos).astype(int)
    frac = pos - lo
    if method == "lower":
        hi, frac = lo, frac * 0
    elif method == "higher":
        lo, frac = hi, frac * 0
    elif method == "nearest":
        lo = hi = np.where(frac > 0.5, hi, np.where(frac < 0.5, lo, np.where(lo % 2 == 0, lo, hi)))
        frac = frac * 0
    elif method == "midpoint":
        frac = np.where(hi > lo, 0.5, 0.0)
    a, b = take(s, lo, axis=-1), take(s, hi, axis=-1)
    if method == "linear" and isinstance(q, Tensor) and q.dtype.kind == "f":    # ∂/∂q = (b − a)·(n − 1)
        frac_t = reshape(cast(q, s.dtype), (-1,)) * (n - 1) - constant(lo.astype(s.dtype))
    else:
        frac_t = constant(frac.astype(s.dtype))
    out = a + (b - a) * frac_t
    out = moveaxis(out, -1, 0)                       # the quantiles first, as numpy
    out = reshape(out, q_shape + tuple(out.shape[1:]))
    if keepdims:
        at = len(q_shape)
        if flat:
            out = reshape(out, out.shape[:at] + (1,) * x.ndim)
        else:
            out = expand_dims(out, at + (axis % x.ndim))
    return cast(out, x.dtype) if x.dtype.kind == "f" else out


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """``keras.ops.percentile``: :func:`quantile` with ``q`` in percent."""
    q = q / 100.0 if isinstance(q, Tensor) else np.asarray(_peek(q), dtype=np.float64) / 100.0
    return quantile(x, q, axis=axis, method=method, keepdims=keepdims)


def median(x, axis=None, keepdims=False):
    """``keras.ops.median``: the middle value (the mean of the two middle ones for an even count)."""
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


def fabs(x):
    """``keras.ops.fabs``: ``|x|`` as a float."""
    x = _t(x)
    return abs(x if x.dtype.kind == "f" else cast(x, "float32"))


def fmod(x1, x2):
    """``keras.ops.fmod``: the remainder with the sign of ``x1``, ``x1 − x2·trunc(x1/x2)`` (C's ``fmod``;
    ``mod`` takes the sign of ``x2``). ∂/∂x1 = 1, ∂/∂x2 = −trunc(x1/x2)."""
    return x1 - x2 * trunc(divide(x1, x2))


def heaviside(x1, x2):
    """``keras.ops.heaviside``: 0 where ``x1 < 0``, 1 where ``x1 > 0``, ``x2`` where ``x1 == 0`` (a step: its
    derivative in ``x1`` is 0 wherever it exists)."""
    x1 = _t(x1)
    return where(x1 < 0, zeros_like(x1), where(x1 > 0, ones_like(x1), cast(_t(x2), x1.dtype) * ones_like(x1)))


def ldexp(x1, x2):
    """``keras.ops.ldexp``: ``x1 · 2**x2`` (``x2`` integers)."""
    x1 = _t(x1)
    return x1 * power(cast(constant(2.0), x1.dtype), cast(_t(x2), x1.dtype))


def diagflat(x, k=0):
    """``keras.ops.diagflat``: ``x`` flattened onto the ``k``-th diagonal of a square matrix."""
    return diag(reshape(_t(x), (-1,)), k)


def vander(x, N=None, increasing=False):
    """``keras.ops.vander``: the Vandermonde matrix, columns ``x**(N−1) … x**0`` (reversed with
    ``increasing``)."""
    x = _t(x)
    n = x.shape[0] if N is None else int(N)
    exps = np.arange(n) if increasing else np.arange(n)[::-1]
    return power(expand_dims(x, -1), constant(exps.astype(x.dtype)))


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``keras.ops.trapezoid``: ∫ y by the trapezoidal rule along ``axis``, spacing ``dx`` or the points ``x``."""
    y = moveaxis(_t(y), axis, -1)
    avg = (y[..., 1:] + y[..., :-1]) / 2.0
    if x is None:
        return sum(avg, axis=-1) * dx
    d = diff(_t(x), axis=-1)
    return sum(avg * d, axis=-1)


def count_nonzero(x, axis=None):
    """``keras.ops.count_nonzero``: how many entries are not 0 (int32)."""
    return constant(np.count_nonzero(_peek(x), axis=axis), dtype="int32")


def _nan_filled(x, fill):
    x = _t(x)
    return where(isnan(x), constant(np.asarray(fill, dtype=x.dtype)), x)


def nansum(x, axis=None, keepdims=False):
    """``keras.ops.nansum``: the sum, NaN entries counted as 0 (they get no gradient)."""
    return sum(_nan_filled(x, 0), axis=axis, keepdims=keepdims)


def nanprod(x, axis=None, keepdims=False):
    """``keras.ops.nanprod``: the product, NaN entries counted as 1."""
    return prod(_nan_filled(x, 1), axis=axis, keepdims=keepdims)


def _count(x, axis, keepdims):
    return constant(np.sum(~np.isnan(_peek(x)), axis=axis, keepdims=keepdims).astype(_t(x).dtype))


def nanmean(x, axis=None, keepdims=False):
    """``keras.ops.nanmean``: the mean over the entries that are not NaN."""
    return nansum(x, axis=axis, keepdims=keepdims) / _count(x, axis, keepdims)


def nanvar(x, axis=None, keepdims=False):
    """``keras.ops.nanvar``: the variance (1/n) over the entries that are not NaN."""
    x = _t(x)
    m = nanmean(x, axis=axis, keepdims=True)
    return nansum(square(_nan_filled(x, 0) - m) * cast(logical_not(isnan(x)), x.dtype), axis=axis,
                  keepdims=keepdims) / _count(x, axis, keepdims)


def nanstd(x, axis=None, keepdims=False):
    """``keras.ops.nanstd``: √nanvar."""
    return sqrt(nanvar(x, axis=axis, keepdims=keepdims))


def nanmax(x, axis=None, keepdims=False):
    """``keras.ops.nanmax``: the maximum ignoring NaN (NaN where every entry is NaN)."""
    out = max(_nan_filled(x, -np.inf), axis=axis, keepdims=keepdims)
    return where(_t(_count(x, axis, keepdims)) == 0, constant(np.asarray(np.nan, out.dtype)), out)


def nanmin(x, axis=None, keepdims=False):
    """``keras.ops.nanmin``: the minimum ignoring NaN (NaN where every entry is NaN)."""
    out = min(_nan_filled(x, np.inf), axis=axis, keepdims=keepdims)
    return where(_t(_count(x, axis, keepdims)) == 0, constant(np.asarray(np.nan, out.dtype)), out)


def nanargmax(x, axis=None, keepdims=False):
    """``keras.ops.nanargmax``: the position of the maximum ignoring NaN (int32)."""
    return constant(np.nanargmax(_peek(x), axis=axis, keepdims=keepdims), dtype="int32")


def nanargmin(x, axis=None, keepdims=False):
    """``keras.ops.nanargmin``: the position of the minimum ignoring NaN (int32)."""
    return constant(np.nanargmin(_peek(x), axis=axis, keepdims=keepdims), dtype="int32")


def nancumsum(x, axis=None, dtype=None):
    """``keras.ops.nancumsum``: the running sum, NaN entries counted as 0."""
    out = cumsum(_nan_filled(x, 0), axis=axis)
    return out if dtype is None else cast(out, dtype)


def nancumprod(x, axis=None, dtype=None):
    """``keras.ops.nancumprod``: the running product, NaN entries counted as 1."""
    out = cumprod(_nan_filled(x, 1), axis=axis)
    return out if dtype is None else cast(out, dtype)


def nanmedian(x, axis=None, keepdims=False):
    """``keras.ops.nanmedian``: the median of the entries that are not NaN (numpy's, a constant)."""
    return constant(np.nanmedian(_np(x), axis=axis, keepdims=keepdims).astype(_t(x).dtype))


def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """``keras.ops.nanquantile``: the quantiles of the entries that are not NaN (numpy's, a constant)."""
    return constant(np.nanquantile(_np(x), _np(q), axis=axis, method=method, keepdims=keepdims)
                    .astype(_t(x).dtype))


def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """``keras.ops.nanpercentile``: :func:`nanquantile` with ``q`` in percent."""
    return nanquantile(x, np.asarray(_peek(q)) / 100.0, axis=axis, method=method, keepdims=keepdims)


def gcd(x1, x2):
    """``keras.ops.gcd``: the greatest common divisor of integers."""
    return constant(np.gcd(_np(x1), _np(x2)))


def lcm(x1, x2):
    """``keras.ops.lcm``: the least common multiple of integers."""
    return constant(np.lcm(_np(x1), _np(x2)))


def digitize(x, bins):
    """``keras.ops.digitize``: the index of the bin each entry falls in (int32)."""
    return constant(np.digitize(_peek(x), _peek(bins)), dtype="int32")


def bincount(x, weights=None, minlength=0, sparse=False):
    """``keras.ops.bincount``: how often each non-negative integer occurs (weighted sums with ``weights``)."""
    if sparse:
        raise ValueError("bincount: sparse=True is not supported: every tensor here is dense.")
    xs = _peek(x).astype(np.int64)
    w = None if weights is None else _peek(weights)
    if xs.ndim == 2:
        n = builtins.max(int(xs.max(initial=-1)) + 1, minlength)
        out = np.stack([np.bincount(r, None if w is None else wr, n) for r, wr in
                        zip(xs, w if w is not None else [None] * len(xs))])
        return constant(out if w is not None else out.astype(np.int32))
    out = np.bincount(xs, w, minlength)
    return constant(out if w is not None else out.astype(np.int32))


def histogram(x, bins=10, range=None):    # noqa: A002  (Keras' name)
    """``keras.ops.histogram``: ``(counts, bin edges)`` of ``x``'s entries (constants)."""
    counts, edges = np.histogram(_peek(x), bins=bins, range=range)
    return constant(counts.astype(np.int32)), constant(edges.astype(_t(x).dtype))


def nonzero(x):
    """``keras.ops.nonzero``: a tuple of int32 index arrays, one per axis, of the entries that are not 0."""
    return tuple(constant(i.astype(np.int32)) for i in np.nonzero(_peek(x)))


def unravel_index(indices, shape):
    """``keras.ops.unravel_index``: flat positions as a tuple of coordinate arrays (numpy's layout)."""
    idx = np.asarray(_peek(indices))
    return tuple(constant(i.astype(idx.dtype)) for i in np.unravel_index(idx, tuple(shape)))


def unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=False, axis=None,  # noqa: A002
           size=None, fill_value=None):
    """``keras.ops.unique``: the distinct values, sorted (numpy's ``unique``), with the optional first
    positions, inverse indices and counts; ``size`` pads with ``fill_value`` (or the smallest value)."""
    res = np.unique(_peek(x), return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis)
    parts = list(res) if isinstance(res, tuple) else [res]
    if size is not None:
        fill = parts[0].min() if fill_value is None else fill_value
        values = parts[0][:size]
        parts[0] = np.concatenate([values, np.full(size - len(values), fill, parts[0].dtype)])
    out = [constant(parts[0])] + [constant(p.astype(np.int32)) for p in parts[1:]]
    return out[0] if len(out) == 1 else tuple(out)


def argpartition(x, kth, axis=-1):
    """``keras.ops.argpartition``: positions that put the ``kth`` smallest entry where a sort would, smaller
    ones before it and larger after (int32; the order inside each side is unspecified)."""
    return constant(np.argpartition(_peek(x), kth, axis=axis).astype(np.int32))


def divide_no_nan(x1, x2):
    """``keras.ops.divide_no_nan``: ``x1 / x2``, and 0 where ``x2 == 0`` (with no NaN in the gradient: the
    denominator is replaced by 1 there before dividing)."""
    x2 = _t(x2)
    zero = x2 == 0
    safe = where(zero, ones_like(x2), x2)
    return where(zero, zeros_like(divide(x1, safe)), divide(x1, safe))


def get_item(x, key):
    """``keras.ops.get_item``: ``x[key]``."""
    return _t(x)[key]


def slice(inputs, start_indices, shape):    # noqa: A001  (Keras' name)
    """``keras.ops.slice``: the block of size ``shape`` starting at ``start_indices``."""
    return _tf_slice(inputs, start_indices, shape)


def slice_update(inputs, start_indices, updates):
    """``keras.ops.slice_update``: ``inputs`` with the block at ``start_indices`` replaced by ``updates`` (a new
    tensor; ḡ goes to ``updates`` inside the block and to ``inputs`` outside it)."""
    x, u = _t(inputs), _t(updates)
    start = [int(v) for v in np.atleast_1d(_peek(start_indices))]
    grid = np.stack(np.meshgrid(*[np.arange(s, s + n) for s, n in zip(start, u.shape)], indexing="ij"), -1)
    return _scatter_update(x, constant(grid.astype(np.int64)), cast(u, x.dtype))


def scatter(indices, values, shape):
    """``keras.ops.scatter``: a zero tensor of ``shape`` with ``values`` added at ``indices`` (TensorFlow's
    ``scatter_nd``: repeated indices add up)."""
    return _scatter_nd(indices, values, shape)


def scatter_update(inputs, indices, updates, reduction=None):
    """``keras.ops.scatter_update``: ``inputs`` with ``updates`` written at ``indices`` (``reduction="add"``
    adds them instead)."""
    if reduction in (None, "none"):
        return _scatter_update(inputs, indices, updates)
    if reduction == "add":
        return _scatter_add(inputs, indices, updates)
    raise ValueError(f"scatter_update: reduction={reduction!r} is not supported here; use None or 'add'.")


def top_k(x, k, sorted=True):    # noqa: A002  (Keras' name)
    """``keras.ops.top_k``: ``(values, indices)`` of the ``k`` largest entries of each row (last axis)."""
    return _tf_top_k(x, k=k, sorted=sorted)


def in_top_k(targets, predictions, k):
    """``keras.ops.in_top_k``: whether each row's target is among its ``k`` largest predictions."""
    return _tf_in_top_k(targets, predictions, k)


def _segments(data, segment_ids, num_segments):
    ids = _peek(segment_ids).astype(np.int64)
    n = int(ids.max(initial=-1)) + 1 if num_segments is None else int(num_segments)
    return _t(data), ids, n


def segment_sum(data, segment_ids, num_segments=None, sorted=False):    # noqa: A002
    """``keras.ops.segment_sum``: the sum of the rows of ``data`` that share a segment id (rows with an id
    outside ``[0, num_segments)`` are dropped). A one-hot matrix product, so ḡ reaches every row."""
    x, ids, n = _segments(data, segment_ids, num_segments)
    hot = constant((ids[None, :] == np.arange(n)[:, None]).astype(x.dtype))
    return tensordot(hot, x, axes=1)


def _segment_extreme(data, segment_ids, num_segments, pick, empty, neutral=None):
    """``pick`` (max, min, prod) over each segment's rows: the rows outside a segment are filled with a value
    that cannot win (``neutral``: the data's own extreme, so no infinity enters the gradient), and a segment
    with no row gets ``empty``."""
    x, ids, n = _segments(data, segment_ids, num_segments)
    member = (ids[None, :] == np.arange(n)[:, None]).reshape((n, len(ids)) + (1,) * (x.ndim - 1))
    fill = empty if neutral is None else neutral(_peek(x)) if x.size else empty
    filled = where(constant(np.broadcast_to(member, (n,) + x.shape)),
                   expand_dims(x, 0) + zeros((n,) + x.shape, dtype=x.dtype), constant(np.asarray(fill, x.dtype)))
    out = pick(filled, axis=1)
    none = ~member.reshape(n, -1).any(axis=1)
    if not none.any():
        return out
    return where(constant(none.reshape((n,) + (1,) * (out.ndim - 1))), constant(np.asarray(empty, x.dtype)), out)


def segment_max(data, segment_ids, num_segments=None, sorted=False):    # noqa: A002
    """``keras.ops.segment_max``: the maximum over the rows that share a segment id (the dtype's lowest value
    for an empty segment, as TensorFlow); ḡ goes to the row that holds each maximum."""
    return _segment_extreme(data, segment_ids, num_segments, max, np.finfo(_t(data).dtype).min, np.min)


def segment_min(data, segment_ids, num_segments=None, sorted=False):    # noqa: A002
    """``keras.ops.segment_min``: the minimum over the rows that share a segment id (the dtype's highest
    value for an empty segment)."""
    return _segment_extreme(data, segment_ids, num_segments, min, np.finfo(_t(data).dtype).max, np.max)


def segment_prod(data, segment_ids, num_segments=None, sorted=False):    # noqa: A002
    """``keras.ops.segment_prod``: the product over the rows that share a segment id (1 for an empty one)."""
    return _segment_extreme(data, segment_ids, num_segments, prod, 1.0)


def extract_sequences(x, sequence_length, sequence_stride):
    """``keras.ops.extract_sequences``: overlapping frames of the last axis, shape ``(…, frames,
    sequence_length)`` (indexing: ḡ of overlapping frames adds up)."""
    x = _t(x)
    n = (x.shape[-1] - sequence_length) // sequence_stride + 1
    idx = np.arange(n)[:, None] * sequence_stride + np.arange(sequence_length)[None, :]
    return take(x, constant(idx), axis=-1)


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """``keras.ops.multi_hot``: for each row of class indices, 1 at every class present (float32)."""
    if sparse:
        raise ValueError("multi_hot: sparse=True is not supported: every tensor here is dense.")
    num_classes = kwargs.pop("num_tokens", num_classes)
    ids = _peek(inputs).astype(np.int64)
    rows = ids.reshape(1, -1) if ids.ndim <= 1 else ids.reshape(-1, ids.shape[-1])
    out = np.zeros((rows.shape[0], int(num_classes)), dtype=_default_float(dtype))
    for r, row in enumerate(rows):
        out[r, row[(row >= 0) & (row < num_classes)]] = 1
    out = out[0] if ids.ndim <= 1 else out.reshape(ids.shape[:-1] + (int(num_classes),))
    return constant(np.moveaxis(out, -1, axis) if axis != -1 else out)


def is_tensor(x):
    """``keras.ops.is_tensor``: whether ``x`` is a tensor of this package."""
    return isinstance(x, Tensor)


def dtype(x):
    """``keras.ops.dtype``: the dtype's name, as Keras standardises it (``"float32"``)."""
    return str(_t(x).dtype)


# ----- control flow (keras.ops.core) -------------------------------------------------------------------
def fori_loop(lower, upper, body_fun, init_val):
    """``keras.ops.fori_loop``: ``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (recorded op by
    op, so the gradient flows through every step)."""
    val = init_val
    for i in range(int(_peek(lower)), int(_peek(upper))):
        val = body_fun(i, val)
    return val


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``keras.ops.scan`` (JAX's ``lax.scan``): ``carry, y = f(carry, x)`` over the first axis of ``xs``;
    returns ``(final carry, stacked ys)``. Not TensorFlow's ``tf.scan`` (``adv.scan``)."""
    n = length if xs is None else _t(xs).shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, []
    for i in order:
        carry, y = f(carry, None if xs is None else _t(xs)[i])
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    return carry, (stack(ys) if ys and ys[0] is not None else None)


def map(f, xs):    # noqa: A001  (Keras' name)
    """``keras.ops.map``: ``f`` applied to each slice of ``xs`` along the first axis, stacked."""
    x = _t(xs)
    return stack([f(x[i]) for i in range(x.shape[0])])


def switch(index, branches, *operands):
    """``keras.ops.switch``: ``branches[index](*operands)`` (``index`` clamped into range, as Keras)."""
    i = int(np.clip(int(_peek(index)), 0, len(branches) - 1))
    return branches[i](*operands)


def associative_scan(f, elems, reverse=False, axis=0):
    """``keras.ops.associative_scan``: the running ``f``-combination along ``axis`` (``f = add`` gives a
    cumulative sum), computed left to right."""
    x = moveaxis(_t(elems), axis, 0)
    idx = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    out, acc = [], None
    for i in idx:
        acc = x[i] if acc is None else f(acc, x[i])
        out.append(acc)
    if reverse:
        out = out[::-1]
    return moveaxis(stack(out), 0, axis)


# ----- more numpy names: copies, real parts, correlations -------------------------------------------------
def array(x, dtype=None):
    """``keras.ops.array``: a tensor holding ``x`` (cast to ``dtype`` when given)."""
    t = _t(x)
    return t if dtype is None else cast(t, dtype)


def copy(x):
    """``keras.ops.copy``: a new tensor with ``x``'s values (the gradient passes straight through)."""
    return _t(x)[...]


def real(x):
    """``keras.ops.real``: the real part — ``x`` itself, as every tensor here is real."""
    return _t(x)


def imag(x):
    """``keras.ops.imag``: the imaginary part — zeros, as every tensor here is real."""
    return zeros_like(x)


def conj(x):
    """``keras.ops.conj``: the complex conjugate — ``x`` itself, as every tensor here is real."""
    return _t(x)


conjugate = conj


def angle(x):
    """``keras.ops.angle``: the argument of each entry — π for negative reals, 0 otherwise (float)."""
    t = _t(x)
    t = t if t.dtype.kind == "f" else cast(t, "float32")
    return where(t < 0, zeros_like(t) + np.pi, zeros_like(t))


def nextafter(x1, x2):
    """``keras.ops.nextafter``: the next representable float after ``x1`` towards ``x2`` (a constant)."""
    a = _peek(x1)
    return constant(np.nextafter(a, np.asarray(_peek(x2), dtype=np.asarray(a).dtype)))


def corrcoef(x):
    """``keras.ops.corrcoef``: the Pearson correlations between the rows of ``x``,
    ``cov(i, j) / √(cov(i, i)·cov(j, j))`` (differentiable)."""
    t = _t(x)
    t = t if t.dtype.kind == "f" else cast(t, "float32")
    centred = t - mean(t, axis=-1, keepdims=True)
    cov = tensordot(centred, moveaxis(centred, -1, 0), axes=1)
    d = sqrt(diag(cov))
    return cov / (expand_dims(d, -1) * expand_dims(d, 0))


def correlate(x1, x2, mode="valid"):
    """``keras.ops.correlate``: numpy's 1-D cross-correlation ``c[k] = Σ_n x1[n + k]·x2[n]`` for the shifts
    of ``mode`` (``valid``, ``same``, ``full``), as a stack of dot products (differentiable in both)."""
    a, v = _t(x1), _t(x2)
    n, m = a.shape[0], v.shape[0]
    if n < m:
        return flip(correlate(v, a, mode), axis=0)
    if mode == "valid":
        lo, hi = 0, n - m
    elif mode == "full":
        lo, hi = -(m - 1), n - 1
    elif mode == "same":
        lo = -((m - 1) // 2)
        hi = lo + n - 1
    else:
        raise ValueError(f"correlate: mode must be 'valid', 'same' or 'full', got {mode!r}.")
    out = []
    for k in range(lo, hi + 1):
        i0, i1 = builtins.max(k, 0), builtins.min(k + m, n)
        out.append(sum(a[i0:i1] * v[i0 - k:i1 - k]))
    return stack(out)
