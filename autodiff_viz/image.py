"""``adv.image``: TensorFlow's ``tf.image`` adjustments that the official guides put on a tape.

    >>> adv.image.adjust_brightness(images, 0.1)      # x + δ: the gradient passes through (ḡ to x, Σḡ to δ)
    >>> adv.image.adjust_contrast(images, 2.0)        # (x − mean)·f + mean: TensorFlow registers no gradient

Images are ``(..., height, width, channels)``. ``adjust_brightness``, ``rgb_to_grayscale`` and
``per_image_standardization`` are written with recorded ops, so their gradients flow as in TensorFlow.
``adjust_contrast`` computes TensorFlow's values, and, as TensorFlow (whose ``AdjustContrastv2`` op has no
gradient registered), taking a gradient through it raises ``LookupError``: the "Introduction to gradients
and automatic differentiation" guide shows exactly that. For a differentiable contrast write
``(x − adv.mean(x, axis=(-3, -2), keepdims=True)) * f + mean`` with ops.

The measures and crops that sample (``ssim``, ``ssim_multiscale``, ``crop_and_resize``, ``extract_patches``)
are built on the gather, convolution and pooling rules (:mod:`autodiff_viz.core.ops.geometry`, ``filters``,
``windows``), so their gradients are TensorFlow's; ``extract_glimpse`` and ``draw_bounding_boxes``, whose
TensorFlow kernels register no gradient, raise its ``LookupError`` on one.
"""
from __future__ import annotations

import numpy as np

from .base.session import generator
from .core.ops import (
    abs,
    cast,
    clip,
    concatenate,
    flip,
    floor,
    log,
    maximum,
    mean,
    numpy_function,
    pad,
    power,
    reshape,
    stack,
    std,
    sum,
    swapaxes,
    take,
    tensordot,
    tile,
    where,
    zeros_like,
)
from .core.ops.filters import ssim_per_channel
from .core.ops.geometry import crop_and_resize
from .core.ops.windows import extract_patches as _window_patches
from .core.tensor import Tensor, constant
from .records.transforms import custom_gradient


def _images(images, op: str, rank: int = 3) -> Tensor:
    if isinstance(images, (list, tuple)) and any(isinstance(i, Tensor) for i in images):
        images = stack(list(images))     # as tf.convert_to_tensor packs a list: the gradient reaches each one
    x = images if isinstance(images, Tensor) else constant(images)
    if x.ndim < rank:
        raise ValueError(f"image.{op}: images of shape {x.shape} must be (..., height, width, channels); "
                         "add a channel axis with x[..., None].")
    return x if x.dtype.kind == "f" else cast(x, "float32")


def adjust_brightness(image, delta):
    """``tf.image.adjust_brightness``: ``x + δ`` on every entry (ḡ to ``x``, ``Σ ḡ`` to ``δ``)."""
    return _images(image, "adjust_brightness", rank=0) + delta      # entry by entry: any shape, as TensorFlow


def _contrast(x, factor):
    m = mean(x, axis=(-3, -2), keepdims=True)         # per image and channel, over height and width
    return (x - m) * factor + m


@custom_gradient
def _adjust_contrast(x, factor):
    def no_gradient(dy):
        raise LookupError("gradient registry has no entry for: AdjustContrastv2 (adv.image.adjust_contrast has "
                          "no gradient, as in TensorFlow). For one, write the contrast with ops: "
                          "m = adv.mean(x, axis=(-3, -2), keepdims=True); (x - m) * factor + m.")
    return _contrast(x, factor), no_gradient


def adjust_contrast(images, contrast_factor):
    """``tf.image.adjust_contrast``: ``(x − m)·f + m``, ``m`` the mean of each image's channel over height
    and width. Its values are TensorFlow's; a gradient through it raises ``LookupError``, as TensorFlow's
    (its ``AdjustContrastv2`` has no gradient registered)."""
    x = _images(images, "adjust_contrast")
    return _adjust_contrast(x, cast(contrast_factor, x.dtype))


def rgb_to_grayscale(images):
    """``tf.image.rgb_to_grayscale``: ``0.2989·R + 0.587·G + 0.114·B`` with a channel axis of 1."""
    x = _images(images, "rgb_to_grayscale")
    if x.shape[-1] != 3:
        raise ValueError(f"image.rgb_to_grayscale: images of shape {x.shape} must have 3 channels (R, G, B).")
    weights = constant([[0.2989], [0.587], [0.114]], dtype=x.dtype)
    return tensordot(x, weights, axes=1)


def per_image_standardization(image):
    """``tf.image.per_image_standardization``: ``(x − mean) / max(std, 1/√N)`` over each image's
    height, width and channels (``N`` their number of entries), so a flat image is not divided by 0."""
    x = _images(image, "per_image_standardization")
    n = x.shape[-3] * x.shape[-2] * x.shape[-1]
    m = mean(x, axis=(-3, -2, -1), keepdims=True)
    s = maximum(std(x, axis=(-3, -2, -1), keepdims=True), 1.0 / float(n) ** 0.5)
    return (x - m) / s




