"""DepthwiseConv1D/2D, SeparableConv1D/2D and AdditiveAttention (Keras 3 names, defaults, weights).

Values are checked against numpy loops written from the definitions, gradients against central
finite differences, DepthwiseConv2D against PyTorch's grouped convolution when torch is importable.
"""
import numpy as np
import pytest
from attention_reference import masked_attention
from conv_reference import same_pads

import autodiff_viz as adv

L = adv.layers


@pytest.fixture(autouse=True)
def _fresh_names():
    L.clear_session()
    yield


def _naive_depthwise2d(x, w, strides, pads, dilation):
    """y[n, i, j, c·m + q] = Σ_{a, b} x_pad[n, i·sh + a·dh, j·sw + b·dw, c] · w[a, b, c, q], one loop per index."""
    xp = np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),))
    kh, kw, C, M = w.shape
    oh = (xp.shape[1] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    y = np.zeros((x.shape[0], oh, ow, C * M))
    for n in range(x.shape[0]):
        for i in range(oh):
            for j in range(ow):
                for c in range(C):
                    for q in range(M):
                        acc = 0.0
                        for a in range(kh):
                            for b in range(kw):
                                acc += xp[n, i * strides[0] + a * dilation[0], j * strides[1] + b * dilation[1], c] \
                                    * w[a, b, c, q]
                        y[n, i, j, c * M + q] = acc
    return y


def _naive_depthwise1d(x, w, stride, pads, dilation):
    xp = np.pad(x, ((0, 0), pads, (0, 0)))
    k, C, M = w.shape
    out = (xp.shape[1] - (k - 1) * dilation - 1) // stride + 1
    y = np.zeros((x.shape[0], out, C * M))
    for n in range(x.shape[0]):
        for t in range(out):
            for c in range(C):
                for q in range(M):
                    y[n, t, c * M + q] = sum(xp[n, t * stride + a * dilation, c] * w[a, c, q] for a in range(k))
    return y


# ----- DepthwiseConv -----------------------------------------------------------------------------------
@pytest.mark.parametrize("size,kernel,strides,padding,dilation,mult", [
    (6, 3, 1, "valid", 1, 1), (7, 3, 2, "same", 1, 2), (8, (2, 3), (1, 2), "same", 1, 3), (9, 3, 1, "same", 2, 2),
    (7, 2, 3, "valid", 1, 1)])
def test_depthwise_conv2d_matches_the_definition(size, kernel, strides, padding, dilation, mult):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, size, size + 1, 3))
    layer = L.DepthwiseConv2D(kernel, strides=strides, padding=padding, depth_multiplier=mult,
                              dilation_rate=dilation, bias_initializer="normal", dtype="float64")
    y = layer(x).numpy()
    ks = (kernel, kernel) if isinstance(kernel, int) else kernel
    st = (strides, strides) if isinstance(strides, int) else strides
    dl = (dilation, dilation)
    pads = [same_pads(n, k, s, d) if padding == "same" else (0, 0) for n, k, s, d in zip((size, size + 1), ks, st, dl)]
    w = layer.kernel.numpy()
    assert w.shape == ks + (3, mult)
    expected = _naive_depthwise2d(x, w, st, pads, dl) + layer.bias.numpy()
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)


def test_depthwise_conv2d_with_depth_multiplier_2_has_keras_shapes_and_channel_order():
    layer = L.DepthwiseConv2D(3, depth_multiplier=2, dtype="float64")
    x = np.zeros((1, 5, 5, 3))
    x[0, 2, 2, 1] = 1.0                         # one impulse in channel 1
    y = layer(x).numpy()
    assert y.shape == (1, 3, 3, 6)
    assert layer.kernel.shape == (3, 3, 3, 2) and layer.bias.shape == (6,)
    assert [v.name.split("/")[-1] for v in layer.weights] == ["kernel", "bias"]
    assert layer.depthwise_kernel is layer.kernel
    w = layer.kernel.numpy()
    # output channels c·2 + q come from input channel c: only channels 2 and 3 see the impulse
    np.testing.assert_array_equal(y[0, :, :, [0, 1, 4, 5]], 0.0)
    for q in range(2):
        np.testing.assert_allclose(y[0, :, :, 2 + q], w[::-1, ::-1, 1, q], rtol=1e-12)


