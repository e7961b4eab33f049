"""Whole-model saving as Keras 3: ``model.save("m.keras")``, ``adv.saving.load_model``, ``get_config`` /
``from_config``, ``to_json`` / ``model_from_json`` and ``clone_model``.

What a learner relies on: a loaded model has the same layers, names, graph and weights and predicts the
same; a compiled one trains on exactly as if it had never been saved; every public layer keeps its
arguments; a file that is not what ``save`` writes (or that names code or classes the session does not
know) is refused with an error naming the file and the fix, and nothing on disk changes when a save or a
load fails.
"""
from __future__ import annotations

import inspect
import io
import json
import os
import zipfile

import numpy as np
import pytest
from fit_helpers import fresh_session  # noqa: F401  (autouse: names and weights start afresh in each test)

import autodiff_viz as adv
from autodiff_viz import layers as L
from autodiff_viz.base import structure
from autodiff_viz.base.errors import ModelFileError, WeightsFileError

RNG = np.random.default_rng(0)
# the LayerNormalization(rms_scaling=True) case warns that the option is deprecated (as Keras 3); known here
pytestmark = pytest.mark.filterwarnings("ignore:LayerNormalization. rms_scaling=True is deprecated:UserWarning")


# ----- helpers ------------------------------------------------------------------------------------------
def members(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def npz(data: bytes) -> dict:
    with np.load(io.BytesIO(data), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def npz_bytes(arrays: dict) -> bytes:
    """``arrays`` as the bytes of an ``.npz`` (what :func:`npz` reads back)."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def rewrite(path, replace=None, drop=()):
    """The archive at ``path`` written again with some members replaced (name -> bytes) or left out."""
    old = members(path)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in old.items():
            if name not in drop:
                archive.writestr(name, (replace or {}).get(name, data))


def perturb(model, seed=1):
    """Every weight set to values no initializer gives, so a weight that is not loaded shows."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.uniform(0.5, 1.5, size=v.shape))


def same_weights(a, b):
    pa, pb = a._weight_paths(), b._weight_paths()
    assert list(pa) == list(pb)
    for k in pa:
        np.testing.assert_array_equal(pa[k].numpy(), pb[k].numpy(), err_msg=k)


def folder_listing(folder) -> list:
    return sorted(os.listdir(folder))


def regression(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    return x, np.tanh(x @ rng.normal(size=(4, 2))) + 0.1


def mlp(name="mlp", dtype="float64"):
    return adv.Sequential([L.Input((4,), name="features"), L.Dense(8, activation="tanh", dtype=dtype),
                           L.Dense(2, dtype=dtype)], name=name, dtype=dtype)


# ----- a Sequential, end to end ---------------------------------------------------------------------------
def test_a_saved_sequential_loads_with_its_layers_names_weights_and_predictions(tmp_path):
    model = mlp()
    x, _ = regression()
    perturb(model)
    path = tmp_path / "mlp.keras"
    model.save(path)
    loaded = adv.models.load_model(path)
    assert type(loaded) is adv.Sequential and loaded.name == "mlp"
    assert [(type(a), a.name, a.dtype) for a in loaded.layers] == [(type(a), a.name, a.dtype) for a in model.layers]
    assert loaded._input_spec.shape == (None, 4) and loaded._input_spec.name == "features"
    same_weights(model, loaded)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert loaded.get_config() == model.get_config()
    assert adv.saving.load_model is not None and adv.models.load_model(str(path)).name == "mlp"


def test_the_file_is_a_zip_of_json_and_the_npz_that_save_weights_writes(tmp_path):
    model = mlp()
    model.save(tmp_path / "m.keras")
    model.save_weights(tmp_path / "m.weights.npz")
    inside = members(tmp_path / "m.keras")
    assert set(inside) == {"config.json", "metadata.json", "model.weights.npz"}     # not compiled: no optimizer
    meta = json.loads(inside["metadata.json"])
    assert meta["package"] == "autodiff_viz" and meta["version"] == adv.__version__ and "@" in meta["date_saved"]
    config = json.loads(inside["config.json"])
    assert {k: config[k] for k in ("module", "class_name", "registered_name")} == \
        {"module": "autodiff_viz.models", "class_name": "Sequential", "registered_name": None}
    assert [e["class_name"] for e in config["config"]["layers"]] == ["InputLayer", "Dense", "Dense"]
    weights, alone = npz(inside["model.weights.npz"]), dict(np.load(tmp_path / "m.weights.npz"))
    assert list(weights) == list(model._weight_paths()) == list(alone)
    for k in weights:
        np.testing.assert_array_equal(weights[k], alone[k])
    again = mlp(name="again")                   # the member is a weights file load_weights reads
    (tmp_path / "w.npz").write_bytes(inside["model.weights.npz"])
    again.load_weights(tmp_path / "w.npz")
    same_weights(model, again)


def test_a_sequential_built_by_a_call_is_built_again_from_its_first_input_shape(tmp_path):
    model = adv.Sequential([L.Dense(3, activation="relu"), L.Dense(1)], name="no_input")
    x = RNG.normal(size=(5, 6))
    model(x)
    assert model.get_config()["build_input_shape"] == [None, 6]
    model.save(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert loaded.built and loaded._input_spec is None
    same_weights(model, loaded)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


# ----- training goes on as if the model had never been saved -------------------------------------------
OPTIMIZERS = {
    "adam": lambda: adv.optimizers.Adam(learning_rate=0.01, amsgrad=True),
    "sgd_momentum_schedule": lambda: adv.optimizers.SGD(
        learning_rate=adv.optimizers.schedules.ExponentialDecay(0.05, decay_steps=3, decay_rate=0.5),
        momentum=0.9, nesterov=True),
    "rmsprop_centered": lambda: adv.optimizers.RMSprop(0.01, momentum=0.5, centered=True, clipnorm=1.0),
    "adagrad": lambda: adv.optimizers.Adagrad(0.1, initial_accumulator_value=0.2),
    "nadam": lambda: adv.optimizers.Nadam(0.01),
    "adamw_excluding_biases": lambda: adv.optimizers.AdamW(0.01, weight_decay=0.1),
}


@pytest.mark.parametrize("make_optimizer", OPTIMIZERS.values(), ids=OPTIMIZERS.keys())
def test_fit_after_load_gives_the_same_weights_as_fit_without_saving(tmp_path, make_optimizer):
    x, y = regression()
    model = mlp()
    model.compile(optimizer=make_optimizer(), loss="mse", metrics=["mae"])
    if isinstance(model.optimizer, adv.optimizers.AdamW):
        model.optimizer.exclude_from_weight_decay(var_names=["bias"])
    model.fit(x, y, epochs=2, batch_size=8, seed=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert loaded.optimizer.iterations == model.optimizer.iterations == 10
    assert type(loaded.optimizer) is type(model.optimizer)
    later = model.fit(x, y, epochs=1, batch_size=8, seed=2, verbose=0)
    again = loaded.fit(x, y, epochs=1, batch_size=8, seed=2, verbose=0)
    for k, v in model._weight_paths().items():
        np.testing.assert_allclose(loaded._weight_paths()[k].numpy(), v.numpy(), rtol=0, atol=1e-12, err_msg=k)
    assert again.history.keys() == later.history.keys() == {"loss", "mae"}
    np.testing.assert_allclose(again.history["loss"], later.history["loss"], rtol=1e-12)
    if make_optimizer is not OPTIMIZERS["sgd_momentum_schedule"]:
        return
    fresh = adv.saving.load_model(tmp_path / "m.keras", compile=False)     # the counterfactual: a new optimizer
    assert fresh.optimizer is None
    fresh.compile(optimizer=make_optimizer(), loss="mse")
    fresh.fit(x, y, epochs=1, batch_size=8, seed=2, verbose=0)
    gap = max(np.abs(fresh._weight_paths()[k].numpy() - v.numpy()).max() for k, v in model._weight_paths().items())
    assert gap > 1e-6, "restoring the optimizer state must matter for this test to mean anything"


def test_the_optimizer_state_is_stored_by_weight_path(tmp_path):
    x, y = regression()
    model = mlp()
    model.compile(optimizer=adv.optimizers.Adam(0.01), loss="mse")
    model.fit(x, y, epochs=1, batch_size=20, seed=0, verbose=0)
    model.save(tmp_path / "m.keras")
    state = npz(members(tmp_path / "m.keras")["optimizer.weights.npz"])
    paths = model._weight_paths()
    assert set(state) == {"iterations"} | {f"{s}/{p}" for s in ("m", "v") for p in paths}
    assert int(state["iterations"]) == 2
    for p, v in paths.items():
        np.testing.assert_array_equal(state[f"m/{p}"], model.optimizer._state[v._id]["m"])


def test_the_compile_state_comes_back(tmp_path):
    a, b = L.Input((3,), name="a"), L.Input((2,), name="b")
    h = L.Concatenate()([L.Dense(4, activation="relu")(a), b])
    model = adv.Model([a, b], {"cls": L.Dense(3, name="cls")(h), "box": L.Dense(2, name="box")(h)}, name="heads")
    model.compile(optimizer=adv.optimizers.RMSprop(0.003, rho=0.8, epsilon=1e-6),
                  loss={"cls": adv.losses.SparseCategoricalCrossentropy(from_logits=True), "box": "huber"},
                  loss_weights={"cls": 1.0, "box": 0.25}, metrics={"cls": ["accuracy"], "box": ["mae"]},
                  weighted_metrics={"box": [adv.metrics.MeanSquaredError()]})
    model.save(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    opt = loaded.optimizer
    assert (type(opt), opt.learning_rate, opt.rho, opt.epsilon) == (adv.optimizers.RMSprop, 0.003, 0.8, 1e-6)
    assert type(loaded.loss["cls"]) is adv.losses.SparseCategoricalCrossentropy
    assert loaded.loss["cls"].fn_kwargs["from_logits"] is True
    assert type(loaded.loss["box"]) is adv.losses.Huber
    assert loaded.loss_weights == {"cls": 1.0, "box": 0.25}
    assert loaded._metric_specs == {"cls": ["accuracy"], "box": ["mae"]}
    assert type(loaded._weighted_specs["box"][0]) is adv.metrics.MeanSquaredError
    x = [RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))]
    y = {"cls": RNG.integers(0, 3, size=6), "box": RNG.normal(size=(6, 2))}
    assert loaded.evaluate(x, y, verbose=0, return_dict=True) == model.evaluate(x, y, verbose=0, return_dict=True)
    plain = adv.saving.load_model(tmp_path / "m.keras", compile=False)
    assert plain.optimizer is None and plain.loss is None


# ----- functional models: graph, shared layers, nested models, operators ------------------------------
def functional_model():
    a, b = L.Input((3,), name="a"), L.Input((2,), name="b")
    shared = L.Dense(4, activation="tanh", name="shared")
    inner = adv.Sequential([L.Input((4,)), L.Dense(4, kernel_regularizer=adv.regularizers.L2(0.01)),
                            L.Dropout(0.1, seed=2)], name="inner")
    h = L.Concatenate(name="join")([shared(a), L.Dense(4)(b)])
    h2 = L.Dense(4)(h) + 2.0 * shared(L.Dense(3)(b))               # the shared layer is called twice
    h3 = inner(h2, training=False)[:, 1:3]
    h4 = -(h3 ** 2) - h3[..., :1] / 3.0
    out = L.Dense(1, name="out")(h4)
    return adv.Model(inputs=[a, b], outputs=[out, h2], name="two_heads"), \
        [RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))]


def test_a_functional_model_keeps_its_graph_shared_layers_nested_models_and_operators(tmp_path):
    model, x = functional_model()
    perturb(model)
    model.save(tmp_path / "f.keras")
    loaded = adv.saving.load_model(tmp_path / "f.keras")
    assert type(loaded).__name__ == "Functional" and loaded.name == "two_heads"
    assert [(type(a), a.name) for a in loaded.layers] == [(type(a), a.name) for a in model.layers]
    assert loaded.input_names == ["a", "b"] and loaded.output_names == model.output_names
    mine = {id(n) for n in loaded._nodes}
    assert len([n for n in loaded.get_layer("shared")._inbound_nodes if id(n) in mine]) == 2
    assert isinstance(loaded.get_layer("inner"), adv.Sequential)
    assert loaded.get_layer("inner").layers[0] is not model.get_layer("inner").layers[0]
    same_weights(model, loaded)
    for got, want in zip(loaded.predict(x), model.predict(x)):
        np.testing.assert_array_equal(got, want)
    assert loaded.get_config() == model.get_config()
    ops = [e["config"]["op"] for e in model.get_config()["layers"] if e["class_name"] == "Operation"]
    assert sorted(set(ops)) == ["add", "divide", "get_item", "multiply", "negative", "power", "subtract"]


def test_operator_indices_keep_their_tuples_slices_none_and_ellipsis():
    x = L.Input((4, 3), name="x")
    model = adv.Model(x, [x[:, 1:, :2], x[..., ::2], x[:, None, -2:], 1.0 - x @ np.ones((3, 2))], name="slices")
    nodes = [e["inbound_nodes"][0]["args"][0][1] for e in model.get_config()["layers"]
             if e["config"].get("name", "").startswith("get_item")]
    assert len(nodes) == 3 and all(n["class_name"] == "__tuple__" for n in nodes)
    again = adv.Model.from_config(model.get_config())
    data = RNG.normal(size=(2, 4, 3))
    for got, want in zip(again.predict(data), model.predict(data)):
        np.testing.assert_array_equal(got, want)
    assert again.get_config() == model.get_config()


def test_get_config_and_from_config_in_memory():
    seq = mlp()
    again = adv.Sequential.from_config(seq.get_config())
    assert again.get_config() == seq.get_config()
    assert again.built and all(a is not b for a, b in zip(again.weights, seq.weights))
    model, x = functional_model()
    rebuilt = adv.Model.from_config(model.get_config())
    assert type(rebuilt).__name__ == "Functional" and rebuilt.get_config() == model.get_config()
    assert [o.shape for o in rebuilt.predict(x)] == [o.shape for o in model.predict(x)]
    config = json.loads(json.dumps(model.get_config()))       # JSON-ready as it is
    assert adv.Model.from_config(config).get_config() == model.get_config()


def test_to_json_and_model_from_json_give_the_architecture_with_fresh_weights():
    model, x = functional_model()
    model.compile(optimizer="adam", loss=["mse", None])
    text = model.to_json(indent=2)
    assert json.loads(text)["class_name"] == "Functional"
    again = adv.models.model_from_json(text)
    assert again.get_config() == model.get_config() and again.optimizer is None
    assert not np.array_equal(again.get_layer("shared").kernel.numpy(), model.get_layer("shared").kernel.numpy())
    assert [o.shape for o in again.predict(x)] == [o.shape for o in model.predict(x)]
    with pytest.raises(ModelFileError, match=r"model_from_json: the text is not valid JSON .*line 1"):
        adv.models.model_from_json("{not json")


def test_clone_model_makes_new_variables_freshly_initialised():
    model, x = functional_model()
    before = {k: v.numpy().copy() for k, v in model._weight_paths().items()}
    clone = adv.models.clone_model(model)
    assert clone.get_config() == model.get_config() and clone.optimizer is None
    ids = {id(v) for v in model.weights}
    assert len(clone.weights) == len(model.weights) and not any(id(v) in ids for v in clone.weights)
    assert not np.array_equal(clone.get_layer("shared").kernel.numpy(), model.get_layer("shared").kernel.numpy())
    for v in clone.weights:
        v.assign(np.zeros(v.shape))
    for k, v in model._weight_paths().items():          # the original is untouched
        np.testing.assert_array_equal(v.numpy(), before[k])
    adv.layers.set_random_seed(7)
    first = adv.models.clone_model(model).get_layer("shared").kernel.numpy()
    adv.layers.set_random_seed(7)
    np.testing.assert_array_equal(adv.models.clone_model(model).get_layer("shared").kernel.numpy(), first)


# ----- every public layer keeps its arguments ----------------------------------------------------------
def fn_for_lambda(x, k=1.0):
    return x * k


adv.saving.register_keras_serializable(package="test_saving")(fn_for_lambda)


def seq(layer, shape, dtype=None):
    return lambda: (adv.Sequential([L.Input(shape, dtype=dtype), layer()]), (4, *shape))


def two(merge, shape=(3,)):
    def make():
        a, b = L.Input(shape, name="left"), L.Input(shape, name="right")
        return adv.Model([a, b], merge()([a, b])), [(4, *shape), (4, *shape)]
    return make


def mha():
    q, v = L.Input((5, 4)), L.Input((6, 3))
    out = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=2, dropout=0.1, use_bias=False, output_shape=5,
                               kernel_initializer="he_uniform", kernel_regularizer=adv.regularizers.L2(0.01),
                               seed=4)(q, v)
    return adv.Model([q, v], out), [(2, 5, 4), (2, 6, 3)]


def attention():
    q, v = L.Input((5, 4)), L.Input((6, 4))
    return adv.Model([q, v], L.Attention(use_scale=True, dropout=0.1)([q, v])), [(2, 5, 4), (2, 6, 4)]


def concat_attention():
    q, v, k = L.Input((5, 4)), L.Input((6, 3)), L.Input((6, 4))
    out = L.Attention(use_scale=True, score_mode="concat", dropout=0.1, seed=3)([q, v, k])
    return adv.Model([q, v, k], out), [(2, 5, 4), (2, 6, 3), (2, 6, 4)]


def additive_attention():
    q, v = L.Input((5, 4)), L.Input((6, 4))
    return adv.Model([q, v], L.AdditiveAttention(dropout=0.1, seed=2)([q, v])), [(2, 5, 4), (2, 6, 4)]


def adapted_normalization():
    norm = L.Normalization(axis=[1, 2], invert=True)
    norm.adapt(np.random.default_rng(0).normal(size=(10, 3, 2)))
    return adv.Sequential([L.Input((3, 2)), norm]), (4, 3, 2)


def bidirectional_with_backward():
    return adv.Sequential([L.Input((5, 3)), L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode="ave",
                                                            backward_layer=L.GRU(2, return_sequences=True,
                                                                                 go_backwards=True))]), (2, 5, 3)


