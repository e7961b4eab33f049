"""Why does ``tape.gradient`` return None in TensorFlow? The diagnosis, with the user's line.

:meth:`Recording.explain` first asks TensorFlow (the same tape the user
asked, whose record the recording kept) whether the gradient is None; when
it is, it walks the recorded history of the target back towards the source
and names the first place where the gradient stops, with the line of code
and a fix. The reasons are the engine's (``adv.diagnosis.REASONS``) plus
three that only TensorFlow has:

==========================  ============================================================
``connected``               the gradient is not None
``not_watched``             the tape never watched the source: a ``tf.constant`` without
                            ``tape.watch``, a variable with ``trainable=False``, or a tape
                            opened with ``watch_accessed_variables=False``
``computed_outside_tape``   the target, or an op on the path, ran while the tape was not
                            recording (before the ``with``, after it, under
                            ``tape.stop_recording()``, or outside the recording)
``left_the_tape``           a value on the path became numpy / a Python number
                            (``.numpy()``, ``float()``, ``np.*``) and came back as a constant
``non_differentiable_op``   an op without a gradient on the path (``tf.argmax``,
                            ``tf.round``, comparisons, ``tf.stop_gradient``)
``integer_dtype``           the source or a value on the path is an integer tensor
``not_used``                the target does not depend on the source at all
``new_variable``            a ``tf.Variable`` was made from a value on the path: its
                            initial value is copied, not differentiated
``assigned_variable``       ``v.assign(value)`` on the path: reading ``v`` later has no
                            gradient to ``value``
``not_a_tensor``            the target is a numpy array or Python number (the loss was
                            computed with numpy): TensorFlow sees a constant
``unconnected_output_       the call was ``tape.gradient(y, x, output_gradients=g)`` (the
gradients``                 second half of a chain rule split in two) and ∂y/∂x itself is
                            cut: the message names the cut (one of the reasons above),
                            its line and its fix; ``g`` cannot bring the gradient back
==========================  ============================================================
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import ops as _ops

from ..base import naming, state
from ..base.naming import code_line as line
from ..base.naming import file_line as where
from ..diagnosis import reasons, twins
from ..diagnosis.provenance import Cut, caller_names, depends, first_cut, fresh_starts, walk_back
from ..diagnosis.walk import Explanation, Explanations, named_sources
from .keys import ORIGINAL_GRADIENT, tensor_key, trainable_dtype

REASONS = reasons.reasons_of("tf")
_NO_GRADIENT_TEXT = {"ArgMax": "tf.argmax", "ArgMin": "tf.argmin", "Round": "tf.round", "StopGradient":
                     "tf.stop_gradient", "Equal": "==", "NotEqual": "!=", "Less": "<", "Greater": ">",
                     "LessEqual": "<=", "GreaterEqual": ">=", "Floor": "tf.floor", "Sign": "tf.sign"}


def has_gradient(op_type: str) -> bool:
    """Does TensorFlow have a gradient function for ``op_type``? (``NotDifferentiable`` ops register None.)"""
    try:
        return _ops._gradient_registry.lookup(op_type) is not None
    except LookupError:
        return False


def label(rec, t) -> str:
    """A tensor or variable for prose: a Keras weight by its path (``dense/kernel``), else the learner's variable
    (``w``), else the name the recording gave it (the variable its line assigned)."""
    path = getattr(t, "path", None) if not isinstance(t, tf.Tensor) else None
    mine = (getattr(rec, "_caller_names", None) or {}).get(id(t)) if rec is not None else None
    name = path if isinstance(path, str) and "/" in path else mine or (rec.name_of(t) if rec is not None else None)
    if rec is not None and isinstance(name, str) and name.rsplit("/", 1)[-1].startswith("Variable"):
        name = _attribute_name(rec, t) or name       # an unnamed tf.Variable: the layer attribute that holds it
    shape = tuple(t.shape)
    return f"'{name}' (shape {shape})" if name else f"a tensor of shape {shape}"


def _attribute_name(rec, v) -> str | None:
    """``layer.attr`` for a variable a Keras layer seen by the recording holds as an attribute, else None."""
    key = tensor_key(v)
    for layer in _all_layers(rec):
        for attr, value in vars(layer).items():
            if hasattr(value, "handle") and not isinstance(value, tf.Tensor) and tensor_key(value) == key:
                return f"{getattr(layer, 'name', type(layer).__name__)}.{attr}"
    return None


def pick_tape(rec, target):
    """The tape that answers for ``target``: the one ``tape.gradient(target, ...)`` was called on, else the
    last tape that recorded the op making ``target``, else the last tape opened in the recording."""
    key = getattr(target, "_id", None)
    for op in reversed(rec.ops):
        if op.kind in ("gradient", "jacobian") and op.extra.get("tape") is not None \
                and any(getattr(t, "_id", None) == key for t in op.inputs):
            return rec.tapes[op.extra["tape"]]
    made = rec.producer(target) if key is not None else None
    if made is not None and made.tapes:
        return rec.tapes[made.tapes[-1]]
    return rec.tapes[max(rec.tapes)] if rec.tapes else None


def tf_gradient(rec, info, target, sources, output_gradients=None):
    """TensorFlow's gradients of ``target`` w.r.t. ``sources`` from the tape ``info`` recorded (None entries kept)."""
    if info.cpp is None or not info.persistent_underneath and info.tape._tape is None:
        raise RuntimeError("the tape's record is gone: it was opened before the `with adv.tf.record()` block and "
                           "its gradient() has already been called. Open the GradientTape inside the recording.")
    replay = tf.GradientTape(persistent=True)
    replay._tape = info.cpp
    with rec.paused():
        return ORIGINAL_GRADIENT(replay, target, [rec._settled.taped(s) for s in sources],
                                 output_gradients=output_gradients)


