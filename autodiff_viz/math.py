"""``adv.math``: TensorFlow's ``tf.math`` names, and the ``tf.reduce_*`` names the package face also gives.

A TensorFlow program becomes an autodiff_viz one by renaming ``tf.`` to ``adv.``; these are the names it
brings that numpy spells otherwise (``tf.reduce_sum`` is ``np.sum``). Each one calls the package's own op
(the same rule, the same trace, the same gradient); nothing here computes anything of its own.

    >>> adv.reduce_sum(x, axis=1)            # = adv.sum(x, axis=1)
    >>> adv.math.sin(x), adv.math.sigmoid(x) # = adv.sin(x), adv.nn.sigmoid(x)

The reductions take TensorFlow's arguments, ``(input_tensor, axis=None, keepdims=False, name=None)``: the
third positional argument is ``keepdims`` there but ``dtype`` in numpy, so ``tf.reduce_sum(x, 1, True)``
keeps the axis here as in TensorFlow. ``axis`` may be a list (``axis=[0, 1]``). ``name`` is accepted for
TensorFlow's sake; name a tensor by the variable it is assigned to (the views read it from your line).

Where TensorFlow's meaning differs from numpy's under the same name, the TensorFlow meaning lives here,
under ``adv.math``, and numpy's at the top level: ``adv.math.argmax(x)`` is over axis 0 (TensorFlow),
``adv.argmax(x)`` over the flattened array (numpy); ``adv.math.cumsum(x)`` runs along axis 0,
``adv.cumsum(x)`` along the flattened array.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .core.linalg import norm
from .core.nn import l2_normalize, log_sigmoid, log_softmax, sigmoid, softmax, softplus, softsign, zero_fraction
from .core.ops import (
    abs,
    add,
    all,
    any,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    bessel_i0,
    bessel_i0e,
    bessel_i1,
    bessel_i1e,
    betainc,
    ceil,
    concatenate,
    cos,
    cosh,
    digamma,
    divide,
    equal,
    erf,
    erfc,
    erfcinv,
    erfinv,
    exp,
    expm1,
    flip,
    floor,
    floor_divide,
    greater,
    greater_equal,
    igamma,
    igammac,
    in_top_k,
    lbeta,
    less,
    less_equal,
    lgamma,
    log,
    log1p,
    logsumexp,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mod,
    multiply,
    ndtri,
    negative,
    not_equal,
    polygamma,
    power,
    prod,
    reciprocal,
    reshape,
    rint,
    scalar_mul,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    stack,
    std,
    stop_gradient,
    subtract,
    sum,
    tan,
    tanh,
    top_k,
    var,
    where,
    zeros_like,
    zeta,
)
from .core.ops import argmax as _np_argmax
from .core.ops import argmin as _np_argmin
from .core.ops import clip as _clip
from .core.ops import cumprod as _np_cumprod
from .core.ops import cumsum as _np_cumsum
from .core.tensor import Tensor
from .ops import convert_to_tensor as _keras_convert_to_tensor
from .ops import rsqrt

if TYPE_CHECKING:
    from typing import Sequence

    from .core.types import Axis, DTypeLike, Tensor, TensorLike


def _axis(axis):
    """TensorFlow takes a list of axes where numpy wants a tuple."""
    return tuple(axis) if isinstance(axis, list) else axis


# ----- tf.reduce_* (also at the top level: adv.reduce_sum) ------------------------------------------------
def reduce_sum(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """``tf.reduce_sum``: ``Σ x`` over ``axis`` (every axis when None), as :func:`adv.sum <autodiff_viz.sum>`."""
    return sum(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_mean(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """``tf.reduce_mean``: the mean over ``axis``, as ``adv.mean``."""
    return mean(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_max(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """``tf.reduce_max``: as ``adv.max`` (tied maxima share the gradient, as in TensorFlow)."""
    return max(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_min(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """``tf.reduce_min``: as ``adv.min`` (tied minima share the gradient, as in TensorFlow)."""
    return min(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_prod(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """``tf.reduce_prod``: ``Π x`` over ``axis``, as ``adv.prod``."""
    return prod(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_all(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """``tf.reduce_all``: as ``adv.all`` (booleans: no gradient)."""
    return all(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_any(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """``tf.reduce_any``: as ``adv.any`` (booleans: no gradient)."""
    return any(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_logsumexp(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                     name: str | None = None) -> Tensor:
    """``tf.reduce_logsumexp``: ``log Σ exp x``, computed stably, as ``adv.logsumexp``."""
    return logsumexp(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """``tf.reduce_std``: the population standard deviation (divided by n), as ``adv.std``."""
    return std(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """``tf.reduce_variance``: the population variance (divided by n), as ``adv.var``."""
    return var(input_tensor, axis=_axis(axis), keepdims=keepdims)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``tf.reduce_euclidean_norm``: ``√(Σ x²)`` over ``axis``, as ``adv.norm(x, axis=...)``."""
    return norm(input_tensor, axis=_axis(axis), keepdims=keepdims)


