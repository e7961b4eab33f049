"""Why is the gradient None? Real public TensorFlow/Keras questions, reproduced in this package's TF-like API.

Each test reduces one question (cited by URL in its docstring) to the user's
structure and mistake, asserts TensorFlow's facts as this package reproduces
them (None where TensorFlow gives None), then what ``tape.explain`` — or,
for ``fit`` and ``minimize`` users who hold no tape, the optimizer's own
message — says: the reason, the user's line and a fix that fits.
"""
import warnings

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import layers

HERE = __file__


def where(tag) -> str:
    return code_lines.line_of(HERE, tag)


def test_q20630_model_predict_inside_the_tape():
    """https://github.com/tensorflow/tensorflow/issues/20630 — ``error = model.predict(x) - y`` inside a
    ``GradientTape``: predict returns numpy, so the gradients are None (the answer: use ``model(x)``)."""
    model = adv.Sequential([layers.Dense(1, activation="relu", input_shape=(2,))])
    x = np.random.default_rng(0).normal(size=(10, 2)).astype("float32")
    y = x[:, :1] * 3 + 2
    with adv.GradientTape() as tape:
        error = model.predict(x) - y                                  # <- predict
        loss_value = adv.mean(adv.constant(error) ** 2)
    assert tape.gradient(loss_value, model.trainable_variables) == [None, None]
    e = tape.explain(loss_value, model.trainable_variables[0])
    assert e.reason == "left_the_tape" and e.op == "predict" and e.location == where("predict")
    assert "model(x)" in e.message


def test_q53541_set_weights_inside_the_tape_cuts_the_gradient():
    """https://github.com/tensorflow/tensorflow/issues/53541 (also keras-team/keras#15836, the same question) —
    a meta-learning step: ``gt.watch(l)``, ``new_weights = [w * l for w in learner.weights]``,
    ``learner.set_weights(new_weights)``, then the loss of ``learner(X)``: ``gt.gradient(loss, l)`` is None.
    ``set_weights`` copies values; the gradient cannot pass through it. Real Keras gives None (checked below);
    ``explain`` names the ``set_weights`` line, never "not used"."""
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    X = np.ones((4, 3), "float32")
    Y = np.eye(2, dtype="float32")[[0, 1, 0, 1]]
    real = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
    tl = tf.constant(0.1)
    with tf.GradientTape() as gt:
        gt.watch(tl)
        real.set_weights([w * tl for w in real.weights])
        real_loss = keras.losses.categorical_crossentropy(Y, real(X))
    assert gt.gradient(real_loss, tl) is None

    layers.set_random_seed(0)
    learner = adv.Sequential([adv.Input((3,)), layers.Dense(2, activation="softmax")])
    l = adv.constant(0.1, dtype="float32")
    with adv.GradientTape(persistent=True) as gt:
        gt.watch(l)
        new_weights = [w * l for w in learner.weights]
        learner.set_weights(new_weights)                              # <- set_weights
        y_pred = learner(X)
        loss = adv.losses.categorical_crossentropy(Y, y_pred)
    assert gt.gradient(loss, l) is None
    e = gt.explain(loss, l)
    assert e.reason == "non_differentiable_op" and e.op == "set_weights" and e.location == where("set_weights")
    assert "'l'" in e.message and "set_weights" in e.message and "Fix:" in e.message


def test_q36596_custom_loss_converts_predictions_to_numpy():
    """https://github.com/tensorflow/tensorflow/issues/36596 — the gradient with respect to the input is None;
    the user's own answer: a custom loss converted the predictions to numpy before computing the gradient."""
    model = adv.Sequential([layers.Dense(3, input_shape=(4,))])
    image = adv.constant(np.random.default_rng(1).normal(size=(1, 4)))
    with adv.GradientTape() as tape:
        tape.watch(image)
        preds = model(image).numpy()                                  # <- numpy
        loss = adv.constant(-np.log(np.exp(preds[0, 1]) / np.exp(preds).sum()))
    assert tape.gradient(loss, image) is None
    e = tape.explain(loss, image)
    assert e.reason == "left_the_tape" and e.location == where("numpy")
    assert "'image'" in e.message


