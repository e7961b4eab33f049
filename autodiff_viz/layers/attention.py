"""Layers: attention (Keras 3 names, defaults and weight layouts).

``MultiHeadAttention`` as in "Attention is all you need" and
``keras.layers.MultiHeadAttention``; ``Attention``, Luong's dot-product
attention as ``keras.layers.Attention``; ``AdditiveAttention``, Bahdanau's
additive attention as ``keras.layers.AdditiveAttention``. The first two
compute their core,

    O = softmax(s·Q Kᵀ + mask) V,

with one rule of the table (``attention``), so the graph shows it as one
op whose edges carry its chain-rule factors (``ḡ_V = Aᵀ ḡ`` ...) instead
of the six ops inside. :func:`scaled_dot_product_attention` is that op as
a function. Additive scores are a sum of ``tanh``, so ``AdditiveAttention``
and ``Attention(score_mode="concat")`` are composed of the package's ops
instead.
"""
from __future__ import annotations

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention", "scaled_dot_product_attention"]

import math

import numpy as np

from .. import regularizers
from ..base import session
from ..core.engine import broadcasts_to
from ..core.engine import call as _call
from ..core.nn import softmax
from ..core.ops import _tensor, expand_dims, matmul, reshape, tanh, transpose
from ..core.ops import sum as _sum
from ..core.rules import attention as _rules
from ..core.tensor import Tensor, constant
from .base import Layer
from .keras_tensor import _has_symbolic


def scaled_dot_product_attention(query, key, value, mask=None, scale=None, return_weights=False):
    """``softmax(s·Q Kᵀ, masked entries −∞) V`` as one op (``attention``) of the rule table.

    Args:
        query: ``(..., Tq, d)``; key: ``(..., Tk, d)``; value: ``(..., Tk, dv)``,
            with the same leading axes.
        mask: boolean, broadcastable to ``(..., Tq, Tk)``; True where a query
            may attend to a key (Keras' convention; PyTorch's boolean
            ``attn_mask`` means the same). A query whose keys are all
            masked gets weights 0 and output 0.
        scale: ``s``; default ``1/√d``.
        return_weights: also return ``A = softmax(...)`` (recorded as the
            op ``attention_weights`` followed by ``matmul``).

    The gradient has no entries for the mask.
    """
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    _check_qkv("scaled_dot_product_attention", q, k, v)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    extra = ()
    if mask is not None:
        m = _mask_tensor(mask)
        want = q.shape[:-1] + (k.shape[-2],)
        if not broadcasts_to(m.shape, want):
            raise ValueError(f"scaled_dot_product_attention: the mask of shape {m.shape} does not broadcast to "
                             f"(..., Tq, Tk) = {want}. Give one entry per query and key (True: may attend).")
        extra = (m,)
    out, weights = _attend(q, k, v, extra[0] if extra else None, s, return_weights, 0.0, None)
    return (out, weights) if return_weights else out


def _check_qkv(who, q, k, v):
    problems = []
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        problems.append("query, key and value need at least 2 axes (sequence, features)")
    else:
        if q.shape[-1] != k.shape[-1]:
            problems.append(f"query and key must have the same feature size (last axis): {q.shape} vs {k.shape}")
        if k.shape[-2] != v.shape[-2]:
            problems.append(f"key and value must have the same number of steps (axis -2): {k.shape} vs {v.shape}")
        if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
            problems.append(f"query, key and value must share their leading axes: {q.shape}, {k.shape}, {v.shape}")
    if problems:
        raise ValueError(f"{who}: " + "; ".join(problems) + ".")


def _mask_tensor(mask):
    """A boolean constant from a bool/0-1 array or tensor (True: may attend)."""
    m = np.asarray(mask._value if isinstance(mask, Tensor) else mask)
    if m.dtype != np.bool_:
        m = m != 0
    return constant(m)


