"""BERT's paper figure in a real browser (issue 42): JupyterLab, headless Chromium, offline.

``transformers``' ``BertForSequenceClassification`` (three layers, tiny widths, random weights) is recorded with
``adv.torch.record()``; in the explorer a click opens the encoder, whose layers are one "BertLayer × 3" box, a
second click opens the first of them — its attention, intermediate and output parts drawn, the two other layers
folded after it as "BertLayer × 2" — and a click on its attention opens that too. The figure before any click fits
the notebook's 850 px output area, readable (every label ≥ 9 px). Screenshots go to
``$ADV_TEST_OUTPUT/figure_browser``.
"""
import json
import os

import pytest
from lab_browser import CHROMIUM, lab_page, output_dir
from test_figure_browser import AREA, EXPLORER_TEXT, FIGURE_JS, MIN_LABEL_PX

pytest.importorskip("playwright.sync_api")
pytest.importorskip("anywidget")
pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

CELLS = [
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


def test_berts_figure_fits_the_notebook_and_names_its_parts(page):
    geo = page.evaluate(FIGURE_JS)
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator("svg g.node")).first
    out.scroll_into_view_if_needed()
    out.screenshot(path=str(page.out / "bert-figure.png"))
    assert geo["min_label_px"] >= MIN_LABEL_PX - 0.05, geo["min_label_px"]
    assert geo["svg_right"] <= geo["area_right"] + 1 and geo["page_overflow"] <= 0, geo
    text = " ".join(geo["texts"])
    for part in ("bert.embeddings (BertEmbeddings)", "bert.encoder (BertEncoder)", "classifier"):
        assert part in text, part


def test_the_explorer_opens_the_encoder_then_one_layer_then_its_attention(page):
    gv = page.locator(".adv-gv").first

    def click(box_id, then):
        node = gv.locator(f"g.node[id$='bwd_{box_id}']").first
        node.scroll_into_view_if_needed()
        node.click()
        page.wait_for_function(f"({EXPLORER_TEXT})().includes({json.dumps(then)})", timeout=30_000)

    click(page.ids["encoder"], "BertLayer × 3")
    click(page.ids["layers"], "BertLayer × 2")             # the first layer open, the two others folded after it
    text = page.evaluate(EXPLORER_TEXT)
    for part in ("BertAttention", "BertIntermediate", "BertOutput"):
        assert part in text, part
    click(page.ids["attention"], "BertSelfAttention")
    gv.scroll_into_view_if_needed()
    gv.screenshot(path=str(page.out / "bert-explorer-layer.png"))
