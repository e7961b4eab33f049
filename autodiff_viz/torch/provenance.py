"""What a PyTorch recording keeps besides the ops: who set a grad mode, and what was assigned onto a module.

The op records (:mod:`autodiff_viz.torch.record`) say *that* an op ran under
``no_grad``; a learner needs *who* turned gradients off. Often it was not
their own ``with torch.no_grad():`` but a library they called: the
reentrant ``checkpoint(f, x, use_reentrant=True)`` runs ``f`` inside an
``autograd.Function.forward`` (always without grad), a library method may be
decorated ``@torch.no_grad()``. Naming the line of ``f`` with the fix "move
the loss out of `with torch.no_grad()`" would be a confident wrong answer.
So while a recording runs, this module notes:

* every change of grad mode (``torch.no_grad``, ``torch.set_grad_enabled``,
  ``torch.inference_mode``, their decorator forms) with the frame that made
  it: the user's line, or — when library code made it — the user's call into
  that library (the outermost frame of the user's code on the stack) and the
  library function it called;
* every ``autograd.Function.apply`` (a custom Function's ``forward``, and
  library ones such as the reentrant checkpoint) as a span of records;
* every assignment of an ``nn.Parameter`` or a sub-module onto a module
  (``self.weight = nn.Parameter(W)`` in ``forward``, ``model.fc = nn.Linear(...)``
  after the optimizer was built) with the user's line and the outermost user
  line of the call (``model = Net()``), so two builds of a model are told apart
  by the lines that built them.

The hooks are installed while at least one recording is active and removed
with the last one (:func:`start`, :func:`stop`, called by the recording's
``__enter__`` / ``__exit__``). They cost nothing outside recordings.
"""
from __future__ import annotations

import linecache
import os
import re
import sys
import weakref
from dataclasses import dataclass, field

import torch
from torch.autograd import function as _function
from torch.autograd import grad_mode

from ..bridges import frames

_HERE = os.path.dirname(os.path.abspath(__file__))
# Code the learner did not write: torch, autodiff_viz, the standard library and every installed package
# (transformers, timm …); the recorder, its provenance and its explanations all ask this one set.
LIBRARY = frames.Code(frames.folder(torch), frames.folder(sys.modules["autodiff_viz"]), *frames.installed())
_WRAPPERS = {"_fn", "wrapper", "inner", "wrapped", "decorate_context", "_wrapped_call_impl", "_call_impl",
             "__call__", "apply", "forward"}
_ACTIVE: list = []
_SAVED: dict = {}


def is_library(filename: str) -> bool:
    """Is ``filename`` library code (torch, the standard library, an installed package), not the user's?"""
    return filename in LIBRARY


@dataclass(frozen=True)
class Setter:
    """Who made a state change: ``by`` ``"user"`` or ``"library"``; ``location`` the user's line (for a library,
    the user's call into it); ``function`` the library function the user called (``checkpoint``); ``what``
    the mechanism (``no_grad``, ``inference_mode``, ``Function.forward`` of a class)."""

    by: str
    location: tuple | None
    function: str | None
    what: str
    outer: tuple | None = None


def _setter(frame, what: str) -> Setter | None:
    """Classify the frame that made a change: the user's own line, or a library called from a user's line."""
    f = frame
    while f is not None and f.f_code.co_filename.startswith(_HERE):
        f = f.f_back
    mechanics = (grad_mode.__file__, os.path.join(os.path.dirname(torch.__file__), "utils", "_contextlib.py"))
    decorated = None
    while f is not None and f.f_code.co_filename in mechanics:
        decorated = f.f_locals.get("func") if f.f_code.co_name == "decorate_context" else decorated
        f = f.f_back
    if f is None:
        return None
    code = getattr(decorated, "__code__", None)
    if code is not None and is_library(code.co_filename):
        what = f"@torch.{what}() on {decorated.__qualname__}"
        if not is_library(f.f_code.co_filename):
            return Setter("library", (f.f_code.co_filename, f.f_lineno), decorated.__name__, what, _outermost(f))
    if not is_library(f.f_code.co_filename):
        return Setter("user", (f.f_code.co_filename, f.f_lineno), None, what, _outermost(f))
    called = []
    while f is not None and is_library(f.f_code.co_filename):
        called.append(f)
        f = f.f_back
    if f is None:
        return None
    function = next(filter(None, map(_called_name, reversed(called))), called[-1].f_code.co_name if called else None)
    return Setter("library", (f.f_code.co_filename, f.f_lineno), function, what, _outermost(f))


