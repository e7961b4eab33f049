"""``adv.metrics.Metric``, the base of metrics of one's own (Keras 3's), duck-typed metric objects in
``compile(metrics=[...])``, and the MAPE metric.

The metric of Keras 3's guide "Training & evaluation with the built-in
methods" runs through ``fit`` and ``evaluate`` of a model whose predictions
are fixed (a ``Dense`` whose kernel is the identity, trained with a learning
rate of 0), so its value is a count of correct predictions made by hand.
MAPE is checked against numpy's ``100 · mean(|t − p| / max(|t|, 1e-7))``.
"""
import numpy as np
import pytest
from fit_helpers import fresh_session  # noqa: F401  (autouse fixture)

import autodiff_viz as adv
from autodiff_viz import layers, metrics


class CategoricalTruePositives(adv.metrics.Metric):
    """The guide's metric, as written there."""

    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = adv.reshape(adv.argmax(y_pred, axis=1), (-1, 1))
        values = adv.cast(y_true, "int32") == adv.cast(y_pred, "int32")
        values = adv.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = adv.cast(sample_weight, "float32")
            values = adv.multiply(values, sample_weight)
        self.true_positives.assign_add(adv.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


X = np.eye(3, dtype="float32")[[0, 1, 2, 0, 1, 2]]   # the model predicts class argmax(x): 0 1 2 0 1 2
Y = np.array([[0], [1], [0], [0], [2], [2]])          # right at samples 0, 1, 3, 5: 4 correct
Y_VAL = np.array([[0], [0], [0], [0], [0], [0]])      # right at samples 0 and 3: 2 correct


def fixed_classifier(metric_list):
    """Logits = x (identity kernel, no bias), never changed (learning rate 0)."""
    model = adv.Sequential([layers.Input((3,)), layers.Dense(3, use_bias=False, kernel_initializer="zeros")])
    model.layers[-1].kernel.assign(np.eye(3))
    model.compile(optimizer=adv.optimizers.SGD(learning_rate=0.0),
                  loss=adv.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=metric_list)
    return model


def test_guide_metric_counts_correct_predictions_in_fit_and_evaluate():
    metric = CategoricalTruePositives()
    model = fixed_classifier([metric])
    history = model.fit(X, Y, epochs=3, batch_size=4, validation_data=(X, Y_VAL), verbose=0)
    # reset at each epoch start: 4 every epoch (not 4, 8, 12), summed over both batches of an epoch
    assert history.history["categorical_true_positives"] == [4.0, 4.0, 4.0]
    assert history.history["val_categorical_true_positives"] == [2.0, 2.0, 2.0]
    assert all(type(v) is float for v in history.history["categorical_true_positives"])
    logs = model.evaluate(X, Y, batch_size=2, verbose=0, return_dict=True)
    assert logs["categorical_true_positives"] == 4.0 and type(logs["categorical_true_positives"]) is float
    loss, count = model.evaluate(X, Y_VAL, verbose=0)
    assert count == 2.0
    assert float(metric.result()) == 2.0          # the object given to compile holds the state


def test_guide_metric_by_hand_with_sample_weight_and_call():
    metric = CategoricalTruePositives()
    scores = X * 5.0
    assert float(metric(Y, scores, sample_weight=np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]]))) == 13.0
    assert float(metric(Y[:2], scores[:2])) == 15.0           # running: 13 + 2 correct
    metric.reset_state()
    assert float(metric.result()) == 0.0