@pytest.mark.parametrize("strides,padding,dilation", [(1, "valid", 1), (2, "same", 1), (1, "same", 3)])
def test_depthwise_conv1d_matches_the_definition(strides, padding, dilation):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 11, 4))
    layer = L.DepthwiseConv1D(3, strides=strides, padding=padding, depth_multiplier=2, dilation_rate=dilation,
                              activation="tanh", bias_initializer="normal", dtype="float64")
    y = layer(x).numpy()
    pads = same_pads(11, 3, strides, dilation) if padding == "same" else (0, 0)
    expected = np.tanh(_naive_depthwise1d(x, layer.kernel.numpy(), strides, pads, dilation) + layer.bias.numpy())
    assert layer.kernel.shape == (3, 4, 2)
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)


def test_a_depthwise_convolution_is_one_conv_op_on_the_graph():
    layer = L.DepthwiseConv2D(3, depth_multiplier=2, use_bias=False, dtype="float64")
    x = adv.constant(np.random.default_rng(0).normal(size=(1, 5, 5, 3)))
    layer(x)
    with adv.GradientTape() as tape:
        y = layer(x)
    ops = [n.op for n in tape.trace(y).nodes if getattr(n, "op", None)]
    assert ops.count("conv") == 1, ops
    sep = L.SeparableConv2D(4, 3, use_bias=False, dtype="float64")
    sep(x)
    with adv.GradientTape() as tape:
        y = sep(x)
    ops = [n.op for n in tape.trace(y).nodes if getattr(n, "op", None)]
    assert ops.count("conv") == 2, ops


# ----- SeparableConv -----------------------------------------------------------------------------------
@pytest.mark.parametrize("strides,padding,mult", [(1, "valid", 1), (2, "same", 2), ((1, 2), "same", 3)])
def test_separable_conv2d_is_a_depthwise_then_a_pointwise_conv2d_with_the_same_weights(strides, padding, mult):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 7, 8, 3))
    sep = L.SeparableConv2D(5, (3, 2), strides=strides, padding=padding, depth_multiplier=mult, activation="relu",
                            bias_initializer="normal", dtype="float64")
    y = sep(x).numpy()
    assert sep.depthwise_kernel.shape == (3, 2, 3, mult)
    assert sep.pointwise_kernel.shape == (1, 1, 3 * mult, 5) and sep.bias.shape == (5,)
    assert [v.name.split("/")[-1] for v in sep.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]
    dw = L.DepthwiseConv2D((3, 2), strides=strides, padding=padding, depth_multiplier=mult, use_bias=False,
                           dtype="float64")
    pw = L.Conv2D(5, 1, activation="relu", dtype="float64")
    dw(x)
    pw(dw(x))
    dw.kernel.assign(sep.depthwise_kernel.numpy())
    pw.kernel.assign(sep.pointwise_kernel.numpy())
    pw.bias.assign(sep.bias.numpy())
    np.testing.assert_allclose(y, pw(dw(x)).numpy(), rtol=1e-12, atol=1e-12)
    # and against the loops: depthwise, then a channel-mixing matrix product
    st = (strides, strides) if isinstance(strides, int) else strides
    pads = [same_pads(n, k, s, 1) if padding == "same" else (0, 0) for n, k, s in zip((7, 8), (3, 2), st)]
    mid = _naive_depthwise2d(x, sep.depthwise_kernel.numpy(), st, pads, (1, 1))
    expected = np.maximum(mid @ sep.pointwise_kernel.numpy()[0, 0] + sep.bias.numpy(), 0.0)
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)


def test_separable_conv1d_matches_the_definition():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 9, 3))
    sep = L.SeparableConv1D(4, 3, padding="same", depth_multiplier=2, bias_initializer="normal", dtype="float64")
    y = sep(x).numpy()
    assert sep.depthwise_kernel.shape == (3, 3, 2) and sep.pointwise_kernel.shape == (1, 6, 4)
    mid = _naive_depthwise1d(x, sep.depthwise_kernel.numpy(), 1, (1, 1), 1)
    np.testing.assert_allclose(y, mid @ sep.pointwise_kernel.numpy()[0] + sep.bias.numpy(), rtol=1e-10, atol=1e-12)


def test_keras_aliases():
    assert L.SeparableConvolution1D is L.SeparableConv1D and L.SeparableConvolution2D is L.SeparableConv2D
    for name in ("DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
                 "SeparableConvolution1D", "SeparableConvolution2D", "AdditiveAttention"):
        assert name in L.__all__


