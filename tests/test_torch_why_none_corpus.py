"""Why is ``.grad`` None (or zero)? Real public PyTorch questions, reproduced inside ``adv.torch.record()``.

Each test reduces one question (cited by URL in its docstring) to the user's
structure and mistake, asserts PyTorch's own facts first (None, zeros, or the
error it raises), then what ``rec.explain`` says: the reason whose fix fits,
the user's guilty line (``location``), and the learner's names.
"""
import copy

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import code_lines  # noqa: E402

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.torch  # noqa: E402,F401

HERE = __file__


def where(tag) -> str:
    return code_lines.line_of(HERE, tag)


def test_fastai_accuracy_argmax_then_comparison_names_argmax_not_a_cast():
    """https://forums.fast.ai/t/why-does-the-nll-has-grad-fn-while-accuracy-doesnt/50891 — ``accuracy`` is
    ``(torch.argmax(out, dim=-1) == yb).float().mean()``; its ``grad_fn`` is None. The cut is argmax (an index
    has no derivative), not the ``==`` nor the ``.float()`` after it."""
    torch.manual_seed(0)
    model, x, yb = nn.Linear(4, 3), torch.randn(8, 4), torch.randint(0, 3, (8,))
    with adv.torch.record() as rec:
        out = model(x)
        acc = (torch.argmax(out, dim=-1) == yb).float().mean()     # <- accuracy
    assert acc.grad_fn is None
    e = rec.explain(acc, model.weight)
    assert e.reason == "non_differentiable_op" and e.op == "argmax" and e.location == where("accuracy")
    assert "indices" in e.message and ".long()" not in e.message
    assert "'model.weight'" in e.message


def test_argmax_then_type_float32_is_argmax_not_integer_dtype():
    """https://php.bkmy88.com/faq/1835025.html — a training loop takes
    ``torch.softmax(logits, dim=1).argmax(dim=1).type(torch.float32)`` as the prediction fed to the loss;
    ``loss.backward()`` raises "element 0 of tensors does not require grad". The recorder must see
    ``Tensor.type`` (it skipped it), and the reason is the argmax, not a dtype."""
    torch.manual_seed(1)
    model, X_train, y_train = nn.Linear(5, 3), torch.randn(6, 5), torch.randint(0, 3, (6,)).float()
    with adv.torch.record() as rec:
        train_logits = model(X_train)
        train_preds = torch.softmax(train_logits, dim=1).argmax(dim=1).type(torch.float32)   # <- preds
        loss = nn.functional.mse_loss(train_preds, y_train)
        with pytest.raises(RuntimeError, match="does not require grad"):
            loss.backward()
    assert "type" in [op.name for op in rec.ops]
    e = rec.explain(loss, model.weight)
    assert e.reason == "non_differentiable_op" and e.op == "argmax" and e.location == where("preds")
    assert "cross_entropy" in e.message and "cast" not in e.message


def test_round_gives_zero_gradients_in_pytorch_and_the_fix_is_about_rounding():
    """https://discuss.pytorch.org/t/torch-round-gradient/28628 — ``b = torch.round(a); b.backward()``:
    PyTorch returns a zero gradient (round is a step function). The diagnosis names round and a fix that
    fits rounding (a straight-through estimator), not argmax's."""
    a = torch.tensor(1.5, requires_grad=True)
    with adv.torch.record() as rec:
        b = torch.round(a)                                            # <- round
        b.backward()
    assert a.grad is not None and a.grad.item() == 0.0
    e = rec.explain(b, a)
    assert e.reason == "non_differentiable_op" and e.op == "round" and e.location == where("round")
    assert "step function" in e.message and "detach()" in e.message and "argmax" not in e.message


def test_requires_grad_before_a_move_makes_a_non_leaf_named_at_the_move():
    """https://discuss.pytorch.org/t/how-to-define-a-leaf-tensor-in-pytorch-0-4-1/28461 — ``requires_grad=True``
    then ``.cuda()`` (the answer: "You could substitute .cuda() for * 2"): the moved tensor is the result of an
    op, not a leaf, so its ``.grad`` stays None. Reduced on CPU with ``.double()``, a move of dtype."""
    with adv.torch.record() as rec:
        x = torch.randn(3, requires_grad=True).double()              # <- move
        loss = (x * x).sum()
        loss.backward()
    with pytest.warns(UserWarning, match="non-leaf"):
        assert x.grad is None
    e = rec.explain(loss, x)
    assert e.reason == "non_leaf" and e.location == where("move") and e.op == "double"
    assert "'x'" in e.message and "requires_grad=True" in e.message


