"""Rule-table section: neural-network ops shown as one factor (convolution, pooling).

Rules here follow the conventions of :mod:`autodiff_viz.rules` (cotangents
with leading batch axes, VJPs written with rule calls).

Convolution (channels last, Keras' kernel layout ``(*k, C_in/groups, C_out)``)
is three rules that are the three faces of one trilinear form
``T(x, W, ḡ) = ⟨conv(x, W), ḡ⟩``:

* ``conv(x, W)``: ``y[n, p, o] = Σ_{k, c} x_pad[n, p·s + k·d, c] · W[k, c, o]``
  (a correlation, written ``x ⋆ W``, as every deep-learning library computes it);
* ``conv_input_grad(ḡ, W)`` = ``∂T/∂x``: the *full* correlation of ḡ (spread
  out by the stride) with the *flipped* kernel — each ``ḡ[n, p, o]`` is sent
  back to the inputs its window read, weighted by ``W``;
* ``conv_kernel_grad(x, ḡ)`` = ``∂T/∂W``: the correlation of the input with ḡ,
  ``Σ_{n, p} x_pad[n, p·s + k·d, c] · ḡ[n, p, o]``.

Each is linear in each argument, so every VJP and JVP of each is one of the
three again: a backward pass through a convolution is made of convolutions
and can itself be recorded and differentiated (Hessians of a CNN).

The numpy forward is im2col + one matrix product: the windows are copied
into a ``(k·C_in, N·positions)`` matrix by one contiguous block copy per
kernel offset (this transposed layout is 3× faster than ``(N·positions,
k·C_in)`` when ``C_in`` is small) and multiplied by the kernel as a
``(k·C_in, C_out)`` matrix; the input gradient scatters ``W·ḡᵀ`` back with one
strided add per offset; the kernel gradient reuses the forward's windows
(see :func:`_im2col`). Measured on one thread, LeNet-5's two convolutions
(batch 64, 28×28×1 → 6@5×5 and 12×12×6 → 16@5×5), forward + both
gradients, milliseconds float64 / float32 (fastest of several runs on a
shared two-core machine; the order never changed):

| implementation | float64 | float32 |
|---|---|---|
| im2col + matmul, transposed layout (this module) | 10.3 | 5.0 |
| the same, windows copied again for the kernel gradient | 10.7 | 5.9 |
| the same, ``(N·positions, k·C_in)`` layout | 26.8 | 14.5 |
| ``sliding_window_view`` + ``tensordot`` | 42 | 20 |
| ``einsum`` over the ``sliding_window_view`` | 50 | 17 |
| one matmul per kernel offset | 26 | 17 |

``bias_add`` adds the per-channel bias with the gradient ``1ᵀ·ḡ`` (one
matrix-vector product, much faster than numpy's sum over the leading axes).

Pooling: ``max_pool`` sends the gradient of each window to its arg-max (the
first one in row-major window order when several entries tie, as TensorFlow
and PyTorch do; overlapping windows add up); ``avg_pool`` spreads it evenly
over the window's real (not padded) entries, TensorFlow's count for
``padding="same"``. Their VJPs are the rules ``max_pool_scatter`` /
``avg_pool_grad``, whose own VJPs are ``max_pool_gather`` / ``avg_pool``.

Cross-entropy from logits is one rule (as TensorFlow's
``softmax_cross_entropy_with_logits``), because its backward is the factor
every course derives: ``∂/∂z (−Σ y·log softmax(z)) = softmax(z)·Σy − y``,
which is ``p − y`` for labels that sum to one. ``sparse_softmax_cross_entropy``
takes class indices instead of one-hot rows (``p − onehot(label)``).

Params shared by these rules: ``strides``, ``pads`` (``((lo, hi), ...)``
per spatial axis; layers turn ``padding="same"`` into numbers) and, for
convolution, ``dilation`` and ``groups``. Spatial axes are the ones before
the channel axis; every axis in front of them is folded into one batch axis
(example batch and cotangent batch alike).
"""
from __future__ import annotations

import functools
import math
import threading
import weakref

import numpy as np

from ..tensor import Tensor
from . import (
    _batch,
    _keepdims_shape,
    _log_softmax,
    _softmax,
    broadcast_to,
    define,
    log_softmax,
    matmul,
    one_hot,
    softmax,
)
from . import sum as reduce_sum

# ---------------------------------------------------------------------------
# numpy helpers: padding, windows (im2col) and their transpose (col2im)
# ---------------------------------------------------------------------------


