"""Real public questions new to this project, reduced faithfully (the user's structure and mistake), each cited.

None of these URLs appears in the other corpus files. Each test runs the
user's structure under the framework (PyTorch under ``adv.torch.record()``,
TensorFlow/Keras under ``adv.tf.record()``, or the engine), asserts the
framework's own answer (``None``, or a ``.grad`` that stays ``None``), then
the diagnosis: the reason the accepted answer states, the user's line and a
fix that fits.
"""
from __future__ import annotations

import numpy as np
import pytest
from unseen_questions import line_in as _line
from unseen_questions import tf_fixture  # noqa: F401  (fixtures)

import autodiff_viz as adv

torch = pytest.importorskip("torch")
nn = torch.nn


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------
def test_checkpoint_on_inputs_without_grad_gives_the_library_call_and_use_reentrant():
    """https://github.com/pytorch/pytorch/issues/7617 — ``checkpoint(lambda _: m(_), x)`` with ``x`` not requiring
    grad: the output does not require grad although ``m`` has parameters. The reentrant checkpoint runs the
    function without grad; the user wrote no ``no_grad``."""
    from torch.utils.checkpoint import checkpoint

    def case():
        m = torch.nn.Linear(4, 3)
        x = torch.randn(10, 4)
        with adv.torch.record() as rec:
            z1 = checkpoint(lambda _: m(_), x, use_reentrant=True)
            loss = z1.sum()
        return rec, loss, m, z1
    with pytest.warns(UserWarning):
        rec, loss, m, z1 = case()
    assert not z1.requires_grad
    ex = rec.explain(loss, m.weight)
    assert ex.reason == "no_grad"
    assert ex.location == _line(case, "z1 = checkpoint(")
    assert "use_reentrant=False" in ex.message and "You did not turn gradients off" in ex.message


def test_grad_checkpointing_a_transformer_block_after_a_frozen_embedding():
    """https://github.com/mlfoundations/open_clip/issues/573 — fine-tuning with grad checkpointing warns "None of
    the inputs have requires_grad=True. Gradients will be None"; ``use_reentrant=False`` fixed it. Reduced: a
    locked (frozen) token embedding feeds a checkpointed residual block."""
    from torch.utils.checkpoint import checkpoint

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Linear(8, 8)

        def forward(self, x):
            return x + torch.relu(self.mlp(x))

    def case():
        emb = nn.Embedding(20, 8)
        emb.weight.requires_grad_(False)
        block = Block()
        tokens = torch.tensor([[1, 2, 3]])
        with adv.torch.record() as rec:
            x = emb(tokens)
            x = checkpoint(block, x, use_reentrant=True)
            loss = x.pow(2).mean()
        return rec, loss, block
    with pytest.warns(UserWarning, match="None of the inputs"):
        rec, loss, block = case()
    assert not loss.requires_grad
    ex = rec.explain(loss, block.mlp.weight)
    assert ex.reason == "no_grad" and ex.location == _line(case, "x = checkpoint(")
    assert "use_reentrant=False" in ex.message


def test_evolvegcn_sets_the_gcn_weight_to_a_new_parameter_in_forward():
    """https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/80 — EvolveGCN's forward does
    ``W = self.toy_model.weight; self.toy_model.weight = Parameter(W)``: the gradient function is lost; passing
    the weight as an argument keeps it."""
    class ToyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.Tensor(2, 3).fill_(0.5))

        def forward(self, x):
            return x @ self.weight

    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.toy_model = ToyModel()
            self.evolve = nn.Linear(3, 3)

        def forward(self, x):
            W = self.evolve(self.toy_model.weight)
            self.toy_model.weight = torch.nn.parameter.Parameter(W)
            return self.toy_model(x)

    torch.manual_seed(0)
    model = MyModel()
    with adv.torch.record() as rec:
        loss = model(torch.ones(4, 2)).sum()
        loss.backward()
    assert model.evolve.weight.grad is None
    ex = rec.explain(loss, model.evolve.weight)
    assert ex.reason == "new_parameter"
    assert ex.location == _line(MyModel.forward, "self.toy_model.weight = ")
    assert "F.linear" in ex.message or "compute with the tensor itself" in ex.message


def test_parameter_of_a_parameter_in_a_bayesian_layer():
    """https://github.com/pytorch/pytorch/issues/93941 — a ``BayesianLinearLayer`` holds ``weight_mu`` and passes it
    to a Gaussian module whose ``__init__`` wraps it in ``nn.Parameter`` again: the gradient with respect to
    ``weight_mu`` is None (the loss reads the new leaf)."""
    class Gaussian(nn.Module):
        def __init__(self, mu, rho):
            super().__init__()
            self.mu = nn.Parameter(mu)
            self.rho = nn.Parameter(rho)

        def sample(self):
            return self.mu + torch.log1p(torch.exp(self.rho)) * 0.1

    class BayesianLinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight_mu = nn.Parameter(torch.zeros(2, 3))
            self.weight_rho = nn.Parameter(torch.zeros(2, 3))
            self.weight = Gaussian(self.weight_mu, self.weight_rho)

        def forward(self, x):
            return torch.nn.functional.linear(x, self.weight.sample())

    with adv.torch.record() as rec:
        layer = BayesianLinear()
        loss = layer(torch.ones(4, 3)).sum()
        loss.backward()
    assert layer.weight_mu.grad is None
    ex = rec.explain(loss, layer.weight_mu)
    assert ex.reason == "new_parameter"
    assert ex.location == _line(Gaussian.__init__, "self.mu = nn.Parameter(mu)")


