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


# ----- the keras.ops names added for issue 43: values against Keras, gradients against TensorFlow ---------
NANS = np.where(RNG.uniform(size=(3, 4)) < 0.3, np.nan, A).astype("float32")
NANS[0] = A[0]
SQ = (A[:, :3] @ A[:, :3].T + 3 * np.eye(3)).astype("float32")
TRI = np.triu(SQ).astype("float32")
IDS = np.array([0, 0, 2])
QKV = RNG.normal(size=(2, 5, 2, 4)).astype("float32")
MORE = {
    "isnan": [((NANS,), {})], "isinf": [((np.array([1.0, np.inf, -np.inf]),), {})],
    "isfinite": [((NANS,), {})], "isneginf": [((np.array([1.0, np.inf, -np.inf]),), {})],
    "isposinf": [((np.array([1.0, np.inf, -np.inf]),), {})], "signbit": [((A,), {})],
    "logical_and": [((A > 0, B > 0), {})], "logical_or": [((A > 0, B > 0), {})],
    "logical_xor": [((A > 0, B > 0), {})], "logical_not": [((A > 0,), {})],
    "isclose": [((A, A + 1e-7), {})], "allclose": [((A, A + 1e-3), {})], "isin": [((LABELS, [1, 3]), {})],
    "arange": [((5,), {}), ((1, 7, 2), {}), ((0.0, 1.0, 0.25), {})], "full_like": [((A, 2.5), {})],
    "tri": [((3, 4), {"k": 1})], "logspace": [((0.0, 2.0, 5), {})], "geomspace": [((1.0, 100.0, 3), {})],
    "bartlett": [((6,), {})], "blackman": [((6,), {})], "hamming": [((6,), {})], "hanning": [((6,), {})],
    "kaiser": [((6, 2.0), {})],
    "average": [((A,), {"axis": 1, "weights": P[0]}), ((A,), {})], "ptp": [((A,), {"axis": 0})],
    "quantile": [((A, 0.3), {}), ((A, [0.25, 0.5]), {"axis": 1}), ((A, 0.7), {"axis": 0, "keepdims": True})],
    "percentile": [((A, 40), {"axis": 1})], "median": [((A,), {"axis": 1}), ((A[:, :3],), {})],
    "fabs": [((A,), {})], "fmod": [((A * 5, P), {})], "heaviside": [((np.array([-1.0, 0.0, 2.0]), 0.5), {})],
    "ldexp": [((A, np.array([1, 2, 3, 0])), {})], "diagflat": [((A[0],), {"k": 1})],
    "vander": [((A[0],), {}), ((A[0],), {"N": 3, "increasing": True})],
    "trapezoid": [((A,), {}), ((A,), {"x": P[0]})], "count_nonzero": [((A > 0,), {"axis": 1})],
    "nansum": [((NANS,), {"axis": 1})], "nanmean": [((NANS,), {"axis": 0})], "nanmax": [((NANS,), {})],
    "nanmin": [((NANS,), {"axis": 1})], "nanprod": [((NANS,), {})], "nanvar": [((NANS,), {"axis": 1})],
    "nanstd": [((NANS,), {})], "nancumsum": [((NANS,), {"axis": 1})], "nanargmax": [((NANS,), {"axis": 1})],
    "gcd": [((np.array([12, 9]), np.array([8, 6])), {})], "lcm": [((np.array([4, 6]), np.array([6, 4])), {})],
    "digitize": [((A, [-1.0, 0.0, 1.0]), {})], "bincount": [((LABELS,), {"minlength": 5})],
    "nonzero": [((A > 0,), {})], "unravel_index": [((np.array([3, 7]), (3, 4)), {})],
    "unique": [((np.array([3, 1, 3, 2]),), {})], "divide_no_nan": [((A, np.where(B > 0, B, 0)), {})],
    "get_item": [((A, 1), {})], "slice": [((A, [1, 1], [2, 2]), {})],
    "slice_update": [((A, [1, 2], np.ones((2, 2), "float32")), {})],
    "scatter": [((np.array([[0], [2]]), np.array([1.0, 2.0], "float32"), (4,)), {})],
    "scatter_update": [((A, np.array([[0, 1], [2, 3]]), np.array([5.0, 6.0], "float32")), {})],
    "top_k": [((A, 2), {})], "in_top_k": [((LABELS, A, 2), {})],
    "segment_sum": [((A, IDS), {"num_segments": 4})], "segment_max": [((A, IDS), {"num_segments": 3})],
    "extract_sequences": [((A, 2, 1), {})], "multi_hot": [((np.array([[0, 2], [1, 1]]),), {"num_classes": 4})],
    "solve_triangular": [((TRI, A[:, 0]), {}), ((np.tril(SQ), A[:, :2]), {"lower": True})],
    "det": [((SQ,), {})], "inv": [((SQ,), {})], "solve": [((SQ, A[:, :2]), {})], "slogdet": [((SQ,), {})],
    "cholesky": [((SQ,), {})], "logdet": [((SQ,), {})], "pinv": [((A,), {})], "matrix_rank": [((A,), {})],
    "celu": [((A,), {"alpha": 0.5})], "glu": [((A,), {})], "hard_tanh": [((A * 2,), {})],
    "hard_shrink": [((A,), {})], "soft_shrink": [((A,), {})], "tanh_shrink": [((A,), {})],
    "squareplus": [((A,), {})], "sparse_plus": [((A * 2,), {})], "sparse_sigmoid": [((A * 2,), {})],
    "threshold": [((A, 0.1, -1.0), {})], "normalize": [((A,), {}), ((A,), {"order": 1})],
    "layer_normalization": [((A,), {}), ((A, P[0], B[0]), {"epsilon": 1e-5})],
    "rms_normalization": [((A,), {"scale": P[0]})],
    "batch_normalization": [((A, B[0], P[0], 1), {"offset": A[1], "scale": P[1]})],
    "dot_product_attention": [((QKV, QKV[::-1], QKV), {}), ((QKV, QKV, QKV[::-1]), {"is_causal": True})],
    "erfc": [((A,), {})], "i0": [((A,), {})], "meshgrid": [((A[0], B[0, :3]), {})], "unstack": [((A,), {"axis": 1})],
    "searchsorted": [((np.sort(A[0]), B[0]), {})],
    "array": [((A,), {"dtype": "float64"})], "copy": [((A,), {})], "real": [((A,), {})], "imag": [((A,), {})],
    "conj": [((A,), {})], "conjugate": [((A,), {})], "angle": [((A,), {})], "nextafter": [((A, B), {})],
    "corrcoef": [((A,), {})], "correlate": [((A[0], B[0, :3]), {}), ((A[0], B[0, :3]), {"mode": "full"}),
                                             ((A[0], B[0, :3]), {"mode": "same"})],
    "cholesky_inverse": [((np.linalg.cholesky(SQ).astype("float32"),), {})], "cdist": [((A, B[:2]), {})],
    "psnr": [((P, P[::-1], 2.0), {})], "depth_to_space": [((IMG[:, :2, :2, :].repeat(4, -1), 2), {})],
    "space_to_depth": [((IMG[:, :6, :6, :], 2), {})],
    "adaptive_average_pool": [((IMG, 3), {}), ((IMG, (4, 5)), {}), ((SEQ, 4), {}),
                              ((np.moveaxis(IMG, -1, 1), (3, 2)), {"data_format": "channels_first"})],
    "adaptive_max_pool": [((IMG, (3, 4)), {}), ((SEQ, 5), {}),
                          ((IMG[:1, :5, :4].reshape(1, 5, 4, 3, 1), (2, 3, 2)), {}),
                          ((np.moveaxis(IMG, -1, 1), 4), {"data_format": "channels_first"})],
    "unfold": [((np.moveaxis(IMG, -1, 1), 2), {}),
               ((np.moveaxis(IMG, -1, 1), (2, 3)), {"stride": 2, "padding": 1, "dilation": (2, 1)})],
    "fold": [((RNG.normal(size=(2, 12, 30)).astype("float32"), (7, 6), 2), {}),
             ((RNG.normal(size=(2, 18, 12)).astype("float32"), (7, 6), (2, 3)),
              {"stride": 2, "padding": 1, "dilation": (2, 1)})],
    "rearrange": [((IMG, "b h w c -> b c h w"), {}), ((IMG, "b h w c -> h (b w) c"), {}),
                  ((IMG[:, :6], "b (h1 h) (w w1) c -> (b h1) h w (c w1)"), {"h1": 2, "w1": 3})],
    "lu_factor": [((SQ,), {}), ((A[:, :3],), {})],
}
_KERAS_NEEDS_TENSORS = {"adaptive_average_pool", "adaptive_max_pool"}
DIFFERENTIABLE = ["average", "ptp", "quantile", "median", "fmod", "trapezoid", "nansum", "nanmean", "nanvar",
                  "nanmax", "top_k", "segment_sum", "segment_max", "extract_sequences", "celu",
                  "glu", "hard_shrink", "soft_shrink", "tanh_shrink", "squareplus", "sparse_plus", "sparse_sigmoid",
                  "normalize", "layer_normalization", "rms_normalization", "batch_normalization",
                  "dot_product_attention", "solve_triangular", "det", "inv", "vander", "divide_no_nan", "copy",
                  "corrcoef", "correlate", "cdist", "psnr", "depth_to_space", "space_to_depth", "cholesky_inverse",
                  "adaptive_average_pool", "adaptive_max_pool", "unfold", "fold", "rearrange"]


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_keras_ops_match_keras_ops(name):
    """Each added name gives Keras' values, shapes and dtypes on the same arguments (as TensorFlow tensors
    for the ops whose Keras backend reads a static TensorShape)."""
    for args, kwargs in MORE[name]:
        kargs = [tf.constant(a) if name in _KERAS_NEEDS_TENSORS and isinstance(a, np.ndarray) else a for a in args]
        want = _value(getattr(keras.ops, name)(*kargs, **kwargs))
        got = _value(getattr(ops, name)(*args, **kwargs))
        for g, w in (zip(got, want) if isinstance(want, list) else [(got, want)]):
            assert g.shape == w.shape, (name, kwargs, g.shape, w.shape)
            assert g.dtype == w.dtype or g.dtype.kind == w.dtype.kind == "b", (name, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"ops.{name} {kwargs}")


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_more_keras_ops_gradients_match_tensorflow(name):
    """The gradient of ``Σ ḡ · op(x)`` with respect to every float argument is TensorFlow's (through Keras)."""
    for args, kwargs in MORE[name]:
        floats = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        vs = [adv.Variable(args[i]) for i in floats]
        tvs = [tf.constant(args[i]) for i in floats]      # keras.ops.det refuses a tf.Variable

        def call(fn, sub):
            full_args = list(args)
            for i, v in zip(floats, sub):
                full_args[i] = v
            out = fn(*full_args, **kwargs)
            return out[0] if isinstance(out, (tuple, list)) else out
        y0 = call(getattr(ops, name), vs).numpy()
        g = np.random.default_rng(5).normal(size=y0.shape).astype(y0.dtype)
        g = np.where(np.abs(y0) < 1e30, g, 0).astype(y0.dtype)      # an empty segment's lowest value
        with adv.GradientTape() as tape:
            loss = adv.sum(call(getattr(ops, name), vs) * g)
        with tf.GradientTape() as ttape:
            ttape.watch(tvs)
            loss_tf = tf.reduce_sum(call(getattr(keras.ops, name), tvs) * g)
        for got, want in zip(tape.gradient(loss, vs), ttape.gradient(loss_tf, tvs)):
            want = np.zeros(got.shape) if want is None else np.asarray(tf.convert_to_tensor(want))
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5, err_msg=f"ops.{name} {kwargs}")


