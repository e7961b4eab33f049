"""Keras 3's guide "Training & evaluation with the built-in methods", ported: a loss from add_loss alone
(compile with an optimizer only), None losses per output, the on_test_*/on_predict_* hooks of fit, evaluate and
predict, compile(weighted_metrics=...) and fit(validation_freq=...). Values by hand or against PyTorch."""
import numpy as np
import pytest
import torch
from fit_helpers import fresh_session, linear_model, regression_data  # noqa: F401  (fresh_session: autouse)

import autodiff_viz as adv
from autodiff_viz import callbacks, layers, optimizers


class LogisticEndpoint(layers.Layer):
    """The guide's endpoint layer: its loss goes to add_loss, its output is the softmax of the logits."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = adv.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        self.add_loss(self.loss_fn(targets, logits, sample_weights))
        return adv.nn.softmax(logits)


def endpoint_model():
    inputs = layers.Input(shape=(3,), name="inputs")
    targets = layers.Input(shape=(10,), name="targets")
    logits = layers.Dense(10, dtype="float64")(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    model = adv.Model(inputs=[inputs, targets], outputs=predictions)
    model.compile(optimizer=optimizers.SGD(0.5))        # no loss argument, as the guide
    return model


def endpoint_data(n=6):
    rng = np.random.default_rng(0)
    return {"inputs": rng.random((n, 3)), "targets": (rng.random((n, 10)) > 0.5).astype(np.float64)}


def torch_bce(model, data):
    """The guide's add_loss value with PyTorch: BCE from logits, mean over the batch and the 10 columns."""
    kernel, bias = model.get_weights()
    logits = torch.tensor(data["inputs"]) @ torch.tensor(kernel) + torch.tensor(bias)
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor(data["targets"])).item()


# ----- 1. a loss from add_loss alone ----------------------------------------------------------------
def test_guide_logistic_endpoint_trains_with_an_optimizer_alone_and_logs_the_added_loss():
    model, data = endpoint_model(), endpoint_data()
    before = torch_bce(model, data)
    history = model.fit(data, batch_size=len(data["inputs"]), epochs=4, verbose=0)
    losses = history.history["loss"]
    assert losses[0] == pytest.approx(before, rel=1e-9)      # the loss of the forward pass before the step
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert model.evaluate(data, verbose=0) == pytest.approx(torch_bce(model, data), rel=1e-9)
    assert model.predict(data).shape == (6, 10)


def test_add_loss_alone_works_in_train_and_test_on_batch_and_beside_a_y():
    model, data = endpoint_model(), endpoint_data()
    expected = torch_bce(model, data)
    assert model.test_on_batch(data) == pytest.approx(expected, rel=1e-9)
    assert model.train_on_batch(data) == pytest.approx(expected, rel=1e-9)
    assert model.test_on_batch(data) < expected
    # a y given anyway is not used by any loss: the same value
    y = np.zeros((6, 10))
    assert model.evaluate(data, y, verbose=0) == pytest.approx(torch_bce(model, data), rel=1e-9)


def test_no_compiled_loss_and_no_added_loss_is_an_error_before_any_weight_changes():
    model = adv.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile(optimizer="sgd")
    x, y = regression_data(8)
    before = [w.copy() for w in model.get_weights()]
    for run in (lambda: model.fit(x, y, verbose=0), lambda: model.train_on_batch(x, y),
                lambda: model.evaluate(x, y, verbose=0), lambda: model.fit(x, verbose=0)):
        with pytest.raises(ValueError, match=r"no loss to compute.*loss=\.\.\. to model\.compile\(\).*add_loss"):
            run()
    for w, w0 in zip(model.get_weights(), before):
        np.testing.assert_array_equal(w, w0)


def test_none_for_every_output_is_no_loss_at_all():
    model = two_heads()
    model.compile(optimizer="sgd", loss=[None, None])
    x, ys = head_data()
    with pytest.raises(ValueError, match="no loss to compute"):
        model.fit(x, ys, verbose=0)


# ----- 2. None loss for an output -------------------------------------------------------------------
def two_heads(loss=None):
    x = layers.Input((3,), name="x")
    a = layers.Dense(2, name="a", dtype="float64")(x)
    b = layers.Dense(3, name="b", activation="softmax", dtype="float64")(x)
    model = adv.Model(x, [a, b])
    if loss is not None:
        model.compile(optimizer=optimizers.SGD(0.1), loss=loss)
    return model


