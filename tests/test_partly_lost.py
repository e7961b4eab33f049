"""``explain`` and ``check_grads`` name a path that numpy took off the tape while another path kept a gradient.

CS231n's ``softmax_loss_vectorized`` is written in numpy: ``scores =
X.dot(W)``, then the softmax loss, then ``loss += reg * np.sum(W * W)``. Run
under a tape with ``W`` a variable and ``X`` an ndarray, ``ndarray.dot``
converts ``W`` to an array: the data term is computed by numpy and comes back
as a constant, while the regularization term still reaches ``W``. The
gradient is not None — it is ``2·reg·W`` alone — so "connected" would hide the
lost data term. The diagnosis is ``partly_lost``, at the ``X.dot(W)`` line.

Sources: CS231n assignment 1, ``cs231n/classifiers/softmax.py``
(https://cs231n.github.io/assignments2024/assignment1/); a learner's
vectorized solution in that spelling:
https://github.com/cubhe/CS231n/blob/master/old_code/softmax.py
(``scores=X.dot(W)`` … ``loss+=0.5*reg*np.sum(W*W)``).
"""
import inspect

import numpy as np
import pytest

import autodiff_viz as adv

RNG = np.random.default_rng(2311)
N, D, C = 6, 5, 3
X = RNG.normal(size=(N, D))
Y = np.array([0, 2, 1, 2, 0, 1])
REG = 0.1


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def softmax_loss_vectorized(W, X, y, reg):
    """The worksheet's spelling, reduced: numpy throughout, X an ndarray."""
    num_train = X.shape[0]
    scores = X.dot(W)
    shift_scores = scores - np.max(scores, axis=1).reshape(-1, 1)
    softmax_output = np.exp(shift_scores) / np.sum(np.exp(shift_scores), axis=1).reshape(-1, 1)
    loss = -np.sum(np.log(softmax_output[range(num_train), list(y)])) / num_train
    loss += 0.5 * reg * np.sum(W * W)
    return loss


def _full_gradient(Wv):
    """The worksheet's analytic dW: Xᵀ(p − onehot(y)) / N + reg·W (the data term and the regularization)."""
    s = X @ Wv
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(N), Y] -= 1
    return X.T @ p / N + REG * Wv


def _variable():
    return adv.Variable(0.01 * RNG.normal(size=(D, C)), name="W")


def test_ndarray_dot_with_the_regularization_still_connected_is_partly_lost_at_the_dot_line():
    W = _variable()
    with adv.GradientTape(persistent=True) as tape:
        loss = softmax_loss_vectorized(W, X, Y, REG)
    g = tape.gradient(loss, W)
    # not None, but only the regularization's share: reg·W, not the full dW
    np.testing.assert_allclose(g.numpy(), REG * W.numpy())
    assert not np.allclose(g.numpy(), _full_gradient(W.numpy()))
    ex = tape.explain(loss, W)
    assert ex.reason == "partly_lost" and not ex.connected
    assert ex.location == f"{__file__}:{_line_of(softmax_loss_vectorized, 'X.dot(W)')}"
    assert "scores = X.dot(W)" in ex.message and ".dot() converted the tensor" in ex.message
    assert "'W'" in ex.message and "X @ W" in ex.message and "adv.constant(X).dot(W)" in ex.message
    assert W._id in ex.nodes


@pytest.mark.parametrize("spelling", ["X @ W", "np.dot(X, W)", "adv.matmul(X, W)", "adv.constant(X).dot(W)"])
def test_every_fix_the_message_names_keeps_the_whole_gradient(spelling):
    """The fixes ``partly_lost`` proposes really keep the data term: the gradient is the worksheet's dW."""
    W = _variable()
    spell = {"X @ W": lambda: X @ W, "np.dot(X, W)": lambda: np.dot(X, W),
             "adv.matmul(X, W)": lambda: adv.matmul(X, W),
             "adv.constant(X).dot(W)": lambda: adv.constant(X).dot(W)}[spelling]
    with adv.GradientTape(persistent=True) as tape:
        scores = spell()
        shift = scores - np.max(scores, axis=1).reshape(-1, 1)
        p = np.exp(shift) / np.sum(np.exp(shift), axis=1).reshape(-1, 1)
        loss = -np.sum(np.log(p[range(N), list(Y)])) / N + 0.5 * REG * np.sum(W * W)
    assert tape.explain(loss, W).reason == "connected"
    assert not tape.record.escapes
    np.testing.assert_allclose(tape.gradient(loss, W).numpy(), _full_gradient(W.numpy()), rtol=1e-10, atol=1e-12)


def test_a_number_printed_on_the_way_is_not_a_lost_path():
    """``float(...)`` for a log line leaves the tape too, but nothing of it comes back: still ``connected``."""
    W = _variable()
    logged = []
    with adv.GradientTape() as tape:
        scores = X @ W
        logged.append(float(adv.mean(scores)))
        loss = adv.mean(adv.nn.logsumexp(scores, axis=1)) + 0.5 * REG * adv.sum(W * W)
    assert len(tape.record.escapes) == 1
    assert tape.explain(loss, W).reason == "connected"


