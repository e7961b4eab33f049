"""Ten more real public questions about a zero or NaN gradient, chosen before running ``explain`` on them.

Each test cites the question (a PyTorch forum thread, a Stack Overflow question, or a GitHub issue of
PyTorch, TensorFlow, JAX), keeps the user's structure and mistake (reduced; JAX and TensorFlow 1 code
translated), asserts the framework's own gradient (zero, partly zero, or NaN), then the reason, the kind,
the user's line where the cause is (marked ``# <-``) and a fix that fits what the accepted answer or the
maintainers said. The two engine questions are the user's TensorFlow code typed with
``import autodiff_viz as tf``.

Measured as found, before the package changed for them: 6 of 10 right. The four misses pass since: acos at 1
under cos(2θ) (named as zero_times_inf "masked by mul"), a fully padded example in MultiheadAttention (the
forward origin not found: the mask's −inf made every input "not finite"), hardtanh exactly on its bounds
(zero_derivative), and ``pow(x, 0.)`` at 0 (named as a square root at 0).
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from test_why_zero_nan_matrix import _line, run_engine, run_tf, run_torch  # noqa: E402
from test_why_zero_nan_questions import _check  # noqa: E402

import autodiff_viz as adv  # noqa: E402


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------
def q_forum_9617(torch):
    x = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    w = torch.nn.Parameter(torch.tensor([[3.0], [4.0]], dtype=torch.float64))
    xlen = x.pow(2).sum(1).pow(0.5).view(-1, 1)  # ||x||
    wlen = w.pow(2).sum(0).pow(0.5).view(1, -1)  # ||w||
    cos_theta = (x.mm(w) / xlen / wlen).clamp(-1, 1)
    theta = cos_theta.acos()  # <-
    cos_2_theta = torch.cos(2 * theta)
    y = cos_2_theta * xlen.view(-1, 1)
    return y.sum(), w


def test_forum_9617_acos_then_cos():
    """https://discuss.pytorch.org/t/nan-gradient-for-torch-cos-torch-acos/9617 — ``y = ‖x‖ cos(2 θ)`` with
    ``θ = acos(clamp(x·w / ‖x‖ / ‖w‖, -1, 1))``: "gradients turn to NaN after several iterations", while
    ``2 cos²θ − 1`` is fine. The answer: "the derivative of acos(x), which is −1/sqrt(1 − x²) ... can lead to
    your NaNs if x is close to 1 or −1". Here x and w are parallel: cos θ = 1 exactly, and acos′(1) = −∞ (times
    the 0 that cos(2θ)′ sends back at θ = 0)."""
    _check(run_torch(q_forum_9617), q_forum_9617, "nan_gradient", "acos_at_one", "open interval", "nan")


def q_forum_12851(torch):
    def unit_vector(vector):
        return vector / vector.norm()

    def angle_between(vector0, vector1):
        unit_vector0 = unit_vector(vector0)
        unit_vector1 = unit_vector(vector1)
        return unit_vector0.dot(unit_vector1).clamp(-1.0, 1.0).acos()  # <-

    v0 = torch.nn.Parameter(torch.tensor([1.0, 0.0], dtype=torch.float64))
    v1 = torch.tensor([2.0, 0.0], dtype=torch.float64)
    return angle_between(v0, v1), v0


def test_forum_12851_angle_between_parallel_vectors():
    """https://discuss.pytorch.org/t/numerically-stable-acos-dot-product-derivative/12851 — the angle between two
    vectors, ``dot(u0, u1).clamp(-1.0, 1.0).acos()``, as part of a cost: NaNs during training, "because the
    derivative of acos approaches infinity as the input approaches −1 or 1". The clamp does not help at the bound
    itself; the accepted fix: "clamp(-1.0 + eps, 1.0 - eps) instead of clamp(-1.0, 1.0)"."""
    _check(run_torch(q_forum_12851), q_forum_12851, "nan_gradient", "acos_at_one", "open interval", "nan")


def q_pytorch_40932(torch):
    torch.manual_seed(0)
    self_attn = torch.nn.MultiheadAttention(embed_dim=4, num_heads=1)
    src = torch.randn(3, 2, 4)                      # (seq, batch, embed); the second example is all <pad>
    src_key_padding_mask = torch.tensor([[False, False, True], [True, True, True]])
    src2, attn = self_attn(src, src, src, key_padding_mask=src_key_padding_mask)  # <-
    return src2.sum(), self_attn.in_proj_weight


def test_pytorch_40932_fully_padded_example_in_multihead_attention():
    """https://github.com/pytorch/pytorch/issues/40932 — ``MultiheadAttention`` with a ``key_padding_mask`` that is
    all True for one example ("the whole input is padded"): every score of its rows is filled with −inf, the
    softmax of a row of −inf is 0/0 = NaN (maintainers in pytorch#41508 and #103749: "the expected behavior of
    softmax"), and the NaN reaches every weight. The forward pass is already NaN; the answer should name the
    softmax over the fully masked row, at the attention call."""
    exp = _check(run_torch(q_pytorch_40932), q_pytorch_40932, "nan_gradient", "fully_masked_row", "softmax",
                 "nan")
    assert "-inf" in exp.message or "−inf" in exp.message or "−∞" in exp.message, exp.message


def q_pytorch_120258(torch):
    t = torch.nn.Parameter(torch.tensor([-1.0, 0, 1.0], dtype=torch.float32))
    t_htnh = torch.nn.functional.hardtanh(t)  # <-
    return t_htnh.sum(), t


def test_pytorch_120258_hardtanh_at_its_bounds():
    """https://github.com/pytorch/pytorch/issues/120258 — ``hardtanh`` of [-1, 0, 1] backpropagates [0, 1, 0]:
    the entries sitting exactly on the bounds ±1 get no gradient (the kernel treats ``x <= min`` and
    ``x >= max`` as clipped; the maintainers marked it actionable). Partly zero, from a clip at its bounds;
    ``torch.clamp`` passes the gradient there (pytorch#184574)."""
    _check(run_torch(q_pytorch_120258), q_pytorch_120258, "partly_zero_gradient", "clipped", "clamp",
           lambda g: g[1] == 1 and g[0] == 0 and g[2] == 0)


# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def q_tf_20355(tf):
    def transfer(x):
        return tf.where(x < 0, 1. / (1. - x), tf.math.log(x + 1))  # <-

    xt = tf.Variable([1.0, -1.0])
    return transfer(xt), xt


def test_tf_20355_where_with_a_reciprocal_and_a_log():
    """https://github.com/tensorflow/tensorflow/issues/20355 — ``tf.where(x < 0, 1/(1 − x), log(x + 1))`` has a
    NaN gradient at x = 1 and at x = −1: "the gradient computation computes the gradient through both
    conditions, which may result in a division by zero or log of zero". The TensorFlow maintainers' note for
    ``tf.where`` (tensorflow#38467): avoid computing the dangerous branch on those inputs, a second ``tf.where``
    replacing them with safe ones."""
    _check(run_tf(q_tf_20355), q_tf_20355, "nan_gradient", "unselected_where_branch", "double-where", "nan")


def q_tf_89110(tf):
    def safe_sigmoid(logits):
        clipped = tf.clip_by_value(logits, -10, 10)  # <-
        return tf.sigmoid(clipped)

    x = tf.constant(np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 3.0]]))
    W = tf.Variable(np.array([[8.0], [9.0]]))
    Y = tf.constant(np.array([[0.0], [1.0], [0.0]]))
    logits_hat = x @ W
    p_hat = safe_sigmoid(logits_hat)  # gradients break here
    loss = -tf.reduce_mean(Y * tf.math.log(p_hat) + (1 - Y) * tf.math.log(1 - p_hat))
    return loss, W


