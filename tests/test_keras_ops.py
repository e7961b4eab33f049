"""``adv.ops`` is Keras 3's ``keras.ops``, and ``adv.nn.conv2d`` / ``max_pool2d`` / ``avg_pool2d`` are ``tf.nn``'s
(issue 37): each is compared with Keras and TensorFlow themselves, values, shapes and gradients.
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

RNG = np.random.default_rng(3)
A = RNG.normal(size=(3, 4)).astype("float32")
B = RNG.normal(size=(3, 4)).astype("float32")
P = RNG.uniform(0.5, 2.0, size=(3, 4)).astype("float32")
PROBS = (np.exp(A) / np.exp(A).sum(-1, keepdims=True)).astype("float32")
ONEHOT = np.eye(4, dtype="float32")[[0, 3, 1]]
LABELS = np.array([0, 3, 1])
IMG = RNG.normal(size=(2, 7, 6, 3)).astype("float32")
KER = RNG.normal(size=(3, 2, 3, 4)).astype("float32")
SEQ = RNG.normal(size=(2, 9, 3)).astype("float32")
KER1 = RNG.normal(size=(3, 3, 5)).astype("float32")

# name -> [(args, kwargs)], given as they are to keras.ops.<name> and adv.ops.<name>
CASES = {
    "sum": [((A,), {"axis": -1, "keepdims": True})], "mean": [((A,), {"axis": 0})], "max": [((A,), {})],
    "square": [((A,), {})], "sqrt": [((P,), {})], "rsqrt": [((P,), {})], "matmul": [((A, B.T), {})],
    "softmax": [((A,), {}), ((A,), {"axis": 0})], "log_softmax": [((A,), {})], "relu": [((A,), {})],
    "sigmoid": [((A,), {})], "gelu": [((A,), {}), ((A,), {"approximate": False})], "silu": [((A,), {})],
    "elu": [((A,), {})], "selu": [((A,), {})], "softplus": [((A,), {})], "leaky_relu": [((A,), {})],
    "logsumexp": [((A,), {"axis": 1})], "erf": [((A,), {})], "norm": [((A,), {}), ((A,), {"axis": -1})],
    "clip": [((A, -0.5, 0.5), {})], "where": [((A > 0, A, B), {})], "split": [((A, [1, 3], 1), {})],
    "one_hot": [((LABELS, 4), {})], "identity": [((3,), {})], "cast": [((A, "float64"), {})],
    "convert_to_tensor": [(([1.0, 2.0],), {})], "take": [((A, [2, 0], 1), {})],
    "expand_dims": [((A, 0), {})], "transpose": [((A,), {})], "concatenate": [(([A, B],), {"axis": 1})],
    "stack": [(([A, B],), {"axis": 1})], "argmax": [((A,), {"axis": -1})], "ones": [(((2, 3),), {})],
    "zeros_like": [((A,), {})], "stop_gradient": [((A,), {})], "size": [((A,), {})], "ndim": [((A,), {})],
    "categorical_crossentropy": [((ONEHOT, PROBS), {}), ((ONEHOT, A), {"from_logits": True})],
    "sparse_categorical_crossentropy": [((LABELS, PROBS), {}), ((LABELS, A), {"from_logits": True})],
    "binary_crossentropy": [((ONEHOT, PROBS), {}), ((ONEHOT, A), {"from_logits": True})],
    "conv": [((IMG, KER), {}), ((IMG, KER), {"strides": 2, "padding": "same"}),
             ((SEQ, KER1), {"padding": "same", "dilation_rate": 2})],
    "max_pool": [((IMG, 2), {}), ((IMG, 3), {"strides": 2, "padding": "same"}), ((SEQ, 2), {})],
    "average_pool": [((IMG, 2), {"padding": "same"}), ((IMG, (2, 3)), {"strides": 1}), ((SEQ, 3), {})],
}


def _value(result):
    if isinstance(result, (tuple, list)):
        return [_value(r) for r in result]
    return np.asarray(result.numpy() if hasattr(result, "numpy") else result)


def test_every_adv_ops_name_is_a_keras_ops_name():
    """The namespace holds Keras' names only, so nothing typed from a guide means something else."""
    foreign = [n for n in ops.__all__ if not hasattr(keras.ops, n)]
    assert not foreign, foreign
    assert {"sum", "matmul", "softmax", "conv", "moments", "identity"} <= set(ops.__all__)
    assert adv.ops is ops and adv.ops.sum is adv.sum        # numpy-named: the very same functions


