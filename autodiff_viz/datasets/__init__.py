"""``adv.datasets``: the small datasets of ``keras.datasets``, with Keras' ``load_data`` signatures,
shapes and dtypes.

    (x_train, y_train), (x_test, y_test) = adv.datasets.mnist.load_data()

Each file is downloaded once from Keras' address into the cache folder
(``~/.keras/datasets``, shared with Keras; ``$ADV_DATASETS_DIR`` overrides
it), with a progress bar, and checked against the checksum Keras publishes;
a damaged download is deleted and reported. Offline, the error names the
URL, the file to place by hand and where (or the ``path=`` to pass).
``ORIGIN`` (or ``$ADV_DATASETS_ORIGIN``) replaces Keras' addresses by a
mirror's base URL. Pickled parts (CIFAR, IMDB, Reuters) are read with an
unpickler that only rebuilds numpy arrays and plain containers.
"""
from ._download import DownloadError, cache_dir

ORIGIN = None      # e.g. "http://127.0.0.1:8000/": every file is then fetched from <ORIGIN>/<file name>

from . import (boston_housing, california_housing, cifar10, cifar100, fashion_mnist, imdb,  # noqa: E402
               mnist, reuters)

__all__ = ["mnist", "fashion_mnist", "cifar10", "cifar100", "imdb", "reuters", "boston_housing",
           "california_housing", "DownloadError", "cache_dir", "ORIGIN"]
