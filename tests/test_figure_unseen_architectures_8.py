"""An eighth batch of architectures no test had recorded, built by ``transformers`` with random weights from small
configurations, each with a whole training step recorded as a learner writes it:

* FNet (``FNetForSequenceClassification``, Lee-Thorp et al. 2021): token mixing by a 2-D Fourier transform
  (``torch.fft.fftn``, then the real part) instead of attention — a complex value inside a real model;
* RWKV (``RwkvForCausalLM``, Peng et al. 2023): a recurrent "time mixing" written as tensor ops, with a state
  the blocks pass on;
* Falcon (``FalconForCausalLM``) and BLOOM (``BloomForCausalLM``, ALiBi position biases): decoder-only stacks
  with a parallel attention / MLP;
* SqueezeBERT (``SqueezeBertForSequenceClassification``, Iandola et al. 2020): BERT with grouped 1-D
  convolutions in place of its dense layers;
* BEiT (``BeitForImageClassification``, Bao et al. 2021): a ViT with a learned relative position bias table;
* MobileNetV2 as ``transformers`` builds it (``MobileNetV2ForImageClassification``), not Keras.

Sources: https://huggingface.co/docs/transformers/model_doc/fnet, …/rwkv, …/falcon, …/bloom, …/squeezebert,
…/beit, …/mobilenet_v2. Probing them found one fault: recording FNet's step printed PyTorch's "Casting complex
values to real discards the imaginary part" when its trace was drawn: ``capture.assemble``, which turns what an
autograd node gives back into its inputs' gradients (for the trace and the capture of a backward pass), cast
the Fourier transform's complex ḡ to its real input's dtype with ``.to``; autograd's engine keeps the real part
(``torch.real``), silently. The rest held on first try and stays asserted:
the step bit for bit, every module reachable by opening, the default figure and each repeated layer opened
within the box budget and readable at the notebook's width.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from test_figure_real_models import _readable
from unseen_models import assert_every_module_opens, assert_torch_step_bit_for_bit, record_torch_case, within_budget

torch = pytest.importorskip("torch")
hf = pytest.importorskip("transformers")

from autodiff_viz.views import folding, render  # noqa: E402

KINDS = ["fnet", "rwkv", "falcon", "bloom", "squeezebert", "beit", "mobilenet_v2"]
TEXT = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=32)


def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``."""
    torch.manual_seed(0)
    ids = torch.randint(3, 40, (2, 8), generator=torch.Generator().manual_seed(0))
    classes = torch.tensor([0, 2])
    images = {"pixel_values": torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))}
    if kind == "fnet":
        model = hf.FNetForSequenceClassification(hf.FNetConfig(
            vocab_size=40, hidden_size=16, num_hidden_layers=2, intermediate_size=32, max_position_embeddings=32,
            num_labels=3))
        return model, {"input_ids": ids}, classes
    if kind == "rwkv":
        model = hf.RwkvForCausalLM(hf.RwkvConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                                 attention_hidden_size=16, intermediate_size=32, context_length=32))
        return model, {"input_ids": ids}, ids.clone()
    if kind == "falcon":
        model = hf.FalconForCausalLM(hf.FalconConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                                     num_attention_heads=2))
        return model, {"input_ids": ids}, ids.clone()
    if kind == "bloom":
        model = hf.BloomForCausalLM(hf.BloomConfig(vocab_size=40, hidden_size=16, n_layer=2, n_head=2))
        return model, {"input_ids": ids}, ids.clone()
    if kind == "squeezebert":
        model = hf.SqueezeBertForSequenceClassification(hf.SqueezeBertConfig(
            **TEXT, embedding_size=16, q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2,
            intermediate_groups=2, output_groups=2, num_labels=3))
        return model, {"input_ids": ids}, classes
    if kind == "beit":
        model = hf.BeitForImageClassification(hf.BeitConfig(
            hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, image_size=32,
            patch_size=8, num_labels=3, use_relative_position_bias=True))
        return model, images, classes
    model = hf.MobileNetV2ForImageClassification(hf.MobileNetV2Config(image_size=32, depth_multiplier=0.25,
                                                                      num_labels=3))
    return model, images, classes


