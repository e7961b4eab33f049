"""The explorer in a real browser: JupyterLab on loopback, headless Chromium driven by Playwright, offline.

One JupyterLab server and one page for the module; a notebook shows three
explorers: the 2-layer MLP of issue 14 (Dense 16 tanh → Dense 3, sparse
categorical cross-entropy from logits, batch 8), a SimpleRNN over 20 time
steps, and a chain of 320 ops (folded: over the node budget). The tests
check what a learner sees and does: the graph fits the output width, it
opens on the current step (not a blank corner), ▶ moves at once and the
kernel fills the chain-rule panel, a click on a folded box opens it, a click
on a node fills the inspector. The click → repaint latency on the 320-op
graph is measured in the page (MutationObserver, TESTING.md) and printed,
not asserted. Screenshots go to ``$ADV_TEST_OUTPUT/widget_browser`` (default:
the system temp dir), never into the repository.
"""
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
HARD_LIMIT = 170          # seconds for the whole module
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]

sync_api = pytest.importorskip("playwright.sync_api")
pytest.importorskip("anywidget")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

NOTEBOOK_CODE = [
    "import numpy as np\n"
    "import autodiff_viz as adv\n"
    "rng = np.random.default_rng(0)\n"
    "x = rng.normal(size=(8, 4)); y = rng.integers(0, 3, size=8)\n"
    "model = adv.Sequential([adv.layers.Dense(16, activation='tanh'), adv.layers.Dense(3)])\n"
    "loss_fn = adv.losses.SparseCategoricalCrossentropy(from_logits=True)\n"
    "with adv.GradientTape() as tape:\n"
    "    logits = model(x)\n"
    "    loss = loss_fn(y, logits)\n"
    "mlp = adv.show(tape, target=loss)\n"
    "mlp",
    "xs = rng.normal(size=(2, 20, 3))\n"
    "rnn_layer = adv.layers.SimpleRNN(4)\n"
    "with adv.GradientTape() as tape:\n"
    "    h = rnn_layer(xs)\n"
    "    loss = adv.sum(h * h)\n"
    "rnn = adv.show(tape, target=loss)\n"
    "rnn",
    "v = adv.Variable(np.linspace(-1, 1, 4), name='<img src=x onerror=\"window.__pwned=1\"> & v')\n"
    "with adv.GradientTape() as tape:\n"
    "    z = v\n"
    "    for i in range(320):\n"
    "        z = adv.sin(z)\n"
    "    total = adv.sum(z)\n"
    "chain = adv.show(tape, target=total)\n"
    "chain.graph.step = 0\n"
    "chain",
]

# geometry of the k-th explorer: its widest svg against its output area, and where the current step is
GEOMETRY_JS = """(k) => {
  const gv = document.querySelectorAll('.adv-gv')[k];
  const area = gv.closest('.jp-OutputArea-output') || gv.parentElement;
  const svgs = Array.from(gv.querySelectorAll('.adv-gv-canvas svg'));
  const right = Math.max(...svgs.map(s => s.getBoundingClientRect().right));
  const a = area.getBoundingClientRect();
  const vp = gv.querySelector('.adv-gv-vp').getBoundingClientRect();
  const cur = gv.querySelector('g.node.adv-current');
  const c = cur ? cur.getBoundingClientRect() : null;
  const visible = c ? (c.bottom > vp.top && c.top < vp.bottom && c.right > vp.left && c.left < vp.right) : false;
  const tops = Array.from(gv.querySelectorAll('.adv-gv-canvas g.node')).map(n => n.getBoundingClientRect().top);
  const band = svgs.length && tops.length ? Math.min(...tops) - svgs[0].getBoundingClientRect().top : null;
  return {right: right, band: band, area_left: a.left, area_right: a.left + area.clientWidth, vp_top: vp.top,
          svg_top: svgs.length ? svgs[0].getBoundingClientRect().top : null,
          current: cur ? cur.id : null, current_visible: visible, nodes: gv.querySelectorAll('g.node').length};
}"""

