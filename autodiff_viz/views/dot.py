"""Graphviz DOT for a trace: a pure function of the :class:`~autodiff_viz.Trace`.

Three views of the same record:

* ``"forward"``: data flows from the leaves (top) to the target (bottom);
  each node shows its shape and value.
* ``"backward"``: the gradient flows from the target (top) back to the
  leaves; each node shows ``ḡ`` (the gradient of the target with respect to
  it) and each edge the rule's factor ``∂y/∂x = …`` and what it contributed.
  Where a tensor feeds several ops, a ``Σ`` node adds the contributions.
* ``"both"``: the two side by side; a node has the same id (``n3``) in both.

Graphs read like a textbook figure because they are **folded by meaning**
(``collapse="auto"``, the default): every layer call, loss object,
``adv.name_scope`` and call of your own Python function inside the tape is
one box (:func:`hierarchy`), drawn with its name; a model is drawn open one
level, its layers the boxes and their weights beside them; the edge that
leaves a folded box in the backward view states the layer's backward formula
(``ḡ_x = (ḡ_y ⊙ f′(z)) · Wᵀ``, with its norm: :mod:`.figure`). A box opens when its key is
in ``expanded``; the same layer called many times in a row (an RNN cell per
time step) is drawn **rolled** as one box with an edge ``t → t+1``
(:class:`Loop`: per-step node ids and ``‖ḡ_h(t)‖``). ``collapse=None`` draws
every op, ``collapse="layers"`` the innermost boxes, an int a nesting depth.
Above ``budget`` boxes the drawing folds deeper (every op → layers → blocks →
the model, then the middle of the tape) and says so in a note under it.
The folding (groups, loops, boxes) is :mod:`.folding`'s; this module writes the DOT.

For views that restyle the drawing (the explorer, the HTML export), the
contract is:

* ``layout(trace, collapse, budget, expanded, rolled)`` gives the boxes that
  ``to_dot`` with the same arguments draws: ``Layout.boxes[box_id]`` (a
  :class:`Box` with ``members``, ``key``, ``what``) and
  ``Layout.owner[node_id] → box_id``. Box ids (``n3``, ``g4``, ``l0``,
  ``fold``) do not depend on what is expanded; keys are stable strings.
* Expanding: add ``box.key`` to ``expanded``; "collapse all" is
  ``expanded=()`` (the default, ``None``, opens the groups holding a mark:
  :func:`marked_keys`); a breadcrumb walks ``hierarchy(trace).groups[key].parent``.
  A loop key ends in ``*``; expanding it unrolls the loop.
* Classes: a box or edge standing for at most :data:`STEP_CLASS_LIMIT`
  backward steps has ``step_<node id>`` per step; above that the single class
  ``step_many`` (use ``Layout.owner`` to find the box of a step).
* Label lines of a node: title (the learner's name, else the op); the op,
  when the title is a name; the shape; then the value (forward; a small
  matrix one line per row) or ``ḡ = …`` (backward). A backward edge: the
  chain-rule step as a whole formula (``ḡ_x = ḡ_y · Wᵀ``, starts with
  ``ḡ_``), then ``ḡ·∂y/∂x = …`` (the numbers); a folded box's edge:
  the layer's formula (``ḡ_x = …``) then ``norm …``. Summaries read
  ``min a … max b, norm c``.

Every style sits in :data:`STYLES`; the output is deterministic (same trace,
same text), and every label is escaped, so a tensor named ``<script>`` is
drawn as text.
"""
from __future__ import annotations

import html
import re
from collections import Counter

from ..diagnosis.kinds import DEAD_MARK
from . import figure
from .figure import shape_text
from .folding import (  # noqa: F401 (the fold hierarchy's names, read as dot.<name> by the views and tests)
    COLLAPSES,
    NODE_BUDGET,
    ROLL_ABOVE,
    Box,
    Group,
    Hierarchy,
    Layout,
    Loop,
    breadcrumb,
    default_expanded,
    hierarchy,
    layout,
    loops,
    marked_keys,
)

