"""A small pure-Python renderer for the DOT that :mod:`autodiff_viz.dot` writes, used when ``dot`` is missing.

Why this and not a browser-side Graphviz (the decision, see also docs/widget.md):

* ``graphviz-anywidget`` (MIT) ships Graphviz as WebAssembly *inside* its
  JavaScript bundle (base91-encoded, no CDN fetch), so it would work offline;
  but it needs the ``anywidget`` package and its JupyterLab extension at run
  time, lays the graph out in the browser (so the kernel never sees an SVG to
  tag, test, save or export), and a static HTML export of the notebook (which
  loads widget managers from a CDN) shows nothing.
* Server-side ``dot`` SVG is what :mod:`autodiff_viz.render` already uses,
  is deterministic, testable in Python, and survives exports; it only fails
  when the binary is missing.

So the explorer renders with ``dot`` when it is there and otherwise with this
module: a layered (Sugiyama-style) layout of the same DOT text — same node
and edge ids, classes, colours, line styles and labels — drawn as plain SVG
with no dependency at all. The layout is simpler than Graphviz's (straight
ranks, a few barycentre sweeps to reduce crossings, no edge routing around
boxes), which is why the explorer says so above the drawing and how to get
the better one.

Only the subset of DOT that :mod:`autodiff_viz.dot` writes is understood:
one statement per line, ``graph``/``node``/``edge`` defaults, quoted
attributes, ``subgraph cluster_*`` panels, a graph ``label`` and the legend
(the ``legend`` node of ``subgraph cluster_legend``, an HTML table of
``key | meaning`` rows), drawn as a table below every panel and above the
notes, where Graphviz puts it.
"""
from __future__ import annotations

import html
import re
from collections import deque
from dataclasses import dataclass, field

FALLBACK_NOTE = ("Graphviz's `dot` program was not found, so this graph is laid out by autodiff_viz's "
                 "built-in renderer (simpler layout, same content). For the Graphviz layout install it: "
                 "sudo apt-get install graphviz | brew install graphviz | conda install -c conda-forge "
                 "graphviz, then restart the kernel.")

FONT = 10.0            # pt, as dot.STYLES
CHAR_W = 5.9           # average Helvetica advance at 10 pt
LINE_H = 12.0
PAD_X, PAD_Y = 10.0, 6.0
NODE_GAP, RANK_GAP, PANEL_GAP, MARGIN = 22.0, 30.0, 40.0, 8.0
LOOP_W = 140.0         # room right of a box for its self-loop and label

_LEGEND_ROW = re.compile(r'<tr><td bgcolor="(?P<colour>[^"]*)">(?P<key>.*?)</td><td[^>]*>(?P<text>.*?)</td></tr>')
_NODE = re.compile(r'^\s*"(?P<id>[^"]+)"(?P<attrs>\s*\[.*\])?\s*$')
_EDGE = re.compile(r'^\s*"(?P<tail>[^"]+)"\s*->\s*"(?P<head>[^"]+)"(?P<attrs>\s*\[.*\])?\s*$')


@dataclass
class _Node:
    id: str
    attrs: dict
    lines: list
    panel: str
    w: float = 0.0
    h: float = 0.0
    x: float = 0.0
    y: float = 0.0
    rank: int = 0


@dataclass
class _Legend:
    """The legend table: its SVG id (``fwd_legend``) and its rows ``(key, colour, meaning)``."""

    id: str
    rows: list


@dataclass
class _Panel:
    name: str
    title: str = ""
    nodes: list = field(default_factory=list)
    x: float = 0.0
    w: float = 0.0
    h: float = 0.0


