"""Every rule of the table against central finite differences, in float64.

For each entry the VJP is checked with a *batch* of cotangents (shape
``(3,) + out.shape``) and the JVP with a batch of tangents, both through the
engine, so broadcasting is undone and batch axes are kept exactly as in a
real Jacobian computation. A new rule without a case here fails
``test_every_rule_has_a_case``.
"""
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff_viz as adv
from autodiff_viz.core import engine, rules, walks
from autodiff_viz.core.tensor import Tensor

BATCH = 3


from rule_makers import away0, const, pos, real  # noqa: E402

# rule name -> list of (input makers, params)
CASES = {
    "add": [([real((2, 3)), real((3,))], {}), ([real((2, 1)), real((1, 4))], {})],
    "subtract": [([real((2, 3)), real((2, 1))], {}), ([real(()), real((3,))], {})],
    "multiply": [([real((2, 3)), real((3,))], {}), ([real((4, 1, 2)), real((3, 1))], {})],
    "divide": [([real((2, 3)), pos((3,))], {}), ([real((3,)), pos((2, 1))], {})],
    "power": [([pos((2, 3)), real((3,))], {}), ([pos((3,)), const(3.0)], {})],
    "negative": [([real((2, 3))], {})],
    "exp": [([real((2, 3))], {})],
    "log": [([pos((2, 3))], {})],
    "sqrt": [([pos((4,))], {})],
    "square": [([real((2, 3))], {})],
    "sign": [([away0((5,))], {})],
    "abs": [([away0((2, 3))], {})],
    "tanh": [([real((2, 3))], {})],
    "sin": [([real((2, 3))], {})],
    "cos": [([real((2, 3))], {})],
    "sigmoid": [([real((2, 3))], {})],
    "relu": [([away0((2, 3))], {})],
    "leaky_relu": [([away0((2, 3))], {"alpha": 0.2})],
    "softplus": [([real((2, 3))], {})],
    "maximum": [([real((2, 3)), real((3,))], {})],
    "minimum": [([real((2, 3)), real((2, 1))], {})],
    "where": [([lambda rng: rng.normal(size=(2, 3)) > 0, real((2, 3)), real((3,))], {})],
    "clip": [([lambda rng: rng.choice([-1.5, -0.5, 0.3, 0.8, 2.0], size=(2, 3)) + rng.uniform(-.05, .05, (2, 3)),
               const(-1.0), const(1.0)], {})],
    "matmul": [([real((2, 3)), real((3, 4))], {}), ([real((3,)), real((3, 2))], {}),
               ([real((2, 3)), real((3,))], {}), ([real((3,)), real((3,))], {}),
               ([real((2, 2, 3)), real((3, 4))], {}), ([real((3, 4)), real((2, 4, 2))], {})],
    "sum": [([real((2, 3, 4))], {"axis": (-1,), "keepdims": False}),
            ([real((2, 3))], {"axis": (-2, -1), "keepdims": True})],
    "mean": [([real((2, 3, 4))], {"axis": (-3, -1), "keepdims": False})],
    "max": [([real((2, 3, 4))], {"axis": (-1,), "keepdims": False}),
            ([real((3, 4))], {"axis": (-2, -1), "keepdims": True})],
    "min": [([real((2, 5))], {"axis": (-2,), "keepdims": False})],
    "logsumexp": [([real((2, 3))], {"axis": (-1,), "keepdims": False}),
                  ([real((2, 3))], {"axis": (-2, -1), "keepdims": True})],
    "softmax": [([real((2, 4))], {"axis": (-1,)}), ([real((3, 2))], {"axis": (-2,)})],
    "log_softmax": [([real((2, 4))], {"axis": (-1,)})],
    "reshape": [([real((2, 3))], {"shape": (3, 2)}), ([real((2, 3))], {"shape": (6,)})],
    "expand_dims": [([real((2, 3))], {"shape": (2, 1, 3)})],
    "squeeze": [([real((2, 1, 3))], {"shape": (2, 3)})],
    "transpose": [([real((2, 3, 4))], {"axes": (2, 0, 1)})],
    "broadcast_to": [([real((3, 1))], {"shape": (2, 3, 4)})],
    "getitem": [([real((4, 3))], {"index": (slice(1, 3),), "lead": 0}),
                ([real((4, 3))], {"index": (np.array([0, 2, 2]), 1), "lead": 0}),
                ([real((4, 3))], {"index": (np.array([True, False, True, True]),), "lead": 0}),
                ([real((2, 4, 3))], {"index": (np.array([0, 1]), slice(None), np.array([2, 0])), "lead": 0})],
    "take": [([real((4, 3))], {"index": (slice(None), np.array([2, 0, 2])), "lead": 0})],
    "scatter": [([real((2, 3))], {"index": (np.array([1, 1]),), "shape": (4, 3), "lead": 0})],
    "concatenate": [([real((2, 3)), real((1, 3)), real((3, 3))], {"axis": -2})],
    "stack": [([real((2, 3)), real((2, 3))], {"axis": 1})],
    "cast": [([real((2, 3))], {"dtype": np.dtype("float64")})],
    # no gradient: checked by test_non_differentiable_rules_stop_the_gradient
    "less": [([real((3,)), real((3,))], {})], "less_equal": [([real((3,)), real((3,))], {})],
    "greater": [([real((3,)), real((3,))], {})], "greater_equal": [([real((3,)), real((3,))], {})],
    "equal": [([real((3,)), real((3,))], {})], "not_equal": [([real((3,)), real((3,))], {})],
    "argmax": [([real((2, 3))], {"axis": 1})], "argmin": [([real((2, 3))], {"axis": 0})],
    "one_hot": [([lambda rng: np.array([0, 2, 1])], {"depth": 3, "dtype": np.dtype("float64")})],
    "stop_gradient": [([real((3,))], {})],
}


