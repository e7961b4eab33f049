"""Every non-recurrent layer against PyTorch on copied weights: forward values and the gradients
with respect to the input and to every weight, in float64 (rtol 1e-6).

Converting the weights is part of each test, because it is part of what a
learner has to get right when moving between the two:

* Keras/autodiff_viz are channels last (``NHWC``), PyTorch channels first (``NCHW``);
* a Conv2D kernel is ``(kh, kw, in/groups, out)`` here and ``(out, in/groups, kh, kw)``
  in PyTorch (``kernel.transpose(3, 2, 0, 1)``); a Dense kernel is ``(in, out)`` here
  and ``(out, in)`` there;
* ``padding="same"`` is TensorFlow's (the odd padding entry after), which PyTorch
  expresses as an explicit ``F.pad`` before a ``padding=0`` convolution;
* BatchNormalization's ``momentum=0.99`` is PyTorch's ``momentum=0.01``, and its
  ``epsilon`` default is 1e-3 (PyTorch: 1e-5); PyTorch's running variance is
  unbiased, Keras' is not (checked below).
"""
import numpy as np
import pytest
from conv_reference import same_pads

import autodiff_viz as adv

torch = pytest.importorskip("torch")
F = torch.nn.functional
L = adv.layers
RTOL, ATOL = 1e-6, 1e-10


@pytest.fixture(autouse=True)
def _float64(torch_float64):
    L.clear_session()


def _adv_grads(layer, inputs, upstream, training=None):
    """Output, input gradient(s) and weight gradients of ``sum(layer(inputs) · upstream)``."""
    many = isinstance(inputs, list)
    xs = [adv.constant(x) for x in (inputs if many else [inputs])]
    kwargs = {} if training is None else {"training": training}
    with adv.GradientTape() as tape:
        tape.watch(xs)
        y = layer(xs if many else xs[0], **kwargs)
        loss = adv.sum(y * upstream)
    grads = tape.gradient(loss, xs + list(layer.trainable_variables))
    return y.numpy(), [g.numpy() for g in grads[:len(xs)]], {v.name.split("/")[-1]: g.numpy()
                                                           for v, g in zip(layer.trainable_variables, grads[len(xs):])}


def _leaf(a):
    return torch.tensor(np.ascontiguousarray(a), requires_grad=True)


def _close(got, want):
    np.testing.assert_allclose(got, want.detach().numpy() if hasattr(want, "detach") else want, rtol=RTOL, atol=ATOL)


def _nhwc(t):
    return t.permute(0, 3, 1, 2)


def _same_pads(sizes, ksize, strides, dilation):
    return [same_pads(n, k, s, d) for n, k, s, d in zip(sizes, ksize, strides, dilation)]


def _torch_pad(pads):
    """F.pad wants the last axis first: (w_lo, w_hi, h_lo, h_hi)."""
    return tuple(v for lo_hi in reversed(pads) for v in lo_hi)


# ----- convolution ------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [
    dict(filters=4, kernel_size=3),
    dict(filters=3, kernel_size=(3, 2), strides=2, padding="same"),
    dict(filters=4, kernel_size=4, padding="same"),
    dict(filters=2, kernel_size=3, dilation_rate=2, padding="same", activation="tanh"),
    dict(filters=4, kernel_size=3, groups=2, strides=(1, 2), use_bias=False),
])
def test_conv2d_matches_torch(cfg):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 9, 8, 4))
    layer = L.Conv2D(dtype="float64", bias_initializer="glorot_uniform" if cfg.get("use_bias", True) else "zeros",
                     **cfg)
    G = rng.normal(size=layer(x).shape)
    y, (gx,), gw = _adv_grads(layer, x, G)

    xt = _leaf(x)
    w = _leaf(layer.kernel.numpy().transpose(3, 2, 0, 1))
    b = _leaf(layer.bias.numpy()) if layer.use_bias else None
    inp = _nhwc(xt)
    if layer.padding == "same":
        inp = F.pad(inp, _torch_pad(_same_pads(x.shape[1:3], layer.kernel_size, layer.strides, layer.dilation_rate)))
    yt = F.conv2d(inp, w, b, stride=layer.strides, dilation=layer.dilation_rate, groups=layer.groups)
    if cfg.get("activation") == "tanh":
        yt = torch.tanh(yt)
    yt = yt.permute(0, 2, 3, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gw["kernel"], w.grad.numpy().transpose(2, 3, 1, 0))
    if layer.use_bias:
        _close(gw["bias"], b.grad)