L2, L1 = adv.regularizers.L2, adv.regularizers.L1
LAYER_CASES = {
    "Dense": seq(lambda: L.Dense(3, activation="relu", use_bias=False, kernel_initializer="he_normal",
                                 kernel_regularizer=L2(0.01), activity_regularizer=L1(0.001)), (4,)),
    "Flatten": seq(lambda: L.Flatten(), (2, 3)),
    "Reshape": seq(lambda: L.Reshape((3, -1)), (6,)),
    "UpSampling1D": seq(lambda: L.UpSampling1D(3), (4, 2)),
    "UpSampling2D": seq(lambda: L.UpSampling2D((2, 1), interpolation="bilinear"), (3, 3, 2)),
    "ZeroPadding1D": seq(lambda: L.ZeroPadding1D((1, 2)), (4, 2)),
    "ZeroPadding2D": seq(lambda: L.ZeroPadding2D(((1, 0), (2, 1))), (3, 3, 2)),
    "Cropping1D": seq(lambda: L.Cropping1D((1, 2)), (5, 2)),
    "Cropping2D": seq(lambda: L.Cropping2D(((1, 0), (0, 1))), (4, 4, 2)),
    "Activation": seq(lambda: L.Activation("softplus"), (4,)),
    "Lambda": seq(lambda: L.Lambda(fn_for_lambda, output_shape=(4,), arguments={"k": 3.0}), (4,)),
    "LeakyReLU": seq(lambda: L.LeakyReLU(negative_slope=0.1), (4,)),
    "ReLU": seq(lambda: L.ReLU(max_value=6.0, negative_slope=0.1, threshold=0.5), (4,)),
    "Softmax": seq(lambda: L.Softmax(axis=1), (3, 4)),
    "ELU": seq(lambda: L.ELU(alpha=0.5), (4,)),
    "PReLU": seq(lambda: L.PReLU(alpha_initializer="ones", alpha_regularizer="l2", shared_axes=[1]), (3, 2)),
    "Masking": seq(lambda: L.Masking(mask_value=0.5), (3, 2)),
    "Conv1D": seq(lambda: L.Conv1D(2, 3, padding="causal", dilation_rate=2, activation="tanh",
                                   kernel_regularizer=L1(0.01), bias_initializer="ones"), (8, 3)),
    "Conv2D": seq(lambda: L.Conv2D(4, (2, 3), strides=(1, 2), padding="same", groups=2, use_bias=False), (5, 6, 2)),
    "Conv1DTranspose": seq(lambda: L.Conv1DTranspose(2, 3, strides=2, output_padding=1, activation="relu"), (4, 3)),
    "Conv2DTranspose": seq(lambda: L.Conv2DTranspose(2, 2, strides=2, padding="same",
                                                     bias_regularizer=L2(0.1)), (3, 3, 2)),
    "DepthwiseConv1D": seq(lambda: L.DepthwiseConv1D(3, padding="same", depth_multiplier=2, activation="relu",
                                                     depthwise_regularizer=L2(0.01)), (6, 3)),
    "DepthwiseConv2D": seq(lambda: L.DepthwiseConv2D((2, 3), strides=(1, 2), depth_multiplier=2,
                                                     bias_initializer="ones"), (5, 6, 2)),
    "SeparableConv1D": seq(lambda: L.SeparableConv1D(4, 3, dilation_rate=2, depth_multiplier=2, activation="tanh",
                                                     pointwise_regularizer=L1(0.01)), (8, 3)),
    "SeparableConv2D": seq(lambda: L.SeparableConv2D(3, 2, strides=2, padding="same", use_bias=False,
                                                     pointwise_initializer="he_normal"), (5, 5, 2)),
    "MaxPooling1D": seq(lambda: L.MaxPooling1D(2, strides=1, padding="same"), (5, 2)),
    "MaxPooling2D": seq(lambda: L.MaxPooling2D((2, 2), padding="same"), (5, 5, 2)),
    "AveragePooling1D": seq(lambda: L.AveragePooling1D(3), (6, 2)),
    "AveragePooling2D": seq(lambda: L.AveragePooling2D((2, 1), strides=(1, 1)), (4, 4, 2)),
    "GlobalAveragePooling1D": seq(lambda: L.GlobalAveragePooling1D(keepdims=True), (5, 2)),
    "GlobalAveragePooling2D": seq(lambda: L.GlobalAveragePooling2D(), (3, 3, 2)),
    "GlobalMaxPooling1D": seq(lambda: L.GlobalMaxPooling1D(), (5, 2)),
    "GlobalMaxPooling2D": seq(lambda: L.GlobalMaxPooling2D(keepdims=True), (3, 3, 2)),
    "BatchNormalization": seq(lambda: L.BatchNormalization(momentum=0.9, epsilon=1e-4, center=False,
                                                           gamma_initializer="normal"), (4,)),
    "LayerNormalization": seq(lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-5, scale=False), (3, 4)),
    "GroupNormalization": seq(lambda: L.GroupNormalization(groups=2, epsilon=1e-4, center=False,
                                                           gamma_initializer="normal"), (3, 4)),
    "LayerNormalization+rms_scaling": seq(lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-5, rms_scaling=True,
                                                                     gamma_regularizer=L2(0.01)), (3, 4)),
    "RMSNormalization": seq(lambda: L.RMSNormalization(axis=[1, 2], epsilon=1e-4), (3, 4)),
    "UnitNormalization": seq(lambda: L.UnitNormalization(axis=[1, 2]), (3, 2)),
    "Rescaling": seq(lambda: L.Rescaling(1 / 127.5, offset=-1.0), (4,)),
    "Normalization": adapted_normalization,
    "Normalization+mean": seq(lambda: L.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0]), (3, 2)),
    "Dropout": seq(lambda: L.Dropout(0.3, noise_shape=(None, 1), seed=3), (4,)),
    "SpatialDropout1D": seq(lambda: L.SpatialDropout1D(0.2, seed=1), (3, 4)),
    "SpatialDropout2D": seq(lambda: L.SpatialDropout2D(0.2, data_format="channels_last"), (3, 3, 2)),
    "Embedding": seq(lambda: L.Embedding(10, 3, embeddings_initializer="normal",
                                         embeddings_regularizer=L2(0.01), mask_zero=True), (5,), "int32"),
    "RNN": seq(lambda: L.RNN(L.SimpleRNNCell(3, activation="relu", recurrent_initializer="glorot_uniform"),
                             return_sequences=True, go_backwards=True), (4, 2)),
    "StackedRNNCells": seq(lambda: L.RNN([L.LSTMCell(2, unit_forget_bias=False), L.GRUCell(3, reset_after=False,
                                                                                          use_bias=False)]), (4, 2)),
    "SimpleRNN": seq(lambda: L.SimpleRNN(3, activation="relu", dropout=0.1, seed=5, return_sequences=True), (4, 2)),
    "LSTM": seq(lambda: L.LSTM(3, recurrent_activation="hard_sigmoid", unit_forget_bias=False,
                               kernel_regularizer=L2(0.01)), (4, 2)),
    "GRU": seq(lambda: L.GRU(2, reset_after=False, go_backwards=True, return_sequences=True), (4, 2)),
    "Bidirectional": seq(lambda: L.Bidirectional(L.LSTM(2, return_sequences=True), merge_mode="sum"), (5, 3)),
    "Bidirectional+backward_layer": bidirectional_with_backward,
    "MultiHeadAttention": mha,
    "Attention": attention,
    "Attention+concat": concat_attention,
    "AdditiveAttention": additive_attention,
    "Add": two(lambda: L.Add()),
    "Subtract": two(lambda: L.Subtract()),
    "Multiply": two(lambda: L.Multiply()),
    "Average": two(lambda: L.Average()),
    "Maximum": two(lambda: L.Maximum()),
    "Minimum": two(lambda: L.Minimum()),
    "Concatenate": two(lambda: L.Concatenate(axis=1), shape=(2, 3)),
    "Identity": seq(lambda: L.Identity(), (4,)),
    "RepeatVector": seq(lambda: L.RepeatVector(3), (4,)),
    "Permute": seq(lambda: L.Permute((2, 1)), (3, 4)),
    "GaussianNoise": seq(lambda: L.GaussianNoise(0.2, seed=1), (4,)),
    "GaussianDropout": seq(lambda: L.GaussianDropout(0.3, seed=2), (4,)),
    "ActivityRegularization": seq(lambda: L.ActivityRegularization(l1=0.01, l2=0.02), (4,)),
    "Dot": two(lambda: L.Dot(axes=(1, 2), normalize=True), shape=(3, 3)),
    "TimeDistributed": seq(lambda: L.TimeDistributed(L.Dense(2, activation="tanh")), (5, 3)),
}


