"""What a picture says at a loss, at a torch module's output and at the model's input (issue 33, the gaps).

A loss box's edge back to the prediction states what the loss sends back, written once per loss in
``adv.losses.BACKWARD_TEXT`` and mapped for PyTorch through ``views/figure.py``'s ALIASES: the same text for
``F.cross_entropy``, ``nn.CrossEntropyLoss()`` and the engine's ``SparseCategoricalCrossentropy``. Each formula is
checked against the gradient autograd (or the tape) computes, with the conventions of the sources:

* PyTorch's losses average over the batch by default (``reduction='mean'``: "the sum of the output will be divided
  by the number of elements in the output"), https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
  and https://pytorch.org/docs/stable/generated/torch.nn.functional.cross_entropy.html;
* cross-entropy from logits sends back ``softmax − onehot`` divided by the batch size: CS231n's case study,
  ``dscores = probs; dscores[range(num_examples), y] -= 1; dscores /= num_examples``,
  https://cs231n.github.io/neural-networks-case-study/;
* ``BCEWithLogitsLoss`` is sigmoid and BCE in one, whose gradient with respect to the logit is ``σ(z) − y``,
  https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html and
  https://kamilelukosiute.com/2022/04/14/bce-with-logits-loss/;
* ``SmoothL1Loss(beta)`` is Huber's loss with ``δ = β`` divided by ``β``,
  https://pytorch.org/docs/stable/generated/torch.nn.SmoothL1Loss.html and
  https://pytorch.org/docs/stable/generated/torch.nn.HuberLoss.html.

torch's ``Linear`` stores its weight as (out, in) (``y = x·Wᵀ + b``): its edges say ``ḡ_W = ḡ_yᵀ · x`` and
``ḡ_x = ḡ_y · W``, and the numbers bear them out. A module's output is named by the line that called it
(``logits = self.fc2(h)``; ``out = net(x)``), and a batch no variable names is drawn as ``input``.
"""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import autodiff_viz as adv  # noqa: E402

nn = torch.nn
F = torch.nn.functional


def _edge_into(text, node_id) -> str:
    """The label of the backward edge that ends at node ``node_id``, its lines joined by ``\\n``."""
    line = next(ln for ln in text.splitlines() if f'-> "bwd_{node_id}"' in ln)
    return line.split('label="', 1)[1].split('"', 1)[0]


def _node(tr, title):
    return next(n for n in tr.nodes if n.title == title)


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _onehot(y, k):
    return np.eye(k)[y]


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


_rng = np.random.default_rng(0)       # module-level arrays start with "_": no learner's variable is named after them
_Z = _rng.normal(size=(4, 3))                            # 4 rows, 3 classes
_Y_INT = np.array([0, 2, 1, 2])
_Y_SOFT = _softmax(_rng.normal(size=(4, 3)))             # class probabilities: each row sums to 1
_P = _rng.normal(size=(4, 2)) * 2                        # a regression's predictions, some errors beyond 1
_T = _rng.normal(size=(4, 2))
_B01 = (_rng.random((4, 2)) > 0.5).astype(float)

