"""autodiff_viz.utils.image_utils: keras.utils' image helpers.

The first tests run with Pillow hidden (``sys.modules["PIL"] = None``), whether
or not it is installed: the PNG writer, img_to_array, and the ImportErrors
that name ``pip install pillow``. The PNG files are decoded here by a small
reader of the format (signature, chunk CRCs, zlib, filter 0), written for the
tests. The last tests check the optional Pillow integration and only run
where Pillow is installed (it is not a dependency).
"""
import io
import struct
import sys
import zlib

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.utils import image_utils


@pytest.fixture
def no_pillow(monkeypatch):
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")] + ["PIL", "PIL.Image"]:
        monkeypatch.setitem(sys.modules, name, None)        # import PIL now raises ImportError


def read_png(data: bytes):
    """``(pixels (h, w, c), bit depth, color type)`` of a non-interlaced PNG whose rows use filter 0."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        chunks.append((kind, body))
        pos += 12 + length
    assert [k for k, _ in chunks][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert interlace == 0
    channels = {0: 1, 2: 3, 6: 4}[color]
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    stride = width * channels * depth // 8
    rows = [raw[r * (stride + 1):(r + 1) * (stride + 1)] for r in range(height)]
    assert all(row[0] == 0 for row in rows)
    dtype = np.uint8 if depth == 8 else ">u2"
    pixels = np.frombuffer(b"".join(row[1:] for row in rows), dtype=dtype).reshape(height, width, channels)
    return pixels, depth, color


def test_save_img_writes_png_without_pillow_scaled_as_keras(tmp_path, no_pillow):
    x = np.linspace(-1.0, 1.0, 4 * 5 * 3).reshape(4, 5, 3)
    image_utils.save_img(tmp_path / "a.png", x)
    pixels, depth, color = read_png((tmp_path / "a.png").read_bytes())
    want = ((x - x.min()) / (x.max() - x.min()) * 255).astype(np.float32).astype(np.uint8)
    assert (depth, color) == (8, 2) and pixels.shape == (4, 5, 3) and np.array_equal(pixels, want)
    assert pixels[0, 0, 0] == 0 and pixels[-1, -1, -1] == 255


def test_save_img_gray_rgba_channels_first_and_unscaled_values(tmp_path, no_pillow):
    digit = np.arange(6 * 7, dtype=np.uint8).reshape(6, 7, 1) * 6
    buffer = io.BytesIO()
    image_utils.save_img(buffer, digit, scale=False)             # a file object: PNG
    pixels, depth, color = read_png(buffer.getvalue())
    assert (depth, color) == (8, 0) and np.array_equal(pixels, digit)
    rgba = np.random.default_rng(0).integers(0, 256, (4, 3, 2)).astype(np.uint8)      # channels first
    image_utils.save_img(tmp_path / "b.PNG", rgba, data_format="channels_first", scale=False)
    pixels, _, color = read_png((tmp_path / "b.PNG").read_bytes())
    assert color == 6 and np.array_equal(pixels, rgba.transpose(1, 2, 0))
    wide = np.arange(12, dtype=np.float64).reshape(3, 4, 1) * 100                  # one channel above 255
    image_utils.save_img(tmp_path / "c.png", adv.constant(wide), scale=False)
    pixels, depth, _ = read_png((tmp_path / "c.png").read_bytes())
    assert depth == 16 and pixels[:, :, 0].tolist() == wide[:, :, 0].astype(int).tolist()


def test_image_errors_name_the_shape_and_the_fix(tmp_path, no_pillow):
    with pytest.raises(ValueError, match=r"save_img: expected one image of rank 3.*shape \(28, 28\).*"
                                         r"x\[\.\.\., None\]"):
        image_utils.save_img(tmp_path / "d.png", np.zeros((28, 28)))
    with pytest.raises(ValueError, match=r"1 \(gray\), 3 \(RGB\) or 4 \(RGBA\) channels, got 2"):
        image_utils.save_img(tmp_path / "d.png", np.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match=r"scale=False the values must be pixel values from 0 to 255, got -1 to 300"):
        image_utils.save_img(tmp_path / "d.png", np.array([[[-1.0, 300.0, 0.0]]]), scale=False)
    with pytest.raises(ValueError, match="data_format must be 'channels_last'"):
        image_utils.img_to_array(np.zeros((2, 2)), data_format="NHWC")
    assert not (tmp_path / "d.png").exists()


def test_without_pillow_the_pillow_functions_say_how_to_install_it(tmp_path, no_pillow):
    with pytest.raises(ImportError, match=r"load_img needs Pillow.*pip install pillow"):
        image_utils.load_img(tmp_path / "a.png")
    with pytest.raises(ImportError, match=r"array_to_img needs Pillow.*pip install pillow"):
        image_utils.array_to_img(np.zeros((2, 2, 3)))
    with pytest.raises(ImportError, match=r"save_img: writing jpg needs Pillow: pip install pillow\. PNG is written"):
        image_utils.save_img(tmp_path / "a.jpg", np.zeros((2, 2, 3)))
    with pytest.raises(TypeError, match=r"options \['quality'\] are Pillow's"):
        image_utils.save_img(tmp_path / "a.png", np.zeros((2, 2, 3)), quality=90)


def test_img_to_array_adds_the_channel_axis_and_moves_channels(no_pillow):
    gray = np.arange(6, dtype=np.uint8).reshape(2, 3)
    out = image_utils.img_to_array(gray)
    assert out.shape == (2, 3, 1) and out.dtype == np.float32 and out[1, 2, 0] == 5.0
    rgb = np.zeros((2, 3, 3), dtype=np.uint8)
    assert image_utils.img_to_array(rgb, data_format="channels_first").shape == (3, 2, 3)
    assert image_utils.img_to_array(gray, dtype="uint8").dtype == np.uint8
    with pytest.raises(ValueError, match=r"\(height, width\) or \(height, width, channels\), got \(2,\)"):
        image_utils.img_to_array(np.zeros(2))


# ---------------------------------------------------------------------------
# with Pillow (optional; it is not a dependency of the package)
# ---------------------------------------------------------------------------
def test_pillow_reads_the_png_written_without_it(tmp_path, monkeypatch):
    pil = pytest.importorskip("PIL.Image")
    x = np.random.default_rng(1).integers(0, 256, (5, 4, 3)).astype(np.uint8)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "PIL", None)
        m.setitem(sys.modules, "PIL.Image", None)
        image_utils.save_img(tmp_path / "pure.png", x, scale=False)
    with pil.open(tmp_path / "pure.png") as img:
        assert img.mode == "RGB" and np.array_equal(np.asarray(img), x)


def test_pillow_round_trip_and_load_img_options(tmp_path):
    pytest.importorskip("PIL.Image")
    x = np.random.default_rng(2).integers(0, 256, (6, 8, 3)).astype(np.uint8)
    image_utils.save_img(tmp_path / "x.png", x, scale=False)
    img = image_utils.load_img(tmp_path / "x.png")
    assert img.mode == "RGB" and img.size == (8, 6)
    assert np.array_equal(image_utils.img_to_array(img), x.astype(np.float32))
    gray = image_utils.img_to_array(image_utils.load_img(tmp_path / "x.png", color_mode="grayscale"))
    assert gray.shape == (6, 8, 1)
    small = image_utils.load_img(tmp_path / "x.png", target_size=(3, 4))
    assert small.size == (4, 3) and np.array_equal(np.asarray(small), x[1::2, 1::2])   # nearest: pixel centres
    cropped = image_utils.load_img(tmp_path / "x.png", target_size=(6, 6), keep_aspect_ratio=True)
    assert np.array_equal(np.asarray(cropped), x[:, 1:7])                                # the middle 6 columns
    assert image_utils.array_to_img(np.zeros((2, 2, 4))).mode == "RGBA"
    assert image_utils.array_to_img(np.full((2, 2, 1), 1000.0), scale=False).mode == "I"
    with pytest.warns(UserWarning, match="JPG format does not support RGBA"):
        image_utils.save_img(tmp_path / "y.jpg", np.zeros((2, 2, 4)))
    with pytest.raises(ValueError, match="color_mode must be 'grayscale', 'rgb' or 'rgba', got 'hsv'"):
        image_utils.load_img(tmp_path / "x.png", color_mode="hsv")
