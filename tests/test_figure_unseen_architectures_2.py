"""Issue 42 on a second batch of architectures the other real-model tests never saw.

tests/test_figure_real_models*.py, tests/test_real_models*.py and tests/test_figure_unseen_architectures.py check
BERT, GPT-2, ViT, ResNet, MobileNetV2, ResNet50, ALBERT, T5, ConvNeXt, Swin, DenseNet121, EfficientNetB0 and
ConvNeXtTiny. Here the same promises are checked on models whose structure differs from all of those:

* PyTorch, ``transformers`` with tiny random configs (nothing downloaded, torchvision not needed):

  - DistilBERT (``DistilBertForSequenceClassification``: no pooler, a ``pre_classifier`` and a ReLU built inside
    ``forward``; ``DistilBertConfig(dim=16, n_layers=3, n_heads=2, hidden_dim=32)``);
  - BART (``BartForConditionalGeneration`` with labels: encoder-decoder, the decoder input made from the labels
    inside the model, a tied embedding, a ``final_logits_bias`` buffer; 2 + 2 layers of width 16);
  - GPT-Neo (``GPTNeoForCausalLM``: blocks alternating global and local (windowed) attention, a causal-mask buffer
    per block, the loss shifted inside the model; 4 layers of width 16, ``window_size=4``);
  - MobileViT (``MobileViTForImageClassification``: MobileNet inverted residuals then MobileViT blocks that unfold
    the feature map into patches for a transformer, BatchNorm statistics; 32×32 images). MobileViT rather than
    RegNet: both build without torchvision, MobileViT mixes convolutions and attention.
* PyTorch, a model a learner writes: ``nn.Sequential`` stages (``stem``, ``blocks``, ``pool``), a custom residual
  block class ``Residual`` used 3 times in ``blocks``, and an ``nn.ModuleDict`` of two heads (``digit``,
  ``parity``) whose two cross-entropy losses are added.
* Keras, ``keras.applications`` with ``weights=None``: VGG16 (32×32: a plain stack, no state), ResNet50V2 (32×32:
  pre-activation blocks, a shortcut ``MaxPooling2D`` Keras leaves unnamed) and MobileNetV3Small (32×32:
  squeeze-excite, hard-swish, activations Keras names ``re_lu_3`` / ``activation_5``, a ``Rescaling`` layer).
  Xception (71×71) was left out to keep the file's run time down.
* Keras, a functional siamese model: one ``Dense`` layer ``embed`` called on two inputs, the difference squared,
  a sigmoid head ``same``.

Each model's whole training step is recorded as a learner writes it (forward, loss, ``backward`` /
``tape.gradient``, ``opt.step()`` / ``apply_gradients``) beside a plain twin, and checked for what a user relies
on: the loss and every gradient bit for bit the framework's; the trace showing the weights before the update; the
default figure's boxes are the model's named top-level parts (``named_children()`` of the backbone, Keras layer-name
prefixes) within the budget, without a "fold" box; "Class × N" where blocks repeat, with ‖ḡ‖ of each instance;
every module / layer that ran reachable by ``expanded=``; state (buffers, BatchNorm statistics) drawn as state
without gradient; the labels' edge says "no gradient: labels"; no box titled by a bare library op, and no loose
op without gradient (mask building, casts) at the top of the figure; readable (≥ ``render.MIN_LABEL_PX`` at
850 px) for the default figure and with one repeated stage opened. For the siamese model also: the shared layer's
weight is one node with the sum of both calls' gradients, the two calls are no loop, and an optimizer made inside
the recording is not drawn in the loss's figure. The step's names are the test's local variables, as in a
notebook cell (``rec.trace`` names tensors made before the recording by the caller's variables).

The assertions state the right behaviour. Where the package gets it wrong today the test is marked
``xfail(strict=True)`` with what is wrong, concretely.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from test_figure_real_models import _boxes, _labels, _readable
from unseen_models import (
    VALUES,
    KerasCase,
    TorchCase,
    assert_buffers_are_state,
    assert_default_figure_is_named_parts,
    assert_every_layer_opens,
    assert_every_module_opens,
    assert_keras_labels_edge_by_role,
    assert_keras_state_without_gradient,
    assert_keras_step_bit_for_bit,
    assert_repeated_stage_is_one_box,
    assert_torch_step_bit_for_bit,
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

import autodiff_viz as adv
from autodiff_viz.views import folding, render

F = torch.nn.functional


# ---------------------------------------------------------------------------
# PyTorch: four transformers models and a learner's own CNN, one recorded training step each
# ---------------------------------------------------------------------------
class Residual(torch.nn.Module):
    """A learner's residual block: conv-bn-relu-conv-bn, plus the input."""

    def __init__(self, ch):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(ch)
        self.conv2 = torch.nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(ch)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + x)


