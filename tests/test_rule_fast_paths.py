"""The rule table's fast paths give exactly what the plain numpy formulas give.

The select behind ``where`` (and every VJP that masks a gradient: relu,
leaky_relu, clip, maximum/minimum) works on bit patterns for large float
arrays; einsum routes two-operand contractions to ``np.matmul``; the
reductions call the ufuncs directly. A learner must not be able to tell:
same values, same dtypes, same NaN/∞/−0 behaviour as the formulas the
factor texts print.
"""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.core import rules as R

SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0, 3e-39])
BIG = (40, 30)      # 1200 entries: above the size where the bitwise select takes over
SMALL = (3, 4)      # below it: np.where itself


def _bits(a):
    a = np.asarray(a)
    return a.dtype, a.shape, a.tobytes()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [BIG, SMALL])
def test_where_is_numpy_where_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(0)
    cond = rng.random(shape) > 0.5
    a = rng.choice(SPECIALS, shape).astype(dtype)
    b = rng.choice(SPECIALS, shape[-1:]).astype(dtype)
    for x, y in [(a, b), (a, 0), (0, a), (a, -0.0), (a, 2.5), (b, a), (a[:, ::-1], a.T[::-1].T)]:
        got = adv.where(adv.constant(cond), adv.constant(x, dtype=dtype), adv.constant(y, dtype=dtype)).numpy()
        assert _bits(got) == _bits(np.where(cond, np.asarray(x, dtype), np.asarray(y, dtype)))
        assert _bits(R.where(cond, x, y)) == _bits(np.where(cond, x, y))


def test_where_keeps_numpy_promotion_for_mixed_dtypes():
    cond = np.arange(2000) % 3 == 0
    a32, b64 = np.ones(2000, np.float32), np.full(2000, 2.0)
    assert R.where(cond, a32, b64).dtype == np.where(cond, a32, b64).dtype == np.float64
    assert R.where(cond, a32, np.float64(0.0)).dtype == np.where(cond, a32, np.float64(0.0)).dtype
    assert R.where(cond, np.arange(2000), 0).dtype == np.where(cond, np.arange(2000), 0).dtype


MASKING = {
    "relu": lambda x: adv.nn.relu(x),
    "clip": lambda x: adv.clip(x, -0.5, 0.5),
    "maximum": lambda x: adv.maximum(x, 0.25),
    "minimum": lambda x: adv.minimum(x, 0.25),
    "where": lambda x: adv.where(x > 0, x, 0.0),
}


@pytest.mark.parametrize("name", sorted(MASKING))
@pytest.mark.parametrize("shape", [BIG, SMALL])
def test_masked_gradient_is_exactly_zero_even_for_nan_and_inf_upstream(name, shape):
    """A select, as PyTorch and JAX: the entries the mask drops get 0, not NaN, whatever ḡ holds there."""
    rng = np.random.default_rng(1)
    x = adv.constant(rng.normal(size=shape).astype(np.float32))
    g = rng.choice(SPECIALS, shape).astype(np.float32)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = MASKING[name](x)
    gx = tape.gradient(y, x, output_gradients=adv.constant(g)).numpy()
    ones = np.ones(shape, np.float32)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = MASKING[name](x)
    slope = tape.gradient(y, x, output_gradients=adv.constant(ones)).numpy()    # the local derivative
    assert gx.dtype == np.float32
    dropped = slope == 0
    assert dropped.any() and not np.isnan(gx[dropped]).any()
    assert np.all(gx[dropped] == 0)
    kept = slope == 1
    assert kept.any() and _bits(gx[kept]) == _bits(g[kept])


@pytest.mark.parametrize("subscripts, shapes", [
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
    ("bij,bkj->bik", [(3, 4, 5), (3, 2, 5)]),
    ("bij,bjk->bki", [(3, 4, 5), (3, 5, 2)]),
    ("ij,jk->ki", [(4, 5), (5, 2)]),
    ("bij,jk->bik", [(3, 4, 5), (5, 2)]),
    ("i,j->ij", [(4,), (5,)]),
    ("ij,ij->", [(4, 5), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 2)]),
    ("bij,bjk->bik", [(1, 4, 5), (3, 5, 2)]),       # axes of size 1 broadcast (np.einsum does it): the
    ("ij,jk->ik", [(4, 1), (5, 2)]),                  # gradient sums over the copies
    ("ii,ij->j", [(4, 4), (4, 5)]),                   # a diagonal: np.einsum does it
])
def test_einsum_as_matmul_matches_numpy_and_its_gradients(subscripts, shapes):
    rng = np.random.default_rng(2)
    a, b = (rng.normal(size=s) for s in shapes)
    ta, tb = adv.constant(a), adv.constant(b)
    with adv.GradientTape() as tape:
        tape.watch([ta, tb])
        y = adv.einsum(subscripts, ta, tb)
    want = np.einsum(subscripts, a, b)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)
    w = rng.normal(size=want.shape)
    ga, gb = tape.gradient(y, [ta, tb], output_gradients=adv.constant(w))
    lhs, rhs = subscripts.split("->")
    sa, sb = lhs.split(",")
    if "..." not in subscripts and "ii" not in sa and shapes[0][0] == shapes[1][0]:
        np.testing.assert_allclose(ga.numpy(), np.einsum(f"{rhs},{sb}->{sa}", w, b), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gb.numpy(), np.einsum(f"{rhs},{sa}->{sb}", w, a), rtol=1e-12, atol=1e-12)
    assert ga.shape == a.shape and gb.shape == b.shape
    assert adv.check_grads(lambda p, q: adv.einsum(subscripts, p, q), [ta, tb]).ok


