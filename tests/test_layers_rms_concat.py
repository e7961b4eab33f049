"""RMSNormalization, LayerNormalization(rms_scaling=True) and Attention(score_mode="concat"), as Keras 3.

Values against Keras' formulas written out in numpy (and ``torch.nn.functional.rms_norm`` when torch is
there), Keras' weight names, shapes and initial values, gradients against central finite differences
(``adv.check_grads``), masks, dropout, configs, saving and errors.

Keras' formulas (keras/src/ops/nn.py and keras/src/layers/attention/attention.py):

* ``RMSNormalization``:             ``x · rsqrt(mean(x², axis) + ε) · scale``
* ``LayerNormalization(rms_scaling=True)``: ``x · rsqrt(var(x, axis) + ε) · γ`` (the variance, not the
  mean square: Keras 3 deprecates the option for that reason); ``γ`` only, no ``β``.
* ``Attention(score_mode="concat")``: ``w · Σ_f tanh(s · (q[:, :, None] + k[:, None]))``, ``s`` the scalar
  ``scale`` (use_scale=True), ``w`` the scalar ``concat_score_weight``, both initialised to ones.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from attention_reference import masked_attention
from fit_helpers import fresh_session  # noqa: F401  (autouse: names and weights start afresh in each test)

import autodiff_viz as adv
from autodiff_viz import layers as L

RNG = np.random.default_rng(0)
DEPRECATED = "LayerNormalization: rms_scaling=True is deprecated"


def rms_norm_reference(x, axes, epsilon, scale):
    """Keras 3's rms_normalization in numpy; ``scale`` has the shape of ``axes`` (put back in place)."""
    axes = tuple(sorted(a % x.ndim for a in axes))
    shape = [1] * x.ndim
    for a in axes:
        shape[a] = x.shape[a]
    return x / np.sqrt(np.mean(x ** 2, axis=axes, keepdims=True) + epsilon) * scale.reshape(shape)


def rms_scaling_reference(x, axes, epsilon, gamma):
    """Keras 3's layer_normalization(rms_scaling=True) in numpy: x not centred, divided by √(var + ε)."""
    axes = tuple(sorted(a % x.ndim for a in axes))
    shape = [1] * x.ndim
    for a in axes:
        shape[a] = x.shape[a]
    return x / np.sqrt(np.var(x, axis=axes, keepdims=True) + epsilon) * gamma.reshape(shape)


def rms_scaling_layer(**kwargs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=DEPRECATED)
        return L.LayerNormalization(rms_scaling=True, **kwargs)


def call_with(layer, weight):
    """``layer.call`` as a function of the input and of the value of its weight named ``weight`` (so that
    ``check_grads`` perturbs the weight too)."""
    def f(x, value):
        old = getattr(layer, weight)
        setattr(layer, weight, value)
        try:
            return layer.call(x)
        finally:
            setattr(layer, weight, old)
    return f


def concat_reference(q, k, v, w, scale=1.0, v_mask=None, q_mask=None, causal=False):
    """Keras 3's Attention(score_mode="concat"): scores ``w · Σ_f tanh(scale · (q[t, f] + k[s, f]))``."""
    scores = w * np.tanh(scale * (q[:, :, None, :] + k[:, None, :, :])).sum(-1)
    return masked_attention(scores, v, v_mask, q_mask, causal)


# ----- RMSNormalization ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis, shape", [(-1, (3, 5)), (-1, (2, 4, 6)), ([1, 2], (2, 3, 4)), (1, (2, 3, 4)),
                                         ([-1, 1], (2, 3, 2, 4))])
