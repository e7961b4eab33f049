"""DOT views: golden files, escaping, collapsing, folding big graphs.

Golden files live in tests/golden/. After an intended change of the drawing,
regenerate them with ``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_dot.py``
and review the diff.
"""
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import dot, render

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


@pytest.fixture
def no_locations():
    """Golden drawings must not depend on file paths and line numbers."""
    old = adv.config.capture_locations
    adv.config.capture_locations = False
    yield
    adv.config.capture_locations = old


def tanh_square():
    w = adv.Variable([0.5, -1.0], name="w")
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.tanh(w) ** 2)
    return tape.trace(loss)


def fan_out():
    x = adv.Variable(0.7, name="x")
    with adv.GradientTape() as tape:
        a = adv.sin(x)
        y = a * x + adv.exp(a)
    return tape.trace(y)


def dense_layer():
    x = adv.constant([[1.0, 2.0]], name="x")
    W = adv.Variable([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], name="W")
    b = adv.Variable([0.0, 0.1, -0.1], name="b")
    with adv.GradientTape() as tape:
        with adv.name_scope("dense"):
            h = adv.nn.relu(x @ W + b)
        loss = adv.sum(h) + adv.argmax(h).astype("float64")
    return tape.trace(loss)


CASES = {"tanh_square": tanh_square, "fan_out": fan_out, "dense_layer": dense_layer}


