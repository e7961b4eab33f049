"""TensorFlow's ops that numpy has no name for: ``tf.range``, ``tf.gather``, ``tf.boolean_mask``, ``tf.meshgrid`` …

Each means what TensorFlow means (arguments, defaults, dtypes) and is written with the package's own ops,
so it is recorded, drawn and differentiated like them: ``gather`` is a ``take`` on the graph,
``tensor_scatter_nd_update`` a ``where`` over a ``scatter``. A name numpy also has keeps numpy's meaning at
the top level (``adv.split``, ``adv.where``); TensorFlow's meaning of such a name is documented as a difference
in ``docs/tf-coverage.md``.

Values that are integers or booleans by nature (``range``, ``sequence_mask``, ``unique``'s indices) are
constants: no gradient flows through an index, as in TensorFlow.
"""
from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from .. import rules as R
from ..engine import call
from ..rules import special as RS
from ..tensor import Tensor
from .common import _tensor
from .elementwise import _unary_op, maximum, minimum, multiply, subtract, trunc, where
from .reductions import sum as _sum
from .shapes import (
    broadcast_to,
    cast,
    concatenate,
    flip,
    getitem,
    identity,
    reshape,
    stack,
    stop_gradient,
    take,
    take_along_axis,
)


def _values(x):
    """The numpy value of a tensor, array, list or number (for indices, masks and shapes)."""
    return x._value if isinstance(x, Tensor) else np.asarray(x)


def _const(value, dtype=None) -> Tensor:
    return Tensor._wrap(np.asarray(value, dtype=dtype))


# ----- new tensors -------------------------------------------------------------------------------------------
def range(start, limit=None, delta=1, dtype=None, name=None):    # noqa: A001  (TensorFlow's name)
    """``tf.range``: ``start, start + delta, …`` up to (not including) ``limit``; ``range(n)`` is ``0 … n−1``.

    TensorFlow's dtypes: int32 when every bound is a Python int, float32 when one is a float (numpy's
    ``arange`` would give int64 / float64); a tensor bound gives its own dtype. A constant (no gradient).
    """
    if limit is None:
        start, limit = 0, start
    bounds = [_values(v) for v in (start, limit, delta)]
    if dtype is None:
        tensors = [v._value.dtype for v in (start, limit, delta) if isinstance(v, Tensor)]
        if tensors:
            dtype = np.result_type(*tensors)
        else:
            dtype = np.float32 if builtins.any(np.asarray(b).dtype.kind == "f" for b in bounds) else np.int32
    if np.asarray(bounds[2]) == 0:
        raise ValueError("range: delta is 0, so the range would never reach limit; give a nonzero step.")
    lo, hi, step = (np.asarray(b).item() for b in bounds)
    n = builtins.max(0, int(np.ceil((hi - lo) / step)))
    dt = np.dtype(dtype)
    if dt.kind == "f":          # start + i·delta in the dtype itself, as TensorFlow's kernel: the same floats
        return _const(dt.type(lo) + np.arange(n, dtype=dt) * dt.type(step))
    return _const(np.arange(lo, hi, step).astype(dt))


def fill(dims, value, name=None):
    """``tf.fill(dims, value)``: a tensor of shape ``dims`` holding ``value`` in ``value``'s dtype
    (a Python float gives float32, an int int32, as TensorFlow)."""
    v = _values(value)
    if not isinstance(value, (Tensor, np.ndarray)):
        v = np.asarray(value, dtype=np.float32 if isinstance(value, float) else
                       np.int32 if isinstance(value, int) and not isinstance(value, bool) else None)
    shape = tuple(int(d) for d in np.atleast_1d(_values(dims))) if np.ndim(_values(dims)) else (int(_values(dims)),)
    if isinstance(value, Tensor):
        return broadcast_to(value, shape)
    return _const(np.full(shape, v, dtype=v.dtype))


