"""V1 — what seeing the graph costs: building a trace, its DOT and its SVG.

Two graphs: one training step of W2's MLP (``adv.Sequential``, three Dense
layers), and a 50-step ``SimpleRNN`` (16 units, batch 4, 8 features) with a
Dense head, drawn with ``collapse="layers"`` and expanded (every op, no
folding). Cases: ``tape.trace(loss)``, ``trace.to_dot(view="both")``, and
the SVG (Graphviz ``dot``) of the forward and of the "both" view. An SVG that
Graphviz cannot lay out within 30 s is reported as such, not timed. Last,
the explorer widget of the RNN: ``adv.show(tape)`` and one step of its
slider (the Python side of the update; the browser's repaint is not timed). autodiff_viz only; the overhead of
keeping traces possible during training is in the W1 and W2 targets
(locations captured vs ``capture_locations=False``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import numpy as np

from . import w2_mlp
from .harness import Variant

NAME = "V1"
TITLE = "trace, DOT and SVG of a recorded graph (ms)"
UNIT, SCALE = "ms", 1e3
CASES = ("trace", "DOT both", "SVG forward", "SVG both", "adv.show", "widget step")
BASELINE = None
ROW = "what is drawn"
SVG_PROBE_SECONDS = 30   # an SVG that takes longer is reported, not timed ≥ 5 times
RNN_STEPS, RNN_UNITS, RNN_BATCH, RNN_FEATURES = 50, 16, 4, 8


def unavailable():
    if shutil.which("dot") is None:
        return "Graphviz's `dot` is not installed (apt-get install graphviz); skipped"
    return w2_mlp.unavailable()


def data(quick: bool) -> dict:
    d = w2_mlp.data(quick)
    d["sequence"] = np.random.default_rng(6).normal(size=(RNN_BATCH, RNN_STEPS, RNN_FEATURES))
    return d


check_reference = w2_mlp.check_reference


def variants(lib: str, adv, d) -> dict:
    if lib != "autodiff_viz":
        return {}
    from autodiff_viz.views import render

    model = adv.Sequential([adv.layers.Dense(n, activation="tanh", dtype="float64") for n in w2_mlp.SIZES[1:-1]]
                           + [adv.layers.Dense(w2_mlp.SIZES[-1], dtype="float64")])
    model.build((None, w2_mlp.SIZES[0]))
    model.set_weights(d["init"])
    x, y = d["batches"][0]
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.losses.sparse_categorical_crossentropy(y, model(adv.constant(x)), from_logits=True))
    mlp = tape.trace(loss, model.trainable_variables)

    def mlp_gradients():
        """The trace's ḡ of each weight (its 2-norm for arrays too big to keep in full)."""
        out = []
        for v in model.trainable_variables:
            g = mlp.node(mlp.node_id_of(v)).grad
            out.append(g.data if g.data is not None else np.float64(g.stats["norm"]))
        return out

    rnn = adv.Sequential([adv.layers.SimpleRNN(RNN_UNITS, dtype="float64"), adv.layers.Dense(1, dtype="float64")])
    seq = adv.constant(d["sequence"])
    with adv.GradientTape() as rnn_tape:
        rnn_loss = adv.mean(adv.square(rnn(seq)))
    rnn_trace = rnn_tape.trace(rnn_loss, rnn.trainable_variables)

    def cases(tape_, target, sources, trace, collapse):
        dots = {view: trace.to_dot(view, collapse=collapse, budget=None) for view in ("forward", "both")}
        out = {"trace": lambda: tape_.trace(target, sources),
               "DOT both": lambda: trace.to_dot("both", collapse=collapse, budget=None)}
        slow = []
        for view, dot in dots.items():
            seconds = _svg_seconds(dot)
            if seconds is None:
                slow.append(f"SVG {view}: Graphviz needs more than {SVG_PROBE_SECONDS} s (not timed)")
            else:
                out[f"SVG {view}"] = lambda dot=dot: render.svg(dot)
        return out, "; ".join(slow)

    n_mlp, n_rnn = len(mlp.nodes), len(rnn_trace.nodes)
    graphs = {
        f"MLP training step ({n_mlp} nodes), expanded": (tape, loss, model.trainable_variables, mlp, None),
        f"50-step RNN ({n_rnn} nodes), collapse='layers'": (rnn_tape, rnn_loss, rnn.trainable_variables,
                                                             rnn_trace, "layers"),
        f"50-step RNN ({n_rnn} nodes), expanded": (rnn_tape, rnn_loss, rnn.trainable_variables, rnn_trace, None),
    }
    out = {}
    for label, args in graphs.items():
        timed, note = cases(*args)
        if "expanded" in label and args[3] is rnn_trace:
            timed.pop("trace")   # the same trace as the collapsed row
        out[label] = Variant(timed, {"trace": mlp_gradients} if args[3] is mlp else {}, note=note)
    if hasattr(adv, "show"):
        out[f"explorer widget, 50-step RNN ({n_rnn} nodes)"] = Variant(
            _widget_cases(adv, rnn_tape, rnn_loss, rnn.trainable_variables),
            note="adv.show(tape) builds the widget; a step moves the slider one step (kernel side only)")
    return out


def _widget_cases(adv, tape, target, sources) -> dict:
    explorer = adv.show(tape, target=target, sources=sources)
    steps = max(explorer.state.max_step, 1)
    at = [0]

    def step():
        at[0] = at[0] + 1 if at[0] < steps else 0
        explorer.go(at[0])

    return {"adv.show": lambda: adv.show(tape, target=target, sources=sources), "widget step": step}


def _svg_seconds(dot: str) -> float | None:
    """Seconds Graphviz takes for ``dot`` once, or None when it needs more than the probe allows."""
    start = time.perf_counter()
    try:
        subprocess.run(["dot", "-Tsvg", "-o", os.devnull], input=dot.encode(), timeout=SVG_PROBE_SECONDS,
                       check=True)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def reference(d) -> list:
    """W2's first-batch gradients: in full where the trace keeps them (≤ 256 entries), else their 2-norm."""
    from autodiff_viz.records.traces.model import VALUE_LIMIT
    return [r if r.size <= VALUE_LIMIT else np.float64(np.linalg.norm(r)) for r in w2_mlp.reference(d)]
