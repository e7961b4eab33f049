"""Dropout layers: ``Dropout``, ``SpatialDropout1D``, ``SpatialDropout2D``, the noise layers
``GaussianNoise`` and ``GaussianDropout``, and ``ActivityRegularization``.

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

from .. import regularizers
from ..base import session
from ..core.tensor import constant
from .base import Layer

__all__ = ["Dropout", "SpatialDropout1D", "SpatialDropout2D", "GaussianNoise", "GaussianDropout",
           "ActivityRegularization"]


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
    backward_text = {"x": "ḡ_x = ḡ_y ⊙ mask / (1 − rate) in training; ḡ_x = ḡ_y at inference"}

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
        rng = self._rng if self._rng is not None else session.generator()
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


def _seed(who: str, seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, Integral)):
        raise TypeError(f"{who}: seed must be an int or None, got {seed!r}. Example: {who}(0.1, seed=0).")
    return None if seed is None else int(seed)


class _Noise(Layer):
    """A layer that draws fresh noise on each call with ``training=True`` (from its own generator with a seed,
    as ``Dropout``) and is the identity otherwise."""

    supports_masking = True

    def __init__(self, seed, **kwargs):
        self.seed = _seed(type(self).__name__, seed)
        self._rng = None if seed is None else np.random.default_rng(self.seed)
        super().__init__(**kwargs)

    def _normal(self, inputs, mean, stddev):
        rng = self._rng if self._rng is not None else session.generator()
        return rng.normal(mean, stddev, size=tuple(inputs.shape)).astype(inputs.dtype)


class GaussianNoise(_Noise):
    """Add zero-centred Gaussian noise while training, as ``keras.layers.GaussianNoise``.

        >>> layer = GaussianNoise(0.1, seed=0)
        >>> x = np.ones((2, 3))
        >>> bool((layer(x).numpy() == x).all())               # not training: unchanged
        True
        >>> bool((layer(x, training=True).numpy() != x).all())
        True

    With ``training=True`` the output is ``x + ε``, ``ε ~ N(0, stddev²)``
    drawn anew on each call (a data augmentation). On the graph it is one
    ``add`` of a constant named ``gaussian_noise``: the gradient passes
    unchanged (``ḡ_x = ḡ_y``).

    Args:
        stddev: the standard deviation of the noise, a number in ``[0, 1]`` (Keras' range).
        seed: with a seed the layer draws from its own generator (the same
            sequence of noise in every run); without one, from the generator of
            :func:`adv.layers.set_random_seed`.
    """

    def __init__(self, stddev, seed=None, **kwargs):
        if isinstance(stddev, bool) or not isinstance(stddev, Real) or not 0 <= stddev <= 1:
            raise ValueError(f"GaussianNoise: stddev must be a number in [0, 1] (the standard deviation of the "
                             f"added noise), got {stddev!r}. Example: GaussianNoise(stddev=0.1).")
        self.stddev = float(stddev)
        super().__init__(seed, **kwargs)

    def call(self, inputs, training=None):
        if not training or self.stddev == 0:
            return inputs
        return inputs + constant(self._normal(inputs, 0.0, self.stddev), name="gaussian_noise")

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_Noise):
    """Multiply by 1-centred Gaussian noise while training, as ``keras.layers.GaussianDropout``.

        >>> layer = GaussianDropout(0.2, seed=0)
        >>> bool((layer(np.ones((2, 3))).numpy() == 1).all())   # not training: unchanged
        True

    With ``training=True`` the output is ``x · m``, ``m ~ N(1, rate / (1 −
    rate))``: the same mean and variance as ``Dropout(rate)``'s scaled
    mask, without zeros. On the graph it is one ``multiply`` by a constant
    named ``gaussian_dropout_mask``, which is also the gradient's factor
    (``ḡ_x = m · ḡ_y``).

    Args:
        rate: the drop probability it imitates, a number in ``[0, 1)``; the
            noise has standard deviation ``sqrt(rate / (1 − rate))``.
        seed: as ``GaussianNoise``'s.
    """

    def __init__(self, rate, seed=None, **kwargs):
        if isinstance(rate, bool) or not isinstance(rate, Real) or not 0 <= rate < 1:
            raise ValueError(f"GaussianDropout: rate must be a number in [0, 1) (the drop probability; the noise "
                             f"has standard deviation sqrt(rate / (1 - rate)), infinite at 1), got {rate!r}. "
                             "Example: GaussianDropout(rate=0.2).")
        self.rate = float(rate)
        super().__init__(seed, **kwargs)

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        stddev = (self.rate / (1.0 - self.rate)) ** 0.5
        return inputs * constant(self._normal(inputs, 1.0, stddev), name="gaussian_dropout_mask")

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class ActivityRegularization(Layer):
    """Add ``l1·Σ|x| + l2·Σx²`` of its input to the loss, and return the input, as
    ``keras.layers.ActivityRegularization``.

        >>> layer = ActivityRegularization(l1=0.1, l2=0.01)
        >>> y = layer(np.array([[1.0, -2.0]]))
        >>> round(float(layer.losses[0]), 4)                # 0.1·3 + 0.01·5
        0.35

    The penalty is added with ``add_loss`` on every call (it is in
    ``layer.losses`` and ``model.losses``, and ``fit`` adds it to the
    training loss), summed over the whole batch, not averaged, as Keras 3.
    Its gradient to the input is ``l1·sign(x) + 2·l2·x`` (the ``abs`` and
    ``square`` nodes inside the layer's box); the output itself is ``x``.

    Args:
        l1: the factor of the L1 penalty, a number ≥ 0.
        l2: the factor of the L2 penalty, a number ≥ 0.
    """

    supports_masking = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        for what, value in (("l1", l1), ("l2", l2)):
            if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
                raise ValueError(f"ActivityRegularization: {what} must be a number ≥ 0, got {value!r}. "
                                 f"Example: ActivityRegularization({what}=0.01).")
        self.l1, self.l2 = float(l1), float(l2)
        self._penalty = regularizers.L1L2(self.l1, self.l2)
        super().__init__(**kwargs)

    def call(self, inputs):
        if self.l1 or self.l2:
            self.add_loss(self._penalty(inputs))
        else:               # Keras 3 adds its L1L2(0, 0) penalty too: a zero
            self.add_loss(constant(np.zeros((), dtype=inputs.dtype), name="activity_regularization"))
        return inputs

    def get_config(self) -> dict:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
