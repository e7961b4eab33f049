"""A third set of real public questions new to this project, reduced faithfully (the user's structure and mistake).

None of these URLs (nor their thread numbers) appears in ``/work/cited_urls.txt`` or elsewhere in the tests and
docs. Each test runs the user's structure under the framework (PyTorch under ``adv.torch.record()``,
TensorFlow/Keras under ``adv.tf.record()``, or the engine typed as a learner moving TensorFlow code writes it,
``import autodiff_viz as tf``), asserts the framework's own answer (``None``, a ``.grad`` that stays ``None``, the
error or warning), then the diagnosis the accepted answer, the maintainer or the reporter's confirmed fix calls
for: the reason, the line the user must change and a fix that fits. Where the user's code runs inside an installed
library (Lightning, torchmetrics, TensorFlow Probability, transformers' TF BERT), the library's code is written,
reduced, to a temporary directory that the recorders count as installed code, as they count site-packages.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from unseen_questions import installed_fixture, tf_fixture, tf_installed_fixture  # noqa: F401  (fixtures)
from unseen_questions import line_in as _line
from unseen_questions import lineno_in as _lineno

import autodiff_viz as adv

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------
class SwitchGate(nn.Module):
    """fmoe/gates/switch_gate.py at 295a615, reduced: the gate scores the experts, routes each token to its
    top-1 expert and stores its load-balance loss with ``set_loss``."""

    def __init__(self, d_model, num_expert):
        super().__init__()
        self.gate = nn.Linear(d_model, num_expert)
        self.tot_expert = num_expert
        self.loss = None

    def set_loss(self, loss):
        self.loss = loss

    def get_loss(self, clear=True):
        loss = self.loss
        if clear:
            self.loss = None
        return loss

    def forward(self, inp):
        score = F.softmax(self.gate(inp).float(), dim=-1)
        top1_score, top1_idx = torch.topk(score, k=1, dim=-1, largest=True)
        valid_idx = top1_idx[top1_idx > -1]
        fraction_expert = torch.scatter_add(torch.zeros(self.tot_expert), 0, valid_idx,
                                            torch.ones_like(valid_idx, dtype=torch.float)) / valid_idx.numel()
        prob_expert = score.sum(dim=0) / valid_idx.numel()
        loss = (fraction_expert * prob_expert).sum() * self.tot_expert
        self.set_loss(loss)
        return top1_idx, top1_score


class MoELayer(nn.Module):
    def __init__(self, d_model=6, num_expert=3):
        super().__init__()
        self.gate = SwitchGate(d_model, num_expert)
        self.experts = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(num_expert))

    def forward(self, x):
        idx, score = self.gate(x)
        out = torch.stack([self.experts[int(i)](row) for i, row in zip(idx[:, 0], x)])
        return out * score


def forward_step_with_balance_loss(model, x, y, balance_loss_weight=1.0):
    """fmoe/megatron/balance.py at 295a615 (``patch_forward_step``), reduced: the LM loss plus the mean of the
    gates' balance losses."""
    output = F.mse_loss(model(x), y)
    loss_list = [l.gate.get_loss(clear=False) for l in model]
    (loss, state_dict), bal_loss = (
        (output, {}),
        (
            torch.tensor(
                loss_list, device=loss_list[0].device
            ).mean()
            * balance_loss_weight
        ).float(),
    )
    loss += bal_loss
    return loss, bal_loss


def test_balance_losses_collected_with_torch_tensor_are_not_optimized():
    """https://github.com/laekov/fastmoe/issues/49 — "Balance loss is not optimized": in
    ``fmoe/megatron/balance.py``, ``torch.tensor(loss_list)`` removes the ``grad_fn`` of each gate's balance loss
    (torch.tensor reads out the data and builds a leaf, like ``x.clone().detach()``); use ``torch.cat`` of the
    losses instead. The maintainer fixed it so (PR #50, "Fix grad of balance loss"). The gate still learns from
    the LM loss; only the balance term is cut, so the question is asked of ``bal_loss``."""
    torch.manual_seed(0)
    model = nn.Sequential(MoELayer(), MoELayer())
    x, y = torch.randn(5, 6), torch.randn(5, 6)
    with adv.torch.record() as rec:
        loss, bal_loss = forward_step_with_balance_loss(model, x, y)
        loss.backward()
    gate = model[0].gate.gate
    assert gate.weight.grad is not None                 # from the LM loss
    assert not bal_loss.requires_grad and bal_loss.grad_fn is None
    assert model[0].gate.get_loss(clear=False).requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(bal_loss, gate.weight)
    ex = rec.explain(bal_loss, gate.weight)
    assert ex.reason == "left_the_graph", (ex.reason, ex.message)
    assert ex.location == _line(forward_step_with_balance_loss, "torch.tensor(")
    assert "torch.stack" in ex.message or "torch.cat" in ex.message, ex.message