# ----- geometry: flips, rotations, crops and pads (each a recorded indexing: ḡ goes back to the pixel) ------
def flip_left_right(image):
    """``tf.image.flip_left_right``: the width axis reversed."""
    return flip(_images(image, "flip_left_right"), axis=-2)


def flip_up_down(image):
    """``tf.image.flip_up_down``: the height axis reversed."""
    return flip(_images(image, "flip_up_down"), axis=-3)


def transpose(image, name=None):
    """``tf.image.transpose``: height and width swapped."""
    return swapaxes(_images(image, "transpose"), -3, -2)


def rot90(image, k=1, name=None):
    """``tf.image.rot90``: ``k`` quarter turns counter-clockwise."""
    x = _images(image, "rot90")
    for _ in range(int(k) % 4):
        x = flip(swapaxes(x, -3, -2), axis=-3)
    return x


def _draw(seed):
    rng = np.random.default_rng(None if seed is None else np.asarray(seed).ravel().tolist()) if seed is not None \
        else generator()
    return rng


def random_flip_left_right(image, seed=None):
    """``tf.image.random_flip_left_right``: each image flipped left-right with probability ½ (numpy's draws)."""
    return _random_flip(image, seed, -2, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """``tf.image.random_flip_up_down``: each image flipped upside down with probability ½ (numpy's draws)."""
    return _random_flip(image, seed, -3, "random_flip_up_down")


def stateless_random_flip_left_right(image, seed):
    """``tf.image.stateless_random_flip_left_right``: as the random one, the same result for the same seed."""
    return _random_flip(image, seed, -2, "stateless_random_flip_left_right")


def stateless_random_flip_up_down(image, seed):
    """``tf.image.stateless_random_flip_up_down``: as the random one, the same result for the same seed."""
    return _random_flip(image, seed, -3, "stateless_random_flip_up_down")


def _random_flip(image, seed, axis, op):
    x = _images(image, op)
    batch = x.shape[:-3]
    coin = _draw(seed).uniform(size=batch) < 0.5
    if not batch:
        return flip(x, axis=axis) if coin else x
    mask = constant(coin.reshape(batch + (1, 1, 1)))
    return where(mask, flip(x, axis=axis), x)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """``tf.image.crop_to_bounding_box``: the ``target_height × target_width`` window whose top-left corner is
    at ``(offset_height, offset_width)``."""
    x = _images(image, "crop_to_bounding_box")
    h, w = x.shape[-3], x.shape[-2]
    if offset_height + target_height > h or offset_width + target_width > w or min(offset_height, offset_width) < 0:
        raise ValueError(f"image.crop_to_bounding_box: the box ({offset_height}, {offset_width}) + "
                         f"({target_height}, {target_width}) does not fit in images of size {h}×{w}.")
    return x[..., offset_height:offset_height + target_height, offset_width:offset_width + target_width, :]


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """``tf.image.pad_to_bounding_box``: zeros around the image, which lands at ``(offset_height,
    offset_width)`` of a ``target_height × target_width`` canvas."""
    x = _images(image, "pad_to_bounding_box")
    h, w = x.shape[-3], x.shape[-2]
    after_h, after_w = target_height - offset_height - h, target_width - offset_width - w
    if min(offset_height, offset_width, after_h, after_w) < 0:
        raise ValueError(f"image.pad_to_bounding_box: images of size {h}×{w} at ({offset_height}, {offset_width}) "
                         f"do not fit a {target_height}×{target_width} canvas.")
    widths = [(0, 0)] * (x.ndim - 3) + [(offset_height, after_h), (offset_width, after_w), (0, 0)]
    return pad(x, widths)


def central_crop(image, central_fraction):
    """``tf.image.central_crop``: the centred ``central_fraction`` of height and width."""
    x = _images(image, "central_crop")
    if not 0 < central_fraction <= 1:
        raise ValueError(f"image.central_crop: central_fraction must be in (0, 1], got {central_fraction}.")
    h, w = x.shape[-3], x.shape[-2]
    top, left = int((h - h * central_fraction) / 2), int((w - w * central_fraction) / 2)
    return x[..., top:h - top, left:w - left, :]


def resize_with_crop_or_pad(image, target_height, target_width):
    """``tf.image.resize_with_crop_or_pad``: centred crop where the image is larger, centred zero padding
    where it is smaller."""
    x = _images(image, "resize_with_crop_or_pad")
    h, w = x.shape[-3], x.shape[-2]
    top, left = max((h - target_height) // 2, 0), max((w - target_width) // 2, 0)
    x = x[..., top:top + min(h, target_height), left:left + min(w, target_width), :]
    h, w = x.shape[-3], x.shape[-2]
    return pad_to_bounding_box(x, max((target_height - h) // 2, 0), max((target_width - w) // 2, 0),
                               target_height, target_width)


def random_crop(value, size, seed=None, name=None):
    """``tf.image.random_crop``: a window of ``size`` at a random position (numpy's draws)."""
    x = value if isinstance(value, Tensor) else constant(value)
    size = [int(n) for n in size]
    if len(size) != x.ndim or any(s > n for s, n in zip(size, x.shape)):
        raise ValueError(f"image.random_crop: size {size} must have one entry per axis of {x.shape}, each no "
                         "larger than the axis.")
    starts = [int(_draw(seed).integers(0, n - s + 1)) for s, n in zip(size, x.shape)]
    return x[tuple(slice(a, a + s) for a, s in zip(starts, size))]


# ----- values: dtypes, colour spaces, adjustments ----------------------------------------------------------
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """``tf.image.convert_image_dtype``: integers hold ``[0, MAX]``, floats ``[0, 1]``; converting rescales
    between the two (int → float divides by MAX; float → int multiplies by MAX + 0.5 and truncates)."""
    x = image if isinstance(image, Tensor) else constant(image)
    src, dst = np.dtype(x.dtype), np.dtype(dtype)
    if src == dst:
        return x
    if src.kind == "f" and dst.kind == "f":
        return cast(x, dst)
    if src.kind in "iu" and dst.kind == "f":
        return cast(x, dst) * (1.0 / np.iinfo(src).max)
    if src.kind == "f" and dst.kind in "iu":
        scaled = x * (np.iinfo(dst).max + 0.5)
        if saturate:
            scaled = clip(scaled, np.iinfo(dst).min, np.iinfo(dst).max)
        return cast(scaled, dst)
    shift = int(np.iinfo(src).max).bit_length() - int(np.iinfo(dst).max).bit_length()     # value bits
    values = x.numpy().astype(np.int64)
    return constant((values >> shift if shift > 0 else values << -shift).astype(dst))


def grayscale_to_rgb(images, name=None):
    """``tf.image.grayscale_to_rgb``: the one channel repeated three times."""
    x = _images(images, "grayscale_to_rgb")
    if x.shape[-1] != 1:
        raise ValueError(f"image.grayscale_to_rgb: images of shape {x.shape} must have 1 channel.")
    return tile(x, [1] * (x.ndim - 1) + [3])


_YIQ = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                 [0.114, -0.32134392, 0.31119955]])
_YUV = np.array([[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                 [0.114, 0.43601035, -0.10001026]])
_YIQ_INV = np.array([[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]])
_YUV_INV = np.array([[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]])   # TensorFlow's


def _mix(images, kernel, op):
    x = _images(images, op)
    if x.shape[-1] != 3:
        raise ValueError(f"image.{op}: images of shape {x.shape} must have 3 channels.")
    return tensordot(x, constant(kernel.astype(x.dtype)), axes=1)


def rgb_to_yiq(images):
    """``tf.image.rgb_to_yiq``: the linear map to luma Y and chroma I, Q (TensorFlow's matrix)."""
    return _mix(images, _YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """``tf.image.yiq_to_rgb``: the inverse of :func:`rgb_to_yiq`."""
    return _mix(images, _YIQ_INV, "yiq_to_rgb")


def rgb_to_yuv(images):
    """``tf.image.rgb_to_yuv``: the linear map to luma Y and chroma U, V (TensorFlow's matrix)."""
    return _mix(images, _YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """``tf.image.yuv_to_rgb``: the inverse of :func:`rgb_to_yuv`."""
    return _mix(images, _YUV_INV, "yuv_to_rgb")


def _channels(x, op):
    if x.shape[-1] != 3:
        raise ValueError(f"image.{op}: images of shape {x.shape} must have 3 channels.")
    return x[..., 0], x[..., 1], x[..., 2]


def rgb_to_hsv(images, name=None):
    """``tf.image.rgb_to_hsv``: value ``v = max(r, g, b)``, saturation ``(v − min)/v`` and hue in [0, 1) by
    which channel is largest (red first on ties), as TensorFlow's kernel; piecewise differentiable."""
    x = _images(images, "rgb_to_hsv")
    r, g, b = _channels(x, "rgb_to_hsv")
    v = maximum(maximum(r, g), b)
    m = -maximum(maximum(-r, -g), -b)
    delta = v - m
    safe_v = where(v > 0, v, zeros_like(v) + 1.0)
    sat = where(v > 0, delta / safe_v, zeros_like(v))
    safe_d = where(delta > 0, delta, zeros_like(delta) + 1.0)
    hue = where(v == r, (g - b) / safe_d, where(v == g, 2.0 + (b - r) / safe_d, 4.0 + (r - g) / safe_d)) / 6.0
    hue = where(delta > 0, hue, zeros_like(hue))
    hue = where(hue < 0, hue + 1.0, hue)
    return stack([hue, sat, v], axis=-1)


def hsv_to_rgb(images, name=None):
    """``tf.image.hsv_to_rgb``: the inverse of :func:`rgb_to_hsv`, with TensorFlow's formulas
    ``channel = v·(1 − s + s·clip(…(6h)…, 0, 1))``."""
    x = _images(images, "hsv_to_rgb")
    h, s_, v = _channels(x, "hsv_to_rgb")
    dh = h * 6.0
    dr = clip(abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = clip(2.0 - abs(dh - 2.0), 0.0, 1.0)
    db = clip(2.0 - abs(dh - 4.0), 0.0, 1.0)
    keep = 1.0 - s_
    return stack([v * (keep + s_ * dr), v * (keep + s_ * dg), v * (keep + s_ * db)], axis=-1)


def _saturated(x, factor):
    hsv = rgb_to_hsv(x)
    return hsv_to_rgb(stack([hsv[..., 0], clip(hsv[..., 1] * factor, 0.0, 1.0), hsv[..., 2]], axis=-1))


def _hue_turned(x, delta):
    hsv = rgb_to_hsv(x)
    h = hsv[..., 0] + delta
    return hsv_to_rgb(stack([h - floor(h), hsv[..., 1], hsv[..., 2]], axis=-1))


def _no_gradient(kernel, op, how):
    def no_gradient(*_, **__):
        raise LookupError(f"gradient registry has no entry for: {kernel} (adv.image.{op} has no gradient, as in "
                          f"TensorFlow). {how}.")
    return no_gradient


def _without_gradient(values, kernel, op, how, *inputs):
    """``values(*numpy inputs)`` as one recorded op whose gradient raises TensorFlow's ``LookupError`` (its
    kernel registers none), so a tape that needs one says so at the line, naming the op and the way out."""
    @custom_gradient
    def run(*xs):
        return constant(values(*[np.asarray(t._value) for t in xs])), _no_gradient(kernel, op, how)
    run.__name__ = op
    return run(*inputs)


@custom_gradient
def _adjust_saturation(x, factor):
    return _saturated(x, factor), _no_gradient(
        "AdjustSaturation", "adjust_saturation",
        "For one, write it with the conversions: hsv = adv.image.rgb_to_hsv(x); scale hsv[..., 1] and clip it to "
        "[0, 1]; adv.image.hsv_to_rgb(...)")


@custom_gradient
def _adjust_hue(x, delta):
    return _hue_turned(x, delta), _no_gradient(
        "AdjustHue", "adjust_hue", "For one, write it with the conversions: hsv = adv.image.rgb_to_hsv(x); add "
        "delta to hsv[..., 0] modulo 1; "
        "adv.image.hsv_to_rgb(...)")


def adjust_saturation(image, saturation_factor, name=None):
    """``tf.image.adjust_saturation``: the saturation multiplied by the factor (clipped to [0, 1]) in HSV. Its
    values are TensorFlow's; a gradient through it raises ``LookupError``, as TensorFlow's (``AdjustSaturation``
    has no gradient registered)."""
    x = _images(image, "adjust_saturation")
    return _adjust_saturation(x, constant(np.asarray(saturation_factor, dtype=x.dtype)))


def adjust_hue(image, delta, name=None):
    """``tf.image.adjust_hue``: the hue turned by ``delta`` (in [−1, 1], a fraction of the colour wheel). Its
    values are TensorFlow's; a gradient through it raises ``LookupError``, as TensorFlow's."""
    if not -1 <= float(delta) <= 1:
        raise ValueError(f"image.adjust_hue: delta must be in [-1, 1], got {delta}.")
    x = _images(image, "adjust_hue")
    return _adjust_hue(x, constant(np.asarray(delta, dtype=x.dtype)))


def adjust_gamma(image, gamma=1, gain=1):
    """``tf.image.adjust_gamma``: ``gain · x**gamma`` (for images in [0, 1])."""
    x = _images(image, "adjust_gamma", rank=0)
    if np.any(np.asarray(gamma) < 0):
        raise ValueError(f"image.adjust_gamma: gamma must be ≥ 0, got {gamma}.")
    return gain * power(x, gamma)


def random_brightness(image, max_delta, seed=None):
    """``tf.image.random_brightness``: ``x + δ``, δ uniform in ``[−max_delta, max_delta)`` (numpy's draws)."""
    if max_delta < 0:
        raise ValueError(f"image.random_brightness: max_delta must be ≥ 0, got {max_delta}.")
    return adjust_brightness(image, float(_draw(seed).uniform(-max_delta, max_delta)))


def stateless_random_brightness(image, max_delta, seed):
    """``tf.image.stateless_random_brightness``: as the random one, the same δ for the same seed."""
    return random_brightness(image, max_delta, seed)


def random_contrast(image, lower, upper, seed=None):
    """``tf.image.random_contrast``: :func:`adjust_contrast` by a factor uniform in ``[lower, upper)``."""
    if not 0 <= lower < upper:
        raise ValueError(f"image.random_contrast: need 0 ≤ lower < upper, got {lower}, {upper}.")
    return adjust_contrast(image, float(_draw(seed).uniform(lower, upper)))


def stateless_random_contrast(image, lower, upper, seed):
    """``tf.image.stateless_random_contrast``: as the random one, the same factor for the same seed."""
    return random_contrast(image, lower, upper, seed)


def stateless_random_crop(value, size, seed, name=None):
    """``tf.image.stateless_random_crop``: as :func:`random_crop`, the same window for the same seed."""
    return random_crop(value, size, seed)


# ----- measures and filters --------------------------------------------------------------------------------
def image_gradients(image):
    """``tf.image.image_gradients``: ``(dy, dx)``, the differences to the next row and the next column (0 on
    the last row / column), for 4-D images."""
    x = _images(image, "image_gradients")
    if x.ndim != 4:
        raise ValueError(f"image.image_gradients: images of shape {x.shape} must be 4-D (batch, h, w, c).")
    dy = x[:, 1:, :, :] - x[:, :-1, :, :]
    dx = x[:, :, 1:, :] - x[:, :, :-1, :]
    dy = concatenate([dy, zeros_like(x[:, :1, :, :])], axis=1)
    dx = concatenate([dx, zeros_like(x[:, :, :1, :])], axis=2)
    return dy, dx


def sobel_edges(image):
    """``tf.image.sobel_edges``: the vertical and horizontal Sobel responses, shape ``(b, h, w, c, 2)``, on
    the image padded by reflection (as TensorFlow)."""
    x = _images(image, "sobel_edges")
    if x.ndim != 4:
        raise ValueError(f"image.sobel_edges: images of shape {x.shape} must be 4-D (batch, h, w, c).")
    h, w = x.shape[1], x.shape[2]
    p = pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    kernels = (np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]]), np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]))
    out = []
    for k in kernels:
        acc = None
        for i in range(3):
            for j in range(3):
                if k[i, j]:
                    term = p[:, i:i + h, j:j + w, :] * float(k[i, j])
                    acc = term if acc is None else acc + term
        out.append(acc)
    return stack(out, axis=-1)


