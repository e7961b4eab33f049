"""``adv.image``: TensorFlow's ``tf.image`` adjustments that the official guides put on a tape.

    >>> adv.image.adjust_brightness(images, 0.1)      # x + δ: the gradient passes through (ḡ to x, Σḡ to δ)
    >>> adv.image.adjust_contrast(images, 2.0)        # (x − mean)·f + mean: TensorFlow registers no gradient

Images are ``(..., height, width, channels)``. ``adjust_brightness``, ``rgb_to_grayscale`` and
``per_image_standardization`` are written with recorded ops, so their gradients flow as in TensorFlow.
``adjust_contrast`` computes TensorFlow's values, and, as TensorFlow (whose ``AdjustContrastv2`` op has no
gradient registered), taking a gradient through it raises ``LookupError``: the "Introduction to gradients
and automatic differentiation" guide shows exactly that. For a differentiable contrast write
``(x − adv.mean(x, axis=(-3, -2), keepdims=True)) * f + mean`` with ops.
"""
from __future__ import annotations

from .core.ops import cast, maximum, mean, std, tensordot
from .core.tensor import Tensor, constant
from .records.transforms import custom_gradient


def _images(images, op: str) -> Tensor:
    x = images if isinstance(images, Tensor) else constant(images)
    if x.ndim < 3:
        raise ValueError(f"image.{op}: images of shape {x.shape} must be (..., height, width, channels); "
                         "add a channel axis with x[..., None].")
    return x if x.dtype.kind == "f" else cast(x, "float32")


def adjust_brightness(image, delta):
    """``tf.image.adjust_brightness``: ``x + δ`` on every entry (ḡ to ``x``, ``Σ ḡ`` to ``δ``)."""
    return _images(image, "adjust_brightness") + delta


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


__all__ = ["adjust_brightness", "adjust_contrast", "rgb_to_grayscale", "per_image_standardization"]
