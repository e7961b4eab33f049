"""Normalization layers: ``BatchNormalization``, ``LayerNormalization``, ``GroupNormalization``,
``RMSNormalization`` and ``UnitNormalization`` (Keras 3 defaults).

The first three compute ``x̂ = (x − μ) / √(σ² + ε)`` and ``y = γ·x̂ + β``, written with
the package's ops (``mean``, ``square``, ``sqrt``, ``divide`` ...) so that,
expanded on the graph, every step of the textbook derivation is an edge
with its own factor — including the paths through μ and σ² that make the
batch-norm gradient more than ``γ / √(σ² + ε)``.

σ² is the *biased* variance (divide by ``n``), as in Keras and in PyTorch's
normalisation. ``RMSNormalization`` divides by the root mean square
``√(mean(x²) + ε)`` instead, without centring.
"""
from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np

from .. import regularizers
from ..base.state import user_stacklevel
from ..core import ops
from .base import Layer, boolean_mask

__all__ = ["BatchNormalization", "LayerNormalization", "GroupNormalization", "RMSNormalization",
           "UnitNormalization"]


def _axes(axis, ndim, owner) -> tuple:
    """``axis`` (int or list) as a sorted tuple of non-negative axes of an ``ndim``-axis input."""
    items = [axis] if isinstance(axis, Integral) else list(axis)
    out = []
    for a in items:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{owner}: axis {a} is out of range for inputs with {ndim} axes. Pass an axis "
                             f"from {-ndim} to {ndim - 1} (-1: the last one).")
        out.append(a % ndim)
    return tuple(sorted(set(out)))


def _moments(x, axes):
    """Mean and biased variance over ``axes`` (kept as size-1 axes)."""
    mean = ops.mean(x, axis=axes, keepdims=True)
    variance = ops.mean(ops.square(x - mean), axis=axes, keepdims=True)
    return mean, variance


MASK_EPSILON = 1e-7     # Keras' backend epsilon, which its masked moments add to the count


def _masked_moments(x, weights, axes):
    """Keras 3's moments over the real entries: ``weights`` is 1 at a real step and 0 at a padded one.

    ``μ = Σ w·x / (Σ w + ε)`` and ``σ² = Σ w·(w·x − μ)² / (Σ w + ε)``, ``ε = 1e-7``
    (for 0/1 weights, the mean and biased variance of the real entries).
    """
    count = weights.sum(axis=axes, keepdims=True) + MASK_EPSILON
    weighted = x * weights
    mean = ops.sum(weighted, axis=axes, keepdims=True) / count
    variance = ops.sum(ops.square(weighted - mean) * weights, axis=axes, keepdims=True) / count
    return mean, variance


def _axis_argument(owner: str, axis):
    """``axis`` as given to a layer (an int, or a non-empty list of ints), or a TypeError naming ``owner``."""
    if isinstance(axis, (list, tuple)) and axis and \
            all(isinstance(a, Integral) and not isinstance(a, bool) for a in axis):
        return [int(a) for a in axis]
    if isinstance(axis, Integral) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError(f"{owner}: axis must be an int or a list of ints, got {axis!r}. Pass e.g. axis=-1 (the "
                    "feature axis).")


