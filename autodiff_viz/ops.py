"""``adv.ops``: Keras 3's ``keras.ops`` namespace, so code written as ``keras.ops.sum(x)`` or
``ops.softmax(logits)`` runs with ``keras`` → ``adv`` and nothing else changed.

    >>> from autodiff_viz import ops
    >>> ops.sum(ops.square(x), axis=-1)              # keras.ops.sum, keras.ops.square
    >>> ops.softmax(logits), ops.relu(z)              # keras.ops' activations (also in adv.nn)
    >>> ops.convert_to_tensor([1.0, 2.0]), ops.identity(3)   # Keras' meaning: identity(3) is the 3×3 matrix

Like ``keras.ops`` this is a namespace: it gathers functions that live where their meaning is — the
numpy-named ops of :mod:`autodiff_viz.core.ops` (which Keras 3 names and means as numpy does, so they are
the same functions as ``adv.sum``, ``adv.split`` …), the activations and cross-entropies of
:mod:`autodiff_viz.core.nn`, and ``norm`` of :mod:`autodiff_viz.core.linalg` — and adds the few whose
Keras meaning is not numpy's or not defined elsewhere: ``gelu`` (Keras' default is the tanh
approximation; ``adv.nn.gelu`` is TensorFlow's exact one), ``identity`` (numpy's identity matrix, as
``keras.ops.identity``; ``adv.identity`` is TensorFlow's copy), ``convert_to_tensor``,
``convert_to_numpy``, ``rsqrt``, ``moments``, ``size``, ``ndim``, ``conv`` / ``max_pool`` /
``average_pool`` (the rules of the Conv and Pooling layers) and the three cross-entropies with
``keras.ops``' arguments ``(target, output, from_logits=False, axis=-1)``.

Keras' window ops that are not layers — ``adaptive_average_pool`` / ``adaptive_max_pool``, ``unfold`` /
``fold`` — come from :mod:`autodiff_viz.core.ops.windows` (the pool, conv and conv_transpose rules) and
``rearrange`` from :mod:`autodiff_viz.core.ops.einops`; ``eig`` gives Keras' complex results as constants
(refused while a tape tracks the input) and ``lu_factor``'s gradient raises LookupError, as TensorFlow's.
Keras' sub-namespaces are here too: ``adv.ops.nn``, ``adv.ops.linalg`` and ``adv.ops.numpy`` hold the same
functions (``adv.ops.nn.relu is adv.ops.relu``), ``adv.ops.image`` Keras' sixteen image ops: the
colour conversions, ``sobel_edges``, ``resize``, ``extract_patches`` (2-D and 3-D) and ``ssim`` here, the
filters, crops and pads of :mod:`autodiff_viz.core.ops.filters` and the sampling ops (``map_coordinates``,
``affine_transform``, ``perspective_transform``, ``elastic_transform``, ``scale_and_translate``) of
:mod:`autodiff_viz.core.ops.geometry`, each built on gathers and convolutions so its gradient is the rule
table's.

Every name here is a ``keras.ops`` name with its Keras arguments (``tests/test_keras_ops.py`` compares
each one with Keras itself). ``__all__`` lists them; a ``keras.ops`` name that is out of scope (``fft``,
``bitwise_and``, ``ctc_loss`` …) raises an AttributeError with the reason and what to write instead.
"""
from __future__ import annotations

import sys
import types

import numpy as np

