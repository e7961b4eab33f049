"""The numpy-name audit (issue 37): every ``adv.<name>`` that numpy also has means what numpy means.

For each such name the test calls ``adv.<name>`` and ``np.<name>`` on the same sample inputs and
compares values and shapes (lists of pieces piece by piece). A name that numpy has and ``adv`` adds
later without a case here fails :func:`test_every_shared_name_has_a_case`, so the audit cannot go
stale. The deliberate differences are few and listed in :data:`autodiff_viz.core.ops.NUMPY_DIFFERENCES`
(and in docs/coming-from.md): each is either loud (it raises, naming what to write) or a dtype only.
"""
import warnings

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.core.ops import NUMPY_DIFFERENCES

RNG = np.random.default_rng(37)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(3, 4))
P = RNG.uniform(0.5, 2.0, size=(3, 4))
U = RNG.uniform(-0.9, 0.9, size=(3, 4))
SQ = RNG.normal(size=(3, 3))
V = RNG.normal(size=6)
W = RNG.normal(size=3)
C3 = RNG.normal(size=(2, 3, 4))
H = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -3.7])       # halves: numpy rounds them to even
I = np.array([[3, 1, 2], [0, 5, 4]])

# name -> [(args, kwargs), ...]: inputs are numpy arrays, given as they are to both libraries.
CASES = {
    "abs": [((A,), {})], "absolute": [((A,), {})], "negative": [((A,), {})], "positive": [((A,), {})],
    "sign": [((np.array([-2.0, 0.0, 3.0]),), {})], "sqrt": [((P,), {})], "square": [((A,), {})],
    "cbrt": [((A,), {})], "reciprocal": [((P,), {})], "exp": [((A,), {})], "exp2": [((A,), {})],
    "expm1": [((A,), {})], "log": [((P,), {})], "log2": [((P,), {})], "log10": [((P,), {})],
    "log1p": [((P,), {})], "sin": [((A,), {})], "cos": [((A,), {})], "tan": [((U,), {})],
    "sinh": [((A,), {})], "cosh": [((A,), {})], "tanh": [((A,), {})], "arcsin": [((U,), {})],
    "arccos": [((U,), {})], "arctan": [((A,), {})], "arcsinh": [((A,), {})], "arccosh": [((P + 1,), {})],
    "arctanh": [((U,), {})], "sinc": [((A,), {})], "deg2rad": [((A,), {})], "rad2deg": [((A,), {})],
    "degrees": [((A,), {})], "radians": [((A,), {})],
    "floor": [((H,), {})], "ceil": [((H,), {})], "trunc": [((H,), {})], "fix": [((H,), {})],
    "rint": [((H,), {})], "round": [((H,), {}), ((A,), {"decimals": 2})], "around": [((H,), {})],
    "nan_to_num": [((np.array([np.nan, np.inf, -np.inf, 1.0]),), {})],
    "add": [((A, B), {})], "subtract": [((A, B), {})], "multiply": [((A, W[:, None]), {})],
    "divide": [((A, P), {})], "true_divide": [((A, P), {})], "floor_divide": [((A, P), {})],
    "mod": [((A, P), {}), ((-A, P), {})], "remainder": [((A, -P), {})], "power": [((P, A), {}), ((A, 2), {})],
    "maximum": [((A, B), {})], "minimum": [((A, B), {})], "fmax": [((A, B), {})], "fmin": [((A, B), {})],
    "arctan2": [((A, B), {})], "hypot": [((A, B), {})], "logaddexp": [((A, B), {})],
    "logaddexp2": [((A, B), {})],
    "equal": [((I, 3), {})], "not_equal": [((I, 3), {})], "greater": [((A, B), {})],
    "greater_equal": [((I, 3), {})], "less": [((A, B), {})], "less_equal": [((I, 3), {})],
    "clip": [((A, -0.5, 0.5), {}), ((A, None, 0.2), {})],
    "where": [((A > 0, A, B), {})],
    "matmul": [((A, A.T), {}), ((C3, RNG.normal(size=(4, 2))), {})], "dot": [((A, A.T), {}), ((V, V), {})],
    "inner": [((A, B), {})], "outer": [((V, W), {})], "vdot": [((A, B), {})],
    "tensordot": [((A, A.T), {"axes": 1}), ((C3, C3), {"axes": ([1, 2], [1, 2])})],
    "einsum": [(("ij,kj->ik", A, B), {})], "kron": [((SQ[:2, :2], W[:2]), {})],
    "cross": [((W, SQ[0]), {})],
    "sum": [((A,), {}), ((A,), {"axis": 1, "keepdims": True})], "mean": [((A,), {"axis": 0})],
    "prod": [((P,), {"axis": 1})], "max": [((A,), {"axis": 1})], "min": [((A,), {})],
    "amax": [((A,), {"axis": 0})], "amin": [((A,), {"axis": -1})], "std": [((A,), {"ddof": 1})],
    "var": [((A,), {"axis": 1})], "all": [((I,), {"axis": 0})], "any": [((I > 3,), {"axis": 1})],
    "argmax": [((A,), {"axis": 1}), ((A,), {})], "argmin": [((A,), {"axis": 0})],
    "argsort": [((A,), {"axis": 1})], "sort": [((A,), {}), ((A,), {"axis": None})],
    "partition": [((V, 2), {})], "cumsum": [((A,), {"axis": 1}), ((A,), {})], "cumprod": [((P,), {"axis": 0})],
    "trace": [((SQ,), {}), ((A,), {"offset": 1})], "diff": [((A,), {}), ((V,), {"n": 2})],
    "gradient": [((V,), {}), ((A,), {"axis": 1})],
    "reshape": [((A, (2, 6)), {}), ((A, -1), {})], "ravel": [((A,), {})], "transpose": [((C3,), {}),
                                                                                  ((C3, (1, 0, 2)), {})],
    "swapaxes": [((C3, 0, 2), {})], "moveaxis": [((C3, 0, -1), {})], "rollaxis": [((C3, 2), {})],
    "expand_dims": [((A, 1), {}), ((A, (0, 3)), {})], "squeeze": [((A[None, :, None],), {}),
                                                                  ((A[None],), {"axis": 0})],
    "broadcast_to": [((W, (2, 3)), {})], "atleast_1d": [((np.float64(2.0),), {})],
    "atleast_2d": [((V,), {})], "atleast_3d": [((A,), {})],
    "concatenate": [(([A, B],), {}), (([A, B],), {"axis": 1}), (([A, B],), {"axis": None})],
    "concat": [(([A, B],), {}), (([A, B],), {"axis": 1}), (([A, B],), {"axis": None})],   # TensorFlow's and numpy 2's
    "stack": [(([A, B],), {"axis": 1})], "hstack": [(([A, B],), {})], "vstack": [(([A, B],), {})],
    "dstack": [(([A, B],), {})], "column_stack": [(([V, V],), {})], "row_stack": [(([V, V],), {})],
    "append": [((A, B), {}), ((A, B), {"axis": 0})],
    "split": [((V, [1, 5]), {}), ((V, 3), {}), ((A, [1], 1), {}), ((V, [2, -1]), {})],
    "array_split": [((V, 4), {}), ((V, [1, 3]), {})], "hsplit": [((A, 2), {}), ((A, [3]), {})],
    "vsplit": [((A, [1]), {})], "dsplit": [((C3, [1, 3]), {})],
    "flip": [((A,), {}), ((A,), {"axis": 1})], "fliplr": [((A,), {})], "flipud": [((A,), {})],
    "rot90": [((A,), {}), ((A, 3), {})], "roll": [((A, 2), {}), ((A, -1), {"axis": 0})],
    "tile": [((A, (2, 1)), {})], "repeat": [((A, 2), {"axis": 1}), ((V, [1, 0, 2, 1, 3, 1]), {})],
    "pad": [((A, ((1, 2), (0, 1))), {}), ((A, 1), {"mode": "reflect"})],
    "triu": [((A,), {"k": 1})], "tril": [((A,), {})], "diag": [((W,), {}), ((A,), {"k": 1})],
    "diagonal": [((C3,), {"axis1": 1, "axis2": 2})],
    "take": [((A, [0, 5, 7]), {}), ((A, [2, 0], 1), {})], "take_along_axis": [((A, np.argsort(A, 1), 1), {})],
    "select": [(([A > 0.5, A < -0.5], [A, -A]), {"default": 0.0})],
    "linspace": [((0.0, 1.0, 5), {}), ((1.0, 2.0, 4), {"endpoint": False})],
    "zeros": [(((2, 3),), {})], "ones": [((4,), {})], "full": [(((2, 2), 7.5), {})],
    "eye": [((3,), {}), ((2, 3, 1), {})], "zeros_like": [((A,), {})], "ones_like": [((I,), {})],
    "shape": [((C3,), {})],
    # TensorFlow's top-level names that numpy 2 also has, with numpy's meaning (issue 43)
    "acos": [((U,), {})], "asin": [((U,), {})], "atan": [((A,), {})], "acosh": [((P + 1,), {})],
    "asinh": [((A,), {})], "atanh": [((U,), {})], "atan2": [((A, B), {})], "pow": [((P, A), {})],
    "logical_and": [((A > 0, B > 0), {})], "logical_or": [((A > 0, B > 0), {})], "logical_not": [((A > 0,), {})],
    "meshgrid": [((V, W), {}), ((V, W), {"indexing": "ij"})], "unstack": [((A,), {})],
}


