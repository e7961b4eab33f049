"""Real PyTorch architectures drawn as a paper draws them (issue 42, the picture half).

The models are built by their own library with random weights from tiny configs (Hugging Face ``transformers``:
BERT and ResNet; nothing is downloaded, torchvision is not needed), recorded with ``adv.torch.record()`` and
traced with ``rec.trace(loss, model)``. The default picture is the architecture: the model's top-level parts as
boxes, named; repeated blocks as one box "× N"; every module reachable by ``expanded=``; buffers drawn as state
without gradient; the loss's edges by role; and the picture readable at a notebook's 850 px.
"""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.views import folding, render  # noqa: E402

F = torch.nn.functional


def _boxes(tr, **kw):
    """``{title: box}`` of the default layout (a repeat by ``Class × N``)."""
    lay = folding.layout(tr, **kw)
    return lay, {b.title if b.kind != "repeat" else f"{b.title} × {b.count}": b for b in lay.boxes.values()}


def _labels(text: str) -> list:
    return [m.replace("\\n", "\n") for m in re.findall(r'label="((?:[^"\\]|\\.)*)"', text)]


def _readable(tr, **kw) -> float:
    """The smallest label (px) of the notebook's drawing of the backward view, fitted to 850 px."""
    return render.smallest_label_px(render.svg(render.readable(tr.to_dot("backward", **kw))))


def _opened(tr, key) -> bool:
    """``key``'s nodes are drawn open: none of them sits in a box that also holds nodes outside ``key``."""
    h = folding.hierarchy(tr)
    lay = folding.layout(tr, expanded={key})
    inside = {nid for nid, path in h.paths.items() if key in path}
    return all(set(lay.boxes[lay.owner[nid]].members) <= inside for nid in inside) and \
        not any(b.key == key for b in lay.boxes.values())


# ---------------------------------------------------------------------------
# the issue's reduced case: nn.Sequential of 3 × 10 Linear
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stacked():
    torch.manual_seed(0)
    net = torch.nn.Sequential(*[torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(10)]) for _ in range(3)])
    with adv.torch.record() as rec:
        loss = net(torch.randn(2, 4)).pow(2).mean()
        loss.backward()
    return rec.trace(loss, net), net


def test_the_issues_stacked_linears_are_one_box_times_three_not_sixty_weights(stacked):
    tr, net = stacked
    lay, boxes = _boxes(tr)
    assert "Sequential × 3" in boxes and len(lay.boxes) <= 6 and not lay.notes
    assert not any(b.kind == "node" and tr.node(b.id).kind == "variable" for b in lay.boxes.values())
    text = tr.to_dot("backward")
    label = next(lab for lab in _labels(text) if lab.startswith("Sequential × 3"))
    # ‖ḡ‖ of each instance's output, as autograd gives it: the gradient shrinks back through the stack
    rep = folding.hierarchy(tr).repeats[boxes["Sequential × 3"].key]
    norms = rep.grad_norms
    assert norms[0] < norms[1] < norms[2] and f"{norms[2]:.3g}" in label
    assert "60 weights, 600 parameters" in label          # the weights are counted inside, not drawn
    assert _readable(tr) >= render.MIN_LABEL_PX
    assert "the sum of 1 contributions" not in text


def test_opening_the_times_n_box_opens_one_instance_and_folds_the_others(stacked):
    tr, _ = stacked
    h = folding.hierarchy(tr)
    rep = next(iter(h.repeats.values()))
    _, boxes = _boxes(tr, expanded={rep.key})
    assert "Linear × 10" in boxes and "Sequential × 2" in boxes        # instance 0 open, the other two folded
    lay = folding.layout(tr, expanded={rep.groups[1]})                 # step to instance 1
    kinds = sorted((b.title, b.count) for b in lay.boxes.values() if b.kind == "repeat")
    assert kinds == [("Linear", 10), ("Sequential", 1), ("Sequential", 1)]
    assert _readable(tr, expanded={rep.groups[1]}) >= render.MIN_LABEL_PX


# ---------------------------------------------------------------------------
# BERT (transformers, tiny config)
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=16, num_labels=3)
    model = transformers.BertForSequenceClassification(config)
    ids, labels = torch.randint(0, 50, (2, 6)), torch.tensor([0, 2])
    with adv.torch.record() as rec:
        out = model(input_ids=ids, labels=labels)
        out.loss.backward()
    return rec.trace(out.loss, model), model


