"""W6 — one training step of a LeNet-5-sized CNN, batch 64, 28×28×1 inputs.

``Conv2D(6, 5, relu) → MaxPooling2D(2) → Conv2D(16, 5, relu) → MaxPooling2D(2) → Flatten →
Dense(120, relu) → Dense(10)``, softmax cross-entropy (mean over the batch),
plain SGD (learning rate 0.01), on one fixed batch of random images. Every
library starts from the same weights (Keras layout; converted to PyTorch's
``NCHW`` / ``(out, in, kh, kw)`` layout, including the row order of the first
Dense kernel, which follows the flattening order). Rows: ``adv.Sequential``
of ``adv.layers`` under a ``GradientTape``, and PyTorch eager (the goal:
autodiff_viz ≤ 2× PyTorch). Columns: float64 and float32; gradients are
checked in float64 against a numpy reference written independently (an
``einsum`` over ``sliding_window_view`` windows) before anything is timed.
"""
from __future__ import annotations

import numpy as np

from .harness import Trainer, dtype_variant, finite_difference, max_relative_error

NAME = "W6"
TITLE = ("training step, LeNet-5-sized CNN (Conv 6@5×5, MaxPool 2, Conv 16@5×5, MaxPool 2, Dense 120, Dense 10), "
         "batch 64, 28×28×1, softmax cross-entropy, SGD (ms per step)")
UNIT, SCALE = "ms", 1e3
CASES = ("float64", "float32")
BASELINE = ("torch", "float64")
BATCH, SIZE, LR = 64, 28, 0.01
ADV = "autodiff_viz (Sequential of layers)"


def _glorot(rng, shape):
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    limit = np.sqrt(6.0 / (shape[-2] * receptive + shape[-1] * receptive))
    return rng.uniform(-limit, limit, shape)


def data(quick: bool, size=SIZE, batch=BATCH, widths=(6, 16, 120, 10)) -> dict:
    rng = np.random.default_rng(6)
    c1, c2, d1, d2 = widths
    flat = ((size - 4) // 2 - 4) // 2
    init = [_glorot(rng, (5, 5, 1, c1)), rng.uniform(-0.1, 0.1, c1), _glorot(rng, (5, 5, c1, c2)),
            rng.uniform(-0.1, 0.1, c2), _glorot(rng, (flat * flat * c2, d1)), rng.uniform(-0.1, 0.1, d1),
            _glorot(rng, (d1, d2)), rng.uniform(-0.1, 0.1, d2)]
    return {"x": rng.normal(size=(batch, size, size, 1)), "y": rng.integers(0, d2, batch), "init": init}


# ----- the numpy reference (independent of autodiff_viz's convolution) ------------------
def _windows(x, k):
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))     # (N, oh, ow, C, k, k)


def _conv(x, w, b):
    return np.einsum("nhwcij,ijco->nhwo", _windows(x, w.shape[0]), w, optimize=True) + b