def test_sparsemax_is_the_projection_onto_the_simplex():
    """``ops.sparsemax`` follows the definition (Martins & Astudillo 2016): ``max(x − τ, 0)`` summing to 1 along
    the axis, equal to Keras' where Keras' support has one entry (Keras 3.15 sums the running sums over the
    support, so its rows with a larger support do not sum to 1), with the Jacobian of the projection:
    ḡ_x = ḡ − mean of ḡ over the support, on the support, 0 elsewhere."""
    x = adv.Variable(A)
    with adv.GradientTape() as tape:
        y = ops.sparsemax(x)
        loss = adv.sum(y * B)
    p = y.numpy()
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-6)
    assert (p >= 0).all() and (p == 0).any()
    if hasattr(keras.ops, "sparsemax"):             # Keras 3.7 (the floor CI tests) has none
        kp = np.asarray(keras.ops.sparsemax(A))
        one = (p > 0).sum(-1) == 1
        np.testing.assert_allclose(p[one], kp[one], rtol=1e-6)
    support = p > 0
    want = np.where(support, B - (B * support).sum(-1, keepdims=True) / support.sum(-1, keepdims=True), 0.0)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), want, rtol=1e-5, atol=1e-6)


def test_slice_update_writes_the_block_and_splits_the_gradient():
    """``ops.slice_update`` gives Keras' values (checked above); its gradient, which TensorFlow does not define
    (XlaDynamicUpdateSlice), is ḡ for ``updates`` inside the block and ḡ for ``inputs`` outside it."""
    x, u = adv.Variable(A), adv.Variable(np.ones((2, 2), "float32"))
    with adv.GradientTape() as tape:
        loss = adv.sum(ops.slice_update(x, [1, 2], u) * B)
    gx, gu = tape.gradient(loss, [x, u])
    inside = np.zeros(A.shape, bool)
    inside[1:3, 2:4] = True
    np.testing.assert_allclose(gx.numpy(), np.where(inside, 0.0, B))
    np.testing.assert_allclose(gu.numpy(), B[1:3, 2:4])


