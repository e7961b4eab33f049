"""The blocks a paper draws: a flat model's layers grouped by name, repeated blocks as "× N", pass-through containers.

:mod:`.folding` finds the groups of a trace from its scopes (a layer's call, a module, a name scope). Real
architectures need five more readings of the same record before they look like their paper's figure:

* **name blocks** (:func:`name_blocks`, :func:`segments`): a Keras functional model is flat — MobileNetV2 calls
  150 layers ``block_3_expand``, ``block_3_expand_BN`` … directly inside the model. Consecutive layers whose
  names share a prefix of tokens (``_``, ``/``, ``.``) form a block named by it (``block_3``, ``conv2_block1``,
  ``block2a``), nested where a block is still crowded (``block2a_se``); a numbered list of instances
  (``conv2_block1`` … ``conv2_block6``) is no block of its own, its instances are; an op written between layers
  (a residual ``x + y``) joins the block that feeds it. Layers Keras names only after their class join blocks
  by data flow: a merge (``add_7``) reading the block before it closes that block, and parallel branches of
  them ending in one merge are the module of that merge (InceptionV3's ``mixed3``, a U-Net block written in a
  loop and ended by its residual ``add_2``). Only inside a group with more than :data:`BLOCKS_ABOVE`
  children, so a small model keeps its layers.
* **repeats** (:func:`find_repeats`): consecutive siblings of the same class and the same structure (ResNet's
  ``BasicBlock`` s in a stage, BERT's ``BertLayer`` s, MobileNetV2's ``block_7`` … ``block_9``) are one box
  "BertLayer × 12" carrying ``‖ḡ‖`` of each instance's output (where does the gradient shrink?). A
  :class:`Repeat` is not a :class:`~.folding.Loop` (one layer called step after step): each instance has its
  own weights, or the instances are one block applied again in a stack and share theirs (``Repeat.shared``).
* **long computations** (:func:`computed_by_the_model`): a model's own ``forward`` computing more than a few ops
  between its parts (CLIP's similarity), or a module a long loop between its parts (Mamba's scan), is one box.
* **the learner's statements** (:func:`written_on_lines`): beside a model, the ops one statement of the step
  computes outside every layer (a VAE's ``kl_loss = …``) are one box named by what the statement assigns.
* **containers** (:func:`pass_through`, :func:`opens_with_parent`): a group holding exactly one sub-group and no
  op of its own (BERT's ``encoder`` holds only the ``ModuleList`` ``encoder.layer``) opens with that sub-group,
  and a list of like modules that never ran itself opens with its parent: one click on ``encoder`` or on a stage
  shows "BertLayer × 12", not a box ``encoder.layer`` to open again.

Everything here is data read from a :class:`~autodiff_viz.Trace` and the groups of :mod:`.folding`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..base import naming

BLOCKS_ABOVE = 12      # a group with more direct children than this has its children grouped by name prefix
COMPUTED_ABOVE = 8     # a model's own forward computing more ops in a row than this draws them as one box
MODULE_COMPUTED_ABOVE = 24   # the same inside a module that has modules inside: more than a reader follows op by op
_SEP = re.compile(r"[_/.]")             # where a layer's name breaks into tokens
_COUNTER = re.compile(r"_\d+$")         # an op made per call (__forward__conv_xla_138612) is one op for a structure
SPARK = "▁▂▃▄▅▆▇█"


@dataclass
class Repeat:
    """Consecutive sibling groups of the same class and structure, drawn as one box ``title × count``.

    ``key`` is the fold-state key (the first instance's key and ``×N``: put it in ``expanded`` to open the
    first instance; put an instance's own key there to open that one); ``groups`` the instances' keys in order;
    ``grad_norms[i]`` is ``‖ḡ‖`` of instance ``i``'s output (None off the path); ``outputs[i]`` that node's id.
    ``shared``: the instances are one block applied again and again with the same weights (ALBERT's layer);
    ``held`` the ids of those weights (read by the instances only), drawn in the box while it is folded.
    """

    key: str
    id: str
    title: str
    parent: str | None
    groups: list
    outputs: list = field(default_factory=list)
    grad_norms: list = field(default_factory=list)
    shared: bool = False
    held: list = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.groups)


def _tokens(name: str) -> list:
    return _SEP.split(name)


def _prefix(name: str, k: int) -> str:
    """``name`` up to the end of its ``k``-th token, separators kept (``conv2_block1_0_bn``, 2 → ``conv2_block1``)."""
    ends = [m.start() for m in _SEP.finditer(name)] + [len(name)]
    return name[:ends[k - 1]]


def _nest(names, depth) -> dict:
    """``{name: its blocks, outermost first}`` for ``names`` (consecutive children, in order) that share their
    first ``depth`` tokens.

    A run of consecutive names with the same next token is one block, named by the run's longest common token
    prefix (``conv1_conv, conv1_bn, conv1_relu`` → ``conv1``). No block is made where it would only be a list
    of numbered instances (``conv2_block1_…`` … ``conv2_block6_…``; MobileNetV2's ``block_1_…`` …, also when the
    first instance has no number, MobileNetV3's ``expanded_conv_…``, ``expanded_conv_1_…``): its
    instances are the blocks, side by side, so that blocks of one structure in a row fold as "× N" — unless the
    run is small enough to be one box (at most :data:`BLOCKS_ABOVE` layers) and its name is itself an instance
    (Xception's ``block5`` of ``block5_sepconv1`` … ``block5_sepconv3``: numbered units of a numbered block,
    the block a paper draws, not a list of blocks). Nor where
    the run is all of ``names`` (``convnext_tiny_…``: the parent itself). A block still crowded (more than
    :data:`BLOCKS_ABOVE` layers) is split again the same way (EfficientNet's ``block2a`` → ``block2a_expand``,
    ``block2a_se``, ``block2a_project``).
    """
    toks = {n: _tokens(n) for n in names}
    out = {n: () for n in names}
    runs: list = []
    for n in names:
        head = toks[n][depth] if len(toks[n]) > depth else None
        if runs and head is not None and runs[-1][0] == head:
            runs[-1][1].append(n)
        else:
            runs.append((head, [n]))
    for head, run in runs:
        if head is None or len(run) < 2:
            continue
        k = depth + 1
        while all(len(toks[n]) > k for n in run) and len({toks[n][k] for n in run}) == 1:
            k += 1
        nexts = [toks[n][k] if len(toks[n]) > k else "" for n in run]
        numbered = [any(c.isdigit() for c in t) for t in nexts]
        unit = len(run) <= BLOCKS_ABOVE and any(c.isdigit() for c in toks[run[0]][k - 1])
        if len(run) == len(names) or all(numbered) and not unit:
            out.update(_nest(run, k))
            continue
        first = numbered.index(True) if any(numbered) else 0
        if first >= 2 and all(numbered[first:]) and len(set(nexts[first:])) > 1:
            # a numbered list whose first instance has no number (MobileNetV3: expanded_conv_depthwise …,
            # expanded_conv_1_expand …, expanded_conv_2_…): that one is a block, the numbered ones are theirs
            out.update({n: (_prefix(run[0], k),) for n in run[:first]})
            out.update(_nest(run[first:], k))
            continue
        units = _by_number(run, toks, k) if len(run) > BLOCKS_ABOVE and not any(numbered) else None
        if units:
            out.update(units)
            continue
        inner = _nest(run, k) if len(run) > BLOCKS_ABOVE else {}
        # named by the tokens its layers share, up to one the other blocks use for a unit inside them:
        # MobileNetV2's expanded_conv, but EfficientNetV2's block1a (its one unit is block2a's project too)
        units = {t for h, other in runs if other is not run for n in other for t in toks[n][depth + 1:]}
        end = depth + 1
        while end < k and toks[run[0]][end] not in units:
            end += 1
        block = _prefix(run[0], end)
        out.update({n: (block,) + inner.get(n, ()) for n in run})
    return out


def _by_number(run, toks, k):
    """``{name: (block,)}`` for a crowded run of names whose instance number comes after what a layer does
    (MobileNet's ``conv_pad_2``, ``conv_dw_2``, ``conv_dw_2_bn`` … ``conv_pw_2_relu``: the depthwise separable
    block 2), or None when the names carry no such number.

    Consecutive names with the same first number token after the run's shared prefix are one block, titled by
    their tokens up to that number with ``*`` where they differ (``conv_*_2``). A name without a number
    (``conv_preds``, the classifier after the blocks) is in none. None when fewer than half the names have a
    number, when there are fewer than two numbers, or when a number comes back after another (not instances
    in a row)."""
    number = {n: next((i for i in range(k, len(toks[n])) if toks[n][i].isdigit()), None) for n in run}
    if 2 * sum(i is not None for i in number.values()) < len(run):
        return None
    runs: list = []
    for n in run:
        num = toks[n][number[n]] if number[n] is not None else None
        if num is not None and runs and runs[-1][0] == num:
            runs[-1][1].append(n)
        else:
            runs.append((num, [n]))
    nums = [num for num, _ in runs if num is not None]
    if len(set(nums)) < 2 or len(nums) != len(set(nums)):
        return None
    out = {}
    for num, names in runs:
        if num is None or len(names) < 2:
            out.update({n: () for n in names})
            continue
        heads = [toks[n][:number[n] + 1] for n in names]
        if len({len(h) for h in heads}) == 1:
            out.update({n: ("_".join(t if len({h[i] for h in heads}) == 1 else "*" for i, t in enumerate(heads[0])),)
                        for n in names})
        else:
            out.update({n: ("_".join(toks[names[0]][:k] + ["*", num]),) for n in names})
    return out


def _snake(name: str) -> str:
    """A class name as Keras names its layers by default: ``ReLU`` → ``re_lu``, ``MaxPooling2D`` → ``max_pooling2d``."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _auto_named(kinds: dict):
    """Whether a scope segment is a layer named only after its class (``activation_3`` of an ``Activation``):
    a name that says nothing of the block it belongs to."""
    def auto(segment: str) -> bool:
        cls = kinds.get(segment)
        return bool(cls) and re.fullmatch(re.escape(_snake(cls)) + r"(_\d+)?", segment) is not None
    return auto


def name_blocks(scopes, auto=lambda segment: False, reads=None, kind=lambda segment: None) -> dict:
    """``{(parent parts, child): its blocks, outermost first}`` for the children of a crowded scope.

    ``scopes``: each op's scope split into parts, in tape order. Only under a parent with more than
    :data:`BLOCKS_ABOVE` distinct children (a flat functional model) are the children grouped, by the common
    prefixes of their names (:func:`_nest`), so a small model's layers stay its boxes. A child named only after
    its class (``auto``: Keras' ``activation_3``, ``re_lu_5``, ResNet50V2's shortcut ``max_pooling2d``) takes no
    part in the names — it neither makes a block nor cuts one in two — and lies in the block of the children
    before and after it when they share one (a block's activation), else outside any (``flatten`` after VGG's
    ``block5``). One that merges two or more siblings, one of them in the block just before it (``reads``:
    ``{(parent parts, child): the siblings it reads}``), is that block's residual addition or concatenation
    (Xception's ``add_7`` of ``block2_pool`` and the shortcut): it closes that block, and so do the unnamed
    layers between the block and it (the shortcut's ``batch_normalization_15``). Modules of class-named layers
    that come back in a period (a transformer block written in a ``for`` loop: attention then MLP, each closed by
    its residual ``add``) are wrapped by period (:func:`_periods`; ``kind``: a child's class).
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
        order = sorted(kids, key=kids.get)
        anchors = _nest([c for c in order if not auto(c)], 0)
        nested = _between(order, anchors, auto)
        merged: dict = {}
        for i, c in enumerate(order):
            block = next((anchors[x] for x in reversed(order[:i]) if x in anchors), ())
            read = (reads or {}).get((parent, c), ())
            if auto(c) and block and len(read) >= 2 and \
                    any({**nested, **merged}.get(x, ())[:len(block)] == block for x in read):
                merged[c] = block
        if merged:
            nested = _between(order, {**anchors, **merged}, auto)
        def read(c, p=parent):
            return (reads or {}).get((p, c), set())
        cells = _cells(order, auto, read) if _scattered(order, anchors) else {}
        if cells:
            nested = cells
        else:
            outer = dict(nested)
            modules = _modules(order, auto, read)
            for c, m in modules.items():
                # a module inside the block its merge's name gives: InceptionResNetV2's block35_1_mixed in
                # block35_1, beside that block's conv, scale and activation
                around = outer.get(m[0], ())[:1]
                nested[c] = around + m if around and around[0] != m[0] else m
            nested = _periods(order, nested, {m[0] for m in modules.values()}, kind)
        out.update({(parent, c): b for c, b in nested.items() if b})
    return out


def _periods(order, nested, modules, kind) -> dict:
    """``nested`` with each period of modules that comes back wrapped in one block: keras.io's vision transformer
    writes its encoder block in a ``for`` loop as layers named after their class, so its blocks are two modules
    each (``add``: norm, attention, residual; ``add_1``: norm, MLP, residual) — ``add–add_1``, ``add_2–add_3`` …
    are the encoder blocks a paper draws, and fold as "× N".

    Units are the runs of children in one block, and each layer in none, by the classes of their layers
    (``kind``). A period starts at a module (``modules``: blocks named by their merge, where a residual branch
    begins) and may hold the layers in no block after it (keras.io's ConvMixer: the depthwise module closed by
    ``add``, then the pointwise ``conv2d_1``, ``activation_2``, ``batch_normalization_2``): two to four units,
    repeated at least twice, not all alike (alike ones fold as "× N" themselves). Blocks the layers' own names
    make (MobileNetV2's ``block_3``) are never re-wrapped."""
    units: list = []
    for c in order:
        top = nested.get(c, ())[:1]
        if top and units and units[-1][0] == top[0]:
            units[-1][1].append(c)
        else:
            units.append((top[0] if top else None, [c]))
    sig = [("module",) + tuple(kind(c) or c for c in cs) if top in modules else
           (kind(cs[0]) or cs[0],) if top is None else None for top, cs in units]
    out, i = dict(nested), 0
    while i < len(units):
        found = None
        for p in (2, 3, 4) if units[i][0] in modules else ():
            n = 1
            while i + (n + 1) * p <= len(units) and sig[i + n * p:i + (n + 1) * p] == sig[i:i + p]:
                n += 1
            if n >= 2 and None not in sig[i:i + p] and len(set(sig[i:i + p])) > 1:
                found = (p, n)
                break
        if found is None:
            i += 1
            continue
        p, n = found
        for r in range(n):
            part = units[i + r * p:i + (r + 1) * p]
            title = f"{part[0][0]}–{part[-1][0] or part[-1][1][0]}"
            out.update((c, (title,) + out.get(c, ())) for _, cs in part for c in cs)
        i += n * p
    return out


def _modules(order, auto, read) -> dict:
    """``{child: (merge,)}``: the branches a merge closes, when they are layers named only after their class (an
    Inception module: parallel ``conv2d_N``, ``batch_normalization_N`` … concatenated by ``mixed3``; a block of
    keras.io's U-Net written in a ``for`` loop: its layers and the projected residual, added by ``add_2``).

    The module is the children after the last one that every path into the merge passes (the output of the
    module before it; the stem before the first module) up to the merge, when none of them but merges has a name
    of its own (a block of named layers is named by them). It is named by its merge. A merge inside a later
    merge's module (``mixed9_0`` of ``mixed9``) is part of it."""
    out: dict = {}
    for i in range(len(order) - 1, -1, -1):
        m = order[i]
        if m in out or len(read(m)) < 2:
            continue
        later, j = set(read(m)), i - 1
        while j >= 0 and later - set(order[j + 1:i]) != {order[j]}:
            later |= read(order[j])
            j -= 1
        module = order[j + 1:i + 1]
        if len(module) > 2 and all(auto(c) or len(read(c)) >= 2 for c in module) and \
                not any(c in out for c in module):
            out.update({c: (m,) for c in module})
    return out


def _scattered(order, anchors) -> bool:
    """Whether the name blocks come back after others: names that say what a layer is, not where it is
    (NASNet's ``separable_conv_1_normal_left1_5``: the branch first, the cell last)."""
    runs: list = []
    for c in order:
        b = anchors.get(c)
        if b and (not runs or runs[-1] != b[0]):
            runs.append(b[0])
    return len(runs) != len(set(runs))


CARRIED = 3     # at most this many values cross a cell's end: its output and what later cells read of earlier ones


def _cells(order, auto, read) -> dict:
    """``{child: (merge,)}``: a network of cells, each ended by a named merge (NASNet's ``normal_concat_5``,
    ``reduction_concat_reduce_4``), when the layers' names do not give its blocks (:func:`_scattered`).

    Where one cell ends, few values cross to the layers after it: the cell's output, and in NASNet the output of
    the cell before it, which the next cell reads too (at most :data:`CARRIED`, counting an input the next cell
    starts early). Inside a cell many do — its parallel branches, its inner additions. Each named merge after
    which no more than that many values cross ends a cell, made of the children after the cell before it; the
    first cell starts after the last child every path passes (the stem's ``stem_conv1``, ``stem_bn1`` stay
    boxes of their own), and what follows the last cell (the pooling and classifier) is no cell. At least
    three cells, or none."""
    pos = {c: i for i, c in enumerate(order)}
    last: dict = {}
    for i, c in enumerate(order):
        for s in read(c):
            if s in pos:
                last[s] = max(last.get(s, -1), i)
    crossing, ends, cut = 0, [], None
    for i, c in enumerate(order):
        crossing += last.get(c, -1) > i
        crossing -= sum(1 for s in read(c) if s in pos and last[s] == i)
        if crossing <= 1 and not ends:
            cut = i
        if len(read(c)) >= 2 and not auto(c) and crossing <= CARRIED:
            ends.append(i)
    if len(ends) < 3:
        return {}
    out, start = {}, (cut + 1 if cut is not None and cut < ends[0] else 0)
    for e in ends:
        out.update((c, (order[e],)) for c in order[start:e + 1])
        start = e + 1
    return out


def _between(order, anchors, auto) -> dict:
    """``anchors``, and each other child in the blocks that the anchors before and after it share."""
    nested = dict(anchors)
    for i, c in enumerate(order):
        if auto(c) and c not in anchors:
            before = next((nested[x] for x in reversed(order[:i]) if x in nested), ())
            after = next((anchors[x] for x in order[i + 1:] if x in anchors), ())
            k = 0
            while k < min(len(before), len(after)) and before[k] == after[k]:
                k += 1
            nested[c] = before[:k]
    return nested


def segments(trace, ops, is_loss=lambda op: False) -> dict:
    """``{op id: [("block", name) | ("layer", scope part), …]}``: each op's scope with the name blocks around
    its layers (:func:`name_blocks`).

    An op written between layers, directly in the crowded scope (a functional ``x + y`` residual: TensorFlow's
    ``AddV2`` outside any layer), belongs to the block that the op just before it is in, when that block feeds
    it: a block's residual addition is part of the block, and the block is not cut in two runs by it.
    """
    scopes = {n.id: n.scope.split("/") if n.scope else [] for n in ops}
    reads: dict = {}                        # {(parent parts, child): the siblings whose ops its ops read}
    for n in ops:
        for e in trace.edges_into(n.id):
            src = scopes.get(e.src)
            if src is None:
                continue
            j = 0
            while j < min(len(src), len(scopes[n.id])) and src[j] == scopes[n.id][j]:
                j += 1
            if j < len(src) and j < len(scopes[n.id]):
                reads.setdefault((tuple(src[:j]), scopes[n.id][j]), set()).add(src[j])
    kinds = getattr(trace, "kinds", {})
    named = name_blocks((scopes[n.id] for n in ops), _auto_named(kinds), reads, kinds.get)
    lanes = _parallel_lists(ops, scopes, getattr(trace, "idle", frozenset()))
    out: dict = {}
    prev = None
    for n in ops:
        parts = scopes[n.id]
        seg: list = []
        lane = lanes.get(n.id)
        for j, p in enumerate(parts):
            if lane is not None and lane[0] == j:
                seg.append(("block", lane[1]))        # the layer's index across the lists, not the list
                continue
            seg.extend(("block", b) for b in named.get((tuple(parts[:j]), p), ()))
            seg.append(("layer", p))
        if (named or lanes) and prev is not None and prev[:len(seg)] == seg:
            around = []
            for s in prev[len(seg):]:
                if s[0] != "block":
                    break
                around.append(s)
            fed = 0
            for e in trace.edges_into(n.id):
                src = out.get(e.src)
                if src is not None and src[:len(seg)] == seg:
                    k = 0
                    while k < len(around) and len(src) > len(seg) + k and src[len(seg) + k] == around[k]:
                        k += 1
                    fed = max(fed, k)
            seg = seg + around[:fed]
        out[n.id] = seg
        if not (n.grad is None and prev is not None and prev[:len(seg)] == seg and len(prev) > len(seg)):
            prev = seg                       # plumbing between a block's parts (a mask cast) leaves it open
    if named or lanes:
        for n in reversed(ops):              # plumbing read only inside one block is that block's (XLM's mask)
            seg = out[n.id]
            readers = [out.get(e.dst) for e in trace.edges_from(n.id)]
            if n.grad is not None or n.id == trace.target or not readers or any(r is None for r in readers):
                continue
            block = readers[0][:len(seg) + 1]
            if len(block) > len(seg) and block[:len(seg)] == seg and block[-1][0] == "block" and \
                    all(r[:len(seg) + 1] == block for r in readers):
                out[n.id] = block
    for nid, title in made_without_gradient(trace, ops, is_loss).items():
        out[nid] = out[nid] + [("constant", title)]
    for nid, title in computed_by_the_model(trace, ops, is_loss).items():
        out[nid] = out[nid] + [("block", title)]
    for nid, (title, k) in written_on_lines(trace, ops, {nid for nid, seg in out.items() if seg}, is_loss).items():
        out[nid] = [("block", title, k)]
    return out


def _parallel_lists(ops, scopes, idle) -> dict:
    """``{op id: (scope position, block)}`` for a model that keeps its layers' parts in parallel lists and runs
    them by index in its own loop (XLM: ``attentions[i]``, ``layer_norm1[i]``, ``ffns[i]``, ``layer_norm2[i]``):
    the parts of index ``i`` are layer ``i``, the block ``transformer.*.0`` a paper draws, in place of the lists
    (containers the code only indexes, :attr:`Trace.idle`), so that like layers fold as "× N".

    Only where the indices run in order, at least two of them, each with items of at least two lists, and the
    items are modules that ran (PoolFormer's ``stage[i]``, itself a list of blocks, makes stages, not layers)."""
    at: dict = {}
    for n in ops:
        parts = scopes[n.id]
        for j in range(len(parts) - 1):
            rest = parts[j + 1][len(parts[j]) + 1:]
            if parts[j] in idle and parts[j + 1].startswith(parts[j] + ".") and rest.isdigit() and \
                    parts[j + 1] not in idle:        # an item that is itself a list is a stage, not a part
                at[n.id] = (tuple(parts[:j]), j, parts[j], int(rest))
                break
    per: dict = {}
    for nid, (parent, j, lst, i) in at.items():
        per.setdefault(parent, []).append((nid, lst, i))
    out: dict = {}
    for parent, seq in per.items():
        indices = [i for _, _, i in seq]
        lists: dict = {}
        for _, lst, i in seq:
            lists.setdefault(i, set()).add(lst)
        if indices != sorted(indices) or len(lists) < 2 or any(len(ls) < 2 for ls in lists.values()):
            continue
        common = os.path.commonprefix(sorted({lst for _, lst, _ in seq}))
        head = common[:common.rfind(".") + 1]
        for nid, _, i in seq:
            out[nid] = (at[nid][1], f"{head}*.{i}")
    return out


def computed_by_the_model(trace, ops, is_loss=lambda op: False) -> dict:
    """``{op id: title}`` for a long computation a model's own ``forward`` writes after or between its parts
    (CLIP's L2 normalisation, similarity matrix and temperature before its contrastive loss): one box titled by
    the names its statements assign when the code is the learner's (``u, v, sim (13 ops)``), else by its ops
    (``pow, sum, div … (16 ops)``), as a paper draws "similarity" as one box beside the two towers, instead of a
    column of loose ops whose names can only say what they act on.

    Only a run of consecutive ops that carry a gradient (or are made from nothing inside it: a scan's
    ``torch.zeros`` initial state), directly in a scope that has modules inside: more than
    :data:`COMPUTED_ABOVE` in an outermost scope (a model), more than :data:`MODULE_COMPUTED_ABOVE` in a module
    (Mamba's mixer, whose selective scan is a Python loop of ~100 ops between its projections); a module's
    dozen ops of its own (an attention's ``matmul``, ``softmax``, normalisation) are what opening it shows. A
    loss ends the run, so the loss stays drawn with its formula on its edges.
    """
    if trace.target is None:
        return {}
    outer = set()
    for n in ops:
        parts = n.scope.split("/")
        outer.update("/".join(parts[:j]) for j in range(1, len(parts)))
    runs, run = [], []
    for n in ops + [None]:
        mine = n is not None and n.scope in outer and n.id != trace.target and not is_loss(n.op) and \
            (n.grad is not None or bool(run) and not trace.edges_into(n.id))
        if mine and run and run[-1].scope == n.scope:
            run.append(n)
            continue
        while run and run[-1].grad is None:            # made from nothing for what comes after (labels = arange)
            run.pop()
        if run and len(run) > (COMPUTED_ABOVE if "/" not in run[0].scope else MODULE_COMPUTED_ABOVE):
            runs.append(run)
        run = [n] if mine else []
    out = {}
    for run in runs:
        names = list(dict.fromkeys(n.title for n in run if n.title and n.title.isidentifier() and n.title != n.op))
        names = names or list(dict.fromkeys(n.op.strip("_") for n in run))
        title = ", ".join(names[:3]) + (" …" if len(names) > 3 else "") + f" ({len(run)} ops)"
        out.update((n.id, title) for n in run)
    return out


def written_on_lines(trace, ops, placed=frozenset(), is_loss=lambda op: False) -> dict:
    """``{op id: (title, k)}`` for what the learner's own step computes beside its models, one box per statement.

    keras.io's VAE writes its loss in ``train_step``, outside every layer: ``kl_loss = -0.5 * (1 + z_log_var -
    tf.square(z_mean) - tf.exp(z_log_var))`` is six ops. Drawn one by one they are boxes titled by the framework's
    op names (``AddV2``, ``Square``, ``Sub``); the learner wrote one statement and named its value. Each run of
    two or more consecutive ops of one statement, in no scope and no function group, is one box (``k`` numbers
    the runs: two statements are two boxes) titled by the name the statement assigns (``kl_loss``), by the
    function a ``return`` statement returns from (the TF tutorial's ``log_normal_pdf``), else by its code, or by its
    ops when no source can be read (``python -c``, ``exec``). Only
    beside a model (a scope with layers inside): a computation written op by op with nothing else is drawn op by
    op, as a course draws its first graphs. ``placed``: ops already in a group (a loss called on the line is its
    own box); a loss op (``is_loss``: PyTorch's ``F.cross_entropy``) stays drawn with its formula and cuts the
    statement's run there (``F.cross_entropy(out["digit"], y_digit) + F.cross_entropy(…)`` keeps both losses).
    """
    if not any("/" in n.scope for n in ops):
        return {}
    runs, prev, spans = [], None, {}
    for n in ops:
        loc = n.location
        key = None
        if loc is not None and not n.scope and n.function is None and n.id not in placed and not is_loss(n.op):
            if loc.file not in spans:
                spans[loc.file] = naming.statement_spans(loc.file)
            key = (loc.file,) + spans[loc.file].get(loc.line, (loc.line, None))
        if key is not None and key == prev:
            runs[-1][1].append(n)
        elif key is not None:
            runs.append((key, [n]))
        prev = key
    out = {}
    for k, (key, run) in enumerate(runs):
        if len({n.index for n in run}) < 2:           # one op (with several outputs, a split) is drawn as itself
            continue
        title = naming.assigned_name_at(key[0], key[1]) or key[2]
        if title is None:
            code = run[-1].location.code.removeprefix("return ").strip()
            title = (code if len(code) <= 30 else code[:29] + "…") or _what_it_does(run)    # no source: python -c
        out.update((n.id, (title, k)) for n in run)
    return out


def _what_it_does(run) -> str:
    """A run of ops titled by what they do, in order, each once: ``arange, add, le …``."""
    names = list(dict.fromkeys(n.op.strip("_") for n in run))
    return ", ".join(names[:3]) + (" …" if len(names) > 3 else "")


def made_without_gradient(trace, ops, is_loss=lambda op: False) -> dict:
    """``{op id: title}`` for the plumbing a model builds beside its layers: ops that carry no gradient, computed
    from no data and no weight — only from constants, state and each other (GPT-Neo's causal mask from
    ``arange``, ``le`` and ``where``; position ids; a buffer cast with ``.to()``).

    Each run of them in one scope is one box, titled by what it makes when that has a name
    (``final_logits_bias (no gradient)``), else by its ops (``arange, add, le … (no gradient)``), instead of a row
    of loose op boxes. Only with a target (where ḡ says what carries a gradient). What is made from named inputs
    (``labels``, ``x``) is data and stays drawn, and so is one op made from nothing, unless a module makes it for
    one of its parts (DeBERTa's mask, ``torch.ones(input_shape)`` when none is passed, is plumbing; CLIP's
    ``labels = arange(n)`` for its loss is data). So is what a library's module does to the data it was given
    before handing it to one of its parts (OPT's ``input_ids.view(…)`` and XLNet's ``input_ids.transpose(0, 1)``
    before the embedding, a mask from ``attention_mask``), not what it prepares for its own loss (Hugging Face
    shifting the ``labels``).
    """
    if trace.target is None:
        return {}
    own = getattr(trace, "own", frozenset())
    free: set = set()
    fed: set = set()            # a library module's own ops on the data it was given (OPT's input_ids.view)
    for n in ops:
        if n.grad is not None or n.id == trace.target:
            continue
        sources = [trace.node(e.src) for e in trace.edges_into(n.id)]
        if all(s.id in free if s.kind == "op" else
               s.kind == "state" or s.kind == "constant" and (not s.title or s.title == s.op) for s in sources):
            free.add(n.id)
        elif n.scope and n.scope.rsplit("/", 1)[-1] not in own and sources and \
                all(s.id in free or s.id in fed if s.kind == "op" else s.kind in ("state", "constant")
                    for s in sources):
            fed.add(n.id)
    runs: list = []
    prev = None
    for n in ops:
        if n.id not in free and n.id not in fed:
            prev = None
            continue
        if prev is None or prev.scope != n.scope:
            runs.append([])
        runs[-1].append(n)
        prev = n
    loss = trace.node(trace.target).scope

    def part_of(d, where, own_ops) -> bool:     # a module's op below ``where`` (not the model's loss module), or
        scope = d.scope                         # with ``own_ops`` the model's own computation there (XLM masks its
        if scope == where:                      # hidden states with what it made of the ids), not its loss
            return own_ops and bool(where) and d.kind == "op" and d.grad is not None and d.id != trace.target \
                and not is_loss(d.op)
        return scope.startswith(where + "/") and not (
            loss.startswith(where + "/") and (scope == loss or scope.startswith(loss + "/")))
    out = {}
    for run in runs:
        inside = {n.id for n in run}
        alone = len(run) == 1 and not trace.edges_into(run[0].id)     # one op made from nothing
        if alone and run[0].scope.rsplit("/", 1)[-1] in own:
            continue        # by the learner's own module (h0 = torch.zeros(…) for its LSTM): data, drawn as itself
        given = any(n.id in fed for n in run)
        if (alone or given) and not any(part_of(trace.node(e.dst), run[0].scope, given)
                                        for n in run for e in trace.edges_from(n.id) if e.dst not in inside):
            continue        # data the learner's code makes (net(torch.randn(…))) or the model makes for its own
            # loss (HF shifting the labels, CLIP's labels = arange(n)): data, drawn as itself
        named = [n.title for n in run if n.title and n.title != n.op and "…" not in n.title]
        if named and named[-1] == run[-1].title:                  # what it makes has a name: final_logits_bias
            title = f"{named[-1]} (no gradient)"
        elif named and named[0] == run[0].title:                  # what it starts from: input.transpose …
            title = f"{named[0]} … (no gradient)"
        else:                                                    # else what it does: arange, add, le …
            title = _what_it_does(run) + " (no gradient)"
        out.update((n.id, title) for n in run)
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


def _signature(trace, groups, items, key, memo, skip=None) -> tuple:
    """What a group is made of, by class and op, not by name: equal for two instances of one block. ``skip``:
    sub-groups left out (:func:`_optional`)."""
    if key in memo:
        return memo[key]
    g = groups[key]
    cls = getattr(trace, "kinds", {}).get(g.title) or g.what
    parts = tuple(("op", _COUNTER.sub("", name)) if kind == "op" else
                  _signature(trace, groups, items, name, memo, skip)
                  for kind, name in items.get(key, ()) if kind == "op" or skip is None or not skip(name))
    memo[key] = (cls, parts)
    return memo[key]


def _optional(trace, groups, items, members):
    """Whether a sub-group holds no weight and no sub-group of its own (but the plumbing it makes without
    gradient, a random mask): a dropout, a drop-path, an activation module — present in one instance of a class
    and absent in the next (stochastic depth of rate 0 is an ``nn.Identity`` that runs no op), with the same
    weights in both."""
    def skip(key) -> bool:
        return all(kind == "op" or groups[name].what == "constant" for kind, name in items.get(key, ())) and not any(
            trace.node(e.src).kind == "variable" for nid in members.get(key, ())
            for e in trace.edges_into(nid))
    return skip


def find_repeats(trace, groups, paths) -> dict:
    """The :class:`Repeat` s of a trace: consecutive siblings (no op between) with one class and one structure,
    each reading what the one before made (stacked, as a paper's "× N"; parallel branches stay apart; models the
    learner's code holds in different variables, :attr:`Trace.roots`, stay apart too). A layer
    of no parts (a ``Linear``, a ``Dense``) is its weights: only layers of one width repeat (``Dense(64)`` twice
    is "× 2", ``Dense(128)`` then ``Dense(64)`` two boxes); a block's instances may differ in width (DenseNet's
    layers read ever more channels).

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
    kinds = getattr(trace, "kinds", {})
    roots = getattr(trace, "roots", {})
    lean: dict = {}
    skip = _optional(trace, groups, items, members)

    def chained(a, b) -> bool:          # b reads what a made: stacked blocks, not parallel branches
        inside = set(members.get(a, ()))
        return any(e.src in inside for nid in members.get(b, ()) for e in trace.edges_into(nid))

    def widths(k) -> list:              # the shapes of the weights a layer of no parts reads
        return sorted(tuple(trace.node(e.src).shape) for nid in members.get(k, ()) for e in trace.edges_into(nid)
                      if trace.node(e.src).kind == "variable")

    def alike(a, b) -> bool:            # one structure; or one class whose instances differ by optional parts only
        if not any(kind == "child" for kind, _ in items.get(a, ())) and widths(a) != widths(b):
            return False                # two single layers of other widths (i2h, then h2o) are two layers
        if groups[a].what == groups[b].what == "block" and _family(groups[a].title) != _family(groups[b].title):
            return False                # blocks by name: block1a, block1b are instances, stem and block1a are not
        if groups[a].parent is None and roots.get(groups[a].title, a) != roots.get(groups[b].title, a):
            return False                # two models the learner named apart (encoder, decoder) are two parts
        if _signature(trace, groups, items, a, memo) == _signature(trace, groups, items, b, memo):
            return True
        cls = kinds.get(groups[a].title) if groups[a].what != "block" else None
        return cls is not None and cls == kinds.get(groups[b].title) and \
            _signature(trace, groups, items, a, lean, skip) == _signature(trace, groups, items, b, lean, skip)

    for parent, seq in items.items():
        runs, run = [], []
        for kind, name in seq + [("op", None)]:
            if kind == "child" and groups[name].loop is None and run and chained(run[-1], name) and \
                    alike(run[0], name):
                run.append(name)
                continue
            if len(run) >= 2:
                runs.append(run)
            run = [name] if kind == "child" and groups[name].loop is None else []
        for run in runs:
            first = groups[run[0]]
            key = f"{run[0]}×{len(run)}"
            cls = getattr(trace, "kinds", {}).get(first.title) if first.what != "block" else None
            title = cls or f"{first.title} … {groups[run[-1]].title}"
            rep = Repeat(key, f"r{len(repeats)}", title, parent, run)
            for k in run:
                out = _output_of(trace, members.get(k, []))
                rep.outputs.append(out)
                node = trace.node(out) if out is not None else None
                rep.grad_norms.append(None if node is None or node.grad is None else node.grad.stats["norm"])
                groups[k].repeat = key
            _share(trace, rep, members, paths)
            repeats[key] = rep
    return repeats


def _share(trace, rep, members, paths) -> None:
    """Set ``rep.shared`` and ``rep.held`` when every instance reads the same weights, and only they read them."""
    reads = []
    for k in rep.groups:
        reads.append({e.src for nid in members.get(k, ()) for e in trace.edges_into(nid)
                      if trace.node(e.src).kind == "variable"})
    if not reads[0] or any(r != reads[0] for r in reads):
        return
    inside = {nid for k in rep.groups for nid in members.get(k, ())}
    rep.shared = True
    rep.held = sorted((w for w in reads[0] if all(e.dst in inside for e in trace.edges_from(w))
                       and (paths.get(w) or (None,))[-1] == rep.parent), key=lambda w: trace.nodes.index(trace.node(w)))


def _family(name: str) -> str:
    """A block's name without its instance numbers (``block1a``, ``block_3``, ``conv2_block1`` → ``block``,
    ``block``, ``conv_block``; ``expanded_conv_1`` → ``expanded_conv``): instances of one list share it."""
    return re.sub(r"_?\d+[a-z]*", "", name)


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
    opens its sub-group too.

    Not a list the code only indexes (:attr:`Trace.idle`) whose one item here is a module that ran and has
    parts: Funnel's encoder pools between the two layers of ``blocks[1]``, so each of its runs holds one
    ``FunnelLayer``, and opening the encoder shows that layer as a box, as it shows block 0's — not its attention
    and weights. An item that only wraps one part (ALBERT's layer group around its one shared layer) opens on."""
    direct_ops: dict = {}
    kids: dict = {}
    for n in trace.nodes:
        path = paths.get(n.id, ())
        if n.kind == "op" and path:
            direct_ops[path[-1]] = True
    for g in groups.values():
        if g.parent is not None:
            kids.setdefault(g.parent, set()).add(g.key)
    idle = getattr(trace, "idle", frozenset())
    single = {k for k, g in groups.items()
              if g.parent is not None and not direct_ops.get(k) and len(kids.get(k, ())) == 1}

    def item_that_ran(k) -> bool:
        c = groups[next(iter(kids[k]))]
        return groups[k].title in idle and c.what == "layer" and c.title not in idle and c.key not in single
    return frozenset(k for k in single if not item_that_ran(k))


def opens_with_parent(trace, groups) -> frozenset:
    """Keys of groups that open together with their parent: a list of like modules that never ran as a step
    of its own (the recording saw no call of it, :attr:`Trace.idle`: a PyTorch ``ModuleList`` of ``T5Block`` s,
    of ``ConvNextLayer`` s, a ``ModuleDict``, any container the code only indexes).

    Such a list is a container of the code, not a part of the model: opening a stage shows "ConvNextLayer × 3"
    at once. So is a list of blocks some of which repeat (Wav2Vec2's ``conv_layers``: a first conv layer with
    a GroupNorm, then "Wav2Vec2NoLayerNormConvLayer × 2"): opening the feature extractor shows them. A list of
    different modules none of which repeats (ConvNeXt's ``downsampling_layer``: a norm and a conv) is one part,
    so it stays a box.
    """
    kinds = getattr(trace, "kinds", {})
    classes: dict = {}
    repeats: set = set()
    for g in groups.values():
        if g.parent is not None:
            classes.setdefault(g.parent, set()).add(kinds.get(g.title) or g.title)
            if getattr(g, "repeat", None) is not None:
                repeats.add(g.parent)
    idle = getattr(trace, "idle", frozenset())
    return frozenset(k for k, g in groups.items() if g.parent is not None and g.what == "layer"
                     and (len(classes.get(k, ())) == 1 or k in repeats) and g.title in idle)


def spark(values) -> str:
    """A one-line bar of ``values`` (``‖ḡ‖`` per instance), ``·`` for one off the path: ``▂▅█``."""
    known = [v for v in values if v is not None and v == v]
    top = max(known, default=0.0)
    if top <= 0:
        return "".join("▁" if v is not None else "·" for v in values)
    return "".join("·" if v is None or v != v else SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))]
                   for v in values)
