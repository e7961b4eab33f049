"""Real public questions about a zero or NaN gradient, reduced and answered by ``explain``.

Each test cites the question, keeps its structure and its mistake (translated
to the engine, PyTorch or TensorFlow where the original is JAX or an old
release), asserts the framework's own gradient (zero, or NaN), and then the
reason, the kind, the user's line (marked ``# <-``) and a fix that fits.
The last tests are the other side: correct training steps of the notebooks'
models, and of a torch and a Keras model, get ``connected`` with nothing dying.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from test_why_zero_nan_matrix import _line, run_engine, run_tf, run_torch  # noqa: E402

import autodiff_viz as adv  # noqa: E402


def _check(result, case, reason, kind, fix, gradient):
    exp, g, traced = result
    if gradient == "nan":
        assert not np.isfinite(g).all(), g
    elif gradient == "zero":
        assert not g.any(), g
    else:
        assert gradient(g), g
    assert np.array_equal(traced, g, equal_nan=True)
    assert (exp.reason, exp.kind) == (reason, kind), str(exp)
    assert exp.location is not None and exp.location.endswith(f":{_line(case)}"), (exp.location, str(exp))
    assert fix.lower() in exp.message.lower(), exp.message
    return exp


# ---------------------------------------------------------------------------
# NaN
# ---------------------------------------------------------------------------
def q_jax_347():
    x = adv.Variable(np.array([[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]]), name="x")
    with adv.GradientTape(persistent=True) as tape:
        n = adv.sqrt(adv.sum(x ** 2, axis=1))  # <-
        ones = adv.ones_like(n)
        y = adv.where(n > 0.5, n, ones)
        loss = adv.sum(y)
    return tape, loss, x


def test_jax_347_sqrt_then_where():
    """https://github.com/jax-ml/jax/issues/347 — the row norm ``sqrt(sum(x**2, 1))`` of a zero row is replaced
    by 1 with ``where``, yet the gradient is NaN: the where sends 0 to that row, and 0 · sqrt′(0) = 0 · ∞."""
    exp = _check(run_engine(q_jax_347), q_jax_347, "nan_gradient", "unselected_where_branch", "x_safe", "nan")
    assert "0 · ∞" in exp.message


def q_jax_5798(torch):
    x = torch.nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
    return torch.where(x < 1.0, x, torch.sqrt(x)), x  # <-


def test_jax_5798_where_piecewise_at_zero():
    """https://github.com/jax-ml/jax/issues/5798 — ``where(x < 1, x, sqrt(x))`` differentiated at 0 gives NaN
    although the first branch is the one taken (PyTorch does the same)."""
    _check(run_torch(q_jax_5798), q_jax_5798, "nan_gradient", "unselected_where_branch", "double-where", "nan")


def q_jax_1052():
    a = adv.Variable(np.array([3.0, 0.0, -5.0]), name="a")
    with adv.GradientTape(persistent=True) as tape:
        b = adv.arctan2(a, a)  # <-
        temp = adv.constant(np.array([0.0, 1.0, 0.0]))
        c = adv.where(temp > 0.5, 0.0, b)
        loss = adv.sum(c)
    return tape, loss, a


def test_jax_1052_arctan2_masked():
    """https://github.com/jax-ml/jax/issues/1052 — ``arctan2(a, a)`` at a = 0 is masked out by ``where``; the
    gradient of that entry is still NaN (∂arctan2 at (0, 0) is 0/0)."""
    with np.errstate(all="ignore"):
        result = run_engine(q_jax_1052)
    _check(result, q_jax_1052, "nan_gradient", "unselected_where_branch", "double-where",
           lambda g: np.isnan(g[1]) and np.isfinite(g[[0, 2]]).all())


def q_jax_2630(tf):
    x = tf.Variable(1.0, dtype=tf.float64)
    return tf.where(x > 0, tf.constant(0.0, tf.float64), x * np.inf), x  # <-


def test_jax_2630_where_with_inf_branch():
    """https://github.com/jax-ml/jax/issues/2630 — ``where(x > 0, 0, x * inf)`` at x = 1 gives a NaN gradient
    (TensorFlow too): the chain rule multiplies the where's 0 by the unselected branch's ∞."""
    _check(run_tf(q_jax_2630), q_jax_2630, "nan_gradient", "unselected_where_branch", "where(cond, x, 1)", "nan")


def q_pytorch_2421(torch):
    x = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    return x.pow(2).sum().sqrt(), x  # <-


def test_pytorch_2421_norm_of_zero():
    """https://github.com/pytorch/pytorch/issues/2421 — the 2-norm of a zero vector has a NaN gradient. x.norm()
    now returns the subgradient 0 (pytorch#2775), but the spelled-out ``x.pow(2).sum().sqrt()`` the PR mentions
    still gives NaN."""
    exp = _check(run_torch(q_pytorch_2421), q_pytorch_2421, "nan_gradient", "sqrt_at_zero", "epsilon", "nan")
    assert "1e-12" in exp.message


def q_pytorch_4320(tf):
    a = tf.Variable(np.zeros((16, 3)))
    return tf.reduce_mean(tf.math.reduce_std(a, axis=0)), a  # <-


def test_pytorch_4320_std_of_constant():
    """https://github.com/pytorch/pytorch/issues/4320 — ``std`` of constant data has a NaN gradient (the
    standard deviation is 0 and its derivative divides by it). PyTorch now returns 0; TensorFlow's reduce_std
    still gives NaN."""
    _check(run_tf(q_pytorch_4320), q_pytorch_4320, "nan_gradient", "sqrt_at_zero", "epsilon", "nan")


def q_tf_12071(tf):
    X = tf.Variable(np.array([[1.0], [0.0], [1e-16]]))
    return tf.norm(X, ord="euclidean", axis=1), X  # <-


def test_tf_12071_norm_rows_with_a_zero():
    """https://github.com/tensorflow/tensorflow/issues/12071 — ``tf.norm(X, axis=1)``: the row that is 0 gets a
    NaN gradient, the others are fine."""
    _check(run_tf(q_tf_12071), q_tf_12071, "nan_gradient", "sqrt_at_zero", "epsilon",
           lambda g: np.isnan(g[1]).all() and np.isfinite(g[[0, 2]]).all())


def q_mlx_3692():
    x = adv.Variable(np.array([0.0, 3.0]), name="x")
    y = adv.constant(np.array([0.0, 4.0]))
    with adv.GradientTape(persistent=True) as tape:
        rho = adv.sqrt(x * x + y * y)  # <-
        rho_safe = adv.maximum(rho, 1e-10)
        loss = adv.sum(rho_safe)
    return tape, loss, x


def test_mlx_3668_sqrt_guarded_by_maximum():
    """https://github.com/ml-explore/mlx/pull/3692 (issue ml-explore/mlx#3668) — ``rho = sqrt(x² + y²)`` guarded
    by ``maximum(rho, 1e-10)`` still gives NaN at x = y = 0: the maximum sends 0 to rho, and 0 · sqrt′(0) is
    NaN."""
    exp = _check(run_engine(q_mlx_3692), q_mlx_3692, "nan_gradient", "zero_times_inf", "epsilon",
                 lambda g: np.isnan(g[0]) and np.isfinite(g[1]))
    assert "maximum" in exp.message


def q_pytorch_94700(torch):
    x = torch.nn.Parameter(torch.randn(1))
    w = torch.tensor(float("nan"))
    return (x * w).nan_to_num(0).sum(), x  # <-


def test_pytorch_94700_nan_to_num_does_not_clean_the_gradient():
    """https://github.com/pytorch/pytorch/issues/94700 — ``z = (x * w).nan_to_num(0)`` is finite, yet x.grad is
    NaN: nan_to_num sends back 0 for the replaced entries, and the product's derivative there is w = nan (the
    maintainers: expected behaviour, see pytorch#89543)."""
    exp = _check(run_torch(q_pytorch_94700), q_pytorch_94700, "nan_gradient", "zero_times_inf", "mask the input",
                 "nan")
    assert "masked" in exp.message