def library_call(frame) -> Setter | None:
    """The user's call into the library that is running ``frame`` (``nn.utils.clip_grad_norm_(...)``): its line
    and the function's name, or None when ``frame`` is the user's own code."""
    setter = _setter(frame, "call")
    return setter if setter is not None and setter.by == "library" else None


_FLAG = re.compile(r"freez|frozen|trainable|requires_grad|fine_?tune", re.IGNORECASE)


def why_set(frame) -> dict:
    """Where the value of a ``requires_grad`` change (or a frozen parameter's birth) came from, seen from the
    frame that made it: ``flags`` — boolean arguments of the library functions on the way from the user's call
    (``from_pretrained(freeze=True)``, ``Pretrained(freeze_params=True)``), outermost first; ``via`` — when user
    code set it from an argument of its own function (``param.requires_grad = requires_grad`` in a helper), the
    function, the argument and the line that called it with that value."""
    out: dict = {}
    f = frame
    while f is not None and f.f_code.co_filename.startswith(_HERE):
        f = f.f_back
    if f is None:
        return out
    if not is_library(f.f_code.co_filename):
        code = f.f_code
        args = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        text = linecache.getline(code.co_filename, f.f_lineno)
        value = text.split("=", 1)[1].strip() if "=" in text else ""
        caller = f.f_back
        while caller is not None and is_library(caller.f_code.co_filename):
            caller = caller.f_back
        if value in args and caller is not None:
            out["via"] = (code.co_name, value, (caller.f_code.co_filename, caller.f_lineno))
        return out
    flags = []
    while f is not None and is_library(f.f_code.co_filename):
        code = f.f_code
        for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            v = f.f_locals.get(name)
            if isinstance(v, bool) and _FLAG.search(name) and not name.startswith("_"):
                owner = f.f_locals.get("self")
                flags.append((type(owner).__name__ if code.co_name == "__init__" and owner is not None
                              else code.co_name, name, v))
        f = f.f_back
    if flags:
        out["flags"] = flags[::-1]
    return out


def _called_name(frame) -> str | None:
    """What the user called, seen from the outermost library frame that is not plumbing: a module's class
    (``AHIQ``, for ``model(x)`` running ``AHIQ.forward``), else the function's name (``checkpoint``)."""
    name = frame.f_code.co_name
    if name == "forward" and isinstance(frame.f_locals.get("self"), torch.nn.Module):
        return type(frame.f_locals["self"]).__name__
    return None if name in _WRAPPERS or name.startswith("_") else name


def _outermost(f):
    """The outermost user frame on the stack from ``f`` (a notebook cell's line, ``model = Net()``), no farther
    out than the frame that opened the recording: a recording opened inside ``main()`` names ``main``'s lines,
    not the ``main()`` call that holds them all."""
    home = _ACTIVE[-1].home if _ACTIVE else None
    last = None
    while f is not None:
        if not is_library(f.f_code.co_filename):
            last = (f.f_code.co_filename, f.f_lineno)
        if id(f) == home:
            break
        f = f.f_back
    return last


@dataclass(frozen=True)
class Assignment:
    """``owner.name = value`` of a parameter, a module or a tensor that requires grad, at record ``index``;
    ``in_forward``: a module's forward was running (the recording's scope), ``location`` the user's line,
    ``outer`` the outermost user line."""

    index: int
    owner: object
    name: str
    value: object
    location: tuple | None
    outer: tuple | None
    in_forward: bool
    why: dict = field(default_factory=dict)     # a frozen parameter's birth: :func:`why_set`