HUB_FANOUT = 6
VIEWS = ("forward", "backward", "both")
PREFIX = {"forward": "fwd_", "backward": "bwd_"}
# the invisible edges that keep the legend below the picture: from the main path's bottom boxes (they pull it
# under the path) and from weights as deep (they only keep it below them); widgets.state.strip_legend drops them
LEGEND_BELOW = "} -> legend [style=invis weight=0]"
LEGEND_UNDER = "} -> legend [style=invis weight=1]"
# An edge between two boxes of the main path (neither a weight nor state beside its layer) pulls this many times
# harder than one to a weight: the path runs straight down and weights sit beside it, where a paper draws them;
# without it Graphviz lets the path drift sideways layer by layer and the picture grows wide.
PATH_WEIGHT = "4"

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
    "loop": {"shape": "box3d", "style": "filled", "fillcolor": "#dcecf7"},
    "repeat": {"shape": "box3d", "style": "filled", "fillcolor": "#e3ecd9"},
    "state": {"shape": "box", "style": "filled,dotted", "fillcolor": "#f4f0e6", "color": "#9a8f70"},
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
    "mark_dead": {"style": "dashed", "color": "#a05050", "fontcolor": "#a05050"},
    "panel": {"style": "rounded", "color": "#cccccc", "fontsize": "12", "labeljust": "l", "labelloc": "t"},
}

