"""Keras 3's activation layers (LeakyReLU, ReLU, Softmax, ELU, PReLU), ``adv.nn.leaky_relu``'s keywords, the
accuracy metric classes and ``metric(y_true, y_pred)``.

Each layer is checked against PyTorch, forward and gradient (float64 layers,
inputs kept away from the kinks where frameworks may pick different
subgradients), or against a hand computation of Keras' formula; the metrics
against numpy on small cases, with and without ``sample_weight``.
"""
import numpy as np
import pytest
import torch
from fit_helpers import fresh_session  # noqa: F401  (autouse fixture)

import autodiff_viz as adv
from autodiff_viz import layers, metrics

RNG = np.random.default_rng(0)
X = RNG.normal(scale=2.0, size=(4, 6))
X[np.abs(X) < 0.05] = 0.3                       # away from 0, the kink
UPSTREAM = RNG.normal(size=X.shape)             # ḡ, so the gradient is not just the sum of slopes


def ours(layer, x, upstream=UPSTREAM):
    """The layer's output and ``∂Σ(ḡ·y)/∂x`` (and the layer's weights' gradients)."""
    xt = adv.constant(x)
    with adv.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
        loss = adv.sum(y * upstream)
    grads = tape.gradient(loss, [xt, *layer.trainable_variables])
    return y.numpy(), [g.numpy() for g in grads]


def theirs(fn, x, upstream=UPSTREAM, params=()):
    xt = torch.tensor(x, requires_grad=True)
    y = fn(xt)
    (y * torch.tensor(upstream)).sum().backward()
    return y.detach().numpy(), [xt.grad.numpy(), *[p.grad.numpy() for p in params]]


def assert_matches(a, b):
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-12)
    assert len(a[1]) == len(b[1])
    for ga, gb in zip(a[1], b[1]):
        np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)


def ops_of(layer, x):
    """The ops a call records (on a watched input): what the graph shows inside the layer's box."""
    xt = adv.constant(x)
    with adv.GradientTape() as tape:
        tape.watch(xt)
        layer(xt)
    return [node.rule.name for node in tape.nodes]


# ----- LeakyReLU ------------------------------------------------------------------------------------------
def test_leaky_relu_layer_default_slope_is_keras3s_0_3_and_matches_torch():
    layer = layers.LeakyReLU(dtype="float64")
    assert layer.negative_slope == 0.3
    assert_matches(ours(layer, X), theirs(torch.nn.LeakyReLU(0.3), X))
    assert ops_of(layer, X) == ["leaky_relu"]


def test_leaky_relu_layer_custom_slope_and_keras_example():
    assert_matches(ours(layers.LeakyReLU(negative_slope=0.05, dtype="float64"), X),
                   theirs(torch.nn.LeakyReLU(0.05), X))
    out = layers.LeakyReLU(negative_slope=0.5)(np.array([-10.0, -5.0, 0.0, 5.0, 10.0]))
    np.testing.assert_array_equal(out.numpy(), [-5.0, -2.5, 0.0, 5.0, 10.0])


def test_leaky_relu_layer_takes_keras2_alpha_with_a_warning_and_refuses_both():
    with pytest.warns(UserWarning, match="negative_slope"):
        layer = layers.LeakyReLU(alpha=0.1)
    assert layer.negative_slope == 0.1
    with pytest.raises(TypeError, match="Pass only negative_slope"):
        layers.LeakyReLU(negative_slope=0.2, alpha=0.1)
    for bad in (-0.1, None, "0.3"):
        with pytest.raises(ValueError, match=r"LeakyReLU: negative_slope must be a number ≥ 0"):
            layers.LeakyReLU(negative_slope=bad)


