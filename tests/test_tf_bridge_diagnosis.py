"""Why is tape.gradient None in TensorFlow? One test per reason, and real public questions reproduced.

Each real-question test reduces the question's code to its structure and its
mistake, asserts TensorFlow's own answer (None, or zeros where the user asked
for them), then the reason, the user's line and a fix that fits.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import code_lines  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.tf  # noqa: E402,F401

HERE = __file__


def where(tag) -> str:
    return code_lines.line_of(HERE, tag)


# ----- one test per reason --------------------------------------------------------
def test_connected():
    w = tf.Variable([1.0, 2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        assert tape.gradient(loss, w) is not None
    assert rec.explain(loss, w).reason == "connected"


def test_not_watched_constant():
    x = tf.constant([1.0, 2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(x ** 2)                                 # <- use
        assert tape.gradient(y, x) is None
    e = rec.explain(y, x)
    assert e.reason == "not_watched" and e.location == where("use") and "tape.watch(x)" in e.message


def test_not_watched_non_trainable_variable():
    v = tf.Variable(3.0, trainable=False)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = v * v                                                 # <- frozen use
        assert tape.gradient(y, v) is None
    e = rec.explain(y, v)
    assert e.reason == "not_watched" and "trainable=False" in e.message and e.location == where("frozen use")


def test_computed_outside_tape_under_stop_recording():
    w = tf.Variable(2.0)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            with tape.stop_recording():
                y = w * 3.0                                           # <- paused
            loss = y + 1.0
        assert tape.gradient(loss, w) is None
    e = rec.explain(loss, w)
    assert e.reason == "computed_outside_tape" and e.location == where("paused") and "stop_recording" in e.message


def test_integer_dtype_cast_on_the_path():
    w = tf.Variable([1.4, 2.6])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            k = tf.cast(w, tf.int32)                                  # <- cast
            loss = tf.reduce_sum(tf.cast(k, tf.float32))
        assert tape.gradient(loss, w) is None
    e = rec.explain(loss, w)
    assert e.reason == "integer_dtype" and e.location == where("cast") and e.op == "Cast"


def test_non_differentiable_stop_gradient():
    w = tf.Variable([1.0, 2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            frozen = tf.stop_gradient(w * 2.0)                        # <- stop
            loss = tf.reduce_sum(frozen ** 2)
        assert tape.gradient(loss, w) is None
    e = rec.explain(loss, w)
    assert e.reason == "non_differentiable_op" and e.location == where("stop") and "stop_gradient" in e.message
    tr = rec.trace(loss, w)
    marked = e.mark(tr)
    assert marked.marks and marked.marks[0].reason.startswith("non_differentiable_op")


def test_not_used_and_zeros_when_asked():
    w, unused = tf.Variable(1.0), tf.Variable(5.0)
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as tape:
            loss = w * 2.0
        assert tape.gradient(loss, unused) is None
        assert tape.gradient(loss, unused, unconnected_gradients="zero").numpy() == 0.0
    assert rec.explain(loss, unused).reason == "not_used"


def test_new_variable_made_from_a_value_on_the_path():
    x = tf.Variable([1.0, 2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            copy = tf.Variable(x * 2.0)                               # <- new
            loss = tf.reduce_sum(copy * copy)
        assert tape.gradient(loss, x) is None
    e = rec.explain(loss, x)
    assert e.reason == "new_variable" and e.location == where("new")


def test_the_target_computed_outside_the_recording():
    w = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        loss = w * w
    with adv.tf.record() as rec:
        pass
    assert rec.explain(loss, w).reason == "computed_outside_tape"
    with pytest.raises(ValueError, match="not computed inside this recording"):
        rec.trace(loss, w)


# ----- real questions ---------------------------------------------------------------
def test_q30190_losses_turned_into_python_floats():
    """https://github.com/tensorflow/tensorflow/issues/30190 — a custom loss appends ``float(loss)`` for every
    sample, computes a distance in Python and returns ``tf.convert_to_tensor(dis)``: every gradient is None."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    x, y = tf.random.normal((5, 4)), tf.constant([0, 1, 2, 1, 0])
    loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y_ = model(x)
            losses = []
            for i in range(y.shape[0]):
                loss = loss_object(y_true=y[i:i + 1], y_pred=y_[i:i + 1])
                losses.append(float(loss))                            # <- float
            dis = np.std(losses)
            loss_value = tf.convert_to_tensor(dis, dtype=np.float32)  # <- back
        grads = tape.gradient(loss_value, model.trainable_variables)
    assert grads == [None, None]
    e = rec.explain(loss_value, model.layers[0].kernel)
    assert e.reason == "left_the_tape" and e.location == where("float")
    assert where("back") in e.locations and "float()" in e.message