def _epsilon(owner, epsilon, default) -> float:
    """``epsilon`` as a positive float, or an error naming the layer and the fix (``default``: Keras')."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not float(epsilon) > 0:
        raise ValueError(f"{owner}: epsilon must be positive, got {epsilon!r}. It is added under the square root "
                         f"to avoid dividing by zero; pass a small number, e.g. epsilon={default} (Keras' "
                         "default).")
    return float(epsilon)


class _PerAxisParams(Layer):
    """A layer with weights of the shape of the normalised axes (``γ``, ``β``, RMSNormalization's ``scale``)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._param_axes = None     # set by _param_layout when the layer is built
        self._ndim = None

    def _param_layout(self, input_shape, param_axes) -> tuple:
        """The weights' shape for ``input_shape``; remembers the axes and the rank that ``_check`` expects."""
        input_shape = tuple(input_shape)
        unknown = [a for a in param_axes if input_shape[a] is None]
        if unknown:
            raise ValueError(f"{self.name}: the normalised axis {unknown[0]} must have a known size, got input "
                             f"shape {input_shape}.")
        self._ndim = len(input_shape)
        self._param_axes = param_axes
        self._param_shape = tuple(input_shape[a] for a in param_axes)
        return self._param_shape

    def _check(self, inputs):
        if inputs.ndim != self._ndim:
            raise ValueError(f"{self.name} ({type(self).__name__}): built for inputs with {self._ndim} axes, got "
                             f"shape {tuple(inputs.shape)}.")
        want = tuple(self._param_shape)
        got = tuple(inputs.shape[a] for a in self._param_axes)
        if got != want:
            raise ValueError(f"{self.name} ({type(self).__name__}): built for size {want} along axis "
                             f"{self._param_axes}, got input shape {tuple(inputs.shape)}. A layer keeps the "
                             "sizes of its first call.")

    def _broadcast(self, param):
        """A parameter reshaped to broadcast against the input (size 1 on the other axes)."""
        shape = [1] * self._ndim
        for a, n in zip(self._param_axes, param.shape):
            shape[a] = n
        return ops.reshape(param, tuple(shape))


class _Normalization(_PerAxisParams):
    def __init__(self, axis, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                 gamma_regularizer, beta_constraint, gamma_constraint, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, Integral):
            try:
                axis = [int(a) for a in axis]
            except (TypeError, ValueError):
                raise TypeError(f"{type(self).__name__}: axis must be an int or a list of ints, got {axis!r}.") \
                    from None
        self.axis = axis
        self.epsilon = _epsilon(type(self).__name__, epsilon, 1e-3)       # Keras' default for all three
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def _build_params(self, input_shape, param_axes, gamma=None, beta=None):
        """Create ``γ`` and ``β`` (by default: if ``scale`` / ``center``) of the normalised axes' shape."""
        shape = self._param_layout(input_shape, param_axes)
        gamma = self.scale if gamma is None else gamma
        beta = self.center if beta is None else beta
        self.gamma = self.add_weight(shape, self.gamma_initializer, name="gamma", regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if gamma else None
        self.beta = self.add_weight(shape, self.beta_initializer, name="beta", regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if beta else None
        return shape

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale, "beta_initializer": self.beta_initializer,
                "gamma_initializer": self.gamma_initializer,
                "beta_regularizer": self.beta_regularizer, "gamma_regularizer": self.gamma_regularizer,
                "beta_constraint": self.beta_constraint, "gamma_constraint": self.gamma_constraint}

    def _normalize(self, x, mean, variance):
        return self._scale_and_center((x - mean) / ops.sqrt(variance + self.epsilon))

    def _scale_and_center(self, x_hat):
        """``γ · x̂ + β`` (each only if the layer learns it)."""
        if self.scale:
            x_hat = x_hat * self._broadcast(self.gamma)
        if self.center:
            x_hat = x_hat + self._broadcast(self.beta)
        return x_hat


class BatchNormalization(_Normalization):
    """Normalise each feature over the batch, as ``keras.layers.BatchNormalization``.

        >>> bn = BatchNormalization()
        >>> y = bn(np.random.rand(32, 4), training=True)    # batch statistics; moving averages updated
        >>> [w.path for w in bn.weights]
        ['batch_normalization/gamma', 'batch_normalization/beta', 'batch_normalization/moving_mean',
         'batch_normalization/moving_variance']

    With ``training=True`` (``fit`` passes it) the layer uses the batch's
    mean and biased variance and updates its non-trainable moving averages::

        moving_mean     ← momentum · moving_mean     + (1 − momentum) · μ_batch
        moving_variance ← momentum · moving_variance + (1 − momentum) · σ²_batch

    Otherwise (``predict``, ``evaluate``, a plain call) it uses the moving
    averages. With a mask (``Embedding(mask_zero=True)`` or ``Masking``
    before it, or ``mask=`` of the input's shape without the feature axis),
    the batch statistics count the real steps only (Keras 3's masked
    moments); every entry is normalised, and the mask is passed on. A
    frozen layer (``trainable=False``) always runs in inference mode, as in
    Keras 3. The moving averages are weights: ``save_weights`` writes them
    and ``load_weights`` reads them.

    Args:
        axis: the feature axis (default -1: channels last); statistics are
            taken over every other axis (batch and spatial: "spatial batch norm").
        momentum: 0.99 (Keras' default; the same update is PyTorch's ``momentum=0.01``).
        epsilon: 1e-3 (Keras' default; PyTorch uses 1e-5).
        center: learn ``β`` (added after normalising).
        scale: learn ``γ`` (multiplied after normalising).
    """
    backward_text = {"x": "ḡ_x = (γ/σ) · (ḡ_y − mean_B(ḡ_y) − x̂ ⊙ mean_B(ḡ_y ⊙ x̂))",
                     "gamma": "ḡ_γ = Σ_B (ḡ_y ⊙ x̂)", "beta": "ḡ_β = Σ_B ḡ_y"}    # x̂ = (x − μ_B)/σ; inference ḡ_y·γ/σ

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 synchronized=False, **kwargs):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint, **kwargs)
        if not isinstance(axis, Integral):
            raise TypeError(f"BatchNormalization: axis must be one int (the feature axis), got {axis!r}.")
        if not 0 <= float(momentum) <= 1:
            raise ValueError(f"BatchNormalization: momentum must be in [0, 1], got {momentum!r}.")
        self.momentum = float(momentum)
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.synchronized = bool(synchronized)

    supports_masking = True

    def get_config(self) -> dict:
        return {**super().get_config(), "momentum": self.momentum,
                "moving_mean_initializer": self.moving_mean_initializer,
                "moving_variance_initializer": self.moving_variance_initializer, "synchronized": self.synchronized}

    def build(self, input_shape):
        axes = _axes(self.axis, len(input_shape), self.name)
        shape = self._build_params(input_shape, axes)
        self.moving_mean = self.add_weight(shape, self.moving_mean_initializer, name="moving_mean", trainable=False)
        self.moving_variance = self.add_weight(shape, self.moving_variance_initializer, name="moving_variance",
                                               trainable=False)

    def call(self, inputs, training=None, mask=None):
        self._check(inputs)
        reduce = tuple(a for a in range(inputs.ndim) if a not in self._param_axes)
        weights = None
        if mask is not None:
            feature = self._param_axes[0]
            shape = tuple(n for a, n in enumerate(inputs.shape) if a != feature)
            weights = np.expand_dims(boolean_mask(self, mask, shape), feature).astype(inputs.dtype)
        if training and self.trainable:
            mean, variance = _moments(inputs, reduce) if weights is None else \
                _masked_moments(inputs, weights, reduce)
            m = self.momentum
            self.moving_mean.assign(self.moving_mean._value * m + mean._value.reshape(self._param_shape) * (1 - m))
            self.moving_variance.assign(self.moving_variance._value * m
                                        + variance._value.reshape(self._param_shape) * (1 - m))
        else:
            mean, variance = self._broadcast(self.moving_mean), self._broadcast(self.moving_variance)
        return self._normalize(inputs, mean, variance)


