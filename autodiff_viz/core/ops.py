"""Ops under their numpy names: ``adv.exp``, ``adv.sum``, ``adv.concatenate`` ...

Each function checks and normalises its arguments (axes become negative
tuples, shapes are resolved, indices lose their ``...``) and applies the rule
of the same name from :mod:`autodiff_viz.rules`. Arguments may be tensors,
numpy arrays or Python numbers; the result is always a tensor.
"""
from __future__ import annotations

import builtins
import functools
import operator
from numbers import Integral

import numpy as np

from ..session import floatx
from . import rules as R
from .engine import apply, broadcasts_to, call
from .tensor import Tensor, as_tensor, check_nbytes

# numpy functions that, given a tensor, run the differentiable op (see Tensor.__array_function__)
NUMPY_FUNCTIONS = {
    "sum", "mean", "max", "min", "reshape", "transpose", "concatenate", "stack", "expand_dims",
    "squeeze", "broadcast_to", "where", "clip", "take", "matmul", "argmax", "argmin", "split",
}


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _axes(axis, ndim: int, op: str) -> tuple:
    """``axis`` (None, int or sequence) as a sorted tuple of negative axes."""
    try:
        return _axes_cached(axis, ndim, op)
    except TypeError:       # unhashable axes (a list): the same answer, uncached
        return _axes_uncached(axis, ndim, op)


def _axes_uncached(axis, ndim: int, op: str) -> tuple:
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


# every reduction and softmax of a training step asks again for the same few axes
_axes_cached = functools.lru_cache(maxsize=1024)(_axes_uncached)


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


def where(condition, x=None, y=None):
    """``x`` where ``condition`` holds, else ``y`` (gradient flows to the chosen side).

    With the condition alone it is ``np.nonzero``: index arrays, no gradient.
    """
    if x is None and y is None:
        return np.nonzero(condition._value if isinstance(condition, Tensor) else np.asarray(condition))
    cond = _tensor(condition)
    if cond.dtype != np.bool_:
        cond = call(R.not_equal, cond, 0)
    return call(R.where, cond, x, y)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, clip_value_min=None, clip_value_max=None):
    """``a`` limited to ``[a_min, a_max]`` (either may be None): ``y = min(max(a, a_min), a_max)``.

    Each output entry is one of ``a``, ``a_min`` or ``a_max``, and that one gets the gradient (slope 1):
    ``a`` where ``a_min ≤ a ≤ a_max``, a bound where the entry was clipped to it, as ``torch.clamp``,
    ``tf.clip_by_value`` and ``jax.numpy.clip``. Bounds may be numbers or tensors that broadcast
    against ``a`` (a tensor bound's gradient is summed over the entries it clipped).
    numpy's ``a_min``/``a_max`` (or ``min``/``max``) and TensorFlow's ``clip_value_min``/``clip_value_max``.
    """
    _no_out(out, "clip")
    lo = next((v for v in (a_min, min, clip_value_min) if v is not None), -np.inf)
    hi = next((v for v in (a_max, max, clip_value_max) if v is not None), np.inf)
    return call(R.clip, _tensor(a), lo, hi)


def clip_by_norm(x, clip_norm, axes=None):
    """``x`` scaled down so that its L2 norm over ``axes`` is at most ``clip_norm``, as ``tf.clip_by_norm``:

        y = x · clip_norm / max(‖x‖, clip_norm),   ‖x‖ = √(Σ x²) over ``axes`` (all axes when None)

    The norm keeps its axes, so with ``axes=1`` each row of a matrix is clipped on its own. Where
    ``‖x‖ ≤ clip_norm`` the factor is 1 and ``y = x``; elsewhere ``y = clip_norm · x/‖x‖`` points the
    same way as ``x`` with norm ``clip_norm``. It is written with recorded ops (``norm``, ``multiply``,
    ``maximum``, ``divide``), so gradients flow to ``x`` (and to a tensor ``clip_norm``); where the norm
    is clipped the gradient is ``(clip_norm/‖x‖)·(ḡ − x̂ (x̂·ḡ))`` with ``x̂ = x/‖x‖``: the part of ``ḡ``
    along ``x`` is removed, since it would only change the norm that is being held fixed. At
    ``x = 0`` the gradient of the norm is 0 (as TensorFlow's). At ``‖x‖ = clip_norm`` exactly, the two
    sides of the ``maximum`` share the gradient (TensorFlow gives it all to the norm).
    """
    x = _tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"clip_by_norm: x has dtype {x.dtype}; a norm needs floats, as in TensorFlow. Cast it "
                        "first: adv.clip_by_norm(adv.cast(x, 'float32'), clip_norm).")
    c = clip_norm._value if isinstance(clip_norm, Tensor) else np.asarray(clip_norm)
    if c.dtype.kind not in "iuf" or c.ndim != 0:
        error = TypeError if c.dtype.kind not in "iuf" else ValueError
        raise error(f"clip_by_norm: clip_norm must be one number > 0 (the largest norm allowed), got {clip_norm!r}; "
                    "e.g. adv.clip_by_norm(g, 1.0) (axes= clips rows or columns separately).")
    if not c > 0:
        raise ValueError(f"clip_by_norm: clip_norm must be > 0 (the largest norm allowed), got {c}; "
                         "e.g. adv.clip_by_norm(g, 1.0).")
    l2norm = call(R.norm, x, ord=None, axis=_axes(axes, x.ndim, "clip_by_norm"), keepdims=True)
    return divide(multiply(x, clip_norm), maximum(l2norm, clip_norm))


def matmul(a, b):
    """Matrix product ``a @ b`` with numpy's rules for 1-D and stacked operands."""
    return call(R.matmul, _tensor(a), b)


# ----- reductions ------------------------------------------------------------
def _no_out(out, op):
    if out is not None:
        raise TypeError(f"{op}: out= is not supported: tensors are immutable. Use the result instead "
                        f"(y = adv.{op}(...)).")


_UNSUPPORTED_FIX = {
    "where": "reduce the selected entries instead: adv.{op}(x[mask])",
    "initial": "combine it with the result instead: {initial}",
    "mean": "leave it out: the op computes the mean (and differentiates through it)",
}
_WITH_INITIAL = {"sum": "adv.sum(x) + initial", "prod": "adv.prod(x) * initial",
                 "max": "adv.maximum(adv.max(x), initial)", "min": "adv.minimum(adv.min(x), initial)"}


