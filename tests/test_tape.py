"""GradientTape with TensorFlow's semantics, checked the way learners use it."""
import numpy as np
import pytest

import autodiff_viz as adv


def test_hand_checkable_values():
    # y = x² + 3x at x = 2: dy/dx = 2·2 + 3 = 7
    x = adv.constant(2.0)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = x * x + 3 * x
    assert tape.gradient(y, x).numpy() == 7.0

    # loss = (w·x − 1)² with w = 3, x = 2: dloss/dw = 2·(6 − 1)·2 = 20
    w = adv.Variable(3.0)
    with adv.GradientTape() as tape:
        loss = (w * 2.0 - 1.0) ** 2
    assert tape.gradient(loss, w).numpy() == 20.0

    # tanh'(0) = 1, sigmoid'(0) = 1/4, relu'(-1) = 0
    z = adv.constant([0.0, 0.0, -1.0])
    with adv.GradientTape() as tape:
        tape.watch(z)
        out = adv.tanh(z[0]) + adv.nn.sigmoid(z[1]) + adv.nn.relu(z[2])
    np.testing.assert_allclose(tape.gradient(out, z).numpy(), [1.0, 0.25, 0.0])


def test_non_scalar_target_gives_gradient_of_the_sum():
    x = adv.constant([1.0, 2.0, 3.0])
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 2                      # Jacobian diag(2x)
        total = adv.sum(y)
    g = tape.gradient(y, x)
    assert g.shape == x.shape
    np.testing.assert_allclose(g.numpy(), tape.gradient(total, x).numpy())
    np.testing.assert_allclose(g.numpy(), tape.jacobian(y, x).numpy().sum(axis=0))


def test_output_gradients_give_the_vector_jacobian_product():
    W = adv.Variable(np.arange(6.0).reshape(2, 3) / 10)
    x = adv.constant([1.0, -2.0])
    v = np.array([0.5, -1.0, 2.0])
    with adv.GradientTape(persistent=True) as tape:
        y = adv.tanh(x @ W)
    J = tape.jacobian(y, W).numpy()              # (3, 2, 3)
    vjp = tape.gradient(y, W, output_gradients=adv.constant(v)).numpy()
    np.testing.assert_allclose(vjp, np.tensordot(v, J, axes=1))


def test_chain_rule_in_parts_composes_with_output_gradients():
    W1 = adv.Variable(np.random.default_rng(0).normal(size=(3, 4)))
    x = adv.constant(np.ones((2, 3)))
    with adv.GradientTape(persistent=True) as tape:
        h = adv.tanh(x @ W1)
        loss = adv.sum(h ** 2)
    dL_dh = tape.gradient(loss, h)
    in_parts = tape.gradient(h, W1, output_gradients=dL_dh)
    np.testing.assert_allclose(in_parts.numpy(), tape.gradient(loss, W1).numpy())


def test_structures_in_structures_out():
    a, b = adv.Variable(1.0, name="a"), adv.Variable(2.0, name="b")
    with adv.GradientTape(persistent=True) as tape:
        y = a * b
    as_dict = tape.gradient(y, {"a": a, "b": b})
    assert set(as_dict) == {"a", "b"} and as_dict["a"].numpy() == 2.0 and as_dict["b"].numpy() == 1.0
    as_tuple = tape.gradient(y, (a, b))
    assert isinstance(as_tuple, tuple) and as_tuple[1].numpy() == 1.0
    nested = tape.gradient(y, [a, {"inner": (b,)}])
    assert nested[1]["inner"][0].numpy() == 1.0


def test_disconnected_source_is_none_or_zero():
    x, unused = adv.Variable([1.0, 2.0]), adv.Variable([[5.0]])
    with adv.GradientTape(persistent=True) as tape:
        y = adv.sum(x * 2)
    assert tape.gradient(y, unused) is None
    zero = tape.gradient(y, unused, unconnected_gradients="zero")
    assert zero.shape == (1, 1) and zero.numpy().sum() == 0
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="zeros")


def test_unwatched_constant_has_no_gradient_and_watch_fixes_it():
    c = adv.constant(3.0)
    with adv.GradientTape() as tape:
        y = c * c
    assert tape.gradient(y, c) is None
    with adv.GradientTape() as tape:
        tape.watch(c)
        y = c * c
    assert tape.gradient(y, c).numpy() == 6.0


