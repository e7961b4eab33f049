"""A fifth batch of architectures this project had not drawn, built by ``transformers`` with random weights:

* OPT (``OPTForCausalLM``): ``OPTModel`` holds only its decoder, and the causal-LM head calls past it
  (``self.model.decoder(...)``), so the wrapper never runs itself;
* PoolFormer (``PoolFormerForImageClassification``): ``PoolFormerModel`` holds only its encoder (patch embeddings
  and stages of pooling token mixers), then a norm and a classifier on the mean;
* XLNet (``XLNetForSequenceClassification``): one ``nn.Dropout`` called three times by the model's own forward,
  relative position encodings computed in it, the token ids transposed to (length, batch);
* DeBERTa-v2 (``DebertaV2ForSequenceClassification``): disentangled attention; without an ``attention_mask``
  the model makes one itself with ``torch.ones``.

Found by probing models the tests did not cover (Roberta, Electra, Qwen2, Gemma, BLOOM, BEiT and Marian passed
every check of ``tests/unseen_models.py`` and are not repeated here). Each model's whole training step is
recorded as a learner writes it and checked as the earlier batches are. The assertions state the right
behaviour; where the package gets it wrong today the test is ``xfail(strict=True)`` with what is wrong.
"""
from __future__ import annotations

import pytest
from test_figure_real_models import _readable
from unseen_models import (
    assert_default_figure_is_named_parts,
    assert_torch_loss_edges_by_role,
    assert_torch_step_bit_for_bit,
    hf,
    op_named_nodes,
    plumbing,
    record_torch_case,
    torch,
    within_budget,
)

from autodiff_viz.views import folding, render

KINDS = ["opt", "poolformer", "xlnet", "debertav2"]


def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 40, (2, 8), generator=g)
    classes = torch.tensor([0, 2])
    if kind == "opt":
        model = hf.OPTForCausalLM(hf.OPTConfig(
            vocab_size=40, hidden_size=16, num_hidden_layers=2, ffn_dim=32, num_attention_heads=2,
            max_position_embeddings=32, word_embed_proj_dim=16, pad_token_id=1, bos_token_id=0, eos_token_id=2))
        kw, labels = {"input_ids": ids}, ids.clone()
    elif kind == "poolformer":
        model = hf.PoolFormerForImageClassification(hf.PoolFormerConfig(
            hidden_sizes=[8, 16], depths=[1, 2], patch_sizes=[7, 3], strides=[4, 2], padding=[2, 1],
            num_encoder_blocks=2, num_labels=3))
        kw, labels = {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, classes
    elif kind == "xlnet":
        model = hf.XLNetForSequenceClassification(hf.XLNetConfig(
            vocab_size=40, d_model=16, n_layer=2, n_head=2, d_inner=32, num_labels=3))
        kw, labels = {"input_ids": ids}, classes
    else:
        model = hf.DebertaV2ForSequenceClassification(hf.DebertaV2Config(
            vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=32, type_vocab_size=0, num_labels=3))
        kw, labels = {"input_ids": ids}, classes
    model.train()
    return model, kw, labels


@pytest.fixture(scope="module", params=KINDS)
def torch_case(request):
    plain, inputs, labels = _torch_model(request.param)
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
    "opt": ("model.decoder.embed_tokens", "model.decoder.layers.0", "model.decoder.final_layer_norm", "lm_head"),
    # PoolFormerModel only wraps its encoder, which runs a patch embedding before each stage's blocks: the
    # stages are the paper's figure (MetaFormer, Fig. 2), each embedding's convolution drawn open
    "poolformer": ("poolformer.encoder.block.0.0", "poolformer.encoder.block.1.0", "poolformer.encoder.block.1.1",
                   "norm", "classifier"),
    "xlnet": ("transformer.word_embedding", "transformer.layer.0", "sequence_summary", "logits_proj"),
    "debertav2": ("deberta.embeddings", "deberta.encoder", "pooler", "classifier"),
}


@pytest.mark.parametrize("torch_case", [
    "opt",
    "poolformer",
    "xlnet",
    "debertav2",
], indirect=True)
def test_the_default_figure_is_the_models_named_parts_each_once(torch_case):
    assert_default_figure_is_named_parts(torch_case, PARTS[torch_case.kind])


@pytest.mark.parametrize("torch_case", [
    "opt", "poolformer",
    "xlnet", "debertav2",
], indirect=True)
def test_no_box_is_a_library_op_or_loose_plumbing(torch_case):
    lay = folding.layout(torch_case.tr)
    assert not op_named_nodes(torch_case.tr, lay) and not plumbing(torch_case.tr, lay)


@pytest.mark.parametrize("torch_case", ["xlnet"], indirect=True)
def test_xlnet_a_layer_opened_stays_readable(torch_case):
    """The open XLNetLayer's relative attention reads nine weights of its own (``q``, ``k``, ``v``, ``o``, ``r``,
    ``r_w_bias`` …) and no formula states their gradients: drawn beside it, their fan made the figure 8.2 px at
    850 px; counted in its box (``folding.WEIGHTS_BESIDE``) it reads 10.4 px, and opening it draws each."""
    tr = torch_case.tr
    rep = next(iter(folding.hierarchy(tr).repeats.values()))
    lay = folding.layout(tr, expanded={rep.key})
    assert within_budget(lay), (len(lay.boxes), lay.notes)
    assert _readable(tr, expanded={rep.key}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["xlnet"], indirect=True)
def test_xlnet_one_dropout_called_three_times_is_three_boxes_each_saying_which_call(torch_case):
    """XLNetModel.forward calls its one ``nn.Dropout`` on the word embeddings, on the position encodings and on
    the output: three boxes in the data flow, each titled as the call it is."""
    text = torch_case.tr.to_dot("backward")
    for k in (1, 2, 3):
        assert f"transformer.dropout (Dropout) · call {k} of 3" in text
