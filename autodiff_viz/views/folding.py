"""Folding a trace into boxes: the hierarchy of groups and loops, and the layout that :mod:`.dot` draws.

A trace records every op, which is far too much to read at once. This module
decides *what* is drawn, before :mod:`.dot` decides *how*:

* :func:`hierarchy` finds the foldable groups of the record by meaning: every
  name scope (a layer's call, a loss object, ``adv.name_scope``) and every call
  of the learner's own function inside the tape is a :class:`Group`; the same
  layer called again and again in a row (an RNN cell once per time step) is a
  :class:`Loop`.
* :func:`layout` turns a fold state (``collapse``, ``expanded``, ``rolled``)
  into :class:`Box` es: ``Layout.boxes[box_id]`` and ``Layout.owner[node_id]``.
  Above ``budget`` boxes it folds deeper (every op → layers → blocks → the
  model, then the middle of the tape) and writes a note saying so.
* :func:`default_expanded` is what ``collapse="auto"`` opens when nothing is
  asked: the models (their layers are the boxes) and every group that holds a
  mark (:func:`marked_keys`), so a mark is never hidden in a folded box.

Box ids (``n3``, ``g4``, ``l0``, ``fold``) do not depend on what is expanded;
keys are stable strings (see :mod:`.dot` for the whole contract of the views
that restyle a drawing). Everything here is data: no DOT, no SVG.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import blocks, figure
from .blocks import Repeat  # noqa: F401 (read as folding.Repeat / dot.Repeat)

NODE_BUDGET = 60

COLLAPSES = (None, "auto", "layers")
ROLL_ABOVE = 3          # a layer or function called more than this many times in a row is drawn rolled


@dataclass
class Box:
    """One drawn box: a single trace node, a folded group, a rolled loop, or the folded middle.

    ``id`` is what the DOT uses (``n3`` for a node, ``g4`` for a group, ``l2``
    for a loop, ``fold``); it is stable across fold states, so the SVG element
    ``fwd_g4`` / ``bwd_g4`` is the same group whatever else is expanded.
    ``key`` is the group's fold-state key (the string to put in
    ``expanded=``), ``None`` for a node or the folded middle. ``what`` says
    what the group means: ``"layer"`` (a name scope: a layer, a loss, a
    ``name_scope``), ``"function"`` (a call of the user's own function) or
    ``"loop"`` (the repeated calls of one layer, e.g. an RNN cell over time).
    """

    id: str
    kind: str            # "node", "group", "loop", "fold"
    members: list = field(default_factory=list)
    title: str = ""
    order: int = 0
    key: str | None = None
    what: str = ""
    count: int = 1       # for a loop: how many steps it rolls up
    call: tuple | None = None    # (k, n, word): the k-th of n runs of one module (Hierarchy.calls)


@dataclass
class Group:
    """A foldable box of the trace: one run of a name scope or one call of a user function.

    ``key`` is stable (same program, same key): the scope path for a scope
    (``"model/dense_1"``), ``name()`` for a function, with ``#k`` for the
    k-th separate run of the same path (``"model/dense_1#2"``); a child's key
    starts with its parent's. ``id`` is ``g<k>`` in order of first appearance.
    ``loop`` is the key of the rolled loop it belongs to (``"rnn/cell*"``), if any.
    """

    key: str
    id: str
    title: str
    what: str
    parent: str | None
    order: int
    base: str = ""
    loop: str | None = None
    repeat: str | None = None


@dataclass
class Loop:
    """The repeated calls of one layer or function, drawn as one box with an edge ``t → t+1``.

    ``key`` is the fold-state key (``"simple_rnn/simple_rnn_cell*"``; put it in
    ``expanded`` to draw the steps unrolled); ``groups`` are the keys of the
    steps in order; ``steps[t]`` the node ids of step ``t`` (t = 0 … T−1);
    ``outputs[t]`` the node id of what step ``t`` hands to step ``t+1`` (the
    hidden state ``h(t)``; the step's last op when nothing is handed on);
    ``grad_norms[t]`` is ``‖ḡ_h(t)‖`` (None off the path) — the data of the
    vanishing / exploding gradient plot; ``value_norms[t]`` is ``‖h(t)‖``.
    """

    key: str
    id: str
    title: str
    parent: str | None
    groups: list
    steps: list
    outputs: list
    grad_norms: list
    value_norms: list = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.groups)


@dataclass
class Hierarchy:
    """Every foldable group of a trace: ``paths[node_id]`` lists the group keys around a node, outermost first.

    ``transparent``: containers whose one sub-group opens with them; ``with_parent``: groups that open when their
    parent opens (:func:`.blocks.opens_with_parent`); ``held[node_id]``: the repeat whose instances share that
    weight (:attr:`.blocks.Repeat.held`); ``calls[key]``: ``(k, n, "call" | "step")`` for a module that ran ``n``
    times under one parent, this group its ``k``-th run (:func:`_calls`).
    """

    paths: dict
    groups: dict
    loops: dict
    repeats: dict = field(default_factory=dict)
    transparent: frozenset = frozenset()
    with_parent: frozenset = frozenset()
    held: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)
    memo: dict = field(default_factory=dict, repr=False, compare=False)    # answers per fold state (one layout)


@dataclass
class Layout:
    """Which box each trace node is drawn in, and the notes about folding.

    ``owner[node_id]`` is the id of the box that draws the node (the node's
    own id when it is drawn alone): the map from a backward step (a node id
    of ``trace.steps``) to the box to light up when a box has too many steps
    to list them as classes (``step_many``, see :func:`.dot.to_dot`).
    """

    boxes: dict
    owner: dict
    notes: list
    hierarchy: Hierarchy | None = None


def hierarchy(trace) -> Hierarchy:
    """The foldable groups of ``trace`` (computed once per trace and cached on it).

    Groups come from meaning, not from size: every name scope (a layer's
    call, a loss object, ``adv.name_scope``) and every call of the user's own
    Python function inside the tape (``node.function``). A function call is
    placed inside the name scopes its ops share, and the scopes opened inside
    it nest inside it. Separate runs of the same scope are separate groups
    (``#2``). A trainable variable, or an unnamed constant, read only inside
    one group belongs to it; named inputs (``x``, labels) stay outside, so the
    picture shows what flows into a layer.

    Loops: siblings with the same path (the same layer called again and
    again, like an RNN cell once per time step) form a :class:`Loop`.
    """
    cached = getattr(trace, "_hierarchy", None)
    if cached is not None and cached[0] == len(trace.nodes):
        return cached[1]
    ops = [n for n in trace.nodes if n.kind == "op"]
    chains, common = _function_calls(ops)
    segs = blocks.segments(trace, ops, figure.is_loss)
    for n in ops:
        seg = segs[n.id]
        if n.function is not None:
            chain = chains[(n.function, n.call)]
            c = common[chain[0]]
            seg = seg[:c] + [("function",) + call for call in chain] + seg[c:]
        segs[n.id] = seg
    groups, paths = _instances(ops, segs)
    calls = _repeated_calls(trace, ops, groups, paths)
    if calls:
        for (nid, j), t in calls.items():
            segs[nid][j] = segs[nid][j] + (t,)
        groups, paths = _instances(ops, segs)
    index = trace._edge_index()
    for n in trace.nodes:
        if n.kind == "op":
            continue
        outs = index[2].get(n.id, ())
        if not outs or not (n.kind in ("variable", "state") or not n.title or n.title == n.op):
            paths[n.id] = ()
            continue
        prefix = None
        for e in outs:
            p = paths.get(e.dst, ())
            if prefix is None:
                prefix = p
            else:
                k = 0
                while k < len(prefix) and k < len(p) and prefix[k] == p[k]:
                    k += 1
                prefix = prefix[:k]
        while prefix and groups[prefix[-1]].what == "constant":    # state read by plumbing (a dropout's seed)
            prefix = prefix[:-1]                                   # stays drawn, its edge saying so
        paths[n.id] = prefix or ()
    loops = _find_loops(trace, groups, paths)
    repeats = blocks.find_repeats(trace, groups, paths)
    out = Hierarchy(paths, groups, loops, repeats, blocks.pass_through(groups, paths, trace),
                    blocks.opens_with_parent(trace, groups),
                    {nid: rkey for rkey, rep in repeats.items() for nid in rep.held}, _calls(trace, groups, loops))
    trace._hierarchy = (len(trace.nodes), out)
    return out


def _calls(trace, groups, loops) -> dict:
    """``{group key: (k, n, word)}`` for the runs of one module that ran ``n`` times under one parent (XLNet's
    forward calls its one ``nn.Dropout`` on the word embeddings, on the position encodings and on the output):
    each run is a box of its own, titled as the ``k``-th ``"call"`` so that three boxes do not read as one module
    drawn three times — or the ``k``-th ``"step"`` of a loop drawn unrolled (an RNN cell over time). Not a list
    the code only indexes (:attr:`Trace.idle`), which is never called."""
    runs: dict = {}
    idle = getattr(trace, "idle", frozenset())
    for g in groups.values():
        if g.what == "layer" and g.title not in idle:
            runs.setdefault((g.parent, g.base), []).append(g)
    steps = {k for lp in loops.values() if _recurrent(trace, lp.steps) for k in lp.groups}
    return {g.key: (k, len(gs), "step" if g.key in steps else "call") for gs in runs.values() if len(gs) > 1
            for k, g in enumerate(sorted(gs, key=lambda g: g.order), start=1)}


def _recurrent(trace, steps) -> bool:
    """Whether each of a loop's runs hands something to the next (an RNN cell's state), not only calls of one
    layer on data of their own (XLNet's one dropout on three tensors)."""
    where = {nid: t for t, ids in enumerate(steps) for nid in ids}
    return all(any(where.get(e.dst) == t + 1 for nid in steps[t] for e in trace.edges_from(nid))
               for t in range(len(steps) - 1))


def _function_calls(ops) -> tuple[dict, dict]:
    """``({call: the calls around it, outermost first, itself last}, {call: scope depth its ops share})``.

    A call is ``(function, call number)``. A call whose ops all lie between
    two ops of another call (``helper`` called inside ``block``) is nested
    in it; its box is drawn inside that call's box.
    """
    span: dict = {}
    scopes: dict = {}
    for k, n in enumerate(ops):
        if n.function is None:
            continue
        call = (n.function, n.call)
        first, _ = span.get(call, (k, k))
        span[call] = (first, k)
        scopes.setdefault(call, []).append(n.scope.split("/") if n.scope else [])
    chains, stack = {}, []
    for call in sorted(span, key=lambda c: (span[c][0], -span[c][1])):
        while stack and span[stack[-1]][1] < span[call][0]:
            stack.pop()
        parent = stack[-1] if stack and span[call][1] <= span[stack[-1]][1] else None
        chains[call] = (chains[parent] if parent else ()) + (call,)
        stack.append(call)
    common = {}
    for call, parts in scopes.items():
        outer = chains[call][0]
        parts = parts + scopes.get(outer, []) if outer != call else parts
        c = 0
        while all(len(p) > c for p in parts) and len({p[c] for p in parts}) == 1:
            c += 1
        common[call] = c
    return chains, common


def _instances(ops, segs) -> tuple[dict, dict]:
    """Groups and node paths from each op's list of segments: consecutive ops sharing a segment
    prefix share its groups; a segment opened again later is a new run (``#2``)."""
    groups: dict = {}
    paths: dict = {}
    seen: dict = {}
    stack: list = []
    for order, n in enumerate(ops):
        seg_list = segs[n.id]
        k = 0
        while k < len(stack) and k < len(seg_list) and stack[k][0] == seg_list[k]:
            k += 1
        del stack[k:]
        for seg in seg_list[k:]:
            parent = stack[-1][1] if stack else None
            text = seg[1] + ("()" if seg[0] == "function" else "")
            base = f"{parent}/{text}" if parent else text
            seen[base] = seen.get(base, 0) + 1
            key = base if seen[base] == 1 else f"{base}#{seen[base]}"
            groups[key] = Group(key, f"g{len(groups)}", text, seg[0], parent, order, base=base)
            stack.append((seg, key))
        paths[n.id] = tuple(key for _, key in stack)
    return groups, paths


def _repeated_calls(trace, ops, groups, paths) -> dict:
    """Find groups that are really one layer called several times in a row (an RNN cell per time step).

    The record keeps the scope path of each op, not the call it came from,
    so back-to-back calls of one layer look like one run. When what a group
    directly holds (its ops, and its sub-groups as one item each) repeats
    with a period (the same sequence, ``c ≥ 2`` times) and each repetition
    reads what the one before produced (the state handed from step to
    step), and each runs the same modules (a loop over a model's stages,
    ``patch_embeddings[i]`` then ``block[i]``, runs others), the repetitions
    are separate calls. Returns ``{(node id, depth):
    call number}`` for the calls after the first, so the groups can be
    rebuilt with each call as its own run.
    """
    items: dict = {}
    for n in ops:
        path = paths[n.id]
        for j, key in enumerate(path):
            sig = ("op", n.op, None) if j == len(path) - 1 else ("group", groups[path[j + 1]].title, path[j + 1])
            seq = items.setdefault(key, [])
            if seq and sig[0] == "group" and seq[-1][0] == sig:
                seq[-1][1].append(n.id)
            else:
                seq.append((sig, [n.id]))
    out = {}
    for key, seq in items.items():
        sigs = [sig[:2] for sig, _ in seq]
        m = len(sigs)
        period = next((p for p in range(1, m // 2 + 1) if m % p == 0 and sigs[p:] == sigs[:-p]
                       and sum(len(ids) for _, ids in seq[:p]) >= 2), None)
        if period is None:
            continue
        chunks = [[nid for _, ids in seq[c * period:(c + 1) * period] for nid in ids] for c in range(m // period)]
        chunk_of = {nid: c for c, ids in enumerate(chunks) for nid in ids}
        if not all(any(chunk_of.get(e.src) == c - 1 for nid in chunks[c] for e in trace.edges_into(nid))
                   for c in range(1, len(chunks))):
            continue
        modules = [{trace.node(nid).scope for nid in ids} for ids in chunks]
        if any(m != modules[0] for m in modules[1:]):
            continue            # a loop over stages (patch_embeddings[i], block[i]) in one call runs other modules
        for c, ids in enumerate(chunks[1:], start=2):
            for nid in ids:
                out[(nid, paths[nid].index(key))] = c
    return out


def _find_loops(trace, groups, paths) -> dict:
    """The :class:`Loop` s: separate runs of one scope under one parent (the same layer called again and again)
    that are one layer's calls, not N layers of one name or N applications of one block (:func:`_one_layer`)."""
    siblings: dict = {}
    for g in groups.values():
        siblings.setdefault((g.parent, g.base), []).append(g.key)
    members: dict = {}
    for nid, path in paths.items():
        for key in path:
            members.setdefault(key, []).append(nid)
    loops = {}
    for (parent, base), keys in siblings.items():
        if len(keys) < 2:
            continue
        lkey = base + "*"
        steps = [members.get(k, []) for k in keys]
        if not _one_layer(trace, steps):
            continue
        where = {nid: t for t, ids in enumerate(steps) for nid in ids}
        outputs = []
        for t, ids in enumerate(steps):
            handed = [nid for nid in ids for e in trace.edges_from(nid) if where.get(e.dst) == t + 1]
            ops = [nid for nid in ids if trace.node(nid).kind == "op"]
            outputs.append(handed[-1] if handed else (ops[-1] if ops else None))
        norms, values = [], []
        for nid in outputs:
            node = trace.node(nid) if nid is not None else None
            norms.append(None if node is None or node.grad is None else node.grad.stats["norm"])
            values.append(None if node is None else node.value.stats["norm"])
        loops[lkey] = Loop(lkey, f"l{len(loops)}", groups[keys[0]].title, parent, keys, steps, outputs, norms,
                           values)
        for k in keys:
            groups[k].loop = lkey
    return loops


def _one_layer(trace, steps) -> bool:
    """Whether runs ``steps`` (node ids each) of one scope are one layer called step after step (an RNN cell
    over time): they read the same weights, or none, and each step takes in data of its own (``x_t``).

    Runs that read separate weights are separate layers under one name (Keras ConvNeXt's blocks between the
    residual additions written as ``x + y``); runs that read the same weights but no data of their own (no
    tensor but what the run before made, scalars, and what the first run read too: a mask) are one block
    applied N times in a stack (ALBERT): both are blocks "× N" (:func:`.blocks.find_repeats`), not a loop.
    """
    reads, fresh = [], []
    where = {nid: t for t, ids in enumerate(steps) for nid in ids}
    for t, ids in enumerate(steps):
        weights, outside = set(), set()
        for nid in ids:
            if trace.node(nid).kind != "op":
                continue
            for e in trace.edges_into(nid):
                src = trace.node(e.src)
                if src.kind == "variable":
                    weights.add(e.src)
                elif src.kind != "state" and tuple(src.shape) and where.get(e.src) != t - 1 and \
                        not (where.get(e.src) == t and src.kind == "op"):
                    outside.add(e.src)
        reads.append(frozenset(weights))
        fresh.append(outside)
    if all(reads) and sum(len(r) for r in reads) == len(frozenset().union(*reads)):
        return False
    shared = reads[0] and all(r == reads[0] for r in reads)
    return not (shared and all(f <= fresh[0] for f in fresh[1:]))


def breadcrumb(trace, key: str) -> list:
    """The keys from the outermost group down to ``key`` (a loop key: its parent's path, then the loop).

    What a view shows above an opened box; folding back to a crumb removes
    that key and every key below it from ``expanded``.
    """
    h = hierarchy(trace)
    if key in h.loops or key in h.repeats:
        parent = (h.loops.get(key) or h.repeats.get(key)).parent
        return (breadcrumb(trace, parent) if parent else []) + [key]
    if key not in h.groups:
        raise KeyError(f"no foldable box {key!r} in this trace; the keys are trace.groups() and loop keys.")
    out = []
    while key is not None:
        out.append(key)
        key = h.groups[key].parent
    return out[::-1]


def loops(trace) -> list:
    """The :class:`Loop` s of ``trace`` (repeated calls of one layer or function), in tape order."""
    return list(hierarchy(trace).loops.values())


def _visible(h: Hierarchy, nid: str, collapse, expanded, rolled) -> str | None:
    """The key of the group, loop or repeat run that draws node ``nid``, or None when the node is drawn alone."""
    path = h.paths.get(nid, ())
    if not path or collapse is None:
        return None
    if collapse == "layers" or isinstance(collapse, int):
        key = path[-1] if collapse == "layers" else path[min(collapse, len(path)) - 1]
        return _rolled(h, key, expanded, rolled) or key
    opened_with_parent = False       # the one sub-group of an open pass-through container opens with it
    for key in path:
        loop = _rolled(h, key, expanded, rolled)
        if loop is not None:
            return loop
        run = _run(h, key, expanded)
        if run is not None:
            return run
        if key not in expanded and not opened_with_parent and key not in h.with_parent \
                and h.groups[key].repeat is None:
            return key
        opened_with_parent = key in h.transparent
    rkey = h.held.get(nid)            # a weight shared by the instances of a folded repeat is counted in it
    return rkey if rkey is not None and not open_instances(h, h.repeats[rkey], expanded) else None


def open_instances(h: Hierarchy, rep, expanded) -> list:
    """Indices of the instances of repeat ``rep`` drawn open: those whose key (or a key below it) is in
    ``expanded``; the first when only the repeat's own key is; none when the repeat is folded."""
    expanded = expanded if isinstance(expanded, frozenset) else frozenset(expanded)
    memo = h.memo.get(("open", rep.key, expanded))
    if memo is not None:
        return memo
    above = h.memo.get(("above", expanded))
    if above is None:                        # every key with an expanded key below it: "a/b" for "a/b/c"
        above = h.memo[("above", expanded)] = {e[:k] for e in expanded for k, ch in enumerate(e) if ch == "/"}
    inside = [i for i, k in enumerate(rep.groups) if k in expanded or k in above]
    out = h.memo[("open", rep.key, expanded)] = inside or ([0] if rep.key in expanded else [])
    return out


def _run(h: Hierarchy, key: str, expanded) -> str | None:
    """For an instance ``key`` of a repeat: the key of the run box that draws it (``None``: it is drawn open).

    The whole repeat folded is its own key; opened, each open instance is drawn open and the instances between
    them fold into runs ``<repeat key>@<first index>`` ("× k" boxes).
    """
    rkey = h.groups[key].repeat
    if rkey is None:
        return None
    rep = h.repeats[rkey]
    opened = open_instances(h, rep, expanded)
    if not opened:
        return rkey
    index = h.memo.get(("index", rep.key))
    if index is None:
        index = h.memo[("index", rep.key)] = {k: i for i, k in enumerate(rep.groups)}
    i = index[key]
    if i in opened:
        return None
    start = max((o + 1 for o in opened if o < i), default=0)
    return f"{rkey}@{start}"


def _rolled(h: Hierarchy, key: str, expanded, rolled) -> str | None:
    """The loop that group ``key`` is one step of, if that loop is drawn rolled (one box for every step)."""
    loop = h.groups[key].loop
    if loop is not None and loop not in expanded and (
            rolled is True or (rolled is None and h.loops[loop].count > ROLL_ABOVE)):
        return loop
    return None


def _box_for(h: Hierarchy, key: str, order: int, expanded) -> Box:
    """A new box for visible key ``key``: a loop, a repeat (whole or a run of it) or a group."""
    if key in h.loops:
        loop = h.loops[key]
        return Box(loop.id, "loop", [], loop.title, order, key, "loop", loop.count)
    if key in h.repeats or "@" in key and key.split("@")[0] in h.repeats:
        rkey, _, start = key.partition("@")
        rep = h.repeats[rkey]
        if not start:
            return Box(rep.id, "repeat", [], rep.title, order, rkey, "repeat", rep.count)
        start = int(start)
        stop = start
        while stop + 1 < rep.count and _run(h, rep.groups[stop + 1], expanded) == key:
            stop += 1
        return Box(f"{rep.id}_{start}", "repeat", [], rep.title, order, rep.groups[start], "repeat",
                   stop - start + 1)
    g = h.groups[key]
    return Box(g.id, "group", [], g.title, order, key, g.what, call=h.calls.get(key))


def _weight_beside(trace, h: Hierarchy, nid: str, key: str | None) -> bool:
    """A weight is drawn as its own node beside its layer when its layer is the box drawn (or is open), or when
    the drawn box is a layer whose formula states that weight's gradient (Keras' ``MultiHeadAttention`` and
    its ``query/kernel``); inside any other folded box (a block, "× N") it is counted in the box.

    A folded layer that reads more than :data:`WEIGHTS_BESIDE` weights of its own and states none of their
    gradients (XLNet's relative attention: ``q``, ``k``, ``v``, ``o``, ``r``, ``r_w_bias``, ``r_r_bias``,
    ``seg_embed`` read directly) counts them in its box too: a fan of formula-less edges would make the
    figure wider than a notebook, and opening the layer draws each beside the op that reads it."""
    path = h.paths.get(nid, ())
    if key is None:
        return True
    n = trace.node(nid)
    stated = key in h.groups and h.groups[key].what != "block" and \
        figure.states_weight(trace, h.groups[key].title, n.name or n.title)
    if bool(path) and key == path[-1]:
        return stated or _own_weights(trace, h).get(key, 0) <= WEIGHTS_BESIDE
    return stated


WEIGHTS_BESIDE = 3      # weights a folded layer draws beside it when its formula states none of their gradients


def _own_weights(trace, h: Hierarchy) -> dict:
    """``{layer key: how many weights it reads directly}`` (a weight's innermost group), counted once per
    hierarchy."""
    counts = h.memo.get("own weights")
    if counts is None:
        counts = h.memo["own weights"] = {}
        for n in trace.nodes:
            path = h.paths.get(n.id, ())
            if path and figure.drawn_alone(n):
                counts[path[-1]] = counts.get(path[-1], 0) + 1
    return counts


def _assign(trace, h: Hierarchy, collapse, expanded, rolled, position, weights_beside=True):
    boxes, owner, by_key = {}, {}, {}
    for n in trace.nodes:
        key = _visible(h, n.id, collapse, expanded, rolled)
        if key is None or (weights_beside and figure.drawn_alone(n)
                           and (collapse != "auto" or _weight_beside(trace, h, n.id, key))):
            boxes[n.id] = Box(n.id, "node", [n.id], n.title, position[n.id])
            owner[n.id] = n.id
            continue
        box = by_key.get(key)
        if box is None:
            box = by_key[key] = _box_for(h, key, position[n.id], expanded)
            boxes[box.id] = box
        box.members.append(n.id)
        owner[n.id] = box.id
    return boxes, owner


def _check_budget(budget) -> None:
    """``budget`` is None (no folding for size) or a number of boxes >= 1."""
    if budget is None:
        return
    if isinstance(budget, bool) or not hasattr(budget, "__index__"):
        raise TypeError(f"budget must be a whole number of boxes (e.g. {NODE_BUDGET}) or None for no limit, "
                        f"got {type(budget).__name__} {budget!r}.")
    if budget < 1:
        raise ValueError(f"budget must be at least 1 box (or None for no limit), got {budget}.")


def _expanded_keys(expanded) -> frozenset:
    """``expanded`` as a set of box keys; a single string is refused (it would be read letter by letter)."""
    if isinstance(expanded, str):
        raise TypeError(f"expanded takes a collection of box keys, got the string {expanded!r}: write "
                        f"expanded={{{expanded!r}}} (the keys are those of trace.groups()).")
    try:
        keys = frozenset(expanded or ())
    except TypeError:
        raise TypeError(f"expanded takes a collection of box keys (strings from trace.groups()), got "
                        f"{type(expanded).__name__}.") from None
    bad = [k for k in keys if not isinstance(k, str)]
    if bad:
        raise TypeError(f"expanded takes box keys as strings (from trace.groups()), got {bad[0]!r}.")
    return keys


def resolve_keys(h: Hierarchy, keys) -> frozenset:
    """``keys`` as box keys: a key of ``trace.groups()`` (or a loop's or a repeat's) stands for itself; any other
    string is what the learner calls a part — a module's path as ``named_modules()`` prints it
    (``bert.encoder.layer.0``), a Keras layer's or block's name (``block_3``), the end of a key
    (``bert/bert.encoder``) — and stands for every group it names (the runs of one module: ``x``, ``x#2``).

    A name that fits groups of different parts, or none, is refused before anything is drawn, with the keys that
    come closest: a misspelt key that silently drew the whole model folded would look like a broken picture.
    """
    known = set(h.groups) | set(h.loops) | set(h.repeats)
    out = set()
    for k in keys:
        if k in known:
            out.add(k)
            continue
        if k + "*" in h.loops:                           # a layer over time, asked by its layer's key
            out.add(k + "*")
            continue
        found = [g.key for g in h.groups.values() if _names(g, k)]
        parts = {g.split("#")[0] for g in found}
        if len(parts) == 1:
            out.update(found)
            continue
        if parts:
            raise ValueError(f"expanded: {k!r} names {len(parts)} different boxes: "
                             f"{', '.join(repr(p) for p in sorted(parts)[:6])}. Pass the one you mean by its key.")
        import difflib
        names = {g.title: g.key for g in h.groups.values()} | {key: key for key in known}
        near = [names[n] for n in difflib.get_close_matches(k, list(names), n=4, cutoff=0.5)]
        hint = f" Closest: {', '.join(repr(n) for n in dict.fromkeys(near))}." if near else ""
        raise ValueError(f"expanded: no box of this trace is called {k!r}.{hint} trace.groups() lists every box "
                         "by key; a module's path (bert.encoder.layer.0) or a layer's name works too.")
    return frozenset(out)


def _names(group: Group, name: str) -> bool:
    """Whether ``name`` is what a learner calls ``group``: its title, its key's last segment, or its key's end."""
    last = group.key.rsplit("/", 1)[-1].split("#")[0]
    return name in (group.title, last) or group.key.split("#")[0].endswith("/" + name)


def marked_keys(trace) -> frozenset:
    """Keys of the groups around every marked node or edge (a failed check, the broken path of a None).

    ``collapse="auto"`` draws these groups open unless ``expanded`` is given, so
    a mark is never hidden inside a folded box.
    """
    if not trace.marks:
        return frozenset()
    h = hierarchy(trace)
    ends = {e.id: (e.src, e.dst) for e in trace.edges}
    keys = set()
    for m in trace.marks:
        for node_id in ends.get(m.ref, (m.ref,)):
            keys.update(h.paths.get(node_id, ()))
    return frozenset(keys)


def default_expanded(trace) -> frozenset:
    """What ``collapse="auto"`` opens by default: the models and their backbones (their layers are the boxes,
    :func:`figure.model_keys`) and every mark."""
    return marked_keys(trace) | figure.model_keys(trace, hierarchy(trace))


def layout(trace, collapse="auto", budget=NODE_BUDGET, expanded=None, rolled=None) -> Layout:
    """Group the trace's nodes into boxes, then fold deeper until at most ``budget`` boxes remain.

    Args:
        collapse: ``"auto"`` (default: fold by meaning; every outermost
            group is one box unless its key is in ``expanded``), ``None``
            (every node), ``"layers"`` (the innermost group of every node) or
            an int depth (groups at that nesting depth); in every mode but
            ``None`` a group that is one step of a loop is drawn as the loop,
            as ``rolled`` says.
        budget: the most boxes (a weight drawn beside its layer counts; a
            weight inside a folded box does not). Above it, ``"auto"`` first
            keeps weights inside their layers' boxes, then folds the open
            boxes farthest from the ones you opened (never those: the box you
            open opens), and only then folds a run of boxes off that path
            into one; the other modes fold deeper — every node → layers → the
            outer blocks → the model. Each step is said in
            :attr:`Layout.notes` (drawn under the picture). ``None``: no limit.
        expanded: keys of the groups and loops drawn open (see
            :attr:`Box.key`, :func:`hierarchy`); only for ``"auto"``.
            ``None`` (default): the models and the groups that hold a mark
            (:func:`default_expanded`); ``()``: every group folded.
        rolled: ``None`` (default: a loop of more than ``ROLL_ABOVE`` steps is
            drawn rolled), ``True`` (every loop rolled) or ``False`` (unrolled).
    """
    if collapse not in COLLAPSES and not (isinstance(collapse, int) and not isinstance(collapse, bool)
                                          and collapse >= 1):
        raise ValueError(f"collapse must be None, 'auto', 'layers' or a group depth >= 1, got {collapse!r}.")
    _check_budget(budget)
    h = hierarchy(trace)
    asked = None if expanded is None else _with_ancestors(h, resolve_keys(h, _expanded_keys(expanded)))
    expanded = default_expanded(trace) if asked is None and collapse == "auto" else (asked or frozenset())
    position = {n.id: k for k, n in enumerate(trace.nodes)}
    notes = []
    boxes, owner = _assign(trace, h, collapse, expanded, rolled, position)
    over = budget is not None and len(boxes) > budget
    if over and collapse == "auto":
        boxes, owner, notes = _fit_auto(trace, h, expanded, asked, rolled, position, budget)
    elif over and h.groups:
        tries = []
        if collapse is None:
            tries.append(("layers", "each layer is folded into one box (collapse='layers')"))
        depth = max((len(p) for p in h.paths.values()), default=0)
        for d in range(depth - 1 if collapse in (None, "layers") else collapse - 1, 0, -1):
            tries.append((d, f"layers are folded into the blocks {d} level{'s' if d > 1 else ''} deep"))
        tries.append(("auto", "the model is folded to its outermost blocks"))
        for mode, text in tries:
            b2, o2 = _assign(trace, h, mode, frozenset() if mode == "auto" else expanded, rolled, position)
            if len(b2) < len(boxes):
                boxes, owner = b2, o2
                notes = [f"{len(trace.nodes)} nodes are more than the budget of {budget} boxes: {text}."]
            if len(boxes) <= budget:
                break
    if budget is not None and len(boxes) > budget:
        boxes, owner, folded = _fold_middle(boxes, owner, budget, _kept_boxes(trace, h, boxes, asked))
        if folded:
            notes.append(f"{folded} nodes in the middle of the tape are folded into one box to stay "
                         f"within {budget} boxes; draw everything with to_dot(..., budget=None).")
    return Layout(boxes, owner, notes, h)


def _fit_auto(trace, h, expanded, asked, rolled, position, budget):
    """Fit ``collapse="auto"`` into ``budget`` boxes without folding what the learner opened.

    First the weights go inside their layers' boxes (a box then counts them); then the open boxes farthest from
    the opened path fold, farthest first (the path: the keys in ``asked`` and every box around them, or, by
    default, the marks and the outermost model).
    """
    boxes, owner = _assign(trace, h, "auto", expanded, rolled, position, weights_beside=False)
    notes = [f"{len(trace.nodes)} nodes are more than the budget of {budget} boxes: each layer's weights are "
             "kept inside its box (their count and ‖ḡ‖ are in it); open a layer to draw them."]
    if len(boxes) <= budget:
        return boxes, owner, notes
    path = set()
    for key in (asked if asked is not None else marked_keys(trace) | figure.model_keys(trace, h, backbones=False)):
        path.update(_ancestors(h, key))
    chains = [_ancestors(h, k) for k in path] or [[]]

    def distance(key):
        mine = _ancestors(h, key)
        best = None
        for other in chains:
            common = 0
            while common < min(len(mine), len(other)) and mine[common] == other[common]:
                common += 1
            d = len(mine) + len(other) - 2 * common
            best = d if best is None else min(best, d)
        return best or 0

    foldable = sorted((k for k in expanded if k not in path), key=lambda k: (-distance(k), k))
    folded = []
    for key in foldable:
        expanded = frozenset(k for k in expanded if k != key and not k.startswith(key + "/"))
        folded.append(key)
        boxes, owner = _assign(trace, h, "auto", expanded, rolled, position, weights_beside=False)
        if len(boxes) <= budget:
            break
    if folded:
        names = ", ".join(h.groups[k].title if k in h.groups else k for k in folded[:3])
        notes.append(f"to stay within {budget} boxes, the boxes farthest from the ones opened are folded again "
                     f"({names}{' …' if len(folded) > 3 else ''}).")
    return boxes, owner, notes


def _with_ancestors(h: Hierarchy, keys) -> frozenset:
    """``keys`` and every group around them: a box opened deep inside opens the boxes it is drawn in."""
    out = set(keys)
    for k in keys:
        out.update(_ancestors(h, k)[:-1] if k in h.groups or k in h.loops or k in h.repeats else ())
    return frozenset(out)


def _ancestors(h: Hierarchy, key: str) -> list:
    """``key``'s chain of group keys from the outermost down (a repeat's key: its first instance's chain). A step
    of a loop has the loop in its chain: opening one step of a rolled loop unrolls the loop around it."""
    if key in h.repeats:
        key = h.repeats[key].groups[0]
    if key in h.loops:
        return _ancestors(h, h.loops[key].parent) + [key] if h.loops[key].parent else [key]
    out = []
    while key is not None and key in h.groups:
        out.append(key)
        if h.groups[key].loop is not None:
            out.append(h.groups[key].loop)
        key = h.groups[key].parent
    return out[::-1]


def _kept_boxes(trace, h, boxes, asked) -> set:
    """Boxes the last-resort fold leaves alone: the target's and the content of every box the learner opened."""
    opened = set(asked or ())
    kept = set()
    for b in boxes.values():
        if trace.target in b.members:
            kept.add(b.id)
        parent = h.groups[b.key].parent if b.key in h.groups else None
        if b.kind == "node":
            path = h.paths.get(b.id, ())
            parent = path[-1] if path else None
        if parent is not None and parent in opened:
            kept.add(b.id)
    return kept


def _fold_middle(boxes, owner, budget, kept=()):
    """Fold the longest run of consecutive boxes (in tape order) that holds none of ``kept`` into one box ``fold``,
    long enough to reach ``budget`` if it can. Returns the boxes, owners and how many nodes were folded."""
    ordered = sorted(boxes.values(), key=lambda b: b.order)
    need = len(ordered) - budget + 1
    best, start = (0, 0), None
    for i, b in enumerate(ordered + [None]):
        if b is not None and b.id not in kept:
            start = i if start is None else start
            continue
        if start is not None and i - start > best[1] - best[0]:
            best = (start, i)
        start = None
    lo, hi = best
    width = min(hi - lo, max(need, 2))
    if width < 2:
        return boxes, owner, 0
    lo = max(lo, min((lo + hi - width) // 2, hi - width))        # the middle of the free run
    hi = lo + width
    middle = ordered[lo:hi]
    fold = Box("fold", "fold", [], "", middle[0].order)
    for b in middle:
        fold.members.extend(b.members)
    for m in fold.members:
        owner[m] = "fold"
    out = {b.id: b for b in ordered[:lo]}
    out["fold"] = fold
    out.update({b.id: b for b in ordered[hi:]})
    return out, owner, len(fold.members)
