"""CS231n assignment 1 in the student's numpy spelling, recorded by a tape and judged by ``tape.compare``.

Ported (our own code, reduced sizes, random data) from the 2024 starter code,
https://cs231n.github.io/assignments2024/assignment1/ : ``linear_svm.py``
(``svm_loss_naive``, ``svm_loss_vectorized``), ``softmax.py``
(``softmax_loss_naive``), and the two-layer net built from ``layers.py``
(``affine_forward``/``backward``, ``relu_forward``/``backward``,
``softmax_loss``) and ``layer_utils.py`` (``affine_relu_forward``/``backward``).

Each loss function computes the loss *and* the student's hand gradient in one
function, as the worksheet asks. Called with ``W`` an ``adv.Variable`` inside a
``GradientTape``, the loss is a tensor the tape recorded and the hand gradient
is numbers (``dW = np.zeros(W.shape)``, ``dW[:, j] += X[i]``, ``dW += 2 * reg * W``
write values into an array). Three checks each time:

* a correct hand gradient is judged correct (and the worksheet's numerical
  gradient check, ``grad_check_sparse``, is ``adv.check_grads`` on the loss);
* a planted bug is named at its intermediate, with what is wrong;
* nothing in the learner's arrays changes.

Where numpy takes a tracked value out of the tape (``X[i].dot(W)`` with ``X``
an ndarray), ``compare`` says the path was lost at that line instead of calling
the right answer wrong; ``X[i] @ W`` keeps it.
"""
import inspect

import numpy as np
import pytest

import autodiff_viz as adv

RNG = np.random.default_rng(2311)
N, D, C = 5, 4, 3


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def _data():
    X = RNG.normal(size=(N, D))
    y = np.array([0, 2, 1, 2, 0])
    W = adv.Variable(0.1 * RNG.normal(size=(D, C)), name="W")
    return X, y, W


# ----- svm_loss_naive ---------------------------------------------------------------------------------------
def svm_loss_naive_dot(W, X, y, reg):
    """The starter's first line of the loop as given: ``scores = X[i].dot(W)`` (ndarray.dot)."""
    dW = np.zeros(W.shape)
    loss = 0.0
    for i in range(X.shape[0]):
        scores = X[i].dot(W)
        correct_class_score = scores[y[i]]
        for j in range(W.shape[1]):
            if j == y[i]:
                continue
            margin = scores[j] - correct_class_score + 1
            if margin > 0:
                loss += margin
                dW[:, j] += X[i]
                dW[:, y[i]] -= X[i]
    loss /= X.shape[0]
    dW /= X.shape[0]
    loss += reg * np.sum(W * W)
    dW += 2 * reg * W
    return loss, dW


def svm_loss_naive(W, X, y, reg, forget_correct_class=False):
    """The same double loop with ``X[i] @ W``; the hinge ``max(0, s_j − s_y + 1)`` for every j ≠ y.

    ∂L/∂W[:, j] gets ``X[i]`` for each positive margin and ∂L/∂W[:, y] gets
    ``−X[i]`` for each: the planted bug drops the second.
    """
    dW = np.zeros(W.shape)
    loss = 0.0
    for i in range(X.shape[0]):
        scores = X[i] @ W
        correct_class_score = scores[y[i]]
        for j in range(W.shape[1]):
            if j == y[i]:
                continue
            margin = scores[j] - correct_class_score + 1
            if margin > 0:
                loss += margin
                dW[:, j] += X[i]
                if not forget_correct_class:
                    dW[:, y[i]] -= X[i]
    loss /= X.shape[0]
    dW /= X.shape[0]
    loss += reg * np.sum(W * W)
    dW += 2 * reg * W
    return loss, dW


def test_svm_loss_naive_with_ndarray_dot_is_a_lost_path_not_a_wrong_answer():
    """https://cs231n.github.io/assignments2024/assignment1/ (``linear_svm.py``: ``scores = X[i].dot(W)``)."""
    X, y, W = _data()
    with adv.GradientTape() as tape:
        loss, dW = svm_loss_naive_dot(W, X, y, 0.05)
    _, dW_ok = svm_loss_naive(W.numpy(), X, y, 0.05)
    np.testing.assert_allclose(dW, dW_ok)                 # the student's hand gradient is the right one
    row = tape.compare(loss, {W: dW}).rows[0]
    assert row.status == "lost" and not row.ok
    line = _line_of(svm_loss_naive_dot, "X[i].dot(W)\n")
    assert f"line {line}" in row.message and "X @ W" in row.message