def total_variation(images, name=None):
    """``tf.image.total_variation``: ``Σ |x[i+1, j] − x[i, j]| + Σ |x[i, j+1] − x[i, j]|`` per image (a scalar
    for one 3-D image)."""
    x = _images(images, "total_variation")
    dv = abs(x[..., 1:, :, :] - x[..., :-1, :, :])
    dh = abs(x[..., :, 1:, :] - x[..., :, :-1, :])
    return sum(dv, axis=(-3, -2, -1)) + sum(dh, axis=(-3, -2, -1))


def psnr(a, b, max_val, name=None):
    """``tf.image.psnr``: ``10·log10(max_val² / mse)`` per image (the mse over height, width and channels)."""
    x, y = _images(a, "psnr"), _images(b, "psnr")
    mse = mean((x - y) * (x - y), axis=(-3, -2, -1))
    return (10.0 / np.log(10.0)) * (np.log(float(max_val) ** 2) - log(mse))


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    """``tf.image.ssim``: the structural similarity of two images, per image — the mean over every
    ``filter_size`` Gaussian window and channel of luminance × contrast-structure,
    ``(2μxμy + c1)/(μx² + μy² + c1) · (2σxy + c2)/(σx² + σy² + c2)``, ``c = (k·max_val)²`` (TensorFlow's
    formulas, no Bessel correction). Float32, as TensorFlow; differentiable in both images."""
    x, y = cast(_images(img1, "ssim"), "float32"), cast(_images(img2, "ssim"), "float32")
    per_channel, _ = ssim_per_channel(x, y, max_val, filter_size, filter_sigma, k1, k2)
    return mean(per_channel, axis=-1)


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11, filter_sigma=1.5, k1=0.01,
                    k2=0.03):
    """``tf.image.ssim_multiscale``: MS-SSIM (Wang, Simoncelli and Bovik, 2003), per image. At scale 0 the
    images as they are, at each next scale halved by a 2 × 2 average pool (an odd height or width first
    padded by repeating its last row or column, TensorFlow's 'SYMMETRIC' pad). With ``cs_j`` the
    contrast-structure at scale ``j`` and ``ssim_J`` the full SSIM at the last scale (each per channel,
    clipped below at 0), ``MS-SSIM = Π_{j<J} cs_j^{w_j} · ssim_J^{w_J}`` for ``w = power_factors``, averaged
    over the channels. Float32, as TensorFlow; differentiable in both images (pooling and padding are rules)."""
    x, y = cast(_images(img1, "ssim_multiscale"), "float32"), cast(_images(img2, "ssim_multiscale"), "float32")
    if x.shape[-3:] != y.shape[-3:]:
        raise ValueError(f"image.ssim_multiscale: images of shapes {x.shape} and {y.shape} must have the same "
                         "height, width and channels.")
    lead = x.shape[:-3]
    scores = []
    for k in range(len(power_factors)):
        if k:
            h, w = x.shape[-3], x.shape[-2]
            widths = [(0, 0)] * (x.ndim - 3) + [(0, h % 2), (0, w % 2), (0, 0)]
            x, y = (pad(t, widths, mode="symmetric") if h % 2 or w % 2 else t for t in (x, y))
            x, y = (_halve(t) for t in (x, y))
        full, cs = ssim_per_channel(x, y, max_val, filter_size, filter_sigma, k1, k2, op="ssim_multiscale")
        scores.append(cs)
    scores[-1] = full
    weighted = [power(maximum(s, 0.0), float(f)) for s, f in zip(scores, power_factors)]
    total = weighted[0]
    for w_ in weighted[1:]:
        total = total * w_
    out = mean(total, axis=-1)
    return reshape(out, lead) if out.shape != lead else out


