"""W1 — per-op overhead: a chain of 200 elementwise ops on 16 float64 numbers.

The chain cycles ``*a, +b, tanh, exp`` and ends with ``sum``; gradients are
taken with respect to ``x``, ``a`` and ``b``. With 16 numbers the arithmetic
is nothing, so the time is what each library spends per op around numpy:
dispatch, recording, and the backward walk. Times are per op (÷ 200).
"""
from __future__ import annotations

import numpy as np

from .harness import Variant, finite_difference, max_relative_error

NAME = "W1"
TITLE = "per-op overhead: 200-op elementwise chain on 16 float64s (µs per op)"
UNIT, SCALE = "µs/op", 1e6
CASES = ("forward", "fwd+bwd")
BASELINE = ("numpy", "forward")
N_OPS, SIZE = 200, 16


def data(quick: bool) -> dict:
    rng = np.random.default_rng(1)
    return {"x": rng.normal(size=SIZE), "a": rng.uniform(0.5, 1.0, SIZE), "b": rng.normal(scale=0.1, size=SIZE)}


def chain(x, a, b, tanh, exp, n_ops=N_OPS):
    """The workload, written once for every array library (4 ops per line)."""
    h = x
    for _ in range(n_ops // 4):
        h = exp(tanh(h * a + b))
    return h


def _numpy_value(x, a, b, n_ops=N_OPS):
    return float(np.sum(chain(x, a, b, np.tanh, np.exp, n_ops)))


def _numpy_gradients(x, a, b, n_ops=N_OPS):
    """Hand-written backprop of ``sum(chain)``: the floor of fwd+bwd."""
    saved = []
    h = x
    for _ in range(n_ops // 4):
        t = np.tanh(h * a + b)
        e = np.exp(t)
        saved.append((h, t, e))
        h = e
    g = np.ones_like(x)
    ga, gb = np.zeros_like(a), np.zeros_like(b)
    for h, t, e in reversed(saved):
        g = g * e
        g = g * (1 - t * t)
        gb += g
        ga += g * h
        g = g * a
    return [g, ga, gb]


def reference(d) -> list:
    return _numpy_gradients(d["x"], d["a"], d["b"])


def check_reference() -> float:
    rng = np.random.default_rng(0)
    args = [rng.normal(size=3), rng.uniform(0.5, 1.0, 3), rng.normal(scale=0.1, size=3)]
    return max_relative_error(_numpy_gradients(*args, n_ops=8),
                              finite_difference(lambda *a: _numpy_value(*a, n_ops=8), args))


def variants(lib: str, mod, d) -> dict:
    build = {"numpy": _numpy, "autodiff_viz": _autodiff_viz, "torch": _torch, "autograd": _autograd,
             "jax": _jax}.get(lib)
    return build(mod, **d) if build else {}


def _numpy(np_, x, a, b):
    return {"numpy": Variant({"forward": lambda: np.sum(chain(x, a, b, np.tanh, np.exp)),
                              "fwd+bwd": lambda: _numpy_gradients(x, a, b)},
                             {"fwd+bwd": lambda: _numpy_gradients(x, a, b)}, per_call=N_OPS,
                             note="fwd+bwd written by hand")}


def _autodiff_viz(adv, x, a, b):
    xs = [adv.constant(v) for v in (x, a, b)]

    def forward():
        with adv.GradientTape() as tape:
            tape.watch(xs)
            return adv.sum(chain(*xs, adv.tanh, adv.exp))

    def fwd_bwd():
        with adv.GradientTape() as tape:
            tape.watch(xs)
            y = adv.sum(chain(*xs, adv.tanh, adv.exp))
        return tape.gradient(y, xs)

    def grads():
        return [g.numpy() for g in fwd_bwd()]

    def without_locations(fn):
        def run():
            adv.config.capture_locations = False
            try:
                return fn()
            finally:
                adv.config.capture_locations = True
        return run

    return {
        "autodiff_viz": Variant({"forward": forward, "fwd+bwd": fwd_bwd}, {"fwd+bwd": grads}, per_call=N_OPS,
                                note="forward recorded on a tape; locations captured (default)"),
        "autodiff_viz (capture_locations=False)": Variant(
            {"forward": without_locations(forward), "fwd+bwd": without_locations(fwd_bwd)},
            {"fwd+bwd": without_locations(grads)}, per_call=N_OPS),
    }


def _torch(torch, x, a, b):
    ts = [torch.tensor(v, requires_grad=True) for v in (x, a, b)]

    def forward():
        return chain(*ts, torch.tanh, torch.exp).sum()

    def fwd_bwd():
        return torch.autograd.grad(forward(), ts)

    return {"torch": Variant({"forward": forward, "fwd+bwd": fwd_bwd},
                             {"fwd+bwd": lambda: [g.numpy() for g in fwd_bwd()]}, per_call=N_OPS,
                             note="eager, requires_grad=True")}


def _autograd(autograd, x, a, b):
    import autograd.numpy as anp

    def f(x, a, b):
        return anp.sum(chain(x, a, b, anp.tanh, anp.exp))

    g = autograd.grad(f, argnum=[0, 1, 2])
    return {"autograd": Variant({"forward": lambda: f(x, a, b), "fwd+bwd": lambda: g(x, a, b)},
                                {"fwd+bwd": lambda: list(g(x, a, b))}, per_call=N_OPS)}


def _jax(jax, x, a, b):
    import jax.numpy as jnp

    def f(x, a, b):
        return jnp.sum(chain(x, a, b, jnp.tanh, jnp.exp))

    args = [jnp.asarray(v) for v in (x, a, b)]
    g = jax.grad(f, argnums=(0, 1, 2))
    fj, gj = jax.jit(f), jax.jit(g)
    return {
        "jax": Variant({"forward": lambda: f(*args).block_until_ready(),
                        "fwd+bwd": lambda: jax.block_until_ready(g(*args))},
                       {"fwd+bwd": lambda: [np.asarray(v) for v in g(*args)]}, per_call=N_OPS, note="op by op"),
        "jax + jit": Variant({"forward": lambda: fj(*args).block_until_ready(),
                              "fwd+bwd": lambda: jax.block_until_ready(gj(*args))},
                             {"fwd+bwd": lambda: [np.asarray(v) for v in gj(*args)]}, per_call=N_OPS,
                             note="compiled once during warm-up"),
    }


def targets(rows) -> list:
    """Issue 2: fwd+bwd ≤ 13× numpy forward per op; issue 8: ≤ PyTorch eager."""
    out = []
    base = rows.get(("numpy", "forward"))
    for label in ("autodiff_viz", "autodiff_viz (capture_locations=False)"):
        t = rows.get((label, "fwd+bwd"))
        if t and base:
            out.append({"target": f"W1 {label} fwd+bwd per op ≤ 13× numpy forward per op",
                        "measured": t / base, "limit": 13.0, "unit": "×"})
        torch_t = rows.get(("torch", "fwd+bwd"))
        if t and torch_t:
            out.append({"target": f"W1 {label} fwd+bwd per op ≤ PyTorch eager fwd+bwd",
                        "measured": t / torch_t, "limit": 1.0, "unit": "× torch"})
    on, off = rows.get(("autodiff_viz", "fwd+bwd")), rows.get(("autodiff_viz (capture_locations=False)", "fwd+bwd"))
    if on and off:
        out.append({"target": "V1 trace overhead: W1 fwd+bwd with locations (traces complete) / without ≤ 1.2",
                    "measured": on / off, "limit": 1.2, "unit": "×"})
    return out
