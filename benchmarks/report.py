"""Turn the measured rows into the markdown table: times, ratios to the baseline, targets met.

Everything here reads the JSON that :mod:`benchmarks.run` writes, so a table
can be made again from a saved run. No numpy: the orchestrator stays light.
"""
from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import sys

START, END = "<!-- results:start -->", "<!-- results:end -->"


def machine(command: str) -> dict:
    """Date, machine and command of this run, for the table's header."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = re.findall(r"^model name\s*:\s*(.+)$", fh.read(), re.M)
        cpu = names[0].strip() if names else cpu
    except OSError:
        pass
    from benchmarks import libraries
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "command": command,
        "commit": commit,
        "versions": {name: libraries.version(name) for name in ("numpy", "autodiff_viz")},
        "dirty": _dirty_files(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _dirty_files() -> list:
    """Package files changed since the commit (their state is what was measured)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", "autodiff_viz"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout
    except OSError:
        return []
    return [line[3:] for line in out.splitlines()]


def _load_sentence(meta) -> str:
    before, after = meta.get("load_average"), meta.get("load_average_after")
    if not before:
        return ""
    text = f"Load average (1 min) {before[0]:.2f} before the run"
    return text + (f", {after[0]:.2f} after." if after else ".")


def rows_by_key(results, workload: str, threads: int) -> dict:
    """``{(variant, case): seconds}`` of one workload at one thread count (the fastest round's median)."""
    out = {}
    for run in results["runs"]:
        for r in run["rows"]:
            if r["workload"] == workload and r["threads"] == threads:
                key = (r["variant"], r["case"])
                out[key] = min(out.get(key, r["seconds"]), r["seconds"])
    return out


def targets(results, modules) -> list:
    out = []
    for mod in modules:
        if hasattr(mod, "targets"):
            for t in mod.targets(rows_by_key(results, mod.NAME, 1)):
                t["met"] = t["measured"] >= t["limit"] if t.get("at_least") else t["measured"] <= t["limit"]
                out.append(t)
    return out