def test_nn_leaky_relu_takes_negative_slope_or_alpha_default_0_2():
    x = adv.constant(X)
    expected = theirs(lambda t: torch.nn.functional.leaky_relu(t, 0.2), X)[0]
    np.testing.assert_allclose(adv.nn.leaky_relu(x).numpy(), expected)
    for kwargs in ({"negative_slope": 0.1}, {"alpha": 0.1}):
        np.testing.assert_allclose(adv.nn.leaky_relu(x, **kwargs).numpy(), np.where(X > 0, X, 0.1 * X))
    np.testing.assert_allclose(adv.nn.leaky_relu(x, 0.1).numpy(), np.where(X > 0, X, 0.1 * X))
    with pytest.raises(TypeError, match="negative_slope=0.1 and alpha=0.2.*Pass only negative_slope"):
        adv.nn.leaky_relu(x, negative_slope=0.1, alpha=0.2)
    with pytest.raises(TypeError, match="must be a number"):
        adv.nn.leaky_relu(x, negative_slope="0.1")


# ----- ReLU -----------------------------------------------------------------------------------------------
def test_relu_layer_defaults_are_one_relu_node_as_torch():
    layer = layers.ReLU(dtype="float64")
    assert (layer.max_value, layer.negative_slope, layer.threshold) == (None, 0.0, 0.0)
    assert_matches(ours(layer, X), theirs(torch.relu, X))
    assert ops_of(layer, X) == ["relu"]


def test_relu_layer_max_value_clips_as_torch_clamp():
    x = X.copy()
    x[np.isclose(x, 1.5, atol=0.01)] = 1.2      # no entry at the clip point itself
    layer = layers.ReLU(max_value=1.5, dtype="float64")
    assert_matches(ours(layer, x), theirs(lambda t: torch.clamp(torch.relu(t), max=1.5), x))
    assert "clip" in ops_of(layer, x)


def test_relu_layer_slope_alone_is_torch_leaky_relu():
    layer = layers.ReLU(negative_slope=0.1, dtype="float64")
    assert_matches(ours(layer, X), theirs(torch.nn.LeakyReLU(0.1), X))
    assert ops_of(layer, X) == ["leaky_relu"]


def test_relu_layer_all_three_options_follow_keras_formula():
    t, m, s = 0.5, 2.0, 0.25
    x = X.copy()
    x[np.isclose(x, t, atol=0.01) | np.isclose(x, m, atol=0.01)] = 1.0
    expected = np.where(x > t, np.minimum(x, m), s * (x - t))       # Keras 3's ReLU formula, by hand
    slope = np.where(x > m, 0.0, np.where(x > t, 1.0, s))
    y, (gx,) = ours(layers.ReLU(max_value=m, negative_slope=s, threshold=t, dtype="float64"), x)
    np.testing.assert_allclose(y, expected, rtol=1e-12)
    np.testing.assert_allclose(gx, slope * UPSTREAM, rtol=1e-12)
    keras_docs = layers.ReLU(max_value=10, negative_slope=0.5, threshold=0)(np.array([-10.0, -5.0, 0.0, 5.0, 10.0]))
    np.testing.assert_array_equal(keras_docs.numpy(), [-5.0, -2.5, 0.0, 5.0, 10.0])
    thresholded = layers.ReLU(threshold=5.0)(np.array([-10.0, -5.0, 0.0, 5.0, 10.0]))
    np.testing.assert_array_equal(thresholded.numpy(), [0.0, 0.0, 0.0, 0.0, 10.0])


@pytest.mark.parametrize("kwargs, what", [({"max_value": -1.0}, "max_value"), ({"negative_slope": -0.1},
                                          "negative_slope"), ({"threshold": None}, "threshold")])
def test_relu_layer_refuses_negative_or_missing_options(kwargs, what):
    with pytest.raises(ValueError, match=f"ReLU: {what} must be a number ≥ 0"):
        layers.ReLU(**kwargs)


# ----- Softmax --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_layer_matches_torch(axis):
    layer = layers.Softmax(axis=axis, dtype="float64")
    assert_matches(ours(layer, X), theirs(lambda t: torch.softmax(t, dim=axis), X))
    assert ops_of(layer, X) == ["softmax"]


def test_softmax_layer_over_a_list_of_axes_is_one_distribution():
    x = X.reshape(2, 3, 4)
    flat = lambda t: torch.softmax(t.reshape(2, 12), dim=-1).reshape(2, 3, 4)    # noqa: E731
    assert_matches(ours(layers.Softmax(axis=[1, 2], dtype="float64"), x, UPSTREAM.reshape(2, 3, 4)),
                   theirs(flat, x, UPSTREAM.reshape(2, 3, 4)))


