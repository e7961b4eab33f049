"""Core layers: ``Flatten``, ``Reshape``, ``Activation``, ``Lambda`` (``Dense`` lives in dense.py), the
reshaping layers of autoencoders and U-Nets ``UpSampling1D/2D``, ``ZeroPadding1D/2D``, ``Cropping1D/2D``,
the activation layers ``LeakyReLU``, ``ReLU``, ``Softmax``, ``ELU``, ``PReLU``, and ``Masking``.

Each is a thin layer around one op or a few (``reshape``, an activation), so
on the graph it is a folded box with those ops inside: ``UpSampling2D`` is
two ``repeat`` nodes, ``ZeroPadding2D`` one ``pad``, ``Cropping2D`` one
``getitem`` (a slice), ``LeakyReLU`` one ``leaky_relu`` node, ``PReLU``
the ``relu`` nodes and the product with its learned ``alpha``.
"""
from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np

from .. import regularizers
from ..base.state import shared_location, user_stacklevel
from ..base.structure import flatten
from ..core import engine, nn, ops
from ..core.tensor import Tensor
from . import activations, initializers
from .base import Layer
from .conv import check_data_format, check_rank
from .dense import activation_config

__all__ = ["Flatten", "Reshape", "UpSampling1D", "UpSampling2D", "ZeroPadding1D", "ZeroPadding2D",
           "Cropping1D", "Cropping2D", "Activation", "Lambda", "LeakyReLU", "ReLU", "Softmax", "ELU", "PReLU",
           "Masking", "Identity", "RepeatVector", "Permute"]


class Flatten(Layer):
    """Every axis but the batch axis joined into one: ``(batch, 4, 4, 16)`` -> ``(batch, 256)``.

        >>> Flatten()(np.ones((2, 4, 4, 16))).shape
        (2, 256)

    Its gradient is the upstream gradient reshaped back (``reshape`` op).
    A ``(batch,)`` input becomes ``(batch, 1)``, as in Keras.
    """
    backward_text = {"x": "ḡ_x = reshape(ḡ_y, shape of x): Flatten only moves entries"}

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
    backward_text = {"x": "ḡ_x = reshape(ḡ_y, shape of x): Reshape only moves entries"}

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
        return {**super().get_config(), "target_shape": self.target_shape}


