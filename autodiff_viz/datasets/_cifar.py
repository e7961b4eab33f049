"""Reading the CIFAR archives (``cifar-10-python.tar.gz``, ``cifar-100-python.tar.gz``) in place.

Each archive holds pickled batches: a dict with ``b"data"`` (a uint8 array
of shape ``(n, 3072)``: 1024 red, then green, then blue values of a 32×32
image) and the labels as a list. The members are read straight from the
archive (nothing is extracted, so no path in it can write anywhere) and
unpickled by :class:`~._safe_pickle.RestrictedUnpickler`.
"""
from __future__ import annotations

import tarfile

import numpy as np

from . import _safe_pickle


def read_batches(who: str, archive: str, names: list, label_key: str) -> dict:
    """``{name: (images (n, 32, 32, 3) uint8, labels (n,))}`` for the members whose file name is in
    ``names``; a missing member or an unexpected content is an error naming the archive."""
    found = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            base = member.name.rsplit("/", 1)[-1]
            if member.isfile() and base in names:
                found[base] = _batch(who, tar.extractfile(member).read(), label_key, f"{archive}:{member.name}")
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"{who}: {archive} has no member {missing[0]!r}; it is not the CIFAR archive Keras uses. "
                         "Delete it to download it again.")
    return found


def _batch(who, raw: bytes, label_key: str, where: str):
    content = _safe_pickle.loads(raw, encoding="bytes")
    if not isinstance(content, dict):
        raise ValueError(f"{who}: {where} holds {type(content).__name__}, not a dict of images and labels.")
    content = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in content.items()}
    data, labels = content.get("data"), content.get(label_key)
    if not isinstance(data, np.ndarray) or data.ndim != 2 or data.shape[1] != 3072 or labels is None \
            or len(labels) != len(data):
        raise ValueError(f"{who}: {where} does not hold 'data' of shape (n, 3072) with {label_key!r} for each "
                         "image; the archive is not the one Keras uses. Delete it to download it again.")
    images = data.astype(np.uint8, copy=False).reshape(len(data), 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), np.asarray(labels)
