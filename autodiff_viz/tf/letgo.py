"""Values a recorded TensorFlow step made and nobody holds: the recording lets go of them too, and gets them back.

A plain training step frees what an op computed as soon as nothing refers to it: the gates of an LSTM step once
the next step read them, a Dense layer's pre-activation once its activation ran. ``tf.GradientTape`` keeps only
what each op's gradient needs (a ``MatMul``'s inputs, a ``Tanh``'s output; an ``AddV2`` keeps neither). A
recording that held every value would add them all to the step's peak: on the small Keras models of
``benchmarks/real_models.py`` (an LSTM, keras.io's transformer) that was a fifth to a third of it.

So the record of an op that a second run reproduces — a registered TensorFlow op that is not stateful (TensorFlow
marks random ops with hidden state, variable reads and writes, queues … as stateful; the stateless random ops
Keras 3 uses take their seed as an input), whose inputs are all tensors, none of them a variable's handle — keeps
its outputs as :class:`Unkept`: their tensor id and a weak reference. An op's inputs that are such values are kept
the same way. Whoever else holds a value — the tape (its saved tensors), the learner (``logits``), a Keras layer —
keeps it alive, and the record reads it through the reference; a value nobody holds is freed as in a plain step.

The first question asked of the recording (a trace, an explanation, a comparison — anything that reads
:attr:`Recording.ops`) settles it (:func:`settle`): records are read in order, and an op whose output was freed
runs again on the inputs it had (values the recording kept, or ones settled before it) with the same attributes.
TensorFlow's tensors are immutable and a variable's read keeps its value when the variable is written later
(copy on write), so the inputs are the step's own. The value computed again is a new tensor with a new id; the
tape knows the original id, so a gradient asked for it asks with that id (:meth:`Settled.taped`). A trace checks
that running the target's op again on the settled values gives the target's value bit for bit
(:meth:`Settled.check`): CPU kernels are deterministic, and if one was not, the trace says so with the way out,
``adv.tf.record(keep_values=True)``, rather than show values the step never had.
"""
from __future__ import annotations

import weakref

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context as _context
from tensorflow.python.eager import execute as _execute
from tensorflow.python.framework import op_def_registry as _op_defs
from tensorflow.python.types.internal import NativeObject as _NativeObject

_DT_RESOURCE = tf.resource.as_datatype_enum
_STATELESS: dict = {}      # op type -> True when TensorFlow registers it and it is not stateful


class Unkept:
    """An op's output the recording does not hold: its tensor id and a weak reference to the tensor."""

    __slots__ = ("_id", "ref")

    def __init__(self, t):
        self._id = t._id
        self.ref = weakref.ref(t)


def runs_again(op_type: str, inputs, n_inputs: int, outputs, n_outputs: int) -> bool:
    """Whether running ``op_type`` again on the same inputs gives the same outputs, and the record has all it
    needs for that: every input and output a tensor (``n_*``: how many the op had), the op registered and not
    stateful. An op given a variable's handle reads the variable inside TensorFlow, so it does not run again to
    the same values after an update: the caller, which has looked for handles already, rules it out."""
    if len(inputs) != n_inputs or len(outputs) != n_outputs or not outputs:
        return False
    ok = _STATELESS.get(op_type)
    if ok is None:
        op_def = _op_defs.get(op_type)
        ok = _STATELESS[op_type] = op_def is not None and not op_def.is_stateful
    return ok


class Settled:
    """What :func:`settle` did: ``{id of a value computed again: the id the step's tape knows it by}``."""

    def __init__(self):
        self.was: dict = {}
        self.upto = 0             # records before this index hold no Unkept any more

    def taped(self, t):
        """``t``, or, when it was computed again, a stand-in with the id the tape recorded (a gradient asked of
        the tape for a value computed again asks for the step's own value)."""
        old = self.was.get(getattr(t, "_id", None))
        return t if old is None else _TapeId(old, t)

    def check(self, rec, target) -> None:
        """Raise when running ``target``'s op again on the settled values does not give ``target`` bit for bit."""
        if not self.was:
            return
        op = rec.producer(target)
        if op is None or op.kind != "op" or any(t._datatype_enum() == _DT_RESOURCE for t in op.inputs) \
                or not runs_again(op.name, op.inputs, len(op.inputs), op.outputs, len(op.outputs)):
            return
        position = next((k for k, o in enumerate(op.outputs) if o._id == target._id), None)
        if position is None:
            return
        again = _run(op)[position]
        if np.array_equal(again.numpy(), target.numpy(), equal_nan=again.dtype.is_floating):
            return
        raise RuntimeError(
            f"adv.tf.record: the values this recording let go of were computed again for the trace, and "
            f"{op.name} on them does not give the target's value bit for bit (TensorFlow ran some op "
            "differently the second time). The trace would show values the step never had. Fix: record the step "
            "with adv.tf.record(keep_values=True), which keeps every value the step made (more memory while "
            "it runs).")


class _TapeId(_NativeObject):
    """A value computed again, presented to ``GradientTape.gradient`` under the id the tape recorded (the tape
    reads a source's ``_id``; TensorFlow's check that a source is a tensor accepts its ``NativeObject`` types)."""

    __slots__ = ("_id", "dtype", "shape")

    def __init__(self, old_id, t):
        self._id, self.dtype, self.shape = old_id, t.dtype, t.shape


def _run(op):
    """Run a recorded op again. An attribute the call left to its default reaches the op callback as None
    (``tf.squeeze(x)``'s ``squeeze_dims``), which ``execute`` refuses: left out, it takes the default again."""
    attrs = op.attrs
    if any(v is None for v in attrs[1::2]):
        attrs = tuple(v for k in range(0, len(attrs), 2) if attrs[k + 1] is not None for v in attrs[k:k + 2])
    return _execute.execute(op.name, len(op.outputs), list(op.inputs), attrs, _context.context())


def settle(rec) -> None:
    """Put a tensor back in every record that holds an :class:`Unkept`: the tensor itself while someone holds
    it, else its op run again (records in order, so an op's inputs are settled before it runs)."""
    ops, done = rec._ops, rec._settled
    now: dict = {}                  # the step's id of a value -> its tensor (itself, or computed again)

    def back(x):
        if type(x) is not Unkept:
            return x
        t = now.get(x._id)
        return x.ref() if t is None else t

    for op in ops[done.upto:]:
        if any(type(x) is Unkept for x in op.inputs):
            op.inputs = tuple(back(x) for x in op.inputs)
        if not any(type(o) is Unkept for o in op.outputs):
            continue
        outs = [back(o) for o in op.outputs]
        if any(o is None for o in outs):
            if any(x is None for x in op.inputs):
                raise RuntimeError(f"adv.tf.record: an input of {op.name} (record {op.index}) was let go of and "
                                   "could not be computed again. Fix: record the step with "
                                   "adv.tf.record(keep_values=True).")
            again = _run(op)
            for k, o in enumerate(outs):
                if o is None:
                    outs[k] = again[k]
                    rec._computed_again(op.outputs[k]._id, again[k])
                    done.was[again[k]._id] = op.outputs[k]._id
        for old, new in zip(op.outputs, outs):
            now[old._id] = new
        op.outputs = tuple(outs)
    done.upto = len(ops)
    rec._unkept.clear()
