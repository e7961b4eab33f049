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
    """TensorFlow's rule for what a tape can differentiate: floating, complex, resource, variant."""
    if not isinstance(dtype, tf.DType):
        dtype = tf.as_dtype(dtype)       # Keras variables give their dtype as a string
    return dtype.is_floating or dtype.is_complex or dtype in _TRAINABLE


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
