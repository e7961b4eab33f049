"""adv.detect_anomaly(): the first op or backward step that makes nan/inf, with its line."""
import os
import warnings

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.base.state import state

HERE = os.path.abspath(__file__)


def line_of(tag: str) -> str:
    return code_lines.line_of(HERE, tag)


def test_log_of_zero_is_caught_at_the_op_that_makes_it():
    p = adv.Variable([0.5, 0.0], name="probs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # numpy's divide-by-zero warning is replaced by the error
        with pytest.raises(adv.AnomalyError) as info:
            with adv.detect_anomaly():
                with adv.GradientTape():
                    loss = -adv.sum(adv.log(p) * 2.0)  # <- log
    err = info.value
    assert isinstance(err, FloatingPointError)
    assert (err.phase, err.op) == ("forward", "log")
    assert err.location == line_of("log")
    text = str(err)
    assert "loss = -adv.sum(adv.log(p) * 2.0)" in text
    assert "probs: shape (2,) float64, values [0.5, 0. ]" in text
    assert "−inf" in text and "all finite" in text and "clip" in text
    assert state.anomaly is None          # the detector is gone after the error


def test_non_finite_input_is_reported_as_coming_from_upstream():
    bad = adv.constant([np.nan, 1.0], name="data")
    with pytest.raises(adv.AnomalyError) as info:
        with adv.detect_anomaly():
            adv.tanh(bad)
    assert info.value.op == "tanh"
    assert "already held non-finite values" in str(info.value)


def test_number_arithmetic_on_a_constant_is_checked_too():
    """``t * 0.0`` on a tensor without history skips the engine outside the block, but not inside it."""
    big = adv.constant([np.inf, 1.0], name="big")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(adv.AnomalyError) as info:
            with adv.detect_anomaly():
                big * 0.0
    assert info.value.op == "multiply"


def test_sqrt_at_zero_is_caught_in_backward():
    x = adv.Variable([0.0, 2.0], name="x")
    # without the detector the gradient silently holds nan (inf · 0 = the 0/0 of the chain rule)
    with adv.GradientTape() as tape:
        y = adv.sum(adv.sqrt(x * x))
    with np.errstate(all="ignore"):
        assert np.isnan(tape.gradient(y, x).numpy()[0])

    with pytest.raises(adv.AnomalyError) as info:
        with adv.detect_anomaly():
            with adv.GradientTape() as tape:
                y = adv.sum(adv.sqrt(x * x))  # <- sqrt
            tape.gradient(y, x)
    err = info.value
    assert (err.phase, err.op, err.input_index) == ("backward", "sqrt", 0)
    assert err.location == line_of("sqrt")
    text = str(err)
    assert "1/(2y)" in text                      # the factor from the rule table
    assert "+inf" in text and "upstream gradient is finite" in text
    assert "output y: shape (2,) float64, values [0., 2.]" in text


def test_backward_check_can_be_switched_off():
    x = adv.Variable([0.0], name="x")
    with adv.detect_anomaly(backward=False):
        with adv.GradientTape() as tape:
            y = adv.sum(adv.sqrt(x * x))
        g = tape.gradient(y, x)
    assert np.isnan(g.numpy()[0])


def test_non_finite_output_gradient_seed():
    x = adv.Variable([1.0], name="x")
    with adv.detect_anomaly():
        with adv.GradientTape() as tape:
            y = x * 2.0
        with pytest.raises(adv.AnomalyError, match="seed"):
            tape.gradient(y, x, output_gradients=adv.constant([np.inf]))


def test_finite_computations_give_the_same_results_inside_the_block():
    f = lambda v: adv.sum(adv.tanh(v) ** 3 + adv.exp(-v * v))  # noqa: E731
    v = adv.constant([0.3, -0.2, 1.1])
    expected_grad = adv.grad(f)(v).numpy()
    expected_hess = adv.hessian(f)(v).numpy()
    with adv.detect_anomaly():
        np.testing.assert_allclose(adv.grad(f)(v).numpy(), expected_grad)
        np.testing.assert_allclose(adv.hessian(f)(v).numpy(), expected_hess)   # a recorded backward walk
        w = adv.Variable([[1.0], [2.0]])
        with adv.GradientTape() as tape:
            loss = adv.sum(adv.constant([[1.0, 1.0]]) @ w)
        np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [[1.0], [1.0]])


def test_nothing_is_checked_outside_the_block():
    assert state.anomaly is None
    with np.errstate(divide="ignore"):
        y = adv.log(adv.constant([0.0]))
    assert np.isneginf(y.numpy()[0])


def test_blocks_nest():
    with adv.detect_anomaly() as outer:
        with adv.detect_anomaly(backward=False):
            pass
        assert state.anomaly is outer
