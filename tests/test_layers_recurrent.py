"""LSTM, GRU, Bidirectional, MultiHeadAttention and Attention without PyTorch.

Shapes and Keras' weight layouts, states, go_backwards, custom cells, the
gates on the graph, masks, user-called build, clear errors raised before any
weight changes, and save/load of weights. Values are checked against
hand-written numpy (the PyTorch comparison is in
test_layers_torch_parity_recurrent.py).
"""
import numpy as np
import pytest

import autodiff_viz as adv

layers = adv.layers


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstm(x, K, U, b, h=None, c=None):
    u = U.shape[0]
    h = np.zeros((x.shape[0], u)) if h is None else h
    c = np.zeros((x.shape[0], u)) if c is None else c
    hs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ K + h @ U + b
        i, f, g, o = sigmoid(z[:, :u]), sigmoid(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), sigmoid(z[:, 3 * u:])
        c = f * c + i * g
        h = o * np.tanh(c)
        hs.append(h)
    return np.stack(hs, 1), h, c


def numpy_gru(x, K, U, b):
    u = U.shape[0]
    h = np.zeros((x.shape[0], u))
    for t in range(x.shape[1]):
        xs, inner = x[:, t] @ K + b[0], h @ U + b[1]
        z = sigmoid(xs[:, :u] + inner[:, :u])
        r = sigmoid(xs[:, u:2 * u] + inner[:, u:2 * u])
        hh = np.tanh(xs[:, 2 * u:] + r * inner[:, 2 * u:])
        h = z * h + (1 - z) * hh
    return h


def random_weights(layer, seed=0):
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.normal(scale=0.5, size=w.shape) for w in layer.get_weights()])


