"""Convolution layers: ``Conv1D`` and ``Conv2D`` (Keras 3 names, defaults and weight layouts).

Inputs are channels last, ``(batch, *spatial, channels)``; the kernel has
Keras' layout ``(*kernel_size, channels // groups, filters)``, so
``Conv2D(6, 5)`` on ``(64, 28, 28, 1)`` holds a ``(5, 5, 1, 6)`` kernel and
gives ``(64, 24, 24, 6)``.

The whole convolution is one op on the graph, ``conv``, whose edges say what
its gradients are: the input gradient is the full correlation of ḡ with the
flipped kernel, the kernel gradient the correlation of the input with ḡ
(see :mod:`autodiff_viz.rules.nn`).

``padding="same"`` pads as TensorFlow does: ``out = ceil(n / stride)`` and the
``(out − 1)·stride + (k − 1)·dilation + 1 − n`` missing entries go half before,
the odd one after. ``Conv1D`` also takes ``padding="causal"`` (all of it before).
"""
from __future__ import annotations

from numbers import Integral

from ..rules import nn as R
from .base import Layer, positive_int
from .dense import kernel_and_bias_options

__all__ = ["Conv1D", "Conv2D", "Convolution1D", "Convolution2D"]


def normalize_tuple(value, n, what, owner) -> tuple:
    """``value`` (an int or a sequence of ``n`` ints, each ≥ 1) as a tuple of ``n`` ints."""
    if isinstance(value, Integral):
        items = (int(value),) * n
    else:
        try:
            items = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise TypeError(f"{owner}: {what} must be an int or a tuple of {n} ints, got {value!r}.") from None
        if len(items) != n:
            raise ValueError(f"{owner}: {what} must have {n} entries (one per spatial axis), got {value!r}.")
    if any(v < 1 for v in items):
        raise ValueError(f"{owner}: every entry of {what} must be ≥ 1, got {value!r}.")
    return items


def normalize_padding(padding, owner, allowed=("valid", "same")) -> str:
    key = padding.lower() if isinstance(padding, str) else padding
    if key not in allowed:
        raise ValueError(f"{owner}: padding must be one of {', '.join(repr(a) for a in allowed)}, got {padding!r}. "
                         "'valid' uses only full windows (the output shrinks); 'same' pads with zeros so that "
                         "the output has ceil(size / stride) positions.")
    return key


def check_data_format(data_format, owner) -> None:
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{owner}: only data_format='channels_last' (batch, ..., channels) is supported, got "
                         f"{data_format!r}. Move the channel axis last: adv.transpose(x, (0, 2, 3, 1)).")


