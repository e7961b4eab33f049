"""What ``explain`` answers: an :class:`Explanation` (one source), :class:`Explanations` (many), and the error.

Kept apart from :mod:`autodiff_viz.diagnosis.walk` (which finds the reason) so
that the answer's shape, its display in a notebook and the error that
carries it are one small module the bridges (``adv.torch``, ``adv.tf``)
share with the engine.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Explanation:
    """Why ``tape.gradient(target, source)`` is (or is not) None.

    Attributes:
        reason: one of :data:`autodiff_viz.diagnosis.walk.REASONS` (or a bridge's own reasons).
        message: what happened, the line of code, and the fix, in plain words.
        location: ``"file:line"`` of the user code that caused it, or None.
        nodes: ids of the tensors (trace nodes) involved, so a view can mark them.
        edges: ``(input_id, output_id)`` pairs where the gradient stops.
        op: the op named by the diagnosis, if any.
        kind: for a connected gradient that is zero, vanishing or NaN, what killed it (``dead_relu``,
            ``saturated``, ``unselected_where_branch`` …: :mod:`autodiff_viz.diagnosis.kinds`), else None.
        details: what the diagnosis measured (the dying edges, per-layer ‖ḡ‖, the zero rows …).
    """

    reason: str
    message: str
    location: str | None = None
    nodes: tuple = ()
    edges: tuple = ()
    op: str | None = None
    locations: tuple = field(default=(), repr=False)
    kind: str | None = None
    details: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def connected(self) -> bool:
        return self.reason == "connected"

    def marks(self) -> dict:
        """``{ref: reason}`` for ``Trace.with_marks``: the broken edges (as tensor-id pairs), else the nodes."""
        if self.connected:
            return {}
        return {edge: self._mark_label for edge in self.edges} or {n: self._mark_label for n in self.nodes}

    @property
    def _mark_label(self) -> str:
        if self.details.get("mark"):
            return self.details["mark"]
        return f"{self.reason} ({self.op})" if self.op else self.reason

    def mark(self, trace):
        """A copy of ``trace`` with what this explanation names drawn red.

        The broken edges when the trace has them, else the nodes involved;
        parts the trace lacks (tensors this tape never recorded) are skipped.

            >>> marked = tape.explain(loss, w).mark(tape.trace(loss))
        """
        if self.connected:
            return trace
        for refs in (self.edges, self.nodes):
            out = trace
            for ref in refs:
                try:
                    out = out.with_marks({ref: self._mark_label})
                except ValueError:
                    continue
            if out is not trace:
                return out
        return trace

    def __str__(self):
        return f"{self.reason}: {self.message}"

    def _repr_html_(self):
        colour = "#2e7d32" if self.connected else "#c62828"
        body = html.escape(self.message).replace("\n", "<br>")
        where = f" <span style='color:#666'>({html.escape(self.location)})</span>" if self.location else ""
        return (f"<div class='adv-explanation' style='font-family:sans-serif;border-left:4px solid {colour};"
                f"padding:4px 10px'><b style='color:{colour}'>{html.escape(self.reason)}</b>{where}"
                f"<div style='font-family:monospace;white-space:pre-wrap'>{body}</div></div>")


class Explanations(list):
    """One :class:`Explanation` per source, the broken ones first: what ``explain`` returns for a list of sources.

    ``rows`` keeps the sources' names (a parameter's name in its module, a
    variable's name, or ``source[i]``) in the same order; in a notebook the
    list shows as a table (source, reason, line).
    """

    def __init__(self, pairs):
        pairs = sorted(pairs, key=lambda p: p[1].connected)       # stable: the broken ones first, in order
        super().__init__(e for _, e in pairs)
        self.names = [n for n, _ in pairs]

    def by_name(self) -> dict:
        """``{source name: Explanation}``."""
        return dict(zip(self.names, self))

    def __str__(self):
        return "\n".join(f"{n}: {e}" for n, e in zip(self.names, self))

    def _repr_html_(self):
        rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(e.reason)}</td>"
                       f"<td>{html.escape(e.location or '')}</td>"
                       f"<td style='white-space:pre-wrap'>{html.escape(e.message)}</td></tr>"
                       for n, e in zip(self.names, self))
        return ("<table class='adv-explanations'><tr><th>source</th><th>reason</th><th>line</th><th>why</th></tr>"
                f"{rows}</table>")


class UnconnectedGradientError(ValueError):
    """``tape.gradient(..., unconnected_gradients="raise")`` found a source without gradient.

    The text is the explanation; ``.explanation`` holds the :class:`Explanation`.
    """

    def __init__(self, explanation: Explanation):
        super().__init__(str(explanation))
        self.explanation = explanation
