"""What the TensorFlow bridge shows of values that reach the graph without an ordinary read or a name.

Three ways a value slips past the recording's usual hooks, each checked on a small Keras model:

* a variable taken by handle inside TensorFlow (a function op's captured variable — Keras runs a grouped
  convolution on CPU as its own jit-compiled ``tf.function`` — or ``ResourceGather``'s table): a trace of a step
  that ends with an optimizer update must still show the value the op used, and its gradient bit for bit;
* a layer's non-trainable variable turned into a tensor when the layer was built (Keras' ``Normalization``, or
  any layer doing the same): drawn as that layer's state, by the variable's path, without gradient;
* labels made before the recording: named by the caller's variable, and their edge into the loss drawn by role.
"""
from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import re  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.tf  # noqa: E402,F401

EXACT = 10 ** 8


def _step(model, opt, x, y, loss_fn):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss, grads


def _labels(dot: str) -> list:
    return [m.replace("\\n", "\n") for m in re.findall(r'label="((?:[^"\\]|\\.)*)"', dot)]


# ---------------------------------------------------------------------------
# variables an op takes by handle
# ---------------------------------------------------------------------------
def _grouped():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((6, 6, 4)), keras.layers.Conv2D(4, 3, groups=2, name="grouped"),
                             keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3, name="head")])


def test_a_grouped_convs_kernel_is_shown_as_the_backward_pass_saw_it():
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 6, 6, 4)).astype("float32"))
    y = tf.constant([0, 2])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    plain = _grouped()
    _, grads_p = _step(plain, keras.optimizers.Adam(0.1), x, y, loss_fn)
    model = _grouped()
    before = [v.numpy().copy() for v in model.trainable_variables]
    with adv.tf.record() as rec:
        loss, _ = _step(model, keras.optimizers.Adam(0.1), x, y, loss_fn)
    calls = [op for op in rec.ops if op.kind == "function"]
    assert calls, "Keras ran the grouped convolution eagerly: this test needs its jit-compiled function"
    kernel = model.get_layer("grouped").kernel
    captured = [op for op in rec.ops if op.kind == "read" and op.extra.get("captured")]
    assert any(op.inputs[0]._id == kernel.value.handle._id for op in captured)
    tr = rec.trace(loss, model, value_limit=EXACT)
    shown = {n.name: n for n in tr.nodes if n.kind == "variable"}
    for v, w0, g in zip(model.trainable_variables, before, grads_p):
        assert not np.array_equal(v.numpy(), w0), f"{v.path} was not updated"
        assert np.array_equal(shown[v.path].value.data, w0), f"{v.path}: the trace shows the updated weights"
        assert np.array_equal(shown[v.path].grad.data, g.numpy()), v.path
    call = calls[0]
    into = [e for n in tr.nodes if n.index == call.index for e in tr.edges_into(n.id)]
    assert into and all(e.differentiable and e.no_grad_reason is None for e in into)   # a call is no cut
    assert np.array_equal(kernel.numpy(), plain.get_layer("grouped").kernel.numpy())    # the update is untouched


def test_a_gathered_table_is_shown_before_its_later_assignment():
    table = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    ids = tf.constant([2, 0, 2])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            rows = tf.gather(table, ids)
            loss = tf.reduce_sum(rows ** 2)
        g = tape.gradient(loss, table)
        table.assign_sub(0.5 * tf.convert_to_tensor(g))
    assert any(op.kind == "read" and op.extra.get("captured") for op in rec.ops)
    tr = rec.trace(loss, [table], value_limit=EXACT)
    node = next(n for n in tr.nodes if n.kind == "variable")
    assert np.array_equal(node.value.data, np.arange(12, dtype=np.float32).reshape(4, 3))
    assert np.array_equal(node.grad.data, tf.convert_to_tensor(g).numpy())