# ----- TensorFlow's names for ops numpy spells otherwise --------------------------------------------------
def concat(values: TensorLike, axis: Axis = 0, name: str | None = None) -> Tensor:
    """``tf.concat(values, axis)``: as ``adv.concatenate(values, axis)`` (numpy 2 spells it ``np.concat`` too)."""
    return concatenate(values, axis=axis)


def add_n(inputs: Sequence[TensorLike], name: str | None = None) -> Tensor:
    """``tf.add_n``: the entrywise sum of a list of same-shaped tensors, ``Σ_k x_k`` (ḡ to each)."""
    return sum(stack(inputs), axis=0)


def clip_by_value(t: TensorLike, clip_value_min: TensorLike, clip_value_max: TensorLike,
                  name: str | None = None) -> Tensor:
    """``tf.clip_by_value``: ``min(max(t, lo), hi)``, as ``adv.clip(t, lo, hi)`` (the gradient passes where
    ``t`` is inside the bounds, and goes to the bound that was taken elsewhere)."""
    return _clip(t, clip_value_min, clip_value_max)


def convert_to_tensor(value: TensorLike, dtype: DTypeLike | None = None, dtype_hint: DTypeLike | None = None,
                      name: str | None = None) -> Tensor:
    """``tf.convert_to_tensor``: a tensor holding ``value`` (a tensor stays itself), as ``adv.ops``' one."""
    return _keras_convert_to_tensor(value, dtype=dtype)


def argmax(input, axis=None, output_type="int64", name=None):
    """``tf.math.argmax``: the index of the largest entry along ``axis`` — **axis 0 when None**, TensorFlow's
    default (numpy's ``adv.argmax`` flattens instead). An integer tensor: no gradient flows through it."""
    return _np_argmax(input, axis=0 if axis is None else axis).astype(output_type)


def argmin(input, axis=None, output_type="int64", name=None):
    """``tf.math.argmin``: as :func:`argmax`, for the smallest entry (axis 0 when None)."""
    return _np_argmin(input, axis=0 if axis is None else axis).astype(output_type)


def squared_difference(x, y, name=None):
    """``tf.math.squared_difference``: ``(x − y)²`` entrywise."""
    return square(subtract(x, y))


def _scan_along(op, x, axis, exclusive, reverse, tf_name):
    if exclusive or reverse:
        raise NotImplementedError(f"math.{tf_name}: exclusive= and reverse= are not supported here; flip with "
                                  f"adv.flip(x, axis) before and after for reverse=True.")
    return op(x, axis=axis)


def math_cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """``tf.math.cumsum``: running sums along ``axis`` (**0 by default**, TensorFlow's; numpy's flattens)."""
    return _scan_along(_np_cumsum, x, axis, exclusive, reverse, "cumsum")


def math_cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """``tf.math.cumprod``: running products along ``axis`` (0 by default, TensorFlow's)."""
    return _scan_along(_np_cumprod, x, axis, exclusive, reverse, "cumprod")


