"""The explorer in a real browser: JupyterLab on loopback, headless Chromium driven by Playwright, offline.

Runs a notebook that shows the explorer, drags the step slider's handle with
the mouse, and checks that the node highlighted in the rendered SVG changed
(so the round trip browser → kernel → style → browser works). Screenshots go
to ``out/test-output/widget_browser/`` (or ``$ADV_TEST_OUTPUT``).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
HARD_LIMIT = 150          # seconds for the whole test
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

NOTEBOOK_CODE = [
    "import autodiff_viz as adv\n"
    "w = adv.Variable([0.5, -1.0], name='w')\n"
    "b = adv.Variable([0.1, 0.2], name='b')\n"
    "with adv.GradientTape() as tape:\n"
    "    h = adv.tanh(w * 2.0 + b)\n"
    "    loss = adv.sum(h * h)\n"
    "ex = adv.show(tape, target=loss)\n"
    "ex.view.value = 'backward'\n"
    "ex.slider.value = 1\n"
    "ex",
]

# the class list of the <g class="node"> whose outline is drawn as the current step (4px)
CURRENT_JS = """() => {
  for (const g of document.querySelectorAll('.widget-html-content svg g.node')) {
    const shape = g.querySelector('polygon, path, ellipse, rect');
    if (shape && getComputedStyle(shape).strokeWidth === '4px') {
      return Array.from(g.classList).filter(c => c.startsWith('adv-node-')).join(' ');
    }
  }
  return null;
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
    out = Path(os.environ.get("ADV_TEST_OUTPUT", Path(__file__).resolve().parent.parent / "out" / "test-output"))
    out = out / "widget_browser"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on loopback with its own settings, workspaces and runtime folders."""
    root = tmp_path / "root"
    root.mkdir()
    _notebook(root / "explorer.ipynb")
    env = dict(os.environ)
    for var, name in (("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                      ("JUPYTER_RUNTIME_DIR", "runtime")):
        (tmp_path / name).mkdir()
        env[var] = str(tmp_path / name)
    repo = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--IdentityProvider.token=", "--ServerApp.password=",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/api/status", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "server.log").read_text()[-3000:])
                time.sleep(0.3)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _alarm(signum, frame):
    raise TimeoutError(f"the browser test took more than {HARD_LIMIT} s")


def test_dragging_the_step_slider_moves_the_highlight_in_the_svg(lab):
    out = _output_dir()
    for old in out.glob("*.png"):
        old.unlink()
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HARD_LIMIT)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            try:
                page.goto(lab + "/lab/tree/explorer.ipynb?reset", timeout=60_000)
                page.locator("#jp-main-statusbar >> text=Idle").first.wait_for(timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                page.locator(".widget-html-content svg g.node").first.wait_for(timeout=60_000)
                page.wait_for_function(CURRENT_JS, timeout=30_000)
                before = page.evaluate(CURRENT_JS)
                page.screenshot(path=str(out / "1-before-drag.png"))

                handle = page.locator(".adv-step-slider .noUi-handle").first
                handle.scroll_into_view_if_needed()
                box = handle.bounding_box()
                track = page.locator(".adv-step-slider .noUi-target").first.bounding_box()
                x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
                page.mouse.move(x, y)
                page.mouse.down()
                page.mouse.move(x + track["width"] * 0.5, y, steps=12)
                page.mouse.up()
                page.wait_for_function(f"() => ({CURRENT_JS})() !== {json.dumps(before)}", timeout=30_000)
                after = page.evaluate(CURRENT_JS)
                page.screenshot(path=str(out / "2-after-drag.png"))
            except Exception:
                page.screenshot(path=str(out / "failure.png"))
                raise
            finally:
                browser.close()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
    assert before == "adv-node-n7"          # step 1: the target (the sum, n7), first record of the backward pass
    assert after and after != before
    assert (out / "2-after-drag.png").stat().st_size > 10_000
