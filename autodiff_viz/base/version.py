"""The package's version: the one written in ``pyproject.toml``, read where it is recorded.

An installed copy (a wheel, an sdist, ``pip install -e .``) carries it in its
distribution metadata, which :mod:`importlib.metadata` reads. A source
checkout put on ``sys.path`` without installing has no metadata, so the
version is read from the ``pyproject.toml`` beside the package instead. It
lives in ``base`` so that ``saving`` (which writes it into every ``.keras``
file) reads it from below, not from the package face.
"""
from __future__ import annotations

import os
import re
from importlib import metadata

DISTRIBUTION = "autodiff_viz"


def _from_checkout() -> str:
    """``version = "…"`` of the ``[project]`` table in the checkout's ``pyproject.toml``; ``"0+unknown"`` if
    there is none (a copy of the package folder alone)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "pyproject.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return "0+unknown"
    project = text.split("[project]", 1)[-1].split("\n[", 1)[0]
    found = re.search(r'^version\s*=\s*"([^"]+)"', project, re.M)
    return found.group(1) if found else "0+unknown"


def package_version() -> str:
    """The installed distribution's version, or the checkout's when the package is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return _from_checkout()


__version__ = package_version()
