"""Metrics for ``compile(metrics=[...])``: accuracy in its Keras flavours, regression errors, running means.

Metrics are measured, never differentiated, so they work on numpy values.
``"accuracy"`` picks its flavour from the shapes, as Keras does: one output
column → binary (threshold 0.5), integer labels against class scores →
sparse categorical, one-hot labels → categorical. Regression: ``"mae"`` /
``"mean_absolute_error"``, ``"mse"`` / ``"mean_squared_error"`` and
``"root_mean_squared_error"``, ``"mape"`` / ``"mean_absolute_percentage_error"``
(or their classes, ``MeanAbsoluteError()`` ...).
A metric given by name is logged under that name (``metrics=["mae"]`` →
``history.history["mae"]``), as Keras 3.

The accuracy classes of Keras 3, ``Accuracy()``, ``BinaryAccuracy(threshold=0.5)``,
``CategoricalAccuracy()`` and ``SparseCategoricalAccuracy()``, go to
``compile(metrics=[...])`` or into a training loop of your own: calling a
metric, ``acc(y_true, y_pred)``, is ``update_state`` then ``result()``, and
``acc.reset_state()`` starts a new epoch.

A metric of your own subclasses :class:`Metric`, as in Keras 3: ``__init__``
makes its state with ``self.add_variable(shape=(), initializer="zeros",
name=...)``, ``update_state(y_true, y_pred, sample_weight=None)`` adds a
batch to it (``var.assign_add(...)``), ``result()`` reads it, and the
default ``reset_state()`` sets every state variable back to zeros.
``compile(metrics=[...])`` also takes any object with ``update_state``,
``result`` and ``reset_state`` methods.

Labels and predictions whose ranks differ by a trailing axis of 1
(``(batch,)`` against ``(batch, 1)``) are lined up first, as Keras' ``squeeze_or_expand_to_same_rank`` does, rather than
broadcast into a ``(batch, batch)`` comparison.
"""
from __future__ import annotations

from numbers import Real

import numpy as np

from .base.naming import to_snake_case
from .base.session import floatx, unique_name
from .core.tensor import Tensor, Variable
from .layers import initializers
from .losses import EPSILON, _squeeze_or_expand


def _np(x) -> np.ndarray:
    return np.asarray(x._value if isinstance(x, Tensor) else x)


def _aligned(y_true, y_pred, expand_rank_1=True):
    """Both as numpy arrays, their ranks lined up (see :func:`_squeeze_or_expand`)."""
    return _squeeze_or_expand(_np(y_true), _np(y_pred), expand_rank_1)


def accuracy(y_true, y_pred) -> np.ndarray:
    """Per entry: 1 where ``y_pred == y_true`` exactly (Keras 3's ``accuracy``, for labels predicted as labels).

    Not for scores or probabilities: those need :func:`binary_accuracy`
    (a threshold) or the categorical ones (an argmax).
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    return (y_true.astype(y_pred.dtype) == y_pred).astype(np.float64)


def binary_accuracy(y_true, y_pred, threshold=0.5) -> np.ndarray:
    """Per sample: the fraction of entries where ``(y_pred > threshold) == y_true`` (Keras 3).

    Predictions of shape ``(batch,)`` are one entry per sample, so the result
    is one 0 or 1 per sample (not their mean, which would count the whole
    batch as one sample).
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    matches = (y_pred > threshold).astype(y_true.dtype) == y_true
    return np.mean(matches, axis=-1) if matches.ndim > 1 else matches.astype(np.float64)


def categorical_accuracy(y_true, y_pred) -> np.ndarray:
    """Per sample: 1 where the largest score is at the one-hot label's position."""
    label, guess = _aligned(np.argmax(_np(y_true), axis=-1), np.argmax(_np(y_pred), axis=-1))
    return (label == guess).astype(np.float64)


def sparse_categorical_accuracy(y_true, y_pred) -> np.ndarray:
    """Per sample: 1 where the largest score is at the integer label (labels ``(batch,)`` or ``(batch, 1)``)."""
    label, guess = _aligned(y_true, np.argmax(_np(y_pred), axis=-1), expand_rank_1=False)
    return (label.astype(np.int64) == guess).astype(np.float64)


def mean_absolute_error(y_true, y_pred) -> np.ndarray:
    """Per sample: ``mean(|y_true − y_pred|, axis=-1)`` (Keras' ``"mae"``)."""
    y_true, y_pred = _aligned(y_true, y_pred)
    return np.mean(np.abs(y_pred - y_true), axis=-1)