def test_canonizer_merges_batchnorm_into_a_new_linear_parameter():
    """https://github.com/chr5tphr/zennit/pull/185 — with the MergeBatchNorm canonizer, the gradient with respect to
    the original parameters was not computed: the linear module's weight was overwritten with a new
    ``torch.nn.Parameter`` computed from them (the fix sets a tensor that depends on the originals instead)."""
    def case():
        torch.manual_seed(0)
        linear, bn = nn.Linear(3, 2), nn.BatchNorm1d(2).eval()
        original = linear.weight
        with adv.torch.record() as rec:
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            linear.weight = torch.nn.Parameter(linear.weight * scale[:, None])
            loss = linear(torch.ones(4, 3)).sum()
            loss.backward()
        return rec, loss, original
    rec, loss, original = case()
    assert original.grad is None
    ex = rec.explain(loss, original)
    assert ex.reason == "new_parameter"
    assert ex.location == _line(case, "linear.weight = torch.nn.Parameter(")
    assert "nn.Parameter(t) copies" in ex.message


def test_weights_kept_in_a_plain_dict_are_not_parameters():
    """https://github.com/xiaxin1998/COTREC/issues/15 — the weights of ``ItemConv`` are collected in a normal
    dictionary instead of ``nn.ModuleDict``, so ``parameters()`` does not find them and they are never trained
    (the authors switched to ``ModuleList``)."""
    class ItemConv(nn.Module):
        def __init__(self, layers=2, size=4):
            super().__init__()
            self.w_item = {}
            for i in range(layers):
                self.w_item["weight_item%d" % i] = nn.Linear(size, size, bias=False)

        def forward(self, x):
            for w in self.w_item.values():
                x = w(x)
            return x

    conv = ItemConv()
    assert list(conv.parameters()) == []
    with adv.torch.record() as rec:
        loss = conv(torch.ones(3, 4)).sum()
    rows = rec.explain(loss, conv).by_name()
    assert rows["w_item['weight_item0'].weight"].reason == "unregistered_parameter"
    assert "nn.ModuleDict" in rows["w_item['weight_item0'].weight"].message


def test_topology_loss_computed_on_a_detached_numpy_copy():
    """https://github.com/HuXiaoling/TopoLoss/issues/8 — the prediction is detached and turned into numpy, the
    topology loss computed there: how can it back-propagate? The answer: it cannot; remove the detach."""
    def np_topo_loss(pred):                 # a persistence-style loss on numpy values
        return float(np.abs(np.diff(pred.ravel())).sum())

    torch.manual_seed(0)
    net = nn.Conv2d(1, 1, 3, padding=1)
    image = torch.rand(1, 1, 5, 5)
    with adv.torch.record() as rec:
        likelihood = torch.sigmoid(net(image))
        topo = np_topo_loss(likelihood.detach().cpu().numpy())
        loss = torch.tensor(topo, requires_grad=True)
        loss.backward()
    assert net.weight.grad is None
    ex = rec.explain(loss, net.weight)
    assert ex.reason in ("detached", "left_the_graph")
    assert ex.location == _line(test_topology_loss_computed_on_a_detached_numpy_copy, "topo = np_topo_loss(")


def test_pruned_layers_replaced_after_the_optimizer_was_built():
    """https://github.com/microsoft/nni/issues/4521 — after ``speedup_model()`` replaces layers with smaller ones
    and copies the kept weights in, fine-tuning does not update the parameters: the optimizer holds the old
    ones (fix: build a new optimizer)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with adv.torch.record() as rec:
        old = model[0]
        keep = torch.tensor([0, 2, 3])
        small = nn.Linear(4, 3)
        with torch.no_grad():
            small.weight.copy_(old.weight[keep])
            small.bias.copy_(old.bias[keep])
        model[0] = small
        model[2] = nn.Linear(3, 1)
        loss = model(torch.ones(2, 4)).sum()
        loss.backward()
    assert old.weight.grad is None
    rows = rec.explain(loss, opt)
    ex = rows.by_name()[rows.names[0]]
    assert ex.reason == "optimizer_other_instance"
    assert "copy_" in ex.message and "build the optimizer again" in ex.message
    assert ex.location == _line(test_pruned_layers_replaced_after_the_optimizer_was_built, "small = nn.Linear(4, 3)")


class _RecomputingFunction(torch.autograd.Function):
    """pytorch#45405's Function, reduced: ``backward`` recomputes the output and asks ``torch.autograd.grad``."""

    @staticmethod
    def forward(ctx, x0, w):
        ctx.save_for_backward(w, x0)
        return torch.sum(x0 * w)

    @staticmethod
    def backward(ctx, grad_output):
        w, x0 = ctx.saved_tensors
        out = torch.sum(x0 * w)
        out.requires_grad = True
        x0.requires_grad = True
        dfdx = torch.autograd.grad(outputs=out, inputs=x0, grad_outputs=grad_output, allow_unused=True)
        return dfdx[0], None


