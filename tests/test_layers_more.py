"""Identity, RepeatVector, Permute, GaussianNoise, GaussianDropout, ActivityRegularization, Dot, TimeDistributed.

Values are checked against results computed by hand (Keras 3's definitions), gradients against central finite
differences (``adv.check_grads``) in float64.
"""
from __future__ import annotations

import numpy as np
import pytest

import autodiff_viz as adv

L = adv.layers
RNG = np.random.default_rng(0)


def roundtrip(layer):
    config = layer.get_config()
    again = type(layer).from_config(config).get_config()
    assert again == config
    return config


# ----- Identity, RepeatVector, Permute ------------------------------------------------------------------
def test_identity_returns_the_input_as_a_new_node_with_gradient_one_and_keeps_the_mask():
    x = adv.constant(RNG.normal(size=(2, 3)).astype("float32"))
    layer = L.Identity()
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = adv.sum(y * 3.0)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert y is not x and layer.output is y
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), np.full((2, 3), 3.0))
    masked = L.Masking(0.0)(np.array([[[1.0], [0.0]]]))
    assert L.Identity()(masked)._keras_mask.tolist() == [[True, False]]
    assert roundtrip(L.Identity(name="same"))["name"] == "same"


def test_repeat_vector_values_gradient_and_errors():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    y = L.RepeatVector(3)(x).numpy()
    assert y.shape == (2, 3, 2)
    np.testing.assert_array_equal(y, [[[1, 2]] * 3, [[3, 4]] * 3])
    layer = L.RepeatVector(3, dtype="float64")
    weights = RNG.normal(size=(2, 3, 2))
    report = adv.check_grads(lambda t: adv.sum(layer(t) * weights), (x,))
    assert report.ok, report
    with adv.GradientTape() as tape:            # the gradient sums the copies
        t = adv.constant(x, dtype="float64")
        tape.watch(t)
        loss = adv.sum(layer(t) * weights)
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), weights.sum(axis=1))
    assert roundtrip(L.RepeatVector(4))["n"] == 4
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match=r"RepeatVector: n must be a positive integer, got"):
            L.RepeatVector(bad)
    with pytest.raises(ValueError, match=r"repeat_vector.*\(batch, features\).*\(2, 3, 4\)"):
        L.RepeatVector(2)(np.ones((2, 3, 4)))


def test_permute_values_gradient_and_errors():
    x = RNG.normal(size=(2, 3, 4, 5))
    layer = L.Permute((3, 1, 2), dtype="float64")
    np.testing.assert_array_equal(layer(x).numpy(), np.transpose(x, (0, 3, 1, 2)))
    assert L.Permute((2, 1))(np.ones((4, 10, 64))).shape == (4, 64, 10)
    weights = RNG.normal(size=(2, 5, 3, 4))
    report = adv.check_grads(lambda t: adv.sum(layer(t) * weights), (x,))
    assert report.ok, report
    assert roundtrip(L.Permute([2, 1]))["dims"] == (2, 1)
    for bad in ((1, 1), (0, 1), (1, 3), (2, 3), (2,)):
        with pytest.raises(ValueError, match=r"Permute: dims=.* is not a permutation of 1 … \d+"):
            L.Permute(bad)
    for bad in (2, "21", (1.0, 2.0), (True, 2)):
        with pytest.raises(TypeError, match=r"Permute: dims must be a tuple of ints"):
            L.Permute(bad)
    with pytest.raises(ValueError, match=r"permute.*needs inputs with 3 axes.*\(2, 3\)"):
        L.Permute((2, 1))(np.ones((2, 3)))


