"""compile / fit / evaluate / predict: Keras semantics, callbacks, progress, and a real dataset."""
import io

import numpy as np
import pytest
from fit_helpers import fresh_session, linear_model, regression_data  # noqa: F401  (fresh_session: autouse)

import autodiff_viz as adv
from autodiff_viz import callbacks, layers, losses, optimizers


def test_mlp_on_digits_reaches_95_percent_test_accuracy():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y)
    model = adv.Sequential([layers.Input((64,)), layers.Dense(64, activation="relu"), layers.Dense(10)])
    model.compile(optimizer=optimizers.Adam(0.005),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    history = model.fit(x_train, y_train, epochs=20, batch_size=32, validation_split=0.1, seed=0, verbose=0)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    assert accuracy >= 0.95
    assert history.history["accuracy"][-1] > history.history["accuracy"][0]
    assert (model.predict(x_test).argmax(-1) == y_test).mean() == pytest.approx(accuracy)


def test_one_full_batch_epoch_is_one_hand_written_sgd_step():
    x, y = regression_data(40)
    model = linear_model(lr=0.1)
    W, b = model.get_weights()
    model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    err = x @ W + b - y                                   # mse = mean(err²) -> d/dW = 2/n xᵀ err
    np.testing.assert_allclose(model.get_weights()[0], W - 0.1 * 2 * x.T @ err / len(x), rtol=1e-12)
    np.testing.assert_allclose(model.get_weights()[1], b - 0.1 * 2 * err.mean(0), rtol=1e-12)


def test_history_and_validation_split_takes_the_last_fraction():
    x, y = regression_data(50)
    layers.set_random_seed(0)           # both models start from the same weights
    a = linear_model()
    h_split = a.fit(x, y, epochs=3, batch_size=8, validation_split=0.2, shuffle=False, verbose=0)
    layers.clear_session()
    layers.set_random_seed(0)
    b = linear_model()
    h_data = b.fit(x[:40], y[:40], epochs=3, batch_size=8, validation_data=(x[40:], y[40:]), shuffle=False,
                   verbose=0)
    assert list(h_split.history) == ["loss", "val_loss"] and h_split.epoch == [0, 1, 2]
    np.testing.assert_allclose(h_split.history["val_loss"], h_data.history["val_loss"], rtol=1e-12)
    assert a.history is h_split


def test_the_epoch_loss_is_the_sample_weighted_mean_of_the_batch_losses():
    x, y = regression_data(10)
    model = linear_model(lr=0.0)
    history = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)   # batches of 4, 4, 2
    assert history.history["loss"][0] == pytest.approx(model.evaluate(x, y, verbose=0))


def test_shuffling_with_a_seed_is_repeatable():
    x, y = regression_data(40)
    runs = []
    for _ in range(2):
        layers.clear_session()
        layers.set_random_seed(1)
        model = linear_model()
        model.fit(x, y, epochs=2, batch_size=8, seed=123, verbose=0)
        runs.append(model.get_weights())
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    layers.set_random_seed(1)
    other = linear_model()
    other.set_weights(runs[0])
    unshuffled = linear_model()
    unshuffled.set_weights(runs[0])
    other.fit(x, y, epochs=1, batch_size=8, seed=5, verbose=0)
    unshuffled.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    assert not np.array_equal(other.get_weights()[0], unshuffled.get_weights()[0])