# (what the learner calls the prediction, the loss function and its options, the labels, the formula's first
#  line, the formula in numpy: the gradient of the mean loss with respect to the prediction)
CASES = {
    "cross_entropy": ("logits", F.cross_entropy, {}, _Y_INT, "ḡ_logits = (softmax(logits) − onehot(y)) / N",
                      lambda p, y: (_softmax(p) - _onehot(y, 3)) / 4),
    "cross_entropy_soft": ("logits", F.cross_entropy, {}, _Y_SOFT, "ḡ_logits = (softmax(logits) − y) / N",
                           lambda p, y: (_softmax(p) - y) / 4),
    "nll_loss": ("logp", F.nll_loss, {}, _Y_INT, "ḡ_logp = −onehot(y) / N", lambda p, y: -_onehot(y, 3) / 4),
    "mse_loss": ("pred", F.mse_loss, {}, _T, "ḡ_pred = 2·(pred − y) / n", lambda p, y: 2 * (p - y) / p.size),
    "l1_loss": ("pred", F.l1_loss, {}, _T, "ḡ_pred = sign(pred − y) / n", lambda p, y: np.sign(p - y) / p.size),
    "huber_loss": ("pred", F.huber_loss, {}, _T, "ḡ_pred = clip(pred − y, −δ, δ) / n",
                   lambda p, y: np.clip(p - y, -1, 1) / p.size),
    "smooth_l1_loss": ("pred", F.smooth_l1_loss, {"beta": 0.5}, _T, "ḡ_pred = clip((pred − y) / β, −1, 1) / n",
                       lambda p, y: np.clip((p - y) / 0.5, -1, 1) / p.size),
    "binary_cross_entropy_with_logits": ("pred", F.binary_cross_entropy_with_logits, {}, _B01,
                                         "ḡ_pred = (σ(pred) − y) / n", lambda p, y: (_sigmoid(p) - y) / p.size),
    "binary_cross_entropy": ("prob", F.binary_cross_entropy, {}, _B01,
                             "ḡ_prob = (prob − y) / (prob·(1 − prob)) / n",
                             lambda p, y: (p - y) / (p * (1 - p)) / p.size),
}
_LEAF = {"cross_entropy": _Z, "cross_entropy_soft": _Z, "nll_loss": _Z}


def _renamed(text, old, new):
    """``text`` with the variable ``old`` called ``new`` (whole words only: ``prob`` in ``probabilities`` stays)."""
    return re.sub(rf"(?<![A-Za-z0-9]){old}(?![A-Za-z0-9])", new, text)


def _formula(label):
    """An edge label's formula, without its notes (``  (from logits; N: the batch size)``) and numbers."""
    return label.split("\\n")[0].split("  (")[0]


def _torch_case(key):
    """Record the case as a learner writes it, the prediction and the loss each on a line; trace it where
    the labels are the learner's ``y``. Returns the trace, the loss and the prediction."""
    name, fn, kw, labels, _, _ = CASES[key]
    z = torch.tensor(_LEAF.get(key, _P), requires_grad=True)
    y = torch.tensor(labels)
    with adv.torch.record() as rec:
        if name == "logp":
            logp = F.log_softmax(z, 1)
            loss = fn(logp, y, **kw)
        elif name == "prob":
            prob = torch.sigmoid(z)
            loss = fn(prob, y, **kw)
        elif name == "logits":
            logits = z * 1.0
            loss = fn(logits, y, **kw)
        else:
            pred = z * 1.0
            loss = fn(pred, y, **kw)
    return rec.trace(loss), loss, next(op.outputs[0] for op in rec.ops if op.assigned == name)


@pytest.mark.parametrize("key", list(CASES))
def test_a_torch_loss_edge_states_the_losss_gradient_and_autograd_agrees(key):
    name, _, _, labels, said, math = CASES[key]
    tr, loss, pred = _torch_case(key)
    text = tr.to_dot("backward")
    label = _edge_into(text, _node(tr, name).id)
    assert label.startswith(said), label
    assert "factor not shown" not in text
    (g,) = torch.autograd.grad(loss, pred, retain_graph=True)
    assert np.allclose(g.numpy(), math(pred.detach().numpy(), labels), atol=1e-12)


MODULES = {"cross_entropy": nn.CrossEntropyLoss, "mse_loss": nn.MSELoss, "l1_loss": nn.L1Loss,
           "huber_loss": nn.HuberLoss, "smooth_l1_loss": lambda: nn.SmoothL1Loss(beta=0.5),
           "binary_cross_entropy_with_logits": nn.BCEWithLogitsLoss, "binary_cross_entropy": nn.BCELoss,
           "nll_loss": nn.NLLLoss}


