"""Every reason of docs/why-none.md and docs/pytorch.md names the user's line (``location``) when one exists.

One minimal case per reason, each marking the line that caused it with a
``# <- tag`` comment. A reason with nothing on the path to point at
(``connected``, PyTorch's ``not_used``, a loss computed outside the
recording) is checked to have no location, so that a wrong line never appears.
"""
import inspect

import code_lines
import numpy as np
import pytest

import autodiff_viz as adv

HERE = __file__


def where(tag) -> str:
    return code_lines.line_of(HERE, tag)


# ----- the engine (docs/why-none.md) -------------------------------------------------------------
def test_engine_connected_has_no_location():
    w = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        loss = adv.sum(w * w)
    e = tape.explain(loss, w)
    assert e.reason == "connected" and e.location is None


def test_engine_not_watched_frozen_variable_names_the_line_that_read_it():
    v = adv.Variable([1.0, 2.0], trainable=False)
    with adv.GradientTape() as tape:
        loss = adv.sum(v * 3.0)                                       # <- use frozen
    e = tape.explain(loss, v)
    assert e.reason == "not_watched" and e.location == where("use frozen")


def test_engine_not_watched_with_an_unwatching_tape_names_the_use():
    v = adv.Variable([1.0, 2.0])
    with adv.GradientTape(watch_accessed_variables=False) as tape:
        loss = adv.sum(v * 3.0)                                       # <- use
    e = tape.explain(loss, v)
    assert e.reason == "not_watched" and e.location is not None


def test_engine_computed_outside_tape():
    w = adv.Variable([1.0, 2.0])
    h = adv.tanh(w)                                                   # <- before
    with adv.GradientTape() as tape:
        loss = adv.sum(h)
    e = tape.explain(loss, w)
    assert e.reason == "computed_outside_tape" and e.location == where("before")


def test_engine_left_the_tape():
    w = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        value = float(adv.sum(w * w))                                 # <- float
        loss = adv.constant(value) * 2.0
    e = tape.explain(loss, w)
    assert e.reason == "left_the_tape" and e.location == where("float")


def test_engine_non_differentiable_op():
    w = adv.Variable([0.1, 2.0, -1.0])
    with adv.GradientTape() as tape:
        loss = adv.cast(adv.argmax(w), "float64") ** 2                # <- argmax
    e = tape.explain(loss, w)
    assert e.reason == "non_differentiable_op" and e.location == where("argmax") and e.op == "argmax"


def test_engine_integer_dtype_on_the_path_and_at_the_source():
    w = adv.Variable([0.4, 1.6])
    with adv.GradientTape() as tape:
        loss = adv.sum(adv.cast(adv.cast(w * 10.0, "int64"), "float64"))  # <- cast
    e = tape.explain(loss, w)
    assert e.reason == "integer_dtype" and e.location == where("cast")
    counts = adv.Variable([1, 2])                                     # <- int variable
    with adv.GradientTape() as tape:
        total = adv.sum(counts * 2)
    e = tape.explain(total, counts)
    assert e.reason == "integer_dtype" and e.location == where("int variable")


def test_engine_not_used_names_the_loss_that_does_not_read_it():
    w, other = adv.Variable([1.0]), adv.Variable([2.0])
    with adv.GradientTape() as tape:
        loss = adv.sum(w * 2.0)                                       # <- loss
    e = tape.explain(loss, other)
    assert e.reason == "not_used" and e.location == where("loss")


def test_engine_unwatched_constant_names_the_line_that_made_it_and_the_learners_name():
    """Nothing is recorded on a constant no op of the tape read through a tracked input, so the line that made
    it is the place to point at: ``x = adv.constant(...)``, and the fix speaks of ``x``, the learner's name."""
    x = adv.constant([1.0, 2.0])                                      # <- made
    with adv.GradientTape() as tape:
        y = adv.sum(x ** 2)
    assert tape.gradient(y, x) is None
    e = tape.explain(y, x)
    assert e.reason == "not_watched" and e.location == where("made")
    assert "'x'" in e.message and "tape.watch(x)" in e.message and "unnamed" not in e.message
    image = adv.constant([0.2, 0.7])                                  # <- image made
    w = adv.Variable([1.0, -1.0])
    with adv.GradientTape() as tape:
        score = adv.sum(image * w)                                    # <- image read
    e = tape.explain(score, image)
    assert e.reason == "not_watched" and e.location == where("image read")
    assert where("image made") in [f"{f}:{n}" for f, n in e.locations] and "tape.watch(image)" in e.message


