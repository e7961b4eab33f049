"""The first five minutes (issue 35): what ``bash dev.sh tour`` installs and starts, and the tour's map of the course.

``dev.sh`` is run for real here, against a stand-in Python (a script that
logs how it was called) in a virtual-environment folder of its own, so the
tests see which extra each command installs, whether it compiles, and that
a second tour starts without installing anything.
"""
import json
import os
import re
import stat
import subprocess
from pathlib import Path

from autodiff_viz.course import run_notebooks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


def _fake_venv(tmp_path, stamps=()):
    """A venv folder whose ``bin/python`` logs ``AUTODIFF_VIZ_PURE|args`` and succeeds (the staleness check: no)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "${{AUTODIFF_VIZ_PURE:-}}|$*" >> {log}\n'
                      'case "$1" in autodiff_viz/base/compiled.py) exit 1;; esac\nexit 0\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    digest = subprocess.run("cat pyproject.toml setup.py ci/constraints.txt | sha1sum | cut -c1-12", shell=True,
                            cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.strip()
    for extra in stamps:
        (venv / f".installed-{extra}-{digest}").touch()
    return venv, log


def _dev(command, venv, log):
    env = {**os.environ, "VENV": str(venv), "HEADLESS": "1"}
    for name in ("AUTODIFF_VIZ_PURE", "CI", "BOTH_WAYS", "CI_STAGES"):
        env.pop(name, None)
    done = subprocess.run(["bash", "dev.sh", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_the_tour_installs_only_its_extra_as_plain_python_then_runs_plain_python(tmp_path):
    """A fresh tour installs ``.[tour]`` (no torch, TensorFlow, Playwright, MkDocs) with no compiling, and the
    notebooks run with ``AUTODIFF_VIZ_PURE=1``: the learner waits for pip, not for a C compiler."""
    venv, log = _fake_venv(tmp_path)
    calls = _dev("tour", venv, log)
    assert calls[0] == "1|-m pip install --disable-pip-version-check -c ci/constraints.txt -e .[tour]"
    assert calls[-1].startswith("1|-m autodiff_viz.course.run_notebooks")
    assert (venv / f"{next(p.name for p in venv.glob('.installed-tour-*'))}").exists()
    calls_again = _dev("tour", venv, log)[len(calls):]
    assert [c.split("|")[1].split()[:2] for c in calls_again] == [["-m", "autodiff_viz.course.run_notebooks"]]


def test_the_tests_install_everything_and_compile_and_a_later_tour_reuses_them(tmp_path):
    """``bash dev.sh test`` (what CI runs) installs ``.[test]`` without ``AUTODIFF_VIZ_PURE``, so setup.py
    compiles the hot path; a tour after it installs nothing more."""
    venv, log = _fake_venv(tmp_path)
    calls = _dev("test", venv, log)
    assert "|-m pip install -c ci/constraints.txt -e .[test]" in calls
    assert calls[-1] == "|-m pytest"
    after = _dev("tour", venv, log)[len(calls):]
    assert not any("pip" in c for c in after) and after[-1].startswith("1|-m autodiff_viz.course.run_notebooks")


def test_ci_runs_the_whole_suite_as_plain_python_and_compiled_and_fails_if_either_fails(tmp_path):
    """Under ``CI=true`` (what ``.ci/run`` gets) ``bash dev.sh test`` runs every test twice: as plain Python
    (``AUTODIFF_VIZ_PURE=1``) and then compiled, so the package is checked to behave the same both ways; the
    command fails when either run fails, and its last line adds up every stage's pytest counts
    (``ci/tally.py``). ``CI_STAGES`` leaves out the minimum-versions and wheel stages, which make real venvs.
    The compiled run leaves out only the end-to-end files that the plain run already ran (``ONCE_ONLY``)."""
    venv, log = _fake_venv(tmp_path)
    env = {**os.environ, "VENV": str(venv), "CI": "true", "CI_STAGES": "plain compiled"}
    env.pop("AUTODIFF_VIZ_PURE", None)
    done = subprocess.run(["bash", "dev.sh", "test"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    runs = [c for c in log.read_text().splitlines() if "|-m pytest" in c]
    assert runs[0] == "1|-m pytest" and runs[1].startswith("|-m pytest --ignore=tests/test_site.py") and len(runs) == 2
    assert "--ignore=tests/test_tape.py" not in runs[1]
    assert log.read_text().splitlines()[-1].startswith("|ci/tally.py --seconds")

    python = venv / "bin" / "python"
    python.write_text(python.read_text().replace(
        "exit 0\n", 'case "${AUTODIFF_VIZ_PURE:-}|$1" in "1|-m") exit 1;; esac\nexit 0\n'))
    done = subprocess.run(["bash", "dev.sh", "test"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "stage plain: FAILED" in done.stderr and "stage compiled: passed" in done.stderr
    assert [c for c in log.read_text().splitlines() if "|-m pytest" in c][-2:] == runs
    assert "--failed plain" in log.read_text().splitlines()[-1]


def test_the_ci_tally_adds_every_stage_and_counts_a_stage_that_failed_outside_pytest(tmp_path):
    """The run's last line: pytest's closing lines of every stage summed, and a stage whose script failed
    without a failing test (a pip install, a version check) counted as a failure, so it never reads clean."""
    import sys
    (tmp_path / "plain.log").write_text("....\n== 2 failed, 3790 passed, 12 skipped in 300.12s (0:05:00) ==\n")
    (tmp_path / "dist.log").write_text("6 passed in 35.75s\n[dist] FAILED: not compiled\n3 passed in 80.00s\n")
    done = subprocess.run([sys.executable, str(ROOT / "ci" / "tally.py"), "--seconds", "905", "--failed",
                           "plain dist", str(tmp_path / "plain.log"), str(tmp_path / "dist.log")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["3799 passed, 3 failed, 12 skipped in 905s"]


def test_the_tour_and_the_course_page_list_every_notebook():
    """The tour's "Where next" and ``docs/course.md`` name every notebook from 01 (the course page 00 too),
    each once and in order, so a learner finishing the tour sees the whole course."""
    tour = json.loads((ROOT / "notebooks" / "00_tour.ipynb").read_text())
    where_next = next("".join(c["source"]) for c in tour["cells"] if "## Where next" in "".join(c["source"]))
    table = where_next.split("## Exercises")[0]
    assert re.findall(r"^\| `(\d\d_\w+)` \|", table, re.M) == NOTEBOOKS[1:]
    course = (ROOT / "docs" / "course.md").read_text()
    assert re.findall(r"^\| `(\d\d_\w+)` \|", course, re.M) == NOTEBOOKS


def test_a_headless_tour_without_torch_skips_the_bridge_notebooks_and_says_what_to_install(tmp_path, monkeypatch):
    """The tour's extra has no PyTorch or TensorFlow: notebooks 14, 16 and 18 (its PyTorch and TensorFlow cells)
    are skipped with the pip command, not failed on ``import torch``; every other notebook needs neither."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("torch", "tensorflow") else real(name, *a))
    needing = {p.stem: run_notebooks.missing_frameworks(p) for p in run_notebooks.notebook_paths()}
    assert {k: v for k, v in needing.items() if v} == {"14_your_pytorch_gradient": ["torch"],
                                                       "16_your_tensorflow_gradient": ["tensorflow"],
                                                       "18_why_zero_or_nan": ["torch", "tensorflow"]}
    folder = tmp_path / "nbs"
    folder.mkdir()
    (folder / "14_your_pytorch_gradient.ipynb").write_bytes(
        (ROOT / "notebooks" / "14_your_pytorch_gradient.ipynb").read_bytes())
    said = []
    assert run_notebooks.run_all(tmp_path / "out", folder, log=said.append) == []
    assert said == ["skip 14_your_pytorch_gradient.ipynb: it needs torch (pip install -e '.[torch]')"]
