"""Taking a model on to PyTorch: :func:`to_module` and :func:`load_from`.

``to_module(model)`` builds a ``torch.nn.Module`` that computes what an
autodiff_viz ``Sequential`` (or a functional ``Model`` whose layers form a
chain) computes, with the same weights copied in PyTorch's layouts; the
outputs agree to float64 rtol 1e-9 (float32 1e-5). ``load_from(model,
module)`` copies trained weights back. Each layer is converted by one entry
of :data:`CONVERTERS`; a layer without a PyTorch counterpart gets a clear
error naming it.

Weight layouts (Keras → PyTorch):

* Dense: ``kernel (in, out)`` → ``Linear.weight (out, in)`` (transposed).
* Conv1D/2D: ``kernel (k..., in/groups, out)`` → ``weight (out, in/groups, k...)``;
  channels-last inputs are moved to channels-first around the convolution.
* BatchNormalization: gamma/beta/moving mean/variance → weight/bias/running
  stats; Keras' momentum m is PyTorch's ``1 − m``.
* Embedding: ``embeddings`` → ``weight`` (same layout).
* RMSNormalization: ``scale`` → the weight of ``F.rms_norm`` (same layout).
* SimpleRNN / LSTM / GRU: kernels transposed, gates reordered (Keras i,f,c,o →
  PyTorch i,f,g,o is the same order; GRU z,r,h → PyTorch r,z,n), biases
  split as PyTorch keeps two.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from ..base.structure import flatten
from ..layers.base import Layer
from ..layers.conv import transpose_pads

if TYPE_CHECKING:
    from ..layers.base import Layer


class ExportError(TypeError):
    """A model or layer that has no PyTorch counterpart here; the message names it and says why."""


def _t(a, dtype):
    return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype)


def _dtype(layer):
    return torch.float64 if layer.dtype == "float64" else torch.float32


class _Act(nn.Module):
    """A Keras activation by name, as a module."""

    FUNCS = {"linear": lambda x: x, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
             "softmax": lambda x: torch.softmax(x, dim=-1), "softplus": nn.functional.softplus,
             "leaky_relu": lambda x: nn.functional.leaky_relu(x, 0.2), "gelu": nn.functional.gelu,
             "silu": nn.functional.silu, "swish": nn.functional.silu, "elu": nn.functional.elu,
             "selu": nn.functional.selu, "log_softmax": lambda x: torch.log_softmax(x, dim=-1)}

    def __init__(self, fn, where):
        super().__init__()
        name = getattr(fn, "__name__", "")
        if name not in self.FUNCS:
            raise ExportError(f"{where}: the activation {name or fn!r} has no PyTorch counterpart here; "
                              f"use one of {sorted(self.FUNCS)}.")
        self.name = name
        self.fn = self.FUNCS[name]

    def forward(self, x):
        return self.fn(x)

    def extra_repr(self):
        return self.name


class _Dense(nn.Module):
    def __init__(self, layer):
        super().__init__()
        k = layer.kernel.numpy()
        self.linear = nn.Linear(k.shape[0], k.shape[1], bias=layer.use_bias, dtype=_dtype(layer))
        self.act = _Act(layer.activation, layer.name)
        self.copy_from(layer)

    def copy_from(self, layer):
        with torch.no_grad():
            self.linear.weight.copy_(_t(layer.kernel.numpy().T, self.linear.weight.dtype))
            if layer.use_bias:
                self.linear.bias.copy_(_t(layer.bias.numpy(), self.linear.bias.dtype))

    def copy_to(self, layer):
        layer.kernel.assign(self.linear.weight.detach().cpu().numpy().T)
        if layer.use_bias:
            layer.bias.assign(self.linear.bias.detach().cpu().numpy())

    def forward(self, x):
        return self.act(self.linear(x))


class _Stateless(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def copy_from(self, layer):
        pass

    def copy_to(self, layer):
        pass

    def forward(self, x):
        return self.fn(x)


def _flatten(layer):
    return _Stateless(lambda x: x.reshape(x.shape[0], -1))


def _reshape(layer):
    shape = tuple(layer.target_shape)
    return _Stateless(lambda x: x.reshape((x.shape[0],) + shape))


def _activation(layer):
    act = _Act(layer.activation, layer.name)
    return _Stateless(act.forward)


def _leaky_relu(layer):
    return _Stateless(nn.LeakyReLU(float(layer.negative_slope)))


def _relu(layer):
    """Keras' ReLU: ``max(x, 0)`` above ``threshold``, capped at ``max_value``, ``negative_slope·(x − threshold)``
    below."""
    cap, slope, threshold = layer.max_value, float(layer.negative_slope), float(layer.threshold)

    def f(x):
        out = torch.where(x > threshold, x, torch.zeros_like(x)) if threshold else torch.relu(x)
        if cap is not None:
            out = out.clamp(0.0, float(cap))
        return out - slope * torch.relu(threshold - x) if slope else out
    return _Stateless(f)


def _softmax(layer):
    dims = layer.axis if isinstance(layer.axis, list) else [layer.axis]
    if len(dims) != 1:
        raise ExportError(f"to_module: {layer.name} (Softmax over axes {dims}): only a softmax over one axis exports.")
    return _Stateless(nn.Softmax(dim=dims[0]))


def _elu(layer):
    return _Stateless(nn.ELU(float(layer.alpha)))


class _PReLU(nn.Module):
    """Keras' PReLU, ``relu(x) − α·relu(−x)`` with ``α`` of shape ``input_shape[1:]`` (1 on shared axes),
    which broadcasts the same way in PyTorch (``nn.PReLU`` has one α per channel on axis 1 instead)."""

    def __init__(self, layer):
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(tuple(layer.alpha.shape), dtype=_dtype(layer)))
        self.copy_from(layer)

    def copy_from(self, layer):
        with torch.no_grad():
            self.alpha.copy_(_t(layer.alpha.numpy(), self.alpha.dtype))

    def copy_to(self, layer):
        layer.alpha.assign(self.alpha.detach().cpu().numpy())

    def forward(self, x):
        return torch.relu(x) - self.alpha * torch.relu(-x)


def _upsampling(layer):
    """Nearest: each entry repeated along the spatial axes (``repeat_interleave``); bilinear: ``nn.Upsample``
    with half-pixel centres (``align_corners=False``), which is Keras' resize for upsampling."""
    sizes = (layer.size,) if isinstance(layer.size, int) else tuple(layer.size)
    if getattr(layer, "interpolation", "nearest") == "bilinear":
        up = nn.Upsample(scale_factor=sizes, mode="bilinear", align_corners=False)
        return _Stateless(lambda x: torch.movedim(up(torch.movedim(x, -1, 1)), 1, -1))

    def f(x):
        for axis, size in enumerate(sizes, start=1):
            x = x.repeat_interleave(size, dim=axis)
        return x
    return _Stateless(f)


