"""CS231n assignment 3 in the student's spelling: RNN backward, word embeddings, temporal layers, saliency.

Ported (our own code, reduced sizes, random data) from the 2024 starter code,
https://cs231n.github.io/assignments2024/assignment3/ : ``rnn_layers.py`` (``rnn_step_forward``/``backward``,
``rnn_backward``, ``word_embedding_forward``/``backward``, ``temporal_affine_forward``/``backward``,
``temporal_softmax_loss``) as ``RNN_Captioning.ipynb`` checks them with an upstream ``dout``, and
``Network_Visualization.ipynb``'s saliency map (PyTorch), where a tiny convolutional net stands in
for SqueezeNet (no download).

Each test: the student's correct backward is judged right by ``compare``
(``output_gradients=dout`` plays the notebook's ``eval_numerical_gradient_array(f, x, dout)``);
a planted bug is named at its intermediate; the learner's arrays are unchanged.
"""
import numpy as np
import pytest

import autodiff_viz as adv

RNG = np.random.default_rng(3)


# ----- rnn_step_forward / rnn_step_backward -----------------------------------------------------------------
def rnn_step_forward(x, prev_h, Wx, Wh, b):
    a = x.dot(Wx) + prev_h.dot(Wh) + b
    next_h = np.tanh(a)
    return next_h, (x, prev_h, Wx, Wh, next_h)


def rnn_step_backward(dnext_h, cache, forget_square=False):
    """da = dnext_h·(1 − next_h²) (tanh' from the output); then the two matrix products' backward."""
    x, prev_h, Wx, Wh, next_h = (np.asarray(c) for c in cache)
    da = dnext_h * (1 - (next_h if forget_square else next_h ** 2))
    return da, da.dot(Wx.T), da.dot(Wh.T), x.T.dot(da), prev_h.T.dot(da), da.sum(axis=0)


def _rnn_params(N=3, D=4, H=5):
    x = adv.constant(RNG.normal(size=(N, D)), name="x")
    prev_h = adv.constant(RNG.normal(size=(N, H)), name="prev_h")
    Wx = adv.constant(0.5 * RNG.normal(size=(D, H)), name="Wx")
    Wh = adv.constant(0.5 * RNG.normal(size=(H, H)), name="Wh")
    b = adv.constant(0.1 * RNG.normal(size=(H,)), name="b")
    return x, prev_h, Wx, Wh, b


def test_rnn_step_backward_judged_right_and_a_missing_square_named_at_the_preactivation():
    """``rnn_step_backward`` (https://cs231n.github.io/assignments2024/assignment3/, ``rnn_layers.py``)."""
    x, prev_h, Wx, Wh, b = _rnn_params()
    values = [t.numpy().copy() for t in (x, prev_h, Wx, Wh, b)]
    dnext_h = RNG.normal(size=(3, 5))
    with adv.GradientTape() as tape:
        tape.watch([x, prev_h, Wx, Wh, b])
        next_h, cache = rnn_step_forward(x, prev_h, Wx, Wh, b)
    da, dx, dprev_h, dWx, dWh, db = rnn_step_backward(dnext_h, cache)
    hand = {x: dx, prev_h: dprev_h, Wx: dWx, Wh: dWh, b: db, "a": da}
    cmp = tape.compare(next_h, hand, output_gradients=dnext_h)
    assert cmp.ok, str(cmp)
    bad = tape.compare(next_h, {**hand, "a": rnn_step_backward(dnext_h, cache, forget_square=True)[0]},
                       output_gradients=dnext_h)
    assert bad.first_wrong.name == "a" and bad.first_wrong.status == "wrong"
    # the notebook's numerical check of the step itself (the tape's rules against finite differences)
    assert adv.check_grads(lambda *args: rnn_step_forward(*args)[0], values, modes=("reverse",)).ok
    for t, v in zip((x, prev_h, Wx, Wh, b), values):
        np.testing.assert_array_equal(t.numpy(), v)