class LayerNormalization(_Normalization):
    """Normalise each sample over its feature axes, as ``keras.layers.LayerNormalization``.

        >>> LayerNormalization()(np.random.rand(2, 5, 8)).shape
        (2, 5, 8)

    ``μ`` and ``σ²`` are taken over ``axis`` (default -1) for every sample
    separately, so training and inference behave the same. ``γ`` and ``β``
    have the shape of the normalised axes.

    With ``rms_scaling=True``, ``center`` and ``scale`` are ignored and the
    layer computes Keras 3's ``y = x / √(σ² + ε) · γ``: ``x`` is not centred,
    but ``σ²`` is still the (biased) variance, not the mean of ``x²``. It has
    ``γ`` and no ``β``, as Keras. Keras 3 deprecates this option for that
    reason (and so does this layer, with a warning); :class:`RMSNormalization`
    divides by the root mean square ``√(mean(x²) + ε)``.

    Args:
        axis: an int or a list of ints.
        epsilon: 1e-3 (Keras' default; PyTorch uses 1e-5).
        center: learn ``β`` (added after normalising).
        scale: learn ``γ`` (multiplied after normalising).
        rms_scaling: scale by ``γ / √(σ² + ε)`` only, as above (deprecated, as in Keras 3).
    """
    backward_text = {"x": "ḡ_x = (γ/σ) · (ḡ_y − mean_f(ḡ_y) − x̂ ⊙ mean_f(ḡ_y ⊙ x̂))",
                     "gamma": "ḡ_γ = Σ_batch (ḡ_y ⊙ x̂)", "beta": "ḡ_β = Σ_batch ḡ_y"}    # means over the features f

    supports_masking = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(axis, epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint, **kwargs)
        self.rms_scaling = bool(rms_scaling)
        if self.rms_scaling:
            warnings.warn("LayerNormalization: rms_scaling=True is deprecated (as in Keras 3): it divides the inputs "
                          "by √(variance + epsilon), not by their root mean square. For RMS normalisation use "
                          "adv.layers.RMSNormalization instead.", stacklevel=user_stacklevel())

    def get_config(self) -> dict:
        return {**super().get_config(), "rms_scaling": self.rms_scaling}

    def build(self, input_shape):
        axes = _axes(self.axis, len(input_shape), self.name)
        if self.rms_scaling:        # Keras 3: γ always, β never
            self._build_params(input_shape, axes, gamma=True, beta=False)
        else:
            self._build_params(input_shape, axes)

    def call(self, inputs):
        self._check(inputs)
        mean, variance = _moments(inputs, self._param_axes)
        if self.rms_scaling:        # Keras 3: x · rsqrt(var(x) + ε) · γ (x itself is not centred)
            return inputs / ops.sqrt(variance + self.epsilon) * self._broadcast(self.gamma)
        return self._normalize(inputs, mean, variance)


