"""Rule-table section: attention, shown as one factor on the graph.

Rules here follow the conventions of :mod:`autodiff_viz.rules` (cotangents
with leading batch axes, VJPs written with rule calls).
"""
from __future__ import annotations
