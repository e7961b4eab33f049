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


# ----- convolution and pooling as functions (tf.nn.conv2d, tf.nn.max_pool2d, tf.nn.avg_pool2d) -----------------
# The same rules as the Conv and Pooling layers (conv, max_pool, avg_pool), channels last, for code written
# without layers. TensorFlow's arguments: strides/ksize as an int, one per spatial axis, or one per axis with 1
# for batch and channels; padding "SAME" or "VALID" (either case) or explicit [[lo, hi], ...] amounts.

def window_pads(spatial, ksize, strides, dilation, padding) -> tuple:
    """``((lo, hi), ...)`` per spatial axis for ``'valid'``, ``'same'`` (TensorFlow's split) or ``'causal'``.

    ``'same'`` gives ``ceil(n / s)`` outputs; the total padding ``(out − 1)·s + span − n`` is split with
    the odd entry *after* (TensorFlow's and Keras' choice; PyTorch puts it before).
    """
    pads = []
    for n, k, s, d in zip(spatial, ksize, strides, dilation):
        span = (k - 1) * d + 1
        if padding == "valid":
            pads.append((0, 0))
        elif padding == "causal":
            pads.append((span - 1, 0))
        else:
            out = -(-n // s)
            total = max((out - 1) * s + span - n, 0)
            pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _per_axis(value, rank: int, what: str, op: str) -> tuple:
    """An int, ``rank`` ints, or ``rank + 2`` ints with 1 for batch and channels (TensorFlow's forms)."""
    vals = [int(value)] * rank if np.ndim(value) == 0 else [int(v) for v in value]
    if len(vals) == rank + 2 and vals[0] == vals[-1] == 1:
        vals = vals[1:-1]
    if len(vals) != rank or min(vals) < 1:
        raise ValueError(f"{op}: {what} must be a positive int, {rank} ints (one per spatial axis) or {rank + 2} "
                         f"ints with 1 for batch and channels, got {value!r}.")
    return tuple(vals)


def _window_input(x, rank: int, op: str, data_format) -> Tensor:
    x = _tensor(x)
    if data_format not in (None, "NWC", "NHWC", "channels_last"):
        raise ValueError(f"{op}: data_format={data_format!r} is not supported; inputs are channels last "
                         f"({'NWC' if rank == 1 else 'NHWC'}). Move the channels with adv.moveaxis(x, 1, -1).")
    if x.ndim != rank + 2:
        shape = "(batch, width, channels)" if rank == 1 else "(batch, height, width, channels)"
        raise ValueError(f"{op}: input of shape {x.shape} must have {rank + 2} axes {shape}; "
                         f"add a batch axis with x[None] or channels with x[..., None].")
    return x


def _pads_of(padding, spatial, ksize, strides, dilation, op: str) -> tuple:
    if isinstance(padding, str) and padding.lower() in ("same", "valid"):
        return window_pads(spatial, ksize, strides, dilation, padding.lower())
    try:
        amounts = [tuple(int(a) for a in pair) for pair in padding]
    except (TypeError, ValueError):
        amounts = []
    if len(amounts) == len(spatial) + 2:
        amounts = amounts[1:-1]
    if len(amounts) != len(spatial) or any(len(p) != 2 or min(p) < 0 for p in amounts):
        raise ValueError(f"{op}: padding must be 'SAME', 'VALID' or [[lo, hi], ...] amounts per axis, "
                         f"got {padding!r}.")
    return tuple(amounts)


def _convolve(x, filters, stride, padding, data_format, dilations, rank: int, op: str):
    x, w = _window_input(x, rank, op, data_format), _tensor(filters)
    if w.ndim != rank + 2 or w.shape[-2] != x.shape[-1]:
        raise ValueError(f"{op}: filters of shape {w.shape} must be {'(width' if rank == 1 else '(height, width'}, "
                         f"in_channels, out_channels) with in_channels = the input's {x.shape[-1]} "
                         f"(input shape {x.shape}).")
    strides = _per_axis(stride, rank, "strides", op)
    dilation = _per_axis(1 if dilations is None else dilations, rank, "dilations", op)
    ksize = tuple(w.shape[:rank])
    pads = _pads_of(padding, x.shape[1:-1], ksize, strides, dilation, op)
    return RN.conv(x, w, strides=strides, pads=pads, dilation=dilation, groups=1)


def _pool(rule, x, ksize, strides, padding, data_format, rank: int, op: str):
    x = _window_input(x, rank, op, data_format)
    pool = _per_axis(ksize, rank, "ksize", op)
    strides = pool if strides is None else _per_axis(strides, rank, "strides", op)
    pads = _pads_of(padding, x.shape[1:-1], pool, strides, (1,) * rank, op)
    return rule(x, pool=pool, strides=strides, pads=pads)


def conv2d(input, filters, strides=1, padding="VALID", data_format="NHWC", dilations=None, name=None):
    """``tf.nn.conv2d``: ``y[n, i, j, o] = Σ_{a, b, c} x[n, i·s + a·d, j·s + b·d, c] · W[a, b, c, o]``.

    A correlation (no kernel flip), channels last; ``filters`` is ``(height, width, in, out)``, Keras'
    Conv2D kernel layout. The gradient to ``x`` is the full correlation of ḡ with the flipped kernel, to
    ``W`` the correlation of ``x`` with ḡ — the one ``conv`` rule the Conv layers use.
    """
    return _convolve(input, filters, strides, padding, data_format, dilations, 2, "conv2d")


def conv1d(input, filters, stride=1, padding="VALID", data_format="NWC", dilations=None, name=None):
    """``tf.nn.conv1d``: ``conv2d`` with one spatial axis; ``filters`` is ``(width, in, out)``."""
    return _convolve(input, filters, stride, padding, data_format, dilations, 1, "conv1d")


def max_pool2d(input, ksize, strides=None, padding="VALID", data_format="NHWC", name=None):
    """``tf.nn.max_pool2d``: the maximum of each window, per channel. The gradient goes to each window's
    arg-max (the first one on ties); padded entries never win. ``strides`` defaults to ``ksize``."""
    return _pool(RN.max_pool, input, ksize, strides, padding, data_format, 2, "max_pool2d")


def avg_pool2d(input, ksize, strides=None, padding="VALID", data_format="NHWC", name=None):
    """``tf.nn.avg_pool2d``: the mean of each window, per channel; ḡ/count goes to every entry of the window
    (padded entries are not counted, as TensorFlow). ``strides`` defaults to ``ksize``."""
    return _pool(RN.avg_pool, input, ksize, strides, padding, data_format, 2, "avg_pool2d")


def max_pool1d(input, ksize, strides=None, padding="VALID", data_format="NWC", name=None):
    """``tf.nn.max_pool1d``: ``max_pool2d`` with one spatial axis."""
    return _pool(RN.max_pool, input, ksize, strides, padding, data_format, 1, "max_pool1d")


def avg_pool1d(input, ksize, strides=None, padding="VALID", data_format="NWC", name=None):
    """``tf.nn.avg_pool1d``: ``avg_pool2d`` with one spatial axis."""
    return _pool(RN.avg_pool, input, ksize, strides, padding, data_format, 1, "avg_pool1d")


def _rank_of(x, op: str) -> int:
    rank = _tensor(x).ndim - 2
    if rank not in (1, 2):
        raise ValueError(f"{op}: input of shape {_tensor(x).shape} must be (batch, width, channels) or "
                         f"(batch, height, width, channels): 1 or 2 spatial axes, channels last.")
    return rank


def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None, name=None):
    """``tf.nn.convolution``: ``conv1d`` or ``conv2d``, chosen by the input's rank."""
    op = "convolution"
    return _convolve(input, filters, 1 if strides is None else strides, padding, data_format, dilations,
                     _rank_of(input, op), op)


def max_pool(input, ksize, strides=None, padding="VALID", data_format=None, name=None):
    """``tf.nn.max_pool``: ``max_pool1d`` or ``max_pool2d``, chosen by the input's rank."""
    return _pool(RN.max_pool, input, ksize, strides, padding, data_format, _rank_of(input, "max_pool"), "max_pool")


def avg_pool(input, ksize, strides=None, padding="VALID", data_format=None, name=None):
    """``tf.nn.avg_pool``: ``avg_pool1d`` or ``avg_pool2d``, chosen by the input's rank."""
    return _pool(RN.avg_pool, input, ksize, strides, padding, data_format, _rank_of(input, "avg_pool"), "avg_pool")
