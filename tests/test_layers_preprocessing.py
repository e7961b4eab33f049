"""Rescaling, Normalization (preprocessing) and UnitNormalization, GroupNormalization (normalization).

Values against Keras 3's formulas computed by hand in numpy (and the examples of Keras' docstrings),
gradients against central finite differences, config round trips, errors, weights in save_weights,
and training inside a Sequential.
"""
from __future__ import annotations

import numpy as np
import pytest
from fit_helpers import fresh_session  # noqa: F401  (autouse: names and weights start afresh in each test)

import autodiff_viz as adv
from autodiff_viz import layers as L

RNG = np.random.default_rng(0)
KERAS_DATA = np.array([[0.0, 7.0, 4.0], [2.0, 9.0, 6.0], [0.0, 7.0, 4.0], [2.0, 9.0, 6.0]])


def group_norm_reference(x, groups, axis, epsilon, gamma, beta):
    """Keras 3's GroupNormalization, written out in numpy."""
    axis = axis % x.ndim
    shape = x.shape
    g = x.reshape(shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1:])
    reduce = tuple(a for a in range(1, g.ndim) if a != axis)
    mean, var = g.mean(axis=reduce, keepdims=True), g.var(axis=reduce, keepdims=True)
    out = ((g - mean) / np.sqrt(var + epsilon)).reshape(shape)
    b = [1] * x.ndim
    b[axis] = shape[axis]
    return out * gamma.reshape(b) + beta.reshape(b)


# ----- values --------------------------------------------------------------------------------------------
def test_rescaling_maps_pixels_to_the_unit_interval_and_to_minus_one_one():
    pixels = np.array([[0, 51, 255]])                        # integers in, floats out (Keras)
    out = L.Rescaling(1 / 255.0)(pixels)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), [[0.0, 0.2, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(L.Rescaling(1 / 127.5, offset=-1)(pixels).numpy(), [[-1.0, -0.6, 1.0]], rtol=1e-6)
    per_channel = L.Rescaling([1.0, 2.0], offset=[0.0, 10.0], dtype="float64")
    np.testing.assert_array_equal(per_channel(np.ones((2, 2))).numpy(), [[1.0, 12.0], [1.0, 12.0]])


def test_normalization_after_adapt_gives_mean_zero_and_variance_one_per_feature():
    x = RNG.normal(loc=[1.0, -5.0, 30.0], scale=[0.1, 2.0, 7.0], size=(200, 3))
    norm = L.Normalization(dtype="float64")
    norm.adapt(x)
    np.testing.assert_allclose(norm.mean.numpy(), x.mean(axis=0))
    np.testing.assert_allclose(norm.variance.numpy(), x.var(axis=0))       # biased, as Keras
    assert norm.count.numpy() == 200
    y = norm(x).numpy()
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=0), 1.0, rtol=1e-12)