def q_pytorch_6394(torch):
    x = torch.nn.Parameter(torch.tensor([1.0]))
    return torch.sqrt(torch.pow(x - 1, 2)).sum(), x  # <-


def test_pytorch_6394_sqrt_of_a_square_at_zero():
    """https://github.com/pytorch/pytorch/issues/6394 — ``sqrt((x − 1)²)`` at x = 1 has a NaN gradient although it
    equals |x − 1|: sqrt′ is infinite at 0 and the chain rule multiplies it by 2(x − 1) = 0."""
    _check(run_torch(q_pytorch_6394), q_pytorch_6394, "nan_gradient", "sqrt_at_zero", "epsilon", "nan")


def q_pytorch_26799(torch):
    divide_tensor = torch.tensor([1.0, 0.0, 1.0])
    weight = torch.nn.Parameter(torch.ones(3))
    tmp = weight / divide_tensor  # <-
    return tmp[0], weight


def test_pytorch_26799_unrelated_entry_divided_by_zero():
    """https://github.com/pytorch/pytorch/issues/26799 — ``weight / divide_tensor`` with a 0 in the denominator,
    and only ``tmp[0]`` in the loss: the second entry's gradient is NaN, not 0 (0 from the indexing times
    1/0 = inf)."""
    exp = _check(run_torch(q_pytorch_26799), q_pytorch_26799, "nan_gradient", "zero_times_inf", "epsilon",
                 lambda g: g[0] == 1 and np.isnan(g[1]) and g[2] == 0)
    assert "denominator" in exp.message


