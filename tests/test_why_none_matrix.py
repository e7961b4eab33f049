"""A generated matrix of why-None cases: each kind of cut × each context it occurs in × engine / PyTorch / TensorFlow.

Each case is a small program written to a temporary file and run as the
learner's code (so its lines are the learner's lines): the forward pass, with
one line marked ``# CUT`` where the gradient stops, is placed in a context —
at the top level, inside a function, a module's ``forward`` or a layer's
``call``, a layer's ``build``, a Keras ``Lambda``, a loop, a library helper
(``checkpoint``), or before the tape / recording. The program asks the
framework for the gradient and the diagnosis for the reason. Each case
asserts the framework's own answer (``None``), the reason, the line
(``location`` ends with the marked ``file:line``, or is None where the
recording cannot know a line: a parameter frozen before it began) and a
keyword of the fix that fits the context.

The table of cases is documented in ``docs/why-none.md`` ("The matrix").
"""
from __future__ import annotations

import os
import runpy

import pytest

ENGINE_HEAD = "import numpy as np\nimport autodiff_viz as adv\n"
TORCH_HEAD = "import torch\nimport torch.nn as nn\nimport autodiff_viz as adv\n"
TF_HEAD = ("import os\nos.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')\nimport numpy as np\n"
           "import tensorflow as tf\nimport keras\nimport autodiff_viz as adv\n")


def _indent(lines, n=4):
    return [(" " * n + ln) if ln else ln for ln in lines]


# ---------------------------------------------------------------------------
# Contexts: how the forward lines (ending in `loss = ...`) are placed
# ---------------------------------------------------------------------------
def _engine_program(setup, forward, context, source="w"):
    """An engine program: ``forward`` runs in ``context`` inside ``with adv.GradientTape() as tape``."""
    pre, inside = list(setup), []
    if context == "top":
        inside = forward
    elif context == "function":
        pre += ["def step():"] + _indent(forward) + ["    return loss"]
        inside = ["loss = step()"]
    elif context == "loop":
        inside = ["for _ in range(2):"] + _indent(forward)
    elif context == "call":
        pre += ["class Block(adv.layers.Layer):", "    def call(self, x):"] + _indent(forward, 8) + \
            ["        return loss", "block = Block()"]
        inside = ["loss = block(w)"]
    elif context == "before":
        pre += forward
        inside = ["pass"]
    body = pre + ["with adv.GradientTape(persistent=True) as tape:"] + _indent(inside) + [
        f"REAL = tape.gradient(loss, {source})",
        f"EX = tape.explain(loss, {source})"]
    return ENGINE_HEAD + "\n".join(body) + "\n"


def _torch_program(setup, forward, context, source="w", after=()):
    pre, inside = list(setup), []
    if context == "top":
        inside = forward
    elif context == "function":
        pre += ["def step():"] + _indent(forward) + ["    return loss"]
        inside = ["loss = step()"]
    elif context == "loop":
        inside = ["for _ in range(2):"] + _indent(forward)
    elif context == "forward":
        pre += ["class Net(nn.Module):", "    def forward(self, x):"] + _indent(forward, 8) + \
            ["        return loss", "net = Net()"]
        inside = ["loss = net(w)"]
    body = pre + ["with adv.torch.record() as rec:"] + _indent(inside + ["if loss.requires_grad:",
                                                                          "    loss.sum().backward()"]) + [
        *after, f"REAL = {source}.grad", f"EX = rec.explain(loss, {source})"]
    return TORCH_HEAD + "\n".join(body) + "\n"


def _tf_program(setup, forward, context, source="w"):
    pre, inside = list(setup), []
    if context == "top":
        inside = forward
    elif context == "function":
        pre += ["def step():"] + _indent(forward) + ["    return loss"]
        inside = ["loss = step()"]
    elif context == "loop":
        inside = ["for _ in range(2):"] + _indent(forward)
    elif context == "call":
        pre += ["class Block(keras.layers.Layer):", "    def call(self, x):"] + _indent(forward, 8) + \
            ["        return loss", "block = Block()"]
        inside = ["loss = block(w)"]
    body = pre + ["with adv.tf.record() as rec:", "    with tf.GradientTape(persistent=True) as tape:"] + \
        _indent(inside, 8) + [f"    REAL = tape.gradient(loss, {source})", f"EX = rec.explain(loss, {source})"]
    return TF_HEAD + "\n".join(body) + "\n"