# ----- rnn_forward / rnn_backward ---------------------------------------------------------------------------
def rnn_forward(x, h0, Wx, Wh, b):
    """The steps collected and stacked: ``h[:, t, :] = next_h`` into np.zeros would drop the path."""
    steps, caches, prev_h = [], [], h0
    for t in range(x.shape[1]):
        prev_h, cache = rnn_step_forward(x[:, t, :], prev_h, Wx, Wh, b)
        steps.append(prev_h)
        caches.append(cache)
    return adv.stack(steps, axis=1), caches


def rnn_backward(dh, caches, forget_carry=False):
    """Backward through time, t = T−1 … 0: the step's upstream is dh[:, t] plus the carried dprev_h."""
    N, T, H = dh.shape
    D = np.asarray(caches[0][0]).shape[1]
    dx, dWx, dWh, db = np.zeros((N, T, D)), np.zeros((D, H)), np.zeros((H, H)), np.zeros(H)
    dprev_h, per_step = np.zeros((N, H)), []
    for t in reversed(range(T)):
        upstream = dh[:, t, :] + (0 if forget_carry else dprev_h)
        per_step.append(upstream)
        _, dx[:, t, :], dprev_h, dWx_t, dWh_t, db_t = rnn_step_backward(upstream, caches[t])
        dWx += dWx_t
        dWh += dWh_t
        db += db_t
    return dx, dprev_h, dWx, dWh, db, per_step[::-1]


def test_rnn_backward_through_time_judged_right_and_the_dropped_carry_named_at_a_hidden_state():
    """``rnn_backward`` (https://cs231n.github.io/assignments2024/assignment3/, ``rnn_layers.py``)."""
    N, T, D, H = 2, 4, 3, 5
    x = adv.constant(RNG.normal(size=(N, T, D)), name="x")
    h0 = adv.constant(RNG.normal(size=(N, H)), name="h0")
    Wx = adv.Variable(0.5 * RNG.normal(size=(D, H)), name="Wx")
    Wh = adv.Variable(0.5 * RNG.normal(size=(H, H)), name="Wh")
    b = adv.Variable(0.1 * RNG.normal(size=(H,)), name="b")
    dout = RNG.normal(size=(N, T, H))
    with adv.GradientTape() as tape:
        tape.watch([x, h0])
        h, caches = rnn_forward(x, h0, Wx, Wh, b)
    steps = [c[4] for c in caches]                       # the tensors next_h of each step
    dx, dh0, dWx, dWh, db, per_step = rnn_backward(dout, caches)
    hand = {x: dx, h0: dh0, Wx: dWx, Wh: dWh, b: db, **dict(zip(steps, per_step))}
    cmp = tape.compare(h, hand, output_gradients=dout)
    assert cmp.ok, str(cmp)
    dx, dh0, dWx, dWh, db, per_step = rnn_backward(dout, caches, forget_carry=True)
    bad = tape.compare(h, {x: dx, h0: dh0, Wx: dWx, Wh: dWh, b: db, **dict(zip(steps, per_step))},
                       output_gradients=dout)
    # the last step has no carry, so the first wrong hidden state along the backward pass is step T−2's
    assert bad.first_wrong.name == "next_h" and bad.first_wrong.node == bad.rows[1].node
    assert bad.rows[0].ok and not bad["Wh"].ok


# ----- word embedding ---------------------------------------------------------------------------------------
def word_embedding_forward(x, W):
    return W[x], (x, W)


def word_embedding_backward(dout, cache, buffered=False):
    """``np.add.at(dW, x, dout)`` adds once per occurrence; ``dW[x] += dout`` (the bug) once per distinct word."""
    x, W = cache
    dW = np.zeros(W.shape)
    if buffered:
        dW[x] += dout
    else:
        np.add.at(dW, x, dout)
    return dW


