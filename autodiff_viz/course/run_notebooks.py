"""Run every teaching notebook top to bottom and keep executed HTML copies that work offline.

    python -m autodiff_viz.course.run_notebooks out/notebooks

executes ``notebooks/*.ipynb`` in name order with a kernel from the Python
running this module, stops with a non-zero exit and a message naming the
notebook and the cell on the first notebook that shows an error **or writes
anything to stderr** (in a teaching notebook a warning is a defect), and
writes one ``.html`` per notebook to the folder given.

The copies are for reading without Jupyter, offline. nbconvert's HTML loads
require.js, MathJax and the widget manager from a CDN; these copies load
nothing (:func:`offline_exporter`), and every output that also carries a
static ``text/html`` version (the explorer does, see
:meth:`autodiff_viz.widgets.explorer.Explorer.static_html`) is exported with
that version instead of its live widget.

The tests use the same two functions::

    >>> nb = execute_notebook("notebooks/00_tour.ipynb")      # doctest: +SKIP
    >>> problems(nb)                                           # doctest: +SKIP
    []
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"      # the checkout's notebooks/, beside autodiff_viz/
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DEFAULT_TIMEOUT = 60.0


class NotebookTimeout(RuntimeError):
    """A notebook ran past its time budget; the message names the notebook and the cell."""


def notebook_paths(folder=NOTEBOOKS) -> list[Path]:
    """The notebooks of ``folder`` in the order they are meant to be read (by name: ``00_``, ``01_``, ...)."""
    return sorted(Path(folder).glob("*.ipynb"))


#: The frameworks a bridge notebook imports, and the extra that installs each (``bash dev.sh tour`` installs neither).
# what to install for each (docs/install.md: the tf extra installs no TensorFlow, to keep the one a user has)
FRAMEWORKS = {"torch": "-e '.[torch]'", "tensorflow": "'tensorflow-cpu>=2.16'"}


def missing_frameworks(path) -> list[str]:
    """The frameworks (``torch``, ``tensorflow``) that notebook ``path`` imports and this Python lacks.

    The tour's set-up installs only what the notebooks 00–13 and 15 need;
    14 (PyTorch) and 16 (TensorFlow) need their framework, installed by the
    ``torch`` / ``tf`` extras (and by ``test``). Such a notebook is skipped
    with a message saying what to install, instead of failing on its import.
    """
    import importlib.util
    import re
    nb = nbformat.read(Path(path), as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return [name for name in FRAMEWORKS
            if re.search(rf"^\s*(import|from)\s+{name}\b", code, re.M) and importlib.util.find_spec(name) is None]


def execute_notebook(path, timeout: float = DEFAULT_TIMEOUT, kernel_name: str = "python3"):
    """Execute the notebook at ``path`` in its own folder and return it with its outputs.

    Args:
        path: the ``.ipynb`` file.
        timeout: seconds for the whole notebook (every cell together, kernel
            start-up excluded). Past it, :class:`NotebookTimeout`.
        kernel_name: the kernel spec; ``"python3"`` runs the Python of this
            process (Jupyter replaces a spec's plain ``python`` with it).

    Errors in cells do not stop the run: every cell executes, and
    :func:`problems` lists what went wrong, cell by cell. A kernel that dies
    raises :class:`nbclient.exceptions.DeadKernelError`.
    """
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    running = {}
    with tempfile.TemporaryDirectory(prefix="adv-kernel-") as sockets:
        # Local sockets rather than TCP: private to this user, and the kernel has nothing to warn about.
        km = AsyncKernelManager(kernel_name=kernel_name, transport="ipc", ip=os.path.join(sockets, "kernel"))
        deadline = time.monotonic() + timeout
        client = NotebookClient(nb, km=km, allow_errors=True, record_timing=False,
                                timeout_func=lambda cell: max(1.0, deadline - time.monotonic()),
                                on_cell_start=lambda cell, cell_index: running.update(index=cell_index),
                                resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute()
        except CellTimeoutError:
            i = running.get("index", 0)
            raise NotebookTimeout(f"{path.name}: did not finish within {timeout:g} s; it was still running "
                                  f"cell {i} ({_first_line(nb.cells[i])!r}).") from None
        finally:
            if km.has_kernel:
                run_sync(km.shutdown_kernel)(now=True)
    return nb


def _first_line(cell) -> str:
    lines = [ln for ln in cell.source.splitlines() if ln.strip()]
    return lines[0][:80] if lines else ""


def problems(nb) -> list[str]:
    """Every error output and every stderr output of an executed notebook, one line per problem.

    Each line names the cell (its index in the notebook, counting markdown
    cells, and its first line of code) and says what it showed.
    """
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        where = f"cell {i} ({_first_line(cell)!r})"
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                found.append(f"{where} raised {out.ename}: {out.evalue}")
            elif out.output_type == "stream" and out.name == "stderr":
                text = out.text.strip().replace("\n", "\n    ")
                found.append(f"{where} wrote to stderr (warnings are defects in a teaching notebook):\n    {text}")
    return found


def static_copy(nb):
    """A copy of ``nb`` for HTML export: outputs with a static ``text/html`` lose their live widget view.

    When no live widget view is left, the saved widget state goes too, so
    the export does not load the widget manager from the network at all.
    """
    nb = copy.deepcopy(nb)
    live = False
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                if "text/html" in data:
                    del data[WIDGET_VIEW]
                else:
                    live = True
    if not live:
        nb.metadata.pop("widgets", None)
    return nb


OFFLINE_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
"""


def offline_exporter():
    """nbconvert's HTML exporter without anything it would load from a CDN.

    The ``lab`` template loads require.js, MathJax, mermaid and the widget
    manager from cdnjs / unpkg; offline they fail with errors in the console.
    This template leaves them out: the notebooks' text needs no MathJax (their
    formulas are written in Unicode), and every widget output worth keeping
    carries its own static HTML (:func:`static_copy`). Styles are inlined by
    nbconvert already.
    """
    import jinja2
    from nbconvert import HTMLExporter
    return HTMLExporter(extra_loaders=[jinja2.DictLoader({"adv_offline.html.j2": OFFLINE_TEMPLATE})],
                        template_file="adv_offline.html.j2")


def export_html(nb, path) -> Path:
    """Write the executed notebook ``nb`` as HTML to ``path`` (:func:`static_copy`; no CDN:
    :func:`offline_exporter`)."""
    body, _ = offline_exporter().from_notebook_node(static_copy(nb))
    path = Path(path)
    path.write_text(body, encoding="utf-8")
    return path


def run_all(out_dir, folder=NOTEBOOKS, timeout: float = DEFAULT_TIMEOUT, log=print) -> list[Path]:
    """Execute every notebook in ``folder``; write the HTML copies to ``out_dir``; return their paths.

    Raises :class:`RuntimeError` naming the notebook and its problems at the first notebook with any.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = notebook_paths(folder)
    if not paths:
        raise RuntimeError(f"no notebooks found in {folder}")
    written = []
    for path in paths:
        missing = missing_frameworks(path)
        if missing:
            install = " ".join(FRAMEWORKS[m] for m in missing)
            log(f"skip {path.name}: it needs {' and '.join(missing)} (pip install {install})")
            continue
        start = time.monotonic()
        try:
            nb = execute_notebook(path, timeout=timeout)
        except DeadKernelError as exc:
            raise RuntimeError(f"{path.name}: the kernel died ({exc}).") from None
        found = problems(nb)
        if found:
            raise RuntimeError(f"{path.name} has {len(found)} problem(s):\n  " + "\n  ".join(found))
        written.append(export_html(nb, out_dir / (path.stem + ".html")))
        log(f"ok   {path.name}  ({time.monotonic() - start:.1f} s) -> {written[-1]}")
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autodiff_viz.course.run_notebooks",
                                     description="Execute every notebook and write executed HTML copies.")
    parser.add_argument("out_dir", nargs="?", default="out/notebooks", help="folder for the HTML copies")
    parser.add_argument("--notebooks", default=str(NOTEBOOKS), help="folder of the .ipynb files")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per notebook")
    args = parser.parse_args(argv)
    # The kernel inherits this: Python 3.11's debugger otherwise warns about frozen modules at start-up.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        written = run_all(args.out_dir, args.notebooks, args.timeout)
    except (RuntimeError, NotebookTimeout) as exc:
        print(f"run_notebooks: FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"{len(written)} notebook(s) ran cleanly; HTML copies in {Path(args.out_dir).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
