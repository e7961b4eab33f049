"""Preprocessing layers: ``Rescaling`` and ``Normalization`` (Keras 3 names, arguments and semantics).

Both are written with the package's ops (``multiply``, ``add``,
``subtract``, ``divide``, ``sqrt``, ``maximum``), so on the graph they are
a folded box with those few ops inside and the gradient reaches the input
through them: ``Rescaling``'s factor is ``scale``, ``Normalization``'s is
``1 / max(√variance, ε)``.

``Normalization`` learns its statistics with :meth:`Normalization.adapt`
(not with gradients): its ``mean`` and ``variance`` are non-trainable
weights, so ``save_weights`` writes them and ``load_weights`` reads them.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..core import ops
from ..core.tensor import Tensor, constant
from .base import Layer, building
from .normalization import _axes

__all__ = ["Rescaling", "Normalization"]

EPSILON = 1e-7      # keras.backend.epsilon(): the floor of √variance in Normalization


def _number_or_array(owner: str, what: str, value):
    """``value`` as a float, or as a float numpy array (per-channel values); a TypeError otherwise."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{owner}: {what} must be a number or an array of numbers, got {value!r}. Pass e.g. "
                        f"{owner}({what}=1 / 255.0).")
    if isinstance(value, Real):
        return float(value)
    try:
        arr = np.asarray(value.numpy() if isinstance(value, Tensor) else value, dtype="float64")
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {what} must be a number or an array of numbers, got {value!r}.") from None
    return float(arr) if arr.ndim == 0 else arr


def _plain(value):
    """A config value JSON can hold: a float stays a float, an array becomes nested lists."""
    return value.tolist() if isinstance(value, np.ndarray) else value


class Rescaling(Layer):
    """``x · scale + offset``, as ``keras.layers.Rescaling`` (the same in training and inference).

        >>> Rescaling(1 / 255.0)(np.array([[0.0, 51.0, 255.0]])).numpy()
        array([[0. , 0.2, 1. ]], dtype=float32)

    ``Rescaling(1 / 127.5, offset=-1)`` maps ``[0, 255]`` to ``[-1, 1]``.
    ``scale`` and ``offset`` may be arrays (per channel, broadcast against the
    last axes). Integer inputs give floats (the layer's dtype), as in Keras.

    Args:
        scale: the factor (a number or an array).
        offset: added after scaling (default 0.0).
    """

    supports_masking = True

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = _number_or_array("Rescaling", "scale", scale)
        self.offset = _number_or_array("Rescaling", "offset", offset)

    def call(self, inputs):
        if inputs.dtype.kind != "f":
            inputs = ops.cast(inputs, self.dtype)
        dtype = inputs.dtype
        scale = self.scale if isinstance(self.scale, float) else self.scale.astype(dtype)
        offset = self.offset if isinstance(self.offset, float) else self.offset.astype(dtype)
        return inputs * scale + offset

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": _plain(self.scale), "offset": _plain(self.offset)}


