"""Keras 3's image filters and measures (``keras.ops.image.gaussian_blur``, ``ssim``), its crops and pads
(``crop_images``, ``pad_images``), and the SSIM that ``tf.image.ssim`` / ``ssim_multiscale`` share.

Nothing here has numerics of its own: a blur is the ``conv`` rule with one Gaussian kernel per channel (a
grouped convolution, as ``tf.nn.depthwise_conv2d``), SSIM is arithmetic on such blurs, a crop is a slice and
a pad is ``pad``. So every gradient is the one rule table's: ḡ of a blurred pixel spreads back over its
window with the kernel's weights, and ḡ of a padded border is dropped.

Images are channels last, ``(…, height, width, channels)``; the Keras functions take ``data_format`` and a
single image ``(height, width, channels)`` as well as a batch, as Keras does.
"""
from __future__ import annotations

import numpy as np

from ..rules import nn as RN
from ..tensor import Tensor, constant
from . import _tensor, cast, exp, mean, moveaxis, pad, reshape, squeeze, sum, tile
from .windows import per_axis


def image_format(data_format, op: str) -> str:
    """``data_format`` checked: ``None`` is Keras' default, ``"channels_last"``."""
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"image.{op}: data_format must be 'channels_last' or 'channels_first', got "
                         f"{data_format!r}.")
    return data_format or "channels_last"


def as_batch(images, data_format, op: str, ranks=(3, 4)):
    """``images`` as a channels-last batch ``(N, H, W, C)`` and the function that puts a result of the same
    layout back into the caller's (channels first, a single image)."""
    x = _tensor(images)
    fmt = image_format(data_format, op)
    if x.ndim not in ranks:
        raise ValueError(f"image.{op}: images of shape {x.shape} must be a single image (height, width, channels) "
                         "or a batch (batch, height, width, channels) (channels first with "
                         "data_format='channels_first').")
    single = x.ndim == 3
    if single:
        x = reshape(x, (1, *x.shape))
    if fmt == "channels_first":
        x = moveaxis(x, 1, -1)

    def back(y):
        if fmt == "channels_first":
            y = moveaxis(y, -1, 1)
        return squeeze(y, 0) if single else y
    return x, back


def _float(x: Tensor) -> Tensor:
    return x if x.dtype.kind == "f" else cast(x, "float32")


# ----- Gaussian blur ---------------------------------------------------------------------------------------
def _gauss_1d(size: int, sigma, dtype):
    """``exp(−½((i − (n−1)/2)/σ)²)`` normalised to sum 1 (a tensor: σ may be one, and is then differentiated)."""
    i = constant(np.arange(size, dtype=dtype) - np.asarray((size - 1) / 2, dtype=dtype))
    s = sigma if isinstance(sigma, Tensor) else constant(np.asarray(sigma, dtype=dtype))
    g = exp(-0.5 * (i / cast(s, dtype)) ** 2)
    return g / sum(g)