def _pairs_per_axis(value) -> tuple:
    """A 1-D layer's ``(before, after)`` or a 2-D layer's ``((top, bottom), (left, right))`` as one pair per axis."""
    return (tuple(value),) if isinstance(value[0], int) else tuple(map(tuple, value))


def _zero_padding(layer):
    pads = _pairs_per_axis(layer.padding)
    flat = [0, 0] + [p for before_after in reversed(pads) for p in before_after]   # F.pad: last axis first
    return _Stateless(lambda x: nn.functional.pad(x, flat))


def _cropping(layer):
    crops = _pairs_per_axis(layer.cropping)

    def f(x):
        index = (slice(None),) + tuple(slice(a, x.shape[i + 1] - b) for i, (a, b) in enumerate(crops))
        return x[index]
    return _Stateless(f)


def _dropout(layer):
    if type(layer).__name__ != "Dropout" or layer.noise_shape is not None:
        raise ExportError(f"to_module: {layer.name} ({type(layer).__name__}) has no PyTorch counterpart here "
                          "(only Dropout without noise_shape).")
    return _Stateless(nn.Dropout(float(layer.rate)))


def _global_pool(reduce):
    def make(layer):
        axes = tuple(range(1, 1 + layer.rank)) if hasattr(layer, "rank") else None

        def f(x):
            dims = axes or tuple(range(1, x.ndim - 1))
            out = x.mean(dim=dims, keepdim=layer.keepdims) if reduce == "mean" else \
                x.amax(dim=dims, keepdim=layer.keepdims)
            return out
        return _Stateless(f)
    return make