# ----- gradients ---------------------------------------------------------------------------------------
def test_depthwise_and_separable_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 5, 6, 2))
    dw = L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2, activation="tanh", dtype="float64")
    dw(x)

    report = adv.check_grads(lambda x, k, b: dw_fn(dw, x, k, b), (x, dw.kernel.numpy(), rng.normal(size=4)),
                             modes=("reverse",))
    assert report.ok, report

    sep = L.SeparableConv2D(3, 2, depth_multiplier=2, dtype="float64")
    sep(x)
    report = adv.check_grads(lambda x, dk, pk: sep_fn(sep, x, dk, pk),
                             (x, sep.depthwise_kernel.numpy(), sep.pointwise_kernel.numpy()), modes=("reverse",))
    assert report.ok, report
    assert [v.name.split("/")[-1] for v in dw.weights + sep.weights] == \
        ["kernel", "bias", "depthwise_kernel", "pointwise_kernel", "bias"]      # the swaps left the weights alone


def dw_fn(layer, x, k, b):
    """The layer's computation with its weights as arguments (the layer swaps them in for one call)."""
    old_k, old_b = layer.kernel, layer.bias
    layer.kernel, layer.bias = k, b
    try:
        return layer.call(x)
    finally:
        layer.kernel, layer.bias = old_k, old_b


def sep_fn(layer, x, dk, pk):
    old = layer.depthwise_kernel, layer.pointwise_kernel
    layer.depthwise_kernel, layer.pointwise_kernel = dk, pk
    try:
        return layer.call(x)
    finally:
        layer.depthwise_kernel, layer.pointwise_kernel = old


def test_tape_gradients_of_a_depthwise_layer_match_the_loops():
    """The tape's kernel gradient against central differences of the numpy loops (not of the layer)."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1, 4, 4, 2))
    layer = L.DepthwiseConv2D(2, depth_multiplier=2, use_bias=False, dtype="float64")
    layer(x)
    g_out = rng.normal(size=(1, 3, 3, 4))
    with adv.GradientTape() as tape:
        y = layer(x)
        loss = adv.sum(y * adv.constant(g_out))
    grad = tape.gradient(loss, layer.kernel).numpy()
    w = layer.kernel.numpy()
    num = np.zeros_like(w)
    eps = 1e-6
    for idx in np.ndindex(w.shape):
        wp, wm = w.copy(), w.copy()
        wp[idx] += eps
        wm[idx] -= eps
        fp = (_naive_depthwise2d(x, wp, (1, 1), [(0, 0)] * 2, (1, 1)) * g_out).sum()
        fm = (_naive_depthwise2d(x, wm, (1, 1), [(0, 0)] * 2, (1, 1)) * g_out).sum()
        num[idx] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-8)


# ----- PyTorch -----------------------------------------------------------------------------------------
def test_depthwise_conv2d_matches_torch_grouped_conv2d():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    C, M = 3, 2
    x = rng.normal(size=(2, 9, 8, C))
    layer = L.DepthwiseConv2D((3, 2), strides=2, depth_multiplier=M, bias_initializer="normal", dtype="float64")
    y = layer(x).numpy()
    w = layer.kernel.numpy()                                      # (kh, kw, C, M)
    tw = torch.tensor(w.reshape(3, 2, 1, C * M).transpose(3, 2, 0, 1).copy())   # (C·M, 1, kh, kw)
    tx = torch.tensor(x.transpose(0, 3, 1, 2).copy())
    ty = torch.nn.functional.conv2d(tx, tw, torch.tensor(layer.bias.numpy()), stride=2, groups=C)
    np.testing.assert_allclose(y, ty.numpy().transpose(0, 2, 3, 1), rtol=1e-10, atol=1e-12)


# ----- AdditiveAttention -------------------------------------------------------------------------------
def _naive_additive(q, k, v, scale, v_mask=None, q_mask=None, causal=False):
    """Keras 3's AdditiveAttention: scores ``Σ_f scale[f] · tanh(q[t, f] + k[s, f])``."""
    scores = (np.tanh(q[:, :, None, :] + k[:, None, :, :]) * scale).sum(-1)
    return masked_attention(scores, v, v_mask, q_mask, causal)