@pytest.mark.parametrize("key", list(MODULES))
def test_a_torch_loss_module_states_the_same_text_as_its_function(key):
    """``criterion = nn.CrossEntropyLoss(); loss = criterion(scores, y)``: a box, and the function's words on it."""
    name, _, _, labels, said, _ = CASES[key]
    criterion = MODULES[key]()
    z = torch.tensor(_LEAF.get(key, _P), requires_grad=True)
    y = torch.tensor(labels)
    with adv.torch.record() as rec:
        scores = torch.sigmoid(z) if name == "prob" else F.log_softmax(z, 1) if name == "logp" else z * 1.0
        loss = criterion(scores, y)
    tr = rec.trace(loss)
    text = tr.to_dot("backward")
    box = type(criterion).__name__
    assert f'label="criterion ({box})\\n' in text          # by the learner's variable, and its class
    label = _edge_into(text, _node(tr, "scores").id)
    assert label.startswith(_renamed(said, name, "scores")), label
    functional, _, _ = _torch_case(key)
    in_function = _edge_into(functional.to_dot("backward"), _node(functional, name).id)
    assert _formula(label) == _renamed(_formula(in_function), name, "scores")
    labels_edge = next(ln for ln in text.splitlines() if f'-> "bwd_{_node(tr, "y").id}"' in ln)
    assert 'label="no gradient: labels"' in labels_edge


ENGINE = {"cross_entropy": lambda: adv.losses.SparseCategoricalCrossentropy(from_logits=True),
          "cross_entropy_soft": lambda: adv.losses.CategoricalCrossentropy(from_logits=True),
          "mse_loss": adv.losses.MeanSquaredError, "l1_loss": adv.losses.MeanAbsoluteError,
          "huber_loss": adv.losses.Huber,
          "binary_cross_entropy_with_logits": lambda: adv.losses.BinaryCrossentropy(from_logits=True)}


@pytest.mark.parametrize("key", list(ENGINE))
def test_the_engines_loss_box_states_the_same_formula_as_torchs(key):
    """The engine's Keras loss and PyTorch's say one text (it is written once), and the tape's gradient fits it."""
    name, _, _, _, said, math = CASES[key]
    z = adv.Variable(_LEAF.get(key, _P))
    y = CASES[key][3]                                      # the learner's labels, a numpy array called y
    loss_fn = ENGINE[key]()
    with adv.GradientTape(persistent=True) as tape:
        scores = z * 1.0
        loss = loss_fn(y, scores)
    tr = tape.trace(loss, [z])
    text = tr.to_dot("backward")
    label = _edge_into(text, _node(tr, "scores").id)
    assert label.startswith(_renamed(said, name, "scores")), label
    in_torch, _, _ = _torch_case(key)
    torch_said = _edge_into(in_torch.to_dot("backward"), _node(in_torch, name).id)
    assert _formula(label) == _renamed(_formula(torch_said), name, "scores")
    assert np.allclose(np.asarray(tape.gradient(loss, scores)), math(_LEAF.get(key, _P), y), atol=1e-6)


def test_a_sum_reduction_drops_the_division_on_both_sides():
    z = torch.tensor(_Z, requires_grad=True)
    y = torch.tensor(_Y_INT)
    with adv.torch.record() as rec:
        logits = z * 1.0
        loss = F.cross_entropy(logits, y, reduction="sum")
    tr = rec.trace(loss)
    label = _edge_into(tr.to_dot("backward"), _node(tr, "logits").id)
    assert label.startswith("ḡ_logits = (softmax(logits) − onehot(y))") and "/ N" not in label
    (g,) = torch.autograd.grad(loss, logits)
    assert np.allclose(g.numpy(), _softmax(_Z) - _onehot(_Y_INT, 3))
    v = adv.Variable(_Z)
    y = _Y_INT.copy()
    with adv.GradientTape() as tape:
        logits = v * 1.0
        loss = adv.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")(y, logits)
    tr = tape.trace(loss, [v])
    assert _edge_into(tr.to_dot("backward"), _node(tr, "logits").id).split("\\n")[0] == label.split("\\n")[0]


def test_the_loss_formula_is_in_the_svg():
    tr, _, _ = _torch_case("cross_entropy")
    svg = tr.to_svg("backward")
    assert "softmax(logits) − onehot(y)" in svg and "factor not shown" not in svg


