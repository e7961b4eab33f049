"""Activation functions by Keras name: ``Dense(10, activation="relu")``.

Each is one differentiable op of the package (``adv.nn.relu`` ...), so a
graph shows ``relu`` as one node with its own chain-rule factor.
"""
from __future__ import annotations

from .. import nn, ops


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


ALIASES = {f.__name__: f for f in (linear, relu, tanh, sigmoid, softmax, softplus, leaky_relu)}


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
