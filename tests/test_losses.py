"""Losses: Keras values and reductions, stable from logits, clipped from probabilities."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import losses


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_bce_from_logits_gradient_is_sigmoid_minus_label():
    rng = np.random.default_rng(0)
    z_np, y = rng.normal(size=(8, 3)) * 4, rng.integers(0, 2, size=(8, 3)).astype(float)
    z = adv.Variable(z_np)
    with adv.GradientTape() as tape:
        loss = adv.sum(losses.binary_crossentropy(y, z, from_logits=True)) * 3   # undo the mean over 3 outputs
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), sigmoid(z_np) - y, rtol=1e-12, atol=1e-15)


def test_bce_from_logits_is_finite_for_huge_logits():
    z = adv.Variable([[1000.0], [-1000.0], [1000.0], [-1000.0]])
    y = np.array([[1.0], [0.0], [0.0], [1.0]])
    with adv.GradientTape() as tape:
        per_sample = losses.binary_crossentropy(y, z, from_logits=True)
    np.testing.assert_allclose(per_sample.numpy(), [0.0, 0.0, 1000.0, 1000.0])
    np.testing.assert_allclose(tape.gradient(per_sample, z).numpy(), [[0.0], [0.0], [1.0], [-1.0]])


def test_bce_from_probabilities_clips_like_keras():
    y = np.array([[1.0, 0.0, 1.0]])
    p = np.array([[0.0, 1.0, 0.7]])
    eps = 1e-7
    pc = np.clip(p, eps, 1 - eps)
    expected = -np.mean(y * np.log(pc) + (1 - y) * np.log(1 - pc), axis=-1)
    got = losses.binary_crossentropy(y, p)
    assert np.all(np.isfinite(got.numpy()))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_categorical_crossentropy_from_logits_and_its_gradient():
    rng = np.random.default_rng(1)
    z_np = rng.normal(size=(4, 5)) * 50
    y = np.eye(5)[[0, 3, 4, 1]]
    z = adv.Variable(z_np)
    with adv.GradientTape() as tape:
        loss = losses.CategoricalCrossentropy(from_logits=True)(y, z)
    shifted = z_np - z_np.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    np.testing.assert_allclose(loss.numpy(), -(y * log_p).sum(-1).mean(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), (np.exp(log_p) - y) / 4, rtol=1e-9, atol=1e-15)


def test_categorical_crossentropy_from_probabilities_normalises_and_clips():
    y = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    p = np.array([[0.2, 0.6, 0.2], [0.0, 2.0, 2.0]])       # second row: unnormalised and a zero
    q = np.clip(p / p.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
    np.testing.assert_allclose(losses.categorical_crossentropy(y, p).numpy(), -(y * np.log(q)).sum(-1))


@pytest.mark.parametrize("from_logits", [True, False])
def test_sparse_equals_categorical_with_one_hot_labels(from_logits):
    rng = np.random.default_rng(2)
    scores = rng.random(size=(6, 4)) + 0.1
    labels = np.array([0, 3, 2, 1, 1, 0])
    dense = losses.categorical_crossentropy(np.eye(4)[labels], scores, from_logits=from_logits)
    for y in (labels, labels[:, None], labels.astype(float)):
        sparse = losses.sparse_categorical_crossentropy(y, scores, from_logits=from_logits)
        np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype, offset", [("float64", 0.0), ("float32", 0.0), ("float32", 3000.0),
                                           ("float64", 1e9)])
def test_sparse_crossentropy_gradient_is_softmax_minus_one_hot_at_any_logit_size(dtype, offset):
    """The VJP reads logsumexp off the saved loss; large logits close together must not cost precision
    (float32 at 3000: an error of one ulp of the logits in the normaliser is ~2e-4 in every probability)."""
    rng = np.random.default_rng(5)
    z = adv.Variable((rng.normal(size=(6, 5)) * 2.0 + offset).astype(dtype))
    labels, weights = np.array([0, 3, 1, 2, 2, 4]), np.arange(1.0, 7.0)
    with adv.GradientTape() as tape:
        loss = adv.sum(losses.sparse_categorical_crossentropy(labels, z, from_logits=True) * weights)
    g = tape.gradient(loss, z).numpy()
    zz = z.numpy().astype(np.float64)
    expected = np.exp(zz - zz.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    expected[np.arange(6), labels] -= 1
    assert g.dtype == np.dtype(dtype)
    np.testing.assert_allclose(g, expected * weights[:, None], atol=2e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("shape, order", [((6, 5), "F"), ((3, 2, 5), "C"), ((3, 2, 5), "F")])
def test_sparse_crossentropy_reads_the_labelled_logit_of_each_row_in_any_layout(shape, order):
    """The labelled entries are read and updated through flat positions: rows of a sequence batch and a
    Fortran-ordered logits array must pick the same entries as one-hot labels do."""
    rng = np.random.default_rng(8)
    z = adv.Variable(np.asarray(rng.normal(size=shape), order=order))
    labels = rng.integers(0, shape[-1], shape[:-1])
    weights = np.arange(1.0, labels.size + 1).reshape(labels.shape)
    with adv.GradientTape(persistent=True) as tape:
        sparse = losses.sparse_categorical_crossentropy(labels, z, from_logits=True)
        dense = losses.categorical_crossentropy(np.eye(shape[-1])[labels], z, from_logits=True)
        weighted = [adv.sum(loss * weights) for loss in (sparse, dense)]
    np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(weighted[0], z).numpy(), tape.gradient(weighted[1], z).numpy(),
                               rtol=1e-12, atol=1e-15)


def test_sparse_crossentropy_gradient_with_infinite_logits_matches_the_softmax():
    """A row with −inf at its label has an infinite loss; its gradient is still softmax(z) − onehot."""
    z = adv.Variable(np.array([[0.0, -np.inf, 1.0], [1.0, 2.0, 3.0], [0.0, 1.0, -np.inf]]))
    with adv.GradientTape() as tape:
        loss = adv.sum(losses.sparse_categorical_crossentropy([1, 2, 0], z, from_logits=True))
    e = np.exp(np.array([[0.0, 0.0, 1.0], [1.0, 2.0, 3.0], [0.0, 1.0, 0.0]]) - [[1.0], [3.0], [1.0]])
    e *= [[1, 0, 1], [1, 1, 1], [1, 1, 0]]
    expected = e / e.sum(1, keepdims=True)
    expected[[0, 1, 2], [1, 2, 0]] -= 1
    assert loss.numpy() == np.inf
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("loss, labels", [
    (losses.sparse_categorical_crossentropy, np.array([2, 0, 1])),
    (losses.categorical_crossentropy, np.eye(4)[[2, 0, 1]]),
])
def test_crossentropy_from_logits_is_one_op_whose_factor_is_p_minus_y(loss, labels):
    """The backward graph shows softmax(z) − y on one edge (the result a course derives), not four ops."""
    rng = np.random.default_rng(7)
    z = adv.Variable(rng.normal(size=(3, 4)))
    with adv.GradientTape() as tape:
        per_sample = loss(labels, z, from_logits=True)
    assert [n.rule.name for n in tape.nodes] == [
        "sparse_softmax_cross_entropy" if labels.ndim == 1 else "softmax_cross_entropy"]
    assert "softmax(z)" in tape.nodes[0].rule.spec(1).factor
    p = np.exp(z.numpy()) / np.exp(z.numpy()).sum(-1, keepdims=True)
    one_hot = np.eye(4)[[2, 0, 1]]
    np.testing.assert_allclose(per_sample.numpy(), -np.log(p[[0, 1, 2], [2, 0, 1]]), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(per_sample, z).numpy(), p - one_hot, rtol=1e-12, atol=1e-15)


def test_the_fused_crossentropy_has_the_softmax_hessian():
    """Its VJP is written with rules, so a second tape differentiates it: ∂²/∂z² = diag(p) − ppᵀ per row."""
    z = adv.Variable([[0.3, -1.2, 2.0]])
    with adv.GradientTape() as outer:
        with adv.GradientTape() as inner:
            loss = adv.nn.sparse_softmax_cross_entropy_with_logits([1], z)
        g = inner.gradient(loss, z)
    hessian = outer.jacobian(g, z).numpy().reshape(3, 3)
    p = np.exp(z.numpy()[0]) / np.exp(z.numpy()[0]).sum()
    np.testing.assert_allclose(hessian, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-14)


def test_tf_named_crossentropies_refuse_mismatched_labels_with_the_fix():
    z = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"sparse_softmax_cross_entropy_with_logits: labels must lie in \[0, 2\]"):
        adv.nn.sparse_softmax_cross_entropy_with_logits([0, 5], z)
    with pytest.raises(ValueError, match="sparse_softmax_cross_entropy_with_logits: labels of shape"):
        adv.nn.sparse_softmax_cross_entropy_with_logits([[0, 1, 0], [1, 0, 0]], z)
    with pytest.raises(ValueError, match="use sparse_softmax_cross_entropy_with_logits"):
        adv.nn.softmax_cross_entropy_with_logits([0, 1], z)
    soft = adv.nn.softmax_cross_entropy_with_logits([[0.5, 0.5, 0.0], [0, 0, 1]], z)
    np.testing.assert_allclose(soft.numpy(), [np.log(3), np.log(3)], rtol=1e-12)


def test_sparse_labels_out_of_range_are_a_clear_error():
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\]"):
        losses.sparse_categorical_crossentropy([0, 3], np.zeros((2, 3)), from_logits=True)
    with pytest.raises(ValueError, match="categorical_crossentropy"):
        losses.sparse_categorical_crossentropy(np.eye(3)[[0, 1]], np.zeros((2, 3)))


def test_one_hot_vs_index_confusion_points_to_the_right_loss():
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        losses.categorical_crossentropy(np.array([0, 2]), np.zeros((2, 3)))


def test_mse_per_sample_and_rank_alignment():
    y_pred = adv.constant([[1.0], [3.0]])
    np.testing.assert_allclose(losses.mean_squared_error(np.array([0.0, 1.0]), y_pred).numpy(), [1.0, 4.0])
    two = losses.mean_squared_error(np.zeros((2, 2)), np.array([[1.0, 3.0], [2.0, 2.0]]))
    np.testing.assert_allclose(two.numpy(), [5.0, 4.0])
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        losses.mean_squared_error(np.zeros((2, 3)), np.zeros((2, 2)))


def test_reductions_and_sample_weights_follow_keras():
    y_true, y_pred = np.zeros((4, 1)), np.array([[1.0], [2.0], [3.0], [4.0]])   # per-sample 1, 4, 9, 16
    w = np.array([1.0, 0.0, 1.0, 0.0])
    assert losses.MeanSquaredError()(y_true, y_pred).item() == pytest.approx(7.5)
    assert losses.MeanSquaredError(reduction="sum")(y_true, y_pred).item() == pytest.approx(30.0)
    np.testing.assert_allclose(losses.MeanSquaredError(reduction=None)(y_true, y_pred).numpy(), [1, 4, 9, 16])
    assert losses.MeanSquaredError()(y_true, y_pred, sample_weight=w).item() == pytest.approx(10.0 / 4)
    # Keras 3: "mean" divides by the number of entries, "mean_with_sample_weight" by the sum of the weights
    assert losses.MeanSquaredError(reduction="mean")(y_true, y_pred, sample_weight=w).item() == pytest.approx(2.5)
    assert losses.MeanSquaredError(reduction="mean_with_sample_weight")(
        y_true, y_pred, sample_weight=w).item() == pytest.approx(5.0)
    with pytest.raises(ValueError, match="Unknown reduction"):
        losses.MeanSquaredError(reduction="avg")


def test_losses_by_name():
    assert isinstance(losses.get("mse"), losses.MeanSquaredError)
    assert isinstance(losses.get("sparse_categorical_crossentropy"), losses.SparseCategoricalCrossentropy)
    assert isinstance(losses.get("BinaryCrossentropy"), losses.BinaryCrossentropy)
    custom = losses.get(lambda y, p: adv.sum(p - y, axis=-1))
    assert custom(np.zeros((2, 2)), np.ones((2, 2))).item() == 2.0
    with pytest.raises(ValueError, match="mean_squared_error"):
        losses.get("mean_square_error")


def test_labels_get_the_prediction_dtype():
    p = adv.constant(np.full((2, 1), 0.5, dtype=np.float32))
    assert losses.binary_crossentropy(np.array([1, 0]), p).dtype == np.float32


def test_mean_reduction_with_sample_weight_is_keras_3():
    # the case, checked in Keras 3.15: per-sample 1 and 4, weights 1 and 3
    y_true, y_pred, w = [[0.0], [0.0]], [[1.0], [2.0]], [1.0, 3.0]
    assert losses.MeanSquaredError(reduction="mean")(y_true, y_pred, sample_weight=w).item() == 6.5
    assert losses.MeanSquaredError(reduction="sum_over_batch_size")(y_true, y_pred, sample_weight=w).item() == 6.5
    assert losses.MeanSquaredError(reduction="mean_with_sample_weight")(
        y_true, y_pred, sample_weight=w).item() == 3.25
    # weights that sum to zero: 0, not a division by zero (Keras' divide_no_nan)
    assert losses.MeanSquaredError(reduction="mean_with_sample_weight")(
        y_true, y_pred, sample_weight=[0.0, 0.0]).item() == 0.0
    with pytest.raises(ValueError, match="mean_with_sample_weight"):
        losses.reduce(adv.constant([1.0]), "average")


def test_bce_on_a_sigmoid_output_uses_the_logits_like_keras():
    # Keras: BinaryCrossentropy()([[0]], sigmoid([[20.]])) = 20.0, gradient wrt the pre-activation ≈ 1
    z = adv.Variable([[20.0]])
    with adv.GradientTape() as tape:
        p = adv.nn.sigmoid(z)
        loss = losses.BinaryCrossentropy()([[0.0]], p)
    assert loss.item() == pytest.approx(np.logaddexp(0.0, 20.0), rel=1e-14)     # ln(1 + e²⁰) ≈ 20.0
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), [[1.0 / (1.0 + np.exp(-20.0))]], rtol=1e-12)


def test_bce_on_a_dense_sigmoid_layer_trains_past_the_clip():
    # the beginner set-up: Dense(1, "sigmoid") + "binary_crossentropy"; a confident wrong answer
    dense = adv.layers.Dense(1, activation="sigmoid", dtype="float64")
    dense.build((None, 1))
    dense.kernel.assign([[30.0]])
    dense.bias.assign([0.0])
    with adv.GradientTape() as tape:
        loss = losses.get("binary_crossentropy")(np.array([[0.0]]), dense(np.array([[1.0]])))
    g = tape.gradient(loss, dense.kernel)
    assert loss.item() == pytest.approx(np.logaddexp(0.0, 30.0), rel=1e-12)   # clipped probabilities would give 16.118
    assert g.numpy()[0, 0] == pytest.approx(1.0, rel=1e-9)       # and a gradient of 0


def test_categorical_crossentropy_on_a_softmax_output_uses_the_logits():
    z_np = np.array([[50.0, 0.0, -50.0], [1.0, 2.0, 3.0]])
    y = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    z = adv.Variable(z_np)
    with adv.GradientTape(persistent=True) as tape:
        loss = losses.CategoricalCrossentropy()(y, adv.nn.softmax(z))
        sparse = losses.SparseCategoricalCrossentropy()(np.array([2, 1]), adv.nn.softmax(z))
    log_p = z_np - np.log(np.exp(z_np - 50).sum(-1, keepdims=True)) - 50
    np.testing.assert_allclose(loss.numpy(), -(y * log_p).sum(-1).mean(), rtol=1e-12)   # 100.x, not 16.1
    np.testing.assert_allclose(sparse.numpy(), loss.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), (np.exp(log_p) - y) / 2, rtol=1e-9, atol=1e-15)


def test_probabilities_not_made_by_an_activation_are_still_clipped():
    p = adv.Variable([[1.0]])
    with adv.GradientTape() as tape:
        loss = losses.BinaryCrossentropy()([[0.0]], p * 1.0)        # 'multiply', not 'sigmoid'
    assert loss.item() == pytest.approx(-np.log(1e-7), rel=1e-6)
    # softmax over another axis than the loss's class axis: no shortcut
    q = adv.nn.softmax(adv.constant([[1.0, 2.0], [3.0, 0.5]]), axis=0)
    expected = -np.log(np.clip(q.numpy() / q.numpy().sum(-1, keepdims=True), 1e-7, 1 - 1e-7))[:, 0]
    np.testing.assert_allclose(losses.categorical_crossentropy([[1.0, 0.0], [1.0, 0.0]], q).numpy(), expected)


def test_watched_probabilities_keep_their_gradient():
    # tape.watch(p) on the sigmoid's output: the loss must depend on p, so it is the clipped form
    z = adv.constant([[0.5]])
    p = adv.nn.sigmoid(z)
    with adv.GradientTape() as tape:
        tape.watch(p)
        loss = losses.BinaryCrossentropy()([[1.0]], p)
    g = tape.gradient(loss, p)
    np.testing.assert_allclose(g.numpy(), -1.0 / p.numpy(), rtol=1e-9)
