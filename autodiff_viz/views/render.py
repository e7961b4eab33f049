"""Drawing traces: SVG through Graphviz, and what a notebook shows for a trace.

* :func:`svg` turns DOT into SVG with Graphviz's ``dot`` program; when the
  program is missing it raises :class:`GraphvizNotFound`, whose message says
  how to install it.
* :func:`mimebundle` is what a notebook shows for a trace: pictures that stay
  **readable** in an output area of :data:`READABLE_WIDTH` px (a laptop's
  JupyterLab with its file browser open), drawn by ``dot`` or, when it is
  missing, by the built-in renderer (:mod:`~autodiff_viz.views.minidot`)
  under a note saying how to get Graphviz's layout.

Readable means: scaled to the output width, the smallest label is still
:data:`MIN_LABEL_PX` px tall. A picture ``W`` px wide is shrunk by ``850/W``,
so its 9 pt (12 px) edge labels stay 9 px only while ``W ≤ 1133``. The
display therefore (1) wraps long formulas on edges into lines of about
:data:`WRAP` characters, and long summaries in boxes too, narrower still
(:data:`NARROWER`) when Graphviz lays it out too wide to read (:func:`readable`;
the DOT of ``to_dot`` and files are unchanged), and (2) shows the forward
and backward views side by side only when that is readable, else the
forward above the backward, else the backward alone with a line saying how
to see the forward.

Files and the standalone HTML page are :mod:`~autodiff_viz.views.page`'s.
"""
from __future__ import annotations

import html
import re

import graphviz

from . import minidot

INSTALL_HINT = (
    "Drawing a trace needs Graphviz's `dot` program, which was not found on PATH. Install it with one of:\n"
    "  Debian/Ubuntu:  sudo apt-get install graphviz\n"
    "  macOS:          brew install graphviz\n"
    "  conda:          conda install -c conda-forge graphviz\n"
    "then restart the kernel. Meanwhile trace.table() shows the tape as a table and "
    "trace.to_dot() gives the DOT text."
)
INLINE_NODE_LIMIT = 40
READABLE_WIDTH = 850     # px of output area the display is made for
MIN_LABEL_PX = 9.0       # the smallest label, scaled to that width, is at least this tall
WRAP = 24                # characters per line of a wrapped label
FIRST_WRAP = 32          # ... of a box's first line (its name): longer before it breaks, and only inside a word
CONTINUED = "  "         # a wrapped label's continuation lines start with this (svgtools classes them by it)
WEIGHTS_PER_ROW = 2      # a layer's weights beside its box, per rank (kernel and bias side by side)
NODESEP = "0.15"         # inches between boxes of a rank (dot.STYLES: 0.3)
# (WRAP, FIRST_WRAP, NODESEP) tried in turn when the drawing at the ones above is too wide to read at
# READABLE_WIDTH (an opened transformer block: a row of long weight names, fans of formulas, skip edges in lanes
# beside the path): narrower lines make narrower boxes and edge labels, so the picture grows down, not across
NARROWER = ((20, 24, "0.15"), (18, 20, "0.1"), (16, 16, "0.05"))
PANEL_TITLES = {"forward": "forward: values", "backward": "backward: ḡ and ∂y/∂x on every edge"}

_LABEL = re.compile(r'(\blabel=")((?:[^"\\]|\\.)*)(")')
_EDGE = re.compile(r'\s*"(?:[^"\\]|\\.)*"\s*->')


class GraphvizNotFound(RuntimeError):
    """Graphviz's ``dot`` program is not installed; the message says how to install it."""


def svg(dot_source: str) -> str:
    """SVG text for DOT source (the ``<svg>`` element only, ready to inline in HTML)."""
    try:
        out = graphviz.Source(dot_source).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFound(INSTALL_HINT) from None
    start = out.find("<svg")
    return out[start:] if start >= 0 else out


def _wrap_label(match, keep_first=False, wrap=WRAP, first_wrap=FIRST_WRAP) -> str:
    lines = []
    for k, line in enumerate(match.group(2).split("\\n")):
        first = keep_first and k == 0
        wrapped = _break_words(line, first_wrap) if first else _wrap(line, wrap)
        lines.extend(wrapped or [line])
    return match.group(1) + "\\n".join(lines) + match.group(3)


