"""Models: attribute tracking, get_layer, summaries, weights on disk."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import layers


@pytest.fixture(autouse=True)
def fresh_session():
    layers.clear_session()
    layers.set_random_seed(0)


class Block(adv.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = layers.Dense(3, activation="relu")
        self.gate = layers.Dense(3, activation="sigmoid")

    def call(self, x):
        return self.inner(x) * self.gate(x)


class Net(adv.Model):
    def __init__(self):
        super().__init__()
        self.encoder = layers.Dense(4, activation="tanh")
        self.blocks = [Block(), Block()]
        self.head = layers.Dense(2)

    def call(self, x, training=False):
        h = self.encoder(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def test_subclassed_model_tracks_layers_in_assignment_order():
    model = Net()
    model(np.ones((1, 5)))
    assert [layer.name for layer in model.layers] == ["dense", "block", "block_1", "dense_5"]
    names = [v.path for v in model.trainable_variables]      # built inside the model's call: its name first
    assert names[:2] == [f"{model.name}/dense/kernel", f"{model.name}/dense/bias"]
    assert names[-2:] == [f"{model.name}/dense_5/kernel", f"{model.name}/dense_5/bias"]
    assert len(names) == 2 + 2 * 4 + 2


def test_get_layer_by_name_index_and_nested():
    model = Net()
    model(np.ones((1, 5)))
    assert model.get_layer("block_1") is model.blocks[1]
    assert model.get_layer(index=-1) is model.head
    assert model.get_layer("dense_2") is model.blocks[0].gate          # looked for inside the blocks too
    with pytest.raises(ValueError, match=r"No layer named 'dens'.*'dense_5'"):
        model.get_layer("dens")


def test_nested_models_give_nested_scopes():
    model = Net()
    with adv.GradientTape() as tape:
        adv.sum(model(np.ones((1, 5))))
    scopes = {n.scope for n in tape.nodes if n.rule.name == "matmul"}
    assert scopes == {"net/dense", "net/block/dense_1", "net/block/dense_2", "net/block_1/dense_3",
                      "net/block_1/dense_4", "net/dense_5"}


def test_model_with_inputs_that_are_not_symbolic_says_what_inputs_are():
    with pytest.raises(TypeError, match=r"adv\.layers\.Input"):
        adv.Model(inputs=None, outputs=None)
    with pytest.raises(TypeError, match=r"adv\.Model\(inputs, outputs\) itself"):
        Block(inputs=layers.Input((2,)))


def test_sequential_with_input_is_built_at_once():
    model = adv.Sequential([layers.Input((4,)), layers.Dense(8, activation="relu"), layers.Dense(1)])
    assert [w.name for w in model.weights] == ["kernel", "bias", "kernel", "bias"]
    assert [w.path for w in model.weights] == [f"{model.name}/{w}" for w in ("dense/kernel", "dense/bias",
                                                                           "dense_1/kernel", "dense_1/bias")]
    assert model.count_params() == 4 * 8 + 8 + 8 + 1
    with pytest.raises(AttributeError):
        model.output                                  # building is not a call
    assert model.get_layer("dense_1").output_shape == (None, 1)


def test_sequential_input_shape_on_the_first_layer_and_add_pop():
    model = adv.Sequential(name="seq")
    model.add(layers.Dense(3, input_shape=(2,)))
    model.add(layers.Dense(1))
    assert model.built and len(model.weights) == 4
    assert model.pop().name == "dense_1"
    assert model(np.ones((5, 2))).shape == (5, 3)


def test_summary_text_and_html():
    model = adv.Sequential([layers.Input((4,)), layers.Dense(8, activation="relu"),
                            layers.Dense(2, name="<script>")])
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert 'Model: "sequential"' in text
    assert "dense (Dense)" in text and "(None, 8)" in text and "40" in text
    assert "Total params: 58" in text and "Non-trainable params: 0" in text
    page = model._repr_html_()
    assert "<script>" not in page and "&lt;script&gt; (Dense)" in page
    assert "<table>" in page and "Total params: 58" in page


def test_an_axis_of_any_size_stays_unknown_in_the_output_shapes():
    """Input((None, 8)) (sequences of any length): summary shows (None, None, 4), not the build batch's 1."""
    model = adv.Sequential([layers.Input((None, 8)), layers.LSTM(4, return_sequences=True), layers.Dense(2),
                            layers.GlobalAveragePooling1D()])
    assert [layer.output_shape for layer in model.layers] == [(None, None, 4), (None, None, 2), (None, 2)]
    lines = []
    model.summary(print_fn=lines.append)
    assert "(None, None, 4)" in "\n".join(lines)
    assert model(np.ones((3, 5, 8))).shape == (3, 2) and model.layers[0].output_shape == (None, 5, 4)   # latest call