def test_rms_normalization_matches_keras_formula(axis, shape):
    x = RNG.normal(loc=0.7, size=shape)
    layer = L.RMSNormalization(axis=axis, epsilon=1e-3, dtype="float64")
    layer.build(x.shape)
    axes = [axis] if isinstance(axis, int) else axis
    want_shape = tuple(shape[a] for a in sorted(a % len(shape) for a in axes))
    assert layer.scale.shape == want_shape
    np.testing.assert_array_equal(layer.scale.numpy(), np.ones(want_shape))       # "ones", as Keras
    layer.scale.assign(RNG.uniform(0.5, 1.5, size=want_shape))
    y = layer(x)
    assert y.shape == x.shape and y.dtype == np.float64
    np.testing.assert_allclose(y.numpy(), rms_norm_reference(x, axes, 1e-3, layer.scale.numpy()), rtol=1e-12)


def test_rms_normalization_gives_mean_square_one_and_keeps_the_default_epsilon():
    x = RNG.normal(loc=2.0, size=(4, 8))
    layer = L.RMSNormalization(dtype="float64")
    assert (layer.axis, layer.epsilon) == (-1, 1e-6)
    y = layer(x).numpy()
    np.testing.assert_allclose(np.mean(y ** 2, axis=-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(y, rms_norm_reference(x, [-1], 1e-6, np.ones(8)), rtol=1e-12)
    np.testing.assert_array_equal(L.RMSNormalization()(np.zeros((1, 3))).numpy(), 0.0)     # ε keeps 0 at 0


@pytest.mark.parametrize("axis, shape", [(-1, (3, 5)), ([1, 2], (2, 3, 4)), ([-2, -1], (2, 2, 3, 4))])
def test_rms_normalization_matches_torch_rms_norm(axis, shape):
    torch = pytest.importorskip("torch")
    if not hasattr(torch.nn.functional, "rms_norm"):
        pytest.skip("torch.nn.functional.rms_norm needs torch >= 2.4")
    x = RNG.normal(size=shape)
    layer = L.RMSNormalization(axis=axis, epsilon=1e-5, dtype="float64")
    layer.build(x.shape)
    layer.scale.assign(RNG.normal(size=layer.scale.shape))
    want = torch.nn.functional.rms_norm(torch.tensor(x), tuple(layer.scale.shape),
                                        torch.tensor(layer.scale.numpy()), 1e-5)
    np.testing.assert_allclose(layer(x).numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


def test_rms_normalization_weights_are_keras_ones():
    layer = L.RMSNormalization(name="rms")
    layer(np.ones((2, 3, 4), dtype="float32"))
    assert [(w.path, w.shape, w.trainable) for w in layer.weights] == [("rms/scale", (4,), True)]
    assert layer.trainable_variables == [layer.scale] and layer.non_trainable_variables == []


def test_rms_normalization_gradients_match_finite_differences():
    x = RNG.normal(loc=0.3, size=(2, 3, 4))
    layer = L.RMSNormalization(axis=[1, 2], epsilon=1e-3, dtype="float64")
    layer.build(x.shape)

    report = adv.check_grads(call_with(layer, "scale"), (x, RNG.uniform(0.5, 1.5, size=(3, 4))))
    assert report.ok, report
    report = adv.check_grads(lambda x: L.RMSNormalization(axis=1, dtype="float64")(x), (x,), order=2,
                             modes=("reverse",))
    assert report.ok, report


def test_rms_normalization_is_package_ops_on_the_graph_and_trains_its_scale():
    x = adv.constant(RNG.normal(size=(3, 4)))
    layer = L.RMSNormalization(dtype="float64")
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.sum(layer(x) * np.arange(4.0))
    ops = [n.rule.name for n in tape.nodes]
    assert {"square", "mean", "sqrt", "divide", "multiply"} <= set(ops)
    gx, gs = tape.gradient(y, [x, layer.scale])
    assert gx is not None and gs.shape == (4,)
    x_hat = rms_norm_reference(x.numpy(), [-1], 1e-6, np.ones(4))
    np.testing.assert_allclose(gs.numpy(), (x_hat * np.arange(4.0)).sum(axis=0), rtol=1e-10)


def test_rms_normalization_does_not_support_masking_as_keras():
    tokens = np.array([[1, 2, 0], [3, 0, 0]])
    h = L.Embedding(5, 4, mask_zero=True)(tokens)
    with pytest.warns(UserWarning, match=r"RMSNormalization.*does not support masking"):
        out = L.RMSNormalization()(h)
    assert getattr(out, "_keras_mask", None) is None


def test_rms_normalization_config_round_trips():
    layer = L.RMSNormalization(axis=[1, 2], epsilon=1e-4, name="rms", dtype="float64")
    config = layer.get_config()
    assert {k: config[k] for k in ("axis", "epsilon", "name", "dtype")} == \
        {"axis": [1, 2], "epsilon": 1e-4, "name": "rms", "dtype": "float64"}
    again = L.RMSNormalization.from_config(config)
    assert again.get_config() == config
    x = RNG.normal(size=(2, 3, 4))
    layer(x), again(x)
    again.scale.assign(layer.scale.numpy())
    np.testing.assert_array_equal(again(x).numpy(), layer(x).numpy())
    import inspect
    params = set(inspect.signature(L.RMSNormalization.__init__).parameters) - {"self", "kwargs"}
    assert params <= set(config)


def test_rms_normalization_is_exported_next_to_the_other_normalization_layers():
    assert "RMSNormalization" in L.__all__ and "RMSNormalization" in L.normalization.__all__
    assert adv.layers.RMSNormalization is L.normalization.RMSNormalization


@pytest.mark.parametrize("make, error, pattern", [
    (lambda: L.RMSNormalization(epsilon=0), ValueError, r"RMSNormalization: epsilon must be positive, got 0.*"
                                                        r"epsilon=1e-06 \(Keras' default\)"),
    (lambda: L.RMSNormalization(epsilon=-1e-6), ValueError, r"RMSNormalization: epsilon must be positive"),
    (lambda: L.RMSNormalization(epsilon="small"), ValueError, r"RMSNormalization: epsilon must be positive.*small"),
    (lambda: L.RMSNormalization(axis=1.5), TypeError, r"RMSNormalization: axis must be an int.*1.5.*axis=-1"),
    (lambda: L.RMSNormalization(axis=[]), TypeError, r"RMSNormalization: axis must be an int"),
    (lambda: L.LayerNormalization(epsilon=0), ValueError, r"LayerNormalization: epsilon must be positive.*"
                                                          r"epsilon=0.001 \(Keras' default\)"),
])
def test_bad_arguments_are_refused_naming_the_layer_and_the_fix(make, error, pattern):
    with pytest.raises(error, match=pattern):
        make()


def test_bad_inputs_are_refused_naming_the_layer():
    layer = L.RMSNormalization(axis=3, name="rms")
    with pytest.raises(ValueError, match=r"rms \(RMSNormalization\): axis 3 is out of range for inputs with 3 "
                                         r"axes. Pass an axis from -3 to 2"):
        layer(np.ones((2, 3, 4)))
    assert layer.weights == []
    layer = L.RMSNormalization(name="rms2")
    layer(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"rms2 \(RMSNormalization\): built for size \(4,\) along axis"):
        layer(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"rms2 \(RMSNormalization\): built for inputs with 2 axes"):
        layer(np.ones((2, 3, 4)))


def test_rms_normalization_saves_and_loads_in_a_model(tmp_path):
    model = adv.Sequential([L.Input((3, 4)), L.Dense(4), L.RMSNormalization(axis=[1, 2], epsilon=1e-4)])
    model.layers[-1].scale.assign(RNG.uniform(0.5, 1.5, size=(3, 4)))
    model.save(tmp_path / "m.keras")
    loaded = adv.models.load_model(tmp_path / "m.keras")
    rms = loaded.layers[-1]
    assert type(rms) is L.RMSNormalization and (rms.axis, rms.epsilon) == ([1, 2], 1e-4)
    x = RNG.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


# ----- LayerNormalization(rms_scaling=True) -----------------------------------------------------------------
@pytest.mark.parametrize("axis, shape", [(-1, (3, 5)), ([1, 2], (2, 3, 4)), (1, (2, 3, 4))])
def test_rms_scaling_matches_keras_formula(axis, shape):
    x = RNG.normal(loc=0.8, size=shape)
    layer = rms_scaling_layer(axis=axis, epsilon=1e-3, dtype="float64")
    layer.build(x.shape)
    layer.gamma.assign(RNG.uniform(0.5, 1.5, size=layer.gamma.shape))
    axes = [axis] if isinstance(axis, int) else axis
    want = rms_scaling_reference(x, axes, 1e-3, layer.gamma.numpy())
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-12)
    # the variance, not the mean square: x is not centred, so the mean stays
    assert not np.allclose(layer(x).numpy(), rms_norm_reference(x, axes, 1e-3, layer.gamma.numpy()))


def test_rms_scaling_equals_rms_normalization_for_centred_inputs():
    x = RNG.normal(size=(4, 6))
    x -= x.mean(axis=-1, keepdims=True)
    a = rms_scaling_layer(epsilon=1e-6, dtype="float64")(x).numpy()
    b = L.RMSNormalization(epsilon=1e-6, dtype="float64")(x).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("center, scale", [(True, True), (True, False), (False, True), (False, False)])
def test_rms_scaling_has_gamma_and_no_beta_whatever_center_and_scale(center, scale):
    layer = rms_scaling_layer(center=center, scale=scale, name="ln")
    x = RNG.normal(size=(2, 5)).astype("float32")
    y = layer(x)
    assert [(w.path, w.shape) for w in layer.weights] == [("ln/gamma", (5,))]
    assert layer.beta is None
    np.testing.assert_allclose(y.numpy(), rms_scaling_reference(x, [-1], 1e-3, np.ones(5)), rtol=1e-5)
    assert (layer.center, layer.scale) == (center, scale)          # kept, as Keras (ignored by the formula)


def test_rms_scaling_warns_as_keras_deprecates_it_and_plain_layer_norm_does_not():
    with pytest.warns(UserWarning, match=r"rms_scaling=True is deprecated.*RMSNormalization") as record:
        L.LayerNormalization(rms_scaling=True)
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L.LayerNormalization()(np.ones((2, 3)))


def test_rms_scaling_gradients_match_finite_differences():
    x = RNG.normal(loc=0.5, size=(2, 3, 4))
    layer = rms_scaling_layer(axis=[1, 2], dtype="float64")
    layer.build(x.shape)

    report = adv.check_grads(call_with(layer, "gamma"), (x, RNG.uniform(0.5, 1.5, size=(3, 4))))
    assert report.ok, report


def test_rms_scaling_config_round_trips_and_saves(tmp_path):
    layer = rms_scaling_layer(axis=[1, 2], epsilon=1e-5, gamma_initializer="normal", name="ln")
    config = layer.get_config()
    assert config["rms_scaling"] is True and config["epsilon"] == 1e-5
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=DEPRECATED)
        assert L.LayerNormalization.from_config(config).get_config() == config
        model = adv.Sequential([L.Input((3, 4)), layer])
        layer.gamma.assign(RNG.uniform(0.5, 1.5, size=(3, 4)))
        model.save(tmp_path / "m.keras")
        loaded = adv.models.load_model(tmp_path / "m.keras")
    assert loaded.layers[0].rms_scaling is True
    assert [(w.name, w.path.split("/", 1)[-1]) for w in loaded.weights] == [("gamma", "ln/gamma")]
    x = RNG.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


# ----- Attention(score_mode="concat") ---------------------------------------------------------------------
@pytest.mark.parametrize("use_scale", [False, True])
def test_concat_attention_matches_keras_formula(use_scale):
    q, v, k = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 6)), RNG.normal(size=(2, 5, 4))
    att = L.Attention(use_scale=use_scale, score_mode="concat", dtype="float64", name="att")
    att.build([q.shape, v.shape, k.shape])
    names = ["att/scale", "att/concat_score_weight"] if use_scale else ["att/concat_score_weight"]
    assert [(w.path, w.shape, w.numpy().item()) for w in att.weights] == [(n, (), 1.0) for n in names]
    att.concat_score_weight.assign(0.7)
    scale = 1.0
    if use_scale:
        att.scale.assign(1.3)
        scale = 1.3
    out, w = att([q, v, k], return_attention_scores=True)
    want_out, want_w = concat_reference(q, k, v, 0.7, scale)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(att([q, v, k]).numpy(), want_out, rtol=1e-10, atol=1e-12)
    # the key defaults to the value
    out2 = L.Attention(score_mode="concat", dtype="float64")([q, k])
    np.testing.assert_allclose(out2.numpy(), concat_reference(q, k, k, 1.0)[0], rtol=1e-10)


