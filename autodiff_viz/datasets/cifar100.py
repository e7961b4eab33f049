"""CIFAR-100: 60,000 color 32×32 images in 100 fine classes grouped in 20 coarse ones
(``keras.datasets.cifar100``). Kept as ``<cache>/cifar-100-python.tar.gz``, read in place as CIFAR-10's."""
from __future__ import annotations

from . import _cifar, _download

URL = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
SHA256 = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"


def load_data(label_mode="fine"):
    """``(x_train, y_train), (x_test, y_test)``, as ``keras.datasets.cifar100.load_data``.

    Args:
        label_mode: ``"fine"`` (100 classes, 0–99) or ``"coarse"`` (20 superclasses).

    Returns:
        uint8 images ``(50000, 32, 32, 3)`` and ``(10000, 32, 32, 3)``; labels
        ``(50000, 1)`` and ``(10000, 1)`` of dtype int64 (what Keras returns:
        its labels come from a list; its docstring says uint8).
    """
    who = "cifar100.load_data"
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f"{who}: label_mode must be 'fine' (100 classes) or 'coarse' (20 superclasses), got "
                         f"{label_mode!r}.")
    archive = _download.fetch(who, URL, SHA256, path_arg=False)
    batches = _cifar.read_batches(who, archive, ["train", "test"], f"{label_mode}_labels")
    (x_train, y_train), (x_test, y_test) = batches["train"], batches["test"]
    return (x_train, y_train.astype("int64").reshape(-1, 1)), (x_test, y_test.astype("int64").reshape(-1, 1))