class RMSNormalization(_PerAxisParams):
    """Divide each sample by its root mean square over ``axis``, as ``keras.layers.RMSNormalization``.

        >>> layer = RMSNormalization()
        >>> layer(np.array([[3.0, 4.0]])).numpy().round(4)
        array([[0.8485, 1.1314]], dtype=float32)
        >>> [w.path for w in layer.weights]
        ['rms_normalization/scale']

    ``y = x / √(mean(x²) + ε) · scale`` (Zhang & Sennrich, 2019), with the
    mean taken over ``axis`` for every sample separately: no centring, no
    ``β``. ``scale`` is a trainable weight of the shape of the normalised
    axes, initialised to ones, as Keras; for trailing axes this is PyTorch's
    ``torch.nn.functional.rms_norm(x, scale.shape, scale, eps)``. It is
    written with the package's ops (``square``, ``mean``, ``add``, ``sqrt``,
    ``divide``, ``multiply``), so every factor of the chain rule is an edge
    of the graph. As Keras, the layer does not support masking.

    Args:
        axis: the axis to normalise over, an int or a list of ints (default
            -1: the features).
        epsilon: added to the mean square, 1e-6 (Keras' default).
    """

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axis_argument("RMSNormalization", axis)
        self.epsilon = _epsilon("RMSNormalization", epsilon, 1e-6)

    def build(self, input_shape):
        axes = _axes(self.axis, len(input_shape), f"{self.name} (RMSNormalization)")
        self.scale = self.add_weight(self._param_layout(input_shape, axes), "ones", name="scale")

    def call(self, inputs):
        self._check(inputs)
        if inputs.dtype.kind != "f":
            inputs = ops.cast(inputs, self.dtype)
        mean_square = ops.mean(ops.square(inputs), axis=self._param_axes, keepdims=True)
        return inputs / ops.sqrt(mean_square + self.epsilon) * self._broadcast(self.scale)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}


