"""Graphviz DOT for a trace: a pure function of the :class:`~autodiff_viz.Trace`.

Three views of the same record:

* ``"forward"``: data flows from the leaves (top) to the target (bottom);
  each node shows its shape and value.
* ``"backward"``: the gradient flows from the target (top) back to the
  leaves; each node shows ``ḡ`` (the gradient of the target with respect to
  it) and each edge the rule's factor ``∂y/∂x = …`` and what it contributed.
  Where a tensor feeds several ops, a ``Σ`` node adds the contributions.
* ``"both"``: the two side by side; a node has the same id (``n3``) in both.

Big graphs stay readable: ``collapse="layers"`` folds every name scope into
one box (``collapse=2`` folds at depth 2 of the scope path), and a graph with
more than ``budget`` boxes folds by layer and then folds the middle of the
tape into one box, saying so in a note under the drawing.

Every style sits in :data:`STYLES`; the output is deterministic (same trace,
same text), and every label is escaped, so a tensor named ``<script>`` is
drawn as text.
"""
from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field

NODE_BUDGET = 60
HUB_FANOUT = 6
VIEWS = ("forward", "backward", "both")
PREFIX = {"forward": "fwd_", "backward": "bwd_"}

STYLES = {
    "graph": {"rankdir": "TB", "fontname": "Helvetica", "fontsize": "10", "nodesep": "0.3",
              "ranksep": "0.4", "newrank": "true", "labeljust": "l", "labelloc": "b"},
    "node": {"fontname": "Helvetica", "fontsize": "10", "shape": "box", "style": "rounded,filled",
             "fillcolor": "white", "color": "#444444", "margin": "0.08,0.04"},
    "edge": {"fontname": "Helvetica", "fontsize": "9", "color": "#444444", "arrowsize": "0.7"},
    "variable": {"shape": "box", "style": "filled", "fillcolor": "#d4ecd4"},
    "watched": {"shape": "box", "style": "filled", "fillcolor": "#d6e6f5"},
    "constant": {"shape": "box", "style": "filled", "fillcolor": "#eeeeee"},
    "outside": {"shape": "box", "style": "filled,dashed", "fillcolor": "#fde9c9"},
    "op": {"shape": "box", "style": "rounded,filled", "fillcolor": "white"},
    "group": {"shape": "box3d", "style": "filled", "fillcolor": "#e6def5"},
    "fold": {"shape": "note", "style": "filled", "fillcolor": "#fffbe6"},
    "proxy": {"shape": "box", "style": "dashed,filled", "fillcolor": "#f2f7f2", "fontsize": "8",
              "color": "#7a9a7a", "margin": "0.04,0.02", "height": "0.2"},
    "accumulate": {"shape": "circle", "style": "filled", "fillcolor": "#fff1b8", "fontsize": "12",
                   "width": "0.35", "margin": "0"},
    "gradient_edge": {"color": "#b35900", "fontcolor": "#8a4500"},
    "target": {"penwidth": "2.2", "color": "#1f4e99"},
    "off_path": {"color": "#bbbbbb", "fontcolor": "#999999", "fillcolor": "#f7f7f7"},
    "no_grad": {"style": "dashed", "color": "#999999", "fontcolor": "#999999", "arrowhead": "tee"},
    "highlight": {"penwidth": "3", "color": "#1f77b4"},
    "mark": {"penwidth": "2.5", "color": "#d62728", "fontcolor": "#d62728"},
    "panel": {"style": "rounded", "color": "#cccccc", "fontsize": "12", "labeljust": "l", "labelloc": "t"},
}

