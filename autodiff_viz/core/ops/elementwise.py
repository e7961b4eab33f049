"""Elementwise ops under their numpy names: arithmetic, ``exp``, ``tanh``, comparisons, ``where``, ``clip``, ``round`` …
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import rules as R
from ..engine import apply, call
from ..tensor import Tensor
from .common import _axes, _no_out, _tensor

if TYPE_CHECKING:
    from typing import Callable

    from ..types import Axis, Tensor, TensorLike


# ----- elementwise -----------------------------------------------------------
def add(a: TensorLike, b: TensorLike) -> Tensor: return call(R.add, a, b)


def subtract(a: TensorLike, b: TensorLike) -> Tensor: return call(R.subtract, a, b)


def multiply(a: TensorLike, b: TensorLike) -> Tensor: return call(R.multiply, a, b)


def divide(a: TensorLike, b: TensorLike) -> Tensor: return call(R.divide, a, b)


def power(a: TensorLike, b: TensorLike) -> Tensor: return call(R.power, a, b)


def negative(x: TensorLike) -> Tensor: return apply(R.negative, _tensor(x))


def exp(x: TensorLike) -> Tensor: return apply(R.exp, _tensor(x))


def log(x: TensorLike) -> Tensor: return apply(R.log, _tensor(x))


def sqrt(x: TensorLike) -> Tensor: return apply(R.sqrt, _tensor(x))


def square(x: TensorLike) -> Tensor: return apply(R.square, _tensor(x))


def abs(x: TensorLike) -> Tensor: return apply(R.abs, _tensor(x))


def sign(x: TensorLike) -> Tensor: return apply(R.sign, _tensor(x))


def tanh(x: TensorLike) -> Tensor: return apply(R.tanh, _tensor(x))


def sin(x: TensorLike) -> Tensor: return apply(R.sin, _tensor(x))


def cos(x: TensorLike) -> Tensor: return apply(R.cos, _tensor(x))


def maximum(a: TensorLike, b: TensorLike) -> Tensor: return call(R.maximum, _tensor(a), b)


def minimum(a: TensorLike, b: TensorLike) -> Tensor: return call(R.minimum, _tensor(a), b)


def equal(a: TensorLike, b: TensorLike) -> Tensor: return call(R.equal, _tensor(a), b)


def not_equal(a: TensorLike, b: TensorLike) -> Tensor: return call(R.not_equal, _tensor(a), b)


def less(a: TensorLike, b: TensorLike) -> Tensor: return call(R.less, _tensor(a), b)


def less_equal(a: TensorLike, b: TensorLike) -> Tensor: return call(R.less_equal, _tensor(a), b)


def greater(a: TensorLike, b: TensorLike) -> Tensor: return call(R.greater, _tensor(a), b)


def greater_equal(a: TensorLike, b: TensorLike) -> Tensor: return call(R.greater_equal, _tensor(a), b)


def where(condition: TensorLike, x: TensorLike | None = None, y: TensorLike | None = None) -> Tensor:
    """``x`` where ``condition`` holds, else ``y`` (gradient flows to the chosen side).

    With the condition alone it is ``np.nonzero``: index arrays, no gradient.
    """
    if x is None and y is None:
        return np.nonzero(condition._value if isinstance(condition, Tensor) else np.asarray(condition))
    cond = _tensor(condition)
    if cond.dtype != np.bool_:
        cond = call(R.not_equal, cond, 0)
    return call(R.where, cond, x, y)


def clip(a: TensorLike, a_min: TensorLike | None = None, a_max: TensorLike | None = None, out: None = None, *,
         min: TensorLike | None = None, max: TensorLike | None = None, clip_value_min: TensorLike | None = None,
         clip_value_max: TensorLike | None = None) -> Tensor:
    """``a`` limited to ``[a_min, a_max]`` (either may be None): ``y = min(max(a, a_min), a_max)``.

    Each output entry is one of ``a``, ``a_min`` or ``a_max``, and that one gets the gradient (slope 1):
    ``a`` where ``a_min ≤ a ≤ a_max``, a bound where the entry was clipped to it, as ``torch.clamp``,
    ``tf.clip_by_value`` and ``jax.numpy.clip``. Bounds may be numbers or tensors that broadcast
    against ``a`` (a tensor bound's gradient is summed over the entries it clipped).
    numpy's ``a_min``/``a_max`` (or ``min``/``max``) and TensorFlow's ``clip_value_min``/``clip_value_max``.
    """
    _no_out(out, "clip")
    lo = next((v for v in (a_min, min, clip_value_min) if v is not None), -np.inf)
    hi = next((v for v in (a_max, max, clip_value_max) if v is not None), np.inf)
    return call(R.clip, _tensor(a), lo, hi)


def clip_by_norm(x: TensorLike, clip_norm: TensorLike, axes: Axis = None) -> Tensor:
    """``x`` scaled down so that its L2 norm over ``axes`` is at most ``clip_norm``, as ``tf.clip_by_norm``:

        y = x · clip_norm / max(‖x‖, clip_norm),   ‖x‖ = √(Σ x²) over ``axes`` (all axes when None)

    The norm keeps its axes, so with ``axes=1`` each row of a matrix is clipped on its own. Where
    ``‖x‖ ≤ clip_norm`` the factor is 1 and ``y = x``; elsewhere ``y = clip_norm · x/‖x‖`` points the
    same way as ``x`` with norm ``clip_norm``. It is written with recorded ops (``norm``, ``multiply``,
    ``maximum``, ``divide``), so gradients flow to ``x`` (and to a tensor ``clip_norm``); where the norm
    is clipped the gradient is ``(clip_norm/‖x‖)·(ḡ − x̂ (x̂·ḡ))`` with ``x̂ = x/‖x‖``: the part of ``ḡ``
    along ``x`` is removed, since it would only change the norm that is being held fixed. At
    ``x = 0`` the gradient of the norm is 0 (as TensorFlow's). At ``‖x‖ = clip_norm`` exactly, the two
    sides of the ``maximum`` share the gradient (TensorFlow gives it all to the norm).
    """
    x = _tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"clip_by_norm: x has dtype {x.dtype}; a norm needs floats, as in TensorFlow. Cast it "
                        "first: adv.clip_by_norm(adv.cast(x, 'float32'), clip_norm).")
    c = clip_norm._value if isinstance(clip_norm, Tensor) else np.asarray(clip_norm)
    if c.dtype.kind not in "iuf" or c.ndim != 0:
        error = TypeError if c.dtype.kind not in "iuf" else ValueError
        raise error(f"clip_by_norm: clip_norm must be one number > 0 (the largest norm allowed), got {clip_norm!r}; "
                    "e.g. adv.clip_by_norm(g, 1.0) (axes= clips rows or columns separately).")
    if not c > 0:
        raise ValueError(f"clip_by_norm: clip_norm must be > 0 (the largest norm allowed), got {c}; "
                         "e.g. adv.clip_by_norm(g, 1.0).")
    l2norm = call(R.norm, x, ord=None, axis=_axes(axes, x.ndim, "clip_by_norm"), keepdims=True)
    return divide(multiply(x, clip_norm), maximum(l2norm, clip_norm))


def matmul(a: TensorLike, b: TensorLike, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           output_type: object = None, grad_a: bool = False, grad_b: bool = False, name: str | None = None) -> Tensor:
    """Matrix product ``a @ b`` with numpy's rules for 1-D and stacked operands.

    TensorFlow's keywords work too: ``transpose_a=True`` multiplies by ``aᵀ`` (the last two axes swapped;
    ``adjoint_a`` is the same for real tensors), likewise for ``b``. The transposes are recorded as such,
    so the graph shows ``transpose`` then ``matmul``, as the math reads.
    """
    if transpose_a or adjoint_a or transpose_b or adjoint_b:
        from .shapes import swapaxes
        a = swapaxes(_tensor(a), -1, -2) if transpose_a or adjoint_a else a
        b = swapaxes(_tensor(b), -1, -2) if transpose_b or adjoint_b else b
    return call(R.matmul, _tensor(a), b)


# ----- the numpy surface: elementwise ------------------------------------------
def _unary_op(rule) -> Callable[[TensorLike], Tensor]:
    def op(x: TensorLike) -> Tensor:
        return apply(rule, _tensor(x))
    op.__name__ = op.__qualname__ = rule.name
    op.__doc__ = f"{rule.doc}. Derivative: {rule.inputs[0].factor}."
    return op


def _binary_op(rule) -> Callable[[TensorLike, TensorLike], Tensor]:
    def op(a: TensorLike, b: TensorLike) -> Tensor:
        return call(rule, _tensor(a), b)
    op.__name__ = op.__qualname__ = rule.name
    op.__doc__ = f"{rule.doc}. ∂/∂a: {rule.inputs[0].factor}; ∂/∂b: {rule.inputs[1].factor}."
    return op


log1p, expm1, log2, log10, exp2 = (_unary_op(r) for r in (R.log1p, R.expm1, R.log2, R.log10, R.exp2))


sinh, cosh, tan, arcsin, arccos, arctan = (_unary_op(r) for r in (R.sinh, R.cosh, R.tan, R.arcsin, R.arccos, R.arctan))


arcsinh, arccosh, arctanh, reciprocal, cbrt, erf = (
    _unary_op(r) for r in (R.arcsinh, R.arccosh, R.arctanh, R.reciprocal, R.cbrt, R.erf))


floor, ceil, trunc = (_unary_op(r) for r in (R.floor, R.ceil, R.trunc))


fix = trunc


arctan2, hypot, logaddexp, logaddexp2, mod, floor_divide = (
    _binary_op(r) for r in (R.arctan2, R.hypot, R.logaddexp, R.logaddexp2, R.mod, R.floor_divide))


remainder, true_divide, absolute = mod, divide, abs


def round(a: TensorLike, decimals: int = 0, out: None = None) -> Tensor:
    """``a`` rounded to ``decimals`` places (halves to even, as numpy). The gradient is 0: rounding is
    piecewise constant (use ``adv.stop_gradient(adv.round(x) - x) + x`` for a straight-through estimate)."""
    _no_out(out, "round")
    return call(R.round, _tensor(a), decimals=int(decimals))


around = round


def rint(x: TensorLike) -> Tensor:
    """``x`` rounded to the nearest integer (halves to even); gradient 0."""
    return round(x)


def positive(x: TensorLike) -> Tensor:
    return _tensor(x)
