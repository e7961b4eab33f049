"""How the diagnosis names an op whose value left the tape on its line, and TrainingView's weighted probe."""
import math

import numpy as np
import pytest
import torch

import autodiff_viz as adv
from autodiff_viz.views.widgets import TrainingView
from autodiff_viz.views.widgets.training import layer_gradient_norms


# ---------------------------------------------------------------------------
# explain's names
# ---------------------------------------------------------------------------
def test_explain_does_not_name_an_op_after_the_line_its_value_left_the_tape_on():
    """``loss = loss - math.log(p[i])`` assigns a Python number: the getitem is not 'loss' (the trace's rule)."""
    logits = adv.Variable([[0.5, -0.2, 0.1]], name="logits")
    with adv.GradientTape(persistent=True) as tape:
        p = adv.nn.softmax(logits)[0]
        loss = 0.0
        for i in range(2):
            loss = loss - math.log(p[i])
        h = adv.tanh(p)
    getitems = [n.output() for n in tape.nodes if n.rule.name == "getitem"]
    assert len(getitems) == 3                          # [0] on the softmax line, then p[0], p[1] in the loop
    for g in getitems[1:]:
        text = tape.explain(g, logits).message
        assert "'loss'" not in text and "the output of 'getitem'" in text, text
    assert "'p' (the output of getitem" in tape.explain(getitems[0], logits).message   # nothing left there
    assert "'h' (the output of tanh" in tape.explain(h, logits).message
    assert tape.explain(loss, logits).reason == "left_the_tape"


# ---------------------------------------------------------------------------
# TrainingView's probe with sample weights
# ---------------------------------------------------------------------------
def weighted_regression():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(12, 3))
    y = rng.normal(size=(12, 2))
    w = rng.uniform(0.0, 2.0, size=12)
    w[:4] = 0.0
    model = adv.Sequential([adv.layers.Dense(4, activation="tanh", name="hidden"),
                            adv.layers.Dense(2, name="out")])
    model.compile(optimizer=adv.optimizers.SGD(0.05), loss="mse")
    model(x)
    return model, x, y, w


def torch_norms(model, x, y, w):
    """Keras' weighted mse, Σ_i w_i · mean_j (ŷ_ij − y_ij)² / batch size, differentiated by PyTorch."""
    hidden, out = model.layers
    W1, b1, W2, b2 = (torch.tensor(v.numpy(), dtype=torch.float64, requires_grad=True) for v in
                      (hidden.kernel, hidden.bias, out.kernel, out.bias))
    pred = torch.tanh(torch.tensor(x) @ W1 + b1) @ W2 + b2
    per_sample = ((pred - torch.tensor(y)) ** 2).mean(dim=1)
    loss = (per_sample * (torch.ones(len(x), dtype=torch.float64) if w is None else torch.tensor(w))).sum() / len(x)
    loss.backward()
    return {"hidden": math.hypot(W1.grad.norm().item(), b1.grad.norm().item()),
            "out": math.hypot(W2.grad.norm().item(), b2.grad.norm().item())}


def test_probe_norms_with_sample_weights_follow_the_weighted_loss():
    model, x, y, w = weighted_regression()
    weighted = layer_gradient_norms(model, x, y, w)
    plain = layer_gradient_norms(model, x, y)
    for name in ("hidden", "out"):
        assert weighted[name] == pytest.approx(torch_norms(model, x, y, w)[name], rel=1e-5)
        assert plain[name] == pytest.approx(torch_norms(model, x, y, None)[name], rel=1e-5)
        assert abs(weighted[name] - plain[name]) > 1e-3 * plain[name]
    with adv.GradientTape() as tape:                   # by hand: the tape over compute_loss with the weights
        loss = model.compute_loss(y, model(x), w)
    grads = tape.gradient(loss, model.layers[1].trainable_variables)
    assert weighted["out"] == pytest.approx(math.sqrt(sum(float(np.sum(g.numpy() ** 2)) for g in grads)))


