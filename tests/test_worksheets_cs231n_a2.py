"""CS231n assignment 2 in the student's numpy spelling: the update rules of ``optim.py`` and ``FullyConnectedNet``.

Ported (our own code, reduced sizes) from the 2024 starter code,
https://cs231n.github.io/assignments2024/assignment2/ : ``optim.py`` (``sgd_momentum``, ``rmsprop``,
``adam``) as ``FullyConnectedNets.ipynb`` checks them, and ``fc_net.py``'s ``FullyConnectedNet.loss``
with the ``normalization="batchnorm"`` and ``dropout_keep_ratio`` options (``layers.py``:
``batchnorm_forward``/``backward``, ``dropout_forward``/``backward``; ``layer_utils.py``).

The optimizer checks start from the notebook's preset ``config`` (velocity,
cache, m, v, t) and its expected arrays (copied numbers, as the notebook
prints them): here the same update runs with ``adv.optimizers`` built on the
weight (``opt.build([w])``), its slot variables assigned the preset values,
and one ``apply_gradients``. Where Keras' formula differs from the
worksheet's, the docstring says where and by how much.
"""
import numpy as np

import autodiff_viz as adv

N, D = 4, 5
W0 = np.linspace(-0.4, 0.6, num=N * D).reshape(N, D)
DW = np.linspace(-0.6, 0.4, num=N * D).reshape(N, D)


def rel_error(x, y):
    """The notebook's relative error: max |x − y| / max(1e-8, |x| + |y|)."""
    return np.max(np.abs(x - y) / np.maximum(1e-8, np.abs(x) + np.abs(y)))


def _step(opt, slots: dict):
    """One update of W0 by DW from preset slots; the weight and the slots afterwards."""
    w = adv.Variable(W0, name="w")
    opt.build([w])
    by_name = {v.name: v for v in opt.variables}
    for name, value in slots.items():
        by_name[name].assign(value)
    opt.apply_gradients([(adv.constant(DW), w)])
    return w.numpy(), {name: by_name[name].numpy() for name in slots}


def test_sgd_momentum_matches_the_notebook_expected_next_w_and_velocity():
    """``sgd_momentum``: v = μ·v − lr·dw, w = w + v (μ = 0.9). Keras 3's SGD(momentum=0.9) is the same rule.

    https://cs231n.github.io/assignments2024/assignment2/ (``FullyConnectedNets.ipynb``, "SGD+Momentum").
    """
    v = np.linspace(0.6, 0.9, num=N * D).reshape(N, D)
    next_w, slots = _step(adv.optimizers.SGD(learning_rate=1e-3, momentum=0.9), {"w_momentum": v})
    expected_next_w = np.asarray([
        [0.1406, 0.20738947, 0.27417895, 0.34096842, 0.40775789],
        [0.47454737, 0.54133684, 0.60812632, 0.67491579, 0.74170526],
        [0.80849474, 0.87528421, 0.94207368, 1.00886316, 1.07565263],
        [1.14244211, 1.20923158, 1.27602105, 1.34281053, 1.4096]])
    expected_velocity = np.asarray([
        [0.5406, 0.55475789, 0.56891579, 0.58307368, 0.59723158],
        [0.61138947, 0.62554737, 0.63970526, 0.65386316, 0.66802105],
        [0.68217895, 0.69633684, 0.71049474, 0.72465263, 0.73881053],
        [0.75296842, 0.76712632, 0.78128421, 0.79544211, 0.8096]])
    assert rel_error(next_w, expected_next_w) < 1e-8                 # "relative errors around e-8 or less"
    assert rel_error(slots["w_momentum"], expected_velocity) < 1e-8
    np.testing.assert_allclose(next_w, W0 + slots["w_momentum"], rtol=1e-14)


def test_rmsprop_matches_the_notebook_with_epsilon_inside_the_root():
    """``rmsprop``: cache = ρ·cache + (1 − ρ)·dw², w −= lr·dw / (√cache + ε), ρ = 0.99, ε = 1e-8.

    Keras 3's RMSprop keeps the same cache (its slot ``velocity``) but divides
    by √(cache + ε): with cache ≈ 0.6 the two steps differ by about
    ε/(2·cache)·lr·|dw| ≈ 1e-10, far below the notebook's tolerance. The
    caches agree exactly.
    https://cs231n.github.io/assignments2024/assignment2/ (``FullyConnectedNets.ipynb``, "RMSProp").
    """
    cache = np.linspace(0.6, 0.9, num=N * D).reshape(N, D)
    opt = adv.optimizers.RMSprop(learning_rate=1e-2, rho=0.99, epsilon=1e-8)
    next_w, slots = _step(opt, {"w_velocity": cache})
    expected_next_w = np.asarray([
        [-0.39223849, -0.34037513, -0.28849239, -0.23659121, -0.18467247],
        [-0.132737, -0.08078555, -0.02881884, 0.02316247, 0.07515774],
        [0.12716641, 0.17918792, 0.23122175, 0.28326742, 0.33532447],
        [0.38739248, 0.43947102, 0.49155973, 0.54365823, 0.59576619]])
    expected_cache = np.asarray([
        [0.5976, 0.6126277, 0.6277108, 0.64284931, 0.65804321],
        [0.67329252, 0.68859723, 0.70395734, 0.71937285, 0.73484377],
        [0.75037008, 0.7659518, 0.78158892, 0.79728144, 0.81302936],
        [0.82883269, 0.84469141, 0.86060554, 0.87657507, 0.8926]])
    assert rel_error(next_w, expected_next_w) < 1e-7
    assert rel_error(slots["w_velocity"], expected_cache) < 1e-8
    worksheet = W0 - 1e-2 * DW / (np.sqrt(expected_cache) + 1e-8)
    assert 0 < np.max(np.abs(next_w - worksheet)) < 1e-9            # where they differ: ε's place, ~1e-10