def meshgrid(*args, indexing="xy", name=None):
    """``tf.meshgrid`` (= ``np.meshgrid``): coordinate grids from 1-D tensors; ``indexing="xy"`` (the default)
    swaps the first two axes, ``"ij"`` keeps the inputs' order. Each output is a broadcast of its input, so
    the gradient sums back along the copies."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}.")
    xs = [reshape(_tensor(a), (-1,)) for a in args]
    sizes = [x.shape[0] for x in xs]
    where_axis = list(builtins.range(len(xs)))
    if indexing == "xy" and len(xs) >= 2:
        where_axis[0], where_axis[1] = 1, 0
    out_shape = [0] * len(xs)
    for i, ax in enumerate(where_axis):
        out_shape[ax] = sizes[i]
    grids = []
    for x, ax in zip(xs, where_axis):
        shape = [1] * len(xs)
        shape[ax] = -1
        grids.append(broadcast_to(reshape(x, tuple(shape)), tuple(out_shape)))
    return grids


def sequence_mask(lengths, maxlen=None, dtype=bool, name=None):
    """``tf.sequence_mask``: ``mask[..., j] = j < lengths[...]``, ``maxlen`` columns (the largest length
    when None). A constant."""
    n = _values(lengths)
    m = int(n.max()) if maxlen is None else int(_values(maxlen))
    return _const((np.arange(m) < n[..., None]).astype(dtype))


def size(input, out_type=np.int32, name=None):    # noqa: A002
    """``tf.size``: the number of entries, as a 0-d int32 tensor."""
    return _const(np.size(_values(input)), np.dtype(out_type))


def rank(input, name=None):    # noqa: A002
    """``tf.rank``: the number of axes, as a 0-d int32 tensor."""
    return _const(np.ndim(_values(input)), np.int32)


def shape_n(input, out_type=np.int32, name=None):    # noqa: A002
    """``tf.shape_n``: the shape of each tensor of a list, as int32 tensors."""
    return [_const(np.shape(_values(x)), np.dtype(out_type)) for x in input]


def broadcast_static_shape(shape_x, shape_y):
    """``tf.broadcast_static_shape``: the shape two shapes broadcast to, as a tuple."""
    return tuple(np.broadcast_shapes(tuple(shape_x), tuple(shape_y)))


def broadcast_dynamic_shape(shape_x, shape_y):
    """``tf.broadcast_dynamic_shape``: the same, as an int32 tensor."""
    return _const(np.broadcast_shapes(tuple(int(s) for s in _values(shape_x)),
                                      tuple(int(s) for s in _values(shape_y))), np.int32)


# ----- gathering and masking -----------------------------------------------------------------------------
def _indices(indices, op):
    idx = _values(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers, got dtype {idx.dtype}. Fix: adv.cast(indices, 'int32').")
    return idx


def _batch_grids(idx_shape, batch_dims):
    """Index arrays for the leading ``batch_dims`` axes, shaped to broadcast against the gathered indices."""
    lead = idx_shape[:batch_dims]
    grids = np.indices(lead, sparse=True) if lead else ()
    pad = (1,) * (len(idx_shape) - batch_dims)
    return tuple(g.reshape(g.shape + pad) for g in grids)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """``tf.gather``: the slices of ``params`` at ``indices`` along ``axis`` (0 by default; ``batch_dims`` when
    given). Recorded as ``take``: the gradient adds ḡ back at each gathered slice (repeats add up).

    ``batch_dims=b`` pairs the first ``b`` axes of ``params`` and ``indices`` (one index list per example).
    """
    x = _tensor(params)
    idx = _indices(indices, "gather")
    b = batch_dims % idx.ndim if batch_dims < 0 else batch_dims
    ax = b if axis is None else axis % x.ndim
    if b == 0:
        return take(x, idx, axis=ax)
    if ax != b:
        raise NotImplementedError(f"gather: batch_dims={batch_dims} with axis={axis} is not supported here (only "
                                  "axis == batch_dims); move the gathered axis next to the batch axes with "
                                  "adv.moveaxis first.")
    grids = _batch_grids(idx.shape, b)
    return getitem(x, grids + (idx,))


def gather_nd(params, indices, batch_dims=0, name=None):
    """``tf.gather_nd``: ``indices[..., :]`` are index tuples into ``params``' first axes (after ``batch_dims``);
    the result has shape ``indices.shape[:-1] + params.shape[batch_dims + k:]``. Recorded as indexing."""
    x = _tensor(params)
    idx = _indices(indices, "gather_nd")
    grids = _batch_grids(idx.shape[:-1], batch_dims)
    return getitem(x, grids + tuple(np.moveaxis(idx, -1, 0)))


def boolean_mask(tensor, mask, axis=None, name=None):
    """``tf.boolean_mask``: the entries of ``tensor`` where ``mask`` is true (nonzero), ``mask`` covering the
    axes ``axis … axis + mask.ndim − 1`` (0 by default). The result's axes there become one axis, as
    numpy's ``x[mask]``; a float mask (``tf.one_hot(y, 3)``) counts its nonzero entries, as TensorFlow."""
    x = _tensor(tensor)
    m = _values(mask).astype(bool)
    ax = 0 if axis is None else axis % x.ndim
    if x.shape[ax:ax + m.ndim] != m.shape:
        raise ValueError(f"boolean_mask: mask of shape {m.shape} does not match tensor of shape {x.shape} at axes "
                         f"{ax}…{ax + m.ndim - 1}; the mask must have exactly those sizes.")
    return getitem(x, (builtins.slice(None),) * ax + (m,))