def _pads(layer, x, ksize, strides, dilation):
    from ..layers.conv import window_pads
    pads = window_pads(tuple(x.shape[1:-1]), ksize, strides, dilation, layer.padding)
    flat = []
    for lo, hi in reversed(pads):          # F.pad lists the last axis first
        flat += [int(lo), int(hi)]
    return flat


class _Conv(nn.Module):
    """Keras' channels-last convolution on PyTorch's channels-first ``F.conv1d/2d`` (padding done by ``F.pad``)."""

    def __init__(self, layer):
        super().__init__()
        self.layer_name, self.rank = layer.name, layer.rank
        self.kernel_size, self.strides = tuple(layer.kernel_size), tuple(layer.strides)
        self.dilation, self.padding = tuple(layer.dilation_rate), layer.padding
        self.groups = int(getattr(layer, "groups", 1))          # a transposed convolution has none
        k = layer.kernel.numpy()
        dtype = _dtype(layer)
        self.weight = nn.Parameter(torch.empty(k.shape[-1], k.shape[-2], *k.shape[:-2], dtype=dtype))
        self.bias = nn.Parameter(torch.empty(int(layer.filters), dtype=dtype)) if layer.use_bias else None
        self.act = _Act(layer.activation, layer.name)
        self.copy_from(layer)

    def _perm(self):
        r = self.rank
        return (r + 1, r) + tuple(range(r))        # (k..., in, out) -> (out, in, k...)

    def copy_from(self, layer):
        with torch.no_grad():
            self.weight.copy_(_t(np.transpose(layer.kernel.numpy(), self._perm()), self.weight.dtype))
            if self.bias is not None:
                self.bias.copy_(_t(layer.bias.numpy(), self.bias.dtype))

    def copy_to(self, layer):
        inverse = np.argsort(self._perm())
        layer.kernel.assign(np.transpose(self.weight.detach().cpu().numpy(), inverse))
        if self.bias is not None:
            layer.bias.assign(self.bias.detach().cpu().numpy())

    def forward(self, x):
        pad = _pads(self, x, self.kernel_size, self.strides, self.dilation)
        x = torch.movedim(x, -1, 1)
        if any(pad):
            x = nn.functional.pad(x, pad)
        conv = nn.functional.conv1d if self.rank == 1 else nn.functional.conv2d
        y = conv(x, self.weight, self.bias, self.strides, 0, self.dilation, self.groups)
        return self.act(torch.movedim(y, 1, -1))


class _ConvTranspose(_Conv):
    """Keras' ``Conv1DTranspose``/``Conv2DTranspose`` on ``F.conv_transpose1d/2d``.

    Keras' kernel ``(k..., filters, in)`` takes the same permutation as a
    convolution's to PyTorch's ``(in, filters, k...)``. PyTorch's ``padding``
    and ``output_padding`` cannot express Keras' ``'same'`` placement, so the
    full transposed convolution is cut (or padded after with zeros) to Keras'
    window, as Keras' own PyTorch backend does; the bias is added after.
    """

    def __init__(self, layer):
        self.output_padding = layer.output_padding or (None,) * layer.rank
        super().__init__(layer)

    def forward(self, x):
        outs, pads = transpose_pads(tuple(x.shape[1:-1]), self.kernel_size, self.strides, self.dilation,
                                    self.padding, self.output_padding)
        f = nn.functional.conv_transpose1d if self.rank == 1 else nn.functional.conv_transpose2d
        y = f(torch.movedim(x, -1, 1), self.weight, None, self.strides, 0, 0, 1, self.dilation)
        for axis, (out, (lo, _)) in enumerate(zip(outs, pads)):
            dim = 2 + axis
            y = y.narrow(dim, lo, min(out, y.shape[dim] - lo))
            if y.shape[dim] < out:
                pad = [0, 0] * (y.ndim - 1 - dim) + [0, out - y.shape[dim]]
                y = nn.functional.pad(y, pad)
        if self.bias is not None:
            y = y + self.bias.view((1, -1) + (1,) * self.rank)
        return self.act(torch.movedim(y, 1, -1))