def test_output_of_the_last_linear_layer_is_not_a_leaf_named_at_the_layer_line():
    """https://discuss.pytorch.org/t/trying-to-understand-why-output-of-nn-linear-for-output-layer-isnt-retaining/40116
    — ``self.L2_Y = self.Why(self.L1_H)`` in ``forward``; the user expects ``.grad`` on that output. It is
    computed by the layer (a non-leaf): the line is the layer call inside ``forward``."""
    class SingleRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.Wxh = nn.Linear(3, 2, bias=False)
            self.Why = nn.Linear(2, 1, bias=False)

        def forward(self, X0):
            self.L1_H = self.Wxh(X0)
            self.L2_Y = self.Why(self.L1_H)                           # <- output layer
            return self.L2_Y

    torch.manual_seed(2)
    net = SingleRNN()
    with adv.torch.record() as rec:
        loss = net(torch.randn(4, 3)).pow(2).sum()
        loss.backward()
    e = rec.explain(loss, net.L2_Y)
    assert e.reason == "non_leaf" and e.location == where("output layer") and e.op == "linear"
    assert "retain_grad()" in e.message


def test_legacy_variable_over_data_is_an_unseen_leaf_not_unused():
    """https://discuss.pytorch.org/t/grad-is-none-autograd-through-list-of-variables-multigpu-transformer/26372
    — ``Variable(o[:, i:i+chunk].data, requires_grad=True)`` re-wraps the model output: the loss reaches a new
    leaf, so nothing flows back to ``out``. The recorder does not see the legacy constructor; the walk must
    say it met a leaf it did not see made, never "not used"."""
    from torch.autograd import Variable
    torch.manual_seed(3)
    gen, out = nn.Linear(4, 2), torch.randn(2, 6, 4, requires_grad=True)
    with adv.torch.record() as rec:
        out_column = Variable(out[:, 0:3].data, requires_grad=True)   # <- rewrap
        loss = gen(out_column).sum()
        loss.backward()
    assert out.grad is None and out_column.grad is not None
    e = rec.explain(loss, out)
    assert e.reason == "unseen_leaf" and e.location == where("rewrap")
    assert "'out_column'" in e.message and "'out'" in e.message


def test_w_minus_lr_grad_under_no_grad_rebinds_the_parameter():
    """https://github.com/pytorch/pytorch/issues/74158 — ``with torch.no_grad(): w = w - lr * w.grad``: the new
    ``w`` has requires_grad=False, and the next ``backward()`` raises. The fix is the in-place update
    ``w -= lr * w.grad`` (the answer in the thread), not ``requires_grad_(True)``."""
    X = torch.tensor([1, 2, 3, 4], dtype=torch.float32)
    Y = torch.tensor([2, 4, 6, 8], dtype=torch.float32)
    w = torch.tensor(0.0, dtype=torch.float32, requires_grad=True)
    lr = 0.01
    with adv.torch.record() as rec:
        for epoch in range(2):
            y_pred = w * X
            l = ((y_pred - Y) ** 2).mean()
            if epoch == 1:
                with pytest.raises(RuntimeError, match="does not require grad"):
                    l.backward()
                break
            l.backward()
            with torch.no_grad():
                w = w - lr * w.grad                                   # <- rebind
    assert not w.requires_grad
    e = rec.explain(l, w)
    assert e.reason == "rebound_parameter" and e.location == where("rebind")
    assert "w -= lr * w.grad" in e.message and "requires_grad_(True)" not in e.message


