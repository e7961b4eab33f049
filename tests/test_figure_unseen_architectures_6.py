"""A sixth batch of architectures this project had not drawn, built by ``transformers`` with random weights:

* RegNet (``RegNetForImageClassification``): its embedder holds one conv layer (convolution, norm, activation),
  then four stages, a pooler and the classifier — the shape of Hugging Face's ResNet;
* CvT (``CvtForImageClassification``): ``CvtModel`` holds only its encoder, a list of stages, each a
  convolutional token embedding and its blocks;
* PVTv2 (``PvtV2ForImageClassification``): ``PvtV2Model`` holds only its encoder, a list of stages;
* LED (``LEDForConditionalGeneration``): an encoder (Longformer's windowed attention, larger than its decoder)
  and a decoder that reads the target tokens;
* SEW (``SEWForSequenceClassification``): a feature encoder whose one part is a list of two different conv
  layers, then a squeezed transformer encoder;
* XLM (``XLMForSequenceClassification``): its layers' parts sit in parallel lists (``attentions[i]``,
  ``layer_norm1[i]``, ``ffns[i]``, ``layer_norm2[i]``) that the model's own loop runs by index, and one GELU
  module is held by every ``ffns[i]``;

and two ``keras.applications`` models (``weights=None``):

* MobileNet (v1): its depthwise separable block K is ``conv_pad_K``, ``conv_dw_K`` … ``conv_pw_K_relu`` — the
  instance number after the layer's role;
* InceptionResNetV2: each residual block is an Inception module of class-named branches merged by
  ``block35_K_mixed``, then ``block35_K_conv``, the scaled residual ``block35_K`` and ``block35_K_ac``;

and two keras.io examples, reduced: "Image classification with Vision Transformer" (Khalid Salama,
https://keras.io/examples/vision/image_classification_with_vision_transformer/), whose encoder block is written in
a ``for`` loop as layers named after their class, closed by two residual ``Add`` s; and "Image classification
with ConvMixer" (Sayak Paul, https://keras.io/examples/vision/convmixer/), whose block is a depthwise convolution
closed by its residual ``Add``, then a pointwise convolution, an activation and a batch norm, in no block.

Found by probing: each drew its architecture wrong before these rules (RegNet, CvT, LED and SEW opened their
encoder where Hugging Face's ResNet, BART and Wav2Vec2 keep it one box; PVTv2 read its encoder as one model
called twice). The expected parts are what the papers draw: ResNet-shaped models by embedder, encoder, pooler
and head (Radosavovic et al. 2020, RegNet, Fig. 3), CvT and PVTv2 by their stages (Wu et al. 2021, Fig. 2; Wang
et al. 2022, Fig. 1), LED as encoder → decoder (Beltagy et al. 2020, §6), SEW as the feature encoder, the
transformer encoder and the head (Wu et al. 2021, Fig. 2), MobileNet as its 13 depthwise separable blocks
(Howard et al. 2017, Table 1), InceptionResNetV2 as stem, modules and its three kinds of residual blocks × 10,
× 20, × 9 (Szegedy et al. 2016, Fig. 15). Before these rules MobileNet was one box ``conv`` (every block shares
the prefix ``conv``) and InceptionResNetV2 split each block in two (``block35_1_mixed``, ``block35_1``), found no
"× N" and folded its middle into a box without a title. Each model's whole training step is recorded as a
learner writes it and checked as the earlier batches are.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_figure_real_models import _boxes, _readable
from unseen_models import (
    assert_default_figure_is_named_parts,
    assert_keras_default_figure_is_the_papers_blocks,
    assert_keras_labels_edge_by_role,
    assert_keras_state_without_gradient,
    assert_keras_step_bit_for_bit,
    assert_torch_loss_edges_by_role,
    assert_torch_step_bit_for_bit,
    fits_budget,
    hf,
    keras,
    op_named_nodes,
    plumbing,
    record_keras_case,
    record_torch_case,
    tf,
    torch,
)

from autodiff_viz.views import folding, render

KINDS = ["regnet", "cvt", "pvtv2", "led", "sew", "xlm"]


def _torch_model(kind):
    """A model with random weights, its inputs and its labels."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    classes = torch.tensor([0, 2])
    pixels = {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}
    if kind == "regnet":
        model = hf.RegNetForImageClassification(hf.RegNetConfig(
            embedding_size=8, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 2, 1], groups_width=8, num_labels=3))
        return model, pixels, classes
    if kind == "cvt":
        model = hf.CvtForImageClassification(hf.CvtConfig(
            embed_dim=[8, 16], num_heads=[1, 2], depth=[1, 2], patch_sizes=[7, 3], patch_stride=[4, 2],
            patch_padding=[2, 1], mlp_ratio=[2.0, 2.0], attention_drop_rate=[0.0, 0.0], drop_rate=[0.0, 0.0],
            drop_path_rate=[0.0, 0.0], qkv_bias=[True, True], cls_token=[False, True],
            qkv_projection_method=["dw_bn", "dw_bn"], kernel_qkv=[3, 3], padding_kv=[1, 1], stride_kv=[2, 2],
            padding_q=[1, 1], stride_q=[1, 1], num_labels=3))
        return model, pixels, classes
    if kind == "pvtv2":
        model = hf.PvtV2ForImageClassification(hf.PvtV2Config(
            hidden_sizes=[8, 16], depths=[1, 2], num_encoder_blocks=2, sr_ratios=[2, 1], num_attention_heads=[1, 2],
            patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2], num_labels=3))
        return model, pixels, classes
    ids = torch.randint(3, 40, (2, 8), generator=g)
    if kind == "led":
        model = hf.LEDForConditionalGeneration(hf.LEDConfig(
            vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_encoder_position_embeddings=32,
            max_decoder_position_embeddings=32, attention_window=4, pad_token_id=1, bos_token_id=0, eos_token_id=2,
            decoder_start_token_id=2))
        return model, {"input_ids": ids}, torch.randint(3, 40, (2, 5), generator=g)
    if kind == "xlm":
        model = hf.XLMForSequenceClassification(hf.XLMConfig(
            vocab_size=40, emb_dim=16, n_layers=2, n_heads=2, max_position_embeddings=32, num_labels=3))
        return model, {"input_ids": ids}, classes
    model = hf.SEWForSequenceClassification(hf.SEWConfig(
        vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2, squeeze_factor=2, num_labels=3, mask_time_prob=0.0))
    return model, {"input_values": torch.randn(2, 400, generator=g)}, classes