def test_adam_matches_the_notebook_when_iterations_is_the_preset_t():
    """``adam`` from m, v and t = 5: the worksheet increments t first (t = 6), then bias-corrects.

    CS231n: t ← t + 1; m ← β₁m + (1−β₁)dw; v ← β₂v + (1−β₂)dw²;
    w −= lr·(m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε). Keras 3 (and this package):
    t = iterations + 1, the same m and v, and w −= α·m/(√v + ε) with
    α = lr·√(1−β₂ᵗ)/(1−β₁ᵗ). So presetting ``opt.iterations = 5`` (the
    worksheet's t before the step) gives the same t = 6, identical m and v,
    and steps that differ only in where ε sits: Keras' ε is the worksheet's
    divided by √(1−β₂ᵗ) ≈ 0.077, a difference of ~1e-9 in w here.
    https://cs231n.github.io/assignments2024/assignment2/ (``FullyConnectedNets.ipynb``, "Adam").
    """
    m = np.linspace(0.6, 0.9, num=N * D).reshape(N, D)
    v = np.linspace(0.7, 0.5, num=N * D).reshape(N, D)
    opt = adv.optimizers.Adam(learning_rate=1e-2, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
    opt.iterations = 5
    next_w, slots = _step(opt, {"w_momentum": m, "w_velocity": v})
    assert opt.iterations == 6
    expected_next_w = np.asarray([
        [-0.40094747, -0.34836187, -0.29577703, -0.24319299, -0.19060977],
        [-0.1380274, -0.08544591, -0.03286534, 0.01971428, 0.0722929],
        [0.1248705, 0.17744702, 0.23002243, 0.28259667, 0.33516969],
        [0.38774145, 0.44031188, 0.49288093, 0.54544852, 0.59801459]])
    expected_v = np.asarray([
        [0.69966, 0.68908382, 0.67851319, 0.66794809, 0.65738853],
        [0.64683452, 0.63628604, 0.6257431, 0.61520571, 0.60467385],
        [0.59414753, 0.58362676, 0.57311152, 0.56260183, 0.55209767],
        [0.54159906, 0.53110598, 0.52061845, 0.51013645, 0.49966]])
    expected_m = np.asarray([
        [0.48, 0.49947368, 0.51894737, 0.53842105, 0.55789474],
        [0.57736842, 0.59684211, 0.61631579, 0.63578947, 0.65526316],
        [0.67473684, 0.69421053, 0.71368421, 0.73315789, 0.75263158],
        [0.77210526, 0.79157895, 0.81105263, 0.83052632, 0.85]])
    np.testing.assert_allclose(next_w, expected_next_w, rtol=0, atol=1e-8)   # the printed 8 decimals
    assert rel_error(next_w, expected_next_w) < 2e-7                 # "around e-7 or less"
    assert rel_error(slots["w_velocity"], expected_v) < 1e-8
    assert rel_error(slots["w_momentum"], expected_m) < 1e-8
    # left at iterations = 0 (t = 1, as a fresh optimizer), the bias correction is another one: far off
    fresh_w, _ = _step(adv.optimizers.Adam(learning_rate=1e-2, epsilon=1e-8), {"w_momentum": m, "w_velocity": v})
    assert rel_error(fresh_w, expected_next_w) > 1e-3


# ----- FullyConnectedNet with batchnorm and dropout (short form) -------------------------------------------
def batchnorm_forward(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    x_hat = (x - mu) / np.sqrt(var + eps)
    return gamma * x_hat + beta, (x_hat, gamma, var, eps)


def batchnorm_backward_alt(dout, cache):
    """dx = γ/(N·σ)·(N·dout − Σdout − x̂·Σ(dout·x̂)), the simplified form the notebook asks for."""
    x_hat, gamma, var, eps = (np.asarray(c) for c in cache)
    n = dout.shape[0]
    dgamma = np.sum(dout * x_hat, axis=0)
    dbeta = np.sum(dout, axis=0)
    dx = gamma / (n * np.sqrt(var + eps)) * (n * dout - dbeta - x_hat * dgamma)
    return dx, dgamma, dbeta


def dropout_forward(x, keep, seed):
    np.random.seed(seed)
    mask = (np.random.rand(*x.shape) < keep) / keep
    return x * mask, mask


class FullyConnectedNet:
    """{affine – batchnorm – relu – dropout} × (L − 1) – affine – softmax, as ``fc_net.py`` (no reg here)."""

    def __init__(self, dims, keep, seed=0):
        rng = np.random.default_rng(seed)
        self.keep, self.L = keep, len(dims) - 1
        self.params = {}
        for i in range(self.L):
            self.params[f"W{i + 1}"] = adv.Variable(rng.normal(size=dims[i:i + 2]) / np.sqrt(dims[i]), name=f"W{i + 1}")
            self.params[f"b{i + 1}"] = adv.Variable(np.zeros(dims[i + 1]), name=f"b{i + 1}")
            if i < self.L - 1:
                self.params[f"gamma{i + 1}"] = adv.Variable(np.ones(dims[i + 1]), name=f"gamma{i + 1}")
                self.params[f"beta{i + 1}"] = adv.Variable(np.zeros(dims[i + 1]), name=f"beta{i + 1}")

    def loss(self, X, y, planted_bug=None):
        p, caches, h = self.params, [], X
        for i in range(1, self.L):
            a = h @ p[f"W{i}"] + p[f"b{i}"]
            bn, bn_cache = batchnorm_forward(a, p[f"gamma{i}"], p[f"beta{i}"])
            r = np.maximum(0, bn)
            h, mask = dropout_forward(r, self.keep, seed=123 + i)
            caches.append((a, bn_cache, bn, mask, h, r))
        scores = h @ p[f"W{self.L}"] + p[f"b{self.L}"]
        shifted = scores - np.max(scores, axis=1, keepdims=True)
        log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
        n = X.shape[0]
        loss = -np.sum(log_probs[np.arange(n), y]) / n

        dscores = np.exp(np.asarray(log_probs))
        dscores[np.arange(n), y] -= 1
        dscores /= n
        grads, hand = {}, {scores: dscores}
        grads[f"W{self.L}"] = np.asarray(h).T @ dscores
        grads[f"b{self.L}"] = dscores.sum(axis=0)
        dh = dscores @ np.asarray(p[f"W{self.L}"]).T
        for i in range(self.L - 1, 0, -1):
            a, bn_cache, bn, mask, h_i, r = caches[i - 1]
            hand[h_i] = dh
            dr = dh if planted_bug == "dropout" else dh * mask       # the bug: the mask forgotten
            hand[r] = dr
            dbn = dr * (np.asarray(bn) > 0)
            da, grads[f"gamma{i}"], grads[f"beta{i}"] = batchnorm_backward_alt(dbn, bn_cache)
            hand[a] = da
            h_prev = X if i == 1 else caches[i - 2][4]
            grads[f"W{i}"] = np.asarray(h_prev).T @ da
            grads[f"b{i}"] = da.sum(axis=0)
            dh = da @ np.asarray(p[f"W{i}"]).T
        hand.update({p[k]: g for k, g in grads.items()})
        return loss, grads, hand


def test_fully_connected_net_with_batchnorm_and_dropout_judged_right_and_a_forgotten_mask_named():
    """``FullyConnectedNet.loss`` with ``normalization="batchnorm"``, ``dropout_keep_ratio=0.75`` and a seed.

    https://cs231n.github.io/assignments2024/assignment2/ (``fc_net.py``; ``Dropout.ipynb`` checks the net's
    gradients with a fixed ``seed`` so that the same mask is drawn). Every
    intermediate the student's backward computes is a key: ``dh`` at each
    hidden output, ``da`` before each batch norm, the grads dict. Dropout's
    backward without the mask is named at the last hidden ReLU's output ``r``.
    """
    rng = np.random.default_rng(7)
    X = adv.constant(rng.normal(size=(6, 5)), name="X")
    y = np.array([0, 1, 2, 0, 1, 2])
    net = FullyConnectedNet([5, 7, 6, 3], keep=0.75)
    before = {k: v.numpy().copy() for k, v in net.params.items()}
    with adv.GradientTape() as tape:
        loss, grads, hand = net.loss(X, y)
    assert set(grads) == set(net.params)
    cmp = tape.compare(loss, hand)
    assert cmp.ok, str(cmp)
    with adv.GradientTape() as tape:
        loss, grads, hand = net.loss(X, y, planted_bug="dropout")
    bad = tape.compare(loss, hand)
    assert bad.first_wrong.name == "r" and not bad["W1"].ok and bad["W3"].ok
    for k, v in net.params.items():
        np.testing.assert_array_equal(v.numpy(), before[k])
