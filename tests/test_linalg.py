"""``adv.linalg``: numpy's values, gradients against finite differences (first and second order), and errors.

The rules alone are checked by tests/test_rules.py (cases in rule_cases_linalg.py);
here the user-facing functions are: their results equal numpy's, whole functions
built from them have the right gradients in both modes, Hessians work (an outer
tape records the backward pass), and bad matrices are refused with a clear error
before anything is recorded.
"""
import numpy as np
import pytest
from rule_cases_linalg import distinct_singular, spd, symmetric_separated, well_conditioned

import autodiff_viz as adv

L = adv.linalg


def _make(maker, seed=0):
    return maker(np.random.default_rng(seed))


def _assert_grads(f, *args, order=1):
    """Reverse and forward mode of ``f`` (and of its gradient, for order 2) agree with finite differences."""
    report = adv.check_grads(f, list(args), rtol=1e-5, atol=1e-6)
    assert report.ok and not any(r.note for r in report.rows), str(report)
    if order == 2:
        for k in range(len(args)):
            report = adv.check_grads(adv.grad(f, k), list(args), rtol=1e-4, atol=1e-5)
            assert report.ok and not any(r.note for r in report.rows), str(report)


# ---------------------------------------------------------------------------
# Values: the same as numpy, single matrices and stacks
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_values_match_numpy(shape):
    a = _make(well_conditioned(shape))
    s = _make(spd(shape))
    b = np.random.default_rng(1).normal(size=shape[:-1] + (2,))
    np.testing.assert_allclose(L.inv(a).numpy(), np.linalg.inv(a))
    np.testing.assert_allclose(L.det(a).numpy(), np.linalg.det(a))
    sign, logabsdet = L.slogdet(a)
    np.testing.assert_array_equal(sign.numpy(), np.linalg.slogdet(a).sign)
    np.testing.assert_allclose(logabsdet.numpy(), np.linalg.slogdet(a).logabsdet)
    np.testing.assert_allclose(L.solve(a, b).numpy(), np.linalg.solve(a, b))
    np.testing.assert_allclose(L.cholesky(s).numpy(), np.linalg.cholesky(s))
    np.testing.assert_allclose(L.cholesky(s, upper=True).numpy(), np.linalg.cholesky(s, upper=True))
    w, v = L.eigh(s)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigh(s).eigenvalues)
    np.testing.assert_allclose(v.numpy(), np.linalg.eigh(s).eigenvectors)
    np.testing.assert_allclose(L.eigvalsh(s).numpy(), np.linalg.eigvalsh(s))
    u, sv, vh = L.svd(a)
    ref = np.linalg.svd(a)
    for got, want in zip((u, sv, vh), ref):
        np.testing.assert_allclose(got.numpy(), want)
    np.testing.assert_allclose(L.svd(a, compute_uv=False).numpy(), np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose(L.svdvals(a).numpy(), np.linalg.svdvals(a))
    q, r = L.qr(a)
    np.testing.assert_allclose(q.numpy(), np.linalg.qr(a).Q)
    np.testing.assert_allclose(r.numpy(), np.linalg.qr(a).R)
    np.testing.assert_allclose(L.qr(a, mode="r").numpy(), np.linalg.qr(a, mode="r"))
    np.testing.assert_allclose(L.pinv(a).numpy(), np.linalg.pinv(a))
    for n in (-2, 0, 1, 3, 5):
        np.testing.assert_allclose(L.matrix_power(a, n).numpy(), np.linalg.matrix_power(a, n), atol=1e-12)
    np.testing.assert_allclose(L.trace(a).numpy(), np.linalg.trace(a))
    np.testing.assert_allclose(L.trace(a, offset=1).numpy(), np.linalg.trace(a, offset=1))
    np.testing.assert_allclose(L.matrix_transpose(a).numpy(), np.linalg.matrix_transpose(a))


def test_rectangular_values_match_numpy():
    a = _make(distinct_singular((4, 2)))
    u, s, vh = L.svd(a, full_matrices=False)
    ref = np.linalg.svd(a, full_matrices=False)
    for got, want in zip((u, s, vh), ref):
        np.testing.assert_allclose(got.numpy(), want)
    q, r = L.qr(a)
    np.testing.assert_allclose(q.numpy(), np.linalg.qr(a).Q)
    np.testing.assert_allclose(L.pinv(a).numpy(), np.linalg.pinv(a))
    x, y, z = np.ones(3), np.arange(6.0).reshape(3, 2), np.arange(2.0)
    np.testing.assert_allclose(L.multi_dot([x, y, z]).numpy(), np.linalg.multi_dot([x, y, z]))


def test_results_are_numpys_named_tuples():
    s = _make(spd((3, 3)))
    assert L.eigh(s).eigenvalues.shape == (3,) and L.eigh(s).eigenvectors.shape == (3, 3)
    assert L.slogdet(s).logabsdet.shape == ()
    assert L.svd(s).S.shape == (3,)
    assert L.qr(s).R.shape == (3, 3)


# ---------------------------------------------------------------------------
# Gradients: whole functions, both modes, against finite differences
# ---------------------------------------------------------------------------
def test_inverse_and_determinants():
    a = _make(well_conditioned((3, 3)))
    w = np.random.default_rng(2).normal(size=(3, 3))
    _assert_grads(lambda x: adv.sum(L.inv(x) * w), a, order=2)
    _assert_grads(lambda x: L.det(x), a, order=2)
    _assert_grads(lambda x: adv.sum(L.slogdet(x).logabsdet), _make(well_conditioned((2, 3, 3))), order=2)


def test_solve_with_vector_matrix_and_broadcast_stack():
    a = _make(well_conditioned((3, 3)))
    rng = np.random.default_rng(3)
    _assert_grads(lambda x, y: adv.sum(L.solve(x, y) ** 2), a, rng.normal(size=3), order=2)
    _assert_grads(lambda x, y: adv.sum(L.solve(x, y) ** 2), a, rng.normal(size=(2, 3, 2)))


def test_cholesky_of_a_covariance():
    b = np.random.default_rng(4).normal(size=(3, 3))
    _assert_grads(lambda m: adv.sum(L.cholesky(m @ m.T + 0.5 * np.eye(3)) ** 2), b, order=2)


def test_eigh_values_and_sign_invariant_vectors():
    s = _make(symmetric_separated((3, 3)))
    c = np.array([1.0, -2.0, 0.5])
    _assert_grads(lambda x: adv.sum(L.eigh(x).eigenvalues * c), s, order=2)
    # V diag(c) Vᵀ does not depend on the eigenvectors' signs
    _assert_grads(lambda x: adv.sum(((L.eigh(x).eigenvectors * c) @ L.eigh(x).eigenvectors.T) ** 2), s)
    _assert_grads(lambda x: adv.sum(L.eigh(x).eigenvectors ** 2 * c), _make(symmetric_separated((2, 3, 3))))


def test_svd_factors_and_values():
    a = _make(distinct_singular((4, 3)))
    _assert_grads(lambda x: adv.sum(L.svd(x, compute_uv=False) ** 3), a, order=2)
    c = np.array([1.0, 2.0, -1.0])

    def sign_free(x):
        u, s, vh = L.svd(x, full_matrices=False)
        return adv.sum(((u * c) @ u.T) ** 2) + adv.sum((vh.T * s) @ vh)
    _assert_grads(sign_free, a)
    _assert_grads(sign_free, _make(distinct_singular((3, 4))))


def test_qr_reconstruction_and_factors():
    a = _make(distinct_singular((4, 3)))
    w = np.random.default_rng(5).normal(size=(4, 3))
    _assert_grads(lambda x: adv.sum(L.qr(x).Q * w) + adv.sum(L.qr(x).R ** 2), a)
    q_r = lambda x: L.qr(x).Q @ L.qr(x).R   # noqa: E731
    np.testing.assert_allclose(adv.jacobian(q_r)(a).numpy().reshape(12, 12), np.eye(12), atol=1e-10)


def test_pinv_matrix_power_and_multi_dot():
    a = _make(distinct_singular((4, 2)))
    w = np.random.default_rng(6).normal(size=(2, 4))
    _assert_grads(lambda x: adv.sum(L.pinv(x) * w), a)
    sq = _make(well_conditioned((3, 3)))
    _assert_grads(lambda x: adv.sum(L.matrix_power(x, 3)) + adv.sum(L.matrix_power(x, -2)), sq)
    _assert_grads(lambda x: L.multi_dot([x[0], x, x, x[:, 1]]), sq)


def test_hessian_of_logdet_is_minus_inverse_outer_inverse():
    """∂² log det A / ∂A_ij ∂A_kl = −(A⁻¹)_jk (A⁻¹)_li."""
    a = _make(well_conditioned((3, 3)))
    h = adv.hessian(lambda x: L.slogdet(x).logabsdet)(a).numpy()
    a_inv = np.linalg.inv(a)
    np.testing.assert_allclose(h, -np.einsum("jk,li->ijkl", a_inv, a_inv), atol=1e-10)


def test_stacked_gradient_equals_per_matrix_gradients():
    a = _make(well_conditioned((2, 3, 3)))
    whole = adv.grad(lambda x: adv.sum(L.inv(x) ** 2))(a).numpy()
    for i in range(2):
        np.testing.assert_allclose(whole[i], adv.grad(lambda x: adv.sum(L.inv(x) ** 2))(a[i]).numpy())


def test_repeated_eigenvalues_give_finite_gradients_for_eigenspace_losses():
    """At A = I every basis is an eigenbasis; V f(Λ) Vᵀ = f(1)·I does not depend on the choice."""
    eye = np.eye(3)
    g = adv.grad(lambda x: adv.sum((L.eigh(x).eigenvectors * L.eigh(x).eigenvalues) @ L.eigh(x).eigenvectors.T))(eye)
    np.testing.assert_allclose(g.numpy(), np.eye(3), atol=1e-12)     # d trace(A) / dA = I
    np.testing.assert_allclose(adv.grad(lambda x: adv.sum(L.eigvalsh(x) ** 2))(eye).numpy(), 2 * eye)


def test_slogdet_sign_has_no_gradient():
    a = adv.Variable(_make(well_conditioned((3, 3))))
    with adv.GradientTape() as tape:
        sign, _ = L.slogdet(a)
    assert tape.gradient(sign, a) is None


def test_eigh_reads_one_triangle_as_numpy_and_so_does_its_gradient():
    """numpy's eigh reads the lower (UPLO="L") or upper triangle; the gradient of λₖ is vₖvₖᵀ placed there."""
    s = _make(symmetric_separated((3, 3)))
    a = s + np.triu(np.random.default_rng(7).normal(size=(3, 3)), 1)       # the upper triangle is ignored
    np.testing.assert_allclose(L.eigvalsh(a).numpy(), np.linalg.eigvalsh(a))
    np.testing.assert_allclose(L.eigh(a).eigenvectors.numpy(), np.linalg.eigh(a).eigenvectors)
    np.testing.assert_allclose(L.eigh(a.T, UPLO="U").eigenvalues.numpy(), np.linalg.eigvalsh(s))
    v = np.linalg.eigh(s).eigenvectors[:, 2]
    vvt = np.outer(v, v)
    g = adv.grad(lambda x: L.eigvalsh(x)[2])(a).numpy()
    np.testing.assert_allclose(g, np.tril(2 * vvt, -1) + np.diag(np.diag(vvt)), atol=1e-12)
    g_upper = adv.grad(lambda x: L.eigvalsh(x, UPLO="U")[2])(a.T).numpy()
    np.testing.assert_allclose(g_upper, g.T, atol=1e-12)
    # through a symmetric parametrization the gradient is the symmetric one
    g_sym = adv.grad(lambda m: L.eigvalsh((m + m.T) / 2)[2])(s).numpy()
    np.testing.assert_allclose(g_sym, vvt, atol=1e-12)


# ---------------------------------------------------------------------------
# Errors: the op, the shape, the fix; numpy's exception type; nothing recorded
# ---------------------------------------------------------------------------
def test_inverse_of_a_singular_matrix_names_the_matrix_and_the_fix():
    a = adv.Variable(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]]))
    with adv.GradientTape() as tape:
        with pytest.raises(np.linalg.LinAlgError, match=r"inv.*\(2, 2\).*matrix \[1\].*singular.*Fix") as info:
            L.inv(a)
    assert isinstance(info.value, L.LinAlgError) and isinstance(info.value, ValueError)
    assert tape.nodes == [] or len(tape.nodes) == 0