# ----- GaussianNoise, GaussianDropout ------------------------------------------------------------------
@pytest.mark.parametrize("cls, arg, mean, std, combine", [
    (L.GaussianNoise, 0.3, 0.0, 0.3, np.add),
    (L.GaussianDropout, 0.2, 1.0, np.sqrt(0.2 / 0.8), np.multiply),
])
def test_noise_layers_only_while_training_with_keras_distribution_and_repeatable_seed(cls, arg, mean, std, combine):
    x = RNG.normal(size=(3, 4))
    layer = cls(arg, seed=7)
    np.testing.assert_array_equal(layer(x).numpy(), x.astype("float32"))            # not training
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x.astype("float32"))
    noise = np.random.default_rng(7).normal(mean, std, size=(3, 4)).astype("float32")
    first = layer(x, training=True).numpy()
    np.testing.assert_allclose(first, combine(x.astype("float32"), noise), rtol=1e-6)
    second = layer(x, training=True).numpy()
    assert not np.allclose(first, second)                       # fresh noise on each call ...
    again = cls(arg, seed=7)
    np.testing.assert_array_equal(again(x, training=True).numpy(), first)       # ... the same sequence per seed
    np.testing.assert_array_equal(again(x, training=True).numpy(), second)
    big = cls(arg, seed=1)(np.ones((200, 200)), training=True).numpy()
    assert abs(big.mean() - (1.0 + mean if cls is L.GaussianNoise else 1.0)) < 0.01
    assert abs(big.std() - std) < 0.01
    assert cls(0.0)(x, training=True).numpy().tolist() == x.astype("float32").tolist()
    masked = L.Masking(0.0)(np.array([[[1.0], [0.0]]]))
    assert cls(arg)(masked, training=True)._keras_mask.tolist() == [[True, False]]


@pytest.mark.parametrize("cls", [L.GaussianNoise, L.GaussianDropout])
def test_noise_layers_gradient_is_one_or_the_mask(cls):
    x = adv.constant(RNG.normal(size=(2, 3)))
    layer = cls(0.2, seed=3)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = adv.sum(y)
    grad = tape.gradient(loss, x).numpy()
    if cls is L.GaussianNoise:
        np.testing.assert_array_equal(grad, np.ones((2, 3)))
    else:
        np.testing.assert_allclose(grad, y.numpy() / x.numpy(), rtol=1e-5)
        assert not np.allclose(grad, 1.0)


def test_noise_layers_config_and_errors():
    config = roundtrip(L.GaussianNoise(0.1, seed=3, name="noise"))
    assert (config["stddev"], config["seed"], config["name"]) == (0.1, 3, "noise")
    config = roundtrip(L.GaussianDropout(0.4, name="gd"))
    assert (config["rate"], config["seed"]) == (0.4, None)
    for bad in (-0.1, 1.5, "0.1", None, True):
        with pytest.raises(ValueError, match=r"GaussianNoise: stddev must be a number in \[0, 1\]"):
            L.GaussianNoise(bad)
    for bad in (-0.1, 1.0, 2, "0.5"):
        with pytest.raises(ValueError, match=r"GaussianDropout: rate must be a number in \[0, 1\)"):
            L.GaussianDropout(bad)
    for cls in (L.GaussianNoise, L.GaussianDropout):
        with pytest.raises(TypeError, match=rf"{cls.__name__}: seed must be an int or None, got 1.5"):
            cls(0.1, seed=1.5)


def test_noise_layers_are_active_in_fit_and_not_in_predict():
    adv.layers.set_random_seed(0)
    model = adv.Sequential([L.Input((3,)), L.GaussianNoise(1.0, seed=0)])
    x = np.ones((4, 3))
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    model.compile(optimizer=adv.optimizers.SGD(0.1), loss="mse")
    history = model.fit(x, x, epochs=1, batch_size=4, verbose=0)
    assert history.history["loss"][0] > 0.1       # the noise reached the loss


