"""The image ops of issue 43 against Keras and TensorFlow themselves: ``keras.ops.image``'s ten sampling, filter,
crop and patch ops (``adv.ops.image``) and ``tf.image``'s ``ssim_multiscale``, ``crop_and_resize``,
``extract_patches``, ``extract_glimpse`` and ``draw_bounding_boxes`` (``adv.image``).

Each case runs the same call on both sides under a tape: values (float32 tolerance), shape, dtype, and the
gradient of ``Σ w·output`` with respect to the images and every float argument TensorFlow differentiates
(``tf.GradientTape``). Where TensorFlow's gradient is not the derivative of what it computes
(``affine_transform``'s inverse warp, ``crop_and_resize``'s nearest boxes) the package's is checked against
finite differences instead, and the difference is asserted, as ``autodiff_viz/base/tf_surface.py`` states it.
A Keras older than a name (Keras 3.7 has neither ``gaussian_blur`` nor ``ssim`` …) skips that name's cases.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402
from autodiff_viz import ops  # noqa: E402

RNG = np.random.default_rng(43)
IMG = RNG.uniform(size=(2, 9, 8, 3)).astype("float32")
VOL = RNG.uniform(size=(2, 6, 5, 4, 2)).astype("float32")


def _keras(name):
    """``keras.ops.image.<name>``, the reference; a Keras that predates it skips the case."""
    if not hasattr(keras.ops.image, name):
        pytest.skip(f"Keras {keras.__version__} has no keras.ops.image.{name}")
    return getattr(keras.ops.image, name)


def _weights(shape):
    return np.sin(np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64)).reshape(shape)


def _run(lib, fn, args, diff):
    """``fn(*args)`` on one side, the arguments at ``diff`` watched: ``(output, [∂Σw·out/∂arg])``."""
    if lib == "tf":
        watched = [tf.Variable(a) if i in diff else a for i, a in enumerate(args)]
        with tf.GradientTape() as tape:
            out = fn(*[tf.identity(a) if i in diff else a for i, a in enumerate(watched)])   # tensors, not variables
            loss = tf.reduce_sum(tf.cast(out, tf.float64) * _weights(out.shape))
        try:
            grads = tape.gradient(loss, [watched[i] for i in diff]) if diff else []
        except LookupError:             # TensorFlow registers no gradient for the op
            return out.numpy(), [LookupError] * len(diff)
        return out.numpy(), [None if g is None else tf.convert_to_tensor(g).numpy() for g in grads]
    watched = [adv.Variable(a) if i in diff else a for i, a in enumerate(args)]
    with adv.GradientTape() as tape:
        out = fn(*watched)
        loss = adv.sum(adv.cast(out, "float64") * _weights(out.shape))
    try:
        grads = tape.gradient(loss, [watched[i] for i in diff]) if diff else []
    except LookupError:
        return out.numpy(), [LookupError] * len(diff)
    return out.numpy(), [None if g is None else g.numpy() for g in grads]


def _parity(ours, theirs, args, diff=(0,), atol=2e-5, gatol=2e-4):
    """The same call on both sides: values, shape, dtype and the gradients of the arguments at ``diff``."""
    want, gwant = _run("tf", theirs, args, diff)
    got, ggot = _run("adv", ours, args, diff)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got, want, atol=atol, rtol=1e-5)
    for i, (g, w) in zip(diff, zip(ggot, gwant)):
        if w is LookupError or g is LookupError:
            assert g is w, f"argument {i}: {'TensorFlow' if w is LookupError else 'this package'} raises LookupError"
            continue
        if w is None:
            assert g is None or not np.any(g), f"argument {i}: TensorFlow gives no gradient, this package does"
            continue
        assert g is not None, f"argument {i}: no gradient here, TensorFlow has one"
        np.testing.assert_allclose(g, w, atol=gatol, rtol=1e-4, err_msg=f"gradient of argument {i}")
    return got


# ----- map_coordinates -------------------------------------------------------------------------------------------
COORDS = np.stack([RNG.uniform(-2, 10, size=(4, 5)), RNG.uniform(-2, 9, size=(4, 5))]).astype("float32")


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap"])
def test_map_coordinates_matches_keras_values_and_gradients(order, fill_mode):
    """Values, and the gradient with respect to the input and (linear) the coordinates: the slope between
    the two neighbours, as TensorFlow's tape gives it."""
    theirs = _keras("map_coordinates")
    image = IMG[0, :, :, 0]
    _parity(lambda x, c: ops.image.map_coordinates(x, c, order, fill_mode, 0.25),
            lambda x, c: theirs(x, c, order, fill_mode, 0.25), [image, COORDS], diff=(0, 1))