def test_normalization_matches_the_keras_docstring_examples():
    norm = L.Normalization()
    norm.adapt(KERAS_DATA)
    np.testing.assert_allclose(norm(np.array([[0.0, 7.0, 4.0]])).numpy(), [[-1.0, -1.0, -1.0]])
    inverse = L.Normalization(invert=True)
    inverse.adapt(KERAS_DATA)
    np.testing.assert_allclose(inverse(np.array([[1.0, 2.0, 3.0]])).numpy(), [[2.0, 10.0, 8.0]])
    scalar = L.Normalization(axis=None)
    scalar.adapt(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_allclose(scalar(np.array([1.0, 2.0, 3.0])).numpy(), [-1.4142135, -0.70710677, 0.0],
                               rtol=1e-6)
    given = L.Normalization(mean=3.0, variance=2.0)
    np.testing.assert_allclose(given(np.array([[1.0], [2.0], [3.0]])).numpy().ravel(),
                               [-1.4142135, -0.70710677, 0.0], rtol=1e-6)
    assert given.weights == []                  # given statistics live in the config, as Keras


def test_normalization_invert_gives_the_data_back():
    x = RNG.normal(loc=4.0, scale=3.0, size=(50, 2, 3))
    forward, back = L.Normalization(axis=[1, 2], dtype="float64"), L.Normalization(axis=[1, 2], invert=True,
                                                                                    dtype="float64")
    forward.adapt(x)
    back.adapt(x)
    assert forward.mean.shape == (2, 3)
    np.testing.assert_allclose(back(forward(x)).numpy(), x, rtol=1e-12)


def test_normalization_floors_the_standard_deviation_at_keras_epsilon():
    norm = L.Normalization(dtype="float64")
    norm.adapt(np.array([[1.0, 0.0], [1.0, 2.0]]))           # the first feature is constant: variance 0
    out = norm(np.array([[1.0 + 1e-9, 1.0]])).numpy()
    np.testing.assert_allclose(out, [[1e-9 / 1e-7, 0.0]], rtol=1e-6)   # (x − μ) / max(√σ², 1e-7)


def test_adapt_takes_lists_and_batches_and_matches_one_array():
    one = L.Normalization(dtype="float64")
    one.adapt(KERAS_DATA)
    from_list, from_batches = L.Normalization(dtype="float64"), L.Normalization(dtype="float64")
    from_list.adapt(KERAS_DATA.tolist())
    from_batches.adapt([KERAS_DATA[:1], KERAS_DATA[1:]])
    for other in (from_list, from_batches):
        np.testing.assert_array_equal(other.mean.numpy(), one.mean.numpy())
        np.testing.assert_array_equal(other.variance.numpy(), one.variance.numpy())


def test_unit_normalization_gives_unit_norms_and_keeps_zeros():
    x = RNG.normal(size=(4, 3, 5))
    out = L.UnitNormalization(dtype="float64")(x).numpy()
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0)
    np.testing.assert_allclose(out, x / np.linalg.norm(x, axis=-1, keepdims=True))
    both = L.UnitNormalization(axis=[1, 2], dtype="float64")(x).numpy()
    np.testing.assert_allclose(np.sqrt((both ** 2).sum(axis=(1, 2))), 1.0)
    np.testing.assert_array_equal(L.UnitNormalization()(np.zeros((2, 3))).numpy(), 0.0)
    tiny = np.array([[1e-8, 0.0]])                                  # Σx² < 1e-12: divided by 1e-6, as Keras
    np.testing.assert_allclose(L.UnitNormalization(dtype="float64")(tiny).numpy(), [[1e-2, 0.0]])


@pytest.mark.parametrize("groups,axis,shape", [(2, -1, (3, 5, 4)), (1, -1, (2, 6)), (-1, -1, (2, 3, 3)),
                                               (3, 1, (2, 6, 4)), (2, -2, (2, 4, 3))])
def test_group_normalization_matches_keras_formula(groups, axis, shape):
    x = RNG.normal(loc=2.0, size=shape)
    layer = L.GroupNormalization(groups=groups, axis=axis, epsilon=1e-3, dtype="float64")
    layer(x)
    layer.gamma.assign(RNG.uniform(0.5, 1.5, size=layer.gamma.shape))
    layer.beta.assign(RNG.normal(size=layer.beta.shape))
    channels = shape[axis]
    want = group_norm_reference(x, channels if groups == -1 else groups, axis, 1e-3, layer.gamma.numpy(),
                                layer.beta.numpy())
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-10, atol=1e-12)
    assert [w.path for w in layer.weights] == ["group_normalization/gamma", "group_normalization/beta"]


def test_group_normalization_with_one_group_is_layer_normalization_over_all_features():
    x = RNG.normal(size=(3, 4, 6))
    group = L.GroupNormalization(groups=1, dtype="float64")(x).numpy()
    layer = L.LayerNormalization(axis=[1, 2], dtype="float64")(x).numpy()
    np.testing.assert_allclose(group, layer, rtol=1e-12)


def test_group_normalization_without_center_and_scale_has_no_weights():
    layer = L.GroupNormalization(groups=2, center=False, scale=False)
    layer(np.ones((2, 4)))
    assert layer.weights == []


# ----- gradients -----------------------------------------------------------------------------------------
def test_gradients_through_every_layer_match_finite_differences():
    x = RNG.normal(size=(4, 6))
    norm = L.Normalization(dtype="float64")
    norm.adapt(RNG.normal(loc=1.0, scale=2.0, size=(20, 6)))
    inverse = L.Normalization(invert=True, dtype="float64")
    inverse.adapt(RNG.normal(loc=1.0, scale=2.0, size=(20, 6)))
    group = L.GroupNormalization(groups=3, dtype="float64")
    group(x)
    group.gamma.assign(RNG.uniform(0.5, 1.5, size=6))
    cases = {"Rescaling": L.Rescaling(0.5, offset=-1.0, dtype="float64"), "Normalization": norm,
             "Normalization(invert)": inverse, "UnitNormalization": L.UnitNormalization(dtype="float64"),
             "GroupNormalization": group}
    weights = RNG.normal(size=(4, 6))
    for name, layer in cases.items():
        report = adv.check_grads(lambda t, layer=layer: adv.sum(layer(t) * weights), (x,))
        assert report.ok, f"{name}: {report}"