def test_concat_scores_differ_from_dot_and_from_additive_attention():
    q, v = RNG.normal(size=(1, 3, 4)), RNG.normal(size=(1, 4, 4))
    concat = L.Attention(score_mode="concat", dtype="float64")([q, v]).numpy()
    dot = L.Attention(dtype="float64")([q, v]).numpy()
    assert not np.allclose(concat, dot)
    add = L.AdditiveAttention(use_scale=False, dtype="float64")([q, v]).numpy()
    np.testing.assert_allclose(concat, add, rtol=1e-12)       # w = 1, no scale: the same Σ tanh(q + k)


def test_concat_attention_with_masks_and_causal_mask():
    q, v = RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 4, 3))
    v_mask = np.array([[True, True, False, True], [False, True, True, False]])
    q_mask = np.array([[True, False, True, True], [True, True, True, False]])
    att = L.Attention(use_scale=True, score_mode="concat", dtype="float64")
    att([q, v])
    att.scale.assign(0.6)
    att.concat_score_weight.assign(1.8)
    out, w = att([q, v], mask=[q_mask, v_mask], return_attention_scores=True)
    want_out, want_w = concat_reference(q, v, v, 1.8, 0.6, v_mask, q_mask)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-14)
    assert np.all(w.numpy()[~np.broadcast_to(v_mask[:, None, :], w.shape)] == 0.0)
    assert np.all(out.numpy()[~q_mask] == 0.0)
    out, w = att([q, v], mask=[None, v_mask], use_causal_mask=True, return_attention_scores=True)
    want_out, want_w = concat_reference(q, v, v, 1.8, 0.6, v_mask, causal=True)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-14)
    assert np.all(w.numpy()[1, 0] == 0.0)            # batch 1, step 0: its only visible key is masked


