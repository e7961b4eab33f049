"""The site's own Sphinx extension (loaded by docs/conf.py): sections, course pages, anchors.

* :func:`slug` makes a heading's anchor as MkDocs (Python-Markdown's ``toc``)
  made it, so links such as ``rules.md#custom_gradient-a-different-gradient-for-one-function``
  written for the old site still point at their heading.
* The course: ``notebooks/*.ipynb`` is copied into ``docs/course/`` when the
  build starts (:func:`copy_notebooks`); MyST-NB executes each there.
  jupyter-cache keys a notebook by its code cells only, so a change to the
  package would leave stale outputs (or hide a notebook that now fails):
  :func:`forget_stale_outputs` empties the cache when the package, Python or
  a framework the notebooks import changed since the outputs were made.
  MyST-NB executes one notebook at a time; :func:`execute_course` runs the
  ones the cache lacks first, one per core, and caches them for it.
* The navigation: a section page (Getting started, Course, Guides) gets its
  table of contents appended when it is read (:func:`section_toc`); Guides
  lists every top-level page no other section claims, so a new
  ``docs/*.md`` is in the navigation without an edit here.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
PACKAGE = DOCS.parent / "autodiff_viz"
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
        "torch", "tf", "layers", "models", "saving", "losses", "optimizers", "callbacks", "utils", "data", "trace",
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


def fingerprint() -> str:
    """A hash of what a notebook's outputs depend on besides its code: the package's files, Python, the libraries."""
    h = hashlib.sha256(sys.version.encode())
    for dist in ("numpy", "ipywidgets", "anywidget", "graphviz", "torch", "tensorflow-cpu", "tensorflow", "keras",
                 "scikit-learn"):
        try:
            h.update(f"{dist}=={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist} missing".encode())
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".pyx", ".js", ".css", ".html", ".json"}:
            h.update(path.relative_to(PACKAGE).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def forget_stale_outputs(app, config) -> None:
    """Empty the notebook cache when :func:`fingerprint` differs from the one its outputs were made with."""
    cache = Path(config.nb_execution_cache_path)
    stamp = cache.parent / (cache.name + ".fingerprint")
    now = fingerprint()
    if stamp.exists() and stamp.read_text() == now:
        return
    shutil.rmtree(cache, ignore_errors=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(now)


def _execute_one(cache, path: Path, timeout: float) -> str | None:
    """Execute one notebook in ``docs/course/`` and cache it; a failing one is left for MyST-NB to report."""
    import nbformat
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.executors.utils import single_nb_execution
    nb = nbformat.read(path, as_version=4)
    result = single_nb_execution(nb, cwd=str(path.parent), timeout=timeout, allow_errors=False)
    if result.err is not None:
        return f"{path.name}: {type(result.err).__name__}"
    cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data={"execution_seconds": result.time}),
                                check_validity=False, overwrite=True)
    return None


def execute_course(app) -> None:
    """Execute the course notebooks the cache has no outputs for, one per core, before the pages are read.

    The build then finds every notebook in the cache. A notebook that fails
    here is not cached: MyST-NB runs it again while reading and fails the
    build with the cell and the traceback.
    """
    if app.config.nb_execution_mode != "cache":
        return
    from concurrent.futures import ThreadPoolExecutor

    import nbformat
    from jupyter_cache import get_cache
    cache = get_cache(app.config.nb_execution_cache_path)
    todo = []
    for path in sorted((Path(app.srcdir) / "course").glob("*.ipynb")):
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            todo.append(path)
    if not todo:
        return
    workers = min(len(todo), os.cpu_count() or 1)
    from sphinx.util import logging
    logger = logging.getLogger(__name__)
    logger.info(f"executing {len(todo)} course notebook(s), {workers} at a time")
    with ThreadPoolExecutor(workers) as pool:
        failed = [f for f in pool.map(lambda p: _execute_one(cache, p, app.config.nb_execution_timeout), todo) if f]
    for failure in failed:
        logger.info(f"not cached, MyST-NB will run it again and report: {failure}")


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
    app.connect("config-inited", forget_stale_outputs, priority=100)
    app.connect("builder-inited", execute_course)
    app.connect("source-read", section_toc)
    return {"parallel_read_safe": True}