LATENCY_JS = """async ([k, n]) => {
  const gv = document.querySelectorAll('.adv-gv')[k];
  const next = gv.querySelector('button[data-a="next"]');
  const canvas = gv.querySelector('.adv-gv-canvas');
  const times = [];
  for (let i = 0; i < n; i++) {
    times.push(await new Promise((resolve) => {
      let t0 = 0;
      const obs = new MutationObserver(() => {
        obs.disconnect();
        const changed = performance.now() - t0;
        requestAnimationFrame(() => requestAnimationFrame(() => resolve([changed, performance.now() - t0])));
      });
      obs.observe(canvas, {subtree: true, attributes: true, childList: true, characterData: true});
      t0 = performance.now();
      next.click();
    }));
  }
  return times;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(path: Path) -> None:
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                     "outputs": [], "source": src} for i, src in enumerate(NOTEBOOK_CODE)],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


def _output_dir() -> Path:
    base = Path(os.environ.get("ADV_TEST_OUTPUT") or Path(tempfile.gettempdir()) / "autodiff_viz-test-output")
    out = base / "widget_browser"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _alarm(signum, frame):
    raise TimeoutError(f"the browser tests took more than {HARD_LIMIT} s")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """JupyterLab on loopback (own settings, workspaces, runtime), Chromium on the notebook, cells run."""
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    _notebook(root / "explorer.ipynb")
    env = dict(os.environ)
    for var, name in (("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                      ("JUPYTER_RUNTIME_DIR", "runtime")):
        (tmp / name).mkdir()
        env[var] = str(tmp / name)
    repo = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    port = _free_port()
    log = open(tmp / "server.log", "w")
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HARD_LIMIT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--IdentityProvider.token=", "--ServerApp.password=",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    out = _output_dir()
    for old in out.glob("*.png"):
        old.unlink()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/api/status", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp / "server.log").read_text()[-3000:])
                time.sleep(0.3)
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            pg = browser.new_page(viewport={"width": 1280, "height": 800})
            requests = []
            pg.on("request", lambda r: requests.append(r.url))
            try:
                pg.goto(url + "/lab/tree/explorer.ipynb?reset", timeout=60_000)
                pg.locator("#jp-main-statusbar >> text=Idle").first.wait_for(timeout=60_000)
                pg.get_by_role("menuitem", name="Run", exact=True).click()
                pg.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                pg.wait_for_function("document.querySelectorAll('.adv-gv .adv-gv-canvas svg').length >= 3",
                                     timeout=90_000)
                pg.wait_for_timeout(300)
                news = pg.get_by_role("button", name="No", exact=True)
                if news.count():
                    news.first.click()
                pg.out = out
                yield pg
                assert all(r.startswith(url) or r.startswith("data:") or r.startswith("blob:") for r in requests), \
                    [r for r in requests if not r.startswith(url)][:5]
            except BaseException:
                pg.screenshot(path=str(out / "failure.png"))
                raise
            finally:
                browser.close()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _shot(page, k, name):
    gv = page.locator(".adv-gv").nth(k)
    gv.scroll_into_view_if_needed()
    page.locator(".jp-OutputArea-output").nth(k).screenshot(path=str(page.out / name))


def _fits(geo) -> bool:
    return geo["right"] <= geo["area_right"] + 1


def test_mlp_fits_the_width_opens_a_folded_box_and_inspects_a_clicked_node(page):
    geo = page.evaluate(GEOMETRY_JS, 0)
    _shot(page, 0, "mlp-1-first.png")
    assert _fits(geo), geo
    assert geo["band"] < 60, geo                           # no blank band above the side-by-side panels
    assert geo["current"] and geo["current_visible"], geo     # step 1 (the loss) is lit and in view

    gv = page.locator(".adv-gv").nth(0)
    before = geo["nodes"]
    assert gv.locator(".adv-gv-crumbs button").count() == 2      # "collapse all" and the model, open by default
    folded = gv.locator("g.node[id*='bwd_g']").filter(has_text="(Dense)").first     # a folded layer (backward view)
    folded.scroll_into_view_if_needed()
    folded.click()
    page.wait_for_function(f"document.querySelectorAll('.adv-gv')[0].querySelectorAll('g.node').length > {before}",
                           timeout=15_000)
    assert gv.locator(".adv-gv-crumbs button").count() == 3      # ... and the opened layer
    geo2 = page.evaluate(GEOMETRY_JS, 0)
    _shot(page, 0, "mlp-2-expanded.png")
    assert _fits(geo2), geo2

    loss_box = gv.locator("g.node[id*='bwd_g']").filter(has_text="sparse_categorical_crossentropy")
    assert loss_box.count() == 1                                # the loss stays one box: open it
    count = page.evaluate("document.querySelectorAll('.adv-gv')[0].querySelectorAll('g.node').length")
    loss_box.first.click()
    page.wait_for_function("document.querySelectorAll('.adv-gv')[0].querySelectorAll('g.node').length > "
                           f"{count}", timeout=15_000)
    node = gv.locator("g.node[id*='bwd_n']").filter(has_text="softmax_cross_entropy").first
    node.click()
    panel = page.locator(".jp-OutputArea-output").nth(0).locator(".widget-html-content", has_text="node id")
    panel.first.wait_for(timeout=15_000)
    assert "sparse_softmax_cross_entropy" in panel.first.inner_text()
    _shot(page, 0, "mlp-3-inspector.png")
    panel.first.scroll_into_view_if_needed()
    panel.first.screenshot(path=str(page.out / "mlp-4-inspector-panel.png"))

    edge = gv.locator("g.edge[id*='bwd_e'] path").first          # a thin curve: click it where it is drawn
    edge.dispatch_event("click")
    out = page.locator(".jp-OutputArea-output").nth(0)
    edge_panel = out.locator(".widget-html-content", has_text="∂y/∂").filter(has_text="→").first
    edge_panel.wait_for(timeout=15_000)
    edge_panel.scroll_into_view_if_needed()
    edge_panel.screenshot(path=str(page.out / "mlp-5-edge-panel.png"))

    gv.locator(".adv-gv-crumbs button", has_text="collapse all").click()      # the whole model one box again
    page.wait_for_function(f"document.querySelectorAll('.adv-gv')[0].querySelectorAll('g.node').length < {before}",
                           timeout=15_000)
    assert gv.locator("g.node[id*='bwd_g']").filter(has_text="(Sequential)").count() == 1


def test_next_moves_at_once_and_the_kernel_fills_the_chain_rule_panel(page):
    gv = page.locator(".adv-gv").nth(0)
    text = gv.locator(".adv-gv-step")
    assert text.inner_text().startswith("step 1 /")
    gv.locator("button[data-a='next']").click()
    assert text.inner_text().startswith("step 2 /")
    out = page.locator(".jp-OutputArea-output").nth(0)
    out.locator(".widget-html-content", has_text="step 2 /").first.wait_for(timeout=15_000)
    gv.locator("button[data-a='back']").click()
    assert text.inner_text().startswith("step 1 /")
    gv.locator(".adv-gv-vp").focus()
    page.keyboard.press("ArrowRight")                       # a projector remote or the keyboard steps too
    assert text.inner_text().startswith("step 2 /")
    page.keyboard.press("ArrowLeft")
    assert text.inner_text().startswith("step 1 /")


def test_rnn_over_20_steps_fits_and_opens_on_the_current_step(page):
    geo = page.evaluate(GEOMETRY_JS, 1)
    _shot(page, 1, "rnn-1-first.png")
    assert _fits(geo), geo
    assert geo["current"] and geo["current_visible"], geo
    gv = page.locator(".adv-gv").nth(1)
    gv.locator("g.node[id$='_g0']").first.click()             # the folded layer opens: one rolled cell inside
    page.wait_for_function("document.querySelectorAll('.adv-gv')[1].querySelector(\"g.node[id$='_l0']\")",
                           timeout=15_000)
    assert gv.locator("g.edge[id$='_l0_loop']").count() >= 1     # the edge t → t+1 back into the cell
    gv.locator(".adv-gv-heat").check()
    assert gv.locator(".adv-gv-ramp").count() == 1
    coloured = page.evaluate("""() => Array.from(document.querySelectorAll('.adv-gv')[1]
        .querySelectorAll('g.node polygon, g.node path')).filter(p => p.style.fill).length""")
    assert coloured > 0
    geo = page.evaluate(GEOMETRY_JS, 1)
    assert _fits(geo), geo
    _shot(page, 1, "rnn-2-rolled-coloured.png")
    gv.locator("g.edge[id$='_l0_loop'] path").first.dispatch_event("click")
    plot = page.locator(".jp-OutputArea-output").nth(1).locator(".widget-html-content", has=page.locator(
        "svg.adv-loop-plot")).first
    plot.wait_for(timeout=15_000)
    plot.scroll_into_view_if_needed()
    plot.screenshot(path=str(page.out / "rnn-3-loop-over-time.png"))


def test_click_to_repaint_latency_on_a_320_op_chain(page):
    geo = page.evaluate(GEOMETRY_JS, 2)
    assert _fits(geo), geo
    page.locator(".adv-gv").nth(2).scroll_into_view_if_needed()
    times = page.evaluate(LATENCY_JS, [2, 20])
    _shot(page, 2, "chain-after-20-steps.png")
    changed, painted = [t[0] for t in times], [t[1] for t in times]
    print(f"\nclick -> SVG change, 320-op chain, 20 clicks: median {statistics.median(changed):.1f} ms to the "
          f"changed SVG, {statistics.median(painted):.1f} ms to the second frame after it "
          f"(max {max(painted):.1f} ms)")
    assert len(times) == 20
    assert page.locator(".adv-gv").nth(2).locator(".adv-gv-step").inner_text().startswith("step 20 /")
    geo = page.evaluate(GEOMETRY_JS, 2)
    assert geo["current"] and geo["current_visible"], geo      # the viewport followed the walk down the chain
    texts = page.evaluate("Array.from(document.querySelectorAll('.adv-gv')[2].querySelectorAll('svg text'))"
                          ".map(t => t.textContent)")
    assert '<img src=x onerror="window.__pwned=1"> & v' in texts    # a name with markup stays text
    assert page.evaluate("window.__pwned") is None