def mean_value_coordinates_3D(query, cage, cage_face, verbose=False):
    """A stand-in for deep_cage's mean value coordinates (common.py): smooth weights of each query point over
    the cage vertices, computed from their positions; the unnormalised weights are returned too."""
    d2 = ((query[:, :, None, :] - cage[:, None, :, :]) ** 2).sum(-1)           # (B, Q, C)
    weights_unnormed = torch.exp(-d2)
    weights = weights_unnormed / weights_unnormed.sum(-1, keepdim=True)
    return (weights, weights_unnormed) if verbose else weights


def deform_with_MVC(cage, cage_deformed, cage_face, query, verbose=False):
    """deep_cage common.py before da4c07d ("remove weights.detach()")."""
    weights, weights_unnormed = mean_value_coordinates_3D(query, cage, cage_face, verbose=True)
    weights = weights.detach()
    deformed = torch.sum(weights.unsqueeze(-1) * cage_deformed.unsqueeze(1), dim=2)
    if verbose:
        return deformed, weights, weights_unnormed
    return deformed


class MVCRegularizer(nn.Module):
    """Penalise large unnormalised and negative weights (deep_cage losses.py, reduced)."""

    def __init__(self, threshold=50, beta=1.0, alpha=0.0):
        super().__init__()
        self.threshold, self.beta, self.alpha = threshold, beta, alpha

    def forward(self, weights):
        loss = self.beta * torch.mean(F.relu(-weights)) + torch.mean(F.relu(weights - self.threshold))
        return loss + self.alpha * torch.mean(weights ** 2)


class CageNetwork(nn.Module):
    """deep_cage networks.py, reduced: a decoder moves the template cage (``nc_decoder``), another predicts the
    deformed cage, and the shape is deformed with mean value coordinates."""

    def __init__(self, num_points=6):
        super().__init__()
        self.register_buffer("template_vertices", torch.randn(1, num_points, 3))
        self.register_buffer("template_faces", torch.zeros(1, 4, 3, dtype=torch.long))
        self.nc_decoder = nn.Linear(3, 3)
        self.nd_decoder = nn.Linear(3, 3)

    def forward(self, source_shape):
        B = source_shape.shape[0]
        cage = self.template_vertices.expand(B, -1, -1)
        cage = cage + self.nc_decoder(cage)
        new_cage = cage + self.nd_decoder(cage)
        deformed_shapes, weights, weights_unnormed = deform_with_MVC(cage, new_cage,
                                                                     self.template_faces.expand(B, -1, -1),
                                                                     source_shape, verbose=True)
        return {"cage": cage, "new_cage": new_cage, "deformed": deformed_shapes, "weight": weights,
                "weight_unnormed": weights_unnormed}


def test_mvc_weights_detached_inside_the_deformation_helper():
    """https://github.com/yifita/deep_cage/issues/16 — "Why use weights = weights.detach() on line 137 of
    common.py?": the loss ``WREG = mvc_reg_loss(all_outputs["weight"]) * mvc_weight`` has
    ``requires_grad == False``, so whatever ``mvc_weight`` is, training does not change. The author: the line was
    added later, out of context; she commented it out (da4c07d)."""
    torch.manual_seed(0)
    net = CageNetwork()
    mvc_reg_loss = MVCRegularizer(threshold=50, beta=1.0, alpha=0.0)
    mvc_weight = 10.0
    source = torch.randn(2, 5, 3)
    with adv.torch.record() as rec:
        all_outputs = net(source)
        wreg = mvc_reg_loss(all_outputs["weight"]) * mvc_weight
    assert all_outputs["weight"].requires_grad is False
    assert not wreg.requires_grad
    ex = rec.explain(wreg, net.nc_decoder.weight)
    assert ex.reason == "detached", (ex.reason, ex.message)
    assert ex.location == _line(deform_with_MVC, "weights = weights.detach()")
    assert ".detach()" in ex.message


