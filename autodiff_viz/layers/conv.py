"""Convolution layers: ``Conv1D``, ``Conv2D`` and their transposes ``Conv1DTranspose``,
``Conv2DTranspose`` (Keras 3 names, defaults and weight layouts).

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

A transposed convolution runs a convolution backwards: it *is* the input
gradient of a convolution, recorded as one ``conv_transpose`` op (the
``conv_input_grad`` computation, with ``x`` where that rule has ``ḡ``), and maps
a convolution's output shape back to its input shape (the upsampling half of
an autoencoder, a GAN generator or a U-Net). Its kernel is Keras'
``(*kernel_size, filters, channels)``: filters *before* the input channels,
because it is the kernel of the convolution it runs backwards.

A depthwise convolution (``DepthwiseConv1D``/``DepthwiseConv2D``) filters each
input channel on its own: it is the ``conv`` op with ``groups = channels``,
its Keras kernel ``(*kernel_size, channels, depth_multiplier)`` reshaped to the
rule's ``(*kernel_size, 1, channels · depth_multiplier)`` (output channel
``c · depth_multiplier + m`` comes from input channel ``c``, as Keras). A
separable convolution (``SeparableConv1D``/``SeparableConv2D``) is that
depthwise convolution followed by a pointwise 1×1 ``conv`` that mixes the channels:
two ``conv`` ops on the graph.
"""
from __future__ import annotations

from numbers import Integral

from ..core.nn import window_pads
from ..core.ops import moveaxis, reshape
from ..core.rules import nn as R
from .base import Layer, positive_int
from .dense import kernel_and_bias_config, kernel_and_bias_options, option_weight, weight_config, weight_options

__all__ = ["Conv1D", "Conv2D", "Convolution1D", "Convolution2D", "Conv1DTranspose", "Conv2DTranspose",
           "Convolution1DTranspose", "Convolution2DTranspose", "DepthwiseConv1D", "DepthwiseConv2D",
           "SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D", "SeparableConvolution2D"]


def normalize_tuple(value, n, what, owner, minimum=1) -> tuple:
    """``value`` (an int or a sequence of ``n`` ints, each ≥ ``minimum``) as a tuple of ``n`` ints."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        items = (int(value),) * n
    else:
        try:
            items = tuple(value)
        except TypeError:
            items = None
        if items is None or any(isinstance(v, bool) or not isinstance(v, Integral) for v in items):
            raise TypeError(f"{owner}: {what} must be an int or a tuple of {n} ints, got {value!r} (a size is a "
                            f"whole number: write e.g. {what}=3 or {what}={(3,) * n}).") from None
        items = tuple(int(v) for v in items)
        if len(items) != n:
            raise ValueError(f"{owner}: {what} must have {n} entries (one per spatial axis), got {value!r}.")
    if any(v < minimum for v in items):
        raise ValueError(f"{owner}: every entry of {what} must be ≥ {minimum}, got {value!r}.")
    return items


def normalize_padding(padding, owner, allowed=("valid", "same")) -> str:
    key = padding.lower() if isinstance(padding, str) else padding
    if key not in allowed:
        raise ValueError(f"{owner}: padding must be one of {', '.join(repr(a) for a in allowed)}, got {padding!r}. "
                         "'valid' uses only full windows (the output shrinks); 'same' pads with zeros so that "
                         "the output has ceil(size / stride) positions.")
    return key


def check_data_format(data_format, owner, channels_first=False) -> str:
    """``data_format`` checked: ``"channels_last"`` (the default) or, where ``channels_first`` says the layer
    supports it, ``"channels_first"`` (``(batch, channels, ...)``, CS231n's and PyTorch's NCHW)."""
    if channels_first and data_format == "channels_first":
        return data_format
    if channels_first and data_format not in (None, "channels_last"):
        raise ValueError(f"{owner}: data_format must be 'channels_last' (batch, ..., channels; the default) or "
                         f"'channels_first' (batch, channels, ...), got {data_format!r}. PyTorch's NCHW layout "
                         "is 'channels_first'.")
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{owner}: only data_format='channels_last' (batch, ..., channels) is supported, got "
                         f"{data_format!r}. Move the channel axis last: adv.moveaxis(x, 1, -1) turns (batch, channels, "
                         "...) into (batch, ..., channels) for inputs of any rank.")
    return "channels_last"


def channels_last_call(layer, inputs, call):
    """``call`` on ``inputs`` with the channel axis last, and the result back in ``layer.data_format``.

    Keras' ``channels_first`` means the same layer with the same weights
    (a kernel is always ``spatial + (in, out)``); only the axes of the
    inputs and outputs differ. Moving the axis is an op on the tape, so
    gradients flow back in the learner's layout.
    """
    if layer.data_format != "channels_first":
        return call(inputs)
    return moveaxis(call(moveaxis(inputs, 1, -1)), -1, 1)


def channels_last_shape(layer, input_shape) -> tuple:
    """An input shape as the channels-last computation sees it."""
    input_shape = tuple(input_shape)
    if layer.data_format != "channels_first" or len(input_shape) < 2:
        return input_shape
    return (input_shape[0],) + input_shape[2:] + (input_shape[1],)


def _bias_and_activation(layer, y):
    """How every convolution layer ends, in Keras' order: ``bias_add``, the activation, the activity regularizer."""
    if layer.use_bias:
        y = R.bias_add(y, layer.bias)
    y = layer.activation(y)
    if layer.activity_regularizer is not None:
        layer.add_loss(layer.activity_regularizer(y))
    return y


