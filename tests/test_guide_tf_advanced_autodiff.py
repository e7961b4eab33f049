"""TensorFlow's guide "Advanced automatic differentiation", cell by cell, with only ``tf.`` → ``adv.`` renamed
(``tf.keras.layers`` → ``adv.layers``): https://www.tensorflow.org/guide/advanced_autodiff

Each test is one section of the guide. It prints what the guide's cell prints and asserts the numbers the
guide states in its comments (``# 2*x => 4``). Where the guide draws random data (``tf.random.normal``) and a
fresh layer, the same inputs and weights go through real TensorFlow in the same test, and the shapes the
guide shows and the values TensorFlow computes are asserted.

Cells that cannot run here, and why:

* "Custom gradients in SavedModel" (``tf.Module``, ``tf.function(input_signature=...)``,
  ``tf.saved_model.save``/``load``): a TensorFlow graph file format; here everything runs eagerly and a
  model is saved with ``model.save`` (``.keras``), which stores no Python gradient function.
* The plotting cells (``plt.plot``, ``imshow_zero_center``, ``plot_as_patches``' ``imshow``) draw with
  matplotlib; their tensor arithmetic (``adv.transpose``, ``adv.pad``, ``adv.reshape``, ``adv.reduce_max``)
  runs in the Batch Jacobian test, the drawing itself is left out.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import autodiff_viz as adv  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

GUIDE = "https://www.tensorflow.org/guide/advanced_autodiff"


def keras_twin(layer, activation):
    """Real Keras' Dense with this layer's weights (the guide's random layer, run in TensorFlow too)."""
    twin = keras.layers.Dense(layer.units, activation=activation)
    twin.build((None, layer.kernel.shape[0]))
    twin.set_weights([layer.kernel.numpy(), layer.bias.numpy()])
    return twin


def test_advanced_autodiff__controlling_gradient_recording__stop_recording(capsys):
    """#stop_recording: ``y_sq`` is computed under ``t.stop_recording()``, so ``dz/dy`` is None."""
    x = adv.Variable(2.0)
    y = adv.Variable(3.0)

    with adv.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq

    grad = t.gradient(z, {'x': x, 'y': y})

    print('dz/dx:', grad['x'])  # 2*x => 4
    print('dz/dy:', grad['y'])
    out = capsys.readouterr().out.splitlines()
    assert float(grad['x']) == 4.0 and grad['y'] is None
    assert out[0].startswith('dz/dx: Tensor(4.') and out[1] == 'dz/dy: None'


def test_advanced_autodiff__controlling_gradient_recording__reset(capsys):
    """#resetstart_recording_from_scratch: ``t.reset()`` throws away ``y_sq``'s record: ``dz/dy`` is None."""
    x = adv.Variable(2.0)
    y = adv.Variable(3.0)
    reset = True

    with adv.GradientTape() as t:
        y_sq = y * y
        if reset:
            # Throw out all the tape recorded so far.
            t.reset()
        z = x * x + y_sq

    grad = t.gradient(z, {'x': x, 'y': y})

    print('dz/dx:', grad['x'])  # 2*x => 4
    print('dz/dy:', grad['y'])
    assert float(grad['x']) == 4.0 and grad['y'] is None
    assert capsys.readouterr().out.splitlines()[1] == 'dz/dy: None'


def test_advanced_autodiff__stop_gradient_flow_with_precision():
    """#stop_gradient_flow_with_precision: ``adv.stop_gradient(y_sq)`` cuts only that path."""
    x = adv.Variable(2.0)
    y = adv.Variable(3.0)

    with adv.GradientTape() as t:
        y_sq = y**2
        z = x**2 + adv.stop_gradient(y_sq)

    grad = t.gradient(z, {'x': x, 'y': y})

    print('dz/dx:', grad['x'])  # 2*x => 4
    print('dz/dy:', grad['y'])
    assert float(grad['x']) == 4.0 and grad['y'] is None
    assert float(z) == 13.0                                   # the value still counts y²


def test_advanced_autodiff__custom_gradients(capsys):
    """#custom_gradients: an identity whose backward clips the gradient's norm to 0.5; ``d(v²)/dv = 4`` at
    v = 2, and the chain rule multiplies the clipped 0.5 by 2v: 2."""
    # Establish an identity operation, but clip during the gradient pass.
    @adv.custom_gradient
    def clip_gradients(y):
        def backward(dy):
            return adv.clip_by_norm(dy, 0.5)
        return y, backward

    v = adv.Variable(2.0)
    with adv.GradientTape() as t:
        output = clip_gradients(v * v)
    print(t.gradient(output, v))  # calls "backward", which clips 4 to 2
    assert capsys.readouterr().out.startswith("Tensor(2.")
    assert float(output) == 4.0


def test_advanced_autodiff__multiple_tapes():
    """#multiple_tapes: each tape watches its own constant; ``cos(0) = 1`` and ``σ'(0) = 0.25``."""
    x0 = adv.constant(0.0)
    x1 = adv.constant(0.0)

    with adv.GradientTape() as tape0, adv.GradientTape() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)

        y0 = adv.math.sin(x0)
        y1 = adv.nn.sigmoid(x1)

        y = y0 + y1

        ys = adv.reduce_sum(y)

    assert tape0.gradient(ys, x0).numpy() == 1.0   # cos(x) => 1.0
    assert tape1.gradient(ys, x1).numpy() == 0.25  # sigmoid(x1)*(1-sigmoid(x1)) => 0.25