def _out_sizes(spatial, ksize, strides, pads, dilation):
    return tuple((n + lo + hi - (k - 1) * d - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(spatial, ksize, strides, pads, dilation))


def _window_slices(ksize, strides, dilation, out):
    """For every kernel offset: its multi-index and the strided slice of the padded input it reads."""
    out_slices = []
    for offs in np.ndindex(*ksize):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(offs, dilation, strides, out))
        out_slices.append((offs, (slice(None),) + sl))
    return out_slices


def _im2col_uncached(x, ksize, strides, pads, dilation, groups):
    """Windows of ``x`` ``(L, *sp, C)`` as a matrix per group, ``(G, k·C/G, L·positions)``, and the output size.

    Columns run over (example, position) so that the copy for each kernel
    offset is one contiguous block: this transposed layout is three times
    faster than ``(positions, k·C)`` when ``C`` is small (LeNet's first layer).
    """
    nsp = len(ksize)
    out = _out_sizes(x.shape[1:1 + nsp], ksize, strides, pads, dilation)
    C, L = x.shape[-1], x.shape[0]
    xt = np.moveaxis(x, -1, 0)                                        # (C, L, *sp), a view
    if any(lo or hi for lo, hi in pads):
        xt = np.pad(xt, ((0, 0), (0, 0)) + tuple(pads))
    xt = xt.reshape((groups, C // groups) + xt.shape[1:])
    cols = np.empty((groups,) + tuple(ksize) + (C // groups, L) + out, dtype=x.dtype)
    for offs, sl in _window_slices(ksize, strides, dilation, out):
        cols[(slice(None),) + offs] = xt[(slice(None), slice(None)) + sl]
    return cols.reshape(groups, -1, L * int(np.prod(out))), out


_WINDOWS: dict = {}            # id(x) -> (weakref to x, params, (cols, out)): see _im2col
_WINDOWS_MAX_BYTES = 256 * 2 ** 20
_WINDOWS_LOCK = threading.RLock()   # tapes run in several threads; freed arrays call _forget at any time


def _im2col(x, ksize, strides, pads, dilation, groups):
    """:func:`_im2col_uncached`, remembered while ``x`` is alive.

    A training step needs the windows of a convolution's input twice: in
    the forward pass and for the kernel gradient. Rules keep no state, but
    arrays on a tape are never changed in place, so the windows of the same
    array object are the same; they are kept (up to 256 MB in all) until
    that array is freed: one window copy less per convolution and training step.
    """
    key = (tuple(ksize), strides, pads, dilation, groups)
    hit = _WINDOWS.get(id(x))
    if hit is not None and hit[0]() is x and hit[1] == key:
        return hit[2]
    found = _im2col_uncached(x, ksize, strides, pads, dilation, groups)
    size = found[0].nbytes
    if size > _WINDOWS_MAX_BYTES // 4:
        return found
    try:
        ref = weakref.ref(x, functools.partial(_forget, id(x)))
    except TypeError:
        return found
    with _WINDOWS_LOCK:
        while _WINDOWS and sum(e[2][0].nbytes for e in _WINDOWS.values()) + size > _WINDOWS_MAX_BYTES:
            _WINDOWS.pop(next(iter(_WINDOWS)))
        _WINDOWS[id(x)] = (ref, key, found)
    return found


def _forget(key, ref):
    with _WINDOWS_LOCK:
        entry = _WINDOWS.get(key)
        if entry is not None and entry[0] is ref:
            del _WINDOWS[key]


def _col2im(cols, L, out, spatial, ksize, strides, pads, dilation, groups):
    """The transpose of :func:`_im2col`: add every window entry back where it was read -> ``(L, *sp, C)``."""
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads))
    cols = cols.reshape((groups,) + tuple(ksize) + (-1, L) + tuple(out))
    xp = np.zeros((groups, cols.shape[1 + len(ksize)], L) + padded, dtype=cols.dtype)
    for offs, sl in _window_slices(ksize, strides, dilation, out):
        xp[(slice(None), slice(None)) + sl] += cols[(slice(None),) + offs]
    crop = (slice(None),) * 3 + tuple(slice(lo, lo + n) for n, (lo, _) in zip(spatial, pads))
    xp = xp[crop].reshape((-1, L) + tuple(spatial))
    return np.ascontiguousarray(np.moveaxis(xp, 0, -1))


def _fold(x, core_ndim):
    """``x`` with every axis before its last ``core_ndim`` folded into one: (array, leading shape).

    With a single leading axis ``x`` itself comes back (not a view), so
    :func:`_im2col` recognises it.
    """
    lead = x.shape[:x.ndim - core_ndim]
    if len(lead) == 1:
        return x, lead
    return x.reshape((-1,) + x.shape[x.ndim - core_ndim:]), lead


def _grouped(w, nsp, groups):
    """The kernel ``(*k, C_in/G, C_out)`` as one matrix per group, ``(G, k·C_in/G, C_out/G)``."""
    K = int(np.prod(w.shape[:nsp])) * w.shape[nsp]
    if groups == 1:
        return w.reshape(1, K, w.shape[-1])
    return w.reshape(K, groups, -1).transpose(1, 0, 2)


def _g_grouped(g, groups):
    """An upstream gradient ``(L, *out, C_out)`` as ``(G, L·positions, C_out/G)``."""
    if groups == 1:
        return g.reshape(1, -1, g.shape[-1])
    return g.reshape(-1, groups, g.shape[-1] // groups).transpose(1, 0, 2)


# ----- the three convolution faces, without batch axes on the kernel -----------


def _conv_core(x, w, strides, pads, dilation, groups):
    """``x`` ``(L, *sp, C_in)``, ``w`` ``(*k, C_in/G, C_out)`` -> ``(L, *out, C_out)``."""
    nsp = len(strides)
    cols, out = _im2col(x, w.shape[:nsp], strides, pads, dilation, groups)
    wg = _grouped(w, nsp, groups)
    if groups == 1:
        y = cols[0].T @ wg[0]
    else:
        y = (cols.transpose(0, 2, 1) @ wg).transpose(1, 0, 2).reshape(cols.shape[-1], -1)
    return y.reshape((x.shape[0],) + out + (w.shape[-1],))


def _input_grad_core(g, w, spatial, strides, pads, dilation, groups):
    """``g`` ``(L, *out, C_out)`` -> ``(L, *spatial, C_in)``: ḡ·Wᵀ scattered back to the windows."""
    nsp = len(strides)
    wg, gg = _grouped(w, nsp, groups), _g_grouped(g, groups)
    cols = wg[0] @ gg[0].T if groups == 1 else wg @ gg.transpose(0, 2, 1)
    return _col2im(cols, g.shape[0], g.shape[1:1 + nsp], spatial, w.shape[:nsp], strides, pads, dilation, groups)


def _kernel_grad_core(x, g, ksize, strides, pads, dilation, groups):
    """``x`` ``(L, *sp, C_in)``, ``g`` ``(L, *out, C_out)`` -> ``(*k, C_in/G, C_out)``."""
    cols, out = _im2col(x, ksize, strides, pads, dilation, groups)
    gg = _g_grouped(g, groups)
    cgi = x.shape[-1] // groups
    if groups == 1:
        return (cols[0] @ gg[0]).reshape(tuple(ksize) + (cgi, g.shape[-1]))
    gw = (cols @ gg).reshape((groups, -1, cgi, gg.shape[-1]))             # (G, K, cgi, cgo)
    return gw.transpose(1, 2, 0, 3).reshape(tuple(ksize) + (cgi, g.shape[-1]))


def _channels_to_front(a, batch, groups):
    """``(..., G·B·c)`` with channels ordered (group, batch, c) -> ``(prod(B), ..., G·c)``."""
    nb = int(np.prod(batch))
    head = a.shape[:-1]
    a = a.reshape(head + (groups, nb, -1))
    a = np.moveaxis(a, -2, 0)
    return a.reshape((nb,) + head + (-1,))


def _batch_into_channels(a, nbatch, groups):
    """Batch axes ``(B..., ..., G·c)`` folded into the channel axis as ``(..., G·B·c)``."""
    nb = int(np.prod(a.shape[:nbatch]))
    core = a.shape[nbatch:]
    a = a.reshape((nb,) + core[:-1] + (groups, -1))
    a = np.moveaxis(a, 0, -2)
    return a.reshape(core[:-1] + (-1,))


def _each(fn, a, b, a_core, b_core):
    """Both operands carry batch axes: broadcast them and apply ``fn`` per batch entry."""
    ba, bb = a.shape[:a.ndim - a_core], b.shape[:b.ndim - b_core]
    B = np.broadcast_shapes(ba, bb)
    a = np.broadcast_to(a, B + a.shape[a.ndim - a_core:]).reshape((-1,) + a.shape[a.ndim - a_core:])
    b = np.broadcast_to(b, B + b.shape[b.ndim - b_core:]).reshape((-1,) + b.shape[b.ndim - b_core:])
    outs = [fn(ai, bi) for ai, bi in zip(a, b)]
    return np.stack(outs).reshape(B + outs[0].shape)


def _conv_forward(x, w, strides, pads, dilation, groups):
    nsp = len(strides)
    wb = w.ndim - nsp - 2
    if wb == 0:
        xf, lead = _fold(x, nsp + 1)
        y = _conv_core(xf, w, strides, pads, dilation, groups)
        return y.reshape(lead + y.shape[1:])
    if x.ndim > nsp + 2:
        return _each(lambda a, b: _conv_forward(a, b, strides, pads, dilation, groups), x, w, nsp + 2, nsp + 2)
    # a batch of kernels (a tangent or cotangent of W): fold it into the output channels
    B = w.shape[:wb]
    wf = _batch_into_channels(w, wb, groups)
    y = _conv_core(x, wf, strides, pads, dilation, groups)
    return _channels_to_front(y, B, groups).reshape(B + y.shape[:-1] + (-1,))


def _conv_input_grad(g, w, spatial, strides, pads, dilation, groups):
    nsp = len(strides)
    wb = w.ndim - nsp - 2
    if wb == 0:
        gf, lead = _fold(g, nsp + 1)
        gx = _input_grad_core(gf, w, spatial, strides, pads, dilation, groups)
        return gx.reshape(lead + gx.shape[1:])
    if g.ndim > nsp + 2:
        return _each(lambda a, b: _conv_input_grad(a, b, spatial, strides, pads, dilation, groups),
                     g, w, nsp + 2, nsp + 2)
    # a batch of kernels: fold it into the input channels (within each group)
    B = w.shape[:wb]
    ws = w.reshape((-1,) + w.shape[wb:])                     # (nb, *k, cgi, C_out)
    wf = np.moveaxis(ws, 0, -3).reshape(w.shape[wb:wb + nsp] + (-1, w.shape[-1]))
    gx = _input_grad_core(g, wf, spatial, strides, pads, dilation, groups)
    return _channels_to_front(gx, B, groups).reshape(B + gx.shape[:-1] + (-1,))


def _conv_kernel_grad(x, g, ksize, strides, pads, dilation, groups):
    nsp = len(strides)
    xb, gb = x.ndim - nsp - 2, g.ndim - nsp - 2
    if xb == 0 and gb == 0:
        return _kernel_grad_core(x, g, ksize, strides, pads, dilation, groups)
    if xb and gb:
        return _each(lambda a, b: _conv_kernel_grad(a, b, ksize, strides, pads, dilation, groups),
                     x, g, nsp + 2, nsp + 2)
    if gb:   # a batch of upstream gradients: fold it into the output channels
        B = g.shape[:gb]
        gw = _kernel_grad_core(x, _batch_into_channels(g, gb, groups), ksize, strides, pads, dilation, groups)
    else:    # a batch of inputs: fold it into the input channels
        B = x.shape[:xb]
        gw = _kernel_grad_core(_batch_into_channels(x, xb, groups), g, ksize, strides, pads, dilation, groups)
        gw = np.moveaxis(gw.reshape(gw.shape[:-2] + (int(np.prod(B)), -1, gw.shape[-1])), -3, 0)
        return gw.reshape(B + gw.shape[1:])
    return _channels_to_front(gw, B, groups).reshape(B + gw.shape[:-1] + (-1,))


def _spatial(x, nsp):
    return tuple(x.shape[x.ndim - nsp - 1:x.ndim - 1])


def _ksize(w, nsp):
    return tuple(w.shape[w.ndim - nsp - 2:w.ndim - 2])


conv = define(
    "conv", _conv_forward,
    doc="y[n, p, o] = Σ_{k, c} x[n, p·s + k·d, c] · W[k, c, o] (a correlation, channels last)",
    x=("· flip(W) (full correlation: conv_input_grad)",
       lambda g, y, x, W, strides, pads, dilation, groups: conv_input_grad(
           g, W, spatial=_spatial(x, len(strides)), strides=strides, pads=pads, dilation=dilation, groups=groups),
       lambda dx, y, x, W, strides, pads, dilation, groups: conv(
           dx, W, strides=strides, pads=pads, dilation=dilation, groups=groups)),
    W=("x ⋆ ·",
       lambda g, y, x, W, strides, pads, dilation, groups: conv_kernel_grad(
           x, g, ksize=_ksize(W, len(strides)), strides=strides, pads=pads, dilation=dilation, groups=groups),
       lambda dW, y, x, W, strides, pads, dilation, groups: conv(
           x, dW, strides=strides, pads=pads, dilation=dilation, groups=groups)))

conv_input_grad = define(
    "conv_input_grad", _conv_input_grad,
    doc="x̄ = full correlation of ḡ with the flipped W: the input gradient of conv",
    g=("⋆ W (conv)", lambda h, y, g, W, spatial, strides, pads, dilation, groups: conv(
           h, W, strides=strides, pads=pads, dilation=dilation, groups=groups),
       lambda dg, y, g, W, spatial, strides, pads, dilation, groups: conv_input_grad(
           dg, W, spatial=spatial, strides=strides, pads=pads, dilation=dilation, groups=groups)),
    W=("h̄ ⋆ ḡ (conv_kernel_grad)", lambda h, y, g, W, spatial, strides, pads, dilation, groups: conv_kernel_grad(
           h, g, ksize=_ksize(W, len(strides)), strides=strides, pads=pads, dilation=dilation, groups=groups),
       lambda dW, y, g, W, spatial, strides, pads, dilation, groups: conv_input_grad(
           g, dW, spatial=spatial, strides=strides, pads=pads, dilation=dilation, groups=groups)))

_upstream, _kernel = conv_input_grad.inputs      # the same VJPs and JVPs: only the names and texts differ
conv_transpose = define(
    "conv_transpose", _conv_input_grad, saves="inputs",
    doc="y = x scattered through W: the transposed convolution of Conv1DTranspose/Conv2DTranspose "
        "(the same computation as conv_input_grad, with x where that rule has ḡ)",
    x=("⋆ W (conv)", _upstream.vjp, _upstream.jvp),
    W=("ȳ ⋆ x (conv_kernel_grad)", _kernel.vjp, _kernel.jvp))

conv_kernel_grad = define(
    "conv_kernel_grad", _conv_kernel_grad,
    doc="W̄ = correlation of x with ḡ: the kernel gradient of conv",
    x=("ḡ ⋆ flip(h̄) (conv_input_grad)", lambda h, y, x, g, ksize, strides, pads, dilation, groups:
       conv_input_grad(g, h, spatial=_spatial(x, len(strides)), strides=strides, pads=pads, dilation=dilation,
                       groups=groups),
       lambda dx, y, x, g, ksize, strides, pads, dilation, groups: conv_kernel_grad(
           dx, g, ksize=ksize, strides=strides, pads=pads, dilation=dilation, groups=groups)),
    g=("x ⋆ h̄ (conv)", lambda h, y, x, g, ksize, strides, pads, dilation, groups: conv(
           x, h, strides=strides, pads=pads, dilation=dilation, groups=groups),
       lambda dg, y, x, g, ksize, strides, pads, dilation, groups: conv_kernel_grad(
           x, dg, ksize=ksize, strides=strides, pads=pads, dilation=dilation, groups=groups)))


def _bias_grad(g, y, x, b):
    """``ḡ`` summed over every axis but the channels, as one product ``1ᵀ·ḡ`` (cotangent batch kept).

    A matrix-vector product with ones is six times faster than ``ndarray.sum``
    over the leading axes of a ``(…, channels)`` array, where numpy's inner
    loop would run over only the few channels.
    """
    B = g.shape[:g.ndim - y.ndim]
    rows = y.size // b.shape[-1]
    return matmul(np.ones(rows, dtype=y.dtype), g.reshape(B + (rows, b.shape[-1])))


bias_add = define(
    "bias_add", np.add, doc="y = x + b, b (one value per channel) added at every position of every example",
    x=("1", lambda g, y, x, b: g, lambda dx, y, x, b: dx),
    b=("1ᵀ ·", _bias_grad,
       lambda db, y, x, b: broadcast_to(db.reshape(db.shape[:db.ndim - 1] + (1,) * (y.ndim - 1) + db.shape[-1:]),
                                        shape=db.shape[:db.ndim - 1] + y.shape)))


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


def _pool_slices(x, pool, strides, pads):
    """The output size and, per window offset, the slice of the padded ``x`` it reads (any leading axes)."""
    nsp = len(pool)
    spatial = x.shape[x.ndim - nsp - 1:x.ndim - 1]
    out = _out_sizes(spatial, pool, strides, pads, (1,) * nsp)
    return out, [(offs, (Ellipsis,) + sl[1:] + (slice(None),))
                 for offs, sl in _window_slices(pool, strides, (1,) * nsp, out)]


def _pad_spatial(x, pads, value=0.0):
    """``x`` padded on the spatial axes (those before the last), whatever axes lead."""
    if not any(lo or hi for lo, hi in pads):
        return x
    return np.pad(x, ((0, 0),) * (x.ndim - len(pads) - 1) + tuple(pads) + ((0, 0),), constant_values=value)


def _crop_spatial(xp, spatial, pads):
    return xp[(Ellipsis,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(spatial, pads)) + (slice(None),)]


def _max_windows(x, pool, strides, pads, best=None):
    """``(padded x, window slices, window maxima)``; padding is −∞ so it never wins.

    ``best``, the maxima if known (the VJP has them: they are max_pool's output), is not recomputed.
    """
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad_spatial(x, pads, fill)
    _, slices = _pool_slices(x, pool, strides, pads)
    if best is None:
        best = xp[slices[0][1]].copy()
        for _, sl in slices[1:]:
            np.maximum(best, xp[sl], out=best)
    return xp, slices, best


def _first_hits(xp, slices, best):
    """For each window offset, a mask of the windows whose first arg-max sits there."""
    found = None
    for k, (_, sl) in enumerate(slices):
        hit = np.equal(xp[sl], best)
        if found is None:
            found = hit.copy()
        else:
            np.greater(hit, found, out=hit)           # hit and not found before
            if k + 1 < len(slices):
                found |= hit
        yield sl, hit


def _max_pool(x, pool, strides, pads):
    return _max_windows(x, pool, strides, pads)[2]


def _max_pool_scatter(g, x, m, pool, strides, pads):
    """``g`` (batch + pooled shape) added at each window's first arg-max in ``x`` (``m``: the maxima)."""
    xp, slices, best = _max_windows(x, pool, strides, pads, m)
    gp = np.zeros(g.shape[:g.ndim - x.ndim] + xp.shape, dtype=g.dtype)
    overlap = any(s < p for s, p in zip(strides, pool))
    for sl, hit in _first_hits(xp, slices, best):
        if overlap:
            gp[sl] += g * hit
        else:                       # windows side by side: each entry is written once
            np.multiply(g, hit, out=gp[sl])
    return _crop_spatial(gp, x.shape[x.ndim - len(pool) - 1:-1], pads)


def _max_pool_gather(h, x, m, pool, strides, pads):
    """``h`` (batch + ``x.shape``) read at each window's first arg-max in ``x`` (``m``: the maxima)."""
    xp, slices, best = _max_windows(x, pool, strides, pads, m)
    hp = _pad_spatial(h, pads)
    out = np.zeros(h.shape[:h.ndim - x.ndim] + best.shape, dtype=h.dtype)
    for sl, hit in _first_hits(xp, slices, best):
        out += hp[sl] * hit
    return out


def _pool_counts(spatial, pool, strides, pads, dtype):
    """How many real (unpadded) entries each window holds: TensorFlow's divisor for average pooling."""
    if not any(lo or hi for lo, hi in pads):
        return dtype.type(int(np.prod(pool)))
    return _avg_sum(np.ones(tuple(spatial) + (1,), dtype=dtype), pool, strides, pads)


def _avg_sum(x, pool, strides, pads):
    xp = _pad_spatial(x, pads)
    _, slices = _pool_slices(x, pool, strides, pads)
    total = xp[slices[0][1]].copy()
    for _, sl in slices[1:]:
        total += xp[sl]
    return total


def _avg_pool(x, pool, strides, pads):
    spatial = x.shape[x.ndim - len(pool) - 1:-1]
    return (_avg_sum(x, pool, strides, pads) / _pool_counts(spatial, pool, strides, pads, x.dtype)).astype(
        x.dtype, copy=False)


def _avg_pool_grad(g, pool, strides, pads, spatial):
    nsp = len(pool)
    g = g / _pool_counts(spatial, pool, strides, pads, g.dtype)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads))
    gp = np.zeros(g.shape[:g.ndim - nsp - 1] + padded + g.shape[-1:], dtype=g.dtype)
    fake = np.broadcast_to(np.zeros((), g.dtype), tuple(spatial) + (1,))
    for _, sl in _pool_slices(fake, pool, strides, pads)[1]:
        gp[sl] += g
    return _crop_spatial(gp, spatial, pads)


max_pool = define(
    "max_pool", _max_pool, doc="y[n, p, c] = max over the window of x (padding never wins)",
    x=("1 at the window's arg-max, else 0 (max_pool_scatter)",
       lambda g, y, x, pool, strides, pads: max_pool_scatter(g, x, y, pool=pool, strides=strides, pads=pads),
       lambda dx, y, x, pool, strides, pads: max_pool_gather(dx, x, y, pool=pool, strides=strides, pads=pads)))

max_pool_scatter = define(
    "max_pool_scatter", _max_pool_scatter,
    doc="x̄ = ḡ placed at each window's arg-max of x (first one on ties; m: the window maxima), "
        "overlapping windows add",
    g=("place at arg-max", lambda h, y, g, x, m, pool, strides, pads: max_pool_gather(
           h, x, m, pool=pool, strides=strides, pads=pads),
       lambda dg, y, g, x, m, pool, strides, pads: max_pool_scatter(dg, x, m, pool=pool, strides=strides, pads=pads)),
    x=None, m=None)

max_pool_gather = define(
    "max_pool_gather", _max_pool_gather, doc="y = h read at each window's arg-max of x (m: the window maxima)",
    h=("read at arg-max", lambda g, y, h, x, m, pool, strides, pads: max_pool_scatter(
           g, x, m, pool=pool, strides=strides, pads=pads),
       lambda dh, y, h, x, m, pool, strides, pads: max_pool_gather(dh, x, m, pool=pool, strides=strides, pads=pads)),
    x=None, m=None)

avg_pool = define(
    "avg_pool", _avg_pool, doc="y[n, p, c] = mean of x over the window's real (unpadded) entries",
    x=("1/count on every window entry (avg_pool_grad)",
       lambda g, y, x, pool, strides, pads: avg_pool_grad(
           g, pool=pool, strides=strides, pads=pads, spatial=_spatial(x, len(pool))),
       lambda dx, y, x, pool, strides, pads: avg_pool(dx, pool=pool, strides=strides, pads=pads)))

avg_pool_grad = define(
    "avg_pool_grad", _avg_pool_grad, doc="x̄ = ḡ/count spread evenly over each window: the VJP of avg_pool",
    g=("spread over the window", lambda h, y, g, pool, strides, pads, spatial: avg_pool(
           h, pool=pool, strides=strides, pads=pads),
       lambda dg, y, g, pool, strides, pads, spatial: avg_pool_grad(
           dg, pool=pool, strides=strides, pads=pads, spatial=spatial)))


# ---------------------------------------------------------------------------
# Cross-entropy from logits
# ---------------------------------------------------------------------------
def _labels(labels) -> np.ndarray:
    """Class indices as a numpy integer array (a recorded walk passes them as a tensor)."""
    return labels._value if isinstance(labels, Tensor) else labels


def _xent(labels, logits, axis):
    """``−Σ y·log softmax(z)`` over ``axis``."""
    out = labels * _log_softmax(logits, axis)
    out = np.add.reduce(out, axis=axis)
    return np.negative(out, out=out) if type(out) is np.ndarray else -out


def _xent_vjp_logits(g, y, labels, logits, axis):
    """``ḡ·(softmax(z)·Σy − y)``: ``ḡ·(p − y)`` for labels summing to one."""
    gk = g.reshape(_batch(g, y) + _keepdims_shape(logits.shape, axis))
    if type(g) is np.ndarray and type(labels) is np.ndarray and type(logits) is np.ndarray:
        p = _softmax(logits, axis)
        p *= np.add.reduce(labels, axis=axis, keepdims=True)
        p -= labels
        return np.multiply(p, gk, out=p) if gk.ndim <= p.ndim else p * gk
    return gk * (softmax(logits, axis=axis) * reduce_sum(labels, axis=axis, keepdims=True) - labels)


def _xent_jvp_logits(dz, y, labels, logits, axis):
    return reduce_sum(dz * (softmax(logits, axis=axis) * reduce_sum(labels, axis=axis, keepdims=True) - labels),
                      axis=axis, keepdims=False)


softmax_cross_entropy = define(
    "softmax_cross_entropy", _xent, saves="inputs",
    doc="loss = −Σ y·log softmax(z) over axis (y: labels, one-hot or soft; z: logits)",
    labels=("−log softmax(z)",
            lambda g, y, labels, logits, axis: -(g.reshape(_batch(g, y) + _keepdims_shape(logits.shape, axis))
                                                 * log_softmax(logits, axis=axis)),
            lambda dl, y, labels, logits, axis: -reduce_sum(dl * log_softmax(logits, axis=axis), axis=axis,
                                                            keepdims=False)),
    logits=("softmax(z)·Σy − y", _xent_vjp_logits, _xent_jvp_logits))


def _sparse_xent(labels, logits):
    """``−log softmax(z)[label] = ln Σ e^(z − m) − (z[label] − m)`` over the last axis, one class index per row.

    ``m`` is the row's (finite) max, as in :func:`_log_softmax`, whose bits this
    matches; only the picked entry is shifted, not the whole row.
    """
    z = logits.reshape(-1, logits.shape[-1])
    m = np.maximum.reduce(z, axis=1)
    if not math.isfinite(np.add.reduce(m)):     # one reduction: an infinite (or NaN) max shows in the sum
        m = np.where(np.isfinite(m), m, 0)
    e = np.subtract(z, m.reshape(-1, 1))
    total = np.add.reduce(np.exp(e, out=e), axis=1)
    picked = z.reshape(-1).take(_label_positions(z, labels))
    picked -= m
    loss = np.log(total, out=total)
    loss -= picked
    return loss.reshape(labels.shape)


def _label_positions(z, labels) -> np.ndarray:
    """Where ``z[row, label]`` lies in ``z`` (rows × classes) read flat in C order: ``row·classes + label``.

    One flat index reads (``take``) or updates the labelled entries faster
    than the pair ``z[rows, labels]``.
    """
    rows, classes = z.shape
    starts = _row_starts.get((rows, classes))
    if starts is None:          # made once per batch shape: a training loop asks for the same one every step
        if len(_row_starts) > 64:
            _row_starts.clear()
        starts = np.arange(0, rows * classes, classes)
        starts.flags.writeable = False
        _row_starts[rows, classes] = starts
    return starts + labels.reshape(-1)


_row_starts: dict = {}      # (rows, classes) -> row·classes for each row, read-only


def _minus_one_hot(logits, labels):
    """``softmax(z) − onehot(label)`` over the last axis (rule calls: recorded when ``z`` is a tensor)."""
    return softmax(logits, axis=(-1,)) - one_hot(_labels(labels), depth=logits.shape[-1], dtype=logits.dtype)


def _sparse_xent_vjp(g, y, labels, logits):
    """``ḡ·(softmax(z) − onehot(label))``.

    The saved loss already holds the normaliser: ``y = logsumexp(z) −
    z[label]``, so ``softmax(z)ᵢ = exp((zᵢ − z[label]) − y)``: one ``exp``
    and no second max or sum over the classes. Both differences are of
    nearby numbers, as in the max-shifted softmax, so large logits lose no
    precision. A batch with an infinite (or NaN) loss, which an infinite
    or NaN logit makes, takes the shifted softmax instead.
    """
    if type(g) is np.ndarray and type(logits) is np.ndarray and g.shape == y.shape and type(y) is np.ndarray:
        z = logits.reshape(-1, logits.shape[-1])
        at = _label_positions(z, _labels(labels))
        at_label, loss = z.reshape(-1).take(at), y.reshape(-1)
        if math.isfinite(np.add.reduce(loss)):     # finite: no logit is +inf or NaN, z[label] is not −inf
            p = np.subtract(z, at_label.reshape(-1, 1))
            p -= loss.reshape(-1, 1)
            np.exp(p, out=p)
        else:
            p = np.ascontiguousarray(_softmax(z, (-1,)))
        p.reshape(-1)[at] -= 1
        p *= g.reshape(-1, 1)
        return p.reshape(logits.shape)
    gk = g.reshape(g.shape + (1,))
    return gk * _minus_one_hot(logits, labels)


sparse_softmax_cross_entropy = define(
    "sparse_softmax_cross_entropy", _sparse_xent,
    doc="loss = −log softmax(z)[label] over the last axis (label: a class index per row; z: logits)",
    labels=None,
    logits=("softmax(z) − onehot(label)", _sparse_xent_vjp,
            lambda dz, y, labels, logits: reduce_sum(dz * _minus_one_hot(logits, labels), axis=(-1,), keepdims=False)))