def _when(info, index) -> str:
    """Where op ``index`` ran relative to the tape's recording spans: before / after / stop_recording."""
    spans = info.spans
    if not spans or index < spans[0][0]:
        return "before the tape's `with tf.GradientTape()` block began"
    if spans[-1][1] is not None and index >= spans[-1][1]:
        return "after the tape's `with` block ended"
    return "while the tape was paused (`with tape.stop_recording():`)"


def cut(rec, info, op, i) -> tuple[str, str] | None:
    """``(reason, words)`` when op ``op`` stops the gradient from its output to its input ``i`` on tape ``info``."""
    x = op.inputs[i]
    if op.kind == "rewrap":
        return "left_the_tape", f"{op.name}(...) makes a new constant from plain values"
    if op.kind == "function":
        return None
    if op.name == "Cast" and op.outputs and not trainable_dtype(op.outputs[0].dtype) and trainable_dtype(x.dtype):
        return "integer_dtype", f"tf.cast to {op.outputs[0].dtype.name} makes integer values: no gradient"
    if not trainable_dtype(x.dtype) and x.dtype != tf.resource:
        return "integer_dtype", f"{op.name} reads integer values ({x.dtype.name}): no gradient"
    if op.name in _NO_GRADIENT_TEXT or not has_gradient(op.name):
        return "non_differentiable_op", f"{_NO_GRADIENT_TEXT.get(op.name, op.name)} has no gradient"
    if info is not None and info.number not in op.recording:
        return "computed_outside_tape", f"{op.name} ran {_when(info, op.index)}, so the tape did not record it"
    return None


_CUT_FIXES = {
    "computed_outside_tape": "Fix: compute everything from the source to the loss inside `with "
                             "tf.GradientTape() as tape:` (and not under tape.stop_recording()).",
    "integer_dtype": "Fix: keep the values floating on the way to the loss (no cast to an integer type; "
                     "use tf.float32).",
    "non_differentiable_op": "Fix: use a differentiable relaxation (tf.nn.softmax instead of argmax, a "
                             "smooth function instead of round), or leave stop_gradient out of the path.",
    "new_variable": "Fix: keep the value a tensor (do not wrap a computed value in tf.Variable inside the "
                    "step); create variables once, outside, and compute with them.",
    "assigned_variable": "Fix: use the computed tensor itself in the loss; v.assign(...) stores a value, it "
                         "is not differentiable.",
}
_OP_FIXES = {
    "tf.numpy_function": "Fix: tf.numpy_function runs Python on numpy values, which the tape cannot see, and "
                         "TensorFlow registers no gradient for it: write the function with tf ops, or give it a "
                         "gradient with @tf.custom_gradient around it.",
    "tf.py_function": "Fix: the body of tf.py_function left TensorFlow (numpy inside it), so the tape cannot "
                      "differentiate it: write the body with tf ops (a py_function of tf ops is differentiable), "
                      "or give it a gradient with @tf.custom_gradient.",
}


def _user_words(op, words: str) -> str:
    """The cut's words with the op named by the user's call when TensorFlow's op type is not what the line calls
    (``tf.argsort`` records ``Shape``, ``TopKV2``): "tf.argsort(...) (TensorFlow's op Shape inside it) ..."."""
    calls = reasons.calls_on_line(op.location)
    if not calls or op.name.startswith("tf.") or any(c.split(".")[-1].lower().replace("_", "") ==
                                                       op.name.lower() for c in calls):
        return words
    if not words.startswith(op.name):
        return words
    called = calls[-1] if len(calls) == 1 else " / ".join(f"{c}" for c in calls)
    return f"{called}(...) (TensorFlow's op {op.name} inside it){words[len(op.name):]}"


_LOOKUPS = {"GatherV2": 1, "ResourceGather": 1, "Gather": 1, "GatherNd": 1, "ResourceGatherNd": 1,
            "EmbeddingLookup": 1}       # op name -> the input that holds the indices


