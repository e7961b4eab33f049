"""The tape as a table: the Wengert list of a trace, one row per node.

    >>> print(tape.table(loss))            # doctest: +SKIP
    #  node  op        inputs  shape        value          ḡ              factor
    -  n0    variable          (2,) float64 [0.5, -1]      [0.7269, …]
    0  n1    tanh      n0      (2,) float64 [0.4621, …]    [0.9242, …]    ∂y/∂x = 1 − y²

Leaves come first where they are first used; each op row lists its inputs by
node id, and the factor column is the rule's chain-rule factor for each input.
In a notebook the table is HTML; in a terminal it is text.
"""
from __future__ import annotations

import html

from .dot import shape_text

COLUMNS = ("#", "node", "op", "inputs", "shape", "value", "ḡ", "factor")
TEXT_WIDTH = 30


class TapeTable:
    """Rows of a trace's tape: index, node, op, inputs, shape, value, gradient, factor."""

    def __init__(self, trace):
        self.trace = trace
        self.rows = [self._row(n) for n in trace.nodes]

    def _row(self, n) -> dict:
        inputs = self.trace.edges_into(n.id)
        factors = []
        for e in inputs:
            factors.append(e.factor if e.differentiable and e.factor else f"{e.input_name}: no gradient")
        return {
            "#": "" if n.index is None else str(n.index),
            "node": n.id,
            "op": n.op if not n.name else f"{n.op} '{n.name}'",
            "inputs": ", ".join(e.src for e in inputs),
            "shape": shape_text(n.shape, n.dtype),
            "value": n.value.brief(),
            "ḡ": "" if n.grad is None else n.grad.brief(),
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
