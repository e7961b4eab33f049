"""Keras 3 parity of losses and metrics: rank alignment, regression metrics, Huber."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import losses, metrics


def _regression_model(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(8, 4))
    y = rng.normal(size=8) * 3.0                  # (n,) targets against (n, 1) predictions
    model = adv.Sequential([adv.layers.Input((4,)), adv.layers.Dense(1)])
    return model, x, y


# ----- 1. a plain loss function sees labels of the prediction's rank ---------------------------
def test_a_custom_loss_function_gets_labels_of_the_predictions_rank():
    model, x, y = _regression_model()
    model.compile("sgd", loss=lambda yt, yp: adv.ops.mean(adv.ops.square(yt - yp), axis=-1))
    true_mse = np.mean((model.predict(x)[:, 0] - y) ** 2)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(true_mse, rel=1e-6)   # float32 model


def test_the_loss_wrapper_squeezes_or_expands_like_keras():
    seen = []

    def fn(y_true, y_pred):
        seen.append((y_true.shape, y_pred.shape))
        return adv.ops.mean(adv.ops.abs(y_true - y_pred), axis=-1) if y_true.shape == y_pred.shape else y_pred

    loss = losses.Loss(fn)
    pred = adv.Variable([[1.0], [2.0]])
    with adv.GradientTape() as tape:
        value = loss([0.0, 0.0], pred)
    assert seen[-1] == ((2, 1), (2, 1)) and value.item() == pytest.approx(1.5)
    np.testing.assert_allclose(tape.gradient(value, pred).numpy(), [[0.5], [0.5]])
    loss(np.zeros((2, 1)), adv.constant([1.0, 2.0]))                 # (n, 1) labels, (n,) predictions
    assert seen[-1] == ((2, 1), (2, 1))
    loss(np.zeros((2, 3)), adv.constant(np.ones((2, 3, 1))))         # rank > 1: the extra axis goes
    assert seen[-1] == ((2, 3), (2, 3))
    loss(np.zeros((2,)), adv.constant(np.ones((2, 3))))              # not a rank-1 difference: as given
    assert seen[-1] == ((2,), (2, 3))


def test_bce_reads_the_logits_of_a_rank_1_sigmoid_against_column_labels():
    z = adv.Variable([20.0, -3.0])
    with adv.GradientTape() as tape:
        value = losses.BinaryCrossentropy()([[0.0], [0.0]], adv.nn.sigmoid(z))
    expected = np.mean(np.logaddexp(0, z.numpy()))                    # softplus(z) − y·z with y = 0
    assert value.item() == pytest.approx(expected, rel=1e-12)         # ≈ 10.02, not the clipped ≈ 8.08
    np.testing.assert_allclose(tape.gradient(value, z).numpy(), 1 / (1 + np.exp(-z.numpy())) / 2, rtol=1e-12)


# ----- 2. accuracy metrics align ranks in both directions --------------------------------------
def test_binary_accuracy_aligns_either_rank_like_keras():
    np.testing.assert_array_equal(metrics.binary_accuracy([[1], [0]], [0.9, 0.1]), [1.0, 1.0])
    np.testing.assert_array_equal(metrics.binary_accuracy([1, 0], [[0.9], [0.7]]), [1.0, 0.0])
    np.testing.assert_array_equal(metrics.binary_accuracy([[1, 0], [0, 0]], [[0.9, 0.2], [0.6, 0.4]]), [1.0, 0.5])


def test_categorical_and_sparse_accuracy_keep_one_value_per_sample():
    scores = np.array([[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]])
    np.testing.assert_array_equal(metrics.sparse_categorical_accuracy([1, 1], scores), [1.0, 0.0])
    np.testing.assert_array_equal(metrics.sparse_categorical_accuracy([[1], [0]], scores), [1.0, 1.0])
    np.testing.assert_array_equal(metrics.categorical_accuracy(np.eye(3)[[1, 2]], scores), [1.0, 0.0])


def test_compiled_accuracy_of_a_one_column_model_matches_numpy():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(10, 3)), (rng.random(10) > 0.5).astype(float)[:, None]
    model = adv.Sequential([adv.layers.Input((3,)), adv.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", loss="binary_crossentropy", metrics=["accuracy"])
    expected = np.mean((model.predict(x) > 0.5) == (y > 0.5))
    assert model.evaluate(x, y, verbose=0, return_dict=True)["accuracy"] == pytest.approx(expected)


# ----- 3. regression metrics -------------------------------------------------------------------
@pytest.mark.parametrize("name, numpy_value", [
    ("mae", lambda e: np.mean(np.abs(e))), ("mean_absolute_error", lambda e: np.mean(np.abs(e))),
    ("mse", lambda e: np.mean(e ** 2)), ("MeanSquaredError", lambda e: np.mean(e ** 2)),
    ("root_mean_squared_error", lambda e: np.sqrt(np.mean(e ** 2))),
])
def test_regression_metrics_by_name_are_logged_under_that_name(name, numpy_value):
    model, x, y = _regression_model()
    model.compile("sgd", loss="mse", metrics=[name])
    error = model.predict(x)[:, 0] - y
    result = model.evaluate(x, y, batch_size=3, verbose=0, return_dict=True)
    assert set(result) == {"loss", name}
    assert result[name] == pytest.approx(numpy_value(error), rel=1e-6)      # float32 model
    history = model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    assert history.history[name][0] == pytest.approx(numpy_value(error), rel=1e-6)


def test_regression_metric_functions_and_classes():
    y_true, y_pred = np.array([0.0, 1.0, 2.0]), np.array([[1.0], [1.0], [4.0]])
    np.testing.assert_allclose(metrics.mean_absolute_error(y_true, y_pred), [1.0, 0.0, 2.0])
    np.testing.assert_allclose(metrics.mean_squared_error(y_true, y_pred), [1.0, 0.0, 4.0])
    rmse = metrics.RootMeanSquaredError()
    rmse.update_state(y_true[:2], y_pred[:2])
    rmse.update_state(y_true[2:], y_pred[2:])
    assert rmse.name == "root_mean_squared_error" and rmse.result() == pytest.approx(np.sqrt(5 / 3))
    mae = metrics.MeanAbsoluteError()
    mae.update_state(y_true, y_pred)
    assert mae.name == "mean_absolute_error" and mae.result() == pytest.approx(1.0)
    model, x, y = _regression_model()
    model.compile("sgd", loss="mse", metrics=[metrics.RootMeanSquaredError, metrics.MeanSquaredError()])
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert result["root_mean_squared_error"] == pytest.approx(np.sqrt(result["mean_squared_error"]))
    with pytest.raises(ValueError, match="Unknown metric 'rmsee'.*root_mean_squared_error"):
        metrics.check("rmsee")


# ----- 4. Huber --------------------------------------------------------------------------------
def _huber_numpy(y_true, y_pred, delta):
    e = np.abs(y_pred - y_true)
    return np.mean(np.where(e <= delta, 0.5 * e ** 2, delta * e - 0.5 * delta ** 2), axis=-1)


@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_huber_matches_the_numpy_formula(delta):
    rng = np.random.default_rng(2)
    y_true, y_pred = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)) * 2
    np.testing.assert_allclose(losses.huber(y_true, y_pred, delta=delta).numpy(),
                               _huber_numpy(y_true, y_pred, delta), rtol=1e-12)
    assert losses.Huber(delta=delta)(y_true, y_pred).item() == pytest.approx(
        _huber_numpy(y_true, y_pred, delta).mean(), rel=1e-12)
    np.testing.assert_allclose(losses.huber(y_true[:, 0], y_pred[:, :1], delta=delta).numpy(),
                               _huber_numpy(y_true[:, :1], y_pred[:, :1], delta), rtol=1e-12)


def test_huber_gradient_is_the_clipped_error():
    y_true = np.zeros((2, 3))
    pred = adv.Variable([[0.5, -2.0, 3.0], [-0.25, 1.5, -4.0]])
    with adv.GradientTape() as tape:
        value = losses.Huber(delta=1.0)(y_true, pred)
    grad = tape.gradient(value, pred).numpy()
    np.testing.assert_allclose(grad, np.clip(pred.numpy(), -1.0, 1.0) / pred.numpy().size, rtol=1e-12)
    assert adv.check_grads(lambda p: losses.huber(y_true, p, delta=0.7), [pred]).ok


def test_huber_is_recorded_as_one_named_box():
    pred = adv.Variable(np.ones((2, 1)))
    with adv.GradientTape():
        value = losses.Huber()(np.zeros((2, 1)), pred)
    scopes, todo = set(), [value._node]
    while todo:
        node = todo.pop()
        scopes.add(node.scope)
        todo.extend(t._node for t in node.inputs if t._node is not None)
    assert scopes == {"huber_loss"}


def test_huber_by_name_and_its_errors():
    assert isinstance(losses.get("huber"), losses.Huber)
    assert isinstance(losses.get("Huber"), losses.Huber)
    assert losses.Huber().name == "huber_loss" and losses.Huber(delta=2.0).fn_kwargs == {"delta": 2.0}
    model, x, y = _regression_model()
    model.compile("sgd", loss="huber")
    pred = model.predict(x)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(_huber_numpy(y[:, None], pred, 1.0).mean())
    with pytest.raises(ValueError, match=r"Huber: delta must be a positive number.*got -1"):
        losses.Huber(delta=-1)
    with pytest.raises(ValueError, match=r"huber: y_true has shape \(2, 3\)"):
        losses.huber(np.zeros((2, 3)), np.zeros((2, 2)))
