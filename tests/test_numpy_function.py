"""``adv.numpy_function`` and ``adv.py_function`` (TensorFlow's ``tf.numpy_function`` / ``tf.py_function``,
issue 37): numpy inside the graph gives no gradient and ``tape.explain`` names the op and the line; a
``py_function`` body written with ops is recorded, so its gradient flows, as in TensorFlow.
"""
import os

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv

HERE = os.path.abspath(__file__)


def test_numpy_function_runs_numpy_and_gives_tout():
    """The guide's pattern: a numpy-only function (here ``np.sort`` and a float cast) inside the computation."""
    x = adv.constant([3.0, 1.0, 2.0])
    y = adv.numpy_function(lambda a: np.sort(a) * 2, [x], "float32")
    assert y.dtype == np.float32 and y.numpy().tolist() == [2.0, 4.0, 6.0]
    lo, hi = adv.numpy_function(lambda a, b: (np.minimum(a, b), np.maximum(a, b)), [x, 2.0], ["float64", "float64"])
    assert lo.numpy().tolist() == [2.0, 1.0, 2.0] and hi.numpy().tolist() == [3.0, 2.0, 2.0]
    with pytest.raises(ValueError, match=r"returned 2 value\(s\) but Tout lists 1"):
        adv.numpy_function(lambda a: (a, a), [x], ["float64"])


def test_numpy_function_has_no_gradient_and_explain_names_it_with_the_line():
    w = adv.Variable([0.5, -1.0], name="w")

    def clipped(a):
        return np.clip(a, -0.6, 0.6)

    with adv.GradientTape() as tape:
        h = adv.numpy_function(clipped, [w * 2.0], "float64")  # <- numpy
        loss = adv.sum(h ** 2)
    assert tape.gradient(loss, w) is None
    e = tape.explain(loss, w)
    assert e.reason == "non_differentiable_op" and e.op == "numpy_function"
    assert e.location == code_lines.line_of(HERE, "numpy")
    assert "adv.numpy_function(clipped)" in e.message and "custom_gradient" in e.message


def test_py_function_body_is_recorded_so_the_gradient_flows():
    """``tf.py_function`` is differentiable through its eager body; so is ``adv.py_function``."""
    w = adv.Variable([0.5, -1.0])
    with adv.GradientTape() as tape:
        y = adv.py_function(lambda a: adv.sum(a ** 3), [w], "float32")
    assert y.dtype == np.float32
    np.testing.assert_allclose(tape.gradient(y, w).numpy(), [0.75, 3.0])