# ---------------------------------------------------------------------------
# Keras layouts and defaults
# ---------------------------------------------------------------------------
def test_lstm_weights_have_keras_shapes_and_the_forget_bias_starts_at_one():
    lstm = layers.LSTM(3)
    lstm.build((None, 7, 2))
    assert lstm.built and lstm.cell.built
    assert [w.shape for w in lstm.weights] == [(2, 12), (3, 12), (12,)]
    assert [w.name.split("/")[-1] for w in lstm.weights] == ["kernel", "recurrent_kernel", "bias"]
    np.testing.assert_array_equal(lstm.cell.bias.numpy(), [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    U = lstm.cell.recurrent_kernel.numpy()
    np.testing.assert_allclose(U @ U.T, np.eye(3), atol=1e-5)        # orthogonal, as Keras
    assert layers.LSTM(3, unit_forget_bias=False, bias_initializer="ones")(np.ones((1, 2, 2))) is not None
    assert lstm.dtype == "float32" and lstm.cell.kernel.dtype == np.float32


def test_gru_bias_shape_depends_on_reset_after():
    gru = layers.GRU(4)
    gru.build((2, 3, 5))
    assert [w.shape for w in gru.weights] == [(5, 12), (4, 12), (2, 12)]
    old = layers.GRU(4, reset_after=False)
    old.build((2, 3, 5))
    assert [w.shape for w in old.weights] == [(5, 12), (4, 12), (12,)]
    plain = layers.GRU(4, use_bias=False)
    plain.build((2, 3, 5))
    assert [w.shape for w in plain.weights] == [(5, 12), (4, 12)]


def test_lstm_forward_and_states_match_numpy():
    x = np.random.default_rng(1).normal(size=(2, 5, 3))
    lstm = layers.LSTM(4, return_sequences=True, return_state=True, dtype="float64")
    lstm.build(x.shape)
    random_weights(lstm, 2)
    seq, h, c = lstm(x)
    K, U, b = (w.numpy() for w in lstm.weights)
    want_seq, want_h, want_c = numpy_lstm(x, K, U, b)
    np.testing.assert_allclose(seq.numpy(), want_seq, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    last = layers.LSTM(4, dtype="float64")
    last.build(x.shape)
    last.set_weights(lstm.get_weights())
    np.testing.assert_allclose(last(x).numpy(), want_h, rtol=1e-12)


def test_go_backwards_reads_the_sequence_from_the_end_and_initial_state_is_used():
    x = np.random.default_rng(3).normal(size=(2, 4, 3))
    h0, c0 = np.random.default_rng(4).normal(size=(2, 2, 5))
    lstm = layers.LSTM(5, go_backwards=True, return_sequences=True, dtype="float64")
    lstm.build(x.shape)
    random_weights(lstm, 5)
    seq = lstm(x, initial_state=[h0, c0])
    want, _, _ = numpy_lstm(x[:, ::-1], *(w.numpy() for w in lstm.weights), h=h0, c=c0)
    np.testing.assert_allclose(seq.numpy(), want, rtol=1e-12)       # outputs in processing order, as Keras


def test_gru_forward_and_gradients_match_numpy_and_finite_differences():
    x = np.random.default_rng(6).normal(size=(2, 3, 2))
    gru = layers.GRU(3, dtype="float64")
    gru.build(x.shape)
    random_weights(gru, 7)
    np.testing.assert_allclose(gru(x).numpy(), numpy_gru(x, *(w.numpy() for w in gru.weights)), rtol=1e-12)
    K, U, b = (w.numpy() for w in gru.weights)
    report = adv.check_grads(lambda xx, k, u, bb: adv.sum(_gru_with(gru, xx, k, u, bb) ** 2), [x, K, U, b])
    assert report.ok, report


def _gru_with(gru, x, K, U, b):
    """The GRU's output with its weights replaced by the given tensors (so check_grads can perturb them)."""
    cell = gru.cell
    saved = (cell.kernel, cell.recurrent_kernel, cell.bias)
    cell.kernel, cell.recurrent_kernel, cell.bias = K, U, b
    try:
        return gru(x)
    finally:
        cell.kernel, cell.recurrent_kernel, cell.bias = saved


def test_lstm_cell_and_gru_cell_work_inside_rnn():
    x = np.random.default_rng(8).normal(size=(2, 4, 3))
    rnn = layers.RNN(layers.LSTMCell(5, dtype="float64"), return_state=True, dtype="float64")
    out, h, c = rnn(x)
    want_seq, want_h, want_c = numpy_lstm(x, *(w.numpy() for w in rnn.weights))
    np.testing.assert_allclose(out.numpy(), want_h, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    gru = layers.RNN(layers.GRUCell(2), return_sequences=True)
    assert gru(x).shape == (2, 4, 2)
    cell = layers.LSTMCell(3)
    h1, (h1_again, c1) = cell(np.ones((4, 2)), [np.zeros((4, 3)), np.zeros((4, 3))])
    assert h1.shape == c1.shape == (4, 3) and h1 is h1_again


def test_the_gates_of_an_lstm_and_a_gru_have_their_own_scopes():
    lstm = layers.LSTM(2, name="enc")
    gru = layers.GRU(2, name="dec")
    with adv.GradientTape() as tape:
        adv.sum(gru(lstm(np.ones((1, 3, 2)), training=False)[:, None, :]))
    scopes = {node.scope for node in tape.nodes}
    cell, gcell = lstm.cell.name, gru.cell.name
    assert {f"enc/{cell}/{g}" for g in ("i", "f", "c̃", "o")} <= scopes
    assert {f"dec/{gcell}/{g}" for g in ("z", "r", "h̃")} <= scopes
    gate_ops = {n.rule.name for n in tape.nodes if n.scope == f"enc/{cell}/f"}
    assert gate_ops == {"getitem", "sigmoid"}
    assert [n.rule.name for n in tape.nodes if n.scope == f"enc/{cell}"].count("matmul") == 2 * 3


def test_a_trace_sees_the_time_steps_of_an_lstm_as_one_loop():
    model = adv.Sequential([layers.LSTM(3), layers.Dense(1)])
    seq = adv.constant(np.random.default_rng(22).normal(size=(2, 5, 2)))
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(seq)))
    (loop,) = tape.trace(loss).loops()
    lstm = model.layers[0]
    assert loop.count == 5 and loop.key == f"{model.name}/{lstm.name}/{lstm.cell.name}*"
    assert len({len(step) for step in loop.steps[1:]}) == 1   # the same ops (gates included) every step


# ---------------------------------------------------------------------------
# build() called by the user (issue 17)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: layers.SimpleRNN(3), lambda: layers.LSTM(3), lambda: layers.GRU(3),
                                  lambda: layers.Bidirectional(layers.LSTM(3)),
                                  lambda: layers.RNN(layers.GRUCell(3))])
