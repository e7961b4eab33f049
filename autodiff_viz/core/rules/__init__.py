"""The rule table: every differentiable op, declared once.

Each entry says, side by side:

* the op's **forward** in numpy;
* per input, the **chain-rule factor** as text (what a graph edge shows,
  ``∂y/∂x = 1 − y²``), the **VJP** ``vjp(g, y, *inputs, **params)`` and the
  **JVP** ``jvp(dx, y, *inputs, **params)``; ``None`` instead of an input's
  rule means that input has no gradient (indices, conditions, comparisons).

Conventions that keep the table short:

* ``y`` is the op's output; unary inputs are ``x``, binary ones ``a`` and ``b``.
* Cotangents ``g`` have shape ``batch + y.shape`` and tangents ``dx`` have
  ``batch + x.shape``; axes in params are negative, so a reduction over
  ``axis`` means the same axis with or without batch axes in front.
* For ``elementwise`` ops the engine undoes broadcasting (VJP) and aligns
  tangents (JVP), so their rules are the textbook formulas.
* VJPs and JVPs call rules (``exp(x)``), not numpy, so the same formula runs on
  numpy arrays in a plain backward pass and on tensors when an outer tape
  records the pass (higher-order derivatives).

Nothing outside this package knows an op's derivative. ``TABLE`` maps op
names to rules; :func:`define` adds one (also for user code: custom ops).
The table is one table kept in sections, one module each, in the order they
build on each other: ``table.py`` (``TABLE``, :func:`define` and shared
helpers), ``elementwise.py`` (arithmetic and functions of one number),
``shapes.py``, ``reductions.py`` (and scans, norms), ``contractions.py``
(``matmul``, ``einsum``), then ``linalg.py`` the matrix functions
(``adv.linalg``), ``nn.py`` the neural-network ops that are worth showing as
one factor (convolution, pooling) and ``attention.py`` attention. Each section
registers its rules with :func:`define` when it is imported; this module is
the table's face, so ``rules.add``, ``rules.TABLE`` and ``rules.define`` read
as before.
"""
from __future__ import annotations

from .table import (define, TABLE, _alias, _batch, _keepdims_shape, _shift)
from .elementwise import (abs, add, all_, any_, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
                          argmax, argmin, argsort, cast, cbrt, ceil, clip, cos, cosh, divide, elu, equal, erf, erfc,
                          exp, exp2, expm1, floor, floor_divide, gelu, greater, greater_equal, hard_sigmoid,
                          hypot, leaky_relu, less, less_equal, log, log10, log1p, log2, log_sigmoid, logaddexp,
                          logaddexp2, maximum, minimum, mod, multiply, negative, not_equal, numpy_function,
                          one_hot, power,
                          reciprocal, relu, round, selu, sigmoid, sign, silu, sin, sinh, softplus, softsign, sqrt,
                          square, stop_gradient, subtract, tan, tanh, trunc, where, _above, _below, _elu, _erf,
                          _gelu, _GELU_C, _gelu_d, _inside, _into, _INV_SQRT_2PI, _LN10, _LN2, _power_a_exponent,
                          _power_b, _raw, _SAME_WIDTH_INT, _select, _SELECT_MIN_SIZE, _select_operand,
                          _SELU_ALPHA, _SELU_SCALE, _sigmoid, _SQRT_HALF, _tanh_vjp, _tie_share,
                          _TWO_OVER_SQRT_PI, _unary, _zero)
from .shapes import (broadcast_to, concatenate, diag, diagonal, expand_dims, flip, getitem, pad, repeat, reshape,
                     roll, scatter, squeeze, stack, take, take_along_axis, tile, transpose, tril, triu,
                     _broadcast_to, _concat_slot, _getitem, _has_array, _inverse, _pad, _pad_vjp, _scatter, _slot,
                     _SMALL, _tri)
from .reductions import (cumprod, cumsum, log_softmax, logsumexp, max, mean, min, norm, prod, softmax, sort, std,
                         sum, var, _along, _along_last, _argext_jvp, _argext_share, _centered, _count,
                         _cumprod_jvp, _cumprod_table, _cumprod_vjp, _from_last, _log_softmax, _logsumexp,
                         _lse_weights, _mean, _norm, _norm_direction, _over_std, _prod_others, _scan, _softmax,
                         _sort_order, _split_ties, _spread)
from .contractions import (dot, einsum, inner, matmul, outer, tensordot, _einsum, _einsum_jvp, _einsum_pair,
                           _einsum_vjp, _explicit, _explicit_cached, _LETTERS, _matmul_jvp_w, _matmul_jvp_x,
                           _matmul_vjp_w, _matmul_vjp_x, _mm_shapes, _mT, _pair_plan, _rows)

# The other sections of the table (they build on the rules above)
from . import attention, linalg, nn, special  # noqa: E402,F401,I001
