"""Finite-difference cases for autodiff_viz/core/rules/nn.py (collected by tests/test_rules.py).

``CASES`` maps a rule name to a list of ``(input makers, params)``, as in test_rules.py.
Shapes are small so the finite differences stay fast; together the cases
cover 1-D and 2-D, strides, asymmetric padding, dilation and groups.
"""
import numpy as np  # noqa: F401
from rule_makers import away0, const, pos, real  # noqa: F401

from autodiff_viz.core.rules.nn import _max_pool

# (x shape, kernel shape, params) for conv; the other two faces reuse them
_CONVS = [
    ((2, 7, 3), (3, 3, 4), {"strides": (2,), "pads": ((1, 1),), "dilation": (1,), "groups": 1}),
    ((2, 5, 6, 2), (3, 2, 2, 3), {"strides": (1, 2), "pads": ((1, 1), (0, 1)), "dilation": (1, 1), "groups": 1}),
    ((1, 6, 5, 4), (2, 2, 2, 4), {"strides": (1, 1), "pads": ((0, 0), (1, 0)), "dilation": (2, 1), "groups": 2}),
]


def _out_shape(xs, ws, p):
    nsp = len(p["strides"])
    out = tuple((n + lo + hi - (k - 1) * d - 1) // s + 1 for n, k, s, (lo, hi), d in
                zip(xs[1:1 + nsp], ws[:nsp], p["strides"], p["pads"], p["dilation"]))
    return (xs[0],) + out + (ws[-1],)


_POOLS = [
    ((2, 5, 5, 2), {"pool": (2, 2), "strides": (2, 2), "pads": ((0, 1), (0, 1))}),
    ((1, 4, 5, 3), {"pool": (2, 3), "strides": (1, 1), "pads": ((0, 0), (0, 0))}),
    ((2, 7, 2), {"pool": (3,), "strides": (2,), "pads": ((1, 1),)}),
]


# max_pool_scatter/gather take x and its window maxima, which must agree: fixed inputs
_FIXED = [np.random.default_rng(k).normal(size=xs) for k, (xs, _) in enumerate(_POOLS)]


def _pooled(xs, p):
    nsp = len(p["pool"])
    out = tuple((n + lo + hi - k) // s + 1 for n, k, s, (lo, hi) in
                zip(xs[1:1 + nsp], p["pool"], p["strides"], p["pads"]))
    return (xs[0],) + out + (xs[-1],)


CASES = {
    "conv": [([real(xs), real(ws)], p) for xs, ws, p in _CONVS],
    "conv_input_grad": [([real(_out_shape(xs, ws, p)), real(ws)], {**p, "spatial": xs[1:-1]})
                        for xs, ws, p in _CONVS],
    "conv_transpose": [([real(_out_shape(xs, ws, p)), real(ws)], {**p, "spatial": xs[1:-1]})
                       for xs, ws, p in _CONVS],
    "conv_kernel_grad": [([real(xs), real(_out_shape(xs, ws, p))], {**p, "ksize": ws[:len(p["strides"])]})
                         for xs, ws, p in _CONVS],
    "bias_add": [([real((2, 3, 4)), real((4,))], {}), ([real((2, 5)), real((5,))], {})],
    "max_pool": [([real(xs)], p) for xs, p in _POOLS],
    "max_pool_scatter": [([real(_pooled(xs, p)), const(x), const(_max_pool(x, **p))], p)
                         for (xs, p), x in zip(_POOLS, _FIXED)],
    "max_pool_gather": [([real(xs), const(x), const(_max_pool(x, **p))], p) for (xs, p), x in zip(_POOLS, _FIXED)],
    "avg_pool": [([real(xs)], p) for xs, p in _POOLS],
    "softmax_cross_entropy": [
        ([lambda rng: rng.dirichlet(np.ones(4), size=3), real((3, 4))], {"axis": (-1,)}),
        ([lambda rng: rng.uniform(0.1, 1.0, (2, 3, 2)), real((2, 3, 2))], {"axis": (-2,)})],
    "sparse_softmax_cross_entropy": [
        ([lambda rng: np.array([0, 3, 1]), real((3, 4))], {}),
        ([lambda rng: np.array([[2, 0], [1, 1]]), real((2, 2, 3))], {})],
    "avg_pool_grad": [([real(_pooled(xs, p))], {**p, "spatial": xs[1:-1]}) for xs, p in _POOLS],
}