def _refuse_numpy_keywords(op, **given):
    """numpy keywords the op does not support, given a value other than numpy's default: a TypeError that
    names the op, the keyword and what to write instead (not Python's bare "unexpected keyword")."""
    for key, value in given.items():
        if value is None or value is True and key == "where":    # numpy's defaults: the usual call
            continue
        if not (key == "where" and np.ndim(value) == 0 and bool(value)):
            raise TypeError(f"{op}: numpy's {key}= is not supported by autodiff_viz; "
                            + _UNSUPPORTED_FIX[key].format(op=op, initial=_WITH_INITIAL.get(op)) + ".")


def _reduce(rule, x, axis, keepdims, dtype=None, out=None, **params):
    _no_out(out, rule.name)
    x = _tensor(x) if dtype is None else cast(x, dtype)
    return apply(rule, x, axis=_axes(axis, x.ndim, rule.name), keepdims=bool(keepdims), **params)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``Σ a`` over ``axis`` (all axes when None), as ``np.sum`` (``initial``/``where`` are refused by name)."""
    _refuse_numpy_keywords("sum", initial=initial, where=where)
    return _reduce(R.sum, a, axis, keepdims, dtype, out)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """The mean over ``axis``, as ``np.mean``."""
    _refuse_numpy_keywords("mean", where=where)
    return _reduce(R.mean, a, axis, keepdims, dtype, out)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """The largest entry over ``axis``. Tied maxima share the gradient equally (as JAX and TensorFlow)."""
    _refuse_numpy_keywords("max", initial=initial, where=where)
    return _reduce(R.max, a, axis, keepdims, None, out)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """The smallest entry over ``axis``. Tied minima share the gradient equally (as JAX and TensorFlow)."""
    _refuse_numpy_keywords("min", initial=initial, where=where)
    return _reduce(R.min, a, axis, keepdims, None, out)


amax, amin = max, min


def logsumexp(x, axis=None, keepdims=False): return _reduce(R.logsumexp, x, axis, keepdims)


def _arg(rule, a, axis, out, keepdims):
    _no_out(out, rule.name)
    x = _tensor(a)
    y = call(rule, x, axis=None if axis is None else _axes(axis, x.ndim, rule.name)[0])
    if keepdims:
        y = reshape(y, (1,) * x.ndim if axis is None else R._keepdims_shape(x.shape, _axes(axis, x.ndim, rule.name)))
    return y


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the largest entry (an integer tensor: no gradient flows through it)."""
    return _arg(R.argmax, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the smallest entry (an integer tensor: no gradient flows through it)."""
    return _arg(R.argmin, a, axis, out, keepdims)


# ----- shapes ----------------------------------------------------------------
def _dims(shape, op) -> tuple:
    """``shape`` (an int or a sequence of ints) as a tuple; a non-integer size is refused, as numpy does.

    A size is anything numpy takes as one: an object with ``__index__``, such as a numpy integer or a
    0-d integer tensor (``adv.prod(x.shape)``). Floats and bools are refused, as numpy refuses them.
    """
    if isinstance(shape, (tuple, list)):
        items = shape
    else:
        items = (shape,) if isinstance(shape, Integral) or np.ndim(shape) == 0 else tuple(shape)
    sizes = []
    for s in items:
        if type(s) is not int:
            try:
                if isinstance(s, (bool, np.bool_)):
                    raise TypeError
                s = operator.index(s)
            except TypeError:
                raise TypeError(f"{op}: sizes must be integers, got {s!r} in {shape!r}; write e.g. "
                                f"{op}(x, (2, -1)) (int(n) if n is a computed float).") from None
        sizes.append(s)
    return tuple(sizes)


def reshape(x, shape=None, order="C", *, newshape=None, copy=None):
    """``x`` with another shape of the same number of entries (``-1`` for one axis to infer).

    ``order="F"`` (Fortran order: the first index changes fastest) is the C-order reshape of the
    reversed axes, ``transpose(reshape(transpose(x), reversed(shape)))``, so it is differentiable too.
    ``copy`` is accepted for numpy 2's signature and has nothing to do: tensors are immutable.
    """
    x = _tensor(x)
    shape = newshape if shape is None else shape
    if shape is None:
        raise TypeError("reshape: missing the new shape, e.g. adv.reshape(x, (2, -1)).")
    if order not in ("C", "F", "A"):
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A', got {order!r}.")
    shape = _dims(shape, "reshape")
    try:
        resolved = np.empty(x.shape, dtype=np.bool_).reshape(shape).shape
    except ValueError:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} entries) "
                         f"into {shape}. The new shape must hold the same number of entries; "
                         "use -1 for one axis to infer it.") from None
    if order == "F" and builtins.max(x.ndim, len(resolved)) > 1:
        return transpose(call(R.reshape, transpose(x), shape=resolved[::-1]))
    return call(R.reshape, x, shape=resolved)


def transpose(a, axes=None, perm=None):
    """Permute axes (default: reverse them). ``axes`` as ``np.transpose`` (``perm`` as ``tf.transpose``)."""
    x = _tensor(a)
    perm = axes if axes is not None else perm
    axes = tuple(reversed(range(x.ndim))) if perm is None else tuple(int(p) % builtins.max(x.ndim, 1) for p in perm)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: {perm} is not a permutation of the {x.ndim} axes of a tensor of shape {x.shape}.")
    return call(R.transpose, x, axes=axes)


def expand_dims(x, axis):
    """``x`` with new axes of size 1 at ``axis`` (an int or a tuple, positions in the result, as numpy)."""
    x = _tensor(x)
    axes = (axis,) if isinstance(axis, Integral) else tuple(axis)
    n = x.ndim + len(axes)
    for ax in axes:
        if not -n <= int(ax) < n:
            raise ValueError(f"expand_dims: axis {int(ax)} is out of range for a tensor with {x.ndim} axes.")
    new = {int(ax) % n for ax in axes}
    if len(new) != len(axes):
        raise ValueError(f"expand_dims: repeated axis in {axis}.")
    dims = iter(x.shape)
    return call(R.expand_dims, x, shape=tuple(1 if k in new else next(dims) for k in range(n)))


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


def concatenate(values, axis=0, out=None, *, dtype=None):
    """Join tensors along an existing axis; ``axis=None`` flattens each first (as ``np.concatenate``).

    The shapes are checked here, so an error names the ``axis`` as passed (not the negative axis the
    rule is given) and the input that does not fit.
    """
    _no_out(out, "concatenate")
    xs = [_tensor(v) for v in values]
    if not xs:
        raise ValueError("concatenate: needs at least one tensor.")
    if axis is None:
        xs, axis = [reshape(x, (-1,)) for x in xs], 0
    if dtype is not None:
        xs = [cast(x, dtype) for x in xs]
    first = xs[0]
    if first.ndim == 0:
        raise ValueError("concatenate: the inputs are 0-d (single numbers) and have no axis to join along; "
                         "use adv.stack(values) to make a new axis of them, or pass axis=None.")
    ax = _axes(axis, first.ndim, "concatenate")[0]
    a = ax % first.ndim
    for k, x in enumerate(xs[1:], 1):
        if x.ndim != first.ndim:
            raise ValueError(f"concatenate: input 0 has shape {first.shape} but input {k} has shape {x.shape}; "
                             f"all inputs need the same number of axes ({first.ndim}). Reshape them, or use "
                             "axis=None to join them flattened.")
        if x.shape[:a] + x.shape[a + 1:] != first.shape[:a] + first.shape[a + 1:]:
            raise ValueError(f"concatenate along axis {axis}: input 0 has shape {first.shape} but input {k} has "
                             f"shape {x.shape}; the sizes must match on every axis except axis {axis}.")
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


def one_hot(indices, depth=None, dtype=None, *, num_classes=None):
    """``y[..., k] = 1`` where ``indices == k`` (an index of -1 or ≥ depth gives a zero row).

    ``depth`` is the number of classes (``tf.one_hot``'s name); ``num_classes``
    is ``keras.ops.one_hot``'s name for it. Labels stored as whole floats
    (``y.astype("float32")``) are taken as the integers they hold, as Keras does.
    ``dtype`` defaults to ``adv.layers.floatx()`` (float32), as in Keras and TensorFlow.
    """
    if depth is not None and num_classes is not None:
        raise TypeError(f"one_hot: depth={depth!r} and num_classes={num_classes!r} both given; they are the same "
                        "number (the class count). Pass one.")
    if depth is None and num_classes is None:
        raise TypeError("one_hot: give the number of classes, e.g. one_hot(labels, 10) (or num_classes=10).")
    depth = num_classes if depth is None else depth
    idx = _tensor(indices)
    if idx.dtype.kind == "f" and np.all(np.isfinite(idx._value)) and np.all(idx._value == np.round(idx._value)):
        idx = Tensor._wrap(idx._value.astype(np.int64))
    if idx.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers (whole numbers), got dtype {idx.dtype}"
                        f"{' with fractions' if idx.dtype.kind == 'f' else ''}. Pass class indices, e.g. "
                        "labels.astype('int64').")
    depth = int(depth)
    fix = f"depth is the number of classes ({depth:,} here): pass the class count, e.g. one_hot(labels, 10)."
    dtype = _default_float(dtype, "one_hot")
    check_nbytes("one_hot", idx.shape + (depth,), dtype, fix)
    check_nbytes("one_hot", (depth,), np.int64, fix)
    return call(R.one_hot, idx, depth=depth, dtype=dtype)


def stop_gradient(x):
    """``x`` itself, but gradients do not flow back through it."""
    return call(R.stop_gradient, _tensor(x))


def identity(x):
    """``y = x`` as a new recorded tensor, as ``tf.identity``: the gradient passes unchanged (``ḡ_x = ḡ_y``).

    It is recorded as a ``cast`` to ``x``'s own dtype, the rule whose edge factor is 1, so the graph shows
    a node of its own for ``y`` with ``∂y/∂x = 1`` on its edge. A Variable comes out as a plain tensor.
    numpy's ``np.identity(n)`` (and ``keras.ops.identity(n)``) is the n×n identity matrix instead: that is
    :func:`eye`, and a bare integer here is refused with that hint.
    """
    if type(x) is int:
        raise TypeError(f"identity: adv.identity(x) is TensorFlow's identity (y = x, the gradient passes through), "
                        f"and {x} is a plain int. For the {x}×{x} identity matrix (np.identity, keras.ops.identity) "
                        f"write adv.eye({x}).")
    x = _tensor(x)
    return call(R.cast, x, dtype=x.dtype)


# ----- the numpy surface: elementwise ------------------------------------------
def _unary_op(rule):
    def op(x):
        return apply(rule, _tensor(x))
    op.__name__ = op.__qualname__ = rule.name
    op.__doc__ = f"{rule.doc}. Derivative: {rule.inputs[0].factor}."
    return op


def _binary_op(rule):
    def op(a, b):
        return call(rule, _tensor(a), b)
    op.__name__ = op.__qualname__ = rule.name
    op.__doc__ = f"{rule.doc}. ∂/∂a: {rule.inputs[0].factor}; ∂/∂b: {rule.inputs[1].factor}."
    return op


log1p, expm1, log2, log10, exp2 = (_unary_op(r) for r in (R.log1p, R.expm1, R.log2, R.log10, R.exp2))
sinh, cosh, tan, arcsin, arccos, arctan = (_unary_op(r) for r in (R.sinh, R.cosh, R.tan, R.arcsin, R.arccos, R.arctan))
arcsinh, arccosh, arctanh, reciprocal, cbrt, erf = (
    _unary_op(r) for r in (R.arcsinh, R.arccosh, R.arctanh, R.reciprocal, R.cbrt, R.erf))
floor, ceil, trunc = (_unary_op(r) for r in (R.floor, R.ceil, R.trunc))
fix = trunc
arctan2, hypot, logaddexp, logaddexp2, mod, floor_divide = (
    _binary_op(r) for r in (R.arctan2, R.hypot, R.logaddexp, R.logaddexp2, R.mod, R.floor_divide))
remainder, true_divide, absolute = mod, divide, abs


def round(a, decimals=0, out=None):
    """``a`` rounded to ``decimals`` places (halves to even, as numpy). The gradient is 0: rounding is
    piecewise constant (use ``adv.stop_gradient(adv.round(x) - x) + x`` for a straight-through estimate)."""
    _no_out(out, "round")
    return call(R.round, _tensor(a), decimals=int(decimals))


around = round


def rint(x):
    """``x`` rounded to the nearest integer (halves to even); gradient 0."""
    return round(x)


def positive(x):
    return _tensor(x)


# ----- the numpy surface: reductions and scans -----------------------------------
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``Π a`` over ``axis``. The gradient of each entry is the product of the others (exact with zeros)."""
    _refuse_numpy_keywords("prod", initial=initial, where=where)
    return _reduce(R.prod, a, axis, keepdims, dtype, out)


def _ddof(op, ddof, correction, where, mean):
    """numpy 2's ``correction`` is another name for ``ddof`` (the Array API's); giving both is an error, as numpy."""
    _refuse_numpy_keywords(op, where=where, mean=mean)
    if correction is None:
        return int(ddof)
    if ddof != 0:
        raise ValueError(f"{op}: ddof={ddof} and correction={correction} both given; they are the same "
                         "setting (numpy 2's name for ddof is correction): pass one.")
    return int(correction)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """``Σ(a − ā)²/(n − ddof)`` over ``axis`` (numpy's default ddof=0; ``ddof=1`` (or ``correction=1``) for the
    sample variance)."""
    return _reduce(R.var, a, axis, keepdims, dtype, out, ddof=_ddof("var", ddof, correction, where, mean))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """``√var(a)``; its gradient is 0 where the standard deviation is 0 (all entries equal: a subgradient)."""
    return _reduce(R.std, a, axis, keepdims, dtype, out, ddof=_ddof("std", ddof, correction, where, mean))


def _scan(rule, a, axis, dtype, out):
    _no_out(out, rule.name)
    x = _tensor(a) if dtype is None else cast(a, dtype)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return call(rule, x, axis=_axes(axis, x.ndim, rule.name)[0], reverse=False)


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sums along ``axis`` (the flattened array when None); the gradient sums ḡ from the end."""
    return _scan(R.cumsum, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Running products along ``axis``; the gradient is exact also where entries are 0."""
    return _scan(R.cumprod, a, axis, dtype, out)




def sort(a, axis=-1, kind=None, order=None):
    """A sorted copy of ``a`` (values) along ``axis``; the gradient goes back to where each value came from.

    The top ``k`` values: ``adv.sort(x)[..., -k:]``; their positions: ``np.argsort(x)[..., -k:]``.
    """
    x = _tensor(a)
    if order is not None:
        raise TypeError("sort: order= (structured arrays) is not supported.")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return call(R.sort, x, axis=_axes(axis, x.ndim, "sort")[0])


def argsort(a, axis=-1, kind=None, order=None):
    """Indices that sort ``a`` (an integer tensor: no gradient)."""
    x = _tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return call(R.argsort, x, axis=_axes(axis, x.ndim, "argsort")[0])


def any(a, axis=None, out=None, keepdims=False):
    """Is any entry nonzero? A boolean tensor (no gradient)."""
    return _reduce(R.any_, a, axis, keepdims, None, out)


def all(a, axis=None, out=None, keepdims=False):
    """Are all entries nonzero? A boolean tensor (no gradient)."""
    return _reduce(R.all_, a, axis, keepdims, None, out)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum of the diagonal ``a[i, i + offset]`` (over the first two axes by default, as ``np.trace``)."""
    _no_out(out, "trace")
    d = diagonal(a if dtype is None else cast(a, dtype), offset, axis1, axis2)
    return sum(d, axis=-1)


# ----- the numpy surface: shapes and indexing ------------------------------------
def _gather(rule, x, index):
    return call(rule, x, index=index, lead=0)


def _outer_index(maps):
    """An advanced index taking ``maps[k]`` along every axis ``k`` (an outer product of index arrays)."""
    n = len(maps)
    return tuple(np.asarray(m).reshape((-1,) + (1,) * (n - 1 - k)) for k, m in enumerate(maps))


def ravel(a, order="C"):
    """``a`` as one axis (a copy: tensors are immutable)."""
    if order not in ("C", "A", "K"):
        raise ValueError(f"ravel: only order='C' is supported, got {order!r}.")
    return reshape(a, (-1,))


def swapaxes(a, axis1, axis2):
    x = _tensor(a)
    i, j = (_axes(ax, x.ndim, "swapaxes")[0] % x.ndim for ax in (axis1, axis2))
    perm = list(range(x.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


def moveaxis(a, source, destination):
    x = _tensor(a)
    src = [_axes(s, x.ndim, "moveaxis")[0] % x.ndim for s in np.atleast_1d(source)]
    dst = [_axes(d, x.ndim, "moveaxis")[0] % x.ndim for d in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations.")
    order = [k for k in range(x.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def flip(m, axis=None):
    """``m`` reversed along ``axis`` (all axes when None)."""
    x = _tensor(m)
    axes = {a % builtins.max(x.ndim, 1) for a in _axes(axis, x.ndim, "flip")}
    return _gather(R.flip, x, tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(x.ndim)))


def fliplr(m): return flip(m, 1)
def flipud(m): return flip(m, 0)


def roll(a, shift, axis=None):
    """Entries shifted cyclically by ``shift`` along ``axis`` (the flattened array when None)."""
    x = _tensor(a)
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, 0), x.shape)
    axes = [_axes(ax, x.ndim, "roll")[0] % x.ndim for ax in np.atleast_1d(axis)]
    shifts = np.broadcast_to(np.atleast_1d(shift), (len(axes),))
    total = dict.fromkeys(range(x.ndim), 0)
    for ax, s in zip(axes, shifts):
        total[ax] += int(s)
    maps = [(np.arange(n) - total[k]) % builtins.max(n, 1) for k, n in enumerate(x.shape)]
    return _gather(R.roll, x, _outer_index(maps))


def tile(A, reps):
    """``A`` repeated as whole blocks, ``reps`` times along each axis (as ``np.tile``)."""
    x = _tensor(A)
    reps = (int(reps),) if isinstance(reps, Integral) else tuple(int(r) for r in reps)
    d = builtins.max(x.ndim, len(reps))
    reps = (1,) * (d - len(reps)) + reps
    if x.ndim < d:
        x = reshape(x, (1,) * (d - x.ndim) + x.shape)
    return _gather(R.tile, x, _outer_index([np.tile(np.arange(n), r) for n, r in zip(x.shape, reps)]))


def repeat(a, repeats, axis=None):
    """Each entry repeated ``repeats`` times along ``axis`` (the flattened array when None)."""
    x = _tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axes(axis, x.ndim, "repeat")[0] % x.ndim
    source = np.repeat(np.arange(x.shape[ax]), np.asarray(repeats._value if isinstance(repeats, Tensor) else repeats))
    return _gather(R.repeat, x, (slice(None),) * ax + (source,))


def take_along_axis(arr, indices, axis):
    """``arr`` picked at ``indices`` along ``axis`` (one index per entry, as ``np.take_along_axis``)."""
    x = _tensor(arr)
    idx = np.asarray(indices._value if isinstance(indices, Tensor) else indices)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis: indices must be integers, got dtype {idx.dtype}.")
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices have {idx.ndim} axes but the tensor has {x.ndim}; "
                         "they must have the same number (use np.expand_dims on the indices).")
    ax = _axes(axis, x.ndim, "take_along_axis")[0] % x.ndim
    shape = np.broadcast_shapes(tuple(1 if k == ax else n for k, n in enumerate(idx.shape)),
                                tuple(1 if k == ax else n for k, n in enumerate(x.shape)))
    shape = shape[:ax] + (idx.shape[ax],) + shape[ax + 1:]
    idx = np.broadcast_to(idx, shape)
    index = tuple(idx if k == ax else np.arange(x.shape[k]).reshape((-1,) + (1,) * (x.ndim - 1 - k))
                  for k in range(x.ndim))
    return _gather(R.take_along_axis, x, index)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The entries ``a[i, i + offset]`` of the plane (axis1, axis2), as a last axis (``np.diagonal``)."""
    x = _tensor(a)
    if x.ndim < 2:
        raise ValueError(f"diagonal: needs at least 2 axes, got a tensor of shape {x.shape}.")
    i, j = (_axes(ax, x.ndim, "diagonal")[0] % x.ndim for ax in (axis1, axis2))
    if i == j:
        raise ValueError("diagonal: axis1 and axis2 must differ.")
    rest = [k for k in range(x.ndim) if k not in (i, j)]
    if rest + [i, j] != list(range(x.ndim)):
        x = transpose(x, rest + [i, j])
    n, m = x.shape[-2:]
    k = int(offset)
    rows = np.arange(builtins.max(0, -k), builtins.max(0, builtins.min(n, m - k)))
    return _gather(R.diagonal, x, (slice(None),) * (x.ndim - 2) + (rows, rows + k))


def diag(v, k=0):
    """A 1-D ``v``: the square matrix with ``v`` on diagonal ``k``; a 2-D ``v``: its diagonal ``k``."""
    x = _tensor(v)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"diag: needs a 1-D or 2-D input, got shape {x.shape}.")
    k = int(k)
    n = x.shape[0] + builtins.abs(k)
    i = np.arange(x.shape[0])
    return call(R.diag, x, index=(i + builtins.max(0, -k), i + builtins.max(0, k)), shape=(n, n), lead=0)


def triu(m, k=0):
    """``m`` with the entries below diagonal ``k`` set to 0 (on the last two axes)."""
    x = _tensor(m)
    if x.ndim < 2:
        raise ValueError(f"triu: needs a matrix (2 or more axes), got shape {x.shape}.")
    return call(R.triu, x, k=int(k))


def tril(m, k=0):
    """``m`` with the entries above diagonal ``k`` set to 0 (on the last two axes)."""
    x = _tensor(m)
    if x.ndim < 2:
        raise ValueError(f"tril: needs a matrix (2 or more axes), got shape {x.shape}.")
    return call(R.tril, x, k=int(k))


def pad(array, pad_width, mode="constant", constant_values=0, **kwargs):
    """``array`` with borders: ``mode`` 'constant' (``constant_values``), 'reflect', 'symmetric', 'edge' or 'wrap'."""
    x = _tensor(array)
    if mode not in ("constant", "reflect", "symmetric", "edge", "wrap"):
        raise ValueError(f"pad: mode {mode!r} is not supported; use 'constant', 'reflect', 'symmetric', "
                         "'edge' or 'wrap'.")
    if kwargs:
        raise TypeError(f"pad: options {sorted(kwargs)} are not supported.")
    width = np.broadcast_to(np.asarray(pad_width, dtype=int), (x.ndim, 2))
    if (width < 0).any():
        raise ValueError(f"pad: pad_width must not be negative, got {pad_width}.")
    if np.ndim(constant_values) != 0:
        raise ValueError("pad: constant_values must be one number.")
    return call(R.pad, x, pad_width=tuple((int(b), int(e)) for b, e in width), mode=mode,
                value=float(constant_values))


# ----- the numpy surface: contractions --------------------------------------------
_LETTERS = R._LETTERS


def _parse_einsum(subscripts, operands):
    """Explicit subscripts (``'ij,jk->ik'``), broadcasting operands whose ``...`` axes differ."""
    s = subscripts.replace(" ", "")
    if "->" not in s:       # implicit output: the indices used once, in alphabetical order (as numpy)
        letters = s.replace("...", "").replace(",", "")
        s += "->" + ("..." if "..." in s else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins, out = s.split("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: '{subscripts}' names {len(ins)} operand(s) but {len(operands)} were given.")
    for term, x in zip(ins, operands):
        if "..." not in term and len(term) != x.ndim:
            raise ValueError(f"einsum: '{term}' has {len(term)} indices but its operand has shape {x.shape}.")
    if "..." in s:      # numpy broadcasts the `...` axes (right-aligned) of the operands
        spans = [(t.index("..."), x.ndim - len(t.replace("...", ""))) if "..." in t else None for t, x in zip(ins, operands)]
        common = np.broadcast_shapes(*[x.shape[p:p + w] for x, sp in zip(operands, spans) if sp for p, w in [sp]])
        fixed = []
        for x, sp in zip(operands, spans):
            if sp:
                p, w = sp
                want = x.shape[:p] + common[len(common) - w:] + x.shape[p + w:]
                if want != x.shape:
                    x = broadcast_to(x, want)
            fixed.append(x)
        operands = fixed
        ins, out = R._explicit(",".join(ins) + "->" + out, [x.ndim for x in operands])
    return ",".join(ins) + "->" + out, operands


def _contract(rule, subscripts, *operands):
    xs = [_tensor(x) for x in operands]
    subs, xs = _parse_einsum(subscripts, xs)
    return call(rule, *xs, subscripts=subs)


def einsum(subscripts, *operands, optimize=None, out=None, dtype=None):
    """``np.einsum``: explicit (``'bij,bjk->bik'``) or implicit (``'ii'``) output, ``...`` for leading axes.

    The gradient for each operand is an einsum of ḡ with the other operands.
    """
    _no_out(out, "einsum")
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts,) + operands)
    y = _contract(R.einsum, subscripts, *operands)
    return y if dtype is None else cast(y, dtype)