def _halve(x):
    """A 2 × 2 average pool, stride 2, 'VALID', over height and width of ``(…, H, W, C)``."""
    h, w = x.shape[-3] // 2 * 2, x.shape[-2] // 2 * 2
    return (x[..., 0:h:2, 0:w:2, :] + x[..., 1:h:2, 0:w:2, :] + x[..., 0:h:2, 1:w:2, :] + x[..., 1:h:2, 1:w:2, :]) \
        * 0.25


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """``tf.image.extract_patches``: every ``sizes[1] × sizes[2]`` window (its pixels ``rates`` apart),
    ``strides`` apart, flattened into the depth in ``(row, column, channel)`` order: ``(N, H, W, C) →
    (N, nH, nW, kH·kW·C)``. ``sizes``, ``strides`` and ``rates`` are TensorFlow's ``[1, h, w, 1]``; ``padding``
    ``"VALID"`` or ``"SAME"``. A one-hot convolution: the gradient adds each copy's ḡ back onto its pixel."""
    x = _images(images, "extract_patches")
    if x.ndim != 4:
        raise ValueError(f"image.extract_patches: images of shape {x.shape} must be 4-D (batch, height, width, "
                         "channels).")
    per = []
    for what, v in (("sizes", sizes), ("strides", strides), ("rates", rates)):
        v = [int(i) for i in np.asarray(v).ravel()]
        if len(v) != 4 or v[0] != 1 or v[3] != 1:
            raise ValueError(f"image.extract_patches: {what} must be [1, height, width, 1], got {v}.")
        per.append(tuple(v[1:3]))
    return _window_patches(x, per[0], per[1], per[2], padding)


