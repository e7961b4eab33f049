"""Reductions and scans under their numpy names: ``sum``, ``mean``, ``max``, ``var``, ``std``, ``cumsum``, ``sort`` …
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rules as R
from ..engine import apply, call
from .common import _axes, _no_out, _refuse_numpy_keywords, _tensor
from .shapes import cast, diagonal, flip, reshape

if TYPE_CHECKING:
    from ..types import Axis, DTypeLike, Tensor, TensorLike


def _reduce(rule, x, axis, keepdims, dtype=None, out=None, **params):
    _no_out(out, rule.name)
    x = _tensor(x) if dtype is None else cast(x, dtype)
    return apply(rule, x, axis=_axes(axis, x.ndim, rule.name), keepdims=bool(keepdims), **params)


def sum(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
        keepdims: bool = False, initial: TensorLike | None = None, where: TensorLike = True) -> Tensor:
    """``Σ a`` over ``axis`` (all axes when None), as ``np.sum`` (``initial``/``where`` are refused by name)."""
    _refuse_numpy_keywords("sum", initial=initial, where=where)
    return _reduce(R.sum, a, axis, keepdims, dtype, out)


def mean(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
         keepdims: bool = False, *, where: TensorLike = True) -> Tensor:
    """The mean over ``axis``, as ``np.mean``."""
    _refuse_numpy_keywords("mean", where=where)
    return _reduce(R.mean, a, axis, keepdims, dtype, out)


def max(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False,
        initial: TensorLike | None = None, where: TensorLike = True) -> Tensor:
    """The largest entry over ``axis``. Tied maxima share the gradient equally (as JAX and TensorFlow)."""
    _refuse_numpy_keywords("max", initial=initial, where=where)
    return _reduce(R.max, a, axis, keepdims, None, out)


def min(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False,
        initial: TensorLike | None = None, where: TensorLike = True) -> Tensor:
    """The smallest entry over ``axis``. Tied minima share the gradient equally (as JAX and TensorFlow)."""
    _refuse_numpy_keywords("min", initial=initial, where=where)
    return _reduce(R.min, a, axis, keepdims, None, out)


amax, amin = max, min


def logsumexp(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    return _reduce(R.logsumexp, x, axis, keepdims)


def _arg(rule, a, axis, out, keepdims):
    _no_out(out, rule.name)
    x = _tensor(a)
    y = call(rule, x, axis=None if axis is None else _axes(axis, x.ndim, rule.name)[0])
    if keepdims:
        y = reshape(y, (1,) * x.ndim if axis is None else R._keepdims_shape(x.shape, _axes(axis, x.ndim, rule.name)))
    return y


def argmax(a: TensorLike, axis: Axis = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """Index of the largest entry (an integer tensor: no gradient flows through it)."""
    return _arg(R.argmax, a, axis, out, keepdims)


def argmin(a: TensorLike, axis: Axis = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """Index of the smallest entry (an integer tensor: no gradient flows through it)."""
    return _arg(R.argmin, a, axis, out, keepdims)


# ----- the numpy surface: reductions and scans -----------------------------------
def prod(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None,
         keepdims: bool = False, initial: TensorLike | None = None, where: TensorLike = True) -> Tensor:
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


def var(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
        keepdims: bool = False, *, where: TensorLike = True, mean: TensorLike | None = None,
        correction: float | None = None) -> Tensor:
    """``Σ(a − ā)²/(n − ddof)`` over ``axis`` (numpy's default ddof=0; ``ddof=1`` (or ``correction=1``) for the
    sample variance)."""
    return _reduce(R.var, a, axis, keepdims, dtype, out, ddof=_ddof("var", ddof, correction, where, mean))


def std(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
        keepdims: bool = False, *, where: TensorLike = True, mean: TensorLike | None = None,
        correction: float | None = None) -> Tensor:
    """``√var(a)``; its gradient is 0 where the standard deviation is 0 (all entries equal: a subgradient)."""
    return _reduce(R.std, a, axis, keepdims, dtype, out, ddof=_ddof("std", ddof, correction, where, mean))


def _scan(rule, a, axis, dtype, out):
    _no_out(out, rule.name)
    x = _tensor(a) if dtype is None else cast(a, dtype)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return call(rule, x, axis=_axes(axis, x.ndim, rule.name)[0], reverse=False)


def cumsum(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None) -> Tensor:
    """Running sums along ``axis`` (the flattened array when None); the gradient sums ḡ from the end."""
    return _scan(R.cumsum, a, axis, dtype, out)


def cumprod(a: TensorLike, axis: Axis = None, dtype: DTypeLike | None = None, out: None = None) -> Tensor:
    """Running products along ``axis``; the gradient is exact also where entries are 0."""
    return _scan(R.cumprod, a, axis, dtype, out)


def _direction(direction, op):
    """TensorFlow's ``direction``; ``tf.sort(x, axis, "DESCENDING")`` passes it where numpy has ``kind``."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op}: direction must be 'ASCENDING' or 'DESCENDING' (TensorFlow's), got {direction!r}.")
    return direction == "DESCENDING"


def sort(a: TensorLike, axis: Axis = -1, kind: str | None = None, order: str | None = None, *,
         direction: str = "ASCENDING", name: str | None = None) -> Tensor:
    """A sorted copy of ``a`` (values) along ``axis``; the gradient goes back to where each value came from.

    ``direction="DESCENDING"`` (TensorFlow's ``tf.sort`` keyword) gives the largest first. The top ``k``
    values: ``adv.sort(x, direction="DESCENDING")[..., :k]`` or ``adv.math.top_k(x, k)``.
    """
    x = _tensor(a)
    if kind in ("ASCENDING", "DESCENDING"):        # tf.sort(values, axis, direction): the third positional
        direction = kind
    if order is not None:
        raise TypeError("sort: order= (structured arrays) is not supported.")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axes(axis, x.ndim, "sort")[0]
    if _direction(direction, "sort"):
        return flip(call(R.sort, flip(x, ax), axis=ax), ax)
    return call(R.sort, x, axis=ax)


def argsort(a: TensorLike, axis: Axis = -1, kind: str | None = None, order: str | None = None, *,
            direction: str = "ASCENDING", stable: bool = False, name: str | None = None) -> Tensor:
    """Indices that sort ``a`` (an integer tensor: no gradient); ``direction="DESCENDING"`` as ``tf.argsort``
    (equal values keep their order, as TensorFlow's stable sort)."""
    x = _tensor(a)
    if kind in ("ASCENDING", "DESCENDING"):        # tf.argsort(values, axis, direction)
        direction = kind
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axes(axis, x.ndim, "argsort")[0]
    if _direction(direction, "argsort"):
        n = x.shape[ax]
        return (n - 1) - flip(call(R.argsort, flip(x, ax), axis=ax), ax)
    return call(R.argsort, x, axis=ax)


def any(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False) -> Tensor:
    """Is any entry nonzero? A boolean tensor (no gradient)."""
    return _reduce(R.any_, a, axis, keepdims, None, out)


def all(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False) -> Tensor:
    """Are all entries nonzero? A boolean tensor (no gradient)."""
    return _reduce(R.all_, a, axis, keepdims, None, out)


def trace(a: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DTypeLike | None = None,
          out: None = None) -> Tensor:
    """Sum of the diagonal ``a[i, i + offset]`` (over the first two axes by default, as ``np.trace``)."""
    _no_out(out, "trace")
    d = diagonal(a if dtype is None else cast(a, dtype), offset, axis1, axis2)
    return sum(d, axis=-1)
