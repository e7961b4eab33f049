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


def _canvas(page):
    return page.inner_html(".adv-gv-canvas")


GRAD_SHOWN_JS = """() => Array.from(document.querySelectorAll('.adv-gv-canvas .adv-t-grad'))
  .filter(e => getComputedStyle(e).visibility !== 'hidden' && getComputedStyle(e).display !== 'none')
  .map(e => e.textContent).filter(t => t.trim())"""


def test_html_export_steps_folds_and_fits_like_the_explorer(tmp_path, output_dir, time_limit):
    tr, path = _page_file(tmp_path)
    requests = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.set_default_timeout(15000)
            page.on("request", lambda r: requests.append(r.url))
            page.goto("file://" + os.path.abspath(path))
            page.wait_for_selector(".adv-gv-canvas svg")
            page.screenshot(path=os.path.join(output_dir, "0_forward.png"), full_page=True)
            assert page.evaluate("window.__pwned") is None
            right = page.evaluate("document.querySelector('.adv-gv-canvas svg').getBoundingClientRect().right")
            assert right <= page.evaluate("document.documentElement.clientWidth")
            assert page.locator("#fwd_g0").count() == 1          # the dense layer, folded by meaning

            page.click("#show-backward")
            page.wait_for_selector(".adv-gv-canvas #bwd_g0")
            step = page.locator(".adv-gv-step")
            assert step.inner_text().startswith(f"step 1 / {len(tr.steps)}")
            first = _canvas(page)
            current = page.eval_on_selector_all(".adv-gv-canvas .adv-current", "els => els.map(e => e.id)")
            assert current == [f"bwd_{tr.steps[0]}"]
            page.screenshot(path=os.path.join(output_dir, "1_backward_step1.png"), full_page=True)

            page.click("button[data-a='next']")
            assert step.inner_text().startswith(f"step 2 / {len(tr.steps)}")
            assert _canvas(page) != first
            page.click("button[data-a='back']")
            assert _canvas(page) == first

            page.click("button[data-a='back']")                  # step 0: only the seed is known
            assert step.inner_text().startswith("step 0 /")
            assert page.evaluate(GRAD_SHOWN_JS) == ["ḡ = 1 (seed)"]
            page.fill(".adv-gv-slider", str(len(tr.steps)))
            page.dispatch_event(".adv-gv-slider", "input")
            assert len(page.evaluate(GRAD_SHOWN_JS)) > 1

            page.click("#bwd_g0")                                # open the folded layer in place
            page.wait_for_selector(".adv-gv-canvas .adv-gv-crumb, .adv-gv-crumbs button")
            evil = "<script>window.__pwned = 1</script>"
            texts = page.eval_on_selector_all(".adv-gv-canvas g.node text", "els => els.map(e => e.textContent)")
            assert evil in texts and page.evaluate("window.__pwned") is None
            page.screenshot(path=os.path.join(output_dir, "2_opened.png"), full_page=True)
            page.click(".adv-gv-crumbs button[data-a='collapse_all']")
            page.wait_for_selector(".adv-gv-canvas #bwd_g0")

            page.click("#show-tape")
            page.wait_for_selector(".adv-gv-canvas table.adv-tape-table")
            page.click("button[data-a='back']")
            page.fill(".adv-gv-slider", "0")
            page.dispatch_event(".adv-gv-slider", "input")
            assert page.evaluate(GRAD_SHOWN_JS) == ["1"]        # the tape at step 0: the seed's ḡ only
            page.screenshot(path=os.path.join(output_dir, "3_tape_step0.png"), full_page=True)
        except BaseException:
            page.screenshot(path=os.path.join(output_dir, "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert requests and all(u.startswith("file://") for u in requests), requests


def test_html_export_is_self_contained(tmp_path):
    _, path = _page_file(tmp_path)
    text = open(path, encoding="utf-8").read()
    assert "<script src" not in text and "<link" not in text and "http" not in text.replace("http://www.w3.org", "")
    assert text.count("<svg") == 2                           # forward and backward inline; other states as JSON
    assert "window.__pwned = 1</script>" not in text
    assert all(s in text for s in ("show-forward", "show-backward", "show-tape", "advMount"))
