"""A ninth batch: architectures no earlier test drew, each built by its own library with random weights from a
small configuration, its whole training step recorded as a learner writes it.

``transformers`` (https://huggingface.co/docs/transformers/model_doc/<name>):

* ConvNeXt (``ConvNextForImageClassification``, Liu et al. 2022): a ResNet modernised — depthwise 7×7
  convolutions, LayerNorm over channels, inverted bottlenecks, a learned per-channel layer scale;
* Qwen2 (``Qwen2ForCausalLM``, Yang et al. 2024): a decoder with grouped-query attention (one key/value head
  shared by the query heads here), rotary position embeddings and RMSNorm;
* LeViT (``LevitForImageClassification``, Graham et al. 2021): convolution stem, attention stages that shrink the
  grid between them, BatchNorm after every linear layer (``MLPLayerWithBN``);
* ModernBERT (``ModernBertForSequenceClassification``, Warner et al. 2024): an encoder whose first layer has no
  attention norm (an ``Identity``), alternating global and sliding-window attention, a prediction head before
  the classifier;
* Hiera (``HieraForImageClassification``, Ryali et al. 2023): a hierarchical ViT whose stages differ in width and
  depth, with reshapes between the patch embedding and the stages in the model's own ``forward``;
* mBART (``MBartForConditionalGeneration``, Liu et al. 2020): an encoder–decoder whose head adds a
  ``final_logits_bias`` buffer and which shifts its labels into decoder inputs itself;
* MobileNetV1 (``MobileNetV1ForImageClassification``, Howard et al. 2017): 26 ``MobileNetV1ConvLayer`` s
  alternating depthwise and pointwise convolutions, each Conv–BatchNorm–ReLU6.

``keras.applications`` (https://keras.io/api/applications/densenet/, …/efficientnet/):

* DenseNet121 (Huang et al. 2017): dense blocks of 6, 12, 24 and 16 layers (``conv2_block1`` …), each layer's
  output concatenated to its input, transition layers (``pool2`` …) between the blocks;
* EfficientNetB0 (Tan & Le 2019): MBConv blocks with squeeze-and-excitation (``block1a`` … ``block7a``), a
  ``Normalization`` layer whose ``count`` variable only ``adapt()`` reads.

Found by probing models no test covered: every check below held on the first run; the batch keeps them so.
What is asserted is what issue 42 asks of every real model: the recorded step is the plain one bit for bit, the
default figure is the model's named parts within the box budget and readable at the notebook's width, repeated
blocks are one "× N" box, every module that ran opens, and each repeat opened stays within the budget and readable.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_figure_real_models import _boxes, _readable
from unseen_models import (
    assert_default_figure_is_named_parts,
    assert_every_module_opens,
    assert_keras_default_figure_is_the_papers_blocks,
    assert_keras_labels_edge_by_role,
    assert_keras_step_bit_for_bit,
    assert_torch_loss_edges_by_role,
    assert_torch_step_bit_for_bit,
    hf,
    keras,
    record_keras_case,
    record_torch_case,
    tf,
    torch,
    within_budget,
)

from autodiff_viz.views import folding, render

KINDS = ["convnext", "qwen2", "levit", "modernbert", "hiera", "mbart", "mobilenet_v1"]
TEXT = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64)
SEQ2SEQ = dict(vocab_size=64, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
               decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32,
               pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)


def _torch_model(kind):
    """``(model, inputs, labels)``: random weights, a batch of two."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 60, (2, 12), generator=g)
    images = torch.randn(2, 3, 64 if kind == "hiera" else 32, 64 if kind == "hiera" else 32, generator=g)
    classes = torch.tensor([0, 1])
    if kind == "convnext":
        model = hf.ConvNextForImageClassification(hf.ConvNextConfig(
            num_channels=3, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1], num_labels=2, image_size=32))
    elif kind == "qwen2":
        model = hf.Qwen2ForCausalLM(hf.Qwen2Config(num_key_value_heads=1, **TEXT))
    elif kind == "levit":
        model = hf.LevitForImageClassification(hf.LevitConfig(
            image_size=32, patch_size=16, hidden_sizes=[16, 32, 48], num_attention_heads=[1, 2, 3],
            depths=[1, 1, 1], key_dim=[8, 8, 8], num_labels=2))
    elif kind == "modernbert":
        model = hf.ModernBertForSequenceClassification(hf.ModernBertConfig(
            num_labels=2, vocab_size=64, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=64, pad_token_id=0))
    elif kind == "hiera":
        model = hf.HieraForImageClassification(hf.HieraConfig(
            image_size=[64, 64], embed_dim=16, num_heads=[1, 2, 4, 8], depths=[1, 1, 2, 1], num_labels=2,
            patch_stride=[4, 4], patch_size=[7, 7], patch_padding=[3, 3], masked_unit_size=[8, 8]))
    elif kind == "mbart":
        model = hf.MBartForConditionalGeneration(hf.MBartConfig(**SEQ2SEQ))
    else:
        model = hf.MobileNetV1ForImageClassification(hf.MobileNetV1Config(
            image_size=32, depth_multiplier=0.25, num_labels=2))
    model.train()
    if kind in ("qwen2", "mbart"):
        return model, {"input_ids": ids}, ids.clone()
    if kind == "modernbert":
        return model, {"input_ids": ids}, classes
    return model, {"pixel_values": images}, classes