def test_occlusion_mask_loss_made_by_a_comparison():
    """https://github.com/cwmok/DIRAC/issues/13 — "Mask loss (OCC) cannot be backpropagated": ``occ_xy =
    (smo_norm_diff_fw > thresh_fw).float()`` and ``loss_occ = torch.mean(occ_xy) + torch.mean(occ_yx)``; the
    comparison is not differentiable, so ``print(loss_multiNCC.requires_grad, loss_occ.requires_grad)`` gives
    ``True, False``. The author agreed and replaced it with ``F.relu(smo_norm_diff_fw - thresh_fw)``. Reduced from
    BRATS_train_DIRAC.py: a small 3-D network predicts both displacement fields (the warp of one field by the
    other is left out)."""
    torch.manual_seed(0)
    model = nn.Conv3d(2, 3, 3, padding=1)
    X = torch.rand(1, 1, 6, 6, 6)
    Y = torch.rand(1, 1, 6, 6, 6)

    def case():
        with adv.torch.record() as rec:
            F_X_Y = model(torch.cat((X, Y), 1))
            F_Y_X = model(torch.cat((Y, X), 1))
            diff_fw = F_X_Y + F_Y_X  # Y
            diff_bw = F_Y_X + F_X_Y  # X
            fw_mask = (Y > 0).float()
            bw_mask = (X > 0).float()
            u_diff_fw = torch.sum(torch.norm(diff_fw * fw_mask, dim=1, keepdim=True)) / torch.sum(fw_mask)
            u_diff_bw = torch.sum(torch.norm(diff_bw * bw_mask, dim=1, keepdim=True)) / torch.sum(bw_mask)
            thresh_fw = (u_diff_fw + 0.015) * torch.ones_like(Y, device=Y.device)
            thresh_bw = (u_diff_bw + 0.015) * torch.ones_like(X, device=X.device)
            norm_diff_fw = torch.norm(diff_fw, dim=1, keepdim=True)
            norm_diff_bw = torch.norm(diff_bw, dim=1, keepdim=True)
            smo_norm_diff_fw = F.avg_pool3d(F.avg_pool3d(norm_diff_fw, kernel_size=5, stride=1, padding=2),
                                            kernel_size=5, stride=1, padding=2)
            smo_norm_diff_bw = F.avg_pool3d(F.avg_pool3d(norm_diff_bw, kernel_size=5, stride=1, padding=2),
                                            kernel_size=5, stride=1, padding=2)
            occ_xy = (smo_norm_diff_fw > thresh_fw).float()  # y mask
            occ_yx = (smo_norm_diff_bw > thresh_bw).float()  # x mask
            occ_xy = occ_xy * fw_mask
            occ_yx = occ_yx * bw_mask
            mask_xy = 1. - occ_xy
            loss_multiNCC = torch.mean((F_X_Y - Y) ** 2 * mask_xy)
            loss_occ = torch.mean(occ_xy) + torch.mean(occ_yx)
        return rec, loss_multiNCC, loss_occ
    rec, loss_multiNCC, loss_occ = case()
    assert (loss_multiNCC.requires_grad, loss_occ.requires_grad) == (True, False)
    ex = rec.explain(loss_occ, model.weight)
    assert ex.reason == "non_differentiable_op", (ex.reason, ex.message)
    assert ex.location in (_line(case, "occ_xy = (smo_norm_diff_fw > thresh_fw)"),
                           _line(case, "occ_yx = (smo_norm_diff_bw > thresh_bw)")), ex.location
    assert "relu" in ex.message.lower() or "sigmoid" in ex.message.lower(), ex.message


LIGHTNING_17 = '''
"""pytorch_lightning 1.7, reduced: Trainer.predict runs every predict_step under torch.inference_mode()
(trainer/trainer.py ``_evaluation_context``)."""
import torch


class LightningModule(torch.nn.Module):
    pass


class Trainer:
    def predict(self, model, dataloaders):
        model.eval()
        results = []
        with torch.inference_mode():
            for batch_idx, batch in enumerate(dataloaders):
                results.append(model.predict_step(batch, batch_idx))
        return results
'''


