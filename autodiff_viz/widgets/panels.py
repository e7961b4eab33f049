"""HTML for the explorer's panels: the chain-rule step, the inspector, why None, Jacobian vs gradient.

Pure functions of a :class:`~autodiff_viz.Trace` (and numbers), so tests can
read them without a browser. Every piece of user text goes through
:func:`html.escape`; numbers are printed in every matrix cell, so the
heat-map colours of a Jacobian are never the only signal.
"""
from __future__ import annotations

import html

import numpy as np

from ..dot import shape_text
from ..trace import _num

MATRIX_CELLS = 144       # matrices with more entries are summarised, not printed
MATRIX_SIDE = 12


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def summary_text(a: np.ndarray) -> str:
    """``shape, min … max, ‖·‖`` for an array too big to print."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return f"shape {a.shape}, empty"
    return (f"shape {a.shape}: min {_num(a.min())}, mean {_num(a.mean())}, max {_num(a.max())}, "
            f"‖·‖ {_num(np.sqrt(np.sum(a * a)))}")


def matrix_html(a, caption: str = "", heat: bool = False) -> str:
    """A small 2-D table of numbers (a vector as one row); a summary line when big.

    With ``heat=True`` cells are shaded by sign and size (blue > 0, red < 0),
    the number always printed inside.
    """
    a = np.asarray(a)
    m = a.reshape(1, -1) if a.ndim <= 1 else a.reshape(a.shape[0], -1)
    if m.size > MATRIX_CELLS or m.shape[0] > MATRIX_SIDE or m.shape[1] > MATRIX_SIDE:
        body = f'<span class="adv-mono">{esc(summary_text(a))}</span>'
    else:
        scale = float(np.max(np.abs(m))) if m.size and np.all(np.isfinite(m)) else 0.0
        rows = []
        for row in m:
            cells = []
            for v in row:
                style = ""
                if heat and scale > 0 and np.isfinite(v):
                    alpha = 0.15 + 0.6 * abs(float(v)) / scale if v != 0 else 0.0
                    colour = "33, 102, 172" if v > 0 else "178, 24, 43"
                    style = f' style="background: rgba({colour}, {alpha:.2f})"'
                cells.append(f"<td{style}>{esc(_num(v))}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        body = f'<table class="adv-mat">{"".join(rows)}</table>'
    cap = f'<div class="adv-caption">{esc(caption)}</div>' if caption else ""
    return f'<div style="display:inline-block">{body}{cap}</div>'


def _data(summary):
    return None if summary is None or summary.data is None else np.asarray(summary.data, dtype=np.float64)


def _brief(summary) -> str:
    return "—" if summary is None else summary.brief()


def _location_html(node) -> str:
    if node.location is None:
        return '<span class="adv-note">no user code line recorded</span>'
    loc = node.location
    return f'<code>{esc(loc)}</code>&nbsp; <code>{esc(loc.code)}</code>'


def _head(node) -> str:
    scope = f" in <code>{esc(node.scope)}</code>" if node.scope else ""
    return f"<b>{esc(node.id)} · {esc(node.title)}</b> (<code>{esc(node.op)}</code>){scope}"


# ---------------------------------------------------------------------------
# Chain-rule step
# ---------------------------------------------------------------------------
def backward_step_html(trace, k: int) -> str:
    """Step ``k`` of the backward pass (1-based) in numbers: ``ḡ_x = ḡ_y · ∂y/∂x`` for every input."""
    steps = trace.steps
    if not steps:
        return '<div class="adv-panel adv-note">No backward pass to walk: ' + esc(
            "; ".join(trace.notes) or "the trace has no target, or no source is connected to it.") + "</div>"
    if k == 0:
        tgt = trace.node(trace.target)
        return (f'<div class="adv-panel"><b>step 0 / {len(steps)}</b>: before the backward pass. The seed is '
                f'ḡ of the target {esc(tgt.id)} · {esc(tgt.title)} = {matrix_html(_data(tgt.grad) if tgt.grad else 1)} '
                "(ones: the gradient of the sum of its entries). Press ▶ or drag the slider.</div>")
    node = trace.node(steps[k - 1])
    parts = [f'<div class="adv-panel"><b>step {k} / {len(steps)}</b>: {_head(node)} — {_location_html(node)}']
    edges = [e for e in trace.edges_into(node.id) if e.contribution is not None]
    if not edges:
        parts.append('<div class="adv-note">nothing flows to the inputs from here.</div>')
    g_y = _data(node.grad) if node.grad is not None else None
    for e in edges:
        src = trace.node(e.src)
        parts.append(f"<div style='margin-top:8px'>input <b>{esc(e.input_name)}</b> = {esc(src.id)} · "
                     f"{esc(src.title)} {esc(shape_text(src.shape, src.dtype))}; rule: "
                     f"<code>{esc(e.factor or '')}</code></div>")
        up, contrib = _data(e.upstream), _data(e.contribution)
        if e.jacobian is not None and up is not None and contrib is not None:
            parts.append(
                '<div class="adv-eq">'
                f'{matrix_html(contrib.ravel(), f"ḡ_{e.input_name} {contrib.shape}")}<span class="adv-op">=</span>'
                f'{matrix_html(up.ravel(), f"ḡ_y {up.shape}")}<span class="adv-op">·</span>'
                f'{matrix_html(e.jacobian, f"∂y/∂{e.input_name} {e.jacobian.shape}", heat=True)}</div>')
            if up.ndim > 1 or contrib.ndim > 1:
                parts.append('<div class="adv-note">(tensors flattened to rows; the Jacobian is '
                             '(size of y) × (size of the input))</div>')
        else:
            parts.append(
                '<div class="adv-eq adv-mono">'
                f"ḡ_{esc(e.input_name)} = ḡ_y · ∂y/∂{esc(e.input_name)}: ḡ_y {esc(_brief(e.upstream))} "
                f"→ ḡ_{esc(e.input_name)} {esc(_brief(e.contribution))}</div>"
                '<div class="adv-note">(too big to print the matrices: summaries shown)</div>')
        if len([x for x in trace.edges_from(src.id) if x.contribution is not None]) > 1:
            parts.append(f'<div class="adv-note">{esc(src.id)} feeds several ops: its ḡ is the sum of '
                         "their contributions (the Σ node in the backward view).</div>")
    if g_y is None:
        parts.append('<div class="adv-note">ḡ_y of this op is not kept (off the path).</div>')
    parts.append("</div>")
    return "".join(parts)


def forward_step_html(trace, ops: list, k: int) -> str:
    """Step ``k`` of the forward pass: which op ran, on which inputs, with what value."""
    if k == 0:
        return (f'<div class="adv-panel"><b>step 0 / {len(ops)}</b>: before the forward pass; only the leaves '
                "(variables, watched tensors, constants) have values. Press ▶ or drag the slider.</div>")
    node = trace.node(ops[k - 1])
    ins = ", ".join(f"{esc(e.input_name)}={esc(e.src)}" for e in trace.edges_into(node.id))
    value = _data(node.value)
    shown = matrix_html(value) if value is not None else f'<span class="adv-mono">{esc(node.value.brief())}</span>'
    return (f'<div class="adv-panel"><b>step {k} / {len(ops)}</b>: {_head(node)} — {_location_html(node)}'
            f'<div class="adv-eq"><span class="adv-mono">{esc(node.id)} = {esc(node.op)}({ins}) =</span>'
            f'{shown}</div></div>')


# ---------------------------------------------------------------------------
# Inspector
# ---------------------------------------------------------------------------
def inspector_html(trace, node_id: str | None) -> str:
    """Everything about one node: name, op, scope, shape, dtype, value, ḡ, local Jacobians, code line."""
    if node_id is None:
        return '<div class="adv-panel adv-note">Pick a node above.</div>'
    n = trace.node(node_id)
    value, grad = _data(n.value), _data(n.grad)
    rows = [("name", esc(n.name or "—")), ("op", f"<code>{esc(n.op)}</code> ({esc(n.kind)})"),
            ("scope", esc(n.scope or "—")), ("shape", esc(n.shape)), ("dtype", esc(n.dtype)),
            ("value", matrix_html(value) if value is not None else esc(n.value.brief())),
            ("gradient ḡ", (matrix_html(grad) if grad is not None else esc(n.grad.brief())) if n.grad is not None
             else '<span class="adv-note">None (not on a path from the target to a source)</span>'),
            ("code", _location_html(n))]
    if n.params:
        rows.insert(2, ("params", esc(", ".join(f"{k}={v}" for k, v in n.params.items()))))
    marks = trace.marks_of(n.id)
    if marks:
        rows.append(("marked", esc("; ".join(marks))))
    body = "".join(f"<tr><th style='text-align:left;padding-right:12px'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    parts = [f'<div class="adv-panel">{_head(n)}<table>{body}</table>']
    for e in trace.edges_into(n.id):
        src = trace.node(e.src)
        if e.jacobian is not None:
            jac = matrix_html(e.jacobian, f"∂{n.id}/∂{src.id} {e.jacobian.shape}", heat=True)
        elif not e.differentiable:
            jac = f'<span class="adv-note">no gradient: {esc(e.no_grad_reason)}</span>'
        else:
            jac = '<span class="adv-note">too big to keep (more than 64 entries on a side)</span>'
        parts.append(f"<div style='margin-top:6px'>local Jacobian for input <b>{esc(e.input_name)}</b> "
                     f"({esc(src.id)} · {esc(src.title)}): <code>{esc(e.factor or '')}</code><br>{jac}</div>")
    parts.append("</div>")
    return "".join(parts)


# ---------------------------------------------------------------------------
# Why None, Jacobian vs summed gradient
# ---------------------------------------------------------------------------
def why_none_html(trace, explanations: list) -> str:
    """One block per requested source: connected, or the explanation of the None and what is marked."""
    if not explanations:
        notes = "".join(f"<li>{esc(n)}</li>" for n in trace.notes)
        text = ("Every requested source has a gradient." if trace.target is not None and not trace.notes
                else "Give show() a target (and sources) from a tape to diagnose missing gradients.")
        return f'<div class="adv-panel">{esc(text)}{f"<ul>{notes}</ul>" if notes else ""}</div>'
    parts = ['<div class="adv-panel">']
    for label, ex, marked in explanations:
        cls = "adv-good" if ex.connected else "adv-bad"
        verdict = "has a gradient" if ex.connected else "gradient is None"
        where = f" at <code>{esc(ex.location)}</code>" if ex.location else ""
        mark = (f"<div>marked in the graph (red, ⚠ label): {esc(', '.join(marked))}</div>" if marked else "")
        parts.append(f'<div class="{cls}"><b>{esc(label)}</b>: {verdict} — reason <code>{esc(ex.reason)}</code>'
                     f'{where}<div class="adv-mono" style="white-space:pre-wrap">{esc(ex.message)}</div>{mark}</div>')
    parts.append("</div>")
    return "".join(parts)


def jacobian_html(rows: list, note: str = "") -> str:
    """For each source: J, ``1ᵀJ`` (what ``gradient`` returns) and ``vᵀJ`` for the given ``output_gradients``."""
    if not rows:
        return f'<div class="adv-panel adv-note">{esc(note or "No Jacobian to show.")}</div>'
    parts = ['<div class="adv-panel">']
    if note:
        parts.append(f'<div class="adv-note">{esc(note)}</div>')
    for r in rows:
        parts.append(f"<div style='margin-top:8px'><b>{esc(r['label'])}</b>: J has shape "
                     f"target {esc(r['target_shape'])} + source {esc(r['source_shape'])} = {esc(r['J'].shape)}</div>")
        J2 = r["J"].reshape(int(np.prod(r["target_shape"], dtype=int)), -1)
        parts.append('<div class="adv-eq">' + matrix_html(J2, "J (rows: target entries)", heat=True) + "</div>")
        parts.append('<div class="adv-eq">' + matrix_html(r["ones"], "1ᵀJ = tape.gradient(target, source)") +
                     "<span class='adv-op'>: the Jacobian summed over the target's entries</span></div>")
        if r.get("v") is not None:
            parts.append('<div class="adv-eq">' + matrix_html(r["v"], "v = output_gradients") +
                         "<span class='adv-op'>→</span>" +
                         matrix_html(r["vJ"], "vᵀJ = tape.gradient(target, source, output_gradients=v)") + "</div>")
        else:
            parts.append('<div class="adv-note">pass output_gradients=v to show() to see vᵀJ '
                         "(the vector-Jacobian product, how the chain rule splits in two).</div>")
    parts.append("</div>")
    return "".join(parts)
