"""Rule-table section: linear algebra (``adv.linalg``).

Rules here follow the conventions of :mod:`autodiff_viz.rules` (cotangents
with leading batch axes, VJPs written with rule calls). Every rule takes
stacked matrices ``(..., m, n)`` as numpy does: the leading axes of an input
are a stack of independent matrices, and the leading axes of a cotangent
``ḡ`` (shape ``batch + y.shape``) broadcast in front of them, so each formula
below is written once, with ``@`` and the last two axes, and serves a single
matrix, a stack, and a whole Jacobian's worth of cotangents alike.

Notation: ``Y`` the output, ``ḡ`` its cotangent, ``Aᵀ`` a transpose of the
last two axes, ``sym(X) = (X + Xᵀ)/2``.

Functions with several outputs (``eigh``, ``svd``, ``qr``, ``slogdet``) are
one rule per output (``eigvalsh`` and ``eigh_vectors``, ``svdvals``,
``svd_u`` and ``svd_vh`` ...), so each edge of a graph carries its own factor
and each output's gradient formula stands alone; ``adv.linalg`` puts the
outputs back together in numpy's result tuples.

``eigvalsh``/``eigh_vectors`` and ``cholesky`` compute exactly what numpy
computes: they read one triangle of ``A`` (the lower one unless ``UPLO="U"``
/ ``upper=True``) as a symmetric matrix ``S``. Their gradient is the
derivative of that function of all n² entries: it lives on the triangle read,
with the off-diagonal entries counted twice (each stands for two entries of
``S``), and zero on the other side. For ``A = B Bᵀ`` or ``(M + Mᵀ)/2`` the
gradient with respect to ``B`` or ``M`` is the familiar symmetric one.
Eigenvector and singular-vector gradients divide by differences of
eigenvalues (``1/(λⱼ − λᵢ)``): they are undefined where two are equal. There
(within ``64·n·ε`` of the largest magnitude) the rules use 0 for that pair,
which is right when the loss does not depend on how a basis of the repeated
eigenspace is chosen (e.g. ``V f(Λ) Vᵀ``) and meaningless otherwise (no
gradient exists then).
"""
from __future__ import annotations

import numpy as np

from ..engine import lift, unbroadcast
from ..tensor import check_nbytes
from . import _mT, _raw, define, getitem, where
from . import sum as _sum


def _sym(a):
    return (a + _mT(a)) * 0.5


def _col(v):
    """``(..., n)`` as columns ``(..., n, 1)``."""
    return v.reshape(v.shape + (1,))


def _row(v):
    """``(..., n)`` as rows ``(..., 1, n)``."""
    return v.reshape(v.shape[:-1] + (1, v.shape[-1]))


def _trace(m):
    return _sum(m, axis=(-2, -1), keepdims=False)


def _tril(m, k=0):
    n = m.shape[-1]
    return m * np.tri(n, n, k)


def _gap_inverse(w, square):
    """``F[..., i, j] = 1/(wⱼ − wᵢ)`` (or of ``wⱼ² − wᵢ²``), and 0 on the diagonal and where they tie."""
    if square:
        w = w * w
    wr = _raw(w)
    n = wr.shape[-1]
    diff_r = wr[..., None, :] - wr[..., :, None]
    scale = np.max(np.abs(wr), axis=-1, keepdims=True)[..., None]
    mask = np.abs(diff_r) > 64 * n * np.finfo(wr.dtype).eps * np.maximum(scale, np.finfo(wr.dtype).tiny)
    diff = _row(w) - _col(w)
    return mask.astype(wr.dtype) / where(mask, diff, 1.0)


def _safe_reciprocal(s):
    """``1/s`` where ``s`` is not 0, else 0 (singular values of a rank-deficient matrix)."""
    ok = _raw(s) > 0
    return ok.astype(_raw(s).dtype) / where(ok, s, 1.0)


# ---------------------------------------------------------------------------
# Inverse, determinants, solve
# ---------------------------------------------------------------------------
def _det(x):
    return np.asarray(np.linalg.det(x))


def _logabsdet(x):
    return np.asarray(np.linalg.slogdet(x)[1])


def _inv_t(x):
    return _mT(inv(x))


def _dets(g):
    """Cotangents ``(batch..., stack...)`` of a per-matrix scalar as ``(..., 1, 1)``."""
    return g.reshape(g.shape + (1, 1))


