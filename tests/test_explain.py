"""tape.explain(target, source): one test per reason, with the code learners actually write.

Each scenario marks the line the diagnosis must point at with a ``# <- tag``
comment; :func:`line_of` finds it, so the tests do not depend on line numbers.
"""
import os

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv

HERE = os.path.abspath(__file__)


def line_of(tag: str) -> str:
    return code_lines.line_of(HERE, tag)


@pytest.fixture
def W():
    return adv.Variable(np.array([[0.5], [-0.3]]), name="W")


@pytest.fixture
def x():
    return adv.constant([[1.0, 2.0]], name="x")


def test_connected_when_the_gradient_exists(W, x):
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.tanh(x @ W))
    e = tape.explain(loss, W)
    assert e.reason == "connected" and e.connected
    assert W._id in e.nodes and loss._id in e.nodes
    assert tape.gradient(loss, W) is not None


def test_loss_computed_before_the_tape(W, x):
    # the tfjs question: "Cannot compute gradient of y=f(x) with respect to x"
    loss = adv.sum(adv.nn.sigmoid(x @ W) ** 2)  # <- before
    with adv.GradientTape() as tape:
        pass
    assert tape.gradient(loss, W) is None
    e = tape.explain(loss, W)
    assert e.reason == "computed_outside_tape"
    assert e.location == line_of("before")
    assert "before the tape's `with` block" in e.message
    assert "loss = adv.sum(adv.nn.sigmoid(x @ W) ** 2)" in e.message      # the code line is shown
    assert "inside the `with" in e.message                                 # and the fix


def test_loss_computed_after_the_tape_or_under_stop_recording(W, x):
    with adv.GradientTape(persistent=True) as tape:
        with tape.stop_recording():
            paused = adv.sum(x @ W)  # <- paused
    after = adv.sum(x @ W)  # <- after
    e = tape.explain(paused, W)
    assert (e.reason, e.location) == ("computed_outside_tape", line_of("paused"))
    assert "stop_recording" in e.message
    e = tape.explain(after, W)
    assert (e.reason, e.location) == ("computed_outside_tape", line_of("after"))
    assert "after the tape's `with` block ended" in e.message


def test_watched_constant_with_the_loss_computed_before_the_tape():
    x = adv.constant(3.0)
    y = x * x
    with adv.GradientTape() as tape:
        tape.watch(x)
    assert tape.gradient(y, x) is None
    e = tape.explain(y, x)
    assert e.reason == "computed_outside_tape"
    assert "before" in e.message


def test_reward_turned_into_numpy_inside_the_loss(W, x):
    baseline = adv.Variable(0.1, name="baseline")

    def model(inputs):
        return adv.nn.sigmoid(inputs @ W)

    with adv.GradientTape(persistent=True) as tape:
        reward = model(x).numpy()[0]  # <- escape
        loss = adv.sum((reward - baseline) ** 2)  # <- comes-back
    assert tape.gradient(loss, W) is None
    e = tape.explain(loss, W)
    assert e.reason == "left_the_tape"
    assert e.location == line_of("escape")
    assert line_of("comes-back") in [f"{f}:{n}" for f, n in e.locations]
    assert "reward = model(x).numpy()[0]" in e.message
    assert "loss = adv.sum((reward - baseline) ** 2)" in e.message
    assert "numpy()" in e.message and "drop the .numpy()" in e.message
    assert tape.explain(loss, baseline).reason == "connected"


@pytest.mark.parametrize("how", ["float", "item", "asarray"])
def test_value_that_left_as_a_python_number(how, W, x):
    with adv.GradientTape() as tape:
        score = adv.sum(x @ W)
        if how == "float": number = float(score)  # <- float
        if how == "item": number = score.item()  # <- item
        if how == "asarray": number = np.asarray(score).tolist()  # <- asarray
        loss = adv.constant(number) * 2.0
    assert tape.gradient(loss, W) is None
    e = tape.explain(loss, W)
    assert e.reason == "left_the_tape"
    assert e.location == line_of(how)


