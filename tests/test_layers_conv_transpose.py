"""Conv1DTranspose and Conv2DTranspose: Keras 3 shapes, values and gradients against PyTorch.

The weight conversion a learner needs to move between the two:

* Keras' transposed kernel is ``(*k, filters, in)``, PyTorch's ``ConvTranspose`` weight
  ``(in, filters, *k)``: ``kernel.transpose(3, 2, 0, 1)`` (2-D), ``kernel.transpose(2, 1, 0)`` (1-D)
  (the same permutation as for a Conv kernel, because both libraries store a transposed
  kernel as the kernel of the convolution it runs backwards);
* PyTorch's ``conv_transpose2d(padding=0)`` gives the full output, ``(n − 1)·s + span``
  entries; Keras cuts entries off before and after (or adds zeros after), as Keras'
  own PyTorch backend does (``compute_conv_transpose_output_crops_for_torch``, ported below).
"""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.core.rules import nn as R

torch = pytest.importorskip("torch")
F = torch.nn.functional
L = adv.layers
RTOL, ATOL = 1e-6, 1e-10


@pytest.fixture(autouse=True)
def _float64(torch_float64):
    L.clear_session()


def _keras_output_size(n, k, s, padding, output_padding, d):
    """keras/src/backend/common/backend_utils.py ``_get_output_shape_given_tf_padding``."""
    k = (k - 1) * d + 1
    if padding == "valid":
        output_padding = max(k, s) - k if output_padding is None else output_padding
        return (n - 1) * s + k + output_padding
    return n * s if output_padding is None else (n - 1) * s + k % 2 + output_padding


def _keras_crops(k, s, padding, output_padding, d):
    """keras/src/backend/common/backend_utils.py: ``_convert_conv_transpose_padding_args_from_keras_to_jax``
    and ``compute_conv_transpose_output_crops_for_torch``, for one axis: (cut before, cut after)."""
    k = (k - 1) * d + 1
    if padding == "valid":
        output_padding = max(k, s) - k if output_padding is None else output_padding
        left, right = k - 1, k - 1 + output_padding
    else:
        pad_len = s + k - 2 if output_padding is None else k + k % 2 - 2 + output_padding
        left = min(pad_len // 2 + pad_len % 2, k - 1)
        right = pad_len - left
    return k - 1 - left, k - 1 - right


def _crop(full, crops):
    """Cut (or zero-extend, for a negative amount) the spatial axes 2.. of an NC... torch tensor."""
    for axis, (lo, hi) in enumerate(crops, start=2):
        if hi < 0:
            shape = list(full.shape)
            shape[axis] = -hi
            full = torch.cat([full, torch.zeros(shape)], dim=axis)
            hi = 0
        full = full.narrow(axis, lo, full.shape[axis] - lo - hi)
    return full


def _adv_grads(layer, x, upstream):
    xt = adv.constant(x)
    with adv.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
        loss = adv.sum(y * upstream)
    gx, gk, gb = tape.gradient(loss, [xt, layer.kernel, layer.bias])
    return y.numpy(), gx.numpy(), gk.numpy(), gb.numpy()


def _leaf(a):
    return torch.tensor(np.ascontiguousarray(a), requires_grad=True)


def _close(got, want):
    np.testing.assert_allclose(got, want.detach().numpy() if hasattr(want, "detach") else want, rtol=RTOL, atol=ATOL)


CASES_2D = [
    dict(kernel_size=3),
    dict(kernel_size=3, padding="same"),
    dict(kernel_size=(3, 2), strides=2),
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=4, strides=2, padding="same"),
    dict(kernel_size=1, strides=2),                             # valid, span < stride: zeros after
    dict(kernel_size=3, strides=(2, 3), padding="same", output_padding=(1, 2)),
    dict(kernel_size=(4, 3), strides=2, padding="valid", output_padding=1),
    dict(kernel_size=4, strides=2, padding="same", output_padding=0),
    dict(kernel_size=3, dilation_rate=2),
    dict(kernel_size=(3, 2), dilation_rate=(2, 1), padding="same", activation="tanh"),
]