# ----- ActivityRegularization -------------------------------------------------------------------------
def test_activity_regularization_adds_keras_penalty_and_returns_input():
    x = np.array([[1.0, -2.0], [0.5, 0.0]])
    layer = L.ActivityRegularization(l1=0.1, l2=0.01)
    y = layer(x)
    np.testing.assert_array_equal(y.numpy(), x.astype("float32"))
    [loss] = layer.losses
    np.testing.assert_allclose(float(loss), 0.1 * 3.5 + 0.01 * 5.25, rtol=1e-6)
    layer(x)                                    # a new call replaces the losses
    assert len(layer.losses) == 1
    zero = L.ActivityRegularization()
    zero(x)
    assert [float(v) for v in zero.losses] == [0.0]
    f64 = L.ActivityRegularization(l1=0.3, l2=0.7, dtype="float64")

    def penalty(t):
        f64(t)
        return f64.losses[0]
    report = adv.check_grads(penalty, (np.array([[1.0, -2.0, 0.5]]),))
    assert report.ok, report
    config = roundtrip(L.ActivityRegularization(l1=0.1, name="act"))
    assert (config["l1"], config["l2"]) == (0.1, 0.0)
    for kwargs in ({"l1": -1.0}, {"l2": "0.1"}, {"l1": None}, {"l2": float("nan")}):
        with pytest.raises(ValueError, match=r"ActivityRegularization: l[12] must be a number ≥ 0"):
            L.ActivityRegularization(**kwargs)


def test_activity_regularization_in_model_losses_and_in_fit_loss():
    model = adv.Sequential([L.Input((2,)), L.Dense(1, kernel_initializer="ones", use_bias=False),
                            L.ActivityRegularization(l2=0.5)])
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    target = np.zeros((2, 1))
    out = model(x).numpy()                      # [[3], [2]]
    np.testing.assert_array_equal(out, [[3.0], [2.0]])
    assert [float(v) for v in model.losses] == [0.5 * (9 + 4)]
    model.compile(optimizer=adv.optimizers.SGD(0.0), loss="mse")
    history = model.fit(x, target, epochs=1, batch_size=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"][0], (9 + 4) / 2 + 0.5 * 13, rtol=1e-6)
    plain = adv.Sequential([L.Input((2,)), L.Dense(1, kernel_initializer="ones", use_bias=False)])
    plain.compile(optimizer=adv.optimizers.SGD(0.0), loss="mse")
    np.testing.assert_allclose(plain.fit(x, target, epochs=1, batch_size=2, verbose=0).history["loss"][0], 6.5,
                               rtol=1e-6)


# ----- Dot --------------------------------------------------------------------------------------------
def test_dot_2d_3d_values_as_keras_batch_dot():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_array_equal(L.Dot(axes=1)([a, b]).numpy(), [[17.0], [53.0]])
    np.testing.assert_array_equal(L.Dot(axes=-1)([a, b]).numpy(), [[17.0], [53.0]])
    x, y = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 3, 5))
    np.testing.assert_allclose(L.Dot(axes=1)([x, y]).numpy(), np.einsum("bnm,bnk->bmk", x, y), rtol=1e-5)
    x2 = np.arange(10.0).reshape(1, 5, 2)             # Keras' docstring example: axes=(1, 2) -> (1, 2, 2)
    y2 = np.arange(10.0, 20.0).reshape(1, 2, 5)
    np.testing.assert_array_equal(L.Dot(axes=(1, 2))([x2, y2]).numpy(), [[[260.0, 360.0], [320.0, 445.0]]])
    v = RNG.normal(size=(2, 4))                        # a 3-D and a 2-D input (attention scores)
    np.testing.assert_allclose(L.Dot(axes=(2, 1))([x, v]).numpy(), np.einsum("btf,bf->bt", x, v), rtol=1e-5)
    np.testing.assert_allclose(L.Dot(axes=(1, 2))([v, x]).numpy(), np.einsum("bf,btf->bt", v, x), rtol=1e-5)