def _depthwise_same(x: Tensor, kernel2d: Tensor) -> Tensor:
    """Each channel of ``x`` ``(N, H, W, C)`` correlated with ``kernel2d`` ``(kh, kw)``, zero 'SAME' padding
    (TensorFlow's split: the odd pixel after), one group per channel: the ``conv`` rule."""
    kh, kw = kernel2d.shape
    c = x.shape[-1]
    w = tile(reshape(kernel2d, (kh, kw, 1, 1)), (1, 1, 1, c))
    pads = tuple(((k - 1) // 2, k - 1 - (k - 1) // 2) for k in (kh, kw))
    return RN.conv(x, w, strides=(1, 1), pads=pads, dilation=(1, 1), groups=c)


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """``keras.ops.image.gaussian_blur``: each channel convolved with a Gaussian, zeros beyond the edges.

    The kernel is Keras' (TensorFlow backend): ``g_a(i) ∝ exp(−½((i − (k_a−1)/2)/σ_a)²)`` for ``a`` = 0, 1,
    each summing to 1, and the 2-D kernel is their outer product ``g_1 ⊗ g_0`` laid out as
    ``kernel_size[0] × kernel_size[1]`` (so ``sigma[1]`` runs down the rows; for a square kernel with one σ
    it is the usual separable blur). ``sigma`` may be a tensor: the blur is then differentiated in σ too,
    as TensorFlow does. Output: the images' shape and dtype."""
    op = "gaussian_blur"
    x, back = as_batch(images, data_format, op)
    k0, k1 = per_axis(kernel_size, 2, "kernel_size", op)
    shape_ = sigma.shape if isinstance(sigma, Tensor) else np.shape(sigma)
    if shape_ == ():
        s0 = s1 = sigma
    elif shape_ == (2,):
        s0, s1 = sigma[0], sigma[1]
    else:
        raise ValueError(f"image.{op}: sigma must be one float or two (height, width), got {sigma!r}.")
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype("float32")
    g0, g1 = _gauss_1d(k0, s0, dtype), _gauss_1d(k1, s1, dtype)
    kernel = reshape(reshape(g1, (k1, 1)) * reshape(g0, (1, k0)), (k0, k1))
    y = _depthwise_same(cast(x, dtype), kernel)
    return back(y if y.dtype == x.dtype else cast(y, x.dtype))


# ----- SSIM --------------------------------------------------------------------------------------------------
def _gauss_filter(x: Tensor, size: int, sigma: float) -> Tensor:
    """The SSIM window: a ``size × size`` Gaussian (σ = ``sigma``, summing to 1) over height and width of
    ``(…, H, W, C)``, 'VALID' — two 1-D passes of weighted slices, so ḡ spreads back over each window."""
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = np.exp(-0.5 * coords ** 2 / sigma ** 2)
    g = (g / g.sum()).astype(x.dtype)
    h, w = x.shape[-3] - size + 1, x.shape[-2] - size + 1
    rows = None
    for i in range(size):
        term = x[..., i:i + h, :, :] * float(g[i])
        rows = term if rows is None else rows + term
    out = None
    for j in range(size):
        term = rows[..., :, j:j + w, :] * float(g[j])
        out = term if out is None else out + term
    return out


def ssim_per_channel(x: Tensor, y: Tensor, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
                     op="ssim"):
    """``(ssim, cs)`` per image and channel, each averaged over the window positions: with ``μ``, ``σ²`` and
    ``σxy`` the Gaussian-weighted local means, variances and covariance (no Bessel correction) and
    ``c = (k·max_val)²``,

    * luminance ``l = (2μxμy + c1)/(μx² + μy² + c1)``,
    * contrast-structure ``cs = (2σxy + c2)/(σx² + σy² + c2)``, written as TensorFlow writes it,
      ``(2E[xy] − 2μxμy + c2)/(E[x² + y²] − μx² − μy² + c2)``;

    ``ssim`` is the mean of ``l·cs``. Differentiable in both images."""
    if x.shape[-3] < filter_size or x.shape[-2] < filter_size:
        raise ValueError(f"image.{op}: images of size {x.shape[-3]}×{x.shape[-2]} are smaller than the "
                         f"{filter_size}×{filter_size} window; pass a smaller filter_size.")
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mx, my = _gauss_filter(x, filter_size, filter_sigma), _gauss_filter(y, filter_size, filter_sigma)
    num0, den0 = mx * my * 2.0, mx * mx + my * my
    luminance = (num0 + c1) / (den0 + c1)
    num1 = _gauss_filter(x * y, filter_size, filter_sigma) * 2.0
    den1 = _gauss_filter(x * x + y * y, filter_size, filter_sigma)
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return mean(luminance * cs, axis=(-3, -2)), mean(cs, axis=(-3, -2))


def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, data_format=None):
    """``keras.ops.image.ssim``: the structural similarity of two images, one value per image (a scalar for a
    single image): the SSIM of each channel (:func:`ssim_per_channel`, an ``filter_size`` Gaussian window
    of σ ``filter_sigma``) averaged over the channels. 1 for identical images. Computed in the images' float
    dtype (integers in float32) and returned in the images' dtype, as Keras; differentiable in both."""
    x, _ = as_batch(image1, data_format, "ssim")
    y, _ = as_batch(image2, data_format, "ssim")
    if x.shape != y.shape:
        raise ValueError(f"image.ssim: image1 of shape {_tensor(image1).shape} and image2 of shape "
                         f"{_tensor(image2).shape} must have the same shape.")
    per_channel, _ = ssim_per_channel(_float(x), _float(cast(y, _float(x).dtype)), max_val, filter_size,
                                      filter_sigma, k1, k2)
    out = mean(per_channel, axis=-1)
    out = squeeze(out, 0) if _tensor(image1).ndim == 3 else out
    dtype = _tensor(image1).dtype
    return out if out.dtype == dtype else cast(out, dtype)


# ----- crops and pads ----------------------------------------------------------------------------------------
def _two_of_three(first, second, total, names, op):
    given = [v is not None for v in (first, second, total)]
    if given.count(True) != 2:
        raise ValueError(f"image.{op}: give exactly two of {', '.join(names)}; got "
                         f"{', '.join(f'{n}={v!r}' for n, v in zip(names, (first, second, total)))}.")
    for n, v in zip(names, (first, second, total)):
        if v is not None and v < 0:
            raise ValueError(f"image.{op}: {n} must be ≥ 0, got {v}.")


def _hw(x: Tensor, data_format) -> tuple:
    return (x.shape[-3], x.shape[-2]) if image_format(data_format, "") == "channels_last" else x.shape[-2:]


def _spatial(x: Tensor, data_format, rows, cols) -> tuple:
    """An index or pad list with ``rows`` and ``cols`` on the height and width axes of ``x``."""
    if image_format(data_format, "") == "channels_last":
        return (None,) * (x.ndim - 3) + (rows, cols, None)
    return (None,) * (x.ndim - 2) + (rows, cols)


def _rank(images, op) -> Tensor:
    x = _tensor(images)
    if x.ndim not in (3, 4):
        raise ValueError(f"image.{op}: images of shape {x.shape} must be a single image (rank 3) or a batch "
                         "(rank 4).")
    return x


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None, right_cropping=None,
                target_height=None, target_width=None, data_format=None):
    """``keras.ops.image.crop_images``: the ``target_height × target_width`` window that starts
    ``top_cropping`` rows down and ``left_cropping`` columns in; give two of (top, bottom, height) and two of
    (left, right, width), as Keras. A slice: ḡ goes back to the pixels kept, 0 to the ones cut away."""
    op = "crop_images"
    x = _rank(images, op)
    image_format(data_format, op)
    _two_of_three(top_cropping, bottom_cropping, target_height,
                  ("top_cropping", "bottom_cropping", "target_height"), op)
    _two_of_three(left_cropping, right_cropping, target_width,
                  ("left_cropping", "right_cropping", "target_width"), op)
    h, w = _hw(x, data_format)
    top = h - target_height - bottom_cropping if top_cropping is None else top_cropping
    height = h - bottom_cropping - top if target_height is None else target_height
    left = w - target_width - right_cropping if left_cropping is None else left_cropping
    width = w - right_cropping - left if target_width is None else target_width
    if min(top, left, height, width) < 0 or top + height > h or left + width > w:
        raise ValueError(f"image.{op}: a {height}×{width} crop at ({top}, {left}) does not fit images of size "
                         f"{h}×{w} (shape {x.shape}); crop less.")
    index = tuple(slice(None) if s is None else s
                  for s in _spatial(x, data_format, slice(top, top + height), slice(left, left + width)))
    return x[index]


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None, right_padding=None,
               target_height=None, target_width=None, data_format=None):
    """``keras.ops.image.pad_images``: zeros around the images, ``top_padding`` rows above and
    ``left_padding`` columns left; give two of (top, bottom, height) and two of (left, right, width). ḡ of
    the added zeros is dropped; the image's own pixels get theirs."""
    op = "pad_images"
    x = _rank(images, op)
    image_format(data_format, op)
    _two_of_three(top_padding, bottom_padding, target_height,
                  ("top_padding", "bottom_padding", "target_height"), op)
    _two_of_three(left_padding, right_padding, target_width, ("left_padding", "right_padding", "target_width"), op)
    h, w = _hw(x, data_format)
    top = target_height - bottom_padding - h if top_padding is None else top_padding
    bottom = target_height - top - h if bottom_padding is None else bottom_padding
    left = target_width - right_padding - w if left_padding is None else left_padding
    right = target_width - left - w if right_padding is None else right_padding
    if min(top, bottom, left, right) < 0:
        raise ValueError(f"image.{op}: images of size {h}×{w} (shape {x.shape}) do not fit the target: the "
                         f"padding would be top {top}, bottom {bottom}, left {left}, right {right}; ask for a "
                         "larger target.")
    widths = [(0, 0) if p is None else p for p in _spatial(x, data_format, (top, bottom), (left, right))]
    return pad(x, widths)
