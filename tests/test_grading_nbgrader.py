"""A real nbgrader 0.9.6 course in a temporary folder, graded with the package's check (issue 45).

The course has the ready ``mlp`` assignment (issue 45's ``backward(X, Y, W, h)``)
and 16 generated submissions (``demo.submit``, as docs/teaching.md tells a
teacher to practise): right, right but emitting a warning, right but printing
100,000 lines, one per mistake kind, and broken ones (an exception, three
values for four, NaN, an endless loop).
``generate_assignment``, ``autograde`` and ``generate_feedback`` run as a
teacher runs them; the scores come from nbgrader's SQLite gradebook.

It checks the two traps issue 45 found: a wrong answer never gets points (a
test cell that ended in a non-number would pass it), and a correct answer
that emits a warning keeps its points (nbgrader zeroes a cell that writes to
stderr). And the feedback: each page names and marks the wrong node, reads
without the notebook's CSS, and holds no line of the reference solution
(nbgrader shows hidden test code by design: https://github.com/jupyter/nbgrader/issues/917);
and, in headless Chromium, the graph fits the feedback column.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autodiff_viz.grading import demo, read_records
from autodiff_viz.grading.assignments import mlp, write_source
from autodiff_viz.records.compare import _shape_hint

pytest.importorskip("nbgrader")
pytestmark = pytest.mark.timeout(1800)     # a real grader: kernels start per submission (slow on a loaded machine)
ROOT = Path(__file__).resolve().parent.parent
NBGRADER = [sys.executable, "-m", "nbgrader"]
GENERIC_HINT = _shape_hint((4, 2), (2,))
BIN = str(Path(sys.executable).parent)          # nbgrader's gradebook runs the `alembic` script found on PATH


@pytest.fixture(autouse=True, scope="module")
def _alembic_on_path():
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = BIN + os.pathsep + old
    yield
    os.environ["PATH"] = old


def _run(args, cwd):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(NBGRADER + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def course(tmp_path_factory, _alembic_on_path):
    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.course_id = 'backprop'\n"
        "c.ExecutePreprocessor.timeout = 120\n")
    write_source("mlp", root)
    _run(["db", "assignment", "add", "mlp"], root)
    _run(["generate_assignment", "mlp", "--force"], root)
    students = demo.submit(root)                     # the practice submissions of docs/teaching.md
    _run(["db", "student", "import", str(students)], root)
    _run(["autograde", "mlp", "--force"], root)
    _run(["generate_feedback", "mlp", "--force"], root)
    return root


def _scores(root):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {s: gb.find_submission("mlp", s).score for s in demo.SLIPS}


def test_generate_assignment_strips_the_solution(course):
    release = (course / "release" / "mlp" / "mlp.ipynb").read_text()
    assert "dz = dh * (1 - h ** 2)" not in release
    assert "YOUR CODE HERE" in release
    assert "assignment.grade(backward)" in release
    assert "seed=1" not in release            # the hidden test is hidden


def test_scores_no_wrong_answer_gets_points_no_right_one_loses_them(course):
    scores = _scores(course)
    assert len(scores) >= 12 and set(scores) == set(demo.SLIPS)
    for slip, score in scores.items():
        expected = mlp.POINTS if demo.expected(slip) is None else 0
        assert score == expected, (slip, score)


def _feedback(course, slip) -> str:
    return (course / "feedback" / slip / "mlp" / "mlp.html").read_text(encoding="utf-8")


def test_each_feedback_page_names_and_marks_the_wrong_node(course):
    for slip in demo.SLIPS:
        page = _feedback(course, slip)
        kind = demo.expected(slip)
        if kind is None:
            assert "AssertionError" not in page
            continue
        assert "AssertionError" in page, slip
        assert kind.replace("(", "").split()[0].split(",")[0] in page.replace("(", ""), (slip, kind)
        if kind.startswith(("error", "returned")):
            continue
        first = {"swapped(h, z)": "h", "scale(8)": "h", "wrong": "h", "wrong_local_factor(tanh)": "z",
                 "sign": "W", "transpose": "W", "lost_path(power)": "W"}.get(kind, "b")
        assert f"first wrong gradient along the backward pass is &#x27;{first}&#x27;" in page or \
            f"first wrong gradient along the backward pass is '{first}'" in page, (slip, first)
        # the marked graph, fitted (nbgrader re-serialises the page: HTML parsers restore viewBox's case)
        assert "<svg" in page and 'width="100%"' in page and "viewbox" in page.lower(), slip
        assert "#f6b8b8" in page, slip                                                    # a node filled red


def test_feedback_reads_without_css_and_reveals_no_solution(course):
    solution_lines = [ln.strip() for ln in mlp.SOLUTION.splitlines() if ln.strip() and "return" not in ln]
    for slip in demo.SLIPS:
        page = _feedback(course, slip)
        if demo.expected(slip) not in (None,) and not demo.expected(slip).startswith(("error", "returned")):
            assert re.search(r"<th style=[\"'][^\"']*padding", page), slip     # header cells stand apart
        own = demo.code(slip)
        for line in solution_lines:
            # the student's own line may of course be shown, and so may the generic hint of a forgotten batch
            # sum, which names `db = dz.sum(axis=0)` as its example whatever the assignment
            if line not in own and line not in GENERIC_HINT:
                assert line not in page, (slip, line)
        assert "dz = dh * (1 - h ** 2)" not in page or "dz = dh * (1 - h ** 2)" in own


def test_records_are_written_outside_the_feedback_folder(course):
    records = read_records(course / "grading_records")
    assert {r["student"] for r in records} == set(demo.SLIPS)
    assert not list((course / "feedback").rglob("*.json"))
    by_student = {r["student"]: r for r in records}
    for slip in demo.SLIPS:
        check = by_student[slip]["checks"]["backward"]
        assert check["first_kind"] == demo.expected(slip), slip


@pytest.fixture(scope="module")
def every_assignment(tmp_path_factory, _alembic_on_path):
    """A course with every ready assignment; one student submits each solution, one the untouched release."""
    from autodiff_viz.grading import assignments
    root = tmp_path_factory.mktemp("all")
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(root)!r}\nc.ExecutePreprocessor.timeout = 180\n")
    for name in assignments.NAMES:
        write_source(name, root)
        _run(["db", "assignment", "add", name], root)
        _run(["generate_assignment", name, "--force"], root)
    _run(["db", "student", "add", "solver"], root)
    _run(["db", "student", "add", "idle"], root)
    for name in assignments.NAMES:
        mod = assignments.load(name)
        release = nbformat.read(str(root / "release" / name / f"{name}.ipynb"), as_version=4)
        for student in ("solver", "idle"):
            nb = nbformat.from_dict(json.loads(json.dumps(release)))
            if student == "solver":
                answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer")
                answer.source = mod.STARTER + mod.SOLUTION
            folder = root / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, str(folder / f"{name}.ipynb"))
    for name in assignments.NAMES:
        _run(["autograde", name, "--force"], root)
        _run(["generate_feedback", name, "--force"], root)
    return root


def test_every_ready_assignment_is_generated_and_autograded(every_assignment):
    from nbgrader.api import Gradebook

    from autodiff_viz.grading import assignments
    with Gradebook(f"sqlite:///{every_assignment / 'gradebook.db'}") as gb:
        for name in assignments.NAMES:
            points = assignments.load(name).POINTS
            assert gb.find_submission(name, "solver").score == points, name
            assert gb.find_submission(name, "idle").score == 0, name
            release = (every_assignment / "release" / name / f"{name}.ipynb").read_text()
            assert "BEGIN SOLUTION" not in release and "HIDDEN TESTS" not in release
            # the idle student's feedback shows the hidden test's code (nbgrader#917), never a line of the solution
            page = (every_assignment / "feedback" / "idle" / name / f"{name}.html").read_text(encoding="utf-8")
            assert "seed=1" in page.replace("<span class=\"o\">=</span>", "=").replace(" ", "") or "seed" in page
            for line in assignments.load(name).SOLUTION.splitlines():
                line = line.strip()
                if len(line) > 12 and not line.startswith(("return", "n = ")):
                    assert line not in page, (name, line)


CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Chromium")
@pytest.mark.parametrize("width", [1200, 560])
def test_feedback_page_in_a_browser_fits_the_column_and_its_table_reads(course, tmp_path, width):
    """The feedback page as a student opens it (file://, offline): the marked graph is within the output column
    at a desktop and at a phone-ish width, and the table's header cells have padding and borders of their own."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            for slip in ("tanh_one_minus_h", "forgot_penalty", "db_summed_over_all"):
                page.goto((course / "feedback" / slip / "mlp" / "mlp.html").as_uri())
                page.wait_for_selector(".adv-grading svg")
                fits = page.evaluate("""() => [...document.querySelectorAll('.adv-grading svg')].map(svg => {
                    const box = svg.closest('.adv-grading').parentElement.getBoundingClientRect();
                    const r = svg.getBoundingClientRect();
                    return [r.left >= box.left - 1, r.right <= box.right + 1, r.width > 100, r.height > 50];
                })""")
                assert fits and all(all(f) for f in fits), (slip, width, fits)
                th = page.evaluate("""() => { const th = document.querySelector('.adv-grading th');
                    const s = getComputedStyle(th);
                    return [parseFloat(s.paddingLeft), parseFloat(s.borderLeftWidth), th.textContent]; }""")
                assert th[0] >= 3 and th[1] >= 1, (slip, th)
                page.screenshot(path=str(tmp_path / f"{slip}-{width}.png"), full_page=True)
        finally:
            browser.close()


def test_a_test_cell_ending_in_a_result_gives_no_points_for_a_wrong_answer(course):
    """nbgrader reads a test cell's last value as partial credit and a non-number as full marks; a cell ending in
    ``assignments.result(...)`` (a Result, not None) must still give a wrong answer 0 — and your own instructor
    module, outside ``source/``, is found through ``PYTHONPATH`` as docs/teaching.md says."""
    (course / "my_grader.py").write_text(
        "from autodiff_viz.grading import assignments\n\n\ndef result_of(backward):\n"
        "    return assignments.result('mlp', backward)\n")
    source = nbformat.read(str(course / "source" / "mlp" / "mlp.ipynb"), as_version=4)
    test = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade"))
    test.source = "from my_grader import result_of\nresult_of(backward)"
    (course / "source" / "trap").mkdir()
    nbformat.write(source, str(course / "source" / "trap" / "trap.ipynb"))
    _run(["db", "assignment", "add", "trap"], course)
    _run(["generate_assignment", "trap", "--force"], course)
    release = nbformat.read(str(course / "release" / "trap" / "trap.ipynb"), as_version=4)
    assert not (course / "release" / "trap" / "my_grader.py").exists()
    for slip in ("correct", "sign_dW", "exception"):
        nb = nbformat.from_dict(json.loads(json.dumps(release)))
        next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")).source = demo.code(slip)
        (course / "submitted" / slip / "trap").mkdir(parents=True)
        nbformat.write(nb, str(course / "submitted" / slip / "trap" / "trap.ipynb"))
    env = {**os.environ, "PYTHONPATH": f"{course}{os.pathsep}{ROOT}"}
    proc = subprocess.run(NBGRADER + ["autograde", "trap", "--force"], cwd=course, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {s: gb.find_submission("trap", s).score for s in ("correct", "sign_dW", "exception")}
    assert scores == {"correct": mlp.POINTS, "sign_dW": 0, "exception": 0}