#: ``tf.math.<name>`` → the op here. Names numpy shares mean the same in both; TensorFlow's own spellings
#: (``acos``, ``pow``, ``truediv`` ...) point at numpy's op of the same meaning.
_TF_MATH = {
    "abs": abs, "add": add, "subtract": subtract, "multiply": multiply, "divide": divide, "truediv": divide,
    "floordiv": floor_divide, "negative": negative, "sign": sign, "square": square, "sqrt": sqrt, "rsqrt": rsqrt,
    "reciprocal": reciprocal, "pow": power, "exp": exp, "expm1": expm1, "log": log, "log1p": log1p,
    "sin": sin, "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
    "asin": arcsin, "acos": arccos, "atan": arctan, "atan2": arctan2, "asinh": arcsinh, "acosh": arccosh,
    "atanh": arctanh, "erf": erf, "floor": floor, "ceil": ceil, "round": rint,
    "maximum": maximum, "minimum": minimum, "equal": equal, "not_equal": not_equal, "greater": greater,
    "greater_equal": greater_equal, "less": less, "less_equal": less_equal,
    "sigmoid": sigmoid, "softplus": softplus, "log_sigmoid": log_sigmoid, "log_softmax": log_softmax,
    "cumsum": math_cumsum, "cumprod": math_cumprod, "argmax": argmax, "argmin": argmin, "add_n": add_n,
    "squared_difference": squared_difference,
    **{f"reduce_{kind}": f for kind, f in [
        ("sum", reduce_sum), ("mean", reduce_mean), ("max", reduce_max), ("min", reduce_min),
        ("prod", reduce_prod), ("all", reduce_all), ("any", reduce_any), ("logsumexp", reduce_logsumexp),
        ("std", reduce_std), ("variance", reduce_variance), ("euclidean_norm", reduce_euclidean_norm)]},
}
globals().update(_TF_MATH)


# ----- the rest of tf.math: compositions of the ops above (each recorded as the ops it is made of) ---------
def _values(x):
    return x._value if isinstance(x, Tensor) else np.asarray(x)


def _const(value, dtype=None):
    return Tensor._wrap(np.asarray(value, dtype=dtype))


def divide_no_nan(x, y, name=None):
    """``tf.math.divide_no_nan``: ``x / y``, and 0 where ``y == 0`` (the gradient there is 0 too)."""
    y = convert_to_tensor(y)
    zero = equal(y, 0)
    return where(zero, 0.0, divide(x, where(zero, 1.0, y)))


def multiply_no_nan(x, y, name=None):
    """``tf.math.multiply_no_nan``: ``x · y``, and 0 where ``y == 0`` even if ``x`` is ∞ or NaN."""
    y = convert_to_tensor(y)
    zero = equal(y, 0)
    return where(zero, 0.0, multiply(where(zero, 0.0, x), y))


def reciprocal_no_nan(x, name=None):
    """``tf.math.reciprocal_no_nan``: ``1/x``, and 0 where ``x == 0``."""
    return divide_no_nan(1.0, x) if isinstance(x, Tensor) else divide_no_nan(np.ones_like(x), x)


def xlogy(x, y, name=None):
    """``tf.math.xlogy``: ``x · ln y``, and 0 where ``x == 0`` (also at ``y == 0``)."""
    x = convert_to_tensor(x)
    zero = equal(x, 0)
    return where(zero, 0.0, multiply(x, log(where(zero, 1.0, y))))


def xlog1py(x, y, name=None):
    """``tf.math.xlog1py``: ``x · ln(1 + y)``, and 0 where ``x == 0``."""
    x = convert_to_tensor(x)
    zero = equal(x, 0)
    return where(zero, 0.0, multiply(x, log1p(where(zero, 0.0, y))))


