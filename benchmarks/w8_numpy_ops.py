"""W8 — numpy-surface ops on arrays of 10⁴ entries and more, forward + backward.

Each case is one op followed by a weighted sum (so every entry of the
gradient differs), gradients with respect to every input:

* ``einsum``: ``'bij,bjk->bik'`` on two 32×48×48 stacks (73 728 entries each);
* ``cumsum``: along the last axis of 100×1000;
* ``var``: per row of 100×1000, ``ddof=1``;
* ``solve``: ``A x = b`` for 32 systems of 48×48 with 4 right-hand sides
  (``adv.linalg.solve``).

The goal (issue 12) is autodiff_viz ≤ 1.2× PyTorch eager for each case.
"""
from __future__ import annotations

import numpy as np

from .harness import Variant, finite_difference, max_relative_error

NAME = "W8"
TITLE = "numpy-surface ops, fwd+bwd: einsum 'bij,bjk->bik' 32×48×48, cumsum and var of 100×1000, solve 32×48×48 (ms)"
UNIT, SCALE = "ms", 1e3
CASES = ("einsum", "cumsum", "var", "solve")
BASELINE = ("torch", "einsum")
SIZES = {"B": 32, "N": 48, "R": 100, "C": 1000, "K": 4}


def data(quick: bool, sizes=None) -> dict:
    s = sizes or SIZES
    rng = np.random.default_rng(8)
    B, N, R, C, K = s["B"], s["N"], s["R"], s["C"], s["K"]
    return {
        "ea": rng.normal(size=(B, N, N)), "eb": rng.normal(size=(B, N, N)), "ew": rng.normal(size=(B, N, N)),
        "cx": rng.normal(size=(R, C)), "cw": rng.normal(size=(R, C)),
        "vx": rng.normal(size=(R, C)), "vw": rng.normal(size=(R,)),
        "sA": rng.normal(size=(B, N, N)) + 3 * N ** 0.5 * np.eye(N), "sb": rng.normal(size=(B, N, K)),
        "sw": rng.normal(size=(B, N, K)),
    }


def _values(d):
    """The four losses, written with numpy (for the finite-difference check of the hand gradients)."""
    return [
        lambda ea, eb: np.sum(np.einsum("bij,bjk->bik", ea, eb) * d["ew"]),
        lambda cx: np.sum(np.cumsum(cx, axis=-1) * d["cw"]),
        lambda vx: np.sum(np.var(vx, axis=-1, ddof=1) * d["vw"]),
        lambda sA, sb: np.sum(np.linalg.solve(sA, sb) * d["sw"]),
    ]


def _einsum_grads(d):
    ea, eb, ew = d["ea"], d["eb"], d["ew"]
    return [ew @ np.swapaxes(eb, -1, -2), np.swapaxes(ea, -1, -2) @ ew]


def _cumsum_grads(d):
    return [np.flip(np.cumsum(np.flip(d["cw"], -1), axis=-1), -1)]


def _var_grads(d):
    vx = d["vx"]
    return [d["vw"][:, None] * 2 * (vx - vx.mean(axis=-1, keepdims=True)) / (vx.shape[-1] - 1)]


def _solve_grads(d):
    sA = d["sA"]
    x = np.linalg.solve(sA, d["sb"])
    g_sb = np.linalg.solve(np.swapaxes(sA, -1, -2), d["sw"])
    return [-g_sb @ np.swapaxes(x, -1, -2), g_sb]


HAND = {"einsum": _einsum_grads, "cumsum": _cumsum_grads, "var": _var_grads, "solve": _solve_grads}


def _numpy_gradients(d) -> list:
    """Hand-written backprop of the four losses: the reference (einsum a, b; cumsum x; var x; solve A, b)."""
    return [g for case in CASES for g in HAND[case](d)]


def reference(d) -> list:
    return _numpy_gradients(d)


def check_reference() -> float:
    d = data(True, {"B": 2, "N": 3, "R": 2, "C": 4, "K": 2})
    f = _values(d)
    numeric = (finite_difference(f[0], [d["ea"], d["eb"]]) + finite_difference(f[1], [d["cx"]])
               + finite_difference(f[2], [d["vx"]]) + finite_difference(f[3], [d["sA"], d["sb"]]))
    return max_relative_error(_numpy_gradients(d), numeric)


def variants(lib: str, mod, d) -> dict:
    build = {"numpy": _numpy, "autodiff_viz": _autodiff_viz, "torch": _torch}.get(lib)
    return build(mod, d) if build else {}


def _numpy(np_, d):
    return {"numpy": Variant({case: (lambda f=f: f(d)) for case, f in HAND.items()},
                             {"all": lambda: _numpy_gradients(d)},
                             note="the gradients by hand, without the forward pass (a floor)")}


def _autodiff_viz(adv, d):
    t = {k: adv.constant(v) for k, v in d.items()}

    def grads(loss, names):
        xs = [t[n] for n in names]
        with adv.GradientTape() as tape:
            tape.watch(xs)
            y = loss(*xs)
        return tape.gradient(y, xs)

    cases = {
        "einsum": lambda: grads(lambda a, b: adv.sum(adv.einsum("bij,bjk->bik", a, b) * t["ew"]), ["ea", "eb"]),
        "cumsum": lambda: grads(lambda x: adv.sum(adv.cumsum(x, axis=-1) * t["cw"]), ["cx"]),
        "var": lambda: grads(lambda x: adv.sum(adv.var(x, axis=-1, ddof=1) * t["vw"]), ["vx"]),
    }
    solve = getattr(getattr(adv, "linalg", None), "solve", None)
    if solve is not None:
        cases["solve"] = lambda: grads(lambda A, b: adv.sum(solve(A, b) * t["sw"]), ["sA", "sb"])

    def check():
        out = [g.numpy() for case in ("einsum", "cumsum", "var") for g in cases[case]()]
        return out + ([g.numpy() for g in cases["solve"]()] if "solve" in cases else _numpy_gradients(d)[4:])

    return {"autodiff_viz": Variant(cases, {"all": check}, note="recorded on a tape, default settings")}


def _torch(torch, d):
    t = {k: torch.tensor(v) for k, v in d.items()}

    def grads(loss, names):
        xs = [t[n].clone().requires_grad_(True) for n in names]
        return torch.autograd.grad(loss(*xs), xs)

    cases = {
        "einsum": lambda: grads(lambda a, b: (torch.einsum("bij,bjk->bik", a, b) * t["ew"]).sum(), ["ea", "eb"]),
        "cumsum": lambda: grads(lambda x: (torch.cumsum(x, dim=-1) * t["cw"]).sum(), ["cx"]),
        "var": lambda: grads(lambda x: (torch.var(x, dim=-1, correction=1) * t["vw"]).sum(), ["vx"]),
        "solve": lambda: grads(lambda A, b: (torch.linalg.solve(A, b) * t["sw"]).sum(), ["sA", "sb"]),
    }

    def check():
        return [g.numpy() for case in CASES for g in cases[case]()]

    return {"torch": Variant(cases, {"all": check}, note="eager, requires_grad=True")}


def targets(rows) -> list:
    """Issue 12: each op's fwd+bwd ≤ 1.2× PyTorch eager."""
    out = []
    for case in CASES:
        mine, theirs = rows.get(("autodiff_viz", case)), rows.get(("torch", case))
        if mine and theirs:
            out.append({"target": f"W8 {case} fwd+bwd ≤ 1.2× PyTorch eager", "measured": mine / theirs,
                        "limit": 1.2, "unit": "× torch"})
    return out
