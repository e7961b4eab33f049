"""The numpy surface: numpy's names and signatures, numpy functions on tensors, ndarray methods,
PyTorch spellings, second derivatives of the new rules, and the defects of issue 12.

First derivatives of every rule are checked by tests/test_rules.py (cases in tests/rule_cases_numpy.py).
"""
import numpy as np
import pytest

import autodiff_viz as adv

RNG = np.random.default_rng(12)
A = RNG.normal(size=(3, 4))
SQ = RNG.normal(size=(3, 3))
V = RNG.normal(size=5)
P = RNG.uniform(0.5, 2.0, size=(3, 4))


# ----- numpy's values, numpy's signatures ---------------------------------------
SAME_AS_NUMPY = [
    ("prod", (P,), {"axis": 1, "keepdims": True}), ("var", (A,), {"axis": 0, "ddof": 1}),
    ("std", (A,), {}), ("cumsum", (A,), {"axis": 1}), ("cumsum", (A,), {}), ("cumprod", (P,), {"axis": 0}),
    ("sort", (A,), {}), ("sort", (A,), {"axis": 0}), ("sort", (A,), {"axis": None}),
    ("log1p", (P,), {}), ("expm1", (A,), {}), ("log2", (P,), {}), ("log10", (P,), {}), ("exp2", (A,), {}),
    ("sinh", (A,), {}), ("cosh", (A,), {}), ("tan", (A,), {}), ("arctan", (A,), {}), ("arcsinh", (A,), {}),
    ("arcsin", (A / 4,), {}), ("arccos", (A / 4,), {}), ("arctanh", (A / 4,), {}), ("reciprocal", (P,), {}),
    ("arctan2", (A, P), {}), ("hypot", (A, P), {}), ("logaddexp", (A, P), {}), ("mod", (A, P), {}),
    ("floor_divide", (A, P), {}), ("floor", (A,), {}), ("ceil", (A,), {}), ("round", (A,), {"decimals": 1}),
    ("pad", (A, ((1, 2), (0, 3))), {}), ("pad", (A, 1), {"mode": "reflect"}),
    ("pad", (A, ((1, 1), (2, 0))), {"constant_values": 5.0}), ("pad", (A, 2), {"mode": "edge"}),
    ("flip", (A,), {}), ("flip", (A,), {"axis": 1}), ("roll", (A, 2), {}), ("roll", (A, (1, -1)), {"axis": (0, 1)}),
    ("tile", (A, (2, 1, 2)), {}), ("tile", (V, 2), {}), ("repeat", (A, 2), {"axis": 1}),
    ("repeat", (V, [1, 0, 2, 1, 3]), {}), ("repeat", (A, 2), {}),
    ("swapaxes", (A, 0, 1), {}), ("moveaxis", (RNG.normal(size=(2, 3, 4)), 0, -1), {}),
    ("triu", (A,), {}), ("tril", (A,), {"k": -1}), ("diag", (V,), {}), ("diag", (V,), {"k": -2}),
    ("diag", (A,), {"k": 1}), ("diagonal", (A,), {"offset": 1}),
    ("diagonal", (RNG.normal(size=(2, 3, 4)),), {"axis1": 1, "axis2": 2}), ("trace", (SQ,), {}),
    ("outer", (V, A[0]), {}), ("inner", (A, A), {}), ("dot", (A, A.T), {}), ("dot", (V, V), {}),
    ("dot", (RNG.normal(size=(2, 3, 4)), RNG.normal(size=(5, 4, 2))), {}),
    ("tensordot", (RNG.normal(size=(2, 3, 4)), RNG.normal(size=(4, 3, 2))), {"axes": ([1, 2], [1, 0])}),
    ("tensordot", (A, A.T), {"axes": 1}),
    ("take_along_axis", (A, np.argsort(A, axis=1)[:, :2]), {"axis": 1}), ("ravel", (A,), {}),
    ("clip", (A, -0.5, 0.5), {}), ("clip", (A,), {"a_min": None, "a_max": 0.2}),
    ("transpose", (RNG.normal(size=(2, 3, 4)),), {"axes": (1, 2, 0)}),
    ("sum", (A,), {"axis": 1, "keepdims": True}), ("mean", (A,), {"axis": (0, 1)}),
    ("expand_dims", (A, (0, 3)), {}), ("argmax", (A,), {"axis": 1, "keepdims": True}), ("argmin", (A,), {}),
    ("argsort", (A,), {"axis": 0}), ("amax", (A,), {"axis": 0}), ("cbrt", (A,), {}), ("logaddexp2", (A, P), {}),
]


