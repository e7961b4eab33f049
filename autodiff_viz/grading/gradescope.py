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
from .records import FORMAT

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


def results(graded, partial: bool = False, seconds: float | None = None, student: str | None = None,
            assignment: str | None = None) -> dict:
    """results.json's content for ``graded`` = ``[(result, max_score), ...]``."""
    tests = [test_entry(r, pts, partial, str(i + 1)) for i, (r, pts) in enumerate(graded)]
    out = {"score": round(sum(t["score"] for t in tests), 4), "tests": tests, "output_format": "html",
           "extra_data": {"autodiff_viz": {"format": FORMAT, "student": student, "assignment": assignment,
                                           "first_kinds": {r.label: r.first_kind for r, _ in graded}}}}
    if seconds is not None:
        out["execution_time"] = seconds
    return out


def write(path, graded, partial: bool = False, **kwargs) -> Path:
    """Write results.json for ``graded`` (see :func:`results`) to ``path``; the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results(graded, partial, **kwargs), ensure_ascii=False), encoding="utf-8")
    return path


def _code_of(path: Path) -> str:
    """The Python source of a submitted ``.py`` file or notebook (its code cells in order, magics dropped)."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = [c.get("source", "") for c in nb.get("cells", []) if c.get("cell_type") == "code"]
        cells = ["".join(c) if isinstance(c, list) else str(c) for c in cells]
        return "\n".join(ln for c in cells for ln in c.splitlines() if not ln.lstrip().startswith(("%", "!")))
    return path.read_text(encoding="utf-8")


def load_function(submission, name: str, timeout: float | None = None):
    """``(function, None)``: the student's function ``name`` from ``submission`` (a ``.py`` file, a notebook,
    or a folder holding one); ``(None, Result)`` with the error as feedback when the file is missing, its code
    raises, runs too long, or defines no such function."""
    from .check import TIMEOUT, Result, _Capped, _student_trace, _time_limit, _TimedOut
    result = Result(name)
    path = Path(submission)
    if path.is_dir():
        found = sorted(path.rglob("*.ipynb")) + sorted(path.rglob("*.py"))
        path = found[0] if found else None
    if path is None or not path.exists():
        result.error, result.error_kind = f"no notebook or .py file was submitted (looked in {submission}).", \
            "returned(no file)"
        return None, result
    ns: dict = {"__name__": "__submission__"}
    err, out = _Capped(), _Capped()
    import contextlib
    try:
        code = compile(_code_of(path), path.name, "exec")
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), \
                _time_limit(TIMEOUT if timeout is None else timeout):
            exec(code, ns)
    except _TimedOut:
        result.error, result.error_kind = "your notebook did not finish running (an endless loop?).", \
            "error(timeout)"
    except (Exception, SystemExit) as exc:
        result.error, result.error_kind = _student_trace(exc), f"error({type(exc).__name__})"
    if result.error is None and not callable(ns.get(name)):
        result.error, result.error_kind = f"your submission defines no function {name}(...).", "missing"
    if result.error is not None:
        result.stdout, result.stderr = out.getvalue(), err.getvalue()
        return None, result
    return ns[name], None


def run(assignment: str, submission="/autograder/submission", results_path="/autograder/results/results.json",
        seeds=(0, 1), metadata=None) -> Path:
    """Grade one Gradescope submission of a ready assignment and write results.json (a ``run_autograder``'s body).

    One test per seed (the data of seed 0 is the notebook's; seed 1 is new
    data, as nbgrader's hidden test), each worth an equal share of the
    assignment's points. The student is read from Gradescope's
    ``submission_metadata.json`` beside the submission folder (the first
    user's email), when there is one.
    """
    from . import assignments
    mod = assignments.load(assignment)
    student = None
    try:
        meta = Path(metadata) if metadata else Path(submission).parent / "submission_metadata.json"
        users = json.loads(meta.read_text(encoding="utf-8")).get("users") or []
        student = str(users[0].get("email") or users[0].get("name")) if users else None
    except (OSError, ValueError, AttributeError):
        pass
    fn, failed = load_function(submission, mod.FUNCTION)
    share = mod.POINTS / len(seeds)
    graded = []
    for seed in seeds:
        if fn is None:
            graded.append((failed, share))
        else:
            graded.append((assignments.result(assignment, fn, seed), share))
    return write(results_path, graded, student=student, assignment=assignment)


def main(argv=None) -> int:
    """``python -m autodiff_viz.grading.gradescope ASSIGNMENT [SUBMISSION [RESULTS]]`` (Gradescope's paths by
    default): the whole ``run_autograder`` of a ready assignment."""
    import sys
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(main.__doc__)
        return 0 if args else 2
    run(args[0], *args[1:3])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def validate(data: dict) -> None:
    """Raise ``jsonschema.ValidationError`` when ``data`` is not a results.json Gradescope accepts."""
    import jsonschema
    jsonschema.validate(data, SCHEMA)
