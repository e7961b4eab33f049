"""Sampling an image at computed positions: Keras 3's ``map_coordinates``, ``affine_transform``,
``perspective_transform``, ``elastic_transform`` and ``scale_and_translate`` (``keras.ops.image``), and
TensorFlow's ``crop_and_resize`` (``tf.image``).

Each output entry is a weighted sum of input entries read at integer positions,

    out[p] = Σ_k w_k(p) · x[i_k(p)]         (bilinear: the 4 neighbours of the sample point, weights
                                             (1 − fx)(1 − fy), fx(1 − fy), (1 − fx)fy, fx·fy with f the
                                             fractional parts; nearest: one neighbour, weight 1)

and nothing here has numerics of its own: the reads are the ``take`` rule (a gather) and the weighting is
multiplication, so the gradient comes from the one rule table. ḡ of an output goes back to the pixels it
read, times their weights (a scatter-add): the exact adjoint of the sampling, so ``adv.check_grads``
agrees with it. Where TensorFlow differentiates the positions too (``map_coordinates``' coordinates,
``crop_and_resize``'s boxes, ``scale_and_translate``'s scale and translation) the weights are written as
tensors in them, e.g. ``fx = c − ⌊c⌋`` (``⌊·⌋`` has no gradient, as ``tf.floor``), so
``∂out/∂c = x[⌊c⌋ + 1] − x[⌊c⌋]``: the slope between the two neighbours. Where it does not (the
transform of ``affine_transform``, the points of ``perspective_transform``) the positions are constants.

Positions outside the image are mapped back in by ``fill_mode`` — ``constant`` (read ``fill_value``),
``nearest`` (the edge pixel), ``wrap`` (the opposite edge), ``reflect`` (``d c b a | a b c d | d c b a``)
and, for ``map_coordinates``, ``mirror`` (``c d c b | a b c d | c b a b``) — or, for ``crop_and_resize``,
read ``extrapolation_value``.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..tensor import Tensor, constant
from . import (
    _tensor,
    abs,
    cast,
    floor,
    maximum,
    reshape,
    sin,
    stack,
    sum,
    take,
    tensordot,
    where,
)
from . import moveaxis as _moveaxis
from .filters import as_batch, gaussian_blur

INTERPOLATIONS = ("nearest", "bilinear")
FILL_MODES = ("constant", "nearest", "wrap", "reflect")
MAP_FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _value(x) -> np.ndarray:
    """The numbers of ``x`` for positions (an index is never differentiated): not an escape."""
    return x._value if isinstance(x, Tensor) else np.asarray(x)


def _choice(value, allowed, what, op):
    if value not in allowed:
        raise ValueError(f"image.{op}: {what} must be one of {', '.join(map(repr, allowed))}, got {value!r}.")
    return value


def _weighted_reads(flat: Tensor, terms, tail: tuple, dtype, fill=None) -> Tensor:
    """``Σ_k w_k · flat[i_k]`` for ``terms`` ``[(i_k, valid_k, w_k)]``: ``i_k`` integer positions into the
    first axis of ``flat`` (any shape ``S``), ``valid_k`` booleans (``None``: all valid; an invalid read is
    ``fill``), ``w_k`` a weight of shape ``S`` (``None``: 1; numpy or a tensor). The result is ``S + tail``."""
    out = None
    ones = (1,) * len(tail)
    for index, valid, weight in terms:
        read = take(flat, constant(np.asarray(index, dtype=np.int64)), axis=0)
        read = read if read.dtype == dtype else cast(read, dtype)
        if valid is not None and not valid.all():
            read = where(constant(valid.reshape(valid.shape + ones)), read,
                         constant(np.asarray(fill, dtype=dtype)))
        if weight is not None:
            w = weight if isinstance(weight, Tensor) else constant(np.asarray(weight, dtype=dtype))
            w = w if w.dtype == dtype else cast(w, dtype)
            read = read * reshape(w, w.shape + ones)
        out = read if out is None else out + read
    return out


# ----- map_coordinates ---------------------------------------------------------------------------------------
def _mirror(index, size):
    """``c d c b | a b c d | c b a b``: a triangular wave of half-period ``size − 1`` (JAX's index fixer)."""
    s = size - 1
    return np.zeros_like(index) if s == 0 else np.abs((index + s) % (2 * s) - s)


def _reflect(index, size):
    """``d c b a | a b c d | d c b a``: the mirror of the doubled grid, halved (JAX's index fixer)."""
    return (_mirror(2 * index + 1, 2 * size + 1) - 1) // 2


_FIXERS = {"constant": lambda i, n: i, "nearest": lambda i, n: np.clip(i, 0, n - 1),
           "wrap": lambda i, n: i % n, "mirror": _mirror, "reflect": _reflect}


def _axis_reads(values, coord, size, order, fill_mode, dtype):
    """One axis of ``map_coordinates``: ``[(index, valid, weight)]`` for its one (order 0) or two (order 1)
    neighbours; ``coord`` is the coordinate tensor (weights in it: ``fx = c − ⌊c⌋``) or None (numpy)."""
    if order == 0:
        nodes = [(np.round(values).astype(np.int64), None)]          # half to even, as tf.round
    else:
        low = np.floor(values)
        frac = coord - floor(coord) if coord is not None else (values - low).astype(dtype)
        nodes = [(low.astype(np.int64), 1 - frac), (low.astype(np.int64) + 1, frac)]
    out = []
    for index, weight in nodes:
        valid = ((index >= 0) & (index < size)) if fill_mode == "constant" else None
        fixed = np.clip(index, 0, size - 1) if fill_mode == "constant" else _FIXERS[fill_mode](index, size)
        out.append((fixed, valid, weight))
    return out


def _sample(x: Tensor, coords, order, fill_mode, fill_value, dtype) -> Tensor:
    """``x`` read at ``coords`` along its leading ``len(coords)`` axes (the rest are carried along): an
    entry of ``coords`` is an integer numpy array (an exact index) or float positions (numpy or a tensor)."""
    lead, tail = x.shape[:len(coords)], x.shape[len(coords):]
    flat = reshape(x, (int(np.prod(lead)),) + tail)
    per_axis = []
    for c, size in zip(coords, lead):
        if isinstance(c, np.ndarray) and c.dtype.kind in "iu":
            per_axis.append([(c, None, None)])
        else:
            per_axis.append(_axis_reads(_value(c), c if isinstance(c, Tensor) else None, size, order, fill_mode,
                                        dtype))
    shape = np.broadcast_shapes(*(np.shape(_value(c)) for c in coords))
    terms = []
    for combo in itertools.product(*per_axis):
        index = np.ravel_multi_index([np.broadcast_to(i, shape) for i, _, _ in combo], lead)
        valids = [np.broadcast_to(v, shape) for _, v, _ in combo if v is not None]
        weights = [w for _, _, w in combo if w is not None]
        weight = None
        for w in weights:
            weight = w if weight is None else weight * w
        if weight is not None and tuple(np.shape(_value(weight))) != shape:
            weight = weight * constant(np.ones(shape, dtype=dtype))
        terms.append((index, np.logical_and.reduce(valids) if valids else None, weight))
    return _weighted_reads(flat, terms, tail, dtype, fill_value)


def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0):
    """``keras.ops.image.map_coordinates``: ``inputs`` read at the positions ``coordinates`` — one array per
    axis of ``inputs``, stacked first (shape ``(inputs.ndim, *out)``) — by nearest neighbour (``order=0``,
    ties to even) or linear interpolation (``order=1``, ``2^rank`` neighbours). Out-of-range positions
    follow ``fill_mode`` (``constant`` reads ``fill_value``; ``mirror``/``reflect`` as Keras documents them,
    which Keras 3.15's TensorFlow backend departs from for negative positions).

    Differentiable in ``inputs`` (each read's ḡ, times its weight, added back) and, for ``order=1``, in
    ``coordinates`` (``∂out/∂c`` is the difference of the two neighbours along that axis), as TensorFlow's.
    The result has ``inputs``' dtype (integers rounded); the weights are in the coordinates' float dtype."""
    op = "map_coordinates"
    x = _tensor(inputs)
    if isinstance(coordinates, (list, tuple)) and any(isinstance(c, Tensor) for c in coordinates):
        coordinates = stack(list(coordinates))
    c = coordinates if isinstance(coordinates, Tensor) else np.asarray(coordinates)
    shape = tuple(c.shape)
    if len(shape) < 2 or shape[0] != x.ndim:
        raise ValueError(f"image.{op}: coordinates of shape {shape} must be (inputs.ndim, *output_shape) = "
                         f"({x.ndim}, ...) for inputs of shape {x.shape}: one array of positions per axis, "
                         "stacked first.")
    _choice(fill_mode, MAP_FILL_MODES, "fill_mode", op)
    if order not in (0, 1):
        raise ValueError(f"image.{op}: order must be 0 (nearest) or 1 (linear), got {order!r}.")
    cdtype = np.dtype(c.dtype)
    dtype = cdtype if cdtype.kind == "f" else (x.dtype if x.dtype.kind == "f" else np.dtype("float32"))
    if isinstance(c, Tensor) and cdtype.kind != "f":
        c = cast(c, dtype)
    coords = [c[d] for d in range(x.ndim)] if isinstance(c, Tensor) else [c[d].astype(dtype) for d in range(x.ndim)]
    out = _sample(x, coords, order, fill_mode, fill_value, dtype)
    if x.dtype.kind != "f":
        from . import round as _round
        out = _round(out)
    return out if out.dtype == x.dtype else cast(out, x.dtype)


