"""The tape as a table: the Wengert list of a trace, one row per node.

    >>> print(tape.table(loss))            # doctest: +SKIP
    #  node  op        inputs  shape        value          ḡ              factor
    -  n0    variable          (2,) float64 [0.5, -1]      [0.7269, …]
    0  n1    tanh      n0      (2,) float64 [0.4621, …]    [0.9242, …]    ∂y/∂x = 1 − y²

Leaves come first where they are first used; each op row lists its inputs by
node id, and the factor column is the chain-rule step for each input as a
whole formula (``ḡ_x = ḡ_y · Wᵀ``). In a notebook the table is HTML; in a
terminal it is text.

``TapeTable(trace, step=k)`` is the table as it stands after ``k`` steps of
the backward pass: a node's ḡ appears only once the step that completes it
has run (nothing is shown before the step that computes it); ``step=None``
shows every gradient.
"""
from __future__ import annotations

import html

from .dot import shape_text

COLUMNS = ("#", "node", "op", "inputs", "shape", "value", "ḡ", "factor")
TEXT_WIDTH = 30


class TapeTable:
    """Rows of a trace's tape: index, node, op, inputs, shape, value, gradient, factor."""

    def __init__(self, trace, step: int | None = None):
        self.trace = trace
        self.step = step
        self._known = None if step is None else trace.grad_known(step)
        self.rows = [self._row(n) for n in trace.nodes]

    def _row(self, n) -> dict:
        inputs = self.trace.edges_into(n.id)
        factors = []
        for e in inputs:
            text = (e.formula or e.factor) if e.differentiable else None
            factors.append(text if text else f"{e.input_name}: no gradient")
        known = n.grad is not None and (self._known is None or n.id in self._known)
        return {
            "#": "" if n.index is None else str(n.index),
            "node": n.id,
            "op": n.op if n.title == n.op else f"{n.op} '{n.title}'",
            "inputs": ", ".join(e.src for e in inputs),
            "shape": shape_text(n.shape, n.dtype),
            "value": n.value.brief(),
            "ḡ": "" if not known else n.grad.brief(),
            "factor": "; ".join(factors),
            "_off": self.trace.target is not None and not n.on_path,
        }

    def to_text(self, width: int = TEXT_WIDTH) -> str:
        """Fixed-width text; cells longer than ``width`` end in ``…``."""
        cells = [[_clip(r[c], width) for c in COLUMNS] for r in self.rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
        return "\n".join(lines)

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
        body = []
        for r in self.rows:
            style = ' style="color:#999"' if r["_off"] else ""
            tds = "".join(f"<td>{html.escape(r[c])}</td>" for c in COLUMNS)
            body.append(f'<tr id="row-{html.escape(r["node"])}"{style}>{tds}</tr>')
        return ('<table class="adv-tape-table" style="border-collapse:collapse;font-family:monospace;'
                f'font-size:12px"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')

    def _repr_html_(self) -> str:
        return self.to_html()

    def __str__(self):
        return self.to_text()

    def __repr__(self):
        return self.to_text()

    def __len__(self):
        return len(self.rows)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