@pytest.mark.parametrize("use_scale", [True, False])
def test_additive_attention_matches_the_definition(use_scale):
    rng = np.random.default_rng(8)
    q, v, k = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6)), rng.normal(size=(2, 5, 4))
    att = L.AdditiveAttention(use_scale=use_scale, dtype="float64")
    out, w = att([q, v, k], return_attention_scores=True)
    if use_scale:
        assert att.scale.shape == (4,) and [x.name.split("/")[-1] for x in att.weights] == ["scale"]
        scale = att.scale.numpy()
        assert not np.allclose(scale, 1.0)          # glorot_uniform, as Keras
    else:
        assert att.weights == [] and att.scale is None
        scale = np.ones(4)
    want_out, want_w = _naive_additive(q, k, v, scale)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    # the key defaults to the value
    out2 = L.AdditiveAttention(use_scale=False, dtype="float64")([q, k])
    np.testing.assert_allclose(out2.numpy(), _naive_additive(q, k, k, np.ones(4))[0], rtol=1e-10)


def test_additive_attention_with_masks_and_causal_mask():
    rng = np.random.default_rng(9)
    q, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3))
    v_mask = np.array([[True, True, False, True], [False, True, True, False]])
    q_mask = np.array([[True, False, True, True], [True, True, True, False]])
    att = L.AdditiveAttention(dtype="float64")
    out, w = att([q, v], mask=[q_mask, v_mask], return_attention_scores=True)
    want_out, want_w = _naive_additive(q, v, v, att.scale.numpy(), v_mask, q_mask)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-14)
    assert np.all(w.numpy()[~np.broadcast_to(v_mask[:, None, :], w.shape)] == 0.0)
    out, w = att([q, v], mask=[None, v_mask], use_causal_mask=True, return_attention_scores=True)
    want_out, want_w = _naive_additive(q, v, v, att.scale.numpy(), v_mask, causal=True)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-14)      # row 0 of batch 1: all masked -> 0
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-14)
    assert np.all(w.numpy()[1, 0] == 0.0)


def test_additive_attention_reads_carried_masks_and_passes_on_the_query_mask():
    tokens_q = np.array([[1, 2, 0], [3, 0, 0]])
    tokens_v = np.array([[4, 5, 6, 0], [7, 8, 0, 0]])
    emb = L.Embedding(10, 3, mask_zero=True, dtype="float64")
    att = L.AdditiveAttention(dtype="float64")
    eq, ev = emb(tokens_q), emb(tokens_v)
    out, w = att([eq, ev], return_attention_scores=True)
    want_out, want_w = _naive_additive(eq.numpy(), ev.numpy(), ev.numpy(), att.scale.numpy(), tokens_v != 0,
                                       tokens_q != 0)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-14)
    np.testing.assert_array_equal(np.asarray(out._keras_mask), tokens_q != 0)


def test_additive_attention_gradients_match_finite_differences():
    rng = np.random.default_rng(10)
    q, v = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 4, 2))
    v_mask = np.array([[True, True, False, True], [True, False, True, True]])
    att = L.AdditiveAttention(dtype="float64")
    att([q, v])

    def f(q, v, scale):
        old = att.scale
        att.scale = scale
        try:
            return att.call([q, v], mask=[None, v_mask], use_causal_mask=True)
        finally:
            att.scale = old

    report = adv.check_grads(f, (q, v, rng.normal(size=2)), modes=("reverse",))
    assert report.ok, report


def test_additive_attention_dropout_only_in_training():
    rng = np.random.default_rng(11)
    q, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 6, 4))
    att = L.AdditiveAttention(dropout=0.5, seed=3, dtype="float64")
    plain = att([q, v]).numpy()
    np.testing.assert_allclose(att([q, v], training=False).numpy(), plain)
    assert not np.allclose(att([q, v], training=True).numpy(), plain)
    dropped, weights = att([q, v], training=True, return_attention_scores=True)
    np.testing.assert_allclose(dropped.numpy(), weights.numpy() @ v, rtol=1e-12)     # after dropout, as Keras
    assert (weights.numpy() == 0).any()


# ----- configs and errors ------------------------------------------------------------------------------
CONFIG_CASES = [
    lambda: L.DepthwiseConv1D(3, strides=2, padding="same", depth_multiplier=2, activation="relu", use_bias=False,
                              depthwise_initializer="he_normal", depthwise_regularizer="l2"),
    lambda: L.DepthwiseConv2D((2, 3), dilation_rate=2, depth_multiplier=3, bias_initializer="ones",
                              bias_regularizer=adv.regularizers.L1(0.1), activity_regularizer="l2"),
    lambda: L.SeparableConv1D(4, 3, padding="same", depth_multiplier=2, pointwise_initializer="he_uniform",
                              pointwise_regularizer="l1"),
    lambda: L.SeparableConv2D(6, (3, 1), strides=(2, 1), activation="tanh", depthwise_initializer="zeros",
                              use_bias=False),
    lambda: L.AdditiveAttention(use_scale=False, dropout=0.2, seed=5),
]


