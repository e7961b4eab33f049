"""Walking the record: reverse mode (:func:`backward`) and forward mode (:func:`push_tangents`).

* :func:`backward` walks a tape's nodes in reverse with a dict of incoming
  gradients (no recursion, nothing mutated on tensors), calling each rule's
  VJP. Cotangents may carry leading batch axes, so a full Jacobian is one walk
  seeded with an identity.
* :func:`push_tangents` walks the nodes forward, calling each rule's JVP.
* :func:`reachable` finds the nodes on a differentiable path from the sources.

Both walks run on raw numpy arrays unless some tape is recording, in which
case they run on tensors so that the outer tape records the walk itself
(gradient of a gradient, Hessians). A walk nobody records pays nothing for
recording.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..base.state import state
from . import rules
from .engine import _float, _release_inputs, _release_node, _release_out, _release_unsaved, lift, unbroadcast


def reachable(nodes, sources: set) -> tuple[set, list]:
    """Ids that depend differentiably on ``sources``, and the nodes on those paths."""
    reach = set(sources)
    path = []
    for node in nodes:
        if node.out.dtype.kind not in "fc":
            continue
        specs = node.rule.inputs
        variadic = node.rule.variadic
        for i, t in enumerate(node.inputs):
            if t._id in reach and specs[0 if variadic else i].vjp is not None:
                reach.add(node.out_id)
                path.append(node)
                break
    return reach, path


def _values(inputs):
    if len(inputs) == 2:
        return (inputs[0]._value, inputs[1]._value)
    if len(inputs) == 1:
        return (inputs[0]._value,)
    return [t._value for t in inputs]


def backward(nodes, seeds: dict, sources: set, on_step: Callable | None = None, free: int | None = None,
             freed: set | None = None, reach: set | None = None) -> dict:
    """Reverse-mode walk: ``{id: gradient}`` for every id on a path to ``seeds``.

    ``seeds`` maps target ids to upstream gradients of shape ``batch +
    target.shape`` (numpy arrays, or tensors when a tape records the walk).
    Gradients of ids not in ``sources`` are dropped once used, unless
    ``on_step(node, g, contributions)`` is given (it sees every step).
    ``free``: the serial of a non-persistent tape whose walk this is; each
    of its records (made by it alone) lets go of its large values as soon
    as the walk is past it, so activations are freed during the walk, not
    after it (as PyTorch does). ``freed``, if given, receives the output
    ids of those records, so that :func:`release` need not visit them again.

    ``reach``: the ids a gradient may flow into. By default the walk works
    them out first (:func:`reachable` from ``sources``). A tape whose every
    watched tensor is a source passes the ids it tracks instead, which it
    collected while recording: every one depends on a watched tensor, so
    the forward pass is not needed. (An id that depends on a source only
    through an op without gradient, ``stop_gradient(x)``, then receives a
    contribution the walk drops at that op; integer ids never do.)

    This loop runs once per recorded op, so it reads everything it needs
    into locals first and keeps the common step (numpy arrays, no batch
    axes, one tape) free of branches it does not need.
    """
    if state.anomaly is not None:
        return state.anomaly.backward(nodes, seeds, sources, on_step)   # checks every step: frees after
    keep_all = on_step is not None
    if reach is None or keep_all:
        reach = reachable(nodes, sources)[0]
    recorded = bool(state.recording)
    grads = {k: v for k, v in seeds.items() if k in reach}
    get, pop = grads.get, grads.pop
    mine, stand_ins = (free,), {}
    releasing = free is not None and not keep_all
    if releasing:
        _release_unsaved(nodes, mine, stand_ins)
    ndarray = np.ndarray
    owned = set()       # ids whose gradient is an array this walk made (a sum): later contributions add in place
    for node in reversed(nodes):
        oid = node.out_id
        g = get(oid) if keep_all or oid in sources else pop(oid, None)
        if g is None:
            continue
        inputs = node.inputs
        if recorded:
            xs, y = inputs, node.output()
        else:
            n = len(inputs)
            xs = (inputs[0]._value, inputs[1]._value) if n == 2 else (inputs[0]._value,) if n == 1 else \
                [t._value for t in inputs]
            y = node.out
        rule = node.rule
        vjps, variadic, elementwise, params = rule.vjps, rule.variadic, rule.elementwise, node.params
        contributions = [] if keep_all else None
        i = -1
        for t in inputs:
            i += 1
            tid = t._id
            if tid not in reach:
                continue
            vjp = vjps[0 if variadic else i]
            value = t._value
            if vjp is None or value.dtype.kind not in "fc":
                continue
            if variadic:
                gi = vjp(g, y, *xs, i=i, **params)
            elif params:
                gi = vjp(g, y, *xs, **params)
            else:
                gi = vjp(g, y, *xs)
            if gi is None:
                continue
            if elementwise and gi.shape != value.shape:
                gi = unbroadcast(gi, value.shape, y.ndim)
            prev = get(tid)
            if prev is None:
                grads[tid] = gi
            elif tid in owned and type(prev) is ndarray and type(gi) is ndarray and \
                    prev.shape == gi.shape and prev.dtype == gi.dtype:
                prev += gi
            else:
                grads[tid] = prev + gi
                if not recorded:
                    owned.add(tid)
            if keep_all:
                contributions.append((i, gi))
        if keep_all:
            on_step(node, g, contributions)
        elif releasing and node.tapes == mine:
            xs = y = g = gi = value = None
            saves = rule.saves          # what the pre-pass kept (see _release_unsaved) is all there is to let go of
            if saves == "all":
                _release_node(node, stand_ins)
            elif saves == "inputs":
                _release_inputs(node, stand_ins)
            elif saves == "output":
                _release_out(node)
            if freed is not None:
                freed.add(oid)
    return grads


def push_tangents(nodes, tangents: dict) -> dict:
    """Forward-mode walk: extend ``{id: tangent}`` through ``nodes`` with the JVP rules.

    Tangents have shape ``batch + x.shape``; pushing an identity gives a
    whole Jacobian in one walk.
    """
    recorded = bool(state.recording)
    for node in nodes:
        rule, params, inputs = node.rule, node.params, node.inputs
        if node.out.dtype.kind not in "fc":
            continue
        total, batch = None, None
        for i, t in enumerate(inputs):
            dx = tangents.get(t._id)
            if dx is None:
                continue
            spec = rule.spec(i)
            if spec.vjp is None or not _float(t):
                continue
            if spec.jvp is None:
                raise NotImplementedError(
                    f"forward mode: the op '{rule.name}' has no JVP rule for its input "
                    f"'{spec.name}'. Use reverse mode for this function: tape.gradient, adv.vjp, or "
                    "adv.jacobian(f, mode='reverse') (the default)."
                )
            if recorded:
                xs, y = inputs, node.output()
            else:
                xs, y = _values(inputs), node.out
            batch = dx.shape[:dx.ndim - t.ndim]
            if rule.elementwise:
                dx = lift(dx, t.ndim, y.ndim)
            c = spec.jvp(dx, y, *xs, i=i, **params) if rule.variadic else spec.jvp(dx, y, *xs, **params)
            total = c if total is None else total + c
        if total is not None:
            full = tuple(batch) + node.out.shape
            if total.shape != full:
                total = rules.broadcast_to(total, shape=full)
            tangents[node.out_id] = total
    return tangents
