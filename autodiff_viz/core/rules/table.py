"""The rule table itself: ``TABLE`` and :func:`define`, and the helpers every section's rules share.

See :mod:`autodiff_viz.core.rules` for the conventions a rule follows.
"""
from __future__ import annotations

from ..engine import In, Rule

TABLE: dict[str, Rule] = {}


def define(name, forward, *, elementwise=False, variadic=False, doc="", saves="all", **inputs) -> Rule:
    """Add a rule to the table and return it.

    Each keyword names an input in order; its value is ``(factor, vjp, jvp)``
    or ``None`` for an input without gradient. ``saves``: which values the
    VJPs read (``"all"``, ``"inputs"``, ``"output"``, ``"nothing"``; see
    :class:`~autodiff_viz.engine.Rule`): a walk lets go of the rest early.

        >>> cube = define("cube", lambda x: x ** 3, elementwise=True,
        ...               x=("3x²", lambda g, y, x: g * 3 * x * x, lambda dx, y, x: dx * 3 * x * x))
    """
    specs = []
    for input_name, entry in inputs.items():
        if entry is None:
            specs.append(In(input_name))
        else:
            factor, vjp, jvp = entry
            specs.append(In(input_name, factor, vjp, jvp))
    rule = Rule(name, forward, specs, elementwise=elementwise, variadic=variadic, doc=doc, saves=saves)
    TABLE[name] = rule
    return rule


def _alias(rule: Rule, name: str, doc: str = "") -> Rule:
    TABLE[name] = rule.renamed(name, doc)
    return TABLE[name]


def _batch(g, y):
    """The leading batch axes of a cotangent or tangent ``g`` for an output ``y``."""
    return g.shape[:g.ndim - y.ndim]


def _keepdims_shape(shape, axis):
    """``shape`` with the reduced (negative) ``axis`` set to 1."""
    n = len(shape)
    return tuple(1 if i - n in axis else s for i, s in enumerate(shape))


def _shift(axes, nb):
    """A permutation for ``batch + shape`` that keeps the batch axes in front."""
    return tuple(range(nb)) + tuple(nb + a for a in axes)
