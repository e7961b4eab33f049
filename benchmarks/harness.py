"""What every workload shares: timing, thread limits, loading a peer library, comparing gradients.

A workload module (``w1_chain``, ``w3_jacobian`` ...) describes *what* to run;
this module decides *how* it is timed, so every number in the table was
measured the same way: warm-up calls first, then the median of at least
five repeats with ``time.perf_counter``; a repeat runs the function enough
times to last ``min_seconds`` so that a 100 µs function is not timed by
the clock's resolution.
"""
from __future__ import annotations

import gc
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def thread_environment(threads: int) -> dict:
    """Environment variables that hold BLAS, OpenMP and XLA to ``threads`` threads.

    They must be set before numpy (or torch, or jax) is first imported: the
    BLAS reads them once, when it loads.
    """
    env = {name: str(threads) for name in THREAD_VARIABLES}
    multi = "true" if threads > 1 else "false"
    env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_ENABLE_X64"] = "1"
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def pin_to_cores(threads: int) -> None:
    """Keep this process on ``threads`` cores, so no library can use more behind our back."""
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[:threads])


@dataclass
class Settings:
    """How hard to time: ``quick`` is for a smoke run, not for numbers to publish."""

    repeats: int = 7
    warmup: int = 2
    min_seconds: float = 0.05
    quick: bool = False

    @classmethod
    def make(cls, quick: bool) -> "Settings":
        return cls(repeats=5, warmup=1, min_seconds=0.005, quick=True) if quick else cls()


def measure(fn: Callable[[], object], settings: Settings) -> dict:
    """Median seconds per call of ``fn`` (warm-up, then ``settings.repeats`` timed repeats).

    Like :mod:`timeit`, garbage collection is off while a repeat runs and
    done between repeats, so one library's garbage does not land in
    another's time.
    """
    for _ in range(settings.warmup):
        fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    number = max(1, int(settings.min_seconds / max(once, 1e-7)))
    times = []
    was_enabled = gc.isenabled()
    try:
        for _ in range(max(settings.repeats, 5)):
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - start) / number)
            if was_enabled:
                gc.enable()
    finally:
        if was_enabled:
            gc.enable()
    return {"seconds": statistics.median(times), "min": min(times), "max": max(times),
            "repeats": len(times), "number": number}


def interleaved(runs: dict, rounds: int, repeats: int) -> dict:
    """Median seconds per unit of each ``{name: (fn, per_call)}``, the runs alternating round after round.

    For before/after comparisons in one process (``benchmarks/ab.py``,
    ``benchmarks/w2_floor.py``): on a shared machine the load of the moment
    then hits every run alike, which separate processes timed one after the
    other cannot promise. Each round calls each ``fn`` once to warm up, then
    ``repeats`` times timed, and divides by ``repeats · per_call``.
    """
    times: dict = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (fn, per_call) in runs.items():
            fn()
            start = time.perf_counter()
            for _ in range(repeats):
                fn()
            times[name].append((time.perf_counter() - start) / repeats / per_call)
    return {name: statistics.median(ts) for name, ts in times.items()}


@dataclass
class Variant:
    """One row of a workload's table: a library used one way (``jax + jit``).

    ``cases`` maps a case name (``forward``, ``fwd+bwd`` ...) to a function
    with no arguments that runs it once; ``checks`` maps a case name to a
    function returning the arrays (or one array) that must equal the numpy
    reference, checked before anything is timed; ``per_call`` divides the
    measured time (ops in a chain, steps in an epoch); ``facts`` returns
    other things worth a column (a test accuracy).
    """

    cases: dict
    checks: dict = field(default_factory=dict)
    per_call: int = 1
    note: str = ""
    facts: Callable[[], dict] | None = None


def max_relative_error(got, want) -> float:
    """The largest ``|got − want|`` over the arrays, relative to the largest ``|want|``."""
    import numpy as np
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        if g.shape != w.shape:
            raise ValueError(f"gradient of shape {g.shape}, the reference has {w.shape}")
        scale = max(float(np.max(np.abs(w))), 1e-300)
        worst = max(worst, float(np.max(np.abs(g - w))) / scale)
    return worst


def finite_difference(f: Callable, args: list, eps: float = 1e-6) -> list:
    """Central differences of scalar ``f(*args)`` with respect to every entry of every arg."""
    import numpy as np
    grads = []
    for k, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        grads.append(g)
    return grads


class Trainer:
    """One library's model: ``reset`` to the shared start, ``step``, ``gradients``, and (W2) ``logits`` for accuracy."""

    def __init__(self, reset, step, gradients, logits=None):
        self.reset, self.step, self.gradients, self.logits = reset, step, gradients, logits


def dtype_variant(trainers: dict, note="") -> Variant:
    """A row timed per dtype (``{"float64": Trainer, "float32": Trainer}``), checked on float64 from the shared
    start."""
    def grads():
        t = trainers["float64"]
        t.reset()
        return t.gradients()

    return Variant({dt: tr.step for dt, tr in trainers.items()}, {"float64": grads}, note=note)
