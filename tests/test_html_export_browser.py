"""The standalone HTML export in a real browser: headless Chromium opens it from a file://.

Checks what a reader does with the page: it shows the forward graph, the
switch button shows the backward graph, the step buttons walk the backward
pass (the SVG changes and the current op is named), nothing is fetched from
the network, and a tensor named ``<script>…`` stays text. Screenshots go to
``$ADV_TEST_OUTPUT`` (default: a folder in the system temp dir).
"""
import os
import shutil
import signal
import tempfile

import numpy as np
import pytest

import autodiff_viz as adv

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
TIME_LIMIT_S = 120

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and shutil.which("dot")),
                                reason="needs /usr/bin/chromium and Graphviz's dot")


@pytest.fixture
def output_dir():
    path = os.environ.get("ADV_TEST_OUTPUT") or os.path.join(tempfile.gettempdir(), "autodiff_viz-test-output")
    path = os.path.join(path, "html_export")
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture
def time_limit():
    def expire(signum, frame):
        raise TimeoutError(f"the browser test ran longer than {TIME_LIMIT_S} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TIME_LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _page_file(tmp_path):
    x = adv.constant([[1.0, -2.0]], name="x")
    W = adv.Variable([[0.3, -0.1, 0.2], [0.5, 0.4, -0.6]], name="<script>window.__pwned = 1</script>")
    with adv.GradientTape() as tape:
        with adv.name_scope("dense"):
            h = adv.tanh(x @ W)
        loss = adv.sum(h * h)
    tr = tape.trace(loss)
    return tr, tr.save(tmp_path / "trace.html")


def _backward_svg(page):
    return page.inner_html("#view-backward")


def test_html_export_switches_views_and_steps_through_the_backward_pass(tmp_path, output_dir, time_limit):
    tr, path = _page_file(tmp_path)
    requests = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(15000)
            page.on("request", lambda r: requests.append(r.url))
            page.goto("file://" + os.path.abspath(path))
            page.wait_for_selector("#view-forward svg")
            page.screenshot(path=os.path.join(output_dir, "0_forward.png"), full_page=True)
            assert page.is_visible("#view-forward svg") and not page.is_visible("#view-backward svg")
            assert page.evaluate("window.__pwned") is None
            assert page.locator("#fwd_n1 text").first.text_content() == \
                "n1 · <script>window.__pwned = 1</script>"

            page.click("#show-backward")
            assert page.is_visible("#view-backward svg") and not page.is_visible("#view-forward svg")
            assert "before the backward pass" in page.text_content("#step-info")
            before = _backward_svg(page)
            page.screenshot(path=os.path.join(output_dir, "1_backward.png"), full_page=True)

            page.click("#step-next")
            first = _backward_svg(page)
            assert first != before
            assert page.text_content("#step-info").startswith(f"step 1 / {len(tr.steps)}: {tr.steps[0]}")
            current = page.eval_on_selector_all("#view-backward .adv-current", "els => els.map(e => e.id)")
            assert f"bwd_{tr.steps[0]}" in current
            page.screenshot(path=os.path.join(output_dir, "2_step1.png"), full_page=True)

            page.click("#step-next")
            assert page.text_content("#step-info").startswith(f"step 2 / {len(tr.steps)}: {tr.steps[1]}")
            done = page.eval_on_selector_all("#view-backward .adv-done", "els => els.map(e => e.id)")
            assert f"bwd_{tr.steps[0]}" in done
            assert _backward_svg(page) != first

            page.click("#step-back")
            assert _backward_svg(page) == first
            for _ in range(len(tr.steps) + 2):
                page.click("#step-next")
            assert page.text_content("#step-info").startswith(f"step {len(tr.steps)} / {len(tr.steps)}")
            page.screenshot(path=os.path.join(output_dir, "3_last_step.png"), full_page=True)

            page.click("#step-reset")
            assert _backward_svg(page) == before
            page.click("#show-forward")
            assert page.is_visible("#view-forward svg") and not page.is_visible("#view-backward svg")
        except BaseException:
            page.screenshot(path=os.path.join(output_dir, "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert requests and all(u.startswith("file://") for u in requests), requests


def test_html_export_is_self_contained(tmp_path):
    _, path = _page_file(tmp_path)
    text = open(path, encoding="utf-8").read()
    assert "<script src" not in text and "<link" not in text
    assert text.count("<svg") == 2
    assert "window.__pwned = 1</script>" not in text
    assert np.all([s in text for s in ("show-forward", "show-backward", "step-next", "step-back")])
