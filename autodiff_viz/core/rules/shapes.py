"""Shape rules: reshape, transpose, concatenate, stack, indexing (a gather), padding, and the rest of numpy's.

Their VJPs move the gradient back to where each entry came from (a scatter for a gather, the inverse permutation
for a transpose); no entry is scaled.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import lift, unbroadcast
from .elementwise import where
from .table import _alias, _batch, _shift, define

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
    x=("ḡ placed back where y was read from x (zeros elsewhere)",
       lambda g, y, x, index, lead: scatter(g, index=index, shape=x.shape[lead:], lead=g.ndim - y.ndim + lead),
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