def test_q31919_gan_generator_output_through_numpy():
    """https://github.com/tensorflow/tensorflow/issues/31919 — the generator's output goes through
    ``g_fake_data.numpy().T`` into numpy moments before the discriminator: the generator's gradients are None."""
    keras.utils.set_random_seed(0)
    G = keras.Sequential([keras.Input((1,)), keras.layers.Dense(8)])
    D = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])

    def get_moments(d):
        return np.array([np.mean(d), np.std(d), np.mean(d ** 3), np.mean(d ** 4)], dtype=np.float32)

    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            g_fake_data = G(tf.random.normal((1, 1)))
            dg_fake_decision = D(get_moments(g_fake_data.numpy().T).reshape((1, 4)))   # <- numpy
            g_error = tf.reduce_mean(tf.square(dg_fake_decision - 1.0))
        grads = tape.gradient(g_error, G.trainable_variables)
    assert grads == [None, None]
    e = rec.explain(g_error, G.layers[0].kernel)
    assert e.reason == "left_the_tape" and e.location == where("numpy") and "numpy()" in e.message


def test_q27660_target_evaluated_after_the_with_block():
    """https://github.com/tensorflow/tensorflow/issues/27660 — ``return t.gradient(f(x), x)`` after the ``with``
    block: ``f(x)`` runs when the tape no longer records, so the gradient is None."""
    def f(x):
        return x ** 2                                                 # <- f

    x = tf.convert_to_tensor(9.0)
    with adv.tf.record() as rec:
        with tf.GradientTape() as t:
            t.watch(x)
        out = f(x)
        assert t.gradient(out, x) is None
    e = rec.explain(out, x)
    assert e.reason == "computed_outside_tape" and e.location == where("f")
    assert "after the tape's `with` block ended" in e.message


def test_q56968_gradient_of_a_constant():
    """https://github.com/tensorflow/tensorflow/issues/56968 — ``class_channel = tf.constant(...)`` inside the tape,
    gradient with respect to ``ones``: the target was never computed from the source."""
    ones = tf.ones([1, 8, 8, 1], tf.float32)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            class_channel = tf.constant([4.4328732], dtype=tf.float32)
        grads = tape.gradient(class_channel, ones)
    assert grads is None
    e = rec.explain(class_channel, ones)
    assert e.reason == "not_used" and "does not depend" in e.message


def test_q50661_conv2d_of_tensors_made_from_numpy_is_never_watched():
    """https://github.com/tensorflow/tensorflow/issues/50661 — ``x`` and ``w`` are ``tf.constant`` s made from
    numpy arrays inside the tape, then ``tf.nn.conv2d(x, w, ...)``; ``g.gradient(y, w)`` is None while
    ``tf.gradients`` in TF1 gave numbers. The answer in the thread: a tape follows variables and watched
    tensors only; watch them (``g.watch``) or make them ``tf.Variable`` s."""
    rng = np.random.default_rng(0)
    x_np, w_np = rng.integers(10, size=(1, 4, 4, 1)), rng.integers(10, size=(3, 3, 1, 1))
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as g:
            x = tf.constant(x_np, dtype=tf.float32)
            w = tf.constant(w_np, dtype=tf.float32)
            y = tf.nn.conv2d(x, w, strides=(1, 1, 1, 1), padding="VALID")   # <- conv
        assert g.gradient(y, w) is None and g.gradient(y, x) is None
    e = rec.explain(y, w)
    assert e.reason == "not_watched" and e.location == where("conv") and e.op == "Conv2D"
    assert "tape.watch(w)" in e.message and "tf.Variable" in e.message
    with tf.GradientTape() as g:                    # the fix from the thread: watch, and numbers come back
        g.watch(w)
        y = tf.nn.conv2d(x, w, strides=(1, 1, 1, 1), padding="VALID")
    assert g.gradient(y, w) is not None