def test_a_constant_that_keeps_its_line_still_pickles_and_keeps_the_line():
    """The line is kept cheaply (a code object and an offset); pickling resolves it to ``(file, line)``, so a
    constant pickles as before and a diagnosis after unpickling still points at the line."""
    import pickle
    x = adv.constant([1.0, 2.0])                                      # <- pickled
    back = pickle.loads(pickle.dumps(x))
    assert np.array_equal(back.numpy(), x.numpy())
    with adv.GradientTape() as tape:
        y = adv.sum(back * 2.0)
    assert tape.explain(y, back).location == where("pickled")


def test_engine_constant_location_costs_nothing_when_locations_are_off():
    """``adv.config.capture_locations = False`` (speed first) keeps no line for a constant either."""
    from autodiff_viz.base.state import config
    config.capture_locations = False
    try:
        x = adv.constant([1.0, 2.0])
    finally:
        config.capture_locations = True
    with adv.GradientTape() as tape:
        y = adv.sum(x * 2.0)
    e = tape.explain(y, x)
    assert e.reason == "not_watched" and e.location is None


def test_engine_set_weights_and_assign_of_numpy_inside_the_tape_name_the_assignment():
    """``set_weights`` (model or layer) and ``v.assign(t.numpy())`` copy values into the weights: the gradient of
    what made the values is None, as in Keras (checked with real TensorFlow in
    tests/test_why_none_corpus_keras.py), and ``explain`` names the copy, not "not used"."""
    adv.layers.set_random_seed(0)
    model = adv.Sequential([adv.Input((3,)), adv.layers.Dense(2)])
    x = np.ones((4, 3), "float32")
    scale = adv.constant(0.5, dtype="float32")
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(scale)
        model.set_weights([w * scale for w in model.weights])        # <- model set
        loss = adv.sum(model(x))
    e = tape.explain(loss, scale)
    assert tape.gradient(loss, scale) is None
    assert e.reason == "non_differentiable_op" and e.op == "set_weights" and e.location == where("model set")
    layer = model.layers[0]
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(scale)
        layer.set_weights([w * scale for w in layer.weights])        # <- layer set
        loss = adv.sum(model(x))
    e = tape.explain(loss, scale)
    assert e.reason == "non_differentiable_op" and e.location == where("layer set")
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(scale)
        layer.kernel.assign((layer.kernel * scale).numpy())           # <- assign numpy
        loss = adv.sum(model(x))
    e = tape.explain(loss, scale)
    assert tape.gradient(loss, scale) is None
    assert e.reason == "non_differentiable_op" and e.op == "assign" and e.location == where("assign numpy")
    assert "numpy()" in e.message and "'multiply'" in e.message


# ----- PyTorch (docs/pytorch.md) -----------------------------------------------------------------
torch = pytest.importorskip("torch")

import autodiff_viz.torch  # noqa: E402,F401


def _w():
    torch.manual_seed(0)
    return torch.randn(3, 1, requires_grad=True), torch.randn(4, 3)


def test_torch_no_grad_and_inference_mode():
    """The line of a grad-mode cut is the ``with`` that turned gradients off (what the user must move); the op that
    ran under it is named as context."""
    w, x = _w()
    with adv.torch.record() as rec:
        with torch.no_grad():                                         # <- no grad
            z = x @ w                                                 # <- matmul
        loss = (z * 2).sum()
        with torch.inference_mode():
            zi = x @ w                                                # <- inference
    e = rec.explain(loss, w)
    assert e.reason == "no_grad" and e.location == where("no grad") and where("matmul") in e.locations
    with adv.torch.record() as rec2:
        with torch.inference_mode():                                  # <- inference 2
            zi = x @ w
        loss2 = zi.sum()
    e = rec2.explain(loss2, w)
    assert e.reason == "inference_mode" and e.location == where("inference 2")


def test_torch_detached_and_left_the_graph():
    w, x = _w()
    with adv.torch.record() as rec:
        z = (x @ w).detach()                                          # <- detach
        loss = z.sum()
    assert rec.explain(loss, w).location == where("detach")
    with adv.torch.record() as rec:
        v = (x @ w).sum().item()                                      # <- item
        loss = torch.tensor(v) * 2
    e = rec.explain(loss, w)
    assert e.reason == "left_the_graph" and e.location == where("item")


def test_torch_non_differentiable_op_max_indices_and_comparison():
    w, x = _w()
    with adv.torch.record() as rec:
        idx = torch.max(x @ w, 1)[1]                                  # <- max indices
        loss = idx.float().sum()
    e = rec.explain(loss, w)
    assert e.reason == "non_differentiable_op" and e.op == "max" and e.location == where("max indices")
    assert "indices" in e.message and ".long()" not in e.message
    with adv.torch.record() as rec:
        mask = (x @ w) > 0                                            # <- compare
        loss = mask.float().sum()
    e = rec.explain(loss, w)
    assert e.reason == "non_differentiable_op" and e.location == where("compare") and "comparison" in e.message


