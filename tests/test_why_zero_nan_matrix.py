"""Why is my gradient zero, or NaN: each kind × the engine, PyTorch and TensorFlow, where the framework has it.

Every case runs the framework's own backward pass (``tape.gradient``,
``loss.backward()``, ``tf.GradientTape.gradient``), checks the gradient is
what the kind says (all zero, partly zero, tiny, NaN), that the trace the
diagnosis reads holds that very gradient bit for bit, and that ``explain``
names the reason, the kind, the line marked ``# <-`` and a fix with the
keyword a learner would look for.
"""
import inspect
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402

BIG = 1 << 20
RNG = np.random.default_rng(7)
X = RNG.normal(size=(8, 3))
POS = np.abs(X) + 0.5          # inputs > 0


def _line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, text in enumerate(lines) if "# <-" in text)


# ---------------------------------------------------------------------------
# Runners: run a case, return (explanation, the framework's gradient, the trace's gradient)
# ---------------------------------------------------------------------------
def run_engine(case):
    with np.errstate(all="ignore"):         # the learner's own forward and backward warn (log(0), 0/0) as numpy does
        tape, loss, src = case()
        g = tape.gradient(loss, src)
    tr = tape.trace(loss, src, value_limit=BIG)
    return tape.explain(loss, src), np.asarray(g.numpy()), tr.node(tr.node_id_of(src)).grad.data


def run_torch(case):
    torch = pytest.importorskip("torch")
    with adv.torch.record() as rec:
        loss, src = case(torch)
        loss.backward()
    tr = rec.trace(loss, [src], value_limit=BIG)
    return rec.explain(loss, src), src.grad.detach().numpy(), tr.node(tr.sources[0]).grad.data


def run_tf(case):
    tf = pytest.importorskip("tensorflow")
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as tape:
            loss, src = case(tf)
        g = tape.gradient(loss, src)
    tr = rec.trace(loss, [src], value_limit=BIG)
    return rec.explain(loss, src), np.asarray(tf.convert_to_tensor(g)), tr.node(tr.sources[0]).grad.data


RUNNERS = {"engine": run_engine, "torch": run_torch, "tf": run_tf}


# ---------------------------------------------------------------------------
# The cases (one per kind and framework)
# ---------------------------------------------------------------------------
def e_dead_relu():
    W1 = adv.Variable(-np.abs(RNG.normal(size=(3, 4))) - 0.1, name="W1")
    W2 = adv.Variable(RNG.normal(size=(4, 1)), name="W2")
    with adv.GradientTape(persistent=True) as tape:
        h = adv.nn.relu(adv.constant(POS) @ W1)  # <-
        loss = adv.mean((h @ W2 - 1.0) ** 2)
    return tape, loss, W1


def t_dead_relu(torch):
    W1 = torch.nn.Parameter(-torch.tensor(np.abs(RNG.normal(size=(3, 4)))) - 0.1)
    W2 = torch.nn.Parameter(torch.tensor(RNG.normal(size=(4, 1))))
    h = torch.relu(torch.tensor(POS) @ W1)  # <-
    return ((h @ W2 - 1.0) ** 2).mean(), W1


def k_dead_relu(tf):
    W1 = tf.Variable(-np.abs(RNG.normal(size=(3, 4))) - 0.1)
    W2 = tf.Variable(RNG.normal(size=(4, 1)))
    h = tf.nn.relu(tf.constant(POS) @ W1)  # <-
    return tf.reduce_mean((h @ W2 - 1.0) ** 2), W1


def e_saturated():
    w = adv.Variable(np.full((3, 2), 9.0), name="w")
    with adv.GradientTape(persistent=True) as tape:
        s = adv.nn.sigmoid(adv.constant(POS) @ w)  # <-
        loss = adv.mean((s - 0.5) ** 2)
    return tape, loss, w


def t_saturated(torch):
    w = torch.nn.Parameter(torch.full((3, 2), 9.0, dtype=torch.float64))
    s = torch.sigmoid(torch.tensor(POS) @ w)  # <-
    return ((s - 0.5) ** 2).mean(), w


def k_saturated(tf):
    w = tf.Variable(np.full((3, 2), 9.0))
    s = tf.sigmoid(tf.constant(POS) @ w)  # <-
    return tf.reduce_mean((s - 0.5) ** 2), w