def test_argmax_in_the_path(W, x):
    with adv.GradientTape() as tape:
        logits = x @ W
        best = adv.argmax(logits, axis=1)  # <- argmax
        loss = adv.sum(adv.cast(best, "float64") * 2.0)
    assert tape.gradient(loss, W) is None
    e = tape.explain(loss, W)
    assert e.reason == "non_differentiable_op"
    assert e.op == "argmax"
    assert e.location == line_of("argmax")
    assert "'argmax'" in e.message and "softmax" in e.message
    assert (logits._id, best._id) in e.edges


@pytest.mark.parametrize("make", [lambda v: adv.stop_gradient(v), lambda v: adv.cast(v > 0.0, "float64")])
def test_other_ops_without_gradient(make, W, x):
    with adv.GradientTape() as tape:
        loss = adv.sum(make(x @ W))
    e = tape.explain(loss, W)
    assert e.reason == "non_differentiable_op"
    assert e.op in ("stop_gradient", "greater")


def test_integer_cast_in_the_path(W, x):
    with adv.GradientTape() as tape:
        counts = adv.cast(x @ W * 10.0, "int32")  # <- int-cast
        loss = adv.sum(adv.cast(counts, "float64"))
    assert tape.gradient(loss, W) is None
    e = tape.explain(loss, W)
    assert e.reason == "integer_dtype"
    assert e.op == "cast" and e.location == line_of("int-cast")
    assert "int32" in e.message


def test_integer_source():
    idx = adv.constant([1, 2])
    with adv.GradientTape() as tape:
        tape.watch(adv.constant([1.0]))
        y = idx * 2
    assert tape.explain(y, idx).reason == "integer_dtype"


def test_unwatched_constant():
    x = adv.constant([1.0, 2.0], name="x")
    with adv.GradientTape() as tape:
        y = adv.sum(x * x)
    assert tape.gradient(y, x) is None
    e = tape.explain(y, x)
    assert e.reason == "not_watched"
    assert "tape.watch(x)" in e.message and "adv.Variable" in e.message


def test_unwatched_constant_next_to_a_watched_variable(W):
    x = adv.constant([[1.0, 2.0]], name="x")
    with adv.GradientTape() as tape:
        y = adv.sum(x @ W)  # <- mixed
    assert tape.gradient(y, x) is None
    e = tape.explain(y, x)
    assert e.reason == "not_watched"
    assert e.location == line_of("mixed")


def test_variable_on_a_tape_that_does_not_watch_accessed_variables(W, x):
    with adv.GradientTape(watch_accessed_variables=False) as tape:
        y = adv.sum(x @ W)  # <- no-auto-watch
    assert tape.gradient(y, W) is None
    e = tape.explain(y, W)
    assert e.reason == "not_watched"
    assert "watch_accessed_variables=False" in e.message
    assert e.location == line_of("no-auto-watch")


def test_source_not_used(W, x):
    unused = adv.Variable(1.0, name="unused")
    with adv.GradientTape() as tape:
        loss = adv.sum(x @ W)  # <- unused
    assert tape.gradient(loss, unused) is None
    e = tape.explain(loss, unused)
    assert e.reason == "not_used"
    assert e.location == line_of("unused")
    assert "unconnected_gradients='zero'" in e.message


def test_layer_output_from_a_call_recorded_by_another_tape(W, x):
    with adv.GradientTape() as first:
        output = adv.nn.relu(x @ W)  # <- first-call
    with adv.GradientTape() as second:
        loss = adv.sum(output ** 2)
    assert second.gradient(loss, output) is None
    e = second.explain(loss, output)
    assert e.reason == "computed_outside_tape"
    assert "another tape" in e.message and "tape #" not in e.message     # no internal ids in prose
    assert "layer.output" in e.message
    assert e.location == line_of("first-call")


def test_weights_through_a_stale_output(W, x):
    with adv.GradientTape() as first:
        output = x @ W  # <- stale
    with adv.GradientTape() as second:
        loss = adv.sum(output ** 2)
    assert second.gradient(loss, W) is None
    e = second.explain(loss, W)
    assert e.reason == "computed_outside_tape"
    assert e.location == line_of("stale")
    assert "another tape (an earlier `with` block)" in e.message


