"""A tenth batch: architectures no earlier test drew, each built by its own library with random weights from a
small configuration, its whole training step recorded as a learner writes it.

``transformers`` (https://huggingface.co/docs/transformers/model_doc/<name>):

* Phi (``PhiForCausalLM``, Li et al. 2023): a decoder whose layers run attention and MLP in parallel from one
  LayerNorm, with partial rotary embeddings and an embedding dropout;
* Gemma 2 (``Gemma2ForCausalLM``, Gemma Team 2024): a decoder with four RMSNorms per layer, logit soft-capping
  and an embedding scale kept as a buffer;
* DINOv2 (``Dinov2ForImageClassification``, Oquab et al. 2023): a ViT with a learned layer scale, classifying
  from the class token and the mean of the patch tokens;
* ConvNeXt V2 (``ConvNextV2ForImageClassification``, Woo et al. 2023): ConvNeXt with global response
  normalisation in every block;
* EfficientNet (``EfficientNetForImageClassification``, Tan & Le 2019): MBConv blocks with squeeze-and-excitation,
  BatchNorm throughout;
* GPTBigCode (``GPTBigCodeForCausalLM``, SantaCoder, Allal et al. 2023): GPT-2 with multi-query attention;
* RecurrentGemma (``RecurrentGemmaForCausalLM``, Griffin, De et al. 2024): two recurrent (RG-LRU) layers, then a
  local-attention layer — blocks of two structures in one list;
* FocalNet (``FocalNetForImageClassification``, Yang et al. 2022): focal modulation in place of attention,
  hierarchical stages;
* Swin V2 (``Swinv2ForImageClassification``, Liu et al. 2022): windowed cosine attention with a continuous
  position bias computed from a buffer of coordinates;
* Mamba-2 (``Mamba2ForCausalLM``, Dao & Gu 2024): a state-space model whose mixer (the reference PyTorch path)
  computes its causal masks several times in one call — a rolled loop inside the mixer;
* ESM (``EsmForSequenceClassification``, Rives et al. 2021): a protein-language BERT with rotary embeddings and
  a final LayerNorm inside the encoder;
* SwiftFormer (``SwiftFormerForImageClassification``, Shaker et al. 2023): convolution stages with BatchNorm and
  efficient additive attention, two heads (``head``, ``dist_head``) averaged.

``keras.applications`` (https://keras.io/api/applications/): ConvNeXtTiny (stages of 3, 3, 9, 3 blocks, each with
a learned layer scale), MobileNetV3Small (hard-swish, squeeze-and-excitation) and ResNet50V2 (pre-activation
blocks; the last block of a stage downsamples).

Found by probing: everything asked of every real model held on the first run but one thing. Mamba-2's mask
computations are a rolled loop inside the mixer; opening one of them by its key (as ``trace.groups()`` lists it)
left the loop rolled, so nothing opened. Opening one step of a loop now unrolls the loop around it
(``tests/test_figure_blocks_general.py`` has the small case).
"""
from __future__ import annotations

import numpy as np
import pytest
from test_figure_real_models import _boxes, _readable
from unseen_models import (
    assert_default_figure_is_named_parts,
    assert_every_layer_opens,
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

KINDS = ["phi", "gemma2", "dinov2", "convnextv2", "efficientnet", "gptbigcode", "recurrent_gemma", "focalnet",
         "swinv2", "mamba2", "esm", "swiftformer"]
TEXT = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64)
LANGUAGE = {"phi", "gemma2", "gptbigcode", "recurrent_gemma", "mamba2"}