class _Projection(Layer):
    """Keras' ``EinsumDense`` as MultiHeadAttention uses it: ``x @ kernel + bias`` over the last ``in_axes`` axes.

    ``kernel`` has shape ``in_shape + out_shape`` (``(d_model, heads,
    key_dim)`` for a query projection, ``(heads, value_dim, d_model)`` for
    the output one); the product is one matrix product after a reshape.
    The attention layer has read its inputs' masks already, so a projection
    ignores them.
    """

    def compute_mask(self, inputs, mask=None):
        return None

    supports_masking = True

    def __init__(self, in_shape, out_shape, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                 bias_regularizer, kernel_constraint, bias_constraint, **kwargs):
        super().__init__(**kwargs)
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape):
        self.kernel = self.add_weight(self.in_shape + self.out_shape, self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.bias = (self.add_weight(self.out_shape, self.bias_initializer, name="bias",
                                     regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def call(self, inputs):
        n_in = len(self.in_shape)
        lead = inputs.shape[:inputs.ndim - n_in]
        n, m = math.prod(self.in_shape), math.prod(self.out_shape)
        x = inputs if n_in == 1 else reshape(inputs, lead + (n,))
        w = self.kernel if self.kernel.ndim == 2 else reshape(self.kernel, (n, m))
        y = matmul(x, w)
        if len(self.out_shape) != 1:
            y = reshape(y, lead + self.out_shape)
        return y + self.bias if self.use_bias else y


class MultiHeadAttention(Layer):
    """Multi-head attention, as ``keras.layers.MultiHeadAttention`` (Keras 3).

    For a query sequence ``(batch, T, dim_q)`` and a value sequence
    ``(batch, S, dim_v)`` (the key defaults to the value)::

        Q_h = query W^Q_h + b^Q_h       (T, key_dim) per head h
        K_h = key   W^K_h + b^K_h       (S, key_dim)
        V_h = value W^V_h + b^V_h       (S, value_dim)
        O_h = softmax(Q_h K_hᵀ/√key_dim + mask) V_h
        out = Σ_h O_h W^O_h + b^O       (T, output_dim)

    Weights, in Keras' layout and order: ``query/kernel (dim_q, heads,
    key_dim)``, ``query/bias (heads, key_dim)``, the same for ``key`` and
    ``value`` (with ``value_dim``), ``attention_output/kernel (heads,
    value_dim, output_dim)``, ``attention_output/bias (output_dim,)``.
    ``output_dim`` is ``dim_q`` unless ``output_shape`` is given. The core
    is the one op ``attention`` on the graph (inside each projection's
    box are its matmul and bias).

        >>> mha = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> x = np.ones((3, 5, 8))
        >>> mha(x, x).shape
        (3, 5, 8)
        >>> out, scores = mha(x, x, return_attention_scores=True, use_causal_mask=True)
        >>> scores.shape                 # (batch, heads, T, S)
        (3, 2, 5, 5)

    Call: ``mha(query, value, key=None, attention_mask=None,
    return_attention_scores=False, training=None, use_causal_mask=False)``;
    ``attention_mask`` is boolean ``(batch, T, S)`` (True: may attend), and
    ``query_mask (batch, T)`` / ``value_mask`` / ``key_mask (batch, S)`` are
    combined with it as Keras does. A query, value or key that carries a
    mask (from ``Embedding(mask_zero=True)`` or ``Masking``) gives its
    ``*_mask`` when that argument is not passed, as in Keras 3: padded keys
    get no weight, padded query rows give 0, and the output carries the
    query's mask. Attention probabilities are dropped
    (``dropout``) only with ``training=True``. ``kernel_regularizer``,
    ``bias_regularizer`` and the constraints apply to all four projections,
    as Keras. Only inputs of rank 3 (attention over one sequence axis) are
    supported.
    """
    backward_text = {"x": "per head, A = softmax(QKᵀ/√d), y = A·V: ḡ_V = Aᵀ·ḡ_y, ḡ_A = ḡ_y·Vᵀ; "
                     "ḡ_S = A ⊙ (ḡ_A − rowsum(ḡ_A ⊙ A)), "
                     "ḡ_Q = ḡ_S·K/√d, ḡ_K = ḡ_Sᵀ·Q/√d; "
                     "ḡ_x = ḡ_Q·W_qᵀ + ḡ_K·W_kᵀ + ḡ_V·W_vᵀ",
                     # each projection's weights (Q = x_q·W_q, K = x_k·W_k, V = x_v·W_v, y = concat(heads)·W_o)
                     "query/kernel": "ḡ_W_q = x_qᵀ·ḡ_Q", "key/kernel": "ḡ_W_k = x_kᵀ·ḡ_K",
                     "value/kernel": "ḡ_W_v = x_vᵀ·ḡ_V", "attention_output/kernel": "ḡ_W_o = concat(heads)ᵀ·ḡ_y",
                     "query/bias": "ḡ_b_q = Σ_batch,positions ḡ_Q", "key/bias": "ḡ_b_k = Σ_batch,positions ḡ_K",
                     "value/bias": "ḡ_b_v = Σ_batch,positions ḡ_V",
                     "attention_output/bias": "ḡ_b_o = Σ_batch,positions ḡ_y",
                     "kernel": "ḡ_W_q = x_qᵀ·ḡ_Q, ḡ_W_k = x_kᵀ·ḡ_K, ḡ_W_v = x_vᵀ·ḡ_V, ḡ_W_o = concat(heads)ᵀ·ḡ_y",
                     "bias": "ḡ_b = Σ over batch and positions of the projection's ḡ"}

    supports_masking = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        for what, n in (("num_heads", num_heads), ("key_dim", key_dim), ("value_dim", value_dim)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0):
                raise ValueError(f"{self.name}: {what} must be a positive integer, got {n!r}.")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{self.name}: dropout must be in [0, 1), got {dropout!r}.")
        if attention_axes not in (None, 1, -2, (1,), [1], (-2,), [-2]):
            raise NotImplementedError(f"{self.name}: attention_axes={attention_axes!r} is not supported; attention "
                                      "runs over axis 1 of (batch, sequence, features) inputs.")
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        if output_shape is not None:
            output_shape = (output_shape,) if isinstance(output_shape, (int, np.integer)) else tuple(output_shape)
            if len(output_shape) != 1 or int(output_shape[0]) <= 0:
                raise ValueError(f"{self.name}: output_shape must be a positive int (the output features), "
                                 f"got {output_shape!r}.")
            output_shape = (int(output_shape[0]),)
        self._output_dims = output_shape
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)
        self._query_dense = self._key_dense = self._value_dense = self._output_dense = None

    # ----- shapes and building -------------------------------------------
    def __call__(self, query=None, value=None, key=None, **kwargs):
        if query is None or value is None:
            raise TypeError(f"{self.name}: call it as mha(query, value) or mha(query, value, key); for "
                            "self-attention pass the same sequence twice: mha(x, x).")
        shapes = [_shape_of(query), _shape_of(value), None if key is None else _shape_of(key)]
        self._check_shapes(*shapes)
        for name, t in (("query_mask", query), ("value_mask", value), ("key_mask", key)):
            carried = getattr(t, "_keras_mask", None)
            if carried is not None and kwargs.get(name) is None:    # Keras 3: a tensor's mask fills its *_mask
                kwargs[name] = carried
        masks = {k: kwargs.get(k) for k in ("query_mask", "value_mask", "key_mask", "attention_mask")}
        known = (shapes[0][0], shapes[0][1], shapes[1][1])
        if any(m is not None for m in masks.values()) and not _has_symbolic((query, value, key), masks):
            self._compute_mask(*known, **masks, use_causal_mask=False)      # refuse a bad mask before building
        if not self.built:
            self.build(*shapes)
            self.built = True
        out = super().__call__(query, value=value, key=key, **kwargs)
        if isinstance(out, tuple) and isinstance(out[1], Tensor):
            out[1]._keras_mask = None       # the query's mask belongs to the output, not to the scores
        return out

    def _check_shapes(self, q, v, k):
        k = v if k is None else k
        for what, s in (("query", q), ("value", v), ("key", k)):
            if len(s) != 3:
                raise ValueError(f"{self.name}: {what} should have shape (batch, sequence, features), got {s}. "
                                 + ("Add a sequence axis, e.g. x[:, None, :]." if len(s) == 2 else
                                    "Only attention over one sequence axis is supported."))
        if not q[0] == v[0] == k[0]:
            raise ValueError(f"{self.name}: query, value and key must have the same batch size, got shapes "
                             f"{q}, {v}, {k}.")
        if k[1] != v[1]:
            raise ValueError(f"{self.name}: key and value must have the same sequence length (axis 1), got key "
                             f"{k} and value {v}. The key defaults to the value: pass key=None for that.")
        if self.built:
            for what, s, dense in (("query", q, self._query_dense), ("value", v, self._value_dense),
                                   ("key", k, self._key_dense)):
                if s[-1] != dense.kernel.shape[0]:
                    raise ValueError(f"{self.name}: this layer was built for {what} features of size "
                                     f"{dense.kernel.shape[0]}, got {what} of shape {s}. A layer keeps the sizes of "
                                     "its first call; make a new MultiHeadAttention for other sizes.")

    def build(self, query_shape, value_shape=None, key_shape=None):
        """Create the four projections for these shapes (``value_shape`` defaults to ``query_shape``)."""
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        self._check_shapes(tuple(query_shape), tuple(value_shape), tuple(key_shape))
        h, common = self.num_heads, dict(use_bias=self.use_bias, kernel_initializer=self.kernel_initializer,
                                         bias_initializer=self.bias_initializer,
                                         kernel_regularizer=self.kernel_regularizer,
                                         bias_regularizer=self.bias_regularizer,
                                         kernel_constraint=self.kernel_constraint,
                                         bias_constraint=self.bias_constraint, dtype=self.dtype,
                                         trainable=self.trainable)
        out_dims = self._output_dims or (query_shape[-1],)
        self._query_dense = _Projection((query_shape[-1],), (h, self.key_dim), name="query", **common)
        self._key_dense = _Projection((key_shape[-1],), (h, self.key_dim), name="key", **common)
        self._value_dense = _Projection((value_shape[-1],), (h, self.value_dim), name="value", **common)
        self._output_dense = _Projection((h, self.value_dim), out_dims, name="attention_output", **common)
        for dense, shape in ((self._query_dense, query_shape), (self._key_dense, key_shape),
                             (self._value_dense, value_shape), (self._output_dense, None)):
            dense.build(shape)
            dense.built = True
        self.built = True

    def get_config(self) -> dict:
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": self._output_dims[0] if self._output_dims else None, "attention_axes": None,
                "kernel_initializer": self.kernel_initializer, "bias_initializer": self.bias_initializer,
                "kernel_regularizer": self.kernel_regularizer, "bias_regularizer": self.bias_regularizer,
                "kernel_constraint": self.kernel_constraint, "bias_constraint": self.bias_constraint,
                "seed": self.seed}

    @property
    def query_dense(self):
        return self._query_dense

    @property
    def key_dense(self):
        return self._key_dense

    @property
    def value_dense(self):
        return self._value_dense

    @property
    def output_dense(self):
        return self._output_dense

    # ----- the computation -------------------------------------------------
    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        value = self._convert(value)
        key = value if key is None else self._convert(key)
        batch, T, S = query.shape[0], query.shape[1], value.shape[1]
        mask = self._compute_mask(batch, T, S, query_mask, value_mask, key_mask, attention_mask, use_causal_mask)
        # (batch, seq, heads, dim) -> (batch, heads, seq, dim)
        q = transpose(self._query_dense(query), (0, 2, 1, 3))
        k = transpose(self._key_dense(key), (0, 2, 1, 3))
        v = transpose(self._value_dense(value), (0, 2, 1, 3))
        o, scores = _attend(q, k, v, mask, 1.0 / math.sqrt(self.key_dim), return_attention_scores,
                            self.dropout if training else 0.0, self._rng)
        out = self._output_dense(transpose(o, (0, 2, 1, 3)))
        return (out, scores) if return_attention_scores else out

    def _compute_mask(self, batch, T, S, query_mask, value_mask, key_mask, attention_mask, use_causal_mask):
        """One boolean mask ``(batch, 1, T, S)`` from every kind Keras accepts, or None."""
        mask = None
        parts = []
        if query_mask is not None:
            parts.append(("query_mask", query_mask, (batch, T), lambda m: m[:, :, None]))
        if value_mask is not None:
            parts.append(("value_mask", value_mask, (batch, S), lambda m: m[:, None, :]))
        if key_mask is not None:
            parts.append(("key_mask", key_mask, (batch, S), lambda m: m[:, None, :]))
        if attention_mask is not None:
            parts.append(("attention_mask", attention_mask, (batch, T, S), lambda m: m))
        for what, m, shape, expand in parts:
            m = _mask_tensor(m)._value
            if not broadcasts_to(m.shape, shape) or m.ndim != len(shape):
                raise ValueError(f"{self.name}: {what} should have shape {shape} ((batch, T, S) with T the query "
                                 f"length, S the value length), got {m.shape}. True marks what may be attended to.")
            m = expand(m)
            mask = m if mask is None else mask & m
        if use_causal_mask:
            causal = np.tril(np.ones((T, S), dtype=bool))[None]
            mask = causal if mask is None else mask & causal
        if mask is None:
            return None
        return constant(np.ascontiguousarray(mask[:, None]))


class Attention(Layer):
    """Dot-product (Luong-style) attention, as ``keras.layers.Attention``.

    ``attention([query, value])`` or ``attention([query, value, key])`` with
    query ``(batch, T, d)``, value ``(batch, S, dv)`` and key ``(batch, S,
    d)`` (default: the value)::

        scores = s · query keyᵀ          (s = 1, or a trainable scalar with use_scale=True)
        out    = softmax(scores + mask) value

    With ``score_mode="concat"`` the scores are Keras 3's additive ones::

        scores[n, t, s] = w · Σ_f tanh(scale · (query[n, t, f] + key[n, s, f]))

    with ``w`` a trainable scalar ``concat_score_weight`` (initialised to 1)
    and ``scale`` the scalar of ``use_scale=True`` (else 1), so the
    weights are ``scale`` (if used), then ``concat_score_weight``, as Keras.
    "dot" is the one op ``attention`` of the rule table; "concat" is built
    from the package's ops (``expand_dims``, ``add``, ``multiply``, ``tanh``,
    ``sum``, ``softmax``, ``matmul``), as :class:`AdditiveAttention`.

    ``mask=[query_mask, value_mask]`` (booleans ``(batch, T)``,
    ``(batch, S)``): masked values get no weight; masked query rows
    give 0. ``use_causal_mask=True`` lets step ``t`` see steps ``≤ t``
    only. Both score modes treat masks, ``dropout`` (on the attention
    weights, with ``training=True``) and ``return_attention_scores`` alike;
    the weights returned are the ones the values were averaged with, after
    dropout, as Keras' ``Attention`` (``MultiHeadAttention`` returns them
    before dropout, as Keras' does).
    One difference from Keras: a query whose keys are all masked gets
    weights 0 (Keras: uniform weights).

        >>> att = Attention(score_mode="concat", use_scale=True)
        >>> out, w = att([np.ones((2, 3, 4)), np.ones((2, 5, 4))], return_attention_scores=True)
        >>> out.shape, w.shape, [v.path for v in att.weights]
        ((2, 3, 4), (2, 3, 5), ['attention/scale', 'attention/concat_score_weight'])
    """
    backward_text = {"x": "A = softmax(QKᵀ·s), y = A·V: ḡ_V = Aᵀ·ḡ_y; "
                     "ḡ_S = A ⊙ (ḡ_y·Vᵀ − rowsum(ḡ_y·Vᵀ ⊙ A)), ḡ_Q = ḡ_S·K·s, ḡ_K = ḡ_Sᵀ·Q·s"}

    _takes_list = True
    supports_masking = True

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"{self.name} (Attention): score_mode must be 'dot' (query·key scores) or 'concat' "
                             f"(Σ tanh(query + key) scores), got {score_mode!r}. For Bahdanau's scores with a "
                             "learned vector, use AdditiveAttention.")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{self.name}: dropout must be in [0, 1), got {dropout!r}.")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = float(dropout)
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": self.score_mode,
                "dropout": self.dropout, "seed": self.seed}

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) not in (2, 3):
            raise ValueError(f"{self.name}: call it on a list [query, value] or [query, value, key], "
                             f"got inputs of shape {input_shape}.")
        self.scale = self.add_weight((), "ones", name="scale") if self.use_scale else None
        self.concat_score_weight = (self.add_weight((), "ones", name="concat_score_weight")
                                    if self.score_mode == "concat" else None)

    def compute_mask(self, inputs, mask=None):
        """The query's mask: each output row belongs to a query step (Keras 3)."""
        return mask[0] if isinstance(mask, (list, tuple)) and mask else None

    def call(self, inputs, mask=None, training=None, return_attention_scores=False, use_causal_mask=False):
        q, v, k = self._qvk(inputs)
        qm, m = self._masks(q, v, mask, use_causal_mask)
        dropout = self.dropout if training else 0.0
        scores = self._calculate_scores(q, k)
        if scores is None:      # dot scores: inside the one op ``attention``
            if self.use_scale:
                q = q * self.scale
            out, weights = _attend(q, k, v, None if m is None else constant(m), 1.0, return_attention_scores,
                                   dropout, self._rng, weights_after_dropout=True)
        else:
            out, weights = self._apply_scores(scores, v, m, dropout)
        if qm is not None:
            out = out * constant(qm[:, :, None].astype(out.dtype))
        return (out, weights) if return_attention_scores else out

    def _calculate_scores(self, q, k):
        """The scores ``(batch, T, S)`` as package ops, or None for "dot" (computed inside ``attention``).

        "concat" is Keras 3's ``w · Σ_f tanh(scale · (q[:, :, None] + k[:, None]))``.
        """
        if self.score_mode == "dot":
            return None
        z = expand_dims(q, -2) + expand_dims(k, -3)                 # (batch, T, S, d)
        if self.use_scale:
            z = self.scale * z
        return self.concat_score_weight * _sum(tanh(z), axis=-1)

    def _apply_scores(self, scores, v, m, dropout):
        """``(softmax(scores, masked −1e9) V, weights)`` from scores built of package ops; the weights
        returned are the ones after dropout (those ``V`` was averaged with, as Keras' ``Attention``), and
        a query whose keys are all masked gets weights 0."""
        if m is not None:                                           # as Keras: −1e9 on the masked scores
            scores = scores + constant(np.where(m, 0.0, -1e9).astype(scores.dtype))
        weights = softmax(scores, axis=-1)
        if m is not None:       # a query whose keys are all masked gets weights 0 (as the attention op)
            weights = weights * constant(m.astype(weights.dtype))
        weights = _dropped(weights, dropout, self._rng)
        return matmul(weights, v), weights

    def _qvk(self, inputs):
        """Query, value and key (default: the value) of ``[query, value]`` or ``[query, value, key]``, checked."""
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) == 3 else v
        if q.ndim != 3 or v.ndim != 3 or k.ndim != 3:
            raise ValueError(f"{self.name}: query, value and key should be (batch, steps, features), got "
                             f"{q.shape}, {v.shape}, {k.shape}.")
        _check_qkv(self.name, q, k, v)
        return q, v, k

    def _masks(self, q, v, mask, use_causal_mask):
        """``(query mask (batch, T) or None, score mask (batch or 1, 1 or T, S) or None)`` as numpy booleans,
        from ``mask=[query_mask, value_mask]`` and ``use_causal_mask``; a mask of the wrong shape is refused."""
        q_mask = v_mask = None
        if mask is not None:
            q_mask, v_mask = (list(mask) + [None, None])[:2]
        T, S = q.shape[1], v.shape[1]
        m = None
        if v_mask is not None:
            m = _mask_tensor(v_mask)._value
            if m.shape != (q.shape[0], S):
                raise ValueError(f"{self.name}: the value mask should have shape {(q.shape[0], S)}, got {m.shape}.")
            m = m[:, None, :]
        if use_causal_mask:
            causal = np.tril(np.ones((T, S), dtype=bool))[None]
            m = causal if m is None else m & causal
        qm = None
        if q_mask is not None:
            qm = _mask_tensor(q_mask)._value
            if qm.shape != (q.shape[0], T):
                raise ValueError(f"{self.name}: the query mask should have shape {(q.shape[0], T)}, got {qm.shape}.")
        return qm, m


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention, as ``keras.layers.AdditiveAttention`` (Keras 3).

    ``attention([query, value])`` or ``attention([query, value, key])`` with
    query ``(batch, T, d)``, value ``(batch, S, dv)`` and key ``(batch, S, d)``
    (default: the value)::

        scores[n, t, s] = Σ_f scale[f] · tanh(query[n, t, f] + key[n, s, f])
        out             = softmax(scores + mask) value

    ``scale`` is a trainable ``(d,)`` vector (``glorot_uniform``, Keras' weight
    ``scale``) with ``use_scale=True`` (the default), else 1. Masks, causal
    mask, ``dropout``, ``return_attention_scores`` and the output's mask are
    those of :class:`Attention`: masked values get no weight, masked query
    rows give 0, and a query whose keys are all masked gets weights 0. The
    scores are built from the package's ops (``expand_dims``, ``add``,
    ``tanh``, ``multiply``, ``sum``, ``softmax``, ``matmul``), so every factor
    of the chain rule shows on the graph.

        >>> att = AdditiveAttention()
        >>> out, w = att([np.ones((2, 3, 4)), np.ones((2, 5, 4))], return_attention_scores=True)
        >>> out.shape, w.shape, att.scale.shape
        ((2, 3, 4), (2, 3, 5), (4,))
    """

    def __init__(self, use_scale=True, dropout=0.0, seed=None, **kwargs):
        if "score_mode" in kwargs:
            raise TypeError(f"AdditiveAttention: score_mode={kwargs['score_mode']!r} is not an argument of "
                            "AdditiveAttention (its scores are always additive, as in Keras); leave it out, or "
                            "use Attention for dot-product scores.")
        super().__init__(use_scale=use_scale, dropout=dropout, seed=seed, **kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["score_mode"]            # as Keras 3: not an argument of this layer
        return config

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) not in (2, 3):
            raise ValueError(f"{self.name}: call it on a list [query, value] or [query, value, key], "
                             f"got inputs of shape {input_shape}.")
        dim = input_shape[0][-1]
        if dim is None:
            raise ValueError(f"{self.name}: the query's feature axis (last) must have a known size, got shape "
                             f"{input_shape[0]}.")
        self.scale = self.add_weight((dim,), "glorot_uniform", name="scale") if self.use_scale else None

    def _qvk(self, inputs):
        q, v, k = super()._qvk(inputs)
        if self.use_scale and q.shape[-1] != self.scale.shape[0]:
            raise ValueError(f"{self.name}: this layer was built for query and key features of size "
                             f"{self.scale.shape[0]}, got query {q.shape} and key {k.shape}. A layer keeps the "
                             "sizes of its first call; make a new AdditiveAttention for other sizes.")
        return q, v, k

    def _calculate_scores(self, q, k):
        """Keras 3's additive scores ``Σ_f scale[f] · tanh(q[:, :, None] + k[:, None])``."""
        z = tanh(expand_dims(q, -2) + expand_dims(k, -3))          # (batch, T, S, d)
        return _sum(z * self.scale if self.use_scale else z, axis=-1)


