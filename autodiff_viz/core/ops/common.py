"""What every op module shares: argument checks (a tensor, normalised axes) and the numpy names that dispatch.
"""
from __future__ import annotations

import functools
from numbers import Integral

import numpy as np

from ...base.session import floatx
from ..tensor import Tensor, as_tensor

# numpy functions that, given a tensor, run the differentiable op (see Tensor.__array_function__)
NUMPY_FUNCTIONS = {
    "sum", "mean", "max", "min", "reshape", "transpose", "concatenate", "stack", "expand_dims",
    "squeeze", "broadcast_to", "where", "clip", "take", "matmul", "argmax", "argmin", "split",
}


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _axes(axis, ndim: int, op: str) -> tuple:
    """``axis`` (None, int or sequence) as a sorted tuple of negative axes."""
    try:
        return _axes_cached(axis, ndim, op)
    except TypeError:       # unhashable axes (a list): the same answer, uncached
        return _axes_uncached(axis, ndim, op)


def _axes_uncached(axis, ndim: int, op: str) -> tuple:
    if axis is None:
        return tuple(range(-ndim, 0))
    items = (axis,) if isinstance(axis, Integral) else tuple(axis)
    out = []
    for a in items:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: axis {a} is out of range for a tensor with {ndim} axes "
                             f"(valid: {-ndim} to {ndim - 1}).")
        out.append(a - ndim if a >= 0 else a)
    return tuple(sorted(set(out)))


# every reduction and softmax of a training step asks again for the same few axes
_axes_cached = functools.lru_cache(maxsize=1024)(_axes_uncached)


# ----- reductions ------------------------------------------------------------
def _no_out(out, op):
    if out is not None:
        raise TypeError(f"{op}: out= is not supported: tensors are immutable. Use the result instead "
                        f"(y = adv.{op}(...)).")


_UNSUPPORTED_FIX = {
    "where": "reduce the selected entries instead: adv.{op}(x[mask])",
    "initial": "combine it with the result instead: {initial}",
    "mean": "leave it out: the op computes the mean (and differentiates through it)",
}


_WITH_INITIAL = {"sum": "adv.sum(x) + initial", "prod": "adv.prod(x) * initial",
                 "max": "adv.maximum(adv.max(x), initial)", "min": "adv.minimum(adv.min(x), initial)"}


def _refuse_numpy_keywords(op, **given):
    """numpy keywords the op does not support, given a value other than numpy's default: a TypeError that
    names the op, the keyword and what to write instead (not Python's bare "unexpected keyword")."""
    for key, value in given.items():
        if value is None or value is True and key == "where":    # numpy's defaults: the usual call
            continue
        if not (key == "where" and np.ndim(value) == 0 and bool(value)):
            raise TypeError(f"{op}: numpy's {key}= is not supported by autodiff_viz; "
                            + _UNSUPPORTED_FIX[key].format(op=op, initial=_WITH_INITIAL.get(op)) + ".")


# numpy functions that, given a tensor, run the differentiable op (see Tensor.__array_function__)
NUMPY_FUNCTIONS.update({
    "amax", "amin", "prod", "var", "std", "cumsum", "cumprod", "sort", "argsort", "any", "all", "trace", "ravel",
    "swapaxes", "moveaxis", "flip", "fliplr", "flipud", "roll", "tile", "repeat", "take_along_axis", "diagonal",
    "diag", "triu", "tril", "pad", "einsum", "tensordot", "dot", "inner", "outer", "vdot", "round", "around",
    "log1p", "expm1", "log2", "log10", "exp2", "sinh", "cosh", "tan", "arcsin", "arccos", "arctan",
    "arcsinh", "arccosh", "arctanh", "reciprocal", "cbrt", "floor", "ceil", "trunc", "fix", "rint",
    "arctan2", "hypot", "logaddexp", "logaddexp2", "mod", "remainder", "floor_divide", "true_divide",
})


NUMPY_FUNCTIONS.update({
    "atleast_1d", "atleast_2d", "atleast_3d", "vstack", "row_stack", "hstack", "dstack", "column_stack",
    "array_split", "vsplit", "hsplit", "dsplit", "rollaxis", "rot90", "append", "diff", "gradient", "kron", "cross",
    "fmax", "fmin", "deg2rad", "rad2deg", "radians", "degrees", "sinc", "nan_to_num", "linspace", "partition",
    "select",
})


def _default_float(dtype, op: str):
    """``dtype`` as a numpy dtype, ``floatx()`` (``"float32"``, as Keras) when it is None."""
    if dtype is None:
        return np.dtype(floatx())
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {dtype!r} is not a dtype; use e.g. 'float32', 'float64' or 'int32'.") from None
