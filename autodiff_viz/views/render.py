"""Drawing traces: SVG through Graphviz, and what a notebook shows for a trace.

* :func:`svg` turns DOT into SVG with Graphviz's ``dot`` program; when the
  program is missing it raises :class:`GraphvizNotFound`, whose message says
  how to install it.
* :func:`mimebundle` is what a notebook shows for a trace: the SVG fitted to the
  output width, drawn by ``dot`` or, when it is missing, by the built-in
  renderer (:mod:`~autodiff_viz.views.minidot`) under a note saying how to get
  Graphviz's layout.

Files and the standalone HTML page are :mod:`~autodiff_viz.views.page`'s.
"""
from __future__ import annotations

import html

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


def default_view(trace) -> str:
    """``"both"`` for small traces with a target, else ``"backward"`` (or ``"forward"`` without a target)."""
    if trace.target is None:
        return "forward"
    return "both" if len(trace.nodes) <= INLINE_NODE_LIMIT else "backward"


def fit_width(image: str) -> str:
    """The SVG scaled down to the output area's width (never up): the legend is never cut off at the right."""
    return image.replace("<svg", '<svg style="max-width:100%;height:auto"', 1)


def mimebundle(trace) -> dict:
    """The notebook display of a trace: its SVG fitted to the output width.

    Without Graphviz's ``dot`` the same DOT is drawn by the built-in renderer
    (simpler layout, same boxes, labels and colours), under a one-line note
    saying how to install Graphviz for its layout.
    """
    source = trace.to_dot(default_view(trace))
    note = ""
    try:
        image = svg(source)
    except GraphvizNotFound:
        image = minidot.svg(source)
        note = f'<p style="color:#8a4500;font-size:90%">{html.escape(minidot.FALLBACK_NOTE)}</p>'
    return {"text/html": f'{note}<div style="max-width:100%;overflow-x:auto">{fit_width(image)}</div>',
            "image/svg+xml": image, "text/plain": repr(trace)}