def test_enable_grad_inside_predict_step_under_the_trainers_inference_mode(installed):
    """https://github.com/mit-ll-responsible-ai/responsible-ai-toolbox/issues/78 — ``gradient_ascent`` inside a
    ``LightningModule``'s ``predict_step`` gets no graph. The maintainer's reduction: in ``predict_step``,
    ``x = tr.tensor(1.0, requires_grad=True)``, ``with tr.enable_grad(): z = x * y`` and ``assert z.requires_grad``
    fails: "PL disables all gradient-tracking within the context of predict" — ``Trainer.predict`` runs under
    ``torch.inference_mode()``, which ``enable_grad`` does not lift (Lightning later added
    ``Trainer(inference_mode=False)``)."""
    pl = installed("pl_reduced", LIGHTNING_17)

    class Lit(pl.LightningModule):
        def predict_step(self, batch, *args, **kwargs):
            x = torch.tensor(1.0, requires_grad=True)
            y = torch.tensor(2.0, requires_grad=True)
            with torch.enable_grad():
                z = x * y
            return x, z

    def case():
        trainer = pl.Trainer()
        with adv.torch.record() as rec:
            (x, z), = trainer.predict(Lit(), dataloaders=[torch.tensor([1.0])])
        return rec, x, z
    rec, x, z = case()
    assert x.requires_grad and not z.requires_grad
    ex = rec.explain(z, x)
    assert ex.reason == "inference_mode", (ex.reason, ex.message)
    assert ex.location == _line(case, "trainer.predict(Lit()")
    assert "inference_mode=False" in ex.message or "inference_mode(False)" in ex.message, ex.message
    assert "outside `with torch" not in ex.message


TORCHMETRICS_04 = '''
"""torchmetrics 0.4.1, reduced: Metric.forward updates under no_grad, then computes on the batch;
AveragePrecision computes the precision-recall curve under torch.no_grad() (it is not differentiable:
``is_differentiable`` is False)."""
import torch
from torch.nn import functional as F


def _binary_clf_curve(preds, target, pos_label=1):
    desc_score_indices = torch.argsort(preds, descending=True)
    preds = preds[desc_score_indices]
    target = target[desc_score_indices]
    distinct_value_indices = torch.where(preds[1:] - preds[:-1])[0]
    threshold_idxs = F.pad(distinct_value_indices, [0, 1], value=target.size(0) - 1)
    target = (target == pos_label).to(torch.long)
    tps = torch.cumsum(target * 1., dim=0)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    return fps, tps, preds[threshold_idxs]


def _precision_recall_curve_compute(preds, target, pos_label=1):
    with torch.no_grad():
        fps, tps, thresholds = _binary_clf_curve(preds, target, pos_label)
        precision = tps / (tps + fps)
        recall = tps / tps[-1]
        last_ind = torch.where(tps == tps[-1])[0][0]
        sl = slice(0, last_ind.item() + 1)
        precision = torch.cat([reversed(precision[sl]), torch.ones(1, dtype=precision.dtype)])
        recall = torch.cat([reversed(recall[sl]), torch.zeros(1, dtype=recall.dtype)])
        return precision, recall, thresholds


class Metric(torch.nn.Module):
    def forward(self, *args, **kwargs):
        with torch.no_grad():
            self.update(*args, **kwargs)
        self.reset()
        self.update(*args, **kwargs)
        return self.compute()


class AveragePrecision(Metric):
    def __init__(self, pos_label=1):
        super().__init__()
        self.pos_label = pos_label
        self.reset()

    def reset(self):
        self.preds, self.target = [], []

    def update(self, preds, target):
        self.preds.append(preds.flatten())
        self.target.append(target.flatten())

    def compute(self):
        preds, target = torch.cat(self.preds), torch.cat(self.target)
        precision, recall, _ = _precision_recall_curve_compute(preds, target, self.pos_label)
        return -torch.sum((recall[1:] - recall[:-1]) * precision[:-1])

    @property
    def is_differentiable(self):
        return False
'''