def _looked_up(rec, ids, after) -> str | None:
    """When the integer tensor ``ids`` is read as the indices of a lookup (an ``Embedding`` layer's gather):
    `` in the layer 'embedding' (Embedding)`` (or ``""`` outside a layer); None when nothing looks it up."""
    keys = {tensor_key(ids)}           # the ids and the integers computed from them (Keras wraps negative ids)
    for op in rec.ops[after + 1:]:
        if op.kind != "op" or not any(tensor_key(x) in keys for x in op.inputs):
            continue
        at = _LOOKUPS.get(op.name)
        if at is not None and len(op.inputs) > at and tensor_key(op.inputs[at]) in keys:
            layer = rec._layers.get(op.scope) if op.scope else None
            return "" if layer is None else f" in the layer '{layer.name}' ({type(layer).__name__})"
        keys.update(tensor_key(o) for o in op.outputs if not trainable_dtype(o.dtype))
    return None


def _inside_layer(rec, op, context) -> str:
    """A sentence naming the Keras layer the cut ran in when it is a Lambda (its name and the line of its
    function, where the layer was built), else nothing."""
    layer = rec._layers.get(op.scope) if op.scope else None
    if layer is None or type(layer).__name__ != "Lambda" and context.kind != "lambda":
        return ""
    name = getattr(layer, "name", op.scope.split("/")[-1])
    return (f"It ran inside the Lambda layer '{name}' (its function is on the line above, where the layer was "
            "built), so every call of the model cuts the gradient there.\n")


def _earlier_escapes(rec, before):
    return [e for e in rec.ops[:before] if e.kind == "escape" and e.inputs]


def back_edges(rec, info, op, t):
    """The inputs the value ``t`` made by record ``op`` came from, each with the cut on the way (or None).

    Besides an op's own inputs: a variable read comes from the variable's
    creation (``tf.Variable(init)``) and every ``assign`` to it before the
    read; a re-wrap comes from the values that left TensorFlow before it.
    """
    if op.kind == "read":
        yield op.inputs[0], op, cut(rec, info, op, 0), op.index      # the variable itself (its handle)
        handle = op.inputs[0]._id
        for w in rec.ops[:op.index]:
            if w.kind == "create" and w.outputs and w.outputs[0]._id == handle and w.extra.get("init") is not None:
                yield w.extra["init"], w, ("new_variable", "tf.Variable(...) copies its initial value"), w.index
            elif w.kind == "assign" and w.inputs and w.inputs[0]._id == handle and len(w.inputs) > 1:
                yield w.inputs[1], w, ("assigned_variable", f"{w.name} writes the value into the variable"), \
                    w.index
        return
    if op.kind == "rewrap":
        for esc in _earlier_escapes(rec, op.index):
            yield esc.inputs[0], esc, ("left_the_tape", esc.extra["how"]), esc.index
        return
    for i, x in enumerate(op.inputs):
        yield x, op, cut(rec, info, op, i), op.index


def _is_one(source) -> bool:
    """One TensorFlow tensor or variable (what ``tape.gradient`` takes as a single source)."""
    return hasattr(source, "_id") or hasattr(source, "handle")


def explain_recorded(rec, target, source):
    """:meth:`Recording.explain`: why ``tape.gradient(target, source)`` is None.

    ``source`` may be what ``tape.gradient`` takes: one tensor or variable (an
    :class:`Explanation`), or a list, a dict, a layer or model (its
    ``trainable_variables``): one row per source, broken ones first.
    """
    if getattr(rec, "_caller_names", None) is None:     # the learner's names for what was made before
        frame = state.user_frame_object()
        rec._caller_names = caller_names({**frame.f_globals, **frame.f_locals}, _is_one) if frame else {}
        try:
            return explain_recorded(rec, target, source)
        finally:
            rec._caller_names = None
    many = named_sources(source, _is_one)
    if many is not None:
        return Explanations([(n, explain_recorded(rec, target, s)) for n, s in many])
    if not hasattr(source, "_id") and not hasattr(source, "handle"):
        if isinstance(source, np.ndarray):
            return _array_source(rec, source)
        return reasons.not_a_tensor_source(source, "tf")
    if not isinstance(target, (tf.Tensor, tf.Variable)) and not hasattr(target, "_id"):
        return _not_a_tensor(rec, target, source)
    skey = tensor_key(source)
    sname = label(rec, source)
    if not trainable_dtype(source.dtype):
        made = _made_by_layer(rec, source)
        fix = ("Fix: create it with a floating dtype (dtype=\"float32\", the default of add_weight / "
               "add_variable); cast integer inputs to float where they meet it." if made else
               "Fix: make it float, e.g. tf.constant(values, dtype=tf.float32) or tf.cast(x, tf.float32) before "
               "the tape.")
        return Explanation("integer_dtype", f"{sname} has dtype {tf.as_dtype(source.dtype).name}: TensorFlow "
                           "differentiates only floating (and complex) tensors, so tape.gradient returns None"
                           + (f". It was made{line(made)}\n" if made else ". ") + fix,
                           where(made), nodes=(skey,))
    info = pick_tape(rec, target)
    made = rec.producer(target)
    if made is None and tensor_key(target) != skey:
        return Explanation("computed_outside_tape", f"The target (shape {tuple(target.shape)}) was not computed "
                           "inside this recording: the ops that made it ran outside the `with adv.tf.record()` "
                           "block, so neither the recording nor (probably) the tape saw them. Fix: compute the "
                           "loss inside `with tf.GradientTape() as tape:` (indent the line), inside the recording.",
                           nodes=(skey, tensor_key(target)))
    if info is None:
        return Explanation("computed_outside_tape", "No tf.GradientTape was opened inside this recording, so "
                           "nothing was recorded for a gradient. Fix: wrap the forward pass in "
                           "`with tf.GradientTape() as tape:`.", nodes=(skey,))
    call = _vjp_call(rec, target, skey)
    seed = None if call is None else call.extra["output_gradients"]
    (grad,) = tf_gradient(rec, info, target, [source], seed)
    if grad is not None:
        from ..diagnosis.flow import explain_recording  # zero, vanishing or NaN although connected (issue 44)
        return _frozen_layer(rec, source, skey, sname) or explain_recording(rec, target, source) or \
            Explanation("connected", f"The gradient of the target reaches {sname}.", nodes=(skey,))
    why = _why_none(rec, info, target, source, skey, sname)
    if why.reason == "not_used":
        why = _non_trainable(rec, source, skey, sname) or why
    return why if call is None else _unconnected_seed(rec, call, target, sname, why)