LEGEND_ROWS = {
    "forward": [("variable", "#d4ecd4", "trainable variable"), ("watched", "#d6e6f5", "watched tensor"),
                ("constant", "#eeeeee", "constant (not watched)"),
                ("outside", "#fde9c9", "computed outside this tape"), ("op", "white", "op: value below")],
    "backward": [("ḡ", "white", "ḡ = ∂target/∂node"), ("Σ", "#fff1b8", "adds the contributions of a fan-out"),
                 ("edge", "#ffe6cc", "ḡ_x = …: the chain rule; ḡ·∂y/∂x: what the edge adds"),
                 ("min … max, norm", "white", "a big array: smallest, largest entry, 2-norm")],
    "common": [("grey", "#f7f7f7", "not on a path target ← sources"), ("dashed ⊣", "white", "no gradient"),
               ("red", "#f8d0d0", "marked (reason beside it)"),
               ("layer", "#e6def5", "folded layer, loss, scope or function (its backward formula on its edges)"),
               ("loop", "#dcecf7", "rolled loop: one step drawn, t → t+1"),
               ("× N", "#e3ecd9", "N blocks of one class and structure; ‖ḡ‖ of each; opens to one"),
               ("state", "#f4f0e6", "state (running statistics, seeds, counters): no gradient, no formula")],
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


ATTR_LIMIT = 2000   # characters per attribute value: a DOT line stays far below Graphviz's 16384


def _clip(text: str) -> str:
    return text if len(text) <= ATTR_LIMIT else text[:ATTR_LIMIT - 1] + "…"


def _attrs(attrs: dict) -> str:
    parts = []
    for k, v in attrs.items():
        if v is None:
            continue
        if isinstance(v, str) and v.startswith('"'):
            if len(v) > ATTR_LIMIT:
                v = '"' + v[1:ATTR_LIMIT - 2].rstrip("\\") + '…"'
            parts.append(f"{k}={v}")
        else:
            parts.append(f"{k}={_q(_clip(str(v)))}")
    return " [" + " ".join(parts) + "]" if parts else ""


STEP_CLASS_LIMIT = 12   # boxes and edges with more steps than this carry ``step_many`` instead of a list


# ---------------------------------------------------------------------------
# Drawing (what is drawn, after folding, is :func:`.folding.layout`'s)
# ---------------------------------------------------------------------------
def to_dot(trace, view: str = "forward", collapse="auto", highlight=None, budget=NODE_BUDGET,
           expanded=None, rolled=None) -> str:
    """DOT source of one view of ``trace``.

    Args:
        view: ``"forward"``, ``"backward"`` or ``"both"`` (side by side).
        collapse: ``"auto"`` (default: layers, losses, name scopes and the
            user's functions folded into boxes by meaning), ``None`` (every
            op), ``"layers"`` (one box per innermost group) or an int depth.
        highlight: node/edge ids or tensors to draw in bold blue.
        budget: the most boxes to draw before folding deeper (``None``: no limit).
        expanded: fold-state keys of the groups drawn open (``Box.key``,
            e.g. ``{"sequential/dense_1"}``; a loop key ends in ``*``, and
            expanding it unrolls the loop). ``None`` (default): the groups
            holding a mark are open (:func:`marked_keys`). Use :func:`layout`
            with the same arguments to map the drawing's box ids back to keys
            and members.
        rolled: ``None`` (loops of more than ``ROLL_ABOVE`` steps rolled),
            ``True`` or ``False``.

    Ids and classes in the output (stable, for views that restyle the SVG):
    a box is ``fwd_<id>`` / ``bwd_<id>`` with ``<id>`` = ``n3`` (a node),
    ``g4`` (a group), ``l0`` (a loop) or ``fold``; an edge is ``fwd_e7`` or,
    for several trace edges drawn as one, ``fwd_e7_x3``. A box or edge that
    stands for at most ``STEP_CLASS_LIMIT`` backward steps carries one class
    ``step_<node id>`` per step; one that stands for more carries the single
    class ``step_many`` (Graphviz refuses attributes above 16384 characters),
    and ``Layout.owner`` maps a step's node id to its box id.
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}.")
    from ..records.traces.model import _no_gc
    with _no_gc():
        return _to_dot(trace, view, collapse, highlight, budget, expanded, rolled)


def _to_dot(trace, view, collapse, highlight, budget, expanded, rolled) -> str:
    lay = layout(trace, collapse, budget, expanded, rolled)
    lit = {trace._resolve(h, "highlight") for h in (highlight or ())}
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
    lines.extend(_legend(view) + _legend_below(trace, lay, lines))
    notes = list(trace.notes) + lay.notes
    if notes:
        lines.append("  label=" + _label(["note: " + n for n in notes]))
    lines.append("}")
    return "\n".join(lines) + "\n"


_ARROW = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)"')
_BOX = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" \[')


def _bottom(lines) -> list:
    """The quoted ids of the boxes no drawn edge leaves: the bottom of a top-to-bottom picture."""
    boxes, tails = [], set()
    for line in lines:
        m = _ARROW.match(line)
        if m:
            tails.add(m.group(1))
            continue
        m = _BOX.match(line)
        if m and m.group(1) not in ("graph", "node", "edge"):
            boxes.append(m.group(1))
    return ['"' + b + '"' for b in boxes if b not in tails and b != "legend"]


def _beside(trace, lay: Layout) -> set:
    """Ids of the boxes drawn beside the main path: weights and state, each a node of its own."""
    return {bid for bid, b in lay.boxes.items() if b.kind == "node" and trace.node(bid).kind in ("variable", "state")}


def _depths(lines) -> dict:
    """``{quoted box id: rank}``: the longest run of drawn edges from the top of the picture down to it."""
    heads, indegree = {}, Counter()
    for line in lines:
        m = _ARROW.match(line)
        if m and m.group(1) != m.group(2) and "style=invis" not in line:
            heads.setdefault(f'"{m.group(1)}"', []).append(f'"{m.group(2)}"')
            indegree[f'"{m.group(2)}"'] += 1
    depth = {b: 0 for b in heads if not indegree[b]}
    ready = list(depth)
    while ready:
        b = ready.pop()
        for h in heads.get(b, ()):
            depth[h] = max(depth.get(h, 0), depth[b] + 1)
            indegree[h] -= 1
            if not indegree[h]:
                ready.append(h)
    return depth


def _legend_below(trace, lay: Layout, lines) -> list:
    """Invisible edges that put the legend below every box, not at the right, from the boxes at the bottom
    (those from higher boxes would route around the picture and widen it). Those from the main path's bottom
    (boxes that are not weights or state: the data going in) pull it under the path; those from weights only
    keep it below them, and only from weights about as deep as the deepest box (from higher ones they would
    pull the legend sideways for nothing)."""
    side = {f'"{p}{bid}"' for bid in _beside(trace, lay) for p in PREFIX.values()}
    bottom, depth = _bottom(lines), _depths(lines)
    deepest = max((depth.get(b, 0) for b in bottom), default=0)
    main = [b for b in bottom if b not in side and depth.get(b, 0) >= deepest - 1]
    rest = [b for b in bottom if b not in main and (not main or depth.get(b, 0) >= deepest - 1)]
    return (["  {" + " ".join(rest) + LEGEND_BELOW] if rest else []) + \
        (["  {" + " ".join(main) + LEGEND_UNDER] if main else [])


def _legend(view) -> list:
    rows = []
    for key in (("forward", "backward") if view == "both" else (view,)) + ("common",):
        rows.extend(LEGEND_ROWS[key])
    cells = "".join(f'<tr><td bgcolor="{c}">{html.escape(k, quote=False)}</td>'
                    f'<td align="left">{html.escape(t, quote=False)}</td></tr>'
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
        if (has_target and not any(m.on_path for m in members)) or (
                box.kind == "node" and members[0].kind == "variable" and box.id not in trace.sources):
            attrs.update(STYLES["off_path"])       # off the path, or a weight not in sources: faint
            if box.kind == "node" and members[0].kind == "state":
                attrs["fillcolor"] = STYLES["state"]["fillcolor"]       # state is never on a gradient path
        if trace.target in box.members:
            attrs.update(STYLES["target"])
        label = _box_label(trace, lay, box, members, view)
        if any(m in lit for m in box.members):
            attrs.update(STYLES["highlight"])
        reasons = [r for m in box.members for r in trace.marks_of(m)]
        if reasons:
            attrs.update(STYLES["mark"])
            label += ["⚠ " + r for r in reasons]
        steps = _step_classes(m for m in box.members if m in step_of)
        attrs.update({"label": _label(label), "id": p + box.id, "tooltip": _tooltip(box, members),
                      "class": steps})
        out.append(f"  {_q(p + box.id)}" + _attrs(attrs))
    out.extend(_edges(trace, lay, view, lit))
    return out


def _step_classes(node_ids) -> str | None:
    steps = sorted({f"step_{m}" for m in node_ids})
    if len(steps) > STEP_CLASS_LIMIT:
        return "step_many"
    return " ".join(steps) or None


def _box_style(box, members) -> dict:
    if box.kind == "node":
        return STYLES[members[0].kind if members[0].is_leaf else "op"]
    return STYLES[box.kind]


def _weight_title(trace, n, lay=None) -> str:
    """A weight's title with its layer: ``dense_2/kernel`` (not the model's path before it), PyTorch's
    ``layer1.0.conv1.weight`` whole, so two layers' kernels are never two boxes titled ``kernel``."""
    if n.kind != "variable" or n.label or not n.name or "/" not in n.name:
        return n.title
    return "/".join(n.name.split("/")[-2:])


