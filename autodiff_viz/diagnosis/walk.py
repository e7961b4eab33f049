"""Why is my gradient None? A diagnosis that names the cause, the line and the fix.

``tape.explain(target, source)`` answers with an :class:`Explanation`:

    >>> import autodiff_viz as adv
    >>> w = adv.Variable([1.0, 2.0], name="w")
    >>> loss = adv.sum(w * w)                 # computed before the tape ...
    >>> with adv.GradientTape() as tape:
    ...     pass
    >>> tape.explain(loss, w).reason
    'computed_outside_tape'

How it works. The tape knows what it recorded; every tensor made by an op
on something with history (a variable, a watched tensor, an op output with
history) also points at its node, recorded or not, with the line of user
code that made it. The diagnosis walks the target's history back towards
the source and finds the first op on the way where the gradient stops: an
op this tape did not record (and when it ran: before the ``with`` block,
after it, under ``stop_recording``, or for another tape), an op without a
gradient, an integer result. When the source is not in the history at all,
the tape's record of values that left it (``.numpy()``, ``float()`` ...)
tells whether the path was cut by a trip through numpy.
"""
from __future__ import annotations

import dataclasses
import linecache
import re

import numpy as np

from ..base import naming
from ..base.naming import code_line as _code
from ..base.naming import file_line as _where
from ..base.state import live_tapes
from ..core import walks
from ..core.tensor import Tensor, Variable, full_name
from . import provenance, reasons, twins, words
from .escapes import partial, same_values
from .explanation import Explanation, Explanations, UnconnectedGradientError  # noqa: F401 (re-exported)
from .words import _label, _made_line, _naming, _output_of, _scope

REASONS = reasons.reasons_of("engine")


def _made(tape, tensor_id: int) -> str | None:
    """When a tensor was made, relative to the tape: 'before', 'after', 'paused' or None (while it recorded)."""
    start, end = tape.record.start_id, tape.record.end_id
    if start is None or tensor_id < start:
        return "before"
    if end is not None and tensor_id > end:
        return "after"
    for a, b in tape.record.pauses:
        if a < tensor_id and (b is None or tensor_id < b):
            return "paused"
    return None


_WHEN = {
    "before": "before the tape's `with` block started",
    "after": "after the tape's `with` block ended",
    "paused": "inside `with tape.stop_recording():`",
}


# ---------------------------------------------------------------------------
# History
# ---------------------------------------------------------------------------
def _history(target: Tensor) -> tuple[list, dict]:
    """The nodes that made ``target`` (oldest first) and every tensor they touch, by id."""
    nodes, tensors, stack, seen = [], {target._id: target}, [target], set()
    while stack:
        t = stack.pop()
        node = t._node
        if node is None or node.out_id in seen:
            continue
        seen.add(node.out_id)
        nodes.append(node)
        for x in node.inputs:
            tensors.setdefault(x._id, x)
            stack.append(x)
    nodes.sort(key=lambda n: n.out_id)
    return nodes, tensors


def _depends(nodes, source_id: int) -> set:
    """Ids in the history whose value depends on the source (any op, gradient or not)."""
    dep = {source_id}
    for node in nodes:
        if any(x._id in dep for x in node.inputs):
            dep.add(node.out_id)
    return dep


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _recorded_by(tape, node) -> bool:
    """Did ``tape`` record ``node`` and still hold it (not forgotten by a later ``tape.reset()``)?"""
    return bool(node.tapes) and tape.serial in node.tapes and not _before_reset(tape, node)


def _before_reset(tape, node) -> bool:
    """Was ``node`` recorded by ``tape`` before its last ``reset()``, which forgot it?

    Ids only grow: an op recorded before the reset has an id below the id
    counter's value at the reset (``tape.record.resets``).
    """
    resets = getattr(tape, "_resets", ())
    return node is not None and bool(resets) and bool(node.tapes) and tape.serial in node.tapes \
        and node.out_id < resets[-1]


# ---------------------------------------------------------------------------
# The diagnosis
# ---------------------------------------------------------------------------
def caller_names(namespace: dict) -> dict:
    """``{id(tensor): name}`` from a caller's variables: ``x`` for ``x = adv.constant(...)``, ``model.dense.kernel``."""
    return provenance.caller_names(namespace, lambda v: isinstance(v, Tensor), _layer_weights)


def _layer_weights(value):
    """A layer's or model's variables by name (``dense.kernel``), or None for anything else."""
    variables = getattr(value, "variables", None) if hasattr(value, "add_weight") else None
    return [(full_name(v), v) for v in variables if isinstance(v, Tensor)] \
        if isinstance(variables, (list, tuple)) else None


def named_sources(source, is_one=lambda s: isinstance(s, Tensor)):
    """``[(name, tensor)]`` when ``source`` is what ``gradient`` takes besides one tensor (a list or tuple, a dict,
    a layer or model: its trainable variables), else None. ``is_one`` tells one tensor of the framework at hand
    (a bridge passes its own); the names are the dict's keys, else each variable's path or name."""
    if is_one(source):
        return None
    if isinstance(source, dict):
        return [(str(k), v) for k, v in source.items()]
    if hasattr(source, "trainable_variables") and not isinstance(source, (list, tuple)):
        source = source.trainable_variables
    if isinstance(source, (list, tuple)):
        return [(getattr(v, "path", None) or getattr(v, "name", None) or f"sources[{i}]", v)
                for i, v in enumerate(source)]
    return None


def explain(tape, target, source, names: dict | None = None):
    """Why the gradient of ``target`` with respect to ``source`` on ``tape`` is None, or that it is not.

    ``target`` may be a list of tensors (their gradients add up): the answer is
    ``connected`` if one of them is, else the explanation for the first.
    ``source`` may be what ``gradient`` takes: a tensor (one
    :class:`Explanation`), or a list, a dict, a layer or model (its
    ``trainable_variables``): one row per source, broken ones first
    (:class:`Explanations`). ``names``: the caller's names for leaf tensors
    (see :func:`caller_names`), used instead of "an unnamed constant".
    """
    many = named_sources(source)
    if many is not None:
        return Explanations([(n, explain(tape, target, s, names)) for n, s in many])
    with words.callers_named(names):
        return _explain(tape, target, source)


