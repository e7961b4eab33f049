"""Ops against numpy, PyTorch and JAX: clip's tensor bounds, concatenate(axis=None), det at singular matrices,
check_grads called as JAX's, and numpy keywords the ops refuse by name."""
import numpy as np
import pytest

import autodiff_viz as adv


def _grads(f, *values):
    vs = [adv.Variable(np.asarray(v, dtype=np.float64)) for v in values]
    with adv.GradientTape() as tape:
        y = f(*vs)
    return [None if g is None else g.numpy() for g in tape.gradient(y, vs)]


# ----- clip: the bounds are inputs with a gradient ----------------------------------------------------------
def test_clip_gives_tensor_bounds_their_gradient():
    gx, glo, ghi = _grads(lambda x, lo, hi: adv.sum(adv.clip(x, lo, hi)), [[1., 2.], [3., 4.]], 1.5, 3.5)
    np.testing.assert_array_equal(gx, [[0., 1.], [1., 0.]])
    assert glo == 1.0 and ghi == 1.0
    lo = adv.Variable(1.5)
    with adv.GradientTape() as tape:
        y = adv.sum(adv.clip(adv.constant([1.0, 2.0]), lo, 3.5))
    assert tape.explain(y, lo).reason == "connected"         # was non_differentiable_op


def test_np_clip_on_tensors_and_torch_clamp_agree_at_ties_and_crossed_bounds():
    torch = pytest.importorskip("torch")
    x = np.array([0., 1., 2., 3., 4., 0.5, 5.])
    lo = np.array([1., 1., 1., 1., 1., 3., 3.])     # the last two have lo > hi: numpy and torch return hi
    hi = np.array([3., 3., 3., 3., 3., 1., 1.])
    w = np.arange(1.0, 8.0)
    ours = _grads(lambda a, b, c: adv.sum(np.clip(a, b, c) * w), x, lo, hi)
    ts = [torch.tensor(v, requires_grad=True) for v in (x, lo, hi)]
    (torch.clamp(*ts) * torch.tensor(w)).sum().backward()
    for mine, theirs in zip(ours, ts):
        np.testing.assert_array_equal(mine, theirs.grad.numpy())


def test_clip_bounds_broadcast_and_match_finite_differences():
    rng = np.random.default_rng(0)
    x = rng.choice([-1.5, -0.5, 0.3, 0.8, 2.0], size=(3, 4)) + rng.uniform(-.05, .05, (3, 4))
    lo = np.array([-1.0, -0.2, -0.9, 0.1])              # per column; no entry of x within 0.05 of a bound
    hi = np.array([[1.0], [0.6], [1.7]])                # per row
    report = adv.check_grads(lambda a, b, c: adv.clip(a, b, c) * 1.0, [x, lo, hi])
    assert report.ok, str(report)
    gx, glo, ghi = _grads(lambda a, b, c: adv.sum(adv.clip(a, b, c)), x, lo, hi)
    assert glo.shape == lo.shape and ghi.shape == hi.shape
    np.testing.assert_array_equal(glo, (x < lo).sum(axis=0))
    np.testing.assert_array_equal(ghi, (x > hi).sum(axis=1, keepdims=True))