def q_pytorch_17455(torch):
    x = torch.nn.Parameter(torch.tensor([0.0, 100.0]))
    f = torch.log(torch.exp(x) + 1)  # <-
    clean_f = torch.zeros(100)
    clean_f[0] = f[0]
    return clean_f.sum(), x


def test_pytorch_17455_softplus_spelled_out_overflows():
    """https://github.com/pytorch/pytorch/issues/17455 — ``log(exp(x) + 1)`` at x = 100 in float32: exp overflows
    to inf, and although only ``f[0]`` is used, x's second gradient is NaN. The fix names softplus, which never
    overflows."""
    exp = _check(run_torch(q_pytorch_17455), q_pytorch_17455, "nan_gradient", "zero_times_inf", "softplus",
                 lambda g: g[0] == 0.5 and np.isnan(g[1]))
    assert "overflow" in exp.message


def q_pytorch_187297(torch):
    xt = torch.nn.Parameter(torch.tensor([-1.0, -4.0]))
    return torch.where(xt > 0, torch.sqrt(xt), xt).sum(), xt  # <-


def test_pytorch_187297_where_with_an_inactive_sqrt_branch():
    """https://github.com/pytorch/pytorch/issues/187297 — every entry is negative, so the where selects ``xt``
    and the gradient should be 1, yet it is NaN: the unselected sqrt of a negative number is NaN, and 0 · nan is
    NaN. The fix is the double-where."""
    exp = _check(run_torch(q_pytorch_187297), q_pytorch_187297, "nan_gradient", "unselected_where_branch",
                 "double-where", "nan")
    assert "negative" in exp.message


def q_jax_20601():
    beta = adv.Variable(2.3, name="beta")
    x = adv.constant(np.nan)
    with adv.GradientTape(persistent=True) as tape:
        y = adv.where(False, beta * x, 1.0)  # <-
    return tape, y, beta


def test_jax_20601_nan_in_the_unselected_branch():
    """https://github.com/jax-ml/jax/issues/20601 — ``select(False, beta * x, 1.0)`` with x = nan: the value is
    1 but the gradient for beta is NaN: ∂(beta·x)/∂beta = x = nan, times the 0 the select sends back."""
    with np.errstate(all="ignore"):
        result = run_engine(q_jax_20601)
    exp = _check(result, q_jax_20601, "nan_gradient", "unselected_where_branch", "double-where", "nan")
    assert "0 · nan" in exp.message


# ---------------------------------------------------------------------------
# Zero
# ---------------------------------------------------------------------------
XOR = {}


