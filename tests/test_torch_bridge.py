"""The PyTorch bridge: recordings, traces with PyTorch's gradients, why-None in PyTorch, export."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import code_lines  # noqa: E402

import autodiff_viz as adv  # noqa: E402

HERE = __file__
F = torch.nn.functional


def line_of(tag) -> int:
    return int(code_lines.line_of(HERE, tag).rsplit(":", 1)[1])


@pytest.fixture
def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()


def test_record_keeps_ops_modules_lines_and_the_names_the_lines_assign(net):
    x = torch.randn(5, 3, dtype=torch.float64)
    with adv.torch.record() as rec:
        logits = net(x)                                     # <- forward
        loss = F.cross_entropy(logits, torch.tensor([0, 1, 1, 0, 1]))
    ops = [op for op in rec.ops if op.kind == "op"]
    assert [op.name for op in ops][:3] == ["linear", "tanh", "linear"]
    assert [op.scope for op in ops[:3]] == ["sequential/0", "sequential/1", "sequential/2"]
    assert ops[0].location == (HERE, line_of("forward"))
    assert rec.name_of(logits) == "logits" and rec.name_of(loss) == "loss"
    assert rec.name_of(net[0].weight) == "0.weight"
    assert ops[0].grad_enabled and not ops[0].inference


def test_modules_a_forward_makes_and_drops_keep_their_own_names():
    """transformers' ``DistilBertForSequenceClassification.forward`` calls ``nn.ReLU()(pooled_output)`` and later
    ``CrossEntropyLoss()(logits, labels)``, each module made on the spot and dropped. Python may give the loss
    the ReLU's freed address; the recording must not then take the loss for the ReLU (the figure drew the loss
    as a second ``relu`` box, without its formula)."""
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x, y):
            h = torch.nn.ReLU()(self.fc(x))
            torch.nn.Tanh()                         # made and dropped between the two, as a library's code may
            return torch.nn.CrossEntropyLoss()(h, y)

    torch.manual_seed(0)
    head = Head()
    with adv.torch.record() as rec:
        loss = head(torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1]))
    scopes = {op.name: op.scope for op in rec.ops if op.kind == "op"}
    assert scopes["relu"] == "head/relu"
    assert scopes["cross_entropy"] == "head/crossentropyloss", scopes
    assert rec.name_of(loss) == "loss"


def test_trace_gradients_are_pytorchs_own_bit_for_bit(net):
    x = torch.randn(6, 3, dtype=torch.float64)
    y = torch.tensor([0, 1, 1, 0, 1, 0])
    with adv.torch.record() as rec:
        h = torch.tanh(net[0](x))
        logits = net[2](h)
        loss = F.cross_entropy(logits, y)
        loss.backward()
    tr = rec.trace(loss, net)
    for name, p in net.named_parameters():
        if p.grad is None:
            continue
        node = next(n for n in tr.nodes if n.name == name)
        assert np.array_equal(node.grad.data, p.grad.numpy()), name
    tanh_edge = next(e for e in tr.edges if tr.node(e.dst).op == "tanh")
    assert tanh_edge.factor == adv.rules.TABLE["tanh"].spec(0).factor.join(["∂y/∂x = ", ""])
    assert tanh_edge.contribution is not None
    assert tr.node(tr.target).title == "loss" and tr.steps[0] == tr.target
    assert tanh_edge.formula == "ḡ_x = ḡ_y · (1 − y²)"
    again = adv.Trace.from_json(tr.to_json())             # the same plain-data trace as the numpy engine
    assert [n.id for n in again.nodes] == [n.id for n in tr.nodes]
    assert "<svg" in tr.to_svg("both")


def test_ops_without_a_rule_get_a_note_not_a_made_up_factor(net):
    x = torch.randn(2, 3, dtype=torch.float64)
    with adv.torch.record() as rec:
        loss = net(x).logcumsumexp(dim=1).sum()
    tr = rec.trace(loss)
    e = next(e for e in tr.edges if tr.node(e.dst).op == "logcumsumexp")
    assert e.factor == "factor not shown for torch.logcumsumexp"


# ----- why is .grad None? one test per reason, with the user's line -------------
def _lin():
    torch.manual_seed(1)
    return torch.nn.Linear(3, 1)


def test_no_grad_on_the_path():
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        with torch.no_grad():                               # <- no_grad
            z = lin(x)                                      # <- linear
        loss = (z * 2).sum()
    ex = rec.explain(loss, lin.weight)
    assert ex.reason == "no_grad" and ex.location == f"{HERE}:{line_of('no_grad')}"
    assert ex.locations[1] == f"{HERE}:{line_of('linear')}"          # the op that ran under it
    assert "torch.no_grad()" in ex.message


def test_inference_mode_on_the_path():
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        with torch.inference_mode():                        # <- inference
            z = lin(x)
        loss = z.clone().sum()
    ex = rec.explain(loss, lin.weight)
    assert ex.reason == "inference_mode" and ex.location.endswith(f":{line_of('inference')}")


@pytest.mark.parametrize("how", ["detach", "data"])
def test_detach_and_data_cut_the_path(how):
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        out = lin(x)
        cut = out.detach() if how == "detach" else out.data    # <- cut
        loss = (cut ** 2).sum()
    ex = rec.explain(loss, lin.weight)
    assert ex.reason == "detached" and ex.location.endswith(f":{line_of('cut')}")


@pytest.mark.parametrize("escape", ["item", "tolist", "numpy"])
def test_a_value_that_left_as_python_and_came_back_with_torch_tensor(escape):
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        s = lin(x).sum()
        v = getattr(s.detach() if escape == "numpy" else s, escape)()   # <- escape
        loss = torch.tensor(v, requires_grad=True) * 2                    # <- rewrap
    ex = rec.explain(loss, lin.weight)
    if escape == "numpy":          # .numpy() needs .detach() first in PyTorch: the detach is the first cut
        assert ex.reason in ("detached", "left_the_graph")
    else:
        assert ex.reason == "left_the_graph"
        assert ex.location.endswith(f":{line_of('escape')}")
        assert f"{escape}()" in ex.message and "torch.tensor" in ex.message


def test_a_frozen_parameter():
    lin, x = _lin(), torch.randn(4, 3)
    lin.weight.requires_grad_(False)
    with adv.torch.record() as rec:
        loss = lin(x).sum()
    assert rec.explain(loss, lin.weight).reason == "requires_grad_false"
    assert adv.torch.explain(loss, lin)["weight"].reason == "requires_grad_false"
    assert adv.torch.explain(loss, lin)["bias"].reason in ("connected", "read_before_backward")


def test_a_parameter_unused_in_this_forward():
    lin, other, x = _lin(), torch.nn.Linear(3, 1), torch.randn(4, 3)
    with adv.torch.record() as rec:
        loss = lin(x).sum()
    assert rec.explain(loss, other.weight).reason == "not_used"
    assert adv.torch.explain(loss, [other.weight])[0].reason == "not_used"


def test_a_non_leaf_tensor_without_retain_grad():
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        hidden = lin(x)
        loss = torch.tanh(hidden).sum()
        loss.backward()
    with pytest.warns(UserWarning, match="not a leaf"):
        assert hidden.grad is None
    ex = rec.explain(loss, hidden)
    assert ex.reason == "non_leaf" and "retain_grad()" in ex.message and "hidden" in ex.message


def test_integer_values_have_no_gradient():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with adv.torch.record() as rec:
        n = (x * 3).long()                                   # <- long
        loss = (n * 2).sum().double()
    ex = rec.explain(loss, x)
    assert ex.reason == "integer_dtype" and ex.location.endswith(f":{line_of('long')}")
    assert adv.torch.explain(loss, torch.tensor([1, 2])).reason == "integer_dtype"


def test_integer_labels_are_named_with_their_own_dtype():
    """The edge from int64 labels into a cross-entropy says it carries no gradient because it is the labels (a loss's
    role), never "integer values (float32)" (the float32 loss is not what has no gradient)."""
    logits, labels = torch.randn(4, 3, requires_grad=True), torch.tensor([0, 2, 1, 1])
    with adv.torch.record() as rec:
        loss = torch.nn.functional.cross_entropy(logits, labels)
    edges = rec.trace(loss).to_json()
    assert "the labels of torch.cross_entropy: a loss sends its gradient to the prediction only" in edges
    assert "integer values (float32)" not in edges


def test_grad_read_after_zero_grad_before_backward():
    lin, x = _lin(), torch.randn(4, 3)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    with adv.torch.record() as rec:
        opt.zero_grad(set_to_none=True)
        loss = lin(x).sum()
        seen = lin.weight.grad                               # <- read
        loss.backward()
    assert seen is None
    ex = rec.explain(loss, lin.weight)
    assert ex.reason == "read_before_backward" and ex.location.endswith(f":{line_of('read')}")


def test_a_non_scalar_target_without_gradient():
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        out = lin(x)
        with pytest.raises(RuntimeError, match="scalar"):
            out.backward()
    assert rec.explain(out, lin.weight).reason == "non_scalar_target"


def test_explain_marks_the_broken_edge_in_the_trace():
    lin, x = _lin(), torch.randn(4, 3)
    with adv.torch.record() as rec:
        cut = lin(x).detach()
        loss = (cut ** 2).sum()
    tr = rec.trace(loss, [lin.weight])
    marked = rec.explain(loss, lin.weight).mark(tr)
    assert marked.marks and "detached" in marked.marks[0].reason


# ----- exercise mode on a PyTorch worksheet ---------------------------------------
def test_compare_on_a_recording_names_the_first_wrong_intermediate(net):
    x = torch.randn(5, 3, dtype=torch.float64)
    with adv.torch.record() as rec:
        z = net[0](x)
        h = torch.tanh(z)
        out = net[2](h)
        loss = (out ** 2).mean()
    dout = 2 * out.detach() / out.numel()
    dh = dout @ net[2].weight.detach()
    dz_wrong = dh * (1 - h.detach())                         # forgot the square
    cmp = rec.compare(loss, {"out": dout, "h": dh, "z": dz_wrong})
    assert [r.status for r in cmp] == ["close", "close", "wrong"] or cmp.first_wrong.name == "z"
    assert cmp.first_wrong.name == "z" and any("tanh" in f for f in cmp.first_wrong.factors)
    with pytest.raises(KeyError, match="closest first"):
        rec.compare(loss, {"zz": dz_wrong})


# ----- export -----------------------------------------------------------------------
def test_to_module_matches_the_model_and_load_from_copies_back():
    adv.layers.set_random_seed(3)
    model = adv.Sequential([adv.layers.Input((4,)), adv.layers.Dense(8, activation="tanh", dtype="float64"),
                            adv.layers.Dense(3, dtype="float64")])
    x = np.random.default_rng(0).normal(size=(6, 4))
    module = adv.torch.to_module(model)
    np.testing.assert_allclose(module(torch.as_tensor(x)).detach().numpy(), model.predict(x), rtol=1e-9)
    with torch.no_grad():
        for p in module.parameters():
            p.mul_(0.5)
    adv.torch.load_from(model, module)
    np.testing.assert_allclose(module(torch.as_tensor(x)).detach().numpy(), model.predict(x), rtol=1e-9)


def test_a_layer_without_a_counterpart_is_named():
    class Odd(adv.layers.Layer):
        def call(self, x):
            return x * 2
    model = adv.Sequential([adv.layers.Input((2,)), Odd(name="odd_one")])
    with pytest.raises(TypeError, match="odd_one"):
        adv.torch.to_module(model)


# ----- bad input never crashes the recording ----------------------------------------------
def test_meta_sparse_and_complex_tensors_are_recorded_without_crashing():
    with adv.torch.record() as rec:
        m = torch.empty(3, 2, device="meta") * 2
        s = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), check_invariants=True)
        d = (s * 3).to_dense()
        c = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        loss = (c * c.conj()).real.sum()
    assert m.is_meta and d.shape == (2, 2)
    tr = rec.trace(loss, [c])
    assert tr.target is not None
    assert rec.trace(d).nodes


def _rng_data(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _models():
    L = adv.layers
    adv.layers.set_random_seed(11)
    cnn = adv.Sequential([L.Input((9, 9, 2)), L.Conv2D(4, 3, strides=2, padding="same", activation="relu"),
                          L.BatchNormalization(), L.MaxPooling2D(2, padding="same"), L.Conv2D(3, 2),
                          L.Dropout(0.3), L.Flatten(), L.Dense(5)])
    cnn1d = adv.Sequential([L.Input((12, 3)), L.Conv1D(4, 3, padding="causal", dilation_rate=2),
                            L.AveragePooling1D(2), L.GlobalMaxPooling1D(), L.Dense(2)])
    rnns = {kind: adv.Sequential([L.Input((7, 3)), getattr(L, kind)(5, return_sequences=True),
                                  getattr(L, kind)(4), L.Dense(2)]) for kind in ("SimpleRNN", "LSTM", "GRU")}
    tokens = adv.Sequential([L.Input((6,), dtype="int64"), L.Embedding(10, 4), L.LSTM(3), L.Dense(1)])
    x = L.Input((6,))
    h = L.Dense(6, activation="tanh")(x)
    skip = L.LayerNormalization()(L.Add()([h, x]))
    both = L.Concatenate()([skip, L.Dense(2)(x)])
    functional = adv.Model(x, L.Dense(3)(both))
    decoder = adv.Sequential([L.Input((5, 5, 2)), L.Conv2DTranspose(3, 3, strides=2, padding="same", activation="tanh"),
                              L.Conv2DTranspose(2, (2, 3), strides=(2, 1), padding="valid", output_padding=(1, 0)),
                              L.Conv2DTranspose(2, 3, dilation_rate=2), L.Flatten(), L.Dense(2)])
    unet = adv.Sequential([L.Input((6, 6, 2)), L.Conv2D(3, 3, padding="same"), L.MaxPooling2D(2),
                           L.UpSampling2D(2), L.ZeroPadding2D(((1, 0), (2, 1))), L.Cropping2D(((0, 1), (1, 2))),
                           L.UpSampling2D((1, 2), interpolation="bilinear"), L.Flatten(), L.Dense(2)])
    seq1d = adv.Sequential([L.Input((5, 3)), L.UpSampling1D(3), L.ZeroPadding1D((2, 1)), L.Cropping1D((1, 3)),
                            L.Conv1D(2, 3), L.Flatten(), L.Dense(1)])
    decoder1d = adv.Sequential([L.Input((6, 3)), L.Conv1DTranspose(4, 4, strides=3, padding="same"),
                                L.Conv1DTranspose(2, 2, strides=3), L.GlobalMaxPooling1D()])
    activations = adv.Sequential([L.Input((6,)), L.Dense(5), L.LeakyReLU(0.1), L.Dense(5),
                                  L.ReLU(max_value=1.5, negative_slope=0.05, threshold=0.1), L.Dense(4), L.ELU(0.7),
                                  L.Dense(4), L.PReLU(alpha_initializer="ones"), L.Dense(3), L.Softmax()])
    rms = adv.Sequential([L.Input((5, 4)), L.Dense(4), L.RMSNormalization(), L.Flatten(), L.Dense(2),
                          L.RMSNormalization(epsilon=1e-3)])
    return [("cnn", cnn, _rng_data((4, 9, 9, 2))), ("rms", rms, _rng_data((4, 5, 4))),
            ("cnn1d", cnn1d, _rng_data((4, 12, 3))),
            ("activations", activations, _rng_data((4, 6))), ("decoder", decoder, _rng_data((4, 5, 5, 2))),
            ("decoder1d", decoder1d, _rng_data((4, 6, 3))), ("unet", unet, _rng_data((4, 6, 6, 2))),
            ("seq1d", seq1d, _rng_data((4, 5, 3))),
            *[(k, m, _rng_data((4, 7, 3))) for k, m in rnns.items()],
            ("tokens", tokens, np.random.default_rng(1).integers(0, 10, size=(4, 6))),
            ("functional", functional, _rng_data((4, 6)))]


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-9), ("float32", 1e-5)])
def test_every_exportable_layer_family_matches_its_pytorch_twin(dtype, rtol):
    adv.layers.set_floatx(dtype)
    try:
        for name, model, x in _models():
            model.compile(optimizer="sgd", loss="mse")
            y = model.predict(x)
            model.fit(x, y + 0.1, epochs=1, verbose=0)          # moving statistics move away from 0 and 1
            want = model.predict(x)
            module = adv.torch.to_module(model).eval()
            xt = torch.as_tensor(x if x.dtype.kind in "iu" else x.astype(dtype))
            got = module(xt).detach().numpy()
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=name)
    finally:
        adv.layers.set_floatx("float32")


def test_weights_trained_in_pytorch_come_back_with_load_from():
    adv.layers.set_floatx("float64")
    try:
        models = dict((n, (m, x)) for n, m, x in _models())
    finally:
        adv.layers.set_floatx("float32")
    for name in ("cnn", "GRU", "functional", "activations", "decoder", "rms"):
        model, x = models[name]
        model.predict(x)
        module = adv.torch.to_module(model)
        opt = torch.optim.SGD(module.parameters(), lr=0.1)
        module.train()
        loss = module(torch.as_tensor(x)).pow(2).mean()
        loss.backward()
        opt.step()
        module.eval()
        adv.torch.load_from(model, module)
        np.testing.assert_allclose(model.predict(x), module(torch.as_tensor(x)).detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def test_subclassed_models_and_unexportable_settings_are_named():
    class Net(adv.Model):
        def __init__(self):
            super().__init__()
            self.d = adv.layers.Dense(2)

        def call(self, x):
            return self.d(x)
    net = Net()
    net(np.ones((1, 3)))
    with pytest.raises(TypeError, match="subclassed model"):
        adv.torch.to_module(net)
    gru = adv.Sequential([adv.layers.Input((4, 2)), adv.layers.GRU(3, reset_after=False, name="old_gru")])
    with pytest.raises(TypeError, match="old_gru.*reset_after=False"):
        adv.torch.to_module(gru)
    with pytest.warns(UserWarning, match="deprecated"):
        legacy = adv.layers.LayerNormalization(rms_scaling=True, name="legacy_rms")
    model = adv.Sequential([adv.layers.Input((3,)), legacy])
    with pytest.raises(TypeError, match="legacy_rms.*rms_scaling=True.*RMSNormalization"):
        adv.torch.to_module(model)
    columns = adv.Sequential([adv.layers.Input((3, 4)), adv.layers.RMSNormalization(axis=1, name="over_rows")])
    with pytest.raises(TypeError, match=r"over_rows.*trailing axes.*\[1\] of 3"):
        adv.torch.to_module(columns)


def test_a_torch_compiled_module_is_recorded_without_crashing():
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
    compiled = torch.compile(net, backend="eager")
    x = torch.randn(4, 3)
    with adv.torch.record() as rec, pytest.warns(UserWarning, match="global hooks"):
        loss = compiled(x).sum()
        loss.backward()
    trace = rec.trace(loss, net)
    assert trace.target is not None
    assert rec.explain(loss, net[0].weight).reason == "connected"


def test_layers_called_on_their_own_have_distinct_parameter_names():
    """model[0](x) then model[2](h): the two weights are named apart, not both 'weight'."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x = torch.randn(5, 3)
    with adv.torch.record() as rec:
        loss = model[2](model[1](model[0](x))).sum()
    assert rec.name_of(model[0].weight) == "linear.weight"
    assert rec.name_of(model[2].weight) == "linear_1.weight"
    with adv.torch.record() as rec:
        loss = model(x).sum()
    assert rec.name_of(model[0].weight) == "0.weight"            # called through the model: its own names
    assert loss.requires_grad


