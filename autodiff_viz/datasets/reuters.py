"""Reuters newswires: 11,228 short news stories in 46 topics, each a sequence of word indices
(``keras.datasets.reuters``)."""
from __future__ import annotations

import json

import numpy as np

from . import _download
from ._prepare import check_test_split, reindex, remove_long_seq, sequences
from ._safe_pickle import load_npz

BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
SHA256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_MD5 = "4d44cc38712099c9e383dc6e5f11a921"
LABELS = ("cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply", "coffee",
          "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas", "cpi", "money-fx",
          "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin", "strategic-metal", "livestock",
          "retail", "ipi", "iron-steel", "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem",
          "dlr", "gas", "silver", "wpi", "hog", "lead")


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113,
              start_char=1, oov_char=2, index_from=3):
    """``(x_train, y_train), (x_test, y_test)``, as Keras: the stories shuffled with
    ``RandomState(seed)``, the first ``int(n * (1 - test_split))`` for training. The other arguments
    are :func:`imdb.load_data`'s. ``x``: 1-D object arrays of lists of ints; ``y``: int64 topics 0–45."""
    who = "reuters.load_data"
    test_split = check_test_split(who, test_split)
    arrays = load_npz(_download.fetch(who, BASE + "reuters.npz", SHA256, path=path))
    xs, labels = arrays["x"], arrays["y"]
    order = np.arange(len(xs))
    np.random.RandomState(seed).shuffle(order)
    xs, labels = list(xs[order]), labels[order]
    if maxlen:
        xs, labels = remove_long_seq(maxlen, xs, labels)
    xs = reindex(xs, start_char, oov_char, index_from, skip_top, num_words)
    cut = int(len(xs) * (1 - test_split))
    labels = np.asarray(labels)
    return (sequences(xs[:cut]), labels[:cut]), (sequences(xs[cut:]), labels[cut:])


def get_word_index(path="reuters_word_index.json"):
    """``{word: index}`` (shift by ``index_from``, 3, to read ``x``)."""
    with open(_download.fetch("reuters.get_word_index", BASE + "reuters_word_index.json", WORD_INDEX_MD5,
                              path=path)) as f:
        return json.load(f)


def get_label_names():
    """The 46 topic names, in label order."""
    return LABELS
