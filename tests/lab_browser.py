"""JupyterLab on loopback and Debian's headless Chromium, offline, for the browser tests (TESTING.md).

:func:`lab_page` writes a notebook of code cells, starts JupyterLab with its
own settings, workspaces and runtime folders (every cell in the DOM:
``windowingMode: none``), opens the notebook in Chromium, runs all cells and
yields the page; it stops the server by its pid and checks that the page
asked nothing of the network.
"""
import contextlib
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

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
REPO = Path(__file__).resolve().parent.parent


def output_dir(name: str) -> Path:
    """``$ADV_TEST_OUTPUT/<name>`` (default: under the system temp dir) for screenshots, never the repository."""
    base = Path(os.environ.get("ADV_TEST_OUTPUT") or Path(tempfile.gettempdir()) / "autodiff_viz-test-output")
    out = base / name
    out.mkdir(parents=True, exist_ok=True)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_notebook(path: Path, cells: list) -> None:
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                     "outputs": [], "source": src} for i, src in enumerate(cells)],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


@contextlib.contextmanager
def lab_page(tmp: Path, cells: list, done_js: str, viewport=(1280, 800), limit: int = 150):
    """A page of JupyterLab with ``cells`` run; ready once ``done_js`` (a JS expression) is true.

    ``limit`` seconds bound the whole test (SIGALRM). On an exception a
    screenshot ``failure.png`` goes to the test's output folder (``page.out``).
    """
    from playwright import sync_api

    root = tmp / "root"
    root.mkdir()
    _write_notebook(root / "test.ipynb", cells)
    env = dict(os.environ)
    for var, name in (("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                      ("JUPYTER_RUNTIME_DIR", "runtime")):
        (tmp / name).mkdir()
        env[var] = str(tmp / name)
    tracker = tmp / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    port = _free_port()
    log = open(tmp / "server.log", "w")

    def _alarm(signum, frame):
        raise TimeoutError(f"the browser test took more than {limit} s")

    old_handler = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit)
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
                    raise RuntimeError("JupyterLab did not start:\n" + (tmp / "server.log").read_text()[-3000:])
                time.sleep(0.3)
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            try:
                page.goto(url + "/lab/tree/test.ipynb?reset", timeout=60_000)
                page.locator("#jp-main-statusbar >> text=Idle").first.wait_for(timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                page.wait_for_function(done_js, timeout=90_000)
                page.wait_for_timeout(300)
                yield page
                stray = [r for r in requests if not r.startswith((url, "data:", "blob:"))]
                assert not stray, stray[:5]
            except BaseException:
                page.screenshot(path=str(getattr(page, "out", tmp) / "failure.png"))
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