def entries(model) -> dict:
    """``{layer name: the config saving writes for it}`` for every layer inside ``model``."""
    out = {}
    for layer in model._all_layers():
        out[layer.name] = json.loads(json.dumps(adv.saving.serialize_keras_object(layer)))["config"]
    return out


def data_for(shape, int_input):
    return RNG.integers(0, 10, size=shape) if int_input else RNG.normal(size=shape)


def test_every_public_layer_class_has_a_case():
    covered = set()
    for make in LAYER_CASES.values():
        model, _ = make()
        covered |= {type(layer) for layer in model._all_layers()}
    public = {getattr(L, n) for n in L.__all__ if inspect.isclass(getattr(L, n)) and issubclass(getattr(L, n), L.Layer)}
    missing = public - covered - {L.Layer}
    assert not missing, f"layer classes without a saving case: {sorted(c.__name__ for c in missing)}"


@pytest.mark.parametrize("make", LAYER_CASES.values(), ids=LAYER_CASES.keys())
def test_every_layer_saves_and_loads_with_its_arguments_weights_and_outputs(tmp_path, make):
    model, shape = make()
    perturb(model)
    model.save(tmp_path / "m.keras")
    L.clear_session()           # as in a new session: layers made inside others get the same default names
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert entries(loaded) == entries(model)
    assert [type(a) for a in loaded._all_layers()] == [type(a) for a in model._all_layers()]
    same_weights(model, loaded)
    shapes = shape if isinstance(shape, list) else [shape]
    int_input = any(isinstance(layer, L.Embedding) for layer in model._all_layers())
    x = [data_for(s, int_input) for s in shapes]
    x = x if len(x) > 1 else x[0]
    for got, want in zip(structure.flatten(loaded.predict(x))[0], structure.flatten(model.predict(x))[0]):
        np.testing.assert_array_equal(got, want)