def _vjp_call(rec, target, skey):
    """The last recorded ``tape.gradient(target, [..source..], output_gradients=g)`` with a ``g``, or None."""
    tkey = getattr(target, "_id", None)
    for op in reversed(rec.ops):
        if op.kind != "gradient" or op.extra.get("output_gradients") is None:
            continue
        sources = [s for s in tf.nest.flatten(op.extra.get("sources")) if hasattr(s, "_id") or hasattr(s, "handle")]
        if any(getattr(t, "_id", None) == tkey for t in op.inputs) and \
                any(tensor_key(s) == skey for s in sources):
            return op
    return None


def _unconnected_seed(rec, call, target, sname, why) -> Explanation:
    """Why a vector-Jacobian product ``tape.gradient(y, x, output_gradients=g)`` is None: the cut inside ∂y/∂x.

    A learner who splits the chain rule in two (``g = tape.gradient(loss, y)``, then the call above) tends
    to suspect ``g``. ``g`` only scales what flows back from ``y``: when ∂y/∂x is cut, gᵀ·∂y/∂x is None for
    every ``g``. The explanation says so, then gives the cut's own words, line and fix.
    """
    seeds = [g for g in tf.nest.flatten(call.extra["output_gradients"]) if g is not None]
    shape = tuple(getattr(seeds[0], "shape", np.shape(seeds[0]))) if seeds else ()
    yname = label(rec, target)
    msg = (f"This call is the second half of a chain rule split in two:{line(call.location)}\n"
           f"tape.gradient(y, x, output_gradients=g) computes gᵀ·∂y/∂x, here for y = {yname} and x = {sname}, "
           f"with g of shape {shape}. g is not the problem: it only scales what flows back from y, and ∂y/∂x "
           f"itself is cut (reason: {why.reason}), so the product is None for every g.\n" + why.message)
    places = dict.fromkeys(p for p in (where(call.location), why.location, *why.locations) if p)
    return Explanation("unconnected_output_gradients", msg, why.location, nodes=why.nodes, edges=why.edges,
                       op=why.op, locations=tuple(places))


def _record(rec, info=None) -> dict:
    """What the shared walk (:mod:`autodiff_viz.diagnosis.provenance`) needs from a recording: key, producer, edges.

    The edges are :func:`back_edges` (a variable read also comes from the
    variable's creation and its assigns; a re-wrap from the values that left
    before it), each with its cut on tape ``info`` (None: cuts of the ops
    themselves only, for "depends on").
    """
    def edges(op, t):
        for x, at, c, index in back_edges(rec, info, op, t):
            yield x, index, None if c is None else Cut(at, x, t, index, *c)
    return {"key": tensor_key, "producer": lambda t, k=None: rec.producer(t), "edges": edges}


def _cast_first(cut) -> int:
    """A cast to an integer type names the cause; a later op reading those integers only repeats it."""
    return 0 if cut.words.startswith("tf.cast to") else 2 if cut.reason == "integer_dtype" else 1


def _depends(rec, t, before, skey, memo=None) -> bool:
    """Whether the value ``t`` (as record ``before`` read it) was computed from the source, cuts or not."""
    return depends(t, before, skey, **_record(rec))


