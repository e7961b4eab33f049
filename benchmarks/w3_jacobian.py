"""W3 — the full 200×200 Jacobian of ``tanh(W2 @ tanh(W1 @ x))``.

Three ways to get it: a loop of 200 reverse passes (one row each), one
vectorized reverse pass seeded with the identity, and forward mode (one
walk pushing the identity of tangents). Every case includes the forward
pass. The numpy row is the closed form ``diag(1−y²) W2 diag(1−h²) W1``.
"""
from __future__ import annotations

import numpy as np

from .harness import Variant, finite_difference, max_relative_error

NAME = "W3"
TITLE = "200×200 Jacobian of tanh(W2 @ tanh(W1 @ x)) (ms)"
UNIT, SCALE = "ms", 1e3
CASES = ("loop of reverse", "vectorized reverse", "forward mode")
BASELINE = ("numpy", "vectorized reverse")
N = 200


def data(quick: bool, n: int = N) -> dict:
    rng = np.random.default_rng(3)
    return {"x": rng.normal(size=n), "W1": rng.normal(size=(n, n)) / np.sqrt(n),
            "W2": rng.normal(size=(n, n)) / np.sqrt(n)}


def f(x, W1, W2, tanh):
    return tanh(W2 @ tanh(W1 @ x))


def _numpy_jacobian(x, W1, W2):
    h = np.tanh(W1 @ x)
    y = np.tanh(W2 @ h)
    return ((1 - y * y)[:, None] * W2) @ ((1 - h * h)[:, None] * W1)


def reference(d) -> list:
    return [_numpy_jacobian(d["x"], d["W1"], d["W2"])]


def check_reference() -> float:
    d = data(False, n=5)
    fd = np.stack([finite_difference(lambda x: f(x, d["W1"], d["W2"], np.tanh)[i], [d["x"]])[0]
                   for i in range(5)])
    return max_relative_error([_numpy_jacobian(d["x"], d["W1"], d["W2"])], [fd])


def variants(lib: str, mod, d) -> dict:
    build = {"numpy": _numpy, "autodiff_viz": _autodiff_viz, "torch": _torch, "autograd": _autograd,
             "jax": _jax}.get(lib)
    return build(mod, **d) if build else {}


def _numpy(np_, x, W1, W2):
    run = lambda: _numpy_jacobian(x, W1, W2)  # noqa: E731
    return {"numpy": Variant({"vectorized reverse": run}, {"vectorized reverse": run}, note="closed form by hand")}


def _autodiff_viz(adv, x, W1, W2):
    xt, W1t, W2t = adv.constant(x), adv.constant(W1), adv.constant(W2)
    eye = np.eye(N)

    def loop():
        with adv.GradientTape(persistent=True) as tape:
            tape.watch(xt)
            y = f(xt, W1t, W2t, adv.tanh)
        return np.stack([tape.gradient(y, xt, output_gradients=eye[i]).numpy() for i in range(N)])

    def vectorized():
        with adv.GradientTape() as tape:
            tape.watch(xt)
            y = f(xt, W1t, W2t, adv.tanh)
        return tape.jacobian(y, xt).numpy()

    forward = adv.jacobian(lambda v: f(v, W1t, W2t, adv.tanh), mode="forward")
    cases = {"loop of reverse": loop, "vectorized reverse": vectorized,
             "forward mode": lambda: forward(xt).numpy()}
    return {"autodiff_viz": Variant(cases, cases,
                                    note="tape.gradient(output_gradients=one-hot) ×200; tape.jacobian; "
                                         "adv.jacobian(mode='forward')")}


def _torch(torch, x, W1, W2):
    xt, W1t, W2t = (torch.tensor(v) for v in (x, W1, W2))
    eye = torch.eye(N)

    def g(v):
        return f(v, W1t, W2t, torch.tanh)

    def loop():
        v = xt.clone().requires_grad_(True)
        y = g(v)
        return torch.stack([torch.autograd.grad(y, v, eye[i], retain_graph=True)[0] for i in range(N)]).numpy()

    jacrev, jacfwd = torch.func.jacrev(g), torch.func.jacfwd(g)
    cases = {"loop of reverse": loop, "vectorized reverse": lambda: jacrev(xt).numpy(),
             "forward mode": lambda: jacfwd(xt).numpy()}
    return {"torch": Variant(cases, cases, note="autograd.grad ×200; torch.func.jacrev; torch.func.jacfwd")}


def _autograd(autograd, x, W1, W2):
    import autograd.numpy as anp

    def g(v):
        return f(v, W1, W2, anp.tanh)

    eye = np.eye(N)

    def loop():
        vjp, _ = autograd.make_vjp(g)(x)
        return np.stack([vjp(eye[i]) for i in range(N)])

    jac = autograd.jacobian(g)
    cases = {"loop of reverse": loop, "vectorized reverse": lambda: jac(x)}
    return {"autograd": Variant(cases, cases,
                                note="make_vjp ×200; autograd.jacobian (itself a loop over rows)")}


def _jax(jax, x, W1, W2):
    import jax.numpy as jnp

    xj, W1j, W2j = (jnp.asarray(v) for v in (x, W1, W2))
    eye = jnp.eye(N)

    def g(v):
        return f(v, W1j, W2j, jnp.tanh)

    def loop():
        _, vjp = jax.vjp(g, xj)
        return np.stack([np.asarray(vjp(eye[i])[0]) for i in range(N)])

    def block(fn):
        return lambda: np.asarray(jax.block_until_ready(fn(xj)))

    rev, fwd = jax.jacrev(g), jax.jacfwd(g)
    plain = {"loop of reverse": loop, "vectorized reverse": block(rev), "forward mode": block(fwd)}
    jitted = {"vectorized reverse": block(jax.jit(rev)), "forward mode": block(jax.jit(fwd))}
    return {
        "jax": Variant(plain, plain, note="jax.vjp ×200; jax.jacrev; jax.jacfwd"),
        "jax + jit": Variant(jitted, jitted, note="compiled once during warm-up"),
    }


def targets(rows) -> list:
    """Issue 2: vectorized ≥ 20× faster than the loop; issue 8: ≤ torch.func.jacrev."""
    out = []
    loop, vec = rows.get(("autodiff_viz", "loop of reverse")), rows.get(("autodiff_viz", "vectorized reverse"))
    if loop and vec:
        out.append({"target": "W3 autodiff_viz: loop of 200 reverse passes / vectorized reverse ≥ 20",
                    "measured": loop / vec, "limit": 20.0, "unit": "×", "at_least": True})
    jacrev = rows.get(("torch", "vectorized reverse"))
    if vec and jacrev:
        out.append({"target": "W3 autodiff_viz vectorized reverse ≤ torch.func.jacrev",
                    "measured": vec / jacrev, "limit": 1.0, "unit": "× torch"})
    return out