def _from_sublists(args):
    """numpy's other einsum form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as a subscripts string."""
    def term(sub):
        return "".join("..." if i is Ellipsis else _LETTERS[int(i)] for i in sub)
    operands, terms = list(args[0::2]), [term(sub) for sub in args[1::2]]
    if len(args) % 2:       # an output sublist at the end
        out = term(args[-1])
        operands = operands[:-1]
        return ",".join(terms) + "->" + out, tuple(operands)
    return ",".join(terms), tuple(operands)


def _letters(n, start=0):
    return _LETTERS[start:start + n]


def tensordot(a, b, axes=2):
    """``Σ a·b`` over pairs of axes (``axes`` an int n: the last n of a with the first n of b)."""
    a, b = _tensor(a), _tensor(b)
    if isinstance(axes, Integral):
        n = int(axes)
        pa, pb = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        pa, pb = ([int(v)] if isinstance(v, Integral) else [int(u) for u in v] for v in axes)
    pa, pb = [p % a.ndim for p in pa], [p % b.ndim for p in pb]
    sa = list(_letters(a.ndim))
    sb = list(_letters(b.ndim, a.ndim))
    for i, j in zip(pa, pb):
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in pa] + [c for k, c in enumerate(sb) if k not in pb]
    return call(R.tensordot, a, b, subscripts="".join(sa) + "," + "".join(sb) + "->" + "".join(out))