# Cases of the other sections of the table live beside this file, one module per section.
for _section in ("rule_cases_numpy", "rule_cases_linalg", "rule_cases_nn", "rule_cases_attention"):
    for _name, _cases_of in __import__(_section).CASES.items():
        CASES.setdefault(_name, []).extend(_cases_of)


def test_every_rule_has_a_case():
    missing = sorted(set(rules.TABLE) - set(CASES))
    assert not missing, ("rules without a finite-difference case in tests/test_rules.py or tests/rule_cases_*.py: "
                         f"{missing}")


def _cases(differentiable):
    for name, cases in CASES.items():
        if rules.TABLE[name].differentiable == differentiable:
            for k, (makers, params) in enumerate(cases):
                yield pytest.param(name, makers, params, id=f"{name}-{k}")


def _numeric_jacobian(rule, values, i, params, eps=1e-6):
    x = values[i]
    cols = []
    for j in range(x.size):
        plus = [v.copy() for v in values]
        minus = [v.copy() for v in values]
        plus[i].flat[j] += eps
        minus[i].flat[j] -= eps
        cols.append((rule.forward(*plus, **params) - rule.forward(*minus, **params)) / (2 * eps))
    out_shape = np.shape(rule.forward(*values, **params))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def _record(rule, values, params):
    tensors = [Tensor(v) for v in values]
    with adv.GradientTape(persistent=True) as tape:
        for t, spec in zip(tensors, [rule.spec(i) for i in range(len(tensors))]):
            if spec.differentiable and t.dtype.kind == "f":
                tape.watch(t)
        y = engine.apply(rule, *tensors, **params)
    return tape, tensors, y