def _box_label(trace, lay, box, members, view) -> list:
    """Label lines: a node's title (the learner's name, else the op), the op beneath a named op,
    the shape, and its value (forward; a small matrix one row per line) or ḡ (backward).

    A folded box: its name and class, its output's shape and value or ḡ (:func:`figure.box_lines`).
    """
    if box.kind == "node":
        n = members[0]
        lines = [_weight_title(trace, n, lay)]
        if n.kind == "op" and n.title != n.op:
            lines.append(n.op.strip("_") if n.op.startswith("__") else n.op)     # __getitem__ -> getitem
        lines.append(shape_text(n.shape, n.dtype))
        if view == "forward":
            lines.extend(n.value.rows())
        elif n.grad is not None:
            lines.append("ḡ = " + n.grad.brief() + (" (seed)" if n.id == trace.target else ""))
        return lines
    return figure.box_lines(trace, lay, box, view)


def _tooltip(box, members) -> str:
    if box.kind != "node":
        head = f"{box.title or 'folded'}" + (f" [{box.key}]" if box.key else "")
        return f"{head}: {', '.join(m.id for m in members[:40])}" + (" …" if len(members) > 40 else "")
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
    loops_back: dict = {}
    for e in trace.edges:
        s, d = lay.owner[e.src], lay.owner[e.dst]
        if s != d:
            both_single = lay.boxes[s].kind == "node" and lay.boxes[d].kind == "node"
            groups.setdefault((s, d, e.id if both_single else ""), []).append(e)
        elif lay.boxes[s].kind == "loop" and _step_of(lay, s, e.src) != _step_of(lay, s, e.dst):
            loops_back.setdefault(s, []).append(e)
    hubs = _hubs(trace, lay, groups)
    side = _beside(trace, lay)
    multi_input = Counter(e.dst for e in trace.edges)
    out = []
    fan_in = {}
    if view == "backward":
        drawn = Counter()
        for (s, d, _), es in groups.items():
            if lay.boxes[s].kind == "node" and s not in hubs:
                flowing = [e for e in es if e.contribution is not None]
                fan_in.setdefault(s, []).extend(flowing)
                drawn[s] += bool(flowing)
        fan_in = {s: es for s, es in fan_in.items() if drawn[s] >= 2}
        for s, es in fan_in.items():
            n = trace.node(s)
            steps = _step_classes(e.dst for e in es)
            out.append(f"  {_q(p + 'acc_' + s)}" + _attrs(dict(
                STYLES["accumulate"], label="Σ", id=p + "acc_" + s, **{"class": steps},
                tooltip=f"ḡ of {n.title} = the sum of {len(es)} contributions")))
            out.append(f"  {_q(p + 'acc_' + s)} -> {_q(p + s)}" + _attrs(dict(
                STYLES["gradient_edge"], id=p + "acc_" + s + "_out", **{"class": steps},
                label="ḡ = " + (n.grad.brief() if n.grad is not None else "?"))))
    for box_id, es in loops_back.items():
        box = lay.boxes[box_id]
        if view == "forward":
            label = ["t → t+1", _crossing(trace, es)]
        else:
            label = ["ḡ_h(t) ← ḡ_h(t+1)", "(backprop through time)"]
        attrs = dict(STYLES["gradient_edge"] if view == "backward" else {}, label=_label(label),
                     id=f"{p}{box_id}_loop", **{"class": _step_classes(e.dst for e in es
                                                                     if e.contribution is not None)})
        out.append(f"  {_q(p + box.id)} -> {_q(p + box.id)}" + _attrs(attrs))
    for (s, d, _), es in groups.items():
        e0 = es[0]
        attrs = {}
        single = len(es) == 1 and lay.boxes[s].kind == "node" and lay.boxes[d].kind == "node"
        if view == "forward":
            label = ([e0.input_name] if multi_input[e0.dst] > 1 else []) if single else _bundle_label(trace, es)
        else:
            label = _gradient_label(e0) if single else _box_gradient_label(
                trace, lay, s, d, es, short=s in hubs and d != hubs[s])
            if any(e.contribution is not None for e in es):
                attrs.update(STYLES["gradient_edge"])
        if not any(e.differentiable for e in es):
            attrs.update(STYLES["no_grad"])
            attrs["tooltip"] = "; ".join(sorted({e.no_grad_reason for e in es}))
            roles = {_no_gradient(trace, e) for e in es}
            if view == "backward" and (single or len(roles) == 1 and "no gradient" not in roles):
                label = [roles.pop()]                      # what it carries: labels, state, or plainly none
        elif trace.target is not None and not any(e.on_path for e in es):
            attrs.update({k: v for k, v in STYLES["off_path"].items() if k != "fillcolor"})
        if any(e.id in lit for e in es):
            attrs.update(STYLES["highlight"])
        reasons = [r for e in es for r in trace.marks_of(e.id)]
        if reasons:
            attrs.update(STYLES["mark"])
            if all(r.startswith(DEAD_MARK) for r in reasons):      # the gradient dies here: dashed, grey-red
                attrs.update(STYLES["mark_dead"])
            label = ["⚠ " + r for r in reasons] + label
        if s not in side and d not in side and any(e.differentiable for e in es):
            attrs["weight"] = PATH_WEIGHT
        eid = p + (e0.id if len(es) == 1 else f"{e0.id}_x{len(es)}")
        steps = _step_classes(e.dst for e in es if e.contribution is not None)
        attrs.update({"label": _label(label) if label else None, "id": eid, "class": steps})
        tail = s
        if s in hubs and d != hubs[s]:
            tail = f"{s}_at_{d}"
            n = trace.node(s)
            out.append(f"  {_q(p + tail)}" + _attrs(dict(
                STYLES["proxy"], id=p + tail, label=_label([n.title]),
                tooltip=f"{n.title} ({n.id}) again: it feeds {len(set(k[1] for k in groups if k[0] == s))} boxes")))
            out.append(f"  {{rank=same; {_q(p + d)}; {_q(p + tail)}}}")
        if view == "forward":
            out.append(f"  {_q(p + tail)} -> {_q(p + d)}" + _attrs(attrs))
        else:
            head = p + ("acc_" + s if s in fan_in and e0.contribution is not None else tail)
            out.append(f"  {_q(p + d)} -> {_q(head)}" + _attrs(attrs))
    return out