def test_concat_attention_reads_carried_masks_and_passes_on_the_query_mask():
    tokens_q, tokens_v = np.array([[1, 2, 0], [3, 0, 0]]), np.array([[4, 5, 6, 0], [7, 8, 0, 0]])
    emb = L.Embedding(10, 3, mask_zero=True, dtype="float64")
    att = L.Attention(score_mode="concat", dtype="float64")
    eq, ev = emb(tokens_q), emb(tokens_v)
    out, w = att([eq, ev], return_attention_scores=True)
    want_out, want_w = concat_reference(eq.numpy(), ev.numpy(), ev.numpy(), 1.0, 1.0, tokens_v != 0, tokens_q != 0)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-14)
    np.testing.assert_array_equal(np.asarray(out._keras_mask), tokens_q != 0)


def test_concat_attention_refuses_masks_of_the_wrong_shape():
    att = L.Attention(score_mode="concat", name="cat")
    with pytest.raises(ValueError, match=r"cat: the value mask should have shape \(1, 4\)"):
        att([np.ones((1, 2, 3)), np.ones((1, 4, 3))], mask=[None, np.ones((1, 3), bool)])
    with pytest.raises(ValueError, match=r"cat: query and key must have the same feature size"):
        att([np.ones((1, 2, 3)), np.ones((1, 4, 5))])


