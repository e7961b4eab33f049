"""Layers against hand-written numpy: Dense and RNN values and gradients, custom cells, names, scopes."""
import re

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import layers


@pytest.fixture(autouse=True)
def fresh_session():
    layers.clear_session()
    layers.set_random_seed(0)


def np_sigmoid(z):
    return 1 / (1 + np.exp(-z))


NP_ACTIVATIONS = {
    "linear": lambda z: z,
    "relu": lambda z: np.maximum(z, 0),
    "tanh": np.tanh,
    "sigmoid": np_sigmoid,
    "softmax": lambda z: (np.exp(z - z.max(-1, keepdims=True))
                          / np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "softplus": lambda z: np.log1p(np.exp(z)),
    "leaky_relu": lambda z: np.where(z > 0, z, 0.2 * z),
}


@pytest.mark.parametrize("name", sorted(NP_ACTIVATIONS))
def test_dense_forward_matches_numpy_for_every_activation(name):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 4))
    layer = layers.Dense(3, activation=name, dtype="float64", bias_initializer="normal")
    y = layer(x)
    expected = NP_ACTIVATIONS[name](x @ layer.kernel.numpy() + layer.bias.numpy())
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_dense_gradients_match_hand_written_backprop():
    rng = np.random.default_rng(2)
    x_np, t = rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    layer = layers.Dense(3, activation="tanh", dtype="float64")
    x = adv.constant(x_np)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = 0.5 * adv.sum((y - t) ** 2)
    gW, gb, gx = tape.gradient(loss, [layer.kernel, layer.bias, x])

    W, b = layer.kernel.numpy(), layer.bias.numpy()
    y_np = np.tanh(x_np @ W + b)
    dz = (y_np - t) * (1 - y_np ** 2)
    np.testing.assert_allclose(gW.numpy(), x_np.T @ dz, rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), dz.sum(0), rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), dz @ W.T, rtol=1e-10)


def test_dense_applies_to_the_last_axis_and_builds_lazily():
    layer = layers.Dense(2, use_bias=False)
    assert not layer.built and layer.weights == []
    y = layer(np.ones((3, 5, 4)))
    assert layer.built and y.shape == (3, 5, 2)
    assert [(w.name, w.path) for w in layer.weights] == [("kernel", "dense/kernel")]
    with pytest.raises(ValueError, match=r"built for inputs with 4 features"):
        layer(np.ones((3, 7)))


def test_names_are_unique_and_readable_and_reset_by_clear_session():
    a, b, c = layers.Dense(1), layers.Dense(1), layers.SimpleRNN(2)
    assert (a.name, b.name, c.name) == ("dense", "dense_1", "simple_rnn")
    assert layers.Dense(1, name="head").name == "head"
    layers.clear_session()
    assert layers.Dense(1).name == "dense"


def test_layers_default_to_float32_and_cast_inputs_keeping_the_gradient():
    layer = layers.Dense(2)
    x = adv.constant(np.ones((1, 3)))            # float64
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    assert layer.kernel.dtype == np.float32 and y.dtype == np.float32
    gx = tape.gradient(y, x)
    assert gx.dtype == np.float64
    np.testing.assert_allclose(gx.numpy(), np.ones((1, 2)) @ layer.kernel.numpy().T, rtol=1e-6)


class Scale(layers.Layer):
    def __init__(self, initializer, **kwargs):
        super().__init__(**kwargs)
        self.initializer = initializer

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer=self.initializer, name="w")
        self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count")

    def call(self, inputs):
        return inputs * self.w


