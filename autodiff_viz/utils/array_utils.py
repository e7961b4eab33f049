"""Keras' array helpers for labels and sequences: ``to_categorical``, ``normalize``, ``pad_sequences``.

    >>> to_categorical([0, 2, 1])            # one-hot labels for categorical_crossentropy
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 1., 0.]])
    >>> pad_sequences([[1, 2, 3], [4, 5]])    # ragged token lists -> one int32 array
    array([[1, 2, 3],
           [0, 4, 5]], dtype=int32)

* :func:`to_categorical`, :func:`normalize`: ``keras.utils.to_categorical`` /
  ``normalize`` on numpy data.
* :func:`pad_sequences`: ``keras.utils.pad_sequences`` (also
  ``keras.preprocessing.sequence.pad_sequences``), the same output to the
  entry.

``adv.utils`` gathers these with the other Keras utilities.
"""
from __future__ import annotations

import numpy as np

from ..base.session import floatx
from ..core.tensor import Tensor
from ..layers.base import positive_int
from ..layers.keras_tensor import KerasTensor

__all__ = ["to_categorical", "normalize", "pad_sequences"]


# ---------------------------------------------------------------------------
# Labels and arrays
# ---------------------------------------------------------------------------
def to_categorical(x, num_classes=None):
    """One-hot encode integer class labels (``keras.utils.to_categorical``).

    Keras' rules: the class axis is added last; a trailing axis of size 1 is
    dropped first (labels of shape ``(n, 1)`` give ``(n, num_classes)``, not
    ``(n, 1, num_classes)``); ``num_classes`` defaults to ``max(x) + 1``. The
    result is a float64 numpy array, as Keras 3 gives for numpy labels (a
    loss casts it to the predictions' dtype).

        >>> adv.utils.to_categorical([[1], [0]], num_classes=3)
        array([[0., 1., 0.],
               [1., 0., 0.]])

    Labels must be whole numbers from 0 to ``num_classes - 1`` (``2.0`` is
    fine, ``2.5``, ``-1`` or a label ``>= num_classes`` is an error that
    names the bad labels), since Keras would silently truncate ``2.5`` and
    put ``-1`` in the last class.
    """
    what = "to_categorical"
    if num_classes is not None:
        num_classes = positive_int(what, "num_classes", num_classes)
    labels = _labels(x, what)
    shape = labels.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = labels.reshape(-1)
    if num_classes is None:
        if flat.size == 0:
            raise ValueError(f"{what}: there are no labels to count the classes from; pass num_classes, e.g. "
                             f"{what}(y, num_classes=10).")
        num_classes = int(flat.max()) + 1
    too_big = np.unique(flat[flat >= num_classes])
    if too_big.size:
        raise ValueError(f"{what}: labels {_few(too_big)} are not below num_classes={num_classes} (classes are "
                         f"0 .. {num_classes - 1}). Pass num_classes={int(flat.max()) + 1} or more, or check "
                         "the labels (e.g. 1-based labels: use y - 1).")
    out = np.zeros((flat.size, num_classes))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(shape + (num_classes,))


def _labels(x, what) -> np.ndarray:
    """``x`` as int64 labels, or an error naming the labels that are not whole numbers ≥ 0."""
    try:
        arr = np.asarray(x)
    except ValueError as exc:
        raise ValueError(f"{what}: the labels are not one rectangular array ({exc}). Pass a list or array of "
                         "integer class ids with the same length in every row.") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what}: labels must be integer class ids, got dtype {arr.dtype} (e.g. {_few(arr)}). "
                        "Map them to 0 .. num_classes - 1 first (np.unique(y, return_inverse=True)[1]).")
    if arr.dtype.kind == "f":
        bad = arr[~np.isfinite(arr) | (arr != np.round(arr))] if arr.size else arr
        if bad.size:
            raise ValueError(f"{what}: labels must be whole numbers (class ids), got {_few(np.unique(bad))}. "
                             "Round or map them to 0 .. num_classes - 1 first; for predicted probabilities "
                             "use np.argmax(p, axis=-1).")
    negative = np.unique(arr[arr < 0]) if arr.size else arr
    if negative.size:
        raise ValueError(f"{what}: labels must be 0 or more, got {_few(negative)}. Classes are numbered "
                         "0 .. num_classes - 1: shift or map the labels first (e.g. labels -1/1: (y + 1) // 2).")
    return arr.astype(np.int64)


