"""The explorer where learners work (issue 35): Jupyter Notebook 7 and JupyterLab with lazy cells, in a real browser.

``tests/test_widget_browser.py`` checks the explorer in JupyterLab 4 as it
opens by default. Learners also use the classic-looking Jupyter Notebook 7
(``jupyter notebook``; package ``notebook``, in the ``test`` extra) and
JupyterLab with ``windowingMode: "full"``, where only the cells near the
viewport are in the page (a cell far down is built when it is scrolled
to). In each, the explorer must render, fit its output area, step with ▶
and with the arrow keys, and (lazily rendered) keep its step when scrolled
away and back. Notebook 7 handles keys before the page does (capture
phase): the arrow keys stepped nothing there until the graph's viewport
carried ``data-lm-suppress-shortcuts``.
Same set-up as the JupyterLab test: loopback server, Debian's Chromium,
offline (TESTING.md). Screenshots go to ``$ADV_TEST_OUTPUT/where_learners_work``.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
HARD_LIMIT = 240
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")

EXPLORER = ("import numpy as np\n"
            "import autodiff_viz as adv\n"
            "rng = np.random.default_rng(0)\n"
            "x = rng.normal(size=(8, 4)); y = rng.integers(0, 3, size=8)\n"
            "model = adv.Sequential([adv.layers.Dense(16, activation='tanh'), adv.layers.Dense(3)])\n"
            "with adv.GradientTape() as tape:\n"
            "    loss = adv.losses.SparseCategoricalCrossentropy(from_logits=True)(y, model(x))\n"
            "explorer = adv.show(tape, target=loss)\n"
            "explorer")

STATE_JS = """() => {
  const gv = document.querySelector('.adv-gv');
  if (!gv) return null;
  const area = gv.closest('.jp-OutputArea-output') || gv.parentElement;
  const svgs = Array.from(gv.querySelectorAll('.adv-gv-canvas svg'));
  return {step: parseInt(gv.querySelector('.adv-gv-slider').value, 10), svgs: svgs.length,
          right: svgs.length ? Math.max(...svgs.map(s => s.getBoundingClientRect().right)) : null,
          area_right: area.getBoundingClientRect().left + area.clientWidth,
          width: gv.getBoundingClientRect().width};
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(path: Path, lazy: bool) -> None:
    cells = []
    if lazy:   # forty screens of reading first: the explorer's cell starts far outside the viewport
        cells += [{"cell_type": "markdown", "id": f"m{i}", "metadata": {},
                   "source": f"## Section {i}\n\n" + "A paragraph a learner reads before the graph. " * 30}
                  for i in range(40)]
    cells.append({"cell_type": "code", "execution_count": None, "id": "explorer", "metadata": {}, "outputs": [],
                  "source": EXPLORER})
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                      "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


def _alarm(signum, frame):
    raise TimeoutError(f"a browser test took more than {HARD_LIMIT} s")


def _serve(tmp, app, lazy):
    """Start ``python -m <app>`` on loopback for ``tmp/root``; return ``(process, url)`` once it answers."""
    root = tmp / "root"
    root.mkdir()
    _notebook(root / "explorer.ipynb", lazy)
    env = dict(os.environ)
    for var, name in (("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                      ("JUPYTER_RUNTIME_DIR", "runtime")):
        (tmp / name).mkdir()
        env[var] = str(tmp / name)
    if lazy:
        tracker = tmp / "settings" / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "full"}))
    repo = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    port = _free_port()
    log = open(tmp / "server.log", "w")
    args = [sys.executable, "-m", app, "--allow-root", "--no-browser", "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}", "--IdentityProvider.token=", "--ServerApp.password=",
            f"--ServerApp.root_dir={root}"]
    if app == "jupyterlab":
        args += ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                 "--LabApp.extension_manager=readonly"]
    proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/api/status", timeout=2):
                return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"{app} did not start:\n" + (tmp / "server.log").read_text()[-3000:])
            time.sleep(0.3)


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _scroll_to_end(pg):
    """Scroll every scrolling notebook panel to its end (lazy cells are built as they come into view)."""
    pg.evaluate("""() => document.querySelectorAll('.jp-WindowedPanel-outer, .jp-NotebookPanel-notebook, '
                   + '.jp-Notebook').forEach(e => { e.scrollTop = e.scrollHeight; })""")


