"""A fourth set of real public questions new to this project, reduced faithfully (the user's structure and mistake).

None of these URLs (nor their thread numbers) appears in ``/work/cited_urls.txt`` or elsewhere in the tests and
docs. Each test runs the user's structure under the framework (PyTorch under ``adv.torch.record()``,
TensorFlow/Keras under ``adv.tf.record()``, or the engine typed as a learner moving TensorFlow code writes it,
``import autodiff_viz as tf``), asserts the framework's own answer (``None``, a ``.grad`` that stays ``None``, the
error or warning), then the diagnosis the accepted answer, the maintainer or the reporter's confirmed fix calls
for: the reason, the line the user must change and a fix that fits. Where the user's code runs inside an installed
library (silero-models' utils, speechbrain's ``Pretrained``), the library's code is written, reduced, to a
temporary directory that the recorders count as installed code, as they count site-packages.
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
class GFLHead(nn.Module):
    """nanodet/model/head/gfl_head.py at 5a7a501, reduced to one feature level: a classification branch and a
    box-distribution branch over the anchors; ``loss`` sums the per-level losses and, when the batch has no
    positive anchor (``avg_factor <= 0``), returns losses built as constants."""

    def __init__(self, in_channels=4, num_classes=3, reg_max=7):
        super().__init__()
        self.num_classes = num_classes
        self.reg_max = reg_max
        self.gfl_cls = nn.Conv2d(in_channels, num_classes, 3, padding=1)
        self.gfl_reg = nn.Conv2d(in_channels, 4 * (reg_max + 1), 3, padding=1)

    def forward(self, feats):
        cls_score = self.gfl_cls(feats).permute(0, 2, 3, 1).reshape(-1, self.num_classes)
        bbox_pred = self.gfl_reg(feats).permute(0, 2, 3, 1).reshape(-1, 4 * (self.reg_max + 1))
        return cls_score, bbox_pred

    def loss_single(self, cls_score, bbox_pred, labels, bbox_targets, num_total_samples):
        bg_class_ind = self.num_classes
        pos_inds = torch.nonzero((labels >= 0) & (labels < bg_class_ind), as_tuple=False).squeeze(1)
        score = cls_score.new_zeros(labels.shape)
        if len(pos_inds) > 0:
            weight_targets = cls_score.detach().sigmoid().max(dim=1)[0][pos_inds]
            pos_bbox_pred = bbox_pred[pos_inds].reshape(-1, 4, self.reg_max + 1).softmax(-1)
            pos_bbox_pred = (pos_bbox_pred * torch.arange(self.reg_max + 1.0)).sum(-1)
            loss_bbox = (F.l1_loss(pos_bbox_pred, bbox_targets[pos_inds], reduction="none").sum(-1)
                         * weight_targets).sum()
            loss_dfl = loss_bbox * 0.25
        else:
            loss_bbox = bbox_pred.sum() * 0
            loss_dfl = bbox_pred.sum() * 0
            weight_targets = torch.tensor(0)
        target = F.one_hot(labels, self.num_classes + 1)[:, :self.num_classes].float() * score[:, None]
        loss_qfl = F.binary_cross_entropy_with_logits(cls_score, target, reduction="sum") / num_total_samples
        return loss_qfl, loss_bbox, loss_dfl, weight_targets.sum()

    def loss(self, preds, gt_meta):
        cls_score, bbox_pred = preds
        labels, bbox_targets = gt_meta["gt_labels"], gt_meta["gt_bboxes"]
        num_total_pos = int(((labels >= 0) & (labels < self.num_classes)).sum())
        num_total_samples = max(float(num_total_pos), 1.0)
        losses_qfl, losses_bbox, losses_dfl, avg_factor = self.loss_single(
            cls_score, bbox_pred, labels, bbox_targets, num_total_samples=num_total_samples)
        avg_factor = avg_factor.item()
        if avg_factor <= 0:
            loss_qfl = torch.tensor(0, dtype=torch.float32)
            loss_bbox = torch.tensor(0, dtype=torch.float32)
            loss_dfl = torch.tensor(0, dtype=torch.float32)
        else:
            loss_qfl = losses_qfl
            loss_bbox = losses_bbox / avg_factor
            loss_dfl = losses_dfl / avg_factor
        loss = loss_qfl + loss_bbox + loss_dfl
        loss_states = dict(loss_qfl=loss_qfl, loss_bbox=loss_bbox, loss_dfl=loss_dfl)
        return loss, loss_states


def test_detection_loss_built_from_zero_constants_when_a_batch_has_no_positives():
    """https://github.com/RangiLyu/nanodet/issues/7 — with the warmup steps changed from 300 to 30, ``loss.backward()``
    in the trainer's ``run_step`` raises "element 0 of tensors does not require grad and does not have a grad_fn".
    The reporter's fix, confirmed by the issue's author and then made by the maintainer in ``gfl_head.py``: the
    three ``torch.tensor(0, dtype=torch.float32)`` of the ``avg_factor <= 0`` branch (a batch without any positive
    anchor) are constants, so the loss is not computed from the model at all. Reduced to one feature level; the
    batch has only background anchors."""
    torch.manual_seed(0)
    head = GFLHead()
    feats = torch.randn(1, 4, 3, 3)
    gt_meta = {"gt_labels": torch.full((9,), 3), "gt_bboxes": torch.zeros(9, 4)}

    def run_step(model, feats, gt_meta):
        preds = model(feats)
        loss, loss_states = model.loss(preds, gt_meta)
        return loss, loss_states

    with adv.torch.record() as rec:
        loss, loss_states = run_step(head, feats, gt_meta)
        with pytest.raises(RuntimeError, match="does not require grad"):
            loss.backward()
    assert head.gfl_cls.weight.grad is None and not loss.requires_grad
    ex = rec.explain(loss, head.gfl_cls.weight)
    assert ex.reason == "not_used", (ex.reason, ex.location, ex.message)
    assert ex.location in (_line(GFLHead.loss, "loss_qfl = torch.tensor(0, dtype=torch.float32)"),
                           _line(GFLHead.loss, "loss_bbox = torch.tensor(0, dtype=torch.float32)"),
                           _line(GFLHead.loss, "loss_dfl = torch.tensor(0, dtype=torch.float32)")), ex.location
    assert "does not depend" in ex.message, ex.message


class DummyModel(nn.Module):
    """RecBole's general recommender with the user and item embeddings loaded as pre-trained weights (the
    ``preload_weight`` route of RecBole's "Load Pre-trained Embedding" guide), scored with a BPR loss."""

    def __init__(self, pretrained_user_emb, pretrained_item_emb):
        super().__init__()
        self.user_embedding = nn.Embedding.from_pretrained(pretrained_user_emb)
        self.item_embedding = nn.Embedding.from_pretrained(pretrained_item_emb)

    def calculate_loss(self, interaction):
        user, pos_item, neg_item = interaction["user_id"], interaction["item_id"], interaction["neg_item_id"]
        u = self.user_embedding(user)
        pos_score = torch.mul(u, self.item_embedding(pos_item)).sum(dim=1)
        neg_score = torch.mul(u, self.item_embedding(neg_item)).sum(dim=1)
        return -torch.log(1e-10 + torch.sigmoid(pos_score - neg_score)).mean()


