"""fit(sample_weight=, class_weight=), evaluate(sample_weight=), weighted validation data and
compile(loss_weights=): Keras 3's formulas, checked by hand or against an equivalent unweighted run."""
import numpy as np
import pytest
from fit_helpers import fresh_session, linear_model, regression_data  # noqa: F401  (fresh_session: autouse)

import autodiff_viz as adv
from autodiff_viz import callbacks, layers, optimizers


def twin(model, lr):
    other = linear_model(lr)
    other.set_weights(model.get_weights())
    return other


def classifier(lr=0.1, loss="sparse_categorical_crossentropy"):
    model = adv.Sequential([layers.Input((4,)), layers.Dense(3, activation="softmax", dtype="float64")],
                           dtype="float64")
    model.compile(optimizer=optimizers.SGD(lr), loss=loss)
    return model


def class_data(n=12):
    rng = np.random.default_rng(1)
    return rng.normal(size=(n, 4)), np.arange(n) % 3


def two_heads(lr=0.1):
    x = layers.Input((3,), name="x")
    a = layers.Dense(1, name="a", dtype="float64")(x)
    b = layers.Dense(2, name="b", dtype="float64")(x)
    model = adv.Model(x, [a, b])
    model.compile(optimizer=optimizers.SGD(lr), loss=["mse", "mae"])
    return model


def head_data(n=8):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, 3))
    return x, [x[:, :1] * 2.0, x[:, 1:] - 1.0]


# ----- sample_weight -------------------------------------------------------------------------
def test_one_weighted_full_batch_step_is_the_keras_formula_by_hand():
    x, y = regression_data(10)
    w = np.linspace(0.5, 2.0, len(x))
    model = linear_model(lr=0.1)
    W, b = model.get_weights()
    history = model.fit(x, y, batch_size=len(x), shuffle=False, sample_weight=w, verbose=0)
    err = x @ W + b - y                                     # Keras 3: Σ w·err² / n (not / Σ w)
    assert history.history["loss"][0] == pytest.approx(np.sum(w * err[:, 0] ** 2) / len(x), rel=1e-12)
    np.testing.assert_allclose(model.get_weights()[0], W - 0.1 * 2 * x.T @ (w[:, None] * err) / len(x), rtol=1e-12)
    np.testing.assert_allclose(model.get_weights()[1], b - 0.1 * 2 * np.sum(w[:, None] * err, 0) / len(x),
                               rtol=1e-12)


