"""CS231n's normalization, dropout and LSTM items in the student's numpy spelling, recorded by a tape.

The starter code (2024) has the student write each layer as a pair: a forward
pass returning ``out, cache`` and a backward pass taking ``dout, cache``; the
notebooks check the backward pass with numerical gradients of
``sum(out * dout)``. Here a ``GradientTape`` records the student's forward pass
(the data ``x`` a watched constant, as the gradient check differentiates it
too), ``tape.compare(out, {...}, output_gradients=dout)`` judges the student's
backward pass, and a planted bug — the one a student makes copying batch norm's
backward into another layer — is named at the tensor it breaks. Sizes are
reduced and the data random; the code is ours, in the starter's structure.

Sources (2024 starter code):
https://cs231n.github.io/assignments2024/assignment2/ (``cs231n/layers.py``: ``batchnorm_backward_alt``,
``layernorm_forward``/``layernorm_backward``, ``dropout_forward``/``dropout_backward``,
``spatial_groupnorm_forward``/``spatial_groupnorm_backward``),
https://cs231n.github.io/assignments2024/assignment3/ (``cs231n/rnn_layers.py``: ``lstm_step_forward``,
``lstm_step_backward``, ``lstm_forward``, ``lstm_backward``).
"""
import numpy as np
import pytest

import autodiff_viz as adv

RNG = np.random.default_rng(2024)


def _watched(*arrays):
    """The gradient check's inputs: constants the tape watches (the data ``x`` included)."""
    return [adv.constant(a) for a in arrays]


# ----- batch norm: the simplified backward (batchnorm_backward_alt) -----------------------------------------
def _batchnorm_forward_train(x, gamma, beta, eps=1e-5):
    """``batchnorm_forward`` in train mode: the batch's mean and (biased, as np.var) variance, per feature."""
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, std)


def _batchnorm_backward_alt(dout, cache, bessel=False):
    """The one-line ``dx``: ``dx = γ/(N·σ) · (N·dout − Σ dout − x̂·Σ(dout·x̂))`` (sums over the batch).

    ``bessel=True`` is the planted bug: the ``N/(N−1)`` of a Bessel-corrected
    variance (as in makemore's batch norm) where the forward pass used ``np.var``.
    """
    x_hat, gamma, std = (np.asarray(c) for c in cache)
    N = dout.shape[0]
    k = N / (N - 1) if bessel else 1.0
    dgamma = (dout * x_hat).sum(axis=0)
    dbeta = dout.sum(axis=0)
    dx = gamma / (N * std) * (N * dout - dbeta - k * x_hat * dgamma)
    return dx, dgamma, dbeta


def test_batchnorm_backward_alt_is_judged_right_and_a_bessel_factor_named():
    x, gamma, beta = _watched(RNG.normal(2.0, 3.0, size=(6, 4)), RNG.normal(size=4), RNG.normal(size=4))
    dout = RNG.normal(size=(6, 4))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, gamma, beta])
        out, cache = _batchnorm_forward_train(x, gamma, beta)
    dx, dgamma, dbeta = _batchnorm_backward_alt(dout, cache)
    cmp = tape.compare(out, {x: dx, gamma: dgamma, beta: dbeta}, output_gradients=dout)
    assert cmp.ok, str(cmp)
    x_hat = cache[0]
    dx_hat = dout * gamma.numpy()                        # the intermediate a student checks on the way
    dx_bug, _, _ = _batchnorm_backward_alt(dout, cache, bessel=True)
    bad = tape.compare(out, {x_hat: dx_hat, x: dx_bug, gamma: dgamma, beta: dbeta}, output_gradients=dout)
    assert bad.first_wrong.name == "x" and bad["x_hat"].ok and bad["gamma"].ok


# ----- layer norm: batch norm's formula over the other axis ------------------------------------------------
def _layernorm_forward(x, gamma, beta, ln_param):
    """``layernorm_forward``: each example normalized over its features (axis 1), then scaled per feature."""
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, std)


def _layernorm_backward(dout, cache, axis=1):
    """``layernorm_backward``: ``dx = 1/(D·σ) · (D·dx̂ − Σ dx̂ − x̂·Σ(dx̂·x̂))``, sums over the features.

    ``dgamma``/``dbeta`` still sum over the batch (one γ per feature).
    ``axis=0`` is the planted bug: batch norm's sums (over the batch) kept.
    """
    x_hat, gamma, std = (np.asarray(c) for c in cache)
    D = dout.shape[1]
    dgamma = (dout * x_hat).sum(axis=0)
    dbeta = dout.sum(axis=0)
    dx_hat = dout * gamma
    dx = (D * dx_hat - dx_hat.sum(axis=axis, keepdims=True)
          - x_hat * (dx_hat * x_hat).sum(axis=axis, keepdims=True)) / (D * std)
    return dx, dgamma, dbeta


