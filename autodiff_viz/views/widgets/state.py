"""The explorer's state, without any widget: what is shown, which step, which node, and the drawings for it.

:class:`ExplorerState` holds a :class:`~autodiff_viz.Trace` plus what the
learner has chosen (view, collapse, which folded boxes are open, label
toggles, forward or backward stepping, the step, the inspected node). The
widget in :mod:`autodiff_viz.widgets.explorer` only forwards clicks here and
copies the results to the screen, so every behaviour can be tested without a
browser::

    >>> st = ExplorerState.from_tape(tape, target=loss)     # doctest: +SKIP
    >>> st.step, st.current                                  # doctest: +SKIP
    (1, 'n7')

Drawings are made once per fold state ``(view, collapse, expanded boxes)``;
each comes with a *plan* (:meth:`ExplorerState.payload`): for every drawn
element the step from which it is done in each pass, the box that is current
at each step, the edges each step computes. The browser paints any step from
the plan alone (:mod:`autodiff_viz.widgets.frontend`), so a step, a
selection, the zoom or a label toggle never lays the graph out again and
never re-sends it.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...base.state import paused
from ...core import walks
from ...core.tensor import Tensor, full_name
from ...diagnosis import walk as diagnosis
from ...records.traces.build import build_trace
from ...records.traces.model import Trace
from .. import dot, figure, heatmap, minidot, render
from ..folding import open_instances
from . import panels, svgtools

VIEWS = ("forward", "backward", "both", "tape")
LABELS = ("value", "shape", "factor", "grad")
MODES = ("backward", "forward")
COLLAPSES = ("auto", None, "layers")
JACOBIAN_TARGET_LIMIT = 1024
JACOBIAN_SOURCES = 16      # the Jacobian panel shows at most this many sources
TABLE_ROWS = 2000          # the tape view lists at most this many rows
NODE_OPTIONS = 1000        # the inspector's dropdown lists at most this many nodes
STEP_TITLES = 10000        # the page gets each step's title when both passes together have at most this many
HEAT_RAMP = ("#313695", "#4575b4", "#74add1", "#fdae61", "#f46d43", "#d73027", "#a50026")
HEAT_ZERO = "#bdbdbd"      # an exactly-zero gradient (a dead ReLU): grey, outside the ramp

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

    def __init__(self, trace: Trace, explanations=(), jacobians=((), ""), render_dot=None, full_grad=None):
        self.trace = trace
        self._full_grad = full_grad     # node id -> its whole ḡ (from the tape), for a weight's heat map
        self._heatmaps: dict = {}
        self.explanations = list(explanations)
        self.jacobian_rows, self.jacobian_note = list(jacobians[0]), jacobians[1]
        self.prefix = f"adv{next(_serial)}"
        self._render_dot = render_dot
        self.renderer = None            # "graphviz" or "builtin", known after the first drawing
        self.renderer_note = ""
        self._drawings: dict = {}
        self._payloads: dict = {}
        self._layouts: dict = {}
        self._titles = None
        self.ops = [n.id for n in trace.nodes if n.kind == "op"]
        self._bstep = {nid: i + 1 for i, nid in enumerate(trace.steps)}
        self._fstep = {nid: i + 1 for i, nid in enumerate(self.ops)}
        self._known = _grad_known_steps(trace, self._bstep)
        self.collapse = "auto"
        self.expanded: frozenset = dot.default_expanded(trace)   # models open, marks visible; the learner may fold them
        self.view = self._readable_view() if trace.target is not None else "forward"
        self.hidden: set = set()
        self.heat = False
        self.mode = "backward" if trace.steps else "forward"
        self.step = min(1, self.max_step)
        self.selected = trace.target or (self.ops[-1] if self.ops else (trace.nodes[0].id if trace.nodes else None))
        self.selected_edge = None

    # ----- building ----------------------------------------------------------
    @classmethod
    def from_tape(cls, tape, target=None, sources=None, output_gradients=None, render_dot=None):
        """Trace ``tape``; diagnose only the sources that got no gradient; compute the Jacobian panel.

        A source with a gradient in the trace is connected by definition, so the
        diagnosis (:func:`autodiff_viz.diagnosis.walk.explain_many`: one linear pass,
        then a walk per unconnected source) runs only for the others.
        """
        tape._require_values("tape.trace()")
        trace = build_trace(tape, target, sources)     # not tape.trace: a target off the tape is explained below
        if sources is None:
            flat = [t for t in tape.record.watched.values()]
        else:
            flat = list(sources) if isinstance(sources, (list, tuple)) else [sources]
        explanations = []
        if isinstance(target, Tensor):
            missing = [s for s in flat if (trace.node_id_of(s) is None or
                                           trace.node(trace.node_id_of(s)).grad is None)]
            many = getattr(diagnosis, "explain_many", None)
            answers = (many(tape, target, missing) if many is not None else
                       [tape.explain(target, s) for s in missing]) if missing else []
            for s, ex in zip(missing, answers):
                if ex.connected:
                    continue
                trace, marked = _mark(trace, ex)
                explanations.append((_label(s, trace, trace.node_id_of(s)), ex, marked))
        jac = jacobian_rows(tape, trace, target, flat, output_gradients)
        return cls(trace, explanations, jac, render_dot, full_grad=_grad_reader(tape, trace))

    # ----- fold state ----------------------------------------------------------
    def layout(self, collapse="current", expanded=None):
        """The boxes of the current fold state (:func:`autodiff_viz.dot.layout`), computed once per state."""
        collapse = self.collapse if collapse == "current" else collapse
        expanded = self.expanded if expanded is None else frozenset(expanded)
        key = (collapse, expanded)
        if key not in self._layouts:
            self._layouts[key] = dot.layout(self.trace, collapse, expanded=expanded)
        return self._layouts[key]

    def _readable_view(self) -> str:
        """``"both"`` when the two views side by side stay readable at :data:`~autodiff_viz.views.render.READABLE_WIDTH`
        px (that drawing is kept for when it is shown), else ``"backward"``."""
        if len(self.trace.nodes) > render.INLINE_NODE_LIMIT:
            return "backward"
        both = self.drawing("both")
        return "both" if not both.font or render.label_px(both.font, both.width) >= render.MIN_LABEL_PX else "backward"

    def _to_dot(self, view: str) -> str:
        """The DOT of a view without its legend: the page shows the legend beside the drawing.

        Inside the drawing the tall legend table shares the first rank with the
        target, which pushes every panel down (a blank band above the graph)
        and widens the drawing past the output.
        """
        return strip_legend(dot.to_dot(self.trace, view, self.collapse, expanded=self.expanded))

    def foldable(self) -> list:
        """Ids of the drawn boxes a click opens: layers, losses, scopes, functions and rolled loops."""
        if self.collapse != "auto":
            return []
        return [b.id for b in self.layout().boxes.values() if _box_key(b)]

    def expand(self, box: str) -> bool:
        """Open the folded box ``box`` in place (a new fold state, laid out once). False if it cannot open.

        A rolled loop opens unrolled. When the opened drawing would exceed
        the node budget, :func:`autodiff_viz.dot.layout` folds deeper again
        and says so in the note above the drawing.
        """
        b = self.layout().boxes.get(box)
        key = _box_key(b) if b is not None else None
        if not key or self.collapse != "auto":
            return False
        self.expanded = self.expanded | {key}
        return True

    def fold(self, key: str) -> None:
        """Fold an opened box back (``key`` as listed by :meth:`crumbs`), with everything opened inside it."""
        key = str(key)
        self.expanded = frozenset(k for k in self.expanded if k != key and not k.startswith(key.rstrip("*") + "/"))

    def step_repeat(self, key: str, delta: int = 1) -> str | None:
        """Open the next (``delta=1``) or previous instance of the "× N" box that ``key`` (the repeat's key or
        one instance's) belongs to, folding the instance open now: stepping backward through BERT's layers one
        at a time. Returns the instance key opened, or None when ``key`` is no repeat's."""
        h = getattr(self.layout(), "hierarchy", None)
        if h is None:
            return None
        rep = h.repeats.get(key) or (h.repeats.get(h.groups[key].repeat) if key in h.groups else None)
        if rep is None:
            return None
        opened = open_instances(h, rep, self.expanded)
        now = opened[-1] if opened else -1
        target = rep.groups[(now + delta) % rep.count]
        for k in rep.groups:
            self.fold(k)
        self.expanded = (self.expanded - {rep.key}) | {target}
        return target

    def collapse_all(self) -> None:
        self.expanded = frozenset()

    def crumbs(self) -> list:
        """``[(key, title)]`` of the opened boxes, outermost first (the breadcrumb)."""
        h = getattr(self.layout(), "hierarchy", None)
        out = []
        for k in sorted(self.expanded, key=lambda k: (k.count("/"), k)):
            if h is not None and k in h.loops:
                out.append((k, f"{h.loops[k].title} (unrolled, {h.loops[k].count} steps)"))
            elif h is not None and k in h.repeats:
                out.append((k, f"{h.repeats[k].title} × {h.repeats[k].count}"))
            elif h is not None and k in h.groups:
                title = h.groups[k].title
                out.append((k, figure.learners_name(self.trace, title) if h.groups[k].parent is None else title))
            else:
                out.append((k, k))
        return out

    def loops(self) -> list:
        """The rolled loops (:class:`autodiff_viz.dot.Loop`: steps, hand-over nodes, ‖ḡ_h(t)‖) of the trace."""
        loops = getattr(dot, "loops", None)
        return loops(self.trace) if loops is not None else []

    # ----- drawing -----------------------------------------------------------
    def drawing(self, view=None, collapse="current"):
        """The tagged SVG of a view (``None`` for the tape table), drawn once per fold state and cached."""
        view = self.view if view is None else view
        if collapse != "current" and collapse != self.collapse:
            saved, self.collapse = self.collapse, collapse
            try:
                return self.drawing(view)
            finally:
                self.collapse = saved
        if view == "tape":
            return None
        key = (view, self.collapse, self.expanded)
        if key not in self._drawings:
            source = render.readable(self._to_dot(view))     # long formulas wrapped, as the notebook display does
            self._drawings[key] = svgtools.tag_svg(self._draw(source), self.trace, self.layout(), self.prefix)
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

    def payload(self, view=None) -> dict:
        """What the browser needs to show and step the current fold state: drawing plus plan (cached).

        Keys: ``key`` (the fold state), ``kind`` (``"svg"`` or ``"html"`` for
        the tape table), ``body``, ``w``/``h`` (natural size in pt), ``font``
        (its smallest label in pt: the page never opens it smaller than
        :data:`~autodiff_viz.views.render.MIN_LABEL_PX` px),
        ``prefix`` (of every element id), ``els`` (``[element, backward step,
        forward step]``: the element counts as done from that step on;
        ``None``: no stepping in that pass), ``cur`` (per pass, runs
        ``[first step, box]`` of the current box), ``just`` (per pass,
        ``{step: [edge elements it computes]}``), ``n`` (steps per pass),
        ``boxes`` (``{box: {"t": title, "f": 1 if folded}}``), ``start``
        (the box to scroll to first), ``heat`` / ``heat_range`` /
        ``heat_ramp`` (colour by ‖ḡ‖), ``crumbs`` and ``note``.
        """
        view = self.view if view is None else view
        key = (view, self.collapse, self.expanded)
        if key in self._payloads:
            return self._payloads[key]
        lay = self.layout()
        if view == "tape":
            body, rows = svgtools.table_html(self.trace, self.prefix, TABLE_ROWS)
            els = [[f"row_{nid}", self._known.get(nid), self._fstep.get(nid, 0)] for nid in rows]
            p = {"kind": "html", "body": body, "w": 0, "h": 0, "els": els, "heat": {}, "heat_range": None}
            owner = {nid: nid for nid in rows}
        else:
            tagged = self.drawing(view)
            els, heat, hrange = _plan_elements(self.trace, lay, tagged, self._bstep, self._fstep, self._known)
            p = {"kind": "svg", "body": tagged.svg, "w": tagged.width, "h": tagged.height, "font": tagged.font,
                 "min_px": render.MIN_LABEL_PX, "els": els, "heat": heat, "heat_range": hrange}
            owner = lay.owner
        notes = list(getattr(lay, "notes", []))
        if self.renderer == "builtin" and view != "tape":
            notes.insert(0, self.renderer_note)
        if view == "tape" and len(self.trace.nodes) > TABLE_ROWS:
            notes.append(f"the tape has {len(self.trace.nodes)} rows; the first {TABLE_ROWS} are listed.")
        p.update({
            "key": f"{self.prefix}|{view}|{self.collapse}|{'|'.join(sorted(map(str, self.expanded)))}",
            "prefix": self.prefix,
            "cur": {"backward": _runs(self.trace.steps, owner), "forward": _runs(self.ops, owner)},
            "just": _just(self.trace, lay, view, self._bstep, self._fstep) if view != "tape" else
            {"backward": {}, "forward": {}},
            "n": {"backward": len(self.trace.steps), "forward": len(self.ops)},
            "boxes": _box_titles(self.trace, lay) if view != "tape" else
            {nid: {"t": _node_title(self.trace.node(nid))} for nid in owner},
            "start": owner.get(self.trace.target) if self.trace.target else None,
            "heat_ramp": "linear-gradient(to right, " + ", ".join(HEAT_RAMP) + ")",
            "crumbs": [list(c) for c in self.crumbs()],
            "legend": legend_rows(view) if view != "tape" else [],
            "titles": self._step_titles(),
            "note": " ".join(notes),
        })
        self._payloads[key] = p
        return p

    def _step_titles(self) -> dict:
        """Per pass, the title of each step's node (``h (tanh)``), for the page's step line; empty when huge."""
        if self._titles is None:
            tr = self.trace
            self._titles = {} if len(tr.steps) + len(self.ops) > STEP_TITLES else {
                "backward": [_node_title(tr.node(n)) for n in tr.steps],
                "forward": [_node_title(tr.node(n)) for n in self.ops]}
        return self._titles

    # ----- transitions -------------------------------------------------------
    @property
    def max_step(self) -> int:
        return len(self.trace.steps) if self.mode == "backward" else len(self.ops)

    def set_step(self, k: int) -> None:
        """Go to step ``k`` (an int; 0 is before the first step, beyond the ends means the end)."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"set_step: the step must be an integer from 0 to {self.max_step}, got "
                            f"{type(k).__name__} {k!r:.40}. Pass e.g. state.set_step({self.max_step}).")
        self.step = max(0, min(self.max_step, int(k)))

    def step_forward(self) -> None:
        self.set_step(self.step + 1)

    def step_back(self) -> None:
        self.set_step(self.step - 1)

    def set_mode(self, mode: str) -> None:
        """Walk the ``"backward"`` pass (one tape record per step) or the ``"forward"`` pass (one op per step).

        A new pass starts at its first step, so ▶ moves at once.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")
        if mode != self.mode:
            self.mode = mode
            self.step = min(1, self.max_step)

    def set_view(self, view: str) -> None:
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {view!r}.")
        self.view = view

    def set_collapse(self, collapse) -> None:
        if collapse not in COLLAPSES:
            raise ValueError(f"collapse must be one of {COLLAPSES}, got {collapse!r}.")
        if collapse != self.collapse:
            self.expanded = frozenset()
        self.collapse = collapse

    def set_label(self, kind: str, visible: bool) -> None:
        """Show or hide one kind of label line: ``"value"``, ``"shape"``, ``"factor"`` or ``"grad"``."""
        if kind not in LABELS:
            raise ValueError(f"label kind must be one of {LABELS}, got {kind!r}.")
        (self.hidden.discard if visible else self.hidden.add)(kind)

    def select(self, node_id: str) -> None:
        """Inspect the node ``node_id`` (``"n3"``)."""
        self.trace.node(node_id)
        self.selected = node_id
        self.selected_edge = None

    def select_box(self, box: str) -> None:
        """Inspect what a click on a drawn box means: the node itself, or the last node of a folded box."""
        lay = self.layout()
        b = lay.boxes.get(box)
        if b is None:
            self.select(box)
            return
        self.select(b.members[-1])

    def box_of(self, node_id: str | None) -> str | None:
        """The drawn box that holds ``node_id`` in the current fold state."""
        return None if node_id is None else self.layout().owner.get(node_id)

    def select_edge(self, drawn_edge: str) -> list:
        """Select a drawn edge (``"e4"`` or a bundle ``"e4_x3"``); return the trace edges it stands for."""
        _, edges = svgtools.box_members(self.trace, self.layout())
        members = edges.get(drawn_edge)
        if members is None:
            self.trace.edge(drawn_edge)
            members = [drawn_edge]
        self.selected_edge = drawn_edge
        return members

    # ----- what the step means -----------------------------------------------
    @property
    def current(self) -> str | None:
        """The node of the current step (the op being differentiated, or computed), None at step 0."""
        if self.step == 0:
            return None
        return self.trace.steps[self.step - 1] if self.mode == "backward" else self.ops[self.step - 1]

    def grad_shown(self, node_id: str) -> bool:
        """Whether node ``node_id``'s ḡ is known at the current step (nothing is shown before it is computed)."""
        if self.mode == "forward":
            return False
        k = self._known.get(node_id)
        return k is not None and self.step >= k

    def step_classes(self) -> dict:
        """Which nodes and edges are current, done, pending at this step, as id lists (the reference semantics).

        The browser computes the same from :meth:`payload`'s plan; tests check they agree.
        """
        tr = self.trace
        current = self.current
        k = self.step
        if self.mode == "forward":
            return {"current": current,
                    "not_computed": [o for o in self.ops if self._fstep[o] > k],
                    "pending_edges": [e.id for e in tr.edges if self._fstep.get(e.dst, 0) > k],
                    "just_done_edges": [e.id for e in tr.edges if e.dst == current],
                    "unknown_grad": [n.id for n in tr.nodes if n.grad is not None]}
        flowing = [e for e in tr.edges if e.contribution is not None]
        return {"current": current,
                "done_edges": [e.id for e in flowing if self._bstep.get(e.dst, 0) <= k],
                "just_done_edges": [e.id for e in flowing if e.dst == current],
                "pending_edges": [e.id for e in flowing if self._bstep.get(e.dst, 0) > k],
                "unknown_grad": [n.id for n in tr.nodes if n.grad is not None and
                                 (self._known.get(n.id) is None or self._known[n.id] > k)]}

    # ----- output ------------------------------------------------------------
    def graph_html(self) -> str:
        """The drawing of the current view (or the tape table) as static HTML (no stepping)."""
        p = self.payload()
        note = f'<div class="adv-note" role="note">{panels.esc(p["note"])}</div>' if p["note"] else ""
        return f'{note}<div class="adv-graph" role="img" aria-label="{self.view} graph">{p["body"]}</div>'

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
        return f"step {self.step} / {self.max_step}: {_node_title(self.trace.node(cur))}"

    def inspector_html(self) -> str:
        """The selected node in full; for a weight whose ḡ is known at this step, ḡ as a heat map too."""
        known = self.selected is not None and self.grad_shown(self.selected)
        out = panels.inspector_html(self.trace, self.selected, grad_known=known)
        if known and self.trace.node(self.selected).kind == "variable":
            out += self.heatmap_html(self.selected)
        return out

    def heatmap(self, node_id: str):
        """ḡ of node ``node_id`` as a :class:`~autodiff_viz.views.heatmap.Heatmap`, made on first ask and kept.

        With a tape behind the explorer the whole ḡ is computed from it (one
        backward walk, only when asked), so a weight bigger than the trace's
        ``value_limit`` is drawn in full too; from a trace alone, what it kept.
        """
        if node_id not in self._heatmaps:
            node = self.trace.node(node_id)
            kept = node.grad is None or node.grad.data is not None
            data = self._full_grad(node_id) if self._full_grad is not None and not kept else None
            self._heatmaps[node_id] = heatmap.node_heatmap(self.trace, node_id, "grad", data)
        return self._heatmaps[node_id]

    def heatmap_html(self, node_id: str) -> str:
        """The inspector's heat-map section for a node (or why there is none), as HTML."""
        try:
            picture = self.heatmap(node_id).svg
        except (ValueError, TypeError) as err:
            return f'<div class="adv-panel adv-note adv-heatmap">{panels.esc(err)}</div>'
        return (f'<div class="adv-panel adv-heatmap"><b>ḡ as a heat map</b> (blue &gt; 0, red &lt; 0, white 0; '
                f'hover a cell for its value)<div style="max-width:100%;overflow-x:auto">{picture}</div></div>')

    def edge_html(self) -> str:
        """The selected edge in numbers: factor, local Jacobian (or its summary), ḡ_y and ḡ_y·∂y/∂x."""
        if self.selected_edge is None:
            return ('<div class="adv-panel adv-note">Click an edge of the graph to see its chain-rule factor '
                    'in numbers.</div>')
        members = self.select_edge(self.selected_edge)
        edges = [self.trace.edge(e) for e in members]
        return panels.edge_html(self.trace, edges, {e.id: self._edge_computed(e) for e in edges})

    def _edge_computed(self, e) -> bool:
        return self.mode == "backward" and self.step >= self._bstep.get(e.dst, 0) and e.contribution is not None

    def loop_html(self, index: int = 0, t: int = 0) -> str:
        """Step ``t`` of the ``index``-th rolled loop (values, ḡ_h(t) once computed) and ‖ḡ_h(t)‖ against t."""
        loops = self.loops()
        if not loops:
            return '<div class="adv-panel adv-note">No repeated layer or function in this trace.</div>'
        loop = loops[max(0, min(len(loops) - 1, index))]
        nid = loop.outputs[max(0, min(loop.count - 1, int(t)))]
        shown = [o is not None and self.grad_shown(o) for o in loop.outputs]
        return panels.loop_html(self.trace, loop, t, grad_known=nid is not None and self.grad_shown(nid),
                                shown=shown)

    def why_none_html(self) -> str:
        return panels.why_none_html(self.trace, self.explanations)

    def jacobian_html(self) -> str:
        return panels.jacobian_html(self.jacobian_rows, self.jacobian_note)

    def node_options(self, limit: int = NODE_OPTIONS) -> list:
        """``(label, node id)`` pairs for the inspector's dropdown: the learner's name, scope, then the id.

        A big trace lists its named nodes, the target and the selection (at
        most ``limit``): clicking a box in the graph reaches every node.
        """
        nodes = self.trace.nodes
        if len(nodes) > limit:
            keep = {self.trace.target, self.selected}
            named = [n for n in nodes if n.id not in keep and n.title != n.op][:limit]
            chosen = keep | {n.id for n in named}
            nodes = [n for n in nodes if n.id in chosen]
        return [(f"{_node_title(n)}{f' [{n.scope}]' if n.scope else ''} — {n.id}", n.id) for n in nodes]

    def marked_boxes(self, marked) -> list:
        """The drawn boxes to flash for the marked node/edge ids of a why-None explanation."""
        owner = self.layout().owner
        out = []
        for ref in marked:
            if ref in owner:
                out.append(owner[ref])
            else:
                try:
                    e = self.trace.edge(ref)
                except KeyError:
                    continue
                out.extend([owner.get(e.src), owner.get(e.dst)])
        return [b for b in dict.fromkeys(out) if b is not None]


def strip_legend(source: str) -> str:
    """DOT source without the ``subgraph cluster_legend { ... }`` block that :func:`autodiff_viz.dot.to_dot` adds."""
    out, skipping = [], False
    for line in source.splitlines():
        if line.strip() == "subgraph cluster_legend {":
            skipping = True
            continue
        if skipping:
            if line.strip() == "}":
                skipping = False
            continue
        if not line.endswith((dot.LEGEND_BELOW, dot.LEGEND_UNDER)):
            out.append(line)
    return "\n".join(out) + "\n"


def legend_rows(view: str) -> list:
    """``[(key, colour, meaning)]`` of the legend of ``view`` (the rows of :data:`autodiff_viz.dot.LEGEND_ROWS`)."""
    keys = (("forward", "backward") if view == "both" else (view,) if view in ("forward", "backward") else ())
    return [list(r) for k in keys + ("common",) for r in dot.LEGEND_ROWS.get(k, ())]


# ---------------------------------------------------------------------------
# The plan: which element is done from which step
# ---------------------------------------------------------------------------
def _grad_known_steps(trace, bstep) -> dict:
    """``{node: the first backward step after which its ḡ is final}`` (0 for the target's seed).

    A node's ḡ is final once every op on the path that reads it has been
    stepped (the same rule as ``Trace.grad_known``), in one pass over the edges.
    """
    last = {}
    for e in trace.edges:
        if e.contribution is not None:
            k = bstep.get(e.dst, 0)
            if k > last.get(e.src, -1):
                last[e.src] = k
    out = {}
    for n in trace.nodes:
        if n.grad is None:
            continue
        if n.id == trace.target:
            out[n.id] = 0
        elif n.id in last:
            out[n.id] = last[n.id]
        else:
            out[n.id] = bstep.get(n.id, 0)
    return out


def _node_title(n) -> str:
    """``h (tanh)``: the learner's name with the op beneath, or the op alone."""
    title = n.title
    return f"{title} ({n.op})" if title != n.op else title


def _box_key(box):
    """The fold-state key of a drawn box (None for a single node or the folded middle of the tape)."""
    return getattr(box, "key", None)


def _box_titles(trace, lay) -> dict:
    out = {}
    for b in lay.boxes.values():
        if b.kind == "node":
            out[b.id] = {"t": _node_title(trace.node(b.members[0]))}
        else:
            what = {"loop": f"rolled loop of {getattr(b, 'count', 1)} steps", "function": "function"}.get(
                getattr(b, "what", ""), "folded")
            out[b.id] = {"t": f"{b.title or 'folded'} ({what}, {len(b.members)} nodes)"}
            if _box_key(b):
                out[b.id].update(f=1, k=_box_key(b))
    return out


def _runs(order: list, owner: dict) -> list:
    """``[[first step, box], ...]``: the box holding the node of each step, run-length coded."""
    runs, last = [], object()
    for k, nid in enumerate(order, start=1):
        box = owner.get(nid)
        if box != last:
            runs.append([k, box])
            last = box
    return runs


def _split(gid: str):
    for view, pre in dot.PREFIX.items():
        if gid.startswith(pre):
            return view, gid[len(pre):]
    return None, gid


def _plan_elements(trace, lay, tagged, bstep, fstep, known):
    """``([element, backward step, forward step] rows, heat colours, heat range)`` for a tagged drawing."""
    boxes = lay.boxes
    _, drawn_edges = svgtools.box_members(trace, lay)
    flowing_out: dict = {}
    all_out: dict = {}
    for e in trace.edges:
        all_out.setdefault(e.src, []).append(e)
        if e.contribution is not None:
            flowing_out.setdefault(e.src, []).append(e)
    rows, norms = [], {}
    for gid, kind in tagged.elements:
        view, rest = _split(gid)
        if view is None:
            continue
        bwd = view == "backward"
        if kind == "node":
            if rest.startswith("acc_"):
                src = rest[4:]
                fl = flowing_out.get(src, [])
                bk = max((bstep.get(e.dst, 0) for e in fl), default=None) if bwd else None
                fk = max((fstep.get(e.dst, 0) for e in all_out.get(src, [])), default=0)
                rows.append([gid, bk, fk])
                continue
            box = boxes.get(rest) or boxes.get(rest.split("_at_")[0])
            if box is None:
                continue
            members = box.members
            ks = [known[m] for m in members if m in known]
            bk = max(ks) if ks and bwd else None
            fk = max((fstep.get(m, 0) for m in members), default=0)
            rows.append([gid, bk, fk])
            g = [trace.node(m).grad for m in members[-1:] if trace.node(m).grad is not None] if box.kind != "node" \
                else [trace.node(members[0]).grad] if trace.node(members[0]).grad is not None else []
            if g and bwd:
                norms[gid] = g[0].stats["norm"]
        else:
            if rest.startswith("acc_"):
                src = rest[4:-4] if rest.endswith("_out") else rest[4:]
                fl = flowing_out.get(src, [])
                bk = max((bstep.get(e.dst, 0) for e in fl), default=None) if bwd else None
                rows.append([gid, bk, max((fstep.get(e.dst, 0) for e in all_out.get(src, [])), default=0)])
                continue
            members = [trace.edge(e) for e in drawn_edges.get(rest, ())]
            if not members:
                continue
            fl = [e for e in members if e.contribution is not None]
            bk = max(bstep.get(e.dst, 0) for e in fl) if fl and bwd else None
            fk = max(fstep.get(e.dst, 0) for e in members)
            rows.append([gid, bk, fk])
            if fl and bwd:
                norms[gid] = math.sqrt(sum(e.contribution.stats["norm"] ** 2 for e in fl))
    heat, hrange = heat_colours(norms)
    return rows, heat, hrange


def heat_colours(norms: dict):
    """``({element: colour}, [lo, hi])``: each ‖ḡ‖ on a log10 scale over :data:`HEAT_RAMP`; exact zeros grey."""
    logs = {k: math.log10(v) for k, v in norms.items() if v > 0 and math.isfinite(v)}
    if not logs:
        return {k: HEAT_ZERO for k, v in norms.items() if v == 0}, None
    lo, hi = math.floor(min(logs.values())), math.ceil(max(logs.values()))
    hi = hi if hi > lo else lo + 1
    out = {}
    for k, v in norms.items():
        if k in logs:
            t = (logs[k] - lo) / (hi - lo)
            out[k] = HEAT_RAMP[min(len(HEAT_RAMP) - 1, int(t * len(HEAT_RAMP)))]
        elif v == 0:
            out[k] = HEAT_ZERO
    return out, [lo, hi]


def _just(trace, lay, view, bstep, fstep) -> dict:
    """Per pass, ``{step: [edge elements]}``: the drawn edges that step computes (drawn thick)."""
    _, drawn = svgtools.box_members(trace, lay)
    panels_ = ("forward", "backward") if view == "both" else (view,)
    back: dict = {}
    fwd: dict = {}
    for gid, members in drawn.items():
        for eid in members:
            e = trace.edge(eid)
            kf = fstep.get(e.dst)
            if kf:
                for p in panels_:
                    fwd.setdefault(kf, set()).add(dot.PREFIX[p] + gid)
            kb = bstep.get(e.dst)
            if kb and e.contribution is not None and "backward" in panels_:
                back.setdefault(kb, set()).add(dot.PREFIX["backward"] + gid)
    return {"backward": {k: sorted(v) for k, v in back.items()}, "forward": {k: sorted(v) for k, v in fwd.items()}}


# ---------------------------------------------------------------------------
# Helpers for from_tape
# ---------------------------------------------------------------------------
def _label(t: Tensor, trace=None, nid=None) -> str:
    """The source in words: its name (a weight's path; or the learner's name in the trace) and shape, never an
    internal id."""
    name = full_name(t)
    if not name and trace is not None and nid is not None:
        node = trace.node(nid)
        name = getattr(node, "label", None) or node.name
    text = f"'{name}'" if name else "the source"
    return f"{text} of shape {tuple(t.shape)}" + ("" if nid else " (not in this tape's record)")


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
        node_set = set(nodes)
        refs = [e.id for n in nodes for e in trace.edges_from(n) if e.dst in node_set] + nodes
    refs = list(dict.fromkeys(refs))
    reason = ex.reason.replace("_", " ")
    return (trace.with_marks([(r, reason) for r in refs]) if refs else trace), refs


def _grad_reader(tape, trace):
    """``node id -> the whole ḡ of that node`` from the tape's records (``None`` when it has none).

    The trace keeps big arrays as statistics only; a weight's heat map needs
    every entry, so it is computed from the record when asked: one backward
    walk from the trace's target (seeded with ones, as the trace) to that node.
    """
    if trace.target is None:
        return None
    records = list(tape.record.nodes)
    target = trace.node(trace.target)
    if target.index is None or target.grad is None:
        return None
    seed_value = records[target.index].out

    def read(node_id: str):
        node = trace.node(node_id)
        if getattr(tape, "_released", False) and getattr(tape, "_heavy", False):
            raise ValueError(f"heatmap: ḡ of {node.title} (shape {tuple(node.shape)}) was kept as statistics "
                             "only, and the tape let go of its values when tape.gradient() was called. Record "
                             "with adv.GradientTape(persistent=True) to inspect weights after the gradient call.")
        seeds = {target.tensor_id: np.ones(seed_value.shape, dtype=seed_value.dtype)}
        with paused(), np.errstate(all="ignore"):
            grads = walks.backward(records, seeds, {node.tensor_id})
        g = grads.get(node.tensor_id)
        return None if g is None else np.asarray(g)
    return read


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
    ids = {s._id for s in sources if s._id in tape.record.tracked}
    eye = np.eye(target.size, dtype=target.dtype).reshape(target.shape + target.shape)
    with paused(), np.errstate(all="ignore"):
        grads = walks.backward(list(tape.record.nodes), {target._id: eye}, ids)
    rows = []
    connected = [s for s in sources if grads.get(s._id) is not None]
    for s in connected[:JACOBIAN_SOURCES]:
        J = grads.get(s._id)
        J = np.asarray(J, dtype=np.float64)
        flat = J.reshape(target.size, -1)
        row = {"label": _label(s, trace, trace.node_id_of(s)), "target_shape": tuple(target.shape),
               "source_shape": tuple(s.shape), "J": J, "ones": flat.sum(axis=0).reshape(s.shape)}
        if v is not None:
            row["v"] = v
            row["vJ"] = (v.reshape(1, -1) @ flat).reshape(s.shape)
        rows.append(row)
    note = ("The target is a scalar: J is one row, and it is the gradient." if target.ndim == 0 else
            "The target is not a scalar: tape.gradient returns 1ᵀJ, the sum of J's rows, which has the "
            "shape of the source. tape.jacobian returns J itself.")
    if len(connected) > JACOBIAN_SOURCES:
        note += (f" The first {JACOBIAN_SOURCES} of the {len(connected)} connected sources are shown; "
                 "pass sources=[...] to show() to pick others.")
    if not rows:
        note = "No source is connected to the target, so there is no Jacobian to show."
    return rows, note
