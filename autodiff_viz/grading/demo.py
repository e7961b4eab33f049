"""A simulated class for the ``mlp`` assignment: submissions whose mistakes are known in advance.

Each slip is a small change of the solution, the kind of change learners
make, with the kind the grader must find (:data:`SLIPS`). A course can try
its dashboard before its students submit; the tests and the benchmark use
the same class because the truth of each submission is known.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .assignments import mlp

SOLUTION = mlp.STARTER + mlp.SOLUTION

#: slip name -> (the first kind the grader must report, or None for a right answer; the code change)
SLIPS = {
    "correct": (None, ()),
    "correct_with_warning": (None, (("    dh = ", "    import warnings\n    warnings.warn('np.float is deprecated', "
                                              "DeprecationWarning)\n    dh = "),)),
    "tanh_one_minus_h": ("wrong_local_factor(tanh)", (("(1 - h ** 2)", "(1 - h)"),)),
    "missing_mean": ("scale({n})", (("/ h.size", ""),)),
    "sign_dW": ("sign", (("dW = X.T @ dz + 2 * REG * W", "dW = -(X.T @ dz + 2 * REG * W)"),)),
    "transposed_dW": ("transpose", (("dW = X.T @ dz + 2 * REG * W", "dW = (X.T @ dz + 2 * REG * W).T"),)),
    "db_not_summed": ("missing_batch_sum", (("db = dz.sum(axis=0)", "db = dz"),)),
    "db_summed_over_all": ("shape", (("db = dz.sum(axis=0)", "db = dz.sum()"),)),
    "forgot_penalty": ("lost_path(power)", ((" + 2 * REG * W", ""),)),
    "nan_db": ("nan", (("db = dz.sum(axis=0)", "db = dz.sum(axis=0) * np.nan"),)),
    "swapped_dh_dz": ("swapped(h, z)", (("return dh, dz, dW, db", "return dz, dh, dW, db"),)),
    "exception": ("error(ValueError)", (("dz = dh * (1 - h ** 2)", "dz = dh @ h"),)),
    "three_values": ("returned(3 of 4)", (("return dh, dz, dW, db", "return dh, dz, dW"),)),
    "squared_error_as_gradient": ("wrong", (("dh = 2 * (h - Y) / h.size", "dh = (h - Y) ** 2"),)),
    "prints_a_lot": (None, (("    dh = ", "    for i in range(100000):\n        print('debugging', i)\n    dh = "),)),
    "endless_loop": ("error(timeout)", (("    dh = ", "    while True:\n        pass\n    dh = "),)),
}

#: slips that cost their time limit (10 s) each: never drawn by :func:`simulate` unless weighted
SLOW = ("endless_loop",)


def code(slip: str) -> str:
    """The source of ``backward`` with ``slip`` made (``import numpy as np`` first, as the notebook has)."""
    src = "import numpy as np\n" + SOLUTION
    for old, new in SLIPS[slip][1]:
        if old not in src:
            raise ValueError(f"slip {slip!r}: {old!r} is not in the solution.")
        src = src.replace(old, new)
    return src


def expected(slip: str, seed: int = 0) -> str | None:
    """The first kind the grader must report for ``slip`` on the data of ``seed``."""
    kind = SLIPS[slip][0]
    return None if kind is None else kind.format(n=mlp.inputs(seed)["Y"].size)


def function(slip: str):
    """The student's ``backward`` with ``slip`` made."""
    ns: dict = {}
    exec(compile(code(slip), f"<submission {slip}>", "exec"), ns)
    return ns["backward"]


def simulate(folder, n: int = 300, seed: int = 0, weights: dict | None = None) -> dict:
    """Grade ``n`` simulated students into ``folder`` (one record each); ``{student: slip}`` (the truth).

    ``weights``: ``{slip: weight}`` (default: the right answer ten times as likely as each slip;
    the slips of :data:`SLOW` never).
    Student ids are ``student_000``…; one may pass hostile ones through :func:`grade_one`.
    """
    rng = np.random.default_rng(seed)
    names = list(SLIPS)
    default = {"correct": 10.0, **{s: 0.0 for s in SLOW}}
    w = np.array([(weights or {}).get(s, default.get(s, 1.0)) for s in names], dtype=float)
    picks = rng.choice(len(names), size=n, p=w / w.sum())
    truth = {}
    for i, k in enumerate(picks):
        student = f"student_{i:03d}"
        truth[student] = names[k]
        grade_one(folder, student, names[k])
    return truth


def grade_one(folder, student: str, slip: str):
    """Grade one simulated submission and write its record under ``folder``; the :class:`Result`."""
    from .assignments import result as graded
    from .records import write_record
    result = graded("mlp", function(slip))
    write_record(result, folder, student, "mlp")
    return result


def notebook(slip: str):
    """A student's notebook for the ``mlp`` assignment with ``slip`` made (for Otter or Gradescope practice)."""
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(mlp.INTRO),
                                         nbformat.v4.new_code_cell(code(slip))])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def write_notebooks(folder, slips=None) -> list:
    """Write ``<folder>/<slip>.ipynb`` for each slip (default: every one of :data:`SLIPS`); the paths."""
    import nbformat
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for slip in slips or SLIPS:
        path = folder / f"{slip}.ipynb"
        nbformat.write(notebook(slip), str(path))
        paths.append(path)
    return paths


def submit(course=".", assignment: str = "mlp", slips=None) -> Path:
    """Practice submissions for an nbgrader course: one simulated student per slip.

    Copies the released notebook ``<course>/release/<assignment>/mlp.ipynb``
    (run ``nbgrader generate_assignment`` first) to
    ``<course>/submitted/<slip>/<assignment>/``, its answer cell replaced by
    the solution with that slip made, and writes ``<course>/students.csv`` for
    ``nbgrader db student import students.csv``; returns that file's path.
    """
    import csv

    import nbformat
    course = Path(course)
    released = sorted((course / "release" / assignment).glob("*.ipynb"))
    if not released:
        raise FileNotFoundError(f"no released notebook in {course / 'release' / assignment}: run "
                                f"'nbgrader generate_assignment {assignment}' first.")
    for slip in slips or SLIPS:
        nb = nbformat.read(str(released[0]), as_version=4)
        answer = next((c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")), None)
        if answer is None:
            raise ValueError(f"{released[0]} has no answer cell (an nbgrader solution cell).")
        answer.source = code(slip)
        folder = course / "submitted" / slip / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(folder / released[0].name))
    path = course / "students.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name", "email"])
        for slip in slips or SLIPS:
            writer.writerow([slip, "", "", ""])
    return path
