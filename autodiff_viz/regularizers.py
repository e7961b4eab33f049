"""Weight penalties, as ``keras.regularizers``: ``Dense(10, kernel_regularizer=adv.regularizers.L2(0.01))``.

A regularizer is a callable ``f(weight) -> scalar tensor``. A layer given
one (``kernel_regularizer=``, ``bias_regularizer=``, ...) hands it to
``add_weight(regularizer=...)``; ``layer.losses`` / ``model.losses`` then
hold its value, computed under the name scope ``regularization`` (one folded
box on the graph), and ``fit`` adds ``sum(model.losses)`` to the loss it
differentiates:

    >>> reg = adv.regularizers.L2(0.01)
    >>> float(reg(adv.constant([1.0, -2.0])))   # 0.01 · (1 + 4)
    0.05

``activity_regularizer=`` penalises a layer's *output* the same way (through
``layer.add_loss``).
"""
from __future__ import annotations

from .core import ops

__all__ = ["Regularizer", "L1", "L2", "L1L2", "get", "serialize", "deserialize", "l1", "l2", "l1_l2"]


class Regularizer:
    """Base class: subclass it and define ``__call__(self, x)`` returning a scalar tensor."""

    def __call__(self, x):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(self, x).")

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _factor(value, what, cls) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{cls}: {what} must be a number, got {value!r}.") from None
    if value < 0 or value != value:
        raise ValueError(f"{cls}: {what} must be a non-negative number, got {value}.")
    return value


class L1(Regularizer):
    """``l1 · Σ |x|`` (Keras' default ``l1=0.01``). Its gradient is ``l1 · sign(x)``."""

    def __init__(self, l1=0.01):
        self.l1 = _factor(l1, "l1", "L1")

    def __call__(self, x):
        return self.l1 * ops.sum(ops.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 · Σ x²`` (Keras' default ``l2=0.01``; no ½ in front, as Keras). Its gradient is ``2·l2·x``."""

    def __init__(self, l2=0.01):
        self.l2 = _factor(l2, "l2", "L2")

    def __call__(self, x):
        return self.l2 * ops.sum(ops.square(x))

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    """``l1 · Σ |x| + l2 · Σ x²`` (Keras 3's defaults are ``l1=0.0, l2=0.0``)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor(l1, "l1", "L1L2")
        self.l2 = _factor(l2, "l2", "L1L2")

    def __call__(self, x):
        terms = []
        if self.l1:
            terms.append(self.l1 * ops.sum(ops.abs(x)))
        if self.l2:
            terms.append(self.l2 * ops.sum(ops.square(x)))
        if not terms:
            return ops.sum(x) * 0.0
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


# Keras' lower-case aliases
l1, l2, l1_l2 = L1, L2, L1L2

_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2}


def serialize(regularizer) -> dict:
    """``{"class_name": "L2", "config": {"l2": 0.01}}``."""
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


def deserialize(config):
    name = config.get("class_name", "") if isinstance(config, dict) else ""
    cls = _BY_NAME.get(name.lower())
    if cls is None:
        raise ValueError(f"Unknown regularizer class {name!r}. Use one of 'L1', 'L2', 'L1L2'.")
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """A regularizer from a name (``"l1"``, ``"l2"``, ``"l1_l2"``), a config dict, a callable, or None."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown regularizer {identifier!r}. Use 'l1', 'l2', 'l1_l2', "
                             "an adv.regularizers.L2(0.01)-style object, or a callable f(weight) -> scalar.")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"A regularizer must be a name (e.g. 'l2'), a callable or None, got {type(identifier).__name__}.")