def test_cholesky_of_a_matrix_that_is_not_positive_definite():
    with pytest.raises(L.LinAlgError, match="cholesky.*not positive definite.*B @ B.T"):
        L.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))


def test_solve_singular_and_shape_errors():
    with pytest.raises(L.LinAlgError, match="solve.*singular"):
        L.solve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(L.LinAlgError, match=r"solve.*needs 3 rows.*got shape \(2,\)"):
        L.solve(np.eye(3), np.ones(2))


@pytest.mark.parametrize("op", [L.inv, L.det, L.cholesky, L.eigh])
def test_non_square_and_vector_inputs_are_refused(op):
    with pytest.raises(np.linalg.LinAlgError, match=r"square.*\(2, 3\)"):
        op(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="needs a matrix"):
        op(np.ones(3))


def test_factors_without_a_unique_gradient_are_refused_only_while_a_tape_tracks_them():
    a = np.random.default_rng(8).normal(size=(3, 2))
    for got, want in zip(L.svd(a), np.linalg.svd(a)):         # numpy's default full_matrices=True
        np.testing.assert_allclose(got.numpy(), want)
    for got, want in zip(L.qr(a, mode="complete"), np.linalg.qr(a, mode="complete")):
        np.testing.assert_allclose(got.numpy(), want)
    x = adv.Variable(a)
    with adv.GradientTape() as tape:
        with pytest.raises(ValueError, match=r"svd.*orthonormal completion.*full_matrices=False"):
            L.svd(x)
        with pytest.raises(ValueError, match=r"qr.*not unique.*mode='reduced'"):
            L.qr(x, mode="complete")
    assert len(tape.nodes) == 0
    with pytest.raises(TypeError, match="complex"):
        L.inv(np.eye(2) * 1j)