def test_layers_in_a_plain_list_are_found_and_named_by_their_attribute():
    """https://github.com/pytorch/pytorch/issues/715 — ``self.hids = []`` filled with ``nn.Linear`` layers in
    ``__init__``: ``parameters()`` leaves them out (the maintainer: wrap them in ``nn.ModuleList``), so an
    optimizer built from it never trains them."""
    class SNLINet(nn.Module):
        def __init__(self, n_layers=2, n_hid=4):
            super().__init__()
            self.hids = []
            for _ in range(n_layers):
                self.hids.append(nn.Linear(n_hid, n_hid))
            self.classifier = nn.Linear(n_hid, 3)

        def forward(self, x):
            for layer in self.hids:
                x = torch.relu(layer(x))
            return self.classifier(x)

    torch.manual_seed(4)
    net = SNLINet()
    assert len(list(net.parameters())) == 2
    loss = net(torch.randn(5, 4)).sum()
    rows = adv.torch.explain(loss, net)
    assert rows["hids[0].weight"].reason == "unregistered_parameter"
    assert "nn.ModuleList" in rows["hids[1].bias"].message and "hids" in rows["hids[1].bias"].message
    with adv.torch.record() as rec:
        loss = net(torch.randn(5, 4)).sum()
    table = rec.explain(loss, net)
    assert table.names[:4] == ["hids[0].weight", "hids[0].bias", "hids[1].weight", "hids[1].bias"]
    assert [e.reason for e in table][-2:] == ["connected", "connected"]


def test_a_list_of_layers_built_from_num_layers_is_found_in_a_recording():
    """https://github.com/pytorch/pytorch/issues/666 — ``self.list_of_layers = [nn.Linear(1, 1) for i in
    range(num_layers)]`` next to a registered ``self.layer``: printing the net shows only ``layer``. With a
    recording, ``rec.explain(loss, net)`` lists the hidden ones first, by attribute, and ``layer`` connected."""
    class net(nn.Module):
        def __init__(self, num_layers):
            super().__init__()
            self.layer = nn.Linear(1, 1)
            self.list_of_layers = [nn.Linear(1, 1) for i in range(num_layers)]

        def forward(self, x):
            x = self.layer(x)
            for lin in self.list_of_layers:
                x = lin(x)
            return x

    torch.manual_seed(8)
    n = net(4)
    assert [name for name, _ in n.named_parameters()] == ["layer.weight", "layer.bias"]
    with adv.torch.record() as rec:
        loss = n(torch.randn(3, 1)).pow(2).sum()
    table = rec.explain(loss, n)
    assert len(table) == 10 and table.names[-2:] == ["layer.weight", "layer.bias"]
    assert {e.reason for e in table[:8]} == {"unregistered_parameter"}
    assert "list_of_layers[3].bias" in table.names and "nn.ModuleList" in table[0].message