class Net(nn.Module):
    """The PyTorch tutorials' two-layer classifier, with the hidden layer named in ``forward``."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        logits = self.fc2(h)
        return logits


class Chained(Net):
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_a_modules_output_is_named_by_the_line_that_called_it():
    torch.manual_seed(0)
    x_batch = np.random.default_rng(1).normal(size=(5, 4))        # float64, converted on the calling line
    y = torch.tensor([0, 1, 2, 0, 1])
    net = Net()
    with adv.torch.record() as rec:
        out = net(torch.from_numpy(x_batch).float())
        loss = F.cross_entropy(out, y)
    text = rec.trace(loss, net).to_dot("backward")
    assert 'label="fc2 (Linear)\\n→ (5, 3) float32\\nḡ_logits = ' in text      # logits = self.fc2(h)
    assert "ḡ_h = ḡ_logits · W" in text and "ḡ_logits = (softmax(logits) − onehot(y)) / N" in text
    assert 'label="out\\n' not in text                   # x.float() on that line is not what it assigns
    chained = Chained()
    with adv.torch.record() as rec:
        out = chained(torch.from_numpy(x_batch).float())  # forward returns self.fc2(…): the caller names it
        loss = F.cross_entropy(out, y)
    text = rec.trace(loss, chained).to_dot("backward")
    assert 'label="fc2 (Linear)\\n→ (5, 3) float32\\nḡ_out = ' in text
    assert "ḡ_out = (softmax(out) − onehot(y)) / N" in text and "ḡ_fc1 = " in text
    with adv.torch.record() as rec:
        loss = F.cross_entropy(chained(torch.from_numpy(x_batch).float()), y)     # the line goes on: not "loss"
    text = rec.trace(loss, chained).to_dot("backward")
    assert 'ḡ_fc2 = ' in text and "ḡ_loss = (softmax" not in text


def test_torch_linears_weight_edge_uses_torchs_layout_and_the_numbers_fit():
    """``y = x·Wᵀ + b`` with W of shape (out, in): ``ḡ_W = ḡ_yᵀ · x``, ``ḡ_x = ḡ_y · W`` — not Keras' ``xᵀ · ḡ_y``."""
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(5, 4)
    y = torch.tensor([0, 1, 2, 0, 1])
    with adv.torch.record() as rec:
        logits = net(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
    tr = rec.trace(loss, net)
    text = tr.to_dot("backward")
    w = _node(tr, "fc2.weight")
    assert tuple(w.shape) == (3, 8)
    assert _edge_into(text, w.id).startswith("ḡ_W = ḡ_logitsᵀ · x  (W is (out, in) in torch)")
    assert "ḡ_W = xᵀ" not in text and "f′(z)" not in text
    h = torch.relu(net.fc1(x)).detach()
    g_logits = torch.tensor((_softmax(logits.detach().double().numpy()) - _onehot(y.numpy(), 3)) / 5)
    assert torch.allclose(net.fc2.weight.grad.double(), g_logits.T @ h.double(), atol=1e-6)
    (g_h,) = torch.autograd.grad(loss, [rec.ops[next(op.index for op in rec.ops if op.assigned == "h")].outputs[0]],
                                 retain_graph=True)
    assert torch.allclose(g_h.double(), g_logits @ net.fc2.weight.detach().double(), atol=1e-6)


def test_an_unnamed_float64_batch_cast_by_the_first_layer_is_drawn_as_input():
    model = adv.Sequential([adv.layers.Dense(8, activation="relu"), adv.layers.Dense(3)])
    y = np.array([0, 1, 2, 0, 1])
    with adv.GradientTape() as tape:
        out = model(np.random.default_rng(0).normal(size=(5, 4)))        # float64: Dense casts it to float32
        loss = adv.losses.SparseCategoricalCrossentropy(from_logits=True)(y, out)
    tr = tape.trace(loss, model.trainable_variables)
    node = _node(tr, "input")
    assert node.kind == "constant" and tuple(node.shape) == (5, 4)
    text = tr.to_dot("backward")
    assert f'"bwd_{node.id}" [' in text and 'label="input\\n(5, 4) float32' in text     # its own node
    first = model.layers[0].name                                    # `dense`, or `dense_14` after other tests
    assert _edge_into(text, node.id).startswith(f"ḡ_input = (ḡ_{first} ⊙ f′(z)) · Wᵀ")
    assert "constant" not in _edge_into(text, node.id) and 'label="constant' not in text
    assert "ḡ_out = (softmax(out) − onehot(y)) / N" in text


def test_an_unnamed_torch_input_reads_input():
    torch.manual_seed(0)
    net = Net()
    batches = [torch.randn(5, 4)]                          # held in a list: no variable names the tensor
    with adv.torch.record() as rec:
        logits = net(batches[0])
        loss = logits.pow(2).mean()
    tr = rec.trace(loss, net)
    text = tr.to_dot("backward")
    node = next(n for n in tr.nodes if n.kind == "constant")
    assert node.title == "input" and 'label="input\\n(5, 4) float32' in text
    assert _edge_into(text, node.id).startswith("ḡ_input = ḡ_fc1 · W")
    assert 'label="constant' not in text


def test_tensorflows_keras_loss_states_the_same_formula():
    """The TensorFlow bridge draws Keras' own loss box (its ops are ``SparseSoftmaxCrossEntropyWithLogits``,
    ``Sum``, ``DivNoNan``): the same words, divided by N as the mean over the batch."""
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    x = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    y = np.array([0, 1, 2, 0, 1])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with adv.tf.record() as rec:
        with tf.GradientTape():
            logits = model(x)
            loss = loss_fn(y, logits)
    tr = rec.trace(loss)
    text = tr.to_dot("backward")
    edges = [ln.split('label="', 1)[1].split('"', 1)[0] for ln in text.splitlines() if " -> " in ln and 'label="' in ln]
    said = next(e for e in edges if e.startswith("ḡ_logits = (softmax"))       # the loss box's edge to dense
    assert _formula(said) == _formula(CASES["cross_entropy"][4]) and "N: the batch size" in said
    assert "no gradient: labels" in edges and not any("op by op" in e for e in edges)


def test_label_smoothing_or_class_weights_get_no_formula_that_would_be_wrong():
    """``F.cross_entropy(..., label_smoothing=0.1)`` sends back ``softmax − smoothed labels``: the plain text would
    be wrong, so the edge says no formula rather than a false one (and the module box says it goes op by op)."""
    z = torch.tensor(_Z, requires_grad=True)
    y = torch.tensor(_Y_INT)
    with adv.torch.record() as rec:
        logits = z * 1.0
        loss = F.cross_entropy(logits, y, label_smoothing=0.1)
    tr = rec.trace(loss)
    assert _edge_into(tr.to_dot("backward"), _node(tr, "logits").id).startswith("factor not shown for torch.")
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64))
    with adv.torch.record() as rec:
        logits = z * 1.0
        loss = criterion(logits, y)
    tr = rec.trace(loss)
    said = _edge_into(tr.to_dot("backward"), _node(tr, "logits").id)
    assert "softmax" not in said and "op by op" in said


