"""TensorFlow's guide "Introduction to gradients and automatic differentiation", section by section, with only
``tf.`` → ``adv.`` renamed (``tf.keras.layers`` → ``adv.layers``): https://www.tensorflow.org/guide/autodiff

Each test is one section (its anchor in the docstring). It runs the guide's cells as written, prints what the
cell prints and asserts the numbers the guide states (``6.0``, ``[4.0, 108.0]``, ``3.75``, ``7.0`` …). Where a
cell draws random values (``tf.random.normal``, a fresh ``Dense``), the same values go through real TensorFlow
in the same test and its gradients are asserted.

Two spellings differ from a plain rename, each for a reason the package states:

* ``dtype=tf.float32`` is written ``dtype='float32'``: dtypes are numpy's here (a string or ``np.float32``);
  ``adv.float32`` raises an AttributeError that says so (tests/test_tf_names.py).
* A Python float makes a float64 tensor here (numpy's default), float32 in TensorFlow: the guide's numbers are
  the same, its printed reprs say ``float64``.

Where the package deliberately differs from TensorFlow, the test says so and asserts the package's answer:
"Did calculations outside of TensorFlow" calls ``np.mean`` on a tensor, which dispatches to the package's own
rule (DESIGN.md, "Numpy never lies"), so the gradient is *not* lost; the escape the guide warns about, a value
turned into a numpy array with ``.numpy()``, gives ``None`` here as in TensorFlow.

Cells not run, and why:

* The plot of the sigmoid and its derivative (``plt.plot``): matplotlib drawing. The data it plots
  (``y``, ``dy_dx``) is computed and checked against ``σ(x)(1 − σ(x))`` and TensorFlow's values.
* "Notes on performance" has no code.
* "No gradient registered" (``tf.image.adjust_contrast`` raises ``LookupError``) is ported in
  tests/test_official_guides_surface.py (``test_tf_introduction_to_gradients__no_gradient_registered``).
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

GUIDE = "https://www.tensorflow.org/guide/autodiff"


@pytest.fixture(autouse=True)
def fresh_names():
    adv.layers.clear_session()
    keras.backend.clear_session()


def test_autodiff_intro__gradient_tapes__x_squared(capsys):
    """#gradient_tapes: ``y = x²`` at x = 3; ``dy = 2x·dx`` gives 6.0."""
    x = adv.Variable(3.0)

    with adv.GradientTape() as tape:
        y = x**2

    # dy = 2x * dx
    dy_dx = tape.gradient(y, x)
    print(dy_dx.numpy())
    assert capsys.readouterr().out.strip() == "6.0"


def test_autodiff_intro__gradient_tapes__w_b_x_list_and_dict_sources(capsys):
    """#gradient_tapes: ``loss = mean((x @ w + b)²)`` on a persistent tape; sources as a list give a list, as a
    dict a dict, each gradient of its source's shape (3, 2) and (2,). With ŷ = x @ w + b (one row, 2 entries):
    ∂loss/∂b = ŷ (the mean over 2 entries halves 2ŷ) and ∂loss/∂w = xᵀ ŷ; TensorFlow gives the same from the
    same ``w``."""
    w = adv.Variable(adv.random.normal((3, 2)), name='w')
    b = adv.Variable(adv.zeros(2, dtype='float32'), name='b')
    x = [[1., 2., 3.]]

    with adv.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = adv.reduce_mean(y**2)

    [dl_dw, dl_db] = tape.gradient(loss, [w, b])

    print(w.shape)
    print(dl_dw.shape)

    my_vars = {
        'w': w,
        'b': b
    }

    grad = tape.gradient(loss, my_vars)
    print(grad['b'])

    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["(3, 2)", "(3, 2)"]
    assert set(grad) == {'w', 'b'} and grad['b'].shape == (2,)
    np.testing.assert_allclose(grad['b'].numpy(), dl_db.numpy())
    np.testing.assert_allclose(dl_db.numpy(), y.numpy()[0], rtol=1e-6)
    np.testing.assert_allclose(dl_dw.numpy(), np.array(x).T @ y.numpy(), rtol=1e-6)

    tw = tf.Variable(w.numpy(), name='w')
    tb = tf.Variable(tf.zeros(2, dtype=tf.float32), name='b')
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_mean((x @ tw + tb)**2)
    tdw, tdb = ttape.gradient(tloss, [tw, tb])
    np.testing.assert_allclose(dl_dw.numpy(), tdw.numpy(), rtol=1e-5)
    np.testing.assert_allclose(dl_db.numpy(), tdb.numpy(), rtol=1e-5)


