"""A recorded PyTorch step draws like the engine's own (issue 33): boxes by module, weights with ḡ, layer formulas.

``rec.trace(loss, net)`` of a torch CNN (Conv2d → ReLU → MaxPool2d → Flatten → Linear) and of an LSTM regressor,
drawn with ``to_dot()`` and no options: the model open one level, each module a box titled as ``print(net)``
names it with its class (``fc1 (Linear)``), each parameter a node beside its module with its ḡ, and every edge
out of a module stating the backward formula of the matching Keras-style layer (``Linear`` → ``Dense``): the
same text the engine's picture shows, not a second copy. The engine's own picture is checked here too for the
two fixes that serve both: MultiHeadAttention's four projections each get their formula, and the batch fed to
the model is called by the learner's variable (``x_batch``) or ``input``, never ``ḡ_constant``.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import autodiff_viz as adv  # noqa: E402

L = adv.layers
nn = torch.nn
F = torch.nn.functional


def _edge_into(text, node_id) -> str:
    """The label of the backward edge that ends at node ``node_id`` (a weight or an input)."""
    line = next(ln for ln in text.splitlines() if f'-> "bwd_{node_id}"' in ln)
    return line.split('label="', 1)[1].split('"', 1)[0]


def _edge_out_of(text, title) -> str:
    """Every edge label out of the box whose label starts with ``title`` (``"fc1 (Linear)"``), joined."""
    box = next(ln for ln in text.splitlines() if f'label="{title}\\n' in ln).split('"')[1]
    return " ".join(ln.split('label="', 1)[1].split('"', 1)[0] for ln in text.splitlines()
                    if ln.lstrip().startswith(f'"{box}" ->'))


def _said(cls, role, y, x=None) -> str:
    """``cls.backward_text[role]`` as a box's edge says it: ḡ_y in the box's output name, ḡ_x in its input's."""
    text = cls.backward_text[role].replace("ḡ_y", f"ḡ_{y}")
    return text.replace("ḡ_x", f"ḡ_{x}", 1) if x else text