def _explain(tape, target, source) -> Explanation:
    targets = list(target) if isinstance(target, (list, tuple)) else [target]
    if not targets:
        raise TypeError("explain: give a target tensor (got an empty list).")
    if isinstance(source, np.ndarray):
        return _array_source(tape, targets, source)
    if not isinstance(source, Tensor):
        return reasons.not_a_tensor_source(source, "engine")
    for t in targets:
        if not isinstance(t, (Tensor, int, float, complex, np.number, np.ndarray)):
            raise TypeError(f"explain: the target must be a tensor, got {type(t).__name__}.")
    answers = [_explain_one(tape, t, source) if isinstance(t, Tensor) else _plain_target(tape, t, source)
               for t in targets]
    for a in answers:
        if a.connected:
            return a
    return answers[0]


def _array_source(tape, targets, array) -> Explanation:
    """A numpy array asked for as the source: the first recorded op that read a conversion of it, and the line
    of a watched conversion (a constant with the same values), if any."""
    def holds(x):
        return isinstance(x, Tensor) and x.shape == array.shape and np.array_equal(x.numpy(), array)
    used = next((n.location for t in targets if isinstance(t, Tensor) for n in _history(t)[0]
                 if any(x._node is None and holds(x) for x in n.inputs)), None)
    watched = next((w for w in tape.record.watched.values() if not isinstance(w, Variable) and holds(w)), None)
    return reasons.array_source(array, "engine", used, None if watched is None else _made_line(watched))


def _plain_target(tape, target, source) -> Explanation:
    """The target is a Python or numpy number: it left the tape on its way to ``tape.gradient``."""
    value = np.asarray(target)
    kind = type(target).__name__
    matching = [e for e in tape.record.escapes if same_values(value.astype(np.float64), e.value)] \
        if value.dtype.kind in "fc" else []
    esc = matching[-1] if matching else (tape.record.escapes[-1] if tape.record.escapes else None)
    where = f" through {esc.how}{_code(esc.location)}" if esc is not None else ""
    return Explanation(
        "left_the_tape",
        f"The target is a {kind}, not a tensor: its value left the tape{where}\n"
        f"A plain number has no history, so nothing connects it to {_label(source)} and the gradient is "
        "None.\nFix: keep the loss a tensor (drop float() / .item() / .numpy() on it); convert to a "
        "number only for printing, after tape.gradient.",
        _where(esc.location) if esc is not None else None,
        (source._id,) + ((esc.tensor_id,) if esc is not None else ()), (), None,
        (esc.location,) if esc is not None and esc.location else ())


def _explain_one(tape, target: Tensor, source: Tensor) -> Explanation:
    if source.dtype.kind not in "fc":
        made = _made_line(source)
        return Explanation(
            "integer_dtype",
            f"The source {_label(source)} holds integers. Gradients exist only for floating values, "
            f"so there is nothing to differentiate with respect to.{_code(made) if made else ''}\n"
            "Fix: make it float, e.g. adv.constant(value, dtype='float64') or "
            "adv.Variable(np.asarray(value, dtype='float64')) (add_weight(..., dtype='float32') for a layer).",
            _where(made) if made else None, nodes=(source._id,), locations=(made,) if made else ())
    if target._id == source._id and target.dtype.kind in "fc":
        return Explanation(
            "connected",
            f"The target is the source itself: {_label(source)}. Its gradient is ones of its shape "
            "(dx/dx = 1), as in TensorFlow, with or without recorded ops.",
            nodes=(source._id,))
    reach, path = walks.reachable(tape.record.nodes, {source._id})
    if source._id in tape.record.tracked and target._id in reach and target.dtype.kind in "fc":
        needed = _on_path_to(path, target._id)
        ids = tuple(n.out_id for n in path if n.out_id in needed)
        from .flow import explain_tape  # zero, vanishing or NaN although connected (issue 44)
        return _partly_lost(tape, target, source, ids) or \
            explain_tape(tape, target, source, (_label(target), _label(source))) or \
            _connected(target, source, ids)
    return _disconnected(tape, target, source, reach)


def _connected(target, source, ids) -> Explanation:
    return Explanation(
        "connected",
        f"The gradient flows from {_label(target)} back to {_label(source)} "
        f"through {len(ids)} recorded op(s).",
        nodes=(source._id,) + tuple(ids))


def _disconnected(tape, target, source, reach) -> Explanation:
    nodes, tensors = _history(target)
    dep = _depends(nodes, source._id)
    if target._id in dep:
        return _broken_path(tape, target, source, nodes, dep, reach)
    return _not_in_history(tape, target, source, nodes, tensors, reach)


def explain_many(tape, target, sources, paths: bool = False) -> list:
    """:func:`explain` for many sources at once, in one pass over the record for all of them.

    Returns one :class:`Explanation` per source, in order. Which sources are
    connected to the target comes from one reverse pass (what the target
    depends on differentiably) and one forward pass that carries, for every
    tensor, the set of sources it depends on as the bits of one integer; only
    a source without a gradient gets the full diagnosis (:func:`explain`'s
    walk). So a view can diagnose every source of a big graph in time linear
    in its size, and spends work only on the ``None`` gradients.

    A connected source's answer names the source and the target
    (``nodes``); with ``paths=True`` it lists every op on the path between
    them, as :func:`explain` does — which costs the sum of the path lengths
    (10,000 weights of a 10,000-layer model: 10⁸ entries), so it is off by default.
    """
    sources = list(sources)
    if not isinstance(target, Tensor):
        return [explain(tape, target, s) for s in sources]
    for s in sources:
        if not isinstance(s, Tensor):
            raise TypeError(f"explain: the source must be a tensor, got {type(s).__name__}.")
    records = tape.record.nodes
    needed = _on_path_to(records, target._id) if target.dtype.kind in "fc" else set()
    bits = {}
    for k, s in enumerate(sources):
        if s._id in tape.record.tracked and s.dtype.kind in "fc":
            bits[s._id] = bits.get(s._id, 0) | (1 << k)
    on_path = []
    for node in records:
        if node.out.dtype.kind not in "fc" or node.out_id not in needed:
            continue
        specs, variadic, mask = node.rule.inputs, node.rule.variadic, 0
        for i, x in enumerate(node.inputs):
            m = bits.get(x._id)
            if m and specs[0 if variadic else i].vjp is not None:
                mask |= m
        if mask:
            bits[node.out_id] = bits.get(node.out_id, 0) | mask
            on_path.append((node.out_id, mask))
    reaching = bits.get(target._id, 0) if target._id in needed else 0
    out = []
    for k, s in enumerate(sources):
        if s.dtype.kind not in "fc" or not (reaching >> k) & 1:
            out.append(_explain_one(tape, target, s))
        elif paths:
            out.append(_connected(target, s, tuple(i for i, m in on_path if (m >> k) & 1)))
        else:
            out.append(Explanation("connected", f"The gradient flows from {_label(target)} back to {_label(s)}.",
                                   nodes=(s._id, target._id)))
    return out


