"""The explorer widget: controls around an :class:`ExplorerState`, for a lecture projector or a student.

Layout, top to bottom: the view switch (forward / backward / both / tape),
collapse, the label toggles and zoom; the step bar (pass, ◀, slider, ▶);
the graph; tabs with the chain-rule step, the inspector, why None and
Jacobian vs summed gradient.

What changes on screen per interaction:

* a step, a label toggle, a selection or the zoom: only the small ``<style>``
  block (``self.style``) — the SVG stays in place, so stepping is instant;
* a view or collapse change: the SVG, drawn once per combination and cached.

Every callback only formats text already computed, so nothing blocks the kernel.

Where no widget manager runs (an HTML export by nbconvert, a notebook viewer,
a kernel that is gone), the explorer's display carries a static alternative:
:meth:`Explorer.static_html`, the trace's self-contained page from
:func:`autodiff_viz.render.html_document` (both graphs, step buttons, the
tape table) plus the why-None panel. Jupyter front ends prefer the live widget.
"""
from __future__ import annotations

import html

import ipywidgets as W

from .. import render
from .state import LABELS, ExplorerState

_LABEL_TEXT = {"value": "values", "shape": "shapes", "factor": "∂y/∂x factors", "grad": "gradients ḡ"}
_TAB_TITLES = ("chain-rule step", "inspector", "why None?", "Jacobian vs gradient")


