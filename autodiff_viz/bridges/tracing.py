"""The trace builder both bridges share: from recorded nodes and the framework's gradients to a :class:`Trace`.

``adv.torch`` and ``adv.tf`` record different machinery, but once a bridge has made the trace's nodes (its
leaves and one node per recorded op) and asked its framework for the gradient of the target with respect to
each, the rest is the same: mark the nodes on the path and the backward order, then give every edge
``x → y = op(x, …)`` its chain-rule step — why no gradient flows along it (a cut, labels, state), the rule
table's factor and formula (or the bridge's own, for a loss), ``ḡ_y``, the framework's own vector–Jacobian
product ``ḡ_x`` and, when both sides are small, the local Jacobian ``∂y/∂x``.

Two things keep a deep model's trace cheap. A value read by exactly one op on the path receives its whole
gradient from that op (``ḡ_x`` is a sum over the ops that read ``x``, here of one term), so that edge's
contribution *is* the node's gradient the framework already gave, and no second vector–Jacobian product is
computed. Local Jacobians, one backward pass per entry of the output, are computed for the small edges nearest
the target, up to :data:`JACOBIAN_ROWS` rows in all; a note says when farther edges were left without one.

A bridge passes an :class:`Adapter` that answers those questions for its framework (as
:func:`~autodiff_viz.bridges.recordings.hand_items` takes ``is_tensor`` and ``key_of``). This module imports
no framework.
"""
from __future__ import annotations

from ..records.traces.build import bridge_edge
from ..records.traces.model import Trace, TraceEdge

JACOBIAN_LIMIT = 64     # a local Jacobian is kept when both sides have at most this many entries
EDGE_LIMIT = 2000       # above this many edges, contributions and Jacobians are not computed (only ḡ of nodes)
JACOBIAN_ROWS = 512     # local Jacobian rows computed per trace, nearest the target first


class Adapter:
    """What a framework tells :func:`finish` (each method gets the recorded op and input index ``i``)."""

    def summary(self, value, limit):
        """A :class:`~autodiff_viz.records.traces.model.Summary` of a framework tensor."""
        raise NotImplementedError

    def size(self, t) -> int:
        """How many entries tensor ``t`` has."""
        raise NotImplementedError

    def reason(self, op, i, t, src, out) -> str | None:
        """Why no gradient flows from ``out`` back to input ``i`` (a cut, the labels, state), or None."""
        raise NotImplementedError

    def rule(self, op, i):
        """``(rule, input spec)`` of the rule table for input ``i``, or None when no rule maps."""
        raise NotImplementedError

    def label(self, op) -> str:
        """The op as a note names it (``torch.conv2d``, ``tf Conv2D``)."""
        raise NotImplementedError

    def said(self, k, op, i, src, out) -> str | None:
        """A whole formula the bridge states itself for edge ``k`` (a loss's edge to its prediction), or None."""
        return None

    def vjp(self, op, out, g_out) -> dict:
        """``{input index: ḡ_out · ∂out/∂input}``: the framework's own vector–Jacobian product of ``op``."""
        raise NotImplementedError

    def jacobian(self, op, i, t, out):
        """The local Jacobian ``∂out/∂input i`` as a matrix (rows: entries of ``out``), or None."""
        raise NotImplementedError