from . import image as _image
from .core import linalg as _linalg
from .core.linalg import cholesky, det, eigh, inv, logdet, matrix_rank, norm, pinv, qr, slogdet, solve, svd
from .core.linalg import lstsq as _lstsq
from .core.linalg import lu as _lu
from .core.linalg import triangular_solve as _triangular_solve
from .core.nn import avg_pool as _avg_pool
from .core.nn import conv_transpose as _conv_transpose
from .core.nn import convolution as _convolution
from .core.nn import depthwise_conv2d as _depthwise_conv2d
from .core.nn import (
    elu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    softsign,
    swish,
)
from .core.nn import gelu as _gelu
from .core.nn import max_pool as _max_pool
from .core.ops import (
    abs,
    absolute,
    add,
    all,
    amax,
    amin,
    any,
    append,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    argmax,
    argmin,
    argsort,
    array_split,
    broadcast_to,
    cast,
    cbrt,
    ceil,
    clip,
    concatenate,
    cos,
    cosh,
    cross,
    cumprod,
    cumsum,
    deg2rad,
    diag,
    diagonal,
    diff,
    divide,
    dot,
    dsplit,
    dstack,
    einsum,
    equal,
    erf,
    erfc,
    erfinv,
    exp,
    exp2,
    expand_dims,
    expm1,
    eye,
    flip,
    fliplr,
    flipud,
    floor,
    floor_divide,
    fmax,
    fmin,
    full,
    greater,
    greater_equal,
    hsplit,
    hstack,
    hypot,
    inner,
    kron,
    less,
    less_equal,
    linspace,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logsumexp,
    matmul,
    max,
    maximum,
    mean,
    meshgrid,
    min,
    minimum,
    mod,
    moveaxis,
    multiply,
    nan_to_num,
    negative,
    not_equal,
    one_hot,
    ones,
    ones_like,
    outer,
    pad,
    power,
    prod,
    rad2deg,
    ravel,
    reciprocal,
    repeat,
    reshape,
    roll,
    rot90,
    round,
    saturate_cast,
    searchsorted,
    select,
    shape,
    sign,
    sin,
    sinc,
    sinh,
    sort,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    std,
    stop_gradient,
    subtract,
    sum,
    swapaxes,
    take,
    tan,
    tanh,
    tensordot,
    tile,
    trace,
    transpose,
    tril,
    triu,
    true_divide,
    trunc,
    unstack,
    var,
    vdot,
    vsplit,
    vstack,
    where,
    zeros,
    zeros_like,
)
from .core.ops import bessel_i0 as i0
from .core.ops import take_along_axis as _take_along_axis
from .core.ops.einops import rearrange
from .core.ops.filters import crop_images, gaussian_blur, pad_images, ssim  # noqa: F401  (into adv.ops.image)
from .core.ops.filters import image_format as _image_format
from .core.ops.geometry import (  # noqa: F401  (gathered into adv.ops.image by _namespace below)
    affine_transform,
    elastic_transform,
    map_coordinates,
    perspective_transform,
    scale_and_translate,
)
from .core.ops.keras_names import (  # noqa: A004  (Keras' names: slice, map)
    _peek,
    _t,
    allclose,
    angle,
    arange,
    argpartition,
    array,
    associative_scan,
    average,
    bartlett,
    bincount,
    blackman,
    conj,
    conjugate,
    copy,
    corrcoef,
    correlate,
    count_nonzero,
    diagflat,
    digitize,
    divide_no_nan,
    dtype,
    empty,
    empty_like,
    extract_sequences,
    fabs,
    fmod,
    fori_loop,
    full_like,
    gcd,
    geomspace,
    get_item,
    hamming,
    hanning,
    heaviside,
    histogram,
    imag,
    in_top_k,
    is_tensor,
    isclose,
    isfinite,
    isin,
    isinf,
    isnan,
    isneginf,
    isposinf,
    isreal,
    kaiser,
    lcm,
    ldexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logspace,
    map,
    median,
    multi_hot,
    nanargmax,
    nanargmin,
    nancumprod,
    nancumsum,
    nanmax,
    nanmean,
    nanmedian,
    nanmin,
    nanpercentile,
    nanprod,
    nanquantile,
    nanstd,
    nansum,
    nanvar,
    nextafter,
    nonzero,
    percentile,
    ptp,
    quantile,
    real,
    scan,
    scatter,
    scatter_update,
    segment_max,
    segment_min,
    segment_prod,
    segment_sum,
    signbit,
    slice,
    slice_update,
    switch,
    top_k,
    trapezoid,
    tri,
    unique,
    unravel_index,
    vander,
)
from .core.ops.tf_control import cond, vectorized_map, while_loop
from .core.ops.windows import adaptive_average_pool, adaptive_max_pool, fold, unfold
from .core.ops.windows import extract_patches as _extract_patches
from .core.ops.windows import per_axis as _per_axis
from .core.tensor import Tensor, constant
from .losses import EPSILON as _EPSILON
from .losses import categorical_crossentropy as _categorical_crossentropy
from .losses import sparse_categorical_crossentropy as _sparse_categorical_crossentropy
from .records.transforms import custom_gradient
from .records.transforms import jvp as _jvp


def gelu(x, approximate=True):
    """``keras.ops.gelu``: Keras' default is the tanh approximation,
    ``½x(1 + tanh(√(2/π)(x + 0.044715x³)))``; ``approximate=False`` is the exact ``x·Φ(x)``.
    (``tf.nn.gelu`` and ``adv.nn.gelu`` default to the exact form: the two differ by up to ~5e-4.)"""
    return _gelu(x, approximate=approximate)


def identity(n, dtype=None):
    """``keras.ops.identity(n)``: the ``n × n`` identity matrix (numpy's ``np.identity``), float32 by default.

    Not ``tf.identity``: that copy of a tensor is ``adv.identity(x)`` at the top level."""
    return eye(n, dtype=dtype)


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """``keras.ops.convert_to_tensor``: a tensor holding ``x`` (a tensor stays itself when no dtype is asked)."""
    if sparse or ragged:
        raise ValueError("convert_to_tensor: sparse and ragged tensors do not exist here; pass a dense array.")
    if isinstance(x, Tensor) and (dtype is None or np.dtype(dtype) == x.dtype):
        return x
    return cast(x, dtype) if isinstance(x, Tensor) else constant(x, dtype=dtype)


def convert_to_numpy(x):
    """``keras.ops.convert_to_numpy``: the value as a numpy array (it leaves the tape)."""
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def rsqrt(x):
    """``1 / √x`` (``keras.ops.rsqrt``); its slope is ``−½·x^(−3/2)``."""
    return reciprocal(sqrt(x))


def moments(x, axes, keepdims=False, synchronized=False):
    """``keras.ops.moments``: ``(mean, variance)`` over ``axes``, the variance with ``1/n`` (no Bessel
    correction), as BatchNormalization uses them. ``synchronized`` (across devices) changes nothing here."""
    m = mean(x, axis=axes, keepdims=True)
    v = mean(square(x - m), axis=axes, keepdims=keepdims)
    return (m if keepdims else squeeze(m, axis=axes)), v


def size(x):
    """``keras.ops.size``: the number of entries, as a tensor (int32, as Keras)."""
    return constant(np.asarray(x).size if not isinstance(x, Tensor) else x.size, dtype="int32")