def test_concat_attention_gradients_match_finite_differences():
    q, v, k = RNG.normal(size=(2, 3, 2)), RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 4, 2))
    v_mask = np.array([[True, True, False, True], [True, False, True, True]])
    q_mask = np.array([[True, True, False], [True, True, True]])
    att = L.Attention(use_scale=True, score_mode="concat", dtype="float64")
    att([q, v, k])

    def f(q, v, k, scale, weight):
        old = att.scale, att.concat_score_weight
        att.scale, att.concat_score_weight = scale, weight
        try:
            return att.call([q, v, k], mask=[q_mask, v_mask], use_causal_mask=True)
        finally:
            att.scale, att.concat_score_weight = old

    report = adv.check_grads(f, (q, v, k, np.array(0.8), np.array(1.4)), modes=("reverse",))
    assert report.ok, report


def test_concat_attention_trains_both_scalars():
    q, v = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    att = L.Attention(use_scale=True, score_mode="concat", dtype="float64")
    with adv.GradientTape() as tape:
        out = att([q, v])
        loss = adv.sum(out * out)
    ops = {n.rule.name for n in tape.nodes}
    assert {"tanh", "sum", "softmax", "matmul"} <= ops and "attention" not in ops
    g_scale, g_weight = tape.gradient(loss, [att.scale, att.concat_score_weight])
    assert g_scale.shape == () and g_weight.shape == ()
    assert g_scale.numpy() != 0.0 and g_weight.numpy() != 0.0