def test_early_stopping_stops_after_patience_and_restores_the_best_weights():
    x, y = regression_data(40)
    layers.set_random_seed(0)   # with lr=0 the loss changes only by rounding, which the shuffled order decides
    model = linear_model(lr=0.0)
    stop = callbacks.EarlyStopping(monitor="loss", patience=2)
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[stop])
    assert history.epoch == [0, 1, 2] and stop.stopped_epoch == 2

    class Sabotage(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 3:
                self.model.optimizer.learning_rate = 5.0        # diverges from here on
    model = linear_model(lr=0.05)
    stop = callbacks.EarlyStopping(monitor="val_loss", patience=1, restore_best_weights=True)
    model.fit(x, y, epochs=30, validation_split=0.25, verbose=0, callbacks=[Sabotage(), stop])
    assert stop.stopped_epoch < 29
    val = model.evaluate(x[30:], y[30:], verbose=0)
    assert val == pytest.approx(stop.best)


def test_callbacks_see_the_hooks_in_keras_order():
    calls = []

    class Spy(callbacks.Callback):
        def on_train_begin(self, logs=None): calls.append("train_begin")
        def on_epoch_begin(self, epoch, logs=None): calls.append(f"epoch_begin {epoch}")
        def on_train_batch_end(self, batch, logs=None): calls.append(f"batch {batch} {sorted(logs)}")
        def on_epoch_end(self, epoch, logs=None): calls.append(f"epoch_end {epoch} {sorted(logs)}")
        def on_train_end(self, logs=None): calls.append("train_end")
    x, y = regression_data(8)
    linear_model().fit(x, y, epochs=1, batch_size=4, validation_data=(x, y), verbose=0, callbacks=[Spy()])
    assert calls == ["train_begin", "epoch_begin 0", "batch 0 ['loss']", "batch 1 ['loss']",
                     "epoch_end 0 ['loss', 'val_loss']", "train_end"]


def test_accuracy_flavours_follow_the_shapes():
    x = np.random.default_rng(0).normal(size=(20, 3))
    binary = adv.Sequential([layers.Input((3,)), layers.Dense(1)])
    binary.compile("adam", losses.BinaryCrossentropy(from_logits=True), metrics=["accuracy"])
    y = (x[:, 0] > 0).astype(float)
    result = binary.evaluate(x, y, verbose=0, return_dict=True)
    p = binary.predict(x)[:, 0]
    assert result["accuracy"] == pytest.approx(np.mean((p > 0.5) == (y > 0.5)))   # Keras: threshold 0.5

    multi = adv.Sequential([layers.Input((3,)), layers.Dense(4)])
    multi.compile("adam", "categorical_crossentropy", metrics=["accuracy"])
    labels = np.arange(20) % 4
    one_hot = np.eye(4)[labels]
    acc = multi.evaluate(x, one_hot, verbose=0)[1]
    assert acc == pytest.approx(np.mean(multi.predict(x).argmax(-1) == labels))


def test_verbose_zero_is_silent_and_text_progress_has_one_line_per_epoch(capsys):
    x, y = regression_data(40)
    model = linear_model()
    model.fit(x, y, epochs=2, verbose=0)
    model.evaluate(x, y, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(x, y, epochs=2, batch_size=10, validation_split=0.5)
    out = capsys.readouterr().out
    assert "\r" not in out                                  # not a terminal: no redrawing
    lines = out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    assert lines[1].startswith("2/2 ") and " - loss: " in lines[1] and " - val_loss: " in lines[1]
    model.fit(x, y, epochs=2, verbose=2)
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_progress_redraws_in_place_in_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    stream = Terminal()
    bar = callbacks.ProgbarLogger(verbose=1, stream=stream, widget=False)
    bar.set_params({"epochs": 1, "steps": 3})
    bar.on_train_begin()
    bar.on_epoch_begin(0)
    for step in range(3):
        bar.on_train_batch_end(step, {"loss": 1.0})
    bar.on_epoch_end(0, {"loss": 1.0})
    text = stream.getvalue()
    assert text.startswith("\r") and text.rstrip("\n").split("\r")[-1].startswith("3/3 ━")


def test_widget_progress_shows_the_bar_and_the_epoch_logs():
    bar = callbacks.ProgbarLogger(verbose=1, widget=True, stream=io.StringIO())
    bar.set_params({"epochs": 2, "steps": 4})
    bar.on_train_begin()
    for epoch in range(2):
        bar.on_epoch_begin(epoch)
        for step in range(4):
            bar.on_train_batch_end(step, {"loss": 0.5})
        bar.on_epoch_end(epoch, {"loss": 0.5, "val_loss": 0.25})
    header, log = bar.widget.children
    label, progress, metrics = header.children
    assert label.value == "Epoch 2/2" and progress.value == progress.max == 4
    assert "val_loss: 0.2500" in metrics.value and log.value.count("Epoch") == 2


def test_predict_is_batch_independent_and_records_nothing():
    x, y = regression_data(70)
    model = linear_model()
    with adv.GradientTape() as tape:
        full = model.predict(x, batch_size=70)
        parts = model.predict(x, batch_size=16)
    assert isinstance(full, np.ndarray) and full.shape == (70, 1)
    np.testing.assert_allclose(parts, full, rtol=1e-12)
    assert tape.nodes == ()


def test_clear_errors_before_compile_and_for_mismatched_data():
    model = adv.Sequential([layers.Input((3,)), layers.Dense(1)])
    x, y = regression_data(40)
    with pytest.raises(RuntimeError, match=r"compile"):
        model.fit(x, y)
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="loss"):
        model.fit(x, y)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="40 samples but y has 39"):
        model.fit(x, y[:-1])


