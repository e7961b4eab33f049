"""Make a drawn trace restylable: stable classes and ids on the SVG, once per drawing.

Stepping through backprop must feel instant, so the explorer never lays the
graph out again for a step. It draws each fold state once, runs
:func:`tag_svg` over the SVG once, and from then on every step, toggle,
selection or zoom only toggles classes in the page
(:mod:`autodiff_viz.widgets.frontend`).

:func:`tag_svg` turns what Graphviz (or the built-in fallback renderer)
writes for the DOT of :mod:`autodiff_viz.dot`::

    <g id="bwd_n3" class="node step_n3"><title>bwd_n3</title> ... <text>ḡ = [1, 2]</text>

into::

    <g id="adv1-bwd_n3" class="node step_n3 adv-node-n3"> ... <text class="adv-t-grad">ḡ = [1, 2]</text>

so a selector such as ``.adv-node-n3`` reaches the box of trace node ``n3`` in
every panel (also when it is folded into a box of at most
:data:`MEMBER_CLASSES` nodes), ``.adv-edge-e2`` an edge, and ``.adv-t-value`` / ``.adv-t-shape`` / ``.adv-t-grad`` /
``.adv-t-factor`` / ``.adv-t-contrib`` the label lines that the toggles hide.
A label line wrapped for the notebook (:func:`autodiff_viz.views.render.readable`
indents its continuation lines) gets the class of the line it continues, so
hiding "∂y/∂x factors" hides a long factor's every line, not its first only.
Every element id gets a per-explorer prefix, so two explorers in one
notebook do not collide.
"""
from __future__ import annotations

import html
import re

from .. import dot, render

_GROUP = re.compile(r'^<g id="(?P<id>[^"]*)" class="(?P<cls>node|edge|cluster)(?P<rest>[^"]*)">')
_TEXT = re.compile(r'^(?P<open><text)(?P<attrs>[^>]*)>(?P<body>.*)</text>$')
_ID = re.compile(r'\bid="')
_SIZE = re.compile(r'<svg width="(?P<w>[\d.]+)pt" height="(?P<h>[\d.]+)pt"')
_SHAPE_LINE = re.compile(r"^(scalar|\()")
_FONT = re.compile(r'font-size="([\d.]+)"')
# a continuation line of a wrapped label: Graphviz writes its indent as " &#160;", the built-in renderer as is
_CONTINUED = re.compile("^(?:" + "|".join(map(re.escape, {render.CONTINUED, " &#160;", "&#160;", "\u00a0"})) + ")")


class Tagged:
    """A drawn view ready to restyle: the SVG text, its natural size in points, and its node/edge groups.

    ``elements`` lists ``(element id without the prefix, "node" | "edge")``
    in drawing order, for the step plan.
    """

    def __init__(self, svg: str, width: float, height: float, elements=(), font: float = 0.0):
        self.svg, self.width, self.height = svg, width, height
        self.elements = list(elements)
        self.font = font        # the smallest font size of its labels, in points (0: no label)


def box_members(trace, collapse_or_layout) -> tuple[dict, dict]:
    """``({box_id: [node ids]}, {drawn edge id: [edge ids]})`` for the boxes and edges ``dot`` draws.

    Takes a :class:`autodiff_viz.dot.Layout` (or a ``collapse`` to lay out).
    """
    lay = collapse_or_layout if isinstance(collapse_or_layout, dot.Layout) else dot.layout(trace, collapse_or_layout)
    cached = getattr(lay, "_adv_members", None)
    if cached is not None:
        return cached
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
    try:
        lay._adv_members = (boxes, edges)
    except AttributeError:
        pass
    return boxes, edges


