"""More real public questions new to this project, reduced faithfully (the user's structure and mistake), each cited.

None of these URLs appears in ``/work/cited_urls.txt`` or elsewhere in the tests and docs. Each test runs the
user's structure under the framework (PyTorch under ``adv.torch.record()``, TensorFlow/Keras under
``adv.tf.record()``, or the engine typed as a learner moving TensorFlow code writes it, ``import autodiff_viz as
tf``), asserts the framework's own answer (``None``, a ``.grad`` that stays ``None``, the optimizer's error or
warning), then the diagnosis the accepted answer calls for: the reason, the line the user must change and a fix
that fits. Where the user's code runs inside an installed library (pyiqa, gsplat), the library's source is
written to a temporary directory that the recorders count as installed code, as they count site-packages.
"""
from __future__ import annotations

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


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------
PYIQA_AHIQ = '''
"""pyiqa/archs/ahiq_arch.py before 1947903 ("fix gradient backward of ahiq"), reduced: frozen backbones whose
block outputs are collected by forward hooks, in helpers decorated @torch.no_grad(); a trainable regressor."""
import torch
import torch.nn as nn


class SaveOutput:
    def __init__(self):
        self.outputs = []

    def __call__(self, module, module_in, module_out):
        self.outputs.append(module_out)

    def clear(self):
        self.outputs = []


class AHIQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet50 = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        self.vit = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        self.fix_network(self.resnet50)
        self.fix_network(self.vit)
        self.regressor = nn.Linear(32, 1)
        self.save_output = SaveOutput()
        for layer in (self.resnet50[0], self.resnet50[2], self.vit[0], self.vit[2]):
            layer.register_forward_hook(self.save_output)

    def fix_network(self, model):
        for p in model.parameters():
            p.requires_grad = False

    @torch.no_grad()
    def get_vit_feature(self, x):
        self.vit(x)
        feat = torch.cat((self.save_output.outputs[0], self.save_output.outputs[1]), dim=1)
        self.save_output.clear()
        return feat

    @torch.no_grad()
    def get_resnet_feature(self, x):
        self.resnet50(x)
        feat = torch.cat((self.save_output.outputs[0], self.save_output.outputs[1]), dim=1)
        self.save_output.clear()
        return feat

    def regress_score(self, dis, ref):
        vit_dis = self.get_vit_feature(dis)
        vit_ref = self.get_vit_feature(ref)
        cnn_dis = self.get_resnet_feature(dis)
        cnn_ref = self.get_resnet_feature(ref)
        return self.regressor(torch.cat((vit_dis - vit_ref, cnn_dis - cnn_ref), dim=1))

    def forward(self, x, y):
        return self.regress_score(x, y)
'''


def test_iqa_metric_as_loss_whose_feature_helpers_are_decorated_no_grad(installed):
    """https://github.com/chaofengc/IQA-PyTorch/issues/76 — ``pyiqa.create_metric('ahiq', as_loss=True)`` used as a
    loss: ``image.grad`` is None. The reporter removed the lines of ``ahiq_arch.py`` that disable gradients and
    it worked; the maintainer fixed it by deleting the ``@torch.no_grad()`` on ``get_vit_feature`` and
    ``get_resnet_feature`` (commit 1947903). The grad mode was set by the library's decorators, not by the user:
    the line is the user's call into the metric, and the message names the decorated helper."""
    ahiq_arch = installed("pyiqa_ahiq_arch", PYIQA_AHIQ)

    def case():
        torch.manual_seed(0)
        model = ahiq_arch.AHIQ()                     # pyiqa.create_metric('ahiq', as_loss=True)
        image = torch.rand(2, 8, requires_grad=True)
        ref = torch.rand(2, 8)
        with adv.torch.record() as rec:
            score = model(image, ref)
            loss = score.mean()
            loss.backward()
        return rec, loss, model, image
    rec, loss, model, image = case()
    assert image.grad is None and model.regressor.weight.grad is not None
    ex = rec.explain(loss, image)
    assert ex.reason == "no_grad"
    assert ex.location == _line(case, "score = model(image, ref)")
    assert "get_vit_feature" in ex.message or "get_resnet_feature" in ex.message
    assert "decorated" in ex.message, ex.message
    assert "outside `with torch.no_grad()`" not in ex.message and "remove the with" not in ex.message.lower()