def xdivy(x, y, name=None):
    """``tf.math.xdivy``: ``x / y``, and 0 where ``x == 0``."""
    x = convert_to_tensor(x)
    zero = equal(x, 0)
    return where(zero, 0.0, divide(x, where(zero, 1.0, y)))


def polyval(coeffs, x, name=None):
    """``tf.math.polyval``: ``c₀xⁿ + c₁xⁿ⁻¹ + … + cₙ`` by Horner's rule (coefficients highest power first)."""
    acc = coeffs[0] if isinstance(coeffs[0], Tensor) else convert_to_tensor(coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def real(input, name=None):    # noqa: A002
    """``tf.math.real``: a real tensor is its own real part."""
    return convert_to_tensor(input)


def conj(x, name=None):
    """``tf.math.conj``: a real tensor is its own conjugate."""
    return convert_to_tensor(x)


def imag(input, name=None):    # noqa: A002
    """``tf.math.imag``: zeros for a real tensor."""
    return zeros_like(input)


def angle(input, name=None):    # noqa: A002
    """``tf.math.angle``: π for negative real entries, 0 otherwise."""
    v = _values(input)
    return _const(np.where(v < 0, np.pi, 0.0).astype(v.dtype if v.dtype.kind == "f" else np.float32))


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """``tf.math.cumulative_logsumexp``: running ``log Σ exp`` along ``axis``, shifted by the maximum (stable)."""
    x = convert_to_tensor(x)
    if exclusive:
        raise NotImplementedError("math.cumulative_logsumexp: exclusive= is not supported here.")
    if reverse:
        return flip(cumulative_logsumexp(flip(x, axis), axis), axis)
    shift = stop_gradient(max(x, axis=axis, keepdims=True))
    return log(_np_cumsum(exp(x - shift), axis=axis)) + shift


def count_nonzero(input, axis=None, keepdims=None, dtype="int64", name=None):    # noqa: A002
    """``tf.math.count_nonzero``: how many entries are nonzero over ``axis`` (a count: no gradient)."""
    return _const(np.count_nonzero(_values(input), axis=_axis(axis), keepdims=bool(keepdims)), dtype)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype="int32", name=None, axis=None,
             binary_output=False):
    """``tf.math.bincount``: how often each value 0 … max occurs (weighted sums with ``weights``)."""
    v = _values(arr).reshape(-1)
    w = None if weights is None else _values(weights).reshape(-1)
    out = np.bincount(v, weights=w, minlength=minlength or 0)
    if maxlength is not None:
        out = out[:maxlength]
    if binary_output:
        out = out > 0
    return _const(out, np.float32 if w is not None and np.dtype(dtype).kind != "f" else dtype)


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype="int32", name=None):
    """``tf.math.confusion_matrix``: ``m[i, j]`` counts examples of class ``i`` predicted as ``j``."""
    t, p = _values(labels).astype(np.int64), _values(predictions).astype(np.int64)
    n = int(num_classes) if num_classes is not None else int(np.max([t.max(), p.max()])) + 1
    m = np.zeros((n, n), dtype=dtype)
    np.add.at(m, (t, p), 1 if weights is None else _values(weights))
    return _const(m)


def invert_permutation(x, name=None):
    """``tf.math.invert_permutation``: ``y[x[i]] = i``."""
    v = _values(x)
    out = np.empty_like(v)
    out[v] = np.arange(len(v), dtype=v.dtype)
    return _const(out)


def is_nan(x, name=None):
    """``tf.math.is_nan``: booleans (no gradient)."""
    return _const(np.isnan(_values(x)))


def is_inf(x, name=None):
    """``tf.math.is_inf``: booleans (no gradient)."""
    return _const(np.isinf(_values(x)))


def is_finite(x, name=None):
    """``tf.math.is_finite``: booleans (no gradient)."""
    return _const(np.isfinite(_values(x)))


def is_non_decreasing(x, name=None):
    """``tf.math.is_non_decreasing``: is every entry (flattened) ≥ the one before."""
    return _const(bool(np.all(np.diff(_values(x).reshape(-1)) >= 0)))