@pytest.mark.parametrize("init, check", [
    ("zeros", lambda w: np.all(w == 0)),
    ("ones", lambda w: np.all(w == 1)),
    ("uniform", lambda w: np.all(np.abs(w) <= 0.05) and w.std() > 0),
    ("normal", lambda w: 0.02 < w.std() < 0.08),
    ("glorot_uniform", lambda w: np.all(np.abs(w) <= np.sqrt(6 / (400 + 400)))),
    (lambda shape, dtype=None: np.full(shape, 3.0), lambda w: np.all(w == 3)),
    (lambda shape: np.arange(shape[0]), lambda w: np.all(w == np.arange(400))),
])
def test_add_weight_initializers(init, check):
    layer = Scale(init)
    layer(np.ones((1, 400)))
    assert check(layer.w.numpy())


def test_unknown_initializer_and_activation_name_the_choices():
    with pytest.raises(ValueError, match="glorot_uniform"):
        Scale("glorot")(np.ones((1, 2)))
    with pytest.raises(ValueError, match="relu"):
        layers.Dense(2, activation="rleu")


def test_trainable_and_non_trainable_weights():
    layer = Scale("ones", name="scale")
    layer(np.ones((2, 3)))
    assert [(v.name, v.path) for v in layer.trainable_variables] == [("w", "scale/w")]
    assert [v.path for v in layer.non_trainable_variables] == ["scale/count"]
    assert [v.path for v in layer.weights] == ["scale/w", "scale/count"]
    layer.trainable = False
    assert layer.trainable_variables == [] and len(layer.non_trainable_variables) == 2


def test_set_weights_round_trip_and_all_or_nothing():
    layer = layers.Dense(2)
    layer(np.ones((1, 3)))
    saved = layer.get_weights()
    layer.set_weights([np.zeros((3, 2)), np.ones(2)])
    np.testing.assert_array_equal(layer.bias.numpy(), np.ones(2))
    with pytest.raises(ValueError, match=r"dense/bias has shape \(2,\)"):
        layer.set_weights([saved[0], np.zeros(5)])
    np.testing.assert_array_equal(layer.kernel.numpy(), np.zeros((3, 2)))   # first array not applied either
    layer.set_weights(saved)
    np.testing.assert_array_equal(layer.kernel.numpy(), saved[0])


def test_output_before_any_call_is_a_clear_error():
    layer = layers.Dense(1)
    with pytest.raises(AttributeError, match="has not been called yet"):
        layer.output


def test_forgetting_super_init_is_explained():
    class Broken(layers.Layer):
        def __init__(self):
            pass

        def call(self, x):
            return x
    with pytest.raises(RuntimeError, match=r"super\(\).__init__"):
        Broken()(np.ones(2))


# ---------------------------------------------------------------------------
# recurrent layers
# ---------------------------------------------------------------------------
def numpy_simple_rnn(x, W, U, b):
    h = np.zeros((x.shape[0], W.shape[1]))
    hs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ W + b + h @ U)
        hs.append(h)
    return np.stack(hs, axis=1)


def test_simple_rnn_forward_matches_numpy_loop():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 3))
    rnn = layers.SimpleRNN(4, return_sequences=True, return_state=True, dtype="float64", bias_initializer="normal")
    seq, state = rnn(x)
    cell = rnn.cell
    expected = numpy_simple_rnn(x, cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy())
    np.testing.assert_allclose(seq.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(state.numpy(), expected[:, -1], rtol=1e-12)
    assert [w.path for w in rnn.weights] == [f"{rnn.name}/{cell.name}/{n}" for n in ("kernel", "recurrent_kernel",
                                                                                   "bias")]
    assert cell.name.startswith("simple_rnn_cell")
    last = layers.SimpleRNN(4, dtype="float64")
    with pytest.raises(ValueError, match="not built yet"):
        last.cell.set_weights(cell.get_weights())
    last(x)
    last.cell.set_weights(cell.get_weights())
    np.testing.assert_allclose(last(x).numpy(), expected[:, -1], rtol=1e-12)


def test_simple_rnn_gradients_match_backprop_through_time():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4, 2))
    rnn = layers.SimpleRNN(3, return_sequences=True, dtype="float64")
    with adv.GradientTape() as tape:
        seq = rnn(x)
        loss = adv.sum(seq ** 2)
    gW, gU, gb = tape.gradient(loss, [rnn.cell.kernel, rnn.cell.recurrent_kernel, rnn.cell.bias])

    W, U, b = (v.numpy() for v in (rnn.cell.kernel, rnn.cell.recurrent_kernel, rnn.cell.bias))
    hs = numpy_simple_rnn(x, W, U, b)
    dW, dU, db = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    dh_next = np.zeros((3, 3))
    for t in reversed(range(4)):
        dh = 2 * hs[:, t] + dh_next
        dz = dh * (1 - hs[:, t] ** 2)
        h_prev = hs[:, t - 1] if t > 0 else np.zeros((3, 3))
        dW += x[:, t].T @ dz
        dU += h_prev.T @ dz
        db += dz.sum(0)
        dh_next = dz @ U.T
    np.testing.assert_allclose(gW.numpy(), dW, rtol=1e-10)
    np.testing.assert_allclose(gU.numpy(), dU, rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), db, rtol=1e-10)


