"""Shape ops under their numpy names: ``reshape``, ``transpose``, ``concatenate``, ``stack``, indexing, ``pad`` …
"""
from __future__ import annotations

import builtins
import operator
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from .. import rules as R
from ..engine import call
from ..tensor import Tensor, check_nbytes
from .common import _axes, _default_float, _no_out, _tensor

if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

    from ..types import Axis, DTypeLike, Shape, Tensor, TensorLike


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


def reshape(x: TensorLike, shape: Shape | None = None, order: str = "C", *, newshape: Shape | None = None,
            copy: bool | None = None) -> Tensor:
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


def transpose(a: TensorLike, axes: Axis = None, perm: Sequence[int] | None = None) -> Tensor:
    """Permute axes (default: reverse them). ``axes`` as ``np.transpose`` (``perm`` as ``tf.transpose``)."""
    x = _tensor(a)
    perm = axes if axes is not None else perm
    axes = tuple(reversed(range(x.ndim))) if perm is None else tuple(int(p) % builtins.max(x.ndim, 1) for p in perm)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: {perm} is not a permutation of the {x.ndim} axes of a tensor of shape {x.shape}.")
    return call(R.transpose, x, axes=axes)


def expand_dims(x: TensorLike, axis: Axis) -> Tensor:
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


def squeeze(x: TensorLike, axis: Axis = None) -> Tensor:
    x = _tensor(x)
    if axis is None:
        drop = {i for i, n in enumerate(x.shape) if n == 1}
    else:
        drop = {a % x.ndim for a in _axes(axis, x.ndim, "squeeze")}
        bad = [a for a in drop if x.shape[a] != 1]
        if bad:
            raise ValueError(f"squeeze: axis {bad[0]} of shape {x.shape} has size {x.shape[bad[0]]}, not 1.")
    return call(R.squeeze, x, shape=tuple(n for i, n in enumerate(x.shape) if i not in drop))


def broadcast_to(x: TensorLike, shape: Shape) -> Tensor:
    x = _tensor(x)
    shape = tuple(int(s) for s in shape)
    return call(R.broadcast_to, x, shape=shape)


def concatenate(values: TensorLike, axis: Axis = 0, out: None = None, *, dtype: DTypeLike | None = None) -> Tensor:
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


def stack(values: TensorLike, axis: Axis = 0) -> Tensor:
    """Join tensors of equal shape along a new axis."""
    xs = [_tensor(v) for v in values]
    if not xs:
        raise ValueError("stack: needs at least one tensor.")
    ndim = xs[0].ndim + 1
    ax = int(axis)
    if not -ndim <= ax < ndim:
        raise ValueError(f"stack: axis {ax} is out of range for the stacked result with {ndim} axes.")
    return call(R.stack, *xs, axis=ax % ndim)


def split(ary: TensorLike, indices_or_sections: int | Sequence[int] | None = None, axis: Axis = 0, *,
          num_or_size_splits: int | Sequence[int] | None = None) -> list[Tensor]:
    """``np.split``: ``n`` equal sections, or the *indices* where the pieces are cut (numpy's meaning).

    ``adv.split(x, [1, 5])`` on 6 entries cuts before entries 1 and 5: three pieces of sizes 1, 4, 1.
    TensorFlow's ``tf.split(x, [1, 5])`` reads the list as *sizes* (two pieces, 1 and 5); here that is
    spelled with TensorFlow's keyword, ``adv.split(x, num_or_size_splits=[1, 5])``, whose sizes must add
    up to the axis. Each piece is a slice of ``x`` (recorded as ``getitem``), so its gradient lands on
    its own entries of ``x`` and zeros elsewhere.
    """
    x = _tensor(ary)
    if (indices_or_sections is None) == (num_or_size_splits is None):
        raise TypeError("split: give either numpy's indices_or_sections (adv.split(x, [1, 5]) cuts at 1 and 5) "
                        "or TensorFlow's num_or_size_splits= (adv.split(x, num_or_size_splits=[1, 5]): sizes).")
    ax = _axes(axis, x.ndim, "split")[0] % x.ndim
    n = x.shape[ax]
    sections = indices_or_sections if num_or_size_splits is None else num_or_size_splits
    if isinstance(sections, Integral) or (isinstance(sections, np.ndarray) and sections.ndim == 0):
        k = int(sections)
        if k <= 0 or n % k:
            raise ValueError(f"split: axis {ax} has size {n}, which does not split into {k} equal parts "
                             f"(adv.array_split allows unequal ones, as numpy).")
        bounds = list(range(0, n + 1, n // k))
    elif num_or_size_splits is not None:
        sizes = [int(s) for s in num_or_size_splits]
        if builtins.sum(sizes) != n:
            raise ValueError(f"split: num_or_size_splits={sizes} add up to {builtins.sum(sizes)}, but axis {ax} "
                             f"has size {n}.")
        bounds = [0] + [int(b) for b in np.cumsum(sizes)]
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i) if i >= 0 else n + int(i), 0), n)
                        for i in indices_or_sections] + [n]
    return [call(R.getitem, x, index=R._slot(ax, a, builtins.max(a, b)), lead=0) for a, b in zip(bounds, bounds[1:])]