class Explorer(W.VBox):
    """An interactive view of a trace: forward and backward graphs, step-through, inspector and diagnosis.

    Made by :func:`autodiff_viz.show` (or ``tape.show()``); ``explorer.state``
    is the :class:`ExplorerState` behind it.
    """

    def __init__(self, state: ExplorerState, **kwargs):
        self.state = state
        st = state
        self.view = W.ToggleButtons(options=[("forward", "forward"), ("backward", "backward"),
                                             ("both", "both"), ("tape table", "tape")],
                                    value=st.view, description="view", style={"button_width": "90px"},
                                    tooltips=["values flow down", "ḡ flows up, ∂y/∂x on edges",
                                              "side by side", "the Wengert list"])
        self.collapse = W.Dropdown(options=[("every op", "none"), ("one box per layer", "layers")],
                                   value=st.collapse or "none", description="collapse", layout=W.Layout(width="240px"))
        self.labels = {k: W.Checkbox(value=k not in st.hidden, description=_LABEL_TEXT[k], indent=False,
                                     layout=W.Layout(width="130px")) for k in LABELS}
        self.zoom = W.FloatSlider(value=st.zoom, min=0.25, max=3.0, step=0.05, description="zoom",
                                  readout_format=".2f", continuous_update=True, layout=W.Layout(width="260px"))
        self.mode = W.ToggleButtons(options=[("backward pass", "backward"), ("forward pass", "forward")],
                                    value=st.mode, description="walk", style={"button_width": "130px"})
        self.back = W.Button(description="◀", tooltip="one step back", layout=W.Layout(width="44px"))
        self.next = W.Button(description="▶", tooltip="one step forward", layout=W.Layout(width="44px"))
        self.slider = W.IntSlider(value=st.step, min=0, max=st.max_step, description="step",
                                  continuous_update=True, layout=W.Layout(width="420px"))
        self.slider.add_class("adv-step-slider")
        self.step_text = W.HTML()
        self.style = W.HTML()
        self.graph = W.HTML()
        self.graph.add_class("adv-graph-output")
        self.step_panel = W.HTML()
        self.node_pick = W.Dropdown(options=st.node_options(), value=st.selected, description="node",
                                    layout=W.Layout(width="480px"))
        self.inspector = W.HTML()
        self.why = W.HTML(st.why_none_html())
        self.jacobian = W.HTML(st.jacobian_html())
        self.tabs = W.Tab(children=[self.step_panel, W.VBox([self.node_pick, self.inspector]), self.why,
                                    self.jacobian])
        for i, title in enumerate(_TAB_TITLES):
            self.tabs.set_title(i, title)
        if st.explanations:
            self.tabs.selected_index = 2

        self.view.observe(self._on_view, "value")
        self.collapse.observe(self._on_view, "value")
        for kind, box in self.labels.items():
            box.observe(lambda change, kind=kind: self._on_label(kind, change["new"]), "value")
        self.zoom.observe(self._on_zoom, "value")
        self.mode.observe(self._on_mode, "value")
        self.slider.observe(self._on_slider, "value")
        self.back.on_click(lambda _: self._go(st.step - 1))
        self.next.on_click(lambda _: self._go(st.step + 1))
        self.node_pick.observe(self._on_pick, "value")

        bar1 = W.HBox([self.view, self.collapse])
        bar2 = W.HBox(list(self.labels.values()) + [self.zoom])
        bar3 = W.HBox([self.mode, self.back, self.slider, self.next])
        super().__init__([self.style, bar1, bar2, bar3, self.step_text, self.graph, self.tabs], **kwargs)
        self.add_class(st.root.lstrip("."))
        self._redraw()

    # ----- callbacks ----------------------------------------------------------
    def _on_view(self, _change):
        self.state.set_view(self.view.value)
        self.state.set_collapse(None if self.collapse.value == "none" else self.collapse.value)
        self._redraw()

    def _on_label(self, kind, visible):
        self.state.set_label(kind, visible)
        self._restyle()

    def _on_zoom(self, change):
        self.state.set_zoom(change["new"])
        self._restyle()

    def _on_mode(self, change):
        self.state.set_mode(change["new"])
        self.slider.max = self.state.max_step
        self._go(self.state.step)

    def _on_slider(self, change):
        self._go(change["new"])

    def _go(self, k):
        self.state.set_step(k)
        if self.slider.value != self.state.step:
            self.slider.value = self.state.step     # calls back into _go once, with the same step
            return
        self.step_text.value = f'<div style="font-size:14px">{html.escape(self.state.step_label())}</div>'
        self.step_panel.value = self.state.step_html()
        self._restyle()

    def _on_pick(self, change):
        if change["new"] is not None:
            self.state.select(change["new"])
            self.inspector.value = self.state.inspector_html()
            self._restyle()

    # ----- screen ---------------------------------------------------------------
    def _redraw(self):
        """A new drawing (view or collapse changed): the SVG, then the style."""
        self.graph.value = self.state.graph_html()
        self.inspector.value = self.state.inspector_html()
        self._go(self.state.step)

    def _restyle(self):
        self.style.value = f"<style>{self.state.css()}</style>"


    # ----- without a widget manager -----------------------------------------------
    def static_html(self) -> str:
        """The explorer as self-contained HTML: no widget manager, no network.

        The trace's standalone page (:func:`autodiff_viz.render.html_document`)
        sits in an ``<iframe srcdoc>``, so its element ids and script cannot
        clash with another explorer on the same page; the why-None and the
        Jacobian panels follow.
        Without Graphviz it is the current drawing from the built-in renderer.
        """
        st = self.state
        try:
            page = render.html_document(st.trace, st.collapse, title="autodiff_viz explorer (static copy)")
        except render.GraphvizNotFound:
            body = self.graph.value
        else:
            body = (f'<iframe class="adv-static-explorer" srcdoc="{html.escape(page, quote=True)}" '
                    'style="width:100%;height:640px;border:1px solid #ddd" '
                    'onload="this.style.height=(this.contentDocument.body.scrollHeight+40)+\'px\'"></iframe>')
        why = f'<div class="adv-static-why">{st.why_none_html()}</div>' if st.explanations else ""
        jac = f'<div class="adv-static-jacobian">{st.jacobian_html()}</div>' if st.jacobian_rows else ""
        return f"<div>{body}{why}{jac}</div>"

    def _repr_mimebundle_(self, **kwargs):
        """The live widget for Jupyter, with :meth:`static_html` as ``text/html`` for everything else."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()
        return bundle