GIVEN = {   # arguments that change the layer (not the defaults): each must be in its saved config
    L.Dense: {"activation": "relu", "use_bias": False, "kernel_initializer": "he_normal"},
    L.Conv1D: {"padding": "causal", "dilation_rate": [2], "activation": "tanh", "bias_initializer": "ones"},
    L.Conv1DTranspose: {"output_padding": [1], "activation": "relu"},
    L.Embedding: {"embeddings_initializer": "normal", "mask_zero": True},
    L.GroupNormalization: {"groups": 2, "epsilon": 1e-4, "center": False},
    L.Normalization: {"invert": True},
    L.SimpleRNNCell: {"activation": "relu", "recurrent_initializer": "glorot_uniform"},
    L.LSTMCell: {"unit_forget_bias": False},
    L.GRUCell: {"reset_after": False, "use_bias": False},
    L.LSTM: {"recurrent_activation": "hard_sigmoid", "unit_forget_bias": False},
    L.RNN: {"go_backwards": True, "return_sequences": True},
    L.Concatenate: {"axis": 1},
    L.Activation: {"activation": "softplus"},
    L.Lambda: {"output_shape": [4], "arguments": {"k": 3.0}},
    L.Bidirectional: {"merge_mode": "sum"},
    L.MultiHeadAttention: {"value_dim": 2, "output_shape": 5, "kernel_initializer": "he_uniform", "seed": 4},
    L.Attention: {"use_scale": True, "dropout": 0.1},
    L.GlobalAveragePooling1D: {"keepdims": True},
    L.BatchNormalization: {"momentum": 0.9, "epsilon": 1e-4, "center": False},
    L.RMSNormalization: {"axis": [1, 2], "epsilon": 1e-4},
}




