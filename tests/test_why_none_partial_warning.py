"""``tape.gradient`` (and ``adv.grad``) warns when a recorded escape made the gradient partial, once per line.

The learner who never calls ``explain`` or ``compare`` would otherwise trust a
number that misses the data term (CS231n's ``scores = X.dot(W)`` with ``X`` an
ndarray, an item write ``out[i] = ...`` into ``np.zeros``, ``np.asarray``).
The documented deliberate escapes of a hand-written backward pass, after the
forward pass, stay silent.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.diagnosis import escapes


@pytest.fixture(autouse=True)
def fresh_lines():
    """Each test starts with no line warned about yet (the warning is once per line and process)."""
    saved = set(escapes._WARNED)
    escapes._WARNED.clear()
    yield
    escapes._WARNED.clear()
    escapes._WARNED.update(saved)


def _line(text: str, fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, ln in enumerate(lines) if text in ln)


X = np.array([[1.0, 2.0], [0.5, -1.0], [-1.5, 0.5]])


def test_ndarray_dot_warns_at_the_gradient_line_naming_the_dot_line():
    W = adv.Variable([[0.1, -0.2], [0.3, 0.05]], name="W")
    with adv.GradientTape() as tape:
        scores = X.dot(W)
        loss = np.sum(scores ** 2) + 0.1 * adv.sum(W * W)
    with pytest.warns(adv.PartialGradientWarning) as caught:
        g = tape.gradient(loss, W)
    np.testing.assert_allclose(g.numpy(), 0.2 * W.numpy())          # only the regularization's share
    w = caught[0]
    assert issubclass(w.category, UserWarning)
    here = test_ndarray_dot_warns_at_the_gradient_line_naming_the_dot_line
    assert w.filename == __file__ and w.lineno == _line("g = tape.gradient(loss, W)", here)
    assert f"line {_line('scores = X.dot(W)', here)}" in str(w.message)
    assert "X @ W" in str(w.message) and "'W'" in str(w.message)


def test_item_writes_into_np_zeros_warn():
    x = adv.Variable([0.5, 1.0, 2.0], name="x")
    with adv.GradientTape() as tape:
        out = np.zeros(3)
        for i in range(3):
            out[i] = np.tanh(x[i] * 2.0)
        loss = adv.sum(adv.constant(out) * x)
    with pytest.warns(adv.PartialGradientWarning, match="float"):
        tape.gradient(loss, x)


def test_np_asarray_warns_and_only_once_per_line():
    w = adv.Variable([1.0, 2.0], name="w")

    def step():
        with adv.GradientTape() as tape:
            a = np.asarray(w * 3.0)
            loss = adv.sum(adv.constant(a) * w) + adv.sum(w * w)
        return tape.gradient(loss, w)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            step()
    partial = [c for c in caught if issubclass(c.category, adv.PartialGradientWarning)]
    assert len(partial) == 1
    assert f"line {_line('a = np.asarray(w * 3.0)', step)}" in str(partial[0].message)


def test_grad_transform_warns_too():
    def f(W):
        return np.sum(X.dot(W) ** 2) + adv.sum(W * W)
    with pytest.warns(adv.PartialGradientWarning):
        adv.grad(f)(adv.Variable(np.ones((2, 2))))


def test_deliberate_escapes_after_the_forward_pass_stay_silent():
    """CS231n's hand backward reads forward values as numbers after the loss: nothing comes back into it."""
    W = adv.Variable([[0.1, -0.2], [0.3, 0.05]], name="W")
    with warnings.catch_warnings():
        warnings.simplefilter("error", adv.PartialGradientWarning)
        with adv.GradientTape() as tape:
            scores = X @ W
            loss = adv.sum(scores * scores) + 0.1 * adv.sum(W * W)
            print_value = float(loss)                 # for printing
            dW = 2 * X.T @ np.asarray(scores) + 0.2 * np.asarray(W)    # the hand gradient, from numbers
        g = tape.gradient(loss, W)
    np.testing.assert_allclose(g.numpy(), dW)
    assert print_value == pytest.approx(float(loss))


def test_a_connected_gradient_without_escapes_is_silent():
    W = adv.Variable([[0.1, -0.2], [0.3, 0.05]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", adv.PartialGradientWarning)
        with adv.GradientTape() as tape:
            loss = adv.sum((X @ W) ** 2)
        assert tape.gradient(loss, W) is not None


def test_a_number_the_code_wrote_is_no_evidence_but_a_scalar_taken_from_the_escape_is():
    """A boolean mask made from ``t.numpy()`` loses no path; the ``2`` of ``** 2`` equals an entry of the escaped
    array by coincidence only, and must not read as the value coming back. A numpy scalar taken from the escaped
    array (``x.numpy()[1]``) is a value that came back: the gradient through it is lost, and that warns."""
    x = adv.constant([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", adv.PartialGradientWarning)
        g = adv.grad(lambda t: adv.sum(t[t.numpy() > 1.5] ** 2))(x)
    np.testing.assert_allclose(g.numpy(), [0.0, 4.0, 6.0])
    w, v = adv.Variable([1.0, 2.0]), adv.Variable([3.0, 4.0, 5.0])
    with adv.GradientTape() as tape:
        y = adv.sum(w * v.numpy()[1]) + adv.sum(v)
    with pytest.warns(adv.PartialGradientWarning):
        tape.gradient(y, v)