def test_embedding_loaded_with_from_pretrained_is_frozen_by_default():
    """https://github.com/RUCAIBox/RecBole/issues/2027 — a dummy model whose embeddings are loaded pre-trained: in
    ``trainer.fit``, ``loss.backward()`` raises "element 0 of tensors does not require grad and does not have a
    grad_fn". The reporter: they are frozen by default, "of course, if I put freeze to False, it works":
    ``nn.Embedding.from_pretrained(embeddings, freeze=True)`` is the default, so the model has no parameter that
    requires grad."""
    torch.manual_seed(0)
    interaction = {"user_id": torch.tensor([0, 1, 2]), "item_id": torch.tensor([1, 2, 3]),
                   "neg_item_id": torch.tensor([4, 5, 6])}
    with adv.torch.record() as rec:
        model = DummyModel(torch.randn(5, 4), torch.randn(7, 4))
        loss = model.calculate_loss(interaction)
        with pytest.raises(RuntimeError, match="does not require grad"):
            loss.backward()
    assert not model.item_embedding.weight.requires_grad and model.item_embedding.weight.grad is None
    ex = rec.explain(loss, model.item_embedding.weight)
    assert ex.reason == "requires_grad_false", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(DummyModel.__init__, "self.item_embedding = nn.Embedding.from_pretrained("), \
        ex.location
    assert "freeze=False" in ex.message, ex.message


class VanillaBackprop:
    """pytorch-cnn-visualizations src/vanilla_backprop.py (2019): a backward hook on the first layer keeps
    ``grad_in[0]``, the gradient with respect to the image."""

    def __init__(self, model):
        self.model = model
        self.gradients = None
        self.model.eval()
        self.hook_layers()

    def hook_layers(self):
        def hook_function(module, grad_in, grad_out):
            self.gradients = grad_in[0]
        first_layer = list(self.model.features._modules.items())[0][1]
        first_layer.register_backward_hook(hook_function)

    def generate_gradients(self, input_image, target_class):
        model_output = self.model(input_image)
        self.model.zero_grad()
        one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
        one_hot_output[0][target_class] = 1
        model_output.backward(gradient=one_hot_output)
        self.model_output = model_output
        gradients_as_arr = self.gradients.data.numpy()[0]
        return gradients_as_arr


class MyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def test_backward_hook_on_the_first_layer_gets_no_input_gradient():
    """https://github.com/utkuozbulak/pytorch-cnn-visualizations/pull/43 — vanilla backprop on one's own CNN and
    data: "the gradients were not computed up to the input image. Therefore, ``grad_in[0]`` in ``hook_function`` was
    None. Manually setting ``requires_grad = True`` for the input data solved the issue." The maintainer: the
    repository's examples do it once, in ``preprocess_image``; the reporter's image came from his own data
    (reduced here to a random image)."""
    torch.manual_seed(0)

    def case():
        with adv.torch.record() as rec, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = MyCNN()
            input_image = torch.rand(1, 3, 8, 8)
            vbp = VanillaBackprop(model)
            with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'data'"):
                vbp.generate_gradients(input_image, 2)
        return rec, vbp, model, input_image
    rec, vbp, model, input_image = case()
    assert vbp.gradients is None and model.features[0].weight.grad is not None
    ex = rec.explain(vbp.model_output, input_image)
    assert ex.reason == "requires_grad_false", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "input_image = torch.rand("), ex.location
    assert "requires_grad" in ex.message, ex.message


class NetworkGroup:
    def __init__(self, networks_to_optimize, forward_functions, backward_functions, loss_names_list, optimizer,
                 loss_backward):
        self.networks_to_optimize = networks_to_optimize
        self.forward_functions = forward_functions
        self.backward_functions = backward_functions
        self.loss_names_list = loss_names_list
        self.optimizer = optimizer
        self.loss_backward = loss_backward


class CycleGANModel:
    """joliGEN models/base_model.py + cycle_gan_model.py before 6a55914 ("fix: D global requires grad were not set
    true before backward"), reduced: each network group sets ``requires_grad`` True for the networks it optimizes
    and False for every other network, then runs its forward, its losses and its optimizer."""

    def __init__(self):
        torch.manual_seed(0)
        self.model_names = ["G_A", "G_B", "D_A", "D_B", "D_A_global", "D_B_global"]
        self.netG_A, self.netG_B = nn.Linear(4, 4), nn.Linear(4, 4)
        self.netD_A, self.netD_B = nn.Linear(4, 1), nn.Linear(4, 1)
        self.netD_A_global, self.netD_B_global = nn.Linear(4, 1), nn.Linear(4, 1)
        self.optimizer_G = torch.optim.SGD(list(self.netG_A.parameters()) + list(self.netG_B.parameters()), lr=0.1)
        self.optimizer_D = torch.optim.SGD(
            [p for n in ("D_A", "D_B", "D_A_global", "D_B_global") for p in getattr(self, "net" + n).parameters()],
            lr=0.1)
        self.loss_names_G, self.loss_names_D = ["G"], ["D"]

        ###Making groups
        self.networks_groups = []
        discriminators = ["netD_A", "netD_B"]
        discriminators += ["netD_A_global", "netD_B_global"]
        self.group_G = NetworkGroup(networks_to_optimize=["G_A", "G_B"], forward_functions=["forward"],
                                    backward_functions=["compute_G_loss"], loss_names_list=["loss_names_G"],
                                    optimizer=["optimizer_G"], loss_backward=["loss_G"])
        self.networks_groups.append(self.group_G)
        self.group_D = NetworkGroup(networks_to_optimize=["D_A", "D_B"], forward_functions=None,
                                    backward_functions=["compute_D_loss"], loss_names_list=["loss_names_D"],
                                    optimizer=["optimizer_D"], loss_backward=["loss_D"])
        self.networks_groups.append(self.group_D)

    def set_input(self, real_A, real_B):
        self.real_A, self.real_B = real_A, real_B

    def forward(self):
        self.fake_B = self.netG_A(self.real_A)
        self.fake_A = self.netG_B(self.real_B)

    def compute_D_loss_generic(self, netD, real, fake):
        return F.softplus(-netD(real)).mean() + F.softplus(netD(fake.detach())).mean()

    def compute_D_loss(self):
        self.loss_D_A = self.compute_D_loss_generic(self.netD_A, self.real_B, self.fake_B)
        self.loss_D_B = self.compute_D_loss_generic(self.netD_B, self.real_A, self.fake_A)
        self.loss_D_A_global = self.compute_D_loss_generic(self.netD_A_global, self.real_B, self.fake_B)
        self.loss_D_B_global = self.compute_D_loss_generic(self.netD_B_global, self.real_A, self.fake_A)
        self.loss_D = self.loss_D_A + self.loss_D_B + self.loss_D_A_global + self.loss_D_B_global

    def compute_G_loss(self):
        self.loss_G = (F.softplus(-self.netD_A(self.fake_B)).mean() + F.softplus(-self.netD_B(self.fake_A)).mean()
                       + F.softplus(-self.netD_A_global(self.fake_B)).mean()
                       + F.softplus(-self.netD_B_global(self.fake_A)).mean())

    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for name, param in net.named_parameters():
                    if not 'freeze' in name:  # noqa: E713  (the project's own spelling)
                        param.requires_grad = requires_grad

    def compute_step(self, optimizers, loss_names):
        if not isinstance(optimizers, list):
            optimizers = [optimizers]
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad()

    def optimize_parameters(self):
        for group in self.networks_groups:
            for network in self.model_names:
                if network in group.networks_to_optimize:
                    self.set_requires_grad(getattr(self, "net" + network), True)
                else:
                    self.set_requires_grad(getattr(self, "net" + network), False)

            if not group.forward_functions is None:  # noqa: E714  (the project's own spelling)
                for forward in group.forward_functions:
                    getattr(self, forward)()

            for backward in group.backward_functions:
                getattr(self, backward)()

            for loss in group.loss_backward:
                (getattr(self, loss) / 1).backward()
                self.seen = {n: getattr(self, "net" + n).weight.grad for n in self.model_names}

            for optimizer, loss_names in zip(group.optimizer, group.loss_names_list):
                self.compute_step(getattr(self, optimizer), getattr(self, loss_names))


