"""Before/after in one process: a past commit's package against the working tree's, interleaved (W1, W2, W6, W7).

Separate benchmark runs on a shared machine move W2's ratios by about ±0.1
and W1's by a few percent from run to run, more than a change to the
per-op overhead is worth. This loads both packages into one process (the
old one from ``git archive``, imported under another name), pins the
process to one core and alternates the baseline, old and new round after
round, so the load of the moment hits all of them alike. It prints the
median of each and its ratio to the baseline: W2's step against the
hand-written numpy step, W1's forward + backward per op against PyTorch
eager (numpy's hand-written backward if torch is not installed), W6's
float64 CNN training step against PyTorch eager, W7's float64 LSTM step
against PyTorch's LSTMCell loop.

The old package always runs as plain Python (it comes from ``git archive``,
without extensions); the working tree's runs compiled when ``setup.py``
compiled it. ``ab.py HEAD`` therefore measures what compiling buys, and
``AUTODIFF_VIZ_PURE=1`` compares plain Python with plain Python.

    .venv/bin/python benchmarks/ab.py b64f4c9                   # W2, 21 rounds
    .venv/bin/python benchmarks/ab.py b64f4c9 --workload W1     # W1
    .venv/bin/python benchmarks/ab.py b64f4c9 --workload W6     # W6 (needs torch)
    .venv/bin/python benchmarks/ab.py b64f4c9 --workload W7     # W7 (needs torch)
    .venv/bin/python benchmarks/ab.py b64f4c9 --rounds 9
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import harness  # noqa: E402  (imports nothing that loads a BLAS)

os.environ.update(harness.thread_environment(1))
OLD_NAME = "autodiff_viz_before"
#: workload -> (module, case timed, baseline libraries in order of preference, repeats per round, unit)
WORKLOADS = {"W1": ("w1_chain", "fwd+bwd", ("torch", "numpy"), 40, "µs per op"),
             "W2": ("w2_mlp", "step", ("numpy",), 4, "µs per step"),
             "W6": ("w6_cnn", "float64", ("torch",), 2, "µs per step"),
             "W7": ("w7_lstm", "float64", ("torch",), 2, "µs per step")}


def _export(commit: str, into: str) -> None:
    """The package directory of ``commit``, as ``into/autodiff_viz_before``."""
    archive = os.path.join(into, "old.tar")
    with open(archive, "wb") as f:
        subprocess.run(["git", "-C", ROOT, "archive", commit, "autodiff_viz"], stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    os.rename(os.path.join(into, "autodiff_viz"), os.path.join(into, OLD_NAME))


def _baseline(wl, d, libraries, candidates):
    """``(label, variant)`` of the first baseline library that is installed."""
    for lib in candidates:
        try:
            mod = libraries.load(lib, 1)
        except libraries.Missing:
            continue
        label, variant = next(iter(wl.variants(lib, mod, d).items()))
        return label, variant
    raise SystemExit(f"none of {candidates} is installed")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit", help="the commit to compare the working tree with")
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="W2")
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args(argv)
    harness.pin_to_cores(1)
    module, case, candidates, repeats, unit = WORKLOADS[args.workload]
    tmp = tempfile.mkdtemp(prefix="ab_")
    try:
        _export(args.commit, tmp)
        sys.path.insert(0, tmp)
        import importlib

        import autodiff_viz as new
        from benchmarks import libraries
        wl = importlib.import_module(f"benchmarks.{module}")
        old = importlib.import_module(OLD_NAME)
        d = wl.data(False)
        label, base = _baseline(wl, d, libraries, candidates)
        variants = {label: base}
        for tag, mod in ((args.commit, old), ("working tree", new)):
            for name, variant in wl.variants("autodiff_viz", mod, d).items():
                if "capture_locations" not in name:
                    variants[f"{tag}: {name}"] = variant
        medians = harness.interleaved({name: (v.cases[case], v.per_call) for name, v in variants.items()},
                                      args.rounds, repeats)
        ref = medians[label]
        print(f"{args.workload} {case}, median of {args.rounds} interleaved rounds, one process pinned to one core")
        for name, m in medians.items():
            print(f"  {name:55s} {m * 1e6:9.2f} {unit}  {m / ref:6.3f}× {label}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