def e_where_branch():
    w = adv.Variable(np.ones(3), name="w")
    x = adv.constant(POS[:, 0])
    with adv.GradientTape(persistent=True) as tape:
        y = adv.where(x > 100.0, x * w[0], 0.0)  # <-
        loss = adv.sum(y)
    return tape, loss, w


def t_where_branch(torch):
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    x = torch.tensor(POS[:, 0])
    y = torch.where(x > 100.0, x * w[0], torch.zeros_like(x))  # <-
    return y.sum(), w


def k_where_branch(tf):
    w = tf.Variable(np.ones(3))
    x = tf.constant(POS[:, 0])
    y = tf.where(x > 100.0, x * w[0], tf.zeros_like(x))  # <-
    return tf.reduce_sum(y), w


def e_clipped():
    w = adv.Variable(np.full(3, 5.0), name="w")
    with adv.GradientTape(persistent=True) as tape:
        y = adv.clip(adv.constant(POS[:, :3]) * w, -1.0, 1.0)  # <-
        loss = adv.sum(y)
    return tape, loss, w


def t_clipped(torch):
    w = torch.nn.Parameter(torch.full((3,), 5.0, dtype=torch.float64))
    y = torch.clamp(torch.tensor(POS[:, :3]) * w, -1.0, 1.0)  # <-
    return y.sum(), w


def k_clipped(tf):
    w = tf.Variable(np.full(3, 5.0))
    y = tf.clip_by_value(tf.constant(POS[:, :3]) * w, -1.0, 1.0)  # <-
    return tf.reduce_sum(y), w


def e_never_picked():
    a = adv.Variable(np.full(3, 0.1), name="a")
    b = adv.Variable(np.ones(3), name="b")
    x = adv.constant(POS[:, :3])
    with adv.GradientTape(persistent=True) as tape:
        y = adv.maximum(x * a, x * b)  # <-
        loss = adv.sum(y * y)
    return tape, loss, a


def t_never_picked(torch):
    a = torch.nn.Parameter(torch.full((3,), 0.1, dtype=torch.float64))
    b = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    x = torch.tensor(POS[:, :3])
    y = torch.maximum(x * a, x * b)  # <-
    return (y * y).sum(), a


def k_never_picked(tf):
    a = tf.Variable(np.full(3, 0.1))
    b = tf.Variable(np.ones(3))
    x = tf.constant(POS[:, :3])
    y = tf.maximum(x * a, x * b)  # <-
    return tf.reduce_sum(y * y), a


def e_zero_ae():
    w = adv.Variable(np.array([0.3, -0.2, 0.5]), name="w")
    with adv.GradientTape(persistent=True) as tape:
        q = adv.sign(adv.constant(X) @ w)  # <-
        loss = adv.mean((q - 1.0) ** 2)
    return tape, loss, w


def k_zero_ae(tf):
    w = tf.Variable(np.array([0.3, -0.2, 0.5]))
    q = tf.sign(tf.constant(X) @ tf.reshape(w, (3, 1)))  # <-
    return tf.reduce_mean((q - 1.0) ** 2), w


def e_zero_operand():
    W1 = adv.Variable(RNG.normal(size=(3, 4)), name="W1")
    W2 = adv.Variable(np.zeros((4, 1)), name="W2")
    with adv.GradientTape(persistent=True) as tape:
        h = adv.tanh(adv.constant(X) @ W1)
        out = h @ W2  # <-
        loss = adv.mean((out - 1.0) ** 2)
    return tape, loss, W1


def t_zero_operand(torch):
    W1 = torch.nn.Parameter(torch.tensor(RNG.normal(size=(3, 4))))
    W2 = torch.nn.Parameter(torch.zeros((4, 1), dtype=torch.float64))
    h = torch.tanh(torch.tensor(X) @ W1)
    out = h @ W2  # <-
    return ((out - 1.0) ** 2).mean(), W1


def k_zero_operand(tf):
    W1 = tf.Variable(RNG.normal(size=(3, 4)))
    W2 = tf.Variable(np.zeros((4, 1)))
    h = tf.tanh(tf.constant(X) @ W1)
    out = h @ W2  # <-
    return tf.reduce_mean((out - 1.0) ** 2), W1


XH = np.column_stack([np.sign(X[:, 0]) * (np.abs(X[:, 0]) + 0.5), X[:, 1:]])
Y = np.sign(XH[:, 0])
W_MET = np.array([4.0, 0.0, 0.0])    # every margin y·(x·w) ≥ 2: the hinge loss is 0


