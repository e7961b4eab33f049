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
    assert losses.MeanSquaredError(reduction="mean")(y_true, y_pred, sample_weight=w).item() == pytest.approx(5.0)
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