def test_map_coordinates_reflect_and_mirror_are_kerass_documented_ones():
    """``reflect`` is ``d c b a | a b c d | d c b a`` and ``mirror`` ``c d c b | a b c d | c b a b`` on both
    sides; Keras 3.15's TensorFlow backend agrees at non-negative positions (checked), and differs below 0."""
    x = np.arange(4, dtype="float32") * 10
    c = np.arange(-6, 10, dtype="float32")[None]
    reflect = ops.image.map_coordinates(x, c, 0, "reflect").numpy()
    mirror = ops.image.map_coordinates(x, c, 0, "mirror").numpy()
    assert reflect.tolist() == [20, 30, 30, 20, 10, 0, 0, 10, 20, 30, 30, 20, 10, 0, 0, 10]
    assert mirror.tolist() == [0, 10, 20, 30, 20, 10, 0, 10, 20, 30, 20, 10, 0, 10, 20, 30]
    theirs = _keras("map_coordinates")
    positive = np.abs(COORDS)
    for order in (0, 1):
        _parity(lambda a, b: ops.image.map_coordinates(a, b, order, "reflect"),
                lambda a, b: theirs(a, b, order, "reflect"), [IMG[0, :, :, 1], positive], diff=(0, 1))


def test_map_coordinates_3d_keeps_the_dtype_and_rounds_integers():
    theirs = _keras("map_coordinates")
    coords = np.stack([RNG.uniform(-1, 9, (3, 4)), RNG.uniform(-1, 8, (3, 4)),
                       RNG.integers(0, 3, (3, 4))]).astype("float64")
    _parity(lambda x, c: ops.image.map_coordinates(x, c, 1, "nearest"), lambda x, c: theirs(x, c, 1, "nearest"),
            [IMG[0], coords], diff=(0,))
    ints = (IMG[0] * 100).astype("int32")
    got = ops.image.map_coordinates(ints, coords, 1, "nearest").numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, theirs(ints, coords, 1, "nearest").numpy())


# ----- affine_transform and perspective_transform ---------------------------------------------------------------
TRANSFORMS = np.array([[1.3, 0.2, -2.5, 0.1, 0.9, -1.2, 0.01, -0.02], [0.7, -0.3, 3.1, 0.4, 1.1, -2.0, 0, 0]],
                      dtype="float32")


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "reflect"])
def test_affine_transform_matches_keras_values(interpolation, fill_mode):
    theirs = _keras("affine_transform")
    _parity(lambda x: ops.image.affine_transform(x, TRANSFORMS, interpolation, fill_mode, 0.5),
            lambda x: theirs(x, TRANSFORMS, interpolation, fill_mode, 0.5), [IMG], diff=())


