"""Fashion-MNIST: 70,000 grayscale 28×28 images of 10 kinds of clothing (``keras.datasets.fashion_mnist``).

The four files are gzipped IDX files (Zalando's original format) kept in
``<cache>/fashion-mnist/``. Labels: 0 T-shirt/top, 1 Trouser, 2 Pullover,
3 Dress, 4 Coat, 5 Sandal, 6 Shirt, 7 Sneaker, 8 Bag, 9 Ankle boot.
License: MIT, copyright Zalando SE.
"""
from __future__ import annotations

import gzip

import numpy as np

from . import _download

BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILES = {     # file name -> SHA-256 published by Keras
    "train-labels-idx1-ubyte.gz": "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
    "train-images-idx3-ubyte.gz": "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
    "t10k-labels-idx1-ubyte.gz": "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    "t10k-images-idx3-ubyte.gz": "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
}
LABELS = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


def load_data():
    """``(x_train, y_train), (x_test, y_test)``, as ``keras.datasets.fashion_mnist.load_data`` (no
    arguments there either): uint8 ``(60000, 28, 28)``, uint8 ``(60000,)``, uint8 ``(10000, 28, 28)``,
    uint8 ``(10000,)``."""
    paths = {name: _download.fetch("fashion_mnist.load_data", BASE + name, sha, subdir="fashion-mnist",
                                   path_arg=False) for name, sha in FILES.items()}
    y_train = read_idx(paths["train-labels-idx1-ubyte.gz"], labels=True)
    x_train = read_idx(paths["train-images-idx3-ubyte.gz"], labels=False)
    y_test = read_idx(paths["t10k-labels-idx1-ubyte.gz"], labels=True)
    x_test = read_idx(paths["t10k-images-idx3-ubyte.gz"], labels=False)
    return (x_train, y_train), (x_test, y_test)


def read_idx(path: str, labels: bool) -> np.ndarray:
    """A gzipped IDX file: magic 2049 then the count for labels, 2051, count, rows, columns for images
    (big-endian int32 each), then the uint8 values."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    header = 8 if labels else 16
    fields = np.frombuffer(data[:header], dtype=">i4") if len(data) >= header else np.array([])
    magic = 2049 if labels else 2051
    if len(fields) < header // 4 or fields[0] != magic:
        raise ValueError(f"fashion_mnist.load_data: {path} is not an IDX {'label' if labels else 'image'} file "
                         f"(it should start with the number {magic}); delete it to download it again.")
    values = np.frombuffer(data, dtype=np.uint8, offset=header)
    shape = (int(fields[1]),) if labels else tuple(int(d) for d in fields[1:4])
    if values.size != int(np.prod(shape)):
        raise ValueError(f"fashion_mnist.load_data: {path} says it holds {shape} values but has {values.size}; "
                         "the file is damaged; delete it to download it again.")
    return values.reshape(shape)
