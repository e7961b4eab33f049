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
from .linalg import l2_normalize  # noqa: F401  (tf.nn.l2_normalize)
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
    if data_format not in (None, "NWC", "NHWC", "NDHWC", "channels_last"):
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
    if rank not in (1, 2, 3):
        raise ValueError(f"{op}: input of shape {_tensor(x).shape} must be (batch, width, channels), "
                         f"(batch, height, width, channels) or (batch, depth, height, width, channels): 1 to 3 "
                         "spatial axes, channels last.")
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


# ----- tf.nn's other names: compositions of the ops above, each recorded as the ops it is made of ----------
def tanh(x):
    """``tf.nn.tanh``: as ``adv.tanh``."""
    return _ops.tanh(x)


def bias_add(value, bias, data_format=None, name=None):
    """``tf.nn.bias_add``: ``value + bias`` along the last axis (channels last); ḡ summed over the rest."""
    if data_format not in (None, "NHWC", "NWC", "N...C"):
        raise ValueError(f"bias_add: data_format={data_format!r} is not supported; channels are last here.")
    value, bias = _tensor(value), _tensor(bias)
    if bias.ndim != 1 or bias.shape[0] != value.shape[-1]:
        raise ValueError(f"bias_add: bias of shape {bias.shape} must be 1-D with value's last size "
                         f"{value.shape[-1]} (value shape {value.shape}).")
    return value + bias


def crelu(features, axis=-1, name=None):
    """``tf.nn.crelu``: ``concat([relu(x), relu(−x)], axis)``."""
    x = _tensor(features)
    return _ops.concatenate([relu(x), relu(-x)], axis=axis)


def l2_loss(t, name=None):
    """``tf.nn.l2_loss``: ``Σ t² / 2``."""
    return _ops.sum(_ops.square(t)) / 2


def moments(x, axes, shift=None, keepdims=False, name=None):
    """``tf.nn.moments``: the mean and the population variance over ``axes``, as a pair."""
    x = _tensor(x)
    ax = tuple(axes) if isinstance(axes, (list, tuple)) else axes
    mean = _ops.mean(x, axis=ax, keepdims=True)
    variance = _ops.mean(_ops.square(x - stop(mean)), axis=ax, keepdims=True)
    if not keepdims:
        mean, variance = _ops.squeeze(mean, axis=ax), _ops.squeeze(variance, axis=ax)
    return mean, variance


def stop(x):
    """TensorFlow's ``moments`` differentiates the variance with the mean held fixed (its gradient through the
    mean is zero anyway: Σ(x − μ) = 0), so the graph shows ``stop_gradient`` there."""
    return _ops.stop_gradient(x)


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """``tf.nn.sufficient_statistics``: ``(count, Σ x, Σ x², shift)`` over ``axes`` (shift None)."""
    x = _tensor(x)
    ax = tuple(axes) if isinstance(axes, (list, tuple)) else axes
    keep = bool(keepdims or keep_dims)
    count = Tensor._wrap(np.asarray(np.prod([x.shape[a] for a in np.atleast_1d(ax)]), dtype=x.dtype))
    return count, _ops.sum(x, axis=ax, keepdims=keep), _ops.sum(_ops.square(x), axis=ax, keepdims=keep), None


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """``tf.nn.normalize_moments``: the mean ``Σx/n`` and variance ``Σx²/n − mean²`` from the sums."""
    mean = mean_ss / counts
    return mean, variance_ss / counts - _ops.square(mean)