def _scroll_to_top(pg):
    pg.evaluate("""() => document.querySelectorAll('.jp-WindowedPanel-outer, .jp-NotebookPanel-notebook, '
                   + '.jp-Notebook').forEach(e => { e.scrollTop = 0; })""")


def _run_all(pg):
    """Run → Run All Cells, again until a prompt shows the cell queued or run (early, the kernel is not there yet)."""
    started = "Array.from(document.querySelectorAll('.jp-InputPrompt')).some(p => /\\[(\\*|1)\\]/.test(p.textContent))"
    for _ in range(12):
        pg.get_by_role("menuitem", name="Run", exact=True).click()
        pg.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            pg.wait_for_function(started, timeout=5_000)
            break
        except sync_api.TimeoutError:
            pg.keyboard.press("Escape")
    pg.wait_for_function("!document.querySelector('.jp-Notebook').textContent.includes('[*]')", timeout=90_000)


def _run_and_step(tmp_path, app, path, lazy):
    out = Path(os.environ.get("ADV_TEST_OUTPUT") or Path(tempfile.gettempdir()) / "autodiff_viz-test-output")
    out = out / "where_learners_work"
    out.mkdir(parents=True, exist_ok=True)
    name = f"{app}{'-lazy' if lazy else ''}"
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HARD_LIMIT)
    proc, url = _serve(tmp_path, app, lazy)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            pg = browser.new_page(viewport={"width": 1280, "height": 800})
            requests = []
            pg.on("request", lambda r: requests.append(r.url))
            try:
                pg.goto(url + path, timeout=60_000)
                pg.locator(".jp-Notebook").first.wait_for(timeout=60_000)
                pg.wait_for_function("document.body.textContent.includes('Idle')", timeout=60_000)
                _run_all(pg)
                if lazy:   # windowing is on: of the 41 cells, only those near the viewport are in the page
                    assert pg.evaluate("document.querySelectorAll('.jp-Cell').length") < 41
                    for _ in range(40):
                        _scroll_to_end(pg)
                        if pg.evaluate("!!document.querySelector('.adv-gv .adv-gv-canvas svg')"):
                            break
                        pg.wait_for_timeout(250)
                pg.wait_for_function("document.querySelector('.adv-gv .adv-gv-canvas svg') !== null",
                                     timeout=90_000)
                pg.locator(".adv-gv").first.scroll_into_view_if_needed()
                pg.wait_for_timeout(300)
                first = pg.evaluate(STATE_JS)
                assert first["svgs"] >= 1 and first["width"] > 300, first
                assert first["right"] <= first["area_right"] + 1, f"the graph overflows its output area: {first}"
                pg.locator('.adv-gv button[data-a="next"]').first.click()
                pg.wait_for_function(f"document.querySelector('.adv-gv .adv-gv-slider').value == {first['step'] + 1}",
                                     timeout=10_000)
                pg.locator(".adv-gv .adv-gv-vp").first.focus()
                pg.keyboard.press("ArrowRight")
                pg.wait_for_function(f"document.querySelector('.adv-gv .adv-gv-slider').value == {first['step'] + 2}",
                                     timeout=10_000)
                pg.keyboard.press("ArrowLeft")
                pg.wait_for_function(f"document.querySelector('.adv-gv .adv-gv-slider').value == {first['step'] + 1}",
                                     timeout=10_000)
                if lazy:   # scrolled away and back (the output may be detached meanwhile): still on the same step
                    _scroll_to_top(pg)
                    pg.wait_for_timeout(1000)
                    for _ in range(40):
                        _scroll_to_end(pg)
                        if pg.evaluate("!!document.querySelector('.adv-gv .adv-gv-canvas svg')"):
                            break
                        pg.wait_for_timeout(250)
                    pg.wait_for_function("document.querySelector('.adv-gv .adv-gv-canvas svg') !== null",
                                         timeout=20_000)
                    assert pg.evaluate(STATE_JS)["step"] == first["step"] + 1
                pg.screenshot(path=str(out / f"{name}.png"))
                assert all(r.startswith(url) or r.startswith(("data:", "blob:")) for r in requests), \
                    [r for r in requests if not r.startswith(url)][:5]
            except BaseException:
                pg.screenshot(path=str(out / f"{name}-failure.png"))
                raise
            finally:
                browser.close()
    finally:
        _stop(proc)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_the_explorer_renders_fits_and_steps_in_jupyter_notebook_7(tmp_path):
    """``jupyter notebook`` (Notebook 7): the explorer renders inside the cell's output, fits it, and steps
    with ▶ and the arrow keys (the graph keeps the keys from Notebook's own shortcuts)."""
    pytest.importorskip("notebook", minversion="7")
    _run_and_step(tmp_path, "notebook", "/notebooks/explorer.ipynb", lazy=False)