def test_autograd_grad_inside_a_custom_backward_returns_none():
    """https://github.com/pytorch/pytorch/issues/45405 — a custom ``autograd.Function`` whose ``backward``
    recomputes ``torch.sum(x0 * w)`` and calls ``torch.autograd.grad`` on it: inside ``backward`` gradients are
    off, so the recomputed value has no history, ``autograd.grad`` gives ``None``, backward returns it, and the
    input's ``.grad`` stays None. The ops inside ``forward`` ran without grad, as every Function's forward does:
    that is no cut (the Function's own backward carries the gradient), so ``no_grad`` would be wrong."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.rand(2, 3)

        def forward(self, x):
            return _RecomputingFunction.apply(x, self.w)

    net = Net()
    data = torch.rand(2, 3, requires_grad=True)
    with adv.torch.record() as rec:
        loss = net(data) - 5
        loss.backward()
    assert data.grad is None
    ex = rec.explain(loss, data)
    assert ex.reason == "custom_backward_none"
    assert ex.location == _line(_RecomputingFunction.backward, "def backward")
    assert "_RecomputingFunction.apply" in ex.message and "input 0" in ex.message
    assert "enable_grad" in ex.message


def test_a_custom_function_whose_backward_returns_the_gradient_is_connected():
    """The same structure with a backward that writes the formula: the gradient arrives, and the diagnosis
    says so instead of blaming the no-grad ops inside ``forward``."""
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x0, w):
            ctx.save_for_backward(w)
            return torch.sum(x0 * w)

        @staticmethod
        def backward(ctx, grad_output):
            (w,) = ctx.saved_tensors
            return grad_output * w, None

    data, w = torch.rand(2, 3, requires_grad=True), torch.rand(2, 3)
    with adv.torch.record() as rec:
        loss = Scale.apply(data, w) - 5
        loss.backward()
    torch.testing.assert_close(data.grad, w)
    assert rec.explain(loss, data).reason == "connected"


def test_a_leaf_moved_after_requires_grad_is_not_the_leaf():
    """https://github.com/pytorch/pytorch/issues/2730 — ``x = Variable(torch.ones(10), requires_grad=True).cuda()``
    then ``y.backward(...)``: ``x.grad`` is None because ``x`` is the output of the move, not the leaf (the
    answer: keep the leaf, move it, or make it on the device). Reduced on CPU with the dtype move ``.double()``,
    the same mechanism."""
    def case():
        with adv.torch.record() as rec:
            x = torch.ones(10, requires_grad=True).double()
            y = x * torch.linspace(1, 10, 10, dtype=torch.float64)
            y.backward(torch.ones(10, dtype=torch.float64))
        return rec, x, y
    rec, x, y = case()
    assert not x.is_leaf and x.grad is None
    ex = rec.explain(y, x)
    assert ex.reason == "non_leaf"
    assert ex.location == _line(case, "x = torch.ones(10")
    assert "requires_grad=True" in ex.message and "retain_grad" in ex.message


def test_argmax_between_two_modules_cuts_the_first():
    """https://github.com/pytorch/pytorch/issues/1339 — the indices of ``torch.max(y_p, 1)`` fed from one module
    to another: the first module's ``param.grad`` is None ("'NoneType' object has no attribute 'data'"). The
    answer: argmax is not differentiable."""
    first_model, second_model = nn.Linear(4, 3), nn.Linear(1, 1)
    with adv.torch.record() as rec:
        y_p = first_model(torch.randn(5, 4))
        y_p = torch.max(y_p, 1)[1]
        loss = second_model(y_p.float().unsqueeze(1)).pow(2).mean()
        loss.backward()
    assert first_model.weight.grad is None and second_model.weight.grad is not None
    ex = rec.explain(loss, first_model.weight)
    assert ex.reason == "non_differentiable_op"
    assert ex.location == _line(test_argmax_between_two_modules_cuts_the_first, "y_p = torch.max(y_p, 1)[1]")
    assert "softmax" in ex.message


def test_argmax_coordinates_stacked_into_the_loss():
    """https://github.com/LZGMatrix/BOP19_CDPN_2019ICCV/issues/4 — coordinates taken with ``torch.argmax`` of the
    network's bins, stacked and rescaled, then a loss: ``loss.backward()`` raises "element 0 of tensors does not
    require grad and does not have a grad_fn". The maintainer: argmax is not differentiable, take the loss
    before it."""
    net = nn.Conv2d(1, 8, 1)
    with adv.torch.record() as rec:
        output_coor_x_ = net(torch.randn(1, 1, 4, 4)).squeeze()
        output_coor_ = torch.stack([torch.argmax(output_coor_x_, axis=0),
                                    torch.argmax(output_coor_x_, axis=0)], axis=2)
        output_coor_ = 2.0 * output_coor_.float() / (63.0 - 1.0) - 1.0
        loss = (output_coor_ - 0.5).abs().mean()
        with pytest.raises(RuntimeError, match="does not require grad"):
            loss.backward()
    ex = rec.explain(loss, net.weight)
    assert ex.reason == "non_differentiable_op" and ex.op == "argmax"
    assert ex.location == _line(test_argmax_coordinates_stacked_into_the_loss, "output_coor_ = torch.stack(")


# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def test_gan_generator_output_through_numpy_moments(tf):
    """https://github.com/tensorflow/tensorflow/issues/31919 — a GAN in TF 2: ``D(get_moments(g_fake_data.numpy().T)
    .reshape((1, 4)))`` inside the tape; the generator's gradients are None (the ``.numpy()`` call cuts them)."""
    import keras
    G = keras.Sequential([keras.Input((1,)), keras.layers.Dense(5)])
    D = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])

    def get_moments(d):
        mean = np.mean(d)
        diffs = d - mean
        std = np.sqrt(np.mean(diffs ** 2))
        z = diffs / std
        return np.array([mean, std, np.mean(z ** 3), np.mean(z ** 4) - 3.0], dtype=np.float32)

    gen_input = tf.random.normal((100, 1))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            g_fake_data = G(gen_input)
            dg_fake_decision = D(get_moments(g_fake_data.numpy().T).reshape((1, 4)))
            g_error = tf.reduce_mean(keras.losses.binary_crossentropy(tf.ones((1, 1)), dg_fake_decision))
        grads = tape.gradient(g_error, G.trainable_variables)
    assert all(g is None for g in grads)
    ex = rec.explain(g_error, G.layers[0].kernel)
    assert ex.reason == "left_the_tape"
    assert ex.location == _line(test_gan_generator_output_through_numpy_moments, "dg_fake_decision = D(")
    assert "tensor" in ex.message