def parse_attrs(text: str) -> dict:
    """``[a="x" b=y c=<<html>>]`` → ``{"a": "x", "b": "y", "c": "<html>"}`` (DOT escapes undone, lines kept as
    ``\\n``)."""
    out, i, s = {}, 0, text.strip()
    if s.startswith("["):
        s = s[1:s.rfind("]")] if "]" in s else s[1:]
    n = len(s)
    while i < n:
        while i < n and s[i] in " ,;\t":
            i += 1
        j = s.find("=", i)
        if j < 0:
            break
        key = s[i:j].strip()
        i = j + 1
        if i < n and s[i] == '"':
            buf, i = [], i + 1
            while i < n and s[i] != '"':
                if s[i] == "\\" and i + 1 < n:
                    nxt = s[i + 1]
                    buf.append("\n" if nxt == "n" else nxt if nxt in '"\\' else "\\" + nxt)
                    i += 2
                    continue
                buf.append(s[i])
                i += 1
            value, i = "".join(buf), i + 1
        elif i < n and s[i] == "<":
            depth, start = 0, i
            while i < n:
                depth += {"<": 1, ">": -1}.get(s[i], 0)
                i += 1
                if depth == 0:
                    break
            value = s[start + 1:i - 1]
        else:
            start = i
            while i < n and s[i] not in " ,;\t":
                i += 1
            value = s[start:i]
        out[key] = value
    return out


def _text_lines(label: str) -> list:
    return [line.replace("&amp;", "&") for line in label.split("\n")]


def _parse(source: str):
    defaults = {"node": {}, "edge": {}}
    panels = {"": _Panel("")}
    order, nodes, edges, notes, legend = [""], {}, [], [], None
    stack = [""]
    for raw in source.splitlines():
        line = raw.strip()
        if line.startswith("subgraph "):
            name = line.split()[1].strip("{")
            stack.append(name)
            if name != "cluster_legend" and name not in panels:
                panels[name] = _Panel(name)
                order.append(name)
            continue
        if line == "}":
            if len(stack) > 1:
                stack.pop()
            continue
        panel = stack[-1]
        if panel == "cluster_legend":
            if line.startswith("legend ") or line.startswith("legend["):
                attrs = parse_attrs(line[len("legend"):])
                rows = [(html.unescape(m.group("key")), m.group("colour"), html.unescape(m.group("text")))
                        for m in _LEGEND_ROW.finditer(attrs.get("label", ""))]
                legend = _Legend(attrs.get("id", "legend"), rows) if rows else None
            continue
        if line.startswith(("graph [", "graph[")):
            attrs = parse_attrs(line[5:])
            if panel and "label" in attrs:
                panels[panel].title = attrs["label"]
            continue
        if line.startswith(("node [", "edge [")):
            defaults[line[:4]].update(parse_attrs(line[4:]))
            continue
        if line.startswith("label="):
            notes = _text_lines(parse_attrs(line)["label"])
            continue
        m = _EDGE.match(line)
        if m:
            attrs = dict(defaults["edge"], **parse_attrs(m.group("attrs") or ""))
            edges.append((m.group("tail"), m.group("head"), attrs))
            continue
        m = _NODE.match(line)
        if m:
            attrs = dict(defaults["node"], **parse_attrs(m.group("attrs") or ""))
            node = _Node(m.group("id"), attrs, _text_lines(attrs.get("label", m.group("id"))), panel)
            nodes[node.id] = node
            panels[panel].nodes.append(node)
    return [panels[p] for p in order if panels[p].nodes], nodes, edges, notes, legend


