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

Every name here is a ``keras.ops`` name with its Keras arguments (``tests/test_keras_ops.py`` compares
each one with Keras itself). ``__all__`` lists them; a ``keras.ops`` name that is not here (``scan``,
``fft`` …) raises Python's AttributeError.
"""
from __future__ import annotations

import numpy as np

from .core.linalg import norm
from .core.nn import avg_pool as _avg_pool
from .core.nn import convolution as _convolution
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
    take_along_axis,
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
    var,
    vdot,
    vsplit,
    vstack,
    where,
    zeros,
    zeros_like,
)
from .core.tensor import Tensor, constant
from .losses import EPSILON as _EPSILON
from .losses import categorical_crossentropy as _categorical_crossentropy
from .losses import sparse_categorical_crossentropy as _sparse_categorical_crossentropy


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


__all__ = [
    "abs", "absolute", "add", "all", "amax", "amin", "any", "append", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "array_split", "average_pool",
    "binary_crossentropy", "broadcast_to", "cast", "categorical_crossentropy", "cbrt", "ceil", "clip",
    "concatenate", "conv", "convert_to_numpy", "convert_to_tensor", "cos", "cosh", "cross", "cumprod", "cumsum",
    "deg2rad", "diag", "diagonal", "diff", "divide", "dot", "dsplit", "dstack", "einsum", "elu", "equal", "erf",
    "exp", "exp2", "expand_dims", "expm1", "eye", "flip", "fliplr", "flipud", "floor", "floor_divide", "fmax",
    "fmin", "full", "gelu", "greater", "greater_equal", "hard_sigmoid", "hard_silu", "hard_swish", "hsplit",
    "hstack", "hypot", "identity", "inner", "kron", "leaky_relu", "less", "less_equal", "linspace", "log", "log10",
    "log1p", "log2", "log_sigmoid", "log_softmax", "logaddexp", "logaddexp2", "logsumexp", "matmul", "max",
    "max_pool", "maximum", "mean", "min", "minimum", "mod", "moments", "moveaxis", "multiply", "nan_to_num", "ndim",
    "negative", "norm", "not_equal", "one_hot", "ones", "ones_like", "outer", "pad", "power", "prod", "rad2deg",
    "ravel", "reciprocal", "relu", "relu6", "repeat", "reshape", "roll", "rot90", "round", "rsqrt", "select",
    "selu", "shape", "sigmoid", "sign", "silu", "sin", "sinc", "sinh", "size", "softmax", "softplus", "softsign",
    "sort", "sparse_categorical_crossentropy", "split", "sqrt", "square", "squeeze", "stack", "std",
    "stop_gradient", "subtract", "sum", "swapaxes", "swish", "take", "take_along_axis", "tan", "tanh", "tensordot",
    "tile", "trace", "transpose", "tril", "triu", "true_divide", "trunc", "var", "vdot", "vsplit", "vstack",
    "where", "zeros", "zeros_like"
]
