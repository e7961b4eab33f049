"""A live training view: the loss curve and per-layer gradient magnitudes, one update per epoch.

Use it as a ``fit`` callback (it measures the gradients itself on a fixed
probe batch after each epoch, since ``fit`` does not hand them out)::

    view = adv.widgets.TrainingView(probe=(x[:64], y[:64]))
    display(view)                               # doctest: +SKIP
    model.fit(x, y, epochs=20, callbacks=[view], verbose=0)

or feed it by hand from your own loop::

    view.update(epoch, loss, {"dense": 0.31, "dense_1": 0.02})

A model trained with ``sample_weight`` minimises a weighted loss: give the
probe its weights too, ``probe=(x[:64], y[:64], w[:64])``, as in Keras' data tuples.

Views compared side by side share their axes (``compare_with=``), so the
same slope means the same change in both::

    relu_view = adv.widgets.TrainingView(probe=batch)
    sigmoid_view = adv.widgets.TrainingView(probe=batch, compare_with=relu_view)

It draws the loss curve, the gradient norm of every layer over the epochs
(a line per layer on a log scale: a vanishing layer sits at the bottom) and
the latest norms as bars. All inline SVG (no plotting library); every number is printed beside
its bar, so the colours are not the only signal. Where no widget manager runs
(a notebook exported to HTML, a notebook viewer) the same plots come as
static HTML (:meth:`TrainingView.static_html`), brought up to date in the
saved notebook when ``fit`` ends. Drawing one epoch costs a
few microseconds of string formatting; the probe gradient one extra
forward/backward pass of the probe batch.
"""
from __future__ import annotations

import html
import math

import numpy as np