def test_fit_calls_the_model_with_training_true_and_predict_without():
    seen = []

    class Recorder(adv.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)

        def call(self, x, training=False):
            seen.append(training)
            return self.dense(x)
    model = Recorder()
    model.compile("sgd", "mse")
    x, y = regression_data(8)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    model.predict(x)
    assert seen == [True, False]


def test_early_stopping_on_a_missing_log_warns_with_the_available_names():
    x, y = regression_data(8)
    with pytest.warns(UserWarning, match=r"'val_loss'.*\['loss'\].*validation_split"):
        linear_model().fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.EarlyStopping()])


# ---------------------------------------------------------------------------
# add_loss, weight regularizers and constraints
# ---------------------------------------------------------------------------
def half_square(weight):
    """A regularizer written by hand: 0.5 · Σ w²."""
    return 0.5 * adv.sum(weight ** 2)


class Penalized(layers.Layer):
    """y = x · w, with a regularized weight and an activity penalty mean(y²) added in call."""

    def __init__(self, scale=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 1), initializer="ones", name="w", regularizer=half_square)

    def call(self, x):
        y = adv.matmul(x, self.w)
        if self.scale:
            self.add_loss(self.scale * adv.mean(y ** 2))
        return y


def test_regularization_is_in_model_losses_and_in_the_fit_gradient():
    x, y = regression_data(8)
    model = adv.Sequential([layers.Input((3,)), Penalized(dtype="float64")], dtype="float64")
    model.compile(optimizer=optimizers.SGD(0.1), loss="mse")
    w = model.get_weights()[0]
    (reg,) = model.losses
    assert reg.numpy() == pytest.approx(0.5 * np.sum(w ** 2))
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    err = x @ w - y
    np.testing.assert_allclose(model.get_weights()[0], w - 0.1 * (2 * x.T @ err / 8 + w), rtol=1e-12)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(
        np.mean((x @ model.get_weights()[0] - y) ** 2) + 0.5 * np.sum(model.get_weights()[0] ** 2))


def test_regularization_is_recorded_in_its_own_scope_and_frozen_weights_are_not_regularized():
    layer = Penalized(dtype="float64")
    layer(np.ones((1, 2)))
    with adv.GradientTape() as tape:
        (total,) = layer.losses
    assert {n.scope for n in tape.nodes} == {f"regularization/{layer.name}"}
    assert tape.gradient(total, layer.w).numpy().tolist() == [[1.0], [1.0]]
    layer.trainable = False
    assert layer.losses == []


def test_add_loss_losses_belong_to_the_latest_call_and_are_gathered_from_sublayers():
    class Wrapper(adv.Model):
        def __init__(self):
            super().__init__(dtype="float64")
            self.inner = Penalized(scale=2.0, dtype="float64")

        def call(self, x):
            return self.inner(x)
    model = Wrapper()
    model(np.ones((2, 3)))
    assert len(model.losses) == 2                                 # the activity term, then the weight term
    model(np.full((2, 3), 2.0))
    activity, reg = model.losses
    assert activity.numpy() == pytest.approx(2.0 * 36.0) and reg.numpy() == pytest.approx(1.5)
    model.compile(optimizer=optimizers.SGD(0.0), loss="mse")
    x, y = np.ones((4, 3)), np.zeros((4, 1))
    assert model.evaluate(x, y, verbose=0) == pytest.approx(9.0 + 2.0 * 9.0 + 1.5)
    history = model.fit(x, y, batch_size=4, verbose=0)
    assert history.history["loss"] == [pytest.approx(28.5)]
    with pytest.raises(TypeError, match="symbolic"):
        model.add_loss(layers.Input((2,)))


def test_keras_regularizer_objects_are_accepted_where_the_package_has_them():
    import importlib
    try:
        regularizers = importlib.import_module("autodiff_viz.regularizers")
    except ImportError:
        regularizers = None
    layer = layers.Dense(1, dtype="float64")
    layer.build((None, 2))
    if regularizers is None or not hasattr(regularizers, "L2"):
        with pytest.raises(TypeError, match=r"regularizer must be a callable"):
            layer.add_weight(shape=(2,), regularizer="l2", name="r")
        return
    v = layer.add_weight(shape=(2,), initializer="ones", regularizer=regularizers.L2(0.01), name="r")
    assert layer.losses[-1].numpy() == pytest.approx(0.01 * 2.0)
    assert (v.name, v.path) == ("r", f"{layer.name}/r")


