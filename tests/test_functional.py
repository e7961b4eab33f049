"""The Keras functional API: Input, layer calls on symbolic tensors, adv.Model(inputs, outputs)."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import layers, optimizers

F64 = "float64"


@pytest.fixture(autouse=True)
def fresh_session():
    layers.clear_session()
    layers.set_random_seed(0)


class Plus(layers.Layer):
    """A merge layer written here, so these tests do not depend on layers/merge.py."""

    def __init__(self, **kwargs):
        super().__init__(**{"dtype": F64, **kwargs})

    def call(self, inputs):
        total = inputs[0]
        for t in inputs[1:]:
            total = total + t
        return total


class Join(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**{"dtype": F64, **kwargs})
    def call(self, inputs):
        return adv.concatenate(list(inputs), axis=-1)


class TrainingSpy(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def call(self, x, training=None):
        self.seen.append(training)
        return x


def dense(units, **kwargs):
    return layers.Dense(units, dtype=F64, bias_initializer="normal", **kwargs)


def test_input_is_a_symbolic_tensor_and_a_layer_call_builds_the_layer():
    x = layers.Input(shape=(3,), name="features", dtype=F64)
    assert (x.shape, x.dtype, x.name, x.ndim) == ((None, 3), "float64", "features", 2)
    assert layers.Input((5,)).dtype == "float32"                 # floatx, as Keras
    d = dense(4)
    h = d(x)
    assert d.built and d.kernel.shape == (3, 4) and h.shape == (None, 4) and h.name == "dense"
    with pytest.raises(TypeError, match="symbolic tensor.*no value"):
        np.asarray(x)
    seq = layers.Input(shape=(None, 2))                         # any sequence length
    assert Join()([seq, seq]).shape == (None, None, 4)


def test_single_input_model_matches_numpy_and_lists_layers_in_order():
    x = layers.Input(shape=(3,), dtype=F64)
    hidden = dense(4, activation="tanh")
    head = dense(2)
    model = adv.Model(inputs=x, outputs=head(hidden(x)), name="mlp")
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Dense", "Dense"]
    assert model.get_layer(index=1) is hidden and model.get_layer("dense_1") is head
    assert [w.path for w in model.trainable_variables] == ["dense/kernel", "dense/bias", "dense_1/kernel",
                                                          "dense_1/bias"]
    data = np.random.default_rng(0).normal(size=(5, 3))
    W1, b1, W2, b2 = model.get_weights()
    np.testing.assert_allclose(model(data).numpy(), np.tanh(data @ W1 + b1) @ W2 + b2, rtol=1e-12)
    np.testing.assert_allclose(model.predict(data), np.tanh(data @ W1 + b1) @ W2 + b2, rtol=1e-12)


def test_several_inputs_and_outputs_as_lists_and_dicts():
    a = layers.Input(shape=(3,), name="a", dtype=F64)
    b = layers.Input(shape=(2,), name="b", dtype=F64)
    da, db, head = dense(4), dense(4), dense(1)
    joined = Join()([da(a), db(b)])
    model = adv.Model(inputs=[a, b], outputs=[head(joined), joined])
    xa, xb = np.ones((2, 3)), np.full((2, 2), 2.0)
    y, features = model([xa, xb])
    expected = np.concatenate([xa @ da.kernel.numpy() + da.bias.numpy(), xb @ db.kernel.numpy() + db.bias.numpy()], -1)
    np.testing.assert_allclose(features.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(y.numpy(), expected @ head.kernel.numpy() + head.bias.numpy(), rtol=1e-12)
    by_name = model({"b": xb, "a": xa})
    np.testing.assert_array_equal(by_name[0].numpy(), y.numpy())
    assert model.input_names == ["a", "b"] and model.outputs[1] is joined

    as_dict = adv.Model(inputs={"a": a, "b": b}, outputs={"score": head(joined)})
    out = as_dict({"a": xa, "b": xb})
    assert list(out) == ["score"]
    np.testing.assert_allclose(out["score"].numpy(), y.numpy(), rtol=1e-12)
    predicted = model.predict([np.ones((40, 3)), np.ones((40, 2))], batch_size=16)
    assert isinstance(predicted, list) and [p.shape for p in predicted] == [(40, 1), (40, 8)]
    with pytest.raises(ValueError, match=r"has 2 inputs \['a', 'b'\].*got one ndarray"):
        model(xa)


def test_skip_connection_gradients_take_both_paths():
    x = layers.Input(shape=(3,), dtype=F64)
    inner = dense(3, activation="tanh")
    model = adv.Model(x, Plus()([x, inner(x)]))
    data = np.random.default_rng(1).normal(size=(4, 3))
    with adv.GradientTape() as tape:
        y = model(data)
        loss = adv.sum(y ** 2)
    gW, gb = tape.gradient(loss, [inner.kernel, inner.bias])
    W, b = inner.kernel.numpy(), inner.bias.numpy()
    h = np.tanh(data @ W + b)
    dz = 2 * (data + h) * (1 - h ** 2)
    np.testing.assert_allclose(gW.numpy(), data.T @ dz, rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), dz.sum(0), rtol=1e-10)


def test_a_shared_layer_is_one_set_of_weights_used_twice():
    a = layers.Input(shape=(2,), name="left", dtype=F64)
    b = layers.Input(shape=(2,), name="right", dtype=F64)
    shared = dense(3, name="shared")
    model = adv.Model([a, b], Plus()([shared(a), shared(b)]))
    assert len(model.trainable_variables) == 2 and len(shared._inbound_nodes) == 2
    xa, xb = np.ones((1, 2)), np.array([[1.0, -1.0]])
    W, bias = shared.kernel.numpy(), shared.bias.numpy()
    np.testing.assert_allclose(model([xa, xb]).numpy(), xa @ W + xb @ W + 2 * bias, rtol=1e-12)
    np.testing.assert_allclose(shared.output.numpy(), xb @ W + bias, rtol=1e-12)   # the latest call
    text = model.summary_text()
    assert "left[0][0], right[0][0]" in text


def test_a_functional_model_used_as_a_layer_nests_scopes_and_weight_paths(tmp_path):
    x = layers.Input(shape=(3,), dtype=F64)
    encoder = adv.Model(x, dense(2, activation="relu")(dense(4, activation="tanh")(x)), name="encoder")
    z = layers.Input(shape=(3,), dtype=F64)
    outer = adv.Model(z, dense(1)(encoder(z)), name="outer")
    assert [layer.name for layer in outer.layers] == [outer.layers[0].name, "encoder", "dense_2"]
    data = np.random.default_rng(2).normal(size=(4, 3))
    with adv.GradientTape() as tape:
        loss = adv.sum(outer(data))
    scopes = {n.scope for n in tape.nodes if n.rule.name == "matmul"}
    assert scopes == {"outer/encoder/dense", "outer/encoder/dense_1", "outer/dense_2"}
    grads = tape.gradient(loss, outer.trainable_variables)
    assert len(grads) == 6 and all(g is not None for g in grads)
    outer.save_weights(tmp_path / "outer.npz")
    with np.load(tmp_path / "outer.npz") as f:
        assert sorted(f.files) == ["dense/bias", "dense/kernel", "functional/dense/bias", "functional/dense/kernel",
                                   "functional/dense_1/bias", "functional/dense_1/kernel"]
    before = outer.predict(data)
    for v in outer.weights:
        v.assign(np.zeros(v.shape))
    outer.load_weights(tmp_path / "outer.npz")
    np.testing.assert_array_equal(outer.predict(data), before)


def test_sequential_and_subclassed_models_inside_a_graph():
    class Doubler(adv.Model):
        def __init__(self):
            super().__init__(dtype=F64)
            self.inner = dense(2)

        def call(self, x):
            return 2.0 * self.inner(x)
    x = layers.Input(shape=(3,), dtype=F64)
    seq = adv.Sequential([dense(4), dense(2)])
    sub = Doubler()
    model = adv.Model(x, Plus()([seq(x), sub(x)]))
    assert seq.built and sub.inner.kernel.shape == (3, 2)
    data = np.ones((2, 3))
    expected = seq(data).numpy() + 2 * (data @ sub.inner.kernel.numpy() + sub.inner.bias.numpy())
    np.testing.assert_allclose(model(data).numpy(), expected, rtol=1e-12)
    assert len(model.trainable_variables) == 6


def test_gradient_with_respect_to_an_internal_layer_output():
    x = layers.Input(shape=(3,), dtype=F64)
    h = dense(4, activation="tanh", name="hidden")(x)
    model = adv.Model(x, dense(2, name="head")(h))
    assert model.get_layer("hidden").output is h                 # before any call: the symbolic output
    data = np.random.default_rng(3).normal(size=(5, 3))
    with adv.GradientTape() as tape:
        y = model(data)
        loss = adv.sum(y ** 2)
    g = tape.gradient(loss, model.get_layer("hidden").output)
    np.testing.assert_allclose(g.numpy(), 2 * y.numpy() @ model.get_layer("head").kernel.numpy().T, rtol=1e-12)


def test_a_feature_extractor_from_an_internal_output():
    x = layers.Input(shape=(3,), dtype=F64)
    model = adv.Model(x, dense(1)(dense(4, name="hidden")(x)))
    before_call = adv.Model(model.input, model.get_layer("hidden").output)
    model(np.ones((1, 3)))
    after_call = adv.Model(model.input, model.get_layer("hidden").output)   # a real tensor, mapped back
    data = np.ones((2, 3))
    hidden = model.get_layer("hidden")
    expected = data @ hidden.kernel.numpy() + hidden.bias.numpy()
    np.testing.assert_allclose(before_call(data).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(after_call(data).numpy(), expected, rtol=1e-12)


def test_summary_shows_the_connections():
    a = layers.Input(shape=(4,), name="a")
    b = layers.Input(shape=(4,), name="b")
    s = Plus(name="skip")([layers.Dense(4, name="left")(a), b])
    model = adv.Model([a, b], layers.Dense(1, name="out")(s), name="net")
    lines = []
    model.summary(print_fn=lines.append)
    text = lines[0]
    assert 'Model: "net"' in text and "Connected to" in text
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:5]]
            for line in text.splitlines() if line.startswith("│")}
    assert rows["a (InputLayer)"] == ["(None, 4)", "0", "-"]
    assert rows["left (Dense)"] == ["(None, 4)", "20", "a[0][0]"]
    assert rows["skip (Plus)"] == ["(None, 4)", "0", "left[0][0], b[0][0]"]
    assert rows["out (Dense)"] == ["(None, 1)", "5", "skip[0][0]"]
    assert "Total params: 25" in text
    assert "<th>Connected to</th>" in model._repr_html_()


def test_training_goes_to_every_layer_that_takes_it_unless_the_graph_fixed_it():
    x = layers.Input(shape=(2,))
    free, fixed = TrainingSpy(), TrainingSpy()
    model = adv.Model(x, fixed(layers.Dense(1)(free(x)), training=True))
    free.seen.clear()
    fixed.seen.clear()
    model.compile(optimizers.SGD(0.1), "mse")
    model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=4, verbose=0)
    model.predict(np.ones((4, 2)))
    assert free.seen == [True, False] and fixed.seen == [True, True]     # predict: training=False, as Keras 3


def test_fit_evaluate_predict_with_several_inputs_and_outputs():
    rng = np.random.default_rng(4)
    xa, xb = rng.normal(size=(64, 2)), rng.normal(size=(64, 1))
    target = xa @ np.array([[1.0], [-1.0]]) + 2 * xb
    a = layers.Input(shape=(2,), name="a", dtype=F64)
    b = layers.Input(shape=(1,), name="b", dtype=F64)
    joined = Join()([a, b])
    model = adv.Model([a, b], [dense(1, name="sum")(joined), dense(1, name="copy")(joined)])
    model.compile(optimizers.SGD(0.1), loss=["mse", "mse"])
    history = model.fit([xa, xb], [target, xb], epochs=30, batch_size=16, validation_split=0.25, verbose=0)
    assert history.history["loss"][-1] < 0.01 * history.history["loss"][0]
    loss, sum_loss, copy_loss = model.evaluate([xa, xb], {"sum": target, "copy": xb}, verbose=0)
    y_sum, y_copy = model.predict([xa, xb])
    assert [sum_loss, copy_loss] == pytest.approx([np.mean((y_sum - target) ** 2), np.mean((y_copy - xb) ** 2)],
                                                  rel=1e-9)
    assert loss == pytest.approx(sum_loss + copy_loss, rel=1e-12)
    with pytest.raises(ValueError, match=r"same number of samples; \[0\] has 64, \[1\] has 3"):
        model.fit([xa, xb[:3]], [target, xb], verbose=0)


def test_an_output_not_connected_to_the_inputs_is_named():
    a = layers.Input(shape=(2,), name="a")
    b = layers.Input(shape=(2,), name="b")
    y = layers.Dense(1, name="head")(Plus()([a, b]))
    with pytest.raises(ValueError, match=r"output 'head'.*not connected to the inputs \['a'\].*depends on 'b'"):
        adv.Model(a, y)
    with pytest.raises(TypeError, match="outputs must be symbolic tensors"):
        adv.Model(a, np.ones(2))


def test_a_layer_called_on_a_symbolic_tensor_of_the_wrong_shape_is_named():
    d = layers.Dense(2, name="proj")
    d(layers.Input(shape=(4,)))
    wrong = layers.Input(shape=(3,), name="narrow")
    with pytest.raises(ValueError, match=r"'proj' \(Dense\) cannot be called on the symbolic input narrow of "
                                         r"shape \(None, 3\).*built for inputs with 4 features"):
        d(wrong)

    class Square(layers.Layer):
        def call(self, x):
            return adv.matmul(x, x)
    with pytest.raises(ValueError, match=r"'square' \(Square\).*\(None, 3\).*matmul"):
        Square()(wrong)


@pytest.mark.parametrize("wrap", [np.asarray, adv.constant], ids=["array", "tensor"])
def test_wrong_data_for_a_functional_model_is_refused_with_the_expected_shape(wrap):
    x = layers.Input(shape=(3,), name="x")
    model = adv.Model(x, layers.Dense(1)(x))
    with pytest.raises(ValueError, match=r"input 'x' expects shape \(None, 3\), got \(2, 4\)"):
        model(wrap(np.ones((2, 4))))


def test_sequential_takes_the_new_input_and_can_be_extended_into_a_graph():
    model = adv.Sequential([layers.Input((4,), dtype=F64), dense(3), dense(1)])
    assert model.built and len(model.weights) == 4
    assert model(np.ones((2, 4), dtype=np.float32)).dtype == np.float64
    assert model(adv.constant(np.ones((2, 4), dtype=np.float32))).dtype == np.float64
    x = layers.Input((4,), dtype=F64)
    bigger = adv.Model(x, dense(2)(model(x)))
    np.testing.assert_allclose(bigger(np.ones((1, 4))).shape, (1, 2))
    with pytest.raises(TypeError, match="output of a layer call"):
        adv.Sequential([layers.Dense(2)(layers.Input((3,)))])


def test_operators_on_symbolic_tensors_are_graph_steps():
    x = layers.Input(shape=(3,), dtype=F64, name="x")
    d = dense(3)
    h = d(x)
    y = -(2.0 * (h + x)[:, :2] - 1.0)
    model = adv.Model(x, y)
    assert y.shape == (None, 2)
    assert [layer.name for layer in model.layers[2:]] == ["add", "get_item", "multiply", "subtract", "negative"]
    data = np.random.default_rng(5).normal(size=(4, 3))
    expected = -(2 * (data @ d.kernel.numpy() + d.bias.numpy() + data)[:, :2] - 1)
    np.testing.assert_allclose(model(data).numpy(), expected, rtol=1e-12)
    with pytest.raises(TypeError, match="symbolic tensor.*put it in a layer|symbolic tensor.*in a layer"):
        adv.tanh(x)


def test_indexing_a_symbolic_tensor_with_an_integer_or_a_list_keeps_the_index_an_index():
    """``h[:, 0]`` (the docstring's own example) and ``h[:, [0, 2]]``: the index is not made a float tensor."""
    x = layers.Input(shape=(3, 4), dtype=F64)
    first, picked, scaled = x[:, 0], x[:, [0, 2]], 2 * x[..., 1:] + 1
    assert first.shape == (None, 4) and picked.shape == (None, 2, 4) and scaled.shape == (None, 3, 3)
    model = adv.Model(x, [first, picked, scaled])
    data = np.arange(24.0).reshape(2, 3, 4)
    got = model(data)
    np.testing.assert_array_equal(got[0].numpy(), data[:, 0])
    np.testing.assert_array_equal(got[1].numpy(), data[:, [0, 2]])
    np.testing.assert_array_equal(got[2].numpy(), 2 * data[..., 1:] + 1)


def test_asking_a_gradient_for_the_symbolic_tensor_points_at_layer_output():
    x = layers.Input(shape=(3,))
    h = layers.Dense(2, name="hidden")(x)
    model = adv.Model(x, layers.Dense(1)(h))
    with adv.GradientTape() as tape:
        loss = adv.sum(model(np.ones((1, 3))))
    with pytest.raises(TypeError, match=r"symbolic output.*model\.get_layer\('hidden'\)\.output"):
        tape.gradient(loss, h)


def test_the_input_layer_output_is_the_tensor_the_model_was_called_with():
    x = layers.Input(shape=(3,), name="features", dtype=F64)
    head = dense(1)
    model = adv.Model(x, head(x))
    data = adv.constant(np.ones((2, 3)))
    with adv.GradientTape() as tape:
        tape.watch(data)
        loss = adv.sum(model(data))
    assert model.get_layer("features").output is data
    g = tape.gradient(loss, model.get_layer("features").output)
    np.testing.assert_allclose(g.numpy(), np.tile(head.kernel.numpy().T, (2, 1)), rtol=1e-12)
