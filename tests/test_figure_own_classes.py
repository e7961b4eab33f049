"""A class the learner wrote is titled by its name but never given a library formula because of that name.

Tutorials name their own classes after the library's: PyTorch's "NLP From Scratch: Classifying Names with a
Character-Level RNN" writes ``class RNN(nn.Module)`` (a linear ``i2h`` over ``cat(input, hidden)``, no tanh), the
Keras guide "Making new layers and models via subclassing" writes ``class Linear(keras.layers.Layer)``. A figure
that looks formulas up by class name wrote ``nn.RNN``'s tanh recurrence (``⊙ (1 − h(t)²)``) on the tutorial's
loop and Dense's formula on the guide's layer: confident and, for the RNN, wrong. The figure now gives such a box
the chain rule's generic text, and the trace says which boxes are the learner's own (``Trace.own``, kept in JSON).
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.views import folding


def _labels(dot: str) -> list:
    return [m.replace("\\n", "\n") for m in re.findall(r'label="((?:[^"\\]|\\.)*)"', dot)]


def test_the_char_rnn_tutorials_own_rnn_class_gets_no_tanh_recurrence():
    """https://pytorch.org/tutorials/intermediate/char_rnn_classification_tutorial.html (its earlier version, the
    hand-written ``RNN`` module and the training loop over ``line_tensor[i]``, with ``NLLLoss`` and the manual
    ``p.data.add_(p.grad.data, alpha=-learning_rate)``), sizes reduced."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, input, hidden):
            combined = torch.cat((input, hidden), 1)
            hidden = self.i2h(combined)
            output = self.h2o(hidden)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return torch.zeros(1, self.hidden_size)

    torch.manual_seed(0)
    rnn = RNN(7, 5, 3)
    criterion = nn.NLLLoss()
    line_tensor = torch.zeros(4, 1, 7)
    for i in range(4):
        line_tensor[i][0][i] = 1
    with adv.torch.record() as rec:
        hidden = rnn.initHidden()
        rnn.zero_grad()
        for i in range(line_tensor.size()[0]):
            output, hidden = rnn(line_tensor[i], hidden)
        loss = criterion(output, torch.tensor([2]))
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-0.005)
    tr = rec.trace(loss, rnn)
    assert "rnn" in tr.own and "i2h" not in tr.own and tr.kinds["rnn"] == "RNN"
    labels = _labels(tr.to_dot("backward"))
    assert any(lab.startswith("rnn (RNN) × 4 steps") for lab in labels), labels
    assert not any("h(t)²" in lab or "W_h" in lab for lab in labels), labels      # nn.RNN's, not this class's
    assert any("back through rnn" in lab for lab in labels)
    assert any("onehot" in lab for lab in labels)            # the library's NLLLoss keeps its formula
    steps = [k for k in folding.hierarchy(tr).groups if re.fullmatch(r"rnn(#\d+)?", k)]
    assert len(steps) == 4
    opened = _labels(tr.to_dot("backward", expanded=["rnn*", *steps]))          # the loop unrolled, each step open
    assert any("ᵀ · x  (W is (out, in) in torch)" in lab for lab in opened), opened     # i2h: torch's Linear
    assert adv.Trace.from_json(tr.to_json()).own == tr.own


def test_the_keras_guides_own_linear_layer_is_not_drawn_as_dense():
    """https://keras.io/guides/making_new_layers_and_models_via_subclassing/ ("The Layer class"): ``class
    Linear(keras.layers.Layer)`` with ``add_weight`` for ``w`` and ``b`` and ``call`` returning
    ``ops.matmul(inputs, self.w) + self.b``; two of them in a subclassed model, one step with a GradientTape."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    from keras import ops

    class Linear(keras.layers.Layer):
        def __init__(self, units=32, input_dim=32):
            super().__init__()
            self.w = self.add_weight(shape=(input_dim, units), initializer="random_normal", trainable=True)
            self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return ops.matmul(inputs, self.w) + self.b

    class Head(keras.Model):
        def __init__(self):
            super().__init__()
            self.linear = Linear(4, 3)
            self.dense = keras.layers.Dense(2)

        def call(self, x):
            return self.dense(tf.nn.relu(self.linear(x)))

    keras.utils.set_random_seed(0)
    model = Head()
    x = np.random.default_rng(0).random((5, 3)).astype("float32")
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x) ** 2)
        tape.gradient(loss, model.trainable_variables)
    tr = rec.trace(loss, model)
    linear = next(k for k, v in tr.kinds.items() if v == "Linear")
    dense = next(k for k, v in tr.kinds.items() if v == "Dense")
    assert linear in tr.own and dense not in tr.own, (tr.kinds, tr.own)
    labels = _labels(tr.to_dot("backward"))
    assert any(f"back through {linear}" in lab for lab in labels), labels        # the chain rule's own words
    assert not any(f"{linear} (Linear)" in lab and "f′" in lab for lab in labels)
    assert any("(ḡ_" in lab and "⊙ f′(z)) · Wᵀ" in lab for lab in labels), labels    # Keras' Dense keeps its own


def test_the_keras_guides_own_linear_layer_in_this_engine_is_not_drawn_as_dense():
    """The same guide's ``Linear`` written on this package's Keras-style layers (``adv.layers.Layer``,
    ``add_weight``, ``adv.ops.matmul``), recorded by ``adv.GradientTape``."""
    class Linear(adv.layers.Layer):
        def __init__(self, units=32, input_dim=32):
            super().__init__()
            self.w = self.add_weight(shape=(input_dim, units), initializer="random_normal", trainable=True)
            self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return adv.ops.matmul(inputs, self.w) + self.b

    adv.utils.set_random_seed(0)
    linear, dense = Linear(4, 3), adv.layers.Dense(2)
    x = np.random.default_rng(0).random((5, 3)).astype("float32")
    with adv.GradientTape() as tape:
        loss = adv.ops.mean(dense(adv.ops.relu(linear(x))) ** 2)
    tr = tape.trace(loss)
    assert tr.kinds[linear.name] == "Linear" and linear.name in tr.own and dense.name not in tr.own
    labels = _labels(tr.to_dot("backward"))
    assert any(f"back through {linear.name}" in lab for lab in labels), labels
    assert any("⊙ f′(z)) · Wᵀ" in lab for lab in labels), labels          # the package's Dense keeps its formula
    assert adv.Trace.from_json(tr.to_json()).own == tr.own