@pytest.fixture(scope="module", params=KINDS)
def torch_case(request):
    plain, inputs, labels = _torch_model(request.param)
    plain.train()
    return record_torch_case(request.param, plain, inputs, labels)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_labels_edge_says_no_gradient_and_the_predictions_edge_the_loss(torch_case):
    assert_torch_loss_edges_by_role(torch_case)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_default_figure_fits_the_notebook(torch_case):
    assert _readable(torch_case.tr) >= render.MIN_LABEL_PX


PARTS = {
    "regnet": ("regnet.embedder", "regnet.encoder", "regnet.pooler", "classifier"),
    "cvt": ("cvt.encoder.stages.0", "cvt.encoder.stages.1", "layernorm", "classifier"),
    "pvtv2": ("pvt_v2.encoder.layers.0", "pvt_v2.encoder.layers.1", "classifier"),
    "led": ("led.encoder", "led.decoder", "lm_head"),
    "sew": ("sew.feature_extractor", "sew.feature_projection", "sew.encoder", "projector", "classifier"),
    # XLM's layer i is attentions[i], layer_norm1[i], ffns[i], layer_norm2[i] and the model's own residuals
    "xlm": ("transformer.embeddings", "transformer.position_embeddings", "transformer.layer_norm_emb",
            "transformer.*.0", "transformer.*.1", "sequence_summary"),
}


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_default_figure_is_the_models_named_parts_each_once(torch_case):
    assert_default_figure_is_named_parts(torch_case, PARTS[torch_case.kind])


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_no_box_is_a_library_op_or_loose_plumbing(torch_case):
    lay = folding.layout(torch_case.tr)
    assert not op_named_nodes(torch_case.tr, lay) and not plumbing(torch_case.tr, lay)


