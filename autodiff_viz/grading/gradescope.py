"""Gradescope: a ``results.json`` from grading results, the feedback as HTML and the record in ``extra_data``.

Gradescope's autograder runs ``/autograder/run_autograder`` in its own
container and reads ``/autograder/results/results.json`` (its documented
format: https://gradescope-autograders.readthedocs.io/en/latest/specs/).
This module writes that file; Gradescope stays the grading engine::

    # run_autograder (Python), after loading the student's function
    from autodiff_viz.grading import assignments, gradescope
    result = assignments.result("affine", ns["affine_backward"])
    gradescope.write("/autograder/results/results.json", [(result, 3)])

Each check becomes one test: its score, its ``max_score``, ``status``, the
feedback page as ``output`` with ``output_format: "html"`` (the table and the
marked graph, inline-styled, so it reads in Gradescope's page), and the
structured record in the test's ``extra_data``.
"""
from __future__ import annotations

import json
from pathlib import Path

from .feedback import result_html

OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")

#: Gradescope's results.json, as its specification page describes it (a JSON Schema for checking a file).
SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": list(OUTPUT_FORMATS)},
        "test_output_format": {"enum": list(OUTPUT_FORMATS)},
        "test_name_format": {"enum": list(OUTPUT_FORMATS)},
        "visibility": {"enum": list(VISIBILITIES)},
        "stdout_visibility": {"enum": list(VISIBILITIES)},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]},
                "name": {"type": "string"}, "name_format": {"enum": list(OUTPUT_FORMATS)},
                "number": {"type": "string"}, "output": {"type": "string"},
                "output_format": {"enum": list(OUTPUT_FORMATS)}, "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": {"enum": list(VISIBILITIES)}, "extra_data": {"type": "object"},
            },
            "additionalProperties": False,
        }},
        "leaderboard": {"type": "array", "items": {
            "type": "object", "required": ["name", "value"],
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}}}},
    },
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
    "additionalProperties": False,
}


def test_entry(result, max_score: float, partial: bool = False, number: str | None = None) -> dict:
    """One test of results.json for one :class:`~autodiff_viz.grading.Result`."""
    score = float(max_score) if result.ok else (round(float(max_score) * result.fraction(), 4) if partial else 0.0)
    entry = {"name": result.label, "score": score, "max_score": float(max_score),
             "status": "passed" if result.ok else "failed", "output": result_html(result),
             "output_format": "html", "visibility": "visible", "extra_data": result.record()}
    if number is not None:
        entry["number"] = number
    return entry


def results(graded, partial: bool = False, seconds: float | None = None) -> dict:
    """results.json's content for ``graded`` = ``[(result, max_score), ...]``."""
    tests = [test_entry(r, pts, partial, str(i + 1)) for i, (r, pts) in enumerate(graded)]
    out = {"score": round(sum(t["score"] for t in tests), 4), "tests": tests, "output_format": "html",
           "extra_data": {"autodiff_viz": {"format": "autodiff_viz.grading/1",
                                           "first_kinds": {r.label: r.first_kind for r, _ in graded}}}}
    if seconds is not None:
        out["execution_time"] = seconds
    return out


def write(path, graded, partial: bool = False) -> Path:
    """Write results.json for ``graded`` (see :func:`results`) to ``path``; the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results(graded, partial), ensure_ascii=False), encoding="utf-8")
    return path


def validate(data: dict) -> None:
    """Raise ``jsonschema.ValidationError`` when ``data`` is not a results.json Gradescope accepts."""
    import jsonschema
    jsonschema.validate(data, SCHEMA)