@pytest.fixture(scope="module", params=KINDS)
def torch_case(request):
    model, inputs, labels = _torch_model(request.param)
    model.train()
    return record_torch_case(request.param, model, inputs, labels)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_recorded_step_is_the_plain_one_bit_for_bit(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_every_module_that_ran_is_a_box_that_opens(torch_case):
    assert_every_module_opens(torch_case)


@pytest.mark.parametrize("torch_case", KINDS, indirect=True)
def test_the_default_figure_and_each_repeated_layer_opened_read_at_the_notebooks_width(torch_case):
    tr = torch_case.tr
    assert within_budget(folding.layout(tr))
    assert _readable(tr) >= render.MIN_LABEL_PX
    repeats = list(folding.hierarchy(tr).repeats.values())
    assert repeats, "a model of repeated layers shows them as one box × N"
    for rep in repeats[:3]:
        assert within_budget(folding.layout(tr, expanded={rep.key})), rep.title
        assert _readable(tr, expanded={rep.key}) >= render.MIN_LABEL_PX, rep.title


def test_recording_fnets_step_warns_of_nothing_pytorch_does_not():
    """FNet mixes tokens with ``torch.fft.fftn(h).real``: autograd passes a complex ḡ back to the transform's
    real input and keeps its real part without a word. The recording's capture of the backward pass did the same
    with ``.to(float32)``, which made PyTorch print "Casting complex values to real discards the imaginary
    part" when the trace called the transform's node backward for what it passes back. The step and its trace now
    warn of nothing, and what the transform passes back to its real input is real."""
    import autodiff_viz as adv

    model, inputs, labels = _torch_model("fnet")
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with adv.torch.record() as rec:
            opt.zero_grad()
            loss = model(**inputs, labels=labels).loss
            loss.backward()
            opt.step()
        tr = rec.trace(loss, model)
    assert not [str(w.message) for w in caught], [str(w.message) for w in caught]
    fft = next(op for op in rec.ops if op.name.startswith("fft"))
    src = fft.inputs[0]
    assert not src.is_complex() and fft.outputs[0].is_complex()
    into = [e for e in tr.edges_into(tr.node_id_of(fft.outputs[0])) if e.src == tr.node_id_of(src)]
    assert into and into[0].contribution.data.dtype == np.float32      # what the transform passes back: real
    assert np.isfinite(into[0].contribution.data).all()


def test_weights_a_model_ran_off_the_losss_path_make_one_note_naming_their_modules():
    """CANINE (``CanineForSequenceClassification``, Clark et al. 2021,
    https://huggingface.co/docs/transformers/model_doc/canine) runs its upsampling projection and final character
    encoder in every forward pass, but a classification head reads only the pooled downsampled sequence: twenty
    weights ran, feed nothing the loss reads, and keep ``.grad`` None. The trace said so in twenty notes, one per
    weight, each drawn as a line of the figure. It now says it once, naming the modules that hold them and how
    many each holds."""
    import autodiff_viz as adv

    torch.manual_seed(0)
    model = hf.CanineForSequenceClassification(hf.CanineConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, num_hash_functions=2,
        num_hash_buckets=16, downsampling_rate=2, upsampling_kernel_size=2, local_transformer_stride=4,
        max_position_embeddings=64, num_labels=3))
    model.train()
    codepoints = torch.randint(1, 200, (2, 16), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with adv.torch.record() as rec:
        opt.zero_grad()
        loss = model(input_ids=codepoints, labels=torch.tensor([0, 2])).loss
        loss.backward()
        opt.step()
    tr = rec.trace(loss, model)
    idle = [n for n, p in model.named_parameters() if p.grad is None]
    assert len(idle) == 20
    about = [n for n in tr.notes if "does not depend" in n]
    assert len(about) == 1, about
    note = about[0]
    assert f"on {len(idle)} of the sources" in note and "rec.explain(target, source)" in note
    named = re.findall(r"([\w.]+) \((\d+)\)", note)
    assert sum(int(k) for _, k in named) == len(idle)
    assert all(any(n.startswith(module + ".") for module, _ in named) for n in idle)
    assert {m for m, _ in named} >= {"canine.final_char_encoder.layer.0"}
    assert note in tr.to_dot("backward").replace("\\n", "\n")