@pytest.fixture(scope="module", params=KINDS)
def torch_case(request):
    return record_torch_case(request.param, *_torch_model(request.param))


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_recorded_step_is_the_plain_one_bit_for_bit(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_every_module_that_ran_is_a_box_that_opens(torch_case):
    assert_every_module_opens(torch_case)


PARTS = {
    "convnext": ["convnext.embeddings", "convnext.encoder", "convnext.layernorm", "classifier"],
    "qwen2": ["model.embed_tokens", "model.rotary_emb", "model.layers.0", "model.layers.1", "model.norm", "lm_head"],
    "levit": ["levit.patch_embeddings", "levit.encoder", "classifier"],
    "modernbert": ["model.embeddings", "model.layers.0", "model.layers.1", "model.layers.2", "model.final_norm",
                   "head", "classifier"],
    "hiera": ["hiera.embeddings"] + [f"hiera.encoder.stages.{k}" for k in range(4)] + ["hiera.pooler",
                                                                                      "classifier"],
    "mbart": ["model.encoder", "model.decoder", "lm_head"],
    "mobilenet_v1": ["mobilenet_v1.conv_stem"] + [f"mobilenet_v1.layer.{k}" for k in range(26)] +
                    ["mobilenet_v1.pooler", "classifier"],
}
REPEATS = {"qwen2": "Qwen2DecoderLayer × 2", "modernbert": "ModernBertEncoderLayer × 2",
           "mobilenet_v1": "MobileNetV1ConvLayer × 26"}


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_default_figure_is_the_models_named_parts_and_reads_at_the_notebooks_width(torch_case):
    """ModernBERT's first layer is drawn apart from the "× 2" of the other two: its attention norm is an
    ``Identity``, so it is not the same structure."""
    c = torch_case
    assert_default_figure_is_named_parts(c, PARTS[c.kind])
    _, boxes = _boxes(c.tr)
    if c.kind in REPEATS:
        assert REPEATS[c.kind] in boxes, sorted(boxes)
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["qwen2", "modernbert", "mbart", "mobilenet_v1", "levit"],
                         indirect=True)
def test_each_repeated_block_opened_stays_within_the_budget_and_readable(torch_case):
    """Each "× N" box opened, with the boxes that hold it (mBART's encoder for its encoder layers)."""
    h = folding.hierarchy(torch_case.tr)
    assert h.repeats
    for rep in h.repeats.values():
        opened = {k for k in h.groups if rep.key.startswith(k + "/")} | {rep.key}
        lay = folding.layout(torch_case.tr, expanded=opened)
        assert within_budget(lay), (rep.title, len(lay.boxes), lay.notes)
        assert not any(b.key == rep.groups[0] for b in lay.boxes.values())        # instance 0 is drawn open
        assert _readable(torch_case.tr, expanded=opened) >= render.MIN_LABEL_PX, rep.title


@pytest.mark.parametrize("torch_case", ["convnext", "levit", "modernbert", "hiera", "mobilenet_v1"],
                         indirect=True)
