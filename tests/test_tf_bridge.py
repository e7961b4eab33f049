"""The TensorFlow bridge: recordings of eager TF / Keras 3, traces with TensorFlow's own gradients, compare."""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import code_lines  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.tf as advtf  # noqa: E402

HERE = __file__


def where(tag) -> str:
    return code_lines.line_of(HERE, tag)


def line_of(tag) -> int:
    return int(where(tag).rsplit(":", 1)[1])


def _data(n=6, d=3, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    return tf.constant(rng.normal(size=(n, d)).astype(dtype)), tf.constant(rng.normal(size=(n, 1)).astype(dtype))


def _mlp(dtype="float64"):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((3,), dtype=dtype),
                             keras.layers.Dense(4, activation="tanh", dtype=dtype, name="l1"),
                             keras.layers.Dense(1, dtype=dtype, name="l2")], name="mlp")


def test_the_package_attaches_itself_as_adv_tf():
    assert adv.tf is advtf and advtf.record is adv.tf.record


def test_record_keeps_ops_lines_assigned_names_layer_scopes_and_tapes():
    model = _mlp()
    x, y = _data()
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            pred = model(x)                                           # <- forward
            loss = tf.reduce_mean((pred - y) ** 2)                    # <- loss
        grads = tape.gradient(loss, model.trainable_variables)        # <- gradient
    ops = [op for op in rec.ops if op.kind == "op"]
    assert [op.name for op in ops] == ["MatMul", "BiasAdd", "Tanh", "MatMul", "AddV2", "Sub", "Pow", "Mean"]
    assert [op.scope for op in ops[:5]] == ["mlp/l1"] * 3 + ["mlp/l2"] * 2
    assert ops[0].location == (HERE, line_of("forward")) and ops[-1].location == (HERE, line_of("loss"))
    assert rec.name_of(pred) == "pred" and rec.name_of(loss) == "loss"
    assert rec.name_of(model.layers[0].kernel) == "mlp/l1/kernel"
    assert all(op.tapes == (0,) for op in ops)
    reads = [op for op in rec.ops if op.kind == "read"]
    assert len(reads) == 4 and all(op.tapes == (0,) for op in reads)
    (call,) = [op for op in rec.ops if op.kind == "gradient"]
    assert call.location == (HERE, line_of("gradient"))
    assert [a is b for a, b in zip(call.extra["sources"], model.trainable_variables)] == [True] * 4
    assert call.extra["result"] is grads and call.inputs[0] is loss


def test_trace_gradients_are_the_tapes_own_bit_for_bit():
    model = _mlp()
    x, y = _data()
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            h = model.layers[0](x)
            pred = model.layers[1](h)
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    for g, v in zip(grads, model.trainable_variables):
        node = next(n for n in tr.nodes if n.tensor_id == v.handle._id)
        assert node.kind == "variable" and node.name == v.path
        assert np.array_equal(node.grad.data, g.numpy()), v.path
    tanh = next(e for e in tr.edges if tr.node(e.dst).op == "Tanh")
    assert tanh.factor == "∂y/∂x = " + adv.rules.TABLE["tanh"].spec(0).factor
    assert tanh.formula == "ḡ_x = ḡ_y · (1 − y²)"
    # the contribution is TensorFlow's own VJP of Tanh: ḡ_x = ḡ_y · (1 − y²)
    y_tanh = tr.node(tanh.dst).value.data
    np.testing.assert_allclose(tanh.contribution.data, tanh.upstream.data * (1 - y_tanh ** 2), rtol=1e-12)
    assert tanh.jacobian is None or tanh.jacobian.shape == (24, 24)
    assert tr.node(tr.target).title == "loss" and tr.steps[0] == tr.target
    assert tr.kinds["l1"] == "Dense" and tr.kinds["mlp"] == "Sequential"
    again = adv.Trace.from_json(tr.to_json())
    assert [n.id for n in again.nodes] == [n.id for n in tr.nodes]
    assert "<svg" in tr.to_svg("both")


