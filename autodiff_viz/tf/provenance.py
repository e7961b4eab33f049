"""What a TensorFlow recording keeps besides the ops: escapes of variables, numpy functions, wiring, frozen layers.

TensorFlow's op callbacks (what :mod:`autodiff_viz.tf.record` listens to) see
every eager op, but four things a why-None needs pass beside them:

* ``w.numpy()`` (also ``np.asarray(w)``, ``float(w)``) on a *variable*: the read
  is an op, but the escape of its value happens inside TensorFlow, where the
  tensor's own escape hook does not count it as the user's. Noted here as an
  escape of the variable, so ``tf.constant(np.tanh(w.numpy()))`` is a trip
  through numpy like any other.
* ``tf.numpy_function`` / ``tf.py_function``: the Python body runs through a
  path no op callback sees, so its output looked like a leaf. Noted here as an
  op of that name (TensorFlow registers no gradient for ``numpy_function``; a
  ``py_function`` whose body leaves TensorFlow gives None too).
* a Keras layer called on symbolic tensors (``x = layer(inputs)`` while a functional model is wired), with
  the user's line: the eager ops of a ``fit`` step all sit on the ``fit`` line, and this is where the user
  chose what the model uses of the layer (``bert(ids)[0]`` drops the pooled output).
* ``layer.trainable = ...`` on a Keras layer, with the user's line: Keras 3 leaves
  the variables themselves trainable, so the tape still differentiates them,
  but the layer's weights are out of ``trainable_variables`` and an optimizer
  skips them. A layer frozen before the recording has no line: "before the
  recording".

The hooks are installed with the first active recording and removed with
the last (:func:`start`, :func:`stop`, called by the recording's ``__enter__``
/ ``__exit__``).
"""
from __future__ import annotations

import functools
import sys
import weakref

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import resource_variable_ops as _rvo

from ..bridges import frames

_ACTIVE: list = []
_SAVED: list = []            # (owner, name, original)
_VARIABLE_ESCAPES = {"numpy": "numpy()", "__array__": "np.asarray()", "__float__": "float()"}
# Code the learner did not write. PACKAGES: TensorFlow, Keras and their helpers, autodiff_viz — a hook called from
# there is the framework at work, not the learner. LIBRARY adds numpy, the standard library and every installed
# package (transformers', keras_hub's code is not the learner's either): the learner's line is the first outside it.
PACKAGES = frames.Code(*(frames.folder(m) for m in (tf, sys.modules["autodiff_viz"]) + tuple(
    sys.modules[n] for n in ("keras", "tf_keras", "absl", "wrapt") if getattr(sys.modules.get(n), "__file__", None))))
LIBRARY = frames.Code(*PACKAGES.dirs, frames.folder(np), *frames.installed())


class Provenance:
    """The frozen-layer events of one recording: ``[(layer, trainable, user line)]``."""

    def __init__(self, rec):
        self._rec = weakref.ref(rec)
        self.trainable_set: list = []
        self.wired: list = []             # (layer, user line): a layer called on symbolic tensors

    @property
    def rec(self):
        return self._rec()

    def wired_at(self, holds):
        """The user's line that last called, on symbolic tensors, a layer for which ``holds(layer)`` is true."""
        return next((loc for lay, loc in reversed(self.wired) if holds(lay)), None)

    def frozen_at(self, layer):
        """The user's line that last set ``layer.trainable`` in the recording, or None."""
        return next((loc for lay, _, loc in reversed(self.trainable_set) if lay is layer), None)


def _recordings():
    return [r for r in (p.rec for p in _ACTIVE) if r is not None and r._active and not r._busy]


def _variable_escape(name):
    def make(original):
        @functools.wraps(original)
        def call(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if _ACTIVE and PACKAGES.called_by_user():
                for rec in _recordings():
                    rec._escaped(self, _VARIABLE_ESCAPES[name], out)
            return out
        return call
    return make


def _python_function(label):
    def make(original):
        @functools.wraps(original)
        def call(func, inp, *args, **kwargs):
            out = original(func, inp, *args, **kwargs)
            if _ACTIVE and PACKAGES.called_by_user():
                loc = LIBRARY.user_line()
                ins = [t for t in tf.nest.flatten(inp) if hasattr(t, "_id") or hasattr(t, "handle")]
                outs = [t for t in tf.nest.flatten(out) if hasattr(t, "_id")]
                for rec in _recordings():
                    rec._note(label, "op", ins, outs, {"function": getattr(func, "__name__", "?")}, loc=loc)
            return out
        return call
    return make


def _trainable_property(prop):
    def setter(self, value):
        prop.fset(self, value)
        if _ACTIVE:
            loc = LIBRARY.user_line()
            for p in _ACTIVE:
                p.trainable_set.append((self, bool(value), loc))
    return property(prop.fget, setter, prop.fdel, prop.__doc__)


def _layer_call(original):
    """Keras' ``Layer.__call__``, noting a call on symbolic tensors (the wiring of a functional model) and
    marking the frame of an eager call for :meth:`frames.Code.user_line`: every op of the layer finds the learner's
    line where the first one left it, instead of walking the forty frames above it each time."""
    @functools.wraps(original)
    def __call__(self, *args, **kwargs):
        if not _ACTIVE:
            return original(self, *args, **kwargs)
        if args and _is_symbolic(args[0]):
            loc = LIBRARY.user_line()
            for p in _ACTIVE:
                p.wired.append((self, loc))
            return original(self, *args, **kwargs)
        here = sys._getframe()
        _MARKS[here] = frames.UNKNOWN
        try:
            return original(self, *args, **kwargs)
        finally:
            _MARKS.pop(here, None)
            del here
    return __call__


_MARKS = LIBRARY.marking(_layer_call(lambda *a, **k: None).__code__)


def _is_symbolic(x) -> bool:
    first = x[0] if isinstance(x, (list, tuple)) and x else next(iter(x.values()), None) if isinstance(x, dict) \
        else x
    return type(first).__name__ == "KerasTensor"


def _install():
    import keras
    for name in _VARIABLE_ESCAPES:
        if name in _rvo.BaseResourceVariable.__dict__:
            _patch(_rvo.BaseResourceVariable, name, _variable_escape(name))
    for name in ("numpy", "__array__"):
        if name in keras.Variable.__dict__:
            _patch(keras.Variable, name, _variable_escape(name))
    _patch(tf, "numpy_function", _python_function("tf.numpy_function"))
    _patch(tf, "py_function", _python_function("tf.py_function"))
    layer = keras.layers.Layer
    owner = next(c for c in layer.__mro__ if "trainable" in c.__dict__)
    _SAVED.append((owner, "trainable", owner.__dict__["trainable"]))
    owner.trainable = _trainable_property(owner.__dict__["trainable"])
    _patch(next(c for c in layer.__mro__ if "__call__" in c.__dict__), "__call__", _layer_call)


def _patch(owner, name, make):
    original = owner.__dict__[name] if name in getattr(owner, "__dict__", {}) else getattr(owner, name)
    _SAVED.append((owner, name, original))
    setattr(owner, name, make(original))


def start(rec) -> Provenance:
    """A :class:`Provenance` for recording ``rec``; the hooks go in with the first active recording."""
    if not _ACTIVE:
        _install()
    p = Provenance(rec)
    _ACTIVE.append(p)
    return p


def stop(p: Provenance) -> None:
    """Stop noting for ``p``; the hooks come out with the last active recording."""
    if p in _ACTIVE:
        _ACTIVE.remove(p)
    if not _ACTIVE:
        for owner, name, original in reversed(_SAVED):
            setattr(owner, name, original)
        _SAVED.clear()
