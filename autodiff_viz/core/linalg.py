"""``adv.linalg``: numpy's ``np.linalg`` functions, differentiable.

    >>> import autodiff_viz as adv
    >>> A = adv.Variable([[2.0, 1.0], [1.0, 3.0]])
    >>> with adv.GradientTape() as tape:
    ...     logdet = adv.linalg.slogdet(A).logabsdet
    >>> tape.gradient(logdet, A)          # A⁻ᵀ
    Tensor([[ 0.6, -0.2],
            [-0.2,  0.4]], shape=(2, 2), dtype=float64)

Every function takes stacked matrices ``(..., m, n)`` as numpy does, returns
numpy's values (results with several parts come back in numpy's named tuples:
``eigh(A).eigenvalues``, ``svd(A).S`` ...) and records rules from
:mod:`autodiff_viz.rules.linalg`, one per output, so each edge of a graph
carries its own chain-rule factor.

Domain errors are raised before anything is recorded, as
:class:`LinAlgError`, a subclass of ``numpy.linalg.LinAlgError`` (so
``except np.linalg.LinAlgError`` still catches them) whose message names the
op, the shape, which matrix of a stack failed, and a fix.

Limits, each a property of the math, not of this package:

* ``eigh``/``eigvalsh``/``cholesky`` read one triangle of ``A``, as numpy
  (the lower one unless ``UPLO="U"`` / ``upper=True``). The gradient is that
  of the function numpy computes: it sits on the triangle read, off-diagonal
  entries counted twice, zeros on the other side (as autograd's eigh).
  Build the matrix from what you differentiate (``B @ B.T``, ``(M + M.T)/2``)
  and the gradient with respect to ``B`` or ``M`` is the usual one.
* Eigenvector gradients divide by ``λⱼ − λᵢ``: for a repeated eigenvalue
  the eigenvectors are not unique and have no derivative. The rules use 0
  for such a pair, which is exact when the loss depends only on the
  eigenspace (``V f(Λ) Vᵀ``, eigenvalues alone) and meaningless otherwise.
  The same holds for ``svd``'s ``U`` and ``Vh`` with repeated or zero
  singular values; the singular values alone (``svdvals``) need neither.
* ``det`` and ``slogdet`` differentiate through ``A⁻¹``: at an exactly
  singular matrix their gradient raises (the determinant's gradient, the
  adjugate, exists there, but is not computed).
"""
from __future__ import annotations

from collections import namedtuple
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from . import ops
from .engine import call
from .rules import _keepdims_shape, _mT
from .rules import linalg as R
from .rules import norm as _norm_rule
from .tensor import _tracked, constant

if TYPE_CHECKING:
    from .types import Axis, Tensor, TensorLike

__all__ = ["LinAlgError", "norm", "inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd",
           "svdvals", "qr", "pinv", "lstsq", "cond", "matrix_power", "multi_dot", "trace", "matmul",
           "matrix_transpose", "diagonal", "outer", "vecdot", "tensordot", "vector_norm", "matrix_norm",
           "eig", "eigvals", "EighResult", "SlogdetResult", "SVDResult", "QRResult"]

# numpy.linalg functions that, given a tensor, run the function of the same name here
NUMPY_FUNCTIONS = {"inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr",
                   "pinv", "lstsq", "cond", "matrix_power", "multi_dot", "trace", "matmul", "matrix_transpose",
                   "diagonal", "outer", "vecdot", "tensordot", "vector_norm", "matrix_norm", "norm", "eig", "eigvals"}

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])


class LinAlgError(np.linalg.LinAlgError):
    """A linear-algebra function met a matrix outside its domain (singular, not positive definite ...).

    Subclasses ``numpy.linalg.LinAlgError`` (itself a ``ValueError``), so code
    written for numpy catches it unchanged.
    """


def _matrices(a, op: str, square: bool = True):
    """``a`` as a tensor of (stacked) matrices, or an error that says what ``op`` needs."""
    a = ops._tensor(a)
    if a.dtype.kind == "c":
        raise TypeError(f"linalg.{op}: complex matrices are not supported (dtype {a.dtype}); "
                        "split into real and imaginary parts.")
    if a.dtype.kind not in "fiub":
        raise TypeError(f"linalg.{op}: needs a numeric matrix, got dtype {a.dtype}.")
    if a.ndim < 2:
        raise LinAlgError(f"linalg.{op}: needs a matrix (at least 2 axes, the last two are rows and "
                          f"columns), got shape {a.shape}. For a single number use x[None, None]; for "
                          "a vector, decide whether it is a row x[None, :] or a column x[:, None].")
    if square and a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"linalg.{op}: needs square matrices in the last two axes, got shape {a.shape} "
                          f"({a.shape[-2]} rows, {a.shape[-1]} columns).")
    return a