# ---------------------------------------------------------------------------
# Kinds of cut: (setup, forward lines with the cut marked `# CUT`, reason, fix keyword, contexts)
# ---------------------------------------------------------------------------
_W_ENGINE = ["w = adv.Variable(np.array([1.0, 2.0]), name='w')"]
ENGINE_KINDS = {
    "numpy_escape": (_W_ENGINE, ["v = adv.constant(np.tanh(w.numpy()))  # CUT", "loss = adv.sum(v * 2.0)"],
                     "left_the_tape", "tensor"),
    "float_escape": (_W_ENGINE, ["s = float(adv.sum(w * w))  # CUT", "loss = adv.constant(s) * 2.0"],
                     "left_the_tape", "tensor"),
    "item_escape": (_W_ENGINE, ["s = adv.sum(w * w).item()  # CUT", "loss = adv.constant(s) * 2.0"],
                    "left_the_tape", "tensor"),
    "argmax": (_W_ENGINE, ["i = adv.argmax(w * 1.0)  # CUT", "loss = adv.cast(i, 'float64') * 2.0"],
               "non_differentiable_op", "softmax"),
    "integer_cast": (_W_ENGINE, ["c = adv.cast(w * 3.0, 'int32')  # CUT", "loss = adv.cast(c, 'float64') * 2.0"],
                     "integer_dtype", "float"),
    "stop_gradient": (_W_ENGINE, ["s = adv.stop_gradient(w * 2.0)  # CUT", "loss = adv.sum(s * 3.0)"],
                      "non_differentiable_op", "stop_gradient"),
    "stop_recording": (_W_ENGINE, ["with tape.stop_recording():", "    s = w * 2.0  # CUT",
                                   "loss = adv.sum(s * 3.0)"], "computed_outside_tape", "stop_recording"),
    "assign": (_W_ENGINE + ["v = adv.Variable(np.zeros(2), name='v')"],
               ["v.assign(w * 2.0)  # CUT", "loss = adv.sum(v * 3.0)"], "non_differentiable_op", "assign"),
    "numpy_function": (_W_ENGINE, ["y = adv.numpy_function(np.tanh, [w], 'float64')  # CUT",
                                   "loss = adv.sum(y)"], "non_differentiable_op", "py_function"),
}
ENGINE_CONTEXTS = ("top", "function", "loop", "call")
ENGINE_FIX_BY_CONTEXT = {("left_the_tape", "loop"): "accumulate"}


def _engine_cases():
    for kind, (setup, forward, reason, fix) in ENGINE_KINDS.items():
        for context in ENGINE_CONTEXTS:
            if kind == "stop_recording" and context == "call":
                continue            # the tape is not reachable from a layer's call in a learner's code
            yield pytest.param(_engine_program(setup, forward, context), reason,
                               ENGINE_FIX_BY_CONTEXT.get((reason, context), fix), id=f"engine-{kind}-{context}")
    # made before the tape: the constant never watched, the value computed before the `with`
    yield pytest.param(_engine_program(["x = adv.constant(np.array([1.0, 2.0]))  # CUT"],
                                       ["loss = adv.sum(x * x)"], "top", source="x"),
                       "not_watched", "watch", id="engine-unwatched_constant-before")
    yield pytest.param(_engine_program(_W_ENGINE, ["loss = adv.sum(w * w)  # CUT"], "before"),
                       "computed_outside_tape", "inside", id="engine-outside_tape-before")
    build = ["class Bayes(adv.layers.Layer):",
             "    def build(self, input_shape):",
             "        self.mu = self.add_weight(shape=(2,), name='mu')",
             "        self.kernel = self.mu * 2.0  # CUT",
             "    def call(self, x):",
             "        return adv.sum(x * self.kernel)",
             "layer = Bayes()", "x = adv.constant(np.ones(2))",
             "with adv.GradientTape() as first:", "    layer(x)",
             "with adv.GradientTape(persistent=True) as tape:", "    loss = layer(x)",
             "REAL = tape.gradient(loss, layer.mu)", "EX = tape.explain(loss, layer.mu)"]
    yield pytest.param(ENGINE_HEAD + "\n".join(build) + "\n", "computed_outside_tape", "call()",
                       id="engine-computed_in_build-build")


