"""HTML for the explorer's panels: the chain-rule step, the inspector, why None, Jacobian vs gradient.

Pure functions of a :class:`~autodiff_viz.Trace` (and numbers), so tests can
read them without a browser. Every piece of user text goes through
:func:`html.escape`; numbers are printed in every matrix cell, so the
heat-map colours of a Jacobian are never the only signal.
"""
from __future__ import annotations

import html

import numpy as np

from ...records.traces.model import _num
from ..dot import shape_text

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
            f"2-norm ‖·‖ = {_num(np.sqrt(np.sum(a * a)))}")


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
    op = f" (<code>{esc(node.op)}</code>)" if node.title != node.op else ""
    return f"<b>{esc(node.title)}</b>{op}{scope}"


def _name(node) -> str:
    """A node in prose: the learner's name, else what it is (``a constant``, ``tanh output``), never an id."""
    if node.title != node.op:
        return node.title
    return f"a {node.kind}" if node.is_leaf else f"{node.op} output"


def _product_html(e, x: str, up, contrib, jac_text: str) -> str:
    """``ḡ_x = ḡ_y · ∂y/∂x`` in numbers: as a row times the Jacobian when all of it fits on screen, else
    ḡ_x and ḡ_y in their own shapes (a (3, 2) weight as three rows of two) and the Jacobian's size."""
    fits = e.jacobian is not None and max(up.size, contrib.size) <= MATRIX_SIDE
    if fits:
        out = ('<div class="adv-eq">'
               f'{matrix_html(as_matrix(contrib), f"ḡ_{x} {contrib.shape}")}<span class="adv-op">=</span>'
               f'{matrix_html(up.ravel(), f"ḡ_y {up.shape}, as a row")}<span class="adv-op">·</span>'
               f'{matrix_html(e.jacobian, f"∂y/∂{x} {e.jacobian.shape}", heat=True)}</div>')
        if up.ndim > 1 or contrib.ndim > 1:
            out += (f'<div class="adv-note">ḡ_y is read as one row of {up.size} numbers; the Jacobian has one '
                    f"row per entry of y and one column per entry of {esc(x)}; the product, laid out in the "
                    f"shape of {esc(x)}, is ḡ_{esc(x)}.</div>")
        return out
    formula = getattr(e, "formula", None) or f"ḡ_{x} = ḡ_y · ∂y/∂{x}"
    return ('<div class="adv-eq">'
            f'{matrix_html(as_matrix(contrib), f"ḡ_{x} {contrib.shape}")}<span class="adv-op">=</span>'
            f'<span class="adv-mono">{esc(formula.split("=", 1)[-1].strip())}</span>'
            f'<span class="adv-op">with</span>{matrix_html(as_matrix(up), f"ḡ_y {up.shape}")}</div>'
            f'<div class="adv-note">{esc(jac_text)}</div>')


def as_matrix(a) -> np.ndarray:
    """A value the way it is written on paper: scalars and vectors as they are, a matrix as rows,
    anything with more axes as (first axis) × (the rest)."""
    a = np.asarray(a)
    return a if a.ndim <= 2 else a.reshape(a.shape[0], -1)


# ---------------------------------------------------------------------------
# Chain-rule step
# ---------------------------------------------------------------------------
def backward_step_html(trace, k: int) -> str:
    """Step ``k`` of the backward pass (1-based) in numbers: ``ḡ_x = ḡ_y · ∂y/∂x`` for every input.

    Tensors keep their shape (a (3, 2) weight is three rows of two); the
    local Jacobian is the (size of y) × (size of x) matrix the formula multiplies by.
    """
    steps = trace.steps
    if not steps:
        return '<div class="adv-panel adv-note">No backward pass to walk: ' + esc(
            "; ".join(trace.notes) or "the trace has no target, or no source is connected to it.") + "</div>"
    tgt = trace.node(trace.target)
    if k == 0:
        seed = _data(tgt.grad) if tgt.grad is not None else np.ones(tgt.shape)
        return (f'<div class="adv-panel"><b>step 0 / {len(steps)}</b>: before the backward pass. The seed is '
                f'ḡ of the target {esc(_name(tgt))} = {matrix_html(as_matrix(seed) if seed is not None else 1)} '
                "(ones: the gradient of the sum of its entries). No other gradient is known yet. "
                "Press ▶ or drag the slider.</div>")
    node = trace.node(steps[k - 1])
    parts = [f'<div class="adv-panel"><b>step {k} / {len(steps)}</b>: {_head(node)} — {_location_html(node)}']
    edges = [e for e in trace.edges_into(node.id) if e.contribution is not None]
    if not edges:
        parts.append('<div class="adv-note">nothing flows to the inputs from here.</div>')
    g_y = _data(node.grad) if node.grad is not None else None
    for e in edges:
        src = trace.node(e.src)
        x = e.input_name
        formula = getattr(e, "formula", None)
        parts.append(f"<div style='margin-top:8px'>input <b>{esc(x)}</b> = {esc(_name(src))} "
                     f"{esc(shape_text(src.shape, src.dtype))}: <code>{esc(formula or e.factor or '')}</code></div>")
        up, contrib = _data(e.upstream), _data(e.contribution)
        if up is not None and contrib is not None:
            parts.append(_product_html(e, x, up, contrib, f"(the local Jacobian: {_jac_shape(trace, e)})"))
        else:
            parts.append('<div class="adv-eq">' + _value_html(e.contribution, f"ḡ_{x}") +
                         '<span class="adv-op">from</span>' + _value_html(e.upstream, "ḡ_y") + "</div>"
                         '<div class="adv-note">(the local Jacobian is too big to print: '
                         f"{esc(_jac_shape(trace, e))})</div>")
        if len([y for y in trace.edges_from(src.id) if y.contribution is not None]) > 1:
            parts.append(f'<div class="adv-note">{esc(_name(src))} feeds several ops: its ḡ is the sum of '
                         "their contributions (the Σ node in the backward view).</div>")
    if g_y is None and node.grad is None:
        parts.append('<div class="adv-note">ḡ_y of this op is not kept (off the path).</div>')
    parts.append("</div>")
    return "".join(parts)