@pytest.mark.parametrize("cfg", [dict(filters=3, kernel_size=3, strides=2), dict(filters=2, kernel_size=3,
                                                                                padding="causal", dilation_rate=2),
                                 dict(filters=4, kernel_size=2, padding="same", groups=2)])
def test_conv1d_matches_torch(cfg):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 10, 4))
    layer = L.Conv1D(dtype="float64", bias_initializer="glorot_uniform", **cfg)
    G = rng.normal(size=layer(x).shape)
    y, (gx,), gw = _adv_grads(layer, x, G)
    xt, w, b = _leaf(x), _leaf(layer.kernel.numpy().transpose(2, 1, 0)), _leaf(layer.bias.numpy())
    inp = xt.permute(0, 2, 1)
    span = (layer.kernel_size[0] - 1) * layer.dilation_rate[0]
    if layer.padding == "causal":
        inp = F.pad(inp, (span, 0))
    elif layer.padding == "same":
        inp = F.pad(inp, _torch_pad(_same_pads(x.shape[1:2], layer.kernel_size, layer.strides, layer.dilation_rate)))
    yt = F.conv1d(inp, w, b, stride=layer.strides, dilation=layer.dilation_rate, groups=layer.groups).permute(0, 2, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gw["kernel"], w.grad.numpy().transpose(2, 1, 0))
    _close(gw["bias"], b.grad)


# ----- pooling ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind,cfg", [
    ("max", dict(pool_size=2)), ("max", dict(pool_size=3, strides=2, padding="same")),
    ("max", dict(pool_size=(2, 3), strides=1)), ("avg", dict(pool_size=2)), ("avg", dict(pool_size=3, strides=2)),
])
def test_pooling_2d_matches_torch(kind, cfg):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 7, 8, 3))
    layer = (L.MaxPooling2D if kind == "max" else L.AveragePooling2D)(dtype="float64", **cfg)
    G = rng.normal(size=layer(x).shape)
    y, (gx,), _ = _adv_grads(layer, x, G)
    xt = _leaf(x)
    inp = _nhwc(xt)
    if layer.padding == "same":
        inp = F.pad(inp, _torch_pad(_same_pads(x.shape[1:3], layer.pool_size, layer.strides, (1, 1))),
                    value=-np.inf)
    pool = F.max_pool2d if kind == "max" else F.avg_pool2d
    yt = pool(inp, layer.pool_size, layer.strides).permute(0, 2, 3, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)


def test_average_pooling_same_padding_divides_by_the_real_entries_as_torch_without_pad_counting():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 7, 7, 3))              # 7 → 4 positions, one zero each side: symmetric
    layer = L.AveragePooling2D(3, strides=2, padding="same", dtype="float64")
    G = rng.normal(size=layer(x).shape)
    y, (gx,), _ = _adv_grads(layer, x, G)
    xt = _leaf(x)
    yt = F.avg_pool2d(_nhwc(xt), 3, 2, padding=1, count_include_pad=False).permute(0, 2, 3, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_1d_matches_torch(kind):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 9, 3))
    layer = (L.MaxPooling1D if kind == "max" else L.AveragePooling1D)(3, strides=2, dtype="float64")
    G = rng.normal(size=layer(x).shape)
    y, (gx,), _ = _adv_grads(layer, x, G)
    xt = _leaf(x)
    yt = (F.max_pool1d if kind == "max" else F.avg_pool1d)(xt.permute(0, 2, 1), 3, 2).permute(0, 2, 1)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)


@pytest.mark.parametrize("layer_cls,reduce", [
    (L.GlobalAveragePooling2D, lambda t: t.mean(dim=(1, 2))), (L.GlobalMaxPooling2D, lambda t: t.amax(dim=(1, 2))),
    (L.GlobalAveragePooling1D, lambda t: t.mean(dim=1)), (L.GlobalMaxPooling1D, lambda t: t.amax(dim=1))])
