"""fit / evaluate / predict agree with Keras 3 where a tester found them apart: the loss of a
saturated activation, the rank of 1-feature inputs, callbacks, and metrics of several outputs."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import callbacks, layers, optimizers


@pytest.fixture(autouse=True)
def fresh_session():
    layers.clear_session()
    layers.set_random_seed(0)


X4 = np.ones((6, 4))


def saturated(activation, units, loss):
    """A model whose last op is ``activation`` with logits 25 for every sample (far past clipping)."""
    model = adv.Sequential([layers.Input((4,)), layers.Dense(units, activation=activation)])
    model.compile(optimizers.SGD(0.0), loss)
    kernel = np.zeros((4, units))
    kernel[:, 0] = 25.0 / 4
    model.set_weights([kernel, np.zeros(units)])
    return model


@pytest.mark.parametrize("activation, units, loss, expected", [
    ("sigmoid", 1, "binary_crossentropy", 25.0),
    ("softmax", 3, "sparse_categorical_crossentropy", 25.0 + np.log1p(2 * np.exp(-25.0))),
])
def test_loss_val_loss_and_evaluate_agree_for_a_saturated_activation(activation, units, loss, expected):
    model = saturated(activation, units, loss)
    y = np.zeros((6, 1)) if units == 1 else np.full(6, 2)
    history = model.fit(X4, y, validation_data=(X4, y), epochs=1, verbose=0)
    assert history.history["loss"][0] == pytest.approx(expected, rel=1e-5)
    assert history.history["val_loss"][0] == pytest.approx(expected, rel=1e-5)
    assert model.evaluate(X4, y, verbose=0) == pytest.approx(expected, rel=1e-5)


def test_evaluate_keeps_no_layer_output_and_records_nothing_on_an_open_tape():
    model = saturated("sigmoid", 1, "binary_crossentropy")
    with adv.GradientTape() as tape:
        model.evaluate(X4, np.zeros((6, 1)), batch_size=2, verbose=0)
    assert len(tape._nodes) == 0
    assert all(layer._output is None for layer in [model, *model._all_layers()])


XS = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0])
YS = 2 * XS - 1


@pytest.mark.parametrize("make", [
    lambda: adv.Sequential([layers.Dense(units=1, input_shape=[1])]),
    lambda: adv.Sequential([layers.Input((1,)), layers.Dense(1)]),
    lambda: (lambda x: adv.Model(x, layers.Dense(1)(x)))(layers.Input((1,))),
])
def test_a_vector_of_samples_gets_the_missing_feature_axis_as_keras(make):
    model = make()
    model.compile(optimizers.SGD(0.05), "mean_squared_error")
    history = model.fit(XS, YS, epochs=60, verbose=0)
    assert history.history["loss"][-1] < 0.1 * history.history["loss"][0]
    assert model.predict(np.array([10.0])).shape == (1, 1)
    assert model(XS).shape == (6, 1)
    assert np.isfinite(model.evaluate(XS, YS, verbose=0))


def test_an_extra_trailing_axis_of_one_is_dropped_and_other_ranks_are_refused():
    x = layers.Input((3,))
    model = adv.Model(x, layers.Dense(2)(x))
    assert model(np.ones((5, 3, 1))).shape == (5, 2)
    with pytest.raises(ValueError, match=r"expects shape \(None, 3\) \(rank 2\), got .* \(3,\)"):
        model(np.ones(3))
    stacked = adv.Sequential([layers.Input((1,)), layers.Dense(1)])
    with pytest.raises(ValueError, match=r"expects shape \(None, 1\) \(rank 2\), got .* \(2, 3, 4\)"):
        stacked.predict(np.ones((2, 3, 4)))


def test_fit_takes_one_callback_and_refuses_what_is_not_one():
    model = adv.Sequential([layers.Input((1,)), layers.Dense(1)])
    model.compile(optimizers.SGD(0.0), "mse")
    stop = callbacks.EarlyStopping(monitor="loss", patience=0)
    history = model.fit(XS, YS, epochs=5, verbose=0, shuffle=False, callbacks=stop)
    assert history.epoch == [0, 1]
    before = model.get_weights()
    with pytest.raises(TypeError, match=r"callbacks=.*EarlyStopping"):
        model.fit(XS, YS, epochs=1, verbose=0, callbacks=["early_stopping"])
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_old_batch_hooks_are_called_and_stop_training_breaks_after_the_batch():
    seen = []

    class Old(callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            seen.append(f"begin {batch}")

        def on_batch_end(self, batch, logs=None):
            seen.append(f"end {batch}")
            if batch == 1:
                self.model.stop_training = True

    model = adv.Sequential([layers.Input((1,)), layers.Dense(1)])
    model.compile(optimizers.SGD(0.1), "mse")
    history = model.fit(XS, YS, batch_size=1, epochs=3, verbose=0, callbacks=[Old()])
    assert seen == ["begin 0", "end 0", "begin 1", "end 1"]
    assert history.epoch == [0]


def abs_error(y_true, y_pred):
    return np.abs(np.asarray(y_pred) - np.asarray(y_true)).mean(axis=-1)


def two_heads():
    x = layers.Input((3,), name="x")
    h = layers.Dense(4, activation="relu")(x)
    cls = layers.Dense(1, activation="sigmoid", name="cls")(h)
    reg = layers.Dense(1, name="reg")(h)
    return adv.Model(x, [cls, reg])


def head_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3))
    return x, [(x[:, :1] > 0).astype(float), x[:, 1:2]]


@pytest.mark.parametrize("metrics", [{"cls": ["accuracy"], "reg": abs_error}, [["accuracy"], [abs_error]]])
def test_metrics_per_output_are_logged_with_the_output_name(metrics):
    model = two_heads()
    model.compile("sgd", ["binary_crossentropy", "mse"], metrics=metrics)
    x, ys = head_data()
    history = model.fit(x, ys, epochs=1, verbose=0, validation_data=(x, ys))
    assert sorted(history.history) == ["cls_accuracy", "cls_loss", "loss", "reg_abs_error", "reg_loss",
                                       "val_cls_accuracy", "val_cls_loss", "val_loss", "val_reg_abs_error",
                                       "val_reg_loss"]     # a loss per output too, as Keras 3 (since 3.5)
    logs = model.evaluate(x, ys, verbose=0, return_dict=True)
    p = model.predict(x)
    assert logs["cls_accuracy"] == pytest.approx(np.mean((p[0] > 0.5) == (ys[0] > 0.5)))
    assert logs["reg_abs_error"] == pytest.approx(np.mean(np.abs(p[1] - ys[1])))
    bce = -np.mean(ys[0] * np.log(p[0]) + (1 - ys[0]) * np.log(1 - p[0]))
    assert logs["cls_loss"] == pytest.approx(bce, rel=1e-5)
    assert logs["reg_loss"] == pytest.approx(np.mean((p[1] - ys[1]) ** 2), rel=1e-5)
    assert logs["loss"] == pytest.approx(logs["cls_loss"] + logs["reg_loss"], rel=1e-6)


def test_an_ambiguous_metrics_list_for_several_outputs_is_refused_with_the_forms_that_work():
    model = two_heads()
    with pytest.raises(ValueError, match=r"2 outputs.*\{'cls': \[.*\[\['accuracy'\]"):
        model.compile("sgd", "mse", metrics=["accuracy"])
    with pytest.raises(ValueError, match=r"'head'.*\['cls', 'reg'\]"):
        model.compile("sgd", "mse", metrics={"head": ["accuracy"]})
    with pytest.raises(ValueError, match=r"1 lists for the 2 outputs"):
        model.compile("sgd", "mse", metrics=[["accuracy"]])
    assert model.optimizer is None
    single = adv.Sequential([layers.Input((1,)), layers.Dense(1)])
    with pytest.raises(TypeError, match=r"metrics=\[.accuracy.\]"):
        single.compile("sgd", "mse", metrics="accuracy")


def test_train_test_predict_on_batch_as_keras():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(8, 3)), (rng.normal(size=8) > 0).astype(int)

    def model():
        m = adv.Sequential([adv.layers.Input((3,)), adv.layers.Dense(1, activation="sigmoid")])
        m.compile(adv.optimizers.SGD(0.1), "binary_crossentropy", metrics=["accuracy"])
        return m

    a, b = model(), model()
    b.set_weights(a.get_weights())
    history = a.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    loss, accuracy = b.train_on_batch(x, y)
    assert (loss == pytest.approx(history.history["loss"][0])
            and accuracy == pytest.approx(history.history["accuracy"][0]))
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb)
    assert b.test_on_batch(x, y, return_dict=True) == pytest.approx(b.evaluate(x, y, verbose=0, return_dict=True))
    np.testing.assert_array_equal(b.predict_on_batch(x), b.predict(x))
