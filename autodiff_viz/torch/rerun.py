"""A library model's call kept as its boundary, and run again when a trace asks (``record(rerun_models=True)``, the
default).

The whole recorder (:mod:`.record`) sees every op inside a library model — BERT's 70, ResNet-18's 60 — and keeps
their values and autograd's graph until a trace reads them. That costs time on every op (Python in the
``TorchFunctionMode``) and memory (values autograd would have freed, the graph kept past ``backward()``): on the
tiny transformers of ``benchmarks/real_models.py``, 1.2–1.4× a plain step's time and up to 1.7× its peak.

So the recorder steps aside while a library model runs. When the learner's code calls a library module that holds
other modules (``model(x)`` for a transformers model, a torchvision ResNet, an ``nn.Sequential`` — a single
``nn.Linear`` is still recorded op by op: one op costs less than its boundary), and the model's first call, recorded
whole, said that running it again pays (:func:`learn`), :func:`at_entry` keeps what running the call again needs:

* the module, its positional and keyword arguments (the global pre-hook gets no keyword arguments: they are read
  from ``Module._call_impl``'s frame),
* the CPU generator's state (dropout draws the same mask again),
* each submodule's ``training`` flag, and a copy of its buffers (BatchNorm's running statistics, which the call
  itself updates),

then pops the recorder's mode until the call returns, and notes one ``"call"`` record with the module's output; the
grad-mode events and ``Function.apply`` spans inside it are not noted (:mod:`.provenance`). The learner's own ops
are recorded as before, with their function and arguments (and the generator's state before one that drew random
numbers); ``backward()`` no longer keeps autograd's graph.

:func:`again` turns such a recording into the one the whole recorder would have made, when a trace, an explanation
or a comparison asks: it runs each recorded op the target depends on again — the learner's ops on the values run
again, the learner's own ``autograd.Function`` applied again as itself (running the ops of its forward would give its
values but not its backward), each call under a whole recording (:class:`~.record.Recording`) with the generator,
the training flags and the buffers as at its entry, the weights as the backward pass saw them
(:meth:`Recording.as_at` keeps them) — copies every other record, and places the recording's grad-mode events and
assignments where their records are in the run again. This is activation checkpointing's idea, applied to the
trace. The run again must give the target's value bit for bit; if it does not (a model reading state the recording
did not keep), the trace says so and names the whole recorder, never a picture of other numbers.

A call is recorded whole instead when it cannot be run again the same way: a hook of the learner's on any module
of it or a global module hook (it would fire again), a ``torch.Generator`` among its arguments, another recording or
torch-function mode above this one, a frame that is not ``Module._call_impl``'s (where the keyword arguments are).
"""
from __future__ import annotations

import contextlib
import dataclasses
import types
import weakref
from typing import TYPE_CHECKING

import torch
from torch.nn.modules import module as _nn
from torch.nn.utils import parametrize as _parametrize

from ..base import naming
from . import provenance, writes
from .capture import nbytes
from .letgo import _takes_generator, tensors_in
from .writes import aside, copies

if TYPE_CHECKING:
    from typing import Any, Iterator

_VERDICT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # model -> are its calls kept as boundaries?
# model -> weak references to its (modules, weights) at its first call: the model is among its own modules, and a
# strong list would keep it alive whenever that call never reached learn() (it raised)
_ENTERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MAKES = ("op", "rewrap", "detach")     # the learner's records that make a value (a call's are "call")
_CALL_IMPL = torch.nn.Module._call_impl.__code__
# the frames that call a global pre-hook: _call_impl, or the function it defines inside (torch 2.x: ``inner``)
_CALLERS = frozenset([_CALL_IMPL, *(c for c in _CALL_IMPL.co_consts if isinstance(c, types.CodeType))])
_GLOBAL_HOOKS = ("_global_backward_hooks", "_global_backward_pre_hooks", "_global_forward_hooks_always_called",
                 "_global_forward_hooks_with_kwargs")