def _wrap(line: str, width: int) -> list:
    """``line`` in lines of at most ``width`` characters, broken at spaces — and a word longer than that (a
    library's dotted path, ``albert.encoder.embedding_hidden_mapping_in.weight``) after a ``.``, ``/`` or
    ``_`` inside it. Continuation lines start with :data:`CONTINUED`."""
    if len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    out, cur = [], line[:len(line) - len(body)]
    for word in body.split(" "):
        parts = [word] if len(word) <= width else [p for p in _BREAKS.findall(word) if p]
        for j, part in enumerate(parts):
            glue = "" if j else " "
            if not cur.strip():
                cur += part
            elif len(cur) + len(glue) + len(part) <= width:
                cur += glue + part
            else:
                out.append(cur)
                cur = CONTINUED + part
    if cur.strip():
        out.append(cur)
    return out


def _break_words(line: str, width: int) -> list:
    """A box's first line (its name, what a learner looks for) kept whole, spaces and all, but for a word longer
    than ``width`` (a library's dotted path), which breaks after a ``.``, ``/`` or ``_`` inside it."""
    out = [""]
    for i, word in enumerate(line.split(" ")):
        chunks = _wrap(word, width)
        out[-1] += (" " if i else "") + chunks[0]
        out.extend(chunks[1:])
    return out


_BREAKS = re.compile(r"[^._/]*[._/]?")


def readable(source: str) -> str:
    """The DOT of :func:`~autodiff_viz.views.dot.to_dot` made narrow for a notebook's output area.

    Long label lines (a layer's backward formula on its edge, a summary
    ``ḡ = min … max …, norm …`` in a box, a note under the graph) wrap at
    :data:`WRAP` characters, continuation lines indented by :data:`CONTINUED`
    (the explorer's :mod:`~autodiff_viz.views.widgets.svgtools` gives such a
    line the class of the line it continues, so a toggle hides both). A box's first line
    (the layer's or weight's name, what a learner looks for) stays whole up to :data:`FIRST_WRAP`.
    Boxes of a rank sit :data:`NODESEP` inches apart.

    When Graphviz lays that out too wide to read at :data:`READABLE_WIDTH` px
    (smallest label under :data:`MIN_LABEL_PX`), the narrower wraps and
    spacings of :data:`NARROWER` are tried in turn (:func:`narrowest`): the
    first readable one is kept, else the one whose smallest label is largest.
    A drawing that is readable as it is stays exactly as it was, and so does
    the ``"both"`` view: too wide side by side, the display (:func:`display_views`)
    and the explorer show the views one at a time instead.
    The DOT of ``to_dot`` and the files it draws are unchanged.
    """
    return narrowest(source)[0]


def narrowest(source: str) -> tuple[str, float | None]:
    """``(dot, px)``: :func:`readable`'s DOT and its smallest label in px at :data:`READABLE_WIDTH` (``None``
    without Graphviz: the first layout, unmeasured)."""
    best = None
    both = source.startswith("digraph both ")
    tries = () if both else NARROWER     # side by side too wide: the views stack
    sources = (source,) if both else (source, _straight(source), _loose(source))
    for drawn in sources:
        for wrap, first_wrap, nodesep in ((WRAP, FIRST_WRAP, NODESEP),) + tries:
            text = _narrowed(drawn, wrap, first_wrap, nodesep)
            try:
                px = smallest_label_px(svg(text))
            except (GraphvizNotFound, graphviz.CalledProcessError):
                return text, None              # the built-in renderer (or the caller's error) draws it as it is
            if px >= MIN_LABEL_PX:
                return text, px
            if best is None or px > best[1]:
                best = (text, px)
    return best


def _loose(source: str) -> str:
    """``source`` with the edges that carry no gradient (labels, masks, integer ids: dashed, ending in ⊣) given no
    pull on the layout (Graphviz's ``weight="0"``): the gradient's path and the layers set the columns, and a
    chain of label preparation (ProphetNet's ``new_zeros``, ``fill_``, ``[…] = …``) no longer drags the head
    sideways toward it. Tried when a drawing is too wide to read (:func:`narrowest`)."""
    return "\n".join(line.replace(" [", ' [weight="0" ', 1) if _ARROW.match(line) and 'arrowhead="tee"' in line
                     else line for line in source.splitlines()) + "\n"


