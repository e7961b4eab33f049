"""CS231n's worksheet idioms (numpy spelling) under a tape: no gradient is lost silently, hand gradients judged right.

The assignments are written in plain numpy: ``scores = X.dot(W)``, an output
made with ``np.zeros`` and filled item by item in naive loops, ``np.pad``,
``h[:, t, :] = next_h``, and gradient checks that seed a layer's output with
an upstream gradient ``dout``. These tests port those idioms (our own code,
reduced sizes, random data) and check three things a learner relies on:

* where numpy takes a tracked value out of the tape (``ndarray.dot``, item
  writes into an ndarray), ``compare`` does not call a correct hand gradient
  wrong: it says the tape lost the path, at the learner's line;
* written so the tape sees it (``X @ W``, pieces collected and stacked), a
  correct hand gradient is judged correct and a planted bug is named at its
  intermediate;
* nothing in the learner's arrays changes.

Sources (2024 starter code): https://cs231n.github.io/assignments2024/assignment1/ (``softmax.py``),
https://cs231n.github.io/assignments2024/assignment2/ (``layers.py``: affine, conv and max-pool naive),
https://cs231n.github.io/assignments2024/assignment3/ (``rnn_layers.py``: ``rnn_forward``).
"""
import inspect

import numpy as np
import pytest

import autodiff_viz as adv

RNG = np.random.default_rng(231)


def _line_of(fn, text: str) -> int:
    """The file line number of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


# ----- assignment 1: softmax_loss_vectorized ----------------------------------------------------------------
def _softmax_setup():
    X = RNG.normal(size=(6, 5))
    y = np.array([0, 2, 1, 2, 0, 1])
    W = adv.Variable(0.01 * RNG.normal(size=(5, 3)), name="W")
    return X, y, W


def _softmax_hand(X, y, W, reg):
    """The learner's vectorized gradient (numpy, as the worksheet asks): dscores = p − onehot(y), / N."""
    N = X.shape[0]
    scores = X.dot(W)
    scores = scores - scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=1, keepdims=True)
    dscores = p.copy()
    dscores[np.arange(N), y] -= 1
    dscores /= N
    return dscores, X.T.dot(dscores) + 2 * reg * W


def _softmax_loss_ndarray_dot(W, X, y, reg):
    N = X.shape[0]
    scores = X.dot(W)                                   # X is an ndarray: numpy converts W (the path leaves)
    scores = scores - np.max(scores, axis=1, keepdims=True)
    p = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    return -np.sum(np.log(p[np.arange(N), y])) / N + reg * np.sum(W * W)


def test_ndarray_dot_of_a_tracked_weight_is_a_lost_path_at_its_line_not_a_wrong_answer():
    """``X.dot(W)``: only the regularization reaches the tape, so the tape's dW is 2·reg·W alone.

    A correct hand dW (checked here against finite differences of the loss)
    must not be called wrong: the row says the tape lost the path, at the
    ``X.dot(W)`` line, and how to keep it.
    """
    X, y, W = _softmax_setup()
    reg = 0.1
    with adv.GradientTape(persistent=True) as tape:
        loss = _softmax_loss_ndarray_dot(W, X, y, reg)
    _, dW = _softmax_hand(X, y, W.numpy(), reg)
    # the hand gradient is right: central differences of the loss agree
    Wv, eps = W.numpy(), 1e-6
    for idx in [(0, 0), (3, 2), (4, 1)]:
        up, down = Wv.copy(), Wv.copy()
        up[idx] += eps
        down[idx] -= eps
        num = (float(_softmax_loss_ndarray_dot(up, X, y, reg)) - float(_softmax_loss_ndarray_dot(down, X, y, reg)))
        assert abs(num / (2 * eps) - dW[idx]) < 1e-6
    row = tape.compare(loss, {W: dW}).rows[0]
    assert row.status == "lost" and not row.ok
    assert f"line {_line_of(_softmax_loss_ndarray_dot, 'X.dot(W)')}" in row.message
    assert "np.asarray()" in row.message and "X @ W" in row.message and "Wrong" not in row.message