def _why_none(rec, info, target, source, skey, sname) -> Explanation:
    walk = walk_back(target, skey, **_record(rec, info))
    tkey = tensor_key(target)
    if walk.reached:
        return _not_watched(rec, info, source, skey, sname, walk.first_use)
    cut = first_cut(walk, skey, rank=_cast_first, **_record(rec))
    if cut is not None and cut.reason == "computed_outside_tape":
        cut = _earliest_outside(rec, walk, skey) or cut
    if cut is not None:
        at, x, out, reason, words = cut.at, cut.x, cut.out, cut.reason, cut.words
        loc = at.location
        edge = ((tensor_key(x), tensor_key(out)),)
        if reason == "left_the_tape":
            return _left(rec, at, x, out, sname, skey)
        context = reasons.context_of(loc)
        lookup = _looked_up(rec, out, at.index) if reason == "integer_dtype" else None
        fix = reasons.fix(reason, "lookup" if lookup is not None else context,
                          _OP_FIXES.get(at.name, _CUT_FIXES[reason]), layer=lookup or "")
        words = _user_words(at, words)
        inside = _inside_layer(rec, at, context)
        msg = f"The gradient from the target cannot reach {sname}: {words}{line(loc)}\n{inside}{fix}"
        return Explanation(reason, msg, where(loc), nodes=(skey, tensor_key(out)), edges=edge, op=at.name)
    esc = [e for e in rec.ops if e.kind == "escape" and _depends(rec, e.inputs[0], e.index, skey)]
    if esc:
        e = esc[-1]
        return Explanation("left_the_tape", f"A value computed from {sname} left TensorFlow with "
                           f"{e.extra['how']}{line(e.location)}\nand the target was computed from the numpy value "
                           "(it came back as a new constant, with no history). Fix: keep computing with the "
                           "tensor (tf.* ops instead of np.*, no .numpy() in the middle).",
                           where(e.location), nodes=(skey, tkey), op=e.extra["how"])
    lost = _left_in_library(rec, walk, skey, sname)
    if lost is not None:
        return lost
    used = any(any(tensor_key(x) == skey for x in op.inputs) for op in rec.ops if op.kind in ("op", "read"))
    starts = fresh_starts(walk)
    if used and starts:
        return reasons.unexplained(
            [f"{op.name}(...) made a new constant from plain values{line(op.location)}" for op in starts]
            + [f"{sname} was read by recorded ops, but the recording saw none of its values leave TensorFlow"],
            nodes=(skey, tkey), location=where(starts[0].location))
    twin = _twin(rec, walk, source, skey) or _stale_attribute(rec, walk, skey, sname)
    if twin is not None:
        return twin
    if used:
        return _dead_end(rec, skey, sname, tkey)
    created = next((op for op in rec.ops if op.kind == "create" and op.outputs
                    and tensor_key(op.outputs[0]) == skey), None)
    loc = created.location if created is not None else _made_by_layer(rec, source)
    made = f" It was made{line(loc)}\nand" if loc else ""
    msg = (f"The target does not depend on {sname}: no recorded op used it.{made} nothing on the way to the "
           "target reads it (a branch not taken — a layer whose call skips it in one case —, an unused layer, or "
           "a different object than the one the model used). tape.gradient returns None for it "
           "(unconnected_gradients='zero' gives zeros). Fix: check that the forward pass uses this very variable, "
           "or do not create it where it is never read (or freeze it: trainable=False).")
    return Explanation("not_used", msg, where(loc), nodes=(skey, tkey))


def _dead_end(rec, skey, sname, tkey) -> Explanation:
    """``not_used`` for a source the forward pass did use, in a part whose output the target never reads (a
    layer's second output, an output head the loss ignores): the line and layer of its last use, and the two
    ways out — freeze that part for this loss, or make the loss read what it computes."""
    fed = next((op for op in rec.ops if op.kind == "op" and "Dataset" in op.name
                and any(_depends(rec, x, op.index, skey) for x in op.inputs)), None)
    if fed is not None:
        return Explanation(
            "left_the_tape",
            f"The gradient from the target cannot reach {sname}: its values went into a tf.data pipeline "
            f"({fed.name}){line(fed.location)}\nA Dataset copies the values it is given; the elements it yields "
            "are new tensors with no history, so nothing the tape records links them back to the variable "
            "(TensorFlow does not backpropagate through tf.data). Fix: keep the variable out of the dataset: "
            "put indices (or the plain data) in the Dataset and read the variable inside the tape, e.g. "
            "tf.gather(sample_weights, batch_indices).", where(fed.location), nodes=(skey, tkey), op=fed.name)
    last = None
    for op in rec.ops:
        if op.kind in ("op", "read") and any(tensor_key(x) == skey for x in op.inputs):
            last = op
    layer = rec._layers.get(last.scope) if last is not None and last.scope else None
    named = f" in the layer '{layer.name}'" if layer is not None and getattr(layer, "name", None) else ""
    prov = getattr(rec, "provenance", None)
    wired = prov.wired_at(lambda lay: any(_same_variable(w, skey) for w in getattr(lay, "weights", ()))) \
        if prov is not None else None
    loc = wired or (last.location if last is not None else None)
    how = ("where the model was wired, the part of that layer's output it uses is chosen here" if wired else
           "the forward pass used it")
    msg = (f"The target does not depend on {sname}: {how}{named}{line(loc)}\nbut nothing "
           "computed from it reaches the target (an output of that layer or model that the loss does not read). "
           "tape.gradient returns None for it, and Keras warns that its gradients do not exist. Fix: if that part "
           "should not learn from this loss, freeze it (layer.trainable = False, or trainable=False where you "
           "build it) so that the optimizer expects no gradient for it; if it should, make the loss read its "
           "output (the pooled output, y_pred, the head you left out).")
    return Explanation("not_used", msg, where(loc), nodes=(skey, tkey))