_W_TORCH = ["torch.manual_seed(0)", "w = torch.tensor([1.0, 2.0], requires_grad=True)"]
TORCH_KINDS = {
    "detach": (["d = (w * 2).detach()  # CUT", "loss = (d * 3).sum()"], "detached", "detach"),
    "data": (["d = (w * 2).data  # CUT", "loss = (d * 3).sum()"], "detached", "detach"),
    "item": (["s = (w * w).sum().item()  # CUT", "loss = torch.tensor(s, requires_grad=True) * 2"],
             "left_the_graph", "tensor"),
    "numpy": (["a = (w * 2).detach().numpy()  # CUT", "loss = (torch.from_numpy(a) * 3).sum()"],
              "left_the_graph", "tensor"),
    "no_grad": (["with torch.no_grad():  # CUT", "    h = w * 2", "loss = (h * 3).sum()"],
                "no_grad", "no_grad"),
    "inference_mode": (["with torch.inference_mode():  # CUT", "    h = w * 2", "loss = (h.clone() * 3).sum()"],
                       "inference_mode", "inference_mode"),
    "integer_cast": (["c = (w * 3).long()  # CUT", "loss = (c.float() * 2).sum()"], "integer_dtype", "float"),
    "argmax": (["i = torch.argmax(w * 1.0)  # CUT", "loss = (i.float() * 2).sum()"], "non_differentiable_op",
               "scores"),
}
TORCH_CONTEXTS = ("top", "function", "loop", "forward")
TORCH_FIX_BY_CONTEXT = {("left_the_graph", "loop"): "accumulate"}


def _torch_cases():
    for kind, (forward, reason, fix) in TORCH_KINDS.items():
        for context in TORCH_CONTEXTS:
            if kind == "inference_mode" and context == "loop":
                continue        # a second pass would need w's grad inside inference_mode: not a learner's code
            yield pytest.param(_torch_program(_W_TORCH, forward, context), reason,
                               TORCH_FIX_BY_CONTEXT.get((reason, context), fix), id=f"torch-{kind}-{context}")
    # a library helper set the grad mode: the reentrant checkpoint on an input that needs no grad
    ckpt = ["from torch.utils.checkpoint import checkpoint", "torch.manual_seed(0)",
            "emb = nn.Embedding(10, 4)", "emb.weight.requires_grad_(False)", "lin = nn.Linear(4, 1)",
            "w = lin.weight", "def block(h):", "    return torch.tanh(lin(h))",
            "with adv.torch.record() as rec:", "    h = emb(torch.tensor([1, 2]))",
            "    out = checkpoint(block, h, use_reentrant=True)  # CUT", "    loss = out.sum()",
            "    if loss.requires_grad:", "        loss.backward()", "REAL = w.grad", "EX = rec.explain(loss, w)"]
    yield pytest.param(TORCH_HEAD + "\n".join(ckpt) + "\n", "no_grad", "use_reentrant=False",
                       id="torch-no_grad-library_checkpoint")
    # a re-wrap into a new leaf inside forward
    rewrap = ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
              "        self.fc = nn.Linear(3, 2)", "    def forward(self, x):",
              "        W = self.fc.weight * 2", "        self.fc.weight = nn.Parameter(W)  # CUT",
              "        return self.fc(x)", "net = Net()", "w = net.fc.weight",
              "with adv.torch.record() as rec:", "    loss = net(torch.randn(4, 3)).sum()", "    loss.backward()",
              "REAL = w.grad", "EX = rec.explain(loss, w)"]
    yield pytest.param(TORCH_HEAD + "\n".join(rewrap) + "\n", "new_parameter", "F.linear",
                       id="torch-new_parameter-forward")
    # frozen inside the recording, and before it (no line: said in words)
    frozen_in = ["m = nn.Linear(3, 1)", "w = m.weight", "with adv.torch.record() as rec:",
                 "    m.weight.requires_grad_(False)  # CUT", "    loss = m(torch.randn(2, 3)).sum()",
                 "    loss.backward()", "REAL = w.grad", "EX = rec.explain(loss, w)"]
    yield pytest.param(TORCH_HEAD + "\n".join(frozen_in) + "\n", "requires_grad_false", "requires_grad_(True)",
                       id="torch-frozen-inside_recording")
    frozen_before = ["m = nn.Linear(3, 1)", "w = m.weight", "m.weight.requires_grad = False",
                     "with adv.torch.record() as rec:", "    loss = m(torch.randn(2, 3)).sum()",
                     "    loss.backward()", "REAL = w.grad", "EX = rec.explain(loss, w)"]
    yield pytest.param(TORCH_HEAD + "\n".join(frozen_before) + "\n", "requires_grad_false",
                       "before the recording", id="torch-frozen-before")
    # .item() accumulated in a loop, then re-wrapped
    loop_item = _W_TORCH + ["with adv.torch.record() as rec:", "    total = 0.0", "    for i in range(3):",
                            "        total += (w * i).sum().item()  # CUT",
                            "    loss = torch.tensor(total, requires_grad=True)", "    loss.backward()",
                            "REAL = w.grad", "EX = rec.explain(loss, w)"]
    yield pytest.param(TORCH_HEAD + "\n".join(loop_item) + "\n", "left_the_graph", "accumulate",
                       id="torch-item_summed-loop")