def _on_path_to(path, target_id: int) -> set:
    """Ids of the nodes in ``path`` that lead to ``target_id`` (one reverse pass).

    Only inputs a gradient can flow through count (a float output, an input
    whose rule has a VJP), so the result is also "what the target depends on
    differentiably".
    """
    needed = {target_id}
    for node in reversed(path):
        if node.out_id in needed and node.out.dtype.kind in "fc":
            specs, variadic = node.rule.inputs, node.rule.variadic
            for i, x in enumerate(node.inputs):
                if specs[0 if variadic else i].vjp is not None:
                    needed.add(x._id)
    return needed


def _broken_path(tape, target, source, nodes, dep, reach) -> Explanation:
    """The source is in the target's history: find the op where the gradient stops.

    The walk is :func:`~autodiff_viz.diagnosis.provenance.walk_back`, the one the bridges use, over the tape's
    nodes (:func:`_provenance`); of the cuts it meets, the one named is the first the gradient meets coming from
    the source — an edge whose input the source reaches differentiably (``reach``), oldest op first.
    """
    if source._node is not None and source._id not in tape.record.tracked:
        stale = _stale_source(tape, source)
        if stale is not None:
            return stale
    producer, edges = _provenance(tape)
    walk = provenance.walk_back(target, source._id, key=_key, producer=producer, edges=edges)
    cut = provenance.first_cut(walk, source._id, key=_key, producer=producer, edges=edges,
                               rank=lambda c: (c.x._id not in reach, c.at.out_id))
    if cut is not None and cut.x._id in reach:
        node = cut.at
        return _cut_at(tape, target, source, node, [(i, x) for i, x in enumerate(node.inputs) if x._id in reach])
    first = next((n for n in nodes if any(x._id == source._id for x in n.inputs)), None)
    return _not_watched(tape, source, (source._id,) + ((first.out_id,) if first else ()), first)


def _key(t) -> int:
    return t._id


def _provenance(tape):
    """The engine's tape as a provenance record (see :mod:`~autodiff_viz.diagnosis.provenance`): a tensor's
    producer is the node that made it, and an input edge carries no gradient when this tape did not record the
    node (or forgot it at a ``reset()``), the rule has no gradient for that input, or the output is not a float
    — the same three conditions :func:`~autodiff_viz.core.walks.reachable` propagates a gradient by."""
    recorded = {n.out_id for n in tape.record.nodes}

    def producer(t, k):
        return t._node

    def edges(node, t):
        specs, variadic = node.rule.inputs, node.rule.variadic
        flat = node.out_id not in recorded or node.out.dtype.kind not in "fc"
        return [(x, None, provenance.Cut(node, x, node.out, None, "engine", "")
                 if flat or specs[0 if variadic else i].vjp is None else None)
                for i, x in enumerate(node.inputs)]
    return producer, edges


def _cut_at(tape, target, source, node, live) -> Explanation:
    """Explain why ``node`` (which has an input carrying the gradient) does not pass it on."""
    rule = node.rule
    edges = tuple((x._id, node.out_id) for _, x in live)
    ids = (source._id,) + tuple(x._id for _, x in live) + (node.out_id,)
    if not _recorded_by(tape, node):
        return _unrecorded(tape, target, source, node, edges, ids)
    if source._id not in tape.record.tracked:
        return _not_watched(tape, source, ids, node)
    blocked = [(i, x) for i, x in live if rule.spec(i).vjp is None]
    if blocked and rule.name == "stop_gradient":
        return Explanation(
            "non_differentiable_op",
            f"The path from {_label(source)} runs through adv.stop_gradient, which passes the value on "
            "unchanged but, by design, sends no gradient back: the tape treats its output as a "
            f"constant.{_code(node.location)}\n"
            "Fix: remove adv.stop_gradient where you want the gradient; keep it where the cut is "
            "intended (a target network, a detached baseline).",
            _where(node.location), ids, edges, rule.name, (node.location,))
    if blocked and rule.name == "numpy_function":
        return Explanation(
            "non_differentiable_op",
            f"The path from {_label(source)} runs through adv.numpy_function({node.params.get('function')}), "
            "which ran a Python function on numpy values: the tape cannot see inside it, so no gradient flows "
            f"back (as tf.numpy_function).{_code(node.location)}\n"
            "Fix: write the function with adv ops, call it with adv.py_function (its body is recorded), or "
            "give its gradient with @adv.custom_gradient.",
            _where(node.location), ids, edges, rule.name, (node.location,))
    if blocked:
        names = ", ".join(f"'{rule.spec(i).name}'" for i, _ in blocked)
        return Explanation(
            "non_differentiable_op",
            f"The path from {_label(source)} runs through '{rule.name}', which has no gradient "
            f"with respect to its input {names}: its output does not change smoothly with it, "
            f"so no gradient flows back.{_code(node.location)}\n"
            f"Fix: use a differentiable stand-in ({_STAND_IN.get(rule.name, 'a smooth op')}), or "
            "accept that this branch gives no gradient.",
            _where(node.location), ids, edges, rule.name, (node.location,))
    if node.out.dtype.kind not in "fc" or any(x.dtype.kind not in "fc" for _, x in live):
        return Explanation(
            "integer_dtype",
            f"On the path from {_label(source)}, '{rule.name}' turns the value into integers "
            f"({node.out.dtype}). Integers cannot carry a gradient, so it stops here (an index such as "
            f"adv.take(x, i) or x[i] uses the integers' values, not a gradient).{_code(node.location)}\n"
            "Fix: keep the value floating (cast to 'float32' or 'float64', not to an integer type); "
            "cast to integers only for indexing, off the path you differentiate.",
            _where(node.location), ids, edges, rule.name, (node.location,))
    return Explanation(
        "not_used",
        f"The gradient stops at '{rule.name}'.{_code(node.location)}",
        _where(node.location), ids, edges, rule.name, (node.location,))


