"""Otter-Grader 7 with the package's test-file helper and records plugin, run by ``otter run`` (no Docker).

``otter generate`` builds the autograder zip from a ``@test_case`` test file
that calls ``autodiff_viz.grading.otter.test`` and an ``otter_config.json``
naming :class:`~autodiff_viz.grading.otter.RecordsPlugin`; ``otter run``
grades each submission as Gradescope or ``otter grade`` would. The plugin's
``after_grading`` collects each record into the class folder and its report
prints the class summary.

Otter's plugin API is that of ``otter/plugins/abstract_plugin.py`` in
ucbds-infra/otter-grader 7.0 (``AbstractOtterPlugin(submission_path,
submission_metadata, plugin_config)``; ``before_grading(config)``,
``after_grading(results)`` with a ``GradingResults`` that has
``set_plugin_data``/``get_plugin_data``; ``generate_report()`` returning the
text Otter prints under "PLUGIN REPORT"). ``otter grade --containers N``
needs a Docker daemon, which this machine lacks: ``otter run`` is the same
autograder without the container.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autodiff_viz.grading import demo, read_records

pytest.importorskip("otter")
pytestmark = pytest.mark.timeout(1800)     # a real grader: kernels start per submission (slow on a loaded machine)
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

TEST_FILE = '''from otter.test_files import test_case
from autodiff_viz.grading import otter as adv_otter

OK_FORMAT = False
name = "q1"
points = 4


@test_case(points=4)
def test_backward(env):
    adv_otter.test(env, "mlp")
'''


def _otter(args, cwd):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([str(BIN / "otter"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_otter_run_with_the_helper_and_the_plugin(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "q1.py").write_text(TEST_FILE)
    records = tmp_path / "class_records"
    (tmp_path / "otter_config.json").write_text(json.dumps(
        {"plugins": [{"autodiff_viz.grading.otter.RecordsPlugin": {"records": str(records)}}]}))
    _otter(["generate", "-t", "tests", "-c", "otter_config.json"], tmp_path)
    assert (tmp_path / "autograder.zip").exists()

    reports = {}
    for slip in ("correct", "tanh_one_minus_h"):
        folder = tmp_path / slip
        folder.mkdir()
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(demo.code(slip))])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, str(folder / f"{slip}.ipynb"))
        reports[slip] = _otter(["run", "-a", str(tmp_path / "autograder.zip"), "-o", str(folder),
                                str(folder / f"{slip}.ipynb")], folder)
        results = json.loads((folder / "results.json").read_text())
        q1 = next(t for t in results["tests"] if t["name"] == "q1")
        assert q1["score"] == (4 if demo.expected(slip) is None else 0), (slip, q1)
        if demo.expected(slip) is not None:
            assert "[wrong_local_factor(tanh)]" in q1["output"] and "'z'" in q1["output"]

    collected = {r["student"]: r for r in read_records(records)}
    assert set(collected) == {"correct", "tanh_one_minus_h"}
    assert collected["tanh_one_minus_h"]["checks"]["backward"]["first_kind"] == "wrong_local_factor(tanh)"
    assert collected["correct"]["checks"]["backward"]["ok"] is True
    report = reports["tanh_one_minus_h"]
    assert "autodiff_viz class summary (backward): 2 graded, 1 all right." in report
    assert "50% wrong_local_factor(tanh) at z" in report


def test_the_plugin_puts_the_records_in_otters_results(tmp_path, monkeypatch):
    """What leaves a grading container is Otter's results (results.pkl), so the plugin stores the records there."""
    from otter.test_files import GradingResults

    from autodiff_viz.grading import otter as adv_otter
    plugin = adv_otter.RecordsPlugin(str(tmp_path / "ada.ipynb"), {}, {"records": str(tmp_path / "class")})
    plugin.before_grading(None)
    with pytest.raises(AssertionError, match=r"\[sign\]"):
        adv_otter.test({"backward": demo.function("sign_dW")}, "mlp")
    results = GradingResults([])
    plugin.after_grading(results)
    data = results.get_plugin_data(adv_otter.PLUGIN)
    assert data["mlp"]["student"] == "ada" and data["mlp"]["checks"]["backward"]["first_kind"] == "sign"
    assert (tmp_path / "class" / "mlp" / "ada.json").exists()
    assert "ADV_GRADING_RECORDS" not in os.environ