def test_autodiff_intro__gradients_with_respect_to_a_model(capsys):
    """#gradients_with_respect_to_a_model: ``tape.gradient(loss, layer.trainable_variables)``; the loop prints
    each variable's name and its gradient's shape. Keras 3 names a weight ``kernel`` / ``bias`` (the guide,
    written for Keras 2, shows ``dense/kernel:0``); real Keras 3 prints the same lines here, and its gradients
    from the same weights equal these."""
    layer = adv.layers.Dense(2, activation='relu')
    x = adv.constant([[1., 2., 3.]])

    with adv.GradientTape() as tape:
        # Forward pass
        y = layer(x)
        loss = adv.reduce_mean(y**2)

    # Calculate gradients with respect to every trainable variable
    grad = tape.gradient(loss, layer.trainable_variables)

    for var, g in zip(layer.trainable_variables, grad):
        print(f'{var.name}, shape: {g.shape}')

    assert capsys.readouterr().out.splitlines() == ["kernel, shape: (3, 2)", "bias, shape: (2,)"]

    twin = keras.layers.Dense(2, activation='relu')
    twin.build((None, 3))
    twin.set_weights([layer.kernel.numpy(), layer.bias.numpy()])
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_mean(twin(tf.constant([[1., 2., 3.]]))**2)
    tgrad = ttape.gradient(tloss, twin.trainable_variables)
    for var, g in zip(twin.trainable_variables, tgrad):
        print(f'{var.name}, shape: {g.shape}')
    assert capsys.readouterr().out.splitlines() == ["kernel, shape: (3, 2)", "bias, shape: (2,)"]
    for mine, theirs in zip(grad, tgrad):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)


def test_autodiff_intro__controlling_what_the_tape_watches__defaults(capsys):
    """#controlling_what_the_tape_watches: only the trainable Variable ``x0`` gets a gradient (2·3 = 6); a
    non-trainable Variable, a Variable plus 1.0 (a Tensor) and a constant give None; the tape watched ``x0``
    only (TensorFlow prints ``['x0:0']``; a Keras 3-style name has no ``:0``)."""
    # A trainable variable
    x0 = adv.Variable(3.0, name='x0')
    # Not trainable
    x1 = adv.Variable(3.0, name='x1', trainable=False)
    # Not a Variable: A variable + tensor returns a tensor.
    x2 = adv.Variable(2.0, name='x2') + 1.0
    # Not a variable
    x3 = adv.constant(3.0, name='x3')

    with adv.GradientTape() as tape:
        y = (x0**2) + (x1**2) + (x2**2)

    grad = tape.gradient(y, [x0, x1, x2, x3])

    for g in grad:
        print(g)

    print([var.name for var in tape.watched_variables()])
    out = capsys.readouterr().out.splitlines()
    assert float(grad[0]) == 6.0 and out[0].startswith("Tensor(6.")
    assert out[1:4] == ["None", "None", "None"]
    assert out[4] == "['x0']"


def test_autodiff_intro__controlling_what_the_tape_watches__watch_a_constant(capsys):
    """#controlling_what_the_tape_watches: ``tape.watch(x)`` on a constant; ``dy = 2x·dx`` gives 6.0."""
    x = adv.constant(3.0)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = x**2

    # dy = 2x * dx
    dy_dx = tape.gradient(y, x)
    print(dy_dx.numpy())
    assert capsys.readouterr().out.strip() == "6.0"