def _count(who: str, what: str, value, minimum: int, example, given=None) -> int:
    """``value`` as an int if it is an integer ≥ ``minimum`` (not a bool, a float or a string), else a
    ``ValueError`` that names the layer and gives an example (``given``: the whole argument ``value`` is part of)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        kind = "a positive integer" if minimum == 1 else "an integer ≥ 0"
        part = f"{what} must be {kind}" if given is None else f"every entry of {what} must be {kind}"
        raise ValueError(f"{who}: {part}, got {value!r}{'' if given is None else f' in {given!r}'}. "
                         f"Example: {who}({what}={example}).")
    return int(value)


def _pair(who: str, what: str, value, minimum: int, example, given=None) -> tuple:
    """An int ``n`` as ``(n, n)``, or a sequence of two ints as a tuple (Keras' ``standardize_tuple(value, 2)``)."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return (_count(who, what, value, minimum, example, given),) * 2
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        part = f"{what} must be" if given is None else f"each entry of {what} must be"
        raise ValueError(f"{who}: {part} an int or a tuple of 2 ints, got {value!r}"
                         f"{'' if given is None else f' in {given!r}'}. Example: {who}({what}={example}).")
    return tuple(_count(who, what, v, minimum, example, given or value) for v in value)


def _pairs_2d(who: str, what: str, value, example) -> tuple:
    """Keras' three forms for the spatial axes of ``ZeroPadding2D`` / ``Cropping2D`` as ``((top, bottom), (left,
    right))``: an int (the same on every side), ``(symmetric_height, symmetric_width)``, or the pairs themselves."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        n = _count(who, what, value, 0, example)
        return ((n, n), (n, n))
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise ValueError(f"{who}: {what} must be an int, a tuple of 2 ints (symmetric_height, symmetric_width) or "
                         f"a tuple of 2 tuples of 2 ints ((top, bottom), (left, right)), got {value!r}. "
                         f"Example: {who}({what}={example}).")
    return tuple(_pair(who, what, v, 0, example, value) for v in value)


class UpSampling1D(Layer):
    """Each step repeated ``size`` times along the steps axis, as ``keras.layers.UpSampling1D``.

        >>> UpSampling1D(size=2)(np.ones((4, 5, 3))).shape
        (4, 10, 3)

    Inputs are ``(batch, steps, features)``; step ``t`` of the output is step
    ``t // size`` of the input. One ``repeat`` node: its gradient sums the
    ``size`` copies, ``ḡ_x[t] = Σ_k ḡ_y[t·size + k]``.

    Args:
        size: the upsampling factor, a positive integer.
    """

    _single_input = True

    def __init__(self, size=2, **kwargs):
        if isinstance(size, bool) or not isinstance(size, Integral):
            raise TypeError(f"UpSampling1D: size must be an integer, got {size!r} (a {type(size).__name__}). "
                            "Example: UpSampling1D(size=2).")
        self.size = _count("UpSampling1D", "size", size, 1, 2)
        super().__init__(**kwargs)

    def call(self, inputs):
        check_rank(self, inputs.shape, 1)
        return ops.repeat(inputs, self.size, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}


def _bilinear_weights(n: int, factor: int, dtype) -> np.ndarray:
    """The ``(n·factor, n)`` matrix of bilinear upsampling with half-pixel centres (Keras' ``image.resize``,
    PyTorch's ``align_corners=False``): output ``i`` reads input ``(i + ½)/factor − ½``, clamped to the ends."""
    src = np.clip((np.arange(n * factor) + 0.5) / factor - 0.5, 0, n - 1)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    w = np.zeros((n * factor, n), dtype=dtype)
    rows = np.arange(n * factor)
    np.add.at(w, (rows, lo), 1 - (src - lo))
    np.add.at(w, (rows, hi), src - lo)
    return w


class UpSampling2D(Layer):
    """Rows repeated ``size[0]`` times and columns ``size[1]`` times, as ``keras.layers.UpSampling2D``.

        >>> UpSampling2D(size=(2, 2))(np.ones((4, 7, 7, 16))).shape
        (4, 14, 14, 16)

    Inputs are ``(batch, height, width, channels)`` (channels last). With
    ``interpolation="nearest"`` (the default) pixel ``(i, j)`` of the output
    is pixel ``(i // size[0], j // size[1])`` of the input: two ``repeat``
    nodes, as Keras composes it, and each input pixel's gradient is the sum
    of ḡ over its ``size[0]·size[1]`` copies.

    ``interpolation="bilinear"`` mixes the two nearest input rows (then
    columns) with weights given by the distance, half-pixel centres, as
    Keras' ``image.resize`` and PyTorch's ``Upsample(mode="bilinear")``:
    ``y = W_h · x · W_wᵀ`` per channel, two ``einsum`` nodes with the fixed
    weight matrices ``W``, so the gradient is ``W_hᵀ · ḡ · W_w``.

    Args:
        size: the factors for rows and columns, an int or a tuple of 2 positive ints.
        data_format: ``"channels_last"`` (default, or None) or ``"channels_first"`` (channels before the
            spatial axes, as PyTorch's NCHW): the same computation on the other axes.
        interpolation: ``"nearest"`` or ``"bilinear"``.
    """

    _single_input = True

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        self.size = _pair("UpSampling2D", "size", size, 1, (2, 2))
        data_format = check_data_format(data_format, "UpSampling2D", channels_first=True)
        key = interpolation.lower() if isinstance(interpolation, str) else interpolation
        if key not in ("nearest", "bilinear"):
            raise ValueError(f"UpSampling2D: interpolation={interpolation!r} is not supported; use 'nearest' "
                             "(copies of each pixel) or 'bilinear' (a distance-weighted mix of the nearest "
                             "pixels). Keras' 'bicubic', 'lanczos3' and 'lanczos5' are not available here.")
        self.data_format, self.interpolation = data_format, key
        super().__init__(**kwargs)

    def call(self, inputs):
        check_rank(self, inputs.shape, 2)
        first = self.data_format == "channels_first"
        (fh, fw), (ah, aw) = self.size, _spatial_axes(self, 2)
        h, w = inputs.shape[ah], inputs.shape[aw]
        if self.interpolation == "nearest":
            return ops.repeat(ops.repeat(inputs, fh, axis=ah), fw, axis=aw)
        y = inputs
        if fh > 1:
            y = ops.einsum("ih,bchw->bciw" if first else "ih,bhwc->biwc", _bilinear_weights(h, fh, inputs.dtype), y)
        if fw > 1:
            y = ops.einsum("jw,bchw->bchj" if first else "jw,bhwc->bhjc", _bilinear_weights(w, fw, inputs.dtype), y)
        return y

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}


class ZeroPadding1D(Layer):
    """Rows of zeros added before and after the steps, as ``keras.layers.ZeroPadding1D``.

        >>> ZeroPadding1D(padding=(1, 2))(np.ones((4, 5, 3))).shape
        (4, 8, 3)

    Inputs are ``(batch, steps, features)``. One ``pad`` node; its gradient
    is ḡ with the padded steps cut off (they depend on nothing).

    Args:
        padding: an int (the same before and after) or ``(before, after)``, ints ≥ 0.
        data_format: ``"channels_last"`` (default, or None) or ``"channels_first"`` (channels before the
            spatial axes, as PyTorch's NCHW): the same computation on the other axes.
    """

    _single_input = True

    def __init__(self, padding=1, data_format=None, **kwargs):
        self.padding = _pair("ZeroPadding1D", "padding", padding, 0, (1, 1))
        self.data_format = check_data_format(data_format, "ZeroPadding1D", channels_first=True)
        super().__init__(**kwargs)

    def call(self, inputs):
        check_rank(self, inputs.shape, 1)
        return ops.pad(inputs, _spatial_widths(self, (self.padding,)))

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class ZeroPadding2D(Layer):
    """Rows and columns of zeros around each image, as ``keras.layers.ZeroPadding2D``.

        >>> ZeroPadding2D(padding=((1, 0), (2, 2)))(np.ones((4, 5, 5, 3))).shape
        (4, 6, 9, 3)

    Inputs are ``(batch, height, width, channels)``. ``padding`` takes
    Keras' three forms: ``1`` (one on every side), ``(1, 2)`` (1 above and
    below, 2 left and right) or ``((top, bottom), (left, right))``. One
    ``pad`` node; its gradient is ḡ with the border cut off.

    Args:
        padding: an int, a tuple of 2 ints or a tuple of 2 tuples of 2 ints, all ≥ 0.
        data_format: ``"channels_last"`` (default, or None) or ``"channels_first"`` (channels before the
            spatial axes, as PyTorch's NCHW): the same computation on the other axes.
    """

    _single_input = True

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        self.padding = _pairs_2d("ZeroPadding2D", "padding", padding, ((1, 1), (1, 1)))
        self.data_format = check_data_format(data_format, "ZeroPadding2D", channels_first=True)
        super().__init__(**kwargs)

    def call(self, inputs):
        check_rank(self, inputs.shape, 2)
        return ops.pad(inputs, _spatial_widths(self, self.padding))

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


def _spatial_axes(layer, rank: int) -> tuple:
    """The spatial axes of a ``(batch, *spatial, channels)`` input, or of ``(batch, channels, *spatial)``
    with ``data_format="channels_first"`` (Keras computes there directly, no transpose)."""
    start = 2 if getattr(layer, "data_format", "channels_last") == "channels_first" else 1
    return tuple(range(start, start + rank))


def _spatial_widths(layer, widths) -> tuple:
    """``np.pad``'s widths for the whole input: ``widths`` (one pair per spatial axis) where those axes are."""
    out = [(0, 0)] * (len(widths) + 2)
    for axis, pair in zip(_spatial_axes(layer, len(widths)), widths):
        out[axis] = tuple(pair)
    return tuple(out)


def _check_crop(layer, shape, cropping) -> None:
    """Keras' rule: at least one entry must remain along each cropped axis."""
    for axis, (a, b) in zip(_spatial_axes(layer, len(cropping)), cropping):
        if a + b >= shape[axis]:
            raise ValueError(f"{layer.name} ({type(layer).__name__}): cropping ({a}, {b}) from axis {axis} of "
                             f"inputs of shape {tuple(shape)} leaves no entries ({a} + {b} ≥ {shape[axis]}). Crop "
                             f"fewer than {shape[axis]} entries in all along that axis, or feed larger inputs.")


class Cropping1D(Layer):
    """Steps cut off at the start and the end, as ``keras.layers.Cropping1D``.

        >>> Cropping1D(cropping=(1, 2))(np.ones((4, 10, 3))).shape
        (4, 7, 3)

    Inputs are ``(batch, steps, features)``. One ``getitem`` node (the
    slice ``x[:, before:steps − after]``); its gradient is ḡ placed back in
    zeros: the cropped steps get 0.

    Args:
        cropping: an int (the same at both ends) or ``(before, after)``, ints ≥ 0.
    """

    _single_input = True

    def __init__(self, cropping=(1, 1), **kwargs):
        self.cropping = _pair("Cropping1D", "cropping", cropping, 0, (1, 1))
        super().__init__(**kwargs)

    def call(self, inputs):
        check_rank(self, inputs.shape, 1)
        _check_crop(self, inputs.shape, (self.cropping,))
        (a, b), n = self.cropping, inputs.shape[1]
        return inputs[:, a:n - b]

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping}