def _torch_model(kind):
    """``(model, inputs, labels)``: random weights, a batch of two."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 60, (2, 12), generator=g)
    images = torch.randn(2, 3, 32, 32, generator=g)
    if kind == "phi":
        model = hf.PhiForCausalLM(hf.PhiConfig(**TEXT))
    elif kind == "gemma2":
        model = hf.Gemma2ForCausalLM(hf.Gemma2Config(head_dim=16, num_key_value_heads=1, **TEXT))
    elif kind == "dinov2":
        model = hf.Dinov2ForImageClassification(hf.Dinov2Config(
            image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2,
            num_labels=2))
    elif kind == "convnextv2":
        model = hf.ConvNextV2ForImageClassification(hf.ConvNextV2Config(
            hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1], num_labels=2))
    elif kind == "efficientnet":
        model = hf.EfficientNetForImageClassification(hf.EfficientNetConfig(
            image_size=32, width_coefficient=0.25, depth_coefficient=0.3, hidden_dim=320, num_labels=2))
    elif kind == "gptbigcode":
        model = hf.GPTBigCodeForCausalLM(hf.GPTBigCodeConfig(vocab_size=64, n_embd=32, n_layer=2, n_head=2,
                                                             n_positions=64))
    elif kind == "recurrent_gemma":
        model = hf.RecurrentGemmaForCausalLM(hf.RecurrentGemmaConfig(
            num_hidden_layers=3, vocab_size=64, hidden_size=32, intermediate_size=64, num_attention_heads=2,
            num_key_value_heads=1, lru_width=32, attention_window_size=16, head_dim=16))
    elif kind == "focalnet":
        model = hf.FocalNetForImageClassification(hf.FocalNetConfig(
            image_size=32, patch_size=4, embed_dim=16, depths=[1, 1, 2, 1], num_labels=2))
    elif kind == "swinv2":
        model = hf.Swinv2ForImageClassification(hf.Swinv2Config(
            image_size=32, patch_size=4, embed_dim=16, depths=[1, 1, 2, 1], num_heads=[1, 1, 2, 2], window_size=4,
            num_labels=2))
    elif kind == "mamba2":
        model = hf.Mamba2ForCausalLM(hf.Mamba2Config(
            vocab_size=64, hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16, state_size=16, expand=2,
            n_groups=1, chunk_size=8))
    elif kind == "esm":
        model = hf.EsmForSequenceClassification(hf.EsmConfig(
            vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64, pad_token_id=0, mask_token_id=63, position_embedding_type="rotary",
            num_labels=2))
    else:
        model = hf.SwiftFormerForImageClassification(hf.SwiftFormerConfig(
            depths=[1, 1, 1, 1], embed_dims=[8, 16, 32, 64], num_labels=2))
    model.train()
    if kind in LANGUAGE:
        return model, {"input_ids": ids}, ids.clone()
    if kind == "esm":
        return model, {"input_ids": ids}, torch.tensor([0, 1])
    return model, {"pixel_values": images}, torch.tensor([0, 1])


@pytest.fixture(scope="module", params=KINDS)
def torch_case(request):
    return record_torch_case(request.param, *_torch_model(request.param))


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_recorded_step_is_the_plain_one_bit_for_bit(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_every_module_that_ran_is_a_box_that_opens(torch_case):
    """Mamba-2's mask computations, a rolled loop inside each mixer, open by their own keys too."""
    assert_every_module_opens(torch_case)


