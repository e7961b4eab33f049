"""A displayed trace and a clicked weight in a real browser (issue 33): JupyterLab, headless Chromium, offline.

A learner's cell ends with ``tape.trace(loss, sources=model.trainable_variables)``
for the small CNN of the issue (Conv2D → MaxPooling2D → Flatten → Dense →
sparse cross-entropy, one training step), in a notebook whose output area
is 850 px wide (a laptop with JupyterLab's file browser open). The picture
must fit that area with its legend (no horizontal scrolling), and every
layer, by the name ``summary()`` gives it, and every weight with its ḡ must
be in the page. Then the same with Graphviz's ``dot`` taken off the kernel's
PATH: the built-in renderer (views/minidot.py) must still give an SVG that
fits. Last, in the explorer (``adv.show``), a click on the Dense kernel shows
its ḡ as a heat map in the inspector, computed in the kernel on the click.
Screenshots go to ``$ADV_TEST_OUTPUT/trace_browser``.
"""
import json
import os

import pytest
from lab_browser import CHROMIUM, lab_page, output_dir

pytest.importorskip("playwright.sync_api")
pytest.importorskip("anywidget")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

AREA = 850
MIN_LABEL_PX = 9

CELLS = [
    "import json\n"
    "import numpy as np\n"
    "import autodiff_viz as adv\n"
    "L = adv.layers\n"
    "rng = np.random.default_rng(0)\n"
    "model = adv.Sequential([L.Input((8, 8, 1)), L.Conv2D(4, 3, activation='relu'), L.MaxPooling2D(2),\n"
    "                        L.Flatten(), L.Dense(10)])\n"
    "x = rng.normal(size=(2, 8, 8, 1)).astype('float32')\n"
    "loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)\n"
    "with adv.GradientTape() as tape:\n"
    "    logits = model(x)\n"
    "    loss = loss_fn(np.array([1, 3]), logits)\n"
    "trace = tape.trace(loss, sources=model.trainable_variables)\n"
    "print(json.dumps({'layers': [f'{l.name} ({type(l).__name__})' for l in model.layers],\n"
    "                  'weights': [v.name for v in model.trainable_variables],\n"
    "                  'ids': [trace.node_id_of(v) for v in model.trainable_variables]}))",
    "trace",
    "import os, sys\n"
    "sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(adv.__file__)), 'docs', 'pictures'))\n"
    "import make_pictures\n"
    "adv.backend.clear_session()\n"
    "make_pictures.lstm_regressor()[0]",
    "adv.backend.clear_session()\n"
    "make_pictures.mlp_with_skip()[0]",
    "adv.backend.clear_session()\n"
    "make_pictures.transformer_block()[0]",
    "explorer = adv.show(tape, target=loss, sources=model.trainable_variables)\n"
    "explorer.go(explorer.state.max_step)\n"
    "explorer",
    "import os, shutil\n"
    "os.environ['PATH'] = os.pathsep.join(d for d in os.environ['PATH'].split(os.pathsep)\n"
    "                                     if not os.path.exists(os.path.join(d, 'dot')))\n"
    "assert shutil.which('dot') is None\n"
    "trace",
]

