"""W2 — one training step of a small MLP on the digits data.

MLP 64-128-128-10 with tanh, softmax cross-entropy (mean over the batch),
batch 64, plain SGD (learning rate 0.1). Every library starts from the same
Glorot-uniform weights and sees the same batches in the same order; the
step is timed over one epoch (22 steps) and reported per step. Each library
also trains for a few epochs from the same start and prints its test
accuracy, to show it learns (they should agree to rounding).
The floor is a hand-written numpy backprop step.
"""
from __future__ import annotations

import numpy as np

from .harness import Trainer, Variant, finite_difference, max_relative_error

NAME = "W2"
TITLE = "training step, MLP 64-128-128-10, tanh, softmax cross-entropy, batch 64, SGD, digits (ms per step)"
UNIT, SCALE = "ms", 1e3
CASES = ("step",)
BASELINE = ("numpy", "step")
SIZES, BATCH, LR, EPOCHS = (64, 128, 128, 10), 64, 0.1, 10


def unavailable():
    try:
        import sklearn.datasets  # noqa: F401
    except ImportError:
        return "needs scikit-learn for the digits data (pip install scikit-learn); skipped"
    return None


def data(quick: bool) -> dict:
    from sklearn.datasets import load_digits
    digits = load_digits()
    rng = np.random.default_rng(2)
    order = rng.permutation(len(digits.target))
    X, y = digits.data[order] / 16.0, digits.target[order]
    n_test = len(y) // 5
    Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
    steps = len(ytr) // BATCH
    epochs = [rng.permutation(len(ytr))[:steps * BATCH].reshape(steps, BATCH) for _ in range(EPOCHS)]
    init = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        init += [rng.uniform(-limit, limit, (fan_in, fan_out)), np.zeros(fan_out)]
    return {"Xtr": Xtr, "ytr": ytr, "Xte": Xte, "yte": yte, "epochs": epochs, "init": init,
            "batches": [(Xtr[i], ytr[i]) for i in epochs[0]]}


# ----- the numpy floor ---------------------------------------------------------
def _forward(params, x, tanh):
    W1, b1, W2, b2, W3, b3 = params
    return tanh(tanh(x @ W1 + b1) @ W2 + b2) @ W3 + b3


def _numpy_loss(params, x, y):
    z = _forward(params, x, np.tanh)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


def _numpy_gradients(params, x, y):
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    e = np.exp(z - z.max(axis=1, keepdims=True))
    d3 = e / e.sum(axis=1, keepdims=True)
    d3[np.arange(len(y)), y] -= 1
    d3 /= len(y)
    d2 = (d3 @ W3.T) * (1 - h2 * h2)
    d1 = (d2 @ W2.T) * (1 - h1 * h1)
    return [x.T @ d1, d1.sum(0), h1.T @ d2, d2.sum(0), h2.T @ d3, d3.sum(0)]


def reference(d) -> list:
    x, y = d["batches"][0]
    return _numpy_gradients(d["init"], x, y)


def check_reference() -> float:
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (4, 4), (4,), (4, 3), (3,)]
    params = [rng.normal(size=s) for s in shapes]
    x, y = rng.normal(size=(5, 3)), np.array([0, 2, 1, 1, 0])
    fd = finite_difference(lambda *p: _numpy_loss(list(p), x, y), params)
    return max_relative_error(_numpy_gradients(params, x, y), fd)


def _variant(trainer: Trainer, d, note="") -> Variant:
    batches = d["batches"]

    def epoch():
        for x, y in batches:
            trainer.step(x, y)

    def accuracy():
        trainer.reset()
        for order in d["epochs"]:
            for idx in order:
                trainer.step(d["Xtr"][idx], d["ytr"][idx])
        acc = float(np.mean(np.argmax(trainer.logits(d["Xte"]), axis=1) == d["yte"]))
        trainer.reset()
        return {f"test accuracy after {EPOCHS} epochs": acc}

    def grads():
        trainer.reset()
        return trainer.gradients(*batches[0])

    return Variant({"step": epoch}, {"gradients": grads}, per_call=len(batches), note=note, facts=accuracy)