def e_flat_loss():
    w = adv.Variable(W_MET, name="w")
    with adv.GradientTape(persistent=True) as tape:
        margin = adv.constant(Y) * (adv.constant(XH) @ w)
        loss = adv.mean(adv.maximum(0.0, 1.0 - margin))  # <-
    return tape, loss, w


def t_flat_loss(torch):
    w = torch.nn.Parameter(torch.tensor(W_MET))
    margin = torch.tensor(Y) * (torch.tensor(XH) @ w)
    return torch.clamp(1.0 - margin, min=0).mean(), w  # <-


def k_flat_loss(tf):
    w = tf.Variable(W_MET)
    margin = tf.constant(Y) * tf.linalg.matvec(tf.constant(XH), w)
    return tf.reduce_mean(tf.nn.relu(1.0 - margin)), w  # <-


IDS = np.array([0, 2, 2, 5])


def e_unused_rows():
    E = adv.Variable(RNG.normal(size=(8, 3)), name="E")
    with adv.GradientTape(persistent=True) as tape:
        v = adv.take(E, adv.constant(IDS), axis=0)  # <-
        loss = adv.sum(v * v)
    return tape, loss, E


def t_unused_rows(torch):
    emb = torch.nn.Embedding(8, 3).double()
    v = emb(torch.tensor(IDS))  # <-
    return (v * v).sum(), emb.weight


def k_unused_rows(tf):
    E = tf.Variable(RNG.normal(size=(8, 3)))
    v = tf.gather(E, IDS)  # <-
    return tf.reduce_sum(v * v), E


DEPTH = 14


def e_vanishing_depth():
    Ws = [adv.Variable(RNG.normal(size=(6, 6)) * 0.3, name=f"W{k}") for k in range(DEPTH)]
    with adv.GradientTape(persistent=True) as tape:
        h = adv.constant(RNG.normal(size=(4, 6)))
        for W in Ws:
            h = adv.nn.sigmoid(h @ W)  # <-
        loss = adv.mean(h ** 2)
    return tape, loss, Ws[0]


def t_vanishing_depth(torch):
    Ws = [torch.nn.Parameter(torch.tensor(RNG.normal(size=(6, 6)) * 0.3)) for _ in range(DEPTH)]
    h = torch.tensor(RNG.normal(size=(4, 6)))
    for W in Ws:
        h = torch.sigmoid(h @ W)  # <-
    return (h ** 2).mean(), Ws[0]


def k_vanishing_depth(tf):
    Ws = [tf.Variable(RNG.normal(size=(6, 6)) * 0.3) for _ in range(DEPTH)]
    h = tf.constant(RNG.normal(size=(4, 6)))
    for W in Ws:
        h = tf.sigmoid(h @ W)  # <-
    return tf.reduce_mean(h ** 2), Ws[0]


ZERO_FIRST = np.array([0.0, 1.0, 4.0])


def e_where_nan():
    x = adv.Variable(ZERO_FIRST, name="x")
    with adv.GradientTape(persistent=True) as tape:
        y = adv.where(x > 0, adv.log(x), 0.0)  # <-
        loss = adv.sum(y)
    return tape, loss, x


def t_where_nan(torch):
    x = torch.nn.Parameter(torch.tensor(ZERO_FIRST))
    y = torch.where(x > 0, torch.sqrt(x), torch.zeros_like(x))  # <-
    return y.sum(), x


def k_where_nan(tf):
    x = tf.Variable(ZERO_FIRST)
    y = tf.where(x > 0, tf.math.log(x), tf.zeros_like(x))  # <-
    return tf.reduce_sum(y), x


def e_sqrt_at_zero():
    a = adv.Variable(np.array([1.0, 2.0]), name="a")
    with adv.GradientTape(persistent=True) as tape:
        d = a - adv.constant(np.array([1.0, 2.0]))
        dist = adv.sqrt(adv.sum(d * d))  # <-
    return tape, dist, a


def t_sqrt_at_zero(torch):
    a = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64))
    d = a - torch.tensor([1.0, 2.0], dtype=torch.float64)
    return torch.sqrt((d * d).sum()), a  # <-