def test_layernorm_backward_is_judged_right_and_batch_norms_axis_named():
    x, gamma, beta = _watched(RNG.normal(1.0, 2.0, size=(4, 5)), RNG.normal(size=5), RNG.normal(size=5))
    dout = RNG.normal(size=(4, 5))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, gamma, beta])
        out, cache = _layernorm_forward(x, gamma, beta, {})
    dx, dgamma, dbeta = _layernorm_backward(dout, cache)
    assert tape.compare(out, {x: dx, gamma: dgamma, beta: dbeta}, output_gradients=dout).ok
    dx_bug, _, _ = _layernorm_backward(dout, cache, axis=0)
    bad = tape.compare(out, {x: dx_bug, gamma: dgamma, beta: dbeta}, output_gradients=dout)
    assert bad.first_wrong.name == "x" and bad["gamma"].ok and bad["beta"].ok


def _layernorm_forward_by_transpose(x, gamma, beta, ln_param):
    """``layernorm_forward`` as many students write it: batch norm's train-mode lines on ``x.T``.

    Transposed, each example is a column, so batch norm's ``axis=0`` statistics
    are the example's; ``x_hat`` is transposed back before ``γ``, ``β`` (per feature).
    """
    eps = ln_param.get("eps", 1e-5)
    x = x.T
    sample_mean = np.mean(x, axis=0)
    sample_var = np.var(x, axis=0)
    x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
    out = gamma * x_hat.T + beta
    return out, (x_hat, gamma, sample_var, eps)


def _layernorm_backward_by_transpose(dout, cache, gamma_axis=1):
    """The matching backward: ``dgamma``/``dbeta`` on the transposed ``x_hat``, then ``batchnorm_backward_alt``'s
    line on ``(dout·γ).T``, and ``dx`` transposed back. ``gamma_axis=0`` is the planted bug: after the
    transpose the batch is axis 1, so summing axis 0 gives one number per example, not per feature."""
    x_hat, gamma, sample_var, eps = (np.asarray(c) if not isinstance(c, float) else c for c in cache)
    D = x_hat.shape[0]
    dgamma = (dout.T * x_hat).sum(axis=gamma_axis)
    dbeta = dout.sum(axis=0)
    dx_hat = (dout * gamma).T
    std_inv = 1 / np.sqrt(sample_var + eps)
    dx = std_inv / D * (D * dx_hat - dx_hat.sum(axis=0) - x_hat * (dx_hat * x_hat).sum(axis=0))
    return dx.T, dgamma, dbeta


def test_layernorm_written_as_batch_norm_on_the_transpose_is_judged_right_and_a_wrong_axis_named():
    """The transposes record like any op: the student's ``dx`` is judged right; a ``dgamma`` summed over
    the wrong axis after the transpose gets the shape row (one value per example, ``(4,)`` for ``(5,)``)."""
    x, gamma, beta = _watched(RNG.normal(1.0, 2.0, size=(4, 5)), RNG.normal(size=5), RNG.normal(size=5))
    x_before = x.numpy().copy()
    dout = RNG.normal(size=(4, 5))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, gamma, beta])
        out, cache = _layernorm_forward_by_transpose(x, gamma, beta, {})
    dx, dgamma, dbeta = _layernorm_backward_by_transpose(dout, cache)
    assert tape.compare(out, {x: dx, gamma: dgamma, beta: dbeta}, output_gradients=dout).ok
    _, dgamma_bug, _ = _layernorm_backward_by_transpose(dout, cache, gamma_axis=0)
    bad = tape.compare(out, {x: dx, gamma: dgamma_bug, beta: dbeta}, output_gradients=dout)
    assert bad.first_wrong.name == "gamma" and bad.first_wrong.status == "shape"
    assert "(4,)" in bad.first_wrong.message and "(5,)" in bad.first_wrong.message
    np.testing.assert_array_equal(x.numpy(), x_before)


