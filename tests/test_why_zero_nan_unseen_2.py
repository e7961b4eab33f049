"""A second set of real public questions about a zero or NaN gradient, none of them cited elsewhere in the project.

Chosen before running ``explain`` on them. Each test cites the question (a GitHub issue of a library or of
PyTorch, TensorFlow or Keras, or a PyTorch forum thread), keeps the user's structure, names and mistake
(reduced), asserts the framework's own gradient (zero, partly zero, or NaN), then the reason, the kind, the
user's line where the cause is (marked ``# <-``) and a fix that fits what the thread says. Where the framework
has since changed its own gradient (PyTorch's ``atan2`` backward at the origin), the question is typed in the
engine, whose rule is still the textbook one, and the docstring says so.

Tests the tool does not pass yet are marked ``xfail(strict=True)`` with what it said instead.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
from test_why_zero_nan_matrix import _line, run_engine, run_tf, run_torch  # noqa: E402
from test_why_zero_nan_questions import _check  # noqa: E402

import autodiff_viz as adv  # noqa: E402


def _fix_any(exp, words):
    msg = exp.message.lower()
    assert any(w.lower() in msg for w in words), exp.message


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------
def q_dca_2(torch):
    torch.manual_seed(0)
    dim, num_outputs = 8, 3
    linear = torch.nn.Linear(dim, num_outputs, bias=False)
    torch.nn.init.zeros_(linear.weight)
    to_aggregate = torch.nn.Sequential(torch.nn.RMSNorm(dim), linear, torch.nn.ReLU())
    hiddens = torch.randn(2, 5, dim)
    values = torch.randn(num_outputs, 2, 5, dim)
    target = torch.randn(2, 5, dim)
    aggregate = to_aggregate(hiddens).permute(2, 0, 1)  # <-
    out = (aggregate.unsqueeze(-1) * values).sum(0)
    return (out - target).pow(2).mean(), linear.weight


def test_deep_cross_attention_2_zero_init_before_relu():
    """https://github.com/lucidrains/deep-cross-attention/issues/2 — ``RMSNorm → Linear(bias=False) → ReLU`` with
    ``nn.init.zeros_(linear.weight)``: the linear's output is exactly 0 everywhere, ReLU′(0) is 0 by convention, so
    "no gradient with which to move the optimizer off of zero (ever)". The maintainer (lucidrains) agreed and
    changed it to a small (non-zero) initialisation, and made the activation configurable. The cause is the ReLU
    whose every input is ≤ 0 (here = 0) — a dead ReLU created by the zero initialisation."""
    exp = _check(run_torch(q_dca_2), q_dca_2, "zero_gradient", "dead_relu", "initiali", "zero")
    assert "relu" in exp.message.lower()


def _gears_loss(torch, pred_p, y_p, ctrl, direction_lambda=1e-3):
    return direction_lambda * torch.sum(
        (torch.sign(y_p - ctrl) - torch.sign(pred_p - ctrl)) ** 2  # <-
    ) / pred_p.shape[0] / pred_p.shape[1]


def q_gears_86(torch):
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    x, ctrl, y_p = torch.randn(8, 6), torch.randn(4), torch.randn(8, 4)
    pred_p = model(x)
    return _gears_loss(torch, pred_p, y_p, ctrl), model.weight


def test_gears_86_sign_in_the_direction_loss():
    """https://github.com/snap-stanford/GEARS/issues/86 — the direction term of GEARS' loss,
    ``sum((sign(y − ctrl) − sign(pred − ctrl))²)``: "torch.sign will result in gradients being almost zero, which
    means that while it won't throw an error, it essentially has no effect". The maintainer (yhr91): "you are
    correct that the sign function is not differentiable and this is an error. One way to circumvent this is to use
    the tanh function." The direction term alone gives the model's weight exactly 0: sign is piecewise constant."""
    exp, g, traced = run_torch(q_gears_86)
    assert not g.any(), g
    # docs/why-zero-nan.md: in PyTorch, sign/round/floor are reported by the why-None walk as non_differentiable_op
    assert (exp.reason, exp.kind) in (("zero_gradient", "zero_almost_everywhere"),
                                      ("non_differentiable_op", None)), str(exp)
    assert exp.location is not None and exp.location.endswith(f":{_line(_gears_loss)}"), (exp.location, str(exp))
    _fix_any(exp, ["tanh", "sigmoid", "straight-through"])


def q_forum_94875(torch):
    torch.manual_seed(0)
    x = torch.randn(1, 1, requires_grad=True)
    y = torch.zeros(1, 1)
    criterion = torch.nn.MSELoss()
    loss = torch.sqrt(criterion(x * 0, y))  # <-
    return loss, x