def _train_xor(torch):
    """The question's training, before the recording: 200 Adam steps from seed 24."""
    torch.manual_seed(24)
    fc1, fc2 = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    for m in (fc1, fc2):
        torch.nn.init.kaiming_normal_(m.weight)
        m.bias.data.fill_(0.01)
    opt = torch.optim.Adam(list(fc1.parameters()) + list(fc2.parameters()), lr=0.01)
    inputs = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=torch.float32)
    labels = torch.tensor([[0], [1], [1], [0]], dtype=torch.float32)
    for _ in range(200):
        opt.zero_grad()
        torch.nn.BCELoss()(torch.sigmoid(fc2(torch.relu(fc1(inputs)))), labels).backward()
        opt.step()
    opt.zero_grad()
    XOR.update(fc1=fc1, fc2=fc2, inputs=inputs, labels=labels)


def q_xor_dead_relu(torch):
    fc1, fc2, inputs, labels = XOR["fc1"], XOR["fc2"], XOR["inputs"], XOR["labels"]
    h = torch.relu(fc1(inputs))  # <-
    return torch.nn.BCELoss()(torch.sigmoid(fc2(h)), labels), fc1.weight


def test_xor_dead_relu_after_training():
    """https://juejin.cn/post/7449652882648940555 — an XOR MLP (Linear(2, 2) → ReLU → Linear(2, 1) → sigmoid,
    Kaiming init, Adam lr 0.01, seed 24) whose loss stays high: a hidden ReLU unit is inactive for all four
    inputs, so the weights into it get no gradient."""
    _train_xor(pytest.importorskip("torch"))
    exp = _check(run_torch(q_xor_dead_relu), q_xor_dead_relu, "partly_zero_gradient", "dead_relu", "LeakyReLU",
                 lambda g: g.any() and not g.all(axis=1).any())
    assert "units" in exp.message


def q_zero_init(torch):
    torch.manual_seed(0)
    a_1 = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())
    a_2 = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())
    torch.nn.init.zeros_(a_1[0].weight)
    torch.nn.init.zeros_(a_2[0].weight)
    x = torch.rand(4, 10)
    out = a_2(a_1(x))  # <-
    return out.sum(), a_1[0].weight


def test_lavt_ris_25_zero_initialised_layers():
    """https://github.com/yz93/LAVT-RIS/issues/25 — two zero-initialised layers (nn.init.zeros_ on both
    weights): the first layer's weight gradient is all zero, because the second multiplies by a zero matrix."""
    exp = _check(run_torch(q_zero_init), q_zero_init, "zero_gradient", "zero_operand", "initialise", "zero")
    assert "zero on every entry" in exp.message


def q_zero_last_conv():
    model = adv.Sequential([adv.layers.Conv2D(4, 3, padding="same", activation="relu"),
                            adv.layers.Conv2D(1, 3, padding="same", kernel_initializer="zeros")])
    x = adv.constant(np.random.default_rng(1).normal(size=(2, 6, 6, 1)))
    model(x)
    with adv.GradientTape(persistent=True) as tape:
        y = model(x)  # <-
        loss = adv.mean((y - 1.0) ** 2)
    return tape, loss, model.layers[0].kernel


def test_zero_initialised_last_conv():
    """https://github.com/smallflyingpig/universal_adversarial_perturbation_generative_network_for_speaker_recognition/issues/4
    — "if you initialize the last layer as zeros, the gradients will also be zeros for all layers": the
    earlier convolution's kernel gets exactly 0 (the last layer's own kernel does get a gradient)."""
    exp = _check(run_engine(q_zero_last_conv), q_zero_last_conv, "zero_gradient", "zero_operand", "initialise",
                 "zero")
    assert "conv" in exp.message


def q_norm_squared_at_zero():
    def loss(x):
        return np.linalg.norm(x) ** 2  # <-
    x = adv.Variable(np.zeros(3))
    with adv.GradientTape(persistent=True) as tape:
        y = loss(x)
    return tape, y, x


