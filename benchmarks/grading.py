"""What grading a backprop assignment costs (issue 45): ``python benchmarks/grading.py [--nbgrader N]``.

Two numbers, measured in one run on this machine:

1. **The package's part per submission**, for each slip of the simulated
   class (``autodiff_viz.grading.demo``): the instructor's forward on a tape,
   the student's function, the comparison, its kinds and the JSON record; then the
   feedback page with the marked picture, by the built-in renderer (the
   default) and by Graphviz. The target is ≤ 50 ms for grade + feedback
   without the student's own code (``package ms``: a student who prints
   100,000 lines spends that time in their function, not in the package).
2. **nbgrader's wall time** over ``N`` submissions of the ``mlp`` assignment
   (``--nbgrader 50``; 0 skips it; ``--processes 2`` runs two autograde
   processes on disjoint groups of students): ``generate_assignment``, ``autograde``
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
        if slip in demo.SLOW:            # an endless loop costs its time limit, by design
            continue
        fn = demo.function(slip)
        assignments.result("mlp", fn)                         # warm up (imports, first tape)
        g, b, d, cpu, own = [], [], [], [], []
        for _ in range(repeats):
            c0 = time.process_time()
            t0 = time.perf_counter()
            result = assignments.result("mlp", fn)
            tr = time.perf_counter()
            json.dumps(result.record())                        # the per-student record, as check writes it
            t1 = time.perf_counter()
            feedback.result_html(result, renderer="builtin")
            t2 = time.perf_counter()
            cpu.append(time.process_time() - c0)
            feedback.result_html(result, renderer="graphviz")
            t3 = time.perf_counter()
            g.append(t1 - t0)
            own.append(result.seconds + (t1 - tr) + (t2 - t1))   # without the student's own function's time
            b.append(t2 - t1)
            d.append(t3 - t2)
        rows[slip] = {"grade_ms": 1e3 * statistics.median(g), "feedback_builtin_ms": 1e3 * statistics.median(b),
                      "feedback_graphviz_ms": 1e3 * statistics.median(d), "cpu_ms": 1e3 * statistics.median(cpu),
                      "package_ms": 1e3 * statistics.median(own)}
    return rows


def nbgrader_wall(n: int, processes: int = 1) -> dict:
    """Seconds for generate_assignment, autograde and generate_feedback over ``n`` submissions.

    ``processes`` > 1: that many ``nbgrader autograde --student <glob>`` at
    once on disjoint groups of students (by the last digit of their id), as
    docs/teaching.md advises for a large class.
    """
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
        slips = [s for s in demo.SLIPS if s not in demo.SLOW]
        for i in range(n):
            nb = nbformat.from_dict(json.loads(json.dumps(release)))
            cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer")
            cell.source = demo.code(slips[i % len(slips)])
            folder = root / "submitted" / f"s{i:03d}" / "mlp"
            folder.mkdir(parents=True)
            nbformat.write(nb, str(folder / "mlp.ipynb"))
            run("db", "student", "add", f"s{i:03d}")
        t2 = time.perf_counter()
        if processes <= 1:
            run("autograde", "mlp", "--force")
        else:                              # one nbgrader per group of students, sharing the SQLite gradebook
            groups = [f"s*[{''.join(str(d) for d in range(10) if d % processes == k)}]" for k in range(processes)]
            procs = [subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", "mlp", "--force",
                                       "--student", g], cwd=root, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True) for g in groups]
            for p in procs:
                _, err = p.communicate()
                if p.returncode:
                    raise RuntimeError(err[-2000:])
        t3 = time.perf_counter()
        graded = len(list((root / "autograded").glob("*/mlp/mlp.ipynb")))
        if graded != n:
            raise RuntimeError(f"autograde graded {graded} of {n} submissions")
        run("generate_feedback", "mlp", "--force")
        t4 = time.perf_counter()
    return {"submissions": n, "processes": processes, "generate_assignment_s": t1 - t0, "autograde_s": t3 - t2,
            "generate_feedback_s": t4 - t3, "per_submission_s": (t3 - t2 + t4 - t3) / max(n, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nbgrader", type=int, default=0, help="submissions for the nbgrader wall time (0: skip)")
    parser.add_argument("--processes", type=int, default=1, help="nbgrader autograde processes at once")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rows = package_part(args.repeats)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times grow with it; CPU times less)")
    print(f"{'slip':28s} {'grade ms':>9s} {'+page builtin':>14s} {'+page graphviz':>15s} {'CPU ms (builtin)':>17s}"
          f" {'package ms':>11s}")
    for slip, r in rows.items():
        print(f"{slip:28s} {r['grade_ms']:9.1f} {r['feedback_builtin_ms']:14.1f} {r['feedback_graphviz_ms']:15.1f}"
              f" {r['cpu_ms']:17.1f} {r['package_ms']:11.1f}")
    print("(grade ms includes the student's function; package ms is the package's part alone: forward, compare, "
          "kinds, record and the page with its built-in picture)")
    total = [r["grade_ms"] + r["feedback_builtin_ms"] for r in rows.values()]
    cpu = [r["cpu_ms"] for r in rows.values()]
    own = [r["package_ms"] for r in rows.values()]
    print(f"median grade + feedback page (built-in picture): {statistics.median(total):.1f} ms wall, "
          f"{statistics.median(cpu):.1f} ms CPU per submission; the package's part: median "
          f"{statistics.median(own):.1f} ms, worst {max(own):.1f} ms (target ≤ 50 ms); worst with the student's "
          f"code {max(total):.1f} ms wall")
    if args.nbgrader:
        w = nbgrader_wall(args.nbgrader, args.processes)
        print(f"nbgrader over {w['submissions']} submissions ({w['processes']} autograde process(es)): "
              f"autograde {w['autograde_s']:.1f} s, "
              f"generate_feedback {w['generate_feedback_s']:.1f} s, {w['per_submission_s']:.2f} s per submission; "
              f"the package's part is {statistics.median(total) / 1e3 / w['per_submission_s']:.1%} of it")


if __name__ == "__main__":
    main()
