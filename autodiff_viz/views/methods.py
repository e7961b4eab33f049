"""The view methods of the records, installed from above: ``Trace.to_dot``, ``Trace.to_svg``, ``tape.show`` …

A :class:`~autodiff_viz.Trace`, a :class:`~autodiff_viz.GradientTape` and a
:class:`~autodiff_viz.Comparison` are data and know no drawing; this module
(imported by :mod:`autodiff_viz.views`, which the package face imports)
gives them the methods that draw: DOT and SVG, the tape as a table, files,
the notebook's picture and the explorer. So the records never import a view,
and a view can change without touching them.
"""
from __future__ import annotations

import html
import os

from ..base.files import check_folder
from ..records.compare import _COLOURS, Comparison
from ..records.tape import GradientTape
from ..records.traces.model import Trace
from . import dot, heatmap, minidot, page, render
from .dot import NODE_BUDGET, VIEWS
from .tape_table import TapeTable
from .widgets import show as _show


def _trace_to_dot(self, view: str = "forward", collapse="auto", highlight=None, budget=NODE_BUDGET,
           expanded=None, rolled=None) -> str:
    """Graphviz DOT source of a view; see :func:`autodiff_viz.dot.to_dot`.

    ``collapse="auto"`` (default) folds layers, losses, name scopes and
    your own functions into boxes by meaning; ``expanded`` lists the box
    keys drawn open (:meth:`groups`; by default the boxes that hold a
    mark, so a failed check is never hidden), ``collapse=None`` draws every op;
    ``budget=None``: no folding for size.
    """
    return dot.to_dot(self, view=view, collapse=collapse, highlight=highlight, budget=budget,
                      expanded=expanded, rolled=rolled)


def _trace_to_svg(self, view: str = "forward", collapse="auto", highlight=None, expanded=None, rolled=None,
           renderer="graphviz") -> str:
    """The view drawn as SVG text.

    ``renderer="graphviz"`` needs Graphviz's ``dot`` program;
    ``renderer="builtin"`` uses the pure-Python layout of
    :mod:`autodiff_viz.views.minidot` (no dependency, simpler layout).
    """
    source = self.to_dot(view, collapse, highlight, expanded=expanded, rolled=rolled)
    if renderer == "builtin":
        return minidot.svg(source)
    if renderer != "graphviz":
        raise ValueError(f"renderer must be 'graphviz' or 'builtin', got {renderer!r}.")
    return render.svg(source)


def _trace_groups(self) -> dict:
    """The foldable boxes by key (layers, losses, name scopes, your functions): ``{key: dot.Group}``.

    Keys are stable for the same program; pass a set of them as
    ``expanded=`` to draw those boxes open.
    """
    return dict(dot.hierarchy(self).groups)


def _trace_loops(self) -> list:
    """Repeated calls of one layer (an RNN cell per time step) as :class:`autodiff_viz.dot.Loop` s.

    Each has, per time step ``t``, the node ids of the step, the node of
    the state handed on (``h(t)``) and ``‖ḡ_h(t)‖``.
    """
    return dot.loops(self)


def _trace_table(self, step: int | None = None):
    """The tape as a table (the Wengert list): HTML in notebooks, text in a terminal.

    ``step=k``: as it stands after ``k`` backward steps (gradients not yet computed are blank).
    """
    return TapeTable(self, step)


def _trace_save(self, path, view: str = "both", collapse="auto") -> str:
    """Write the trace to ``path``: ``.svg``, ``.dot``, ``.json`` or a self-contained ``.html``."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"Trace.save: the file must be a path (str or pathlib.Path), got "
                        f"{type(path).__name__}.") from None
    if view not in VIEWS:
        raise ValueError(f"Trace.save: view must be one of {VIEWS} (what a .svg or .dot file draws), "
                         f"got {view!r}.")
    check_folder("Trace.save", path)
    return page.save(self, path, view=view, collapse=collapse)


def _trace_heatmap(self, node, of: str = "grad"):
    """A node's ḡ (or ``of="value"``) as a heat map (:func:`autodiff_viz.views.heatmap.heatmap`).

    ``node`` is a node id (``"n3"``), a tensor the traced code used (a
    weight: ``model.layers[0].kernel``) or a unique name. A matrix is drawn as
    stored, a convolution kernel as a grid of its filters; the header gives
    the shape, ‖ḡ‖, min and max. The trace keeps arrays whole up to its
    ``value_limit`` entries; a bigger one raises, saying which limit to pass.
    """
    return heatmap.node_heatmap(self, node, of)


def _trace_repr_mimebundle(self, include=None, exclude=None):
    return render.mimebundle(self)


def _tape_show(self, target=None, sources=None, **kwargs):
    """An interactive explorer of this tape's graphs (see :func:`autodiff_viz.show`)."""
    return _show(self, target, sources, **kwargs)


