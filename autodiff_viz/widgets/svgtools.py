"""Make a drawn trace restylable: stable classes on the SVG once, then a small CSS block per step.

Stepping through backprop must feel instant, so the explorer never lays the
graph out again for a step. It draws each (view, collapse) combination once,
runs :func:`tag_svg` over the SVG once, and from then on every step, toggle,
selection or zoom sends only the CSS text that :func:`state_css` writes.

:func:`tag_svg` turns what Graphviz (or the built-in fallback renderer)
writes for the DOT of :mod:`autodiff_viz.dot`::

    <g id="bwd_n3" class="node step_n3"><title>bwd_n3</title> ... <text>ḡ = [1, 2]</text>

into::

    <g id="adv1-bwd_n3" class="node step_n3 adv-node-n3"> ... <text class="adv-t-grad">ḡ = [1, 2]</text>

so a selector such as ``.adv-node-n3`` reaches the box of trace node ``n3`` in
every panel (also when it is folded into a layer box), ``.adv-edge-e2`` an
edge, and ``.adv-t-value`` / ``.adv-t-shape`` / ``.adv-t-grad`` /
``.adv-t-factor`` / ``.adv-t-contrib`` the label lines that the toggles hide.
Every element id gets a per-explorer prefix, so two explorers in one
notebook do not collide.
"""
from __future__ import annotations

import re

from .. import dot

_GROUP = re.compile(r'^<g id="(?P<id>[^"]*)" class="(?P<cls>node|edge|cluster)(?P<rest>[^"]*)">')
_TEXT = re.compile(r'^(?P<open><text)(?P<attrs>[^>]*)>(?P<body>.*)</text>$')
_ID = re.compile(r'\bid="')
_SIZE = re.compile(r'<svg width="(?P<w>[\d.]+)pt" height="(?P<h>[\d.]+)pt"')
_SHAPE_LINE = re.compile(r"^(scalar|\()")


class Tagged:
    """A drawn view ready to restyle: the SVG text and its natural size in points."""

    def __init__(self, svg: str, width: float, height: float):
        self.svg, self.width, self.height = svg, width, height


def box_members(trace, collapse) -> tuple[dict, dict]:
    """``({box_id: [node ids]}, {drawn edge id: [edge ids]})`` for the boxes and edges ``dot`` draws."""
    lay = dot.layout(trace, collapse)
    boxes = {b.id: list(b.members) for b in lay.boxes.values()}
    groups: dict = {}
    for e in trace.edges:
        s, d = lay.owner[e.src], lay.owner[e.dst]
        if s != d:
            single = lay.boxes[s].kind == "node" and lay.boxes[d].kind == "node"
            groups.setdefault((s, d, e.id if single else ""), []).append(e.id)
    edges = {}
    for es in groups.values():
        edges[es[0] if len(es) == 1 else f"{es[0]}_x{len(es)}"] = es
    return boxes, edges


def _classes_for(gid: str, kind: str, boxes: dict, edges: dict) -> list:
    for view, prefix in dot.PREFIX.items():
        if gid.startswith(prefix):
            gid = gid[len(prefix):]
            panel = "adv-fwd" if view == "forward" else "adv-bwd"
            break
    else:
        return []
    if gid.startswith("acc_"):
        base = gid[4:]
        if base.endswith("_out"):
            base = base[:-4]
        return [panel, f"adv-acc-{base}"]
    if kind == "node":
        return [panel] + [f"adv-node-{m}" for m in boxes.get(gid, ())]
    return [panel] + [f"adv-edge-{e}" for e in edges.get(gid, ())]


def _text_class(kind: str, index: int, body: str) -> str:
    if body.startswith("⚠"):
        return "adv-t-mark"
    if kind == "node":
        if index == 0:
            return "adv-t-title"
        if body.startswith("ḡ ="):
            return "adv-t-grad"
        if _SHAPE_LINE.match(body):
            return "adv-t-shape"
        return "adv-t-value"
    if body.startswith("∂y/∂"):
        return "adv-t-factor"
    if body.startswith("ḡ·∂y/∂"):
        return "adv-t-contrib"
    return "adv-t-edge"


def tag_svg(svg: str, trace, collapse, prefix: str) -> Tagged:
    """Add node/edge/label classes and prefix every id (see the module docstring). Runs once per drawing."""
    boxes, edges = box_members(trace, collapse)
    out = []
    kind, texts = None, 0
    for line in svg.splitlines():
        m = _GROUP.match(line)
        if m:
            kind = m.group("cls") if m.group("cls") != "cluster" else None
            texts = 0
            extra = _classes_for(m.group("id"), kind, boxes, edges) if kind else []
            cls = m.group("cls") + m.group("rest") + "".join(" " + c for c in extra)
            line = f'<g id="{m.group("id")}" class="{cls}">' + line[m.end():]
        else:
            t = _TEXT.match(line)
            if t and kind:
                line = (f'{t.group("open")} class="{_text_class(kind, texts, t.group("body"))}"'
                        f'{t.group("attrs")}>{t.group("body")}</text>')
                texts += 1
        out.append(_ID.sub(f'id="{prefix}-', line))
    text = "\n".join(out)
    size = _SIZE.search(text)
    width, height = (float(size.group("w")), float(size.group("h"))) if size else (400.0, 300.0)
    return Tagged(text, width, height)


