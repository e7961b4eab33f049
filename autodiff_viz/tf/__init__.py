"""The TensorFlow bridge: see and explain a real TensorFlow gradient; take a model on to Keras.

Only ``adv.tf`` (loaded on first use) imports TensorFlow (``pip install autodiff_viz[tf]``);
the rest of the package never does.

    >>> import autodiff_viz as adv
    >>> with adv.tf.record() as rec:
    ...     with tf.GradientTape() as tape:
    ...         loss = tf.reduce_mean((model(x) - y) ** 2)
    ...     grads = tape.gradient(loss, model.trainable_variables)
    >>> adv.show(rec.trace(loss, model))               # TensorFlow's own gradients, our explorer
    >>> rec.explain(loss, model.layers[-1].kernel)      # why is the gradient None?

* :func:`record` — a :class:`Recording` of every eager op (TensorFlow's op
  callbacks, as ``tf.debugging.enable_check_numerics`` uses), with the
  user's ``file:line``, the variable the line assigns, shapes, dtypes, the
  tapes that recorded it, escapes to numpy, re-wraps, variable reads,
  creations and assignments, Keras layer scopes and every ``tape.gradient``.
* ``rec.trace(target, sources)`` — an :class:`autodiff_viz.Trace` whose
  gradients are TensorFlow's (the same tape, asked again), with each op's
  own TensorFlow VJP on every edge and the rule table's factor text.
* ``rec.explain(target, source)`` — why ``tape.gradient`` returned None.
* ``rec.compare`` — exercise mode on a TensorFlow worksheet.
* :func:`to_keras` / :func:`load_from` — an autodiff_viz model as a Keras 3
  model with the same weights, and back.
"""
from __future__ import annotations

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

try:
    import tensorflow as _tf  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without TensorFlow
    raise ImportError(
        "autodiff_viz.tf needs TensorFlow. Install the CPU build with: pip install 'autodiff_viz[tf]' "
        "(or pip install tensorflow-cpu==2.21.0)."
    ) from exc

from .explain import REASONS
from .export import ExportError, keras_layer, load_from, to_keras
from .record import Recording, record

__all__ = ["record", "Recording", "REASONS", "to_keras", "load_from", "keras_layer", "ExportError"]