def test_a_parameter_moved_with_cuda_in_init_is_not_registered():
    """https://github.com/pytorch/pytorch/issues/94828 — ``self.t = torch.nn.Parameter(torch.rand(10),
    requires_grad=True).cuda()`` in ``__init__``: ``m.parameters()`` has only the linear layer's weights. The
    answer (albanD): ``.cuda()`` on a Parameter returns a plain Tensor, a copy; create it on the device
    (``device="cuda"``) or move the whole module. Reduced on CPU with the dtype move ``.double()``, the same
    mechanism (a copy that is no Parameter)."""
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.t = torch.nn.Parameter(torch.rand(10), requires_grad=True).double()
            self.linear = torch.nn.Linear(10, 20)

        def forward(self, x):
            x = self.t + x
            x = self.linear(x)
            return x

    def case():
        torch.manual_seed(0)
        with adv.torch.record() as rec:
            m = Model().double()
            loss = m(torch.ones(3, 10, dtype=torch.float64)).pow(2).mean()
            loss.backward()
        return rec, loss, m
    rec, loss, m = case()
    assert [name for name, _ in m.named_parameters()] == ["linear.weight", "linear.bias"]
    assert not m.t.is_leaf
    rows = rec.explain(loss, m).by_name()
    assert "t" in rows, sorted(rows)
    ex = rows["t"]
    assert ex.reason == "unregistered_parameter"
    assert ex.location == _line(Model.__init__, "self.t = torch.nn.Parameter(")
    assert "device=" in ex.message


GSPLAT = '''
"""gsplat.rasterization, reduced: project the Gaussians' means, splat them and return the image, the alphas and an
info dict whose ``means2d`` is the projection (a computed tensor; gsplat's DefaultStrategy calls
``info["means2d"].retain_grad()`` itself, and ``absgrad=True`` stores ``.absgrad`` from a hook)."""
import torch


def rasterization(means, opacities, colors, viewmat, K, width, height, absgrad=False):
    cam = means @ viewmat[:3, :3].T + viewmat[:3, 3]
    means2d = (cam[:, :2] / cam[:, 2:3]) @ K[:2, :2].T + K[:2, 2]
    if absgrad:
        def store(grad):
            means2d.absgrad = grad.abs()
        means2d.register_hook(store)
    ys, xs = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    pix = torch.stack([xs, ys], -1).to(means.dtype)
    d2 = ((pix[:, :, None, :] - means2d[None, None]) ** 2).sum(-1)
    w = opacities * torch.exp(-0.5 * d2)
    render = (w[..., None] * colors).sum(2)
    return render[None], w.sum(-1)[None], {"means2d": means2d}
'''


def test_means2d_returned_by_the_rasterizer_is_not_a_leaf(installed):
    """https://github.com/nerfstudio-project/gsplat/issues/390 — with ``absgrad=True``, ``info["means2D"].absgrad``
    exists after ``loss.backward()``; without it, ``info["means2D"].grad`` is None. The answer (accepted by the
    reporter): call ``info["means2D"].retain_grad()`` after rasterization, before backward — ``means2d`` is
    computed from the means inside the library, not a leaf."""
    gsplat = installed("gsplat_reduced", GSPLAT)

    def case():
        torch.manual_seed(0)
        means = torch.tensor([[0.1, 0.2, 3.0], [-0.3, 0.1, 2.5]], requires_grad=True)
        opacities, colors = torch.tensor([0.9, 0.8]), torch.rand(2, 3)
        viewmat, K = torch.eye(4), torch.tensor([[8.0, 0.0, 4.0], [0.0, 8.0, 4.0], [0.0, 0.0, 1.0]])
        target = torch.rand(1, 8, 8, 3)
        with adv.torch.record() as rec:
            renders, alphas, info = gsplat.rasterization(means, opacities, colors, viewmat, K, 8, 8)
            loss = (renders - target).abs().mean()
            loss.backward()
            grad2d = info["means2d"].grad
        return rec, loss, means, info, grad2d
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        rec, loss, means, info, grad2d = case()
    assert grad2d is None and means.grad is not None
    ex = rec.explain(loss, info["means2d"])
    assert ex.reason == "non_leaf"
    assert ex.location == _line(case, "renders, alphas, info = gsplat.rasterization(")
    assert "retain_grad()" in ex.message


