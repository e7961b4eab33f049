"""Which framework a bridge needs, and an ImportError that says what to install when it is missing or too old.

The bridges declare ranges, never exact versions (docs/install.md): ``[torch]``
asks for ``torch>=2.4`` and keeps a torch already installed; the TensorFlow
bridge asks for nothing at install time, because ``tensorflow`` and
``tensorflow-cpu`` are two distributions of one package and naming either
would put a second copy over the other. So each bridge checks, when it is
imported, the version it finds, and its error names the range to install.
This module imports no framework.
"""
from __future__ import annotations

import re
from importlib import metadata


def release(version: str) -> tuple:
    """The leading numbers of a version string: ``"2.13.0+cpu"`` → ``(2, 13, 0)``, ``"3.0.0rc1"`` → ``(3, 0, 0)``."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if not digits:
            break
        numbers.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(numbers)


def installed(*distributions: str) -> list:
    """``[(distribution, version), ...]`` for each of ``distributions`` that is installed."""
    found = []
    for name in distributions:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            pass
    return found


def too_old(bridge: str, what: str, version: str, floor: tuple, install: str) -> ImportError | None:
    """An ImportError for ``bridge`` when ``what`` at ``version`` is older than ``floor``, else None.

    Args:
        bridge: the module that cannot load (``"autodiff_viz.tf"``).
        what: the framework as the learner knows it, with its distribution (``"TensorFlow (tensorflow-cpu)"``).
        version: the version found (its ``__version__``).
        floor: the oldest release the bridge runs with, e.g. ``(2, 16)``.
        install: the command that fixes it.
    """
    if release(version)[:len(floor)] >= floor:
        return None
    return ImportError(f"{bridge} needs {what} {'.'.join(map(str, floor))} or newer; this environment has "
                       f"{version}. {install} (see docs/install.md).")