def test_custom_loss_that_converts_the_prediction_to_numpy(tf):
    """https://github.com/tensorflow/tensorflow/issues/50111 — "No gradients provided for any variable" in a custom
    training loop; the user had converted the tensor to a numpy array when passing it to the loss."""
    import keras
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])

    def my_loss(y_true, y_pred):
        y_pred = y_pred.numpy()
        return tf.constant(np.mean((y_true - y_pred) ** 2))

    x, y = tf.ones((8, 3)), np.zeros((8, 1), np.float32)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            pred = model(x)
            loss = my_loss(y, pred)
        grads = tape.gradient(loss, model.trainable_variables)
    assert grads[0] is None
    ex = rec.explain(loss, model.layers[0].kernel)
    assert ex.reason == "left_the_tape"
    assert ex.location == _line(my_loss, "y_pred = y_pred.numpy()")


def test_lambda_argmax_in_a_functional_model(tf):
    """https://github.com/keras-team/keras/issues/11157 — ``Lambda(K.argmax, arguments={'axis': -1})`` then a
    ``Lambda(K.cast)`` in a functional encoder: fit fails with "An operation has `None` for gradient ... Common ops
    without gradient: K.argmax"."""
    import keras
    inp = keras.Input((6,))
    enc = keras.layers.Dense(5, activation="softmax")(inp)
    enc = keras.layers.Lambda(lambda t: tf.argmax(t, axis=-1))(enc)
    enc = keras.layers.Lambda(lambda t: tf.cast(t, "float32")[:, None])(enc)
    model = keras.Model(inp, keras.layers.Dense(1)(enc))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(tf.ones((4, 6))))
        g = tape.gradient(loss, model.layers[1].kernel)
    assert g is None
    ex = rec.explain(loss, model.layers[1].kernel)
    assert ex.reason == "non_differentiable_op"
    assert ex.location == _line(test_lambda_argmax_in_a_functional_model, "lambda t: tf.argmax")
    assert "Lambda layer" in ex.message and "softmax" in ex.message


def test_zeros_tensor_is_not_watched(tf):
    """https://github.com/fchollet/deep-learning-with-python-notebooks/pull/284 — the chapter 2 example makes ``x``
    with ``tf.zeros(())``: a tensor, not a variable, so the tape does not watch it and the gradient is None."""
    x = tf.zeros(())
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            y = 2 * x + 3
        grad_of_y_wrt_x = tape.gradient(y, x)
    assert grad_of_y_wrt_x is None
    ex = rec.explain(y, x)
    assert ex.reason == "not_watched"
    assert ex.location == _line(test_zeros_tensor_is_not_watched, "y = 2 * x + 3")
    assert "tape.watch(x)" in ex.message


def test_zeros_constant_is_not_watched_in_the_engine():
    """https://github.com/fchollet/deep-learning-with-python-notebooks/pull/284 — the same example in the engine:
    ``adv.zeros(())`` made before the tape is a constant; the answer names the line that made it and says to
    watch it or make it a Variable."""
    x = adv.zeros(())
    with adv.GradientTape() as tape:
        y = 2 * x + 3
    assert tape.gradient(y, x) is None
    ex = tape.explain(y, x)
    assert ex.reason == "not_watched"
    assert ex.location is not None
    assert "tape.watch(x)" in ex.message and "Variable" in ex.message


def test_batchnorm_moving_statistics_asked_for_through_model_variables(tf):
    """https://github.com/tensorflow/tensorflow/issues/26404 — ResNet50 in eager mode: ``tape.gradient(loss,
    model.variables)`` returns None for the BatchNormalization layers; the answer: use
    ``model.trainable_variables``."""
    import keras
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization(),
                              keras.layers.Dense(1)])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            prediction = model(tf.ones((5, 4)), training=True)
            loss = tf.reduce_mean(prediction ** 2)
        grads = tape.gradient(loss, model.variables)
    names = [v.path for v in model.variables]
    assert grads[names.index(model.layers[1].moving_mean.path)] is None
    ex = rec.explain(loss, model.layers[1].moving_mean)
    assert ex.reason == "non_trainable"
    assert ex.location == _line(test_batchnorm_moving_statistics_asked_for_through_model_variables,
                                "grads = tape.gradient(loss, model.variables)")
    assert "moving_mean" in ex.message and "trainable_variables" in ex.message


