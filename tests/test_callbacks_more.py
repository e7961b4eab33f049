"""LambdaCallback, ModelCheckpoint, LearningRateScheduler, ReduceLROnPlateau: each in a real small fit."""
import os

import numpy as np
import pytest
from fit_helpers import fresh_session, linear_model, regression_data  # noqa: F401  (fresh_session: autouse)

import autodiff_viz as adv
from autodiff_viz import callbacks, layers, optimizers


def inject(name, values):
    """A callback that writes ``values[epoch]`` into the epoch's logs (listed before the callback under test)."""
    return callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: logs.update({name: values[epoch]}))


# ----- LambdaCallback ---------------------------------------------------------
def test_lambda_callback_calls_each_function_with_keras_arguments():
    calls = []
    cb = callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append(("train_begin", logs)),
        on_epoch_begin=lambda epoch, logs: calls.append(("epoch_begin", epoch, logs)),
        on_train_batch_begin=lambda batch, logs: calls.append(("batch_begin", batch, logs)),
        on_train_batch_end=lambda batch, logs: calls.append(("batch_end", batch, sorted(logs))),
        on_epoch_end=lambda epoch, logs: calls.append(("epoch_end", epoch, dict(logs))),
        on_train_end=lambda logs: calls.append(("train_end", dict(logs))))
    x, y = regression_data(8)
    history = linear_model().fit(x, y, epochs=2, batch_size=4, validation_data=(x, y), verbose=0, callbacks=cb)
    epoch_logs = [c[2] for c in calls if c[0] == "epoch_end"]
    assert [c[:2] for c in calls] == [
        ("train_begin", None),
        ("epoch_begin", 0), ("batch_begin", 0), ("batch_end", 0), ("batch_begin", 1), ("batch_end", 1),
        ("epoch_end", 0),
        ("epoch_begin", 1), ("batch_begin", 0), ("batch_end", 0), ("batch_begin", 1), ("batch_end", 1),
        ("epoch_end", 1),
        ("train_end", epoch_logs[1])]
    assert all(c[2] is None for c in calls if c[0] in ("epoch_begin", "batch_begin"))
    assert all(c[2] == ["loss"] for c in calls if c[0] == "batch_end")
    assert [e["val_loss"] for e in epoch_logs] == history.history["val_loss"]
    assert calls[-1][1] == epoch_logs[-1]


def test_lambda_callback_old_batch_names_and_early_errors():
    seen = []
    cb = callbacks.LambdaCallback(on_batch_end=lambda batch, logs: seen.append((batch, round(logs["loss"], 12))))
    x, y = regression_data(8)
    history = linear_model().fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[cb])
    assert seen == [(0, round(history.history["loss"][0], 12))]
    with pytest.raises(TypeError, match=r"LambdaCallback: on_epoch_end is called as f\(epoch, logs\).*"
                                        r"on_epoch_end=lambda epoch, logs"):
        callbacks.LambdaCallback(on_epoch_end=lambda epoch: None)
    with pytest.raises(TypeError, match="LambdaCallback: on_epoch_ends is not a Keras hook"):
        callbacks.LambdaCallback(on_epoch_ends=lambda epoch, logs: None)
    with pytest.raises(TypeError, match="LambdaCallback: on_train_end must be a function"):
        callbacks.LambdaCallback(on_train_end="print")


# ----- ModelCheckpoint ----------------------------------------------------------
def test_checkpoint_files_have_formatted_names_and_hold_that_epochs_weights(tmp_path):
    weights = []
    keep = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    path = tmp_path / "run" / "ckpt-{epoch:02d}-{loss:.3f}.weights.npz"       # the folder is created
    ckpt = callbacks.ModelCheckpoint(path, save_weights_only=True)
    x, y = regression_data(8)
    model = linear_model()
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0, callbacks=[ckpt, keep])
    names = [f"ckpt-{e + 1:02d}-{loss:.3f}.weights.npz" for e, loss in enumerate(history.history["loss"])]
    assert sorted(os.listdir(tmp_path / "run")) == sorted(names)
    for name, expected in zip(names, weights):
        other = linear_model()
        other.load_weights(tmp_path / "run" / name)
        for got, want in zip(other.get_weights(), expected):
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(weights[0][0], weights[2][0])


