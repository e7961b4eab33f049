"""Why is a connected gradient zero, vanishing or NaN: one analysis of the backward pass, on the :class:`Trace`.

``explain`` (:mod:`autodiff_viz.diagnosis.walk`) answers a ``None`` gradient.
A gradient that is *connected* can still be useless: all zeros, a few orders
of magnitude too small, or ``nan``. The trace already holds, for every edge
``x → y = f(x, …)`` of the backward pass, the upstream gradient ``ḡ_y`` and
the contribution ``ḡ_x = ḡ_y · ∂y/∂x``. So the question "where did it go
wrong" is a walk over those edges from the target back to the source:

* **zero**: the first edge where ``‖ḡ_y‖ > 0`` but ``ḡ_x = 0`` (the gradient
  *dies* there: the chain rule multiplied by a local derivative that is 0);
* **vanishing**: an elementwise edge whose local factor ``ḡ_x / ḡ_y`` is below
  :data:`TINY` everywhere, else the per-layer ``‖ḡ‖`` and the layers where it
  falls by more than :data:`DROP`;
* **NaN/inf**: the first edge whose contribution is not finite while ``ḡ_y``
  and the op's forward inputs are (the local derivative is infinite, or
  ``0 · ∞``); when the forward pass itself went non-finite, the first op
  whose output did while its inputs did not;
* **partly zero**: which entries, and why (rows of an embedding never looked
  up are expected, and said to be).

The kind of each failure comes from the op (:mod:`autodiff_viz.diagnosis.kinds`)
and the recorded values, never from the framework: the engine's trace
(``tape.trace``), PyTorch's (``rec.trace`` under ``adv.torch.record()``) and
TensorFlow's (``adv.tf.record()``) are the same data, so one analysis serves
all three.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from ..core.engine import broadcasts_to, unbroadcast
from .explanation import Explanation
from .kinds import DEAD_MARK, classify_nan, classify_shrink, classify_zero, describe, fix_of, layer_keys, op_kind

TINY = 1e-6          # an edge dies when its local factor |ḡ_x / ḡ_y| is below this on every entry
VANISH = 1e-4        # a gradient vanishes when its ‖ḡ‖ is below this fraction of the largest ‖ḡ‖ on its path
SHARE = 0.4          # ... and one op is named as the cause when it makes this share of the fall (log scale)
DROP = 10.0          # per layer: a fall of ‖ḡ‖ by more than this factor is reported
PARTLY = 0.5         # a partly zero gradient is reported when at least this fraction of its entries is 0
CANCEL = 1e-6        # a bias's ḡ cancels when |Σ ḡ_y| is below this fraction of Σ |ḡ_y|
FULL_VALUES = 1 << 22    # entries an array keeps in full in the trace this analysis builds

_MASKED = ("unselected_where_branch", "zero_times_inf")     # 0 · ∞: the non-finite input is masked anyway
REASONS = ("zero_gradient", "partly_zero_gradient", "vanishing_gradient", "nan_gradient")


# ---------------------------------------------------------------------------
# Entry points: a trace, an engine tape, a bridge's recording
# ---------------------------------------------------------------------------
def diagnose(trace, source, names=None) -> Explanation | None:
    """What is wrong with the gradient of ``trace.target`` with respect to ``source``, or None when nothing is.

    Args:
        trace: a :class:`~autodiff_viz.Trace` with its target (built with the
            values in full: ``value_limit`` at least the largest array, else
            only the summary statistics are read and the answer says less).
        source: the source's node id (``"n3"``), tensor id or tensor.
        names: ``(target, source)`` as the caller's messages call them (the engine's ``'loss' (the output of
            sum on line 8; shape (), float64)``); by default the trace's names.

    Returns:
        an :class:`Explanation` with reason ``zero_gradient``,
        ``partly_zero_gradient``, ``vanishing_gradient`` or ``nan_gradient``
        (``.kind`` names the cause, ``.location`` the user's line, ``.edges``
        the edge where the gradient dies or stops being finite), a
        ``connected`` one with ``kind="unused_rows"`` for the expected zero
        rows of an embedding, or None for a healthy gradient.
    """
    sid = source if isinstance(source, str) else trace.node_id_of(source)
    if sid is None or trace.target is None:
        return None
    src = trace.node(sid)
    g = src.grad
    if g is None or g.size == 0:
        return None
    walk = _Walk(trace, sid, names)
    if not _finite(g):
        return walk.nan()
    if g.stats["norm"] == 0:
        return walk.zero()
    data = _data(g)
    if data is not None and (data == 0).any():
        partly = walk.partly_zero(data)
        if partly is not None:
            return partly
    return walk.vanishing()


def explain_tape(tape, target, source, names=None) -> Explanation | None:
    """:func:`diagnose` for an engine tape: builds (once per tape, target and record length) the trace.

    None (nothing to add to ``connected``) when a non-persistent tape let go of its values at ``gradient()``:
    the values this analysis reads are gone, and ``explain`` keeps working on the light records.
    """
    try:
        tape._require_values("explain")
    except RuntimeError:
        return None
    trace = _trace_of(tape, target, lambda: _build(tape, target))
    return diagnose(trace, trace.node_id_of(source), names) if trace is not None else None


def explain_recording(rec, target, source) -> Explanation | None:
    """:func:`diagnose` for a bridge's recording (``adv.torch.record()``, ``adv.tf.record()``), without re-running
    the user's code: the recording's own ``trace`` supplies the framework's gradients and contributions."""
    try:
        trace = rec.trace(target, [source], value_limit=FULL_VALUES)
    except (RuntimeError, ValueError, TypeError):       # the graph was freed, or the target is not traceable
        return None
    return diagnose(trace, trace.sources[0]) if len(trace.sources) == 1 else None


