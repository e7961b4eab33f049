"""Grading backprop assignments: a test-cell check, mistake records, adapters and a class dashboard.

* :func:`check` — the test cell of an assignment: the instructor's forward on a
  tape, the student's gradients against it, feedback that marks the first
  wrong node, ``AssertionError`` on a mistake (:mod:`.check`).
* :func:`grade` — the same, returning a :class:`Result` instead of raising.
* :mod:`.records` — the per-student JSON record (``Comparison.to_dict`` plus
  the error, warnings and the marked trace), written where a grader runs.
* :mod:`.otter`, :mod:`.gradescope`, :mod:`.nbgrader` — thin adapters on the
  graders that exist; :mod:`.dashboard` — the class view of the records.
* :mod:`.assignments` — ready CS231n-style assignments (affine, ReLU, batch
  norm, softmax loss, and a PyTorch one in the style of Backprop Ninja).

This package sits at the top of the house, beside the bridges: it imports
records, views and (for PyTorch assignments) the torch bridge.
"""
from .check import Result, check, grade
from .records import read_records, write_record

__all__ = ["check", "grade", "Result", "write_record", "read_records"]
