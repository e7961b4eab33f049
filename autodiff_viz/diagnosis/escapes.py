"""Values that left the tape: which escapes a gradient's path lost, and how to recognise an escaped value.

While a tape records, a tracked tensor that becomes numpy or a Python number
(``t.numpy()``, ``float(t)``, numpy taking it through ``__array__``: the
CS231n spelling ``X.dot(W)`` with ``X`` an ndarray, ``out[i] = t`` into
``np.zeros``) is noted in ``tape.record.escapes`` with its line. The tape
cannot see what numpy computes from there: a value that comes back is a
constant, and its share of the gradient is missing. ``explain`` (``left_the_tape``,
``partly_lost``), ``compare`` (the ``lost`` verdict) and ``check_grads`` read
the escapes through these two functions.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..base import naming
from ..base.state import PYTHON_NUMBER, user_frame_object, user_stacklevel
from ..core import walks
from ..core.methods import ACCUMULATED
from ..core.tensor import Tensor, Variable, full_name


class PartialGradientWarning(UserWarning):
    """``tape.gradient`` (``grad``, ``value_and_grad``, ``fit``) returned a gradient that misses a path: a value
    computed from the source left the tape as numpy (``X.dot(W)`` with ``X`` an ndarray, ``out[i] = t`` into
    ``np.zeros``, ``np.asarray(t)``) and came back as a constant. Shown once per line; ``tape.explain`` says
    the same (``partly_lost``)."""


_WARNED: set = set()        # the escape lines already warned about (once per line)


def lost_paths(tape, target_id, source_id) -> list:
    """The escapes (values that left the tape as numpy or numbers) of tensors computed from ``source_id``.

    ``X.dot(W)`` with ``X`` an ndarray, ``out[i] = t`` into ``np.zeros``,
    ``float(t)``: numpy takes the value, the tape records the escape and its
    line, and any gradient along that path is missing. The target's own
    escapes (``print(float(loss))``) cut nothing and are left out; one
    escape per tensor and line (numpy may convert a tensor twice in one call).

    An escaped value can only come back as a constant made after it left. An
    escape later than every constant in the target's history cut nothing: the
    hand backward that reads forward values as numbers after the forward pass
    (CS231n's ``dW += 2 * reg * W``, ``np.asarray(w).T``) loses no path. Nor
    does a value accumulated into an array (``dW[:, j] += t``, in the same loop
    as the loss): that is the hand gradient's bookkeeping, not the forward pass
    (``explain`` still names the line if that array is fed back).
    """
    escapes = [e for e in tape.record.escapes if e.tensor_id != target_id]
    if source_id is None or not escapes:
        return []
    reach = walks.reachable(tape.record.nodes, {source_id})[0] | {source_id}
    newest = _newest_constant(tape, target_id)
    out, seen = [], set()
    for e in escapes:
        if e.tensor_id in reach and e.clock < newest and not e.how.endswith(ACCUMULATED) \
                and (e.tensor_id, e.location) not in seen:
            seen.add((e.tensor_id, e.location))
            out.append(e)
    return out


def _newest_constant(tape, target_id) -> float:
    """The largest id among the floating constants (untracked leaves) the target's recorded history reads."""
    nodes = tape.record.nodes
    made = {node.out_id for node in nodes}
    if target_id not in made:       # no recorded history (or no tensor at all): it is the constant
        return target_id if target_id is not None else float("inf")
    need, newest = {target_id}, 0
    for node in reversed(nodes):
        if node.out_id in need:
            for t in node.inputs:
                if t._id in made:
                    need.add(t._id)
                elif t._id not in tape.record.tracked and t.dtype.kind in "fc":   # `j == y[i]` carries nothing
                    newest = max(newest, t._id)
    return newest


def same_values(small: np.ndarray, big: np.ndarray) -> bool:
    """True when every entry of ``small`` is an entry of ``big`` (``x.numpy()[0]`` is in ``x``)."""
    if small.size == 0 or small.size > big.size or small.dtype.kind not in "fc" or big.dtype.kind not in "fc":
        return False
    if small.shape == big.shape:
        return bool(np.allclose(small, big, rtol=1e-6, atol=0, equal_nan=True))
    flat = big.ravel()
    return all(np.isclose(flat, v, rtol=1e-6, atol=0).any() for v in small.ravel()[:64])


def partial(tape, target, source_id) -> list:
    """The escapes that make the gradient of ``target`` with respect to ``source_id`` partial, with evidence.

    :func:`lost_paths`, kept only where the value came back: a floating
    constant made inside this tape sits in the target's history and holds the
    escaped values (or, for a number, holds it among its entries: ``out[i] =
    float(t)`` into ``np.zeros``), or numpy itself took the tensor (``np.asarray()``:
    ``X.dot(W)``, a write into an ndarray) rather than the learner asking for
    a number to print. Empty when nothing was lost.
    """
    escapes = lost_paths(tape, target._id, source_id)
    if not escapes:
        return []
    start = tape.record.start_id or 0
    leaves = [t for t in _leaves(target) if not isinstance(t, Variable) and t._id > start and t._id != source_id
              and t.dtype.kind in "fc"]
    if not leaves:
        return []
    same = [e for e in escapes if any(same_values(t._value, e.value) and not _typed(t)
                                      or e.value.size == 1 and same_values(e.value, t._value) for t in leaves)]
    return same or [e for e in escapes if e.how == "np.asarray()"]


def _typed(t) -> bool:
    """Is ``t`` a number the code wrote (the ``2`` of ``t ** 2``), which equals an entry of an escaped array by
    coincidence only? (A numpy scalar taken from that array, ``w * x.numpy()[1]``, is not.)"""
    return getattr(t, "_made_at", None) is PYTHON_NUMBER


def _leaves(target) -> list:
    """The leaves (tensors without a maker) of ``target``'s history."""
    out, stack, seen = [], [target], set()
    while stack:
        t = stack.pop()
        if t._id in seen:
            continue
        seen.add(t._id)
        node = t._node
        if node is None:
            out.append(t)
        else:
            stack.extend(node.inputs)
    return out


def warn_partial(tape, targets, sources, grads) -> None:
    """Warn (:class:`PartialGradientWarning`, once per escape line) when a gradient just computed misses a path
    through a recorded escape. Called by ``tape.gradient`` only when the tape noted escapes."""
    for target in targets:
        if not isinstance(target, Tensor):
            continue
        for source, g in zip(sources, grads):
            if g is None or not isinstance(source, Tensor):
                continue
            taken = partial(tape, target, source._id)
            fresh = [e for e in taken if e.location not in _WARNED]
            if not fresh:
                continue
            esc = fresh[0]
            _WARNED.update(e.location for e in taken)
            name = full_name(source) or _caller_name(source)
            what = f"'{name}'" if name else f"the source of shape {source.shape}"
            warnings.warn(PartialGradientWarning(
                f"The gradient with respect to {what} is partial: a value computed from it left the tape "
                f"{naming.lost_at(esc)}{naming.code_line(esc.location)}\nand came back as a constant, so that "
                f"path's share of the gradient is missing (tape.explain(target, source) says partly_lost).\n"
                f"{naming.LOST_FIX}"), stacklevel=user_stacklevel())


def _caller_name(t) -> str | None:
    """The learner's variable holding ``t`` in the frame that asked for the gradient, or None."""
    frame = user_frame_object()
    if frame is None:
        return None
    return next((k for k, v in frame.f_locals.items() if v is t and not k.startswith("_")), None)
