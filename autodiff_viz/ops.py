"""Ops under their numpy names: ``adv.exp``, ``adv.sum``, ``adv.concatenate`` ...

Each function checks and normalises its arguments (axes become negative
tuples, shapes are resolved, indices lose their ``...``) and applies the rule
of the same name from :mod:`autodiff_viz.rules`. Arguments may be tensors,
numpy arrays or Python numbers; the result is always a tensor.
"""
from __future__ import annotations

import builtins
from numbers import Integral

import numpy as np

from . import rules as R
from .engine import apply, call
from .tensor import Tensor, as_tensor

# numpy functions that, given a tensor, run the differentiable op (see Tensor.__array_function__)
NUMPY_FUNCTIONS = {
    "sum", "mean", "max", "min", "reshape", "transpose", "concatenate", "stack", "expand_dims",
    "squeeze", "broadcast_to", "where", "clip", "take", "matmul", "argmax", "argmin", "split",
}


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _axes(axis, ndim: int, op: str) -> tuple:
    """``axis`` (None, int or sequence) as a sorted tuple of negative axes."""
    if axis is None:
        return tuple(range(-ndim, 0))
    items = (axis,) if isinstance(axis, Integral) else tuple(axis)
    out = []
    for a in items:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: axis {a} is out of range for a tensor with {ndim} axes "
                             f"(valid: {-ndim} to {ndim - 1}).")
        out.append(a - ndim if a >= 0 else a)
    return tuple(sorted(set(out)))


# ----- elementwise -----------------------------------------------------------
def add(a, b): return call(R.add, a, b)
def subtract(a, b): return call(R.subtract, a, b)
def multiply(a, b): return call(R.multiply, a, b)
def divide(a, b): return call(R.divide, a, b)
def power(a, b): return call(R.power, a, b)
def negative(x): return apply(R.negative, _tensor(x))
def exp(x): return apply(R.exp, _tensor(x))
def log(x): return apply(R.log, _tensor(x))
def sqrt(x): return apply(R.sqrt, _tensor(x))
def square(x): return apply(R.square, _tensor(x))
def abs(x): return apply(R.abs, _tensor(x))
def sign(x): return apply(R.sign, _tensor(x))
def tanh(x): return apply(R.tanh, _tensor(x))
def sin(x): return apply(R.sin, _tensor(x))
def cos(x): return apply(R.cos, _tensor(x))
def maximum(a, b): return call(R.maximum, _tensor(a), b)
def minimum(a, b): return call(R.minimum, _tensor(a), b)
def equal(a, b): return call(R.equal, _tensor(a), b)
def not_equal(a, b): return call(R.not_equal, _tensor(a), b)
def less(a, b): return call(R.less, _tensor(a), b)
def less_equal(a, b): return call(R.less_equal, _tensor(a), b)
def greater(a, b): return call(R.greater, _tensor(a), b)
def greater_equal(a, b): return call(R.greater_equal, _tensor(a), b)


def where(condition, x, y):
    """``x`` where ``condition`` holds, else ``y`` (gradient flows to the chosen side)."""
    cond = _tensor(condition)
    if cond.dtype != np.bool_:
        cond = call(R.not_equal, cond, 0)
    return call(R.where, cond, x, y)


def clip(x, clip_value_min, clip_value_max):
    """``x`` limited to ``[min, max]``; the gradient is 1 inside and 0 outside."""
    return call(R.clip, _tensor(x), clip_value_min, clip_value_max)


def matmul(a, b):
    """Matrix product ``a @ b`` with numpy's rules for 1-D and stacked operands."""
    return call(R.matmul, _tensor(a), b)


# ----- reductions ------------------------------------------------------------
def _reduce(rule, x, axis, keepdims):
    x = _tensor(x)
    return call(rule, x, axis=_axes(axis, x.ndim, rule.name), keepdims=bool(keepdims))


def sum(x, axis=None, keepdims=False): return _reduce(R.sum, x, axis, keepdims)
def mean(x, axis=None, keepdims=False): return _reduce(R.mean, x, axis, keepdims)
def max(x, axis=None, keepdims=False): return _reduce(R.max, x, axis, keepdims)
def min(x, axis=None, keepdims=False): return _reduce(R.min, x, axis, keepdims)
def logsumexp(x, axis=None, keepdims=False): return _reduce(R.logsumexp, x, axis, keepdims)


def argmax(x, axis=None):
    """Index of the largest entry (an integer tensor: no gradient flows through it)."""
    x = _tensor(x)
    return call(R.argmax, x, axis=None if axis is None else _axes(axis, x.ndim, "argmax")[0])


def argmin(x, axis=None):
    x = _tensor(x)
    return call(R.argmin, x, axis=None if axis is None else _axes(axis, x.ndim, "argmin")[0])


# ----- shapes ----------------------------------------------------------------
def reshape(x, shape):
    x = _tensor(x)
    shape = (int(shape),) if isinstance(shape, Integral) else tuple(int(s) for s in shape)
    try:
        resolved = np.empty(x.shape, dtype=np.bool_).reshape(shape).shape
    except ValueError:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} entries) "
                         f"into {shape}. The new shape must hold the same number of entries; "
                         "use -1 for one axis to infer it.") from None
    return call(R.reshape, x, shape=resolved)


