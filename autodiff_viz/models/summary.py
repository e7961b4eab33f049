"""``model.summary()``: the table of a model's layers, output shapes and parameter counts, as Keras prints it.

A mixin of :class:`~autodiff_viz.Model` (as :mod:`.trainer` is): the text table
(``summary_text``, box-drawing characters like Keras 3's rich table), the HTML
table a notebook shows (``_repr_html_``) and ``summary()``, which picks one.
The rows come from ``_summary_head`` and ``_summary_rows``; a functional model
overrides them to add the "Connected to" column (``Functional`` in :mod:`.model`).
The totals count trainable and non-trainable weights, with their size in bytes.
"""
from __future__ import annotations

import html

from .. import callbacks as callbacks_module
from ..saving import _bytes


class Summary:
    """The summary methods of a model (they read ``self.layers``, ``self.name`` and ``self._variables()``)."""

    _summary_head = ("Layer (type)", "Output Shape", "Param #")

    def _summary_rows(self):
        rows = []
        for layer in self.layers:
            try:
                shape = str(layer.output_shape)
            except AttributeError:
                shape = "?"
            params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
            rows.append((f"{layer.name} ({type(layer).__name__})", shape, params))
        return rows

    def _summary_totals(self):
        tr, non = self._variables()

        def size(vs):
            n, b = sum(v.size for v in vs), sum(v._value.nbytes for v in vs)
            return f"{n:,} ({_bytes(b)})"
        return [("Total params", size(tr + non)), ("Trainable params", size(tr)), ("Non-trainable params", size(non))]

    def summary_text(self) -> str:
        """The summary as a text table (what ``summary()`` prints in a terminal)."""
        head = self._summary_head
        rows = self._summary_rows()
        w = [max(len(r[i]) for r in [head, *rows]) + 2 for i in range(len(head))]

        def line(cells):
            return "│" + "│".join(f"{c:>{w[i] - 1}} " if i == 2 else f" {c:<{w[i] - 1}}"
                                  for i, c in enumerate(cells)) + "│"
        rule = lambda l, m, r, ch: l + m.join(ch * n for n in w) + r  # noqa: E731
        out = [f'Model: "{self.name}"', rule("┏", "┳", "┓", "━"), line(head).replace("│", "┃"),
               rule("┡", "╇", "┩", "━")]
        out += [line(r) for r in rows] or [line(("(no layers)", *[""] * (len(head) - 1)))]
        out.append(rule("└", "┴", "┘", "─"))
        out += [f" {k}: {v}" for k, v in self._summary_totals()]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(h)}</th>" for h in self._summary_head)
        body = "".join("<tr>" + "".join(f"<td style='text-align:right'>{esc(c)}</td>" if i == 2 else
                                        f"<td>{esc(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                       for row in self._summary_rows())
        totals = "".join(f"<div>{esc(k)}: {esc(v)}</div>" for k, v in self._summary_totals())
        return (f"<div class='adv-model-summary'><b>Model: &quot;{esc(self.name)}&quot;</b>"
                f"<table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{totals}</div>")

    def summary(self, print_fn=None) -> None:
        """Show the layers, their output shapes and parameter counts (and, for a functional
        model, which layer outputs each layer is connected to).

        In a notebook this displays an HTML table; elsewhere it prints text.
        ``print_fn`` (e.g. ``print`` or ``lines.append``) receives the text instead.
        """
        if print_fn is not None:
            print_fn(self.summary_text())
        elif callbacks_module.in_notebook():
            from IPython.display import HTML, display
            display(HTML(self._repr_html_()))
        else:
            print(self.summary_text())
