"""Losses with Keras semantics: functions per sample, classes that reduce.

Functions return one value per sample (the mean over the last axis, as
Keras); loss classes apply a ``reduction`` (default
``"sum_over_batch_size"``: the mean over the batch) and accept
``sample_weight``. ``compile(loss="...")`` takes any name below.

    >>> y_true = np.array([[1.0], [0.0]])
    >>> logits = adv.Variable([[2.0], [-1.0]])
    >>> with adv.GradientTape() as tape:
    ...     loss = BinaryCrossentropy(from_logits=True)(y_true, logits)
    >>> tape.gradient(loss, logits)        # (sigmoid(z) − y) / batch

Numerical stability: from logits, binary cross-entropy is
``softplus(z) − y·z`` and categorical cross-entropy uses ``log_softmax``,
so no logit is too large (no ``inf``, no NaN).

With ``from_logits=False`` the prediction is usually the output of a
``sigmoid`` or ``softmax`` (``Dense(1, activation="sigmoid")``). Then, as
Keras does, the loss reads the logits ``z`` from the op that made the
prediction and uses the stable form above: no clipping, so
``BinaryCrossentropy()([[0]], sigmoid([[20.]]))`` is 20 (not 16.1) and its
gradient with respect to ``z`` is ``σ(z) − y ≈ 1`` (not 0). The gradient then
flows to ``z`` without passing through the activation's output.

Other probabilities (made some other way, or a numpy array) are clipped to
``[ε, 1 − ε]`` with ``ε = 1e-7`` before the log, exactly as Keras does (so
the gradient is zero for probabilities beyond the clip: prefer logits).
"""
from __future__ import annotations

import functools

import numpy as np

from .base.naming import to_snake_case
from .base.state import enter_scope, exit_scope, is_package_code, name_scope, state
from .core import engine, nn, ops
from .core import rules as R
from .core.nn import _class_labels, _numbers
from .core.rules import nn as RN
from .core.tensor import Tensor, check_nbytes, constant
from .keras_base.serialization import constructor_config

EPSILON = 1e-7
REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _pred(y_pred) -> Tensor:
    if isinstance(y_pred, Tensor):
        return y_pred
    arr = _numbers(y_pred, "y_pred")
    return constant(arr if arr.dtype.kind == "f" else arr.astype("float64"))


def _target(y_true, like: Tensor) -> Tensor:
    """The labels as a tensor of the prediction's dtype."""
    if isinstance(y_true, Tensor):
        return y_true if y_true.dtype == like.dtype else ops.cast(y_true, like.dtype)
    return constant(_numbers(y_true, "y_true").astype(like.dtype, copy=False))


def _flag(value, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be True or False, got {value!r}.")
    return bool(value)


def _smoothing(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or \
            not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"label_smoothing must be a number in [0, 1], got {value!r}.")
    return float(value)


def _squeeze_or_expand(x1, x2, expand_rank_1=True):
    """Keras 3's alignment of two ranks that differ by one, through a trailing axis of size 1.

    Without it, ``(batch,)`` labels minus ``(batch, 1)`` predictions would
    broadcast to a ``(batch, batch)`` table: a silently wrong loss or metric.
    When the longer one ends in an axis of 1, that axis is dropped from it,
    except that a rank-1 partner gets an axis of 1 instead (with
    ``expand_rank_1``): ``(n,)`` against ``(n, 1)`` gives ``(n, 1)`` and
    ``(n, 1)``; ``(n, k)`` against ``(n, k, 1)`` gives ``(n, k)`` twice.
    Anything else is returned as given. Works on tensors (recorded ops, so
    the gradient flows) and on numpy arrays (metrics).
    """
    def lib(x):
        return ops if isinstance(x, Tensor) else np

    if x1.ndim == x2.ndim + 1 and x1.shape[-1] == 1:
        if x2.ndim == 1 and expand_rank_1:
            x2 = lib(x2).expand_dims(x2, -1)
        else:
            x1 = lib(x1).squeeze(x1, -1)
    elif x2.ndim == x1.ndim + 1 and x2.shape[-1] == 1:
        if x1.ndim == 1 and expand_rank_1:
            x1 = lib(x1).expand_dims(x1, -1)
        else:
            x2 = lib(x2).squeeze(x2, -1)
    return x1, x2


def _positive(value, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)) or \
            not float(value) > 0.0:
        raise ValueError(f"{what} must be a positive number (the error where the loss turns from "
                         f"quadratic to linear, e.g. 1.0), got {value!r}.")
    return float(value)


