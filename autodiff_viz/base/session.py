"""The session: default names, the default float dtype, and the generator behind every unseeded draw.

Keras keeps these in its backend (``keras.backend.clear_session``,
``keras.config.floatx``, ``keras.utils.set_random_seed``); here they sit at
the bottom of the house so that the ops, the layers, the losses and the
random module read one copy.

* :func:`unique_name` — ``dense``, ``dense_1`` … per prefix;
  :func:`clear_session` starts them again.
* :func:`floatx` / :func:`set_floatx` — the dtype new layers and new
  floating tensors get when none is given (``"float32"``, as Keras).
* :func:`generator` / :func:`set_random_seed` — the generator that weight
  initializers, ``fit``'s shuffling and unseeded dropout draw from;
  :func:`seeded` swaps in a seeded one for a block.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict

import numpy as np

_uids: defaultdict = defaultdict(int)
_floatx = ["float32"]
_rng = np.random.default_rng()


def unique_name(prefix: str) -> str:
    """``dense``, then ``dense_1``, ``dense_2`` ... for each prefix in this session."""
    n = _uids[prefix]
    _uids[prefix] += 1
    return prefix if n == 0 else f"{prefix}_{n}"


def clear_session() -> None:
    """Restart default names at ``dense``, ``dense_1`` ... (``keras.backend.clear_session``)."""
    _uids.clear()


def floatx() -> str:
    """The default dtype of new layers: ``"float32"``, as in Keras."""
    return _floatx[0]


def set_floatx(dtype: str) -> None:
    """Set the default dtype of new layers (``"float64"`` to compare with numpy exactly)."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise ValueError(f"set_floatx: {dtype!r} is not a floating dtype; use 'float32' or 'float64'.")
    _floatx[0] = dt.name


def set_random_seed(seed: int) -> None:
    """Seed the generator behind weight initialisation and ``fit`` shuffling."""
    global _rng
    _rng = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The generator every initializer (and ``fit`` without a seed) draws from."""
    return _rng


@contextlib.contextmanager
def seeded(seed: int):
    """Draw from a generator seeded with ``seed`` inside the block; the session's generator is restored after."""
    global _rng
    saved, _rng = _rng, np.random.default_rng(seed)
    try:
        yield _rng
    finally:
        _rng = saved
