"""Hostile inputs against the public entry points: a clear error (type, a message that names the
thing and the fix), raised before anything changed.

Each case says what a user did wrong; the error must let them fix it without reading our code.
"""
import threading

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import losses, metrics, optimizers
from autodiff_viz.base.errors import ModelFileError
from autodiff_viz.base.state import state


def weights_of(model):
    return [w.copy() for w in model.get_weights()]


def assert_same(before, after):
    assert len(before) == len(after) and all(np.array_equal(a, b, equal_nan=True) for a, b in zip(before, after))


def small_model():
    m = adv.Sequential([adv.layers.Dense(3, activation="tanh", dtype="float64"),
                        adv.layers.Dense(1, dtype="float64")])
    m.compile(optimizer=optimizers.SGD(0.1), loss="mse")
    m.build((None, 2))
    return m


# ----- values ---------------------------------------------------------------------
@pytest.mark.parametrize("value, kind", [(["a", "b"], "strings"), ({"w": 1.0}, "Python objects"),
                                         ([None, 1.0], "Python objects"),
                                         (np.array(["2021-01-01"], dtype="datetime64[D]"), "datetimes")])
def test_non_numeric_values_are_refused_by_every_constructor(value, kind):
    for make in (adv.constant, adv.Variable, lambda v: adv.constant(1.0) + v):
        with pytest.raises(TypeError, match=f"{kind}.*numeric dtypes only"):
            make(value)


def test_ragged_nested_lists_say_so():
    with pytest.raises(ValueError, match="different lengths.*rectangular"):
        adv.constant([[1.0, 2.0], [3.0]])


def test_an_unknown_dtype_name_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="flot"):
        adv.Variable([1.0], dtype="flot")


def test_nan_and_inf_flow_like_numpy_and_detect_anomaly_names_the_op():
    x = adv.Variable([1.0, 0.0])
    with np.errstate(divide="ignore"):
        with adv.GradientTape() as tape:
            y = adv.sum(adv.log(x))
    assert np.isneginf(y.numpy())
    with pytest.raises(adv.AnomalyError, match="'log'"):
        with adv.detect_anomaly():
            adv.log(x)
    assert state.anomaly is None


def test_zero_size_arrays_have_zero_size_gradients():
    x = adv.Variable(np.zeros((0, 3)))
    with adv.GradientTape() as tape:
        y = adv.sum(adv.tanh(x) * 2.0)
    assert y.numpy() == 0.0
    assert tape.gradient(y, x).shape == (0, 3)


# ----- ops ----------------------------------------------------------------------------
def test_op_shape_errors_name_the_op_the_shapes_and_the_fix():
    a = adv.constant(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*Fix"):
        adv.matmul(a, a)
    with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*-1"):
        adv.reshape(a, (4,))
    with pytest.raises(ValueError, match="sum: axis 5 is out of range"):
        adv.sum(a, axis=5)


# ----- gradient / jacobian ------------------------------------------------------------
def test_gradient_refuses_non_tensor_targets_and_sources_and_keeps_the_tape():
    v = adv.Variable([1.0, 2.0])
    with adv.GradientTape() as tape:
        y = adv.sum(v * v)
    for bad in ("loss", None, [y, object()]):
        with pytest.raises(TypeError, match="target must be a tensor"):
            tape.gradient(bad, v)
    with pytest.raises(TypeError, match="sources must be tensors.*adv.constant"):
        tape.gradient(y, "v")
    with pytest.raises(ValueError, match="output_gradients has shape"):
        tape.gradient(y, v, output_gradients=np.ones(3))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [2.0, 4.0])   # the errors did not use it up
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.gradient(y, v)


def test_gradient_keeps_any_nesting_of_sources():
    a, b = adv.Variable(1.0), adv.Variable([2.0, 3.0])
    with adv.GradientTape() as tape:
        y = a * adv.sum(b)
    g = tape.gradient(y, {"a": a, "rest": [b, (a,)]})
    assert set(g) == {"a", "rest"} and isinstance(g["rest"][1], tuple)
    assert g["a"].numpy() == 5.0 and g["rest"][1][0].numpy() == 5.0