def test_hips_autograd_586_norm_squared_at_zero():
    """https://github.com/HIPS/autograd/issues/586 — ``grad`` of ``np.linalg.norm(x) ** 2`` at ``x = 0`` is NaN in
    HIPS autograd (the norm's derivative x/‖x‖ is 0/0 there). Here the norm takes the subgradient 0 at 0, as
    PyTorch does, and the gradient is the true one, 2x = 0; ``explain`` says why it is 0 — the bottom of a square,
    a stationary point — and that it is the right answer, not a lost one."""
    exp = _check(run_engine(q_norm_squared_at_zero), q_norm_squared_at_zero, "zero_gradient", "stationary_point",
                 "minimum", "zero")
    assert "right answer" in exp.message


def q_cos_at_its_crest():
    theta = adv.Variable([0.0, 0.0, 0.5])
    with adv.GradientTape(persistent=True) as tape:
        y = adv.sum(adv.cos(theta))  # <-
    return tape, y, theta


def test_a_smooth_function_at_its_crest_is_stationary_not_dead():
    """The same mechanism, not a case: cos at 0 has slope −sin 0 = 0 (at π, float's sin π is 1e-16, not 0); the
    third entry still gets a gradient, and the zero entries are named as a stationary point of cos."""
    exp = _check(run_engine(q_cos_at_its_crest), q_cos_at_its_crest, "partly_zero_gradient", "stationary_point",
                 "initialis", lambda g: g[2] != 0 and not g[:2].any())
    assert "−sin(a)" in exp.message


def _sqrt_after_relu_model():
    import keras
    keras.utils.set_random_seed(0)
    inp = keras.Input(shape=(10, 10), dtype="float32", name="raw_image_left")
    test = keras.layers.Dense(units=64, activation="relu", name="middle")(inp)
    test = keras.layers.Flatten()(test)
    test = keras.layers.Lambda(lambda x: keras.ops.sqrt(x), name="error_point")(test)  # <-
    output = keras.layers.Dense(1, name="out")(test)
    return keras.Model(inp, output)


def test_keras_13203_sqrt_in_a_lambda_after_relu():
    """https://github.com/keras-team/keras/issues/13203 — ``Dense(relu) → Flatten → Lambda(sqrt) → Dense``: the
    loss turns NaN (the user found it on CPU); removing the sqrt line fixes it. The ReLU's zeros reach the root,
    whose derivative 1/(2√x) is infinite there, and infinity times ReLU's 0 is NaN. Reduced with the user's
    layers and names, Keras 3 (``keras.ops.sqrt`` for ``K.sqrt``)."""
    tf = pytest.importorskip("tensorflow")
    import keras
    model = _sqrt_after_relu_model()
    rng = np.random.default_rng(0)
    x, y = rng.random((4, 10, 10)).astype("float32"), rng.random((4, 1)).astype("float32")
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.mean_squared_error(y, model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
    assert not np.isfinite(grads[0].numpy()).all()
    exp = rec.explain(loss, model.get_layer("middle").kernel)
    assert (exp.reason, exp.kind) == ("nan_gradient", "sqrt_at_zero"), str(exp)
    assert exp.location.endswith(f":{_line(_sqrt_after_relu_model)}")
    assert "epsilon" in exp.message


# ---------------------------------------------------------------------------
# No false alarm: correct training steps
# ---------------------------------------------------------------------------
def _healthy(exps):
    exps = exps if isinstance(exps, list) else [exps]
    for e in exps:
        assert e.reason == "connected" and e.kind in (None, "unused_rows"), str(e)


@pytest.mark.parametrize("arch", ["mlp", "cnn", "lstm"])
def test_no_false_alarm_engine(arch):
    rng = np.random.default_rng(3)
    if arch == "mlp":
        model = adv.Sequential([adv.layers.Dense(32, activation="relu"), adv.layers.Dense(10)])
        x, y = rng.normal(size=(64, 20)), rng.integers(0, 10, 64)
    elif arch == "cnn":
        model = adv.Sequential([adv.layers.Conv2D(8, 3, activation="relu"), adv.layers.MaxPooling2D(),
                                adv.layers.Flatten(), adv.layers.Dense(10)])
        x, y = rng.normal(size=(16, 8, 8, 1)), rng.integers(0, 10, 16)
    else:
        model = adv.Sequential([adv.layers.LSTM(8), adv.layers.Dense(10)])
        x, y = rng.normal(size=(16, 6, 4)), rng.integers(0, 10, 16)
    model(adv.constant(x))
    with adv.GradientTape() as tape:
        loss = adv.losses.sparse_categorical_crossentropy(adv.constant(y), model(adv.constant(x)), from_logits=True)
        loss = adv.mean(loss)
    _healthy(list(tape.explain(loss, model.trainable_variables)))


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_no_false_alarm_torch(arch):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    if arch == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
        x = torch.randn(64, 20)
    else:
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                    torch.nn.Flatten(), torch.nn.Linear(8 * 3 * 3, 10))
        x = torch.randn(16, 1, 8, 8)
    y = torch.randint(0, 10, (x.shape[0],))
    with adv.torch.record() as rec:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
    _healthy(list(rec.explain(loss, model)))