# ----- spatial group norm: (N, C, H, W), G groups of channels -----------------------------------------------
def _spatial_groupnorm_forward(x, gamma, beta, G, gn_param):
    """``spatial_groupnorm_forward``: each example's channels cut into G groups, each group normalized.

    γ and β have the notebook's shape ``(1, C, 1, 1)``.
    """
    eps = gn_param.get("eps", 1e-5)
    N, C, H, W = x.shape
    x_group = x.reshape(N, G, C // G, H, W)
    mean = x_group.mean(axis=(2, 3, 4), keepdims=True)
    var = x_group.var(axis=(2, 3, 4), keepdims=True)
    std = np.sqrt(var + eps)
    x_hat = ((x_group - mean) / std).reshape(N, C, H, W)
    out = gamma * x_hat + beta
    return out, (x_hat, gamma, std, G)


def _spatial_groupnorm_backward(dout, cache, count=None):
    """``spatial_groupnorm_backward``: layer norm's formula per group, ``M = C/G·H·W`` entries each.

    ``count="N"`` is the planted bug: batch norm's ``N`` where the group's
    ``M`` belongs (the formula copied from ``batchnorm_backward_alt``).
    """
    x_hat, gamma, std, G = cache
    x_hat, gamma, std = np.asarray(x_hat), np.asarray(gamma), np.asarray(std)
    N, C, H, W = dout.shape
    M = C // G * H * W if count is None else N
    dgamma = (dout * x_hat).sum(axis=(0, 2, 3), keepdims=True)
    dbeta = dout.sum(axis=(0, 2, 3), keepdims=True)
    dx_hat = (dout * gamma).reshape(N, G, C // G, H, W)
    xg = x_hat.reshape(N, G, C // G, H, W)
    dx = (M * dx_hat - dx_hat.sum(axis=(2, 3, 4), keepdims=True)
          - xg * (dx_hat * xg).sum(axis=(2, 3, 4), keepdims=True)) / (M * std)
    return dx.reshape(N, C, H, W), dgamma, dbeta


def test_spatial_groupnorm_backward_is_judged_right_and_a_wrong_count_named():
    x, gamma, beta = _watched(RNG.normal(size=(2, 6, 3, 3)), RNG.normal(size=(1, 6, 1, 1)),
                              RNG.normal(size=(1, 6, 1, 1)))
    dout = RNG.normal(size=(2, 6, 3, 3))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, gamma, beta])
        out, cache = _spatial_groupnorm_forward(x, gamma, beta, 3, {"eps": 1e-5})
    dx, dgamma, dbeta = _spatial_groupnorm_backward(dout, cache)
    cmp = tape.compare(out, {x: dx, gamma: dgamma, beta: dbeta}, output_gradients=dout)
    assert cmp.ok, str(cmp)
    dx_bug, _, _ = _spatial_groupnorm_backward(dout, cache, count="N")
    bad = tape.compare(out, {x: dx_bug, gamma: dgamma, beta: dbeta}, output_gradients=dout)
    assert bad.first_wrong.name == "x" and bad["gamma"].ok


# ----- dropout: inverted dropout with a seeded mask --------------------------------------------------------
def _dropout_forward(x, dropout_param):
    """``dropout_forward``: keep each unit with probability ``p``, scale by ``1/p`` (inverted dropout).

    A ``seed`` in ``dropout_param`` seeds numpy's global generator, as the
    starter does, so the gradient check sees the same mask every call.
    """
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    mask = None
    if mode == "train":
        mask = (np.random.rand(*x.shape) < p) / p
        out = x * mask
    else:
        out = x
    return out, (dropout_param, mask)


def _dropout_backward(dout, cache, scale=True):
    """``dropout_backward``: the upstream gradient through the kept units, times the same ``1/p``.

    ``scale=False`` is the planted bug: the mask's ``1/p`` forgotten (``mask > 0``).
    """
    dropout_param, mask = cache
    if dropout_param["mode"] == "train":
        return dout * (mask if scale else (mask > 0))
    return dout


@pytest.mark.parametrize("mode", ["train", "test"])
def test_dropout_with_a_seed_agrees_with_the_worksheets_backward(mode):
    """The tape differentiates the mask that was drawn: its ``dx`` is ``dropout_backward``'s, same mask."""
    x = adv.constant(RNG.normal(size=(5, 8)), name="x")
    x_before = x.numpy().copy()
    dout = RNG.normal(size=(5, 8))
    param = {"mode": mode, "p": 0.75, "seed": 123}
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out, cache = _dropout_forward(x, param)
    _, again = _dropout_forward(x.numpy(), param)          # the gradient check's next call: same seed, same mask
    if mode == "train":
        np.testing.assert_array_equal(cache[1], again[1])
        assert 0 < np.count_nonzero(cache[1]) < cache[1].size
    dx = _dropout_backward(dout, cache)
    assert tape.compare(out, {x: dx}, output_gradients=dout).ok
    np.testing.assert_allclose(tape.gradient(out, x, output_gradients=dout).numpy(), dx)
    if mode == "train":
        bad = tape.compare(out, {x: _dropout_backward(dout, cache, scale=False)}, output_gradients=dout)
        assert bad.first_wrong.name == "x" and "times 0.75" in bad.first_wrong.message
    np.testing.assert_array_equal(x.numpy(), x_before)


# ----- assignment 3: the LSTM --------------------------------------------------------------------------------
def _sigmoid(x):
    """``rnn_layers.sigmoid``: a numerically stable logistic function, ``1 / (1 + e^−x)``."""
    return 1 / (1 + np.exp(-x))


def _lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    """``lstm_step_forward``: one affine map for the four gates, ``a`` of shape ``(N, 4H)`` in i, f, o, g order."""
    H = prev_h.shape[1]
    a = x.dot(Wx) + prev_h.dot(Wh) + b
    i = _sigmoid(a[:, :H])
    f = _sigmoid(a[:, H:2 * H])
    o = _sigmoid(a[:, 2 * H:3 * H])
    g = np.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    return next_h, next_c, (x, prev_h, prev_c, Wx, Wh, i, f, o, g, next_c, a)


def _lstm_step_backward(dnext_h, dnext_c, cache, through_h=True):
    """``lstm_step_backward``: ``dc = dnext_c + dnext_h·o·(1 − tanh²c)``, then each gate, then ``da``.

    With ``h = o·tanh(c)`` and ``c = f·c_prev + i·g``, the cell's gradient has
    two paths: the next step's ``dnext_c`` and this step's ``h``.
    ``through_h=False`` is the planted bug: the path through ``h`` left out.
    """
    x, prev_h, prev_c, Wx, Wh, i, f, o, g, next_c, a = (np.asarray(c) for c in cache)
    tc = np.tanh(next_c)
    dc = dnext_c + (dnext_h * o * (1 - tc ** 2) if through_h else 0)
    di, df, do, dg = dc * g, dc * prev_c, dnext_h * tc, dc * i
    da = np.hstack([di * i * (1 - i), df * f * (1 - f), do * o * (1 - o), dg * (1 - g ** 2)])
    dx, dprev_h = da.dot(Wx.T), da.dot(Wh.T)
    return dx, dprev_h, dc * f, x.T.dot(da), prev_h.T.dot(da), da.sum(axis=0), dc


def _lstm_data(N=2, D=3, H=4):
    x, h0, c0 = _watched(RNG.normal(size=(N, D)), RNG.normal(size=(N, H)), RNG.normal(size=(N, H)))
    Wx = adv.Variable(0.4 * RNG.normal(size=(D, 4 * H)), name="Wx")
    Wh = adv.Variable(0.4 * RNG.normal(size=(H, 4 * H)), name="Wh")
    b = adv.Variable(0.1 * RNG.normal(size=(4 * H,)), name="b")
    return x, h0, c0, Wx, Wh, b


def test_lstm_step_backward_is_judged_right_and_the_missing_path_through_h_named_at_the_cell():
    """Both outputs of the step get an upstream gradient (``dnext_h`` and ``dnext_c``), as the notebook checks.

    The tape takes one target; ``sum(next_h·dnext_h) + sum(next_c·dnext_c)``
    has the step's gradients. The hand ``dc`` without the path through ``h``
    is named at ``next_c``; ``a``'s row and the weights inherit it.
    """
    x, prev_h, prev_c, Wx, Wh, b = _lstm_data()
    dnext_h, dnext_c = RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, prev_h, prev_c])
        next_h, next_c, cache = _lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b)
        total = np.sum(next_h * dnext_h) + np.sum(next_c * dnext_c)
    dx, dprev_h, dprev_c, dWx, dWh, db, _ = _lstm_step_backward(dnext_h, dnext_c, cache)
    hand = {x: dx, prev_h: dprev_h, prev_c: dprev_c, Wx: dWx, Wh: dWh, b: db}
    cmp = tape.compare(total, hand)
    assert cmp.ok, str(cmp)
    bx, bh, bc, bWx, bWh, bb, bdc = _lstm_step_backward(dnext_h, dnext_c, cache, through_h=False)
    bad = tape.compare(total, {next_c: bdc, x: bx, prev_c: bc, Wx: bWx, Wh: bWh, b: bb, next_h: dnext_h})
    assert bad.first_wrong.name == "next_c" and bad["next_h"].ok
    assert not bad["Wx"].ok and not bad["prev_c"].ok