@pytest.mark.parametrize("cfg", CASES_2D)
def test_conv2d_transpose_matches_torch_values_and_gradients(cfg):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 4, 5, 3))
    layer = L.Conv2DTranspose(4, dtype="float64", bias_initializer="glorot_uniform", **cfg)
    y0 = layer(x)
    op = layer.output_padding or (None, None)
    want = tuple(_keras_output_size(n, k, s, layer.padding, p, d) for n, k, s, p, d in
                 zip(x.shape[1:3], layer.kernel_size, layer.strides, op, layer.dilation_rate))
    assert y0.shape == (2,) + want + (4,) == layer.compute_output_shape(x.shape)
    G = rng.normal(size=y0.shape)
    y, gx, gk, gb = _adv_grads(layer, x, G)

    xt, b = _leaf(x), _leaf(layer.bias.numpy())
    w = _leaf(layer.kernel.numpy().transpose(3, 2, 0, 1))                # (in, filters, kh, kw)
    assert tuple(w.shape) == (3, 4) + layer.kernel_size
    full = F.conv_transpose2d(xt.permute(0, 3, 1, 2), w, None, stride=layer.strides, dilation=layer.dilation_rate)
    crops = [_keras_crops(k, s, layer.padding, p, d) for k, s, p, d in
             zip(layer.kernel_size, layer.strides, op, layer.dilation_rate)]
    yt = _crop(full, crops) + b[:, None, None]
    if cfg.get("activation") == "tanh":
        yt = torch.tanh(yt)
    yt = yt.permute(0, 2, 3, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gk, w.grad.numpy().transpose(2, 3, 1, 0))
    _close(gb, b.grad)


@pytest.mark.parametrize("cfg", [dict(kernel_size=3), dict(kernel_size=3, strides=2, padding="same"),
                                 dict(kernel_size=2, strides=3), dict(kernel_size=5, strides=2, padding="same",
                                                                      output_padding=1),
                                 dict(kernel_size=3, dilation_rate=2, padding="same")])
def test_conv1d_transpose_matches_torch_values_and_gradients(cfg):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 6, 2))
    layer = L.Conv1DTranspose(3, dtype="float64", bias_initializer="glorot_uniform", **cfg)
    G = rng.normal(size=layer(x).shape)
    op = (layer.output_padding or (None,))[0]
    k, s, d = layer.kernel_size[0], layer.strides[0], layer.dilation_rate[0]
    assert G.shape == (3, _keras_output_size(6, k, s, layer.padding, op, d), 3)
    y, gx, gk, gb = _adv_grads(layer, x, G)
    xt, w, b = _leaf(x), _leaf(layer.kernel.numpy().transpose(2, 1, 0)), _leaf(layer.bias.numpy())
    full = F.conv_transpose1d(xt.permute(0, 2, 1), w, None, stride=s, dilation=d)
    yt = (_crop(full, [_keras_crops(k, s, layer.padding, op, d)]) + b[:, None]).permute(0, 2, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gk, w.grad.numpy().transpose(2, 1, 0))
    _close(gb, b.grad)