def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    """``tf.nn.weighted_moments``: the weighted mean and variance over ``axes``."""
    x, w = _tensor(x), _tensor(frequency_weights)
    ax = tuple(axes) if isinstance(axes, (list, tuple)) else axes
    total = _ops.sum(w * _ops.ones_like(x), axis=ax, keepdims=True)
    mean = _ops.sum(w * x, axis=ax, keepdims=True) / total
    variance = _ops.sum(w * _ops.square(x - mean), axis=ax, keepdims=True) / total
    if not keepdims:
        mean, variance = _ops.squeeze(mean, axis=ax), _ops.squeeze(variance, axis=ax)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``tf.nn.batch_normalization``: ``scale·(x − mean)/√(variance + ε) + offset`` (None: no offset/scale)."""
    inv = 1 / _ops.sqrt(_tensor(variance) + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    y = (_tensor(x) - mean) * inv
    return y if offset is None else y + offset


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None, variance_epsilon=None,
                                         scale_after_normalization=None, input=None, mean=None, variance=None,
                                         name=None):
    """``tf.nn.batch_norm_with_global_normalization``: :func:`batch_normalization` with its old argument names."""
    x = t if input is None else input
    return batch_normalization(x, m if mean is None else mean, v if variance is None else variance, beta,
                               gamma if scale_after_normalization else None, variance_epsilon)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """``tf.nn.sigmoid_cross_entropy_with_logits``: ``−z·ln σ(x) − (1 − z)·ln(1 − σ(x))`` per entry, computed
    as ``max(x, 0) − x·z + ln(1 + e^(−|x|))`` (TensorFlow's stable form: no overflow, no ``log 0``)."""
    x, z = _tensor(logits), _tensor(labels)
    if x.shape != z.shape:
        raise ValueError(f"sigmoid_cross_entropy_with_logits: labels {z.shape} and logits {x.shape} must have "
                         "the same shape.")
    return relu(x) - x * z + softplus(-_ops.abs(x))


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """``tf.nn.weighted_cross_entropy_with_logits``: the sigmoid cross-entropy with the positive term weighted
    by ``pos_weight``: ``(1 − z)·x + (1 + (q − 1)·z)·ln(1 + e^(−x))``, stably."""
    x, z = _tensor(logits), _tensor(labels)
    weight = 1 + (pos_weight - 1) * z
    return (1 - z) * x + weight * (softplus(-_ops.abs(x)) + relu(-x))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """``tf.nn.log_poisson_loss``: ``e^c − z·c`` (and Stirling's term ``z ln z − z + ½ ln(2πz)`` for z > 1 with
    ``compute_full_loss``)."""
    c, z = _tensor(log_input), _tensor(targets)
    loss = _ops.exp(c) - z * c
    if compute_full_loss:
        safe = _ops.where(z > 1, z, 2.0)
        stirling = safe * _ops.log(safe) - safe + 0.5 * _ops.log(2 * np.pi * safe)
        loss = loss + _ops.where(z > 1, stirling, 0.0)
    return loss


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=-1, name=None):
    """The TensorFlow 1 name of :func:`softmax_cross_entropy_with_logits`."""
    return softmax_cross_entropy_with_logits(labels, logits, axis)


def embedding_lookup(params, ids, max_norm=None, name=None):
    """``tf.nn.embedding_lookup``: the rows of ``params`` at ``ids`` (a ``take`` along axis 0; ḡ adds back into
    the rows that were looked up)."""
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: max_norm= is not supported; clip the rows with "
                                  "adv.clip_by_norm(adv.gather(params, ids), max_norm, axes=[-1]).")
    return _ops.gather(params, ids)


def zero_fraction(value, name=None):
    """``tf.math.zero_fraction``: the fraction of entries equal to zero (no gradient)."""
    v = _tensor(value)._value
    return Tensor._wrap(np.asarray(np.mean(v == 0), dtype=np.float32))


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """``tf.nn.compute_average_loss``: ``Σ loss·w / global_batch_size`` (the batch size when None)."""
    loss = _tensor(per_example_loss)
    if sample_weight is not None:
        loss = loss * sample_weight
    n = loss.shape[0] if global_batch_size is None else global_batch_size
    return _ops.sum(loss) / Tensor._wrap(np.asarray(n, dtype=loss.dtype))


