"""A weight's ḡ as a heat map (issue 33), read on the SVG text, without a browser.

A learner debugging a CNN asks which filters learn and which inputs of the
Dense head get gradient: ``trace.heatmap(weight)`` and a click on a weight in
the explorer draw ḡ_W in the layout of the weight (a Dense kernel as its
``(inputs, units)`` matrix, a Conv2D kernel as a grid of its ``kh × kw``
filters), with its shape, 2-norm, min and max. Each cell's tooltip carries
its index and value, so the picture is checked against ``tape.gradient``
entry by entry.
"""
import re

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.views.heatmap import MAX_SIDE, heatmap

L = adv.layers
CELL = re.compile(r"<title>\[([\d, ]+)\] = ([^<]+)</title>")


def _cnn(persistent=True):
    """The small CNN of the issue, one step: Conv2D → MaxPooling2D → Flatten → Dense → sparse cross-entropy."""
    rng = np.random.default_rng(0)
    model = adv.Sequential([L.Input((8, 8, 1)), L.Conv2D(4, 3, activation="relu"), L.MaxPooling2D(2), L.Flatten(),
                            L.Dense(10)])
    x = rng.normal(size=(2, 8, 8, 1)).astype("float32")
    loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.GradientTape(persistent=persistent) as tape:
        loss = loss_fn(np.array([1, 3]), model(x))
    return tape, loss, model


def _cells(svg: str) -> dict:
    return {tuple(int(i) for i in idx.split(", ")): float(v) for idx, v in CELL.findall(svg)}


def _header(h) -> str:
    return re.search(r'<text x="\d+" y="14"[^>]*>([^<]+)</text>', h.svg).group(1)


def test_a_conv_kernels_gradient_is_drawn_as_a_grid_of_its_filters_with_every_entry_of_tape_gradient():
    tape, loss, model = _cnn()
    kernel = model.layers[0].kernel
    trace = tape.trace(loss, sources=model.trainable_variables)
    g = tape.gradient(loss, kernel).numpy()
    h = trace.heatmap(kernel)
    assert h.layout == "filters" and h.shape == (3, 3, 1, 4)
    assert "4 filters" in h.caption and "3×3 tile" in h.caption
    assert h.svg.count('class="adv-heatmap-tile"') == 4          # one tile per (input channel, filter)
    cells = _cells(h.svg)
    assert set(cells) == {idx for idx in np.ndindex(g.shape)}
    for idx, v in cells.items():
        assert v == pytest.approx(float(g[idx]), rel=1e-3, abs=1e-6), idx
    head = _header(h)
    assert "(3, 3, 1, 4)" in head
    assert float(head.split("‖·‖ = ")[1].split()[0]) == pytest.approx(np.linalg.norm(g), rel=1e-3)
    assert float(head.split("min ")[1].split()[0]) == pytest.approx(g.min(), rel=1e-3)
    assert float(head.split("max ")[1].split()[0]) == pytest.approx(g.max(), rel=1e-3)


def test_a_dense_kernel_is_its_matrix_and_a_trace_that_kept_only_statistics_says_how_to_keep_it():
    tape, loss, model = _cnn()
    kernel = model.layers[-1].kernel                           # (36, 10): 360 entries, over the default 256
    with pytest.raises(ValueError, match=r"value_limit=360"):
        tape.trace(loss, sources=model.trainable_variables).heatmap(kernel)
    h = tape.trace(loss, sources=model.trainable_variables, value_limit=360).heatmap(kernel)
    g = tape.gradient(loss, kernel).numpy()
    assert h.layout == "matrix" and "rows: axis 0 (36), columns: axis 1 (10)" in h.caption
    cells = _cells(h.svg)
    assert len(cells) == 360
    assert cells[(5, 3)] == pytest.approx(float(g[5, 3]), rel=1e-3, abs=1e-6)
    with pytest.raises(KeyError, match="no node with id or name 'nope'"):
        tape.trace(loss).heatmap("nope")


def test_the_explorer_draws_a_clicked_weights_gradient_once_it_is_computed_and_only_when_asked():
    tape, loss, model = _cnn()
    ex = adv.show(tape, target=loss, sources=model.trainable_variables)
    st = ex.state
    kernel = model.layers[-1].kernel
    nid = st.trace.node_id_of(kernel)
    assert st._heatmaps == {}                                  # nothing drawn until a weight is inspected
    ex.click(st.box_of(nid))
    assert "not computed yet" in ex.inspector.value and "adv-heatmap-svg" not in ex.inspector.value
    ex.go(st.max_step)                                          # the backward pass has run: ḡ_W is known
    ex.click(st.box_of(nid))
    html = ex.inspector.value
    assert "adv-heatmap-svg" in html and f"ḡ of {st.trace.node(nid).title}" in html
    g = tape.gradient(loss, kernel).numpy()
    cells = _cells(html)                                         # in full, from the tape: over the trace's limit
    assert len(cells) == 360
    assert all(v == pytest.approx(float(g[i]), rel=1e-3, abs=1e-6) for i, v in cells.items())
    assert list(st._heatmaps) == [nid]
    ex.click(st.box_of(st.trace.node_id_of(model.layers[0].kernel)))
    assert "4 filters" in ex.inspector.value


def test_a_wide_conv_kernel_is_reshaped_and_a_tall_matrix_is_drawn_in_blocks_that_keep_the_biggest_entry():
    wide = heatmap(np.ones((3, 3, 16, 8)), "ḡ of conv/kernel")     # 128 (channel, filter) tiles: too many
    assert wide.layout == "reshaped"
    assert "(3·3·16, 8) = (144, 8)" in wide.caption and "columns: filters" in wide.caption
    tall = np.zeros((300, 5))
    tall[7, 2] = -5.0
    tall[100, 4] = 2.0
    h = heatmap(tall, "ḡ of dense/kernel")
    rows_per_block = -(-300 // MAX_SIDE)
    assert f"block of {rows_per_block}×1" in h.caption
    assert f"<title>block [{7 // rows_per_block * rows_per_block}…, 2…] = -5</title>" in h.svg
    assert re.search(r'fill="#b2182b"><title>block \[4…, 2…\]', h.svg)    # the largest |ḡ|, full red
    one_d = heatmap(np.array([0.5, -0.25, 0.0]), "ḡ of bias")
    assert one_d.layout == "vector" and 'fill="#ffffff"><title>[2] = 0</title>' in one_d.svg
    with pytest.raises(TypeError, match="complex"):
        heatmap(np.array([1j]), "ḡ")


def test_after_a_non_persistent_tapes_gradient_call_a_big_weight_says_how_to_keep_its_values():
    """A training step calls tape.gradient, which lets go of the tape's values: the heat map says why it is gone."""
    tape, loss, model = _cnn(persistent=False)
    ex = adv.show(tape, target=loss, sources=model.trainable_variables)
    tape.gradient(loss, model.trainable_variables)
    ex.go(ex.state.max_step)
    ex.click(ex.state.box_of(ex.state.trace.node_id_of(model.layers[-1].kernel)))
    assert "persistent=True" in ex.inspector.value and "adv-heatmap-svg" not in ex.inspector.value
    ex.click(ex.state.box_of(ex.state.trace.node_id_of(model.layers[0].kernel)))    # small: the trace kept it
    assert "adv-heatmap-svg" in ex.inspector.value