def test_word_embedding_backward_with_np_add_at_judged_right_and_buffered_add_named():
    """``word_embedding_forward``/``backward`` (https://cs231n.github.io/assignments2024/assignment3/)."""
    x = np.array([[0, 3, 1, 3], [2, 0, 0, 4]])           # repeated words: where the buffered += loses counts
    W = adv.Variable(RNG.normal(size=(5, 3)), name="W")
    W_before, x_before = W.numpy().copy(), x.copy()
    dout = RNG.normal(size=(2, 4, 3))
    with adv.GradientTape() as tape:
        out, cache = word_embedding_forward(x, W)
    assert tape.compare(out, {W: word_embedding_backward(dout, cache)}, output_gradients=dout).ok
    bad = tape.compare(out, {W: word_embedding_backward(dout, cache, buffered=True)}, output_gradients=dout)
    assert bad.first_wrong.name == "W" and bad.first_wrong.status == "wrong"
    np.testing.assert_array_equal(W.numpy(), W_before)
    np.testing.assert_array_equal(x, x_before)


# ----- temporal affine and temporal softmax loss ------------------------------------------------------------
def temporal_affine_forward(x, w, b):
    N, T, D = x.shape
    out = x.reshape(N * T, D).dot(w).reshape(N, T, w.shape[1]) + b
    return out, (x, w, b, out)


def temporal_affine_backward(dout, cache, db_axis=(0, 1)):
    x, w, b, _ = (np.asarray(c) for c in cache)
    N, T, D = x.shape
    M = b.shape[0]
    dx = dout.reshape(N * T, M).dot(w.T).reshape(N, T, D)
    dw = dout.reshape(N * T, M).T.dot(x.reshape(N * T, D)).T
    return dx, dw, dout.sum(axis=db_axis)


def test_temporal_affine_backward_judged_right_and_db_summed_over_one_axis_gets_the_shape_row():
    """``temporal_affine_forward``/``backward`` (https://cs231n.github.io/assignments2024/assignment3/)."""
    x = adv.constant(RNG.normal(size=(2, 3, 4)), name="x")
    w = adv.constant(RNG.normal(size=(4, 5)), name="w")
    b = adv.constant(RNG.normal(size=(5,)), name="b")
    dout = RNG.normal(size=(2, 3, 5))
    with adv.GradientTape() as tape:
        tape.watch([x, w, b])
        out, cache = temporal_affine_forward(x, w, b)
    dx, dw, db = temporal_affine_backward(dout, cache)
    assert tape.compare(out, {x: dx, w: dw, b: db}, output_gradients=dout).ok
    _, _, db_bad = temporal_affine_backward(dout, cache, db_axis=0)
    bad = tape.compare(out, {x: dx, w: dw, b: db_bad}, output_gradients=dout)
    assert bad.first_wrong.name == "b" and bad.first_wrong.status == "shape"
    assert "(3, 5)" in bad.first_wrong.message and "(5,)" in bad.first_wrong.message


def temporal_softmax_loss(x, y, mask, forget_mask=False):
    """Softmax loss summed over the masked time steps, divided by N (not by the number of kept steps)."""
    N, T, V = x.shape
    x_flat, y_flat, mask_flat = x.reshape(N * T, V), y.reshape(N * T), mask.reshape(N * T)
    probs = np.exp(x_flat - np.max(x_flat, axis=1, keepdims=True))
    probs /= np.sum(probs, axis=1, keepdims=True)
    loss = -np.sum(mask_flat * np.log(probs[np.arange(N * T), y_flat])) / N
    dx_flat = np.array(probs)                             # a writable numpy copy of the values
    dx_flat[np.arange(N * T), y_flat] -= 1
    dx_flat /= N
    if not forget_mask:
        dx_flat *= mask_flat[:, None]
    return loss, dx_flat.reshape(N, T, V)