def check_rank(layer, shape, rank):
    """Inputs of a windowed layer must be ``(batch, *spatial, channels)``; say what to do otherwise."""
    shape = tuple(shape)
    if len(shape) == rank + 2:
        return
    axes = {1: "(batch, steps, channels)", 2: "(batch, height, width, channels)"}[rank]
    if getattr(layer, "data_format", None) == "channels_first":
        axes = {1: "(batch, channels, steps)", 2: "(batch, channels, height, width)"}[rank]
    hint = ""
    if len(shape) == rank + 1:
        hint = (" It looks like one sample without the batch axis: add one with x[None] (or "
                "adv.expand_dims(x, 0)), or a channel axis with x[..., None] if this is a batch of "
                "one-channel samples.")
    raise ValueError(f"{layer.name} ({type(layer).__name__}): expected inputs of rank {rank + 2} {axes}, "
                     f"got shape {shape}.{hint}")


def _window_options(layer, filters, kernel_size, strides, dilation_rate, data_format, channels_first=False) -> None:
    """The options every convolution layer checks and keeps the same way (its ``padding`` it checks itself)."""
    owner = type(layer).__name__
    layer.filters = positive_int(owner, "filters", filters)
    _window_geometry(layer, kernel_size, strides, dilation_rate, data_format, channels_first)


def _window_geometry(layer, kernel_size, strides, dilation_rate, data_format, channels_first=False) -> None:
    """``kernel_size``, ``strides``, ``dilation_rate`` and ``data_format`` checked and kept (every convolution)."""
    owner = type(layer).__name__
    layer.kernel_size = normalize_tuple(kernel_size, layer.rank, "kernel_size", owner)
    layer.strides = normalize_tuple(strides, layer.rank, "strides", owner)
    layer.dilation_rate = normalize_tuple(dilation_rate, layer.rank, "dilation_rate", owner)
    layer.data_format = check_data_format(data_format, owner, channels_first)
    if max(layer.strides) > 1 and max(layer.dilation_rate) > 1:
        raise ValueError(f"{owner}: strides > 1 together with dilation_rate > 1 is not supported (as in "
                         f"Keras); got strides={layer.strides}, dilation_rate={layer.dilation_rate}.")


def _known_channels(layer, input_shape) -> int:
    """The channels (last axis) of a convolution layer's input shape at build time: its rank checked, its size known."""
    input_shape = tuple(input_shape)
    check_rank(layer, input_shape, layer.rank)
    channels = input_shape[-1]
    if channels is None:
        raise ValueError(f"{layer.name}: the channel axis (last) must have a known size, got shape {input_shape}.")
    return channels


def _kernel_and_bias(layer, kernel_shape) -> None:
    """A convolution layer's weights: the kernel of ``kernel_shape`` and, with ``use_bias``, one bias per filter."""
    layer.kernel = option_weight(layer, "kernel", kernel_shape)
    layer.bias = option_weight(layer, "bias", (layer.filters,)) if layer.use_bias else None