def test_critic_loss_is_a_converted_constant(tf):
    """https://github.com/SciSharp/TensorFlow.NET/issues/760 — the maintainers' Python version of the report:
    ``critic_loss = tf.convert_to_tensor(constant_loss)`` inside the tape, then ``tape.gradient(critic_loss,
    critic_model.trainable_variables)`` is ``[None, None]``: the loss is not computed from the model."""
    import keras
    state_input = keras.Input((3,))
    action_input = keras.Input((1,))
    concat = keras.layers.Concatenate(axis=1)([state_input, action_input])
    critic_model = keras.Model([state_input, action_input], keras.layers.Dense(1)(concat))
    critic_model([tf.ones((1, 3)), tf.ones((1, 1))])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            critic_loss = tf.convert_to_tensor(0.1)
        critic_grad = tape.gradient(critic_loss, critic_model.trainable_variables)
    assert critic_grad == [None, None]
    ex = rec.explain(critic_loss, critic_model.layers[-1].kernel)
    assert ex.reason == "not_used"
    assert "does not depend" in ex.message


def test_argmax_has_no_registered_gradient(tf):
    """https://github.com/tensorflow/tensorflow/issues/2177 — "tf.argmax should not permit backprop through it":
    the gradient is not registered for ArgMax, so a path through it gives no gradient (None on the tape)."""
    x = tf.Variable([1.0, 1.0])
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            z = tf.cast(tf.argmax(x, 0), tf.float32)
        g = tape.gradient(z, x)
    assert g is None
    ex = rec.explain(z, x)
    assert ex.reason in ("non_differentiable_op", "integer_dtype")
    assert ex.location == _line(test_argmax_has_no_registered_gradient, "z = tf.cast(tf.argmax(x, 0)")


def test_gradient_with_respect_to_model_inputs_names_the_placeholder(tf):
    """https://github.com/tensorflow/tensorflow/issues/31264 — ``tape.watch(model.inputs)`` then
    ``tape.gradient(loss, model.inputs)`` inside a ``train_step``; the answer: model.inputs is not the batch —
    watch ``images`` and differentiate with respect to them. Keras 3 raises "'KerasTensor' object has no
    attribute '_id'"; under the recording the same AttributeError says what the source is and the fix, and
    ``explain`` answers the same."""
    import keras
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    images, labels = tf.ones((3, 4)), tf.zeros((3, 2))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            predictions = model(images)
            loss = tf.reduce_mean((labels - predictions) ** 2)
        with pytest.raises(AttributeError, match="_id") as raised:
            tape.gradient(loss, model.inputs)
    assert "symbolic input" in str(raised.value) and "tape.watch(x)" in str(raised.value)
    ex = rec.explain(loss, model.inputs[0])
    assert ex.reason == "not_used" and "model.inputs" in ex.message and "tape.gradient(loss, x)" in ex.message
    with tf.GradientTape() as tape:                      # the answer's fix gives the gradient
        tape.watch(images)
        loss = tf.reduce_mean((labels - model(images)) ** 2)
    assert tape.gradient(loss, images).shape == (3, 4)


def test_gradient_with_respect_to_a_model_object(tf):
    """https://github.com/keras-team/keras/issues/14287 — ``grads = tape.gradient(loss, training_model)`` raises
    "'Sequential' object has no attribute '_id'"; the reporter's fix: ``training_model.trainable_variables``."""
    import keras
    training_model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    state = tf.ones((4, 3))
    with adv.tf.record():
        with tf.GradientTape() as tape:
            pred = training_model(state)
            loss = tf.reduce_mean((state[:, :2] - pred) ** 2)
        with pytest.raises(AttributeError, match="Sequential") as raised:
            tape.gradient(loss, training_model)
    assert "model.trainable_variables" in str(raised.value)


def test_grad_cam_on_a_layer_output_of_the_functional_graph(tf):
    """https://github.com/tensorflow/tensorflow/issues/46194 — Grad-CAM: ``gtape.gradient(loss, conv_output)`` with
    ``conv_output = model.get_layer(layer_name).output``, a KerasTensor of the functional graph, raises
    "'KerasTensor' object has no attribute '_id'". The fix is a model that also outputs the layer, called
    inside the tape (the keras.io Grad-CAM example's ``grad_model``)."""
    import keras
    inputs = keras.Input((6, 6, 1))
    conv = keras.layers.Conv2D(2, 3, name="activation_16")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Flatten()(conv)))
    image = tf.ones((1, 6, 6, 1))
    with adv.tf.record() as rec:
        with tf.GradientTape() as gtape:
            loss = model(image)[:, 1]
        conv_output = model.get_layer("activation_16").output
        with pytest.raises(AttributeError, match="_id") as raised:
            gtape.gradient(loss, conv_output)
    assert "layer's symbolic output" in str(raised.value)
    assert "model.get_layer('activation_16').output, model.output" in str(raised.value)
    ex = rec.explain(loss, conv_output)
    assert ex.reason == "not_used" and "keras.Model(model.inputs" in ex.message
    grad_model = keras.Model(model.inputs, [conv_output, model.output])   # the fix, as the answer writes it
    with tf.GradientTape() as gtape:
        conv_value, predictions = grad_model(image)
        loss = predictions[:, 1]
    assert gtape.gradient(loss, conv_value).shape == (1, 4, 4, 2)


