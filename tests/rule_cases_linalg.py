"""Finite-difference cases for autodiff_viz/core/rules/linalg.py (collected by tests/test_rules.py).

``CASES`` maps a rule name to a list of ``(input makers, params)``, as in test_rules.py.

The makers keep each matrix function away from where it has no derivative:
well-conditioned square matrices (inverse, determinant, solve), symmetric
positive definite ones (Cholesky), symmetric ones with well-separated
eigenvalues (eigh), and matrices with distinct non-zero singular values (SVD,
QR). The eigh and Cholesky rules read one triangle, as numpy: finite
differences of single entries see exactly that, and so does the gradient.
"""
import numpy as np
from rule_makers import const, real


def well_conditioned(shape):
    """±n·I plus noise in (−½, ½): strictly diagonally dominant, so invertible with a
    small condition number for every draw, and either sign of determinant."""
    def make(rng):
        n = shape[-1]
        a = rng.uniform(-0.5, 0.5, size=shape) + n * np.eye(n) * rng.choice([-1.0, 1.0], size=shape[:-2] + (1, 1))
        return a
    return make


def spd(shape):
    """Symmetric positive definite: B Bᵀ + n·I."""
    def make(rng):
        b = rng.normal(size=shape)
        return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])
    return make


def symmetric_separated(shape):
    """Symmetric, with eigenvalues at least 1 apart (eigenvectors have a derivative)."""
    def make(rng):
        n = shape[-1]
        q, _ = np.linalg.qr(rng.normal(size=shape))
        lam = np.arange(n) * 1.5 - n / 2 + rng.uniform(-0.2, 0.2, shape[:-1])
        return (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)
    return make


def distinct_singular(shape):
    """Singular values 1, 2, 3, ... (plus a little noise): every SVD factor has a derivative."""
    def make(rng):
        m, n = shape[-2:]
        k = min(m, n)
        u, _ = np.linalg.qr(rng.normal(size=shape[:-2] + (m, k)))
        v, _ = np.linalg.qr(rng.normal(size=shape[:-2] + (n, k)))
        s = np.arange(1, k + 1) + rng.uniform(-0.2, 0.2, shape[:-2] + (k,))
        return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)
    return make


CASES = {
    "inv": [([well_conditioned((3, 3))], {}), ([well_conditioned((2, 2, 2))], {})],
    "det": [([well_conditioned((3, 3))], {}), ([well_conditioned((2, 3, 3))], {}),
            ([const(np.array([[[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]],
                              [[1., 2., 0.], [2., 4., 0.], [0., 0., 3.]]]))],
             {})],      # singular (ranks 2 and 2): the gradient is the cofactor matrix
    "slogdet": [([well_conditioned((3, 3))], {}), ([well_conditioned((2, 2, 2))], {})],
    "slogdet_sign": [([well_conditioned((3, 3))], {})],
    "solve": [([well_conditioned((3, 3)), real((3,))], {}),
              ([well_conditioned((3, 3)), real((3, 2))], {}),
              ([well_conditioned((2, 3, 3)), real((3,))], {}),
              ([well_conditioned((3, 3)), real((2, 3, 2))], {}),
              ([well_conditioned((2, 1, 2, 2)), real((3, 2, 1))], {})],
    "pinv": [([distinct_singular((3, 2))], {"rcond": None}), ([distinct_singular((2, 3))], {"rcond": 1e-10}),
             ([well_conditioned((2, 2, 2))], {"rcond": None})],
    "cholesky": [([spd((3, 3))], {"upper": False}), ([spd((2, 2, 2))], {"upper": True})],
    "eigvalsh": [([symmetric_separated((3, 3))], {"UPLO": "L"}), ([symmetric_separated((2, 2, 2))], {"UPLO": "U"})],
    "eigh_vectors": [([symmetric_separated((3, 3))], {"UPLO": "L"}),
                     ([symmetric_separated((2, 2, 2))], {"UPLO": "U"}),
                     ([real((3, 3))], {"UPLO": "L"})],
    "svdvals": [([distinct_singular((3, 2))], {}), ([distinct_singular((2, 2, 3))], {})],
    "svd_u": [([distinct_singular((3, 2))], {}), ([distinct_singular((2, 3))], {}),
              ([distinct_singular((2, 3, 3))], {})],
    "svd_vh": [([distinct_singular((3, 2))], {}), ([distinct_singular((2, 3))], {}),
               ([distinct_singular((2, 3, 3))], {})],
    "qr_q": [([distinct_singular((3, 2))], {}), ([distinct_singular((2, 3, 3))], {})],
    "qr_r": [([distinct_singular((3, 2))], {}), ([distinct_singular((2, 3, 3))], {})],
}
