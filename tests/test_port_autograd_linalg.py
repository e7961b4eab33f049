"""HIPS autograd's tests/test_linalg.py, ported: np.linalg on tensors.

Each test names the autograd test it comes from. The functions call
``np.linalg.*`` on tensors (dispatched to ``adv.linalg``). autograd checks
most of these in reverse mode only ("fwd mode not yet implemented"); every
rule here has a JVP, so both modes are checked, to second order, against
finite differences (tests/autograd_port_check.py). Matrices are smaller than
autograd's, to keep the file fast.

Not ported (this package deliberately does not support it):
# - every *_complex test (test_vector_2norm_complex, test_frobenius_norm_complex,
#   test_frobenius_norm_axis_complex, test_vector_norm_ord_complex, test_norm_axis_complex,
#   test_norm_nuclear_complex, test_norm_nuclear_axis_complex, test_eigvalh_lower_complex,
#   test_eigvalh_upper_complex, test_svd_*_complex, test_svd_only_s_*_complex): no complex dtype here.
# - test_eig_real, test_eig_complex, test_eig_batched: np.linalg.eig of a general matrix has complex
#   eigenvalues and eigenvectors (same reason).
"""
import numpy as np
import pytest
from autograd_port_check import Draws, check_grads, fresh_draws  # noqa: F401  (fresh_draws: autouse)
from rule_cases_linalg import distinct_singular

import autodiff_viz as adv

rng = Draws(1)
R = rng.normals


def T(A):
    return np.swapaxes(A, -1, -2)


def rand_psd(D):
    mat = R(D, D)
    return mat @ mat.T


def check_symmetric_matrix_grads(fun, *args, **kwargs):
    """Check ``fun`` of a symmetric matrix built from the lower triangle of the argument."""
    def symmetrize(A):
        L = np.tril(A)
        return (L + T(L)) / 2.0
    check_grads(lambda A, *rest: fun(symmetrize(A), *rest), *args, **kwargs)


def test_inv():
    """autograd tests/test_linalg.py::test_inv"""
    D = 4
    mat = R(D, D)
    check_grads(lambda x: np.linalg.inv(x), mat @ mat + 1.0 * np.eye(D))


