"""Rule-table section: attention, shown as one factor on the graph.

Rules here follow the conventions of :mod:`autodiff_viz.rules` (cotangents
with leading batch axes, VJPs written with rule calls).

Scaled dot-product attention, for queries ``Q (..., Tq, d)``, keys
``K (..., Tk, d)``, values ``V (..., Tk, dv)``, a boolean ``mask``
broadcastable to ``(..., Tq, Tk)`` (True: may attend) and a scale ``s``
(the param ``scale``; the layers pass ``1/√d``)::

    S = s·Q Kᵀ,   masked entries set to −∞
    A = softmax(S) along the keys      (attention_weights)
    O = A V                            (attention)

A row whose keys are all masked attends to nothing: its weights are 0
(Keras multiplies the softmax by the mask for the same reason). Going
back, with ``ḡ`` the upstream gradient of ``O``::

    ḡ_V = Aᵀ ḡ
    ḡ_A = ḡ Vᵀ
    ḡ_S = A ⊙ (ḡ_A − rowsum(ḡ_A ⊙ A))      (the softmax's Jacobian)
    ḡ_Q = s·ḡ_S K,    ḡ_K = s·ḡ_Sᵀ Q

The mask has no gradient. ``Q``, ``K`` and ``V`` must share their leading
axes (the layers make them so); nothing is broadcast between them.
"""
from __future__ import annotations

import numpy as np

from . import _mT, define, matmul, sum  # noqa: A004


def _scores(q, k, mask, scale):
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    return s if mask is None else np.where(mask, s, -np.inf)


def _weights_forward(q, k, mask=None, *, scale):
    s = _scores(q, k, mask, scale)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0))
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


def _attention_forward(q, k, v, mask=None, *, scale):
    return np.matmul(_weights_forward(q, k, mask, scale=scale), v)


def _softmax_back(gA, A):
    """ḡ_S = A ⊙ (ḡ_A − rowsum(ḡ_A ⊙ A)): a softmax's VJP (also its JVP, with a tangent for ḡ_A)."""
    return A * (gA - sum(gA * A, axis=(-1,), keepdims=True))


def _weights(q, k, mask, scale):
    """A, recomputed with a rule call (so a recorded backward pass can differentiate it again)."""
    return attention_weights(q, k, scale=scale) if mask is None else attention_weights(q, k, mask, scale=scale)


# ----- A = softmax(s·Q Kᵀ + mask) --------------------------------------------
def _aw_vjp_q(g, y, q, k, mask=None, *, scale):
    return matmul(_softmax_back(g, y), k) * scale


def _aw_vjp_k(g, y, q, k, mask=None, *, scale):
    return matmul(_mT(_softmax_back(g, y)), q) * scale


def _aw_jvp_q(dq, y, q, k, mask=None, *, scale):
    return _softmax_back(matmul(dq, _mT(k)) * scale, y)


def _aw_jvp_k(dk, y, q, k, mask=None, *, scale):
    return _softmax_back(matmul(q, _mT(dk)) * scale, y)


attention_weights = define(
    "attention_weights", _weights_forward,
    doc="A = softmax(s·Q Kᵀ, masked entries −∞) along the keys; a fully masked row is 0",
    q=("s·(A ⊙ (ḡ − rowsum(A ⊙ ḡ))) K", _aw_vjp_q, _aw_jvp_q),
    k=("s·(A ⊙ (ḡ − rowsum(A ⊙ ḡ)))ᵀ Q", _aw_vjp_k, _aw_jvp_k),
    mask=None)


# ----- O = A V ------------------------------------------------------------------
def _at_vjp_q(g, y, q, k, v, mask=None, *, scale):
    A = _weights(q, k, mask, scale)
    return matmul(_softmax_back(matmul(g, _mT(v)), A), k) * scale


def _at_vjp_k(g, y, q, k, v, mask=None, *, scale):
    A = _weights(q, k, mask, scale)
    return matmul(_mT(_softmax_back(matmul(g, _mT(v)), A)), q) * scale


def _at_vjp_v(g, y, q, k, v, mask=None, *, scale):
    return matmul(_mT(_weights(q, k, mask, scale)), g)


def _at_jvp_q(dq, y, q, k, v, mask=None, *, scale):
    A = _weights(q, k, mask, scale)
    return matmul(_softmax_back(matmul(dq, _mT(k)) * scale, A), v)


def _at_jvp_k(dk, y, q, k, v, mask=None, *, scale):
    A = _weights(q, k, mask, scale)
    return matmul(_softmax_back(matmul(q, _mT(dk)) * scale, A), v)


def _at_jvp_v(dv, y, q, k, v, mask=None, *, scale):
    return matmul(_weights(q, k, mask, scale), dv)


attention = define(
    "attention", _attention_forward,
    doc="O = softmax(s·Q Kᵀ, masked entries −∞) V: scaled dot-product attention as one op",
    q=("s·(A ⊙ (ḡVᵀ − rowsum(A ⊙ ḡVᵀ))) K, A = softmax(s·QKᵀ)", _at_vjp_q, _at_jvp_q),
    k=("s·(A ⊙ (ḡVᵀ − rowsum(A ⊙ ḡVᵀ)))ᵀ Q, A = softmax(s·QKᵀ)", _at_vjp_k, _at_jvp_k),
    v=("Aᵀ ḡ, A = softmax(s·QKᵀ)", _at_vjp_v, _at_jvp_v),
    mask=None)
