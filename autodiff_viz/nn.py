"""Neural-network functions: ``adv.nn.relu``, ``adv.nn.softmax`` ...

Each is one rule of the table (so a graph shows ``softmax``, not the six
numpy calls inside it) and is computed in a numerically stable form.
"""
from __future__ import annotations

from . import rules as R
from .engine import apply, call
from .ops import _axes, _tensor, logsumexp  # noqa: F401  (logsumexp is part of adv.nn)


def relu(x):
    """``max(x, 0)``; the gradient at exactly 0 is 0, as in TensorFlow and PyTorch."""
    return apply(R.relu, _tensor(x))


def sigmoid(x):
    """``1 / (1 + e⁻ˣ)``, computed as ``½(1 + tanh(x/2))`` so it never overflows."""
    return apply(R.sigmoid, _tensor(x))


def softplus(x):
    """``ln(1 + eˣ)`` without overflow; its derivative is ``sigmoid(x)``."""
    return apply(R.softplus, _tensor(x))


def leaky_relu(x, alpha=0.2):
    """``x`` for positive entries, ``alpha·x`` otherwise (Keras' default alpha is 0.2)."""
    return call(R.leaky_relu, _tensor(x), alpha=float(alpha))


def softmax(x, axis=-1):
    """``eˣⁱ / Σ eˣʲ`` along ``axis``, shifted by the max so it never overflows."""
    x = _tensor(x)
    return call(R.softmax, x, axis=_axes(axis, x.ndim, "softmax"))


def log_softmax(x, axis=-1):
    """``x − logsumexp(x)`` along ``axis``: the stable way to get log-probabilities."""
    x = _tensor(x)
    return call(R.log_softmax, x, axis=_axes(axis, x.ndim, "log_softmax"))