def test_the_saved_configs_and_get_config_hold_the_arguments_given():
    saved, own = {}, {}
    for make in LAYER_CASES.values():
        model, _ = make()
        for layer in model._all_layers():
            if type(layer) in GIVEN and type(layer) not in saved:
                saved[type(layer)] = entries(model)[layer.name]
                own[type(layer)] = json.loads(json.dumps(adv.saving.serialize_keras_object(layer.get_config())))
    assert set(saved) == set(GIVEN)
    for cls, want in GIVEN.items():
        assert {k: saved[cls].get(k) for k in want} == want, cls.__name__
        assert {"name", "trainable", "dtype"} <= set(saved[cls]), cls.__name__
        assert {k: own[cls].get(k) for k in want} == want, f"{cls.__name__}.get_config()"


def test_a_frozen_layer_and_float64_layers_stay_so(tmp_path):
    model = adv.Sequential([L.Input((3,)), L.Dense(2, dtype="float64", trainable=False), L.Dense(1)])
    model.save(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert loaded.layers[0].trainable is False and loaded.layers[0].dtype == "float64"
    assert len(loaded.trainable_variables) == 2 and loaded.layers[0].kernel.dtype == np.float64


# ----- your own layers, models, losses, metrics and activations -------------------------------------------
@adv.saving.register_keras_serializable(package="test_saving")
class Scale(L.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Unregistered(Scale):
    pass


def squash(x):
    return x / (1.0 + adv.abs(x))


def my_loss(y_true, y_pred):
    return adv.mean(adv.square(y_true - y_pred), axis=-1) * 2.0


def my_metric(y_true, y_pred):
    return np.mean(np.abs(np.asarray(y_true) - np.asarray(y_pred)), axis=-1)


def test_a_registered_layer_loads_without_custom_objects(tmp_path):
    model = adv.Sequential([L.Input((3,)), Scale(3.0, name="scale"), L.Dense(1)])
    perturb(model)
    model.save(tmp_path / "m.keras")
    entry = json.loads(members(tmp_path / "m.keras")["config.json"])["config"]["layers"][1]
    assert (entry["class_name"], entry["registered_name"]) == ("Scale", "test_saving>Scale")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert type(loaded.layers[0]) is Scale and loaded.layers[0].factor == 3.0
    same_weights(model, loaded)


def test_an_unknown_class_is_refused_naming_it_and_both_fixes(tmp_path):
    model = adv.Sequential([L.Input((3,)), Unregistered(name="mine")])
    model.save(tmp_path / "m.keras")
    before = (tmp_path / "m.keras").read_bytes()
    with pytest.raises(TypeError) as info:
        adv.saving.load_model(tmp_path / "m.keras")
    text = str(info.value)
    assert "m.keras" in text and "unknown class 'Unregistered'" in text
    assert "custom_objects={'Unregistered': Unregistered}" in text and "register_keras_serializable" in text
    assert (tmp_path / "m.keras").read_bytes() == before
    loaded = adv.saving.load_model(tmp_path / "m.keras", custom_objects={"Unregistered": Unregistered})
    assert type(loaded.layers[0]) is Unregistered and loaded.layers[0].name == "mine"
    with adv.saving.custom_object_scope({"Unregistered": Unregistered}):
        assert type(adv.models.model_from_json(model.to_json()).layers[0]) is Unregistered


def test_your_own_loss_metric_and_activation_come_back_through_custom_objects(tmp_path):
    x, y = regression()
    model = adv.Sequential([L.Input((4,)), L.Dense(3, activation=squash), L.Dense(2)])
    model.compile(optimizer="sgd", loss=my_loss, metrics=[my_metric])
    model.save(tmp_path / "m.keras")
    config = json.loads(members(tmp_path / "m.keras")["config.json"])
    assert config["config"]["layers"][1]["config"]["activation"] == {
        "module": "test_saving", "class_name": "function", "config": "squash", "registered_name": None}
    with pytest.raises(TypeError, match=r"unknown function 'squash' \(from module 'test_saving'\).*custom_objects"):
        adv.saving.load_model(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras", custom_objects={
        "squash": squash, "my_loss": my_loss, "my_metric": my_metric})
    assert loaded.layers[0].activation is squash and loaded.loss.fn is my_loss
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    assert "my_metric" in loaded.fit(x, y, epochs=1, verbose=0).history


def test_a_loss_written_with_def_inside_a_function_comes_back_by_its_name_from_custom_objects(tmp_path):
    """Géron ch. 12: ``create_huber(2.0)`` returns a nested ``huber_fn``; Keras 3 saves it by name and
    ``load_model(path, custom_objects={"huber_fn": create_huber(2.0)})`` finds it again there."""
    def create_huber(threshold=1.0):
        def huber_fn(y_true, y_pred):
            error = y_true - y_pred
            return adv.where(adv.abs(error) < threshold, adv.square(error) / 2,
                             threshold * adv.abs(error) - threshold ** 2 / 2)
        return huber_fn

    x, y = regression()
    model = adv.Sequential([L.Input((4,)), L.Dense(2)])
    model.compile(optimizer="sgd", loss=create_huber(2.0))
    model.save(tmp_path / "m.keras")
    given = create_huber(2.0)
    loaded = adv.saving.load_model(tmp_path / "m.keras", custom_objects={"huber_fn": given})
    assert loaded.loss.fn is given
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    with pytest.raises(TypeError) as info:                    # Keras 3: TypeError, the function is not found
        adv.saving.load_model(tmp_path / "m.keras")
    text = str(info.value)
    assert "unknown function 'huber_fn'" in text and "custom_objects={'huber_fn': huber_fn}" in text
    assert "lambda" not in text
    rebuilt = adv.saving.load_model(tmp_path / "m.keras", safe_mode=False)   # a file one trusts: from its code
    assert rebuilt.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)


