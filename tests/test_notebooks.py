"""The teaching notebooks run cleanly, are committed clean, and export to HTML that works offline.

Every ``notebooks/*.ipynb`` is picked up by name, so a new notebook is tested
without touching this file. The harness itself (``autodiff_viz.course.run_notebooks``)
is checked on small notebooks written here: it must catch an error, a warning
and a notebook that runs too long, and name the cell.
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import nbformat
import pytest

from autodiff_viz.course import run_notebooks
from autodiff_viz.course.run_notebooks import WIDGET_VIEW, execute_notebook, notebook_paths, problems

NOTEBOOKS = notebook_paths()
BUDGET = 60.0     # seconds per notebook, every cell together (the limit the issue sets)


def _write(folder, name, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) if not c.startswith("#md ") else
                nbformat.v4.new_markdown_cell(c[4:]) for c in cells]
    path = folder / name
    nbformat.write(nb, path)
    return path


# ----- the notebooks themselves ---------------------------------------------------
def test_the_tour_and_the_first_notebooks_exist():
    names = {p.name for p in NOTEBOOKS}
    for name in ("00_tour.ipynb", "01_the_tape_and_the_chain_rule.ipynb",
                 "02_jacobian_vs_summed_gradient.ipynb", "03_chain_rule_in_parts.ipynb"):
        assert name in names


@pytest.mark.timeout(BUDGET + 120)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_without_errors_or_warnings(path, capfd, monkeypatch):
    """No error, no stderr output in a cell, and nothing on the kernel's own stderr either: a C++ library's
    log lines (TensorFlow's absl) are written to file descriptor 2 below Python, which the kernel process
    inherits from this one, so ``capfd`` sees them. The kernel gets a learner's environment: without the
    oneDNN switch that tests/conftest.py sets for TensorFlow's reference values."""
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    capfd.readouterr()
    nb = execute_notebook(path, timeout=BUDGET)
    assert problems(nb) == []
    assert _kernel_stderr(capfd) == "", f"{path.name}: the kernel wrote to stderr"
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code and all(c.execution_count is not None for c in code)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_has_no_outputs_and_prose_first(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {i} has outputs; clear them before committing"
            assert cell.execution_count is None, f"cell {i} has an execution count; clear it"
    assert nb.cells[0].cell_type == "markdown", "a notebook opens with prose"
    assert any("exercise" in c.source.lower() for c in nb.cells if c.cell_type == "markdown")


# ----- the harness -----------------------------------------------------------------
def test_problems_names_the_cell_of_an_error_and_of_a_warning(tmp_path):
    path = _write(tmp_path, "bad.ipynb", "#md prose", "x = 1", "import warnings\nwarnings.warn('careful')",
                  "1 / 0", "print('still runs')")
    nb = execute_notebook(path, timeout=30)
    found = problems(nb)
    assert len(found) == 2
    assert found[0].startswith("cell 2 ('import warnings')") and "UserWarning: careful" in found[0]
    assert found[1] == "cell 3 ('1 / 0') raised ZeroDivisionError: division by zero"
    assert nb.cells[4].outputs[0].text == "still runs\n"


def _kernel_stderr(capfd) -> str:
    return capfd.readouterr().err


def test_a_log_line_written_below_python_to_stderr_fails_the_notebook_test(tmp_path, capfd):
    """TensorFlow's C++ (absl) log lines go to file descriptor 2, not through ``sys.stderr``, so the cell
    shows no stderr output to ``problems``; the kernel's stderr, which the notebook test reads, has them
    (notebook 16 must have none: ``adv.tf`` sets ``TF_CPP_MIN_LOG_LEVEL`` before TensorFlow loads)."""
    path = _write(tmp_path, "native.ipynb", "#md prose",
                  "import os\nos.write(2, b'I0000 cpu_feature_guard.cc:227] optimized\\n')")
    capfd.readouterr()
    nb = execute_notebook(path, timeout=30)
    assert "cpu_feature_guard" in "\n".join(problems(nb)) + _kernel_stderr(capfd)


def test_the_kernel_is_this_python(tmp_path):
    import sys
    nb = execute_notebook(_write(tmp_path, "which.ipynb", "import sys; print(sys.executable)"), timeout=30)
    assert nb.cells[0].outputs[0].text.strip() == sys.executable


def test_a_notebook_past_its_budget_is_stopped_and_the_cell_named(tmp_path):
    path = _write(tmp_path, "slow.ipynb", "x = 1", "import time\ntime.sleep(60)")
    with pytest.raises(run_notebooks.NotebookTimeout, match=r"slow.ipynb: did not finish within 3 s; .*cell 1 "
                                                            r"\('import time'\)"):
        execute_notebook(path, timeout=3)


def test_main_fails_with_the_notebook_and_cell_and_writes_nothing_for_it(tmp_path, capsys):
    folder = tmp_path / "nbs"
    folder.mkdir()
    _write(folder, "00_ok.ipynb", "print(1)")
    _write(folder, "01_bad.ipynb", "#md prose", "import numpy as np\nnp.log(-1.0)")
    out = tmp_path / "html"
    assert run_notebooks.main([str(out), "--notebooks", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "01_bad.ipynb has 1 problem(s)" in err
    assert "cell 1 ('import numpy as np') wrote to stderr" in err and "RuntimeWarning" in err
    assert (out / "00_ok.html").exists() and not (out / "01_bad.html").exists()


class _Frames(HTMLParser):
    """Collects the ``srcdoc`` of every iframe (the parser unescapes attribute values)."""

    def __init__(self):
        super().__init__()
        self.srcdocs = []

    def handle_starttag(self, tag, attrs):
        if tag == "iframe":
            self.srcdocs.extend(v for k, v in attrs if k == "srcdoc")


def test_html_copy_shows_the_explorer_graph_without_a_widget_manager(tmp_path, capsys):
    folder = tmp_path / "nbs"
    folder.mkdir()
    _write(folder, "00_explorer.ipynb", "#md An explorer.",
           "import autodiff_viz as adv\n"
           "w = adv.Variable([0.5, -1.0], name='w_weights')\n"
           "c = adv.constant([1.0, 2.0], name='c')\n"
           "with adv.GradientTape() as tape:\n"
           "    loss = adv.sum(adv.tanh(w) * c)\n"
           "adv.show(tape, target=loss, sources=[w, c])")
    out = tmp_path / "html"
    assert run_notebooks.main([str(out), "--notebooks", str(folder)]) == 0
    assert str(out.resolve()) in capsys.readouterr().out

    page = (out / "00_explorer.html").read_text(encoding="utf-8")
    assert WIDGET_VIEW not in page and "html-manager" not in page and "embed-amd" not in page
    frames = _Frames()
    frames.feed(page)
    assert len(frames.srcdocs) == 1
    inner = frames.srcdocs[0]
    assert inner.count("<svg") == 3                     # forward, backward, and both side by side (the
                                                        # explorer opened on "both", so the copy does too)
    assert re.search(r'<g id="(?:adv\d+-)?(fwd|bwd)_n\d+" class="node', inner)   # Graphviz node groups (tagged)
    assert "w_weights" in inner and "tanh" in inner
    assert "<script" in inner and "src=" not in inner   # the step buttons' script is inline
    assert "not_watched" in html.unescape(page)         # the why-None panel for the constant c


def test_static_copy_keeps_live_widgets_that_have_no_static_version():
    nb = nbformat.v4.new_notebook()
    live = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "a"}, "text/plain": "w"})
    both = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "b"}, "text/html": "<b>x</b>"})
    cell = nbformat.v4.new_code_cell("x", outputs=[live, both])
    nb.cells = [cell]
    nb.metadata["widgets"] = {"state": {}}
    copy = run_notebooks.static_copy(nb)
    assert WIDGET_VIEW in copy.cells[0].outputs[0].data
    assert WIDGET_VIEW not in copy.cells[0].outputs[1].data
    assert "widgets" in copy.metadata
    assert WIDGET_VIEW in nb.cells[0].outputs[1].data     # the executed notebook itself is untouched

    cell.outputs = [both]
    assert "widgets" not in run_notebooks.static_copy(nb).metadata