class MinimalRNNCell(layers.Layer):
    """Written as in the Keras guide on custom RNN cells."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                name="recurrent_kernel")
        self.built = True

    def call(self, inputs, states):
        prev_output = states[0]
        h = adv.matmul(inputs, self.kernel)
        output = h + adv.matmul(prev_output, self.recurrent_kernel)
        return output, [output]


def test_custom_cell_in_rnn_matches_numpy():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 4))
    rnn = layers.RNN(MinimalRNNCell(5, dtype="float64"), return_sequences=True, dtype="float64")
    y = rnn(x)
    K, R = rnn.cell.kernel.numpy(), rnn.cell.recurrent_kernel.numpy()
    h, expected = np.zeros((2, 5)), []
    for t in range(3):
        h = x[:, t] @ K + h @ R
        expected.append(h)
    np.testing.assert_allclose(y.numpy(), np.stack(expected, 1), rtol=1e-12)
    assert rnn.name == "rnn" and rnn.cell.kernel.path == "rnn/minimal_rnn_cell/kernel"


class TwoStateCell(layers.Layer):
    """A cell with two states (like an LSTM's h and c) that returns new states as a tuple."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.state_size = [units, units]
        self.dense = layers.Dense(units, dtype=kwargs.get("dtype"))

    def call(self, inputs, states):
        h, c = states
        c = c + self.dense(inputs)
        h = adv.tanh(c) + 0.5 * h
        return h, (h, c)


def test_cell_with_a_list_of_states_and_return_state():
    rnn = layers.RNN(TwoStateCell(3, dtype="float64"), return_state=True, dtype="float64")
    x = np.random.default_rng(6).normal(size=(2, 4, 2))
    out, h, c = rnn(x)
    W, b = rnn.cell.dense.kernel.numpy(), rnn.cell.dense.bias.numpy()
    hh, cc = np.zeros((2, 3)), np.zeros((2, 3))
    for t in range(4):
        cc = cc + x[:, t] @ W + b
        hh = np.tanh(cc) + 0.5 * hh
    np.testing.assert_allclose(out.numpy(), hh, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), cc, rtol=1e-12)
    assert h is out or np.array_equal(h.numpy(), out.numpy())


def test_rnn_initial_state_and_go_backwards():
    rnn = layers.SimpleRNN(2, dtype="float64", go_backwards=True)
    x = np.random.default_rng(7).normal(size=(1, 3, 2))
    h0 = np.full((1, 2), 0.3)
    y = rnn(x, initial_state=[h0])
    W, U, b = (v.numpy() for v in rnn.cell.weights)
    h = h0
    for t in (2, 1, 0):
        h = np.tanh(x[:, t] @ W + b + h @ U)
    np.testing.assert_allclose(y.numpy(), h, rtol=1e-12)