def test_advanced_autodiff__multiple_tapes__higher_order_gradients(capsys):
    """#higher-order_gradients: ``y = x³`` at 1: ``3x² = 3`` and ``6x = 6``."""
    x = adv.Variable(1.0)  # Create a Tensorflow variable initialized to 1.0

    with adv.GradientTape() as t2:
        with adv.GradientTape() as t1:
            y = x * x * x

        # Compute the gradient inside the outer `t2` context manager
        # which means the gradient computation is differentiable as well.
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)

    print('dy_dx:', dy_dx.numpy())  # 3 * x**2 => 3.0
    print('d2y_dx2:', d2y_dx2.numpy())  # 6 * x => 6.0
    assert capsys.readouterr().out == "dy_dx: 3.0\nd2y_dx2: 6.0\n"


def test_advanced_autodiff__higher_order_gradients__input_gradient_regularization():
    """#example_input_gradient_regularization: the gradient of ``‖∂out/∂x‖`` with respect to the layer's
    weights, through the inner tape's backward pass: the guide shows the shapes ``[(5, 10), (10,)]``; the
    values are TensorFlow's on the same ``x`` and weights."""
    x = adv.random.normal([7, 5])

    layer = adv.layers.Dense(10, activation=adv.nn.relu)

    with adv.GradientTape() as t2:
        # The inner tape only takes the gradient with respect to the input,
        # not the variables.
        with adv.GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(x)
            y = layer(x)
            out = adv.reduce_sum(layer(x)**2)
        # 1. Calculate the input gradient.
        g1 = t1.gradient(out, x)
        # 2. Calculate the magnitude of the input gradient.
        g1_mag = adv.norm(g1)

    # 3. Calculate the gradient of the magnitude with respect to the model.
    dg1_mag = t2.gradient(g1_mag, layer.trainable_variables)

    assert [var.shape for var in dg1_mag] == [(5, 10), (10,)]
    tx, twin = tf.constant(x.numpy()), keras_twin(layer, tf.nn.relu)
    with tf.GradientTape() as tt2:
        with tf.GradientTape(watch_accessed_variables=False) as tt1:
            tt1.watch(tx)
            tout = tf.reduce_sum(twin(tx)**2)
        tg1_mag = tf.norm(tt1.gradient(tout, tx))
    np.testing.assert_allclose(float(g1_mag), float(tg1_mag), rtol=1e-5)
    for got, want in zip(dg1_mag, tt2.gradient(tg1_mag, twin.trainable_variables)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_advanced_autodiff__jacobians__scalar_source(capsys):
    """#scalar_source: the Jacobian of 201 sigmoids with respect to one shift has the target's shape, and is
    ``σ(x)(1 − σ(x))``, which peaks at 0.25 where x = 0."""
    x = adv.linspace(-10.0, 10.0, 200+1)
    delta = adv.Variable(0.0)

    with adv.GradientTape() as tape:
        y = adv.nn.sigmoid(x+delta)

    dy_dx = tape.jacobian(y, delta)

    print(y.shape)
    print(dy_dx.shape)
    assert capsys.readouterr().out == "(201,)\n(201,)\n"
    s = 1 / (1 + np.exp(-np.linspace(-10.0, 10.0, 201)))
    np.testing.assert_allclose(dy_dx.numpy(), s * (1 - s), rtol=1e-5, atol=1e-7)
    assert dy_dx.numpy()[100] == pytest.approx(0.25)


def test_advanced_autodiff__jacobians__tensor_source(capsys):
    """#tensor_source: ``y`` (7, 10), kernel (5, 10), Jacobian (7, 10, 5, 10); summed over the target's axes
    it is ``tape.gradient`` (``delta < 1e-3``); the Jacobian is TensorFlow's on the same inputs."""
    x = adv.random.normal([7, 5])
    layer = adv.layers.Dense(10, activation=adv.nn.relu)

    with adv.GradientTape(persistent=True) as tape:
        y = layer(x)

    assert y.shape == (7, 10)
    assert layer.kernel.shape == (5, 10)
    j = tape.jacobian(y, layer.kernel)
    assert j.shape == (7, 10, 5, 10)

    g = tape.gradient(y, layer.kernel)
    print('g.shape:', g.shape)

    j_sum = adv.reduce_sum(j, axis=[0, 1])
    delta = adv.reduce_max(abs(g - j_sum)).numpy()
    assert delta < 1e-3
    print('delta:', delta)
    assert capsys.readouterr().out.startswith("g.shape: (5, 10)\ndelta: 0.0")

    tx, twin = tf.constant(x.numpy()), keras_twin(layer, tf.nn.relu)
    with tf.GradientTape() as ttape:
        ty = twin(tx)
    np.testing.assert_allclose(j.numpy(), ttape.jacobian(ty, twin.kernel).numpy(), rtol=1e-5, atol=1e-6)


def test_advanced_autodiff__jacobians__example_hessian(capsys):
    """#example_hessian: the Hessian of a mean square through two relu layers with respect to the first
    kernel (5, 8) has shape (5, 8, 5, 8); flattened it is a symmetric 40 × 40 matrix, and one damped
    Newton step solves ``(H + εI)·u = g``. Values checked against TensorFlow on the same inputs."""
    x = adv.random.normal([7, 5])
    layer1 = adv.layers.Dense(8, activation=adv.nn.relu)
    layer2 = adv.layers.Dense(6, activation=adv.nn.relu)
    x0 = x.numpy()

    with adv.GradientTape() as t2:
        with adv.GradientTape() as t1:
            x = layer1(x)
            x = layer2(x)
            loss = adv.reduce_mean(x**2)

        g = t1.gradient(loss, layer1.kernel)

    h = t2.jacobian(g, layer1.kernel)

    print(f'layer.kernel.shape: {layer1.kernel.shape}')
    print(f'h.shape: {h.shape}')
    assert capsys.readouterr().out == "layer.kernel.shape: (5, 8)\nh.shape: (5, 8, 5, 8)\n"

    n_params = adv.reduce_prod(layer1.kernel.shape)

    g_vec = adv.reshape(g, [n_params, 1])
    h_mat = adv.reshape(h, [n_params, n_params])
    np.testing.assert_allclose(h_mat.numpy(), h_mat.numpy().T, atol=1e-6)      # The Hessian should be symmetric

    tx, tw1, tw2 = tf.constant(x0), keras_twin(layer1, tf.nn.relu), keras_twin(layer2, tf.nn.relu)
    with tf.GradientTape() as tt2:
        with tf.GradientTape() as tt1:
            tloss = tf.reduce_mean(tw2(tw1(tx))**2)
        tg = tt1.gradient(tloss, tw1.kernel)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), tt2.jacobian(tg, tw1.kernel).numpy(), rtol=1e-4, atol=1e-5)

    eps = 1e-3
    eye_eps = adv.eye(h_mat.shape[0])*eps

    # X(k+1) = X(k) - (∇²f(X(k)))^-1 @ ∇f(X(k))
    # h_mat = ∇²f(X(k))
    # g_vec = ∇f(X(k))
    update = adv.linalg.solve(h_mat + eye_eps, g_vec)

    # Reshape the update and apply it to the variable.
    before = layer1.kernel.numpy().copy()
    _ = layer1.kernel.assign_sub(adv.reshape(update, layer1.kernel.shape))
    want = np.linalg.solve(h_mat.numpy() + 1e-3 * np.eye(40), g_vec.numpy())
    np.testing.assert_allclose(layer1.kernel.numpy(), before - want.reshape(5, 8), rtol=1e-3, atol=1e-4)