def test_a_watched_tensor_and_an_intermediate_get_the_tapes_gradient():
    x = tf.constant([[0.5, -1.0, 2.0]], dtype=tf.float64)
    W = tf.Variable([[0.25], [0.5], [-0.75]], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            z = x @ W
            h = tf.tanh(z)
            loss = tf.reduce_sum(h * h)
        gx, gz = tape.gradient(loss, [x, z])
    tr = rec.trace(loss, [x, W])
    assert np.array_equal(next(n for n in tr.nodes if n.tensor_id == x._id).grad.data, gx.numpy())
    assert np.array_equal(next(n for n in tr.nodes if n.label == "z").grad.data, gz.numpy())
    assert next(n for n in tr.nodes if n.tensor_id == x._id).kind == "watched"
    mm = [e for e in tr.edges if tr.node(e.dst).op == "MatMul"]
    assert {e.input_name for e in mm} == {"x", "W"} and all(e.jacobian is not None for e in mm)
    # the local Jacobian of x @ W with respect to W is x laid out as a (1, 3) row
    jw = next(e for e in mm if e.input_name == "W").jacobian
    np.testing.assert_array_equal(jw, x.numpy())


def test_recording_changes_no_value_and_no_gradient():
    model = _mlp("float32")
    x, y = _data(dtype="float32")

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.binary_crossentropy(tf.sigmoid(y), model(x), from_logits=True))
        return loss, tape.gradient(loss, model.trainable_variables)

    plain_loss, plain = step()
    with adv.tf.record():
        rec_loss, recorded = step()
    again_loss, again = step()
    assert np.array_equal(plain_loss.numpy(), rec_loss.numpy()) and np.array_equal(rec_loss, again_loss)
    for a, b, c in zip(plain, recorded, again):
        assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(b.numpy(), c.numpy())


def test_a_non_persistent_tape_still_refuses_a_second_gradient_inside_a_recording():
    w = tf.Variable(2.0)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = w * w
        assert tape.gradient(loss, w).numpy() == 4.0
        with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
            tape.gradient(loss, w)
    assert rec.trace(loss, w).nodes[0].grad.data == 4.0      # the recording kept the tape's record


def test_recording_ends_cleanly_and_leaves_tensorflow_as_it_was():
    from tensorflow.python.eager import backprop
    from tensorflow.python.framework import op_callbacks
    before = (backprop.GradientTape.gradient, tf.constant, op_callbacks.should_invoke_op_callbacks())
    with adv.tf.record():
        assert op_callbacks.should_invoke_op_callbacks()
    assert (backprop.GradientTape.gradient, tf.constant, op_callbacks.should_invoke_op_callbacks()) == before


def test_escapes_rewraps_variable_creation_and_assignment_are_recorded():
    with adv.tf.record() as rec:
        w = tf.Variable([1.0, 2.0])                                   # <- create
        with tf.GradientTape() as tape:
            y = w * 3.0
            host = y.numpy()                                          # <- escape
            back = tf.constant(np.mean(host))                         # <- rewrap
            w.assign_add([0.5, 0.5])                                  # <- assign
    kinds = {op.kind: op for op in rec.ops}
    assert kinds["create"].location == (HERE, line_of("create")) and rec.name_of(w) == "w"
    escapes = [op for op in rec.ops if op.kind == "escape"]
    assert [op.extra["how"] for op in escapes] == ["numpy()"]      # np.mean of an ndarray is numpy alone
    assert escapes[0].location == (HERE, line_of("escape")) and escapes[0].inputs[0] is y
    assert kinds["rewrap"].location == (HERE, line_of("rewrap")) and kinds["rewrap"].outputs[0] is back
    assert kinds["assign"].name == "AssignAddVariableOp" and kinds["assign"].location == (HERE, line_of("assign"))


def test_a_tf_function_called_under_the_recording_is_refused_before_it_runs():
    calls = []

    @tf.function
    def step(v):
        calls.append(1)
        return v * 2.0

    with adv.tf.record():
        with pytest.raises(RuntimeError, match=r"tf.function 'step' .*Nothing ran.*run_functions_eagerly"):
            step(tf.constant(1.0))
    assert calls == []
    assert step(tf.constant(1.0)).numpy() == 2.0          # outside a recording it is TensorFlow's as ever