def _which(value, test) -> str:
    """`` (matrix [i, j] of the stack)`` for the first matrix of a stack on which ``test`` raises."""
    if value.ndim == 2:
        return ""
    for idx in np.ndindex(value.shape[:-2]):
        try:
            test(value[idx])
        except np.linalg.LinAlgError:
            return f" (matrix {list(idx)} of the stack of {value.shape[:-2]})"
    return ""


_SINGULAR_FIX = ("Fix: look for linearly dependent rows or columns (a repeated or all-zero row, a feature "
                 "that is a sum of others); add a small multiple of the identity (A + 1e-6·I) to "
                 "regularize; or use adv.linalg.pinv for a least-squares answer.")


def _run(rule, op, inputs, explain, **params):
    """Apply ``rule``; a numpy LinAlgError becomes ours, with ``explain(exc)`` as its message."""
    try:
        return call(rule, *inputs, **params)
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(explain(exc)) from None


def inv(a):
    """The inverse ``A⁻¹`` of each square matrix; ``∂``: ``Ā = −A⁻ᵀ ḡ A⁻ᵀ``.

    Raises:
        LinAlgError: a matrix is singular (determinant 0).
    """
    a = _matrices(a, "inv")
    return _run(R.inv, "inv", [a], lambda exc: (
        f"linalg.inv: the matrix of shape {a.shape[-2:]}{_which(a._value, np.linalg.inv)} is singular "
        f"(its determinant is 0), so it has no inverse. {_SINGULAR_FIX} To solve A x = b, "
        "adv.linalg.solve(A, b) is faster and more accurate than inv(A) @ b."))


def det(a):
    """The determinant of each square matrix; ``∂``: ``Ā = ḡ · det(A) · A⁻ᵀ``.

    At an exactly singular matrix the value is 0 but the gradient raises. For
    large matrices prefer ``slogdet``: a determinant over- or underflows easily.
    """
    return call(R.det, _matrices(a, "det"))


def slogdet(a):
    """``(sign, logabsdet)`` of each square matrix, as numpy: ``det A = sign · exp(logabsdet)``.

    ``logabsdet`` has the gradient ``A⁻ᵀ`` (the gradient of ``log |det A|``);
    ``sign`` is ±1 (0 for a singular matrix) and piecewise constant: no gradient.
    """
    a = _matrices(a, "slogdet")
    return SlogdetResult(call(R.slogdet_sign, a), call(R.slogdet, a))


def solve(a, b):
    """The solution ``Y`` of ``A Y = B`` for square ``A``; numpy 2's rule: ``b`` is a vector only when 1-D.

    ``∂``: ``B̄ = A⁻ᵀ ḡ``, ``Ā = −B̄ Yᵀ``. Stacks of ``A`` and ``B`` broadcast.

    Raises:
        LinAlgError: a matrix ``A`` is singular, or the shapes do not fit.
    """
    a = _matrices(a, "solve")
    b = ops._tensor(b)
    n = a.shape[-1]
    rows = b.shape[0] if b.ndim == 1 else (b.shape[-2] if b.ndim >= 2 else None)
    if rows != n:
        raise LinAlgError(
            f"linalg.solve: A has shape {a.shape} ({n}×{n}), so b needs {n} rows: a vector of shape ({n},) or "
            f"matrices (..., {n}, k); got shape {b.shape}. (numpy 2 reads b as a vector only when it is 1-D: "
            f"for a stack of vectors of shape (..., {n}) write solve(A, b[..., None])[..., 0].)")
    return _run(R.solve, "solve", [a, b], lambda exc: (
        f"linalg.solve: the matrix A of shape {a.shape[-2:]}{_which(a._value, np.linalg.inv)} is singular, "
        f"so A y = b has no unique solution. {_SINGULAR_FIX}")
        if "ingular" in str(exc) else f"linalg.solve: A {a.shape}, b {b.shape}: {exc}")


def cholesky(a, upper=False):
    """The lower-triangular ``L`` with ``L Lᵀ = A`` for symmetric positive definite ``A``.

    Reads the lower triangle of ``A`` as numpy does (``upper=True``: the upper
    one, and returns ``Lᵀ``). ``∂``: ``S̄ = sym(L⁻ᵀ Φ(Lᵀ ḡ) L⁻¹)``, ``Φ`` the
    lower triangle with its diagonal halved, placed on the triangle read.

    Raises:
        LinAlgError: a matrix is not positive definite.
    """
    a = _matrices(a, "cholesky")
    upper = bool(upper)
    return _run(R.cholesky, "cholesky", [a], lambda exc: (
        f"linalg.cholesky: the matrix of shape {a.shape[-2:]}"
        f"{_which(a._value, lambda m: R.numpy_cholesky(m, upper))} is not positive definite "
        "(Cholesky needs a symmetric matrix whose eigenvalues are all > 0; numpy reads its "
        f"{'upper' if upper else 'lower'} triangle). Fix: build it as B @ B.T + ε·I (a covariance plus "
        "jitter), or check the smallest eigenvalue with adv.linalg.eigvalsh(A)[..., 0]."), upper=upper)


