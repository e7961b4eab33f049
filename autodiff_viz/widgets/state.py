"""The explorer's state, without any widget: what is shown, which step, which node, and the HTML/CSS for it.

:class:`ExplorerState` holds a :class:`~autodiff_viz.Trace` plus what the
learner has chosen (view, collapse, label toggles, zoom, forward or backward
stepping, the step, the inspected node). The widget in
:mod:`autodiff_viz.widgets.explorer` only forwards clicks here and copies the
results to the screen, so every behaviour can be tested without a browser::

    >>> st = ExplorerState.from_tape(tape, target=loss)     # doctest: +SKIP
    >>> st.step_forward(); st.current                        # doctest: +SKIP
    'n4'

Drawings are cached per ``(view, collapse)``: a step, a toggle, a selection
or a zoom only changes :meth:`css`, never the SVG.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import engine, render
from ..tensor import Tensor
from ..trace import Trace
from . import minidot, panels, svgtools

VIEWS = ("forward", "backward", "both", "tape")
LABELS = ("value", "shape", "factor", "grad")
MODES = ("backward", "forward")
COLLAPSES = (None, "layers")
JACOBIAN_TARGET_LIMIT = 1024

_serial = itertools.count(1)


class ExplorerState:
    """What the explorer shows, and the transitions between states.

    Args:
        trace: the trace to explore (with marks for the missing gradients).
        explanations: ``[(label, Explanation, [marked ids])]`` for the why-None panel.
        jacobians: rows for the Jacobian panel (see :func:`jacobian_rows`), and its note.
        render_dot: ``dot source -> SVG``; default Graphviz, falling back to the
            built-in renderer when the ``dot`` program is missing.
    """

    def __init__(self, trace: Trace, explanations=(), jacobians=((), ""), render_dot=None):
        self.trace = trace
        self.explanations = list(explanations)
        self.jacobian_rows, self.jacobian_note = list(jacobians[0]), jacobians[1]
        self.prefix = f"adv{next(_serial)}"
        self.root = f".{self.prefix}-explorer"
        self._render_dot = render_dot
        self.renderer = None            # "graphviz" or "builtin", known after the first drawing
        self.renderer_note = ""
        self._drawings: dict = {}
        self.ops = [n.id for n in trace.nodes if n.kind == "op"]
        self.view = render.default_view(trace) if trace.target is not None else "forward"
        self.collapse = None
        self.hidden: set = set()
        self.zoom = 1.0
        self.mode = "backward" if trace.steps else "forward"
        self.step = self.max_step
        self.selected = trace.target or (self.ops[-1] if self.ops else (trace.nodes[0].id if trace.nodes else None))

    # ----- building ----------------------------------------------------------
    @classmethod
    def from_tape(cls, tape, target=None, sources=None, output_gradients=None, render_dot=None):
        """Trace ``tape``, diagnose every source without a gradient, and compute the Jacobian panel."""
        trace = tape.trace(target, sources)
        if sources is None:
            flat = [t for t in tape._watched.values()]
        else:
            flat = list(sources) if isinstance(sources, (list, tuple)) else [sources]
        explanations = []
        if isinstance(target, Tensor):
            for s in flat:
                nid = trace.node_id_of(s)
                ex = tape.explain(target, s)
                if ex.connected:
                    continue
                trace, marked = _mark(trace, ex)
                explanations.append((_label(s, nid), ex, marked))
        jac = jacobian_rows(tape, trace, target, flat, output_gradients)
        return cls(trace, explanations, jac, render_dot)

    # ----- drawing -----------------------------------------------------------
    def drawing(self, view=None, collapse="current"):
        """The tagged SVG of a view (``None`` for the tape table), drawn once and cached."""
        view = self.view if view is None else view
        collapse = self.collapse if collapse == "current" else collapse
        if view == "tape":
            return None
        key = (view, collapse)
        if key not in self._drawings:
            source = self.trace.to_dot(view, collapse)
            self._drawings[key] = svgtools.tag_svg(self._draw(source), self.trace, collapse, self.prefix)
        return self._drawings[key]

    def _draw(self, source: str) -> str:
        if self._render_dot is not None:
            self.renderer = self.renderer or "custom"
            return self._render_dot(source)
        if self.renderer != "builtin":
            try:
                out = render.svg(source)
                self.renderer = "graphviz"
                return out
            except render.GraphvizNotFound:
                self.renderer = "builtin"
                self.renderer_note = minidot.FALLBACK_NOTE
        return minidot.svg(source)

    @property
    def drawings_made(self) -> int:
        return len(self._drawings)

    # ----- transitions -------------------------------------------------------
    @property
    def max_step(self) -> int:
        return len(self.trace.steps) if self.mode == "backward" else len(self.ops)

    def set_step(self, k: int) -> None:
        self.step = max(0, min(self.max_step, int(k)))

    def step_forward(self) -> None:
        self.set_step(self.step + 1)

    def step_back(self) -> None:
        self.set_step(self.step - 1)

    def set_mode(self, mode: str) -> None:
        """Walk the ``"backward"`` pass (one tape record per step) or the ``"forward"`` pass (one op per step)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")
        if mode != self.mode:
            self.mode = mode
            self.step = 0

    def set_view(self, view: str) -> None:
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {view!r}.")
        self.view = view

    def set_collapse(self, collapse) -> None:
        if collapse not in COLLAPSES:
            raise ValueError(f"collapse must be one of {COLLAPSES}, got {collapse!r}.")
        self.collapse = collapse

    def set_label(self, kind: str, visible: bool) -> None:
        """Show or hide one kind of label line: ``"value"``, ``"shape"``, ``"factor"`` or ``"grad"``."""
        if kind not in LABELS:
            raise ValueError(f"label kind must be one of {LABELS}, got {kind!r}.")
        (self.hidden.discard if visible else self.hidden.add)(kind)

    def set_zoom(self, zoom: float) -> None:
        self.zoom = float(min(4.0, max(0.25, zoom)))

    def select(self, node_id: str) -> None:
        """Inspect the node ``node_id`` (``"n3"``)."""
        self.trace.node(node_id)
        self.selected = node_id

    # ----- what the step means -----------------------------------------------
    @property
    def current(self) -> str | None:
        """The node of the current step (the op being differentiated, or computed), None at step 0."""
        if self.step == 0:
            return None
        return self.trace.steps[self.step - 1] if self.mode == "backward" else self.ops[self.step - 1]

    def step_classes(self) -> dict:
        """Which nodes and edges are current, done, pending at this step (ids for :func:`svgtools.state_css`)."""
        tr = self.trace
        current = self.current
        if self.mode == "forward":
            computed = set(self.ops[:self.step])
            later = [o for o in self.ops if o not in computed]
            return {"current": current, "not_computed": later,
                    "pending_edges": [e.id for e in tr.edges if e.dst not in computed],
                    "just_done_edges": [e.id for e in tr.edges if e.dst == current],
                    "unknown_grad": [n.id for n in tr.nodes if n.grad is not None],
                    "pending_acc": sorted({e.src for e in tr.edges})}
        done = set(tr.steps[:self.step])
        flowing = [e for e in tr.edges if e.contribution is not None]
        pending = [e for e in flowing if e.dst not in done]
        known = set(done) | ({tr.target} if tr.target else set())
        out_edges: dict = {}
        for e in flowing:
            out_edges.setdefault(e.src, []).append(e)
        for src, es in out_edges.items():
            if all(e.dst in done for e in es):
                known.add(src)
        return {"current": current,
                "done_edges": [e.id for e in flowing if e.dst in done],
                "just_done_edges": [e.id for e in flowing if e.dst == current],
                "pending_edges": [e.id for e in pending],
                "pending_acc": sorted({e.src for e in pending if len(out_edges[e.src]) > 1}),
                "unknown_grad": [n.id for n in tr.nodes if n.grad is not None and n.id not in known],
                "edge_panel": "adv-bwd"}

    # ----- output ------------------------------------------------------------
    def css(self) -> str:
        """The CSS of this state (the only thing that changes on a step, toggle, selection or zoom)."""
        return svgtools.state_css(self.root, self.drawing(), self.zoom, self.hidden, self.step_classes(),
                                  self.selected)

    def graph_html(self) -> str:
        """The drawing of the current view (or the tape table), inside its scrolling viewport."""
        note = ""
        if self.view == "tape":
            body = self.trace.table().to_html()
        else:
            body = self.drawing().svg
            if self.renderer == "builtin":
                note = f'<div class="adv-note" role="note">{panels.esc(self.renderer_note)}</div>'
        return f'{note}<div class="adv-graph" role="img" aria-label="{self.view} graph">{body}</div>'

    def step_html(self) -> str:
        if self.mode == "backward":
            return panels.backward_step_html(self.trace, self.step)
        return panels.forward_step_html(self.trace, self.ops, self.step)

    def step_label(self) -> str:
        cur = self.current
        what = "backward: ḡ flows from the target to the sources" if self.mode == "backward" else \
            "forward: ops run in tape order"
        if cur is None:
            return f"step 0 / {self.max_step} ({what})"
        n = self.trace.node(cur)
        return f"step {self.step} / {self.max_step}: {n.id} · {n.title}"

    def inspector_html(self) -> str:
        return panels.inspector_html(self.trace, self.selected)

    def why_none_html(self) -> str:
        return panels.why_none_html(self.trace, self.explanations)

    def jacobian_html(self) -> str:
        return panels.jacobian_html(self.jacobian_rows, self.jacobian_note)

    def node_options(self) -> list:
        """``(label, node id)`` pairs for the inspector's dropdown."""
        out = []
        for n in self.trace.nodes:
            scope = f" [{n.scope}]" if n.scope else ""
            out.append((f"{n.id} · {n.title} ({n.op}){scope}", n.id))
        return out