def _lstm_forward_into_zeros(x, h0, Wx, Wh, b):
    """``lstm_forward`` as the starter's shape comments invite: ``h = np.zeros((N, T, H))``, one slice a step."""
    N, T, _ = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    prev_h, prev_c = h0, np.zeros((N, H))
    for t in range(T):
        prev_h, prev_c, _ = _lstm_step_forward(x[:, t, :], prev_h, prev_c, Wx, Wh, b)
        h[:, t, :] = prev_h                                 # numpy copies the numbers: the path leaves here
    return h


def test_lstm_forward_into_np_zeros_is_a_lost_path_at_the_slice_write():
    """The student's correct ``dWh`` is not called wrong: the row says ``lost`` at ``h[:, t, :] = prev_h``."""
    import inspect
    x = adv.constant(RNG.normal(size=(2, 3, 3)))
    h0 = adv.constant(RNG.normal(size=(2, 4)))
    _, _, _, Wx, Wh, b = _lstm_data(2, 3, 4)
    with adv.GradientTape(persistent=True) as tape:
        h = _lstm_forward_into_zeros(x, h0, Wx, Wh, b)
        loss = np.sum(h) + 0.0 * adv.sum(Wh)                # Wh also reaches the loss directly
    assert type(h) is np.ndarray
    row = tape.compare(loss, {Wh: np.ones(Wh.shape)}).rows[0]
    lines, start = inspect.getsourcelines(_lstm_forward_into_zeros)
    line = start + next(k for k, text in enumerate(lines) if "h[:, t, :] = prev_h" in text)
    assert row.status == "lost" and f"line {line}" in row.message


