"""The TensorFlow bridge: see and explain a real TensorFlow gradient; take a model on to Keras.

Only ``adv.tf`` (loaded on first use) imports TensorFlow, 2.16 or newer (Keras 3): the
bridge uses the ``tensorflow`` or ``tensorflow-cpu`` already installed and installs
none itself (docs/install.md). The rest of the package never imports TensorFlow.

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

from ..bridges.requirements import installed as _installed
from ..bridges.requirements import too_old as _too_old

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")     # before TensorFlow loads: no C++ log lines on stderr

TENSORFLOW_FLOOR = (2, 16)      # Keras 3 arrived with TensorFlow 2.16
KERAS_FLOOR = (3, 7)            # the oldest Keras 3 the bridge is tested with (ci/constraints-min.txt)
_INSTALL = ("Install one TensorFlow distribution, 2.16 or newer: pip install 'tensorflow-cpu>=2.16' (CPU only) "
            "or pip install 'tensorflow>=2.16' (GPU-capable); the [tf] extra installs neither, so that it never "
            "adds a second one beside yours")

try:
    import tensorflow as _tf  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without TensorFlow
    raise ImportError(f"autodiff_viz.tf needs TensorFlow, which is not installed. {_INSTALL} "
                      "(see docs/install.md).") from exc


def _check_versions() -> None:
    """Refuse a TensorFlow older than 2.16, or one that runs Keras 2, naming the distribution to upgrade."""
    have = _installed("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos", "tensorflow-intel")
    name = have[0][0] if have else "tensorflow"
    error = _too_old("autodiff_viz.tf", f"TensorFlow ({name})", _tf.__version__, TENSORFLOW_FLOOR,
                     f"Upgrade the one you have: pip install -U '{name}>=2.16'")
    if error is None:
        import keras
        error = _too_old("autodiff_viz.tf", "Keras", keras.__version__, KERAS_FLOOR,
                         "Upgrade it: pip install -U 'keras>=3.7' (and unset TF_USE_LEGACY_KERAS "
                         "if it is set)")
    if error is not None:
        raise error


_check_versions()

from .explain import REASONS
from .export import ExportError, keras_layer, load_from, to_keras
from .record import Recording, record

__all__ = ["record", "Recording", "REASONS", "to_keras", "load_from", "keras_layer", "ExportError"]
