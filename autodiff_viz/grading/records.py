"""Per-student records of a grading run: JSON files a class dashboard reads (never pickle).

One file per student and assignment, ``<folder>/<assignment>/<student>.json``::

    {"format": "autodiff_viz.grading/1", "student": "...", "assignment": "...",
     "checks": {"affine_backward": {"ok": false, "first_kind": "transpose", "rows": [...], ...}}}

Where the folder is, in this order: the ``records=`` argument; the
``ADV_GRADING_RECORDS`` environment variable; under nbgrader's autograder
(``NBGRADER_EXECUTION=autograde``, which runs each notebook in
``<course>/autograded/<student>/<assignment>/``) the course's own
``<course>/grading_records/`` — beside ``feedback/``, never inside it, so
``generate_feedback`` and ``release_feedback`` hand the students nothing of
the class. Anywhere else (a student running the notebook, nbgrader's
``validate``) nothing is written.

A record is untrusted input for whoever reads it (a student's code ran in
the process that wrote it): :func:`read_records` accepts JSON only, checks
its shape and drops what does not fit.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

FORMAT = "autodiff_viz.grading/1"
ENV = "ADV_GRADING_RECORDS"
_SAFE = re.compile(r"[^A-Za-z0-9_.@+-]")


def records_folder(records=None) -> tuple[Path | None, str | None, str | None]:
    """``(folder, student, assignment)`` for this run (see the module docstring); folder None: write nothing."""
    cwd = Path.cwd()
    if os.environ.get("NBGRADER_EXECUTION") == "autograde" and len(cwd.parts) >= 3 \
            and cwd.parent.parent.name == "autograded":
        student, assignment = cwd.parent.name, cwd.name
        course = cwd.parent.parent.parent
        folder = records or os.environ.get(ENV) or course / "grading_records"
        return Path(folder), student, assignment
    if records is not None or os.environ.get(ENV):
        return Path(records or os.environ[ENV]), None, None
    return None, None, None


def safe_name(text: str) -> str:
    """A file name made of ``text`` (a student id can hold anything): unsafe characters become ``_``."""
    name = _SAFE.sub("_", str(text))[:120].lstrip(".")
    return name or "_"


def write_record(result, records=None, student: str | None = None, assignment: str | None = None) -> Path | None:
    """Add ``result``'s record to the student's file (created or updated atomically); its path, or None."""
    folder, found_student, found_assignment = records_folder(records)
    if folder is None:
        return None
    student = student or found_student or os.environ.get("ADV_GRADING_STUDENT") or "student"
    assignment = assignment or found_assignment or os.environ.get("ADV_GRADING_ASSIGNMENT") or "assignment"
    path = folder / safe_name(assignment) / f"{safe_name(student)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "student": str(student), "assignment": str(assignment), "checks": {}}
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(old, dict) and isinstance(old.get("checks"), dict):
                data["checks"] = old["checks"]
        except (OSError, ValueError):
            pass
    data["checks"][result.label] = result.record()
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    os.replace(tmp, path)
    return path


def _valid_check(rec) -> bool:
    if not isinstance(rec, dict) or not isinstance(rec.get("rows", []), list):
        return False
    for row in rec.get("rows", []):
        if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not isinstance(row.get("kind"), str):
            return False
    return True


def _from_gradescope(data, path: Path):
    """A Gradescope ``results.json`` written by :mod:`.gradescope` as a record (each test's ``extra_data``)."""
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        return data
    meta = (data.get("extra_data") or {}).get("autodiff_viz") if isinstance(data.get("extra_data"), dict) else None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return data
    checks = {}
    for test in data["tests"]:
        rec = test.get("extra_data") if isinstance(test, dict) else None
        if isinstance(rec, dict) and isinstance(rec.get("label"), str):
            checks[rec["label"]] = rec
    return {"format": FORMAT, "student": str(meta.get("student") or path.parent.name),
            "assignment": str(meta.get("assignment") or ""), "checks": checks}


def read_records(folder) -> list[dict]:
    """Every record under ``folder`` (``*.json``, recursively) that has the record's shape, sorted by path.

    Gradescope ``results.json`` files written by :mod:`.gradescope` count too
    (the record is each test's ``extra_data``; the student is the one named in
    them, else the file's folder).
    """
    out = []
    for path in sorted(Path(folder).rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        data = _from_gradescope(data, path)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("checks"), dict):
            continue
        checks = {str(k): v for k, v in data["checks"].items() if _valid_check(v)}
        out.append({"student": str(data.get("student", "")), "assignment": str(data.get("assignment", "")),
                    "checks": checks, "path": str(path)})
    return out