def test_group_normalization_gradients_reach_gamma_and_beta():
    x = RNG.normal(size=(3, 4))
    layer = L.GroupNormalization(groups=2, dtype="float64")
    layer(x)
    weights = RNG.normal(size=(3, 4))

    def f(gamma, beta):
        layer.gamma.assign(gamma.numpy())
        layer.beta.assign(beta.numpy())
        with adv.GradientTape() as tape:
            loss = adv.sum(layer(x) * weights)
        return loss, tape.gradient(loss, [layer.gamma, layer.beta])
    _, (g_gamma, g_beta) = f(adv.constant(np.ones(4)), adv.constant(np.zeros(4)))
    x_hat = group_norm_reference(x, 2, -1, 1e-3, np.ones(4), np.zeros(4))
    np.testing.assert_allclose(g_gamma.numpy(), (x_hat * weights).sum(axis=0), rtol=1e-10)
    np.testing.assert_allclose(g_beta.numpy(), weights.sum(axis=0), rtol=1e-10)


def test_the_layers_are_package_ops_on_the_graph():
    norm = L.Normalization(dtype="float64")
    norm.adapt(KERAS_DATA)
    x = adv.constant(KERAS_DATA)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.sum(L.UnitNormalization()(norm(x)))
    text = tape.trace(y, x).to_json()
    assert '"sqrt"' in text and '"maximum"' in text and '"divide"' in text
    assert tape.gradient(y, x) is not None


# ----- configs -------------------------------------------------------------------------------------------
CONFIG_CASES = [
    L.Rescaling(1 / 255.0, offset=-0.5, name="rescale"),
    L.Rescaling([1.0, 2.0, 3.0], offset=[0.0, 0.5, 1.0]),
    L.Normalization(axis=[1, 2], invert=True, name="norm"),
    L.Normalization(axis=None),
    L.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0]),
    L.UnitNormalization(axis=[1, 2], dtype="float64"),
    L.GroupNormalization(groups=4, axis=1, epsilon=1e-5, center=False, scale=True, beta_initializer="ones",
                         gamma_initializer="zeros", gamma_regularizer="l2", trainable=False),
]


@pytest.mark.parametrize("layer", CONFIG_CASES, ids=lambda layer: type(layer).__name__)
def test_config_round_trips(layer):
    config = layer.get_config()
    again = type(layer).from_config(config).get_config()
    assert again.keys() == config.keys()
    for key in config:
        if key != "gamma_regularizer":          # a regularizer object: compared by its config
            assert again[key] == config[key], key
    assert {"name", "trainable", "dtype"} <= set(config)


def test_get_config_holds_every_constructor_argument():
    import inspect
    for cls in (L.Rescaling, L.Normalization, L.UnitNormalization, L.GroupNormalization):
        params = {p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "kwargs")}
        args = {"scale": 2.0} if cls is L.Rescaling else {}
        assert params <= set(cls(**args).get_config()), cls.__name__
    norm = L.Normalization(axis=1, mean=[0.0, 1.0], variance=[1.0, 4.0], invert=True).get_config()
    assert (norm["axis"], norm["mean"], norm["variance"], norm["invert"]) == ((1,), [0.0, 1.0], [1.0, 4.0], True)
    group = L.GroupNormalization(groups=8, axis=2, epsilon=0.01, center=False).get_config()
    assert (group["groups"], group["axis"], group["epsilon"], group["center"], group["scale"]) == \
        (8, 2, 0.01, False, True)


# ----- errors --------------------------------------------------------------------------------------------
def test_calling_normalization_before_adapt_names_adapt():
    norm = L.Normalization(name="features_norm")
    with pytest.raises(RuntimeError, match=r"features_norm.*features_norm\.adapt\(data\)"):
        norm(KERAS_DATA)


