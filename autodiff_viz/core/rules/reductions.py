"""Reductions and scans: sum, mean, max/min, prod, var/std, norms, logsumexp, cumsum/cumprod, sort (axis: negative).

A reduction's VJP spreads ḡ back over the axes it summed (``keepdims`` shape, then broadcast); max/min route it
to where the extreme value was.
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _raw, abs, cast, exp, sign, where
from .shapes import _inverse, broadcast_to, concatenate, getitem, transpose
from .table import _batch, _keepdims_shape, _shift, define


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
       lambda g, y, x, axis, keepdims: g.reshape(_batch(g, y) + _keepdims_shape(x.shape, axis))
       * _lse_weights(y, x, axis),
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
# The numpy surface: reductions and scans (axis: a tuple of negative axes)
# ---------------------------------------------------------------------------
def _centered(x, axis):
    return x - mean(x, axis=axis, keepdims=True)


var = define(
    "var", lambda x, axis, ddof, keepdims: np.var(x, axis=axis, ddof=ddof, keepdims=keepdims),
    doc="y = Σ(x − x̄)²/(n − ddof) over axis",
    x=("2(x − x̄)/(n − ddof)",
       lambda g, y, x, axis, ddof, keepdims: _spread(g, y, x, axis)
       * (_centered(x, axis) * (2.0 / (_count(x, axis) - ddof))),
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
