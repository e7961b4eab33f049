"""Metrics for ``compile(metrics=[...])``: accuracy in its Keras flavours, and running means.

Metrics are measured, never differentiated, so they work on numpy values.
``"accuracy"`` picks its flavour from the shapes, as Keras does: one output
column → binary (threshold 0.5), integer labels against class scores →
sparse categorical, one-hot labels → categorical.
"""
from __future__ import annotations

import numpy as np

from .tensor import Tensor


def _np(x) -> np.ndarray:
    return np.asarray(x._value if isinstance(x, Tensor) else x)


def binary_accuracy(y_true, y_pred, threshold=0.5) -> np.ndarray:
    """Per sample: the fraction of entries where ``(y_pred > threshold) == y_true``."""
    y_true, y_pred = _np(y_true), _np(y_pred)
    if y_true.ndim == y_pred.ndim - 1:
        y_true = y_true[..., None]
    return np.mean((y_pred > threshold) == (y_true > 0.5), axis=-1)


def categorical_accuracy(y_true, y_pred) -> np.ndarray:
    """Per sample: 1 where the largest score is at the one-hot label's position."""
    return (np.argmax(_np(y_true), axis=-1) == np.argmax(_np(y_pred), axis=-1)).astype(np.float64)


def sparse_categorical_accuracy(y_true, y_pred) -> np.ndarray:
    """Per sample: 1 where the largest score is at the integer label."""
    y_true, y_pred = _np(y_true), _np(y_pred)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    return (np.argmax(y_pred, axis=-1) == y_true.astype(np.int64)).astype(np.float64)


class Mean:
    """A running (weighted) mean: ``update_state(values)``, ``result()``, ``reset_state()``."""

    def __init__(self, name="mean"):
        self.name = name
        self.reset_state()

    def reset_state(self):
        self.total, self.count = 0.0, 0.0

    def update_state(self, values, weight=None):
        values = _np(values).astype(np.float64)
        if weight is None:
            self.total += float(values.sum())
            self.count += values.size
        else:
            self.total += float(values.mean()) * weight
            self.count += weight

    def result(self) -> float:
        return self.total / self.count if self.count else 0.0


class MeanMetricWrapper(Mean):
    """The mean over all samples of a per-sample metric function ``fn(y_true, y_pred)``."""

    def __init__(self, fn, name=None):
        super().__init__(name or fn.__name__)
        self.fn = fn

    def update_state(self, y_true, y_pred):
        super().update_state(self.fn(y_true, y_pred))


_BY_NAME = {f.__name__: f for f in (binary_accuracy, categorical_accuracy, sparse_categorical_accuracy)}


def check(identifier) -> None:
    """Raise now (as ``compile`` should) if ``identifier`` can never be a metric; ``get`` resolves it later."""
    if isinstance(identifier, Mean) or callable(identifier):
        return
    if isinstance(identifier, str):
        if identifier.lower() in ("accuracy", "acc") or identifier.lower() in _BY_NAME:
            return
        raise ValueError(f"Unknown metric {identifier!r}. Use 'accuracy', one of {sorted(_BY_NAME)}, "
                         "or a function f(y_true, y_pred) returning one value per sample.")
    raise TypeError(f"A metric must be a name or a function, got {type(identifier).__name__}.")


def get(identifier, y_true=None, y_pred=None) -> MeanMetricWrapper:
    """A metric from a name, a function ``fn(y_true, y_pred) -> per-sample values``, or a metric object.

    ``"accuracy"`` / ``"acc"`` needs example ``y_true`` and ``y_pred`` to choose its flavour.
    """
    if isinstance(identifier, Mean):
        return identifier
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
        return MeanMetricWrapper(_BY_NAME[key], name=identifier)
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise TypeError(f"A metric must be a name or a function, got {type(identifier).__name__}.")
