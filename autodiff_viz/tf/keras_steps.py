"""Keras' own training machinery under a recording: its step functions run eagerly, its optimizer is one record.

``model.fit`` / ``evaluate`` / ``predict`` build a ``tf.function`` step that would reach the recording as one
opaque op; under a recording they are built eager (:func:`keras_step`), so the forward pass, the loss and the
gradient call are recorded op by op, and dropped when the last recording ends (:func:`drop_eager_steps`). An
optimizer's ``apply`` is one ``update`` record (:func:`keras_update`), and its "No gradients provided" error or
warning says why (:func:`why_no_gradients`). :mod:`autodiff_viz.tf.record` installs these wrappers with its
others, passing ``recordings()``: the recordings active in this thread.
"""
from __future__ import annotations

import contextlib
import functools
import warnings
import weakref

import tensorflow as tf

from .keys import tensor_key

_EAGER_STEPS: dict = {}     # id(model) -> (weak model, {attribute: the step function built for a recording})


def keras_step(attribute, recordings):
    """``model.fit``/``evaluate``/``predict`` under a recording run their step eagerly, as with
    ``run_eagerly=True``, so that the recording sees the forward pass, the loss and the gradient call op by op
    (a ``tf.function`` step would reach it as one opaque op, and a ``None`` gradient inside it could not be
    explained). When the last recording ends, the steps built for it are dropped (:func:`drop_eager_steps`):
    the next call builds the step the model's own settings ask for. A model compiled with
    ``run_eagerly=True`` is left alone. ``recordings()``: the recordings active in this thread."""
    def patch(original):
        @functools.wraps(original)
        def call(self, force=False):
            entry = _EAGER_STEPS.get(id(self))
            if not recordings() or self._run_eagerly or (
                    entry is not None and entry[1].get(attribute) is getattr(self, attribute, None)):
                return original(self, force)
            self._run_eagerly = True
            try:
                original(self, force=True)
            finally:
                self._run_eagerly = False
            if entry is None:
                entry = _EAGER_STEPS[id(self)] = (weakref.ref(self), {})
            entry[1][attribute] = getattr(self, attribute)
            return entry[1][attribute]
        return call
    return patch


def drop_eager_steps():
    for model_ref, steps in _EAGER_STEPS.values():
        model = model_ref()
        for attribute, fn in steps.items():
            if model is not None and getattr(model, attribute, None) is fn:
                setattr(model, attribute, None)
    _EAGER_STEPS.clear()


def keras_update(original, recordings):
    """A Keras optimizer's ``apply`` (``apply_gradients`` calls it): one ``update`` record, its own ops unrecorded.

    Adam's step is a dozen ops per variable (moments, bias correction, the assignment): the optimizer's
    business, not the learner's graph, and as costly to record as the forward pass. The recording notes
    which variables the update wrote (so :meth:`Recording.as_at` can show a trace the values the backward
    pass saw) and is paused while it runs. ``recordings()``: the recordings active in this thread.
    """
    @functools.wraps(original)
    def call(self, grads, trainable_variables=None):
        recs = recordings()
        if not recs:
            return original(self, grads, trainable_variables)
        if trainable_variables is not None:
            trainable_variables = list(trainable_variables)
        grads = list(grads)
        variables = trainable_variables if trainable_variables is not None else \
            list(getattr(self, "_trainable_variables", None) or ())
        why = why_no_gradients(recs[-1], grads, variables) if any(g is None for g in grads) else ""
        for rec in recs:
            rec._note(f"{type(self).__name__}.apply", "update",
                      [v.handle for v in variables if hasattr(getattr(v, "handle", None), "_id")], [],
                      {"optimizer": self, "variables": variables})
            rec._busy = True
        try:
            if not why:
                return original(self, grads, trainable_variables)
            with _explained_warnings("Gradients do not exist", why):
                try:
                    return original(self, grads, trainable_variables)
                except ValueError as err:
                    if "No gradients provided" not in str(err):
                        raise
                    raise ValueError(f"{err}{why}") from err
        finally:
            for rec in recs:
                rec._busy = False
    return call


def why_no_gradients(rec, grads, variables) -> str:
    """Why the variables whose gradient is None got none, for the optimizer's own error or warning ("No
    gradients provided for any variable", "Gradients do not exist for variables …"): ``fit`` users hold no
    tape to ask. The target is that of the last recorded ``tape.gradient`` over those variables; variables
    with the same reason and line are named together, each group with its explanation."""
    missing = [v for g, v in zip(grads, variables) if g is None]
    keys = {tensor_key(v) for v in missing}
    call = next((op for op in reversed(rec.ops) if op.kind == "gradient" and op.inputs and
                 keys & {tensor_key(s) for s in tf.nest.flatten(op.extra.get("sources"))
                         if hasattr(s, "_id") or hasattr(s, "handle")}), None)
    if call is None:
        return ""
    groups: dict = {}
    for v in missing:
        try:
            ex = rec.explain(call.extra["target"], v)
        except (TypeError, ValueError):
            continue
        groups.setdefault((ex.reason, ex.location), (ex, []))[1].append(getattr(v, "path", None) or v.name)
    parts = [f"{', '.join(names)} — {ex.reason}: {ex.message}" for ex, names in groups.values()]
    return "\nWhy (adv.tf.record):\n" + "\n".join(parts) if parts else ""


@contextlib.contextmanager
def _explained_warnings(starts: str, why: str):
    """Warnings raised inside the block are raised again after it; those that start with ``starts`` end with
    ``why``."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        for w in caught:
            text = str(w.message)
            warnings.warn_explicit(f"{text}{why}" if text.startswith(starts) else w.message, w.category,
                                   w.filename, w.lineno)