def _no_gradient(trace, e) -> str:
    """A no-gradient edge's label by the role of what it carries: labels, state, or plainly none."""
    if trace.node(e.src).kind == "state":
        return "no gradient: state"
    if (e.no_grad_reason or "").startswith("the labels"):
        return "no gradient: labels"
    return "no gradient"


def _step_of(lay: Layout, box_id: str, node_id: str) -> int | None:
    """Which step of a rolled loop a node belongs to."""
    h = lay.hierarchy
    loop = h.loops.get(lay.boxes[box_id].key) if h is not None else None
    if loop is None:
        return None
    cache = getattr(loop, "_where", None)
    if cache is None:
        cache = loop._where = {nid: t for t, ids in enumerate(loop.steps) for nid in ids}
    return cache.get(node_id)


def _crossing(trace, es) -> str:
    names = list(dict.fromkeys(trace.node(e.src).title for e in es))
    return ", ".join(names[:2]) + (" …" if len(names) > 2 else "")


def _box_gradient_label(trace, lay: Layout, s, d, es, short=False) -> list:
    """The backward label of edges that cross into a folded box ``d`` (forward: tensors of ``s`` read in ``d``).

    The gradient that leaves the box is the box's vector–Jacobian product,
    written as its layer's backward formula (``ḡ_x = (ḡ_y ⊙ f′(z)) · Wᵀ``,
    :func:`figure.edge_lines`). Its value is the sum of the
    contributions of the crossing edges (or, for a big tensor read only
    inside this box, the tensor's ḡ itself).
    """
    box = lay.boxes[d]
    if box.kind == "node":
        return _gradient_label(es[0]) if len(es) == 1 else _bundle_label(trace, es)
    srcs = list(dict.fromkeys(e.src for e in es))
    inside = set(box.members)
    norm = None
    flowing = [e for e in es if e.contribution is not None]
    if flowing and len(srcs) == 1:
        value = _sum_norm(flowing) if len(flowing) > 1 else _short_num(flowing[0].contribution.stats["norm"])
        if value is None:
            src = trace.node(srcs[0])
            all_here = all(e.dst in inside for e in trace.edges_from(srcs[0]) if e.contribution is not None)
            value = _short_num(src.grad.stats["norm"]) if all_here and src.grad is not None else None
        norm = f"norm {value}" if value is not None else f"the sum of {len(flowing)} contributions"
    elif flowing:
        norm = f"{len(srcs)} tensors, {len(es)} edges"
    lines = figure.edge_lines(trace, lay, s, d, es, norm)
    return lines[:1] if short else lines


