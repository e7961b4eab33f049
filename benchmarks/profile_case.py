"""Profile one benchmark case: where does autodiff_viz spend its time?

    .venv/bin/python benchmarks/profile_case.py W1 autodiff_viz fwd+bwd
    .venv/bin/python benchmarks/profile_case.py W2 "autodiff_viz (tape ops)" step --calls 200
    .venv/bin/python benchmarks/profile_case.py W5 autodiff_viz fwd+bwd --sampling

Runs the case once without a profiler (time per call), then under
cProfile (exact call counts; every Python call pays the profiler's
overhead, so tiny functions look bigger than they are) or, with
``--sampling``, under pyinstrument (if installed; low overhead, no counts).
Each function's share is also given as µs of a real, unprofiled call:
its share of the profiled time × the unprofiled time per call.
"""
from __future__ import annotations

import os
import sys

os.environ.update({k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import harness, libraries  # noqa: E402
from benchmarks.run import workload_modules  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", help="W1 ... V1")
    p.add_argument("variant", help="a row label, e.g. autodiff_viz")
    p.add_argument("case", help="a column, e.g. fwd+bwd")
    p.add_argument("--calls", type=int, default=0, help="profiled calls (default: about 2 s worth)")
    p.add_argument("--top", type=int, default=25, help="functions to list")
    p.add_argument("--sampling", action="store_true", help="pyinstrument instead of cProfile")
    args = p.parse_args(argv)
    harness.pin_to_cores(1)
    (wl,) = workload_modules([args.workload]) or (None,)
    if wl is None:
        p.error(f"no workload {args.workload}")
    lib = args.variant.split(" ")[0]
    variants = wl.variants(lib, libraries.load(lib, 1), wl.data(False))
    if args.variant not in variants or args.case not in variants[args.variant].cases:
        p.error(f"choose a row and case from: {[(v, list(x.cases)) for v, x in variants.items()]}")
    fn = variants[args.variant].cases[args.case]
    for _ in range(3):
        fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    calls = args.calls or max(1, int(2.0 / once))
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    per_call = (time.perf_counter() - start) / calls
    print(f"{args.workload} {args.variant} {args.case}: {per_call * 1e6:.1f} µs per call unprofiled, "
          f"{calls} profiled calls")
    if args.sampling:
        from pyinstrument import Profiler
        prof = Profiler(interval=0.0002)
        prof.start()
        for _ in range(calls):
            fn()
        prof.stop()
        print(prof.output_text(unicode=True, color=False))
        return 0
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:args.top]
    print(f"{'own µs/call':>12} {'calls/call':>10}  function")
    for (filename, line, name), (_cc, ncalls, tottime, _ct, _callers) in rows:
        where = os.path.relpath(filename) if filename.startswith("/") else filename
        print(f"{tottime / total * per_call * 1e6:12.1f} {ncalls / calls:10.1f}  {name} ({where}:{line})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