def test_clip_with_number_bounds_and_tensorflow_spelling():
    gx, = _grads(lambda x: adv.sum(adv.clip(x, clip_value_min=-1.0, clip_value_max=1.0)), [-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(gx, [0., 1., 0.])
    only_lo = adv.clip(adv.constant([-2.0, 3.0]), -1.0, None).numpy()
    np.testing.assert_array_equal(only_lo, np.clip([-2.0, 3.0], -1.0, None))


# ----- concatenate ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [[(2, 2), (2, 2)], [(2, 2), (1, 3)], [(), (3,), (2, 1)]])
def test_concatenate_axis_none_flattens_as_numpy(shapes):
    arrays = [np.arange(1.0, 1.0 + np.prod(s)).reshape(s) for s in shapes]
    got = np.concatenate([adv.constant(a) for a in arrays], axis=None)
    np.testing.assert_array_equal(got.numpy(), np.concatenate(arrays, axis=None))
    grads = _grads(lambda *ts: adv.sum(adv.concatenate(ts, axis=None) * np.arange(got.size)), *arrays)
    start = 0
    for a, g in zip(arrays, grads):
        np.testing.assert_array_equal(g, np.arange(start, start + a.size).reshape(a.shape))
        start += a.size


def test_concatenate_errors_name_the_axis_passed_and_the_fix():
    a, b = adv.constant(np.ones((2, 2))), adv.constant(np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"along axis 0: .*\(2, 2\).*\(1, 3\).*except axis 0"):
        np.concatenate([a, b], axis=0)
    with pytest.raises(ValueError, match=r"same number of axes"):
        adv.concatenate([a, adv.constant(np.ones(3))])
    with pytest.raises(ValueError, match=r"0-d.*adv\.stack"):
        adv.concatenate([adv.constant(1.0), adv.constant(2.0)])
    with pytest.raises(ValueError, match=r"axis 2 is out of range"):
        adv.concatenate([a, a], axis=2)


# ----- det at singular matrices --------------------------------------------------------------------------
def _cofactor_matrix(a):
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)]
                     for i in range(n)])


@pytest.mark.parametrize("a", [np.array([[1., 2.], [2., 4.]]), np.arange(1.0, 10.0).reshape(3, 3),
                               np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]]), np.zeros((3, 3)),
                               np.zeros((1, 1))])
def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(a):
    g, = _grads(lambda x: adv.linalg.det(x), a)
    expected = _cofactor_matrix(a) if a.shape[0] > 1 else np.ones((1, 1))
    np.testing.assert_allclose(g, expected, atol=1e-12)
    if a.shape == (2, 2):
        np.testing.assert_array_equal(g, [[4., -2.], [-2., 1.]])       # JAX's jax.grad(jnp.linalg.det)
    tangent = np.arange(a.size, dtype=float).reshape(a.shape)
    _, dy = adv.jvp(adv.linalg.det, (a,), (tangent,))
    np.testing.assert_allclose(dy.numpy(), np.sum(expected * tangent), atol=1e-12)


def test_det_second_derivatives_and_stacks_at_singular_and_regular_matrices():
    singular = np.arange(1.0, 10.0).reshape(3, 3)
    regular = np.random.default_rng(1).normal(size=(3, 3)) + 3 * np.eye(3)
    assert adv.check_grads(adv.linalg.det, [regular]).ok
    assert adv.check_grads(adv.grad(adv.linalg.det), [singular]).ok           # the Hessian, also at a singular A
    stack = np.stack([singular, regular])
    g, = _grads(lambda x: adv.sum(adv.linalg.det(x)), stack)
    np.testing.assert_allclose(g[0], _cofactor_matrix(singular), atol=1e-12)
    np.testing.assert_allclose(g[1], np.linalg.det(regular) * np.linalg.inv(regular).T, rtol=1e-12)


def test_slogdet_gradient_at_a_singular_matrix_is_refused_by_name():
    x = adv.Variable([[1., 2.], [2., 4.]])
    with adv.GradientTape() as tape:
        y = adv.linalg.slogdet(x)[1]
    with pytest.raises(np.linalg.LinAlgError, match=r"slogdet: .*singular.*adv\.linalg\.det"):
        tape.gradient(y, x)


# ----- check_grads with JAX's signature ------------------------------------------------------------------
def _f(a, b):
    return adv.sum(adv.tanh(a) * b)


_X, _Y = np.array([0.3, -1.2]), np.array([0.5, 2.0])


def test_check_grads_third_argument_is_order_as_in_jax():
    report = adv.check_grads(_f, (_X, _Y), 1)
    assert report.ok and sorted({r.argnum for r in report.rows}) == [0, 1]
    assert {r.of for r in report.rows} == {"f"}


