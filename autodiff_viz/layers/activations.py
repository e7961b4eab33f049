"""Activation functions by Keras name: ``Dense(10, activation="relu")``.

Each is a function of ``adv.nn`` with Keras 3's formula and defaults
(``hard_sigmoid`` is ``relu6(x + 3)/6``, ``gelu`` is exact, ``swish`` is
``silu``, ``hard_swish`` is ``hard_silu``). Most are one differentiable op,
so a graph shows ``relu`` as one node with its own chain-rule factor;
``relu6``, ``hard_silu``, ``mish`` and ``exponential`` are short
compositions of recorded ops.
"""
from __future__ import annotations

from ..core import nn, ops


def linear(x):
    """``x`` unchanged (what ``activation=None`` means)."""
    return x


def relu(x):
    return nn.relu(x)


def tanh(x):
    return ops.tanh(x)


def sigmoid(x):
    return nn.sigmoid(x)


def softmax(x, axis=-1):
    return nn.softmax(x, axis=axis)


def softplus(x):
    return nn.softplus(x)


def leaky_relu(x, negative_slope=0.2):
    """Keras 3's ``leaky_relu`` (slope 0.2 for negative inputs)."""
    return nn.leaky_relu(x, alpha=negative_slope)


def gelu(x, approximate=False):
    """Keras 3's ``gelu``: ``x·Φ(x)`` (exact by default)."""
    return nn.gelu(x, approximate=approximate)


def elu(x, alpha=1.0):
    return nn.elu(x, alpha=alpha)


def log_softmax(x, axis=-1):
    return nn.log_softmax(x, axis=axis)


ALIASES = {f.__name__: f for f in (linear, relu, tanh, sigmoid, softmax, softplus, leaky_relu, gelu, elu,
                                   log_softmax)}
ALIASES.update({name: getattr(nn, name) for name in (
    "hard_sigmoid", "silu", "swish", "selu", "softsign", "exponential", "relu6", "mish", "hard_silu", "hard_swish",
    "log_sigmoid")})


def get(identifier):
    """An activation from a name, a callable, or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        key = identifier.lower()
        if key not in ALIASES:
            raise ValueError(f"Unknown activation {identifier!r}. Use one of {sorted(ALIASES)} or a callable.")
        return ALIASES[key]
    if callable(identifier):
        return identifier
    raise TypeError(f"An activation must be a name (e.g. 'relu'), a callable or None, "
                    f"got {type(identifier).__name__}.")
