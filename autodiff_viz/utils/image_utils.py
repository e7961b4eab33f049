"""Images to arrays and back: ``keras.utils``' ``array_to_img``, ``img_to_array``, ``save_img``, ``load_img``.

Pillow is not a dependency of autodiff_viz. What needs it, and what does not:

* ``img_to_array`` is numpy only: it takes a Pillow image, an array or a
  tensor.
* ``save_img`` writes PNG by itself (8-bit gray, RGB or RGBA, 16-bit gray
  for values above 255; zlib-compressed, no Pillow needed), so a learner can
  save a filter or an MNIST digit anywhere. With Pillow installed, Pillow
  writes every format, PNG included, as in Keras; other formats without it
  raise an ImportError naming ``pip install pillow``.
* ``array_to_img`` and ``load_img`` return Pillow images (as Keras), so they
  need Pillow and say how to install it.

Images are ``(height, width, channels)`` ("channels_last", Keras' default)
unless ``data_format="channels_first"``; ``scale=True`` maps the array's
minimum to 0 and its maximum to 255, as Keras does.
"""
from __future__ import annotations

import os
import struct
import warnings
import zlib

import numpy as np

__all__ = ["array_to_img", "img_to_array", "save_img", "load_img"]

_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pillow(who: str):
    """The ``PIL.Image`` module, or an ImportError that says how to get it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{who} needs Pillow, which autodiff_viz does not install: pip install pillow "
                          "(save_img writes PNG files without it).") from None
    return Image


def _data_format(data_format, who: str) -> str:
    if data_format is None:
        return "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{who}: data_format must be 'channels_last' (height, width, channels) or "
                         f"'channels_first' (channels, height, width), got {data_format!r}.")
    return data_format


def _pixels(x, data_format, scale: bool, dtype, who: str) -> np.ndarray:
    """``x`` as ``(height, width, channels)`` pixel values: uint8 for 1, 3 or 4 channels, int32 for one
    channel above 255 (Pillow's mode "I"), as Keras' ``array_to_img``."""
    x = np.asarray(getattr(x, "_value", x), dtype=dtype or "float32")
    if x.ndim != 3:
        hint = " Add a channel axis: x[..., None] (or x[None] for channels_first)." if x.ndim == 2 else \
            " Pass one image, e.g. x[0] of a batch." if x.ndim == 4 else ""
        raise ValueError(f"{who}: expected one image of rank 3 (height, width, channels), got an array of shape "
                         f"{x.shape}.{hint}")
    if _data_format(data_format, who) == "channels_first":
        x = x.transpose(1, 2, 0)
    channels = x.shape[2]
    if channels not in (1, 3, 4):
        raise ValueError(f"{who}: an image has 1 (gray), 3 (RGB) or 4 (RGBA) channels, got {channels} (shape "
                         f"{x.shape}). With channels first, pass data_format='channels_first'.")
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    if channels == 1 and np.max(x) > 255:
        return x.astype(np.int32)
    if not scale and (np.min(x) < 0 or np.max(x) > 255):
        raise ValueError(f"{who}: with scale=False the values must be pixel values from 0 to 255, got "
                         f"{np.min(x):g} to {np.max(x):g}. Keep scale=True to stretch them to 0..255, or clip them.")
    return x.astype(np.uint8)


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A Pillow image of the array ``x`` (``(height, width, channels)``; mode L, RGB or RGBA, or I for
    one channel above 255). ``scale``: stretch the values to 0..255 first. Needs Pillow."""
    who = "array_to_img"
    image = _pillow(who)
    pixels = _pixels(x, data_format, scale, dtype, who)
    if pixels.dtype == np.int32:
        return image.fromarray(pixels[:, :, 0], "I")
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[pixels.shape[2]]
    return image.fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode)