def test_affine_transform_channels_first_one_image_one_transform():
    theirs = _keras("affine_transform")
    first = np.ascontiguousarray(np.moveaxis(IMG, -1, 1))
    for x, t in ((first, TRANSFORMS), (first, TRANSFORMS[1]), (first[0], TRANSFORMS[0])):
        _parity(lambda a: ops.image.affine_transform(a, t, data_format="channels_first"),
                lambda a: theirs(a, t, data_format="channels_first"), [x], diff=())


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_affine_transform_gradient_is_tensorflows_for_a_permutation_of_pixels(interpolation):
    """An integer shift and a flip move whole pixels: TensorFlow's inverse-warp gradient is then the exact
    adjoint, and the two agree. The transform gets no gradient on either side."""
    theirs = _keras("affine_transform")
    shift_flip = np.array([[1, 0, 2, 0, 1, -1, 0, 0], [-1, 0, 7, 0, 1, 0, 0, 0]], dtype="float32")
    _parity(lambda x, t: ops.image.affine_transform(x, t, interpolation),
            lambda x, t: theirs(x, t, interpolation), [IMG, shift_flip], diff=(0, 1))


def test_affine_transform_gradient_is_the_exact_adjoint_where_tensorflows_is_not():
    """For a zoom, ḡ here is the derivative of the values (finite differences agree); TensorFlow's warps ḡ
    back with the inverse transform, which is not: the difference tf_surface.py states."""
    zoom = np.array([0.6, 0.1, 1.2, -0.05, 0.7, 0.8, 0, 0], dtype="float32")
    x64 = IMG[:1].astype("float64")
    report = adv.check_grads(lambda x: adv.sum(ops.image.affine_transform(x, zoom) * _weights((1, 9, 8, 3))),
                             [x64])
    assert report.ok, report
    theirs = _keras("affine_transform")
    _, [want] = _run("tf", lambda x: theirs(x, zoom), [IMG[:1]], (0,))
    _, [got] = _run("adv", lambda x: ops.image.affine_transform(x, zoom), [IMG[:1]], (0,))
    assert not np.allclose(got, want, atol=1e-3)


def test_perspective_transform_matches_keras():
    theirs = _keras("perspective_transform")
    start = np.array([[0, 0], [0, 9], [8, 0], [8, 9]], dtype="float32")
    end = np.array([[[1, 0.5], [0.3, 8], [7, 1], [8.5, 9.2]], [[0, 1], [1, 9], [7, 0], [8, 8]]], dtype="float32")
    for interpolation in ("bilinear", "nearest"):
        _parity(lambda x, s, e: ops.image.perspective_transform(x, s, e, interpolation, 0.1),
                lambda x, s, e: theirs(x, s, e, interpolation, 0.1), [IMG, np.stack([start, start]), end],
                diff=(1, 2), atol=2e-4)
    first = np.ascontiguousarray(np.moveaxis(IMG[0], -1, 0))
    _parity(lambda x: ops.image.perspective_transform(x, start, end[1], data_format="channels_first"),
            lambda x: theirs(x, start, end[1], data_format="channels_first"), [first], diff=(), atol=2e-4)


# ----- gaussian_blur, ssim, crops and pads ----------------------------------------------------------------------
@pytest.mark.parametrize("kernel_size, sigma", [((3, 3), (1.0, 1.0)), ((5, 3), (1.5, 0.7)), ((3, 5), (0.8, 2.0))])
def test_gaussian_blur_matches_keras_in_the_images_and_sigma(kernel_size, sigma):
    theirs = _keras("gaussian_blur")
    _parity(lambda x, s: ops.image.gaussian_blur(x, kernel_size, s), lambda x, s: theirs(x, kernel_size, s),
            [IMG, np.array(sigma, dtype="float32")], diff=(0, 1))
    first = np.ascontiguousarray(np.moveaxis(IMG[0], -1, 0))
    _parity(lambda x: ops.image.gaussian_blur(x, kernel_size, sigma, data_format="channels_first"),
            lambda x: theirs(x, kernel_size, sigma, data_format="channels_first"), [first])


