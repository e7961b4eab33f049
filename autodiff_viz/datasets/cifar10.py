"""CIFAR-10: 60,000 color 32×32 images in 10 classes (``keras.datasets.cifar10``).

Classes: 0 airplane, 1 automobile, 2 bird, 3 cat, 4 deer, 5 dog, 6 frog,
7 horse, 8 ship, 9 truck. The archive is kept as ``<cache>/cifar-10-python.tar.gz``
and read in place (see :mod:`._cifar`: its pickles are read with a restricted
unpickler that only rebuilds numpy arrays and plain containers).
"""
from __future__ import annotations

import numpy as np

from . import _cifar, _download

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
LABELS = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def load_data():
    """``(x_train, y_train), (x_test, y_test)``, as ``keras.datasets.cifar10.load_data`` (channels last):
    uint8 ``(50000, 32, 32, 3)``, uint8 ``(50000, 1)``, uint8 ``(10000, 32, 32, 3)``, uint8 ``(10000, 1)``."""
    who = "cifar10.load_data"
    archive = _download.fetch(who, URL, SHA256, path_arg=False)
    train_names = [f"data_batch_{i}" for i in range(1, 6)]
    batches = _cifar.read_batches(who, archive, train_names + ["test_batch"], "labels")
    x_train = np.concatenate([batches[n][0] for n in train_names])
    y_train = np.concatenate([batches[n][1] for n in train_names]).astype(np.uint8).reshape(-1, 1)
    x_test, y_test = batches["test_batch"]
    return (x_train, y_train), (x_test, y_test.astype(np.uint8).reshape(-1, 1))