class SmallCNN(nn.Module):
    """Conv2d → ReLU → MaxPool2d → Flatten → Linear, named as the PyTorch tutorials name theirs."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(36, 10)

    def forward(self, x):
        return self.fc1(self.flatten(self.pool(self.relu(self.conv1(x)))))


def _cnn_trace():
    torch.manual_seed(0)
    net = SmallCNN()
    x_batch = torch.randn(2, 1, 8, 8)
    labels = torch.tensor([1, 3])
    with adv.torch.record() as rec:
        logits = net(x_batch)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
    return rec.trace(loss, net), net


def test_a_torch_cnn_draws_every_module_by_name_and_class_its_parameters_with_g_and_the_layer_formulas():
    tr, net = _cnn_trace()
    text = tr.to_dot("backward")
    for name, module in net.named_children():           # every module a box, titled name (Class)
        assert f'label="{name} ({type(module).__name__})\\n' in text, name
    assert "→ (2, 4, 6, 6) float32" in text and "→ (2, 10) float32" in text     # output shapes on the boxes
    for name, p in net.named_parameters():              # every parameter a node with its ḡ, named as named_parameters
        node = tr.node(next(n.id for n in tr.nodes if n.name == name))
        assert node.kind == "variable" and node.grad is not None
        line = next(ln for ln in text.splitlines() if f'"bwd_{node.id}" [' in ln)
        assert f'label="{name}\\n' in line and "ḡ = " in line
        assert np.allclose(node.grad.data if node.grad.data is not None else node.grad.stats["norm"],
                           p.grad.numpy() if node.grad.data is not None else np.linalg.norm(p.grad.numpy()),
                           rtol=1e-5)
    weight = {n.name: n.id for n in tr.nodes if n.kind == "variable"}
    # each edge states the formula the engine's matching layer carries, in torch's layout (W is (out, in)) where
    # it differs, in the learner's names (fc1's output is `return self.fc1(…)` in forward: the line that called
    # the model, `logits = net(x_batch)`, names it; conv1's output is named by nothing, so by its module)
    assert _edge_into(text, weight["fc1.weight"]).startswith(_said(L.Dense, "kernel (torch)", "logits"))
    assert _edge_into(text, weight["fc1.bias"]).startswith(_said(L.Dense, "bias (torch)", "logits"))
    assert _edge_into(text, weight["conv1.weight"]).startswith(_said(L.Conv2D, "kernel (torch)", "conv1"))
    assert _edge_into(text, weight["conv1.bias"]).startswith(_said(L.Conv2D, "bias (torch)", "conv1"))
    assert _said(L.Dense, "x (torch)", "logits", "flatten") in _edge_out_of(text, "fc1 (Linear)")
    assert _said(L.Flatten, "x", "flatten", "pool") in _edge_out_of(text, "flatten (Flatten)")
    assert _said(L.MaxPooling2D, "x", "pool", "relu") in _edge_out_of(text, "pool (MaxPool2d)")
    assert _said(L.ReLU, "x", "relu", "conv1") in _edge_out_of(text, "relu (ReLU)")
    # the image is the learner's x_batch (it needs no gradient: its edge is grey, but named)
    assert _edge_into(text, next(n.id for n in tr.nodes if n.name == "x_batch")).startswith(
        _said(L.Conv2D, "x (torch)", "conv1", "x_batch"))
    assert "VJP of" not in text and "×1" not in text and "ḡ_constant" not in text and "sequential" not in text


def test_the_torch_cnn_svg_says_the_same():
    tr, _ = _cnn_trace()
    svg = tr.to_svg("backward")
    assert "fc1 (Linear)" in svg and "conv1 (Conv2d)" in svg and "fc1.weight" in svg
    assert "ḡ_W = ḡ_logitsᵀ · x" in svg and "(out, in)" in svg and "VJP of" not in svg


def test_modules_named_alike_in_two_blocks_keep_their_own_class():
    """``features.0`` is a Conv2d and ``classifier.0`` a Linear (a VGG-style net): each box has its own formula."""
    torch.manual_seed(0)
    net = nn.Sequential()
    net.add_module("features", nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()))
    net.add_module("classifier", nn.Sequential(nn.Flatten(), nn.Linear(18, 2)))
    with adv.torch.record() as rec:
        out = net(torch.randn(1, 1, 5, 5))
        loss = out.pow(2).sum()
        loss.backward()
    tr = rec.trace(loss, net)
    assert tr.kinds["features.0"] == "Conv2d" and tr.kinds["classifier.1"] == "Linear"
    text = tr.to_dot("backward")                     # the model open one level: its two blocks are the boxes
    assert "features (Sequential)" in text and "classifier (Sequential)" in text
    blocks = {"sequential", "sequential/features", "sequential/classifier"}
    assert blocks < set(tr.groups())
    deep = tr.to_dot("backward", expanded=blocks)      # both blocks opened, as two clicks in the explorer
    assert "features.0 (Conv2d)" in deep and "classifier.1 (Linear)" in deep
    w = next(n.id for n in tr.nodes if n.name == "classifier.1.weight")
    assert _edge_into(deep, w).startswith(L.Dense.backward_text["kernel (torch)"].split("ḡ_y")[0])
    k = next(n.id for n in tr.nodes if n.name == "features.0.weight")
    assert _edge_into(deep, k).startswith(L.Conv2D.backward_text["kernel (torch)"].split("ḡ_y")[0])


class Regressor(nn.Module):
    """Many-to-one LSTM regression: the last hidden state through a Linear head."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def test_a_torch_lstm_regressor_states_the_gate_equations_on_its_weights():
    torch.manual_seed(0)
    net = Regressor()
    x_seq, y_true = torch.randn(2, 5, 3), torch.randn(2, 1)
    with adv.torch.record() as rec:
        pred = net(x_seq)
        loss = F.mse_loss(pred, y_true)
        loss.backward()
    tr = rec.trace(loss, net)
    text = tr.to_dot("backward")
    assert 'label="lstm (LSTM)\\n→ (2, 5, 4) float32' in text and 'label="head (Linear)\\n' in text
    weight = {n.name: n.id for n in tr.nodes if n.kind == "variable"}
    assert set(weight) == {name for name, _ in net.named_parameters()}
    lstm = L.LSTM.backward_text
    assert _edge_into(text, weight["lstm.weight_ih_l0"]).startswith(lstm["kernel"])
    assert _edge_into(text, weight["lstm.weight_hh_l0"]).startswith(lstm["recurrent_kernel"])
    assert _edge_into(text, weight["lstm.bias_ih_l0"]).startswith(lstm["bias"])
    assert _edge_into(text, weight["lstm.bias_hh_l0"]).startswith(lstm["bias"])
    assert _edge_into(text, weight["head.weight"]).startswith(_said(L.Dense, "kernel (torch)", "pred"))
    assert "ḡ_x_seq(t) = [ḡ_i ḡ_f ḡ_c̃ ḡ_o](t) · W_xᵀ" in text      # the sequence, by the learner's name
    assert "ḡ_lstm[…] = " in text and 'label="lstm[…]\\n' in text   # out[:, -1]: named by what it slices
    assert "ḡ___" not in text and 'label="__getitem__' not in text
    assert "VJP of" not in text and "ḡ_constant" not in text