_STAND_IN = {
    "argmax": "softmax weights instead of the index",
    "argmin": "softmax of the negated values instead of the index",
    "one_hot": "soft targets such as softmax probabilities",
    "less": "a smooth step such as adv.nn.sigmoid(k·(b − a))",
    "greater": "a smooth step such as adv.nn.sigmoid(k·(a − b))",
    "where": "pass the gradient through the selected branches, not the condition",
    "equal": "a smooth similarity such as adv.exp(-(a − b)²) in a loss; keep == for metrics",
    "not_equal": "a smooth similarity such as 1 − adv.exp(-(a − b)²) in a loss; keep != for metrics",
    "greater_equal": "a smooth step such as adv.nn.sigmoid(k·(a − b))",
    "less_equal": "a smooth step such as adv.nn.sigmoid(k·(b − a))",
}
_STEP = ("keep the unrounded value in the loss, or a straight-through estimator "
         "x + adv.stop_gradient(adv.{op}(x) − x), whose gradient is 1; a step function's derivative is 0 almost "
         "everywhere: TensorFlow gives None, PyTorch and JAX give zeros")
_STAND_IN.update({op: _STEP.format(op=op) for op in ("round", "floor", "ceil", "trunc")})


def _unrecorded(tape, target, source, node, edges, ids) -> Explanation:
    """``node`` is on the path but this tape did not record it: when was it computed?"""
    when = _made(tape, node.out_id)
    others = [s for s in (node.tapes or ()) if s != tape.serial]
    if when is None:
        return _not_watched(tape, source, ids, node)
    culprit = node
    if target._node is not None and not _recorded_by(tape, target._node) and _made(tape, target._id) == when:
        culprit = target._node
    what = ("The target" if culprit is target._node else _capital(_output_of(culprit)))
    context = reasons.context_of(culprit.location)
    if context.kind in ("build", "init"):
        text = (f"{what} was computed in {context.function}(), which ran once, {_WHEN[when]} "
                f"(or for another tape), so this tape never saw it.{_code(culprit.location)}\n"
                + reasons.fix("computed_outside_tape", context, ""))
    elif others:
        text = (f"{what} was computed by a call recorded by another tape (an earlier `with` block), "
                f"{_WHEN[when]}. It is stale for this tape: typically `layer.output` from an earlier "
                f"call of the layer.{_code(culprit.location)}\n"
                "Fix: call the layer (or model) again inside this tape's `with` block and use that "
                "output, or ask the tape that recorded the call for the gradient.")
    elif when == "paused":
        text = (f"{what} was computed {_WHEN[when]}, so the tape did not record it.{_code(culprit.location)}\n"
                "Fix: move that line out of the stop_recording() block.")
    else:
        fix = ("Fix: compute it inside the `with adv.GradientTape() as tape:` block (move the line "
               "into the block, or open the tape earlier).")
        text = f"{what} was computed {_WHEN[when]}, so the tape never saw it.{_code(culprit.location)}\n{fix}"
    return Explanation("computed_outside_tape", text, _where(culprit.location),
                       ids + ((culprit.out_id,) if culprit is not node else ()), edges,
                       culprit.rule.name, (culprit.location,))


def _stale_source(tape, source) -> Explanation | None:
    """The source is an op output this tape never saw (a layer.output from another call)."""
    node = source._node
    if _recorded_by(tape, node):
        return None
    when = _made(tape, source._id)
    others = [s for s in (node.tapes or ()) if s != tape.serial]
    if when is None and not others:
        return None
    by = "recorded by another tape (an earlier `with` block)" if others else "not recorded by this tape"
    moment = f", {_WHEN[when]}" if when else ""
    variable = _variable_read_by(node)
    if variable is not None and not node.scope:
        return _copied_variable(source, node, variable, when)
    return Explanation(
        "computed_outside_tape",
        f"The source {_label(source)} comes from a call{_scope(node)} {by}{moment}. This tape does not "
        "know it, "
        "so the target cannot be differentiated with respect to it. This is what happens with "
        f"`layer.output` from an earlier call.{_code(node.location)}\n"
        "Fix: call the layer (or model) inside this tape's `with` block and ask for the gradient "
        "with respect to that call's output (layer.output right after the call).",
        _where(node.location), (source._id,), (), node.rule.name, (node.location,))


def _variable_read_by(node):
    """The variable an op read, or None: the :class:`Variable` when a live tape watches it, else its alias.

    A record keeps a variable's value as read (a leaf alias with the variable's
    id and name, and a history flag). The only other leaf input with that flag
    is a constant some tape watched; a live tape that watched it tells it apart.
    """
    for x in node.inputs:
        if x._node is not None or not x._lineage:
            continue
        if isinstance(x, Variable):
            return x
        known = [w for tape in list(live_tapes.values()) if (w := tape.record.watched.get(x._id)) is not None]
        if any(not isinstance(w, Variable) for w in known):
            continue
        return known[0] if known else x
    return None


def _variable_words(variable) -> str:
    """A variable for prose: its label when the object is at hand, else its name (a record keeps an alias)."""
    if isinstance(variable, Variable):
        return f"the variable {_label(variable)}"
    if variable.name:
        return f"the variable '{variable.name}' (shape {variable.shape}, {variable.dtype})"
    return f"a variable (an unnamed variable of shape {variable.shape}, {variable.dtype})"