def test_q36880_layers_whose_output_is_overwritten_get_no_gradient_in_fit():
    """https://github.com/tensorflow/tensorflow/issues/36880 — ``call`` returns ``self.linear4(x)``: the first
    three layers run but their outputs are overwritten, so ``fit`` warns "Gradients do not exist". A ``fit``
    user has no tape: the warning itself must carry the reason per variable."""
    class Linear(adv.Model):
        def __init__(self):
            super().__init__()
            self.linear1 = layers.Dense(4)
            self.linear4 = layers.Dense(1)

        def call(self, x):
            output = self.linear1(x)                                  # noqa: F841 (the user's mistake)
            output = self.linear4(x)
            return output

    model = Linear()
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.random.default_rng(2).random((8, 4)), np.random.default_rng(3).random((8, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, epochs=1, verbose=0)
    text = "\n".join(str(w.message) for w in caught if "Gradients do not exist" in str(w.message))
    assert "dense/kernel" in text or "kernel" in text
    assert "why, per variable:" in text and "not_used" in text and "tape.explain" not in text


def test_q51489_loss_function_reads_an_output_computed_before_minimize():
    """https://github.com/tensorflow/tensorflow/issues/51489 — ``output = test([[7.0, 3]])`` is computed once,
    outside; ``loss_fn`` closes over it, so ``minimize(loss_fn, var_list)`` finds "No gradients provided for
    any variable". The error says why for each variable (the output was computed outside the tape)."""
    test = layers.Dense(4, activation="relu")
    output = test(adv.constant([[7.0, 3.0]]))                        # <- outside

    def loss_fn():
        y_true = adv.ones([1, 4])
        return adv.mean(adv.square(y_true - output))

    with pytest.raises(ValueError, match="no gradients provided for any variable") as info:
        adv.optimizers.Adam(0.4).minimize(loss_fn, var_list=test.trainable_variables)
    assert "why, per variable:" in str(info.value) and "computed_outside_tape" in str(info.value)


def test_q18636_style_round_gives_none_on_the_tape_as_tensorflow():
    """https://github.com/tensorflow/tensorflow/issues/18636 — ``tf.round`` in the loss: TensorFlow gives None
    ("No gradients provided"), not zeros. This package's tape follows TensorFlow; ``adv.grad`` keeps the
    zeros PyTorch and JAX give. (The TensorFlow bridge test reproduces the question itself; this one checks
    the engine's own tape, where a Keras user's model would otherwise stop learning silently.)"""
    model = adv.Sequential([layers.Dense(1, input_shape=(3,))])
    x = adv.constant(np.random.default_rng(4).random((5, 3)))
    with adv.GradientTape() as tape:
        Train_output = model(x)
        loss = adv.mean((adv.round(Train_output) - 1.0) ** 2)        # <- round
    assert tape.gradient(loss, model.trainable_variables) == [None, None]
    table = tape.explain(loss, model)
    assert [e.reason for e in table] == ["non_differentiable_op"] * 2
    assert table[0].location == where("round") and "straight-through" in table[0].message


def test_q27378_style_integer_variable_names_its_line():
    """https://github.com/tensorflow/tensorflow/issues/27378 — ``tf.Variable(5)`` is an integer variable, so
    its gradient is None; the explanation names the line that made it."""
    a = adv.Variable(5)                                               # <- int
    with adv.GradientTape() as tape:
        y = a * a
    with pytest.warns(UserWarning, match="int"):
        assert tape.gradient(y, a) is None
    e = tape.explain(y, a)
    assert e.reason == "integer_dtype" and e.location == where("int") and "'a'" in e.message


def test_explain_takes_what_gradient_takes_and_puts_the_broken_first():
    """``tape.explain(loss, model.trainable_variables)`` (or a dict): one row per source, broken first."""
    w = adv.Variable([1.0, 2.0], name="w")
    b = adv.Variable([0.5], name="b")
    with adv.GradientTape() as tape:
        loss = adv.sum(w * 2.0)
    table = tape.explain(loss, [w, b])
    assert table.names == ["b", "w"] and [e.reason for e in table] == ["not_used", "connected"]
    assert "<table" in table._repr_html_()
    rows = tape.explain(loss, {"weight": w, "bias": b}).by_name()
    assert rows["weight"].connected and rows["bias"].reason == "not_used"


def test_q927_a_weight_made_in_build_but_never_read_in_call():
    """https://github.com/tensorflow/probability/issues/927 — a custom GRU cell makes an ``interim`` weight with
    ``add_weight`` in ``build`` but its ``call`` never reads it: ``fit`` warns "Gradients do not exist for
    variables ['rnn/my_gru/interim:0']". The warning names the variable and says it is not used."""
    class MyCell(layers.Layer):
        def build(self, input_shape):
            self.w_r = self.add_weight(shape=(input_shape[-1], 3), initializer="uniform", name="reset_gate")
            self.interim = self.add_weight(shape=(3,), initializer="zeros", name="interim")

        def call(self, x):
            return adv.tanh(x @ self.w_r)

    model = adv.Sequential([layers.Input((4,)), MyCell(), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.random.default_rng(5).random((8, 4)), np.random.default_rng(6).random((8, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, epochs=1, verbose=0)
    text = "\n".join(str(w.message) for w in caught if "Gradients do not exist" in str(w.message))
    assert "interim" in text and "reset_gate" not in text.split("why, per variable:")[0]
    assert "interim: not_used" in text


def test_a_model_class_in_the_callers_namespace_does_not_break_the_naming():
    """Notebook 15 defines ``class GAN(adv.Model)`` next to its tape: explain reads the caller's names and must
    skip classes (their ``variables`` is a property object, not a list)."""
    class Tiny(adv.Model):
        def call(self, x):
            return x

    w = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        loss = adv.sum(w * 2.0)
    assert Tiny is not None and tape.explain(loss, w).reason == "connected"