def test_q29942_source_is_a_tensor_computed_before_the_tape():
    """https://github.com/tensorflow/tensorflow/issues/29942 — ``x = x0 + x1`` (a variable plus a constant) is
    computed before the tape, ``z = x + y`` inside it, and ``tape.gradient(z, x)`` is None although
    ``tf.gradients(z, x)`` gives 1. The answer in the thread: ``x`` is a tensor, not a variable, so the tape
    does not watch it; ``tape.watch(x)``."""
    x0 = tf.Variable(0.5)
    x1 = tf.constant(3.)
    with adv.tf.record() as rec:
        x = x0 + x1
        y = tf.constant(4.0)
        with tf.GradientTape() as tape:
            z = x + y                                                 # <- z use
            tape_grad = tape.gradient(z, x)
    assert tape_grad is None
    e = rec.explain(z, x)
    assert e.reason == "not_watched" and e.location == where("z use") and "tape.watch(x)" in e.message
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = x + y
    assert float(tape.gradient(z, x)) == 1.0


def test_q24849_variable_absent_from_the_expression_gives_none_or_zeros():
    """https://github.com/tensorflow/tensorflow/issues/24849 — a variable not in the expression gets None; the
    request was zeros, which ``unconnected_gradients='zero'`` gives."""
    a, b = tf.Variable(2.0), tf.Variable(3.0)
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as tape:
            y = a * a
        ga, gb = tape.gradient(y, [a, b])
        gz = tape.gradient(y, b, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert ga.numpy() == 4.0 and gb is None and gz.numpy() == 0.0
    e = rec.explain(y, b)
    assert e.reason == "not_used" and "unconnected_gradients='zero'" in e.message


def test_q30234_assign_add_on_the_path():
    """https://github.com/tensorflow/tensorflow/issues/30234 — ``v.assign_add(x)`` then ``loss = v * v``: the
    gradient with respect to ``x`` is None, assignments to variables are not differentiated."""
    v = tf.Variable(1.0)
    x = tf.convert_to_tensor(2.0)
    with adv.tf.record() as rec:
        with tf.GradientTape() as t:
            t.watch(x)
            v.assign_add(x)                                           # <- assign
            loss = v * v
        assert t.gradient(loss, x) is None
    e = rec.explain(loss, x)
    assert e.reason == "assigned_variable" and e.location == where("assign") and "assign" in e.message


def test_q54532_model_weight_reassigned_in_call():
    """https://github.com/tensorflow/tensorflow/issues/54532 — a Keras model's ``call`` assigns its weight from
    the input (``self.w.assign(x)``) and computes with the weight: ``tape.gradient(out, x)`` is None."""
    class DummyModel(keras.Model):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(), dtype="float64", initializer="zeros")

        def call(self, x):
            self.w.assign(x)                                          # <- reassign
            return -0.5 * self.w ** 2

    model = DummyModel()
    x = tf.constant(1.5, dtype=tf.float64)
    model.build(())
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = model(x)
        assert tape.gradient(out, x) is None
    e = rec.explain(out, x)
    assert e.reason == "assigned_variable" and e.location == where("reassign")