def _straight(source: str) -> str:
    """``source`` with its longest chain of edges — the gradient's main path from the target down — kept in one
    straight column (Graphviz's ``group``: one group's edges are drawn straight, its nodes aligned).

    Left to itself, Graphviz may let a long path drift sideways rank after rank, to shorten the side edges
    that join it (a model's labels shifted beside its head, weights read off the path): the drift adds its
    own width to the branches'. Tried when a drawing is too wide to read, and kept only when it reads
    larger (:func:`narrowest`)."""
    lines = source.splitlines()
    below: dict = {}
    for line in lines:
        m = _ARROW.match(line)
        if m and 'style="invis"' not in line:
            below.setdefault(m.group(1), []).append(m.group(2))
    depth: dict = {}

    def longest(node, seen=frozenset()):
        if node not in depth:
            steps = [n for n in below.get(node, ()) if n not in seen]
            depth[node] = max((longest(n, seen | {node}) + 1 for n in steps), default=0)
        return depth[node]

    if not below:
        return source
    node = max(below, key=longest)
    path = {node}
    while below.get(node):
        node = max(below[node], key=lambda n: depth.get(n, 0))
        if node in path:
            break
        path.add(node)
    out = []
    for line in lines:
        m = _NODE.match(line)
        if m and m.group(1) in path:
            line = line.replace(" [", ' [group="main path" ', 1)
        out.append(line)
    return "\n".join(out) + "\n"


def _narrowed(source: str, wrap: int, first_wrap: int, nodesep: str) -> str:
    """``source`` with label lines wrapped at ``wrap`` (a box's first line at ``first_wrap``), boxes of a rank
    ``nodesep`` inches apart, and a layer's many weights stacked (:func:`_stack_weights`)."""
    out = []
    for line in source.splitlines():
        if line.startswith("  graph [") and " nodesep=" in line:
            line = re.sub(r'nodesep="[^"]*"', f'nodesep="{nodesep}"', line, count=1)
        edge = bool(_EDGE.match(line)) or line.startswith("  label=")
        if edge or (line.lstrip().startswith('"') and "label=" in line):
            line = _LABEL.sub(lambda m, edge=edge: _wrap_label(m, not edge, wrap, first_wrap), line, count=1)
        out.append(line)
    return _stack_weights(out)


_WEIGHT = re.compile(r'\s*"([^"]+)" \[.*tooltip="\S+ variable ')
_ARROW = re.compile(r'\s*"([^"]+)" -> "([^"]+)"')
_NODE = re.compile(r'\s*"([^"]+)" \[')


def _stack_weights(lines: list) -> str:
    """A layer's many weights (attention's eight) drawn :data:`WEIGHTS_PER_ROW` to a row, not all on one rank.

    The weights of one box would all sit on the rank next to it, side by side:
    an invisible edge from each to the one :data:`WEIGHTS_PER_ROW` places on
    puts the next ones a rank further, so the picture grows down, not across.
    """
    weights = {m.group(1) for m in map(_WEIGHT.match, lines) if m}
    beside = {}
    for m in map(_ARROW.match, lines):
        if m and (m.group(1) in weights) != (m.group(2) in weights):
            box, weight = (m.group(2), m.group(1)) if m.group(1) in weights else m.group(1, 2)
            beside.setdefault(box, []).append(weight)
    extra = []
    for group in beside.values():
        if len(group) > WEIGHTS_PER_ROW + 1:
            extra += [f'  "{a}" -> "{b}" [style="invis"]'
                      for a, b in zip(group, group[WEIGHTS_PER_ROW:])]
    end = max(i for i, line in enumerate(lines) if line.strip() == "}") if extra else len(lines)
    return "\n".join(lines[:end] + extra + lines[end:]) + "\n"


def _sizes(image: str) -> tuple[float, float] | None:
    """``(width, smallest font size)`` of an SVG in pt, or None without a pt width or any text.

    Graphviz and the built-in renderer size the SVG in pt (1 pt = 4/3 px) with
    one user unit per pt, so a font of ``f`` units is ``f · 4/3 · scale`` px.
    """
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', image)
    fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', image)]
    return None if m is None or not fonts else (float(m.group(1)), min(fonts))