class _Pool(_Stateless):
    """Max or average pooling; Keras' ``same`` padding is reproduced for max (padding with −∞)."""

    def __init__(self, layer, kind):
        if kind == "avg" and layer.padding != "valid":
            raise ExportError(f"to_module: {layer.name}: AveragePooling with padding='same' divides by the number "
                              "of real entries in each window, which PyTorch's avg_pool does not do; use "
                              "padding='valid' to export.")
        self.kind, self.rank = kind, layer.rank
        self.pool, self.strides, self.padding = tuple(layer.pool_size), tuple(layer.strides), layer.padding
        super().__init__(self._forward)

    def _forward(self, x):
        pad = _pads(self, x, self.pool, self.strides, (1,) * self.rank)
        x = torch.movedim(x, -1, 1)
        if any(pad):
            x = nn.functional.pad(x, pad, value=float("-inf"))
        f = {("max", 1): nn.functional.max_pool1d, ("max", 2): nn.functional.max_pool2d,
             ("avg", 1): nn.functional.avg_pool1d, ("avg", 2): nn.functional.avg_pool2d}[(self.kind, self.rank)]
        return torch.movedim(f(x, self.pool, self.strides), 1, -1)


class _BatchNorm(nn.Module):
    """Keras BatchNormalization (any feature axis) as ``F.batch_norm``; PyTorch's momentum is ``1 − m``.

    In training mode PyTorch updates the running variance with the unbiased batch variance, Keras with the
    biased one: the outputs agree, the moving variances differ by a factor n/(n−1) per update.
    """

    def __init__(self, layer):
        super().__init__()
        if list(layer._param_axes) != [layer._ndim - 1]:
            raise ExportError(f"to_module: {layer.name}: only BatchNormalization over the last axis exports.")
        shape = layer.moving_mean.shape
        dtype = _dtype(layer)
        self.eps, self.momentum = float(layer.epsilon), 1.0 - float(layer.momentum)
        self.weight = nn.Parameter(torch.ones(shape, dtype=dtype)) if layer.scale else None
        self.bias = nn.Parameter(torch.zeros(shape, dtype=dtype)) if layer.center else None
        self.register_buffer("running_mean", torch.zeros(shape, dtype=dtype))
        self.register_buffer("running_var", torch.ones(shape, dtype=dtype))
        self.copy_from(layer)

    def copy_from(self, layer):
        with torch.no_grad():
            if self.weight is not None:
                self.weight.copy_(_t(layer.gamma.numpy(), self.weight.dtype))
            if self.bias is not None:
                self.bias.copy_(_t(layer.beta.numpy(), self.bias.dtype))
            self.running_mean.copy_(_t(layer.moving_mean.numpy(), self.running_mean.dtype))
            self.running_var.copy_(_t(layer.moving_variance.numpy(), self.running_var.dtype))

    def copy_to(self, layer):
        if self.weight is not None:
            layer.gamma.assign(self.weight.detach().cpu().numpy())
        if self.bias is not None:
            layer.beta.assign(self.bias.detach().cpu().numpy())
        layer.moving_mean.assign(self.running_mean.cpu().numpy())
        layer.moving_variance.assign(self.running_var.cpu().numpy())

    def forward(self, x):
        y = nn.functional.batch_norm(torch.movedim(x, -1, 1), self.running_mean, self.running_var, self.weight,
                                     self.bias, self.training, self.momentum, self.eps)
        return torch.movedim(y, 1, -1)