def test_softmax_layer_mask_gives_masked_entries_zero_probability_and_gradient():
    mask = np.ones(X.shape, dtype=bool)
    mask[0, :2] = False
    mask[1, :] = False                           # a row masked everywhere: zeros, not uniform
    xt = adv.constant(X)
    with adv.GradientTape() as tape:
        tape.watch(xt)
        y = layers.Softmax(dtype="float64")(xt, mask=mask)
        loss = adv.sum(y * UPSTREAM)
    gx = tape.gradient(loss, xt).numpy()
    e = np.where(mask, np.exp(X - X.max(axis=-1, keepdims=True)), 0.0)
    totals = e.sum(axis=-1, keepdims=True)
    expected = np.divide(e, totals, out=np.zeros_like(e), where=totals > 0)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-300)
    assert np.all(gx[~mask] == 0.0)
    kept = theirs(lambda t: torch.softmax(t[0, 2:], dim=-1), X, UPSTREAM[0, 2:])[1][0]
    np.testing.assert_allclose(gx[0], kept[0], rtol=1e-12)
    as_numbers = layers.Softmax(dtype="float64")(X, mask=mask.astype(np.float64))
    np.testing.assert_array_equal(as_numbers.numpy(), y.numpy())


def test_softmax_layer_refuses_a_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask of shape \(4, 5\) does not broadcast to the inputs of shape \(4, 6\)"):
        layers.Softmax()(X, mask=np.ones((4, 5), dtype=bool))
    with pytest.raises(TypeError, match="Softmax: axis must be an int or a list of ints"):
        layers.Softmax(axis="last")


# ----- ELU ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_elu_layer_matches_torch(alpha):
    layer = layers.ELU(alpha=alpha, dtype="float64") if alpha != 1.0 else layers.ELU(dtype="float64")
    assert layer.alpha == alpha
    assert_matches(ours(layer, X), theirs(torch.nn.ELU(alpha), X))
    assert ops_of(layer, X) == ["elu"]


# ----- PReLU ----------------------------------------------------------------------------------------------
def test_prelu_layer_starts_as_relu_and_matches_torch_prelu_forward_and_gradients():
    layer = layers.PReLU(dtype="float64")
    y0 = layer(X)
    assert layer.alpha.shape == (6,) and np.all(layer.alpha.numpy() == 0)       # Keras' "Zeros"
    np.testing.assert_array_equal(y0.numpy(), np.maximum(X, 0))
    alpha = RNG.uniform(0.05, 0.5, size=6)
    layer.alpha.assign(alpha)
    module = torch.nn.PReLU(num_parameters=6, dtype=torch.float64)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(alpha))
    assert_matches(ours(layer, X), theirs(module, X, params=[module.weight]))


def test_prelu_layer_shared_axes_share_one_slope_per_channel():
    x = RNG.normal(size=(2, 3, 3, 4))
    x[np.abs(x) < 0.05] = 0.3
    up = RNG.normal(size=x.shape)
    layer = layers.PReLU(shared_axes=[1, 2], alpha_initializer="ones", dtype="float64")
    layer(x)
    assert layer.alpha.shape == (1, 1, 4)
    alpha = RNG.uniform(0.05, 0.5, size=(1, 1, 4))
    layer.alpha.assign(alpha)
    a = torch.tensor(alpha, requires_grad=True)
    assert_matches(ours(layer, x, up), theirs(lambda t: torch.relu(t) - a * torch.relu(-t), x, up, params=[a]))
    assert sorted(set(ops_of(layer, x))) == ["multiply", "negative", "relu", "subtract"]
    layer(np.ones((5, 7, 2, 4)))                 # shared axes may change size
    with pytest.raises(ValueError, match=r"built for samples of shape \('any', 'any', 4\)"):
        layer(np.ones((2, 3, 3, 5)))


