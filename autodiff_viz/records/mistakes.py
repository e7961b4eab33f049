"""What kind of mistake a wrong hand gradient is: the structured record of a :class:`Comparison`.

``tape.compare`` says *where* a hand derivation first goes wrong; a teacher
grading a class also wants to know *what* went wrong, in words that can be
counted ("41% wrote ``1 − h`` for tanh′ at ``z``"). Each row of a comparison
gets a **kind**, read from the numbers and from the op's rule on the trace —
never from a list of one assignment's expected mistakes:

=============================  ==============================================================
kind                           when (``hand`` = yours, ``tape`` = the tape's gradient)
=============================  ==============================================================
``correct``                    exact, or within ``rtol``/``atol``
``sign``                       ``hand ≈ −tape``
``scale(k)``                   ``hand ≈ k · tape`` (a missing ``/N`` gives ``scale(N)``)
``transpose``                  ``handᵀ ≈ tape``
``missing_batch_sum``          ``hand`` has one more leading axis and ``hand.sum(0) ≈ tape``
``shape``                      any other shape (a bias summed over every axis …)
``swapped(a, b)``              ``hand`` of ``a`` is the tape's gradient of ``b``
``lost_path(use)``             the node feeds several ops and ``hand`` misses the contribution of
                               ``use`` (the variable that op made, else the op: ``counts_sum``,
                               ``mean``); the multivariable chain rule sums the paths
``wrong_local_factor(op)``     every gradient above it along the backward pass is right, and one
                               op lies between them, ``op``: its local derivative is wrong (with
                               several ops between, the tool cannot tell which: ``wrong``)
``follows(x)``                 a gradient above it (``x``) is wrong; it may be right for that value
``nan``                        ``hand`` has NaN or ±inf
``invalid``                    not an array of numbers
``missing``                    no gradient given (a grader's key that the function did not return)
``no_gradient``                the target does not depend on it, yet a gradient was given
``not_judged(line)``           the tape lost a path at ``line`` (see ``lost``): it cannot judge
``wrong``                      wrong, and none of the above: the tool cannot tell why
=============================  ==============================================================

A row is a **root** mistake when its error is its own: the first wrong row,
a shape mistake, or any wrong row with no wrong row above it. ``follows`` rows
and the rows above which an error already sits are not roots: counting roots
counts each learner's mistakes once.

This module reads rows and a trace; it draws nothing and changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPE_KINDS = ("transpose", "missing_batch_sum", "shape")


class _Missing:
    """The hand value of a row whose gradient was never given (a grader's key the function did not return)."""

    def __repr__(self):
        return "MISSING"


MISSING = _Missing()


@dataclass(frozen=True)
class Kind:
    """A mistake kind: ``name`` (``"scale"``) and its arguments (``("32",)``); ``str()`` is ``scale(32)``."""

    name: str
    args: tuple = ()

    def __str__(self):
        return f"{self.name}({', '.join(self.args)})" if self.args else self.name

    @property
    def phrase(self) -> str:
        """The kind in words, for the human message."""
        a = self.args
        return {
            "correct": "correct",
            "sign": "the sign is flipped",
            "scale": f"off by a constant factor {a[0] if a else ''}",
            "transpose": "transposed",
            "missing_batch_sum": "not summed over the batch axis",
            "shape": "the wrong shape",
            "swapped": f"the gradient of {a[1] if len(a) > 1 else 'another tensor'} (swapped)",
            "lost_path": f"missing the path through {a[0] if a else 'one of its uses'} "
                         "(a tensor used twice gets the sum of both contributions)",
            "wrong_local_factor": f"the local derivative of {a[0] if a else 'the op'} is wrong",
            "follows": f"computed from {a[0] if a else 'a wrong gradient'}, which is wrong: fix that first",
            "nan": "not finite (NaN or inf)",
            "invalid": "not an array of numbers",
            "missing": "missing",
            "error": f"the code raised {a[0] if a else 'an exception'}",
            "returned": f"the function returned {a[0] if a else 'the wrong values'}",
            "no_gradient": "given, but the target does not depend on it",
            "not_judged": "not judged (the tape lost a path)",
            "wrong": "wrong, in no pattern the tool recognises",
        }.get(self.name, self.name)


def number(k: float) -> str:
    """``k`` as a learner would write the factor: ``32``, ``1/32``, ``-2``, ``0.37``."""
    r = round(k)
    if r != 0 and abs(k - r) <= 1e-6 * abs(k):
        return str(int(r))
    if k != 0:
        inv = 1.0 / k
        ri = round(inv)
        if ri != 0 and abs(inv - ri) <= 1e-6 * abs(inv):
            return f"1/{int(ri)}" if ri > 0 else f"-1/{int(-ri)}"
    return f"{k:.4g}"


def _arrays(row):
    """``(hand, tape)`` as float arrays, or ``(None, None)`` when either is not an array of numbers."""
    try:
        h = np.asarray(row.hand_value, dtype=np.float64)
        t = np.asarray(row.tape_value, dtype=np.float64)
    except (TypeError, ValueError):
        return None, None
    if h.shape != t.shape and h.size == t.size and _squeezed(h.shape) == _squeezed(t.shape):
        h = h.reshape(t.shape)
    return h, t


def _squeezed(shape) -> tuple:
    return tuple(s for s in shape if s != 1)


def _close(a, b, rtol, atol) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=max(rtol, 1e-6), atol=atol))


