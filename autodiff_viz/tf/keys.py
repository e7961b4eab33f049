"""What every part of the TensorFlow bridge shares about TensorFlow's tensors: their identity and their dtypes.

Kept apart from the recorder so the trace and the diagnosis, which the
recorder calls, need not import it.
"""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python.eager import backprop as _backprop

from ..diagnosis.reasons import wrong_source

_TRAINABLE = (tf.resource, tf.variant)
ORIGINAL_GRADIENT = _backprop.GradientTape.gradient     # unwrapped, for the trace's own questions


def trainable_dtype(dtype) -> bool:
    """TensorFlow's rule for what a tape can differentiate: floating, complex, resource, variant (asked of the
    inputs of every recorded op, so the answer is kept per dtype)."""
    known = _TRAINABLE_BY_DTYPE.get(dtype)
    if known is None:
        as_tf = dtype if isinstance(dtype, tf.DType) else tf.as_dtype(dtype)   # Keras gives dtypes as strings
        known = _TRAINABLE_BY_DTYPE[dtype] = as_tf.is_floating or as_tf.is_complex or as_tf in _TRAINABLE
    return known


_TRAINABLE_BY_DTYPE: dict = {}


def tensor_key(t) -> int:
    """TensorFlow's own id of a tensor (``t._id``); a variable is known by its handle's."""
    handle = getattr(t, "handle", None)
    if handle is not None and not isinstance(t, tf.Tensor):
        return handle._id
    return t._id


def unusable_sources(sources) -> list[str]:
    """One sentence per source TensorFlow's tape cannot differentiate with respect to (it knows tensors and
    variables only): what it is and what to pass instead (:func:`~autodiff_viz.diagnosis.reasons.wrong_source`)."""
    return [wrong_source(t, "tf") for t in tf.nest.flatten(sources, expand_composites=False)
            if not hasattr(t, "_id") and not hasattr(t, "handle")]