def finish(adapter: Adapter, nodes, raw_edges, grads, target, source_ids, notes, limit, kinds, key_of) -> Trace:
    """The :class:`Trace` of built ``nodes`` and ``raw_edges``, with the framework's gradients.

    ``raw_edges``: ``(op, i, t, src node, dst node, out)`` for input ``i`` (tensor ``t``) of each recorded op
    (``out``: its output); ``grads``: ``{node id: ḡ}`` (the framework's tensors) for the nodes on a path;
    ``target``: the target's node or None; ``key_of``: a framework tensor → its tensor id (for
    :meth:`Trace.node_id_of`).
    """
    for n in nodes:
        g = grads.get(n.id)
        if g is not None:
            n.grad = adapter.summary(g, limit)
            n.on_path = True
    steps = [n.id for n in reversed(nodes) if n.kind == "op" and n.on_path]
    edges, vjps, flowing = [], {}, []
    small = len(raw_edges) <= EDGE_LIMIT
    readers: dict = {}
    for k, (op, i, t, src, dst, out) in enumerate(raw_edges):
        reason = adapter.reason(op, i, t, src, out)
        mapped = adapter.rule(op, i)
        said = None if reason or mapped else adapter.said(k, op, i, src, out)
        if said is not None:
            e = TraceEdge(f"e{k}", src.id, dst.id, i, "input", said, True, None, formula=said)
        else:
            e = bridge_edge(f"e{k}", src.id, dst.id, i, mapped, reason, adapter.label(op), t.shape, out.shape)
        g_out = grads.get(dst.id)
        if reason is None and g_out is not None and src.on_path:
            e.upstream = dst.grad
            e.on_path = True
            flowing.append(k)
            readers[src.id] = readers.get(src.id, 0) + 1
        edges.append(e)
    if small:
        rows = JACOBIAN_ROWS
        for k in reversed(flowing):          # nearest the target first: the Jacobian budget goes there
            op, i, t, src, dst, out = raw_edges[k]
            e = edges[k]
            if readers[src.id] == 1 and src.grad is not None:
                e.contribution = src.grad
            else:
                if (op.index, dst.id) not in vjps:          # per output: a, b = h.chunk(2) passes back two parts
                    vjps[op.index, dst.id] = adapter.vjp(op, out, grads[dst.id])
                c = vjps[op.index, dst.id].get(i)
                e.contribution = None if c is None else adapter.summary(c, limit)
            if e.contribution is not None and adapter.size(t) <= JACOBIAN_LIMIT and \
                    adapter.size(out) <= JACOBIAN_LIMIT:
                if rows >= adapter.size(out):
                    e.jacobian = adapter.jacobian(op, i, t, out)
                    rows -= adapter.size(out)
                else:
                    rows = -1
        if rows < 0:
            notes.append(f"local Jacobians ∂y/∂x are shown on the small edges nearest the target ({JACOBIAN_ROWS} "
                         "rows in all); farther edges show ḡ_y and ḡ_x only")
    trace = Trace(nodes, edges, target=None if target is None else target.id, sources=source_ids, steps=steps,
                  notes=notes, kinds=kinds)
    trace.key_of = key_of
    return trace


def unreached_notes(missing) -> list:
    """A trace's notes for the sources it draws no path from: ``missing`` is ``[(name, used)]``, ``used`` False
    for a source no recorded op read, True for one read off the target's path (its ``.grad`` stays None).

    One source keeps its own sentence. Many — a part of the model that ran but feeds nothing the loss reads,
    as CANINE's upsampling projection under a classification head — are named by the modules that hold them
    (a name's path without its last segment: ``canine.projection.conv`` for ``canine.projection.conv.weight``),
    merged up the tree, deepest first, until at most :data:`NAMED` groups remain (the rest counted when the
    names share no module): twenty weights make one line, not twenty.
    """
    notes = []
    for used, alone, many in ((False, "the source {} is not used by the recorded ops",
                               "{} of the sources are not used by the recorded ops: {}"),
                              (True, "the target does not depend on the source {}: no path to draw",
                               "the target does not depend on {} of the sources, in {}: no path to draw "
                               "(rec.explain(target, source) says why)")):
        names = [name for name, u in missing if u is used]
        if len(names) == 1:
            notes.append(alone.format(names[0]))
        elif names:
            notes.append(many.format(len(names), _by_module(names)))
    return notes


NAMED = 3       # groups a note about many sources names


def _by_module(names) -> str:
    """``"a.b (2), a.c (16)"``: the names counted by their modules, merged up the tree to at most :data:`NAMED`."""
    def parent(path):
        cut = max(path.rfind("."), path.rfind("/"))
        return path[:cut] if cut > 0 else path

    groups: dict = {}
    for name in names:
        key = parent(name)
        groups[key] = groups.get(key, 0) + 1
    while len(groups) > NAMED:
        depth = max(k.count(".") + k.count("/") for k in groups)
        merged: dict = {}
        for k, n in groups.items():
            k2 = parent(k) if k.count(".") + k.count("/") == depth else k
            merged[k2] = merged.get(k2, 0) + n
        if len(merged) == len(groups) and depth == 0:
            break
        groups = merged
    parts = [f"{k} ({n})" for k, n in groups.items()]
    if len(parts) > NAMED:
        parts = parts[:NAMED] + [f"{len(parts) - NAMED} more"]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