def test_no_false_alarm_keras():
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(10)])
    x = np.random.default_rng(0).normal(size=(64, 20)).astype("float32")
    y = np.random.default_rng(1).integers(0, 10, 64)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, model(x))
        tape.gradient(loss, model.trainable_variables)
    _healthy(list(rec.explain(loss, model.trainable_variables)))


def test_embedding_rows_never_looked_up_are_expected():
    """A model with an Embedding: the rows of ids not in the batch are 0, and the answer says that is expected."""
    emb = adv.layers.Embedding(50, 4)
    ids = adv.constant(np.array([[1, 2, 3], [3, 4, 1]]))
    emb(ids)
    with adv.GradientTape() as tape:
        loss = adv.sum(emb(ids) ** 2)
    exp = tape.explain(loss, emb.embeddings)
    assert exp.reason == "connected" and exp.kind == "unused_rows"
    assert exp.details["zero_rows"][:3] == [0, 5, 6] and "expected" in exp.message


def _transformers_model(kind):
    """A ``transformers`` architecture from a tiny config with random weights (as the real-model tests build it)."""
    torch = pytest.importorskip("torch")
    hf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if kind == "bert":
        cfg = hf.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=64, num_labels=3)
        return hf.BertForSequenceClassification(cfg), {"input_ids": torch.randint(0, 512, (8, 32), generator=g),
                                                       "labels": torch.randint(0, 3, (8,), generator=g)}
    if kind == "gpt2":
        cfg = hf.GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4)
        ids = torch.randint(0, 512, (8, 32), generator=g)
        return hf.GPT2LMHeadModel(cfg), {"input_ids": ids, "labels": ids}
    cfg = hf.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=128, num_labels=10)
    return hf.ViTForImageClassification(cfg), {"pixel_values": torch.randn(8, 3, 32, 32, generator=g),
                                               "labels": torch.randint(0, 10, (8,), generator=g)}


def _recorded_step(kind):
    model, inputs = _transformers_model(kind)
    model.train()
    with adv.torch.record() as rec:
        loss = model(**inputs).loss
        loss.backward()
    return rec, loss, dict(model.named_parameters())


