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
from ..keras_base.serialization import deserialize_keras_object, serialize_keras_object


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


def name_of(activation) -> str | None:
    """The Keras name of ``activation`` when :func:`get` gives this very function back for it (``relu`` ->
    ``"relu"``), else None (a function of one's own, or ``functools.partial(relu, ...)``)."""
    name = getattr(activation, "__name__", None)
    return name if isinstance(name, str) and ALIASES.get(name.lower()) is activation else None


def serialize(activation):
    """Keras 3's ``keras.activations.serialize``: a built-in activation by its name (``serialize(relu)`` ->
    ``"relu"``); a function of one's own as Keras' ``{"module", "class_name", "config", "registered_name"}``
    entry, which :func:`deserialize` finds again through ``custom_objects`` or registration."""
    if not callable(activation):
        raise TypeError(f"activations.serialize: expected an activation function, got {type(activation).__name__} "
                        f"{activation!r}.")
    return name_of(activation) or serialize_keras_object(activation)


def deserialize(config, custom_objects=None):
    """Keras 3's ``keras.activations.deserialize``: the function :func:`serialize` wrote (a name, looked up in
    ``custom_objects`` first, or an entry dict)."""
    if isinstance(config, str):
        if custom_objects and config in custom_objects:
            return custom_objects[config]
        return get(config)
    if isinstance(config, dict) and config.get("module") == "keras.activations" and isinstance(config.get("config"),
                                                                                               str):
        return get(config["config"])               # Keras' entry for a built-in activation
    if isinstance(config, dict):
        return deserialize_keras_object(config, custom_objects=custom_objects)
    raise TypeError(f"activations.deserialize: expected a name (e.g. 'relu') or a dict from serialize(), got "
                    f"{type(config).__name__}.")
