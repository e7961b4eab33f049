"""Widgets: an interactive explorer of the forward and backward graphs, and a live training view.

    >>> import autodiff_viz as adv
    >>> w = adv.Variable([0.5, -1.0], name="w")
    >>> with adv.GradientTape() as tape:
    ...     loss = adv.sum(adv.tanh(w) ** 2)
    >>> adv.show(tape, target=loss)          # doctest: +SKIP

* :func:`show` / ``tape.show()``: the :class:`Explorer` (views, step-through,
  inspector, why None, Jacobian vs summed gradient).
* :class:`TrainingView`: loss curve and per-layer gradient magnitudes, as a
  ``fit`` callback or fed by hand.

Graphs are laid out in the kernel, once per fold state, with Graphviz's
``dot`` when it is installed and with the built-in renderer of
:mod:`autodiff_viz.views.minidot` when it is not; the page
(:mod:`autodiff_viz.widgets.frontend`, an anywidget whose script ships inside
the package) fits, zooms, pans and steps them without asking the kernel.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...records.traces.model import Trace
from .state import ExplorerState
from .training import TrainingView

if TYPE_CHECKING:
    from typing import Any

    from ...records.tape import GradientTape
    from .explorer import Explorer


def show(tape_or_trace: GradientTape | Trace, target: Any = None, sources: Any = None, *,
         output_gradients: Any = None) -> Explorer:
    """An :class:`Explorer` widget for a tape (or a :class:`~autodiff_viz.Trace`).

    Args:
        tape_or_trace: a :class:`~autodiff_viz.GradientTape` (inside or after
            its ``with``) or a trace (e.g. read back with ``Trace.from_json``).
        target: the tensor whose gradient to walk back from; ``None``: the last
            recorded op (with a tape) or the trace's own target.
        sources: the tensors to differentiate with respect to; ``None``: every
            watched tensor. A source without a gradient gets its why-None
            explanation, and the broken edge is marked in the graph.
        output_gradients: ``v`` for the Jacobian panel's ``vᵀJ`` (same shape as the target).

    Does not use up a non-persistent tape.
    """
    from .explorer import Explorer
    if isinstance(tape_or_trace, Trace):
        if target is not None or sources is not None or output_gradients is not None:
            raise TypeError("show(trace): a trace already has its target and sources; pass target=, "
                            "sources= and output_gradients= with a tape: show(tape, target=loss, sources=[w]).")
        state = ExplorerState(tape_or_trace,
                              jacobians=((), "The Jacobian panel needs the tape: show(tape, target=...)."))
    elif hasattr(tape_or_trace, "_nodes") and hasattr(tape_or_trace, "trace"):
        state = ExplorerState.from_tape(tape_or_trace, target, sources, output_gradients)
    else:
        raise TypeError(f"show() takes a GradientTape or a Trace, got {type(tape_or_trace).__name__}. "
                        "Record with `with adv.GradientTape() as tape: ...` and call adv.show(tape, target=loss).")
    return Explorer(state)


__all__ = ["show", "ExplorerState", "TrainingView"]