def variants(lib: str, mod, d) -> dict:
    if lib == "numpy":
        return {"numpy": _variant(_numpy(d), d, "backprop by hand")}
    if lib == "autodiff_viz":
        out = {"autodiff_viz (tape ops)": _variant(_adv_ops(mod, d), d,
                                                   "adv.Variable, adv.matmul, adv.tanh, adv.nn.log_softmax"),
               "autodiff_viz (tape ops, capture_locations=False)": _variant(
                   _without_locations(mod, _adv_ops(mod, d)), d)}
        if hasattr(mod, "Sequential") and hasattr(mod, "optimizers"):
            out["autodiff_viz (Sequential)"] = _variant(_adv_keras(mod, d), d,
                                                        "adv.Sequential of adv.layers.Dense, adv.optimizers.SGD")
        return out
    if lib == "torch":
        return {"torch": _variant(_torch(mod, d), d, "torch.nn.Sequential, torch.optim.SGD")}
    if lib == "autograd":
        return {"autograd": _variant(_autograd(d), d, "autograd.grad over a list of arrays")}
    if lib == "jax":
        return {"jax": _variant(_jax(mod, d, jit=False), d, "jax.grad, op by op"),
                "jax + jit": _variant(_jax(mod, d, jit=True), d, "jax.jit of the whole step")}
    return {}


def _numpy(d) -> Trainer:
    params = []

    def reset():
        params[:] = [p.copy() for p in d["init"]]

    def step(x, y):
        for p, g in zip(params, _numpy_gradients(params, x, y)):
            p -= LR * g

    reset()
    return Trainer(reset, step, lambda x, y: _numpy_gradients(params, x, y),
                   lambda X: _forward(params, X, np.tanh))


def _adv_ops(adv, d) -> Trainer:
    params = [adv.Variable(p) for p in d["init"]]
    eye = np.eye(SIZES[-1])

    def loss_and_grads(x, y):
        with adv.GradientTape() as tape:
            logp = adv.nn.log_softmax(_forward(params, adv.constant(x), adv.tanh))
            loss = -adv.sum(logp * eye[y]) / len(y)
        return tape.gradient(loss, params)

    def reset():
        for v, p in zip(params, d["init"]):
            v.assign(p)

    def step(x, y):
        for v, g in zip(params, loss_and_grads(x, y)):
            v.assign_sub(LR * g)

    return Trainer(reset, step, lambda x, y: [g.numpy() for g in loss_and_grads(x, y)],
                   lambda X: _forward(params, adv.constant(X), adv.tanh).numpy())


def _without_locations(adv, trainer: Trainer) -> Trainer:
    """The same trainer with ``adv.config.capture_locations = False`` while it runs."""
    def off(fn):
        def run(*args):
            adv.config.capture_locations = False
            try:
                return fn(*args)
            finally:
                adv.config.capture_locations = True
        return run
    return Trainer(trainer.reset, off(trainer.step), off(trainer.gradients), trainer.logits)


def _adv_keras(adv, d) -> Trainer:
    model = adv.Sequential([adv.layers.Dense(n, activation="tanh", dtype="float64") for n in SIZES[1:-1]]
                           + [adv.layers.Dense(SIZES[-1], dtype="float64")])
    model.build((None, SIZES[0]))
    opt = adv.optimizers.SGD(learning_rate=LR)

    def loss_and_grads(x, y):
        with adv.GradientTape() as tape:
            logits = model(adv.constant(x))
            loss = adv.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            loss = adv.mean(loss)
        return tape.gradient(loss, model.trainable_variables)

    def reset():
        model.set_weights(d["init"])

    def step(x, y):
        opt.apply_gradients(zip(loss_and_grads(x, y), model.trainable_variables))

    reset()
    return Trainer(reset, step, lambda x, y: [g.numpy() for g in loss_and_grads(x, y)],
                   lambda X: model(adv.constant(X)).numpy())


