"""Merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``, ``Concatenate``,
``Dot``.

Each takes a *list* of tensors, as in Keras: ``Add()([x, shortcut])`` (a
residual connection). On the graph the inputs meet in one box; the gradient
of ``Add`` copies ḡ to every input, ``Multiply`` sends each input ḡ times the
product of the others, ``Concatenate`` slices ḡ back into the pieces.
"""
from __future__ import annotations

import functools
from numbers import Integral

import numpy as np

from ..core import ops
from .base import Layer
from .normalization import l2_normalize

NORMALIZE_FLOOR = 1e-7 * 1e-7   # Keras' ops.normalize: x / max(‖x‖, 1e-7), as x / √max(Σx², 1e-7²)

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot"]


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
    backward_text = {"x": "ḡ_xᵢ = ḡ_y for every input (a sum copies ḡ to each term)"}

    def _merge(self, xs):
        return functools.reduce(ops.add, xs)


class Subtract(_Merge):
    """``a − b`` for exactly two inputs ``[a, b]``."""

    min_inputs = max_inputs = 2

    def _merge(self, xs):
        return xs[0] - xs[1]


class Multiply(_Merge):
    """The elementwise product of the inputs (gating)."""
    backward_text = {"x": "ḡ_xᵢ = ḡ_y ⊙ (the product of the other inputs)"}

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
    backward_text = {"x": "ḡ_xᵢ = the slice of ḡ_y that came from xᵢ"}

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


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Dot(_Merge):
    """The dot product of two batches of samples along ``axes``, as ``keras.layers.Dot``.

        >>> Dot(axes=1)([np.ones((2, 3)), np.full((2, 3), 2.0)]).numpy()
        array([[6.],
               [6.]], dtype=float32)

    For sample ``i`` the entries of ``x[i]`` along ``axes[0]`` are multiplied
    with those of ``y[i]`` along ``axes[1]`` and summed (Keras' ``batch_dot``):
    the output has ``x``'s other axes, then ``y``'s other axes but the batch
    axis. Two ``(batch, n)`` inputs give ``(batch, 1)``; ``(batch, n, m)`` and
    ``(batch, n, k)`` with ``axes=1`` give ``(batch, m, k)``. One ``einsum``
    node: the gradient to ``x`` is ḡ contracted with ``y`` and back.

    With ``normalize=True`` each input is first divided by its L2 norm along
    its axis (``x / max(‖x‖, 1e-7)``, Keras' ``ops.normalize``), so the
    output is the cosine similarity. Masks stop here (the output carries none),
    as in Keras 3.

    Args:
        axes: an int (the same axis of both inputs) or a tuple of two ints,
            one axis per input; never 0 (the batch axis); negative counts from the end.
        normalize: L2-normalise both inputs along their axis first.
    """

    min_inputs = max_inputs = 2

    def __init__(self, axes, normalize=False, **kwargs):
        def bad(a):
            return isinstance(a, bool) or not isinstance(a, Integral)
        if isinstance(axes, (list, tuple)):
            if len(axes) != 2 or any(bad(a) for a in axes):
                raise ValueError(f"Dot: axes must be an int or a tuple of 2 ints (one axis of each input), got "
                                 f"{axes!r}. Example: Dot(axes=(1, 2)).")
            axes = tuple(int(a) for a in axes)
        elif bad(axes):
            raise TypeError(f"Dot: axes must be an int or a tuple of 2 ints, got {axes!r}. Example: Dot(axes=1).")
        else:
            axes = int(axes)
        if 0 in (axes if isinstance(axes, tuple) else (axes,)):
            raise ValueError(f"Dot: axes={axes!r} names axis 0, the batch axis; the dot product is taken within "
                             "each sample. Example: Dot(axes=1) for inputs of shape (batch, features).")
        if not isinstance(normalize, (bool, np.bool_)):
            raise TypeError(f"Dot: normalize must be True or False, got {normalize!r}.")
        self.axes = axes
        self.normalize = bool(normalize)
        super().__init__(**kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}

    def compute_mask(self, inputs, mask=None):
        """None, as Keras 3's ``Dot``: the output's axes are not the inputs' steps."""
        return None

    def _resolve(self, shapes):
        pair = self.axes if isinstance(self.axes, tuple) else (self.axes, self.axes)
        out = []
        for a, shape in zip(pair, shapes):
            if len(shape) < 2 or not -len(shape) < a < len(shape):
                raise ValueError(f"{self.name} (Dot): axes={self.axes!r} does not fit the input shapes {list(shapes)}: "
                                 "each input needs a batch axis and the named axis (not the batch axis).")
            out.append(a % len(shape))
        return out

    def call(self, inputs):
        x, y = self._check(inputs)
        shapes = [tuple(x.shape), tuple(y.shape)]
        a0, a1 = self._resolve(shapes)
        if shapes[0][0] != shapes[1][0]:
            raise ValueError(f"{self.name} (Dot): the inputs have different batch sizes, shapes {shapes}.")
        if shapes[0][a0] != shapes[1][a1]:
            raise ValueError(f"{self.name} (Dot): axis {a0} of the first input ({shapes[0][a0]} entries) and axis "
                             f"{a1} of the second ({shapes[1][a1]} entries) must have the same size; got shapes "
                             f"{shapes}. Choose axes=(i, j) with shapes[0][i] == shapes[1][j].")
        if self.normalize:
            x, y = l2_normalize(x, a0, NORMALIZE_FLOOR), l2_normalize(y, a1, NORMALIZE_FLOOR)
        nx, ny = len(shapes[0]), len(shapes[1])
        if nx + ny - 1 > len(_LETTERS):
            raise ValueError(f"{self.name} (Dot): inputs with {nx} and {ny} axes are too many for one einsum.")
        xs = "a" + _LETTERS[1:nx]
        ys = "a" + _LETTERS[nx:nx + ny - 1]
        ys = ys[:a1] + xs[a0] + ys[a1 + 1:]
        out = xs[:a0] + xs[a0 + 1:] + ys[1:a1] + ys[a1 + 1:]
        z = ops.einsum(f"{xs},{ys}->{out}", x, y)
        return ops.expand_dims(z, -1) if z.ndim == 1 else z


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


def dot(inputs, axes=-1, **kwargs):
    """``Dot(axes, **kwargs)(inputs)`` in one call (Keras' functional form; ``axes`` defaults to -1 here, as Keras)."""
    return Dot(axes=axes, **kwargs)(inputs)
