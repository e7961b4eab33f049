"""Gradient checks for the tests ported from HIPS autograd (tests/test_port_autograd_*.py).

autograd checks a function the same way at every call site: reverse mode
(a VJP) and forward mode (a JVP) against a central finite difference along a
random direction, and, for ``order=2``, the same checks of the JVP function
``(x, v) ↦ J(x)·v`` and of the VJP function ``(x, u) ↦ uᵀ·J(x)`` in both of
their arguments (forward over forward, reverse over forward, forward over
reverse, reverse over reverse). This module does that with this package's
``adv.vjp`` and ``adv.jvp``:

    check_grads(fun, x, y, argnums=(0, 1), modes=("fwd", "rev"), order=2)
    combo_check(fun, argnums)(*lists_of_args, **lists_of_kwargs)   # every combination

Functions may return a tensor, a number, or a tuple/list of tensors (they
are flattened and joined, as autograd's tuple vector space does). A failure
says which argument, which mode, which order and both numbers.
"""
from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

import autodiff_viz as adv

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-6


def _joined(out):
    """One flat tensor from a tensor or a (nested) tuple/list of them."""
    if isinstance(out, (tuple, list)):
        parts = [adv.reshape(_joined(o), (-1,)) for o in out]
        return adv.concatenate(parts, axis=0) if parts else adv.constant(np.zeros(0))
    if isinstance(out, adv.Tensor):
        return out
    return adv.constant(np.asarray(out, dtype=np.float64))


def _value(t) -> np.ndarray:
    return np.asarray(t.numpy() if isinstance(t, adv.Tensor) else t, dtype=np.float64)


def _close(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= ATOL + RTOL * np.abs(b)))


def _describe(name):
    return getattr(name, "__name__", repr(name))


def _numeric_jvp(f, x, v):
    """``(f(x + εv/2) − f(x − εv/2)) / ε``, evaluated on tensors outside any tape."""
    plus = _value(f(adv.constant(x + 0.5 * EPS * v)))
    minus = _value(f(adv.constant(x - 0.5 * EPS * v)))
    return (plus - minus) / EPS


def _check_first_order(f, x, modes, label):
    """f: one float64 array -> one tensor. Reverse: ⟨u, J v⟩ both ways; forward: J v entry by entry."""
    rng = np.random.default_rng(zlib.crc32(label.encode()))
    v = rng.normal(size=x.shape)
    numeric = _numeric_jvp(f, x, v)
    if "rev" in modes:
        y, vjp_fn = adv.vjp(f, adv.constant(x))
        u = rng.normal(size=y.shape)
        assert y.shape == numeric.shape, f"{label}: output shape {y.shape}, numeric {numeric.shape}"
        (xbar,) = vjp_fn(adv.constant(u))
        assert xbar.shape == x.shape, f"{label} (rev): gradient shape {xbar.shape} but argument shape {x.shape}"
        exact, approx = float(np.sum(_value(xbar) * v)), float(np.sum(u * numeric))
        assert _close(exact, approx), f"{label} (rev): uᵀJv by VJP {exact!r}, by finite differences {approx!r}"
    if "fwd" in modes:
        _, tangent = adv.jvp(f, [adv.constant(x)], [adv.constant(v)])
        t = _value(tangent)
        assert t.shape == numeric.shape, f"{label} (fwd): tangent shape {t.shape}, numeric {numeric.shape}"
        assert _close(t, numeric), (f"{label} (fwd): Jv by JVP\n{t}\nby finite differences\n{numeric}\n"
                                    f"max |error| {np.max(np.abs(t - numeric)) if t.size else 0:.3e}")


def _partial(fun, args, k):
    """``fun`` of argument ``k`` alone (the others fixed), returning one flat-or-shaped tensor."""
    def f(x):
        a = list(args)
        a[k] = x
        return _joined(fun(*a))
    return f


def check_grads(fun, *args, argnums=(0,), modes=("fwd", "rev"), order=2, **kwargs):
    """Check ``fun(*args, **kwargs)``'s derivatives in ``args[argnums]`` against finite differences.

    ``order=2`` also checks the derivatives of the JVP and VJP functions
    (second derivatives, in every combination of modes).
    """
    modes = tuple(modes)
    assert set(modes) <= {"fwd", "rev"}, modes
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    args = list(args)
    for k in nums:
        args[k] = np.array(_value(args[k]))
    g = (lambda *a: fun(*a, **kwargs)) if kwargs else fun
    name = _describe(fun) + (f"(**{kwargs})" if kwargs else "")
    for k in nums:
        f = _partial(g, args, k)
        label = f"{name}, argument {k}, order 1"
        _check_first_order(f, args[k], modes, label)
        if order > 1:
            x = args[k]
            rng = np.random.default_rng(k)
            if "fwd" in modes:
                v = rng.normal(size=x.shape)

                def jvp_fn(x, v, f=f):
                    return adv.jvp(f, [x], [v])[1]
                jvp_fn.__name__ = f"jvp of {name} in argument {k}"
                check_grads(jvp_fn, x, v, argnums=(0, 1), modes=modes, order=order - 1)
            if "rev" in modes:
                u = rng.normal(size=_value(f(adv.constant(x))).shape)

                def vjp_fn(x, u, f=f):
                    return adv.vjp(f, x)[1](u)[0]
                vjp_fn.__name__ = f"vjp of {name} in argument {k}"
                check_grads(vjp_fn, x, u, argnums=(0, 1), modes=modes, order=order - 1)


def combo_check(fun, argnums, modes=("fwd", "rev"), order=2):
    """A checker that runs :func:`check_grads` on every combination of the given arguments and keywords.

        combo_check(np.transpose, [0])([R(2, 3, 4)], axes=[None, (2, 0, 1)])
    """
    def run(*arg_lists, **kwarg_lists):
        keys = list(kwarg_lists)
        for combo in itertools.product(*arg_lists):
            for values in itertools.product(*[kwarg_lists[k] for k in keys]):
                check_grads(fun, *combo, argnums=argnums, modes=modes, order=order, **dict(zip(keys, values)))
    return run


class Draws:
    """The random numbers of a ported test module, drawn afresh for each test.

    A module holds ``rng = Draws(seed)`` and imports :func:`fresh_draws`,
    which restarts the generator before each of its tests, so a test's
    numbers do not depend on which other tests ran before it. Everything
    else is numpy's ``Generator`` (``rng.uniform``, ``rng.integers`` ...);
    ``rng.normals(*shape)`` is autograd's ``npr.randn(*shape)``.
    """

    def __init__(self, seed: int):
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self._gen = np.random.default_rng(self.seed)

    def normals(self, *shape):
        return self._gen.normal(size=shape)

    def __getattr__(self, name):
        return getattr(self._gen, name)


@pytest.fixture(autouse=True)
def fresh_draws(request):
    """Restart the module's ``rng`` (a :class:`Draws`) before each test of a module that imports this."""
    draws = getattr(request.module, "rng", None)
    if isinstance(draws, Draws):
        draws.reset()
