"""Graphs of thousands of nodes: every output is produced, nothing is quadratic, nothing recurses.

Speed is measured in benchmarks/s1_graph_scale.py; here the behaviour is
asserted: a 5,000-node trace goes through JSON, DOT, Graphviz and the
built-in renderer; DOT lines stay below Graphviz's 16,384-character limit;
``collapse="layers"`` folds deeper when a model has more layers than the
budget and says so; the why-None diagnosis of many sources walks the record
a fixed number of times and diagnoses only the sources without a gradient.
"""
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.diagnosis import walk as diagnosis
from autodiff_viz.views import dot, minidot

GRAPHVIZ_LINE_LIMIT = 16384


def chain(ops: int):
    """``h = sin(h) * 0.9`` repeated: 3 trace nodes per step (sin, the constant, multiply)."""
    x = adv.Variable(np.linspace(-1.0, 1.0, 4), name="x")
    with adv.GradientTape(persistent=True) as tape:
        h = x
        for _ in range(ops // 3):
            h = adv.sin(h) * 0.9
        loss = adv.sum(h)
    return tape, loss, x


@pytest.fixture(scope="module")
def big():
    tape, loss, x = chain(5000)
    return tape, loss, x, tape.trace(loss)


def test_a_5000_node_trace_goes_through_json_dot_graphviz_and_the_builtin_renderer(big):
    tape, loss, x, tr = big
    assert len(tr.nodes) >= 5000
    back = adv.Trace.from_json(tr.to_json())
    assert len(back.nodes) == len(tr.nodes) and back.steps == tr.steps
    for view in ("forward", "backward", "both"):
        text = tr.to_dot(view)
        assert max(len(line) for line in text.splitlines()) < GRAPHVIZ_LINE_LIMIT
        assert "budget=None" in text                      # the picture says it is folded
        svg = minidot.svg(text)
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg") and len(list(root.iter("{http://www.w3.org/2000/svg}g"))) > 20
    full = tr.to_dot("forward", collapse=None, budget=None)          # every node, no folding
    assert len(re.findall(r'^  "fwd_n\d+" \[', full, flags=re.M)) == len(tr.nodes)
    assert ET.fromstring(minidot.svg(full)) is not None
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed: the built-in renderer was checked above")
    run = subprocess.run(["dot", "-Tsvg"], input=tr.to_dot("both").encode(), capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[:500]
    assert b"<svg" in run.stdout


def test_a_folded_box_with_thousands_of_steps_carries_one_class_not_a_list(big):
    tr = big[3]
    lay = dot.layout(tr)
    fold = lay.boxes["fold"]
    assert len(fold.members) > 4000
    line = next(x for x in tr.to_dot("backward").splitlines() if x.startswith('  "bwd_fold" ['))
    assert 'class="step_many"' in line and "step_n" not in line
    # the front end maps a step to its box through Layout.owner
    assert all(lay.owner[s] in lay.boxes for s in tr.steps)


def test_edges_into_and_from_are_the_linear_scan_answers(big):
    tr = big[3]
    for nid in ("n0", "n1", tr.steps[len(tr.steps) // 2], tr.target):
        assert tr.edges_into(nid) == [e for e in tr.edges if e.dst == nid]
        assert tr.edges_from(nid) == [e for e in tr.edges if e.src == nid]


def deep_model(blocks: int):
    """``blocks`` scopes of two Dense-like layers each: 2·blocks layers, more than the budget."""
    rng = np.random.default_rng(0)
    x = adv.constant(rng.normal(size=(2, 3)), name="x")
    weights = [adv.Variable(rng.normal(size=(3, 3)) * 0.3, name=f"W{k}") for k in range(2 * blocks)]
    with adv.GradientTape() as tape:
        h = x
        for b in range(blocks):
            with adv.name_scope(f"block_{b}"):
                for k in (0, 1):
                    with adv.name_scope(f"dense_{k}"):
                        h = adv.tanh(h @ weights[2 * b + k])
        loss = adv.sum(h * h)
    return tape.trace(loss)


def test_collapse_layers_respects_the_budget_by_folding_layers_into_blocks():
    tr = deep_model(40)                                  # 80 layers, 40 blocks
    assert len(dot.layout(tr, "layers", budget=None).boxes) > dot.NODE_BUDGET
    lay = dot.layout(tr, "layers")
    assert len(lay.boxes) <= dot.NODE_BUDGET
    titles = {b.title for b in lay.boxes.values() if b.kind in ("group", "repeat")}
    assert any(t.startswith("block_0") for t in titles) and "dense_0" not in titles   # blocks, not layers
    text = tr.to_dot("forward", collapse="layers")
    assert "the model is folded to its outermost blocks" in text           # the note says what was folded
    assert len(dot.layout(deep_model(100), "layers").boxes) <= dot.NODE_BUDGET   # then the middle folds


def graph_with_sources(steps: int):
    connected = adv.Variable(np.ones(3), name="w")
    unwatched = adv.constant(np.ones(3), name="c")
    unused = adv.Variable(np.ones(3), name="unused")
    with adv.GradientTape(persistent=True) as tape:
        h = connected * unwatched
        for _ in range(steps):
            h = adv.tanh(h) * 1.01
        loss = adv.sum(h)
        adv.sum(unused * 2.0)
    return tape, loss, [connected, unwatched, unused]


class CountingList(list):
    """The tape's record, counting how often something walks all of it."""

    def __init__(self, items):
        super().__init__(items)
        self.walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()

    def __reversed__(self):
        self.walks += 1
        return super().__reversed__()


@pytest.mark.parametrize("steps", [200, 800])
def test_explain_many_diagnoses_only_the_sources_without_a_gradient_in_a_fixed_number_of_walks(steps, monkeypatch):
    tape, loss, sources = graph_with_sources(steps)
    assert len(tape.trace(loss).nodes) > 500
    diagnosed = []
    real = diagnosis._explain_one
    monkeypatch.setattr(diagnosis, "_explain_one", lambda t, target, s: diagnosed.append(s) or real(t, target, s))
    tape._nodes = CountingList(tape._nodes)
    answers = diagnosis.explain_many(tape, loss, sources)
    assert [a.reason for a in answers] == ["connected", "not_watched", "not_used"]
    assert [s.name for s in diagnosed] == ["c", "unused"]           # never the connected source
    # walks over the record: a few per diagnosed source and two for all of them, whatever the size
    assert tape._nodes.walks <= 2 + 3 * len(diagnosed)
    assert answers[0].nodes == (sources[0]._id, loss._id)
    with_paths = diagnosis.explain_many(tape, loss, sources, paths=True)
    assert len(with_paths[0].nodes) == 1 + 1 + 2 * steps + 1         # w, c·w, every tanh and ·1.01, the sum
    single = diagnosis.explain(tape, loss, sources[0])      # ḡ shrinks ≥ 10⁴× over the tanh steps (issue 44)
    assert (single.reason, single.kind) == ("vanishing_gradient", "vanishing_depth")
    assert set(single.nodes) <= set(with_paths[0].nodes)


def test_nothing_recurses_on_a_deep_chain(big):
    tape, loss, x, tr = big
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(200, len(__import__("inspect").stack()) + 120))
    try:
        t2 = tape.trace(loss)
        adv.Trace.from_json(t2.to_json())
        minidot.svg(t2.to_dot("both"))
        minidot.svg(t2.to_dot("forward", collapse=None, budget=None))
        diagnosis.explain_many(tape, loss, [x])
        tape.explain(loss, x)
        t2.table(step=len(t2.steps) // 2).to_text()
    finally:
        sys.setrecursionlimit(old)