def test_prelu_layer_options_are_checked_and_alpha_is_regularized():
    with pytest.raises(ValueError, match=r"shared_axes must be axes ≥ 1 \(axis 0 is the batch\)"):
        layers.PReLU(shared_axes=[0])
    with pytest.raises(ValueError, match=r"each shared axis must be one of them \(1 to 1\)"):
        layers.PReLU(shared_axes=2)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="Unknown initializer"):
        layers.PReLU(alpha_initializer="zeroes")
    layer = layers.PReLU(alpha_initializer="ones", alpha_regularizer=adv.regularizers.L2(0.5), dtype="float64")
    layer(np.ones((2, 3)))
    assert [float(loss.numpy()) for loss in layer.losses] == [pytest.approx(0.5 * 3)]


def test_prelu_learns_its_slope_in_fit():
    x = RNG.normal(size=(64, 1))
    y = np.where(x > 0, x, 0.25 * x)             # a leaky relu of slope 0.25 to recover
    model = adv.Sequential([layers.Input((1,)), layers.PReLU(dtype="float64")], dtype="float64")
    model.compile(optimizer=adv.optimizers.SGD(0.5), loss="mse")
    model.fit(x, y, epochs=60, batch_size=64, verbose=0)
    assert float(model.layers[-1].alpha.numpy()[0]) == pytest.approx(0.25, abs=1e-3)


# ----- get_config -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: layers.LeakyReLU(negative_slope=0.1),
    lambda: layers.ReLU(max_value=6.0, negative_slope=0.2, threshold=0.5),
    lambda: layers.Softmax(axis=[1, 2]),
    lambda: layers.ELU(alpha=0.7),
    lambda: layers.PReLU(alpha_initializer="ones", alpha_regularizer="l2", shared_axes=[1]),
], ids=["LeakyReLU", "ReLU", "Softmax", "ELU", "PReLU"])
def test_get_config_rebuilds_the_same_layer(make):
    layer = make()
    config = layer.get_config()
    again = type(layer)(**{**config, "name": config["name"] + "_copy"})
    assert {**again.get_config(), "name": config["name"]} == config
    x = RNG.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(layer(x).numpy(), again(x).numpy())