def dot(a, b, out=None):
    """``np.dot``: a product of numbers, a matrix product for 1-D/2-D, else the last axis of ``a`` with the
    second-to-last of ``b``."""
    _no_out(out, "dot")
    a, b = _tensor(a), _tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    sa = _letters(a.ndim)
    sb = list(_letters(b.ndim, a.ndim))
    sb[-2 if b.ndim > 1 else -1] = sa[-1]
    sb = "".join(sb)
    out = sa[:-1] + "".join(c for c in sb if c != sa[-1])
    return call(R.dot, a, b, subscripts=f"{sa},{sb}->{out}")


def inner(a, b):
    """``Σ a·b`` over the last axes (``np.inner``)."""
    a, b = _tensor(a), _tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    sa, sb = _letters(a.ndim), _letters(b.ndim, a.ndim)
    sb = sb[:-1] + sa[-1]
    return call(R.inner, a, b, subscripts=f"{sa},{sb}->{sa[:-1]}{sb[:-1]}")


def outer(a, b, out=None):
    """``yᵢⱼ = aᵢ·bⱼ`` of the flattened inputs (``np.outer``)."""
    _no_out(out, "outer")
    return call(R.outer, reshape(a, (-1,)), reshape(b, (-1,)), subscripts="i,j->ij")


