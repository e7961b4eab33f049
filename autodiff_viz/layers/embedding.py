"""``Embedding``: a trainable lookup table, as ``keras.layers.Embedding``.

``Embedding(input_dim, output_dim)`` holds ``embeddings`` of shape
``(input_dim, output_dim)``; integer inputs of any shape pick rows:
``(batch, steps)`` -> ``(batch, steps, output_dim)``. On the graph it is one
``take`` op; its gradient *adds* ḡ into the picked rows (a token that occurs
twice gets both contributions), every other row gets zero.
"""
from __future__ import annotations

import numpy as np

from .. import regularizers
from ..core import ops
from ..core.tensor import Tensor, constant
from .base import Layer, positive_int

__all__ = ["Embedding"]


class Embedding(Layer):
    """Map integer indices in ``[0, input_dim)`` to vectors of size ``output_dim``.

        >>> emb = Embedding(10, 3)
        >>> emb(np.array([[1, 2, 2], [0, 9, 4]])).shape
        (2, 3, 3)
        >>> emb.embeddings.shape
        (10, 3)

    Args:
        input_dim: the vocabulary size (largest index + 1).
        output_dim: the size of each vector.
        embeddings_initializer: ``"uniform"`` on ``[-0.05, 0.05]`` (Keras 3's default).
        embeddings_regularizer: see :mod:`autodiff_viz.regularizers`.
        mask_zero: index 0 is padding; :meth:`compute_mask` returns ``inputs != 0``
            (and ``input_dim`` must leave room for it, as in Keras). The mask
            goes with the output to the next layers, as Keras 3 carries it: a
            recurrent layer after it skips the padded steps by itself.

    An index outside ``[0, input_dim)`` — also a negative one — is an error
    that names the index and where it is, raised before anything is computed.
    Float inputs are accepted when they hold whole numbers.
    """
    backward_text = {"x": "no gradient: the indices are integers",
                     "embeddings": "ḡ_E[i] = Σ of ḡ_y over the positions that looked up row i (a scatter-add)"}

    _single_input = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, **kwargs):
        super().__init__(**kwargs)
        self.input_dim = positive_int("Embedding", "input_dim", input_dim)
        self.output_dim = positive_int("Embedding", "output_dim", output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = embeddings_constraint
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self._initial_weights = weights

    def build(self, input_shape=None):
        self.embeddings = self.add_weight((self.input_dim, self.output_dim), self.embeddings_initializer,
                                          name="embeddings", regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        if self._initial_weights is not None:
            self.built = True
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def _convert(self, x):
        """Indices stay integers (no cast to the layer's float dtype); their range is checked here."""
        if isinstance(x, Tensor):
            idx = x._value
        elif isinstance(x, (np.ndarray, list, tuple, int, np.integer, float, np.floating)):
            idx = np.asarray(x)
        else:
            return super()._convert(x)
        if idx.dtype.kind == "f":
            if not np.all(np.isfinite(idx)) or np.any(idx != np.round(idx)):
                bad = np.argwhere(~np.isfinite(idx) | (idx != np.round(idx)))[0]
                raise TypeError(f"{self.name} (Embedding): indices must be whole numbers, got {idx[tuple(bad)]!r} "
                                f"at position {tuple(int(i) for i in bad)} (dtype {idx.dtype}). Pass integer "
                                "token ids (e.g. x.astype('int32')).")
            idx = idx.astype(np.int64)
        elif idx.dtype.kind not in "iu":
            raise TypeError(f"{self.name} (Embedding): inputs must be integer indices, got dtype {idx.dtype}.")
        self._check_range(idx)
        if isinstance(x, Tensor) and x.dtype.kind in "iu":
            return x
        return constant(idx)

    def _check_range(self, idx):
        bad = (idx < 0) | (idx >= self.input_dim)
        if not bad.any():
            return
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        value = int(idx[where])
        fix = (f"Negative indices do not count from the end here (unlike numpy): map them into 0 … "
               f"{self.input_dim - 1}." if value < 0 else
               f"Use input_dim ≥ {int(idx.max()) + 1} (the largest index + 1), or map the tokens into 0 … "
               f"{self.input_dim - 1}.")
        raise ValueError(f"{self.name} (Embedding): index {value} at position {where} of the input (shape "
                         f"{idx.shape}) is out of range for input_dim={self.input_dim}; valid indices are 0 … "
                         f"{self.input_dim - 1}. {fix} ({int(bad.sum())} index(es) out of range in all.)")

    def call(self, inputs):
        return ops.take(self.embeddings, inputs, axis=0)

    def compute_mask(self, inputs, mask=None):
        """``inputs != 0`` when ``mask_zero`` (0 is padding), else None."""
        if not self.mask_zero:
            return None
        value = inputs._value if isinstance(inputs, Tensor) else np.asarray(inputs)
        return value != 0

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
                "embeddings_initializer": self.embeddings_initializer,
                "embeddings_regularizer": self.embeddings_regularizer,
                "embeddings_constraint": self.embeddings_constraint, "mask_zero": self.mask_zero}