@dataclass(eq=False)
class Birth:
    """A parameter born inside the recording from a computed value (``nn.Parameter(W)`` put onto a module).

    A record of the provenance walk shaped like a recorded op (``index``,
    ``name``, ``kind`` ``"birth"``, ``inputs`` the value it copies, ``outputs``
    the parameter, ``location``), with its :class:`Assignment` in ``extra``.
    """

    index: int
    name: str
    inputs: list
    outputs: list
    location: tuple | None
    extra: dict
    kind: str = "birth"
    scope: str = ""
    grad_enabled: bool = True
    inference: bool = False


class Provenance:
    """The grad-mode events, ``Function.apply`` spans and module assignments of one recording."""

    def __init__(self, rec):
        self._rec = weakref.ref(rec)       # no cycle: a dropped recording frees its tensors at once
        self.grad_events: list = []        # (record index, grad enabled after, Setter, changed the mode)
        self.spans: list = []              # [start, end, Setter] of an autograd.Function.apply
        self.applied: list = []            # Applied: a custom Function that joined the graph
        self.assignments: list = []        # Assignment
        self.home: int | None = None       # id of the frame that opened the recording (see _outermost)

    @property
    def rec(self):
        return self._rec()

    def _index(self) -> int:
        rec = self._rec()
        return len(rec.ops) if rec is not None else 0

    def grad_setter(self, index: int) -> Setter | None:
        """Who turned gradients off for record ``index``: the innermost ``Function.forward`` span holding it,
        else the event that turned them from on to off and is still in effect (a ``with torch.no_grad()`` that
        opens and closes while they are already off is not the cause); None when nothing recorded says."""
        inside = [s for s in self.spans if s[0] <= index < (s[1] if s[1] is not None else float("inf"))]
        if inside:
            return inside[-1][2]
        enabled, cause = True, None
        for at, on, setter, changed in self.grad_events:
            if at > index:
                break
            enabled = on
            if on:
                cause = None
            elif changed:           # a `with` that restores "off" on its way out is not who turned it off
                cause = setter
        return None if enabled else cause

    def assignment_of(self, value) -> Assignment | None:
        """The last recorded assignment that put ``value`` (a parameter or module) onto a module."""
        return next((a for a in reversed(self.assignments) if a.value is value), None)

    def birth(self, param) -> Assignment | None:
        """Where ``param`` was put onto its module: its own assignment, else its module's (a Linear built whole)."""
        mine = self.assignment_of(param)
        if mine is not None:
            return mine
        for a in reversed(self.assignments):
            if isinstance(a.value, torch.nn.Module) and any(p is param for p in a.value.parameters()):
                return a
        return None


@dataclass(eq=False)
class Applied:
    """A custom ``autograd.Function`` whose outputs joined autograd's graph, as a record of the provenance walk
    (shaped like a recorded op: ``index`` the record after its forward, ``kind`` ``"function"``): its outputs
    come from its tensor inputs through the class's own ``backward``, whatever ran inside ``forward``."""

    index: int
    name: str
    inputs: list
    outputs: list
    location: tuple | None
    extra: dict
    kind: str = "function"
    scope: str = ""


def _listening() -> list:
    """The provenances that note an event now: not one whose recording runs a step again, or steps aside while a
    library model's call kept as its boundary runs (:mod:`.rerun`: the run again notes that call's events)."""
    out = []
    for p in _ACTIVE:
        rec = p.rec
        if rec is None or not (getattr(rec, "_paused", 0) or getattr(rec, "_inside", 0)):
            out.append(p)
    return out


def _set_grad_init(original):
    def __init__(self, mode):
        before = torch.is_grad_enabled()
        original(self, mode)
        if _ACTIVE:
            caller = sys._getframe(1)
            what = ("no_grad" if not mode else "enable_grad") if caller.f_code.co_filename == grad_mode.__file__ \
                else f"set_grad_enabled({bool(mode)})"        # a call, not a `with`: it stays after it returns
            setter = _setter(caller, what)
            for p in _listening():
                p.grad_events.append((p._index(), bool(mode), setter, bool(mode) != before))
    return __init__


