"""The blocks a paper draws: a flat model's layers grouped by name, repeated blocks as "× N", pass-through containers.

:mod:`.folding` finds the groups of a trace from its scopes (a layer's call, a module, a name scope). Real
architectures need three more readings of the same record before they look like their paper's figure:

* **name blocks** (:func:`name_blocks`): a Keras functional model is flat — MobileNetV2 calls 150 layers
  ``block_3_expand``, ``block_3_expand_BN`` … directly inside the model. Consecutive layers that share a block
  prefix (``block_3``, ``conv2_block1``: the name up to a number, as Keras applications name them) form one
  block, but only inside a group with more than :data:`BLOCKS_ABOVE` children, so a small model keeps its layers.
* **repeats** (:func:`find_repeats`): consecutive siblings of the same class and the same structure (ResNet's
  ``BasicBlock`` s in a stage, BERT's ``BertLayer`` s, MobileNetV2's ``block_7`` … ``block_9``) are one box
  "BertLayer × 12" carrying ``‖ḡ‖`` of each instance's output (where does the gradient shrink?). A
  :class:`Repeat` is not a :class:`~.folding.Loop` (one layer called again and again): each instance has its
  own weights.
* **pass-through containers** (:func:`pass_through`): a group holding exactly one sub-group and no op of its own
  (BERT's ``encoder`` holds only the ``ModuleList`` ``encoder.layer``) opens with that sub-group: one click on
  ``encoder`` shows "BertLayer × 12", not a box ``encoder.layer`` to open again.

Everything here is data read from a :class:`~autodiff_viz.Trace` and the groups of :mod:`.folding`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

BLOCKS_ABOVE = 12      # a group with more direct children than this has its children grouped by name prefix
_BLOCK_NAME = re.compile(r"^(.+?_\d+)(?:_|$)")     # block_3_expand -> block_3; conv2_block1_1_conv -> conv2_block1
SPARK = "▁▂▃▄▅▆▇█"


@dataclass
class Repeat:
    """Consecutive sibling groups of the same class and structure, drawn as one box ``title × count``.

    ``key`` is the fold-state key (the first instance's key and ``×N``: put it in ``expanded`` to open the
    first instance; put an instance's own key there to open that one); ``groups`` the instances' keys in order;
    ``grad_norms[i]`` is ``‖ḡ‖`` of instance ``i``'s output (None off the path); ``outputs[i]`` that node's id.
    """

    key: str
    id: str
    title: str
    parent: str | None
    groups: list
    outputs: list = field(default_factory=list)
    grad_norms: list = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.groups)


def block_name(title: str) -> str | None:
    """The block a layer's name puts it in (``block_3_expand`` → ``block_3``), or None."""
    m = _BLOCK_NAME.match(title)
    if m:
        return m.group(1)
    tokens = title.split("_")
    return "_".join(tokens[:2]) if len(tokens) >= 3 else None     # expanded_conv_project -> expanded_conv


def name_blocks(scopes) -> dict:
    """``{(parent parts, child): block}`` for the children of a crowded scope that share a block name.

    ``scopes``: each op's scope split into parts, in tape order. Only runs of at least two consecutive children
    with the same :func:`block_name` form a block, and only under a parent with more than :data:`BLOCKS_ABOVE`
    distinct children (a flat functional model), so a small model's layers stay its boxes.
    """
    children: dict = {}
    for parts in scopes:
        for j in range(len(parts)):
            seen = children.setdefault(tuple(parts[:j]), {})
            seen.setdefault(parts[j], len(seen))
    out = {}
    for parent, kids in children.items():
        if len(kids) <= BLOCKS_ABOVE:
            continue
        ordered = sorted(kids, key=kids.get)
        run: list = []
        for child in ordered + [None]:
            name = block_name(child) if child is not None else None
            if run and (name is None or name != block_name(run[0])):
                if len(run) >= 2:
                    out.update({(parent, c): block_name(run[0]) for c in run})
                run = []
            if name is not None:
                run.append(child)
    return out


def _items(ops, paths) -> dict:
    """``{group key: its direct items in order}``: ``("op", op name)`` or ``("child", key)``, each child once."""
    items: dict = {None: []}
    seen: dict = {}
    for n in ops:
        chain = (None,) + tuple(paths[n.id])
        for j, key in enumerate(chain):
            seq = items.setdefault(key, [])
            if j == len(chain) - 1:
                seq.append(("op", n.op))
            elif chain[j + 1] not in seen.setdefault(key, set()):
                seen[key].add(chain[j + 1])
                seq.append(("child", chain[j + 1]))
    return items


def _signature(trace, groups, items, key, memo) -> tuple:
    """What a group is made of, by class and op, not by name: equal for two instances of one block."""
    if key in memo:
        return memo[key]
    g = groups[key]
    cls = getattr(trace, "kinds", {}).get(g.title) or g.what
    parts = tuple(("op", name) if kind == "op" else _signature(trace, groups, items, name, memo)
                  for kind, name in items.get(key, ()))
    memo[key] = (cls, parts)
    return memo[key]


def find_repeats(trace, groups, paths) -> dict:
    """The :class:`Repeat` s of a trace: consecutive siblings (no op between) with one class and one structure,
    each reading what the one before made (stacked, as a paper's "× N"; parallel branches stay apart).

    Sets ``Group.repeat`` on every instance. Groups that are steps of a loop are left to the loop.
    """
    ops = [n for n in trace.nodes if n.kind == "op"]
    items = _items(ops, paths)
    memo: dict = {}
    members: dict = {}
    for n in ops:
        for key in paths[n.id]:
            members.setdefault(key, []).append(n.id)
    repeats = {}
    def chained(a, b) -> bool:          # b reads what a made: stacked blocks, not parallel branches
        inside = set(members.get(a, ()))
        return any(e.src in inside for nid in members.get(b, ()) for e in trace.edges_into(nid))

    for parent, seq in items.items():
        runs, run = [], []
        for kind, name in seq + [("op", None)]:
            if kind == "child" and groups[name].loop is None and run and chained(run[-1], name) and \
                    _signature(trace, groups, items, name, memo) == _signature(trace, groups, items, run[0], memo):
                run.append(name)
                continue
            if len(run) >= 2:
                runs.append(run)
            run = [name] if kind == "child" and groups[name].loop is None else []
        for run in runs:
            first = groups[run[0]]
            key = f"{run[0]}×{len(run)}"
            cls = getattr(trace, "kinds", {}).get(first.title)
            title = cls or f"{first.title} … {groups[run[-1]].title}"
            rep = Repeat(key, f"r{len(repeats)}", title, parent, run)
            for k in run:
                out = _output_of(trace, members.get(k, []))
                rep.outputs.append(out)
                node = trace.node(out) if out is not None else None
                rep.grad_norms.append(None if node is None or node.grad is None else node.grad.stats["norm"])
                groups[k].repeat = key
            repeats[key] = rep
    return repeats


def _output_of(trace, ids):
    """The last of ``ids`` that is read outside them (what the group hands on)."""
    inside = set(ids)
    out = None
    for nid in ids:
        if any(e.dst not in inside for e in trace.edges_from(nid)):
            out = nid
    return out if out is not None else (ids[-1] if ids else None)


def pass_through(groups, paths, trace) -> frozenset:
    """Keys of groups that hold one sub-group and no op of their own (below the outermost level): opening one
    opens its sub-group too."""
    direct_ops: dict = {}
    kids: dict = {}
    for n in trace.nodes:
        path = paths.get(n.id, ())
        if n.kind == "op" and path:
            direct_ops[path[-1]] = True
    for g in groups.values():
        if g.parent is not None:
            kids.setdefault(g.parent, set()).add(g.key)
    return frozenset(k for k, g in groups.items()
                     if g.parent is not None and not direct_ops.get(k) and len(kids.get(k, ())) == 1)


def spark(values) -> str:
    """A one-line bar of ``values`` (``‖ḡ‖`` per instance), ``·`` for one off the path: ``▂▅█``."""
    known = [v for v in values if v is not None and v == v]
    top = max(known, default=0.0)
    if top <= 0:
        return "".join("▁" if v is not None else "·" for v in values)
    return "".join("·" if v is None or v != v else SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))]
                   for v in values)
