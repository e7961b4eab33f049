"""``expanded=`` by a Keras layer's name, and an opened layer's op titled by its layer (issue 42).

The PyTorch side is tests/test_expanded_names.py. A learner opens ``conv`` (the name they gave the layer), and
the op drawn inside is the layer's output: it is titled ``conv``, not TensorFlow's ``Conv2D``.
"""
from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.views import folding  # noqa: E402


@pytest.fixture(scope="module")
def traced():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 1))
    h = keras.layers.Conv2D(2, 3, use_bias=False, name="conv")(inputs)
    h = keras.layers.Flatten(name="flat")(h)
    model = keras.Model(inputs, keras.layers.Dense(3, name="head")(h))
    x, y = np.random.rand(2, 8, 8, 1).astype("float32"), np.array([0, 2])
    with adv.tf.record() as rec:
        with tf.GradientTape():
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, model(x))
    return rec.trace(loss, model)


def _titles(lay):
    return [b.title for b in sorted(lay.boxes.values(), key=lambda b: b.order)]


def test_a_layer_opened_by_its_name_draws_its_op_under_the_layers_name(traced):
    opened = _titles(folding.layout(traced, expanded={"conv"}))
    assert "conv/kernel" in opened                 # the layer is open: its weight is drawn beside its op
    assert "conv" in opened and "Conv2D" not in opened


def test_a_misspelt_layer_name_is_refused_with_the_layer_it_meant(traced):
    with pytest.raises(ValueError, match=r"'cnov'.*Closest: .*conv'"):
        traced.to_dot("backward", expanded={"cnov"})