@pytest.mark.parametrize("name,makers,params", list(_cases(True)))
def test_vjp_and_jvp_match_finite_differences_with_batch(name, makers, params):
    rule = rules.TABLE[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    values = [np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f" else v
              for v in (m(rng) for m in makers)]
    tape, tensors, y = _record(rule, values, params)
    assert np.allclose(y.numpy(), rule.forward(*values, **params))
    for i, t in enumerate(tensors):
        if not rule.spec(i).differentiable or t.dtype.kind != "f":
            continue
        J = _numeric_jacobian(rule, values, i, params)
        out_axes = tuple(range(y.ndim))
        G = rng.normal(size=(BATCH,) + y.shape)
        expected_vjp = np.tensordot(G, J, axes=(tuple(range(1, y.ndim + 1)), out_axes))
        grads = walks.backward(tape._nodes, {y._id: G}, {t._id})
        assert grads[t._id].shape == (BATCH,) + t.shape
        np.testing.assert_allclose(grads[t._id], expected_vjp, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name}: VJP of input {i}")

        T = rng.normal(size=(BATCH,) + t.shape)
        in_axes = tuple(range(y.ndim, y.ndim + t.ndim))
        expected_jvp = np.moveaxis(np.tensordot(J, T, axes=(in_axes, tuple(range(1, t.ndim + 1)))), -1, 0)
        tangents = walks.push_tangents(tape._nodes, {t._id: T})
        assert tangents[y._id].shape == (BATCH,) + y.shape
        np.testing.assert_allclose(tangents[y._id], expected_jvp, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name}: JVP of input {i}")


@pytest.mark.parametrize("name,makers,params", list(_cases(False)))
def test_non_differentiable_rules_stop_the_gradient(name, makers, params):
    rule = rules.TABLE[name]
    rng = np.random.default_rng(0)
    values = [m(rng) for m in makers]
    tensors = [Tensor(v) for v in values]
    with adv.GradientTape() as tape:
        for t in tensors:
            if t.dtype.kind == "f":
                tape.watch(t)
        y = engine.apply(rule, *tensors, **params)
        loss = adv.sum(adv.cast(y, "float64") * 2.0)
    float_inputs = [t for t in tensors if t.dtype.kind == "f"]
    grads = tape.gradient(loss, float_inputs) if float_inputs else []
    assert all(g is None for g in grads)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_differentiable_input_has_a_factor_text(name):
    rule = rules.TABLE[name]
    for spec in rule.inputs:
        assert (spec.factor is not None) == spec.differentiable
        if spec.differentiable:
            assert spec.jvp is not None, f"{name}.{spec.name} has a VJP but no JVP"


def _broadcastable_pair():
    dims = st.integers(1, 3)
    return st.lists(dims, min_size=0, max_size=3).flatmap(
        lambda shape: st.tuples(
            st.just(tuple(shape)),
            st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)),
            st.integers(0, len(shape))))


@settings(max_examples=40, deadline=None)
@given(_broadcastable_pair(), st.sampled_from(["add", "subtract", "multiply", "divide", "maximum"]))
def test_elementwise_gradients_sum_over_broadcast_axes(pair, name):
    """Any broadcast pair: the gradient of sum(a op b) has each input's own shape and matches numpy."""
    shape, ones, drop = pair
    b_shape = tuple(1 if o else n for n, o in zip(shape, ones))[drop:]
    rng = np.random.default_rng(len(shape) * 7 + drop)
    a = adv.constant(rng.uniform(0.5, 2, shape))
    b = adv.constant(rng.uniform(0.5, 2, b_shape) + 3.0)
    rule = rules.TABLE[name]
    with adv.GradientTape() as tape:
        tape.watch([a, b])
        loss = adv.sum(engine.call(rule, a, b))
    ga, gb = tape.gradient(loss, [a, b])
    assert ga.shape == a.shape and gb.shape == b.shape
    Ja = _numeric_jacobian(rule, [a._value, b._value], 0, {})
    Jb = _numeric_jacobian(rule, [a._value, b._value], 1, {})
    out_axes = tuple(range(np.broadcast_shapes(shape, b_shape).__len__()))
    np.testing.assert_allclose(ga.numpy(), Ja.sum(axis=out_axes), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), Jb.sum(axis=out_axes), rtol=1e-6, atol=1e-8)
