"""Contractions: ``matmul`` and ``einsum`` (``dot``, ``inner``, ``outer``, ``tensordot`` are einsum by another name).

The VJP of a contraction is a contraction: ``ḡ_A = ḡ · Bᵀ``, ``ḡ_B = Aᵀ · ḡ`` for ``matmul``, and for einsum the
output's subscripts swapped with the input's.
"""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from ..engine import unbroadcast
from .elementwise import _raw
from .reductions import sum
from .shapes import broadcast_to, transpose
from .table import _alias, _batch, define


# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------
def _mT(a):
    """Swap the last two axes (a matrix transpose that keeps batch axes)."""
    n = a.ndim
    return a.T if n == 2 else transpose(a, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _mm_shapes(x, w):
    """Shapes of ``x``, ``w`` and ``y`` with 1-D operands promoted to matrices."""
    xs = (1,) + x.shape if x.ndim == 1 else x.shape
    ws = w.shape + (1,) if w.ndim == 1 else w.shape
    ys = np.broadcast_shapes(xs[:-2], ws[:-2]) + (xs[-2], ws[-1])
    return xs, ws, ys


def _rows(a, n):
    """``a`` as one matrix of rows of length ``n``: every leading axis folded into the rows.

    Where one operand is a plain matrix ``W``, ``x @ W`` is the same product
    for every row of ``x`` whatever stack the rows sit in, so the VJPs fold
    the stack into one matrix and make one BLAS product (twice as fast as
    ``np.matmul``'s product per matrix of the stack followed by a sum over
    the stack, for a 32×50×64 ``x``).
    """
    return a.reshape((-1, n))


def _matmul_vjp_x(g, y, x, w):
    if x.ndim == 2 and w.ndim == 2:      # the common cases first: no promotion, nothing broadcast
        return g @ w.T
    if x.ndim > 2 and w.ndim == 2:       # rows of a stack times one matrix (Dense on a sequence): see _rows
        return (_rows(g, w.shape[1]) @ w.T).reshape(g.shape[:-1] + (w.shape[0],))
    if x.ndim == 2 and w.ndim == 1:      # matrix @ vector: an outer product per cotangent
        return g.reshape(g.shape + (1,)) * w
    B = _batch(g, y)
    xs, ws, ys = _mm_shapes(x, w)
    gx = g.reshape(B + ys) @ _mT(w.reshape(ws))
    return unbroadcast(gx, xs, len(ys)).reshape(B + x.shape)


def _matmul_vjp_w(g, y, x, w):
    if x.ndim == 2 and w.ndim == 2:
        return x.T @ g
    if x.ndim > 2 and w.ndim == 2 and g.ndim == y.ndim:
        return _rows(x, w.shape[0]).T @ _rows(g, w.shape[1])
    if x.ndim == 2 and w.ndim == 1:      # one matrix product for the whole batch of cotangents
        return g @ x
    B = _batch(g, y)
    xs, ws, ys = _mm_shapes(x, w)
    gw = _mT(x.reshape(xs)) @ g.reshape(B + ys)
    return unbroadcast(gw, ws, len(ys)).reshape(B + w.shape)


def _matmul_jvp_x(dx, y, x, w):
    B = dx.shape[:dx.ndim - x.ndim]
    xs, ws, ys = _mm_shapes(x, w)
    ones = (1,) * (len(ys) - len(xs))
    return (dx.reshape(B + ones + xs) @ w.reshape(ws)).reshape(B + y.shape)


def _matmul_jvp_w(dw, y, x, w):
    if x.ndim == 2 and w.ndim == 1:
        return dw @ x.T
    B = dw.shape[:dw.ndim - w.ndim]
    xs, ws, ys = _mm_shapes(x, w)
    ones = (1,) * (len(ys) - len(ws))
    return (x.reshape(xs) @ dw.reshape(B + ones + ws)).reshape(B + y.shape)


matmul = define(
    "matmul", np.matmul, doc="y = x @ W", saves="inputs",
    x=("· Wᵀ", _matmul_vjp_x, _matmul_jvp_x),
    W=("xᵀ ·", _matmul_vjp_w, _matmul_jvp_w))


# ---------------------------------------------------------------------------
# einsum: contractions (dot, inner, outer, tensordot are einsum under their own names)
# ---------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _explicit(subscripts, ndims):
    """``(inputs, output)`` letter strings of ``subscripts`` with ``...`` spelled out in fresh letters."""
    return _explicit_cached(subscripts, tuple(ndims))


@functools.lru_cache(maxsize=512)
def _explicit_cached(subscripts, ndims):
    # Cached: a training loop parses the same few subscripts (and their VJPs' subscripts) at every step.
    ins, out = subscripts.split("->")
    ins = ins.split(",")
    fresh = [c for c in _LETTERS if c not in subscripts]
    width = 0
    for s, n in zip(ins, ndims):
        if "..." in s:
            width = builtins.max(width, n - len(s.replace("...", "")))
    dots = "".join(fresh[:width])
    ins = tuple(s.replace("...", dots[width - (n - len(s.replace("...", ""))):]) if "..." in s else s
                for s, n in zip(ins, ndims))
    return ins, out.replace("...", dots)


@functools.lru_cache(maxsize=512)
def _pair_plan(sa, sb, so):
    """How ``sa,sb->so`` is one batched matrix product: ``(batch, left, inner, right, perm_a, perm_b, perm_out)``.

    ``a`` transposed by ``perm_a`` is ``batch + left + inner``, ``b`` by
    ``perm_b`` is ``batch + inner + right``, and the product (``batch + left
    + right``) transposed by ``perm_out`` is ``so``; a permutation that
    changes nothing is None. None for a contraction that is not such a
    product (a repeated index, an index summed inside one operand only).
    Cached, so that the per-call work is only the shapes and the product.
    """
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb) or len(set(so)) != len(so):
        return None
    if any(c not in so and c not in other for s, other in ((sa, sb), (sb, sa)) for c in s):
        return None     # an index summed inside one operand only
    batch = "".join(c for c in so if c in sa and c in sb)
    left = "".join(c for c in so if c in sa and c not in sb)
    right = "".join(c for c in so if c in sb and c not in sa)
    inner = "".join(c for c in sa if c in sb and c not in so)
    if len(batch) + len(left) + len(right) != len(so):
        return None

    def perm(src, dst):
        p = tuple(src.index(c) for c in dst)
        return None if p == tuple(range(len(p))) else p

    return batch, left, inner, right, perm(sa, batch + left + inner), perm(sb, batch + inner + right), \
        perm(batch + left + right, so)