def ndim(x):
    """``keras.ops.ndim``: the number of axes, as a tensor (int32, as Keras)."""
    return constant(np.ndim(x) if not isinstance(x, Tensor) else x.ndim, dtype="int32")


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """``keras.ops.categorical_crossentropy``: ``−Σ target·log(output)`` over ``axis``, one value per example
    (``output`` probabilities, or logits with ``from_logits=True``)."""
    return _categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """``keras.ops.sparse_categorical_crossentropy``: ``−log output[target]`` per example (integer targets)."""
    return _sparse_categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def binary_crossentropy(target, output, from_logits=False):
    """``keras.ops.binary_crossentropy``: ``−(t·log p + (1−t)·log(1−p))`` entry by entry (no mean: that is
    ``adv.losses.binary_crossentropy``). Probabilities are clipped to ``[ε, 1−ε]`` with Keras' ε = 1e-7."""
    output = constant(output) if not isinstance(output, Tensor) else output
    target = cast(target, output.dtype)
    if from_logits:                                     # log σ(z) = −softplus(−z), log(1 − σ(z)) = −softplus(z)
        return target * softplus(-output) + (1 - target) * softplus(output)
    p = clip(output, _EPSILON, 1 - _EPSILON)
    return -(target * log(p) + (1 - target) * log(1 - p))


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """``keras.ops.conv``: a 1-D or 2-D convolution (a correlation), channels last, ``kernel`` in Keras'
    Conv layout ``(*window, in, out)``; ``padding`` is ``"valid"`` or ``"same"``. The ``conv`` rule of the
    Conv layers (``adv.nn.convolution`` in TensorFlow's spelling)."""
    return _convolution(inputs, kernel, strides, padding, _channels_last(data_format, "conv"), dilation_rate)


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """``keras.ops.depthwise_conv``: each input channel ``c`` convolved with its own ``kernel[..., c, :]``
    (``kernel`` is ``(*window, in_channels, multiplier)``; output channel ``c·M + m``), 1-D or 2-D, channels
    last. The ``conv`` rule with one group per channel, as the DepthwiseConv layers."""
    _channels_last(data_format, "depthwise_conv")
    x, w = convert_to_tensor(inputs), convert_to_tensor(kernel)
    if x.ndim == 3:          # 1-D: a 2-D depthwise convolution over a height of 1
        s, d = (_per_axis(v, 1, what, "depthwise_conv")[0] for v, what in ((strides, "strides"),
                                                                             (dilation_rate, "dilation_rate")))
        return squeeze(_depthwise_conv2d(expand_dims(x, 1), expand_dims(w, 0), (1, s),
                                         _padding(padding, "depthwise_conv"), dilations=(1, d)), 1)
    return _depthwise_conv2d(x, w, strides, _padding(padding, "depthwise_conv"), dilations=dilation_rate)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """``keras.ops.separable_conv``: :func:`depthwise_conv`, then a 1 × 1 convolution with ``pointwise_kernel``
    (``(*ones, in_channels · multiplier, filters)``) that mixes the channels."""
    y = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(y, pointwise_kernel, 1, "valid")


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1):
    """``keras.ops.conv_transpose``: the transposed convolution, the gradient of ``conv`` with respect to its
    input, with ``kernel`` in the Conv*Transpose layout ``(*window, filters, in_channels)``. Each spatial
    length is Keras': ``in·s + max(k − s, 0)`` ("valid") or ``in·s`` ("same"), or with ``output_padding``
    ``(in − 1)·s + k − 2·pad + output_padding`` (``k`` the dilated window, ``pad`` 0 or ``k // 2``)."""
    _channels_last(data_format, "conv_transpose")
    x, w = convert_to_tensor(inputs), convert_to_tensor(kernel)
    rank = x.ndim - 2
    if rank not in (1, 2, 3) or w.ndim != rank + 2:
        raise ValueError(f"conv_transpose: inputs of shape {x.shape} and kernel of shape {w.shape} must be "
                         "(batch, *spatial, channels) and (*window, filters, channels) with 1 to 3 spatial axes.")
    mode = _padding(padding, "conv_transpose")
    per = [_per_axis(v, rank, what, "conv_transpose") for v, what in ((strides, "strides"),
                                                                     (dilation_rate, "dilation_rate"))]
    pads = [None] * rank if output_padding is None else \
        _per_axis(output_padding, rank, "output_padding", "conv_transpose", low=0)
    spatial = []
    for n, k, s, d, extra in zip(x.shape[1:-1], w.shape[:rank], per[0], per[1], pads):
        k = k + (k - 1) * (d - 1)
        if extra is None:
            spatial.append(n * s + (k - s if k > s else 0) if mode == "VALID" else n * s)
        else:
            spatial.append((n - 1) * s + k - 2 * (0 if mode == "VALID" else k // 2) + extra)
    return _conv_transpose(x, w, (x.shape[0], *spatial, w.shape[-2]), per[0], mode, dilations=per[1])


def _padding(padding, op) -> str:
    if str(padding).lower() not in ("valid", "same"):
        raise ValueError(f"{op}: padding must be 'valid' or 'same', got {padding!r}.")
    return str(padding).upper()


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """``keras.ops.max_pool``: each window's maximum; ``strides`` defaults to ``pool_size``."""
    return _max_pool(inputs, pool_size, strides, padding, _channels_last(data_format, "max_pool"))


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """``keras.ops.average_pool``: each window's mean (padding not counted); ``strides`` defaults to
    ``pool_size``."""
    return _avg_pool(inputs, pool_size, strides, padding, _channels_last(data_format, "average_pool"))


def _channels_last(data_format, op):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{op}: data_format={data_format!r} is not supported; inputs are channels last "
                         "(batch, *spatial, channels). Move the channels with adv.moveaxis(x, 1, -1).")
    return None



# ----- linear algebra (keras.ops.linalg), numpy's meanings ----------------------------------------------
def lstsq(a, b, rcond=None):
    """``keras.ops.lstsq``: the least-squares solution ``x`` of ``a @ x ≈ b`` (only ``x``: numpy's
    ``lstsq`` also returns the residuals, the rank and the singular values, ``adv.linalg.lstsq``)."""
    return _lstsq(a, b, rcond=rcond)[0]


def cholesky_inverse(x, upper=False):
    """``keras.ops.cholesky_inverse``: ``A⁻¹`` from ``A``'s Cholesky factor ``x`` (``A = x·xᵀ``, or ``xᵀ·x``
    with ``upper=True``). Only that triangle of ``x`` is read (the other gets no gradient), as Keras'."""
    x = triu(_t(x)) if upper else tril(_t(x))
    xt = swapaxes(x, -1, -2)
    return inv(matmul(xt, x) if upper else matmul(x, xt))


def cdist(x, y):
    """``keras.ops.cdist``: the Euclidean distances between the rows of ``x`` and the rows of ``y``."""
    d = expand_dims(_t(x), -2) - expand_dims(_t(y), -3)
    return sqrt(sum(square(d), axis=-1))


def psnr(x1, x2, max_val):
    """``keras.ops.psnr``: ``20·log10(max_val) − 10·log10(mse)``, the mse over every entry (one number)."""
    a, b = _t(x1), _t(x2)
    mse = mean(square(a - b))
    return 20.0 * np.log10(float(max_val)) - (10.0 / np.log(10.0)) * log(mse)


def depth_to_space(x, block_size, data_format="channels_last"):
    """``keras.ops.depth_to_space``: channels moved into ``block_size × block_size`` spatial blocks,
    ``(b, h, w, c·s²) → (b, h·s, w·s, c)`` in TensorFlow's order (a reshape: ḡ goes back unchanged)."""
    t = _t(x) if data_format == "channels_last" else moveaxis(_t(x), 1, -1)
    b, h, w, c = t.shape
    s = int(block_size)
    if c % (s * s):
        raise ValueError(f"depth_to_space: {c} channels are not divisible by block_size² = {s * s}.")
    out = reshape(transpose(reshape(t, (b, h, w, s, s, c // (s * s))), (0, 1, 3, 2, 4, 5)),
                  (b, h * s, w * s, c // (s * s)))
    return out if data_format == "channels_last" else moveaxis(out, -1, 1)


def space_to_depth(x, block_size, data_format="channels_last"):
    """``keras.ops.space_to_depth``: the inverse of :func:`depth_to_space`, ``(b, h·s, w·s, c) → (b, h, w,
    c·s²)``."""
    t = _t(x) if data_format == "channels_last" else moveaxis(_t(x), 1, -1)
    b, h, w, c = t.shape
    s = int(block_size)
    if h % s or w % s:
        raise ValueError(f"space_to_depth: height {h} and width {w} must be divisible by block_size {s}.")
    blocks = transpose(reshape(t, (b, h // s, s, w // s, s, c)), (0, 1, 3, 2, 4, 5))
    out = reshape(blocks, (b, h // s, w // s, c * s * s))
    return out if data_format == "channels_last" else moveaxis(out, -1, 1)


def jvp(fun, primals, tangents, has_aux=False):
    """``keras.ops.jvp``: ``(fun(*primals), J·tangents)``, the forward-mode product (``adv.jvp``); with
    ``has_aux`` ``fun`` returns ``(output, aux)`` and the result is ``(output, J·tangents, aux)``."""
    if not has_aux:
        return _jvp(fun, primals, tangents)
    aux = []

    def main(*args):
        out, extra = fun(*args)
        aux.append(extra)
        return out
    out, tangent = _jvp(main, primals, tangents)
    return out, tangent, aux[-1]


def vectorize(pyfunc, *, excluded=None, signature=None):
    """``keras.ops.vectorize`` for element-wise functions: ``pyfunc`` applied to each entry (broadcast over
    the arguments), the results stacked back into the broadcast shape — recorded call by call, so the
    gradient flows. A ``signature`` (core dimensions) is not supported: map over the axis with ``ops.map``."""
    if signature is not None:
        raise ValueError("vectorize: signature= (core dimensions) is not supported here; use adv.ops.map(f, xs) "
                         "over the leading axis, or write f with array ops.")
    excluded = set(excluded or ())

    def call(*args):
        mapped = [i for i in range(len(args)) if i not in excluded]
        tensors = [_t(args[i]) for i in mapped]
        shape_ = np.broadcast_shapes(*[t.shape for t in tensors]) if tensors else ()
        flat = [reshape(broadcast_to(t, shape_), (-1,)) for t in tensors]
        n = int(np.prod(shape_)) if shape_ else 1
        outs = []
        for k in range(n):
            full_args = list(args)
            for i, f in zip(mapped, flat):
                full_args[i] = f[k]
            outs.append(_t(pyfunc(*full_args)))
        return reshape(stack(outs), shape_)
    return call


def view(x, dtype=None):
    """``keras.ops.view``: the same bytes read as ``dtype`` (a bit reinterpretation: a constant, no gradient)."""
    v = np.ascontiguousarray(_peek(x))
    return constant(v if dtype is None else v.view(np.dtype(dtype)))


def solve_triangular(a, b, lower=False):
    """``keras.ops.solve_triangular``: ``x`` with ``a @ x = b`` for a triangular ``a`` (upper by default)."""
    b = _t(b)
    col = b.ndim == _t(a).ndim - 1
    x = _triangular_solve(a, expand_dims(b, -1) if col else b, lower=lower)
    return squeeze(x, -1) if col else x


def eig(x):
    """``keras.ops.eig``: the eigenvalues and eigenvectors of a square matrix, as complex tensors (complex64 for
    float32, complex128 for float64), so ``x @ v[:, k] = w[k] · v[:, k]``.

    A general real matrix has complex eigenpairs, and complex numbers are not differentiated here: the result
    is a constant (numpy's LAPACK order of the eigenvalues, each eigenvector of unit length up to a complex
    phase — TensorFlow may order or rotate them otherwise), and while a tape tracks ``x`` it raises a TypeError
    naming the dtype and the fix (``eigh`` for a symmetric matrix, which has a gradient)."""
    a = _t(x)
    w, v = _linalg._complex_only("eig", a, face="ops")
    dtype = np.complex64 if a.dtype in (np.float16, np.float32, np.complex64) else np.complex128
    return constant(np.asarray(w, dtype=dtype)), constant(np.asarray(v, dtype=dtype))


def lu_factor(x):
    """``keras.ops.lu_factor``: ``(lu, pivots)`` of ``A = P·L·U`` by partial pivoting — ``lu`` packs ``L``
    below the diagonal (its unit diagonal implied) and ``U`` on and above it; row ``i`` of ``L·U`` is row
    ``pivots[i]`` of ``A`` (int32, Keras' TensorFlow convention).

    No gradient, as in TensorFlow (its ``Lu`` kernel has none): a gradient through ``lu`` raises
    ``LookupError`` naming the op. To differentiate a function of ``A``, write it with ``solve``, ``inv``,
    ``det`` or ``slogdet``, which have gradients."""
    a = _t(x)
    pivots = constant(np.argsort(_lu(a).p.numpy(), axis=-1).astype(np.int32))
    return _lu_packed(a), pivots


def _lu_has_no_gradient(dy):
    raise LookupError("gradient registry has no entry for: Lu (adv.ops.lu_factor has no gradient, as in "
                      "TensorFlow, whose Lu kernel registers none). To differentiate a function of the matrix, "
                      "write it with adv.ops.solve(a, b), adv.ops.inv(a), adv.ops.det(a) or adv.ops.slogdet(a), "
                      "which have gradients.")


def _lu_packed(a):
    """The packed factors of :func:`lu_factor` as one op of the graph, whose gradient raises."""
    return _lu(a).lu, _lu_has_no_gradient


_lu_packed.__name__ = "lu_factor"
_lu_packed = custom_gradient(_lu_packed)


# ----- activations and normalisations (keras.ops.nn) -----------------------------------------------------
def celu(x, alpha=1.0):
    """``keras.ops.celu``: ``max(0, x) + min(0, α(exp(x/α) − 1))``."""
    x = _t(x)
    return maximum(x, 0.0) + minimum(alpha * (exp(x / alpha) - 1.0), 0.0)


def glu(x, axis=-1):
    """``keras.ops.glu``: split ``x`` in two halves ``a, b`` along ``axis``: ``a · σ(b)``."""
    a, b = split(_t(x), 2, axis=axis)
    return a * sigmoid(b)


def hard_tanh(x):
    """``keras.ops.hard_tanh``: ``clip(x, −1, 1)``."""
    return clip(x, -1.0, 1.0)


def hard_shrink(x, threshold=0.5):
    """``keras.ops.hard_shrink``: ``x`` where ``|x| > threshold``, else 0."""
    x = _t(x)
    return where(abs(x) > threshold, x, zeros_like(x))


def soft_shrink(x, threshold=0.5):
    """``keras.ops.soft_shrink``: ``x − threshold`` above it, ``x + threshold`` below ``−threshold``, else 0."""
    x = _t(x)
    return where(x > threshold, x - threshold, where(x < -threshold, x + threshold, zeros_like(x)))


def tanh_shrink(x):
    """``keras.ops.tanh_shrink``: ``x − tanh(x)``."""
    return x - tanh(x)


def squareplus(x, b=4):
    """``keras.ops.squareplus``: ``(x + √(x² + b)) / 2``, a smooth ReLU."""
    x = _t(x)
    return (x + sqrt(square(x) + b)) / 2.0


def sparse_plus(x):
    """``keras.ops.sparse_plus``: 0 for ``x ≤ −1``, ``(x + 1)²/4`` for ``|x| < 1``, ``x`` for ``x ≥ 1``."""
    x = _t(x)
    return where(x <= -1.0, zeros_like(x), where(x >= 1.0, x, square(x + 1.0) / 4.0))


def sparse_sigmoid(x):
    """``keras.ops.sparse_sigmoid``: 0 for ``x ≤ −1``, ``(x + 1)/2`` between, 1 for ``x ≥ 1``."""
    return clip((_t(x) + 1.0) / 2.0, 0.0, 1.0)


def threshold(x, threshold, default_value):
    """``keras.ops.threshold``: ``x`` where ``x > threshold``, else ``default_value``."""
    x = _t(x)
    return where(x > threshold, x, cast(constant(default_value), x.dtype) * ones_like(x))


def sparsemax(x, axis=-1):
    """``keras.ops.sparsemax``: the Euclidean projection of ``x`` onto the probability simplex along ``axis``:
    ``max(x − τ, 0)`` with τ chosen so the entries sum to 1 (sparse probabilities). τ is found from the sorted
    entries and then held fixed, so ḡ is the projection's own Jacobian on the support. (Keras 3.15's
    TensorFlow backend sums the running sums over the support where it needs the last one, so its outputs
    do not sum to 1 when the support has more than one entry: this one follows the definition.)"""
    x = _t(x)
    z = moveaxis(x, axis, -1)
    v = _peek(z)
    s = -np.sort(-v, axis=-1)
    k = np.arange(1, v.shape[-1] + 1, dtype=v.dtype)
    cs = np.cumsum(s, axis=-1)
    support = (1 + k * s) > cs
    k_z = support.sum(axis=-1, keepdims=True)
    mask = constant((v >= np.take_along_axis(s, k_z - 1, axis=-1)).astype(v.dtype))
    tau = (sum(z * mask, axis=-1, keepdims=True) - 1.0) / constant(k_z.astype(v.dtype))
    return moveaxis(maximum(z - tau, 0.0), -1, axis)


def normalize(x, axis=-1, order=2, epsilon=None):
    """``keras.ops.normalize``: ``x / max(‖x‖, ε)`` along ``axis`` (order 2 or 1)."""
    x = _t(x)
    n = norm(x, ord=order, axis=axis, keepdims=True)
    eps = 1e-12 if epsilon is None else epsilon
    return x / maximum(n, eps)


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """``keras.ops.layer_normalization``: ``(x − mean) / √(var + ε) · γ + β`` over ``axis`` (ε defaults to
    Keras' ``backend.epsilon()``, 1e-7)."""
    x = _t(x)
    eps = 1e-7 if epsilon is None else epsilon
    m, v = moments(x, axis, keepdims=True)
    y = (x - m) / sqrt(v + eps)
    if gamma is not None:
        y = y * gamma
    return y + beta if beta is not None else y


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """``keras.ops.rms_normalization``: ``x / √(mean(x²) + ε) · scale`` over ``axis``."""
    x = _t(x)
    eps = 1e-7 if epsilon is None else epsilon
    y = x / sqrt(mean(square(x), axis=axis, keepdims=True) + eps)
    return y * scale if scale is not None else y


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):    # noqa: A002
    """``keras.ops.batch_normalization``: ``(x − mean) / √(variance + ε) · scale + offset``, the statistics
    given along ``axis``."""
    x = _t(x)
    shape_ = [1] * x.ndim
    shape_[axis] = -1

    def along(v):
        return None if v is None else reshape(_t(v), shape_)
    y = (x - along(mean)) / sqrt(along(variance) + epsilon)
    if scale is not None:
        y = y * along(scale)
    return y + along(offset) if offset is not None else y


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """``keras.ops.dot_product_attention``: ``softmax(q·kᵀ·scale + bias, masked) · v`` with inputs
    ``(batch, seq, heads, dim)`` (``scale`` = 1/√dim); ``mask`` (booleans) and ``is_causal`` hide keys."""
    q, k, v = _t(query), _t(key), _t(value)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = einsum("btnh,bsnh->bnts", q, k) * scale
    if attn_logits_soft_cap is not None:
        logits = tanh(logits / attn_logits_soft_cap) * attn_logits_soft_cap
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, dtype=bool)
    if mask is not None:
        keep &= np.broadcast_to(_peek(mask).astype(bool), logits.shape)
    if is_causal:
        keep &= np.tril(np.ones(logits.shape[-2:], dtype=bool))
    if not keep.all():
        logits = where(constant(keep), logits, constant(np.asarray(np.finfo(logits.dtype).min, logits.dtype)))
    return einsum("bnts,bsnh->btnh", softmax(logits, axis=-1), v)



def take_along_axis(x, indices, axis=None):
    """``keras.ops.take_along_axis``: ``x`` picked at ``indices`` along ``axis``. Keras' default ``axis=None``
    flattens both first (numpy's name, ``adv.take_along_axis``, defaults to the last axis)."""
    return _take_along_axis(x, indices, axis)

# ----- keras.ops.image: adv.image's functions (TensorFlow's) in Keras' signatures -------------------------
def _image_op(fn, images, data_format, *args, extra_axis=False, **kwargs):
    """``fn`` (channels last) on ``images`` in ``data_format``; ``channels_first`` moves the channels and back
    (an ``extra_axis`` result, sobel's ``(…, 2)``, keeps its last axis)."""
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"image.{fn.__name__}: data_format must be 'channels_last' or 'channels_first', got "
                         f"{data_format!r}.")
    if data_format != "channels_first":
        return fn(images, *args, **kwargs)
    out = fn(moveaxis(_t(images), -3, -1), *args, **kwargs)
    return moveaxis(out, -2, -4) if extra_axis else moveaxis(out, -1, -3)


def rgb_to_grayscale(images, data_format=None):
    """``keras.ops.image.rgb_to_grayscale``: ``0.2989·R + 0.587·G + 0.114·B``, one channel kept."""
    return _image_op(_image.rgb_to_grayscale, images, data_format)


def rgb_to_hsv(images, data_format=None):
    """``keras.ops.image.rgb_to_hsv``: hue, saturation and value in [0, 1] (``adv.image.rgb_to_hsv``)."""
    return _image_op(_image.rgb_to_hsv, images, data_format)


def hsv_to_rgb(images, data_format=None):
    """``keras.ops.image.hsv_to_rgb``: the inverse of :func:`rgb_to_hsv`, piecewise linear in h, s, v."""
    return _image_op(_image.hsv_to_rgb, images, data_format)


def sobel_edges(images, data_format=None):
    """``keras.ops.image.sobel_edges``: the vertical and horizontal Sobel responses of each channel, stacked
    on a new last axis ``(…, 2)`` (two 3 × 3 correlations, edges reflected as TensorFlow)."""
    return _image_op(_image.sobel_edges, images, data_format, extra_axis=True)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """``keras.ops.image.extract_patches``: each ``size`` window flattened into the channels, 2-D
    ``(N, H, W, C) → (N, nH, nW, kH·kW·C)`` or, for a ``size`` of 3, 3-D as :func:`extract_patches_3d`
    (a one-hot convolution: the gradient adds back onto the pixels)."""
    if np.ndim(size) == 1 and len(size) == 3:
        return _patches_3d(images, size, strides, dilation_rate, padding, data_format)
    return _image_op(_extract_patches, images, data_format, size, strides, dilation_rate, padding)


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """``keras.ops.image.extract_patches_3d``: each ``kD × kH × kW`` window of ``(N, D, H, W, C)`` volumes
    (channels first: ``(N, C, D, H, W)``) flattened into ``kD·kH·kW·C`` channels, last."""
    return _patches_3d(volumes, size, strides, dilation_rate, padding, data_format)


def _patches_3d(volumes, size, strides, dilation_rate, padding, data_format):
    channels_first = _image_format(data_format, "extract_patches_3d") == "channels_first"
    v = moveaxis(_t(volumes), -4, -1) if channels_first else volumes
    out = _extract_patches(v, (size,) * 3 if np.ndim(size) == 0 else size, strides, dilation_rate, padding)
    return moveaxis(out, -1, -4) if channels_first else out


def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """``keras.ops.image.resize``: ``tf.image.resize`` (``adv.image.resize``) with Keras' argument names; the
    aspect-ratio crop and pad are not implemented here."""
    if crop_to_aspect_ratio or pad_to_aspect_ratio:
        raise ValueError("image.resize: crop_to_aspect_ratio and pad_to_aspect_ratio are not implemented here; "
                         "crop or pad first (adv.image.resize_with_crop_or_pad), then resize.")
    return _image_op(_image.resize, images, data_format, size, method=interpolation, antialias=antialias)


# ----- keras.ops.image / linalg / nn / numpy: the same functions, gathered as Keras gathers them --------------
_SUBMODULES = {
    "image": "affine_transform crop_images elastic_transform extract_patches extract_patches_3d gaussian_blur "
             "hsv_to_rgb map_coordinates pad_images perspective_transform resize rgb_to_grayscale rgb_to_hsv "
             "scale_and_translate sobel_edges ssim",
    "linalg": "cholesky cholesky_inverse det eig eigh inv jvp lstsq lu_factor matrix_rank norm pinv qr solve "
              "solve_triangular svd",
    "nn": "adaptive_average_pool adaptive_max_pool average_pool batch_normalization binary_crossentropy "
          "categorical_crossentropy celu conv conv_transpose ctc_decode ctc_loss depth_to_space depthwise_conv "
          "dot_product_attention elu fold gelu glu hard_shrink hard_sigmoid hard_silu hard_swish hard_tanh "
          "layer_normalization leaky_relu log_sigmoid log_softmax max_pool moments multi_hot normalize one_hot "
          "polar psnr relu relu6 rms_normalization selu separable_conv sigmoid silu soft_shrink softmax softplus "
          "softsign space_to_depth sparse_categorical_crossentropy sparse_plus sparse_sigmoid sparsemax "
          "squareplus swish tanh_shrink threshold unfold",
    "numpy": "abs absolute add all allclose amax amin angle any append arange arccos arccosh arcsin arcsinh arctan "
             "arctan2 arctanh argmax argmin argpartition argsort array array_split average bartlett bincount "
             "bitwise_and bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift "
             "bitwise_xor blackman broadcast_to cbrt ceil clip concatenate conj conjugate copy corrcoef correlate "
             "cos cosh count_nonzero cross cumprod cumsum deg2rad diag diagflat diagonal diff digitize divide "
             "divide_no_nan dot dsplit dstack einsum empty empty_like equal exp exp2 expand_dims expm1 eye fabs "
             "flip fliplr flipud floor floor_divide fmax fmin fmod full full_like gcd geomspace get_item greater "
             "greater_equal hamming hanning heaviside histogram hsplit hstack hypot i0 identity imag inner "
             "isclose isfinite isin isinf isnan isneginf isposinf isreal kaiser kron lcm ldexp left_shift less "
             "less_equal linspace log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or "
             "logical_xor logspace matmul max maximum mean median meshgrid min minimum mod moveaxis multiply "
             "nan_to_num nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanpercentile "
             "nanprod nanquantile nanstd nansum nanvar ndim negative nextafter nonzero not_equal ones ones_like "
             "outer pad percentile power prod ptp quantile rad2deg ravel real reciprocal repeat reshape "
             "right_shift roll rot90 round searchsorted select sign signbit sin sinc sinh size slogdet sort "
             "split sqrt square squeeze stack std subtract sum swapaxes take take_along_axis tan tanh tensordot "
             "tile trace transpose trapezoid tri tril triu true_divide trunc unique unravel_index vander var vdot "
             "vectorize view vsplit vstack where zeros zeros_like",
}


class _Namespace(types.ModuleType):
    """``keras.ops.<sub>`` here: a module holding the very functions of ``adv.ops`` that Keras puts in ``sub``
    (``adv.ops.nn.relu is adv.ops.relu``, as in Keras). A Keras name that is not here raises an
    AttributeError that says why: out of scope (the reason and what to write instead) or not implemented."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _absent(name, self.__name__)


def _absent(name, module):
    from .base.tf_surface import out_of_scope_message
    message = out_of_scope_message(f"keras.ops.{name}", module)
    sub = module.rsplit(".", 1)[-1]
    if message is None and name in _SUBMODULES.get(sub, "").split():
        message = (f"module {module!r} has no attribute {name!r}: keras.ops.{sub}.{name} is not implemented "
                   f"here. Instead: keras.ops.{sub}.{name} itself on TensorFlow, recorded with adv.tf.record() to "
                   f"see its gradients; adv.ops.{sub} has {', '.join(sys.modules[module].__all__)}.")
    raise AttributeError(message or f"module {module!r} has no attribute {name!r}", name=name)


def _namespace(sub, only_there=False):
    """The module ``adv.ops.<sub>``; ``only_there``: its functions leave ``adv.ops`` itself (Keras has
    ``keras.ops.image.resize`` but no ``keras.ops.resize``)."""
    here = [n for n in _SUBMODULES[sub].split() if n in globals()]
    module = _Namespace(f"{__name__}.{sub}", f"``keras.ops.{sub}`` here: {len(here)} of Keras' names "
                                             f"({', '.join(here[:6])} …); a missing one says why.")
    module.__dict__.update({n: globals().pop(n) if only_there else globals()[n] for n in here})
    module.__all__ = here
    sys.modules[module.__name__] = module          # import autodiff_viz.ops.nn works as import keras.ops.nn
    return module


image = _namespace("image", only_there=True)
linalg, nn, numpy = (_namespace(sub) for sub in ("linalg", "nn", "numpy"))


def __getattr__(name):
    """A ``keras.ops`` name that is out of scope here (``fft``, ``bitwise_and``, ``ctc_loss`` …) raises the reason
    and what to write instead; any other missing name raises Python's usual AttributeError."""
    return _absent(name, __name__)


__all__ = [
    "abs", "absolute", "adaptive_average_pool", "adaptive_max_pool", "add", "all", "allclose", "amax", "amin",
    "angle", "any", "append", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "argmax", "argmin", "argpartition", "argsort", "array", "array_split", "associative_scan", "average",
    "average_pool", "bartlett", "batch_normalization", "binary_crossentropy", "bincount", "blackman",
    "broadcast_to", "cast", "categorical_crossentropy", "cbrt", "cdist", "ceil", "celu", "cholesky",
    "cholesky_inverse", "clip", "concatenate", "cond", "conj", "conjugate", "conv", "conv_transpose",
    "convert_to_numpy", "convert_to_tensor", "copy", "corrcoef", "correlate", "cos", "cosh", "count_nonzero",
    "cross", "cumprod", "cumsum", "custom_gradient", "deg2rad", "depth_to_space", "depthwise_conv", "det", "diag",
    "diagflat", "diagonal", "diff", "digitize", "divide", "divide_no_nan", "dot", "dot_product_attention",
    "dsplit", "dstack", "dtype", "eig", "eigh", "einsum", "elu", "empty", "empty_like", "equal", "erf", "erfc",
    "erfinv", "exp", "exp2", "expand_dims", "expm1", "extract_sequences", "eye", "fabs", "flip", "fliplr",
    "flipud", "floor", "floor_divide", "fmax", "fmin", "fmod", "fold", "fori_loop", "full", "full_like", "gcd",
    "gelu", "geomspace", "get_item", "glu", "greater", "greater_equal", "hamming", "hanning", "hard_shrink",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "heaviside", "histogram", "hsplit", "hstack", "hypot",
    "i0", "identity", "imag", "image", "in_top_k", "inner", "inv", "is_tensor", "isclose", "isfinite", "isin",
    "isinf", "isnan", "isneginf", "isposinf", "isreal", "jvp", "kaiser", "kron", "layer_normalization", "lcm",
    "ldexp", "leaky_relu", "less", "less_equal", "linalg", "linspace", "log", "log10", "log1p", "log2",
    "log_sigmoid", "log_softmax", "logaddexp", "logaddexp2", "logdet", "logical_and", "logical_not", "logical_or",
    "logical_xor", "logspace", "logsumexp", "lstsq", "lu_factor", "map", "matmul", "matrix_rank", "max",
    "max_pool", "maximum", "mean", "median", "meshgrid", "min", "minimum", "mod", "moments", "moveaxis",
    "multi_hot", "multiply", "nan_to_num", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax",
    "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar",
    "ndim", "negative", "nextafter", "nn", "nonzero", "norm", "normalize", "not_equal", "numpy", "one_hot",
    "ones", "ones_like", "outer", "pad", "percentile", "pinv", "power", "prod", "psnr", "ptp", "qr", "quantile",
    "rad2deg", "ravel", "real", "rearrange", "reciprocal", "relu", "relu6", "repeat", "reshape",
    "rms_normalization", "roll", "rot90", "round", "rsqrt", "saturate_cast", "scan", "scatter", "scatter_update",
    "searchsorted", "segment_max", "segment_min", "segment_prod", "segment_sum", "select", "selu",
    "separable_conv", "shape", "sigmoid", "sign", "signbit", "silu", "sin", "sinc", "sinh", "size", "slice",
    "slice_update", "slogdet", "soft_shrink", "softmax", "softplus", "softsign", "solve", "solve_triangular",
    "sort", "space_to_depth", "sparse_categorical_crossentropy", "sparse_plus", "sparse_sigmoid", "sparsemax",
    "split", "sqrt", "square", "squareplus", "squeeze", "stack", "std", "stop_gradient", "subtract", "sum", "svd",
    "swapaxes", "swish", "switch", "take", "take_along_axis", "tan", "tanh", "tanh_shrink", "tensordot",
    "threshold", "tile", "top_k", "trace", "transpose", "trapezoid", "tri", "tril", "triu", "true_divide",
    "trunc", "unfold", "unique", "unravel_index", "unstack", "vander", "var", "vdot", "vectorize",
    "vectorized_map", "view", "vsplit", "vstack", "where", "while_loop", "zeros", "zeros_like",
]