def test_svm_loss_naive_hand_gradient_judged_right_and_the_forgotten_correct_class_named():
    """https://cs231n.github.io/assignments2024/assignment1/ (``linear_svm.py``; ``svm.ipynb``'s gradient check)."""
    X, y, W = _data()
    X_before, W_before = X.copy(), W.numpy().copy()
    with adv.GradientTape() as tape:
        loss, dW = svm_loss_naive(W, X, y, 0.05)
        _, dW_bug = svm_loss_naive(W, X, y, 0.05, forget_correct_class=True)
    assert type(dW) is np.ndarray and loss.shape == ()
    cmp = tape.compare(loss, {W: dW})
    assert cmp.ok, str(cmp)
    bad = tape.compare(loss, {W: dW_bug})
    assert bad.first_wrong.name == "W" and bad.first_wrong.status == "wrong"
    # the notebook's numerical check of the loss: the tape's gradient against finite differences
    assert adv.check_grads(lambda w: svm_loss_naive(w, X, y, 0.05)[0], (W.numpy(),), modes=("reverse",)).ok
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(W.numpy(), W_before)


# ----- svm_loss_vectorized ----------------------------------------------------------------------------------
def svm_loss_vectorized(W, X, y, reg, forget_row_sum=False):
    """Margins for all classes at once; the correct class's margin (always 1) masked to 0.

    The hand backward: dscores = 1[margin > 0], and the correct class gets
    −(number of positive margins in its row); all / N; dW = Xᵀ·dscores + 2·reg·W.
    """
    num_train = X.shape[0]
    scores = X @ W
    correct_class_scores = scores[np.arange(num_train), y]
    margins = np.maximum(0, scores - correct_class_scores[:, np.newaxis] + 1)
    is_correct = np.zeros(margins.shape, bool)
    is_correct[np.arange(num_train), y] = True
    margins = np.where(is_correct, 0.0, margins)          # the tape's spelling of margins[arange, y] = 0
    loss = np.sum(margins) / num_train + reg * np.sum(W * W)

    dscores = (margins.numpy() > 0).astype(float)         # the backward works on the forward's numbers
    if not forget_row_sum:
        dscores[np.arange(num_train), y] = -dscores.sum(axis=1)
    dscores /= num_train
    dW = X.T.dot(dscores) + 2 * reg * W.numpy()
    return loss, dW, {"scores": scores, "dscores": dscores}


def test_svm_vectorized_item_write_on_a_tensor_refuses_with_the_fix_before_changing_anything():
    """``margins[np.arange(num_train), y] = 0`` in ``linear_svm.py``.

    Source: https://cs231n.github.io/assignments2024/assignment1/

    Tensors are immutable (TensorFlow's semantics): the write raises at that
    line and says how to keep the gradient; the tensor is as it was.
    """
    X, y, W = _data()
    with adv.GradientTape():
        scores = X @ W
        margins = np.maximum(0, scores - scores[np.arange(N), y][:, np.newaxis] + 1)
        before = margins.numpy().copy()
        with pytest.raises(TypeError, match=r"does not support item assignment.*adv\.where\(mask, new, t\)"):
            margins[np.arange(N), y] = 0
    np.testing.assert_array_equal(margins.numpy(), before)


def test_svm_vectorized_judged_right_and_the_missing_row_sum_named_at_scores():
    """https://cs231n.github.io/assignments2024/assignment1/ (``linear_svm.py``: ``svm_loss_vectorized``)."""
    X, y, W = _data()
    X_before = X.copy()
    with adv.GradientTape() as tape:
        loss, dW, cache = svm_loss_vectorized(W, X, y, 0.05)
        _, dW_bug, cache_bug = svm_loss_vectorized(W, X, y, 0.05, forget_row_sum=True)
    _, dW_naive = svm_loss_naive(W.numpy(), X, y, 0.05)
    np.testing.assert_allclose(dW, dW_naive, atol=1e-12)  # the worksheet's "difference: 0.000000"
    cmp = tape.compare(loss, {cache["scores"]: cache["dscores"], W: dW})
    assert cmp.ok, str(cmp)
    bad = tape.compare(loss, {cache["scores"]: cache_bug["dscores"], W: dW_bug})
    assert bad.first_wrong.name == "scores" and not bad["W"].ok
    np.testing.assert_array_equal(X, X_before)


# ----- softmax_loss_naive -----------------------------------------------------------------------------------
def softmax_loss_naive(W, X, y, reg, forget_mean=False):
    """Loops over examples and classes: L_i = −log p_{y_i}; ∂L_i/∂W[:, j] = (p_j − 1[j = y_i])·X[i]."""
    loss = 0.0
    dW = np.zeros(W.shape)
    num_train, num_classes = X.shape[0], W.shape[1]
    for i in range(num_train):
        scores = X[i] @ W
        scores -= np.max(scores)                          # numeric stability (a new tensor, not a write)
        p = np.exp(scores) / np.sum(np.exp(scores))
        loss += -np.log(p[y[i]])
        for j in range(num_classes):
            dW[:, j] += (p[j] - (j == y[i])) * X[i]
    loss /= num_train
    if not forget_mean:
        dW /= num_train
    loss += reg * np.sum(W * W)
    dW += 2 * reg * W
    return loss, dW