_LAST: list = []        # [(weakref to the tape, target id, record length, trace)]: explain on many sources


def _trace_of(tape, target, build):
    key = (getattr(target, "_id", None), len(tape.record.nodes))
    if _LAST and _LAST[0][0]() is tape and _LAST[0][1] == key:
        return _LAST[0][2]
    trace = build()
    try:
        _LAST[:] = [(weakref.ref(tape), key, trace)]
    except TypeError:
        pass
    return trace


def _build(tape, target):
    from ..records.traces.build import build_trace
    return build_trace(tape, target, None, value_limit=FULL_VALUES)


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------
def _data(s):
    """The summary's array as float64, or None when the trace kept statistics only."""
    if s is None or s.data is None:
        return None
    return np.asarray(s.data, dtype=np.float64) if s.data.dtype.kind in "fiub" else None


def _finite(s) -> bool:
    st = s.stats
    return all(math.isfinite(st[k]) for k in ("min", "max", "norm")) or (s.size == 0)


def _rms(s) -> float:
    return s.stats["norm"] / math.sqrt(max(s.size, 1))


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else ("es" if what.endswith("x") else "s"))


class _Walk:
    """The backward pass between ``trace.target`` and one source, edge by edge in the order it ran."""

    def __init__(self, trace, sid, names=None):
        self.trace, self.sid, self.names = trace, sid, names
        on = set(trace.path(sid))
        pos = {nid: k for k, nid in enumerate(trace.steps)}
        self.edges = sorted((e for e in trace.edges if e.id in on and e.src in on and e.dst in on),
                            key=lambda e: (pos.get(e.dst, len(pos)), e.input_index))
        self.on = on
        self.source = trace.node(sid)

    # ----- the shared parts of an answer -------------------------------------------
    def _head(self, what: str) -> str:
        if self.names:
            return f"The gradient of {self.names[0]} with respect to {self.names[1]} {what}"
        tgt = self.trace.node(self.trace.target)
        return f"The gradient of {tgt.describe()} with respect to {self.source.describe()} {what}"

    def _answer(self, reason, kind, edge, text, extra="", mark=None, details=None) -> Explanation:
        dst = self.trace.node(edge.dst) if edge is not None else None
        src = self.trace.node(edge.src) if edge is not None else None
        loc = dst.location if dst is not None else None
        where = ""
        if dst is not None:
            named = f" ({dst.describe()})" if dst.label or dst.name else ""
            verb = {"nan_gradient": "becomes non-finite", "vanishing_gradient": "shrinks"}.get(reason, "dies")
            where = f"\nIt {verb} at {dst.op}" \
                    f"{named}{_line(loc)}"
        fix = fix_of(kind)
        message = f"{text}{where}\n{extra}".rstrip() + (f"\nFix: {fix}" if fix else "")
        info = dict(details or {})
        if mark:
            info["mark"] = mark
        nodes = tuple(n.tensor_id for n in (self.source, src, dst) if n is not None)
        edges = ((src.tensor_id, dst.tensor_id),) if edge is not None else ()
        return Explanation(reason, message, _place(loc), nodes, edges, dst.op if dst is not None else None,
                           ((loc.file, loc.line),) if loc is not None else (), kind=kind, details=info)

    # ----- zero -------------------------------------------------------------------
    def zero(self) -> Explanation:
        seed = self._seed_zero()
        if seed is not None:
            return seed
        dying = self._local([e for e in self.edges if e.upstream is not None and e.contribution is not None
                             and e.upstream.stats["norm"] > 0 and e.contribution.stats["norm"] == 0
                             or self._zero_op(e)])
        head = self._head("is zero on every entry, although the path between them is connected.")
        if not dying:
            return self._answer("zero_gradient", "unknown", None, head, "The recorded edges do not show where it "
                                "dies (their contributions were not kept); build the trace with the values in full.")
        for e in dying:
            kind, why, mark = classify_zero(self.trace, e)
            if kind != "zero_operand" or e is dying[-1] or not (self._zero_from_source(e) or self._selector(e)):
                break
        more = "" if len(dying) == 1 else \
            f"\n(It dies on {len(dying)} edges in all; this is the first the backward pass reaches.)"
        out = self._answer("zero_gradient", kind, e, head, why + more, mark,
                           {"dying_edges": [d.id for d in dying], "edge": e.id})
        return out

    def _zero_from_source(self, e) -> bool:
        """Whether the zero factor of the product at ``e`` is itself computed from the source (``r * r`` with r
        all 0 after a dead branch): then it only passes on a death further down, which a later edge names."""
        return any(i.src in self.on and i.id != e.id and self.trace.node(i.src).kind == "op"
                   for i in self.trace.edges_into(e.dst))

    def _selector(self, e) -> bool:
        """Whether the zero factor of the product at ``e`` is made from data alone (labels, masks, constants; no
        trainable or watched value above it): ``(1 − y) · log(1 − p)`` with y = 1 switches a term off by design,
        as an unselected ``where`` branch does, so a death elsewhere (the clip in the term y selects) is the
        cause to name first."""
        others = [i.src for i in self.trace.edges_into(e.dst) if i.id != e.id]
        seen, todo = set(others), list(others)
        while todo:
            n = self.trace.node(todo.pop())
            if n.kind in ("variable", "watched"):
                return False
            for i in self.trace.edges_into(n.id):
                if i.src not in seen:
                    seen.add(i.src)
                    todo.append(i.src)
        return bool(others)

    def _zero_op(self, e) -> bool:
        """An op the recorder marks gradient-free on every input (TensorFlow's ``Sign``) whose output still gets
        a non-zero ḡ: the framework sent 0 through it. Not a ``where``'s condition: the branches carry ḡ."""
        if e.differentiable:
            return False
        dst = self.trace.node(e.dst)
        return dst.grad is not None and dst.grad.stats["norm"] > 0 and \
            not any(i.differentiable for i in self.trace.edges_into(e.dst))

    def _seed_zero(self):
        """An all-zero upstream gradient at the target (``output_gradients`` of zeros): nothing flows from the start."""
        into = [e for e in self.edges if e.dst == self.trace.target and e.upstream is not None]
        if into and all(e.upstream.stats["norm"] == 0 for e in into):
            return self._answer("zero_gradient", "zero_upstream", None, self._head("is zero on every entry."),
                                "The gradient that starts the backward pass at the target (its seed, "
                                "output_gradients / the upstream gradient) is all zeros, so every gradient "
                                "below it is zero too.", details={"edge": into[0].id})
        return None

    def _local(self, edges) -> list:
        """``edges`` with those whose contribution may hold more than their own factor put last.

        A bridge computes an edge ``x → y``'s contribution as autograd's ``∂y/∂x`` through *every*
        path from x to y (``where(x < 1, x, sqrt(x))``: the edge from x straight into the where also
        carries sqrt's ∞). Such an edge — x also reaches y through another input of y — is not where
        the gradient went wrong when an edge on that other path is also in the list.
        """
        def shared(e):
            others = {i.src for i in self.trace.edges_into(e.dst) if i.id != e.id and i.src in self.on}
            if not others:
                return False
            seen, frontier = {e.src}, [e.src]
            while frontier:
                for out in self.trace.edges_from(frontier.pop()):
                    if out.dst in others:
                        return True
                    if out.dst in self.on and out.dst not in seen and out.dst != e.dst:
                        seen.add(out.dst)
                        frontier.append(out.dst)
            return False
        flagged = {e.id for e in edges if shared(e)}
        return [e for e in edges if e.id not in flagged] + [e for e in edges if e.id in flagged]

    # ----- partly zero --------------------------------------------------------------
    def partly_zero(self, g) -> Explanation | None:
        n, z = g.size, int((g == 0).sum())
        lookups = [e for e in self.edges if e.src == self.sid and op_kind(self.trace.node(e.dst).op) == "take"]
        if lookups and g.ndim >= 2:
            look = self.trace.node(lookups[0].dst)
            rows = np.flatnonzero(~g.reshape(g.shape[0], -1).any(axis=1))
            if rows.size:
                shown = ", ".join(str(int(r)) for r in rows[:12]) + (" …" if rows.size > 12 else "")
                return Explanation(
                    "connected",
                    f"{self._head('flows')}: it is zero on {_count(int(rows.size), 'row')} of {g.shape[0]} "
                    f"(rows {shown}). Those rows are never looked up in this batch ({look.op}{_line(look.location)}), "
                    "so their gradient is 0 — expected for "
                    "an embedding: a row learns only from the batches that use its id.",
                    nodes=(self.source.tensor_id,), kind="unused_rows",
                    details={"zero_rows": rows.tolist()})
        if z < PARTLY * n:
            return None
        for e in self.edges:
            u, c = _data(e.upstream), _data(e.contribution)
            if u is None or c is None:
                continue
            if u.shape == c.shape:
                mask = (u != 0) & (c == 0)
            elif u.all() and c.size == g.size and np.array_equal(c.reshape(g.shape) == 0, g == 0):
                # a pooling or reduction of the source (or of a reshape of it): every output carries ḡ, and
                # exactly the source's zero entries got none
                mask = c == 0
            else:
                continue
            if mask.any():
                kind, why, mark = classify_zero(self.trace, e, mask)
                head = self._head(f"is zero on {z} of {n} entries ({100 * z / n:.0f}%).")
                return self._answer("partly_zero_gradient", kind, e, head, why, mark,
                                    {"zero_entries": z, "entries": n, "edge": e.id})
        return None

    # ----- vanishing ------------------------------------------------------------------
    def vanishing(self) -> Explanation | None:
        shifted = self.cancelled_shift()
        if shifted is not None:
            return shifted
        for e in self.edges:
            ratio = _factor_rms(e)
            if ratio is not None and 0 < ratio < TINY:
                kind, why, mark = classify_zero(self.trace, e, tiny=True)
                head = self._head(f"is tiny (rms {_rms(self.source.grad):.3g}): it vanishes on one edge, where the "
                                  f"local factor is below {TINY:g}.")
                return self._answer("vanishing_gradient", kind, e, head, why, mark, {"edge": e.id})
        layers, firsts = self.layer_norms()
        top = max((v for _, v in layers), default=0.0)
        g = self.source.grad.stats["norm"]
        if top <= 0 or g >= VANISH * top:
            return None
        head = self._head(f"vanishes: its ‖ḡ‖ {g:.3g} is {top / g:.3g}× smaller than the largest on the path "
                          f"({top:.3g}).")
        falls = self.sharpest_falls()
        listed = "\n".join(f"    {self.trace.node(e.dst).op:<28} ×{r:<8.3g} {_where(self.trace.node(e.dst))}"
                           for e, r in falls[:3])
        sharpest = f"The sharpest falls on the way back (‖ḡ‖ into the op's input ÷ at its output):\n{listed}"
        if falls and math.log(1 / falls[0][1]) >= SHARE * math.log(top / g):
            e, r = falls[0]
            kind, why, mark = classify_shrink(self.trace, e, r)
            share = math.log(1 / r) / math.log(top / g)
            return self._answer("vanishing_gradient", kind, e, head,
                                f"{why}\nThat one op makes {100 * share:.0f}% of the whole fall (on a log scale).\n"
                                f"{sharpest}", mark, {"edge": e.id, "falls": [(f.id, q) for f, q in falls[:3]]})
        drops = [(a, b, va / vb) for (a, va), (b, vb) in zip(layers, layers[1:]) if vb > 0 and va / vb > DROP]
        at = firsts.get(drops[0][1] if drops else layers[-1][0])
        edge = next((e for e in self.edges if e.dst == at), None)
        table = "\n".join(f"    {k:<28} ‖ḡ‖ {v:.3g}" for k, v in layers)
        spread = "; ".join(f"{b} ({r:.3g}× smaller than {a})" for a, b, r in drops) or "no single layer: it " \
            "shrinks a little in each"
        extra = (f"No single op makes most of the fall: it builds up along the path.\n{sharpest}\n"
                 f"Per layer, from the loss back (‖ḡ‖ at each layer's output):\n{table}\n"
                 f"It falls by more than {DROP:g}× at: {spread}.")
        return self._answer("vanishing_gradient", "vanishing_depth", edge, head, extra,
                            details={"layers": layers, "drops": drops})

    def route(self) -> list:
        """The nodes from the source to the target along the way most of the gradient comes back: at each step,
        the reader on the path whose ‖ḡ‖ is largest (a residual's skip rather than its small branch)."""
        nid, out = self.sid, [self.sid]
        while nid != self.trace.target:
            nxt = [e.dst for e in self.trace.edges_from(nid)
                   if e.dst in self.on and self.trace.node(e.dst).grad is not None]
            if not nxt:
                break
            nid = max(nxt, key=lambda d: self.trace.node(d).grad.stats["norm"])
            out.append(nid)
        return out

    def sharpest_falls(self) -> list:
        """``[(edge, ‖ḡ_x‖ / ‖ḡ_y‖)]`` along :meth:`route`, the steps where ‖ḡ‖ falls, sharpest first."""
        route = self.route()
        out = []
        for a, b in zip(route, route[1:]):
            ga, gb = self.trace.node(a).grad.stats["norm"], self.trace.node(b).grad.stats["norm"]
            e = next((e for e in self.trace.edges_from(a) if e.dst == b), None)
            if e is not None and gb > 0 and ga < gb:
                out.append((e, ga / gb))
        return sorted(out, key=lambda er: er[1])

    def cancelled_shift(self) -> Explanation | None:
        """The source is added (a bias) and what follows ignores a constant shift, so its gradient cancels.

        A term added across rows gets ``ḡ_b = Σ_rows ḡ_y``. When those rows cancel — ``|Σ ḡ_y|`` tiny against
        ``Σ |ḡ_y|`` — no factor is small: the addition itself cannot change the loss. A softmax over the axis the
        term is constant along (the key bias of attention) and a mean subtraction (a bias before batch or layer
        normalisation) do exactly that.
        """
        for e in self.edges:
            if e.src != self.sid:
                continue
            u, c = _data(e.upstream), _data(e.contribution)
            if u is None or c is None or c.size >= u.size or not np.isfinite(u).all():
                continue
            if not broadcasts_to(c.shape, u.shape):
                continue
            summed, spread = unbroadcast(u, c.shape, u.ndim), unbroadcast(np.abs(u), c.shape, u.ndim)
            if not spread.any() or not np.allclose(summed, c, rtol=1e-5, atol=1e-6 * float(spread.max())):
                continue
            if np.linalg.norm(c) >= CANCEL * np.linalg.norm(spread):
                continue
            rows = u.size // max(c.size, 1)
            dst = self.trace.node(e.dst)
            head = self._head(f"is tiny (rms {_rms(self.source.grad):.3g}), and no factor on its path is: it is "
                              f"the sum of ḡ_y over the {rows} rows it was added to, and those cancel (|Σ ḡ_y| is "
                              f"{np.linalg.norm(c) / np.linalg.norm(spread):.1e} of Σ |ḡ_y|).")
            why = (f"What follows {dst.op} ignores a constant shift along those rows — a softmax over the axis "
                   "the term is constant along (the key bias of attention: every score of a row moves by the "
                   "same q·b), or a normalisation that subtracts the mean (a bias right before BatchNormalization "
                   "or LayerNorm) — so this term cannot change the loss, and 0 is its true gradient, up to "
                   "rounding.")
            return self._answer("vanishing_gradient", "cancelled_shift", e, head, why,
                                f"{DEAD_MARK}Σ ḡ_y cancels", {"edge": e.id})
        return None

    def layer_norms(self) -> tuple:
        """``([(layer, ‖ḡ‖)], {layer: its first node id})`` along the path from the target back: a layer's
        ḡ is the largest of its nodes', and a layer met again (a loop) is a new row."""
        nodes = [self.trace.node(nid) for nid in self.trace.steps if nid in self.on]
        keys = layer_keys(self.trace, nodes)
        out: list = []
        firsts: dict = {}
        for n in nodes:
            if n.grad is None or not _finite(n.grad):
                continue
            k, v = keys[n.id], n.grad.stats["norm"]
            if out and out[-1][0] == k:
                out[-1] = (k, max(out[-1][1], v))
            else:
                out.append((k, v))
                firsts.setdefault(k, n.id)
        return out, firsts

    # ----- NaN ------------------------------------------------------------------------------
    def nan(self) -> Explanation:
        head = self._head("holds nan or inf.")
        tgt = self.trace.node(self.trace.target)
        forward = self._forward_origin()
        if forward is not None and not _finite(tgt.value):
            return forward
        bad = [e for e in self.edges if e.upstream is not None and e.contribution is not None
               and not _finite(e.contribution) and _finite(e.upstream)]
        for e in self._local(bad):
            kind, why, mark = classify_nan(self.trace, e)
            ins = [self.trace.node(i.src) for i in self.trace.edges_into(e.dst)]
            if not all(_finite(n.value) for n in ins) and kind not in _MASKED:
                return forward or self._answer("nan_gradient", "nonfinite_forward", e, head,
                                               "An input of this op already holds nan/inf in the forward pass.")
            return self._answer("nan_gradient", kind, e, head, why, mark, {"edge": e.id})
        if forward is not None:
            return forward
        return self._answer("nan_gradient", "unknown", None, head, "No recorded edge shows where it became "
                            "non-finite (its contributions were not kept).")

    def _forward_origin(self) -> Explanation | None:
        """The first op, in forward order, whose output is not finite while every input of it is; else the first
        whose output holds nan while no input does (an input may hold −inf on purpose: an attention mask)."""
        ops = [n for n in self.trace.nodes if n.kind == "op" and n.id in self.on]
        return self._origin(ops, _finite) or self._origin(ops, _no_nan)

    def _origin(self, ops, ok) -> Explanation | None:
        for n in ops:
            if ok(n.value):
                continue
            ins = self.trace.edges_into(n.id)
            if all(ok(self.trace.node(e.src).value) for e in ins):
                e = next((e for e in ins if e.differentiable), ins[0] if ins else None)
                if e is None:
                    return None
                kind, why, mark = classify_nan(self.trace, e, forward=True)
                head = self._head("holds nan or inf, because the forward pass already does.")
                first = "is not finite while its inputs are" if ok is _finite else \
                    "holds nan while none of its inputs does (one holds ±inf)"
                return self._answer("nan_gradient", kind, e, head,
                                    f"{n.op} is the first op whose output {first}: "
                                    f"{describe(n.value)}.\n{why}", mark, {"edge": e.id, "phase": "forward"})
        return None