def test_torch_integer_dtype_cast_and_integer_parameter():
    w, x = _w()
    with adv.torch.record() as rec:
        q = (x @ w * 10).long()                                       # <- long
        loss = q.float().sum()
    e = rec.explain(loss, w)
    assert e.reason == "integer_dtype" and e.location == where("long") and ".long()" in e.message
    with adv.torch.record() as rec:
        k = torch.tensor([1, 2, 3])                                   # <- int param
        loss = (k * 2).sum()
    e = rec.explain(loss, k)
    assert e.reason == "integer_dtype" and e.location == where("int param")


def test_torch_not_used_and_computed_outside_have_no_line():
    w, x = _w()
    v = torch.randn(3, 1, requires_grad=True)
    with adv.torch.record() as rec:
        loss = (x @ w).sum()
    assert rec.explain(loss, v).reason == "not_used" and rec.explain(loss, v).location is None
    outside = (x @ w).sum()
    e = rec.explain(outside, w)
    assert e.reason == "computed_outside_recording" and e.location is None


def test_torch_non_leaf_read_before_backward_non_scalar_and_requires_grad_false():
    w, x = _w()
    with adv.torch.record() as rec:
        h = x @ w                                                     # <- hidden
        loss = h.sum()
        seen = w.grad                                                 # <- early read
        loss.backward()
    assert seen is None
    assert rec.explain(loss, h).location == where("hidden")
    e = rec.explain(loss, w)
    assert e.reason == "read_before_backward" and e.location == where("early read")
    with adv.torch.record() as rec:
        y = x @ w
        with pytest.raises(RuntimeError):
            y.backward()                                              # <- backward
    e = rec.explain(y, w)
    assert e.reason == "non_scalar_target" and e.location == where("backward")
    frozen = torch.randn(3, 1, requires_grad=True)
    with adv.torch.record() as rec:
        frozen.requires_grad_(False)                                  # <- freeze
        loss = (x @ frozen).sum()
    e = rec.explain(loss, frozen)
    assert e.reason == "requires_grad_false" and e.location == where("freeze")


