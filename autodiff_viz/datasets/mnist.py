"""MNIST: 70,000 grayscale 28×28 images of handwritten digits (``keras.datasets.mnist``).

License: Yann LeCun and Corinna Cortes hold the copyright of MNIST, a
derivative of NIST's data, available under CC BY-SA 3.0.
"""
from __future__ import annotations

from . import _download
from ._safe_pickle import load_npz

URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


def load_data(path="mnist.npz"):
    """``(x_train, y_train), (x_test, y_test)``, as ``keras.datasets.mnist.load_data``.

    Args:
        path: where to keep the file, relative to the cache folder
            (``~/.keras/datasets`` unless ``ADV_DATASETS_DIR`` says otherwise),
            or an absolute path to a copy you placed yourself.

    Returns:
        ``x_train``: uint8 ``(60000, 28, 28)``, pixel values 0–255;
        ``y_train``: uint8 ``(60000,)``, digits 0–9; ``x_test``: uint8
        ``(10000, 28, 28)``; ``y_test``: uint8 ``(10000,)``.
    """
    arrays = load_npz(_download.fetch("mnist.load_data", URL, SHA256, path=path))
    return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"])