@pytest.mark.parametrize("mode, saved", [("min", [1, 2, 4]), ("max", [1, 3]), ("auto", [1, 2, 4])])
def test_save_best_only_writes_only_on_improvement(tmp_path, mode, saved):
    scores = [3.0, 1.0, 4.0, 0.5, 0.5]                   # a tie is not an improvement
    weights = []
    keep = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    each = callbacks.ModelCheckpoint(tmp_path / "best-{epoch}.npz", monitor="val_score", mode=mode,
                                     save_best_only=True, save_weights_only=True)
    one = callbacks.ModelCheckpoint(tmp_path / "best.npz", monitor="val_score", mode=mode,
                                    save_best_only=True, save_weights_only=True)
    x, y = regression_data(8)
    model = linear_model()
    model.fit(x, y, epochs=5, batch_size=4, verbose=0, callbacks=[inject("val_score", scores), each, one, keep])
    assert sorted(os.listdir(tmp_path)) == sorted([f"best-{e}.npz" for e in saved] + ["best.npz"])
    model.load_weights(tmp_path / "best.npz")                           # the last improvement's weights
    np.testing.assert_array_equal(model.get_weights()[0], weights[saved[-1] - 1][0])
    assert one.best == scores[saved[-1] - 1]


def test_checkpoint_every_n_batches_counts_across_epochs(tmp_path):
    ckpt = callbacks.ModelCheckpoint(tmp_path / "b-{epoch}-{batch}.npz", save_freq=3, save_weights_only=True)
    x, y = regression_data(8)
    linear_model().fit(x, y, epochs=2, batch_size=2, verbose=0, callbacks=[ckpt])    # 4 batches an epoch
    assert sorted(os.listdir(tmp_path)) == ["b-1-3.npz", "b-2-2.npz"]


def test_checkpoint_missing_monitor_warns_with_the_logs_and_saves_anyway(tmp_path):
    ckpt = callbacks.ModelCheckpoint(tmp_path / "w.npz", save_best_only=True, save_weights_only=True)
    x, y = regression_data(8)
    with pytest.warns(UserWarning, match=r"ModelCheckpoint is watching 'val_loss'.*Available: \['loss'\]"):
        linear_model().fit(x, y, epochs=1, verbose=0, callbacks=[ckpt])
    assert os.listdir(tmp_path) == ["w.npz"]


def test_checkpoint_field_missing_from_logs_names_the_available_ones(tmp_path):
    ckpt = callbacks.ModelCheckpoint(tmp_path / "w-{val_loss:.2f}.npz", save_weights_only=True)
    x, y = regression_data(8)
    with pytest.raises(KeyError, match=r"\{val_loss\}.*Available: \['epoch', 'loss'\]"):
        linear_model().fit(x, y, epochs=1, verbose=0, callbacks=[ckpt])


def test_checkpoint_saves_the_whole_model_by_default_as_keras_3(tmp_path):
    """ModelCheckpoint("ckpt-{epoch}.keras"): model.save each epoch; the file loads and predicts the same."""
    x, y = regression_data(16)
    model = linear_model()
    ckpt = callbacks.ModelCheckpoint(tmp_path / "run" / "ckpt-{epoch}.keras", monitor="loss", save_best_only=True)
    assert ckpt.save_weights_only is False
    model.fit(x, y, epochs=2, verbose=0, callbacks=[ckpt])
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["ckpt-1.keras", "ckpt-2.keras"]
    again = adv.models.load_model(tmp_path / "run" / "ckpt-2.keras")
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    assert again.optimizer.iterations == model.optimizer.iterations


@pytest.mark.parametrize("kwargs, message", [
    (dict(filepath="ckpt.weights.h5", save_weights_only=True),
     r"ModelCheckpoint: with save_weights_only=True the filepath must end in '\.npz'.*Keras' format"),
    (dict(filepath="model.keras", save_weights_only=True), r"'\.npz'.*'\.keras' holds the whole model"),
    (dict(filepath="ckpt.weights.npz"), r"ModelCheckpoint: .*must end in '\.keras'.*pass save_weights_only=True"),
    (dict(filepath="ckpt.h5"), r"ModelCheckpoint: the filepath must end in '\.keras'.*'ckpt-\{epoch:02d\}\.keras'"),
    (dict(filepath="c.npz", save_weights_only=True, mode="best"), r"ModelCheckpoint: mode must be 'auto', 'min'"),
    (dict(filepath="c.npz", save_weights_only=True, save_freq=0), r"ModelCheckpoint: save_freq must be 'epoch'"),
    (dict(filepath="c-{}.npz", save_weights_only=True), r"ModelCheckpoint: .*positional field.*\{epoch:02d\}"),
])
def test_checkpoint_bad_arguments_say_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        callbacks.ModelCheckpoint(**kwargs)


