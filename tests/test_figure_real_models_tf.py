"""Real Keras architectures under ``adv.tf`` drawn as a paper draws them (issue 42, the picture half).

``keras.applications.MobileNetV2(weights=None)`` is a flat functional model: 150 layers called directly inside
the model. Its default picture groups them by the block names Keras gives them (``block_3_expand`` … →
``block_3``), draws blocks of one structure in a row as one box "× N", and keeps the BatchNorm statistics as
state without gradient. A Keras loss's edges go by role: the prediction's edge carries the formula, the labels'
says it carries none.
"""
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
from autodiff_viz.views import folding, render  # noqa: E402


def _labels(text: str) -> list:
    return [m.replace("\\n", "\n") for m in re.findall(r'label="((?:[^"\\]|\\.)*)"', text)]


@pytest.fixture(scope="module")
def mobilenet():
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=5)
    images = np.random.default_rng(0).random((2, 32, 32, 3)).astype("float32")
    labels = np.array([1, 3])
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            probs = model(images, training=True)
            loss = loss_fn(labels, probs)
        tape.gradient(loss, model.trainable_variables)
    return rec.trace(loss, model), model


def test_mobilenets_default_figure_is_its_blocks_by_name_with_repeats(mobilenet):
    tr, model = mobilenet
    lay = folding.layout(tr)
    groups = [b.title for b in sorted(lay.boxes.values(), key=lambda b: b.order) if b.kind == "group"]
    for name in ("Conv1", "bn_Conv1", "expanded_conv", "block_1", "block_2", "block_3", "block_16", "predictions"):
        assert name in groups, (name, groups)
    repeats = {(b.title, b.count) for b in lay.boxes.values() if b.kind == "repeat"}
    assert ("block_7 … block_9", 3) in repeats                    # three blocks of one structure in a row
    assert len(lay.boxes) <= folding.NODE_BUDGET and not lay.notes
    text = tr.to_dot("backward")
    assert render.smallest_label_px(render.svg(render.readable(text))) >= render.MIN_LABEL_PX
    block = next(lab for lab in _labels(text) if lab.startswith("block_2\n"))
    assert "made of" in block and "(+ skip)" in block                # block_2_add: the inverted residual
    # the block opens to its layers, each with its formula
    key = next(k for k, g in folding.hierarchy(tr).groups.items() if g.title == "block_2")
    opened = tr.to_dot("backward", expanded={key})
    assert "block_2_expand (Conv2D)" in opened and "block_2_add (Add)" in opened


def test_mobilenets_moving_statistics_are_state_without_gradient(mobilenet):
    tr, model = mobilenet
    state = {n.name: n for n in tr.nodes if n.kind == "state"}
    assert "bn_Conv1/moving_mean" in state and "bn_Conv1/moving_variance" in state
    for n in state.values():
        assert n.grad is None and all(not e.differentiable for e in tr.edges_from(n.id))
    assert tr.node_id_of(model.get_layer("bn_Conv1").moving_mean) == state["bn_Conv1/moving_mean"].id
    kernel = model.get_layer("Conv1").kernel
    assert tr.node(tr.node_id_of(kernel)).name == "Conv1/kernel"      # node_id_of takes a Keras variable


def test_a_keras_binary_crossentropy_writes_its_formula_on_the_prediction_not_the_labels():
    keras.utils.set_random_seed(0)
    inp = keras.Input((4,))
    out = keras.layers.Dense(1, name="head")(keras.layers.Dense(3, name="dense_1")(inp))
    model = keras.Model(inp, out)
    x = np.random.default_rng(0).random((2, 4)).astype("float32")
    y = np.array([[1.0], [0.0]], dtype="float32")
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = bce(y, logits)
        tape.gradient(loss, model.trainable_variables)
    text = rec.trace(loss, model).to_dot("backward")
    labels = _labels(text)
    assert "no gradient: labels" in labels
    formula = [lab for lab in labels if "σ(" in lab]
    assert formula and all(lab.startswith("ḡ_logits = (σ(logits) − y)") for lab in formula)
    assert 'label="dense_1/kernel\\n' in text and 'label="head/kernel\\n' in text     # weights by their layer


def test_a_dropouts_seed_state_is_state_not_a_gradient_input():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, name="hidden"),
                              keras.layers.Dropout(0.5, seed=1, name="drop"), keras.layers.Dense(1, name="out")])
    x = np.random.default_rng(0).random((3, 4)).astype("float32")
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    seeds = [n for n in tr.nodes if n.kind == "state"]
    assert seeds and all("seed" in n.name for n in seeds)
    for n in seeds:
        assert all(not e.differentiable for e in tr.edges_from(n.id))
    key = next(k for k, g in folding.hierarchy(tr).groups.items() if g.title == "drop")
    text = tr.to_dot("backward", expanded={key})
    assert "mask / (1 − rate)" not in " ".join(lab for lab in _labels(text) if "seed" in lab)
    assert "no gradient: state" in text


def test_a_keras_loss_box_lists_no_plumbing_as_what_it_is_made_of():
    """The CNN of TensorFlow's tutorial "Convolutional Neural Network (CNN)"
    (https://www.tensorflow.org/tutorials/images/cnn: ``Conv2D``/``MaxPooling2D`` layers, ``Flatten``, ``Dense``,
    ``SparseCategoricalCrossentropy(from_logits=True)``; reduced to one convolution), one step with a
    ``GradientTape``. The loss computes its batch size with ops that carry no gradient (``Prod``, ``Cast``); they
    are drawn as plumbing inside the loss box, and the box said "made of Prod, Cast (no gradient)" as if the loss
    were built of them. A loss is a formula, not a block of parts."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((12, 12, 3)), keras.layers.Conv2D(4, 3, activation="relu"),
                              keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dense(5)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = np.random.default_rng(0).random((4, 12, 12, 3)).astype("float32")
    y = np.array([0, 3, 1, 4])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        tape.gradient(loss, model.trainable_variables)
    labels = _labels(rec.trace(loss, model).to_dot("backward"))
    head = next(lab for lab in labels if lab.startswith("sparse_categorical_crossentropy"))
    assert "made of" not in head, head
    assert any("softmax(logits)" in lab for lab in labels)          # its formula, on the prediction's edge
    for layer in model.layers:                      # Keras numbers the names (conv2d_3) after earlier models
        title = f"{layer.name} ({type(layer).__name__})"
        assert any(lab.startswith(title) for lab in labels), (title, labels)