# ---------------------------------------------------------------------------
# Per-step CSS
# ---------------------------------------------------------------------------
SHAPES = "polygon, path, ellipse"
CURRENT = "stroke: #c2185b !important; stroke-width: 4px !important; stroke-dasharray: none !important;"
SELECTED = "stroke: #4a148c !important; stroke-width: 3px !important; stroke-dasharray: 7 3 !important;"
PENDING = "opacity: 0.35;"
PENDING_LINE = "stroke-dasharray: 2 4;"
DONE_LINE = "stroke-width: 2px;"
JUST_DONE_LINE = "stroke-width: 3.5px; stroke: #c2185b;"

# (step key, class prefix, [(selector tail, declarations)]): how each kind of step item is drawn
STEP_RULES = (
    ("pending_edges", "adv-edge", [("", PENDING), (" path", PENDING_LINE), (" .adv-t-contrib", "display: none;")]),
    ("done_edges", "adv-edge", [(" path", DONE_LINE)]),
    ("just_done_edges", "adv-edge", [(" path", JUST_DONE_LINE), (" text", "font-weight: bold;")]),
    ("pending_acc", "adv-acc", [("", PENDING)]),
    ("unknown_grad", "adv-node", [(" .adv-t-grad", "visibility: hidden;")]),
    ("not_computed", "adv-node", [("", PENDING), (f" :is({SHAPES})", "stroke-dasharray: 3 3;"),
                                  (" .adv-t-value", "visibility: hidden;")]),
)

BASE_CSS = """
{root} {{ font-family: Helvetica, Arial, sans-serif; font-size: 14px; color: #222; }}
{root} .adv-graph {{ overflow: auto; max-height: 640px; border: 1px solid #ddd; background: white; }}
{root} .adv-graph svg text {{ user-select: text; }}
{root} .adv-panel {{ font-size: 14px; line-height: 1.4; }}
{root} .adv-panel code, {root} .adv-mono {{ font-family: Menlo, Consolas, monospace; font-size: 13px; }}
{root} table.adv-mat {{ border-collapse: collapse; margin: 2px 4px; display: inline-table; vertical-align: middle; }}
{root} table.adv-mat td {{ border: 1px solid #ccc; padding: 1px 5px; text-align: right;
  font-family: Menlo, Consolas, monospace; font-size: 12px; }}
{root} .adv-eq {{ display: flex; align-items: center; flex-wrap: wrap; gap: 4px; margin: 6px 0; }}
{root} .adv-eq .adv-op {{ font-size: 18px; padding: 0 4px; }}
{root} .adv-caption {{ font-size: 12px; color: #555; text-align: center; }}
{root} .adv-note {{ color: #555; font-style: italic; }}
{root} .adv-bad {{ border-left: 4px solid #c62828; padding: 4px 10px; margin: 6px 0; }}
{root} .adv-good {{ border-left: 4px solid #2e7d32; padding: 4px 10px; margin: 6px 0; }}
{root} .adv-tape-table td, {root} .adv-tape-table th {{ border: 1px solid #ddd; padding: 2px 6px; text-align: left; }}
"""


def state_css(root: str, tagged: Tagged | None, zoom: float, hidden: set, step: dict, selected: str | None) -> str:
    """The CSS for one state of the explorer.

    Args:
        root: the explorer's container selector (``#adv-explorer-3``).
        tagged: the drawing on screen (its natural size sets the zoom).
        zoom: 1.0 is the natural size (10 pt labels).
        hidden: label kinds to hide: ``"value"``, ``"shape"``, ``"factor"``, ``"grad"``.
        step: what :meth:`ExplorerState.step_classes` returns (current node,
            done/just-done/pending edges, nodes still to compute, gradients not yet known).
        selected: the node picked in the inspector.
    """
    r = root
    rules = [BASE_CSS.format(root=r)]
    if tagged is not None:
        rules.append(f"{r} .adv-graph svg {{ width: {tagged.width * zoom:.1f}pt; "
                     f"height: {tagged.height * zoom:.1f}pt; }}")
    for kind in sorted(hidden):
        classes = {"grad": ["adv-t-grad", "adv-t-contrib"], "value": ["adv-t-value"],
                   "shape": ["adv-t-shape"], "factor": ["adv-t-factor"]}[kind]
        rules.append(", ".join(f"{r} .{c}" for c in classes) + " { display: none; }")

    panel = "." + step["edge_panel"] if step.get("edge_panel") else ""

    def sel(prefix, ids, tail=""):
        scope = panel if prefix in ("adv-edge", "adv-acc") else ""
        return ", ".join(f"{r} {scope}.{prefix}-{i}{tail}" for i in ids)

    for key, prefix, parts in STEP_RULES:
        if step.get(key):
            for tail, decl in parts:
                rules.append(f"{sel(prefix, step[key], tail)} {{ {decl} }}")
    if selected:
        rules.append(f"{r} .adv-node-{selected} :is({SHAPES}) {{ {SELECTED} }}")
        rules.append(f"{r} #row-{selected} {{ outline: 2px dashed #4a148c; }}")
    current = step.get("current")
    if current:
        rules.append(f"{r} g.node.adv-node-{current} :is({SHAPES}) {{ {CURRENT} }}")
        rules.append(f"{r} g.node.adv-node-{current} text {{ font-weight: bold; }}")
        rules.append(f"{r} #row-{current} {{ background: #fde0ec; font-weight: bold; outline: 3px solid #c2185b; }}")
    return "\n".join(rules)
