"""Optimizers against their Keras 3 formulas, step by step; all-or-nothing updates."""
import warnings

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import optimizers

STEPS = 5


def gradient_sequence(shape=(3,), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape) for _ in range(STEPS)]


def run(opt, grads, w0):
    w = adv.Variable(w0.copy(), name="w")
    values = []
    for g in grads:
        opt.apply_gradients([(adv.constant(g), w)])
        values.append(w.numpy())
    return values


W0 = np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize("momentum, nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd(momentum, nesterov):
    grads, lr = gradient_sequence(), 0.1
    got = run(optimizers.SGD(lr, momentum=momentum, nesterov=nesterov), grads, W0)
    w, v = W0.copy(), np.zeros(3)
    for g, w_got in zip(grads, got):
        v = momentum * v - lr * g
        if momentum == 0:
            w = w - lr * g
        elif nesterov:
            w = w + momentum * v - lr * g
        else:
            w = w + v
        np.testing.assert_allclose(w_got, w, rtol=1e-13)


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_rmsprop(centered, momentum):
    grads, lr, rho, eps = gradient_sequence(), 0.01, 0.9, 1e-7
    got = run(optimizers.RMSprop(lr, rho=rho, momentum=momentum, epsilon=eps, centered=centered), grads, W0)
    w, v, a, m = W0.copy(), np.zeros(3), np.zeros(3), np.zeros(3)
    for g, w_got in zip(grads, got):
        v = rho * v + (1 - rho) * g ** 2
        a = rho * a + (1 - rho) * g
        denom = v - a ** 2 if centered else v
        step = lr * g / np.sqrt(denom + eps)
        m = momentum * m + step
        w = w - (m if momentum else step)
        np.testing.assert_allclose(w_got, w, rtol=1e-13)


def test_rmsprop_epsilon_inside_the_root_differs_from_the_hand_written_form():
    g, lr, rho, eps = np.array([1e-4]), 0.01, 0.9, 1e-7
    keras_w = run(optimizers.RMSprop(lr, rho=rho, epsilon=eps), [g], np.zeros(1))[0]
    v = (1 - rho) * g ** 2
    hand_written = -lr * g / (np.sqrt(v) + eps)
    np.testing.assert_allclose(keras_w, -lr * g / np.sqrt(v + eps), rtol=1e-13)
    assert abs(keras_w[0]) < 0.5 * abs(hand_written[0])      # eps dominates v = 1e-9: a much smaller step


def test_adam_with_bias_correction():
    grads, lr, b1, b2, eps = gradient_sequence(), 0.01, 0.9, 0.999, 1e-7
    got = run(optimizers.Adam(lr, beta_1=b1, beta_2=b2, epsilon=eps), grads, W0)
    w, m, v = W0.copy(), np.zeros(3), np.zeros(3)
    for t, (g, w_got) in enumerate(zip(grads, got), start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - alpha * m / (np.sqrt(v) + eps)
        np.testing.assert_allclose(w_got, w, rtol=1e-13)
    np.testing.assert_allclose(got[0] - W0, -lr * np.sign(grads[0]), rtol=1e-4)   # bias-corrected first step


def test_learning_rate_schedules():
    seen = []

    def schedule(step):
        seen.append(step)
        return 0.1 / (1 + step)
    got = run(optimizers.SGD(schedule), [np.ones(3)] * 3, np.zeros(3))
    assert seen == [0, 1, 2]
    np.testing.assert_allclose(got[-1], -(0.1 + 0.05 + 0.1 / 3) * np.ones(3))
    assert optimizers.SGD(lambda: 0.25).learning_rate == 0.25
    decay = optimizers.ExponentialDecay(1.0, decay_steps=2, decay_rate=0.5, staircase=True)
    assert [decay(s) for s in range(4)] == [1.0, 1.0, 0.5, 0.5]
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.Adam(learning_rate=-1.0)


def test_none_gradient_is_skipped_with_a_warning_naming_the_variable():
    a, b = adv.Variable([1.0], name="dense/kernel"), adv.Variable([1.0], name="dense/bias")
    with pytest.warns(UserWarning, match="dense/kernel"):
        optimizers.SGD(0.5).apply_gradients([(None, a), (np.array([1.0]), b)])
    assert a.numpy()[0] == 1.0 and b.numpy()[0] == 0.5


def test_bad_pair_three_leaves_pairs_one_and_two_and_the_state_untouched():
    opt = optimizers.Adam(0.1)
    vs = [adv.Variable(np.ones(2), name=f"v{i}") for i in range(3)]
    good = [np.full(2, 0.5), np.full(2, -0.5)]
    with pytest.raises(ValueError, match=r"pair 3.*\(3,\).*v2.*\(2,\)"):
        opt.apply_gradients(zip(good + [np.ones(3)], vs))
    for v in vs:
        np.testing.assert_array_equal(v.numpy(), np.ones(2))
    assert opt.iterations == 0
    opt.apply_gradients(zip(good + [np.zeros(2)], vs))
    fresh = [adv.Variable(np.ones(2)) for _ in range(3)]
    optimizers.Adam(0.1).apply_gradients(zip(good + [np.zeros(2)], fresh))
    for v, f in zip(vs, fresh):
        np.testing.assert_array_equal(v.numpy(), f.numpy())


def test_swapped_pairs_are_a_clear_error():
    v = adv.Variable([1.0], name="w")
    with pytest.raises(TypeError, match="swap"):
        optimizers.SGD().apply_gradients([(v, adv.constant([1.0]))])
    assert v.numpy()[0] == 1.0


def test_minimize_takes_one_step_on_a_loss_function():
    w = adv.Variable([3.0, -2.0], name="w")
    loss = optimizers.SGD(0.25).minimize(lambda: adv.sum(w ** 2), [w])
    assert loss.item() == 13.0
    np.testing.assert_allclose(w.numpy(), [3.0 - 0.25 * 6, -2.0 + 0.25 * 4])
    opt = optimizers.Adam(0.1)
    for _ in range(200):
        opt.minimize(lambda: adv.sum((w - 1.0) ** 2), lambda: [w])
    np.testing.assert_allclose(w.numpy(), [1.0, 1.0], atol=1e-2)


def test_clipping():
    w = adv.Variable(np.zeros(2))
    optimizers.SGD(1.0, clipnorm=1.0).apply_gradients([(np.array([3.0, 4.0]), w)])
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8])
    w.assign(np.zeros(2))
    optimizers.SGD(1.0, clipvalue=0.5).apply_gradients([(np.array([3.0, -0.1]), w)])
    np.testing.assert_allclose(w.numpy(), [-0.5, 0.1])