class AttentionConv(nn.Module):
    """Stand-Alone-Self-Attention's ``attention.py`` at 98832a4, reduced to the shapes of a small input."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, groups=1, bias=False):
        super().__init__()
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.groups = groups
        self.key_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
        self.query_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)
        self.value_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x):
        batch, channels, height, width = x.size()
        padded_x = F.pad(x, [self.padding, self.padding, self.padding, self.padding])
        q_out = self.query_conv(x)
        k_out = self.key_conv(padded_x)
        v_out = self.value_conv(padded_x)
        k_out = k_out.unfold(2, self.kernel_size, self.stride).unfold(3, self.kernel_size, self.stride)
        v_out = v_out.unfold(2, self.kernel_size, self.stride).unfold(3, self.kernel_size, self.stride)
        k_out = k_out.contiguous().view(batch, self.groups, self.out_channels // self.groups, height, width, -1)
        v_out = v_out.contiguous().view(batch, self.groups, self.out_channels // self.groups, height, width, -1)

        rel_w = nn.Parameter(torch.randn(self.out_channels, width)).to(x)
        rel_logit_w = torch.einsum('bchw,cw->bchw', q_out, rel_w).view(
            batch, self.groups, self.out_channels // self.groups, height, width, 1)

        rel_h = nn.Parameter(torch.randn(self.out_channels, height)).to(x)
        rel_logit_h = torch.einsum('bchw,ch->bchw', q_out, rel_h).view(
            batch, self.groups, self.out_channels // self.groups, height, width, 1)

        q_out = q_out.view(batch, self.groups, self.out_channels // self.groups, height, width, 1)
        out = q_out * k_out + rel_logit_w + rel_logit_h
        out = F.softmax(out, dim=-1)
        out = torch.einsum('bnchwk,bnchwk -> bnchw', out, v_out).view(batch, -1, height, width)
        return out


def test_relative_position_parameters_made_in_forward_are_never_trained():
    """https://github.com/leaderj1001/Stand-Alone-Self-Attention/issues/2 — ``rel_w = nn.Parameter(torch.randn(
    self.out_channels, width)).to(x)`` (and ``rel_h``) inside ``forward``: "You create these parameters every time
    you pass through forward so their previous values are lost. I think these parameters should be created once
    in ``__init__``"; the author agreed to fix it. ``model.parameters()`` (what the optimizer holds) never has
    them. The diagnosis of the module names both, at the lines that made them, with the fix for ``forward``."""
    def case():
        torch.manual_seed(0)
        conv = AttentionConv(4, 4, kernel_size=3, padding=1, groups=2)
        opt = torch.optim.SGD(conv.parameters(), lr=0.1)
        with adv.torch.record() as rec:
            loss = conv(torch.randn(2, 4, 5, 5)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return rec, loss, conv, opt
    rec, loss, conv, opt = case()
    assert [name for name, _ in conv.named_parameters()] == ["key_conv.weight", "query_conv.weight",
                                                             "value_conv.weight"]
    assert len(opt.param_groups[0]["params"]) == 3
    rows = rec.explain(loss, conv)
    made = [e for e in rows if e.reason == "made_in_forward"]
    assert {e.location for e in made} == {_line(AttentionConv.forward, "rel_w = nn.Parameter("),
                                          _line(AttentionConv.forward, "rel_h = nn.Parameter(")}, \
        [(e.reason, e.location) for e in rows]
    assert all("__init__" in e.message for e in made)


def test_gradients_clipped_before_the_backward_that_makes_them():
    """https://github.com/ll0ruc/BD_event-extraction/issues/1 — ``torch.stack([torch.norm(p.grad.detach(), ...)
    for p in parameters])`` fails with "stack expects a non-empty TensorList": the maintainer pointed at the empty
    list of gradients, and the reporter found the cause: ``nn.utils.clip_grad_norm_(model.parameters(), 1.0)``
    came before ``loss.backward()`` (every ``.grad`` was still None). PyTorch 2.13 no longer raises: it returns
    a norm of 0 and clips nothing, silently."""
    def case():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(24, 5))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        tokens, labels = torch.randint(0, 20, (4, 3)), torch.randint(0, 5, (4,))
        with adv.torch.record() as rec:
            for step in range(2):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(tokens), labels)
                total_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                loss.backward()
                optimizer.step()
        return rec, loss, model, total_norm
    rec, loss, model, total_norm = case()
    assert float(total_norm) == 0.0
    ex = rec.explain(loss, model[2].weight)
    assert ex.reason == "read_before_backward"
    assert ex.location == _line(case, "total_norm = nn.utils.clip_grad_norm_(")
    assert "loss.backward()" in ex.message and "before" in ex.message


# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def test_module_computes_its_tensor_in_init_before_the_tape(tf):
    """https://github.com/tensorflow/tensorflow/issues/39996 — "tf.Module break gradient registration": a
    ``tf.Module`` computes from the variable ``phi`` in ``__init__``, the tape is opened afterwards around
    ``m.fun(x)``, and the gradient with respect to ``phi`` is None. The answer (rohan100jain): the computation in
    ``__init__`` is not inside the tape; create the module inside it. (The Colab's exact op is not public; any
    op on ``phi`` in ``__init__`` has the structure.)"""
    class MyModule(tf.Module):
        def __init__(self, phi):
            super().__init__()
            self.psi = tf.math.softplus(phi)

        def fun(self, x):
            return tf.reduce_sum(self.psi * x)

    def case():
        phi = tf.Variable(tf.zeros(5), trainable=True)
        with adv.tf.record() as rec:
            m = MyModule(phi)
            with tf.GradientTape() as tape:
                x = tf.ones(5)
                tape.watch(phi)
                res = m.fun(x)
            grad = tape.gradient(res, phi)
        return rec, res, phi, grad
    rec, res, phi, grad = case()
    assert grad is None
    ex = rec.explain(res, phi)
    assert ex.reason == "computed_outside_tape"
    assert ex.location == _line(MyModule.__init__, "self.psi = ")
    assert "__init__" in ex.message


def test_gradient_with_respect_to_word_ids_through_an_embedding(tf):
    """https://github.com/hiranumn/IntegratedGradients/issues/5 — integrated gradients of a text classifier: the
    gradient of the output with respect to the model input is None. The answer: the input is discrete (word ids)
    and the Keras embedding layer is not differentiable with respect to its data; differentiate with respect to
    the vector representations (the embedding's output) instead. Keras casts a float input to int32 inside
    ``Embedding``; the line is the user's call into the model."""
    import keras
    model = keras.Sequential([keras.Input((5,)), keras.layers.Embedding(20, 4), keras.layers.Flatten(),
                              keras.layers.Dense(2, activation="softmax")])
    ids = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], dtype="float32")

    def case():
        with adv.tf.record() as rec:
            x = tf.constant(ids)
            with tf.GradientTape() as tape:
                tape.watch(x)
                out = model(x)[:, 1]
            grads = tape.gradient(out, x)
        return rec, out, x, grads
    rec, out, x, grads = case()
    assert grads is None
    ex = rec.explain(out, x)
    assert ex.reason == "integer_dtype"
    assert ex.location == _line(case, "out = model(x)[:, 1]")
    assert "Embedding" in ex.message or "embedding" in ex.message