PARTS = {
    "phi": ["model.embed_tokens", "model.embed_dropout", "model.rotary_emb", "model.layers.0", "model.layers.1",
            "model.final_layernorm", "lm_head"],
    "gemma2": ["model.embed_tokens", "model.rotary_emb", "model.layers.0", "model.layers.1", "model.norm", "lm_head"],
    "dinov2": ["dinov2.embeddings", "dinov2.encoder", "dinov2.layernorm", "classifier"],
    "convnextv2": ["convnextv2.embeddings", "convnextv2.encoder", "convnextv2.layernorm", "classifier"],
    "efficientnet": ["efficientnet.embeddings", "efficientnet.encoder", "efficientnet.pooler", "dropout",
                     "classifier"],
    "gptbigcode": ["transformer.wte", "transformer.wpe", "transformer.drop", "transformer.h.0", "transformer.h.1",
                   "transformer.ln_f", "lm_head"],
    "recurrent_gemma": ["model.embed_tokens", "model.layers.0", "model.layers.1", "model.layers.2",
                        "model.final_norm", "lm_head"],
    "focalnet": ["focalnet.embeddings", "focalnet.encoder", "focalnet.layernorm", "focalnet.pooler", "classifier"],
    "swinv2": ["swinv2.embeddings", "swinv2.encoder", "swinv2.layernorm", "swinv2.pooler", "classifier"],
    "mamba2": ["backbone.embeddings", "backbone.layers.0", "backbone.layers.1", "backbone.norm_f", "lm_head"],
    "esm": ["esm.embeddings", "esm.rotary_embeddings", "esm.encoder.layer.0", "esm.encoder.layer.1",
            "esm.encoder.emb_layer_norm_after", "classifier"],
    "swiftformer": ["swiftformer.patch_embed", "swiftformer.encoder", "norm", "head", "dist_head"],
}
REPEATS = {"phi": "PhiDecoderLayer × 2", "gemma2": "Gemma2DecoderLayer × 2", "gptbigcode": "GPTBigCodeBlock × 2",
           "recurrent_gemma": "RecurrentGemmaDecoderLayer × 2", "mamba2": "Mamba2Block × 2", "esm": "EsmLayer × 2"}


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_default_figure_is_the_models_named_parts_and_reads_at_the_notebooks_width(torch_case):
    """RecurrentGemma's third layer (local attention) is drawn apart from the "× 2" of its two recurrent layers:
    one list, two structures."""
    c = torch_case
    assert_default_figure_is_named_parts(c, PARTS[c.kind])
    _, boxes = _boxes(c.tr)
    if c.kind in REPEATS:
        assert REPEATS[c.kind] in boxes, sorted(boxes)
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_each_repeated_block_opened_stays_within_the_budget_and_readable(torch_case):
    """Each "× N" box opened, with the boxes that hold it (FocalNet's and Swin V2's stages, then their layers)."""
    h = folding.hierarchy(torch_case.tr)
    if torch_case.kind in REPEATS:
        assert h.repeats
    for rep in h.repeats.values():
        opened = {k for k in h.groups if rep.key.startswith(k + "/")} | {rep.key}
        lay = folding.layout(torch_case.tr, expanded=opened)
        assert within_budget(lay), (rep.title, len(lay.boxes), lay.notes)
        assert not any(b.key == rep.groups[0] for b in lay.boxes.values())        # instance 0 is drawn open
        assert _readable(torch_case.tr, expanded=opened) >= render.MIN_LABEL_PX, rep.title


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_labels_edge_says_no_gradient_and_the_predictions_edge_the_loss(torch_case):
    assert_torch_loss_edges_by_role(torch_case)


@pytest.mark.parametrize("torch_case", ["efficientnet", "swiftformer", "gemma2", "swinv2"], indirect=True)
def test_buffers_read_in_the_step_are_state_without_gradient(torch_case):
    """BatchNorm's running statistics (EfficientNet, SwiftFormer), Gemma 2's embedding scale and Swin V2's table
    of relative coordinates are buffers: drawn as state by their path, no gradient edge, never a weight."""
    c = torch_case
    state = {n.name: n for n in c.tr.nodes if n.kind == "state"}
    buffers = dict(c.model.named_buffers())
    assert state and set(state) <= set(buffers)
    running = {f"{bn}.{s}" for bn in c.ran_bn for s in ("running_mean", "running_var")}
    assert running <= set(state), sorted(running - set(state))[:5]
    if c.kind == "gemma2":
        assert "model.embed_tokens.embed_scale" in state
    if c.kind == "swinv2":
        assert any(name.endswith("relative_coords_table") for name in state)
    for n in state.values():
        assert n.grad is None and not any(e.differentiable for e in c.tr.edges_from(n.id))
    assert not set(buffers) & {n.name for n in c.tr.nodes if n.kind == "variable"}


# ---------------------------------------------------------------------------
# keras.applications
# ---------------------------------------------------------------------------
KERAS_KINDS = ["convnexttiny", "mobilenetv3small", "resnet50v2"]


