"""A variable's ``name`` and ``path`` are Keras 3's: ``kernel`` at ``dense/kernel``.

Keras 3 gives every variable a short ``name`` (what the layer called it in
``add_weight``) and a ``path`` that adds the scopes it was made in: the
layer, the model or outer layer that built it, the optimizer that owns a
slot. Each case here builds the same model with real Keras 3 (TensorFlow
backend) and with autodiff_viz, by the same code, and compares the two lists;
nothing is written down by hand, so a change in Keras shows here too.
Then: what reads the names (traces, drawings, messages, optimizers, saving)
uses the path where several layers meet and the name inside a layer's box.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402


class _Adv:
    """autodiff_viz under the names the builders below use (``keras.layers`` … ``keras.Variable``)."""
    layers, optimizers, metrics, Model, Sequential, Variable, Input = (
        adv.layers, adv.optimizers, adv.metrics, adv.Model, adv.Sequential, adv.Variable, adv.layers.Input)


class _Keras:
    layers, optimizers, metrics, Model, Sequential, Variable, Input = (
        keras.layers, keras.optimizers, keras.metrics, keras.Model, keras.Sequential, keras.Variable, keras.Input)


def _both(build):
    """``build(k)`` with Keras and with autodiff_viz, each from a fresh session (so default names such as
    ``dense_1`` count from the start in both): ``(keras result, autodiff_viz result)``."""
    keras.backend.clear_session()
    theirs = build(_Keras)
    adv.backend.clear_session()
    ours = build(_Adv)
    return theirs, ours


def _names(variables):
    return [(v.name, v.path, bool(v.trainable)) for v in variables]


def _dense(k):
    layer = k.layers.Dense(3)
    layer.build((None, 2))
    return layer.weights


def _conv2d(k):
    layer = k.layers.Conv2D(4, 3, name="conv")
    layer.build((None, 8, 8, 1))
    return layer.weights


def _nested_sequential(k):
    inner = k.Sequential([k.layers.Dense(3), k.layers.Dense(2)])
    outer = k.Sequential([k.Input((4,)), inner, k.layers.Dense(1)])
    return outer.weights


def _functional(k):
    x = k.Input((8, 8, 1))
    y = k.layers.BatchNormalization()(k.layers.Conv2D(2, 3)(x))
    y = k.layers.Dense(1)(k.layers.Flatten()(y))
    return k.Model(x, y).weights


def _lstm(k):
    layer = k.layers.LSTM(3)
    layer.build((None, 5, 2))
    return layer.weights


def _lstm_called(k):
    layer = k.layers.LSTM(3)
    layer(np.ones((2, 5, 2), dtype="float32"))
    return layer.weights


def _batch_norm(k):
    layer = k.layers.BatchNormalization(name="bn")
    layer(np.ones((4, 3), dtype="float32"), training=True)
    return layer.weights


def _subclassed(k):
    class Net(k.Model):
        def __init__(self):
            super().__init__()
            self.hidden = k.layers.Dense(4)
            self.norm = k.layers.BatchNormalization()
            self.head = k.layers.Dense(1)

        def call(self, x):
            return self.head(self.norm(self.hidden(x)))

    net = Net()
    net(np.ones((2, 3), dtype="float32"))
    return net.weights


def _attention(k):
    layer = k.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    layer(np.ones((2, 3, 6), dtype="float32"), np.ones((2, 4, 5), dtype="float32"))
    return layer.weights


def _plain_variable(k):
    return [k.Variable(np.zeros(2, dtype="float32"), name="w")]


@pytest.mark.parametrize("build", [_dense, _conv2d, _nested_sequential, _functional, _lstm, _lstm_called,
                                   _batch_norm, _subclassed, _attention, _plain_variable],
                         ids=lambda f: f.__name__.strip("_"))
def test_weights_have_keras_3_names_and_paths(build):
    """``name`` is the layer's own word (``kernel``, ``moving_mean``), ``path`` the scopes around it
    (``sequential_1/sequential/dense_1/kernel`` in a nested Sequential, ``lstm/lstm_cell/kernel``),
    trainable and non-trainable alike, in the same order as Keras' ``weights``."""
    theirs, ours = _both(build)
    assert _names(ours) == _names(theirs)


def test_a_plain_variable_keeps_its_name_as_tensorflow():
    """``adv.Variable(..., name="w")``: ``name`` and ``path`` are ``"w"`` (``tf.Variable`` and
    ``keras.Variable`` alike); copies keep both."""
    import copy

    w = adv.Variable([1.0, 2.0], name="w")
    kernel = _dense(_Adv)[0]
    assert (w.name, w.path) == ("w", "w") == (copy.copy(w).name, copy.deepcopy(w).path)
    assert (copy.copy(kernel).name, copy.deepcopy(kernel).path) == ("kernel", "dense/kernel")
    assert adv.Variable(0.0).path is None and adv.Variable(0.0).name is None


@pytest.mark.parametrize("make", [lambda k: k.optimizers.SGD(0.1, momentum=0.9, name="opt"),
                                  lambda k: k.optimizers.Adam(name="opt"), lambda k: k.optimizers.RMSprop(name="opt"),
                                  lambda k: k.optimizers.Adagrad(name="opt"), lambda k: k.optimizers.Nadam(name="opt")],
                         ids=["sgd-momentum", "adam", "rmsprop", "adagrad", "nadam"])