def test_global_discriminators_left_out_of_the_group_that_optimizes_them():
    """https://github.com/jolibrain/joliGEN/pull/120 — "fix: D global requires grad were not set true before
    backward": with ``netD_global`` set, the cycle-GAN's ``group_D`` listed only ``["D_A", "D_B"]`` in
    ``networks_to_optimize``, so ``optimize_parameters`` set ``requires_grad`` False on the global discriminators
    (for the generator step, and again for the discriminator step) and they were never trained; the fix puts
    ``D_A_global`` and ``D_B_global`` in the group."""
    model = CycleGANModel()
    model.set_input(torch.randn(6, 4), torch.randn(6, 4))
    before = model.netD_A_global.weight.detach().clone()
    with adv.torch.record() as rec:
        model.optimize_parameters()
    assert model.seen["D_A_global"] is None and model.seen["D_A"] is not None
    assert torch.equal(model.netD_A_global.weight, before)
    ex = rec.explain(model.loss_D, model.netD_A_global.weight)
    assert ex.reason == "requires_grad_false", (ex.reason, ex.location, ex.message)
    # The helper sets requires_grad to whatever it is given, for every network: the line that decided False for
    # D_A_global is the call in optimize_parameters, taken because the network is not in networks_to_optimize.
    decided = _line(CycleGANModel.optimize_parameters,
                    'self.set_requires_grad(getattr(self, "net" + network), False)')
    assert ex.location == decided or (
        ex.location == _line(CycleGANModel.set_requires_grad, "param.requires_grad = requires_grad")
        and decided.rsplit(":", 1)[1] in ex.message), (ex.location, ex.message)
    assert "networks_to_optimize" in ex.message or "requires_grad=True" in ex.message, ex.message


class Conv3DLayer(nn.Conv3d):
    """ConsistI2V's temporal convolution: frames folded into the batch are unfolded for a 3-D convolution."""

    def __init__(self, in_dim, out_dim, n_frames):
        k, p = (3, 1, 1), (1, 0, 0)
        super().__init__(in_channels=in_dim, out_channels=out_dim, kernel_size=k, stride=1, padding=p)
        self.n_frames = n_frames

    def forward(self, x):
        bt, c, h, w = x.shape
        h3 = x.reshape(bt // self.n_frames, self.n_frames, c, h, w).permute(0, 2, 1, 3, 4)
        h3 = super().forward(h3)
        return h3.permute(0, 2, 1, 3, 4).reshape(bt, -1, h, w)


class TemporalResnetBlock(nn.Module):
    """consisti2v/models/videoldm_unet_blocks.py at 152102b, reduced: the temporal block projects a time embedding
    (``temb_channels`` defaults to 512) and adds it when it is given one."""

    def __init__(self, *, in_channels, out_channels=None, temb_channels=512, groups=2, eps=1e-6, n_frames=2):
        super().__init__()
        out_channels = in_channels if out_channels is None else out_channels
        self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=in_channels, eps=eps, affine=True)
        self.conv1 = Conv3DLayer(in_channels, out_channels, n_frames=n_frames)
        if temb_channels is not None:
            self.time_emb_proj = torch.nn.Linear(temb_channels, out_channels)
        else:
            self.time_emb_proj = None
        self.norm2 = nn.GroupNorm(num_groups=groups, num_channels=out_channels, eps=eps, affine=True)
        self.conv2 = Conv3DLayer(out_channels, out_channels, n_frames=n_frames)
        self.nonlinearity = nn.SiLU()
        self.alpha = nn.Parameter(torch.ones(1))

    def forward(self, input_tensor, temb=None):
        hidden_states = self.conv1(self.nonlinearity(self.norm1(input_tensor)))
        if temb is not None:
            temb = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
            hidden_states = hidden_states + temb
        hidden_states = self.conv2(self.nonlinearity(self.norm2(hidden_states)))
        output_tensor = input_tensor + hidden_states
        with torch.no_grad():
            self.alpha.clamp_(0, 1)
        return self.alpha * input_tensor + (1 - self.alpha) * output_tensor


class ResnetBlock2D(nn.Module):
    """The spatial resnet block, which does receive the time embedding."""

    def __init__(self, in_channels, out_channels, temb_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)

    def forward(self, hidden_states, temb):
        return F.silu(self.conv(hidden_states) + self.time_emb_proj(F.silu(temb))[:, :, None, None])