def test_dot_normalize_is_cosine_and_zero_safe():
    a, b = np.array([[3.0, 4.0], [0.0, 0.0]]), np.array([[4.0, 3.0], [1.0, 0.0]])
    np.testing.assert_allclose(L.Dot(axes=1, normalize=True)([a, b]).numpy(), [[24 / 25], [0.0]], rtol=1e-6)
    x = adv.constant(np.zeros((1, 2)))
    with adv.GradientTape() as tape:
        tape.watch(x)
        out = L.Dot(axes=1, normalize=True)([x, b[:1]])
    assert np.isfinite(tape.gradient(out, x).numpy()).all()


@pytest.mark.parametrize("axes, shapes, normalize", [(1, [(2, 3), (2, 3)], True), (1, [(2, 3, 2), (2, 3, 4)], False),
                                                     ((2, 1), [(2, 3, 4), (2, 4)], True),
                                                     (-1, [(2, 2, 3), (2, 4, 3)], True)])
def test_dot_gradients_match_finite_differences(axes, shapes, normalize):
    layer = L.Dot(axes=axes, normalize=normalize, dtype="float64")
    args = [RNG.normal(size=s) for s in shapes]
    out_shape = layer(args).shape
    w = RNG.normal(size=out_shape)
    report = adv.check_grads(lambda p, q: adv.sum(layer([p, q]) * w), args)
    assert report.ok, report