def test_torch_unregistered_parameter_names_the_attribute_and_the_line_that_stored_it():
    """Issue 47: ``unregistered_parameter`` points at the line that stored the plain dict (found in the class's
    source when the model was built before any recording)."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = {"a": torch.nn.Linear(3, 1)}

        def forward(self, x):
            return self.blocks["a"](x)

    net = Net()
    rows = adv.torch.explain(net(torch.randn(2, 3)).sum(), net)
    assert rows["blocks['a'].weight"].reason == "unregistered_parameter"
    assert "nn.ModuleDict" in rows["blocks['a'].weight"].message
    stored = inspect.getsourcelines(Net)
    line = stored[1] + next(k for k, text in enumerate(stored[0]) if "self.blocks = {" in text)
    assert rows["blocks['a'].weight"].location == f"{inspect.getsourcefile(Net)}:{line}"


def test_torch_a_plain_parameter_list_in_explain_without_recording():
    w, x = _w()
    loss = (x @ w).sum()
    v = torch.randn(2, requires_grad=True)
    answers = adv.torch.explain(loss, [w, v])
    assert [a.reason for a in answers] == ["read_before_backward", "not_used"]
    assert np.isfinite(loss.item())


def test_torch_unrecorded_op_a_forward_run_in_a_thread_pool_or_torchscript():
    """The recorder is PyTorch's ``TorchFunctionMode``, which is per thread and not entered by TorchScript:
    an encoder run through a ``ThreadPoolExecutor`` or compiled with ``torch.jit.script`` computes ``h`` out of
    its sight. PyTorch's gradient is there; ``explain`` says the recording missed a step and names the first
    recorded use of ``h``, with the fix (run it in this thread, eagerly)."""
    import warnings
    from concurrent.futures import ThreadPoolExecutor
    torch.manual_seed(0)
    enc, head, x = torch.nn.Linear(3, 4), torch.nn.Linear(4, 1), torch.randn(5, 3)
    with ThreadPoolExecutor(1) as pool:
        with adv.torch.record() as rec:
            h = pool.submit(enc, x).result()
            loss = head(torch.relu(h)).pow(2).mean()                  # <- thread use
            loss.backward()
    assert enc.weight.grad is not None and enc.weight.grad.abs().sum() > 0
    e = rec.explain(loss, enc.weight)
    assert e.reason == "unrecorded_op" and e.location == where("thread use") and e.op == "relu"
    assert "'h'" in e.message and "thread" in e.message and "Fix:" in e.message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)       # torch 2.x: "torch.jit.script is deprecated"
        scripted = torch.jit.script(enc)
    with adv.torch.record() as rec:
        h = scripted(x)
        loss = head(h).sum()                                          # <- script use
    e = rec.explain(loss, scripted.weight)
    assert e.reason == "unrecorded_op" and e.location == where("script use") and "TorchScript" in e.message


def _doc_reasons(path, first_column_only=True) -> set:
    import pathlib
    import re
    text = (pathlib.Path(HERE).parent.parent / "docs" / path).read_text()
    return set(re.findall(r"^\| \[?`([a-z_]+)`", text, flags=re.M))


def test_every_documented_reason_has_a_test_that_checks_its_location():
    """Each reason in the tables of docs/why-none.md and docs/pytorch.md is asserted, in one test, together with
    its ``location`` (here or in a corpus file), so a new reason cannot ship without pointing at a line."""
    import pathlib
    import re
    tests = pathlib.Path(HERE).parent
    bodies = []
    for name in ("test_why_none_locations.py", "test_torch_why_none_corpus.py", "test_why_none_corpus_keras.py",
                 "test_tf_bridge_diagnosis.py", "test_why_none_unseen.py"):
        bodies += (tests / name).read_text().split("\ndef test_")[1:]
    reasons = _doc_reasons("why-none.md") | _doc_reasons("pytorch.md")
    assert {"not_watched", "unrecorded_op", "rebound_parameter", "left_the_graph"} <= reasons
    missing = sorted(r for r in reasons
                     if not any(re.search(rf"== \"{r}\"|\{{\"{r}\"\}}", b) and ".location" in b for b in bodies))
    assert not missing, f"reasons without a location test: {missing}"


def test_the_corpus_of_real_questions_counts_distinct_questions():
    """The corpus files cite one public question per test (its address in the docstring). A question that backs
    two tests (tensorflow#18636 and #27378 in both the engine and the bridge files) counts once: the number of
    distinct addresses is the number of real questions the diagnosis was checked against."""
    import pathlib
    import re
    tests = pathlib.Path(HERE).parent
    cited = set()
    for name in ("test_torch_why_none_corpus.py", "test_why_none_corpus_keras.py", "test_tf_bridge_diagnosis.py"):
        for body in (tests / name).read_text().split("\ndef test_")[1:]:
            doc = re.match(r'[^\n]*\n\s*"""(.*?)"""', body, flags=re.S)
            if doc:
                cited |= {u.rstrip(".,;:") for u in re.findall(r"https?://[^\s)>`'\"]+", doc.group(1))}
    assert len(cited) >= 33, sorted(cited)


def test_unexplained_names_the_fresh_start_it_cannot_trace():
    """TensorFlow: numpy reads a tensor through the buffer protocol (no hook sees it), so the recording sees the
    history start afresh at tf.constant but no escape: the answer says it cannot show why, at that line."""
    tf = pytest.importorskip("tensorflow")
    w = tf.Variable([1.0, 2.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            h = w * 2.0
            peak = tf.reduce_max(h)                                    # a metric: h is read
            v = tf.constant(np.tanh(np.asarray(h)))                    # <- fresh start
            loss = tf.reduce_sum(v * w)
    assert tape.gradient(loss, h) is None
    e = rec.explain(loss, h)
    assert e.reason == "unexplained" and e.location == where("fresh start")
    assert "does not show why" in e.message


def test_new_parameter_and_frozen_layer_and_non_trainable_point_at_their_lines():
    """The reasons the provenance record added: the assignment line of nn.Parameter(W) in forward; the line that
    froze a Keras layer; the tape.gradient line that asked for model.variables."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            W = self.fc.weight * 2
            self.fc.weight = torch.nn.Parameter(W)                      # <- rewrap
            return self.fc(x)
    net = Net()
    w0 = net.fc.weight
    with adv.torch.record() as rec:
        loss = net(torch.randn(4, 3)).sum()
    e = rec.explain(loss, w0)
    assert e.reason == "new_parameter" and e.location == where("rewrap")
    tf = pytest.importorskip("tensorflow")
    import keras
    base, head = keras.layers.Dense(4), keras.layers.Dense(1)
    model = keras.Sequential([keras.Input((3,)), base, head, keras.layers.BatchNormalization()])
    with adv.tf.record() as rec:
        base.trainable = False                                          # <- layer frozen here
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(tf.ones((4, 3)), training=True) ** 2)
        grads = tape.gradient(loss, model.variables)                    # <- asks
    e = rec.explain(loss, base.kernel)
    assert e.reason == "frozen_layer" and e.location == where("layer frozen here")
    assert grads[[v.path for v in model.variables].index(model.layers[-1].moving_mean.path)] is None
    e = rec.explain(loss, model.layers[-1].moving_mean)
    assert e.reason == "non_trainable" and e.location == where("asks")
