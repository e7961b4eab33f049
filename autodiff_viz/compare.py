"""Exercise mode: compare hand-derived gradients with the tape's, along the backward pass."""
from __future__ import annotations