def _copied_variable(source, node, variable, when) -> Explanation:
    """The source is a tensor computed from a variable outside the tape (``x = x + 1``), not the variable.

    ``x = x + 1`` on a Variable makes a new tensor and rebinds the name: the
    tape watches the variable, not that tensor, and did not record the op
    that made it (TensorFlow's guide: use ``x.assign_add(1)``).
    """
    moment = f" {_WHEN[when]}" if when else ""
    name = _naming(source)[0].strip("'")
    name = name if name.isidentifier() else "x"
    return Explanation(
        "computed_outside_tape",
        f"The source {_label(source)} is not a variable: it is a tensor computed from "
        f"{_variable_words(variable)} by '{node.rule.name}'{moment}, and this tape did not record that op. The tape "
        f"watches the variable itself, not a tensor made from it elsewhere, so nothing links the target to "
        f"this tensor.{_code(node.location)}\n"
        f"Fix: keep {name} a Variable and change it in place with {name}.assign_add(1) or "
        f"{name}.assign(...), so the tape watches it; or, to differentiate with "
        f"respect to this tensor, call tape.watch({name}) inside the `with` block, or compute it there.",
        _where(node.location), (source._id, variable._id), (), node.rule.name, (node.location,))


def _not_watched(tape, source, ids, node=None) -> Explanation:
    """The source is not tracked by this tape: which of the ways to be unwatched, and its fix.

    ``node`` is the op on the path that read the source (its line is quoted).
    A tape watches a trainable variable by itself only when
    ``watch_accessed_variables=True`` (the default) and an op it records reads
    it; ``tape.reset()`` forgets the watches and the records made so far.
    """
    loc = node.location if node is not None else None
    if _before_reset(tape, node):
        return _forgotten_by_reset(tape, source, ids, node)
    if isinstance(source, Variable) and not source.trainable:
        why = (f"The source {_label(source)} is a Variable with trainable=False, which tapes do not "
               "watch by themselves.")
        parts = (source.path or "").split("/")
        owner = parts[-2] if len(parts) > 1 else ""
        if owner:       # a layer's weight (its path ends "layer/weight"): frozen with the layer, most likely
            fix = (f"Fix: it is a weight of layer {owner!r}; if that layer was frozen (layer.trainable = False), "
                   f"set its trainable back to True (model.get_layer({owner!r}).trainable = True). Or call "
                   "tape.watch(v) inside the `with` block.")
        else:
            fix = "Fix: call tape.watch(v) inside the `with` block, or create it with trainable=True."
    elif isinstance(source, Variable) and not tape.watch_accessed_variables:
        why = (f"The source {_label(source)} was not watched: this tape was made with "
               "watch_accessed_variables=False.")
        fix = "Fix: call tape.watch(v) inside the `with` block, before the first op that uses it."
    elif isinstance(source, Variable):
        why = (f"The source {_label(source)} was not watched: this tape watches a trainable variable when an "
               "op it records reads it, and it recorded no op that reads this one.")
        fix = ("Fix: use the variable inside the `with` block (while the tape records), or call "
               "tape.watch(v) there.")
    else:
        x = _naming(source)[0].strip("'")
        x = x if x.isidentifier() else "x"      # the learner's variable (`image`), else a placeholder
        why = (f"The source {_label(source)} is a constant that this tape never watched, so the ops "
               "on it were not recorded.")
        fix = (f"Fix: call tape.watch({x}) inside the `with` block before using {x}, or make it "
               "adv.Variable(...) (tapes watch trainable variables automatically).")
    made = _made_line(source)
    if loc is None:         # no op read it on this tape: the line that made it (adv.constant / adv.Variable)
        loc = made
    return Explanation("not_watched", f"{why}{_code(loc)}\n{fix}", _where(loc),
                       tuple(ids) or (source._id,), (), node.rule.name if node is not None else None,
                       tuple(v for v in (loc, made if made != loc else None) if v))


def _forgotten_by_reset(tape, source, ids, node) -> Explanation:
    """The op that read the source was recorded before ``tape.reset()``, which forgot it (and the watch)."""
    loc = node.location
    return Explanation(
        "computed_outside_tape",
        f"The ops that used the source {_label(source)} were recorded before tape.reset(), which forgot "
        f"them (and what the tape watched): {_output_of(node)} was computed before the reset, so the "
        f"tape no longer knows how it depends on the source.{_code(loc)}\n"
        "Fix: compute it after tape.reset() (move the line below the reset; call tape.watch(x) again "
        "for a constant), or do not reset the tape.",
        _where(loc), tuple(ids) or (source._id,), (), node.rule.name, (loc,) if loc else ())


def _not_in_history(tape, target, source, nodes, tensors, reach) -> Explanation:
    """The target's history does not contain the source: numpy trip, outside, unwatched or unused."""
    escaped = _left_the_tape(tape, target, source, nodes, tensors, reach) or _predicted(tape, source, tensors)
    if escaped is not None:
        return escaped
    if isinstance(target, Variable) or (target._id in tape.record.watched and not (
            target._node is not None and _recorded_by(tape, target._node))):
        return _leaf_target(tape, target, source, reach)
    outside = _target_outside(tape, target, f" how it depends on {_label(source)}")
    if outside is not None:
        return outside
    if source._id not in tape.record.tracked and not isinstance(source, Variable):
        if source._node is not None:
            stale = _stale_source(tape, source)
            if stale is not None:
                return stale
        return _not_watched(tape, source, ())
    cut = _assigned(tape, source, nodes, tensors, reach) or _made_integer(tape, target, source, nodes, reach)
    if cut is not None:
        return cut
    test = _comparison(tape, reach)
    if test is not None and test.out_id < target._id:
        return _chosen_by_if(target, source, f"The target {_label(target)} does not depend on {_label(source)}: "
                             "no op that made the target reads the source.", test)
    held = _stale_attribute(source, tensors)
    if held is not None:
        return held
    read = sorted((tape.record.watched.get(t._id, t) for t in tensors.values() if t._node is None and t._lineage),
                  key=lambda t: t._id)
    twin = twins.twin_of(source, read, name=lambda t: getattr(t, "name", None), shape=lambda t: t.shape)
    anew = twin is not None and twins.made_anew(_label(source), _label(twin), _made_line(twin), _made_line(source),
                                                (source._id, twin._id, target._id))
    if anew:
        return anew
    return _at_target(
        target, "not_used",
        f"The target {_label(target)} does not depend on {_label(source)} at all: no op that made "
        "the target reads the source.",
        "Fix: check that the loss uses this tensor (a typo, a different copy of the variable, or a "
        "layer that was built twice); its gradient is genuinely zero, use "
        "unconnected_gradients='zero' if you want zeros instead of None.", (source._id, target._id))