def is_strictly_increasing(x, name=None):
    """``tf.math.is_strictly_increasing``: is every entry (flattened) > the one before."""
    return _const(bool(np.all(np.diff(_values(x).reshape(-1)) > 0)))


def logical_and(x, y, name=None):
    """``tf.math.logical_and``: booleans (no gradient)."""
    return _const(np.logical_and(_values(x), _values(y)))


def logical_or(x, y, name=None):
    """``tf.math.logical_or``: booleans (no gradient)."""
    return _const(np.logical_or(_values(x), _values(y)))


def logical_xor(x, y, name=None):
    """``tf.math.logical_xor``: booleans (no gradient)."""
    return _const(np.logical_xor(_values(x), _values(y)))


def logical_not(x, name=None):
    """``tf.math.logical_not``: booleans (no gradient)."""
    return _const(np.logical_not(_values(x)))


def nextafter(x1, x2, name=None):
    """``tf.math.nextafter``: the next representable number after ``x1`` towards ``x2`` (no gradient)."""
    return _const(np.nextafter(_values(x1), _values(x2)))


def _segments(segment_ids, num_segments, data):
    ids = _values(segment_ids).astype(np.int64)
    n = int(ids.max()) + 1 if num_segments is None else int(_values(num_segments))
    member = (ids[None, :] == np.arange(n)[:, None])         # (segments, rows)
    return ids, n, member


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """``tf.math.unsorted_segment_sum``: ``out[s] = Σ_{i: ids[i] = s} data[i]`` (ids over data's first axes).
    A matrix product with the 0/1 membership matrix, so ḡ goes back to each row of its segment."""
    x = convert_to_tensor(data)
    ids = _values(segment_ids)
    rows = reshape(x, (ids.size,) + tuple(x.shape[ids.ndim:]))
    _, n, member = _segments(ids.reshape(-1), num_segments, rows)
    flat = reshape(rows, (ids.size, -1))
    return reshape(matmul(_const(member.astype(x.dtype)), flat), (n,) + tuple(x.shape[ids.ndim:]))


def _counts(segment_ids, num_segments, dtype, inner_ndim):
    _, n, member = _segments(_values(segment_ids).reshape(-1), num_segments, None)
    return member.sum(axis=1).astype(dtype).reshape((n,) + (1,) * inner_ndim)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """``tf.math.unsorted_segment_mean``: the mean of each segment (0 for an empty one)."""
    x = convert_to_tensor(data)
    total = unsorted_segment_sum(x, segment_ids, num_segments)
    return total / np.maximum(_counts(segment_ids, num_segments, x.dtype, total.ndim - 1), 1)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """``tf.math.unsorted_segment_sqrt_n``: each segment's sum divided by √(its size)."""
    x = convert_to_tensor(data)
    total = unsorted_segment_sum(x, segment_ids, num_segments)
    return total / np.sqrt(np.maximum(_counts(segment_ids, num_segments, x.dtype, total.ndim - 1), 1))


def _segment_reduce(reduce, fill, data, segment_ids, num_segments):
    x = convert_to_tensor(data)
    ids = _values(segment_ids)
    rows = reshape(x, (ids.size,) + tuple(x.shape[ids.ndim:]))
    _, n, member = _segments(ids.reshape(-1), num_segments, rows)
    mask = member.reshape(member.shape + (1,) * (rows.ndim - 1))
    out = reduce(where(mask, rows[None], fill), axis=1)
    empty = ~member.any(axis=1)
    return out if not empty.any() else where(empty.reshape((n,) + (1,) * (rows.ndim - 1)), _EMPTY[reduce](x.dtype),
                                             out)


