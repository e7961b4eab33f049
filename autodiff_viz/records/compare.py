"""Exercise mode: compare hand-derived gradients with the tape's, along the backward pass.

The way to learn backpropagation is to derive every intermediate gradient by
hand and check each one against the framework. ``tape.compare`` does the
checking, and says *where* a derivation first goes wrong:

    >>> import autodiff_viz as adv
    >>> x = adv.constant([[1.0, -2.0]])
    >>> W = adv.Variable([[0.5], [0.25]], name="W")
    >>> with adv.GradientTape(persistent=True) as tape:
    ...     z = x @ W
    ...     h = adv.tanh(z)
    ...     loss = adv.sum(h ** 2)
    >>> dh = 2 * h.numpy()
    >>> dz = dh * (1 - h.numpy() ** 2)
    >>> dW = x.numpy().T @ dz
    >>> cmp = tape.compare(loss, {"h": dh, "z": dz, "W": dW})
    >>> cmp.ok
    True

Keys name the intermediates: a tensor, or a string — the name of a variable
holding the tensor where ``compare`` is called (or inside the function, for
:func:`compare`), or the name a trace gives a node. Each row is checked in
order: the **shape** first (a hand gradient of shape ``(32,)`` against
``(32, 1)`` gets "did you keep the axis?"), then the values: ``exact``,
``close`` (within ``rtol``/``atol``; the largest absolute and relative
differences are shown) or ``wrong``.

Rows are ordered along the backward pass (the target end first). The first
wrong row is the place to look: every intermediate computed from it by the
chain rule inherits its error, so later rows being wrong says nothing new.
For that row the table shows the tape's chain-rule factors on the edges out
of the node — the local derivatives the hand derivation had to multiply by.

Nothing here changes the tape: it is read, never used up (a non-persistent
tape can still answer ``gradient`` afterwards).
"""
from __future__ import annotations

import difflib
import html
import json
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..base import naming
from ..base.state import paused, user_frame_object
from ..core import walks
from ..core.tensor import Tensor, as_tensor
from ..diagnosis.escapes import lost_paths
from ..diagnosis.kinds import hand_hint
from ..diagnosis.walk import explain, require_recorded
from . import mistakes
from .tape import GradientTape
from .traces.build import build_trace

if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

STATUSES = ("exact", "close", "wrong", "shape", "invalid", "no_gradient", "lost")
_COLOURS = {"exact": "#c9f2c9", "close": "#dff5c4", "wrong": "#f6b8b8", "shape": "#f6b8b8",
            "invalid": "#f6b8b8", "no_gradient": "#f6d7a8", "lost": "#f6d7a8"}


@dataclass(frozen=True)
class Row:
    """One compared intermediate.

    Attributes:
        name: what the learner called it.
        node: the trace node id (``None`` when it is not in the trace).
        status: ``exact``, ``close``, ``wrong``, ``shape`` (shapes differ),
            ``invalid`` (the hand gradient has NaN/inf or is not numeric) or
            ``no_gradient`` (the target does not depend on it: the tape's
            gradient is None) or ``lost`` (the tape's gradient misses a path:
            a value computed from it left the tape as numpy or a number, at a
            line the message names, so the tape cannot judge the hand value).
        max_abs: largest ``|hand − tape|`` (NaN when not comparable).
        max_rel: largest ``|hand − tape| / max(|tape|, |hand|)`` over the
            entries where that is above ``atol`` (entries of about zero on
            both sides are judged by ``atol`` alone), so a "close" row never
            shows a huge ratio against a gradient of ~0; at most 2.
        message: the row in words, with a hint when it is wrong.
        factors: the tape's chain-rule factors on the edges out of the node.
    """

    name: str
    node: str | None
    status: str
    hand_shape: tuple
    tape_shape: tuple
    max_abs: float
    max_rel: float
    message: str
    factors: tuple = ()
    hand_value: object = field(default=None, repr=False, compare=False)   # what was compared (mistakes reads it)
    tape_value: object = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status in ("exact", "close")