def k_sqrt_at_zero(tf):
    a = tf.Variable(np.array([1.0, 2.0]))
    d = a - tf.constant([1.0, 2.0], tf.float64)
    return tf.sqrt(tf.reduce_sum(d * d)), a  # <-


def e_acos():
    u = adv.Variable(np.array([0.6, 0.8]), name="u")
    with adv.GradientTape(persistent=True) as tape:
        angle = adv.arccos(adv.sum(u * adv.constant(np.array([0.6, 0.8]))))  # <-
    return tape, angle, u


def t_acos(torch):
    u = torch.nn.Parameter(torch.tensor([0.6, 0.8], dtype=torch.float64))
    return torch.acos((u * torch.tensor([0.6, 0.8], dtype=torch.float64)).sum()), u  # <-


def k_acos(tf):
    u = tf.Variable(np.array([0.6, 0.8]))
    return tf.acos(tf.reduce_sum(u * tf.constant([0.6, 0.8], tf.float64))), u  # <-


def e_exp_overflow():
    w = adv.Variable(np.array([800.0, 1.0]), name="w")
    with adv.GradientTape(persistent=True) as tape:
        e = adv.exp(w)  # <-
        p = e / adv.sum(e)
        loss = -adv.log(p[0])
    return tape, loss, w


def t_exp_overflow(torch):
    w = torch.nn.Parameter(torch.tensor([800.0, 1.0], dtype=torch.float64))
    e = torch.exp(w)  # <-
    p = e / e.sum()
    return -torch.log(p[0]), w


def k_exp_overflow(tf):
    w = tf.Variable(np.array([800.0, 1.0]))
    e = tf.exp(w)  # <-
    p = e / tf.reduce_sum(e)
    return -tf.math.log(p[0]), w


def e_div_std():
    s = adv.Variable(np.ones(4), name="s")
    with adv.GradientTape(persistent=True) as tape:
        z = (s - adv.mean(s)) / adv.std(s)  # <-
        loss = adv.sum(z * z)
    return tape, loss, s


def t_div_std(torch):
    s = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    z = (s - s.mean()) / s.std()  # <-
    return (z * z).sum(), s


def k_div_std(tf):
    s = tf.Variable(np.ones(4))
    z = (s - tf.reduce_mean(s)) / tf.math.reduce_std(s)  # <-
    return tf.reduce_sum(z * z), s


MASK = np.array([0.0, 1.0, 1.0])


def e_zero_times_inf():
    x = adv.Variable(ZERO_FIRST, name="x")
    with adv.GradientTape(persistent=True) as tape:
        r = adv.sqrt(x)  # <-
        loss = adv.sum(adv.constant(MASK) * r)
    return tape, loss, x


def t_zero_times_inf(torch):
    x = torch.nn.Parameter(torch.tensor(ZERO_FIRST))
    r = torch.sqrt(x)  # <-
    return (torch.tensor(MASK) * r).sum(), x


def k_zero_times_inf(tf):
    x = tf.Variable(ZERO_FIRST)
    r = tf.math.log(x)  # <-
    return tf.reduce_sum(tf.where(tf.constant(MASK) > 0, r * 1.0, 0.0)), x


