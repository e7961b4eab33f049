"""Recording PyTorch: every torch operation run inside ``with adv.torch.record() as rec:``.

The mechanism is PyTorch's public ``torch.overrides.TorchFunctionMode``: while
the mode is active, every call of a torch function or ``Tensor`` method
(including operators such as ``a * b``, factories such as ``torch.tensor``,
and ``.item()`` / ``.detach()`` / ``.data``) passes through
:meth:`_Mode.__torch_function__`, which runs it and notes what it did. Calls
made *inside* a recorded call (``F.cross_entropy`` calls ``log_softmax`` and
``nll_loss``) are not recorded separately: PyTorch disables the mode for the
duration of a call, so a graph shows the function the user called. Why not
``TorchDispatchMode``: it sees ATen ops below autograd (``aten.addmm``,
``aten.t``), which are further from the code a learner wrote.

``torch.from_numpy`` is the one common way into torch that never reaches a
mode (it is among PyTorch's "ignored functions", as ``torch.tensor`` is, but
unlike ``torch.tensor`` its C implementation does not check the mode stack):
while a recording is active, ``torch.from_numpy`` is replaced by a wrapper
that reports the call (:func:`_reported`), so a value that left through
``.numpy()`` and came back through ``from_numpy`` is a re-wrap like any other.

``nn.Module`` calls become scopes through PyTorch's global module hooks
(``register_module_forward_pre_hook`` / ``register_module_forward_hook``),
so an op inside ``model.fc1`` is recorded with the scope ``net/fc1`` and a
graph folds by module as it folds by layer.

What is kept per op: the function's name, the input and output tensors (the
objects themselves, so PyTorch's autograd can later compute their
gradients; this keeps them alive as long as the recording lives), shapes,
dtypes, ``requires_grad``, whether grad mode / inference mode was on, the
user's ``file:line`` and the variable name that line assigns. An in-place op
(``z.mul_(2)``, ``z += 1``) returns the tensor it changed, so one tensor can
have several producers: they are kept in order, and :meth:`Recording.producer`
answers "which op made this value as it was when record ``i`` used it". Values are
read only when a trace is built. Gradients shown by a trace are PyTorch's:
``Tensor.backward`` called inside the recording keeps its graph
(``retain_graph=True``) so the trace can compute per-edge contributions with
``torch.autograd.grad`` afterwards — unless a library model's call was kept as
its boundary (:mod:`.rerun`, from a model's second call when running it again
pays): then nothing of the model's inside is recorded nor kept, and a trace
runs the step again under a whole recording and reads that.

A whole training step can be recorded: an optimizer's ``step()`` is one
``update`` record (its own ops run with torch-function dispatch off), and a
tensor written in place after a recorded op read it is copied once, with its
version number, before the write (:meth:`Recording._before_write`);
``rec.trace`` puts those copies back while it works (:meth:`Recording.as_at`),
so it shows — and autograd accepts — the values of the backward pass. When
keeping what the learner's ``backward()`` computed costs less memory than
those copies (a CNN on small images), the recording keeps that instead
(:mod:`.capture`): the trace takes its gradients from there, and a large
weight is kept as its statistics and first entries
(``record(exact_weights=True)`` copies it whole). A large value a library
module made and let go of, which autograd did not save, lets go of its memory
too: a trace runs its op again (:mod:`.letgo`, :meth:`Recording._let_go`); with ``record(exact_values=False)``,
so does what autograd saved inside an op, once the learner's backward pass has read it (:mod:`.saved`).

Cost: ops inside a library's module (torch, transformers, anything installed)
take the learner's line found once when the outermost library module was
entered; elsewhere the stack is walked with one dict look-up per frame.
Figures: docs/performance.md, "Real models".
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import sys
import warnings
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.overrides import TorchFunctionMode

from ..base import naming
from ..bridges import frames, recordings
from . import provenance, rerun, saved, tree, writes
from .capture import nbytes
from .letgo import SEEDED, Releases, may_draw, tensors_in

if TYPE_CHECKING:
    from typing import Any, Iterator

    from ..diagnosis.walk import Explanation, Explanations
    from ..records.traces.model import Trace

_library_class: dict = {}     # module class -> is its forward library code?
_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_MAKES = frozenset(("op", "rewrap", "detach", "call"))     # kinds of record that make a tensor value
_ESCAPES = {"item": "item()", "tolist": "tolist()", "numpy": "numpy()", "__float__": "float()",
            "__int__": "int()", "__array__": "np.asarray()"}
_REWRAPS = {"tensor", "as_tensor", "from_numpy", "asarray"}
_DETACH = {"detach", "detach_"}
# tensor properties that compute a new tensor on the graph (``s.T`` in CLIP's loss): recorded as ops
_COMPUTED_PROPERTIES = frozenset(("T", "mT", "H", "mH", "real", "imag"))
_UNSEEN = ("from_numpy",)     # torch factories that never reach a TorchFunctionMode: wrapped while recording
_ACTIVE: list = []            # the recordings whose ``with`` block is running, outermost first
_SPECIAL = frozenset(set(_ESCAPES) | _REWRAPS | _DETACH | {
    "requires_grad_", "set:requires_grad", "get:grad", "set:grad", "get:data", "__deepcopy__", "set:data"})
_SKIP = {"__repr__", "__format__", "__str__", "size", "dim", "numel", "__len__", "is_floating_point",
         "retain_grad", "register_hook", "_record_function_enter_new", "__bool__",
         "__hash__", "__contains__", "__iter__", "stride", "data_ptr", "element_size",
         "storage_offset", "is_contiguous", "get_device", "__reduce_ex__",
         "__setstate__", "__getstate__", "_is_view", "_version"}


@dataclass(eq=False)
class Op:
    """One recorded torch call.

    ``kind`` is ``"op"`` (a computation), ``"escape"`` (the value left as a
    Python number / list / numpy array: ``.item()``, ``.tolist()``,
    ``.numpy()``), ``"rewrap"`` (``torch.tensor(...)`` and friends: a new
    tensor from plain values), ``"detach"`` (``.detach()``, ``.data``),
    ``"backward"`` (``Tensor.backward``), ``"library_read_grad"`` (a library function the user called read an
    empty ``.grad``: ``clip_grad_norm_`` before ``backward()``), ``"read_grad"`` (reading
    ``.grad``, with what it held then) or ``"set_grad"`` (assigning
    ``.grad``; ``opt.zero_grad()`` is one such record over all the parameters it reset) or
    ``"update"`` (an optimizer's ``step()``, one record; its inputs are the parameters it updates).
    """

    __slots__ = ("index", "name", "kind", "inputs", "outputs", "location", "assigned", "scope", "grad_enabled",
                 "inference", "extra")
    index: int
    name: str
    kind: str
    inputs: list
    outputs: list
    location: tuple | None
    assigned: str | None
    scope: str
    grad_enabled: bool
    inference: bool
    extra: dict


def _library_module(cls) -> bool:
    """Is ``cls.forward`` library code (``nn.Linear``, a transformers ``BertLayer``), not the learner's?

    Ops run inside such a module are placed at the learner's line that called into it, found once
    when the module is entered instead of by a walk up the stack for every op.
    """
    lib = _library_class.get(cls)
    if lib is None:
        lib = _library_class[cls] = provenance.LIBRARY.computes(cls, "forward")
    return lib


def assigned_name(filename: str, lineno: int) -> str | None:
    """The variable a recorded source line assigns (``h = torch.tanh(z)`` → ``h``), or None.

    The engine's reading (:func:`naming.assigned_name_at`): a statement over several lines counts too.
    """
    return naming.assigned_name_at(filename, lineno)


def _reported(fn):
    """``fn`` (a torch function in :data:`_UNSEEN`), reporting each call to every active recording.

    Every one, as nested recordings all see a tensor op: the innermost mode
    runs the op, and the modes outside it see that call.
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        for rec in list(_ACTIVE):
            if not rec._paused:
                rec._observe(fn, fn.__name__, args, kwargs, out)
        return out
    call.__adv_original__ = fn
    return call


def _reported_grad(fn):
    """``torch.autograd.grad``, noted as a ``backward`` of its outputs before it runs (it may raise: non-scalar)."""
    @functools.wraps(fn)
    def call(outputs, *args, **kwargs):
        outs = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
        grads = kwargs.get("grad_outputs", args[1] if len(args) > 1 else None)
        for rec in list(_ACTIVE):
            for t in outs:
                if not rec._paused:
                    rec._note("autograd.grad", "backward", [t], [], {"gradient": grads})
                    rec._backwards += 1
        return fn(outputs, *args, **kwargs)
    call.__adv_original__ = fn
    return call


def _zero_grad(original):
    """``Optimizer.zero_grad`` under a recording: one ``set_grad`` record (``zero_grad``) for every parameter whose
    ``.grad`` it reset, at the learner's line, with torch functions' dispatch switched off while it runs. Seen one
    ``.grad`` read and write at a time, the forty parameters of a small ViT cost more than its forward pass."""
    @functools.wraps(original)
    def zero_grad(self, set_to_none: bool = True):
        recs = [r for r in _ACTIVE if not r._paused and r._updating is None]
        if not recs or _compiling():
            return original(self, set_to_none)
        with torch._C.DisableTorchFunction():
            params = [p for group in self.param_groups for p in group["params"]
                      if isinstance(p, torch.Tensor) and p.grad is not None]
            if not set_to_none:
                for rec in recs:
                    for cap in rec._captures.values():
                        cap.own(params)
            out = original(self, set_to_none)
            for rec in recs if params else ():
                rec._note("zero_grad", "set_grad", params, [], {"to_none": bool(set_to_none)})
        return out
    zero_grad.__adv_original__ = original
    return zero_grad


def _wrap_unseen(on: bool):
    """Put the :func:`_reported` wrappers into ``torch`` (a first recording opens), or take them out (none is left)."""
    for owner, name, wrap in [(torch, n, _reported) for n in _UNSEEN] + [(torch.autograd, "grad", _reported_grad),
                                                                        (torch.optim.Optimizer, "zero_grad",
                                                                         _zero_grad)]:
        fn = getattr(owner, name)
        original = getattr(fn, "__adv_original__", None)
        if on and original is None:
            setattr(owner, name, wrap(fn))
        elif not on and original is not None:
            setattr(owner, name, original)


class _Mode(TorchFunctionMode):
    def __init__(self, recording: "Recording"):
        super().__init__()
        self._rec = weakref.ref(recording)     # no cycle: a dropped recording frees its tensors at once

    @property
    def rec(self):
        return self._rec()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        rec = self._rec()
        if rec is None or rec._paused or _compiling():   # torch.compile traces: never record
            return func(*args, **(kwargs or {}))
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None) or str(func)
        if name == "__get__" or name == "__set__":
            attr = getattr(getattr(func, "__self__", None), "__name__", "?")
            if name == "__get__" and attr in _COMPUTED_PROPERTIES:          # s.T: a transpose, as s.t()
                name = attr
            elif name == "__get__" and attr != "data" and attr != "grad":   # .shape, .dtype, ._version …
                return func(*args, **kwargs)
            else:
                name = f"{name[2:5]}:{attr}"      # get:data, get:grad, set:grad
        if name == "backward" and args and isinstance(args[0], torch.Tensor):
            op = rec._note("backward", "backward", [args[0]], [], {"gradient": kwargs.get("gradient")})
            rec._backwards += 1
            if rec._kept_calls and not rec._unrunnable:     # a trace runs the step again (rerun.py)
                op.extra["freed"] = True
                return func(*args, **kwargs)
            kwargs = dict(kwargs)
            kwargs["retain_graph"] = True
            rec._let_go(final=True)
            cap = None if rec._kept_calls else rec._capture(args, kwargs)   # a call run again needs the weights
            try:
                return func(*args, **kwargs)
            finally:
                if cap is not None:
                    rec._keep(cap)
        written = writes.written(name, args, kwargs)
        if written is not None:
            rec._before_write(written)
        if rec._outer is not None and SEEDED.get(name) is not False:      # may draw random numbers (letgo.py)
            rec.releases.before(name, len(rec.ops))
        if rec.rerun and SEEDED.get(name) is not False and may_draw(name):
            rec._drawn = (len(rec.ops), torch.get_rng_state())     # the learner's own dropout, run again (rerun.py)
        if (name == "requires_grad_" or name == "set:requires_grad") and args and isinstance(args[0], torch.Tensor):
            rec._was = args[0].requires_grad       # a step run again sets it back as it was (rerun.py)
        saves = None
        if name == "get:grad" and not args[0].is_leaf:
            out = _at_the_learners_line(func, args, kwargs)     # only a non-leaf's .grad read warns
        elif not rec.exact_values and _grad_enabled() and saved.free():   # autograd's saves, let go of (saved.py)
            saves = saved.OpSaves()
            saved.push(saves.pack, saved.unpack)
            try:
                out = func(*args, **kwargs)
            finally:
                saved.pop()
        else:
            out = func(*args, **kwargs)
        if name in _SKIP or name.startswith("get:") and name not in ("get:data", "get:grad"):
            return out
        if saves is None:
            rec._observe(func, name, args, kwargs, out)
            return out
        n = len(rec.ops)
        rec._observe(func, name, args, kwargs, out)
        if saves.items and len(rec.ops) > n:
            saves.settle(rec.ops[-1], func, args, kwargs, rec.releases, rec._run_again)
        return out