def img_to_array(img, data_format=None, dtype=None):
    """A float32 array (``dtype`` to change it) of ``img`` (a Pillow image, an array or a tensor), shaped
    ``(height, width, channels)`` (a gray image gets a channel axis of 1), or channels first."""
    who = "img_to_array"
    fmt = _data_format(data_format, who)
    x = np.asarray(getattr(img, "_value", img), dtype=dtype or "float32")
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"{who}: an image has shape (height, width) or (height, width, channels), got {x.shape}.")
    return np.ascontiguousarray(x.transpose(2, 0, 1)) if fmt == "channels_first" else x


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Write the array ``x`` as an image file (``file_format``, else the file name's extension).

    PNG is written without Pillow (see the module docstring); with Pillow
    installed every format goes through it, with ``kwargs`` passed to
    ``Image.save``. An RGBA image saved as JPEG loses its alpha (with a
    warning, as Keras).
    """
    who = "save_img"
    fmt = (file_format or os.path.splitext(os.fspath(path))[1].lstrip(".") if not hasattr(path, "write")
           else file_format or "png").lower()
    try:
        _pillow(who)
    except ImportError:
        if fmt != "png":
            raise ImportError(f"{who}: writing {fmt or 'a file without extension'} needs Pillow: pip install "
                              "pillow. PNG is written without it: save_img('image.png', x).") from None
        if kwargs:
            raise TypeError(f"{who}: the options {sorted(kwargs)} are Pillow's; install it (pip install pillow) "
                            "or leave them out.") from None
        write_png(path, _pixels(x, data_format, scale, None, who))
        return
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and fmt in ("jpg", "jpeg"):
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format={"jpg": "jpeg"}.get(fmt, fmt) or None, **kwargs)


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """The image file at ``path`` (a path or a binary file object) as a Pillow image, as Keras' ``load_img``.

    Args:
        color_mode: ``"grayscale"``, ``"rgb"`` or ``"rgba"``.
        target_size: ``(height, width)`` to resize to, or None.
        interpolation: ``"nearest"``, ``"bilinear"``, ``"bicubic"``,
            ``"hamming"``, ``"box"`` or ``"lanczos"``.
        keep_aspect_ratio: crop the middle of the image to the aspect ratio
            of ``target_size`` before resizing, instead of stretching it.
    """
    who = "load_img"
    image = _pillow(who)
    if color_mode not in ("grayscale", "rgb", "rgba"):
        raise ValueError(f"{who}: color_mode must be 'grayscale', 'rgb' or 'rgba', got {color_mode!r}.")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{who}: interpolation must be one of {', '.join(_INTERPOLATIONS)}; got {interpolation!r}.")
    source = path if hasattr(path, "read") else os.fspath(path)
    with image.open(source) as opened:
        img = opened.copy()
    if color_mode == "grayscale":
        if img.mode not in ("L", "I;16", "I"):
            img = img.convert("L")
    elif img.mode != color_mode.upper():
        img = img.convert(color_mode.upper())
    if target_size is not None:
        height, width = target_size
        if img.size != (width, height):
            resample = getattr(image, "Resampling", image)
            method = getattr(resample, interpolation.upper())
            if keep_aspect_ratio:
                w, h = img.size
                crop_w, crop_h = min(w, int(h * width / height)), min(h, int(w * height / width))
                left, top = (w - crop_w) // 2, (h - crop_h) // 2
                img = img.crop((left, top, left + crop_w, top + crop_h))
            img = img.resize((width, height), method)
    return img


# ---------------------------------------------------------------------------
# PNG without Pillow
# ---------------------------------------------------------------------------
def write_png(target, pixels: np.ndarray) -> None:
    """Write ``pixels`` (``(h, w, c)``: uint8 with c = 1, 3 or 4, or int32 with c = 1, stored as 16-bit
    gray clipped to 0..65535) as a PNG to a path or a binary file object.

    PNG: the 8-byte signature, then chunks (length, type, data, CRC-32):
    IHDR (size, bit depth, color type 0 gray / 2 RGB / 6 RGBA), IDAT (the
    zlib-compressed rows, each prefixed by filter type 0, "none"), IEND.
    """
    height, width, channels = pixels.shape
    if pixels.dtype == np.int32:
        rows, depth = np.clip(pixels[:, :, 0], 0, 65535).astype(">u2"), 16
    else:
        rows, depth = pixels.reshape(height, width * channels), 8
    color = {1: 0, 3: 2, 4: 6}[channels]
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    if hasattr(target, "write"):
        target.write(png)
    else:
        with open(target, "wb") as f:
            f.write(png)