class VideoLDMDownBlock(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, n_frames=2):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(in_channels, out_channels, temb_channels)])
        self.conv3ds = nn.ModuleList([TemporalResnetBlock(in_channels=out_channels, out_channels=out_channels,
                                                          n_frames=n_frames)])

    def forward(self, hidden_states, temb=None):
        output_states = ()
        for resnet, conv3d in zip(self.resnets, self.conv3ds):
            hidden_states = resnet(hidden_states, temb)
            hidden_states = conv3d(hidden_states)
            output_states += (hidden_states,)
        return hidden_states, output_states


def test_time_embedding_projection_of_a_block_that_is_never_given_the_embedding():
    """https://github.com/TIGER-AI-Lab/ConsistI2V/issues/26 — "Missing gradients?": some parameters get no gradient.
    The answer, accepted by the reporter: "those layers are not actually used in the model … time embedding is not
    input into conv3d layers, so the time embedding projection layers are not trained" — the down block calls
    ``conv3d(hidden_states)`` without ``temb``, while ``TemporalResnetBlock`` built ``time_emb_proj`` because
    ``temb_channels`` defaults to 512."""
    torch.manual_seed(0)
    x, temb = torch.randn(4, 4, 3, 3), torch.randn(4, 512)
    with adv.torch.record() as rec:
        block = VideoLDMDownBlock(4, 4, temb_channels=512, n_frames=2)
        hidden_states, _ = block(x, temb)
        loss = hidden_states.pow(2).mean()
        loss.backward()
    temporal = block.conv3ds[0]
    assert temporal.time_emb_proj.weight.grad is None
    assert temporal.conv1.weight.grad is not None and block.resnets[0].time_emb_proj.weight.grad is not None
    ex = rec.explain(loss, temporal.time_emb_proj.weight)
    assert ex.reason == "not_used", (ex.reason, ex.location, ex.message)
    assert ex.location in (_line(VideoLDMDownBlock.forward, "hidden_states = conv3d(hidden_states)"),
                           _line(TemporalResnetBlock.__init__, "self.time_emb_proj = torch.nn.Linear(")), \
        ex.location
    assert "time_emb_proj" in ex.message, ex.message


SILERO_UTILS = '''
"""silero-models utils.py at 7cf5138, reduced: ``init_jit_model`` turns gradients off for the whole process
before loading the model (``torch.jit.load`` of a downloaded file, replaced here by a small module)."""
import torch


class Decoder:
    def __init__(self, labels):
        self.labels = labels

    def __call__(self, probs):
        return "".join(self.labels[i] for i in probs.argmax(-1).tolist())


class STTModel(torch.nn.Module):
    labels = ["_", "a", "b", "c"]

    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.tanh(self.encoder(x))


def init_jit_model(model_url, device=torch.device("cpu")):
    torch.set_grad_enabled(False)
    model = STTModel().to(device)
    model.eval()
    return model, Decoder(model.labels)
'''


def test_utility_that_loads_the_model_turns_gradients_off_for_the_whole_process(installed):
    """https://github.com/snakers4/silero-models/issues/40 — "cannot use this model as a (non trainable) layer of
    other model": ``utils.py`` line 124, ``torch.set_grad_enabled(False)`` in ``init_jit_model``, so training a model
    built on top raises "element 0 of tensors does not require grad and does not have a grad_fn" (the linked
    discuss.pytorch.org thread) — "I have to manually enable it". The maintainer: the utils were written for
    inference, where he disables gradients altogether instead of ``with torch.no_grad()``; override
    ``init_jit_model``. The user wrote no ``no_grad``: the library's call switched gradients off, globally."""
    utils = installed("silero_utils_reduced", SILERO_UTILS)
    batch, labels = torch.randn(3, 16), torch.tensor([0, 1, 1])

    def case():
        with adv.torch.record() as rec:
            model, decoder = utils.init_jit_model("https://models.silero.ai/models/en/en_v2_jit.model")
            head = nn.Linear(8, 2)
            logits = head(model(batch))
            loss = F.cross_entropy(logits, labels)
            with pytest.raises(RuntimeError, match="does not require grad"):
                loss.backward()
        return rec, loss, head
    try:
        rec, loss, head = case()
        assert not torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)
    assert head.weight.requires_grad and head.weight.grad is None
    ex = rec.explain(loss, head.weight)
    assert ex.reason == "no_grad", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "model, decoder = utils.init_jit_model("), ex.location
    assert "set_grad_enabled" in ex.message, ex.message
    assert "outside `with torch.no_grad()`" not in ex.message, ex.message