def _trailing_axes(layer, kind: str) -> None:
    """Refuse a normalization over axes that are not the last ones (PyTorch's ``layer_norm`` and ``rms_norm``
    take the trailing ``normalized_shape`` only)."""
    axes = sorted(a % layer._ndim for a in layer._param_axes)
    if axes != list(range(layer._ndim - len(axes), layer._ndim)):
        raise ExportError(f"to_module: {layer.name}: only {kind} over trailing axes exports (PyTorch normalizes "
                          f"the last axes); this one normalizes axes {axes} of {layer._ndim}.")


class _LayerNorm(nn.Module):
    def __init__(self, layer):
        super().__init__()
        if layer.rms_scaling:
            raise ExportError(f"to_module: {layer.name}: LayerNormalization(rms_scaling=True) has no PyTorch twin "
                              "(it divides by √(variance + ε) without centring). Use adv.layers.RMSNormalization, "
                              "which exports as torch.nn.functional.rms_norm, or rms_scaling=False.")
        _trailing_axes(layer, "LayerNormalization")
        self.shape = tuple(layer.gamma.shape if layer.scale else layer.beta.shape)
        dtype = _dtype(layer)
        self.eps = float(layer.epsilon)
        self.weight = nn.Parameter(torch.ones(self.shape, dtype=dtype)) if layer.scale else None
        self.bias = nn.Parameter(torch.zeros(self.shape, dtype=dtype)) if layer.center else None
        self.copy_from(layer)

    def copy_from(self, layer):
        with torch.no_grad():
            if self.weight is not None:
                self.weight.copy_(_t(layer.gamma.numpy().reshape(self.shape), self.weight.dtype))
            if self.bias is not None:
                self.bias.copy_(_t(layer.beta.numpy().reshape(self.shape), self.bias.dtype))

    def copy_to(self, layer):
        if self.weight is not None:
            layer.gamma.assign(self.weight.detach().cpu().numpy().reshape(layer.gamma.shape))
        if self.bias is not None:
            layer.beta.assign(self.bias.detach().cpu().numpy().reshape(layer.beta.shape))

    def forward(self, x):
        return nn.functional.layer_norm(x, self.shape, self.weight, self.bias, self.eps)


class _RMSNorm(nn.Module):
    """Keras' RMSNormalization as ``F.rms_norm``: ``x / √(mean(x²) + ε) · scale`` over the trailing axes."""

    def __init__(self, layer):
        super().__init__()
        _trailing_axes(layer, "RMSNormalization")
        self.shape = tuple(layer.scale.shape)
        self.eps = float(layer.epsilon)
        self.weight = nn.Parameter(torch.ones(self.shape, dtype=_dtype(layer)))
        self.copy_from(layer)

    def copy_from(self, layer):
        with torch.no_grad():
            self.weight.copy_(_t(layer.scale.numpy().reshape(self.shape), self.weight.dtype))

    def copy_to(self, layer):
        layer.scale.assign(self.weight.detach().cpu().numpy().reshape(layer.scale.shape))

    def forward(self, x):
        return nn.functional.rms_norm(x, self.shape, self.weight, self.eps)


class _Embedding(nn.Module):
    def __init__(self, layer):
        super().__init__()
        e = layer.embeddings.numpy()
        self.embedding = nn.Embedding(e.shape[0], e.shape[1], dtype=_dtype(layer))
        self.copy_from(layer)

    def copy_from(self, layer):
        with torch.no_grad():
            self.embedding.weight.copy_(_t(layer.embeddings.numpy(), self.embedding.weight.dtype))

    def copy_to(self, layer):
        layer.embeddings.assign(self.embedding.weight.detach().cpu().numpy())

    def forward(self, x):
        return self.embedding(x.long())


