"""Gradient checking: autodiff against central finite differences, in float64.

    >>> import autodiff_viz as adv
    >>> report = adv.check_grads(lambda x: adv.tanh(x) * x, [np.array([0.3, -1.2])])
    >>> report.ok
    True
    >>> print(report)          # one row per argument and mode, with the worst errors

For each argument the whole Jacobian is computed three ways: by central
differences ``(f(x + εeᵢ) − f(x − εeᵢ)) / 2ε``, by reverse mode (VJPs), and
by forward mode (JVPs). A row fails when some entry differs by more than
``atol + rtol·|numeric|``.

The call is JAX's ``jax.test_util.check_grads(f, args, order, modes, atol, rtol, eps)``:
``adv.check_grads(f, (x, y), 2, modes=("fwd", "rev"))`` also checks the derivatives of the VJPs
and JVPs (second derivatives); ``argnums=`` (by name) picks the arguments.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from ..base import naming
from ..core.tensor import Tensor
from ..diagnosis.escapes import lost_paths
from .tape import GradientTape
from .transforms import jacobian, jvp, vjp

if TYPE_CHECKING:
    from typing import Any, Callable, Sequence


class GradientCheckError(AssertionError):
    """Raised by ``check_grads(..., raise_on_error=True)``; its text is the report table."""


@dataclass
class GradCheckRow:
    argnum: int
    mode: str                 # "reverse" or "forward"
    max_abs_error: float
    max_rel_error: float
    ok: bool
    note: str = ""
    of: str = "f"             # the function checked: f, or a derivative of it (check_grads order > 1)


@dataclass
class EdgeCheckRow:
    """One edge ``input → op`` checked alone: the rule's VJP/JVP against finite differences of that op.

    ``input_id`` and ``node_id`` are the tensor ids of the edge's ends (what
    ``Trace.with_marks`` takes), ``location`` the user line that made the op.
    """

    node_id: int
    input_id: int
    op: str
    input_index: int
    input_name: str
    factor: str | None
    mode: str
    max_abs_error: float
    max_rel_error: float
    ok: bool
    location: str | None = None
    note: str = ""


@dataclass
class GradCheckReport:
    """The outcome of :func:`check_grads`: one row per (argument, mode); ``.ok`` if all pass.

    With ``per_edge=True`` it also holds ``edges``: one :class:`EdgeCheckRow`
    per recorded op input and mode, so a wrong rule is named, not just found.
    """

    rows: list = field(default_factory=list)
    eps: float = 1e-6
    rtol: float = 1e-5
    atol: float = 1e-7
    edges: list = field(default_factory=list)
    _record: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows) and all(e.ok for e in self.edges)

    def failing_edges(self) -> list:
        """The edge rows whose rule disagrees with finite differences."""
        return [e for e in self.edges if not e.ok]

    def marks(self) -> dict:
        """``{(input_id, op_output_id): reason}`` for each failing edge, for ``Trace.with_marks``."""
        return {(e.input_id, e.node_id): f"gradient check failed ({e.mode}): |error| {e.max_abs_error:.2e}"
                for e in self.failing_edges()}

    def trace(self):
        """The checked run as an :class:`~autodiff_viz.Trace`, failing edges marked (needs ``per_edge=True``)."""
        if self._record is None:
            raise ValueError("report.trace() needs the per-edge check: call check_grads(..., per_edge=True).")
        tape, out, sources = self._record
        return tape.trace(out, sources).with_marks(self.marks())

    def worst(self, argnum: int) -> float:
        """The largest absolute error for one argument over every mode checked."""
        return max((r.max_abs_error for r in self.rows if r.argnum == argnum), default=0.0)

    def __bool__(self):
        return self.ok

    def __str__(self):
        width = max((len(r.of) for r in self.rows if r.of != "f"), default=0)
        of = (lambda r: f"{r.of:<{width}}  ") if width else (lambda r: "")
        head = (f"{'of':<{width}}  " * bool(width)
                + f"{'arg':>3}  {'mode':<8} {'max abs err':>12} {'max rel err':>12}  result")
        lines = [head, "-" * len(head)]
        for r in self.rows:
            verdict = "ok" if r.ok else "MISMATCH"
            note = f"  ({r.note})" if r.note else ""
            lines.append(f"{of(r)}{r.argnum:>3}  {r.mode:<8} {r.max_abs_error:12.3e} {r.max_rel_error:12.3e}  "
                         f"{verdict}{note}")
        if self.edges:
            lines.append("")
            head = f"{'op':<18} {'input':<8} {'mode':<8} {'max abs err':>12}  {'result':<8} factor / where"
            lines += ["per edge (each op alone):", head, "-" * len(head)]
            for e in self.edges:
                verdict = "ok" if e.ok else "MISMATCH"
                where = f"  {e.location}" if e.location else ""
                note = f"  ({e.note})" if e.note else ""
                lines.append(f"{e.op + ' #' + str(e.node_id):<18} {e.input_name:<8} {e.mode:<8} "
                             f"{e.max_abs_error:12.3e}  {verdict:<8} {e.factor or ''}{where}{note}")
        lines.append(f"tolerance: |autodiff − numeric| ≤ {self.atol:g} + {self.rtol:g}·|numeric|, ε = {self.eps:g}")
        return "\n".join(lines)

    def _repr_html_(self):
        import html
        rows = "".join(
            f"<tr><td>{html.escape(r.of)}</td><td>{r.argnum}</td><td>{r.mode}</td><td>{r.max_abs_error:.3e}</td>"
            f"<td>{r.max_rel_error:.3e}</td><td style='font-weight:bold'>{'ok' if r.ok else 'MISMATCH'}</td>"
            f"<td>{html.escape(r.note)}</td></tr>" for r in self.rows)
        table = ("<table><thead><tr><th>of</th><th>arg</th><th>mode</th><th>max abs err</th><th>max rel err</th>"
                 f"<th>result</th><th></th></tr></thead><tbody>{rows}</tbody></table>")
        if not self.edges:
            return table
        erows = "".join(
            f"<tr><td>{html.escape(e.op)} #{e.node_id}</td><td>{html.escape(e.input_name)}</td><td>{e.mode}</td>"
            f"<td>{e.max_abs_error:.3e}</td><td style='font-weight:bold;color:{'inherit' if e.ok else '#c62828'}'>"
            f"{'ok' if e.ok else 'MISMATCH'}</td><td>{html.escape(e.factor or '')}</td>"
            f"<td>{html.escape(e.location or '')}</td><td>{html.escape(e.note)}</td></tr>" for e in self.edges)
        return (table + "<table><thead><tr><th>op</th><th>input</th><th>mode</th><th>max abs err</th>"
                "<th>result</th><th>factor</th><th>where</th><th></th></tr></thead>"
                f"<tbody>{erows}</tbody></table>")


def numeric_jacobian(f, args, argnum, eps=1e-6) -> np.ndarray:
    """``out.shape + arg.shape`` by central differences, evaluating ``f`` on float64 arrays."""
    base = [np.array(a, dtype=np.float64) for a in args]
    x = base[argnum]
    cols = []
    for i in range(x.size):
        plus, minus = [b.copy() for b in base], [b.copy() for b in base]
        plus[argnum].flat[i] += eps
        minus[argnum].flat[i] -= eps
        fp = _value(f(*[Tensor(a) for a in plus]))
        fm = _value(f(*[Tensor(a) for a in minus]))
        cols.append((fp - fm) / (2 * eps))
    out_shape = cols[0].shape if cols else ()
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape) if cols else np.zeros(x.shape)


def _value(t) -> np.ndarray:
    return np.asarray(t._value if isinstance(t, Tensor) else t, dtype=np.float64)


def _compare(auto, numeric, atol, rtol) -> tuple:
    """``(max abs error, max rel error, ok)``; ok means ``|auto − numeric| ≤ atol + rtol·|numeric|`` everywhere."""
    err = np.abs(auto - numeric)
    abs_err = float(err.max()) if err.size else 0.0
    rel_err = float((err / np.maximum(np.abs(numeric), 1e-300)).max()) if err.size else 0.0
    return abs_err, rel_err, bool(np.all(err <= atol + rtol * np.abs(numeric)))


_MODES = {"reverse": "reverse", "rev": "reverse", "forward": "forward", "fwd": "forward"}


def _check_call(args, order, modes, argnums) -> tuple:
    """``(modes, argnums)`` normalised; a call that means something else is refused before any work.

    The signature is JAX's (``check_grads(f, args, order, modes, atol, rtol, eps)``), so a third
    positional argument is ``order``; a sequence there was meant as ``argnums``.
    """
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"check_grads: args must be a list or tuple of f's arguments, got {type(args).__name__}; "
                        "for one argument x write check_grads(f, [x]).")
    if isinstance(order, bool) or not isinstance(order, Integral):
        raise TypeError(f"check_grads: the third argument is order (as jax.test_util.check_grads), got {order!r}. "
                        f"To choose which arguments to check pass it by name: check_grads(f, args, argnums={order!r}).")
    if order < 1:
        raise ValueError(f"check_grads: order must be 1 (first derivatives) or more, got {order}. The third "
                         "argument is order, as JAX's; to check one argument use argnums=..., e.g. "
                         f"check_grads(f, args, argnums={order}).")
    return _modes(modes), _argnums(argnums, len(args))


def _modes(modes) -> tuple:
    """``modes`` as a tuple of ``"reverse"``/``"forward"`` (JAX's ``"rev"``/``"fwd"`` accepted)."""
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    bad = [m for m in modes if m not in _MODES]
    if bad or not modes:
        raise ValueError(f"check_grads: modes must name 'reverse' and/or 'forward' (JAX's 'rev'/'fwd' too), "
                         f"got {modes!r}; e.g. modes=('rev',).")
    return tuple(dict.fromkeys(_MODES[m] for m in modes))


def _argnums(argnums, n) -> list:
    """The checked arguments' indices, sorted and non-negative (all ``n`` when None)."""
    nums = range(n) if argnums is None else ([argnums] if isinstance(argnums, Integral) else list(argnums))
    for k in nums:
        if isinstance(k, bool) or not isinstance(k, Integral) or not -n <= k < n:
            raise ValueError(f"check_grads: argnums {k!r} is not an argument of f, which is called with {n} "
                             f"argument(s) (valid: 0 to {n - 1}).")
    return sorted({int(k) % n for k in nums})


def check_grads(f: Callable[..., Any], args: Any, order: int = 1, modes: Sequence[str] = ("reverse", "forward"),
                atol: float | None = None, rtol: float | None = None, eps: float | None = None, *,
                argnums: int | Sequence[int] | None = None, raise_on_error: bool = False,
                per_edge: bool = False) -> GradCheckReport:
    """Compare ``f``'s autodiff Jacobians with finite differences, per argument.

    The signature is ``jax.test_util.check_grads``'s (``check_grads(f, (x, y), 2, modes=("fwd", "rev"))``
    means the same here), with a report instead of an exception unless ``raise_on_error``.

    Args:
        f: a function of tensors returning a tensor.
        args: the point to check at, a list or tuple (arrays or tensors; converted to float64).
        order: 1 checks the first derivatives. 2 also checks the derivatives of the derivatives, as
            JAX: in reverse mode the VJP ``(args, ḡ) ↦ ḡᵀ∂f/∂xₖ`` as a function of the arguments and
            a random cotangent ``ḡ``, in forward mode the JVP ``(args, ẋ) ↦ ∂f/∂x·ẋ``; and so on.
        modes: ``"reverse"`` (VJP rules) and/or ``"forward"`` (JVP rules); JAX's ``"rev"``/``"fwd"`` too.
        atol: absolute tolerance (default 1e-7).
        rtol: relative tolerance (default 1e-5).
        eps: the finite-difference step (default 1e-6).
        argnums: which arguments to check (default: all).
        raise_on_error: raise :class:`GradientCheckError` with the table on a mismatch.
        per_edge: also check every recorded op on the way from the checked
            arguments to the output on its own (its rule's VJP/JVP against
            finite differences of that op's forward at the values it saw), so
            a mismatch names the op, the input and the line (``report.edges``).
    """
    modes, nums = _check_call(args, order, modes, argnums)
    atol = 1e-7 if atol is None else atol
    rtol = 1e-5 if rtol is None else rtol
    eps = 1e-6 if eps is None else eps
    args = [np.array(a._value if isinstance(a, Tensor) else a, dtype=np.float64) for a in args]
    report = GradCheckReport(eps=eps, rtol=rtol, atol=atol)
    report.rows = _check_rows(f, args, nums, order, modes, eps, rtol, atol, "f")
    if per_edge:
        report.edges, report._record = _check_edges(f, args, nums, eps, rtol, atol, modes)
    if raise_on_error and not report.ok:
        raise GradientCheckError("gradient check failed:\n" + str(report))
    return report


def _check_rows(f, args, nums, order, modes, eps, rtol, atol, of) -> list:
    """The rows of one order for ``f`` (named ``of`` in the table), then those of its derivatives."""

    rows = []
    for k in nums:
        numeric = numeric_jacobian(f, args, k, eps)
        for mode in modes:
            try:
                auto = _value(jacobian(f, argnums=k, mode=mode)(*[Tensor(a) for a in args]))
            except NotImplementedError as exc:
                rows.append(GradCheckRow(k, mode, float("nan"), float("nan"), True, f"not checked: {exc}", of))
                continue
            if auto.shape != numeric.shape:
                rows.append(GradCheckRow(k, mode, float("inf"), float("inf"), False,
                                         f"shape {auto.shape} but numeric {numeric.shape}", of))
                continue
            rows.append(GradCheckRow(k, mode, *_compare(auto, numeric, atol, rtol), of=of))
        if any(not r.ok and not r.note for r in rows if r.argnum == k and r.of == of):
            note = _lost_note(f, args, k)
            for r in rows:
                if r.argnum == k and r.of == of and not r.ok and not r.note:
                    r.note = note
    if order > 1:       # reverse: one VJP per checked argument; forward: one JVP along all of them
        for mode in modes:
            for k in (nums if mode == "reverse" else [None]):
                g, g_args, g_nums, name = _derivative(f, args, nums, k, mode, of)
                rows += _check_rows(g, g_args, g_nums, order - 1, modes, eps, rtol, atol, name)
    return rows


def _lost_note(f, args, k) -> str:
    """Why autodiff misses part of ``f``'s derivative in argument ``k``, when a path left the tape.

    ``f`` is run once more on a tape that watches that argument; a value
    computed from it that numpy took (``X.dot(W)`` with ``X`` an ndarray,
    ``float(t)``) is named with its line, as ``tape.explain`` says
    ``partly_lost``: the finite differences see that path, the tape does not.
    """
    xs = [Tensor(a) for a in args]
    with GradientTape() as tape:
        tape.watch(xs[k])
        out = f(*xs)
    lost = lost_paths(tape, out._id if isinstance(out, Tensor) else None, xs[k]._id)
    if not lost:
        return ""
    return (f"a path left the tape at {naming.lost_at(lost[0])}: autodiff misses what it adds, the finite "
            f"differences do not. {naming.LOST_FIX}")


def _derivative(f, args, nums, k, mode, of) -> tuple:
    """``(g, g_args, g_nums, name)``: the derivative of ``f`` that JAX's next order checks.

    Reverse: ``g(*args, ḡ) = ḡᵀ ∂f/∂args[k]``; forward (``k`` None): ``g(*args, ẋ…) = Σⱼ ∂f/∂args[j]·ẋⱼ``
    over the checked arguments. The cotangent and tangents are fixed random values (seeded), and
    they are arguments of ``g`` too, so its Jacobian covers how the derivative depends on them.
    """

    rng = np.random.default_rng(len(args) * 31 + (k or 0))
    n = len(args)
    if mode == "reverse":
        out = _value(f(*[Tensor(a) for a in args]))
        ct = rng.normal(size=out.shape)

        def g(*a):
            return vjp(f, *a[:n])[1](a[n])[k]
        return g, args + [ct], list(nums) + [n], f"ḡᵀ∂{of}/∂x{k}"
    tangents = [rng.normal(size=args[j].shape) for j in nums]

    def g(*a):
        full = [np.zeros_like(x) for x in args]
        for j, t in zip(nums, a[n:]):
            full[j] = t
        return jvp(f, a[:n], full)[1]
    return g, args + tangents, list(nums) + list(range(n, n + len(nums))), f"∂{of}·ẋ"


# ---------------------------------------------------------------------------
# Per edge: each recorded op alone
# ---------------------------------------------------------------------------
EDGE_SIZE_LIMIT = 4096   # entries of an op's input or output above which its edge is not checked


def check_edges(f, args, argnums=None, eps=1e-6, rtol=1e-5, atol=1e-7, modes=("reverse", "forward")) -> list:
    """:class:`EdgeCheckRow` for every edge on a path from ``args[argnums]`` (default: all) to ``f``'s output.

    ``f`` runs once under a tape; then, for each recorded op and each input
    with a gradient, the rule's VJP (reverse) and JVP (forward) are seeded
    with identities and compared with central differences of the op's own
    forward, at the values the op saw, in float64.
    """
    return _check_edges(f, args, _argnums(argnums, len(args)), eps, rtol, atol, _modes(modes))[0]


def _check_edges(f, args, argnums, eps, rtol, atol, modes) -> tuple:
    """``(rows, (tape, out, sources))``: the edge rows and the run they checked."""
    from ..base.state import paused
    from ..core import walks

    xs = [Tensor(np.array(a, dtype=np.float64)) for a in args]
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch([xs[k] for k in argnums])
        out = f(*xs)
    reach, path = walks.reachable(tape.nodes, {xs[k]._id for k in argnums})
    rows = []
    with paused():
        for node in path:
            for i, t in enumerate(node.inputs):
                spec = node.rule.spec(i)
                if t._id in reach and spec.vjp is not None and t.dtype.kind in "fc":
                    rows += _check_edge(node, i, eps, rtol, atol, modes)
    return rows, (tape, out, [xs[k] for k in argnums])


def _check_edge(node, i, eps, rtol, atol, modes) -> list:
    from ..core.engine import lift, unbroadcast

    rule, params, spec = node.rule, node.params, node.rule.spec(i)
    name = f"x{i}" if rule.variadic else spec.name
    loc = naming.place(*node.location) if node.location else None     # "cell [3], line 8" in a notebook
    xs = [np.array(t._value, dtype=np.float64) if t.dtype.kind in "fc" else t._value for t in node.inputs]
    x = xs[i]
    extra = {"i": i} if rule.variadic else {}

    def row(mode, auto=None, numeric=None, note=""):
        abs_err = rel_err = float("nan")
        ok = True
        if auto is not None and auto.shape != numeric.shape:
            abs_err = rel_err = float("inf")
            ok, note = False, f"shape {auto.shape} but numeric {numeric.shape}"
        elif auto is not None:
            abs_err, rel_err, ok = _compare(auto, numeric, atol, rtol)
        return EdgeCheckRow(node.out_id, node.inputs[i]._id, rule.name, i, name, spec.factor, mode,
                            abs_err, rel_err, ok, loc, note)

    y = np.asarray(rule.forward(*xs, **params))
    if y.dtype != np.float64:
        return [row(m, note=f"not checked: the op's output is {y.dtype}") for m in modes]
    if x.size > EDGE_SIZE_LIMIT or y.size > EDGE_SIZE_LIMIT:
        return [row(m, note=f"not checked: more than {EDGE_SIZE_LIMIT} entries") for m in modes]
    numeric = _op_numeric_jacobian(rule, xs, i, params, eps, y.shape)
    rows = []
    for mode in modes:
        if mode == "reverse":
            seed = np.eye(y.size).reshape(y.shape + y.shape)
            g = spec.vjp(seed, y, *xs, **extra, **params)
            if g is None:
                g = np.zeros(y.shape + x.shape)
            g = np.asarray(g._value if isinstance(g, Tensor) else g, dtype=np.float64)
            if rule.elementwise:
                g = unbroadcast(g, x.shape, y.ndim)
            if g.ndim < y.ndim + x.ndim:
                g = np.broadcast_to(g, y.shape + x.shape)
            rows.append(row(mode, g, numeric))
        else:
            if spec.jvp is None:
                rows.append(row(mode, note="not checked: the rule has no JVP"))
                continue
            dx = np.eye(x.size).reshape(x.shape + x.shape)
            if rule.elementwise:
                dx = lift(dx, x.ndim, y.ndim)
            c = spec.jvp(dx, y, *xs, **extra, **params)
            c = np.broadcast_to(np.asarray(c._value if isinstance(c, Tensor) else c, dtype=np.float64),
                                x.shape + y.shape)
            k = x.ndim
            rows.append(row(mode, np.transpose(c, tuple(range(k, k + y.ndim)) + tuple(range(k))), numeric))
    return rows


def _op_numeric_jacobian(rule, xs, i, params, eps, y_shape) -> np.ndarray:
    """``y.shape + x.shape``: central differences of one op's forward in its input ``i``."""
    x = xs[i]
    cols = []
    for j in range(x.size):
        plus, minus = list(xs), list(xs)
        plus[i], minus[i] = x.copy(), x.copy()
        plus[i].flat[j] += eps
        minus[i].flat[j] -= eps
        fp = np.asarray(rule.forward(*plus, **params), dtype=np.float64)
        fm = np.asarray(rule.forward(*minus, **params), dtype=np.float64)
        cols.append((fp - fm) / (2 * eps))
    if not cols:
        return np.zeros(y_shape + x.shape)
    return np.stack(cols, axis=-1).reshape(y_shape + x.shape)