def test_average_precision_metric_used_as_a_loss(installed):
    """https://github.com/Lightning-AI/torchmetrics/issues/388 — "Classification metrics do not return grad":
    ``loss = torchmetrics.AveragePrecision()(x, y)`` then ``loss.backward()`` raises "element 0 of tensors does not
    require grad"; ``MeanSquaredError`` works. The maintainer (Borda): it is expected, AveragePrecision is not
    differentiable (``is_differentiable`` is False); the reporter turned to a differentiable loss (BCE).
    torchmetrics computes the curve under ``torch.no_grad()``: the user turned nothing off."""
    torchmetrics = installed("torchmetrics_reduced", TORCHMETRICS_04)

    def case():
        x = torch.tensor([0.1, 0.6, 0.3], requires_grad=True)
        y = torch.tensor([0, 1, 1])
        with adv.torch.record() as rec:
            loss = torchmetrics.AveragePrecision()(x, y)
            with pytest.raises(RuntimeError, match="does not require grad"):
                loss.backward()
        return rec, loss, x
    rec, loss, x = case()
    assert x.grad is None
    ex = rec.explain(loss, x)
    assert ex.reason == "no_grad", (ex.reason, ex.message)
    assert ex.location == _line(case, "loss = torchmetrics.AveragePrecision()(x, y)")
    assert "AveragePrecision" in ex.message and "differentiable" in ex.message, ex.message
    assert "outside `with torch.no_grad()`" not in ex.message


def test_weight_of_an_orthogonally_parametrized_linear_layer():
    """https://github.com/lezcano/geotorch/issues/44 — with ``geotorch.orthogonal`` (and likewise
    ``torch.nn.utils.parametrizations.orthogonal``) on a linear layer, ``linear.weight.grad`` is None. The
    maintainer (lezcano): after parametrising ``weight`` it is no longer a leaf, so it has no grad; the parameter
    is now ``linear.parametrizations.weight.original``, which does have a gradient. Reduced with PyTorch's own
    ``orthogonal``, which the reporter names as behaving the same."""
    from torch.nn.utils import parametrizations

    def case():
        torch.manual_seed(0)
        linear = nn.Linear(4, 4)
        with adv.torch.record() as rec:
            parametrizations.orthogonal(linear)
            loss = linear(torch.randn(3, 4)).pow(2).sum()
            loss.backward()
            weight = linear.weight
            grad = weight.grad
        return rec, loss, linear, weight, grad
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        rec, loss, linear, weight, grad = case()
    assert grad is None and not weight.is_leaf
    assert linear.parametrizations.weight.original.grad is not None
    ex = rec.explain(loss, weight)
    assert ex.reason == "non_leaf", (ex.reason, ex.message)
    assert ex.location == _line(case, "parametrizations.orthogonal(linear)")
    assert "parametrizations.weight.original" in ex.message, ex.message


LIGHTNING_08 = '''
"""pytorch_lightning 0.8, reduced: Trainer.test puts the model in eval mode and runs every test_step under
torch.no_grad() (trainer/evaluation_loop.py)."""
import torch


class LightningModule(torch.nn.Module):
    pass


class Trainer:
    def test(self, model, test_dataloaders):
        model.eval()
        outputs = []
        with torch.no_grad():
            for batch_idx, batch in enumerate(test_dataloaders):
                outputs.append(model.test_step(batch, batch_idx))
        model.train()
        return outputs
'''