def test_second_gradient_call_on_non_persistent_tape_says_why():
    x = adv.Variable(1.0)
    with adv.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.gradient(y, x)


def test_persistent_tape_answers_many_times():
    x = adv.Variable(3.0)
    with adv.GradientTape(persistent=True) as tape:
        y = x * x
        z = y * y
    assert tape.gradient(y, x).numpy() == 6.0
    assert tape.gradient(z, x).numpy() == 4 * 27.0


def test_watch_accessed_variables_false_watches_only_what_you_ask():
    a, b = adv.Variable(2.0), adv.Variable(3.0)
    with adv.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    ga, gb = tape.gradient(y, [a, b])
    assert ga.numpy() == 3.0 and gb is None
    assert tape.watched_variables() == (a,)


def test_non_trainable_variable_is_not_watched():
    v = adv.Variable(2.0, trainable=False)
    with adv.GradientTape() as tape:
        y = v * v
    assert tape.gradient(y, v) is None


def test_stop_recording_cuts_the_gradient():
    x = adv.Variable(2.0)
    with adv.GradientTape() as tape:
        y = x * x
        with tape.stop_recording():
            z = x * 10.0
        out = y + z
    assert tape.gradient(out, x).numpy() == 4.0


def test_stop_gradient_cuts_one_path():
    x = adv.Variable(2.0)
    with adv.GradientTape() as tape:
        y = x * adv.stop_gradient(x)
    assert tape.gradient(y, x).numpy() == 2.0


def test_nested_tapes_give_the_gradient_of_a_gradient():
    x = adv.constant(1.5)
    with adv.GradientTape() as outer:
        outer.watch(x)
        with adv.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3
        dy = inner.gradient(y, x)          # 3x²
    d2y = outer.gradient(dy, x)            # 6x
    assert np.isclose(dy.numpy(), 3 * 1.5 ** 2)
    assert np.isclose(d2y.numpy(), 6 * 1.5)


def test_third_derivative_of_tanh():
    x = adv.constant(0.3)
    with adv.GradientTape() as t3:
        t3.watch(x)
        with adv.GradientTape() as t2:
            t2.watch(x)
            with adv.GradientTape() as t1:
                t1.watch(x)
                y = adv.tanh(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x).numpy()
    t = np.tanh(0.3)
    assert np.isclose(d3, -2 * (1 - t ** 2) ** 2 + 4 * t ** 2 * (1 - t ** 2))


def test_variable_update_after_recording_does_not_change_the_gradient():
    w = adv.Variable(2.0)
    with adv.GradientTape() as tape:
        y = w * w * w
    w.assign(100.0)
    assert tape.gradient(y, w).numpy() == 12.0


def test_integer_source_gets_none_with_a_warning():
    i = adv.constant([1, 2, 3])
    with adv.GradientTape() as tape:
        with pytest.warns(UserWarning, match="floating"):
            tape.watch(i)
        y = adv.sum(i * 2)
    with pytest.warns(UserWarning, match="dtype int64.*None.*float"):
        assert tape.gradient(y, i) is None


def test_integer_cast_on_the_path_gives_none():
    x = adv.Variable([1.7, 2.2])
    with adv.GradientTape() as tape:
        y = adv.sum(adv.cast(adv.cast(x, "int32"), "float64"))
    assert tape.gradient(y, x) is None


def test_float32_stays_float32_through_gradients():
    w = adv.Variable(np.ones(3, dtype=np.float32))
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.tanh(w * 0.5) ** 2)
    assert loss.dtype == np.float32
    assert tape.gradient(loss, w).dtype == np.float32


def test_gradient_through_indexing_slicing_and_reshape():
    x = adv.Variable(np.arange(12.0).reshape(3, 4))
    with adv.GradientTape() as tape:
        y = adv.sum(x[1:, ::2] * 2) + adv.sum(x[0]) + x[2, 3] + adv.sum(x.reshape(4, 3)[0])
    expected = np.zeros((3, 4))
    expected[1:, ::2] += 2
    expected[0] += 1
    expected[2, 3] += 1
    expected.reshape(4, 3)[0] += 1
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected)


def test_fan_out_gradients_add_up():
    x = adv.Variable(3.0)
    with adv.GradientTape() as tape:
        a = x * 2
        b = x * x
        y = a + b + x       # dy/dx = 2 + 2x + 1
    assert tape.gradient(y, x).numpy() == 9.0