def test_the_explorer_renders_and_keeps_its_step_in_lazily_rendered_jupyterlab(tmp_path):
    """JupyterLab with ``windowingMode: "full"``: the explorer's cell, forty sections down, renders once
    scrolled to, fits, steps, and after being scrolled away and back is on the step the learner left it at."""
    _run_and_step(tmp_path, "jupyterlab", "/lab/tree/explorer.ipynb?reset", lazy=True)


def test_the_explorer_in_a_static_html_export_renders_fits_and_steps_with_the_keys(tmp_path):
    """A notebook saved as HTML (what ``bash dev.sh tour`` with ``HEADLESS=1`` writes, and what a course
    hands out): no kernel and no widget manager, yet opened from ``file://`` in Chromium at a laptop's width
    the explorer's copy shows its graph inside the page's width and steps with ▶ and the arrow keys, and
    nothing is fetched from the network."""
    import nbformat

    from autodiff_viz.course import run_notebooks

    folder = tmp_path / "nbs"
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# One training step, explored"), nbformat.v4.new_code_cell(EXPLORER)]
    nbformat.write(nb, folder / "00_explorer.ipynb")
    out = tmp_path / "html"
    assert run_notebooks.main([str(out), "--notebooks", str(folder)]) == 0
    shots = Path(os.environ.get("ADV_TEST_OUTPUT") or Path(tempfile.gettempdir()) / "autodiff_viz-test-output")
    shots = shots / "where_learners_work"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1000, "height": 800})
            requests = []
            pg.on("request", lambda r: requests.append(r.url))
            pg.goto((out / "00_explorer.html").resolve().as_uri())
            frame_el = pg.locator("iframe.adv-static-explorer")
            frame_el.wait_for(timeout=30_000)
            frame = frame_el.element_handle().content_frame()
            frame.locator(".adv-gv .adv-gv-canvas svg").first.wait_for(timeout=30_000)
            first = frame.evaluate(STATE_JS)
            box = frame_el.bounding_box()
            page_width = pg.evaluate("document.documentElement.clientWidth")
            assert first["svgs"] >= 1 and first["width"] > 300, first
            assert box["x"] + box["width"] <= page_width + 1, (box, page_width)
            assert first["right"] <= first["area_right"] + 1, f"the graph overflows the copy: {first}"
            frame.locator('.adv-gv button[data-a="next"]').first.click()
            frame.wait_for_function(f"document.querySelector('.adv-gv .adv-gv-slider').value == {first['step'] + 1}",
                                    timeout=10_000)
            frame.locator(".adv-gv .adv-gv-vp").first.focus()
            pg.keyboard.press("ArrowRight")
            frame.wait_for_function(f"document.querySelector('.adv-gv .adv-gv-slider').value == {first['step'] + 2}",
                                    timeout=10_000)
            pg.keyboard.press("ArrowLeft")
            frame.wait_for_function(f"document.querySelector('.adv-gv .adv-gv-slider').value == {first['step'] + 1}",
                                    timeout=10_000)
            pg.screenshot(path=str(shots / "static-html-export.png"), full_page=True)
            assert all(r.startswith(("file:", "data:", "blob:", "about:")) for r in requests), requests[:5]
        finally:
            browser.close()
