"""IMDB movie reviews: 50,000 reviews labelled positive (1) or negative (0), each a sequence of
word indices ranked by frequency (``keras.datasets.imdb``)."""
from __future__ import annotations

import json

import numpy as np

from . import _download
from ._prepare import reindex, remove_long_seq, sequences
from ._safe_pickle import load_npz

BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_MD5 = "bfafd718b763782e994055a2d397834f"


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
              index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: 25,000 reviews each, as Keras.

    Args:
        path: as :func:`mnist.load_data`'s.
        num_words: keep the ``num_words`` most frequent words; rarer ones
            become ``oov_char``. None keeps all.
        skip_top: the most frequent words to replace by ``oov_char`` too.
        maxlen: drop the reviews of ``maxlen`` words or more (Keras keeps
            only the shorter ones; it does not cut them).
        seed: the shuffle of each split (``RandomState(seed)``, as Keras).
        start_char: the index that marks the start of a review (1).
        oov_char: the index of a word left out (2).
        index_from: the index of the most frequent word (3: 0 is padding).

    Returns:
        ``x_train``/``x_test``: 1-D object arrays of lists of ints (pad them
        with ``adv.utils.pad_sequences``); ``y_train``/``y_test``: int64
        ``(n,)`` labels 0/1.
    """
    who = "imdb.load_data"
    if kwargs:
        raise TypeError(f"{who}: unknown arguments {sorted(kwargs)}; the arguments are path, num_words, skip_top, "
                        "maxlen, seed, start_char, oov_char and index_from.")
    arrays = load_npz(_download.fetch(who, BASE + "imdb.npz", SHA256, path=path))
    rng = np.random.RandomState(seed)
    splits = []
    for part in ("train", "test"):
        x, y = arrays[f"x_{part}"], arrays[f"y_{part}"]
        order = np.arange(len(x))
        rng.shuffle(order)
        splits.append((list(x[order]), y[order]))
    (x_train, y_train), (x_test, y_test) = splits
    if maxlen:
        x_train, y_train = remove_long_seq(maxlen, x_train, y_train)
        x_test, y_test = remove_long_seq(maxlen, x_test, y_test)
        if not x_train or not x_test:
            raise ValueError(f"{who}: no review is shorter than maxlen={maxlen}, so nothing is left; raise maxlen.")
    xs = reindex(x_train + x_test, start_char, oov_char, index_from, skip_top, num_words)
    cut = len(x_train)
    return (sequences(xs[:cut]), np.asarray(y_train)), (sequences(xs[cut:]), np.asarray(y_test))


def get_word_index(path="imdb_word_index.json"):
    """``{word: index}`` for the words of :func:`load_data` (shift by ``index_from``, 3, to read ``x``)."""
    with open(_download.fetch("imdb.get_word_index", BASE + "imdb_word_index.json", WORD_INDEX_MD5,
                              path=path)) as f:
        return json.load(f)