class GroupNormalization(_Normalization):
    """Normalise each sample over groups of channels, as ``keras.layers.GroupNormalization``.

        >>> GroupNormalization(groups=2)(np.random.rand(3, 5, 4)).shape
        (3, 5, 4)

    The ``C`` channels of ``axis`` are split into ``groups`` groups of
    ``C / groups`` consecutive channels; ``μ`` and ``σ²`` (biased) are taken
    per sample and group, over the group's channels and every other
    non-batch axis, and ``y = γ · (x − μ) / √(σ² + ε) + β`` with ``γ`` and
    ``β`` of shape ``(C,)``. ``groups=1`` is layer normalisation over all
    features; ``groups=-1`` (one channel per group) is instance
    normalisation. Training and inference behave the same.

    Args:
        groups: the number of groups (default 32; -1: one per channel). It
            must divide the number of channels.
        axis: the channel axis, one int (default -1).
        epsilon: 1e-3 (Keras' default).
        center: learn ``β``.
        scale: learn ``γ``.
    """

    supports_masking = True

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        if isinstance(groups, bool) or not isinstance(groups, Integral) or (groups < 1 and groups != -1):
            raise ValueError(f"GroupNormalization: groups must be a positive integer that divides the number of "
                             f"channels (or -1: one group per channel), got {groups!r}.")
        if isinstance(axis, bool) or not isinstance(axis, Integral):
            raise TypeError(f"GroupNormalization: axis must be one int (the channel axis), got {axis!r}.")
        super().__init__(int(axis), epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
                         gamma_regularizer, beta_constraint, gamma_constraint, **kwargs)
        self.groups = int(groups)

    def get_config(self) -> dict:
        return {**super().get_config(), "groups": self.groups}

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        (axis,) = _axes(self.axis, len(input_shape), self.name)
        if axis == 0:
            raise ValueError(f"{self.name} (GroupNormalization): axis {self.axis} is the batch axis of inputs of "
                             f"shape {input_shape}; pass the channel axis (e.g. axis=-1).")
        channels = input_shape[axis]
        if channels is not None:
            groups = channels if self.groups == -1 else self.groups
            if groups > channels or channels % groups:
                raise ValueError(f"{self.name} (GroupNormalization): groups={self.groups} must divide the "
                                 f"{channels} channels of axis {self.axis} (input shape {input_shape}). Pass a "
                                 f"divisor of {channels}, e.g. groups="
                                 f"{max(d for d in range(1, min(groups, channels) + 1) if channels % d == 0)}.")
        self._build_params(input_shape, (axis,))
        self._groups = self._param_shape[0] if self.groups == -1 else self.groups

    def call(self, inputs):
        self._check(inputs)
        axis, groups = self._param_axes[0], self._groups
        shape = tuple(inputs.shape)
        grouped = shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1:]
        x = ops.reshape(inputs, grouped)
        reduce = tuple(a for a in range(1, len(grouped)) if a != axis)
        mean, variance = _moments(x, reduce)
        return self._scale_and_center(ops.reshape((x - mean) / ops.sqrt(variance + self.epsilon), shape))


UNIT_EPSILON = 1e-12    # Keras' floor of the squared norm in UnitNormalization


def l2_normalize(x, axis, floor):
    """``x / √max(Σx², floor)`` along ``axis`` (kept): each slice scaled to L2 norm 1, a zero slice kept at 0
    with a finite gradient. ``UnitNormalization`` and ``Dot(normalize=True)`` use it with Keras' floors."""
    return x / ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), floor))


class UnitNormalization(Layer):
    """Scale each sample to L2 norm 1 along ``axis``, as ``keras.layers.UnitNormalization``.

        >>> UnitNormalization()(np.array([[3.0, 4.0]])).numpy()
        array([[0.6, 0.8]], dtype=float32)

    ``y = x / √max(Σ x², 1e-12)`` over ``axis`` (an int or a list of ints,
    default -1), as Keras 3: an all-zero input stays zero instead of
    dividing by zero. No weights.
    """

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axis_argument("UnitNormalization", axis)

    def call(self, inputs):
        axes = _axes(self.axis, inputs.ndim, f"{self.name} (UnitNormalization)")
        if inputs.dtype.kind != "f":
            inputs = ops.cast(inputs, self.dtype)
        return l2_normalize(inputs, axes, UNIT_EPSILON)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