def test_a_huge_jacobian_is_refused_before_allocating():
    x = adv.Variable(np.ones(200_000))
    with adv.GradientTape() as tape:
        y = x * 2.0
    with pytest.raises(ValueError, match=r"GiB.*batch_jacobian|GiB.*output_gradients"):
        tape.jacobian(y, x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy()[:3], [2.0, 2.0, 2.0])   # not used up


def test_an_error_inside_a_tape_block_leaves_nothing_recording():
    v = adv.Variable([1.0])
    with pytest.raises(ValueError):
        with adv.GradientTape():
            adv.matmul(v, adv.constant(np.ones((2, 2))))
    assert state.recording == [] and state.entered == []


# ----- layers -------------------------------------------------------------------------
def test_layers_refuse_bad_sizes_and_activations():
    with pytest.raises(ValueError, match="units must be a positive integer"):
        adv.layers.Dense(0)
    with pytest.raises(ValueError, match="Unknown activation 'relux'.*relu"):
        adv.layers.Dense(2, activation="relux")


def test_a_built_layer_refuses_another_input_size_and_keeps_its_weights():
    d = adv.layers.Dense(2, dtype="float64")
    d(np.ones((1, 3)))
    before = [w.copy() for w in d.get_weights()]
    with pytest.raises(ValueError, match=r"3 features.*\(4, 5\)"):
        d(np.ones((4, 5)))
    assert_same(before, d.get_weights())


# ----- losses ---------------------------------------------------------------------------
@pytest.mark.parametrize("labels, error, words", [("abc", TypeError, "y_true must be numbers"),
                                                   ({"a": 1}, TypeError, "y_true must be numbers"),
                                                   ([[1.0], [2.0, 3.0]], ValueError, "different lengths")])
def test_losses_name_bad_labels(labels, error, words):
    with pytest.raises(error, match=words):
        losses.MeanSquaredError()(labels, np.zeros((2, 1)))


def test_loss_options_are_checked_when_made():
    with pytest.raises(TypeError, match="from_logits must be True or False"):
        losses.BinaryCrossentropy(from_logits="yes")
    with pytest.raises(ValueError, match=r"label_smoothing must be a number in \[0, 1\]"):
        losses.CategoricalCrossentropy(label_smoothing=2.0)
    with pytest.raises(ValueError, match="Unknown reduction 'avg'.*mean_with_sample_weight"):
        losses.MeanSquaredError(reduction="avg")
    with pytest.raises(ValueError, match="Unknown loss 'msee'.*mse"):
        losses.get("msee")


def test_sample_weights_must_be_numbers_one_per_sample():
    mse = losses.MeanSquaredError()
    with pytest.raises(ValueError, match=r"sample_weight of shape \(3,\).*one weight per sample"):
        mse(np.zeros((2, 1)), np.zeros((2, 1)), sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="sample_weight must be numbers"):
        mse(np.zeros((2, 1)), np.zeros((2, 1)), sample_weight=["a", "b"])


def test_sparse_labels_must_be_class_indices():
    with pytest.raises(TypeError, match="labels must be numbers"):
        losses.sparse_categorical_crossentropy(["a"], np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\]"):
        losses.sparse_categorical_crossentropy([3], np.ones((1, 3)))


