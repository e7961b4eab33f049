"""adv.tf.to_keras / load_from: an autodiff_viz model as a real Keras 3 model with the same weights, and back."""
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

L = adv.layers
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-9)}
DTYPES = ["float32", "float64"]


def _randomize(model, seed=0):
    """Every weight random (a fresh layer's zeros and ones would hide a bias or a statistic copied wrong)."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        shape = tuple(w.shape)
        value = rng.uniform(0.5, 2.0, shape) if w.name.endswith("variance") else rng.normal(0, 0.5, shape)
        w.assign(value.astype(w.dtype))


def _one_layer(make, shape, dtype, int_input=False):
    x = L.Input(shape, dtype="int32" if int_input else dtype)
    out = make(dtype)(x)
    return adv.Model(x, out, name="one")


def _assert_same_outputs(model, x, dtype):
    km = adv.tf.to_keras(model)
    ours = model(x, training=False)
    theirs = km(x, training=False)
    for a, b in zip(tf.nest.flatten(ours), tf.nest.flatten(theirs)):
        a, b = np.asarray(a.numpy()), b.numpy()
        assert a.dtype == b.dtype == np.dtype(dtype) and a.shape == b.shape
        np.testing.assert_allclose(b, a, **TOL[dtype])
    return km


def _x(shape, dtype, seed=1):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# (id, layer maker, input shape without batch)
FAMILIES = [
    ("dense", lambda d: L.Dense(5, dtype=d), (4,)),
    ("dense_no_bias_3d", lambda d: L.Dense(3, use_bias=False, dtype=d), (2, 4)),
    ("conv1d_same_strided", lambda d: L.Conv1D(4, 3, strides=2, padding="same", activation="relu", dtype=d), (9, 3)),
    ("conv2d_dilated", lambda d: L.Conv2D(3, 3, dilation_rate=2, dtype=d), (8, 8, 2)),
    ("conv2d_same", lambda d: L.Conv2D(3, (3, 2), strides=2, padding="same", dtype=d), (7, 6, 2)),
    ("conv1d_transpose", lambda d: L.Conv1DTranspose(3, 3, strides=2, dtype=d), (5, 2)),
    ("conv2d_transpose_same", lambda d: L.Conv2DTranspose(2, 3, strides=2, padding="same", dtype=d), (4, 5, 3)),
    ("max_pool2d", lambda d: L.MaxPooling2D(2, dtype=d), (6, 6, 2)),
    ("max_pool1d_same", lambda d: L.MaxPooling1D(3, strides=2, padding="same", dtype=d), (7, 2)),
    ("avg_pool2d", lambda d: L.AveragePooling2D((2, 3), dtype=d), (6, 6, 2)),
    ("avg_pool1d_same", lambda d: L.AveragePooling1D(3, strides=2, padding="same", dtype=d), (7, 2)),
    ("global_avg2d", lambda d: L.GlobalAveragePooling2D(dtype=d), (4, 4, 3)),
    ("global_max1d", lambda d: L.GlobalMaxPooling1D(keepdims=True, dtype=d), (5, 3)),
    ("flatten", lambda d: L.Flatten(dtype=d), (3, 2, 2)),
    ("reshape", lambda d: L.Reshape((2, 6), dtype=d), (3, 4)),
    ("permute", lambda d: L.Permute((2, 1, 3), dtype=d), (3, 4, 2)),
    ("dropout", lambda d: L.Dropout(0.5, dtype=d), (6,)),
    ("batch_norm", lambda d: L.BatchNormalization(momentum=0.875, epsilon=0.0625, dtype=d), (3, 4)),
    ("batch_norm_axis1", lambda d: L.BatchNormalization(axis=1, center=False, dtype=d), (3, 4)),
    ("layer_norm", lambda d: L.LayerNormalization(epsilon=0.0625, dtype=d), (3, 4)),
    ("layer_norm_two_axes", lambda d: L.LayerNormalization(axis=[-2, -1], dtype=d), (3, 4)),
    ("simple_rnn", lambda d: L.SimpleRNN(4, dtype=d), (5, 3)),
    ("lstm_sequences", lambda d: L.LSTM(4, return_sequences=True, dtype=d), (5, 3)),
    ("lstm_no_forget_bias_relu", lambda d: L.LSTM(3, unit_forget_bias=False, activation="relu", dtype=d), (5, 3)),
    ("gru_reset_after", lambda d: L.GRU(4, return_sequences=True, dtype=d), (5, 3)),
    ("gru_reset_before", lambda d: L.GRU(4, reset_after=False, dtype=d), (5, 3)),
    ("gru_backwards", lambda d: L.GRU(3, go_backwards=True, return_sequences=True, dtype=d), (5, 3)),
    ("bidirectional_lstm", lambda d: L.Bidirectional(L.LSTM(3, return_sequences=True, dtype=d), dtype=d), (5, 2)),
    ("bidirectional_gru_sum", lambda d: L.Bidirectional(L.GRU(3, dtype=d), merge_mode="sum", dtype=d), (5, 2)),
    ("activation_softplus", lambda d: L.Activation("softplus", dtype=d), (5,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", FAMILIES, ids=[c[0] for c in FAMILIES])
def test_each_layer_family_gives_the_same_outputs_in_keras(case, dtype):
    _, make, shape = case
    model = _one_layer(make, shape, dtype)
    _randomize(model)
    km = _assert_same_outputs(model, _x((3, *shape), dtype), dtype)
    assert [layer.name for layer in km.layers[1:]] == [layer.name for layer in model.layers[1:]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid", "softmax", "softplus", "elu", "selu", "silu",
                                        "linear", "log_softmax", "softsign", "exponential"])
def test_activations_by_name_go_over(activation, dtype):
    model = _one_layer(lambda d: L.Dense(4, activation=activation, dtype=d), (3,), dtype)
    _randomize(model)
    _assert_same_outputs(model, _x((5, 3), dtype), dtype)
    assert adv.tf.to_keras(model).layers[-1].get_config()["activation"] == activation


@pytest.mark.parametrize("activation", ["gelu", "leaky_relu"])
def test_gelu_and_leaky_relu_agree_to_keras_float32_constants(activation):
    """Keras' gelu and leaky_relu (slope 0.2) use float32 constants even for float64 inputs (gelu is about
    4e-9 off the exact erf form autodiff_viz computes), so in float64 they agree to 1e-8, not 1e-9."""
    model = _one_layer(lambda d: L.Dense(4, activation=activation, dtype=d), (3,), "float64")
    _randomize(model)
    x = _x((5, 3), "float64")
    km = adv.tf.to_keras(model)
    np.testing.assert_allclose(km(x).numpy(), model(x).numpy(), rtol=0, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_takes_integer_ids(dtype):
    model = _one_layer(lambda d: L.Embedding(10, 4, dtype=d), (5,), dtype, int_input=True)
    _randomize(model)
    ids = np.random.default_rng(0).integers(0, 10, size=(3, 5)).astype("int32")
    _assert_same_outputs(model, ids, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_head_attention_self_and_cross(dtype):
    q = L.Input((4, 6), dtype=dtype)
    v = L.Input((3, 5), dtype=dtype)
    mha = L.MultiHeadAttention(num_heads=2, key_dim=4, dtype=dtype, name="mha")    # 1/sqrt(4) exact in float32
    self_att = mha(q, q)
    cross = L.MultiHeadAttention(num_heads=3, key_dim=4, value_dim=2, output_shape=7, dtype=dtype)(q, v)
    model = adv.Model([q, v], [self_att, cross])
    _randomize(model)
    _assert_same_outputs(model, [_x((2, 4, 6), dtype), _x((2, 3, 5), dtype, seed=2)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("merge", ["Add", "Concatenate", "Multiply", "Subtract", "Average", "Maximum"])
def test_merge_layers(merge, dtype):
    a, b = L.Input((4,), dtype=dtype), L.Input((4,), dtype=dtype)
    ha, hb = L.Dense(3, dtype=dtype)(a), L.Dense(3, dtype=dtype)(b)
    model = adv.Model([a, b], L.Dense(2, dtype=dtype)(getattr(L, merge)(dtype=dtype)([ha, hb])))
    _randomize(model)
    _assert_same_outputs(model, [_x((5, 4), dtype), _x((5, 4), dtype, seed=2)], dtype)


# ----- whole models ---------------------------------------------------------------------------------
def _cnn(dtype):
    return adv.Sequential([
        L.Input((10, 10, 1), dtype=dtype),
        L.Conv2D(4, 3, activation="relu", dtype=dtype), L.BatchNormalization(dtype=dtype),
        L.MaxPooling2D(dtype=dtype), L.Conv2D(6, 3, padding="same", activation="tanh", dtype=dtype),
        L.GlobalAveragePooling2D(dtype=dtype), L.Dropout(0.25, dtype=dtype),
        L.Dense(3, activation="softmax", dtype=dtype),
    ], name="cnn")


def _skip(dtype):
    x = L.Input((6,), dtype=dtype, name="features")
    h = L.Dense(6, activation="relu", dtype=dtype, name="h")(x)
    h = L.LayerNormalization(dtype=dtype, name="norm")(h)
    s = L.Add(dtype=dtype, name="skip")([x, h])
    return adv.Model(x, L.Dense(2, dtype=dtype, name="head")(s * 0.5 + s), name="skip_model")


def _nested(dtype):
    block = adv.Sequential([L.Input((4,), dtype=dtype), L.Dense(5, activation="tanh", dtype=dtype),
                            L.Dense(4, dtype=dtype)], name="block")
    x = L.Input((4,), dtype=dtype)
    y = block(block(x))                                   # a shared nested model, called twice
    inner = adv.Model(x, L.Concatenate(dtype=dtype)([y, x]), name="inner")
    return adv.Sequential([L.Input((4,), dtype=dtype), inner, L.Dense(1, dtype=dtype)], name="outer")


def _lstm(dtype):
    return adv.Sequential([L.Input((None,), dtype="int32"), L.Embedding(12, 5, dtype=dtype),
                           L.LSTM(6, return_sequences=True, dtype=dtype), L.LSTM(4, dtype=dtype),
                           L.Dense(1, activation="sigmoid", dtype=dtype)], name="lstm_model")


MODELS = {"cnn": (_cnn, lambda d: _x((4, 10, 10, 1), d)),
          "skip": (_skip, lambda d: _x((4, 6), d)),
          "nested": (_nested, lambda d: _x((4, 4), d)),
          "lstm": (_lstm, lambda d: np.random.default_rng(0).integers(0, 12, size=(4, 7)).astype("int32"))}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", list(MODELS))
def test_whole_models_give_the_same_outputs(kind, dtype):
    make, data = MODELS[kind]
    model = make(dtype)
    _randomize(model)
    km = _assert_same_outputs(model, data(dtype), dtype)
    assert isinstance(km, keras.Model) and km.name == model.name
    assert len(km.weights) == len(model.weights)


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_model_trained_in_keras_comes_home(kind):
    """Train the exported model with Keras' fit (weights and BatchNormalization's moving statistics change),
    load_from copies them back, and the two models agree again."""
    make, data = MODELS[kind]
    model = make("float64")
    _randomize(model)
    km = adv.tf.to_keras(model)
    x = data("float64")
    y = np.random.default_rng(3).normal(size=km(x).shape).astype("float64")
    before = [w.numpy().copy() for w in model.weights]
    km.compile(optimizer=keras.optimizers.SGD(0.125), loss="mse")
    km.fit(x, y, epochs=2, batch_size=2, verbose=0)
    assert all(np.array_equal(b, w.numpy()) for b, w in zip(before, model.weights))   # export copied, not shared
    adv.tf.load_from(model, km)
    for layer in model.layers:                 # layer by layer (Keras lists a model's weights in another order)
        if layer.weights and not isinstance(layer, adv.Model):
            for ours, theirs in zip(layer.weights, km.get_layer(layer.name).weights):
                np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert any(not np.array_equal(b, w.numpy()) for b, w in zip(before, model.weights))
    np.testing.assert_allclose(model(x, training=False).numpy(), km(x, training=False).numpy(), rtol=1e-9, atol=1e-9)
    if kind == "cnn":
        bn = next(layer for layer in model.layers if isinstance(layer, L.BatchNormalization))
        kbn = km.get_layer(bn.name)
        np.testing.assert_array_equal(bn.moving_mean.numpy(), kbn.moving_mean.numpy())
        np.testing.assert_array_equal(bn.moving_variance.numpy(), kbn.moving_variance.numpy())


def test_regularizers_go_over_as_keras_objects():
    model = _one_layer(lambda d: L.Dense(3, kernel_regularizer=adv.regularizers.L2(0.125), dtype=d), (2,), "float64")
    km = adv.tf.to_keras(model)
    reg = km.layers[-1].kernel_regularizer
    assert isinstance(reg, keras.regularizers.L2) and reg.l2 == 0.125
    np.testing.assert_allclose(float(sum(km.losses)), float(adv.sum(model.losses[0]).numpy()), rtol=1e-6)


# ----- what does not export: clear errors ------------------------------------------------------------
class Scale(L.Layer):
    def build(self, input_shape):
        self.s = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="s")

    def call(self, x):
        return x * self.s


def test_a_layer_of_ones_own_is_refused_by_name():
    x = L.Input((3,))
    model = adv.Model(x, Scale(name="my_scale")(x))
    with pytest.raises(adv.tf.ExportError, match=r"my_scale.*Scale.*class of your own.*keras\.layers\.Layer"):
        adv.tf.to_keras(model)


def test_lambda_and_python_activations_are_refused_with_the_fix():
    x = L.Input((3,))
    with pytest.raises(adv.tf.ExportError, match=r"'lam' \(Lambda\).*autodiff_viz ops"):
        adv.tf.to_keras(adv.Model(x, L.Lambda(lambda t: t * 2, name="lam")(x)))
    x = L.Input((3,))
    with pytest.raises(adv.tf.ExportError, match=r"'d' \(Dense\): activation is the Python function.*by name"):
        adv.tf.to_keras(adv.Model(x, L.Dense(2, activation=lambda t: t, name="d")(x)))


def test_a_subclassed_model_is_refused_naming_its_layers():
    class Net(adv.Model):
        def __init__(self):
            super().__init__(name="net")
            self.fc = L.Dense(2, name="fc")

        def call(self, x):
            return self.fc(x) * 2

    net = Net()
    net(np.ones((1, 3), "float32"))
    with pytest.raises(adv.tf.ExportError, match=r"net \(Net\) is a subclassed model.*Sequential.*fc \(Dense\)"):
        adv.tf.to_keras(net)


def test_load_from_checks_everything_before_writing():
    model = _skip("float64")
    other = adv.Sequential([L.Input((6,), dtype="float64"), L.Dense(6, dtype="float64", name="h")])
    km = adv.tf.to_keras(other)
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(ValueError, match="no layer of that name"):
        adv.tf.load_from(model, km)
    assert all(np.array_equal(b, w.numpy()) for b, w in zip(before, model.weights))
    with pytest.raises(TypeError, match="Keras model"):
        adv.tf.load_from(model, other)


def test_every_field_is_checked_against_the_keras_layer():
    """A layer whose attributes drifted from its config (here return_sequences set after construction) would
    give Keras a different layer: the export refuses it, naming the field, instead of computing something else."""
    x = L.Input((5, 3))
    lstm = L.LSTM(4, name="drifted")
    model = adv.Model(x, lstm(x))
    lstm.return_sequences = True
    with pytest.raises(adv.tf.ExportError, match=r"'drifted' \(LSTM\).*return_sequences: ours True, Keras False"):
        adv.tf.to_keras(model)


def test_a_sequential_built_by_its_first_call_exports_with_that_input_shape():
    model = adv.Sequential([L.Dense(3, activation="tanh"), L.Dense(1)], name="late")
    with pytest.raises(adv.tf.ExportError, match="not built yet.*Call the model on a batch first"):
        adv.tf.to_keras(model)
    x = _x((4, 5), "float32")
    model(x)
    km = _assert_same_outputs(model, x, "float32")
    assert km.input_shape == (None, 5)