class _Recurrent(nn.Module):
    """SimpleRNN / LSTM / GRU as ``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` (batch first).

    Keras keeps one kernel ``(in, gates·u)``; PyTorch ``weight_ih (gates·u, in)``: transposed. LSTM gates are in
    the same order (i, f, c/g, o); GRU's are z, r, h in Keras and r, z, n in PyTorch, so the blocks are swapped.
    PyTorch adds two biases; Keras' one bias goes to ``bias_ih`` (``bias_hh`` = 0), and GRU's
    ``reset_after`` bias rows map to ``bias_ih`` and ``bias_hh``.
    """

    KINDS = {"SimpleRNN": (nn.RNN, 1), "LSTM": (nn.LSTM, 4), "GRU": (nn.GRU, 3)}

    def __init__(self, layer):
        super().__init__()
        kind = type(layer).__name__
        cell = layer.cell
        self.kind, self.return_sequences = kind, bool(layer.return_sequences)
        names = getattr(cell.activation, "__name__", ""), getattr(getattr(cell, "recurrent_activation", None),
                                                                   "__name__", "sigmoid")
        problems = []
        if names[0] != "tanh" or names[1] != "sigmoid":
            problems.append("activation must be 'tanh' (and recurrent_activation 'sigmoid')")
        if layer.return_state or layer.go_backwards:
            problems.append("return_state and go_backwards do not export")
        if kind == "GRU" and not cell.reset_after:
            problems.append("GRU(reset_after=False) has no PyTorch counterpart")
        if not cell.use_bias:
            problems.append("use_bias=False does not export")
        if problems:
            raise ExportError(f"to_module: {layer.name} ({kind}): " + "; ".join(problems) + ".")
        module, self.gates = self.KINDS[kind]
        k = cell.kernel.numpy()
        self.rnn = module(k.shape[0], cell.units, batch_first=True, dtype=_dtype(layer))
        self.copy_from(layer)

    def _order(self, a, axis):
        if self.kind != "GRU":
            return a
        z, r, h = np.split(a, 3, axis=axis)
        return np.concatenate([r, z, h], axis=axis)

    def copy_from(self, layer):
        cell, r = layer.cell, self.rnn
        bias = cell.bias.numpy()
        b_ih, b_hh = (bias[0], bias[1]) if bias.ndim == 2 else (bias, np.zeros_like(bias))
        with torch.no_grad():
            r.weight_ih_l0.copy_(_t(self._order(cell.kernel.numpy(), 1).T, r.weight_ih_l0.dtype))
            r.weight_hh_l0.copy_(_t(self._order(cell.recurrent_kernel.numpy(), 1).T, r.weight_hh_l0.dtype))
            r.bias_ih_l0.copy_(_t(self._order(b_ih, 0), r.bias_ih_l0.dtype))
            r.bias_hh_l0.copy_(_t(self._order(b_hh, 0), r.bias_hh_l0.dtype))

    def copy_to(self, layer):
        cell, r = layer.cell, self.rnn
        back = (lambda a, axis: a) if self.kind != "GRU" else self._order     # the swap is its own inverse
        cell.kernel.assign(back(r.weight_ih_l0.detach().cpu().numpy().T, 1))
        cell.recurrent_kernel.assign(back(r.weight_hh_l0.detach().cpu().numpy().T, 1))
        b_ih = back(r.bias_ih_l0.detach().cpu().numpy(), 0)
        b_hh = back(r.bias_hh_l0.detach().cpu().numpy(), 0)
        cell.bias.assign(np.stack([b_ih, b_hh]) if cell.bias.ndim == 2 else b_ih + b_hh)

    def forward(self, x):
        out, _ = self.rnn(x)
        return out if self.return_sequences else out[:, -1]