def test_build_called_by_the_user_builds_the_cell_and_keeps_assigned_weights(make):
    layer = make()
    layer.build((None, 4, 2))
    assert layer.built
    cells = [layer.forward_layer.cell, layer.backward_layer.cell] if isinstance(layer, layers.Bidirectional) \
        else [layer.cell]
    assert all(c.built and c.kernel.shape[0] == 2 for c in cells)
    values = [np.full(w.shape, 0.1 * (k + 1), dtype=w.dtype) for k, w in enumerate(layer.get_weights())]
    assert values
    layer.set_weights(values)
    layer(np.ones((1, 4, 2)))
    assert len(layer.weights) == len(values)
    for got, want in zip(layer.get_weights(), values):
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# Bidirectional
# ---------------------------------------------------------------------------
def test_bidirectional_merge_modes_and_states():
    x = np.random.default_rng(9).normal(size=(2, 4, 3))
    bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True, return_state=True, dtype="float64"),
                              merge_mode=None, dtype="float64")
    fwd, bwd, hf, cf, hb, cb = bi(x)                 # merge_mode=None: flat, as Keras
    assert bi.forward_layer.name.startswith("forward_lstm") and bi.backward_layer.name.startswith("backward_lstm")
    assert bi.backward_layer.go_backwards and not bi.forward_layer.go_backwards
    Kf, Uf, bf, Kb, Ub, bb = (w.numpy() for w in bi.weights)
    want_f, want_hf, _ = numpy_lstm(x, Kf, Uf, bf)
    want_b, want_hb, _ = numpy_lstm(x[:, ::-1], Kb, Ub, bb)
    np.testing.assert_allclose(fwd.numpy(), want_f, rtol=1e-12)
    np.testing.assert_allclose(bwd.numpy(), want_b[:, ::-1], rtol=1e-12)  # flipped back to input order
    np.testing.assert_allclose(hb.numpy(), want_hb, rtol=1e-12)
    for mode, combine in [("concat", lambda a, b: np.concatenate([a, b], -1)), ("sum", np.add),
                          ("mul", np.multiply), ("ave", lambda a, b: (a + b) / 2)]:
        other = layers.Bidirectional(layers.LSTM(2, return_sequences=True, dtype="float64"), merge_mode=mode,
                                     dtype="float64")
        other.build(x.shape)
        other.set_weights(bi.get_weights())
        np.testing.assert_allclose(other(x).numpy(), combine(want_f, want_b[:, ::-1]), rtol=1e-12)