# ----- metrics --------------------------------------------------------------------------------------------
Y_INT = np.array([2, 0, 1, 1, 0])
SCORES = np.array([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1], [0.5, 0.4, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
W = np.array([1.0, 2.0, 0.5, 0.0, 3.0])
MATCH = (SCORES.argmax(-1) == Y_INT).astype(float)               # [1, 1, 0, 1, 0]


def test_sparse_categorical_accuracy_against_numpy_with_and_without_weights():
    acc = metrics.SparseCategoricalAccuracy()
    assert acc.name == "sparse_categorical_accuracy"
    acc.update_state(Y_INT, SCORES)
    assert acc.result() == pytest.approx(MATCH.mean())
    acc.reset_state()
    acc.update_state(Y_INT[:, None], SCORES, sample_weight=W)     # labels (batch, 1) too
    assert acc.result() == pytest.approx(np.dot(W, MATCH) / W.sum())
    acc.update_state(Y_INT[:2], SCORES[:2])                        # a second batch adds to the running mean
    assert acc.result() == pytest.approx((np.dot(W, MATCH) + 2) / (W.sum() + 2))


def test_categorical_accuracy_against_numpy_with_and_without_weights():
    acc = metrics.CategoricalAccuracy()
    assert acc.name == "categorical_accuracy"
    assert acc(np.eye(3)[Y_INT], SCORES) == pytest.approx(MATCH.mean())
    acc.reset_state()
    assert acc(np.eye(3)[Y_INT], SCORES, sample_weight=W) == pytest.approx(np.dot(W, MATCH) / W.sum())


def test_binary_accuracy_threshold_and_one_prediction_per_sample():
    y = np.array([1, 0, 1, 0])
    p = np.array([0.9, 0.6, 0.3, 0.1])
    acc = metrics.BinaryAccuracy()
    assert (acc.name, acc.threshold) == ("binary_accuracy", 0.5)
    assert acc(y, p) == pytest.approx(0.5)
    acc.reset_state()
    w = np.array([3.0, 1.0, 0.0, 1.0])
    assert acc(y, p, sample_weight=w) == pytest.approx((3 + 1) / 5)       # a (batch,) prediction is per sample
    low = metrics.BinaryAccuracy(threshold=0.2)
    assert low(y[:, None], p[:, None]) == pytest.approx(np.mean((p > 0.2) == y))
    np.testing.assert_array_equal(metrics.binary_accuracy(y, p), [1.0, 0.0, 0.0, 1.0])


def test_accuracy_counts_exact_matches_as_keras():
    acc = metrics.Accuracy()
    assert acc.name == "accuracy"
    assert acc([[1], [2], [3], [4]], [[0], [2], [3], [4]]) == pytest.approx(0.75)   # Keras' docstring example
    acc.reset_state()
    assert acc([[1], [2], [3], [4]], [[0], [2], [3], [4]], sample_weight=[1, 1, 0, 0]) == pytest.approx(0.5)


def test_calling_a_metric_updates_it_and_returns_the_running_result():
    mean = metrics.Mean()
    assert mean([1.0, 3.0, 5.0, 7.0]) == pytest.approx(4.0)
    assert mean([1.0, 3.0], sample_weight=[1, 0]) == pytest.approx(17 / 5)
    assert mean.result() == pytest.approx(17 / 5)
    mean.reset_state()
    assert mean.result() == 0.0
    mae = metrics.MeanAbsoluteError()
    assert mae([[1.0, 2.0]], [[2.0, 4.0]]) == pytest.approx(1.5)


def test_metrics_get_and_compile_take_metric_objects():
    acc = metrics.SparseCategoricalAccuracy()
    assert metrics.get(acc) is acc
    assert isinstance(metrics.get(metrics.SparseCategoricalAccuracy), metrics.SparseCategoricalAccuracy)


def _classifier_history(metric):
    layers.clear_session()
    layers.set_random_seed(0)
    x = RNG_FIT.normal(size=(40, 4))
    y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
    model = adv.Sequential([layers.Input((4,)), layers.Dense(3), layers.Softmax()])
    model.compile(optimizer=adv.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy", metrics=[metric])
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    return model, x, y, history.history


RNG_FIT = np.random.default_rng(7)


def test_fit_with_a_sparse_categorical_accuracy_object_logs_what_the_name_does():
    state = RNG_FIT.bit_generator.state
    model, x, y, by_object = _classifier_history(metrics.SparseCategoricalAccuracy())
    RNG_FIT.bit_generator.state = state
    _, _, _, by_name = _classifier_history("sparse_categorical_accuracy")
    assert list(by_object) == ["loss", "sparse_categorical_accuracy"]
    assert by_object == by_name
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc == pytest.approx(np.mean(model.predict(x, verbose=0).argmax(-1) == y))


def test_a_custom_training_loop_as_keras_guides_write_it():
    """The Keras 3 guide's loop: a LeakyReLU model, ``train_acc_metric.update_state`` per batch, ``result()``."""
    x = RNG.normal(size=(32, 5))
    y = (x.sum(axis=1) > 0).astype(int)
    model = adv.Sequential([layers.Input((5,)), layers.Dense(8), layers.LeakyReLU(negative_slope=0.2),
                            layers.Dense(2)])
    loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = adv.optimizers.SGD(0.1)
    train_acc_metric = adv.metrics.SparseCategoricalAccuracy()
    hits = []
    for start in range(0, 32, 8):
        xb, yb = x[start:start + 8], y[start:start + 8]
        with adv.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        train_acc_metric.update_state(yb, logits)
        hits += list(logits.numpy().argmax(-1) == yb)
    assert float(train_acc_metric.result()) == pytest.approx(np.mean(hits))
    train_acc_metric.reset_state()
    assert train_acc_metric.result() == 0.0


def test_a_metric_result_is_a_float_that_tensorflow_code_can_read_with_numpy():
    acc = adv.metrics.SparseCategoricalAccuracy()
    acc.update_state(np.array([0, 1, 1]), np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]]))
    value = acc.result()
    assert isinstance(value, float) and value == pytest.approx(2 / 3)
    assert value.numpy() == pytest.approx(2 / 3) and isinstance(value.numpy(), np.float64)
    assert f"{value:.4f}" == "0.6667" and "%.2f" % value == "0.67"
    rmse = adv.metrics.RootMeanSquaredError()
    rmse.update_state(np.array([[0.0], [0.0]]), np.array([[3.0], [4.0]]))
    assert rmse.result().numpy() == pytest.approx(np.sqrt(12.5))