@pytest.mark.parametrize("kernel,size", [(3, 5), (4, 5), (2, 4)])
def test_conv2d_transpose_same_is_the_input_gradient_of_a_same_conv2d_it_inverts_in_shape(kernel, size):
    """TensorFlow's definition: Conv2DTranspose(c, k, 2, 'same') on x is ∂/∂z ⟨Conv2D(k, 2, 'same')(z), x⟩
    for z of the output's shape (here through torch.autograd and TensorFlow's 'same' pads)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, size, size, 3))
    layer = L.Conv2DTranspose(2, kernel, strides=2, padding="same", use_bias=False, dtype="float64")
    y = layer(x).numpy()
    m = 2 * size
    assert y.shape == (2, m, m, 2)
    total = max((size - 1) * 2 + kernel - m, 0)
    z = torch.zeros((2, 2, m, m), requires_grad=True)
    conv = F.conv2d(F.pad(z, (total // 2, total - total // 2) * 2), torch.tensor(layer.kernel.numpy().transpose(
        3, 2, 0, 1)), stride=2)                                       # (out=in channels of x, filters, kh, kw)
    assert tuple(conv.shape[2:]) == (size, size)
    (grad,) = torch.autograd.grad((conv * torch.tensor(x).permute(0, 3, 1, 2)).sum(), z)
    _close(y, grad.permute(0, 2, 3, 1))


def test_keras_shapes_names_and_weight_layout():
    up = L.Conv2DTranspose(32, 2, 2, activation="relu")
    assert up(np.random.default_rng(0).random((4, 10, 8, 128))).shape == (4, 20, 16, 32)   # Keras' docstring
    assert up.name == "conv2d_transpose" and up.kernel.shape == (2, 2, 32, 128) and up.bias.shape == (32,)
    assert [w.path for w in up.weights] == ["conv2d_transpose/kernel", "conv2d_transpose/bias"]
    assert L.Conv2DTranspose(3, 3, strides=2)(np.ones((1, 5, 5, 2))).shape == (1, 11, 11, 3)   # (n−1)·s + k
    assert L.Conv2DTranspose(3, 3, strides=2, padding="same")(np.ones((1, 5, 5, 2))).shape == (1, 10, 10, 3)
    assert L.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=0)(
        np.ones((1, 5, 5, 2))).shape == (1, 9, 9, 3)                                            # (n−1)·s + 1 + 0
    one = L.Conv1DTranspose(2, 3, strides=2, use_bias=False)
    assert one(np.ones((2, 7, 5))).shape == (2, 15, 2) and one.bias is None
    assert one.name == "conv1d_transpose" and one.kernel.shape == (3, 2, 5)
    assert L.Convolution2DTranspose is L.Conv2DTranspose and L.Convolution1DTranspose is L.Conv1DTranspose
    assert adv.layers.Conv2DTranspose.__module__ == "autodiff_viz.layers.conv"


def test_functional_model_with_unknown_batch_infers_the_output_shape():
    inp = L.Input((7, 7, 4))
    out = L.Conv2DTranspose(2, 3, strides=2, padding="same")(inp)
    assert out.shape == (None, 14, 14, 2)


def test_transposed_conv_is_one_op_on_the_graph_whose_edges_name_conv_and_conv_kernel_grad():
    layer = L.Conv2DTranspose(2, 3, strides=2)
    x = adv.constant(np.ones((1, 3, 3, 1), dtype="float32"))
    with adv.GradientTape() as tape:
        tape.watch(x)
        loss = adv.sum(layer(x))
    trace = tape.trace(loss, [x, layer.kernel])
    ops = [n.op for n in trace.nodes if n.kind == "op"]
    assert ops.count("conv_transpose") == 1 and "conv" not in ops
    dst = {n.id: n.op for n in trace.nodes}
    factors = {e.input_name: e.factor for e in trace.edges if e.factor and dst.get(e.dst) == "conv_transpose"}
    assert "(conv)" in factors["x"] and "conv_kernel_grad" in factors["W"]


@pytest.mark.parametrize("cfg", [dict(kernel_size=3, strides=2, padding="same"),
                                 dict(kernel_size=(2, 3), padding="valid", dilation_rate=(1, 2))])
def test_check_grads_passes_on_the_layer_and_its_op_to_second_order(cfg):
    rng = np.random.default_rng(3)
    layer = L.Conv2DTranspose(2, activation="tanh", bias_initializer="glorot_uniform", dtype="float64", **cfg)
    x0 = rng.normal(size=(1, 3, 3, 2))
    layer(x0)
    report = adv.check_grads(lambda x: layer(x), (x0,), order=2)
    assert report.ok, report
    outs, pads = layer._geometry(x0.shape)

    def op(x, w):
        return R.conv_transpose(x, w, spatial=outs, strides=layer.strides, pads=pads,
                                 dilation=layer.dilation_rate, groups=1)

    report = adv.check_grads(op, (x0, layer.kernel.numpy()), order=2)
    assert report.ok, report


def test_a_conv_then_transposed_conv_autoencoder_learns():
    rng = np.random.default_rng(4)
    images = np.zeros((32, 8, 8, 1))
    for img in images:
        r, c = rng.integers(1, 6, size=2)
        img[r:r + 2, c:c + 2, 0] = 1.0
    adv.layers.set_random_seed(0)
    model = adv.Sequential([L.Input((8, 8, 1)), L.Conv2D(4, 3, strides=2, padding="same", activation="relu"),
                            L.Conv2DTranspose(1, 3, strides=2, padding="same", activation="sigmoid")])
    assert model.layers[-1].kernel.shape == (3, 3, 1, 4)
    model.compile(optimizer=adv.optimizers.Adam(0.05), loss="binary_crossentropy")
    history = model.fit(images, images, batch_size=8, epochs=15, verbose=0)
    losses = history.history["loss"]
    assert model.predict(images[:2]).shape == (2, 8, 8, 1)
    assert losses[-1] < 0.6 * losses[0]


def test_bad_arguments_name_the_layer_and_the_fix():
    with pytest.raises(ValueError, match=r"Conv2DTranspose: every entry of output_padding must be smaller than "
                                         r"the stride.*output_padding=\(2, 2\), strides=\(2, 2\)"):
        L.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match=r"Conv1DTranspose: every entry of output_padding must be ≥ 0"):
        L.Conv1DTranspose(2, 3, strides=2, output_padding=-1)
    with pytest.raises(ValueError, match=r"Conv2DTranspose: strides > 1 together with dilation_rate > 1"):
        L.Conv2DTranspose(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match=r"Conv1DTranspose: padding must be one of 'valid', 'same'.*'causal'"):
        L.Conv1DTranspose(2, 3, padding="causal")
    with pytest.raises(ValueError, match=r"Conv2DTranspose: data_format must be 'channels_last'.*NCHW"):
        L.Conv2DTranspose(2, 3, data_format="NCHW")
    with pytest.raises(ValueError, match=r"Conv2DTranspose: filters must be a positive integer"):
        L.Conv2DTranspose(0, 3)
    with pytest.raises(ValueError, match=r"Conv2DTranspose: kernel_size must have 2 entries"):
        L.Conv2DTranspose(2, (3, 3, 3))


def test_bad_inputs_name_the_layer_and_change_nothing():
    with pytest.raises(ValueError,
                       match=r"conv2d_transpose \(Conv2DTranspose\): expected inputs of rank 4 .*x\[None\]"):
        L.Conv2DTranspose(4, 3)(np.ones((5, 5, 2)))
    layer = L.Conv2DTranspose(4, 3)
    layer(np.ones((1, 3, 3, 2)))
    before = layer.kernel.numpy().copy()
    with pytest.raises(ValueError, match=r"conv2d_transpose_1: this layer was built for inputs with 2 channels"):
        layer(np.ones((1, 3, 3, 5)))
    assert np.array_equal(layer.kernel.numpy(), before)
    with pytest.raises(ValueError, match=r"gives an output of size \(0,\).*output_padding"):
        L.Conv1DTranspose(2, 2, strides=2, padding="same", output_padding=0)(np.ones((1, 1, 3)))


def test_kernel_regularizer_reaches_the_layer_losses():
    layer = L.Conv2DTranspose(2, 2, kernel_regularizer=adv.regularizers.L2(0.1), dtype="float64")
    layer(np.ones((1, 2, 2, 3)))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.1 * np.sum(layer.kernel.numpy() ** 2), rtol=1e-12)
