"""The docs site: Sphinx with MyST-NB and the PyData theme (why: docs/architecture.md, "The docs site").

    python -m sphinx -W -b html docs docs/_build/html      # tests/test_site.py runs this, strict

What a build does:

* **Pages** are the Markdown files under ``docs/`` (MyST: CommonMark plus
  ``:::{note}`` admonitions and ``{automodule}`` directives for the API
  reference). The navigation has four sections, each a page with its own
  table of contents: Getting started, Course, Guides, Reference. Every
  top-level ``docs/*.md`` that no other section claims is a guide, so a new
  page appears without an edit here (:mod:`site_ext`).
* **The course**: every ``notebooks/*.ipynb`` is copied to ``docs/course/``
  (build input, not committed) and executed at build through jupyter-cache
  (``docs/_build/.jupyter_cache``): a notebook runs again only when a code
  cell changed. The notebooks are committed without outputs; the site shows
  the outputs of this run, pictures included. An error in a cell or any
  stderr output fails the build.
* **Strict**: run with ``-W``, every warning fails the build: a link to a
  page or an anchor that does not exist, a page in no table of contents, a
  docstring the reference cannot import. No link is checked over the network.
* **Offline**: no CDN, no web font, no MathJax (the pages write formulas in
  Unicode), no widget manager (an explorer output is shown through the static
  ``text/html`` copy it carries). The test checks the built HTML and CSS.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
NOTEBOOKS = ROOT / "notebooks"
COURSE = DOCS / "course"
sys.path[:0] = [str(ROOT), str(DOCS)]

# the notebooks' kernels inherit this environment: TensorFlow quiet on the CPU, as in the notebook tests
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

project = "autodiff_viz"
author = "the autodiff_viz authors"
copyright = "the autodiff_viz authors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "site_ext",
]
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "pictures/*.py", "*.py"]
root_doc = "index"
default_role = "code"          # `x` in a docstring is code, as it was on the MkDocs site
suppress_warnings = [
    "myst.header",         # a page may go from its title to ### (the ops reference does)
    "toc.empty_glob",      # the reference's `*` (pages not yet in its order) may match none
]

# MyST: the Markdown of the pages and of the notebooks' text cells
myst_enable_extensions = ["colon_fence", "attrs_inline"]
myst_heading_anchors = 4


myst_heading_slug_func = "site_ext.slug"    # the anchors MkDocs made, so the pages' #anchors keep working

# MyST-NB: execute the course at build, through a cache
nb_execution_mode = "cache"
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_output_stderr = "severe"           # a warning in a teaching notebook is a defect: fail the build
nb_merge_streams = True
nb_ipywidgets_js = {}                  # no require.js or widget manager from a CDN
# an explorer output carries a static text/html copy: show that instead of the live widget view
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]

# API reference
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# HTML: the PyData theme, with nothing loaded from the network
html_theme = "pydata_sphinx_theme"
html_title = "autodiff_viz"
html_static_path: list[str] = []
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "navbar_end": ["theme-switcher"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": []}


def _drop_embedded_signature(app, what, name, obj, options, lines):
    """Compiled functions (Cython's ``embedsignature``) start their docstring with ``name(signature)``; the page
    shows the signature already, and its ``*`` would read as reStructuredText emphasis."""
    short = name.rsplit(".", 1)[-1]
    own = getattr(obj, "__name__", short)
    if lines and lines[0].startswith((f"{short}(", f"{own}(")) and ")" in lines[0]:
        del lines[0]
        while lines and not lines[0].strip():
            del lines[0]


def setup(app):
    app.connect("autodoc-process-docstring", _drop_embedded_signature)