def test_torch_multihead_attention_gives_each_projection_its_formula():
    """PyTorch packs W_q, W_k, W_v in ``in_proj_weight``: its edge states the three; ``out_proj`` states W_o's."""
    torch.manual_seed(0)
    attn = nn.MultiheadAttention(4, 2, batch_first=True)
    x_seq = torch.randn(2, 3, 4)
    with adv.torch.record() as rec:
        y, _ = attn(x_seq, x_seq, x_seq)
        loss = y.pow(2).mean()
        loss.backward()
    tr = rec.trace(loss, attn)
    text = tr.to_dot("backward")
    weight = {n.name: n.id for n in tr.nodes if n.kind == "variable"}
    mha = L.MultiHeadAttention.backward_text
    packed = _edge_into(text, weight["in_proj_weight"])
    assert packed.startswith("\\n".join(mha[k] for k in ("query/kernel", "key/kernel", "value/kernel")))
    y = "attn"                  # the module called on its own: its box, and its output, by the learner's variable
    assert f'label="{y} (MultiheadAttention)\\n' in text
    w_o = mha["attention_output/kernel"].replace("ḡ_y", "ḡ_" + y)
    assert _edge_into(text, weight["out_proj.weight"]).startswith(w_o)
    assert _edge_into(text, weight["out_proj.bias"]).startswith("ḡ_b_o = ")


def test_the_engines_multihead_attention_draws_four_projection_formulas():
    rng = np.random.default_rng(0)
    inp = L.Input((3, 4))
    mha = L.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    model = adv.Model(inp, mha(inp, inp))
    x_batch = rng.normal(size=(2, 3, 4)).astype("float32")
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(x_batch)))
    tr = tape.trace(loss, sources=model.trainable_variables)
    text = tr.to_dot("backward")
    said = {}
    for v in model.trainable_variables:
        said[v.path.split("/", 1)[1]] = _edge_into(text, tr.node_id_of(v))   # query/kernel … attention_output/bias
    assert said["query/kernel"].startswith("ḡ_W_q = x_qᵀ·ḡ_Q") and said["key/kernel"].startswith("ḡ_W_k = x_kᵀ·ḡ_K")
    assert said["value/kernel"].startswith("ḡ_W_v = x_vᵀ·ḡ_V")
    assert said["attention_output/kernel"].startswith("ḡ_W_o = concat(heads)ᵀ·ḡ_mha")
    assert len({s.split("\\n")[0] for s in said.values()}) == len(said)      # eight weights, eight formulas


def _skip_model():
    inp = L.Input((4,))
    h = L.Dense(4, activation="tanh", name="hidden")(inp)
    return adv.Model(inp, L.Dense(3, name="head")(L.Add(name="skip")([inp, h])))


def test_the_batch_fed_to_a_model_is_called_by_the_learners_name():
    model = _skip_model()
    x_batch = np.random.default_rng(0).normal(size=(5, 4))           # float64: the model casts it to float32
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(x_batch)))
    text = tape.trace(loss, sources=model.trainable_variables).to_dot("backward")
    assert "ḡ_x_batch = ḡ_skip for every input" in text and 'label="x_batch\\n' in text
    assert "ḡ_constant" not in text


def test_an_unnamed_batch_is_called_input():
    model = _skip_model()
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.square(model(np.random.default_rng(0).normal(size=(5, 4)).astype("float32"))))
    text = tape.trace(loss, sources=model.trainable_variables).to_dot("backward")
    assert "ḡ_input = ḡ_skip for every input" in text and "ḡ_constant" not in text
