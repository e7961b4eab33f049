"""A real ResNet's paper figure in a real browser (issue 42): JupyterLab, headless Chromium, offline.

``transformers``' ``ResNetForImageClassification`` (ResNet-18's depths, tiny widths, random weights) is recorded
with ``adv.torch.record()``; the notebook's 850 px output area shows ``rec.trace(loss, model)`` as its
architecture, readable (every label ≥ 9 px) and without sideways scrolling. In the explorer a click opens the
encoder, a second click opens the "ResNetStage × 3" box, and a click on a "× 1" run steps to another stage.
Screenshots go to ``$ADV_TEST_OUTPUT/figure_browser``.
"""
import json
import os

import pytest
from lab_browser import CHROMIUM, lab_page, output_dir

pytest.importorskip("playwright.sync_api")
pytest.importorskip("anywidget")
pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

AREA = 850
MIN_LABEL_PX = 9

CELLS = [
    "import json, torch, transformers\n"
    "import autodiff_viz as adv\n"
    "from autodiff_viz.views import dot\n"
    "torch.manual_seed(0)\n"
    "config = transformers.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 8, 16, 16],\n"
    "                                   depths=[2, 2, 2, 2], layer_type='basic', num_labels=4)\n"
    "model = transformers.ResNetForImageClassification(config)\n"
    "images, labels = torch.randn(2, 3, 16, 16), torch.tensor([1, 2])\n"
    "with adv.torch.record() as rec:\n"
    "    logits = model(images).logits\n"
    "    loss = torch.nn.functional.cross_entropy(logits, labels)\n"
    "    loss.backward()\n"
    "trace = rec.trace(loss, model)\n"
    "h = dot.hierarchy(trace)\n"
    "print(json.dumps({'encoder': h.groups['resnetforimageclassification/resnet/resnet.encoder'].id,\n"
    "                  'stages': next(r.id for r in h.repeats.values() if r.title == 'ResNetStage')}))",
    "trace",
    "explorer = adv.show(trace)\n"
    "explorer",
]

FIGURE_JS = """() => {
  const o = Array.from(document.querySelectorAll('.jp-OutputArea-output'))
    .filter(o => o.querySelector('svg g.node') && !o.querySelector('.adv-gv'))[0];
  const svgs = Array.from(o.querySelectorAll('svg'));
  const texts = svgs.flatMap(s => Array.from(s.querySelectorAll('text'))).filter(t => t.textContent.trim());
  return {area: o.clientWidth, area_right: o.getBoundingClientRect().left + o.clientWidth,
          svg_right: Math.max(...svgs.map(s => s.getBoundingClientRect().right)),
          min_label_px: Math.min(...texts.map(t => t.getScreenCTM().a * parseFloat(t.getAttribute('font-size')))),
          page_overflow: o.scrollWidth - o.clientWidth, texts: texts.map(t => t.textContent)};
}"""
EXPLORER_TEXT = "() => document.querySelector('.adv-gv .adv-gv-canvas svg').textContent"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    done = ("document.querySelectorAll('.jp-OutputArea-output svg g.node').length > 0 && "
            "document.querySelector('.adv-gv .adv-gv-canvas svg')")
    with lab_page(tmp_path_factory.mktemp("lab"), CELLS, done, limit=300) as pg:
        pg.out = output_dir("figure_browser")
        width = pg.evaluate(FIGURE_JS)["area"]
        pg.set_viewport_size({"width": 1280 + AREA - width, "height": 900})
        pg.wait_for_function(f"({FIGURE_JS})().area === {AREA}", timeout=30_000)
        pg.ids = json.loads(pg.locator(".jp-OutputArea-output").first.inner_text())
        yield pg


def test_resnets_figure_fits_the_notebook_and_names_its_parts(page):
    geo = page.evaluate(FIGURE_JS)
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator("svg g.node")).first
    out.scroll_into_view_if_needed()
    out.screenshot(path=str(page.out / "resnet-figure.png"))
    assert geo["min_label_px"] >= MIN_LABEL_PX - 0.05, geo["min_label_px"]
    assert geo["svg_right"] <= geo["area_right"] + 1 and geo["page_overflow"] <= 0, geo
    text = " ".join(geo["texts"])
    for part in ("resnet.embedder (ResNetEmbeddings)", "resnet.encoder (ResNetEncoder)", "classifier"):
        assert part in text, part


def test_the_explorer_opens_the_encoder_then_the_stages_and_steps_through_them(page):
    gv = page.locator(".adv-gv").first

    def click(box_id, then):
        node = gv.locator(f"g.node[id$='bwd_{box_id}']").first
        node.scroll_into_view_if_needed()
        node.click()
        page.wait_for_function(f"({EXPLORER_TEXT})().includes({json.dumps(then)})", timeout=30_000)

    click(page.ids["encoder"], "ResNetStage × 3")
    click(page.ids["stages"], "ResNetStage × 2")            # the first of the three open, two folded after it
    assert "ResNetBasicLayer" in page.evaluate(EXPLORER_TEXT)
    click(f"{page.ids['stages']}_1", "ResNetStage × 1")     # step: a click on the run opens the next stage
    gv.scroll_into_view_if_needed()
    gv.screenshot(path=str(page.out / "resnet-explorer-stages.png"))
