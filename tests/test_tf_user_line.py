"""The learner's line of every op recorded inside Keras layers, found through the layers' marked frames.

A Keras op runs some forty frames below the learner's line; the recorder marks each layer call's frame and lets
the first walk leave its answer there (``autodiff_viz/bridges/frames.py``, ``Code.marking``). These tests hold
that to the walk without marks: the same places for every record, a learner's own code inside a layer (its
``call``, an activation it wrote) still named, and no frame kept once the calls are over.
"""
import gc
import inspect

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.tf import provenance  # noqa: E402

MARKED: list = []          # how many layer-call frames were marked while Scale.call ran


def my_activation(x):
    return tf.nn.relu(x) * 0.5                      # the learner's activation: ops on this line


class Scale(keras.layers.Layer):
    """A learner's layer: its call is the learner's code, inside a library Sequential."""

    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1],), initializer="ones")

    def call(self, x):
        MARKED.append(len(provenance.LIBRARY.marks))
        y = x * self.w                              # the learner's line inside the model
        return tf.tanh(y)


def _model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation=my_activation), Scale(),
                             keras.layers.Dense(2)])


def _places(marking: bool):
    model = _model()
    x = tf.constant(np.arange(6, dtype="float32").reshape(2, 3))
    saved = provenance.LIBRARY.marked
    if not marking:
        provenance.LIBRARY.marked = None
    try:
        with adv.tf.record() as rec:
            with tf.GradientTape() as tape:
                out = model(x)                      # the model's line
                loss = tf.reduce_mean(out ** 2)
            tape.gradient(loss, model.trainable_variables)
    finally:
        provenance.LIBRARY.marked = saved
    return rec, [(op.name, op.kind, op.location, op.scope) for op in rec.ops]


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return next(start + k for k, line in enumerate(lines) if text in line)


def test_marked_walk_gives_every_record_the_place_the_full_walk_gives():
    _, marked = _places(True)
    _, plain = _places(False)
    assert [p[:3] for p in marked] == [p[:3] for p in plain]      # (the second model's layers are dense_2 …)
    assert len({p[2] for p in marked}) >= 4


def test_learner_code_inside_layers_is_still_the_learners_line():
    rec, places = _places(True)
    here = __file__
    model_line = _line(_places, "out = model(x)")
    by_line = {}
    for name, kind, loc, scope in places:
        if loc and loc[0] == here:
            by_line.setdefault(loc[1], set()).add(name)
    assert "Mul" in by_line[_line(Scale.call, "x * self.w")]
    assert "Tanh" in by_line[_line(Scale.call, "tf.tanh(y)")]
    assert "Relu" in by_line[_line(my_activation, "relu")]
    assert "MatMul" in by_line[model_line]       # Dense's own ops sit on the line that called the model
    assert "Relu" not in by_line[model_line] and "Tanh" not in by_line[model_line]


def test_layer_calls_are_marked_while_they_run_and_not_after():
    MARKED.clear()
    _places(True)
    assert max(MARKED) >= 2                         # the Sequential's call and Scale's own
    gc.collect()
    assert provenance.LIBRARY.marks == {}
