"""W2's floor for any Python tape: the step with a bare tape of ~40 lines, against numpy and autodiff_viz.

The W2 budget (≤ 1.5× the hand-written numpy step) leaves room for the
Python a tape must run per op. To see how much of autodiff_viz's cost is
that floor and how much is its own machinery (thread-local state, user
lines, the rule table's checks, records that let go of memory, the
diagnosis data), this runs the same step four ways in one process pinned
to one core, alternating round after round, medians:

* numpy: the hand-written backprop of ``benchmarks/w2_mlp.py``;
* bare tape: a list of ``(output id, inputs, VJPs, output)`` and a reverse
  loop over it, no checks, no names, nothing freed early: the same ops as
  W2's tape-ops step (matmul, add, tanh, log_softmax, multiply, sum,
  negative, divide);
* autodiff_viz, tape ops and ``Sequential`` + ``optimizers.SGD``, as W2;
* PyTorch's eager step (``torch.nn.Sequential`` + ``torch.optim.SGD``), if installed.

    .venv/bin/python benchmarks/w2_floor.py [--rounds 21]
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import harness  # noqa: E402  (imports nothing that loads a BLAS)

os.environ.update(harness.thread_environment(1))

import numpy as np  # noqa: E402


class BareTape:
    """The least a reverse-mode tape over numpy does: record each op's VJPs, replay them backwards."""

    def __init__(self):
        self.records = []
        self.ids = itertools.count()

    class Value:
        __slots__ = ("v", "id")

        def __init__(self, v, id_):
            self.v, self.id = v, id_

    def value(self, v):
        return self.Value(v, next(self.ids))

    def record(self, out, inputs, vjps):
        y = self.value(out)
        self.records.append((y.id, inputs, vjps, out))
        return y

    def matmul(self, a, b):
        return self.record(a.v @ b.v, (a, b), (lambda g, y, x, w: g @ w.T, lambda g, y, x, w: x.T @ g))

    def add_bias(self, a, b):
        return self.record(a.v + b.v, (a, b), (lambda g, y, x, c: g, lambda g, y, x, c: g.sum(0)))

    def tanh(self, a):
        return self.record(np.tanh(a.v), (a,), (lambda g, y, x: g * (1 - y * y),))

    def log_softmax(self, a):
        s = a.v - a.v.max(-1, keepdims=True)
        s -= np.log(np.exp(s).sum(-1, keepdims=True))
        return self.record(s, (a,), (lambda g, y, x: g - np.exp(y) * g.sum(-1, keepdims=True),))

    def multiply(self, a, b):
        return self.record(a.v * b.v, (a, b), (lambda g, y, x, w: g * w, lambda g, y, x, w: g * x))

    def sum(self, a):
        return self.record(a.v.sum(), (a,), (lambda g, y, x: np.broadcast_to(g, x.shape),))

    def negative(self, a):
        return self.record(-a.v, (a,), (lambda g, y, x: -g,))

    def divide(self, a, c):
        return self.record(a.v / c, (a,), (lambda g, y, x: g / c,))

    def gradient(self, target, sources):
        grads = {target.id: np.ones(())}
        for out_id, inputs, vjps, out in reversed(self.records):
            g = grads.pop(out_id, None)
            if g is None:
                continue
            xs = [t.v for t in inputs]
            for t, vjp in zip(inputs, vjps):
                gi = vjp(g, out, *xs)
                grads[t.id] = grads[t.id] + gi if t.id in grads else gi
        self.records.clear()
        return [grads.get(s.id) for s in sources]


def _bare_step(d, lr):
    """W2's tape-ops step on a :class:`BareTape`; ``step.gradients(x, y)`` for the check against numpy."""
    from benchmarks import w2_mlp as W
    tape = BareTape()
    params = [tape.value(p.copy()) for p in d["init"]]
    eye = np.eye(W.SIZES[-1])

    def gradients(x, y):
        p = params
        h = tape.tanh(tape.add_bias(tape.matmul(tape.value(x.copy()), p[0]), p[1]))
        h = tape.tanh(tape.add_bias(tape.matmul(h, p[2]), p[3]))
        z = tape.add_bias(tape.matmul(h, p[4]), p[5])
        loss = tape.divide(tape.negative(tape.sum(tape.multiply(tape.log_softmax(z), tape.value(eye[y])))), len(y))
        return tape.gradient(loss, params)

    def step(x, y):
        for v, g in zip(params, gradients(x, y)):
            v.v -= lr * g
    step.gradients = gradients
    return step


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args(argv)
    harness.pin_to_cores(1)
    import autodiff_viz as adv
    from benchmarks import w2_mlp as W
    d = W.data(False)
    per_epoch = len(d["batches"])
    runs = {"numpy (hand-written backprop)": (W.variants("numpy", np, d)["numpy"].cases["step"], per_epoch)}
    bare = _bare_step(d, W.LR)
    error = harness.max_relative_error(bare.gradients(*d["batches"][0]), W.reference(d))
    runs["bare Python tape (the floor)"] = (lambda: [bare(x, y) for x, y in d["batches"]], per_epoch)
    for name, variant in W.variants("autodiff_viz", adv, d).items():
        if "capture_locations" not in name:
            runs[name] = (variant.cases["step"], variant.per_call)
    from benchmarks import libraries
    try:                # PyTorch's eager step, when installed: what a C++ tape pays on the same step
        torch = libraries.load("torch", 1)
    except libraries.Missing:
        torch = None
    if torch is not None:
        runs["torch (eager, C++ autograd)"] = (W.variants("torch", torch, d)["torch"].cases["step"], per_epoch)
    medians = harness.interleaved(runs, args.rounds, 4)
    base = medians["numpy (hand-written backprop)"]
    print(f"W2 step, median of {args.rounds} interleaved rounds, one process pinned to one core "
          f"(bare tape's gradients vs numpy's: max relative error {error:.1e})")
    for name, m in medians.items():
        print(f"  {name:40s} {m * 1e6:7.1f} µs  {m / base:5.2f}× numpy")

if __name__ == "__main__":
    main()