@adv.saving.register_keras_serializable(package="test_saving")
class TwoLayerModel(adv.Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = L.Dense(units, activation="relu")
        self.head = L.Dense(1)

    def call(self, x):
        return self.head(self.hidden(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_a_subclassed_model_is_rebuilt_from_its_config_and_built_from_its_first_input(tmp_path):
    model = TwoLayerModel(units=5, name="two")
    x, y = regression()
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y[:, :1], epochs=1, verbose=0, seed=0)
    model.save(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert type(loaded) is TwoLayerModel and loaded.units == 5 and loaded.name == "two" and loaded.built
    same_weights(model, loaded)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert loaded.optimizer.iterations == model.optimizer.iterations


def test_a_get_config_that_leaves_out_an_argument_is_refused_at_save_time(tmp_path):
    class Shift(L.Layer):
        def __init__(self, amount, **kwargs):
            super().__init__(**kwargs)
            self.amount = amount

        def call(self, x):
            return x + self.amount

    model = adv.Sequential([L.Input((2,)), Shift(1.0)])
    (tmp_path / "m.keras").write_bytes(b"an earlier file")
    with pytest.raises(TypeError, match=r"Shift.__init__ takes \['amount'\], which its get_config\(\) does not "
                                        r"return.*'amount': self.amount"):
        model.save(tmp_path / "m.keras")
    assert (tmp_path / "m.keras").read_bytes() == b"an earlier file"
    assert folder_listing(tmp_path) == ["m.keras"]


def test_a_functional_subclass_comes_back_as_itself(tmp_path):
    @adv.saving.register_keras_serializable(package="test_saving")
    class WithOwnStep(adv.Model):
        def train_step(self, data):
            return super().train_step(data)

    x = L.Input((3,), name="x")
    model = WithOwnStep(x, L.Dense(2, name="y")(x), name="own")
    model.save(tmp_path / "m.keras")
    loaded = adv.saving.load_model(tmp_path / "m.keras")
    assert isinstance(loaded, WithOwnStep) and loaded.name == "own" and loaded.output_names == ["y"]
    same_weights(model, loaded)


# ----- Lambda layers and Python code: safe_mode -------------------------------------------------------------
def test_a_lambda_is_refused_unless_safe_mode_is_false(tmp_path):
    offset = 0.5
    model = adv.Sequential([L.Input((3,)), L.Lambda(lambda t: adv.square(t) + offset, name="sq"), L.Dense(2)])
    x = RNG.normal(size=(4, 3))
    model.save(tmp_path / "m.keras")
    before = (tmp_path / "m.keras").read_bytes()
    with pytest.raises(ValueError) as info:
        adv.saving.load_model(tmp_path / "m.keras")
    text = str(info.value)
    assert "m.keras" in text and "layer 'sq'" in text and "adv.square(t) + offset" in text
    assert "safe_mode=False" in text and "register_keras_serializable" in text
    assert (tmp_path / "m.keras").read_bytes() == before
    loaded = adv.saving.load_model(tmp_path / "m.keras", safe_mode=False)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    with pytest.raises(ValueError, match="safe_mode=False"):
        adv.models.model_from_json(model.to_json())
    assert adv.models.model_from_json(model.to_json(), safe_mode=False).layers[0].name == "sq"
    clone = adv.models.clone_model(model)                      # in memory: the same function, no code read
    assert clone.layers[0].function is model.layers[0].function


def test_a_lambda_that_reads_an_unknown_global_needs_it_in_custom_objects(tmp_path):
    model = adv.Sequential([L.Input((3,)), L.Lambda(lambda t: t * RNG_SCALE.factor, name="scaled")])
    model.save(tmp_path / "m.keras")
    with pytest.raises(TypeError, match=r"RNG_SCALE \(a Scale\).*custom_objects=\{'RNG_SCALE'"):
        adv.saving.load_model(tmp_path / "m.keras", safe_mode=False)
    loaded = adv.saving.load_model(tmp_path / "m.keras", safe_mode=False, custom_objects={"RNG_SCALE": RNG_SCALE})
    x = RNG.normal(size=(2, 3))
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


RNG_SCALE = Scale(4.0)


# ----- files that are not what save writes --------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    model = mlp()
    model.compile(optimizer="adam", loss="mse")
    path = tmp_path / "m.keras"
    model.save(path)
    return path


def refused(path, error, *patterns, **kwargs):
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(error) as info:
        adv.saving.load_model(path, **kwargs)
    text = str(info.value)
    assert str(path) in text, text
    for pattern in patterns:
        assert pattern in text, f"{pattern!r} not in {text!r}"
    assert (path.read_bytes() if path.is_file() else None) == before
    return text


def test_a_file_that_is_not_a_zip(tmp_path):
    path = tmp_path / "junk.keras"
    path.write_bytes(b"this is not a zip archive")
    refused(path, ModelFileError, "not a .keras archive", "zip", "config.json")


def test_a_zip_without_config_json(saved):
    rewrite(saved, drop=["config.json"])
    refused(saved, ModelFileError, "without config.json", "model.save()")


def test_malformed_json(saved):
    rewrite(saved, replace={"config.json": b'{"class_name": "Sequential", "config": '})
    refused(saved, ModelFileError, "config.json", "not valid JSON", "line 1")


def test_a_file_written_by_keras(saved):
    rewrite(saved, replace={"metadata.json": b'{"keras_version": "3.4.1", "date_saved": "2024-07-01@10:00:00"}'})
    refused(saved, ModelFileError, "written by Keras 3.4.1", "not by autodiff_viz", "set_weights")


def test_a_config_of_another_package(saved):
    config = json.loads(members(saved)["config.json"])
    config["module"] = "keras.src.models.sequential"
    rewrite(saved, replace={"config.json": json.dumps(config).encode()})
    refused(saved, ModelFileError, "written by Keras, not autodiff_viz")
    rewrite(saved, replace={"metadata.json": b'{"package": "other_lib"}'})
    refused(saved, ModelFileError, "written by 'other_lib'")


def test_missing_or_mismatched_weights(saved):
    weights = npz(members(saved)["model.weights.npz"])
    del weights["dense/bias"]
    weights["dense_1/kernel"] = np.zeros((3, 3))
    rewrite(saved, replace={"model.weights.npz": npz_bytes(weights)})
    refused(saved, WeightsFileError, "does not match", "missing from the file: dense/bias",
            "dense_1/kernel: the model has shape (8, 2), the file (3, 3)")
    rewrite(saved, drop=["model.weights.npz"])
    refused(saved, ModelFileError, "holds no model.weights.npz")


def test_an_optimizer_state_that_does_not_fit(saved):
    state = npz(members(saved)["optimizer.weights.npz"])
    state["momentum/dense/kernel"] = np.zeros((4, 8))
    rewrite(saved, replace={"optimizer.weights.npz": npz_bytes(state)})
    refused(saved, ModelFileError, "does not fit the model's optimizer (Adam)", "has no slot 'momentum'",
            "compile=False")
    assert adv.saving.load_model(saved, compile=False).optimizer is None


def test_a_missing_file_a_folder_and_other_extensions(tmp_path):
    refused(tmp_path / "nowhere.keras", FileNotFoundError, "does not exist")
    (tmp_path / "dir.keras").mkdir()
    refused(tmp_path / "dir.keras", ModelFileError, "is a folder")
    with pytest.raises(ValueError, match=r"must end in '.keras'.*model.load_weights\(path\)"):
        adv.saving.load_model(tmp_path / "w.npz")
    with pytest.raises(ValueError, match=r"must end in '.keras'.*HDF5"):
        adv.saving.load_model(tmp_path / "w.h5")


# ----- saving refuses before it writes, and never leaves half a file ----------------------------------
def test_save_refuses_other_extensions_naming_keras_and_save_weights(tmp_path):
    model = mlp()
    for name in ("m.npz", "m.h5", "model"):
        with pytest.raises(ValueError, match=r"must end in '.keras'.*save_weights"):
            model.save(tmp_path / name)
    assert folder_listing(tmp_path) == []
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save(tmp_path / "missing" / "m.keras")
    with pytest.raises(ValueError, match="not built yet"):
        adv.Sequential([L.Dense(2)]).save(tmp_path / "m.keras")
    assert folder_listing(tmp_path) == []


def test_overwrite_false_keeps_the_file(tmp_path):
    model = mlp()
    model.save(tmp_path / "m.keras")
    before = (tmp_path / "m.keras").read_bytes()
    perturb(model)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        model.save(tmp_path / "m.keras", overwrite=False)
    assert (tmp_path / "m.keras").read_bytes() == before
    model.save(tmp_path / "m.keras")
    assert (tmp_path / "m.keras").read_bytes() != before


def test_a_save_that_fails_while_writing_leaves_the_earlier_file_and_no_temporary(tmp_path, monkeypatch):
    model = mlp()
    model.save(tmp_path / "m.keras")
    before = (tmp_path / "m.keras").read_bytes()
    perturb(model)
    real = zipfile.ZipFile.writestr

    def failing(self, name, data, *args, **kwargs):
        if name == "model.weights.npz":
            raise OSError("disk full")
        return real(self, name, data, *args, **kwargs)
    monkeypatch.setattr(zipfile.ZipFile, "writestr", failing)
    with pytest.raises(OSError, match="disk full"):
        model.save(tmp_path / "m.keras")
    assert (tmp_path / "m.keras").read_bytes() == before
    assert folder_listing(tmp_path) == ["m.keras"]


def test_an_object_that_cannot_be_written_is_refused_before_the_file_is_touched(tmp_path):
    class Clip:         # no get_config, and its argument is not kept under its name
        def __init__(self, limit):
            self._limit = limit

        def __call__(self, w):
            return adv.clip(w, -self._limit, self._limit)

    model = adv.Sequential([L.Input((3,)), L.Dense(2, kernel_constraint=Clip(1.0), name="clipped")])
    (tmp_path / "m.keras").write_bytes(b"an earlier file")
    with pytest.raises(TypeError, match=r"layer 'clipped'.*Clip.__init__ takes \['limit'\]"):
        model.save(tmp_path / "m.keras")
    assert (tmp_path / "m.keras").read_bytes() == b"an earlier file"
    assert folder_listing(tmp_path) == ["m.keras"]
    clone = adv.models.clone_model(model)            # a clone shares such an object instead
    assert clone.layers[0].kernel_constraint is model.layers[0].kernel_constraint


def test_two_layers_with_one_name_cannot_be_saved_as_a_graph(tmp_path):
    x = L.Input((2,))
    model = adv.Model(x, L.Dense(2, name="twin")(L.Dense(2, name="twin")(x)))
    with pytest.raises(ValueError, match=r"two layers are named 'twin'.*distinct names"):
        model.save(tmp_path / "m.keras")
    assert folder_listing(tmp_path) == []


def test_loading_leaves_the_global_generator_where_it_was(tmp_path):
    mlp().save(tmp_path / "m.keras")
    adv.layers.set_random_seed(3)
    want = adv.layers.initializers.generator().random(3)
    adv.layers.set_random_seed(3)
    adv.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(adv.layers.initializers.generator().random(3), want)


def test_optimizers_losses_and_metrics_give_their_arguments_and_rebuild_from_them():
    """Keras 3's get_config/from_config on the objects compile takes (they had none, or lost arguments)."""
    given = [
        (adv.optimizers.Adam, {"learning_rate": 0.01, "beta_1": 0.8, "amsgrad": True, "weight_decay": 0.1}),
        (adv.optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True, "clipnorm": 1.0}),
        (adv.optimizers.RMSprop, {"rho": 0.8, "centered": True}),
        (adv.losses.BinaryCrossentropy, {"from_logits": True, "label_smoothing": 0.1, "reduction": "sum"}),
        (adv.losses.Huber, {"delta": 2.0, "name": "robust"}),
        (adv.metrics.BinaryAccuracy, {"threshold": 0.7, "dtype": "float64"}),
        (adv.metrics.Accuracy, {"name": "acc"}),
    ]
    for cls, kwargs in given:
        config = cls(**kwargs).get_config()
        assert {k: config[k] for k in kwargs} == kwargs, cls.__name__
        assert cls.from_config(config).get_config() == config, cls.__name__