def test_pinv():
    """autograd tests/test_linalg.py::test_pinv: non-square, stacked, and square of fixed low rank

    autograd draws plain normal matrices; a few of those draws are so ill-conditioned (cond(xᵀx) ~ 1e4)
    that central differences of the second derivatives lose five digits. The matrices here have
    singular values 1, 2, 3, ... (tests/rule_cases_linalg.py), so the check tests the rule, not the luck.
    """
    N, D = 4, 2
    for M in range(N // 2, N + N // 2 + 1):
        check_grads(lambda x: np.linalg.pinv(x), distinct_singular((N, M))(rng))
        check_grads(lambda x: np.linalg.pinv(x), distinct_singular((D, N, M))(rng))
    # xᵀx has rank min(N, M): for M > N its zero singular values come out near 1e-16·s_max, right at
    # numpy's default cutoff (1e-15), so whether pinv drops them is chance; a cutoff of 1e-10 fixes the rank.
    fun_low_rank = lambda x: np.linalg.pinv(T(x) @ x, rcond=1e-10)  # noqa: E731
    for M in range(N // 2, N + N // 2 + 1):
        check_grads(fun_low_rank, distinct_singular((N, M))(rng))
        check_grads(fun_low_rank, distinct_singular((D, N, M))(rng))


def test_inv_3d():
    """autograd tests/test_linalg.py::test_inv_3d"""
    D = 3
    check_grads(lambda x: np.linalg.inv(x), R(D, D, D) + 5 * np.eye(D))
    check_grads(lambda x: np.linalg.inv(x), R(2, D, D, D) + 5 * np.eye(D))


def test_solve_arg1():
    """autograd tests/test_linalg.py::test_solve_arg1"""
    D = 4
    B = R(D, D - 1)
    check_grads(lambda a: np.linalg.solve(a, B), R(D, D) + 10.0 * np.eye(D))


def test_solve_arg1_1d():
    """autograd tests/test_linalg.py::test_solve_arg1_1d"""
    D = 4
    B = R(D)
    check_grads(lambda a: np.linalg.solve(a, B), R(D, D) + 10.0 * np.eye(D))


def test_solve_arg2():
    """autograd tests/test_linalg.py::test_solve_arg2"""
    D = 4
    A = R(D, D) + 1.0 * np.eye(D)
    check_grads(lambda b: np.linalg.solve(A, b), R(D, D - 1))


def test_solve_arg1_3d():
    """autograd tests/test_linalg.py::test_solve_arg1_3d (numpy 2: a stack of vectors as b[..., None])"""
    D = 3
    B = R(D + 1, D)
    check_grads(lambda A: np.linalg.solve(A, B[..., None])[..., 0], R(D + 1, D, D) + 5 * np.eye(D))


def test_solve_arg1_3d_3d():
    """autograd tests/test_linalg.py::test_solve_arg1_3d_3d"""
    D = 3
    B = R(D + 1, D, D + 2)
    check_grads(lambda A: np.linalg.solve(A, B), R(D + 1, D, D) + 5 * np.eye(D))


def test_det():
    """autograd tests/test_linalg.py::test_det"""
    check_grads(lambda x: np.linalg.det(x), R(4, 4))


def test_det_3d():
    """autograd tests/test_linalg.py::test_det_3d"""
    check_grads(lambda x: np.linalg.det(x), R(3, 3, 3))


def test_slogdet():
    """autograd tests/test_linalg.py::test_slogdet (negative determinants too)"""
    def fun(x):
        _sign, logdet = np.linalg.slogdet(x)
        return logdet
    mat = R(4, 4)
    check_grads(fun, mat)
    check_grads(fun, -mat)


def test_slogdet_3d():
    """autograd tests/test_linalg.py::test_slogdet_3d"""
    mat = np.stack([rand_psd(4) + 5 * np.eye(4) for _ in range(3)])
    check_grads(lambda x: np.sum(np.linalg.slogdet(x)[1]), mat)


def test_vector_2norm():
    """autograd tests/test_linalg.py::test_vector_2norm"""
    check_grads(lambda x: np.linalg.norm(x), R(6))


def test_norm_list_of_boxes():
    """autograd tests/test_linalg.py::test_norm_list_of_boxes: d/dx √(x² + (x + 2)²) at 0 is 1
    (adv.linalg.norm: np.linalg.norm converts a list with np.array before any dispatch)"""
    assert float(adv.grad(lambda x: adv.linalg.norm([x, x + 2]))(0.0)) == 1.0
    assert float(adv.grad(lambda x: adv.linalg.norm((x, x + 2)))(0.0)) == 1.0


def test_frobenius_norm():
    """autograd tests/test_linalg.py::test_frobenius_norm"""
    check_grads(lambda x: np.linalg.norm(x), R(4, 3))


def test_frobenius_norm_axis():
    """autograd tests/test_linalg.py::test_frobenius_norm_axis"""
    check_grads(lambda x: np.linalg.norm(x, axis=(0, 1)), R(4, 3, 2))


@pytest.mark.parametrize("ord", range(2, 5))
def test_vector_norm_ord(ord):
    """autograd tests/test_linalg.py::test_vector_norm_ord"""
    check_grads(lambda x: np.linalg.norm(x, ord=ord), R(6))


@pytest.mark.parametrize("axis", range(3))
def test_norm_axis(axis):
    """autograd tests/test_linalg.py::test_norm_axis"""
    check_grads(lambda x: np.linalg.norm(x, axis=axis), R(4, 3, 2))


def test_norm_nuclear():
    """autograd tests/test_linalg.py::test_norm_nuclear (order 2 here: the SVD has a JVP)"""
    check_grads(lambda x: np.linalg.norm(x, ord="nuc"), R(4, 3))


def test_norm_nuclear_axis():
    """autograd tests/test_linalg.py::test_norm_nuclear_axis"""
    check_grads(lambda x: np.linalg.norm(x, ord="nuc", axis=(0, 1)), R(4, 3, 2))


def _eigh_both(UPLO):
    def fun(x):
        w, v = np.linalg.eigh(x, UPLO)
        return (w, v)
    return fun


def test_eigvalh_lower():
    """autograd tests/test_linalg.py::test_eigvalh_lower: numpy reads the lower triangle of any matrix"""
    check_grads(_eigh_both("L"), R(4, 4))


def test_eigvalh_upper():
    """autograd tests/test_linalg.py::test_eigvalh_upper"""
    check_grads(_eigh_both("U"), R(4, 4))


def test_eigvalh_lower_broadcasting():
    """autograd tests/test_linalg.py::test_eigvalh_lower_broadcasting"""
    D = 4
    mat = R(2, 3, D, D) + 10 * np.eye(D)
    check_grads(_eigh_both("L"), np.einsum("...ij,...kj->...ik", mat, mat))


def test_eigvalh_upper_broadcasting():
    """autograd tests/test_linalg.py::test_eigvalh_upper_broadcasting"""
    D = 4
    mat = R(2, 3, D, D) + 10 * np.eye(D)
    check_grads(_eigh_both("U"), np.einsum("...ij,...kj->...ik", mat, mat))


def test_cholesky():
    """autograd tests/test_linalg.py::test_cholesky"""
    check_symmetric_matrix_grads(lambda A: np.linalg.cholesky(A), rand_psd(4))


def test_cholesky_broadcast():
    """autograd tests/test_linalg.py::test_cholesky_broadcast"""
    A = np.stack([rand_psd(4) for _ in range(3)])
    check_symmetric_matrix_grads(lambda A: np.linalg.cholesky(A), A)


def test_cholesky_reparameterization_trick():
    """autograd tests/test_linalg.py::test_cholesky_reparameterization_trick"""
    def fun(A):
        z = np.dot(np.linalg.cholesky(A), np.random.RandomState(0).randn(A.shape[0]))
        return np.linalg.norm(z)
    check_symmetric_matrix_grads(fun, rand_psd(4))


def _svd_all(x):
    u, s, v = np.linalg.svd(x, full_matrices=False)
    return (u, s, v)


def test_svd_wide_2d():
    """autograd tests/test_linalg.py::test_svd_wide_2d"""
    check_grads(_svd_all, R(3, 5))


def test_svd_wide_3d():
    """autograd tests/test_linalg.py::test_svd_wide_3d"""
    check_grads(_svd_all, R(2, 3, 5))


def test_svd_square_2d():
    """autograd tests/test_linalg.py::test_svd_square_2d"""
    check_grads(_svd_all, R(4, 4))


def test_svd_square_3d():
    """autograd tests/test_linalg.py::test_svd_square_3d"""
    check_grads(_svd_all, R(3, 4, 4))


def test_svd_tall_2d():
    """autograd tests/test_linalg.py::test_svd_tall_2d"""
    check_grads(_svd_all, R(5, 3))


def test_svd_tall_3d():
    """autograd tests/test_linalg.py::test_svd_tall_3d"""
    check_grads(_svd_all, R(2, 5, 3))


def test_svd_only_s_2d():
    """autograd tests/test_linalg.py::test_svd_only_s_2d"""
    check_grads(lambda x: np.linalg.svd(x, full_matrices=False, compute_uv=False), R(5, 3))


def test_svd_only_s_3d():
    """autograd tests/test_linalg.py::test_svd_only_s_3d"""
    check_grads(lambda x: np.linalg.svd(x, full_matrices=False, compute_uv=False), R(4, 5, 3))