def test_proposal_layer_wrapped_in_py_func_stops_the_gradient(tf):
    """https://github.com/endernewton/tf-faster-rcnn/issues/288 — "Doesn't tf.py_func layers need
    tf.RegisterGradient?": the proposal layer runs in ``tf.py_func``, so the gradient from the detection head
    cannot flow back through the proposals to ``rpn_bbox_pred``. The maintainer: "you are right, so that means
    faster rcnn is NOT end-to-end". Reduced with TF 2's name for ``tf.py_func`` (``tf.numpy_function``) in the
    network's ``_proposal_layer`` method, a numpy proposal function and a head on the proposals."""
    import keras

    def proposal_layer(rpn_cls_prob, rpn_bbox_pred):                # lib/layer_utils/proposal_layer.py
        scores = rpn_cls_prob[:, 1]
        proposals = np.clip(rpn_bbox_pred, 0.0, 16.0)
        order = scores.argsort()[::-1][:3]
        return proposals[order].astype(np.float32), scores[order].astype(np.float32)

    class Network:
        def __init__(self):
            self.rpn_cls = keras.layers.Dense(2, activation="softmax")
            self.rpn_bbox = keras.layers.Dense(4)
            self.head = keras.layers.Dense(3)

        def _proposal_layer(self, rpn_cls_prob, rpn_bbox_pred):
            rois, rpn_scores = tf.numpy_function(proposal_layer, [rpn_cls_prob, rpn_bbox_pred],
                                                 [tf.float32, tf.float32])
            rois.set_shape([None, 4])
            return rois, rpn_scores

        def build_predictions(self, features):
            rpn_cls_prob = self.rpn_cls(features)
            rpn_bbox_pred = self.rpn_bbox(features)
            rois, _ = self._proposal_layer(rpn_cls_prob, rpn_bbox_pred)
            return self.head(rois)

    net = Network()
    features = tf.random.stateless_normal((6, 8), seed=(1, 2))
    with adv.tf.record() as rec:
        with tf.GradientTape() as tape:
            cls_score = net.build_predictions(features)
            loss_cls = tf.reduce_mean(cls_score ** 2)
        grads = tape.gradient(loss_cls, [net.rpn_bbox.kernel, net.head.kernel])
    assert grads[0] is None and grads[1] is not None
    ex = rec.explain(loss_cls, net.rpn_bbox.kernel)
    assert ex.reason == "non_differentiable_op"
    assert ex.location == _line(Network._proposal_layer, "rois, rpn_scores = tf.numpy_function(")
    assert "custom_gradient" in ex.message


