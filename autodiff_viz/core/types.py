"""The types the public signatures are written with, so editors complete and type checkers check what learners type.

Every op takes a :class:`~autodiff_viz.core.tensor.Tensor` or anything numpy
reads as an array (a number, a nested list, an ``ndarray``) and returns a
``Tensor``, as ``tf.exp`` takes a Python list. The modules that define the
public ops import these names under ``typing.TYPE_CHECKING`` only: at run time
nothing here is imported, and an annotation costs nothing (each of those
modules has ``from __future__ import annotations``).
"""
from __future__ import annotations

from typing import Sequence, Union

from numpy.typing import ArrayLike, DTypeLike

from .tensor import Tensor

#: a Tensor, or a value numpy reads as an array: ``2.0``, ``[[1, 2], [3, 4]]``, an ``ndarray``
TensorLike = Union[Tensor, ArrayLike]
#: one axis, several, or None for all of them (numpy's and Keras' ``axis``)
Axis = Union[int, Sequence[int], None]
#: a shape: one length, or one length per axis
Shape = Union[int, Sequence[int]]

__all__ = ["ArrayLike", "Axis", "DTypeLike", "Shape", "Tensor", "TensorLike"]