def test_rnn_rejects_inputs_without_a_time_axis():
    with pytest.raises(ValueError, match=r"\(batch, time, features\)"):
        layers.SimpleRNN(2)(np.ones((4, 3)))


# ---------------------------------------------------------------------------
# layer.output as a gradient source, and scopes on the tape
# ---------------------------------------------------------------------------
class Tagger(adv.Model):
    def __init__(self):
        super().__init__(dtype="float64")
        self.rnn = layers.RNN(MinimalRNNCell(4, dtype="float64"), return_sequences=True, dtype="float64")
        self.head = layers.Dense(2, dtype="float64")

    def call(self, x):
        return self.head(self.rnn(x))


def test_gradient_with_respect_to_an_internal_layer_output():
    model = Tagger()
    x = np.random.default_rng(8).normal(size=(2, 3, 5))
    with adv.GradientTape() as tape:
        y = model(x)
        loss = adv.sum(y ** 2)
    g = tape.gradient(loss, model.get_layer("rnn").output)
    W = model.head.kernel.numpy()
    np.testing.assert_allclose(g.numpy(), (2 * y.numpy()) @ W.T, rtol=1e-12)


def test_layer_output_of_a_call_outside_the_tape_has_no_gradient():
    model = Tagger()
    x = np.ones((1, 2, 5))
    with adv.GradientTape() as tape:
        loss = adv.sum(model(x))
    stale = model.get_layer("rnn").output
    model(x)                                 # a later call, outside the tape
    assert model.get_layer("rnn").output is not stale
    assert tape.gradient(loss, model.get_layer("rnn").output) is None


def test_every_recorded_op_carries_the_scope_of_its_layer():
    model = Tagger()
    with adv.GradientTape() as tape:
        adv.sum(model(np.ones((1, 2, 5))))
    scopes = {node.scope for node in tape.nodes}
    assert {"tagger/rnn", "tagger/rnn/minimal_rnn_cell", "tagger/dense"} <= scopes
    matmuls = {node.scope for node in tape.nodes if node.rule.name == "matmul"}
    assert matmuls == {"tagger/rnn/minimal_rnn_cell", "tagger/dense"}


def test_freezing_a_layer_freezes_its_variables_as_keras_3():
    dense = adv.layers.Dense(2, name="frozen_dense")
    x = np.ones((1, 3))
    dense(x)
    dense.trainable = False
    assert not dense.kernel.trainable and not dense.bias.trainable
    assert dense.trainable_variables == [] and len(dense.non_trainable_variables) == 2
    with adv.GradientTape() as tape:
        loss = adv.sum(dense(x))
    assert tape.gradient(loss, dense.kernel) is None        # tapes no longer watch it
    dense.trainable = True
    assert dense.kernel.trainable and len(dense.trainable_variables) == 2


def test_a_layer_frozen_before_it_is_built_makes_frozen_weights():
    dense = adv.layers.Dense(2, trainable=False)
    dense(np.ones((1, 3)))
    assert dense.trainable_variables == [] and not dense.kernel.trainable
    dense.trainable = True
    assert len(dense.trainable_variables) == 2


# ---------------------------------------------------------------------------
# build() called by the user (Keras 3 sets built when build returns)
# ---------------------------------------------------------------------------
def test_build_called_by_the_user_sets_built_and_keeps_assigned_weights():
    d = layers.Dense(1, dtype="float64")
    d.build((None, 2))
    assert d.built
    d.kernel.assign([[1.0], [2.0]])
    d.bias.assign([0.5])
    assert d([[1.0, 1.0]]).numpy().tolist() == [[3.5]]      # the issue's own call, on a Python list
    assert len(d.weights) == 2