class DigitNet(torch.nn.Module):
    """A learner's CNN: stages in ``nn.Sequential``, ``Residual`` × 3, a ``ModuleDict`` of heads."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1, bias=False),
                                        torch.nn.BatchNorm2d(8), torch.nn.ReLU())
        self.blocks = torch.nn.Sequential(Residual(8), Residual(8), Residual(8))
        self.pool = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.heads = torch.nn.ModuleDict({"digit": torch.nn.Linear(8, 10), "parity": torch.nn.Linear(8, 2)})

    def forward(self, x):
        features = self.pool(self.blocks(self.stem(x)))
        return {name: head(features) for name, head in self.heads.items()}


TORCH_KINDS = ["distilbert", "bart", "gptneo", "mobilevit", "learner"]


def _torch_model(kind):
    """A model with random weights and its batch ``(model, inputs, labels)``."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if kind == "distilbert":
        model = hf.DistilBertForSequenceClassification(hf.DistilBertConfig(
            vocab_size=50, dim=16, n_layers=3, n_heads=2, hidden_dim=32, max_position_embeddings=16, num_labels=3))
        kw, labels = {"input_ids": torch.randint(0, 50, (2, 6), generator=g)}, torch.tensor([0, 2])
    elif kind == "bart":
        model = hf.BartForConditionalGeneration(hf.BartConfig(
            vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=16,
            pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2))
        kw = {"input_ids": torch.randint(3, 40, (2, 7), generator=g)}
        labels = torch.randint(3, 40, (2, 5), generator=g)
    elif kind == "gptneo":
        model = hf.GPTNeoForCausalLM(hf.GPTNeoConfig(
            vocab_size=40, hidden_size=16, num_layers=4, num_heads=2, attention_types=[[["global", "local"], 2]],
            window_size=4, max_position_embeddings=16, intermediate_size=32, bos_token_id=0, eos_token_id=0))
        ids = torch.randint(0, 40, (2, 8), generator=g)
        kw, labels = {"input_ids": ids}, ids.clone()
    elif kind == "mobilevit":
        model = hf.MobileViTForImageClassification(hf.MobileViTConfig(
            image_size=32, patch_size=2, num_channels=3, hidden_sizes=[16, 24, 32],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32], num_attention_heads=2, num_labels=4))
        kw, labels = {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, torch.tensor([1, 3])
    else:
        model = DigitNet()
        kw = {"images": torch.randn(4, 1, 8, 8, generator=g)}
        labels = (torch.tensor([3, 8, 1, 4]), torch.tensor([1, 0, 1, 0]))
    model.train()
    return model, kw, labels


def _torch_step(kind, model, opt, inputs, labels):
    """One step as a learner writes it; dropout draws the same masks in every run."""
    opt.zero_grad()
    torch.manual_seed(1)
    if kind == "learner":
        y_digit, y_parity = labels
        out = model(inputs["images"])
        loss = F.cross_entropy(out["digit"], y_digit) + F.cross_entropy(out["parity"], y_parity)
    else:
        outputs = model(**inputs, labels=labels)
        loss = outputs.loss
    loss.backward()
    opt.step()
    return loss


@pytest.fixture(scope="module", params=TORCH_KINDS)
def torch_case(request):
    kind = request.param
    plain, inputs, labels = _torch_model(kind)
    if kind != "learner":
        return record_torch_case(kind, plain, inputs, labels, lambda *args: _torch_step(kind, *args))
    c = TorchCase(kind, plain)
    c.ran_plain(_torch_step(kind, plain, c.opt_p, inputs, labels))
    recorded, opt_r = c.model, c.opt
    # as a learner writes it in a cell: the names are the cell's variables
    images, (y_digit, y_parity) = inputs["images"], labels
    with adv.torch.record() as rec:
        opt_r.zero_grad()
        out = recorded(images)
        loss = F.cross_entropy(out["digit"], y_digit) + F.cross_entropy(out["parity"], y_parity)
        loss.backward()
        opt_r.step()
    return c.traced(rec, loss, rec.trace(loss, recorded, value_limit=VALUES), rec.trace(loss, recorded))


def test_torch_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(torch_case):
    assert_torch_step_bit_for_bit(torch_case)


# the parts a paper draws for each model: the backbone's named_children() and the head's, each one named box
TORCH_PARTS = {
    "distilbert": ("distilbert.embeddings", "distilbert.transformer", "pre_classifier", "dropout", "classifier"),
    "bart": ("model.encoder", "model.decoder", "lm_head"),
    "gptneo": ("transformer.wte", "transformer.wpe", "transformer.drop", "transformer.h.0", "transformer.h.3",
               "transformer.ln_f", "lm_head"),
    "mobilevit": ("mobilevit.conv_stem", "mobilevit.encoder", "mobilevit.conv_1x1_exp", "dropout", "classifier"),
    "learner": ("stem", "blocks", "pool", "heads.digit", "heads.parity"),
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
    c = torch_case
    labels = _labels(c.tr.to_dot("backward"))
    assert "no gradient: labels" in labels
    formulas = [lab for lab in labels if "softmax(" in lab]
    assert formulas
    for lab in formulas:
        assert re.match(r"ḡ_(\S+) = \(softmax\(\1\) − onehot\((labels|y_digit|y_parity)", lab), lab
    if c.kind == "learner":                    # two losses: each prediction's edge names its own labels
        assert any("onehot(y_digit)" in lab for lab in formulas) and \
            any("onehot(y_parity)" in lab for lab in formulas), formulas


# which buffers each model's forward pass reads
USED_BUFFERS = {
    "distilbert": lambda name: name == "distilbert.embeddings.position_ids",
    "bart": lambda name: name == "final_logits_bias",
    "gptneo": lambda name: name.endswith("attn.attention.bias"),
    "mobilevit": lambda name: name.endswith(("running_mean", "running_var")),
    "learner": lambda name: name.endswith(("running_mean", "running_var")),
}


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_buffers_are_state_without_gradient(torch_case):
    assert_buffers_are_state(torch_case, USED_BUFFERS[torch_case.kind], legend=False)


@pytest.mark.parametrize("torch_case", ["mobilevit", "learner"], indirect=True)
def test_torch_an_opened_batchnorm_draws_its_statistics_as_state(torch_case):
    c = torch_case
    bn = c.ran_bn[-1]
    text = c.tr.to_dot("backward", expanded={group_key(c.tr, bn)})
    assert f'label="{bn}.running_mean\\n' in text and f'label="{bn}.running_var\\n' in text
    assert "no gradient: state" in text


# one repeated stage of each model opened: (the box to open, "Class × N" it shows, the instances' names)
TORCH_STAGES = {
    "distilbert": ("distilbert.transformer", "TransformerBlock × 3",
                   "distilbert.transformer.layer.0 … distilbert.transformer.layer.2"),
    "bart": ("model.decoder", "BartDecoderLayer × 2", "model.decoder.layers.0 … model.decoder.layers.1"),
    "gptneo": (None, "GPTNeoBlock × 4", "transformer.h.0 … transformer.h.3"),
    "mobilevit": ("mobilevit.encoder.layer.3.transformer", "MobileViTTransformerLayer × 4",
                  "mobilevit.encoder.layer.3.transformer.layer.0 … mobilevit.encoder.layer.3.transformer.layer.3"),
    "learner": ("blocks", "Residual × 3", "blocks.0 … blocks.2"),
}


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_a_repeated_stage_is_one_box_times_n_with_the_gradient_of_each(torch_case):
    assert_repeated_stage_is_one_box(torch_case.tr, *TORCH_STAGES[torch_case.kind])


@pytest.mark.parametrize("torch_case", TORCH_KINDS, indirect=True)
def test_torch_a_repeated_stage_opens_to_one_instance_and_stays_readable(torch_case):
    c = torch_case
    tr = c.tr
    where, head, _ = TORCH_STAGES[c.kind]
    title, n = head.rsplit(" × ", 1)
    rep = the_repeat(tr, title, int(n))
    opened = {rep.key} | ({group_key(tr, where)} if where else set())
    lay, boxes = _boxes(tr, expanded=opened)
    assert f"{title} × {int(n) - 1}" in boxes, sorted(boxes)           # instance 0 open, the others one box
    assert not any(b.key == rep.groups[0] for b in lay.boxes.values())
    assert not any(b.kind == "fold" for b in lay.boxes.values()) and len(lay.boxes) <= folding.NODE_BUDGET
    assert _readable(tr, expanded=opened) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["learner"], indirect=True)
def test_learner_the_residual_blocks_say_where_the_gradient_splits(torch_case):
    c = torch_case
    tr = c.tr
    text = tr.to_dot("backward", expanded={group_key(tr, "blocks")})
    assert "in each: ḡ_x = ḡ through the branch + ḡ_" in text
    assert "made of Residual × 3" in repeat_label(tr, "blocks (Sequential)")      # the stage, folded


@pytest.mark.parametrize("torch_case", ["learner"], indirect=True)
def test_learner_the_residual_times_three_box_says_what_it_is_made_of(torch_case):
    c = torch_case
    label = repeat_label(c.tr, "Residual × 3", expanded={group_key(c.tr, "blocks")})
    made = next((ln for ln in label.split("\n") if ln.startswith("made of")), "")
    assert all(part in made for part in ("conv1", "bn1", "conv2", "bn2")), label


@pytest.mark.parametrize("torch_case", ["bart"], indirect=True)
def test_bart_the_tied_embedding_is_one_weight_with_the_sum_of_its_uses(torch_case):
    c = torch_case
    tr = c.exact
    node = next(n for n in tr.nodes if n.kind == "variable" and n.name == "model.shared.weight")
    assert len({e.dst for e in tr.edges_from(node.id)}) >= 2       # encoder and decoder (and the tied lm_head)
    assert np.array_equal(node.grad.data, c.plain.model.shared.weight.grad.numpy())
    names = {n.name for n in tr.nodes if n.kind == "variable"}
    assert not {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"} & names


@pytest.mark.parametrize("torch_case", ["bart"], indirect=True)
def test_bart_the_encoder_opens_to_its_layers_times_two(torch_case):
    c = torch_case
    tr = c.tr
    key = group_key(tr, "model.encoder")
    _, boxes = _boxes(tr, expanded={key})
    assert "BartEncoderLayer × 2" in boxes, sorted(boxes)
    label = repeat_label(tr, "BartEncoderLayer × 2", expanded={key})
    assert "model.encoder.layers.0 … model.encoder.layers.1" in label and len(each_norms(label)) == 2


@pytest.mark.parametrize("torch_case", ["bart"], indirect=True)
def test_bart_the_opened_encoder_fits_the_notebook(torch_case):
    c = torch_case
    assert _readable(c.tr, expanded={group_key(c.tr, "model.encoder")}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("torch_case", ["mobilevit"], indirect=True)
def test_mobilevit_a_mobilenet_stage_opens_to_its_inverted_residuals_with_their_skip(torch_case):
    c = torch_case
    tr = c.tr
    key = group_key(tr, "mobilevit.encoder.layer.1")
    _, boxes = _boxes(tr, expanded={key})
    assert "mobilevit.encoder.layer.1.layer.0" in boxes and "MobileViTInvertedResidual × 2" in boxes, sorted(boxes)
    assert "in each: ḡ_x = ḡ through the branch + ḡ_" in tr.to_dot("backward", expanded={key})
    assert _readable(tr, expanded={key}) >= render.MIN_LABEL_PX


# ---------------------------------------------------------------------------
# Keras: keras.applications, one recorded training step each
# ---------------------------------------------------------------------------
KERAS_KINDS = ["vgg16", "resnet50v2", "mobilenetv3small"]


def _keras_model(kind):
    keras.utils.set_random_seed(0)
    apps = keras.applications
    build = {"vgg16": apps.VGG16, "resnet50v2": apps.ResNet50V2, "mobilenetv3small": apps.MobileNetV3Small}[kind]
    return build(weights=None, input_shape=(32, 32, 3), classes=4)


@pytest.fixture(scope="module", params=KERAS_KINDS)
def keras_case(request):
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((2, 32, 32, 3)).astype("float32"))
    return record_keras_case(request.param, lambda: _keras_model(request.param), images, tf.constant([1, 3]))


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_a_recorded_step_is_bit_for_bit_and_its_trace_shows_the_weights_before_the_update(keras_case):
    assert_keras_step_bit_for_bit(keras_case)


# the parts a paper draws: the Keras layer-name prefixes of keras.applications (``block3_conv2`` → ``block3``)
KERAS_PARTS = {
    "vgg16": ["block1", "block2", "block3", "block4", "block5", "flatten", "fc1", "fc2", "predictions"],
    "resnet50v2": ["conv1", "pool1"] + [f"conv{s}_block{b}" for s, n in ((2, 3), (3, 4), (4, 6), (5, 3))
                                        for b in range(1, n + 1)] + ["post", "avg_pool", "predictions"],
    "mobilenetv3small": ["conv", "expanded_conv"] + [f"expanded_conv_{k}" for k in range(1, 11)] +
                        ["conv_1", "conv_2", "logits", "predictions"],
}


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_default_figure_is_the_models_blocks_by_name_within_the_budget(keras_case):
    c = keras_case
    lay = folding.layout(c.tr)
    parts = named_parts(c.tr, lay)
    for part in KERAS_PARTS[c.kind]:
        assert part in parts, (part, parts)
    titles = group_titles(lay)
    assert len(titles) == len(set(titles)), [t for t in titles if titles.count(t) > 1]
    inner = [t for t in titles if any(t.startswith(p + "_") and t not in KERAS_PARTS[c.kind]
                                      for p in KERAS_PARTS[c.kind])]
    assert not inner, inner                           # a layer of a block is not a top-level box
    assert fits_budget(lay), (len(lay.boxes), lay.notes)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_no_box_is_named_by_a_library_op(keras_case):
    c = keras_case
    assert not op_named_nodes(c.tr, folding.layout(c.tr))


# a run of blocks of one structure: (the "× N" box, the instances' names)
KERAS_REPEATS = {
    "vgg16": ("block3 … block5 × 3", "block3 … block5"),
    "resnet50v2": ("conv4_block2 … conv4_block5 × 4", "conv4_block2 … conv4_block5"),
    "mobilenetv3small": ("expanded_conv_4 … expanded_conv_5 × 2", "expanded_conv_4 … expanded_conv_5"),
}


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_blocks_of_one_structure_are_one_box_times_n_with_the_gradient_of_each(keras_case):
    c = keras_case
    head, names = KERAS_REPEATS[c.kind]
    lay, boxes = _boxes(c.tr)
    assert head in boxes, sorted(boxes)
    label = repeat_label(c.tr, head.rsplit(" × ", 1)[0] + " × ")
    assert names in label
    assert len(each_norms(label)) == int(head.rsplit("× ", 1)[1]), label
    # opened: one instance's layers, the others one box, still readable
    rep = folding.hierarchy(c.tr).repeats[boxes[head].key]
    lay2, boxes2 = _boxes(c.tr, expanded={rep.key})
    assert not any(b.kind == "fold" for b in lay2.boxes.values()) and len(lay2.boxes) <= folding.NODE_BUDGET
    assert f"{rep.title} × {rep.count - 1}" in boxes2, sorted(boxes2)
    assert _readable(c.tr, expanded={rep.key}) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_default_figure_fits_the_notebook(keras_case):
    c = keras_case
    assert _readable(c.tr) >= render.MIN_LABEL_PX


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_every_layer_that_ran_is_a_group_and_opens_by_expanded(keras_case):
    assert_every_layer_opens(keras_case)


@pytest.mark.parametrize("keras_case", ["resnet50v2", "mobilenetv3small"], indirect=True)   # VGG16 has none
def test_keras_moving_statistics_are_state_without_gradient(keras_case):
    assert_keras_state_without_gradient(keras_case)


@pytest.mark.parametrize("keras_case", KERAS_KINDS, indirect=True)
def test_keras_the_labels_edge_goes_by_role(keras_case):
    assert_keras_labels_edge_by_role(keras_case)


# ---------------------------------------------------------------------------
# Keras: a functional siamese model, one Dense layer called on two inputs
# ---------------------------------------------------------------------------
def _siamese():
    keras.utils.set_random_seed(0)
    left, right = keras.Input((6,), name="left"), keras.Input((6,), name="right")
    embed = keras.layers.Dense(8, activation="tanh", name="embed")
    diff = keras.layers.Subtract(name="diff")([embed(left), embed(right)])
    square = keras.layers.Multiply(name="square")([diff, diff])
    same = keras.layers.Dense(1, activation="sigmoid", name="same")(square)
    return keras.Model([left, right], same, name="siamese")


def _siamese_step(model, opt, pair, labels):
    loss_fn = keras.losses.BinaryCrossentropy()
    with tf.GradientTape() as tape:
        probs = model(pair, training=True)
        loss = loss_fn(labels, probs)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss, grads


@pytest.fixture(scope="module")
def siamese():
    rng = np.random.default_rng(0)
    x_left, x_right = (tf.constant(rng.random((4, 6)).astype("float32")) for _ in range(2))
    labels = tf.constant([[1.0], [0.0], [1.0], [0.0]])
    c = KerasCase("siamese", _siamese, _siamese_step, [x_left, x_right], labels, lambda: keras.optimizers.SGD(0.1))
    model, opt = c.model, c.opt
    with adv.tf.record() as rec:          # in the fixture's frame: rec.trace names x_left and x_right
        loss, grads = _siamese_step(model, opt, [x_left, x_right], labels)
    return c.traced(rec, loss, grads, rec.trace(loss, model, value_limit=VALUES), rec.trace(loss, model))


def test_siamese_a_recorded_step_is_bit_for_bit_and_shows_the_weights_before_the_update(siamese):
    assert_keras_step_bit_for_bit(siamese)


def test_siamese_the_shared_layer_is_one_weight_read_by_both_calls_with_the_sum_of_their_gradients(siamese):
    c = siamese
    tr = c.exact
    kernel = [n for n in tr.nodes if n.kind == "variable" and n.name == "embed/kernel"]
    assert len(kernel) == 1                                           # one weight, not one per call
    products = {e.dst for e in tr.edges_from(kernel[0].id)}
    assert len(products) == 2                                         # x_left @ W and x_right @ W
    h = folding.hierarchy(tr)
    assert all(h.groups[h.paths[d][-1]].title == "embed" for d in products)
    assert np.array_equal(kernel[0].grad.data, c.grads_p[0].numpy())    # the sum over both towers


def test_siamese_the_default_figure_is_its_layers_and_no_loop(siamese):
    c = siamese
    tr = c.tr
    assert not folding.hierarchy(tr).loops       # the second call does not take the first's output: no t → t+1
    lay = folding.layout(tr)
    titles = group_titles(lay)
    assert {"embed", "diff", "square", "same"} <= set(titles) and "siamese" not in titles, titles
    assert fits_budget(lay) and not op_named_nodes(tr, lay)
    assert "no gradient: labels" in _labels(tr.to_dot("backward"))
    assert _readable(tr) >= render.MIN_LABEL_PX


def test_siamese_both_inputs_are_named_and_flow_into_the_shared_layer(siamese):
    c = siamese
    tr = c.tr
    lay = folding.layout(tr)
    named = {n.title: n for n in tr.nodes if n.title in ("x_left", "x_right")}
    assert set(named) == {"x_left", "x_right"}, sorted({n.title for n in tr.nodes if n.kind == "constant"})
    embed = next(b for b in lay.boxes.values() if b.kind == "group" and b.title == "embed")
    for n in named.values():
        assert lay.owner[n.id] == n.id                                # drawn as itself, outside the box
        assert any(lay.owner[e.dst] == embed.id for e in tr.edges_from(n.id))


def test_siamese_an_optimizer_made_inside_the_recording_is_not_drawn_in_the_losss_figure():
    rng = np.random.default_rng(0)
    x_left, x_right = (tf.constant(rng.random((4, 6)).astype("float32")) for _ in range(2))
    labels = tf.constant([[1.0], [0.0], [1.0], [0.0]])
    model = _siamese()
    with adv.tf.record() as rec:
        opt = keras.optimizers.SGD(0.1)
        loss, _ = _siamese_step(model, opt, [x_left, x_right], labels)
    tr = rec.trace(loss, model)
    titles = group_titles(folding.layout(tr))
    assert not [t for t in titles if t.startswith("sgd")], titles
    linked = {e.src for e in tr.edges} | {e.dst for e in tr.edges}
    assert all(n.id in linked for n in tr.nodes), [n.title for n in tr.nodes if n.id not in linked]