def head_data(n=8):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 3))
    yb = np.eye(3)[np.arange(n) % 3]
    return x, [rng.normal(size=(n, 2)), yb]


def torch_cce(model, x, yb):
    probs = torch.tensor(model.predict(x)[1])
    return -(torch.tensor(yb) * torch.log(probs)).sum(-1).mean().item()


@pytest.mark.parametrize("loss", [[None, adv.losses.CategoricalCrossentropy()],
                                  {"a": None, "b": adv.losses.CategoricalCrossentropy()}],
                         ids=["list", "dict"])
def test_a_none_loss_leaves_its_output_out_and_its_targets_may_be_left_out(loss):
    model = two_heads(loss)
    x, (ya, yb) = head_data()
    expected = torch_cce(model, x, yb)
    for y in ([ya, yb], [yb], yb, {"a": ya, "b": yb}, {"b": yb}):
        logs = model.evaluate(x, y, verbose=0, return_dict=True)
        assert logs == {"loss": pytest.approx(expected, rel=1e-9)}      # one output with a loss: no b_loss (Keras 3)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['a/kernel', 'a/bias'\]"):
        history = model.fit(x, {"b": yb}, batch_size=len(x), epochs=2, verbose=0)   # as Keras 3's optimizer
    assert history.history["loss"][0] == pytest.approx(expected, rel=1e-9)
    assert set(history.history) == {"loss"}
    assert torch_cce(model, x, yb) < expected


def test_per_output_losses_are_logged_for_the_outputs_that_have_one():
    x_in = layers.Input((3,), name="x")
    a = layers.Dense(2, name="a", dtype="float64")(x_in)
    b = layers.Dense(1, name="b", dtype="float64")(x_in)
    c = layers.Dense(1, name="c", dtype="float64")(x_in)
    model = adv.Model(x_in, [a, b, c])
    model.compile(optimizer="sgd", loss=["mse", None, "mae"])
    x, (ya, _) = head_data()
    yc = x[:, :1]
    pa, _, pc = model.predict(x)
    logs = model.evaluate(x, [ya, yc], verbose=0, return_dict=True)
    mse, mae = np.mean((pa - ya) ** 2), np.mean(np.abs(pc - yc))
    assert logs == {"loss": pytest.approx(mse + mae, rel=1e-9), "a_loss": pytest.approx(mse, rel=1e-9),
                    "c_loss": pytest.approx(mae, rel=1e-9)}


def test_partial_targets_of_the_wrong_count_name_both_forms():
    model = two_heads([None, "categorical_crossentropy"])
    x, (ya, yb) = head_data()
    with pytest.raises(ValueError, match=r"list of 2 target arrays, or the 1 of the outputs that have a loss"):
        model.evaluate(x, [ya, yb, yb], verbose=0)