def _sum_norm(es) -> str | None:
    """The 2-norm of the summed contributions, when they are kept in full."""
    total = None
    for e in es:
        if e.contribution.data is None:
            return None
        total = e.contribution.data if total is None else total + e.contribution.data
    if total is None:
        return None
    import numpy as np
    return _short_num(float(np.sqrt(np.sum(np.abs(total) ** 2))))


def _short_num(v: float) -> str:
    return f"{v:.3g}"


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
    """The label of several edges drawn as one: the tensors that cross (by name), and how many edges."""
    srcs = list(dict.fromkeys(e.src for e in es))
    names = ", ".join(trace.node(i).title for i in srcs[:3]) + (" …" if len(srcs) > 3 else "")
    if len(srcs) == 1:
        n = trace.node(srcs[0])
        names += " " + str(tuple(n.shape))
    return [names] + ([f"{len(es)} edges"] if len(es) > 1 else [])


def _gradient_label(e) -> list:
    """A backward edge: the chain-rule step as a whole formula, then what it adds, in numbers."""
    text = e.formula or e.factor
    if text and e.contribution is None:
        text = text.split("  (")[0]          # off the path: the formula without its explanations
    lines = [text] if text else []
    if e.contribution is not None:
        lines.append(f"ḡ·∂y/∂{e.input_name} = {e.contribution.brief()}")
    return lines
