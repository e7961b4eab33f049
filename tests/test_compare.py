"""Exercise mode: hand gradients against the tape, in backward order, with the first wrong one named."""
import re

import numpy as np
import pytest

import autodiff_viz as adv


def _mlp():
    rng = np.random.default_rng(0)
    x = adv.constant(rng.normal(size=(4, 3)))
    W1 = adv.Variable(rng.normal(size=(3, 5)), name="W1")
    b1 = adv.Variable(np.zeros(5), name="b1")
    W2 = adv.Variable(rng.normal(size=(5, 2)), name="W2")
    y = rng.normal(size=(4, 2))
    with adv.GradientTape() as tape:
        z1 = x @ W1 + b1
        h1 = adv.tanh(z1)
        out = h1 @ W2
        diff = out - y
        loss = adv.mean(diff ** 2)
    v = {k: t.numpy() for k, t in dict(x=x, W1=W1, b1=b1, W2=W2, z1=z1, h1=h1, out=out, diff=diff).items()}
    d = {"diff": 2 * v["diff"] / v["diff"].size}
    d["out"] = d["diff"]
    d["W2"] = v["h1"].T @ d["out"]
    d["h1"] = d["out"] @ v["W2"].T
    d["z1"] = d["h1"] * (1 - v["h1"] ** 2)
    d["b1"] = d["z1"].sum(axis=0)
    d["W1"] = v["x"].T @ d["z1"]
    return tape, loss, dict(z1=z1, h1=h1, out=out, diff=diff, W1=W1, b1=b1, W2=W2), d


def test_correct_hand_gradients_all_match_by_name():
    tape, loss, t, d = _mlp()
    z1, h1, out, diff = t["z1"], t["h1"], t["out"], t["diff"]   # noqa: F841  (looked up by name)
    W1, b1, W2 = t["W1"], t["b1"], t["W2"]                      # noqa: F841
    cmp = tape.compare(loss, {"diff": d["diff"], "out": d["out"], "W2": d["W2"], "h1": d["h1"], "z1": d["z1"],
                              "b1": d["b1"], "W1": d["W1"]})
    assert cmp.ok and cmp.first_wrong is None
    assert all(r.status in ("exact", "close") for r in cmp)
    assert "All 7 hand gradients match" in str(cmp)


def test_rows_follow_the_backward_pass_and_the_first_wrong_is_named_with_its_factor():
    tape, loss, t, d = _mlp()
    bad_h1 = d["out"] @ t["W2"].numpy()[:, ::-1].T        # a wrong step at h1; z1, W1, b1 inherit it
    bad_z1 = bad_h1 * (1 - t["h1"].numpy() ** 2)
    z1, h1, out, W2 = t["z1"], t["h1"], t["out"], t["W2"]     # noqa: F841  (the rows take these names)
    cmp = tape.compare(loss, {z1: bad_z1, h1: bad_h1, out: d["out"], W2: d["W2"]})
    order = [r.name for r in cmp]
    assert order.index(cmp["W2"].name) < order.index(cmp.first_wrong.name)
    assert cmp.first_wrong.name == "h1"          # not z1, which only inherits the error
    assert cmp.first_wrong.status == "wrong"
    assert any("matmul" in f for f in cmp.first_wrong.factors)
    assert "First wrong along the backward pass: h1" in str(cmp)
    assert "First wrong" in cmp._repr_html_()


def test_a_forgotten_batch_sum_gets_a_shape_hint():
    tape, loss, t, d = _mlp()
    b1 = t["b1"]                                   # noqa: F841
    cmp = tape.compare(loss, {"b1": d["z1"]})     # forgot .sum(axis=0)
    row = cmp["b1"]
    assert row.status == "shape" and row.hand_shape == (4, 5) and row.tape_shape == (5,)
    assert "sum over the batch axis" in row.message


def test_a_missing_keepdims_and_a_constant_factor_are_recognised():
    x = adv.constant([[1.0, 2.0], [3.0, 4.0]])
    with adv.GradientTape() as tape:
        tape.watch(x)
        s = adv.sum(x, axis=1, keepdims=True)
        loss = adv.sum(s ** 2)
    ds = 2 * s.numpy()
    row = tape.compare(loss, {s: ds.ravel()}).rows[0]      # right values, the reduced axis dropped
    assert row.status == "exact" and row.ok and row.hand_shape == (2,) and row.tape_shape == (2, 1)
    assert "shape (2,) vs (2, 1)" in row.message and "keepdims" in row.message
    assert "times 0.5" in tape.compare(loss, {s: ds / 2}).rows[0].message
    assert "opposite sign" in tape.compare(loss, {s: -ds}).rows[0].message


def test_small_rounding_is_close_not_wrong():
    tape, loss, t, d = _mlp()
    row = tape.compare(loss, {t["h1"]: d["h1"] * (1 + 1e-9)}).rows[0]
    assert row.status == "close" and 0 < row.max_rel < 1e-8


