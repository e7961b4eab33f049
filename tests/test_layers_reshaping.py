"""UpSampling1D/2D, ZeroPadding1D/2D, Cropping1D/2D: Keras 3's argument forms, values against numpy,
gradients against PyTorch, functional shapes against Keras' compute_output_shape, and the errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import autodiff_viz as adv
from autodiff_viz import layers as L


@pytest.fixture(autouse=True)
def fresh_session():
    L.clear_session()
    L.set_random_seed(0)


RNG = np.random.default_rng(7)
X1 = RNG.normal(size=(2, 6, 3))          # (batch, steps, features)
X2 = RNG.normal(size=(2, 5, 6, 3))       # (batch, height, width, channels)


# layer, its input, the numpy forward, the PyTorch forward on an NHWC / NLC tensor, Keras' output shape
def _nchw(f):
    """A PyTorch function of NCHW (or NCL) tensors applied to a channels-last tensor."""
    def run(t):
        perm = (0, t.ndim - 1, *range(1, t.ndim - 1))
        back = (0, *range(2, t.ndim), 1)
        return f(t.permute(perm)).permute(back)
    return run


CASES = {
    "up1d": (lambda **kw: L.UpSampling1D(size=3, **kw), X1,
             lambda x: np.repeat(x, 3, axis=1),
             _nchw(torch.nn.Upsample(scale_factor=3, mode="nearest")),
             (None, 18, 3)),
    "up2d": (lambda **kw: L.UpSampling2D(size=(2, 3), **kw), X2,
             lambda x: np.repeat(np.repeat(x, 2, axis=1), 3, axis=2),
             _nchw(torch.nn.Upsample(scale_factor=(2, 3), mode="nearest")),
             (None, 10, 18, 3)),
    "up2d_int": (lambda **kw: L.UpSampling2D(size=2, interpolation="NEAREST", **kw), X2,
                 lambda x: np.repeat(np.repeat(x, 2, axis=1), 2, axis=2),
                 _nchw(torch.nn.Upsample(scale_factor=2, mode="nearest")),
                 (None, 10, 12, 3)),
    "pad1d": (lambda **kw: L.ZeroPadding1D(padding=(1, 2), **kw), X1,
              lambda x: np.pad(x, ((0, 0), (1, 2), (0, 0))),
              lambda t: F.pad(t, (0, 0, 1, 2)),
              (None, 9, 3)),
    "pad1d_default": (lambda **kw: L.ZeroPadding1D(**kw), X1,
                      lambda x: np.pad(x, ((0, 0), (1, 1), (0, 0))),
                      lambda t: F.pad(t, (0, 0, 1, 1)),
                      (None, 8, 3)),
    "pad2d_int": (lambda **kw: L.ZeroPadding2D(padding=2, **kw), X2,
                  lambda x: np.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0))),
                  lambda t: F.pad(t, (0, 0, 2, 2, 2, 2)),
                  (None, 9, 10, 3)),
    "pad2d_sym": (lambda **kw: L.ZeroPadding2D(padding=(1, 3), **kw), X2,
                  lambda x: np.pad(x, ((0, 0), (1, 1), (3, 3), (0, 0))),
                  lambda t: F.pad(t, (0, 0, 3, 3, 1, 1)),
                  (None, 7, 12, 3)),
    "pad2d_pairs": (lambda **kw: L.ZeroPadding2D(padding=((1, 0), (0, 2)), **kw), X2,
                    lambda x: np.pad(x, ((0, 0), (1, 0), (0, 2), (0, 0))),
                    lambda t: F.pad(t, (0, 0, 0, 2, 1, 0)),
                    (None, 6, 8, 3)),
    "crop1d": (lambda **kw: L.Cropping1D(cropping=(2, 1), **kw), X1,
               lambda x: x[:, 2:5],
               lambda t: t[:, 2:5],
               (None, 3, 3)),
    "crop1d_int": (lambda **kw: L.Cropping1D(cropping=2, **kw), X1,
                   lambda x: x[:, 2:4],
                   lambda t: t[:, 2:4],
                   (None, 2, 3)),
    "crop2d_default": (lambda **kw: L.Cropping2D(**kw), X2,
                       lambda x: x,
                       lambda t: t,
                       (None, 5, 6, 3)),
    "crop2d_sym": (lambda **kw: L.Cropping2D(cropping=(1, 2), **kw), X2,
                   lambda x: x[:, 1:4, 2:4],
                   lambda t: t[:, 1:4, 2:4],
                   (None, 3, 2, 3)),
    "crop2d_pairs": (lambda **kw: L.Cropping2D(cropping=((0, 2), (3, 0)), **kw), X2,
                     lambda x: x[:, 0:3, 3:6],
                     lambda t: t[:, 0:3, 3:6],
                     (None, 3, 3, 3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_matches_numpy(case):
    make, x, np_forward, _, _ = CASES[case]
    y = make()(adv.constant(x))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), np_forward(x.astype(np.float32)), rtol=0, atol=0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_pytorch(case):
    make, x, np_forward, torch_forward, _ = CASES[case]
    layer = make(dtype="float64")
    xt = adv.constant(x)
    upstream = RNG.normal(size=np_forward(x).shape)
    with adv.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
    grad = tape.gradient(y, xt, output_gradients=adv.constant(upstream))
    xtorch = torch.tensor(x, requires_grad=True)
    yt = torch_forward(xtorch)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    yt.backward(torch.tensor(upstream))
    np.testing.assert_allclose(grad.numpy(), xtorch.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [(2, 2), (3, 2), (1, 4)])
def test_bilinear_matches_pytorch_half_pixel_upsampling(size):
    x = RNG.normal(size=(2, 4, 3, 2))
    upstream = RNG.normal(size=(2, 4 * size[0], 3 * size[1], 2))
    xt = adv.constant(x)
    with adv.GradientTape() as tape:
        tape.watch(xt)
        y = L.UpSampling2D(size=size, interpolation="bilinear", dtype="float64")(xt)
    grad = tape.gradient(y, xt, output_gradients=adv.constant(upstream))
    xtorch = torch.tensor(x, requires_grad=True)
    yt = _nchw(torch.nn.Upsample(scale_factor=size, mode="bilinear", align_corners=False))(xtorch)
    yt.backward(torch.tensor(upstream))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad.numpy(), xtorch.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_nearest_upsampling_gradient_sums_the_copies_of_each_pixel():
    x = adv.constant(np.arange(4.0).reshape(1, 2, 2, 1))
    weights = np.arange(16.0).reshape(1, 4, 4, 1)
    with adv.GradientTape() as tape:
        tape.watch(x)
        loss = adv.sum(L.UpSampling2D(dtype="float64")(x) * weights)
    # pixel (0, 0) is copied to output rows 0-1, columns 0-1: 0 + 1 + 4 + 5
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy()[0, :, :, 0], [[10, 18], [42, 50]])


@pytest.mark.parametrize("case", sorted(CASES))
def test_functional_output_shape_is_keras_compute_output_shape(case):
    make, x, _, _, keras_shape = CASES[case]
    inputs = L.Input(shape=x.shape[1:])
    out = make()(inputs)
    assert tuple(out.shape) == keras_shape
    model = adv.Model(inputs, out)
    assert model.predict(x, verbose=0).shape == (len(x),) + keras_shape[1:]


def test_unknown_spatial_sizes_stay_unknown_in_the_functional_api():
    # Keras: an unknown axis stays None through upsampling and padding
    assert tuple(L.UpSampling2D((2, 3))(L.Input(shape=(None, 4, 3))).shape) == (None, None, 12, 3)
    assert tuple(L.ZeroPadding2D(((1, 0), (2, 2)))(L.Input(shape=(5, None, 3))).shape) == (None, 6, None, 3)
    assert tuple(L.UpSampling1D(2)(L.Input(shape=(None, 3))).shape) == (None, None, 3)


def test_each_layer_is_the_recorded_ops_inside_its_scope():
    x = adv.constant(X2.astype("float32"))
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = L.UpSampling2D(name="up")(x)
        y = L.ZeroPadding2D(name="pad")(y)
        L.Cropping2D(1, name="crop")(y)
    ops = [(node.scope, node.rule.name) for node in tape.nodes]
    assert ops == [("up", "repeat"), ("up", "repeat"), ("pad", "pad"), ("crop", "getitem")]


def test_get_config_holds_keras_argument_forms():
    base = {"trainable": True, "dtype": "float32"}          # Keras 3's base keys, in every layer's config
    assert L.UpSampling1D(name="u").get_config() == {"name": "u", **base, "size": 2}
    assert L.UpSampling2D(3, name="u2").get_config() == {
        "name": "u2", **base, "size": (3, 3), "data_format": "channels_last", "interpolation": "nearest"}
    assert L.ZeroPadding1D(name="p").get_config() == {"name": "p", **base, "padding": (1, 1),
                                                      "data_format": "channels_last"}
    assert L.ZeroPadding2D((1, 2), name="p2").get_config()["padding"] == ((1, 1), (2, 2))
    assert L.ZeroPadding2D(name="p3").get_config()["padding"] == ((1, 1), (1, 1))
    assert L.Cropping1D(name="c").get_config() == {"name": "c", **base, "cropping": (1, 1)}
    assert L.Cropping2D(name="c2").get_config() == {"name": "c2", **base, "cropping": ((0, 0), (0, 0)),
                                                     "data_format": "channels_last"}
    assert L.Cropping2D([3, [1, 0]], name="c3").get_config()["cropping"] == ((3, 3), (1, 0))
    assert L.Reshape((2, 3), dtype="float64", trainable=False).get_config()["dtype"] == "float64"


def test_autoencoder_with_upsampling_padding_and_cropping_fits():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(32, 8, 8, 1)).astype("float32")
    model = adv.Sequential([
        L.Input((8, 8, 1)),
        L.Conv2D(4, 3, padding="same", activation="relu"),
        L.MaxPooling2D(),                       # (4, 4, 4)
        L.UpSampling2D(),                       # (8, 8, 4)
        L.ZeroPadding2D(((1, 1), (2, 0))),      # (10, 10, 4)
        L.Cropping2D(((1, 1), (0, 2))),         # (8, 8, 4)
        L.Conv2D(1, 3, padding="same"),
    ])
    assert model.output_shape == (None, 8, 8, 1)
    model.compile(optimizer=adv.optimizers.Adam(0.01), loss="mse")
    history = model.fit(x, x, epochs=8, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]


def test_unet_skip_connection_cropped_to_the_upsampled_size():
    inputs = L.Input((9, 9, 2))
    down = L.MaxPooling2D()(inputs)                           # (4, 4, 2)
    up = L.UpSampling2D()(down)                               # (8, 8, 2)
    skip = L.Cropping2D(((0, 1), (0, 1)))(inputs)             # (8, 8, 2)
    model = adv.Model(inputs, L.Concatenate()([up, skip]))
    x = RNG.normal(size=(2, 9, 9, 2))
    out = model.predict(x, verbose=0)
    assert out.shape == (2, 8, 8, 4)
    np.testing.assert_allclose(out[..., 2:], x[:, :8, :8], rtol=1e-6)


@pytest.mark.parametrize("make, error, words", [
    (lambda: L.UpSampling1D(size=0), ValueError, ["UpSampling1D", "size", "positive", "size=2"]),
    (lambda: L.UpSampling1D(size=2.0), TypeError, ["UpSampling1D", "integer", "size=2"]),
    (lambda: L.UpSampling1D(size=(2, 2)), TypeError, ["UpSampling1D", "integer"]),
    (lambda: L.UpSampling2D(size=(2, 0)), ValueError, ["UpSampling2D", "size", "positive", "(2, 0)"]),
    (lambda: L.UpSampling2D(size=(2, 2, 2)), ValueError, ["UpSampling2D", "tuple of 2 ints"]),
    (lambda: L.UpSampling2D(size=(2, 1.5)), ValueError, ["UpSampling2D", "1.5"]),
    (lambda: L.UpSampling2D(interpolation="bicubic"), ValueError, ["UpSampling2D", "bicubic", "'nearest'"]),
    (lambda: L.UpSampling2D(data_format="NCHW"), ValueError, ["UpSampling2D", "'channels_first'", "NCHW"]),
    (lambda: L.ZeroPadding1D(padding=-1), ValueError, ["ZeroPadding1D", "padding", "≥ 0"]),
    (lambda: L.ZeroPadding1D(padding=(1, 2, 3)), ValueError, ["ZeroPadding1D", "tuple of 2 ints"]),
    (lambda: L.ZeroPadding1D(data_format="NCHW"), ValueError, ["ZeroPadding1D", "'channels_first'", "NCHW"]),
    (lambda: L.ZeroPadding2D(padding="same"), ValueError, ["ZeroPadding2D", "((top, bottom), (left, right))"]),
    (lambda: L.ZeroPadding2D(padding=((1, 1), (1, -1))), ValueError, ["ZeroPadding2D", "-1", "≥ 0"]),
    (lambda: L.ZeroPadding2D(padding=(1, 1, 1)), ValueError, ["ZeroPadding2D", "tuple of 2 tuples"]),
    (lambda: L.ZeroPadding2D(data_format="NCHW"), ValueError, ["ZeroPadding2D", "'channels_first'", "NCHW"]),
    (lambda: L.Cropping1D(cropping=(1, None)), ValueError, ["Cropping1D", "cropping", "None"]),
    (lambda: L.Cropping2D(cropping=-2), ValueError, ["Cropping2D", "cropping", "≥ 0"]),
    (lambda: L.Cropping2D(cropping=((1, 2, 3), (0, 0))), ValueError, ["Cropping2D", "each entry", "(1, 2, 3)"]),
    (lambda: L.Cropping2D(data_format="NCHW"), ValueError, ["Cropping2D", "'channels_first'", "NCHW"]),
])
def test_argument_errors_are_raised_at_construction_and_name_the_fix(make, error, words):
    with pytest.raises(error) as info:
        make()
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("layer, shape, words", [
    (lambda: L.Cropping1D((2, 2), name="c1"), (2, 4, 3), ["c1 (Cropping1D)", "(2, 2)", "(2, 4, 3)"]),
    (lambda: L.Cropping2D(((1, 1), (3, 3)), name="c2"), (2, 5, 6, 3), ["c2 (Cropping2D)", "axis 2", "(3, 3)"]),
])
def test_cropping_everything_is_an_error_at_call_time(layer, shape, words):
    made = layer()
    with pytest.raises(ValueError) as info:
        made(np.ones(shape))
    for word in words:
        assert word in str(info.value)
    with pytest.raises(ValueError, match="leaves no entries"):
        layer()(L.Input(shape=shape[1:]))


@pytest.mark.parametrize("make, shape", [
    (lambda: L.UpSampling2D(), (5, 6, 3)),
    (lambda: L.ZeroPadding1D(), (2, 5, 6, 3)),
    (lambda: L.Cropping2D(), (6, 3)),
])
def test_wrong_rank_names_the_expected_layout(make, shape):
    with pytest.raises(ValueError, match=r"expected inputs of rank"):
        make()(np.ones(shape))


def test_cropping_and_wide_kernels_on_an_unknown_length_keep_it_unknown():
    """Shapes are found by running the layer on placeholders; a crop or a kernel wider than the first ones
    (2 and 3 entries) gets larger ones instead of an error, as Keras' symbolic shapes never fail there."""
    x = adv.layers.Input((None, 3))
    cropped = adv.layers.Cropping1D((1, 1))(x)
    wide = adv.layers.Conv1D(2, 5)(x)
    assert tuple(cropped.shape) == (None, None, 3) and tuple(wide.shape) == (None, None, 2)
    model = adv.Model(x, adv.layers.Dense(1)(cropped))
    assert model.predict(np.ones((2, 6, 3))).shape == (2, 4, 1)
    with pytest.raises(ValueError, match=r"Cropping1D.*\(None, 4, 3\)"):
        adv.layers.Cropping1D((3, 3))(adv.layers.Input((4, 3)))      # a known length: the real error