def _comparison_to_svg(self, view: str = "backward", builtin: bool = False) -> str:
    """The backward graph as SVG: matched nodes green, wrong ones red, unchecked ones grey.

    Every box (a layer, the learner's own function) that holds a compared
    intermediate is drawn open, so no row the learner asked about is folded away.
    ``builtin=True`` draws with the built-in renderer (no Graphviz process:
    a grader drawing one picture per submission).
    """
    trace = self.marked_trace()
    paths = dot.hierarchy(trace).paths
    expanded = sorted({key for r in self.rows if r.node is not None for key in paths.get(r.node, ())})
    source = trace.to_dot(view, expanded=expanded or None)
    svg = minidot.svg(source) if builtin else render.svg(source)
    return _colour_nodes(svg, self._node_colours(), view)


def _comparison_node_colours(self) -> dict:
    colours = {}
    for r in self.rows:
        if r.node is not None:
            colours[r.node] = _COLOURS.get(r.status, _COLOURS["wrong"])
    return colours


def _comparison_show(self, view: str = "backward"):
    """Display the graph with the verdict (a notebook object; ``str()``-able too)."""
    return _Figure(self.to_svg(view), self._verdict())


class _Figure:
    def __init__(self, svg: str, caption: str):
        self.svg, self.caption = svg, caption

    def _repr_html_(self):
        return (f"<div class='adv-comparison-graph'><p>{html.escape(self.caption)}</p>"
                f"<div style='max-width:100%;overflow:auto'>{self.svg}</div></div>")

    def __str__(self):
        return self.caption


def _colour_nodes(svg: str, colours: dict, view: str) -> str:
    """Add a style block that fills the compared nodes and greys the rest.

    A node's box in the SVG has the id the DOT view gives it (``dot.PREFIX``:
    ``bwd_n3`` in the backward view, ``fwd_n3`` in the forward one).
    """
    prefixes = tuple(dot.PREFIX.values()) if view == "both" else (dot.PREFIX.get(view, ""),)
    rules = ["svg g.node polygon, svg g.node ellipse {fill-opacity: 0.55}"]
    for node_id, colour in colours.items():
        for p in prefixes:
            for pid in (p + node_id,):
                rules.append(f'svg g[id="{pid}"] polygon, svg g[id="{pid}"] ellipse, svg g[id="{pid}"] path '
                             f"{{fill: {colour}; fill-opacity: 1}}")
    style = "<style>" + "\n".join(rules) + "</style>"
    at = svg.find(">", svg.find("<svg"))
    return svg[:at + 1] + style + svg[at + 1:] if at >= 0 else style + svg


def install() -> None:
    """Give the records their drawing methods (run once, when :mod:`autodiff_viz.views` is imported)."""
    for name, fn in (("to_dot", _trace_to_dot), ("to_svg", _trace_to_svg), ("groups", _trace_groups),
                     ("loops", _trace_loops), ("table", _trace_table), ("save", _trace_save),
                     ("heatmap", _trace_heatmap),
                     ("_repr_mimebundle_", _trace_repr_mimebundle)):
        fn.__name__, fn.__qualname__ = name, f"Trace.{name}"
        setattr(Trace, name, fn)
    _tape_show.__name__, _tape_show.__qualname__ = "show", "GradientTape.show"
    GradientTape.show = _tape_show
    for name, fn in (("to_svg", _comparison_to_svg), ("_node_colours", _comparison_node_colours),
                     ("show", _comparison_show)):
        fn.__name__, fn.__qualname__ = name, f"Comparison.{name}"
        setattr(Comparison, name, fn)