def test_ssim_matches_keras_in_both_images():
    theirs = _keras("ssim")
    a = RNG.uniform(size=(2, 14, 13, 3)).astype("float32")
    b = np.clip(a + RNG.normal(scale=0.1, size=a.shape), 0, 1).astype("float32")
    _parity(ops.image.ssim, theirs, [a, b], diff=(0, 1))
    _parity(lambda x, y: ops.image.ssim(x, y, 2.0, filter_size=5, filter_sigma=1.0, data_format="channels_first"),
            lambda x, y: theirs(x, y, 2.0, filter_size=5, filter_sigma=1.0, data_format="channels_first"),
            [np.moveaxis(a[0], -1, 0).copy(), np.moveaxis(b[0], -1, 0).copy()], diff=(0, 1))
    assert ops.image.ssim(a.astype("float64"), b.astype("float64")).dtype == np.float64


@pytest.mark.parametrize("name, kwargs", [
    ("crop_images", dict(top_cropping=1, left_cropping=2, target_height=5, target_width=4)),
    ("crop_images", dict(top_cropping=2, bottom_cropping=1, left_cropping=0, right_cropping=3)),
    ("crop_images", dict(bottom_cropping=2, target_height=4, right_cropping=1, target_width=6)),
    ("pad_images", dict(top_padding=1, left_padding=2, target_height=12, target_width=14)),
    ("pad_images", dict(top_padding=2, bottom_padding=1, left_padding=0, right_padding=3)),
    ("pad_images", dict(bottom_padding=2, target_height=13, right_padding=1, target_width=9))])
def test_crop_images_and_pad_images_match_keras(name, kwargs):
    """Any two of (start, end, size) per axis, as Keras; ḡ back to the pixels kept, none for the zeros added."""
    theirs, ours = _keras(name), getattr(ops.image, name)
    _parity(lambda x: ours(x, **kwargs), lambda x: theirs(x, **kwargs), [IMG])
    first = np.ascontiguousarray(np.moveaxis(IMG[0], -1, 0))
    _parity(lambda x: ours(x, **kwargs, data_format="channels_first"),
            lambda x: theirs(x, **kwargs, data_format="channels_first"), [first])


def test_crop_and_pad_errors_name_the_op_the_shapes_and_the_fix():
    with pytest.raises(ValueError, match=r"image.crop_images: give exactly two of top_cropping"):
        ops.image.crop_images(IMG, top_cropping=1, bottom_cropping=1, target_height=3, left_cropping=0,
                              target_width=2)
    with pytest.raises(ValueError, match=r"image.crop_images: a 12×4 crop .* 9×8 \(shape \(2, 9, 8, 3\)\); crop less"):
        ops.image.crop_images(IMG, 0, 0, target_height=12, target_width=4)
    with pytest.raises(ValueError, match=r"image.pad_images: .* 9×8 .* ask for a larger target"):
        ops.image.pad_images(IMG, 0, 0, target_height=5, target_width=10)
    with pytest.raises(ValueError, match=r"image.map_coordinates: coordinates of shape \(3, 4, 5\) must be "
                                         r"\(inputs.ndim, \*output_shape\) = \(2, ...\)"):
        ops.image.map_coordinates(IMG[0, :, :, 0], np.zeros((3, 4, 5)), 1)
    with pytest.raises(ValueError, match=r"image.affine_transform: transform of shape \(6,\) must be 8 numbers"):
        ops.image.affine_transform(IMG, np.zeros(6))
    with pytest.raises(ValueError, match=r"image.affine_transform: fill_mode must be one of .*'reflect', got 'mirror'"):
        ops.image.affine_transform(IMG, TRANSFORMS, fill_mode="mirror")
    with pytest.raises(ValueError, match=r"image.crop_and_resize: box_indices \[0, 1, 1, 2\] must lie in \[0, 2\)"):
        adv.image.crop_and_resize(IMG, BOXES, [0, 1, 1, 2], (3, 3))