def _scale(h, t, rtol, atol):
    """``k`` with ``h ≈ k·t`` (k ≠ ±1), else None (least squares over the entries, then checked)."""
    tt = float(np.sum(t * t))
    if tt == 0.0 or np.count_nonzero(np.abs(t) > atol) < 2:     # one number is a multiple of any other
        return None
    k = float(np.sum(h * t) / tt)
    if not np.isfinite(k) or abs(k) < 1e-12 or abs(abs(k) - 1) < 1e-6:
        return None
    return k if np.allclose(h, k * t, rtol=max(rtol, 1e-6) * 10, atol=atol) else None


class _Context:
    """What classifying one row needs of the others and of the trace."""

    def __init__(self, rows, trace, rtol, atol):
        self.rows, self.trace, self.rtol, self.atol = list(rows), trace, rtol, atol
        self.by_node = {r.node: r for r in self.rows if r.node is not None}

    def above(self, node_id):
        """``(rows, ops between)`` reached from ``node_id`` going toward the target (forward along edges).

        Walking stops at a compared node (a row) or the target (whose
        gradient, the seed, is known); nodes nobody compared are walked through.
        ``rows`` holds ``"target"`` for the target.
        """
        trace = self.trace
        if trace is None or node_id is None:
            return [], set()
        first = [e for e in trace.edges_from(node_id) if e.on_path]
        ops = {trace.node(e.dst).op for e in first}
        reached, seen, stack = [], {node_id}, [e.dst for e in first]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.by_node:
                reached.append(self.by_node[n])
            elif n == trace.target:
                reached.append("target")
            else:
                ops.add(trace.node(n).op)          # an op nobody compared lies between: it counts too
                stack.extend(e.dst for e in trace.edges_from(n) if e.on_path)
        return reached, ops


def classify(row, ctx: _Context) -> Kind:
    """The :class:`Kind` of one row (see the module's table for the order the checks run in)."""
    status = row.status
    if status in ("exact", "close"):
        return Kind("correct")
    if status == "lost":
        where = row.message.split(" at ", 1)[1].split(", where")[0] if " at " in row.message else "?"
        return Kind("not_judged", (where,))
    if status == "no_gradient":
        return Kind("no_gradient")
    if row.hand_value is MISSING:
        return Kind("missing")
    h, t = _arrays(row)
    if h is None:
        return Kind("invalid")
    if status == "invalid":
        return Kind("nan") if h.size and not np.all(np.isfinite(h)) else Kind("invalid")
    rtol, atol = ctx.rtol, ctx.atol
    if h.shape != t.shape:
        if h.ndim == t.ndim + 1 and h.shape[1:] == t.shape and _close(h.sum(axis=0), t, rtol, atol):
            return Kind("missing_batch_sum")
        if h.ndim == 2 and h.shape == t.shape[::-1] and _close(h.T, t, rtol, atol):
            return Kind("transpose")
        other = _swapped_with(row, h, ctx)
        return Kind("shape") if other is None else Kind("swapped", (row.name, other))
    if _close(h, -t, rtol, atol):
        return Kind("sign")
    k = _scale(h, t, rtol, atol)
    if k is not None:
        return Kind("scale", (number(k),))
    if h.ndim == 2 and h.shape[0] == h.shape[1] and _close(h.T, t, rtol, atol):
        return Kind("transpose")
    other = _swapped_with(row, h, ctx)
    if other is not None:
        return Kind("swapped", (row.name, other))
    reached, ops = ctx.above(row.node)
    wrong_above = [r for r in reached if r != "target" and not r.ok]
    if wrong_above:
        return Kind("follows", (wrong_above[0].name,))
    lost = _lost_path(h, t, row.node, ctx)
    if lost is not None:
        return Kind("lost_path", (lost,))
    if reached and len(ops) == 1:
        return Kind("wrong_local_factor", (next(iter(ops)),))
    return Kind("wrong")


