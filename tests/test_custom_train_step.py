"""Customising fit as Keras 3's guide "Customizing what happens in fit()" does: train_step(self, data) and
test_step(self, data) returning logs, model.metrics (reset each epoch), compute_loss(x=, y=, y_pred=),
compute_metrics, and a loss per output logged beside the total. Checked against the built-in fit on the
same data and seed, or against the SGD steps of a linear model computed by hand."""
import numpy as np
import pytest
from fit_helpers import fresh_session, regression_data  # noqa: F401  (fresh_session: autouse)

import autodiff_viz as adv
from autodiff_viz import layers, optimizers


class GuideModel(adv.Model):
    """The guide's first example, word for word (adv. in place of keras./tf.)."""

    def train_step(self, data):
        x, y = data
        with adv.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


class ComputeMetricsModel(adv.Model):
    """The loss tracker by hand, the compiled metrics through compute_metrics (Keras 3's own step)."""

    def train_step(self, data):
        x, y, sample_weight = data if len(data) == 3 else (*data, None)
        with adv.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
        self.metrics[0].update_state(loss)
        return self.compute_metrics(x, y, y_pred, sample_weight)


class SuperModel(adv.Model):
    def train_step(self, data):
        return super().train_step(data)


def linear(cls=adv.Model, lr=0.05, **compile_kwargs):
    x = layers.Input((3,), dtype="float64")
    model = cls(x, layers.Dense(1, dtype="float64")(x))
    model.compile(optimizer=optimizers.SGD(lr), **{"loss": "mse", "metrics": ["mae"], **compile_kwargs})
    return model


def twin_of(model, cls):
    other = linear(cls)
    other.set_weights(model.get_weights())
    return other


