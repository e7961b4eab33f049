"""The same functions differentiated by HIPS autograd and by this package: equal values and gradients.

Runs only where the ``autograd`` package is installed. Each function is
written once against a numpy namespace: ``autograd.numpy`` for autograd, and
numpy itself for this package (``np.cumsum(t)`` on a tensor dispatches to the
rule). For a fixed random weight ``w`` the scalar ``Σ w·f(x)`` is
differentiated by both, and so is ``∇(Σ w·f)(x) · v`` (a Hessian-vector
product: second derivatives). The functions come from the ported test files
(tests/test_port_autograd_*.py); conventions that could differ between
libraries are pinned here: ties of max/maximum share the gradient, numpy's
eigh reads one triangle. (autograd gives cholesky the symmetric gradient,
which is not the derivative of numpy's lower-triangle function; this package
gives the derivative, so cholesky is compared through ``x xᵀ + 3I``, where the
two agree.)
"""
import numpy as np
import pytest

import autodiff_viz as adv

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

# autograd warns when a Hessian-vector product of a linear function is identically zero
pytestmark = pytest.mark.filterwarnings("ignore:Output seems independent of input:UserWarning")

rng = np.random.default_rng(5)


def _sym(m):
    return m @ m.T + 3 * np.eye(m.shape[0])


X = rng.normal(size=(3, 4))
SQ = rng.normal(size=(3, 3)) + 3 * np.eye(3)
SPD = _sym(rng.normal(size=(3, 3)))
C = rng.normal(size=(4, 2))

CASES = {
    # name: (function of (xp, x), argument)
    "tanh_square": (lambda xp, x: xp.tanh(x) ** 2, X),
    "var_ddof1_axis0": (lambda xp, x: xp.var(x, axis=0, ddof=1), X),
    "std_axis1_keepdims": (lambda xp, x: xp.std(x, axis=1, keepdims=True), X),
    "prod_axis1": (lambda xp, x: xp.prod(x, axis=1), X),
    "cumsum_axis1": (lambda xp, x: xp.cumsum(x, axis=1), X),
    "cumsum_flat": (lambda xp, x: xp.cumsum(x), X),
    "max_with_ties": (lambda xp, x: xp.max(xp.concatenate([x, x], axis=0), axis=0), X),
    "maximum_tie": (lambda xp, x: xp.maximum(x, x), X),
    "sort_vector": (lambda xp, x: xp.sort(x[1]), X),
    "repeated_index": (lambda xp, x: x[[0, 0, 2], 1:3], X),
    "where": (lambda xp, x: xp.where(x > 0, x ** 2, -x), X),
    "logaddexp": (lambda xp, x: xp.logaddexp(x, 0.5 * x), X),
    "arctan2_hypot": (lambda xp, x: xp.arctan2(x, 1.5) + xp.hypot(x, 0.7), X),
    "einsum_matmul": (lambda xp, x: xp.einsum("ij,jk->ik", x, C), X),
    "tensordot": (lambda xp, x: xp.tensordot(x, C, axes=1), X),
    "outer_dot": (lambda xp, x: xp.outer(x[0], x[1]) + xp.dot(x, x.T)[0, 0], X),
    "pad_roll_flipud": (lambda xp, x: xp.flipud(xp.roll(xp.pad(x, ((1, 0), (0, 2)), mode="constant"), 1, axis=1)), X),
    "tile_repeat": (lambda xp, x: xp.tile(x, (2, 1)) + xp.repeat(x, 2, axis=0), X),
    "tril_diag_trace": (lambda xp, x: xp.tril(x[:, :3]) * xp.trace(x[:, :3]) + xp.diag(xp.diag(x[:, :3])), X),
    "inv": (lambda xp, x: xp.linalg.inv(x), SQ),
    "det": (lambda xp, x: xp.linalg.det(x), SQ),
    "slogdet": (lambda xp, x: xp.linalg.slogdet(x)[1], SQ),
    "solve": (lambda xp, x: xp.linalg.solve(x, C[:3]), SQ),
    "cholesky_of_gram": (lambda xp, x: xp.linalg.cholesky(xp.dot(x, x.T) + 3 * xp.eye(3)), SQ),
    "eigh_values_nonsymmetric_input": (lambda xp, x: xp.linalg.eigh(x)[0], SQ),
    "eigh_projector": (lambda xp, x: xp.dot(xp.linalg.eigh(x)[1] * xp.linalg.eigh(x)[0], xp.linalg.eigh(x)[1].T), SPD),
    "svd_values": (lambda xp, x: xp.linalg.svd(x, compute_uv=False), X),
    "norm_fro": (lambda xp, x: xp.linalg.norm(x), X),
    "norm_axis1": (lambda xp, x: xp.linalg.norm(x, axis=1), X),
    "norm_nuclear": (lambda xp, x: xp.linalg.norm(x, ord="nuc"), X),
    "pinv": (lambda xp, x: xp.linalg.pinv(x), X),
}


def _weights(f, x):
    return np.random.default_rng(len(np.shape(f(np, x)))).normal(size=np.shape(f(np, x)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_gradient_and_hessian_vector_product_equal_autograds(name):
    f, x = CASES[name]
    w = _weights(f, x)
    v = np.random.default_rng(7).normal(size=x.shape)

    def loss_ag(x):
        return anp.sum(w * f(anp, x))

    def loss_adv(x):
        return adv.sum(w * f(np, x))

    np.testing.assert_allclose(np.asarray(adv.constant(f(np, adv.constant(x))).numpy()), f(anp, x), atol=1e-12)
    g_ag = autograd.grad(loss_ag)(x)
    g_adv = adv.grad(loss_adv)(x).numpy()
    np.testing.assert_allclose(g_adv, g_ag, rtol=1e-9, atol=1e-10, err_msg=f"{name}: gradient")
    hvp_ag = autograd.grad(lambda x: anp.sum(autograd.grad(loss_ag)(x) * v))(x)
    hvp_adv = adv.grad(lambda x: adv.sum(adv.grad(loss_adv)(x) * v))(x).numpy()
    np.testing.assert_allclose(hvp_adv, hvp_ag, rtol=1e-7, atol=1e-9, err_msg=f"{name}: Hessian-vector product")
