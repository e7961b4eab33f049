"""Real PyTorch architectures through ``adv.torch.record()``: transformers' BERT, GPT-2, ViT and ResNet.

Each is built by its own library from a small configuration with random weights (nothing downloaded, no
torchvision: see docs/pytorch.md). What a learner relies on when recording a real model:

* recording changes nothing PyTorch computes: the loss and every ``.grad`` are bit for bit those of the
  same step run without the recording, and so are the gradients the trace shows;
* a whole training step can be recorded and traced afterwards — ``loss.backward(); opt.step()`` inside the
  ``with`` (issue 42: "Recording the whole step is what users do") — and the trace shows the state at the
  backward pass: the weights before the update, the gradients the update used; the model keeps its
  updated weights, and training goes on exactly as without the recording.

These tests need the ``models`` extra (``pip install 'autodiff_viz[models]'``); without ``transformers``
they are skipped.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
try:
    import transformers as hf
except Exception as exc:   # noqa: BLE001 - a broken torchvision beside it raises RuntimeError, not ImportError
    pytest.skip(f"transformers is not usable ({type(exc).__name__}: {exc}); pip install 'autodiff_viz[models]'",
                allow_module_level=True)

import autodiff_viz as adv  # noqa: E402
import autodiff_viz.torch  # noqa: E402,F401

VALUES = 10 ** 7     # value_limit: keep every entry, so values compare bit for bit


def _model(kind, width=32, batch=4, tokens=12):
    """A transformers model with random weights and one batch for it (inputs with labels). BERT and GPT-2 are
    ``width`` wide (vocabulary 4·width, width/16 heads), on ``batch`` × ``tokens`` token ids."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    vocab = 4 * width
    if kind == "bert":
        model = hf.BertForSequenceClassification(hf.BertConfig(
            vocab_size=vocab, hidden_size=width, num_hidden_layers=2, num_attention_heads=width // 16,
            intermediate_size=2 * width, max_position_embeddings=width, num_labels=3))
        inputs = {"input_ids": torch.randint(0, vocab, (batch, tokens), generator=g),
                  "labels": torch.randint(0, 3, (batch,), generator=g)}
    elif kind == "gpt2":
        model = hf.GPT2LMHeadModel(hf.GPT2Config(vocab_size=vocab, n_positions=width, n_embd=width, n_layer=2,
                                                 n_head=width // 16, bos_token_id=0, eos_token_id=0))
        ids = torch.randint(0, vocab, (batch, tokens), generator=g)
        inputs = {"input_ids": ids, "labels": ids}
    elif kind == "vit":
        model = hf.ViTForImageClassification(hf.ViTConfig(
            image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, num_labels=5))
        inputs = {"pixel_values": torch.randn(4, 3, 16, 16, generator=g),
                  "labels": torch.randint(0, 5, (4,), generator=g)}
    else:
        model = hf.ResNetForImageClassification(hf.ResNetConfig(
            num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], layer_type="basic",
            num_labels=5))
        inputs = {"pixel_values": torch.randn(4, 3, 32, 32, generator=g),
                  "labels": torch.randint(0, 5, (4,), generator=g)}
    model.train()
    return model, inputs


def _step(model, opt, inputs):
    """One training step as a learner writes it; dropout draws the same masks in every run."""
    opt.zero_grad()
    torch.manual_seed(1)
    loss = model(**inputs).loss
    loss.backward()
    opt.step()
    return loss


KINDS = ["bert", "gpt2", "vit", "resnet"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", KINDS)
def test_a_recorded_training_step_is_bit_for_bit_the_plain_one_and_its_trace_shows_the_backward_pass(kind):
    plain, inputs = _model(kind)
    recorded = copy.deepcopy(plain)
    opt_p = torch.optim.AdamW(plain.parameters(), lr=1e-2)
    opt_r = torch.optim.AdamW(recorded.parameters(), lr=1e-2)
    before = {n: p.detach().clone() for n, p in recorded.named_parameters()}

    loss_p = _step(plain, opt_p, inputs)
    with adv.torch.record() as rec:
        loss = _step(recorded, opt_r, inputs)

    assert torch.equal(loss, loss_p)
    grads = {n: p.grad for n, p in plain.named_parameters() if p.grad is not None}
    assert len(grads) > 10
    for n, p in recorded.named_parameters():
        assert (p.grad is None) == (n not in grads), n
        if p.grad is not None:
            assert torch.equal(p.grad, grads[n]), f"{kind}: .grad of {n} differs from the plain step's"
            assert torch.equal(p.detach(), dict(plain.named_parameters())[n].detach()), f"{n} after the update"
    assert [op.kind for op in rec.ops].count("update") == 1     # the optimizer's step: one record, not its ops

    versions = {n: p._version for n, p in recorded.named_parameters()}
    after = {n: p.detach().clone() for n, p in recorded.named_parameters()}
    trace = rec.trace(loss, recorded, value_limit=VALUES)
    shown = {n.name: n for n in trace.nodes if n.kind == "variable"}
    assert set(grads) <= set(shown), f"parameters missing from the trace: {sorted(set(grads) - set(shown))[:5]}"
    for name, g in grads.items():
        node = shown[name]
        assert np.array_equal(node.value.data, before[name].numpy()), f"{name}: the trace shows updated weights"
        assert np.array_equal(node.grad.data, g.numpy()), f"{name}: the trace's gradient is not autograd's"
    assert np.array_equal(trace.node(trace.target).value.data, loss_p.detach().numpy())

    for n, p in recorded.named_parameters():      # the model is left as the step left it
        assert torch.equal(p.detach(), after[n]) and p._version == versions[n], n
    loss_p2, loss_r2 = _step(plain, opt_p, inputs), _step(recorded, opt_r, inputs)
    assert torch.equal(loss_r2, loss_p2)          # and training goes on exactly as without the recording
    for (n, p), q in zip(recorded.named_parameters(), plain.parameters()):
        assert torch.equal(p.detach(), q.detach()), n


def _traced_step(model, inputs, **kw):
    """A training step (AdamW) recorded with ``record(**kw)``, and its trace with every value in full."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with adv.torch.record(**kw) as rec:
        loss = _step(model, opt, inputs)
    return rec, rec.trace(loss, model, value_limit=VALUES)


def _same_values_and_gradients(trace, kept):
    """Every node of ``trace`` shows, bit for bit, the value and ḡ of the same node in ``kept`` (a recording that
    kept every value)."""
    assert [n.title for n in trace.nodes] == [n.title for n in kept.nodes]
    for n, n2 in zip(trace.nodes, kept.nodes):
        assert n.value.data is not None and np.array_equal(n.value.data, n2.value.data), n.title
        assert (n.grad is None) == (n2.grad is None), n.title
        if n.grad is not None:
            assert np.array_equal(n.grad.data, n2.grad.data), f"ḡ of {n.title}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_values_the_library_let_go_of_are_recomputed_to_the_same_bits(kind, monkeypatch):
    """A recorded training step lets go of the values the model freed and autograd did not save (a LayerNorm's
    output, the terms of GPT-2's GELU, the logits before the loss: ``torch/letgo.py``) — issue 42's "peak memory of a
    recorded step ≤ 1.3× plain". The trace computes them again: every value and every gradient it shows is, bit for
    bit, that of a recording that keeps everything, on a batch whose values are large enough to be let go of
    (16 × 64 tokens, 64 wide: 65,536 entries)."""
    from autodiff_viz.torch import letgo
    model, inputs = _model(kind, width=64, batch=16, tokens=64)
    keeping = copy.deepcopy(model)

    rec, trace = _traced_step(model, inputs)
    released = [t for op in rec.ops for t in op.outputs if id(t) in rec.freed]
    assert len(released) >= 8, f"{kind}: only {len(released)} values let go of"
    assert all(t.untyped_storage().nbytes() <= t.element_size() for t in released)
    made = {op.scope.rsplit("/", 1)[-1] + ":" + op.name for op in rec.ops for t in op.outputs if id(t) in rec.freed}
    assert any(m.endswith(":dropout") for m in made), made                  # random: run again on its draws
    if kind == "gpt2":      # the logits: returned in the model's output, read by the library's loss through a view
        assert "lm_head:linear" in made, made
    monkeypatch.setattr(letgo, "RELEASE_FROM", 10 ** 12)
    rec2, trace2 = _traced_step(keeping, inputs)
    assert not rec2.freed
    _same_values_and_gradients(trace, trace2)
    assert not any("shape only" in note or "exact_values" in note for note in trace.notes)


@pytest.mark.timeout(300)
def test_a_value_written_in_place_after_its_op_is_recomputed_by_both(monkeypatch):
    """transformers' ResNet adds the shortcut in place: ``hidden_state += residual`` writes into the BatchNorm's
    output, which nobody saves (the ReLU after it keeps its own output). Running the BatchNorm again alone would
    show the values before the addition — on the BatchNorm's node and on the addition's, as a recording of
    2026-12-06 did. The recording runs the BatchNorm and then the addition on what it made: every value and
    gradient of the trace is, bit for bit, that of a recording that keeps everything. (The tiny model's values are
    2,048–8,192 entries: let go of from 512 here.)"""
    from autodiff_viz.torch import letgo
    model, inputs = _model("resnet")
    keeping = copy.deepcopy(model)
    monkeypatch.setattr(letgo, "RELEASE_FROM", 512)
    rec, trace = _traced_step(model, inputs)
    chained = [r for r, _ in (v for v in rec.freed.values() if isinstance(v, tuple)) if r.then]
    assert len(chained) >= 2 and all(rec.ops[r.index].name == "batch_norm" for r in chained)
    assert all(rec.ops[t.index].name == "add_" for r in chained for t in r.then)
    monkeypatch.setattr(letgo, "RELEASE_FROM", 10 ** 12)
    rec2, trace2 = _traced_step(keeping, inputs)
    assert not rec2.freed
    _same_values_and_gradients(trace, trace2)


def _more(kind):
    """A small transformers model of another family, with random weights, and one batch with labels."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 90, (2, 10), generator=g)
    images, labels = torch.randn(2, 3, 32, 32, generator=g), torch.tensor([0, 2])
    if kind == "swin":
        return hf.SwinForImageClassification(hf.SwinConfig(
            image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4,
            num_labels=3)), {"pixel_values": images, "labels": labels}
    if kind == "t5":
        return hf.T5ForConditionalGeneration(hf.T5Config(
            vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2, decoder_start_token_id=0)), \
            {"input_ids": ids, "labels": ids}
    if kind == "albert":
        return hf.AlbertForSequenceClassification(hf.AlbertConfig(
            vocab_size=100, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=16)), {"input_ids": ids, "labels": torch.tensor([0, 1])}
    return hf.MobileViTForImageClassification(hf.MobileViTConfig(
        image_size=32, patch_size=2, hidden_sizes=[16, 16, 16], neck_hidden_sizes=[8, 8, 16, 16, 16, 16, 32],
        num_labels=3)), {"pixel_values": images, "labels": labels}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["swin", "t5", "albert", "mobilevit"])
def test_on_other_architectures_every_value_let_go_of_comes_back_to_the_same_bits(kind, monkeypatch):
    """Four families this file does not otherwise record — windowed attention with a mask (Swin), an
    encoder–decoder with relative position biases (T5), shared layers (ALBERT), convolutions mixed with attention
    (MobileViT) — recorded with every value from 64 entries let go of: dropout runs again on its draws, writes in
    place after their op, and kernels that choose their path by grad mode (Swin's masked attention rounds
    differently without it) all come back to the values and gradients of a recording that keeps everything."""
    from autodiff_viz.torch import letgo
    model, inputs = _more(kind)
    keeping = copy.deepcopy(model)
    monkeypatch.setattr(letgo, "RELEASE_FROM", 64)
    rec, trace = _traced_step(model, inputs)
    assert len(rec.freed) >= 15 and all(isinstance(v, tuple) for v in rec.freed.values())
    monkeypatch.setattr(letgo, "RELEASE_FROM", 10 ** 12)
    rec2, trace2 = _traced_step(keeping, inputs)
    assert not rec2.freed
    _same_values_and_gradients(trace, trace2)


@pytest.mark.timeout(300)
def test_with_exact_values_false_smaller_values_go_too_and_dropout_runs_again_on_its_draws(monkeypatch):
    """``record(exact_values=False)`` puts memory before time: BERT's 16,384-entry values are let go of as well.
    Dropout's outputs, random, run again from the generator's state before them, so every value the trace shows is
    recomputed to the same bits — none is left as statistics — and every gradient is the same."""
    from autodiff_viz.torch import letgo
    model, inputs = _model("bert", width=64, batch=8, tokens=32)
    keeping = copy.deepcopy(model)

    rec, trace = _traced_step(model, inputs, exact_values=False)
    kinds = [type(v).__name__ for v in rec.freed.values()]
    assert kinds.count("tuple") >= 20 and kinds.count("Summary") == 0, kinds
    drawn = [op for op in rec.ops if op.name == "dropout" and id(op.outputs[0]) in rec.freed]
    assert len(drawn) >= 4 and all(rec.freed[id(op.outputs[0])][0].rng is not None for op in drawn)
    monkeypatch.setattr(letgo, "RELEASE_FROM_ALL", 10 ** 12)
    rec2, trace2 = _traced_step(keeping, inputs, exact_values=False)
    assert not rec2.freed
    _same_values_and_gradients(trace, trace2)
    assert not any("exact_values" in note or "shape only" in note for note in trace.notes)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_with_exact_values_false_what_autograd_saved_inside_an_op_goes_after_backward_and_comes_back_exact(
        kind, monkeypatch):
    """``record(exact_values=False)`` also lets go of what autograd saved *inside* an op — the attention
    probabilities and dropout mask of ``scaled_dot_product_attention``, a dropout's mask — once the learner's
    ``backward()`` has read it, as a plain backward pass frees it (``torch/saved.py``). The trace runs those ops again
    on the same draws: every value and gradient it shows is, bit for bit, that of the same recording with the
    saved tensors kept; the recording, once dropped, frees its graph (a saved tensor held from autograd's side must
    not hold its own node: a cycle through C++ Python's collector cannot free)."""
    import gc
    import weakref

    from test_torch_saved import _counting

    from autodiff_viz.torch import saved
    model, inputs = _model(kind, width=64, batch=8, tokens=32)
    keeping = copy.deepcopy(model)
    dropped = _counting(monkeypatch)
    rec, trace = _traced_step(model, inputs, exact_values=False)
    assert len(dropped) >= 6 and {"scaled_dot_product_attention", "dropout"} <= set(dropped), dropped
    monkeypatch.setattr(saved, "free", lambda: False)
    rec2, trace2 = _traced_step(keeping, inputs, exact_values=False)
    _same_values_and_gradients(trace, trace2)

    loss = weakref.ref(next(op.inputs[0] for op in rec.ops if op.kind == "backward"))
    graph = weakref.ref(next(op.outputs[0] for op in rec.ops if op.name == "scaled_dot_product_attention"))
    del rec, trace
    gc.collect()
    assert graph() is None and loss() is None


@pytest.mark.timeout(300)
def test_two_recorded_steps_each_trace_shows_the_weights_its_own_backward_used():
    """A loop of steps in one recording: the first loss is traced with the first weights, the second with the
    weights after one update — each as autograd saved them, not as they are at the end."""
    model, inputs = _model("bert")
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    w = model.classifier.weight
    seen = []
    with adv.torch.record() as rec:
        losses = []
        for _ in range(2):
            seen.append(w.detach().clone())
            losses.append(_step(model, opt, inputs))
    assert not torch.equal(seen[0], seen[1])
    for loss, weights in zip(losses, seen):
        node = next(n for n in rec.trace(loss, model, value_limit=VALUES).nodes if n.name == "classifier.weight")
        assert np.array_equal(node.value.data, weights.numpy())