def vdot(a, b):
    return inner(reshape(a, (-1,)), reshape(b, (-1,)))


# numpy functions that, given a tensor, run the differentiable op (see Tensor.__array_function__)
NUMPY_FUNCTIONS.update({
    "amax", "amin", "prod", "var", "std", "cumsum", "cumprod", "sort", "argsort", "any", "all", "trace", "ravel",
    "swapaxes", "moveaxis", "flip", "fliplr", "flipud", "roll", "tile", "repeat", "take_along_axis", "diagonal",
    "diag", "triu", "tril", "pad", "einsum", "tensordot", "dot", "inner", "outer", "vdot", "round", "around",
    "log1p", "expm1", "log2", "log10", "exp2", "sinh", "cosh", "tan", "arcsin", "arccos", "arctan",
    "arcsinh", "arccosh", "arctanh", "reciprocal", "cbrt", "floor", "ceil", "trunc", "fix", "rint",
    "arctan2", "hypot", "logaddexp", "logaddexp2", "mod", "remainder", "floor_divide", "true_divide",
})


def _numpy_split(ary, indices_or_sections, axis=0):
    """``np.split``: a number of equal sections, or the *indices* where the pieces start (numpy's meaning;
    ``adv.split`` takes TensorFlow's sizes)."""
    x = _tensor(ary)
    if isinstance(indices_or_sections, Integral):
        return split(x, indices_or_sections, axis)
    ax = _axes(axis, x.ndim, "split")[0] % x.ndim
    n = x.shape[ax]
    bounds = [0] + [builtins.min(builtins.max(int(i) if i >= 0 else n + int(i), 0), n)
                    for i in indices_or_sections] + [n]
    return [call(R.getitem, x, index=R._slot(ax, a, builtins.max(a, b)), lead=0) for a, b in zip(bounds, bounds[1:])]