def test_optimizer_slots_are_named_as_keras_3(make):
    """A slot is named ``<variable path with _ for />_<slot>`` (``sequential_dense_kernel_momentum``) at
    ``<optimizer name>/<that>``, the slots of each variable in turn. Keras also lists its step count, its
    learning rate (and Nadam's running product) as variables; here those are plain numbers, so the
    comparison takes the slots of the model's variables only."""
    def build(k):
        model = k.Sequential([k.Input((2,)), k.layers.Dense(3)])
        opt = make(k)
        opt.build(model.trainable_variables)
        return [v for v in opt.variables if v.name.startswith("sequential_dense_")]

    theirs, ours = _both(build)
    assert [(v.name, v.path) for v in ours] == [(v.name, v.path) for v in theirs]
    assert len(ours) == 2 * len(make(_Adv).slot_names) > 0


def test_metric_state_variables_are_named_as_keras_3():
    """``Metric.add_variable(name="hits")``: name ``hits``, path ``<metric name>/hits``."""
    def build(k):
        class Hits(k.metrics.Metric):
            def __init__(self, name="hits_metric"):
                super().__init__(name=name)
                self.hits = self.add_variable(shape=(), initializer="zeros", name="hits")

            def update_state(self, y_true, y_pred, sample_weight=None):
                self.hits.assign_add(1.0)

            def result(self):
                return self.hits

        return Hits().variables

    theirs, ours = _both(build)
    assert [(v.name, v.path) for v in ours] == [(v.name, v.path) for v in theirs]


def _two_layer_tape():
    adv.backend.clear_session()
    model = adv.Sequential([adv.layers.Input((2,)), adv.layers.Dense(3, name="hidden"),
                            adv.layers.Dense(1, name="head")])
    with adv.GradientTape() as tape:
        loss = adv.mean(model(np.ones((4, 2), dtype="float32")) ** 2)
    return model, tape, loss


def test_traces_name_weights_by_path_and_drawings_by_name_inside_the_layer_box():
    """A trace's node carries the path (unique: two Dense layers both have a ``kernel``); drawn open (no layer
    box around it) a weight is titled with its layer, ``hidden/kernel``, never a bare ``kernel`` (two of
    them, layer unknown), with the full path in the tooltip."""
    model, tape, loss = _two_layer_tape()
    trace = tape.trace(loss, model.trainable_variables)
    leaves = [n.name for n in trace.nodes if n.kind == "variable"]
    assert leaves == [v.path for v in model.trainable_variables]
    assert len(set(leaves)) == 4 and {v.name for v in model.trainable_variables} == {"kernel", "bias"}
    dot = trace.to_dot(view="both", collapse=None)
    kernel = trace.nodes[[n.name for n in trace.nodes].index("sequential/hidden/kernel")]
    line = next(s for s in dot.splitlines() if f'"bwd_{kernel.id}" [' in s)
    assert 'label="hidden/kernel\\n' in line and "tooltip=\"" in line and "sequential/hidden/kernel" in line


def test_compare_finds_a_weight_by_its_path():
    model, _, _ = _two_layer_tape()
    with adv.GradientTape(persistent=True) as tape:
        loss = adv.mean(model(np.ones((4, 2), dtype="float32")) ** 2)
    head = model.get_layer("head").kernel
    right = tape.gradient(loss, head).numpy()
    report = tape.compare(loss, {"sequential/head/kernel": right})
    assert report.first_wrong is None and report.rows[0].name == "sequential/head/kernel"


def test_why_none_names_a_frozen_weight_by_its_path_and_its_layer():
    """Two layers each hold a ``kernel``: the diagnosis says which one (the path) and which layer to
    unfreeze."""
    model, _, _ = _two_layer_tape()
    model.get_layer("hidden").trainable = False
    kernel = model.get_layer("hidden").kernel
    with adv.GradientTape() as tape:
        loss = adv.mean(model(np.ones((4, 2), dtype="float32")) ** 2)
    ex = tape.explain(loss, kernel)
    assert ex.reason == "not_watched"
    assert "'sequential/hidden/kernel'" in ex.message and "get_layer('hidden')" in ex.message


def test_optimizer_errors_name_the_variable_by_its_path():
    model, _, _ = _two_layer_tape()
    kernel = model.get_layer("head").kernel
    with pytest.raises(ValueError, match=r"sequential/head/kernel has shape \(3, 1\)"):
        adv.optimizers.SGD(0.1).apply_gradients([(np.ones((2, 2)), kernel)])
    assert kernel.numpy().shape == (3, 1)


def test_saved_weights_load_by_path_inside_the_model():
    """``save_weights`` keys each weight by its place in the model; a fresh copy of the same model (with
    other default names, ``dense_2`` instead of ``dense``) loads it."""
    def make():
        return adv.Sequential([adv.layers.Input((2,)), adv.layers.Dense(3), adv.layers.Dense(1)])

    first, second = make(), make()
    assert [v.path for v in first.weights] != [v.path for v in second.weights]
    assert [v.name for v in first.weights] == [v.name for v in second.weights] == ["kernel", "bias"] * 2
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.weights.npz")
        first.save_weights(path)
        second.load_weights(path)
    for a, b in zip(first.get_weights(), second.get_weights()):
        np.testing.assert_array_equal(a, b)