def test_control_flow_runs_as_keras_ops_does():
    """``cond``, ``while_loop``, ``fori_loop``, ``scan`` (JAX's carry form), ``map``, ``switch`` and
    ``associative_scan`` give Keras' results, and the gradient flows through the Python-run steps."""
    x = A[0]
    assert np.allclose(_value(ops.cond(True, lambda: ops.sum(x), lambda: ops.max(x))), keras.ops.sum(x))
    assert _value(ops.while_loop(lambda i: i < 5, lambda i: (i + 2,), (0,))) == \
        _value(keras.ops.while_loop(lambda i: i < 5, lambda i: (i + 2,), (0,)))
    np.testing.assert_allclose(_value(ops.fori_loop(0, 3, lambda i, v: v * 2 + i, x)),
                               _value(keras.ops.fori_loop(0, 3, lambda i, v: v * 2 + i, x)), rtol=1e-6)
    for reverse in (False, True):
        init = np.zeros(4, "float32")
        got = ops.scan(lambda c, e: (c + e, c * e), init, A, reverse=reverse)
        want = keras.ops.scan(lambda c, e: (c + e, c * e), init, A, reverse=reverse)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_value(g), _value(w), rtol=1e-6)
    np.testing.assert_allclose(_value(ops.map(lambda r: ops.sum(r ** 2), A)),
                               _value(keras.ops.map(lambda r: keras.ops.sum(r ** 2), A)), rtol=1e-6)
    branches = [lambda a: a + 1, lambda a: a * 3]
    np.testing.assert_allclose(_value(ops.switch(1, branches, x)), _value(keras.ops.switch(1, branches, x)))
    for reverse in (False, True):
        np.testing.assert_allclose(_value(ops.associative_scan(ops.add, A, reverse=reverse, axis=1)),
                                   _value(keras.ops.associative_scan(keras.ops.add, A, reverse=reverse, axis=1)),
                                   rtol=1e-6)
    v = adv.Variable(x)
    with adv.GradientTape() as tape:
        carry, _ = ops.scan(lambda c, e: (c * e, c), 1.0, v)
    np.testing.assert_allclose(tape.gradient(carry, v).numpy(), np.prod(x) / x, rtol=1e-5)