def test_integer_variable_of_a_custom_layer_stops_fit(tf):
    """https://github.com/keras-team/keras/issues/20058 — a layer whose ``build`` makes ``self.var =
    self.add_variable((1,), initializer="zeros", dtype=tf.int32)``: ``fit`` always raises "No gradients provided
    for any variable"; with ``tf.float32`` it trains. The answers: integers are not differentiable, there is no
    gradient for an integer variable (fchollet: the error is correct). A ``fit`` user has no tape: the error
    itself must say why, with the line and the fix."""
    import keras
    variable_dtype = tf.int32

    class BugTestLayer(keras.layers.Layer):
        def build(self, input_shape):
            self.var = self.add_variable((1,), initializer="zeros", dtype=variable_dtype)

        def call(self, input):
            return input * self.var

    input_layer = keras.Input((1,), dtype=tf.int32)
    output = BugTestLayer()(input_layer)
    model = keras.Model(inputs=[input_layer], outputs=[output])
    values = np.array([[i] for i in range(8)])
    model.compile(loss=[keras.losses.MeanSquaredError()], optimizer=keras.optimizers.RMSprop(),
                  metrics=[keras.metrics.MeanSquaredError()])
    with adv.tf.record():
        with pytest.raises(ValueError, match="No gradients provided for any variable") as info:
            model.fit(values, values, batch_size=1, epochs=2, verbose=0)
    text = str(info.value)
    assert "integer_dtype" in text
    assert _lineno(BugTestLayer.build, "self.var = self.add_variable(") in text
    assert "float" in text


