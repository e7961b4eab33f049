"""The static copies that widgets leave in saved notebooks and HTML exports (no widget manager there).

* The explorer's copy (``Explorer.static_html``) opens where the explorer was
  left from code: view, opened boxes, colour by ‖ḡ‖, walk and step, hidden
  labels; its own controls go on from there.
* ``TrainingView`` carries its plots as inline SVG in ``text/html``, brought
  up to date when training ends (a view is displayed before ``fit`` runs).

Most checks read the HTML; one opens the explorer's copy in headless Chromium.
"""
import html
import json
import os
import re
import shutil
import tempfile

import pytest
from test_widget_state import mlp_tape, small_regression

from autodiff_viz.views import page as page_module
from autodiff_viz.views.widgets import TrainingView, show

CHROMIUM = "/usr/bin/chromium"


def mlp_explorer():
    """The explorer of the 2-layer MLP of issue 14 (Dense 16 tanh → Dense 3, batch 8)."""
    tape, loss = mlp_tape()
    return show(tape, target=loss)


def page_of(static_html: str) -> str:
    """The standalone page inside the explorer's ``<iframe srcdoc>``."""
    return html.unescape(re.search(r'<iframe class="adv-static-explorer" srcdoc="([^"]*)"', static_html).group(1))


def data_of(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="adv-data">(.*?)</script>', page, re.S).group(1))


def inline_body(page: str, view: str) -> str:
    m = re.search(rf'<div id="src-{view}" hidden>(.*?)</div>\n(?:<div id="src-|<script)', page, re.S)
    return m.group(1) if m else None


def set_up_from_code(ex, k=5):
    """What notebook 11 does: backward view, the model drawn open (the default), colour by ‖ḡ‖, a step of the walk."""
    ex.view.value = "backward"
    ex.graph.heat = True
    ex.go(k)


def test_the_static_copy_starts_from_the_view_boxes_heat_and_step_set_from_code():
    ex = mlp_explorer()
    set_up_from_code(ex, k=5)
    ex.labels["shape"].value = False
    st = ex.state
    opened = "|".join(sorted(st.expanded))
    assert opened                                       # the model's box is open
    page = page_of(ex.static_html())
    data = data_of(page)
    assert data["init"] == {"state": opened, "view": "backward", "mode": "backward", "step": 5, "heat": True,
                            "hidden": ["shape"], "selected": st.box_of(st.selected)}
    # the drawing it opens with is the explorer's own: that fold state, inline
    assert inline_body(page, "backward") == st.payload()["body"]
    assert opened in data["states"] and "" in data["states"]          # and "collapse all" goes somewhere
    start = data["states"][opened]["backward"]
    assert start["crumbs"] == [list(c) for c in st.crumbs()]
    # the colour by ‖ḡ‖ has its colours and the range of its colour bar
    assert start["heat"] == st.payload()["heat"] and start["heat"]
    assert start["heat_range"] == st.payload()["heat_range"] and "linear-gradient" in start["heat_ramp"]
    # the controls say so before any script runs
    assert re.search(r'data-view="backward" aria-pressed="true"', page)
    assert re.search(r'data-view="forward" aria-pressed="false"', page)
    assert re.search(r'data-mode="backward" aria-pressed="true"', page)
    assert 'data-label="shape">' in page and 'data-label="value" checked>' in page


def test_the_static_copy_leaves_the_live_explorer_as_it_was():
    ex = mlp_explorer()
    set_up_from_code(ex, k=3)
    st = ex.state
    before = (st.view, st.expanded, st.step, st.mode, st.heat, set(st.hidden), st.selected, st.collapse)
    drawing = ex.graph.drawing
    ex.static_html()
    assert (st.view, st.expanded, st.step, st.mode, st.heat, set(st.hidden), st.selected, st.collapse) == before
    assert ex.graph.drawing is drawing and st.payload() is drawing


def test_the_current_fold_state_and_its_fold_backs_are_carried_whatever_the_budget():
    ex = mlp_explorer()
    st = ex.state
    ex.view.value = "backward"
    (outer,) = st.expanded                              # by default the model is drawn open: its layers are boxes
    inner = [b for b in st.foldable() if st.layout().boxes[b].key.startswith(outer + "/")]
    ex.click(inner[0])                                  # a folded layer inside the opened model
    assert len(st.expanded) == 2
    page = page_module.html_document(st.trace, st.collapse, fold_states=1, budget_chars=0, budget_seconds=0, start=st)
    data = data_of(page)
    keys = set(data["states"])
    current = "|".join(sorted(st.expanded))
    assert current in keys and "" in keys and data["init"]["state"] == current
    for key, _title in st.crumbs():                     # each breadcrumb button folds back to a carried state
        folded = sorted(k for k in st.expanded if k != key and not k.startswith(key.rstrip("*") + "/"))
        assert "|".join(folded) in keys


def test_the_both_view_is_carried_when_the_explorer_shows_it():
    ex = mlp_explorer()
    assert ex.state.view == "backward"                  # at 850 px side by side would be unreadable ...
    ex.view.value = "both"                              # ... the learner picks it
    assert ex.state.view == "both"
    ex.go(2)
    page = page_of(ex.static_html())
    data = data_of(page)
    (model,) = ex.state.expanded                        # the default fold: the model open one level
    assert data["init"]["view"] == "both" and data["init"]["step"] == 2 and data["init"]["state"] == model
    assert 'data-view="both" aria-pressed="true"' in page
    assert inline_body(page, "both") == ex.state.payload("both")["body"]
    assert all("both" in views for views in data["states"].values())


def test_a_saved_page_without_an_explorer_opens_forward_on_the_default_fold_at_step_1():
    ex = mlp_explorer()
    page = page_module.html_document(ex.state.trace)
    data = data_of(page)
    (model,) = ex.state.expanded                        # the default fold, as the explorer opens it
    assert data["init"] == {"state": model, "view": "forward", "mode": "backward", "step": 1, "heat": False,
                            "hidden": [], "selected": None}
    assert 'data-view="both"' not in page and page.count("<svg") == 2
    inline = inline_body(page, "forward")                 # the inline drawing is the model open, not "collapse all"
    assert data["states"][model]["forward"]["body"] == "" and inline
    assert data["states"][""]["forward"]["body"] not in ("", inline)


def test_the_explorer_mimebundle_keeps_the_live_widget_first():
    ex = mlp_explorer()
    set_up_from_code(ex)
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "adv-static-explorer" in bundle["text/html"]


# ---------------------------------------------------------------------------
# TrainingView
# ---------------------------------------------------------------------------
def trained_view():
    """A TrainingView with a probe batch, and the small regression network it will watch."""
    model, x, y = small_regression(32)
    return TrainingView(probe=(x[:8], y[:8])), model, x, y


def test_training_view_mimebundle_has_the_plots_as_inline_svg():
    view, model, x, y = trained_view()
    empty = view._repr_mimebundle_()
    assert "no epoch finished yet" in empty["text/html"]
    model.fit(x, y, epochs=3, batch_size=16, callbacks=[view], verbose=0)
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle          # Jupyter still prefers the live widget
    page = bundle["text/html"]
    assert page.count("<svg") == 2 and 'class="adv-loss-curve"' in page and 'class="adv-grad-history"' in page
    assert page.count("<polyline") == 1 + 2                               # the loss; one line per layer
    assert "epoch 3" in page and "hidden" in page and "‖ḡ‖ =" in page
    assert "<script" not in page


def test_training_view_static_copy_escapes_layer_names():
    view = TrainingView()
    view.update(0, 1.0, {"<script>x</script>": 0.5})
    page = view._repr_mimebundle_()["text/html"]
    assert "<script>" not in page and "&lt;script&gt;" in page


class FakeHandle:
    """Stands for IPython's DisplayHandle: records the bundles a display is updated with."""

    def __init__(self):
        self.bundles = []

    def update(self, obj, raw=False):
        assert raw
        self.bundles.append(obj)


def test_training_view_outputs_are_updated_once_when_fit_ends_and_the_compared_view_too():
    view, model, x, y = trained_view()
    other = TrainingView(compare_with=view)
    other.update(0, 0.01, {"hidden": 1e-3})             # fed by hand: its output follows every update
    handles = FakeHandle(), FakeHandle()
    view._handles.append(handles[0])
    other._handles.append(handles[1])
    model.fit(x, y, epochs=3, batch_size=16, callbacks=[view], verbose=0)
    assert len(handles[0].bundles) == 1                 # not once per epoch: at the end of fit
    final = handles[0].bundles[-1]["text/html"]
    assert "epoch 3" in final and final == view.static_html()
    # the compared view shares the axes, so its saved copy is redrawn with the new range
    assert handles[1].bundles and handles[1].bundles[-1]["text/html"] == other.static_html()
    other.update(1, 0.02, {"hidden": 2e-3})
    assert "epoch 2" in handles[1].bundles[-1]["text/html"]


def test_training_view_display_registers_a_display_id(monkeypatch):
    import IPython.display
    shown = []

    def fake_display(obj, raw=False, display_id=None):
        shown.append((obj, raw, display_id))
        return FakeHandle()
    monkeypatch.setattr(IPython.display, "display", fake_display)
    view = TrainingView()
    view._ipython_display_()
    (obj, raw, display_id), = shown
    assert raw and display_id is True and "text/html" in obj and len(view._handles) == 1


# ---------------------------------------------------------------------------
# In a browser: the explorer's copy opens where it was left and steps on from there
# ---------------------------------------------------------------------------
@pytest.mark.skipif(not (os.path.exists(CHROMIUM) and shutil.which("dot")), reason="needs Chromium and Graphviz")
def test_the_static_copy_in_chromium_opens_at_the_step_with_heat_and_steps_on(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    ex = mlp_explorer()
    set_up_from_code(ex, k=5)
    n = ex.state.max_step
    path = tmp_path / "copy.html"
    path.write_text(f"<!DOCTYPE html><html><body>{ex.static_html()}</body></html>", encoding="utf-8")
    out = os.path.join(os.environ.get("ADV_TEST_OUTPUT") or os.path.join(tempfile.gettempdir(),
                                                                          "autodiff_viz-test-output"), "static")
    os.makedirs(out, exist_ok=True)
    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(15000)
            page.goto("file://" + str(path))
            frame = page.frame_locator("iframe.adv-static-explorer")
            step = frame.locator(".adv-gv-step")
            step.wait_for()
            assert step.inner_text().startswith(f"step 5 / {n}")
            assert frame.locator(".adv-gv-heat").is_checked()
            assert frame.locator(".adv-gv-scale .adv-gv-ramp").count() == 1          # the colour bar
            assert frame.locator(".adv-gv-crumbs .adv-gv-crumb").count() == len(ex.state.expanded)
            filled = frame.locator(".adv-gv-canvas g.node polygon[style*='fill']").count()
            assert filled > 0
            page.screenshot(path=os.path.join(out, "explorer_copy.png"), full_page=True)
            frame.locator("button[data-a='next']").click()
            assert step.inner_text().startswith(f"step 6 / {n}")
            frame.locator(".adv-gv-crumbs button[data-a='collapse_all']").click()
            frame.locator(".adv-gv-crumbs .adv-gv-crumb").first.wait_for(state="detached")
            assert step.inner_text().startswith(f"step 6 / {n}")               # the step survives a new drawing
            assert frame.locator(".adv-gv-heat").is_checked()
        finally:
            browser.close()