def test_training_view_measures_its_probe_with_the_weights_it_was_given():
    model, x, y, w = weighted_regression()
    view = TrainingView(probe=(x, y, w))
    plain = TrainingView(probe=[x, y])                 # a list, as Keras' data tuples allow
    model.fit(x, y, sample_weight=w, epochs=2, batch_size=6, callbacks=[view, plain], verbose=0)
    assert len(view.grad_history) == 2
    assert view.grad_history[-1] == pytest.approx(torch_norms(model, x, y, w), rel=1e-5)
    assert plain.grad_history[-1] == pytest.approx(torch_norms(model, x, y, None), rel=1e-5)


@pytest.mark.parametrize("probe, got", [(np.zeros((2, 3)), "got ndarray"), ((np.zeros(3),), "got 1 item."),
                                        ((1, 2, 3, 4), "got 4 items")])
def test_a_probe_that_is_not_a_data_tuple_is_refused_at_construction(probe, got):
    with pytest.raises(ValueError) as err:
        TrainingView(probe=probe)
    text = str(err.value)
    assert text.startswith("TrainingView: probe must be (x, y) or (x, y, sample_weight)") and got in text
    assert "probe=(x[:64], y[:64], w[:64])" in text


def test_explain_names_only_the_op_whose_output_the_line_assigns():
    """``h = a @ a + c`` assigns the sum: the product is an intermediate of the line, not 'h'."""
    a = adv.Variable(np.ones((2, 2)), name="a")
    c = adv.Variable(np.ones((2, 2)), name="c")
    h = a @ a + c
    with adv.GradientTape() as tape:
        loss = adv.sum(h * 2.0)
    text = tape.explain(loss, a).message
    assert "output of 'matmul'" in text and "'h' (the output of matmul" not in text, text
    with adv.GradientTape(persistent=True) as tape:
        k = adv.tanh(a @ c)
        total = adv.sum(k)
    product = next(n.output() for n in tape.nodes if n.rule.name == "matmul")
    assert "'k' (the output of tanh" in tape.explain(k, c).message
    assert "'k'" not in tape.explain(product, c).message.split(" is ")[0]
    assert tape.explain(total, c).reason == "connected"


def test_explain_names_after_the_line_only_the_result_of_a_layer_call():
    """``fake = generator(z)``: the generator's last op is 'fake'; the ops inside it are named by op and layer."""
    gen = adv.Sequential([adv.layers.Dense(3, activation="tanh", dtype="float64"),
                          adv.layers.Dense(2, dtype="float64")], name="generator")
    z = adv.constant(np.ones((4, 2)))
    with adv.GradientTape(persistent=True) as tape:
        fake = gen(z)
        loss = adv.sum(fake * fake)
    kernel = gen.layers[0].kernel

    def subject(t):
        return tape.explain(t, kernel).message.split(" is ")[0]

    assert "'fake' (the output of add" in subject(fake)
    inner = [n.output() for n in tape.nodes if n.scope.startswith("generator/")][:-1]
    assert [n.rule.name for n in tape.nodes][:4] == ["matmul", "add", "tanh", "matmul"]
    for t in inner:
        words = subject(t)
        assert "'fake'" not in words and " in 'generator/dense" in words, words
    assert tape.explain(loss, kernel).reason == "connected"


def test_explain_does_not_give_an_inner_call_the_name_of_the_line():
    """``y = d(d(x))``: the inner call's result goes to the outer call; only the outer one is stored as 'y'."""
    d = adv.layers.Dense(2, dtype="float64")
    x = adv.Variable(np.ones((2, 2)), name="x")
    with adv.GradientTape(persistent=True) as tape:
        y = d(d(x))
    adds = [n.output() for n in tape.nodes if n.rule.name == "add"]
    assert len(adds) == 2
    assert "'y'" not in tape.explain(adds[0], x).message.split(" is ")[0]
    assert "'y' (the output of add" in tape.explain(adds[1], x).message.split(" is ")[0]