def label_px(font_pt: float, width_pt: float, width: float = READABLE_WIDTH) -> float:
    """How tall (px) text of ``font_pt`` is drawn in a picture ``width_pt`` wide fitted to ``width`` px
    (shrunk, never scaled up)."""
    return font_pt * 4 / 3 * min(1.0, width / (width_pt * 4 / 3))


def smallest_label_px(image: str, width: float = READABLE_WIDTH) -> float:
    """How tall (px) the smallest text of an SVG is drawn when fitted to ``width`` px (never scaled up)."""
    sizes = _sizes(image)
    return float("inf") if sizes is None else label_px(sizes[1], sizes[0], width)


def draw(source: str) -> tuple[str, bool]:
    """``(svg, by_builtin)``: the SVG of DOT source, by Graphviz, else by the built-in renderer."""
    try:
        return svg(source), False
    except GraphvizNotFound:
        return minidot.svg(source), True


def is_readable(image: str) -> bool:
    """Whether ``image`` fitted to :data:`READABLE_WIDTH` px keeps every label ≥ :data:`MIN_LABEL_PX` px."""
    return smallest_label_px(image) >= MIN_LABEL_PX


def display_views(trace) -> list:
    """``[(view, svg)]`` that :func:`mimebundle` shows, top to bottom, and whether the built-in renderer drew.

    Side by side (``"both"``) when readable at :data:`READABLE_WIDTH` px; else
    forward above backward when each is; else the backward view alone.
    """
    if trace.target is None:
        image, builtin = draw(readable(trace.to_dot("forward")))
        return [("forward", image)], builtin
    if len(trace.nodes) <= INLINE_NODE_LIMIT:
        image, builtin = draw(readable(trace.to_dot("both")))
        if is_readable(image):
            return [("both", image)], builtin
    backward, builtin = draw(readable(trace.to_dot("backward")))
    if len(trace.nodes) <= INLINE_NODE_LIMIT:
        forward, _ = draw(readable(trace.to_dot("forward")))
        if is_readable(forward) and is_readable(backward):
            return [("forward", forward), ("backward", backward)], builtin
    return [("backward", backward)], builtin


def fit_width(image: str) -> str:
    """The SVG scaled down to the output area's width (never up), but never below readable.

    A picture that fits with its smallest label at :data:`MIN_LABEL_PX` px or
    more is shrunk to the output width. One that would have to shrink further
    (a transformer block's many weights) stops at the width where its smallest
    label is :data:`MIN_LABEL_PX` px, and its own box scrolls sideways: the page
    does not, and nothing is cut off.
    """
    sizes = _sizes(image)
    floor = ""
    if sizes is not None:
        natural, font = sizes[0] * 4 / 3, sizes[1] * 4 / 3
        floor = f"min-width:{min(natural, natural * MIN_LABEL_PX / font):.0f}px;"
    return image.replace("<svg", f'<svg style="max-width:100%;{floor}height:auto"', 1)


def mimebundle(trace) -> dict:
    """The notebook display of a trace: pictures fitted to the output width and readable at 850 px.

    Without Graphviz's ``dot`` the same DOT is drawn by the built-in renderer
    (simpler layout, same boxes, labels and colours), under a one-line note
    saying how to install Graphviz for its layout.
    """
    shown, builtin = display_views(trace)
    parts = []
    if builtin:
        parts.append(f'<p style="color:#8a4500;font-size:90%">{html.escape(minidot.FALLBACK_NOTE)}</p>')
    for view, image in shown:
        if len(shown) > 1:
            parts.append(f'<p style="margin:4px 0;font-weight:bold">{html.escape(PANEL_TITLES[view])}</p>')
        parts.append(f'<div style="max-width:100%;overflow-x:auto">{fit_width(image)}</div>')
    if [v for v, _ in shown] == ["backward"] and trace.target is not None:
        parts.append('<p style="color:#555;font-size:90%">The backward view (ḡ on every node); for the forward '
                     'view (values) run <code>trace.to_svg("forward")</code>, or explore both with '
                     '<code>adv.show(tape)</code>.</p>')
    return {"text/html": "".join(parts), "image/svg+xml": shown[-1][1], "text/plain": repr(trace)}