def test_softmax_loss_naive_judged_right_and_a_forgotten_mean_named_with_its_factor():
    """https://cs231n.github.io/assignments2024/assignment1/ (``softmax.py``: ``softmax_loss_naive``).

    The sanity check of the notebook holds too: with tiny weights the loss is
    close to −log(1/C). The data enters as ``adv.constant(X)``: the hand
    gradient is accumulated in the same loop as the loss (``dW[:, j] += ...``
    writes numbers), and with ``X`` a numpy array every ``X[i]`` would be a
    new constant made after those writes, so compare could not rule out that
    one of them carried a lost value back and would say ``lost`` instead of
    ``wrong`` for a planted bug. As a constant, ``X[i]`` is an op on the tape.
    """
    X, y, W = _data()
    W = adv.Variable(1e-4 * RNG.normal(size=(D, C)), name="W")
    X_before = X.copy()
    with adv.GradientTape() as tape:
        loss, dW = softmax_loss_naive(W, adv.constant(X), y, 0.0)
        _, dW_bug = softmax_loss_naive(W, adv.constant(X), y, 0.0, forget_mean=True)
    assert abs(float(loss) - np.log(C)) < 1e-2
    assert tape.compare(loss, {W: dW}).ok
    bad = tape.compare(loss, {W: dW_bug}).first_wrong
    assert bad.name == "W" and "times 5" in bad.message
    assert adv.check_grads(lambda w: softmax_loss_naive(w, X, y, 0.1)[0], (W.numpy(),), modes=("reverse",)).ok
    np.testing.assert_array_equal(X, X_before)


# ----- layers.py: relu, affine, softmax_loss; layer_utils: affine_relu; fc_net.py: TwoLayerNet -------------
def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, _ = cache
    dx = dout.dot(np.asarray(w).T).reshape(x.shape)
    dw = np.asarray(x).reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


def relu_forward(x):
    out = np.maximum(0, x)
    return out, x


def relu_backward(dout, cache, forget_dout=False):
    x = np.asarray(cache)
    return (x > 0).astype(float) if forget_dout else dout * (x > 0)


def affine_relu_forward(x, w, b):
    a, fc_cache = affine_forward(x, w, b)
    out, relu_cache = relu_forward(a)
    return out, (fc_cache, relu_cache)


def affine_relu_backward(dout, cache):
    fc_cache, relu_cache = cache
    da = relu_backward(dout, relu_cache)
    return affine_backward(da, fc_cache)


def softmax_loss(x, y):
    """Returns the loss and dx = (softmax(x) − onehot(y)) / N, as the starter's ``softmax_loss``."""
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    probs = np.exp(log_probs)
    n = x.shape[0]
    loss = -np.sum(log_probs[np.arange(n), y]) / n
    dx = np.array(probs)                                  # a writable numpy copy (probs.copy() is a tensor)
    dx[np.arange(n), y] -= 1
    dx /= n
    return loss, dx


class TwoLayerNet:
    """affine – relu – affine – softmax, with L2 regularization 0.5·reg·(‖W1‖² + ‖W2‖²), as ``fc_net.py``."""

    def __init__(self, input_dim, hidden_dim, num_classes, weight_scale, reg):
        self.reg = reg
        self.params = {"W1": adv.Variable(weight_scale * RNG.normal(size=(input_dim, hidden_dim)), name="W1"),
                       "b1": adv.Variable(np.zeros(hidden_dim), name="b1"),
                       "W2": adv.Variable(weight_scale * RNG.normal(size=(hidden_dim, num_classes)), name="W2"),
                       "b2": adv.Variable(np.zeros(num_classes), name="b2")}

    def loss(self, X, y, planted_bug=None):
        W1, b1, W2, b2 = (self.params[k] for k in ("W1", "b1", "W2", "b2"))
        h, cache_h = affine_relu_forward(X, W1, b1)
        scores, cache_s = affine_forward(h, W2, b2)
        self.scores, self.h = scores, h
        loss, dscores = softmax_loss(scores, y)
        loss += 0.5 * self.reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
        grads = {}
        self.dscores = dscores
        dh, grads["W2"], grads["b2"] = affine_backward(dscores, cache_s)
        self.dh = dh
        self.a = cache_h[1]                   # the relu's input, named `out` in affine_forward (its line)
        if planted_bug == "relu":                         # relu_backward that forgets to multiply by dout
            self.da = relu_backward(dh, cache_h[1], forget_dout=True)
            _, grads["W1"], grads["b1"] = affine_backward(self.da, cache_h[0])
        else:
            self.da = relu_backward(dh, cache_h[1])
            _, grads["W1"], grads["b1"] = affine_relu_backward(dh, cache_h)
        grads["W1"] += self.reg * W1.numpy()
        grads["W2"] += self.reg * W2.numpy()
        return loss, grads