def test_lstm_forward_over_time_with_stacked_steps_and_the_learners_lstm_backward():
    """``lstm_forward`` with the steps stacked (``adv.stack``; ``h[:, t, :] = next_h`` into ``np.zeros``
    loses the path, see ``test_worksheets_cs231n.py``) and ``lstm_backward`` walking ``t = T−1 … 0``."""
    N, T, D, H = 2, 3, 3, 4
    xs = adv.constant(RNG.normal(size=(N, T, D)))
    h0 = adv.constant(RNG.normal(size=(N, H)))
    _, _, _, Wx, Wh, b = _lstm_data(N, D, H)
    dout = RNG.normal(size=(N, T, H))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([xs, h0])
        prev_h, prev_c, steps, caches = h0, np.zeros((N, H)), [], []
        for t in range(T):
            prev_h, prev_c, cache = _lstm_step_forward(xs[:, t, :], prev_h, prev_c, Wx, Wh, b)
            steps.append(prev_h)
            caches.append(cache)
        h = adv.stack(steps, axis=1)
    dx = np.zeros((N, T, D))
    dWx, dWh, db = np.zeros(Wx.shape), np.zeros(Wh.shape), np.zeros(b.shape)
    dprev_h, dprev_c = np.zeros((N, H)), np.zeros((N, H))
    for t in reversed(range(T)):
        dx[:, t, :], dprev_h, dprev_c, dWx_t, dWh_t, db_t, _ = _lstm_step_backward(
            dout[:, t, :] + dprev_h, dprev_c, caches[t])
        dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t
    cmp = tape.compare(h, {xs: dx, h0: dprev_h, Wx: dWx, Wh: dWh, b: db}, output_gradients=dout)
    assert cmp.ok, str(cmp)
    # the classic slip: the upstream dout[:, t] alone, without the carried dprev_h
    dWh_bad, dprev_h = np.zeros(Wh.shape), np.zeros((N, H))
    dprev_c = np.zeros((N, H))
    for t in reversed(range(T)):
        _, dprev_h, dprev_c, _, dWh_t, _, _ = _lstm_step_backward(dout[:, t, :], dprev_c, caches[t])
        dWh_bad = dWh_bad + dWh_t
    bad = tape.compare(h, {Wx: dWx, Wh: dWh_bad}, output_gradients=dout)
    assert bad.first_wrong.name == "Wh" and bad["Wx"].ok