def test_raise_mode_raises_the_explanation(W, x):
    unused = adv.Variable(1.0, name="unused")
    with adv.GradientTape(persistent=True) as tape:
        loss = adv.sum(x @ W)
    with pytest.raises(adv.UnconnectedGradientError) as info:
        tape.gradient(loss, [W, unused], unconnected_gradients="raise")
    assert str(info.value) == str(tape.explain(loss, unused))
    assert str(info.value).startswith("not_used: ")
    assert info.value.explanation.reason == "not_used"
    assert isinstance(info.value, ValueError)
    grads = tape.gradient(loss, {"W": W}, unconnected_gradients="raise")
    np.testing.assert_allclose(grads["W"].numpy(), [[1.0], [2.0]])


def test_list_targets_are_connected_if_one_is(W, x):
    unused = adv.Variable(1.0)
    with adv.GradientTape() as tape:
        a = adv.sum(x @ W)
        b = unused * 2.0
    assert tape.explain([b, a], W).reason == "connected"
    assert tape.explain([b], W).reason == "not_used"


def test_explanation_renders_as_text_and_escaped_html(W):
    x = adv.constant([1.0], name="<script>")
    with adv.GradientTape() as tape:
        y = adv.sum(x * 2.0)
    e = tape.explain(y, x)
    assert str(e).startswith("not_watched: ")
    page = e._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "not_watched" in page


def test_explain_rejects_non_tensors(W):
    with adv.GradientTape() as tape:
        y = W * 2.0
    with pytest.raises(TypeError, match="sources must be tensors or variables, got float"):
        tape.explain(y, 3.0)


def test_the_broken_edge_is_marked_red_on_the_trace(W, x):
    with adv.GradientTape() as tape:
        logits = x @ W
        best = adv.argmax(logits, axis=1)
        loss = adv.sum(adv.cast(best, "float64") * 2.0)
    e = tape.explain(loss, W)
    assert e.marks() == {(logits._id, best._id): "non_differentiable_op (argmax)"}
    trace = e.mark(tape.trace(loss, W))
    (mark,) = trace.marks
    edge = trace.edge(mark.ref)
    assert (edge.src, edge.dst) == (trace.node_id_of(logits), trace.node_id_of(best))
    assert "non_differentiable_op (argmax)" in trace.to_dot("forward")


def test_marks_fall_back_to_nodes_the_trace_has(W, x):
    unused = adv.Variable(1.0, name="unused")
    with adv.GradientTape() as tape:
        loss = adv.sum(x @ W) + unused * 0.0
        other = adv.sum(x @ W)
    e = tape.explain(other, unused)
    assert e.reason == "not_used"
    trace = e.mark(tape.trace(other))
    assert {m.ref for m in trace.marks} <= {trace.node_id_of(unused), trace.node_id_of(other)}
    assert trace.marks
    with adv.GradientTape() as tape:
        loss = adv.sum(x @ W)
    connected = tape.explain(loss, W)
    assert connected.marks() == {} and connected.mark(tape.trace(loss)).marks == []


def test_stale_dense_output_from_an_earlier_call():
    hidden = adv.layers.Dense(3, activation="tanh", name="hidden")
    head = adv.layers.Dense(1, name="head")
    x = adv.constant(np.ones((2, 4), dtype="float32"))
    with adv.GradientTape() as first:
        head(hidden(x))  # <- earlier-call
    stale = hidden.output
    with adv.GradientTape() as second:
        loss = adv.sum(head(stale) ** 2)
    assert second.gradient(loss, stale) is None
    e = second.explain(loss, stale)
    assert e.reason == "computed_outside_tape"
    assert e.location == line_of("earlier-call")
    assert "'hidden" in e.message and "another tape" in e.message

    with adv.GradientTape() as fresh:
        loss = adv.sum(head(hidden(x)) ** 2)
    assert fresh.explain(loss, hidden.output).reason == "connected"
    assert fresh.gradient(loss, hidden.output) is not None


def test_logging_a_value_is_not_mistaken_for_the_cause(W, x):
    other = adv.Variable([1.0, 2.0], name="other")
    with adv.GradientTape() as tape:
        prediction = x @ W
        print(prediction.numpy())                # logging: the value leaves, but nothing comes back
        loss = adv.sum(other * 2.0)
    assert tape.explain(loss, W).reason == "not_used"


def test_target_rebuilt_from_a_number_with_no_history_at_all(W, x):
    with adv.GradientTape() as tape:
        reward = (x @ W).numpy()[0, 0]  # <- rebuilt
        loss = adv.constant(1.0 - reward) ** 2
    e = tape.explain(loss, W)
    assert e.reason == "left_the_tape"
    assert e.location == line_of("rebuilt")
    assert "most likely" in e.message


