"""Small plots for the notebooks, as self-contained SVG (no plotting library, nothing loaded from a CDN).

Three kinds, enough for the course's pictures:

* :func:`line_chart` — several series on shared axes (optionally a log
  y-axis), e.g. ‖ḡ_h(t)‖ against the time step t for three recurrent layers.
  Series compared in one chart always share one scale.
* :func:`scatter` — groups of 2-D points on shared axes, e.g. real against
  generated points of a GAN.
* :func:`heatmap` — a matrix as coloured cells (an image, a saliency map,
  attention weights), sequential (white → dark) or diverging (red < 0 <
  blue) with the range printed.

Each returns a :class:`Chart`, which a notebook displays as its SVG and which
``str()`` describes in one line.
"""
from __future__ import annotations

import html
import math

import numpy as np

COLOURS = ("#1f4e99", "#c0392b", "#2e8b57", "#b35900", "#7d3c98", "#17806d", "#555555")


class Chart:
    """An SVG picture with a caption; shows itself in a notebook."""

    def __init__(self, svg: str, caption: str = ""):
        self.svg, self.caption = svg, caption

    def _repr_html_(self) -> str:
        cap = f"<div style='font-size:12px;color:#444'>{html.escape(self.caption)}</div>" if self.caption else ""
        return f"<div class='adv-chart'>{self.svg}{cap}</div>"

    def __str__(self):
        return self.caption or "chart"

    __repr__ = __str__


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _frame(kind, width, height, margins, xrange, yrange, ylab, title, xlabel, ylabel) -> list:
    """The start of a chart's SVG: background, title, axes, five y-ticks with grid lines, the x range, labels."""
    left, right, top, bottom = margins
    (x0, x1), (lo, hi) = xrange, yrange
    out = [f'<svg class="{kind}" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" '
           f'font-family="Helvetica,Arial" font-size="12" role="img" aria-label="{html.escape(title or ylabel)}">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{left}" y="16" font-weight="bold">{html.escape(title)}</text>')
    yb = height - bottom
    out += [f'<line x1="{left}" y1="{yb}" x2="{width - right}" y2="{yb}" stroke="#888"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{yb}" stroke="#888"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        y = top + (height - top - bottom) * (1 - k / 4)
        out.append(f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end" fill="#444">{ylab(v)}</text>')
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#eee"/>')
    out.append(f'<text x="{left}" y="{yb + 16}" text-anchor="middle" fill="#444">{_fmt(x0)}</text>')
    out.append(f'<text x="{width - right}" y="{yb + 16}" text-anchor="middle" fill="#444">{_fmt(x1)}</text>')
    if xlabel:
        out.append(f'<text x="{(left + width - right) / 2}" y="{height - 6}" text-anchor="middle">'
                   f'{html.escape(xlabel)}</text>')
    if ylabel:
        out.append(f'<text x="12" y="{(top + yb) / 2}" text-anchor="middle" transform="rotate(-90 12 '
                   f'{(top + yb) / 2})">{html.escape(ylabel)}</text>')
    return out


def line_chart(series: dict, x=None, log_y: bool = False, title: str = "", xlabel: str = "", ylabel: str = "",
               width: int = 520, height: int = 260) -> Chart:
    """Lines for ``{name: values}`` on one pair of axes (x: ``x`` or 0, 1, 2 ...).

    With ``log_y=True`` the y-axis is logarithmic (values ≤ 0 are left out):
    the scale on which vanishing and exploding gradients are straight lines.
    """
    if not series:
        raise ValueError("line_chart: give at least one series, e.g. {'loss': [..]}.")
    data = {str(k): np.asarray(v, dtype=float).ravel() for k, v in series.items()}
    n = max(len(v) for v in data.values())
    xs = np.arange(n, dtype=float) if x is None else np.asarray(x, dtype=float)
    ok = [v[np.isfinite(v) & ((v > 0) if log_y else True)] for v in data.values()]
    values = np.concatenate([o for o in ok if o.size]) if any(o.size for o in ok) else np.array([0.0, 1.0])
    f = np.log10 if log_y else (lambda a: a)
    lo, hi = float(f(values.min())), float(f(values.max()))
    if hi <= lo:
        hi = lo + 1.0
    x0, x1 = float(xs.min()), float(xs.max()) if xs.size > 1 else float(xs.min()) + 1
    left, right, top, bottom = 84, 150, 26 if title else 12, 40

    def px(i, v):
        X = left + (width - left - right) * ((xs[i] - x0) / ((x1 - x0) or 1))
        Y = top + (height - top - bottom) * (1 - (f(v) - lo) / (hi - lo))
        return f"{X:.1f},{Y:.1f}"

    lab = (lambda v: f"1e{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{10 ** v:.1e}") if log_y else _fmt
    out = _frame("adv-line-chart", width, height, (left, right, top, bottom), (x0, x1), (lo, hi), lab, title,
                 xlabel, ylabel + (" (log scale)" if log_y and ylabel else ""))
    for j, (name, v) in enumerate(data.items()):
        colour = COLOURS[j % len(COLOURS)]
        pts = " ".join(px(i, val) for i, val in enumerate(v) if math.isfinite(val) and (val > 0 or not log_y))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        out.append(f'<text x="{width - right + 8}" y="{top + 16 * j + 8}" fill="{colour}">{html.escape(name)}</text>')
    out.append("</svg>")
    finals = ", ".join(f"{k}: {_fmt(v[-1])}" for k, v in data.items() if v.size)
    return Chart("".join(out), f"{title + ' — ' if title else ''}last values: {finals}")


def scatter(groups: dict, title: str = "", xlabel: str = "", ylabel: str = "", width: int = 420,
            height: int = 320) -> Chart:
    """Points for ``{name: (n, 2) array}`` on one pair of axes, one colour per group (real against generated
    points, the classes of a dataset). Groups share one scale, so their spreads compare by eye; the caption
    gives each group's mean and standard deviation, so the picture is never the only signal.
    """
    if not groups:
        raise ValueError("scatter: give at least one group, e.g. {'real': points} with points of shape (n, 2).")
    data = {}
    for name, pts in groups.items():
        a = np.asarray(pts, dtype=float)
        if a.ndim != 2 or a.shape[1] != 2:
            raise ValueError(f"scatter: group {name!r} has shape {a.shape}; give points of shape (n, 2), one row "
                             "per point (x, y).")
        data[str(name)] = a[np.isfinite(a).all(axis=1)]
    every = np.concatenate([a for a in data.values() if a.size] or [np.zeros((1, 2))])
    (x0, lo), (x1, hi) = every.min(axis=0), every.max(axis=0)
    x1, hi = (x1 if x1 > x0 else x0 + 1.0), (hi if hi > lo else lo + 1.0)
    left, right, top, bottom = 60, 110, 26 if title else 12, 40
    out = _frame("adv-scatter", width, height, (left, right, top, bottom), (x0, x1), (lo, hi), _fmt, title,
                 xlabel, ylabel)
    for j, (name, a) in enumerate(data.items()):
        colour = COLOURS[j % len(COLOURS)]
        for x, y in a:
            X = left + (width - left - right) * (x - x0) / (x1 - x0)
            Y = top + (height - top - bottom) * (1 - (y - lo) / (hi - lo))
            out.append(f'<circle cx="{X:.1f}" cy="{Y:.1f}" r="2.5" fill="{colour}" fill-opacity="0.6"/>')
        out.append(f'<text x="{width - right + 8}" y="{top + 16 * j + 8}" fill="{colour}">{html.escape(name)}</text>')
    out.append("</svg>")
    stats = "; ".join(f"{k}: {len(a)} points, mean ({_fmt(a[:, 0].mean())}, {_fmt(a[:, 1].mean())}), "
                      f"std ({_fmt(a[:, 0].std())}, {_fmt(a[:, 1].std())})" for k, a in data.items() if len(a))
    return Chart("".join(out), f"{title + ' — ' if title else ''}{stats}")


def heatmap(matrix, title: str = "", diverging: bool | None = None, cell: int | None = None,
            row_labels=None, col_labels=None) -> Chart:
    """A matrix as coloured cells: an image, a saliency map, attention weights.

    ``diverging`` (default: the matrix has both signs) colours negative
    values red and positive blue around a white zero; otherwise values go
    from white (the minimum) to dark blue (the maximum). The caption gives
    the range, so the colours are never the only signal.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2:
        raise ValueError(f"heatmap: expected a 2-D matrix, got shape {m.shape}.")
    rows, cols = m.shape
    cell = cell or max(8, min(40, 320 // max(rows, cols)))
    finite = m[np.isfinite(m)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if diverging is None:
        diverging = lo < 0 < hi
    scale = max(abs(lo), abs(hi)) or 1.0
    left = 30 if row_labels is not None else 8
    top = (22 if title else 4) + (16 if col_labels is not None else 0)
    width, height = left + cols * cell + 4, top + rows * cell + 4
    out = [f'<svg class="adv-heatmap" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" '
           f'font-family="Helvetica,Arial" font-size="11" role="img" aria-label="{html.escape(title)}">']
    if title:
        out.append(f'<text x="8" y="15" font-weight="bold">{html.escape(title)}</text>')
    for i in range(rows):
        for j in range(cols):
            v = m[i, j]
            if not np.isfinite(v):
                colour = "#999"
            elif diverging:
                t = abs(v) / scale
                base = (33, 102, 172) if v > 0 else (178, 24, 43)
                colour = "rgb(" + ",".join(str(int(255 + (c - 255) * t)) for c in base) + ")"
            else:
                t = (v - lo) / ((hi - lo) or 1.0)
                colour = "rgb(" + ",".join(str(int(255 + (c - 255) * t)) for c in (8, 48, 107)) + ")"
            out.append(f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
                       f'fill="{colour}"><title>[{i}, {j}] = {v:.4g}</title></rect>')
    if row_labels is not None:
        for i, lab in enumerate(row_labels):
            out.append(f'<text x="{left - 4}" y="{top + i * cell + cell / 2 + 4}" text-anchor="end">'
                       f'{html.escape(str(lab))}</text>')
    if col_labels is not None:
        for j, lab in enumerate(col_labels):
            out.append(f'<text x="{left + j * cell + cell / 2}" y="{top - 4}" text-anchor="middle">'
                       f'{html.escape(str(lab))}</text>')
    out.append("</svg>")
    kind = "red < 0 < blue" if diverging else "white = min, dark = max"
    return Chart("".join(out), f"{title + ': ' if title else ''}{rows}×{cols}, from {_fmt(lo)} to {_fmt(hi)} ({kind})")
