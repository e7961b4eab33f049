"""Neural-network functions: ``adv.nn.relu``, ``adv.nn.softmax`` ...

Each is one rule of the table (so a graph shows ``softmax``, not the six
numpy calls inside it) and is computed in a numerically stable form.
"""
from __future__ import annotations

from numbers import Real

import numpy as np

from . import ops as _ops
from . import rules as R
from .engine import apply, call
from .ops import _axes, _tensor, cast, logsumexp  # noqa: F401  (logsumexp is part of adv.nn)
from .rules import nn as RN
from .tensor import Tensor


def relu(x):
    """``max(x, 0)``; the gradient at exactly 0 is 0, as in TensorFlow and PyTorch.

    The backward pass selects ḡ where ``x > 0`` and puts exactly 0 elsewhere,
    also where ḡ is NaN or ∞ (PyTorch's and JAX's behaviour; TensorFlow
    multiplies by the mask and gets NaN there).
    """
    return apply(R.relu, _tensor(x))


def sigmoid(x):
    """``1 / (1 + e⁻ˣ)``, computed as ``½(1 + tanh(x/2))`` so it never overflows."""
    return apply(R.sigmoid, _tensor(x))


def softplus(x):
    """``ln(1 + eˣ)`` without overflow; its derivative is ``sigmoid(x)``."""
    return apply(R.softplus, _tensor(x))


def leaky_relu(x, negative_slope=None, *, alpha=None):
    """``x`` for positive entries, ``negative_slope·x`` otherwise, as ``keras.ops.leaky_relu``.

    Args:
        x: a tensor or an array.
        negative_slope: the slope for ``x ≤ 0``; ``None`` means Keras' default, 0.2.
        alpha: the older name of ``negative_slope`` (Keras 2, ``tf.nn.leaky_relu``); give one or the other.
    """
    if negative_slope is not None and alpha is not None:
        raise TypeError(f"leaky_relu: got negative_slope={negative_slope!r} and alpha={alpha!r}, two names for the "
                        "same slope. Pass only negative_slope= (Keras 3's name).")
    slope = 0.2 if negative_slope is None and alpha is None else alpha if negative_slope is None else negative_slope
    if isinstance(slope, bool) or not isinstance(slope, Real):
        raise TypeError(f"leaky_relu: negative_slope must be a number, got {slope!r}. Example: "
                        "adv.nn.leaky_relu(x, negative_slope=0.2).")
    return call(R.leaky_relu, _tensor(x), alpha=float(slope))


def softmax(x, axis=-1):
    """``eˣⁱ / Σ eˣʲ`` along ``axis``, shifted by the max so it never overflows."""
    x = _tensor(x)
    return call(R.softmax, x, axis=_axes(axis, x.ndim, "softmax"))


def log_softmax(x, axis=-1):
    """``x − logsumexp(x)`` along ``axis``: the stable way to get log-probabilities."""
    x = _tensor(x)
    return call(R.log_softmax, x, axis=_axes(axis, x.ndim, "log_softmax"))


def gelu(x, approximate=False):
    """``x·Φ(x)`` with Φ the normal CDF (Keras' default ``approximate=False``); ``approximate=True`` uses
    ``0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))``."""
    return call(R.gelu, _tensor(x), approximate=bool(approximate))


def silu(x):
    """``x·σ(x)`` (Keras ``silu``, also called ``swish``); derivative ``σ(x)(1 + x(1 − σ(x)))``."""
    return apply(R.silu, _tensor(x))


swish = silu


def elu(x, alpha=1.0):
    """``x`` for positive entries, ``α(eˣ − 1)`` otherwise (Keras' default α = 1)."""
    return call(R.elu, _tensor(x), alpha=float(alpha))


def selu(x):
    """``λ·elu(x, α)`` with Keras' constants λ ≈ 1.0507, α ≈ 1.6733 (self-normalizing)."""
    return apply(R.selu, _tensor(x))


def softsign(x):
    """``x / (1 + |x|)``; derivative ``1/(1 + |x|)²``."""
    return apply(R.softsign, _tensor(x))


def hard_sigmoid(x):
    """Keras 3: ``relu6(x + 3) / 6`` = ``clip(x/6 + ½, 0, 1)``; the gradient is 1/6 on (−3, 3), else 0."""
    return apply(R.hard_sigmoid, _tensor(x))


def relu6(x):
    """``min(max(x, 0), 6)``, as ``keras.activations.relu6``: ``relu`` then ``minimum`` on the graph."""
    return _ops.minimum(relu(x), 6.0)