def _same_rank(y_true: Tensor, y_pred: Tensor, what: str):
    """:func:`_squeeze_or_expand`, then equal shapes or an error naming ``what``."""
    y_true, y_pred = _squeeze_or_expand(y_true, y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"{what}: y_true has shape {y_true.shape} and y_pred has shape {y_pred.shape}; "
                         "they must match. For integer class labels with one column per class, use "
                         "sparse_categorical_crossentropy, or one-hot encode the labels.")
    return y_true, y_pred


def _logits_of(y_pred: Tensor, op: str, axis=None):
    """The logits ``z`` when ``y_pred`` is ``op(z)`` (``"sigmoid"`` or ``"softmax"``), else None.

    Keras does the same (it keeps the logits on the activation's output).
    Read from the record of the op that made ``y_pred``; not used when
    that record no longer holds values (a released tape), when the softmax
    ran over another axis, or when a recording tape tracks ``y_pred`` but not
    ``z`` (``tape.watch`` on the probabilities: then the loss must depend on them).
    """
    node = y_pred._node
    if node is None or node.rule.name != op or not engine.holds_values(node):
        return None
    if op == "softmax":
        ndim = y_pred.ndim
        if node.params.get("axis") != ((axis if axis < 0 else axis - ndim),):
            return None
    z = node.inputs[0]
    for tape in state.recording:
        tracked = tape.record.tracked
        if y_pred._id in tracked and z._id not in tracked:
            return None
    return z


# ---------------------------------------------------------------------------
# Per-sample functions
# ---------------------------------------------------------------------------
def _named_scope(fn):
    """Run a loss function inside ``name_scope(<its name>)``: drawn as one box (not inside another loss's).

    Its ops share the user's line (``shared_location``), found once per call.
    """
    name = fn.__name__

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        scope = state.scope
        if scope and scope[-1] in _SCOPED:
            return fn(*args, **kwargs)
        saved = enter_scope(name, None, True)     # the user's line, found once per call
        try:
            return fn(*args, **kwargs)
        finally:
            exit_scope(saved)
    _SCOPED.add(name)
    return scoped


_SCOPED: set = set()


@_named_scope
def mean_squared_error(y_true, y_pred):
    """``mean((y_true − y_pred)², axis=-1)``: one value per sample."""
    y_pred = _pred(y_pred)
    y_true, y_pred = _same_rank(_target(y_true, y_pred), y_pred, "mean_squared_error")
    return ops.mean(ops.square(y_pred - y_true), axis=-1)


@_named_scope
def mean_absolute_error(y_true, y_pred):
    """``mean(|y_true − y_pred|, axis=-1)``: one value per sample."""
    y_pred = _pred(y_pred)
    y_true, y_pred = _same_rank(_target(y_true, y_pred), y_pred, "mean_absolute_error")
    return ops.mean(ops.abs(y_pred - y_true), axis=-1)


@_named_scope
def huber(y_true, y_pred, delta=1.0):
    """``mean(h(y_pred − y_true), axis=-1)`` with ``h(e) = e²/2`` for ``|e| ≤ δ``, else ``δ·|e| − δ²/2``.

    Squared error near the target, absolute error (linear) beyond ``delta``:
    an outlier pulls with a force of at most ``δ`` (the gradient with respect
    to ``y_pred`` is the error clipped to ``[−δ, δ]``), where MSE's pull
    grows with the error. The two pieces meet with equal value and slope at
    ``|e| = δ``. Keras 3's ``keras.losses.huber``.
    """
    delta = _positive(delta, "huber: delta")
    y_pred = _pred(y_pred)
    y_true, y_pred = _same_rank(_target(y_true, y_pred), y_pred, "huber")
    error = y_pred - y_true
    abs_error = ops.abs(error)
    per_entry = ops.where(abs_error <= delta, 0.5 * ops.square(error), delta * abs_error - 0.5 * delta * delta)
    return ops.mean(per_entry, axis=-1)