def test_berts_default_figure_is_embeddings_encoder_pooler_classifier(bert):
    tr, model = bert
    lay, boxes = _boxes(tr)
    titles = [b.title for b in sorted(lay.boxes.values(), key=lambda b: b.order) if b.kind == "group"]
    for part in ("bert.embeddings", "bert.encoder", "bert.pooler", "classifier"):
        assert part in titles, (part, titles)
    assert "bertforsequenceclassification" not in titles and "bert" not in titles     # opened: its parts show
    assert len(lay.boxes) <= folding.NODE_BUDGET and _readable(tr) >= render.MIN_LABEL_PX
    text = tr.to_dot("backward")
    assert "bert.embeddings (BertEmbeddings)" in text and "made of BertLayer × 3" in text
    assert not any(lab.startswith(("__getitem__", "view\n")) for lab in _labels(text))   # named by what they act on


def test_berts_encoder_opens_to_bertlayer_times_n_with_the_gradient_of_each(bert):
    tr, _ = bert
    encoder = next(k for k, g in folding.hierarchy(tr).groups.items() if g.title == "bert.encoder")
    lay, boxes = _boxes(tr, expanded={encoder})
    assert "BertLayer × 3" in boxes                          # the ModuleList between opens with the encoder
    label = next(lab for lab in _labels(tr.to_dot("backward", expanded={encoder})) if lab.startswith("BertLayer × 3"))
    assert "‖ḡ‖ each:" in label and "bert.encoder.layer.0 … bert.encoder.layer.2" in label


def test_every_module_of_bert_down_to_the_query_projection_opens_by_expanded(bert):
    tr, model = bert
    h = folding.hierarchy(tr)
    by_title = {g.title: k for k, g in h.groups.items()}
    for name, _ in model.named_modules():
        if name and name in by_title and by_title[name] not in h.transparent:
            assert _opened(tr, by_title[name]), name
    query = by_title["bert.encoder.layer.1.attention.self.query"]
    lay = folding.layout(tr, expanded={by_title["bert.encoder.layer.1.attention.self"]})
    assert any(b.key == query for b in lay.boxes.values())            # the query projection is a box
    assert len(lay.boxes) <= folding.NODE_BUDGET and not any(b.kind == "fold" for b in lay.boxes.values())
    text = tr.to_dot("backward", expanded={by_title["bert.encoder.layer.1.attention.self"]})
    assert "bert.encoder.layer.1.attention.self.query.weight" in text          # its weights beside it, by path
    assert "query.view" in text and 'label="view\\n' not in text               # a view named by what it acts on


def test_berts_buffers_are_state_without_gradient_and_the_labels_edge_says_so(bert):
    tr, model = bert
    buffers = dict(model.named_buffers())
    state = [n for n in tr.nodes if n.kind == "state"]
    assert state and {n.name for n in state} <= set(buffers)
    assert "bert.embeddings.token_type_ids" in {n.name for n in state}
    for n in state:
        assert n.grad is None and all(not e.differentiable for e in tr.edges_from(n.id))
    text = tr.to_dot("backward")
    labels = _labels(text)
    assert "no gradient: labels" in labels
    loss_edge = next(lab for lab in labels if "softmax(" in lab)
    # HF computes the loss inside the model: its input is named by what made it (the classifier's output, which
    # HF's code calls logits), never by a library-internal temporary
    assert re.match(r"ḡ_(logits|classifier)\.view = \(softmax\(\1\.view\) − onehot\(labels\.view\)\)", loss_edge)
    assert "state (running statistics, seeds, counters): no gradient, no formula" in text


# ---------------------------------------------------------------------------
# ResNet (transformers' ResNetForImageClassification, basic blocks)
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def resnet():
    torch.manual_seed(0)
    config = transformers.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 8, 16, 16],
                                       depths=[2, 2, 2, 2], layer_type="basic", num_labels=4)
    model = transformers.ResNetForImageClassification(config)
    images, y = torch.randn(2, 3, 16, 16), torch.tensor([1, 2])
    with adv.torch.record() as rec:
        logits = model(images).logits
        loss = F.cross_entropy(logits, y)
        loss.backward()
    return rec.trace(loss, model), model