def _numpy(result):
    """A tensor's value, a list of pieces' values, a tuple unchanged (np.shape)."""
    if isinstance(result, adv.Tensor):
        return result.numpy()
    if isinstance(result, list):
        return [_numpy(r) for r in result]
    return result


def _shared_names():
    """Every public callable that both ``adv`` and numpy have (modules such as ``linalg`` excepted, and numpy's
    own objects re-exported as they are: ``adv.float32 is np.float32``)."""
    import types
    return {n for n in dir(adv) if not n.startswith("_") and hasattr(np, n)
            and not isinstance(getattr(adv, n), types.ModuleType) and getattr(adv, n) is not getattr(np, n)}


def test_every_shared_name_has_a_case():
    """A name numpy has is either audited here or a listed deliberate difference: none is forgotten."""
    shared = _shared_names()
    missing = shared - set(CASES) - set(NUMPY_DIFFERENCES)
    assert not missing, f"adv has numpy's names {sorted(missing)}: add a case to CASES"
    assert not set(CASES) - shared, sorted(set(CASES) - shared)


@pytest.mark.parametrize("name", sorted(CASES))
def test_adv_name_gives_numpys_values_and_shapes(name):
    for args, kwargs in CASES[name]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)     # np.row_stack: numpy 2 prefers vstack
            want = getattr(np, name)(*args, **kwargs)
        got = _numpy(getattr(adv, name)(*args, **kwargs))
        if isinstance(want, list):
            assert isinstance(got, list) and len(got) == len(want), (name, args, kwargs)
            pairs = list(zip(got, want))
        else:
            pairs = [(got, want)]
        for g, w in pairs:
            assert np.shape(g) == np.shape(w), (name, kwargs, np.shape(g), np.shape(w))
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, err_msg=f"adv.{name} {kwargs}")
            if name not in NUMPY_DIFFERENCES:
                assert np.asarray(g).dtype == np.asarray(w).dtype, (name, np.asarray(g).dtype, np.asarray(w).dtype)


