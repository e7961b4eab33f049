"""The explorer widget: controls around an :class:`ExplorerState`, for a lecture projector or a student.

Layout, top to bottom: the view switch (forward / backward / both / tape),
the walk (backward or forward pass) and collapse; the label toggles; the
graph (:class:`~autodiff_viz.widgets.frontend.GraphView`: ◀, the step
slider, ▶, zoom, colour by ‖ḡ‖, the breadcrumb of opened boxes, and the
drawing); tabs with the chain-rule step, the inspector, the clicked edge in
numbers, why None and Jacobian vs summed gradient.

What changes on screen per interaction:

* a step, a selection, the zoom, panning, the label toggles, the heat
  colours: classes in the page only, painted by the browser from the plan
  it already holds; the kernel then fills the text panels;
* a view, collapse or expand/fold: one new drawing for that fold state,
  laid out once and cached.

Where no widget manager runs (an HTML export by nbconvert, a notebook viewer,
a kernel that is gone), the explorer's display carries a static alternative:
:meth:`Explorer.static_html`, the trace's self-contained page from
:func:`autodiff_viz.page.html_document` (the same stepping and folding,
inline), opened where the explorer stands when it is displayed (view,
opened boxes, colour by ‖ḡ‖, step: what a notebook set from code), plus the
why-None and Jacobian panels. Jupyter front ends prefer the live widget.
"""
from __future__ import annotations

import html
import itertools

import ipywidgets as W

from .. import page as page_module
from .frontend import GraphView
from .state import LABELS, ExplorerState
from .svgtools import PANEL_CSS

_LABEL_TEXT = {"value": "values", "shape": "shapes", "factor": "∂y/∂x factors", "grad": "gradients ḡ"}
_TAB_TITLES = ("chain-rule step", "inspector", "edge", "why None?", "Jacobian vs gradient")
TAB_STEP, TAB_INSPECTOR, TAB_EDGE, TAB_WHY, TAB_JACOBIAN = range(5)
_flashes = itertools.count(1)
STATIC_FOLD_STATES = 6          # fold states the static copy in a saved notebook carries, at most
STATIC_BUDGET_CHARS = 400_000   # and about this much drawing text (it is stored in the .ipynb)
STATIC_BUDGET_SECONDS = 0.4     # and this long spent drawing them (it is made at every display)