@pytest.mark.parametrize("name,args,kwargs", SAME_AS_NUMPY, ids=lambda p: p if isinstance(p, str) else "")
def test_ops_give_numpys_values_with_numpys_signature(name, args, kwargs):
    expected = getattr(np, name)(*args, **kwargs)
    got = getattr(adv, name)(*[adv.constant(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ord,axis", [(None, None), (1, None), (2, None), (np.inf, None), (-np.inf, None),
                                      (3, None), ("fro", (0, 1)), (1, (0, 1)), (2, (0, 1)), (np.inf, (0, 1)),
                                      ("nuc", (0, 1)), (-1, (1, 0)), (None, 0), (1, 1)])
def test_norm_is_np_linalg_norm_and_differentiable(ord, axis):
    x = V if axis is None and ord not in ("fro", "nuc") else A
    np.testing.assert_allclose(adv.norm(adv.constant(x), ord=ord, axis=axis).numpy(),
                               np.linalg.norm(x, ord=ord, axis=axis), rtol=1e-12)
    assert adv.check_grads(lambda t: adv.norm(t, ord=ord, axis=axis), [x]).ok


@pytest.mark.parametrize("kwargs", [{}, {"ord": 1}, {"ord": np.inf, "axis": 1},
                                    {"ord": 3, "axis": (0, 1), "keepdims": True}])
def test_vector_norm_is_np_linalg_vector_norm(kwargs):
    np.testing.assert_allclose(np.linalg.vector_norm(adv.constant(A), **kwargs).numpy(),
                               np.linalg.vector_norm(A, **kwargs), rtol=1e-12)
    assert adv.check_grads(lambda t: np.linalg.vector_norm(t, **kwargs), [A]).ok
    np.testing.assert_allclose(np.linalg.matrix_norm(adv.constant(A), ord=1).numpy(), np.linalg.matrix_norm(A, ord=1))


EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->", [(3, 3)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij", [(2, 3)]), ("ji", [(2, 3)]),
           ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]), ("i...->...", [(3, 2, 2)]), ("ij,ij->", [(2, 3), (2, 3)]),
           ("i,j,k->ijk", [(2,), (3,), (2,)]), ("ijk,jl,lk->i", [(2, 3, 4), (3, 2), (2, 4)]), ("iij->j", [(2, 2, 3)])]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_matches_numpy_and_finite_differences(subscripts, shapes):
    xs = [RNG.normal(size=s) for s in shapes]
    got = adv.einsum(subscripts, *[adv.constant(x) for x in xs])
    np.testing.assert_allclose(got.numpy(), np.einsum(subscripts, *xs), rtol=1e-12, atol=1e-12)
    report = adv.check_grads(lambda *ts: adv.einsum(subscripts, *ts), xs)
    assert report.ok, report