@_named_scope
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    """``−mean(y·log p + (1 − y)·log(1 − p), axis=-1)``.

    With ``from_logits=True`` this is ``mean(softplus(z) − y·z)``, whose
    gradient with respect to the logit is exactly ``sigmoid(z) − y``. With
    ``from_logits=False`` on the output of ``sigmoid(z)``, the same form on
    ``z`` (Keras; see the module docstring).
    """
    y_pred = _pred(y_pred)
    if not from_logits:
        logits = _logits_of(y_pred, "sigmoid")   # before any squeeze/expand: read off the sigmoid's own record
        if logits is not None:
            y_pred, from_logits = logits, True
    y_true, y_pred = _same_rank(_target(y_true, y_pred), y_pred, "binary_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per_entry = nn.softplus(y_pred) - y_true * y_pred
    else:
        p = ops.clip(y_pred, EPSILON, 1.0 - EPSILON)
        per_entry = -(y_true * ops.log(p) + (1.0 - y_true) * ops.log(1.0 - p))
    return ops.mean(per_entry, axis=-1)


@_named_scope
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """``−Σ y·log p`` over the class axis, for one-hot (or soft) labels.

    From probabilities, ``p`` is first normalised to sum to one and clipped
    (Keras). From logits it is one op, ``softmax_cross_entropy``, whose
    gradient with respect to the logits is ``softmax(z) − y`` (for labels
    that sum to one); the output of ``softmax(z)`` over ``axis`` counts as
    logits ``z`` (Keras; see the module docstring).
    """
    y_pred = _pred(y_pred)
    y_true = _target(y_true, y_pred)
    if y_true.shape != y_pred.shape:
        hint = (" The labels look like class indices: use sparse_categorical_crossentropy."
                if y_true.ndim == y_pred.ndim - 1 or (y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1) else "")
        raise ValueError(f"categorical_crossentropy: y_true has shape {y_true.shape}, y_pred has shape "
                         f"{y_pred.shape}; they must be equal (one-hot labels).{hint}")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_pred.shape[axis]
    if not from_logits:
        logits = _logits_of(y_pred, "softmax", axis)
        if logits is not None:
            y_pred, from_logits = logits, True
    if from_logits:
        return nn.softmax_cross_entropy_with_logits(y_true, y_pred, axis=axis)
    p = y_pred / ops.sum(y_pred, axis=axis, keepdims=True)
    return -ops.sum(y_true * ops.log(ops.clip(p, EPSILON, 1.0 - EPSILON)), axis=axis)


@_named_scope
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """``−log p[label]`` for integer class labels of shape ``(batch,)`` or ``(batch, 1)``.

    From logits (or from the output of a ``softmax``, whose logits are read
    back as Keras does) this is one op, ``sparse_softmax_cross_entropy``,
    whose gradient with respect to the logits is ``softmax(z) − onehot(label)``.
    """
    y_pred = _pred(y_pred)
    labels = _class_labels(y_true, y_pred.shape, "sparse_categorical_crossentropy", axis)
    if (axis if axis < 0 else axis - y_pred.ndim) == -1:
        logits = y_pred if from_logits else _logits_of(y_pred, "softmax", axis)
        if logits is not None:
            return engine.apply(RN.sparse_softmax_cross_entropy, Tensor._wrap(labels), logits)
    classes = y_pred.shape[axis]
    check_nbytes("sparse_categorical_crossentropy (one-hot labels)", labels.shape + (classes,), y_pred.dtype,
                 "Check that the predictions have one column per class and the labels are class indices.")
    one_hot = R.one_hot(labels, depth=classes, dtype=y_pred.dtype)
    return categorical_crossentropy(Tensor._wrap(one_hot), y_pred, from_logits=from_logits, axis=axis)




mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# The gradient each loss sends to its prediction, as a picture's edge out of the loss box states it: written once
# per loss, for the engine's losses and (through ``views/figure.py``'s ALIASES) PyTorch's. ``{x}`` is the
# prediction, ``{t}`` the labels, both put in by the learner's names. As written, the reduction is the mean over
# the batch (Keras' ``sum_over_batch_size``, PyTorch's ``reduction='mean'``): a per-sample loss (cross-entropy)
# is divided by N, the batch size, a per-entry one (MSE, MAE, Huber, binary cross-entropy: the mean over the last
# axis, then over the batch) by n, the number of entries; ``figure.loss_formula`` drops the division for a sum.
BACKWARD_TEXT = {
    "mean_squared_error": "ḡ_{x} = 2·({x} − {t}) / n",
    "mean_absolute_error": "ḡ_{x} = sign({x} − {t}) / n",
    "huber": "ḡ_{x} = clip({x} − {t}, −δ, δ) / n  (the error, capped at ±δ)",
    "smooth_l1": "ḡ_{x} = clip(({x} − {t}) / β, −1, 1) / n  (PyTorch's: huber's with δ = β, divided by β)",
    "binary_crossentropy": "ḡ_{x} = (σ({x}) − {t}) / n  (from logits)",
    "binary_crossentropy (probabilities)": "ḡ_{x} = ({x} − {t}) / ({x}·(1 − {x})) / n  (from probabilities; "
                                           "from logits z it is σ(z) − {t})",
    "categorical_crossentropy": "ḡ_{x} = (softmax({x}) − {t}) / N  (from logits; each row of {t} sums to 1)",
    "sparse_categorical_crossentropy": "ḡ_{x} = (softmax({x}) − onehot({t})) / N  (from logits)",
    "nll": "ḡ_{x} = −onehot({t}) / N  (from log-probabilities, as log_softmax gives; PyTorch's nll_loss)",
}


# ---------------------------------------------------------------------------
# Loss classes
# ---------------------------------------------------------------------------
class Loss:
    """A per-sample loss function plus a reduction, as ``keras.losses.Loss``.

    Args:
        reduction: ``"sum_over_batch_size"`` (default) and ``"mean"``: the
            sum of the weighted per-sample losses divided by their number
            (Keras 3: ``"mean"`` is the same, it does not divide by the
            weights); ``"mean_with_sample_weight"``: divided by the sum of
            the sample weights (a weighted average); ``"sum"``; ``None`` /
            ``"none"``: one value per sample. A division by zero gives 0
            (Keras' ``divide_no_nan``).
        name: shown in logs.
    """

    def __init__(self, fn=None, reduction="sum_over_batch_size", name=None, **fn_kwargs):
        if reduction not in REDUCTIONS:
            raise ValueError(f"Unknown reduction {reduction!r}; use one of {REDUCTIONS}.")
        self.fn = fn
        self.reduction = reduction
        self.name = name or (fn.__name__ if fn is not None else type(self).__name__)
        self.fn_kwargs = fn_kwargs

    def call(self, y_true, y_pred):
        """``fn(y_true, y_pred)`` on tensors of the prediction's dtype whose ranks line up.

        As Keras' ``LossFunctionWrapper``: labels ``(batch,)`` against
        predictions ``(batch, 1)`` reach ``fn`` as ``(batch, 1)`` (see
        :func:`_squeeze_or_expand`), so a hand-written
        ``mean(square(y_true − y_pred), axis=-1)`` is one value per sample,
        not a ``(batch, batch)`` table. The functions of this module get the
        values as given: each lines up the ranks itself, after reading the
        logits off a ``sigmoid``/``softmax`` output, and refuses shapes that
        still differ with an error naming the loss.
        """
        if self.fn is None:
            raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred).")
        if self.fn.__module__ != __name__:   # this module's functions line up (or refuse) shapes themselves
            y_pred = _pred(y_pred)
            y_true, y_pred = _squeeze_or_expand(_target(y_true, y_pred), y_pred)
        return self.fn(y_true, y_pred, **self.fn_kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None):
        with name_scope(self.name, share_location=is_package_code(type(self).call)):
            losses = self.call(y_true, y_pred)
            return reduce(losses, self.reduction, sample_weight)

    def get_config(self) -> dict:
        """The constructor's arguments (``name``, ``reduction`` and the function's options such as
        ``from_logits``), as Keras 3: ``type(loss).from_config(loss.get_config())`` is the same loss."""
        return constructor_config(self)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in self.fn_kwargs.items())
        return f"{type(self).__name__}(reduction={self.reduction!r}{extra})"


