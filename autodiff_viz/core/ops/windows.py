"""Keras 3's window ops that are not layers: ``adaptive_average_pool`` / ``adaptive_max_pool`` (PyTorch's
adaptive pooling) and ``unfold`` / ``fold`` (im2col and col2im, channels first).

None of them has numerics of its own. Each is written with the rules the Conv and Pooling layers use —
``max_pool``, ``avg_pool``, ``conv`` and ``conv_transpose`` of :mod:`autodiff_viz.core.rules.nn` — and the
shape ops, so its gradient is theirs:

* **adaptive pooling** gives output cell ``i`` (of ``m``, along an input axis of length ``n``) the window
  ``[⌊i·n/m⌋, ⌈(i+1)·n/m⌉)``. The windows have at most two lengths, so each length is pooled once at stride 1
  and every cell picks the pooled value that starts where its window starts (Keras' "two-pool gather"). A max
  or a mean over a box is the max or mean of the per-axis ones, so the axes are done one after the other.
* **unfold** copies each ``kH × kW`` window of every channel into a column: a convolution whose kernel is
  one-hot (filter ``(c, i, j)`` reads channel ``c`` at offset ``(i, j)`` and nothing else), one group per
  channel. **fold** is its transpose — the adjoint that ``conv_transpose`` is of ``conv`` — so overlapping
  windows *add*: ``fold(unfold(x))`` is ``x`` times the number of windows that cover each pixel.
"""
from __future__ import annotations

import numpy as np

from ..rules import nn as RN
from ..tensor import constant
from . import _tensor, concatenate, moveaxis, reshape, take, transpose


def per_axis(value, rank: int, what: str, op: str, low: int = 1) -> tuple:
    """``value`` as ``rank`` ints (one int repeats), each at least ``low``; else a ValueError naming ``op``."""
    out = (int(value),) * rank if np.ndim(value) == 0 else tuple(int(v) for v in value)
    if len(out) != rank or min(out) < low:
        raise ValueError(f"{op}: {what} must be one int or {rank} of them, each at least {low}, got {value!r}.")
    return out


