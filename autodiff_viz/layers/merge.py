"""Merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``, ``Concatenate``.

Each takes a *list* of tensors, as in Keras: ``Add()([x, shortcut])`` (a
residual connection). On the graph the inputs meet in one box; the gradient
of ``Add`` copies ḡ to every input, ``Multiply`` sends each input ḡ times the
product of the others, ``Concatenate`` slices ḡ back into the pieces.
"""
from __future__ import annotations

import functools
from numbers import Integral

import numpy as np

from .. import ops
from .base import Layer

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate"]


class _Merge(Layer):
    _takes_list = True
    supports_masking = True
    min_inputs = 1
    max_inputs = None

    def compute_mask(self, inputs, mask=None):
        """A step is real where it is real in every input that carries a mask (Keras 3's merge layers)."""
        masks = [np.asarray(m) for m in (mask or ()) if m is not None]
        return functools.reduce(np.logical_and, masks) if masks else None

    def _check(self, inputs):
        kind = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"{self.name} ({kind}): call it on a list of tensors, e.g. {kind}()([a, b]); "
                            f"got a single {type(inputs).__name__}.")
        n = len(inputs)
        if n < self.min_inputs or (self.max_inputs is not None and n > self.max_inputs):
            want = (f"exactly {self.max_inputs}" if self.max_inputs == self.min_inputs
                    else f"at least {self.min_inputs}")
            raise ValueError(f"{self.name} ({kind}): needs {want} inputs, got {n}.")
        return inputs

    def build(self, input_shape):
        pass

    def _check_broadcast(self, inputs):
        shapes = [tuple(x.shape) for x in inputs]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"{self.name} ({type(self).__name__}): the input shapes {shapes} do not match (nor "
                             "broadcast). Merge tensors of the same shape, e.g. project the shortcut with a Dense "
                             "or 1×1 Conv2D layer first.") from None

    def call(self, inputs):
        inputs = self._check(inputs)
        self._check_broadcast(inputs)
        return self._merge(list(inputs))


class Add(_Merge):
    """The sum of the inputs: ``Add()([x, shortcut])``. Its gradient is ḡ for every input."""

    def _merge(self, xs):
        return functools.reduce(ops.add, xs)


class Subtract(_Merge):
    """``a − b`` for exactly two inputs ``[a, b]``."""

    min_inputs = max_inputs = 2

    def _merge(self, xs):
        return xs[0] - xs[1]


class Multiply(_Merge):
    """The elementwise product of the inputs (gating)."""

    def _merge(self, xs):
        return functools.reduce(ops.multiply, xs)


class Average(_Merge):
    """The elementwise mean of the inputs."""

    def _merge(self, xs):
        return functools.reduce(ops.add, xs) / float(len(xs))


class Maximum(_Merge):
    """The elementwise maximum of the inputs (ties share the gradient)."""

    def _merge(self, xs):
        return functools.reduce(ops.maximum, xs)


class Minimum(_Merge):
    """The elementwise minimum of the inputs (ties share the gradient)."""

    def _merge(self, xs):
        return functools.reduce(ops.minimum, xs)


class Concatenate(_Merge):
    """Join the inputs along ``axis`` (default -1, the features), as ``keras.layers.Concatenate``.

        >>> Concatenate()([np.ones((2, 3)), np.zeros((2, 5))]).shape
        (2, 8)
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, Integral):
            raise TypeError(f"Concatenate: axis must be an int, got {axis!r}.")
        self.axis = int(axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}

    def compute_mask(self, inputs, mask=None):
        """Keras 3's: along the features (the last axis) a step is real where it is real in every input; along
        another axis the masks are joined like the inputs (an input without a mask counts as all real)."""
        if not mask or all(m is None for m in mask):
            return None
        ndim = len(inputs[0].shape)
        if self.axis % ndim == ndim - 1:
            return super().compute_mask(inputs, mask)
        filled = [np.ones(tuple(x.shape)[:-1], dtype=bool) if m is None else np.asarray(m)
                  for x, m in zip(inputs, mask)]
        return np.concatenate(filled, axis=self.axis % ndim)

    def call(self, inputs):
        xs = self._check(inputs)
        shapes = [tuple(x.shape) for x in xs]
        ndim = len(shapes[0])
        if any(len(s) != ndim for s in shapes) or not -ndim <= self.axis < ndim:
            raise ValueError(f"{self.name} (Concatenate): inputs must have the same number of axes and axis "
                             f"{self.axis} must exist; got shapes {shapes}.")
        ax = self.axis % ndim
        rest = {s[:ax] + s[ax + 1:] for s in shapes}
        if len(rest) > 1:
            raise ValueError(f"{self.name} (Concatenate): shapes {shapes} must match on every axis except the "
                             f"concatenation axis {self.axis}.")
        return ops.concatenate(list(xs), axis=ax)


def _functional(cls):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    merge.__name__ = cls.__name__.lower()
    merge.__doc__ = f"``{cls.__name__}(**kwargs)(inputs)`` in one call (Keras' functional form)."
    return merge


add, subtract, multiply, average, maximum, minimum = (
    _functional(c) for c in (Add, Subtract, Multiply, Average, Maximum, Minimum))


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis)(inputs)`` in one call (Keras' functional form)."""
    return Concatenate(axis=axis, **kwargs)(inputs)