class Call:
    """What running one library model's call again needs (see the module's docstring)."""

    __slots__ = ("module", "modules", "params", "flags", "args", "kwargs", "rng", "training", "buffers", "before")

    def __init__(self, module, modules, args, kwargs, buffers, before):
        self.module, self.modules, self.args, self.kwargs = module, modules, args, kwargs
        self.params = list(module.parameters())    # read by the call: an update after backward() copies them first
        self.flags = [p.requires_grad for p in self.params]     # a layer frozen after the call ran unfrozen
        self.rng = torch.get_rng_state()
        self.training = [m.training for m in modules]
        self.buffers, self.before = buffers, before


def learn(rec, module, start: int) -> None:
    """``module``'s first call, recorded whole as ``rec.ops[start:]``, says whether its later calls are kept as their
    boundary: when running it again would change nothing of the learner's and give the same numbers — its modules and
    weights after the call are those it was entered with, it assigned no tensor onto a module (a ``forward`` that
    makes a new ``nn.Parameter`` or keeps a loss on ``self`` would do it again), no weight of it is computed by a
    parametrization — and when the values its ops made outweigh its weights. Running a call again needs a copy of
    the weights before ``opt.step()`` writes them — the model's size again — whereas recording it whole keeps its
    values, or what the backward pass computed when that is smaller (:mod:`.capture`). BERT-tiny's ops make about
    ten times its weights; ResNet-18 on 32×32 images makes a fifth of its 45 MB of weights, and is recorded
    whole."""
    entered = _ENTERED.pop(module, None)
    if entered is None:
        return
    modules, weights = list(module.modules()), list(module.parameters())
    inside = {id(m) for m in modules}
    assigned = rec.provenance is not None and any(
        a.index >= start and id(a.owner) in inside for a in rec.provenance.assignments)
    parametrized = any(_parametrize.is_parametrized(m) for m in modules)
    same = _same_objects([r() for r in entered[0]], modules) and _same_objects([r() for r in entered[1]], weights)
    made = sum(nbytes(t) for op in rec.ops[start:] for t in op.outputs)
    _VERDICT[module] = same and not assigned and not parametrized and made >= sum(nbytes(p) for p in weights)