def test_dot_config_mask_and_errors():
    config = roundtrip(L.Dot(axes=(1, 2), normalize=True, name="cos"))
    assert (config["axes"], config["normalize"]) == ((1, 2), True)
    assert roundtrip(L.Dot(axes=-1))["axes"] == -1
    masked = L.Masking(0.0)(np.array([[[1.0, 2.0], [0.0, 0.0]]]))
    out = L.Dot(axes=2)([masked, masked])
    assert getattr(out, "_keras_mask", None) is None
    with pytest.raises(ValueError, match=r"Dot: axes=0 names axis 0, the batch axis"):
        L.Dot(axes=0)
    with pytest.raises(ValueError, match=r"Dot: axes=\(1, 0\) names axis 0"):
        L.Dot(axes=(1, 0))
    with pytest.raises(ValueError, match=r"Dot: axes must be an int or a tuple of 2 ints.*\(1, 2, 3\)"):
        L.Dot(axes=(1, 2, 3))
    with pytest.raises(TypeError, match=r"Dot: axes must be an int or a tuple of 2 ints, got 'x'"):
        L.Dot(axes="x")
    with pytest.raises(TypeError, match=r"Dot: normalize must be True or False"):
        L.Dot(axes=1, normalize="yes")
    with pytest.raises(ValueError, match=r"\(Dot\): axis 1 of the first input \(3 entries\) and axis 1 of the "
                                         r"second \(4 entries\)"):
        L.Dot(axes=1)([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match=r"\(Dot\): needs exactly 2 inputs, got 3"):
        L.Dot(axes=1)([np.ones((2, 3))] * 3)
    with pytest.raises(ValueError, match=r"\(Dot\): axes=3 does not fit the input shapes"):
        L.Dot(axes=3)([np.ones((2, 3)), np.ones((2, 3))])


# ----- TimeDistributed --------------------------------------------------------------------------------
def test_time_distributed_dense_equals_dense_per_step_and_shares_weights():
    dense = L.Dense(4, activation="tanh", bias_initializer="glorot_uniform")
    td = L.TimeDistributed(dense)
    x = RNG.normal(size=(2, 5, 3))
    y = td(x).numpy()
    assert y.shape == (2, 5, 4)
    for t in range(5):
        np.testing.assert_allclose(y[:, t], dense(x[:, t]).numpy(), rtol=1e-6)
    assert td.layer is dense
    assert [id(v) for v in td.trainable_variables] == [id(dense.kernel), id(dense.bias)]
    assert dense.kernel.shape == (3, 4) and td.count_params() == 16


def test_time_distributed_gradients_sum_over_steps_and_match_finite_differences():
    dense = L.Dense(2, activation="tanh", dtype="float64")
    td = L.TimeDistributed(dense, dtype="float64")
    x = RNG.normal(size=(2, 3, 4))
    td(x)
    report = adv.check_grads(lambda t: adv.sum(td(t) ** 2), (x,))
    assert report.ok, report
    with adv.GradientTape() as tape:
        loss = adv.sum(td(x) ** 2)
    g_td = tape.gradient(loss, dense.kernel).numpy()
    with adv.GradientTape() as tape:
        loss = sum(adv.sum(dense(x[:, t]) ** 2) for t in range(3))
    np.testing.assert_allclose(g_td, tape.gradient(loss, dense.kernel).numpy(), rtol=1e-10)


def test_time_distributed_in_a_model_trains_builds_and_passes_training_on():
    model = adv.Sequential([L.Input((4, 6)), L.TimeDistributed(L.Dense(3)), L.TimeDistributed(L.Dropout(0.5, seed=1))])
    assert model.layers[0].layer.kernel.shape == (6, 3)
    x = RNG.normal(size=(2, 4, 6))
    np.testing.assert_array_equal(model.predict(x, verbose=0), model(x).numpy())
    trained = model(x, training=True).numpy()
    assert (trained == 0).any() and not (model(x).numpy() == 0).any()
    conv = L.TimeDistributed(L.Conv2D(2, 3))       # Keras' video example, smaller
    assert conv(np.zeros((2, 4, 5, 5, 3))).shape == (2, 4, 3, 3, 2)


def test_time_distributed_masks_pass_through_and_fold_into_an_inner_layer_that_takes_them():
    x = RNG.normal(size=(2, 3, 4))
    x[0, 2] = 0.0
    masked = L.Masking(0.0)(x)
    out = L.TimeDistributed(L.Dense(2))(masked)
    np.testing.assert_array_equal(out._keras_mask, [[True, True, False], [True, True, True]])
    seqs = RNG.normal(size=(2, 3, 5, 2))             # (batch, time, steps, features): an LSTM per time slice
    seqs[1, 0, 3:] = 0.0
    lstm = L.LSTM(3)
    td = L.TimeDistributed(lstm)
    got = td(L.Masking(0.0)(seqs)).numpy()
    for t in range(3):
        np.testing.assert_allclose(got[:, t], lstm(seqs[:, t], mask=np.any(seqs[:, t] != 0, axis=-1)).numpy(),
                                   rtol=1e-5)
    unmasked = td(seqs).numpy()
    assert not np.allclose(unmasked[1, 0], got[1, 0])
    with pytest.raises(ValueError, match=r"mask must have shape \(2, 3, \.\.\.\)"):
        td(seqs, mask=np.ones((3, 2), dtype=bool))


def test_time_distributed_config_round_trip_nests_the_layer_like_bidirectional():
    td = L.TimeDistributed(L.Dense(3, activation="relu", name="inner"), name="td")
    config = roundtrip(td)
    assert config["name"] == "td"
    assert config["layer"]["class_name"] == "Dense" and config["layer"]["config"]["name"] == "inner"
    assert config["layer"]["config"]["activation"] == "relu"
    rebuilt = L.TimeDistributed.from_config(config)
    assert isinstance(rebuilt.layer, L.Dense) and rebuilt.layer.units == 3


def test_time_distributed_errors():
    with pytest.raises(ValueError, match=r"TimeDistributed: layer must be a layer instance.*got 3"):
        L.TimeDistributed(3)
    with pytest.raises(ValueError, match=r"TimeDistributed: layer must be a layer instance"):
        L.TimeDistributed(L.Dense)
    with pytest.raises(ValueError, match=r"\(TimeDistributed\): needs one input of shape \(batch, time, \.\.\.\).*"
                                         r"\(2, 3\)"):
        L.TimeDistributed(L.Dense(2))(np.ones((2, 3)))