@pytest.mark.parametrize("cls", [GuideModel, ComputeMetricsModel, SuperModel])
def test_the_guides_train_step_logs_and_trains_as_the_built_in_fit(cls):
    x, y = regression_data(64)
    builtin = linear()
    custom = twin_of(builtin, cls)
    assert isinstance(custom, cls) and [m.name for m in custom.metrics] == ["loss", "compile_metrics"]
    h_builtin = builtin.fit(x, y, epochs=3, batch_size=16, seed=7, verbose=0)
    h_custom = custom.fit(x, y, epochs=3, batch_size=16, seed=7, verbose=0)
    assert list(h_custom.history) == ["loss", "mae"] == list(h_builtin.history)   # compile_metrics flattened
    for key in ("loss", "mae"):          # equal batches: the guide's unweighted batch mean is the built-in's
        np.testing.assert_allclose(h_custom.history[key], h_builtin.history[key], rtol=1e-12)
    for a, b in zip(custom.get_weights(), builtin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert h_custom.history["loss"][-1] < h_custom.history["loss"][0]


def test_train_on_batch_calls_the_step_with_data_and_returns_its_logs():
    x, y = regression_data(8)
    builtin = linear()
    custom = twin_of(builtin, GuideModel)
    expected = builtin.train_on_batch(x, y, return_dict=True)
    assert custom.train_on_batch(x, y, return_dict=True) == pytest.approx(expected, rel=1e-12)
    assert custom.train_on_batch(x, y) == pytest.approx(builtin.train_on_batch(x, y), rel=1e-12)


class EvalModel(adv.Model):
    """The guide's test_step, counting its calls."""

    def test_step(self, data):
        self.calls += 1
        x, y = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_test_step_serves_evaluate_and_the_validation_of_fit():
    x, y = regression_data(48)
    model = linear(EvalModel)
    model.calls = 0
    p = model.predict(x[:32])
    logs = model.evaluate(x[:32], y[:32], batch_size=16, verbose=0, return_dict=True)
    assert model.calls == 2
    assert logs == pytest.approx({"loss": np.mean((p - y[:32]) ** 2), "mae": np.mean(np.abs(p - y[:32]))}, rel=1e-12)
    assert model.evaluate(x[:32], y[:32], batch_size=16, verbose=0) == pytest.approx([logs["loss"], logs["mae"]])
    history = model.fit(x[32:], y[32:], epochs=2, batch_size=16, validation_data=(x[:32], y[:32]), verbose=0)
    assert list(history.history) == ["loss", "mae", "val_loss", "val_mae"]
    p = model.predict(x[:32])
    assert history.history["val_loss"][-1] == pytest.approx(np.mean((p - y[:32]) ** 2), rel=1e-12)
    assert history.history["val_mae"][-1] == pytest.approx(np.mean(np.abs(p - y[:32])), rel=1e-12)
    assert model.calls == 2 + 2 + 2 + 2                 # two evaluates, then two batches per epoch


class SeenModel(adv.Model):
    def train_step(self, data):
        self.seen.append(data)
        return super().train_step(data)


def test_sample_and_class_weights_reach_data_as_a_third_entry():
    x, y = regression_data(12)
    w = np.linspace(0.5, 2.0, 12)
    builtin = linear()
    model = twin_of(builtin, SeenModel)
    model.seen = []
    history = model.fit(x, y, sample_weight=w, batch_size=4, shuffle=False, verbose=0)
    assert [len(d) for d in model.seen] == [3, 3, 3]
    np.testing.assert_array_equal(np.concatenate([d[2] for d in model.seen]), w)
    np.testing.assert_array_equal(np.concatenate([d[0] for d in model.seen]), x)
    expected = builtin.fit(x, y, sample_weight=w, batch_size=4, shuffle=False, verbose=0)
    assert history.history["loss"] == pytest.approx(expected.history["loss"], rel=1e-12)

    labels = np.arange(6) % 2
    clf = SeenModel(*_binary_graph())
    clf.compile(optimizer=optimizers.SGD(0.1), loss="binary_crossentropy")
    clf.seen = []
    clf.fit(np.eye(6, 3), labels, class_weight={0: 1.0, 1: 3.0}, batch_size=6, shuffle=False, verbose=0)
    np.testing.assert_array_equal(clf.seen[0][2], np.where(labels == 1, 3.0, 1.0))
    clf.seen = []
    clf.fit(np.eye(6, 3), labels, batch_size=6, verbose=0)
    assert len(clf.seen[0]) == 2


def _binary_graph():
    x = layers.Input((3,), dtype="float64")
    return x, layers.Dense(1, activation="sigmoid", dtype="float64")(x)


class OwnTrackers(adv.Model):
    """The guide's "going lower-level" model: its own loss, trackers and metrics property; compiled with
    an optimizer alone."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = adv.metrics.Mean(name="loss")
        self.mae_metric = adv.metrics.MeanAbsoluteError(name="mae")
        self.loss_fn = adv.losses.MeanSquaredError()

    def train_step(self, data):
        x, y = data
        with adv.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.loss_fn(y, y_pred)
        self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


def test_own_trackers_listed_in_metrics_are_reset_at_each_epoch():
    x, y = regression_data(32)
    xi = layers.Input((3,), dtype="float64")
    model = OwnTrackers(xi, layers.Dense(1, dtype="float64")(xi))
    model.compile(optimizer=optimizers.SGD(0.05))
    W, b = (w.copy() for w in model.get_weights())
    losses, maes = [], []
    for _ in range(2):                          # SGD on mse by hand, batches of 8 in order
        for s in range(0, 32, 8):
            xb, yb = x[s:s + 8], y[s:s + 8]
            err = xb @ W + b - yb
            losses.append(np.mean(err ** 2))
            maes.append(np.mean(np.abs(err)))
            W, b = W - 0.05 * 2 * xb.T @ err / 8, b - 0.05 * 2 * err.mean(0)
    history = model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    assert history.history["loss"] == pytest.approx([np.mean(losses[:4]), np.mean(losses[4:])], rel=1e-12)
    assert history.history["mae"] == pytest.approx([np.mean(maes[:4]), np.mean(maes[4:])], rel=1e-12)
    assert history.history["loss"][1] != pytest.approx(np.mean(losses), rel=1e-6)   # not the running mean
    np.testing.assert_allclose(model.get_weights()[0], W, rtol=1e-12)


def test_metrics_lists_the_loss_tracker_compile_metrics_and_metrics_held_as_attributes():
    x, y = regression_data(16)
    model = linear(metrics=None)
    assert [m.name for m in model.metrics] == ["loss"]
    model = linear()
    model.extra = adv.metrics.Mean(name="extra")
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert model.metrics_names == ["loss", "compile_metrics", "extra"]
    assert model.metrics[1].result() == pytest.approx({"mae": model.history.history["mae"][0]})
    assert model.get_metrics_result() == pytest.approx({"loss": model.history.history["loss"][0],
                                                        "mae": model.history.history["mae"][0], "extra": 0.0})
    model.reset_metrics()
    assert model.get_metrics_result() == {"loss": 0.0, "mae": 0.0, "extra": 0.0}
    with pytest.raises(RuntimeError, match="compile"):
        GuideModel(*_binary_graph()).fit(x, y, verbose=0)


def test_compute_loss_takes_keras_keywords_and_keeps_its_positional_order():
    x, y = regression_data(10)
    w = np.linspace(0.0, 1.0, 10)
    model = linear()
    y_pred = model(x)
    plain = model.compute_loss(y, y_pred).numpy()
    assert plain == pytest.approx(np.mean((y_pred.numpy() - y) ** 2), rel=1e-12)
    assert model.compute_loss(x=x, y=y, y_pred=y_pred).numpy() == plain
    assert model.compute_loss(x=x, y=y, y_pred=y_pred, training=False).numpy() == plain
    assert model.compute_loss(y=y, y_pred=y_pred, sample_weight=w).numpy() == \
        model.compute_loss(y, y_pred, w).numpy() == pytest.approx(np.mean(w * (y_pred.numpy() - y)[:, 0] ** 2))
    with pytest.raises(TypeError, match=r"needs y_pred.*pass keywords"):
        model.compute_loss(y=y)


class KerasLoss(adv.Model):
    """A compute_loss override in Keras 3's form, with x first and training, used by the built-in steps."""

    def compute_loss(self, x, y, y_pred, sample_weight=None, training=True):
        self.calls.append(training)
        return super().compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight, x=x) * 2.0


