"""``adv.image`` has TensorFlow's ``tf.image`` geometry, colour, measure and resize functions (issue 43): each
is compared with TensorFlow on the same images — values, shapes and, where TensorFlow has one, the gradient
of ``Σ ḡ·out`` with respect to the image."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402

tf = pytest.importorskip("tensorflow")
RNG = np.random.default_rng(7)
IMG = RNG.uniform(0, 1, size=(2, 5, 6, 3)).astype("float32")
GRAY = IMG[..., :1]
BIG = RNG.uniform(0, 1, size=(2, 14, 13, 3)).astype("float32")

CASES = [
    ("flip_left_right", (IMG,), {}), ("flip_up_down", (IMG,), {}), ("transpose", (IMG,), {}),
    ("rot90", (IMG,), {}), ("rot90", (IMG[0],), {"k": 3}),
    ("crop_to_bounding_box", (IMG, 1, 2, 3, 3), {}), ("pad_to_bounding_box", (IMG, 1, 2, 8, 9), {}),
    ("central_crop", (IMG, 0.5), {}), ("resize_with_crop_or_pad", (IMG, 3, 8), {}),
    ("resize_with_crop_or_pad", (IMG, 7, 4), {}),
    ("grayscale_to_rgb", (GRAY,), {}), ("rgb_to_yiq", (IMG,), {}), ("yiq_to_rgb", (IMG,), {}),
    ("rgb_to_yuv", (IMG,), {}), ("yuv_to_rgb", (IMG,), {}), ("adjust_gamma", (IMG, 2.2, 0.8), {}),
    ("image_gradients", (IMG,), {}), ("sobel_edges", (IMG,), {}), ("total_variation", (IMG,), {}),
    ("total_variation", (IMG[0],), {}), ("psnr", (IMG, IMG[::-1], 1.0), {}),
    ("resize", (IMG, (9, 4)), {}), ("resize", (IMG, (3, 11)), {}), ("resize", (IMG, (9, 4)), {"method": "nearest"}),
    ("resize", (IMG, (10, 10)), {"preserve_aspect_ratio": True}), ("resize_with_pad", (IMG, 8, 8), {}),
    ("ssim", (BIG, np.clip(BIG + 0.1 * BIG[::-1], 0, 1), 1.0), {}),
    ("ssim", (BIG, BIG[::-1], 1.0), {"filter_size": 5, "filter_sigma": 1.0}),
    ("rgb_to_hsv", (IMG,), {}), ("hsv_to_rgb", (IMG,), {}), ("adjust_saturation", (IMG, 1.7), {}),
    ("adjust_saturation", (IMG, 0.4), {}), ("adjust_hue", (IMG, 0.3), {}), ("adjust_hue", (IMG, -0.45), {}),
    ("convert_image_dtype", (IMG, "uint8"), {}), ("convert_image_dtype", ((IMG * 255).astype("uint8"), "float32"), {}),
    ("convert_image_dtype", ((IMG * 255).astype("uint8"), "int32"), {}),
]
NO_GRADIENT_IN_TF = {"convert_image_dtype", "adjust_saturation", "adjust_hue", "hsv_to_rgb"}


def _value(out):
    return [np.asarray(o) for o in out] if isinstance(out, (tuple, list)) else [np.asarray(out)]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tf_image_names_match_tensorflow(name, args, kwargs):
    got = getattr(adv.image, name)(*args, **kwargs)
    want = getattr(tf.image, name)(tf.constant(args[0]), *args[1:], **kwargs)
    for g, w in zip(_value(got), _value(want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g.astype(float), w.astype(float), rtol=1e-5, atol=1e-5, err_msg=name)
    if name in NO_GRADIENT_IN_TF or args[0].dtype.kind != "f":
        return
    x, tx = adv.Variable(args[0]), tf.Variable(args[0])
    outs = _value(got)
    gs = [RNG.normal(size=o.shape).astype(o.dtype) for o in outs]
    with adv.GradientTape() as tape:
        out = getattr(adv.image, name)(x, *args[1:], **kwargs)
        out = out if isinstance(out, (tuple, list)) else [out]
        loss = adv.add_n([adv.sum(o * g) for o, g in zip(out, gs)])
    with tf.GradientTape() as ttape:
        tout = getattr(tf.image, name)(tx, *args[1:], **kwargs)
        tout = tout if isinstance(tout, (tuple, list)) else [tout]
        tloss = tf.add_n([tf.reduce_sum(o * g) for o, g in zip(tout, gs)])
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), ttape.gradient(tloss, tx).numpy(), rtol=1e-4,
                               atol=1e-5, err_msg=name)


def test_random_image_ops_keep_what_tensorflow_keeps():
    """The random ones draw from numpy's generator (documented): their results are the possible TensorFlow
    results — a flip or the image, a window of the asked size, a brightness shift within ±max_delta — and a
    stateless seed repeats."""
    flipped = adv.image.random_flip_left_right(IMG).numpy()
    for got, x in zip(flipped, IMG):
        assert np.array_equal(got, x) or np.array_equal(got, x[:, ::-1])
    crop = adv.image.random_crop(IMG[0], (3, 4, 3)).numpy()
    assert crop.shape == (3, 4, 3) and any(np.array_equal(crop, IMG[0, i:i + 3, j:j + 4])
                                           for i in range(3) for j in range(3))
    shift = adv.image.random_brightness(IMG, 0.2).numpy() - IMG
    assert np.allclose(shift, shift.flat[0], atol=1e-6) and abs(shift.flat[0]) <= 0.2
    a = adv.image.stateless_random_crop(IMG[0], (2, 2, 3), seed=(1, 2)).numpy()
    assert np.array_equal(a, adv.image.stateless_random_crop(IMG[0], (2, 2, 3), seed=(1, 2)).numpy())


def test_errors_name_the_op_the_shapes_and_the_fix():
    with pytest.raises(ValueError, match=r"crop_to_bounding_box: the box \(4, 0\) \+ \(3, 3\) does not fit.*5×6"):
        adv.image.crop_to_bounding_box(IMG, 4, 0, 3, 3)
    with pytest.raises(ValueError, match="resize: method 'bicubic' is not implemented here; use 'bilinear'"):
        adv.image.resize(IMG, (3, 3), method=adv.image.ResizeMethod.BICUBIC)
    with pytest.raises(ValueError, match="grayscale_to_rgb: images of shape .* must have 1 channel"):
        adv.image.grayscale_to_rgb(IMG)


def test_hsv_adjustments_have_no_gradient_as_in_tensorflow_and_the_conversions_do():
    """``adjust_saturation`` / ``adjust_hue`` give TensorFlow's values and, as TensorFlow (no gradient registered
    for ``AdjustSaturation`` / ``AdjustHue``), raise ``LookupError`` on a gradient, naming the differentiable way:
    the conversions, whose gradients flow (``rgb_to_hsv``'s is TensorFlow's, checked above; ``hsv_to_rgb``'s,
    which TensorFlow leaves None, is its piecewise-linear formula's, checked here by finite differences)."""
    x = adv.Variable(IMG)
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.image.adjust_hue(x, 0.2))
    with pytest.raises(LookupError, match="AdjustHue.*rgb_to_hsv"):
        tape.gradient(loss, x)
    hsv = IMG.astype("float64")
    h = adv.Variable(hsv)
    with adv.GradientTape() as tape:
        out = adv.sum(adv.image.hsv_to_rgb(h) * hsv[::-1])
    g = tape.gradient(out, h).numpy()
    eps, i = 1e-6, (0, 1, 2, 1)
    up, down = hsv.copy(), hsv.copy()
    up[i] += eps
    down[i] -= eps
    fd = (np.sum(adv.image.hsv_to_rgb(up).numpy() * hsv[::-1]) -
          np.sum(adv.image.hsv_to_rgb(down).numpy() * hsv[::-1])) / (2 * eps)
    np.testing.assert_allclose(g[i], fd, rtol=1e-5)