_NUMPY_SPELLING = {"split": _numpy_split}




# ----- the numpy surface: functions written with the ops above (their graph shows those ops) -------
def atleast_1d(*arys):
    out = [reshape(a, (1,)) if _tensor(a).ndim == 0 else _tensor(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        x = _tensor(a)
        out.append(reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for a in arys:
        x = _tensor(a)
        shape = {0: (1, 1, 1), 1: (1,) + x.shape + (1,), 2: x.shape + (1,)}.get(x.ndim, x.shape)
        out.append(reshape(x, shape) if x.ndim < 3 else x)
    return out[0] if len(out) == 1 else out


def vstack(tup, *, dtype=None, casting="same_kind"):
    """Rows stacked: ``concatenate`` along axis 0 after making 1-D inputs rows."""
    return concatenate([atleast_2d(t) for t in tup], axis=0)


row_stack = vstack


def hstack(tup, *, dtype=None, casting="same_kind"):
    """Columns joined: ``concatenate`` along axis 1 (axis 0 for 1-D inputs)."""
    xs = [atleast_1d(t) for t in tup]
    return concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


def dstack(tup):
    return concatenate([atleast_3d(t) for t in tup], axis=2)


def column_stack(tup):
    """1-D inputs become columns; the results are joined along axis 1."""
    xs = []
    for t in tup:
        x = _tensor(t)
        xs.append(reshape(x, (x.shape[0], 1)) if x.ndim == 1 else atleast_2d(x))
    return concatenate(xs, axis=1)


def array_split(ary, indices_or_sections, axis=0):
    """Like ``np.split``, but ``n`` sections need not be equal (the first ones get one more)."""
    x = _tensor(ary)
    if not isinstance(indices_or_sections, Integral):
        return _numpy_split(x, indices_or_sections, axis)
    k = int(indices_or_sections)
    n = x.shape[_axes(axis, x.ndim, "array_split")[0]]
    size, extra = divmod(n, k)
    bounds = np.cumsum([size + 1] * extra + [size] * (k - extra))[:-1]
    return _numpy_split(x, bounds, axis)


def vsplit(ary, indices_or_sections): return _numpy_split(ary, indices_or_sections, 0)
def dsplit(ary, indices_or_sections): return _numpy_split(ary, indices_or_sections, 2)


def hsplit(ary, indices_or_sections):
    return _numpy_split(ary, indices_or_sections, 1 if _tensor(ary).ndim > 1 else 0)


def rollaxis(a, axis, start=0):
    x = _tensor(a)
    axis, start = int(axis) % x.ndim, int(start) if start >= 0 else int(start) + x.ndim
    order = [k for k in range(x.ndim) if k != axis]
    order.insert(start - (start > axis), axis)
    return transpose(x, order)


def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90° ``k`` times in the plane of ``axes`` (flips and a swap of axes)."""
    x = _tensor(m)
    a, b = axes
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    return swapaxes(flip(x, b), a, b) if k == 1 else flip(swapaxes(x, a, b), b)


def append(arr, values, axis=None):
    """``arr`` with ``values`` joined at the end (both flattened when ``axis`` is None)."""
    if axis is None:
        return concatenate([reshape(arr, (-1,)), reshape(values, (-1,))], axis=0)
    return concatenate([arr, values], axis=axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``a[1:] − a[:-1]`` along ``axis``, ``n`` times."""
    x = _tensor(a)
    ax = _axes(axis, x.ndim, "diff")[0] % x.ndim
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        parts = [broadcast_to(p, x.shape[:ax] + (1,) + x.shape[ax + 1:]) if np.ndim(_tensor(p)) == 0 else p
                 for p in parts]
        x = concatenate(parts, axis=ax)
    for _ in range(int(n)):
        x = subtract(getitem(x, R._slot(ax, 1, None)), getitem(x, R._slot(ax, 0, -1)))
    return x


def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient``: central differences inside, one-sided at the edges (unit or scalar spacing)."""
    x = _tensor(f)
    axes = list(range(x.ndim)) if axis is None else [a % x.ndim for a in np.atleast_1d(axis)]
    if edge_order != 1 or builtins.any(np.ndim(v) for v in varargs):
        raise TypeError("gradient: only edge_order=1 and scalar spacings are supported.")
    spacing = list(varargs) * len(axes) if len(varargs) == 1 else (list(varargs) or [1.0] * len(axes))
    out = []
    for ax, h in zip(axes, spacing):
        if x.shape[ax] < 2:
            raise ValueError("gradient: each axis needs at least 2 entries (edge_order + 1).")
        s = lambda a, b: getitem(x, R._slot(ax, a, b))  # noqa: E731
        parts = [s(1, 2) - s(0, 1)]
        if x.shape[ax] > 2:
            parts.append((s(2, None) - s(0, -2)) / 2.0)
        parts.append(s(-1, None) - s(-2, -1))
        out.append(concatenate(parts, axis=ax) / h)
    return out[0] if len(out) == 1 else out


def kron(a, b):
    """The Kronecker product: every entry of ``a`` times the whole of ``b``."""
    a, b = _tensor(a), _tensor(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    sa, sb = _letters(nd), _letters(nd, nd)
    prod_ = einsum(f"{sa},{sb}->{''.join(p + q for p, q in zip(sa, sb))}", a, b)
    return reshape(prod_, tuple(p * q for p, q in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (or the z-component for 2-vectors), written with slices."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"cross: the vectors must have 2 or 3 components, got {a.shape[-1]} and {b.shape[-1]}.")
    c = lambda t, i: getitem(t, (Ellipsis, i)) if i < t.shape[-1] else 0.0  # noqa: E731
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)
    out = stack([c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1), c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
                 c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)], axis=-1)
    return moveaxis(out, -1, axisc)


def _values_of(x):
    return x._value if isinstance(x, Tensor) else np.asarray(x)


def fmax(x1, x2):
    """``maximum`` that ignores NaN (returns the other side)."""
    a, b = _tensor(x1), _tensor(x2)
    return where(np.isnan(_values_of(b)), a, where(np.isnan(_values_of(a)), b, maximum(a, b)))


def fmin(x1, x2):
    """``minimum`` that ignores NaN (returns the other side)."""
    a, b = _tensor(x1), _tensor(x2)
    return where(np.isnan(_values_of(b)), a, where(np.isnan(_values_of(a)), b, minimum(a, b)))


def deg2rad(x): return multiply(x, np.pi / 180)
def rad2deg(x): return multiply(x, 180 / np.pi)


radians, degrees = deg2rad, rad2deg


def sinc(x):
    """``sin(πx)/(πx)``, 1 at 0 (its gradient there is 0)."""
    x = _tensor(x)
    zero = _values_of(x) == 0
    safe = where(zero, 1.0, x) * np.pi
    return where(zero, 1.0, sin(safe) / safe)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN and ±∞ replaced by numbers (the gradient is 1 at finite entries, 0 at replaced ones)."""
    x = _tensor(x)
    v = _values_of(x)
    big = np.finfo(v.dtype).max if v.dtype.kind == "f" else 0
    out = where(np.isnan(v), nan, x)
    out = where(np.isposinf(v), big if posinf is None else posinf, out)
    return where(np.isneginf(v), -big if neginf is None else neginf, out)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop``; differentiable in both ends."""
    if axis != 0 or np.ndim(_values_of(start)) or np.ndim(_values_of(stop)):
        raise TypeError("linspace: only scalar start/stop and axis=0 are supported.")
    num = int(num)
    div = (num - 1) if endpoint else num
    t = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    if endpoint and num > 1:
        t[-1] = 1.0
    start = _tensor(start)
    step = subtract(stop, start)
    y = start + step * t
    if dtype is not None:
        y = cast(y, dtype)
    return (y, step / div if div > 0 else np.nan) if retstep else y


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """The entries rearranged so that the ``kth`` is in its sorted place (values; gradient to their origin)."""
    x = _tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), -1
    return take_along_axis(x, np.argpartition(x._value, kth, axis=axis), axis)


def select(condlist, choicelist, default=0):
    """The first choice whose condition holds, entry by entry (nested ``where``)."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: condlist and choicelist must have the same length.")
    out = _tensor(default)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return out


NUMPY_FUNCTIONS.update({
    "atleast_1d", "atleast_2d", "atleast_3d", "vstack", "row_stack", "hstack", "dstack", "column_stack",
    "array_split", "vsplit", "hsplit", "dsplit", "rollaxis", "rot90", "append", "diff", "gradient", "kron", "cross",
    "fmax", "fmin", "deg2rad", "rad2deg", "radians", "degrees", "sinc", "nan_to_num", "linspace", "partition",
    "select",
})


# ----- new tensors: zeros, ones, full; a tensor's shape (keras.ops' spellings) ---
def _new_shape(shape, op: str) -> tuple:
    """``shape`` (an int, or a sequence of ints such as ``adv.shape(x)``) as a tuple of sizes ≥ 0.

    Shared by the functions that make a tensor from nothing but a shape
    (:func:`zeros`, :func:`ones`, :func:`full`, ``adv.random.*``), so each
    names itself when a size is not a whole number or is negative.
    """
    if isinstance(shape, Tensor):
        shape = shape._value
    try:
        out = _dims(shape, op)
    except TypeError:           # a size that is not a whole number, or no shape at all
        raise TypeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}; write e.g. "
                        f"{op}((batch_size, 3)) (int(n) for a size computed as a float, adv.shape(x) for "
                        "another tensor's shape).") from None
    if builtins.any(s < 0 for s in out):
        raise ValueError(f"{op}: shape {out} has a negative size; every size must be 0 or more.")
    return out


