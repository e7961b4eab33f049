"""Exercise mode on a real framework's recording: ``rec.compare`` is one surface in ``adv.tf`` and ``adv.torch``.

Both bridges take ``output_gradients=dout`` (the upstream gradient of a
non-scalar target, as CS231n's ``*_backward(dout, cache)`` functions do) and,
where the framework gives no gradient for a compared tensor, the row says
why in the bridge's own words (``rec.explain``: the reason, the learner's
line, the fix) rather than "the target does not depend on it".
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")

import code_lines  # noqa: E402

import autodiff_viz as adv  # noqa: E402

HERE = __file__


def test_tf_row_for_a_tensor_made_from_an_unwatched_constant_says_not_watched_with_line_and_fix():
    """The TensorFlow guide's "controlling what the tape watches": a ``tf.constant`` is not watched, so the
    tape records nothing computed from it alone (https://www.tensorflow.org/guide/autodiff#controlling_what_the_tape_watches).

    Reduced: features ``x2 = x ** 2`` of a constant ``x`` feed a weighted sum; the learner's hand gradient of
    ``x2`` is right (``w``), but ``tape.gradient(y, x2)`` is None. The row must say why — the tape never watched
    it, at the line that used it, and ``tape.watch`` as the fix — not that ``y`` does not depend on ``x2``
    (it does).
    """
    x = tf.constant([1.0, 2.0], dtype=tf.float64)
    w = tf.Variable([0.5, -1.0], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            x2 = x ** 2
            y = tf.reduce_sum(w * x2)                       # <- uses x2
        dw, dx2 = tape.gradient(y, [w, x2])
    assert dx2 is None and np.array_equal(dw.numpy(), [1.0, 4.0])     # what TensorFlow says
    cmp = rec.compare(y, {"w": x2.numpy(), "x2": w.numpy()})
    rows = {r.name: r for r in cmp.rows}
    assert rows["w"].status == "exact"
    row = rows["x2"]
    assert row.status == "no_gradient" and row.tape_shape == (2,)
    assert "TensorFlow has no gradient" in row.message and "not_watched" in row.message
    assert os.path.basename(code_lines.line_of(HERE, "uses x2")) + ":" in row.message    # the learner's line
    assert "tape.watch(x2)" in row.message
    assert "does not depend" not in row.message
    assert row.message.endswith(rec.explain(y, x2).message)       # the same words as rec.explain


def test_tf_compare_seeds_a_non_scalar_target_with_output_gradients_as_the_tape_does():
    """CS231n's affine layer backward: ``out = x @ w + b`` and, given the upstream ``dout``,
    ``dx = dout @ w.T``, ``dw = x.T @ dout``, ``db = dout.sum(axis=0)``
    (https://cs231n.github.io/assignments2024/assignment2/, ``layers.py``: ``affine_backward``).

    The reference is TensorFlow's own ``tape.gradient(out, [x, w, b], output_gradients=dout)``; a learner who
    forgets to sum ``db`` over the batch gets a shape row, one who drops ``dout`` from ``dw`` a wrong row.
    """
    rng = np.random.default_rng(0)
    x_np, w_np, b_np = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(2,))
    dout = rng.normal(size=(4, 2))
    x = tf.constant(x_np)
    w, b = tf.Variable(w_np), tf.Variable(b_np)
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            out = x @ w + b
        ref = tape.gradient(out, [x, w, b], output_gradients=tf.constant(dout))
    dx, dw, db = dout @ w_np.T, x_np.T @ dout, dout.sum(axis=0)
    for mine, theirs in zip((dx, dw, db), ref):
        np.testing.assert_allclose(mine, theirs.numpy())           # the hand formulas are right
    good = rec.compare(out, {"x": dx, "w": dw, "b": db}, output_gradients=dout)
    assert good.ok, good.rows
    good_tf_seed = rec.compare(out, {"b": db}, output_gradients=tf.constant(dout))     # a tf seed too
    assert good_tf_seed.ok
    bad = rec.compare(out, {"w": x_np.T @ np.ones_like(dout), "b": dout}, output_gradients=dout)
    rows = {r.name: r for r in bad.rows}
    assert rows["w"].status == "wrong" and rows["b"].status == "shape"
    with pytest.raises(ValueError, match=r"output_gradients has shape \(2,\).*target has shape \(4, 2\)"):
        rec.compare(out, {"w": dw}, output_gradients=np.ones(2))


def test_both_bridges_share_len_repr_and_the_hand_dict_check():
    """One ``Recording`` surface: ``len`` counts the records, ``repr`` names the bridge and the kinds, and a
    ``compare`` without a dict of hand gradients is refused the same way in both."""
    v = tf.Variable([1.0, 2.0])
    with adv.tf.record() as trec:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v * v)
        tape.gradient(y, v)
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    with adv.torch.record() as prec:
        loss = (p * p).sum()
        loss.backward()
    for rec, target, name in ((trec, y, "tf"), (prec, loss, "torch")):
        assert len(rec) == len(rec.ops) > 0
        assert repr(rec).startswith(f"<adv.{name}.Recording {len(rec.ops)} records {{")
        with pytest.raises(TypeError, match="pass a dict"):
            rec.compare(target, [np.ones(2)])


def test_torch_row_for_a_parameter_pytorch_gives_no_gradient_says_why():
    """The PyTorch side of the same promise: a loss computed under ``torch.no_grad()`` depends on ``w``, yet
    autograd has nothing for it; the row carries the bridge's reason rather than "does not depend"."""
    w = torch.tensor([1.0, -1.0], requires_grad=True)
    h = torch.tensor([0.5, 2.0])
    with adv.torch.record() as rec:
        with torch.no_grad():
            loss = (w * h).sum()
    (row,) = rec.compare(loss, {"w": h.numpy()}).rows
    assert row.status == "no_gradient" and "PyTorch has no gradient" in row.message
    assert "does not depend" not in row.message and "no_grad" in row.message
