"""An op with several outputs (``chunk``, ``split``, ``unbind``; TensorFlow's ``Split``, ``Unpack``) draws each
output as its own value.

Mixtral's experts ``chunk`` their fused gate/up projection in two, Mamba ``split`` s ``x_proj``'s output into
``dt, B, C``, Funnel ``split`` s a bias (tests/test_figure_unseen_architectures_4.py). The trace drew only an
op's first output; every later one entered the figure as an "outside" value, made "before the recording", with
no edge from the op that made it — the path through it was lost from the picture. Each output is now a node of
its own, named by the learner's variable when it has one, and each edge back into the op carries what that
output passes back (the two halves of ``h`` for ``a, b = h.chunk(2)``), which add up to ``h``'s gradient.

TensorFlow's bridge drew all outputs of an op as its first one: Keras' LSTM cell splits its fused projection into
the four gates with ``ops.split``, and the edge back into the projection carried the input gate's part only.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import autodiff_viz as adv


def test_tf_each_output_of_split_is_a_value_with_its_share_of_the_gradient():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    x = tf.Variable(rng.random((3, 4)).astype("float32"))
    w = tf.Variable(rng.random((4, 6)).astype("float32"))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            a, b = tf.split(x @ w, 2, axis=-1)
            loss = tf.reduce_sum(a * tf.tanh(b))
        grads = tape.gradient(loss, [x, w])
    tr = rec.trace(loss)
    assert [n.title for n in tr.nodes if n.op == "Split"] == ["a", "b"]
    h = next(n for n in tr.nodes if n.op == "MatMul")
    into = {tr.node(e.dst).title: np.asarray(e.contribution.data) for e in tr.edges_from(h.id)}
    assert np.all(into["a"][:, 3:] == 0) and np.all(into["b"][:, :3] == 0)
    assert np.allclose(into["a"] + into["b"], np.asarray(h.grad.data))
    assert np.allclose(np.asarray(tr.node(tr.node_id_of(w)).grad.data), grads[1].numpy())


def test_torch_each_output_of_chunk_is_a_value_with_its_share_of_the_gradient():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 6, requires_grad=True)
    with adv.torch.record() as rec:
        a, b = (x @ w).chunk(2, -1)
        loss = (a * b.tanh()).sum()
        loss.backward()
    tr = rec.trace(loss, value_limit=10 ** 6)
    assert not [n for n in tr.nodes if n.kind == "outside"]
    parts = [n for n in tr.nodes if n.op == "chunk"]
    assert [n.title for n in parts] == ["a", "b"]
    h = next(n for n in tr.nodes if n.op == "matmul")
    into = {tr.node(e.dst).title: np.asarray(e.contribution.data) for e in tr.edges_from(h.id)}
    assert set(into) == {"a", "b"}
    assert np.all(into["a"][:, 3:] == 0) and np.all(into["b"][:, :3] == 0)
    assert np.allclose(into["a"] + into["b"], np.asarray(h.grad.data))
    assert np.allclose(np.asarray(tr.node(tr.node_id_of(w)).grad.data), w.grad.numpy())


def test_torch_split_names_each_part_by_the_codes_variable_or_its_index():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = torch.randn(2, 6, requires_grad=True)
    with adv.torch.record() as rec:
        dt, rest = torch.split(x.exp(), [2, 4], dim=-1)
        loss = dt.sum() + torch.split(rest, 2, dim=-1)[1].pow(2).sum()
        loss.backward()
    tr = rec.trace(loss)
    assert not [n for n in tr.nodes if n.kind == "outside"]
    titles = [n.title for n in tr.nodes if n.op == "split"]
    assert titles[:2] == ["dt", "rest"] and titles[3].endswith("[1]"), titles
    assert all(n.grad is not None for n in tr.nodes if n.op == "split" and n.title != titles[2])


def _tf_gates(tf, h):
    """A helper the trace's caller cannot see into: its locals are gone when the trace is asked."""
    gate, cand = tf.split(h, 2, axis=-1)
    return tf.sigmoid(gate) * tf.tanh(cand)


def test_tf_outputs_unpacked_inside_a_function_are_named_by_its_statement():
    """``gate, cand = tf.split(…)`` in the learner's helper (as TensorFlow's CVAE tutorial writes
    ``mean, logvar = tf.split(self.encoder(x), num_or_size_splits=2, axis=1)`` in ``encode``) names the two
    outputs gate and cand, read from the statement: they are not in the caller's namespace."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = pytest.importorskip("tensorflow")
    x = tf.Variable(np.random.default_rng(0).random((3, 4)).astype("float32"))
    w = tf.Variable(np.random.default_rng(1).random((4, 6)).astype("float32"))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(_tf_gates(tf, x @ w))
        tape.gradient(loss, [x, w])
    tr = rec.trace(loss)
    assert [n.title for n in tr.nodes if n.op == "Split"] == ["gate", "cand"]
    into = [e for e in tr.edges if tr.node(e.dst).op == "Split"]
    assert len(into) == 2 and all(e.formula == "ḡ_x = ḡ_y placed back where y was read from x (zeros elsewhere)"
                                  for e in into), [e.formula for e in into]       # a slice's step, as x[…]


def _torch_heads(h):
    q, k = h.chunk(2, dim=-1)
    return (q * k).sum(-1)


def test_torch_outputs_unpacked_inside_a_function_are_named_by_its_statement():
    """``q, k = h.chunk(2, dim=-1)`` in a helper names the chunk's outputs q and k (not ``chunk``,
    ``chunk[1]``), also when the helper's locals are gone."""
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 6, requires_grad=True)
    with adv.torch.record() as rec:
        loss = _torch_heads(x @ w).sum()
        loss.backward()
    tr = rec.trace(loss, [x, w])
    assert [n.title for n in tr.nodes if n.op == "chunk"] == ["q", "k"]
    into = [e for e in tr.edges if tr.node(e.dst).op == "chunk"]
    assert len(into) == 2 and all(e.formula.startswith("ḡ_x = ḡ_y placed back where y was read") for e in into)