SPEECHBRAIN_PRETRAINED = '''
"""speechbrain/pretrained/interfaces.py at 4ea7fe1, reduced: ``Pretrained`` freezes the modules it loads unless
it is given ``freeze_params=False`` (``from_hparams`` passes its keyword arguments on to the constructor)."""
import torch


class Pretrained:
    def __init__(self, modules=None, hparams=None, run_opts=None, freeze_params=True):
        self.modules = torch.nn.ModuleDict(modules)
        self.hparams = hparams
        self._prepare_modules(freeze_params)

    def _prepare_modules(self, freeze_params):
        if freeze_params:
            self.modules.eval()
            for p in self.modules.parameters():
                p.requires_grad = False

    @classmethod
    def from_hparams(cls, source, hparams_file="hyperparams.yaml", overrides={}, savedir=None, **kwargs):
        torch.manual_seed(0)
        modules = {"compute_features": torch.nn.Identity(),
                   "embedding_model": torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh(),
                                                          torch.nn.Linear(8, 4))}
        return cls(modules, {"source": source}, **kwargs)


class EncoderClassifier(Pretrained):
    def encode_batch(self, wavs, wav_lens=None, normalize=False):
        if len(wavs.shape) == 1:
            wavs = wavs.unsqueeze(0)
        wavs = wavs.float()
        feats = self.modules.compute_features(wavs)
        embeddings = self.modules.embedding_model(feats)
        return embeddings


class SpeakerRecognition(EncoderClassifier):
    pass
'''


def test_pretrained_speaker_model_is_frozen_unless_asked_not_to_be(installed):
    """https://github.com/speechbrain/speechbrain/issues/1040 — a pretrained ``SpeakerRecognition`` taken outside
    SpeechBrain to be trained on a downstream task: backpropagating the loss raises "element 0 of tensors does not
    require grad and does not have a grad_fn" (the reporter blamed ``Pretrained`` not being an ``nn.Module``). The
    maintainer: pass ``freeze_params=False`` to ``from_hparams`` — by default ``Pretrained`` freezes the parameters
    it loads (``requires_grad = False``, and ``eval()``)."""
    sb = installed("speechbrain_pretrained_reduced", SPEECHBRAIN_PRETRAINED)
    wavs, target = torch.randn(3, 16), torch.randn(3, 4)

    def case():
        with adv.torch.record() as rec:
            verification = sb.SpeakerRecognition.from_hparams(source="speechbrain/spkrec-ecapa-voxceleb",
                                                              savedir="pretrained_models/spkrec-ecapa-voxceleb")
            embeddings = verification.encode_batch(wavs)
            loss = F.mse_loss(embeddings, target)
            with pytest.raises(RuntimeError, match="does not require grad"):
                loss.backward()
        return rec, loss, verification
    rec, loss, verification = case()
    weight = verification.modules.embedding_model[0].weight
    assert not weight.requires_grad and weight.grad is None
    ex = rec.explain(loss, weight)
    assert ex.reason == "requires_grad_false", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "verification = sb.SpeakerRecognition.from_hparams("), ex.location
    assert "freeze_params=False" in ex.message, ex.message


def test_gradients_zeroed_before_the_first_backward_of_a_hand_written_loop():
    """https://github.com/jcjohnson/pytorch-examples/pull/4 — ``two_layer_net_autograd.py`` (also the official
    "Learning PyTorch with examples" tutorial, pytorch/tutorials#51) "Manually zero[es] the gradients before running
    the backward pass" with ``w1.grad.data.zero_()``: "AttributeError: 'NoneType' object has no attribute 'data'".
    The PR: "w1.grad and w2.grad were None at the first loop iteration"; the author fixed it in 0d8adca, "zero
    gradient after updating weights". Reduced sizes; ``loss.item()`` for the old ``loss.data[0]``."""
    def case():
        torch.manual_seed(0)
        N, D_in, H, D_out = 8, 10, 6, 3
        with adv.torch.record() as rec:
            x = torch.randn(N, D_in)
            y = torch.randn(N, D_out)
            w1 = torch.randn(D_in, H, requires_grad=True)
            w2 = torch.randn(H, D_out, requires_grad=True)
            learning_rate = 1e-6
            with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'data'"):
                for t in range(500):
                    y_pred = x.mm(w1).clamp(min=0).mm(w2)
                    loss = (y_pred - y).pow(2).sum()
                    print(t, loss.item())

                    # Manually zero the gradients before running the backward pass
                    w1.grad.data.zero_()
                    w2.grad.data.zero_()

                    loss.backward()
                    w1.data -= learning_rate * w1.grad.data
                    w2.data -= learning_rate * w2.grad.data
        return rec, loss, w1, t
    rec, loss, w1, t = case()
    assert t == 0 and w1.grad is None
    ex = rec.explain(loss, w1)
    assert ex.reason == "read_before_backward", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "w1.grad.data.zero_()"), ex.location
    assert "loss.backward()" in ex.message, ex.message