def _uplo(UPLO, op):
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.{op}: UPLO must be 'L' or 'U', got {UPLO!r}.")


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and unit eigenvectors (columns) of symmetric matrices.

    Returns ``EighResult(eigenvalues, eigenvectors)`` as numpy, reading the
    ``UPLO`` triangle of ``A`` (``"L"``: lower). With ``S`` the symmetric
    matrix read: ``∂λ``: ``S̄ = V diag(λ̄) Vᵀ``; ``∂V``: ``S̄ = sym(V (F ∘ Vᵀ V̄) Vᵀ)``
    with ``Fᵢⱼ = 1/(λⱼ − λᵢ)``; ``Ā`` is ``S̄`` placed on the triangle read
    (off-diagonal entries twice).

    Note:
        Eigenvectors of a repeated eigenvalue are not unique (any rotation
        within their eigenspace is as good), so they have no derivative;
        their gradient uses 0 for each tied pair, which is right only when the
        loss does not depend on the choice (it depends on the eigenvalues, or
        on ``V f(Λ) Vᵀ``). Near-ties give large gradients; that is the math.
        An eigenvector's sign is arbitrary, as in numpy: a loss should not
        depend on it.
    """
    _uplo(UPLO, "eigh")
    a = _matrices(a, "eigh")
    return EighResult(call(R.eigvalsh, a, UPLO=UPLO), call(R.eigh_vectors, a, UPLO=UPLO))


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of symmetric matrices (the ``UPLO`` triangle read, as numpy).

    ``∂``: ``S̄ = V diag(λ̄) Vᵀ`` on the triangle read; defined even for repeated eigenvalues.
    """
    _uplo(UPLO, "eigvalsh")
    return call(R.eigvalsh, _matrices(a, "eigvalsh"), UPLO=UPLO)