def _cofactors(y, x):
    """``C = ∂det A/∂A``, the cofactor matrix ``Cᵢⱼ = (−1)ⁱ⁺ʲ det Mᵢⱼ`` (``Mᵢⱼ``: ``A`` without row i, column j).

    Where every matrix of the stack is invertible (``det A ≠ 0``) it is ``det(A)·A⁻ᵀ``: one inverse,
    from the same LU factors as ``det``, so a tiny ``det`` and a huge ``A⁻¹`` cancel and the product
    stays accurate. At a singular matrix ``A⁻¹`` does not exist but ``C`` does (``det`` is a
    polynomial: for ``[[1, 2], [2, 4]]``, ``C = [[4, −2], [−2, 1]]``), so it is taken from the minors
    themselves: one gather of the n² minors and one ``det`` of the stack, O(n⁵) but only there. Both
    ways are rule calls, so a recorded backward pass (second derivatives) is exact at singular
    matrices too.
    """
    if np.all(_raw(y) != 0):
        return _dets(y) * _inv_t(x)
    n = x.shape[-1]
    check_nbytes("det (its gradient at a singular matrix)", x.shape[:-2] + (n, n, n - 1, n - 1), _raw(x).dtype,
                 "There the gradient comes from the n² minors of A; keep A away from singular (e.g. A + εI).")
    keep = np.array([[k for k in range(n) if k != i] for i in range(n)], dtype=np.intp).reshape(n, n - 1)
    index = (slice(None),) * (x.ndim - 2) + (keep[:, None, :, None], keep[None, :, None, :])
    minors = getitem(x, index=index, lead=0)               # (..., i, j, n − 1, n − 1)
    signs = 1.0 - 2.0 * (np.add.outer(np.arange(n), np.arange(n)) % 2)
    return det(minors) * signs.astype(_raw(y).dtype)


inv = define(
    "inv", np.linalg.inv, doc="Y = A⁻¹ (A square and invertible)",
    A=("−A⁻ᵀ ḡ A⁻ᵀ", lambda g, y, x: -(_mT(y) @ g @ _mT(y)), lambda dx, y, x: -(y @ dx @ y)))

det = define(
    "det", _det, doc="y = det A (its gradient, the cofactor matrix, exists also where A is singular)",
    A=("cof(A) = det(A) · A⁻ᵀ", lambda g, y, x: _dets(g) * _cofactors(y, x),
       lambda dx, y, x: _trace(_cofactors(y, x) * dx)))


def _log_gradient(y, x):
    """``∂ ln|det A|/∂A = A⁻ᵀ``; at a singular ``A`` (``y = −∞``) it is infinite: refused, naming the op."""
    if np.any(np.isneginf(_raw(y))):
        raise np.linalg.LinAlgError(
            f"slogdet: a matrix of the stack of shape {x.shape} is singular (ln|det A| = −∞), where the gradient "
            "A⁻ᵀ of ln|det A| is infinite. Use adv.linalg.det, whose gradient (the cofactor matrix) exists "
            "there, or keep A away from singular (e.g. A + εI).")
    return _inv_t(x)


slogdet = define(
    "slogdet", _logabsdet, doc="y = ln |det A| (the logabsdet of numpy's slogdet)",
    A=("A⁻ᵀ", lambda g, y, x: _dets(g) * _log_gradient(y, x), lambda dx, y, x: _trace(_log_gradient(y, x) * dx)))

slogdet_sign = define(
    "slogdet_sign", lambda x: np.asarray(np.linalg.slogdet(x)[0]),
    doc="y = sign of det A (±1, or 0 for a singular A): piecewise constant, no gradient", A=None)


def _solve_parts(y, a, b):
    """``(is b a vector, Y as matrices)``: numpy 2 reads ``b`` as a vector only when it is 1-D."""
    vec = b.ndim == 1
    return vec, (_col(y) if vec else y)


_last_adjoint = [None]   # (ḡ, A, A⁻ᵀ ḡ) of the latest backward step through a solve


def _solve_vjp_b_full(g, y, a, b):
    """``A⁻ᵀ ḡ`` as matrices, before summing over axes that broadcasting added.

    Both inputs' VJPs need it (``ḡ_B = A⁻ᵀ ḡ``, ``ḡ_A = −A⁻ᵀ ḡ Yᵀ``) and the
    backward walk asks for them one after the other with the same ``ḡ`` and
    ``A``: the solve is done once and kept for the second call (matched by
    identity, so a new ``ḡ`` or ``A`` never reuses it). That makes a
    backward step one factorisation instead of two.
    """
    last = _last_adjoint[0]
    if last is not None and last[0] is g and last[1] is a:
        return last[2]
    vec, _ = _solve_parts(y, a, b)
    out = solve(_mT(a), _col(g) if vec else g)
    _last_adjoint[0] = (g, a, out)
    return out


