"""How long the explorer takes to open and to step on big graphs (issue 18): ``python benchmarks/explorer_scale.py``.

For op chains and for a deep MLP of about 5,000 and 50,000 trace nodes it
prints: ``adv.show`` from the tape (trace + diagnosis + the first drawing and
its step plan), the size of what is sent to the page, and the Python-side
cost of one step (the kernel's part: the chain-rule panel and the step
label; the page repaints on its own, see docs/performance.md) and of one
click on a node. Graphviz's ``dot`` is used when installed, as in a notebook.
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

import autodiff_viz as adv


def chain(n_ops: int):
    v = adv.Variable(np.linspace(-1, 1, 8), name="v")
    with adv.GradientTape() as tape:
        z = v
        for _ in range(n_ops - 1):
            z = adv.sin(z)
        total = adv.sum(z)
    return tape, total


def mlp(n_layers: int):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 8))
    model = adv.Sequential([adv.layers.Dense(8, activation="tanh") for _ in range(n_layers)] + [adv.layers.Dense(1)])
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(x)))
    return tape, loss


def measure(name, tape, target, steps=50):
    t0 = time.perf_counter()
    ex = adv.show(tape, target=target)
    opened = time.perf_counter() - t0
    st = ex.state
    payload = len(json.dumps(ex.graph.drawing))
    n = st.max_step
    ks = np.linspace(1, n, steps).astype(int)
    times = []
    for k in ks:
        t = time.perf_counter()
        ex.go(int(k))
        times.append(time.perf_counter() - t)
    clicks = []
    for nid in [st.trace.nodes[i].id for i in np.linspace(0, len(st.trace.nodes) - 1, 10).astype(int)]:
        t = time.perf_counter()
        ex.handle({"event": "select", "box": st.box_of(nid)})
        clicks.append(time.perf_counter() - t)
    print(f"| {name} | {len(st.trace.nodes):,} | {opened:.2f} | {payload / 1e3:,.0f} | "
          f"{statistics.median(times) * 1e3:.1f} / {max(times) * 1e3:.1f} | {statistics.median(clicks) * 1e3:.1f} |")
    sys.stdout.flush()
    return opened


def main(argv=None):
    sizes = [int(a) for a in (argv or sys.argv[1:])] or [5_000, 50_000]
    print("| graph | nodes | adv.show (s) | drawing sent (kB) | step, median / max (ms) | node click (ms) |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        measure(f"op chain, {n:,} ops", *chain(n))
        measure(f"MLP, {n // 5:,} Dense layers", *mlp(n // 5 - 1))


if __name__ == "__main__":
    main()