# ----- projective transforms (TensorFlow's ImageProjectiveTransformV3) ----------------------------------------
def _fill_coordinate(c: np.ndarray, n: int, mode: str) -> np.ndarray:
    """A float position mapped into ``[0, n − 1]`` by ``mode``, as TensorFlow's ``MapCoordinate`` (float32)."""
    if mode == "constant":
        return c
    c = c.copy()
    if mode in ("reflect", "wrap") and n <= 1:
        c[(c < 0) | (c > n - 1)] = 0
    elif mode == "reflect":
        sz2 = np.float32(2 * n)
        neg, pos = c < 0, c > n - 1                 # one branch each, as the kernel's if / else if
        cn = sz2 * np.trunc(-c[neg] / sz2) + c[neg]
        c[neg] = np.where(cn < -n, cn + sz2, -cn - 1)
        cp = c[pos] - sz2 * np.trunc(c[pos] / sz2)
        c[pos] = np.where(cp >= n, sz2 - cp - 1, cp)
    elif mode == "wrap":
        sz = np.float32(n - 1)
        neg, pos = c < 0, c > n - 1
        c[neg] = c[neg] + n * (np.trunc(-c[neg] / sz) + 1)
        c[pos] = c[pos] - n * np.trunc(c[pos] / sz)
    return np.clip(c, 0, n - 1).astype(np.float32)


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def projective_transform(x: Tensor, transforms, interpolation, fill_mode, fill_value, op) -> Tensor:
    """TensorFlow's ``ImageProjectiveTransformV3`` on a channels-last batch ``x``: output pixel ``(y, x)`` reads
    the input at ``((a0·x + a1·y + a2)/k, (b0·x + b1·y + b2)/k)``, ``k = c0·x + c1·y + 1`` (one row
    ``[a0, a1, a2, b0, b1, b2, c0, c1]`` per image, or one for all), mapped in by ``fill_mode``; nearest
    rounds half away from zero, bilinear reads the four neighbours (each outside one is ``fill_value``), a
    pixel with ``k = 0`` is ``fill_value``. The transform is a constant (TensorFlow gives it no gradient)."""
    n, h, w, _ = x.shape
    t = np.asarray(_value(transforms), dtype=np.float32)
    if t.ndim not in (1, 2) or t.shape[-1] != 8 or (t.ndim == 2 and t.shape[0] not in (1, n)):
        raise ValueError(f"image.{op}: transform of shape {t.shape} must be 8 numbers [a0, a1, a2, b0, b1, b2, "
                         f"c0, c1], or one row of 8 per image ({n}, 8).")
    t = np.broadcast_to(t.reshape(-1, 8), (n, 8))[:, :, None, None]
    yy, xx = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    k = t[:, 6] * xx + t[:, 7] * yy + np.float32(1)
    degenerate = k == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        kx = np.where(degenerate, np.float32(1), k)
        in_x = _fill_coordinate(((t[:, 0] * xx + t[:, 1] * yy + t[:, 2]) / kx).astype(np.float32), w, fill_mode)
        in_y = _fill_coordinate(((t[:, 3] * xx + t[:, 4] * yy + t[:, 5]) / kx).astype(np.float32), h, fill_mode)
    batch = np.arange(n).reshape(n, 1, 1)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype("float32")
    if interpolation == "nearest":
        nodes = [(_round_half_away(in_y), _round_half_away(in_x), None)]
    else:
        yf, xf = np.floor(in_y), np.floor(in_x)
        yc, xc = yf + 1, xf + 1
        nodes = [(yf, xf, (xc - in_x) * (yc - in_y)), (yf, xc, (in_x - xf) * (yc - in_y)),
                 (yc, xf, (xc - in_x) * (in_y - yf)), (yc, xc, (in_x - xf) * (in_y - yf))]
    terms = []
    for yi, xi, weight in nodes:
        valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w) & ~degenerate
        index = (batch * h + np.clip(yi, 0, h - 1).astype(np.int64)) * w + np.clip(xi, 0, w - 1).astype(np.int64)
        terms.append((index, valid, None if weight is None else np.where(degenerate, 0, weight)))
    flat = reshape(x, (n * h * w, x.shape[-1]))
    out = _weighted_reads(flat, terms, (x.shape[-1],), dtype, fill_value)
    if degenerate.any():
        out = where(constant(degenerate[..., None]), constant(np.asarray(fill_value, dtype=dtype)), out)
    return out if out.dtype == x.dtype else cast(out, x.dtype)


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """``keras.ops.image.affine_transform``: each output pixel ``(x, y)`` takes the input's value at
    ``((a0·x + a1·y + a2)/k, (b0·x + b1·y + b2)/k)``, ``k = c0·x + c1·y + 1`` — the transform maps
    *output* points to *input* points (it is the inverse of the motion you see). ``transform`` is 8 numbers
    or one row of 8 per image; ``interpolation`` ``"bilinear"`` or ``"nearest"``; ``fill_mode``
    ``"constant"`` (``fill_value``), ``"nearest"``, ``"wrap"`` or ``"reflect"``. Keras' TensorFlow backend
    (``ImageProjectiveTransformV3``) values; the images' shape and dtype.

    The gradient with respect to the images is the exact adjoint of the sampling (ḡ of each output pixel,
    times the interpolation weights, back to the pixels it read). TensorFlow's registered gradient instead
    warps ḡ with the inverse transform — the same for a permutation of pixels (an integer shift, a flip, a
    quarter turn), an approximation otherwise (a zoom or a rotation). No gradient for the transform, as in
    Keras ("gradients are not backpropagated into transformation parameters")."""
    op = "affine_transform"
    _choice(interpolation, INTERPOLATIONS, "interpolation", op)
    _choice(fill_mode, FILL_MODES, "fill_mode", op)
    x, back = as_batch(images, data_format, op)
    return back(projective_transform(x, transform, interpolation, fill_mode, fill_value, op))


