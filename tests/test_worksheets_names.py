"""Names a course types: PyTorch keywords, NCHW layers, Keras 3 initializer objects, optimizer slots.

* Makemore part 4 writes ``hprebn.sum(0, keepdim=True)``, ``var(0, keepdim=True,
  unbiased=True)`` and ``logits.max(1).indices``; the hint for each must be code
  that runs and gives PyTorch's numbers (a hint that drops the axis sends the
  learner into a second error).
  Source: https://github.com/karpathy/nn-zero-to-hero/blob/master/lectures/makemore/makemore_part4_backprop.ipynb
* CS231n's layers are NCHW (``x`` of shape ``(N, C, H, W)``), as PyTorch's;
  Keras spells that ``data_format="channels_first"`` on convolution and pooling,
  and ``axis=1`` on normalization.
  Source: https://cs231n.github.io/assignments2024/assignment2/ (``layers.py``, ``ConvolutionalNetworks.ipynb``)
* Keras 3's initializer classes (``RandomNormal(mean, stddev, seed)`` …) and
  ``optimizer.build(var_list)`` / ``optimizer.variables``; CS231n's ``optim.py``
  checks start ``sgd_momentum`` and ``adam`` from a given velocity and moments.
  Source: https://cs231n.github.io/assignments2024/assignment2/ (``optim.py``, ``FullyConnectedNets.ipynb``)
"""
import re

import numpy as np
import pytest

import autodiff_viz as adv

torch = pytest.importorskip("torch")

L = adv.layers
RNG = np.random.default_rng(36)


# ----- PyTorch keywords ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("torch_call", ["x.sum(0, keepdim=True)", "x.var(0, keepdim=True, unbiased=True)",
                                        "x.mean(dim=1, keepdim=True)", "x.std(1, correction=0)"])
def test_a_torch_keyword_hint_is_code_that_runs_and_gives_torchs_numbers(torch_call):
    a = RNG.normal(size=(5, 4))
    t = adv.constant(a)
    with pytest.raises(TypeError) as info:
        eval(torch_call, {"x": t})
    fix = re.search(r"write (t\.\w+\([^)]*\))", str(info.value)).group(1)
    assert "axis=" in fix
    ours = eval(fix, {"t": t})
    theirs = eval(torch_call, {"x": torch.tensor(a)})
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_max_indices_and_values_say_argmax_and_max():
    a = RNG.normal(size=(4, 6))
    t = adv.constant(a)
    with pytest.raises(AttributeError) as info:
        t.max(1).indices
    assert isinstance(info.value, adv.TorchSpellingError) and "x.argmax(axis=1)" in str(info.value)
    np.testing.assert_array_equal(t.argmax(axis=1).numpy(), torch.tensor(a).max(1).indices.numpy())
    with pytest.raises(AttributeError, match=r"x\.max\(axis=1\) itself"):
        t.max(axis=1).values


# ----- NCHW ---------------------------------------------------------------------------------------------------
def test_conv_and_pooling_channels_first_match_torch_on_nchw_inputs_and_gradients():
    x = RNG.normal(size=(2, 3, 7, 7))
    conv = L.Conv2D(4, 3, strides=2, padding="valid", data_format="channels_first", dtype="float64")
    pool = L.MaxPooling2D(2, data_format="channels_first", dtype="float64")
    xa = adv.constant(x)
    with adv.GradientTape() as tape:
        tape.watch(xa)
        y = pool(conv(xa))
        loss = adv.sum(y * y)
    gx = tape.gradient(loss, xa)
    assert conv.get_config()["data_format"] == "channels_first" and y.shape == (2, 4, 1, 1)

    xt = torch.tensor(x, requires_grad=True)
    kernel, bias = conv.kernel.numpy(), conv.bias.numpy()          # Keras' kernel: (kh, kw, in, out)
    yt = torch.nn.functional.conv2d(xt, torch.tensor(kernel.transpose(3, 2, 0, 1)), torch.tensor(bias), stride=2)
    yt = torch.nn.functional.max_pool2d(yt, 2)
    (yt * yt).sum().backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), xt.grad.numpy(), rtol=1e-10)


def test_global_pooling_and_normalization_on_nchw():
    x = RNG.normal(size=(2, 3, 4, 5))
    np.testing.assert_allclose(L.GlobalAveragePooling2D(data_format="channels_first")(x).numpy(), x.mean(axis=(2, 3)),
                               rtol=1e-6)
    kept = L.GlobalMaxPooling2D(data_format="channels_first", keepdims=True)(x)
    assert kept.shape == (2, 3, 1, 1)
    bn = L.BatchNormalization(axis=1, epsilon=1e-5, dtype="float64")    # CS231n's spatial batch norm
    y = bn(x, training=True).numpy()
    mu, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10)


