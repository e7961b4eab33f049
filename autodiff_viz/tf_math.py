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

from .core.linalg import norm
from .core.nn import log_sigmoid, log_softmax, sigmoid, softplus
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
    ceil,
    concatenate,
    cos,
    cosh,
    divide,
    equal,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log1p,
    logsumexp,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    prod,
    reciprocal,
    rint,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    stack,
    std,
    subtract,
    sum,
    tan,
    tanh,
    var,
)
from .core.ops import argmax as _np_argmax
from .core.ops import argmin as _np_argmin
from .core.ops import clip as _clip
from .core.ops import cumprod as _np_cumprod
from .core.ops import cumsum as _np_cumsum
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

__all__ = sorted(_TF_MATH)
