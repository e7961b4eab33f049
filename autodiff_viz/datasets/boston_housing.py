"""Boston housing prices: 506 samples of 13 features (``keras.datasets.boston_housing``).

Keras warns against this dataset: one feature ("B") encodes a racist
assumption about house prices. Use it only to discuss that problem;
:mod:`california_housing` (``version="small"``) is the suggested replacement.
"""
from __future__ import annotations

from . import _download
from ._prepare import check_test_split, shuffled_split
from ._safe_pickle import load_npz

URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/boston_housing.npz"
SHA256 = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``, as Keras: float64 ``(n, 13)`` features and float64
    ``(n,)`` prices in k$, shuffled with ``RandomState(seed)`` and split ``int(506 * (1 - test_split))``
    (404) / the rest (102). ``path``: as :func:`mnist.load_data`'s."""
    who = "boston_housing.load_data"
    test_split = check_test_split(who, test_split)
    arrays = load_npz(_download.fetch(who, URL, SHA256, path=path))
    return shuffled_split(arrays["x"], arrays["y"], test_split, seed)