# ----- adaptive pooling ------------------------------------------------------------------------------------
def _windows(n: int, m: int) -> list:
    """``(start, length)`` of each of the ``m`` windows over ``n`` entries: ``[⌊i·n/m⌋, ⌈(i+1)·n/m⌉)``."""
    return [((i * n) // m, -(-((i + 1) * n) // m) - (i * n) // m) for i in range(m)]


def _adapt_axis(rule, x, axis: int, m: int):
    """``x`` pooled along spatial ``axis`` (0-based, channels last) into ``m`` cells, the others unchanged."""
    rank = x.ndim - 2
    n = x.shape[axis + 1]
    windows = _windows(n, m)
    if all(length == 1 for _, length in windows) and m == n:
        return x                                        # every window is one entry: nothing to pool
    pooled, base, offset = [], {}, 0
    for length in sorted({length for _, length in windows}):
        pool = tuple(length if a == axis else 1 for a in range(rank))
        pooled.append(rule(x, pool=pool, strides=(1,) * rank, pads=((0, 0),) * rank))
        base[length] = offset
        offset += n - length + 1                        # how many windows of this length fit (stride 1)
    both = pooled[0] if len(pooled) == 1 else concatenate(pooled, axis=axis + 1)
    return take(both, [base[length] + start for start, length in windows], axis=axis + 1)


def _adaptive(rule, inputs, output_size, data_format, op: str):
    x = _tensor(inputs)
    rank = x.ndim - 2
    if rank not in (1, 2, 3):
        raise ValueError(f"{op}: inputs of shape {x.shape} must be (batch, *spatial, channels) with 1 to 3 "
                         "spatial axes (or channels first with data_format='channels_first').")
    fmt = "channels_last" if data_format is None else data_format
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"{op}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}.")
    sizes = per_axis(output_size, rank, "output_size", op)
    if fmt == "channels_first":
        x = moveaxis(x, 1, -1)
    for axis, m in enumerate(sizes):
        x = _adapt_axis(rule, x, axis, m)
    return moveaxis(x, -1, 1) if fmt == "channels_first" else x


def adaptive_average_pool(inputs, output_size, data_format=None):
    """``keras.ops.adaptive_average_pool``: the mean over the window ``[⌊i·n/m⌋, ⌈(i+1)·n/m⌉)`` of each axis,
    so any input length gives ``output_size`` cells (PyTorch's ``AdaptiveAvgPool``; 1 to 3 spatial axes).
    ḡ of a cell is shared equally by its window's entries (the ``avg_pool`` rule)."""
    return _adaptive(RN.avg_pool, inputs, output_size, data_format, "adaptive_average_pool")


def adaptive_max_pool(inputs, output_size, data_format=None):
    """``keras.ops.adaptive_max_pool``: the maximum over the window ``[⌊i·n/m⌋, ⌈(i+1)·n/m⌉)`` of each axis
    (PyTorch's ``AdaptiveMaxPool``). ḡ of a cell goes to its window's arg-max (the ``max_pool`` rule)."""
    return _adaptive(RN.max_pool, inputs, output_size, data_format, "adaptive_max_pool")


# ----- unfold and fold (im2col, col2im) --------------------------------------------------------------------
def _one_hot_kernel(channels: int, *window: int, dtype) -> np.ndarray:
    """The grouped conv kernel ``(*window, 1, C·K)`` (``K`` the window's number of offsets) whose output
    channel ``c·K + k`` reads channel ``c`` at the window's ``k``-th offset (row-major) and nothing else."""
    offsets = int(np.prod(window))
    w = np.zeros((offsets, 1, channels * offsets), dtype=dtype)
    for k in range(offsets):
        w[k, 0, np.arange(channels) * offsets + k] = 1
    return w.reshape(tuple(window) + (1, channels * offsets))


def _window_args(kernel_size, dilation, padding, stride, op):
    return (per_axis(kernel_size, 2, "kernel_size", op), per_axis(dilation, 2, "dilation", op),
            per_axis(padding, 2, "padding", op, low=0), per_axis(stride, 2, "stride", op))


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """``keras.ops.unfold`` (PyTorch's ``nn.Unfold``, im2col): ``(N, C, H, W) → (N, C·kH·kW, L)``, column ``l``
    holding window ``l`` (row-major over the ``nH × nW`` window positions) with rows ordered ``(c, i, j)``.
    ``nH = ⌊(H + 2·pH − dH·(kH − 1) − 1) / sH⌋ + 1``, likewise ``nW``. ḡ of every copy adds back onto the
    pixel it was copied from (the conv rule's input gradient)."""
    op = "unfold"
    t = _tensor(x)
    if t.ndim != 4:
        raise ValueError(f"{op}: x of shape {t.shape} must be (batch, channels, height, width), channels first.")
    (kh, kw), dil, (ph, pw), step = _window_args(kernel_size, dilation, padding, stride, op)
    n, c = t.shape[:2]
    kernel = constant(_one_hot_kernel(c, kh, kw, dtype=t.dtype))
    cols = RN.conv(moveaxis(t, 1, -1), kernel, strides=step, pads=((ph, ph), (pw, pw)), dilation=dil, groups=c)
    nh, nw = cols.shape[1:3]
    return transpose(reshape(cols, (n, nh * nw, c * kh * kw)), (0, 2, 1))


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """``keras.ops.fold`` (PyTorch's ``nn.Fold``, col2im): the transpose of :func:`unfold`,
    ``(N, C·kH·kW, L) → (N, C, oH, oW)``: every column is put back at its window and overlapping windows add
    (pixels no window covers are 0). Its gradient reads ḡ at every window, i.e. ``unfold(ḡ)``."""
    op = "fold"
    t = _tensor(x)
    if t.ndim != 3:
        raise ValueError(f"{op}: x of shape {t.shape} must be (batch, channels·kH·kW, blocks).")
    (kh, kw), dil, (ph, pw), step = _window_args(kernel_size, dilation, padding, stride, op)
    oh, ow = per_axis(output_size, 2, "output_size", op)
    n, ckk, blocks = t.shape
    nh = (oh + 2 * ph - dil[0] * (kh - 1) - 1) // step[0] + 1
    nw = (ow + 2 * pw - dil[1] * (kw - 1) - 1) // step[1] + 1
    if ckk % (kh * kw) or nh < 1 or nw < 1 or nh * nw != blocks:
        raise ValueError(f"{op}: x of shape {t.shape} does not fit output_size {(oh, ow)} with kernel_size "
                         f"{(kh, kw)}: it needs C·{kh * kw} rows and {max(nh, 0)}·{max(nw, 0)} = "
                         f"{max(nh, 0) * max(nw, 0)} blocks.")
    c = ckk // (kh * kw)
    kernel = constant(_one_hot_kernel(c, kh, kw, dtype=t.dtype))
    cols = reshape(transpose(t, (0, 2, 1)), (n, nh, nw, ckk))
    image = RN.conv_transpose(cols, kernel, spatial=(oh, ow), strides=step, pads=((ph, ph), (pw, pw)),
                              dilation=dil, groups=c)
    return moveaxis(image, -1, 1)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid"):
    """``keras.ops.image.extract_patches`` (channels last): for 2-D windows ``(N, H, W, C) → (N, nH, nW,
    kH·kW·C)``, for 3-D ones (``size`` of 3, :func:`extract_patches_3d`) ``(N, D, H, W, C) → (N, nD, nH, nW,
    kD·kH·kW·C)``: the window at each position flattened in (offset, channel) order, TensorFlow's
    ``extract_patches`` order. ``strides`` defaults to ``size``; ``padding`` is ``"valid"`` or ``"same"``
    (TensorFlow's split, the odd pixel after). The same one-hot convolution as :func:`unfold`, its channels
    regrouped; one image (no batch axis) works too."""
    op = "extract_patches"
    rank = 3 if np.ndim(size) == 1 and len(size) == 3 else 2
    t = _tensor(images)
    if t.ndim not in (rank + 1, rank + 2):
        what = "(height, width, channels)" if rank == 2 else "(depth, height, width, channels)"
        raise ValueError(f"{op}: images of shape {t.shape} must be {what} or a batch of them for {rank}-D "
                         f"windows of size {size!r}.")
    x = t if t.ndim == rank + 2 else reshape(t, (1, *t.shape))
    window = per_axis(size, rank, "size", op)
    step = window if strides is None else per_axis(strides, rank, "strides", op)
    dil = per_axis(dilation_rate, rank, "dilation_rate", op)
    mode = str(padding).lower()
    if mode not in ("valid", "same"):
        raise ValueError(f"{op}: padding must be 'valid' or 'same', got {padding!r}.")
    pads = []
    for n, k, s, d in zip(x.shape[1:-1], window, step, dil):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0) if mode == "same" else 0
        pads.append((total // 2, total - total // 2))
    c, offsets = x.shape[-1], int(np.prod(window))
    kernel = constant(_one_hot_kernel(c, *window, dtype=x.dtype))
    cols = RN.conv(x, kernel, strides=step, pads=tuple(pads), dilation=dil, groups=c)   # channel c·K + k
    lead = cols.shape[:-1]
    out = reshape(transpose(reshape(cols, (*lead, c, offsets)), tuple(range(rank + 1)) + (rank + 2, rank + 1)),
                  (*lead, offsets * c))
    return out if t.ndim == rank + 2 else reshape(out, out.shape[1:])


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid"):
    """``keras.ops.image.extract_patches_3d`` (channels last): every ``kD × kH × kW`` window of a volume
    ``(N, D, H, W, C)`` (or one volume) flattened into the channels, ``kD·kH·kW·C`` of them in (offset, channel)
    order; ``size`` one int or three. The gradient adds each copy's ḡ back onto its voxel."""
    return extract_patches(volumes, (size,) * 3 if np.ndim(size) == 0 else size, strides, dilation_rate, padding)