#: functions ``variable -> [objects that hold it]`` (the layers register theirs): who owns a weight, for
#: :func:`_stale_attribute`; the diagnosis itself knows no layer
HOLDERS: list = []


def _stale_attribute(source, tensors) -> Explanation | None:
    """``computed_outside_tape``: the target read a tensor that an object holding the source keeps as an
    attribute, computed once from it (``self.kernel = self.kernel * self.mask`` in a layer's ``build``). A tensor
    is a value, not a formula: computed before the tape, it is a constant to it, and the weight's gradient stops
    there. Named when the line that assigned the attribute computes from a weight the same method made, and the
    target read that tensor (or — when this tape recorded nothing that made the target, so it cannot tell — the
    attribute has the weight's shape); at that line."""
    if not isinstance(source, Variable):
        return None
    unrecorded = len(tensors) <= 1        # nothing the tape recorded made the target: only constants went in
    for holders in HOLDERS:
        for owner in holders(source):
            for attr, value in vars(owner).items():
                if attr.startswith("_") or not isinstance(value, Tensor) or isinstance(value, Variable):
                    continue
                stored = naming.attribute_assignment(type(owner), attr)
                if stored is None or not _from_a_weight(stored) or \
                        value._id not in tensors and not (unrecorded and value.shape == source.shape):
                    continue
                loc = stored[:2] if stored else None
                context = reasons.context_of(loc)
                where = f"in {stored[2]}()" if stored else "once"
                return Explanation(
                    "computed_outside_tape",
                    f"The target reads {type(owner).__name__}.{attr}, a tensor computed {where} from "
                    f"{_label(source)} before this tape began, so the tape sees a constant and the gradient "
                    f"stops there.{_code(loc)}\n"
                    + reasons.fix("computed_outside_tape", context,
                                  "Fix: compute it inside the `with adv.GradientTape() as tape:` block, from the "
                                  "variable, every time (in the layer's call())."),
                    _where(loc), (source._id, value._id), (), None, (loc,) if loc else ())
    return None


def _from_a_weight(stored) -> bool:
    """Whether the assignment at ``stored`` (``(file, line, method)``) computes from an attribute that the same
    method made a weight (``self.kernel = self.add_weight(...)``, then ``self.kernel = self.kernel * mask``)."""
    filename, line, _ = stored
    text = linecache.getline(filename, line)
    rhs = text.split("=", 1)[1] if "=" in text else ""
    read = set(re.findall(r"\bself\.(\w+)", rhs))
    lines = linecache.getlines(filename)[max(0, line - 40):line - 1]
    made = {m.group(1) for ln in lines
            if (m := re.search(r"\bself\.(\w+)\s*=\s*self\.add_(?:weight|variable)\(", ln))}
    return bool(read & made)


def _leaf_target(tape, target, source, reach) -> Explanation:
    """The target is a variable or a watched tensor itself (a leaf): not_used, and whether an ``if`` chose it.

    Nothing this tape recorded computed the target, so no recorded op can
    link it to the source. When the source reached a comparison (a recorded
    op with a bool output, such as ``x > 0.0``), that comparison most likely
    fed a Python ``if`` which picked the target (TensorFlow's guide: control
    flow is invisible to the gradient, only the branch taken is recorded).
    """
    kind = "variable" if isinstance(target, Variable) else "watched tensor"
    what = (f"The target {_label(target)} is the {kind} itself: nothing this tape recorded computed it, "
            f"so no recorded op links it to {_label(source)}.")
    test = _comparison(tape, reach)
    if test is not None:
        return _chosen_by_if(target, source, what, test)
    return Explanation(
        "not_used",
        f"{what}\nFix: check that the target is what you meant to differentiate (a computation, not the "
        "bare variable); if it is, its gradient with respect to this source is genuinely zero: use "
        "unconnected_gradients='zero' for zeros instead of None.",
        None, (source._id, target._id))


def _comparison(tape, reach):
    """The last recorded comparison (an op with a bool output) that reads the source or a value made from it."""
    return next((n for n in reversed(tape.record.nodes)
                 if n.out.dtype.kind == "b" and any(x._id in reach for x in n.inputs)), None)


def _chosen_by_if(target, source, what: str, test) -> Explanation:
    """not_used, where the source reached a comparison (``test``): most likely a Python ``if`` chose the branch."""
    loc = test.location
    reader = "The source" if any(x._id == source._id for x in test.inputs) else "A value computed from the source"
    return Explanation(
        "not_used",
        f"{what}\n{reader} was read by the comparison '{test.rule.name}' (a bool result), most likely the "
        "condition of a Python `if` that chose how the target was made. A comparison feeding a Python `if` "
        "is not differentiable: control flow is invisible to the gradient, the tape records only the "
        f"branch taken, and no op of that branch reads the source.{_code(loc)}\n"
        "Fix: nothing is broken: the target does not change smoothly with the source, so its gradient is "
        "None (unconnected_gradients='zero' gives zeros). For a gradient through the choice, blend the "
        "branches with a smooth weight such as adv.nn.sigmoid(k * x) instead of the `if`.",
        _where(loc), (source._id, test.out_id, target._id),
        tuple((x._id, test.out_id) for x in test.inputs if x._id == source._id), test.rule.name,
        (loc,) if loc else ())


def _at_target(target, reason: str, what: str, fix: str, ids) -> Explanation:
    """An explanation located at the line that made ``target``: ``what``, that line, then ``fix``."""
    loc = target._node.location if target._node is not None else None
    return Explanation(reason, f"{what}{_code(loc)}\n{fix}", _where(loc), tuple(ids), (), None,
                       (loc,) if loc else ())