# ----- optimizers -----------------------------------------------------------------------
@pytest.mark.parametrize("make, words", [
    (lambda: optimizers.SGD("0.1"), "learning_rate must be a non-negative number"),
    (lambda: optimizers.SGD(float("nan")), "learning_rate"),
    (lambda: optimizers.SGD(0.1, momentum="a"), r"momentum must be a number in \[0.0, 1.0\]"),
    (lambda: optimizers.Adam(beta_1=1.0), r"beta_1 must be a number in \[0.0, 1.0\)"),
    (lambda: optimizers.Adam(beta_2="x"), "beta_2"),
    (lambda: optimizers.Adam(epsilon=-1e-7), "epsilon must be a number >= 0"),
    (lambda: optimizers.RMSprop(rho=1.5), "rho"),
    (lambda: optimizers.Adam(weight_decay=float("inf")), "weight_decay"),
    (lambda: optimizers.SGD(clipnorm=-1.0), "clipnorm"),
])
def test_optimizer_hyper_parameters_are_checked(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def test_a_bad_pair_changes_no_variable_and_no_state():
    a, b = adv.Variable([1.0, 2.0], name="a"), adv.Variable([3.0], name="b")
    opt = optimizers.Adam(0.1)
    opt.apply_gradients([(np.ones(2), a), (np.ones(1), b)])
    before = (a.numpy(), b.numpy(), opt.iterations, {k: dict(v) for k, v in opt._state.items()})
    for bad in ([(np.ones(2), a), (np.ones(2), b)],             # wrong shape
                [(np.ones(2), a), (np.array(["x"]), b)],        # strings
                [(np.ones(2), a), (b, np.ones(1))],             # swapped
                {"a": a}):                                      # not pairs
        with pytest.raises((TypeError, ValueError), match="Nothing was updated|pairs"):
            opt.apply_gradients(bad)
    assert np.array_equal(a.numpy(), before[0]) and np.array_equal(b.numpy(), before[1])
    assert opt.iterations == before[2]
    assert all(np.array_equal(opt._state[k][s], before[3][k][s]) for k in before[3] for s in before[3][k])


def test_unknown_optimizer_and_metric_names():
    with pytest.raises(ValueError, match="Unknown optimizer 'sgdd'.*sgd"):
        optimizers.get("sgdd")
    with pytest.raises(ValueError, match="Unknown metric 'acc2'.*accuracy"):
        metrics.check("acc2")
    with pytest.raises(TypeError, match="metric must be a name or a function"):
        metrics.check(3)


# ----- fit / evaluate / predict --------------------------------------------------------------
@pytest.mark.parametrize("x, y, error, words", [
    (np.ones((8, 2)), np.ones((7, 1)), ValueError, "x has 8 samples but y has 7"),
    (np.ones((8, 5)), np.ones((8, 1)), ValueError, "2 features"),
    (np.ones((8, 2)), np.array([["a"]] * 8), TypeError, "y_true must be numbers"),
])
def test_fit_refuses_bad_data_and_leaves_the_weights(x, y, error, words):
    m = small_model()
    before = weights_of(m)
    with pytest.raises(error, match=words):
        m.fit(x, y, epochs=1, verbose=0)
    assert_same(before, weights_of(m))
    with pytest.raises(error, match=words):
        m.evaluate(x, y, verbose=0)


def test_fit_before_compile_and_unknown_names_in_compile():
    m = adv.Sequential([adv.layers.Dense(1)])
    with pytest.raises(RuntimeError, match="compile"):
        m.fit(np.ones((2, 2)), np.ones((2, 1)), verbose=0)
    with pytest.raises(ValueError, match="Unknown loss"):
        m.compile(optimizer="sgd", loss="msee")
    with pytest.raises(ValueError, match="Unknown optimizer"):
        m.compile(optimizer="sgdd", loss="mse")


def test_validation_split_out_of_range():
    m = small_model()
    with pytest.raises(ValueError, match="validation_split must be between 0 and 1"):
        m.fit(np.ones((8, 2)), np.ones((8, 1)), validation_split=2.0, verbose=0)


# ----- traces, pictures, files ------------------------------------------------------------------
def _trace():
    v = adv.Variable([1.0, 2.0], name="<script>alert(1)</script>")
    with adv.GradientTape() as tape:
        y = adv.sum(v * v)
    return tape.trace(y)


def test_trace_json_in_is_checked():
    with pytest.raises(adv.TraceFormatError, match="not JSON"):
        adv.Trace.from_json("{not json")
    with pytest.raises(adv.TraceFormatError, match="expected a JSON object"):
        adv.Trace.from_json("[]")
    with pytest.raises(TypeError, match="JSON text"):
        adv.Trace.from_json(None)


def test_pictures_refuse_unknown_options_and_escape_labels():
    tr = _trace()
    with pytest.raises(ValueError, match="view must be one of"):
        tr.to_dot(view="sideways")
    with pytest.raises(ValueError, match="collapse must be"):
        tr.to_dot(collapse="foo")
    for svg in (tr.to_svg(), tr.to_svg(view="backward", renderer="builtin") if False else tr.to_svg(view="both")):
        assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_html_export_escapes_labels_and_names_a_bad_target_path(tmp_path):
    tr = _trace()
    path = tr.save(str(tmp_path / "graph.html"))
    text = open(path, encoding="utf-8").read()
    assert "<script>alert(1)</script>" not in text


def test_trace_save_needs_a_known_extension(tmp_path):
    with pytest.raises(ValueError, match=r"\.svg, \.dot, \.json or \.html"):
        _trace().save(str(tmp_path / "picture"))


def test_weights_files_corrupt_missing_or_misnamed_change_nothing(tmp_path):
    m = small_model()
    before = weights_of(m)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip archive")
    with pytest.raises(Exception, match="bad.npz") as info:
        m.load_weights(str(bad))
    assert type(info.value).__module__.startswith("autodiff_viz")      # the package's error, not zipfile's
    with pytest.raises(FileNotFoundError, match="does not exist"):
        m.load_weights(str(tmp_path / "missing.npz"))
    with pytest.raises(ValueError, match=r"must end in '\.npz'"):
        m.save_weights(str(tmp_path / "weights.txt"))
    assert_same(before, weights_of(m))


def test_show_refuses_what_is_not_a_tape_or_trace():
    with pytest.raises(TypeError, match="GradientTape or a Trace"):
        adv.show("abc")


def test_explorer_setters_refuse_unknown_choices():
    v = adv.Variable([1.0, 2.0], name="v")
    with adv.GradientTape() as tape:
        y = adv.sum(v * v)
    st = adv.show(tape, target=y).state
    with pytest.raises(ValueError, match="view must be one of"):
        st.set_view("sideways")
    with pytest.raises(ValueError, match="mode must be one of"):
        st.set_mode("bogus")
    with pytest.raises(ValueError, match="label kind must be one of"):
        st.set_label("bogus", True)
    with pytest.raises(KeyError, match="no node 'n999'"):
        st.select("n999")


def test_a_tape_cannot_be_drawn_after_it_let_go_of_its_values():
    v = adv.Variable(np.ones((30, 30)))
    with adv.GradientTape() as tape:
        y = adv.sum(adv.tanh(v) * v)
    tape.gradient(y, v)
    with pytest.raises(RuntimeError, match="before tape.gradient.*persistent=True"):
        adv.show(tape, target=y)
    assert tape.explain(y, v).connected


# ----- concurrency ----------------------------------------------------------------------------
def test_a_failing_thread_leaves_the_other_threads_tapes_alone():
    results, errors = {}, []
    barrier = threading.Barrier(3)

    def good(i):
        barrier.wait()
        w = adv.Variable([float(i + 1)])
        for _ in range(100):
            with adv.GradientTape() as tape:
                y = adv.sum(w * w)
            results.setdefault(i, []).append(tape.gradient(y, w).numpy()[0])

    def bad():
        barrier.wait()
        for _ in range(100):
            try:
                with adv.GradientTape():
                    adv.matmul(adv.Variable([1.0]), adv.constant(np.ones((3, 3))))
            except ValueError:
                pass
            if state.recording:
                errors.append("left recording")

    threads = [threading.Thread(target=good, args=(i,)) for i in range(2)] + [threading.Thread(target=bad)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results[0] == [2.0] * 100 and results[1] == [4.0] * 100


def test_one_model_trained_in_one_thread_while_another_predicts():
    m = small_model()
    x, y = np.random.default_rng(0).normal(size=(32, 2)), np.zeros((32, 1))
    out, failures = [], []

    def predict():
        try:
            for _ in range(20):
                out.append(m.predict(x, verbose=0).shape)
        except Exception as exc:       # noqa: BLE001 (reported below)
            failures.append(exc)

    t = threading.Thread(target=predict)
    t.start()
    history = m.fit(x, y, epochs=3, batch_size=8, verbose=0)
    t.join()
    assert not failures and out == [(32, 1)] * 20
    assert history.history["loss"][-1] < history.history["loss"][0]


# ----- huge sizes: refused before allocating, naming the size in bytes and the limit -----------
def test_one_hot_refuses_an_absurd_depth_before_allocating():
    with adv.GradientTape(persistent=True) as tape:
        with pytest.raises(ValueError, match=r"one_hot: shape \(1, 1000000000000\) of float32 needs "
                                             r"4,000,000,000,000 bytes.*2 GiB limit.*number of classes"):
            adv.one_hot([1], 10 ** 12)
    assert len(tape._nodes) == 0


def test_constant_refuses_a_huge_broadcast_view_before_copying_it():
    view = np.broadcast_to(1.0, (10 ** 5, 10 ** 5))
    with pytest.raises(ValueError, match=r"constant: shape \(100000, 100000\) of float64 needs 80,000,000,000 "
                                         r"bytes.*MAX_BYTES.*broadcast_to"):
        adv.constant(view)


@pytest.mark.parametrize("make, x, words", [
    (lambda: adv.layers.Dense(10 ** 12), np.ones((1, 2)), r"\(Dense\)\.add_weight\('kernel'\): shape \(2, 10{12}\)"),
    (lambda: adv.layers.Embedding(10 ** 12, 10 ** 6), np.array([[1]]),
     r"\(Embedding\)\.add_weight\('embeddings'\): shape \(10{12}, 10{6}\)"),
    (lambda: adv.layers.Conv2D(10 ** 9, 3), np.ones((1, 5, 5, 1)),
     r"\(Conv2D\)\.add_weight\('kernel'\): shape \(3, 3, 1, 10{9}\)"),
])
def test_a_weight_over_the_byte_limit_is_refused_at_build_naming_the_layer(make, x, words):
    layer = make()
    with pytest.raises(ValueError, match=words + r" of float32 needs [\d,]+ bytes.*2 GiB limit.*units, filters"):
        layer(x)
    assert not layer.built and layer.weights == []


# ----- layer sizes and inputs -----------------------------------------------------------------
@pytest.mark.parametrize("make, words", [
    (lambda: adv.layers.Dense("3"), r"Dense: units must be a positive integer, got '3' \(a str\).*int\('3'\)"),
    (lambda: adv.layers.Dense(2.5), r"Dense: units must be a positive integer, got 2\.5 \(a float\)"),
    (lambda: adv.layers.Dense(True), r"Dense: units must be a positive integer, got True \(a bool\)"),
    (lambda: adv.layers.Embedding("10", 2), r"Embedding: input_dim must be a positive integer, got '10' \(a str\)"),
    (lambda: adv.layers.Conv2D("8", 3), r"Conv2D: filters must be a positive integer, got '8' \(a str\)"),
])
def test_layer_sizes_must_be_positive_integers_as_keras(make, words):
    with pytest.raises(ValueError, match=words):
        make()


@pytest.mark.parametrize("given, kind", [({"a": 1}, "a dict"), ("abc", "a str"), (None, "a NoneType")])
def test_a_one_input_layer_called_on_a_dict_says_it_takes_an_array(given, kind):
    d = adv.layers.Dense(2)
    with pytest.raises(TypeError, match=rf"dense\w* \(Dense\): takes one tensor or numpy array, got {kind}.*"
                                        r"np\.asarray"):
        d(given)
    assert not d.built and d.weights == []


# ----- variables ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [["a", "b"], np.array(["a", "b"]), [{}, 1.0]])
def test_assign_refuses_non_numbers_and_keeps_the_value(value):
    v = adv.Variable([1.0, 2.0], name="w")
    for method in (v.assign, v.assign_add, v.assign_sub):
        with pytest.raises(TypeError, match=r"assign\w*.*'w'.*numeric dtypes only|"
                                            r"'w' holds float64 numbers.*unchanged"):
            method(value)
    assert np.array_equal(v.numpy(), [1.0, 2.0])


# ----- fit / predict / compile / save_weights ---------------------------------------------------
@pytest.mark.parametrize("x, kwargs, error, words", [
    ([[1.0, 2.0], [3.0]], {}, ValueError, "x: its nested lists have different lengths.*rectangular"),
    ("abc", {}, ValueError, r"x: got one value \(str 'abc'\), not an array of samples.*one row per sample"),
    (np.ones((2, 2)), {"batch_size": 0}, ValueError, r"fit: batch_size must be a positive integer, got 0"),
    (np.ones((2, 2)), {"batch_size": "8"}, ValueError, r"fit: batch_size must be a positive integer, got '8' "
                                                        r"\(a str\).*int\('8'\)"),
    (np.ones((2, 2)), {"epochs": "2"}, ValueError, r"fit: epochs must be a non-negative integer, got '2'"),
    (np.ones((2, 2)), {"epochs": -1}, ValueError, r"fit: epochs must be a non-negative integer, got -1"),
])
def test_fit_refuses_bad_arguments_before_training(x, kwargs, error, words):
    m = small_model()
    before, steps = weights_of(m), m.optimizer.iterations
    with pytest.raises(error, match=words):
        m.fit(x, np.ones((2, 1)), verbose=0, **kwargs)
    assert_same(before, weights_of(m))
    assert m.optimizer.iterations == steps


def test_predict_refuses_a_string_a_dict_of_scalars_and_a_negative_batch_size():
    inp = adv.layers.Input((2,))
    functional = adv.Model(inp, adv.layers.Dense(1)(inp))
    for m in (small_model(), functional):
        with pytest.raises(ValueError, match=r"x: got one value \(str 'abc'\)"):
            m.predict("abc")
        with pytest.raises(ValueError, match=r"x\['a'\]: got one value \(int 1\)"):
            m.predict({"a": 1})
        with pytest.raises(ValueError, match=r"predict: batch_size must be a positive integer, got -1"):
            m.predict(np.ones((4, 2)), batch_size=-1)
        with pytest.raises(ValueError, match=r"evaluate: batch_size must be a positive integer"):
            m.compile(optimizer="sgd", loss="mse")
            m.evaluate(np.ones((4, 2)), np.ones((4, 1)), batch_size=0, verbose=0)


def test_compile_checks_metric_names_at_once_and_keeps_the_old_compile():
    m = small_model()
    optimizer, loss = m.optimizer, m.loss
    with pytest.raises(ValueError, match="Unknown metric 'acc2'.*accuracy"):
        m.compile(optimizer="adam", loss="mae", metrics=["acc2"])
    with pytest.raises(TypeError, match=r"compile: metrics must be a list \(e\.g\. metrics=\['accuracy'\]\)"):
        m.compile(optimizer="adam", loss="mae", metrics="accuracy")
    assert m.optimizer is optimizer and m.loss is loss


def test_save_weights_into_a_missing_folder_names_the_folder(tmp_path):
    m = small_model()
    target = tmp_path / "no_such_dir" / "w.npz"
    with pytest.raises(FileNotFoundError, match=r"save_weights: the folder '.*no_such_dir' does not exist.*"
                                                r"os\.makedirs"):
        m.save_weights(str(target))
    assert not (tmp_path / "no_such_dir").exists()


# ----- traces in and out ----------------------------------------------------------------------
def test_trace_json_with_bad_bytes_or_absurd_nesting_is_a_trace_format_error():
    with pytest.raises(adv.TraceFormatError, match=r"not UTF-8 text: byte 0xc3 at byte offset 7"):
        adv.Trace.from_json(b'{"a": "\xc3\x28"}')
    for deep in ("[" * 100_000 + "]" * 100_000, '{"nodes": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001):
        with pytest.raises(adv.TraceFormatError, match="nested too deeply.*Trace.to_json"):
            adv.Trace.from_json(deep)


def test_trace_save_into_a_missing_folder_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"Trace\.save: the folder '.*missing' does not exist.*makedirs"):
        _trace().save(str(tmp_path / "missing" / "x.html"))
    assert not (tmp_path / "missing").exists()


# ----- widget state setters -------------------------------------------------------------------
def test_explorer_step_and_edge_setters_name_what_they_expect():
    v = adv.Variable([1.0, 2.0], name="v")
    with adv.GradientTape() as tape:
        y = adv.sum(v * v)
    st = adv.show(tape, target=y).state
    st.set_step(1)
    with pytest.raises(TypeError, match=rf"set_step: the step must be an integer from 0 to {st.max_step}, got str"):
        st.set_step("a")
    with pytest.raises(KeyError, match=rf"no edge 'e999': it has {len(st.trace.edges)} edges"):
        st.select_edge("e999")
    assert st.step == 1 and st.selected_edge is None


# ----- compare ----------------------------------------------------------------------------------
def test_compare_tape_refuses_a_tape_that_let_go_of_its_values():
    from autodiff_viz.records.compare import compare_tape
    v = adv.Variable(np.ones((30, 30)))
    with adv.GradientTape() as tape:
        h = adv.tanh(v)
        y = adv.sum(h * v)
    tape.gradient(y, v)
    with pytest.raises(RuntimeError, match=r"tape\.compare\(\): .*let go.*persistent=True"):
        compare_tape(tape, y, {h: np.ones((30, 30))}, namespace={})


# ----- whole-model files and adv.utils (added with model.save and adv.utils) --------------------------------
def test_model_files_damaged_foreign_or_misnamed_change_nothing(tmp_path):
    m = small_model()
    before = weights_of(m)
    for name, data in (("zip.keras", b"not a zip archive"), ("empty.keras", b"")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ModelFileError, match=rf"{name}.*not a \.keras archive"):
            adv.models.load_model(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="missing.keras does not exist"):
        adv.models.load_model(tmp_path / "missing.keras")
    with pytest.raises(ValueError, match=r"must end in '\.keras'.*save_weights"):
        m.save(tmp_path / "model.h5")
    with pytest.raises(TypeError, match=r"save: the file must be a path .*'\.keras', got dict"):
        m.save({"path": "m.keras"})
    with pytest.raises(FileNotFoundError, match="nowhere"):
        m.save(tmp_path / "nowhere" / "m.keras")
    m.save(tmp_path / "good.keras")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        m.save(tmp_path / "good.keras", overwrite=False)
    with pytest.raises(TypeError, match=r"expected the JSON text of model\.to_json\(\), got list"):
        adv.models.model_from_json([1, 2])
    with pytest.raises(ModelFileError, match="not valid JSON"):
        adv.models.model_from_json("{not json")
    assert_same(before, weights_of(m))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.keras", "good.keras", "zip.keras"]


@pytest.mark.parametrize("call, error, words", [
    (lambda: adv.utils.to_categorical([0, -1]), ValueError, ["to_categorical", "[-1]", "0 or more"]),
    (lambda: adv.utils.to_categorical([0.5]), ValueError, ["to_categorical", "whole numbers", "np.argmax"]),
    (lambda: adv.utils.to_categorical([3], num_classes=2), ValueError, ["num_classes=2", "num_classes=4"]),
    (lambda: adv.utils.to_categorical(["cat"]), TypeError, ["to_categorical", "class ids"]),
    (lambda: adv.utils.pad_sequences([[1, 2], 3]), ValueError, ["pad_sequences", "position 1", "[[1], [2, 3]]"]),
    (lambda: adv.utils.pad_sequences([[1]], padding="left"), ValueError, ["padding='left'", "'pre'", "'post'"]),
    (lambda: adv.utils.pad_sequences([[1]], value=np.nan), ValueError, ["padding value nan", "int32"]),
    (lambda: adv.utils.normalize(np.ones(3), axis=2), ValueError, ["normalize", "axis=2", "out of range"]),
    (lambda: adv.utils.plot_model("model"), TypeError, ["plot_model", "expects a model", "str"]),
    (lambda: adv.utils.plot_model(small_model(), rankdir="up"), ValueError, ["rankdir='up'", "'TB'"]),
    (lambda: adv.utils.plot_model(adv.Sequential([adv.layers.Dense(2)]), show_shapes=True), ValueError,
     ["show_shapes", "Input", "model.build"]),
])
def test_utils_refuse_bad_inputs_naming_the_function_and_the_fix(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)
