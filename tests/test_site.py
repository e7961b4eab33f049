"""The docs site is a course site: it builds strictly and offline, with every notebook a page.

The site is Sphinx + MyST-NB + the PyData theme (``docs/conf.py``,
``docs/site_ext.py``). One strict build (``-W``: any warning fails it) into a
temporary folder serves the checks below; the notebooks' outputs come from
the jupyter-cache in ``docs/_build/.jupyter_cache`` and are made again when a
notebook's code, the package or a framework changed (``site_ext``), so a
second run with nothing changed reads the cache instead of running 17
notebooks. To build it by hand::

    python -m sphinx -W -j 2 -b html docs docs/_build/html

What a reader relies on, each a test: the navigation has Getting started,
Course, Guides, Reference; every page of ``docs/`` and every notebook of
``notebooks/`` is a page, the notebooks with their outputs and pictures and
in course order; the API reference documents the public names; nothing is
loaded from the network; a broken link or anchor, or a notebook that writes
to stderr, fails the build; the widget page's picture is the widget as it is.
"""
from __future__ import annotations

import html
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("myst_nb", reason="the docs site needs the `docs` extra (Sphinx 9: Python 3.11 or newer)")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BUILD_TIMEOUT = 1200         # a first build executes every notebook; on a loaded machine that takes minutes