def _default_float(dtype, op: str):
    """``dtype`` as a numpy dtype, ``floatx()`` (``"float32"``, as Keras) when it is None."""
    if dtype is None:
        return np.dtype(floatx())
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {dtype!r} is not a dtype; use e.g. 'float32', 'float64' or 'int32'.") from None


def _filled(make, shape, dtype, op: str) -> Tensor:
    """``make(shape, dtype)`` (``np.zeros``, ``np.ones``) as a constant, its shape and size checked first."""
    shape, dt = _new_shape(shape, op), _default_float(dtype, op)
    check_nbytes(op, shape, dt, "Check the shape (a size that is much too large?).")
    return Tensor._wrap(make(shape, dtype=dt))


def zeros(shape, dtype=None):
    """A tensor of zeros, as ``keras.ops.zeros``: without ``dtype``, of ``adv.layers.floatx()`` (float32).

    The default is Keras' (``np.zeros`` would give float64), so labels made
    with it match a float32 model's outputs. The result is a constant.
    """
    return _filled(np.zeros, shape, dtype, "zeros")


def ones(shape, dtype=None):
    """A tensor of ones, as ``keras.ops.ones``: without ``dtype``, of ``adv.layers.floatx()`` (float32).

    The default is Keras' (``np.ones`` would give float64), so labels made
    with it match a float32 model's outputs. The result is a constant.
    """
    return _filled(np.ones, shape, dtype, "ones")


