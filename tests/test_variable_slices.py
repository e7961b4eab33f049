"""Variables as TensorFlow has them: a slice of a Variable can be written (issue 43).

``v[idx].assign(new)`` (``assign_add``, ``assign_sub``) and ``v.scatter_nd_update(indices, updates)``
(``scatter_nd_add``, ``scatter_nd_sub``) change those entries of ``v`` and return it, with TensorFlow's
values; each write is noted on a recording tape with its line, like a whole ``v.assign(...)``, and
``tape.explain`` names it where a gradient stops there (an assignment is not differentiable, in TensorFlow
neither). Every case is compared with TensorFlow itself.
"""
import numpy as np
import pytest

import autodiff_viz as adv

tf = pytest.importorskip("tensorflow")


def test_d2l_writes_one_entry_and_a_block_of_a_variable():
    """Dive into Deep Learning, 2.1 "Data Manipulation", TensorFlow tab: ``X_var[1, 2].assign(9)`` and
    ``X_var[0:2, :].assign(tf.ones(X_var[0:2, :].shape, dtype=tf.float32) * 12)``
    (https://d2l.ai/chapter_preliminaries/ndarray.html), typed in with ``import autodiff_viz as tf``."""
    def cell(lib):
        X = lib.reshape(lib.range(12, dtype=lib.float32), (3, 4))
        X_var = lib.Variable(X)
        first = X_var[1, 2].assign(9)
        after_one = X_var.numpy().copy()
        X_var[0:2, :].assign(lib.ones(X_var[0:2, :].shape, dtype=lib.float32) * 12)
        return first, after_one, X_var

    first, after_one, ours = cell(adv)
    _, tf_after_one, theirs = cell(tf)
    np.testing.assert_array_equal(after_one, tf_after_one)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == theirs.dtype.as_numpy_dtype and first is ours


@pytest.mark.parametrize("index", [np.s_[:, 2:6], np.s_[:], np.s_[1], np.s_[::2, -1], np.s_[..., 3]])
@pytest.mark.parametrize("how", ["assign", "assign_add", "assign_sub"])
def test_slice_writes_match_tensorflow(index, how):
    """TensorFlow's slices have ``assign``; ``assign_add``/``assign_sub`` here are its ``assign(part ± new)``."""
    start = np.arange(24.0).reshape(3, 8)
    new = np.sin(np.arange(start[index].size)).reshape(start[index].shape)
    ours, theirs = adv.Variable(start), tf.Variable(start)
    assert getattr(ours[index], how)(new) is ours
    sign = {"assign": 0, "assign_add": 1, "assign_sub": -1}[how]
    theirs[index].assign(new if not sign else theirs[index] + sign * new)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("how", ["scatter_nd_update", "scatter_nd_add", "scatter_nd_sub"])
def test_scatter_nd_writes_match_tensorflow(how):
    start = np.arange(12.0).reshape(3, 4)
    indices, updates = np.array([[0, 1], [2, 3], [1, 0]]), np.array([10.0, 20.0, 30.0])
    ours, theirs = adv.Variable(start), tf.Variable(start)
    assert getattr(ours, how)(indices, updates) is ours
    getattr(theirs, how)(indices, updates)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    rows = adv.Variable(start)                       # index tuples of length 1 write whole rows
    rows.scatter_nd_update([[2], [0]], np.zeros((2, 4)))
    np.testing.assert_array_equal(rows.numpy()[[0, 2]], 0.0)
    np.testing.assert_array_equal(rows.numpy()[1], start[1])


def test_a_read_before_the_write_keeps_the_value_it_read():
    v = adv.Variable([1.0, 2.0, 3.0])
    before = v * 1.0
    head = v[:2]
    v[:2].assign([5.0, 6.0])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(head.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0, 3.0])


def test_the_gradient_stops_at_a_slice_write_and_explain_names_its_line():
    """As TensorFlow: the written variable is a leaf, so the value written has no gradient through it."""
    x = adv.Variable(2.0, name="x")
    with adv.GradientTape(persistent=True) as tape:
        h = adv.Variable([0.0, 0.0, 0.0], name="h")
        h[1].assign(x * 3.0)                  # the write
        loss = adv.reduce_sum(h * h)
    assert tape.gradient(loss, x) is None
    why = tape.explain(loss, x)
    assert why.reason == "non_differentiable_op"
    assert "stops at an assignment" in why.message and "'h'" in why.message and ".assign()" in why.message
    assert why.location is not None and why.location.endswith(f":{_line_of('h[1].assign(x * 3.0)')}")
    np.testing.assert_array_equal(tape.gradient(loss, h).numpy(), [0.0, 12.0, 0.0])

    xt = tf.Variable(2.0)
    with tf.GradientTape() as ttape:
        ht = tf.Variable([0.0, 0.0, 0.0])
        ht[1].assign(xt * 3.0)
        tloss = tf.reduce_sum(ht * ht)
    assert ttape.gradient(tloss, xt) is None


def _line_of(text):
    import inspect
    lines, start = inspect.getsourcelines(test_the_gradient_stops_at_a_slice_write_and_explain_names_its_line)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_bad_write_leaves_the_variable_unchanged_and_says_why():
    v = adv.Variable(np.zeros((2, 3)), name="v")
    with pytest.raises(ValueError, match=r"assign into variable 'v'\[\.\.\.\]: the slice has shape \(2, 2\), the "
                                         r"value has shape \(3,\)\. Give a value of shape \(2, 2\)"):
        v[:, :2].assign([1.0, 2.0, 3.0])
    counter = adv.Variable(np.zeros(3, dtype=np.int32), name="counter")
    with pytest.raises(TypeError, match=r"would become 0 in int32"):
        counter[0].assign(0.5)
    np.testing.assert_array_equal(v.numpy(), 0.0)
    np.testing.assert_array_equal(counter.numpy(), 0)


def test_only_a_slice_read_straight_off_a_variable_can_be_assigned():
    v = adv.Variable([1.0, 2.0])
    with pytest.raises(AttributeError, match=r"an op's result, which an assign could not reach.*"
                                             r"index the variable itself: v\[0:2\]\.assign\(new\)"):
        (v * 2.0)[0].assign(1.0)
    with pytest.raises(AttributeError, match="has no attribute 'assign_add'"):
        adv.constant([1.0])[0:1].assign_add(1.0)
