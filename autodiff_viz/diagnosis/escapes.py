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

import numpy as np

from ..core import walks
from ..core.methods import ACCUMULATED


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
