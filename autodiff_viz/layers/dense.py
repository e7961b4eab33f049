"""Dense: ``activation(inputs @ kernel + bias)``."""
from __future__ import annotations

from ..ops import matmul
from . import activations
from .base import Layer


class Dense(Layer):
    """A fully connected layer, as ``keras.layers.Dense``.

    ``kernel`` has shape ``(input_dim, units)`` and multiplies the last axis
    of the input, so ``(batch, input_dim)`` gives ``(batch, units)`` and
    ``(batch, time, input_dim)`` gives ``(batch, time, units)``.

        >>> layer = Dense(3, activation="relu")
        >>> layer(np.ones((2, 4))).shape
        (2, 3)

    Args:
        units: number of outputs.
        activation: a name (``"relu"``, ``"tanh"``, ``"sigmoid"``,
            ``"softmax"``, ``"linear"``, ``"leaky_relu"``, ``"softplus"``), a
            callable, or None (linear).
        use_bias: add a bias vector.
        kernel_initializer: a name or a callable (default ``"glorot_uniform"``, as Keras).
        bias_initializer: a name or a callable (default ``"zeros"``, as Keras).
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be a positive integer, got {units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer

    def build(self, input_shape):
        if not input_shape:
            raise ValueError(f"{self.name}: Dense needs inputs with at least one axis (features last), "
                             f"got shape {input_shape}.")
        self.kernel = self.add_weight((input_shape[-1], self.units), self.kernel_initializer, name="kernel")
        self.bias = self.add_weight((self.units,), self.bias_initializer, name="bias") if self.use_bias else None

    def call(self, inputs):
        if inputs.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"{self.name}: this layer was built for inputs with {self.kernel.shape[0]} features "
                             f"(last axis), got shape {inputs.shape}. A layer keeps the input size of its first call.")
        y = matmul(inputs, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y)
