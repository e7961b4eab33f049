"""A recorded model's names are the ones its tree gives it *now*, though a training loop's recordings name a model
once and copy the names while its tree does not change (``autodiff_viz/torch/tree.py``).

Each test records a step, changes the model the way a learner or a library does — a module added, replaced or
deleted (``nn.Sequential.__delitem__`` rewrites its dict directly, no hook runs), a weight replaced, a
parametrization registered (which swaps the module's class) — records again and compares every name with a
recording made with nothing remembered.
"""
from __future__ import annotations

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.torch import tree  # noqa: E402


def _names(net, x):
    """Every name a recording of one step of ``net`` gives: module paths, classes by segment, parameter names."""
    with adv.torch.record() as rec:
        net(x).pow(2).mean().backward()
    return ({rec._module_names[id(m)] for m in net.modules()}, dict(rec.module_kinds),
            {n: rec._param_names.get(id(p)) for n, p in net.named_parameters()})


def _fresh(net, x):
    """The names with nothing remembered (the first recording of a model)."""
    tree._KNOWN.clear()
    return _names(net, x)


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2))


X = torch.randn(3, 4)


def test_an_unchanged_model_is_named_as_the_first_time_and_its_tree_is_walked_once():
    net = _net()
    first = _fresh(net, X)
    assert net in tree._KNOWN
    assert _names(net, X) == first
    assert first[2]["2.0.weight"] == "2.0.weight" and first[1]["2.1"] == "Tanh"


@pytest.mark.parametrize("change", ["add", "replace", "delete", "weight", "parametrize", "rename"])
def test_a_changed_tree_is_named_afresh(change):
    net = _net()
    _names(net, X)
    if change == "add":
        net.append(nn.Sigmoid())
    elif change == "replace":
        net[2][1] = nn.GELU()
    elif change == "delete":
        del net[1]
    elif change == "weight":
        net[0].weight = nn.Parameter(torch.randn(8, 4))
    elif change == "parametrize":
        class Scaled(nn.Module):
            def forward(self, w):
                return 2 * w
        torch.nn.utils.parametrize.register_parametrization(net[0], "weight", Scaled())
    else:
        net._modules = {("first" if k == "0" else k): v for k, v in net._modules.items()}
    got = _names(net, X)
    assert got == _fresh(net, X)
    kinds, params = got[1], got[2]
    if change == "add":
        assert kinds["4"] == "Sigmoid"
    elif change == "replace":
        assert kinds["2.1"] == "GELU"
    elif change == "delete":
        assert kinds["1"] == "Sequential" and "2.0.weight" not in params and params["1.0.weight"] == "1.0.weight"
    elif change == "weight":
        assert params["0.weight"] == "0.weight"
    elif change == "parametrize":
        assert params["0.parametrizations.weight.original"] == "0.parametrizations.weight.original"
    else:
        assert kinds["first"] == "Linear" and params["first.weight"] == "first.weight"


def test_two_models_in_one_recording_are_still_kept_apart():
    """Only a recording's first model is named from memory; a second model of the same class is named against
    the first (``sequential_1``), and weights both call ``0.weight`` take their variables' names."""
    encoder, decoder = _net(), _net()
    for _ in range(2):
        with adv.torch.record() as rec:
            decoder(encoder(X)[:, :1].repeat(1, 4)).sum().backward()
        assert rec.name_of(encoder[0].weight) == "encoder.0.weight"
        assert rec.name_of(decoder[0].weight) == "decoder.0.weight"
        assert {"sequential", "sequential_1"} <= set(rec.module_kinds)


def test_remembering_a_model_does_not_keep_it_alive():
    net = _net()
    _names(net, X)
    gone = weakref.ref(net)
    del net
    gc.collect()
    assert gone() is None


def test_a_model_whose_class_is_unhashable_is_named_each_time():
    """A learner's class may define ``__eq__`` (and so lose ``__hash__``): it cannot be remembered, and is named
    afresh on every recording."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

        def __eq__(self, other):
            return isinstance(other, Net)

    net = Net()
    for _ in range(2):
        with adv.torch.record() as rec:
            net(X).sum().backward()
        assert rec.name_of(net.fc.weight) == "fc.weight" and rec.module_kinds["fc"] == "Linear"