def _keras_model(kind):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()          # Keras' layer counters restart, as in a fresh notebook
    if kind == "convnexttiny":
        return keras.applications.ConvNeXtTiny(weights=None, input_shape=(32, 32, 3), classes=4)
    if kind == "mobilenetv3small":
        return keras.applications.MobileNetV3Small(weights=None, input_shape=(32, 32, 3), classes=4,
                                                   include_preprocessing=False)
    return keras.applications.ResNet50V2(weights=None, input_shape=(32, 32, 3), classes=4)


@pytest.fixture(scope="module", params=KERAS_KINDS)
def keras_case(request):
    kind = request.param
    images = tf.constant(np.random.default_rng(0).random((2, 32, 32, 3)).astype("float32"))
    return record_keras_case(kind, lambda: _keras_model(kind), images, tf.constant([1, 3]))


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_recorded_step_is_the_plain_one_bit_for_bit(keras_case):
    assert_keras_step_bit_for_bit(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_every_layer_that_ran_is_a_box_that_opens(keras_case):
    assert_every_layer_opens(keras_case)


KERAS_PARTS = {
    "convnexttiny": ["convnext_tiny_stem", "convnext_tiny_downsampling_block_0", "convnext_tiny_downsampling_block_1",
                     "convnext_tiny_downsampling_block_2", "convnext_tiny_head"] +
                    [f"convnext_tiny_stage_{s}_block_{k}" for s, n in ((0, 3), (1, 3), (2, 9), (3, 3))
                     for k in range(n)],
    "mobilenetv3small": ["conv", "logits", "predictions"] +
                        ["expanded_conv"] + [f"expanded_conv_{k}" for k in range(1, 11)],
    "resnet50v2": ["conv1", "pool1", "post", "avg_pool", "predictions"] +
                  [f"conv{s}_block{k}" for s, n in ((2, 3), (3, 4), (4, 6), (5, 3)) for k in range(1, n + 1)],
}
KERAS_REPEATS = {
    "convnexttiny": ["convnext_tiny_stage_0_block_0 … convnext_tiny_stage_0_block_2 × 3",
                     "convnext_tiny_stage_1_block_0 … convnext_tiny_stage_1_block_2 × 3",
                     "convnext_tiny_stage_2_block_0 … convnext_tiny_stage_2_block_8 × 9",
                     "convnext_tiny_stage_3_block_0 … convnext_tiny_stage_3_block_2 × 3"],
    "mobilenetv3small": ["expanded_conv_4 … expanded_conv_5 × 2", "expanded_conv_9 … expanded_conv_10 × 2"],
    "resnet50v2": ["conv3_block2 … conv3_block3 × 2", "conv4_block2 … conv4_block5 × 4",
                   "conv5_block2 … conv5_block3 × 2"],
}


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_default_figure_is_the_papers_blocks_within_the_budget(keras_case):
    """ConvNeXt-T's stages are 3, 3, 9 and 3 blocks, as in the paper's design; ResNet50V2's blocks are the
    paper's 3, 4, 6 and 3 per stage, the last of each stage (it downsamples) drawn apart from the "× N" of the
    others."""
    assert_keras_default_figure_is_the_papers_blocks(keras_case, KERAS_PARTS[keras_case.kind],
                                                     KERAS_REPEATS[keras_case.kind])


@pytest.mark.parametrize("keras_case", ["mobilenetv3small", "resnet50v2"], indirect=True)
def test_keras_moving_statistics_are_state_without_gradient(keras_case):
    c = keras_case
    state = {n.name: n for n in c.tr.nodes if n.kind == "state"}
    moving = [v.path for v in c.model.non_trainable_variables if v.path.endswith(("moving_mean", "moving_variance"))]
    assert moving and set(moving) <= set(state), sorted(set(moving) - set(state))[:5]
    for n in state.values():
        assert n.grad is None and not any(e.differentiable for e in c.tr.edges_from(n.id))
    assert not {v.path for v in c.model.non_trainable_variables} & {n.name for n in c.tr.nodes
                                                                    if n.kind == "variable"}


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_labels_edge_goes_by_role(keras_case):
    assert_keras_labels_edge_by_role(keras_case)