def test_tf_89110_safe_sigmoid_clips_every_logit():
    """https://github.com/tensorflow/tensorflow/issues/89110 — "gradients are zero when clipping values in function
    definition": a "numerically stable" sigmoid that clips its logits to [−10, 10]. The maintainers: working as
    intended, "the mathematical derivative of a clipping operation is exactly 0" outside the range (the
    gradient-preserving clip, ``tfp.math.clip_by_value_preserve_gradient``, is a straight-through estimator). All
    logits here are above 10, so W gets exactly 0."""
    _check(run_tf(q_tf_89110), q_tf_89110, "zero_gradient", "clipped", "straight-through", "zero")


def q_jax_12409(tf):
    value = tf.Variable([1.0])
    result = tf.pow(value - tf.floor(value), tf.constant([0.0]))  # <-
    return result, value


def test_jax_12409_power_zero_of_a_zero_base():
    """https://github.com/jax-ml/jax/issues/12409 — ``power(value − floor(value), 0)`` at value = 1 has a NaN
    gradient (TensorFlow too). jakevdp: "f′(x) = (1 − d⌊x⌋/dx) · 0 · (x − ⌊x⌋)^−1": the power's derivative
    b·a^(b−1) is 0 · 0^−1 = 0 · ∞ at a = 0, b = 0; the user's workaround was nan_to_num. Keeping the base away from
    0 (an epsilon) keeps the factor finite."""
    exp = _check(run_tf(q_jax_12409), q_jax_12409, "nan_gradient", "zero_times_inf", "epsilon", "nan")
    assert "pow" in exp.message.lower(), exp.message


def _bce_model():
    import keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, activation="sigmoid")])
    model.layers[0].kernel.assign(np.array([[20.0], [20.0]], dtype="float32"))
    return model