def test_a_keras_form_compute_loss_override_is_called_with_x_and_training():
    x, y = regression_data(8)
    model = linear(KerasLoss, lr=0.0)
    model.calls = []
    history = model.fit(x, y, batch_size=8, validation_data=(x, y), verbose=0)
    assert model.calls == [True, False]
    assert history.history["val_loss"][0] == pytest.approx(2 * np.mean((model.predict(x) - y) ** 2), rel=1e-12)


class Returns(adv.Model):
    def train_step(self, data):
        x, y = data
        with adv.GradientTape():
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        return self.returned(loss, y_pred)


@pytest.mark.parametrize("returned, match", [
    (lambda loss, y_pred: loss, r"train_step\(self, data\) returned Tensor, not a dict of logs.*self\.metrics"),
    (lambda loss, y_pred: (loss, y_pred), r"returned tuple.*takes \(self, x, y, sample_weight=None\) instead"),
    (lambda loss, y_pred: {"loss": y_pred}, r"logs\['loss'\] = an array of shape \(8, 1\).*one number"),
    (lambda loss, y_pred: {"m": adv.metrics.Mean()}, r"logs\['m'\] = the metric object Mean; return its \.result"),
])
def test_a_step_that_does_not_return_a_dict_of_numbers_is_told_what_to_return(returned, match):
    x, y = regression_data(8)
    model = linear(Returns)
    model.returned = returned
    with pytest.raises(TypeError, match=match):
        model.fit(x, y, batch_size=8, verbose=0)


def test_a_test_step_of_the_wrong_form_is_refused_before_any_batch():
    class Old(adv.Model):
        def test_step(self, x, y):
            raise AssertionError("never called")

    class Listing(adv.Model):
        def test_step(self, data):
            return [1.0]
    x, y = regression_data(8)
    with pytest.raises(TypeError, match=r"test_step must take one argument besides self, data"):
        linear(Old).evaluate(x, y, verbose=0)
    with pytest.raises(TypeError, match=r"test_step\(self, data\) returned list"):
        linear(Listing).evaluate(x, y, verbose=0)


def two_heads(cls=adv.Model):
    x = layers.Input((3,), name="x", dtype="float64")
    model = cls(x, [layers.Dense(1, name="a", dtype="float64")(x), layers.Dense(2, name="b", dtype="float64")(x)])
    model.compile(optimizer=optimizers.SGD(0.0), loss=["mse", "mae"], loss_weights=[0.5, 3.0])
    return model


