"""Tensors, variables and constants: dtypes, operators, numpy interplay, repr."""
import numpy as np
import pytest

import autodiff_viz as adv


def test_dtypes_follow_numpy_and_tensorflow_conventions():
    assert adv.constant(1.5).dtype == np.float64
    assert adv.constant(3).dtype == np.int64
    assert adv.constant(np.ones(2, dtype=np.float32)).dtype == np.float32
    assert adv.constant([1, 2], dtype="float32").dtype == np.float32
    f32 = adv.constant(np.ones(2, dtype=np.float32))
    assert (f32 * 2.5).dtype == np.float32 and (2.5 - f32).dtype == np.float32
    assert (adv.constant([1, 2]) * 0.5).dtype == np.float64


def test_constant_copies_its_input():
    a = np.array([1.0, 2.0])
    t = adv.constant(a)
    a[0] = 100.0
    assert t.numpy()[0] == 1.0


def test_reflected_operators():
    x = adv.constant([1.0, 2.0])
    np.testing.assert_allclose((1 - x).numpy(), [0.0, -1.0])
    np.testing.assert_allclose((2 / x).numpy(), [2.0, 1.0])
    np.testing.assert_allclose((2 ** x).numpy(), [2.0, 4.0])
    np.testing.assert_allclose((np.array([1.0, 1.0]) @ x).numpy(), 3.0)
    np.testing.assert_allclose((-x).numpy(), [-1.0, -2.0])
    assert isinstance(np.array([3.0, 4.0]) * x, adv.Tensor)      # numpy defers to the tensor


def test_numpy_functions_on_tensors_stay_differentiable():
    x = adv.Variable([0.5, 1.0])
    with adv.GradientTape() as tape:
        y = np.sum(np.exp(x) * np.tanh(x))
    assert isinstance(y, adv.Tensor)
    g = tape.gradient(y, x).numpy()
    v = np.array([0.5, 1.0])
    np.testing.assert_allclose(g, np.exp(v) * np.tanh(v) + np.exp(v) * (1 - np.tanh(v) ** 2))


def test_comparisons_give_bool_tensors_and_tensors_stay_hashable():
    x = adv.constant([1.0, 2.0, 3.0])
    assert (x > 1.5).numpy().tolist() == [False, True, True]
    assert (x == 2.0).numpy().tolist() == [False, True, False]
    assert {x: "ok"}[x] == "ok"


def test_methods_mirror_numpy():
    x = adv.constant(np.arange(6.0).reshape(2, 3))
    assert x.sum().numpy() == 15.0
    np.testing.assert_allclose(x.mean(axis=0).numpy(), [1.5, 2.5, 3.5])
    assert x.max().numpy() == 5.0 and x.min(axis=1, keepdims=True).shape == (2, 1)
    assert x.T.shape == (3, 2) and x.reshape(3, 2).shape == (3, 2) and x.reshape((6,)).shape == (6,)
    assert len(x) == 2 and x.ndim == 2 and x.size == 6 and x[1, 2].item() == 5.0
    assert [row.shape for row in x] == [(3,), (3,)]


def test_variable_assign_family():
    v = adv.Variable([1.0, 2.0], name="v")
    v.assign([3.0, 4.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub(0.5)
    np.testing.assert_allclose(v.numpy(), [3.5, 4.5])
    with pytest.raises(ValueError, match="shape \\(2,\\).*\\(3,\\)"):
        v.assign([1.0, 2.0, 3.0])
    out = v.numpy()
    out[0] = -1
    assert v.numpy()[0] == 3.5                    # numpy() hands out a copy


def test_a_variable_carries_its_constraint_none_by_default_as_tensorflow():
    assert adv.Variable(1.0).constraint is None                     # tf.Variable(1.0).constraint is None
    v = adv.Variable([-1.0, 2.0], constraint=adv.abs)
    assert v.constraint is adv.abs
    v.assign(v.constraint(v))                                        # the book's custom loop (ch. 12)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    import copy
    assert copy.deepcopy(v).constraint is adv.abs
    with pytest.raises(ValueError, match="constraint must be callable"):
        adv.Variable(1.0, constraint=3)


def test_repr_is_clear():
    r = repr(adv.Variable([1.0, 2.0], name="w"))
    assert r.startswith("Variable([1., 2.]") and "shape=(2,)" in r and "float64" in r and "name='w'" in r


def test_ambiguous_truth_value_is_explained():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(adv.constant([1.0, 2.0]))
    assert bool(adv.constant(1.0))


def test_ops_cover_the_design_list():
    x = adv.constant(np.arange(6.0).reshape(2, 3))
    assert adv.concatenate([x, x], axis=1).shape == (2, 6)
    assert adv.stack([x, x], axis=-1).shape == (2, 3, 2)
    assert [p.shape for p in adv.split(x, 3, axis=1)] == [(2, 1)] * 3
    assert adv.expand_dims(x, 0).shape == (1, 2, 3) and adv.squeeze(adv.expand_dims(x, 1)).shape == (2, 3)
    assert adv.broadcast_to(adv.constant([1.0, 2.0, 3.0]), (2, 3)).shape == (2, 3)
    np.testing.assert_allclose(adv.take(x, [2, 0], axis=1).numpy(), [[2, 0], [5, 3]])
    np.testing.assert_allclose(adv.one_hot(adv.constant([0, 2]), 3).numpy(), [[1, 0, 0], [0, 0, 1]])
    assert adv.argmax(x, axis=1).numpy().tolist() == [2, 2]
    np.testing.assert_allclose(adv.where(x > 2, x, 0.0).numpy(), [[0, 0, 0], [3, 4, 5]])
    np.testing.assert_allclose(adv.clip(x, 1.0, 4.0).numpy(), np.clip(x.numpy(), 1, 4))
    np.testing.assert_allclose(adv.nn.softmax(x).numpy().sum(axis=-1), [1.0, 1.0])
    np.testing.assert_allclose(adv.nn.logsumexp(adv.constant([1000.0, 1000.0])).numpy(), 1000 + np.log(2))
    np.testing.assert_allclose(adv.nn.leaky_relu(adv.constant([-1.0, 2.0])).numpy(), [-0.2, 2.0])
    assert np.isfinite(adv.nn.softplus(adv.constant(1000.0)).numpy())
    assert adv.transpose(adv.constant(np.ones((2, 3, 4))), (1, 2, 0)).shape == (3, 4, 2)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_number_arithmetic_keeps_the_tensor_dtype_with_or_without_a_tape(dtype):
    """``lr * g`` outside a tape is plain numpy (nothing can record it); inside, on a watched tensor, it is recorded."""
    g = adv.constant(np.array([1.5, -2.0, 4.0], dtype=dtype))
    plain = [0.1 * g, g * 3, 1 - g, g / 4, g + 2, 2.5 / g]
    x = adv.constant(np.array([1.5, -2.0, 4.0], dtype=dtype))
    with adv.GradientTape() as tape:
        tape.watch(x)
        recorded = [0.1 * x, x * 3, 1 - x, x / 4, x + 2, 2.5 / x]
    assert len(tape.nodes) == 6
    for a, b in zip(plain, recorded):
        assert a.dtype == b.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert all(t._node is None for t in plain)