def test_a_weight_of_two_is_the_sample_twice_in_the_sum_but_not_in_the_count():
    x, y = regression_data(10)
    n = len(x)
    w = np.ones(n)
    w[3] = 2.0
    weighted = linear_model(lr=0.1)
    duplicated = twin(weighted, lr=0.1 * (n + 1) / n)       # sum_over_batch_size: Σ w·l / n against Σ l / (n + 1)
    h_w = weighted.fit(x, y, batch_size=n, shuffle=False, sample_weight=w, verbose=0)
    h_d = duplicated.fit(np.vstack([x, x[3:4]]), np.vstack([y, y[3:4]]), batch_size=n + 1, shuffle=False, verbose=0)
    assert h_w.history["loss"][0] * n == pytest.approx(h_d.history["loss"][0] * (n + 1), rel=1e-12)
    for a, b in zip(weighted.get_weights(), duplicated.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_weights_are_sliced_and_shuffled_with_their_samples():
    x, y = regression_data(11)
    w = np.arange(1.0, 12.0)
    model = linear_model(lr=0.05)
    by_hand = twin(model, lr=0.05)
    history = model.fit(x, y, batch_size=4, epochs=2, seed=7, sample_weight=w[:, None], verbose=0)
    rng = np.random.default_rng(7)
    for _ in range(2):
        order = rng.permutation(len(x))
        losses = [by_hand.train_on_batch(x[idx], y[idx], sample_weight=w[idx]) * len(idx)
                  for idx in np.array_split(order, [4, 8])]
    assert history.history["loss"][-1] == pytest.approx(sum(losses) / len(x), rel=1e-12)
    for a, b in zip(model.get_weights(), by_hand.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_evaluate_with_sample_weight_is_the_weighted_sum_over_the_samples():
    x, y = regression_data(10)
    w = np.linspace(0.0, 3.0, 10)
    model = linear_model(0.1)
    err = model.predict(x) - y
    # every batch is Σ w·l / batch size, and batches count by their size: Σ w·l / n whatever the batch size
    assert model.evaluate(x, y, batch_size=3, sample_weight=w, verbose=0) == pytest.approx(
        np.sum(w * err[:, 0] ** 2) / 10, rel=1e-12)
    assert model.test_on_batch(x, y, sample_weight=w) == pytest.approx(np.sum(w * err[:, 0] ** 2) / 10, rel=1e-12)
    assert model.evaluate(x, y, sample_weight=np.ones(10), verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))


def test_validation_data_takes_weights_and_validation_split_splits_them():
    x, y = regression_data(20)
    w = np.linspace(0.1, 2.0, 20)
    a = linear_model(lr=0.05)
    b = twin(a, lr=0.05)
    h_split = a.fit(x, y, batch_size=4, epochs=2, shuffle=False, sample_weight=w, validation_split=0.25, verbose=0)
    h_data = b.fit(x[:15], y[:15], batch_size=4, epochs=2, shuffle=False, sample_weight=w[:15],
                   validation_data=(x[15:], y[15:], w[15:]), verbose=0)
    np.testing.assert_allclose(h_split.history["loss"], h_data.history["loss"], rtol=1e-12)
    np.testing.assert_allclose(h_split.history["val_loss"], h_data.history["val_loss"], rtol=1e-12)
    assert h_data.history["val_loss"][-1] == pytest.approx(
        b.evaluate(x[15:], y[15:], sample_weight=w[15:], verbose=0), rel=1e-12)
    assert h_data.history["val_loss"][-1] != pytest.approx(b.evaluate(x[15:], y[15:], verbose=0))
    plain = b.fit(x[:15], y[:15], epochs=1, validation_data=(x[15:], y[15:], None), verbose=0)
    assert plain.history["val_loss"][0] == pytest.approx(b.evaluate(x[15:], y[15:], verbose=0), rel=1e-12)


def test_several_outputs_take_one_weight_array_for_all_or_one_per_output():
    x, ys = head_data()
    wa, wb = np.linspace(0.5, 1.5, 8), np.linspace(2.0, 0.0, 8)
    model = two_heads()
    pa, pb = model.predict(x)
    la, lb = ((pa - ys[0]) ** 2)[:, 0], np.abs(pb - ys[1]).mean(-1)
    assert model.evaluate(x, ys, sample_weight=[wa, wb], verbose=0)[0] == pytest.approx(
        np.mean(wa * la) + np.mean(wb * lb), rel=1e-12)
    assert model.evaluate(x, ys, sample_weight={"b": wb, "a": wa}, verbose=0)[0] == pytest.approx(
        np.mean(wa * la) + np.mean(wb * lb), rel=1e-12)
    assert model.evaluate(x, ys, sample_weight=wa, verbose=0)[0] == pytest.approx(
        np.mean(wa * la) + np.mean(wa * lb), rel=1e-12)
    assert model.evaluate(x, ys, sample_weight=list(wa), verbose=0)[0] == pytest.approx(   # numbers: one per sample
        np.mean(wa * la) + np.mean(wa * lb), rel=1e-12)
    with pytest.raises(ValueError, match=r"sample_weight.*2 outputs.*weight arrays"):
        model.fit(x, ys, sample_weight=[wa, wb, wa], verbose=0)


# ----- class_weight ---------------------------------------------------------------------------
def test_class_weight_is_the_sample_weight_of_each_samples_class():
    x, y = class_data()
    class_weight = {0: 1.0, 2: 4.0}                         # class 1 is left out: weight 1 (Keras)
    a = classifier()
    b = classifier()
    b.set_weights(a.get_weights())
    h_class = a.fit(x, y, batch_size=5, epochs=2, seed=3, class_weight=class_weight, verbose=0)
    h_sample = b.fit(x, y, batch_size=5, epochs=2, seed=3, sample_weight=np.where(y == 2, 4.0, 1.0), verbose=0)
    assert h_class.history["loss"] == pytest.approx(h_sample.history["loss"], rel=1e-12)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-12)