class Cropping2D(Layer):
    """Rows and columns cut off each image's borders, as ``keras.layers.Cropping2D``.

        >>> Cropping2D(cropping=((2, 2), (4, 4)))(np.ones((2, 28, 28, 3))).shape
        (2, 24, 20, 3)

    Inputs are ``(batch, height, width, channels)``. ``cropping`` takes
    Keras' three forms, as ``ZeroPadding2D``'s ``padding``; the default
    crops nothing. One ``getitem`` node; its gradient is ḡ placed back in
    zeros. In a U-Net it trims the encoder's larger maps to the decoder's
    size before they are concatenated.

    Args:
        cropping: an int, a tuple of 2 ints or a tuple of 2 tuples of 2 ints, all ≥ 0.
        data_format: ``"channels_last"`` (default, or None) or ``"channels_first"`` (channels before the
            spatial axes, as PyTorch's NCHW): the same computation on the other axes.
    """

    _single_input = True

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        self.cropping = _pairs_2d("Cropping2D", "cropping", cropping, ((2, 2), (4, 4)))
        self.data_format = check_data_format(data_format, "Cropping2D", channels_first=True)
        super().__init__(**kwargs)

    def call(self, inputs):
        check_rank(self, inputs.shape, 2)
        _check_crop(self, inputs.shape, self.cropping)
        ((top, bottom), (left, right)), (ah, aw) = self.cropping, _spatial_axes(self, 2)
        h, w = inputs.shape[ah], inputs.shape[aw]
        if self.data_format == "channels_first":
            return inputs[:, :, top:h - bottom, left:w - right]
        return inputs[:, top:h - bottom, left:w - right]

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}