def test_forum_94875_root_of_a_zero_mse():
    """https://discuss.pytorch.org/t/function-mselossbackward-returned-nan-values-in-its-0th-output/94875 —
    "Function 'MseLossBackward' returned nan values in its 0th output": an RMSE loss, ``torch.sqrt(criterion(...))``,
    whose MSE is exactly 0. The thread's reduction ``torch.sqrt(criterion(x * 0, y))`` with ``y = 0`` gives
    ``x.grad = nan``: sqrt′(0) = ∞, and the MSE's backward multiplies it by 0. (Read here through a page quoting
    the thread, https://e-com-net.com/article/1610540118618177536.htm; the original thread is not stored.) Fix:
    an epsilon inside the root."""
    exp = _check(run_torch(q_forum_94875), q_forum_94875, "nan_gradient", "sqrt_at_zero", "epsilon", "nan")
    assert "sqrt" in exp.message.lower()


def q_population_68(torch):
    torch.manual_seed(0)
    scale_net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1),
                                    torch.nn.ReLU())
    with torch.no_grad():
        scale_net[2].bias.fill_(-5.0)       # the unlucky initial solution: every output pre-activation below 0
    features = torch.rand(16, 4)
    census = torch.rand(16, 1) * 10
    scale = scale_net(features)  # <-
    return torch.nn.functional.mse_loss(scale, census), scale_net[0].weight


def test_population_estimation_68_relu_output_predicts_only_zeros():
    """https://github.com/jvargasmu/population_estimation/issues/68 — "Sometimes the initial solution predicts only
    zeros (due to RELU activation). And hence, no gradients emerge. We should maybe change this to a
    softRelu/Softplus." (the repository's own authors' diagnosis). A regression head ending in ReLU whose
    pre-activations are all below 0 at initialisation: its output is 0 for every example and every weight gets 0."""
    exp, g, traced = run_torch(q_population_68)
    assert not g.any(), g
    assert np.array_equal(traced, g)
    assert (exp.reason, exp.kind) == ("zero_gradient", "dead_relu"), str(exp)
    assert exp.location is not None and exp.location.endswith(f":{_line(q_population_68)}"), (exp.location, str(exp))
    _fix_any(exp, ["softplus", "leaky", "elu"])


# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def q_keras_9664(tf):
    import keras
    x = tf.Variable(np.array([100.0], np.float32))   # logits
    y = np.array([1.0], np.float32)                  # label
    sigmoid_x = tf.nn.sigmoid(x)
    loss = keras.losses.binary_crossentropy(y, sigmoid_x)  # <-
    return loss, x


def test_keras_9664_binary_crossentropy_clips_a_saturated_sigmoid():
    """https://github.com/keras-team/keras/issues/9664 — "binary_crossentropy provides wrong gradient": with a logit
    of 100 after a sigmoid, the gradient is 0 instead of about −1. The answer in the thread: ``sigmoid_x`` is
    evaluated as exactly 1 in float32, and Keras' binary_crossentropy first clips its input into
    [ε, 1 − ε] — 1 is outside, so the clip's derivative is 0. The fix is to give the loss the logits
    (``from_logits=True``)."""
    exp = _check(run_tf(q_keras_9664), q_keras_9664, "zero_gradient", "clipped_probability", "from_logits", "zero")
    assert "clip" in exp.message.lower()


def q_abc_6(tf):
    rng = np.random.default_rng(0)
    tiled_filters = tf.Variable(rng.normal(size=(3, 3, 1, 2)))
    expanded_stddev = tf.constant(rng.normal(size=(3, 3, 1, 2)) * 0.1)
    images = tf.constant(rng.normal(size=(2, 5, 5, 1)))
    binarized_filters = tf.sign(tiled_filters + expanded_stddev, name="binarized_filters")  # <-
    out = tf.nn.conv2d(images, binarized_filters, strides=1, padding="SAME")
    return tf.reduce_mean(out ** 2), tiled_filters


def test_abc_net_6_sign_cuts_the_gradient():
    """https://github.com/layog/Accurate-Binary-Convolution-Network/issues/6 — "No weight update due to sign
    function": ``binarized_filters = tf.sign(tiled_filters + expanded_stddev)`` before the convolution. The
    reporter: tf.sign cuts off the gradient, and ``gradient_override_map({"Sign": "Identity"})`` (a straight-through
    estimator) is needed; the maintainer confirmed those parameters are not trainable because of tf.sign.
    TensorFlow's Sign gradient is zeros, so the filters get exactly 0."""
    exp = _check(run_tf(q_abc_6), q_abc_6, "zero_gradient", "zero_almost_everywhere", "straight-through", "zero")
    assert "sign" in exp.message.lower()


def q_tf_44333(tf):
    x = tf.Variable(np.array([-2.0, 0.5, 3.0]))
    y = tf.clip_by_value(x, -1.0, 1.0)  # <-
    return tf.reduce_sum(y), x