def _numbers(v) -> np.ndarray:
    """Positions, boxes, colours: numbers TensorFlow never differentiates, read without leaving the tape."""
    return np.asarray(v._value if isinstance(v, Tensor) else v)


def _glimpse_kernel(x, offsets, height, width, centered, normalized, noise, rng):
    """TensorFlow's ``ExtractGlimpseV2`` on numpy values: the window's top-left corner from ``offsets``
    (``(y, x)``: scaled by the image size when normalized; shifted by half the image and then back by half the
    window when centered and normalized; by half the image when only centered), truncated to an int; the
    window copied, and where it leaves the image the glimpse is noise (``"uniform"`` in the image's [min, max],
    ``"gaussian"`` with its mean and standard deviation, ``"zero"``)."""
    n, h, w, c = x.shape
    out = np.empty((n, height, width, c), dtype=np.float32)
    for i in range(n):
        oy, ox = (float(v) for v in offsets[i])
        if normalized:
            oy, ox = oy * h, ox * w
            if centered:
                oy, ox = oy / 2.0 + h / 2.0 - height / 2.0, ox / 2.0 + w / 2.0 - width / 2.0
        elif centered:
            oy, ox = oy + h / 2.0, ox + w / 2.0
        top, left = int(np.float32(oy)), int(np.float32(ox))
        image = x[i]
        spans = []
        for start, size, length in ((top, height, h), (left, width, w)):
            if start < 0:
                extent, base, src = max(0, size + start), size - max(0, size + start), 0
            elif start + size >= length:
                extent, base, src = max(0, length - start), 0, start
            else:
                extent, base, src = size, 0, start
            spans.append((min(length, extent), base, src, start < 0 or start + size >= length))
        if spans[0][3] or spans[1][3]:
            if noise == "zero":
                out[i] = 0
            elif noise == "gaussian":
                out[i] = rng.normal(image.mean(), image.std(), size=(height, width, c))
            else:
                out[i] = image.min() + rng.uniform(size=(height, width, c)) * (image.max() - image.min())
        (eh, bh, sh, _), (ew, bw, sw, _) = spans
        if eh > 0 and ew > 0:
            out[i, bh:bh + eh, bw:bw + ew] = image[sh:sh + eh, sw:sw + ew]
    return out