def test_optimizers_by_name():
    assert isinstance(optimizers.get("adam"), optimizers.Adam)
    assert optimizers.get("sgd").learning_rate == 0.01
    with pytest.raises(ValueError, match="rmsprop"):
        optimizers.get("adamx")


def test_float32_variables_stay_float32():
    w = adv.Variable(np.ones(2, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizers.Adam().apply_gradients([(np.ones(2), w)])
    assert w.dtype == np.float32


def test_adam_amsgrad_keeps_the_largest_second_moment():
    # gradients that shrink: v falls, v̂ = max(v̂, v) does not
    grads = [np.array([10.0, -10.0, 5.0]), np.array([0.01, 0.01, 0.01]), np.array([0.02, -0.01, 0.0])]
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    got = run(optimizers.Adam(lr, amsgrad=True), grads, W0)
    plain = run(optimizers.Adam(lr), grads, W0)
    w, m, v, v_hat = W0.copy(), np.zeros(3), np.zeros(3), np.zeros(3)
    for t, (g, w_got) in enumerate(zip(grads, got), start=1):
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        v_hat = np.maximum(v_hat, v)
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - alpha * m / (np.sqrt(v_hat) + eps)
        np.testing.assert_allclose(w_got, w, rtol=1e-13)
    assert np.all(np.abs(got[-1] - W0) < np.abs(plain[-1] - W0))           # smaller steps than plain Adam


@pytest.mark.parametrize("make", [lambda: optimizers.SGD(0.1, weight_decay=0.5),
                                  lambda: optimizers.SGD(0.1, momentum=0.9, weight_decay=0.5),
                                  lambda: optimizers.RMSprop(0.1, weight_decay=0.5),
                                  lambda: optimizers.Adam(0.1, weight_decay=0.5)])
def test_weight_decay_is_decoupled_as_keras_3(make):
    # Keras 3: w ← w − lr·wd·w, then the optimizer's own update from the gradient
    grads = gradient_sequence(seed=3)
    with_decay, without = make(), make()
    without.weight_decay = None
    w_decay = adv.Variable(W0.copy())
    w_ref = adv.Variable(W0.copy())
    for g in grads:
        with_decay.apply_gradients([(g, w_decay)])
        w_ref.assign(w_ref.numpy() - w_ref.numpy() * 0.5 * 0.1)      # decay first ...
        without.apply_gradients([(g, w_ref)])                        # ... then the plain step
        np.testing.assert_allclose(w_decay.numpy(), w_ref.numpy(), rtol=1e-13)


def test_weight_decay_sgd_by_hand_and_exclusions():
    w, b = adv.Variable([2.0], name="w"), adv.Variable([2.0], name="bias")
    opt = optimizers.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    opt.apply_gradients([(np.array([1.0]), w), (np.array([1.0]), b)])
    np.testing.assert_allclose(w.numpy(), [2.0 - 0.1 * 0.5 * 2.0 - 0.1])      # 1.8
    np.testing.assert_allclose(b.numpy(), [2.0 - 0.1])
    untouched = adv.Variable([3.0])
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        opt.apply_gradients([(np.array([1.0]), w), (None, untouched)])
    assert untouched.numpy()[0] == 3.0                                        # no gradient: no decay either
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.Adam(weight_decay=-1.0)


@pytest.mark.parametrize("make", [lambda: optimizers.SGD(0.1), lambda: optimizers.SGD(0.1, momentum=0.9),
                                  lambda: optimizers.Adam(0.1)])
def test_updates_in_place_never_change_a_value_someone_else_holds(make):
    # the optimizer updates a variable's array in place only when nothing else holds it
    w = adv.Variable(np.ones((300, 300)))                     # larger than one block of the blocked update
    with adv.GradientTape(persistent=True) as tape:
        y = adv.sum(w * w)
    held = np.asarray(w)                                      # a user's reference to the current value
    opt = make()
    opt.apply_gradients([(np.full((300, 300), 2.0), w)])
    np.testing.assert_array_equal(held, 1.0)
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), 2.0)   # the record kept what it read
    held = None
    before = w.numpy()
    opt.apply_gradients([(np.full((300, 300), 2.0), w)])     # now updated in place ...
    reference = make()
    ref = adv.Variable(np.ones((300, 300)))
    for _ in range(2):
        reference.apply_gradients([(np.full((300, 300), 2.0), ref)])
    np.testing.assert_allclose(w.numpy(), ref.numpy(), rtol=1e-15)  # ... with the same numbers
    assert not np.array_equal(before, w.numpy())


@pytest.mark.parametrize("entry", ["apply_gradients", "apply"])
def test_no_gradient_for_any_variable_is_an_error_and_some_missing_warn_at_the_users_line(entry):
    """Keras 3 raises when every gradient is None (a loss computed outside the tape trains nothing) and warns
    for the ones missing; the warning points at the caller's line through either entry point."""
    a, b = adv.Variable([1.0], name="a"), adv.Variable([1.0], name="b")
    opt = optimizers.Adam(0.1)

    def step(grads):
        if entry == "apply":
            return opt.apply(grads, [a, b])
        return opt.apply_gradients(zip(grads, [a, b]))

    with pytest.raises(ValueError, match=r"no gradients provided for any variable \(\['b', 'a'\]|"
                                         r"no gradients provided for any variable \(\['a', 'b'\]"):
        step([None, None])
    assert opt.iterations == 0 and a.numpy()[0] == 1.0 and b.numpy()[0] == 1.0
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['b'\]") as record:
        step([np.array([1.0]), None])
    assert record[0].filename == __file__
    assert opt.iterations == 1 and a.numpy()[0] < 1.0 and b.numpy()[0] == 1.0