def _jac_shape(trace, e) -> str:
    y, x = trace.node(e.dst), trace.node(e.src)
    ny, nx = int(np.prod(y.shape, dtype=np.int64)), int(np.prod(x.shape, dtype=np.int64))
    return f"∂y/∂{e.input_name} has {ny} × {nx} entries"


def _value_html(summary, caption: str) -> str:
    if summary is None:
        return '<span class="adv-note">—</span>'
    d = _data(summary)
    if d is not None:
        return matrix_html(as_matrix(d), f"{caption} {d.shape}")
    return (f'<div style="display:inline-block"><span class="adv-mono">{esc(summary_text_of(summary))}</span>'
        f'<div class="adv-caption">{esc(caption)}</div></div>')


def summary_text_of(summary) -> str:
    """``shape (64, 128): min …, mean …, max …, 2-norm …`` from a trace summary's statistics."""
    s = summary.stats
    return (f"shape {tuple(summary.shape)}: min {_num(s['min'])}, mean {_num(s['mean'])}, max {_num(s['max'])}, "
            f"2-norm ‖·‖ = {_num(s['norm'])}")


def forward_step_html(trace, ops: list, k: int) -> str:
    """Step ``k`` of the forward pass: which op ran, on which inputs, with what value."""
    if k == 0:
        return (f'<div class="adv-panel"><b>step 0 / {len(ops)}</b>: before the forward pass; only the leaves '
                "(variables, watched tensors, constants) have values. Press ▶ or drag the slider.</div>")
    node = trace.node(ops[k - 1])
    ins = ", ".join(f"{esc(e.input_name)}={esc(_name(trace.node(e.src)))}" for e in trace.edges_into(node.id))
    return (f'<div class="adv-panel"><b>step {k} / {len(ops)}</b>: {_head(node)} — {_location_html(node)}'
            f'<div class="adv-eq"><span class="adv-mono">{esc(_name(node))} = {esc(node.op)}({ins}) =</span>'
            f'{_value_html(node.value, "value")}</div></div>')


# ---------------------------------------------------------------------------
# Inspector
# ---------------------------------------------------------------------------
def inspector_html(trace, node_id: str | None, grad_known: bool = True) -> str:
    """Everything about one node: name, op, scope, shape, dtype, value, ḡ, local Jacobians, code line, id.

    ``grad_known=False`` (the backward walk has not reached the node yet)
    shows no gradient: nothing is shown before the step that computes it.
    """
    if node_id is None:
        return '<div class="adv-panel adv-note">Click a node in the graph (or pick one above).</div>'
    n = trace.node(node_id)
    if n.grad is None:
        grad = '<span class="adv-note">None (not on a path from the target to a source)</span>'
    elif not grad_known:
        grad = '<span class="adv-note">not computed yet at this step of the backward pass</span>'
    else:
        grad = _value_html(n.grad, "ḡ")
    rows = [("name", esc(n.title) if n.title != n.op else "—"), ("op", f"<code>{esc(n.op)}</code> ({esc(n.kind)})"),
            ("scope", esc(n.scope or "—")), ("shape", esc(n.shape)), ("dtype", esc(n.dtype)),
            ("value", _value_html(n.value, "value")), ("gradient ḡ", grad), ("code", _location_html(n)),
            ("node id", f"<code>{esc(n.id)}</code>")]
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
            jac = matrix_html(e.jacobian, f"∂y/∂{e.input_name} {e.jacobian.shape}", heat=True)
        elif not e.differentiable:
            jac = f'<span class="adv-note">no gradient: {esc(e.no_grad_reason)}</span>'
        else:
            jac = f'<span class="adv-note">too big to keep ({esc(_jac_shape(trace, e))})</span>'
        parts.append(f"<div style='margin-top:6px'>local Jacobian for input <b>{esc(e.input_name)}</b> "
                     f"({esc(_name(src))}): <code>{esc(getattr(e, 'formula', None) or e.factor or '')}</code>"
                     f"<br>{jac}</div>")
    parts.append("</div>")
    return "".join(parts)