def _solve_vjp_b(g, y, a, b):
    gb = _solve_vjp_b_full(g, y, a, b)
    if b.ndim == 1:
        gb = gb.reshape(gb.shape[:-1])
    return unbroadcast(gb, b.shape, y.ndim)


def _solve_vjp_a(g, y, a, b):
    vec, ym = _solve_parts(y, a, b)
    ga = -(_solve_vjp_b_full(g, y, a, b) @ _mT(ym))
    return unbroadcast(ga, a.shape, ym.ndim)


def _solve_jvp_a(da, y, a, b):
    vec, ym = _solve_parts(y, a, b)
    dy = -solve(a, lift(da, a.ndim, ym.ndim) @ ym)
    return dy.reshape(dy.shape[:-1]) if vec else dy


def _solve_jvp_b(db, y, a, b):
    vec = b.ndim == 1
    db = lift(db, b.ndim, y.ndim)
    dy = solve(a, _col(db) if vec else db)
    return dy.reshape(dy.shape[:-1]) if vec else dy


def numpy_solve(a, b):
    """``np.linalg.solve`` with numpy 2's reading of ``b`` (a vector only when 1-D) on numpy 1.26 too.

    numpy 1.x reads ``b`` as a stack of vectors whenever ``b.ndim == a.ndim - 1``; broadcasting the stacks to
    one shape first gives ``b`` as many axes as ``a``, which both versions read as matrices.
    """
    if b.ndim == 1:
        return numpy_solve(a, b[:, None])[..., 0]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))


solve = define(
    "solve", numpy_solve, doc="Y = A⁻¹ B, the solution of A Y = B (B a vector when 1-D)",
    A=("−A⁻ᵀ ḡ Yᵀ", _solve_vjp_a, _solve_jvp_a),
    B=("A⁻ᵀ ·", _solve_vjp_b, _solve_jvp_b))


def _pinv(x, rcond):
    return np.linalg.pinv(x) if rcond is None else np.linalg.pinv(x, rcond=rcond)


def _pinv_vjp(g, y, x, rcond):
    p, pt = y, _mT(y)
    m, n = x.shape[-2], x.shape[-1]
    left = np.eye(m) - x @ p            # I − A A⁺, symmetric
    right = np.eye(n) - p @ x           # I − A⁺ A, symmetric
    gt = _mT(g)
    return -(pt @ g @ pt) + left @ gt @ (p @ pt) + (pt @ p) @ gt @ right


def _pinv_jvp(dx, y, x, rcond):
    p, pt = y, _mT(y)
    m, n = x.shape[-2], x.shape[-1]
    dxt = _mT(dx)
    return -(p @ dx @ p) + (p @ pt) @ dxt @ (np.eye(m) - x @ p) + (np.eye(n) - p @ x) @ dxt @ (pt @ p)


pinv = define(
    "pinv", _pinv, doc="Y = A⁺, the Moore–Penrose pseudo-inverse (gradient where the rank is locally constant)",
    A=("−A⁺ᵀḡA⁺ᵀ + (I − AA⁺)ḡᵀA⁺A⁺ᵀ + A⁺ᵀA⁺ḡᵀ(I − A⁺A)", _pinv_vjp, _pinv_jvp))


# ---------------------------------------------------------------------------
# Functions of a symmetric matrix that read one triangle (Cholesky, eigh)
# ---------------------------------------------------------------------------
def _read_triangle(dx, lower):
    """The symmetric S numpy reads from one triangle of ``dx``: ``tril(dx) + tril(dx, −1)ᵀ`` for "L"."""
    if not lower:
        dx = _mT(dx)
    low = _tril(dx, -1)
    return low + _mT(low) + dx * np.eye(dx.shape[-1])


def _onto_triangle(gs, lower):
    """The transpose of :func:`_read_triangle` for a symmetric ``gs``: off-diagonals count twice, on one side."""
    low = _tril(gs, -1)
    out = (low + low) + gs * np.eye(gs.shape[-1])
    return out if lower else _mT(out)


def _phi(m):
    """The lower triangle with its diagonal halved (the map in dL = L Φ(L⁻¹ dS L⁻ᵀ))."""
    n = m.shape[-1]
    return m * (np.tri(n, n) - 0.5 * np.eye(n))