# the displayed traces (not the explorer): each output's svg, its legend and its text, against the output area
TRACES_JS = """() => Array.from(document.querySelectorAll('.jp-OutputArea-output'))
  .filter(o => o.querySelector('svg g.node') && !o.querySelector('.adv-gv'))
  .map(o => {
    const svgs = Array.from(o.querySelectorAll('svg'));
    const svg = svgs[svgs.length - 1];
    const texts = svgs.flatMap(s => Array.from(s.querySelectorAll('text')));
    const a = o.getBoundingClientRect();
    const legend = texts.filter(t => t.textContent.includes('∂target/∂node'));
    const wrap = svg.parentElement;
    const shown = texts.filter(t => t.textContent.trim());
    const px = shown.map(t => t.getScreenCTM().a * parseFloat(t.getAttribute('font-size')));
    return {area: o.clientWidth, area_right: a.left + o.clientWidth,
            svg_right: Math.max(...svgs.map(s => s.getBoundingClientRect().right)), svgs: svgs.length,
            min_label_px: Math.min(...px),
            min_text_box_px: Math.min(...shown.map(t => t.getBoundingClientRect().height)),
            legend_right: legend.length ? Math.max(...legend.map(t => t.getBoundingClientRect().right)) : null,
            overflow: wrap.scrollWidth - wrap.clientWidth, page_overflow: o.scrollWidth - o.clientWidth,
            wrap_scrolls: getComputedStyle(wrap).overflowX === 'auto',
            note: o.textContent.includes('Graphviz'),
            texts: texts.map(t => t.textContent),
            nodes: svgs.flatMap(s => Array.from(s.querySelectorAll('g.node'))).map(g => [g.id, g.textContent])};
  })"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    done = ("document.querySelectorAll('.jp-OutputArea-output svg g.node').length > 0 && "
            "document.querySelector('.adv-gv .adv-gv-canvas svg') && "
            "Array.from(document.querySelectorAll('.jp-OutputArea-output'))"
            ".filter(o => o.querySelector('svg g.node') && !o.querySelector('.adv-gv')).length >= 5")
    with lab_page(tmp_path_factory.mktemp("lab"), CELLS, done) as pg:
        pg.out = output_dir("trace_browser")
        width = pg.evaluate(TRACES_JS)[0]["area"]                  # make the output area 850 px wide
        pg.set_viewport_size({"width": 1280 + AREA - width, "height": 900})
        pg.wait_for_function(f"({TRACES_JS})()[0].area === {AREA}", timeout=15_000)
        pg.wait_for_timeout(200)
        pg.names = json.loads(pg.locator(".jp-OutputArea-output").first.inner_text())
        yield pg


def _check_fits_and_names(geo, names, legend=True):
    assert geo["area"] == AREA, geo["area"]
    assert geo["svg_right"] <= geo["area_right"] + 1, geo          # the picture fits the output area ...
    if legend:                                                      # ... with its legend (Graphviz draws one)
        assert geo["legend_right"] is not None and geo["legend_right"] <= geo["area_right"] + 1, geo
    assert geo["overflow"] <= 0 and geo["page_overflow"] <= 0, geo  # and nothing scrolls sideways
    texts = geo["texts"]
    for layer in names["layers"]:
        assert layer in texts, (layer, texts[:20])
    for weight, nid in zip(names["weights"], names["ids"]):         # each weight drawn with its ḡ (backward view)
        box = [text for gid, text in geo["nodes"] if gid == f"bwd_{nid}"]
        assert box and weight.rsplit("/", 1)[-1] in box[0] and "ḡ = " in box[0], (weight, box)  # Keras 3 name


def _shot(page, k, name):
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator("svg g.node")).nth(k)
    out.scroll_into_view_if_needed()
    out.screenshot(path=str(page.out / name))


def test_a_displayed_cnn_trace_fits_an_850px_output_with_its_legend_and_shows_every_layer_and_weight(page):
    geo = page.evaluate(TRACES_JS)[0]
    _shot(page, 0, "cnn-trace-graphviz.png")
    assert not geo["note"]                                          # drawn by Graphviz: no fallback note
    _check_fits_and_names(geo, page.names)


def test_without_dot_on_path_the_builtin_renderer_draws_the_same_trace_and_it_still_fits(page):
    traces = page.evaluate(TRACES_JS)
    graphviz, builtin = traces[0], traces[-1]
    _shot(page, len(traces), "cnn-trace-builtin.png")
    assert builtin["note"]                                          # the note says how to get Graphviz's layout
    assert builtin["texts"] != graphviz["texts"] or builtin["nodes"] != graphviz["nodes"]
    _check_fits_and_names(builtin, page.names)                      # with its legend, as Graphviz draws it
    assert builtin["min_label_px"] >= MIN_LABEL_PX, builtin["min_label_px"]


@pytest.mark.parametrize("k, model, fits", [
    (0, "cnn", True), (1, "lstm_regressor", True), (2, "mlp_with_skip", True),
    (3, "transformer_block", False),    # attention's eight weights and formulas: ~1500 pt wide even stacked
])
def test_every_label_of_a_displayed_trace_is_at_least_9px_tall_at_850px_and_nothing_scrolls(page, k, model, fits):
    """Readable, not only fitting: the smallest text's font size × the SVG's scale on screen (getScreenCTM).

    A picture that fits 850 px only below that size (the transformer block) stops shrinking at it and
    scrolls sideways in its own box; the output area and the page never do."""
    geo = page.evaluate(TRACES_JS)[k]
    _shot(page, k, f"{model}-trace-graphviz.png")
    print(model, "smallest label", round(geo["min_label_px"], 1), "px; text box", round(geo["min_text_box_px"], 1),
          "px;", geo["svgs"], "svg(s)")
    assert geo["min_label_px"] >= MIN_LABEL_PX - 0.05, (model, geo["min_label_px"])
    assert geo["page_overflow"] <= 0, geo
    if fits:
        assert geo["svg_right"] <= geo["area_right"] + 1 and geo["overflow"] <= 0, geo
    else:
        assert geo["overflow"] > 0 and geo["wrap_scrolls"], geo       # its own box scrolls, nothing is cut


def test_clicking_a_weight_in_the_explorer_shows_its_gradient_as_a_heat_map(page):
    gv = page.locator(".adv-gv").first
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator(".adv-gv")).first
    dense_kernel, conv_kernel = page.names["ids"][2], page.names["ids"][0]
    assert out.locator("svg.adv-heatmap-svg").count() == 0          # nothing drawn before the click
    node = gv.locator(f"g.node[id$='bwd_{dense_kernel}']").first
    node.scroll_into_view_if_needed()
    node.click()
    heat = out.locator(".widget-html-content", has=page.locator("svg.adv-heatmap-svg")).first
    heat.wait_for(timeout=15_000)
    text = heat.inner_text()
    assert page.names["weights"][2] in text and "(36, 10)" in text and "‖·‖ =" in text
    assert "min " in text and "max " in text
    assert heat.locator("svg.adv-heatmap-svg rect").count() >= 360   # every entry of the (36, 10) kernel a cell
    right = page.evaluate("""() => {
      const s = Array.from(document.querySelectorAll('svg.adv-heatmap-svg')).pop();
      const o = s.closest('.jp-OutputArea-output');
      return [s.getBoundingClientRect().right, o.getBoundingClientRect().left + o.clientWidth];
    }""")
    assert right[0] <= right[1] + 1, right
    heat.scroll_into_view_if_needed()
    heat.screenshot(path=str(page.out / "explorer-dense-kernel-heatmap.png"))

    conv = gv.locator(f"g.node[id$='bwd_{conv_kernel}']").first
    conv.scroll_into_view_if_needed()
    conv.click()
    filters = out.locator(".widget-html-content", has_text="4 filters").first
    filters.wait_for(timeout=15_000)
    assert filters.locator("g.adv-heatmap-tile").count() == 4
    filters.scroll_into_view_if_needed()
    filters.screenshot(path=str(page.out / "explorer-conv-kernel-filters.png"))