def test_autodiff_intro__controlling_what_the_tape_watches__watch_accessed_variables_false(capsys):
    """#controlling_what_the_tape_watches: with ``watch_accessed_variables=False`` only the watched ``x1``
    connects; d softplus(x1)/dx1 = σ(x1) = σ(10) ≈ 0.9999546 (the guide's printed value, float32)."""
    x0 = adv.Variable(0.0)
    x1 = adv.Variable(10.0)

    with adv.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = adv.math.sin(x0)
        y1 = adv.nn.softplus(x1)
        y = y0 + y1
        ys = adv.reduce_sum(y)

    # dys/dx1 = exp(x1) / (1 + exp(x1)) = sigmoid(x1)
    grad = tape.gradient(ys, {'x0': x0, 'x1': x1})

    print('dy/dx0:', grad['x0'])
    print('dy/dx1:', grad['x1'].numpy())
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "dy/dx0: None"
    assert out[1].startswith("dy/dx1: 0.99995")
    assert float(grad['x1']) == pytest.approx(0.9999546, abs=1e-7)
    assert float(grad['x1']) == pytest.approx(1 / (1 + np.exp(-10.0)), rel=1e-12)


def test_autodiff_intro__intermediate_results(capsys):
    """#intermediate_results: the gradient with respect to the intermediate ``y``: dz/dy = 2y = 18 (y = 9);
    on a persistent tape, dz/dx = 4x³ = [4, 108] and dy/dx = 2x = [2, 6] at x = [1, 3]; ``del tape``."""
    x = adv.constant(3.0)

    with adv.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y

    # Use the tape to compute the gradient of z with respect to the
    # intermediate value y.
    # dz_dy = 2 * y and y = x ** 2 = 9
    print(tape.gradient(z, y).numpy())

    x = adv.constant([1, 3.0])
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y

    print(tape.gradient(z, x).numpy())  # [4.0, 108.0] (4 * x**3 at x = [1.0, 3.0])
    print(tape.gradient(y, x).numpy())  # [2.0, 6.0] (2 * x at x = [1.0, 3.0])
    del tape   # Drop the reference to the tape

    assert capsys.readouterr().out.splitlines() == ["18.0", "[  4. 108.]", "[2. 6.]"]