def transpose(x, perm=None):
    """Permute axes (default: reverse them). ``perm`` as in ``tf.transpose`` / ``np.transpose``."""
    x = _tensor(x)
    axes = tuple(reversed(range(x.ndim))) if perm is None else tuple(int(p) % builtins.max(x.ndim, 1) for p in perm)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: {perm} is not a permutation of the {x.ndim} axes of a tensor of shape {x.shape}.")
    return call(R.transpose, x, axes=axes)


def expand_dims(x, axis):
    x = _tensor(x)
    ax = int(axis)
    if not -x.ndim - 1 <= ax <= x.ndim:
        raise ValueError(f"expand_dims: axis {ax} is out of range for a tensor with {x.ndim} axes.")
    shape = list(x.shape)
    shape.insert(ax if ax >= 0 else x.ndim + 1 + ax, 1)
    return call(R.expand_dims, x, shape=tuple(shape))


def squeeze(x, axis=None):
    x = _tensor(x)
    if axis is None:
        drop = {i for i, n in enumerate(x.shape) if n == 1}
    else:
        drop = {a % x.ndim for a in _axes(axis, x.ndim, "squeeze")}
        bad = [a for a in drop if x.shape[a] != 1]
        if bad:
            raise ValueError(f"squeeze: axis {bad[0]} of shape {x.shape} has size {x.shape[bad[0]]}, not 1.")
    return call(R.squeeze, x, shape=tuple(n for i, n in enumerate(x.shape) if i not in drop))


def broadcast_to(x, shape):
    x = _tensor(x)
    shape = tuple(int(s) for s in shape)
    return call(R.broadcast_to, x, shape=shape)


def concatenate(values, axis=0):
    """Join tensors along an existing axis."""
    xs = [_tensor(v) for v in values]
    if not xs:
        raise ValueError("concatenate: needs at least one tensor.")
    ax = _axes(axis, xs[0].ndim, "concatenate")[0]
    return call(R.concatenate, *xs, axis=ax)


def stack(values, axis=0):
    """Join tensors of equal shape along a new axis."""
    xs = [_tensor(v) for v in values]
    if not xs:
        raise ValueError("stack: needs at least one tensor.")
    ndim = xs[0].ndim + 1
    ax = int(axis)
    if not -ndim <= ax < ndim:
        raise ValueError(f"stack: axis {ax} is out of range for the stacked result with {ndim} axes.")
    return call(R.stack, *xs, axis=ax % ndim)


def split(x, num_or_size_splits, axis=0):
    """Split into a list of tensors (each piece is a slice of ``x``, recorded as ``getitem``)."""
    x = _tensor(x)
    ax = _axes(axis, x.ndim, "split")[0] % x.ndim
    n = x.shape[ax]
    if isinstance(num_or_size_splits, Integral):
        k = int(num_or_size_splits)
        if k <= 0 or n % k:
            raise ValueError(f"split: axis {ax} has size {n}, which does not split into {k} equal parts.")
        sizes = [n // k] * k
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if builtins.sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} add up to {builtins.sum(sizes)}, but axis {ax} has size {n}.")
    out, start = [], 0
    for s in sizes:
        out.append(call(R.getitem, x, index=R._slot(ax, start, start + s), lead=0))
        start += s
    return out


def take(x, indices, axis=None):
    """Entries of ``x`` at ``indices`` along ``axis`` (flattened when axis is None), as ``tf.gather``."""
    x = _tensor(x)
    if axis is None:
        x, ax = reshape(x, (-1,)), 0
    else:
        ax = _axes(axis, x.ndim, "take")[0] % x.ndim
    idx = np.asarray(indices._value if isinstance(indices, Tensor) else indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take: indices must be integers, got dtype {idx.dtype}.")
    return call(R.take, x, index=(slice(None),) * ax + (idx,), lead=0)


def getitem(x, index):
    """``x[index]``: basic and advanced numpy indexing, differentiable."""
    x = _tensor(x)
    return call(R.getitem, x, index=_normalize_index(index, x.ndim), lead=0)


def _normalize_index(index, ndim):
    """Tensors become arrays and ``...`` becomes explicit slices, so batch axes can follow."""
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for i in index:
        if isinstance(i, Tensor):
            i = i._value
        if isinstance(i, list):
            i = np.asarray(i)
        items.append(i)
    used = 0
    for i in items:
        if i is None or i is Ellipsis:
            continue
        used += i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 1
    if used > ndim:
        raise IndexError(f"getitem: too many indices ({used}) for a tensor with {ndim} axes.")
    dots = [k for k, i in enumerate(items) if i is Ellipsis]
    if len(dots) > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...').")
    if dots:
        items[dots[0]:dots[0] + 1] = [slice(None)] * (ndim - used)
    return tuple(items)


def cast(x, dtype):
    """``x`` as ``dtype``. Casting to an integer type cuts the gradient (as TensorFlow)."""
    x = _tensor(x)
    dt = np.dtype(dtype)
    if dt == x.dtype:
        return x
    return call(R.cast, x, dtype=dt)


def one_hot(indices, depth, dtype="float64"):
    """``y[..., k] = 1`` where ``indices == k`` (an index of -1 or ≥ depth gives a zero row)."""
    idx = _tensor(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, got dtype {idx.dtype}.")
    return call(R.one_hot, idx, depth=int(depth), dtype=np.dtype(dtype))


def stop_gradient(x):
    """``x`` itself, but gradients do not flow back through it."""
    return call(R.stop_gradient, _tensor(x))