def test_check_grads_order_2_checks_the_derivatives_with_jax_mode_names():
    report = adv.check_grads(lambda a: adv.tanh(a) * a, (_X,), 2, modes=("fwd", "rev"))
    assert report.ok, str(report)
    assert {r.mode for r in report.rows} == {"forward", "reverse"}
    assert len({r.of for r in report.rows}) == 3            # f, its VJP and its JVP
    assert adv.check_grads(_f, (_X, _Y), order=2, atol=1e-6, rtol=1e-4, eps=1e-5).ok


def test_check_grads_order_2_finds_a_gradient_that_is_right_only_to_first_order():
    @adv.custom_gradient
    def cube(x):
        return x * x * x, lambda dy: dy * 3.0 * adv.stop_gradient(x * x)      # its own derivative is lost

    f = lambda a: adv.sum(cube(a))  # noqa: E731
    assert adv.check_grads(f, (_X,), 1, modes=("rev",)).ok
    report = adv.check_grads(f, (_X,), 2, modes=("rev",))
    assert not report.ok
    assert [r.of for r in report.rows if not r.ok] == ["ḡᵀ∂f/∂x0"]


@pytest.mark.parametrize("call, match", [
    (lambda: adv.check_grads(_f, (_X, _Y), [1]), r"check_grads: the third argument is order.*argnums=\[1\]"),
    (lambda: adv.check_grads(_f, (_X, _Y), 0), r"check_grads: order must be 1.*argnums=0"),
    (lambda: adv.check_grads(_f, (_X, _Y), modes=("bwd",)), r"check_grads: modes must name"),
    (lambda: adv.check_grads(_f, (_X, _Y), argnums=2), r"check_grads: argnums 2 is not an argument"),
    (lambda: adv.check_grads(adv.tanh, _X), r"check_grads: args must be a list or tuple.*\[x\]"),
])
def test_check_grads_refuses_calls_that_would_check_something_else(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


# ----- numpy keywords: supported, or refused by name -----------------------------------------------------
_A = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("call, match", [
    (lambda t: np.sum(t, where=_A > 1), r"sum: numpy's where= is not supported.*adv\.sum\(x\[mask\]\)"),
    (lambda t: np.sum(t, initial=1.0), r"sum: numpy's initial= .*adv\.sum\(x\) \+ initial"),
    (lambda t: np.mean(t, where=_A > 1), r"mean: numpy's where= "),
    (lambda t: np.max(t, initial=1.0), r"max: numpy's initial= .*adv\.maximum"),
    (lambda t: np.std(t, mean=1.0), r"std: numpy's mean= "),
    (lambda t: adv.reshape(t, (2.5,)), r"reshape: sizes must be integers, got 2\.5"),
    (lambda t: np.reshape(t, (3, 2), order="X"), r"reshape: order must be"),
])
def test_unsupported_numpy_keywords_are_refused_naming_the_op(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call(adv.constant(_A))


def test_numpy_2_correction_and_fortran_order_reshape_match_numpy():
    t = adv.constant(_A)
    np.testing.assert_allclose(np.var(t, correction=1).numpy(), np.var(_A, ddof=1))
    np.testing.assert_allclose(np.std(t, axis=0, correction=1).numpy(), np.std(_A, axis=0, ddof=1))
    with pytest.raises(ValueError, match=r"var: ddof=1 and correction=1 both given"):
        np.var(t, ddof=1, correction=1)
    for shape in [(3, 2), (-1,), (6, 1, 1)]:
        np.testing.assert_array_equal(np.reshape(t, shape, order="F").numpy(), np.reshape(_A, shape, order="F"))
    w = np.arange(6.0).reshape(3, 2)
    g, = _grads(lambda x: adv.sum(np.reshape(x, (3, 2), order="F") * w), _A)
    np.testing.assert_array_equal(g, np.reshape(w, (2, 3), order="F"))
