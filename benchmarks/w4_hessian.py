"""W4 — the 100×100 Hessian of ``sum(tanh(A @ x)**2)``.

A second derivative: autodiff_viz records its own backward pass on an outer
tape and takes the Jacobian of the gradient (reverse over reverse); the
peers use their ``hessian`` transforms. The numpy row is the closed form
``Aᵀ diag((2 − 6t²)(1 − t²)) A`` with ``t = tanh(A x)``.
"""
from __future__ import annotations

import numpy as np

from .harness import Variant, finite_difference, max_relative_error

NAME = "W4"
TITLE = "100×100 Hessian of sum(tanh(A @ x)**2) (ms)"
UNIT, SCALE = "ms", 1e3
CASES = ("hessian",)
BASELINE = ("numpy", "hessian")
N = 100


def data(quick: bool, n: int = N) -> dict:
    rng = np.random.default_rng(4)
    return {"x": rng.normal(size=n), "A": rng.normal(size=(n, n)) / np.sqrt(n)}


def f(x, A, tanh, sum_):
    return sum_(tanh(A @ x) ** 2)


def _numpy_gradient(x, A):
    t = np.tanh(A @ x)
    return A.T @ (2 * t * (1 - t * t))


def _numpy_hessian(x, A):
    t = np.tanh(A @ x)
    return A.T @ (((2 - 6 * t * t) * (1 - t * t))[:, None] * A)


def reference(d) -> list:
    return [_numpy_hessian(d["x"], d["A"])]


def check_reference() -> float:
    """The closed-form gradient against differences of f, the Hessian against differences of the gradient."""
    d = data(False, n=4)
    x, A = d["x"], d["A"]
    grad_err = max_relative_error([_numpy_gradient(x, A)],
                                  finite_difference(lambda v: f(v, A, np.tanh, np.sum), [x]))
    fd_hess = np.stack([finite_difference(lambda v: _numpy_gradient(v, A)[i], [x])[0] for i in range(4)])
    return max(grad_err, max_relative_error([_numpy_hessian(x, A)], [fd_hess]))


def variants(lib: str, mod, d) -> dict:
    x, A = d["x"], d["A"]
    if lib == "numpy":
        run = lambda: _numpy_hessian(x, A)  # noqa: E731
        return {"numpy": Variant({"hessian": run}, {"hessian": run}, note="closed form by hand")}
    if lib == "autodiff_viz":
        At = mod.constant(A)
        h = mod.hessian(lambda v: f(v, At, mod.tanh, mod.sum))
        xt = mod.constant(x)
        run = lambda: h(xt).numpy()  # noqa: E731
        return {"autodiff_viz": Variant({"hessian": run}, {"hessian": run}, note="adv.hessian")}
    if lib == "torch":
        torch = mod
        At, xt = torch.tensor(A), torch.tensor(x)
        h = torch.func.hessian(lambda v: f(v, At, torch.tanh, torch.sum))
        run = lambda: h(xt).numpy()  # noqa: E731
        return {"torch": Variant({"hessian": run}, {"hessian": run}, note="torch.func.hessian")}
    if lib == "autograd":
        import autograd
        import autograd.numpy as anp
        h = autograd.hessian(lambda v: f(v, A, anp.tanh, anp.sum))
        run = lambda: h(x)  # noqa: E731
        return {"autograd": Variant({"hessian": run}, {"hessian": run}, note="autograd.hessian")}
    if lib == "jax":
        jax = mod
        import jax.numpy as jnp
        Aj, xj = jnp.asarray(A), jnp.asarray(x)
        h = jax.hessian(lambda v: f(v, Aj, jnp.tanh, jnp.sum))
        hj = jax.jit(h)
        plain = lambda: np.asarray(jax.block_until_ready(h(xj)))  # noqa: E731
        jitted = lambda: np.asarray(jax.block_until_ready(hj(xj)))  # noqa: E731
        return {"jax": Variant({"hessian": plain}, {"hessian": plain}, note="jax.hessian"),
                "jax + jit": Variant({"hessian": jitted}, {"hessian": jitted})}
    return {}


def targets(rows) -> list:
    """Issue 8: adv.hessian ≤ 1.5× torch.func.hessian."""
    ours, theirs = rows.get(("autodiff_viz", "hessian")), rows.get(("torch", "hessian"))
    if not (ours and theirs):
        return []
    return [{"target": "W4 adv.hessian ≤ 1.5× torch.func.hessian", "measured": ours / theirs,
             "limit": 1.5, "unit": "× torch"}]
