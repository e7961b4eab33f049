"""What a recording of another framework is, whichever the framework: the surface ``adv.torch`` and ``adv.tf`` share.

``adv.torch.record()`` and ``adv.tf.record()`` watch different machinery
(a ``TorchFunctionMode``; TensorFlow's op callbacks and tape hooks), but a
learner uses the two records the same way: ``len(rec)``, ``repr(rec)``,
``rec.show(loss)`` and ``rec.compare(loss, {"h": dh, ...})``. Those are
written once here, as is the body of ``compare``: which tensor each hand
key means, and one row per key along the backward pass, where a gradient the
framework gives as None carries the bridge's own ``explain`` (the reason,
the learner's line and the fix) instead of a generic "does not depend".

This module imports neither torch nor TensorFlow (each bridge passes in
what is framework-specific: how to tell a tensor, its key, its numbers),
and sits in the bridges layer, below ``torch/`` and ``tf/``.
"""
from __future__ import annotations

from ..base import state
from ..records.compare import _factors, along_backward, compare_arrays, unknown_name


class Recording:
    """The part of a bridge's recording that does not depend on the framework (see the bridges' ``Recording``).

    A subclass sets ``framework`` (``"torch"``, ``"tf"``), keeps its records
    in ``self.ops`` (each with a ``kind``), and implements ``trace`` and
    ``_compare(target, hand, rtol, atol, namespace, output_gradients)``.
    """

    framework = ""

    def compare(self, target, hand: dict, rtol=1e-5, atol=1e-8, output_gradients=None):
        """Hand-derived gradients against the framework's, along the backward pass (as ``tape.compare``).

        ``hand``: ``{name or tensor: your gradient}``; a name is one of your
        variables holding a recorded tensor (``"h"``) or the variable a
        recorded line assigned. ``output_gradients=dout`` seeds a non-scalar
        target: every gradient is then of ``sum(target * dout)``, as
        ``tape.gradient(target, x, output_gradients=dout)`` and
        ``target.backward(dout)``. Changes nothing the framework keeps
        (no ``.grad``, no tape).
        """
        if not hand or not isinstance(hand, dict):
            raise TypeError("compare: pass a dict {name_or_tensor: hand_gradient, ...}.")
        frame = state.user_frame_object()       # the learner's names for the tensors ("h", "dz")
        namespace = {**frame.f_globals, **frame.f_locals} if frame is not None else {}
        return self._compare(target, hand, rtol, atol, namespace, output_gradients)

    def _compare(self, target, hand, rtol, atol, namespace, output_gradients):
        raise NotImplementedError

    def show(self, target, sources=None):
        """The explorer on this recording (``adv.show(rec.trace(target, sources))``)."""
        from ..views.widgets import show
        return show(self.trace(target, sources))

    def __len__(self):
        return len(self.ops)

    def __repr__(self):
        kinds = {}
        for op in self.ops:
            kinds[op.kind] = kinds.get(op.kind, 0) + 1
        return f"<adv.{self.framework}.Recording {len(self.ops)} records {kinds}>"


def hand_items(rec, hand: dict, namespace: dict, ops, is_tensor, key_of) -> list:
    """``[(label, tensor, hand value)]``: the recorded tensor each key of ``hand`` means.

    A tensor key is itself, labelled by the learner's variable holding it (or
    the recording's name for it); a name is a variable of ``namespace``
    holding a tensor the recording saw, else the first output of the op
    whose line assigned that name. ``is_tensor(v)`` tells the framework's
    tensors and variables; ``key_of(t)`` is the key the recorded ops use.
    """
    recorded = {key_of(t) for op in ops for t in op.inputs + op.outputs}
    named = {k: v for k, v in namespace.items() if not k.startswith("_") and is_tensor(v)}
    on_record = {k: v for k, v in named.items() if key_of(v) in recorded}
    items = []
    for key, value in hand.items():
        if isinstance(key, str):
            t = on_record.get(key)
            if t is None:
                t = next((out for op in ops for out in op.outputs[:1] if op.assigned == key), None)
            if t is None:
                raise unknown_name(key, set(on_record) | {op.assigned for op in ops if op.assigned},
                                   "in this recording")
            label = key
        elif is_tensor(key):
            t = key
            label = next((k for k, v in named.items() if v is t), None) or rec.name_of(t) or f"tensor {tuple(t.shape)}"
        else:
            raise TypeError(f"compare: a key must be a tensor or a variable's name, got {type(key).__name__}.")
        items.append((label, t, value))
    return items


def compared_rows(trace, items, grads, node_of, why_none, to_array, rtol, atol, framework: str):
    """The ``Comparison`` of ``items`` against the framework's ``grads`` (same order).

    ``node_of(t)``: the trace node id of a tensor; ``why_none(label, t)``: the
    bridge's :class:`~autodiff_viz.Explanation` of a gradient given as None
    (a loss computed under ``torch.no_grad()`` does depend on its logits, an
    unwatched ``tf.constant`` is used by the target: "does not depend" would
    mislead); ``to_array``: a framework tensor's numbers (hand values may be
    tensors too).
    """
    rows = []
    for (label, t, value), g in zip(items, grads):
        node_id = node_of(t)
        why = None
        if g is None:
            ex = why_none(label, t)
            why = f"{framework} has no gradient for it; rec.explain(target, it) says {ex.reason}: {ex.message}"
        rows.append(compare_arrays(label, node_id, to_array(value), None if g is None else to_array(g), rtol, atol,
                                   _factors(trace, node_id), tuple(t.shape), why))
    return along_backward(rows, trace)
