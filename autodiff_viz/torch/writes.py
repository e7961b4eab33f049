"""Writes in place: which tensor a torch call is about to change, and copies of tensors made before such a write.

A recording must know both: autograd refuses a tensor written after it saved it, so the recorder copies what a
trace will still need (:meth:`.record.Recording._before_write`), and a step run again (:mod:`.rerun`) must not
write into the learner's own tensors.
"""
from __future__ import annotations

import contextlib

import torch

_INPLACE_DUNDERS = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                    "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__setitem__"}
_NOT_A_WRITE = {"requires_grad_", "detach_", "retain_grad", "share_memory_", "record_stream"}


def written(name, args, kwargs):
    """The tensor a call is about to change in place (``p.add_(…)``, ``p -= …``, ``out=``), or None."""
    out = kwargs.get("out") if kwargs else None
    if isinstance(out, torch.Tensor):
        return out
    if (name[-1] == "_" and name[0] != "_" and name not in _NOT_A_WRITE or name in _INPLACE_DUNDERS
            or kwargs and kwargs.get("inplace") is True) and args and isinstance(args[0], torch.Tensor):
        return args[0]
    return None


@contextlib.contextmanager
def aside():
    """No graph and no torch-function dispatch inside the block, for copies the recorder makes of its own: grad mode
    switched through torch's C function, as ``torch.no_grad()`` would be a grad-mode event (:mod:`.provenance`)
    placed among the learner's."""
    was = torch.is_grad_enabled()
    torch._C._set_grad_enabled(False)
    try:
        with torch._C.DisableTorchFunction():
            yield
    finally:
        torch._C._set_grad_enabled(was)


def copies(ts) -> list:
    """Copies of tensors ``ts`` (None for one without storage: meta, sparse layouts …), detached and with their
    own memory, made in one call when the tensors allow it (an optimizer's forty parameters cost one call, not
    forty)."""
    if not ts:
        return []
    with aside():
        try:
            return list(torch._foreach_clone(ts))
        except (RuntimeError, TypeError, AttributeError, NotImplementedError):
            out = []
            for t in ts:
                try:
                    out.append(t.clone())
                except RuntimeError:
                    out.append(None)
            return out