_W_TF = ["w = tf.Variable([1.0, 2.0], name='w')"]
TF_KINDS = {
    "numpy_escape": (["v = tf.constant(np.tanh((w * 1.0).numpy()))  # CUT", "loss = tf.reduce_sum(v * 2.0)"],
                     "left_the_tape", "tensor"),
    "variable_numpy": (["v = tf.constant(np.tanh(w.numpy()))  # CUT", "loss = tf.reduce_sum(v * 2.0)"],
                       "left_the_tape", "tensor"),
    "argmax": (["i = tf.argmax(w * 1.0)  # CUT", "loss = tf.cast(i, tf.float32) * 2.0"],
               "non_differentiable_op", "softmax"),
    "integer_cast": (["c = tf.cast(w * 3.0, tf.int32)  # CUT", "loss = tf.cast(c, tf.float32) * 2.0"],
                     "integer_dtype", "float"),
    "stop_gradient": (["s = tf.stop_gradient(w * 2.0)  # CUT", "loss = tf.reduce_sum(s * 3.0)"],
                      "non_differentiable_op", "stop_gradient"),
    "numpy_function": (["y = tf.numpy_function(np.tanh, [w], tf.float32)  # CUT", "loss = tf.reduce_sum(y)"],
                       "non_differentiable_op", "custom_gradient"),
    "new_variable": (["v = tf.Variable(w * 2.0)  # CUT", "loss = tf.reduce_sum(v * 3.0)"],
                     "new_variable", "tensor"),
}
TF_CONTEXTS = ("top", "function", "loop", "call")
TF_FIX_BY_CONTEXT = {("left_the_tape", "loop"): "accumulate"}