def _cholesky_vjp(g, y, x, upper):
    low, g = (_mT(y), _mT(g)) if upper else (y, g)
    l_inv = inv(low)
    p = _mT(l_inv) @ _phi(_mT(low) @ g) @ l_inv
    return _onto_triangle(_sym(p), not upper)


def _cholesky_jvp(dx, y, x, upper):
    low = _mT(y) if upper else y
    l_inv = inv(low)
    dl = low @ _phi(l_inv @ _read_triangle(dx, not upper) @ _mT(l_inv))
    return _mT(dl) if upper else dl


def numpy_cholesky(x, upper=False):
    """``np.linalg.cholesky(x, upper=upper)`` (numpy 2) on numpy 1.26 too: the upper factor of ``x`` is the
    transpose of the lower factor of ``xᵀ``, which reads ``x``'s upper triangle."""
    return _mT(np.linalg.cholesky(_mT(x))) if upper else np.linalg.cholesky(x)


cholesky = define(
    "cholesky", numpy_cholesky,
    doc="L lower triangular with L Lᵀ = A (upper: Lᵀ), A symmetric positive definite; numpy reads one triangle",
    A=("L⁻ᵀ Φ(Lᵀḡ) L⁻¹ on the triangle read", _cholesky_vjp, _cholesky_jvp))


def _eigvalsh_vjp(g, y, x, UPLO):
    v = eigh_vectors(x, UPLO=UPLO)
    return _onto_triangle((v * _row(g)) @ _mT(v), UPLO == "L")


def _eigvalsh_jvp(dx, y, x, UPLO):
    v = eigh_vectors(x, UPLO=UPLO)
    return _sum(v * (_read_triangle(dx, UPLO == "L") @ v), axis=(-2,), keepdims=False)


eigvalsh = define(
    "eigvalsh", lambda x, UPLO: np.linalg.eigvalsh(x, UPLO),
    doc="λ = eigenvalues of the symmetric matrix numpy reads from the UPLO triangle of A, ascending",
    A=("vᵢvᵢᵀ on the triangle read", _eigvalsh_vjp, _eigvalsh_jvp))


def _eigh_vectors_vjp(g, y, x, UPLO):
    v = y
    f = _gap_inverse(eigvalsh(x, UPLO=UPLO), square=False)
    return _onto_triangle(_sym(v @ (f * (_mT(v) @ g)) @ _mT(v)), UPLO == "L")


def _eigh_vectors_jvp(dx, y, x, UPLO):
    v = y
    f = _gap_inverse(eigvalsh(x, UPLO=UPLO), square=False)
    return v @ (f * (_mT(v) @ _read_triangle(dx, UPLO == "L") @ v))


eigh_vectors = define(
    "eigh_vectors", lambda x, UPLO: np.linalg.eigh(x, UPLO)[1],
    doc="V = unit eigenvectors (columns, ascending eigenvalues) of the symmetric matrix read from the UPLO "
        "triangle; undefined for repeated eigenvalues",
    A=("V (F ∘ Vᵀḡ) Vᵀ on the triangle read, Fᵢⱼ = 1/(λⱼ − λᵢ)",
       _eigh_vectors_vjp, _eigh_vectors_jvp))


# ---------------------------------------------------------------------------
# Singular value decomposition (thin: A = U diag(s) Vh, k = min(m, n))
# ---------------------------------------------------------------------------
def _svdvals_vjp(g, y, x):
    return (svd_u(x) * _row(g)) @ svd_vh(x)


def _svdvals_jvp(dx, y, x):
    return _sum(svd_u(x) * (dx @ _mT(svd_vh(x))), axis=(-2,), keepdims=False)


svdvals = define(
    "svdvals", lambda x: np.linalg.svd(x, compute_uv=False),
    doc="s = singular values of A, descending",
    A=("uᵢvᵢᵀ", _svdvals_vjp, _svdvals_jvp))


def _svd_parts(x):
    u, s, vh = svd_u(x), svdvals(x), svd_vh(x)
    return u, s, vh, _gap_inverse(s, square=True), _safe_reciprocal(s)


def _svd_u_vjp(g, y, x):
    u, s, vh, f, s_inv = _svd_parts(x)
    j = _mT(u) @ g
    inside = u @ (f * (j - _mT(j))) @ (_col(s) * vh)
    outside = ((g - u @ j) * _row(s_inv)) @ vh
    return inside + outside