def homography(start_points, end_points) -> np.ndarray:
    """The 8 numbers ``[a0, a1, a2, b0, b1, b2, c0, c1]`` that send each of the four ``end_points`` (output
    pixels) to its ``start_points`` (input pixels): the 8 × 8 linear system Keras solves, one per image."""
    s, e = (np.asarray(p, dtype=np.float32) for p in (start_points, end_points))
    sx, sy, ex, ey = s[..., 0], s[..., 1], e[..., 0], e[..., 1]
    one, zero = np.ones_like(ex), np.zeros_like(ex)
    rows = []
    for i in range(4):
        rows.append(np.stack([ex[:, i], ey[:, i], one[:, i], zero[:, i], zero[:, i], zero[:, i],
                              -sx[:, i] * ex[:, i], -sx[:, i] * ey[:, i]], -1))
        rows.append(np.stack([zero[:, i], zero[:, i], zero[:, i], ex[:, i], ey[:, i], one[:, i],
                              -sy[:, i] * ex[:, i], -sy[:, i] * ey[:, i]], -1))
    a = np.stack(rows, axis=1)
    b = np.stack([s[:, i, j] for i in range(4) for j in range(2)], -1)[..., None]
    return np.linalg.solve(a, b)[..., 0].astype(np.float32)


def perspective_transform(images, start_points, end_points, interpolation="bilinear", fill_value=0,
                          data_format=None):
    """``keras.ops.image.perspective_transform``: the image warped so that the four ``start_points`` land on
    the four ``end_points`` (each ``(4, 2)`` as ``(x, y)``, or ``(N, 4, 2)``): the homography that sends the
    end points to the start points (:func:`homography`) applied as :func:`affine_transform` does, outside
    pixels ``fill_value``. Gradients as :func:`affine_transform`'s (none for the points, as in Keras)."""
    op = "perspective_transform"
    _choice(interpolation, INTERPOLATIONS, "interpolation", op)
    s, e = np.asarray(_value(start_points)), np.asarray(_value(end_points))
    if s.shape != e.shape or s.ndim not in (2, 3) or s.shape[-2:] != (4, 2):
        raise ValueError(f"image.{op}: start_points of shape {s.shape} and end_points of shape {e.shape} must "
                         "both be (4, 2) — four (x, y) points — or (N, 4, 2) for a batch.")
    x, back = as_batch(images, data_format, op)
    s, e = s.reshape(-1, 4, 2), e.reshape(-1, 4, 2)
    return back(projective_transform(x, homography(s, e), interpolation, "constant", fill_value, op))