def test_autodiff_intro__intermediate_results__a_non_persistent_tape_answers_once():
    """#intermediate_results: "resources … are released as soon as ``GradientTape.gradient`` is called": the
    second call on a non-persistent tape raises a RuntimeError that says to use ``persistent=True``."""
    x = adv.constant([1, 3.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    tape.gradient(z, x)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.gradient(y, x)


def test_autodiff_intro__gradients_of_non_scalar_targets(capsys):
    """#gradients_of_non-scalar_targets: d(x²)/dx = 4 and d(1/x)/dx = −1/x² = −0.25 at x = 2; several targets
    give the gradient of their sum, 4 − 0.25 = 3.75; a non-scalar target ``x·[3, 4]`` gives 3 + 4 = 7."""
    x = adv.Variable(2.0)
    with adv.GradientTape(persistent=True) as tape:
        y0 = x**2
        y1 = 1 / x

    print(tape.gradient(y0, x).numpy())
    print(tape.gradient(y1, x).numpy())

    x = adv.Variable(2.0)
    with adv.GradientTape() as tape:
        y0 = x**2
        y1 = 1 / x

    print(tape.gradient({'y0': y0, 'y1': y1}, x).numpy())

    x = adv.Variable(2.)

    with adv.GradientTape() as tape:
        y = x * [3., 4.]

    print(tape.gradient(y, x).numpy())
    assert capsys.readouterr().out.splitlines() == ["4.0", "-0.25", "3.75", "7.0"]


def test_autodiff_intro__gradients_of_non_scalar_targets__elementwise_sigmoid():
    """#gradients_of_non-scalar_targets: for an element-wise op the gradient of the sum is each element's own
    derivative: on 201 points of [−10, 10], dy/dx = σ(x)(1 − σ(x)), peaking at 0.25 at x = 0. These are the
    two curves the guide plots (the plotting itself is not run); TensorFlow's values agree."""
    x = adv.linspace(-10.0, 10.0, 200+1)

    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.nn.sigmoid(x)

    dy_dx = tape.gradient(y, x)

    assert x.shape == y.shape == dy_dx.shape == (201,)
    np.testing.assert_allclose(dy_dx.numpy(), y.numpy() * (1 - y.numpy()), rtol=1e-10)   # y(1 − y) rounds too
    assert dy_dx.numpy()[100] == pytest.approx(0.25) and dy_dx.numpy().argmax() == 100

    tx = tf.linspace(-10.0, 10.0, 200+1)
    with tf.GradientTape() as ttape:
        ttape.watch(tx)
        ty = tf.nn.sigmoid(tx)
    np.testing.assert_allclose(dy_dx.numpy(), ttape.gradient(ty, tx).numpy(), atol=1e-7)   # float32 near y = 1
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6)


def test_autodiff_intro__control_flow(capsys):
    """#control_flow: ``if x > 0.0`` takes the first branch, so ``result = v0``: d result/dv0 = 1, dv1 None; the
    condition itself is not differentiable, so d result/dx is None."""
    x = adv.constant(1.0)

    v0 = adv.Variable(2.0)
    v1 = adv.Variable(2.0)

    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1**2

    dv0, dv1 = tape.gradient(result, [v0, v1])

    print(dv0)
    print(dv1)

    dx = tape.gradient(result, x)

    print(dx)
    out = capsys.readouterr().out.splitlines()
    assert float(dv0) == 1.0 and out[0].startswith("Tensor(1.")
    assert out[1:] == ["None", "None"]


def test_autodiff_intro__cases_where_gradient_returns_none__not_connected(capsys):
    """#cases_where_gradient_returns_none: ``z = y·y`` does not involve ``x``: None."""
    x = adv.Variable(2.)
    y = adv.Variable(3.)

    with adv.GradientTape() as tape:
        z = y * y
    print(tape.gradient(z, x))
    assert capsys.readouterr().out == "None\n"
    assert tape.explain(z, x).reason == "not_used"


def test_autodiff_intro__cases_where_gradient_returns_none__1_replaced_a_variable_with_a_tensor(capsys):
    """#1_replaced_a_variable_with_a_tensor: ``x = x + 1`` makes ``x`` a Tensor, which the next tape does not
    watch: the first epoch prints the Variable's gradient 1, the second ``Tensor : None`` (TensorFlow:
    ``ResourceVariable`` / ``EagerTensor``)."""
    x = adv.Variable(2.0)

    for epoch in range(2):
        with adv.GradientTape() as tape:
            y = x+1

        print(type(x).__name__, ":", tape.gradient(y, x))
        x = x + 1   # This should be `x.assign_add(1)`

    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Variable : Tensor(1.")
    assert out[1] == "Tensor : None"


def test_autodiff_intro__cases_where_gradient_returns_none__2_did_calculations_outside_of_tensorflow():
    """#2_did_calculations_outside_of_tensorflow: the guide's cell (``np.mean`` inside the tape) gives None in
    TensorFlow. Here ``np.mean`` on a tensor dispatches to the package's ``mean`` rule (DESIGN.md, "Numpy never
    lies"), so the path stays on the tape and the gradient is d/dx of mean_j mean_i x²_ij = 2x/4 = x/2, the
    gradient TensorFlow gives when both means are ``tf.reduce_mean``. The escape the guide means, a value that
    leaves as a numpy array (``x2.numpy()``), gives None here too, and ``explain`` names it."""
    x = adv.Variable([[1.0, 2.0],
                      [3.0, 4.0]], dtype='float32')

    with adv.GradientTape(persistent=True) as tape:
        x2 = x**2

        # This step is calculated with NumPy
        y = np.mean(x2, axis=0)

        # Like most ops, reduce_mean will cast the NumPy array to a constant tensor
        # using `tf.convert_to_tensor`.
        y = adv.reduce_mean(y, axis=0)

    print(tape.gradient(y, x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[0.5, 1.0], [1.5, 2.0]])

    tx = tf.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float32)
    with tf.GradientTape() as ttape:
        ty = tf.reduce_mean(tf.reduce_mean(tx**2, axis=0), axis=0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), ttape.gradient(ty, tx).numpy())

    with adv.GradientTape() as tape:
        x2 = x**2
        y = np.mean(x2.numpy(), axis=0)       # the value leaves the tape as a numpy array
        y = adv.reduce_mean(y, axis=0)
    assert tape.gradient(y, x) is None
    assert tape.explain(y, x).reason == "left_the_tape"