def unstack(value, num=None, axis=0, name=None):
    """``tf.unstack``: the slices along ``axis`` as a list (each recorded as indexing)."""
    x = _tensor(value)
    ax = axis % x.ndim
    if num is not None and num != x.shape[ax]:
        raise ValueError(f"unstack: num={num} but axis {axis} of shape {x.shape} has {x.shape[ax]} entries.")
    return [getitem(x, (builtins.slice(None),) * ax + (i,)) for i in builtins.range(x.shape[ax])]


def reverse(tensor, axis, name=None):
    """``tf.reverse(x, axis)``: ``x`` reversed along each axis of the list, as ``adv.flip``."""
    return flip(tensor, axis=tuple(int(a) for a in np.atleast_1d(_values(axis))))


def slice(input_, begin, size, name=None):    # noqa: A001  (TensorFlow's name)
    """``tf.slice``: the block that starts at ``begin`` and has ``size`` entries per axis (−1: to the end)."""
    x = _tensor(input_)
    b, s = [int(v) for v in np.atleast_1d(_values(begin))], [int(v) for v in np.atleast_1d(_values(size))]
    return getitem(x, tuple(builtins.slice(i, None if n == -1 else i + n) for i, n in zip(b, s)))


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    """``tf.strided_slice``: ``x[begin:end:strides]`` per axis; bit ``i`` of ``begin_mask``/``end_mask`` leaves
    that bound open, of ``shrink_axis_mask`` takes the single entry ``begin[i]`` (dropping the axis)."""
    if ellipsis_mask or new_axis_mask:
        raise NotImplementedError("strided_slice: ellipsis_mask and new_axis_mask are not supported; write the "
                                  "index directly: x[..., 1:3] or x[:, None].")
    x = _tensor(input_)
    b, e = np.atleast_1d(_values(begin)), np.atleast_1d(_values(end))
    st = np.ones_like(b) if strides is None else np.atleast_1d(_values(strides))
    index = []
    for i, (lo, hi, step) in enumerate(zip(b, e, st)):
        if shrink_axis_mask >> i & 1:
            index.append(int(lo))
        else:
            index.append(builtins.slice(None if begin_mask >> i & 1 else int(lo),
                                        None if end_mask >> i & 1 else int(hi), int(step)))
    return getitem(x, tuple(index))


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=0, name=None):    # noqa: A002
    """``tf.reverse_sequence``: in example ``b``, the first ``seq_lengths[b]`` entries along ``seq_axis`` are
    reversed and the rest kept. A gather (``take_along_axis``), so the gradient is the same reordering."""
    x = _tensor(input)
    if seq_axis is None:
        raise TypeError("reverse_sequence: seq_axis is required (the time axis, e.g. seq_axis=1).")
    sa, ba = seq_axis % x.ndim, batch_axis % x.ndim
    lengths = _values(seq_lengths).astype(np.int64)
    t = np.arange(x.shape[sa])
    shape_b = [1] * x.ndim
    shape_b[ba] = -1
    shape_t = [1] * x.ndim
    shape_t[sa] = -1
    n, t = lengths.reshape(shape_b), t.reshape(shape_t)
    src = np.where(t < n, n - 1 - t, t)
    return take_along_axis(x, np.broadcast_to(src, x.shape), axis=sa)