def test_a_user_defined_build_gets_built_too_even_without_setting_it():
    calls = []

    class Offset(layers.Layer):
        def build(self, input_shape):
            calls.append(input_shape)
            self.b = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="b")

        def call(self, x):
            return x + self.b

    class MoreOffset(Offset):
        def build(self, input_shape):
            super().build(input_shape)
            self.c = self.add_weight(shape=(), initializer="ones", name="c")

    layer = Offset()
    layer.build((None, 3))
    assert layer.built
    layer(np.ones((2, 3)))
    assert calls == [(None, 3)] and len(layer.weights) == 1
    deeper = MoreOffset()
    deeper(np.ones((1, 3)))
    assert deeper.built and [w.path for w in deeper.weights] == ["more_offset/b", "more_offset/c"]
    broken = Offset()
    with pytest.raises(TypeError):
        broken.build(None)                      # a build that fails leaves the layer unbuilt
    assert not broken.built


# ---------------------------------------------------------------------------
# cached variable lists stay right when the structure changes
# ---------------------------------------------------------------------------
class Stack(adv.Model):
    def __init__(self):
        super().__init__()
        self.blocks = []

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def names(variables):
    return [re.sub(r"^stack(_\d+)?/", "", v.path) for v in variables]   # built in the model's call: "stack/a/kernel"


def test_cached_trainable_variables_follow_every_change():
    model = Stack()
    assert model.trainable_variables == []
    model.blocks.append(layers.Dense(2, name="a"))            # a list changed in place
    model(np.ones((1, 3)))                                    # build adds weights
    assert names(model.trainable_variables) == ["a/kernel", "a/bias"]
    model.blocks += [layers.Dense(2, name="b")]
    model(np.ones((1, 3)))
    assert names(model.trainable_variables) == ["a/kernel", "a/bias", "b/kernel", "b/bias"]
    model.blocks[0].trainable = False                         # a layer frozen
    assert names(model.trainable_variables) == ["b/kernel", "b/bias"]
    assert names(model.non_trainable_variables) == ["a/kernel", "a/bias"]
    model.blocks[1].bias.trainable = False                    # one variable frozen directly
    assert names(model.trainable_variables) == ["b/kernel"]
    model.extra = layers.Dense(1, name="c")                   # a new attribute
    model.extra(np.ones((1, 2)))
    assert names(model.trainable_variables) == ["b/kernel", "c/kernel", "c/bias"]
    del model.blocks[1]
    assert names(model.trainable_variables) == ["c/kernel", "c/bias"]
    model.blocks = {"d": layers.Dense(1, name="d", input_shape=(2,))}
    model.blocks["d"](np.ones((1, 2)))
    model.blocks["e"] = layers.Dense(1, name="e")
    model.blocks["e"](np.ones((1, 2)))
    assert names(model.trainable_variables) == ["d/kernel", "d/bias", "e/kernel", "e/bias", "c/kernel", "c/bias"]
    got = model.trainable_variables
    got.clear()                                               # the caller's copy, not the cache
    assert len(model.trainable_variables) == 6


def test_sequential_add_and_pop_update_the_variables():
    model = adv.Sequential([layers.Input((3,)), layers.Dense(2)])
    assert len(model.trainable_variables) == 2
    model.add(layers.Dense(1))
    assert len(model.trainable_variables) == 4
    model.pop()
    assert len(model.trainable_variables) == 2 and len(model.weights) == 2


