"""The libraries compared, how to load each one in float64 on a fixed number of threads.

numpy and autodiff_viz are always there; PyTorch, HIPS autograd and JAX are
optional peers. ``load`` raises :class:`Missing` with the install command
when a peer is absent, and the benchmark skips it with that note.
"""
from __future__ import annotations

import importlib

LIBRARIES = ("numpy", "autodiff_viz", "torch", "autograd", "jax")

INSTALL = {
    "torch": "pip install torch==2.13.0   (the CPU build; other versions download gigabytes)",
    "autograd": "pip install autograd",
    "jax": "pip install jax jaxlib",
}


class Missing(Exception):
    """A peer library is not installed; the message says how to install it."""


def load(name: str, threads: int):
    """Import ``name`` and set it up for float64 on ``threads`` threads; returns the module."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        hint = f"; to compare with it: {INSTALL[name]}" if name in INSTALL else ""
        raise Missing(f"{name} is not installed ({exc}){hint}") from None
    if name == "torch":
        module.set_num_threads(threads)
        module.set_default_dtype(module.float64)
    elif name == "jax":
        module.config.update("jax_enable_x64", True)
        module.config.update("jax_platforms", "cpu")
    return module


def version(name: str) -> str | None:
    """The installed version of ``name`` (from its package metadata), or None."""
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
