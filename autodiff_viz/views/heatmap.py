"""A weight's gradient as a picture: ḡ_W drawn as a heat map, with its shape, norm, min and max.

A weight's ḡ is an array the shape of the weight, and its pattern is what a
learner looks for: which inputs feed a unit that learns (a Dense kernel's
row is one input feature, its column one unit), which filters of a
convolution get any gradient at all, where a dead ReLU leaves a column of
zeros. :func:`heatmap` lays the array out on paper:

* a scalar or a vector (a bias): one row of cells;
* a matrix (a Dense kernel, ``(inputs, units)``): rows × columns as stored;
* a convolution kernel (Keras' layout ``(kh, kw, in_channels, filters)``):
  a grid of ``kh × kw`` tiles, one row per input channel and one column per
  filter, when there are at most :data:`FILTER_TILES` tiles; above that the
  2-D reshape ``(kh·kw·in_channels, filters)``, and the caption says which;
* anything else with more axes: ``(product of the leading axes, last axis)``.

Colour is diverging and symmetric about 0: blue for ḡ > 0, red for ḡ < 0,
white for 0, the strength ``|ḡ| / max |ḡ|``, so the same colour means the
same size everywhere in one picture; NaN and ±inf are black. A cell's
tooltip gives its index and value. An array with more than
:data:`MAX_SIDE` rows or columns is shown in blocks: each cell is the entry
of largest magnitude in its block (its sign kept), and the caption says so.
"""
from __future__ import annotations

import html
import math

import numpy as np

from ..records.traces.model import _num

FILTER_TILES = 64        # a 4-D kernel with at most this many (input channel, filter) tiles is drawn as tiles
MAX_SIDE = 96            # rows or columns above this are drawn in blocks
WIDTH = 560              # the grid's width in px at most (it fits an 850 px output area with room to spare)
HEIGHT = 480             # and its height
TOOLTIP_CELLS = 4096     # cells get a <title> tooltip up to this many
POSITIVE, NEGATIVE = (33, 102, 172), (178, 24, 43)