def _inference_enter(original):
    def __enter__(self):
        out = original(self)
        if _ACTIVE and self.mode:
            setter = _setter(sys._getframe(1), "inference_mode")
            for p in _listening():
                p.grad_events.append((p._index(), False, setter, True))
        return out
    return __enter__


def _inference_exit(original):
    def __exit__(self, *exc):
        out = original(self, *exc)
        if _ACTIVE and self.mode:
            for p in _listening():
                p.grad_events.append((p._index(), torch.is_grad_enabled(), None, True))
        return out
    return __exit__


def _apply(original):
    def apply(cls, *args, **kwargs):
        if not _ACTIVE:
            return original.__func__(cls, *args, **kwargs)
        setter = _setter(sys._getframe(1), f"{cls.__name__}.forward")
        spans = [(p, [p._index(), None, setter]) for p in _listening()]
        for p, span in spans:
            p.spans.append(span)
        try:
            result = original.__func__(cls, *args, **kwargs)
        finally:
            for p, span in spans:
                span[1] = p._index()
        outputs = [o for o in (result if isinstance(result, (tuple, list)) else (result,))
                   if isinstance(o, torch.Tensor) and getattr(o.grad_fn, "_forward_cls", None) is cls]
        if outputs:
            inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            for p, span in spans:
                p.applied.append(Applied(span[1], f"{cls.__name__}.apply", inputs, outputs, setter.location
                                         if setter else None, {"cls": cls, "setter": setter,
                                                               "run": (args, kwargs), "start": span[0]}))
        return result
    return classmethod(apply)


def _module_setattr(original):
    def __setattr__(self, name, value):
        original(self, name, value)
        if _ACTIVE and (isinstance(value, (torch.nn.Parameter, torch.nn.Module))
                        or isinstance(value, torch.Tensor) and value.requires_grad):
            f = sys._getframe(1)
            while f is not None and is_library(f.f_code.co_filename):
                f = f.f_back
            loc = (f.f_code.co_filename, f.f_lineno) if f is not None else None
            outer = _outermost(f) if f is not None else None
            why = why_set(sys._getframe(1)) if isinstance(value, torch.nn.Parameter) and not value.requires_grad \
                else {}
            for p in _listening():
                p.assignments.append(Assignment(p._index(), self, name, value, loc, outer,
                                                bool(getattr(p.rec, "_scopes", None)), why))
    return __setattr__


_PATCHES = ((grad_mode.set_grad_enabled, "__init__", _set_grad_init),
            (grad_mode.inference_mode, "__enter__", _inference_enter),
            (grad_mode.inference_mode, "__exit__", _inference_exit),
            (_function.Function, "apply", _apply),
            (torch.nn.Module, "__setattr__", _module_setattr))


def start(rec) -> Provenance:
    """A :class:`Provenance` for recording ``rec``; the hooks go into torch's classes with the first recording.

    They stay there after it: each passes straight through to torch's own method when no recording is active
    (one Python call), whereas putting them in and taking them out again costs about a millisecond per
    recording — a class attribute that changes invalidates the method caches of every subclass, and every
    ``nn.Module`` class of the process is one. A learner recording each step of a training loop pays that
    once.
    """
    if not _SAVED:
        for owner, name, make in _PATCHES:
            original = owner.__dict__[name]
            _SAVED[(owner, name)] = original
            setattr(owner, name, make(original))
    p = Provenance(rec)
    p.home = id(sys._getframe(2))      # the frame whose `with` opened the recording (alive while it records)
    _ACTIVE.append(p)
    return p


def stop(p: Provenance) -> None:
    """Stop noting for ``p`` (the hooks stay, passing through; see :func:`start`)."""
    if p in _ACTIVE:
        _ACTIVE.remove(p)

