"""A TensorFlow recording lets go of the values nobody holds, as a plain step does, and puts them back exactly.

``autodiff_viz/tf/letgo.py``: the learner's step keeps its memory (a value the tape did not save and the code
dropped is freed), and the trace, the explanation and the comparison read the same numbers and gradients as a
recording that kept every value (``adv.tf.record(keep_values=True)``).
"""
import gc
import os
import weakref

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402

X = np.array([[0.5, -1.0, 2.0], [0.25, 0.75, -0.5]])
W0 = np.array([[0.25, -0.1], [0.5, 0.2], [-0.75, 0.3]])


def _step(x, W):
    """A loss whose ``a`` the tape does not save (``AddV2`` needs neither operand); the code drops it."""
    with tf.GradientTape() as tape:
        z = x @ W
        a = z + 1.0
        h = tf.tanh(a)
        loss = tf.reduce_sum(h * h)
    grad = tape.gradient(loss, W)
    return loss, grad, weakref.ref(a)


def _recorded(keep_values):
    x, W = tf.constant(X), tf.Variable(W0)
    with adv.tf.record(keep_values=keep_values) as rec:
        loss, grad, a = _step(x, W)
    gc.collect()
    return rec, loss, grad, a, W


def _node(tr, label):
    return next(n for n in tr.nodes if n.label == label)


def test_a_value_nobody_holds_is_freed_and_the_trace_shows_it_and_its_gradient_exactly():
    rec, loss, grad, a, W = _recorded(keep_values=False)
    assert a() is None                       # freed during the step, as without the recording
    kept, kloss, kgrad, ka, kW = _recorded(keep_values=True)
    assert ka() is not None                  # keep_values=True holds it
    assert np.array_equal(loss.numpy(), kloss.numpy()) and np.array_equal(grad.numpy(), kgrad.numpy())
    tr, ktr = rec.trace(loss, [W]), kept.trace(kloss, [kW])
    for label in ("z", "a", "h"):
        assert np.array_equal(_node(tr, label).value.data, _node(ktr, label).value.data), label
        assert np.array_equal(_node(tr, label).grad.data, _node(ktr, label).grad.data), label
    # the value put back is x @ W + 1, and its gradient the tape's: ḡ_a = 2h(1 − h²)
    a_again = X @ W0 + 1.0
    np.testing.assert_allclose(_node(tr, "a").value.data, a_again, rtol=1e-12)
    h = np.tanh(a_again)
    np.testing.assert_allclose(_node(tr, "a").grad.data, 2 * h * (1 - h ** 2), rtol=1e-12)
    w_node = next(n for n in tr.nodes if n.kind == "variable")
    assert np.array_equal(w_node.grad.data, grad.numpy())
    ex = rec.explain(loss, W)
    assert ex.reason == "connected"


def _lstm_step(keep_values):
    """One training step of a Keras LSTM classifier (the model of benchmarks/real_models.py), recorded."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    model = keras.Sequential([keras.Input((12,)), keras.layers.Embedding(100, 8), keras.layers.LSTM(8),
                              keras.layers.Dense(2, activation="softmax")])
    x, y = tf.constant(rng.integers(0, 100, size=(4, 12)).astype("int32")), tf.constant(rng.integers(0, 2, 4))
    loss_fn, opt = keras.losses.SparseCategoricalCrossentropy(), keras.optimizers.Adam(1e-3)
    with adv.tf.record(keep_values=keep_values) as rec:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    gc.collect()
    return rec, loss, model


def test_a_keras_lstm_step_traces_the_same_whether_its_values_were_kept_or_computed_again():
    rec, loss, model = _lstm_step(keep_values=False)
    trace = rec.trace(loss, model)
    assert rec._settled.was                  # the gates' values were let go of and computed again
    kept, kloss, kmodel = _lstm_step(keep_values=True)
    ktrace = kept.trace(kloss, kmodel)
    # the two models are built alike, but Keras numbers the second one's layers (lstm_1): compare node by node
    assert len(trace.nodes) == len(ktrace.nodes) > 100
    for n, k in zip(trace.nodes, ktrace.nodes):
        assert n.op == k.op and np.array_equal(n.value.data, k.value.data), n.op
        assert (n.grad is None) == (k.grad is None) and (n.grad is None or np.array_equal(n.grad.data, k.grad.data))
    for e, k in zip(trace.edges, ktrace.edges):
        assert (e.contribution is None) == (k.contribution is None)
        assert e.contribution is None or np.array_equal(e.contribution.data, k.contribution.data)
    assert len(trace.nodes) == len(ktrace.nodes)


def test_a_stateful_random_value_is_kept_not_drawn_again():
    w = tf.Variable(np.ones(5, dtype="float32"))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            noise = tf.random.uniform((5,))
            loss = tf.reduce_sum(noise * w)
        tape.gradient(loss, w)
        del noise
    gc.collect()
    tr = rec.trace(loss, [w])
    drawn = next(n for n in tr.nodes if n.op == "RandomUniform")
    assert np.sum(drawn.value.data) == pytest.approx(float(loss), rel=1e-6)


def test_an_op_that_runs_again_to_other_numbers_is_reported_not_drawn(monkeypatch):
    from autodiff_viz.tf import letgo
    rec, loss, grad, a, W = _recorded(keep_values=False)
    run = letgo._run
    monkeypatch.setattr(letgo, "_run", lambda op: [t + tf.cast(1e-3, t.dtype) if t.dtype.is_floating else t
                                                   for t in run(op)])
    with pytest.raises(RuntimeError, match=r"keep_values=True"):
        rec.trace(loss, [W])


def test_asking_inside_the_block_settles_what_ran_so_far_and_recording_goes_on():
    x, W = tf.constant(X), tf.Variable(W0)
    with adv.tf.record() as rec:
        first, _, a1 = _step(x, W)
        gc.collect()
        inside = rec.trace(first, [W])
        second, _, a2 = _step(x, W)
    gc.collect()
    assert a2() is None
    after = rec.trace(second, [W])
    assert np.array_equal(_node(inside, "a").value.data, _node(after, "a").value.data)
    assert np.array_equal(first.numpy(), second.numpy())
