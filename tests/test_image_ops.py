"""``adv.image`` (TensorFlow's ``tf.image`` adjustments, issue 37), compared with TensorFlow: values, gradients
where TensorFlow has them, and ``LookupError`` where it has none (``adjust_contrast``)."""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")

import autodiff_viz as adv  # noqa: E402

RNG = np.random.default_rng(8)
IMAGES = RNG.uniform(size=(2, 4, 5, 3)).astype("float32")


@pytest.mark.parametrize("name,args", [("adjust_brightness", (0.25,)), ("rgb_to_grayscale", ()),
                                       ("per_image_standardization", ()), ("adjust_contrast", (1.7,))])
def test_values_match_tf_image(name, args):
    got = getattr(adv.image, name)(IMAGES, *args).numpy()
    want = getattr(tf.image, name)(IMAGES, *args).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["adjust_brightness", "rgb_to_grayscale", "per_image_standardization"])
def test_gradients_match_tf_image(name):
    g = RNG.normal(size=getattr(tf.image, name)(IMAGES, *(0.25,) * (name == "adjust_brightness")).shape)
    x, tx = adv.Variable(IMAGES), tf.Variable(IMAGES)
    extra = (0.25,) if name == "adjust_brightness" else ()
    with adv.GradientTape() as tape:
        loss = adv.sum(getattr(adv.image, name)(x, *extra) * g.astype("float32"))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(getattr(tf.image, name)(tx, *extra) * g.astype("float32"))
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), ttape.gradient(tloss, tx).numpy(),
                               rtol=1e-4, atol=1e-5)


def test_adjust_contrast_has_no_gradient_as_in_tensorflow():
    """TensorFlow registers no gradient for AdjustContrastv2: both raise LookupError naming it, and the
    message here says how to write a contrast that has one."""
    x = adv.Variable(IMAGES)
    with adv.GradientTape() as tape:
        y = adv.image.adjust_contrast(x, 2.0)
    with pytest.raises(LookupError, match="no entry for: AdjustContrastv2.*adv.mean"):
        tape.gradient(y, x)
    tx = tf.Variable(IMAGES)
    with tf.GradientTape() as ttape:
        ty = tf.image.adjust_contrast(tx, 2.0)
    with pytest.raises(LookupError, match="AdjustContrastv2"):
        ttape.gradient(ty, tx)
    with pytest.raises(ValueError, match=r"rgb_to_grayscale: images of shape \(2, 4, 5, 2\) must have 3"):
        adv.image.rgb_to_grayscale(IMAGES[..., :2])