def _attend(q, k, v, mask, scale, return_weights, dropout, rng, weights_after_dropout=False):
    """``(O, A)``: one ``attention`` op, or ``attention_weights`` then ``matmul`` when the weights are
    wanted or dropped out (dropout on the weights, as Keras). ``A`` is the weights before dropout, as
    Keras' ``MultiHeadAttention`` returns them, or after it with ``weights_after_dropout`` (Keras'
    ``Attention``: the weights the values were averaged with)."""
    extra = () if mask is None else (mask,)
    if not (return_weights or dropout):
        return _call(_rules.attention, q, k, v, *extra, scale=scale), None
    weights = _call(_rules.attention_weights, q, k, *extra, scale=scale)
    used = _dropped(weights, dropout, rng)
    return matmul(used, v), used if weights_after_dropout else weights


def _dropped(weights, dropout, rng):
    """The attention weights with a fraction ``dropout`` of them dropped and the rest scaled by
    ``1 / (1 − dropout)`` (a constant mask: its factor on the graph); unchanged when ``dropout`` is 0."""
    if not dropout:
        return weights
    keep = (rng or session.generator()).random(weights.shape) >= dropout
    return weights * constant(keep.astype(weights.dtype) / (1.0 - dropout))


def _shape_of(x) -> tuple:
    if isinstance(x, Tensor):
        return tuple(x.shape)
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)
