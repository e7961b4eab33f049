"""Otter-Grader: a helper for ``@test_case`` bodies and a plugin that collects the records and sums up the class.

Otter stays the grading engine (``otter run`` for one submission, ``otter
grade --containers N`` for a class in parallel Docker containers, or its
Gradescope autograder); this module only plugs the package's check into it.

A test file of the assignment (``tests/q1.py``)::

    from otter.test_files import test_case
    from autodiff_viz.grading import otter as adv_otter

    OK_FORMAT = False
    name = "q1"
    points = 4

    @test_case(points=4)
    def test_backward(env):
        adv_otter.test(env, "mlp")            # AssertionError with the first wrong node and its kind

and the plugin in ``otter_config.json``::

    {"plugins": [{"autodiff_viz.grading.otter.RecordsPlugin": {"records": "/abs/path/grading_records"}}]}

Before a submission runs, the plugin points :mod:`.records` at a fresh
folder (the notebook's kernel inherits the environment); ``after_grading``
collects the record written there into ``records`` (one file per
submission); ``generate_report`` prints the class summary over every record
collected so far — the most common mistakes by kind and node.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .records import ENV, read_records, safe_name

PLUGIN = "autodiff_viz.grading.otter.RecordsPlugin"


def test(env: dict, assignment: str, seed: int = 0, function: str | None = None) -> None:
    """The body of an Otter ``@test_case``: check the student's function of ``assignment`` found in ``env``.

    Raises ``AssertionError`` (Otter's failed test) with the first wrong
    gradient and its kind; a function that is not defined fails the same way.
    """
    from . import assignments
    name = function or assignments.load(assignment).FUNCTION
    fn = env.get(name)
    if not callable(fn):
        raise AssertionError(f"define a function {name}(...) in the notebook: the test calls it.")
    assignments.grade_with(assignment, fn, seed, show=False,
                           assignment=os.environ.get("ADV_GRADING_ASSIGNMENT") or assignment)


try:
    from otter.plugins import AbstractOtterPlugin
except ImportError:          # Otter not installed: the helper above still works with any runner
    AbstractOtterPlugin = object


class RecordsPlugin(AbstractOtterPlugin):
    """Collects each submission's grading record and prints the class summary (see the module docstring)."""

    def __init__(self, submission_path, submission_metadata, plugin_config):
        self.submission_path = submission_path
        self.submission_metadata = submission_metadata or {}
        self.plugin_config = plugin_config or {}
        self._folder = None
        self.collected: list[Path] = []

    @property
    def records(self) -> Path:
        return Path(self.plugin_config.get("records") or os.environ.get(ENV + "_CLASS") or "grading_records")

    def _student(self) -> str:
        users = self.submission_metadata.get("users") or []
        if users and isinstance(users[0], dict) and users[0].get("email"):
            return str(users[0]["email"])
        return Path(self.submission_path).stem

    def before_grading(self, config):
        self._folder = tempfile.mkdtemp(prefix="adv_records_")
        os.environ[ENV] = self._folder
        os.environ["ADV_GRADING_STUDENT"] = self._student()

    def after_grading(self, results):
        if self._folder is None:
            return
        data = {}
        for rec in Path(self._folder).rglob("*.json"):
            target = self.records / rec.parent.name / f"{safe_name(self._student())}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(rec, target)
            self.collected.append(target)
            try:
                data[rec.parent.name] = json.loads(rec.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                pass
        if hasattr(results, "set_plugin_data"):       # also in Otter's results (results.pkl travels out of a
            results.set_plugin_data(PLUGIN, data)     # container; GradingResults.get_plugin_data(PLUGIN))
        shutil.rmtree(self._folder, ignore_errors=True)
        os.environ.pop(ENV, None)
        os.environ.pop("ADV_GRADING_STUDENT", None)

    def generate_report(self) -> str:
        from .dashboard import summary
        records = read_records(self.records)
        s = summary(records)
        if not s["students"]:
            return "autodiff_viz: no grading records collected."
        lines = [f"autodiff_viz class summary ({s['label']}): {s['students']} graded, {s['all_right']} all right."]
        for name, (right, graded) in s["per_gradient"].items():
            lines.append(f"  d{name}: {right}/{graded} right")
        for count, kind, node in s["mistakes"][:10]:
            lines.append(f"  {100 * count / s['students']:.0f}% {kind} at {node}")
        return "\n".join(lines)
