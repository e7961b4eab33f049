"""S1 — drawing big graphs: trace, JSON, DOT and SVG at 50, 500, 5,000 and 50,000 nodes.

The graph is a deep stack of small dense layers, each in its own name scope
(``layer_k``: ``h = tanh(h @ W_k + b_k)``, batch 2, width 3) and a squared-sum
loss: five trace nodes per layer, so a model of 10,000 layers is a
50,000-node trace. Cases for autodiff_viz: ``tape.trace(loss)``, its JSON,
the DOT of the default drawing (the backward view, folded by meaning and to
the node budget), that DOT laid out by Graphviz and by the built-in
renderer (:mod:`autodiff_viz.views.minidot`), and the DOT and built-in SVG
of every op unfolded (``collapse=None, budget=None``, up to 5,000 nodes;
Graphviz on every op is probed once and reported when it needs more than
``SVG_PROBE_SECONDS``). The torch row draws the same model with
``torchviz.make_dot`` (its DOT, and Graphviz's SVG of it); where torchviz
fails (a RecursionError on deep graphs) the note says so.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import numpy as np

from .harness import Variant, finite_difference, max_relative_error

NAME = "S1"
TITLE = "drawing big graphs: trace, JSON, DOT, SVG (ms)"
UNIT, SCALE = "ms", 1e3
CASES = ("trace", "JSON", "DOT", "SVG graphviz", "SVG built-in", "DOT every op", "SVG built-in every op",
         "SVG graphviz every op")
BASELINE = None
ROW = "graph"
NODES = (50, 500, 5000, 50000)
QUICK_NODES = (50, 500)
UNFOLDED_LIMIT = 5000      # every-op drawings are timed up to this many nodes
SVG_PROBE_SECONDS = 60
BATCH, WIDTH = 2, 3


def layers_for(nodes: int) -> int:
    """Layers giving about ``nodes`` trace nodes: x, then W, matmul, b, add, tanh per layer, then h·h and sum."""
    return max(1, (nodes - 3) // 5)


def unavailable():
    try:
        from autodiff_viz.views import dot  # noqa: F401
    except ImportError:
        return "autodiff_viz.views.dot is not there; skipped"
    return None


def data(quick: bool) -> dict:
    rng = np.random.default_rng(3)
    sizes = QUICK_NODES if quick else NODES
    depth = layers_for(max(sizes))
    return {"sizes": sizes, "x": rng.normal(size=(BATCH, WIDTH)),
            "W": rng.normal(size=(depth, WIDTH, WIDTH)) / np.sqrt(WIDTH), "b": rng.normal(size=(depth, WIDTH)) * 0.1}


def _numpy_value(x, W, b):
    h = x
    for k in range(len(W)):
        h = np.tanh(h @ W[k] + b[k])
    return float(np.sum(h * h))


def _numpy_grad_w0(x, W, b):
    """∂loss/∂W_0 by hand: forward keeping each layer's input and output, then the chain rule back."""
    hs, h = [], x
    for k in range(len(W)):
        hs.append(h)
        h = np.tanh(h @ W[k] + b[k])
    g = 2 * h
    for k in range(len(W) - 1, -1, -1):
        h_out = np.tanh(hs[k] @ W[k] + b[k])
        g = g * (1 - h_out ** 2)
        if k == 0:
            return hs[0].T @ g
        g = g @ W[k].T


def reference(d) -> list:
    """∂loss/∂W_0 of the smallest graph (the one whose gradient is checked)."""
    n = layers_for(d["sizes"][0])
    return [_numpy_grad_w0(d["x"], d["W"][:n], d["b"][:n])]


def check_reference() -> float:
    rng = np.random.default_rng(0)
    x, W, b = rng.normal(size=(2, 3)), rng.normal(size=(4, 3, 3)) / 2, rng.normal(size=(4, 3)) * 0.1
    fd = finite_difference(lambda w0: _numpy_value(x, np.concatenate([w0[None], W[1:]]), b), [W[0].copy()])
    return max_relative_error([_numpy_grad_w0(x, W, b)], fd)


def variants(lib: str, mod, d) -> dict:
    if lib == "autodiff_viz":
        return _autodiff_viz(mod, d)
    if lib == "torch":
        return _torchviz(mod, d)
    return {}