class Activation(Layer):
    """Apply an activation function: ``Activation("relu")``, as ``keras.layers.Activation``.

        >>> Activation("tanh")(np.zeros((2, 3))).shape
        (2, 3)

    Accepts the names of :mod:`autodiff_viz.layers.activations` or a callable.
    """
    backward_text = {"x": "ḡ_x = ḡ_y ⊙ f′(x)"}

    supports_masking = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activation_config(self.activation)}


def _non_negative(who: str, what: str, value, example) -> float:
    """``value`` as a float if it is a number ≥ 0 (not None, a bool, NaN or a string), else Keras 3's ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
        raise ValueError(f"{who}: {what} must be a number ≥ 0, got {value!r}. Example: {who}({what}={example}).")
    return float(value)


class LeakyReLU(Layer):
    """``x`` where ``x > 0``, ``negative_slope·x`` elsewhere, as ``keras.layers.LeakyReLU``.

        >>> LeakyReLU(negative_slope=0.5)(np.array([-10.0, -5.0, 0.0, 5.0])).numpy()
        array([-5. , -2.5,  0. ,  5. ], dtype=float32)

    The layer's default slope is 0.3 (Keras 3's; ``adv.nn.leaky_relu`` and
    the ``"leaky_relu"`` activation use 0.2, as Keras does). The small slope
    keeps a gradient for negative inputs: ``∂y/∂x`` is 1 where ``x > 0`` and
    ``negative_slope`` elsewhere (also at 0, as PyTorch), so a unit cannot
    "die" as a relu unit can. One ``leaky_relu`` node on the graph.
    ``LeakyReLU(alpha=0.1)``, Keras 2's name for the slope, is accepted with
    a warning, as Keras 3 does.

    Args:
        negative_slope: the slope for ``x ≤ 0``, a number ≥ 0.
    """

    _single_input = True
    supports_masking = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            alpha = kwargs.pop("alpha")
            if negative_slope != 0.3:
                raise TypeError(f"LeakyReLU: got negative_slope={negative_slope!r} and alpha={alpha!r}, two names "
                                "for the same slope. Pass only negative_slope= (Keras 3's name).")
            warnings.warn("LeakyReLU: the argument `alpha` is deprecated (as in Keras 3). Use `negative_slope` "
                          "instead.", stacklevel=user_stacklevel())
            negative_slope = alpha
        self.negative_slope = _non_negative("LeakyReLU", "negative_slope", negative_slope, 0.3)
        super().__init__(**kwargs)

    def call(self, inputs):
        return nn.leaky_relu(inputs, negative_slope=self.negative_slope)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ReLU(Layer):
    """Keras 3's rectifier with its three options, as ``keras.layers.ReLU``::

        y = min(x, max_value)             where x > threshold
        y = negative_slope · (x − threshold)   elsewhere

        >>> ReLU(max_value=10, negative_slope=0.5)(np.array([-10.0, -5.0, 0.0, 5.0, 20.0])).numpy()
        array([-5. , -2.5,  0. ,  5. , 10. ], dtype=float32)

    ``∂y/∂x`` is 1 where ``threshold < x ≤ max_value``, ``negative_slope``
    below the threshold, 0 above ``max_value`` and 0 at exactly the
    threshold (relu's gradient at 0). With the defaults it is one ``relu``
    node, with only a slope one ``leaky_relu`` node; otherwise the graph shows
    Keras' composition: ``where(x > threshold, x, 0)`` (or ``relu(x)``),
    ``clip`` to ``[0, max_value]``, minus ``negative_slope · relu(threshold − x)``.

    Args:
        max_value: the largest output, a number ≥ 0, or None (no limit).
        negative_slope: the slope below the threshold, a number ≥ 0.
        threshold: the input below which the output is damped (0 without a
            slope), a number ≥ 0.
    """
    backward_text = {"x": "ḡ_x = ḡ_y ⊙ [x > 0]"}

    _single_input = True
    supports_masking = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        self.max_value = None if max_value is None else _non_negative("ReLU", "max_value", max_value, 6.0)
        self.negative_slope = _non_negative("ReLU", "negative_slope", negative_slope, 0.1)
        self.threshold = _non_negative("ReLU", "threshold", threshold, 0.0)
        super().__init__(**kwargs)

    def call(self, inputs):
        slope, top, threshold = self.negative_slope, self.max_value, self.threshold
        if top is None and threshold == 0:
            return nn.leaky_relu(inputs, negative_slope=slope) if slope else nn.relu(inputs)
        y = ops.where(inputs > threshold, inputs, 0.0) if threshold else nn.relu(inputs)
        if top is not None:
            y = ops.clip(y, 0.0, top)
        if slope:
            y = y - slope * nn.relu(threshold - inputs if threshold else -inputs)
        return y

    def get_config(self) -> dict:
        return {**super().get_config(), "max_value": self.max_value, "negative_slope": self.negative_slope,
                "threshold": self.threshold}


class Softmax(Layer):
    """``exp(x − max x) / Σ exp(x − max x)`` along ``axis``, as ``keras.layers.Softmax``.

        >>> Softmax()(np.array([1.0, 2.0, 1.0])).numpy()
        array([0.21194156, 0.5761169 , 0.21194156], dtype=float32)

    ``axis`` is an int or a list of axes (one distribution over all of them,
    as Keras). One ``softmax`` node, whose factor is ``diag(y) − y yᵀ``.

    ``layer(x, mask=m)`` takes Keras' mask: booleans (or numbers, > 0.5
    meaning True) that broadcast to ``x`` from the right, True where an entry
    counts. Masked entries are replaced by −1e9 before the softmax (so they
    get no probability and no gradient) and set to exactly 0 after it, so a
    row masked everywhere is all zeros rather than uniform (two ``where``
    nodes around the ``softmax``).

    Args:
        axis: the axis (or list of axes) that sums to 1.
    """
    backward_text = {"x": "ḡ_x = y ⊙ (ḡ_y − Σ(ḡ_y ⊙ y))"}

    _single_input = True

    def __init__(self, axis=-1, **kwargs):
        items = axis if isinstance(axis, (list, tuple)) else [axis]
        if not items or any(isinstance(a, bool) or not isinstance(a, Integral) for a in items):
            raise TypeError(f"Softmax: axis must be an int or a list of ints, got {axis!r}. Example: Softmax(axis=-1).")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else int(axis)
        super().__init__(**kwargs)

    def call(self, inputs, mask=None):
        if mask is None:
            return nn.softmax(inputs, axis=self.axis)
        keep = np.asarray(mask._value if isinstance(mask, Tensor) else mask)
        if not engine.broadcasts_to(keep.shape, inputs.shape):
            raise ValueError(f"{self.name} (Softmax): the mask of shape {keep.shape} does not broadcast to the inputs "
                             f"of shape {tuple(inputs.shape)}: it may not have more axes, and each of its axes "
                             "(counted from the right) must be 1 or the input's size.")
        if keep.dtype != np.bool_:
            keep = keep > 0.5
        lowest = -3e4 if inputs.dtype == np.float16 else -1e9
        y = nn.softmax(ops.where(keep, inputs, lowest), axis=self.axis)
        return ops.where(keep, y, 0.0)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class ELU(Layer):
    """``x`` where ``x > 0``, ``alpha·(eˣ − 1)`` elsewhere, as ``keras.layers.ELU``.

        >>> ELU()(np.array([-1.0, 0.0, 2.0])).numpy()
        array([-0.63212055,  0.        ,  2.        ], dtype=float32)

    Smooth at 0 for ``alpha = 1``: ``∂y/∂x`` is 1 where ``x > 0`` and
    ``alpha·eˣ = y + alpha`` elsewhere. One ``elu`` node.

    Args:
        alpha: the scale of the negative part (the output tends to ``−alpha``).
    """

    _single_input = True
    supports_masking = True

    def __init__(self, alpha=1.0, **kwargs):
        if isinstance(alpha, bool) or not isinstance(alpha, Real):
            raise TypeError(f"ELU: alpha must be a number, got {alpha!r}. Example: ELU(alpha=1.0).")
        self.alpha = float(alpha)
        super().__init__(**kwargs)

    def call(self, inputs):
        return nn.elu(inputs, alpha=self.alpha)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(Layer):
    """A leaky relu whose slope is learned: ``y = relu(x) − alpha·relu(−x)``, as ``keras.layers.PReLU``.

        >>> layer = PReLU(shared_axes=[1, 2])
        >>> layer(np.ones((2, 5, 5, 3))).shape, layer.alpha.shape
        ((2, 5, 5, 3), (1, 1, 3))

    ``alpha`` holds one slope per entry of a sample (shape
    ``input_shape[1:]``) and starts at 0 (Keras' ``alpha_initializer="Zeros"``:
    the layer starts as a relu). ``shared_axes`` names the axes (the batch
    axis is 0) along which one slope is shared: for ``(batch, h, w,
    channels)``, ``shared_axes=[1, 2]`` learns one slope per channel.

    The gradients: ``∂y/∂x`` is 1 where ``x > 0``, ``alpha`` where ``x < 0``
    (0 at exactly 0, relu's); ``∂y/∂alpha = −relu(−x) = min(x, 0)``, summed
    over the batch and the shared axes. The graph shows the two ``relu``
    nodes, the product with ``alpha`` and the difference.

    Args:
        alpha_initializer: a name (``"zeros"``, ``"ones"`` ...) or a callable ``f(shape, dtype)``.
        alpha_regularizer: a penalty on ``alpha`` (``adv.regularizers.L2(0.01)``, ``"l2"`` ...).
        alpha_constraint: a function applied to ``alpha`` after each optimizer step.
        shared_axes: an axis or a list of axes (1 or more) that share one slope.
    """

    _single_input = True
    supports_masking = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        initializers.get(alpha_initializer)
        if alpha_constraint is not None and not callable(alpha_constraint):
            raise TypeError(f"PReLU: alpha_constraint must be a function f(alpha) -> new value, or None; got "
                            f"{alpha_constraint!r}.")
        axes = None if shared_axes is None else list(shared_axes) if isinstance(shared_axes, (list, tuple)) \
            else [shared_axes]
        if axes is not None and any(isinstance(a, bool) or not isinstance(a, Integral) or a < 1 for a in axes):
            raise ValueError(f"PReLU: shared_axes must be axes ≥ 1 (axis 0 is the batch), got {shared_axes!r}. "
                             "Example: PReLU(shared_axes=[1, 2]) for (batch, height, width, channels).")
        self.alpha_initializer = alpha_initializer
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = alpha_constraint
        self.shared_axes = None if axes is None else [int(a) for a in axes]
        super().__init__(**kwargs)

    def build(self, input_shape):
        shared = set(self.shared_axes or ())
        if len(input_shape) < 2 or max(shared, default=0) >= len(input_shape):
            raise ValueError(f"{self.name} (PReLU): inputs of shape {tuple(input_shape)} and shared_axes "
                             f"{self.shared_axes}: the inputs need a batch axis and more, and each shared axis "
                             f"must be one of them (1 to {len(input_shape) - 1}).")
        shape = tuple(1 if i in shared else s for i, s in enumerate(input_shape) if i > 0)
        if None in shape:
            unknown = [i for i, s in enumerate(input_shape) if i > 0 and s is None and i not in shared]
            raise ValueError(f"{self.name} (PReLU): axes {unknown} of the input shape {tuple(input_shape)} have no "
                             "fixed size, and alpha needs one entry per position. Share them: "
                             f"PReLU(shared_axes={sorted(shared | set(unknown))}).")
        self.alpha = self.add_weight(shape=shape, initializer=self.alpha_initializer, name="alpha",
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint)

    def call(self, inputs):
        shared = set(self.shared_axes or ())
        expected = tuple("any" if i + 1 in shared else s for i, s in enumerate(self.alpha.shape))
        if inputs.ndim != self.alpha.ndim + 1 or any(
                e != "any" and e != s for e, s in zip(expected, inputs.shape[1:])):
            raise ValueError(f"{self.name} (PReLU): this layer was built for samples of shape {expected} (alpha "
                             f"{self.alpha.shape}), got inputs of shape {tuple(inputs.shape)}. A layer keeps the "
                             "input shape of its first call; shared axes may vary.")
        return nn.relu(inputs) - self.alpha * nn.relu(-inputs)

    def get_config(self) -> dict:
        reg = self.alpha_regularizer
        return {**super().get_config(), "alpha_initializer": self.alpha_initializer,
                "alpha_regularizer": regularizers.serialize(reg) if hasattr(reg, "get_config") else reg,
                "alpha_constraint": self.alpha_constraint, "shared_axes": self.shared_axes}


class Masking(Layer):
    """Mark as padding every step whose features all equal ``mask_value``, as ``keras.layers.Masking``.

        >>> x = np.array([[[1., 2.], [0., 0.], [3., 0.]]])
        >>> Masking(0.0).compute_mask(x)
        array([[ True, False,  True]])

    The output is the input with the padded steps set to zero (one
    ``multiply`` node), and it carries the mask (``inputs`` of shape
    ``(batch, steps, features)``, mask ``(batch, steps)``) to the layers
    after it: a recurrent layer skips those steps, as in Keras 3.
    """

    _single_input = True
    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(mask_value, bool) or not isinstance(mask_value, Real):
            raise TypeError(f"Masking: mask_value must be a number, got {mask_value!r}. Example: Masking(0.0).")
        self.mask_value = float(mask_value)

    def compute_mask(self, inputs, mask=None):
        value = inputs._value if isinstance(inputs, Tensor) else np.asarray(inputs)
        return np.any(value != self.mask_value, axis=-1)

    def call(self, inputs):
        keep = np.any(inputs._value != self.mask_value, axis=-1, keepdims=True)
        return inputs * keep.astype(inputs.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}


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
        self._given_output_shape = output_shape

    def get_config(self) -> dict:
        """The function itself (``adv.saving`` writes a named function by name, a lambda as code that is only
        run again with ``safe_mode=False``), ``output_shape`` and ``arguments``."""
        return {**super().get_config(), "function": self.function, "output_shape": self._given_output_shape,
                "arguments": dict(self.arguments)}

    def call(self, inputs):
        with shared_location(False):
            return self.function(inputs, **self.arguments)


class Identity(Layer):
    """The input, unchanged, as ``keras.layers.Identity`` (a placeholder, e.g. for a skipped block).

        >>> Identity()(np.ones((2, 3))).shape
        (2, 3)

    On the graph it is one ``identity`` node (recorded as a ``cast`` to the
    input's own dtype) whose factor is 1: ḡ passes through. Its output is a
    tensor of its own, so ``layer.output`` can be a gradient source. Nested
    inputs (a list or dict of tensors) give the same structure back. The
    mask passes through, as in Keras 3.
    """

    supports_masking = True

    def call(self, inputs):
        leaves, rebuild = flatten(inputs)
        return rebuild([ops.identity(x) if isinstance(x, Tensor) else x for x in leaves])


class RepeatVector(Layer):
    """Each sample of ``(batch, features)`` repeated ``n`` times: ``(batch, n, features)``, as
    ``keras.layers.RepeatVector``.

        >>> RepeatVector(3)(np.ones((2, 4))).shape
        (2, 3, 4)

    Used to feed one encoding to every step of a recurrent decoder. One
    ``expand_dims`` node and one ``repeat`` node; the gradient sums ḡ over
    the ``n`` copies: ``ḡ_x = Σ_t ḡ_y[:, t, :]``.

    Args:
        n: how many times to repeat, a positive integer.
    """

    _single_input = True

    def __init__(self, n, **kwargs):
        self.n = _count("RepeatVector", "n", n, 1, 3)
        super().__init__(**kwargs)

    def call(self, inputs):
        if inputs.ndim != 2:
            raise ValueError(f"{self.name} (RepeatVector): expected inputs of shape (batch, features), got shape "
                             f"{tuple(inputs.shape)}. Flatten the samples first (Flatten()) or use UpSampling1D "
                             "for sequences.")
        return ops.repeat(ops.expand_dims(inputs, 1), self.n, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}


class Permute(Layer):
    """The axes of each sample reordered, as ``keras.layers.Permute``.

        >>> Permute((2, 1))(np.ones((4, 10, 64))).shape
        (4, 64, 10)

    ``dims`` counts the axes from 1 (the batch axis 0 stays first):
    ``Permute((2, 1))`` swaps the two axes of ``(batch, steps, features)``.
    One ``transpose`` node; its gradient is ḡ transposed back.

    Args:
        dims: a permutation of ``1 … k`` for inputs with ``k`` axes besides the batch axis.
    """

    _single_input = True

    def __init__(self, dims, **kwargs):
        if isinstance(dims, (str, bytes)) or not hasattr(dims, "__len__") or any(
                isinstance(d, bool) or not isinstance(d, Integral) for d in dims):
            raise TypeError(f"Permute: dims must be a tuple of ints (axes counted from 1), got {dims!r}. "
                            "Example: Permute(dims=(2, 1)).")
        if sorted(int(d) for d in dims) != list(range(1, len(dims) + 1)):
            raise ValueError(f"Permute: dims={tuple(dims)!r} is not a permutation of 1 … {len(dims)}: it must hold "
                             f"each of the axes 1 to {len(dims)} once (the batch axis 0 is not part of it). "
                             "Example: Permute(dims=(2, 1)) swaps the two axes of (batch, steps, features).")
        self.dims = tuple(int(d) for d in dims)
        super().__init__(**kwargs)

    def call(self, inputs):
        if inputs.ndim != len(self.dims) + 1:
            raise ValueError(f"{self.name} (Permute): dims={self.dims} needs inputs with {len(self.dims) + 1} axes "
                             f"(the batch axis and {len(self.dims)} more), got shape {tuple(inputs.shape)}.")
        return ops.transpose(inputs, (0,) + self.dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}