@pytest.mark.parametrize("make", CONFIG_CASES)
def test_config_round_trips_with_every_argument(make):
    layer = make()
    config = layer.get_config()
    assert {"name", "trainable", "dtype"} <= set(config)
    again = type(layer).from_config(config)
    assert again.get_config() == config
    import inspect
    params = set(inspect.signature(type(layer).__init__).parameters) - {"self", "kwargs"}
    assert params <= set(config), params - set(config)


def test_get_config_holds_the_values_given():
    c = L.DepthwiseConv2D(3, strides=2, padding="SAME", depth_multiplier=2, activation="relu").get_config()
    assert (c["kernel_size"], c["strides"], c["padding"], c["depth_multiplier"], c["activation"]) == \
        ((3, 3), (2, 2), "same", 2, "relu")
    c = L.SeparableConv2D(5, 3, depth_multiplier=4, pointwise_initializer="ones").get_config()
    assert (c["filters"], c["depth_multiplier"], c["pointwise_initializer"]) == (5, 4, "ones")
    c = L.AdditiveAttention().get_config()
    assert c["use_scale"] is True and c["dropout"] == 0.0 and "score_mode" not in c


@pytest.mark.parametrize("make,match", [
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=0), "depth_multiplier must be a positive integer"),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=1.5), "depth_multiplier"),
    (lambda: L.SeparableConv2D(4, 3, depth_multiplier=-1), "depth_multiplier"),
    (lambda: L.SeparableConv2D(0, 3), "filters must be a positive integer"),
    (lambda: L.DepthwiseConv2D((3, 3, 3)), "kernel_size must have 2 entries"),
    (lambda: L.DepthwiseConv1D(3, padding="causal"), "padding must be one of"),
    (lambda: L.SeparableConv2D(4, 3, padding="full"), "padding must be one of"),
    (lambda: L.DepthwiseConv2D(3, strides=2, dilation_rate=2), "strides > 1 together with dilation_rate"),
    (lambda: L.SeparableConv2D(4, 3, data_format="NCHW"), "'channels_first' \\(batch, channels"),
    (lambda: L.AdditiveAttention(dropout=1.0), r"dropout must be in \[0, 1\)"),
])
def test_bad_arguments_are_refused_before_anything_is_built(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_the_depth_multiplier_error_names_the_layer_and_the_fix():
    with pytest.raises(ValueError) as info:
        L.DepthwiseConv2D(3, depth_multiplier=0, name="dw")
    assert "dw (DepthwiseConv2D)" in str(info.value) and "depth_multiplier=2" in str(info.value)


def test_additive_attention_refuses_score_mode():
    with pytest.raises(TypeError, match="score_mode"):
        L.AdditiveAttention(score_mode="dot")


def test_bad_inputs_are_refused_with_the_layer_name():
    dw = L.DepthwiseConv2D(3, name="dw")
    with pytest.raises(ValueError, match="dw .*rank 4"):
        dw(np.ones((5, 5, 3)))
    dw(np.ones((1, 5, 5, 3)))
    with pytest.raises(ValueError, match="dw: this layer was built for inputs with 3 channels"):
        dw(np.ones((1, 5, 5, 2)))
    with pytest.raises(ValueError, match="smaller than the kernel's reach"):
        L.SeparableConv2D(2, 4)(np.ones((1, 3, 3, 2)))
    att = L.AdditiveAttention(name="add")
    with pytest.raises(ValueError, match="add: query and key must have the same feature size"):
        att([np.ones((1, 2, 3)), np.ones((1, 4, 5))])
    att([np.ones((1, 2, 3)), np.ones((1, 4, 3))])
    with pytest.raises(ValueError, match="add: this layer was built for query and key features of size 3"):
        att([np.ones((1, 2, 5)), np.ones((1, 4, 5))])
    with pytest.raises(ValueError, match="add: the value mask should have shape"):
        att([np.ones((1, 2, 3)), np.ones((1, 4, 3))], mask=[None, np.ones((1, 3), bool)])