def test_a_tf_function_run_eagerly_is_recorded_op_by_op():
    @tf.function
    def f(v):
        return tf.tanh(v) * 2.0

    v = tf.Variable([0.5, -0.5])
    tf.config.run_functions_eagerly(True)
    try:
        with adv.tf.record() as rec:
            with tf.GradientTape() as tape:
                out = tf.reduce_sum(f(v))
            g = tape.gradient(out, v)
    finally:
        tf.config.run_functions_eagerly(False)
    assert [op.name for op in rec.ops if op.kind == "op"] == ["Tanh", "Mul", "Sum"]
    assert np.array_equal(next(n for n in rec.trace(out, v).nodes if n.kind == "variable").grad.data, g.numpy())


def test_keras_fit_under_the_recording_runs_its_step_eagerly_and_is_graph_again_after():
    """``model.fit`` compiles its step into a tf.function, whose ops would reach the recording as one opaque op.
    Under the recording the step runs eagerly (as with ``run_eagerly=True``): the forward pass, the loss and the
    gradient call are recorded with their layers; after it, ``fit`` builds the model's graph step again and the
    model's own setting is unchanged."""
    model = _mlp()
    model.compile(optimizer="sgd", loss="mse")
    x, y = _data()
    with adv.tf.record() as rec:
        model.fit(x, y, epochs=1, batch_size=6, verbose=0)
    recorded = model.train_function
    names = [op.name for op in rec.ops if op.kind == "op"]
    assert "MatMul" in names and "Tanh" in names, names
    assert {op.scope for op in rec.ops if op.name == "MatMul"} >= {"mlp/l1", "mlp/l2"}
    gradient = next(op for op in rec.ops if op.kind == "gradient")
    assert rec.producer(gradient.extra["target"]) is not None      # the loss itself was recorded
    assert not model.run_eagerly
    model.fit(x, y, epochs=1, batch_size=6, verbose=0)
    assert model.train_function is not recorded
    with adv.tf.record() as rec2:
        model.fit(x, y, epochs=1, batch_size=6, verbose=0)
    assert "MatMul" in [op.name for op in rec2.ops if op.kind == "op"]


def _functional():
    keras.utils.set_random_seed(1)
    inp = keras.Input((3,), dtype="float64")
    h = keras.layers.Dense(4, activation="relu", dtype="float64", name="hidden")(inp)
    out = keras.layers.Dense(2, dtype="float64", name="head")(h)
    return keras.Model(inp, out, name="func")


class _Block(keras.layers.Layer):
    def __init__(self, **kw):
        super().__init__(dtype="float64", **kw)
        self.inner = keras.layers.Dense(3, dtype="float64", name="inner")

    def call(self, x):
        return tf.nn.softplus(self.inner(x))


class _Sub(keras.Model):
    def __init__(self):
        super().__init__(name="sub", dtype="float64")
        self.block = _Block(name="block")
        self.out_layer = keras.layers.Dense(1, dtype="float64", name="out")

    def call(self, x):
        return self.out_layer(self.block(x))


@pytest.mark.parametrize("make, scopes", [
    (_mlp, {"mlp/l1", "mlp/l2"}),
    (_functional, {"func/hidden", "func/head"}),
    (_Sub, {"sub/block/inner", "sub/block", "sub/out"}),
], ids=["sequential", "functional", "subclassed"])
def test_keras_models_fold_by_layer_and_match_the_tape(make, scopes):
    keras.utils.set_random_seed(2)
    model = make()
    x, _ = _data()
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    op_scopes = {n.scope for n in tr.nodes if n.kind == "op" and n.scope}
    assert scopes <= op_scopes
    assert tr.groups()            # the drawing folds these scopes into boxes
    for g, v in zip(grads, model.trainable_variables):
        node = next(n for n in tr.nodes if n.tensor_id == v.handle._id)
        assert np.array_equal(node.grad.data, g.numpy()), v.path
    dot = tr.to_dot("forward")
    assert "digraph" in dot