def _svd_vh_vjp(g, y, x):
    u, s, vh, f, s_inv = _svd_parts(x)
    j = vh @ _mT(g)                      # Vᵀ V̄
    inside = (u * _row(s)) @ (f * (j - _mT(j))) @ vh
    outside = (u * _row(s_inv)) @ (g - (g @ _mT(vh)) @ vh)
    return inside + outside


def _svd_dp(dx, u, vh):
    return _mT(u) @ dx @ _mT(vh)


def _svd_u_jvp(dx, y, x):
    u, s, vh, f, s_inv = _svd_parts(x)
    dp = _svd_dp(dx, u, vh)
    return u @ (f * (dp * _row(s) + _col(s) * _mT(dp))) + (dx @ _mT(vh) - u @ dp) * _row(s_inv)


def _svd_vh_jvp(dx, y, x):
    u, s, vh, f, s_inv = _svd_parts(x)
    dp = _svd_dp(dx, u, vh)
    v = _mT(vh)
    dv = v @ (f * (_col(s) * dp + _mT(dp) * _row(s))) + (_mT(dx) @ u - v @ _mT(dp)) * _row(s_inv)
    return _mT(dv)


svd_u = define(
    "svd_u", lambda x: np.linalg.svd(x, full_matrices=False)[0],
    doc="U of the thin SVD A = U diag(s) Vh (needs distinct, non-zero singular values)",
    A=("U (F ∘ (Uᵀḡ − ḡᵀU)) S Vh + (I − UUᵀ) ḡ S⁻¹ Vh, Fᵢⱼ = 1/(sⱼ² − sᵢ²)",
       _svd_u_vjp, _svd_u_jvp))

svd_vh = define(
    "svd_vh", lambda x: np.linalg.svd(x, full_matrices=False)[2],
    doc="Vh of the thin SVD A = U diag(s) Vh (needs distinct, non-zero singular values)",
    A=("U S (F ∘ (Vᵀḡᵀ − ḡV)) Vh + U S⁻¹ ḡ (I − VVᵀ), Fᵢⱼ = 1/(sⱼ² − sᵢ²)",
       _svd_vh_vjp, _svd_vh_jvp))


# ---------------------------------------------------------------------------
# QR (reduced, m ≥ n: A = Q R, Qᵀ Q = I, R upper triangular; adv.linalg.qr builds m < n from these)
# ---------------------------------------------------------------------------
def _copyltu(m):
    """The symmetric matrix with ``m``'s lower triangle."""
    low = _tril(m, -1)
    return low + _mT(low) + m * np.eye(m.shape[-1])


def _times_r_inv_t(m, r):
    """``m R⁻ᵀ``, by a solve rather than an inverse."""
    return _mT(solve(r, _mT(m)))


def _qr_q_vjp(g, y, x):
    q, r = y, qr_r(x)
    return _times_r_inv_t(g - q @ _copyltu(_mT(g) @ q), r)


def _qr_r_vjp(g, y, x):
    q, r = qr_q(x), y
    return _times_r_inv_t(q @ _copyltu(r @ _mT(g)), r)


def _qr_jvp_parts(dx, x):
    q, r = qr_q(x), qr_r(x)
    dx_r_inv = _mT(solve(_mT(r), _mT(dx)))        # dA R⁻¹
    m = _mT(q) @ dx_r_inv
    low = _tril(m, -1)
    return q, r, dx_r_inv, m, low - _mT(low)


def _qr_q_jvp(dx, y, x):
    q, r, dx_r_inv, m, omega = _qr_jvp_parts(dx, x)
    return q @ omega + dx_r_inv - q @ m


def _qr_r_jvp(dx, y, x):
    q, r, dx_r_inv, m, omega = _qr_jvp_parts(dx, x)
    return (m - omega) @ r


qr_q = define(
    "qr_q", lambda x: np.linalg.qr(x, mode="reduced")[0],
    doc="Q of the reduced QR A = Q R (m ≥ n, full column rank)",
    A=("(ḡ − Q copyltu(ḡᵀQ)) R⁻ᵀ", _qr_q_vjp, _qr_q_jvp))

qr_r = define(
    "qr_r", lambda x: np.linalg.qr(x, mode="reduced")[1],
    doc="R of the reduced QR A = Q R (m ≥ n, full column rank)",
    A=("Q copyltu(R ḡᵀ) R⁻ᵀ", _qr_r_vjp, _qr_r_jvp))
