"""A sixth set of real public questions new to this project, reduced faithfully (the user's structure and mistake).

None of these URLs (nor their thread numbers) appears in ``/work/cited_urls.txt`` or elsewhere in the tests and
docs. Each test runs the user's structure under the framework (PyTorch under ``adv.torch.record()``,
TensorFlow/Keras under ``adv.tf.record()``, or the engine typed as ``import autodiff_viz as tf``), asserts the
framework's own answer first (a ``.grad`` that stays ``None``, the error, ``None`` from the tape), then the
diagnosis the thread calls for: the reason, the line the user must change and a fix keyword. Where the user's code
runs inside an installed library (advertorch's attacks), the library's code is written, reduced, to a temporary
directory that the recorders count as installed code, as they count site-packages. Each docstring says who in the
thread named the cause (a maintainer, an answer, or the reporter's own diagnosis).

Measured as found (before any change to the package for them): 11 of 12 fully right. The miss, tensorflow#14755
(``f1[i, j].assign(x)``: the TensorFlow recorder did not see a write into part of a variable as an assignment),
passes since.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from unseen_questions import installed_fixture, tf_fixture  # noqa: F401  (fixtures)
from unseen_questions import line_in as _line
from unseen_questions import lineno_in as _lineno

import autodiff_viz as adv

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def _line_before(fn, anchor: str, text: str) -> str:
    """``file:line`` of the last line containing ``text`` before the first line containing ``anchor`` (the
    ``with`` that opens the block an anchor line runs in, when the same ``with`` is written more than once)."""
    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    k = next(k for k, ln in enumerate(lines) if anchor in ln)
    j = max(i for i in range(k) if text in lines[i])
    return f"{inspect.getsourcefile(fn)}:{start + j}"


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------
class RNN(nn.Module):
    """practical-pytorch char-rnn-classification's RNN (2017)."""

    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def init_hidden(self):
        return torch.zeros(1, self.hidden_size)


def test_optimizer_built_over_the_rnn_that_the_training_cell_builds_again():
    """https://github.com/spro/practical-pytorch/issues/9 — "char-rnn-classification parameters update method
    confusion": replacing the tutorial's manual update ``p.data.add_(-learning_rate, p.grad.data)`` by
    ``optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)`` and ``optimizer.step()``, the loss "flows up
    and down, does not diminish". The maintainer (spro): "I have the model instantiated twice — once directly after
    the RNN class, and once before the main ``for epoch in ...`` loop (below the train function). Try moving the
    optimizer to below the second one". The optimizer's parameters never get a gradient. Reduced: the notebook's
    cells in order, a few letters and categories, three epochs; the notebook's cells are this test's body."""
    torch.manual_seed(0)
    with adv.torch.record() as rec:
        n_letters, n_categories = 6, 3
        n_hidden = 8
        rnn = RNN(n_letters, n_hidden, n_categories)

        criterion = nn.NLLLoss()
        learning_rate = 0.005
        optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)

        def train(category_tensor, line_tensor):
            hidden = rnn.init_hidden()
            optimizer.zero_grad()
            for i in range(line_tensor.size()[0]):
                output, hidden = rnn(line_tensor[i], hidden)
            loss = criterion(output, category_tensor)
            loss.backward()
            optimizer.step()
            return output, loss

        rnn = RNN(n_letters, n_hidden, n_categories)  # the training cell
        for epoch in range(1, 4):
            category_tensor = torch.tensor([epoch % n_categories])
            line_tensor = torch.eye(n_letters)[torch.tensor([epoch, 0, 2])].unsqueeze(1)
            output, loss = train(category_tensor, line_tensor)
    assert all(p.grad is None for g in optimizer.param_groups for p in g["params"])
    assert rnn.i2h.weight.grad is not None
    table = rec.explain(loss, optimizer)
    assert {e.reason for e in table} == {"optimizer_other_instance"}, [(e.reason, e.location) for e in table]
    ex = table[0]
    notebook = test_optimizer_built_over_the_rnn_that_the_training_cell_builds_again
    assert ex.location in (_line(notebook, "rnn = RNN(n_letters, n_hidden, n_categories)  # the training cell"),
                           _line(notebook, "optimizer = torch.optim.SGD(rnn.parameters()")), ex.location
    assert "optimizer" in ex.message, ex.message


