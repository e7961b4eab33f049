"""California housing prices: 20,640 districts of the 1990 census, 8 features each
(``keras.datasets.california_housing``): median income, house age, average rooms, average bedrooms,
population, average occupancy, latitude, longitude; the target is the median house value in dollars."""
from __future__ import annotations

from . import _download
from ._prepare import check_test_split, shuffled_split
from ._safe_pickle import load_npz

URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/california_housing.npz"
SHA256 = "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f"


def load_data(version="large", path="california_housing.npz", test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``, as Keras: ``(n, 8)`` features, ``(n,)`` targets.

    ``version="small"`` keeps the first 600 districts (a stand-in for
    Boston housing), ``"large"`` all 20,640; then shuffled with
    ``RandomState(seed)`` and split as :func:`boston_housing.load_data`.
    """
    who = "california_housing.load_data"
    if version not in ("small", "large"):
        raise ValueError(f"{who}: version must be 'small' (600 samples) or 'large' (20,640), got {version!r}.")
    test_split = check_test_split(who, test_split)
    arrays = load_npz(_download.fetch(who, URL, SHA256, path=path))
    x, y = arrays["x"], arrays["y"]
    if version == "small":
        x, y = x[:600], y[:600]
    return shuffled_split(x, y, test_split, seed)