def _pool(x):
    n, h, w, c = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def _pool_back(x, y, g):
    n, h, w, c = x.shape
    xs = x.reshape(n, h // 2, 2, w // 2, 2, c)
    hit = (xs == y[:, :, None, :, None]).reshape(n, h // 2, 2, w // 2, 2, c).astype(x.dtype)
    return (hit * g[:, :, None, :, None]).reshape(x.shape)       # random data: no ties


def _forward(params, x):
    K1, b1, K2, b2, W1, c1, W2, c2 = params
    a1 = np.maximum(_conv(x, K1, b1), 0)
    p1 = _pool(a1)
    a2 = np.maximum(_conv(p1, K2, b2), 0)
    p2 = _pool(a2)
    h = np.maximum(p2.reshape(len(x), -1) @ W1 + c1, 0)
    return h @ W2 + c2, (a1, p1, a2, p2, h)


def _numpy_loss(params, x, y):
    z, _ = _forward(params, x)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


def _conv_back(x, w, g):
    """Gradients of a valid, stride-1 convolution: the input (full correlation with the flipped kernel)
    and the kernel (correlation of the input with g)."""
    k = w.shape[0]
    dw = np.einsum("nhwcij,nhwo->ijco", _windows(x, k), g, optimize=True)
    gp = np.pad(g, ((0, 0), (k - 1, k - 1), (k - 1, k - 1), (0, 0)))
    dx = np.einsum("nhwoij,ijco->nhwc", _windows(gp, k), w[::-1, ::-1], optimize=True)
    return dx, dw


def _numpy_gradients(params, x, y):
    K1, b1, K2, b2, W1, c1, W2, c2 = params
    z, (a1, p1, a2, p2, h) = _forward(params, x)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    dz = e / e.sum(axis=1, keepdims=True)
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dW2, dc2 = h.T @ dz, dz.sum(0)
    dh = (dz @ W2.T) * (h > 0)
    dW1, dc1 = p2.reshape(len(x), -1).T @ dh, dh.sum(0)
    da2 = _pool_back(a2, p2, (dh @ W1.T).reshape(p2.shape)) * (a2 > 0)
    dp1, dK2 = _conv_back(p1, K2, da2)
    da1 = _pool_back(a1, p1, dp1) * (a1 > 0)
    _, dK1 = _conv_back(x, K1, da1)
    return [dK1, da1.sum((0, 1, 2)), dK2, da2.sum((0, 1, 2)), dW1, dc1, dW2, dc2]


def reference(d) -> list:
    return _numpy_gradients(d["init"], d["x"], d["y"])


def check_reference() -> float:
    small = data(False, size=16, batch=2, widths=(2, 3, 4, 3))
    fd = finite_difference(lambda *p: _numpy_loss(list(p), small["x"], small["y"]), small["init"])
    return max_relative_error(_numpy_gradients(small["init"], small["x"], small["y"]), fd)


# ----- variants ------------------------------------------------------------------------
def variants(lib: str, mod, d) -> dict:
    if lib == "autodiff_viz":
        return {ADV: dtype_variant({dt: _adv(mod, d, dt) for dt in CASES},
                              "Conv2D, MaxPooling2D, Flatten, Dense under a GradientTape, adv.optimizers.SGD")}
    if lib == "torch":
        return {"torch": dtype_variant({dt: _torch(mod, d, dt) for dt in CASES},
                                  "torch.nn.Sequential (NCHW), F.cross_entropy, torch.optim.SGD")}
    return {}


def _adv(adv, d, dtype) -> Trainer:
    L = adv.layers
    model = adv.Sequential([L.Input((SIZE, SIZE, 1)), L.Conv2D(6, 5, activation="relu", dtype=dtype),
                            L.MaxPooling2D(dtype=dtype), L.Conv2D(16, 5, activation="relu", dtype=dtype),
                            L.MaxPooling2D(dtype=dtype), L.Flatten(dtype=dtype),
                            L.Dense(120, activation="relu", dtype=dtype), L.Dense(10, dtype=dtype)])
    x, y = d["x"].astype(dtype), d["y"]
    opt = adv.optimizers.SGD(learning_rate=LR)
    variables = model.trainable_variables

    def gradients():
        with adv.GradientTape() as tape:
            logits = model(adv.constant(x.copy()))   # a new batch array each step, as in fit (nothing cached)
            loss = adv.mean(adv.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
        return tape.gradient(loss, variables)

    def reset():
        model.set_weights([p.astype(dtype) for p in d["init"]])

    def step():
        opt.apply_gradients(zip(gradients(), variables))

    reset()
    return Trainer(reset, step, lambda: [g.numpy() for g in gradients()])


def _to_torch_layout(params):
    """Keras layout -> PyTorch layout (and back with ``inverse=True`` in :func:`_from_torch_layout`)."""
    K1, b1, K2, b2, W1, c1, W2, c2 = params
    n = int(round(np.sqrt(W1.shape[0] // K2.shape[-1])))
    W1t = W1.reshape(n, n, K2.shape[-1], -1).transpose(2, 0, 1, 3).reshape(W1.shape)   # rows (h, w, c) -> (c, h, w)
    return [K1.transpose(3, 2, 0, 1), b1, K2.transpose(3, 2, 0, 1), b2, W1t.T, c1, W2.T, c2]


def _from_torch_layout(grads, c2_channels):
    gK1, gb1, gK2, gb2, gW1, gc1, gW2, gc2 = grads
    rows = gW1.T
    n = int(round(np.sqrt(rows.shape[0] // c2_channels)))
    rows = rows.reshape(c2_channels, n, n, -1).transpose(1, 2, 0, 3).reshape(rows.shape)
    return [gK1.transpose(2, 3, 1, 0), gb1, gK2.transpose(2, 3, 1, 0), gb2, rows, gc1, gW2.T, gc2]


def _torch(torch, d, dtype) -> Trainer:
    nn = torch.nn
    tdt = getattr(torch, dtype)
    model = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 10)).to(tdt)
    params = list(model.parameters())
    x = torch.from_numpy(d["x"].transpose(0, 3, 1, 2).copy()).to(tdt)
    y = torch.from_numpy(d["y"])
    opt = torch.optim.SGD(params, lr=LR)
    loss_fn = nn.CrossEntropyLoss()

    def reset():
        with torch.no_grad():
            for p, v in zip(params, _to_torch_layout(d["init"])):
                p.copy_(torch.from_numpy(np.ascontiguousarray(v)).to(tdt))

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    def gradients():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        return _from_torch_layout([p.grad.numpy() for p in params], 16)

    reset()
    return Trainer(reset, step, gradients)


def targets(rows) -> list:
    """Issue 13: an autodiff_viz CNN training step ≤ 2× PyTorch eager, per dtype."""
    out = []
    for dt in CASES:
        t, base = rows.get((ADV, dt)), rows.get(("torch", dt))
        if t and base:
            out.append({"target": f"W6 {dt}: CNN training step ≤ 2.0× PyTorch eager", "measured": t / base,
                        "limit": 2.0, "unit": "× torch"})
    return out