def test_a_100000_op_chain_needs_no_recursion():
    x = adv.Variable(1.0)
    with adv.GradientTape() as tape:
        y = x
        for _ in range(100_000):
            y = y * 1.0
    assert tape.gradient(y, x).numpy() == 1.0


def test_jacobian_is_one_pass_that_equals_a_loop_of_gradients():
    rng = np.random.default_rng(1)
    W1, W2 = adv.Variable(rng.normal(size=(5, 4))), adv.Variable(rng.normal(size=(3, 5)))
    x = adv.constant(rng.normal(size=4))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = adv.tanh(W2 @ adv.tanh(W1 @ x))
    J = tape.jacobian(y, x).numpy()
    rows = [tape.gradient(y, x, output_gradients=adv.constant(np.eye(3)[i])).numpy() for i in range(3)]
    np.testing.assert_allclose(J, np.stack(rows))
    n_nodes = len(tape.nodes)
    tape.jacobian(y, [x, W1])
    assert len(tape.nodes) == n_nodes   # the walk itself records nothing on this tape


def test_jacobian_of_log_softmax_wrt_a_matrix_has_four_axes():
    x = adv.constant(np.random.default_rng(2).normal(size=(2, 4)))
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.nn.log_softmax(x)
        y1 = y[:, None, 1:3]                       # (2, 1, 2)
    J = tape.jacobian(y1, x)
    assert J.shape == (2, 1, 2, 2, 4)


def test_batch_jacobian_is_the_diagonal_blocks_of_the_full_jacobian():
    rng = np.random.default_rng(3)
    x = adv.constant(rng.normal(size=(4, 3)))
    W = adv.constant(rng.normal(size=(3, 2)))
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = adv.tanh(x @ W)                        # (4, 2)
    bj = tape.batch_jacobian(y, x).numpy()         # (4, 2, 3)
    full = tape.jacobian(y, x).numpy()             # (4, 2, 4, 3)
    assert bj.shape == (4, 2, 3)
    for i in range(4):
        np.testing.assert_allclose(bj[i], full[i, :, i, :])


def test_errors_name_the_op_the_shapes_and_the_fix():
    a, b = adv.constant(np.ones((3, 4))), adv.constant(np.ones((5, 2)))
    with pytest.raises(ValueError) as err:
        a @ b
    msg = str(err.value)
    assert "matmul" in msg and "(3, 4)" in msg and "(5, 2)" in msg and "transpose" in msg
    with pytest.raises(ValueError) as err:
        adv.constant(np.ones(3)) + adv.constant(np.ones(4))
    msg = str(err.value)
    assert "add" in msg and "(3,)" in msg and "(4,)" in msg and "reshape" in msg
    with pytest.raises(ValueError, match="reshape.*\\(2, 3\\).*\\(4,\\)"):
        adv.reshape(adv.constant(np.ones((2, 3))), (4,))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        adv.sum(adv.constant(np.ones((2, 3))), axis=2)


def test_gradient_rejects_non_tensor_sources():
    x = adv.Variable(1.0)
    with adv.GradientTape() as tape:
        y = x * 2
    with pytest.raises(TypeError, match="adv.constant"):
        tape.gradient(y, 1.0)


# ----- hardening (issue 17) and memory (issue 18) --------------------------------
def test_integer_and_bool_variables_exist_but_are_never_differentiable():
    step = adv.Variable(3)                       # a counter: fine
    mask = adv.Variable([True, False])
    assert step.dtype.kind == "i" and mask.dtype == np.bool_
    with adv.GradientTape() as tape:
        y = step * 2
    assert tape.watched_variables() == ()        # not watched, as TensorFlow
    with pytest.warns(UserWarning, match="int64.*float"):
        assert tape.gradient(y, step) is None     # None with a warning, as TensorFlow


@pytest.mark.parametrize("value", [["a", "b"], np.array([{}, 1], dtype=object),
                                   np.array(["2020-01-01"], dtype="datetime64[D]"), [object()]])
def test_meaningless_values_are_refused_at_construction(value):
    for make in (adv.Variable, adv.constant):
        with pytest.raises(TypeError, match="numeric dtypes only"):
            make(value)