def _earliest_outside(rec, walk, skey):
    """Of the ops on the target's history that the tape did not record, the first to run that reads the source
    or a value made from it: the call that ran outside (``model(state)`` before the tape opened), not the last
    unrecorded op before the tape (the ``log`` of its output)."""
    outside = [c for c in walk.cuts if c.reason == "computed_outside_tape"
               and depends(c.x, c.k, skey, **_record(rec))]
    return min(outside, key=lambda c: c.at.index) if outside else None


def _left_in_library(rec, walk, skey, sname) -> Explanation | None:
    """``left_the_tape`` inside a library call: a value computed from the source left TensorFlow within code
    the user called (Keras' ``model.predict`` returns numpy), and the target was computed from a constant
    holding exactly those values. The link is the values themselves (same shape, equal entries), so an
    unrelated numpy value never stands in for it; the line is the user's call into the library."""
    leaves = [t for t in walk.leaves if isinstance(t, tf.Tensor) and rec.producer(t) is None]
    if not leaves:
        return None
    for e in reversed(rec.ops):
        if e.kind != "library_escape" or not e.inputs or not _depends(rec, e.inputs[0], e.index, skey):
            continue
        value = np.asarray(e.extra["value"])
        if value.size < 2:          # a scalar (a logged loss) matches too easily to be evidence
            continue
        if not any(tuple(t.shape) == value.shape and np.array_equal(t.numpy(), value) for t in leaves):
            continue
        return Explanation(
            "left_the_tape",
            f"The gradient from the target cannot reach {sname}: a library call on this line computed a value "
            f"from {sname} and handed it back as numpy (the library called {e.extra['how']}):{line(e.location)}\n"
            "The target was computed from those numpy values, which TensorFlow takes back as a new constant with "
            "no history. Fix: inside the tape, use a call that returns tensors — for a Keras model, model(x) (or "
            "model(x, training=True)) instead of model.predict(x), which is for inference and returns numpy; "
            "for other code, TensorFlow ops on the tensors.", where(e.location), nodes=(skey,), op=e.extra["how"])
    return None


def _stale_attribute(rec, walk, skey, sname) -> Explanation | None:
    """``computed_outside_tape``: the target read tensors that a layer keeps as attributes, computed once
    before the recording (``self.kernel = self.mu + self.sigma * eps`` in ``build``), on the layer that also
    holds the source. A tensor is a value, not a formula: computed once, it is a constant to every later tape,
    so the gradient stops there. Named only when that same layer holds the source; every such attribute is
    named (the recording cannot tell which one the source went into: the one whose name the source's
    starts with comes first), with the line that computed it and the fix for the method it is in."""
    leaves = {tensor_key(t) for t in walk.leaves if isinstance(t, tf.Tensor)}
    for layer in _all_layers(rec) if leaves else ():
        attrs = {k: v for k, v in vars(layer).items() if not k.startswith("__")}
        own = next((k for k, v in attrs.items() if hasattr(v, "handle") and tensor_key(v) == skey), None)
        if own is None and not any(tensor_key(w) == skey for w in getattr(layer, "weights", ())):
            continue
        stale = sorted((k for k, v in attrs.items() if isinstance(v, tf.Tensor) and v._id in leaves),
                       key=lambda k: not (own or "").startswith(k))
        if not stale:
            continue
        made = [naming.attribute_assignment(type(layer), k) for k in stale]
        first = next((m for m in made if m), None)
        read = next((op for op in rec.ops if op.kind == "op" and any(
            getattr(x, "_id", None) == attrs[stale[0]]._id for x in op.inputs)), None)
        context = reasons.context_of(first[:2]) if first else reasons.Context("top")
        fix = reasons.fix("computed_outside_tape", context, _CUT_FIXES["computed_outside_tape"])
        name = getattr(layer, "name", type(layer).__name__)
        said = "".join(f"\n{name}.{k}, computed in {m[2]}(){line(m[:2])}" if m else f"\n{name}.{k}"
                       for k, m in zip(stale, made))
        used = f"\nThe target reads it here:{line(read.location)}" if read is not None else ""
        places = [where(m[:2]) for m in made if m] + ([where(read.location)] if read is not None else [])
        return Explanation(
            "computed_outside_tape",
            f"The gradient from the target cannot reach {sname}: the target reads tensors the layer '{name}' "
            f"computed once, before this tape opened:{said}\nA tensor stores a value, not how it was computed, "
            f"so to this tape it is a constant and the gradient stops there.{used}\n{fix}",
            places[0] if places else None, nodes=(skey,), op=stale[0], locations=tuple(dict.fromkeys(places)))
    return None


