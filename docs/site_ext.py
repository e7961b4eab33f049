"""The site's own Sphinx extension (loaded by docs/conf.py): sections, course pages, anchors.

* :func:`slug` makes a heading's anchor as MkDocs (Python-Markdown's ``toc``)
  made it, so links such as ``rules.md#custom_gradient-a-different-gradient-for-one-function``
  written for the old site still point at their heading.
* The course: ``notebooks/*.ipynb`` is copied into ``docs/course/`` when the
  build starts (:func:`copy_notebooks`); MyST-NB executes each there.
* The navigation: a section page (Getting started, Course, Guides) gets its
  table of contents appended when it is read (:func:`section_toc`); Guides
  lists every top-level page no other section claims, so a new
  ``docs/*.md`` is in the navigation without an edit here.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

DOCS = Path(__file__).resolve().parent
NOTEBOOKS = DOCS.parent / "notebooks"
COURSE = DOCS / "course"


def slug(title: str) -> str:
    """``"Why backwards?"`` → ``why-backwards``: word characters, spaces and hyphens kept, runs of them one ``-``."""
    text = re.sub(r"[^\w\s-]", "", title).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


# Each section page: the pages its table of contents lists first, in this order (those that exist), and the
# folder whose other pages follow by name (None: no others). A new page under docs/ or docs/reference/ is
# listed without an edit here; the course lists every notebook, in order.
SECTIONS = {
    "getting-started": (["install"], None),
    "course": ([], "course"),
    "guides": (["concepts/index", "why-none", "exercise-mode", "pytorch", "tensorflow", "numpy-functions", "layers",
                "traces", "pictures", "widget", "data", "coming-from", "performance", "architecture"], ""),
    "reference/index": (["reference/" + name for name in (
        "ops", "linalg", "random", "tensor", "tape", "transforms", "gradcheck", "rules", "diagnosis", "compare",
        "torch", "layers", "models", "saving", "losses", "optimizers", "callbacks", "utils", "data", "trace",
        "widgets", "plots")], "reference"),
}
NOT_GUIDES = {"index", "getting-started", "course", "guides"}


def copy_notebooks() -> None:
    """``notebooks/*.ipynb`` into ``docs/course/``: a file is rewritten only when it changed; gone ones go."""
    COURSE.mkdir(exist_ok=True)
    wanted = {p.name: p for p in sorted(NOTEBOOKS.glob("*.ipynb"))}
    for old in COURSE.glob("*.ipynb"):
        if old.name not in wanted:
            old.unlink()
    for name, source in wanted.items():
        target = COURSE / name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copyfile(source, target)


def toc_entries(docname: str) -> list[str]:
    """The pages a section page lists: its named ones that exist, then the rest of its folder by name."""
    first, folder = SECTIONS[docname]
    pages = {p.relative_to(DOCS).with_suffix("").as_posix()
             for p in [*DOCS.rglob("*.md"), *COURSE.glob("*.ipynb")] if "_build" not in p.parts}
    entries = [e for e in first if e in pages]
    if folder is not None:
        claimed = NOT_GUIDES | {docname} | {e for named, _ in SECTIONS.values() for e in named} | set(SECTIONS)
        entries += sorted(p for p in pages if p.rpartition("/")[0] == folder and p not in claimed)
    return entries


def section_toc(app, docname: str, source: list[str]) -> None:
    """Append a section page's table of contents, so the navigation lists its pages (shown on the page
    for the course and the guides; Getting started only links its pages from the text)."""
    if docname in SECTIONS:
        entries = "\n".join("/" + e for e in toc_entries(docname))     # from docs/, not from the page
        hidden = ":hidden:\n" if docname == "getting-started" else ""
        source[0] += f"\n\n```{{toctree}}\n{hidden}:maxdepth: 1\n\n{entries}\n```\n"


def setup(app):
    copy_notebooks()
    app.connect("source-read", section_toc)
    return {"parallel_read_safe": True}