LEGEND_ROWS = {
    "forward": [("variable", "#d4ecd4", "trainable variable"), ("watched", "#d6e6f5", "watched tensor"),
                ("constant", "#eeeeee", "constant (not watched)"),
                ("outside", "#fde9c9", "computed outside this tape"), ("op", "white", "op: value below")],
    "backward": [("ḡ", "white", "ḡ = ∂target/∂node"), ("Σ", "#fff1b8", "adds the contributions of a fan-out"),
                 ("edge", "#ffe6cc", "∂y/∂x: the rule's factor; ḡ·∂y/∂x: what the edge adds")],
    "common": [("grey", "#f7f7f7", "not on a path target ← sources"), ("dashed ⊣", "white", "no gradient"),
               ("red", "#f8d0d0", "marked (reason beside it)"), ("layer", "#e6def5", "folded layer / scope")],
}


def _esc(text) -> str:
    """Text for a quoted DOT string: backslashes and quotes escaped, ``&`` as an entity.

    Escaping ``\\`` stops Graphviz's ``\\N``/``\\l`` expansions; ``&amp;`` keeps a
    literal ``&lt;`` as text in SVG. Graphviz escapes ``<`` and ``>`` itself.
    """
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return s.replace("\r", " ").replace("\n", " ")


def _q(text) -> str:
    return '"' + _esc(text) + '"'


def _label(lines) -> str:
    return '"' + "\\n".join(_esc(line) for line in lines if line is not None) + '"'


def _attrs(attrs: dict) -> str:
    parts = []
    for k, v in attrs.items():
        if v is None:
            continue
        parts.append(f"{k}={v}" if isinstance(v, str) and v.startswith('"') else f"{k}={_q(v)}")
    return " [" + " ".join(parts) + "]" if parts else ""


def shape_text(shape, dtype) -> str:
    return f"{'scalar' if not shape else tuple(shape)} {dtype}"


# ---------------------------------------------------------------------------
# Boxes: what is drawn, after collapsing
# ---------------------------------------------------------------------------
@dataclass
class Box:
    """One drawn node: a single trace node, a folded layer, or the folded middle."""

    id: str
    kind: str            # "node", "group", "fold"
    members: list = field(default_factory=list)
    title: str = ""
    order: int = 0


@dataclass
class Layout:
    """Which box each trace node is drawn in, and the notes about folding."""

    boxes: dict
    owner: dict
    notes: list


def layout(trace, collapse=None, budget=NODE_BUDGET) -> Layout:
    """Group the trace's nodes into boxes (``collapse``), then fold to fit ``budget`` boxes."""
    position = {n.id: k for k, n in enumerate(trace.nodes)}
    notes = []
    keys = _scope_keys(trace, collapse)
    boxes, owner = _boxes(trace, keys, position)
    if budget is not None and len(boxes) > budget and collapse is None:
        by_layer = _boxes(trace, _scope_keys(trace, "layers"), position)
        if len(by_layer[0]) < len(boxes):
            boxes, owner = by_layer
            notes.append(f"{len(trace.nodes)} nodes are more than the budget of {budget}: each layer is "
                         "folded into one box (collapse='layers').")
    if budget is not None and len(boxes) > budget:
        boxes, owner = _fold_middle(trace, boxes, owner, budget)
        fold = boxes["fold"]
        notes.append(f"{len(fold.members)} nodes in the middle of the tape are folded into one box to stay "
                     f"within {budget} boxes; draw everything with to_dot(..., budget=None).")
    return Layout(boxes, owner, notes)


def _scope_keys(trace, collapse) -> dict:
    if collapse is None:
        return {}
    if collapse == "layers":
        depth = None
    elif isinstance(collapse, int) and not isinstance(collapse, bool) and collapse >= 1:
        depth = collapse
    else:
        raise ValueError(f"collapse must be None, 'layers' or a scope depth >= 1, got {collapse!r}.")
    keys = {}
    for n in trace.nodes:
        if n.kind == "op" and n.scope:
            parts = n.scope.split("/")
            keys[n.id] = "/".join(parts[:depth] if depth else parts)
    for n in trace.nodes:
        if n.is_leaf:
            consumer_keys = {keys.get(e.dst) for e in trace.edges_from(n.id)}
            if len(consumer_keys) == 1 and None not in consumer_keys:
                keys[n.id] = consumer_keys.pop()
    return keys