def _made_by_layer(rec, variable):
    """``(file, line)`` of the ``self.<attr> = ...`` that stored ``variable`` on a layer the recording saw (its
    ``build`` or ``__init__``: found in the class's source, the layer being built before the recording)."""
    key = tensor_key(variable)
    for layer in _all_layers(rec):
        attr = next((k for k, v in vars(layer).items() if not k.startswith("_") and hasattr(v, "dtype")
                     and _same_variable(v, key)), None)
        if attr is not None:
            stored = naming.attribute_assignment(type(layer), attr)
            if stored is not None:
                return stored[:2]
    return None


def _same_variable(v, key) -> bool:
    try:
        return tensor_key(v) == key
    except (TypeError, AttributeError, ValueError):
        return False


def _all_layers(rec) -> list:
    """Every Keras layer the recording saw called, with its sublayers, each once."""
    out, seen = [], set()
    for top in list(rec._layers.values()):
        for layer in (top._flatten_layers() if hasattr(top, "_flatten_layers") else [top]):
            if id(layer) not in seen:
                seen.add(id(layer))
                out.append(layer)
    return out


def _twin(rec, walk, source, skey) -> Explanation | None:
    """``made_in_forward``: the target read another variable of the source's name and shape, made later (a layer
    that makes its weight in ``call``), see :mod:`autodiff_viz.diagnosis.twins`."""
    variable = rec.variable_of(skey)
    variable = source if variable is None else variable
    if not hasattr(variable, "shape"):
        return None
    read = [op.extra["variable"] for op in sorted(walk.records, key=lambda op: op.index)
            if op.kind == "read" and op.extra.get("variable") is not None]
    twin = twins.twin_of(variable, read, name=lambda v: getattr(v, "path", None) or getattr(v, "name", None),
                         shape=lambda v: tuple(v.shape))
    if twin is None:
        return None

    def made(v):
        key = tensor_key(v)
        op = next((op for op in rec.ops if op.kind == "create" and op.outputs and tensor_key(op.outputs[0]) == key),
                  None)
        return op.location if op is not None else None
    return twins.made_anew(label(rec, source), label(rec, twin), made(twin), made(variable),
                           (skey, tensor_key(twin)))


def _left(rec, at, x, out, sname, skey) -> Explanation:
    escape = at if at.kind == "escape" else None
    rewrap = None
    for op in rec.ops[at.index:]:
        if op.kind == "rewrap":
            rewrap = op
            break
    esc_loc = escape.location if escape else None
    back_loc = rewrap.location if rewrap else None
    how = escape.extra["how"] if escape else "a Python value"
    back = f"\nand came back as a new constant with {rewrap.name}(...){line(back_loc)}" if rewrap else \
        "\nand came back as a new constant"
    msg = (f"The value on the way from {sname} to the target left TensorFlow with {how}{line(esc_loc)}{back}\n"
           "A numpy array or Python number has no history, so the tape cannot follow it back. "
           + reasons.fix("left_the_tape", reasons.context_of(esc_loc or back_loc),
                         "Fix: keep computing with the tensor itself (tf.* ops instead of np.*, no .numpy() / "
                         "float() in the middle)."))
    return Explanation("left_the_tape", msg, where(esc_loc or back_loc), nodes=(skey, tensor_key(out)),
                       edges=((tensor_key(x), tensor_key(out)),), op=how,
                       locations=tuple(where(v) for v in (esc_loc, back_loc) if v))


def _not_watched(rec, info, source, skey, sname, first_use) -> Explanation:
    variable = rec.variable_of(skey)
    loc = first_use.location if first_use is not None else info.enter
    if variable is not None and not variable.trainable:
        why = (f"{sname} is a tf.Variable with trainable=False (a frozen Keras weight, or made with "
               "trainable=False): tapes watch only trainable variables automatically. Fix: "
               "tape.watch(variable) inside the tape, or make it trainable.")
    elif variable is not None:
        why = (f"{sname} is a variable, but this tape was opened with watch_accessed_variables=False and never "
               "watched it. Fix: tape.watch(variable) inside the `with` block.")
    else:
        x = sname.split("'")[1] if sname.count("'") >= 2 else "x"
        x = x if x.isidentifier() else "x"      # the learner's variable (`w`), else a placeholder
        why = (f"{sname} is a plain tensor (a tf.constant or the result of ops outside the tape), and the tape "
               f"follows only tf.Variables and what it is told to watch. Fix: call tape.watch({x}) inside the "
               "`with tf.GradientTape() as tape:` block before using it, or make it a tf.Variable.")
    return Explanation("not_watched", f"The tape never watched {sname}, used here:{line(loc)}\n{why}",
                       where(loc), nodes=(skey,), op=first_use.name if first_use is not None else None)