def test_concat_attention_dropout_only_in_training():
    q, v = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 6, 4))
    att = L.Attention(score_mode="concat", dropout=0.5, seed=3, dtype="float64")
    plain, w = att([q, v], return_attention_scores=True)
    np.testing.assert_allclose(att([q, v], training=False).numpy(), plain.numpy())
    dropped, w_train = att([q, v], training=True, return_attention_scores=True)
    assert not np.allclose(dropped.numpy(), plain.numpy())
    np.testing.assert_allclose(w.numpy().sum(-1), 1.0)
    # the weights returned are those the values were averaged with: after dropout, as Keras' Attention
    np.testing.assert_allclose(dropped.numpy(), w_train.numpy() @ v, rtol=1e-12)
    kept = w_train.numpy() != 0
    assert not kept.all() and kept.any()
    np.testing.assert_allclose(w_train.numpy()[kept], 2.0 * w.numpy()[kept], rtol=1e-12)    # kept ones: ÷ (1 − 0.5)


def test_concat_attention_config_round_trips():
    att = L.Attention(use_scale=True, score_mode="concat", dropout=0.2, seed=4, name="att")
    config = att.get_config()
    assert {k: config[k] for k in ("use_scale", "score_mode", "dropout", "seed")} == \
        {"use_scale": True, "score_mode": "concat", "dropout": 0.2, "seed": 4}
    again = L.Attention.from_config(config)
    assert again.get_config() == config
    again([np.ones((1, 2, 3)), np.ones((1, 4, 3))])
    assert [w.path for w in again.weights] == ["att/scale", "att/concat_score_weight"]


def test_concat_attention_saves_and_loads_in_a_model(tmp_path):
    q, v = L.Input((5, 4)), L.Input((6, 4))
    model = adv.Model([q, v], L.Attention(use_scale=True, score_mode="concat", name="att")([q, v]))
    att = model.get_layer("att")
    att.scale.assign(0.5)
    att.concat_score_weight.assign(2.0)
    model.save(tmp_path / "m.keras")
    loaded = adv.models.load_model(tmp_path / "m.keras")
    assert loaded.get_layer("att").score_mode == "concat"
    assert [w.path for w in loaded.weights] == ["att/scale", "att/concat_score_weight"]
    x = [RNG.normal(size=(2, 5, 4)), RNG.normal(size=(2, 6, 4))]
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


def test_a_bad_score_mode_is_refused_naming_the_layer_and_the_modes():
    with pytest.raises(ValueError, match=r"att \(Attention\): score_mode must be 'dot' .* or 'concat'.*got 'add'"):
        L.Attention(score_mode="add", name="att")