def full(shape, fill_value, dtype=None):
    """A tensor of ``shape`` filled with ``fill_value``, as ``keras.ops.full``.

    Without ``dtype`` the result has ``adv.layers.floatx()`` (float32), as in
    Keras, even for an integer ``fill_value`` (numpy would keep the value's
    type). ``fill_value`` may be an array that broadcasts to ``shape``. A
    tensor ``fill_value`` stays differentiable: the result is
    ``broadcast_to(fill_value, shape)``, whose gradient sums over the copies.
    """
    shape, dt = _new_shape(shape, "full"), _default_float(dtype, "full")
    check_nbytes("full", shape, dt, "Check the shape (a size that is much too large?).")
    if isinstance(fill_value, Tensor):
        return broadcast_to(cast(fill_value, dt), shape)
    value = np.asarray(fill_value)
    if not broadcasts_to(value.shape, shape):
        raise ValueError(f"full: fill_value of shape {value.shape} does not broadcast to shape {shape}; give a "
                         "number or an array whose sizes are 1 or match shape's trailing sizes.")
    return Tensor._wrap(np.full(shape, value, dtype=dt))


def _whole(value, what: str, op: str, example: str) -> int:
    """``value`` as an int (anything with ``__index__`` but a bool), else a TypeError that names ``what``."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {what} must be a whole number, got {value!r}; write e.g. {example} "
                        "(int(n) for a size computed as a float).") from None


def eye(N, M=None, k=0, dtype=None, *, num_columns=None, batch_shape=None):
    """The ``N × M`` matrix with ones on the ``k``-th diagonal and zeros elsewhere, as ``np.eye`` / ``tf.eye``.

    ``M`` defaults to ``N``; ``k > 0`` is a diagonal above the main one, ``k < 0`` one below. Without
    ``dtype`` the result has ``adv.layers.floatx()`` (float32), as ``tf.eye`` and ``keras.ops.eye``
    (``np.eye`` would give float64). TensorFlow's keywords work too: ``num_columns`` for ``M``, and
    ``batch_shape`` for leading copies (``adv.eye(2, batch_shape=[3])`` has shape ``(3, 2, 2)``).
    The result is a constant.
    """
    if M is not None and num_columns is not None:
        raise TypeError(f"eye: M={M!r} and num_columns={num_columns!r} both given; they are the same setting "
                        "(num_columns is TensorFlow's name): pass one.")
    rows = _whole(N, "N (the number of rows)", "eye", "adv.eye(3) or adv.eye(3, 4)")
    cols = M if M is not None else num_columns
    cols = rows if cols is None else _whole(cols, "M (the number of columns)", "eye", "adv.eye(3, 4)")
    k = _whole(k, "k (which diagonal: 0 the main one, 1 above, -1 below)", "eye", "adv.eye(3, k=1)")
    if rows < 0 or cols < 0:
        raise ValueError(f"eye: the matrix would be {rows} × {cols}; the number of rows and columns must be 0 "
                         "or more.")
    batch = () if batch_shape is None else _new_shape(batch_shape, "eye")
    dt = _default_float(dtype, "eye")
    check_nbytes("eye", batch + (rows, cols), dt, "Check N and M (a size that is much too large?).")
    value = np.eye(rows, cols, k, dtype=dt)
    return Tensor._wrap(np.broadcast_to(value, batch + value.shape).copy() if batch else value)


def _filled_like(make, x, dtype, op: str) -> Tensor:
    """``make`` of ``x``'s shape and (without ``dtype``) dtype; ``x``'s value is not read."""
    x = _tensor(x)
    dt = x.dtype if dtype is None else _default_float(dtype, op)
    check_nbytes(op, x.shape, dt, "Check the dtype (one much larger than x's?).")
    return Tensor._wrap(make(x.shape, dtype=dt))


def zeros_like(x, dtype=None):
    """Zeros of ``x``'s shape and (without ``dtype``) ``x``'s dtype, as ``np.zeros_like`` and ``tf.zeros_like``.

    A constant: its value depends only on ``x``'s shape, not on ``x``'s value, so no gradient
    flows back to ``x`` through it (``tape.gradient`` gives None, as in TensorFlow).
    """
    return _filled_like(np.zeros, x, dtype, "zeros_like")


def ones_like(x, dtype=None):
    """Ones of ``x``'s shape and (without ``dtype``) ``x``'s dtype, as ``np.ones_like`` and ``tf.ones_like``.

    A constant: its value depends only on ``x``'s shape, not on ``x``'s value, so no gradient
    flows back to ``x`` through it (``tape.gradient`` gives None, as in TensorFlow).
    """
    return _filled_like(np.ones, x, dtype, "ones_like")


def shape(x) -> tuple:
    """The shape of ``x`` as a tuple of ints, as ``keras.ops.shape`` (``tf.shape`` in Keras 2 code).

    A plain tuple, not a tensor: ``adv.shape(x)[0]`` is the batch size, and
    ``adv.zeros(adv.shape(x))`` a tensor like ``x``. Arrays, lists and
    numbers are accepted too.
    """
    if isinstance(x, Tensor):
        return tuple(x.shape)
    return tuple(int(s) for s in np.shape(x))