# kind: (reason, kind, fix keyword, what the framework's gradient is, {framework: case})
KINDS = {
    "dead_relu": ("zero_gradient", "dead_relu", "LeakyReLU", "zero",
                  {"engine": e_dead_relu, "torch": t_dead_relu, "tf": k_dead_relu}),
    "saturated": ("vanishing_gradient", "saturated", "normalise", "tiny",
                  {"engine": e_saturated, "torch": t_saturated, "tf": k_saturated}),
    "where_branch": ("zero_gradient", "branch_never_selected", "condition", "zero",
                     {"engine": e_where_branch, "torch": t_where_branch, "tf": k_where_branch}),
    "clipped": ("zero_gradient", "clipped", "straight-through", "zero",
                {"engine": e_clipped, "torch": t_clipped, "tf": k_clipped}),
    "never_picked": ("zero_gradient", "never_picked", "logsumexp", "zero",
                     {"engine": e_never_picked, "torch": t_never_picked, "tf": k_never_picked}),
    "zero_almost_everywhere": ("zero_gradient", "zero_almost_everywhere", "straight-through", "zero",
                               {"engine": e_zero_ae, "tf": k_zero_ae}),   # torch: the None-walk's step
                                                                          # functions (non_differentiable_op)
    "zero_operand": ("zero_gradient", "zero_operand", "initialise", "zero",
                     {"engine": e_zero_operand, "torch": t_zero_operand, "tf": k_zero_operand}),
    "flat_loss": ("zero_gradient", "flat_loss", "minimum", "zero",
                  {"engine": e_flat_loss, "torch": t_flat_loss, "tf": k_flat_loss}),
    "unused_rows": ("connected", "unused_rows", None, "partly",
                    {"engine": e_unused_rows, "torch": t_unused_rows, "tf": k_unused_rows}),
    "vanishing_depth": ("vanishing_gradient", "vanishing_depth", "residual", "tiny",
                        {"engine": e_vanishing_depth, "torch": t_vanishing_depth, "tf": k_vanishing_depth}),
    "where_nan": ("nan_gradient", "unselected_where_branch", "double-where", "nan",
                  {"engine": e_where_nan, "torch": t_where_nan, "tf": k_where_nan}),
    "sqrt_at_zero": ("nan_gradient", "sqrt_at_zero", "epsilon", "nan",
                     {"engine": e_sqrt_at_zero, "torch": t_sqrt_at_zero, "tf": k_sqrt_at_zero}),
    "acos_at_one": ("nan_gradient", "acos_at_one", "clip", "nan",
                    {"engine": e_acos, "torch": t_acos, "tf": k_acos}),
    "exp_overflow": ("nan_gradient", "exp_overflow", "logsumexp", "nan",
                     {"engine": e_exp_overflow, "torch": t_exp_overflow, "tf": k_exp_overflow}),
    "division_by_zero": ("nan_gradient", "division_by_zero", "epsilon", "nan",
                         {"engine": e_div_std, "torch": t_div_std, "tf": k_div_std}),
    "zero_times_inf": ("nan_gradient", "zero_times_inf", "mask", "nan",
                       {"engine": e_zero_times_inf, "torch": t_zero_times_inf}),
}
MATRIX = [(kind, fw) for kind, (*_, cases) in KINDS.items() for fw in cases]


def _shape_of_gradient(g, what):
    if what == "zero":
        assert not g.any(), g
    elif what == "tiny":
        assert g.any() and np.sqrt(np.mean(g * g)) < 1e-5, g
    elif what == "partly":
        assert g.any() and not g.all()
    else:
        assert not np.isfinite(g).all(), g


@pytest.mark.parametrize("kind,framework", MATRIX, ids=[f"{k}-{f}" for k, f in MATRIX])
def test_kind(kind, framework):
    reason, expected_kind, fix, what, cases = KINDS[kind]
    case = cases[framework]
    exp, g, traced = RUNNERS[framework](case)
    _shape_of_gradient(g, what)
    assert traced.shape == g.shape and np.array_equal(traced, g, equal_nan=True), (traced, g)
    assert (exp.reason, exp.kind) == (reason, expected_kind), str(exp)
    if reason != "connected":
        assert exp.location is not None and exp.location.endswith(f":{_line(case)}"), (exp.location, str(exp))
        assert fix.lower() in exp.message.lower(), exp.message
        assert exp.edges or expected_kind == "vanishing_depth"
    else:
        assert "expected" in exp.message and "1, 3, 4, 6, 7" in exp.message, exp.message


def test_vanishing_depth_shows_the_layers():
    exp, _, _ = run_engine(e_vanishing_depth)
    layers = exp.details["layers"]
    assert len(layers) >= DEPTH and layers[0][1] > 1e3 * layers[-1][1]
    assert "Per layer" in exp.message and "‖ḡ‖" in exp.message


def test_the_dying_edge_is_marked_on_the_picture():
    tape, loss, W1 = e_dead_relu()
    exp = tape.explain(loss, W1)
    marked = exp.mark(tape.trace(loss))
    (mark,) = marked.marks
    edge = marked.edge(mark.ref)
    assert marked.node(edge.dst).op == "relu" and mark.reason == "gradient dies: relu′ = 0 on all entries"
    dot = marked.to_dot(view="backward")
    line = next(text for text in dot.splitlines() if "relu′ = 0 on all entries" in text)
    assert "dashed" in line