class Learner(nn.Module):
    """MAML-Pytorch's ``learner.py``, reduced to its ``linear``/``relu`` entries: the forward pass takes the weights
    to use as ``vars`` (the fast weights of the inner loop)."""

    def __init__(self, config, imgc, imgsz):
        super(Learner, self).__init__()
        self.config = config
        self.vars = nn.ParameterList()
        for i, (name, param) in enumerate(self.config):
            if name == 'linear':
                w = nn.Parameter(torch.ones(*param))
                torch.nn.init.kaiming_normal_(w)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))

    def forward(self, x, vars=None, bn_training=True):
        if vars is None:
            vars = self.vars
        idx = 0
        for name, param in self.config:
            if name == 'linear':
                w, b = vars[idx], vars[idx + 1]
                x = F.linear(x, w, b)
                idx += 2
            elif name == 'relu':
                x = F.relu(x)
        return x

    def parameters(self):
        """override this function since initial parameters will return with a generator."""
        return self.vars


class Meta(nn.Module):
    """MAML-Pytorch's ``meta.py`` at 98a00d4, ``forward`` reduced (no accuracy bookkeeping)."""

    def __init__(self, update_lr, meta_lr, update_step, config):
        super(Meta, self).__init__()
        self.update_lr = update_lr
        self.meta_lr = meta_lr
        self.update_step = update_step
        self.net = Learner(config, 1, 4)
        self.meta_optim = torch.optim.Adam(self.net.parameters(), lr=self.meta_lr)

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        task_num = x_spt.size(0)
        losses_q = [0 for _ in range(self.update_step + 1)]  # losses_q[i] is the loss on step i

        for i in range(task_num):
            # 1. run the i-th task and compute loss for k=0
            logits = self.net(x_spt[i], vars=None, bn_training=True)
            loss = F.cross_entropy(logits, y_spt[i])
            grad = torch.autograd.grad(loss, self.net.parameters())
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))

            # this is the loss and accuracy before first update
            with torch.no_grad():
                logits_q = self.net(x_qry[i], self.net.parameters(), bn_training=True)
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[0] += loss_q

            # this is the loss and accuracy after the first update
            with torch.no_grad():
                logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[1] += loss_q

            for k in range(1, self.update_step):
                logits = self.net(x_spt[i], fast_weights, bn_training=True)
                loss = F.cross_entropy(logits, y_spt[i])
                grad = torch.autograd.grad(loss, fast_weights)
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[k + 1] += loss_q

        # sum over all losses on query set across all tasks
        loss_q = losses_q[-1] / task_num
        self.last_loss_q = loss_q  # kept to ask about it (not in MAML-Pytorch)

        # optimize theta parameters
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()


def test_meta_loss_of_a_single_inner_step_was_computed_under_no_grad():
    """https://github.com/dragen1860/MAML-Pytorch/issues/40 — "questions with respect to the no_grad()": with the
    number of inner updates set to 1, ``loss_q.backward()`` raises "element 0 of tensors does not require grad and
    does not have a grad_fn". The answer (dematsunaga): with one step the ``for k in range(1, self.update_step)``
    loop is skipped, so ``losses_q[-1]`` is ``losses_q[1]``, "a loss term calculated under ``torch.no_grad()``
    in line 105 ``losses_q[1] += loss_q``" (the query loss after the first update); "it is not possible to
    calculate the loss derivatives wrt the self.net parameters". Reduced: a two-layer linear learner, two tasks of
    four examples."""
    torch.manual_seed(0)
    config = [('linear', [6, 4]), ('relu', [True]), ('linear', [3, 6])]
    maml = Meta(update_lr=0.4, meta_lr=1e-3, update_step=1, config=config)
    x_spt, x_qry = torch.randn(2, 4, 4), torch.randn(2, 4, 4)
    y_spt, y_qry = torch.randint(0, 3, (2, 4)), torch.randint(0, 3, (2, 4))
    with adv.torch.record() as rec:
        with pytest.raises(RuntimeError, match="does not require grad"):
            maml(x_spt, y_spt, x_qry, y_qry)
    loss_q, w = maml.last_loss_q, maml.net.vars[0]
    assert not loss_q.requires_grad and w.grad is None
    ex = rec.explain(loss_q, w)
    assert ex.reason == "no_grad", (ex.reason, ex.location, ex.message)
    anchor = "logits_q = self.net(x_qry[i], fast_weights, bn_training=True)"
    assert ex.location in (_line_before(Meta.forward, anchor, "with torch.no_grad():"),
                           _line(Meta.forward, anchor), _line(Meta.forward, "losses_q[1] += loss_q")), ex.location
    assert "no_grad" in ex.message, ex.message