def _at_the_learners_line(func, args, kwargs):
    """``func(*args, **kwargs)`` with the warnings it raises placed at the learner's line.

    PyTorch warns from C++ when a non-leaf tensor's ``.grad`` is read, and Python places a C++ warning at the
    innermost Python frame — inside this recorder. The learner should see their own line, as without the
    recording.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = func(*args, **kwargs)
    where = provenance.LIBRARY.user_line() or (None, None)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, where[0] or w.filename, where[1] or w.lineno)
    return out


class Recording(recordings.Recording):
    """What :func:`record` saw: the torch ops, escapes, re-wraps, ``backward`` calls and ``.grad`` reads.

    Attributes:
        ops: the :class:`Op` records in order.
    """

    framework = "torch"

    def __init__(self, exact_weights: bool = False, exact_values: bool = True, rerun_models: bool = True):
        self.ops: list[Op] = []
        self.exact_weights = exact_weights
        self.exact_values = exact_values
        self.rerun = rerun_models          # library models' calls kept as their boundary, run again by a trace
        self._inside = 0                   # rerun: depth inside such a call (nothing in it is recorded)
        self._call = None                  # rerun: what the call running now needs to run again (rerun.py)
        self._drawn = None                 # rerun: (op index, the generator's state before an op that may draw)
        self._kept_calls = 0               # rerun: calls kept as their boundary so far
        self._unrunnable = 0               # rerun: ops inside library models recorded without what runs them again
        self._was = None                   # requires_grad of the tensor whose flag is being set, before
        self._mode = _Mode(self)
        self._scopes: list[str] = []
        self._module_names: dict = {}      # id(module) -> qualified scope path
        self._aliases: dict = {}           # id(module) -> its other paths, for one module held by several parents
        self.module_kinds: dict = {}       # scope segment ("fc1", "features.0") -> module class ("Linear")
        self._param_names: dict = {}       # id(parameter) -> "fc1.weight"
        self._modules: list = []
        self.root_vars: dict = {}          # an outermost model's scope segment -> the learner's variable for it
        self._root_params: dict = {}       # an outermost model's segment -> (its variable, {id(param): name})
        self._made_inside: list = []       # modules a forward makes and calls (nn.ReLU()(h)), kept: ids stay theirs
        self._called: set = set()          # id(module) of every module whose forward ran while recording
        self._hooks = []
        self._ids = itertools.count()
        self._tensor_ids: dict = {}        # id(tensor) -> our id (the tensor is kept alive by the ops)
        self._producer: dict = {}          # our id -> indices of the ops that made or changed it, in order
        self._active = False
        self._called_at = None             # (line, op): a module's output named by the line that called it
        self.provenance = None             # who set a grad mode, what was assigned onto a module (provenance.py)
        self._callers: list = []           # per entered module: (the learner's line that called it, its name, lib?)
        self._outer = None                 # the outermost library module's entry of _callers, while inside one
        self._line_names: dict = {}        # (file, line) -> the variable the line assigns
        self._paused = 0                   # > 0 while the recorder runs torch ops of its own
        self._updating = None              # torch function dispatch switched off while an optimizer steps
        self._backwards = 0                # backward() calls seen so far
        self._last_use: dict = {}          # our id -> index of the last op that read the tensor
        self._saved: list = []             # (op index, tensor, version, values) before an in-place write
        self._saved_at: dict = {}          # our id -> op index of its latest saved copy
        self._captures: dict = {}          # id(target) -> the Capture of its backward() (capture.py)
        self._leaf_bytes = 0               # bytes of the weights recorded ops read (at least a capture's bar)
        self._covered: dict = {}           # our id of a weight -> op index after the capture that kept its ḡ
        self.shown: dict = {}              # id(weight) -> its values before an update, kept as statistics
        self.releases = Releases(self.ops, self._tensor_ids, exact_values)   # values libraries let go of (letgo.py)
        self.freed = self.releases.freed   # id(tensor) -> how a trace shows a value let go of (letgo.py)
        self._starts: list = []            # per entered module: len(self.ops) when it was entered (_let_go)
        self._run_again: list = []        # saved.OpSaves run again for the trace being built (forgotten after)

    # ----- context -----------------------------------------------------------
    def __enter__(self) -> Recording:
        if self._active:
            raise RuntimeError("this recording is already active; use a new adv.torch.record().")
        self._active = True
        hooks = torch.nn.modules.module
        self._hooks = [hooks.register_module_forward_pre_hook(self._enter_module),
                       hooks.register_module_forward_hook(self._exit_module),
                       register_optimizer_step_pre_hook(self._enter_update),
                       register_optimizer_step_post_hook(self._exit_update)]
        self._mode.__enter__()
        _ACTIVE.append(self)
        _wrap_unseen(True)
        self.provenance = provenance.start(self)
        return self

    def __exit__(self, *exc):
        if self._inside:                   # a call kept as its boundary raised: its mode goes back first
            self._inside, self._call = 0, None
            self._mode.__enter__()
        provenance.stop(self.provenance)
        self._end_update()
        self._let_go(final=True)
        _ACTIVE.remove(self)
        if not _ACTIVE:
            _wrap_unseen(False)
        self._mode.__exit__(*exc)
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self._scopes = []
        self._starts = []
        self._callers = []
        self._outer = None
        self._paused = 0
        self._active = False
        return False

    def _enter_module(self, module, inputs):
        if self._inside:                          # inside a call kept as its boundary: nothing to record
            self._inside += 1
            return
        if self._paused:                          # a trace running the step again (rerun.py)
            return
        key = id(module)
        if key not in self._module_names:
            if self._scopes:                      # a module we have not seen inside a known one
                # HF's DistilBERT calls nn.ReLU()(h), then CrossEntropyLoss()(…): freed, the ReLU's
                # id could come back as the loss's, and the loss would be drawn as a second "relu"
                self._made_inside.append(module)
                self._module_names[key] = f"{self._scopes[-1]}/{type(module).__name__.lower()}"
                self.module_kinds.setdefault(type(module).__name__.lower(), type(module).__name__)
            else:
                root, weights = tree.name_model(self, module)
                var = frames.variable_for(module, provenance.LIBRARY.user_frame(sys._getframe(1)))
                if var is not None and var != root:
                    self.root_vars[root] = var
                self._root_params[root] = (var or root, weights)
                tree.apart(self, root)
        path = self._module_names[key]
        if key in self._aliases and self._scopes and path.rpartition("/")[0] != self._scopes[-1]:
            path = next((a for a in self._aliases[key] if a.rpartition("/")[0] == self._scopes[-1]), path)
        self._scopes.append(path)
        self._starts.append(len(self.ops))
        self._called.add(key)
        if _compiling():                         # torch.compile traces this hook: no frame walks in it
            self._callers.append((None, None, False, self._outer))
            return
        outer = self._outer
        loc = outer[0] if outer is not None else provenance.LIBRARY.user_line()
        named = outer[1] if outer is not None else (self._assigned_at(loc) if loc else None)
        entry = (loc, named, _library_module(type(module)), outer)
        self._callers.append(entry)
        if outer is None and entry[2]:
            self._outer = entry
        last = self.ops[-1] if self.ops else None
        if last is not None and last.assigned and last.location == loc and not self._named_by_call(last):
            last.assigned = None     # out = net(x.float()): the line assigns the module's output, not x.float()
        if self.rerun and outer is None and entry[2] and len(_ACTIVE) == 1:
            self._call = rerun.at_entry(module, inputs, sys._getframe(1), self._mode)
            if self._call is not None:
                self._inside = 1
                self._mode.__exit__(None, None, None)

    def _named_by_call(self, op) -> bool:
        """Whether ``op`` made a module's output that the line calling the module named (``z = encoder(x)``).
        Its own location is a line of the module's ``forward``, so the next op there (the same class's
        ``forward`` run again by ``recon = decoder(z)``) must not take that name back."""
        return self._called_at is not None and self._called_at[1] is op

    def _exit_module(self, module, inputs, output):
        """Name the module's output by the line that called it (``out = net(x)``), when nothing named it yet.

        A custom ``forward`` that ends ``return self.fc2(h)`` assigns no name; its caller's line does. The name
        is taken back if the same line goes on with another op (``loss = F.mse_loss(net(x), y)``).
        """
        if self._inside and module is not self._call.module:    # a module inside the call kept as its boundary
            self._inside = max(self._inside - 1, 1)    # (one that raised, caught inside, never returned here)
            return
        if self._paused and not self._inside:
            return
        if self._inside:                          # the call kept as its boundary returns: one "call" record
            self._inside = 0
            self._mode.__enter__()
            call, self._call = self._call, None
            ins = tensors_in(call.args, [])
            tensors_in(call.kwargs, ins)
            self._note(type(module).__name__, "call", ins + call.params, tensors_in(output, []),
                       {"call": call, "named": self._outer[1] if self._outer else None})
            self._kept_calls += 1
        if self._scopes:
            self._scopes.pop()
        compiling = _compiling()
        start = self._starts.pop() if self._starts else 0
        loc, named, lib, self._outer = self._callers.pop() if self._callers else (None, None, False, None)
        if not compiling:
            self._let_go(start)             # what the module made and did not return nor hand to autograd
            if self.rerun and lib and self._outer is None:
                rerun.learn(self, module, start)
        if compiling or loc is None or not self.ops:
            return
        made = self.ops[-1]
        if made.assigned is None and made.kind in _MAKES and made.outputs:
            outs = tensors_in(output, [])
            if len(outs) == 1 and any(o is outs[0] for o in made.outputs):
                made.assigned = named
                self._called_at = (loc, made) if named else None

    def _let_go(self, since: int = 0, final: bool = False) -> None:
        """Let go of the large values library modules made since op ``since`` and no longer hold (see
        :mod:`.letgo`): when a module returns, and (``final``) before a ``backward()`` and when the recording ends."""
        releases = self.releases
        if releases.pending or final and releases.later:
            releases.let_go(since, final)

    def _enter_update(self, optimizer, args, kwargs):
        """An optimizer's ``step()`` begins: one ``update`` record, copies of what it will change, then a pause.

        The step's own ops (Adam's ``lerp_``, ``addcdiv_`` …, ten or so per parameter) are the optimizer's
        business, not the learner's graph: they run with torch functions' dispatch switched off
        (``torch._C.DisableTorchFunction``; under a mode, Adam's step is otherwise twenty times slower),
        until the step's post-hook. The parameters it changes in place are copied first when the
        recording used them (see :meth:`_before_write`), so a trace of the loss still shows, and
        differentiates, the values the backward pass saw.
        """
        self._end_update()                # a step that raised never reached its post-hook
        if _compiling():
            return
        self._updating = torch._C.DisableTorchFunction()
        self._updating.__enter__()
        params = [p for group in optimizer.param_groups for p in group["params"] if isinstance(p, torch.Tensor)]
        self._before_write(*params)
        self._note(f"{type(optimizer).__name__}.step", "update", params, [], {"optimizer": optimizer})

    def _exit_update(self, optimizer, args, kwargs):
        self._end_update()

    def _end_update(self):
        if self._updating is not None:
            updating, self._updating = self._updating, None
            updating.__exit__(None, None, None)

    def _capture(self, args, kwargs):
        """A :class:`~.capture.Capture` of the ``backward()`` about to run, or None (see :func:`.capture.start`)."""
        if self.exact_weights or kwargs.get("inputs") is not None or kwargs.get("create_graph") or len(args) > 2:
            return None
        from .capture import outweighs, start
        from .trace import _graph, _history
        target = args[0]
        if outweighs(self.ops, target, self._leaf_bytes):
            return None
        return start(self, target, kwargs.get("gradient", args[1] if len(args) > 1 else None),
                     _history(_graph(self), target))

    def _keep(self, cap):
        cap.finish()
        self._captures[id(cap.target)] = cap
        here = len(self.ops)
        for t, _g, _v in cap.leaves.values():
            self._covered[self.tensor_id(t)] = here

    def _captured(self, t) -> bool:
        """Whether a capture still valid kept weight ``t``'s gradient (so a trace needs not its old values)."""
        return any(c.covers(t) and c.valid(len(self.ops)) for c in self._captures.values())

    def _before_write(self, *ts):
        """``ts`` are about to change in place: keep a copy of each, when a trace could still need the old values.

        Autograd saves the tensors a backward pass needs and refuses to use one that changed since
        (its version counter moved). So a tensor read by a recorded op and then written in place after a
        ``backward()`` (``opt.step()``, ``p -= lr * p.grad``), or a leaf parameter written at all, is
        copied once — with its version — before the write; :meth:`as_at` puts the copy back while a trace
        is built. Tensors no recorded op read, and writes inside the forward pass (``x.relu_()``), are
        not copied: autograd itself checks those. A weight whose gradient a capture of the backward pass kept
        (:mod:`.capture`) needs no autograd again: it keeps :func:`.capture.values_before` (its statistics
        when large) instead of a copy. An update's parameters are copied in one call (:func:`.writes.copies`). A
        value let go of (:mod:`.letgo`) that a trace would recompute from a tensor written without a copy is put back
        first.
        """
        ids, last_use, saved_at = self._tensor_ids, self._last_use, self._saved_at
        here, backwards, copy, exact, summarised = len(self.ops), self._backwards, [], set(), set()
        for t in ts:
            tid = ids.get(id(t))
            if tid is None:
                continue
            used = last_use.get(tid, -1)
            if used <= saved_at.get(tid, -1) or not (backwards or t.is_leaf and t.requires_grad):
                continue
            if self._covered.get(tid, -1) > used and self._captured(t):
                from .capture import values_before  # the trace has its gradients: its values suffice
                try:
                    values = values_before(t)
                except RuntimeError:    # a tensor without storage (meta, sparse layouts …): nothing to copy
                    continue
                self._saved.append((here, t, t._version, values))
                saved_at[tid] = here
                (exact if isinstance(values, torch.Tensor) else summarised).add(id(t))
            else:
                copy.append((tid, t))
        for (tid, t), values in zip(copy, writes.copies([t for _, t in copy])):
            if values is not None:
                self._saved.append((here, t, t._version, values))
                saved_at[tid] = here
                exact.add(id(t))
        if self.freed:          # values let go of that a trace could no longer recompute: back, whole
            for t in ts:
                if id(t) not in exact:
                    self.releases.before_write(t, whole=id(t) not in summarised)

    @contextlib.contextmanager
    def as_at(self, target: Any) -> Iterator[None]:
        """Tensors written in place after ``target`` was computed hold, inside the block, their values then.

        ``loss.backward(); opt.step()`` recorded together: the step changed the parameters in place, so
        autograd would refuse to backpropagate ``loss`` again (and the trace would show the updated
        weights). Inside this block each such tensor holds the copy made before the first write after
        ``target``'s op, under the version number autograd saved; afterwards its current values and version
        come back. Nothing is copied when nothing was written.
        """
        made = self.producer(target) if isinstance(target, torch.Tensor) else None
        after = made.index if made is not None else len(self.ops)
        chosen = {}
        for k, t, version, values in self._saved:
            if k > after and id(t) not in chosen:
                chosen[id(t)] = (k, t, version, values)
        swapped = []
        self._paused += 1                # our copies are not the learner's ops
        try:
            with torch.no_grad():
                for k, t, version, values in chosen.values():
                    if not isinstance(values, torch.Tensor):     # statistics: the trace shows them as its value
                        self.shown[id(t)] = values
                        continue
                    if t.shape != values.shape or t.dtype != values.dtype:
                        op = self.ops[k] if k < len(self.ops) else None
                        where = f" at {naming.short_place(*op.location)}" if op is not None and op.location else ""
                        raise RuntimeError(
                            f"trace: a tensor of shape {tuple(values.shape)} that the target depends on was changed "
                            f"in place{where} to shape {tuple(t.shape)} after the target was computed, so its values "
                            "at the backward pass cannot be put back. Call rec.trace(...) before that change (for "
                            "example right after loss.backward(), inside the recording).")
                    now = (t, t._version, t.detach().clone())
                    t.detach().copy_(values)
                    swapped.append(now)
                    torch._C._autograd._unsafe_set_version_counter((t,), (version,))
            yield
        finally:
            with torch.no_grad():
                for t, version, values in reversed(swapped):
                    t.detach().copy_(values)
                    torch._C._autograd._unsafe_set_version_counter((t,), (version,))
            self.shown = {}
            self._paused -= 1
            self._forget_again()

    def _forget_again(self) -> None:
        """Let go again of the saved tensors a trace or an explanation had computed again (:mod:`.saved`)."""
        for saves in self._run_again:
            saves.again = None
        self._run_again.clear()

    def idle_modules(self) -> set:
        """Scope segments (``encoder.block``) of modules the recording knows by name but whose forward never
        ran: a ``ModuleList`` / ``ModuleDict`` or any container the code only indexes. They are names, not
        steps, so a figure opens them together with their parent."""
        return {qual for module in self._modules for qual, m in module.named_modules()
                if qual and id(m) not in self._called}

    def own_modules(self) -> set:
        """Scope segments of modules whose class's ``forward`` the learner wrote (``class RNN(nn.Module)`` of a
        tutorial): a figure titles them by class but gives them no library formula (:attr:`Trace.own`)."""
        out = set()
        for module in self._modules:
            for qual, m in module.named_modules():
                if not _library_module(type(m)):
                    out.add(qual or self._module_names[id(module)])
        out.update(self._module_names[id(m)].rsplit("/", 1)[-1] for m in self._made_inside
                   if not _library_module(type(m)))
        return out

    # ----- observing ------------------------------------------------------------
    def tensor_id(self, t: torch.Tensor) -> int:
        """Our id of a tensor (stable for the life of the recording)."""
        key = id(t)
        tid = self._tensor_ids.get(key)
        if tid is None:
            tid = self._tensor_ids[key] = next(self._ids)
        return tid

    def _note(self, name, kind, inputs, outputs, extra=None, at=None, scope=None):
        """Append one :class:`Op`; ``at``: its line, ``scope``: its scope, when they are known already (a step run
        again, :mod:`.rerun`), instead of asking where the learner's code is now."""
        outer = self._outer
        if at is not None:
            loc = at
            assigned = self._assigned_at(loc) if kind in _MAKES else None
        elif outer is not None:                 # inside a library module: the learner's line that called it
            loc = outer[0]
            assigned = outer[1] if kind in _MAKES else None
        else:
            loc = provenance.LIBRARY.user_line()
            assigned = self._assigned_at(loc) if loc and kind in _MAKES else None
        ops = self.ops
        index = len(ops)
        if scope is None:
            scope = self._scopes[-1] if self._scopes else ""
        op = Op(index, name, kind, inputs, outputs, loc, assigned, scope,
                torch.is_grad_enabled(), torch.is_inference_mode_enabled(), {} if extra is None else extra)
        if index and kind not in ("read_grad", "set_grad", "library_read_grad"):
            if ops[-1].location == loc and not self._named_by_call(ops[-1]):
                ops[-1].assigned = None             # only the line's last op makes the value the line assigns
            if self._called_at is not None:
                if self._called_at[0] == loc:       # the line that named a module's output goes on
                    self._called_at[1].assigned = None
                self._called_at = None
        held = self.releases.uses
        if held:                                # more holders of values that may be let go of (letgo.py)
            for t in inputs:
                if id(t) in held:
                    held[id(t)] += 1
            for t in outputs:
                if id(t) in held:
                    held[id(t)] += 1
        ids, last_use = self._tensor_ids, self._last_use
        for t in inputs:
            tid = ids.get(id(t))
            if tid is None:
                tid = ids[id(t)] = next(self._ids)
                if t.requires_grad and t.grad_fn is None:      # a weight, first seen: what copies would take
                    self._leaf_bytes += nbytes(t)
            last_use[tid] = index
        makes = kind in _MAKES
        for t in outputs:
            tid = ids.get(id(t))
            if tid is None:
                tid = ids[id(t)] = next(self._ids)
                if t.requires_grad and t.grad_fn is None:      # torch.randn(3, requires_grad=True)
                    self._leaf_bytes += nbytes(t)
            if makes:
                made = self._producer.get(tid)
                if made is None:
                    self._producer[tid] = [index]
                else:
                    made.append(index)
        ops.append(op)
        return op

    def _assigned_at(self, loc):
        """:func:`assigned_name` of a line, asked once per line of a recording."""
        try:
            return self._line_names[loc]
        except KeyError:
            name = self._line_names[loc] = assigned_name(*loc)
            return name

    def _observe(self, func, name, args, kwargs, out):
        ins = tensors_in(args, [])
        if kwargs:
            tensors_in(kwargs, ins)
        if name not in _SPECIAL and name[:4] != "set:":      # the common case: a computation
            outs = [out] if isinstance(out, torch.Tensor) else tensors_in(out, [])
            if not outs:                # t[i] = v returns None: what it made is the new value of t
                written = writes.written(name, args, kwargs)
                outs = [written] if written is not None else []
            if outs:
                params = {k: v for k, v in kwargs.items() if not isinstance(v, torch.Tensor)} if kwargs else {}
                op = self._note(name, "op", ins, outs, {"params": params})
                if self.rerun:
                    self._runnable(op, func, args, kwargs)
                if self._outer is not None:
                    least = self.releases.least
                    for t in outs:
                        if t.numel() >= least:
                            self.releases.note(op, func, args, kwargs)
                            break
            return
        if name in _ESCAPES:
            if ins:
                self._note(name, "escape", ins[:1], [], {"how": _ESCAPES[name], "value": out})
            return
        if name in ("requires_grad_", "set:requires_grad"):
            if ins:
                flag = kwargs.get("requires_grad", args[1] if len(args) > 1 else name == "requires_grad_")
                why = provenance.why_set(sys._getframe(2)) if not flag else {}
                if flag and ins[0].grad_fn is None:     # a weight from now on (x.requires_grad_())
                    self._leaf_bytes += nbytes(ins[0])
                self._note(name, "requires_grad", ins[:1], [], {"to": bool(flag), "was": self._was, **why})
            return
        if name == "get:grad":
            if ins and provenance.LIBRARY.called_by_user(3):
                self._note(name, "read_grad", ins[:1], [], {"was_none": out is None})
            elif ins and out is None:       # a library the user called read an empty .grad (clip_grad_norm_)
                called = provenance.library_call(sys._getframe(2))
                if called is not None and called.function != "zero_grad":
                    self._note(name, "library_read_grad", ins[:1], [], {"function": called.function})
            return
        if name == "set:grad":
            if ins:
                self._note(name, "set_grad", ins[:1], [], {"to_none": args[1] is None})
            return
        outs = tensors_in(out, [])
        if not outs:
            return
        if name in _REWRAPS:
            data = args[0] if args else kwargs.get("data")
            self._note(name, "rewrap", ins, outs, {"data": data})
        elif name in _DETACH or name in ("get:data", "__deepcopy__"):
            label = {"get:data": ".data", "__deepcopy__": "copy.deepcopy()"}.get(name, "detach()")
            op = self._note(label, "detach", ins, outs)
            if self.rerun:
                self._runnable(op, func, args, kwargs)

    def _runnable(self, op, func, args, kwargs) -> None:
        """Keep what runs ``op`` again (:mod:`.rerun`): the function, its arguments, the generator's state before
        it when it may have drawn random numbers. Not for an op inside a library model while no call was kept as
        its boundary: its arguments would hold values the recording lets go of (:mod:`.letgo`); a ``backward()``
        then keeps autograd's graph, as without :mod:`.rerun`, and a trace reads the op as recorded."""
        drawn, self._drawn = self._drawn, None
        if self._outer is not None and not self._kept_calls:
            self._unrunnable += 1
            return
        op.extra["run"] = (func, args, kwargs)
        if drawn is not None and drawn[0] == op.index and not torch.equal(drawn[1], torch.get_rng_state()):
            op.extra["rng"] = drawn[1]          # it drew: kept (a name ATen does not know may not have)

    # ----- questions ---------------------------------------------------------------
    def producers(self, t: torch.Tensor) -> list:
        """The ops that made ``t`` or changed it in place inside the recording, in order."""
        return [self.ops[k] for k in self._producer.get(self._tensor_ids.get(id(t)), ())]

    def producer(self, t: torch.Tensor, before: int | None = None) -> Op | None:
        """The op that made ``t`` as record ``before`` saw it (default: as it is now), or None.

        After ``z = x @ w; z.mul_(2)`` the value ``z`` has two producers:
        ``producer(z)`` is ``mul_``, and ``producer(z, before=k)`` of the
        ``mul_`` record ``k`` is ``matmul``: the value ``mul_`` read.
        """
        ks = self._producer.get(self._tensor_ids.get(id(t)), ())
        i = len(ks) if before is None else bisect.bisect_left(ks, before)
        return self.ops[ks[i - 1]] if i else None

    def name_of(self, t: torch.Tensor) -> str | None:
        """The learner's name for ``t``: a parameter's name in its module, or the variable its line assigned."""
        pname = self._param_names.get(id(t))
        if pname is not None:
            return pname
        return next((op.assigned for op in reversed(self.producers(t)) if op.assigned), None)

    def _runs_again(self, target) -> bool:
        """Whether a trace, an explanation or a comparison of ``target`` reads the step run again (:mod:`.rerun`):
        a call was kept as its boundary, and the target depends on one or a ``backward()`` kept no graph."""
        return bool(self._kept_calls) and isinstance(target, torch.Tensor) and rerun.needs_again(self, target)

    def trace(self, target: torch.Tensor, sources: Any = None, value_limit: int | None = None) -> Trace:
        """An :class:`autodiff_viz.Trace` of the recorded computation, with PyTorch's gradients.

        ``target``: the tensor to walk back from (a non-scalar target is
        seeded with ones, the gradient of its sum, as ``tape.gradient``);
        ``sources``: tensors (parameters, inputs) whose gradients to show, or
        a module (its parameters); default: every leaf that requires grad.
        """
        from ..base import state
        from .explain import caller_names
        from .trace import build
        frame = state.user_frame_object()       # the learner's names for tensors made before the recording
        names = caller_names({**frame.f_globals, **frame.f_locals}) if frame is not None else {}
        with self.as_at(target):
            if self._runs_again(target):
                with rerun.again(self, target) as (full, mapped):
                    return mapped.keyed(build(full, mapped(target), mapped(sources), value_limit, names))
            return build(self, target, sources, value_limit, names)

    def explain(self, target: torch.Tensor | float, param: Any) -> Explanation | Explanations:
        """Why ``param.grad`` is None (or zero) after backpropagating ``target``: an ``adv.Explanation``.

        ``param`` may also be what ``gradient`` takes (a list, a dict, a
        module, ``model.parameters()``): one row per source, broken ones first.
        ``target`` may be a Python number (``loss.item()``): the answer names
        the line where it left the graph. Tensors made before the recording
        are named by the caller's variables (``w``, ``model.fc.weight``).
        """
        from .explain import caller_names, explain_recorded
        frame = sys._getframe(1)
        names = caller_names({**frame.f_globals, **frame.f_locals})
        if self._runs_again(target):
            with self.as_at(target), rerun.again(self, target) as (full, mapped):
                full._caller_names = names
                try:
                    return explain_recorded(full, mapped(target), mapped(param))
                finally:
                    full._forget_again()
        self._caller_names = names
        try:
            return explain_recorded(self, target, param)
        finally:
            self._caller_names = None
            self._forget_again()

    def _compare(self, target, hand, rtol, atol, namespace, output_gradients):
        """:meth:`compare` (shared by the bridges): reads hand gradients that are torch tensors detached."""
        from .trace import compare
        if self._runs_again(target):
            with self.as_at(target), rerun.again(self, target) as (full, mapped):
                try:
                    return compare(full, mapped(target), {mapped(k): v for k, v in hand.items()}, rtol, atol,
                                   {k: mapped(v) for k, v in namespace.items()}, output_gradients)
                finally:
                    full._forget_again()
        try:
            return compare(self, target, hand, rtol, atol, namespace, output_gradients)
        finally:
            self._forget_again()


def record(exact_weights: bool = False, exact_values: bool = True, rerun_models: bool = True) -> Recording:
    """Record every torch operation run inside the ``with`` block (see :class:`Recording`).

    ``exact_weights``: when ``opt.step()`` runs inside the block, a trace shows the weights as the backward pass
    saw them. By default a weight of more than 65,536 entries is then kept as its statistics and first entries
    (what a trace shows of any large array) whenever the recording kept the backward pass's gradients, which
    costs less memory than a copy; ``True`` copies every weight the update writes, so that
    ``rec.trace(loss, value_limit=...)`` can show all of its values.

    ``exact_values``: a value of at least 65,536 entries that an op inside a library module computed, that
    nobody holds any more and that autograd did not save (no gradient reads it: a BatchNorm's output once the
    ReLU after it ran, GPT-2's logits once the loss read their shifted copy) lets go of its memory when its module
    returns, and a trace computes it again by running its op on the same inputs — the same bits; a random op
    (dropout) from the generator's state just before it (see :mod:`.letgo`). ``True`` (the default) keeps whole
    the values that cannot be recomputed (an op given a generator of its own). ``False`` puts memory before time:
    it lets go of values from 4,096 entries, and keeps the ones that cannot be recomputed as their statistics and
    first entries — what a trace shows of any large array; and it lets go of the tensors autograd saves inside an op
    (the attention probabilities and dropout mask of ``scaled_dot_product_attention``, a dropout's mask) once the
    backward pass has read them, as a plain backward pass frees them, and runs the op again, on the same draws,
    when a trace reads them (see :mod:`.saved`). Each value let go of costs microseconds of Python: on
    BERT-tiny (``benchmarks/real_models.py``) the recording then keeps 1.8 MB of values and copies instead of 3.1,
    and a step's peak memory falls from about 1.45× plain to 1.2×, for 0.11–0.17× more of its time. The why-zero
    diagnosis then reads a dead ReLU's units from its output, and names a saturated sigmoid or tanh only as the op
    where the gradient dies, when the value it reads was kept as statistics.

    ``rerun_models``: a library model the learner's code calls again (a transformers model, a torchvision ResNet,
    an ``nn.Sequential``: a library module holding other modules) is kept as its call — the module, its arguments,
    the generator's state, its buffers — instead of op by op, and autograd's graph is not kept past ``backward()``;
    a trace, an explanation or a comparison runs the call again, as activation checkpointing does, and reads that
    (see :mod:`.rerun`). A model's first call is recorded whole, and says whether running it again pays: its values
    outweigh its weights (which a call run again needs copied before ``opt.step()``), and its ``forward`` leaves the
    model as it found it. The step then costs about what a plain one does; the trace costs one more forward pass.
    ``False`` records every op of every call.

        >>> with adv.torch.record() as rec:
        ...     loss = F.cross_entropy(model(x), y)
        ...     loss.backward()
        >>> rec.explain(loss, model.fc.weight)
    """
    return Recording(exact_weights, exact_values, rerun_models)