def _check_channels(layer, inputs, channels) -> None:
    """A built convolution layer refuses inputs with other channels than those of its first call."""
    if inputs.shape[-1] != channels:
        raise ValueError(f"{layer.name}: this layer was built for inputs with {channels} channels (last axis), "
                         f"got shape {tuple(inputs.shape)}. A layer keeps the input channels of its first "
                         "call; use a new layer for other inputs, or check that the channel axis is last.")


def _checked_pads(layer, inputs, channels) -> tuple:
    """Check a convolution layer's inputs (rank, channels, size against the kernel's reach); return the pads."""
    check_rank(layer, inputs.shape, layer.rank)
    _check_channels(layer, inputs, channels)
    spatial = tuple(inputs.shape[1:-1])
    pads = window_pads(spatial, layer.kernel_size, layer.strides, layer.dilation_rate, layer.padding)
    spans = [(k - 1) * d + 1 for k, d in zip(layer.kernel_size, layer.dilation_rate)]
    for n, span, (lo, hi) in zip(spatial, spans, pads):
        if n + lo + hi < span:
            raise ValueError(f"{layer.name}: the input's spatial size {spatial} is smaller than the kernel's "
                             f"reach {tuple(spans)} (kernel_size {layer.kernel_size}, dilation "
                             f"{layer.dilation_rate}) with padding={layer.padding!r}. Use padding='same', a "
                             "smaller kernel, or larger inputs.")
    return pads


