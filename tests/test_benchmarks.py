"""The benchmarks keep measuring the right thing: references agree with finite
differences, autodiff_viz agrees with the references, and a missing peer library
is skipped with a note. No timing is asserted here (timings live in docs/performance.md).
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import libraries, report  # noqa: E402
from benchmarks.run import workload_modules  # noqa: E402


@pytest.mark.parametrize("workload", workload_modules(), ids=lambda m: m.NAME)
def test_every_numpy_reference_agrees_with_finite_differences(workload):
    assert workload.check_reference() < 1e-6


def test_a_quick_run_checks_autodiff_viz_against_the_references_and_writes_the_table(tmp_path):
    out = tmp_path / "results.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--workloads", "W1,W3",
                          "--libraries", "numpy,autodiff_viz", "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())
    checks = [c for r in results["runs"] for c in r["checks"] if r["library"] == "autodiff_viz"]
    assert {(c["workload"], c["case"]) for c in checks} >= {
        ("W1", "fwd+bwd"), ("W3", "loop of reverse"), ("W3", "vectorized reverse"), ("W3", "forward mode")}
    assert all(c["ok"] for c in checks), checks
    md = (tmp_path / "results.md").read_text()
    assert "### W1" in md and "### W3" in md and "| autodiff_viz (capture_locations=False) |" in md
    assert results["meta"]["command"].startswith("bash dev.sh bench --quick")


def test_a_missing_peer_is_skipped_with_the_install_command(monkeypatch):
    real = importlib.import_module

    def no_jax(name, *args):
        if name == "jax":
            raise ImportError("No module named 'jax'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_jax)
    with pytest.raises(libraries.Missing, match="pip install jax jaxlib"):
        libraries.load("jax", threads=1)


def test_docs_table_is_replaced_between_the_markers_only(tmp_path):
    page = tmp_path / "performance.md"
    page.write_text(f"# Performance\nintro\n{report.START}\nold table\n{report.END}\noutro\n")
    report.write_docs(str(page), "new table\n")
    assert page.read_text() == f"# Performance\nintro\n{report.START}\nnew table\n{report.END}\noutro\n"


def test_the_bare_tape_of_the_w2_floor_computes_w2s_gradients():
    """benchmarks/w2_floor.py times a bare tape as the floor of W2: it must compute the same step."""
    from benchmarks import w2_floor, w2_mlp
    if w2_mlp.unavailable():
        pytest.skip(w2_mlp.unavailable())
    d = w2_mlp.data(True)
    step = w2_floor._bare_step(d, w2_mlp.LR)
    for got, want in zip(step.gradients(*d["batches"][0]), w2_mlp.reference(d)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


def test_the_replay_design_runs_a_recorded_model_call_again_bit_for_bit():
    """``benchmarks/replay_design.py`` measures a recording that keeps only the boundary of a library model's call
    (docs/performance.md); its claim that running the call again gives the same numbers holds: BERT-tiny's loss and
    every weight's gradient, with dropout on, bit for bit, from the ops inside the model that the first recording
    never saw."""
    pytest.importorskip("torch")
    try:
        import transformers  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - a broken torchvision beside it raises RuntimeError, not ImportError
        pytest.skip(f"transformers is not usable ({type(exc).__name__}: {exc})")
    from benchmarks import replay_design

    got = replay_design.check("bert")
    assert got["loss"] and got["gradients"], got
    assert got["calls"] == 1 and got["ops run again"] > got["ops outside"], got