def _target_outside(tape, target, what: str = "") -> Explanation | None:
    """The target was made while this tape did not record (before, after, paused): computed_outside_tape.

    ``what`` completes "this tape never recorded …" (how it depends on a source); None when the
    target was made while the tape recorded, or this tape recorded the op that made it.
    """
    when = _made(tape, target._id)
    if when is None or (target._node is not None and _recorded_by(tape, target._node)):
        return None
    return _at_target(
        target, "computed_outside_tape",
        f"The target {_label(target)} was computed {_WHEN[when]}, so this tape never recorded{what or ' it'}.",
        "Fix: compute the target inside the `with adv.GradientTape() as tape:` block.", (target._id,))


def unrecorded_target(tape, target) -> Explanation | None:
    """Why this tape holds nothing for ``target`` (so no trace or comparison of it), or None when it does.

    The target is on the tape when a record made it or read it, or the tape
    watches it. Otherwise it was computed outside the tape
    (``computed_outside_tape``) or, made while the tape recorded, from
    nothing the tape watches (``not_watched``): a constant, or ops on constants.
    """
    tid = target._id
    if tid in tape.record.tracked or any(n.out_id == tid or any(x._id == tid for x in n.inputs)
                                         for n in tape.record.nodes):
        return None
    outside = _target_outside(tape, target)
    if outside is not None:
        return outside
    return _at_target(
        target, "not_watched",
        f"The target {_label(target)} was made from nothing this tape watches (constants only), so "
        "the tape recorded none of the ops that made it.",
        "Fix: make the inputs adv.Variable(...) or call tape.watch(x) on them inside the `with` block, "
        "before the ops that use them.", (tid,))


def require_recorded(tape, target, what: str) -> None:
    """Refuse a target this tape holds nothing about (its trace or comparison would be empty), saying why.

    The text is :func:`unrecorded_target`'s diagnosis (the same words as
    ``tape.explain`` and ``adv.show``), with its fix. ``None`` and non-tensor
    targets pass: the caller handles them.
    """
    if not isinstance(target, Tensor):
        return
    why = unrecorded_target(tape, target)
    if why is not None:
        raise ValueError(f"{what}: this tape recorded nothing about the target, so there is nothing to show "
                         f"({why.reason}).\n{why.message}")


def _assigned(tape, source, nodes, tensors, reach) -> Explanation | None:
    """A variable the target's history reads was assigned a value that depends on the source.

    ``v.assign(t)`` copies ``t``'s value into the variable and records no
    op, so the target's history stops at the variable (a leaf). The engine
    notes each assign of a tracked value (``tape.record.assigns``, see
    :func:`core.tensor.assigned`); this finds one whose variable the target reads
    and whose value depends on the source.
    """
    for note in reversed(tape.record.assigns):
        if note.variable_id in tensors and (note.value_id == source._id or note.value_id in reach):
            var = tape.record.watched.get(note.variable_id, tensors[note.variable_id])
            made = next((n for n in tape.record.nodes if n.out_id == note.value_id), None)
            return _assign_explanation(tape, source, var, note, made)
    return None


def _assign_explanation(tape, source, var, note, made) -> Explanation:
    what = _label(source) if made is None else _output_of(made)
    loc = note.location
    esc = next((e for e in reversed(tape.record.escapes) if e.tensor_id == note.value_id), None)
    via = f" (after it left the tape through {esc.how})" if esc is not None and note.value_id != source._id else ""
    if note.how == "set_weights":
        how = "by set_weights(...)"
        fix = ("Fix: set_weights copies values into the weights (as Keras'), so to differentiate through "
               "new weights compute with those tensors directly: a forward pass written with them "
               "(x @ new_kernel + new_bias), as in a meta-learning inner step; keep set_weights for loading "
               "values, outside what you differentiate.")
    else:
        how = f"with .{note.how}()"
        fix = ("Fix: use the tensor itself in the loss (y = v * 2.0; loss = adv.sum(y * 3.0)) instead of "
               "assigning it to a variable; assign only to store results, outside what you differentiate.")
    return Explanation(
        "non_differentiable_op",
        f"The path from {_label(source)} stops at an assignment: {what} was stored{via} in the variable "
        f"{_label(var)} {how}, and the target reads the variable.{_code(loc)}\n"
        "Assigning to a variable is not differentiable (as in TensorFlow): the tape sees the variable "
        "as a leaf with no history, so the gradient stops at the assign.\n" + fix,
        _where(loc), (source._id, note.value_id, note.variable_id), (), note.how, (loc,) if loc else ())


def _made_integer(tape, target, source, nodes, reach) -> Explanation | None:
    """An op of this tape turned a value that depends on the source into integers used off the graph.

    Integer tensors enter ops such as ``take`` and ``x[i]`` as indices (values,
    not inputs), so they leave no edge in the target's history. The op is the
    one whose integer output an op of the history holds as an index, else —
    when the target has no history on this tape — the last one; the cut named is the first op on the way to
    it where the gradient stops (a ``floor`` before the cast to an index, or the cast itself).
    """
    dep = {source._id}                  # what depends on the source through any op (floor, round …)
    for n in tape.record.nodes:
        if any(x._id in dep for x in n.inputs):
            dep.add(n.out_id)
    exits = [n for n in tape.record.nodes if n.out.dtype.kind not in "fc" and any(x._id in dep for x in n.inputs)]
    if not exits:
        return None
    held = {id(p) for node in nodes for v in node.params.values()
            for p in (v if isinstance(v, tuple) else (v,)) if isinstance(p, np.ndarray)}
    used = [n for n in exits if id(n.out) in held]
    if not used and target._node is not None and _recorded_by(tape, target._node):
        return None
    exit_ = (used or exits)[-1]
    # the first op on the way to it where the gradient stops: floor before a cast, or the cast itself
    ancestors = {exit_.out_id}
    for n in reversed(tape.record.nodes):
        if n.out_id in ancestors:
            ancestors.update(x._id for x in n.inputs)
    node = next((n for n in tape.record.nodes if n.out_id in ancestors and n.out_id not in reach
                 and any(x._id in reach for x in n.inputs)), exit_)
    cut = _cut_at(tape, target, source, node, [(i, x) for i, x in enumerate(node.inputs) if x._id in reach])
    if node is exit_ or cut is None:
        return cut
    return dataclasses.replace(cut, message=(
        f"{cut.message}\nAfter it, '{exit_.rule.name}' makes integers ({exit_.out.dtype}), which the target uses "
        f"as indices (or numbers) — integers carry no gradient either.{_code(exit_.location)}\nFor sampling at "
        "fractional positions, weight the neighbouring values by x − floor(x) (bilinear interpolation): those "
        "weights are differentiable in x."))


