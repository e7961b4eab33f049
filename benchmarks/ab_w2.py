"""W2 before/after in one process: a past commit's package against the working tree's, interleaved.

Separate benchmark runs on a shared machine move W2's ratios by about ±0.1
from run to run, more than a change to the per-op overhead is worth. This
loads both packages into one process (the old one from ``git archive``,
imported under another name), pins the process to one core and alternates
numpy, old and new round after round, so the load of the moment hits all
of them alike. It prints the median step and its ratio to numpy's.

    .venv/bin/python benchmarks/ab_w2.py ba60116            # 21 rounds
    .venv/bin/python benchmarks/ab_w2.py ba60116 --rounds 9
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD_NAME = "autodiff_viz_before"


def _export(commit: str, into: str) -> None:
    """The package directory of ``commit``, as ``into/autodiff_viz_before``."""
    archive = os.path.join(into, "old.tar")
    with open(archive, "wb") as f:
        subprocess.run(["git", "-C", ROOT, "archive", commit, "autodiff_viz"], stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    os.rename(os.path.join(into, "autodiff_viz"), os.path.join(into, OLD_NAME))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit", help="the commit to compare the working tree with")
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    tmp = tempfile.mkdtemp(prefix="ab_w2_")
    try:
        _export(args.commit, tmp)
        sys.path[:0] = [ROOT, tmp]
        import numpy as np

        import autodiff_viz as new
        from benchmarks import w2_mlp as W
        old = __import__(OLD_NAME)
        d = W.data(False)
        cases = {"numpy": W.variants("numpy", np, d)["numpy"].cases["step"]}
        for tag, mod in ((args.commit, old), ("working tree", new)):
            for name, variant in W.variants("autodiff_viz", mod, d).items():
                if "capture_locations" not in name:
                    cases[f"{tag}: {name}"] = variant.cases["step"]
        times: dict = {k: [] for k in cases}
        per_epoch = len(d["batches"])
        for _ in range(args.rounds):
            for name, epoch in cases.items():
                epoch()
                start = time.perf_counter()
                for _ in range(4):
                    epoch()
                times[name].append((time.perf_counter() - start) / 4 / per_epoch)
        base = statistics.median(times["numpy"])
        print(f"W2 step, median of {args.rounds} interleaved rounds, one process pinned to one core")
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"  {name:55s} {m * 1e6:7.1f} µs  {m / base:5.2f}× numpy")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