def extract_glimpse(input, size, offsets, centered=True, normalized=True, noise="uniform", name=None):  # noqa: A002
    """``tf.image.extract_glimpse``: a ``size = (height, width)`` window of each image at ``offsets`` ``(N, 2)``
    (``(y, x)``; see :func:`_glimpse_kernel` for how ``centered`` and ``normalized`` place it), float32.
    Where the window leaves the image it is filled by ``noise`` (``"uniform"``, ``"gaussian"``: numpy's
    draws, not TensorFlow's numbers; ``"zero"``). No gradient, as TensorFlow: a gradient through it raises
    TensorFlow's ``LookupError`` (its ``ExtractGlimpseV2`` kernel registers none), naming a way to get one."""
    x = _images(input, "extract_glimpse")
    if x.ndim != 4:
        raise ValueError(f"image.extract_glimpse: input of shape {x.shape} must be 4-D (batch, height, width, "
                         "channels).")
    if noise not in ("uniform", "gaussian", "zero"):
        raise ValueError(f"image.extract_glimpse: noise must be 'uniform', 'gaussian' or 'zero', got {noise!r}.")
    height, width = (int(v) for v in np.asarray(size).ravel())
    where_ = _numbers(offsets).astype(np.float32)
    if where_.shape != (x.shape[0], 2):
        raise ValueError(f"image.extract_glimpse: offsets of shape {where_.shape} must be ({x.shape[0]}, 2), "
                         "one (y, x) per image.")
    rng = generator()
    return _without_gradient(
        lambda values, _: _glimpse_kernel(values, where_, height, width, centered, normalized, noise, rng),
        "ExtractGlimpseV2", "extract_glimpse", "For a window with a gradient, slice the images "
        "(x[:, top:top + h, left:left + w, :]) or use adv.image.crop_and_resize", cast(x, "float32"),
        offsets if isinstance(offsets, Tensor) else constant(where_))