def _docs_network():
    """The network of docs/pytorch.md ("Record, trace, show")."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    return net, torch.randn(5, 3), torch.tensor([0, 1, 1, 0, 1])


def test_a_recorded_step_with_opt_step_is_traced_as_at_the_backward_pass():
    """Issue 42: the docs' own network recorded with ``loss.backward(); opt.step()`` inside the ``with`` made
    ``rec.trace(loss, net)`` raise "modified by an inplace operation". The trace shows the weights and
    gradients of the backward pass; afterwards the network holds its updated weights, versions unchanged."""
    net, x, y = _docs_network()
    w0 = net[2].weight.detach().clone()
    opt = torch.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
    with adv.torch.record() as rec:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    w1, version = net[2].weight.detach().clone(), net[2].weight._version
    assert not torch.equal(w0, w1)
    node = next(n for n in rec.trace(loss, net).nodes if n.name == "2.weight")
    assert np.array_equal(node.value.data, w0.numpy())
    assert np.array_equal(node.grad.data, net[2].weight.grad.numpy())
    assert torch.equal(net[2].weight.detach(), w1) and net[2].weight._version == version
    assert [op.name for op in rec.ops if op.kind == "update"] == ["SGD.step"]


def test_a_hand_written_sgd_step_is_traced_as_at_the_backward_pass():
    """``p -= lr * p.grad`` under ``torch.no_grad()`` (the micrograd / makemore update) inside the recording."""
    net, x, y = _docs_network()
    w0 = net[0].weight.detach().clone()
    with adv.torch.record() as rec:
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= 0.1 * p.grad
    node = next(n for n in rec.trace(loss, net).nodes if n.name == "0.weight")
    assert np.array_equal(node.value.data, w0.numpy())
    assert torch.equal(net[0].weight.detach(), w0 - 0.1 * net[0].weight.grad)


def test_a_tensor_resized_after_the_target_names_the_cause_and_the_order_that_works():
    w, x = torch.randn(3, requires_grad=True), torch.randn(3)
    with adv.torch.record() as rec:
        loss = (w * x).sum()                  # mul saves x for w's gradient
        loss.backward()
        x.resize_(4)
    with pytest.raises(RuntimeError, match=r"changed in place.*to shape \(4,\).*rec\.trace\(\.\.\.\) before"):
        rec.trace(loss, [w])


def test_the_recording_copies_nothing_when_nothing_is_written_in_place():
    net, x, y = _docs_network()
    with adv.torch.record() as rec:
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
    assert rec._saved == []


def test_an_in_place_op_passes_back_its_own_derivative_to_the_value_it_overwrote():
    """``h.relu_()`` and ``k += r`` overwrite ``h`` and ``k``: the edge from ``h``'s old value carries ``ḡ ⊙ 1[h > 0]``
    and those into ``k`` carry ``ḡ``, as autograd's own node computes them (``torch.autograd.grad`` asked for the
    tensor ``h``, which now *is* the output, answers ``ḡ`` itself)."""
    torch.manual_seed(0)
    x = torch.randn(8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, dtype=torch.float64)
    with adv.torch.record() as rec:
        h = x * 2
        before = h.detach().clone()
        h.relu_()
        k = x * 3
        r = x * 4
        k += r
        loss = (h * w).sum() + (k * w).sum()
    tr = rec.trace(loss, x)
    relu = next(e for e in tr.edges if tr.node(e.dst).op == "relu_")
    assert np.array_equal(relu.contribution.data, (w * (before > 0)).numpy())
    add = [e for e in tr.edges if tr.node(e.dst).op == "add_"]
    assert len(add) == 2 and all(np.array_equal(e.contribution.data, w.numpy()) for e in add)


def test_a_trace_leaves_every_grad_the_learner_holds_as_it_was():
    """``rec.trace`` backpropagates again; the parameters' ``.grad`` (the same tensors, the same values) and a
    retained intermediate's ``.grad`` are as ``loss.backward()`` left them."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    with adv.torch.record() as rec:
        h = net[0](torch.randn(5, 3))
        h.retain_grad()
        loss = net[2](torch.tanh(h)).pow(2).mean()
        loss.backward()
    held = {name: (p.grad, p.grad.clone()) for name, p in net.named_parameters()}
    h_grad = h.grad.clone()
    rec.trace(loss, net)
    rec.trace(loss, net)
    for name, p in net.named_parameters():
        assert p.grad is held[name][0] and torch.equal(p.grad, held[name][1]), name
    assert torch.equal(h.grad, h_grad)