def test_unconnected_gradients_enum_as_tensorflow():
    x, unused = adv.Variable([1.0, 2.0]), adv.Variable([[3.0]])
    assert adv.UnconnectedGradients.ZERO == "zero" and adv.UnconnectedGradients.NONE.value == "none"
    with adv.GradientTape(persistent=True) as tape:
        y = adv.sum(x * x)
    assert tape.gradient(y, unused, unconnected_gradients=adv.UnconnectedGradients.NONE) is None
    z = tape.gradient(y, unused, unconnected_gradients=adv.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(z.numpy(), [[0.0]])
    j = tape.jacobian(y, [unused], unconnected_gradients=adv.UnconnectedGradients.ZERO)[0]
    assert j.shape == (1, 1)
    with pytest.raises(ValueError, match="UnconnectedGradients"):
        tape.gradient(y, x, unconnected_gradients="zeros")


def test_watched_variables_come_in_order_of_creation():
    a, b, c = adv.Variable(1.0, name="a"), adv.Variable(2.0, name="b"), adv.Variable(3.0, name="c")
    with adv.GradientTape() as tape:
        y = c * b + a                            # first used: c, b, a
    assert [v.name for v in tape.watched_variables()] == ["a", "b", "c"]


def test_jacobians_accept_tensorflows_loop_options():
    x = adv.Variable([[1.0, 2.0], [3.0, 4.0]])
    with adv.GradientTape(persistent=True) as tape:
        y = x * x
    j = tape.jacobian(y, x, parallel_iterations=4, experimental_use_pfor=False)
    assert j.shape == (2, 2, 2, 2)
    bj = tape.batch_jacobian(y, x, parallel_iterations=None, experimental_use_pfor=True)
    np.testing.assert_allclose(bj.numpy(), [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])
    with pytest.raises(ValueError, match="parallel_iterations"):
        tape.jacobian(y, x, parallel_iterations=0)


def _step(w, x):
    with adv.GradientTape() as tape:
        h = adv.tanh(x @ w)
        loss = adv.sum(h * h)
    return tape, h, loss


def test_a_non_persistent_tape_lets_go_of_its_saved_values_after_gradient():
    import weakref
    w = adv.Variable(np.full((40, 50), 0.01))             # values of more than 256 entries are let go
    x = adv.constant(np.ones((8, 40)))
    tape, h, loss = _step(w, x)
    held = [weakref.ref(n.out) for n in tape.nodes[:-1]]       # x@w, tanh, h*h (not the loss the user keeps)
    assert len(held) == 3
    assert tape.nodes[0].inputs[1]._value is w._value          # the record holds the weights as the matmul read them
    h = None
    g = tape.gradient(loss, w)
    assert [r() for r in held] == [None] * len(held)
    assert tape.nodes[0].inputs[1]._value is not w._value      # ... and no longer
    ident = id(w._value)
    w.assign_sub(0.1 * g)
    assert id(w._value) == ident                                # so nothing but w held them: updated in place
    assert loss.shape == () and np.isfinite(loss.numpy())      # the output the user holds is intact
    # the light record still explains
    assert tape.explain(loss, w).reason == "connected"
    assert tape.explain(loss, x).reason == "not_watched"
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.trace(loss)


def test_the_loss_of_one_step_does_not_keep_its_graph_alive_in_the_next():
    import weakref
    w = adv.Variable(np.full((40, 50), 0.01))             # values of more than 256 entries are let go
    x = adv.constant(np.ones((8, 40)))
    tape, h, loss = _step(w, x)
    activation = weakref.ref(h._value)
    h = None
    tape.gradient(loss, w)
    tape = None
    assert loss._node is not None and activation() is None     # history kept, values gone


def test_a_walk_lets_go_of_values_no_vjp_reads_before_its_first_step():
    """As PyTorch's saved tensors: a pre-activation (read by neither matmul's, add's nor exp's VJP) is not
    held through the backward pass; the input matmul reads and the output exp reads stay until their step."""
    import weakref

    from autodiff_viz.core import engine
    w = adv.Variable(np.full((40, 50), 0.01))
    b = adv.Variable(np.zeros(50))
    x = adv.constant(np.ones((8, 40)))
    seen = {}

    def probe_vjp(g, y, t):
        seen.update(pre=[r() is None for r in pre], kept=[r() is None for r in kept])
        return g

    probe = engine.Rule("probe", lambda t: t.copy(), [engine.In("t", "1", probe_vjp, None)])
    with adv.GradientTape() as tape:
        z = x @ w
        a = z + b
        h = adv.exp(a)
        pre = [weakref.ref(z._value), weakref.ref(a._value)]
        kept = [weakref.ref(x._value), weakref.ref(h._value)]
        loss = adv.sum(engine.apply(probe, h))
    z = a = h = None
    x_value = x._value
    grads = tape.gradient(loss, [w, b])
    assert seen == {"pre": [True, True], "kept": [False, False]}
    expected = np.exp(x_value @ np.full((40, 50), 0.01))
    np.testing.assert_allclose(grads[1].numpy(), expected.sum(axis=0))
    np.testing.assert_allclose(grads[0].numpy(), x_value.T @ expected)


def test_a_rule_says_which_values_its_vjps_read():
    from autodiff_viz.core import engine, rules
    assert rules.matmul.saves == "inputs" and rules.exp.saves == "output" and rules.add.saves == "nothing"
    assert rules.divide.saves == "all"
    with pytest.raises(ValueError, match="saves must be one of"):
        engine.Rule("bad", np.negative, [], saves="y")


def test_a_persistent_tape_and_an_outer_tape_keep_their_values():
    x = adv.Variable([0.5, -1.0])
    with adv.GradientTape(persistent=True) as outer:
        with adv.GradientTape() as inner:
            y = adv.sum(x * x * x)
        dy = inner.gradient(y, x)                              # 3x²: inner lets go, outer still needs it
        s = adv.sum(dy)
    np.testing.assert_allclose(outer.gradient(s, x).numpy(), [3.0, -6.0])   # 6x
    np.testing.assert_allclose(outer.gradient(y, x).numpy(), [0.75, 3.0])
    assert outer.trace(s).nodes                                # persistent: still drawable


def _mixed_graph(x, w):
    """Paths through ops without gradient: stop_gradient, an integer argmax cast back to float, a comparison."""
    h = adv.tanh(x @ w)
    frozen = adv.stop_gradient(h) * 3.0
    picked = adv.cast(adv.argmax(h, axis=-1), "float64")
    mask = adv.cast(h > 0, "float64")
    return adv.sum(h * frozen + picked[:, None] * h + mask * h * h)


def test_a_gradient_for_every_watched_tensor_skips_the_forward_pass_and_agrees_with_the_exact_walk(monkeypatch):
    """When every watched tensor is a source, the walk uses the ids the tape tracked instead of a forward pass."""
    from autodiff_viz.core import walks
    rng = np.random.default_rng(3)
    x, w = adv.Variable(rng.normal(size=(4, 3))), adv.Variable(rng.normal(size=(3, 5)))
    with adv.GradientTape(persistent=True) as tape:
        loss = _mixed_graph(x, w)
    exact = walks.backward(tape._nodes, {loss._id: np.ones(())}, {x._id, w._id})
    calls = []
    real = walks.reachable
    monkeypatch.setattr(walks, "reachable", lambda *a: calls.append(1) or real(*a))
    gx, gw = tape.gradient(loss, [x, w])
    assert calls == []
    np.testing.assert_array_equal(gx.numpy(), exact[x._id])
    np.testing.assert_array_equal(gw.numpy(), exact[w._id])
    h = np.tanh(x.numpy() @ w.numpy())
    dh = 3.0 * h + h.argmax(-1)[:, None] + 2 * (h > 0) * h     # the stop_gradient branch adds 3h and no more
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ (dh * (1 - h * h)), rtol=1e-12)


def test_a_gradient_for_some_watched_tensors_computes_nothing_for_the_others(monkeypatch):
    """Asked for ∂loss/∂x only, the walk finds the exact paths first and never runs the VJP that gives ∂loss/∂w."""
    from autodiff_viz.core import rules
    rng = np.random.default_rng(4)
    x, w = adv.Variable(rng.normal(size=(4, 3))), adv.Variable(rng.normal(size=(3, 5)))
    with adv.GradientTape() as tape:
        loss = _mixed_graph(x, w)
    seen = []
    vjps = rules.matmul.vjps
    monkeypatch.setattr(rules.matmul, "vjps", (vjps[0], lambda *a: seen.append("W") or vjps[1](*a)))
    gx = tape.gradient(loss, x)
    assert seen == [] and gx.shape == (4, 3)
