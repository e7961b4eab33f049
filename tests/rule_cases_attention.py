"""Finite-difference cases for autodiff_viz/core/rules/attention.py (collected by tests/test_rules.py).

``CASES`` maps a rule name to a list of ``(input makers, params)``, as in test_rules.py.
"""
import numpy as np  # noqa: F401
from rule_makers import away0, const, pos, real  # noqa: F401


def mask(shape, seed_row_masked=False):
    """A boolean mask (True: may attend) with at least one allowed key per row, optionally a fully masked row."""
    def make(rng):
        m = rng.normal(size=shape) > -0.3
        m[..., 0] = True
        if seed_row_masked:
            m[..., -1, :] = False
        return m
    return make


CASES = {
    "attention_weights": [
        ([real((4, 3)), real((5, 3))], {"scale": 0.5}),
        ([real((2, 3, 2)), real((2, 4, 2)), mask((2, 3, 4))], {"scale": 0.7}),
        ([real((2, 3, 2)), real((2, 4, 2)), mask((3, 4), seed_row_masked=True)], {"scale": 1.0}),
    ],
    "attention": [
        ([real((3, 2)), real((4, 2)), real((4, 5))], {"scale": 2 ** -0.5}),
        ([real((2, 2, 3, 2)), real((2, 2, 4, 2)), real((2, 2, 4, 3)), mask((2, 1, 3, 4))], {"scale": 0.7}),
        ([real((2, 3, 2)), real((2, 4, 2)), real((2, 4, 2)), mask((3, 4), seed_row_masked=True)], {"scale": 1.3}),
    ],
}