def test_a_loss_per_sample_sends_each_samples_gradient_through_its_formula():
    """``F.cross_entropy(..., reduction="none")`` gives one loss per row; the learner averages them after. The edge
    back to the logits says ``ḡ_y ⊙ (softmax − onehot)``: each row's factor times that row's ḡ, with no division
    (a cross-entropy row is a sum over classes, not a mean). With class weights there is still no text."""
    z = torch.tensor(_Z, requires_grad=True)
    y = torch.tensor(_Y_INT)
    with adv.torch.record() as rec:
        logits = z * 1.0
        per_sample = F.cross_entropy(logits, y, reduction="none")
        loss = per_sample.mean()
    tr = rec.trace(loss)
    said = _edge_into(tr.to_dot("backward"), _node(tr, "logits").id)
    assert said.startswith("ḡ_logits = ḡ_y ⊙ (softmax(logits) − onehot(y))"), said        # y: the op's output
    assert "/ n" not in said and "/ N" not in said
    with adv.torch.record() as rec:
        logits = z * 1.0
        per_sample = F.cross_entropy(logits, y, reduction="none", weight=torch.tensor([1.0, 2.0, 1.0],
                                                                                      dtype=torch.float64))
        loss = per_sample.mean()
    tr = rec.trace(loss)
    assert "softmax" not in _edge_into(tr.to_dot("backward"), _node(tr, "logits").id)
