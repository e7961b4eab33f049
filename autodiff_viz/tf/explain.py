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

from collections import deque

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import ops as _ops

from ..base.naming import code_line as line
from ..base.naming import file_line as where
from ..diagnosis.walk import REASONS as _ENGINE_REASONS
from ..diagnosis.walk import Explanation, Explanations, named_sources
from .keys import ORIGINAL_GRADIENT, tensor_key, trainable_dtype

REASONS = tuple(_ENGINE_REASONS) + ("new_variable", "assigned_variable", "not_a_tensor",
                                     "unconnected_output_gradients")
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
    name = rec.name_of(t) if rec is not None else None
    shape = tuple(t.shape)
    return f"'{name}' (shape {shape})" if name else f"a tensor of shape {shape}"


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
    busy = rec._busy
    rec._busy = True
    try:
        return ORIGINAL_GRADIENT(replay, target, sources, output_gradients=output_gradients)
    finally:
        rec._busy = busy


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
    many = named_sources(source, _is_one)
    if many is not None:
        return Explanations([(n, explain_recorded(rec, target, s)) for n, s in many])
    if not hasattr(source, "_id") and not hasattr(source, "handle"):
        if getattr(source, "_keras_history", None) is not None or type(source).__name__ == "KerasTensor":
            return Explanation("not_used", "The source is a symbolic Keras tensor (layer.output of a functional "
                               "model): it is a placeholder of the model's graph, not a value this tape computed, "
                               "so TensorFlow returns None. Fix: build a model that also outputs that layer "
                               "(keras.Model(model.inputs, [layer.output, model.output])), call it inside the "
                               "tape, and differentiate with respect to the tensor that call returns.")
        raise TypeError(f"explain: source must be a tf.Tensor or tf.Variable, got {type(source).__name__}.")
    if not isinstance(target, (tf.Tensor, tf.Variable)) and not hasattr(target, "_id"):
        return _not_a_tensor(rec, target, source)
    skey = tensor_key(source)
    sname = label(rec, source)
    if not trainable_dtype(source.dtype):
        return Explanation("integer_dtype", f"{sname} has dtype {source.dtype.name}: TensorFlow differentiates "
                           "only floating (and complex) tensors, so tape.gradient returns None. Fix: make it "
                           "float, e.g. tf.constant(values, dtype=tf.float32) or tf.cast(x, tf.float32) before "
                           "the tape.", nodes=(skey,))
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
        return explain_recording(rec, target, source) or \
            Explanation("connected", f"The gradient of the target reaches {sname}.", nodes=(skey,))
    why = _why_none(rec, info, target, source, skey, sname)
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


def _depends(rec, t, before, skey, memo) -> bool:
    """Whether the value ``t`` (as record ``before`` read it) was computed from the source, cuts or not."""
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        k = tensor_key(x)
        if k == skey:
            return True
        if k in memo:
            if memo[k]:
                return True
            continue
        if k in seen:
            continue
        seen.add(k)
        op = rec.producer(x)
        if op is None:
            continue
        stack.extend(y for y, _, _, _ in back_edges(rec, None, op, x))
    return False


def _why_none(rec, info, target, source, skey, sname) -> Explanation:
    frontier = deque([(target, None)])
    seen, cuts, reached_clean, first_use = set(), [], False, None
    memo: dict = {}
    while frontier:
        t, below = frontier.popleft()
        key = tensor_key(t)
        if key == skey:
            reached_clean = reached_clean or below is None
            continue
        if (key, below is None) in seen:
            continue
        seen.add((key, below is None))
        op = rec.producer(t)
        if op is None:
            continue
        for x, at, c, index in back_edges(rec, info, op, t):
            if tensor_key(x) == skey and first_use is None:
                first_use = at
            if c is not None:
                cuts.append((at, x, t, c))
            frontier.append((x, c or below))
    tkey = tensor_key(target)
    if reached_clean:
        return _not_watched(rec, info, source, skey, sname, first_use)
    # a cast to an integer type names the cause; a later op reading those integers only repeats it
    cuts.sort(key=lambda c: 0 if c[3][1].startswith("tf.cast to") else 2 if c[3][0] == "integer_dtype" else 1)
    for at, x, out, (reason, words) in cuts:
        if tensor_key(x) != skey and not _depends(rec, x, at.index, skey, memo):
            continue
        loc = at.location
        edge = ((tensor_key(x), tensor_key(out)),)
        if reason == "left_the_tape":
            return _left(rec, at, x, out, sname, skey)
        fix = {
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
        }[reason]
        msg = f"The gradient from the target cannot reach {sname}: {words}{line(loc)}\n{fix}"
        return Explanation(reason, msg, where(loc), nodes=(skey, tensor_key(out)), edges=edge, op=at.name)
    esc = [e for e in rec.ops if e.kind == "escape" and _depends(rec, e.inputs[0], e.index, skey, memo)]
    if esc:
        e = esc[-1]
        return Explanation("left_the_tape", f"A value computed from {sname} left TensorFlow with "
                           f"{e.extra['how']}{line(e.location)}\nand the target was computed from the numpy value "
                           "(it came back as a new constant, with no history). Fix: keep computing with the "
                           "tensor (tf.* ops instead of np.*, no .numpy() in the middle).",
                           where(e.location), nodes=(skey, tkey), op=e.extra["how"])
    used = any(any(tensor_key(x) == skey for x in op.inputs) for op in rec.ops if op.kind in ("op", "read"))
    msg = (f"The target does not depend on {sname}: " +
           ("it is used by recorded ops, but none of them leads to the target." if used else
            "no recorded op used it (an unused layer, a branch not taken, or a different object than the one the "
            "model used).") + " tape.gradient returns None for it (unconnected_gradients='zero' gives zeros). "
           "Fix: check that the forward pass uses this very tensor.")
    return Explanation("not_used", msg, nodes=(skey, tkey))


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
           "A numpy array or Python number has no history, so the tape cannot follow it back. Fix: keep computing "
           "with the tensor itself (tf.* ops instead of np.*, no .numpy() / float() in the middle).")
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


def _not_a_tensor(rec, target, source) -> Explanation:
    skey = tensor_key(source)
    kind = type(target).__name__
    memo: dict = {}
    esc = [e for e in rec.ops if e.kind == "escape" and _depends(rec, e.inputs[0], e.index, skey, memo)]
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