def test_a_float_that_comes_back_beside_a_kept_path_is_partly_lost_at_the_float():
    """The data term turned into a float and added back as a constant next to a regularization that stayed."""
    W = _variable()
    with adv.GradientTape() as tape:
        data = adv.mean(adv.nn.logsumexp(X @ W, axis=1))
        loss = adv.constant(float(data)) + 0.5 * REG * adv.sum(W * W)
    ex = tape.explain(loss, W)
    assert ex.reason == "partly_lost" and "float()" in ex.message
    line = _line_of(test_a_float_that_comes_back_beside_a_kept_path_is_partly_lost_at_the_float, "float(data)")
    assert ex.location.endswith(f":{line}")


def test_check_grads_names_the_lost_line_instead_of_a_bare_mismatch():
    report = adv.check_grads(lambda W: softmax_loss_vectorized(W, X, Y, REG), [0.01 * RNG.normal(size=(D, C))])
    assert not report.ok
    line = _line_of(softmax_loss_vectorized, "X.dot(W)")
    for row in report.rows:
        assert not row.ok and f"line {line}" in row.note and "np.asarray()" in row.note and "X @ W" in row.note
    assert f"line {line}" in str(report)


def test_check_grads_of_the_fixed_spelling_passes_without_a_note():
    def fixed(W):
        scores = X @ W
        shift = scores - np.max(scores, axis=1).reshape(-1, 1)
        p = np.exp(shift) / np.sum(np.exp(shift), axis=1).reshape(-1, 1)
        return -np.sum(np.log(p[range(N), list(Y)])) / N + 0.5 * REG * np.sum(W * W)
    report = adv.check_grads(fixed, [0.01 * RNG.normal(size=(D, C))])
    assert report.ok and all(not r.note for r in report.rows)


def test_compare_and_explain_say_the_same_line():
    W = _variable()
    with adv.GradientTape(persistent=True) as tape:
        loss = softmax_loss_vectorized(W, X, Y, REG)
    row = tape.compare(loss, {W: _full_gradient(W.numpy())}).rows[0]
    ex = tape.explain(loss, W)
    line = _line_of(softmax_loss_vectorized, "X.dot(W)")
    assert row.status == "lost" and f"line {line}" in row.message and ex.location.endswith(f":{line}")


# ----- escapes that lose no path: the hand backward reading the forward's numbers -----------------------------
def _hand_in_the_same_function(W, X, y, reg, bug=False):
    """Forward recorded, then the hand backward on numbers (``W.numpy()``, ``dW += ...``), as CS231n writes it."""
    n = X.shape[0]
    scores = X @ W
    shift = scores - np.max(scores, axis=1, keepdims=True)
    p = np.exp(shift) / np.sum(np.exp(shift), axis=1, keepdims=True)
    loss = -np.sum(np.log(p[np.arange(n), y])) / n + reg * np.sum(W * W)
    dscores = p.numpy()                                    # an escape, after every constant of the loss
    dscores[np.arange(n), y] -= 1
    dscores /= 1 if bug else n
    dW = X.T @ dscores
    dW += 2 * reg * W                                      # array += tensor: numbers written, escape noted
    return loss, dW


def test_escapes_after_the_forward_pass_do_not_turn_a_wrong_hand_gradient_into_lost():
    """Only a constant made after an escape can bring its value back into the loss; none is made here."""
    W = _variable()
    with adv.GradientTape() as tape:
        loss, dW = _hand_in_the_same_function(W, X, Y, REG)
        _, dW_bug = _hand_in_the_same_function(W, X, Y, REG, bug=True)
    assert type(dW) is np.ndarray and len(tape.record.escapes) >= 2
    assert tape.compare(loss, {W: dW}).ok
    row = tape.compare(loss, {W: dW_bug}).rows[0]
    assert row.status == "wrong" and "lost" not in row.message


def test_a_hand_gradient_accumulated_in_the_loss_loop_is_not_a_lost_path():
    """``dW[:, j] += t`` between forward steps is bookkeeping; an item write ``out[i] = t`` feeding the loss is not."""
    W = _variable()
    Xc = adv.constant(X)
    with adv.GradientTape() as tape:
        loss, dW = 0.0, np.zeros(W.shape)
        for i in range(N):
            s = Xc[i] @ W
            loss += np.sum(s * s)
            dW[:, 0] += 0.5 * s[0] * Xc[i]                   # a planted half: the factor is 2
    assert tape.compare(loss, {W: dW}).rows[0].status == "wrong"
    with adv.GradientTape() as tape:
        out = np.zeros(N)
        for i in range(N):
            out[i] = adv.sum(Xc[i] @ W)                      # the forward's values leave here
        loss = adv.sum(adv.constant(out) ** 2) + 0.0 * adv.sum(W)
    assert tape.compare(loss, {W: np.ones(W.shape)}).rows[0].status == "lost"     # cannot be judged


def test_a_tensor_key_is_titled_by_the_variable_its_line_assigned():
    W = _variable()
    with adv.GradientTape() as tape:
        scores = X @ W
        loss = adv.sum(scores ** 2)
    keys = {"by_dict": scores}
    assert tape.compare(loss, {keys["by_dict"]: np.zeros(scores.shape)}).rows[0].name == "scores"
