"""grad, vjp, jvp, jacobian (both modes), hessian, custom_gradient and check_grads."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.records.gradcheck import GradientCheckError


def f_mlp(x, W1, W2):
    return adv.tanh(W2 @ adv.tanh(W1 @ x))


def test_grad_and_value_and_grad():
    f = lambda x: adv.sum(x ** 3)  # noqa: E731
    x = adv.constant([1.0, 2.0])
    np.testing.assert_allclose(adv.grad(f)(x).numpy(), [3.0, 12.0])
    value, g = adv.value_and_grad(f)(x)
    assert value.numpy() == 9.0 and np.allclose(g.numpy(), [3.0, 12.0])
    ga, gb = adv.grad(lambda a, b: adv.sum(a * b), argnums=(0, 1))(x, adv.constant([5.0, 7.0]))
    np.testing.assert_allclose(ga.numpy(), [5.0, 7.0])
    np.testing.assert_allclose(gb.numpy(), [1.0, 2.0])


def test_grad_needs_a_scalar_output():
    with pytest.raises(TypeError, match="scalar.*jacobian"):
        adv.grad(lambda x: x * 2)(adv.constant([1.0, 2.0]))


def test_grad_of_unused_argument_is_zero():
    g = adv.grad(lambda a, b: a * 2, argnums=1)(adv.constant(1.0), adv.constant(3.0))
    assert g.numpy() == 0.0


def test_vjp_and_jvp_are_transposes_of_each_other():
    rng = np.random.default_rng(0)
    x = rng.normal(size=4)
    W1, W2 = rng.normal(size=(5, 4)), rng.normal(size=(3, 5))
    f = lambda x: f_mlp(x, W1, W2)  # noqa: E731
    u, v = rng.normal(size=3), rng.normal(size=4)
    out, vjp_fn = adv.vjp(f, adv.constant(x))
    (vjp_u,) = vjp_fn(adv.constant(u))
    out2, jvp_v = adv.jvp(f, (adv.constant(x),), (adv.constant(v),))
    np.testing.assert_allclose(out.numpy(), out2.numpy())
    assert np.isclose(u @ jvp_v.numpy(), vjp_u.numpy() @ v)    # uᵀ(Jv) = (uᵀJ)v


def test_forward_and_reverse_jacobians_agree_and_match_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3,))
    W1, W2 = rng.normal(size=(4, 3)), rng.normal(size=(2, 4))
    f = lambda x, W1: f_mlp(x, W1, W2)  # noqa: E731
    for argnum, arg_shape in ((0, (3,)), (1, (4, 3))):
        rev = adv.jacobian(f, argnums=argnum)(x, W1).numpy()
        fwd = adv.jacobian(f, argnums=argnum, mode="forward")(x, W1).numpy()
        assert rev.shape == (2,) + arg_shape
        np.testing.assert_allclose(rev, fwd, atol=1e-12)
    report = adv.check_grads(f, [x, W1])
    assert report.ok, str(report)


def test_jacobian_mode_is_checked():
    with pytest.raises(ValueError, match="reverse.*forward"):
        adv.jacobian(lambda x: x, mode="sideways")


def test_hessian_matches_finite_differences_and_is_symmetric():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(4, 3))
    f = lambda x: adv.sum(adv.tanh(A @ x) ** 2)  # noqa: E731
    x = rng.normal(size=3)
    H = adv.hessian(f)(adv.constant(x)).numpy()
    eps = 1e-5
    g = lambda x: adv.grad(f)(adv.constant(x)).numpy()  # noqa: E731
    numeric = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
    assert H.shape == (3, 3)
    np.testing.assert_allclose(H, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, atol=1e-12)


def test_hessian_of_a_quadratic_is_exact():
    Q = np.array([[2.0, 1.0], [1.0, 3.0]])
    H = adv.hessian(lambda x: 0.5 * x @ (adv.constant(Q) @ x))(adv.constant([1.0, -1.0]))
    np.testing.assert_allclose(H.numpy(), Q)


def test_custom_gradient_replaces_the_rule():
    @adv.custom_gradient
    def clip_gradient(x):
        def grad_fn(dy):
            return adv.clip(dy, -1.0, 1.0)
        return x * 1.0, grad_fn

    x = adv.constant([1.0, 2.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.sum(clip_gradient(x) * 5.0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 1.0])
    assert any(n.rule.name == "custom:clip_gradient" for n in tape.nodes)
    J = adv.jacobian(lambda x: clip_gradient(x) * 5.0)(x)      # batched cotangents, split per row
    np.testing.assert_allclose(J.numpy(), np.eye(2))


def test_check_grads_catches_a_wrong_custom_gradient():
    @adv.custom_gradient
    def bad_square(x):
        return x * x, lambda dy: dy * x          # forgot the factor 2

    report = adv.check_grads(lambda x: bad_square(x), [np.array([1.0, 2.0])], modes=("reverse",))
    assert not report.ok
    assert report.rows[0].max_abs_error == pytest.approx(2.0, rel=1e-4)
    assert "MISMATCH" in str(report)
    with pytest.raises(GradientCheckError, match="MISMATCH"):
        adv.check_grads(lambda x: bad_square(x), [np.array([1.0, 2.0])], modes=("reverse",),
                        raise_on_error=True)


def test_forward_mode_through_a_custom_gradient_says_what_to_do():
    @adv.custom_gradient
    def ident(x):
        return x * 1.0, lambda dy: dy

    with pytest.raises(NotImplementedError, match="mode='reverse'"):
        adv.jacobian(lambda x: ident(x), mode="forward")(adv.constant([1.0]))