class Heatmap:
    """A drawn heat map: ``svg`` (the ``<svg>`` element), ``caption`` (how the array is laid out), ``layout``.

    ``layout`` is ``"scalar"``, ``"vector"``, ``"matrix"``, ``"filters"`` (a
    4-D kernel as tiles) or ``"reshaped"`` (the caption says to what);
    ``shape`` the array's shape and ``stats`` its ``min``, ``max`` and
    ``norm`` (the 2-norm ``√Σ ḡ²``). In a notebook it shows as the picture;
    ``str()`` is the SVG text.
    """

    def __init__(self, svg: str, caption: str, layout: str, shape: tuple, stats: dict, title: str):
        self.svg, self.caption, self.layout = svg, caption, layout
        self.shape, self.stats, self.title = shape, stats, title

    def _repr_html_(self) -> str:
        return f'<div class="adv-heatmap" style="max-width:100%;overflow-x:auto">{self.svg}</div>'

    def __str__(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"<Heatmap {self.title} {self.layout} {self.shape}>"


def _stats(a: np.ndarray) -> dict:
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return {"min": math.nan, "max": math.nan, "norm": math.nan}
    with np.errstate(all="ignore"):
        return {"min": float(finite.min()), "max": float(finite.max()), "norm": float(np.sqrt(np.sum(a * a)))}


def _block_reduce(m: np.ndarray) -> tuple[np.ndarray, tuple]:
    """``m`` in blocks of at most :data:`MAX_SIDE` per side: each block's entry of largest magnitude."""
    rows, cols = m.shape
    fr, fc = max(1, math.ceil(rows / MAX_SIDE)), max(1, math.ceil(cols / MAX_SIDE))
    if fr == 1 and fc == 1:
        return m, (1, 1)
    pr, pc = math.ceil(rows / fr) * fr, math.ceil(cols / fc) * fc
    padded = np.zeros((pr, pc))
    padded[:rows, :cols] = m
    blocks = padded.reshape(pr // fr, fr, pc // fc, fc).transpose(0, 2, 1, 3).reshape(pr // fr, pc // fc, -1)
    with np.errstate(invalid="ignore"):
        pick = np.nanargmax(np.where(np.isnan(blocks), -1.0, np.abs(blocks)), axis=-1)
    return np.take_along_axis(blocks, pick[..., None], axis=-1)[..., 0], (fr, fc)


def _arrange(a: np.ndarray):
    """``(tiles, tile grid (rows, cols), layout, caption)``: how an array of this shape is laid out."""
    shape = a.shape
    if a.ndim == 0:
        return [[a.reshape(1, 1)]], "scalar", "a scalar"
    if a.ndim == 1:
        return [[a.reshape(1, -1)]], "vector", f"a vector of {shape[0]}, as one row"
    if a.ndim == 2:
        return [[a]], "matrix", f"rows: axis 0 ({shape[0]}), columns: axis 1 ({shape[1]})"
    if a.ndim == 4 and shape[2] * shape[3] <= FILTER_TILES:
        kh, kw, cin, cout = shape
        tiles = [[a[:, :, i, j] for j in range(cout)] for i in range(cin)]
        return tiles, "filters", (f"a {kh}×{kw} tile per filter (columns: {cout} filters) and input channel "
                                  f"(rows: {cin} channels)")
    lead = int(np.prod(shape[:-1], dtype=np.int64))
    m = a.reshape(lead, shape[-1])
    what = ("rows: (kernel row, kernel column, input channel), columns: filters" if a.ndim == 4 else
            "rows: (kernel position, input channel), columns: filters" if a.ndim == 3 else
            "rows: the leading axes flattened, columns: the last axis")
    dims = "·".join(str(d) for d in shape[:-1])
    return [[m]], "reshaped", f"reshaped to 2-D ({dims}, {shape[-1]}) = {m.shape}: {what}"


def _colour(v: float, scale: float) -> str:
    if not math.isfinite(v):
        return "#000000"
    if v == 0 or scale <= 0:
        return "#ffffff"
    t = min(1.0, abs(v) / scale)
    r, g, b = POSITIVE if v > 0 else NEGATIVE
    mix = [round(255 + (c - 255) * (0.12 + 0.88 * t)) for c in (r, g, b)]
    return "#%02x%02x%02x" % tuple(mix)


def heatmap(array, title: str = "ḡ", *, width: int = WIDTH) -> Heatmap:
    """``array`` drawn as a heat map titled ``title`` (``"ḡ_W of dense/kernel"``): see the module's layouts.

    The header line gives the shape, the 2-norm ``‖·‖ = √Σ entries²``, the
    minimum and the maximum; the colour bar under the grid gives the scale
    (``−max|·|`` red … 0 white … ``+max|·|`` blue).
    """
    a = np.asarray(array)
    if a.dtype.kind == "c":
        raise TypeError(f"heatmap: {title} is complex (dtype {a.dtype}): draw its real part or its "
                        "magnitude: heatmap(np.abs(g)).")
    if a.dtype.kind not in "fiub":
        raise TypeError(f"heatmap: {title} has dtype {a.dtype}, not numbers; pass a numeric array.")
    a = a.astype(np.float64)
    stats = _stats(a)
    tiles, layout, caption = _arrange(a)
    reduced = [[_block_reduce(t) for t in row] for row in tiles]
    factor = reduced[0][0][1]
    if factor != (1, 1):
        caption += (f"; each cell is the entry of largest |ḡ| in a block of {factor[0]}×{factor[1]} "
                    f"({MAX_SIDE} cells per side at most)")
    finite = np.abs(a[np.isfinite(a)])
    scale = float(finite.max()) if finite.size else 0.0
    th, tw = reduced[0][0][0].shape
    n_rows, n_cols = len(reduced), len(reduced[0])
    gap = 6 if layout == "filters" else 0
    cell = max(2, min(24, (width - gap * (n_cols - 1)) // max(1, n_cols * tw),
                      (HEIGHT - gap * (n_rows - 1)) // max(1, n_rows * th)))
    grid_w = n_cols * tw * cell + gap * (n_cols - 1)
    grid_h = n_rows * th * cell + gap * (n_rows - 1)
    head = (f"{title}   shape {tuple(int(d) for d in a.shape)}   ‖·‖ = {_num(stats['norm'])}   "
            f"min {_num(stats['min'])}   max {_num(stats['max'])}")
    lines = [head, caption]
    text_w = int(max(len(s) for s in lines) * 6.6)
    left, top = 4, 44
    svg_w = max(grid_w + 2 * left, min(text_w, width + 2 * left), 200)
    bar_y = top + grid_h + 10
    svg_h = bar_y + 34
    tooltips = sum(t[0].size for row in reduced for t in row) <= TOOLTIP_CELLS
    out = [f'<svg class="adv-heatmap-svg" xmlns="http://www.w3.org/2000/svg" width="{svg_w}" height="{svg_h}" '
           f'viewBox="0 0 {svg_w} {svg_h}" role="img" aria-label="{html.escape(head, quote=True)}" '
           'font-family="Helvetica,Arial,sans-serif" font-size="11">',
           f'<text x="{left}" y="14" font-weight="bold">{html.escape(head)}</text>',
           f'<text class="adv-heatmap-caption" x="{left}" y="30">{html.escape(caption)}</text>']
    for i, row in enumerate(reduced):
        for j, (m, _) in enumerate(row):
            x0 = left + j * (tw * cell + gap)
            y0 = top + i * (th * cell + gap)
            out.append(f'<g class="adv-heatmap-tile" transform="translate({x0},{y0})">')
            for r in range(m.shape[0]):
                for c in range(m.shape[1]):
                    v = float(m[r, c])
                    tip = ""
                    if tooltips:
                        where = _index_text(layout, i, j, r, c, factor)
                        tip = f"<title>{html.escape(where)} = {html.escape(_num(v))}</title>"
                    out.append(f'<rect x="{c * cell}" y="{r * cell}" width="{cell}" height="{cell}" '
                               f'fill="{_colour(v, scale)}">{tip}</rect>')
            out.append(f'<rect x="0" y="0" width="{m.shape[1] * cell}" height="{m.shape[0] * cell}" fill="none" '
                       'stroke="#888" stroke-width="0.5"/></g>')
    out.append(_colour_bar(left, bar_y, min(grid_w, 240) if grid_w >= 120 else 240, scale))
    out.append("</svg>")
    return Heatmap("".join(out), caption, layout, tuple(int(d) for d in a.shape), stats, title)


def _index_text(layout: str, i: int, j: int, r: int, c: int, factor: tuple) -> str:
    if layout == "filters":
        return f"[{r}, {c}, {i}, {j}]"
    if factor != (1, 1):
        return f"block [{r * factor[0]}…, {c * factor[1]}…]"
    if layout in ("scalar", "vector"):
        return f"[{c}]"
    return f"[{r}, {c}]"


def _colour_bar(x: int, y: int, w: int, scale: float) -> str:
    steps = 21
    parts = [f'<g class="adv-heatmap-bar" transform="translate({x},{y})">']
    for k in range(steps):
        v = (k / (steps - 1) * 2 - 1) * scale
        parts.append(f'<rect x="{k * w / steps:.1f}" y="0" width="{w / steps + 0.5:.1f}" height="8" '
                     f'fill="{_colour(v, scale)}"/>')
    parts.append(f'<text x="0" y="21">{html.escape(_num(-scale))}</text>'
                 f'<text x="{w / 2:.1f}" y="21" text-anchor="middle">0</text>'
                 f'<text x="{w}" y="21" text-anchor="end">{html.escape(_num(scale))}</text></g>')
    return "".join(parts)


def _node_of(trace, node):
    """The trace node meant by ``node``: a node id (``"n3"``), a node, a tensor, or a unique name or title."""
    from ..core.tensor import Tensor
    if isinstance(node, Tensor):
        nid = trace.node_id_of(node)
        if nid is None:
            raise KeyError(f"heatmap: the tensor {node.name or ''} of shape {tuple(node.shape)} is not in this "
                           "trace (the tape never saw it); pass a variable the traced code used, or a node id.")
        return trace.node(nid)
    if isinstance(node, str):
        try:
            return trace.node(node)
        except KeyError:
            hits = [n for n in trace.nodes if node in (n.title, n.name, getattr(n, "label", None))]
            if len(hits) == 1:
                return hits[0]
            if hits:
                raise KeyError(f"heatmap: {len(hits)} nodes are called {node!r} "
                               f"({', '.join(n.id for n in hits[:8])}); pass one of these ids.") from None
            raise KeyError(f"heatmap: the trace has no node with id or name {node!r}; trace.nodes lists them "
                           "(a weight is usually named like its variable: 'kernel', 'bias').") from None
    if hasattr(node, "id") and hasattr(node, "grad"):
        return trace.node(node.id)
    raise TypeError(f"heatmap: pass a node id ('n3'), a tensor or a name, got {type(node).__name__}.")


def node_heatmap(trace, node, of: str = "grad", data=None) -> Heatmap:
    """The heat map of a node's ḡ (``of="grad"``) or value (``of="value"``) in ``trace``.

    ``data`` is the whole array when the caller has it (the explorer computes
    a weight's ḡ from its tape when clicked); otherwise it is the array the
    trace kept, which it keeps in full only up to its ``value_limit`` entries.
    """
    if of not in ("grad", "value"):
        raise ValueError(f"heatmap: of= is 'grad' (ḡ, the gradient of the target) or 'value', got {of!r}.")
    n = _node_of(trace, node)
    summary = n.grad if of == "grad" else n.value
    name = n.title if n.title != n.op else f"{n.op} output"
    title = f"ḡ of {name}" if of == "grad" else f"value of {name}"
    if data is None:
        if summary is None:
            raise ValueError(f"heatmap: {name} ({n.id}, shape {tuple(n.shape)}) has no ḡ: it is on no path from "
                             "the target to a source. Trace with this tensor among the sources: "
                             "tape.trace(loss, sources=model.trainable_variables).")
        if summary.data is None:
            size = int(np.prod(summary.shape, dtype=np.int64))
            raise ValueError(f"heatmap: the trace kept only statistics of {title} (shape {tuple(summary.shape)}, "
                             f"{size} entries: {summary.brief()}). Trace again keeping it whole: "
                             f"tape.trace(loss, value_limit={size}), or click the node in adv.show(tape), which "
                             "computes it from the tape.")
        data = summary.data
    return heatmap(data, title)
