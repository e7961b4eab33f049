"""Core layers: ``Flatten``, ``Reshape``, ``Activation``, ``Lambda`` (``Dense`` lives in dense.py).

Each is a thin layer around one op (``reshape``, an activation), so on the
graph it is a folded box with that single op inside.
"""
from __future__ import annotations

import numpy as np

from .. import engine, ops
from . import activations
from .base import Layer

__all__ = ["Flatten", "Reshape", "Activation", "Lambda"]


class Flatten(Layer):
    """Every axis but the batch axis joined into one: ``(batch, 4, 4, 16)`` -> ``(batch, 256)``.

        >>> Flatten()(np.ones((2, 4, 4, 16))).shape
        (2, 256)

    Its gradient is the upstream gradient reshaped back (``reshape`` op).
    A ``(batch,)`` input becomes ``(batch, 1)``, as in Keras.
    """

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Flatten: only data_format='channels_last' is supported, got {data_format!r}.")
        self.data_format = "channels_last"

    def call(self, inputs):
        if inputs.ndim == 0:
            raise ValueError(f"{self.name} (Flatten): needs inputs with a batch axis, got a scalar.")
        return ops.reshape(inputs, (inputs.shape[0], -1))


class Reshape(Layer):
    """Reshape each sample to ``target_shape`` (the batch axis stays), as ``keras.layers.Reshape``.

        >>> Reshape((4, 4, 1))(np.ones((2, 16))).shape
        (2, 4, 4, 1)

    One entry of ``target_shape`` may be ``-1`` (inferred).
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        try:
            self.target_shape = tuple(int(s) for s in target_shape)
        except (TypeError, ValueError):
            raise TypeError(f"Reshape: target_shape must be a tuple of ints, got {target_shape!r}.") from None
        if sum(s == -1 for s in self.target_shape) > 1 or any(s < -1 or s == 0 for s in self.target_shape):
            raise ValueError(f"Reshape: target_shape may hold positive sizes and at most one -1, "
                             f"got {self.target_shape}.")

    def call(self, inputs):
        per_sample = int(np.prod(inputs.shape[1:]))
        known = int(np.prod([s for s in self.target_shape if s != -1]))
        if (-1 in self.target_shape and per_sample % known) or (-1 not in self.target_shape and per_sample != known):
            raise ValueError(f"{self.name} (Reshape): each sample of shape {tuple(inputs.shape[1:])} has "
                             f"{per_sample} entries, which cannot be reshaped to {self.target_shape}. "
                             "The target must hold the same number of entries (the batch axis is not part of it).")
        return ops.reshape(inputs, (inputs.shape[0],) + self.target_shape)

    def get_config(self) -> dict:
        return {"name": self.name, "target_shape": self.target_shape}


class Activation(Layer):
    """Apply an activation function: ``Activation("relu")``, as ``keras.layers.Activation``.

        >>> Activation("tanh")(np.zeros((2, 3))).shape
        (2, 3)

    Accepts the names of :mod:`autodiff_viz.layers.activations` or a callable.
    """

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)


class Lambda(Layer):
    """Wrap a function of tensors as a layer: ``Lambda(lambda x: x ** 2)``.

    The function's ops are recorded inside this layer's name scope, with
    your own source lines (it is your code). It has no weights.
    """

    def __init__(self, function, output_shape=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {type(function).__name__}.")
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        with engine.shared_location(False):
            return self.function(inputs, **self.arguments)
