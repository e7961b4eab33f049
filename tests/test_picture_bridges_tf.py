"""A recorded Keras 3 step under ``adv.tf`` draws like the engine's own (issue 33).

``rec.trace(loss, model)`` of a real Keras ``Sequential`` of ``Dense`` layers run by TensorFlow: each layer a box
titled as ``model.summary()`` titles it (``hidden (Dense)``), each kernel and bias a node with TensorFlow's ḡ,
and the edges out of a layer state ``adv.layers.Dense.backward_text`` — the same text as the engine's picture.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402

DENSE = adv.layers.Dense.backward_text


def test_a_keras_dense_model_under_adv_tf_shows_its_layers_weights_and_the_dense_formulas():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu", name="hidden"),
                              keras.layers.Dense(3, name="head")])
    x_batch = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    y_batch = np.array([0, 1, 2, 0, 1])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            logits = model(x_batch)
            loss = loss_fn(y_batch, logits)
        grads = tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    text = tr.to_dot("backward")
    assert 'label="hidden (Dense)\\n→ (5, 8) float32' in text and 'label="head (Dense)\\n→ (5, 3) float32' in text
    for v, g in zip(model.trainable_variables, grads):       # every weight a node, with TensorFlow's gradient
        node = tr.node(next(n.id for n in tr.nodes if n.kind == "variable" and n.name.endswith(v.path)))
        line = next(ln for ln in text.splitlines() if f'"bwd_{node.id}" [' in ln)
        assert "ḡ = " in line
        assert np.isclose(node.grad.stats["norm"], np.linalg.norm(g.numpy()), rtol=1e-5)
        edge = next(ln for ln in text.splitlines() if f'-> "bwd_{node.id}"' in ln)
        y = "logits" if "head/" in v.path else "hidden"
        role = "kernel" if v.path.endswith("kernel") else "bias"
        assert DENSE[role].replace("ḡ_y", "ḡ_" + y) in edge, v.path
    assert DENSE["x"].replace("ḡ_y", "ḡ_logits").replace("ḡ_x", "ḡ_hidden") in text    # head's input: hidden's output
    assert "VJP of" not in text and "ḡ_constant" not in text


def test_two_keras_models_of_one_structure_are_two_parts_by_the_learners_variables():
    """``encoder`` and ``decoder``, two ``keras.Sequential`` of the same layers: two boxes titled as the learner's
    code calls them (Keras named them ``sequential`` and ``sequential_1``), not "Sequential × 2"."""
    from autodiff_viz.views import folding
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    decoder = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(4)])
    x = tf.constant(np.random.default_rng(0).normal(size=(3, 4)).astype("float32"))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            z = encoder(x)
            recon = decoder(z)
            loss = tf.reduce_mean((recon - x) ** 2)
        tape.gradient(loss, encoder.trainable_variables + decoder.trainable_variables)
    tr = rec.trace(loss)
    assert not folding.hierarchy(tr).repeats
    text = tr.to_dot("backward")
    assert 'label="encoder (Sequential)\\n' in text and 'label="decoder (Sequential)\\n' in text
    assert "ḡ_z = ḡ_recon back through decoder" in text