# ----- second derivatives: VJPs written with rule calls are themselves differentiable --
SECOND_ORDER = {
    "var": lambda x: adv.var(x, ddof=1), "std": lambda x: adv.std(x * x, axis=0),
    "prod": lambda x: adv.prod(x), "cumsum": lambda x: adv.sum(adv.cumsum(x) ** 2),
    "cumprod": lambda x: adv.sum(adv.cumprod(x)), "sort": lambda x: adv.sum(adv.sort(x) * np.arange(6.0) * x),
    "einsum": lambda x: adv.einsum("i,j,ij->", x, x, adv.reshape(x, (1, 6)) * np.ones((6, 1))),
    "trace": lambda x: adv.trace(adv.outer(x, x)), "norm": lambda x: adv.norm(x) ** 3,
    "pad": lambda x: adv.sum(adv.pad(x, 2, mode="reflect") ** 3), "roll": lambda x: adv.sum(adv.roll(x, 2) * x),
    "elementwise": lambda x: adv.sum(adv.nn.gelu(x) + adv.erf(x) + adv.logaddexp(x, -x) + adv.arctan2(x, 2.0)
                                      + adv.nn.silu(x) + adv.nn.log_sigmoid(x) + adv.hypot(x, 1.5)),
    "take_along_axis": lambda x: adv.sum(adv.take_along_axis(x, np.array([0, 0, 5, 2]), 0) ** 3),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_hessians_of_the_new_ops(name):
    x = np.array([0.3, -1.1, 0.8, 1.7, -0.4, 0.6])
    report = adv.check_grads(adv.grad(SECOND_ORDER[name]), [x])
    assert report.ok, report


# ----- gradients a learner relies on ----------------------------------------------
def test_prod_gradient_is_exact_with_zeros():
    x = adv.constant([2.0, 0.0, 3.0, 4.0])
    np.testing.assert_allclose(adv.grad(adv.prod)(x).numpy(), [0.0, 24.0, 0.0, 0.0])
    assert np.all(adv.grad(adv.prod)(adv.constant([0.0, 0.0, 3.0])).numpy() == 0.0)


def test_cumprod_gradient_is_exact_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    g = adv.grad(lambda t: adv.sum(adv.cumprod(t)))(adv.constant(x)).numpy()
    np.testing.assert_allclose(g, [1.0, 2.0 + 6.0, 0.0, 0.0, 0.0])
    assert adv.check_grads(adv.grad(lambda t: adv.sum(adv.cumprod(t) * np.arange(5.0))), [x]).ok


def test_repeated_indices_accumulate_and_masks_select():
    x = adv.constant([1.0, 2.0, 3.0])
    np.testing.assert_allclose(adv.grad(lambda t: adv.sum(t[[0, 0, 2, 0]]))(x).numpy(), [3.0, 0.0, 1.0])
    np.testing.assert_allclose(adv.grad(lambda t: adv.sum(adv.take(t, [1, 1]) * 2))(x).numpy(), [0.0, 4.0, 0.0])
    np.testing.assert_allclose(adv.grad(lambda t: adv.sum(t[t.numpy() > 1.5] ** 2))(x).numpy(), [0.0, 4.0, 6.0])


def test_max_ties_share_the_gradient_evenly():
    g = adv.grad(lambda t: adv.max(t))(adv.constant([1.0, 3.0, 3.0, 0.0]))
    np.testing.assert_allclose(g.numpy(), [0.0, 0.5, 0.5, 0.0])       # as JAX / TensorFlow


def test_top_k_by_sort_and_slice():
    x = adv.constant([0.5, 3.0, -1.0, 2.0])
    g = adv.grad(lambda t: adv.sum(adv.sort(t)[-2:] * np.array([10.0, 100.0])))(x)
    np.testing.assert_allclose(g.numpy(), [0.0, 100.0, 0.0, 10.0])


def test_piecewise_constant_ops_have_zero_gradient_and_say_so():
    """adv.grad gives zeros for step functions (as autograd, PyTorch, JAX); on the tape round/floor/ceil/trunc
    have no gradient, as TensorFlow registers none for them: tape.gradient is None and explain names the op."""
    x = adv.constant([0.3, 1.7])
    for f in (adv.floor, adv.ceil, adv.round, adv.sign, adv.trunc, lambda t: t // 0.5):
        assert np.all(adv.grad(lambda t: adv.sum(f(t)))(x).numpy() == 0.0)
    assert adv.rules.TABLE["floor_divide"].inputs[0].factor.startswith("0")
    for name, f in (("floor", adv.floor), ("ceil", adv.ceil), ("round", adv.round), ("trunc", adv.trunc)):
        assert adv.rules.TABLE[name].inputs[0].factor is None
        w = adv.Variable([0.3, 1.7])
        with adv.GradientTape() as tape:
            y = adv.sum(f(w) * 2.0)
        assert tape.gradient(y, w) is None
        e = tape.explain(y, w)
        assert e.reason == "non_differentiable_op" and e.op == name and e.location is not None


def test_mod_gradients():
    a, b = adv.constant([5.5, -2.5]), adv.constant([2.0, 2.0])
    ga, gb = adv.grad(lambda a, b: adv.sum(a % b), argnums=(0, 1))(a, b)
    np.testing.assert_allclose((a % b).numpy(), np.mod([5.5, -2.5], 2.0))
    np.testing.assert_allclose(ga.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(gb.numpy(), -np.floor(np.array([5.5, -2.5]) / 2.0))
    np.testing.assert_allclose((7.0 % adv.constant(4.0)).numpy(), 3.0)
    np.testing.assert_allclose((adv.constant(7.0) // 2).numpy(), 3.0)


def test_gelu_hard_sigmoid_selu_follow_keras():
    x = np.linspace(-4, 4, 9)
    from scipy.special import erf
    np.testing.assert_allclose(adv.nn.gelu(x).numpy(), 0.5 * x * (1 + erf(x / np.sqrt(2))), rtol=1e-12)
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(adv.nn.gelu(x, approximate=True).numpy(), approx, rtol=1e-12)
    np.testing.assert_allclose(adv.nn.hard_sigmoid(x).numpy(), np.clip(x / 6 + 0.5, 0, 1))
    np.testing.assert_allclose(adv.nn.selu(np.array([1.0])).numpy(), [1.0507009873554805])
    assert adv.nn.swish is adv.nn.silu


# ----- numpy functions on tensors ---------------------------------------------------
def test_numpy_functions_dispatch_to_the_rules():
    x = adv.Variable(A)
    with adv.GradientTape() as tape:
        y = (np.var(x) + np.sum(np.cumsum(x, axis=1)) + np.linalg.norm(x) + np.einsum("ij,ij->", x, x)
             + np.sum(np.log1p(x * x)) + np.add.reduce(x, axis=None) + np.sum(np.multiply.accumulate(x, axis=0))
             + np.sum(np.maximum.reduce(x)) + np.trace(np.dot(x, x.T)) + np.std(x, ddof=1))
    g = tape.gradient(y, x)
    assert g is not None
    assert isinstance(np.var(x), adv.Tensor) and isinstance(np.add.accumulate(x), adv.Tensor)
    report = adv.check_grads(lambda t: np.var(t) + np.linalg.norm(t, ord=1) + np.sum(np.sort(t) ** 2), [A])
    assert report.ok, report


def test_numpy_function_without_a_rule_refuses_under_a_tape():
    x = adv.constant(A)
    with adv.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match=r"np\.median has no gradient rule.*adv\.sort"):
            np.median(x)
        with pytest.raises(TypeError, match=r"np\.ptp"):
            np.ptp(x, axis=0)
        with pytest.raises(TypeError, match=r"np\.fmod"):
            np.fmod(x, 2.0)                                   # a ufunc without a rule
    w = adv.Variable(A)
    with adv.GradientTape():
        with pytest.raises(TypeError, match="np.median"):
            np.median(w)                                      # a trainable variable is watched when read


def test_numpy_function_without_a_rule_computes_values_when_no_tape_tracks():
    x = adv.constant(A)
    assert np.median(x) == np.median(A)
    with adv.GradientTape() as tape:
        other = adv.constant(1.0)
        tape.watch(other)
        assert np.median(x) == np.median(A)                  # x is not tracked: nothing to lose


def test_values_without_gradient_and_explicit_escapes_stay_allowed():
    x = adv.constant(A)
    with adv.GradientTape() as tape:
        tape.watch(x)
        order = np.argsort(x, axis=1)
        assert np.shape(x) == A.shape and np.ndim(x) == 2
        assert np.isnan(x).sum() == 0 and bool(np.all(np.isfinite(x)))
        assert np.array_equal(np.nonzero(x)[0], np.nonzero(A)[0])
        escaped = np.asarray(x) * 2
        loss = adv.sum(adv.take_along_axis(x, np.asarray(order), axis=1)[:, :2]) + adv.sum(escaped)
    assert tape.gradient(loss, x) is not None
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.constant(np.asarray(x)) * 2
    assert tape.explain(y, x).reason == "left_the_tape"


# ----- ndarray methods and PyTorch spellings -------------------------------------------
def test_tensor_methods_follow_ndarray():
    x = adv.constant(A)
    np.testing.assert_allclose(x.var(axis=0, ddof=1).numpy(), A.var(axis=0, ddof=1))
    np.testing.assert_allclose(x.std().numpy(), A.std())
    np.testing.assert_allclose(x.prod(axis=1).numpy(), A.prod(axis=1))
    np.testing.assert_allclose(x.cumsum(axis=1).numpy(), A.cumsum(axis=1))
    np.testing.assert_allclose(x.cumprod().numpy(), A.cumprod())
    np.testing.assert_allclose(x.dot(A.T).numpy(), A.dot(A.T))
    np.testing.assert_allclose(x.clip(-0.5, 0.5).numpy(), A.clip(-0.5, 0.5))
    assert x.flatten().shape == (12,) and x.ravel().shape == (12,)
    assert x.transpose(1, 0).shape == (4, 3) and x.transpose((1, 0)).shape == (4, 3) and x.transpose().shape == (4, 3)
    assert x.swapaxes(0, 1).shape == (4, 3) and x[None].squeeze(0).shape == (3, 4)
    np.testing.assert_allclose(x.round(1).numpy(), A.round(1))
    assert x.argmax(axis=1).numpy().tolist() == A.argmax(axis=1).tolist()
    assert bool(x.any()) and not bool((x > 10).all())
    s = x.sort(axis=0)
    np.testing.assert_allclose(s.numpy(), np.sort(A, axis=0))
    np.testing.assert_allclose(x.numpy(), A)                  # sort returns a new tensor; x is unchanged
    np.testing.assert_allclose(adv.constant(SQ).trace().numpy(), SQ.trace())
    np.testing.assert_allclose(x.diagonal(1).numpy(), A.diagonal(1))
    np.testing.assert_allclose(x.repeat(2, axis=0).numpy(), A.repeat(2, axis=0))
    np.testing.assert_allclose(x.take([0, 2], axis=1).numpy(), A.take([0, 2], axis=1))
    assert x.size == 12 and isinstance(x.size, int) and x.astype("float32").dtype == np.float32
    assert x.conj() is x and x.real is x


@pytest.mark.parametrize("attr,fix", [("view", "x.reshape(n, -1)"), ("exp", "adv.exp(x)"), ("log", "adv.log(x)"),
                                      ("sigmoid", "adv.nn.sigmoid(x)"), ("relu", "adv.nn.relu(x)"),
                                      ("backward", "tape.gradient"), ("grad", "tape.gradient"),
                                      ("detach", "adv.stop_gradient"), ("unsqueeze", "adv.expand_dims"),
                                      ("permute", "transpose")])
def test_pytorch_spellings_get_the_numpy_spelling(attr, fix):
    x = adv.constant(A)
    with pytest.raises(AttributeError) as info:
        getattr(x, attr)
    assert isinstance(info.value, adv.TorchSpellingError) and fix in str(info.value)
    assert not hasattr(x, "no_such_attribute")


def test_pytorch_keywords_and_size_call_are_explained():
    x = adv.constant(A)
    with pytest.raises(TypeError, match=r"keepdims=True"):
        x.sum(1, keepdim=True)
    with pytest.raises(TypeError, match=r"axis=1"):
        x.mean(dim=1)
    with pytest.raises(TypeError, match=r"x\.size|t\.size is an int"):
        x.size()


# ----- defects of issue 12 ----------------------------------------------------------
def test_jvp_of_a_scalar_output_has_shape_of_the_output():
    _, t = adv.jvp(lambda x: adv.sum(x), [adv.constant([1.0, 2.0])], [adv.constant([1.0, 1.0])])
    assert t.shape == ()


def test_jvp_is_differentiable_with_respect_to_its_tangents():
    g = adv.grad(lambda t: adv.sum(adv.jvp(lambda x: 3.0 * x, [adv.constant([1.0, 2.0])], [t])[1]))(
        adv.constant([0.5, -1.0]))
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])


def test_hessian_vector_products_both_ways():
    def f(x):
        return adv.sum(adv.sin(x) * x ** 2) + adv.prod(x) + adv.var(x)
    x, v = adv.constant([0.3, -1.2, 0.7]), adv.constant([1.0, 2.0, -0.5])
    hv = adv.hessian(f)(x).numpy() @ v.numpy()
    np.testing.assert_allclose(adv.jvp(adv.grad(f), [x], [v])[1].numpy(), hv, rtol=1e-10)        # fwd-over-rev
    np.testing.assert_allclose(adv.grad(lambda y: adv.jvp(f, [y], [v])[1])(x).numpy(), hv, rtol=1e-10)  # rev-over-fwd


def test_lists_of_tensors_stay_on_the_tape():
    assert float(adv.grad(lambda x: adv.mean([x, x + 2]))(0.0)) == 1.0
    np.testing.assert_allclose(adv.grad(lambda x: adv.sum(adv.add([x, 2 * x], 1.0)))(adv.constant([1.0, 2.0])).numpy(),
                               [3.0, 3.0])
    np.testing.assert_allclose(adv.grad(lambda x: adv.sum(adv.var([x, x * 3.0], axis=0)))(adv.constant([1.0])).numpy(),
                               [2.0])  # var = x²


def test_zero_to_a_negative_power_follows_the_limit():
    x = adv.constant([-1.0, 0.5, 0.0])
    with np.errstate(divide="ignore"):
        g = adv.grad(lambda t: adv.sum(adv.power(0.0, t) * np.array([1.0, 1.0, 1.0])))(x)
    assert g.numpy()[0] == -np.inf and g.numpy()[1] == 0.0 and g.numpy()[2] == 0.0
    assert "−∞" in adv.rules.TABLE["power"].inputs[1].factor


def test_has_aux_as_jax():
    def loss(w):
        return adv.sum(w ** 2), {"norm": adv.norm(w)}
    w = adv.constant([3.0, 4.0])
    g, aux = adv.grad(loss, has_aux=True)(w)
    np.testing.assert_allclose(g.numpy(), [6.0, 8.0])
    assert float(aux["norm"]) == 5.0
    (value, aux2), g2 = adv.value_and_grad(loss, has_aux=True)(w)
    assert float(value) == 25.0 and float(aux2["norm"]) == 5.0
    np.testing.assert_allclose(g2.numpy(), [6.0, 8.0])
    with pytest.raises(TypeError, match="has_aux=True"):
        adv.grad(loss)(w)


# ----- dtypes --------------------------------------------------------------------------
def test_integer_inputs_keep_numpys_dtype_and_have_no_gradient():
    i = adv.constant(np.arange(1, 5))
    for name in ("log1p", "sinh", "arctan", "erf"):
        assert getattr(adv, name)(i).dtype == getattr(np, name, np.log1p)(np.arange(1, 5)).dtype == np.float64
    assert adv.cumsum(i).dtype == np.cumsum(np.arange(1, 5)).dtype
    assert adv.prod(i).dtype == np.int64 and adv.floor_divide(i, 2).dtype == np.int64
    assert adv.sort(i).dtype == np.int64 and (i % 3).dtype == np.int64
    assert adv.var(i).dtype == np.float64
    with pytest.raises(TypeError, match="float"):
        adv.grad(adv.var)(i)
    x = adv.constant([1.5, 2.5])
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.sum(adv.cumsum(adv.cast(x, "int64")) * 1.0)
    assert tape.gradient(y, x) is None


def test_domain_errors_are_nan_that_detect_anomaly_attributes():
    x = adv.constant([2.0])
    with pytest.raises(adv.AnomalyError, match="arcsin"):
        with adv.detect_anomaly():
            adv.arcsin(x)
    with pytest.raises(adv.AnomalyError, match="log1p"):
        with adv.detect_anomaly():
            adv.log1p(adv.constant([-2.0]))


def test_np_split_and_adv_split_take_numpys_indices_and_tensorflows_sizes_take_a_keyword():
    x = adv.constant(np.arange(6.0))
    assert [p.shape for p in np.split(x, [1, 4])] == [(1,), (3,), (2,)]
    assert [p.shape for p in adv.split(x, [1, 4])] == [(1,), (3,), (2,)]
    assert [p.shape for p in adv.split(x, num_or_size_splits=[1, 5])] == [(1,), (5,)]
    g = adv.grad(lambda t: adv.sum(np.split(t, [1, 4])[1] ** 2))(x)
    np.testing.assert_allclose(g.numpy(), [0, 2, 4, 6, 0, 0])


def test_every_numpy_name_in_the_dispatch_table_exists_and_dispatches():
    from autodiff_viz.core import linalg, ops
    from autodiff_viz.core.methods import _UFUNC_METHODS, _UFUNCS, numpy_op
    for name in ops.NUMPY_FUNCTIONS:
        func = getattr(np, name)
        assert numpy_op(func) is not None or isinstance(func, np.ufunc), name
    assert numpy_op(np.linalg.norm) is linalg.norm and numpy_op(np.median) is None
    x = adv.constant(np.array([[0.5, 0.7], [0.2, 0.9]]))
    big = adv.constant(np.array([[1.5, 1.7], [1.2, 1.9]]))
    for ufunc in _UFUNCS:
        args = (big if ufunc is np.arccosh else x,) * ufunc.nin
        assert isinstance(ufunc(*args), adv.Tensor), ufunc.__name__
    for ufunc, method in _UFUNC_METHODS:
        assert isinstance(getattr(ufunc, method)(x), adv.Tensor), f"{ufunc.__name__}.{method}"
    with adv.GradientTape() as tape:
        tape.watch(x)
        copied = np.copy(x)                       # an explicit escape, like np.asarray
    assert isinstance(copied, np.ndarray)


def test_writing_a_tracked_tensor_into_a_numpy_array_writes_values_and_notes_the_escape():
    """``dW += 2 * reg * W`` in a hand backward (CS231n's loss functions) runs, as an item write does.

    The array gets numbers; if it reaches a loss later, explain names this line as where the path left.
    """
    x = adv.constant([1.0, 2.0])
    acc = np.zeros(2)
    acc += x                                              # nothing tracks x: numpy on the values
    np.testing.assert_allclose(acc, [1.0, 2.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        acc += 3 * x
        loss = adv.sum(adv.constant(acc) ** 2)
    np.testing.assert_allclose(acc, [4.0, 8.0])
    assert tape.gradient(loss, x) is None
    why = tape.explain(loss, x)
    assert why.reason == "left_the_tape" and "acc += 3 * x" in why.message
    with pytest.raises(TypeError, match="immutable"):
        np.add(acc, acc, out=(x,))


COMPOSED = [
    ("rot90", (A,), {}), ("rot90", (A,), {"k": 3}), ("append", (A, A[:1]), {"axis": 0}), ("append", (V, 2.0), {}),
    ("diff", (A,), {"n": 2}), ("diff", (A,), {"axis": 0, "prepend": 0.0}), ("gradient", (V,), {}),
    ("gradient", (A, 0.5), {"axis": 1}), ("kron", (A[:2, :2], SQ), {}), ("cross", (SQ, A[:, :3]), {}),
    ("sinc", (np.array([0.0, 0.3, -1.2]),), {}),
    ("deg2rad", (A,), {}), ("nan_to_num", (np.array([1.0, np.nan, np.inf]),), {}), ("partition", (V, 2), {}),
    ("rollaxis", (RNG.normal(size=(2, 3, 4)), 2), {}), ("atleast_3d", (V,), {}), ("fmax", (A, P), {}),
]


@pytest.mark.parametrize("name,args,kwargs", COMPOSED, ids=[c[0] for c in COMPOSED])
def test_functions_written_with_ops_match_numpy_and_differentiate(name, args, kwargs):
    got = getattr(np, name)(*[adv.constant(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    assert isinstance(got, adv.Tensor)
    np.testing.assert_allclose(got.numpy(), getattr(np, name)(*args, **kwargs), rtol=1e-12)
    if np.all(np.isfinite(args[0])):
        assert adv.check_grads(lambda t: getattr(np, name)(t, *args[1:], **kwargs), [args[0]]).ok


def test_joining_and_splitting_like_numpy():
    x, y = adv.constant(A), adv.constant(P)
    for f in (np.vstack, np.hstack, np.dstack, np.column_stack):
        np.testing.assert_allclose(f([x, y]).numpy(), f([A, P]))
    for f, arg in ((np.array_split, 3), (np.hsplit, 2), (np.vsplit, [1])):
        assert [p.shape for p in f(x, arg)] == [p.shape for p in f(A, arg)]
    np.testing.assert_allclose(np.einsum(x, [0, 1], y, [2, 1], [0, 2]).numpy(), A @ P.T)
    np.testing.assert_allclose(np.einsum("jk...,lj...->lk...", RNG.normal(size=(3, 2)) * 0 + 1.0,
                                         adv.constant(np.ones((2, 3, 4)))).numpy(), np.full((2, 2, 4), 3.0))
    np.testing.assert_allclose(np.linspace(adv.constant(1.0), 2.0, 3).numpy(), [1.0, 1.5, 2.0])
    g = adv.grad(lambda a: adv.sum(np.linspace(a, 2.0, 5)))(adv.constant(1.0))
    assert float(g) == 2.5


FLOAT32_OPS = {
    "log1p": adv.log1p, "sinh": adv.sinh, "arcsin": adv.arcsin, "erf": adv.erf, "var": adv.var, "std": adv.std,
    "prod": adv.prod, "cumprod": adv.cumprod, "norm": adv.norm, "sort": adv.sort, "trace": adv.trace,
    "gelu": adv.nn.gelu, "gelu_tanh": lambda t: adv.nn.gelu(t, approximate=True), "silu": adv.nn.silu,
    "selu": adv.nn.selu, "hard_sigmoid": adv.nn.hard_sigmoid, "log_sigmoid": adv.nn.log_sigmoid,
    "einsum": lambda t: adv.einsum("ij,kj->ik", t, t), "pad": lambda t: adv.pad(t, 1, mode="reflect"),
    "hypot": lambda t: adv.hypot(t, 1.0), "mod": lambda t: t % 0.25, "logaddexp": lambda t: adv.logaddexp(t, 0.5),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_OPS))
def test_float32_stays_float32_forward_and_backward(name):
    x = adv.Variable(np.array([[0.3, -0.5, 0.7], [0.2, 0.4, -0.9], [0.1, 0.6, 0.8]], dtype=np.float32))
    with adv.GradientTape() as tape:
        y = FLOAT32_OPS[name](x)
        loss = adv.sum(y)
    assert y.dtype == np.float32 and tape.gradient(loss, x).dtype == np.float32
