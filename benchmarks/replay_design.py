"""What a recording would cost if it kept only the boundary of each library model call and ran the call again on
request — measured before it was built (issue 42's cost targets). Built since as ``autodiff_viz/torch/rerun.py``,
the recorder's default (``record(rerun_models=True)``); ``benchmarks/real_models.py`` measures it. This sketch stays
as the design's lower bound: it keeps nothing a real recorder must (the learner's ops' values, buffers' copies).

The recording of ``adv.torch.record()`` sees every op inside a library model (a ``TorchFunctionMode``) and keeps
their values and autograd's graph until a trace reads them. On the tiny transformers of
:mod:`benchmarks.real_models` that is 1.25–1.4× a plain step's time and up to 1.6× its peak memory, and no setting of
the recording meets both targets (≤ 1.3×). The design measured here records:

* the learner's own ops (outside every library module), as now;
* for each outermost call of a library module: the module, its arguments, and the CPU generator's state at its
  entry — no op inside it, no value, no graph kept past the learner's ``backward()``;
* a copy of the weights before ``opt.step()`` writes them.

A trace would then run each call again — weights as before the update, the generator's state at its entry —
under the full recorder, and backpropagate it: activation checkpointing's idea, applied to the trace. This script
measures the cheap half against plain and the current recorder (time: CPU-time minima and medians of interleaved
steps; peak: resident memory above the start, :func:`real_models.peak_above`), and checks the other half: the call
run again gives the same loss and the same gradient of every weight, bit for bit.

    AUTODIFF_VIZ_PURE=1 PYTHONPATH=$PWD python benchmarks/replay_design.py --models bert,gpt2,vit
    MALLOC_MMAP_THRESHOLD_=65536 ... --memory            # peaks that follow the live tensors

What it leaves out, and a real recorder must handle: buffers a call writes (BatchNorm's running statistics: run
again on copies), inputs or outputs written in place after the call, the learner's own hooks on inner modules
(they would fire again), generators passed explicitly, and what the trace shows of the learner's own ops (their ḡ
from tensor hooks instead of a kept graph).
"""
from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_models as rm  # noqa: E402
import torch  # noqa: E402
from torch.nn.modules import module as nn_module  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.torch  # noqa: E402,F401


class _Outside(TorchFunctionMode):
    """Notes every torch function run outside library modules (it is popped while one runs)."""

    def __init__(self, ops: list):
        super().__init__()
        self.ops = ops

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops.append((func, args, kwargs, out))
        return out


class Boundary:
    """The cheap recording: ``ops`` outside library modules, ``calls`` (module, args, kwargs, generator state,
    output) of the outermost module calls, ``before`` the weights before the optimizer's step."""

    def __init__(self, opt):
        self.ops, self.calls, self.before, self.depth, self.opt = [], [], {}, 0, opt
        self.mode = _Outside(self.ops)

    def _enter(self, module, args):
        self.depth += 1
        if self.depth == 1:         # the global hook gets no kwargs: _call_impl's own frame has them
            kwargs = sys._getframe(1).f_locals.get("kwargs") or {}
            self.mode.__exit__(None, None, None)
            self.calls.append([module, args, kwargs, torch.get_rng_state(), None])

    def _exit(self, module, args, output):
        self.depth -= 1
        if self.depth == 0:
            self.mode.__enter__()
            self.calls[-1][4] = output

    def run(self, step):
        """``step()`` recorded this way; returns its result."""
        hooks = [nn_module.register_module_forward_pre_hook(self._enter),
                 nn_module.register_module_forward_hook(self._exit)]
        opt, original = self.opt, self.opt.step

        def stepped(*args, **kwargs):
            self.mode.__exit__(None, None, None)
            self.before = {id(p): p.detach().clone() for g in opt.param_groups for p in g["params"]}
            try:
                return original(*args, **kwargs)
            finally:
                self.mode.__enter__()
        opt.step = stepped
        self.mode.__enter__()
        try:
            return step()
        finally:
            self.mode.__exit__(None, None, None)
            del opt.step
            for h in hooks:
                h.remove()

    def replay(self, k: int = 0):
        """Call ``k`` run again under ``adv.torch.record()``, weights as before the update and the generator as
        at its entry; returns ``(recording, output, gradients of the model's weights)``."""
        module, args, kwargs, rng, _ = self.calls[k]
        params = list(module.parameters())
        now = [p.data for p in params]
        state = torch.get_rng_state()
        for p in params:
            p.data = self.before[id(p)]
        torch.set_rng_state(rng)
        try:
            with adv.torch.record() as rec:
                out = module(*args, **kwargs)
                grads = torch.autograd.grad(out.loss, params, allow_unused=True)
        finally:
            torch.set_rng_state(state)
            for p, d in zip(params, now):
                p.data = d
        return rec, out, grads


def check(kind: str) -> dict:
    """One step of ``kind`` recorded at the boundary, then its model call run again: the same loss and every
    weight's gradient, bit for bit; how many ops each recording saw."""
    model, inputs, opt = rm.torch_model(kind)
    b = Boundary(opt)
    loss = b.run(functools.partial(rm.torch_step, model, inputs, opt))
    grads = [p.grad for p in model.parameters()]
    rec, out, again = b.replay()
    return {"loss": torch.equal(out.loss, loss),
            "gradients": all((g is None) == (a is None) and (g is None or torch.equal(g, a))
                             for g, a in zip(grads, again)),
            "ops outside": len(b.ops), "ops run again": len(rec.ops), "calls": len(b.calls)}


def _variants(kind):
    model, inputs, opt = rm.torch_model(kind)
    step = functools.partial(rm.torch_step, model, inputs, opt)

    def boundary():
        b = Boundary(opt)
        return b, b.run(step)
    return {"plain": step, "boundary": boundary, "recorded": rm.recorded_step("torch", step)}


def times(kind: str, repeats: int) -> dict:
    """CPU-time ``(minimum, median)`` of each variant ÷ plain's, over ``repeats`` interleaved steps."""
    variants = _variants(kind)
    for fn in variants.values():
        for _ in range(3):
            fn()
    ts: dict = {k: [] for k in variants}
    for i in range(repeats):
        for k in (list(variants) if i % 2 == 0 else list(variants)[::-1]):
            gc.collect()
            t0 = time.process_time()
            held = variants[k]()
            ts[k].append(time.process_time() - t0)
            del held
    p, pm = min(ts["plain"]), statistics.median(ts["plain"])
    return {k: (min(v) / p, statistics.median(v) / pm) for k, v in ts.items()}


def peaks(kind: str, runs: int) -> dict:
    """Median peak of each variant ÷ plain's, over ``runs`` interleaved steps."""
    med = rm.median_peaks(_variants(kind), runs)
    return {k: v / med["plain"] for k, v in med.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="bert,gpt2,vit")
    p.add_argument("--repeats", type=int, default=40)
    p.add_argument("--memory", action="store_true", help="peaks instead of times")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    for kind in a.models.split(","):
        if a.memory:
            r = peaks(kind, 7)
            print(f"{kind}: peak ÷ plain — boundary {r['boundary']:.2f}×, recorded {r['recorded']:.2f}×")
        else:
            r = times(kind, a.repeats)
            print(f"{kind}: time ÷ plain (minimum / median) — boundary {r['boundary'][0]:.2f}× / "
                  f"{r['boundary'][1]:.2f}×, recorded {r['recorded'][0]:.2f}× / {r['recorded'][1]:.2f}×")
            print(f"{kind}: run again {check(kind)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