def _einsum_pair(a, b, sa, sb, so):
    """A two-operand contraction as one (batched) matrix product, or None when einsum must do it.

    ``np.matmul`` on stacked operands is one BLAS product per matrix of the
    stack (transposed operands are passed to BLAS as such, not copied);
    ``np.einsum`` without ``optimize`` would loop in C without BLAS, and with
    it would plan the path at every call.
    """
    plan = _pair_plan(sa, sb, so)
    if plan is None:
        return None
    batch, left, inner, right, perm_a, perm_b, perm_out = plan
    size = dict(zip(sa, a.shape))
    for c, n in zip(sb, b.shape):
        if size.setdefault(c, n) != n:
            return None     # axes that broadcast: einsum does that
    bshape = tuple([size[c] for c in batch])
    rows, inn, cols = (math.prod([size[c] for c in cs]) for cs in (left, inner, right))
    A = a if perm_a is None else a.transpose(perm_a)
    if A.shape != bshape + (rows, inn):
        A = A.reshape(bshape + (rows, inn))
    B = b if perm_b is None else b.transpose(perm_b)
    if B.shape != bshape + (inn, cols):
        B = B.reshape(bshape + (inn, cols))
    out = np.matmul(A, B)
    full = bshape + tuple([size[c] for c in left + right])
    if out.shape != full:
        out = out.reshape(full)
    return out if perm_out is None else out.transpose(perm_out)


def _einsum(*xs, subscripts):
    if len(xs) == 2:
        (sa, sb), so = _explicit(subscripts, [x.ndim for x in xs])
        out = _einsum_pair(xs[0], xs[1], sa, sb, so)
        if out is not None:
            return out
    return np.einsum(subscripts, *xs, optimize=len(xs) > 2)


def _einsum_vjp(g, y, *xs, i, subscripts):
    ins, out = _explicit(subscripts, [x.ndim for x in xs])
    target = ins[i]
    used = set(out).union(*[set(s) for k, s in enumerate(ins) if k != i])
    fresh = iter(c for c in _LETTERS if c not in "".join(ins) + out)
    operands = [g] + [x for k, x in enumerate(xs) if k != i]
    subs = ["..." + out] + [s for k, s in enumerate(ins) if k != i]
    dtype = _raw(xs[i]).dtype
    result = ""
    for c, n in zip(target, xs[i].shape):
        if c in result:             # a repeated index (a diagonal): tie a fresh letter to it with an identity
            f = next(fresh)
            operands.append(np.eye(n, dtype=dtype))
            subs.append(c + f)
            result += f
        else:
            if c not in used:       # summed only inside this operand: its gradient is copied along c
                operands.append(np.ones(n, dtype=dtype))
                subs.append(c)
            result += c
    gx = einsum(*operands, subscripts=",".join(subs) + "->..." + result)
    x_shape, n = xs[i].shape, xs[i].ndim
    if gx.shape[gx.ndim - n:] == x_shape:
        return gx
    # numpy's einsum broadcasts axes of size 1 against the other operands' (this one's or theirs): the gradient
    # of a broadcast axis of x is the sum over its copies, and an axis of x met by a broadcast one gets copies
    spread = tuple(k - n for k, size in enumerate(x_shape) if size == 1 and gx.shape[gx.ndim - n + k] != 1)
    if spread:
        gx = sum(gx, axis=spread, keepdims=True)
    if gx.shape[gx.ndim - n:] != x_shape:
        gx = broadcast_to(gx, shape=gx.shape[:gx.ndim - n] + x_shape)
    return gx


def _einsum_jvp(dx, y, *xs, i, subscripts):
    ins, out = _explicit(subscripts, [x.ndim for x in xs])
    ins = ["..." + s if k == i else s for k, s in enumerate(ins)]
    return einsum(*[dx if k == i else x for k, x in enumerate(xs)], subscripts=",".join(ins) + "->..." + out)


einsum = define(
    "einsum", _einsum, variadic=True, doc="y = Σ over the contracted indices of the product of the operands",
    x=("einsum of ḡ with the other operands", _einsum_vjp, _einsum_jvp))


dot = _alias(einsum, "dot", "y = a · b (numpy's dot: the last axis of a with the second-to-last of b)")


inner = _alias(einsum, "inner", "y = Σ a·b over the last axes")


outer = _alias(einsum, "outer", "yᵢⱼ = aᵢ·bⱼ")


tensordot = _alias(einsum, "tensordot", "y = Σ a·b over the given pairs of axes")