class MinimalRNNCell(layers.Layer):
    """The custom cell of the Keras guide."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), name="recurrent_kernel")

    def call(self, inputs, states):
        output = adv.matmul(inputs, self.kernel) + adv.matmul(states[0], self.recurrent_kernel)
        return output, [output]


def test_bidirectional_copies_a_custom_cell_and_takes_a_backward_layer():
    bi = layers.Bidirectional(layers.RNN(MinimalRNNCell(3)))
    assert bi(np.ones((2, 4, 5))).shape == (2, 6)
    assert bi.forward_layer.cell is not bi.backward_layer.cell
    assert bi.forward_layer.cell.kernel is not bi.backward_layer.cell.kernel
    back = layers.GRU(3, go_backwards=True)
    bi2 = layers.Bidirectional(layers.GRU(3), backward_layer=back, merge_mode="sum")
    assert bi2(np.ones((2, 4, 5))).shape == (2, 3) and bi2.backward_layer is back


def test_bidirectional_refuses_bad_arguments():
    with pytest.raises(ValueError, match="merge_mode='avg'.*'ave'"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="avg")
    with pytest.raises(TypeError, match="recurrent layer.*Dense"):
        layers.Bidirectional(layers.Dense(2))
    with pytest.raises(ValueError, match="go_backwards"):
        layers.Bidirectional(layers.GRU(2), backward_layer=layers.GRU(2))


# ---------------------------------------------------------------------------
# Errors: named layer, shapes, fix; nothing changes
# ---------------------------------------------------------------------------
def test_recurrent_errors_name_the_layer_and_the_fix_before_building():
    lstm = layers.LSTM(3, name="encoder")
    with pytest.raises(ValueError, match=r"encoder: expected inputs of shape \(batch, time, features\), got \(4, 2\)"):
        lstm(np.ones((4, 2)))
    assert not lstm.built and lstm.weights == []
    lstm(np.ones((1, 2, 2)))
    before = lstm.get_weights()
    with pytest.raises(ValueError, match=r"built for 2 input features, got shape \(1, 5\)"):
        lstm(np.ones((1, 3, 5)))
    with pytest.raises(ValueError, match=r"initial_state should be 2 tensor\(s\) of shape \(1, 3\), \(1, 3\)"):
        lstm(np.ones((1, 3, 2)), initial_state=[np.zeros((1, 3))])
    for a, b in zip(before, lstm.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="units must be a positive integer"):
        layers.GRU(0)
    with pytest.raises(ValueError, match="dropout must be in"):
        layers.LSTM(2, dropout=1.5)


def test_a_cell_called_on_a_sequence_says_to_wrap_it_in_rnn():
    cell = layers.LSTMCell(2)
    with pytest.raises(ValueError, match=r"wrap it: adv.layers.RNN\(cell\)"):
        cell(np.ones((1, 3, 2)), [np.zeros((1, 2)), np.zeros((1, 2))])


# ---------------------------------------------------------------------------
# Dropout in cells: only in training, one mask per sequence
# ---------------------------------------------------------------------------
def test_recurrent_dropout_is_active_only_in_training():
    x = np.random.default_rng(10).normal(size=(3, 4, 2))
    lstm = layers.LSTM(3, dropout=0.5, recurrent_dropout=0.5, seed=1, dtype="float64")
    plain = layers.LSTM(3, dtype="float64")
    lstm.build(x.shape)
    plain.build(x.shape)
    plain.set_weights(lstm.get_weights())
    np.testing.assert_allclose(lstm(x).numpy(), plain(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(lstm(x, training=False).numpy(), plain(x).numpy(), rtol=1e-12)
    assert not np.allclose(lstm(x, training=True).numpy(), plain(x).numpy())


# ---------------------------------------------------------------------------
# MultiHeadAttention
# ---------------------------------------------------------------------------
def numpy_mha(q, v, k, weights, mask=None):
    Wq, bq, Wk, bk, Wv, bv, Wo, bo = weights
    Q = np.einsum("btd,dhk->bhtk", q, Wq) + bq[None, :, None]
    K = np.einsum("bsd,dhk->bhsk", k, Wk) + bk[None, :, None]
    V = np.einsum("bsd,dhk->bhsk", v, Wv) + bv[None, :, None]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask[:, None], S, -1e9)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return np.einsum("bhtv,hvo->bto", A @ V, Wo) + bo, A


def test_multi_head_attention_has_keras_weights_and_matches_numpy():
    rng = np.random.default_rng(11)
    q, v = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 4, 5))
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, dtype="float64")
    out, scores = mha(q, v, return_attention_scores=True)
    assert [w.path for w in mha.weights] == [f"{mha.name}/{p}/{n}"
                                             for p in ("query", "key", "value", "attention_output")
                                             for n in ("kernel", "bias")]
    assert [w.shape for w in mha.weights] == [(6, 2, 3), (2, 3), (5, 2, 3), (2, 3), (5, 2, 4), (2, 4),
                                              (2, 4, 6), (6,)]
    random_weights(mha, 12)
    mask = rng.normal(size=(2, 3, 4)) > 0
    mask[..., 1] = True
    out, scores = mha(q, v, attention_mask=mask, return_attention_scores=True)
    want, A = numpy_mha(q, v, v, [w.numpy() for w in mha.weights], mask)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(scores.numpy(), A, rtol=1e-10, atol=1e-300)
    assert out.shape == (2, 3, 6) and scores.shape == (2, 2, 3, 4)
    np.testing.assert_allclose(mha(q, v, attention_mask=mask).numpy(), want, rtol=1e-10)


def test_causal_mask_lets_each_step_see_only_the_past():
    x = np.random.default_rng(13).normal(size=(1, 4, 4))
    mha = layers.MultiHeadAttention(num_heads=1, key_dim=2, dtype="float64")
    _, scores = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    assert np.all(np.triu(scores.numpy()[0, 0], 1) == 0)
    changed = x.copy()
    changed[:, -1] += 5.0                     # the future changes ...
    a, b = mha(x, x, use_causal_mask=True).numpy(), mha(changed, changed, use_causal_mask=True).numpy()
    np.testing.assert_allclose(a[:, :-1], b[:, :-1], rtol=1e-12)    # ... and the past does not see it


def test_attention_is_one_op_on_the_tape_with_its_factor():
    x = adv.constant(np.random.default_rng(14).normal(size=(2, 3, 4)))
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2)
    with adv.GradientTape() as tape:
        tape.watch(x)
        y = adv.sum(mha(x, x))
    names = [n.rule.name for n in tape.nodes]
    assert names.count("attention") == 1 and "softmax" not in names and "exp" not in names
    scopes = {n.scope for n in tape.nodes}
    assert {f"{mha.name}/query", f"{mha.name}/attention_output"} <= scopes
    factors = {s.name: s.factor for s in adv.rules.TABLE["attention"].inputs}
    assert factors["v"].startswith("Aᵀ ḡ") and factors["mask"] is None
    assert tape.gradient(y, x).shape == x.shape


def test_attention_gradients_of_gradients_match_finite_differences():
    """The VJP is written with rule calls, so a Hessian-vector product through attention works."""
    rng = np.random.default_rng(15)
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    mask = np.tril(np.ones((3, 4), dtype=bool), 1)

    def grad_norm(qq, kk, vv):
        with adv.GradientTape() as inner:
            inner.watch([qq, kk, vv])
            y = adv.sum(layers.scaled_dot_product_attention(qq, kk, vv, mask=mask) ** 2)
        return adv.sum(adv.square(adv.concatenate([adv.reshape(g, (-1,)) for g in inner.gradient(y, [qq, kk, vv])])))

    report = adv.check_grads(grad_norm, [q, k, v])
    assert report.ok, report


def test_multi_head_attention_errors_name_the_layer_shapes_and_fix_and_change_nothing():
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="self_attn")
    with pytest.raises(ValueError, match=r"attention_mask should have shape \(2, 5, 4\)"):
        mha(np.ones((2, 5, 6)), np.ones((2, 4, 6)), attention_mask=np.ones((2, 5, 5), dtype=bool))
    assert not mha.built
    with pytest.raises(ValueError, match=r"self_attn: query should have shape \(batch, sequence, features\), "
                                         r"got \(2, 6\)\. Add a sequence axis"):
        mha(np.ones((2, 6)), np.ones((2, 6)))
    with pytest.raises(ValueError, match=r"key and value must have the same sequence length.*key \(2, 3, 4\)"):
        mha(np.ones((2, 5, 6)), np.ones((2, 4, 6)), key=np.ones((2, 3, 4)))
    assert not mha.built and mha.weights == []
    mha(np.ones((2, 5, 6)), np.ones((2, 4, 6)))
    before = mha.get_weights()
    with pytest.raises(ValueError, match=r"built for query features of size 6, got query of shape \(2, 5, 7\)"):
        mha(np.ones((2, 5, 7)), np.ones((2, 4, 6)))
    with pytest.raises(ValueError, match=r"attention_mask should have shape \(2, 5, 4\).*got \(2, 4, 5\)"):
        mha(np.ones((2, 5, 6)), np.ones((2, 4, 6)), attention_mask=np.ones((2, 4, 5), dtype=bool))
    with pytest.raises(TypeError, match=r"mha\(x, x\)"):
        mha(np.ones((2, 5, 6)))
    for a, b in zip(before, mha.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="key_dim must be a positive integer"):
        layers.MultiHeadAttention(2, key_dim=0)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast to \(\.\.\., Tq, Tk\) = \(2, 4\)"):
        layers.scaled_dot_product_attention(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 1)),
                                            mask=np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="query and key must have the same feature size"):
        layers.scaled_dot_product_attention(np.ones((2, 3)), np.ones((4, 2)), np.ones((4, 1)))


def test_query_and_value_masks_combine_as_in_keras():
    rng = np.random.default_rng(20)
    q, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 4))
    mha = layers.MultiHeadAttention(num_heads=1, key_dim=2, dtype="float64")
    v_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=bool)
    q_mask = np.array([[1, 0, 1], [1, 1, 1]], dtype=bool)
    _, scores = mha(q, v, value_mask=v_mask, query_mask=q_mask, return_attention_scores=True)
    A = scores.numpy()
    assert np.all(A[0, :, :, 2:] == 0) and np.all(A[0, :, 1] == 0)          # padded keys; a masked query row
    np.testing.assert_allclose(A[1].sum(-1), 1.0)
    explicit = v_mask[:, None, :] & q_mask[:, :, None]
    _, same = mha(q, v, attention_mask=explicit, return_attention_scores=True)
    np.testing.assert_array_equal(same.numpy(), A)


def test_attention_dropout_is_active_only_in_training():
    x = np.random.default_rng(16).normal(size=(2, 3, 4))
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, dropout=0.5, seed=0, dtype="float64")
    a = mha(x, x).numpy()
    np.testing.assert_allclose(mha(x, x, training=False).numpy(), a, rtol=1e-12)
    assert not np.allclose(mha(x, x, training=True).numpy(), a)
    _, scores = mha(x, x, training=True, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy().sum(-1), 1.0, rtol=1e-12)     # before dropout, as Keras' MHA
    att = layers.Attention(dropout=0.5, seed=0, dtype="float64")
    out, weights = att([x, x], training=True, return_attention_scores=True)
    np.testing.assert_allclose(out.numpy(), weights.numpy() @ x, rtol=1e-12)   # after dropout, as Keras' Attention
    assert (weights.numpy() == 0).any()


def test_luong_attention_layer_matches_numpy():
    rng = np.random.default_rng(17)
    q, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)
    att = layers.Attention(use_scale=True, dtype="float64")
    out, A = att([q, v], mask=[None, v_mask], return_attention_scores=True)
    S = np.where(v_mask[:, None], q @ np.swapaxes(v, 1, 2), -np.inf)
    want_A = np.exp(S - S.max(-1, keepdims=True))
    want_A /= want_A.sum(-1, keepdims=True)
    np.testing.assert_allclose(A.numpy(), want_A, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), want_A @ v, rtol=1e-12)
    assert [w.name.split("/")[-1] for w in att.weights] == ["scale"]


# ---------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------
def test_save_and_load_weights_round_trip_for_recurrent_and_attention_models(tmp_path):
    class Tagger(adv.Model):
        def __init__(self):
            super().__init__(dtype="float64")
            self.bi = layers.Bidirectional(layers.GRU(3, return_sequences=True, dtype="float64"), dtype="float64")
            self.attn = layers.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
            self.lstm = layers.LSTM(2, dtype="float64")

        def call(self, x):
            h = self.bi(x)
            return self.lstm(self.attn(h, h))

    x = np.random.default_rng(18).normal(size=(2, 4, 3))
    a, b = Tagger(), Tagger()
    want = a(x).numpy()
    b(x)
    a.save_weights(tmp_path / "w.npz")
    b.load_weights(tmp_path / "w.npz")
    np.testing.assert_allclose(b(x).numpy(), want, rtol=1e-12)
    assert len(a.weights) == 2 * 3 + 8 + 3
    keys = set(np.load(tmp_path / "w.npz").files)
    assert any(k.startswith("attn/") and k.endswith("/kernel") for k in keys)


def test_model_with_an_lstm_trains_with_fit():
    rng = np.random.default_rng(19)
    x = rng.normal(size=(32, 5, 2))
    y = x.sum(axis=(1, 2))[:, None]
    model = adv.Sequential([layers.LSTM(8), layers.Dense(1)])
    model.compile(optimizer=adv.optimizers.Adam(0.02), loss="mse")
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_every_layer_is_in_adv_layers():
    names = ["RNN", "SimpleRNN", "SimpleRNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell", "Bidirectional",
             "MultiHeadAttention", "Attention", "scaled_dot_product_attention"]
    assert [n for n in names if not hasattr(layers, n)] == []


def test_recurrent_and_attention_layers_in_the_functional_api():
    x = layers.Input(shape=(5, 3))
    h = layers.Bidirectional(layers.LSTM(4, return_sequences=True))(x)
    a = layers.MultiHeadAttention(num_heads=2, key_dim=3)(h, h, use_causal_mask=True)
    out, state = layers.GRU(3, return_state=True)(a)
    model = adv.Model(x, [out, state])
    assert [tuple(t.shape) for t in (h, a, out, state)] == [(None, 5, 8), (None, 5, 8), (None, 3), (None, 3)]
    y, s = model(np.ones((2, 5, 3)))
    assert y.shape == (2, 3) and np.array_equal(y.numpy(), s.numpy())


def test_regularizers_of_a_cell_add_to_the_layer_losses():
    lstm = layers.LSTM(2, kernel_regularizer=adv.regularizers.L2(0.5), dtype="float64")
    lstm(np.ones((1, 3, 2)))
    K = lstm.cell.kernel.numpy()
    assert len(lstm.losses) == 1
    np.testing.assert_allclose(float(lstm.losses[0]), 0.5 * np.sum(K ** 2), rtol=1e-12)


def test_multi_head_attention_regularizer_covers_the_four_kernels():
    mha = layers.MultiHeadAttention(num_heads=1, key_dim=2, kernel_regularizer=adv.regularizers.L2(1.0),
                                    dtype="float64")
    mha(np.ones((1, 2, 3)), np.ones((1, 2, 3)))
    kernels = [v.numpy() for v in mha.weights if v.name.endswith("kernel")]
    assert len(kernels) == 4
    np.testing.assert_allclose(sum(float(l) for l in mha.losses), sum(np.sum(k ** 2) for k in kernels), rtol=1e-12)


def test_a_mask_skips_padded_steps_as_keras():
    """Right-padded sequences with a mask give what the unpadded ones give (Embedding(mask_zero=True) use)."""
    rng = np.random.default_rng(21)
    lengths = [4, 2]
    x = rng.normal(size=(2, 4, 3))
    x[1, 2:] = 0.0
    mask = np.arange(4)[None, :] < np.array(lengths)[:, None]
    lstm = layers.LSTM(3, return_sequences=True, return_state=True, dtype="float64")
    seq, h, c = lstm(x, mask=mask)
    for b, n in enumerate(lengths):
        alone, h_alone, c_alone = lstm(x[b:b + 1, :n])
        np.testing.assert_allclose(h.numpy()[b], h_alone.numpy()[0], rtol=1e-12)
        np.testing.assert_allclose(c.numpy()[b], c_alone.numpy()[0], rtol=1e-12)
        np.testing.assert_allclose(seq.numpy()[b, :n], alone.numpy()[0], rtol=1e-12)
        np.testing.assert_allclose(seq.numpy()[b, n:], np.broadcast_to(h_alone.numpy()[0], (4 - n, 3)), rtol=1e-12)
    bi = layers.Bidirectional(layers.GRU(2, return_sequences=True, dtype="float64"), dtype="float64")
    both = bi(x, mask=mask).numpy()
    assert np.all(both[1, 2:] == 0)                        # zero_output_for_mask, as Keras' Bidirectional
    short = bi(x[1:, :2]).numpy()
    np.testing.assert_allclose(both[1, :2], short[0], rtol=1e-12)
    with pytest.raises(ValueError, match=r"mask should have shape \(batch, time\) = \(2, 4\), got \(2, 3\)"):
        lstm(x, mask=mask[:, :3])


def test_an_empty_batch_gives_empty_outputs():
    assert layers.LSTM(3)(np.zeros((0, 5, 2))).shape == (0, 3)
    assert layers.MultiHeadAttention(2, 3)(np.zeros((0, 4, 5)), np.zeros((0, 4, 5))).shape == (0, 4, 5)