def test_the_nan_edge_is_red_on_the_picture():
    with np.errstate(all="ignore"):
        tape, loss, x = e_where_nan()
    exp = tape.explain(loss, x)
    marked = exp.mark(tape.trace(loss))
    dot = marked.to_dot(view="backward")
    line = next(text for text in dot.splitlines() if "0 · ∞" in text)
    assert "#d62728" in line and "dashed" not in line


@pytest.mark.parametrize("make,kind,phase", [
    (lambda x: adv.sum(adv.sqrt(x * x)), "sqrt_at_zero", "backward"),
    (lambda x: adv.sum(adv.log(x)), "log_of_zero", "forward"),
    (lambda x: adv.sum(adv.exp(x * 1000.0)), "exp_overflow", "forward"),
    (lambda x: adv.sum(adv.arccos(x)), "acos_at_one", "backward"),
    (lambda x: adv.sum(x / (x - x)), "division_by_zero", "forward"),
])
def test_detect_anomaly_names_the_kind(make, kind, phase):
    """``detect_anomaly`` stops at the first non-finite value, as PyTorch's does, and says what kind it is."""
    x = adv.Variable([1.0, 0.0])
    with pytest.raises(adv.AnomalyError) as info:
        with adv.detect_anomaly():
            with adv.GradientTape() as tape:
                y = make(x)
            tape.gradient(y, x)
    assert (info.value.kind, info.value.phase) == (kind, phase)
    assert f"Kind: {kind}" in str(info.value) and ("Fix:" in str(info.value) or "Hint:" in str(info.value))


def test_compare_names_a_zero_hand_gradient():
    """Exercise mode: a learner's ReLU backward with the mask's sign flipped gives zeros where the tape's is not."""
    x = adv.Variable(np.array([[1.0, -2.0, 3.0]]), name="x")
    with adv.GradientTape(persistent=True) as tape:
        h = adv.nn.relu(x)
        loss = adv.sum(h * h)
    dh = 2 * h.numpy()
    dx = dh * (x.numpy() < 0)                     # the learner's mask: the wrong side of 0
    row = tape.compare(loss, {"x": dx})["x"]
    assert row.status == "wrong" and "Yours is 0 on every entry" in row.message


def test_compare_names_a_nan_hand_gradient():
    """A hand gradient of ‖x‖ written as x / ‖x‖ at a zero row is NaN; the tape's (subgradient 0) is not."""
    x = adv.Variable(np.zeros(3), name="x")
    with adv.GradientTape(persistent=True) as tape:
        n = adv.linalg.norm(x)
    with np.errstate(all="ignore"):
        dx = x.numpy() / np.linalg.norm(x.numpy())
    row = tape.compare(n, {"x": dx})["x"]
    assert row.status == "invalid" and "sqrt_at_zero" in row.message and "your formula" in row.message


def test_relu_written_with_where_is_a_branch_never_selected():
    """jax#37821's ReLU spelled ``where(z > 0, z, 0)`` (https://github.com/jax-ml/jax/issues/37821): with every z
    ≤ 0 the branch is never taken; the where's condition edge is not mistaken for where the gradient dies."""
    w = adv.Variable(-np.ones(3), name="w")
    with adv.GradientTape() as tape:
        z = adv.constant(np.ones((4, 3))) * w
        r = adv.where(z > 0, z, 0.0)
        loss = adv.sum((r - 1.0) ** 2)
    exp = tape.explain(loss, w)
    assert (exp.reason, exp.kind) == ("zero_gradient", "branch_never_selected") and "False on all 12" in exp.message


def test_the_sum_of_a_softmax_has_zero_gradient_and_says_why():
    """A non-scalar target is differentiated as its sum; the sum of softmax probabilities is always 1."""
    logits = adv.Variable([[0.5, -0.2, 0.1]], name="logits")
    with adv.GradientTape() as tape:
        p = adv.nn.softmax(logits)
    exp = tape.explain(p, logits)
    assert (exp.reason, exp.kind) == ("zero_gradient", "constant_sum") and "always 1" in exp.message


def test_every_kind_explain_can_name_is_on_the_docs_page_with_its_fix():
    """A learner who reads ``kind='…'`` in an answer finds that kind's row in docs/why-zero-nan.md."""
    from pathlib import Path

    from autodiff_viz.diagnosis.kinds import FIXES
    page = (Path(__file__).resolve().parents[1] / "docs" / "why-zero-nan.md").read_text()
    rows = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}
    assert set(FIXES) <= rows, sorted(set(FIXES) - rows)