def test_jvp_vectorize_and_view_as_keras():
    """``jvp`` (with and without ``has_aux``) and the bit view ``view`` give Keras' results, element-wise
    ``vectorize`` numpy's (with a gradient); a ``vectorize`` signature is refused with the alternative."""
    x, t = A[0], np.ones(4, "float32")
    out, tangent = ops.jvp(lambda v: ops.sum(ops.sin(v) * v), (x,), (t,))
    np.testing.assert_allclose([_value(out), _value(tangent)],
                               [np.sum(np.sin(x) * x), np.sum(np.cos(x) * x + np.sin(x))], rtol=1e-5)
    if hasattr(keras.ops, "jvp"):                   # Keras 3.7 (the floor CI tests) has none
        kout, ktangent = keras.ops.jvp(lambda v: keras.ops.sum(keras.ops.sin(v) * v), (tf.constant(x),),
                                       (tf.constant(t),))
        np.testing.assert_allclose([_value(out), _value(tangent)], [_value(kout), _value(ktangent)], rtol=1e-5)
    out, tangent, aux = ops.jvp(lambda v: (ops.sum(v ** 2), "aux"), (x,), (t,), has_aux=True)
    assert aux == "aux" and np.isclose(_value(tangent), 2 * x.sum(), rtol=1e-5)
    f = ops.vectorize(lambda a, b: a * 2 + b)
    np.testing.assert_allclose(_value(f(A, B[0])), np.vectorize(lambda a, b: a * 2 + b)(A, B[0]), rtol=1e-6)
    v = adv.Variable(A)                          # (Keras' TensorFlow backend has no vectorize; numpy's is the
    with adv.GradientTape() as tape:             # reference)
        loss = adv.sum(ops.vectorize(lambda a: a * a)(v))
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), 2 * A, rtol=1e-6)
    np.testing.assert_array_equal(_value(ops.view(A, "int32")), A.view(np.int32))
    if hasattr(keras.ops, "view"):
        np.testing.assert_array_equal(_value(ops.view(A, "int32")), _value(keras.ops.view(A, "int32")))
    with pytest.raises(ValueError, match="signature= .* not supported.*ops.map"):
        ops.vectorize(lambda a: a, signature="(n)->()")