class _Merge(_Stateless):
    FUNCS = {"Add": lambda xs: _fold(torch.add, xs), "Subtract": lambda xs: xs[0] - xs[1],
             "Multiply": lambda xs: _fold(torch.mul, xs), "Average": lambda xs: _fold(torch.add, xs) / len(xs),
             "Maximum": lambda xs: _fold(torch.maximum, xs), "Minimum": lambda xs: _fold(torch.minimum, xs)}

    def __init__(self, layer):
        kind = type(layer).__name__
        if kind == "Concatenate":
            axis = int(layer.axis)
            super().__init__(lambda xs: torch.cat(list(xs), dim=axis))
        else:
            super().__init__(self.FUNCS[kind])


def _fold(f, xs):
    out = xs[0]
    for x in xs[1:]:
        out = f(out, x)
    return out


CONVERTERS = {
    "Dense": _Dense, "Flatten": _flatten, "Reshape": _reshape, "Activation": _activation, "Dropout": _dropout,
    "Conv1D": _Conv, "Conv2D": _Conv, "MaxPooling1D": lambda l: _Pool(l, "max"),
    "MaxPooling2D": lambda l: _Pool(l, "max"), "AveragePooling1D": lambda l: _Pool(l, "avg"),
    "AveragePooling2D": lambda l: _Pool(l, "avg"), "GlobalAveragePooling1D": _global_pool("mean"),
    "GlobalAveragePooling2D": _global_pool("mean"), "GlobalMaxPooling1D": _global_pool("max"),
    "GlobalMaxPooling2D": _global_pool("max"), "BatchNormalization": _BatchNorm,
    "LayerNormalization": _LayerNorm, "RMSNormalization": _RMSNorm, "Embedding": _Embedding,
    "SimpleRNN": _Recurrent, "LSTM": _Recurrent, "GRU": _Recurrent, "Add": _Merge, "Subtract": _Merge,
    "Multiply": _Merge, "Average": _Merge, "Maximum": _Merge, "Minimum": _Merge, "Concatenate": _Merge,
    "LeakyReLU": _leaky_relu, "ReLU": _relu,
    "Softmax": _softmax, "ELU": _elu, "PReLU": _PReLU, "Conv1DTranspose": _ConvTranspose,
    "Conv2DTranspose": _ConvTranspose, "UpSampling1D": _upsampling, "UpSampling2D": _upsampling,
    "ZeroPadding1D": _zero_padding, "ZeroPadding2D": _zero_padding, "Cropping1D": _cropping,
    "Cropping2D": _cropping,
}
"""Layer class name → a function of the layer returning a module with ``copy_from`` / ``copy_to``."""