@pytest.mark.parametrize("torch_case", ["xlm"], indirect=True)
def test_xlm_a_layer_is_its_parts_of_one_index_and_layers_fold_times_n(torch_case):
    """The parts of index i are one layer; the two layers fold as "× 2", and one opens to its attention, norms and
    feed-forward — the GELU that every ``ffns[i]`` holds scoped under the one that called it."""
    tr = torch_case.tr
    lay, boxes = _boxes(tr)
    assert "transformer.*.0 … transformer.*.1 × 2" in boxes, sorted(boxes)
    rep = folding.hierarchy(tr).repeats[boxes["transformer.*.0 … transformer.*.1 × 2"].key]
    opened = _boxes(tr, expanded={rep.groups[1]})[1]
    parts = {"transformer.attentions.1", "transformer.layer_norm1.1", "transformer.ffns.1", "transformer.layer_norm2.1"}
    assert parts <= set(opened), sorted(opened)
    h = folding.hierarchy(tr)
    assert not any(g.title.startswith("transformer.ffns.0") for g in h.groups.values()
                   if g.key.startswith(rep.groups[1] + "/"))


@pytest.mark.parametrize("torch_case", ["cvt", "pvtv2"], indirect=True)
def test_an_encoder_run_once_over_its_stages_is_one_group(torch_case):
    """The encoder's loop (embedding, blocks; embedding, blocks) is one call of the encoder, not two."""
    titles = [g.title for g in folding.hierarchy(torch_case.tr).groups.values()]
    encoder = next(t for t in titles if t.endswith(".encoder"))
    assert titles.count(encoder) == 1, encoder


# ---------------------------------------------------------------------------
# Keras: MobileNet (v1) and InceptionResNetV2, one recorded training step each
# ---------------------------------------------------------------------------
KERAS_KINDS = ["mobilenet", "inceptionresnetv2"]
SIDE = {"mobilenet": 32, "inceptionresnetv2": 75}          # the smallest input each accepts


def _keras_model(kind):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()          # Keras' layer counters restart: conv2d, conv2d_1 … as in a notebook
    build = {"mobilenet": keras.applications.MobileNet,
             "inceptionresnetv2": keras.applications.InceptionResNetV2}[kind]
    return build(weights=None, input_shape=(SIDE[kind], SIDE[kind], 3), classes=4)


@pytest.fixture(scope="module", params=KERAS_KINDS)
def keras_case(request):
    kind = request.param
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((2, SIDE[kind], SIDE[kind], 3)).astype("float32"))
    return record_keras_case(kind, lambda: _keras_model(kind), images, tf.constant([1, 3]))


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(keras_case):
    assert_keras_step_bit_for_bit(keras_case)


KERAS_PARTS = {
    "mobilenet": ["conv1"] + [f"conv_*_{k}" for k in range(1, 14)] + ["conv_preds", "predictions"],
    "inceptionresnetv2": ["mixed_5b"] + [f"block35_{k}" for k in range(1, 11)] + ["mixed_6a"] +
                         [f"block17_{k}" for k in range(1, 21)] + ["mixed_7a"] +
                         [f"block8_{k}" for k in range(1, 11)] + ["conv_7b", "predictions"],
}
KERAS_REPEATS = {
    "mobilenet": ["conv_*_7 … conv_*_11 × 5"],
    "inceptionresnetv2": ["block35_1 … block35_10 × 10", "block17_1 … block17_20 × 20", "block8_1 … block8_9 × 9"],
}


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_default_figure_is_the_papers_blocks_within_the_budget(keras_case):
    assert_keras_default_figure_is_the_papers_blocks(keras_case, KERAS_PARTS[keras_case.kind],
                                                     KERAS_REPEATS[keras_case.kind])