@pytest.mark.parametrize("view", ["forward", "backward", "both"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case, view, no_locations):
    text = CASES[case]().to_dot(view)
    path = os.path.join(GOLDEN, f"{case}.{view}.dot")
    if UPDATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    with open(path, encoding="utf-8") as f:
        assert text == f.read(), f"{path} differs; if intended, regenerate with UPDATE_GOLDEN=1"


def test_same_program_same_dot_text():
    assert tanh_square().to_dot("both") == tanh_square().to_dot("both")


def test_backward_view_has_factors_contributions_and_accumulation():
    tr = fan_out()
    text = tr.to_dot("backward")
    assert "∂y/∂x = cos x" in text and "∂y/∂a = b" in text
    assert '"bwd_acc_n0"' in text and '"bwd_acc_n1"' in text    # x and a both fan out
    # each contribution arrives at the Σ node, the Σ node feeds the tensor
    assert len(re.findall(r'-> "bwd_acc_n0"', text)) == 2
    assert '"bwd_acc_n0" -> "bwd_n0"' in text
    assert "ḡ = 1 (seed)" in text


def test_both_view_shows_both_panels_with_linked_ids():
    text = tanh_square().to_dot("both")
    assert "subgraph cluster_forward" in text and "subgraph cluster_backward" in text
    for nid in ("n0", "n1", "n3", "n4"):
        assert f'"fwd_{nid}"' in text and f'"bwd_{nid}"' in text
        assert f"label=\"{nid} · " in text


def _svg_texts(svg):
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    return root, ["".join(t.itertext()) for t in root.iter(ns + "text")]


def test_labels_are_escaped_in_dot_and_svg():
    evil = '<script>alert("x")</script> & &lt; \\N'
    x = adv.Variable([1.0, 2.0], name=evil)
    with adv.GradientTape() as tape:
        y = adv.sum(x * x)
    tr = tape.trace(y).with_marks([("n0", '"quoted" <b>reason</b>')])
    for view in dot.VIEWS:
        svg = render.svg(tr.to_dot(view))
        root, texts = _svg_texts(svg)
        assert not list(root.iter("{http://www.w3.org/2000/svg}script"))
        assert "<script>" not in svg
        assert f"n0 · {evil}" in texts
        assert '⚠ "quoted" <b>reason</b>' in texts


def test_marks_and_highlight_are_drawn():
    tr = tanh_square()
    text = tr.with_marks([("n1", "saturates"), ("e0", "tiny factor")]).to_dot("backward", highlight=["n4"])
    node = next(line for line in text.splitlines() if line.startswith('  "bwd_n1" ['))
    assert 'color="#d62728"' in node and "⚠ saturates" in node
    edge = next(line for line in text.splitlines() if 'id="bwd_e0"' in line)
    assert 'color="#d62728"' in edge and "⚠ tiny factor" in edge
    target = next(line for line in text.splitlines() if line.startswith('  "bwd_n4" ['))
    assert 'penwidth="3"' in target and 'color="#1f77b4"' in target


def _edges(text, prefix="fwd_"):
    return sorted(re.findall(rf'"{prefix}(\w+)" -> "{prefix}(\w+)"', text))


def two_layers():
    x = adv.constant(np.ones((2, 3)), name="x")
    W1 = adv.Variable(np.full((3, 4), 0.1), name="W1")
    W2 = adv.Variable(np.full((4, 1), 0.2), name="W2")
    with adv.GradientTape() as tape:
        with adv.name_scope("model"):
            with adv.name_scope("dense_1"):
                h = adv.tanh(x @ W1)
            with adv.name_scope("dense_2"):
                out = h @ W2
        loss = adv.mean(out * out)
    return tape.trace(loss)


def test_collapse_layers_keeps_edges_between_layers():
    tr = two_layers()
    # n0 x, n1 W1, n2 matmul, n3 tanh | n4 W2, n5 matmul | n6 multiply, n7 mean
    assert _edges(tr.to_dot("forward")) == sorted([
        ("n0", "n2"), ("n1", "n2"), ("n2", "n3"), ("n3", "n5"), ("n4", "n5"), ("n5", "n6"), ("n5", "n6"),
        ("n6", "n7")])
    text = tr.to_dot("forward", collapse="layers")
    assert _edges(text) == [("g0", "g1"), ("g1", "n6"), ("n6", "n7")]
    assert "model/dense_1" in text and "model/dense_2" in text
    crossing = next(line for line in text.splitlines() if '"fwd_g0" -> "fwd_g1"' in line)
    assert "n3 (2, 4)" in crossing                       # the tensor that crosses: tanh's output
    squared = next(line for line in text.splitlines() if '"fwd_g1" -> "fwd_n6"' in line)
    assert "n5 (2, 1)" in squared and "2 edges" in squared   # out * out: one tensor used twice
    assert _edges(tr.to_dot("backward", collapse="layers"), "bwd_") == [("g1", "g0"), ("n6", "g1"), ("n7", "n6")]


def test_collapse_by_depth():
    tr = two_layers()
    one = tr.to_dot("forward", collapse=1)
    assert _edges(one) == [("g0", "n6"), ("n6", "n7")]
    assert "3 ops (n0 … n5)" in one
    assert tr.to_dot("forward", collapse=2) == tr.to_dot("forward", collapse="layers")


@pytest.mark.parametrize("kwargs, match", [
    ({"view": "sideways"}, "view must be one of"), ({"collapse": "scopes"}, "collapse must be"),
    ({"collapse": 0}, "collapse must be")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tanh_square().to_dot(**kwargs)


def rnn(steps, scoped=False):
    rng = np.random.default_rng(0)
    xs = adv.constant(rng.normal(size=(steps, 1, 3)), name="xs")
    W = adv.Variable(rng.normal(size=(3, 4)) * 0.3, name="W")
    U = adv.Variable(rng.normal(size=(4, 4)) * 0.3, name="U")
    h = adv.constant(np.zeros((1, 4)), name="h0")
    with adv.GradientTape() as tape:
        for t in range(steps):
            if scoped:
                with adv.name_scope(f"step_{t}"):
                    h = adv.tanh(xs[t] @ W + h @ U)
            else:
                h = adv.tanh(xs[t] @ W + h @ U)
        loss = adv.sum(h * h)
    return tape.trace(loss)


def _box_count(text):
    """Drawn boxes, not counting the small copies of a shared weight beside each use."""
    return len([m for m in re.findall(r'^  "([a-z]+_\w+)" \[', text, flags=re.M) if "_at_" not in m])


@pytest.mark.parametrize("scoped", [False, True])
def test_rnn_over_200_steps_folds_to_a_readable_drawing(scoped):
    tr = rnn(200, scoped)
    assert len(tr.nodes) > 1000
    for view in ("forward", "backward"):
        text = tr.to_dot(view)
        assert _box_count(text) <= dot.NODE_BUDGET + 10        # boxes plus a few Σ nodes
        assert "folded into one box" in text and "budget=None" in text
        if scoped:
            assert "collapse='layers'" in text
        svg = render.svg(text)
        root, texts = _svg_texts(svg)
        assert any("folded middle of the tape" in t for t in texts)
        width = float(root.get("width").rstrip("pt"))
        height = float(root.get("height").rstrip("pt"))
        assert width < 4000 and height < 8000                # a page you can scroll, not a smear
    assert _box_count(tr.to_dot("forward", budget=None)) == len(tr.nodes)


def test_small_graph_is_never_folded():
    text = rnn(3).to_dot("forward")
    assert "folded" not in text.split("subgraph cluster_legend")[0]