def take(x: TensorLike, indices: TensorLike, axis: Axis = None) -> Tensor:
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


def cast(x: TensorLike, dtype: DTypeLike) -> Tensor:
    """``x`` as ``dtype``. Casting to an integer type cuts the gradient (as TensorFlow)."""
    x = _tensor(x)
    dt = np.dtype(dtype)
    if dt == x.dtype:
        return x
    return call(R.cast, x, dtype=dt)


def one_hot(indices: TensorLike, depth: int | None = None, dtype: DTypeLike | None = None, *,
            num_classes: int | None = None) -> Tensor:
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


def stop_gradient(x: TensorLike) -> Tensor:
    """``x`` itself, but gradients do not flow back through it."""
    return call(R.stop_gradient, _tensor(x))


def numpy_function(func: Callable[..., Any], inp: TensorLike, Tout: Any, stateful: bool = True,
                   name: str | None = None) -> Tensor:
    """``tf.numpy_function``: run ``func`` on the numpy values of the tensors in ``inp``; its result(s) become
    tensors of dtype ``Tout`` (one dtype, or a list of them for a tuple of results).

    The tape records one ``numpy_function`` op per result, with the line that called it, but cannot see
    inside ``func``: no gradient flows back through it (as in TensorFlow), and ``tape.explain`` names the op
    and the line. To get a gradient, write ``func`` with adv ops, call it through :func:`py_function` (whose
    body is recorded), or give its gradient with ``@adv.custom_gradient``.
    """
    inputs = [_tensor(x) for x in inp]
    several = isinstance(Tout, (list, tuple))
    result = func(*[t._value for t in inputs])
    results = list(result) if several and isinstance(result, (list, tuple)) else [result]
    dtypes = list(Tout) if several else [Tout]
    if len(results) != len(dtypes):
        raise ValueError(f"numpy_function: {getattr(func, '__name__', 'func')} returned {len(results)} value(s) "
                         f"but Tout lists {len(dtypes)} dtype(s) {dtypes}; give one dtype per returned value.")
    label = getattr(func, "__name__", type(func).__name__)
    outs = [call(R.numpy_function, *inputs, function=label, value=np.asarray(r, dtype=np.dtype(d)))
            for r, d in zip(results, dtypes)]
    return outs if several else outs[0]


def py_function(func: Callable[..., Any], inp: TensorLike, Tout: Any, name: str | None = None) -> Tensor:
    """``tf.py_function``: run ``func`` eagerly on the tensors in ``inp`` and cast its result(s) to ``Tout``.

    Unlike :func:`numpy_function`, ``func`` receives tensors, and the adv ops it runs are recorded as any
    others, so the gradient flows through its body as in TensorFlow (a ``.numpy()`` inside it is an escape,
    which ``tape.explain`` names).
    """
    several = isinstance(Tout, (list, tuple))
    result = func(*[_tensor(x) for x in inp])
    results = list(result) if several and isinstance(result, (list, tuple)) else [result]
    dtypes = list(Tout) if several else [Tout]
    if len(results) != len(dtypes):
        raise ValueError(f"py_function: {getattr(func, '__name__', 'func')} returned {len(results)} value(s) "
                         f"but Tout lists {len(dtypes)} dtype(s) {dtypes}; give one dtype per returned value.")
    outs = [cast(r, d) if _tensor(r).dtype != np.dtype(d) else _tensor(r) for r, d in zip(results, dtypes)]
    return outs if several else outs[0]


def identity(x: TensorLike) -> Tensor:
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


