"""What grading a backprop assignment costs (issue 45): ``python benchmarks/grading.py [--nbgrader N]``.

Two numbers, measured in one run on this machine:

1. **The package's part per submission**, for each slip of the simulated
   class (``autodiff_viz.grading.demo``): the instructor's forward on a tape,
   the student's function, the comparison, its kinds and the JSON record; then the
   feedback page with the marked picture, by the built-in renderer (the
   default) and by Graphviz. The target is ≤ 50 ms for grade + feedback.
2. **nbgrader's wall time** over ``N`` submissions of the ``mlp`` assignment
   (``--nbgrader 50``; 0 skips it): ``generate_assignment``, ``autograde``
   and ``generate_feedback`` in a temporary course, as a teacher runs them;
   its share per submission is mostly a fresh kernel per notebook.

The ratio of the two says where the time of a class goes. Nothing here is
asserted (tests never assert speed).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autodiff_viz.grading import assignments, demo, feedback  # noqa: E402


def package_part(repeats: int = 7) -> dict:
    """Median milliseconds per submission: grade, feedback (built-in picture), feedback (Graphviz picture)."""
    rows = {}
    for slip in demo.SLIPS:
        fn = demo.function(slip)
        assignments.result("mlp", fn)                         # warm up (imports, first tape)
        g, b, d, cpu = [], [], [], []
        for _ in range(repeats):
            c0 = time.process_time()
            t0 = time.perf_counter()
            result = assignments.result("mlp", fn)
            json.dumps(result.record())                        # the per-student record, as check writes it
            t1 = time.perf_counter()
            feedback.result_html(result, renderer="builtin")
            t2 = time.perf_counter()
            cpu.append(time.process_time() - c0)
            feedback.result_html(result, renderer="graphviz")
            t3 = time.perf_counter()
            g.append(t1 - t0)
            b.append(t2 - t1)
            d.append(t3 - t2)
        rows[slip] = {"grade_ms": 1e3 * statistics.median(g), "feedback_builtin_ms": 1e3 * statistics.median(b),
                      "feedback_graphviz_ms": 1e3 * statistics.median(d), "cpu_ms": 1e3 * statistics.median(cpu)}
    return rows


def nbgrader_wall(n: int) -> dict:
    """Seconds for generate_assignment, autograde and generate_feedback over ``n`` submissions."""
    import nbformat

    from autodiff_viz.grading.assignments import write_source
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(*args):
        subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env, check=True,
                       capture_output=True, text=True)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(root)!r}\n")
        write_source("mlp", root)
        run("db", "assignment", "add", "mlp")
        t0 = time.perf_counter()
        run("generate_assignment", "mlp", "--force")
        t1 = time.perf_counter()
        release = nbformat.read(str(root / "release" / "mlp" / "mlp.ipynb"), as_version=4)
        slips = list(demo.SLIPS)
        for i in range(n):
            nb = nbformat.from_dict(json.loads(json.dumps(release)))
            cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer")
            cell.source = demo.code(slips[i % len(slips)])
            folder = root / "submitted" / f"s{i:03d}" / "mlp"
            folder.mkdir(parents=True)
            nbformat.write(nb, str(folder / "mlp.ipynb"))
            run("db", "student", "add", f"s{i:03d}")
        t2 = time.perf_counter()
        run("autograde", "mlp", "--force")
        t3 = time.perf_counter()
        run("generate_feedback", "mlp", "--force")
        t4 = time.perf_counter()
    return {"submissions": n, "generate_assignment_s": t1 - t0, "autograde_s": t3 - t2,
            "generate_feedback_s": t4 - t3, "per_submission_s": (t3 - t2 + t4 - t3) / max(n, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nbgrader", type=int, default=0, help="submissions for the nbgrader wall time (0: skip)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rows = package_part(args.repeats)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times grow with it; CPU times less)")
    print(f"{'slip':28s} {'grade ms':>9s} {'+page builtin':>14s} {'+page graphviz':>15s} {'CPU ms (builtin)':>17s}")
    for slip, r in rows.items():
        print(f"{slip:28s} {r['grade_ms']:9.1f} {r['feedback_builtin_ms']:14.1f} {r['feedback_graphviz_ms']:15.1f}"
              f" {r['cpu_ms']:17.1f}")
    total = [r["grade_ms"] + r["feedback_builtin_ms"] for r in rows.values()]
    cpu = [r["cpu_ms"] for r in rows.values()]
    print(f"median grade + feedback page (built-in picture): {statistics.median(total):.1f} ms wall, "
          f"{statistics.median(cpu):.1f} ms CPU per submission (target ≤ 50 ms); worst {max(total):.1f} ms wall")
    if args.nbgrader:
        w = nbgrader_wall(args.nbgrader)
        print(f"nbgrader over {w['submissions']} submissions: autograde {w['autograde_s']:.1f} s, "
              f"generate_feedback {w['generate_feedback_s']:.1f} s, {w['per_submission_s']:.2f} s per submission; "
              f"the package's part is {statistics.median(total) / 1e3 / w['per_submission_s']:.1%} of it")


if __name__ == "__main__":
    main()