ADVERTORCH = '''
"""advertorch/attacks/iterative_projected_gradient.py (and utils) at master, reduced: ``PGDAttack.perturb`` detaches
its inputs and runs ``perturb_iterative``, which differentiates the loss with respect to ``delta``."""
import numpy as np
import torch
import torch.nn as nn

seen = {}  # kept to ask about it (not in advertorch)


def replicate_input(x):
    return x.detach().clone()


def clamp(input, min=None, max=None):
    return torch.clamp(input, min=min, max=max)


def perturb_iterative(xvar, yvar, predict, nb_iter, eps, eps_iter, loss_fn, delta_init=None, minimize=False,
                      ord=np.inf, clip_min=0.0, clip_max=1.0):
    if delta_init is not None:
        delta = delta_init
    else:
        delta = torch.zeros_like(xvar)

    delta.requires_grad_()
    for ii in range(nb_iter):
        outputs = predict(xvar + delta)
        loss = loss_fn(outputs, yvar)
        if minimize:
            loss = -loss
        seen["loss"], seen["delta"] = loss, delta

        loss.backward()
        grad_sign = delta.grad.data.sign()
        delta.data = delta.data + eps_iter * grad_sign
        delta.data = torch.clamp(delta.data, -eps, eps)
        delta.data = clamp(xvar.data + delta.data, clip_min, clip_max) - xvar.data
        delta.grad.data.zero_()

    x_adv = clamp(xvar + delta, clip_min, clip_max)
    return x_adv


class LinfPGDAttack:
    def __init__(self, predict, loss_fn=None, eps=0.3, nb_iter=40, eps_iter=0.01, rand_init=True, clip_min=0.,
                 clip_max=1., targeted=False):
        self.predict = predict
        self.loss_fn = loss_fn if loss_fn is not None else nn.CrossEntropyLoss(reduction="sum")
        self.eps, self.nb_iter, self.eps_iter = eps, nb_iter, eps_iter
        self.rand_init, self.clip_min, self.clip_max, self.targeted = rand_init, clip_min, clip_max, targeted

    def perturb(self, x, y=None):
        x, y = replicate_input(x), replicate_input(y)
        delta = torch.zeros_like(x)
        delta = nn.Parameter(delta)
        if self.rand_init:
            delta.data.uniform_(-self.eps, self.eps)
            delta.data = clamp(x + delta.data, min=self.clip_min, max=self.clip_max) - x
        rval = perturb_iterative(x, y, self.predict, nb_iter=self.nb_iter, eps=self.eps, eps_iter=self.eps_iter,
                                 loss_fn=self.loss_fn, minimize=self.targeted, clip_min=self.clip_min,
                                 clip_max=self.clip_max, delta_init=delta)
        return rval.data
'''


def test_pgd_attack_run_inside_the_evaluation_loops_no_grad(installed):
    """https://github.com/BorealisAI/advertorch/issues/79 — "Adversarial training works well but Attacking the
    Network throws errors": in the test loop, ``adv_untargeted = adversary.perturb(inputs, targets)`` inside
    ``with torch.no_grad():`` fails in ``perturb_iterative`` at ``loss.backward()``: "element 0 of tensors does not
    require grad and does not have a grad_fn". The maintainer (gwding): "You'll need to use autograd to get
    gradient based attack working. So removing ``with torch.no_grad()`` would probably make it work"; the reporter:
    "Taking that out made it work." Reduced: a linear classifier on 8 features, one batch."""
    attacks = installed("advertorch_pgd_reduced", ADVERTORCH)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 3))
    adversary = attacks.LinfPGDAttack(net, loss_fn=nn.CrossEntropyLoss(reduction="sum"), eps=0.3, nb_iter=2,
                                      eps_iter=0.01, rand_init=True, clip_min=0.0, clip_max=1.0, targeted=False)
    testloader = [(torch.rand(4, 8), torch.tensor([0, 1, 2, 1]))]

    def test():
        net.eval()
        with torch.no_grad():
            for batch_idx, (inputs, targets) in enumerate(testloader):
                adv_untargeted = adversary.perturb(inputs, targets)
                inputs = adv_untargeted
                outputs = net(inputs)
        return outputs

    with adv.torch.record() as rec:
        with pytest.raises(RuntimeError, match="does not require grad"):
            test()
    loss, delta = attacks.seen["loss"], attacks.seen["delta"]
    assert delta.requires_grad and not loss.requires_grad and delta.grad is None
    ex = rec.explain(loss, delta)
    assert ex.reason == "no_grad", (ex.reason, ex.location, ex.message)
    assert ex.location in (_line(test, "with torch.no_grad():"),
                           _line(test, "adv_untargeted = adversary.perturb(inputs, targets)")), ex.location
    assert "no_grad" in ex.message, ex.message