# ---------------------------------------------------------------------------
# a layer's state held as a tensor
# ---------------------------------------------------------------------------
class Scaled(keras.layers.Layer):
    """A layer that keeps its non-trainable ``scale`` as a tensor from build on (as ``Normalization`` does)."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer=keras.initializers.Constant(2.0),
                                     trainable=False, name="scale")
        self.scale_value = keras.ops.reshape(keras.ops.convert_to_tensor(self.scale), (1, -1))

    def call(self, x):
        return x * self.scale_value


def _state_model():
    keras.utils.set_random_seed(0)
    data = np.random.default_rng(1).normal(size=(16, 3)).astype("float32")
    norm = keras.layers.Normalization(name="norm")
    norm.adapt(data)
    return keras.Sequential([keras.Input((3,)), norm, Scaled(name="scaled"), keras.layers.Dense(2, name="head")])


def test_state_held_as_a_tensor_is_drawn_as_the_layers_variable_without_gradient():
    model = _state_model()
    x = tf.constant(np.random.default_rng(2).normal(size=(4, 3)).astype("float32"))
    y = tf.constant([0, 1, 1, 0])
    with adv.tf.record() as rec:
        loss, _ = _step(model, keras.optimizers.SGD(0.1), x, y,
                        keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    tr = rec.trace(loss, model)
    state = {n.name: n for n in tr.nodes if n.kind == "state"}
    scale = model.get_layer("scaled").scale.path            # Keras' path: the layer was built inside the model
    assert {"norm/mean", "norm/variance", scale} <= set(state), sorted(state)
    for n in state.values():
        assert n.grad is None
        assert tr.edges_from(n.id) and all(not e.differentiable for e in tr.edges_from(n.id))
    assert np.allclose(state[scale].value.data, 2.0)
    assert "state (running statistics, seeds, counters): no gradient, no formula" in tr.to_dot("backward")


def test_a_constant_with_other_values_stays_a_constant():
    class Offset(keras.layers.Layer):
        def build(self, input_shape):
            self.zero = self.add_weight(shape=(3,), initializer="zeros", trainable=False, name="zero")
            self.shift = tf.constant([1.0, 2.0, 3.0])          # the same shape, other values: not the state

        def call(self, x):
            return x + self.shift

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), Offset(name="offset"), keras.layers.Dense(1, name="head")])
    x = tf.constant(np.ones((2, 3), dtype="float32"))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x))
        tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    assert not [n.name for n in tr.nodes if n.kind == "state"]


# ---------------------------------------------------------------------------
# labels made before the recording
# ---------------------------------------------------------------------------
def test_labels_made_before_the_recording_are_named_and_drawn_by_role():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8, activation="relu", name="hidden"),
                              keras.layers.Dense(3, name="logits")])
    batch = tf.constant(np.random.default_rng(3).normal(size=(4, 5)).astype("float32"))
    targets = tf.constant([0, 2, 1, 2])                # four small integers: data, not an axis or a shape
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.tf.record() as rec:
        loss, _ = _step(model, keras.optimizers.SGD(0.1), batch, targets, loss_fn)
    tr = rec.trace(loss, model)
    node = next(n for n in tr.nodes if n.name == "targets")
    assert node.kind == "constant" and node.grad is None
    edges = tr.edges_from(node.id)
    assert edges and all(e.no_grad_reason.startswith("the labels") for e in edges)
    labels = _labels(tr.to_dot("backward"))
    assert "no gradient: labels" in labels
    formula = next(lab for lab in labels if "softmax(" in lab)
    assert "onehot(targets)" in formula, formula


def test_a_prediction_cut_from_the_tape_is_not_taken_for_labels():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, name="logits")])
    batch = tf.constant(np.random.default_rng(4).normal(size=(4, 5)).astype("float32"))
    targets = tf.constant([0, 2, 1, 2])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.tf.record() as rec:
        scores = model(batch)                          # before the tape: the loss gets no gradient to the weights
        with tf.GradientTape() as tape:
            loss = loss_fn(targets, scores)
        tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    by_role = {tr.node(e.src).name for e in tr.edges if (e.no_grad_reason or "").startswith("the labels")}
    assert by_role == {"targets"}, by_role
