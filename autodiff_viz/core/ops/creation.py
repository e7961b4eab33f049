"""New tensors: ``zeros``, ``ones``, ``full``, ``eye``, ``zeros_like`` …, and a tensor's ``shape`` (keras.ops'
spellings).
"""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING

import numpy as np

from ...base.state import config, user_frame
from ..engine import broadcasts_to
from ..tensor import Tensor, check_nbytes
from .common import _default_float, _tensor
from .shapes import _dims, broadcast_to, cast

if TYPE_CHECKING:
    from ..types import DTypeLike, Shape, Tensor, TensorLike


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


def _filled(make, shape, dtype, op: str) -> Tensor:
    """``make(shape, dtype)`` (``np.zeros``, ``np.ones``) as a constant, its shape and size checked first."""
    shape, dt = _new_shape(shape, op), _default_float(dtype, op)
    check_nbytes(op, shape, dt, "Check the shape (a size that is much too large?).")
    out = Tensor._wrap(make(shape, dtype=dt))
    out._made_at = user_frame(skip=0) if config.capture_locations else None    # why-None quotes the line
    return out


def zeros(shape: Shape, dtype: DTypeLike | None = None) -> Tensor:
    """A tensor of zeros, as ``keras.ops.zeros``: without ``dtype``, of ``adv.layers.floatx()`` (float32).

    The default is Keras' (``np.zeros`` would give float64), so labels made
    with it match a float32 model's outputs. The result is a constant.
    """
    return _filled(np.zeros, shape, dtype, "zeros")


def ones(shape: Shape, dtype: DTypeLike | None = None) -> Tensor:
    """A tensor of ones, as ``keras.ops.ones``: without ``dtype``, of ``adv.layers.floatx()`` (float32).

    The default is Keras' (``np.ones`` would give float64), so labels made
    with it match a float32 model's outputs. The result is a constant.
    """
    return _filled(np.ones, shape, dtype, "ones")


def full(shape: Shape, fill_value: TensorLike, dtype: DTypeLike | None = None) -> Tensor:
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


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike | None = None, *, num_columns: int | None = None,
        batch_shape: Shape | None = None) -> Tensor:
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


def zeros_like(x: TensorLike, dtype: DTypeLike | None = None) -> Tensor:
    """Zeros of ``x``'s shape and (without ``dtype``) ``x``'s dtype, as ``np.zeros_like`` and ``tf.zeros_like``.

    A constant: its value depends only on ``x``'s shape, not on ``x``'s value, so no gradient
    flows back to ``x`` through it (``tape.gradient`` gives None, as in TensorFlow).
    """
    return _filled_like(np.zeros, x, dtype, "zeros_like")


def ones_like(x: TensorLike, dtype: DTypeLike | None = None) -> Tensor:
    """Ones of ``x``'s shape and (without ``dtype``) ``x``'s dtype, as ``np.ones_like`` and ``tf.ones_like``.

    A constant: its value depends only on ``x``'s shape, not on ``x``'s value, so no gradient
    flows back to ``x`` through it (``tape.gradient`` gives None, as in TensorFlow).
    """
    return _filled_like(np.ones, x, dtype, "ones_like")


def shape(x: TensorLike) -> tuple:
    """The shape of ``x`` as a tuple of ints, as ``keras.ops.shape`` (``tf.shape`` in Keras 2 code).

    A plain tuple, not a tensor: ``adv.shape(x)[0]`` is the batch size, and
    ``adv.zeros(adv.shape(x))`` a tensor like ``x``. Arrays, lists and
    numbers are accepted too.
    """
    if isinstance(x, Tensor):
        return tuple(x.shape)
    return tuple(int(s) for s in np.shape(x))
