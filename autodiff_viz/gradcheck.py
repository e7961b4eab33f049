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
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .tensor import Tensor


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


@dataclass
class GradCheckReport:
    """The outcome of :func:`check_grads`: one row per (argument, mode); ``.ok`` if all pass."""

    rows: list = field(default_factory=list)
    eps: float = 1e-6
    rtol: float = 1e-5
    atol: float = 1e-7

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def worst(self, argnum: int) -> float:
        """The largest absolute error for one argument over every mode checked."""
        return max((r.max_abs_error for r in self.rows if r.argnum == argnum), default=0.0)

    def __bool__(self):
        return self.ok

    def __str__(self):
        head = f"{'arg':>3}  {'mode':<8} {'max abs err':>12} {'max rel err':>12}  result"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            verdict = "ok" if r.ok else "MISMATCH"
            note = f"  ({r.note})" if r.note else ""
            lines.append(f"{r.argnum:>3}  {r.mode:<8} {r.max_abs_error:12.3e} {r.max_rel_error:12.3e}  {verdict}{note}")
        lines.append(f"tolerance: |autodiff − numeric| ≤ {self.atol:g} + {self.rtol:g}·|numeric|, ε = {self.eps:g}")
        return "\n".join(lines)

    def _repr_html_(self):
        import html
        rows = "".join(
            f"<tr><td>{r.argnum}</td><td>{r.mode}</td><td>{r.max_abs_error:.3e}</td>"
            f"<td>{r.max_rel_error:.3e}</td><td style='font-weight:bold'>{'ok' if r.ok else 'MISMATCH'}</td>"
            f"<td>{html.escape(r.note)}</td></tr>" for r in self.rows)
        return ("<table><thead><tr><th>arg</th><th>mode</th><th>max abs err</th><th>max rel err</th>"
                f"<th>result</th><th></th></tr></thead><tbody>{rows}</tbody></table>")


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


def check_grads(f, args, argnums=None, eps=1e-6, rtol=1e-5, atol=1e-7,
                modes=("reverse", "forward"), raise_on_error=False) -> GradCheckReport:
    """Compare ``f``'s autodiff Jacobians with finite differences, per argument.

    Args:
        f: a function of tensors returning a tensor.
        args: the point to check at (arrays or tensors; converted to float64).
        argnums: which arguments to check (default: all).
        eps, rtol, atol: step and tolerances.
        modes: ``"reverse"`` (VJP rules), ``"forward"`` (JVP rules), or both.
        raise_on_error: raise :class:`GradientCheckError` with the table on a mismatch.
    """
    from .transforms import jacobian

    args = [np.array(a._value if isinstance(a, Tensor) else a, dtype=np.float64) for a in args]
    nums = range(len(args)) if argnums is None else ([argnums] if isinstance(argnums, int) else argnums)
    report = GradCheckReport(eps=eps, rtol=rtol, atol=atol)
    for k in nums:
        numeric = numeric_jacobian(f, args, k, eps)
        for mode in modes:
            try:
                auto = _value(jacobian(f, argnums=k, mode=mode)(*[Tensor(a) for a in args]))
            except NotImplementedError as exc:
                report.rows.append(GradCheckRow(k, mode, float("nan"), float("nan"), True, f"not checked: {exc}"))
                continue
            if auto.shape != numeric.shape:
                report.rows.append(GradCheckRow(k, mode, float("inf"), float("inf"), False,
                                                f"shape {auto.shape} but numeric {numeric.shape}"))
                continue
            err = np.abs(auto - numeric)
            abs_err = float(err.max()) if err.size else 0.0
            rel_err = float((err / np.maximum(np.abs(numeric), 1e-300)).max()) if err.size else 0.0
            ok = bool(np.all(err <= atol + rtol * np.abs(numeric)))
            report.rows.append(GradCheckRow(k, mode, abs_err, rel_err, ok))
    if raise_on_error and not report.ok:
        raise GradientCheckError("gradient check failed:\n" + str(report))
    return report