class _Ref:
    """A slot of the values a functional graph computes (an input, or a layer call's output)."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot


class Exported(nn.Module):
    """The PyTorch twin of an autodiff_viz model: one submodule per layer (``parts``, keyed by layer name) and the
    order to call them in — a chain for ``Sequential``, the recorded graph of layer calls for a functional model
    (skip connections, merges, shared layers and nested models included).

    Called with one tensor, or a list of tensors for a model with several inputs; returns what the model returns.
    """

    def __init__(self, model, parts, steps, n_inputs, outputs, rebuild):
        super().__init__()
        self.source_name = model.name
        self.layer_names = [layer.name for layer, _ in parts]
        self.parts = nn.ModuleDict({layer.name: m for layer, m in parts})
        self._steps, self._n_inputs, self._outputs, self._rebuild = steps, n_inputs, outputs, rebuild

    def forward(self, *inputs):
        if len(inputs) == 1 and self._n_inputs > 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        if len(inputs) != self._n_inputs:
            raise ValueError(f"{self.source_name} takes {self._n_inputs} input(s), got {len(inputs)}.")
        slots = dict(enumerate(inputs))
        for name, leaves, rebuild, outs in self._steps:
            args, kwargs = rebuild([slots[x.slot] if isinstance(x, _Ref) else x for x in leaves])
            kwargs.pop("training", None)
            y = self.parts[name](*args, **kwargs)
            for slot, v in zip(outs, flatten(y)[0]):
                slots[slot] = v
        return self._rebuild([slots[i] for i in self._outputs])

    def copy_to(self, model):
        load_from(model, self)


def _layers(model):
    from ..layers.input_layer import InputLayer
    from ..models import Functional, Sequential
    if isinstance(model, Sequential):
        return list(model._layers)
    if isinstance(model, Functional):
        return [layer for layer in model._functional_layers if not isinstance(layer, InputLayer)]
    raise ExportError(f"to_module: {model.name} ({type(model).__name__}) is a subclassed model: its call() is "
                      "Python code that cannot be converted. Export works for Sequential and functional models "
                      "(adv.Model(inputs, outputs)).")


def _plan(model):
    """``(steps, n_inputs, output slots, rebuild)`` of a Sequential or functional model."""
    from ..layers.keras_tensor import KerasTensor
    from ..models import Sequential
    if isinstance(model, Sequential):
        steps = [(layer.name, [_Ref(k)], lambda v: ((v[0],), {}), [k + 1]) for k, layer in enumerate(model._layers)]
        return steps, 1, [len(steps)], lambda v: v[0]
    slot_of = {id(t): k for k, t in enumerate(model._inputs_flat)}
    steps = []
    for node in model._nodes:
        leaves, rebuild = flatten([list(node.args), node.kwargs])
        refs = [_Ref(slot_of[id(a)]) if isinstance(a, KerasTensor) else a for a in leaves]
        outs = []
        for t in node.flat_outputs:
            slot_of[id(t)] = len(slot_of)
            outs.append(slot_of[id(t)])
        steps.append((node.layer.name, refs, (lambda rb: lambda v: tuple(rb(v)))(rebuild), outs))
    _, rebuild = flatten(model._output_struct)
    return steps, len(model._inputs_flat), [slot_of[id(t)] for t in model._outputs_flat], rebuild


def to_module(model: Layer) -> nn.Module:
    """A ``torch.nn.Module`` computing what ``model`` computes, with the same weights (copied).

    Works for ``Sequential`` and functional models (also nested ones) made of the layers in
    :data:`CONVERTERS`; the module is in training mode as any new module: call ``.eval()`` to use the
    moving statistics of BatchNormalization and to turn Dropout off, as ``model.predict`` does.

        >>> module = adv.torch.to_module(model).eval()
        >>> module(torch.as_tensor(x)).detach().numpy()   # == model.predict(x)
    """
    from ..models import Model
    if not isinstance(model, Layer):
        raise TypeError(f"to_module: expected an autodiff_viz model, got {type(model).__name__}.")
    parts = []
    for layer in _layers(model):
        if not layer.built:
            raise ExportError(f"to_module: layer {layer.name} is not built yet; call the model on a batch first.")
        if isinstance(layer, Model):
            parts.append((layer, to_module(layer)))
            continue
        convert = CONVERTERS.get(type(layer).__name__)
        if convert is None:
            raise ExportError(f"to_module: layer {layer.name} ({type(layer).__name__}) has no PyTorch counterpart "
                              f"here; the layers that export are {sorted(CONVERTERS)}.")
        parts.append((layer, convert(layer)))
    return Exported(model, parts, *_plan(model))


def load_from(model: Layer, module: nn.Module) -> None:
    """Copy the weights of ``module`` (made by :func:`to_module` from this model) back into ``model``.

    The layer names must match; on a mismatch nothing is copied.
    """
    if not isinstance(module, Exported):
        raise TypeError("load_from: the module must come from adv.torch.to_module(model).")
    layers = _layers(model)
    if [layer.name for layer in layers] != module.layer_names:
        raise ValueError(f"load_from: the module was exported from layers {module.layer_names}, but {model.name} "
                         f"has {[layer.name for layer in layers]}; nothing was copied.")
    for layer in layers:
        module.parts[layer.name].copy_to(layer)