def _flat_positions(indices, shape, op):
    """``indices[..., :k]`` as flat positions into the first ``k`` axes of ``shape`` (checked in range)."""
    idx = _indices(indices, op)
    k = idx.shape[-1]
    lead = tuple(shape[:k])
    if np.any(idx < 0) or np.any(idx >= np.asarray(lead)):
        raise IndexError(f"{op}: an index in indices is out of range for the axes {lead} it indexes.")
    return idx, np.ravel_multi_index(tuple(np.moveaxis(idx, -1, 0)), lead) if k else np.zeros(idx.shape[:-1], int)


def scatter_nd(indices, updates, shape, name=None):
    """``tf.scatter_nd``: zeros of ``shape`` with ``updates`` added at ``indices`` (repeated indices add up).
    Recorded as ``scatter``, the transpose of indexing: the gradient to ``updates`` gathers ḡ back."""
    shape = tuple(int(s) for s in np.atleast_1d(_values(shape)))
    idx, _ = _flat_positions(indices, shape, "scatter_nd")
    return call(R.scatter, _tensor(updates), index=tuple(np.moveaxis(idx, -1, 0)), shape=shape, lead=0)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """``tf.tensor_scatter_nd_update``: a copy of ``tensor`` with the entries (or slices) at ``indices``
    replaced by ``updates``. Where an index repeats, the last update wins. ``where(written, scattered,
    tensor)`` on the graph: the gradient to ``tensor`` is ḡ where nothing was written, 0 where it was."""
    x = _tensor(tensor)
    upd = _tensor(updates)
    idx, flat = _flat_positions(indices, x.shape, "tensor_scatter_nd_update")
    flat = flat.reshape(-1)
    keep = np.sort(len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1])    # the last of each repeat
    duplicates = None
    if len(keep) != len(flat):
        duplicates = (idx, cast(upd, x.dtype))
        slice_shape = tuple(upd.shape[idx.ndim - 1:])
        idx = idx.reshape(-1, idx.shape[-1])[keep]
        upd = take(reshape(upd, (len(flat),) + slice_shape), keep, axis=0)
    written = np.zeros(x.shape, dtype=bool)
    written[tuple(np.moveaxis(idx, -1, 0))] = True
    placed = scatter_nd(idx, cast(upd, x.dtype), x.shape)
    if duplicates is not None:      # TensorFlow's gradient gathers ḡ for every update, the overwritten ones too
        every = scatter_nd(*duplicates, x.shape)
        placed = stop_gradient(placed) + every - stop_gradient(every)
    return where(written, placed, x)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """``tf.tensor_scatter_nd_add``: ``tensor`` plus ``updates`` added at ``indices`` (repeats add up)."""
    x = _tensor(tensor)
    return x + scatter_nd(indices, cast(_tensor(updates), x.dtype), x.shape)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """``tf.tensor_scatter_nd_sub``: ``tensor`` minus ``updates`` at ``indices``."""
    x = _tensor(tensor)
    return x - scatter_nd(indices, cast(_tensor(updates), x.dtype), x.shape)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """``tf.tensor_scatter_nd_max``: at ``indices``, the larger of the entry and the update."""
    x = _tensor(tensor)
    return tensor_scatter_nd_update(x, indices, maximum(gather_nd(x, indices), cast(_tensor(updates), x.dtype)))


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """``tf.tensor_scatter_nd_min``: at ``indices``, the smaller of the entry and the update."""
    x = _tensor(tensor)
    return tensor_scatter_nd_update(x, indices, minimum(gather_nd(x, indices), cast(_tensor(updates), x.dtype)))


def dynamic_partition(data, partitions, num_partitions, name=None):
    """``tf.dynamic_partition``: ``[data[partitions == i] for i in range(num_partitions)]``."""
    p = _values(partitions)
    return [boolean_mask(data, p == i) for i in builtins.range(num_partitions)]