def scale_regularization_loss(regularization_loss):
    """``tf.nn.scale_regularization_loss``: ``Σ loss`` (divided by the number of replicas, which is 1 here)."""
    losses = regularization_loss if isinstance(regularization_loss, (list, tuple)) else [regularization_loss]
    return _ops.sum(_ops.stack([_ops.sum(loss) for loss in losses]))


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):  # noqa: A002
    """``tf.nn.local_response_normalization``: ``x / (bias + α·Σ_{|k−c| ≤ r} x_k²)^β`` over the channels."""
    x = _tensor(input)
    sq = _ops.pad(_ops.square(x), [(0, 0)] * (x.ndim - 1) + [(depth_radius, depth_radius)])
    c = x.shape[-1]
    window = sum(sq[..., k:k + c] for k in range(2 * depth_radius + 1))
    return x / (bias + alpha * window) ** beta


lrn = local_response_normalization


def depth_to_space(input, block_size, data_format="NHWC", name=None):    # noqa: A002
    """``tf.nn.depth_to_space``: channels ``b·b·C`` become ``b × b`` blocks of ``C`` channels (a reshape and a
    transpose: the gradient is the inverse permutation)."""
    x, b = _tensor(input), int(block_size)
    n, h, w, c = x.shape
    y = _ops.reshape(x, (n, h, w, b, b, c // (b * b)))
    return _ops.reshape(_ops.transpose(y, (0, 1, 3, 2, 4, 5)), (n, h * b, w * b, c // (b * b)))


def space_to_depth(input, block_size, data_format="NHWC", name=None):    # noqa: A002
    """``tf.nn.space_to_depth``: ``b × b`` blocks of pixels become ``b·b·C`` channels (the inverse of
    :func:`depth_to_space`)."""
    x, b = _tensor(input), int(block_size)
    n, h, w, c = x.shape
    y = _ops.reshape(x, (n, h // b, b, w // b, b, c))
    return _ops.reshape(_ops.transpose(y, (0, 1, 3, 2, 4, 5)), (n, h // b, w // b, b * b * c))


def atrous_conv2d(value, filters, rate, padding, name=None):
    """``tf.nn.atrous_conv2d``: ``conv2d`` with ``dilations=rate``."""
    return conv2d(value, filters, 1, padding, dilations=rate)


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    """``tf.nn.depthwise_conv2d``: each input channel ``c`` convolved with its own ``filter[:, :, c, :]``
    (``M`` outputs per channel, output channel ``c·M + m``): the ``conv`` rule with ``groups = C``."""
    x, w = _window_input(input, 2, "depthwise_conv2d", data_format), _tensor(filter)
    kh, kw, c, m = w.shape
    if c != x.shape[-1]:
        raise ValueError(f"depthwise_conv2d: filter of shape {w.shape} must have in_channels = the input's "
                         f"{x.shape[-1]}.")
    strides = _per_axis(strides[1:3] if len(np.atleast_1d(strides)) == 4 else strides, 2, "strides",
                        "depthwise_conv2d")
    dilation = _per_axis(1 if dilations is None else dilations, 2, "dilations", "depthwise_conv2d")
    pads = _pads_of(padding, x.shape[1:-1], (kh, kw), strides, dilation, "depthwise_conv2d")
    return RN.conv(x, _ops.reshape(w, (kh, kw, 1, c * m)), strides=strides, pads=pads, dilation=dilation,
                   groups=c)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """``tf.nn.separable_conv2d``: :func:`depthwise_conv2d`, then a 1 × 1 ``conv2d`` with ``pointwise_filter``."""
    return conv2d(depthwise_conv2d(input, depthwise_filter, strides, padding, data_format, dilations),
                  pointwise_filter, 1, "VALID")


def pool(input, window_shape, pooling_type, strides=None, padding="VALID", dilations=None,  # noqa: A002
         data_format=None, name=None):
    """``tf.nn.pool``: ``max_pool`` or ``avg_pool`` by ``pooling_type`` (``"MAX"`` / ``"AVG"``)."""
    kind = str(pooling_type).upper()
    if kind not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}.")
    return (max_pool if kind == "MAX" else avg_pool)(input, window_shape, strides, padding, data_format)


def dropout(x, rate=None, noise_shape=None, seed=None, name=None):
    """``tf.nn.dropout``: zero each entry with probability ``rate`` and scale the rest by ``1/(1 − rate)``,
    as ``adv.random.dropout``."""
    from .random import dropout as _dropout
    return _dropout(x, rate, noise_shape=noise_shape, seed=seed)


def top_k(input, k=1, sorted=True, index_type="int32", name=None):    # noqa: A002
    """``tf.nn.top_k`` (= ``tf.math.top_k``): the ``k`` largest entries of each row and their positions."""
    return _ops.top_k(input, k, sorted, index_type)


def in_top_k(targets, predictions, k, name=None):
    """``tf.nn.in_top_k`` (= ``tf.math.in_top_k``)."""
    return _ops.in_top_k(targets, predictions, k)


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None, name=None):    # noqa: A002
    """``tf.nn.conv3d``: ``conv2d`` with three spatial axes; ``filters`` is ``(depth, height, width, in, out)``."""
    return _convolve(input, filters, strides, padding, data_format, dilations, 3, "conv3d")


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):    # noqa: A002
    """``tf.nn.max_pool3d``: the largest entry of each 3-D window."""
    return _pool(RN.max_pool, input, ksize, strides, padding, data_format, 3, "max_pool3d")


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):    # noqa: A002
    """``tf.nn.avg_pool3d``: the mean of each 3-D window."""
    return _pool(RN.avg_pool, input, ksize, strides, padding, data_format, 3, "avg_pool3d")


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None,  # noqa: A002
                   dilations=None, name=None):
    """``tf.nn.conv_transpose``: the transposed convolution — exactly the gradient of ``conv`` with respect to
    its input, for an input of ``output_shape``. ``filters`` is ``(*k, out_channels, in_channels)``, the
    forward convolution's kernel (Keras' ``Conv2DTranspose`` layout). One ``conv_transpose`` rule on the graph."""
    op = "conv_transpose"
    x, w = _tensor(input), _tensor(filters)
    rank = x.ndim - 2
    x = _window_input(x, rank, op, data_format)
    out = tuple(int(v) for v in np.asarray(output_shape._value if isinstance(output_shape, Tensor)
                                           else output_shape).reshape(-1))
    if len(out) != rank + 2:
        raise ValueError(f"{op}: output_shape {out} must be (batch, *spatial, channels) for an input of shape "
                         f"{x.shape}.")
    if w.ndim != rank + 2 or w.shape[-1] != x.shape[-1] or w.shape[-2] != out[-1]:
        raise ValueError(f"{op}: filters of shape {w.shape} must be (*kernel, out_channels={out[-1]}, "
                         f"in_channels={x.shape[-1]}).")
    strides = _per_axis(strides, rank, "strides", op)
    dilation = _per_axis(1 if dilations is None else dilations, rank, "dilations", op)
    pads = _pads_of(padding, out[1:-1], tuple(w.shape[:rank]), strides, dilation, op)
    return RN.conv_transpose(x, w, spatial=out[1:-1], strides=strides, pads=pads, dilation=dilation, groups=1)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",  # noqa: A002
                     dilations=None, name=None):
    """``tf.nn.conv1d_transpose``: :func:`conv_transpose` with one spatial axis."""
    return conv_transpose(input, filters, output_shape, strides, padding, data_format, dilations)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",  # noqa: A002
                     dilations=None, name=None):
    """``tf.nn.conv2d_transpose``: :func:`conv_transpose` with two spatial axes."""
    return conv_transpose(input, filters, output_shape, strides, padding, data_format, dilations)


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NDHWC",  # noqa: A002
                     dilations=None, name=None):
    """``tf.nn.conv3d_transpose``: :func:`conv_transpose` with three spatial axes."""
    return conv_transpose(input, filters, output_shape, strides, padding, data_format, dilations)


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """``tf.nn.atrous_conv2d_transpose``: :func:`conv2d_transpose` with ``dilations=rate``, stride 1."""
    return conv_transpose(value, filters, output_shape, 1, padding, dilations=rate)


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", output_dtype="int64",  # noqa: A002
                         include_batch_in_index=False, name=None):
    """``tf.nn.max_pool_with_argmax``: the 2-D max pool and, for each output, the flat position of the maximum
    in the input, ``(y·W + x)·C + c`` (plus ``b·H·W·C`` with ``include_batch_in_index``). The positions are
    integers: no gradient."""
    x = _window_input(input, 2, "max_pool_with_argmax", data_format)
    values = max_pool(x, ksize, strides, padding)
    n, h, w, c = x.shape
    pool = _per_axis(ksize, 2, "ksize", "max_pool_with_argmax")
    step = _per_axis(strides, 2, "strides", "max_pool_with_argmax")
    (top, _), (left, _) = _pads_of(padding, (h, w), pool, step, (1, 1), "max_pool_with_argmax")
    v = x._value
    out = np.zeros(values.shape, dtype=output_dtype)
    for i in range(values.shape[1]):
        for j in range(values.shape[2]):
            y0, x0 = i * step[0] - top, j * step[1] - left
            ys, xs = range(max(y0, 0), min(y0 + pool[0], h)), range(max(x0, 0), min(x0 + pool[1], w))
            window = v[:, ys.start:ys.stop, xs.start:xs.stop, :].reshape(n, -1, c)
            k = np.argmax(window, axis=1)
            yy, xx = ys.start + k // len(xs), xs.start + k % len(xs)
            flat = (yy * w + xx) * c + np.arange(c)
            out[:, i, j, :] = flat + (np.arange(n)[:, None] * h * w * c if include_batch_in_index else 0)
    return values, Tensor._wrap(out)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """``tf.nn.approx_max_k``: here the exact ``top_k`` (last axis)."""
    return _ops.top_k(operand, k)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """``tf.nn.approx_min_k``: the exact ``k`` smallest entries (last axis) and their positions."""
    values, indices = _ops.top_k(-_tensor(operand), k)
    return -values, indices