# ---------------------------------------------------------------------------
# TensorFlow / Keras
# ---------------------------------------------------------------------------
def test_actor_critic_tape_opened_after_the_episode(tf):
    """https://github.com/keras-team/keras-io/issues/406 — in the keras.io Actor Critic example the tape is opened
    before the episode and only used at its end, so the reporter moved ``with tf.GradientTape() as tape:`` down to
    the loss: "No gradients provided for any variable". The answer: "gradient tape hasn't watched the forward pass
    ``action_probs, critic_value = model(state)``" — the model runs step by step during the episode, its outputs
    collected in the history lists. Reduced with the example's model and loop (an 8-step fake environment)."""
    import keras
    from keras import layers
    keras.utils.set_random_seed(0)
    num_inputs, num_actions, num_hidden, gamma, eps = 4, 2, 8, 0.99, 1e-7
    inputs = layers.Input(shape=(num_inputs,))
    common = layers.Dense(num_hidden, activation="relu")(inputs)
    action = layers.Dense(num_actions, activation="softmax")(common)
    critic = layers.Dense(1)(common)
    model = keras.Model(inputs=inputs, outputs=[action, critic])
    optimizer = keras.optimizers.Adam(learning_rate=0.01)
    huber_loss = keras.losses.Huber()
    rng = np.random.default_rng(0)

    def env_step(action):
        return rng.normal(size=num_inputs).astype("float32"), 1.0

    def run_episode():
        action_probs_history, critic_value_history, rewards_history = [], [], []
        state = rng.normal(size=num_inputs).astype("float32")
        for timestep in range(1, 9):
            state = tf.convert_to_tensor(state)
            state = tf.expand_dims(state, 0)
            action_probs, critic_value = model(state)
            critic_value_history.append(critic_value[0, 0])
            action = rng.choice(num_actions, p=np.squeeze(action_probs))
            action_probs_history.append(tf.math.log(action_probs[0, action]))
            state, reward = env_step(action)
            rewards_history.append(reward)
        returns, discounted_sum = [], 0
        for r in rewards_history[::-1]:
            discounted_sum = r + gamma * discounted_sum
            returns.insert(0, discounted_sum)
        returns = np.array(returns)
        returns = ((returns - np.mean(returns)) / (np.std(returns) + eps)).tolist()
        with tf.GradientTape() as tape:
            history = zip(action_probs_history, critic_value_history, returns)
            actor_losses, critic_losses = [], []
            for log_prob, value, ret in history:
                diff = ret - value
                actor_losses.append(-log_prob * diff)
                critic_losses.append(huber_loss(tf.expand_dims(value, 0), tf.expand_dims(ret, 0)))
            loss_value = sum(actor_losses) + sum(critic_losses)
        grads = tape.gradient(loss_value, model.trainable_variables)
        return loss_value, grads

    with adv.tf.record() as rec:
        loss_value, grads = run_episode()
        assert all(g is None for g in grads)
        with pytest.raises(ValueError, match="(?i)no gradients provided for any variable"):
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ex = rec.explain(loss_value, model.trainable_variables[0])
    assert ex.reason == "computed_outside_tape", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(run_episode, "action_probs, critic_value = model(state)"), ex.location
    assert "inside" in ex.message, ex.message


def test_gamma_made_for_every_cell_but_read_only_before_the_last(tf):
    """https://github.com/wenqihuang/LS-Net-Dynamic-MRI/issues/9 — the reporter removed the ``if not is_last:`` that
    guards ``self.gamma = tf.Variable(...)`` in ``LSCell_learned_step.__init__``, so every cell makes a ``gamma``,
    and training warns "Gradients do not exist for variables ['LplusS_Net/gamma:0']". The author: the last data
    consistency step is disabled in training (``gamma = 1`` when ``is_last``), so "the last gamma will never join in
    the forward path, thus no gradient exists for it"; that is why the original creates it only when it is used.
    Reduced to real values (the model is complex-valued MRI); Keras 3 tracks ``keras.Variable`` where Keras 2 tracked
    a ``tf.Variable`` attribute. The training loop is the repository's ``main.py`` (tape, ``apply_gradients``)."""
    import keras
    from keras import layers
    keras.utils.set_random_seed(0)

    class LSCell_learned_step(layers.Layer):
        def __init__(self, input_shape, is_last):
            super(LSCell_learned_step, self).__init__()
            self.sconv = layers.Dense(input_shape[-1], use_bias=False)
            self.is_last = is_last
            self.gamma = keras.Variable(1.0, trainable=True, name="gamma")

        def call(self, data):
            Lpre, Spre, Mpre, d = data
            L = Mpre
            S = self.sconv(Mpre)
            dc = (L + S) - d
            if not self.is_last:
                gamma = tf.nn.relu(self.gamma)
            else:
                gamma = 1.0
            M = L + S - gamma * dc
            return [L, S, M, d]

    class LplusS_Net(keras.Model):
        def __init__(self, niter):
            super(LplusS_Net, self).__init__(name='LplusS_Net')
            self.niter = niter
            self.celllist = []

        def build(self, input_shape):
            for i in range(self.niter - 1):
                self.celllist.append(LSCell_learned_step(input_shape, is_last=False))
            self.celllist.append(LSCell_learned_step(input_shape, is_last=True))

        def call(self, d):
            data = [d, tf.zeros_like(d), d, d]
            for i in range(self.niter):
                data = self.celllist[i](data)
            L, S, M, _ = data
            return L, S, M

    d = tf.random.stateless_normal((2, 6), seed=(1, 2))
    label = tf.random.stateless_normal((2, 6), seed=(3, 4))
    with adv.tf.record() as rec, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = LplusS_Net(3)
        optimizer = keras.optimizers.Adam(1e-3)
        with tf.GradientTape() as tape:
            L_recon, S_recon, M_recon = net(d)
            loss = tf.reduce_mean(tf.square(M_recon - label))
        grads = tape.gradient(loss, net.trainable_weights)
        optimizer.apply_gradients(zip(grads, net.trainable_weights))
    last = net.celllist[-1]
    by_id = {id(v): g for v, g in zip(net.trainable_weights, grads)}
    assert by_id[id(last.gamma)] is None
    assert by_id[id(net.celllist[0].gamma)] is not None
    text = "\n".join(str(w.message) for w in caught if "Gradients do not exist" in str(w.message))
    assert "gamma" in text, text[:500]
    ex = rec.explain(loss, last.gamma)
    assert ex.reason == "not_used", (ex.reason, ex.location, ex.message)
    assert ex.location == _line(LSCell_learned_step.__init__, "self.gamma = keras.Variable("), ex.location
    assert "not_used" in text and _lineno(LSCell_learned_step.__init__, "self.gamma = keras.Variable(") in text, \
        text[:800]


