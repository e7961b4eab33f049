"""Run the benchmarks: autodiff_viz against numpy and the libraries people would pick instead.

    bash dev.sh bench                      # everything, peers that are installed
    bash dev.sh bench --quick              # a smoke run (numbers not for publishing)
    bash dev.sh bench --workloads W1,W3 --libraries numpy,autodiff_viz
    bash dev.sh bench --docs               # also rewrite the table in docs/performance.md

Each library runs in its own process, started with the BLAS/OpenMP/XLA
thread variables set before numpy loads and pinned to that many cores.
Inside, every workload first checks the library's gradients against the
numpy reference (and the reference against finite differences), then
times. Results go to ``benchmarks/results/results.json`` and ``.md``; the
table prints ratios against the baseline measured in the same run.
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__" and "--worker" not in sys.argv:
    os.environ.update({k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import harness, libraries, report  # noqa: E402

MODULES = ("w1_chain", "w2_mlp", "w3_jacobian", "w4_hessian", "w5_matmul_ratio", "v1_trace",
           "w6_cnn", "w7_lstm", "w8_numpy_ops", "m1_memory", "s1_graph_scale", "t1_torch_record")
TOLERANCE = 1e-7   # largest relative gradient error accepted before a row is timed


def workload_modules(names=None) -> list:
    """The workload modules (W1 ... V1), optionally only those named (``W1,W3``)."""
    mods = []
    for m in MODULES:
        try:
            mod = importlib.import_module(f"benchmarks.{m}")
        except ModuleNotFoundError as exc:
            if exc.name != f"benchmarks.{m}":
                raise
            continue
        if names is None or mod.NAME in names:
            mods.append(mod)
    return mods


# ---------------------------------------------------------------------------
# Worker: one library, one thread count, in its own process
# ---------------------------------------------------------------------------
def worker(lib: str, threads: int, names: list, quick: bool) -> dict:
    harness.pin_to_cores(threads)
    settings = harness.Settings.make(quick)
    out = {"library": lib, "threads": threads, "version": None, "skipped": None,
           "reference_checks": [], "checks": [], "rows": [], "facts": [], "errors": [], "notes": []}
    try:
        mod = libraries.load(lib, threads)
    except libraries.Missing as exc:
        out["skipped"] = str(exc)
        return out
    out["version"] = libraries.version(lib) or getattr(mod, "__version__", None)
    for wl in workload_modules(names):
        skip = getattr(wl, "unavailable", lambda: None)()
        if skip:
            out["notes"].append(f"{wl.NAME}: {skip}")
            continue
        d = wl.data(quick)
        if lib == "numpy":
            out["reference_checks"].append({"workload": wl.NAME, "error": wl.check_reference()})
        ref = wl.reference(d)
        try:
            rows = wl.variants(lib, mod, d)
        except Exception as exc:  # noqa: BLE001  (a peer that cannot run a workload is noted, not fatal)
            out["errors"].append(f"{wl.NAME} {lib}: {type(exc).__name__}: {exc}")
            continue
        for label, variant in rows.items():
            _run_variant(wl, label, variant, ref, settings, threads, out)
    return out


def _run_variant(wl, label, variant, ref, settings, threads, out):
    bad = set()
    for case, fn in variant.checks.items():
        try:
            got = fn()
            err = harness.max_relative_error(got if isinstance(got, (list, tuple)) else [got], ref)
        except Exception as exc:  # noqa: BLE001
            out["errors"].append(f"{wl.NAME} {label} {case}: {type(exc).__name__}: {exc}")
            bad.add(case)
            continue
        out["checks"].append({"workload": wl.NAME, "variant": label, "case": case, "error": err,
                              "ok": err <= TOLERANCE})
        if err > TOLERANCE:
            bad.add(case)
            out["errors"].append(f"{wl.NAME} {label} {case}: gradient differs from the reference "
                                 f"by {err:.2e} (relative); not timed")
    if variant.facts is not None and not bad:
        try:
            out["facts"].append({"workload": wl.NAME, "variant": label, **variant.facts()})
        except Exception as exc:  # noqa: BLE001
            out["errors"].append(f"{wl.NAME} {label} facts: {type(exc).__name__}: {exc}")
    if bad - set(variant.cases):
        bad |= set(variant.cases)   # a check of the whole variant failed: time none of it
    for case, fn in variant.cases.items():
        if case in bad:
            continue
        print(f"  {wl.NAME} {label:<40} {case:<20}", end="", file=sys.stderr, flush=True)
        try:
            m = harness.measure(fn, settings)
        except Exception as exc:  # noqa: BLE001
            print(" failed", file=sys.stderr)
            out["errors"].append(f"{wl.NAME} {label} {case}: {type(exc).__name__}: {exc}\n"
                                 + traceback.format_exc(limit=3))
            continue
        m["seconds"] /= variant.per_call
        m["min"] /= variant.per_call
        m["max"] /= variant.per_call
        print(f" {m['seconds'] * wl.SCALE:10.3f} {wl.UNIT}", file=sys.stderr, flush=True)
        out["rows"].append({"workload": wl.NAME, "variant": label, "case": case, "threads": threads,
                            "per_call": variant.per_call, "note": variant.note, **m})


# ---------------------------------------------------------------------------
# Orchestrator
# ---------------------------------------------------------------------------
def orchestrate(args) -> dict:
    names = args.workloads.split(",") if args.workloads else None
    libs = args.libraries.split(",") if args.libraries else list(libraries.LIBRARIES)
    unknown = [name for name in libs if name not in libraries.LIBRARIES]
    if unknown:
        raise SystemExit(f"unknown libraries {unknown}; choose from {', '.join(libraries.LIBRARIES)}")
    mods = workload_modules(names)
    if names is not None and len(mods) < len(names):
        raise SystemExit(f"unknown workloads in {names}; there are {', '.join(m.NAME for m in workload_modules())}")
    thread_counts = sorted({t for m in mods for t in getattr(m, "THREADS", (1,))})
    results = {"meta": report.machine(args.command), "workloads": {}, "runs": []}
    for m in mods:
        results["workloads"][m.NAME] = {"title": m.TITLE, "unit": m.UNIT, "scale": m.SCALE,
                                        "cases": list(m.CASES), "baseline": list(m.BASELINE or ()),
                                        "threads": list(getattr(m, "THREADS", (1,))),
                                        "row": getattr(m, "ROW", "library")}
    for round_ in range(1, args.rounds + 1):
        for threads in thread_counts:
            wanted = [m.NAME for m in mods if threads in getattr(m, "THREADS", (1,))]
            for lib in libs:
                print(f"[bench] round {round_}/{args.rounds}: {lib}, {threads} thread(s): {', '.join(wanted)}",
                      file=sys.stderr, flush=True)
                run = _spawn(lib, threads, wanted, args.quick)
                run["round"] = round_
                results["runs"].append(run)
                if run.get("skipped"):
                    libs = [name for name in libs if name != lib]
    results["targets"] = report.targets(results, mods)
    if hasattr(os, "getloadavg"):
        results["meta"]["load_average_after"] = list(os.getloadavg())
    return results


def _spawn(lib, threads, names, quick) -> dict:
    env = dict(os.environ, **harness.thread_environment(threads))
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        path = fh.name
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--threads", str(threads),
           "--workloads", ",".join(names), "--out", path] + (["--quick"] if quick else [])
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT)
    try:
        with open(path) as fh:
            run = json.load(fh)
    except (OSError, ValueError):
        run = {"library": lib, "threads": threads, "skipped": None, "rows": [], "checks": [],
               "reference_checks": [], "notes": [],
               "errors": [f"the {lib} process exited with status {proc.returncode} and wrote no results"]}
    finally:
        if os.path.exists(path):
            os.unlink(path)
    run["wall_seconds"] = time.perf_counter() - start
    if run.get("skipped"):
        print(f"[bench]   skipped: {run['skipped']}", file=sys.stderr)
    for e in run.get("errors", []):
        print(f"[bench]   ERROR {e}", file=sys.stderr)
    return run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", help="comma-separated names, e.g. W1,W3 (default: all)")
    p.add_argument("--libraries", help=f"comma-separated, from {','.join(libraries.LIBRARIES)} (default: all)")
    p.add_argument("--quick", action="store_true", help="fewer, shorter repeats: a smoke run")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every library this many times, in turn; each cell keeps its fastest round's "
                        "median (other programs on the machine only ever add time)")
    p.add_argument("--out", help="results JSON path (default benchmarks/results/results.json)")
    p.add_argument("--docs", action="store_true", help="also rewrite the results in docs/performance.md")
    p.add_argument("--report", metavar="JSON", help="do not measure: make the table again from a saved results JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        result = worker(args.worker, args.threads, args.workloads.split(","), args.quick)
        with open(args.out, "w") as fh:
            json.dump(result, fh)
        return 0
    if args.report:
        with open(args.report) as fh:
            results = json.load(fh)
        md = report.markdown(results)
    else:
        args.command = "bash dev.sh bench" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
        results = orchestrate(args)
        out = args.out or os.path.join(ROOT, "benchmarks", "results", "results.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as fh:
            json.dump(results, fh, indent=1)
        md = report.markdown(results)
        with open(os.path.splitext(out)[0] + ".md", "w") as fh:
            fh.write(md)
        print(f"[bench] wrote {out} and {os.path.splitext(out)[0] + '.md'}", file=sys.stderr)
    if args.docs:
        report.write_docs(os.path.join(ROOT, "docs", "performance.md"), md)
    print(md)
    ours = [e for r in results["runs"] if r["library"] in ("numpy", "autodiff_viz") for e in r.get("errors", [])]
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