def window_pads(spatial, ksize, strides, dilation, padding) -> tuple:
    """``((lo, hi), ...)`` per spatial axis for ``'valid'``, ``'same'`` (TensorFlow's split) or ``'causal'``."""
    pads = []
    for n, k, s, d in zip(spatial, ksize, strides, dilation):
        span = (k - 1) * d + 1
        if padding == "valid":
            pads.append((0, 0))
        elif padding == "causal":
            pads.append((span - 1, 0))
        else:
            out = -(-n // s)
            total = max((out - 1) * s + span - n, 0)
            pads.append((total // 2, total - total // 2))
    return tuple(pads)


def check_rank(layer, shape, rank):
    """Inputs of a windowed layer must be ``(batch, *spatial, channels)``; say what to do otherwise."""
    shape = tuple(shape)
    if len(shape) == rank + 2:
        return
    axes = {1: "(batch, steps, channels)", 2: "(batch, height, width, channels)"}[rank]
    hint = ""
    if len(shape) == rank + 1:
        hint = (" It looks like one sample without the batch axis: add one with x[None] (or "
                "adv.expand_dims(x, 0)), or a channel axis with x[..., None] if this is a batch of "
                "one-channel samples.")
    raise ValueError(f"{layer.name} ({type(layer).__name__}): expected inputs of rank {rank + 2} {axes}, "
                     f"got shape {shape}.{hint}")


class _Conv(Layer):
    """What ``Conv1D`` and ``Conv2D`` share; ``rank`` is the number of spatial axes."""

    rank = 2

    _single_input = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.filters = positive_int(owner, "filters", filters)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size", owner)
        self.strides = normalize_tuple(strides, self.rank, "strides", owner)
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate", owner)
        allowed = ("valid", "same", "causal") if self.rank == 1 else ("valid", "same")
        self.padding = normalize_padding(padding, owner, allowed)
        check_data_format(data_format, owner)
        self.data_format = "channels_last"
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{owner}: strides > 1 together with dilation_rate > 1 is not supported (as in "
                             f"Keras); got strides={self.strides}, dilation_rate={self.dilation_rate}.")
        if not isinstance(groups, Integral) or groups <= 0 or self.filters % groups:
            raise ValueError(f"{owner}: groups must be a positive integer that divides filters ({self.filters}), "
                             f"got {groups!r}.")
        self.groups = int(groups)
        kernel_and_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                                bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        check_rank(self, input_shape, self.rank)
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(f"{self.name}: the channel axis (last) must have a known size, got shape {input_shape}.")
        if channels % self.groups:
            raise ValueError(f"{self.name}: the input has {channels} channels, which groups={self.groups} does not "
                             "divide; each group must see the same number of channels.")
        self.kernel = self.add_weight(self.kernel_size + (channels // self.groups, self.filters),
                                      self.kernel_initializer, name="kernel", regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def _pads(self, inputs):
        """Check the inputs against the kernel and return the padding amounts."""
        check_rank(self, inputs.shape, self.rank)
        channels = self.kernel.shape[-2] * self.groups
        if inputs.shape[-1] != channels:
            raise ValueError(f"{self.name}: this layer was built for inputs with {channels} channels (last axis), "
                             f"got shape {tuple(inputs.shape)}. A layer keeps the input channels of its first "
                             "call; use a new layer for other inputs, or check that the channel axis is last.")
        spatial = tuple(inputs.shape[1:-1])
        pads = window_pads(spatial, self.kernel_size, self.strides, self.dilation_rate, self.padding)
        spans = [(k - 1) * d + 1 for k, d in zip(self.kernel_size, self.dilation_rate)]
        for n, span, (lo, hi) in zip(spatial, spans, pads):
            if n + lo + hi < span:
                raise ValueError(f"{self.name}: the input's spatial size {spatial} is smaller than the kernel's "
                                 f"reach {tuple(spans)} (kernel_size {self.kernel_size}, dilation "
                                 f"{self.dilation_rate}) with padding={self.padding!r}. Use padding='same', a "
                                 "smaller kernel, or larger inputs.")
        return pads

    def convolution_op(self, inputs, kernel, pads):
        return R.conv(inputs, kernel, strides=self.strides, pads=pads, dilation=self.dilation_rate,
                      groups=self.groups)

    def call(self, inputs):
        y = self.convolution_op(inputs, self.kernel, self._pads(inputs))
        if self.use_bias:
            y = R.bias_add(y, self.bias)
        y = self.activation(y)
        if self.activity_regularizer is not None:
            self.add_loss(self.activity_regularizer(y))
        return y

    def get_config(self) -> dict:
        return {"name": self.name, "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "dilation_rate": self.dilation_rate,
                "groups": self.groups, "use_bias": self.use_bias}


class Conv1D(_Conv):
    """1-D convolution over ``(batch, steps, channels)``, as ``keras.layers.Conv1D``.

        >>> Conv1D(4, 3)(np.ones((2, 10, 8))).shape      # kernel (3, 8, 4)
        (2, 8, 4)

    Arguments as :class:`Conv2D` (ints or 1-tuples), and ``padding="causal"``:
    every zero goes before the sequence, so output ``t`` only sees inputs up to ``t``.
    """

    rank = 1


class Conv2D(_Conv):
    """2-D convolution over ``(batch, height, width, channels)``, as ``keras.layers.Conv2D``.

        >>> layer = Conv2D(6, 5, activation="relu")
        >>> layer(np.ones((2, 28, 28, 1))).shape
        (2, 24, 24, 6)
        >>> layer.kernel.shape                            # (kh, kw, in, out), Keras' layout
        (5, 5, 1, 6)

    ``y[n, i, j, o] = b[o] + Σ_{di, dj, c} x_pad[n, i·sh + di·dh, j·sw + dj·dw, c] · W[di, dj, c, o]``

    Args:
        filters: number of output channels.
        kernel_size: an int or ``(kh, kw)``.
        strides: an int or ``(sh, sw)`` (default 1).
        padding: ``"valid"`` (default) or ``"same"`` (TensorFlow's padding).
        dilation_rate: an int or ``(dh, dw)``: spacing between the kernel's taps.
        groups: split the channels into this many independent convolutions.
        activation: a name, a callable or None, as for ``Dense``.
        use_bias: add one bias per filter (a ``bias_add`` op).
        kernel_initializer: default ``"glorot_uniform"`` (fans include the window).
        bias_initializer: default ``"zeros"``.
        kernel_regularizer: a penalty on the kernel (see :mod:`autodiff_viz.regularizers`).
        bias_regularizer: a penalty on the bias.
        activity_regularizer: a penalty on the output.
    """

    rank = 2


Convolution1D, Convolution2D = Conv1D, Conv2D