def test_engine_gradient_with_respect_to_model_inputs():
    """https://github.com/tensorflow/tensorflow/issues/31264 in the engine: ``tape.gradient(loss, model.inputs)``
    is refused with what model.inputs is and the fix (watch the batch), and ``explain`` says the same."""
    inputs = adv.Input((4,))
    model = adv.Model(inputs, adv.layers.Dense(2)(inputs))
    images = adv.constant(np.ones((3, 4), "float32"))
    with adv.GradientTape() as tape:
        loss = adv.reduce_mean(model(images) ** 2)
    ex = tape.explain(loss, model.inputs[0])
    assert ex.reason == "not_used" and "tape.watch(x)" in ex.message
    with pytest.raises(TypeError, match="symbolic input"):
        tape.gradient(loss, model.inputs)


def test_noisy_layer_computes_its_kernel_in_build(tf):
    """https://github.com/tensorflow/tensorflow/issues/32729 — a NoisyDense layer computes ``self.kernel =
    self.weight_mu + self.weight_sigma * self.weights_eps`` (and the bias) in ``build``; the bias variable has
    ``None`` for gradient, and the error disappears when those lines move into ``call``. The answer: ``build``
    runs once, ``call`` on every forward pass. The diagnosis names both attributes computed in ``build``, with
    their lines, the line of ``call`` that reads them, and the fix for ``build``."""
    import keras

    class NoisyDense(keras.layers.Layer):
        def __init__(self, units, std_init=0.5):
            super().__init__()
            self.units = units
            self.std_init = std_init

        def build(self, input_shape):
            n = input_shape[-1]
            self.weight_mu = tf.Variable(tf.random.uniform((n, self.units), -0.5, 0.5))
            self.weight_sigma = tf.Variable(tf.fill((n, self.units), self.std_init))
            self.bias_mu = tf.Variable(tf.random.uniform((self.units,), -0.5, 0.5))
            self.bias_sigma = tf.Variable(tf.fill((self.units,), self.std_init))
            self.weights_eps = tf.random.normal((n, self.units))
            self.bias_eps = tf.random.normal((self.units,))
            self.kernel = self.weight_mu + self.weight_sigma * self.weights_eps
            self.bias = self.bias_mu + self.bias_sigma * self.bias_eps

        def call(self, inputs):
            return tf.matmul(inputs, self.kernel) + self.bias

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), NoisyDense(3)])
    noisy = model.layers[-1]
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(tf.ones((2, 4))) - tf.zeros((2, 3))) ** 2)
        grads = tape.gradient(loss, [noisy.bias_mu, noisy.weight_mu])
    assert grads == [None, None]
    ex = rec.explain(loss, noisy.bias_mu)
    assert ex.reason == "computed_outside_tape"
    assert ex.location == _line(NoisyDense.build, "self.bias = self.bias_mu")
    assert _line(NoisyDense.build, "self.kernel = ") in ex.locations
    assert _line(NoisyDense.call, "return tf.matmul") in ex.locations
    assert "noisy_dense.bias_mu" in ex.message and "compute it in call()" in ex.message
    assert rec.explain(loss, noisy.weight_mu).location == _line(NoisyDense.build, "self.kernel = ")


def test_model_predict_inside_the_tape(tf):
    """https://github.com/tensorflow/tensorflow/issues/20630 — the eager guide's regression with a Keras model:
    ``error = model.predict(x) - y`` inside the tape gives None gradients. The answer: ``predict`` returns a
    numpy array, and TensorFlow cannot differentiate through numpy; use ``model(x)``. The numpy conversion
    happens inside Keras, so the diagnosis names the user's line that called into it."""
    import keras

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense1 = keras.layers.Dense(units=1, activation="relu")

        def call(self, inputs):
            return self.dense1(inputs)

    n = 10
    x = tf.random.normal([n, 2])
    y = x * 3 + 2 + tf.random.normal([n, 2])
    model = Model()
    model(x)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            error = model.predict(x, verbose=0) - y
            loss_value = tf.reduce_mean(tf.square(error))
        grads = tape.gradient(loss_value, model.trainable_variables)
    assert grads == [None, None]
    ex = rec.explain(loss_value, model.dense1.kernel)
    assert ex.reason == "left_the_tape"
    assert ex.location == _line(test_model_predict_inside_the_tape, "error = model.predict(x, verbose=0) - y")
    assert "model(x)" in ex.message
    with tf.GradientTape() as tape:                     # the answer's fix
        loss_value = tf.reduce_mean(tf.square(model(x) - y))
    assert all(g is not None for g in tape.gradient(loss_value, model.trainable_variables))


def test_a_scalar_a_library_logged_is_no_evidence(tf):
    """The negative side of the library-escape link: Keras converting a scalar loss to a float for its logs
    is not taken as the cause when the target simply does not use the variable."""
    import keras
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    unused = tf.Variable(1.0)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(tf.ones((3, 2))) ** 2)
        model.compile(loss="mse")
        model.evaluate(tf.ones((3, 2)), tf.zeros((3, 1)), verbose=0)
        assert tape.gradient(loss, unused) is None
    assert rec.explain(loss, unused).reason == "not_used"


