"""``data_format="channels_first"`` on the transposed, depthwise and separable convolutions and on the
upsampling, padding and cropping layers: Keras 3's numbers, forward and backward.

A learner porting PyTorch or CS231n code keeps its ``(batch, channels, ...)``
layout. Keras 3 reads ``channels_first`` as the same layer, with the same
weight layout, on other axes. Each case builds our layer and a real Keras
layer with the same weights, feeds both the same small random input, and
compares the output and the gradients of ``Σ out ⊙ R`` (a random ``R``) with
respect to the input and to every weight. TensorFlow's CPU convolutions refuse
NCHW, so the convolutions' reference is the Keras layer with
``channels_last`` on the transposed input (the meaning Keras gives
``channels_first``); the reshaping layers run in Keras with
``channels_first`` itself.
"""
import os

import numpy as np
import pytest

import autodiff_viz as adv

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(1207)

CONVS = [
    ("Conv1DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="valid"), (2, 4, 5)),
    ("Conv1DTranspose", dict(filters=2, kernel_size=2, strides=1, padding="same", use_bias=True), (2, 3, 6)),
    ("Conv2DTranspose", dict(filters=3, kernel_size=(3, 2), strides=(2, 1), padding="same"), (2, 4, 5, 4)),
    ("Conv2DTranspose", dict(filters=2, kernel_size=2, strides=2, padding="valid", output_padding=1),
     (1, 3, 3, 4)),
    ("DepthwiseConv1D", dict(kernel_size=3, depth_multiplier=2, padding="same"), (2, 3, 7)),
    ("DepthwiseConv2D", dict(kernel_size=(2, 3), depth_multiplier=2, strides=(1, 2)), (2, 3, 5, 6)),
    ("SeparableConv1D", dict(filters=4, kernel_size=3, depth_multiplier=2), (2, 3, 7)),
    ("SeparableConv2D", dict(filters=4, kernel_size=3, padding="same", activation="tanh"), (2, 3, 5, 5)),
]

RESHAPING = [
    ("UpSampling2D", dict(size=(2, 3)), (2, 3, 4, 5)),
    ("UpSampling2D", dict(size=(2, 2), interpolation="bilinear"), (2, 3, 4, 5)),
    ("ZeroPadding1D", dict(padding=(1, 2)), (2, 3, 5)),
    ("ZeroPadding2D", dict(padding=((1, 0), (2, 3))), (2, 3, 4, 5)),
    ("Cropping2D", dict(cropping=((1, 0), (2, 1))), (2, 3, 5, 6)),
]


def _to_last(a):
    return np.moveaxis(a, 1, -1)


def _built(name, kwargs, x):
    """Our layer with ``data_format="channels_first"``, built by a call on ``x``."""
    layer = getattr(adv.layers, name)(data_format="channels_first", **kwargs)
    layer(adv.constant(x))
    return layer


def _ours(layer, x, r):
    """Output, input gradient and weight gradients (in ``layer.weights`` order) of ``Σ layer(x) ⊙ r``."""
    xt = adv.constant(x)
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = layer(xt)
        loss = adv.sum(y * r)
    grads = tape.gradient(loss, [xt] + list(layer.weights))
    return y.numpy(), grads[0].numpy(), [g.numpy() for g in grads[1:]]


def _keras(layer_cls, kwargs, x, r, weights):
    """The same with a Keras layer on ``x`` (already in the Keras layer's layout), weights given."""
    layer = layer_cls(**kwargs)
    xt = tf.constant(x)
    layer.build(x.shape)
    if weights:
        layer.set_weights(weights)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = layer(xt)
        loss = tf.reduce_sum(y * r)
    gx = tape.gradient(loss, xt)
    gw = tape.gradient(loss, layer.weights)
    return layer, y.numpy(), gx.numpy(), [g.numpy() for g in gw]


@pytest.mark.parametrize("name, kwargs, shape", CONVS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS)])
def test_convolutions_channels_first_are_keras_on_the_transposed_input(name, kwargs, shape):
    x = RNG.normal(size=shape)
    layer = _built(name, kwargs, x)
    for w in layer.weights:         # a nonzero bias too, so its gradient and its axis are checked
        w.assign(RNG.normal(size=w.shape) * 0.5)
    out_shape = layer(adv.constant(x)).shape
    assert out_shape[1] == kwargs.get("filters", shape[1] * kwargs.get("depth_multiplier", 1))
    r = RNG.normal(size=out_shape)
    y, gx, gw = _ours(layer, x, r)
    weights = [w.numpy() for w in layer.weights]
    klayer, ky, kgx, kgw = _keras(getattr(keras.layers, name), {**kwargs, "data_format": "channels_last"},
                                  _to_last(x), _to_last(r), weights)
    assert [tuple(w.shape) for w in klayer.weights] == [w.shape for w in weights]      # same weight layouts
    np.testing.assert_allclose(y, np.moveaxis(ky, -1, 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx, np.moveaxis(kgx, -1, 1), rtol=1e-6, atol=1e-6)
    for ours, theirs, w in zip(gw, kgw, layer.weights):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6, err_msg=w.name)


@pytest.mark.parametrize("name, kwargs, shape", RESHAPING, ids=[f"{c[0]}-{i}" for i, c in enumerate(RESHAPING)])
def test_reshaping_layers_channels_first_match_keras_channels_first(name, kwargs, shape):
    x = RNG.normal(size=shape)
    ky_probe = getattr(keras.layers, name)(data_format="channels_first", **kwargs)(tf.constant(x)).numpy()
    r = RNG.normal(size=ky_probe.shape)
    layer = _built(name, kwargs, x)
    y, gx, _ = _ours(layer, x, r)
    _, ky, kgx, _ = _keras(getattr(keras.layers, name), {**kwargs, "data_format": "channels_first"}, x, r, [])
    assert y.shape == ky.shape and y.shape[1] == shape[1]          # channels stay on axis 1
    np.testing.assert_allclose(y, ky, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx, kgx, rtol=1e-6, atol=1e-6)
    assert layer.get_config()["data_format"] == "channels_first"


@pytest.mark.parametrize("name, kwargs, shape", CONVS[:1] + CONVS[4:5] + CONVS[6:7] + RESHAPING[2:3],
                         ids=["Conv1DTranspose", "DepthwiseConv1D", "SeparableConv1D", "ZeroPadding1D"])
def test_channels_first_survives_a_config_round_trip_and_a_functional_model(name, kwargs, shape):
    layer = getattr(adv.layers, name)(data_format="channels_first", **kwargs)
    copy = type(layer).from_config(layer.get_config())
    assert copy.data_format == "channels_first"
    inputs = adv.layers.Input(shape=shape[1:])
    model = adv.Model(inputs, copy(inputs))
    x = RNG.normal(size=shape)
    np.testing.assert_allclose(model(x).numpy(), copy(adv.constant(x)).numpy())
    assert model.output_shape[1:] == copy(adv.constant(x)).shape[1:]


def test_an_unknown_data_format_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="channels_last"):
        adv.layers.Conv2DTranspose(2, 3, data_format="NCHW")
    with pytest.raises(ValueError, match="channels_last"):
        adv.layers.ZeroPadding2D(data_format="nchw")
