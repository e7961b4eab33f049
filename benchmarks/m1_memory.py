"""M1 — memory: what a recorded op holds, the peak of a training step, and a 1,000-step fit.

Three measurements, each in a fresh child process of its own (so nothing
measured before pollutes the high-water mark; the child resets it through
``/proc/self/clear_refs`` right before it measures). The child runs with
``MALLOC_MMAP_THRESHOLD_=131072``: every array above 128 KB gets pages of its
own that go back to the system when it is freed, so the resident size
follows what each library holds instead of what the allocator kept:

* **step peak**: an MLP 1024-1024-1024-10 (tanh, softmax cross-entropy,
  batch 256, float64, plain SGD), built and warmed up with one step; then
  three more steps. Reported: the peak RSS during those steps above the
  RSS before them (the step's own memory: activations, saved values,
  gradients, the update), and the whole process's peak RSS. numpy is the
  hand-written backprop (the floor), torch is ``nn.Sequential`` + ``optim.SGD``,
  autodiff_viz is ``Sequential`` + ``optimizers.SGD`` under a non-persistent tape.
* **bytes per recorded op**: a chain of 100,000 ops on 16 float64s (W1's
  ops), recorded with its graph alive (RSS growth ÷ ops); for autodiff_viz
  also what stays after ``tape.gradient`` while the user holds the tape
  and the output (the light records ``explain`` uses), and after the tape
  is dropped.
* **1,000-step fit** (autodiff_viz): ``model.fit`` for 1,000 steps of a
  small MLP; Python-tracked memory (tracemalloc) after step 100 and after
  step 1,000: it stays flat (no leak through tapes, histories or traces).

The timed case is one step of the MLP, so the memory sits next to its time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from . import w2_mlp
from .harness import Variant, finite_difference, max_relative_error

NAME = "M1"
TITLE = "memory: training step of an MLP 1024-1024-1024-10, batch 256 (step in ms; memory in MB / bytes)"
UNIT, SCALE = "ms", 1e3
CASES = ("step",)
BASELINE = ("numpy", "step")
SIZES, BATCH, LR = (1024, 1024, 1024, 10), 256, 0.01
CHAIN_OPS, FIT_STEPS = 100_000, 1000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data(quick: bool) -> dict:
    rng = np.random.default_rng(7)
    init = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        init += [rng.uniform(-limit, limit, (fan_in, fan_out)), np.zeros(fan_out)]
    return {"x": rng.normal(size=(BATCH, SIZES[0])), "y": rng.integers(0, SIZES[-1], BATCH), "init": init,
            "quick": quick}


# ----- the numpy floor (also the reference gradients): the same 3-layer tanh MLP as W2 --------
_numpy_gradients, _numpy_loss = w2_mlp._numpy_gradients, w2_mlp._numpy_loss


def reference(d) -> list:
    return _numpy_gradients(d["init"], d["x"], d["y"])


def check_reference() -> float:
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (4, 4), (4,), (4, 3), (3,)]
    params = [rng.normal(size=s) for s in shapes]
    x, y = rng.normal(size=(5, 3)), np.array([0, 2, 1, 1, 0])
    return max_relative_error(_numpy_gradients(params, x, y),
                              finite_difference(lambda *p: _numpy_loss(list(p), x, y), params))


# ----- the three libraries, one training step each ----------------------------------------
def _numpy_trainer(d):
    params = [p.copy() for p in d["init"]]

    def step():
        for p, g in zip(params, _numpy_gradients(params, d["x"], d["y"])):
            p -= LR * g
    return step, lambda: _numpy_gradients(params, d["x"], d["y"])


def _adv_trainer(adv, d):
    model = adv.Sequential([adv.layers.Dense(n, activation="tanh", dtype="float64") for n in SIZES[1:-1]]
                           + [adv.layers.Dense(SIZES[-1], dtype="float64")])
    model.build((None, SIZES[0]))
    model.set_weights(d["init"])
    opt = adv.optimizers.SGD(learning_rate=LR)
    x = adv.constant(d["x"])

    def grads():
        with adv.GradientTape() as tape:
            loss = adv.mean(adv.losses.sparse_categorical_crossentropy(d["y"], model(x), from_logits=True))
        return tape.gradient(loss, model.trainable_variables)

    def step():
        opt.apply_gradients(zip(grads(), model.trainable_variables))
    return step, lambda: [g.numpy() for g in grads()]


def _torch_trainer(torch, d):
    layers = []
    for i in range(len(SIZES) - 1):
        layers.append(torch.nn.Linear(SIZES[i], SIZES[i + 1], dtype=torch.float64))
        if i < len(SIZES) - 2:
            layers.append(torch.nn.Tanh())
    model = torch.nn.Sequential(*layers)
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for lin, W, b in zip(linears, d["init"][0::2], d["init"][1::2]):
            lin.weight.copy_(torch.from_numpy(W.T))
            lin.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])

    def step():
        loss_fn(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)     # no gradients held between steps (as the other two)

    def grads():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        return [g for lin in linears for g in (lin.weight.grad.numpy().T, lin.bias.grad.numpy())]
    return step, grads


def variants(lib: str, mod, d) -> dict:
    build = {"numpy": lambda: _numpy_trainer(d), "autodiff_viz": lambda: _adv_trainer(mod, d),
             "torch": lambda: _torch_trainer(mod, d)}.get(lib)
    if build is None:
        return {}
    step, grads = build()
    note = {"numpy": "backprop by hand", "autodiff_viz": "Sequential + optimizers.SGD, non-persistent tape",
            "torch": "nn.Sequential + optim.SGD"}[lib]
    return {lib: Variant({"step": step}, {"step": grads}, note=note,
                         facts=lambda: _child_facts(lib, d["quick"]))}


# ----- measuring in a child process ------------------------------------------------------------
def _child_facts(lib: str, quick: bool) -> dict:
    """Run the memory measurements for ``lib`` in a fresh process; the figures as table columns."""
    from .harness import thread_environment
    env = dict(os.environ, **thread_environment(1))
    env["MALLOC_MMAP_THRESHOLD_"] = str(128 * 1024)   # big arrays get their own pages, returned when freed
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "benchmarks.m1_memory", lib] + (["--quick"] if quick else [])
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"the memory child for {lib} failed: {run.stderr.strip().splitlines()[-1:]}")
    got = json.loads(run.stdout.strip().splitlines()[-1])
    mb = 2 ** 20
    out = {"step peak above start (MB)": round(got["step_peak"] / mb, 1),
           "process peak RSS (MB)": round(got["process_peak"] / mb, 1)}
    if "op_bytes" in got:
        out["bytes per recorded op (graph alive)"] = int(got["op_bytes"])
    if "op_bytes_after_gradient" in got:
        out["bytes per op kept after gradient (tape + output held)"] = int(got["op_bytes_after_gradient"])
        out["bytes per op kept after the tape is dropped"] = int(got["op_bytes_dropped"])
    if "fit_growth" in got:
        out[f"fit: traced memory growth, step 100 → {got['fit_steps']} (KB)"] = round(got["fit_growth"] / 1024, 1)
    return out


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _chain_bytes(lib: str, mod, n_ops: int) -> dict:
    """RSS growth per op of a recorded chain of W1's ops, and (autodiff_viz) what stays afterwards."""
    import gc
    rng = np.random.default_rng(1)
    x, a, b = rng.normal(size=16), rng.uniform(0.5, 1.0, 16), rng.normal(scale=0.1, size=16)
    out = {}
    gc.collect()
    start = _rss()
    if lib == "torch":
        xs = [mod.tensor(v, requires_grad=True) for v in (x, a, b)]
        h = xs[0]
        for _ in range(n_ops // 4):
            h = mod.exp(mod.tanh(h * xs[1] + xs[2]))
        y = h.sum()
        out["op_bytes"] = (_rss() - start) / n_ops
        del h, y
        return out
    if lib != "autodiff_viz":
        return out
    xs = [mod.constant(v) for v in (x, a, b)]
    with mod.GradientTape() as tape:
        tape.watch(xs)
        h = xs[0]
        for _ in range(n_ops // 4):
            h = mod.exp(mod.tanh(h * xs[1] + xs[2]))
        y = mod.sum(h)
    h = None
    out["op_bytes"] = (_rss() - start) / n_ops
    tape.gradient(y, xs)
    gc.collect()
    out["op_bytes_after_gradient"] = (_rss() - start) / n_ops
    tape = None
    gc.collect()
    out["op_bytes_dropped"] = (_rss() - start) / n_ops
    return out


def _fit_growth(adv, steps: int) -> dict:
    """Traced memory after step 100 and after the last of ``steps`` fit steps of a small MLP."""
    import gc
    import tracemalloc
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(steps * 4, 8)), rng.integers(0, 3, steps * 4)
    model = adv.Sequential([adv.layers.Dense(32, activation="tanh"), adv.layers.Dense(3)])
    model.compile(optimizer=adv.optimizers.SGD(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    seen = {}

    class Probe(adv.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch + 1 in (100, steps):
                gc.collect()
                seen[batch + 1] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[Probe()])
    tracemalloc.stop()
    return {"fit_growth": seen[steps] - seen[100], "fit_steps": steps}


def child(lib: str, quick: bool) -> dict:
    """The measurements for one library, in this (fresh) process."""
    import gc
    sys.path.insert(0, ROOT)
    from benchmarks import harness, libraries
    harness.pin_to_cores(1)
    mod = libraries.load(lib, 1)
    d = data(quick)
    step, _ = variants(lib, mod, d)[lib].cases["step"], None
    step()                                   # warm-up: builds, allocates the optimizer's state
    gc.collect()
    start = _rss()
    _reset_peak()
    for _ in range(1 if quick else 3):
        step()
    out = {"step_peak": _peak() - start, "process_peak": _peak()}
    out.update(_chain_bytes(lib, mod, CHAIN_OPS // 10 if quick else CHAIN_OPS))
    if lib == "autodiff_viz":
        out.update(_fit_growth(mod, 200 if quick else FIT_STEPS))
    return out


def targets(rows) -> list:
    """Issue 18: the step's peak memory ≤ 1.1× PyTorch's (reported by the facts; time is not the target)."""
    return []


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], "--quick" in sys.argv)))
