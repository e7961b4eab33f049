"""Finite-difference cases for the numpy-surface ops added to autodiff_viz/core/rules/__init__.py (collected by
tests/test_rules.py).

``CASES`` maps a rule name to a list of ``(input makers, params)``, as in test_rules.py.
"""
import numpy as np
from rule_makers import away0, const, pos, real


def between(lo, hi, shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def distinct(shape):
    """Values with no ties (sort, max-type norms): a shuffled range plus a little noise."""
    return lambda rng: (rng.permutation(int(np.prod(shape))).reshape(shape) + rng.uniform(-.2, .2, shape)) * 0.5


def away_from_integers(shape):
    """Values at least 0.1 from an integer or a half (kinks of floor, ceil, round, mod)."""
    return lambda rng: rng.integers(-3, 3, shape) + rng.choice([0.2, 0.35, 0.65, 0.8], shape)


def full_index(idx, axis):
    n = idx.ndim
    return tuple(idx if k == axis % n else np.arange(idx.shape[k]).reshape((-1,) + (1,) * (n - 1 - k))
                 for k in range(n))


CASES = {
    "log1p": [([between(-0.5, 2, (2, 3))], {})],
    "expm1": [([real((2, 3))], {})],
    "log2": [([pos((2, 3))], {})],
    "log10": [([pos((4,))], {})],
    "exp2": [([real((2, 3))], {})],
    "sinh": [([real((2, 3))], {})],
    "cosh": [([real((2, 3))], {})],
    "tan": [([between(-1.2, 1.2, (2, 3))], {})],
    "arcsin": [([between(-0.9, 0.9, (2, 3))], {})],
    "arccos": [([between(-0.9, 0.9, (2, 3))], {})],
    "arctan": [([real((2, 3))], {})],
    "arcsinh": [([real((2, 3))], {})],
    "arccosh": [([between(1.2, 3, (2, 3))], {})],
    "arctanh": [([between(-0.9, 0.9, (2, 3))], {})],
    "reciprocal": [([away0((2, 3))], {})],
    "cbrt": [([away0((2, 3))], {})],
    "erf": [([real((2, 3))], {})],
    "gelu": [([real((2, 3))], {"approximate": False}), ([real((2, 3))], {"approximate": True})],
    "silu": [([real((2, 3))], {})],
    "elu": [([away0((2, 3))], {"alpha": 1.0}), ([away0((4,))], {"alpha": 0.5})],
    "selu": [([away0((2, 3))], {})],
    "softsign": [([away0((2, 3))], {})],
    "hard_sigmoid": [([lambda rng: rng.choice([-4.0, -1.0, 0.5, 2.0, 5.0], (2, 3)) + rng.uniform(-.3, .3, (2, 3))],
                      {})],
    "log_sigmoid": [([real((2, 3))], {})],
    "floor": [([away_from_integers((2, 3))], {})],
    "ceil": [([away_from_integers((2, 3))], {})],
    "trunc": [([away_from_integers((2, 3))], {})],
    "round": [([away_from_integers((2, 3))], {"decimals": 0})],
    "arctan2": [([real((2, 3)), real((3,))], {})],
    "hypot": [([away0((2, 3)), away0((2, 1))], {})],
    "logaddexp": [([real((2, 3)), real((3,))], {})],
    "logaddexp2": [([real((2, 3)), real((2, 1))], {})],
    "mod": [([away_from_integers((2, 3)), const(1.5)], {}),
            ([lambda rng: rng.uniform(0.1, 0.4, (2, 3)) + 3 * rng.integers(-2, 2, (2, 3)),
              lambda rng: np.full((3,), 3.0) + rng.uniform(-0.05, 0.05, (3,))], {})],
    "floor_divide": [([away_from_integers((2, 3)), const(1.0)], {})],
    "var": [([real((2, 3, 4))], {"axis": (-1,), "ddof": 0, "keepdims": False}),
            ([real((3, 4))], {"axis": (-2, -1), "ddof": 1, "keepdims": True})],
    "std": [([real((2, 3, 4))], {"axis": (-3, -1), "ddof": 0, "keepdims": False}),
            ([real((5,))], {"axis": (-1,), "ddof": 1, "keepdims": True})],
    "cumsum": [([real((2, 3, 4))], {"axis": -2, "reverse": False}), ([real((5,))], {"axis": -1, "reverse": True})],
    "cumprod": [([away0((2, 4))], {"axis": -1, "reverse": False}), ([away0((3, 2))], {"axis": -2, "reverse": True}),
                ([lambda rng: np.array([[0.5, 0.0, 1.5, 0.0], [1.2, -0.7, 0.0, 2.0]])], {"axis": -1, "reverse": False}),
                ([lambda rng: np.array([[0.5, 0.0], [1.5, -2.0], [0.0, 1.1]])], {"axis": -2, "reverse": True})],
    "prod": [([away0((2, 3, 4))], {"axis": (-1,), "keepdims": False}),
             ([lambda rng: np.array([[0.0, 1.5, -2.0], [0.7, 0.0, 0.0], [1.1, 0.9, -1.3]])],
              {"axis": (-1,), "keepdims": True}),
             ([lambda rng: np.array([[0.0, 1.5], [-2.0, 0.7]]) + rng.uniform(-0, 0, (2, 2))],
              {"axis": (-2, -1), "keepdims": False})],
    "norm": [([real((2, 3))], {"ord": None, "axis": (-2, -1), "keepdims": False}),
             ([real((2, 3))], {"ord": 2, "axis": (-1,), "keepdims": False}),
             ([away0((2, 3))], {"ord": 1, "axis": (-1,), "keepdims": True}),
             ([distinct((3, 4))], {"ord": np.inf, "axis": (-2,), "keepdims": False}),
             ([away0((4,))], {"ord": 3, "axis": (-1,), "keepdims": False}),
             ([distinct((3, 3))], {"ord": "fro", "axis": (-2, -1), "keepdims": False}),
             ([distinct((3, 4))], {"ord": 1, "axis": (-2, -1), "keepdims": False}),
             ([distinct((2, 3, 4))], {"ord": np.inf, "axis": (-2, -1), "keepdims": True}),
             ([real((3, 4))], {"ord": 2, "axis": (-2, -1), "keepdims": False}),
             ([real((2, 3, 3))], {"ord": "nuc", "axis": (-1, -2), "keepdims": False})],
    "sort": [([distinct((3, 4))], {"axis": -1}), ([distinct((3, 4))], {"axis": -2})],
    "take_along_axis": [([real((3, 4))], {"index": full_index(np.array([[0, 0], [3, 1], [2, 2]]), 1), "lead": 0})],
    "flip": [([real((3, 4))], {"index": (slice(None, None, -1), slice(None, None, -1)), "lead": 0})],
    "roll": [([real((5,))], {"index": ((np.arange(5) - 2) % 5,), "lead": 0})],
    "repeat": [([real((2, 3))], {"index": (slice(None), np.array([0, 0, 1, 2, 2, 2])), "lead": 0})],
    "tile": [([real((2, 3))], {"index": (np.arange(4).reshape(-1, 1) % 2, np.arange(6) % 3), "lead": 0})],
    "diagonal": [([real((3, 4))], {"index": (np.arange(3), np.arange(1, 4)), "lead": 0})],
    "diag": [([real((3,))], {"index": (np.arange(3), np.arange(3) + 1), "shape": (4, 4), "lead": 0})],
    "pad": [([real((2, 3))], {"pad_width": ((1, 2), (0, 1)), "mode": "constant", "value": 0.5}),
            ([real((3, 4))], {"pad_width": ((2, 1), (3, 2)), "mode": "reflect", "value": 0.0}),
            ([real((3,))], {"pad_width": ((2, 4),), "mode": "wrap", "value": 0.0})],
    "triu": [([real((3, 4))], {"k": 0}), ([real((2, 3, 3))], {"k": 1})],
    "tril": [([real((4, 3))], {"k": -1})],
    "einsum": [([real((2, 3)), real((3, 4))], {"subscripts": "ij,jk->ik"}),
               ([real((3, 3))], {"subscripts": "ii->"}),
               ([real((3, 3))], {"subscripts": "ii->i"}),
               ([real((2, 3, 4)), real((2, 4, 2))], {"subscripts": "bij,bjk->bik"}),
               ([real((2, 3)), real((4,)), real((3,))], {"subscripts": "ij,k,j->ik"}),
               ([real((2, 3, 4))], {"subscripts": "abc->ca"}),
               ([real((2, 3)), real((2, 3))], {"subscripts": "ij,ij->"}),
               ([real((2, 3, 4)), real((4,))], {"subscripts": "...j,j->..."})],
    "dot": [([real((2, 3)), real((3, 2))], {"subscripts": "ab,bc->ac"})],
    "inner": [([real((2, 3)), real((4, 3))], {"subscripts": "ab,cb->ac"})],
    "outer": [([real((3,)), real((2,))], {"subscripts": "a,b->ab"})],
    # tensor bounds (per column and per row), entries at least 0.05 from a bound; the last column has lo > hi
    "clip": [([lambda rng: rng.choice([-1.5, -0.5, 0.3, 0.8, 2.0], size=(3, 4)) + rng.uniform(-.05, .05, (3, 4)),
               const(np.array([-1.0, -0.2, -0.9, 1.2])), const(np.array([[1.0], [0.6], [1.1]]))], {})],
    # no gradient: checked by test_non_differentiable_rules_stop_the_gradient
    "argsort": [([real((2, 3))], {"axis": -1})],
    "any": [([real((2, 3))], {"axis": (-1,), "keepdims": False})],
    "all": [([real((2, 3))], {"axis": (-2, -1), "keepdims": True})],
    "tensordot": [([real((2, 3, 4)), real((4, 3, 2))], {"subscripts": "abc,dba->cd"})],
    # no gradient (tf.numpy_function): checked by test_non_differentiable_rules_stop_the_gradient
    "numpy_function": [([real((3,)), real((3,))], {"function": "f", "value": np.arange(3.0)})],
}


# ----- special functions (core/rules/special.py) and erfc: tf.math's names -----------------------------------
CASES.update({
    "erfc": [([real((2, 3))], {})],
    "erfinv": [([between(-0.9, 0.9, (2, 3))], {})],
    "erfcinv": [([between(0.1, 1.9, (2, 3))], {})],
    "ndtri": [([between(0.05, 0.95, (2, 3))], {})],
    "lgamma": [([between(0.3, 5.0, (2, 3))], {}), ([between(-0.9, -0.1, (3,))], {})],
    "digamma": [([between(0.3, 5.0, (2, 3))], {})],
    "polygamma": [([const(np.ones((2, 3))), between(0.3, 5.0, (2, 3))], {})],
    "bessel_i0": [([real((2, 3))], {})],
    "bessel_i1": [([away0((2, 3))], {})],
    "bessel_i0e": [([away0((2, 3))], {})],
    "bessel_i1e": [([away0((2, 3))], {})],
    "igamma": [([const(np.full((2, 3), 2.5)), between(0.2, 4.0, (2, 3))], {})],
    "igammac": [([const(np.full((2, 3), 2.5)), between(0.2, 4.0, (2, 3))], {})],
    "betainc": [([const(np.full((2, 3), 2.0)), const(np.full((2, 3), 3.0)), between(0.1, 0.9, (2, 3))], {})],
    "zeta": [([const(np.full((2, 3), 3.0)), between(0.5, 3.0, (2, 3))], {})],
})