def test_relu_and_affine_relu_layers_checked_with_an_upstream_dout():
    """``relu_forward``/``relu_backward`` and ``affine_relu_forward``/``backward`` with the notebook's ``dout``.

    https://cs231n.github.io/assignments2024/assignment1/ (``layers.py``, ``layer_utils.py``). The
    notebook checks each with ``eval_numerical_gradient_array(f, x, dout)``: here
    ``compare(out, ..., output_gradients=dout)``, the gradients of sum(out · dout).
    """
    x = adv.constant(RNG.normal(size=(4, 2, 3)), name="x")
    w = adv.constant(RNG.normal(size=(6, 5)), name="w")
    b = adv.constant(RNG.normal(size=(5,)), name="b")
    dout = RNG.normal(size=(4, 5))
    x_before = x.numpy().copy()
    with adv.GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        out, cache = affine_relu_forward(x, w, b)
        r, r_cache = relu_forward(x)
    dx, dw, db = affine_relu_backward(dout, cache)
    assert tape.compare(out, {x: dx, w: dw, b: db}, output_gradients=dout).ok
    dr = RNG.normal(size=x.shape)
    assert tape.compare(r, {x: relu_backward(dr, r_cache)}, output_gradients=dr).ok
    bad = tape.compare(r, {x: relu_backward(dr, r_cache, forget_dout=True)}, output_gradients=dr)
    assert bad.first_wrong.name == "x" and bad.first_wrong.status == "wrong"
    np.testing.assert_array_equal(x.numpy(), x_before)


def test_two_layer_net_loss_grads_dict_judged_right_and_a_relu_backward_bug_named_at_its_input():
    """``TwoLayerNet.loss`` (https://cs231n.github.io/assignments2024/assignment1/, ``fc_net.py``).

    The data enters as ``adv.constant(X)`` so that ``x.reshape(...).dot(w)`` in
    ``affine_forward`` is the tensor's ``dot`` and is recorded; with ``X`` a
    numpy array, numpy's ``ndarray.dot`` takes ``W1`` as numbers and compare
    says the path to W1 was lost at that line (next test).
    """
    X = RNG.normal(size=(N, 6))
    y = np.array([0, 2, 1, 2, 0])
    model = TwoLayerNet(6, 7, C, weight_scale=0.3, reg=0.1)
    values_before = {k: v.numpy().copy() for k, v in model.params.items()}
    with adv.GradientTape() as tape:
        loss, grads = model.loss(adv.constant(X), y)
    cmp = tape.compare(loss, {model.scores: model.dscores, model.h: model.dh, model.a: model.da,
                              **{model.params[k]: g for k, g in grads.items()}})
    assert cmp.ok, str(cmp)
    with adv.GradientTape() as tape:
        loss, grads = model.loss(adv.constant(X), y, planted_bug="relu")
    bad = tape.compare(loss, {model.scores: model.dscores, model.h: model.dh, model.a: model.da,
                              **{model.params[k]: g for k, g in grads.items()}})
    assert [r.name for r in bad.rows] == ["out", "b2", "W2", "out", "out", "b1", "W1"]  # scores, h, a: `out`
    assert bad.first_wrong is bad.rows[4] and all(r.ok for r in bad.rows[:4])   # the relu's input
    assert not bad["W1"].ok and not bad["b1"].ok
    for k, v in model.params.items():
        np.testing.assert_array_equal(v.numpy(), values_before[k])


def test_two_layer_net_with_numpy_data_says_the_path_to_w1_was_lost_in_affine_forward():
    """The notebook passes ``X`` as a numpy array: ``ndarray.dot(W1)`` leaves the tape at ``affine_forward``'s line."""
    X = RNG.normal(size=(N, 6))
    y = np.array([0, 2, 1, 2, 0])
    model = TwoLayerNet(6, 7, C, weight_scale=0.3, reg=0.1)
    with adv.GradientTape() as tape:
        loss, grads = model.loss(X, y)
    cmp = tape.compare(loss, {model.params[k]: g for k, g in grads.items()})
    assert cmp["W2"].ok and cmp["b2"].ok
    assert cmp["W1"].status == "lost"
    assert f"line {_line_of(affine_forward, '.dot(w)')}" in cmp["W1"].message
