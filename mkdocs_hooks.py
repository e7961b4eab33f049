"""MkDocs hook: Sphinx roles in docstrings render as plain code on the API reference pages.

Docstrings in the package write ``:class:`Variable` `` or
``:func:`~autodiff_viz.core.engine.backward` `` (Sphinx style, read by ``help()``
and IDEs as well). mkdocstrings renders the backticks as code and leaves the
role as text, so a page would show ``:class:Variable``. This hook drops the
role, and a leading ``~`` shortens the name to its last part, as Sphinx does.
"""
from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|meth|func|data|attr|mod|exc|obj):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match) -> str:
    short, name = match.group(1), match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if short else name}</code>"


def on_page_content(html: str, **kwargs) -> str:
    return ROLE.sub(_plain, html)


def on_page_markdown(markdown: str, **kwargs) -> str:
    """docs/reference/ops.md: the table of every rule is regenerated from ``adv.rules.TABLE`` at each build."""
    from pathlib import Path
    import sys
    tests = str(Path(__file__).resolve().parent / "tests")
    if "<!-- ops-table:start" not in markdown:
        return markdown
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from make_ops_table import page_with_table
    return page_with_table(markdown)