class HierarchicalLossNetwork:
    """Deep_Hierarchical_Classification's ``model/hierarchical_loss.py``, with the hierarchy given as a dict of class
    indices instead of read from the dataset's meta file."""

    def __init__(self, numeric_hierarchy, device='cpu', total_level=2, alpha=1, beta=0.8, p_loss=3):
        self.total_level = total_level
        self.alpha = alpha
        self.beta = beta
        self.p_loss = p_loss
        self.device = device
        self.numeric_hierarchy = numeric_hierarchy

    def check_hierarchy(self, current_level, previous_level):
        bool_tensor = [not current_level[i] in self.numeric_hierarchy[previous_level[i].item()]  # noqa: E713
                       for i in range(previous_level.size()[0])]
        return torch.FloatTensor(bool_tensor).to(self.device)

    def calculate_lloss(self, predictions, true_labels):
        lloss = 0
        for l in range(self.total_level):  # noqa: E741  (the project's own name)
            lloss += nn.CrossEntropyLoss()(predictions[l], true_labels[l])
        return self.alpha * lloss

    def calculate_dloss(self, predictions, true_labels):
        dloss = 0
        for l in range(1, self.total_level):  # noqa: E741  (the project's own name)
            current_lvl_pred = torch.argmax(nn.Softmax(dim=1)(predictions[l]), dim=1)
            prev_lvl_pred = torch.argmax(nn.Softmax(dim=1)(predictions[l - 1]), dim=1)

            D_l = self.check_hierarchy(current_lvl_pred, prev_lvl_pred)

            l_prev = torch.where(prev_lvl_pred == true_labels[l - 1], torch.FloatTensor([0]).to(self.device),
                                 torch.FloatTensor([1]).to(self.device))
            l_curr = torch.where(current_lvl_pred == true_labels[l], torch.FloatTensor([0]).to(self.device),
                                 torch.FloatTensor([1]).to(self.device))

            dloss += torch.sum(torch.pow(self.p_loss, D_l * l_prev) * torch.pow(self.p_loss, D_l * l_curr) - 1)
        return self.beta * dloss


class TwoHeadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 8)
        self.superclass = nn.Linear(8, 2)
        self.subclass = nn.Linear(8, 4)

    def forward(self, x):
        h = F.relu(self.body(x))
        return self.superclass(h), self.subclass(h)


def test_dependence_loss_built_from_argmax_predictions_trains_nothing():
    """https://github.com/Ugenteraan/Deep_Hierarchical_Classification/issues/6 — "Gradient unable to backprop if we
    use argmax or torch.where": in ``calculate_dloss``, "argmax is non-differentiable, thus the gradient wrt to dloss
    won't be propagated back to ``predictions``", and ``check_hierarchy`` builds a new FloatTensor; the parameters
    update the same whatever ``beta`` is. The maintainer: "After having another look, I think you are right."
    Reduced: a two-level head on a small body; the training step of ``train.py`` (``total_loss = lloss + dloss``)."""
    torch.manual_seed(0)
    model = TwoHeadNet()
    HLN = HierarchicalLossNetwork({0: [0, 1], 1: [2, 3]})
    batch_x = torch.randn(5, 6)
    batch_y1, batch_y2 = torch.tensor([0, 1, 0, 1, 1]), torch.tensor([1, 2, 0, 3, 0])
    with adv.torch.record() as rec:
        prediction = model(batch_x)
        dloss = HLN.calculate_dloss(prediction, [batch_y1, batch_y2])
        lloss = HLN.calculate_lloss(prediction, [batch_y1, batch_y2])
        total_loss = lloss + dloss
        total_loss.backward()
    assert not dloss.requires_grad and dloss.grad_fn is None
    assert model.body.weight.grad is not None
    ex = rec.explain(dloss, model.body.weight)
    assert ex.reason == "non_differentiable_op", (ex.reason, ex.location, ex.message)
    assert ex.location in (_line(HierarchicalLossNetwork.calculate_dloss, "current_lvl_pred = torch.argmax("),
                           _line(HierarchicalLossNetwork.calculate_dloss, "prev_lvl_pred = torch.argmax(")), \
        ex.location
    assert "argmax" in ex.message, ex.message