def _swapped_with(row, h, ctx: _Context):
    """The name of another row whose tape gradient ``h`` is (``dW`` returned as ``db``), else None.

    Shapes may differ from the row's own (two gradients of different shapes
    swapped in a returned tuple); the other's must match ``h`` exactly.
    """
    t = np.asarray(row.tape_value, dtype=np.float64)
    for other in ctx.rows:
        if other is row or other.tape_value is None:
            continue
        ot = np.asarray(other.tape_value, dtype=np.float64)
        if ot.shape == h.shape and _close(h, ot, ctx.rtol, ctx.atol) and not _close(ot, t, ctx.rtol, ctx.atol):
            return other.name
    return None


def _lost_path(h, t, node_id, ctx: _Context):
    """The place of the op whose contribution ``h`` misses (``h ≈ tape − that edge's ḡ``), or None."""
    trace = ctx.trace
    if trace is None or node_id is None:
        return None
    edges = [e for e in trace.edges_from(node_id) if e.on_path and e.contribution is not None]
    if len(edges) < 2:
        return None
    for e in edges:
        c = e.contribution.data
        if c is None or c.shape != t.shape:
            continue
        if np.any(np.abs(c) > ctx.atol) and _close(h, t - np.asarray(c, dtype=np.float64), ctx.rtol, ctx.atol):
            return trace.node(e.dst).title     # stable across students (a line number is not: cells differ)
    return None


def kinds_of(comparison, rtol=1e-5, atol=1e-8) -> list:
    """One :class:`Kind` per row of ``comparison``, in row order."""
    ctx = _Context(comparison.rows, comparison.trace, rtol, atol)
    return [classify(r, ctx) for r in ctx.rows]


def roots(comparison, kinds) -> list:
    """Per row, whether its mistake is its own (see the module docstring); False for a correct row."""
    ctx = _Context(comparison.rows, comparison.trace, 0, 0)
    first = comparison.first_wrong
    out = []
    for r, k in zip(comparison.rows, kinds):
        if k.name in ("correct", "not_judged"):
            out.append(False)
        elif r is first or k.name in SHAPE_KINDS or k.name in ("nan", "invalid", "missing"):
            out.append(True)
        elif k.name == "follows":
            out.append(False)
        else:
            reached, _ = ctx.above(r.node)
            out.append(not any(x != "target" and not x.ok for x in reached))
    return out


def _num(v):
    return None if v is None or not np.isfinite(v) else float(v)


def record(comparison, rtol=1e-5, atol=1e-8) -> dict:
    """The comparison as plain JSON-ready data: per row its status, kind, shapes, differences and message."""
    kinds = kinds_of(comparison, rtol, atol)
    root = roots(comparison, kinds)
    first = comparison.first_wrong
    rows = []
    for r, k, is_root in zip(comparison.rows, kinds, root):
        rows.append({
            "name": r.name, "node": r.node, "status": r.status, "kind": str(k), "kind_name": k.name,
            "kind_args": list(k.args), "root": is_root, "first_wrong": r is first,
            "hand_shape": list(r.hand_shape), "tape_shape": list(r.tape_shape),
            "max_abs": _num(r.max_abs), "max_rel": _num(r.max_rel), "message": r.message,
            "factors": list(r.factors),
        })
    first_kind = kinds[comparison.rows.index(first)] if first is not None else None
    return {"ok": comparison.ok, "first_wrong": None if first is None else first.name,
            "first_kind": None if first_kind is None else str(first_kind), "rows": rows}
