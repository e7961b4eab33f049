"""The built-in renderer (views/minidot.py, used when Graphviz's ``dot`` is missing) draws the legend.

A learner without Graphviz gets the same picture's meaning: what a green box,
a ``Σ`` circle or a dashed ``⊣`` edge says. Graphviz puts the legend table below
the graph (an invisible edge from every box to it); the built-in renderer must
draw every row of :data:`autodiff_viz.views.dot.LEGEND_ROWS` for the view, as
text, below every box and edge, and inside the picture's width (a notebook
output scales the SVG to its width, so a legend sticking out would be cut).
"""
import xml.etree.ElementTree as ET

import pytest

import autodiff_viz as adv
from autodiff_viz.views import dot, minidot

SVG = "{http://www.w3.org/2000/svg}"


def _fan_out_trace():
    """A weight read twice (a Σ node in the backward view) and a constant off the path."""
    w = adv.Variable([[0.5, -1.0]], name="w")
    x = adv.constant([[3.0], [4.0]], name="x")
    with adv.GradientTape() as tape:
        h = adv.tanh(w @ x)
        loss = adv.reduce_sum(h * h + w @ x)
    return tape.trace(loss, [w])


def _groups(root):
    return {g.get("id"): g for g in root.iter(SVG + "g") if g.get("id")}


def _bottom(g) -> float:
    """The lowest y any shape or text of an SVG group reaches."""
    ys = []
    for el in g.iter():
        if el.tag == SVG + "rect":
            ys.append(float(el.get("y")) + float(el.get("height")))
        elif el.tag == SVG + "ellipse":
            ys.append(float(el.get("cy")) + float(el.get("ry")))
        elif el.tag == SVG + "text":
            ys.append(float(el.get("y")))
        elif el.tag == SVG + "path":
            ys.extend(float(pt.split(",")[1]) for pt in el.get("d").replace("M", " ").replace("C", " ").split())
    return max(ys)


def _rows(view):
    keys = ("forward", "backward") if view == "both" else (view,)
    return [row for k in keys + ("common",) for row in dot.LEGEND_ROWS[k]]


@pytest.mark.parametrize("view", dot.VIEWS)
def test_the_builtin_renderer_draws_every_legend_row_below_the_graph(view):
    root = ET.fromstring(minidot.svg(dot.to_dot(_fan_out_trace(), view)))
    groups = _groups(root)
    legend_id = dot.PREFIX.get(view, "") + "legend"           # the id Graphviz gives the legend table
    assert legend_id in groups, sorted(groups)
    legend = groups[legend_id]
    texts = [t.text for t in legend.iter(SVG + "text")]
    assert texts[0] == "legend"
    for key, colour, meaning in _rows(view):                 # every entry: its key on its colour, its meaning
        assert key in texts and meaning in texts, (key, meaning, texts)
        assert any(r.get("fill") == colour for r in legend.iter(SVG + "rect")), colour
    top = min(float(r.get("y")) for r in legend.iter(SVG + "rect"))
    drawn = [g for gid, g in groups.items() if g.get("class", "").split()[:1] in (["node"], ["edge"])
             and gid != legend_id]
    assert drawn and all(_bottom(g) < top for g in drawn)     # below every box and edge of the graph
    width = float(root.get("viewBox").split()[2])
    right = max(float(r.get("x")) + float(r.get("width")) for r in legend.iter(SVG + "rect"))
    assert right <= width                                     # inside the picture


def test_backward_legend_explains_the_sum_node_that_is_drawn():
    """The Σ circle of a fan-out is in the drawing, and the legend row beside it says what it means."""
    root = ET.fromstring(minidot.svg(dot.to_dot(_fan_out_trace(), "backward")))
    groups = _groups(root)
    assert any(gid.startswith("bwd_acc_") for gid in groups)            # w is read twice: a Σ node
    texts = [t.text for t in groups["bwd_legend"].iter(SVG + "text")]
    assert texts[texts.index("Σ") + 1] == "adds the contributions of a fan-out"


def test_dot_without_a_legend_draws_none_and_the_notes_stay_last():
    """The explorer strips the legend (it lists it beside the drawing): nothing is drawn twice; a note
    under the picture (here: the budget's) stays below the legend when there is one."""
    from autodiff_viz.views.widgets.state import strip_legend
    tr = _fan_out_trace()
    source = dot.to_dot(tr, "forward")
    assert "fwd_legend" not in _groups(ET.fromstring(minidot.svg(strip_legend(source))))
    folded = ET.fromstring(minidot.svg(dot.to_dot(tr, "forward", collapse=None, budget=3)))
    note = [t for t in folded.iter(SVG + "text") if (t.text or "").startswith("note: ")]
    legend_bottom = _bottom(_groups(folded)["fwd_legend"])
    assert note and all(float(t.get("y")) > legend_bottom for t in note)