class _Conv(Layer):
    """What ``Conv1D`` and ``Conv2D`` share; ``rank`` is the number of spatial axes."""
    backward_text = {"x": "ḡ_x = full correlation of (ḡ_y ⊙ f′(z)) with the flipped kernel",
                     "kernel": "ḡ_K = correlation of x with (ḡ_y ⊙ f′(z))",
                     "bias": "ḡ_b = Σ over batch and positions of (ḡ_y ⊙ f′(z))",   # z = x ⋆ K + b, y = f(z)
                     # PyTorch's Conv1d/Conv2d (views/figure.py's ALIASES): no activation, K is (out, in, kh, kw)
                     "x (torch)": "ḡ_x = full correlation of ḡ_y with the flipped kernel",
                     "kernel (torch)": "ḡ_K = correlation of x with ḡ_y  (K is (out, in, kh, kw) in torch)",
                     "bias (torch)": "ḡ_b = Σ over batch and positions of ḡ_y"}

    rank = 2

    _single_input = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        _window_options(self, filters, kernel_size, strides, dilation_rate, data_format, channels_first=True)
        allowed = ("valid", "same", "causal") if self.rank == 1 else ("valid", "same")
        self.padding = normalize_padding(padding, owner, allowed)
        if not isinstance(groups, Integral) or groups <= 0 or self.filters % groups:
            raise ValueError(f"{owner}: groups must be a positive integer that divides filters ({self.filters}), "
                             f"got {groups!r}.")
        self.groups = int(groups)
        kernel_and_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                                bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape):
        channels = _known_channels(self, channels_last_shape(self, input_shape))
        if channels % self.groups:
            raise ValueError(f"{self.name}: the input has {channels} channels, which groups={self.groups} does not "
                             "divide; each group must see the same number of channels.")
        _kernel_and_bias(self, self.kernel_size + (channels // self.groups, self.filters))

    def _pads(self, inputs):
        """Check the inputs against the kernel and return the padding amounts."""
        return _checked_pads(self, inputs, self.kernel.shape[-2] * self.groups)

    def convolution_op(self, inputs, kernel, pads):
        return R.conv(inputs, kernel, strides=self.strides, pads=pads, dilation=self.dilation_rate,
                      groups=self.groups)

    def call(self, inputs):
        return channels_last_call(self, inputs, lambda x: _bias_and_activation(
            self, self.convolution_op(x, self.kernel, self._pads(x))))

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups, **kernel_and_bias_config(self)}


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


def transpose_pads(spatial, ksize, strides, dilation, padding, output_padding) -> tuple:
    """Output sizes and the ``conv_transpose`` pads of a Keras transposed convolution, per spatial axis.

    Keras (``ops.conv_transpose``; JAX's and PyTorch's backends compute the
    same) pads the stride-spread input with ``lo_k`` zeros before and
    ``hi_k`` after, then correlates with the flipped kernel, of reach
    ``span = (k − 1)·d + 1``:

    * ``'valid'``: ``lo_k = span − 1``, ``hi_k = span − 1 + output_padding`` (default
      ``max(span, s) − span``), so ``out = (n − 1)·s + max(span, s)``;
    * ``'same'``: ``lo_k + hi_k = s + span − 2`` (``out = n·s``), or, with an
      ``output_padding``, ``span + span % 2 − 2 + output_padding``
      (``out = (n − 1)·s + span % 2 + output_padding``); ``lo_k`` takes the larger
      half, at most ``span − 1``.

    The result is the full transposed convolution (``(n − 1)·s + span``
    entries) with ``span − 1 − lo_k`` entries cut off before and
    ``span − 1 − hi_k`` after (zeros added if that is negative): exactly the
    input gradient of a convolution over ``out`` positions padded with those
    cuts, ``((span − 1 − lo_k, max(span − 1 − hi_k, 0)), ...)``.
    """
    outs, pads = [], []
    for n, k, s, d, op in zip(spatial, ksize, strides, dilation, output_padding):
        span = (k - 1) * d + 1
        if padding == "valid":
            lo_k = span - 1
            hi_k = span - 1 + (max(span, s) - span if op is None else op)
        else:
            total = s + span - 2 if op is None else span + span % 2 - 2 + op
            lo_k = min(total - total // 2, span - 1)
            hi_k = total - lo_k
        outs.append((n - 1) * s + lo_k + hi_k - span + 2)
        pads.append((span - 1 - lo_k, max(span - 1 - hi_k, 0)))
    return tuple(outs), tuple(pads)


class _ConvTranspose(Layer):
    """What ``Conv1DTranspose`` and ``Conv2DTranspose`` share; ``rank`` is the number of spatial axes."""

    rank = 2

    _single_input = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        _window_options(self, filters, kernel_size, strides, dilation_rate, data_format, channels_first=True)
        self.padding = normalize_padding(padding, owner)
        self.output_padding = None
        if output_padding is not None:
            op = normalize_tuple(output_padding, self.rank, "output_padding", owner, minimum=0)
            if any(p >= s for p, s in zip(op, self.strides)):
                raise ValueError(f"{owner}: every entry of output_padding must be smaller than the stride on its "
                                 f"axis, got output_padding={op}, strides={self.strides}. It only chooses among "
                                 "the output sizes that the stride rounds together; use output_padding=None "
                                 "for Keras' default size.")
            self.output_padding = op
        kernel_and_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                                bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape):
        channels = _known_channels(self, channels_last_shape(self, input_shape))
        _kernel_and_bias(self, self.kernel_size + (self.filters, channels))

    def _geometry(self, input_shape):
        """Check an input shape and return the output's spatial sizes and the ``conv_transpose`` pads."""
        check_rank(self, input_shape, self.rank)
        spatial = tuple(input_shape[1:-1])
        outs, pads = transpose_pads(spatial, self.kernel_size, self.strides, self.dilation_rate, self.padding,
                                    self.output_padding or (None,) * self.rank)
        if min(outs) < 1:
            raise ValueError(f"{self.name}: with padding={self.padding!r}, output_padding={self.output_padding} "
                             f"and kernel_size {self.kernel_size}, the input's spatial size {spatial} gives an "
                             f"output of size {outs}. Use a larger output_padding (or None), padding='valid', "
                             "or larger inputs.")
        return outs, pads

    def compute_output_shape(self, input_shape):
        """``(batch, *out, filters)``, Keras' sizes: ``(n − 1)·s + max(span, s)`` for ``'valid'``, ``n·s`` for
        ``'same'`` (each plus ``output_padding`` in place of the default, see :func:`transpose_pads`)."""
        outs, _ = self._geometry(channels_last_shape(self, input_shape))
        if self.data_format == "channels_first":
            return (input_shape[0], self.filters) + outs
        return (input_shape[0],) + outs + (self.filters,)

    def call(self, inputs):
        return channels_last_call(self, inputs, self._call_channels_last)

    def _call_channels_last(self, inputs):
        outs, pads = self._geometry(tuple(inputs.shape))
        _check_channels(self, inputs, self.kernel.shape[-1])
        return _bias_and_activation(self, R.conv_transpose(inputs, self.kernel, spatial=outs, strides=self.strides,
                                                           pads=pads, dilation=self.dilation_rate, groups=1))

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "output_padding": self.output_padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                **kernel_and_bias_config(self)}


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution over ``(batch, steps, channels)``, as ``keras.layers.Conv1DTranspose``.

        >>> Conv1DTranspose(4, 3, strides=2)(np.ones((2, 10, 8))).shape     # kernel (3, 4, 8)
        (2, 21, 4)

    Arguments as :class:`Conv2DTranspose` (ints or 1-tuples).
    """

    rank = 1


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution over ``(batch, height, width, channels)``, as ``keras.layers.Conv2DTranspose``.

        >>> up = Conv2DTranspose(3, 2, strides=2)
        >>> up(np.ones((2, 7, 7, 16))).shape                 # doubles height and width
        (2, 14, 14, 3)
        >>> up.kernel.shape                                  # (kh, kw, filters, in), Keras' layout
        (2, 2, 3, 16)

    Where a convolution *gathers* a window into one output, its transpose
    *scatters*: every input position ``(i, j)`` adds ``x[n, i, j, :] · W[a, b, o, :]``
    into the output at ``(i·sh + a·dh − ph, j·sw + b·dw − pw)``, where ``ph``, ``pw``
    are the entries cut off before (see :func:`transpose_pads`):

    ``y[n, p, q, o] = b[o] + Σ_{i·sh + a·dh = p + ph, j·sw + b·dw = q + pw} Σ_c x[n, i, j, c] · W[a, b, o, c]``

    That is the gradient of ``Conv2D(c, kernel_size, strides, padding)`` with
    respect to its input, with this kernel and ``x`` as the upstream
    gradient, so on the graph it is one ``conv_transpose`` op (factor
    ``⋆ W (conv)`` to the input: the backward of a transposed convolution is a
    convolution).

    Output size per spatial axis (``span = (k − 1)·d + 1``): ``'valid'`` gives
    ``(n − 1)·s + max(span, s)``, ``'same'`` gives ``n·s``; with an
    ``output_padding`` ``p``, ``(n − 1)·s + span + p`` and ``(n − 1)·s + span % 2 + p``.

    Args:
        filters: number of output channels.
        kernel_size: an int or ``(kh, kw)``.
        strides: an int or ``(sh, sw)`` (default 1): the upsampling factor.
        padding: ``"valid"`` (default) or ``"same"``.
        output_padding: None (default) or an int or ``(ph, pw)``, each smaller than the stride: picks
            one of the output sizes a stride-``s`` convolution maps to the same input size.
        data_format: ``"channels_last"`` (default) or ``"channels_first"`` (``(batch, channels, ...)``, PyTorch's
            layout): the same weights in the same layout, the channel axis moved in and back on the tape.
        dilation_rate: an int or ``(dh, dw)`` (not together with strides > 1, as Keras).
        activation: a name, a callable or None, as for ``Dense``.
        use_bias: add one bias per filter (a ``bias_add`` op).
        kernel_initializer: default ``"glorot_uniform"``.
        bias_initializer: default ``"zeros"``.
        kernel_regularizer: a penalty on the kernel (see :mod:`autodiff_viz.regularizers`).
        bias_regularizer: a penalty on the bias.
        activity_regularizer: a penalty on the output.
    """

    rank = 2