# ----- LearningRateScheduler --------------------------------------------------
def test_scheduler_sets_the_rate_each_epoch_and_the_steps_use_it():
    x, y = regression_data(8)
    model = linear_model(lr=0.1)
    W, b = model.get_weights()
    seen = []
    spy = callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: seen.append(model.optimizer.learning_rate))
    sched = callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)
    history = model.fit(x, y, epochs=3, batch_size=len(x), shuffle=False, verbose=0, callbacks=[sched, spy])
    rates = [0.05, 0.025, 0.0125]
    assert seen == pytest.approx(rates, rel=1e-15)
    assert history.history["learning_rate"] == pytest.approx(rates, rel=1e-15)
    for lr in rates:                             # one full-batch SGD step per epoch, at that epoch's rate
        err = x @ W + b - y
        W, b = W - lr * 2 * x.T @ err / len(x), b - lr * 2 * err.mean(0)
    np.testing.assert_allclose(model.get_weights()[0], W, rtol=1e-12)
    np.testing.assert_allclose(model.get_weights()[1], b, rtol=1e-12)


def test_scheduler_of_the_epoch_alone_and_bad_schedules():
    x, y = regression_data(8)
    model = linear_model(lr=0.1)
    history = model.fit(x, y, epochs=3, verbose=0,
                        callbacks=[callbacks.LearningRateScheduler(lambda epoch: 0.1 if epoch < 2 else 0.01)])
    assert history.history["learning_rate"] == [0.1, 0.1, 0.01]
    before = model.get_weights()
    bad = callbacks.LearningRateScheduler(lambda epoch, lr: "fast")
    with pytest.raises(ValueError, match=r"LearningRateScheduler: schedule\(0, 0\.01\) returned str.*lr \* 0\.9"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[bad])
    np.testing.assert_array_equal(model.get_weights()[0], before[0])
    with pytest.raises(TypeError, match="LearningRateScheduler: schedule must be a function"):
        callbacks.LearningRateScheduler(0.1)
    with pytest.raises(TypeError, match=r"LearningRateScheduler: schedule is called as schedule\(epoch, lr\)"):
        callbacks.LearningRateScheduler(lambda: 0.1)


@pytest.mark.parametrize("make", [lambda: callbacks.LearningRateScheduler(lambda epoch, lr: lr),
                                  lambda: callbacks.ReduceLROnPlateau(monitor="loss")])
def test_rate_callbacks_refuse_an_optimizer_with_a_schedule_before_training(make):
    x, y = regression_data(8)
    model = adv.Sequential([layers.Input((3,)), layers.Dense(1, dtype="float64")], dtype="float64")
    model.compile(optimizer=optimizers.SGD(lambda step: 0.1 * 0.5 ** step), loss="mse")
    before = model.get_weights()
    with pytest.raises(TypeError, match=r"(LearningRateScheduler|ReduceLROnPlateau): the optimizer's "
                                        r"learning_rate is a schedule.*SGD\(learning_rate=0\.01\)"):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[make()])
    np.testing.assert_array_equal(model.get_weights()[0], before[0])


# ----- ReduceLROnPlateau --------------------------------------------------------
SCORES = [1.0, 0.9] + [0.9] * 8                       # improves twice, then stalls


@pytest.mark.parametrize("cooldown, rates", [
    # patience 2: epochs 2, 3 stall -> halve after epoch 3; min_lr 0.03 stops the second halving at 0.03.
    # cooldown=2: epoch 4 is not counted (Keras decrements the cooldown first, so epoch 5 counts again).
    (0, [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.03, 0.03, 0.03, 0.03]),
    (2, [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03]),
])
def test_plateau_reduces_after_patience_respecting_cooldown_and_min_lr(cooldown, rates):
    plateau = callbacks.ReduceLROnPlateau(monitor="val_score", factor=0.5, patience=2, cooldown=cooldown,
                                          min_lr=0.03)
    x, y = regression_data(8)
    model = linear_model(lr=0.1)
    history = model.fit(x, y, epochs=10, verbose=0, callbacks=[inject("val_score", SCORES), plateau])
    assert history.history["learning_rate"] == pytest.approx(rates, rel=1e-12)
    assert model.optimizer.learning_rate == pytest.approx(0.03)