def test_viewed_tensor_rebound_to_the_name_of_the_leaf():
    """https://github.com/pytorch/pytorch/issues/8474 — "[Bug] Sometimes gradient doesn't back-propagate after
    view": ``x1 = torch.rand(5).requires_grad_()``, ``x1 = x1.view((-1, 1))``, ``x1.sum().backward()`` prints
    ``None`` for ``x1.grad``, while without the view it prints ones. The maintainer (fmassa): "I don't think this is a
    bug. He is checking the gradient of a non-leaf variable. Change the name of the viewed variable to ``x2``, and
    verify that the gradient of ``x1`` is good." (The sum is named to ask about it.)"""
    def case():
        x1 = torch.rand(5).requires_grad_()
        x1 = x1.view((-1, 1))
        s = x1.sum()
        s.backward()
        return x1, s

    with adv.torch.record() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x1, s = case()
        assert x1.grad is None
    assert x1.requires_grad and not x1.is_leaf
    ex = rec.explain(s, x1)
    assert ex.reason == "non_leaf", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "x1 = x1.view((-1, 1))"), ex.location
    assert "leaf" in ex.message, ex.message


# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def test_minibatch_stddev_written_into_variables_with_sliced_assign(tf):
    """https://github.com/tensorflow/tensorflow/issues/14755 — "Problem with assigning values to matrix indices in
    tensorflow": a custom minibatch standard deviation writes each entry into ``f1 = tf.Variable(tf.zeros([n, n]))``
    with ``f1[i, j].assign(sqrtR)``; the reporter's own diagnosis: "the function ``assign`` in tensorflow is not
    differentiable, so ``tf.gradients`` will output a NoneType. Therefore, my network cannot be trained." Run
    eagerly under a tape (TF 2), with a generator weight feeding the batch."""
    def AcrossBatchSD(batch, i, j):
        _, varR = tf.nn.moments(batch[:, i, j, 0], axes=[0])
        _, varG = tf.nn.moments(batch[:, i, j, 1], axes=[0])
        _, varB = tf.nn.moments(batch[:, i, j, 2], axes=[0])
        return tf.sqrt(varR), tf.sqrt(varG), tf.sqrt(varB)

    def MinibatchStdDev(batch, window, mb_size):
        n = batch[0].shape[0]
        f1 = tf.Variable(tf.zeros([n, n]))
        f2 = tf.Variable(tf.zeros([n, n]))
        f3 = tf.Variable(tf.zeros([n, n]))
        for i in range(n):
            for j in range(n):
                sqrtR, sqrtG, sqrtB = AcrossBatchSD(batch, i, j)
                f1[i, j].assign(sqrtR)
                f2[i, j].assign(sqrtG)
                f3[i, j].assign(sqrtB)
        f = tf.divide(tf.add(tf.add(f1, f2), f3), 3)
        F = tf.reduce_mean(f)
        return tf.multiply(F, tf.ones([mb_size, window, window]))

    mb_size, n, window = 3, 2, 2
    noise = tf.constant(np.random.default_rng(0).normal(size=(mb_size, n, n, 3)).astype("float32"))

    def case():
        with adv.tf.record() as rec:
            scale = tf.Variable(1.5, name="scale")
            with tf.GradientTape() as tape:
                batch = noise * scale
                out = MinibatchStdDev(batch, window, mb_size)
                loss = tf.reduce_sum(out)
            grad = tape.gradient(loss, scale)
        return rec, loss, scale, grad
    rec, loss, scale, grad = case()
    assert grad is None
    ex = rec.explain(loss, scale)
    assert ex.reason in ("non_differentiable_op", "assigned_variable"), (ex.reason, ex.location, ex.message)
    assert ex.location in (_line(MinibatchStdDev, "f1[i, j].assign(sqrtR)"),
                           _line(MinibatchStdDev, "f2[i, j].assign(sqrtG)"),
                           _line(MinibatchStdDev, "f3[i, j].assign(sqrtB)")), ex.location
    assert "assign" in ex.message, ex.message


