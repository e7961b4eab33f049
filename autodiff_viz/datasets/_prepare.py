"""What Keras' loaders do to the arrays after reading them, shared by several datasets.

Keras shuffles with ``np.random.RandomState(seed)`` before splitting or
re-indexing; the same generator is used here, so ``seed=113`` gives the
same samples in the same order as Keras.
"""
from __future__ import annotations

import numpy as np


def check_test_split(who: str, test_split) -> float:
    if isinstance(test_split, bool) or not isinstance(test_split, (int, float)) or not 0 <= test_split < 1:
        raise ValueError(f"{who}: test_split is the fraction of samples kept for testing, a number from 0 "
                         f"(inclusive) to 1 (exclusive), e.g. 0.2; got {test_split!r}.")
    return float(test_split)


def shuffled_split(x, y, test_split: float, seed):
    """``(x_train, y_train), (x_test, y_test)``: shuffled by ``RandomState(seed)``, then the first
    ``int(n * (1 - test_split))`` samples for training, as Keras."""
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))


def remove_long_seq(maxlen: int, seqs, labels):
    """The sequences shorter than ``maxlen`` (strictly, as Keras) and their labels."""
    kept = [(s, l) for s, l in zip(seqs, labels) if len(s) < maxlen]
    return [s for s, _ in kept], [l for _, l in kept]


def reindex(xs, start_char, oov_char, index_from, skip_top, num_words):
    """Keras' word-index conventions: each word index shifted by ``index_from`` (0 padding, 1 start,
    2 out-of-vocabulary by default), ``start_char`` first; words outside ``[skip_top, num_words)``
    become ``oov_char`` (or are dropped when it is None). ``num_words=None``: the largest index, which
    itself then falls outside the range, exactly as in Keras."""
    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]
    else:
        xs = [list(x) for x in xs]
    if not num_words:
        num_words = max(max(x) for x in xs if len(x))
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def sequences(xs) -> np.ndarray:
    """A list of lists as a 1-D object array (each entry a list), as Keras returns Reuters' sequences."""
    out = np.empty(len(xs), dtype=object)
    for i, x in enumerate(xs):
        out[i] = list(x)
    return out