Convolution1DTranspose, Convolution2DTranspose = Conv1DTranspose, Conv2DTranspose


# ----- depthwise and separable convolutions ---------------------------------------------------------------
def _depth_multiplier(layer, depth_multiplier) -> int:
    if isinstance(depth_multiplier, bool) or not isinstance(depth_multiplier, Integral) or depth_multiplier < 1:
        raise ValueError(f"{layer.name} ({type(layer).__name__}): depth_multiplier must be a positive integer (the "
                         f"number of output channels per input channel), got {depth_multiplier!r}. Pass a whole "
                         "number, e.g. depth_multiplier=2.")
    return int(depth_multiplier)


def _depthwise_options(layer, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate) -> None:
    """The window and ``depth_multiplier`` of a depthwise step (depthwise and separable layers), checked and kept."""
    _window_geometry(layer, kernel_size, strides, dilation_rate, data_format, channels_first=True)
    layer.padding = normalize_padding(padding, type(layer).__name__)
    layer.depth_multiplier = _depth_multiplier(layer, depth_multiplier)


def _depthwise_config(layer) -> dict:
    """The ``get_config`` entries of :func:`_depthwise_options`."""
    return {"kernel_size": layer.kernel_size, "strides": layer.strides, "padding": layer.padding,
            "depth_multiplier": layer.depth_multiplier, "data_format": layer.data_format,
            "dilation_rate": layer.dilation_rate}