class Comparison:
    """Hand gradients against the tape's, one :class:`Row` per intermediate, along the backward pass.

    ``first_wrong`` is the row to look at first; ``show()`` draws the
    backward graph with matched nodes green, wrong ones red and the rest grey.
    In a notebook the comparison displays as a table; ``str()`` is the same
    table as text.
    """

    def __init__(self, rows, trace=None):
        self.rows: list[Row] = list(rows)
        self.trace = trace

    @property
    def ok(self) -> bool:
        """True when every hand gradient matches (exactly or within tolerance)."""
        return all(r.ok for r in self.rows)

    @property
    def first_wrong(self) -> Row | None:
        """The first row along the backward pass that does not match, or None."""
        return next((r for r in self.rows if not r.ok), None)

    def __getitem__(self, name) -> Row:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no row {name!r}; the rows are {[r.name for r in self.rows]}.")

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    # ----- text and HTML --------------------------------------------------
    def _verdict(self, kinds=None) -> str:
        bad = self.first_wrong
        if bad is None:
            return f"All {len(self.rows)} hand gradients match the tape."
        if bad.status == "lost":
            return f"Not judged: {bad.name}. {bad.message}"
        kind = (kinds or self.kinds())[self.rows.index(bad)]
        text = f"First wrong along the backward pass: {bad.name} ({kind}). {bad.message}"
        if bad.factors:
            text += " The tape's factors out of it: " + "; ".join(bad.factors) + "."
        return text

    def _kind_texts(self, kinds) -> list:
        """The kind column: each row's own mistake, ``follows`` where a wrong row above explains it."""
        own = mistakes.roots(self, kinds)
        return [str(k) if mine or r.ok else "follows" for r, k, mine in zip(self.rows, kinds, own)]

    def __str__(self):
        kinds = self.kinds()
        shown = self._kind_texts(kinds)
        head = ("", "intermediate", "status", "kind", "shape (hand / tape)", "max |diff|", "max rel diff")
        body = [(("→" if r is self.first_wrong else ""), r.name, r.status, k,
                 f"{r.hand_shape} / {r.tape_shape}", _fmt(r.max_abs), _fmt(r.max_rel))
                for r, k in zip(self.rows, shown)]
        widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head, *body]]
        return "\n".join(lines + ["", self._verdict(kinds)])

    def __repr__(self):
        return f"<Comparison {len(self.rows)} rows, ok={self.ok}>"

    def _repr_html_(self) -> str:
        esc = html.escape
        kinds = self.kinds()
        rows = []
        for r, k in zip(self.rows, self._kind_texts(kinds)):
            first = r is self.first_wrong
            style = f"background:{_COLOURS[r.status]}" + (";font-weight:bold" if first else "")
            rows.append(
                f"<tr style='{style}'><td>{'→' if first else ''}</td><td><code>{esc(r.name)}</code></td>"
                f"<td>{esc(r.status)}</td><td>{esc(k)}</td>"
                f"<td>{esc(str(r.hand_shape))} / {esc(str(r.tape_shape))}</td>"
                f"<td>{esc(_fmt(r.max_abs))}</td><td>{esc(_fmt(r.max_rel))}</td><td>{esc(r.message)}</td></tr>")
        return ("<div class='adv-comparison'><table><thead><tr><th></th><th>intermediate</th><th>status</th>"
                "<th>kind</th><th>shape (hand / tape)</th><th>max |diff|</th><th>max rel diff</th><th></th></tr>"
                f"</thead><tbody>{''.join(rows)}</tbody></table><p>{esc(self._verdict(kinds))}</p></div>")

    # ----- the graph --------------------------------------------------------
    def marked_trace(self):
        """The trace with every row that does not match marked (views draw marks red)."""
        if self.trace is None:
            raise ValueError("this comparison has no trace to draw.")
        marks = {r.node: f"hand gradient {r.status}" for r in self.rows if r.node is not None and not r.ok}
        return self.trace.with_marks(marks)

    # ----- the structured record (records/mistakes.py) ---------------------
    def kinds(self, rtol=1e-5, atol=1e-8) -> list:
        """Per row, the kind of mistake (``sign``, ``scale(32)``, ``wrong_local_factor(tanh)`` …, ``correct``)."""
        return mistakes.kinds_of(self, rtol, atol)

    def to_dict(self, rtol=1e-5, atol=1e-8) -> dict:
        """The comparison as JSON-ready data: per row its status, **kind**, shapes, differences and message."""
        return mistakes.record(self, rtol, atol)

    def to_json(self, indent=None) -> str:
        """:meth:`to_dict` as JSON text (a grader's per-student record; never pickle)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)






def _fmt(v: float) -> str:
    return "—" if v is None or np.isnan(v) else f"{v:.3g}"


# ---------------------------------------------------------------------------
# Comparing arrays
# ---------------------------------------------------------------------------
def _shape_hint(hand: tuple, tape: tuple) -> str:
    if tuple(s for s in hand if s != 1) == tuple(s for s in tape if s != 1):
        return (f"Same entries, different axes of size 1: reshape it to {tape} "
                "(keepdims=True keeps the reduced axis).")
    if len(hand) == len(tape) - 1 and hand == tape[1:]:
        return ("It has the shape of one example: did you sum or average over the batch axis? "
                "Every intermediate of a batch has one gradient per example.")
    if len(tape) == len(hand) - 1 and tape == hand[1:]:
        return ("It has an extra leading axis: a weight or a bias gets one gradient, "
                "the sum over the batch axis (e.g. dW = x.T @ dz, db = dz.sum(axis=0)).")
    if len(hand) == len(tape) == 2 and hand == tape[::-1]:
        return "It is transposed: check the order of the matrix product (x.T @ dz vs dz @ x.T)."
    return f"The gradient of a tensor has that tensor's shape, {tape}."


def compare_arrays(name: str, node: str | None, hand, tape, rtol=1e-5, atol=1e-8, factors=(), shape=None,
                   why=None) -> Row:
    """One :class:`Row` (see :func:`judge_arrays`) that keeps the two values, for :mod:`.mistakes` to classify."""
    row = judge_arrays(name, node, hand, tape, rtol, atol, factors, shape, why)
    return replace(row, hand_value=hand._value if isinstance(hand, Tensor) else hand, tape_value=tape)


def judge_arrays(name: str, node: str | None, hand, tape, rtol=1e-5, atol=1e-8, factors=(), shape=None,
                 why=None) -> Row:
    """One :class:`Row`: the hand gradient ``hand`` against the tape's ``tape`` (None: no gradient).

    For a tape gradient of None, ``shape`` is the tensor's shape (what a
    gradient of it would have) and ``why`` the diagnosis to show instead of
    the generic "the target does not depend on it".
    """
    try:
        h = np.asarray(hand._value if isinstance(hand, Tensor) else hand)
    except Exception as exc:  # ragged lists and the like
        return Row(name, node, "invalid", (), _shape(tape), np.nan, np.nan,
                   f"Your gradient is not an array of numbers ({exc}).", tuple(factors))
    if h.dtype.kind not in "biuf":
        return Row(name, node, "invalid", h.shape, _shape(tape), np.nan, np.nan,
                   f"Your gradient has dtype {h.dtype}; give floating-point numbers.", tuple(factors))
    if tape is None:
        return Row(name, node, "no_gradient", h.shape, () if shape is None else tuple(shape), np.nan, np.nan,
                   why or "The target does not depend on it, so the tape has no gradient for it "
                   "(tape.explain(target, tensor) says why).", tuple(factors))
    t = np.asarray(tape)
    note, hand_shape = "", h.shape
    if h.shape != t.shape and h.size == t.size and _squeezed(h.shape) == _squeezed(t.shape):
        # The same entries, axes of size 1 differing ((64,) for (1, 64)): judge the values, note the shapes.
        note = (f", shape {h.shape} vs {t.shape} (the same entries; axes of size 1 differ: "
                "keepdims=True keeps a reduced axis)")
        h = h.reshape(t.shape)
    if h.shape != t.shape:
        return Row(name, node, "shape", h.shape, t.shape, np.nan, np.nan,
                   f"Shape {h.shape}, but the tape's gradient has shape {t.shape}. {_shape_hint(h.shape, t.shape)}",
                   tuple(factors))
    if not np.all(np.isfinite(h)):
        bad = np.argwhere(~np.isfinite(h))[0]
        return Row(name, node, "invalid", h.shape, t.shape, np.nan, np.nan,
                   f"Your gradient has a non-finite value ({h[tuple(bad)]}) at index {tuple(int(i) for i in bad)}."
                   + hand_hint(h, t), tuple(factors))      # the kinds of explain's why-NaN (issue 44)
    h = h.astype(np.float64)
    t = t.astype(np.float64)
    diff = np.abs(h - t)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = np.maximum(np.abs(t), np.abs(h))
    big = scale > atol          # entries of about zero on both sides are judged by atol alone: no ratio
    max_rel = float((diff[big] / scale[big]).max()) if np.any(big) else 0.0
    if max_abs == 0.0:
        return Row(name, node, "exact", hand_shape, t.shape, 0.0, 0.0, f"Exact{note}.", tuple(factors))
    if np.allclose(h, t, rtol=rtol, atol=atol):
        return Row(name, node, "close", hand_shape, t.shape, max_abs, max_rel,
                   f"Matches within rtol={rtol:g}, atol={atol:g} (rounding){note}.", tuple(factors))
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
    msg = (f"Wrong: the largest difference is at index {where}: yours {h[where]:.6g}, the tape's {t[where]:.6g}."
           if where else f"Wrong: yours {float(h):.6g}, the tape's {float(t):.6g}.")
    if np.allclose(h, -t, rtol=rtol, atol=atol):
        msg += " It is the tape's value with the opposite sign."
    else:
        ratio = float(np.sum(h * t) / np.sum(t * t)) if np.count_nonzero(t) > 1 else 0.0
        if ratio > 0 and np.allclose(h, ratio * t, rtol=1e-3, atol=atol):
            msg += f" It is the tape's value times {ratio:.4g}: a missing or extra constant factor?"
    if note:
        msg += f" (Shape {hand_shape} vs {t.shape}: reshape it to {t.shape} too.)"
    msg += hand_hint(h, t)                                  # a zero hand gradient where the tape's is not (issue 44)
    return Row(name, node, "wrong", hand_shape, t.shape, max_abs, max_rel, msg, tuple(factors))


def _squeezed(shape: tuple) -> tuple:
    return tuple(s for s in shape if s != 1)


def _shape(a) -> tuple:
    return () if a is None else tuple(np.shape(a))


# ---------------------------------------------------------------------------
# On a tape
# ---------------------------------------------------------------------------
def _names_on_tape(tape, namespace: dict) -> dict:
    """``{name: tensor}`` for the tensors of the record (made, read or watched) that a name in ``namespace`` holds.

    A constant that a recorded op read is on the tape too (a node of its
    trace), so ``{"c": g}`` finds it as ``{c: g}`` does.
    """
    ids = ({x._id for rec in tape.record.nodes for x in rec.inputs} | {rec.out_id for rec in tape.record.nodes}
           | set(tape.record.tracked))
    out = {}
    for k, v in namespace.items():
        if isinstance(v, Tensor) and v._id in ids and not k.startswith("_"):
            out.setdefault(k, v)
    return out


def _resolve(tape, key, names: dict, trace) -> tuple[str, Tensor | None, str | None]:
    """``(label, tensor, node id)`` for a key of the hand-gradient dict."""
    if isinstance(key, Tensor):
        node_id = trace.node_id_of(key)
        label = next((k for k, v in names.items() if v is key), None)
        if label is None and node_id is not None:
            node = trace.node(node_id)
            label = node.title if node.name or node.is_leaf else (  # the variable assigned on its line
                getattr(node, "label", None) or f"the output of {node.op}")
        return label or key.name or f"a tensor of shape {key.shape}", key, node_id
    if not isinstance(key, str):
        raise TypeError(f"compare: a key must be a tensor or the name of one (a string), got {type(key).__name__}.")
    if key in names:
        t = names[key]
        return key, t, trace.node_id_of(t)
    matches = [n for n in trace.nodes if key in (n.name, getattr(n, "label", None))]
    if matches:
        node = matches[-1]
        return key, None, node.id
    raise unknown_name(key, set(names) | {n.name for n in trace.nodes if n.name}, "on this tape")


def unknown_name(key: str, known, where: str) -> KeyError:
    """The error for a key that names no tensor: the names there are, closest first."""
    known = sorted(known)
    close = difflib.get_close_matches(key, known, n=len(known), cutoff=0.0)
    return KeyError(f"compare: no tensor named {key!r} {where}. Names there, closest first: "
                    f"{close[:12] or '(none: pass the tensors themselves as keys)'}.")


def along_backward(rows, trace) -> "Comparison":
    """A :class:`Comparison` of ``rows`` ordered along the backward pass (the target end first)."""
    order = {n.id: k for k, n in enumerate(trace.nodes)}
    rows = sorted(rows, key=lambda r: -order.get(r.node, -1))
    return Comparison(rows, trace)


def _factors(trace, node_id) -> tuple:
    if node_id is None:
        return ()
    seen, out = set(), []
    for e in trace.edges_from(node_id):
        if e.factor and e.on_path:
            text = f"{trace.node(e.dst).op}: {e.factor}"
            if text not in seen:
                seen.add(text)
                out.append(text)
    return tuple(out)


def compare_tape(tape, target, hand: dict, rtol=1e-5, atol=1e-8, namespace=None,
                 output_gradients=None) -> Comparison:
    """The work of :meth:`GradientTape.compare` (``namespace``: where string keys are looked up)."""
    if not isinstance(hand, dict) or not hand:
        raise TypeError("compare: pass a dict {name_or_tensor: hand_gradient, ...} with at least one entry, got "
                        f"{type(hand).__name__}.")
    if not isinstance(target, Tensor):
        raise TypeError(f"compare: the target must be a tensor (the loss), got {type(target).__name__}.")
    tape._require_values("tape.compare()")
    require_recorded(tape, target, "tape.compare()")
    if namespace is None:
        frame = user_frame_object()
        namespace = {**frame.f_globals, **frame.f_locals} if frame is not None else {}
    names = _names_on_tape(tape, namespace)
    trace = build_trace(tape, target)
    resolved = [(_resolve(tape, key, names, trace), value) for key, value in hand.items()]

    by_node = {n.id: n for n in trace.nodes}
    ids = set()
    for (label, tensor, node_id), _ in resolved:
        tid = tensor._id if tensor is not None else (by_node[node_id].tensor_id if node_id else None)
        if tid is not None:
            ids.add(tid)
    ids &= tape.record.tracked          # as tape.gradient: an unwatched constant gets no gradient
    seed = seed_of(target, output_gradients)
    grads = {}
    if target.dtype.kind in "fc" and target._id in {rec.out_id for rec in tape.record.nodes} | set(tape.record.tracked):
        with paused(), np.errstate(all="ignore"):
            grads = walks.backward(tape.record.nodes, {target._id: seed}, ids)

    rows = []
    for (label, tensor, node_id), value in resolved:
        tid = tensor._id if tensor is not None else (by_node[node_id].tensor_id if node_id else None)
        g = grads.get(tid) if tid in ids else None
        shape = why = None
        if g is None:
            shape = tensor.shape if tensor is not None else (by_node[node_id].shape if node_id else None)
            if tensor is not None:
                ex = explain(tape, target, tensor)
                why = f"The tape has no gradient for it; tape.explain(target, it) says {ex.reason}: {ex.message}"
        row = compare_arrays(label, node_id, value, None if g is None else np.asarray(g), rtol, atol,
                             _factors(trace, node_id), shape, why)
        rows.append(_lost(row, lost_paths(tape, target._id, tid)))
    return along_backward(rows, trace)


def seed_of(target: Tensor, output_gradients):
    """The upstream gradient of ``target``: ones, or ``output_gradients`` (CS231n's ``dout``).

    With ``dout`` given, every hand gradient is of ``sum(target * dout)``, as
    ``tape.gradient(out, x, output_gradients=dout)``.
    """
    if output_gradients is None:
        return np.ones(target.shape, target.dtype)
    return seed_array(np.asarray(output_gradients._value if isinstance(output_gradients, Tensor) else output_gradients),
                      target.shape, target.dtype)


def seed_array(g: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """``dout`` checked against the target's ``shape`` and cast to its ``dtype`` (the bridges' seed too)."""
    if g.shape != shape:
        raise ValueError(f"compare: output_gradients has shape {g.shape}, but the target has shape {shape}; "
                         "it is the upstream gradient dout, one entry per entry of the target.")
    return g.astype(dtype)


def _lost(row: Row, escapes: list) -> Row:
    """``row`` re-judged when the tape lost a path from its tensor: the hand value cannot be called wrong."""
    if not escapes or row.status not in ("wrong", "no_gradient"):
        return row
    msg = (f"The tape cannot judge yours: it lost the path at {naming.lost_at(escapes[0])}, where a value "
           "computed from it left the tape (numpy took the number, so no gradient flows back through it). Your "
           f"value may well be right. {naming.LOST_FIX}")
    if len(escapes) > 1:
        msg += f" ({len(escapes) - 1} more such line(s): tape.record.escapes lists them.)"
    return replace(row, status="lost", message=msg)


def compare(f: Callable[..., Any], args: Any, hand: dict, argnums: int | Sequence[int] | None = None,
            rtol: float = 1e-5, atol: float = 1e-8) -> Comparison:
    """Run ``f(*args)`` on a tape and compare ``hand`` gradients of its scalar result.

    String keys name variables *inside* ``f`` (its local variables when it
    returned) or arguments; ``argnums`` (default: every floating argument)
    are watched.

        >>> def f(x):
        ...     h = adv.tanh(x)
        ...     return adv.sum(h * h)
        >>> adv.compare(f, [adv.constant([0.5, -1.0])], {"h": 2 * np.tanh([0.5, -1.0])}).ok
        True
    """
    args = [as_tensor(a) if isinstance(a, (Tensor, np.ndarray, float, list)) else a for a in args]
    nums = range(len(args)) if argnums is None else ([argnums] if isinstance(argnums, int) else argnums)
    captured = {}
    code = getattr(f, "__code__", None)

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update(frame.f_locals)

    with GradientTape(persistent=True) as tape:
        for i in nums:
            if isinstance(args[i], Tensor) and args[i].dtype.kind in "fc":
                tape.watch(args[i])
        old = sys.getprofile()
        sys.setprofile(profile)
        try:
            out = f(*args)
        finally:
            sys.setprofile(old)
    if not isinstance(out, Tensor) or out.size != 1:
        raise TypeError(f"compare: {getattr(f, '__name__', 'f')} must return a scalar tensor (the loss), got "
                        f"{out.shape if isinstance(out, Tensor) else type(out).__name__}.")
    return compare_tape(tape, out, hand, rtol, atol, namespace=captured)


def _compare_on_tape(self, target, hand, rtol=1e-5, atol=1e-8, output_gradients=None):
    """Your hand-derived gradients against this tape's: an :class:`~autodiff_viz.Comparison`.

    ``hand`` maps intermediates (tensors, or the names of variables that
    hold them where you call this) to your gradient of ``target`` with
    respect to each. The table follows the backward pass and names the
    first wrong intermediate; ``.show()`` marks it on the graph. Does not
    use up a non-persistent tape. ``output_gradients=dout``: the hand
    gradients are of ``sum(target * dout)`` (a layer's backward given the
    upstream gradient), as in ``tape.gradient``.
    """
    self._require_values("tape.compare()")
    return compare_tape(self, target, hand, rtol, atol, output_gradients=output_gradients)


GradientTape.compare = _compare_on_tape   # tape.compare(...): this module sits above the tape