def mean_squared_error(y_true, y_pred) -> np.ndarray:
    """Per sample: ``mean((y_true − y_pred)², axis=-1)`` (Keras' ``"mse"``)."""
    y_true, y_pred = _aligned(y_true, y_pred)
    return np.mean(np.square(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred) -> np.ndarray:
    """Per sample: ``100 · mean(|y_true − y_pred| / max(|y_true|, ε), axis=-1)`` with ``ε = 1e-7`` (Keras' ``"mape"``).

    The error as a percentage of the target: a prediction of 90 or 110 for a
    target of 100 is 10 (%). ``ε`` only stops a division by zero; a target
    of 0 still makes the value huge (an error of 0.5 there is 5·10⁸ %), so
    MAPE suits targets well away from zero.
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    return 100.0 * np.mean(np.abs(y_true - y_pred) / np.maximum(np.abs(y_true), EPSILON), axis=-1)


mae = MAE = mean_absolute_error
mse = MSE = mean_squared_error
mape = MAPE = mean_absolute_percentage_error


class Result(float):
    """A metric's result: a Python float that also answers ``.numpy()``.

    Keras returns a backend tensor, and TensorFlow course code reads it with
    ``metric.result().numpy()`` as often as with ``float(metric.result())``;
    both work, and anything that takes a float takes it.
    """

    __slots__ = ()

    def numpy(self) -> np.float64:
        return np.float64(self)


_AGGREGATIONS = ("none", "mean", "sum", "only_first_replica")


class Metric:
    """The base of every metric (``keras.metrics.Metric``): state that batches add to, and a result read from it.

    A subclass writes three methods, as in Keras 3::

        class CountCorrect(adv.metrics.Metric):
            def __init__(self, name="count_correct", **kwargs):
                super().__init__(name=name, **kwargs)
                self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")

            def update_state(self, y_true, y_pred, sample_weight=None):
                guess = adv.reshape(adv.argmax(y_pred, axis=1), (-1, 1))
                hits = adv.cast(adv.cast(y_true, "int32") == adv.cast(guess, "int32"), "float32")
                self.correct.assign_add(adv.sum(hits))

            def result(self):
                return self.correct

    ``fit`` calls ``reset_state()`` at the start of every epoch (and
    ``evaluate`` at its start), ``update_state(y, y_pred)`` after every
    batch, and logs ``result()`` under :attr:`name` as a float (a tensor or
    variable returned by ``result()`` is read then). Calling a metric,
    ``m(y_true, y_pred)``, is ``update_state`` then ``result()``.

    Args:
        dtype: the dtype of state variables made without one; defaults to
            :func:`~autodiff_viz.layers.floatx` (``"float32"``).
        name: the name in the logs; defaults to the class name in snake case,
            numbered when taken (``count_correct``, ``count_correct_1`` ...).

    ``__init__`` does not call ``reset_state()`` (Keras 3 does not either),
    so a subclass makes its state after ``super().__init__()``.
    """

    def __init__(self, dtype=None, name=None):
        self.name = name or unique_name(to_snake_case(type(self).__name__))
        self._dtype = np.dtype(dtype or floatx()).name
        self._variables = []
        self._metrics = []

    def __setattr__(self, attr, value):
        """Track state assigned as an attribute (a ``Variable``, a metric, or a list of them), as Keras 3 does."""
        if "_variables" in self.__dict__:
            self._track(value)
        object.__setattr__(self, attr, value)

    def _track(self, value) -> None:
        if isinstance(value, Variable):
            if not any(v is value for v in self._variables):
                self._variables.append(value)
        elif isinstance(value, Metric):
            if value is not self and not any(m is value for m in self._metrics):
                self._metrics.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                self._track(item)

    def _check_super_called(self, what: str) -> None:
        if "_variables" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.{what}: the metric has no state store because its __init__ "
                               "did not call super().__init__(). Call super().__init__(name=name, **kwargs) first "
                               "in __init__, before add_variable.")

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def variables(self) -> list:
        """The state variables: those made by :meth:`add_variable` or assigned as attributes, then those of
        metrics held as attributes."""
        self._check_super_called("variables")
        out = list(self._variables)
        for metric in self._metrics:
            out += [v for v in metric.variables if not any(v is w for w in out)]
        return out

    def add_variable(self, shape, initializer, dtype=None, aggregation="sum", name=None) -> Variable:
        """A new state variable, tracked in :attr:`variables` (Keras 3's signature).

        Args:
            shape: its shape, ``()`` for a single number.
            initializer: ``"zeros"``, ``"ones"``, another initializer name, or
                a callable ``f(shape, dtype)``.
            dtype: defaults to the metric's :attr:`dtype`.
            aggregation: how replicas would combine it in distributed
                training (``"sum"``, ``"mean"``, ``"none"``,
                ``"only_first_replica"``); checked and kept for Keras code,
                with no effect in this one-process package.
            name: its name (``"total"``); its ``path`` is ``<metric name>/<name>``, as Keras 3.

        It is not trainable: optimizers and tapes leave it alone.
        """
        self._check_super_called("add_variable")
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"{self.name}.add_variable({name!r}): aggregation must be one of {list(_AGGREGATIONS)}, "
                             f"got {aggregation!r}.")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        dtype = np.dtype(dtype or self.dtype).name
        value = initializers.get(initializer)(shape, dtype)
        if value.shape != shape:
            raise ValueError(f"{self.name}.add_variable({name!r}): the initializer returned shape {value.shape}, "
                             f"expected {shape}.")
        variable = Variable(value, trainable=False, name=name or "variable")
        variable._path = f"{self.name}/{variable.name}"
        self._track(variable)
        return variable

    def add_weight(self, shape=(), initializer=None, dtype=None, name=None) -> Variable:
        """:meth:`add_variable` under its older name (Keras 2 code: ``self.add_weight(name="tp",
        initializer="zeros")``). Without an initializer the variable starts at zeros."""
        return self.add_variable(shape=shape, initializer="zeros" if initializer is None else initializer,
                                 dtype=dtype, name=name)

    def reset_state(self) -> None:
        """Set every state variable to zeros (Keras 3's default; override it for other starting values)."""
        for v in self.variables:
            v.assign(np.zeros(v.shape, dtype=v.dtype))

    def update_state(self, *args, **kwargs):
        """Add a batch to the state; a subclass writes it (``update_state(y_true, y_pred, sample_weight=None)``)."""
        raise NotImplementedError(f"{type(self).__name__} has no update_state. A Metric subclass writes "
                                  "update_state(self, y_true, y_pred, sample_weight=None) and result(self).")

    def result(self):
        """The current value from the state (a number, a 0-d tensor or a variable); a subclass writes it."""
        raise NotImplementedError(f"{type(self).__name__} has no result. A Metric subclass writes result(self), "
                                  "returning the value to log (e.g. a state variable).")

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)``, then ``result()``, as Keras 3's ``Metric.__call__``.

        The value returned is the running result over everything seen since
        the last ``reset_state()``, this batch included, not this batch's own value.
        """
        self._check_super_called("__call__")
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class Mean(Metric):
    """A running (weighted) mean: ``update_state(values)``, ``result()``, ``reset_state()``.

    ``update_state(values, sample_weight=w)`` is Keras 3's weighted form:
    each sample's value (the mean over its other axes) counts ``w_i``
    times, so the result is ``Σ w_i · v_i / Σ w_i`` (``w`` one weight per
    sample, or one number for all, as in ``tracker.update_state(loss,
    sample_weight=batch_size)``). ``weight=n`` counts the mean of
    ``values`` ``n`` times (``fit`` uses it for a batch of ``n`` samples).

    The state is two Python floats, ``total`` and ``count`` (float64
    sums), not variables, so :attr:`variables` is empty.
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(dtype=dtype, name=name)
        self.total, self.count = 0.0, 0.0

    def reset_state(self):
        """Start again: ``total`` and ``count`` to 0 (and any state variable a subclass added, to zeros)."""
        super().reset_state()
        self.total, self.count = 0.0, 0.0

    def update_state(self, values, sample_weight=None, weight=None):
        values = _np(values).astype(np.float64)
        if sample_weight is not None:
            self._add_weighted(values, _np(sample_weight).astype(np.float64))
        elif weight is None:
            self.total += float(values.sum())
            self.count += values.size
        else:
            self.total += float(values.mean()) * weight
            self.count += weight

    def _add_weighted(self, values, sample_weight):
        """Keras 3's ``reduce_to_samplewise_values``: values reduced (by their mean) to the weights' rank,
        multiplied by the weights; the weights' own extra axes averaged; both summed."""
        values, sample_weight = _squeeze_or_expand(values, sample_weight)
        if values.ndim > sample_weight.ndim:
            values = values.mean(axis=tuple(range(sample_weight.ndim, values.ndim)))
        sample_weight = np.broadcast_to(sample_weight, values.shape)
        values = values * sample_weight
        if sample_weight.ndim > 1:
            sample_weight = sample_weight.mean(axis=tuple(range(1, sample_weight.ndim)))
        if values.ndim > 1:
            values = values.mean(axis=tuple(range(1, values.ndim)))
        self.total += float(values.sum())
        self.count += float(sample_weight.sum())

    def result(self) -> "Result":
        return Result(self.total / self.count if self.count else 0.0)


class MeanMetricWrapper(Mean):
    """The mean over all samples of a per-sample metric function ``fn(y_true, y_pred, **kwargs)``.

    ``kwargs`` (such as ``threshold=0.7``) go to ``fn`` at every update, as in Keras 3.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name or fn.__name__, dtype=dtype)
        self.fn = fn
        self.fn_kwargs = kwargs

    def get_config(self) -> dict:
        """``name``, ``dtype`` and the keyword arguments of ``fn`` (``threshold``), as Keras 3; a wrapper made
        directly (``MeanMetricWrapper(fn)``) also gives ``fn``."""
        config = {**super().get_config(), **self.fn_kwargs}
        return {"fn": self.fn, **config} if type(self) is MeanMetricWrapper else config

    def update_state(self, y_true, y_pred, sample_weight=None):
        super().update_state(self.fn(y_true, y_pred, **self.fn_kwargs), sample_weight=sample_weight)


class Accuracy(MeanMetricWrapper):
    """How often ``y_pred`` equals ``y_true`` exactly: the mean of :func:`accuracy` (``keras.metrics.Accuracy``).

    For predicted labels (``[1, 2, 0]`` against ``[1, 1, 0]`` → 2/3); for
    probabilities use :class:`BinaryAccuracy` or the categorical ones.
    ``update_state(y_true, y_pred, sample_weight=None)``: a sample of weight
    0 does not count.
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the 0/1 label: the mean of :func:`binary_accuracy`
    (``keras.metrics.BinaryAccuracy``).

    Args:
        name: the name in the logs.
        threshold: predictions above it count as 1 (0.5 suits probabilities; 0 suits logits).
    """

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        if isinstance(threshold, bool) or not isinstance(threshold, Real):
            raise TypeError(f"BinaryAccuracy: threshold must be a number, got {threshold!r}. "
                            "Example: BinaryAccuracy(threshold=0.5).")
        super().__init__(binary_accuracy, name, dtype=dtype, threshold=float(threshold))
        self.threshold = float(threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the largest score is at the one-hot label's position: the mean of :func:`categorical_accuracy`
    (``keras.metrics.CategoricalAccuracy``). Logits or probabilities alike (the argmax is the same)."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the largest score is at the integer label: the mean of :func:`sparse_categorical_accuracy`
    (``keras.metrics.SparseCategoricalAccuracy``).

        >>> acc = SparseCategoricalAccuracy()
        >>> acc([2, 1], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.0]])
        0.5

    With ``sample_weight`` (one weight per sample) it is
    ``Σ wᵢ·matchᵢ / Σ wᵢ``. Labels ``(batch,)`` or ``(batch, 1)``; scores
    ``(batch, classes)``, logits or probabilities.
    """

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of :func:`mean_absolute_error` over all samples (``keras.metrics.MeanAbsoluteError``)."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name, dtype=dtype)


class MeanSquaredError(MeanMetricWrapper):
    """The mean of :func:`mean_squared_error` over all samples (``keras.metrics.MeanSquaredError``)."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name, dtype=dtype)


class RootMeanSquaredError(MeanMetricWrapper):
    """``√(mean of (y_true − y_pred)² over every entry seen)`` (``keras.metrics.RootMeanSquaredError``).

    The root is taken of the running mean, at ``result()``: not the mean of
    per-batch roots (which would depend on the batch size).
    """

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name, dtype=dtype)

    def result(self) -> "Result":
        return Result(np.sqrt(super().result()))


class MeanAbsolutePercentageError(MeanMetricWrapper):
    """The mean of :func:`mean_absolute_percentage_error` over all samples
    (``keras.metrics.MeanAbsolutePercentageError``), in percent."""

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, name, dtype=dtype)


_NEG_INF = -1e10   # Keras' NEG_INF: the score that keeps an entry out of the top k


class _ConfusionMetric(Metric):
    """Streaming counts of a confusion matrix at one or more thresholds (Keras 3's ``Precision`` / ``Recall``).

    ``update_state(y_true, y_pred, sample_weight=None)`` counts, per threshold ``t``, the entries with
    ``y_pred > t`` (predicted positive) against the labels (any non-zero is positive), each counting its
    ``sample_weight`` (broadcast to ``y_pred``'s shape); ``class_id`` keeps one column, ``top_k`` keeps the
    ``k`` largest scores of each row as the only candidate positives. The counts are float32 variables of
    shape ``(len(thresholds),)``, in :attr:`variables`; ``result()`` is one number for a single threshold
    (a float, 0 when nothing was counted), a float32 tensor with one value per threshold for a list.
    """

    _COUNTS = ()          # (variable name, label is positive, prediction is positive)

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(dtype=dtype, name=name or unique_name(to_snake_case(type(self).__name__)))
        self.init_thresholds = thresholds
        listed = isinstance(thresholds, (list, tuple, np.ndarray))
        values = [0.5 if top_k is None else _NEG_INF] if thresholds is None else \
            [float(t) for t in (thresholds if listed else [thresholds])]
        if thresholds is not None and any(not 0.0 <= t <= 1.0 for t in values):
            raise ValueError(f"Threshold values must be in [0, 1]. Received: {values}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
            raise ValueError(f"{type(self).__name__}: top_k must be a positive int or None, got {top_k!r}.")
        self.thresholds, self._listed = values, listed
        self.top_k, self.class_id = top_k, class_id
        for var_name, _, _ in self._COUNTS:
            setattr(self, var_name, self.add_variable(shape=(len(values),), initializer="zeros", name=var_name))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred, y_true = _squeeze_or_expand(_np(y_pred).astype(np.float64), _np(y_true))
        if self.class_id is not None:
            y_true, y_pred = y_true[..., self.class_id], y_pred[..., self.class_id]
        elif self.top_k is not None:
            kth = -np.sort(-y_pred, axis=-1)[..., self.top_k - 1:self.top_k] if y_pred.shape[-1] > self.top_k \
                else np.full(y_pred.shape[:-1] + (1,), -np.inf)
            y_pred = np.where(y_pred >= kth, y_pred, _NEG_INF)
        positive = y_true.astype(bool)
        weight = np.ones(y_pred.shape) if sample_weight is None else np.broadcast_to(
            _squeeze_or_expand(_np(sample_weight).astype(np.float64), y_pred)[0], y_pred.shape)
        predicted = y_pred[None] > np.asarray(self.thresholds).reshape((-1,) + (1,) * y_pred.ndim)
        for var_name, label, prediction in self._COUNTS:
            hits = (positive == label) & (predicted == prediction)
            counts = (hits * weight).reshape(len(self.thresholds), -1).sum(axis=1)
            getattr(self, var_name).assign_add(counts.astype(self.dtype))

    def _ratio(self, hits, misses):
        hits, misses = hits.numpy().astype(np.float64), misses.numpy().astype(np.float64)
        total = hits + misses
        value = np.where(total > 0, hits / np.where(total > 0, total, 1.0), 0.0)
        return Tensor(value.astype(self.dtype)) if self._listed else Result(np.float32(value[0]))

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_ConfusionMetric):
    """The fraction of predicted positives that are positive, ``tp / (tp + fp)``, streamed over batches
    (``keras.metrics.Precision``): ``Precision()([0, 1, 1, 1], [1, 1, 0, 1])`` is 2/3.

    Args:
        thresholds: a score above it is a predicted positive (default 0.5); a list gives one precision per
            threshold (a tensor).
        top_k: only the ``k`` largest scores of each row can be positive.
        class_id: measure one class (one column) of a multi-label output.

    Its state, in :attr:`variables`: ``true_positives`` and ``false_positives``.
    """

    _COUNTS = (("true_positives", True, True), ("false_positives", False, True))

    def result(self):
        return self._ratio(self.true_positives, self.false_positives)


class Recall(_ConfusionMetric):
    """The fraction of positives predicted positive, ``tp / (tp + fn)``, streamed over batches
    (``keras.metrics.Recall``), with :class:`Precision`'s arguments.

    Its state, in :attr:`variables`: ``true_positives`` and ``false_negatives``.
    """

    _COUNTS = (("true_positives", True, True), ("false_negatives", True, False))

    def result(self):
        return self._ratio(self.true_positives, self.false_negatives)


_BY_NAME = {f.__name__: f for f in (binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
                                    mean_absolute_error, mean_squared_error, mean_absolute_percentage_error)}
_BY_NAME.update({"mae": mean_absolute_error, "mse": mean_squared_error, "mape": mean_absolute_percentage_error,
                 "root_mean_squared_error": RootMeanSquaredError, "precision": Precision, "recall": Recall})

_METHODS = ("update_state", "result", "reset_state")


def _key(name: str):
    """The ``_BY_NAME`` key for ``name`` (any case, or a class name such as ``"MeanSquaredError"``), or None."""
    for key in (name.lower(), to_snake_case(name)):
        if key in _BY_NAME:
            return key
    return None


def _is_metric(obj) -> bool:
    """A :class:`Metric`, or any object with ``update_state``, ``result`` and ``reset_state`` methods."""
    return isinstance(obj, Metric) or (not isinstance(obj, (str, type, list, tuple, dict)) and all(
        callable(getattr(obj, method, None)) for method in _METHODS))


def _is_metric_class(obj) -> bool:
    """A class whose instances are metrics (``metrics=[CountCorrect]`` makes one, as Keras 3)."""
    return isinstance(obj, type) and (issubclass(obj, Metric) or all(
        callable(getattr(obj, method, None)) for method in _METHODS))


def _named(metric):
    """``metric`` itself, given the snake-case name of its class when it has no ``name`` (the log key)."""
    if not isinstance(getattr(metric, "name", None), str) or not metric.name:
        try:
            metric.name = to_snake_case(type(metric).__name__)
        except AttributeError:
            raise TypeError(f"The metric object {type(metric).__name__} has no name to log it under, and one cannot "
                            "be set on it. Give it a name attribute (self.name = 'my_metric').") from None
    return metric


_NOT_A_METRIC = ("A metric must be a name or a function f(y_true, y_pred) returning one value per sample, or a metric "
                 "object (an adv.metrics.Metric, or any object with update_state, result and reset_state methods); "
                 "got {}.")


def check(identifier) -> None:
    """Raise now (as ``compile`` should) if ``identifier`` can never be a metric; ``get`` resolves it later."""
    if _is_metric(identifier) or _is_metric_class(identifier) or callable(identifier):
        return
    if isinstance(identifier, str):
        if identifier.lower() in ("accuracy", "acc") or _key(identifier):
            return
        raise ValueError(f"Unknown metric {identifier!r}. Use 'accuracy', one of {sorted(_BY_NAME)}, "
                         "or a function f(y_true, y_pred) returning one value per sample.")
    raise TypeError(_NOT_A_METRIC.format(type(identifier).__name__))


def get(identifier, y_true=None, y_pred=None):
    """A metric from a name, a function ``fn(y_true, y_pred) -> per-sample values``, or a metric object.

    A metric object (a :class:`Metric`, or any object with ``update_state``,
    ``result`` and ``reset_state``) is used as it is, so the object you made
    holds the state; one without a ``name`` is given its class name in snake
    case. A metric class is instantiated. ``"accuracy"`` / ``"acc"`` needs
    example ``y_true`` and ``y_pred`` to choose its flavour.
    """
    if _is_metric(identifier):
        return _named(identifier)
    if _is_metric_class(identifier):
        return _named(identifier())
    if isinstance(identifier, str):
        check(identifier)
        key = identifier.lower()
        if key in ("accuracy", "acc"):
            if y_true is None or y_pred is None:
                raise ValueError("metrics.get('accuracy') needs example y_true and y_pred to pick its flavour.")
            t, p = _np(y_true), _np(y_pred)
            if p.shape[-1:] == (1,) or p.ndim == 1:
                fn = binary_accuracy
            elif t.ndim < p.ndim or t.shape[-1] == 1:
                fn = sparse_categorical_accuracy
            else:
                fn = categorical_accuracy
            return MeanMetricWrapper(fn, name=identifier)
        found = _BY_NAME[_key(identifier)]
        return found(name=identifier) if isinstance(found, type) else MeanMetricWrapper(found, name=identifier)
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise TypeError(_NOT_A_METRIC.format(type(identifier).__name__))
