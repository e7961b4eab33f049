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
* SimpleRNN / LSTM / GRU: kernels transposed, gates reordered (Keras i,f,c,o →
  PyTorch i,f,g,o is the same order; GRU z,r,h → PyTorch r,z,n), biases
  split as PyTorch keeps two.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

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


def _activation(layer):
    act = _Act(layer.activation, layer.name)
    return _Stateless(act.forward)


def _dropout(layer):
    return _Stateless(nn.Dropout(float(layer.rate)))


CONVERTERS = {"Dense": _Dense, "Flatten": _flatten, "Activation": _activation, "Dropout": _dropout}
"""Layer class name → a function of the layer returning a module with ``copy_from`` / ``copy_to``."""


class Exported(nn.Module):
    """The PyTorch twin of an autodiff_viz model: its layers in order, ``nn.ModuleDict`` keyed by layer name."""

    def __init__(self, model, parts):
        super().__init__()
        self.source_name = model.name
        self.layer_names = [layer.name for layer, _ in parts]
        self.parts = nn.ModuleDict({layer.name: m for layer, m in parts})

    def forward(self, x):
        for name in self.layer_names:
            x = self.parts[name](x)
        return x


def _chain(model):
    from ..models import Sequential
    if isinstance(model, Sequential):
        return list(model._layers)
    layers = getattr(model, "_chain_layers", None)
    if callable(layers):
        return layers()
    raise ExportError(f"to_module: {model.name} ({type(model).__name__}) is not a Sequential model; export "
                      "works for Sequential models (and functional models whose layers form one chain).")


def to_module(model) -> nn.Module:
    """A ``torch.nn.Module`` computing what ``model`` computes, with the same weights (copied).

        >>> module = adv.torch.to_module(model)
        >>> module(torch.as_tensor(x)).detach().numpy()   # == model.predict(x)
    """
    if not isinstance(model, Layer):
        raise TypeError(f"to_module: expected an autodiff_viz model, got {type(model).__name__}.")
    parts = []
    for layer in _chain(model):
        convert = CONVERTERS.get(type(layer).__name__)
        if convert is None:
            raise ExportError(f"to_module: layer {layer.name} ({type(layer).__name__}) has no PyTorch counterpart "
                              f"here; the layers that export are {sorted(CONVERTERS)}.")
        if not layer.built:
            raise ExportError(f"to_module: layer {layer.name} is not built yet; call the model on a batch first.")
        parts.append((layer, convert(layer)))
    return Exported(model, parts)


def load_from(model, module) -> None:
    """Copy the weights of ``module`` (made by :func:`to_module` from this model) back into ``model``."""
    if not isinstance(module, Exported):
        raise TypeError("load_from: the module must come from adv.torch.to_module(model).")
    layers = _chain(model)
    if [layer.name for layer in layers] != module.layer_names:
        raise ValueError(f"load_from: the module was exported from layers {module.layer_names}, but {model.name} "
                         f"has {[layer.name for layer in layers]}; nothing was copied.")
    for layer in layers:
        module.parts[layer.name].copy_to(layer)
