"""W7 — one training step of an LSTM: 64 units, 50 time steps, batch 32.

Inputs ``(32, 50, 16)``; the LSTM's last output goes through ``Dense(1)``;
mean squared error; plain SGD (learning rate 0.01). Every library starts
from the same weights (Keras layout, converted for PyTorch) and the same
batch. Rows: the hand-written numpy backprop through time (the floor),
``adv.layers.LSTM`` under a tape, PyTorch with ``torch.nn.LSTMCell`` in a
Python loop (the goal: autodiff_viz ≤ 1.5× this), and PyTorch's fused
``torch.nn.LSTM`` (reported too). Columns: float64 and float32; gradients
are checked against the numpy reference in float64 before timing.
"""
from __future__ import annotations

import numpy as np

from .harness import Trainer, dtype_variant, finite_difference, max_relative_error

NAME = "W7"
TITLE = ("training step, LSTM 64 units, 50 steps, batch 32, 16 features, last output → Dense(1), MSE, SGD "
         "(ms per step)")
UNIT, SCALE = "ms", 1e3
CASES = ("float64", "float32")
BASELINE = ("torch (LSTMCell loop)", "float64")
BATCH, STEPS, FEATURES, UNITS, LR = 32, 50, 16, 64, 0.01
TORCH_LOOP, TORCH_FUSED, ADV = "torch (LSTMCell loop)", "torch (nn.LSTM, fused)", "autodiff_viz (layers.LSTM)"


def data(quick: bool) -> dict:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(BATCH, STEPS, FEATURES))
    y = rng.normal(size=(BATCH, 1))
    lim_k = np.sqrt(6.0 / (FEATURES + 4 * UNITS))
    q, _ = np.linalg.qr(rng.normal(size=(4 * UNITS, UNITS)))
    bias = np.zeros(4 * UNITS)
    bias[UNITS:2 * UNITS] = 1.0                                   # unit_forget_bias, as Keras
    lim_d = np.sqrt(6.0 / (UNITS + 1))
    init = [rng.uniform(-lim_k, lim_k, (FEATURES, 4 * UNITS)), q.T.copy(), bias,
            rng.uniform(-lim_d, lim_d, (UNITS, 1)), np.zeros(1)]
    return {"x": x, "y": y, "init": init}


# ----- the numpy floor: backprop through time by hand ---------------------------
def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _numpy_forward(params, x):
    K, U, b, W, c_out = params
    u = U.shape[0]
    h = np.zeros((x.shape[0], u), dtype=x.dtype)
    c = np.zeros_like(h)
    cache = []
    for t in range(x.shape[1]):
        z = x[:, t] @ K + h @ U + b
        i, f, g, o = _sigmoid(z[:, :u]), _sigmoid(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), _sigmoid(z[:, 3 * u:])
        c_prev, h_prev = c, h
        c = f * c_prev + i * g
        tc = np.tanh(c)
        h = o * tc
        cache.append((h_prev, c_prev, i, f, g, o, tc))
    return h @ W + c_out, h, cache


def _numpy_loss(params, x, y):
    pred, _, _ = _numpy_forward(params, x)
    return np.mean((pred - y) ** 2)


def _numpy_gradients(params, x, y):
    K, U, b, W, _ = params
    pred, h, cache = _numpy_forward(params, x)
    d_pred = 2 * (pred - y) / pred.size
    dW, dc_out = h.T @ d_pred, d_pred.sum(0)
    dh = d_pred @ W.T
    dc = np.zeros_like(dh)
    dK, dU, db = np.zeros_like(K), np.zeros_like(U), np.zeros_like(b)
    for t in range(x.shape[1] - 1, -1, -1):
        h_prev, c_prev, i, f, g, o, tc = cache[t]
        do = dh * tc
        dc = dc + dh * o * (1 - tc * tc)
        di, df, dg = dc * g, dc * c_prev, dc * i
        dz = np.concatenate([di * i * (1 - i), df * f * (1 - f), dg * (1 - g * g), do * o * (1 - o)], axis=1)
        dK += x[:, t].T @ dz
        dU += h_prev.T @ dz
        db += dz.sum(0)
        dh = dz @ U.T
        dc = dc * f
    return [dK, dU, db, dW, dc_out]


def reference(d) -> list:
    return _numpy_gradients(d["init"], d["x"], d["y"])


def check_reference() -> float:
    rng = np.random.default_rng(0)
    u, n_in = 2, 3
    params = [rng.normal(size=s) * 0.5 for s in [(n_in, 4 * u), (u, 4 * u), (4 * u,), (u, 1), (1,)]]
    x, y = rng.normal(size=(2, 4, n_in)), rng.normal(size=(2, 1))
    fd = finite_difference(lambda *p: _numpy_loss(list(p), x, y), params)
    return max_relative_error(_numpy_gradients(params, x, y), fd)