def test_take_along_axis_defaults_as_each_library_does():
    """``keras.ops.take_along_axis`` flattens by default (``axis=None``); numpy's name ``adv.take_along_axis``
    takes the last axis by default, as ``np.take_along_axis`` from numpy 2.3. Both pass the gradient to the
    picked entries."""
    a = np.array([[3.0, 1.0], [2.0, 5.0]])
    flat = adv.ops.take_along_axis(adv.constant(a), np.array([1, 3]))
    np.testing.assert_array_equal(flat.numpy(), np.take_along_axis(a.ravel(), np.array([1, 3]), axis=0))
    last = adv.take_along_axis(adv.constant(a), np.array([[1], [0]]))
    np.testing.assert_array_equal(last.numpy(), np.take_along_axis(a, np.array([[1], [0]]), axis=-1))
    g = adv.grad(lambda t: adv.sum(adv.ops.take_along_axis(t, np.array([1, 3]))))(adv.constant(a))
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0], [0.0, 1.0]])


_CONV_CASES = [
    ("depthwise_conv", ((2, 7, 6, 3), (3, 2, 3, 2)), dict(strides=2, padding="same")),
    ("depthwise_conv", ((2, 7, 6, 3), (3, 2, 3, 2)), dict(padding="valid")),
    ("depthwise_conv", ((2, 9, 3), (3, 3, 2)), dict(padding="same", dilation_rate=2)),
    ("separable_conv", ((2, 7, 6, 3), (3, 2, 3, 2), (1, 1, 6, 4)), dict(strides=2, padding="same")),
    ("separable_conv", ((2, 9, 3), (3, 3, 2), (1, 6, 4)), dict(padding="valid")),
    ("conv_transpose", ((2, 7, 6, 3), (3, 3, 5, 3)), dict(strides=2, padding="valid")),
    ("conv_transpose", ((2, 7, 6, 3), (3, 3, 5, 3)), dict(strides=2, padding="same")),
    ("conv_transpose", ((2, 7, 6, 3), (3, 3, 5, 3)), dict(strides=2, padding="same", output_padding=1)),
    ("conv_transpose", ((2, 9, 3), (4, 5, 3)), dict(strides=3, padding="valid", output_padding=2)),
]