def dynamic_stitch(indices, data, name=None):
    """``tf.dynamic_stitch``: ``merged[indices[m][i]] = data[m][i]``; where an index repeats, the last wins."""
    flat_idx = np.concatenate([_values(i).reshape(-1) for i in indices])
    pieces = [_tensor(d) for d in data]
    inner = pieces[0].shape[_values(indices[0]).ndim:]
    rows = [reshape(d, (-1,) + tuple(inner)) for d in pieces]
    joined = rows[0] if len(rows) == 1 else concatenate(rows, axis=0)
    n = int(flat_idx.max()) + 1 if flat_idx.size else 0
    last = np.full(n, -1)
    last[flat_idx] = np.arange(flat_idx.size)     # numpy keeps the last write
    if np.any(last < 0):
        raise ValueError("dynamic_stitch: the indices leave gaps; every position 0 … max must be written.")
    return take(joined, last, axis=0)


def unique(x, out_idx=np.int32, name=None):
    """``tf.unique``: the distinct values **in order of first appearance** (numpy's ``unique`` sorts) and, for
    each entry of ``x``, the position of its value there. Constants (no gradient through ``unique``)."""
    y, idx, _ = _unique(x, out_idx)
    return namedtuple("Unique", "y idx")(y, idx)


def unique_with_counts(x, out_idx=np.int32, name=None):
    """``tf.unique_with_counts``: as :func:`unique`, and how often each value occurs."""
    return namedtuple("UniqueWithCounts", "y idx count")(*_unique(x, out_idx))


def _unique(x, out_idx):
    v = _values(x)
    values, first, inverse, counts = np.unique(v, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(len(order))
    return (_const(values[order]), _const(rank_of[inverse.reshape(-1)], np.dtype(out_idx)),
            _const(counts[order], np.dtype(out_idx)))


def unravel_index(indices, dims, name=None):
    """``tf.unravel_index``: flat positions as coordinates, shape ``[len(dims)] + indices.shape``."""
    idx = _values(indices)
    return _const(np.stack(np.unravel_index(idx, tuple(int(d) for d in _values(dims)))), idx.dtype)


def searchsorted(sorted_sequence, values, side="left", out_type=np.int32, name=None):
    """``tf.searchsorted``: for each value, where it would go in its row of ``sorted_sequence`` (last axis)."""
    seq, val = _values(sorted_sequence), _values(values)
    if seq.ndim == 1:
        return _const(np.searchsorted(seq, val, side=side), np.dtype(out_type))
    rows = [np.searchsorted(s, v, side=side) for s, v in zip(seq.reshape(-1, seq.shape[-1]),
                                                               val.reshape(-1, val.shape[-1]))]
    return _const(np.stack(rows).reshape(val.shape), np.dtype(out_type))


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=np.int32, name=None):
    """``tf.histogram_fixed_width_bins``: the bin of each value among ``nbins`` equal bins over ``value_range``
    (values outside go to the first or last bin)."""
    v, (lo, hi) = _values(values), _values(value_range)
    bins = np.floor((v - lo) / (hi - lo) * nbins)
    return _const(np.clip(bins, 0, nbins - 1), np.dtype(dtype))


def histogram_fixed_width(values, value_range, nbins=100, dtype=np.int32, name=None):
    """``tf.histogram_fixed_width``: how many values fall in each of ``nbins`` equal bins (ends included)."""
    bins = histogram_fixed_width_bins(values, value_range, nbins)._value
    return _const(np.bincount(bins.reshape(-1), minlength=nbins), np.dtype(dtype))


# ----- arithmetic under TensorFlow's names ---------------------------------------------------------------
def truncatediv(x, y, name=None):
    """``tf.truncatediv``: ``x / y`` rounded towards zero (C's integer division; ``//`` rounds down)."""
    a, b = _values(x), _values(y)
    return _const(np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b)))


def truncatemod(x, y, name=None):
    """``tf.truncatemod``: the remainder of :func:`truncatediv`, with the sign of ``x`` (C's ``%``; numpy's
    ``fmod``). On floats it is ``x − trunc(x/y)·y``, differentiable in both (the quotient held fixed)."""
    a = _tensor(x)
    if a.dtype.kind in "iu":
        return _const(np.fmod(a._value, _values(y)))
    return subtract(a, multiply(stop_gradient(trunc(a / y)), y))


def saturate_cast(value, dtype, name=None):
    """``tf.saturate_cast``: ``value`` clipped to ``dtype``'s range, then cast (no wrap-around)."""
    x, dt = _tensor(value), np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = minimum(maximum(x, info.min), info.max)
    return cast(x, dt)


