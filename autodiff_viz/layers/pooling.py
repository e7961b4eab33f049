"""Pooling layers: ``MaxPooling1D/2D``, ``AveragePooling1D/2D`` and the global poolings.

Windowed pooling is one op on the graph (``max_pool`` or ``avg_pool``).
Max pooling sends each window's gradient to its arg-max (the first one in
row-major window order when entries tie, as TensorFlow and PyTorch); average
pooling spreads it evenly over the window. ``strides`` defaults to
``pool_size`` (windows side by side), as in Keras; ``padding="same"`` pads
as TensorFlow does, and padded entries never count: they never win a max
and are not part of an average's divisor.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..base.state import user_stacklevel
from ..core import ops
from ..core.rules import nn as R
from .base import Layer, boolean_mask, building
from .conv import channels_last_call, check_data_format, check_rank, normalize_padding, normalize_tuple, window_pads

__all__ = ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
           "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalMaxPool1D", "GlobalMaxPool2D"]


class _Pooling(Layer):
    rank = 2
    rule = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size", owner)
        self.strides = self.pool_size if strides is None else normalize_tuple(strides, self.rank, "strides", owner)
        self.padding = normalize_padding(padding, owner)
        self.data_format = check_data_format(data_format, owner, channels_first=True)

    def call(self, inputs):
        check_rank(self, inputs.shape, self.rank)
        return channels_last_call(self, inputs, self._pool)

    def _pool(self, inputs):
        spatial = tuple(inputs.shape[1:-1])
        pads = window_pads(spatial, self.pool_size, self.strides, (1,) * self.rank, self.padding)
        if self.padding == "valid" and any(n < p for n, p in zip(spatial, self.pool_size)):
            raise ValueError(f"{self.name} ({type(self).__name__}): pool_size {self.pool_size} is larger than the "
                             f"input's spatial size {spatial} (input shape {tuple(inputs.shape)}). Use a smaller "
                             "pool_size, padding='same', or larger inputs.")
        return self.rule(inputs, pool=self.pool_size, strides=self.strides, pads=pads)

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(_Pooling):
    """The maximum of each window of ``pool_size`` steps, per channel (``(batch, steps, channels)``).

        >>> MaxPooling1D(2)(np.ones((4, 10, 3))).shape
        (4, 5, 3)
    """
    backward_text = {"x": "ḡ_x = ḡ_y routed to each window's arg-max (0 elsewhere)"}

    rank, rule = 1, R.max_pool

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(_Pooling):
    """The maximum of each ``pool_size`` window, per channel, as ``keras.layers.MaxPooling2D``.

        >>> MaxPooling2D()(np.ones((4, 24, 24, 6))).shape      # pool (2, 2), strides = pool
        (4, 12, 12, 6)

    The gradient goes only to each window's largest entry (the first one on ties).
    """
    backward_text = {"x": "ḡ_x = ḡ_y routed to each window's arg-max (0 elsewhere)"}

    rank, rule = 2, R.max_pool

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_Pooling):
    """The mean of each window of ``pool_size`` steps, per channel."""
    backward_text = {"x": "ḡ_x = ḡ_y / (window size), spread evenly over each window"}

    rank, rule = 1, R.avg_pool

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(_Pooling):
    """The mean of each ``pool_size`` window, per channel, as ``keras.layers.AveragePooling2D``.

    The gradient is spread evenly: each entry of a window gets ``ḡ / count``,
    ``count`` being the number of real (unpadded) entries in the window.
    """
    backward_text = {"x": "ḡ_x = ḡ_y / (window size), spread evenly over each window"}

    rank, rule = 2, R.avg_pool

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(Layer):
    rank = 2
    reduce = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = check_data_format(data_format, type(self).__name__, channels_first=True)
        self.keepdims = bool(keepdims)

    def call(self, inputs):
        check_rank(self, inputs.shape, self.rank)
        first = 2 if self.data_format == "channels_first" else 1      # the spatial axes follow the channels
        return type(self).reduce(inputs, axis=tuple(range(first, first + self.rank)), keepdims=self.keepdims)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    With a mask (from ``Embedding(mask_zero=True)`` or ``Masking``, or
    ``mask=`` of shape ``(batch, steps)``), the mean over the real steps
    only, as Keras 3: ``Σₜ mₜ·xₜ / Σₜ mₜ``, so padding does not dilute a
    short sequence's average, and the padded steps get no gradient. The
    output carries no mask. A sequence whose steps are all masked averages
    nothing: its row is NaN (0/0, as in Keras), with a warning.
    """
    backward_text = {"x": "ḡ_x = ḡ_y / (number of positions), copied to every position"}

    rank, reduce = 1, ops.mean
    supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        if self.data_format == "channels_first":          # (batch, channels, steps): the mask is per step
            return channels_last_call(self, inputs, lambda x: self._masked_mean(x, mask))
        return self._masked_mean(inputs, mask)

    def _masked_mean(self, inputs, mask):
        check_rank(self, inputs.shape, self.rank)
        keep = boolean_mask(self, mask, tuple(inputs.shape[:2]))[:, :, None]
        count = keep.sum(axis=1, keepdims=self.keepdims).astype(inputs.dtype)
        empty = np.flatnonzero(keep.sum(axis=(1, 2)) == 0)
        if empty.size and not building():       # a model's build batch is zeros: all padding
            warnings.warn(f"{self.name} (GlobalAveragePooling1D): every step of sample(s) {empty.tolist()[:10]} is "
                          "masked, so their average is NaN (0/0, as in Keras). Leave empty sequences out of the "
                          "batch, or give each at least one real step.", RuntimeWarning,
                          stacklevel=user_stacklevel())
        total = ops.sum(ops.where(keep, inputs, 0.0), axis=1, keepdims=self.keepdims)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / count

    def compute_mask(self, inputs, mask=None):
        """None: the steps are averaged away (Keras 3)."""
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over height and width: ``(batch, h, w, channels)`` -> ``(batch, channels)``
    (``keepdims=True``: ``(batch, 1, 1, channels)``)."""
    backward_text = {"x": "ḡ_x = ḡ_y / (number of positions), copied to every position"}

    rank, reduce = 2, ops.mean


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps, per channel (the gradient goes to the arg-max; ties share it)."""
    backward_text = {"x": "ḡ_x = ḡ_y at each channel's arg-max position (0 elsewhere)"}

    rank, reduce = 1, ops.max


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over height and width, per channel (the gradient goes to the arg-max; ties share it)."""
    backward_text = {"x": "ḡ_x = ḡ_y at each channel's arg-max position (0 elsewhere)"}

    rank, reduce = 2, ops.max


MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D = MaxPooling1D, MaxPooling2D, AveragePooling1D, AveragePooling2D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D