def test_constraints_are_applied_after_each_step():
    class Clipped(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 1), initializer="zeros", name="w",
                                     constraint=lambda w: adv.clip(w, -0.05, 0.05))

        def call(self, x):
            return adv.matmul(x, self.w)
    x, y = regression_data(16)
    model = adv.Sequential([layers.Input((3,)), Clipped(dtype="float64")], dtype="float64")
    model.compile(optimizer=optimizers.SGD(0.5), loss="mse")
    model.fit(x, y, epochs=2, verbose=0)
    w = model.get_weights()[0]
    assert np.all(np.abs(w) <= 0.05) and np.any(np.abs(w) == 0.05)


def test_a_weight_made_with_a_constraint_carries_it_as_keras():
    """Keras 3: ``layer.kernel.constraint`` is the layer's ``kernel_constraint``, ``None`` without one; Géron's
    custom training loop (ch. 12) applies ``variable.constraint`` itself after each step."""
    nonneg = lambda w: adv.maximum(w, 0.0)  # noqa: E731
    dense = layers.Dense(2, kernel_constraint=nonneg)
    dense.build((None, 3))
    assert dense.kernel.constraint is nonneg and dense.bias.constraint is None
    for variable in dense.variables:
        if variable.constraint is not None:
            variable.assign(variable.constraint(variable))
    assert np.all(dense.kernel.numpy() >= 0)


def test_compile_accepts_keras_3_run_eagerly_and_jit_compile_and_stores_them():
    model = linear_model()
    assert (model.run_eagerly, model.jit_compile) == (False, False)       # Keras 3's defaults
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True, steps_per_execution=1)
    assert (model.run_eagerly, model.jit_compile) == (True, False)        # jit_compile="auto": False (TF backend)
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    assert (model.run_eagerly, model.jit_compile) == (False, True)
    x, y = regression_data(8)
    model.fit(x, y, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="steps_per_execution"):
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=0)


# ---------------------------------------------------------------------------
# memory: a step's graph does not outlive the next step
# ---------------------------------------------------------------------------
def test_the_previous_steps_graph_is_released_during_the_next_step():
    import weakref
    checks = []

    class Probe(layers.Layer):
        refs: list = []

        def call(self, x):
            checks.append([r() is None for r in Probe.refs])
            return x

    class Keep(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            Probe.refs = [weakref.ref(layer.output) for layer in self.model.layers[1:]]

    x, y = regression_data(32)
    model = adv.Sequential([layers.Input((3,)), Probe(), layers.Dense(8, activation="tanh"), layers.Dense(1)])
    model.compile(optimizer=optimizers.SGD(0.01), loss="mse")
    checks.clear()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Keep()])
    assert checks == [[]] + [[True, True]] * 3                         # 4 steps
    loss, y_pred = model.train_step(x, y)                   # kept by the caller across the next step
    refs = [weakref.ref(layer.output) for layer in model.layers[1:]]
    model.train_step(x, y)
    assert [r() is None for r in refs] == [True, True]
    assert loss.numpy() == pytest.approx(np.mean((y_pred.numpy() - y) ** 2))


def test_a_sequential_given_several_input_arrays_says_it_takes_one():
    model = linear_model()
    with pytest.raises(TypeError, match="a Sequential takes one array"):
        model.fit([np.ones((4, 3)), np.ones((4, 2))], np.ones((4, 1)), verbose=0)


def test_the_progress_bar_leaves_a_static_copy_with_the_last_epoch(capsys):
    from autodiff_viz.callbacks import ProgbarLogger
    adv.layers.set_random_seed(0)
    model = adv.Sequential([adv.layers.Input((3,)), adv.layers.Dense(1, dtype="float64")])
    model.compile(optimizer="sgd", loss="mse")
    bar = ProgbarLogger(verbose=1, widget=True)
    x = np.random.default_rng(0).normal(size=(20, 3))
    model.fit(x, x[:, :1], epochs=2, batch_size=5, verbose=0, callbacks=[bar])
    capsys.readouterr()                      # outside a kernel, display() prints the bundle
    bundle = bar._bundle()
    page = bundle["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "Epoch 2/2" in page and '<progress value="4" max="4">' in page and "loss:" in page
    assert "<script" not in page
