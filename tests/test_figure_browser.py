"""A real ResNet's paper figure in a real browser (issue 42): JupyterLab, headless Chromium, offline.

``transformers``' ``ResNetForImageClassification`` (ResNet-18's depths, tiny widths, random weights) is recorded
with ``adv.torch.record()``; the notebook's 850 px output area shows ``rec.trace(loss, model)`` as its
architecture, readable (every label ≥ 9 px) and without sideways scrolling. In the explorer a click opens the
encoder, a second click opens the "ResNetStage × 3" box, and a click on a "× 1" run steps to another stage.
``BertForSequenceClassification`` (three layers, tiny widths) likewise: its figure fits and reads, and clicks open
the encoder ("BertLayer × 3"), the first layer — its attention, intermediate and output parts drawn, the two others
folded after it as "BertLayer × 2" — and that layer's attention. Screenshots go to ``$ADV_TEST_OUTPUT/figure_browser``.
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

CELLS = [      # ResNet
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

BERT_CELLS = [
    "import json, torch, transformers\n"
    "import autodiff_viz as adv\n"
    "from autodiff_viz.views import dot\n"
    "torch.manual_seed(0)\n"
    "config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,\n"
    "                                 intermediate_size=32, max_position_embeddings=16, num_labels=2)\n"
    "model = transformers.BertForSequenceClassification(config)\n"
    "ids, labels = torch.randint(0, 64, (2, 8)), torch.tensor([0, 1])\n"
    "with adv.torch.record() as rec:\n"
    "    loss = model(input_ids=ids, labels=labels).loss\n"
    "    loss.backward()\n"
    "trace = rec.trace(loss, model)\n"
    "h = dot.hierarchy(trace)\n"
    "layer0 = 'bertforsequenceclassification/bert/bert.encoder/bert.encoder.layer/bert.encoder.layer.0'\n"
    "print(json.dumps({'encoder': h.groups['bertforsequenceclassification/bert/bert.encoder'].id,\n"
    "                  'layers': next(r.id for r in h.repeats.values() if r.title == 'BertLayer'),\n"
    "                  'attention': h.groups[layer0 + '/bert.encoder.layer.0.attention'].id}))",
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


def _figure_page(tmp_path_factory, cells):
    """JupyterLab running ``cells`` (the first prints the ids of the boxes to click), its output area 850 px wide."""
    done = ("document.querySelectorAll('.jp-OutputArea-output svg g.node').length > 0 && "
            "document.querySelector('.adv-gv .adv-gv-canvas svg')")
    with lab_page(tmp_path_factory.mktemp("lab"), cells, done, limit=300) as pg:
        pg.out = output_dir("figure_browser")
        width = pg.evaluate(FIGURE_JS)["area"]
        pg.set_viewport_size({"width": 1280 + AREA - width, "height": 900})
        pg.wait_for_function(f"({FIGURE_JS})().area === {AREA}", timeout=30_000)
        pg.ids = json.loads(pg.locator(".jp-OutputArea-output").first.inner_text())
        yield pg


# class-scoped: one JupyterLab at a time (Playwright's sync API runs one browser session per thread)
@pytest.fixture(scope="class")
def page(tmp_path_factory):
    yield from _figure_page(tmp_path_factory, CELLS)


@pytest.fixture(scope="class")
def bert_page(tmp_path_factory):
    yield from _figure_page(tmp_path_factory, BERT_CELLS)


def _fits_and_names(page, shot, parts):
    """The figure before any click fits the output area, every label readable, and names ``parts``."""
    geo = page.evaluate(FIGURE_JS)
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator("svg g.node")).first
    out.scroll_into_view_if_needed()
    out.screenshot(path=str(page.out / shot))
    assert geo["min_label_px"] >= MIN_LABEL_PX - 0.05, geo["min_label_px"]
    assert geo["svg_right"] <= geo["area_right"] + 1 and geo["page_overflow"] <= 0, geo
    text = " ".join(geo["texts"])
    for part in parts:
        assert part in text, part


def _click(page, box_id, then):
    """Click the explorer's box ``box_id`` and wait until its picture shows ``then``."""
    node = page.locator(".adv-gv").first.locator(f"g.node[id$='bwd_{box_id}']").first
    node.scroll_into_view_if_needed()
    node.click()
    page.wait_for_function(f"({EXPLORER_TEXT})().includes({json.dumps(then)})", timeout=30_000)


class TestResNet:
    """transformers' ResNet (ResNet-18's depths)."""

    def test_resnets_figure_fits_the_notebook_and_names_its_parts(self, page):
        _fits_and_names(page, "resnet-figure.png",
                        ("resnet.embedder (ResNetEmbeddings)", "resnet.encoder (ResNetEncoder)", "classifier"))

    def test_the_explorer_opens_the_encoder_then_the_stages_and_steps_through_them(self, page):
        _click(page, page.ids["encoder"], "ResNetStage × 3")
        _click(page, page.ids["stages"], "ResNetStage × 2")      # the first of the three open, two folded after it
        assert "ResNetBasicLayer" in page.evaluate(EXPLORER_TEXT)
        _click(page, f"{page.ids['stages']}_1", "ResNetStage × 1")     # step: a click on the run opens the next stage
        gv = page.locator(".adv-gv").first
        gv.scroll_into_view_if_needed()
        gv.screenshot(path=str(page.out / "resnet-explorer-stages.png"))


class TestBert:
    """transformers' BERT, three layers."""

    def test_berts_figure_fits_the_notebook_and_names_its_parts(self, bert_page):
        _fits_and_names(bert_page, "bert-figure.png",
                        ("bert.embeddings (BertEmbeddings)", "bert.encoder (BertEncoder)", "classifier"))

    def test_the_explorer_opens_berts_encoder_then_one_layer_then_its_attention(self, bert_page):
        _click(bert_page, bert_page.ids["encoder"], "BertLayer × 3")
        _click(bert_page, bert_page.ids["layers"], "BertLayer × 2")    # the first layer open, the two others folded
        text = bert_page.evaluate(EXPLORER_TEXT)
        for part in ("BertAttention", "BertIntermediate", "BertOutput"):
            assert part in text, part
        _click(bert_page, bert_page.ids["attention"], "BertSelfAttention")
        gv = bert_page.locator(".adv-gv").first
        gv.scroll_into_view_if_needed()
        gv.screenshot(path=str(bert_page.out / "bert-explorer-layer.png"))