def _depthwise_kernel(layer, channels, name):
    """The depthwise kernel ``(*kernel_size, channels, depth_multiplier)`` (Keras' layout), named ``name``."""
    return option_weight(layer, "depthwise", layer.kernel_size + (channels, layer.depth_multiplier), name)


def _depthwise(layer, inputs, kernel, pads):
    """One ``conv`` op with ``groups = channels``: Keras' ``(*k, C, m)`` kernel reshaped to the rule's
    ``(*k, 1, C·m)``."""
    channels = kernel.shape[-2]
    w = reshape(kernel, layer.kernel_size + (1, channels * layer.depth_multiplier))
    return R.conv(inputs, w, strides=layer.strides, pads=pads, dilation=layer.dilation_rate, groups=channels)


class _DepthwiseConv(Layer):
    """What ``DepthwiseConv1D`` and ``DepthwiseConv2D`` share; ``rank`` is the number of spatial axes."""

    rank = 2

    _single_input = True

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        _depthwise_options(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate)
        weight_options(self, activation, use_bias, activity_regularizer,
                       depthwise=(depthwise_initializer, depthwise_regularizer, depthwise_constraint),
                       bias=(bias_initializer, bias_regularizer, bias_constraint))

    def build(self, input_shape):
        channels = _known_channels(self, channels_last_shape(self, input_shape))
        self.kernel = _depthwise_kernel(self, channels, "kernel")
        self.bias = option_weight(self, "bias", (channels * self.depth_multiplier,)) if self.use_bias else None

    @property
    def depthwise_kernel(self):
        """The kernel ``(*kernel_size, channels, depth_multiplier)`` (Keras 3 names this weight ``kernel``;
        tf.keras 2 named it ``depthwise_kernel``)."""
        return self.kernel

    def call(self, inputs):
        return channels_last_call(self, inputs, lambda x: _bias_and_activation(
            self, _depthwise(self, x, self.kernel, _checked_pads(self, x, self.kernel.shape[-2]))))

    def get_config(self) -> dict:
        return {**super().get_config(), **_depthwise_config(self), **weight_config(self, "depthwise", "bias")}


class DepthwiseConv1D(_DepthwiseConv):
    """1-D depthwise convolution over ``(batch, steps, channels)``, as ``keras.layers.DepthwiseConv1D``.

        >>> DepthwiseConv1D(3, depth_multiplier=2)(np.ones((2, 10, 4))).shape     # kernel (3, 4, 2)
        (2, 8, 8)

    Arguments as :class:`DepthwiseConv2D` (ints or 1-tuples).
    """

    rank = 1


class DepthwiseConv2D(_DepthwiseConv):
    """2-D depthwise convolution over ``(batch, height, width, channels)``, as ``keras.layers.DepthwiseConv2D``.

        >>> layer = DepthwiseConv2D(3, depth_multiplier=2)
        >>> layer(np.ones((2, 8, 8, 3))).shape
        (2, 6, 6, 6)
        >>> layer.kernel.shape                          # (kh, kw, channels, depth_multiplier), Keras' layout
        (3, 3, 3, 2)

    Each input channel ``c`` is convolved with its own ``depth_multiplier``
    filters and never mixed with the others; output channel ``c·m + j`` is

    ``y[n, i, k, c·m + j] = b[c·m + j] + Σ_{di, dk} x_pad[n, i·sh + di·dh, k·sw + dk·dw, c] · W[di, dk, c, j]``

    On the graph it is one ``conv`` op with ``groups = channels`` (after a
    ``reshape`` of the kernel to the rule's ``(kh, kw, 1, channels·m)``).

    Args:
        kernel_size: an int or ``(kh, kw)``.
        strides: an int or ``(sh, sw)`` (default 1).
        padding: ``"valid"`` (default) or ``"same"`` (TensorFlow's padding).
        depth_multiplier: output channels per input channel (default 1).
        data_format: ``"channels_last"`` (default) or ``"channels_first"`` (``(batch, channels, ...)``, PyTorch's
            layout): the same weights in the same layout, the channel axis moved in and back on the tape.
        dilation_rate: an int or ``(dh, dw)`` (not together with strides > 1, as Keras).
        activation: a name, a callable or None, as for ``Dense``.
        use_bias: add one bias per output channel (``channels · depth_multiplier`` of them).
        depthwise_initializer: default ``"glorot_uniform"``; bias_initializer: default ``"zeros"``.
        depthwise_regularizer, bias_regularizer, activity_regularizer: penalties, as for ``Conv2D``.
        depthwise_constraint, bias_constraint: functions applied after each optimizer step.
    """

    rank = 2