# ----- elastic_transform -----------------------------------------------------------------------------------------
def _generator(seed):
    """Keras' numpy backend's generator: an int seed ``s`` is the seed pair ``[s, 0]``; None the session's."""
    if seed is None:
        from ...base.session import generator
        return generator()
    if not isinstance(seed, (int, np.integer)):
        raise ValueError(f"image.elastic_transform: seed must be an int or None, got {seed!r}.")
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, 0])


def elastic_transform(images, alpha=20.0, sigma=5.0, interpolation="bilinear", fill_mode="reflect",
                      fill_value=0.0, seed=None, data_format=None):
    """``keras.ops.image.elastic_transform``: every pixel moved by a smooth random field. Two fields of
    standard normal draws times ``sigma``, ``dx`` and ``dy`` ``(N, H, W)``, are blurred with a Gaussian of
    σ ``sigma`` (window ``int(6σ) | 1``, :func:`gaussian_blur`); output pixel ``(y, x)`` reads the input at
    ``(y + alpha·dy, x + alpha·dx)`` through :func:`map_coordinates` (``interpolation`` ``"bilinear"`` is
    order 1, ``"nearest"`` order 0) with ``fill_mode``.

    The draws are numpy's, drawn as Keras' numpy backend draws them (``default_rng([seed, 0])``, ``dx``
    first, then ``dy``): the same ``seed`` gives Keras' numpy-backend field, not TensorFlow's numbers (Keras'
    TensorFlow backend draws ``dx`` and ``dy`` with one seed, so its two fields are equal). Differentiable in
    the images (and in ``alpha`` when it is a tensor), as TensorFlow's; the images' shape and dtype."""
    op = "elastic_transform"
    _choice(interpolation, INTERPOLATIONS, "interpolation", op)
    _choice(fill_mode, FILL_MODES, "fill_mode", op)
    x, back = as_batch(images, data_format, op)
    n, h, w, _ = x.shape
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype("float32")
    s = float(_value(sigma))
    size = int(6 * s) | 1
    rng = _generator(seed)
    fields = [constant(rng.normal(size=(n, h, w)).astype(dtype)) for _ in range(2)]
    sig = sigma if isinstance(sigma, Tensor) else constant(np.asarray(s, dtype=dtype))
    dx, dy = (reshape(gaussian_blur(reshape(f * sig, (n, h, w, 1)), (size, size), (sig, sig)), (n, h, w))
              for f in fields)
    yy, xx = np.meshgrid(np.arange(h, dtype=dtype), np.arange(w, dtype=dtype), indexing="ij")
    a = alpha if isinstance(alpha, Tensor) else constant(np.asarray(alpha, dtype=dtype))
    coords = [np.broadcast_to(np.arange(n).reshape(n, 1, 1), (n, h, w)), constant(yy) + a * dy,
              constant(xx) + a * dx]
    out = _sample(cast(x, dtype), coords, INTERPOLATIONS.index(interpolation), fill_mode, fill_value, dtype)
    return back(out if out.dtype == x.dtype else cast(out, x.dtype))