# ---------------------------------------------------------------------------
# Helpers for from_tape
# ---------------------------------------------------------------------------
def _label(t: Tensor, nid) -> str:
    name = f"'{t.name}'" if t.name else "source"
    return f"{name} {tuple(t.shape)}" + (f" ({nid})" if nid else " (not in this tape's record)")


def _mark(trace: Trace, ex) -> tuple[Trace, list]:
    """Mark the explanation's broken edges (else its nodes) on the trace; return the marked ids."""
    refs = []
    for a, b in ex.edges:
        try:
            refs.append(trace._resolve((a, b)))
        except ValueError:
            continue
    nodes = [nid for nid in (trace.node_id_of(t) for t in ex.nodes) if nid is not None]
    if not refs:
        refs = [e.id for e in trace.edges if e.src in nodes and e.dst in nodes] + nodes
    refs = list(dict.fromkeys(refs))
    reason = ex.reason.replace("_", " ")
    return (trace.with_marks([(r, reason) for r in refs]) if refs else trace), refs


def jacobian_rows(tape, trace, target, sources, output_gradients=None) -> tuple[list, str]:
    """J, 1ᵀJ and vᵀJ for each connected source, from one backward walk seeded with an identity.

    Walks the tape's records directly (like :meth:`GradientTape.jacobian`) so it
    does not use up a non-persistent tape.
    """
    if not isinstance(target, Tensor):
        return [], "Give show() a target tensor to compare the Jacobian with the summed gradient."
    if target.dtype.kind not in "fc":
        return [], f"The target has dtype {target.dtype}: integers have no Jacobian."
    if target.size > JACOBIAN_TARGET_LIMIT:
        return [], (f"The target has {target.size} entries (more than {JACOBIAN_TARGET_LIMIT}): the Jacobian "
                    "is not computed here; use tape.jacobian on a slice.")
    v = None
    if output_gradients is not None:
        v = np.asarray(output_gradients.numpy() if isinstance(output_gradients, Tensor) else output_gradients,
                       dtype=np.float64)
        if v.shape != target.shape:
            raise ValueError(f"show: output_gradients has shape {v.shape}, but the target has shape "
                             f"{target.shape}; give one upstream value per target entry.")
    ids = {s._id for s in sources if s._id in tape._tracked}
    eye = np.eye(target.size, dtype=target.dtype).reshape(target.shape + target.shape)
    with engine.paused(), np.errstate(all="ignore"):
        grads = engine.backward(list(tape._nodes), {target._id: eye}, ids)
    rows = []
    for s in sources:
        J = grads.get(s._id)
        if J is None:
            continue
        J = np.asarray(J, dtype=np.float64)
        flat = J.reshape(target.size, -1)
        row = {"label": _label(s, trace.node_id_of(s)), "target_shape": tuple(target.shape),
               "source_shape": tuple(s.shape), "J": J, "ones": flat.sum(axis=0).reshape(s.shape)}
        if v is not None:
            row["v"] = v
            row["vJ"] = (v.reshape(1, -1) @ flat).reshape(s.shape)
        rows.append(row)
    note = ("The target is a scalar: J is one row, and it is the gradient." if target.ndim == 0 else
            "The target is not a scalar: tape.gradient returns 1ᵀJ, the sum of J's rows, which has the "
            "shape of the source. tape.jacobian returns J itself.")
    if not rows:
        note = "No source is connected to the target, so there is no Jacobian to show."
    return rows, note