def test_global_pooling_matches_torch(layer_cls, reduce):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 4, 5, 3) if "2D" in layer_cls.__name__ else (2, 6, 3))
    layer = layer_cls(dtype="float64")
    G = rng.normal(size=layer(x).shape)
    y, (gx,), _ = _adv_grads(layer, x, G)
    xt = _leaf(x)
    (reduce(xt) * torch.tensor(G)).sum().backward()
    _close(y, reduce(xt))
    _close(gx, xt.grad)


# ----- normalization ----------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 5), (4, 3, 5, 2)])
def test_batch_normalization_matches_torch_in_training_and_inference(shape):
    rng = np.random.default_rng(5)
    x = rng.normal(1.0, 2.0, size=shape)
    C = shape[-1]
    bn = L.BatchNormalization(dtype="float64", gamma_initializer="glorot_uniform", beta_initializer="glorot_uniform")
    G = rng.normal(size=shape)
    y, (gx,), gw = _adv_grads(bn, x, G, training=True)

    tbn = (torch.nn.BatchNorm1d if len(shape) == 2 else torch.nn.BatchNorm2d)(C, eps=1e-3, momentum=0.01)
    with torch.no_grad():
        tbn.weight.copy_(torch.tensor(bn.gamma.numpy()))
        tbn.bias.copy_(torch.tensor(bn.beta.numpy()))
    tbn.train()
    to_torch = (lambda t: t) if len(shape) == 2 else _nhwc
    back = (lambda t: t) if len(shape) == 2 else (lambda t: t.permute(0, 2, 3, 1))
    xt = _leaf(x)
    yt = back(tbn(to_torch(xt)))
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gw["gamma"], tbn.weight.grad)
    _close(gw["beta"], tbn.bias.grad)
    _close(bn.moving_mean.numpy(), tbn.running_mean)
    n = x.size // C
    biased = x.reshape(-1, C).var(axis=0)
    _close(bn.moving_variance.numpy(), 0.99 + 0.01 * biased)                     # Keras: biased variance
    _close(tbn.running_var.numpy(), 0.99 + 0.01 * biased * n / (n - 1))          # PyTorch: unbiased

    # inference: both use the moving statistics (copied over, since the variances differ)
    with torch.no_grad():
        tbn.running_var.copy_(torch.tensor(bn.moving_variance.numpy()))
    tbn.eval()
    y, (gx,), gw = _adv_grads(bn, x, G, training=False)
    xt = _leaf(x)
    tbn.zero_grad()
    yt = back(tbn(to_torch(xt)))
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gw["gamma"], tbn.weight.grad)
    _close(gw["beta"], tbn.bias.grad)


def test_layer_normalization_matches_torch():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 3, 6))
    ln = L.LayerNormalization(dtype="float64", gamma_initializer="glorot_uniform", beta_initializer="glorot_uniform")
    G = rng.normal(size=x.shape)
    y, (gx,), gw = _adv_grads(ln, x, G)
    tln = torch.nn.LayerNorm(6, eps=1e-3)
    with torch.no_grad():
        tln.weight.copy_(torch.tensor(ln.gamma.numpy()))
        tln.bias.copy_(torch.tensor(ln.beta.numpy()))
    xt = _leaf(x)
    yt = tln(xt)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gw["gamma"], tln.weight.grad)
    _close(gw["beta"], tln.bias.grad)


# ----- embedding, dense, core, merge --------------------------------------------------------------
def test_embedding_matches_torch():
    rng = np.random.default_rng(7)
    idx = np.array([[1, 4, 4, 0], [3, 3, 2, 1]])
    emb = L.Embedding(5, 3, dtype="float64")
    G = rng.normal(size=(2, 4, 3))
    with adv.GradientTape() as tape:
        y = emb(idx)
        loss = adv.sum(y * G)
    g = tape.gradient(loss, emb.embeddings).numpy()
    temb = torch.nn.Embedding(5, 3)
    with torch.no_grad():
        temb.weight.copy_(torch.tensor(emb.embeddings.numpy()))
    yt = temb(torch.tensor(idx))
    (yt * torch.tensor(G)).sum().backward()
    _close(y.numpy(), yt)
    _close(g, temb.weight.grad)