def test_tf_44333_clip_by_value_outside_its_range():
    """https://github.com/tensorflow/tensorflow/issues/44333 — "why gradient of clip_by_value(x) is zero, when x is
    outside of range?" (x = −2 in [−1, 1]). A TensorFlow contributor (bhack) points to
    ``tfp.math.clip_by_value_preserve_gradient``, i.e. a straight-through clip, if the gradient must pass. Partly
    zero: the entries outside the bounds get 0, the one inside gets 1."""
    _check(run_tf(q_tf_44333), q_tf_44333, "partly_zero_gradient", "clipped", "straight-through",
           lambda g: g[1] == 1 and g[0] == 0 and g[2] == 0)


def q_tf_51682(tf):
    x = tf.Variable([[[0.6], [0.6], [0.3]]])
    max_pool_1d = tf.keras.layers.MaxPooling1D(pool_size=3)
    y = max_pool_1d(x)  # <-
    return y, x


def test_tf_51682_max_pooling_sends_the_gradient_to_one_winner():
    """https://github.com/tensorflow/tensorflow/issues/51682 — ``MaxPooling1D(pool_size=3)`` over
    [0.6, 0.6, 0.3] gives the gradient [1, 0, 0] ("only one of the max elements will get the gradients", while
    ``reduce_max`` splits it between the ties). The second 0.6 and the 0.3 get 0 because max pooling routes ḡ to
    a single winner; a smooth maximum (logsumexp / softmax weights) would give every entry a share."""
    exp = _check(run_tf(q_tf_51682), q_tf_51682, "partly_zero_gradient", "never_picked", "logsumexp",
                 lambda g: g.ravel()[0] == 1 and not g.ravel()[1:].any())
    assert "pool" in exp.message.lower() or "max" in exp.message.lower()


# ---------------------------------------------------------------------------
# The engine (PyTorch questions whose op PyTorch has since patched, typed with the engine)
# ---------------------------------------------------------------------------
def q_pytorch_93998():
    x = adv.Variable(np.array([1.0, 0.0, 2.0, 3.0]), name="x")
    y = adv.constant(np.array([2.0, 0.0, 0.0, 0.0]))
    k = np.array([True, False, True, True])
    with adv.GradientTape(persistent=True) as tape:
        out = adv.atan2(y, x)  # <-
        loss = adv.reduce_mean(adv.boolean_mask(out, k))
    return tape, loss, x


def test_pytorch_93998_atan2_masked_after_the_op():
    """https://github.com/pytorch/pytorch/issues/93998 — "Incorrect gradient with atan2 and 'late' masking":
    ``atan2(y[k], x[k])`` gives the right gradient, ``atan2(y, x)[k]`` puts a NaN at the masked entry (0, 0). The
    reporter's own diagnosis ("masking invalid values before applying atan2 gives the correct gradient"); the
    indexing sends 0 to that entry and atan2's derivative there is 0/0. PyTorch 2.x has since special-cased its
    atan2 backward at the origin, so the question is typed in the engine. The fix: mask the input, not the output."""
    exp = _check(run_engine(q_pytorch_93998), q_pytorch_93998, "nan_gradient", "zero_times_inf", "mask the input",
                 lambda g: np.isnan(g[1]) and np.isfinite(g[[0, 2, 3]]).all())
    assert "atan2" in exp.message or "arctan2" in exp.message


def q_e3nn_112():
    pos = adv.Variable(np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]]), name="pos")
    edge_src = np.array([0, 0, 1, 2])
    edge_dst = np.array([0, 1, 2, 2])          # the edges include self-loops: a relative position of 0
    with adv.GradientTape(persistent=True) as tape:
        r = adv.gather(pos, edge_dst) - adv.gather(pos, edge_src)
        angle = adv.atan2(r[:, 1], r[:, 0])  # <-
        kernel = adv.reduce_sum(angle)
    return tape, kernel, pos


def test_e3nn_112_atan2_of_a_zero_relative_position():
    """https://github.com/e3nn/e3nn/issues/112 — "NaN value appears when I calculate a derivative of kernel with
    respect to relative position". The maintainer (mariogeiger): "It was also using the function atan2 and
    evaluating it in (0, 0). The problem it that this function is not differentiable in (0, 0)"; the fix merged in
    e3nn#118 adds an epsilon. (e3nn is PyTorch; PyTorch's atan2 backward now returns 0 at the origin, so the
    question is typed in the engine.) Nothing masks the angle: atan2's own derivative is 0/0 at the self-loops."""
    exp = _check(run_engine(q_e3nn_112), q_e3nn_112, "nan_gradient", "nonfinite_derivative", "epsilon",
                 lambda g: not np.isfinite(g).all())
    assert "atan2" in exp.message or "arctan2" in exp.message