def _left_the_tape(tape, target, source, nodes, tensors, reach) -> Explanation | None:
    """A value that depends on the source left as numpy and came back as a constant on the path."""
    escapes = [e for e in tape.record.escapes if e.tensor_id in reach]
    if not escapes:
        return None
    consumers = {}
    for node in nodes:
        for x in node.inputs:
            consumers.setdefault(x._id, node)
    leaves = [t for t in tensors.values() if t._node is None and not isinstance(t, Variable)
              and t._id != source._id]
    for esc in escapes:
        for leaf in leaves:
            if leaf._id > esc.tensor_id and same_values(leaf._value, esc.value):
                node = consumers.get(leaf._id)
                back = node.location if node is not None else None
                return _escape_explanation(source, esc, leaf, back, "same values")
    end = tape.record.end_id if tape.record.end_id is not None else float("inf")
    for esc in reversed(escapes):
        # A constant of the escaped value's shape made afterwards, inside the tape (scalars only
        # by exact value above: Python literals such as 2.0 are constants too).
        later = [leaf for leaf in leaves if esc.tensor_id < leaf._id < end and leaf._id > tape.record.start_id
                 and leaf.shape == esc.value.shape and leaf.size > 1]
        if later:
            node = consumers.get(later[0]._id)
            back = node.location if node is not None else None
            return _escape_explanation(source, esc, later[0], back, "made later")
    late = [e for e in escapes if e.tensor_id < target._id]
    if late and target._node is None:
        esc = late[-1]
        return _escape_explanation(source, esc, target, None, "target")
    return None


def _predicted(tape, source, tensors) -> Explanation | None:
    """``model.predict(x)`` inside the tape: its numpy output, made from ``source``, is on the target's path."""
    for ids, values, where, mark in reversed(getattr(tape, "_predicts", ())):
        if source._id not in ids:
            continue
        later = [t for t in tensors.values() if t._node is None and not isinstance(t, Variable) and t._id > mark]
        if later:
            return Explanation(
                "left_the_tape",
                f"The target is computed from the result of model.predict(...){_code(where)}\n"
                f"predict runs the model without recording and returns numpy arrays, so the value has no "
                f"history: nothing connects it to {_label(source)} and the gradient is None.\n"
                "Fix: call the model itself inside the tape, model(x) (or model(x, training=True)); keep "
                "predict for inference outside tapes.",
                _where(where), (source._id,), (), "predict", (where,) if where else ())
    return None


_CAME_BACK = {
    "same values": "and came back as {t}",
    "made later": "and {t}, made from plain values after that, sits on the path: most likely "
                  "it was computed from that value",
    "target": "and the target {t} has no recorded history: it was built afterwards from plain values, "
              "most likely from that one",
}


def _escape_explanation(source, esc, back_tensor, back_location, evidence: str) -> Explanation:
    """``evidence``: how the way back was found — "same values", "made later" or "target"."""
    t = _label(back_tensor)
    if evidence != "target":
        unnamed = t.startswith("(an unnamed")
        t = f"a constant (shape {back_tensor.shape}, {back_tensor.dtype})" if unnamed else f"the constant {t}"
    came_back = _CAME_BACK[evidence].format(t=t)
    back_line = _code(back_location)
    text = (f"A value that depends on {_label(source)} left the tape as numpy / a Python number "
            f"through {esc.how}{_code(esc.location)}\n"
            f"{came_back}{':' + back_line if back_line else '.'}\n"
            "The tape cannot see through numpy: from that point the value is a constant, and the "
            "gradient is None.\n"
            + reasons.fix("left_the_tape", reasons.context_of(esc.location),
                          "Fix: keep it a tensor: drop the .numpy() / float() / .item() call and use the tensor "
                          "itself (index it with t[0], use adv ops instead of numpy functions)."))
    locations = tuple(loc for loc in (esc.location, back_location) if loc)
    return Explanation("left_the_tape", text, _where(esc.location),
                       (source._id, esc.tensor_id, back_tensor._id), ((esc.tensor_id, back_tensor._id),),
                       None, locations)


# ---------------------------------------------------------------------------
# Connected, but a path was lost on the way (partly_lost)
# ---------------------------------------------------------------------------
def _partly_lost(tape, target, source, ids) -> Explanation | None:
    """The source reaches the target, but a value computed from it also left the tape and came back as numpy.

    Evidence that it came back: a float constant made inside this tape sits in
    the target's history, and it holds the escaped values, or numpy itself
    took the tensor (``np.asarray()``: ``X.dot(W)``, a write into an
    ndarray) rather than the learner asking for a number to print.
    """
    taken = partial(tape, target, source._id)
    if not taken:
        return None
    esc = taken[0]
    more = len({e.location for e in taken}) - 1
    text = (f"The gradient of {_label(target)} with respect to {_label(source)} is not None, but it is incomplete: "
            f"a value computed from the source left the tape {naming.lost_at(esc, False)}{_code(esc.location)}\n"
            "numpy computed on from there, so what that line adds to the target is a constant to the tape and "
            f"its share of the gradient is missing. The gradient you get comes only from the path the "
            f"tape recorded ({len(ids)} op(s); a regularization term, say)."
            + (f" {more} more line(s) lost a path too: tape.record.escapes lists them." if more > 0 else "")
            + f"\n{naming.LOST_FIX}")
    return Explanation("partly_lost", text, _where(esc.location), (source._id, esc.tensor_id) + tuple(ids),
                       (), esc.how, (esc.location,) if esc.location else ())