def test_class_weight_reads_one_hot_labels_by_their_largest_entry():
    x, y = class_data()
    one_hot = np.eye(3)[y]
    a = classifier()
    b = classifier(loss="categorical_crossentropy")
    b.set_weights(a.get_weights())
    a.fit(x, y, batch_size=12, shuffle=False, class_weight={1: 3.0}, verbose=0)
    b.fit(x, one_hot, batch_size=12, shuffle=False, class_weight={1: 3.0}, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-12)


def test_class_weight_is_not_applied_to_the_validation_data():
    x, y = class_data()
    model = classifier(lr=0.0)
    history = model.fit(x, y, class_weight={0: 10.0}, validation_data=(x, y), verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-12)
    assert history.history["loss"][0] > 2 * history.history["val_loss"][0]


@pytest.mark.parametrize("class_weight, match", [
    ({0: 1.0, 3: 2.0}, r"keys \[3\] outside the classes 0 to 2 \(the model's output with 3 columns\)"),
    ({-1: 2.0}, r"keys \[-1\] outside the classes 0 to 2"),
    ({"cat": 2.0}, r"whole numbers.*'cat'"),
    ({1.5: 2.0}, r"whole numbers.*1\.5"),
    ({1: "high"}, r"class_weight\[1\] must be a number"),
    ([1.0, 2.0, 3.0], r"must be a dict"),
])
def test_bad_class_weights_are_refused_before_any_step(class_weight, match):
    x, y = class_data()
    model = classifier()
    before = model.get_weights()
    with pytest.raises(ValueError, match=match):
        model.fit(x, y, class_weight=class_weight, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert model.history is None


def test_class_weight_refuses_sample_weight_several_outputs_and_binary_keys_beyond_one():
    x, y = class_data()
    with pytest.raises(ValueError, match="class_weight and sample_weight cannot be given together"):
        classifier().fit(x, y, class_weight={0: 2.0}, sample_weight=np.ones(12), verbose=0)
    hx, ys = head_data()
    with pytest.raises(ValueError, match="only for a model with one output"):
        two_heads().fit(hx, ys, class_weight={0: 2.0}, verbose=0)
    binary = adv.Sequential([layers.Input((4,)), layers.Dense(1, activation="sigmoid")])
    binary.compile("sgd", "binary_crossentropy")
    with pytest.raises(ValueError, match=r"keys \[2\] outside the classes 0 to 1 \(one output column"):
        binary.fit(x, (y > 0).astype(float), class_weight={0: 1.0, 2: 3.0}, verbose=0)
    binary.fit(x, (y > 0).astype(float), class_weight={0: 1.0, 1: 3.0}, verbose=0)


# ----- loss_weights ---------------------------------------------------------------------------
@pytest.mark.parametrize("loss_weights", [[0.5, 3.0], {"a": 0.5, "b": 3.0}])
def test_loss_weights_scale_each_outputs_loss_in_the_sum(loss_weights):
    x, ys = head_data()
    model = two_heads(lr=0.0)
    model.compile(optimizer=optimizers.SGD(0.0), loss=["mse", "mae"], loss_weights=loss_weights)
    pa, pb = model.predict(x)
    expected = 0.5 * np.mean((pa - ys[0]) ** 2) + 3.0 * np.mean(np.abs(pb - ys[1]))
    history = model.fit(x, ys, batch_size=8, verbose=0)
    assert history.history["loss"][0] == pytest.approx(expected, rel=1e-12)
    assert model.evaluate(x, ys, verbose=0)[0] == pytest.approx(expected, rel=1e-12)


def test_loss_weights_scale_the_gradient():
    x, ys = head_data()
    a = two_heads(lr=0.1)
    a.compile(optimizer=optimizers.SGD(0.1), loss=["mse", "mae"], loss_weights=2.0)   # one number: every output
    b = two_heads(lr=0.2)
    b.set_weights(a.get_weights())
    a.fit(x, ys, batch_size=8, verbose=0)
    b.fit(x, ys, batch_size=8, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-12)


def test_wrong_loss_weights_name_the_outputs_and_compile_nothing():
    model = two_heads()
    optimizer = model.optimizer
    with pytest.raises(ValueError, match=r"3 entries for the 2 outputs \['a', 'b'\]"):
        model.compile("sgd", ["mse", "mae"], loss_weights=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"keys \['c'\] that are not outputs.*\['a', 'b'\]"):
        model.compile("sgd", ["mse", "mae"], loss_weights={"a": 1.0, "c": 2.0})
    with pytest.raises(ValueError, match=r"no entry for \['b'\].*\['a', 'b'\]"):
        model.compile("sgd", ["mse", "mae"], loss_weights={"a": 1.0})
    with pytest.raises(TypeError, match=r"loss_weights\[1\] must be a number"):
        model.compile("sgd", ["mse", "mae"], loss_weights=[1.0, "x"])
    assert model.optimizer is optimizer and model.loss_weights is None


def test_a_subclassed_model_checks_loss_weights_at_its_first_batch_before_any_change():
    class Heads(adv.Model):
        def __init__(self):
            super().__init__(dtype="float64")
            self.a, self.b = layers.Dense(1), layers.Dense(2)

        def call(self, x):
            return [self.a(x), self.b(x)]
    x, ys = head_data()
    model = Heads()
    model(x[:1])
    before = model.get_weights()
    model.compile(optimizers.SGD(0.1), "mse", loss_weights=[1.0])
    with pytest.raises(ValueError, match=r"1 entries for the 2 outputs \['output_0', 'output_1'\]"):
        model.fit(x, ys, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


# ----- errors ---------------------------------------------------------------------------------
class Spy(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def on_train_begin(self, logs=None):
        self.calls += 1


@pytest.mark.parametrize("kwargs, error, match", [
    ({"sample_weight": np.ones(9)}, ValueError, r"sample_weight has 9 weights \(shape \(9,\)\) but there are 10 "
                                                r"samples.*shape \(10,\)"),
    ({"sample_weight": 2.0}, ValueError, r"one weight per sample.*np\.full\(10, 2\.0\)"),
    ({"sample_weight": np.array(["a"] * 10)}, TypeError, "sample_weight must be numbers"),
    ({"validation_split": 0.5, "sample_weight": np.ones(11)}, ValueError, r"11 weights.*10 samples"),
    ({"validation_data": (np.ones((4, 3)), np.ones((4, 1)), np.ones(3))}, ValueError,
     r"validation_data\): sample_weight has 3 weights.*4 samples"),
    ({"validation_data": (np.ones((4, 3)), np.ones((4, 1)), np.ones(4), 1)}, ValueError,
     r"\(x_val, y_val, val_sample_weight\), got 4 items"),
])
def test_wrong_weights_are_refused_before_anything_runs(kwargs, error, match):
    x, y = regression_data(10)
    model = linear_model(0.1)
    before = model.get_weights()
    spy = Spy()
    with pytest.raises(error, match=match):
        model.fit(x, y, callbacks=[spy], verbose=0, **kwargs)
    assert spy.calls == 0
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"evaluate: sample_weight has 3 weights.*10 samples"):
        model.evaluate(x, y, sample_weight=np.ones(3), verbose=0)


def test_a_train_step_of_ones_own_without_sample_weight_is_told_how_to_take_it():
    class Custom(adv.Sequential):
        def train_step(self, x, y):
            return super().train_step(x, y)
    x, y = regression_data(10)
    model = Custom([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(x, y, verbose=0)
    with pytest.raises(TypeError, match=r"train_step takes \(x, y\); add a sample_weight=None parameter"):
        model.fit(x, y, sample_weight=np.ones(10), verbose=0)