def _torch(torch, d) -> Trainer:
    layers = []
    for i in range(len(SIZES) - 1):
        layers.append(torch.nn.Linear(SIZES[i], SIZES[i + 1]))
        if i < len(SIZES) - 2:
            layers.append(torch.nn.Tanh())
    model = torch.nn.Sequential(*layers)
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()
    ys = {}

    def target(y):
        key = id(y)
        if key not in ys:
            ys[key] = (y, torch.from_numpy(y))
        return ys[key][1]

    def reset():
        with torch.no_grad():
            for lin, W, b in zip(linears, d["init"][0::2], d["init"][1::2]):
                lin.weight.copy_(torch.from_numpy(W.T))
                lin.bias.copy_(torch.from_numpy(b))

    def loss(x, y):
        return loss_fn(model(torch.from_numpy(x)), target(y))

    def step(x, y):
        opt.zero_grad()
        loss(x, y).backward()
        opt.step()

    def gradients(x, y):
        opt.zero_grad()
        loss(x, y).backward()
        return [g for lin in linears for g in (lin.weight.grad.numpy().T, lin.bias.grad.numpy())]

    def logits(X):
        with torch.no_grad():
            return model(torch.from_numpy(X)).numpy()

    reset()
    return Trainer(reset, step, gradients, logits)


def _autograd(d) -> Trainer:
    import autograd
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def loss(params, x, y):
        z = _forward(params, x, anp.tanh)
        logp = z - logsumexp(z, axis=1, keepdims=True)
        return -anp.mean(logp[anp.arange(len(y)), y])

    g = autograd.grad(loss)
    params = []

    def reset():
        params[:] = [p.copy() for p in d["init"]]

    def step(x, y):
        params[:] = [p - LR * gi for p, gi in zip(params, g(params, x, y))]

    reset()
    return Trainer(reset, step, lambda x, y: g(params, x, y), lambda X: _forward(params, X, np.tanh))


def _jax(jax, d, jit: bool) -> Trainer:
    import jax.numpy as jnp

    def loss(params, x, y):
        logp = jax.nn.log_softmax(_forward(params, x, jnp.tanh))
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    g = jax.grad(loss)

    def update(params, x, y):
        return [p - LR * gi for p, gi in zip(params, g(params, x, y))]

    update = jax.jit(update) if jit else update
    grads = jax.jit(g) if jit else g
    state = {}
    cache = {}

    def device(a):
        key = id(a)
        if key not in cache:
            cache[key] = (a, jnp.asarray(a))
        return cache[key][1]

    def reset():
        state["params"] = [jnp.asarray(p) for p in d["init"]]

    def step(x, y):
        state["params"] = jax.block_until_ready(update(state["params"], device(x), device(y)))

    reset()
    return Trainer(reset, step, lambda x, y: [np.asarray(v) for v in grads(state["params"], device(x), device(y))],
                   lambda X: np.asarray(_forward(state["params"], jnp.asarray(X), jnp.tanh)))


def targets(rows) -> list:
    """Issue 8: an autodiff_viz step ≤ 1.5× the hand-written numpy step."""
    base = rows.get(("numpy", "step"))
    out = []
    for label in ("autodiff_viz (tape ops)", "autodiff_viz (Sequential)"):
        t = rows.get((label, "step"))
        if t and base:
            out.append({"target": f"W2 {label} step ≤ 1.5× hand-written numpy step", "measured": t / base,
                        "limit": 1.5, "unit": "× numpy"})
    plain = rows.get(("autodiff_viz (tape ops, capture_locations=False)", "step"))
    t = rows.get(("autodiff_viz (tape ops)", "step"))
    if t and plain:
        out.append({"target": "V1 trace overhead: W2 tape-ops step with locations (traces complete) / without ≤ 1.2",
                    "measured": t / plain, "limit": 1.2, "unit": "×"})
    return out