def test_qr_of_a_wide_matrix_is_numpys_and_differentiable():
    a = _make(distinct_singular((3, 5)))
    q, r = L.qr(a)
    np.testing.assert_allclose(q.numpy(), np.linalg.qr(a).Q)
    np.testing.assert_allclose(r.numpy(), np.linalg.qr(a).R, atol=1e-12)
    w = np.random.default_rng(9).normal(size=(3, 5))
    _assert_grads(lambda x: adv.sum(L.qr(x).R * w) + adv.sum(L.qr(x).Q ** 3), a)


def test_pinv_takes_numpys_cutoff_arguments():
    a = np.diag([1.0, 1e-8, 2.0])
    np.testing.assert_allclose(L.pinv(a, rcond=1e-6).numpy(), np.linalg.pinv(a, rcond=1e-6))
    np.testing.assert_allclose(L.pinv(a, rtol=1e-6).numpy(), np.linalg.pinv(a, rtol=1e-6))
    np.testing.assert_allclose(L.pinv(a).numpy(), np.linalg.pinv(a))


def test_numpy_linalg_functions_dispatch_to_the_rules():
    a = adv.Variable(_make(spd((3, 3))))
    with adv.GradientTape(persistent=True) as tape:
        y = np.linalg.slogdet(a).logabsdet + np.sum(np.linalg.inv(a)) + np.sum(np.linalg.eigh(a).eigenvalues)
    assert [n.rule.name for n in tape.nodes][:3] == ["slogdet_sign", "slogdet", "inv"]
    want = adv.grad(lambda x: L.slogdet(x).logabsdet + adv.sum(L.inv(x)) + adv.sum(L.eigvalsh(x)))(a.numpy())
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), want.numpy())