_BOX_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1],
                        [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]], dtype=np.float32)


def _draw_kernel(canvas, boxes, colors):
    """TensorFlow's ``DrawBoundingBoxesV2`` on numpy values: each box's edges (``y = y_min·(H − 1)`` …,
    truncated to ints) painted one pixel wide in its colour (colours taken in turn), the parts inside the
    image only; an inverted box or one wholly outside is skipped."""
    canvas = canvas.copy()
    n, h, w, depth = canvas.shape
    for b in range(n):
        for k, box in enumerate(boxes[b]):
            color = colors[k % len(colors)][:depth].astype(canvas.dtype)
            top, left = int(np.float32(box[0]) * (h - 1)), int(np.float32(box[1]) * (w - 1))
            bottom, right = int(np.float32(box[2]) * (h - 1)), int(np.float32(box[3]) * (w - 1))
            if top > bottom or left > right or top >= h or bottom < 0 or left >= w or right < 0:
                continue
            r0, r1, c0, c1 = max(top, 0), min(bottom, h - 1), max(left, 0), min(right, w - 1)
            if top >= 0:
                canvas[b, top, c0:c1 + 1] = color
            if bottom < h:
                canvas[b, bottom, c0:c1 + 1] = color
            if left >= 0:
                canvas[b, r0:r1 + 1, left] = color
            if right < w:
                canvas[b, r0:r1 + 1, right] = color
    return canvas


def draw_bounding_boxes(images, boxes, colors, name=None):
    """``tf.image.draw_bounding_boxes``: the outline of each box ``[y_min, x_min, y_max, x_max]`` (normalised to
    [0, 1]) of ``boxes`` ``(N, num_boxes, 4)`` painted on the images (1, 3 or 4 channels) in ``colors``
    (``(num_colors, 4)`` RGBA, taken in turn; ``None``: TensorFlow's table, yellow, blue, red …). The images'
    dtype. No gradient, as TensorFlow: with ``colors`` a gradient through it, to the images or the boxes,
    raises TensorFlow's ``LookupError`` (its ``DrawBoundingBoxesV2`` kernel registers none); without, it is
    None (TensorFlow's first kernel, ``DrawBoundingBoxes``, is declared not differentiable)."""
    x = _images(images, "draw_bounding_boxes")
    if x.ndim != 4 or x.shape[-1] not in (1, 3, 4):
        raise ValueError(f"image.draw_bounding_boxes: images of shape {x.shape} must be 4-D (batch, height, "
                         "width, channels) with 1, 3 or 4 channels.")
    b = _numbers(boxes).astype(np.float32)
    if b.ndim != 3 or b.shape[0] != x.shape[0] or b.shape[2] != 4:
        raise ValueError(f"image.draw_bounding_boxes: boxes of shape {b.shape} must be ({x.shape[0]}, num_boxes, "
                         "4): [y_min, x_min, y_max, x_max] per box, per image.")
    if colors is None:
        table = _BOX_COLORS.copy()
        if x.shape[-1] == 1:
            table[:, 0] = 1
    else:
        table = _numbers(colors).astype(np.float32)
        if table.ndim != 2 or table.shape[1] < x.shape[-1] or not len(table):
            raise ValueError(f"image.draw_bounding_boxes: colors of shape {table.shape} must be (num_colors, 4), "
                             f"at least {x.shape[-1]} values per colour.")
    if colors is None:       # TensorFlow's first DrawBoundingBoxes kernel, declared not differentiable: None

        def draw_bounding_boxes(values, _):
            return _draw_kernel(values, b, table)
        return numpy_function(draw_bounding_boxes, [x, boxes if isinstance(boxes, Tensor) else constant(b)],
                              x.dtype)
    return _without_gradient(lambda values, _: _draw_kernel(values, b, table), "DrawBoundingBoxesV2",
                             "draw_bounding_boxes", "Drawing is for looking at the boxes: compute the loss from the "
                             "images before they are drawn on", x,
                             boxes if isinstance(boxes, Tensor) else constant(b))