def test_autodiff_intro__cases_where_gradient_returns_none__3_took_gradients_through_an_integer(capsys):
    """#3_took_gradients_through_an_integer_or_string: ``tf.constant(10)`` is an integer tensor: watching it
    warns (TensorFlow warns "The dtype of the watched tensor must be floating") and its gradient is None."""
    x = adv.constant(10)

    with pytest.warns(UserWarning, match="floating"):
        with adv.GradientTape() as g:
            g.watch(x)
            y = x * x

    with pytest.warns(UserWarning, match="its gradient is None"):
        print(g.gradient(y, x))
    assert capsys.readouterr().out == "None\n"
    assert g.explain(y, x).reason == "integer_dtype"


def test_autodiff_intro__cases_where_gradient_returns_none__4_took_gradients_through_a_stateful_object(capsys):
    """#4_took_gradients_through_a_stateful_object: ``x1.assign_add(x0)`` changes ``x1``'s state; the tape
    records from ``x1``'s new value, so dy/dx0 is None (the guide: "This doesn't work"), while dy/dx1 = 2·x1 = 6
    as in TensorFlow."""
    x0 = adv.Variable(3.0)
    x1 = adv.Variable(0.0)

    with adv.GradientTape(persistent=True) as tape:
        # Update x1 = x1 + x0.
        x1.assign_add(x0)
        # The tape starts recording from x1.
        y = x1**2   # y = (x1 + x0)**2

    # This doesn't work.
    print(tape.gradient(y, x0))   #dy/dx0 = 2*(x1 + x0)
    assert capsys.readouterr().out == "None\n"
    assert float(tape.gradient(y, x1)) == 6.0

    tx0, tx1 = tf.Variable(3.0), tf.Variable(0.0)
    with tf.GradientTape(persistent=True) as ttape:
        tx1.assign_add(tx0)
        ty = tx1**2
    assert ttape.gradient(ty, tx0) is None and float(ttape.gradient(ty, tx1)) == 6.0


def test_autodiff_intro__zeros_instead_of_none(capsys):
    """#zeros_instead_of_none: ``unconnected_gradients=adv.UnconnectedGradients.ZERO`` gives zeros of the
    source's shape, [0. 0.], where the default gives None; the string ``"zero"`` is the same."""
    x = adv.Variable([2., 2.])
    y = adv.Variable(3.)

    with adv.GradientTape(persistent=True) as tape:
        z = y**2
    print(tape.gradient(z, x, unconnected_gradients=adv.UnconnectedGradients.ZERO))

    assert capsys.readouterr().out.startswith("Tensor([0., 0.], shape=(2,)")
    np.testing.assert_array_equal(tape.gradient(z, x, unconnected_gradients="zero").numpy(), [0.0, 0.0])
    assert tape.gradient(z, x) is None