@pytest.mark.parametrize("make,error,pattern", [
    (lambda: L.Rescaling("1/255"), TypeError, r"Rescaling: scale must be a number.*'1/255'"),
    (lambda: L.Rescaling(None), TypeError, r"Rescaling: scale"),
    (lambda: L.Rescaling(1.0, offset="x"), TypeError, r"Rescaling: offset"),
    (lambda: L.Normalization(mean=1.0), ValueError, r"mean and variance together"),
    (lambda: L.Normalization(mean=[1.0, 2.0], variance=[1.0]), ValueError, r"same shape.*\(2,\).*\(1,\)"),
    (lambda: L.Normalization(mean=1.0, variance=-1.0), ValueError, r"variance must be non-negative"),
    (lambda: L.Normalization(mean=np.ones((2, 2)), variance=np.ones((2, 2))), ValueError, r"more than the 1 axes"),
    (lambda: L.Normalization(axis="last"), TypeError, r"Normalization: axis must be an int.*'last'"),
    (lambda: L.UnitNormalization(axis=1.5), TypeError, r"UnitNormalization: axis must be an int.*1.5"),
    (lambda: L.GroupNormalization(groups=0), ValueError, r"GroupNormalization: groups must be.*got 0"),
    (lambda: L.GroupNormalization(groups=2.0), ValueError, r"groups must be.*2.0"),
    (lambda: L.GroupNormalization(axis=[1, 2]), TypeError, r"GroupNormalization: axis must be one int"),
    (lambda: L.GroupNormalization(epsilon=0), ValueError, r"epsilon must be positive"),
])
def test_bad_arguments_are_refused_when_the_layer_is_made(make, error, pattern):
    with pytest.raises(error, match=pattern):
        make()


def test_groups_that_do_not_divide_the_channels_are_refused_with_a_divisor():
    layer = L.GroupNormalization(groups=4, name="gn")
    with pytest.raises(ValueError, match=r"gn \(GroupNormalization\): groups=4 must divide the 6 channels.*groups=3"):
        layer(np.ones((2, 6)))
    assert layer.weights == []
    with pytest.raises(ValueError, match=r"groups=32 must divide the 8 channels"):
        L.GroupNormalization()(np.ones((2, 8)))
    with pytest.raises(ValueError, match=r"batch axis"):
        L.GroupNormalization(groups=1, axis=0)(np.ones((2, 8)))


def test_bad_adapt_data_and_shapes_are_refused():
    norm = L.Normalization(name="nm")
    for bad in ({"a": 1}, "text", None, (x for x in range(3)), [["a", "b"]]):
        with pytest.raises(TypeError, match=r"nm \(Normalization\): adapt\(\) takes a numpy array"):
            norm.adapt(bad)
    norm.adapt(KERAS_DATA)
    with pytest.raises(ValueError, match=r"adapt\(\) got data of shape \(2, 4\)"):
        norm.adapt(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"got input shape \(1, 4\)"):
        norm(np.ones((1, 4)))
    with pytest.raises(ValueError, match=r"nothing to adapt"):
        L.Normalization(mean=1.0, variance=1.0).adapt(KERAS_DATA)
    with pytest.raises(ValueError, match=r"axis 3 is out of range"):
        L.Normalization(axis=3).adapt(KERAS_DATA)


# ----- weights and models --------------------------------------------------------------------------------
def test_adapted_statistics_are_non_trainable_weights_that_save_weights_writes(tmp_path):
    norm = L.Normalization(name="norm")
    model = adv.Sequential([L.Input((3,)), norm, L.Dense(1)])
    norm.adapt(KERAS_DATA)
    assert norm.trainable_variables == []
    assert [v.path for v in norm.non_trainable_variables] == [f"{model.name}/norm/{n}" for n in ("mean", "variance",
                                                                                                 "count")]
    model.save_weights(tmp_path / "w.npz")
    again_norm = L.Normalization(name="norm")
    again = adv.Sequential([L.Input((3,)), again_norm, L.Dense(1)])
    again.load_weights(tmp_path / "w.npz")
    np.testing.assert_array_equal(again_norm.mean.numpy(), norm.mean.numpy())
    np.testing.assert_array_equal(again.predict(KERAS_DATA), model.predict(KERAS_DATA))   # loaded: adapted


def test_a_sequential_with_the_new_layers_fits_and_leaves_the_statistics_alone():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 255, size=(64, 8))
    y = (x[:, :1] / 255.0 - 0.5) * 2
    norm = L.Normalization()
    norm.adapt(x / 255.0)
    model = adv.Sequential([L.Input((8,)), L.Rescaling(1 / 255.0), norm, L.Dense(8, activation="tanh"),
                            L.GroupNormalization(groups=2), L.UnitNormalization(), L.Dense(1)])
    model.compile(optimizer=adv.optimizers.Adam(0.01), loss="mse")
    mean_before = norm.mean.numpy().copy()
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] * 0.7
    np.testing.assert_array_equal(norm.mean.numpy(), mean_before)     # adapt's statistics, not trained
    assert len(model.trainable_variables) == 6                         # two Dense (kernel, bias), γ and β