def test_memory_layer_updates_its_memory_with_assign_in_call(tf):
    """https://github.com/keras-team/keras/issues/16128 (the same report as tensorflow/tensorflow#54568) — "How to
    propagate gradient after assign op?": a ``MemoryLayer`` whose controllers compute erase and add vectors; with
    the update of ``self.key_memory`` changed to ``.assign``, training warns "Gradients do not exist for variables
    ['memory_layer_write_controller/hidden_layer_0/kernel:0', ...]". The reporter's diagnosis: "It seems that assign
    op would break gradient. If I used '=', then it will create a new tensor." Reduced: one memory, one write
    controller and one erase and one add layer; the read is the memory after the update."""
    import keras
    keras.utils.set_random_seed(0)

    class MemoryLayer(keras.layers.Layer):
        def __init__(self, n_clusters=4, key_dims=3, name="memory_layer", **kwargs):
            super(MemoryLayer, self).__init__(name=name, trainable=True, **kwargs)
            self.write_controller = keras.layers.Dense(key_dims, activation="relu", name="write_controller")
            self.key_erase_layer = keras.layers.Dense(key_dims, activation="sigmoid", name="key_erase_layer")
            self.key_add_layer = keras.layers.Dense(key_dims, activation="tanh", name="key_add_layer")
            self.n_clusters, self.key_dims = n_clusters, key_dims

        def build(self, input_shape):
            self.key_memory = self.add_weight(shape=(self.n_clusters, self.key_dims), initializer="zeros",
                                              trainable=False, name="key_memory")

        def call(self, inputs):
            h = self.write_controller(inputs)
            erase = tf.reduce_mean(self.key_erase_layer(h), axis=0)
            add = tf.reduce_mean(self.key_add_layer(h), axis=0)
            self.key_memory.assign(self.key_memory * (1.0 - erase) + add)
            return tf.matmul(inputs[:, :self.key_dims], tf.transpose(self.key_memory))

    x = tf.constant(np.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    layer = MemoryLayer()
    optimizer = keras.optimizers.Adam(1e-3)
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            out = layer(x)
            loss = tf.reduce_mean(tf.square(out))
        grads = tape.gradient(loss, layer.trainable_weights)
        with pytest.raises(ValueError, match="(?i)no gradients provided for any variable"):
            optimizer.apply_gradients(zip(grads, layer.trainable_weights))
    assert layer.trainable_weights and all(g is None for g in grads)
    kernel = layer.write_controller.kernel
    ex = rec.explain(loss, kernel)
    assert ex.reason in ("non_differentiable_op", "assigned_variable"), (ex.reason, ex.location, ex.message)
    assert ex.location == _line(MemoryLayer.call, "self.key_memory.assign("), ex.location
    assert "assign" in ex.message, ex.message


def test_spearman_loss_ranks_the_predictions_with_a_numpy_function(tf):
    """https://github.com/tensorflow/tensorflow/issues/35713 — "No gradient in custom loss function": a Spearman
    correlation loss ranks ``y_true`` and ``y_pred`` with ``tf.numpy_function(rankdata, [b], Tout=tf.float32)``;
    ``fit`` raises "No gradients provided for any variable". The ranks are computed by numpy: ``tf.numpy_function``
    has no gradient, so the loss does not depend on the model's output for the tape. ``fit`` users hold no tape:
    the error must say why, with the line. ``run_eagerly=True`` lets the recording see the step."""
    import keras
    from scipy.stats import rankdata
    keras.utils.set_random_seed(0)
    BATCH_SIZE = 4

    def custom_loss(num_targets):
        def custom_rhos(y_true, y_pred):
            rhos = []
            for ind in range(num_targets):
                a = tf.squeeze(tf.slice(y_true, [0, ind], [-1, 1]))
                b = tf.squeeze(tf.slice(y_pred, [0, ind], [-1, 1]))
                rank_a, rank_b = tf.numpy_function(rankdata, [a], Tout=tf.float64), tf.numpy_function(rankdata, [b], Tout=tf.float64)  # noqa: E501
                rho = 1 - 6 * tf.reduce_sum((rank_a - rank_b) ** 2) / (BATCH_SIZE ** 3 - BATCH_SIZE)
                rhos.append(rho)
            return -tf.reduce_sum(rhos)
        return custom_rhos

    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss=custom_loss(2), run_eagerly=True)
    x = np.random.default_rng(0).normal(size=(8, 5)).astype("float32")
    y = np.random.default_rng(1).normal(size=(8, 2)).astype("float32")
    with adv.tf.record():
        with pytest.raises(ValueError, match="(?i)no gradients provided for any variable") as info:
            model.fit(x, y, batch_size=BATCH_SIZE, epochs=1, verbose=0)
    text = str(info.value)
    assert "non_differentiable_op" in text or "left_the_tape" in text, text[:800]
    assert _lineno(custom_loss, "rank_a, rank_b = tf.numpy_function(") in text, text[:800]
    assert "numpy_function" in text, text[:800]


