"""Issue 42 on a fourth batch of architectures the other real-model tests never saw.

tests/test_figure_real_models*.py, tests/test_real_models*.py and tests/test_figure_unseen_architectures*.py
check BERT, GPT-2, ViT, ResNet, ALBERT, T5, ConvNeXt, Swin, DistilBERT, BART, GPT-Neo, MobileViT, a learner's
CNN, LLaMA, Wav2Vec2, CLIP, Segformer, MobileNetV2/V3, ResNet50(V2), DenseNet121, EfficientNetB0, ConvNeXtTiny,
VGG16, Xception, InceptionV3, keras.io's U-Net and text transformer, an LSTM and a siamese model. Here the same
promises are checked on models whose structure differs from all of those, each built by its own library with
random weights and a tiny configuration (nothing downloaded, no torchvision):

* PyTorch, ``transformers`` 5.x:

  - Mixtral (``MixtralForCausalLM``, 8 experts, top-1 routing): a sparse mixture-of-experts decoder; each layer's
    MLP is a router (``mlp.gate``, ``MixtralTopKRouter``) and the experts fused into two 3-D weights
    (``mlp.experts.gate_up_proj`` ``[8, 64, 16]``, ``down_proj``) of which only the routed experts' slices get a
    gradient: an expert no token chose has a zero gradient slice;
  - Whisper (``WhisperForConditionalGeneration``): a convolutional front-end over log-mel features (``conv1``,
    ``conv2``), a frozen sinusoidal position table (``encoder.embed_positions.weight``, ``requires_grad=False``,
    read as a weight, not called), an encoder-decoder with cross-attention, the decoder input made from the labels;
  - Funnel Transformer (``FunnelForSequenceClassification``, ``block_sizes=[2, 2]``): two blocks of two layers;
    the encoder's own ``forward`` pools the sequence for the second block's first layer (its queries) and pools
    the attention inputs after it (``FunnelAttentionStructure``), so only the first block's layers are stacked
    one on the other; relative-position weights read directly (``r_w_bias``, ``r_kernel`` …), a classification
    head on the first token;
  - Mamba (``MambaForCausalLM``, no ``mamba_ssm``: the library's reference path): a stack of ``MambaBlock`` whose
    mixer is a causal depth-wise conv and a selective state-space scan written as a Python loop over time steps,
    with weights used directly in ``forward`` (``A_log``, ``D``).
* Keras 3, ``keras.applications`` with ``weights=None``: NASNetMobile (32×32: cells found by architecture search,
  normal and reduction cells of many parallel separable-convolution branches, every cell ending in a
  concatenation ``normal_concat_K`` / ``reduction_concat_…``, most layers named by branch and cell) and
  EfficientNetV2B0 (32×32: fused-MBConv blocks without a depth-wise conv, then MBConv blocks with
  squeeze-excite; a ``Rescaling`` and a ``Normalization`` layer in front).
* Keras 3, a model a learner copies from keras.io: the variational autoencoder of "Variational AutoEncoder"
  (https://keras.io/examples/generative/vae/, source keras-team/keras-io ``examples/generative/vae.py``): an
  encoder model (two strided convolutions, ``z_mean`` and ``z_log_var`` heads and a ``Sampling`` layer drawing
  ε from a ``SeedGenerator``) and a decoder model (a dense layer, a reshape, transposed convolutions) inside a
  ``VAE(keras.Model)``; its ``train_step``'s body is the recorded step (binary cross-entropy of the input against
  its reconstruction plus the KL term). Written here after that example for Keras 3, without its metric trackers.

Each model's whole training step is recorded as a learner writes it (forward, loss, ``backward`` /
``tape.gradient``, ``opt.step()`` / ``apply_gradients``) beside a plain twin, and checked for what a user relies
on: the loss and every gradient bit for bit the framework's; the trace showing the weights before the update;
the default figure's boxes are the model's named top-level parts within the budget, without a "fold" box;
"Class × N" where blocks repeat, with ‖ḡ‖ of each instance; every module / layer that ran reachable by
``expanded=``; state (buffers, BatchNorm statistics, a sampler's seed) drawn as state without gradient; the
labels' edge says "no gradient: labels"; no box titled by a bare library op and no loose op without gradient at
the top of the figure; every value the step computes drawn with the op that made it (no "outside" node);
readable (≥ ``render.MIN_LABEL_PX`` at 850 px) for the default figure and with one repeated stage opened. For
the VAE also: its two sub-models as the figure's parts, the sampler's seed as state and its noise ε without
gradient, the input as the reconstruction's target without gradient. NASNetMobile's 770 layers are not each
opened by ``expanded=`` (too slow for this file); EfficientNetV2B0's are.

The assertions state the right behaviour. Where the package gets it wrong today the test is marked
``xfail(strict=True)`` with what is wrong, concretely.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_figure_real_models import _boxes, _labels, _readable
from unseen_models import (
    VALUES,
    KerasCase,
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
    fits_budget,
    group_key,
    group_titles,
    hf,
    keras,
    named_parts,
    op_named_nodes,
    opens_by_expanded,
    plumbing,
    record_keras_case,
    record_torch_case,
    tf,
    torch,
    within_budget,
)

import autodiff_viz as adv
from autodiff_viz.views import folding, render

# ---------------------------------------------------------------------------
# PyTorch: four transformers models, one recorded training step each
# ---------------------------------------------------------------------------
TORCH_KINDS = ["mixtral", "whisper", "funnel", "mamba"]


def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if kind == "mixtral":
        model = hf.MixtralForCausalLM(hf.MixtralConfig(
            vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=1, max_position_embeddings=32,
            bos_token_id=0, eos_token_id=0, pad_token_id=0))
        ids = torch.randint(0, 40, (2, 4), generator=g)
        kw, labels = {"input_ids": ids}, ids.clone()
    elif kind == "whisper":
        model = hf.WhisperForConditionalGeneration(hf.WhisperConfig(
            vocab_size=40, num_mel_bins=8, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, d_model=16, max_source_positions=10,
            max_target_positions=16, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=0))
        kw = {"input_features": torch.randn(2, 8, 20, generator=g)}
        labels = torch.randint(3, 40, (2, 5), generator=g)
    elif kind == "funnel":
        model = hf.FunnelForSequenceClassification(hf.FunnelConfig(
            vocab_size=40, block_sizes=[2, 2], num_decoder_layers=1, d_model=16, n_head=2, d_head=8, d_inner=32,
            max_position_embeddings=32, num_labels=3))
        kw, labels = {"input_ids": torch.randint(0, 40, (2, 8), generator=g)}, torch.tensor([0, 2])
    else:
        model = hf.MambaForCausalLM(hf.MambaConfig(
            vocab_size=40, hidden_size=16, state_size=4, num_hidden_layers=3, expand=2, conv_kernel=4,
            use_mambapy=False, pad_token_id=0, bos_token_id=0, eos_token_id=0))
        ids = torch.randint(0, 40, (2, 8), generator=g)
        kw, labels = {"input_ids": ids}, ids.clone()
    model.train()
    return model, kw, labels


@pytest.fixture(scope="module", params=TORCH_KINDS)
def torch_case(request):
    plain, inputs, labels = _torch_model(request.param)
    return record_torch_case(request.param, plain, inputs, labels)


def test_torch_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


# the parts a paper draws for each model: the backbone's named_children() and the heads, each one named box or
# one instance of a "× N" box
TORCH_PARTS = {
    "mixtral": ("model.embed_tokens", "model.rotary_emb", "model.layers.0", "model.layers.1", "model.norm",
                "lm_head"),
    "whisper": ("model.encoder", "model.decoder", "proj_out"),
    "funnel": ("funnel.embeddings", "funnel.encoder", "classifier"),
    "mamba": ("backbone.embeddings", "backbone.layers.0", "backbone.layers.2", "backbone.norm_f", "lm_head"),
}


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_the_default_figure_is_the_models_named_parts_within_the_budget(torch_case):
    assert_default_figure_is_named_parts(torch_case, TORCH_PARTS[torch_case.kind])


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_the_default_figure_draws_the_architecture_not_the_mask_plumbing(torch_case):
    c = torch_case
    assert not plumbing(c.tr, folding.layout(c.tr))


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_the_default_figure_fits_the_notebook(torch_case):
    c = torch_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_no_box_is_named_by_a_library_op(torch_case):
    c = torch_case
    assert not op_named_nodes(c.tr, folding.layout(c.tr))


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_every_module_that_ran_is_a_group_and_opens_by_expanded(torch_case):
    assert_every_module_opens(torch_case)


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_the_labels_edge_says_no_gradient_and_the_predictions_edge_the_loss(torch_case):
    assert_torch_loss_edges_by_role(torch_case)


@pytest.mark.parametrize("torch_case", ["mixtral", "whisper", "funnel", "mamba"], indirect=True)
def test_torch_every_value_the_step_computes_is_drawn_with_the_op_that_made_it(torch_case):
    c = torch_case
    outside = [(n.title, n.shape) for n in c.tr.nodes if n.kind == "outside"]
    assert not outside, outside[:5]


@pytest.mark.parametrize("torch_case", ["mixtral"], indirect=True)      # the only one of the four with buffers
def test_torch_buffers_are_state_without_gradient(torch_case):
    assert_buffers_are_state(torch_case, lambda name: name == "model.rotary_emb.inv_freq")


# one repeated stage of each model: (the box to open, "Class × N" it shows, the instances' names)
TORCH_STAGES = {
    "mixtral": (None, "MixtralDecoderLayer × 2", "model.layers.0 … model.layers.1"),
    "whisper": ("model.encoder", "WhisperEncoderLayer × 2", "model.encoder.layers.0 … model.encoder.layers.1"),
    "funnel": ("funnel.encoder", "FunnelLayer × 2", "funnel.encoder.blocks.0.0 … funnel.encoder.blocks.0.1"),
    "mamba": (None, "MambaBlock × 3", "backbone.layers.0 … backbone.layers.2"),
}


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_a_repeated_stage_is_one_box_times_n_with_the_gradient_of_each(torch_case):
    assert_repeated_stage_is_one_box(torch_case.tr, *TORCH_STAGES[torch_case.kind])


@pytest.mark.parametrize("torch_case", [
    "mixtral",
    "whisper",
    "funnel",
    "mamba",
], indirect=True)
def test_torch_a_repeated_stage_opens_to_one_instance_and_stays_readable(torch_case):
    where, head, _ = TORCH_STAGES[torch_case.kind]
    assert_repeated_stage_opens_to_one_instance(torch_case.tr, where, head)


@pytest.mark.parametrize("torch_case", ["mixtral"], indirect=True)
def test_mixtral_the_moe_block_opens_to_its_router_and_experts_and_an_unchosen_expert_gets_zero(torch_case):
    c = torch_case
    tr = c.tr
    _, boxes = _boxes(tr, expanded={group_key(tr, "model.layers.0")})
    for part in ("self_attn", "mlp", "input_layernorm", "post_attention_layernorm"):
        assert f"model.layers.0.{part}" in boxes, (part, sorted(boxes))
    key = group_key(tr, "model.layers.0.mlp")
    lay, boxes = _boxes(tr, expanded={key})
    assert "model.layers.0.mlp.gate" in boxes and "model.layers.0.mlp.experts" in boxes, sorted(boxes)
    assert within_budget(lay) and _readable(tr, expanded={key}) >= render.MIN_LABEL_PX
    # the fused experts: one weight of 8 slices; the trace's ḡ is autograd's, zero for an expert no token chose
    shown = {n.name: n for n in c.exact.nodes if n.kind == "variable"}
    name = "model.layers.0.mlp.experts.gate_up_proj"
    grad = dict(c.plain.named_parameters())[name].grad
    unchosen = [e for e in range(grad.shape[0]) if not grad[e].any()]
    assert unchosen and len(unchosen) < grad.shape[0]                 # top-1 of 8 experts for 8 tokens
    assert np.array_equal(shown[name].grad.data, grad.numpy())
    assert not shown[name].grad.data[unchosen].any()


@pytest.mark.parametrize("torch_case", ["whisper"], indirect=True)
def test_whisper_the_encoder_opens_to_its_conv_front_end_and_layers(torch_case):
    c = torch_case
    tr = c.tr
    key = group_key(tr, "model.encoder")
    lay, boxes = _boxes(tr, expanded={key})
    for part in ("model.encoder.conv1", "model.encoder.conv2", "model.encoder.layer_norm"):
        assert part in boxes, (part, sorted(boxes))
    assert "WhisperEncoderLayer × 2" in boxes, sorted(boxes)
    assert within_budget(lay) and _readable(tr, expanded={key}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["whisper"], indirect=True)
def test_whisper_the_frozen_position_table_is_drawn_without_gradient(torch_case):
    c = torch_case
    tr = c.tr
    frozen = [n for n in tr.nodes if n.name == "model.encoder.embed_positions.weight"]
    assert len(frozen) == 1, sorted({n.name for n in tr.nodes if "embed_positions" in (n.name or "")})
    n = frozen[0]                                                      # requires_grad=False: no ḡ, no formula
    assert n.grad is None and all(not e.differentiable for e in tr.edges_from(n.id))
    text = tr.to_dot("backward", expanded={group_key(tr, "model.encoder")})
    label = next(lab for lab in _labels(text) if lab.startswith("model.encoder.embed_positions.weight\n"))
    assert "ḡ" not in label, label


@pytest.mark.parametrize("torch_case", ["funnel"], indirect=True)
def test_funnel_the_encoder_opens_to_its_layers_in_order_the_first_block_times_two(torch_case):
    c = torch_case
    tr = c.tr
    key = group_key(tr, "funnel.encoder")
    lay, boxes = _boxes(tr, expanded={key})
    parts = named_parts(tr, lay)
    layers = [f"funnel.encoder.blocks.{b}.{k}" for b in (0, 1) for k in (0, 1)]
    assert all(n in parts for n in layers), parts           # each layer a box (or an instance of a "× N" box)
    assert [parts.index(n) for n in layers] == sorted(parts.index(n) for n in layers)
    # block 0's layers are stacked: "FunnelLayer × 2"; block 1's are not (the encoder pools between them)
    assert "FunnelLayer × 2" in boxes and "FunnelLayer × 4" not in boxes, sorted(boxes)
    assert within_budget(lay) and _readable(tr, expanded={key}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["mamba"], indirect=True)
def test_mamba_a_mixer_opens_to_its_projections_and_scan_within_the_budget(torch_case):
    c = torch_case
    tr = c.tr
    key = group_key(tr, "backbone.layers.0.mixer")
    lay, boxes = _boxes(tr, expanded={key})
    for part in ("in_proj", "x_proj", "out_proj"):            # conv1d and dt_proj: their weights, read directly
        assert f"backbone.layers.0.mixer.{part}" in boxes, (part, sorted(boxes))
    assert within_budget(lay), (len(lay.boxes), lay.notes)
    assert not op_named_nodes(tr, lay)
    scan = [t for t in boxes if t.endswith(" ops)")]             # the selective scan, one box that opens
    assert len(scan) == 1 and int(scan[0].split("(")[-1].split()[0]) > 60, sorted(boxes)
    opened = _boxes(tr, expanded={key, boxes[scan[0]].key})[1]
    assert not any(t.endswith(" ops)") for t in opened) and len(opened) > len(boxes)


@pytest.mark.parametrize("torch_case", ["mamba"], indirect=True)
def test_mamba_a_mixer_opened_stays_readable(torch_case):
    """With the mixer opened, Graphviz let the main path run diagonally — its top (lm_head, the labels' shift)
    right of its bottom, where the mixer's seven weights and its casts take a row: 7.7 px at 850 px. Kept in one
    straight column (``render._straight``, tried when a drawing is too wide), it reads 9.3 px."""
    tr = torch_case.tr
    assert _readable(tr, expanded={group_key(tr, "backbone.layers.0.mixer")}) >= render.MIN_LABEL_PX


# ---------------------------------------------------------------------------
# Keras: NASNetMobile and EfficientNetV2B0, one recorded training step each
# ---------------------------------------------------------------------------
KERAS_KINDS = ["nasnetmobile", "efficientnetv2b0"]


def _keras_model(kind):
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()          # Keras' layer counters restart: activation, activation_1 … as in a notebook
    build = {"nasnetmobile": keras.applications.NASNetMobile,
             "efficientnetv2b0": keras.applications.EfficientNetV2B0}[kind]
    return build(weights=None, input_shape=(32, 32, 3), classes=4)


@pytest.fixture(scope="module", params=KERAS_KINDS)
def keras_case(request):
    kind = request.param
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((2, 32, 32, 3)).astype("float32"))
    return record_keras_case(kind, lambda: _keras_model(kind), images, tf.constant([1, 3]))


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(keras_case):
    assert_keras_step_bit_for_bit(keras_case)


# the parts a paper draws, by the names Keras gives them: NASNet's cells (named by the concatenation that ends
# each, as InceptionV3's modules), EfficientNetV2's stem, blocks and head
KERAS_PARTS = {
    "nasnetmobile": ["stem_conv1", "reduction_concat_stem_1", "reduction_concat_stem_2"] +
                    [f"normal_concat_{k}" for k in (0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12)] +
                    ["reduction_concat_reduce_4", "reduction_concat_reduce_8", "predictions"],
    "efficientnetv2b0": ["stem", "block1a", "block2a", "block2b", "block3a", "block3b", "block4a", "block5a",
                         "block6a", "top", "predictions"],
}


@pytest.mark.parametrize("keras_case", [
    "nasnetmobile",
    "efficientnetv2b0",
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


@pytest.mark.parametrize("keras_case", ["nasnetmobile"], indirect=True)
def test_nasnet_the_cells_are_boxes_by_their_concatenation_and_like_normal_cells_fold_times_n(keras_case):
    """NASNet's layer names give no blocks (branch first, cell last); its cells are found from the data flow:
    each ends in a named concatenation after which only the cell's output and the one before it cross."""
    c = keras_case
    lay, boxes = _boxes(c.tr)
    assert "stem_conv1" in boxes and "predictions" in boxes
    assert "normal_concat_1 … normal_concat_3 × 3" in boxes, sorted(boxes)
    rep = folding.hierarchy(c.tr).repeats[boxes["normal_concat_1 … normal_concat_3 × 3"].key]
    assert len(rep.grad_norms) == 3 and all(v is not None and v > 0 for v in rep.grad_norms)
    cell = folding.hierarchy(c.tr).groups[boxes["normal_concat_0"].key]
    lay2, opened = _boxes(c.tr, expanded={cell.key})
    assert cell.key not in {b.key for b in lay2.boxes.values()}                # the cell is open: its layers
    assert "separable_conv_1_normal_left1_0" in opened and "normal_concat_0" in opened, sorted(opened)


@pytest.mark.parametrize("keras_case", [
    "nasnetmobile",
    "efficientnetv2b0",
], indirect=True)
def test_keras_the_default_figure_fits_the_notebook(keras_case):
    c = keras_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_no_box_is_named_by_a_library_op(keras_case):
    c = keras_case
    assert not op_named_nodes(c.tr, folding.layout(c.tr))


@pytest.mark.parametrize("keras_case", ["efficientnetv2b0"], indirect=True)   # NASNet's 770 layers: too slow
def test_keras_every_layer_that_ran_is_a_group_and_opens_by_expanded(keras_case):
    assert_every_layer_opens(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_moving_statistics_are_state_without_gradient(keras_case):
    assert_keras_state_without_gradient(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_labels_edge_goes_by_role(keras_case):
    assert_keras_labels_edge_by_role(keras_case)


@pytest.mark.parametrize("keras_case", ["efficientnetv2b0"], indirect=True)
def test_efficientnetv2_blocks_of_one_structure_are_one_box_times_n_and_open_to_one(keras_case):
    c = keras_case
    lay, boxes = _boxes(c.tr)
    assert "block6b … block6h × 7" in boxes, sorted(boxes)
    rep = folding.hierarchy(c.tr).repeats[boxes["block6b … block6h × 7"].key]
    assert all(v is not None and v > 0 for v in rep.grad_norms) and len(rep.grad_norms) == 7
    lay2, boxes2 = _boxes(c.tr, expanded={rep.key})
    assert within_budget(lay2) and f"{rep.title} × 6" in boxes2, sorted(boxes2)
    assert _readable(c.tr, expanded={rep.key}) >= render.MIN_LABEL_PX


# ---------------------------------------------------------------------------
# Keras: the variational autoencoder of keras.io, its train_step's body recorded
# ---------------------------------------------------------------------------
LATENT_DIM = 2


class Sampling(keras.layers.Layer):
    """z = z_mean + exp(z_log_var / 2) · ε, ε ~ N(0, 1) drawn from the layer's own seed generator (keras.io)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = keras.ops.shape(z_mean)[0]
        dim = keras.ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + keras.ops.exp(0.5 * z_log_var) * epsilon


class VAE(keras.Model):
    """The encoder and the decoder of keras.io's example; its ``train_step`` is :func:`_vae_step`."""

    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder

    def call(self, x):
        z_mean, z_log_var, z = self.encoder(x)
        return self.decoder(z)


def _vae():
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()
    layers = keras.layers
    encoder_inputs = keras.Input(shape=(28, 28, 1))
    x = layers.Conv2D(32, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    x = layers.Conv2D(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Flatten()(x)
    x = layers.Dense(16, activation="relu")(x)
    z_mean = layers.Dense(LATENT_DIM, name="z_mean")(x)
    z_log_var = layers.Dense(LATENT_DIM, name="z_log_var")(x)
    z = Sampling()([z_mean, z_log_var])
    encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")
    latent_inputs = keras.Input(shape=(LATENT_DIM,))
    x = layers.Dense(7 * 7 * 64, activation="relu")(latent_inputs)
    x = layers.Reshape((7, 7, 64))(x)
    x = layers.Conv2DTranspose(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu", strides=2, padding="same")(x)
    decoder_outputs = layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(x)
    decoder = keras.Model(latent_inputs, decoder_outputs, name="decoder")
    return VAE(encoder, decoder)


def _vae_step(vae, optimizer, data, labels=None):
    """The body of keras.io's ``VAE.train_step`` (its metric trackers left out)."""
    with tf.GradientTape() as tape:
        z_mean, z_log_var, z = vae.encoder(data)
        reconstruction = vae.decoder(z)
        reconstruction_loss = tf.reduce_mean(
            tf.reduce_sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2)))
        kl_loss = -0.5 * (1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var))
        kl_loss = tf.reduce_mean(tf.reduce_sum(kl_loss, axis=1))
        total_loss = reconstruction_loss + kl_loss
    grads = tape.gradient(total_loss, vae.trainable_weights)
    optimizer.apply_gradients(zip(grads, vae.trainable_weights))
    return total_loss, grads


@pytest.fixture(scope="module")
def vae():
    rng = np.random.default_rng(0)
    data = tf.constant(rng.random((4, 28, 28, 1)).astype("float32"))
    c = KerasCase("vae", _vae, _vae_step, data, None, lambda: keras.optimizers.Adam(1e-3))
    model, optimizer = c.model, c.opt
    with adv.tf.record() as rec:          # in the fixture's frame, as in a notebook cell: data is named data
        total_loss, grads = _vae_step(model, optimizer, data)
    return c.traced(rec, total_loss, grads, rec.trace(total_loss, model, value_limit=VALUES),
                    rec.trace(total_loss, model))


def test_vae_a_recorded_step_is_bit_for_bit_and_shows_the_weights_before_the_update(vae):
    assert_keras_step_bit_for_bit(vae)


def test_vae_the_default_figure_is_the_encoder_and_the_decoder_within_the_budget(vae):
    tr = vae.tr
    lay = folding.layout(tr)
    titles = group_titles(lay)
    assert "encoder" in titles and "decoder" in titles, titles
    assert "vae" not in titles, titles
    assert fits_budget(lay), (len(lay.boxes), lay.notes)
    assert not op_named_nodes(tr, lay)
    assert _readable(tr) >= render.MIN_LABEL_PX


def test_vae_the_encoder_opens_to_its_layers_and_the_sampling_layer(vae):
    tr = vae.tr
    key = group_key(tr, "encoder")
    lay = folding.layout(tr, expanded={key})
    parts = named_parts(tr, lay)
    for part in ("conv2d", "conv2d_1", "dense", "z_mean", "z_log_var", "sampling"):
        assert part in parts, (part, parts)
    assert within_budget(lay) and _readable(tr, expanded={key}) >= render.MIN_LABEL_PX


def test_vae_every_layer_of_both_models_is_a_group_and_opens_by_expanded(vae):
    h = folding.hierarchy(vae.tr)
    titles = {g.title for g in h.groups.values()}
    ran = [layer.name for m in (vae.model.encoder, vae.model.decoder) for layer in m.layers
           if not isinstance(layer, keras.layers.InputLayer)]
    assert not [n for n in ran if n not in titles], [n for n in ran if n not in titles]
    closed = [g.title for k, g in h.groups.items() if k not in h.transparent and not opens_by_expanded(vae.tr, k)]
    assert not closed, closed[:5]


def test_vae_the_samplers_seed_is_state_and_the_noise_carries_no_gradient(vae):
    tr = vae.tr
    seeds = [v.path for v in vae.model.non_trainable_variables]
    assert seeds                                                        # the Sampling layer's seed generator
    state = {n.name: n for n in tr.nodes if n.kind == "state"}
    assert set(seeds) <= set(state), (seeds, sorted(state))
    for n in state.values():
        assert n.grad is None and all(not e.differentiable for e in tr.edges_from(n.id))
    variables = {n.name for n in tr.nodes if n.kind == "variable"}
    assert not variables & set(seeds)
    noise = [n for n in tr.nodes if n.kind == "op" and n.op.startswith("StatelessRandomNormal")]
    assert len(noise) == 1 and noise[0].grad is None                  # ε = keras.random.normal(…): no ḡ
    titles = [g.title for g in folding.hierarchy(tr).groups.values()]
    assert any(t.startswith("epsilon") and "no gradient" in t for t in titles), titles    # by the code's name


def test_vae_the_input_is_the_reconstructions_target_without_gradient(vae):
    """keras.losses.binary_crossentropy(data, reconstruction) called as a function in the step is one box with
    the loss's formula per entry on the prediction's edge (Keras reads the decoder's logits) and the labels'
    role on the edge back to data."""
    labels = _labels(vae.tr.to_dot("backward"))
    assert "no gradient: labels" in labels
    assert any(lab.startswith("ḡ_decoder = ḡ_binary_crossentropy ⊙ (σ(decoder) − data)") for lab in labels), labels


def test_vae_the_loss_written_in_the_step_is_drawn_by_its_lines_names(vae):
    """The step's own loss lines (reconstruction_loss, kl_loss over two lines) are boxes titled by the names the
    lines assign, and the values the KL term reads from the folded encoder are called z_mean and z_log_var."""
    lay = folding.layout(vae.tr)
    titles = group_titles(lay)
    assert {"binary_crossentropy", "reconstruction_loss", "kl_loss"} <= set(titles), titles
    labels = _labels(vae.tr.to_dot("backward"))
    assert any(lab.startswith("ḡ_z_log_var, z_mean = ḡ_kl_loss") for lab in labels), labels
