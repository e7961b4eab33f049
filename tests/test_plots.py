"""The notebooks' SVG plots: shared scales, log axes, escaped labels, the range in the caption."""
import re

import numpy as np
import pytest

from autodiff_viz.views.plots import heatmap, line_chart


def _points(svg):
    return [[tuple(map(float, p.split(","))) for p in m.split()] for m in re.findall(r'points="([^"]*)"', svg)]


def test_series_in_one_chart_share_one_scale():
    chart = line_chart({"a": [1.0, 2.0], "b": [1.0, 4.0]})
    (a0, a1), (b0, b1) = _points(chart.svg)
    assert a0[1] == b0[1]                        # the same value sits at the same height in both series
    assert b1[1] < a1[1]                         # 4 is drawn above 2
    assert "b: 4" in chart.caption


def test_a_log_axis_makes_geometric_decay_a_straight_line_and_drops_zeros():
    chart = line_chart({"norm": [1.0, 0.1, 0.01, 0.0]}, log_y=True)
    (pts,) = _points(chart.svg)
    assert len(pts) == 3
    assert pytest.approx(pts[1][1] - pts[0][1]) == pts[2][1] - pts[1][1]


def test_labels_are_escaped():
    chart = line_chart({"<script>": [1, 2]}, title="a & b")
    assert "<script>" not in chart.svg and "&lt;script&gt;" in chart.svg and "a &amp; b" in chart.svg


def test_heatmap_colours_by_sign_and_states_the_range():
    chart = heatmap(np.array([[-1.0, 0.0], [0.5, 1.0]]), title="J")
    assert "from -1 to 1" in chart.caption and "red < 0 < blue" in chart.caption
    fills = re.findall(r'fill="(rgb\([^)]*\))"', chart.svg)
    assert fills[0] == "rgb(178,24,43)" and fills[3] == "rgb(33,102,172)" and fills[1] == "rgb(255,255,255)"
    with pytest.raises(ValueError, match="2-D"):
        heatmap(np.zeros((2, 2, 2)))


def test_scatter_puts_groups_on_one_scale_and_states_their_spread():
    from autodiff_viz.views.plots import scatter
    chart = scatter({"real": [[0.0, 0.0], [2.0, 2.0]], "generated": [[1.0, 1.0]]}, title="GAN")
    circles = [tuple(map(float, c)) for c in re.findall(r'<circle cx="([^"]*)" cy="([^"]*)"', chart.svg)]
    (r0, r1, g0) = circles
    assert r0[0] < g0[0] < r1[0] and r0[1] > g0[1] > r1[1]           # (1, 1) between (0, 0) and (2, 2); y up
    assert pytest.approx(g0[0] - r0[0]) == r1[0] - g0[0]
    assert "real: 2 points, mean (1, 1), std (1, 1)" in chart.caption and "generated: 1 points" in chart.caption
    with pytest.raises(ValueError, match=r"group 'bad' has shape \(3,\); give points of shape \(n, 2\)"):
        scatter({"bad": [1.0, 2.0, 3.0]})