def _untracked_or_refuse(a, op, why, fix):
    """Whether ``a`` may take numpy's path (no tape tracks it); else the error saying why there is no gradient."""
    if not _tracked(a):
        return True
    raise ValueError(f"linalg.{op}: {why}, so there is no gradient, and a GradientTape is tracking the input "
                     f"(shape {a.shape}). Fix: {fix}")


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition ``A = U diag(S) Vh``, as numpy (``compute_uv=False``: ``S`` only).

    ``∂S``: ``Ā = U diag(S̄) Vh``, defined wherever the singular values are
    distinct (for ``S`` alone, even where they tie). ``U`` and ``Vh`` need
    distinct, non-zero singular values (see :func:`eigh`'s note).

    ``full_matrices=True`` (numpy's default) of a non-square matrix adds
    columns to ``U`` (or rows to ``Vh``) that are any orthonormal completion:
    not unique, so not differentiable. While a tape tracks the input that is
    refused with the fix (``full_matrices=False``, the thin SVD: same ``S``,
    ``A = U diag(S) Vh`` still holds); otherwise numpy's values come back as
    constants. ``hermitian`` is accepted for numpy's signature; the general
    SVD is used (the same singular values).
    """
    a = _matrices(a, "svd", square=False)
    if not compute_uv:
        return call(R.svdvals, a)
    m, n = a.shape[-2:]
    if full_matrices and m != n and _untracked_or_refuse(
            a, "svd", f"full_matrices=True for matrices of shape {a.shape[-2:]} adds {abs(m - n)} "
            f"{'columns to U' if m > n else 'rows to Vh'} that can be any orthonormal completion",
            "svd(a, full_matrices=False) (the thin SVD: same singular values, A = U diag(S) Vh still holds), "
            "or svd(a, compute_uv=False) for the singular values only."):
        return SVDResult(*(constant(p) for p in np.linalg.svd(a.numpy(), full_matrices=True)))
    return SVDResult(call(R.svd_u, a), call(R.svdvals, a), call(R.svd_vh, a))


def svdvals(a):
    """Singular values (descending) of each matrix; ``∂``: ``Ā = U diag(S̄) Vh``."""
    return call(R.svdvals, _matrices(a, "svdvals", square=False))


def qr(a, mode="reduced"):
    """QR decomposition ``A = Q R``: ``Q`` with orthonormal columns, ``R`` upper triangular.

    ``mode``: ``"reduced"`` (``QRResult(Q, R)``, ``k = min(m, n)`` columns of
    ``Q``), ``"r"`` (``R`` only) or ``"complete"``. Needs the first ``k``
    columns of ``A`` linearly independent.
    ``∂Q``: ``Ā = (Q̄ − Q copyltu(Q̄ᵀQ)) R⁻ᵀ``; ``∂R``: ``Ā = Q copyltu(R R̄ᵀ) R⁻ᵀ``,
    ``copyltu(M)`` the symmetric matrix with ``M``'s lower triangle. A wide
    matrix ``[X | Y]`` (m < n) is ``Q [R₁ | QᵀY]`` with ``Q R₁`` the QR of
    ``X``, and is recorded that way. ``mode="complete"`` for m > n adds
    columns to ``Q`` that are not unique: refused while a tape tracks the input.
    """
    a = _matrices(a, "qr", square=False)
    m, n = a.shape[-2:]
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}.")
    if mode == "complete" and m > n and _untracked_or_refuse(
            a, "qr", f"mode='complete' for shape {a.shape[-2:]} adds {m - n} columns to Q that are not unique",
            "mode='reduced'."):
        return QRResult(*(constant(p) for p in np.linalg.qr(a.numpy(), mode="complete")))
    if m < n:
        x, rest = a[..., :, :m], a[..., :, m:]
        q, r1 = call(R.qr_q, x), call(R.qr_r, x)
        r = ops.concatenate([r1, _mT(q) @ rest], axis=-1)
    else:
        q, r = None, call(R.qr_r, a)
    if mode == "r":
        return r
    return QRResult(q if q is not None else call(R.qr_q, a), r)


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """The Moore–Penrose pseudo-inverse ``A⁺`` (singular values below ``rcond`` × the largest count as 0).

    The gradient (Golub & Pereyra) holds where the rank of ``A`` does not change
    nearby: for full-rank matrices, or rank-deficient ones perturbed within their
    rank. ``rtol`` is numpy 2's name for ``rcond``; ``hermitian`` is accepted for
    numpy's signature (the same values).
    """
    cutoff = rtol if rcond is None else rcond
    return call(R.pinv, _matrices(a, "pinv", square=False), rcond=None if cutoff is None else float(cutoff))


def matrix_power(a, n):
    """``A`` multiplied by itself ``n`` times (``n < 0``: of ``A⁻¹``; ``n = 0``: the identity).

    Recorded as the matmuls of repeated squaring, ``O(log n)`` of them.
    """
    a = _matrices(a, "matrix_power")
    if not isinstance(n, Integral):
        raise TypeError(f"linalg.matrix_power: the exponent must be an integer, got {n!r}.")
    n = int(n)
    if n == 0:
        return ops.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while True:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if not n:
            return result
        base = base @ base


def multi_dot(arrays):
    """``A @ B @ C @ ...``; a 1-D first (last) operand is a row (column) vector, as numpy."""
    ms = [ops._tensor(x) for x in arrays]
    if len(ms) < 2:
        raise ValueError(f"linalg.multi_dot: needs at least two arrays, got {len(ms)}.")
    out = ms[0]
    for m in ms[1:]:
        out = ops.matmul(out, m)
    return out


def trace(x, offset=0):
    """Sum of the diagonal of each matrix in the last two axes (``np.linalg.trace``; ``np.trace``: the first two)."""
    x = _matrices(x, "trace", square=False)
    rows, cols = x.shape[-2:]
    return ops.sum(ops.multiply(x, np.eye(rows, cols, k=int(offset))), axis=(-2, -1))


def matmul(x1, x2):
    """``x1 @ x2`` (``np.linalg.matmul``)."""
    return ops.matmul(x1, x2)


def matrix_transpose(x):
    """Swap the last two axes (``np.linalg.matrix_transpose``, ``x.mT``)."""
    return _mT(_matrices(x, "matrix_transpose", square=False))


def diagonal(x, offset=0):
    """The diagonal ``offset`` of each matrix in the last two axes (``np.linalg.diagonal``)."""
    return ops.diagonal(_matrices(x, "diagonal", square=False), offset=offset, axis1=-2, axis2=-1)


def outer(x1, x2):
    """``x1[:, None] * x2[None, :]`` of two vectors (``np.linalg.outer``)."""
    return ops.outer(x1, x2)


def vecdot(x1, x2, axis=-1):
    """``Σ x1·x2`` along ``axis``, broadcasting the other axes (``np.linalg.vecdot``, real values)."""
    return ops.sum(ops.multiply(x1, x2), axis=axis)


def tensordot(x1, x2, axes=2):
    """``np.linalg.tensordot``: the same as ``adv.tensordot``."""
    return ops.tensordot(x1, x2, axes=axes)


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """The vector norm over all entries (``axis=None``) or over ``axis``, one or several (``np.linalg.vector_norm``)."""
    x = ops._tensor(x)
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, Integral) else tuple(axis)
    axes = tuple(sorted(a % x.ndim for a in axes))
    if len(axes) == 1:
        return norm(x, ord=ord, axis=axes[0], keepdims=keepdims)
    rest = [k for k in range(x.ndim) if k not in axes]
    moved = ops.transpose(x, rest + list(axes))
    out = norm(ops.reshape(moved, tuple(x.shape[k] for k in rest) + (-1,)), ord=ord, axis=-1)
    return ops.reshape(out, tuple(1 if k in axes else n for k, n in enumerate(x.shape))) if keepdims else out


def matrix_norm(x, keepdims=False, ord="fro"):
    """The matrix norm of each matrix in the last two axes (``np.linalg.matrix_norm``)."""
    return norm(_matrices(x, "matrix_norm", square=False), ord=ord, axis=(-2, -1), keepdims=keepdims)


def cond(x, p=None):
    """The condition number ``‖A‖·‖A⁻¹‖`` (``p`` None or 2: ``s_max / s_min`` from the singular values).

    ``p=-2`` gives ``s_min / s_max``; other ``p`` (``'fro'``, ``'nuc'``, 1, −1,
    ∞, −∞) the product of the two norms, for square matrices.
    """
    x = _matrices(x, "cond", square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    return norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))


def lstsq(a, b, rcond=None):
    """Least squares: ``x`` minimizing ``‖b − a x‖²``, as numpy: ``(x, residuals, rank, s)``.

    ``x = a⁺ b`` (the pseudo-inverse with numpy's cutoff ``rcond``, by default
    ``ε·max(m, n)`` times the largest singular value), differentiable where the
    rank does not change; ``residuals`` (the squared error per column of ``b``,
    when ``a`` has full column rank and more rows than columns, else empty) too;
    ``rank`` (an integer) and ``s`` (the singular values) as numpy.
    """
    a = _matrices(a, "lstsq", square=False)
    b = ops._tensor(b)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise LinAlgError(f"linalg.lstsq: needs a matrix a (m, n) and b of shape (m,) or (m, k) with the same m; "
                          f"got a {a.shape} and b {b.shape}.")
    m, n = a.shape
    cutoff = np.finfo(np.float64).eps * max(m, n) if rcond is None else float(rcond)
    x = ops.matmul(pinv(a, rcond=cutoff), b)
    s = svdvals(a)
    sv = s.numpy()
    rank = int(np.sum(sv > cutoff * sv[0])) if sv.size else 0
    if rank == n and m > n:
        resid = ops.sum(ops.square(ops.subtract(b, ops.matmul(a, x))), axis=0)
        residuals = ops.reshape(resid, (1,)) if b.ndim == 1 else resid
    else:
        residuals = constant(np.zeros((0,)))
    return x, residuals, rank, s


def eig(a):
    """numpy's values for a tensor no tape tracks; refused while one does (complex results, no gradient here).

    For a symmetric matrix use :func:`eigh`; for a general one, the singular
    values (:func:`svdvals`) are often what is wanted.
    """
    return _complex_only("eig", a)


def eigvals(a):
    """As :func:`eig`: numpy's values, or refused while a tape tracks ``a`` (use :func:`eigvalsh`)."""
    return _complex_only("eigvals", a)


def _complex_only(name, a, face="linalg"):
    """numpy's ``np.linalg.<name>`` of ``a`` while no tape tracks it; while one does, the TypeError that names
    the op (as ``face.name``), the complex dtype its results would have, and the symmetric alternative."""
    a = ops._tensor(a)
    if _tracked(a):
        out = "complex64" if a.dtype in (np.float32, np.float16, np.complex64) else "complex128"
        raise TypeError(f"{face}.{name}: the eigenvalues and eigenvectors of a general (non-symmetric) matrix are "
                        f"complex numbers ({out} for this {a.dtype} input), which autodiff_viz does not "
                        f"differentiate, and a GradientTape is tracking the input (shape {a.shape}). Fix: for a "
                        f"symmetric matrix use adv.{face}.eigh (adv.linalg.eigvalsh for the values alone); for the "
                        f"sizes of a general matrix, adv.linalg.svdvals; or np.linalg.{name}(a.numpy()) if you "
                        "need no gradient.")
    return getattr(np.linalg, name)(a.numpy())


def norm(x: TensorLike, ord: float | str | None = None, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """``np.linalg.norm``: vector norms (ord None/2, 1, ∞, −∞, p) and matrix norms ('fro', 1, 2, ∞, 'nuc').

    Without ``axis``: the 2-norm of all entries (ord None), or the vector norm of a 1-D /
    matrix norm of a 2-D tensor. At ``x = 0`` the 2-norm's gradient is 0 (a subgradient, as PyTorch).
    """
    x = ops._tensor(x)
    if axis is None:
        if ord is not None and x.ndim > 2:
            raise ValueError(f"norm: ord={ord!r} needs axis= for a tensor with {x.ndim} axes (numpy raises too).")
        axes = ops._axes(None, x.ndim, "norm")
        if ord is None and x.ndim == 2:
            ord = "fro"
    else:
        axes = (ops._axes(axis, x.ndim, "norm")[0],) if isinstance(axis, Integral) else tuple(
            ops._axes(a, x.ndim, "norm")[0] for a in axis)
    if len(axes) not in (1, 2) and ord is not None:
        raise ValueError(f"norm: axis must be one axis or two, got {axis}.")
    matrix_ords = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
    if len(axes) == 1 and not (isinstance(ord, (Integral, float)) or ord is None):
        raise ValueError(f"norm: ord={ord!r} is not a vector norm; use a number, np.inf or None.")
    if len(axes) == 2 and ord not in matrix_ords:
        raise ValueError(f"norm: ord={ord!r} is not a matrix norm; use one of {matrix_ords}.")
    if len(axes) == 2 and ord in (2, -2, "nuc"):
        s = svdvals(ops.moveaxis(x, axes, (-2, -1)))     # the singular values' rule: second derivatives too
        y = ops.sum(s, axis=-1) if ord == "nuc" else ops.max(s, axis=-1) if ord == 2 else ops.min(s, axis=-1)
        return ops.reshape(y, _keepdims_shape(x.shape, axes)) if keepdims else y
    return call(_norm_rule, x, ord=ord, axis=axes, keepdims=bool(keepdims))


# ----- tf.linalg's own names: compositions of the functions above, recorded as the ops they are made of --------
def adjoint(matrix, name=None):
    """``tf.linalg.adjoint``: the conjugate transpose, for real matrices the transpose of the last two axes."""
    return matrix_transpose(matrix)


def diag_part(input, name=None, k=0, padding_value=0, align="RIGHT_LEFT"):    # noqa: A002
    """``tf.linalg.diag_part``: the ``k``-th diagonal of each matrix (last two axes)."""
    return diagonal(input, offset=k)


def diag(diagonal, name=None, k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """``tf.linalg.diag``: a batch of diagonal matrices from a batch of diagonals (``(..., n)`` → ``(..., n, n)``);
    ``k ≠ 0`` places it above (below) the main diagonal. Differentiable: ``diagonal[..., None] · I``."""
    d = ops._tensor(diagonal)
    n = d.shape[-1] + abs(k)
    rows, cols = np.nonzero(np.eye(n, k=k, dtype=bool))
    placed = np.zeros(d.shape[-1:] + (n, n), dtype=d.dtype)       # placed[i] has a 1 where entry i goes
    placed[np.arange(d.shape[-1]), rows, cols] = 1
    return ops.tensordot(d, constant(placed), axes=1)


def set_diag(input, diagonal, name=None, k=0, align="RIGHT_LEFT"):    # noqa: A002
    """``tf.linalg.set_diag``: ``input`` with its ``k``-th diagonal replaced by ``diagonal``."""
    x = ops._tensor(input)
    mask = np.eye(x.shape[-2], x.shape[-1], k=k, dtype=bool)
    return ops.where(mask, diag(diagonal, k=k)[..., :x.shape[-2], :x.shape[-1]], x)


def band_part(input, num_lower, num_upper, name=None):    # noqa: A002
    """``tf.linalg.band_part``: keep the entries with ``−num_lower ≤ j − i ≤ num_upper`` (−1: no limit), zeros
    elsewhere; ``band_part(A, -1, 0)`` is the lower triangle."""
    x = ops._tensor(input)
    i, j = np.ogrid[:x.shape[-2], :x.shape[-1]]
    keep = ((num_lower < 0) | (i - j <= num_lower)) & ((num_upper < 0) | (j - i <= num_upper))
    return ops.where(keep, x, 0.0)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """``tf.linalg.matvec``: ``A·b`` for each matrix and vector of the batch."""
    a = matrix_transpose(a) if transpose_a or adjoint_a else a
    return ops.matmul(a, ops.expand_dims(b, -1))[..., 0]


def tensor_diag(diagonal, name=None):
    """``tf.linalg.tensor_diag``: ``out[i…, i…] = diagonal[i…]``, zeros elsewhere (shape ``d + d``)."""
    d = ops._tensor(diagonal)
    n = int(np.prod(d.shape))
    return ops.reshape(diag(ops.reshape(d, (n,))), d.shape + d.shape)


def tensor_diag_part(input, name=None):    # noqa: A002
    """``tf.linalg.tensor_diag_part``: the inverse of :func:`tensor_diag` (shape ``d + d`` → ``d``)."""
    x = ops._tensor(input)
    half = x.shape[:x.ndim // 2]
    n = int(np.prod(half))
    return ops.reshape(diagonal(ops.reshape(x, (n, n))), half)


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """``tf.linalg.triangular_solve``: ``X`` with ``A X = B`` reading only the lower (``lower=True``) or upper
    triangle of ``A`` (``adjoint=True``: ``Aᵀ X = B``). The other triangle gets no gradient, as TensorFlow."""
    a = ops.tril(matrix) if lower else ops.triu(matrix)
    return solve(matrix_transpose(a) if adjoint else a, rhs)


def cholesky_solve(chol, rhs, name=None):
    """``tf.linalg.cholesky_solve``: ``X`` with ``L Lᵀ X = B``, given the Cholesky factor ``L``."""
    low = ops.tril(chol)
    return solve(ops.matmul(low, matrix_transpose(low)), rhs)


def logdet(matrix, name=None):
    """``tf.linalg.logdet``: ``ln det A`` of a symmetric positive definite ``A``, as ``slogdet(A).logabsdet``
    (its gradient ``A⁻ᵀ`` is TensorFlow's, symmetric for a symmetric ``A``)."""
    return slogdet(matrix).logabsdet


def global_norm(t_list, name=None):
    """``tf.linalg.global_norm``: ``√(Σ_t Σ t²)`` over a list of tensors (None entries are skipped)."""
    return ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(t)) for t in t_list if t is not None])))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``tf.math.l2_normalize`` (also ``tf.linalg.l2_normalize``, ``tf.nn.l2_normalize``): ``x / √max(Σ x², ε)``
    over ``axis`` (all axes when None)."""
    x = ops._tensor(x)
    ax = dim if axis is None else axis
    squares = ops.sum(ops.square(x), axis=ax if ax is None or isinstance(ax, int) else tuple(ax), keepdims=True)
    return x / ops.sqrt(ops.maximum(squares, epsilon))


def normalize(tensor, ord="euclidean", axis=None, name=None):
    """``tf.linalg.normalize``: ``(tensor / ‖tensor‖, ‖tensor‖)`` (the norm kept with size-1 axes)."""
    n = _tf_norm(tensor, ord, axis)
    return tensor / n, n


def _tf_norm(x, ord, axis):
    order = None if ord in ("euclidean", "fro") else ord
    return norm(x, ord=order, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=True)


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """``tf.linalg.matrix_rank``: the number of singular values above ``tol`` (an integer: no gradient)."""
    return constant(np.linalg.matrix_rank(ops._tensor(a)._value, tol=tol).astype(np.int32))


def expm(input, name=None):    # noqa: A002
    """``tf.linalg.expm``: ``e^A = Σ Aᵏ/k!``, by scaling and squaring: ``(e^(A/2ˢ))^(2ˢ)`` with ‖A/2ˢ‖ ≤ ½ and
    a Taylor series of 18 terms (converged to float64 precision there). Written with ``matmul``, so it is
    differentiable through the same products."""
    a = ops._tensor(input)
    size = float(np.max(np.abs(a._value).sum(axis=-2))) if a.size else 0.0
    s = max(0, int(np.ceil(np.log2(size))) + 1) if size > 0 else 0
    scaled = a / float(2 ** s)
    eye = constant(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy())
    result = eye
    for k in range(18, 0, -1):
        result = eye + ops.matmul(scaled, result) / float(k)
    for _ in range(s):
        result = ops.matmul(result, result)
    return result


def sqrtm(input, name=None):    # noqa: A002
    """``tf.linalg.sqrtm``: the principal square root ``X`` with ``X² = A`` (Denman–Beavers iteration, written
    with ``inv`` and ``matmul``, so it is differentiable); ``A`` must have no eigenvalue ≤ 0."""
    y = ops._tensor(input)
    z = constant(np.broadcast_to(np.eye(y.shape[-1], dtype=y.dtype), y.shape).copy())
    for _ in range(40):
        y, z = (y + inv(z)) / 2, (z + inv(y)) / 2
    return y


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """``tf.linalg.lu_reconstruct``: ``A = P·L·U`` from the packed factors of :func:`lu` (``L`` unit lower)."""
    lu_ = ops._tensor(lower_upper)
    n = lu_.shape[-1]
    low = ops.tril(lu_, -1) + np.eye(n, dtype=lu_.dtype)
    prod = ops.matmul(low, ops.triu(lu_))
    inverse = np.argsort(np.asarray(perm._value if hasattr(perm, "_value") else perm), axis=-1)
    return ops.take_along_axis(prod, np.broadcast_to(inverse[..., None], prod.shape), axis=-2)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """``tf.linalg.lu_solve``: ``X`` with ``A X = B``, ``A`` given by its packed LU factors."""
    return solve(lu_reconstruct(lower_upper, perm), rhs)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """``tf.linalg.lu_matrix_inverse``: ``A⁻¹`` from the packed LU factors."""
    return inv(lu_reconstruct(lower_upper, perm))


LUResult = namedtuple("LUResult", "lu p")


def lu(input, output_idx_type="int32", name=None):    # noqa: A002
    """``tf.linalg.lu``: the packed factors ``lu`` (``L`` below the diagonal, unit diagonal implied, ``U`` on and
    above) and the row permutation ``p`` with ``A[p] = L·U``. Computed by partial pivoting in numpy: a
    constant (no gradient through the factorization itself; differentiate ``solve``/``inv`` of ``A``)."""
    a = np.array(ops._tensor(input)._value, dtype=np.result_type(ops._tensor(input).dtype, np.float32))
    batch = a.shape[:-2]
    n = a.shape[-1]
    flat = a.reshape((-1, n, n)).copy()
    perms = np.tile(np.arange(n), (flat.shape[0], 1))
    for m, p in zip(flat, perms):
        for k in range(n):
            piv = k + int(np.argmax(np.abs(m[k:, k])))
            if piv != k:
                m[[k, piv]] = m[[piv, k]]
                p[[k, piv]] = p[[piv, k]]
            if m[k, k] != 0:
                m[k + 1:, k] /= m[k, k]
                m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    return LUResult(constant(flat.reshape(a.shape)), constant(perms.reshape(batch + (n,)).astype(output_idx_type)))


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """``tf.linalg.tridiagonal_matmul``: ``T·B`` with ``T`` given by its three diagonals (compact format:
    ``(..., 3, M)`` = superdiagonal, diagonal, subdiagonal)."""
    return ops.matmul(_tridiagonal(diagonals, diagonals_format, "tridiagonal_matmul"), rhs)


def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False, conjugate_rhs=False,
                      name=None, partial_pivoting=True, perturb_singular=False):
    """``tf.linalg.tridiagonal_solve``: ``X`` with ``T X = B`` (``T`` as in :func:`tridiagonal_matmul`)."""
    b = matrix_transpose(rhs) if transpose_rhs else rhs
    return solve(_tridiagonal(diagonals, diagonals_format, "tridiagonal_solve"), b)


def _tridiagonal(diagonals, diagonals_format, op):
    if diagonals_format == "matrix":
        return ops._tensor(diagonals)
    if diagonals_format != "compact":
        raise NotImplementedError(f"{op}: diagonals_format={diagonals_format!r} is not supported; give "
                                  "'compact' ((..., 3, M): super, main, sub) or 'matrix'.")
    d = ops._tensor(diagonals)
    return (diag(d[..., 0, :-1], k=1) + diag(d[..., 1, :]) + diag(d[..., 2, 1:], k=-1))


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32", name=None):
    """``tf.linalg.eye``: as ``adv.eye`` (TensorFlow's arguments)."""
    return ops.eye(num_rows, num_columns=num_columns, batch_shape=batch_shape, dtype=dtype)


def einsum(equation, *inputs, **kwargs):
    """``tf.linalg.einsum``: as ``adv.einsum``."""
    return ops.einsum(equation, *inputs)


def cross(a, b, name=None):
    """``tf.linalg.cross``: the cross product of 3-vectors along the last axis, as ``adv.cross``."""
    return ops.cross(a, b)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """``tf.clip_by_global_norm``: every tensor scaled by ``clip_norm / max(global_norm, clip_norm)``, so the
    list's joint norm is at most ``clip_norm``; returns ``(clipped_list, global_norm)`` (None entries stay None)."""
    norm_ = global_norm(t_list) if use_norm is None else ops._tensor(use_norm)
    scale = clip_norm / ops.maximum(norm_, clip_norm)
    return [None if t is None else t * scale for t in t_list], norm_


def __getattr__(name):
    """A TensorFlow name of ``tf.linalg`` that is out of scope here raises the reason and the fix (the table in
    ``base/tf_surface.py``); any other missing name raises Python's usual AttributeError."""
    from ..base.tf_surface import out_of_scope_message
    message = out_of_scope_message(f"tf.linalg.{name}", "autodiff_viz.linalg")
    if message is None:
        raise AttributeError(f"module 'autodiff_viz.linalg' has no attribute {name!r}", name=name)
    raise AttributeError(message)