def _autodiff_viz(adv, d) -> dict:
    from autodiff_viz.views import minidot, render

    out = {}
    for size in d["sizes"]:
        n = layers_for(size)
        x = adv.constant(d["x"], name="x")
        Ws = [adv.Variable(d["W"][k], name=f"W{k}") for k in range(n)]
        bs = [adv.Variable(d["b"][k], name=f"b{k}") for k in range(n)]
        with adv.GradientTape(persistent=True) as tape:
            h = x
            for k in range(n):
                with adv.name_scope(f"layer_{k}"):
                    h = adv.tanh(h @ Ws[k] + bs[k])
            loss = adv.sum(h * h)
        trace = tape.trace(loss)
        view = render.default_view(trace)
        folded = trace.to_dot(view)
        text = trace.to_json()
        cases = {"trace": lambda tape=tape, loss=loss: tape.trace(loss),
                 "JSON": lambda trace=trace: trace.to_json(),
                 "DOT": lambda trace=trace, view=view: trace.to_dot(view),
                 "SVG built-in": lambda folded=folded: minidot.svg(folded)}
        notes = [f"JSON {len(text) / 1e6:.1f} MB"]
        if shutil.which("dot"):
            cases["SVG graphviz"] = lambda folded=folded: render.svg(folded)
        if len(trace.nodes) <= UNFOLDED_LIMIT:
            full = trace.to_dot(view, collapse=None, budget=None)
            cases["DOT every op"] = lambda trace=trace, view=view: trace.to_dot(view, collapse=None, budget=None)
            cases["SVG built-in every op"] = lambda full=full: minidot.svg(full)
            if shutil.which("dot"):
                seconds = _svg_seconds(full)
                if seconds is None:
                    notes.append(f"Graphviz on every op: more than {SVG_PROBE_SECONDS} s (not timed)")
                else:
                    cases["SVG graphviz every op"] = lambda full=full: render.svg(full)
        checks = {}
        if size == d["sizes"][0]:
            def grad_w0(trace=trace, W0=Ws[0]):
                return [trace.node(trace.node_id_of(W0)).grad.data]
            checks["trace"] = grad_w0
        out[f"{len(trace.nodes)} nodes ({n} layers), {view} view"] = Variant(cases, checks, note="; ".join(notes))
    return out


def _torchviz(torch, d) -> dict:
    try:
        import torchviz
    except ImportError:
        return {}
    out = {}
    for size in d["sizes"]:
        n = layers_for(size)
        x = torch.tensor(d["x"])
        Ws = [torch.tensor(d["W"][k], requires_grad=True) for k in range(n)]
        bs = [torch.tensor(d["b"][k], requires_grad=True) for k in range(n)]
        h = x
        for k in range(n):
            h = torch.tanh(h @ Ws[k] + bs[k])
        loss = (h * h).sum()
        params = {f"W{k}": w for k, w in enumerate(Ws)} | {f"b{k}": b for k, b in enumerate(bs)}

        def make(loss=loss, params=params):
            return torchviz.make_dot(loss, params=params)

        label = f"torchviz.make_dot, {size} nodes ({n} layers)"
        cases = {"DOT": lambda make=make: make().source}
        try:
            graph = make()
            source = graph.source
        except RecursionError:
            # timed anyway, so the table's errors say where torchviz stops
            out[label] = Variant(cases, note="torchviz: RecursionError (make_dot walks the graph recursively)")
            continue
        note = ""
        if shutil.which("dot"):
            seconds = _svg_seconds(source)
            if seconds is None:
                note = f"Graphviz on torchviz's DOT: more than {SVG_PROBE_SECONDS} s (not timed)"
            else:
                cases["SVG graphviz"] = lambda graph=graph: graph.pipe(format="svg")
        checks = {}
        if size == d["sizes"][0]:
            def grad_w0(loss=loss, W0=Ws[0]):
                return [torch.autograd.grad(loss, W0, retain_graph=True)[0].numpy()]
            checks["DOT"] = grad_w0
        out[label] = Variant(cases, checks, note=note)
    return out


def _svg_seconds(dot: str) -> float | None:
    """Seconds Graphviz takes for ``dot`` once, or None when it needs more than the probe allows."""
    start = time.perf_counter()
    try:
        subprocess.run(["dot", "-Tsvg", "-o", os.devnull], input=dot.encode(), timeout=SVG_PROBE_SECONDS,
                       check=True, capture_output=True)
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"Graphviz failed: {exc.stderr.decode()[:300]}") from None
    return time.perf_counter() - start
