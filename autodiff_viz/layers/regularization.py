"""Dropout layers: ``Dropout``, ``SpatialDropout1D``, ``SpatialDropout2D``.

Dropout is active only when the layer is called with ``training=True``
(``fit`` does that; ``predict``, ``evaluate`` and a plain call do not): each
entry is kept with probability ``1 − rate`` and scaled by ``1 / (1 − rate)``
("inverted dropout"), so nothing needs rescaling at inference. On the graph
it is one ``multiply`` by a constant mask named ``dropout_mask``: its factor
is the mask itself, so dropped entries get a zero gradient.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..tensor import constant
from . import initializers
from .base import Layer

__all__ = ["Dropout", "SpatialDropout1D", "SpatialDropout2D"]


class Dropout(Layer):
    """Zero a random fraction ``rate`` of the entries while training, as ``keras.layers.Dropout``.

        >>> layer = Dropout(0.5, seed=0)
        >>> x = np.ones((2, 4))
        >>> bool((layer(x).numpy() == x).all())               # not training: unchanged
        True
        >>> sorted(set(layer(x, training=True).numpy().ravel().tolist()))  # kept entries ×2
        [0.0, 2.0]

    Args:
        rate: fraction of the entries to drop, in ``[0, 1)``.
        noise_shape: the shape of the mask, broadcast over the input (``None``
            entries take the input's size): ``(batch, 1, features)`` drops whole
            features for every step.
        seed: with a seed the layer draws its masks from its own generator
            (the same sequence of masks in every run); without one, from the
            generator of :func:`adv.layers.set_random_seed`.
    """

    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, Real) or not 0 <= rate < 1:
            raise ValueError(f"{type(self).__name__}: rate must be a number in [0, 1) (the fraction of entries to "
                             f"drop), got {rate!r}.")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        if seed is not None and not isinstance(seed, Integral):
            raise TypeError(f"{type(self).__name__}: seed must be an int or None, got {seed!r}.")
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)

    def _mask_shape(self, inputs):
        if self.noise_shape is None:
            return tuple(inputs.shape)
        if len(self.noise_shape) != inputs.ndim:
            raise ValueError(f"{self.name}: noise_shape {self.noise_shape} must have one entry per input axis; "
                             f"the input has shape {tuple(inputs.shape)}.")
        shape = tuple(n if s is None else int(s) for s, n in zip(self.noise_shape, inputs.shape))
        if any(s not in (1, n) for s, n in zip(shape, inputs.shape)):
            raise ValueError(f"{self.name}: noise_shape {self.noise_shape} does not broadcast to the input shape "
                             f"{tuple(inputs.shape)}: each entry must be 1, None or the input's size.")
        return shape

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        rng = self._rng if self._rng is not None else initializers.generator()
        keep = rng.random(self._mask_shape(inputs)) >= self.rate
        mask = keep.astype(inputs.dtype) * inputs.dtype.type(1.0 / (1.0 - self.rate))
        return inputs * constant(mask, name="dropout_mask")

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


class _SpatialDropout(Dropout):
    rank = 1

    def _mask_shape(self, inputs):
        if inputs.ndim != self.rank + 2:
            axes = {1: "(batch, steps, channels)", 2: "(batch, height, width, channels)"}[self.rank]
            raise ValueError(f"{self.name} ({type(self).__name__}): expected inputs {axes}, "
                             f"got shape {tuple(inputs.shape)}.")
        return (inputs.shape[0],) + (1,) * self.rank + (inputs.shape[-1],)


class SpatialDropout1D(_SpatialDropout):
    """Dropout of whole channels of ``(batch, steps, channels)``: one mask entry per sample and channel."""

    rank = 1

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Dropout of whole feature maps of ``(batch, h, w, channels)``: one mask entry per sample and channel."""

    rank = 2

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"SpatialDropout2D: only data_format='channels_last' is supported, got {data_format!r}.")
