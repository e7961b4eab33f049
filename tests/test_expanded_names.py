"""``expanded=`` takes the names a learner knows, and refuses a name that fits no box (issue 42).

A learner opens a part of a PyTorch model by the path ``print(model)`` and ``named_modules()`` show
(``encoder.layers.0.attn``), not by the trace's internal key (``net/encoder/encoder.layers/…``). Before this, a
name that was not a key was ignored without a word and the picture came back with the *whole model* folded into one
box — it looked like a broken figure. Now a module path, a layer's name or the end of a key opens the box it names;
a name fitting no box, or boxes of different parts, is refused with the closest keys.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import autodiff_viz as adv  # noqa: E402
from autodiff_viz.views import folding  # noqa: E402


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return torch.softmax(self.query(x) @ self.key(x).transpose(-1, -2), -1) @ x


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.ff = Attn(), nn.Linear(4, 4)

    def forward(self, x):
        return x + self.ff(torch.relu(self.attn(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(1))


@pytest.fixture(scope="module")
def traced():
    torch.manual_seed(0)
    net = Net()
    x, y = torch.randn(2, 3, 4), torch.tensor([0, 1])
    with adv.torch.record() as rec:
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
    return rec.trace(loss, net)


def _titles(lay):
    return [b.title for b in sorted(lay.boxes.values(), key=lambda b: b.order)]


def _key(trace, ending):
    return next(k for k in trace.groups() if k.endswith(ending))


def test_a_module_path_opens_the_same_boxes_as_its_key(traced):
    path = "layers.1.attn.query"                       # as named_modules() prints it
    by_name = folding.layout(traced, expanded={path})
    by_key = folding.layout(traced, expanded={_key(traced, "/" + path)})
    assert _titles(by_name) == _titles(by_key)
    assert "layers.1.attn.query.weight" in _titles(by_name)     # opened down to the projection's weight
    assert traced.to_dot("backward", expanded={path}) == traced.to_dot("backward", expanded={_key(traced, path)})


def test_an_opened_layer_titles_its_op_by_the_module_not_the_library_function(traced):
    titles = _titles(folding.layout(traced, expanded={"layers.1.attn.query"}))
    assert "query" in titles
    assert "linear" not in titles


def test_the_end_of_a_key_names_its_box(traced):
    assert _titles(folding.layout(traced, expanded={"layers/layers.0"})) == \
        _titles(folding.layout(traced, expanded={_key(traced, "/layers.0")}))


def test_a_name_that_fits_no_box_is_refused_with_the_closest_keys(traced):
    with pytest.raises(ValueError, match=r"no box of this trace is called 'layers\.1\.atn'.*"
                                         r"Closest: .*layers\.1\.attn'"):
        traced.to_dot("backward", expanded={"layers.1.atn"})


def test_a_name_of_two_different_boxes_is_refused_and_both_are_named():
    torch.manual_seed(0)
    a, b = nn.Sequential(nn.Linear(3, 3)), nn.Sequential(nn.Linear(3, 1))
    with adv.torch.record() as rec:
        loss = b(torch.relu(a(torch.randn(2, 3)))).sum()
    trace = rec.trace(loss)
    with pytest.raises(ValueError, match=r"'0' names 2 different boxes: '.*sequential/0', '.*sequential_1/0'"):
        trace.to_dot("backward", expanded={"0"})
