"""numpy functions written with the ops above (``vstack``, ``diff``, ``kron``, ``linspace`` …): their graph shows
those ops.
"""
from __future__ import annotations

import builtins
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from .. import rules as R
from ..tensor import Tensor
from .common import _axes, _tensor
from .contractions import _letters, _numpy_split, einsum
from .elementwise import maximum, minimum, multiply, sin, subtract, where
from .shapes import (
    broadcast_to,
    cast,
    concatenate,
    flip,
    getitem,
    moveaxis,
    reshape,
    stack,
    swapaxes,
    take_along_axis,
    transpose,
)

if TYPE_CHECKING:
    from typing import Sequence

    from ..types import Axis, DTypeLike, Tensor, TensorLike


# ----- the numpy surface: functions written with the ops above (their graph shows those ops) -------
def atleast_1d(*arys: TensorLike) -> Tensor | list[Tensor]:
    out = [reshape(a, (1,)) if _tensor(a).ndim == 0 else _tensor(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: TensorLike) -> Tensor | list[Tensor]:
    out = []
    for a in arys:
        x = _tensor(a)
        out.append(reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys: TensorLike) -> Tensor | list[Tensor]:
    out = []
    for a in arys:
        x = _tensor(a)
        shape = {0: (1, 1, 1), 1: (1,) + x.shape + (1,), 2: x.shape + (1,)}.get(x.ndim, x.shape)
        out.append(reshape(x, shape) if x.ndim < 3 else x)
    return out[0] if len(out) == 1 else out


def vstack(tup: Sequence[TensorLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind") -> Tensor:
    """Rows stacked: ``concatenate`` along axis 0 after making 1-D inputs rows."""
    return concatenate([atleast_2d(t) for t in tup], axis=0)


row_stack = vstack


def hstack(tup: Sequence[TensorLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind") -> Tensor:
    """Columns joined: ``concatenate`` along axis 1 (axis 0 for 1-D inputs)."""
    xs = [atleast_1d(t) for t in tup]
    return concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


def dstack(tup: Sequence[TensorLike]) -> Tensor:
    return concatenate([atleast_3d(t) for t in tup], axis=2)


def column_stack(tup: Sequence[TensorLike]) -> Tensor:
    """1-D inputs become columns; the results are joined along axis 1."""
    xs = []
    for t in tup:
        x = _tensor(t)
        xs.append(reshape(x, (x.shape[0], 1)) if x.ndim == 1 else atleast_2d(x))
    return concatenate(xs, axis=1)


def array_split(ary: TensorLike, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """Like ``np.split``, but ``n`` sections need not be equal (the first ones get one more)."""
    x = _tensor(ary)
    if not isinstance(indices_or_sections, Integral):
        return _numpy_split(x, indices_or_sections, axis)
    k = int(indices_or_sections)
    n = x.shape[_axes(axis, x.ndim, "array_split")[0]]
    size, extra = divmod(n, k)
    bounds = np.cumsum([size + 1] * extra + [size] * (k - extra))[:-1]
    return _numpy_split(x, bounds, axis)


def vsplit(ary: TensorLike, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    return _numpy_split(ary, indices_or_sections, 0)


def dsplit(ary: TensorLike, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    return _numpy_split(ary, indices_or_sections, 2)


def hsplit(ary: TensorLike, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    return _numpy_split(ary, indices_or_sections, 1 if _tensor(ary).ndim > 1 else 0)


def rollaxis(a: TensorLike, axis: Axis, start: TensorLike = 0) -> Tensor:
    x = _tensor(a)
    axis, start = int(axis) % x.ndim, int(start) if start >= 0 else int(start) + x.ndim
    order = [k for k in range(x.ndim) if k != axis]
    order.insert(start - (start > axis), axis)
    return transpose(x, order)


def rot90(m: TensorLike, k: int = 1, axes: Axis = (0, 1)) -> Tensor:
    """``m`` rotated by 90° ``k`` times in the plane of ``axes`` (flips and a swap of axes)."""
    x = _tensor(m)
    a, b = axes
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    return swapaxes(flip(x, b), a, b) if k == 1 else flip(swapaxes(x, a, b), b)


def append(arr: TensorLike, values: TensorLike, axis: Axis = None) -> Tensor:
    """``arr`` with ``values`` joined at the end (both flattened when ``axis`` is None)."""
    if axis is None:
        return concatenate([reshape(arr, (-1,)), reshape(values, (-1,))], axis=0)
    return concatenate([arr, values], axis=axis)


def diff(a: TensorLike, n: int = 1, axis: Axis = -1, prepend: TensorLike | None = None,
         append: TensorLike | None = None) -> Tensor:
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


def gradient(f: TensorLike, *varargs: TensorLike, axis: Axis = None, edge_order: int = 1) -> Tensor | list[Tensor]:
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


def kron(a: TensorLike, b: TensorLike) -> Tensor:
    """The Kronecker product: every entry of ``a`` times the whole of ``b``."""
    a, b = _tensor(a), _tensor(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    sa, sb = _letters(nd), _letters(nd, nd)
    prod_ = einsum(f"{sa},{sb}->{''.join(p + q for p, q in zip(sa, sb))}", a, b)
    return reshape(prod_, tuple(p * q for p, q in zip(a.shape, b.shape)))


def cross(a: TensorLike, b: TensorLike, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Axis = None) -> Tensor:
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


def fmax(x1: TensorLike, x2: TensorLike) -> Tensor:
    """``maximum`` that ignores NaN (returns the other side)."""
    a, b = _tensor(x1), _tensor(x2)
    return where(np.isnan(_values_of(b)), a, where(np.isnan(_values_of(a)), b, maximum(a, b)))


def fmin(x1: TensorLike, x2: TensorLike) -> Tensor:
    """``minimum`` that ignores NaN (returns the other side)."""
    a, b = _tensor(x1), _tensor(x2)
    return where(np.isnan(_values_of(b)), a, where(np.isnan(_values_of(a)), b, minimum(a, b)))


def deg2rad(x: TensorLike) -> Tensor: return multiply(x, np.pi / 180)


def rad2deg(x: TensorLike) -> Tensor: return multiply(x, 180 / np.pi)


radians, degrees = deg2rad, rad2deg


def sinc(x: TensorLike) -> Tensor:
    """``sin(πx)/(πx)``, 1 at 0 (its gradient there is 0)."""
    x = _tensor(x)
    zero = _values_of(x) == 0
    safe = where(zero, 1.0, x) * np.pi
    return where(zero, 1.0, sin(safe) / safe)


def nan_to_num(x: TensorLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN and ±∞ replaced by numbers (the gradient is 1 at finite entries, 0 at replaced ones)."""
    x = _tensor(x)
    v = _values_of(x)
    big = np.finfo(v.dtype).max if v.dtype.kind == "f" else 0
    out = where(np.isnan(v), nan, x)
    out = where(np.isposinf(v), big if posinf is None else posinf, out)
    return where(np.isneginf(v), -big if neginf is None else neginf, out)


def linspace(start: TensorLike, stop: TensorLike, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: DTypeLike | None = None, axis: Axis = 0) -> Tensor:
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


def partition(a: TensorLike, kth: int | Sequence[int], axis: Axis = -1, kind: str = "introselect",
              order: str | None = None) -> Tensor:
    """The entries rearranged so that the ``kth`` is in its sorted place (values; gradient to their origin)."""
    x = _tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), -1
    return take_along_axis(x, np.argpartition(x._value, kth, axis=axis), axis)


def select(condlist: Sequence[TensorLike], choicelist: Sequence[TensorLike], default: TensorLike = 0) -> Tensor:
    """The first choice whose condition holds, entry by entry (nested ``where``)."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: condlist and choicelist must have the same length.")
    out = _tensor(default)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, choice, out)
    return out