class Normalization(Layer):
    """Shift and scale each feature to mean 0 and variance 1, as ``keras.layers.Normalization``.

        >>> norm = Normalization()
        >>> norm.adapt(np.array([[0.0, 7.0], [2.0, 9.0]]))
        >>> norm(np.array([[0.0, 7.0]])).numpy()
        array([[-1., -1.]], dtype=float32)

    The output is Keras 3's ``(x − mean) / max(√variance, ε)`` with
    ``ε = 1e-7`` (``keras.backend.epsilon()``); with ``invert=True`` the
    inverse, ``mean + x · max(√variance, ε)``, which turns normalised values
    back into data. There is a separate mean and variance for each index of
    the ``axis`` axes; ``axis=None`` takes one mean and variance for
    everything.

    The statistics come either from the arguments ``mean`` and ``variance``
    (kept in the config, as Keras) or from :meth:`adapt`, which stores them in
    the non-trainable weights ``mean``, ``variance`` and ``count`` (written by
    ``save_weights``). Calling the layer on data before either is an error.

    Args:
        axis: an int, a list/tuple of ints, or None (default -1: one
            statistic per feature of the last axis).
        mean: the mean to use, given with ``variance`` (broadcast to the
            shape of the ``axis`` axes); default: call :meth:`adapt`.
        variance: the variance to use, given with ``mean``.
        invert: apply the inverse transformation.
    """

    supports_masking = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, Integral) and not isinstance(axis, bool):
            axis = (int(axis),)
        else:
            try:
                items = list(axis)
            except TypeError:
                items = None
            if items is None or not all(isinstance(a, Integral) and not isinstance(a, bool) for a in items):
                raise TypeError(f"Normalization: axis must be an int, a list of ints or None, got {axis!r}. "
                                "Pass e.g. axis=-1 (one mean and variance per feature).")
            axis = tuple(int(a) for a in items)
        self.axis = axis
        if (mean is None) != (variance is None):
            raise ValueError(f"Normalization: give mean and variance together (or neither, and call adapt()), got "
                             f"mean={mean!r} and variance={variance!r}.")
        if mean is not None:
            mean = _number_or_array("Normalization", "mean", mean)
            variance = _number_or_array("Normalization", "variance", variance)
            if np.shape(mean) != np.shape(variance):
                raise ValueError(f"Normalization: mean and variance must have the same shape, got "
                                 f"{np.shape(mean)} and {np.shape(variance)}.")
            if np.ndim(mean) > len(axis):
                raise ValueError(f"Normalization: mean has {np.ndim(mean)} axes, more than the {len(axis)} axes "
                                 f"of axis={axis}. Give one value per index of the axis axes (or a scalar).")
            if np.any(np.asarray(variance) < 0):
                raise ValueError(f"Normalization: variance must be non-negative, got {_plain(variance)!r}.")
        self.input_mean, self.input_variance = mean, variance
        self.invert = bool(invert)
        self._keep = None
        self._stats_shape = None
        self._probing = False

    # ----- state ---------------------------------------------------------------
    def build(self, input_shape):
        input_shape = tuple(input_shape)
        ndim = len(input_shape)
        keep = _axes(self.axis, ndim, f"{self.name} (Normalization)")
        unknown = [a for a in keep if input_shape[a] is None]
        if unknown:
            raise ValueError(f"{self.name} (Normalization): axis {unknown[0]} must have a known size, got input "
                             f"shape {input_shape}.")
        self._ndim, self._keep = ndim, keep
        self._stats_shape = tuple(input_shape[a] for a in keep)
        self._broadcast_shape = tuple(input_shape[a] if a in keep else 1 for a in range(ndim))
        if self.input_mean is None:
            self.mean = self.add_weight(self._stats_shape, "zeros", name="mean", trainable=False)
            self.variance = self.add_weight(self._stats_shape, "ones", name="variance", trainable=False)
            self.count = self.add_weight((), "zeros", name="count", trainable=False)
        else:
            self.mean = self._given(self.input_mean, "mean")
            self.variance = self._given(self.input_variance, "variance")

    def _given(self, value, what):
        """A given statistic broadcast to the kept axes (aligned from the right, as Keras)."""
        arr = np.asarray(value, dtype=self.dtype)
        shape = [1] * self._ndim
        for i in range(1, arr.ndim + 1):
            shape[self._keep[-i]] = arr.shape[-i]
        try:
            return np.broadcast_to(arr.reshape(shape), self._broadcast_shape).copy()
        except ValueError:
            raise ValueError(f"{self.name} (Normalization): {what} of shape {arr.shape} does not broadcast to the "
                             f"shape {self._stats_shape} of the axis axes {self._keep}.") from None

    def adapt(self, data) -> None:
        """Compute the mean and (biased) variance of ``data`` over every axis except ``axis``.

        ``data`` is a numpy array, a tensor, a nested list of numbers, or a
        list of arrays (batches, joined along the first axis). The results
        go to the weights ``mean`` and ``variance``; ``count`` holds the
        number of values each statistic was taken over.
        """
        if self.input_mean is not None:
            raise ValueError(f"{self.name} (Normalization): mean and variance were given to the constructor, so "
                             "there is nothing to adapt. Make the layer without mean=/variance= to call adapt().")
        arr = self._adapt_array(data)
        if not self.built:
            self.build((None, *arr.shape[1:]) if arr.ndim else ())
        elif arr.ndim != self._ndim or tuple(arr.shape[a] for a in self._keep) != self._stats_shape:
            raise ValueError(f"{self.name} (Normalization): built for {self._ndim}-axis inputs with sizes "
                             f"{self._stats_shape} along axis {self._keep}, but adapt() got data of shape "
                             f"{arr.shape}.")
        reduce = tuple(a for a in range(arr.ndim) if a not in self._keep)
        if reduce and any(arr.shape[a] == 0 for a in reduce):
            raise ValueError(f"{self.name} (Normalization): adapt() got no samples (data of shape {arr.shape}).")
        self.mean.assign(arr.mean(axis=reduce))
        self.variance.assign(arr.var(axis=reduce))
        self.count.assign(float(np.prod([arr.shape[a] for a in reduce])))

    def _adapt_array(self, data) -> np.ndarray:
        def bad():
            return TypeError(f"{self.name} (Normalization): adapt() takes a numpy array, a tensor, a nested list of "
                             f"numbers or a list of arrays (batches), got {type(data).__name__}. Convert the data "
                             "first, e.g. layer.adapt(np.asarray(data, dtype='float32')).")
        if isinstance(data, Tensor):
            arr = data.numpy()
        elif isinstance(data, np.ndarray):
            arr = data
        elif isinstance(data, (list, tuple)):
            if data and all(isinstance(b, (np.ndarray, Tensor)) for b in data):
                batches = [b.numpy() if isinstance(b, Tensor) else b for b in data]
                try:
                    arr = np.concatenate(batches, axis=0)
                except ValueError as exc:
                    raise ValueError(f"{self.name} (Normalization): adapt() got batches that do not join along "
                                     f"the first axis: {exc}.") from None
            else:
                try:
                    arr = np.asarray(data)
                except (TypeError, ValueError):
                    raise bad() from None
        else:
            raise bad()
        if arr.dtype.kind not in "fiub" or arr.size == 0 and arr.ndim <= 1:
            raise bad() if arr.dtype.kind not in "fiub" else \
                ValueError(f"{self.name} (Normalization): adapt() got no data (shape {arr.shape}).")
        return arr.astype("float64")

    # ----- the call ----------------------------------------------------------------
    def _symbolic_call(self, args, kwargs):
        self._probing = True            # the shape probe on placeholders runs before adapt(): no error there
        try:
            return super()._symbolic_call(args, kwargs)
        finally:
            self._probing = False

    def _statistics(self):
        if self.input_mean is not None:
            return constant(self.mean), constant(self.variance)
        if float(self.count._value) == 0 and not (self._probing or building()):
            raise RuntimeError(f"{self.name} (Normalization): the layer has no mean and variance yet. Call "
                               f"{self.name}.adapt(data) on the training data first (or pass mean= and "
                               "variance= to Normalization).")
        return ops.reshape(self.mean, self._broadcast_shape), ops.reshape(self.variance, self._broadcast_shape)

    def call(self, inputs):
        if inputs.ndim != self._ndim or tuple(inputs.shape[a] for a in self._keep) != self._stats_shape:
            raise ValueError(f"{self.name} (Normalization): built for {self._ndim}-axis inputs with sizes "
                             f"{self._stats_shape} along axis {self._keep}, got input shape {tuple(inputs.shape)}.")
        if inputs.dtype.kind != "f":
            inputs = ops.cast(inputs, self.dtype)
        mean, variance = self._statistics()
        std = ops.maximum(ops.sqrt(variance), EPSILON)
        if self.invert:
            return mean + inputs * std
        return (inputs - mean) / std

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "mean": _plain(self.input_mean),
                "variance": _plain(self.input_variance), "invert": self.invert}