def test_input_gradients_asked_for_inside_test_step(installed):
    """https://github.com/Lightning-AI/pytorch-lightning/issues/2427 — in ``test_step``: ``copied_input =
    imgs.clone()``, ``copied_input.requires_grad_(True)``, ``output = self.classifier(copied_input)``, the loss and
    ``torch.autograd.grad(loss, copied_input)`` raise "element 0 of tensors does not have a grad_fn"; in training
    the same lines work. The maintainer (williamFalcon): test/eval is done without gradients (the Trainer runs the
    loop under no_grad). His ``self.train()`` did not help the reporter: train mode is not grad mode; the fix is to
    turn gradients back on inside ``test_step`` (``torch.enable_grad()``)."""
    pl = installed("pl08_reduced", LIGHTNING_08)

    class Model(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(12, 3))

        def criterion_ce(self, y_hat, y):
            return F.cross_entropy(y_hat, y)

        def test_step(self, batch, batch_nb):
            imgs, labels = batch
            self.last_imgs = imgs

            # get gradients
            self.classifier.eval()
            copied_input = imgs.clone()
            copied_input.requires_grad_(True)
            output = self.classifier(copied_input)
            loss = self.criterion_ce(output, labels)
            self.seen = (loss, copied_input)
            gradients = torch.autograd.grad(loss, copied_input)[0]
            self.last_grad = gradients

    def case():
        torch.manual_seed(0)
        model = Model()
        batch = (torch.randn(2, 3, 2, 2), torch.tensor([0, 2]))
        with adv.torch.record() as rec:
            with pytest.raises(RuntimeError, match="does not require grad|does not have a grad_fn"):
                pl.Trainer().test(model, test_dataloaders=[batch])
        return rec, model
    rec, model = case()
    loss, copied_input = model.seen
    assert loss.grad_fn is None and copied_input.requires_grad
    ex = rec.explain(loss, copied_input)
    assert ex.reason == "no_grad", (ex.reason, ex.message)
    assert ex.location == _line(case, "pl.Trainer().test(model")
    assert "enable_grad" in ex.message, ex.message
    assert "model.train()" not in ex.message and "self.train()" not in ex.message


# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def test_target_summed_inside_the_gradient_call_not_tf_where(tf):
    """https://github.com/tensorflow/tensorflow/issues/115116 — "tf.where returns None gradient for
    differentiable expression": ``y = tf.where(x > 0, x, x * x)`` inside the tape, then ``grad =
    tape.gradient(tf.reduce_sum(y), x)`` is None. A comment in the thread blames ``tf.where`` (and a PR proposed a
    warning for it); the cause is stated in tensorflow#115258 (docs PR for this issue): "the issue was that I was
    building the target outside GradientTape", which the reviewer confirms — ops that connect sources to target
    must run inside the ``with`` block, and ``tf.where`` does pass gradients to its branches. The recording keeps
    the target the user passed to ``tape.gradient`` (the user holds no handle to it)."""
    def case():
        with adv.tf.record() as rec:
            x = tf.Variable([-1.0, 2.0, -3.0])

            with tf.GradientTape() as tape:
                y = tf.where(x > 0, x, x * x)

            grad = tape.gradient(tf.reduce_sum(y), x)
        return rec, x, y, grad
    rec, x, y, grad = case()
    assert grad is None
    with tf.GradientTape() as tape:                       # the fix: the sum inside the block
        loss = tf.reduce_sum(tf.where(x > 0, x, x * x))
    assert tape.gradient(loss, x).numpy().tolist() == [-2.0, 1.0, -6.0]
    target = next(op for op in reversed(rec.ops) if op.kind == "gradient").extra["target"]
    ex = rec.explain(target, x)
    assert ex.reason == "computed_outside_tape", (ex.reason, ex.message)
    assert ex.location == _line(case, "grad = tape.gradient(tf.reduce_sum(y), x)")
    assert "inside" in ex.message
    assert "where" not in (ex.op or "")


TFP_NORMAL_06 = '''
"""tensorflow_probability 0.6 distributions/normal.py, reduced: the constructor stores its parameters through
tf.identity (``self._loc = tf.identity(loc)``), as the issue quotes; the methods read those tensors."""
import math

import tensorflow as tf


class Normal:
    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        self._parameters = dict(loc=loc, scale=scale)
        with tf.name_scope(name):
            self._loc = tf.identity(loc)
            self._scale = tf.identity(scale)

    @property
    def parameters(self):
        return dict(self._parameters)

    def log_prob(self, x):
        z = (x - self._loc) / self._scale
        return -0.5 * tf.square(z) - (0.5 * math.log(2. * math.pi) + tf.math.log(self._scale))

    def prob(self, x):
        return tf.exp(self.log_prob(x))
'''