def reduce(losses: Tensor, reduction="sum_over_batch_size", sample_weight=None) -> Tensor:
    """Apply a Keras 3 reduction to per-sample losses (optionally weighted); see :class:`Loss`."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"Unknown reduction {reduction!r}; use one of {REDUCTIONS}.")
    if sample_weight is not None:
        w = _numbers(sample_weight._value if isinstance(sample_weight, Tensor) else sample_weight,
                     "sample_weight").astype(losses.dtype, copy=False)
        while w.ndim > losses.ndim and w.shape[-1] == 1:
            w = w[..., 0]
        try:
            np.broadcast_shapes(w.shape, losses.shape)
        except ValueError:
            raise ValueError(f"sample_weight of shape {w.shape} does not broadcast against per-sample "
                             f"losses of shape {losses.shape}; give one weight per sample.") from None
        losses = losses * constant(w)
    if reduction in ("none", None):
        return losses
    total = ops.sum(losses)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = float(np.sum(w))
    else:
        divisor = float(losses.size)
    return total / divisor if divisor else total * 0.0


class MeanSquaredError(Loss):
    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error"):
        super().__init__(mean_squared_error, reduction, name)


class MeanAbsoluteError(Loss):
    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction, name)


class Huber(Loss):
    """:func:`huber` reduced over the batch (Keras 3: ``keras.losses.Huber(delta=1.0)``, named ``"huber_loss"``)."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss"):
        super().__init__(huber, reduction, name, delta=_positive(delta, "Huber: delta"))