def hard_silu(x):
    """``x·hard_sigmoid(x)`` = ``x·relu6(x + 3)/6`` (Keras ``hard_silu``, also called ``hard_swish``)."""
    x = _tensor(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    """``x·tanh(softplus(x))`` (Keras ``mish``): smooth, unbounded above, slightly negative below 0."""
    x = _tensor(x)
    return x * _ops.tanh(softplus(x))


def exponential(x):
    """``eˣ`` (Keras' activation name for ``exp``)."""
    return _ops.exp(x)


def log_sigmoid(x):
    """``ln σ(x) = −softplus(−x)``, without overflow; derivative ``σ(−x)``."""
    return apply(R.log_sigmoid, _tensor(x))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1):
    """``−Σ labels·log softmax(logits)`` along ``axis``: one loss per row (TensorFlow's op of this name).

    One rule, so the backward graph shows the factor every course derives:
    ``∂loss/∂z = softmax(z) − y`` (times ``Σy``, which is 1 for one-hot or
    soft labels). The labels (one-hot or a distribution per row, the shape
    of the logits) get a gradient too, ``−log softmax(z)``, as in TensorFlow 2.
    """
    logits = _tensor(logits)
    labels = _tensor(labels)
    if labels.shape != logits.shape:
        raise ValueError(f"softmax_cross_entropy_with_logits: labels have shape {labels.shape} and logits "
                         f"{logits.shape}; they must be equal (one row of class probabilities per row of logits). "
                         "For class indices use sparse_softmax_cross_entropy_with_logits.")
    if logits.dtype.kind != "f":
        raise TypeError(f"softmax_cross_entropy_with_logits: logits must be floating, got {logits.dtype}. "
                        "Fix: adv.cast(logits, 'float64').")
    if labels.dtype != logits.dtype:
        labels = cast(labels, logits.dtype)
    return call(RN.softmax_cross_entropy, labels, logits,
                axis=_axes(axis, logits.ndim, "softmax_cross_entropy_with_logits"))


def sparse_softmax_cross_entropy_with_logits(labels, logits):
    """``−log softmax(logits)[label]``: one loss per row, labels are class indices (TensorFlow's op of this name).

    ``labels`` has the shape of ``logits`` without its last (class) axis and
    holds integers in ``[0, classes)``. One rule, whose factor is
    ``∂loss/∂z = softmax(z) − onehot(label)``; the labels get no gradient.
    """
    logits = _tensor(logits)
    if logits.ndim < 1 or logits.dtype.kind != "f":
        raise TypeError(f"sparse_softmax_cross_entropy_with_logits: logits must be floating with a class axis, "
                        f"got {logits.dtype} of shape {logits.shape}.")
    labels = _class_labels(labels, logits.shape, "sparse_softmax_cross_entropy_with_logits")
    return apply(RN.sparse_softmax_cross_entropy, Tensor._wrap(labels), logits)


def _numbers(value, what: str, dtype=None) -> np.ndarray:
    """``value`` as a numeric numpy array, or a ``TypeError``/``ValueError`` that names ``what`` and the fix."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        ragged = "inhomogeneous" in str(exc)
        raise (ValueError if ragged else TypeError)(
            f"{what} must be numbers in a rectangular array (a numpy array, a tensor or nested lists of "
            f"equal length), got {type(value).__name__} {value!r:.60}"
            + (": its rows have different lengths." if ragged else f" ({str(exc).rstrip('.')}).")) from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numbers (bool, integer or float), got {arr.dtype} from "
                        f"{type(value).__name__} {value!r:.60}.")
    return arr


def _class_labels(y_true, pred_shape: tuple, what: str, axis: int = -1) -> np.ndarray:
    """Class indices of shape ``pred_shape[:-1]`` (a trailing axis of 1 is dropped), or an error naming ``what``.

    Whole floats are accepted (Keras casts them); anything outside
    ``[0, classes)`` is refused before any op runs.
    """
    labels = y_true._value if isinstance(y_true, Tensor) else y_true
    if type(labels) is not np.ndarray or labels.dtype.kind not in "iu":     # integer arrays need no conversion
        labels = _numbers(labels, f"{what}: labels")
    if labels.ndim == len(pred_shape) and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if labels.shape != pred_shape[:-1]:
        raise ValueError(f"{what}: labels of shape {labels.shape} do not match "
                         f"predictions of shape {pred_shape}; expected labels of shape {pred_shape[:-1]} "
                         "(one class index per sample). For one-hot labels use categorical_crossentropy.")
    if labels.dtype.kind == "f":
        if not np.all(labels == np.round(labels)):
            raise ValueError(f"{what}: labels must be whole class indices, "
                             f"got non-integer values such as {labels[labels != np.round(labels)].ravel()[0]}.")
        labels = labels.astype(np.int64)
    classes = pred_shape[axis]
    labels = labels.astype(np.intp, copy=False)
    # one comparison finds both kinds of bad label: a negative index, seen as unsigned, is huge
    unsigned = (labels if labels.ndim == 1 else labels.reshape(-1)).view(np.uintp)
    if labels.size and np.maximum.reduce(unsigned) >= classes:
        raise ValueError(f"{what}: labels must lie in [0, {classes - 1}] for "
                         f"{classes} classes, got values from {labels.min()} to {labels.max()}.")
    return labels