def test_summary_of_an_unbuilt_model_says_so():
    model = adv.Sequential([layers.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    assert "0 (unbuilt)" in lines[0] and "?" in lines[0]


# ---------------------------------------------------------------------------
# weights on disk
# ---------------------------------------------------------------------------
def make_mlp():
    return adv.Sequential([layers.Input((3,)), layers.Dense(4, activation="relu"), layers.Dense(2)])


def test_weights_round_trip_into_a_new_model(tmp_path):
    path = tmp_path / "mlp.weights.npz"
    model = make_mlp()
    x = np.random.default_rng(0).normal(size=(5, 3))
    model.save_weights(path)
    other = make_mlp()                                 # its layers are dense_2, dense_3
    assert other.predict(x).tolist() != model.predict(x).tolist()
    other.load_weights(path)
    np.testing.assert_array_equal(other.predict(x), model.predict(x))
    with np.load(path, allow_pickle=False) as f:
        assert sorted(f.files) == ["dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"]


def test_subclassed_weights_are_keyed_by_attribute_path(tmp_path):
    model = Net()
    model(np.ones((1, 5)))
    model.save_weights(tmp_path / "net.npz")
    with np.load(tmp_path / "net.npz") as f:
        keys = set(f.files)
    assert {"encoder/kernel", "blocks/block/inner/kernel", "blocks/block_1/gate/bias", "head/bias"} <= keys
    again = Net()
    again(np.ones((1, 5)))
    again.load_weights(tmp_path / "net.npz")
    np.testing.assert_array_equal(again.head.kernel.numpy(), model.head.kernel.numpy())


def test_a_mismatched_file_changes_nothing(tmp_path):
    small = make_mlp()
    small.save_weights(tmp_path / "small.npz")
    big = adv.Sequential([layers.Input((3,)), layers.Dense(5, activation="relu"), layers.Dense(2)])
    before = big.get_weights()
    with pytest.raises(ValueError, match=r"nothing was loaded[\s\S]*dense/kernel: the model has shape \(3, 5\), "
                                         r"the file \(3, 4\)"):
        big.load_weights(tmp_path / "small.npz")
    for a, b in zip(big.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    deeper = adv.Sequential([layers.Input((3,)), layers.Dense(4), layers.Dense(2), layers.Dense(2)])
    with pytest.raises(ValueError, match="missing from the file: dense_2/kernel"):
        deeper.load_weights(tmp_path / "small.npz")


def test_pickled_files_are_refused(tmp_path):
    model = make_mlp()
    before = model.get_weights()
    np.savez(tmp_path / "evil.npz", **{"dense/kernel": np.array([{}], dtype=object)})
    with pytest.raises(ValueError):
        model.load_weights(tmp_path / "evil.npz")
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_weights_file_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match=r"\.npz"):
        make_mlp().save_weights(tmp_path / "model.h5")
    with pytest.raises(ValueError, match="not built yet"):
        adv.Sequential([layers.Dense(2)]).save_weights(tmp_path / "x.npz")


def test_a_model_leaves_casting_to_its_layers():
    model = adv.Sequential([layers.Dense(2, dtype="float64", kernel_initializer="ones")])   # model is float32
    x = np.full((1, 3), 1.0 + 1e-12)
    assert model(x).dtype == np.float64
    assert model(x).numpy()[0, 0] == x.sum() != 3.0               # not rounded through float32 on the way


def test_add_weight_takes_the_shape_first():
    class Old(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", (2,))

        def call(self, x):
            return x
    with pytest.raises(TypeError, match=r"add_weight\(shape=\(\.\.\.\), name='w'\)"):
        Old()(np.ones(2))


def test_corrupt_missing_and_odd_weight_files_are_clear_errors_and_change_nothing(tmp_path):
    from autodiff_viz.base.errors import WeightsFileError
    model = make_mlp()
    before = model.get_weights()
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    with pytest.raises(WeightsFileError, match=r"corrupt\.npz is not a readable \.npz \(zip\) archive.*expected "
                                               r"an \.npz archive written by model\.save_weights\(\)"):
        model.load_weights(corrupt)
    text = tmp_path / "text.npz"
    text.write_text("hello")
    with pytest.raises(WeightsFileError, match="text.npz"):
        model.load_weights(text)
    with pytest.raises(FileNotFoundError, match=r"nowhere\.npz does not exist"):
        model.load_weights(tmp_path / "nowhere.npz")
    np.save(tmp_path / "single.npy", np.zeros(3))
    (tmp_path / "single.npy").rename(tmp_path / "single.npz")
    with pytest.raises(WeightsFileError, match="single array"):
        model.load_weights(tmp_path / "single.npz")
    keys = ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
    np.savez(tmp_path / "strings.npz", **{k: np.full(w.shape, "a") for k, w in zip(keys, before)})
    with pytest.raises(WeightsFileError, match=r"dense/kernel: the file holds <U1 values, not numbers"):
        model.load_weights(tmp_path / "strings.npz")
    np.savez(tmp_path / "evil.npz", **{k: np.empty(w.shape, dtype=object) for k, w in zip(keys, before)})
    with pytest.raises(WeightsFileError, match="pickled Python objects"):
        model.load_weights(tmp_path / "evil.npz")
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_weights_of_another_dtype_are_cast_on_load(tmp_path):
    model = make_mlp()                                   # float32 weights
    keys = ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
    np.savez(tmp_path / "f64.npz", **{k: np.full(w.shape, 0.25, dtype=np.float64)
                                      for k, w in zip(keys, model.get_weights())})
    model.load_weights(tmp_path / "f64.npz")
    assert all(w.dtype == np.float32 and np.all(w == 0.25) for w in model.get_weights())


def test_non_trainable_weights_are_saved_and_loaded_in_functional_and_nested_models(tmp_path):
    def make():
        x = layers.Input((3,))
        inner = adv.Model(x, layers.BatchNormalization()(layers.Dense(4)(x)))
        z = layers.Input((3,))
        return adv.Model(z, layers.Dense(1)(inner(z)))
    model = make()
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(16, 3)), rng.normal(size=(16, 1)), epochs=2, verbose=0)
    path = tmp_path / "bn.npz"
    model.save_weights(path)
    with np.load(path) as f:
        assert sorted(f.files) == ["dense/bias", "dense/kernel", "functional/batch_normalization/beta",
                                   "functional/batch_normalization/gamma",
                                   "functional/batch_normalization/moving_mean",
                                   "functional/batch_normalization/moving_variance",
                                   "functional/dense/bias", "functional/dense/kernel"]
        moving = f["functional/batch_normalization/moving_mean"]
    assert not np.all(moving == 0)                                    # fit updated the statistics
    again = make()
    again.load_weights(path)
    for a, b in zip(again.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with np.load(path) as f:
        partial = {k: f[k] for k in f.files if "moving_variance" not in k}
    np.savez(tmp_path / "partial.npz", **partial)
    fresh = make()
    before = fresh.get_weights()
    with pytest.raises(ValueError, match="missing from the file: functional/batch_normalization/moving_variance"):
        fresh.load_weights(tmp_path / "partial.npz")
    for a, b in zip(fresh.get_weights(), before):
        np.testing.assert_array_equal(a, b)
