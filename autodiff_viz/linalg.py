"""``adv.linalg``: numpy's ``np.linalg`` functions, differentiable (rules in ``rules/linalg.py``)."""
from __future__ import annotations

__all__: list = []