@pytest.mark.parametrize("name, shapes, kwargs", _CONV_CASES)
def test_depthwise_separable_and_transposed_convs_match_keras_ops(name, shapes, kwargs):
    """``keras.ops.depthwise_conv``, ``separable_conv`` and ``conv_transpose`` (Keras' output lengths with and
    without ``output_padding``): values against ``keras.ops`` on TensorFlow, and the gradient with respect to
    every argument against TensorFlow's tape."""
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    args = [rng.normal(size=s) for s in shapes]
    tvars = [tf.Variable(a) for a in args]
    with tf.GradientTape() as tape:
        ref = getattr(keras.ops, name)(*tvars, **kwargs)
        tloss = tf.reduce_sum(ref * tf.cos(ref))
    want = tape.gradient(tloss, tvars)
    avars = [adv.Variable(a) for a in args]
    with adv.GradientTape() as atape:
        got = getattr(adv.ops, name)(*avars, **kwargs)
        aloss = adv.sum(got * adv.cos(got))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), atol=1e-10)
    for g, w in zip(atape.gradient(aloss, avars), want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-8)


# ----- adaptive pooling, fold / unfold, rearrange, eig, lu_factor and the sub-namespaces ------------------
def test_adaptive_pools_take_pytorchs_windows():
    """Output cell ``i`` of ``m`` pools the input window ``[⌊i·n/m⌋, ⌈(i+1)·n/m⌉)`` of each axis, whatever the
    lengths (more cells than entries too), and ḡ of a mean goes to its window's entries divided by its size."""
    x = RNG.normal(size=(2, 7, 5, 3))
    for m in ((3, 2), (4, 5), (9, 8)):
        want_avg, want_max = np.empty((2, *m, 3)), np.empty((2, *m, 3))
        for i in range(m[0]):
            for j in range(m[1]):
                rows = slice(i * 7 // m[0], -(-(i + 1) * 7 // m[0]))
                cols = slice(j * 5 // m[1], -(-(j + 1) * 5 // m[1]))
                want_avg[:, i, j] = x[:, rows, cols].mean(axis=(1, 2))
                want_max[:, i, j] = x[:, rows, cols].max(axis=(1, 2))
        np.testing.assert_allclose(ops.adaptive_average_pool(x, m).numpy(), want_avg, rtol=1e-12)
        np.testing.assert_allclose(ops.adaptive_max_pool(x, m).numpy(), want_max, rtol=1e-12)
    g = adv.grad(lambda t: adv.sum(ops.adaptive_average_pool(t, (1, 2))))(adv.constant(x))
    np.testing.assert_allclose(g.numpy(), np.broadcast_to(np.array([1, 1, 2, 1, 1])[:, None] / 21, x.shape),
                               rtol=1e-12)         # column 2 lies in both windows [0, 3) and [2, 5)
    with pytest.raises(ValueError, match="adaptive_max_pool: data_format must be"):
        ops.adaptive_max_pool(x, 2, data_format="NHWC")


def test_fold_is_the_transpose_of_unfold():
    """``unfold`` copies every window into a column and ``fold`` adds the columns back: for any ``x`` and ``y``,
    ``⟨unfold(x), y⟩ = ⟨x, fold(y)⟩``, so ``fold(unfold(1))`` counts the windows covering each pixel."""
    x = RNG.normal(size=(2, 3, 7, 6))
    kw = {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}
    cols = ops.unfold(x, **kw)
    y = RNG.normal(size=cols.shape)
    np.testing.assert_allclose(np.sum(cols.numpy() * y), np.sum(x * ops.fold(y, (7, 6), **kw).numpy()), rtol=1e-12)
    counts = ops.fold(ops.unfold(np.ones((1, 1, 4, 4)), 2, stride=1), (4, 4), 2, stride=1).numpy()[0, 0]
    np.testing.assert_array_equal(counts, [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]])
    first = np.arange(16.0).reshape(1, 1, 4, 4)            # column 0: the top-left 2 × 2 window, row-major
    np.testing.assert_array_equal(ops.unfold(first, 2).numpy()[0, :, 0], [0, 1, 4, 5])
    with pytest.raises(ValueError, match=r"fold: x of shape \(2, 12, 5\) does not fit output_size"):
        ops.fold(np.zeros((2, 12, 5)), (4, 4), 2)
    with pytest.raises(ValueError, match="unfold: x of shape .* channels first"):
        ops.unfold(np.zeros((4, 4, 3)), 2)


def test_rearrange_reads_einops_patterns_and_refuses_what_it_cannot():
    x = np.arange(2 * 4 * 6 * 3, dtype=float).reshape(2, 4, 6, 3)
    np.testing.assert_array_equal(ops.rearrange(x, "b h w c -> b c h w").numpy(), x.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(ops.rearrange(x, "b (h1 h) w c -> (b h1) h w c", h1=2).numpy(),
                                  x.reshape(2, 2, 2, 6, 3).reshape(4, 2, 6, 3))
    np.testing.assert_array_equal(ops.rearrange(x, "b h (w w1) c -> b h w (c w1)", w1=3).numpy(),
                                  x.reshape(2, 4, 2, 3, 3).transpose(0, 1, 2, 4, 3).reshape(2, 4, 2, 9))
    for pattern, kwargs, match in [("b h w c -> b c h", {}, "every axis must appear on both sides"),
                                   ("b h w -> b h w", {}, "names 3 input axes, the tensor has 4"),
                                   ("b (h1 h) w c -> b h1 h w c", {}, "give the lengths of all but one"),
                                   ("b (h1 h) w c -> b h1 h w c", {"h1": 3}, "cannot be split"),
                                   ("b ... c -> b c ...", {}, "'...' .* is not supported"),
                                   ("b h w c", {}, "must read 'input axes -> output axes'")]:
        with pytest.raises(ValueError, match=match):
            ops.rearrange(x, pattern, **kwargs)


def test_eig_gives_complex_constants_and_is_refused_while_tracked():
    """``ops.eig`` returns Keras' complex dtypes with ``x v = v diag(w)``; the complex results have no gradient
    here, so while a tape tracks ``x`` it raises a TypeError naming the op, the dtype and ``eigh``."""
    x = np.array([[0.0, -2.0, 1.0], [1.0, 0.5, 0.0], [0.3, 0.0, 1.0]], "float32")
    w, v = ops.eig(x)
    assert (w.dtype, v.dtype, w.shape, v.shape) == (np.complex64, np.complex64, (3,), (3, 3))
    np.testing.assert_allclose(x @ v.numpy(), v.numpy() * w.numpy(), atol=1e-5)
    assert np.iscomplex(w.numpy()).any()                   # a rotation-like block: a complex pair
    if hasattr(keras.ops, "eig"):
        np.testing.assert_allclose(np.sort_complex(w.numpy()), np.sort_complex(keras.ops.eig(x)[0].numpy()),
                                   rtol=1e-5)
    with adv.GradientTape():
        with pytest.raises(TypeError, match=r"ops\.eig: .*complex128 for this float64 input.*adv\.ops\.eigh"):
            ops.eig(adv.Variable(x.astype("float64")))


def test_lu_factor_packs_the_factors_and_its_gradient_raises():
    """``lu_factor``: ``L·U`` is ``A`` with its rows at ``pivots`` (Keras' convention, checked against Keras
    above); a gradient through the factors raises LookupError naming the op, as TensorFlow's."""
    a = adv.Variable(SQ.astype("float64"))
    with adv.GradientTape() as tape:
        lu, pivots = ops.lu_factor(a)
        loss = adv.sum(lu)
    low = np.tril(lu.numpy(), -1) + np.eye(3)
    np.testing.assert_allclose(low @ np.triu(lu.numpy()), SQ[pivots.numpy()], rtol=1e-6)
    assert pivots.dtype == np.int32
    with pytest.raises(LookupError, match="Lu .*adv.ops.lu_factor has no gradient.*adv.ops.solve"):
        tape.gradient(loss, a)


def test_keras_ops_namespaces_hold_the_same_functions():
    """``adv.ops.nn`` / ``linalg`` / ``numpy`` / ``image`` are Keras' sub-namespaces: every name is Keras' and is
    the very function of ``adv.ops`` where Keras has it at the top too; a Keras name that is not here says why."""
    import autodiff_viz.ops.nn as nn_module

    assert nn_module is ops.nn and ops.nn.relu is ops.relu and ops.numpy.sum is adv.sum
    for sub in ("image", "linalg", "nn", "numpy"):
        ours, theirs = getattr(ops, sub), getattr(keras.ops, sub)
        assert set(ours.__all__) <= set(dir(theirs)), (sub, set(ours.__all__) - set(dir(theirs)))
        for name in dir(theirs):
            if name.startswith("_"):
                continue
            if name in ours.__all__:
                assert getattr(ours, name) is getattr(ops, name, getattr(ours, name)), (sub, name)
                continue
            with pytest.raises(AttributeError, match="out of scope here|not implemented here"):
                getattr(ours, name)
    assert len(ops.image.__all__) == 16 and not hasattr(ops, "resize")    # keras.ops.image.resize only


_IMAGE_CASES = [
    ("rgb_to_grayscale", (), {}), ("rgb_to_grayscale", (), {"data_format": "channels_first"}),
    ("rgb_to_hsv", (), {}), ("hsv_to_rgb", (), {"data_format": "channels_first"}),
    ("sobel_edges", (), {}), ("sobel_edges", (), {"data_format": "channels_first"}),
    ("extract_patches", (2,), {}), ("extract_patches", ((3, 2),), {"strides": (2, 1), "padding": "same"}),
    ("extract_patches", (3,), {"strides": 1, "dilation_rate": 2}),
    ("resize", ((4, 9),), {}), ("resize", ((14, 3),), {"interpolation": "nearest"}),
    ("resize", ((4, 9),), {"data_format": "channels_first"}),
]


@pytest.mark.parametrize("name, args, kwargs", _IMAGE_CASES)
def test_keras_ops_image_matches_keras(name, args, kwargs):
    """``adv.ops.image``'s functions give ``keras.ops.image``'s values, dtype and shape (channels last or first)
    and TensorFlow's gradient where TensorFlow has one (``hsv_to_rgb`` has none there, one here)."""
    x = RNG.uniform(size=(2, 7, 6, 3)).astype("float32")
    if kwargs.get("data_format") == "channels_first":
        x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    tx = tf.Variable(x)
    with tf.GradientTape() as ttape:
        want = getattr(keras.ops.image, name)(tx, *args, **kwargs)
        tloss = tf.reduce_sum(want * tf.cos(want))
    v = adv.Variable(x)
    with adv.GradientTape() as tape:
        got = getattr(ops.image, name)(v, *args, **kwargs)
        loss = adv.sum(got * adv.cos(got))
    assert (got.shape, got.dtype) == (tuple(want.shape), want.dtype.as_numpy_dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
    tgrad = ttape.gradient(tloss, tx)
    if tgrad is not None:
        np.testing.assert_allclose(tape.gradient(loss, v).numpy(), tf.convert_to_tensor(tgrad).numpy(), atol=1e-4)