def test_temporal_softmax_loss_with_mask_judged_right_and_the_forgotten_mask_named():
    """``temporal_softmax_loss`` with ``mask`` (https://cs231n.github.io/assignments2024/assignment3/).

    Masked steps (the ``<NULL>`` padding after a caption ends) contribute
    neither loss nor gradient: forgetting ``dx *= mask`` is named at ``x``.
    """
    N, T, V = 3, 4, 6
    x = adv.constant(0.1 * RNG.normal(size=(N, T, V)), name="x")
    y = RNG.integers(V, size=(N, T))
    mask = RNG.random(size=(N, T)) > 0.4
    mask[:, 0] = True
    with adv.GradientTape() as tape:
        tape.watch(x)
        loss, dx = temporal_softmax_loss(x, y, mask)
        _, dx_bad = temporal_softmax_loss(x, y, mask, forget_mask=True)
    assert type(dx) is np.ndarray
    assert tape.compare(loss, {x: dx}).ok
    bad = tape.compare(loss, {x: dx_bad}).first_wrong
    assert bad.name == "x" and bad.status == "wrong"


# ----- Network_Visualization: saliency maps in PyTorch -------------------------------------------------------
def compute_saliency_maps(X, y, model):
    """The notebook's spelling: gather the correct class's score, backward with ones, max |grad| over channels."""
    import torch
    model.eval()
    X.requires_grad_()
    scores = model(X)
    scores = scores.gather(1, y.view(-1, 1)).squeeze()
    scores.backward(torch.ones_like(scores))
    saliency = X.grad.abs().max(dim=1)[0]
    return saliency, scores


def _tiny_net():
    """A tiny convolutional classifier standing in for the notebook's pretrained SqueezeNet."""
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(16, 5))


def test_saliency_map_recorded_explained_and_compared_without_changing_the_grads():
    """``compute_saliency_maps`` in ``Network_Visualization.ipynb``.

    Source: https://cs231n.github.io/assignments2024/assignment3/

    Under ``adv.torch.record()`` the notebook's code runs unchanged; the
    gradient of the gathered scores with respect to the image is PyTorch's
    ``X.grad``, which ``rec.compare`` judges right, while the gradient of the
    *summed* scores of every class (a common slip: ``model(X).sum().backward()``)
    is named wrong at ``X``. ``X.grad`` and the weights' ``.grad`` are as
    PyTorch left them.
    """
    torch = pytest.importorskip("torch", reason="the saliency port needs PyTorch (pip install autodiff_viz[torch])")
    model = _tiny_net()
    X = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    model = model.double()
    y = torch.tensor([1, 3])
    X_before = X.detach().clone()
    with adv.torch.record() as rec:
        saliency, scores = compute_saliency_maps(X, y, model)
    assert tuple(saliency.shape) == (2, 6, 6)
    grad = X.grad.detach().clone()
    weight_grads = [p.grad.detach().clone() for p in model.parameters()]
    assert rec.explain(scores, X).reason == "connected"
    ones = torch.ones_like(scores)
    assert rec.compare(scores, {X: grad}, output_gradients=ones).ok
    summed = torch.autograd.grad(model(X).sum(), X)[0]
    bad = rec.compare(scores, {X: summed}, output_gradients=ones).first_wrong
    assert bad.name == "X" and bad.status == "wrong"
    assert torch.equal(X.grad, grad) and torch.equal(X.detach(), X_before)
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), weight_grads))


def test_saliency_without_requires_grad_is_explained_at_the_image():
    """Forgetting ``X.requires_grad_()``: ``X.grad`` is None, and ``rec.explain`` says why, naming X."""
    torch = pytest.importorskip("torch", reason="the saliency port needs PyTorch (pip install autodiff_viz[torch])")
    model = _tiny_net().double()
    X = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    y = torch.tensor([0, 4])
    with adv.torch.record() as rec:
        model.eval()
        scores = model(X).gather(1, y.view(-1, 1)).squeeze()
        scores.backward(torch.ones_like(scores))
    assert X.grad is None
    why = rec.explain(scores, X)
    assert why.reason != "connected" and "requires_grad" in why.message
