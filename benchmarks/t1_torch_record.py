"""T1 — the PyTorch bridge's recording overhead: a ResNet-18 forward+backward with and without ``record()``.

The network is ResNet-18's shape (a 7×7 stem, four stages of two basic
blocks with 64, 128, 256, 512 channels, batch norm, global pooling, a
linear head) on a batch of 8 RGB images of 64×64, float32, one thread: the
size of model a learner brings when asking why a gradient is None. Both
rows run ``loss.backward()``; the recorded one does it inside
``adv.torch.record()``. The goal is ≤ 1.3× the plain step. Before timing,
both rows' gradients of the first convolution's kernel are checked against
a plain PyTorch run (the recording must not change what autograd computes).
"""
from __future__ import annotations

import numpy as np

from .harness import Variant, max_relative_error

NAME = "T1"
TITLE = "PyTorch bridge: ResNet-18-sized forward+backward, batch 8, 64×64, float32 (ms per step)"
UNIT, SCALE = "ms", 1e3
CASES = ("fwd+bwd",)
BASELINE = ("torch", "fwd+bwd")
BATCH, SIDE = 8, 64


def unavailable():
    try:
        import torch  # noqa: F401
    except ImportError:
        return "PyTorch is not installed (pip install torch==2.13.0); skipped"
    return None


def data(quick: bool) -> dict:
    rng = np.random.default_rng(7)
    side = 32 if quick else SIDE
    return {"x": rng.normal(size=(BATCH, 3, side, side)).astype(np.float32),
            "y": rng.integers(0, 10, size=BATCH)}


def _resnet18(torch, num_classes=10):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


def _setup(torch, d):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)      # the same initial weights in every worker
    try:
        torch.manual_seed(0)
        model = _resnet18(torch)
    finally:
        torch.set_default_dtype(old)
    x, y = torch.as_tensor(d["x"]), torch.as_tensor(d["y"])
    return model, x, y


def _step(torch, model, x, y):
    model.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return model[0].weight.grad.detach().double().numpy()


def reference(d) -> list:
    import torch
    model, x, y = _setup(torch, d)
    return [_step(torch, model, x, y)]


def check_reference() -> float:
    """PyTorch's gradient of a small conv + batch-norm + linear net against finite differences (float64)."""
    import torch

    from .harness import finite_difference
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 2)).double()
    x = torch.randn(2, 2, 4, 4, dtype=torch.float64)
    w0 = net[0].weight.detach().numpy().copy()

    def loss_at(w):
        with torch.no_grad():
            net[0].weight.copy_(torch.as_tensor(w))
            return net(x).pow(2).sum().item()

    numeric = finite_difference(loss_at, [w0])
    with torch.no_grad():
        net[0].weight.copy_(torch.as_tensor(w0))
    net.zero_grad()
    net(x).pow(2).sum().backward()
    return max_relative_error([net[0].weight.grad.numpy()], numeric)


def variants(lib: str, torch, d) -> dict:
    if lib != "torch":
        return {}
    import autodiff_viz as adv
    import autodiff_viz.torch  # noqa: F401
    model, x, y = _setup(torch, d)

    def plain():
        return _step(torch, model, x, y)

    def recorded():
        with adv.torch.record():
            return _step(torch, model, x, y)

    return {"torch": Variant({"fwd+bwd": plain}, {"fwd+bwd": lambda: [plain()]},
                             note="PyTorch eager, loss.backward()"),
            "torch + adv.torch.record()": Variant({"fwd+bwd": recorded}, {"fwd+bwd": lambda: [recorded()]},
                                                  note="the same step recorded (ops, lines, module scopes)")}