class _SeparableConv(Layer):
    """What ``SeparableConv1D`` and ``SeparableConv2D`` share; ``rank`` is the number of spatial axes."""

    rank = 2

    _single_input = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.filters = positive_int(type(self).__name__, "filters", filters)
        _depthwise_options(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate)
        weight_options(self, activation, use_bias, activity_regularizer,
                       depthwise=(depthwise_initializer, depthwise_regularizer, depthwise_constraint),
                       pointwise=(pointwise_initializer, pointwise_regularizer, pointwise_constraint),
                       bias=(bias_initializer, bias_regularizer, bias_constraint))

    def build(self, input_shape):
        channels = _known_channels(self, channels_last_shape(self, input_shape))
        self.depthwise_kernel = _depthwise_kernel(self, channels, "depthwise_kernel")
        self.pointwise_kernel = option_weight(self, "pointwise",
                                              (1,) * self.rank + (channels * self.depth_multiplier, self.filters),
                                              "pointwise_kernel")
        self.bias = option_weight(self, "bias", (self.filters,)) if self.use_bias else None

    def call(self, inputs):
        return channels_last_call(self, inputs, self._call_channels_last)

    def _call_channels_last(self, inputs):
        pads = _checked_pads(self, inputs, self.depthwise_kernel.shape[-2])
        y = _depthwise(self, inputs, self.depthwise_kernel, pads)
        ones = (1,) * self.rank
        y = R.conv(y, self.pointwise_kernel, strides=ones, pads=((0, 0),) * self.rank, dilation=ones, groups=1)
        return _bias_and_activation(self, y)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters, **_depthwise_config(self),
                **weight_config(self, "depthwise", "pointwise", "bias")}


class SeparableConv1D(_SeparableConv):
    """1-D depthwise separable convolution over ``(batch, steps, channels)``, as ``keras.layers.SeparableConv1D``.

        >>> SeparableConv1D(5, 3)(np.ones((2, 10, 4))).shape     # depthwise (3, 4, 1), pointwise (1, 4, 5)
        (2, 8, 5)

    Arguments as :class:`SeparableConv2D` (ints or 1-tuples).
    """

    rank = 1


class SeparableConv2D(_SeparableConv):
    """2-D depthwise separable convolution, as ``keras.layers.SeparableConv2D``.

        >>> layer = SeparableConv2D(8, 3, depth_multiplier=2)
        >>> layer(np.ones((2, 8, 8, 3))).shape
        (2, 6, 6, 8)
        >>> layer.depthwise_kernel.shape, layer.pointwise_kernel.shape      # Keras' layouts
        ((3, 3, 3, 2), (1, 1, 6, 8))

    A :class:`DepthwiseConv2D` (with this layer's ``kernel_size``, ``strides``,
    ``padding``, ``dilation_rate`` and ``depth_multiplier``, no bias) followed by a
    1×1 :class:`Conv2D` with ``filters`` outputs, then the bias and the
    activation: two ``conv`` ops on the graph. It has far fewer weights than a
    ``Conv2D`` of the same window (``kh·kw·C·m + C·m·filters`` against
    ``kh·kw·C·filters``).

    Args:
        filters: number of output channels.
        kernel_size, strides, padding, dilation_rate, depth_multiplier: of the depthwise step,
            as for :class:`DepthwiseConv2D`.
        data_format: ``"channels_last"`` (default) or ``"channels_first"`` (``(batch, channels, ...)``, PyTorch's
            layout): the same weights in the same layout, the channel axis moved in and back on the tape.
        activation, use_bias: as for ``Conv2D`` (one bias per filter).
        depthwise_initializer, pointwise_initializer: default ``"glorot_uniform"``;
            bias_initializer: default ``"zeros"``.
        depthwise_regularizer, pointwise_regularizer, bias_regularizer, activity_regularizer: penalties.
        depthwise_constraint, pointwise_constraint, bias_constraint: functions applied after each optimizer step.
    """

    rank = 2


SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D
