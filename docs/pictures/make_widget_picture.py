"""Draw the picture of the explorer on docs/widget.md: python docs/pictures/make_widget_picture.py [folder].

The picture is the explorer of the page's first example (``adv.show(tape,
target=loss, sources=[w, c])``) walked to step 3 of the backward pass, as
its static copy (:meth:`Explorer.static_html`, what a notebook exported to
HTML and the course pages of this site show) renders in headless Chromium:
the view buttons, the step slider, both graphs with the current record
outlined, and the why-None panel for ``c``. It is written to
``widget.png`` in ``folder`` (default: this file's folder).

tests/test_site.py runs this script into a temporary folder and compares
the result with the committed picture, so the picture follows the widget.
"""
import ast
import linecache
import re
import sys
import tempfile
from pathlib import Path

import autodiff_viz as adv

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
PAGE = Path(__file__).resolve().parents[1] / "widget.md"
STEP = 3
WIDTH = 1000


def explorer():
    """The explorer that the first example of docs/widget.md displays, walked to backward step :data:`STEP`.

    The example runs as a notebook cell would (its last line is the value
    shown), under the name ``widget.md``, so the why-None panel quotes the
    page's own line.
    """
    source = re.search(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M).group(1)
    tree = ast.parse(source)
    last = ast.Expression(tree.body.pop().value)
    linecache.cache["widget.md"] = (len(source), None, source.splitlines(True), "widget.md")
    adv.layers.clear_session()
    namespace = {"__name__": "widget_md"}
    exec(compile(tree, "widget.md", "exec"), namespace)
    view = eval(compile(last, "widget.md", "eval"), namespace)
    view.go(STEP)
    return view


def make(folder=Path(__file__).resolve().parent) -> Path:
    """Render the explorer's static copy in Chromium and write it to ``folder/widget.png``; returns the path."""
    from playwright.sync_api import sync_playwright
    out = Path(folder) / "widget.png"
    page_html = ("<!doctype html><meta charset='utf-8'><body style='margin:8px;font-family:sans-serif'>"
                 f"<div id='explorer' style='width:{WIDTH - 16}px'>{explorer().static_html()}</div></body>")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        page_file = Path(tmp) / "explorer.html"
        page_file.write_text(page_html, encoding="utf-8")
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900}, device_scale_factor=1)
            page.goto(page_file.as_uri())
            page.wait_for_function("() => { const f = document.querySelector('iframe');"
                                   " return f && f.contentDocument && f.contentDocument.querySelector('svg'); }")
            page.wait_for_timeout(300)                # the iframe's onload sets its height
            page.locator("#explorer").screenshot(path=str(out))
        finally:
            browser.close()
    return out


if __name__ == "__main__":
    print(make(*sys.argv[1:2]))