def test_plateau_auto_mode_follows_the_name_and_min_delta_counts():
    rising = [0.1 * e for e in range(6)]
    x, y = regression_data(8)
    for monitor, mode, expected in [("val_accuracy", "auto", 0.1), ("val_accuracy", "min", 0.001),
                                    ("val_error", "auto", 0.001)]:
        model = linear_model(lr=0.1)
        plateau = callbacks.ReduceLROnPlateau(monitor=monitor, mode=mode, patience=2)
        model.fit(x, y, epochs=6, verbose=0, callbacks=[inject(monitor, rising), plateau])
        assert model.optimizer.learning_rate == pytest.approx(expected), (monitor, mode)
    model = linear_model(lr=0.1)
    slow = callbacks.ReduceLROnPlateau(monitor="val_score", mode="max", patience=2, min_delta=0.2)
    model.fit(x, y, epochs=6, verbose=0, callbacks=[inject("val_score", rising), slow])   # +0.1 an epoch < 0.2
    assert model.optimizer.learning_rate == pytest.approx(0.001)
    model = linear_model(lr=0.1)
    slow = callbacks.ReduceLROnPlateau(monitor="val_score", patience=2, min_delta=0.2)
    model.fit(x, y, epochs=6, verbose=0, callbacks=[inject("val_score", [-v for v in rising]), slow])
    assert model.optimizer.learning_rate == pytest.approx(0.001)


def test_plateau_and_scheduler_together_log_the_rate_once_per_epoch():
    x, y = regression_data(8)
    both = [callbacks.LearningRateScheduler(lambda epoch, lr: lr), callbacks.ReduceLROnPlateau(monitor="loss")]
    history = linear_model(lr=0.1).fit(x, y, epochs=3, verbose=0, callbacks=both)
    assert history.history["learning_rate"] == [0.1, 0.1, 0.1]


def test_plateau_missing_monitor_warns_with_the_logs():
    x, y = regression_data(8)
    with pytest.warns(UserWarning, match=r"ReduceLROnPlateau is watching 'val_loss'.*not reduced.*"
                                         r"Available: \['learning_rate', 'loss'\]"):
        linear_model().fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.ReduceLROnPlateau()])


@pytest.mark.parametrize("kwargs, message", [
    (dict(factor=1.0), r"ReduceLROnPlateau: factor must be a number in \[0, 1\).*factor=0\.5"),
    (dict(factor=2), r"ReduceLROnPlateau: factor .*never reduce"),
    (dict(mode="lower"), r"ReduceLROnPlateau: mode must be 'auto', 'min' or 'max'.*'min' when lower"),
    (dict(patience=-1), r"ReduceLROnPlateau: patience must be a whole number of epochs >= 0"),
    (dict(min_lr=-0.1), r"ReduceLROnPlateau: min_lr .* >= 0"),
])
def test_plateau_bad_arguments_say_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        callbacks.ReduceLROnPlateau(**kwargs)


def test_verbose_lines_say_what_changed(capsys, tmp_path):
    x, y = regression_data(8)
    cbs = [callbacks.LearningRateScheduler(lambda epoch, lr: 0.05, verbose=1),
           inject("val_score", [1.0, 2.0]),
           callbacks.ModelCheckpoint(tmp_path / "w.npz", monitor="val_score", save_best_only=True,
                                     save_weights_only=True, verbose=1),
           callbacks.ReduceLROnPlateau(monitor="val_score", patience=1, factor=0.5, verbose=1)]
    linear_model().fit(x, y, epochs=2, verbose=0, callbacks=cbs)
    out = capsys.readouterr().out.splitlines()
    assert out == ["Epoch 1: LearningRateScheduler setting learning rate to 0.05.",
                   f"Epoch 1: val_score improved from inf to 1.00000, saving model to {tmp_path / 'w.npz'}",
                   "Epoch 2: LearningRateScheduler setting learning rate to 0.05.",
                   "Epoch 2: val_score did not improve from 1.00000",
                   "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.025."]