# ----- variants --------------------------------------------------------------------
def variants(lib: str, mod, d) -> dict:
    if lib == "numpy":
        return {"numpy (BPTT by hand)": dtype_variant({dt: _numpy(d, dt) for dt in CASES},
                                                      "backprop through time by hand")}
    if lib == "autodiff_viz":
        return {ADV: dtype_variant({dt: _adv(mod, d, dt) for dt in CASES},
                              "adv.layers.LSTM + Dense under a GradientTape, adv.optimizers.SGD")}
    if lib == "torch":
        return {TORCH_LOOP: dtype_variant({dt: _torch(mod, d, dt, fused=False) for dt in CASES},
                                     "torch.nn.LSTMCell called in a Python loop, torch.optim.SGD"),
                TORCH_FUSED: dtype_variant({dt: _torch(mod, d, dt, fused=True) for dt in CASES},
                                      "torch.nn.LSTM (one call for the sequence)")}
    return {}


def _numpy(d, dtype) -> Trainer:
    x, y = d["x"].astype(dtype), d["y"].astype(dtype)
    params = []

    def reset():
        params[:] = [p.astype(dtype) for p in d["init"]]

    def step():
        for p, g in zip(params, _numpy_gradients(params, x, y)):
            p -= LR * g

    reset()
    return Trainer(reset, step, lambda: _numpy_gradients(params, x, y))


def _adv(adv, d, dtype) -> Trainer:
    lstm = adv.layers.LSTM(UNITS, dtype=dtype)
    head = adv.layers.Dense(1, dtype=dtype)
    x, y = adv.constant(d["x"].astype(dtype)), adv.constant(d["y"].astype(dtype))
    head(lstm(x))                                   # builds both
    variables = lstm.trainable_variables + head.trainable_variables
    opt = adv.optimizers.SGD(learning_rate=LR)

    def gradients():
        with adv.GradientTape() as tape:
            loss = adv.mean(adv.square(head(lstm(x)) - y))
        return tape.gradient(loss, variables)

    def reset():
        for v, p in zip(variables, d["init"]):
            v.assign(p.astype(dtype))

    def step():
        opt.apply_gradients(zip(gradients(), variables))

    reset()
    return Trainer(reset, step, lambda: [g.numpy() for g in gradients()])


def _torch(torch, d, dtype, fused) -> Trainer:
    tdt = getattr(torch, dtype)
    x, y = torch.from_numpy(d["x"]).to(tdt), torch.from_numpy(d["y"]).to(tdt)
    rnn = (torch.nn.LSTM(FEATURES, UNITS, batch_first=True) if fused else torch.nn.LSTMCell(FEATURES, UNITS)).to(tdt)
    head = torch.nn.Linear(UNITS, 1).to(tdt)
    suffix = "_l0" if fused else ""
    w_ih, w_hh = getattr(rnn, "weight_ih" + suffix), getattr(rnn, "weight_hh" + suffix)
    b_ih, b_hh = getattr(rnn, "bias_ih" + suffix), getattr(rnn, "bias_hh" + suffix)
    opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=LR)

    def reset():
        K, U, b, W, c = (torch.from_numpy(p).to(tdt) for p in d["init"])
        with torch.no_grad():           # Keras gate order i, f, c, o is PyTorch's i, f, g, o: a transpose
            w_ih.copy_(K.T)
            w_hh.copy_(U.T)
            b_ih.copy_(b)
            b_hh.zero_()
            head.weight.copy_(W.T)
            head.bias.copy_(c)

    def loss():
        if fused:
            _, (h, _) = rnn(x)
            h = h[0]
        else:
            h = torch.zeros(BATCH, UNITS, dtype=tdt)
            c = torch.zeros(BATCH, UNITS, dtype=tdt)
            for t in range(STEPS):
                h, c = rnn(x[:, t], (h, c))
        return torch.mean((head(h) - y) ** 2)

    def step():
        opt.zero_grad()
        loss().backward()
        opt.step()

    def gradients():
        opt.zero_grad()
        loss().backward()
        return [w_ih.grad.numpy().T, w_hh.grad.numpy().T, b_ih.grad.numpy(), head.weight.grad.numpy().T,
                head.bias.grad.numpy()]

    reset()
    return Trainer(reset, step, gradients)


def targets(rows) -> list:
    """Issue 13: the LSTM step ≤ 1.5× PyTorch eager with an LSTMCell loop; the ratio to fused nn.LSTM is reported."""
    out = []
    for dt in CASES:
        t = rows.get((ADV, dt))
        loop, fused = rows.get((TORCH_LOOP, dt)), rows.get((TORCH_FUSED, dt))
        if t and loop:
            also = f" (× fused nn.LSTM: {t / fused:.2f})" if fused else ""
            out.append({"target": f"W7 LSTM step ({dt}) ≤ 1.5× PyTorch eager LSTMCell loop{also}",
                        "measured": t / loop, "limit": 1.5, "unit": "× torch loop"})
    return out
