"""W5 — what a gradient costs on top of the forward pass, when matmuls dominate.

``sum(tanh(X @ W1) @ W2)`` with X 512×1024, W1 1024×1024, W2 1024×256,
gradients with respect to W1 and W2. The forward pass is two matmuls; the
backward pass three (``G W2ᵀ``, ``tanh(XW1)ᵀ G``, ``Xᵀ dZ``), so a perfect
implementation needs about 2.1× the forward time for both (the
cheap-gradient bound is 3). "forward" is the plain forward pass, without
recording; "fwd+bwd" records and walks back. Run on 1 and 2 threads.
"""
from __future__ import annotations

import numpy as np

from .harness import Variant, finite_difference, max_relative_error

NAME = "W5"
TITLE = "sum(tanh(X @ W1) @ W2), X 512×1024, W1 1024×1024, W2 1024×256 (ms)"
UNIT, SCALE = "ms", 1e3
CASES = ("forward", "fwd+bwd")
BASELINE = ("numpy", "forward")
THREADS = (1, 2)
SHAPES = {"X": (512, 1024), "W1": (1024, 1024), "W2": (1024, 256)}


def data(quick: bool, shapes=None) -> dict:
    rng = np.random.default_rng(5)
    shapes = shapes or SHAPES
    return {k: rng.normal(size=s) / np.sqrt(s[0]) for k, s in shapes.items()}


def forward(X, W1, W2, tanh, sum_):
    return sum_(tanh(X @ W1) @ W2)


def _numpy_gradients(X, W1, W2):
    """Hand-written backprop: the floor."""
    t = np.tanh(X @ W1)
    G = np.ones((X.shape[0], W2.shape[1]))
    dW2 = t.T @ G
    dZ = (G @ W2.T) * (1 - t * t)
    return [X.T @ dZ, dW2]


def reference(d) -> list:
    return _numpy_gradients(d["X"], d["W1"], d["W2"])


def check_reference() -> float:
    d = data(False, {"X": (3, 4), "W1": (4, 5), "W2": (5, 2)})
    fd = finite_difference(lambda W1, W2: forward(d["X"], W1, W2, np.tanh, np.sum), [d["W1"], d["W2"]])
    return max_relative_error(_numpy_gradients(d["X"], d["W1"], d["W2"]), fd)


def variants(lib: str, mod, d) -> dict:
    build = {"numpy": _numpy, "autodiff_viz": _autodiff_viz, "torch": _torch, "autograd": _autograd,
             "jax": _jax}.get(lib)
    return build(mod, **d) if build else {}


def _numpy(np_, X, W1, W2):
    return {"numpy": Variant({"forward": lambda: forward(X, W1, W2, np.tanh, np.sum),
                              "fwd+bwd": lambda: _numpy_gradients(X, W1, W2)},
                             {"fwd+bwd": lambda: _numpy_gradients(X, W1, W2)},
                             note="fwd+bwd written by hand")}


def _autodiff_viz(adv, X, W1, W2):
    Xt, W1t, W2t = adv.constant(X), adv.Variable(W1), adv.Variable(W2)

    def fwd_bwd():
        with adv.GradientTape() as tape:
            y = forward(Xt, W1t, W2t, adv.tanh, adv.sum)
        return tape.gradient(y, [W1t, W2t])

    cases = {"forward": lambda: forward(Xt, W1t, W2t, adv.tanh, adv.sum), "fwd+bwd": fwd_bwd}
    return {"autodiff_viz": Variant(cases, {"fwd+bwd": lambda: [g.numpy() for g in fwd_bwd()]},
                                    note="W1, W2 are adv.Variable; forward without a tape")}


def _torch(torch, X, W1, W2):
    Xt = torch.tensor(X)
    W1t, W2t = torch.tensor(W1, requires_grad=True), torch.tensor(W2, requires_grad=True)

    def plain():
        with torch.no_grad():
            return forward(Xt, W1t, W2t, torch.tanh, torch.sum)

    def fwd_bwd():
        return torch.autograd.grad(forward(Xt, W1t, W2t, torch.tanh, torch.sum), [W1t, W2t])

    return {"torch": Variant({"forward": plain, "fwd+bwd": fwd_bwd},
                             {"fwd+bwd": lambda: [g.numpy() for g in fwd_bwd()]},
                             note="forward under torch.no_grad()")}


def _autograd(autograd, X, W1, W2):
    import autograd.numpy as anp

    def f(W1, W2):
        return forward(X, W1, W2, anp.tanh, anp.sum)

    g = autograd.grad(f, argnum=[0, 1])
    return {"autograd": Variant({"forward": lambda: f(W1, W2), "fwd+bwd": lambda: g(W1, W2)},
                                {"fwd+bwd": lambda: list(g(W1, W2))})}


def _jax(jax, X, W1, W2):
    import jax.numpy as jnp

    Xj, W1j, W2j = (jnp.asarray(v) for v in (X, W1, W2))

    def f(W1, W2):
        return forward(Xj, W1, W2, jnp.tanh, jnp.sum)

    g = jax.grad(f, argnums=(0, 1))
    out = {}
    for label, (ff, gg) in {"jax": (f, g), "jax + jit": (jax.jit(f), jax.jit(g))}.items():
        out[label] = Variant(
            {"forward": lambda ff=ff: ff(W1j, W2j).block_until_ready(),
             "fwd+bwd": lambda gg=gg: jax.block_until_ready(gg(W1j, W2j))},
            {"fwd+bwd": lambda gg=gg: [np.asarray(v) for v in gg(W1j, W2j)]})
    return out


def derived(rows) -> dict:
    """The ratio fwd+bwd / forward of every row."""
    return {label: rows[(label, "fwd+bwd")] / rows[(label, "forward")]
            for label, case in rows if case == "forward" and (label, "fwd+bwd") in rows}


def targets(rows) -> list:
    """Issues 2 and 8: time(fwd+bwd) / time(forward) ≤ 2.2."""
    ratio = derived(rows).get("autodiff_viz")
    if ratio is None:
        return []
    return [{"target": "W5 autodiff_viz time(fwd+bwd) / time(forward) ≤ 2.2",
             "measured": ratio, "limit": 2.2, "unit": ""}]
