"""Convolution, pooling, normalization, dropout, embedding, merge and core layers (no torch here).

Values are checked against plain numpy loops written from the textbook
definitions; gradients through the rules are checked in test_rules.py and
against PyTorch in test_layers_torch_parity_conv.py.
"""
import numpy as np
import pytest
from conv_reference import same_pads

import autodiff_viz as adv
from autodiff_viz.core.rules import nn as R

L = adv.layers


@pytest.fixture(autouse=True)
def _fresh_names():
    L.clear_session()
    yield


def _naive_conv(x, w, strides, pads, dilation=(1, 1)):
    """y[n, i, j, o] = Σ x_pad[n, i·s + a·d, j·s + b·d, c] · w[a, b, c, o], by loops."""
    xp = np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),))
    kh, kw, _, cout = w.shape
    oh = (xp.shape[1] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    y = np.zeros((x.shape[0], oh, ow, cout))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    y[:, i, j] += xp[:, i * strides[0] + a * dilation[0], j * strides[1] + b * dilation[1]] @ w[a, b]
    return y


# ----- convolution ------------------------------------------------------------------
@pytest.mark.parametrize("size,kernel,strides,padding,dilation", [
    (7, 3, 1, "valid", 1), (7, 3, 2, "same", 1), (8, 3, 2, "same", 1), (6, 4, 1, "same", 1),
    (9, 3, 1, "same", 2), (8, 2, 3, "valid", 1)])
def test_conv2d_matches_the_definition_with_tensorflow_same_padding(size, kernel, strides, padding, dilation):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, size, size + 1, 3))
    layer = L.Conv2D(4, kernel, strides=strides, padding=padding, dilation_rate=dilation, dtype="float64")
    y = layer(x).numpy()
    if padding == "same":
        pads = []
        for n in (size, size + 1):
            pads.append(same_pads(n, kernel, strides, dilation))
            assert y.shape[1 + len(pads) - 1] == -(-n // strides)
    else:
        pads = [(0, 0), (0, 0)]
    expected = _naive_conv(x, layer.kernel.numpy(), (strides, strides), pads, (dilation, dilation))
    np.testing.assert_allclose(y, expected + layer.bias.numpy(), rtol=1e-10, atol=1e-12)


def test_conv_layers_use_keras_names_shapes_and_weight_layouts():
    c1, c2 = L.Conv2D(6, 5), L.Conv2D(16, (3, 5), padding="same")
    y = c2(c1(np.ones((2, 28, 28, 1))))
    assert (c1.name, c2.name) == ("conv2d", "conv2d_1")
    assert c1.kernel.shape == (5, 5, 1, 6) and c1.bias.shape == (6,)
    assert c2.kernel.shape == (3, 5, 6, 16) and y.shape == (2, 24, 24, 16)
    assert [w.path for w in c1.weights] == ["conv2d/kernel", "conv2d/bias"]
    assert y.dtype == np.float32
    conv1d = L.Conv1D(4, 3, strides=2, use_bias=False)
    assert conv1d(np.ones((2, 11, 8))).shape == (2, 5, 4) and conv1d.bias is None
    assert conv1d.name == "conv1d" and conv1d.kernel.shape == (3, 8, 4)


def test_conv1d_causal_output_never_sees_the_future():
    layer = L.Conv1D(1, 3, padding="causal", dilation_rate=2, dtype="float64")
    x = np.zeros((1, 10, 1))
    base = layer(x).numpy()
    x[0, 6, 0] = 1.0
    changed = np.nonzero(np.abs(layer(x).numpy() - base)[0, :, 0] > 0)[0]
    assert changed.min() >= 6 and layer(x).shape == (1, 10, 1)


def test_grouped_convolution_keeps_groups_apart():
    rng = np.random.default_rng(1)
    layer = L.Conv2D(4, 3, groups=2, dtype="float64")
    x = rng.normal(size=(2, 5, 5, 6))
    y = layer(x).numpy()
    assert layer.kernel.shape == (3, 3, 3, 4)
    k = layer.kernel.numpy()
    for g in range(2):
        expected = _naive_conv(x[..., 3 * g:3 * g + 3], k[..., 2 * g:2 * g + 2], (1, 1), [(0, 0), (0, 0)])
        np.testing.assert_allclose(y[..., 2 * g:2 * g + 2], expected, rtol=1e-10, atol=1e-12)


def test_conv_is_one_op_on_the_graph_with_a_gradient_factor_text():
    layer = L.Conv2D(2, 3)
    x = adv.constant(np.ones((1, 5, 5, 1), dtype="float32"))
    with adv.GradientTape() as tape:
        loss = adv.sum(layer(x))
    trace = tape.trace(loss, [layer.kernel])
    ops = [n.op for n in trace.nodes if n.kind == "op"]
    assert ops.count("conv") == 1
    factors = {e.input_name: e.factor for e in trace.edges if e.factor and "conv" in
               next(n.op for n in trace.nodes if n.id == e.dst)}
    assert "flip(W)" in factors["x"] and "⋆" in factors["W"]


def test_a_backward_pass_through_conv_can_be_differentiated_again():
    """The Hessian of a CNN loss (reverse over reverse, through conv, bias_add and both poolings)
    agrees with finite differences of the gradient."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 5, 2))
    params = dict(strides=(2, 1), pads=((1, 1), (0, 1)), dilation=(1, 1), groups=1)

    def f(w):
        y = R.bias_add(R.conv(adv.constant(x), w, **params), adv.constant(np.array([0.1, -0.2])))
        pooled = R.max_pool(adv.tanh(y), pool=(2, 2), strides=(1, 1), pads=((0, 0), (0, 1)))
        return adv.sum(R.avg_pool(pooled, pool=(2, 1), strides=(1, 1), pads=((0, 0), (0, 0))) ** 2)

    w0 = rng.normal(size=(2, 2, 2, 2)) * 0.5
    H = adv.hessian(f)(adv.constant(w0)).numpy().reshape(w0.size, w0.size)
    g = adv.grad(f)
    eps = 1e-6
    cols = []
    for j in range(w0.size):
        d = np.zeros(w0.size)
        d[j] = eps
        cols.append((g(adv.constant(w0 + d.reshape(w0.shape))).numpy() -
                     g(adv.constant(w0 - d.reshape(w0.shape))).numpy()).ravel() / (2 * eps))
    np.testing.assert_allclose(H, np.stack(cols, axis=1), rtol=1e-5, atol=1e-7)


def test_conv_rules_with_batch_axes_on_both_operands_apply_per_batch_entry():
    rng = np.random.default_rng(3)
    p = dict(strides=(1, 1), pads=((1, 0), (0, 1)), dilation=(1, 1), groups=1)
    x, g = rng.normal(size=(3, 2, 4, 4, 2)), rng.normal(size=(3, 2, 4, 4, 5))
    w = rng.normal(size=(3, 2, 2, 2, 5))
    got = R.conv_kernel_grad(x, g, ksize=(2, 2), **p)
    want = np.stack([R.conv_kernel_grad(x[b], g[b], ksize=(2, 2), **p) for b in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(R.conv(x, w, **p), np.stack([R.conv(x[b], w[b], **p) for b in range(3)]),
                               rtol=1e-12)
    np.testing.assert_allclose(R.conv_input_grad(g, w, spatial=(4, 4), **p),
                               np.stack([R.conv_input_grad(g[b], w[b], spatial=(4, 4), **p) for b in range(3)]),
                               rtol=1e-12)


# ----- pooling ------------------------------------------------------------------------
def test_max_pooling_gives_the_gradient_to_the_first_arg_max():
    x = adv.constant(np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 0.0, 5.0, 5.0]]).reshape(1, 2, 4, 1))
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = L.MaxPooling2D()(x)
    assert y.numpy().ravel().tolist() == [3.0, 5.0]
    gx = tape.gradient(y, x).numpy().reshape(2, 4)
    assert gx.tolist() == [[0, 1, 0, 0], [0, 0, 1, 0]]


def test_average_pooling_spreads_evenly_and_same_padding_counts_only_real_entries():
    x = adv.constant(np.arange(9.0).reshape(1, 3, 3, 1))
    layer = L.AveragePooling2D(pool_size=2, padding="same")
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    # windows [[0,1],[3,4]], [[2],[5]], [[6,7]], [[8]]: the divisor is the count of real entries
    assert y.numpy().ravel().tolist() == [2.0, 3.5, 6.5, 8.0]
    gx = tape.gradient(y, x).numpy().reshape(3, 3)
    np.testing.assert_allclose(gx, [[.25, .25, .5], [.25, .25, .5], [.5, .5, 1.0]])


def test_pooling_shapes_defaults_and_global_pooling():
    x = np.random.default_rng(0).normal(size=(2, 9, 8, 3))
    assert L.MaxPooling2D()(x).shape == (2, 4, 4, 3)                      # strides default to pool_size
    assert L.MaxPooling2D(3, strides=2, padding="same")(x).shape == (2, 5, 4, 3)
    assert L.AveragePooling1D(2)(np.ones((2, 7, 3))).shape == (2, 3, 3)
    assert L.MaxPooling1D(3, strides=1)(np.ones((2, 7, 3))).shape == (2, 5, 3)
    np.testing.assert_allclose(L.GlobalAveragePooling2D(dtype="float64")(x).numpy(), x.mean(axis=(1, 2)))
    np.testing.assert_allclose(L.GlobalMaxPooling2D(keepdims=True, dtype="float64")(x).numpy(),
                               x.max(axis=(1, 2), keepdims=True))
    assert L.GlobalAveragePooling1D()(np.ones((2, 5, 3))).shape == (2, 3)
    assert L.GlobalMaxPooling1D()(np.ones((2, 5, 3))).shape == (2, 3)
    L.clear_session()
    assert [L.MaxPooling2D().name, L.MaxPooling2D().name, L.GlobalAveragePooling2D().name] == [
        "max_pooling2d", "max_pooling2d_1", "global_average_pooling2d"]


# ----- bad input ----------------------------------------------------------------------
def test_conv2d_given_a_3d_batch_says_what_to_do():
    with pytest.raises(ValueError, match=r"conv2d \(Conv2D\): expected inputs of rank 4 .*\(28, 28, 1\).*x\[None\]"):
        L.Conv2D(4, 3)(np.ones((28, 28, 1)))


def test_channel_mismatch_names_the_layer_and_changes_nothing():
    layer = L.Conv2D(4, 3)
    layer(np.ones((1, 6, 6, 3)))
    before = layer.kernel.numpy().copy()
    with pytest.raises(ValueError, match=r"conv2d: this layer was built for inputs with 3 channels .*\(1, 6, 6, 5\)"):
        layer(np.ones((1, 6, 6, 5)))
    assert np.array_equal(layer.kernel.numpy(), before)


def test_inputs_smaller_than_the_kernel_or_the_pool_are_clear_errors():
    with pytest.raises(ValueError, match=r"smaller than the kernel's reach.*padding='same'"):
        L.Conv2D(2, 5)(np.ones((1, 4, 4, 1)))
    with pytest.raises(ValueError, match=r"max_pooling2d.*pool_size \(3, 3\) is larger than the input's spatial "
                                         r"size \(2, 2\)"):
        L.MaxPooling2D(3)(np.ones((1, 2, 2, 1)))


def test_unknown_padding_and_bad_arguments_are_rejected_at_construction():
    with pytest.raises(ValueError, match=r"padding must be one of 'valid', 'same'.*got 'full'"):
        L.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="padding must be one of"):
        L.AveragePooling2D(padding="causal")
    with pytest.raises(ValueError, match="kernel_size must have 2 entries"):
        L.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="groups must be a positive integer that divides filters"):
        L.Conv2D(5, 3, groups=2)
    with pytest.raises(ValueError, match="channels_last"):
        L.DepthwiseConv2D(3, data_format="NHWC")         # Keras' words only: channels_last or channels_first
    with pytest.raises(ValueError, match="channels_last"):
        L.Conv2D(2, 3, data_format="NCHW")


# ----- core ---------------------------------------------------------------------------
def test_flatten_reshape_activation_lambda():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert L.Flatten()(x).shape == (2, 12)
    assert L.Reshape((4, -1))(x).shape == (2, 4, 3)
    with pytest.raises(ValueError, match=r"reshape.*\(3, 4\) has 12 entries.*\(5, -1\)|12 entries"):
        L.Reshape((5, -1))(x)
    np.testing.assert_allclose(L.Activation("relu", dtype="float64")(x - 10).numpy(), np.maximum(x - 10, 0))
    np.testing.assert_allclose(L.Lambda(lambda t: t * 2, dtype="float64")(x).numpy(), x * 2)


# ----- dropout ------------------------------------------------------------------------
def test_dropout_is_identity_unless_training_and_scales_kept_entries():
    x = np.ones((50, 40))
    layer = L.Dropout(0.25, seed=1, dtype="float64")
    assert np.array_equal(layer(x).numpy(), x)
    assert np.array_equal(layer(x, training=False).numpy(), x)
    y = layer(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert 0.2 < np.mean(y == 0) < 0.3


def test_dropout_with_a_seed_repeats_its_masks_and_the_gradient_follows_the_mask():
    x = adv.constant(np.ones((4, 6)))
    a, b = L.Dropout(0.5, seed=7, dtype="float64"), L.Dropout(0.5, seed=7, dtype="float64")
    assert np.array_equal(a(x, training=True).numpy(), b(x, training=True).numpy())
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = a(x, training=True)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), y.numpy())   # ∂y/∂x is the scaled mask


def test_fit_trains_with_dropout_active_and_predict_runs_without_it():
    seen = []

    class Spy(L.Dropout):
        def call(self, inputs, training=None):
            seen.append(bool(training))
            return super().call(inputs, training=training)

    model = adv.Sequential([L.Input((3,)), Spy(0.5), L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    seen.clear()
    model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, epochs=1, verbose=0)
    assert seen and all(seen)
    seen.clear()
    model.predict(np.ones((4, 3)))
    model.evaluate(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
    assert seen and not any(seen)


def test_spatial_dropout_drops_whole_channels():
    y = L.SpatialDropout2D(0.5, seed=3, dtype="float64")(np.ones((4, 3, 3, 8)), training=True).numpy()
    per_map = y.reshape(4, 9, 8)
    assert np.all(per_map == per_map[:, :1])                 # each feature map kept or dropped as a whole
    assert set(np.unique(y)) == {0.0, 2.0}


def test_dropout_rate_out_of_range():
    with pytest.raises(ValueError, match=r"rate must be a number in \[0, 1\)"):
        L.Dropout(1.0)


# ----- normalization --------------------------------------------------------------------
def test_batch_norm_training_uses_batch_statistics_and_updates_the_moving_averages():
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, size=(16, 3, 3, 4))
    bn = L.BatchNormalization(dtype="float64")
    y = bn(x, training=True).numpy()
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.99 + 0.01 * var, rtol=1e-12)
    assert [v.path for v in bn.non_trainable_variables] == ["batch_normalization/moving_mean",
                                                            "batch_normalization/moving_variance"]
    y_inf = bn(x).numpy()     # inference: the moving averages
    np.testing.assert_allclose(y_inf, (x - bn.moving_mean.numpy()) / np.sqrt(bn.moving_variance.numpy() + 1e-3))


def test_batch_norm_on_another_axis():
    x = np.random.default_rng(4).normal(size=(5, 3, 4))          # features on axis 1
    bn = L.BatchNormalization(axis=1, dtype="float64")
    y = bn(x, training=True).numpy()
    mean, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    assert bn.gamma.shape == (3,) and bn.moving_mean.shape == (3,)


def test_fit_updates_batch_norm_statistics_that_predict_then_uses():
    rng = np.random.default_rng(1)
    x = rng.normal(5.0, 2.0, size=(32, 3))
    model = adv.Sequential([L.Input((3,)), L.BatchNormalization(momentum=0.5, dtype="float64"),
                            L.Dense(1, dtype="float64")])
    model.compile(optimizer=adv.optimizers.SGD(0.0), loss="mse")
    model.fit(x, np.zeros((32, 1)), batch_size=32, epochs=2, shuffle=False, verbose=0)
    bn = model.get_layer("batch_normalization")
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.75 * x.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.25 + 0.75 * x.var(axis=0), rtol=1e-10)
    dense = model.get_layer("dense")
    expected = ((x - bn.moving_mean.numpy()) / np.sqrt(bn.moving_variance.numpy() + 1e-3)) @ dense.kernel.numpy() \
        + dense.bias.numpy()
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-10)


def test_frozen_batch_norm_runs_in_inference_mode_even_when_training():
    bn = L.BatchNormalization(dtype="float64")
    bn.build((None, 2))
    bn.trainable = False
    x = np.random.default_rng(2).normal(size=(8, 2))
    np.testing.assert_allclose(bn(x, training=True).numpy(), x / np.sqrt(1 + 1e-3))
    assert np.array_equal(bn.moving_mean.numpy(), [0, 0])


def test_moving_statistics_are_saved_and_loaded_with_the_weights(tmp_path):
    def make():
        return adv.Sequential([L.Input((4, 4, 2)), L.Conv2D(3, 3), L.BatchNormalization(), L.Flatten(), L.Dense(2)])

    model = make()
    model(np.random.default_rng(0).normal(size=(8, 4, 4, 2)), training=True)
    stats = [v.numpy().copy() for v in model.non_trainable_variables]
    assert not np.allclose(stats[0], 0)
    path = tmp_path / "cnn.weights.npz"
    model.save_weights(path)
    other = make()
    other.load_weights(path)
    for a, b in zip(other.non_trainable_variables, stats):
        np.testing.assert_array_equal(a.numpy(), b)
    assert {"batch_normalization/moving_mean", "batch_normalization/moving_variance"} <= set(np.load(path).files)


def test_loading_weights_of_another_cnn_is_an_error_and_loads_nothing(tmp_path):
    def make(filters):
        return adv.Sequential([L.Input((5, 5, 1)), L.Conv2D(filters, 3), L.BatchNormalization(), L.Flatten(),
                               L.Dense(2)])

    path = tmp_path / "three.weights.npz"
    make(3).save_weights(path)
    other = make(4)
    before = [v.numpy().copy() for v in other.weights]
    with pytest.raises(ValueError, match=r"nothing was loaded(.|\n)*conv2d/kernel: the model has shape \(3, 3, 1, 4\)"
                                         r"(.|\n)*batch_normalization/moving_mean"):
        other.load_weights(path)
    assert all(np.array_equal(v.numpy(), b) for v, b in zip(other.weights, before))


def test_layer_normalization_normalises_each_sample():
    x = np.random.default_rng(3).normal(size=(2, 3, 5))
    ln = L.LayerNormalization(dtype="float64")
    y = ln(x).numpy()
    np.testing.assert_allclose(y, (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3))
    assert ln.gamma.shape == (5,) and ln.name == "layer_normalization"
    ln2 = L.LayerNormalization(axis=[1, 2], dtype="float64")
    y2 = ln2(x).numpy()
    np.testing.assert_allclose(y2, (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-3))
    assert ln2.beta.shape == (3, 5)


def test_normalization_errors_name_the_layer():
    bn = L.BatchNormalization()
    bn(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"batch_normalization .*built for size \(3,\).*\(2, 4\)"):
        bn(np.ones((2, 4)))


# ----- embedding ------------------------------------------------------------------------
def test_embedding_looks_up_rows_and_adds_gradients_of_repeated_tokens():
    emb = L.Embedding(5, 2, dtype="float64")
    idx = np.array([[1, 3, 1]])
    with adv.GradientTape() as tape:
        y = emb(idx)
        loss = adv.sum(y)
    table = emb.embeddings.numpy()
    np.testing.assert_array_equal(y.numpy()[0], table[[1, 3, 1]])
    g = tape.gradient(loss, emb.embeddings).numpy()
    assert g[:, 0].tolist() == [0, 2, 0, 1, 0]
    assert np.all(np.abs(table) <= 0.05)                           # "uniform" on [-0.05, 0.05]
    assert emb.name == "embedding" and emb.embeddings.path == "embedding/embeddings"


@pytest.mark.parametrize("bad,index,where", [(7, 7, r"\(0, 1\)"), (-1, -1, r"\(0, 1\)")])
def test_embedding_index_errors_name_the_index_and_touch_nothing(bad, index, where):
    emb = L.Embedding(5, 2)
    with pytest.raises(ValueError, match=rf"embedding \(Embedding\): index {index} at position {where}.*input_dim=5"):
        emb(np.array([[0, bad, 2]]))
    assert not emb.built


def test_embedding_mask_zero_and_float_indices():
    emb = L.Embedding(4, 2, mask_zero=True)
    assert emb.compute_mask(np.array([[0, 2, 0]])).tolist() == [[False, True, False]]
    assert emb(np.array([[1.0, 2.0]])).shape == (1, 2, 2)
    with pytest.raises(TypeError, match="whole numbers"):
        emb(np.array([[1.5]]))


# ----- merge ----------------------------------------------------------------------------
def test_merge_layers():
    a, b = np.full((2, 3), 2.0), np.full((2, 3), 3.0)
    kw = {"dtype": "float64"}
    assert L.Add(**kw)([a, b]).numpy()[0, 0] == 5.0
    assert L.Subtract(**kw)([a, b]).numpy()[0, 0] == -1.0
    assert L.Multiply(**kw)([a, b, b]).numpy()[0, 0] == 18.0
    assert L.Average(**kw)([a, b]).numpy()[0, 0] == 2.5
    assert L.Maximum(**kw)([a, b]).numpy()[0, 0] == 3.0
    assert L.Concatenate(**kw)([a, np.zeros((2, 1))]).shape == (2, 4)
    assert L.Concatenate(axis=0, **kw)([a, b]).shape == (4, 3)
    assert L.add([a, b]).shape == (2, 3)


def test_merge_errors():
    with pytest.raises(TypeError, match=r"call it on a list of tensors, e.g. Add\(\)\(\[a, b\]\)"):
        L.Add()(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"input shapes \[\(2, 3\), \(2, 4\)\] do not match"):
        L.Add()([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match="needs exactly 2 inputs"):
        L.Subtract()([np.ones(2)] * 3)
    with pytest.raises(ValueError, match="must match on every axis except"):
        L.Concatenate()([np.ones((2, 3)), np.ones((3, 3))])


# ----- regularizers ---------------------------------------------------------------------
def test_regularizers_follow_keras():
    w = adv.constant(np.array([1.0, -2.0]))
    assert float(adv.regularizers.L1()(w)) == pytest.approx(0.03)
    assert float(adv.regularizers.L2()(w)) == pytest.approx(0.05)
    assert float(adv.regularizers.L1L2(l1=0.1, l2=1.0)(w)) == pytest.approx(0.3 + 5.0)
    assert isinstance(adv.regularizers.get("l2"), adv.regularizers.L2)
    assert adv.regularizers.get(None) is None
    assert adv.regularizers.get({"class_name": "L1", "config": {"l1": 0.5}}).l1 == 0.5
    with pytest.raises(ValueError, match="Unknown regularizer 'l3'"):
        adv.regularizers.get("l3")
    with pytest.raises(ValueError, match="non-negative"):
        adv.regularizers.L2(-1)


def test_layer_regularizers_reach_model_losses_and_their_gradient():
    model = adv.Sequential([L.Input((4, 4, 1)),
                            L.Conv2D(2, 3, kernel_regularizer=adv.regularizers.L2(0.1), dtype="float64"),
                            L.Flatten(), L.Dense(1, kernel_regularizer="l1", bias_regularizer="l2",
                                                 activity_regularizer=adv.regularizers.L2(0.5), dtype="float64")])
    x = np.random.default_rng(0).normal(size=(3, 4, 4, 1))
    with adv.GradientTape() as tape:
        y = model(x)
        total = adv.sum(y) * 0.0 + adv.sum(adv.stack(model.losses))
    conv, dense = model.get_layer("conv2d"), model.get_layer("dense")
    k1, k2, b2 = conv.kernel.numpy(), dense.kernel.numpy(), dense.bias.numpy()
    expected = 0.1 * np.sum(k1 ** 2) + 0.01 * np.sum(np.abs(k2)) + 0.01 * np.sum(b2 ** 2) + 0.5 * np.sum(y.numpy() ** 2)
    assert float(total) == pytest.approx(expected, rel=1e-10)
    g = tape.gradient(total, conv.kernel).numpy()
    assert np.all(np.isfinite(g)) and not np.allclose(g, 0.2 * k1)   # the activity term flows back too
    emb = L.Embedding(3, 2, embeddings_regularizer="l2")
    emb(np.array([[0, 1]]))
    assert float(emb.losses[0]) == pytest.approx(0.01 * np.sum(emb.embeddings.numpy() ** 2), rel=1e-5)


@pytest.mark.parametrize("make", [lambda: adv.layers.Conv2D(4, kernel_size=2.5), lambda: adv.layers.Conv1D(4, (3.0,)),
                                  lambda: adv.layers.MaxPooling2D(pool_size=(2, 1.5)),
                                  lambda: adv.layers.Conv2D(4, 3, strides=True)])
def test_a_size_that_is_not_a_whole_number_is_refused_not_truncated(make):
    with pytest.raises(TypeError, match=r"must be an int or a tuple of \d ints.*a size is a whole number"):
        make()