@pytest.mark.parametrize("kind", ["gpt2", "vit"])
def test_no_false_alarm_on_real_transformers(kind):
    """A correct training step of a real architecture (built by ``transformers``, random weights): the weights
    sampled across the model get ``connected`` with nothing dying (an embedding's unused rows are expected)."""
    rec, loss, params = _recorded_step(kind)
    names = list(params)
    for name in names[::max(1, len(names) // 4)]:
        exp = rec.explain(loss, params[name])
        assert exp.reason == "connected" and exp.kind in (None, "unused_rows"), (name, str(exp))


def test_attentions_key_bias_is_a_cancelled_shift_not_a_vanishing_gradient():
    """BERT's key bias gets a gradient of about 1e-12: every score of a softmax row moves by the same q·b_k, and
    softmax ignores such a shift, so the bias cannot change the loss. That is not depth: the answer names the
    cancelling sum (the same mechanism as a bias right before batch normalisation, below)."""
    rec, loss, params = _recorded_step("bert")
    bias = params["bert.encoder.layer.1.attention.self.key.bias"]
    assert 0 < float(bias.grad.abs().max()) < 1e-9
    exp = rec.explain(loss, bias)
    assert (exp.reason, exp.kind) == ("vanishing_gradient", "cancelled_shift"), str(exp)
    assert "softmax" in exp.message and "bias=False" in exp.message


def q_bias_before_batchnorm():
    adv.utils.set_random_seed(0)
    model = adv.Sequential([adv.layers.Dense(8), adv.layers.BatchNormalization(), adv.layers.Activation("relu"),
                            adv.layers.Dense(1)])
    x = adv.constant(np.random.default_rng(0).normal(size=(16, 4)))
    y = adv.constant(np.random.default_rng(1).normal(size=(16, 1)))
    model(x)
    with adv.GradientTape(persistent=True) as tape:
        loss = adv.mean((model(x, training=True) - y) ** 2)  # <-
    return tape, loss, model.layers[0].bias


def test_a_bias_right_before_batch_normalisation_cancels():
    """A Dense bias followed by BatchNormalization in training mode: the normalisation subtracts the batch mean,
    so the bias's gradient is 0 up to rounding — redundant, not vanishing."""
    exp, g, traced = run_engine(q_bias_before_batchnorm)
    assert np.abs(g).max() < 1e-12
    assert (exp.reason, exp.kind) == ("vanishing_gradient", "cancelled_shift"), str(exp)
    assert exp.location.endswith(f":{_line(q_bias_before_batchnorm)}")
    assert "use_bias=False" in exp.message


def test_attentions_query_bias_falls_at_near_uniform_attention_not_with_depth():
    """BERT's query bias at initialisation gets a gradient about 10⁵ times smaller than the logits'. Most of that
    fall (about half, on a log scale) happens in one op: the attention, whose scores q·kᵀ/√d barely differ while
    the q/k projections are small, so its output hardly depends on the query. The answer names that op and the
    near-uniform scores, not depth (the issue's case: it was ``vanishing_depth`` with "use ReLU")."""
    rec, loss, params = _recorded_step("bert")
    bias = params["bert.encoder.layer.1.attention.self.query.bias"]
    exp = rec.explain(loss, bias)
    assert (exp.reason, exp.kind) == ("vanishing_gradient", "near_uniform_softmax"), str(exp)
    assert exp.op == "scaled_dot_product_attention"
    assert "barely differ" in exp.message and "ReLU" not in exp.message
    falls = exp.details["falls"]
    assert falls[0][1] < 0.01 and all(r >= falls[0][1] for _, r in falls)


def q_small_attention():
    rng = np.random.default_rng(0)
    x, y = adv.constant(rng.normal(size=(32, 16))), adv.constant(rng.normal(size=(32, 16)))
    Wq = adv.Variable(rng.normal(size=(16, 16)) * 2e-4, name="Wq")
    Wk = adv.Variable(rng.normal(size=(16, 16)) * 2e-4, name="Wk")
    Wv = adv.Variable(rng.normal(size=(16, 16)) * 0.25, name="Wv")
    with adv.GradientTape(persistent=True) as tape:
        q, k, v = x @ Wq, x @ Wk, x @ Wv
        p = adv.nn.softmax(q @ adv.transpose(k) / 4.0, axis=-1)  # <-
        loss = adv.reduce_mean((p @ v - y) ** 2)
    return tape, loss, Wq


def test_a_tiny_gradient_is_traced_to_the_op_where_it_falls_most():
    """Self-attention written by hand with query and key weights at 2·10⁻⁴: ‖ḡ_Wq‖ is 10⁴ times below the
    loss's. The largest single fall is the scores' product with the (tiny) keys, then the near-uniform softmax:
    the answer names the product and its small factor, and lists the softmax among the sharpest falls."""
    exp, g, _ = run_engine(q_small_attention)
    assert np.linalg.norm(g) < 1e-4
    assert (exp.reason, exp.kind) == ("vanishing_gradient", "small_factor"), str(exp)
    assert exp.location.endswith(f":{_line(q_small_attention)}")
    assert "softmax" in exp.message.split("sharpest falls")[1]