class Explorer(W.VBox):
    """An interactive view of a trace: forward and backward graphs, step-through, inspector and diagnosis.

    Made by :func:`autodiff_viz.show` (or ``tape.show()``); ``explorer.state``
    is the :class:`ExplorerState` behind it, ``explorer.graph`` the drawing.
    From code: :meth:`go`, :meth:`step_forward`, :meth:`step_back`,
    :meth:`click` (a box, as a mouse click would), :meth:`click_edge`.
    """

    def __init__(self, state: ExplorerState, **kwargs):
        self.state = state
        st = state
        self._busy = False
        self.view = W.ToggleButtons(options=[("forward", "forward"), ("backward", "backward"),
                                             ("both", "both"), ("tape table", "tape")],
                                    value=st.view, description="view", style={"button_width": "90px"},
                                    tooltips=["values flow down", "ḡ flows up, ∂y/∂x on edges",
                                              "side by side", "the Wengert list"])
        self.collapse = W.Dropdown(options=[("by meaning: click a box to open it", "auto"),
                                            ("every op", "none"), ("one box per layer", "layers")],
                                   value=st.collapse or "none", description="fold", layout=W.Layout(width="330px"))
        self.labels = {k: W.Checkbox(value=k not in st.hidden, description=_LABEL_TEXT[k], indent=False,
                                     layout=W.Layout(width="130px")) for k in LABELS}
        self.mode = W.ToggleButtons(options=[("backward pass", "backward"), ("forward pass", "forward")],
                                    value=st.mode, description="walk", style={"button_width": "130px"})
        self.graph = GraphView(drawing=st.payload(), step=st.step, mode=st.mode,
                               selected=st.box_of(st.selected), hidden=sorted(st.hidden))
        self.graph.add_class("adv-graph-output")
        self.step_text = W.HTML()
        self.step_panel = W.HTML()
        self.node_pick = W.Dropdown(options=st.node_options(), value=st.selected, description="node",
                                    layout=W.Layout(width="480px"))
        self.inspector = W.HTML()
        self.edge_panel = W.HTML(st.edge_html())
        self.why = W.HTML(st.why_none_html())
        self.flash_buttons = []
        for label, ex, marked in st.explanations:
            if marked:
                b = W.Button(description="show in the graph", tooltip=f"scroll to and flash what {label} points at",
                             layout=W.Layout(width="180px"))
                b.on_click(lambda _, marked=marked: self.flash(marked))
                self.flash_buttons.append(b)
        self.jacobian = W.HTML(st.jacobian_html())
        children = [self.step_panel, W.VBox([self.node_pick, self.inspector]), self.edge_panel,
                    W.VBox([self.why] + self.flash_buttons), self.jacobian]
        titles = list(_TAB_TITLES)
        loops = st.loops()
        self.loop_pick = W.Dropdown(options=[(f"{lp.title} ({lp.count} steps)", i) for i, lp in enumerate(loops)],
                                    value=0 if loops else None, description="loop", layout=W.Layout(width="420px"))
        self.time = W.IntSlider(value=loops[0].count - 1 if loops else 0, min=0,
                                max=max(0, loops[0].count - 1) if loops else 0, description="time t",
                                continuous_update=True, layout=W.Layout(width="420px"))
        self.time.add_class("adv-time-slider")
        self.loop_panel = W.HTML()
        if loops:
            children.append(W.VBox(([self.loop_pick] if len(loops) > 1 else []) + [self.time, self.loop_panel]))
            titles.append("loop over time")
            self.loop_pick.observe(self._on_loop, "value")
            self.time.observe(lambda _c: self._draw_loop(), "value")
        self.tabs = W.Tab(children=children)
        for i, title in enumerate(titles):
            self.tabs.set_title(i, title)
        if st.explanations:
            self.tabs.selected_index = TAB_WHY

        self.view.observe(self._on_view, "value")
        self.collapse.observe(self._on_view, "value")
        for kind, box in self.labels.items():
            box.observe(lambda change, kind=kind: self._on_label(kind, change["new"]), "value")
        self.mode.observe(self._on_mode, "value")
        self.graph.observe(self._on_step, "step")
        self.graph.observe(self._on_heat, "heat")
        self.graph.on_msg(lambda _w, content, _b: self.handle(content))
        self.node_pick.observe(self._on_pick, "value")

        style = W.HTML(f"<style>{PANEL_CSS.format(root='.' + st.prefix + '-explorer')}</style>")
        bar1 = W.HBox([self.view, self.mode])
        bar2 = W.HBox([self.collapse] + list(self.labels.values()))
        super().__init__([style, bar1, bar2, self.graph, self.step_text, self.tabs], **kwargs)
        self.add_class(f"{st.prefix}-explorer")
        self._panels()

    # ----- from code ----------------------------------------------------------
    def go(self, k: int) -> None:
        """Go to step ``k`` of the current pass (as the slider does)."""
        self.state.set_step(k)
        self.graph.step = self.state.step
        self._panels()

    def step_forward(self) -> None:
        self.go(self.state.step + 1)

    def step_back(self) -> None:
        self.go(self.state.step - 1)

    def click(self, box: str) -> None:
        """What a click on the drawn box ``box`` does: open it if it is folded, else inspect it."""
        if box in self.state.foldable():
            self.handle({"event": "expand", "box": box})
        else:
            self.graph.selected = box
            self.handle({"event": "select", "box": box})

    def click_edge(self, drawn_edge: str) -> None:
        """What a click on a drawn edge does: its factor in numbers, in the edge tab."""
        self.handle({"event": "edge", "edge": drawn_edge})

    def flash(self, marked) -> None:
        """Scroll the graph to the boxes holding ``marked`` (node or edge ids) and flash them."""
        self.graph.flash = [next(_flashes)] + self.state.marked_boxes(marked)

    # ----- messages from the page ------------------------------------------------
    def handle(self, msg: dict) -> None:
        """A click in the page: ``select`` a box, ``expand`` / ``fold`` a box, ``collapse_all``, or an ``edge``."""
        st = self.state
        event = msg.get("event") if isinstance(msg, dict) else None
        if event == "select":
            try:
                st.select_box(str(msg.get("box")))
            except KeyError:
                return
            self._sync_pick()
            self.inspector.value = st.inspector_html()
            self.tabs.selected_index = TAB_INSPECTOR
        elif event == "expand":
            if st.expand(str(msg.get("box"))):
                self._redraw()
            else:
                self.handle({"event": "select", "box": msg.get("box")})
        elif event == "fold":
            st.fold(msg.get("box"))
            self._redraw()
        elif event == "collapse_all":
            st.collapse_all()
            self._redraw()
        elif event == "edge" and str(msg.get("edge")).endswith("_loop") and self.state.loops():
            self._draw_loop()
            self.tabs.selected_index = len(self.tabs.children) - 1      # the loop over time
        elif event == "edge":
            try:
                st.select_edge(str(msg.get("edge")))
            except KeyError:
                return
            self.edge_panel.value = st.edge_html()
            self.tabs.selected_index = TAB_EDGE

    # ----- callbacks ----------------------------------------------------------
    def _on_view(self, _change):
        self.state.set_view(self.view.value)
        self.state.set_collapse(None if self.collapse.value == "none" else self.collapse.value)
        self._redraw()

    def _on_label(self, kind, visible):
        self.state.set_label(kind, visible)
        self.graph.hidden = sorted(self.state.hidden)

    def _on_heat(self, change):
        self.state.heat = bool(change["new"])

    def _on_mode(self, change):
        self.state.set_mode(change["new"])
        with self.graph.hold_sync():
            self.graph.mode = self.state.mode
            self.graph.step = self.state.step
        self._panels()

    def _on_step(self, change):
        if self.state.step != change["new"]:
            self.state.set_step(change["new"])
            self._panels()

    def _on_pick(self, change):
        if change["new"] is not None and not self._busy:
            self.state.select(change["new"])
            self.graph.selected = self.state.box_of(change["new"])
            self.inspector.value = self.state.inspector_html()

    def _sync_pick(self):
        self._busy = True
        try:
            ids = {v for _, v in self.node_pick.options}
            self.node_pick.value = self.state.selected if self.state.selected in ids else None
        finally:
            self._busy = False

    def _on_loop(self, change):
        loop = self.state.loops()[change["new"]]
        self.time.max = loop.count - 1
        self.time.value = loop.count - 1
        self._draw_loop()

    def _draw_loop(self):
        if self.state.loops():
            self.loop_panel.value = self.state.loop_html(self.loop_pick.value or 0, self.time.value)

    # ----- screen ---------------------------------------------------------------
    def _redraw(self):
        """A new fold state or view: one new drawing (cached per state), then the panels."""
        self.graph.drawing = self.state.payload()
        self.graph.selected = self.state.box_of(self.state.selected)
        self._panels()

    def _panels(self):
        """The text panels for this step (a few small strings: cheap at any graph size)."""
        st = self.state
        self.step_text.value = f'<div style="font-size:14px">{html.escape(st.step_label())}</div>'
        self.step_panel.value = st.step_html()
        self.inspector.value = st.inspector_html()
        if st.selected_edge is not None:
            self.edge_panel.value = st.edge_html()
        self._draw_loop()

    # ----- without a widget manager -----------------------------------------------
    def static_html(self) -> str:
        """The explorer as self-contained HTML, as it stands now: no widget manager, no network.

        The trace's standalone page (:func:`autodiff_viz.page.html_document`:
        both graphs, stepping and the fold states it can carry) opens where
        the explorer is: its view, its opened boxes (that fold state is always
        carried, with the ones its breadcrumb folds back to), colour by ‖ḡ‖
        with the colour bar, the walk and the step, the hidden labels and the
        selection; the page's own controls go on from there. It sits in an
        ``<iframe srcdoc>``, so its element ids and script cannot clash with
        another explorer on the same page; the why-None and Jacobian panels follow.
        """
        st = self.state
        page = page_module.html_document(st.trace, st.collapse, title="autodiff_viz explorer (static copy)",
                                    fold_states=STATIC_FOLD_STATES, budget_chars=STATIC_BUDGET_CHARS,
                                    budget_seconds=STATIC_BUDGET_SECONDS, start=st)
        body = (f'<iframe class="adv-static-explorer" srcdoc="{html.escape(page, quote=True)}" '
                'style="width:100%;height:720px;border:1px solid #ddd" '
                'onload="this.style.height=(this.contentDocument.body.scrollHeight+40)+\'px\'"></iframe>')
        why = f'<div class="adv-static-why">{st.why_none_html()}</div>' if st.explanations else ""
        jac = f'<div class="adv-static-jacobian">{st.jacobian_html()}</div>' if st.jacobian_rows else ""
        style = f"<style>{PANEL_CSS.format(root='.adv-static-panels')}</style>" if why or jac else ""
        return f'<div class="adv-static-panels">{style}{body}{why}{jac}</div>'


    def _repr_mimebundle_(self, **kwargs):
        """The live widget for Jupyter, with :meth:`static_html` as ``text/html`` for everything else."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()
        return bundle