def test_least_squares_matches_numpy_and_is_differentiable():
    rng = np.random.default_rng(10)
    a, b, bb = rng.normal(size=(5, 3)), rng.normal(size=5), rng.normal(size=(5, 2))
    for rhs in (b, bb):
        got, want = L.lstsq(a, rhs), np.linalg.lstsq(a, rhs)
        np.testing.assert_allclose(got[0].numpy(), want[0])
        np.testing.assert_allclose(got[1].numpy(), want[1])
        assert got[2] == want[2]
        np.testing.assert_allclose(got[3].numpy(), want[3])
    assert L.lstsq(a.T, b[:3])[1].shape == np.linalg.lstsq(a.T, b[:3])[1].shape == (0,)
    _assert_grads(lambda x, y: adv.sum(L.lstsq(x, y)[0] ** 2) + adv.sum(L.lstsq(x, y)[1]), a, bb)


def test_condition_number_and_array_api_names_match_numpy():
    rng = np.random.default_rng(11)
    sq, x = rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 3, 4))
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(L.cond(sq, p).numpy(), np.linalg.cond(sq, p))
    _assert_grads(lambda m: adv.sum(L.cond(m)), _make(distinct_singular((2, 3, 3))))
    for axis, keepdims, ord in [(None, False, 2), (None, True, 1), ((0, 2), True, np.inf), (1, False, 3)]:
        np.testing.assert_allclose(L.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord).numpy(),
                                   np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord))
    np.testing.assert_allclose(L.matrix_norm(x, ord="nuc").numpy(), np.linalg.matrix_norm(x, ord="nuc"))
    np.testing.assert_allclose(L.diagonal(x, offset=1).numpy(), np.linalg.diagonal(x, offset=1))
    np.testing.assert_allclose(L.vecdot(x, x[0]).numpy(), np.linalg.vecdot(x, x[0]))
    np.testing.assert_allclose(L.outer(x[0, 0], x[1, 1]).numpy(), np.linalg.outer(x[0, 0], x[1, 1]))
    np.testing.assert_allclose(L.tensordot(x, x, axes=3).numpy(), np.linalg.tensordot(x, x, axes=3))


def test_general_eigendecomposition_is_numpys_untracked_and_refused_while_tracked():
    m = np.random.default_rng(12).normal(size=(3, 3))
    np.testing.assert_allclose(np.linalg.eigvals(adv.constant(m)), np.linalg.eigvals(m))
    with adv.GradientTape() as tape:
        x = adv.Variable(m)
        with pytest.raises(TypeError, match=r"eig: .*complex.*eigh"):
            np.linalg.eig(x)
    assert len(tape.nodes) == 0