def test_each_outputs_loss_is_logged_beside_the_total_as_keras_3():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(8, 3))
    ys = [rng.normal(size=(8, 1)), rng.normal(size=(8, 2))]
    model = two_heads()
    pa, pb = model.predict(x)
    a_loss, b_loss = np.mean((pa - ys[0]) ** 2), np.mean(np.abs(pb - ys[1]))      # before loss_weights
    history = model.fit(x, ys, batch_size=4, shuffle=False, validation_data=(x, ys), verbose=0)
    assert list(history.history) == ["loss", "a_loss", "b_loss", "val_loss", "val_a_loss", "val_b_loss"]
    assert history.history["a_loss"][0] == pytest.approx(a_loss, rel=1e-12)
    assert history.history["b_loss"][0] == pytest.approx(b_loss, rel=1e-12)
    assert history.history["loss"][0] == pytest.approx(0.5 * a_loss + 3.0 * b_loss, rel=1e-12)
    assert history.history["val_b_loss"][0] == pytest.approx(b_loss, rel=1e-12)
    assert model.metrics_names == ["loss", "a_loss", "b_loss"]
    logs = model.evaluate(x, ys, verbose=0, return_dict=True)
    assert logs == pytest.approx({"loss": 0.5 * a_loss + 3.0 * b_loss, "a_loss": a_loss, "b_loss": b_loss})
    # the list form, as Keras 3's _flatten_metrics_in_order: the loss, then each output's loss
    assert model.evaluate(x, ys, verbose=0) == pytest.approx([logs["loss"], a_loss, b_loss])


def test_the_guides_loop_logs_each_outputs_loss_too():
    class Heads(adv.Model):
        def train_step(self, data):
            x, y = data
            with adv.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
            self.metrics[0].update_state(loss)
            return self.compute_metrics(x, y, y_pred, None)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 3))
    ys = [rng.normal(size=(8, 1)), rng.normal(size=(8, 2))]
    builtin, custom = two_heads(), two_heads(Heads)
    custom.set_weights(builtin.get_weights())
    expected = builtin.fit(x, ys, batch_size=4, epochs=2, verbose=0, seed=1).history
    got = custom.fit(x, ys, batch_size=4, epochs=2, verbose=0, seed=1).history
    assert list(got) == list(expected) == ["loss", "a_loss", "b_loss"]
    for key in got:
        assert got[key] == pytest.approx(expected[key], rel=1e-12)


class GuideWeighted(adv.Model):
    """The guide's "Supporting sample_weight & class_weight" example."""

    def train_step(self, data):
        if len(data) == 3:
            x, y, sample_weight = data
        else:
            sample_weight = None
            x, y = data
        with adv.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred, sample_weight=sample_weight)
        return {m.name: m.result() for m in self.metrics}


def test_the_guides_sample_weight_step_trains_as_the_built_in_fit_with_sample_weights():
    x, y = regression_data(32)
    w = np.linspace(0.0, 2.0, 32)
    builtin = linear()
    custom = twin_of(builtin, GuideWeighted)
    expected = builtin.fit(x, y, sample_weight=w, epochs=2, batch_size=8, seed=3, verbose=0).history
    got = custom.fit(x, y, sample_weight=w, epochs=2, batch_size=8, seed=3, verbose=0).history
    assert list(got) == ["loss", "mae"]
    for key in got:                             # compiled metrics stay unweighted, as Keras 3's metrics=
        assert got[key] == pytest.approx(expected[key], rel=1e-12)


def test_trackers_take_keras_sample_weight():
    mean = adv.metrics.Mean(name="loss")
    mean.update_state(np.array([1.0, 2.0, 3.0]), sample_weight=[1.0, 0.0, 1.0])
    assert mean.result() == pytest.approx((1.0 + 3.0) / 2)
    mean.update_state(10.0, sample_weight=2)                 # a batch loss counted by its batch size
    assert mean.result() == pytest.approx((1.0 + 3.0 + 2 * 10.0) / (2 + 2))
    mae = adv.metrics.MeanAbsoluteError(name="mae")
    y_true, y_pred, w = np.array([[1.0], [2.0], [4.0]]), np.array([[2.0], [2.0], [0.0]]), np.array([3.0, 1.0, 0.5])
    mae.update_state(y_true, y_pred, sample_weight=w)
    assert mae.result() == pytest.approx((3.0 * 1.0 + 1.0 * 0.0 + 0.5 * 4.0) / 4.5)