def _few(values, limit=5) -> str:
    """A few values of an array for a message: ``[-1, 7]`` or ``[3, 4, 5, 6, 7, ...] (12 in all)``."""
    values = np.asarray(values).reshape(-1)
    shown = [v.item() if hasattr(v, "item") else v for v in values[:limit]]
    shown = [int(v) if isinstance(v, float) and v.is_integer() else v for v in shown]
    text = "[" + ", ".join(repr(v) for v in shown) + (", ...]" if values.size > limit else "]")
    return text + (f" ({values.size} in all)" if values.size > limit else "")


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (``keras.utils.normalize``).

    Each slice along ``axis`` gets norm 1; a slice whose norm is 0 stays 0
    (Keras divides it by 1). A numpy array (or list) gives a numpy array,
    integers becoming :func:`adv.layers.floatx`; an ``adv`` tensor gives a
    tensor, computed with recorded ops so a tape sees it (as Keras does for
    backend tensors).

        >>> adv.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
        array([[0.6, 0.8],
               [0. , 0. ]])
    """
    what = "normalize"
    if isinstance(x, KerasTensor):
        raise TypeError(f"{what}: {x.name} is a symbolic tensor; use adv.layers.UnitNormalization in the model, "
                        "or normalize the data before it.")
    if isinstance(x, Tensor):
        from ..core import linalg, ops
        _check_axis(what, axis, x.ndim)
        norm = linalg.norm(x, ord=order, axis=axis, keepdims=True)
        return x / ops.where(norm == 0, ops.ones_like(norm), norm)
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what}: x must hold numbers, got dtype {arr.dtype}. Pass a float array.")
    if arr.dtype.kind != "f":
        arr = arr.astype(floatx())
    _check_axis(what, axis, arr.ndim)
    try:
        norm = np.linalg.norm(arr, ord=order, axis=axis, keepdims=True)
    except ValueError as exc:
        raise ValueError(f"{what}: order={order!r} is not a vector norm numpy knows ({exc}). Use 2 (Euclidean), "
                         "1, np.inf or another number.") from None
    return arr / np.where(norm == 0, 1, norm).astype(arr.dtype)


def _check_axis(what, axis, ndim) -> None:
    if ndim == 0:
        raise ValueError(f"{what}: x is a single number; give an array with at least one axis, e.g. [x].")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{what}: axis must be one integer (the axis to normalize along), got {axis!r}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis={axis} is out of range for an array with {ndim} axes; use -1 for the "
                         f"last one, or 0 .. {ndim - 1}.")


_SIDES = ("pre", "post")


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """Pad (and cut) a list of sequences to one length: ``keras.utils.pad_sequences``.

    Returns a numpy array of shape ``(len(sequences), maxlen)`` (plus the
    shape of one step, for sequences of vectors). ``maxlen`` defaults to the
    longest sequence; shorter ones get ``value`` added before them
    (``padding="pre"``, Keras' default, so an RNN's last step is real) or after
    (``"post"``); longer ones lose steps from the start (``truncating="pre"``)
    or the end (``"post"``). Values are cast to ``dtype`` (``"int32"``: token
    ids; pass ``dtype="float32"`` for real numbers).

        >>> adv.utils.pad_sequences([[1, 2, 3], [4, 5]], maxlen=2)
        array([[2, 3],
               [4, 5]], dtype=int32)
        >>> adv.utils.pad_sequences([[1], [2, 3]], padding="post", value=-1)
        array([[ 1, -1],
               [ 2,  3]], dtype=int32)
    """
    what = "pad_sequences"
    for name, side in (("padding", padding), ("truncating", truncating)):
        if side not in _SIDES:
            raise ValueError(f"{what}: {name}={side!r} is not understood; use {name}='pre' (at the start, the "
                             f"default) or {name}='post' (at the end).")
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise ValueError(f"{what}: sequences must be a list of sequences, got a {type(sequences).__name__}. "
                         "Pass a list, e.g. list(generator), or [[1, 2], [3]].")
    if maxlen is not None:
        maxlen = positive_int(what, "maxlen", maxlen, minimum=0)
    lengths, sample_shape, first = [], (), None
    for i, s in enumerate(sequences):
        try:
            lengths.append(len(s))
        except TypeError:
            raise ValueError(f"{what}: sequences must be a list of sequences, but the entry at position {i} is "
                             f"{s!r:.60} (a {type(s).__name__}). Wrap single values in a list: [[1], [2, 3]].") \
                from None
        if first is None and len(s):
            first = i
            sample_shape = _steps(s, what, i, dtype=None).shape[1:]
    if maxlen is None:
        maxlen = max(lengths, default=0)
    is_text = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not is_text:
        raise ValueError(f"{what}: the padding value {value!r} is a string but dtype={dtype!r} is numeric. For "
                         "sequences of strings pass dtype=object.")
    try:
        kind = np.dtype(dtype).kind
        if kind in "iu" and isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise ValueError("it is not a whole number")
        if kind in "iu" and isinstance(value, (int, float, np.number)) and \
                not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
            raise ValueError(f"{dtype} holds {np.iinfo(dtype).min} .. {np.iinfo(dtype).max}")
        out = np.full((len(lengths), maxlen) + sample_shape, value, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{what}: the padding value {value!r} cannot be stored as dtype={dtype!r} ({exc}). Pass "
                         "a value that fits, or a dtype that holds it (e.g. dtype='float32').") from None
    for i, s in enumerate(sequences):
        if not len(s) or not maxlen:
            continue
        kept = _steps(s[-maxlen:] if truncating == "pre" else s[:maxlen], what, i, dtype)
        if kept.shape[1:] != sample_shape:
            raise ValueError(f"{what}: the steps of sequence {i} have shape {kept.shape[1:]}, but those of "
                             f"sequence {first} have shape {sample_shape}. Every step must have the same shape "
                             "(pad_sequences only pads the number of steps).")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, maxlen - len(kept):] = kept
    return out


def _steps(seq, what, i, dtype) -> np.ndarray:
    """One sequence as an array of steps, or an error naming its position when its steps are ragged."""
    try:
        return np.asarray(seq, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{what}: sequence {i} cannot be one array of steps ({exc}). Its steps must all have "
                         f"the same shape (and be numbers for dtype={dtype!r}).") from None