class Counts(adv.metrics.Metric):
    """State made every way Keras 3 tracks it."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hits = self.add_variable(shape=(2,), initializer="ones", name="hits")
        self.seen = self.add_weight(name="seen")                  # Keras 2 spelling, zeros without initializer
        self.steps = adv.Variable(7, trainable=False, name="steps", dtype="int64")   # assigned, still tracked
        self.inner = adv.metrics.Mean(name="inner")
        self.parts = [CategoricalTruePositives(name="ctp_a")]

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.hits.assign_add([1.0, 2.0])
        self.seen.assign_add(len(y_true))
        self.steps.assign_add(1)

    def result(self):
        return self.seen


def test_add_variable_add_weight_variables_and_default_reset_state():
    m = Counts(name="counts")
    names = [v.path for v in m.variables]
    assert names == ["counts/hits", "counts/seen", "steps", "ctp_a/ctp"]
    assert [v.name for v in m.variables] == ["hits", "seen", "steps", "ctp"]
    assert all(not v.trainable for v in m.variables)
    assert m.hits.dtype == "float32" and m.seen.shape == () and m.steps.dtype == "int64"
    np.testing.assert_array_equal(m.hits.numpy(), [1.0, 1.0])
    assert float(m([1, 2, 3], None)) == 3.0
    np.testing.assert_array_equal(m.hits.numpy(), [2.0, 3.0])
    m.parts[0].true_positives.assign(5.0)
    m.reset_state()                                   # Keras 3: every variable to zeros, "ones" included
    for v in m.variables:
        np.testing.assert_array_equal(v.numpy(), np.zeros(v.shape))
    assert Counts(dtype="float64").seen.dtype == "float64"


def test_metric_name_dtype_and_mistakes():
    assert Counts().name == "counts" and Counts().name == "counts_1"      # snake case, numbered as layers
    assert repr(Counts(name="c")) == "<Counts name=c>"
    assert Counts(name="c").get_config() == {"name": "c", "dtype": "float32"}

    class Forgot(adv.metrics.Metric):
        def __init__(self):
            self.v = self.add_variable(shape=(), initializer="zeros")

    with pytest.raises(RuntimeError, match=r"super\(\).__init__"):
        Forgot()
    with pytest.raises(ValueError, match="aggregation must be one of"):
        adv.metrics.Metric(name="m").add_variable((), "zeros", aggregation="max")
    with pytest.raises(NotImplementedError, match="update_state"):
        adv.metrics.Metric(name="m")([0], [0])


class DuckCount:
    """Not a Metric: just the three methods. Counts samples, and how often it was reset."""

    def __init__(self):
        self.n, self.resets = 0, 0

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.n += len(y_true)

    def result(self):
        return self.n

    def reset_state(self):
        self.n = 0
        self.resets += 1


def test_duck_typed_metric_object_in_compile():
    duck = DuckCount()
    duck.name = "samples"
    model = fixed_classifier([duck, "accuracy"])
    history = model.fit(X, Y, epochs=2, batch_size=4, verbose=0)
    assert history.history["samples"] == [6.0, 6.0]
    assert history.history["accuracy"] == pytest.approx([4 / 6, 4 / 6])
    assert duck.resets >= 1                         # at least between the two epochs
    assert model.evaluate(X, Y, verbose=0, return_dict=True)["samples"] == 6.0


def test_duck_typed_metric_without_name_and_metric_classes():
    duck = DuckCount()
    model = fixed_classifier([duck, CategoricalTruePositives])       # a class is instantiated, as Keras 3
    history = model.fit(X, Y, epochs=1, batch_size=6, verbose=0)
    assert duck.name == "duck_count"
    assert history.history["duck_count"] == [6.0]
    assert history.history["categorical_true_positives"] == [4.0]


def test_not_a_metric_is_refused_at_compile_naming_the_forms():
    class Half:
        def update_state(self, y_true, y_pred):
            pass

    model = adv.Sequential([layers.Input((3,)), layers.Dense(3)])
    with pytest.raises(TypeError, match="update_state, result and reset_state"):
        model.compile(optimizer="sgd", loss="mse", metrics=[Half()])


def mape_by_hand(t, p):
    t, p = np.asarray(t, float), np.asarray(p, float)
    return 100.0 * np.mean(np.abs(t - p) / np.maximum(np.abs(t), 1e-7), axis=-1)


def test_mape_function_and_class_against_numpy():
    t = np.array([[100.0, -50.0], [2.0, 0.0]])
    p = np.array([[110.0, -40.0], [1.0, 0.5]])
    # by hand: sample 0: (10/100 + 10/50)/2 = 15 %; sample 1: (1/2 + 0.5/1e-7)/2 · 100
    np.testing.assert_allclose(metrics.mean_absolute_percentage_error(t, p), [15.0, 100 * (0.5 + 5e6) / 2])
    np.testing.assert_allclose(metrics.mape(t, p), mape_by_hand(t, p))
    assert metrics.MAPE is metrics.mean_absolute_percentage_error
    # (n,) labels against (n, 1) predictions line up, no (n, n) table
    np.testing.assert_allclose(metrics.mape([4.0, 5.0], [[3.0], [6.0]]), [25.0, 20.0])
    m = metrics.MeanAbsolutePercentageError()
    assert m.name == "mean_absolute_percentage_error"
    m.update_state([[4.0], [5.0]], [[3.0], [6.0]])
    assert m.result() == pytest.approx(22.5)
    m.update_state([[10.0]], [[9.0]], sample_weight=[2.0])
    assert m.result() == pytest.approx((25 + 20 + 2 * 10) / 4)


@pytest.mark.parametrize("spec", ["mape", "mean_absolute_percentage_error", "MAPE", "MeanAbsolutePercentageError"])
def test_mape_by_name_in_fit_logs_under_that_name(spec):
    x = np.array([[1.0], [2.0], [3.0], [4.0]])
    y = np.array([[3.0], [5.0], [4.0], [10.0]])
    model = adv.Sequential([layers.Input((1,)), layers.Dense(1, kernel_initializer="ones", dtype="float64")],
                           dtype="float64")
    model.compile(optimizer=adv.optimizers.SGD(learning_rate=0.0), loss="mse", metrics=[spec])
    history = model.fit(x, y, epochs=1, batch_size=3, verbose=0)
    expected = float(np.mean(mape_by_hand(y, x)))                  # predictions are x (kernel 1, bias 0)
    assert history.history[spec] == [pytest.approx(expected)]
    assert model.evaluate(x, y, verbose=0, return_dict=True)[spec] == pytest.approx(expected)


def test_mape_object_in_compile():
    x, y = np.array([[1.0], [2.0]]), np.array([[2.0], [4.0]])   # predictions x: 50 % off each time
    model = adv.Sequential([layers.Input((1,)), layers.Dense(1, kernel_initializer="ones")])
    model.compile(optimizer="sgd", loss="mse", metrics=[metrics.MeanAbsolutePercentageError()])
    assert model.evaluate(x, y, verbose=0, return_dict=True)["mean_absolute_percentage_error"] == pytest.approx(50.0)


def test_built_in_metrics_are_metrics_and_unchanged():
    for cls in (metrics.Mean, metrics.Accuracy, metrics.BinaryAccuracy, metrics.CategoricalAccuracy,
                metrics.SparseCategoricalAccuracy, metrics.MeanAbsoluteError, metrics.MeanSquaredError,
                metrics.RootMeanSquaredError, metrics.MeanAbsolutePercentageError):
        assert issubclass(cls, metrics.Metric)
    mean = metrics.Mean()
    assert mean.name == "mean" and mean.variables == []
    mean.update_state([1.0, 2.0, 6.0], sample_weight=[1.0, 1.0, 2.0])
    assert mean.result() == pytest.approx(15.0 / 4) and mean.result().numpy() == pytest.approx(3.75)
    mean.reset_state()
    assert mean.result() == 0.0
    acc = metrics.SparseCategoricalAccuracy()
    assert acc([2, 1], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.0]]) == 0.5


def test_mean_subclass_makes_its_state_after_super_init():
    class MeanAndPeak(adv.metrics.Mean):
        def __init__(self):
            super().__init__(name="mean_and_peak")      # no reset_state() in there, so this state may come after
            self.peak = self.add_variable(shape=(), initializer="zeros", name="peak")

        def update_state(self, values, sample_weight=None):
            super().update_state(values, sample_weight)
            self.peak.assign(max(float(self.peak.numpy()), float(np.max(values))))

        def reset_state(self):
            super().reset_state()
            self.peak.assign(-1.0)

    m = MeanAndPeak()
    m.update_state([1.0, 5.0])
    assert m.result() == 3.0 and float(m.peak.numpy()) == 5.0
    m.reset_state()
    assert m.result() == 0.0 and float(m.peak.numpy()) == -1.0
