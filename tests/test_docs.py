"""Every example in the docs runs and prints what the page shows.

The promise to a reader of ``docs/`` (the site's build, links, course pages
and assets are checked by ``tests/test_site.py``):

Every fenced code block whose info string starts with ``python`` is
executed, page by page, in order, in one namespace per page (so a later
block may use names from an earlier one). A block must not raise nor warn.
When a ``python`` block is followed (before the next ``python`` block) by a
block titled Output::

    ```text title="Output"
    6.0
    ```

the text the ``python`` block printed must equal that block (trailing
spaces ignored), so every number a page shows is produced by the code
shown.

Markers: a block written ```` ```python {skip} ```` (or ``{.python .skip}``)
is shown but not run. Use it only for code that opens a GUI (JupyterLab, a
browser); everything else must run here, in a few seconds.

Adding a page: put the ``.md`` file under ``docs/``; a top-level page is in
the Guides section of the site without more (``docs/site_ext.py``).
"""
from __future__ import annotations

import contextlib
import gc
import io
import linecache
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>.*)$")
OUTPUT_TITLE = re.compile(r"""title=["']Output["']""")


def fenced_blocks(text: str) -> list[dict]:
    """Every fenced block of a Markdown page: its info string, body and first line number.

    Fences may be indented (inside admonitions or tabs); the body loses that indent.
    """
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, info = m.group("indent"), m.group("ticks"), m.group("info").strip()
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(ticks) and lines[j].strip(ticks[0]).strip() == ""
                                      and lines[j].startswith(indent)):
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        blocks.append({"info": info, "body": "\n".join(body) + "\n", "line": i + 1})
        i = j + 1
    return blocks


def _kind(info: str) -> str:
    """``python``, ``skip`` (a python block not to run), ``output`` or ``other``."""
    words = info.replace("{", " ").replace("}", " ").replace(".", " ").split()
    if words and words[0] == "python":
        return "skip" if "skip" in words[1:] else "python"
    if OUTPUT_TITLE.search(info):
        return "output"
    return "other"


def examples(text: str) -> list[tuple[dict, dict | None]]:
    """Each python block to run, paired with the Output block that shows what it prints (or None)."""
    pairs, current = [], None
    for block in fenced_blocks(text):
        kind = _kind(block["info"])
        if kind == "python":
            current = [block, None]
            pairs.append(current)
        elif kind == "output":
            assert current is not None and current[1] is None, (
                f"line {block['line']}: an Output block must follow the python block that prints it "
                "(one Output block per python block)")
            current[1] = block
        elif kind == "skip":
            current = None
    return [tuple(p) for p in pairs]


def _same_text(a: str) -> str:
    return "\n".join(line.rstrip() for line in a.strip("\n").splitlines())


PAGES = sorted(p for p in DOCS.rglob("*.md") if examples(p.read_text(encoding="utf-8")))


@pytest.fixture
def restore_rule_table():
    """Pages may add rules (adv.rules.define); take them out again so other tests see the real table."""
    from autodiff_viz.core import rules
    saved = dict(rules.TABLE)
    yield
    rules.TABLE.clear()
    rules.TABLE.update(saved)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_code_blocks_run_and_print_what_the_page_shows(page, restore_rule_table, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # an example that writes a file writes it here
    namespace = {"__name__": f"docs.{page.stem}"}
    for block, shown in examples(page.read_text(encoding="utf-8")):
        where = f"{page.relative_to(ROOT)}:{block['line']}"
        printed = io.StringIO()
        gc.collect()        # garbage of earlier tests (a kernel client's sockets) must not warn inside a block
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
            warnings.simplefilter("always")
            try:
                linecache.cache[where] = (len(block["body"]), None, block["body"].splitlines(True), where)
                exec(compile(block["body"], where, "exec"), namespace)
            except Exception as exc:     # the page and line make the failure findable
                raise AssertionError(f"the example at {where} raised {type(exc).__name__}: {exc}") from exc
        assert not caught, f"the example at {where} warned: {[str(w.message) for w in caught]}"
        if shown is not None:
            assert _same_text(printed.getvalue()) == _same_text(shown["body"]), (
                f"the Output block after {where} does not match what the code prints.\n"
                f"--- printed ---\n{printed.getvalue()}--- shown ---\n{shown['body']}")


def test_fence_parser_pairs_outputs_and_honours_skip():
    page = ("```python\nprint(6.0)\n```\n\ntext\n\n```text title=\"Output\"\n6.0\n```\n\n"
            "```python {skip}\nopen_gui()\n```\n\n!!! note\n    ```python\n    x = 1\n    ```\n")
    pairs = examples(page)
    assert [p[0]["body"] for p in pairs] == ["print(6.0)\n", "x = 1\n"]
    assert pairs[0][1]["body"] == "6.0\n" and pairs[1][1] is None