def test_conv2d_of_constants_made_from_numpy_inside_the_tape(tf):
    """https://github.com/tensorflow/tensorflow/issues/50661 — a 2-D convolution of ``tf.constant``\\ s made from
    random numpy integers inside the tape: ``g.gradient(y, x)`` is None. The answer: tensors are not watched,
    only variables are; watch them or use ``tf.Variable``."""
    with adv.tf.record() as rec:
        with tf.GradientTape(persistent=True) as g:
            x_np = np.random.randint(10, size=(1, 4, 4, 1))
            w_np = np.random.randint(10, size=(3, 3, 1, 1))
            x = tf.constant(x_np, dtype=tf.float32)
            w = tf.constant(w_np, dtype=tf.float32)
            y = tf.nn.conv2d(x, w, strides=(1, 1, 1, 1), padding="VALID")
        assert g.gradient(y, x) is None and g.gradient(y, w) is None
    for source, name in ((x, "x"), (w, "w")):
        ex = rec.explain(y, source)
        assert ex.reason == "not_watched"
        assert ex.location == _line(test_conv2d_of_constants_made_from_numpy_inside_the_tape, "y = tf.nn.conv2d")
        assert f"tape.watch({name})" in ex.message and "tf.Variable" in ex.message


def test_checkpoint_sequential_over_an_image_that_needs_no_grad():
    """https://github.com/Lyken17/pytorch-memonger/issues/4 — a ResNet run through memonger's sublinear
    (checkpointed) sequential: the first segment's input is the image, which does not require grad, so its output
    does not either and no layer of that segment learns ("None of the inputs have requires_grad=True. Gradients will be
    None"). Reduced with PyTorch's own ``checkpoint_sequential``, which runs the same reentrant
    ``CheckpointFunction``: the rule that explains it is the checkpoint's, whatever function the user called."""
    from torch.utils.checkpoint import checkpoint_sequential

    def case():
        layers = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        image = torch.randn(3, 4)
        with adv.torch.record() as rec:
            out = checkpoint_sequential(layers, 2, image, use_reentrant=True)
            loss = out.sum()
            loss.backward()
        return rec, loss, layers
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        rec, loss, layers = case()
    assert layers[0].weight.grad is None and layers[4].weight.grad is not None
    ex = rec.explain(loss, layers[0].weight)
    assert ex.reason == "no_grad"
    assert ex.location == _line(case, "out = checkpoint_sequential(")
    assert "checkpoint_sequential" in ex.message and "use_reentrant=False" in ex.message
    assert "You did not turn gradients off" in ex.message


def test_grad_read_after_the_wrapper_that_steps_and_zeroes():
    """https://github.com/open-mmlab/mmdetection/issues/11234 — printing ``parms.grad`` after
    ``optim_wrapper.update_params(loss)`` shows None; the answer: the wrapper calls ``zero_grad`` right after
    ``step``. Reduced with the wrapper's structure (backward, step, zero_grad in one method)."""
    class OptimWrapper:
        def __init__(self, optimizer):
            self.optimizer = optimizer

        def update_params(self, loss):
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()

    def case():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
        wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
        with adv.torch.record() as rec:
            loss = model(torch.randn(2, 3, 8, 8)).pow(2).mean()
            wrapper.update_params(loss)
            seen = [parms.grad for _, parms in model.named_parameters()]
        return rec, loss, model, seen
    rec, loss, model, seen = case()
    assert all(g is None for g in seen)
    ex = rec.explain(loss, model[0].weight)
    assert ex.reason == "read_before_backward"
    assert ex.location == _line(case, "seen = [parms.grad")
    assert _line(OptimWrapper.update_params, "self.optimizer.zero_grad()").split(":")[-1] in ex.message
    assert "between loss.backward() and opt.zero_grad()" in ex.message


def test_a_loss_made_of_counts_of_rounded_predictions(tf):
    """https://github.com/tensorflow/tensorflow/issues/58614 — a custom loss built from
    ``count_nonzero(equal(round(prediction), label))`` and shape counts gives None for every weight; the cause is
    that counting is not differentiable. Reduced with the user's loss body and a small Keras model."""
    import keras

    def custom_loss(output, prediction):
        correct_count = tf.math.count_nonzero(tf.math.equal(tf.round(prediction), tf.cast(output, tf.float32)))
        incorrect_count = prediction.shape[0] - correct_count
        correct_label_count = tf.where(output == 1.0).shape[0]
        return tf.cast(incorrect_count, tf.float32) / (correct_label_count + 1)

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(1, activation="sigmoid")])
    x = np.random.default_rng(0).random((10, 4)).astype("float32")
    y = (np.arange(10) % 2).reshape(10, 1).astype("float32")
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            pred = model(x)
            loss = custom_loss(y, pred)
        grads = tape.gradient(loss, model.trainable_weights)
    assert grads == [None] * 4
    ex = rec.explain(loss, model.trainable_weights[0])
    assert ex.reason == "non_differentiable_op"
    assert ex.location == _line(custom_loss, "correct_count = tf.math.count_nonzero(")
    assert "differentiable relaxation" in ex.message and "round" in ex.message