def _same_objects(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def at_entry(module, inputs, frame, mode) -> Call | None:
    """A :class:`Call` of ``module``, entered now with positional ``inputs`` from ``frame``; None when the call is to
    be recorded whole (see the module's docstring, and :func:`learn`)."""
    verdict = _VERDICT.get(module)
    if verdict is None and module not in _ENTERED:       # its first call: recorded whole, and judged (learn)
        _ENTERED[module] = ([weakref.ref(m) for m in module.modules()], [weakref.ref(p) for p in module.parameters()])
    if not verdict or frame.f_code not in _CALLERS or isinstance(module, torch.jit.ScriptModule):
        return None
    depth = torch._C._len_torch_function_stack()
    if not depth or torch._C._get_function_stack_at(depth - 1) is not mode:
        return None
    if len(_nn._global_forward_pre_hooks) != 1 or len(_nn._global_forward_hooks) != 1 or any(
            getattr(_nn, h, None) for h in _GLOBAL_HOOKS):
        return None
    modules = list(module.modules())
    if len(modules) < 2:
        return None
    for m in modules:
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
            return None
    kwargs = frame.f_locals.get("kwargs") or {}
    if _takes_generator(inputs, kwargs):
        return None
    buffers = list(module.buffers())
    return Call(module, modules, inputs, kwargs, buffers, copies(buffers))


class Mapped:
    """The recorded tensors and their values run again: ``mapped(obj)`` is ``obj`` with each tensor run again in
    its place (in lists, tuples and dicts too); a tensor not run again (a weight, the data) is itself."""

    def __init__(self):
        self.to: dict = {}         # id(recorded tensor) -> the tensor run again

    def has(self, t) -> bool:
        return id(t) in self.to

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return self.to.get(id(obj), obj)
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            items = [self(v) for v in obj]
            if type(obj) in (list, tuple):
                return type(obj)(items)
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        return obj

    def pair(self, op, outs: list) -> None:
        """``outs``, what running ``op`` again made, take the places of its recorded outputs."""
        if len(outs) != len(op.outputs) or any(a.shape != b.shape for a, b in zip(op.outputs, outs)):
            raise _diverged(op, f"{len(outs)} tensors of shapes {[tuple(t.shape) for t in outs]}, not "
                                f"{len(op.outputs)} of shapes {[tuple(t.shape) for t in op.outputs]}")
        for a, b in zip(op.outputs, outs):
            if a is not b:
                self.to[id(a)] = b

    def keyed(self, trace):
        """``trace`` (built on the recording run again) looking up the learner's own tensors too
        (``trace.node_id_of(logits)``)."""
        own = trace.key_of
        if own is not None:
            to = self.to
            trace.key_of = lambda t: own(to.get(id(t), t))
        return trace


def _diverged(op, what: str) -> RuntimeError:
    where = f" (recorded at {naming.short_place(*op.location)})" if op.location else ""
    return RuntimeError(
        f"trace: running {op.name}{where} again gave {what}. The recording kept this model's call as its boundary "
        "(record(rerun_models=True)) and the call did not run again the same way: it reads state the recording "
        "did not keep. Record the step with adv.torch.record() — every op kept — to trace it.")


def _needed(rec, target) -> set:
    """Indices of the records a trace of ``target`` runs again: the calls up to its ``backward()`` (or its op),
    and the learner's ops it depends on. A learner's op it does not depend on (a hand-written backward pass
    recorded beside the forward one, writing into its own tensors) is copied, not run again."""
    made = rec.producer(target) if isinstance(target, torch.Tensor) else None
    if made is None:
        return set()
    last = made.index
    for op in rec.ops[last:]:
        if op.kind == "backward" and op.inputs and op.inputs[0] is target:
            last = op.index
    need, out = {id(target)}, set()
    for op in reversed(rec.ops[:last + 1]):
        if op.kind == "call" or op.kind in _MAKES and any(id(t) in need for t in op.outputs):
            out.add(op.index)
            need.update(id(t) for t in op.inputs)
    return out


def needs_again(rec, target) -> bool:
    """Whether a trace of ``target`` must run the step again: it depends on a call kept as its boundary, or a
    ``backward()`` kept no graph. Otherwise the recording has every op it needs, as without :mod:`.rerun`."""
    return any(op.kind == "backward" and op.extra.get("freed") for op in rec.ops) or any(
        rec.ops[k].kind == "call" for k in _needed(rec, target))


@contextlib.contextmanager
def again(rec, target) -> Iterator[tuple]:
    """``(full, mapped)``: a whole recording of what ``rec`` recorded, each op ``target`` depends on run again, and
    the :class:`Mapped` from ``rec``'s tensors to it. Inside ``rec.as_at(target)``: the weights as the backward
    pass saw them. The buffers a call read hold their values at its entry until the block ends."""
    full = type(rec)(rec.exact_weights, rec.exact_values)
    for name in ("_module_names", "_aliases", "module_kinds", "_param_names", "root_vars", "_root_params",
                 "_line_names"):
        setattr(full, name, dict(getattr(rec, name)))
    full._modules = list(rec._modules)
    mapped, restore, starts, replayed, flags = Mapped(), {}, [], [], {}
    needed = _needed(rec, target)
    recorded = rec.provenance
    functions = {a.extra["start"]: a for a in (recorded.applied if recorded is not None else ()) if "run" in a.extra}
    hooks = [_nn.register_module_forward_pre_hook(full._enter_module),
             _nn.register_module_forward_hook(full._exit_module)]
    rec._paused += 1
    for op in rec.ops:            # each tensor whose requires_grad the recording saw set: as it was at the start
        if op.kind == "requires_grad" and op.extra.get("was") is not None and id(op.inputs[0]) not in flags:
            _flag(op.inputs[0], op.extra["was"], flags)
    full.provenance = provenance.start(full)      # the events of what runs again, at their places in ``full``
    try:
        try:
            skip = -1
            for op in rec.ops:
                starts.append(len(full.ops))
                f = functions.get(op.index)
                if f is not None and _wanted(rec, f, needed):
                    _function(full, f, mapped)
                    replayed.append(f)
                    skip = f.index
                if op.index < skip:               # an op inside that Function's forward: it ran again with it
                    continue
                if op.kind == "call" and op.index in needed:
                    _call(full, op, mapped, restore, flags)
                elif op.index in needed and "run" in op.extra:
                    _op(full, op, mapped)
                else:
                    _copy(full, op, mapped, flags)
            starts.append(len(full.ops))
        finally:
            provenance.stop(full.provenance)
            for h in hooks:
                h.remove()
            with aside():      # the graph holds the flags of then; a trace asks the learner's of now
                for t, flag in flags.values():
                    t.requires_grad_(flag)
            rec._paused -= 1
        if recorded is not None:
            _merge(full.provenance, recorded, starts, mapped, replayed)
        if isinstance(target, torch.Tensor) and mapped.has(target) and not _same(target, mapped(target)):
            raise _diverged(rec.producer(target), "another value of the target")
        yield full, mapped
    finally:
        with aside():
            for b, values, version in restore.values():
                b.copy_(values)
                torch._C._autograd._unsafe_set_version_counter((b,), (version,))


def _merge(mine, recorded, starts: list, mapped, replayed: list) -> None:
    """``mine`` (the provenance of the run again) gains what ``recorded`` noted outside the calls kept as their
    boundary — grad-mode events, ``Function.apply`` spans, assignments onto modules — at the places their records
    have in the run again (``starts[i]``: where record ``i`` of the recording begins there); a custom Function
    applied again (``replayed``) is there already."""
    def at(i):
        return starts[min(i, len(starts) - 1)]
    again = {id(f.extra["setter"]) for f in replayed}
    mine.grad_events = sorted([(at(i), on, who, changed) for i, on, who, changed in recorded.grad_events]
                              + mine.grad_events, key=lambda e: e[0])
    mine.spans = sorted([[at(a), None if b is None else at(b), who] for a, b, who in recorded.spans
                         if id(who) not in again] + mine.spans, key=lambda sp: sp[0])
    mine.applied = sorted([dataclasses.replace(a, index=at(a.index), inputs=[mapped(t) for t in a.inputs],
                                               outputs=[mapped(t) for t in a.outputs])
                           for a in recorded.applied if id(a.extra["setter"]) not in again] + mine.applied,
                          key=lambda a: a.index)
    mine.assignments = sorted([dataclasses.replace(a, index=at(a.index)) for a in recorded.assignments]
                              + mine.assignments, key=lambda a: a.index)


def _wanted(rec, f, needed: set) -> bool:
    """Whether custom ``Function`` ``f`` (an :class:`~.provenance.Applied`) is on the target's path: an op of its
    forward is, or a needed op reads what it returned."""
    if any(k in needed for k in range(f.extra["start"], f.index)):
        return True
    outs = {id(o) for o in f.outputs}
    return any(id(t) in outs for k in needed for t in rec.ops[k].inputs)


def _function(full, f, mapped) -> None:
    """A learner's custom ``autograd.Function`` applied again on the values run again: its forward's ops are
    recorded by ``full`` at the learner's lines, and its outputs are again its own backward's (running the ops of
    its forward one by one would give the same values but not its gradient)."""
    args, kwargs = f.extra["run"]
    was = torch.is_grad_enabled()
    torch._C._set_grad_enabled(True)
    full._mode.__enter__()
    try:
        result = f.extra["cls"].apply(*mapped(args), **mapped(kwargs))
    finally:
        full._mode.__exit__(None, None, None)
        torch._C._set_grad_enabled(was)
    outs = [o for o in (result if isinstance(result, (tuple, list)) else (result,)) if isinstance(o, torch.Tensor)
            and getattr(o.grad_fn, "_forward_cls", None) is f.extra["cls"]]
    mapped.pair(f, outs)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    with aside():
        return a.shape == b.shape and bool(((a == b) | (a != a) & (b != b)).all())


def _finish(new, op) -> None:
    """The record run again keeps what the recording said of ``op`` (its grad mode, its name on the line)."""
    new.grad_enabled, new.inference, new.assigned = op.grad_enabled, op.inference, op.assigned


def _flag(t, value: bool, flags: dict) -> None:
    """Leaf ``t``'s ``requires_grad`` set to ``value`` while the step runs again; ``flags`` keeps the learner's, put
    back when it has run."""
    if t.is_leaf and t.requires_grad != value:
        flags.setdefault(id(t), (t, t.requires_grad))
        with aside():
            t.requires_grad_(value)


def _copy(full, op, mapped, flags=None) -> None:
    """``op`` copied as it was recorded, its tensors mapped; a ``requires_grad`` record sets the flag it set."""
    new = full._note(op.name, op.kind, [mapped(t) for t in op.inputs], [mapped(t) for t in op.outputs], op.extra,
                     at=op.location, scope=op.scope)
    _finish(new, op)
    if op.kind == "backward":
        full._backwards += 1
    elif op.kind == "requires_grad" and flags is not None:
        _flag(mapped(op.inputs[0]), bool(op.extra.get("to")), flags)


@contextlib.contextmanager
def _state(op, rng):
    """``op``'s grad mode and inference mode and (when given) the generator's state ``rng`` inside the block; the
    learner's after it. Switched through torch's C functions: ``torch.no_grad()`` would be a grad-mode event of the
    learner's (:mod:`.provenance`)."""
    was, now = torch.is_grad_enabled(), torch.get_rng_state() if rng is not None else None
    torch._C._set_grad_enabled(op.grad_enabled)
    if rng is not None:
        torch.set_rng_state(rng)
    try:
        with torch._C._InferenceMode(True) if op.inference else contextlib.nullcontext():
            yield
    finally:
        torch._C._set_grad_enabled(was)
        if now is not None:
            torch.set_rng_state(now)


def _op(full, op, mapped) -> None:
    """A learner's op run again on the values run again (copied as recorded when it reads none of them and no
    weight: its outputs are the same tensors)."""
    func, args, kwargs = op.extra["run"]
    if not any(mapped.has(t) or t.requires_grad for t in op.inputs):
        return _copy(full, op, mapped)
    written = writes.written(op.name, args, kwargs)
    if written is not None and not mapped.has(written):
        if written.requires_grad:           # a weight written in place (an update by hand): as_at holds its values
            return _copy(full, op, mapped)
        with aside():
            mapped.to[id(written)] = written.clone()
    a, k = mapped(args), mapped(kwargs)
    with _state(op, op.extra.get("rng")):
        out = func(*a, **k)
    outs = [out] if isinstance(out, torch.Tensor) else tensors_in(out, [])
    if not outs and written is not None:
        outs = [mapped(written)]
    mapped.pair(op, outs)
    ins = tensors_in(a, [])
    tensors_in(k, ins)
    extra = {key: v for key, v in op.extra.items() if key not in ("run", "rng")}
    _finish(full._note(op.name, op.kind, ins, outs, extra, at=op.location, scope=op.scope), op)


def _call(full, op, mapped, restore: dict, flags: dict) -> None:
    """A library model's call run again under ``full`` as at its entry; its ops placed at the learner's line."""
    call = op.extra["call"]
    modules = list(call.module.modules())
    if not _same_objects(modules, call.modules):
        raise _diverged(op, "a model whose modules changed since the call (a layer added, removed or replaced)")
    if not _same_objects(list(call.module.parameters()), call.params):
        raise _diverged(op, "a model whose weights changed since the call (a new nn.Parameter assigned, in its "
                            "forward or after it)")
    with aside():
        for b, values in zip(call.buffers, call.before):
            if b.shape != values.shape or bool((b == values).all()):
                continue
            if id(b) not in restore:
                restore[id(b)] = (b, b.clone(), b._version)
            b.copy_(values)
    for p, flag in zip(call.params, call.flags):
        _flag(p, flag, flags)
    training = [m.training for m in modules]
    for m, flag in zip(modules, call.training):
        m.__dict__["training"] = flag          # not Module.__setattr__: no assignment of the learner's
    a, k = mapped(call.args), mapped(call.kwargs)
    full._outer = (op.location, op.extra.get("named"), True, None)
    try:
        with _state(op, call.rng):
            full._mode.__enter__()
            try:
                out = call.module(*a, **k)
            finally:
                full._mode.__exit__(None, None, None)
    finally:
        full._outer = None
        for m, flag in zip(modules, training):
            m.__dict__["training"] = flag
    mapped.pair(op, tensors_in(out, []))
