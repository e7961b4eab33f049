"""Issue 42 on a third batch of architectures the other real-model tests never saw.

tests/test_figure_real_models*.py, tests/test_real_models*.py and tests/test_figure_unseen_architectures*.py
check BERT, GPT-2, ViT, ResNet, ALBERT, T5, ConvNeXt, Swin, DistilBERT, BART, GPT-Neo, MobileViT, a learner's
CNN, MobileNetV2/V3, ResNet50(V2), DenseNet121, EfficientNetB0, ConvNeXtTiny, VGG16, an LSTM, the keras.io text
transformer and a siamese model. Here the same promises are checked on models whose structure differs from all of
those, each built by its own library with random weights and a tiny configuration (nothing downloaded, no
torchvision):

* PyTorch, ``transformers`` 5.x:

  - LLaMA (``LlamaForCausalLM(LlamaConfig(hidden_size=16, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2))``): a decoder with RMSNorm, rotary position embeddings computed by a module with an
    ``inv_freq`` buffer (``model.rotary_emb``), grouped-query attention (2 key/value heads for 4 query heads), a
    SwiGLU MLP (``gate_proj``, ``up_proj``, ``down_proj``), the causal-LM loss shifting ``labels`` inside the
    library (``ForCausalLMLoss``);
  - Wav2Vec2 (``Wav2Vec2ForSequenceClassification``): raw audio through a convolutional feature extractor (a
    GroupNorm conv layer, then conv layers without norm), a feature projection, a transformer encoder whose
    positional embedding is a grouped convolution with weight normalisation (``parametrizations.weight``:
    ``original0`` / ``original1``), mean pooling written in ``forward``, a ``projector`` and a ``classifier``;
  - CLIP (``CLIPModel(..., return_loss=True)``): two towers (``text_model``, ``vision_model``), their
    projections, L2 normalisation and a similarity matrix scaled by the learned ``logit_scale`` written in
    ``forward``, and the symmetric contrastive loss (``image_text_contrastive_loss``: cross-entropy of the
    similarity and of its transpose ``similarity.T`` against ``torch.arange``, labels the library makes);
  - Segformer (``SegformerForSemanticSegmentation``): a hierarchical encoder of stages (overlapping patch
    embedding, efficient self-attention with spatial reduction ``sr_ratios``, Mix-FFN with a depth-wise conv),
    an all-MLP decode head fusing the stages' outputs (upsampled and concatenated, BatchNorm), per-pixel labels
    and the logits upsampled to the labels' size inside the library before the loss.
* Keras 3, ``keras.applications`` with ``weights=None``: Xception (71×71: entry, middle and exit flows of
  separable convolutions, residual shortcuts made of layers Keras leaves unnamed — ``conv2d_N``,
  ``batch_normalization_N``, ``add_N`` — and the middle flow's ``block5`` … ``block12`` of one structure) and
  InceptionV3 (75×75: Inception modules of parallel branches concatenated by ``mixed0`` … ``mixed10``, every
  convolution unnamed: ``conv2d_N``, ``batch_normalization_N``, ``activation_N``).
* Keras 3, a model a learner copies from keras.io: the U-Net-like model of "Image segmentation with a U-Net-like
  architecture" (https://keras.io/examples/vision/oxford_pets_image_segmentation/, ``get_model`` as written there,
  source keras-team/keras-io ``examples/vision/oxford_pets_image_segmentation.py``; 32×32 inputs instead of
  160×160): an entry block, three down-sampling blocks and four up-sampling blocks made in two ``for`` loops (each
  block the same layers with other filter counts, a projected residual added back), a per-pixel softmax; every
  layer named only after its class by Keras.

Each model's whole training step is recorded as a learner writes it (forward, loss, ``backward`` /
``tape.gradient``, ``opt.step()`` / ``apply_gradients``) beside a plain twin, and checked for what a user relies
on: the loss and every gradient bit for bit the framework's; the trace showing the weights before the update;
the default figure's boxes are the model's named top-level parts (the backbone's ``named_children()``, a
hierarchical backbone's stages, Keras block names) within the budget, without a "fold" box; "Class × N" where
blocks repeat, with ‖ḡ‖ of each instance; every module / layer that ran reachable by ``expanded=``; state
(buffers, BatchNorm statistics) drawn as state without gradient; the labels' edge says "no gradient: labels"; no
box titled by a bare library op and no loose op without gradient at the top of the figure; readable
(≥ ``render.MIN_LABEL_PX`` at 850 px) for the default figure and with one repeated stage opened.

The assertions state the right behaviour. Where the package gets it wrong today the test is marked
``xfail(strict=True)`` with what is wrong, concretely.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from test_figure_real_models import _boxes, _readable
from unseen_models import (
    assert_buffers_are_state,
    assert_default_figure_is_named_parts,
    assert_every_layer_opens,
    assert_every_module_opens,
    assert_keras_labels_edge_by_role,
    assert_keras_state_without_gradient,
    assert_keras_step_bit_for_bit,
    assert_repeated_stage_is_one_box,
    assert_repeated_stage_opens_to_one_instance,
    assert_torch_loss_edges_by_role,
    assert_torch_step_bit_for_bit,
    each_bars,
    each_norms,
    fits_budget,
    group_key,
    group_titles,
    hf,
    keras,
    named_parts,
    op_named_nodes,
    plumbing,
    record_keras_case,
    record_torch_case,
    repeat_label,
    tf,
    the_repeat,
    torch,
)

from autodiff_viz.views import folding, render

# ---------------------------------------------------------------------------
# PyTorch: four transformers models, one recorded training step each
# ---------------------------------------------------------------------------
TORCH_KINDS = ["llama", "wav2vec2", "clip", "segformer"]


def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``; CLIP makes its labels itself."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if kind == "llama":
        model = hf.LlamaForCausalLM(hf.LlamaConfig(
            vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        ids = torch.randint(0, 40, (2, 8), generator=g)
        kw, labels = {"input_ids": ids}, ids.clone()
    elif kind == "wav2vec2":
        model = hf.Wav2Vec2ForSequenceClassification(hf.Wav2Vec2Config(
            vocab_size=10, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            conv_dim=(8, 8, 8), conv_stride=(4, 2, 2), conv_kernel=(8, 3, 3), num_conv_pos_embeddings=4,
            num_conv_pos_embedding_groups=2, classifier_proj_size=8, num_labels=3, mask_time_prob=0.0))
        kw, labels = {"input_values": torch.randn(2, 400, generator=g)}, torch.tensor([0, 2])
    elif kind == "clip":
        model = hf.CLIPModel(hf.CLIPConfig(
            text_config={"vocab_size": 40, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                         "num_attention_heads": 2, "max_position_embeddings": 16, "projection_dim": 8,
                         "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1},
            vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                           "num_attention_heads": 2, "image_size": 16, "patch_size": 4, "projection_dim": 8},
            projection_dim=8))
        kw = {"input_ids": torch.randint(3, 40, (3, 6), generator=g),
              "pixel_values": torch.randn(3, 3, 16, 16, generator=g), "return_loss": True}
        labels = None
    else:
        model = hf.SegformerForSemanticSegmentation(hf.SegformerConfig(
            num_channels=3, num_encoder_blocks=2, depths=[2, 2], sr_ratios=[2, 1], hidden_sizes=[8, 16],
            patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
            decoder_hidden_size=16, num_labels=3))
        kw = {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}
        labels = torch.randint(0, 3, (2, 32, 32), generator=g)
    model.train()
    return model, kw, labels


@pytest.fixture(scope="module", params=TORCH_KINDS)
def torch_case(request):
    plain, inputs, labels = _torch_model(request.param)
    return record_torch_case(request.param, plain, inputs, labels)


def test_torch_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


# the parts a paper draws for each model: the backbone's named_children() (a hierarchical backbone's stages) and
# the heads, each one named box or one instance of a "× N" box
TORCH_PARTS = {
    "llama": ("model.embed_tokens", "model.rotary_emb", "model.layers.0", "model.layers.2", "model.norm",
              "lm_head"),
    "wav2vec2": ("wav2vec2.feature_extractor", "wav2vec2.feature_projection", "wav2vec2.encoder", "projector",
                 "classifier"),
    "clip": ("text_model", "vision_model", "text_projection", "visual_projection"),
    "segformer": ("segformer.stages.0", "segformer.stages.1", "decode_head"),
}


@pytest.mark.parametrize("torch_case", [
    "llama", "wav2vec2", "clip",
    "segformer",
], indirect=True)
def test_torch_the_default_figure_is_the_models_named_parts_within_the_budget(torch_case):
    assert_default_figure_is_named_parts(torch_case, TORCH_PARTS[torch_case.kind])


@pytest.mark.parametrize("torch_case", [
    "llama", "wav2vec2",
    "clip",
    "segformer",
], indirect=True)
def test_torch_the_default_figure_draws_the_architecture_not_the_mask_plumbing(torch_case):
    c = torch_case
    assert not plumbing(c.tr, folding.layout(c.tr))


@pytest.mark.parametrize("torch_case", [
    "llama", "wav2vec2",
    "clip", "segformer",
], indirect=True)
def test_torch_the_default_figure_fits_the_notebook(torch_case):
    c = torch_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", [
    "llama", "wav2vec2",
    "clip",
    "segformer",
], indirect=True)
def test_torch_no_box_is_named_by_a_library_op(torch_case):
    c = torch_case
    assert not op_named_nodes(c.tr, folding.layout(c.tr))


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_every_module_that_ran_is_a_group_and_opens_by_expanded(torch_case):
    assert_every_module_opens(torch_case)


@pytest.mark.parametrize("torch_case", [
    "llama", "wav2vec2",
    "clip",
    "segformer",
], indirect=True)
def test_torch_the_labels_edge_says_no_gradient_and_the_predictions_edge_the_loss(torch_case):
    assert_torch_loss_edges_by_role(torch_case)


@pytest.mark.parametrize("torch_case", ["clip"], indirect=True)
def test_clip_both_directions_of_the_contrastive_loss_reach_the_similarity_matrix(torch_case):
    c = torch_case
    tr = c.tr
    assert not [n for n in tr.nodes if n.kind == "outside"]
    losses = [n for n in tr.nodes if n.kind == "op" and n.op == "cross_entropy"]
    assert len(losses) == 2
    scale = next(n for n in tr.nodes if n.kind == "variable" and n.name == "logit_scale")
    reach = {scale.id}
    for n in tr.nodes:                                    # tape order: a node after the nodes it reads
        if any(e.src in reach for e in tr.edges_into(n.id)):
            reach.add(n.id)
    assert all(n.id in reach for n in losses)


# which buffers each model's forward pass reads (Wav2Vec2 has none)
USED_BUFFERS = {
    "llama": lambda name: name == "model.rotary_emb.inv_freq",
    "clip": lambda name: name.endswith("embeddings.position_ids"),
    "segformer": lambda name: name.endswith(("running_mean", "running_var")),
}


@pytest.mark.parametrize("torch_case", sorted(USED_BUFFERS), indirect=True)
def test_torch_buffers_are_state_without_gradient(torch_case):
    assert_buffers_are_state(torch_case, USED_BUFFERS[torch_case.kind])


# one repeated stage of each model opened: (the box to open, "Class × N" it shows, the instances' names)
TORCH_STAGES = {
    "llama": (None, "LlamaDecoderLayer × 3", "model.layers.0 … model.layers.2"),
    "wav2vec2": ("wav2vec2.encoder", "Wav2Vec2EncoderLayer × 2",
                 "wav2vec2.encoder.layers.0 … wav2vec2.encoder.layers.1"),
    "clip": ("text_model.encoder", "CLIPEncoderLayer × 2",
             "text_model.encoder.layers.0 … text_model.encoder.layers.1"),
    "segformer": ("segformer.stages.1", "SegformerLayer × 2",
                  "segformer.stages.1.blocks.0 … segformer.stages.1.blocks.1"),
}


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_a_repeated_stage_is_one_box_times_n_with_the_gradient_of_each(torch_case):
    assert_repeated_stage_is_one_box(torch_case.tr, *TORCH_STAGES[torch_case.kind])


@pytest.mark.parametrize("torch_case", ["segformer"], indirect=True)
def test_segformer_every_stage_opens_to_its_layers_times_n(torch_case):
    c = torch_case
    tr = c.tr
    for stage in ("segformer.stages.0", "segformer.stages.1"):
        _, boxes = _boxes(tr, expanded={group_key(tr, stage)})
        assert "SegformerLayer × 2" in boxes and f"{stage}.patch_embeddings" in boxes, sorted(boxes)


@pytest.mark.parametrize("torch_case", [
    "llama", "wav2vec2",
    "clip",
    "segformer",
], indirect=True)
def test_torch_a_repeated_stage_opens_to_one_instance_and_stays_readable(torch_case):
    where, head, _ = TORCH_STAGES[torch_case.kind]
    assert_repeated_stage_opens_to_one_instance(torch_case.tr, where, head)


@pytest.mark.parametrize("torch_case", ["llama"], indirect=True)
def test_llama_a_decoder_layer_opens_to_grouped_query_attention_and_the_swiglu_mlp(torch_case):
    c = torch_case
    tr = c.tr
    rep = the_repeat(tr, "LlamaDecoderLayer", 3)
    _, boxes = _boxes(tr, expanded={rep.key})
    for part in ("input_layernorm", "self_attn", "post_attention_layernorm", "mlp"):
        assert f"model.layers.0.{part}" in boxes, (part, sorted(boxes))
    _, boxes = _boxes(tr, expanded={group_key(tr, "model.layers.0.mlp")})
    for part in ("gate_proj", "up_proj", "down_proj"):
        assert f"model.layers.0.mlp.{part}" in boxes, (part, sorted(boxes))
    k = next(n for n in tr.nodes if n.kind == "variable" and n.name == "model.layers.0.self_attn.k_proj.weight")
    q = next(n for n in tr.nodes if n.kind == "variable" and n.name == "model.layers.0.self_attn.q_proj.weight")
    assert k.shape[0] * 2 == q.shape[0]                                # 2 key/value heads for 4 query heads


@pytest.mark.parametrize("torch_case", ["wav2vec2"], indirect=True)
def test_wav2vec2_the_weight_normalised_positional_conv_is_two_weights_with_their_gradients(torch_case):
    c = torch_case
    tr = c.exact
    names = {n.name: n for n in tr.nodes if n.kind == "variable"}
    conv = c.plain.wav2vec2.encoder.pos_conv_embed.conv
    for k in ("original0", "original1"):
        name = f"wav2vec2.encoder.pos_conv_embed.conv.parametrizations.weight.{k}"
        assert name in names, sorted(n for n in names if "pos_conv" in n)
        assert np.array_equal(names[name].grad.data, getattr(conv.parametrizations.weight, k).grad.numpy())
    h = folding.hierarchy(c.tr)
    assert "wav2vec2.encoder.pos_conv_embed" in {g.title for g in h.groups.values()}


@pytest.mark.parametrize("torch_case", ["wav2vec2"], indirect=True)
def test_wav2vec2_the_feature_extractor_opens_to_its_first_conv_and_the_others_times_two(torch_case):
    c = torch_case
    tr = c.tr
    _, boxes = _boxes(tr, expanded={group_key(tr, "wav2vec2.feature_extractor")})
    assert "wav2vec2.feature_extractor.conv_layers.0" in boxes, sorted(boxes)     # GroupNorm: another class
    assert "Wav2Vec2NoLayerNormConvLayer × 2" in boxes, sorted(boxes)
    assert _readable(tr, expanded={group_key(tr, "wav2vec2.feature_extractor")}) >= render.MIN_LABEL_PX


# ---------------------------------------------------------------------------
# Keras: Xception, InceptionV3 and keras.io's U-Net-like model, one recorded training step each
# ---------------------------------------------------------------------------
KERAS_KINDS = ["xception", "inceptionv3", "unet"]
SIZES = {"xception": 71, "inceptionv3": 75, "unet": 32}


def keras_io_unet(img_size=(32, 32), num_classes=3):
    """``get_model`` of https://keras.io/examples/vision/oxford_pets_image_segmentation/ as written there."""
    from keras import layers
    inputs = keras.Input(shape=img_size + (3,))

    # Entry block
    x = layers.Conv2D(32, 3, strides=2, padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    # Blocks 1, 2, 3 are identical apart from the feature depth.
    for filters in [64, 128, 256]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(filters, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    for filters in [256, 128, 64, 32]:
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.UpSampling2D(2)(x)

        # Project residual
        residual = layers.UpSampling2D(2)(previous_block_activation)
        residual = layers.Conv2D(filters, 1, padding="same")(residual)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    # Add a per-pixel classification layer
    outputs = layers.Conv2D(num_classes, 3, activation="softmax", padding="same")(x)

    # Define the model
    model = keras.Model(inputs, outputs)
    return model


def _keras_model(kind):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()          # Keras' layer counters restart: conv2d, conv2d_1 … as in a notebook
    if kind == "unet":
        return keras_io_unet()
    build = {"xception": keras.applications.Xception, "inceptionv3": keras.applications.InceptionV3}[kind]
    return build(weights=None, input_shape=(SIZES[kind], SIZES[kind], 3), classes=4)


@pytest.fixture(scope="module", params=KERAS_KINDS)
def keras_case(request):
    kind = request.param
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((2, SIZES[kind], SIZES[kind], 3)).astype("float32"))
    labels = tf.constant(rng.integers(0, 3, (2, 32, 32, 1))) if kind == "unet" else tf.constant([1, 3])
    return record_keras_case(kind, lambda: _keras_model(kind), images, labels)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(keras_case):
    assert_keras_step_bit_for_bit(keras_case)


# the parts a paper draws, by the names Keras gives them: Xception's blocks, InceptionV3's modules (named by the
# concatenation that ends each), the U-Net's entry convolution, its loops' blocks (named by the only names they
# have: the unnamed add that ends each) and its per-pixel head
KERAS_PARTS = {
    "xception": ["block1", "block2", "block3", "block4"] + [f"block{k}" for k in range(5, 13)] +
                ["block13", "block14", "avg_pool", "predictions"],
    "inceptionv3": [f"mixed{k}" for k in range(11)] + ["avg_pool", "predictions"],
    "unet": ["conv2d", "add", "add_1", "add_2", "add_3", "add_4", "add_5", "add_6", "conv2d_8"],
}


@pytest.mark.parametrize("keras_case", [
    "xception",
    "inceptionv3",
    "unet",
], indirect=True)
def test_keras_the_default_figure_is_the_models_blocks_by_name_within_the_budget(keras_case):
    c = keras_case
    lay = folding.layout(c.tr)
    parts = named_parts(c.tr, lay)
    for part in KERAS_PARTS[c.kind]:
        assert part in parts, (part, parts)
    titles = group_titles(lay)
    assert len(titles) == len(set(titles)), [t for t in titles if titles.count(t) > 1]
    assert fits_budget(lay), (len(lay.boxes), lay.notes)


@pytest.mark.parametrize("keras_case", ["xception"], indirect=True)
def test_xception_the_unnamed_shortcut_layers_belong_to_their_block(keras_case):
    c = keras_case
    titles = group_titles(folding.layout(c.tr))
    loose = [t for t in titles if re.fullmatch(r"(conv2d|batch_normalization|add)(_\d+)?", t)]
    assert not loose, loose


# a run of blocks of one structure: (the "× N" box, the instances' names or None where Keras gave none, what
# each instance holds)
KERAS_REPEATS = {
    "xception": ("block5 … block12 × 8", "block5 … block12", "SeparableConv2D"),
    "inceptionv3": ("mixed4 … mixed7 × 4", "mixed4 … mixed7", "Conv2D"),
    "unet": ("add … add_2 × 3", "add … add_2", "SeparableConv2D"),
}


@pytest.mark.parametrize("keras_case", [
    "xception", "inceptionv3", "unet",
], indirect=True)
def test_keras_blocks_of_one_structure_are_one_box_times_n_with_the_gradient_of_each(keras_case):
    c = keras_case
    head, names, holds = KERAS_REPEATS[c.kind]
    lay, boxes = _boxes(c.tr)
    box = next((b for t, b in boxes.items() if t.endswith(head) and b.kind == "repeat"), None)
    assert box is not None, sorted(boxes)
    label = repeat_label(c.tr, box.title + " × ")
    if names:
        assert names in label
    assert each_bars(label) == box.count, label            # a bar for each instance, the first values written
    assert len(each_norms(label)) == min(box.count, 6), label
    rep = folding.hierarchy(c.tr).repeats[box.key]
    assert holds in (getattr(c.tr, "kinds", {}).get(g.title) for k, g in folding.hierarchy(c.tr).groups.items()
                     if rep.groups[0] in folding._ancestors(folding.hierarchy(c.tr), k))
    lay2, boxes2 = _boxes(c.tr, expanded={rep.key})
    assert not any(b.kind == "fold" for b in lay2.boxes.values()) and len(lay2.boxes) <= folding.NODE_BUDGET
    assert f"{rep.title} × {rep.count - 1}" in boxes2 or rep.count == 2, sorted(boxes2)
    assert _readable(c.tr, expanded={rep.key}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", [
    "xception",
    "inceptionv3",
    "unet",
], indirect=True)
def test_keras_the_default_figure_fits_the_notebook(keras_case):
    c = keras_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_no_box_is_named_by_a_library_op(keras_case):
    c = keras_case
    assert not op_named_nodes(c.tr, folding.layout(c.tr))


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_every_layer_that_ran_is_a_group_and_opens_by_expanded(keras_case):
    assert_every_layer_opens(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_moving_statistics_are_state_without_gradient(keras_case):
    assert_keras_state_without_gradient(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_labels_edge_goes_by_role(keras_case):
    assert_keras_labels_edge_by_role(keras_case)