# ----- Python lists as inputs ------------------------------------------------------------------
ROW = [[1.0, -2.0, 3.0, 0.5]]                              # (1, 4)
SEQ = [[[1.0], [-2.0], [3.0], [0.5]]]                      # (1, 4, 1)
IMG = [[[[1.0], [-2.0]], [[3.0], [0.5]]]]                  # (1, 2, 2, 1)
ONE_INPUT = {
    "Dense": (lambda: layers.Dense(2), ROW),
    "Dense on a vector": (lambda: layers.Dense(2), [1.0, -2.0]),
    "Embedding": (lambda: layers.Embedding(5, 2), [[1, 4, 0]]),
    "Conv1D": (lambda: layers.Conv1D(2, 2), SEQ),
    "Conv2D": (lambda: layers.Conv2D(2, 1), IMG),
    "Activation": (lambda: layers.Activation("relu"), ROW),
    "Flatten": (lambda: layers.Flatten(), SEQ),
    "Dropout": (lambda: layers.Dropout(0.5), ROW),
    "BatchNormalization": (lambda: layers.BatchNormalization(), ROW),
    "LayerNormalization": (lambda: layers.LayerNormalization(), ROW),
    "Reshape": (lambda: layers.Reshape((2, 2)), ROW),
    "MaxPooling1D": (lambda: layers.MaxPooling1D(2), SEQ),
    "AveragePooling2D": (lambda: layers.AveragePooling2D(1), IMG),
    "GlobalAveragePooling1D": (lambda: layers.GlobalAveragePooling1D(), SEQ),
    "SimpleRNN": (lambda: layers.SimpleRNN(2), SEQ),
    "LSTM": (lambda: layers.LSTM(2), SEQ),
    "Bidirectional": (lambda: layers.Bidirectional(layers.GRU(2)), SEQ),
    "Lambda": (lambda: layers.Lambda(lambda t: 2 * t), ROW),
    "Sequential": (lambda: adv.Sequential([layers.Dense(3, activation="tanh"), layers.Dense(1)]), ROW),
}


@pytest.mark.parametrize("name", sorted(ONE_INPUT))
def test_a_layer_called_on_nested_lists_treats_them_as_one_array_as_keras(name):
    """``layer([[1., 2.]])`` is what a learner types first; Keras converts the list to one tensor."""
    make, data = ONE_INPUT[name]
    layer = make()
    from_list = layer(data)
    assert isinstance(from_list, adv.Tensor)
    np.testing.assert_array_equal(from_list.numpy(), layer(np.asarray(data)).numpy())


@pytest.mark.parametrize("layer", [layers.Concatenate(), layers.Add(), layers.Multiply()])
def test_a_merge_layer_takes_a_list_of_nested_lists_as_that_many_inputs(layer):
    np.testing.assert_array_equal(layer([ROW, ROW]).numpy(), layer([np.asarray(ROW), np.asarray(ROW)]).numpy())


def test_attention_takes_a_list_of_nested_lists_as_query_and_value():
    att = layers.Attention()
    np.testing.assert_array_equal(att([SEQ, SEQ]).numpy(), att([np.asarray(SEQ), np.asarray(SEQ)]).numpy())


@pytest.mark.parametrize("data, error, words", [
    ([[1.0, 2.0], [3.0]], ValueError, r"dense\w* \(Dense\): .*different lengths.*rectangular"),
    ([["a", "b"]], TypeError, r"dense\w* \(Dense\): .*strings.*numeric dtypes only"),
    ([[1.0, None]], TypeError, r"dense\w* \(Dense\): .*numeric dtypes only"),
])
def test_a_nested_list_that_is_not_an_array_of_numbers_is_refused_naming_the_layer(data, error, words):
    d = layers.Dense(1)
    with pytest.raises(error, match=words):
        d(data)
    assert not d.built and d.weights == []


def test_a_list_of_arrays_to_a_one_input_layer_is_still_refused_as_several_inputs():
    with pytest.raises(TypeError, match=r"takes one tensor or numpy array, got a list of 2 entries"):
        layers.Dense(1)([np.ones(2), np.ones(2)])


def test_a_sequential_with_an_input_dtype_names_itself_when_a_list_is_ragged():
    model = adv.Sequential([layers.Input((2,), dtype="float64"), layers.Dense(1)])
    np.testing.assert_array_equal(model([[1, 2]]).numpy(), model(np.array([[1.0, 2.0]])).numpy())
    with pytest.raises(ValueError, match=r"sequential\w* \(Sequential\): .*different lengths"):
        model([[1.0, 2.0], [3.0]])