def plot_as_patches_image(j):
    """The tensor arithmetic of the guide's ``plot_as_patches`` (its ``imshow`` left out): each (batch, batch)
    slice becomes one patch of a single image, the patches padded apart by ``-lim``."""
    # Reorder axes so the diagonals will each form a contiguous patch.
    j = adv.transpose(j, [1, 0, 3, 2])
    # Pad in between each patch.
    lim = adv.reduce_max(abs(j))
    j = adv.pad(j, [[0, 0], [1, 1], [0, 0], [1, 1]],
                constant_values=-lim)
    # Reshape to form a single image.
    s = j.shape
    return adv.reshape(j, [s[0]*s[1], s[2]*s[3]])


def test_advanced_autodiff__jacobians__batch_jacobian(capsys):
    """#batch_jacobian: the full Jacobian (7, 6, 7, 5) has diagonal (batch, batch) slices; summing the
    duplicate batch axis, selecting the diagonal with ``einsum('bxby->bxy')`` and ``batch_jacobian`` all give
    (7, 6, 5), equal within 1e-3 (TensorFlow's values on the same inputs). With a BatchNormalization in
    training mode the slices are no longer diagonal, and ``batch_jacobian`` still returns (7, 6, 5)."""
    x = adv.random.normal([7, 5])

    layer1 = adv.layers.Dense(8, activation=adv.nn.elu)
    layer2 = adv.layers.Dense(6, activation=adv.nn.elu)

    with adv.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer1(x)
        y = layer2(y)

    assert y.shape == (7, 6)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    off_diagonal = ~np.eye(7, dtype=bool)
    assert np.all(j.numpy()[:, 0, :, 0][off_diagonal] == 0)          # A (batch, batch) slice is diagonal
    assert plot_as_patches_image(j).shape == (6 * 9, 5 * 9)           # 6 × 5 patches of 9 × 9 (7 + padding)

    j_sum = adv.reduce_sum(j, axis=2)
    print(j_sum.shape)
    j_select = adv.einsum('bxby->bxy', j)
    print(j_select.shape)

    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)

    error = adv.reduce_max(abs(jb - j_sum))
    assert error < 1e-3
    print(error.numpy())
    assert capsys.readouterr().out.splitlines()[:2] == ["(7, 6, 5)", "(7, 6, 5)"]
    np.testing.assert_allclose(j_select.numpy(), jb.numpy(), rtol=1e-6)

    tx = tf.constant(x.numpy())
    tw1, tw2 = keras_twin(layer1, tf.nn.elu), keras_twin(layer2, tf.nn.elu)
    with tf.GradientTape() as ttape:
        ttape.watch(tx)
        ty = tw2(tw1(tx))
    np.testing.assert_allclose(jb.numpy(), ttape.batch_jacobian(ty, tx).numpy(), rtol=1e-4, atol=1e-6)

    # Caution: BatchNormalization mixes the examples of the batch.
    x = adv.random.normal([7, 5])

    layer1 = adv.layers.Dense(8, activation=adv.nn.elu)
    bn = adv.layers.BatchNormalization()
    layer2 = adv.layers.Dense(6, activation=adv.nn.elu)

    with adv.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer1(x)
        y = bn(y, training=True)
        y = layer2(y)

    j = tape.jacobian(y, x)
    print(f'j.shape: {j.shape}')
    assert np.abs(j.numpy()[:, 0, :, 0][off_diagonal]).max() > 1e-3      # These slices are not diagonal

    jb = tape.batch_jacobian(y, x)
    print(f'jb.shape: {jb.shape}')
    assert capsys.readouterr().out == "j.shape: (7, 6, 7, 5)\njb.shape: (7, 6, 5)\n"

    tx, tw1, tw2 = tf.constant(x.numpy()), keras_twin(layer1, tf.nn.elu), keras_twin(layer2, tf.nn.elu)
    tbn = keras.layers.BatchNormalization()
    with tf.GradientTape(persistent=True) as ttape:
        ttape.watch(tx)
        ty = tw2(tbn(tw1(tx), training=True))
    np.testing.assert_allclose(j.numpy(), ttape.jacobian(ty, tx).numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(jb.numpy(), ttape.batch_jacobian(ty, tx).numpy(), rtol=1e-3, atol=1e-4)