def test_mean_gradient_is_one_over_n_in_the_input_dtype():
    x = adv.Variable(np.ones((6, 7), np.float32))
    with adv.GradientTape() as tape:
        y = adv.mean(x, axis=1)
    g = tape.gradient(y, x).numpy()
    assert g.dtype == np.float32 and g.flags.writeable
    np.testing.assert_array_equal(g, np.full((6, 7), np.float32(1) / np.float32(7)))


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.int8).reshape(2, 3), np.array([[True, False, True]] * 2),
                                   np.ones((2, 3), np.float16)])
def test_reductions_keep_numpy_result_dtypes(value):
    for ours, theirs in [(adv.sum, np.sum), (adv.max, np.max), (adv.min, np.min)]:
        got = ours(adv.constant(value), axis=1).numpy()
        want = theirs(value, axis=1)
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("x_shape", [(2, 3, 4), (2, 2, 3, 4)])
def test_matmul_of_a_stack_by_a_matrix_has_the_right_gradients(x_shape):
    """x @ W with x a stack (Dense on a sequence): gradients, a batch of cotangents, and a Hessian."""
    rng = np.random.default_rng(3)
    x, w = adv.constant(rng.normal(size=x_shape)), adv.constant(rng.normal(size=(4, 5)))
    with adv.GradientTape() as tape:
        tape.watch([x, w])
        y = adv.matmul(x, w)
    g = rng.normal(size=y.shape)
    gx, gw = tape.gradient(y, [x, w], output_gradients=adv.constant(g))
    np.testing.assert_allclose(gx.numpy(), g @ w.numpy().T, rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), x.numpy().reshape(-1, 4).T @ g.reshape(-1, 5), rtol=1e-12)
    assert adv.check_grads(lambda a, b: adv.matmul(a, b), [x, w]).ok
    jac = adv.jacobian(lambda b: adv.matmul(x, b))(w).numpy()        # cotangents with batch axes in front
    np.testing.assert_allclose(jac, np.einsum("...k,nm->...nkm", x.numpy(), np.eye(5)), rtol=1e-12)
    f = lambda a: adv.matmul(a, w)      # noqa: E731
    np.testing.assert_allclose(adv.jacobian(f, mode="reverse")(x).numpy(), adv.jacobian(f, mode="forward")(x).numpy(),
                               rtol=1e-12)
    h = adv.hessian(lambda a: adv.sum(adv.matmul(a, w) ** 2))(x).numpy()
    rows = int(np.prod(x_shape[:-1]))
    want = 2 * np.einsum("rs,kl->rksl", np.eye(rows), w.numpy() @ w.numpy().T).reshape(x_shape + x_shape)
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_vjp_in_one_buffer_is_the_formula_bit_for_bit(dtype):
    rng = np.random.default_rng(3)
    y = np.tanh(rng.normal(size=(40, 30)) * 3).astype(dtype)
    y[0, :4] = [np.nan, 1.0, -1.0, -0.0]
    g = rng.choice(SPECIALS, y.shape).astype(dtype)
    with np.errstate(all="ignore"):        # ∞·0 is NaN on both paths, with numpy's warning
        _tanh_vjp_cases(g, y)


def _tanh_vjp_cases(g, y):
    got = R.tanh.inputs[0].vjp(g, y, None)
    assert _bits(got) == _bits(g * (1 - y * y))
    batched = np.stack([g, -g])           # cotangents with a batch axis take the formula's path: same answer
    assert _bits(R.tanh.inputs[0].vjp(batched, y, None)) == _bits(batched * (1 - y * y))
    mixed = R.tanh.inputs[0].vjp(g.astype("float64"), y, None)   # numpy's promotion is kept
    assert mixed.dtype == np.result_type(np.float64, y.dtype)