# ----- 3. on_test_* and on_predict_* hooks ----------------------------------------------------------
class Recorder(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def _log(self, name, *args):
        self.calls.append((name, *args))

    def on_train_begin(self, logs=None): self._log("train_begin")
    def on_train_end(self, logs=None): self._log("train_end")
    def on_epoch_begin(self, epoch, logs=None): self._log("epoch_begin", epoch)
    def on_epoch_end(self, epoch, logs=None): self._log("epoch_end", epoch, sorted(logs))
    def on_train_batch_begin(self, batch, logs=None): self._log("train_batch_begin", batch)
    def on_train_batch_end(self, batch, logs=None): self._log("train_batch_end", batch)
    def on_test_begin(self, logs=None): self._log("test_begin")
    def on_test_end(self, logs=None): self._log("test_end", logs)
    def on_test_batch_begin(self, batch, logs=None): self._log("test_batch_begin", batch)
    def on_test_batch_end(self, batch, logs=None): self._log("test_batch_end", batch, sorted(logs))
    def on_predict_begin(self, logs=None): self._log("predict_begin")
    def on_predict_end(self, logs=None): self._log("predict_end")
    def on_predict_batch_begin(self, batch, logs=None): self._log("predict_batch_begin", batch)

    def on_predict_batch_end(self, batch, logs=None):
        self._log("predict_batch_end", batch, sorted(logs), logs["outputs"].shape)


def test_fit_calls_the_test_hooks_around_each_validation_with_the_validation_logs():
    x, y = regression_data(8)
    model, rec = linear_model(), Recorder()
    history = model.fit(x, y, batch_size=4, epochs=1, validation_data=(x[:6], y[:6]), callbacks=[rec],
                        verbose=0)
    val = {"loss": history.history["val_loss"][0]}
    assert [c[:2] for c in rec.calls] == [
        ("train_begin",), ("epoch_begin", 0), ("train_batch_begin", 0), ("train_batch_end", 0),
        ("train_batch_begin", 1), ("train_batch_end", 1), ("test_begin",), ("test_batch_begin", 0),
        ("test_batch_end", 0), ("test_batch_begin", 1), ("test_batch_end", 1), ("test_end", val), ("epoch_end", 0),
        ("train_end",)]
    assert rec.calls[-2] == ("epoch_end", 0, ["loss", "val_loss"])


def test_fit_with_a_generator_of_validation_batches_calls_the_test_hooks_per_batch():
    x, y = regression_data(8)
    model, rec = linear_model(), Recorder()
    batches = iter([(x[:4], y[:4]), (x[4:], y[4:])])
    model.fit(x, y, batch_size=8, validation_data=batches, callbacks=[rec], verbose=0)
    tests = [c[:2] for c in rec.calls if c[0].startswith("test")]
    assert tests == [("test_begin",), ("test_batch_begin", 0), ("test_batch_end", 0), ("test_batch_begin", 1),
                     ("test_batch_end", 1), ("test_end", tests[-1][1])]


def test_evaluate_and_predict_take_callbacks_and_call_their_hooks_in_keras_order():
    x, y = regression_data(10)
    model, rec = linear_model(), Recorder()
    logs = model.evaluate(x, y, batch_size=4, verbose=0, callbacks=rec, return_dict=True)
    assert rec.calls == [("test_begin",), ("test_batch_begin", 0), ("test_batch_end", 0, ["loss"]),
                         ("test_batch_begin", 1), ("test_batch_end", 1, ["loss"]),
                         ("test_batch_begin", 2), ("test_batch_end", 2, ["loss"]), ("test_end", logs)]
    rec.calls.clear()
    out = model.predict(x, batch_size=4, callbacks=[rec])
    assert rec.calls == [("predict_begin",), ("predict_batch_begin", 0), ("predict_batch_end", 0, ["outputs"], (4, 1)),
                         ("predict_batch_begin", 1), ("predict_batch_end", 1, ["outputs"], (4, 1)),
                         ("predict_batch_begin", 2), ("predict_batch_end", 2, ["outputs"], (2, 1)),
                         ("predict_end",)]
    assert out.shape == (10, 1)


def test_evaluate_callbacks_keep_the_positional_order_steps_then_callbacks_then_return_dict():
    x, y = regression_data(8)
    model, rec = linear_model(), Recorder()
    logs = model.evaluate(x, y, 4, 0, None, 1, [rec], True)
    assert [c[0] for c in rec.calls] == ["test_begin", "test_batch_begin", "test_batch_end", "test_end"]
    assert set(logs) == {"loss"}


# ----- 4. weighted_metrics and validation_freq ------------------------------------------------------
def test_weighted_metrics_are_the_sample_weighted_mean_and_take_weighted_names_on_a_clash():
    x, y = regression_data(10)
    w = np.linspace(0.0, 3.0, len(x))
    model = linear_model()
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"], weighted_metrics=["mae", "mse"])
    err = (model.predict(x) - y)[:, 0]
    logs = model.evaluate(x, y, batch_size=4, sample_weight=w, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "mae", "weighted_mae", "mse"]         # Keras 3's CompileMetrics names
    assert logs["mae"] == pytest.approx(np.mean(np.abs(err)), rel=1e-9)
    assert logs["weighted_mae"] == pytest.approx(np.sum(w * np.abs(err)) / np.sum(w), rel=1e-9)
    assert logs["mse"] == pytest.approx(np.sum(w * err ** 2) / np.sum(w), rel=1e-9)
    unweighted = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert unweighted["weighted_mae"] == pytest.approx(unweighted["mae"], rel=1e-12)


def test_weighted_metrics_per_output_take_each_outputs_weights():
    model = two_heads()
    model.compile(optimizer="sgd", loss=["mse", "categorical_crossentropy"],
                  weighted_metrics={"b": ["accuracy"]})
    x, (ya, yb) = head_data()
    wb = np.arange(len(x), dtype=np.float64)
    hit = (np.argmax(model.predict(x)[1], -1) == np.argmax(yb, -1)).astype(float)
    logs = model.evaluate(x, [ya, yb], sample_weight=[np.ones(len(x)), wb], verbose=0, return_dict=True)
    assert logs["b_accuracy"] == pytest.approx(np.sum(wb * hit) / np.sum(wb), rel=1e-9)


def test_weighted_metrics_are_checked_at_compile():
    model = two_heads()
    with pytest.raises(ValueError, match=r"weighted_metrics must say which output"):
        model.compile(optimizer="sgd", loss="mse", weighted_metrics=["mae"])


def epoch_logs(validation_freq, epochs=4):
    x, y = regression_data(8)
    model, rec = linear_model(), Recorder()
    history = model.fit(x, y, epochs=epochs, validation_data=(x, y), validation_freq=validation_freq,
                        callbacks=[rec], verbose=0)
    ends = [(c[1], "val_loss" in c[2]) for c in rec.calls if c[0] == "epoch_end"]
    tests = sum(c[0] == "test_begin" for c in rec.calls)
    return ends, tests, history


def test_validation_freq_two_validates_after_every_second_epoch():
    ends, tests, history = epoch_logs(2)
    assert ends == [(0, False), (1, True), (2, False), (3, True)]
    assert tests == 2 and len(history.history["val_loss"]) == 2


def test_validation_freq_list_names_the_epochs_counted_from_one():
    ends, tests, history = epoch_logs([1, 3])
    assert ends == [(0, True), (1, False), (2, True), (3, False)]
    assert tests == 2 and len(history.history["val_loss"]) == 2


@pytest.mark.parametrize("bad", [0, 1.5, "2", (1, 2)])
def test_validation_freq_of_another_form_is_refused_before_training(bad):
    x, y = regression_data(8)
    model = linear_model()
    before = model.get_weights()[0].copy()
    with pytest.raises(ValueError, match="validation_freq must be a positive integer"):
        model.fit(x, y, validation_data=(x, y), validation_freq=bad, verbose=0)
    np.testing.assert_array_equal(model.get_weights()[0], before)


def test_evaluate_lists_the_values_in_keras_3_order():
    """Keras 3.15 (``_flatten_metrics_in_order``), run on the same model: two outputs named zz and aa with
    metrics give [loss, zz_loss, aa_loss, aa_mse, zz_mae, zz_mse]; one output with metrics=["mse", "mae"]
    gives [loss, mse, mae]."""
    inp = adv.layers.Input((3,))
    model = adv.Model(inp, [adv.layers.Dense(1, name="zz")(inp), adv.layers.Dense(1, name="aa")(inp)])
    model.compile("sgd", ["mse", "mae"], metrics=[["mse", "mae"], ["mse"]])
    x, ys = np.ones((4, 3)), [np.zeros((4, 1)), np.ones((4, 1))]
    logs = model.evaluate(x, ys, verbose=0, return_dict=True)
    order = ["loss", "zz_loss", "aa_loss", "aa_mse", "zz_mae", "zz_mse"]
    assert sorted(logs) == sorted(order)
    assert model.evaluate(x, ys, verbose=0) == pytest.approx([logs[k] for k in order])
    single = adv.Sequential([adv.layers.Input((3,)), adv.layers.Dense(1)])
    single.compile("sgd", "mse", metrics=["mse", "mae"])
    logs = single.evaluate(x, ys[0], verbose=0, return_dict=True)
    assert single.evaluate(x, ys[0], verbose=0) == pytest.approx([logs["loss"], logs["mse"], logs["mae"]])
    plain = model
    plain.compile("sgd", ["mse", "mae"])
    logs = plain.evaluate(x, ys, verbose=0, return_dict=True)
    assert plain.evaluate(x, ys, verbose=0) == pytest.approx([logs["loss"], logs["zz_loss"], logs["aa_loss"]])
