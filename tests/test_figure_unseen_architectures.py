"""Issue 42 on architectures the other real-model tests never saw.

tests/test_figure_real_models*.py and tests/test_real_models*.py check BERT, GPT-2, ViT, ResNet, MobileNetV2,
ResNet50, the keras.io transformer and an LSTM. Here the same promises are checked on architectures whose
structure differs from those:

* PyTorch (``transformers``, tiny random configs, nothing downloaded): ALBERT (one layer applied N times with
  shared weights), T5 (encoder-decoder, tied embedding, label shifting inside the model), ConvNeXt (hierarchical
  stages of different depths, layer scale) and Swin (hierarchical stages, windowed attention, an index buffer).
* Keras (``keras.applications``, ``weights=None``, 32×32 inputs): DenseNet121 (dense connectivity by
  concatenation), EfficientNetB0 (squeeze-excite, stochastic depth, a Normalization layer's state) and
  ConvNeXtTiny (residual additions written as ``x + y`` between layers, layer scale).

For each, what a user relies on: the loss and every gradient of a recorded whole step (update included) bit for
bit the framework's, and the trace showing the backward pass of that step; the default figure's boxes are the
model's named parts within the budget; blocks that repeat are one "Block × N" box with ‖ḡ‖ of each instance;
every module / layer reachable by ``expanded=``; state (buffers, moving statistics) drawn without gradient; the
labels' edge by role; names from the code (never a bare library op); readable at 850 px.

Cases that the package gets wrong today are marked ``xfail(strict=True)`` with the reason: the assertions state
the right behaviour, not the current one.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from test_figure_real_models import _boxes, _labels, _readable
from unseen_models import (
    assert_every_layer_opens,
    assert_every_module_opens,
    assert_keras_labels_edge_by_role,
    assert_keras_step_bit_for_bit,
    assert_torch_step_bit_for_bit,
    group_key,
    group_titles,
    hf,
    keras,
    op_named_nodes,
    record_keras_case,
    record_torch_case,
    tf,
    torch,
)

from autodiff_viz.views import folding, render


# ---------------------------------------------------------------------------
# PyTorch: transformers models, one recorded training step each
# ---------------------------------------------------------------------------
def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``: ``model(**inputs, labels=labels)``."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if kind == "albert":
        model = hf.AlbertForSequenceClassification(hf.AlbertConfig(
            vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=16, num_labels=3))
        kw, labels = {"input_ids": torch.randint(0, 50, (2, 6), generator=g)}, torch.tensor([0, 2])
    elif kind == "t5":
        model = hf.T5ForConditionalGeneration(hf.T5Config(
            vocab_size=40, d_model=16, d_kv=8, d_ff=32, num_layers=3, num_decoder_layers=3, num_heads=2,
            relative_attention_num_buckets=8, relative_attention_max_distance=16, decoder_start_token_id=0,
            pad_token_id=0))
        kw = {"input_ids": torch.randint(1, 40, (2, 7), generator=g)}
        labels = torch.randint(1, 40, (2, 5), generator=g)
    elif kind == "convnext":
        model = hf.ConvNextForImageClassification(hf.ConvNextConfig(
            num_channels=3, patch_size=2, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 3, 1], num_labels=4))
        kw, labels = {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, torch.tensor([1, 3])
    else:
        model = hf.SwinForImageClassification(hf.SwinConfig(
            image_size=32, patch_size=2, num_channels=3, embed_dim=8, depths=[2, 2], num_heads=[2, 2],
            window_size=4, mlp_ratio=2.0, num_labels=4))
        kw, labels = {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, torch.tensor([1, 3])
    model.train()
    return model, kw, labels


@pytest.fixture(scope="module", params=["albert", "t5", "convnext", "swin"])
def torch_case(request):
    plain, inputs, labels = _torch_model(request.param)
    return record_torch_case(request.param, plain, inputs, labels)


def test_torch_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_backward_pass(torch_case):
    assert_torch_step_bit_for_bit(torch_case, buffers=False)


# the parts a paper draws for each model: the backbone's children and the head, each one named box
TORCH_PARTS = {
    "albert": ("albert.embeddings", "albert.encoder", "albert.pooler", "classifier"),
    "t5": ("encoder", "decoder", "lm_head"),
    "convnext": ("convnext.embeddings", "convnext.encoder", "convnext.layernorm", "classifier"),
    "swin": ("swin.embeddings", "swin.encoder", "swin.layernorm", "swin.pooler", "classifier"),
}


@pytest.mark.parametrize("torch_case", ["albert", "t5", "convnext", "swin"], indirect=True)
def test_torch_the_default_figure_is_the_models_named_parts(torch_case):
    c = torch_case
    lay = folding.layout(c.tr)
    titles = group_titles(lay)
    for part in TORCH_PARTS[c.kind]:
        assert part in titles, (part, titles)
    outer = type(c.model).__name__.lower()
    assert outer not in titles and not any(b.kind == "fold" for b in lay.boxes.values())
    assert len(lay.boxes) <= folding.NODE_BUDGET and not lay.notes


@pytest.mark.parametrize("torch_case", ["albert", "t5", "convnext", "swin"], indirect=True)
def test_torch_the_default_figure_fits_the_notebook(torch_case):
    c = torch_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


def test_torch_every_module_that_ran_is_a_group_and_opens_by_expanded(torch_case):
    assert_every_module_opens(torch_case)


@pytest.mark.parametrize("torch_case", ["albert", "t5", "convnext", "swin"], indirect=True)
def test_torch_no_box_is_named_by_a_library_op(torch_case):
    c = torch_case
    assert not op_named_nodes(c.tr, folding.layout(c.tr), loss_calls=())


def test_torch_the_loss_edges_go_by_role_in_the_codes_names(torch_case):
    c = torch_case
    labels = _labels(c.tr.to_dot("backward"))
    assert "no gradient: labels" in labels
    loss_edge = next(lab for lab in labels if "softmax(" in lab)
    assert re.match(r"ḡ_(\S+) = \(softmax\(\1\) − onehot\(labels(\.view)?\)\)", loss_edge), loss_edge


@pytest.mark.parametrize("torch_case", ["albert", "swin"], indirect=True)        # the two with buffers
def test_torch_buffers_are_state_without_gradient(torch_case):
    c = torch_case
    buffers = dict(c.model.named_buffers())
    state = [n for n in c.tr.nodes if n.kind == "state"]
    assert state and {n.name for n in state} <= set(buffers)
    for n in state:
        assert n.grad is None and all(not e.differentiable for e in c.tr.edges_from(n.id))
    used = {"albert": {"albert.embeddings.token_type_ids"},
            "swin": {k for k in buffers if k.endswith("relative_position_index")}}[c.kind]
    assert used <= {n.name for n in state}
    assert "state (running statistics, seeds, counters): no gradient, no formula" in c.tr.to_dot("backward")


@pytest.mark.parametrize("torch_case", ["albert"], indirect=True)
def test_albert_the_shared_layer_is_one_box_times_three_with_the_gradient_of_each_application(torch_case):
    c = torch_case
    tr = c.tr
    lay, boxes = _boxes(tr, expanded={group_key(tr, "albert.encoder")})
    shared = [b for b in lay.boxes.values() if b.kind in ("repeat", "loop") and b.count == 3]
    assert len(shared) == 1, sorted(boxes)
    text = tr.to_dot("backward", expanded={group_key(tr, "albert.encoder")})
    label = next(lab for lab in _labels(text) if "× 3" in lab)
    assert "‖ḡ‖" in label and len(re.findall(r"\d\.\d+", label.split("‖ḡ‖", 1)[1].split("\n")[0])) == 3
    weights = [b for b in lay.boxes.values() if b.kind == "node" and tr.node(b.id).kind == "variable"
               and ".albert_layers.0." in tr.node(b.id).name]
    assert not weights                                     # the shared weights are counted in the × 3 box
    assert _readable(tr, expanded={group_key(tr, "albert.encoder")}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["t5"], indirect=True)
def test_t5_encoder_and_decoder_open_to_their_blocks_times_n(torch_case):
    c = torch_case
    tr = c.tr
    for stack in ("encoder", "decoder"):
        _, boxes = _boxes(tr, expanded={group_key(tr, stack)})
        assert f"{stack}.block.0" in boxes and "T5Block × 2" in boxes, sorted(boxes)   # block 0 owns the
        label = next(lab for lab in _labels(tr.to_dot("backward", expanded={group_key(tr, stack)}))   # position bias
                     if lab.startswith("T5Block × 2"))
        assert "‖ḡ‖ each:" in label and f"{stack}.block.1 … {stack}.block.2" in label
        assert _readable(tr, expanded={group_key(tr, stack)}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["t5"], indirect=True)
def test_t5_the_tied_embedding_is_one_weight_with_the_sum_of_its_uses(torch_case):
    c = torch_case
    tr = c.exact
    node = next(n for n in tr.nodes if n.kind == "variable" and n.name == "shared.weight")
    assert len({e.dst for e in tr.edges_from(node.id)}) >= 2        # encoder, decoder (and the tied lm_head)
    assert np.array_equal(node.grad.data, c.plain.shared.weight.grad.numpy())
    names = {n.name for n in tr.nodes if n.kind == "variable"}
    assert "lm_head.weight" not in names or c.model.lm_head.weight is not c.model.shared.weight


@pytest.mark.parametrize("torch_case", ["convnext"], indirect=True)
def test_convnext_a_stage_opens_to_its_layers_times_three(torch_case):
    c = torch_case
    tr = c.tr
    key = group_key(tr, "convnext.encoder.stages.2")
    _, boxes = _boxes(tr, expanded={key})
    assert "ConvNextLayer × 3" in boxes and "convnext.encoder.stages.2.downsampling_layer" in boxes, sorted(boxes)
    label = next(lab for lab in _labels(tr.to_dot("backward", expanded={key})) if lab.startswith("ConvNextLayer × 3"))
    assert "‖ḡ‖ each:" in label and "(+ skip)" not in label.split("\n")[0]


@pytest.mark.parametrize("torch_case", ["convnext"], indirect=True)
def test_convnext_stages_of_different_depths_are_not_one_repeat(torch_case):
    c = torch_case
    tr = c.tr
    _, boxes = _boxes(tr, expanded={group_key(tr, "convnext.encoder")})
    for k in range(4):
        assert f"convnext.encoder.stages.{k}" in boxes, sorted(boxes)


@pytest.mark.parametrize("torch_case", ["swin"], indirect=True)
def test_swin_a_stage_opens_to_its_blocks_and_patch_merging(torch_case):
    c = torch_case
    tr = c.tr
    _, boxes = _boxes(tr, expanded={group_key(tr, "swin.encoder.layers.0")})
    for part in ("swin.encoder.layers.0.blocks.0", "swin.encoder.layers.0.blocks.1",
                 "swin.encoder.layers.0.downsample"):
        assert part in boxes, sorted(boxes)
    assert _readable(tr, expanded={group_key(tr, "swin.encoder.layers.0")}) >= render.MIN_LABEL_PX


# ---------------------------------------------------------------------------
# Keras: keras.applications, one recorded training step each
# ---------------------------------------------------------------------------
def _keras_model(kind):
    keras.utils.set_random_seed(0)
    apps = keras.applications
    build = {"densenet121": apps.DenseNet121, "efficientnetb0": apps.EfficientNetB0,
             "convnexttiny": apps.ConvNeXtTiny}[kind]
    return build(weights=None, input_shape=(32, 32, 3), classes=4)


@pytest.fixture(scope="module", params=["densenet121", "efficientnetb0", "convnexttiny"])
def keras_case(request):
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((2, 32, 32, 3)).astype("float32"))
    return record_keras_case(request.param, lambda: _keras_model(request.param), images, tf.constant([1, 3]))


@pytest.mark.parametrize("keras_case", [
    "densenet121", "efficientnetb0", "convnexttiny"], indirect=True)
def test_keras_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_backward_pass(keras_case):
    assert_keras_step_bit_for_bit(keras_case, state=False)


@pytest.mark.parametrize("keras_case", ["densenet121"], indirect=True)
def test_densenet_default_figure_is_its_dense_blocks_times_n(keras_case):
    c = keras_case
    lay = folding.layout(c.tr)
    repeats = {(b.title, b.count) for b in lay.boxes.values() if b.kind == "repeat"}
    for stage, n in ((2, 6), (3, 12), (4, 24), (5, 16)):         # DenseNet121's dense blocks
        assert (f"conv{stage}_block1 … conv{stage}_block{n}", n) in repeats, repeats
    groups = group_titles(lay)
    assert "predictions" in groups and "conv1_conv" in groups or "conv1" in groups, groups
    assert len(lay.boxes) <= folding.NODE_BUDGET and not lay.notes
    assert not any(b.kind == "fold" for b in lay.boxes.values())


@pytest.mark.parametrize("keras_case", ["efficientnetb0"], indirect=True)
def test_efficientnet_default_figure_is_its_mbconv_blocks_with_repeats(keras_case):
    c = keras_case
    lay = folding.layout(c.tr)
    groups = group_titles(lay)
    for name in ("block1a", "block2a", "block2b", "block3a", "block7a", "predictions"):
        assert name in groups, (name, groups)
    repeats = {(b.title, b.count) for b in lay.boxes.values() if b.kind == "repeat"}
    assert ("block6b … block6d", 3) in repeats, repeats
    assert len(lay.boxes) <= folding.NODE_BUDGET and not lay.notes
    block = next(lab for lab in _labels(c.tr.to_dot("backward")) if lab.startswith("block2b\n"))
    assert "(+ skip)" in block and "se" in block                 # the residual, and its squeeze-excite part


@pytest.mark.parametrize("keras_case", ["convnexttiny"], indirect=True)
def test_convnext_tiny_default_figure_is_stem_stages_times_n_and_head(keras_case):
    c = keras_case
    tr = c.tr
    lay = folding.layout(tr)
    assert not any(b.kind == "loop" for b in lay.boxes.values())       # 9 blocks, 9 sets of weights: no loop
    assert not folding.hierarchy(tr).loops
    repeats = {(b.title, b.count) for b in lay.boxes.values() if b.kind == "repeat"}
    assert ("convnext_tiny_stage_2_block_0 … convnext_tiny_stage_2_block_8", 9) in repeats, repeats
    groups = group_titles(lay)
    assert "convnext_tiny_stem" in groups and "convnext_tiny" not in groups, groups
    assert not op_named_nodes(tr, lay, loss_calls=())                  # no 'AddV2' drawn alone
    assert len(lay.boxes) <= folding.NODE_BUDGET and _readable(tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", ["densenet121", "efficientnetb0", "convnexttiny"], indirect=True)
def test_keras_every_layer_that_ran_is_a_group_and_opens_by_expanded(keras_case):
    assert_every_layer_opens(keras_case)


@pytest.mark.parametrize("keras_case", [
    "densenet121", "efficientnetb0", "convnexttiny"], indirect=True)
def test_keras_non_trainable_variables_are_state_without_gradient(keras_case):
    c = keras_case
    state = {n.name: n for n in c.tr.nodes if n.kind == "state"}
    for n in state.values():
        assert n.grad is None and all(not e.differentiable for e in c.tr.edges_from(n.id))
    # every non-trainable variable the forward pass uses (a Normalization's count is read by adapt() only)
    missing = [v.path for v in c.model.non_trainable_variables
               if v.path not in state and not v.path.endswith("/count")]
    assert not missing, missing[:5]
    if c.model.non_trainable_variables:
        assert "state (running statistics, seeds, counters): no gradient, no formula" in c.tr.to_dot("backward")


@pytest.mark.parametrize("keras_case", ["densenet121", "efficientnetb0", "convnexttiny"], indirect=True)
def test_keras_the_default_figure_fits_the_notebook(keras_case):
    c = keras_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", ["efficientnetb0"], indirect=True)
def test_keras_the_labels_edge_goes_by_role_and_by_the_codes_name(keras_case):
    assert_keras_labels_edge_by_role(keras_case)