# ----- scale_and_translate ---------------------------------------------------------------------------------------
def _triangle(x):
    return maximum(1 - abs(x), 0.0)


def _keys_cubic(x):
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return where(x >= 2.0, 0.0, out)


def _lanczos(radius):
    def kernel(x):
        y = radius * sin(np.pi * x) * sin(np.pi * x / radius)
        out = where(x > 1e-3, y / where(x != 0, np.pi ** 2 * x * x, 1.0), 1.0)
        return where(x > radius, 0.0, out)
    return kernel


_KERNELS = {"linear": _triangle, "bilinear": _triangle, "trilinear": _triangle, "triangle": _triangle,
            "cubic": _keys_cubic, "bicubic": _keys_cubic, "tricubic": _keys_cubic,
            "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0)}


def _weight_matrix(m: int, n: int, scale, translation, kernel, antialias: bool, dtype):
    """``(m, n)``: how much input position ``i`` contributes to output ``j``. Output ``j``'s centre sits at
    input ``s_j = (j + ½ − t)/scale − ½``; the weight is ``kernel(|s_j − i| / κ)`` with ``κ = max(1/scale, 1)``
    when antialiasing (a wider kernel when shrinking), each column normalised to sum 1 and 0 where ``s_j``
    lies outside ``[−½, m − ½]`` (JAX's ``scale_and_translate``). Tensors in ``scale`` and ``translation``."""
    inv = 1.0 / scale
    span = maximum(inv, 1.0) if antialias else 1.0
    sample = (constant(np.arange(n, dtype=dtype)) + 0.5) * inv - translation * inv - 0.5
    weights = kernel(abs(reshape(sample, (1, n)) - constant(np.arange(m, dtype=dtype).reshape(m, 1))) / span)
    total = sum(weights, axis=0, keepdims=True)
    weights = where(abs(total) > 1000.0 * float(np.finfo(np.float32).eps),
                    weights / where(total != 0, total, 1.0), 0.0)
    s = _value(sample)
    return where(constant(((s >= -0.5) & (s <= m - 0.5)).reshape(1, n)), weights, 0.0)


def scale_and_translate(images, output_shape, scale, translation, spatial_dims, method, antialias=True):
    """``keras.ops.image.scale_and_translate`` (JAX's ``jax.image.scale_and_translate``): a new array of
    ``output_shape`` whose axis ``spatial_dims[i]`` maps input position ``x`` (pixel centres at ``i + ½``) to
    ``x·scale[i] + translation[i]``. Each axis is one product with a ``(m, n)`` weight matrix
    (:func:`_weight_matrix`; ``method`` ``"linear"``/``"bilinear"``/``"trilinear"``/``"triangle"``, Keys
    ``"cubic"``/``"bicubic"``/``"tricubic"``, ``"lanczos3"``, ``"lanczos5"``), so ḡ goes back through the
    transposed matrix, and ``scale`` and ``translation`` are differentiated through the weights, as
    TensorFlow does. Outputs that map outside the input are 0. Integer images are rounded and clipped."""
    op = "scale_and_translate"
    if method not in _KERNELS:
        raise ValueError(f"image.{op}: method must be one of {', '.join(map(repr, _KERNELS))}, got {method!r}.")
    x = _tensor(images)
    dims = [int(d) % x.ndim for d in spatial_dims]
    if len(output_shape) != x.ndim:
        raise ValueError(f"image.{op}: output_shape {tuple(output_shape)} must have one entry per axis of the "
                         f"images of shape {x.shape}.")

    def as_tensor(v):
        if isinstance(v, Tensor):
            return v
        v = np.asarray(v)
        return constant(v if v.dtype.kind == "f" else v.astype(np.float32))
    s, t = as_tensor(scale), as_tensor(translation)
    wdtype = np.result_type(s.dtype, t.dtype)
    s, t = cast(s, wdtype), cast(t, wdtype)
    if s.shape != (len(dims),) or t.shape != (len(dims),):
        raise ValueError(f"image.{op}: scale of shape {s.shape} and translation of shape {t.shape} must have one "
                         f"entry per spatial dim ({len(dims)}: {tuple(spatial_dims)}).")
    out = x if x.dtype.kind == "f" else cast(x, "float32")
    for i, d in enumerate(dims):
        w = _weight_matrix(x.shape[d], int(output_shape[d]), s[i], t[i], _KERNELS[method], antialias, wdtype)
        out = _moveaxis(tensordot(out, cast(w, out.dtype), axes=([d], [0])), -1, d)
    if x.dtype.kind != "f":
        from . import clip
        from . import round as _round
        v = _value(x)
        out = cast(clip(_round(out), v.min(), v.max()), x.dtype)
    return out


# ----- tf.image.crop_and_resize -----------------------------------------------------------------------------
def _box_axis(low, high, size: int, crop: int):
    """The sample positions along one axis, ``(boxes, crop)``: ``low·(size−1) + i·(high−low)(size−1)/(crop−1)``,
    or the box's centre for ``crop = 1`` (TensorFlow's ``CropAndResize``); a tensor in the box edges."""
    if crop > 1:
        step = (high - low) * float(size - 1) / float(crop - 1)
        return reshape(low * float(size - 1), (-1, 1)) + constant(np.arange(crop, dtype=np.float32)) * \
            reshape(step, (-1, 1))
    return reshape(0.5 * (low + high) * float(size - 1), (-1, 1))


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear", extrapolation_value=0.0, name=None):
    """``tf.image.crop_and_resize``: for each box ``[y1, x1, y2, x2]`` (normalised: 0 and 1 are the first and
    last pixel centres) of image ``box_indices[b]``, a ``crop_height × crop_width`` grid of samples spanning
    the box, read bilinearly (or by the nearest pixel); a sample outside the image is
    ``extrapolation_value``. Output ``(boxes, crop_height, crop_width, channels)``, float32.

    Differentiable in the image (each sample's ḡ back to its 2 × 2 neighbours with the bilinear weights)
    and, for ``"bilinear"``, in the boxes: the weights ``y − ⌊y⌋`` are tensors in the box edges, so
    ``∂out/∂y1`` is the vertical slope of the image at the sample times ``(size − 1)(1 − i/(crop − 1))``, as
    TensorFlow's ``CropAndResizeGradBoxes``. For ``"nearest"`` the boxes get no gradient here (the nearest
    pixel does not move under a small change of the box); TensorFlow substitutes the bilinear one."""
    op = "crop_and_resize"
    _choice(method, ("bilinear", "nearest"), "method", op)
    x = _tensor(image)
    if x.ndim != 4:
        raise ValueError(f"image.{op}: image of shape {x.shape} must be 4-D (batch, height, width, channels).")
    x = x if x.dtype == np.float32 else cast(x, "float32")
    b = boxes if isinstance(boxes, Tensor) else constant(np.asarray(boxes, dtype=np.float32))
    b = b if b.dtype == np.float32 else cast(b, "float32")
    ind = np.asarray(_value(box_indices)).astype(np.int64)
    ch, cw = (int(v) for v in np.asarray(_value(crop_size)).ravel())
    n, h, w, c = x.shape
    if b.ndim != 2 or b.shape[1] != 4 or ind.shape != (b.shape[0],):
        raise ValueError(f"image.{op}: boxes of shape {b.shape} must be (num_boxes, 4) [y1, x1, y2, x2] and "
                         f"box_indices of shape {ind.shape} must be (num_boxes,).")
    if ind.size and (ind.min() < 0 or ind.max() >= n):
        raise ValueError(f"image.{op}: box_indices {ind.tolist()} must lie in [0, {n}) for a batch of {n} images.")
    if ch < 1 or cw < 1:
        raise ValueError(f"image.{op}: crop_size {(ch, cw)} must be two positive ints (height, width).")
    in_y, in_x = _box_axis(b[:, 0], b[:, 2], h, ch), _box_axis(b[:, 1], b[:, 3], w, cw)
    vy, vx = _value(in_y), _value(in_x)
    valid = ((vy >= 0) & (vy <= h - 1))[:, :, None] & ((vx >= 0) & (vx <= w - 1))[:, None, :]
    flat = reshape(x, (n * h * w, c))
    base = ind.reshape(-1, 1, 1) * h

    def read(rows, cols):
        rows = np.clip(rows, 0, h - 1).astype(np.int64)[:, :, None]
        cols = np.clip(cols, 0, w - 1).astype(np.int64)[:, None, :]
        return take(flat, constant((base + rows) * w + cols), axis=0)
    if method == "nearest":
        out = read(np.floor(vy + 0.5), np.floor(vx + 0.5))
    else:
        top, left = np.floor(vy), np.floor(vx)
        ly = reshape(in_y - floor(in_y), (-1, ch, 1, 1))
        lx = reshape(in_x - floor(in_x), (-1, 1, cw, 1))
        upper = read(top, left) + (read(top, np.ceil(vx)) - read(top, left)) * lx
        lower = read(np.ceil(vy), left) + (read(np.ceil(vy), np.ceil(vx)) - read(np.ceil(vy), left)) * lx
        out = upper + (lower - upper) * ly
    if not valid.all():
        out = where(constant(valid[..., None]), out, constant(np.asarray(extrapolation_value, dtype=np.float32)))
    return out