def _tf_cases():
    for kind, (forward, reason, fix) in TF_KINDS.items():
        for context in TF_CONTEXTS:
            if kind == "new_variable" and context in ("loop", "call"):
                continue        # Keras refuses a variable made in call(); a loop makes the same case twice
            yield pytest.param(_tf_program(_W_TF, forward, context), reason,
                               TF_FIX_BY_CONTEXT.get((reason, context), fix), id=f"tf-{kind}-{context}")
    unwatched = ["x = tf.constant([1.0, 2.0])", "with adv.tf.record() as rec:",
                 "    with tf.GradientTape() as tape:", "        loss = tf.reduce_sum(x * x)  # CUT",
                 "    REAL = tape.gradient(loss, x)", "EX = rec.explain(loss, x)"]
    yield pytest.param(TF_HEAD + "\n".join(unwatched) + "\n", "not_watched", "watch",
                       id="tf-unwatched_constant-before")
    lam = ["inp = keras.Input((3,))", "h = keras.layers.Dense(4)(inp)",
           "am = keras.layers.Lambda(lambda t: tf.cast(tf.argmax(t, axis=-1), tf.float32)[:, None])(h)  # CUT",
           "model = keras.Model(inp, keras.layers.Dense(1)(am))", "w = model.layers[1].kernel",
           "x = tf.ones((2, 3))", "with adv.tf.record() as rec:", "    with tf.GradientTape() as tape:",
           "        loss = tf.reduce_mean(model(x))", "    REAL = tape.gradient(loss, w)",
           "EX = rec.explain(loss, w)"]
    yield pytest.param(TF_HEAD + "\n".join(lam) + "\n", "non_differentiable_op", "Lambda",
                       id="tf-argmax-lambda")
    build = ["class Bayes(keras.layers.Layer):", "    def build(self, input_shape):",
             "        self.mu = self.add_weight(shape=(input_shape[-1], 2), name='mu')",
             "        self.kernel = self.mu * 2.0  # CUT", "    def call(self, x):", "        return x @ self.kernel",
             "layer = Bayes()", "x = tf.ones((4, 3))", "with adv.tf.record() as rec:", "    for step in range(2):",
             "        with tf.GradientTape() as tape:", "            loss = tf.reduce_sum(layer(x))",
             "        REAL = tape.gradient(loss, layer.mu)", "EX = rec.explain(loss, layer.mu)"]
    yield pytest.param(TF_HEAD + "\n".join(build) + "\n", "computed_outside_tape", "call()",
                       id="tf-computed_in_build-build")
    built = ["class Bayes(keras.layers.Layer):", "    def build(self, input_shape):",
             "        self.mu = tf.Variable(tf.ones((input_shape[-1], 2)))",
             "        self.kernel = self.mu * 2.0  # CUT", "    def call(self, x):", "        return x @ self.kernel",
             "layer = Bayes()", "x = tf.ones((4, 3))", "layer(x)", "with adv.tf.record() as rec:",
             "    with tf.GradientTape() as tape:", "        loss = tf.reduce_sum(layer(x))",
             "    REAL = tape.gradient(loss, layer.mu)", "EX = rec.explain(loss, layer.mu)"]
    yield pytest.param(TF_HEAD + "\n".join(built) + "\n", "computed_outside_tape", "call()",
                       id="tf-computed_in_build-before")
    bn = ["model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),",
          "                          keras.layers.Dense(1)])", "x = tf.ones((4, 3))",
          "with adv.tf.record() as rec:", "    with tf.GradientTape() as tape:",
          "        loss = tf.reduce_mean(model(x, training=True) ** 2)",
          "    grads = tape.gradient(loss, model.variables)  # CUT",
          "w = model.layers[1].moving_mean", "REAL = grads[[v.path for v in model.variables].index(w.path)]",
          "EX = rec.explain(loss, w)"]
    yield pytest.param(TF_HEAD + "\n".join(bn) + "\n", "non_trainable", "trainable_variables",
                       id="tf-non_trainable_asked-top")