def test_softmax_written_so_the_tape_sees_it_judges_right_and_names_a_planted_bug():
    X, y, W = _softmax_setup()
    X_before = X.copy()
    reg = 0.1
    N = X.shape[0]
    with adv.GradientTape(persistent=True) as tape:
        scores = X @ W                                   # the tape-friendly spelling of X.dot(W)
        shifted = scores - np.max(scores, axis=1, keepdims=True)
        p = np.exp(shifted) / np.sum(np.exp(shifted), axis=1, keepdims=True)
        loss = -np.sum(np.log(p[np.arange(N), y])) / N + reg * np.sum(W * W)
    dscores, dW = _softmax_hand(X, y, W.numpy(), reg)
    cmp = tape.compare(loss, {"scores": dscores, "W": dW})
    assert cmp.ok, str(cmp)
    bad = tape.compare(loss, {"scores": dscores * N, "W": X.T.dot(dscores * N) + 2 * reg * W.numpy()})
    assert bad.first_wrong.name == "scores" and "times 6" in bad.first_wrong.message   # forgot / N
    np.testing.assert_array_equal(X, X_before)


# ----- assignment 2: affine with dout, conv and max pool naive ---------------------------------------------
def test_a_layer_checked_with_an_upstream_dout_as_the_gradient_check_does():
    """``affine_forward`` checked as the notebook does: the gradients of ``sum(out * dout)``."""
    x = adv.constant(RNG.normal(size=(4, 2, 3)))
    w = adv.constant(RNG.normal(size=(6, 5)))
    b = adv.constant(RNG.normal(size=(5,)))
    dout = RNG.normal(size=(4, 5))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        out = x.reshape(4, -1) @ w + b
    xv, wv = x.numpy(), w.numpy()
    hand = {x: (dout @ wv.T).reshape(xv.shape), w: xv.reshape(4, -1).T @ dout, b: dout.sum(axis=0)}
    assert tape.compare(out, hand, output_gradients=dout).ok
    wrong = tape.compare(out, {**hand, w: xv.reshape(4, -1).T @ np.ones_like(dout)}, output_gradients=dout)
    assert wrong.first_wrong.name == "w"
    with pytest.raises(ValueError, match=r"output_gradients has shape \(5,\).*\(4, 5\)"):
        tape.compare(out, hand, output_gradients=dout[0])


def _conv_forward_naive_items(x, w, b, stride, pad):
    """The starter's structure: pad, an output of zeros, one item written per (n, f, i, j)."""
    N, C, H, Wd = x.shape
    F, _, HH, WW = w.shape
    Ho, Wo = 1 + (H + 2 * pad - HH) // stride, 1 + (Wd + 2 * pad - WW) // stride
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), "constant")
    out = np.zeros((N, F, Ho, Wo))
    for n in range(N):
        for f in range(F):
            for i in range(Ho):
                for j in range(Wo):
                    hs, ws = i * stride, j * stride
                    out[n, f, i, j] = np.sum(xp[n, :, hs:hs + HH, ws:ws + WW] * w[f]) + b[f]
    return out


def _conv_forward_naive_pieces(x, w, b, stride, pad):
    """The same loops, each value appended to a list and stacked: the tape sees every piece."""
    N, C, H, Wd = x.shape
    F, _, HH, WW = w.shape
    Ho, Wo = 1 + (H + 2 * pad - HH) // stride, 1 + (Wd + 2 * pad - WW) // stride
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), "constant")
    pieces = []
    for n in range(N):
        for f in range(F):
            for i in range(Ho):
                for j in range(Wo):
                    hs, ws = i * stride, j * stride
                    pieces.append(np.sum(xp[n, :, hs:hs + HH, ws:ws + WW] * w[f]) + b[f])
    return adv.stack(pieces).reshape(N, F, Ho, Wo)