def test_distribution_built_before_the_tape(tf_installed, tf):
    """https://github.com/tensorflow/probability/issues/285 — ``normal = tfd.Normal(loc=var1, scale=var2)`` outside
    the tape, ``prob = normal.prob(42.)`` inside it: ``tape.watched_variables()`` is empty and the gradient is
    None, because the constructor stores ``tf.identity(loc)``. The maintainers: put the instantiation of the
    Normal inside the tape (brianwa84); a distribution created outside a GradientTape and used inside needs all
    its ops created at method-call time, which is not guaranteed — re-create it inside (``copy()``) (davmre)."""
    tfd = tf_installed("tfp_normal_reduced", TFP_NORMAL_06)

    def case():
        with adv.tf.record() as rec:
            var1, var2 = tf.Variable(1.), tf.Variable(2.)
            normal = tfd.Normal(loc=var1, scale=var2)
            with tf.GradientTape() as tape:
                prob = normal.prob(42.)
            watched = tape.watched_variables()
            grad = tape.gradient(prob, var1)
        return rec, prob, var1, watched, grad
    rec, prob, var1, watched, grad = case()
    assert watched == () and grad is None
    ex = rec.explain(prob, var1)
    assert ex.reason == "computed_outside_tape", (ex.reason, ex.message)
    assert ex.location == _line(case, "normal = tfd.Normal(loc=var1")
    assert "inside" in ex.message and "Normal" in ex.message, ex.message


TF_BERT = '''
"""transformers' TFBertModel (2020), reduced to Keras 3: embeddings, an encoder, and a pooler (Dense + tanh on the
first token) whose output is the second element of what the model returns."""
import keras


class TFBertModel(keras.layers.Layer):
    def __init__(self, vocab_size=30, hidden_size=8, **kwargs):
        super().__init__(name="tf_bert_model", **kwargs)
        self.embeddings = keras.layers.Embedding(vocab_size, hidden_size, name="embeddings")
        self.token_type_embeddings = keras.layers.Embedding(2, hidden_size, name="token_type_embeddings")
        self.encoder = keras.layers.Dense(hidden_size, activation="gelu", name="encoder")
        self.pooler = keras.layers.Dense(hidden_size, activation="tanh", name="pooler")

    def call(self, input_ids, attention_mask=None, token_type_ids=None):
        h = self.embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        h = self.encoder(h) * keras.ops.expand_dims(keras.ops.cast(attention_mask, h.dtype), -1)
        pooled_output = self.pooler(h[:, 0])
        return h, pooled_output
'''