def _made_in_call_cases():
    """A weight made inside ``call()`` / ``forward()``: every call makes a new one, so the weight held from an
    earlier call is not the one the loss read. The line is where the new one is made."""
    engine = ["class Dense(adv.layers.Layer):", "    def call(self, x):",
              "        self.w = adv.Variable(np.ones((x.shape[-1], 2)), name='w')  # CUT",
              "        return adv.matmul(x, self.w)",
              "layer = Dense()", "x = adv.constant(np.ones((3, 4)))", "layer(x)", "w = layer.w",
              "with adv.GradientTape() as tape:", "    loss = adv.reduce_sum(layer(x))",
              "REAL = tape.gradient(loss, w)", "EX = tape.explain(loss, w)"]
    torch_ = ["class Net(nn.Module):", "    def forward(self, x):", "        self.fc = nn.Linear(4, 2)  # CUT",
              "        return self.fc(x)", "net = Net()", "x = torch.ones(3, 4)", "net(x)", "w = net.fc.weight",
              "with adv.torch.record() as rec:", "    loss = net(x).sum()",
              "    loss.backward()", "REAL = w.grad", "EX = rec.explain(loss, w)"]
    tf_ = ["class Dense(keras.layers.Layer):", "    def call(self, x):",
           "        self.w = tf.Variable(tf.ones((x.shape[-1], 2)), name='w')  # CUT",
           "        return tf.matmul(x, self.w)", "layer = Dense()", "x = tf.ones((3, 4))", "layer(x)", "w = layer.w",
           "with adv.tf.record() as rec:", "    with tf.GradientTape() as tape:",
           "        loss = tf.reduce_sum(layer(x))", "    REAL = tape.gradient(loss, w)", "EX = rec.explain(loss, w)"]
    return ([pytest.param(ENGINE_HEAD + "\n".join(engine) + "\n", "made_in_forward", "build()",
                          id="engine-made_in_call-call")],
            [pytest.param(TORCH_HEAD + "\n".join(torch_) + "\n", "made_in_forward", "__init__",
                          id="torch-made_in_forward-forward")],
            [pytest.param(TF_HEAD + "\n".join(tf_) + "\n", "made_in_forward", "add_weight",
                          id="tf-made_in_call-call")])


# the matrix: every case above, one test each
_MADE = _made_in_call_cases()
CASES = list(_engine_cases()) + _MADE[0]
TORCH_CASES = list(_torch_cases()) + _MADE[1]
TF_CASES = list(_tf_cases()) + _MADE[2]


def _run(tmp_path, program, name="case.py"):
    path = tmp_path / name
    path.write_text(program)
    marked = [i for i, line in enumerate(program.splitlines(), 1) if "# CUT" in line]
    env = runpy.run_path(str(path), run_name="__main__")
    return env, str(path), (marked[0] if marked else None)


def _check(env, path, line, reason, fix):
    ex = env["EX"]
    assert env["REAL"] is None, "the framework itself gives a gradient: the case is wrong"
    assert ex.reason == reason, ex.message
    if fix == "before the recording":
        assert ex.location is None and "before the recording" in ex.message, ex.message
    else:
        assert ex.location is not None and ex.location.endswith(f"{os.path.basename(path)}:{line}"), \
            (ex.location, line, ex.message)
    assert fix.lower() in ex.message.lower(), ex.message


@pytest.mark.parametrize("program, reason, fix", CASES)
def test_engine_matrix(tmp_path, program, reason, fix):
    env, path, line = _run(tmp_path, program)
    _check(env, path, line, reason, fix)


@pytest.mark.parametrize("program, reason, fix", TORCH_CASES)
def test_torch_matrix(tmp_path, program, reason, fix):
    pytest.importorskip("torch")
    env, path, line = _run(tmp_path, program)
    _check(env, path, line, reason, fix)


@pytest.mark.parametrize("program, reason, fix", TF_CASES)
def test_tf_matrix(tmp_path, program, reason, fix):
    pytest.importorskip("tensorflow")
    env, path, line = _run(tmp_path, program)
    _check(env, path, line, reason, fix)


def test_matrix_covers_every_context_and_framework():
    """The matrix is generated, not hand-picked: every kind meets every context it exists in."""
    ids = [p.id for p in CASES + TORCH_CASES + TF_CASES]
    for framework, contexts in (("engine", ENGINE_CONTEXTS + ("before", "build")),
                                ("torch", TORCH_CONTEXTS + ("library_checkpoint", "before")),
                                ("tf", TF_CONTEXTS + ("lambda", "before", "build"))):
        for context in contexts:
            assert any(i.startswith(framework + "-") and i.endswith("-" + context) for i in ids), (framework, context)
    assert len(ids) >= 80