# ----- the numpy surface: shapes and indexing ------------------------------------
def _gather(rule, x, index):
    return call(rule, x, index=index, lead=0)


def _outer_index(maps):
    """An advanced index taking ``maps[k]`` along every axis ``k`` (an outer product of index arrays)."""
    n = len(maps)
    return tuple(np.asarray(m).reshape((-1,) + (1,) * (n - 1 - k)) for k, m in enumerate(maps))


def ravel(a: TensorLike, order: str = "C") -> Tensor:
    """``a`` as one axis (a copy: tensors are immutable)."""
    if order not in ("C", "A", "K"):
        raise ValueError(f"ravel: only order='C' is supported, got {order!r}.")
    return reshape(a, (-1,))


def swapaxes(a: TensorLike, axis1: int, axis2: int) -> Tensor:
    x = _tensor(a)
    i, j = (_axes(ax, x.ndim, "swapaxes")[0] % x.ndim for ax in (axis1, axis2))
    perm = list(range(x.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


def moveaxis(a: TensorLike, source: Axis, destination: Axis) -> Tensor:
    x = _tensor(a)
    src = [_axes(s, x.ndim, "moveaxis")[0] % x.ndim for s in np.atleast_1d(source)]
    dst = [_axes(d, x.ndim, "moveaxis")[0] % x.ndim for d in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations.")
    order = [k for k in range(x.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def flip(m: TensorLike, axis: Axis = None) -> Tensor:
    """``m`` reversed along ``axis`` (all axes when None)."""
    x = _tensor(m)
    axes = {a % builtins.max(x.ndim, 1) for a in _axes(axis, x.ndim, "flip")}
    return _gather(R.flip, x, tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(x.ndim)))


def fliplr(m: TensorLike) -> Tensor: return flip(m, 1)


def flipud(m: TensorLike) -> Tensor: return flip(m, 0)


def roll(a: TensorLike, shift: int | Sequence[int], axis: Axis = None) -> Tensor:
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


def tile(A: TensorLike, reps: Shape) -> Tensor:
    """``A`` repeated as whole blocks, ``reps`` times along each axis (as ``np.tile``)."""
    x = _tensor(A)
    reps = (int(reps),) if isinstance(reps, Integral) else tuple(int(r) for r in reps)
    d = builtins.max(x.ndim, len(reps))
    reps = (1,) * (d - len(reps)) + reps
    if x.ndim < d:
        x = reshape(x, (1,) * (d - x.ndim) + x.shape)
    return _gather(R.tile, x, _outer_index([np.tile(np.arange(n), r) for n, r in zip(x.shape, reps)]))


def repeat(a: TensorLike, repeats: TensorLike, axis: Axis = None) -> Tensor:
    """Each entry repeated ``repeats`` times along ``axis`` (the flattened array when None)."""
    x = _tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axes(axis, x.ndim, "repeat")[0] % x.ndim
    source = np.repeat(np.arange(x.shape[ax]), np.asarray(repeats._value if isinstance(repeats, Tensor) else repeats))
    return _gather(R.repeat, x, (slice(None),) * ax + (source,))


def take_along_axis(arr: TensorLike, indices: TensorLike, axis: Axis = -1) -> Tensor:
    """``arr`` picked at ``indices`` along ``axis`` (one index per entry, as ``np.take_along_axis``, whose axis
    defaults to the last from numpy 2.3; ``None`` flattens first)."""
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


def diagonal(a: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
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


def diag(v: TensorLike, k: int = 0) -> Tensor:
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


def triu(m: TensorLike, k: int = 0) -> Tensor:
    """``m`` with the entries below diagonal ``k`` set to 0 (on the last two axes)."""
    x = _tensor(m)
    if x.ndim < 2:
        raise ValueError(f"triu: needs a matrix (2 or more axes), got shape {x.shape}.")
    return call(R.triu, x, k=int(k))


def tril(m: TensorLike, k: int = 0) -> Tensor:
    """``m`` with the entries above diagonal ``k`` set to 0 (on the last two axes)."""
    x = _tensor(m)
    if x.ndim < 2:
        raise ValueError(f"tril: needs a matrix (2 or more axes), got shape {x.shape}.")
    return call(R.tril, x, k=int(k))


def pad(array: TensorLike, pad_width: Any, mode: str = "constant", constant_values: TensorLike = 0,
        **kwargs: Any) -> Tensor:
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
