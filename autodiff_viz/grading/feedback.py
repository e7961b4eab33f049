"""The feedback a student sees: the verdict, the table and the marked backward graph, as self-styled HTML.

nbgrader's feedback page, Otter's report and Gradescope's test output show
HTML without the notebook's CSS, in a column narrower than a notebook. So
every style here is inline (a table whose header cells run together without
CSS reads "intermediatestatus"), and the graph is fitted to the column: the
SVG's ``width`` is 100% of its box and its ``viewBox`` keeps the proportions,
so no edge label is cut off.

Everything that comes from a submission (an exception's text, a warning, a
name) is escaped.
"""
from __future__ import annotations

import html
import re

from ..records.compare import _COLOURS, _fmt

_CELL = "border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top"
_HEAD = _CELL + ";background:#eee;font-weight:bold"


def table_html(rows: list, kinds: list) -> str:
    """The comparison table with inline styles: one row per gradient, its status, kind and message."""
    head = ("", "gradient", "status", "kind", "shape (yours / tape)", "max |diff|", "what it means")
    out = ["<table style='border-collapse:collapse;font-size:13px;margin:6px 0'><thead><tr>"]
    out += [f"<th style='{_HEAD}'>{html.escape(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    first = next((r for r in rows if not r.ok), None)
    for r, k in zip(rows, kinds):
        bg = _COLOURS.get(r.status, _COLOURS["wrong"])
        weight = ";font-weight:bold" if r is first else ""
        cells = ("→" if r is first else "", r.name, r.status, str(k), f"{r.hand_shape} / {r.tape_shape}",
                 _fmt(r.max_abs), r.message)
        out.append(f"<tr style='background:{bg}{weight}'>" + "".join(
            f"<td style='{_CELL}'>{'<code>' + html.escape(str(c)) + '</code>' if i in (1, 3) else html.escape(str(c))}"
            "</td>" for i, c in enumerate(cells)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


_TEXT = re.compile(r'<text\b([^>]*)>([^<]*)</text>')


def _text_right(svg: str) -> float:
    """The right edge of the widest label, estimated (0.6 em a character): a label may run past its layout box."""
    right = 0.0
    for attrs, text in _TEXT.findall(svg):
        x = re.search(r'\sx="(-?[\d.]+)"', attrs)
        size = re.search(r'font-size="([\d.]+)"', attrs)
        if x is None:
            continue
        width = len(html.unescape(text)) * 0.6 * (float(size.group(1)) if size else 10.0)
        anchor = re.search(r'text-anchor="(\w+)"', attrs)
        start = float(x.group(1)) - {"middle": width / 2, "end": width}.get(anchor.group(1) if anchor else "", 0)
        right = max(right, start + width)
    return right


def fit_svg(svg: str) -> str:
    """The SVG scaled to its box's width: ``width="100%"``, height from the ``viewBox``.

    The ``viewBox`` is widened to the widest label when a label runs past the
    drawing's own box (else the column would cut it off).
    """
    m = re.search(r"<svg\b[^>]*>", svg)
    if m is None:
        return svg
    tag = m.group(0)
    w = re.search(r'\swidth="([\d.]+)(pt|px)?"', tag)
    h = re.search(r'\sheight="([\d.]+)(pt|px)?"', tag)
    new = tag
    box = re.search(r'viewBox="(-?[\d.]+) (-?[\d.]+) ([\d.]+) ([\d.]+)"', tag)
    if box is None and w and h:
        new = new.replace("<svg", f'<svg viewBox="0 0 {w.group(1)} {h.group(1)}"', 1)
        box = re.search(r'viewBox="(-?[\d.]+) (-?[\d.]+) ([\d.]+) ([\d.]+)"', new)
    translate = re.search(r'<g id="graph0"[^>]*translate\((-?[\d.]+)', svg)
    if box is not None:
        x0, y0, bw, bh = (float(v) for v in box.groups())
        right = _text_right(svg) + (float(translate.group(1)) if translate else 0.0)
        if right + 4 > x0 + bw:
            new = new.replace(box.group(0), f'viewBox="{x0:g} {y0:g} {right + 4 - x0:.2f} {bh:g}"', 1)
    new = re.sub(r'\swidth="[^"]*"', ' width="100%"', new, count=1)
    new = re.sub(r'\sheight="[^"]*"', "", new, count=1)
    if 'width="100%"' not in new:
        new = new.replace("<svg", '<svg width="100%"', 1)
    new = new.replace("<svg", '<svg style="max-width:100%;height:auto;display:block"', 1)
    return svg[:m.start()] + new + svg[m.end():]


def picture(comparison, renderer: str = "builtin") -> str:
    """The backward graph of ``comparison`` with its nodes coloured by row, fitted (empty when it cannot draw).

    ``renderer``: ``"builtin"`` (the package's own layout: ~10 ms, and no
    Graphviz needed in a grading container) or ``"graphviz"`` (Graphviz's
    layout, one ``dot`` process per picture: ~100 ms).
    """
    if comparison is None or comparison.trace is None or not hasattr(comparison, "to_svg"):
        return ""
    try:
        return fit_svg(comparison.to_svg("backward", builtin=renderer != "graphviz"))
    except Exception as exc:   # a drawing problem must not cost the student the feedback itself
        return f"<p style='color:#8a4500'>(The graph could not be drawn: {html.escape(str(exc))}.)</p>"


def result_html(result, with_picture: bool = True, renderer: str = "builtin") -> str:
    """The whole feedback of one :class:`~autodiff_viz.grading.check.Result` as one HTML fragment."""
    colour = "#1a7f37" if result.ok else "#b42318"
    parts = [f"<div class='adv-grading' style='font-family:sans-serif;max-width:100%'>"
             f"<p style='color:{colour};font-weight:bold;margin:4px 0'>{html.escape(result.message())}</p>"]
    if result.warnings or result.stderr:
        noise = [*result.warnings] + ([result.stderr.strip()] if result.stderr.strip() else [])
        parts.append("<p style='color:#8a4500;margin:4px 0'>Kept off stderr (so they cost no points): "
                     + "; ".join(html.escape(n) for n in noise) + "</p>")
    if getattr(result, "stdout", ""):
        parts.append("<p style='margin:4px 0'>Your code printed:</p><pre style='white-space:pre-wrap;"
                     "max-height:12em;overflow:auto;background:#f6f6f6;padding:4px;margin:4px 0'>"
                     + html.escape(result.stdout) + "</pre>")
    if result.comparison is not None and len(result.comparison) and not result.ok:   # the table only when wrong
        parts.append(table_html(result.comparison.rows, result.kinds))
        if with_picture:
            parts.append("<p style='margin:4px 0'>The backward graph: red is wrong, green is right, "
                         "grey was not asked.</p>")
            parts.append(f"<div style='max-width:100%;overflow:hidden'>{picture(result.comparison, renderer)}</div>")
    parts.append("</div>")
    return "".join(parts)


def result_text(result) -> str:
    """The feedback as plain text (a terminal, Otter's and Gradescope's text output)."""
    lines = [result.message()]
    if result.warnings:
        lines.append("Warnings kept off stderr: " + "; ".join(result.warnings))
    if getattr(result, "stdout", ""):
        lines.append("Your code printed:\n" + result.stdout.rstrip())
    if result.comparison is not None and len(result.comparison) and not result.ok:
        for r, k in zip(result.comparison.rows, result.kinds):
            lines.append(f"  {'→' if r is result.comparison.first_wrong else ' '} {r.name:<12} {r.status:<8} {k}")
    return "\n".join(lines)


class _Shown:
    def __init__(self, html_text: str, text: str):
        self._html, self._text = html_text, text

    def _repr_html_(self):
        return self._html

    def __repr__(self):
        return self._text


def display(result) -> None:
    """Show the feedback where the cell runs: HTML in a notebook, text elsewhere; nothing when all is right."""
    if result.ok and not result.warnings and not result.stderr and not getattr(result, "stdout", ""):
        return
    try:
        from IPython import get_ipython
        from IPython.display import display as ipy_display
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        ipy_display(_Shown(result_html(result, with_picture=not result.ok), result_text(result)))
    else:
        print(result_text(result))