# ----- elastic_transform and scale_and_translate ----------------------------------------------------------------
def _keras_elastic(images, seed, alpha, sigma, interpolation, fill_mode, fill_value):
    """Keras' numpy-backend elastic transform with TensorFlow ops: the same numpy draws, Keras' TensorFlow
    gaussian_blur and map_coordinates (channels last, a batch)."""
    blur, sample = _keras("gaussian_blur"), _keras("map_coordinates")
    n, h, w, c = images.shape
    rng = np.random.default_rng([seed, 0])
    size = int(6 * sigma) | 1
    fields = [rng.normal(size=(n, h, w)).astype("float32") * np.float32(sigma) for _ in range(2)]
    dx, dy = (tf.squeeze(blur(f[..., None], (size, size), (sigma, sigma)), -1) for f in fields)
    yy, xx = np.meshgrid(np.arange(h, dtype="float32"), np.arange(w, dtype="float32"), indexing="ij")
    ys, xs = yy + alpha * dy, xx + alpha * dx
    order = ["nearest", "bilinear"].index(interpolation)
    return tf.stack([tf.stack([sample(images[b, :, :, k], tf.stack([ys[b], xs[b]]), order, fill_mode, fill_value)
                               for k in range(c)], -1) for b in range(n)])


@pytest.mark.parametrize("interpolation, fill_mode", [("bilinear", "constant"), ("nearest", "nearest"),
                                                      ("bilinear", "wrap")])
def test_elastic_transform_is_kerass_with_numpys_draws(interpolation, fill_mode):
    """The field is Keras' numpy backend's (``default_rng([seed, 0])``, dx then dy); given it, the values and
    the gradient in the images are those of Keras' own blur and map_coordinates on TensorFlow."""
    _keras("elastic_transform")
    _parity(lambda x: ops.image.elastic_transform(x, 3.0, 1.5, interpolation, fill_mode, 0.2, seed=7),
            lambda x: _keras_elastic(x, 7, 3.0, 1.5, interpolation, fill_mode, 0.2), [IMG], atol=1e-4)


def test_elastic_transform_same_seed_same_field_and_channels_first():
    x = IMG[0]
    a = ops.image.elastic_transform(x, seed=3).numpy()
    assert np.array_equal(a, ops.image.elastic_transform(x, seed=3).numpy())
    assert not np.array_equal(a, ops.image.elastic_transform(x, seed=4).numpy())
    first = ops.image.elastic_transform(np.moveaxis(x, -1, 0), seed=3, data_format="channels_first").numpy()
    np.testing.assert_allclose(np.moveaxis(first, 0, -1), a, atol=1e-6)
    assert a.shape == x.shape and a.dtype == x.dtype


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "lanczos5"])
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_matches_keras_in_images_scale_and_translation(method, antialias):
    theirs = _keras("scale_and_translate")
    scale, shift = np.array([0.6, 1.7], dtype="float32"), np.array([0.3, -1.1], dtype="float32")
    _parity(lambda x, s, t: ops.image.scale_and_translate(x, (2, 5, 13, 3), s, t, (1, 2), method, antialias),
            lambda x, s, t: theirs(x, (2, 5, 13, 3), s, t, (1, 2), method, antialias), [IMG, scale, shift],
            diff=(0, 1, 2), gatol=1e-3)


def test_scale_and_translate_kerass_example():
    images = np.arange(9, dtype="float32").reshape((3, 3))
    scale = np.array([2.0, 2.0], dtype="float32")
    got = ops.image.scale_and_translate(images, (5, 5), scale, -(scale / 2.0 - 0.5), (0, 1), "linear").numpy()
    np.testing.assert_allclose(got[0], [0.0, 0.5, 1.0, 1.5, 2.0])
    np.testing.assert_allclose(got[:, 0], [0.0, 1.5, 3.0, 4.5, 6.0])


# ----- extract_patches (3-D) ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs", [((3,), {}), (((2, 3, 2),), {"strides": 1}),
                                          (((2, 2, 2),), {"padding": "same", "strides": (1, 2, 2)})])