def test_per_sample_weights_passed_through_the_dataset(tf):
    """https://github.com/tensorflow/tensorflow/issues/19556 — "[Feature request] Backpropagation through Dataset
    API": a statistical model with per-sample weights, whose gradient is None when the weights go through
    ``tf.data`` (the linked Stack Overflow question, "Tensorflow Dataset API: gradient is None"); the workaround is
    to pass sample indices through the dataset and index the weights in the loss. The maintainer (mrry): useful,
    but not planned — the Dataset API does not backpropagate. Reduced: the weight variable is sliced into the
    dataset with the data, the loss reads the batches inside the tape."""
    import keras
    keras.utils.set_random_seed(0)
    n = 8
    x = np.random.default_rng(0).normal(size=(n, 3)).astype("float32")
    y = np.random.default_rng(1).normal(size=(n,)).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])

    def case():
        with adv.tf.record() as rec:
            sample_weights = tf.Variable(tf.ones(n), name="sample_weights")
            dataset = tf.data.Dataset.from_tensor_slices((x, y, sample_weights)).batch(4)
            with tf.GradientTape() as tape:
                loss = 0.0
                for xb, yb, wb in dataset:
                    loss += tf.reduce_sum(wb * tf.square(model(xb)[:, 0] - yb))
            grads = tape.gradient(loss, [sample_weights] + model.trainable_variables)
        return rec, loss, sample_weights, grads
    rec, loss, sample_weights, grads = case()
    assert grads[0] is None and grads[1] is not None
    ex = rec.explain(loss, sample_weights)
    assert ex.reason in ("computed_outside_tape", "left_the_tape"), (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "dataset = tf.data.Dataset.from_tensor_slices("), ex.location
    assert "tf.data" in ex.message or "Dataset" in ex.message, ex.message


# ---------------------------------------------------------------------------
# The engine, typed as a learner moving TensorFlow code writes it
# ---------------------------------------------------------------------------
def test_sampler_that_gathers_at_integer_coordinates_in_the_engine():
    """https://github.com/kevinzakka/spatial-transformer-network/issues/19 — "tf.gather or tf.gather_nd will not be
    differential w.r.t. coordinates, which used in STN?": ``tf.gradients(tf.gather(data, index), index)`` returns
    ``[None]``. The reporter found the cause in the ``tf.gradients`` documentation: "All integer tensors are
    considered constant with respect to all xs … coordinates in tf.gather must be int32 or int64, which means it
    can not be bp" (the sampler's gradient reaches the coordinates only through the bilinear weights). Reduced to
    the transformer's ``_interpolate`` taking the four corner values at ``tf.cast(tf.floor(x), 'int32')``, without
    the weights; typed with ``import autodiff_viz as tf``."""
    import autodiff_viz as tf
    im_flat = tf.constant(np.arange(16, dtype="float32"))
    grid = tf.constant(np.linspace(0.0, 1.0, 6, dtype="float32").reshape(6, 1))
    theta = tf.Variable(np.array([[10.0]], dtype="float32"), name="theta")

    def case():
        with tf.GradientTape() as tape:
            x = tf.matmul(grid, theta)[:, 0]
            x0 = tf.cast(tf.floor(x), 'int32')
            x1 = x0 + 1
            Ia = tf.gather(im_flat, x0)
            Ib = tf.gather(im_flat, x1)
            out = tf.reduce_mean(Ia + Ib)
        return tape, out
    tape, out = case()
    assert tape.gradient(out, theta) is None
    ex = tape.explain(out, theta)
    assert ex.reason in ("integer_dtype", "non_differentiable_op"), (ex.reason, ex.location, ex.message)
    assert ex.location == _line(case, "x0 = tf.cast(tf.floor(x), 'int32')"), ex.location
    assert "int" in ex.message, ex.message
