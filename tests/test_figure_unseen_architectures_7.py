"""A seventh batch: the notebook's width on architectures whose figures read too small, built by ``transformers``
with random weights from small configurations:

* BlenderbotSmall (``BlenderbotSmallForConditionalGeneration``, Roller et al. 2020) and Pegasus
  (``PegasusForConditionalGeneration``, Zhang et al. 2020): encoder–decoder models whose decoder layer holds a
  self-attention, a cross-attention reading the encoder's output, and a feed-forward block, each closed by a
  residual add;
* CTRL (``CTRLLMHeadModel``, Keskar et al. 2019): a decoder-only stack of ``EncoderLayer`` s (Hugging Face's
  name) with sinusoidal position encodings the model computes itself;
* ProphetNet (``ProphetNetForConditionalGeneration``, Qi et al. 2020): its decoder predicts n future tokens with
  an n-stream self-attention, and the model prepares its labels for its own loss (``new_zeros``, ``fill_``,
  ``[…] = …``: no gradient);
* XLM (``XLMWithLMHeadModel``, Lample & Conneau 2019): its layers' parts kept in parallel lists.

Found by probing models no test covered (https://huggingface.co/docs/transformers/model_doc/blenderbot-small,
…/pegasus, …/ctrl, …/prophetnet, …/xlm): with a layer opened, BlenderbotSmall's decoder read 8.1 px at 850 px,
Pegasus' 8.4, CTRL's 8.3, XLM's 9.0, ProphetNet's 6.7, and ProphetNet's *default* figure 8.6. Graphviz let
the edges that carry no gradient (labels, masks, integer ids) pull the head and the layers sideways;
``render._loose`` lets them not pull when a drawing is too wide. What this batch asserts is what a learner sees:
the default figure, and each repeated layer opened, within the box budget and readable at the notebook's width.
Each model's whole training step is recorded as a learner writes it, as in the earlier batches.
"""
from __future__ import annotations

import pytest
from test_figure_real_models import _readable
from unseen_models import record_torch_case, within_budget

torch = pytest.importorskip("torch")
hf = pytest.importorskip("transformers")

from autodiff_viz.views import folding, render  # noqa: E402

KINDS = ["blenderbot_small", "pegasus", "ctrl", "prophetnet", "xlm"]
SEQ2SEQ = dict(vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
               decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32,
               pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)


def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``."""
    torch.manual_seed(0)
    ids = torch.randint(1, 40, (2, 8), generator=torch.Generator().manual_seed(0))
    if kind == "blenderbot_small":
        model = hf.BlenderbotSmallForConditionalGeneration(hf.BlenderbotSmallConfig(**SEQ2SEQ))
    elif kind == "pegasus":
        model = hf.PegasusForConditionalGeneration(hf.PegasusConfig(**SEQ2SEQ))
    elif kind == "prophetnet":
        model = hf.ProphetNetForConditionalGeneration(hf.ProphetNetConfig(
            vocab_size=40, hidden_size=16, encoder_ffn_dim=32, decoder_ffn_dim=32, num_encoder_layers=2,
            num_decoder_layers=2, num_encoder_attention_heads=2, num_decoder_attention_heads=2,
            max_position_embeddings=32, ngram=2, num_buckets=8, relative_max_distance=16, pad_token_id=0,
            decoder_start_token_id=1))
    elif kind == "ctrl":
        model = hf.CTRLLMHeadModel(hf.CTRLConfig(vocab_size=40, n_positions=32, n_embd=16, dff=32, n_layer=2,
                                                 n_head=2))
    else:
        model = hf.XLMWithLMHeadModel(hf.XLMConfig(vocab_size=40, emb_dim=16, n_layers=2, n_heads=2,
                                                   max_position_embeddings=32))
    inputs = {"input_ids": ids, "decoder_input_ids": ids} if kind in ("blenderbot_small", "pegasus",
                                                                       "prophetnet") else {"input_ids": ids}
    model.train()
    return model, inputs, ids.clone()


@pytest.fixture(scope="module", params=KINDS)
def torch_case(request):
    return record_torch_case(request.param, *_torch_model(request.param))


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_default_figure_reads_at_the_notebooks_width(torch_case):
    tr = torch_case.tr
    assert within_budget(folding.layout(tr))
    assert _readable(tr) >= render.MIN_LABEL_PX


def _opened(tr, title_part):
    rep = next(r for r in folding.hierarchy(tr).repeats.values() if title_part in r.title)
    lay = folding.layout(tr, expanded={rep.key})
    assert within_budget(lay), (len(lay.boxes), lay.notes)
    return _readable(tr, expanded={rep.key})


@pytest.mark.parametrize("torch_case, layer", [
    ("blenderbot_small", "EncoderLayer"), ("blenderbot_small", "DecoderLayer"),
    ("pegasus", "EncoderLayer"), ("pegasus", "DecoderLayer"),
    ("ctrl", "EncoderLayer"), ("prophetnet", "EncoderLayer"),
    pytest.param("prophetnet", "DecoderLayer", marks=pytest.mark.xfail(strict=True, reason=(
        "7.6 px at 850 px (998 pt wide): the boxes of the open ProphetNetDecoderLayer span 650 pt; the rest is "
        "long edges with their formulas, to the word embeddings the head shares and to the ngram embeddings, "
        "routed in lanes on both sides"))),
    ("xlm", "transformer."),
], indirect=["torch_case"])
def test_a_repeated_layer_opened_reads_at_the_notebooks_width(torch_case, layer):
    assert _opened(torch_case.tr, layer) >= render.MIN_LABEL_PX
