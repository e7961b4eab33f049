"""TensorFlow's spellings after ``tf.`` → ``adv.``: ``adv.reduce_sum``, ``adv.concat``, ``adv.add_n``,
``adv.clip_by_value``, ``adv.convert_to_tensor`` and ``adv.math.*``.

Each is the package's own op under TensorFlow's name and arguments (the same rule on the tape, the same
gradient), so a guide's cell runs with only the prefix renamed. Values and gradients are checked against
real TensorFlow on the same inputs; where TensorFlow's default differs from numpy's under the same name
(``tf.math.argmax`` and ``tf.math.cumsum`` work along axis 0), ``adv.math`` has TensorFlow's meaning and the
top level keeps numpy's.
"""
import os

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.core import ops

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
tf = pytest.importorskip("tensorflow")

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])
REDUCTIONS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp",
              "reduce_std", "reduce_variance", "reduce_euclidean_norm"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("args, kwargs", [((), {}), ((1,), {}), ((0, True), {}), ((), {"axis": [0, 1]}),
                                          ((), {"axis": -1, "keepdims": True})])
def test_reduce_names_take_tensorflows_arguments_and_give_its_values_and_gradients(name, args, kwargs):
    """``tf.reduce_sum(x, 0, True)``: the third positional argument is ``keepdims`` (numpy's is ``dtype``)."""
    v = adv.Variable(X)
    with adv.GradientTape() as tape:
        y = getattr(adv.math, name)(v, *args, **kwargs)
        loss = adv.sum(y * y)
    tv = tf.Variable(X)
    with tf.GradientTape() as ttape:
        ty = getattr(tf.math, name)(tv, *args, **kwargs)
        tloss = tf.reduce_sum(ty * ty)
    assert y.shape == tuple(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), ttape.gradient(tloss, tv).numpy(), rtol=1e-10)
    if hasattr(tf, name):                                   # TensorFlow's top-level names are top-level here
        assert getattr(adv, name) is getattr(adv.math, name)
    else:                                                   # tf.math.reduce_std: only under adv.math
        with pytest.raises(AttributeError, match=rf"'{name}' \(TensorFlow keeps it in tf\.math\)\. In "
                                                 rf"autodiff_viz: adv\.math\.{name}\(x, axis=\.\.\., keepdims"):
            getattr(adv, name)


def test_reduce_sum_records_the_one_sum_rule():
    """No second implementation: the tape holds the same op as ``adv.sum``'s."""
    v = adv.Variable(X)
    with adv.GradientTape() as tape:
        a = adv.reduce_sum(v, axis=1)
        b = adv.sum(v, axis=1)
    ops_recorded = [node.rule.name for node in tape.record.nodes]
    assert ops_recorded[0] == ops_recorded[1] == "sum"
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_boolean_reductions():
    m = np.array([[True, False], [True, True]])
    for name in ("reduce_all", "reduce_any"):
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(getattr(adv, name)(adv.constant(m), axis).numpy(),
                                          getattr(tf, name)(m, axis).numpy())


@pytest.mark.parametrize("name, args", [
    ("sin", (X,)), ("exp", (X,)), ("log1p", (np.abs(X),)), ("sigmoid", (X,)), ("softplus", (X,)),
    ("log_sigmoid", (X,)), ("square", (X,)), ("rsqrt", (np.abs(X),)), ("reciprocal", (X,)), ("abs", (X,)),
    ("maximum", (X, 0.25)), ("pow", (np.abs(X), 1.5)), ("squared_difference", (X, X[::-1])),
    ("atan", (X,)), ("asinh", (X,)), ("truediv", (X, 2.0)), ("cumsum", (X,)), ("cumprod", (X,)),
    ("add_n", ([X, 2 * X, X[::-1]],)), ("log_softmax", (X,)), ("erf", (X,)),
])
def test_tf_math_functions_match_tensorflow_in_value_and_gradient(name, args):
    sources = [adv.Variable(a) for a in args if isinstance(a, np.ndarray)]
    tsources = [tf.Variable(a) for a in args if isinstance(a, np.ndarray)]

    def call(lib, vars_):
        it = iter(vars_)
        given = [next(it) if isinstance(a, np.ndarray) else
                 ([lib.constant(x) for x in a] if isinstance(a, list) else a) for a in args]
        return getattr(lib.math, name)(*given)

    with adv.GradientTape() as tape:
        y = call(adv, sources)
        loss = adv.sum(y * adv.constant(np.arange(y.size).reshape(y.shape) + 1.0))
    with tf.GradientTape() as ttape:
        ty = call(tf, tsources)
        tloss = tf.reduce_sum(ty * (np.arange(ty.shape.num_elements()).reshape(ty.shape) + 1.0))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-10, atol=1e-12)
    for g, tg in zip(tape.gradient(loss, sources), ttape.gradient(tloss, tsources)):
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-9, atol=1e-12)


def test_tensorflow_meanings_live_under_adv_math_and_numpys_at_the_top_level():
    x = adv.constant(X)
    np.testing.assert_array_equal(adv.math.argmax(x).numpy(), tf.math.argmax(X).numpy())        # axis 0
    np.testing.assert_array_equal(adv.math.argmin(x, axis=1).numpy(), tf.math.argmin(X, axis=1).numpy())
    assert adv.argmax(x).item() == np.argmax(X) == 4                                               # flattened
    np.testing.assert_allclose(adv.math.cumsum(x).numpy(), tf.math.cumsum(X).numpy())            # axis 0
    np.testing.assert_allclose(adv.cumsum(x).numpy(), np.cumsum(X))                             # flattened
    np.testing.assert_array_equal(adv.math.round(adv.constant([0.5, 1.5, 2.5, -0.5])).numpy(),
                                  tf.math.round([0.5, 1.5, 2.5, -0.5]).numpy())                   # half to even
    with pytest.raises(NotImplementedError, match=r"math\.cumsum: exclusive= and reverse= .* adv\.flip"):
        adv.math.cumsum(x, exclusive=True)


def test_top_level_tensorflow_names_are_the_ops_of_the_same_meaning():
    a, b = adv.constant(X), adv.constant(-X)
    np.testing.assert_array_equal(adv.concat([a, b], 1).numpy(), tf.concat([X, -X], 1).numpy())
    np.testing.assert_array_equal(adv.clip_by_value(a, -1.0, 2.0).numpy(), tf.clip_by_value(X, -1.0, 2.0).numpy())
    np.testing.assert_array_equal(adv.add_n([a, b, a]).numpy(), tf.add_n([X, -X, X]).numpy())
    assert adv.convert_to_tensor(a) is a
    got = adv.convert_to_tensor([1, 2], dtype="float32")
    assert isinstance(got, adv.Tensor) and got.dtype == np.float32
    assert adv.math.sigmoid is adv.nn.sigmoid and adv.math.sin is adv.sin is ops.sin


def test_names_still_hinted_are_the_ones_without_a_counterpart_under_that_name():
    """``clamp`` and ``unbind`` are PyTorch's; ``top_k`` lives in ``tf.math``/``tf.nn``, not at TensorFlow's top
    level (``tf.gather``, ``tf.unstack`` are TensorFlow's top-level names and work: test_tf_names.py)."""
    for name in ("clamp", "unbind", "top_k"):
        with pytest.raises(AttributeError, match=rf"no attribute '{name}' \("):
            getattr(adv, name)