def __getattr__(name):
    """A TensorFlow name of ``tf.nn`` that is out of scope here raises the reason and the fix (the table in
    ``base/tf_surface.py``); any other missing name raises Python's usual AttributeError."""
    from ..base.tf_surface import out_of_scope_message
    message = out_of_scope_message(f"tf.nn.{name}", "autodiff_viz.nn")
    if message is None:
        raise AttributeError(f"module 'autodiff_viz.nn' has no attribute {name!r}", name=name)
    raise AttributeError(message)


def conv_nd(input, filter, strides, padding, explicit_paddings=(), data_format="CHANNELS_LAST",  # noqa: A002
            dilations=(), batch_dims=1, groups=1, name=None):
    """``tf.conv`` (the raw N-D convolution): ``conv1d``/``conv2d``/``conv3d`` by the filter's rank, with
    ``groups`` (the input channels split into ``groups`` independent convolutions, filter
    ``(*k, C/groups, out)``) and ``padding="EXPLICIT"`` taking ``explicit_paddings`` as ``[lo, hi]`` per axis
    of the input (batch and channels 0)."""
    op = "conv"
    if batch_dims != 1 or data_format not in ("CHANNELS_LAST", "NHWC", "NWC", "NDHWC"):
        raise NotImplementedError(f"{op}: batch_dims={batch_dims}, data_format={data_format!r} are not supported; "
                                  "one batch axis in front and channels last.")
    w = _tensor(filter)
    rank = w.ndim - 2
    x = _window_input(input, rank, op, None)
    if x.shape[-1] != w.shape[-2] * groups:
        raise ValueError(f"{op}: filter of shape {w.shape} with groups={groups} needs {w.shape[-2] * groups} input "
                         f"channels, the input has {x.shape[-1]}.")
    stride = _per_axis(strides, rank, "strides", op)
    dilation = _per_axis(list(dilations) or 1, rank, "dilations", op)
    if str(padding).upper() == "EXPLICIT":
        pairs = np.asarray(explicit_paddings).reshape(-1, 2)
        pads = tuple(tuple(int(v) for v in p) for p in pairs[1:-1])
    else:
        pads = _pads_of(padding, x.shape[1:-1], tuple(w.shape[:rank]), stride, dilation, op)
    return RN.conv(x, w, strides=stride, pads=pads, dilation=dilation, groups=groups)