def test_tf_escape_the_recording_cannot_see_is_said_plainly(tmp_path):
    """numpy reads an EagerTensor through the buffer protocol (``np.asarray(t)``), which no hook sees: the source is
    read by recorded ops (``peak``), the target's history starts afresh at ``tf.constant``, and the walk says it
    cannot show why, naming that line — not a confident ``not_used``."""
    pytest.importorskip("tensorflow")
    program = TF_HEAD + "\n".join(
        _W_TF + ["with adv.tf.record() as rec:", "    with tf.GradientTape() as tape:",
                 "        h = w * 2.0", "        peak = tf.reduce_max(h)",
                 "        v = tf.constant(np.tanh(np.asarray(h)))  # CUT",
                 "        loss = tf.reduce_sum(v * w)", "    REAL = tape.gradient(loss, h)",
                 "EX = rec.explain(loss, h)"]) + "\n"
    env, path, line = _run(tmp_path, program)
    assert env["REAL"] is None
    ex = env["EX"]
    assert ex.reason == "unexplained" and ex.location.endswith(f"case.py:{line}")
    assert "does not show why" in ex.message and "tf.constant" in ex.message


def test_a_weight_built_twice_at_the_top_level_is_not_made_in_forward():
    """Two builds of the same layer in the learner's script (the second one used): the twin is not made inside
    a call, so the diagnosis stays ``not_used`` (a different copy), never "made in call"."""
    import numpy as np

    import autodiff_viz as adv
    first = adv.layers.Dense(2)
    x = adv.constant(np.ones((3, 4)))
    first(x)
    second = adv.layers.Dense(2)
    with adv.GradientTape() as tape:
        loss = adv.reduce_sum(second(x))
    assert tape.gradient(loss, first.kernel) is None
    assert tape.explain(loss, first.kernel).reason == "not_used"


def test_torch_requires_grad_turned_on_after_the_first_use(tmp_path):
    """``x.requires_grad = True`` after ``y = x * 2``: autograd recorded nothing for that op, so the path from
    ``y`` to ``x`` is cut even though ``x`` requires grad now. Named at the op that read ``x`` first, with the
    line that turned requires_grad on; never ``connected``."""
    pytest.importorskip("torch")
    program = TORCH_HEAD + "\n".join([
        "x = torch.ones(3)", "with adv.torch.record() as rec:", "    y = (x * 2).sum()  # CUT",
        "    x.requires_grad = True", "    try:", "        y.backward()", "    except RuntimeError:", "        pass",
        "REAL = x.grad", "EX = rec.explain(y, x)"]) + "\n"
    env, path, line = _run(tmp_path, program)
    _check(env, path, line, "requires_grad_false", "requires_grad=True")
    assert "turned on only afterwards" in env["EX"].message


def test_tf_a_numpy_input_asked_for_as_the_source(tmp_path):
    """A saliency map's mistake: ``x`` is a numpy array, ``tape.watch(tf.convert_to_tensor(x))`` watches one
    conversion and ``model(x)`` reads another, so ``tape.gradient`` of any conversion is None. ``explain(loss, x)``
    names the line that read a conversion and the line that watched another, never a TypeError."""
    pytest.importorskip("tensorflow")
    program = TF_HEAD + "\n".join([
        "model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])",
        "x = np.ones((4, 3), dtype='float32')", "with adv.tf.record() as rec:",
        "    with tf.GradientTape() as tape:", "        tape.watch(tf.convert_to_tensor(x))",
        "        loss = tf.reduce_sum(model(x))  # CUT", "    REAL = tape.gradient(loss, tf.convert_to_tensor(x))",
        "EX = rec.explain(loss, x)"]) + "\n"
    env, path, line = _run(tmp_path, program)
    _check(env, path, line, "not_watched", "tf.convert_to_tensor(x)")
    assert "numpy array" in env["EX"].message and "tape.watch(tf.convert_to_tensor(x))" in env["EX"].message


def test_engine_a_numpy_input_asked_for_as_the_source(tmp_path):
    """The engine's form of the same mistake: ``explain(loss, x)`` with ``x`` the numpy array a layer read."""
    program = ENGINE_HEAD + "\n".join([
        "layer = adv.layers.Dense(1)", "x = np.ones((4, 3))", "with adv.GradientTape() as tape:",
        "    loss = adv.reduce_sum(layer(x))  # CUT", "REAL = tape.gradient(loss, adv.constant(x))",
        "EX = tape.explain(loss, x)"]) + "\n"
    env, path, line = _run(tmp_path, program)
    _check(env, path, line, "not_watched", "adv.constant(x)")
