"""The one walk behind every "why is my gradient None?": from the target back to the source, over what a recorder saw.

A recorder (the PyTorch bridge, the TensorFlow bridge) keeps a *provenance
record*: for every value, the record that made it (``producer``), and for
every record, the values it was made from. Some of those edges carry no
gradient — a ``.detach()``, an op run under ``no_grad``, a value that left as
numpy and came back as a new constant, an integer cast — and the recorder
says which, and why, in its own words (its *cut table*). This module walks
that record; the recorder hands it three functions and keeps no walk of its
own:

* ``producer(t, k)``: the record that made the value ``t`` as record ``k`` read
  it (``None`` for a leaf: a parameter, a constant made before the recording);
* ``edges(op, t)``: ``(x, k, cut)`` for every value ``x`` the value ``t`` made by
  ``op`` came from, ``k`` the moment ``x`` was read and ``cut`` a :class:`Cut`
  when no gradient flows along that edge (else None);
* ``key(t)``: what identifies a value (``id`` for a torch tensor, TensorFlow's
  ``_id``).

The walk is breadth first from the target, so the first cut named is the one
nearest the target on a path that reaches the source. It answers three
things: whether a path *without* a cut reaches the source (then the gradient
flows: a different question, such as a non-leaf or a ``.grad`` read too early,
may remain), every cut met, and the leaves met (values with no recorded
maker, where the recorder may have missed a step). :func:`first_cut` then
keeps the first cut whose input really depends on the source
(:func:`depends`): a cut on the labels' path (an ``argmax`` of ``y``) is no
reason for a weight's ``None``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class Cut:
    """An edge from ``x`` to ``out`` that carries no gradient, and why.

    ``at`` is the record where the gradient stops (its ``location`` is the
    user's line), ``k`` the moment ``x`` was read, ``reason`` one of the
    reasons of :mod:`autodiff_viz.diagnosis.reasons` (or the bridge's own),
    ``words`` the recorder's sentence for it. ``listed=False`` propagates the
    cut along the walk without naming it (an integer value whose maker is
    recorded: the maker is the cause, not the reader). ``via``: the record
    the value left through on the way (the ``.item()`` a re-wrap brought back).
    """

    at: object
    x: object
    out: object
    k: int | None
    reason: str
    words: str
    listed: bool = True
    via: object = None


@dataclass
class Walk:
    """What :func:`walk_back` found: ``reached`` (a path without a cut), ``cuts``, ``leaves``, ``first_use``
    (the record that read the source first on the way back) and ``records`` (every record met, nearest first)."""

    reached: bool = False
    cuts: list = field(default_factory=list)
    leaves: list = field(default_factory=list)
    first_use: object = None
    records: list = field(default_factory=list)
    target: object = None
    start: int | None = None


def walk_back(target, skey, *, key, producer, edges, start=None) -> Walk:
    """Walk the provenance record from ``target`` back towards the source whose key is ``skey`` (see above)."""
    out = Walk(target=target, start=start)
    frontier = deque([(target, start, None)])
    seen = set()
    while frontier:
        t, k, below = frontier.popleft()
        if key(t) == skey:
            out.reached = out.reached or below is None
            continue
        op = producer(t, k)
        if op is None:
            out.leaves.append(t)
            continue
        mark = (id(op), key(t), below is None)
        if mark in seen:
            continue
        seen.add(mark)
        out.records.append(op)
        for x, kx, cut in edges(op, t):
            if out.first_use is None and key(x) == skey:
                out.first_use = cut.at if cut is not None else op
            if cut is not None and cut.listed:
                out.cuts.append(cut)
            frontier.append((x, kx, cut or below))
    return out


def depends(t, k, skey, *, key, producer, edges) -> bool:
    """Was the value ``t`` (as record ``k`` read it) computed from the source keyed ``skey``, through cuts or not?"""
    stack, seen = [(t, k)], set()
    while stack:
        x, kx = stack.pop()
        if key(x) == skey:
            return True
        op = producer(x, kx)
        if op is None or id(op) in seen:
            continue
        seen.add(id(op))
        stack.extend((y, ky) for y, ky, _ in edges(op, x))
    return False


def fresh_starts(walk: Walk, kinds=("rewrap",)) -> list:
    """The records met on the way back where the history starts afresh from plain values (``torch.tensor(v)``,
    ``tf.constant(v)``) and whose values the walk could not trace to an escape: where a cause may hide."""
    return list(dict.fromkeys(op for op in walk.records if op.kind in kinds))


def first_cut(walk: Walk, skey, *, key, producer, edges, rank=None) -> Cut | None:
    """The cut that explains the ``None``: of the cuts whose input depends on the source keyed ``skey``, the first
    (in ``rank`` order, then nearest the target) that lies on *every* path from the source to the target; None
    when no cut on the target's history depends on the source.

    A cut on one path only is not the reason: ``tf.where(x > 0, x, x * x)`` reads ``x`` through a comparison,
    which has no gradient, but the branches carry it. What stops the gradient is a cut that every path crosses
    (a sum computed after the tape closed, an ``argmax`` between a generator and the discriminator). When no
    single cut does (each path has its own), the first cut in order is named.
    """
    cuts = sorted(walk.cuts, key=rank) if rank is not None else walk.cuts
    graph = {"key": key, "producer": producer, "edges": edges}
    candidates = [c for c in cuts if depends(c.x, c.k, skey, **graph)]
    if len(candidates) > 1 and walk.target is not None:
        for cut in candidates[:_DOMINANCE_CHECKS]:
            if _on_every_path(walk, cut, skey, **graph):
                return cut
    return candidates[0] if candidates else None


_DOMINANCE_CHECKS = 32      # a walk that meets hundreds of cuts (a forward under no_grad) finds one in the first


def _on_every_path(walk: Walk, cut: Cut, skey, *, key, producer, edges) -> bool:
    """Whether every path from the target back to the source crosses ``cut``'s edge (none reaches it without)."""
    stack, seen = [(walk.target, walk.start)], set()
    while stack:
        t, k = stack.pop()
        if key(t) == skey:
            return False
        op = producer(t, k)
        if op is None or (id(op), key(t)) in seen:
            continue
        seen.add((id(op), key(t)))
        stack.extend((x, kx) for x, kx, _ in edges(op, t) if not (op is cut.at and x is cut.x and t is cut.out))
    return True


def caller_names(namespace: dict, is_tensor, weights=None) -> dict:
    """``{id(value): name}`` from a caller's variables, for values made before a recording (no line names them).

    ``is_tensor(v)`` tells the framework's tensors (``w`` for ``w = ...``);
    ``weights(v)``, for a model or layer, gives its ``[(path, weight)]``, named
    ``model.fc.weight``. A value bound to several names keeps the first. One
    function for the engine and both bridges: each passes what its tensors and
    models are.
    """
    names = {}
    for key, value in namespace.items():
        if key.startswith("_") or isinstance(value, type):
            continue
        if is_tensor(value):
            names.setdefault(id(value), key)
        elif weights is not None:
            for qual, w in weights(value) or ():
                names.setdefault(id(w), f"{key}.{qual}")
    return names