@pytest.mark.parametrize("keras_case", ["inceptionresnetv2"], indirect=True)
def test_inceptionresnetv2_a_block_opens_to_its_module_and_its_residual_and_the_module_to_its_branches(keras_case):
    """``block35_1`` holds the Inception module ``block35_1_mixed`` (its class-named branches and their
    concatenation), then the 1×1 conv, the scaled residual addition and the activation."""
    tr = keras_case.tr
    rep = next(r for r in folding.hierarchy(tr).repeats.values() if r.title.startswith("block35_1 "))
    first = rep.groups[0]
    lay, boxes = _boxes(tr, expanded={first})
    assert {"block35_1_mixed", "block35_1_conv", "block35_1_ac"} <= set(boxes), sorted(boxes)
    module = boxes["block35_1_mixed"].key
    lay, opened = _boxes(tr, expanded={first, module})
    assert sum(t.startswith("conv2d_") for t in opened) >= 4, sorted(opened)      # the branches' convolutions


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_moving_statistics_are_state_without_gradient(keras_case):
    assert_keras_state_without_gradient(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_labels_edge_goes_by_role(keras_case):
    assert_keras_labels_edge_by_role(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_no_box_is_named_by_a_library_op(keras_case):
    assert not op_named_nodes(keras_case.tr, folding.layout(keras_case.tr))


# ---------------------------------------------------------------------------
# keras.io: Image classification with Vision Transformer (reduced: 16×16 images, 4 blocks of width 8)
# ---------------------------------------------------------------------------
class Patches(keras.layers.Layer):
    """The example's patch extraction: images → (batch, patches, patch_size² · channels)."""

    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def call(self, images):
        shape = keras.ops.shape(images)
        patches = keras.ops.image.extract_patches(images, size=self.patch_size)
        count = (shape[1] // self.patch_size) * (shape[2] // self.patch_size)
        return keras.ops.reshape(patches, (shape[0], count, self.patch_size * self.patch_size * shape[3]))


class PatchEncoder(keras.layers.Layer):
    """The example's projection of each patch plus a learned position embedding."""

    def __init__(self, num_patches, projection_dim):
        super().__init__()
        self.num_patches = num_patches
        self.projection = keras.layers.Dense(units=projection_dim)
        self.position_embedding = keras.layers.Embedding(input_dim=num_patches, output_dim=projection_dim)

    def call(self, patch):
        positions = keras.ops.expand_dims(keras.ops.arange(start=0, stop=self.num_patches, step=1), axis=0)
        return self.projection(patch) + self.position_embedding(positions)


def _mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = keras.layers.Dense(units, activation=keras.activations.gelu)(x)
        x = keras.layers.Dropout(dropout_rate)(x)
    return x


def _vit(image_size=16, patch_size=4, projection_dim=8, num_heads=2, transformer_layers=4, num_classes=3):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()
    inputs = keras.Input(shape=(image_size, image_size, 3))
    encoded_patches = PatchEncoder((image_size // patch_size) ** 2, projection_dim)(Patches(patch_size)(inputs))
    for _ in range(transformer_layers):
        x1 = keras.layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
        attention_output = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=projection_dim,
                                                           dropout=0.1)(x1, x1)
        x2 = keras.layers.Add()([attention_output, encoded_patches])
        x3 = keras.layers.LayerNormalization(epsilon=1e-6)(x2)
        x3 = _mlp(x3, hidden_units=[projection_dim * 2, projection_dim], dropout_rate=0.1)
        encoded_patches = keras.layers.Add()([x3, x2])
    representation = keras.layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
    representation = keras.layers.Dropout(0.5)(keras.layers.Flatten()(representation))
    logits = keras.layers.Dense(num_classes)(_mlp(representation, hidden_units=[16, 8], dropout_rate=0.5))
    return keras.Model(inputs=inputs, outputs=logits)


@pytest.fixture(scope="module")
def vit_case():
    images = tf.constant(np.random.default_rng(0).random((2, 16, 16, 3)).astype("float32"))
    return record_keras_case("kerasio_vit", _vit, images, tf.constant([1, 2]))


def test_kerasio_vit_a_recorded_step_is_bit_for_bit(vit_case):
    assert_keras_step_bit_for_bit(vit_case, state=False)


def test_kerasio_vit_the_encoder_blocks_written_in_a_loop_are_one_box_times_n(vit_case):
    """Each encoder block is two modules of class-named layers, each closed by its residual ``Add``
    (``add``: norm, attention; ``add_1``: norm, MLP). The figure is the paper's (Dosovitskiy et al. 2021,
    Fig. 1): patches, their encoding, the encoder block "× 4" with ‖ḡ‖ of each, then the head; an instance
    opens to its two residual modules."""
    tr = vit_case.tr
    lay, boxes = _boxes(tr)
    assert "add–add_1 … add_6–add_7 × 4" in boxes, sorted(boxes)
    assert {"patches", "patch_encoder"} <= set(boxes) and not {"add", "add_1"} & set(boxes), sorted(boxes)
    rep = folding.hierarchy(tr).repeats[boxes["add–add_1 … add_6–add_7 × 4"].key]
    assert len(rep.grad_norms) == 4 and all(v is not None and v > 0 for v in rep.grad_norms)
    assert fits_budget(lay) and _readable(tr) >= render.MIN_LABEL_PX
    opened = _boxes(tr, expanded={rep.key})[1]
    assert {"add", "add_1", "add–add_1 … add_6–add_7 × 3"} <= set(opened), sorted(opened)


def test_kerasio_vit_the_labels_edge_goes_by_role(vit_case):
    assert_keras_labels_edge_by_role(vit_case)


# ---------------------------------------------------------------------------
# keras.io: Image classification with ConvMixer (reduced: 16×16 images, width 8, depth 4)
# ---------------------------------------------------------------------------
def _activation_block(x):
    x = keras.layers.Activation("gelu")(x)
    return keras.layers.BatchNormalization()(x)


def _conv_mixer_block(x, filters, kernel_size):
    x0 = x
    x = keras.layers.DepthwiseConv2D(kernel_size=kernel_size, padding="same")(x)
    x = keras.layers.Add()([_activation_block(x), x0])
    x = keras.layers.Conv2D(filters, kernel_size=1)(x)
    return _activation_block(x)


def _conv_mixer(image_size=16, filters=8, depth=4, kernel_size=3, patch_size=2, num_classes=3):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()
    inputs = keras.Input((image_size, image_size, 3))
    x = keras.layers.Rescaling(scale=1.0 / 255)(inputs)
    x = _activation_block(keras.layers.Conv2D(filters, kernel_size=patch_size, strides=patch_size)(x))
    for _ in range(depth):
        x = _conv_mixer_block(x, filters, kernel_size)
    x = keras.layers.GlobalAvgPool2D()(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))


@pytest.fixture(scope="module")
def convmixer_case():
    images = tf.constant(np.random.default_rng(0).random((2, 16, 16, 3)).astype("float32"))
    return record_keras_case("kerasio_convmixer", _conv_mixer, images, tf.constant([1, 2]))


def test_kerasio_convmixer_a_recorded_step_is_bit_for_bit_and_its_statistics_are_state(convmixer_case):
    assert_keras_step_bit_for_bit(convmixer_case)
    assert_keras_state_without_gradient(convmixer_case)


def test_kerasio_convmixer_its_layers_are_one_box_times_depth_after_the_stem(convmixer_case):
    """The paper's figure (Trockman and Kolter 2022, Fig. 2): the patch embedding (conv, activation, norm), the
    ConvMixer layer "× depth" — each the residual depthwise module and the pointwise convolution after it — then
    the pooling and the classifier."""
    tr = convmixer_case.tr
    lay, boxes = _boxes(tr)
    head = "add–batch_normalization_2 … add_3–batch_normalization_8 × 4"
    assert head in boxes, sorted(boxes)
    assert {"conv2d", "activation", "batch_normalization", "global_average_pooling2d", "dense"} <= set(boxes)
    assert not any(t.startswith(("conv2d_", "activation_", "add")) and "×" not in t for t in boxes), sorted(boxes)
    rep = folding.hierarchy(tr).repeats[boxes[head].key]
    opened = _boxes(tr, expanded={rep.groups[0]})[1]
    assert {"add", "conv2d_1", "activation_2", "batch_normalization_2"} <= set(opened), sorted(opened)
    assert fits_budget(lay) and _readable(tr) >= render.MIN_LABEL_PX
