"""Layers: regularization (Keras 3 names, defaults and weight layouts)."""
from __future__ import annotations

__all__: list = []