def test_the_labels_edge_says_no_gradient_and_the_predictions_edge_the_loss(torch_case):
    assert_torch_loss_edges_by_role(torch_case)


@pytest.mark.parametrize("torch_case", ["levit", "mobilenet_v1"], indirect=True)
def test_batchnorm_running_statistics_are_state_without_gradient(torch_case):
    """LeViT's ``MLPLayerWithBN`` and MobileNetV1's layers read their running statistics in training: drawn as
    state by their path, with no gradient edge."""
    c = torch_case
    state = {n.name: n for n in c.tr.nodes if n.kind == "state"}
    running = {f"{bn}.{s}" for bn in c.ran_bn for s in ("running_mean", "running_var")}
    assert c.ran_bn and running <= set(state), sorted(running - set(state))[:5]
    for name in running:
        assert state[name].grad is None
        assert not any(e.differentiable for e in c.tr.edges_from(state[name].id))
    assert not running & {n.name for n in c.tr.nodes if n.kind == "variable"}


# ---------------------------------------------------------------------------
# keras.applications
# ---------------------------------------------------------------------------
KERAS_KINDS = ["densenet121", "efficientnetb0"]


def _keras_model(kind):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()          # Keras' layer counters restart, as in a fresh notebook
    build = {"densenet121": keras.applications.DenseNet121, "efficientnetb0": keras.applications.EfficientNetB0}
    return build[kind](weights=None, input_shape=(32, 32, 3), classes=4)


@pytest.fixture(scope="module", params=KERAS_KINDS)
def keras_case(request):
    kind = request.param
    images = tf.constant(np.random.default_rng(0).random((2, 32, 32, 3)).astype("float32"))
    return record_keras_case(kind, lambda: _keras_model(kind), images, tf.constant([1, 3]))


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_recorded_step_is_the_plain_one_bit_for_bit(keras_case):
    assert_keras_step_bit_for_bit(keras_case)


KERAS_PARTS = {
    "densenet121": ["conv1", "pool1", "pool2", "pool3", "pool4", "predictions"] +
                   [f"conv{s}_block{k}" for s, n in ((2, 6), (3, 12), (4, 24), (5, 16)) for k in range(1, n + 1)],
    "efficientnetb0": ["stem", "block1a", "block2a", "block2b", "block3a", "block3b", "block4a", "block4b",
                       "block4c", "block5a", "block5b", "block5c", "block6a", "block6b", "block6c", "block6d",
                       "block7a", "top", "predictions"],
}
KERAS_REPEATS = {
    "densenet121": ["conv2_block1 … conv2_block6 × 6", "conv3_block1 … conv3_block12 × 12",
                    "conv4_block1 … conv4_block24 × 24", "conv5_block1 … conv5_block16 × 16"],
    "efficientnetb0": ["block4b … block4c × 2", "block5b … block5c × 2", "block6b … block6d × 3"],
}


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_default_figure_is_the_papers_blocks_within_the_budget(keras_case):
    """DenseNet-121's four dense blocks are 6, 12, 24 and 16 layers, as in the paper's Table 1."""
    assert_keras_default_figure_is_the_papers_blocks(keras_case, KERAS_PARTS[keras_case.kind],
                                                     KERAS_REPEATS[keras_case.kind])


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_moving_statistics_are_state_and_unread_state_is_not_drawn(keras_case):
    """Every BatchNormalization's moving statistics are state without gradient, never a weight. EfficientNet's
    ``normalization/count`` (read only by ``adapt()``) is not drawn: the step never read it."""
    c = keras_case
    state = {n.name: n for n in c.tr.nodes if n.kind == "state"}
    moving = [v.path for v in c.model.non_trainable_variables if v.path.endswith(("moving_mean", "moving_variance"))]
    assert moving and set(moving) <= set(state), sorted(set(moving) - set(state))[:5]
    for n in state.values():
        assert n.grad is None and not any(e.differentiable for e in c.tr.edges_from(n.id))
    assert not {v.path for v in c.model.non_trainable_variables} & {n.name for n in c.tr.nodes
                                                                    if n.kind == "variable"}
    if c.kind == "efficientnetb0":
        assert "normalization/count" not in state and "normalization/mean" in state


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_labels_edge_goes_by_role(keras_case):
    assert_keras_labels_edge_by_role(keras_case)