from ...callbacks import Callback
from ...records.tape import GradientTape


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def loss_curve_svg(losses: list, val_losses: list | None = None, width: int = 460, height: int = 200,
                   y_range: tuple | None = None, epochs: int | None = None) -> str:
    """An SVG line chart of the loss per epoch (solid) and the validation loss (dashed).

    ``y_range=(lo, hi)`` and ``epochs`` fix the axes, so curves drawn side by
    side for comparison share one scale (a drop from 2.35 to 2.16 then looks
    small next to one from 2.22 to 0.12); by default the axes fit this curve.
    """
    series = [("loss", losses, "#1f4e99", "")] + (
        [("val_loss", val_losses, "#b35900", ' stroke-dasharray="6 3"')] if val_losses else [])
    values = [v for _, s, _, _ in series for v in s if v is not None and math.isfinite(v)]
    if not values:
        return '<div class="adv-note">no epoch finished yet</div>'
    lo, hi = y_range if y_range is not None else (min(values), max(values))
    hi = hi if hi > lo else lo + 1.0
    n = max([len(s) for _, s, _, _ in series] + [epochs or 0])
    left, right, top, bottom = 56, 12, 14, 28

    def xy(i, v):
        x = left + (width - left - right) * (i / max(1, n - 1))
        y = top + (height - top - bottom) * (1 - (v - lo) / (hi - lo))
        return f"{x:.1f},{y:.1f}"

    parts = [f'<svg class="adv-loss-curve" width="{width}" height="{height}" role="img" '
             f'aria-label="loss per epoch" xmlns="http://www.w3.org/2000/svg" font-family="Helvetica,Arial" '
             f'font-size="12">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#888"/>',
             f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_fmt(hi)}</text>',
             f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">{_fmt(lo)}</text>',
             f'<text x="{(width + left) / 2}" y="{height - 6}" text-anchor="middle">epoch (1 … {n})</text>']
    for k, (name, s, colour, dash) in enumerate(series):
        pts = " ".join(xy(i, v) for i, v in enumerate(s) if v is not None and math.isfinite(v))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{pts}"/>')
        parts.append(f'<text x="{width - right}" y="{top + 14 * k + 4}" text-anchor="end" fill="{colour}">'
                     f'{name}{" (dashed)" if dash else ""}: {_fmt(s[-1])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def gradient_bars_html(norms: dict, history: list | None = None) -> str:
    """A bar per layer (log scale), the number beside it, and the change since the first epoch."""
    if not norms:
        return '<div class="adv-note">no gradient measured yet (give TrainingView a probe batch, or '\
               'pass grad_norms to update())</div>'
    logs = {k: math.log10(v) if v > 0 else None for k, v in norms.items()}
    finite = [v for v in logs.values() if v is not None]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = max(hi - lo, 1.0)
    first = history[0] if history else {}
    rows = []
    for name, v in norms.items():
        frac = 0.05 if logs[name] is None else 0.1 + 0.9 * (logs[name] - lo + 0.1 * span) / (1.1 * span)
        change = f"×{v / first[name]:.3g} since epoch 1" if first.get(name) else ""
        rows.append(f"<tr><td>{html.escape(name)}</td><td style='width:220px'><div style='background:#1f4e99;"
                    f"height:12px;width:{min(1.0, frac) * 100:.0f}%'></div></td>"
                    f"<td class='adv-mono'>‖ḡ‖ = {_fmt(v)}</td><td class='adv-note'>{change}</td></tr>")
    return ("<table class='adv-grad-bars' style='font-size:14px'><tr><th>layer</th><th>‖gradient‖ "
            "(log scale)</th><th></th><th></th></tr>" + "".join(rows) + "</table>")


LAYER_COLOURS = ("#1f4e99", "#b35900", "#2e7d32", "#c2185b", "#6a3d9a", "#00838f", "#8d6e63", "#616161")


def gradient_history_svg(history: list, width: int = 460, height: int = 200, y_range: tuple | None = None,
                         epochs: int | None = None) -> str:
    """Per-layer ‖ḡ‖ over the epochs, one line per layer on a log10 axis (vanishing layers sit at the bottom).

    ``y_range=(lo, hi)`` (powers of ten) and ``epochs`` fix the axes for
    side-by-side comparison, as in :func:`loss_curve_svg`.
    """
    names = list(dict.fromkeys(k for h in history for k in h))
    logs = [math.log10(v) for h in history for v in h.values() if v and v > 0 and math.isfinite(v)]
    if not names or not logs:
        return '<div class="adv-note">no gradient measured yet</div>'
    lo, hi = y_range if y_range is not None else (math.floor(min(logs)), math.ceil(max(logs)))
    hi = hi if hi > lo else lo + 1
    n = max(len(history), epochs or 0)
    left, right, top, bottom = 56, 110, 14, 28

    def xy(i, v):
        x = left + (width - left - right) * (i / max(1, n - 1))
        y = top + (height - top - bottom) * (1 - (math.log10(v) - lo) / (hi - lo))
        return f"{x:.1f},{y:.1f}"

    parts = [f'<svg class="adv-grad-history" width="{width}" height="{height}" role="img" '
             'aria-label="gradient norm of each layer per epoch" xmlns="http://www.w3.org/2000/svg" '
             'font-family="Helvetica,Arial" font-size="12">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#888"/>',
             f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">1e{hi:g}</text>',
             f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">1e{lo:g}</text>',
             f'<text x="{(width - right + left) / 2}" y="{height - 6}" text-anchor="middle">epoch (1 … {n}); '
             '‖ḡ‖ per layer, log scale</text>']
    for k, name in enumerate(names):
        colour = LAYER_COLOURS[k % len(LAYER_COLOURS)]
        dash = "" if k < len(LAYER_COLOURS) else ' stroke-dasharray="5 3"'
        pts = " ".join(xy(i, h[name]) for i, h in enumerate(history)
                       if h.get(name) and h[name] > 0 and math.isfinite(h[name]))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{pts}"/>')
        parts.append(f'<text x="{width - right + 6}" y="{top + 14 * k + 4}" fill="{colour}">'
                     f'{html.escape(str(name))}</text>')
    parts.append("</svg>")
    return "".join(parts)


class SharedScale:
    """The axes that several :class:`TrainingView` s compared side by side share.

    ``TrainingView(probe, compare_with=other)`` joins ``other``'s scale: every
    view redraws with the loss range, the gradient range and the number of
    epochs of all of them, so equal slopes mean equal changes.
    """

    def __init__(self):
        self.views: list = []

    def loss_range(self):
        vals = [v for w in self.views for v in w.losses + w.val_losses if v is not None and math.isfinite(v)]
        return (min(vals), max(vals)) if vals else None

    def grad_range(self):
        logs = [math.log10(v) for w in self.views for h in w.grad_history for v in h.values()
                if v and v > 0 and math.isfinite(v)]
        return (math.floor(min(logs)), math.ceil(max(logs))) if logs else None

    def epochs(self) -> int:
        return max([len(w.losses) for w in self.views] + [0])


def layer_gradient_norms(model, x, y, sample_weight=None) -> dict:
    """``{layer name: 2-norm of the gradient of the loss w.r.t. its trainable weights}`` on one batch.

    The loss is ``model.compute_loss(y, y_pred, sample_weight)``, the one
    ``fit`` minimises: with sample weights (one per sample) and the default
    ``"sum_over_batch_size"`` reduction it is ``Σ_i w_i · loss_i / batch size``,
    so a sample of weight 0 adds nothing to the gradient.
    """
    with GradientTape() as tape:
        y_pred = model(x)
        loss = model.compute_loss(y, y_pred, sample_weight)
    layers = [layer for layer in model.layers if layer.trainable_variables]
    variables = [v for layer in layers for v in layer.trainable_variables]
    grads = tape.gradient(loss, variables)
    norms, k = {}, 0
    for layer in layers:
        total = 0.0
        for _ in layer.trainable_variables:
            g = grads[k]
            k += 1
            if g is not None:
                total += float(np.sum(np.square(g.numpy())))
        norms[layer.name] = math.sqrt(total)
    return norms


class TrainingView(Callback):
    """Loss curve and per-layer gradient magnitudes, per epoch: a ``fit`` callback and a widget.

    Args:
        probe: ``(x, y)`` or ``(x, y, sample_weight)`` (Keras' data tuples),
            a small fixed batch on which the gradient of the loss is measured
            after every epoch (:func:`layer_gradient_norms`). Give the sample
            weights when the model trains with them, so the bars measure the
            weighted loss ``fit`` minimises. ``None``: no gradient bars
            unless you pass them to :meth:`update`.
    """

    def __init__(self, probe=None, compare_with: "TrainingView | None" = None):
        if probe is not None and (not isinstance(probe, (tuple, list)) or len(probe) not in (2, 3)):
            got = f"{len(probe)} item{'s' * (len(probe) != 1)}" if isinstance(probe, (tuple, list)) \
                else type(probe).__name__
            raise ValueError(f"TrainingView: probe must be (x, y) or (x, y, sample_weight), got {got}. "
                             "Give the batch as a tuple, e.g. probe=(x[:64], y[:64]) or "
                             "probe=(x[:64], y[:64], w[:64]).")
        super().__init__()
        import ipywidgets as W
        self.probe = probe
        self.losses: list = []
        self.val_losses: list = []
        self.grad_history: list = []
        self.scale = compare_with.scale if compare_with is not None else SharedScale()
        self.scale.views.append(self)
        self.title = W.HTML("<b>training</b>")
        self.curve = W.HTML(loss_curve_svg([]))
        self.history = W.HTML(gradient_history_svg([]))
        self.bars = W.HTML(gradient_bars_html({}))
        plots = W.HBox([self.curve, self.history], layout=W.Layout(flex_flow="row wrap"))   # wraps when narrow
        self.widget = W.VBox([self.title, plots, self.bars])
        self._handles: list = []        # the notebook outputs showing this view, refreshed when training ends
        self._fitting = False

    def update(self, epoch: int, loss: float, grad_norms: dict | None = None, val_loss: float | None = None):
        """Record one epoch and redraw (the callable protocol for hand-written loops)."""
        self.losses.append(float(loss))
        if val_loss is not None:
            self.val_losses.append(float(val_loss))
        if grad_norms:
            self.grad_history.append(dict(grad_norms))
        self.title.value = (f"<b>training</b>: epoch {epoch + 1}, loss {html.escape(_fmt(float(loss)))}"
                            + (f", val_loss {html.escape(_fmt(float(val_loss)))}" if val_loss is not None else ""))
        for view in self.scale.views:
            view._draw()
        if not self._fitting:
            self._refresh_outputs()

    def _draw(self):
        sc = self.scale
        self.curve.value = loss_curve_svg(self.losses, self.val_losses or None, y_range=sc.loss_range(),
                                          epochs=sc.epochs())
        self.history.value = gradient_history_svg(self.grad_history, y_range=sc.grad_range(), epochs=sc.epochs())
        self.bars.value = gradient_bars_html(self.grad_history[-1] if self.grad_history else {},
                                             self.grad_history)

    def on_train_begin(self, logs=None):
        self._fitting = True

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        norms = None
        if self.probe is not None and self.model is not None:
            norms = layer_gradient_norms(self.model, *self.probe)
        self.update(epoch, logs.get("loss", float("nan")), norms, logs.get("val_loss"))

    def on_train_end(self, logs=None):
        self._fitting = False
        self._refresh_outputs()

    # ----- without a widget manager -----------------------------------------------
    def static_html(self) -> str:
        """The view as it stands, as plain HTML: title, loss curve, ‖ḡ‖ per layer over the epochs, latest bars.

        Inline SVG and a table, no script and no network: what an HTML export
        of the notebook (nbconvert, :mod:`autodiff_viz.course.run_notebooks`) or a
        notebook viewer shows where the live widget cannot run.
        """
        return (f'<div class="adv-training-static" style="font-family:Helvetica,Arial,sans-serif;font-size:14px">'
                f'<div>{self.title.value}</div><div style="display:flex;flex-wrap:wrap;gap:12px">'
                f'<div>{self.curve.value}</div><div>{self.history.value}</div></div>{self.bars.value}</div>')

    def _repr_mimebundle_(self, **kwargs):
        """The live widget for Jupyter, with :meth:`static_html` as ``text/html`` for everything else."""
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.static_html()
        return bundle

    def _ipython_display_(self):
        """Display with a display id, so the saved static copy can be brought up to date when training ends.

        Usually the view is displayed before ``fit`` runs: the ``text/html`` in
        the notebook would stay "no epoch finished yet" while the live widget
        moves on. At the end of ``fit`` (and after each hand-fed
        :meth:`update`) every output showing this view, or a view sharing its
        axes, is replaced by an up-to-date bundle.
        """
        from IPython.display import display
        handle = display(self._repr_mimebundle_(), raw=True, display_id=True)
        if handle is not None:
            self._handles.append(handle)

    def _refresh_outputs(self):
        for view in self.scale.views:
            if view._handles:
                bundle = view._repr_mimebundle_()
                for handle in view._handles:
                    handle.update(bundle, raw=True)
