"""Real Keras architectures through ``adv.tf.record()``: keras.applications MobileNetV2 and ResNet50, the
keras.io "Text classification with Transformer" model, and an LSTM classifier.

Built by Keras with random weights (``weights=None``, small inputs; nothing downloaded). As for the PyTorch
models (tests/test_real_models.py): recording changes nothing TensorFlow computes — the loss and every
gradient are bit for bit those of the same step unrecorded, and so are the trace's — and a whole step
recorded with ``optimizer.apply_gradients`` is traced with the weights the forward pass used, while the
model keeps its updated weights.
"""
from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.tf  # noqa: E402,F401

VALUES = 10 ** 8


def keras_io_transformer(maxlen=16, vocab=200, embed=16):
    """The model of keras.io's "Text classification with Transformer" example (its two custom layers as
    written there, smaller sizes): https://keras.io/examples/nlp/text_classification_with_transformer/"""
    from keras import layers, ops

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = layers.Dropout(rate)
            self.dropout2 = layers.Dropout(rate)

        def call(self, inputs, training=False):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output, training=training)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output, training=training)
            return self.layernorm2(out1 + ffn_output)

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            maxlen = ops.shape(x)[-1]
            positions = ops.arange(start=0, stop=maxlen, step=1)
            positions = self.pos_emb(positions)
            x = self.token_emb(x)
            return x + positions

    inputs = layers.Input(shape=(maxlen,))
    x = TokenAndPositionEmbedding(maxlen, vocab, embed)(inputs)
    x = TransformerBlock(embed, 2, 16)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(8, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def _model(kind):
    """A fresh model (the same weights and dropout seeds for the same kind), and one batch for it."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    if kind == "mobilenetv2":
        model = keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=4, alpha=0.35)
        x, y = rng.normal(size=(2, 32, 32, 3)).astype("float32"), rng.integers(0, 4, size=2)
    elif kind == "resnet50":
        model = keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=4)
        x, y = rng.normal(size=(2, 32, 32, 3)).astype("float32"), rng.integers(0, 4, size=2)
    elif kind == "kerasio":
        model = keras_io_transformer()
        x, y = rng.integers(0, 200, size=(4, 16)).astype("int32"), rng.integers(0, 2, size=4)
    else:
        model = keras.Sequential([keras.Input((10,)), keras.layers.Embedding(200, 8), keras.layers.LSTM(8),
                                  keras.layers.Dense(2, activation="softmax")])
        x, y = rng.integers(0, 200, size=(4, 10)).astype("int32"), rng.integers(0, 2, size=4)
    return model, tf.constant(x), tf.constant(y)


def _step(model, opt, x, y):
    with tf.GradientTape() as tape:
        loss = keras.losses.SparseCategoricalCrossentropy()(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss, grads


def _dense(g) -> np.ndarray:
    """A gradient's numbers (an ``Embedding``'s gradient comes as ``tf.IndexedSlices``)."""
    return tf.convert_to_tensor(g).numpy()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["mobilenetv2", "resnet50", "kerasio", "lstm"])
def test_a_recorded_training_step_is_bit_for_bit_the_plain_one_and_its_trace_shows_the_backward_pass(kind):
    plain, x, y = _model(kind)
    recorded, _, _ = _model(kind)
    before = [v.numpy().copy() for v in recorded.trainable_variables]
    loss_p, grads_p = _step(plain, keras.optimizers.Adam(1e-2), x, y)
    opt = keras.optimizers.Adam(1e-2)
    with adv.tf.record() as rec:
        loss, grads = _step(recorded, opt, x, y)

    assert np.array_equal(loss.numpy(), loss_p.numpy())
    for v, g, gp in zip(recorded.trainable_variables, grads, grads_p):
        assert np.array_equal(_dense(g), _dense(gp)), f"{kind}: the gradient of {v.path} differs"
    assert [op.kind for op in rec.ops].count("update") == 1      # apply_gradients: one record, not Adam's ops
    after = [v.numpy().copy() for v in recorded.trainable_variables]
    for v, w in zip(recorded.trainable_variables, plain.trainable_variables):
        assert np.array_equal(v.numpy(), w.numpy()), f"{v.path} after the update"

    trace = rec.trace(loss, recorded, value_limit=VALUES)
    shown = {n.name: n for n in trace.nodes if n.kind == "variable"}
    for v, w0, gp in zip(recorded.trainable_variables, before, grads_p):
        node = shown.get(v.path)
        assert node is not None, f"{v.path} is not in the trace ({sorted(shown)[:4]} …)"
        assert np.array_equal(node.value.data, w0), f"{v.path}: the trace shows the updated weights"
        assert np.array_equal(node.grad.data, _dense(gp)), f"{v.path}: the trace's gradient is not TensorFlow's"
    assert np.array_equal(trace.node(trace.target).value.data, loss_p.numpy())
    for v, w in zip(recorded.trainable_variables, after):       # the model is left as the step left it
        assert np.array_equal(v.numpy(), w), v.path


@pytest.mark.timeout(300)
def test_a_hand_written_update_is_traced_with_the_values_before_it():
    """``v.assign_sub(lr * g)`` by hand after ``tape.gradient``, inside the recording: the trace of the loss
    shows the weights the loss was computed with."""
    model, x, y = _model("lstm")
    kernel = model.layers[-1].kernel
    k0 = kernel.numpy().copy()
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = keras.losses.SparseCategoricalCrossentropy()(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(0.5 * tf.convert_to_tensor(g))
    node = next(n for n in rec.trace(loss, model, value_limit=VALUES).nodes if n.name == kernel.path)
    assert np.array_equal(node.value.data, k0)
    assert not np.array_equal(kernel.numpy(), k0)