def _boxes(trace, keys, position):
    boxes, owner, group_ids = {}, {}, {}
    for n in trace.nodes:
        key = keys.get(n.id)
        if key is None:
            boxes[n.id] = Box(n.id, "node", [n.id], n.title, position[n.id])
            owner[n.id] = n.id
            continue
        gid = group_ids.get(key)
        if gid is None:
            gid = group_ids[key] = f"g{len(group_ids)}"
            boxes[gid] = Box(gid, "group", [], key, position[n.id])
        boxes[gid].members.append(n.id)
        owner[n.id] = gid
    return boxes, owner


def _fold_middle(trace, boxes, owner, budget):
    ordered = sorted(boxes.values(), key=lambda b: b.order)
    head = max(1, (budget - 1) // 2)
    tail = max(1, budget - 1 - head)
    middle = ordered[head:len(ordered) - tail]
    fold = Box("fold", "fold", [], "", middle[0].order)
    for b in middle:
        fold.members.extend(b.members)
        del boxes[b.id]
    for m in fold.members:
        owner[m] = "fold"
    kept = {b.id: b for b in ordered[:head]}
    kept["fold"] = fold
    kept.update({b.id: b for b in ordered[len(ordered) - tail:]})
    return kept, owner


# ---------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------
def to_dot(trace, view: str = "forward", collapse=None, highlight=None, budget=NODE_BUDGET) -> str:
    """DOT source of one view of ``trace``.

    Args:
        view: ``"forward"``, ``"backward"`` or ``"both"`` (side by side).
        collapse: ``None``, ``"layers"`` (one box per name scope) or an int
            depth of the scope path.
        highlight: node/edge ids or tensors to draw in bold blue.
        budget: the most boxes to draw before folding (``None``: no limit).
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}.")
    lay = layout(trace, collapse, budget)
    lit = {trace._resolve(h) for h in (highlight or ())}
    lines = [f"digraph {view} {{", "  graph" + _attrs(STYLES["graph"]), "  node" + _attrs(STYLES["node"]),
             "  edge" + _attrs(STYLES["edge"])]
    panels = ("forward", "backward") if view == "both" else (view,)
    for panel in panels:
        body = _panel(trace, lay, panel, lit)
        if view == "both":
            title = "forward: values" if panel == "forward" else "backward: ḡ and ∂y/∂x on every edge"
            lines.append(f"  subgraph cluster_{panel} {{")
            lines.append("    graph" + _attrs(dict(STYLES["panel"], label=title)))
            lines.extend("  " + b for b in body)
            lines.append("  }")
        else:
            lines.extend(body)
    lines.extend(_legend(view))
    notes = list(trace.notes) + lay.notes
    if notes:
        lines.append("  label=" + _label(["note: " + n for n in notes]))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _legend(view) -> list:
    rows = []
    for key in (("forward", "backward") if view == "both" else (view,)) + ("common",):
        rows.extend(LEGEND_ROWS[key])
    cells = "".join(f'<tr><td bgcolor="{c}">{html.escape(k, quote=False)}</td><td align="left">{html.escape(t, quote=False)}</td></tr>'
                    for k, c, t in rows)
    table = ('<<table border="0" cellborder="1" cellspacing="0" cellpadding="3">'
             f'<tr><td colspan="2"><b>legend</b></td></tr>{cells}</table>>')
    return ["  subgraph cluster_legend {", '    graph [style=invis label=""]',
            f'    legend [shape=plaintext style="" id="{PREFIX.get(view, "")}legend" label={table}]', "  }"]


def _panel(trace, lay: Layout, view: str, lit: set) -> list:
    p = PREFIX[view]
    has_target = trace.target is not None
    step_of = {nid: nid for nid in trace.steps}
    out = []
    for box in sorted(lay.boxes.values(), key=lambda b: b.order):
        members = [trace.node(m) for m in box.members]
        attrs = dict(_box_style(box, members))
        if has_target and not any(m.on_path for m in members):
            attrs.update(STYLES["off_path"])
        if trace.target in box.members:
            attrs.update(STYLES["target"])
        label = _box_label(trace, box, members, view)
        if any(m in lit for m in box.members):
            attrs.update(STYLES["highlight"])
        reasons = [r for m in box.members for r in trace.marks_of(m)]
        if reasons:
            attrs.update(STYLES["mark"])
            label += ["⚠ " + r for r in reasons]
        steps = sorted({f"step_{step_of[m]}" for m in box.members if m in step_of})
        attrs.update({"label": _label(label), "id": p + box.id, "tooltip": _tooltip(box, members),
                      "class": " ".join(steps) or None})
        out.append(f"  {_q(p + box.id)}" + _attrs(attrs))
    out.extend(_edges(trace, lay, view, lit))
    return out


def _box_style(box, members) -> dict:
    if box.kind == "node":
        return STYLES[members[0].kind if members[0].is_leaf else "op"]
    return STYLES[box.kind]


def _box_label(trace, box, members, view) -> list:
    if box.kind == "node":
        n = members[0]
        lines = [f"{n.id} · {n.title}" + (f" ({n.op})" if n.name and n.kind == "op" else ""),
                 shape_text(n.shape, n.dtype)]
        if view == "forward":
            lines.append(n.value.brief())
        elif n.grad is not None:
            lines.append("ḡ = " + n.grad.brief() + (" (seed)" if n.id == trace.target else ""))
        return lines
    ops = Counter(m.op for m in members if m.kind == "op")
    counts = ", ".join(f"{op}×{k}" for op, k in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    span = f"{members[0].id} … {members[-1].id}"
    if box.kind == "group":
        return [box.title, f"{sum(ops.values())} ops ({span})", counts]
    return ["⋯ folded middle of the tape", f"{len(members)} nodes ({span})", counts]


def _tooltip(box, members) -> str:
    if box.kind != "node":
        return f"{box.title or 'folded'}: {', '.join(m.id for m in members[:40])}" + (
            " …" if len(members) > 40 else "")
    n = members[0]
    parts = [f"{n.id} {n.op}" + (f" '{n.name}'" if n.name else "")]
    if n.scope:
        parts.append(f"scope {n.scope}")
    if n.location is not None:
        parts.append(f"{n.location}  {n.location.code}".rstrip())
    if n.params:
        parts.append(", ".join(f"{k}={v}" for k, v in n.params.items()))
    return " | ".join(parts)


def _edges(trace, lay: Layout, view: str, lit: set) -> list:
    p = PREFIX[view]
    groups: dict = {}
    for e in trace.edges:
        s, d = lay.owner[e.src], lay.owner[e.dst]
        if s != d:
            both_single = lay.boxes[s].kind == "node" and lay.boxes[d].kind == "node"
            groups.setdefault((s, d, e.id if both_single else ""), []).append(e)
    hubs = _hubs(trace, lay, groups)
    multi_input = Counter(e.dst for e in trace.edges)
    out = []
    fan_in = {}
    if view == "backward":
        for (s, d, _), es in groups.items():
            if lay.boxes[s].kind == "node" and s not in hubs:
                fan_in.setdefault(s, []).extend(e for e in es if e.contribution is not None)
        fan_in = {s: es for s, es in fan_in.items() if len(es) >= 2}
        for s, es in fan_in.items():
            n = trace.node(s)
            steps = " ".join(sorted({f"step_{e.dst}" for e in es}))
            out.append(f"  {_q(p + 'acc_' + s)}" + _attrs(dict(
                STYLES["accumulate"], label="Σ", id=p + "acc_" + s, **{"class": steps},
                tooltip=f"ḡ of {s} = the sum of {len(es)} contributions")))
            out.append(f"  {_q(p + 'acc_' + s)} -> {_q(p + s)}" + _attrs(dict(
                STYLES["gradient_edge"], id=p + "acc_" + s + "_out", **{"class": steps},
                label="ḡ = " + (n.grad.brief() if n.grad is not None else "?"))))
    for (s, d, _), es in groups.items():
        e0 = es[0]
        attrs = {}
        single = len(es) == 1 and lay.boxes[s].kind == "node" and lay.boxes[d].kind == "node"
        if view == "forward":
            label = ([e0.input_name] if multi_input[e0.dst] > 1 else []) if single else _bundle_label(trace, es)
        else:
            label = _gradient_label(e0) if single else _bundle_label(trace, es)
            if any(e.contribution is not None for e in es):
                attrs.update(STYLES["gradient_edge"])
        if not any(e.differentiable for e in es):
            attrs.update(STYLES["no_grad"])
            attrs["tooltip"] = "; ".join(sorted({e.no_grad_reason for e in es}))
            if single and view == "backward":
                label = ["no gradient"]
        elif trace.target is not None and not any(e.on_path for e in es):
            attrs.update({k: v for k, v in STYLES["off_path"].items() if k != "fillcolor"})
        if any(e.id in lit for e in es):
            attrs.update(STYLES["highlight"])
        reasons = [r for e in es for r in trace.marks_of(e.id)]
        if reasons:
            attrs.update(STYLES["mark"])
            label = ["⚠ " + r for r in reasons] + label
        eid = p + (e0.id if len(es) == 1 else f"{e0.id}_x{len(es)}")
        steps = sorted({f"step_{e.dst}" for e in es if e.contribution is not None})
        attrs.update({"label": _label(label) if label else None, "id": eid, "class": " ".join(steps) or None})
        tail = s
        if s in hubs and d != hubs[s]:
            tail = f"{s}_at_{d}"
            n = trace.node(s)
            out.append(f"  {_q(p + tail)}" + _attrs(dict(
                STYLES["proxy"], id=p + tail, label=_label([f"{n.id} · {n.title}"]),
                tooltip=f"{n.id} again: it feeds {len(set(k[1] for k in groups if k[0] == s))} boxes")))
            out.append(f"  {{rank=same; {_q(p + d)}; {_q(p + tail)}}}")
        if view == "forward":
            out.append(f"  {_q(p + tail)} -> {_q(p + d)}" + _attrs(attrs))
        else:
            head = p + ("acc_" + s if s in fan_in and e0.contribution is not None else tail)
            out.append(f"  {_q(p + d)} -> {_q(head)}" + _attrs(attrs))
    return out


def _hubs(trace, lay: Layout, groups) -> dict:
    """Leaves that feed more than HUB_FANOUT boxes, each with the first box it feeds.

    A weight shared by every step of an unrolled RNN would pull hundreds of
    edges to one point; it is drawn once beside its first use, and as a small
    copy beside each later use.
    """
    consumers: dict = {}
    for s, d, _ in groups:
        box = lay.boxes[s]
        if box.kind == "node" and trace.node(s).is_leaf:
            consumers.setdefault(s, {}).setdefault(d, lay.boxes[d].order)
    return {s: min(ds, key=ds.get) for s, ds in consumers.items() if len(ds) > HUB_FANOUT}


def _bundle_label(trace, es) -> list:
    """The label of several edges drawn as one: the tensors that cross, and how many edges."""
    srcs = list(dict.fromkeys(e.src for e in es))
    names = ", ".join(srcs[:3]) + (" …" if len(srcs) > 3 else "")
    if len(srcs) == 1:
        n = trace.node(srcs[0])
        names += " " + str(tuple(n.shape))
    return [names, f"{len(es)} edge{'' if len(es) == 1 else 's'}"]


def _gradient_label(e) -> list:
    lines = [e.factor] if e.factor else []
    if e.contribution is not None:
        lines.append(f"ḡ·∂y/∂{e.input_name} = {e.contribution.brief()}")
    return lines
