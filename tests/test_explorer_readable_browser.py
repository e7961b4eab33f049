"""The explorer readable at an 850 px output area, live in JupyterLab (headless Chromium, offline).

A laptop's JupyterLab with its file browser open leaves a notebook output
about 850 px wide. The explorer (``adv.show``) opens on two graphs of
docs/pictures/make_pictures.py: the small CNN and the transformer block
(attention's eight weights). Fitting the whole transformer drawing into
850 px would draw its labels at 5–7 px; the explorer must instead open at
the scale where its smallest label is 9 px (font size × the SVG's scale on
screen, ``getScreenCTM``), centred on the current step, with the canvas
panning inside its own viewport: the output area never scrolls sideways.
Stepping with ▶ keeps the current step's box in view, and "fit" still
shows the whole graph. Screenshots go to ``$ADV_TEST_OUTPUT/explorer_readable``.
"""
import os

import pytest
from lab_browser import CHROMIUM, lab_page, output_dir

pytest.importorskip("playwright.sync_api")
pytest.importorskip("anywidget")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

AREA = 850
MIN_LABEL_PX = 9
MODELS = ("cnn", "transformer_block")

CELLS = [
    "import os, sys\n"
    "import autodiff_viz as adv\n"
    "sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(adv.__file__)), 'docs', 'pictures'))\n"
    "import make_pictures",
] + [f"adv.backend.clear_session()\nadv.show(make_pictures.{m}()[0])" for m in MODELS]

# the k-th explorer: its smallest drawn label on screen, its viewport and svg against the output area
GEOMETRY_JS = """(k) => {
  const gv = document.querySelectorAll('.adv-gv')[k];
  const area = gv.closest('.jp-OutputArea-output');
  const vp = gv.querySelector('.adv-gv-vp');
  const svg = gv.querySelector('.adv-gv-canvas svg');
  const texts = Array.from(svg.querySelectorAll('text'))
    .filter(t => t.textContent.trim() && t.getClientRects().length && !t.classList.contains('adv-inside'));
  const px = texts.map(t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  const a = area.getBoundingClientRect(), v = vp.getBoundingClientRect();
  const cur = gv.querySelector('.adv-gv-canvas g.node.adv-current');
  const c = cur ? cur.getBoundingClientRect() : null;
  return {area: area.clientWidth, area_right: a.left + area.clientWidth, vp_right: v.right,
          page_overflow: area.scrollWidth - area.clientWidth,
          svg_width: svg.getBoundingClientRect().width, vp_width: vp.clientWidth,
          vp_scrolls: vp.scrollWidth > vp.clientWidth || vp.scrollHeight > vp.clientHeight,
          min_label_px: Math.min(...px), step: gv.querySelector('.adv-gv-step').textContent,
          current: cur ? cur.id : null,
          current_visible: c ? c.bottom > v.top && c.top < v.bottom && c.right > v.left && c.left < v.right : false};
}"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    done = "document.querySelectorAll('.adv-gv .adv-gv-canvas svg').length >= 2"
    with lab_page(tmp_path_factory.mktemp("lab"), CELLS, done) as pg:
        pg.out = output_dir("explorer_readable")
        width = pg.evaluate(GEOMETRY_JS, 0)["area"]                  # make the output area 850 px wide
        pg.set_viewport_size({"width": 1280 + AREA - width, "height": 900})
        pg.wait_for_function(f"({GEOMETRY_JS})(0).area === {AREA}", timeout=15_000)
        pg.wait_for_timeout(300)
        yield pg


def _shot(page, k, name):
    gv = page.locator(".adv-gv").nth(k)
    gv.scroll_into_view_if_needed()
    gv.screenshot(path=str(page.out / name))


@pytest.mark.parametrize("k, model", list(enumerate(MODELS)))
def test_the_explorer_opens_readable_at_850px_and_follows_the_walk(page, k, model):
    geo = page.evaluate(GEOMETRY_JS, k)
    _shot(page, k, f"{model}-1-open.png")
    print(model, "on open: smallest label", round(geo["min_label_px"], 2), "px; svg", round(geo["svg_width"]),
          "px in a viewport of", geo["vp_width"], "px")
    assert geo["area"] == AREA, geo
    assert geo["min_label_px"] >= MIN_LABEL_PX - 0.05, (model, geo)
    assert geo["vp_right"] <= geo["area_right"] + 1 and geo["page_overflow"] <= 0, geo   # the canvas pans inside
    assert geo["current"] and geo["current_visible"], geo           # opens on the current step (the loss)

    gv = page.locator(".adv-gv").nth(k)
    steps = int(geo["step"].split("/")[1].split(":")[0])
    assert geo["step"].startswith("step 1 /") and steps > 5, geo
    for i in range(min(12, steps - 1)):                             # ▶ walks down: the current box stays in view
        gv.locator("button[data-a='next']").click()
        geo = page.evaluate(GEOMETRY_JS, k)
        assert geo["step"].startswith(f"step {i + 2} /"), geo
        assert geo["current"] and geo["current_visible"], (i, geo)
        assert geo["min_label_px"] >= MIN_LABEL_PX - 0.05, geo       # stepping does not re-fit below readable
    _shot(page, k, f"{model}-2-after-steps.png")

    gv.locator("button[data-a='fit']").click()                      # "fit" still shows the whole graph
    geo = page.evaluate(GEOMETRY_JS, k)
    assert geo["svg_width"] <= geo["vp_width"] + 1, geo
    _shot(page, k, f"{model}-3-fit.png")