def scalar_mul(scalar, x, name=None):
    """``tf.scalar_mul``: ``scalar · x``."""
    return multiply(_tensor(x), scalar)


def parallel_stack(values, name=None):
    """``tf.parallel_stack``: as ``adv.stack(values)`` (everything runs eagerly)."""
    return stack(values)


def identity_n(input, name=None):    # noqa: A002
    """``tf.identity_n``: a recorded copy of each tensor of a list."""
    return [identity(x) for x in input]


def ensure_shape(x, shape, name=None):
    """``tf.ensure_shape``: ``x`` itself, after checking its shape against ``shape`` (None matches any size)."""
    t = _tensor(x)
    want = tuple(shape)
    if len(want) != t.ndim or builtins.any(w is not None and w != s for w, s in zip(want, t.shape)):
        raise ValueError(f"ensure_shape: the tensor has shape {t.shape}, expected {want} (None: any size).")
    return t


TopKV2 = namedtuple("TopKV2", "values indices")


def top_k(input, k=1, sorted=True, index_type=np.int32, name=None):    # noqa: A002
    """``tf.math.top_k``: the ``k`` largest entries of each row (last axis), largest first, and their
    positions (ties: the lower position first). The values are a ``take_along_axis``: ḡ goes back to the
    entries that were picked, as in TensorFlow."""
    x = _tensor(input)
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k={k} but the last axis of shape {x.shape} has {x.shape[-1]} entries.")
    order = np.argsort(-x._value, axis=-1, kind="stable")[..., :k]
    return TopKV2(take_along_axis(x, order, axis=-1), _const(order, np.dtype(index_type)))


def in_top_k(targets, predictions, k, name=None):
    """``tf.math.in_top_k(targets, predictions, k)``: is each row's target class among its ``k`` largest
    predictions (fewer than ``k`` entries strictly larger)? Booleans: no gradient."""
    t, p = _values(targets).astype(np.int64), _values(predictions)
    picked = np.take_along_axis(p, t[:, None], axis=1)
    return _const((p > picked).sum(axis=1) < k)


# ----- special functions (tf.math.lgamma, digamma, erfinv, …; rules in core/rules/special.py) ----------------
erfc, lgamma, digamma, erfinv, erfcinv, ndtri, bessel_i0, bessel_i0e, bessel_i1, bessel_i1e = (
    _unary_op(r) for r in (R.erfc, RS.lgamma, RS.digamma, RS.erfinv, RS.erfcinv, RS.ndtri, RS.bessel_i0,
                           RS.bessel_i0e, RS.bessel_i1, RS.bessel_i1e))


def _shape_first(rule):
    """A special function whose first argument(s) are shape parameters without gradient (TensorFlow's too)."""
    def op(*args, name=None):
        xs = [_tensor(a) if i == len(args) - 1 else a for i, a in enumerate(args)]
        return call(rule, *[_float_like(a, xs[-1]) for a in xs[:-1]], xs[-1])
    op.__name__ = op.__qualname__ = rule.name
    op.__doc__ = f"``tf.math.{rule.name}``: {rule.doc}. Derivative in the last argument: {rule.inputs[-1].factor}."
    return op


def _float_like(a, x):
    return a if isinstance(a, Tensor) else _const(a, x.dtype if x.dtype.kind == "f" else np.float32)


polygamma, igamma, igammac, betainc = (_shape_first(r) for r in (RS.polygamma, RS.igamma, RS.igammac,
                                                                   RS.betainc))


def zeta(x, q, name=None):
    """``tf.math.zeta(x, q)``: Hurwitz's ζ(x, q) = Σₖ (k + q)^(−x); differentiable in ``q`` (as TensorFlow)."""
    q = _tensor(q)
    return call(RS.zeta, _float_like(x, q), q)


def lbeta(x, name=None):
    """``tf.math.lbeta``: ``ln B(x) = Σ ln Γ(xᵢ) − ln Γ(Σ xᵢ)`` over the last axis."""
    x = _tensor(x)
    return _sum(lgamma(x), axis=-1) - lgamma(_sum(x, axis=-1))