def test_a_layout_keras_does_not_name_is_refused_with_both_names_and_pytorchs():
    """PyTorch says NCHW; Keras says channels_first. The error names the Keras word for the learner's layout."""
    with pytest.raises(ValueError, match=r"SeparableConv2D: data_format must be 'channels_last'.*'channels_first' "
                                         r"\(batch, channels, \.\.\.\).*NCHW layout is 'channels_first'"):
        L.SeparableConv2D(4, 3, data_format="NCHW")


# ----- Keras 3 initializer objects ----------------------------------------------------------------------------
def test_initializer_classes_take_kerass_arguments_and_a_seed_repeats():
    init = adv.initializers.RandomNormal(mean=1.0, stddev=0.01, seed=7)
    a, b = init((2000,)), init((2000,))
    np.testing.assert_array_equal(a, b)                        # a seeded Keras 3 initializer repeats itself
    assert abs(a.mean() - 1.0) < 1e-3 and abs(a.std() - 0.01) < 1e-3
    dense = L.Dense(3, kernel_initializer=adv.initializers.RandomUniform(-0.5, 0.5, seed=1),
                    bias_initializer=adv.initializers.Constant(0.25))
    dense.build((None, 400))
    k = dense.kernel.numpy()
    assert k.min() >= -0.5 and k.max() <= 0.5 and k.std() > 0.2
    np.testing.assert_array_equal(dense.bias.numpy(), 0.25)
    he = adv.initializers.HeNormal(seed=3)((800, 200))
    assert abs(he.std() - np.sqrt(2 / 800)) < 0.003
    assert adv.initializers.RandomNormal(stddev=2.0, seed=1).get_config() == {"mean": 0.0, "stddev": 2.0, "seed": 1}
    with pytest.raises(TypeError, match="seed must be an int"):
        adv.initializers.GlorotUniform(seed="fixed")


# ----- optimizer slots ----------------------------------------------------------------------------------------
def test_sgd_momentum_from_a_preset_velocity_as_cs231n_checks_it():
    """CS231n's ``sgd_momentum``: v = μ·v − lr·dw; w = w + v, from a given v (Keras' SGD is the same rule)."""
    N, D = 4, 5
    w0 = np.linspace(-0.4, 0.6, num=N * D).reshape(N, D)
    dw = np.linspace(-0.6, 0.4, num=N * D).reshape(N, D)
    v0 = np.linspace(0.6, 0.9, num=N * D).reshape(N, D)
    w = adv.Variable(w0, name="w")
    opt = adv.optimizers.SGD(learning_rate=1e-3, momentum=0.9)
    opt.build([w])
    (velocity,) = opt.variables
    velocity.assign(v0)
    opt.apply_gradients([(adv.constant(dw), w)])
    v1 = 0.9 * v0 - 1e-3 * dw
    np.testing.assert_allclose(velocity.numpy(), v1, rtol=1e-12)
    np.testing.assert_allclose(w.numpy(), w0 + v1, rtol=1e-12)


def test_adam_from_preset_moments():
    """CS231n's ``adam`` check starts from given m, v and t; here t is the optimizer's step count."""
    w0, dw = np.array([0.5, -1.0, 2.0]), np.array([0.1, -0.2, 0.3])
    m0, v0 = np.array([0.2, 0.1, -0.1]), np.array([0.3, 0.2, 0.5])
    w = adv.Variable(w0, name="w")
    opt = adv.optimizers.Adam(learning_rate=1e-2, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
    opt.build([w])
    m, v = opt.variables
    assert (m.name, v.name) == ("w_momentum", "w_velocity")      # Keras 3's slot names
    m.assign(m0)
    v.assign(v0)
    opt.apply_gradients([(adv.constant(dw), w)])
    m1, v1 = 0.9 * m0 + 0.1 * dw, 0.999 * v0 + 0.001 * dw ** 2
    alpha = 1e-2 * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(m.numpy(), m1, rtol=1e-12)
    np.testing.assert_allclose(w.numpy(), w0 - alpha * m1 / (np.sqrt(v1) + 1e-8), rtol=1e-10)
    with pytest.raises(TypeError, match="build: var_list holds the variables"):
        opt.build([np.zeros(3)])