def test_output_of_the_last_linear_stored_on_the_module_is_not_a_leaf():
    """https://discuss.pytorch.org/t/trying-to-understand-why-output-of-nn-linear-for-output-layer-isnt-retaining/40116
    — an RNN cell keeps each layer's output on ``self`` (``self.L2_Y = self.Why(self.L1_H)``) and reads
    ``model.L2_Y.grad`` after ``backward()``: None, because a layer's output is not a leaf; ``retain_grad()``
    keeps it. PyTorch's own warning about it must point at the learner's line, recording or not."""
    class SingleRNN(nn.Module):
        def __init__(self, n_inputs, n_outputsize):
            super().__init__()
            num_hu = 2
            self.Wxh = nn.Linear(n_inputs, num_hu, bias=False)
            self.Whh = nn.Linear(num_hu + self.Wxh.out_features, num_hu, bias=False)
            self.Why = nn.Linear(num_hu, n_outputsize, bias=False)

        def forward(self, X0, H0):
            self.L0_X = self.Wxh(X0)
            self.L1_H = self.Whh(torch.cat((self.L0_X, H0), dim=1))
            self.L2_Y = self.Why(self.L1_H)
            return self.L2_Y

    def case():
        model = SingleRNN(3, 1)
        with adv.torch.record() as rec:
            y = model(torch.randn(4, 3), torch.zeros(4, 2))
            loss = ((y - 1) ** 2).mean()
            loss.backward()
            g = model.L2_Y.grad
        return rec, loss, model, g
    with pytest.warns(UserWarning, match="not a leaf Tensor") as caught:
        rec, loss, model, g = case()
    assert g is None
    where = next(w for w in caught if "not a leaf Tensor" in str(w.message))
    assert f"{where.filename}:{where.lineno}" == _line(case, "g = model.L2_Y.grad")
    ex = rec.explain(loss, model.L2_Y)
    assert ex.reason == "non_leaf"
    assert ex.location == _line(SingleRNN.forward, "self.L2_Y = self.Why(")
    assert "retain_grad()" in ex.message


def test_logits_computed_in_the_loop_and_passed_into_the_train_step(tf):
    """https://github.com/tensorflow/tensorflow/issues/28836 — the training loop calls ``logits = model(batch)``
    and passes the logits into ``train_step``, which opens the tape only around the loss: "No gradients
    provided for any variable". The model ran before the tape. Reduced with the user's two functions; the
    ``@tf.function`` on ``train_step`` is left out (the recording needs eager ops; it does not change the
    cause)."""
    import keras
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, activation="relu"),
                              keras.layers.Flatten(), keras.layers.Dense(10)])
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    images = np.random.default_rng(0).random((6, 8, 8, 1)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((images, np.arange(6) % 10)).batch(3)

    def train_step(logits, labels):
        with tf.GradientTape() as cnn_tape:
            loss = cross_entropy(labels, logits)
        return loss, cnn_tape.gradient(loss, model.trainable_variables)

    def train(train_dataset):
        for image_batch, label_batch in train_dataset:
            logits = model(image_batch)
            labels = label_batch
            return train_step(logits, labels)

    with adv.tf.record() as rec:
        loss, grads = train(dataset)
    assert grads == [None] * 4
    ex = rec.explain(loss, model.trainable_variables[0])
    assert ex.reason == "computed_outside_tape"
    assert ex.location == _line(train, "logits = model(image_batch)")
    assert "inside `with tf.GradientTape() as tape:`" in ex.message


def test_minimize_of_a_lambda_returning_a_loss_computed_before():
    """https://github.com/tensorflow/tensorflow/issues/42167 — ``cost`` computed first, then
    ``tf.keras.optimizers.Adam(0.5).minimize(lambda: cost, var_list=[y_N])``: "No gradients provided for any
    variable"; the answer: put the computation inside the lambda, where minimize's tape sees it. Typed as the
    user typed it, with ``import autodiff_viz as tf``."""
    import autodiff_viz as tf

    def case():
        y_N = tf.Variable([1., 2., 3.], name="dd")
        cost = -tf.reduce_mean(input_tensor=tf.reduce_sum(input_tensor=tf.math.log(y_N), axis=0))
        loss = lambda: cost  # noqa: E731
        tf.keras.optimizers.Adam(0.5).minimize(loss, var_list=[y_N])
    with pytest.raises(ValueError, match="no gradients provided for any variable") as info:
        case()
    text = str(info.value)
    assert "computed_outside_tape" in text and f"{_line(case, 'cost = -tf.reduce_mean(')}".split(":")[-1] in text
    assert "calls loss() inside its own tape" in text and "lambda: <the computation>" in text


def test_gradient_with_respect_to_a_concatenation_made_after_the_target():
    """https://github.com/pytorch/pytorch/issues/20663 — ``c = matmul(a.t(), b)``, then ``z = cat((a, b))`` and
    ``autograd.grad(c, z)``: "One of the differentiated Tensors appears to not have been used in the graph". The
    answer: c is not a function of z — z was made afterwards from the same tensors."""
    def case():
        with adv.torch.record() as rec:
            a = torch.tensor([1., 3., 5.], requires_grad=True)
            b = torch.tensor([2., 4., 6.], requires_grad=True)
            a = a.unsqueeze(1)
            b = b.unsqueeze(1)
            c = torch.matmul(a.t(), b)
            z = torch.cat((a, b), dim=1)
        return rec, c, z
    rec, c, z = case()
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        torch.autograd.grad(c, z, retain_graph=True)
    ex = rec.explain(c, z)
    assert ex.reason == "not_used"
    assert ex.location == _line(case, "z = torch.cat(")
    assert "computed after the target" in ex.message and "'a'" in ex.message and "'b'" in ex.message