def test_q15278_argmax_in_the_loss():
    """https://github.com/tensorflow/tensorflow/issues/15278 — ``tf.argmax(b)`` then ``tf.cast(c, tf.int32)``:
    no gradient flows back to ``a``."""
    a = tf.Variable([1.0, 3.0, 2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            b = a * 2
            c = tf.argmax(b, axis=-1)                                 # <- argmax
            c = tf.cast(c, tf.float32)
        assert tape.gradient(c, a) is None
    e = rec.explain(c, a)
    assert e.reason == "non_differentiable_op" and e.location == where("argmax") and "tf.argmax" in e.message


def test_q18636_round_in_the_loss():
    """https://github.com/tensorflow/tensorflow/issues/18636 — ``tf.round(Train_output)`` in the loss: "No
    gradients provided for any variable"."""
    keras.utils.set_random_seed(0)
    net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    img = tf.random.normal((4, 3))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            train_output = net(img)
            loss = tf.reduce_mean(tf.nn.l2_loss(tf.round(train_output) * 0.5 - 1.0))   # <- round
        grads = tape.gradient(loss, net.trainable_variables)
    assert grads == [None, None]
    e = rec.explain(loss, net.layers[0].bias)
    assert e.reason == "non_differentiable_op" and e.location == where("round") and "tf.round" in e.message


def test_q27378_integer_variables():
    """https://github.com/tensorflow/tensorflow/issues/27378 — variables initialised with integers are int32:
    there is no gradient on integer types."""
    w = tf.Variable(3)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = w * w
        assert tape.gradient(y, w) is None
    e = rec.explain(y, w)
    assert e.reason == "integer_dtype" and "int32" in e.message and "float" in e.message


def test_numpy_loss_as_the_target():
    """https://github.com/tensorflow/tensorflow/issues/30190 (the loss itself returned as a numpy value): a target
    that is a numpy number is a new constant to TensorFlow."""
    w = tf.Variable([0.5, 1.5])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            pred = w * 2.0
            loss = np.mean(np.square(pred))                           # <- np
        with pytest.raises(AttributeError):           # TensorFlow itself cannot even take a numpy scalar
            tape.gradient(loss, w)
    e = rec.explain(loss, w)
    assert e.reason == "left_the_tape" and e.location == where("np") and "np.square()" in e.message


# ----- the chain rule in two parts: tape.gradient(y, x, output_gradients=g) ---------------------
def test_unconnected_output_gradients_names_the_cut_inside_dy_dx_not_g():
    """The chain rule split in two: ``g = outer.gradient(loss, y)`` is fine, but ``y`` was computed after the
    first tape's ``with`` ended, so ``tape.gradient(y, x, output_gradients=g)`` is None for every ``g``."""
    x = tf.Variable([0.5, 1.0, 1.5], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            h = tf.tanh(x)
        y = h * 3.0                                                   # <- y after the with
        with tf.GradientTape() as outer:
            outer.watch(y)
            loss = tf.reduce_sum(y ** 2)
        g = outer.gradient(loss, y)
        assert g is not None
        dx = tape.gradient(y, x, output_gradients=g)                  # <- vjp
    assert dx is None
    e = rec.explain(y, x)
    assert e.reason == "unconnected_output_gradients" and e.reason in adv.tf.REASONS
    assert e.location == where("y after the with")
    assert where("vjp") in e.locations and where("y after the with") in e.locations
    assert "output_gradients=g" in e.message and "shape (3,)" in e.message
    assert "reason: computed_outside_tape" in e.message and "after the tape's `with` block ended" in e.message
    assert e.edges, "the broken edge is named, so a view can mark it"


def test_unconnected_output_gradients_through_an_integer_cast():
    x = tf.Variable([0.4, 1.6], dtype=tf.float32)
    g = tf.constant([1.0, -2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = tf.cast(tf.cast(x * 2.0, tf.int32), tf.float32)        # <- int cast
        assert tape.gradient(y, x, output_gradients=g) is None
    e = rec.explain(y, x)
    assert e.reason == "unconnected_output_gradients"
    assert "reason: integer_dtype" in e.message and "tf.cast to int32" in e.message
    assert e.location == where("int cast")


def test_a_connected_vector_jacobian_product_is_connected():
    x = tf.Variable([0.5, 1.0], dtype=tf.float64)
    g = tf.constant([2.0, -1.0], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = tf.sin(x)
        dx = tape.gradient(y, x, output_gradients=g)
    np.testing.assert_allclose(dx.numpy(), g.numpy() * np.cos(x.numpy()))
    assert rec.explain(y, x).reason == "connected"


def test_explain_takes_a_list_or_a_model_like_gradient():
    """``rec.explain(loss, model.trainable_variables)`` (or the model, or a dict): one row per source, the broken
    ones first, as ``tape.gradient`` takes them (it raised "source must be a tf.Tensor" for a list)."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    x = tf.ones((4, 3))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            h = model.layers[0](x)
            loss = tf.reduce_sum(tf.stop_gradient(h) * 2.0)
        assert tape.gradient(loss, model.trainable_variables) == [None] * 4
    table = rec.explain(loss, model.trainable_variables)
    assert len(table) == 4 and {e.reason for e in table} <= {"non_differentiable_op", "not_used"}
    rows = rec.explain(loss, {"kernel": model.layers[0].kernel}).by_name()
    assert rows["kernel"].reason == "non_differentiable_op"
    assert len(rec.explain(loss, model)) == 4
