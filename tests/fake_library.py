"""Stands in for a third-party library in the why-None tests: its helpers carry their own grad mode."""
from __future__ import annotations

import torch


@torch.no_grad()
def project(x, weight):
    """A library helper decorated ``@torch.no_grad()`` (as inference helpers such as ``predict`` often are)."""
    out = x @ weight.t()
    return torch.tanh(out)