def sphinx_build(source: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """``sphinx-build -W --keep-going -j 2`` of ``source`` into ``out/html`` with this Python; the package is
    the one of this checkout (also in the notebooks' kernels)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)     # the kernels get a learner's environment (tests/conftest.py sets it)
    return subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-j", "2", "-q",
                           "-d", str(out / "doctrees"), *extra, str(source), str(out / "html")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = sphinx_build(DOCS, out)
    assert run.returncode == 0, f"the strict docs build failed:\n{run.stderr[-6000:]}"
    return out / "html"


def _page(site: Path, name: str) -> str:
    return (site / name).read_text(encoding="utf-8")


def test_navigation_has_getting_started_course_guides_reference_in_order(site):
    index = _page(site, "index.html")
    header = re.search(r'<ul class="bd-navbar-elements navbar-nav">(.*?)</ul>', index, re.S).group(1)
    links = re.findall(r'href="([^"#]+)"', header)
    assert links == ["getting-started.html", "course.html", "guides.html", "reference/index.html"], links


def test_every_docs_page_and_every_notebook_is_a_page(site):
    pages = [p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    missing = [str(p) for p in pages if not (site / p).is_file()]
    missing += [f"course/{nb.stem}.html" for nb in NOTEBOOKS if not (site / "course" / f"{nb.stem}.html").is_file()]
    assert not missing, f"not built: {missing}"


def test_every_guide_is_listed_on_the_guides_page(site):
    """A new docs/*.md is a guide without an edit to the configuration (the other sections claim theirs)."""
    guides = _page(site, "guides.html")
    own = {"index", "getting-started", "course", "guides", "install"}
    for page in sorted(DOCS.glob("*.md")):
        if page.stem not in own:
            assert f'href="{page.stem}.html"' in guides, f"{page.name} is not in the Guides section"


def test_the_course_page_lists_the_notebooks_in_order(site):
    course = _page(site, "course.html")
    toc = re.search(r'class="toctree-wrapper[^"]*">(.*?)</div>', course, re.S).group(1)
    listed = re.findall(r'href="course/([^"#]+)\.html"', toc)
    assert listed == [nb.stem for nb in NOTEBOOKS]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_a_notebook_page_shows_every_code_cell_with_its_outputs_and_pictures(site, notebook):
    nb = nbformat.read(notebook, as_version=4)
    page = _page(site, f"course/{notebook.stem}.html")
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert page.count('class="cell_input') == len(code_cells)
    assert page.count('class="cell_output') >= len(code_cells) // 2, "most cells show an output"
    outputs = page[page.index('class="cell_output'):]
    assert re.search(r"<svg\b|<img\b|&lt;svg", outputs), "the page shows none of the notebook's pictures"
    assert "Traceback" not in outputs
    assert 'class="output stderr"' not in outputs and 'class="output error"' not in outputs


def test_the_api_reference_documents_the_public_names(site):
    """Every documented class and function of the face, the Keras-style modules and the bridges has an entry."""
    documented = set()
    for page in (site / "reference").glob("*.html"):
        documented |= {i.rsplit(".", 1)[-1] for i in re.findall(r'<dt class="sig[^"]*" id="([^"]+)"', _page(
            site, f"reference/{page.name}"))}
    missing = {}
    for name in ("autodiff_viz", "autodiff_viz.layers", "autodiff_viz.losses", "autodiff_viz.metrics",
                 "autodiff_viz.optimizers", "autodiff_viz.callbacks", "autodiff_viz.torch", "autodiff_viz.tf"):
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [n for n, v in vars(module).items()
                                                       if getattr(v, "__module__", None) == name]
        # the dtype names (adv.float32 …) are numpy's own objects, documented by numpy
        public = [n for n in names if not n.startswith("_") and getattr(module, n).__doc__
                  and getattr(getattr(module, n), "__module__", None) != "numpy"
                  and (inspect.isclass(getattr(module, n)) or inspect.isfunction(getattr(module, n)))]
        gaps = [n for n in public if getattr(module, n).__name__ not in documented and n not in documented
                and not n.startswith(("Convolution", "SeparableConvolution"))]     # Keras' aliases of Conv*
        if gaps:
            missing[name] = gaps
    assert not missing, f"public names with no entry in the API reference: {missing}"


REMOTE_TAG = re.compile(r"""<(?:script|link|img|iframe|source|video|audio)\b[^>]*?\b(?:src|href)\s*=\s*["']?"""
                        r"""(?:https?:)?//""", re.I)
REMOTE_CSS = re.compile(r"""@import\s+(?:url\()?\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""", re.I)


def test_nothing_is_loaded_from_the_network(site):
    """No CDN script, web font or style: every asset of every page is in the site (static copies of the
    explorer included: their HTML is inside an ``<iframe srcdoc>``, read unescaped)."""
    found = []
    for path in site.rglob("*.html"):
        text = html.unescape(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(site)}: {m.group(0)}" for m in REMOTE_TAG.finditer(text)]
        found += [f"{path.relative_to(site)}: {m.group(0)}" for m in REMOTE_CSS.finditer(text)]
    for path in site.rglob("*.css"):
        found += [f"{path.relative_to(site)}: {m.group(0)}" for m in REMOTE_CSS.finditer(path.read_text("utf-8"))]
    assert not found, found[:10]
    assert not list(site.rglob("*mathjax*")) and "fonts.googleapis" not in _page(site, "index.html")


def test_the_widget_page_shows_the_committed_picture(site):
    page = _page(site, "widget.html")
    image = re.search(r'<img[^>]+src="(_images/widget[^"]*\.png)"', page)
    assert image, "docs/widget.md shows no picture of the widget"
    assert (site / image.group(1)).read_bytes() == (DOCS / "pictures" / "widget.png").read_bytes()


@pytest.mark.skipif(not (os.path.exists("/usr/bin/chromium") and shutil.which("dot")),
                    reason="the picture is drawn by Graphviz and rendered by Debian's Chromium")
def test_the_widget_picture_is_the_widget_as_it_is(tmp_path):
    """docs/pictures/make_widget_picture.py renders the explorer of the page's example again; the committed
    picture must be what it makes (a few pixels of antialiasing may differ)."""
    from PIL import Image, ImageChops
    run = subprocess.run([sys.executable, str(DOCS / "pictures" / "make_widget_picture.py"), str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stderr
    made, committed = Image.open(tmp_path / "widget.png"), Image.open(DOCS / "pictures" / "widget.png")
    assert made.size == committed.size, (
        f"the widget picture changed size ({committed.size} -> {made.size}): "
        "run python docs/pictures/make_widget_picture.py and commit docs/pictures/widget.png")
    diff = ImageChops.difference(made.convert("RGB"), committed.convert("RGB")).convert("L")
    changed = sum(diff.point(lambda v: 255 if v > 32 else 0).histogram()[255:]) / (made.size[0] * made.size[1])
    assert changed < 0.002, (f"{changed:.1%} of the widget picture's pixels changed: run python "
                             "docs/pictures/make_widget_picture.py and commit docs/pictures/widget.png")


def _small_site(tmp_path: Path, pages: dict) -> Path:
    """A site of a few pages with the real configuration (docs/conf.py), for the failure cases."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(DOCS)!r})
        __file__ = {str(DOCS / "conf.py")!r}
        exec(compile(open(__file__, encoding="utf-8").read(), __file__, "exec"))
        nb_execution_cache_path = {str(tmp_path / "cache")!r}
        """))
    for name, text in pages.items():
        (src / name).write_text(text, encoding="utf-8")
    return src


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    src = _small_site(tmp_path, {
        "index.md": "# Home\n\n## A section\n\n[ok](#a-section), [gone](other.md), [no heading](page.md#nowhere)\n\n"
                    "```{toctree}\npage\n```\n",
        "page.md": "# Page\n\nText.\n"})
    run = sphinx_build(src, tmp_path / "out")
    assert run.returncode != 0
    assert "other.md" in run.stderr and "nowhere" in run.stderr
    assert "a-section" not in run.stderr                   # a heading's anchor, spelled as MkDocs made it, resolves


def test_a_notebook_writing_to_stderr_fails_the_build(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lesson"),
                                         nbformat.v4.new_code_cell("import sys\nprint('careful', file=sys.stderr)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = _small_site(tmp_path, {"index.md": "# Home\n\n```{toctree}\nlesson\n```\n"})
    nbformat.write(nb, src / "lesson.ipynb")
    run = sphinx_build(src, tmp_path / "out")
    assert run.returncode != 0 and "stderr" in run.stderr.lower() and "lesson" in run.stderr


MKDOCS_ONLY = [
    (re.compile(r"^\s*(?:!!!|\?\?\?\+?) ?\w+"),
     'an admonition in MkDocs\' spelling; write :::{admonition} Title / :class: note / text / ::: (or :::{note})'),
    (re.compile(r"^::: [\w.]+\s*$"),
     "an mkdocstrings block; write ```{eval-rst} / .. automodule:: name / :members: / ``` (see docs/reference/)"),
]


def test_pages_use_no_mkdocs_only_syntax():
    """Syntax the MkDocs site read renders as plain text here, without a warning: name the line and the fix."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        if "_build" in page.parts:
            continue
        in_code = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith(("```", "~~~")):
                in_code = not in_code
            for pattern, fix in MKDOCS_ONLY:
                if not in_code and pattern.match(line):
                    found.append(f"{page.relative_to(ROOT)}:{number}: {fix}")
    assert not found, "\n".join(found)