def test_bert_pooler_unused_when_only_the_sequence_output_is_taken(tf_installed, tf):
    """https://github.com/huggingface/transformers/issues/5427 — ``ip = Bert_model(ip1, attention_mask=ip2,
    token_type_ids=ip3)[0][:,1:-1,:]`` feeds a BiLSTM and dense layers; ``model.fit`` warns "Gradients do not exist
    for variables ['tf_bert_model/bert/pooler/dense/kernel:0', ...bias:0]". The cause, as the maintainer
    (LysandreJik) answered the same code in huggingface/transformers#5421: ``[0]`` takes only the first output
    (the hidden states) to compute the loss; the pooler makes the second output, which nothing reads. The warning
    must say so, at the line that takes ``[0]``, and how to silence it (freeze the unused pooler, or use the pooled
    output). The model is built inside the recording (the user's order — build, compile, fit — is kept): the line
    that wired the layer into the model is only seen when the building is recorded."""
    import keras
    transformers_tf = tf_installed("tf_bert_reduced", TF_BERT)
    from keras.layers import LSTM, Bidirectional, Dense, Dropout, Input
    max_length = 6

    def build():
        ip1 = Input(shape=(max_length + 2,), dtype="int32")
        ip2 = Input(shape=(max_length + 2,), dtype="int32")
        ip3 = Input(shape=(max_length + 2,), dtype="int32")
        Bert_model = transformers_tf.TFBertModel()
        ip = Bert_model(ip1, attention_mask=ip2, token_type_ids=ip3)[0][:, 1:-1, :]
        out = Bidirectional(LSTM(units=4))(ip)
        out = Dense(6, activation='relu')(out)
        out = Dropout(0.2)(out)
        out = Dense(units=9, activation="softmax")(out)
        return keras.Model([ip1, ip2, ip3], out)
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 30, (8, max_length + 2)).astype("int32")
    mask, types = np.ones_like(ids), np.zeros_like(ids)
    labels = rng.integers(0, 9, (8,))
    with adv.tf.record(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = build()
        model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
        model.fit([ids, mask, types], labels, batch_size=8, epochs=1, verbose=0)
    text = "\n".join(str(w.message) for w in caught if "Gradients do not exist" in str(w.message))
    assert "pooler" in text and "encoder" not in text.split("\n")[0], text[:500]
    assert "not_used" in text, text
    assert _lineno(build, "ip = Bert_model(ip1, attention_mask=ip2") in text, text
    assert "trainable" in text or "pooled" in text, text


def test_loss_that_reads_a_hidden_layer_and_not_the_output(tf):
    """https://stackoverflow.com/questions/51257037 (read at its mirror https://thinbug.com/q/51257037) — "In
    Keras, why must the loss function be computed based upon the output of the neural network?": ``myLoss`` returns
    ``K.sum(hidden_a)`` and fit fails with "An operation has `None` for gradient"; ``K.sum(hidden_a) +
    0*K.sum(y_pred)`` works. The accepted answer: Keras does not need ``y_pred`` in the loss, but the loss must
    reference all the trainable variables; the output layer's are not, so their gradient is None. Fix: reference
    y_pred, or freeze the layers the loss does not reach (``Dense(1, trainable=False)``). Keras 3 cannot read a
    symbolic tensor inside a loss function, so the loss is attached to the hidden layer's output as a second
    model output (``loss=[None, myLoss]``): the same structure (the loss reads ``hidden_a`` only); Keras 3 warns
    "Gradients do not exist" for the output layer instead of failing."""
    import keras
    from keras import ops as K
    from keras.layers import Dense, Input
    keras.utils.set_random_seed(0)

    def build():
        input_1 = Input((5,))
        hidden_a = Dense(2, name="hidden_a")(input_1)
        output = Dense(1, name="output")(hidden_a)
        return keras.Model(input_1, [output, hidden_a])

    def myLoss(y_true, y_pred):
        return K.sum(y_pred)                    # y_pred is hidden_a: the loss reads the hidden layer only

    m3 = build()
    m3.compile(optimizer='adam', loss=[None, myLoss])
    x = np.random.random(size=(10, 5)).astype("float32")
    y = np.random.random(size=(10, 1)).astype("float32")
    with adv.tf.record(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m3.fit(x, [y, np.zeros((10, 2), "float32")], epochs=1, batch_size=10, verbose=0)
    text = "\n".join(str(w.message) for w in caught if "Gradients do not exist" in str(w.message))
    assert "output/kernel" in text and "hidden_a/kernel" not in text.split("\n")[0], text[:500]
    assert "not_used" in text, text
    assert "trainable=False" in text or "trainable = False" in text, text


# ---------------------------------------------------------------------------
# The engine, typed as a learner moving TensorFlow code writes it
# ---------------------------------------------------------------------------
def test_weights_masked_once_in_build_in_the_engine():
    """https://github.com/tensorflow/tensorflow/issues/47053 — "Weight becomes untrainable after multiplying with
    constant": to zero and freeze some weights, a custom layer multiplies its weight matrix by a constant mask, and
    the weight is no longer trained (it worked in TF 1). The answer (WindQAQ): it does not work because
    ``self.kernel`` is computed outside the GradientTape scope — the product is made once, when the layer is
    built, not in ``call``. Typed with ``import autodiff_viz as tf``."""
    import autodiff_viz as tf
    tf.layers.set_random_seed(0)
    mask = np.array([[1., 0., 1.], [0., 1., 1.], [1., 1., 0.], [1., 0., 0.]], dtype="float32")

    class MaskedDense(tf.keras.layers.Layer):
        def __init__(self, units, mask):
            super().__init__()
            self.units = units
            self.mask = tf.constant(mask)

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform",
                                          trainable=True)
            self.kernel = self.kernel * self.mask

        def call(self, inputs):
            return tf.matmul(inputs, self.kernel)

    layer = MaskedDense(3, mask)
    model = tf.keras.Sequential([tf.keras.layers.Input((4,)), layer])
    x = np.random.default_rng(0).random((5, 4)).astype("float32")
    weights = model.trainable_variables
    assert len(weights) == 1

    def case():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x) ** 2)
        return tape, loss
    tape, loss = case()
    assert tape.gradient(loss, weights) == [None]
    ex = tape.explain(loss, weights[0])
    assert ex.reason == "computed_outside_tape", (ex.reason, ex.message)
    assert ex.location == _line(MaskedDense.build, "self.kernel = self.kernel * self.mask")
    assert "call()" in ex.message, ex.message