def test_extract_patches_3d_matches_keras(args, kwargs):
    theirs = _keras("extract_patches_3d")
    _parity(lambda v: ops.image.extract_patches_3d(v, *args, **kwargs), lambda v: theirs(v, *args, **kwargs),
            [VOL])
    size = (args[0],) * 3 if np.ndim(args[0]) == 0 else args[0]
    _parity(lambda v: ops.image.extract_patches(v, size, **kwargs),
            lambda v: keras.ops.image.extract_patches(v, size, **kwargs), [VOL])
    first = np.ascontiguousarray(np.moveaxis(VOL, -1, 1))
    _parity(lambda v: ops.image.extract_patches_3d(v, *args, **kwargs, data_format="channels_first"),
            lambda v: theirs(v, *args, **kwargs, data_format="channels_first"), [first])


# ----- tf.image ---------------------------------------------------------------------------------------------------
def test_ssim_multiscale_matches_tensorflow_in_both_images():
    """Three scales of odd sizes, so the symmetric pad before each 2 × 2 pool is exercised."""
    a = RNG.uniform(size=(2, 41, 37, 3)).astype("float32")
    b = np.clip(a + RNG.normal(scale=0.1, size=a.shape), 0, 1).astype("float32")
    kwargs = dict(power_factors=(0.2, 0.3, 0.5), filter_size=5)
    _parity(lambda x, y: adv.image.ssim_multiscale(x, y, 1.0, **kwargs),
            lambda x, y: tf.image.ssim_multiscale(x, y, 1.0, **kwargs), [a, b], diff=(0, 1), gatol=1e-4)
    big = RNG.uniform(size=(1, 180, 176, 1)).astype("float32")
    _parity(lambda x, y: adv.image.ssim_multiscale(x, y, 1.0), lambda x, y: tf.image.ssim_multiscale(x, y, 1.0),
            [big, np.clip(big * 0.9 + 0.05, 0, 1)], diff=())


BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.3, 0.5, 1.3], [0.4, 0.4, 0.4, 0.4], [0.9, 0.1, 0.2, 0.7]],
                 dtype="float32")
BOX_INDICES = np.array([0, 1, 1, 0], dtype="int32")


@pytest.mark.parametrize("crop_size", [(4, 5), (1, 3), (1, 1)])
def test_crop_and_resize_bilinear_matches_tensorflow_in_image_and_boxes(crop_size):
    _parity(lambda x, b: adv.image.crop_and_resize(x, b, BOX_INDICES, crop_size, extrapolation_value=-1.0),
            lambda x, b: tf.image.crop_and_resize(x, b, BOX_INDICES, crop_size, extrapolation_value=-1.0),
            [IMG, BOXES], diff=(0, 1), gatol=5e-4)


def test_crop_and_resize_nearest_gives_the_boxes_no_gradient():
    """The image's gradient is TensorFlow's; the boxes get none here, where TensorFlow substitutes the bilinear
    one (tf_surface.py says so)."""
    want, (gimage, gboxes) = _run("tf", lambda x, b: tf.image.crop_and_resize(x, b, BOX_INDICES, (4, 5), "nearest"),
                                  [IMG, BOXES], (0, 1))
    got, (image, boxes) = _run("adv", lambda x, b: adv.image.crop_and_resize(x, b, BOX_INDICES, (4, 5), "nearest"),
                               [IMG, BOXES], (0, 1))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(image, gimage, atol=1e-5)
    assert boxes is None and gboxes is not None


def test_tf_extract_patches_matches_tensorflow():
    for args in (([1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 1, 1], "VALID"),
                 ([1, 3, 2, 1], [1, 2, 2, 1], [1, 2, 1, 1], "SAME")):
        _parity(lambda x: adv.image.extract_patches(x, *args), lambda x: tf.image.extract_patches(x, *args), [IMG])


