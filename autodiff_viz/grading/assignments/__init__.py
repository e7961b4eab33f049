"""Ready backprop assignments: each an instructor module (the forward only) and an nbgrader source notebook.

Each module holds the **forward** pass (``reference``), the data
(``inputs(seed)``), how the student's function is called (``call``), the
names of the gradients it returns (``NAMES``), and the notebook's text: the
starter code and the solution between nbgrader's ``### BEGIN SOLUTION``
markers. ``grade(student_fn)`` is the test cell's one line.

What grading needs of an assignment is its forward, its data and its call:
the gradients a student is judged against come from the tape run over the
forward, so nbgrader's feedback page — which shows hidden test code — shows
only ``assignment.grade(affine_backward, seed=1)``, no line of a solution,
and the released notebook has none (``nbgrader generate_assignment`` strips
the source notebook's, :func:`source_notebook`). These ready assignments are
public teaching material, like CS231n's: ``SOLUTION`` ships with them (to
write the source notebook), and a student with the package can read it. A
course whose solutions must stay secret writes its own instructor module
with the forward only (docs/teaching.md, "Your own assignment").

=================  =========================================================  ============
module             the student writes                                         CS231n A2 /
=================  =========================================================  ============
``mlp``            ``backward(X, Y, W, h)`` → ``dh, dz, dW, db`` of a tanh    issue 45
                   layer with an L2 penalty
``affine``         ``affine_backward(dout, cache)`` → ``dx, dw, db``          layers.py
``relu``           ``relu_backward(dout, cache)`` → ``dx``                    layers.py
``batchnorm``      ``batchnorm_backward(dout, cache)`` → ``dx, dgamma, dbeta``  layers.py
``softmax_loss``   ``softmax_loss(x, y)`` → ``loss, dx``                      layers.py
``ninja``          every intermediate of a PyTorch MLP's cross-entropy        Backprop Ninja
=================  =========================================================  ============
"""
from __future__ import annotations

import importlib

NAMES = ("mlp", "affine", "relu", "batchnorm", "softmax_loss", "ninja")


def load(name: str):
    """The instructor module of assignment ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise KeyError(f"no assignment {name!r}; the ready ones are {NAMES}.")
    return importlib.import_module(f"{__name__}.{name}")


def _meta(**nbgrader) -> dict:
    return {"nbgrader": {"schema_version": 3, "locked": False, "solution": False, "grade": False, **nbgrader}}


def source_notebook(name: str):
    """The nbgrader *source* notebook of assignment ``name`` (solution included, between the markers)."""
    import nbformat
    mod = load(name)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [
        nbformat.v4.new_markdown_cell(mod.INTRO, metadata=_meta(grade_id="intro", locked=True)),
        nbformat.v4.new_code_cell(mod.SETUP, metadata=_meta(grade_id="setup", locked=True)),
        nbformat.v4.new_code_cell(mod.STARTER + "    ### BEGIN SOLUTION\n" + mod.SOLUTION + "    ### END SOLUTION\n",
                                  metadata=_meta(grade_id="answer", solution=True)),
        nbformat.v4.new_code_cell(
            f"from autodiff_viz.grading.assignments import {name} as assignment\n"   # never the student's name
            f"assignment.grade({mod.FUNCTION})\n"
            "### BEGIN HIDDEN TESTS\n"
            f"assignment.grade({mod.FUNCTION}, seed=1)\n"
            "### END HIDDEN TESTS",
            metadata=_meta(grade_id="test", grade=True, locked=True, points=mod.POINTS)),
    ]
    nb.cells = cells
    return nb


def write_source(name: str, course, assignment: str | None = None):
    """Write the source notebook into ``<course>/source/<assignment>/<name>.ipynb``; its path."""
    from pathlib import Path

    import nbformat
    folder = Path(course) / "source" / (assignment or name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(source_notebook(name), str(path))
    return path


def label_of(name: str, seed: int = 0) -> str:
    """The record's label of assignment ``name`` graded on the data of ``seed`` (``backward``, ``backward@seed1``)."""
    fn = load(name).FUNCTION
    return fn if seed == 0 else f"{fn}@seed{seed}"


def grade_with(module: str, student_fn, seed: int = 0, **kwargs):
    """:func:`~autodiff_viz.grading.check` of ``student_fn`` on assignment ``module``'s data of ``seed``."""
    from ..check import check
    name = module.rsplit(".", 1)[-1]
    kwargs.setdefault("label", label_of(name, seed))
    return check(student_fn=student_fn, **load(name).spec(seed), **kwargs)


def result(name: str, student_fn, seed: int = 0, **kwargs):
    """The :class:`~autodiff_viz.grading.Result` of ``student_fn`` on assignment ``name`` (never raises for
    the student's mistakes: what the Otter and Gradescope adapters report)."""
    from ..check import grade
    kwargs.setdefault("label", label_of(name, seed))
    return grade(student_fn=student_fn, **load(name).spec(seed), **kwargs)