def test_output_gradients_seed_the_trace_as_they_seed_the_tape():
    x = tf.Variable([1.0, 2.0, 3.0], dtype=tf.float64)
    seed = tf.constant([0.5, -1.0, 2.0], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = tf.sin(x)
        g = tape.gradient(y, x, output_gradients=seed)
    (call,) = [op for op in rec.ops if op.kind == "gradient"]
    assert call.extra["output_gradients"] is seed
    tr = rec.trace(y, x, output_gradients=seed)
    assert np.array_equal(next(n for n in tr.nodes if n.kind == "variable").grad.data, g.numpy())


def test_compare_finds_the_first_wrong_hand_gradient():
    x = tf.constant([[1.0, -2.0]], dtype=tf.float64)
    W = tf.Variable([[0.5], [-0.25]], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            z = x @ W
            h = tf.tanh(z)
            loss = tf.reduce_sum(h ** 2)
        tape.gradient(loss, W)
    dh = 2 * h.numpy()
    dz = dh * (1 - h.numpy() ** 2)
    dW = x.numpy().T @ dz
    good = rec.compare(loss, {"h": dh, "z": dz, "W": dW})
    assert good.ok and [r.status for r in good.rows] == ["exact", "exact", "exact"] or good.ok
    bad = rec.compare(loss, {"h": dh, "z": dh, "W": x.numpy().T @ dh})      # forgot tanh' on the way to z
    assert not bad.ok and bad.first_wrong.name == "z"
    assert any("tanh" in f.lower() for f in bad.first_wrong.factors)
    with pytest.raises(KeyError):
        rec.compare(loss, {"nope": dh})


def test_numpy_on_tensors_is_an_escape_and_array_times_tensor_stays_a_tensor():
    w = tf.Variable([1.0, 2.0])
    mask = np.array([1.0, 0.0], dtype=np.float32)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = w * 2.0
            m = np.mean(y)                                            # <- np mean
            kept = mask * y
            loss = tf.reduce_sum(kept)
        g = tape.gradient(loss, w)
    assert isinstance(m, np.floating) and m == 3.0
    assert isinstance(kept, tf.Tensor) and np.array_equal(g.numpy(), [2.0, 0.0])
    (esc,) = [op for op in rec.ops if op.kind == "escape"]
    assert esc.extra["how"] == "np.mean()" and esc.location == (HERE, line_of("np mean"))
    assert not hasattr(type(y), "__array_function__")      # the numpy hooks are gone after the recording


def test_show_returns_the_explorer_on_tensorflows_gradients():
    from autodiff_viz.views.widgets.explorer import Explorer
    model = _mlp()
    x, y = _data()
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
    widget = rec.show(loss, model)
    assert isinstance(widget, Explorer)
    tr = widget.state.trace
    assert tr.target is not None and widget.state.ops
    for g, v in zip(grads, model.trainable_variables):
        node = next(n for n in tr.nodes if n.tensor_id == v.handle._id)
        assert np.array_equal(node.grad.data, g.numpy()), v.path


def test_a_recorded_jacobian_call_keeps_its_line_result_and_tape():
    x = tf.Variable([1.0, 2.0, 3.0], dtype=tf.float64)
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as tape:
            y = x ** 2
            z = tf.reduce_sum(y)
        jac = tape.jacobian(y, x)                                     # <- jacobian
        summed = tape.gradient(y, x)
    (call,) = [op for op in rec.ops if op.kind == "jacobian"]
    assert call.location == (HERE, line_of("jacobian")) and call.inputs[0] is y
    assert call.extra["result"] is jac and call.extra["sources"] is x
    assert call.extra["tape"] == rec.tape_info(tape).number
    np.testing.assert_array_equal(jac.numpy(), np.diag(2 * x.numpy()))
    np.testing.assert_array_equal(jac.numpy().sum(axis=0), summed.numpy())      # the tape sums the rows
    assert not [op for op in rec.ops if op.kind == "op" and op.index > call.index and op.name == "Pow"], \
        "the jacobian's own ops are not recorded as the user's"
    assert rec.explain(y, x).reason == "connected" and rec.explain(z, x).reason == "connected"