_EMPTY = {max: lambda dt: np.finfo(dt).min if np.dtype(dt).kind == "f" else np.iinfo(dt).min,
          min: lambda dt: np.finfo(dt).max if np.dtype(dt).kind == "f" else np.iinfo(dt).max,
          prod: lambda dt: 1}


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """``tf.math.unsorted_segment_max``: the largest entry of each segment (the dtype's lowest for an empty
    one, as TensorFlow); ties share the gradient."""
    return _segment_reduce(max, -np.inf, data, segment_ids, num_segments)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """``tf.math.unsorted_segment_min``: the smallest entry of each segment."""
    return _segment_reduce(min, np.inf, data, segment_ids, num_segments)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """``tf.math.unsorted_segment_prod``: the product of each segment (1 for an empty one)."""
    return _segment_reduce(prod, 1.0, data, segment_ids, num_segments)


def _sorted(op, empty=0.0):
    def segment(data, segment_ids, name=None):
        out = op(data, segment_ids, None)
        counts = _counts(segment_ids, None, np.int64, out.ndim - 1)
        return where(counts > 0, out, empty) if (counts == 0).any() else out
    segment.__name__ = op.__name__.replace("unsorted_", "")
    segment.__doc__ = (f"``tf.math.{segment.__name__}``: as ``{op.__name__}`` with ``num_segments = max id + 1`` "
                       "(ids sorted; an empty segment gives 0, 1 for a product).")
    return segment


segment_sum, segment_mean, segment_max, segment_min = (
    _sorted(op) for op in (unsorted_segment_sum, unsorted_segment_mean, unsorted_segment_max, unsorted_segment_min))
segment_prod = _sorted(unsorted_segment_prod, empty=1.0)      # an empty product is 1 (TensorFlow's)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """``tf.math.approx_max_k``: here the exact ``top_k`` (along the last axis)."""
    return top_k(operand, k)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """``tf.math.approx_min_k``: the exact ``k`` smallest entries (along the last axis) and their positions."""
    values, indices = top_k(negative(operand), k)
    return negative(values), indices


_TF_MATH.update({
    "accumulate_n": add_n, "floormod": mod, "mod": mod, "scalar_mul": scalar_mul, "softmax": softmax,
    "softsign": softsign, "l2_normalize": l2_normalize, "zero_fraction": zero_fraction, "top_k": top_k,
    "in_top_k": in_top_k, "erfc": erfc, "erfinv": erfinv, "erfcinv": erfcinv, "ndtri": ndtri, "lgamma": lgamma,
    "digamma": digamma, "polygamma": polygamma, "igamma": igamma, "igammac": igammac, "betainc": betainc,
    "zeta": zeta, "lbeta": lbeta, "bessel_i0": bessel_i0, "bessel_i0e": bessel_i0e, "bessel_i1": bessel_i1,
    "bessel_i1e": bessel_i1e, "segment_sum": segment_sum, "segment_mean": segment_mean, "segment_max": segment_max,
    "segment_min": segment_min, "segment_prod": segment_prod,
    **{f.__name__: f for f in (
        divide_no_nan, multiply_no_nan, reciprocal_no_nan, xlogy, xlog1py, xdivy, polyval, real, conj, imag, angle,
        cumulative_logsumexp, count_nonzero, bincount, confusion_matrix, invert_permutation, is_nan, is_inf,
        is_finite, is_non_decreasing, is_strictly_increasing, logical_and, logical_or, logical_xor, logical_not,
        nextafter, unsorted_segment_sum, unsorted_segment_mean, unsorted_segment_sqrt_n, unsorted_segment_max,
        unsorted_segment_min, unsorted_segment_prod, approx_max_k, approx_min_k)},
})
globals().update(_TF_MATH)

__all__ = sorted(_TF_MATH)


def __getattr__(name):
    """A TensorFlow name of ``tf.math`` that is out of scope here raises the reason and the fix (the table in
    ``base/tf_surface.py``); any other missing name raises Python's usual AttributeError."""
    from .base.tf_surface import out_of_scope_message
    message = out_of_scope_message(f"tf.math.{name}", "autodiff_viz.math")
    if message is None:
        raise AttributeError(f"module 'autodiff_viz.math' has no attribute {name!r}", name=name)
    raise AttributeError(message)