def test_standard_deviation_loss_of_argmax_labels(tf):
    """https://github.com/keras-team/keras/issues/7567 — "Encounter 'ValueError: None values not supported' when
    using custom loss function": ``StdLoss`` takes ``label = K.cast(K.argmax(y_pred, axis=1), dtype='float32')``
    and returns its standard deviation; Keras' message of the time names the culprit: "Common ops without gradient:
    K.argmax, K.round, K.eval" — the loss depends on the predictions only through the index of their maximum.
    Keras 3 (``keras.ops`` as ``K``) raises "No gradients provided for any variable"; ``fit`` users hold no tape, so
    the error must say why. ``run_eagerly=True`` lets the recording see the step."""
    import keras
    from keras import ops as K
    keras.utils.set_random_seed(0)

    def StdLoss(y_true, y_pred):
        label = K.cast(K.argmax(y_pred, axis=1), dtype='float32')
        return K.std(label, axis=0, keepdims=True)

    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="softmax")])
    model.compile(optimizer="adam", loss=StdLoss, run_eagerly=True)
    x = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
    y = np.zeros((8, 4), dtype="float32")
    with adv.tf.record():
        with pytest.raises(ValueError, match="(?i)no gradients provided for any variable") as info:
            model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    text = str(info.value)
    assert "non_differentiable_op" in text, text[:800]
    assert _lineno(StdLoss, "label = K.cast(K.argmax(y_pred, axis=1)") in text, text[:800]
    assert "argmax" in text, text[:800]