def _conv_backward_naive(dout, x, w, stride, pad, crop_from=None):
    """The learner's backward pass, in loops: each output entry sends dout·w to its window, dout·window to w."""
    N, C, H, Wd = x.shape
    F, _, HH, WW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), "constant")
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for n in range(N):
        for f in range(F):
            for i in range(dout.shape[2]):
                for j in range(dout.shape[3]):
                    hs, ws = i * stride, j * stride
                    dxp[n, :, hs:hs + HH, ws:ws + WW] += dout[n, f, i, j] * w[f]
                    dw[f] += dout[n, f, i, j] * xp[n, :, hs:hs + HH, ws:ws + WW]
    c = pad if crop_from is None else crop_from        # crop_from=0: the planted bug, the padding not skipped
    return dxp[:, :, c:c + H, c:c + Wd], dw, dout.sum(axis=(0, 2, 3))


def _conv_data():
    x = adv.constant(RNG.normal(size=(2, 2, 4, 4)), name="x")
    w = adv.constant(RNG.normal(size=(3, 2, 3, 3)), name="w")
    b = adv.constant(RNG.normal(size=(3,)), name="b")
    return x, w, b


def test_conv_naive_item_writes_into_np_zeros_are_a_lost_path_at_the_write():
    x, w, b = _conv_data()
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        out = _conv_forward_naive_items(x, w, b, 1, 1)
        loss = np.sum(out * out) + 0.0 * adv.sum(w)      # w also reaches the loss directly: a partial path
    assert type(out) is np.ndarray
    dout = 2 * np.asarray(out)
    _, dw, _ = _conv_backward_naive(dout, x.numpy(), w.numpy(), 1, 1)
    row = tape.compare(loss, {w: dw}).rows[0]
    assert row.status == "lost"
    assert f"line {_line_of(_conv_forward_naive_items, 'out[n, f, i, j] =')}" in row.message
    assert tape.explain(adv.constant(out).__abs__(), x).reason == "left_the_tape"


def test_conv_naive_with_stacked_pieces_and_np_pad_is_judged_right_and_a_bug_named():
    x, w, b = _conv_data()
    dout = RNG.normal(size=(2, 3, 4, 4))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        out = _conv_forward_naive_pieces(x, w, b, 1, 1)
    dx, dw, db = _conv_backward_naive(dout, x.numpy(), w.numpy(), 1, 1)
    cmp = tape.compare(out, {x: dx, w: dw, b: db}, output_gradients=dout)
    assert cmp.ok, str(cmp)
    dx_bug, _, _ = _conv_backward_naive(dout, x.numpy(), w.numpy(), 1, 1, crop_from=0)
    bad = tape.compare(out, {x: dx_bug, w: dw, b: db}, output_gradients=dout)
    assert bad.first_wrong.name == "x" and bad["w"].ok and bad["b"].ok