def edge_html(trace, edges: list, computed: dict) -> str:
    """Edges of the graph in numbers: the factor, the local Jacobian (or its size), ḡ_y and ḡ_y·∂y/∂x.

    ``computed[edge id]`` says whether the backward walk has reached the
    edge; before that only the local Jacobian (a forward quantity) is shown.
    """
    parts = ['<div class="adv-panel">']
    if len(edges) > 1:
        parts.append(f'<div class="adv-note">{len(edges)} edges drawn as one; the first 4 are shown.</div>')
    for e in edges[:4]:
        src, dst = trace.node(e.src), trace.node(e.dst)
        x = e.input_name
        parts.append(f"<div style='margin-top:6px'><b>{esc(_name(src))}</b> → <b>{esc(_name(dst))}</b> "
                     f"(input <b>{esc(x)}</b> of <code>{esc(dst.op)}</code>): "
                     f"<code>{esc(getattr(e, 'formula', None) or e.factor or '')}</code></div>")
        if not e.differentiable:
            parts.append(f'<div class="adv-note">no gradient flows here: {esc(e.no_grad_reason)}</div>')
            continue
        jac = (matrix_html(e.jacobian, f"∂y/∂{x} {e.jacobian.shape}", heat=True) if e.jacobian is not None else
               f'<span class="adv-note">{esc(_jac_shape(trace, e))}: too big to print</span>')
        up, contrib = _data(e.upstream), _data(e.contribution)
        if computed.get(e.id) and up is not None and contrib is not None:
            parts.append(_product_html(e, x, up, contrib, f"the local Jacobian: {_jac_shape(trace, e)}"))
            if e.jacobian is not None and max(up.size, contrib.size) > MATRIX_SIDE:
                parts.append('<div class="adv-eq">' + jac + "</div>")
        elif computed.get(e.id):
            parts.append('<div class="adv-eq">' + _value_html(e.contribution, f"ḡ_{x} = ḡ_y · ∂y/∂{x}") +
                         '<span class="adv-op">from</span>' + _value_html(e.upstream, "ḡ_y") +
                         '<span class="adv-op">and</span>' + jac + "</div>")
        elif e.contribution is not None:
            parts.append('<div class="adv-eq">' + jac + '</div><div class="adv-note">ḡ has not reached this '
                         "edge at this step of the backward pass; step on to see ḡ_y and ḡ_y·∂y/∂x.</div>")
        else:
            parts.append('<div class="adv-eq">' + jac + '</div><div class="adv-note">no gradient flows '
                         "along this edge (it is not on a path from the target to a source).</div>")
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
        mark = (f"<div>marked in the graph (red, ⚠ label): {esc(marked_text(trace, marked))}</div>"
                if marked else "")
        parts.append(f'<div class="{cls}"><b>{esc(label)}</b>: {verdict} — reason <code>{esc(ex.reason)}</code>'
                     f'{where}<div class="adv-mono" style="white-space:pre-wrap">{esc(ex.message)}</div>{mark}</div>')
    parts.append("</div>")
    return "".join(parts)


def marked_text(trace, marked) -> str:
    """The marked nodes and edges in words (``'h' → sum output``), never as internal ids."""
    out = []
    for ref in marked:
        try:
            e = trace.edge(ref)
        except KeyError:
            try:
                out.append(_name(trace.node(ref)))
            except KeyError:
                continue
        else:
            out.append(f"{_name(trace.node(e.src))} → {_name(trace.node(e.dst))}")
    return ", ".join(dict.fromkeys(out))


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