@pytest.mark.parametrize("name", sorted(CASES))
def test_adv_ops_matches_keras_ops(name):
    for args, kwargs in CASES[name]:
        want = _value(getattr(keras.ops, name)(*args, **kwargs))
        got = _value(getattr(ops, name)(*args, **kwargs))
        for g, w in (zip(got, want) if isinstance(want, list) else [(got, want)]):
            assert g.shape == w.shape, (name, kwargs, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"ops.{name} {kwargs}")


def test_moments_match_keras_and_differentiate():
    m, v = ops.moments(adv.constant(A), axes=[0])
    km, kv = keras.ops.moments(A, axes=[0])
    np.testing.assert_allclose(m.numpy(), km.numpy(), rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), kv.numpy(), rtol=1e-5)
    x = adv.Variable(A)
    with adv.GradientTape() as tape:
        _, var = ops.moments(x, axes=[0, 1])
    tx = tf.Variable(A)
    with tf.GradientTape() as ttape:
        _, tvar = tf.nn.moments(tx, axes=[0, 1])
    np.testing.assert_allclose(tape.gradient(var, x).numpy(), ttape.gradient(tvar, tx).numpy(), rtol=1e-5, atol=1e-7)


TF_NN = [
    ("conv2d", (IMG, KER), {"strides": 1, "padding": "VALID"}),
    ("conv2d", (IMG, KER), {"strides": [1, 2, 2, 1], "padding": "SAME"}),
    ("conv2d", (IMG, KER), {"strides": 1, "padding": "SAME", "dilations": 2}),
    ("conv2d", (IMG, KER), {"strides": 1, "padding": [[0, 0], [1, 2], [0, 1], [0, 0]]}),
    ("conv1d", (SEQ, KER1), {"stride": 2, "padding": "SAME"}),
    ("max_pool2d", (IMG,), {"ksize": 2, "strides": 2, "padding": "VALID"}),
    ("max_pool2d", (IMG,), {"ksize": 3, "strides": 2, "padding": "SAME"}),
    ("avg_pool2d", (IMG,), {"ksize": [1, 2, 3, 1], "strides": 1, "padding": "SAME"}),
    ("avg_pool2d", (IMG,), {"ksize": 2, "strides": 2, "padding": "VALID"}),
    ("max_pool1d", (SEQ,), {"ksize": 2, "strides": 1, "padding": "VALID"}),
    ("avg_pool1d", (SEQ,), {"ksize": 3, "strides": 2, "padding": "SAME"}),
]


@pytest.mark.parametrize("name,args,kwargs", TF_NN, ids=[f"{c[0]}-{i}" for i, c in enumerate(TF_NN)])
def test_functional_conv_and_pools_match_tf_nn_values_and_gradients(name, args, kwargs):
    """Code written without layers convolves as in TensorFlow: the same outputs and the same gradients with
    respect to the input and the filters (a fixed upstream gradient ḡ, so every entry of the VJP counts)."""
    xs = [adv.Variable(a) for a in args]
    with adv.GradientTape() as tape:
        y = getattr(adv.nn, name)(*xs, **kwargs)
        g = RNG.normal(size=y.shape).astype("float32")
        loss = adv.sum(y * g)
    txs = [tf.Variable(a) for a in args]
    with tf.GradientTape() as ttape:
        ty = getattr(tf.nn, name)(*txs, **kwargs)
        tloss = tf.reduce_sum(ty * g)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)
    for got, want in zip(tape.gradient(loss, xs), ttape.gradient(tloss, txs)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_functional_conv_errors_name_the_op_shapes_and_fix():
    with pytest.raises(ValueError, match=r"conv2d: filters of shape \(3, 2, 3, 4\).*in_channels.*2"):
        adv.nn.conv2d(IMG[..., :2], KER, 1, "SAME")
    with pytest.raises(ValueError, match=r"max_pool2d: input of shape \(7, 6, 3\).*x\[None\]"):
        adv.nn.max_pool2d(IMG[0], 2, 2, "VALID")
    with pytest.raises(ValueError, match="NCHW.*moveaxis"):
        adv.nn.avg_pool2d(IMG, 2, 2, "VALID", data_format="NCHW")
    with pytest.raises(ValueError, match="padding must be 'SAME', 'VALID'"):
        adv.nn.conv2d(IMG, KER, 1, "FULL")
