"""Small checks every writer of files shares (weights, models, traces, plots), made before anything is written."""
from __future__ import annotations

import os


def check_folder(what: str, path: str) -> None:
    """Refuse, before anything is computed or written, a file ``path`` whose folder does not exist."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{what}: the folder {folder!r} does not exist, so {path!r} cannot be written. "
                                f"Create it first (os.makedirs({folder!r}, exist_ok=True)) or save to an "
                                "existing folder.")