def test_parameters_in_a_plain_dict_are_found():
    """https://github.com/pytorch/pytorch/issues/4631 — ``self.weights = {}; self.weights['w_i'] =
    nn.Parameter(...)``: only parameters set directly as attributes are listed (the maintainer: use
    ``nn.ParameterDict``/``ParameterList``)."""
    class Module2(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = {}
            self.weights["w_i"] = nn.Parameter(torch.randn(3, 2))

        def forward(self, x):
            return x @ self.weights["w_i"]

    m2 = Module2()
    assert list(m2.parameters()) == []
    rows = adv.torch.explain(m2(torch.randn(4, 3)).sum(), m2)
    assert list(rows) == ["weights['w_i']"] and rows["weights['w_i']"].reason == "unregistered_parameter"
    assert "although the loss reads it" in rows["weights['w_i']"].message


def test_a_loss_unpacked_in_the_wrong_order_is_a_python_number():
    """https://github.com/bnu-wangxun/Deep_Metric/issues/26 — the loss function returns
    ``mean_pos_sim, mean_neg_sim, prec, loss`` but the trainer unpacks ``loss, inter_, dist_ap, dist_an``:
    ``loss`` is a Python float, and ``loss.backward()`` raises AttributeError. ``explain`` must accept the
    number and name where it left the graph."""
    def weight_loss(inputs, targets):
        sim = inputs @ inputs.t()
        pos = sim[targets[:, None] == targets[None, :]]
        mean_pos_sim = pos.mean().item()                              # <- item
        loss = (1 - pos).clamp(min=0).mean()
        return mean_pos_sim, 0.0, 1.0, loss

    torch.manual_seed(5)
    model = nn.Linear(4, 3)
    with adv.torch.record() as rec:
        loss, inter_, dist_ap, dist_an = weight_loss(model(torch.randn(6, 4)), torch.tensor([0, 0, 1, 1, 2, 2]))
    with pytest.raises(AttributeError, match="no attribute 'backward'"):
        loss.backward()
    e = rec.explain(loss, model.weight)
    assert e.reason == "left_the_graph" and e.location == where("item") and "item()" in e.message
    table = rec.explain(loss, list(model.parameters()))
    assert len(table) == 2 and {r.reason for r in table} == {"left_the_graph"}


def test_autograd_grad_of_a_non_scalar_names_the_call():
    """https://stackoverflow.com/questions/54754153/autograd-grad-for-tensor-in-pytorch — ``grad(outputs=y,
    inputs=x)`` with ``y = v ** 2`` a 2x2 tensor raises "grad can be implicitly created only for scalar
    outputs"; the fix is ``grad_outputs=torch.ones_like(y)`` or a reduction."""
    from torch.autograd import grad
    x = torch.ones(2, 2, requires_grad=True)
    with adv.torch.record() as rec:
        v = x + 2
        y = v ** 2
        with pytest.raises(RuntimeError, match="only for scalar outputs"):
            grad(outputs=y, inputs=x)                                 # <- grad
    e = rec.explain(y, x)
    assert e.reason == "non_scalar_target" and e.location == where("grad") and "ones_like" in e.message


def test_frozen_rnn_parameters_have_no_grad_named_at_the_freezing_line():
    """https://github.com/lcswillems/torch-ac/pull/5 — ``for param in self.rnn.parameters(): param.requires_grad
    = False``; the gradient-norm code then reads ``p.grad.data`` for every parameter, and ``p.grad`` is None for
    the frozen ones. The line is the assignment that froze them; the others are connected."""
    class ACModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.Linear(4, 4)
            self.actor = nn.Linear(4, 2)

        def forward(self, x):
            return self.actor(torch.tanh(self.rnn(x)))

    torch.manual_seed(6)
    acmodel = ACModel()
    with adv.torch.record() as rec:
        for param in acmodel.rnn.parameters():
            param.requires_grad = False                               # <- freeze
        loss = acmodel(torch.randn(3, 4)).sum()
        loss.backward()
    with pytest.raises(AttributeError):
        sum(p.grad.data.norm(2).item() ** 2 for p in acmodel.parameters())
    table = rec.explain(loss, acmodel)
    assert table.names[:2] == ["rnn.weight", "rnn.bias"]
    assert table[0].reason == "requires_grad_false" and table[0].location == where("freeze")
    assert [e.reason for e in table][2:] == ["connected", "connected"]


def test_conv_layers_in_a_plain_list_are_found():
    """https://github.com/pytorch/pytorch/issues/1053 — ``self.conv1d = [nn.Conv1d(...), ...]``: after
    ``a.cuda()`` the convolutions stay on the CPU, as they are not registered (the maintainer: use
    ``nn.ModuleList``); an optimizer built from ``parameters()`` never sees them either."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1d = [nn.Conv1d(6, 1, 3), nn.Conv1d(6, 1, 4), nn.Conv1d(6, 1, 5)]

        def forward(self, x):
            return sum(c(x).amax(dim=-1) for c in self.conv1d)

    torch.manual_seed(7)
    a = Net()
    assert list(a.parameters()) == []
    rows = adv.torch.explain(a(torch.randn(2, 6, 9)).sum(), a)
    assert sorted(rows) == sorted(f"conv1d[{i}].{w}" for i in range(3) for w in ("weight", "bias"))
    assert all(r.reason == "unregistered_parameter" and "nn.ModuleList" in r.message for r in rows.values())


def test_q1291_layers_built_inside_forward_are_not_parameters_of_the_model():
    """https://github.com/pytorch/pytorch/issues/1291 — ``ThreeLayerNet.forward`` calls
    ``torch.nn.Linear(D_in, H)(x)`` (and two more) instead of using layers made in ``__init__``:
    ``list(model.parameters())`` is empty. PyTorch fills ``.grad`` of the new layers' weights, but they belong
    to no module and are new on every call; an optimizer over ``model.parameters()`` raises. The answer in the
    thread: define the layers as attributes in ``__init__``. ``rec.explain(loss, model)`` must say so, naming
    each line that built a layer, instead of an empty table."""
    class ThreeLayerNet(nn.Module):
        def __init__(self, D_in, H, D_out):
            super().__init__()

        def forward(self, x):
            h_relu = torch.nn.Linear(D_in, H)(x).clamp(min=0)               # <- linear1
            h_relu = torch.nn.Linear(H, H)(h_relu).clamp(min=0)             # <- linear2
            y_pred = torch.nn.Linear(H, D_out)(h_relu)                      # <- linear3
            return y_pred

    torch.manual_seed(0)
    D_in, H, D_out = 10, 5, 2
    model = ThreeLayerNet(D_in, H, D_out)
    x, y = torch.randn(4, D_in), torch.randn(4, D_out)
    with adv.torch.record() as rec:
        y_pred = model(x)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
    assert list(model.parameters()) == []
    with pytest.raises(ValueError, match="empty parameter list"):
        torch.optim.SGD(model.parameters(), lr=1e-4)
    rows = rec.explain(loss, model)
    assert len(rows) == 6 and {e.reason for e in rows} == {"made_in_forward"}
    assert sorted({e.location for e in rows}) == sorted(where(t) for t in ("linear1", "linear2", "linear3"))
    assert all("__init__" in e.message for e in rows)


def test_optimizer_built_from_another_instance_names_both_constructions():
    """The optimizer takes the parameters of one build of the model, the loss reads another (the model was
    built again after the optimizer): both construction lines are named (``optimizer_other_instance``)."""
    x = torch.randn(5, 3)
    with adv.torch.record() as rec:
        model = nn.Linear(3, 1)                                       # <- first
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model = nn.Linear(3, 1)                                       # <- second
        loss = model(x).pow(2).mean()
        loss.backward()
    assert all(p.grad is None for g in opt.param_groups for p in g["params"])
    table = rec.explain(loss, opt)
    assert {e.reason for e in table} == {"optimizer_other_instance"}
    assert table[0].location == where("second") and where("first") in table[0].locations


def test_as_tensor_of_a_tuple_of_tensors_is_a_new_leaf_and_the_fix_is_stack():
    """https://github.com/lululxvi/deepxde/pull/1318 (review thread on ``as_tensor``) — ``ab =
    torch.as_tensor((a, b))`` then ``ab.requires_grad = True`` and ``ab.sum().backward()``: ``a.grad`` and
    ``b.grad`` stay None, while ``torch.stack((a, b))`` gives ones (the author's own demonstration, and the
    reason deepxde uses ``torch.stack``). The cut is the ``as_tensor`` line; the fix is ``torch.stack``."""
    import warnings
    with adv.torch.record() as rec:
        a = torch.tensor([1.], requires_grad=True)
        b = torch.tensor([2.], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)    # PyTorch's "converting a tensor ... to a scalar"
            ab = torch.as_tensor((a, b))                              # <- as_tensor
        ab.requires_grad = True
        loss = ab.sum()
        loss.backward()
    assert a.grad is None and b.grad is None and ab.grad is not None
    e = rec.explain(loss, a)
    assert e.reason == "left_the_graph" and e.location == where("as_tensor") and e.op == "as_tensor"
    assert "torch.stack" in e.message and "'a'" in e.message
    stacked = torch.stack((a, b))
    stacked.sum().backward()
    assert a.grad.tolist() == [1.0] and b.grad.tolist() == [1.0]


def test_deepcopy_of_a_parameter_is_a_copy_not_a_path():
    """The recorder sees every tensor-returning method: ``copy.deepcopy(w)`` makes a new leaf, so it is a cut
    (not a differentiable op, and never "not used")."""
    w = torch.randn(3, requires_grad=True)
    with adv.torch.record() as rec:
        w2 = copy.deepcopy(w)                                         # <- copy
        loss = (w2 * 2).sum()
    e = rec.explain(loss, w)
    assert e.reason == "detached" and e.location == where("copy")


def test_the_recorder_skip_list_only_holds_calls_that_return_no_new_tensor():
    """Audit of the skip list against ``torch.overrides.get_overridable_functions()``: every skipped Tensor
    method that PyTorch can override returns no tensor, or returns ``self`` (so nothing is hidden from the
    walk)."""
    import importlib
    record_mod = importlib.import_module("autodiff_viz.torch.record")
    overridable = {getattr(f, "__name__", "") for fs in torch.overrides.get_overridable_functions().values()
                   for f in fs}
    t = torch.randn(2, 2)
    for name in sorted(record_mod._SKIP & overridable):
        fn = getattr(t, name, None)
        if fn is None or not callable(fn):
            continue
        try:
            out = fn()
        except (TypeError, RuntimeError):
            continue
        assert not isinstance(out, torch.Tensor) or out is t, name