_SCOPED.add("huber_loss")   # Keras names the class apart from its function: still one box, not two


class BinaryCrossentropy(Loss):
    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="sum_over_batch_size",
                 name="binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction, name, from_logits=_flag(from_logits, "from_logits"),
                         label_smoothing=_smoothing(label_smoothing))


class CategoricalCrossentropy(Loss):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction, name, from_logits=_flag(from_logits, "from_logits"),
                         label_smoothing=_smoothing(label_smoothing), axis=axis)


class SparseCategoricalCrossentropy(Loss):
    def __init__(self, from_logits=False, axis=-1, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, reduction, name,
                         from_logits=_flag(from_logits, "from_logits"), axis=axis)


_BY_NAME = {
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError, "huber": Huber,
    "binary_crossentropy": BinaryCrossentropy, "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
}


def get(identifier) -> Loss:
    """A :class:`Loss` from a name (``"mse"``, ``"sparse_categorical_crossentropy"``, a class
    name such as ``"MeanSquaredError"``), a Loss, or a function ``f(y_true, y_pred)``."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        key = identifier if identifier in _BY_NAME else to_snake_case(identifier)
        if key not in _BY_NAME:
            raise ValueError(f"Unknown loss {identifier!r}. Use one of {sorted(_BY_NAME)}, a Loss object "
                             "or a function f(y_true, y_pred).")
        return _BY_NAME[key]()
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        return Loss(identifier)
    raise TypeError(f"A loss must be a name, a Loss or a function f(y_true, y_pred); got "
                    f"{type(identifier).__name__}.")