def _array_source(rec, array) -> Explanation:
    """A numpy array asked for as the source: where a conversion of it was read, and where one was watched."""
    def holds(x):
        try:
            return tuple(x.shape) == array.shape and np.array_equal(np.asarray(x), array)
        except (TypeError, ValueError, AttributeError):
            return False
    used = next((op.location for op in rec.ops if op.kind == "op" and any(holds(x) for x in op.inputs)), None)
    watched = next((op.location for op in rec.ops if op.kind == "watch" and any(holds(x) for x in op.inputs)), None)
    return reasons.array_source(array, "tf", used, watched)


def _not_a_tensor(rec, target, source) -> Explanation:
    skey = tensor_key(source)
    kind = type(target).__name__
    esc = [e for e in rec.ops if e.kind == "escape" and _depends(rec, e.inputs[0], e.index, skey)]
    e = esc[-1] if esc else None
    loc = e.location if e is not None else None
    fix = ("Fix: compute the loss with TensorFlow ops (tf.reduce_mean, tf.square, keras.losses ...) on the "
           "tensors, inside the tape.")
    if e is not None:
        msg = (f"The target is a {kind}, not a tensor: a value computed from {label(rec, source)} left "
               f"TensorFlow with {e.extra['how']}{line(loc)}\nand the loss was computed in numpy/Python from "
               f"there. tape.gradient turns a {kind} into a new constant, with no history: the gradient is None. "
               + fix)
        return Explanation("left_the_tape", msg, where(loc), nodes=(skey,), op=e.extra["how"])
    return Explanation("not_a_tensor", f"The target is a {kind}, not a tensor: tape.gradient turns it into a new "
                       "constant with no history, so every gradient is None. " + fix, nodes=(skey,))


def _is_array(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic, float, int))


def _holders(rec, skey) -> list:
    """The Keras layers seen by the recording (and their sublayers) that hold the weight keyed ``skey``,
    outermost first."""
    return [layer for layer in _all_layers(rec) if any(tensor_key(w) == skey for w in getattr(layer, "weights", ()))]


def _frozen_layer(rec, source, skey, sname) -> Explanation | None:
    """``frozen_layer``: the tape differentiates the weight, but its layer is frozen (``layer.trainable = False``).

    The tape was watching the variable (it was trainable when read, or
    watched), so a raw ``tape.gradient`` gives a number; but the weight is out of ``model.trainable_variables``,
    and ``optimizer.apply_gradients`` / ``fit`` never update it. The line is
    the one that froze the layer in the recording, or "before the recording".
    """
    frozen = [layer for layer in _holders(rec, skey) if not layer.trainable]
    if not frozen:
        return None
    prov = getattr(rec, "provenance", None)
    found = [(layer, prov.frozen_at(layer) if prov is not None else None) for layer in frozen]
    layer, loc = next(((lay, at) for lay, at in found if at is not None), found[-1])
    when = line(loc) if loc else " before the recording began"
    return Explanation(
        "frozen_layer",
        f"{sname} is a weight of the layer '{layer.name}', which is frozen: its trainable was set to "
        f"False{when}\nThis tape still gives it a gradient (it watched the variable), but "
        f"the weight is not in model.trainable_variables: optimizer.apply_gradients(zip(grads, "
        "model.trainable_variables)) and fit() never update it.\nFix: to train it, set "
        f"layer.trainable = True (then compile again before fit); to keep it frozen (fine-tuning), nothing is "
        "wrong.", where(loc) if loc else None, nodes=(skey,), locations=(where(loc),) if loc else ())


def _non_trainable(rec, source, skey, sname) -> Explanation | None:
    """``non_trainable``: a non-trainable weight (BatchNormalization's moving statistics) was asked for.

    ``model.variables`` (``model.weights``) holds every weight; only
    ``model.trainable_variables`` are learned by gradients. The line is the
    ``tape.gradient`` call that asked for it.
    """
    variable = rec.variable_of(skey)
    variable = source if variable is None else variable
    if getattr(variable, "trainable", True) and getattr(source, "trainable", True):
        return None
    ask = next((op for op in reversed(rec.ops) if op.kind in ("gradient", "jacobian") and any(
        (hasattr(s, "_id") or hasattr(s, "handle")) and tensor_key(s) == skey
        for s in tf.nest.flatten(op.extra.get("sources")))), None)
    loc = ask.location if ask is not None else None
    holders = _holders(rec, skey)
    owner = f" of the layer '{holders[-1].name}'" if holders else ""
    return Explanation(
        "non_trainable",
        f"{sname} is a non-trainable weight{owner} (trainable=False: moving statistics such as "
        "BatchNormalization's moving_mean and moving_variance are updated by assign during training, not by "
        "gradients), so tape.gradient returns None for it." + (f" It was asked for{line(loc)}" if loc else "")
        + "\nFix: ask for model.trainable_variables (not model.variables or model.weights, which hold every "
        "weight), as optimizer.apply_gradients(zip(grads, model.trainable_variables)) expects.",
        where(loc) if loc else None, nodes=(skey,), op="non-trainable")