# ---------------------------------------------------------------------------
# Rolled loops: the cell at time t, and ‖ḡ_h(t)‖ against t
# ---------------------------------------------------------------------------
def grad_over_time_svg(norms: list, t: int | None = None, width: int = 420, height: int = 170,
                       shown=None) -> str:
    """‖ḡ_h(t)‖ against t on a log10 axis, the selected t marked: vanishing or exploding gradients at a glance.

    Steps without a gradient (off the path) are left out; an exact zero is
    drawn on the bottom edge with an open marker. ``shown[t]`` False leaves
    out a step whose ḡ the backward walk has not computed yet (the axes stay
    those of the whole pass, so the points appear from the last t back to
    the first as you step).
    """
    every = [(k, v) for k, v in enumerate(norms) if v is not None and np.isfinite(v)]
    pos = [v for _, v in every if v > 0]
    if not every or not pos:
        return '<div class="adv-note">no gradient reaches the steps of this loop</div>'
    pts = [(k, v) for k, v in every if shown is None or shown[k]]
    lo, hi = float(np.floor(np.log10(min(pos)))), float(np.ceil(np.log10(max(pos))))
    hi = hi if hi > lo else lo + 1
    n = len(norms)
    left, right, top, bottom = 52, 12, 12, 30

    def xy(k, v):
        x = left + (width - left - right) * (k / max(1, n - 1))
        y = (height - bottom) if v <= 0 else top + (height - top - bottom) * (1 - (np.log10(v) - lo) / (hi - lo))
        return x, y

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(k, v) for k, v in pts if v > 0))
    parts = [f'<svg class="adv-loop-plot" width="{width}" height="{height}" role="img" '
             'aria-label="norm of the gradient of the hidden state at each time step" '
             'xmlns="http://www.w3.org/2000/svg" font-family="Helvetica,Arial" font-size="12">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#888"/>',
             f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">1e{hi:g}</text>',
             f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">1e{lo:g}</text>',
             f'<text x="{(width + left) / 2}" y="{height - 8}" text-anchor="middle">time step t (0 … {n - 1}); '
             '‖ḡ_h(t)‖, log scale</text>',
             f'<polyline fill="none" stroke="#1f4e99" stroke-width="2" points="{line}"/>']
    for k, v in pts:
        x, y = xy(k, v)
        fill = "#1f4e99" if v > 0 else "white"
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{fill}" stroke="#1f4e99"/>')
    if t is not None and 0 <= t < n:
        x = xy(t, 1.0)[0]
        parts.append(f'<line class="adv-loop-t" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - bottom}" '
                     'stroke="#c2185b" stroke-width="2" stroke-dasharray="4 2"/>')
    parts.append("</svg>")
    return "".join(parts)


def loop_html(trace, loop, t: int, grad_known: bool = True, shown=None) -> str:
    """Step ``t`` of a rolled loop: what the cell hands on (h(t)), its value and ḡ_h(t), and the plot over t.

    ``grad_known=False`` (the backward walk has not reached step t yet)
    shows no gradient, as everywhere else; ``shown[t]`` says the same for
    every step of the plot.
    """
    t = max(0, min(loop.count - 1, int(t)))
    nid = loop.outputs[t]
    parts = [f'<div class="adv-panel"><b>{esc(loop.title)}</b>: a loop of {loop.count} steps drawn as one box '
             f"(the edge t → t+1 hands on the state). Step <b>t = {t}</b>:"]
    if nid is not None:
        n = trace.node(nid)
        if n.grad is None:
            grad = '<span class="adv-note">None (off the path)</span>'
        elif grad_known:
            grad = _value_html(n.grad, f"ḡ_h({t})")
        else:
            grad = '<span class="adv-note">not computed yet at this step of the backward pass</span>'
        called = "" if _name(n) == "h" else f" ({esc(_name(n))})"
        parts.append(f'<div class="adv-eq">h({t}){called} = {_value_html(n.value, f"h({t})")}'
                     f'<span class="adv-op">ḡ_h({t}) =</span>{grad}</div>')
    norms = list(loop.grad_norms)
    parts.append(grad_over_time_svg(norms, t, shown=shown))
    finite = [(k, v) for k, v in enumerate(norms) if v and (shown is None or shown[k])]
    if shown is not None and not all(shown):
        parts.append('<div class="adv-note">points appear as the backward walk computes ḡ_h(t), from the '
                     "last step back to the first.</div>")
    if len(finite) >= 2:
        (k0, v0), (k1, v1) = finite[0], finite[-1]
        ratio = v0 / v1
        trend = ("vanishes going back in time" if ratio < 1e-2 else
                 "explodes going back in time" if ratio > 1e2 else "stays within two orders of magnitude")
        parts.append(f'<div class="adv-note">‖ḡ_h‖ at t = {k0} is {_num(ratio)} × its value at t = {k1}: the '
                     f"gradient {trend} (each step multiplies it by the cell's Jacobian).</div>")
    parts.append("</div>")
    return "".join(parts)
