"""Where did the NaN come from? ``detect_anomaly`` stops at the first non-finite value.

    >>> import autodiff_viz as adv
    >>> x = adv.Variable([1.0, 0.0])
    >>> with adv.detect_anomaly():
    ...     with adv.GradientTape() as tape:
    ...         y = adv.sum(adv.log(x))        # AnomalyError: 'log' produced -inf here

Inside the block every op's forward output is checked, and every backward
step's gradient contributions, and the first one that holds ``nan`` or
``inf`` raises :class:`AnomalyError` naming the op, its rule, a summary of
its inputs and the line of user code that made it (like PyTorch's
``torch.autograd.detect_anomaly``), and — unlike it — the *kind* of the
failure and its fix (``.kind``: ``sqrt_at_zero``, ``log_of_zero``,
``exp_overflow``, ``division_by_zero``, ``acos_at_one`` …, the kinds
``explain`` names: :mod:`autodiff_viz.diagnosis.kinds`). numpy's own "divide by zero" warnings are
silenced inside the block: the error says it better.

The block is per thread (like tapes): it checks the ops run in the thread
that entered it; other threads run unchecked.

Outside the block nothing is checked: the engine tests one global count of
threads inside a block per op, then this thread's ``state.anomaly``,
and calls the detector only when a block has set it.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import numpy as np

from ..base.state import resolve_location, state, user_location
from ..core import engine, walks
from ..core.tensor import Tensor
from ..diagnosis.kinds import classify_nan, fix_of
from ..diagnosis.walk import _code, _where
from .traces.model import Summary, Trace, TraceEdge, TraceNode

if TYPE_CHECKING:
    from typing import Iterator


class AnomalyError(FloatingPointError):
    """An op (forward) or a backward step produced ``nan`` or ``inf``.

    Attributes: ``phase`` ("forward" or "backward"), ``op`` (rule name),
    ``location`` ("file:line" or None), ``node_id`` (the output's tensor id),
    ``input_index`` (backward: the input whose gradient went non-finite),
    ``kind`` (what went wrong, as ``explain`` names it, or None when the inputs were already non-finite).
    """

    def __init__(self, message, phase, op, location, node_id, input_index=None, kind=None):
        super().__init__(message)
        self.phase, self.op, self.location = phase, op, location
        self.node_id, self.input_index, self.kind = node_id, input_index, kind


_HINTS = {
    "log": "log(0) is −inf and log of a negative number is nan: keep the input positive, e.g. "
           "adv.log(adv.clip(x, 1e-7, None)), or use adv.nn.log_softmax / from_logits=True losses.",
    "divide": "a division by zero (or 0/0): add a small epsilon to the denominator, or mask those entries.",
    "sqrt": "√x is nan for x < 0 and its slope 1/(2√x) is infinite at x = 0: use adv.sqrt(x + 1e-12) "
            "or square the quantity instead.",
    "exp": "exp overflows for inputs above ~709 (float64) or ~88 (float32): use adv.nn.logsumexp, "
           "adv.nn.log_softmax or adv.nn.softplus, which never overflow.",
    "power": "a negative base to a fractional power is nan, and 0 to a negative power is inf.",
    "multiply": "inf · 0 is nan: one factor is already infinite.",
    "matmul": "a product overflowed, or an operand already holds inf.",
}


def _finite(a) -> bool:
    a = a._value if isinstance(a, Tensor) else np.asarray(a)
    return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())


def _summary(name: str, a) -> str:
    """``x: shape (3,) float64, values [0. 1. 2.]`` or min/max and counts of nan/inf for big arrays."""
    a = a._value if isinstance(a, Tensor) else np.asarray(a)
    head = f"{name}: shape {a.shape} {a.dtype}"
    if a.dtype.kind not in "fc":
        return head
    if a.size <= 8:
        return f"{head}, values {np.array2string(a, precision=4, separator=', ')}"
    finite = a[np.isfinite(a)]
    rng = f", min {finite.min():.4g}, max {finite.max():.4g}" if finite.size else ""
    bad = f", {int(np.isnan(a).sum())} nan, {int(np.isinf(a).sum())} inf"
    return f"{head}{rng}{bad}"


def _bad_entries(a) -> str:
    a = a._value if isinstance(a, Tensor) else np.asarray(a)
    parts = [f"{n} {what}" for what, n in (("nan", int(np.isnan(a).sum())),
                                           ("+inf", int(np.isposinf(a).sum())),
                                           ("−inf", int(np.isneginf(a).sum()))) if n]
    return f"{', '.join(parts)} of {a.size} entr{'y' if a.size == 1 else 'ies'}"


def _kind(rule, inputs, y, i=0, g=None, gi=None):
    """``(kind, why)`` of a non-finite output (``g`` None) or contribution, from the same classifier as ``explain``.

    The op and its inputs become a three-node trace (inputs → op), so the one rule set of
    :mod:`autodiff_viz.diagnosis.kinds` judges both; None when that classifier has no better name.
    """
    values = [t._value if isinstance(t, Tensor) else np.asarray(t) for t in inputs]
    limit = max([a.size for a in values] + [np.asarray(y).size, 1])
    nodes = [TraceNode(f"n{k}", "constant", "constant", None, k, None, "", Summary.of(a, limit))
             for k, a in enumerate(values)]
    op = TraceNode(f"n{len(values)}", "op", rule.name, None, len(values), 0, "", Summary.of(np.asarray(y), limit))
    edges = [TraceEdge(f"e{k}", f"n{k}", op.id, k, f"x{k}", None, True) for k in range(len(values))]
    if g is not None:
        edges[i].upstream, edges[i].contribution = Summary.of(g, limit), Summary.of(gi, limit)
    trace = Trace(nodes + [op], edges, target=op.id)
    kind, why, _ = classify_nan(trace, edges[i], forward=g is None)
    return (None, None) if kind == "nonfinite_derivative" else (kind, why)


def _kind_text(kind, why, hint) -> str:
    """``Kind: …`` (when known), then the op's hint, else the kind's fix: the last line stays the advice."""
    text = f"\nKind: {kind}. {why}" if kind else ""
    advice = hint or (fix_of(kind) if kind else None)
    return text + (f"\n{'Hint' if hint else 'Fix'}: {advice}" if advice else "")


def _input_names(rule, n: int) -> list:
    return [f"x{i}" for i in range(n)] if rule.variadic else [s.name for s in rule.inputs]


class _Detector:
    """Set as ``state.anomaly`` while a ``detect_anomaly`` block runs; the engine calls it."""

    def __init__(self, forward: bool, backward: bool):
        self.check_forward, self.check_backward = forward, backward

    # ----- forward ------------------------------------------------------------
    def forward(self, rule, inputs, y):
        if self.check_forward and not _finite(y):
            self._forward_anomaly(rule, inputs, y)

    def _forward_anomaly(self, rule, inputs, y):
        loc = resolve_location(state.location) or user_location()
        bad_in = [t for t in inputs if not _finite(t)]
        origin = ("Its inputs already held non-finite values: the problem is upstream (a constant or "
                  "variable that is already nan/inf)." if bad_in else "Its inputs are all finite, so this "
                  "op is where the non-finite value appears.")
        lines = "\n".join(f"    {_summary(t.name or n, t)}" for n, t in zip(_input_names(rule, len(inputs)), inputs))
        hint = _HINTS.get(rule.name)
        kind, why = (None, None) if bad_in else _kind(rule, inputs, y._value)
        raise AnomalyError(
            f"forward: '{rule.name}' ({rule.doc or rule.name}) produced {_bad_entries(y)}"
            f"{' at ' + _where(loc) if loc else ''}.{_code(loc)}\n{origin}\nInputs:\n{lines}"
            + _kind_text(kind, why, None if bad_in else hint),
            "forward", rule.name, _where(loc), y._id, kind=kind)

    # ----- backward -----------------------------------------------------------
    def backward(self, nodes, seeds, sources, on_step=None):
        for k, s in seeds.items():
            if self.check_backward and not _finite(s):
                raise AnomalyError(f"backward: the seed (output_gradients) for tensor #{k} holds "
                                   f"{_bad_entries(s)}.", "backward", None, None, k)

        def check(node, g, contributions):
            if on_step is not None:
                on_step(node, g, contributions)
            if not self.check_backward:
                return
            for i, gi in contributions:
                if not _finite(gi):
                    self._backward_anomaly(node, g, i, gi)

        state.anomaly = None   # the walk's own ops are checked through `check`, step by step
        try:
            return walks.backward(nodes, seeds, sources, check)
        finally:
            state.anomaly = self

    def _backward_anomaly(self, node, g, i, gi):
        rule = node.rule
        spec = rule.spec(i)
        names = _input_names(rule, len(node.inputs))
        name = names[i]
        loc = node.location
        upstream = ("The upstream gradient was already non-finite." if not _finite(g) else
                    "The upstream gradient is finite, so this op's local derivative is where it breaks.")
        lines = "\n".join(f"    {_summary(t.name or n, t)}" for n, t in zip(names, node.inputs))
        hint = _HINTS.get(rule.name)
        kind, why = _kind(rule, node.inputs, node.out, i, g, gi) if _finite(g) else (None, None)
        raise AnomalyError(
            f"backward: the gradient of '{rule.name}' with respect to its input '{name}' "
            f"(∂y/∂{name} = {spec.factor}) holds {_bad_entries(gi)}"
            f"{' for the op at ' + _where(loc) if loc else ''}.{_code(loc)}\n{upstream}\n"
            f"Inputs of the op:\n{lines}\n    {_summary('output y', node.out)}\n    {_summary('upstream ḡ', g)}"
            + _kind_text(kind, why, hint),
            "backward", rule.name, _where(loc), node.out_id, i, kind=kind)


@contextlib.contextmanager
def detect_anomaly(forward: bool = True, backward: bool = True) -> Iterator[None]:
    """Raise :class:`AnomalyError` at the first op or backward step that makes ``nan``/``inf``.

        >>> with adv.detect_anomaly():
        ...     with adv.GradientTape() as tape:
        ...         y = adv.sqrt(x * x)            # finite forward ...
        ...     tape.gradient(y, x)                # ... but 1/(2√x) is inf at x = 0: raised here

    Args:
        forward: check every op's output while the block runs.
        backward: check every gradient contribution of every backward step
            (``tape.gradient``, ``jacobian``, ``adv.grad`` ...).
    """
    outer = state.anomaly
    state.anomaly = _Detector(forward, backward)
    engine._count_anomaly_thread(1)
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            yield state.anomaly
    finally:
        state.anomaly = outer
        engine._count_anomaly_thread(-1)