class Reconstruct(adv.Model):
    """A step without targets, as Keras 3's GAN example: data is the batch of x itself (a tuple for a list x)."""

    def train_step(self, data):
        self.seen.append(type(data))
        x = data[0] if isinstance(data, tuple) else data
        with adv.GradientTape() as tape:
            loss = adv.mean(adv.square(self(x, training=True) - x))
        self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
        self.metrics[0].update_state(loss)
        return {"loss": self.metrics[0].result()}

    def test_step(self, data):
        loss = adv.mean(adv.square(self(data, training=False) - data))
        self.metrics[0].update_state(loss)
        return {"loss": self.metrics[0].result()}


def square_linear(cls=adv.Model):
    x = layers.Input((3,), dtype="float64")
    model = cls(x, layers.Dense(3, dtype="float64")(x))
    model.compile(optimizer=optimizers.SGD(0.05), loss="mse")
    return model


def test_a_step_of_ones_own_trains_without_y_and_gets_the_batch_of_x_as_data():
    x, _ = regression_data(32)
    builtin = square_linear()
    own = square_linear(Reconstruct)
    own.seen = []
    own.set_weights(builtin.get_weights())
    expected = builtin.fit(x, x, epochs=2, batch_size=8, seed=3, verbose=0).history["loss"]
    history = own.fit(x, epochs=2, batch_size=8, seed=3, verbose=0)       # mse against x: the same steps
    assert own.seen == [np.ndarray] * 8
    np.testing.assert_allclose(history.history["loss"], expected, rtol=1e-12)
    for a, b in zip(own.get_weights(), builtin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    p = own.predict(x)
    assert own.evaluate(x, verbose=0) == pytest.approx(np.mean((p - x) ** 2), rel=1e-12)
    own.train_on_batch(x[:8])
    assert own.seen[-1] is np.ndarray


def test_without_y_only_a_step_of_ones_own_runs_and_weights_are_refused():
    x, _ = regression_data(16)
    builtin = square_linear()
    before = [w.copy() for w in builtin.get_weights()]
    for call in (lambda: builtin.fit(x, verbose=0), lambda: builtin.train_on_batch(x),
                 lambda: builtin.evaluate(x, verbose=0)):
        with pytest.raises(ValueError, match=r"y \(the targets\) is missing.*\(self, data\) of your own"):
            call()
    own = square_linear(Reconstruct)
    own.seen = []
    with pytest.raises(ValueError, match=r"fit: sample_weight without y"):
        own.fit(x, sample_weight=np.ones(16), verbose=0)
    with pytest.raises(ValueError, match=r"fit: class_weight without y"):
        own.fit(x, class_weight={0: 1.0}, verbose=0)
    assert own.seen == [] and all(np.array_equal(a, b) for a, b in zip(builtin.get_weights(), before))


class Keras2Step(adv.Model):
    """Keras 2 / tf.keras's guide, as much course material still has it: compiled_loss and compiled_metrics."""

    def train_step(self, data):
        x, y = data
        with adv.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_keras_2s_compiled_loss_and_compiled_metrics_warn_and_train_as_the_built_in_fit():
    x, y = regression_data(32)
    builtin = linear()
    old = twin_of(builtin, Keras2Step)
    expected = builtin.fit(x, y, epochs=2, batch_size=8, seed=5, verbose=0).history
    with pytest.warns(UserWarning) as record:
        history = old.fit(x, y, epochs=2, batch_size=8, seed=5, verbose=0).history
    messages = {str(w.message).split(",")[0] for w in record}
    assert messages == {"model.compiled_loss() is deprecated", "model.compiled_metrics is deprecated"}
    assert all(w.filename == __file__ for w in record)           # at the line of the train_step
    assert list(history) == ["loss", "mae"]
    for key in ("loss", "mae"):
        np.testing.assert_allclose(history[key], expected[key], rtol=1e-12)
    assert [m.name for m in old.compiled_metrics] == ["mae"]