def test_resnets_default_figure_is_its_stages_with_running_statistics_as_state(resnet):
    tr, model = resnet
    lay, boxes = _boxes(tr)
    titles = {b.title for b in lay.boxes.values()}
    assert {"resnet.embedder", "resnet.encoder", "resnet.pooler", "classifier"} <= titles
    assert len(lay.boxes) <= 12 and _readable(tr) >= render.MIN_LABEL_PX
    running = {n.name for n in tr.nodes if n.kind == "state"}
    assert "resnet.embedder.embedder.normalization.running_mean" in running
    assert not any(n.title == "input" for n in tr.nodes)          # no buffer passes for the learner's input
    text = tr.to_dot("backward")
    assert "state (no gradient): running_mean, running_var" in text
    assert "ḡ_logits = (softmax(logits) − onehot(y)) / N" in text
    assert 'label="no gradient: labels"' in text               # F.cross_entropy(logits, y): y's edge by its role
    assert len(tr.to_json().encode()) < 1_000_000          # ResNet-18's depths: large arrays summarised


def test_a_resnet_stage_opens_to_its_basic_layers_times_two_each_saying_its_skip(resnet):
    tr, _ = resnet
    h = folding.hierarchy(tr)
    stage = next(k for k, g in h.groups.items() if g.title == "resnet.encoder.stages.0")
    _, boxes = _boxes(tr, expanded={stage})
    assert "ResNetBasicLayer × 2" in boxes
    text = tr.to_dot("backward", expanded={stage})
    assert "in each: ḡ_x = ḡ through the branch + ḡ_" in text            # the residual, where ḡ splits
    layer = next(k for k, g in h.groups.items() if g.title == "resnet.encoder.stages.0.layers.1")
    text = tr.to_dot("backward", expanded={layer})                           # step to the second instance
    assert "ḡ through the branch + ḡ_" in text and "ResNetBasicLayer × 1" in text
    bn = next(k for k, g in h.groups.items() if g.title == "resnet.encoder.stages.0.layers.1.layer.0.normalization")
    text = tr.to_dot("backward", expanded={bn})                          # BatchNorm open: its buffers drawn
    assert 'label="resnet.encoder.stages.0.layers.1.layer.0.normalization.running_mean\\n' in text
    assert "no gradient: state" in text and "fillcolor=\"#f4f0e6\"" in text     # drawn as state, no formula


def test_node_id_of_takes_the_models_own_parameters(resnet):
    tr, model = resnet
    for name, p in list(model.named_parameters())[:5]:
        nid = tr.node_id_of(p)
        assert nid is not None and tr.node(nid).name == name
    with pytest.raises(TypeError, match="torch tensor"):
        tr.node_id_of("conv1.weight")


def test_the_torch_local_jacobian_is_autograds_in_one_batched_pass():
    x = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    with adv.torch.record() as rec:
        y = torch.tanh(x)
        loss = (y * y).sum()
    tr = rec.trace(loss, [x])
    edge = next(e for e in tr.edges if tr.node(e.dst).op == "tanh")
    expected = np.diag(1 - np.tanh([0.5, -1.0, 2.0]) ** 2)
    assert np.allclose(edge.jacobian, expected, atol=1e-6)


def test_the_explorer_steps_backward_through_berts_layers_one_at_a_time(bert):
    from autodiff_viz.views.widgets import ExplorerState
    tr, _ = bert
    state = ExplorerState(tr)
    h = folding.hierarchy(tr)
    rep = next(r for r in h.repeats.values() if r.title == "BertLayer")
    encoder = next(k for k, g in h.groups.items() if g.title == "bert.encoder")

    def click(key):
        return state.expand(next(b.id for b in state.layout().boxes.values() if b.key == key))

    assert click(encoder) and click(rep.key)               # the encoder, then "BertLayer × 3"
    assert (rep.key, "BertLayer × 3") in state.crumbs()
    assert state.step_repeat(rep.key, -1) == rep.groups[2]          # backward: the last layer first
    assert state.step_repeat(rep.key, -1) == rep.groups[1]
    lay = state.layout()
    runs = sorted((b.title, b.count) for b in lay.boxes.values() if b.kind == "repeat")
    assert runs == [("BertLayer", 1), ("BertLayer", 1)]             # layer.1 open between two runs of one
    assert not any(b.key == rep.groups[1] for b in lay.boxes.values())