def test_split_is_numpys_indices_and_tensorflows_sizes_take_a_keyword():
    """The issue's case: ``[1, 5]`` on 6 entries is three pieces in numpy (cuts at 1 and 5); TensorFlow's
    ``tf.split(x, [1, 5])`` reads sizes and gives two. Here the plain call is numpy's, and TensorFlow's
    sizes are spelled with TensorFlow's keyword ``num_or_size_splits=``."""
    x = adv.constant(np.arange(6.0))
    assert [p.shape for p in adv.split(x, [1, 5])] == [(1,), (4,), (1,)]
    assert [p.shape for p in adv.split(x, num_or_size_splits=[1, 5])] == [(1,), (5,)]
    with pytest.raises(ValueError, match="num_or_size_splits"):
        adv.split(x, num_or_size_splits=[1, 4])
    with pytest.raises(ValueError, match="equal"):
        adv.split(x, 4)
    g = adv.grad(lambda t: adv.sum(adv.split(t, [1, 4])[1] ** 2))(x)
    np.testing.assert_allclose(g.numpy(), [0, 2, 4, 6, 0, 0])


def test_a_negative_base_to_a_fractional_power_has_a_nan_gradient_like_its_value():
    """``(−2)^0.5`` is NaN, so its slope with respect to the exponent is NaN too (not 0, which would
    hide the NaN from an optimizer); ``(−2)^2 = 4`` keeps slope 0 in the exponent (TensorFlow's choice:
    ``ln a`` is not real), and ``∂/∂a`` is ``b·aᵇ⁻¹`` as usual."""
    b = adv.constant([0.5, 2.0])
    with np.errstate(invalid="ignore"):
        y = adv.power(-2.0, b)
        g = adv.grad(lambda t: adv.sum(adv.power(-2.0, t)))(b)
        ga = adv.grad(lambda a: adv.sum(a ** 0.5))(adv.constant([-4.0, 4.0]))
    assert np.isnan(y.numpy()[0]) and y.numpy()[1] == 4.0
    assert np.isnan(g.numpy()[0]) and g.numpy()[1] == 0.0
    assert np.isnan(ga.numpy()[0]) and ga.numpy()[1] == 0.25


def test_the_deliberate_differences_are_documented():
    """Each listed difference is named in docs/coming-from.md's table of them."""
    import pathlib
    page = (pathlib.Path(__file__).parents[1] / "docs" / "coming-from.md").read_text()
    section = page.split("### numpy names that differ", 1)[1].split("\n## ", 1)[0]
    for name in NUMPY_DIFFERENCES:
        assert f"`adv.{name}" in section, name