@pytest.mark.parametrize("centered, normalized", [(True, True), (False, True), (True, False), (False, False)])
def test_extract_glimpse_matches_tensorflow_with_zero_noise_and_has_no_gradient(centered, normalized):
    offsets = np.array([[1.0, 2.0], [-2.5, 3.7]], dtype="float32") / (10 if normalized else 1)
    for size in ((3, 4), (5, 3), (11, 12)):
        _parity(lambda x, o: adv.image.extract_glimpse(x, size, o, centered, normalized, "zero"),
                lambda x, o: tf.image.extract_glimpse(x, size, o, centered, normalized, "zero"), [IMG, offsets],
                diff=(0, 1))


def test_extract_glimpse_uniform_noise_fills_outside_with_the_images_range():
    offsets = np.array([[0.0, -1.0], [0.9, 0.9]], dtype="float32")
    got = adv.image.extract_glimpse(IMG, (5, 6), offsets).numpy()
    want = tf.image.extract_glimpse(IMG, (5, 6), offsets, noise="zero").numpy()
    inside = want != 0
    np.testing.assert_array_equal(got[inside], want[inside])
    for b in range(2):
        assert IMG[b].min() <= got[b].min() and got[b].max() <= IMG[b].max()


def test_draw_bounding_boxes_matches_tensorflow_and_has_no_gradient():
    boxes = np.array([[[0.1, 0.2, 0.6, 0.7], [-0.2, 0.5, 0.4, 1.3], [0.5, 0.5, 0.2, 0.9]],
                      [[0.0, 0.0, 1.0, 1.0], [0.3, -0.5, 1.5, 0.45], [1.2, 0, 1.5, 1]]], dtype="float32")
    colors = np.array([[1, 0, 0, 1], [0, 0.5, 1, 1]], dtype="float32")
    for images, table in ((IMG, colors), (IMG, None), (IMG[..., :1], None), (IMG[..., :1], colors)):
        _parity(lambda x, b: adv.image.draw_bounding_boxes(x, b, table),
                lambda x, b: tf.image.draw_bounding_boxes(x, b, table), [images, boxes], diff=(0, 1))


def test_a_gradient_through_glimpse_or_drawing_raises_tensorflows_lookup_error_with_the_way_out():
    """As TensorFlow: ``ExtractGlimpseV2`` and ``DrawBoundingBoxesV2`` register no gradient (LookupError);
    ``DrawBoundingBoxes`` (no colours given) is declared not differentiable (None, explained at its line)."""
    x = adv.Variable(IMG)
    with adv.GradientTape(persistent=True) as tape:
        boxes = np.zeros((2, 1, 4), "float32") + 0.5
        drawn = adv.sum(adv.image.draw_bounding_boxes(x, boxes, np.ones((1, 4), "float32")))
        default = adv.sum(adv.image.draw_bounding_boxes(x, boxes, None))
        glimpse = adv.sum(adv.image.extract_glimpse(x, (3, 3), np.zeros((2, 2), "float32")))
    with pytest.raises(LookupError, match="DrawBoundingBoxesV2 .*draw_bounding_boxes.*before they are drawn"):
        tape.gradient(drawn, x)
    with pytest.raises(LookupError, match="ExtractGlimpseV2 .*extract_glimpse.*crop_and_resize"):
        tape.gradient(glimpse, x)
    assert tape.gradient(default, x) is None                  # colours None: TensorFlow's first kernel, None
    why = tape.explain(default, x)
    assert why.reason == "non_differentiable_op" and "draw_bounding_boxes" in why.message, why.message


def test_every_keras_image_name_is_here_and_is_one_function():
    names = sorted(n for n in dir(keras.ops.image) if not n.startswith("_"))
    assert set(names) <= set(ops.image.__all__)
    assert len(ops.image.__all__) == 16
    for name in ("ssim_multiscale", "crop_and_resize", "extract_patches", "extract_glimpse", "draw_bounding_boxes"):
        assert name in adv.image.__all__ and callable(getattr(adv.image, name))