def test_unknown_names_list_the_names_on_the_tape_closest_first():
    tape, loss, t, d = _mlp()
    h1, z1 = t["h1"], t["z1"]                     # noqa: F841
    with pytest.raises(KeyError, match=r"no tensor named 'h2'.*\['h1'"):
        tape.compare(loss, {"h2": d["h1"]})


@pytest.mark.parametrize("bad,status,words", [
    (lambda g: np.where(np.arange(g.size).reshape(g.shape) == 3, np.nan, g), "invalid", "non-finite"),
    (lambda g: g.astype(str), "invalid", "dtype"),
    (lambda g: g.tolist()[:-1], "shape", "shape"),
])
def test_bad_hand_gradients_get_a_clear_message_and_the_tape_is_unchanged(bad, status, words):
    tape, loss, t, d = _mlp()
    records = len(tape.nodes)
    row = tape.compare(loss, {t["h1"]: bad(d["h1"])}).rows[0]
    assert row.status == status and words in row.message
    assert len(tape.nodes) == records
    # compare never uses up a non-persistent tape
    np.testing.assert_allclose(tape.gradient(loss, t["W1"]).numpy(), d["W1"], rtol=1e-10)


def test_a_disconnected_intermediate_says_there_is_no_gradient():
    x = adv.constant([1.0, 2.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        unused = adv.exp(x)
        loss = adv.sum(x * 3.0)
    row = tape.compare(loss, {unused: np.zeros(2)}).rows[0]
    assert row.status == "no_gradient" and "explain" in row.message


def test_show_marks_wrong_nodes_red_and_matched_ones_green():
    tape, loss, t, d = _mlp()
    out, h1 = t["out"], t["h1"]                   # noqa: F841
    cmp = tape.compare(loss, {out: d["out"], h1: d["h1"] * 3})
    svg = cmp.to_svg()
    h1_node, out_node = cmp["h1"].node, cmp["out"].node
    # The style fills the boxes the SVG really has (the backward view names them bwd_n3 ...): green for the
    # matched row, red for the wrong one; a rule aimed at an id the SVG lacks would colour nothing.
    for node, colour in ((out_node, "#c9f2c9"), (h1_node, "#f6b8b8")):
        assert f'<g id="bwd_{node}" class="node' in svg
        assert f'g[id="bwd_{node}"] polygon, svg g[id="bwd_{node}"] ellipse, svg g[id="bwd_{node}"] path ' \
               f'{{fill: {colour}' in svg
    styled = set(re.findall(r'g\[id="([^"]+)"\]', svg))
    assert styled <= set(re.findall(r'<g id="([^"]+)" class="node', svg))
    marked = cmp.marked_trace()
    assert marked.marks_of(h1_node) and not marked.marks_of(out_node)
    assert "First wrong" in cmp.show()._repr_html_()


def test_adv_compare_names_the_locals_of_the_function():
    def f(x):
        h = adv.tanh(x)
        return adv.sum(h * h)
    x = np.array([0.5, -1.0])
    good = adv.compare(f, [adv.constant(x)], {"h": 2 * np.tanh(x), "x": 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)})
    assert good.ok and [r.name for r in good] == ["h", "x"]
    bad = adv.compare(f, [adv.constant(x)], {"h": np.tanh(x)})
    assert not bad.ok and "times 0.5" in bad.first_wrong.message


def test_a_close_row_against_a_gradient_of_about_zero_shows_no_huge_relative_difference():
    """A hand gradient of 1e-12 where the tape's is 0 or rounding (~1e-16) is close; the ratio of two
    roundings (once 6e+298, divided by the tiniest float) is not shown as a relative difference."""
    x = adv.constant([1.0, 2.0, 4.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        loss = adv.sum(x - adv.mean(x))            # d loss / dx = 1 - 1 = 0 analytically
    row = tape.compare(loss, {x: np.full(3, 1e-12)}).rows[0]
    assert row.status == "close" and row.max_rel == 0.0 and row.max_abs <= 1e-11
    big = tape.compare(loss, {x: np.array([1e-12, 0.0, 5.0])}).rows[0]
    assert big.status == "wrong" and big.max_rel == pytest.approx(1.0)


def _affine_tanh(x, w, b):
    z = x @ w + b
    return adv.tanh(z)


def test_a_folded_function_never_hides_the_intermediates_the_learner_compared():
    """A call of the learner's own function is drawn as one folded box by default; the comparison's graph
    opens every box that holds a compared row, so w, b and h each get their colour."""
    x = adv.constant(np.ones((2, 3)))
    w = adv.Variable(np.full((3, 2), 0.1), name="w")
    b = adv.Variable(np.zeros(2), name="b")
    with adv.GradientTape(persistent=True) as tape:
        h = _affine_tanh(x, w, b)
        loss = adv.sum(h * h)
    hv = h.numpy()
    dz = 2 * hv * (1 - hv ** 2)
    cmp = tape.compare(loss, {w: x.numpy().T @ dz, b: dz.sum(axis=0), h: 2 * hv})
    assert cmp.ok
    drawn = set(re.findall(r'<g id="bwd_([^"]+)" class="node', cmp.to_svg()))
    assert {r.node for r in cmp.rows} <= drawn