class ResizeMethod:
    """``tf.image.ResizeMethod``: the names ``resize`` takes (``bilinear`` and ``nearest`` are implemented)."""
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _source_positions(n_out, n_in):
    """Half-pixel centres (TensorFlow 2's resize): output pixel ``i`` samples input position
    ``(i + ½)·n_in/n_out − ½``."""
    return (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5


def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False, name=None):
    """``tf.image.resize`` with ``bilinear`` (the default) or ``nearest``, TensorFlow 2's half-pixel centres.
    Bilinear output is a weighted sum of the four nearest pixels, so ḡ is shared among them with the same
    weights. The output is float32 (as TensorFlow's)."""
    x = _images(images, "resize")
    method = getattr(method, "value", method)
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"image.resize: method {method!r} is not implemented here; use 'bilinear' or 'nearest'.")
    if antialias:
        raise ValueError("image.resize: antialias=True is not implemented here; resize without it.")
    h, w = x.shape[-3], x.shape[-2]
    th, tw = int(size[0]), int(size[1])
    if preserve_aspect_ratio:
        scale = min(th / h, tw / w)
        th, tw = max(int(round(h * scale)), 1), max(int(round(w * scale)), 1)
    x = cast(x, "float32")
    if method == "nearest":
        rows = np.clip(np.floor((np.arange(th) + 0.5) * h / th), 0, h - 1).astype(np.int64)
        cols = np.clip(np.floor((np.arange(tw) + 0.5) * w / tw), 0, w - 1).astype(np.int64)
        return take(take(x, constant(rows), axis=-3), constant(cols), axis=-2)
    out = x
    for axis, (n_out, n_in) in ((-3, (th, h)), (-2, (tw, w))):
        pos = np.clip(_source_positions(n_out, n_in), 0, n_in - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        frac = (pos - lo).astype(np.float32)
        shape = [1] * out.ndim
        shape[axis] = n_out
        f = constant(frac.reshape(shape))
        a, b = take(out, constant(lo), axis=axis), take(out, constant(hi), axis=axis)
        out = a + (b - a) * f
    return out


def resize_with_pad(image, target_height, target_width, method="bilinear", antialias=False):
    """``tf.image.resize_with_pad``: resized to fit inside ``target_height × target_width`` keeping its aspect
    ratio, then padded with zeros to exactly that size (centred)."""
    x = _images(image, "resize_with_pad")
    h, w = x.shape[-3], x.shape[-2]
    ratio = max(w / target_width, h / target_height)
    fh, fw = h / ratio, w / ratio
    resized = resize(x, (int(np.floor(fh)), int(np.floor(fw))), method=method, antialias=antialias)
    return pad_to_bounding_box(resized, max(int(np.floor((target_height - fh) / 2)), 0),
                               max(int(np.floor((target_width - fw) / 2)), 0), target_height, target_width)

__all__ = [
    "adjust_brightness", "adjust_contrast", "rgb_to_grayscale", "per_image_standardization", "flip_left_right",
    "flip_up_down", "transpose", "rot90", "random_flip_left_right", "random_flip_up_down",
    "stateless_random_flip_left_right", "stateless_random_flip_up_down", "crop_to_bounding_box",
    "pad_to_bounding_box", "central_crop", "resize_with_crop_or_pad", "random_crop", "stateless_random_crop",
    "convert_image_dtype", "grayscale_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb",
    "adjust_gamma", "random_brightness", "stateless_random_brightness", "random_contrast",
    "stateless_random_contrast", "image_gradients", "sobel_edges", "total_variation", "psnr", "ResizeMethod",
    "resize", "resize_with_pad", "ssim", "rgb_to_hsv", "hsv_to_rgb", "adjust_saturation", "adjust_hue",
    "ssim_multiscale", "crop_and_resize", "extract_patches", "extract_glimpse", "draw_bounding_boxes",
]