def test_layer_output_taken_before_the_tape_is_named_as_a_stale_output():
    layer = adv.layers.Dense(2, name="stale_dense")
    x = np.ones((1, 3))
    layer(x)
    h = layer.output                      # from a call no tape recorded
    with adv.GradientTape() as tape:
        loss = adv.sum(layer(x) ** 2)     # a new call: a new output tensor
    assert tape.gradient(loss, h) is None
    e = tape.explain(loss, h)
    assert e.reason == "computed_outside_tape"
    assert "layer.output" in e.message and "constant" not in e.message


def test_a_value_changed_in_numpy_on_its_way_back_is_still_left_the_tape():
    v = adv.Variable([1.0, 2.0], name="v")
    x = adv.constant([3.0, 4.0])
    with adv.GradientTape() as tape:
        tape.watch(x)
        c = adv.constant(v.numpy() * 2)       # the value leaves, is doubled in numpy, comes back
        loss = adv.sum(c * x)
    assert tape.gradient(loss, v) is None
    e = tape.explain(loss, v)
    assert e.reason == "left_the_tape"
    assert "numpy()" in e.message and "most likely" in e.message


def test_a_loss_turned_into_a_python_float_is_explained_not_refused():
    w = adv.Variable([1.0, 2.0], name="w")
    with adv.GradientTape() as tape:
        loss = float(adv.sum(w * w))          # <- float-loss
    assert tape.gradient(loss, w) is None
    e = tape.explain(loss, w)
    assert e.reason == "left_the_tape"
    assert "float" in e.message and "float()" in e.message
    assert e.location == line_of("float-loss")


def test_messages_name_tensors_by_the_learners_words_never_by_internal_ids():
    w = adv.Variable([1.0, 2.0])                 # no name= anywhere
    hidden = adv.tanh(w)  # <- before-named
    with adv.GradientTape() as tape:
        loss = adv.sum(hidden * 2.0)
    e = tape.explain(loss, w)
    assert e.reason == "computed_outside_tape"
    assert "#" not in e.message.replace("# <- before-named", "")
    assert e.message.startswith("'hidden' (the output of tanh on test_explain.py:")   # named as in the code
    c = adv.constant([1.0, 2.0])
    with adv.GradientTape() as tape2:
        out = adv.sum(adv.exp(c))
    e2 = tape2.explain(out, c)
    assert e2.reason == "not_watched" and "#" not in e2.message
    assert "The source 'c' (shape (2,)" in e2.message and "unnamed" not in e2.message   # the learner's name


def test_explain_many_answers_like_explain_for_every_source():
    W = adv.Variable([[0.5], [-0.3]], name="W")
    c = adv.constant([[1.0, 2.0]], name="c")
    frozen = adv.Variable([1.0], name="frozen", trainable=False)
    with adv.GradientTape(persistent=True) as tape:
        loss = adv.sum(c @ W) + adv.sum(frozen)
    from autodiff_viz.diagnosis.walk import explain_many
    many = explain_many(tape, loss, [W, c, frozen])
    assert [m.reason for m in many] == [tape.explain(loss, s).reason for s in (W, c, frozen)]
    assert [m.reason for m in many] == ["connected", "not_watched", "not_watched"]


def test_a_frozen_layers_weight_is_explained_with_the_layer_to_unfreeze():
    """A layer frozen with layer.trainable = False: the fix names the layer, not Variable(trainable=True)."""
    model = adv.Sequential([adv.layers.Input((2,)), adv.layers.Dense(3, name="encoder"), adv.layers.Dense(1)])
    model.get_layer("encoder").trainable = False
    kernel = model.get_layer("encoder").kernel
    with adv.GradientTape() as tape:
        loss = adv.sum(model(np.ones((4, 2))))
    ex = tape.explain(loss, kernel)
    assert ex.reason == "not_watched"
    assert "model.get_layer('encoder').trainable = True" in ex.message
    assert "create it with trainable=True" not in ex.message
    plain = adv.Variable([1.0], trainable=False)
    with adv.GradientTape() as tape:
        y = adv.sum(plain * 2.0)
    assert "create it with trainable=True" in tape.explain(y, plain).message