def test_max_pool_naive_with_stacked_pieces_routes_the_gradient_to_the_max():
    x = adv.constant(RNG.normal(size=(2, 2, 4, 4)), name="x")
    dout = RNG.normal(size=(2, 2, 2, 2))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        pieces = [np.max(x[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2])
                  for n in range(2) for c in range(2) for i in range(2) for j in range(2)]
        out = adv.stack(pieces).reshape(2, 2, 2, 2)
    xv = x.numpy()
    dx = np.zeros_like(xv)
    for n in range(2):
        for c in range(2):
            for i in range(2):
                for j in range(2):
                    win = xv[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
                    a, k = np.unravel_index(np.argmax(win), win.shape)
                    dx[n, c, 2 * i + a, 2 * j + k] += dout[n, c, i, j]
    assert tape.compare(out, {x: dx}, output_gradients=dout).ok
    spread = np.repeat(np.repeat(dout, 2, axis=2), 2, axis=3) / 4              # average-pool's gradient: a bug
    assert tape.compare(out, {x: spread}, output_gradients=dout).first_wrong.name == "x"


# ----- assignment 3: rnn_forward ----------------------------------------------------------------------------
def _rnn_forward_into_zeros(x, h0, Wx, Wh, b):
    N, T, _ = x.shape
    h = np.zeros((N, T, h0.shape[1]))
    prev = h0
    for t in range(T):
        prev = np.tanh(x[:, t, :] @ Wx + prev @ Wh + b)
        h[:, t, :] = prev                                  # numpy copies the values: the path to Wx leaves here
    return h


def test_rnn_forward_writing_h_t_into_np_zeros_is_a_lost_path_and_stacking_keeps_it():
    x = adv.constant(RNG.normal(size=(2, 3, 4)))
    h0 = adv.constant(RNG.normal(size=(2, 5)))
    Wx = adv.Variable(0.3 * RNG.normal(size=(4, 5)), name="Wx")
    Wh = adv.Variable(0.3 * RNG.normal(size=(5, 5)), name="Wh")
    b = adv.Variable(np.zeros(5), name="b")
    with adv.GradientTape(persistent=True) as tape:
        h = _rnn_forward_into_zeros(x, h0, Wx, Wh, b)
        loss = np.sum(h) + 0.0 * adv.sum(Wx)
    row = tape.compare(loss, {Wx: np.ones((4, 5))}).rows[0]
    assert row.status == "lost" and f"line {_line_of(_rnn_forward_into_zeros, 'h[:, t, :] = prev')}" in row.message

    with adv.GradientTape(persistent=True) as tape:
        steps, prev = [], h0
        for t in range(3):
            prev = np.tanh(x[:, t, :] @ Wx + prev @ Wh + b)
            steps.append(prev)
        h = adv.stack(steps, axis=1)
        loss = np.sum(h)
    # the learner's rnn_backward: walk t = T-1 ... 0 carrying dprev
    xv, hv, Whv, h0v = x.numpy(), h.numpy(), Wh.numpy(), h0.numpy()
    dWx, dWh, db, dprev = np.zeros((4, 5)), np.zeros((5, 5)), np.zeros(5), np.zeros((2, 5))
    for t in reversed(range(3)):
        dz = (1.0 + dprev) * (1 - hv[:, t, :] ** 2)
        before = hv[:, t - 1, :] if t else h0v
        dWx += xv[:, t, :].T @ dz
        dWh += before.T @ dz
        db += dz.sum(axis=0)
        dprev = dz @ Whv.T
    assert tape.compare(loss, {Wx: dWx, Wh: dWh, b: db}).ok
    assert tape.compare(loss, {Wx: dWx, Wh: dWh.T, b: db}).first_wrong.name == "Wh"


# ----- the ways a tracked value becomes numpy --------------------------------------------------------------
@pytest.mark.parametrize("escape", ["np.asarray", "np.array of a list", "float"])
def test_every_way_into_numpy_is_named_left_the_tape(escape):
    x = adv.constant([1.5, -2.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
        if escape == "np.asarray":
            back = np.asarray(y)
        elif escape == "np.array of a list":
            back = np.array([y[0], y[1]])
        else:
            back = float(y[0])
        z = adv.constant(back) * 2.0
    assert tape.explain(z, x).reason == "left_the_tape"


def test_the_item_assignment_hint_keeps_the_gradient_when_followed():
    t0 = adv.constant([1.0, 2.0, 3.0])
    v = adv.constant(5.0)
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([t0, v])
        t = t0 * 1.0
        with pytest.raises(TypeError) as info:
            t[1] = v * 2
        assert "adv.where(mask, new, t)" in info.value.args[0] and "adv.stack" in info.value.args[0]
        assert "adv.constant(a)" not in info.value.args[0]
        mask = np.zeros(t.shape, bool)
        mask[1] = True
        t = adv.where(mask, v * 2, t)                      # the hint, followed
        loss = adv.sum(t * t)
    np.testing.assert_allclose(tape.gradient(loss, t0).numpy(), [2.0, 0.0, 6.0])
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), 40.0)