def _rank(panel: _Panel, edges) -> list:
    ids = {n.id for n in panel.nodes}
    succ = {i: [] for i in ids}
    indeg = {i: 0 for i in ids}
    for t, h, _ in edges:
        if t in ids and h in ids and t != h:
            succ[t].append(h)
            indeg[h] += 1
    by_id = {n.id: n for n in panel.nodes}
    queue = deque(n.id for n in panel.nodes if indeg[n.id] == 0)
    seen = set()
    while queue:
        u = queue.popleft()
        seen.add(u)
        for v in succ[u]:
            by_id[v].rank = max(by_id[v].rank, by_id[u].rank + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    ranks: dict = {}
    for n in panel.nodes:
        ranks.setdefault(n.rank, []).append(n)
    layers = [ranks[k] for k in sorted(ranks)]
    pred = {i: [] for i in ids}
    for t, h, _ in edges:
        if t in ids and h in ids and t != h:
            pred[h].append(t)
    for sweep in range(4):
        pos = {n.id: k for layer in layers for k, n in enumerate(layer)}
        seq = layers[1:] if sweep % 2 == 0 else layers[-2::-1]
        for layer in seq:
            def centre(n, pos=pos):
                nb = pred[n.id] if sweep % 2 == 0 else succ[n.id]
                return sum(pos[x] for x in nb) / len(nb) if nb else pos[n.id]
            layer.sort(key=centre)
            pos.update({n.id: k for k, n in enumerate(layer)})
    return layers


def _place(panel: _Panel, edges, x0: float, y0: float) -> None:
    for n in panel.nodes:
        n.w = max(len(line) for line in n.lines) * CHAR_W + 2 * PAD_X
        n.h = len(n.lines) * LINE_H + 2 * PAD_Y
        if n.attrs.get("shape") == "circle":
            n.w = n.h = max(n.w, n.h)
    layers = _rank(panel, edges)
    label_lines = {}
    for t, _, attrs in edges:
        label_lines[t] = max(label_lines.get(t, 0), len(_text_lines(attrs["label"])) if "label" in attrs else 0)
    loops = {t for t, h, _ in edges if t == h}
    widths = [sum(n.w for n in layer) + NODE_GAP * (len(layer) - 1)
              + (LOOP_W if any(n.id in loops for n in layer) else 0) for layer in layers]
    panel.w = max(widths) if widths else 0.0
    y = y0 + (LINE_H + 8 if panel.title else 0)
    for layer, width in zip(layers, widths):
        x = x0 + (panel.w - width) / 2
        height = max(n.h for n in layer)
        for n in layer:
            n.x, n.y = x + n.w / 2, y + height / 2
            x += n.w + NODE_GAP
        extra = max(label_lines.get(n.id, 0) for n in layer)
        y += height + RANK_GAP + extra * LINE_H * 0.6
    panel.x, panel.h = x0, y - y0


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _dash(style: str) -> str:
    return ' stroke-dasharray="5,2"' if "dashed" in style else (' stroke-dasharray="1,3"' if "dotted" in style else "")


def _node_svg(n: _Node) -> list:
    a = n.attrs
    style = a.get("style", "")
    fill = a.get("fillcolor", "white") if "filled" in style else "none"
    stroke, width = a.get("color", "#444444"), a.get("penwidth", "1")
    cls = " ".join(["node"] + a.get("class", "").split())
    out = [f'<g id="{_esc(a.get("id", n.id))}" class="{_esc(cls)}">', f"<title>{_esc(a.get('tooltip', n.id))}</title>"]
    common = f'fill="{_esc(fill)}" stroke="{_esc(stroke)}" stroke-width="{_esc(width)}"{_dash(style)}'
    if a.get("shape") == "circle":
        out.append(f'<ellipse {common} cx="{n.x:.2f}" cy="{n.y:.2f}" rx="{n.w / 2:.2f}" ry="{n.h / 2:.2f}"/>')
    else:
        r = 6 if "rounded" in style else 0
        out.append(f'<rect {common} x="{n.x - n.w / 2:.2f}" y="{n.y - n.h / 2:.2f}" width="{n.w:.2f}" '
                   f'height="{n.h:.2f}" rx="{r}"/>')
    colour = a.get("fontcolor", "#222222")
    top = n.y - (len(n.lines) * LINE_H) / 2 + LINE_H - 3
    for k, line in enumerate(n.lines):
        out.append(f'<text text-anchor="middle" x="{n.x:.2f}" y="{top + k * LINE_H:.2f}" '
                   f'font-family="Helvetica,sans-Serif" font-size="{FONT:.2f}" fill="{_esc(colour)}">'
                   f'{_esc(line)}</text>')
    out.append("</g>")
    return out


def _loop_svg(n: _Node, a: dict) -> list:
    """An edge from a box back into itself (a rolled loop's ``t → t+1``): an arc on the box's right."""
    colour, width = a.get("color", "#444444"), a.get("penwidth", "1")
    cls = " ".join(["edge"] + a.get("class", "").split())
    x, top, bottom = n.x + n.w / 2, n.y - n.h / 4, n.y + n.h / 4
    out = [f'<g id="{_esc(a.get("id", n.id + "-" + n.id))}" class="{_esc(cls)}">',
           f"<title>{_esc(a.get('tooltip', n.id + ' → ' + n.id))}</title>",
           f'<path fill="none" stroke="{_esc(colour)}" stroke-width="{_esc(width)}" '
           f'd="M{x:.2f},{bottom:.2f} C{x + 40:.2f},{bottom + 10:.2f} '
           f'{x + 40:.2f},{top - 10:.2f} {x + 6:.2f},{top:.2f}"/>',
           f'<polygon fill="{_esc(colour)}" stroke="{_esc(colour)}" '
           f'points="{x + 7:.2f},{top - 3.5:.2f} {x:.2f},{top:.2f} {x + 7:.2f},{top + 3.5:.2f}"/>']
    colour = a.get("fontcolor", "#222222")
    for k, line in enumerate(_text_lines(a.get("label", ""))):
        out.append(f'<text text-anchor="start" x="{x + 44:.2f}" y="{n.y + k * 11:.2f}" '
                   f'font-family="Helvetica,sans-Serif" font-size="9.00" fill="{_esc(colour)}">{_esc(line)}</text>')
    out.append("</g>")
    return out


def _edge_svg(t: _Node, h: _Node, a: dict) -> list:
    if t is h:
        return _loop_svg(t, a)
    x1, y1 = t.x, t.y + t.h / 2
    x2, y2 = h.x, h.y - h.h / 2
    if y2 <= y1:
        x1, y1, x2, y2 = t.x + t.w / 2, t.y, h.x - h.w / 2, h.y
    my = (y1 + y2) / 2
    colour, width, style = a.get("color", "#444444"), a.get("penwidth", "1"), a.get("style", "")
    cls = " ".join(["edge"] + a.get("class", "").split())
    out = [f'<g id="{_esc(a.get("id", t.id + "-" + h.id))}" class="{_esc(cls)}">',
           f"<title>{_esc(a.get('tooltip', t.id + ' → ' + h.id))}</title>",
           f'<path fill="none" stroke="{_esc(colour)}" stroke-width="{_esc(width)}"{_dash(style)} '
           f'd="M{x1:.2f},{y1:.2f} C{x1:.2f},{my:.2f} {x2:.2f},{my:.2f} {x2:.2f},{y2 - 6:.2f}"/>']
    if a.get("arrowhead") == "tee":
        out.append(f'<polygon fill="{_esc(colour)}" stroke="{_esc(colour)}" '
                   f'points="{x2 - 5:.2f},{y2 - 6:.2f} {x2 + 5:.2f},{y2 - 6:.2f} {x2 + 5:.2f},{y2 - 4:.2f} '
                   f'{x2 - 5:.2f},{y2 - 4:.2f}"/>')
    else:
        out.append(f'<polygon fill="{_esc(colour)}" stroke="{_esc(colour)}" '
                   f'points="{x2 - 3.5:.2f},{y2 - 7:.2f} {x2:.2f},{y2:.2f} {x2 + 3.5:.2f},{y2 - 7:.2f}"/>')
    if "label" in a:
        lines = _text_lines(a["label"])
        colour = a.get("fontcolor", "#222222")
        lx, ly = (x1 + x2) / 2 + 6, my - (len(lines) - 1) * LINE_H / 2
        for k, line in enumerate(lines):
            out.append(f'<text text-anchor="start" x="{lx:.2f}" y="{ly + k * 11:.2f}" '
                       f'font-family="Helvetica,sans-Serif" font-size="9.00" fill="{_esc(colour)}">{_esc(line)}</text>')
    out.append("</g>")
    return out


LEGEND_ROW_H = LINE_H + 6     # a legend row: one line of text and its cell padding
LEGEND_PAD = 6.0              # text inside a legend cell, from its left edge


def _legend_size(legend: _Legend) -> tuple:
    """``(key column width, meaning column width, height)`` of the legend table."""
    key_w = max(len(k) for k, _, _ in legend.rows) * CHAR_W + 2 * LEGEND_PAD
    text_w = max(len(t) for _, _, t in legend.rows) * CHAR_W + 2 * LEGEND_PAD
    return key_w, text_w, (len(legend.rows) + 1) * LEGEND_ROW_H


def _legend_svg(legend: _Legend, x: float, y: float) -> list:
    """The legend as Graphviz draws its table: a title row, then one row a meaning, its key on its colour."""
    key_w, text_w, _ = _legend_size(legend)
    font = f'font-family="Helvetica,sans-Serif" font-size="{FONT:.2f}"'
    out = [f'<g id="{_esc(legend.id)}" class="node legend">', "<title>legend</title>",
           f'<rect fill="none" stroke="#444444" x="{x:.2f}" y="{y:.2f}" width="{key_w + text_w:.2f}" '
           f'height="{LEGEND_ROW_H:.2f}"/>',
           f'<text text-anchor="middle" x="{x + (key_w + text_w) / 2:.2f}" y="{y + LEGEND_ROW_H - 5:.2f}" {font} '
           'font-weight="bold">legend</text>']
    for k, (key, colour, text) in enumerate(legend.rows, start=1):
        top = y + k * LEGEND_ROW_H
        out.append(f'<rect fill="{_esc(colour)}" stroke="#444444" x="{x:.2f}" y="{top:.2f}" width="{key_w:.2f}" '
                   f'height="{LEGEND_ROW_H:.2f}"/>')
        out.append(f'<rect fill="none" stroke="#444444" x="{x + key_w:.2f}" y="{top:.2f}" width="{text_w:.2f}" '
                   f'height="{LEGEND_ROW_H:.2f}"/>')
        out.append(f'<text text-anchor="middle" x="{x + key_w / 2:.2f}" y="{top + LEGEND_ROW_H - 5:.2f}" {font}>'
                   f'{_esc(key)}</text>')
        out.append(f'<text text-anchor="start" x="{x + key_w + LEGEND_PAD:.2f}" y="{top + LEGEND_ROW_H - 5:.2f}" '
                   f'{font}>{_esc(text)}</text>')
    out.append("</g>")
    return out


def svg(source: str) -> str:
    """SVG text for DOT written by :func:`autodiff_viz.dot.to_dot` (ids, classes, styles and labels kept).

    The legend, when the DOT has one, is drawn below every panel (and above the notes), as Graphviz does.
    """
    panels, nodes, edges, notes, legend = _parse(source)
    x = MARGIN
    for p in panels:
        _place(p, edges, x, MARGIN)
        x += p.w + PANEL_GAP
    width = max(x - PANEL_GAP + MARGIN, 120.0)
    graph_bottom = max([p.h for p in panels] + [20.0]) + MARGIN
    legend_h = 0.0
    if legend is not None:
        key_w, text_w, table_h = _legend_size(legend)
        width = max(width, MARGIN + key_w + text_w + MARGIN)
        legend_h = RANK_GAP / 2 + table_h
    height = graph_bottom + legend_h + len(notes) * LINE_H + 6
    body = [f'<svg width="{width:.0f}pt" height="{height:.0f}pt" viewBox="0.00 0.00 {width:.2f} {height:.2f}" '
            'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">',
            '<g id="graph0" class="graph">', '<rect fill="white" stroke="none" x="0" y="0" '
            f'width="{width:.2f}" height="{height:.2f}"/>']
    for k, p in enumerate(panels):
        if p.name:
            body.append(f'<g id="clust{k + 1}" class="cluster">')
            body.append(f"<title>{_esc(p.name)}</title>")
            body.append(f'<rect fill="none" stroke="#cccccc" rx="6" x="{p.x - 4:.2f}" y="{MARGIN - 4:.2f}" '
                        f'width="{p.w + 8:.2f}" height="{p.h:.2f}"/>')
            body.append(f'<text x="{p.x + 2:.2f}" y="{MARGIN + LINE_H - 2:.2f}" font-family="Helvetica,sans-Serif" '
                        f'font-size="12.00">{_esc(p.title)}</text>')
            body.append("</g>")
    for t, h, a in edges:
        if t in nodes and h in nodes:
            body.extend(_edge_svg(nodes[t], nodes[h], a))
    for n in nodes.values():
        body.extend(_node_svg(n))
    if legend is not None:
        body.extend(_legend_svg(legend, MARGIN, graph_bottom + RANK_GAP / 2))
    for k, line in enumerate(notes):
        body.append(f'<text x="{MARGIN:.2f}" y="{height - (len(notes) - k) * LINE_H:.2f}" '
                    f'font-family="Helvetica,sans-Serif" font-size="{FONT:.2f}">{_esc(line)}</text>')
    body += ["</g>", "</svg>"]
    return "\n".join(body)
