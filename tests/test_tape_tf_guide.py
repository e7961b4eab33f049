"""Tape semantics from TensorFlow's autodiff guides: a source that is the target, and which call used up a tape."""
import numpy as np
import pytest
import torch

import autodiff_viz as adv


def test_a_source_that_is_the_target_has_gradient_one_as_tensorflow():
    """The guide's control flow: ``result = v0`` in the branch taken; TF gives [1.0, None]
    (sources_that_are_targets)."""
    x = adv.constant(1.0)
    v0, v1 = adv.Variable(2.0), adv.Variable(2.0)
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1 ** 2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert float(dv0) == 1.0 and dv1 is None
    assert [float(g) for g in tape.gradient(result, [v0, v1], unconnected_gradients="zero")] == [1.0, 0.0]
    assert tape.gradient(result, x) is None
    assert float(tape.jacobian(v0, v0)) == 1.0
    c = adv.constant([1.0, 2.0])                  # never watched: still its own gradient
    np.testing.assert_array_equal(tape.gradient(c, c).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(tape.jacobian(c, c).numpy(), np.eye(2))


def test_a_target_that_is_a_source_adds_its_one_to_the_other_paths():
    w = adv.Variable([1.0, 2.0])
    with adv.GradientTape(persistent=True) as tape:
        s = adv.sum(w * w)
    np.testing.assert_allclose(tape.gradient([w, s], w).numpy(), [3.0, 5.0])       # 1 + 2w
    wt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (wt.sum() + (wt * wt).sum()).backward()
    np.testing.assert_allclose(tape.gradient([w, s], w).numpy(), wt.grad.numpy())
    b = adv.Variable(np.ones((3, 2)))
    with adv.GradientTape() as tape:
        pass
    np.testing.assert_array_equal(tape.batch_jacobian(b, b).numpy(), np.broadcast_to(np.eye(2), (3, 2, 2)))


def test_a_used_up_tape_names_the_call_that_used_it():
    x = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        y = x * x
    tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match=r"gradient\(\) was called after jacobian\(\) on a non-persistent"):
        tape.gradient(y, x)
    with adv.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=r"gradient\(\) was called a second time.*persistent=True"):
        tape.gradient(y, x)


def test_forward_mode_through_an_op_without_jvp_names_the_reverse_mode_functions():
    from autodiff_viz.core import engine
    no_jvp = engine.Rule("no_jvp", lambda t: t * 2.0, [engine.In("t", "2", lambda g, y, t: g * 2.0, None)])

    def f(x):
        return engine.apply(no_jvp, x)

    x = adv.constant([1.0, 2.0])
    np.testing.assert_array_equal(adv.jacobian(f)(x).numpy(), 2 * np.eye(2))
    with pytest.raises(NotImplementedError, match=r"'no_jvp' has no JVP rule.*tape\.gradient, adv\.vjp, or "
                                                  r"adv\.jacobian\(f, mode='reverse'\)"):
        adv.jacobian(f, mode="forward")(x)