def test_dense_flatten_and_activation_match_torch():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3, 2, 2, 3))
    flat, dense, act = L.Flatten(dtype="float64"), L.Dense(4, dtype="float64", bias_initializer="glorot_uniform"), \
        L.Activation("softplus", dtype="float64")
    model = adv.Sequential([flat, dense, act])
    G = rng.normal(size=(3, 4))
    y, (gx,), gw = _adv_grads(model, x, G)
    xt, w, b = _leaf(x), _leaf(dense.kernel.numpy().T), _leaf(dense.bias.numpy())
    yt = F.softplus(F.linear(xt.flatten(1), w, b))        # channels-last data flattened the same way
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    _close(gx, xt.grad)
    _close(gw["kernel"], w.grad.numpy().T)
    _close(gw["bias"], b.grad)


@pytest.mark.parametrize("layer_cls,fn", [
    (L.Add, lambda a, b, c: a + b + c), (L.Multiply, lambda a, b, c: a * b * c),
    (L.Average, lambda a, b, c: (a + b + c) / 3), (L.Maximum, lambda a, b, c: torch.maximum(torch.maximum(a, b), c)),
    (L.Concatenate, lambda a, b, c: torch.cat([a, b, c], dim=-1))])
def test_merge_layers_match_torch(layer_cls, fn):
    rng = np.random.default_rng(9)
    xs = [rng.normal(size=(2, 3)) for _ in range(3)]
    layer = layer_cls(dtype="float64")
    G = rng.normal(size=layer(xs).shape)
    y, gxs, _ = _adv_grads(layer, xs, G)
    ts = [_leaf(x) for x in xs]
    yt = fn(*ts)
    (yt * torch.tensor(G)).sum().backward()
    _close(y, yt)
    for g, t in zip(gxs, ts):
        _close(g, t.grad)


# ----- a whole LeNet-style model, with a weight penalty ------------------------------------------
def test_lenet_loss_and_every_gradient_match_torch():
    rng = np.random.default_rng(10)
    model = adv.Sequential([
        L.Input((12, 12, 1)),
        L.Conv2D(3, 3, activation="relu", padding="same", kernel_regularizer=adv.regularizers.L2(0.01),
                 dtype="float64"),
        L.MaxPooling2D(dtype="float64"),
        L.Conv2D(4, 3, activation="relu", dtype="float64"),
        L.AveragePooling2D(dtype="float64"),
        L.Flatten(dtype="float64"),
        L.Dense(5, activation="tanh", dtype="float64"),
        L.Dense(3, dtype="float64"),
    ])
    x, labels = rng.normal(size=(4, 12, 12, 1)), np.array([0, 2, 1, 2])
    with adv.GradientTape() as tape:
        logits = model(x)
        loss = adv.mean(adv.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)) \
            + adv.sum(adv.stack(model.losses))
    grads = tape.gradient(loss, model.trainable_variables)

    c1, _, c2, _, _, d1, d2 = model.layers
    tw = [_leaf(c1.kernel.numpy().transpose(3, 2, 0, 1)), _leaf(c1.bias.numpy()),
          _leaf(c2.kernel.numpy().transpose(3, 2, 0, 1)), _leaf(c2.bias.numpy()),
          _leaf(d1.kernel.numpy().T), _leaf(d1.bias.numpy()), _leaf(d2.kernel.numpy().T), _leaf(d2.bias.numpy())]
    h = _nhwc(torch.tensor(x))
    h = F.max_pool2d(F.relu(F.conv2d(F.pad(h, (1, 1, 1, 1)), tw[0], tw[1])), 2)
    h = F.avg_pool2d(F.relu(F.conv2d(h, tw[2], tw[3])), 2)
    h = torch.tanh(F.linear(h.permute(0, 2, 3, 1).flatten(1), tw[4], tw[5]))
    lt = F.cross_entropy(F.linear(h, tw[6], tw[7]), torch.tensor(labels)) + 0.01 * (tw[0] ** 2).sum()
    lt.backward()
    _close(loss.numpy(), lt)
    converted = [tw[0].grad.numpy().transpose(2, 3, 1, 0), tw[1].grad, tw[2].grad.numpy().transpose(2, 3, 1, 0),
                 tw[3].grad, tw[4].grad.numpy().T, tw[5].grad, tw[6].grad.numpy().T, tw[7].grad]
    for g, want in zip(grads, converted):
        _close(g.numpy(), want)