MEMBER_CLASSES = 40     # a folded box with more members gets no per-member classes (the plan covers it)


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
        return [panel, "adv-acc", f"adv-acc-{base}"]
    if kind == "node":
        members = boxes.get(gid, ())
        return [panel] + ([f"adv-node-{m}" for m in members] if len(members) <= MEMBER_CLASSES else ["adv-folded"])
    members = edges.get(gid, ())
    return [panel] + ([f"adv-edge-{e}" for e in members] if len(members) <= MEMBER_CLASSES else [])


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
    if body.startswith("∂y/∂") or body.startswith("ḡ_") and "ḡ_y" in body and "=" in body and \
            not body.startswith("ḡ·"):
        return "adv-t-factor"
    if body.startswith("ḡ·∂y/∂") or body.startswith("adds "):
        return "adv-t-contrib"
    return "adv-t-edge"


def tag_svg(svg: str, trace, collapse_or_layout, prefix: str) -> Tagged:
    """Add node/edge/label classes and prefix every id (see the module docstring). Runs once per drawing."""
    boxes, edges = box_members(trace, collapse_or_layout)
    out = []
    elements = []
    kind, texts, cls_before = None, 0, ""
    for line in svg.splitlines():
        m = _GROUP.match(line)
        if m:
            kind = m.group("cls") if m.group("cls") != "cluster" and not m.group("id").endswith("legend") else None
            texts = 0
            extra = _classes_for(m.group("id"), kind, boxes, edges) if kind else []
            if kind:
                elements.append((m.group("id"), kind))
            cls = m.group("cls") + m.group("rest") + "".join(" " + c for c in extra)
            line = f'<g id="{m.group("id")}" class="{cls}">' + line[m.end():]
        else:
            t = _TEXT.match(line)
            if t and kind:
                body = t.group("body")
                cls_before = cls_before if texts and _CONTINUED.match(body) else _text_class(kind, texts, body)
                line = f'{t.group("open")} class="{cls_before}"{t.group("attrs")}>{body}</text>'
                texts += 1
        out.append(_ID.sub(f'id="{prefix}-', line) if prefix else line)
    text = "\n".join(out)
    size = _SIZE.search(text)
    width, height = (float(size.group("w")), float(size.group("h"))) if size else (400.0, 300.0)
    fonts = [float(f) for f in _FONT.findall(text)]
    return Tagged(text, width, height, elements, min(fonts) if fonts else 0.0)


def table_html(trace, prefix: str, limit: int) -> tuple[str, list]:
    """The tape as an HTML table whose rows the step plan can restyle; ``(html, node ids listed)``.

    Each row has the id ``<prefix>-row_<node>``; the value cell has the class
    ``adv-t-value`` and the gradient cell ``adv-t-grad``, so the page hides a
    gradient until the step that computes it (and a value until its op ran).
    """
    from ..tape_table import COLUMNS, TapeTable
    table = TapeTable(trace)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body, ids = [], []
    kinds = {"value": "adv-t-value", "ḡ": "adv-t-grad", "factor": "adv-t-factor", "shape": "adv-t-shape"}
    for r in table.rows[:limit]:
        style = ' style="color:#999"' if r.get("_off") else ""
        tds = "".join(f'<td class="{kinds[c]}">{html.escape(str(r[c]))}</td>' if c in kinds else
                      f"<td>{html.escape(str(r[c]))}</td>" for c in COLUMNS)
        nid = str(r["node"])
        ids.append(nid)
        body.append(f'<tr id="{prefix + "-" if prefix else ""}row_{html.escape(nid)}"{style}>{tds}</tr>')
    return ('<table class="adv-tape-table" style="border-collapse:collapse;font-family:monospace;'
            f'font-size:12px"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'), ids


# ---------------------------------------------------------------------------
# The panels' CSS (the graph's own CSS lives in frontend.CSS)
# ---------------------------------------------------------------------------
PANEL_CSS = """
{root} {{ font-family: Helvetica, Arial, sans-serif; font-size: 14px; color: #222; }}
{root} .adv-graph {{ overflow: auto; max-height: 640px; border: 1px solid #ddd; background: white; }}
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
"""