def _no_nan(s) -> bool:
    """No nan in the summarised value (±inf allowed)."""
    return s is None or s.size == 0 or not any(math.isnan(s.stats[k]) for k in ("min", "max", "norm"))


def _factor_rms(e) -> float | None:
    """rms of the local factor ``ḡ_x / ḡ_y`` on an elementwise edge (same shapes), where ``ḡ_y ≠ 0``; else None."""
    u, c = _data(e.upstream), _data(e.contribution)
    if u is None or c is None or u.shape != c.shape or not np.isfinite(c).all():
        return None
    live = u != 0
    if not live.any():
        return None
    f = c[live] / u[live]
    return float(np.sqrt(np.mean(f * f)))


def _line(loc) -> str:
    if loc is None:
        return ""
    code = f":  {loc.code}" if loc.code else ""
    return f"\n    {loc}{code}"


def _where(node) -> str:
    """Where an op ran, in a few words: its module or layer (the last part of its scope), else its line."""
    if node.scope:
        return f"in {node.scope.rsplit('/', 1)[-1]}"
    return f"at {node.location}" if node.location is not None else ""


def _place(loc) -> str | None:
    return None if loc is None else f"{loc.file}:{loc.line}"


__all__ = ["diagnose", "explain_tape", "explain_recording", "REASONS", "TINY", "VANISH", "DROP", "DEAD_MARK"]