def _fmt(seconds, scale) -> str:
    v = seconds * scale
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def markdown(results) -> str:
    meta = results["meta"]
    rounds = max((run.get("round", 1) for run in results["runs"]), default=1)
    lines = [
        f"Measured {meta['date']} on {meta['machine']}; Python {meta['python']}, "
        f"commit {meta.get('commit') or '?'}"
        + (f" with uncommitted changes to {', '.join(meta['dirty'])}" if meta.get("dirty") else "") + ".",
        "",
        _load_sentence(meta),
        "",
        f"Command: `{meta['command']}`. Float64; one thread unless a table says otherwise "
        "(BLAS/OpenMP/XLA thread variables set before numpy loads, process pinned to that many cores). "
        "Each library runs in its own process; each cell is the median of ≥ 5 timed repeats after "
        "warm-up" + (f" (the fastest of {rounds} rounds, the libraries taking turns)" if rounds > 1 else "")
        + ", and (in brackets) its ratio to the baseline cell of the same table, measured in the same run.",
        "",
    ]
    versions = {run["library"]: run.get("version") for run in results["runs"]}
    versions = {k: v for k, v in versions.items() if v}
    lines.append("Libraries: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v) + ".")
    skipped = {run["library"]: run["skipped"] for run in results["runs"] if run.get("skipped")}
    for lib, why in skipped.items():
        lines.append(f"\n*Skipped {lib}*: {why}")
    lines.append("")
    if results.get("targets"):
        lines += ["### Targets", "", "| target | measured | met |", "|---|---|---|"]
        for t in results["targets"]:
            lines.append(f"| {t['target']} | {t['measured']:.3g}{t['unit'] and ' ' + t['unit']} | "
                         f"{'yes' if t['met'] else '**no**'} |")
        lines.append("")
    for name, wl in results["workloads"].items():
        for threads in wl["threads"]:
            lines += _workload_table(results, name, wl, threads)
    lines += _notes(results)
    lines += _checks(results)
    return "\n".join(lines) + "\n"


def _workload_table(results, name, wl, threads) -> list:
    rows = rows_by_key(results, name, threads)
    if not rows:
        return []
    scale, cases = wl["scale"], wl["cases"]
    base = rows.get(tuple(wl["baseline"])) if wl["baseline"] else None
    ratio_col = name == "W5"
    head = f"### {name} — {wl['title']}" + (f", {threads} thread{'s' * (threads > 1)}" if len(wl["threads"]) > 1
                                              else "")
    cols = ([wl.get("row", "library")] + [f"{c} ({wl['unit']})" for c in cases]
            + (["fwd+bwd / forward"] if ratio_col else []))
    ratios = f"Ratios in brackets: × {wl['baseline'][0]} {wl['baseline'][1]}." if base else ""
    out = [head, "", ratios, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    if not ratios:
        del out[2:4]
    labels = list(dict.fromkeys(v for v, _ in rows))
    facts = {f["variant"]: {k: v for k, v in f.items() if k not in ("workload", "variant")}
             for run in results["runs"] for f in run.get("facts", []) if f["workload"] == name}
    fact_cols = list(dict.fromkeys(k for f in facts.values() for k in f))
    cols += fact_cols
    out[-2:] = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    notes = {r["variant"]: r["note"] for run in results["runs"] for r in run["rows"]
             if r["workload"] == name and r.get("note")}
    for label in labels:
        cells = [label]
        for c in cases:
            t = rows.get((label, c))
            if t is None:
                cells.append("—")
            else:
                cells.append(_fmt(t, scale) + (f" ({t / base:.3g}×)" if base else ""))
        if ratio_col:
            f, fb = rows.get((label, "forward")), rows.get((label, "fwd+bwd"))
            cells.append(f"{fb / f:.3g}" if f and fb else "—")
        for k in fact_cols:
            v = facts.get(label, {}).get(k)
            cells.append("—" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v))
        out.append("| " + " | ".join(cells) + " |")
    explained = [f"{label}: {notes[label]}" for label in labels if label in notes]
    if explained:
        out += ["", "; ".join(explained) + "."]
    return out + [""]


def _notes(results) -> list:
    out = []
    for run in results["runs"]:
        for n in run.get("notes", []):
            out.append(f"* {run['library']}: {n}")
        for e in run.get("errors", []):
            out.append(f"* **error** {run['library']} ({run['threads']} thread(s)): {e.splitlines()[0]}")
    return (["### Notes", ""] + sorted(set(out), key=out.index) + [""]) if out else []


def _checks(results) -> list:
    out = ["### Gradient checks (before timing)", "",
           "Largest error relative to the largest reference entry.", "",
           "| workload | what | max relative error |", "|---|---|---|"]
    done = set()
    for run in results["runs"]:
        for c in run.get("reference_checks", []):
            if c["workload"] in done:
                continue
            done.add(c["workload"])
            out.append(f"| {c['workload']} | numpy reference vs central finite differences (tiny case) | "
                       f"{c['error']:.1e} |")
    seen = set()
    for run in results["runs"]:
        for c in run.get("checks", []):
            key = (c["workload"], c["variant"], c["case"])
            if key in seen:
                continue
            seen.add(key)
            out.append(f"| {c['workload']} | {c['variant']} {c['case']} vs numpy reference | {c['error']:.1e}"
                       f"{'' if c['ok'] else ' **FAIL**'} |")
    return ['<details markdown="1"><summary>Gradient checks</summary>', ""] + out + ["", "</details>", ""]


def write_docs(path: str, md: str) -> None:
    """Put ``md`` between the result markers of ``path`` (the rest of the page is hand-written)."""
    with open(path) as fh:
        page = fh.read()
    if START not in page or END not in page:
        raise ValueError(f"{path} has no {START} … {END} markers to put the results between.")
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as fh:
        fh.write(head + START + "\n" + md + END + tail)
