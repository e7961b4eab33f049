"""Finite-difference cases for autodiff_viz/rules/attention.py (collected by tests/test_rules.py).

``CASES`` maps a rule name to a list of ``(input makers, params)``, as in test_rules.py.
"""
import numpy as np  # noqa: F401

from rule_makers import away0, const, pos, real  # noqa: F401

CASES = {
}