def test_precision_and_recall_stream_over_batches_as_keras_3():
    """Values and variables as ``keras.metrics.Precision`` / ``Recall`` give (Keras 3.x, checked with TF 2.21)."""
    precision = adv.metrics.Precision()
    assert precision.name == "precision" and precision.thresholds == [0.5]
    assert float(precision([0, 1, 1, 1, 0, 1, 0, 1], [1, 1, 0, 1, 0, 1, 0, 1])) == pytest.approx(0.8)
    assert float(precision([0, 1, 0, 0, 1, 0, 1, 1], [1, 0, 1, 1, 0, 0, 0, 0])) == 0.5   # over both batches
    assert [(v.name, v.path, v.dtype) for v in precision.variables] == [
        ("true_positives", "precision/true_positives", np.float32),
        ("false_positives", "precision/false_positives", np.float32)]
    assert [v.numpy().tolist() for v in precision.variables] == [[4.0], [4.0]]
    precision.reset_state()
    assert precision.result() == 0.0 and precision.result().numpy() == 0.0
    assert precision.get_config() == {"name": "precision", "dtype": "float32", "thresholds": None, "top_k": None,
                                      "class_id": None}

    several = adv.metrics.Precision(thresholds=[0.3, 0.7])
    several.update_state([0, 1, 1], [0.5, 0.8, 0.2], sample_weight=[1, 2, 3])
    np.testing.assert_allclose(several.result().numpy(), [2 / 3, 1.0], rtol=1e-6)
    assert [v.numpy().tolist() for v in several.variables] == [[2.0, 2.0], [1.0, 0.0]]

    recall = adv.metrics.Recall()
    assert [v.name for v in recall.variables] == ["true_positives", "false_negatives"]
    assert float(recall([0, 1, 1], [0.5, 0.8, 0.2])) == 0.5
    assert float(adv.metrics.Recall(class_id=1)([[0, 1], [1, 0]], [[0.2, 0.8], [0.6, 0.7]])) == 1.0
    top = adv.metrics.Precision(top_k=1)
    assert float(top([[0, 1], [1, 0]], [[0.2, 0.8], [0.6, 0.7]])) == 0.5 and top.thresholds == [-1e10]
    assert isinstance(adv.metrics.get("precision"), adv.metrics.Precision)
    with pytest.raises(ValueError, match=r"Threshold values must be in \[0, 1\]"):
        adv.metrics.Precision(thresholds=1.5)


def my_softplus(z):
    return adv.log(1.0 + adv.exp(z))


def test_activations_serialize_by_name_and_deserialize_as_keras_3():
    """``keras.activations.serialize(relu) == "relu"`` (Keras 3; ``swish`` is ``silu`` there too); a function of
    one's own is an entry that ``deserialize`` finds again through ``custom_objects``."""
    acts = adv.keras.activations
    assert [acts.serialize(acts.get(n)) for n in ("relu", "swish", "hard_swish", "linear", "leaky_relu")] == [
        "relu", "silu", "hard_silu", "linear", "leaky_relu"]
    assert acts.deserialize("relu") is acts.relu and acts.deserialize("elu") is acts.elu
    assert acts.deserialize(acts.serialize(acts.gelu)) is acts.gelu

    entry = acts.serialize(my_softplus)
    assert entry == {"module": __name__, "class_name": "function", "config": "my_softplus", "registered_name": None}
    assert acts.deserialize(entry, custom_objects={"my_softplus": my_softplus}) is my_softplus

    def nested(z):          # defined inside a function: found again by its name in custom_objects, as Keras 3
        return z
    assert acts.deserialize(acts.serialize(nested), custom_objects={"nested": nested}) is nested
    assert acts.deserialize("my_softplus", custom_objects={"my_softplus": my_softplus}) is my_softplus
    assert acts.deserialize({"module": "keras.activations", "class_name": "function", "config": "relu",
                             "registered_name": "relu"}) is acts.relu
    with pytest.raises(ValueError, match="Unknown activation"):
        acts.deserialize("nope")