def test_round_of_clip_in_a_lambda_layer_leaves_the_first_layer_untrained(tf):
    """https://github.com/keras-team/keras/issues/5107 — ``output = Lambda(lambda x: K.round(K.clip(x)))(input)``
    on an intermediate layer's output; fit fails with "None type not supported". The answer (bstriner): rounding
    is a step function, training does nothing past it, gradients don't propagate through the rounding (nor
    through clipped values). Keras 3 trains the layer after the Lambda and warns "Gradients do not exist" for the
    one before: the warning must say why, naming the Lambda and its line."""
    import keras
    from keras import ops as K
    inp = keras.Input((3,))
    hidden = keras.layers.Dense(4, name="hidden")(inp)
    output = keras.layers.Lambda(lambda x: K.round(K.clip(x, 0.0, 1.0)))(hidden)
    model = keras.Model(inp, keras.layers.Dense(1, name="out")(output))
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).random((8, 3)).astype("float32")
    y = np.random.default_rng(1).random((8, 1)).astype("float32")
    with adv.tf.record(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    text = "\n".join(str(w.message) for w in caught if "Gradients do not exist" in str(w.message))
    assert "hidden" in text and "out/kernel" not in text.split("\n")[0]
    assert "non_differentiable_op" in text and "round" in text
    assert _lineno(test_round_of_clip_in_a_lambda_layer_leaves_the_first_layer_untrained,
                   "keras.layers.Lambda(lambda x: K.round(") in text
    assert "Lambda" in text


# ---------------------------------------------------------------------------
# The engine, typed as a learner moving TensorFlow code writes it
# ---------------------------------------------------------------------------
def test_floor_threshold_in_the_loss_in_the_engine():
    """https://github.com/tensorflow/tensorflow/issues/8625 — ``y_prob = tf.sigmoid(layer_dropped)``, ``y_pred =
    tf.floor(y_prob)`` ("set a thresholds value"), ``loss_op = tf.reduce_mean(tf.abs(y_true - y_pred))``: "No
    gradients provided for any variable"; without the floor it trains. The maintainer (drpngx): ``tf.floor``
    doesn't have a gradient. Typed with ``import autodiff_viz as tf``, the TF 1 graph code written with a tape."""
    import autodiff_viz as tf
    rng = np.random.default_rng(0)
    x, y_true = rng.random((8, 3)), (rng.random((8, 1)) > 0.5).astype("float64")
    W = tf.Variable(rng.normal(size=(3, 1)), name="W")
    b = tf.Variable(np.zeros(1), name="b")

    def case():
        with tf.GradientTape() as tape:
            layer_dropped = tf.matmul(x, W) + b
            y_prob = tf.sigmoid(layer_dropped)
            y_pred = tf.floor(y_prob)
            loss_op = tf.reduce_mean(tf.abs(y_true - y_pred))
        return tape, loss_op
    tape, loss_op = case()
    assert tape.gradient(loss_op, [W, b]) == [None, None]
    ex = tape.explain(loss_op, W)
    assert ex.reason == "non_differentiable_op"
    assert ex.location == _line(case, "y_pred = tf.floor(y_prob)")
    assert "floor" in ex.message and "straight-through" in ex.message


def test_loss_negated_inside_the_gradient_call_in_the_engine():
    """https://github.com/tensorflow/tensorflow/issues/37141 — a WAE: three tapes around ``compute_loss_vae(x)``,
    then ``disc_tape.gradient(-latent_loss, self.disc.trainable_variables)``; applying them raises "No gradients
    provided for any variable". The maintainer: the computation is performed outside the tape context; the
    reporter removed the negative sign and it worked (the negation ran after the ``with`` block). Typed with
    ``import autodiff_viz as tf`` (the gradient penalty's inner tape left out). The user holds no tensor for
    ``-latent_loss``, so the optimizer's error is where the diagnosis must be: the reason, the line of the
    ``gradient`` call and the fix."""
    import autodiff_viz as tf
    tf.layers.set_random_seed(0)
    enc = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(2)])
    dec = tf.keras.Sequential([tf.keras.layers.Input((2,)), tf.keras.layers.Dense(4)])
    disc = tf.keras.Sequential([tf.keras.layers.Input((2,)), tf.keras.layers.Dense(8, activation="relu"),
                                tf.keras.layers.Dense(1)])
    disc_optimizer = tf.keras.optimizers.Adam(1e-3)
    x = tf.constant(np.random.default_rng(0).random((6, 4)).astype("float32"))

    def compute_loss_vae(x):
        vae_loss, latent_loss, enc_loss = [], [], []
        for i in range(1):
            z_gen = tf.random.normal((6, 2))
            z = enc(x)
            x_recon = dec(z)
            logits_z = disc(z)
            logits_z_gen = disc(z_gen)
            wasserstein = tf.reduce_mean(logits_z_gen) - tf.reduce_mean(logits_z)
            rec = tf.reduce_mean(tf.reduce_sum(tf.math.square(x - x_recon), axis=0))
            enc_ = -tf.reduce_mean(logits_z)
            vae_loss.append(rec)
            latent_loss.append(wasserstein)
            enc_loss.append(enc_)
        return tf.reduce_mean(vae_loss, axis=0), tf.reduce_mean(latent_loss, axis=0), tf.reduce_mean(enc_loss, axis=0)

    def compute_gradients(x):
        with tf.GradientTape() as vae_tape, tf.GradientTape() as disc_tape, tf.GradientTape() as enc_tape:
            vae_loss, latent_loss, enc_loss = compute_loss_vae(x)
        vae_gradients = vae_tape.gradient(vae_loss, enc.trainable_variables + dec.trainable_variables)
        disc_gradients = disc_tape.gradient(-latent_loss, disc.trainable_variables)
        enc_gradients = enc_tape.gradient(enc_loss, enc.trainable_variables)
        return vae_gradients, disc_gradients, enc_gradients

    vae_gradients, disc_gradients, enc_gradients = compute_gradients(x)
    assert disc_gradients == [None] * 4
    assert all(g is not None for g in vae_gradients + enc_gradients)
    with pytest.raises(ValueError, match="no gradients provided for any variable") as info:
        disc_optimizer.apply_gradients(zip(disc_gradients, disc.trainable_variables))
    text = str(info.value)
    assert "computed_outside_tape" in text
    assert _lineno(compute_gradients, "disc_gradients = disc_tape.gradient(-latent_loss") in text
    assert "inside" in text