def my_custom_loss(y_true, y_pred):
    from keras import ops as K
    t_loss = (-1) * (y_true * K.log(y_pred) + (1 - y_true) * K.log(1 - y_pred))  # <-
    return K.mean(t_loss)


def test_so_48951109_keras_custom_binary_crossentropy():
    """https://stackoverflow.com/questions/48951109 — a custom binary cross-entropy
    ``-(y log p + (1 − y) log(1 − p))`` after a sigmoid output layer gives NaN after a few iterations, although
    "the value of p should be between 0 and 1". The answer: the naive formula "will suffer from numerical problems
    at 0 output or larger than one output, e.g. log(0) -> NaN"; TensorFlow's
    ``sigmoid_cross_entropy_with_logits`` reformulates it on the logits. Here a logit of 40 makes the float32
    sigmoid exactly 1 for an example labelled 0: log(1 − p) = log(0). Keras 3: ``keras.ops`` for ``K``."""
    tf = pytest.importorskip("tensorflow")
    model = _bce_model()
    x = np.array([[1.0, 1.0], [-0.1, 0.05]], dtype="float32")
    y = np.array([[0.0], [1.0]], dtype="float32")
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = my_custom_loss(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
    assert not np.isfinite(grads[0].numpy()).all()
    exp = rec.explain(loss, model.layers[0].kernel)
    assert (exp.reason, exp.kind) == ("nan_gradient", "log_of_zero"), str(exp)
    assert exp.location is not None and exp.location.endswith(f":{_line(my_custom_loss)}"), (exp.location, str(exp))
    assert "from_logits" in exp.message, exp.message


# ---------------------------------------------------------------------------
# The engine: the user's TensorFlow code, typed with ``import autodiff_viz as tf``
# ---------------------------------------------------------------------------
def q_so_33712178():
    import autodiff_viz as tf
    h = tf.constant(np.array([[8.0, 0.0], [0.0, 1.0]]))
    y_ = tf.constant(np.array([[1.0, 0.0], [0.0, 1.0]]))
    W = tf.Variable(np.array([[100.0, 0.0], [0.0, 1.0]]), name="W")
    b = tf.Variable(np.zeros(2), name="b")
    with tf.GradientTape(persistent=True) as tape:
        y_conv = tf.nn.softmax(tf.matmul(h, W) + b)
        cross_entropy = -tf.reduce_sum(y_ * tf.log(y_conv))  # <-
    return tape, cross_entropy, W


def test_so_33712178_tensorflow_nan_bug():
    """https://stackoverflow.com/questions/33712178/tensorflow-nan-bug — ``cross_entropy =
    -tf.reduce_sum(y_*tf.log(y_conv))`` turns NaN. The accepted answer: "certain classes could be excluded with
    certainty after a while, resulting in y_conv=0 for that sample ... it yields 0*log(0) ... Hence the NaN";
    the fix: ``tf.log(tf.clip_by_value(y_conv, 1e-10, 1.0))``. Here the first example's logits differ by 800, so
    its softmax has an exact 0."""
    exp = _check(run_engine(q_so_33712178), q_so_33712178, "nan_gradient", "log_of_zero", "clip",
                 lambda g: not np.isfinite(g).all())
    assert "log" in exp.message


def q_lucid_68():
    import autodiff_viz as tf
    rng = np.random.default_rng(0)
    image = tf.Variable(rng.uniform(0.4, 0.6, size=(1, 8, 8, 3)), name="image")   # a grey, noisy start
    kernel = tf.constant(rng.normal(size=(3, 3, 3, 4)) * 0.1)
    bias = tf.constant(np.array([0.1, 0.2, -3.0, 0.3]))                            # channel 2 is off on grey
    with tf.GradientTape(persistent=True) as tape:
        layer = tf.nn.relu(tf.nn.conv2d(image, kernel, 1, "SAME") + bias)  # <-
        objective = tf.reduce_mean(layer[..., 2])
    return tape, objective, image


def test_lucid_68_visualising_a_relu_channel_that_is_off():
    """https://github.com/tensorflow/lucid/issues/68 — feature visualisation: maximising a channel of a deeper layer
    leaves the image grey. colah: "it's possible that your initial image causes the neuron to take a zero value.
    When ReLU neurons are zero, no gradient flows through them, and so they never start to optimize"; the fix is a
    gradient override for the first steps (lucid's ``redirected_relu_grad``, a leaky gradient). The channel's
    pre-activation is negative everywhere on the starting image: the image's gradient is exactly 0."""
    exp = _check(run_engine(q_lucid_68), q_lucid_68, "zero_gradient", "dead_relu", "leaky", "zero")
    assert "relu" in exp.message.lower()