def test_actor_critic_step_run_through_a_numpy_function_inside_the_tape(tf):
    """https://github.com/tensorflow/tensorflow/issues/47288 — "No gradients provided for any variable:
    ['conv2d/kernel:0', ...]": an A2C-style ``train_step`` opens the tape and takes ``actor_logits``,
    ``value_logits`` ... from ``tf.numpy_function(self.np_train_step, [], [tf.float32 for _ in range(8)])``, where
    ``np_train_step`` steps the environments and runs the model in numpy. What comes back from a
    ``numpy_function`` is a constant to the tape: none of the loss is connected to the model's weights. Reduced:
    a dense model, two fake environments, the losses of the reporter's step."""
    import keras
    keras.utils.set_random_seed(0)

    class Agent:
        def __init__(self):
            self.model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
            self.optimizer = keras.optimizers.Adam(1e-3)
            self.states = np.random.default_rng(0).normal(size=(2, 4)).astype("float32")
            self.batch_indices = tf.range(2, dtype=tf.int64)

        def np_train_step(self):
            actor_logits = self.model(self.states).numpy()
            value_logits = actor_logits * 0.5
            actions = np.argmax(actor_logits, axis=-1).astype("float32")
            rewards = np.ones(2, dtype="float32")
            dones = np.zeros(2, dtype="float32")
            entropies = np.zeros(2, dtype="float32")
            return (self.states, rewards, actions, value_logits, dones, self.states, entropies, actor_logits)

        def train_step(self):
            with tf.GradientTape() as tape:
                (
                    _,
                    rewards,
                    actions,
                    value_logits,
                    dones,
                    _,
                    entropies,
                    actor_logits,
                ) = tf.numpy_function(
                    self.np_train_step, [], [tf.float32 for _ in range(8)]
                )
                action_probs = tf.nn.softmax(actor_logits)
                values = tf.reduce_sum(action_probs * value_logits, axis=-1)
                action_indices = tf.stack([self.batch_indices, tf.cast(actions, tf.int64)], axis=1)
                selected_probs = tf.gather_nd(action_probs, action_indices)
                advantages = rewards - values
                loss = -tf.reduce_mean(tf.math.log(selected_probs) * advantages) + tf.reduce_mean(advantages ** 2)
            grads = tape.gradient(loss, self.model.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
            return loss, grads

    agent = Agent()
    with adv.tf.record():
        with pytest.raises(ValueError, match="(?i)no gradients provided for any variable") as info:
            agent.train_step()
    text = str(info.value)
    assert "numpy_function" in text or "numpy()" in text, text[:800]
    assert (_lineno(Agent.train_step, ") = tf.numpy_function(") in text
            or _lineno(Agent.np_train_step, "actor_logits = self.model(self.states).numpy()") in text), text[:800]


# ---------------------------------------------------------------------------
# The engine, typed as a learner moving TensorFlow code writes it
# ---------------------------------------------------------------------------
def test_cnn_outputs_assigned_into_variables_before_the_custom_op_in_the_engine():
    """https://github.com/tensorflow/tensorflow/issues/17735 — "Kindly provide the gradient for tf.assign": the
    outputs of a CNN are stored into variables (``assign_op1 = tf.assign(F, Fx)``, ``tf.assign(B, Bx)``) so that a
    custom layer with hand-registered gradients can read them; ``tf.gradients`` on the final loss is None for the
    CNN. The reporter's diagnosis, from the Stack Overflow answer he links: "gradients are not defined for
    tf.assign" — the custom layer reads the variables, whose values come from the CNN by an assignment. Reduced
    to a one-matrix "CNN" and a product as the custom layer; typed with ``import autodiff_viz as tf``."""
    import autodiff_viz as tf
    images = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype("float32"))
    W = tf.Variable(np.random.default_rng(1).normal(size=(3, 4)).astype("float32"), name="cnn_kernel")
    F_ = tf.Variable(np.zeros((2, 4), dtype="float32"), name="FXT")
    B = tf.Variable(np.zeros((2, 4), dtype="float32"), name="BXT")

    def custom_layer(F, B):
        return tf.reduce_sum(F * B + F)

    def case():
        with tf.GradientTape() as tape:
            Fx = tf.matmul(images, W)
            Bx = tf.tanh(Fx)
            F_.assign(Fx)
            B.assign(Bx)
            op = custom_layer(F_, B)
        return tape, op
    tape, op = case()
    assert tape.gradient(op, W) is None
    ex = tape.explain(op, W)
    assert ex.reason in ("non_differentiable_op", "assigned_variable"), (ex.reason, ex.location, ex.message)
    assert ex.location in (_line(case, "F_.assign(Fx)"), _line(case, "B.assign(Bx)")), ex.location
    assert "assign" in ex.message, ex.message


def test_floor_sampling_lambda_after_the_output_layer_in_the_engine():
    """https://github.com/keras-team/keras/issues/5521 — "Error using K.round() and tf.floor() in custom layers": a
    ``FloorSampling`` backend function ``tf.floor(x + tf.random_uniform(tf.shape(x), 0, 1))`` as the last layer
    (``add(Lambda(K.FloorSampling, output_shape=lambda x: x))``) to sample 0/1 piano keys; ``fit`` fails with
    "ValueError: None values not supported". The reporter's diagnosis: "It probably caused by gradients of
    tf.floor() and tf.round() is [None]" (TensorFlow's registered gradients, quoted). Reduced: a dense sigmoid
    layer then the Lambda; typed with ``import autodiff_viz as tf``."""
    import autodiff_viz as tf
    tf.layers.set_random_seed(0)

    def FloorSampling(x):
        return tf.floor(x + tf.random.uniform(tf.shape(x), 0, 1))

    model = tf.Sequential()
    model.add(tf.layers.Dense(5, activation="sigmoid", input_shape=(3,)))
    model.add(tf.layers.Lambda(FloorSampling, output_shape=lambda x: x))
    model.compile(loss="binary_crossentropy", optimizer="sgd")
    x = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    y = (np.random.default_rng(1).random((8, 5)) > 0.5).astype("float32")
    with pytest.raises(ValueError, match="(?i)no gradients provided for any variable") as info:
        model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    text = str(info.value)
    assert "non_differentiable_op" in text, text[:800]
    assert _lineno(FloorSampling, "return tf.floor(") in text, text[:800]
    assert "floor" in text, text[:800]
