"""Ops under their numpy names: ``adv.exp``, ``adv.sum``, ``adv.concatenate`` ...

Each function checks and normalises its arguments (axes become negative
tuples, shapes are resolved, indices lose their ``...``) and applies the rule
of the same name from :mod:`autodiff_viz.core.rules`. Arguments may be tensors,
numpy arrays or Python numbers; the result is always a tensor.

The ops are kept by kind, one module each, in the order they build on each
other: ``common.py`` (argument checks, the numpy names that dispatch),
``elementwise.py``, ``shapes.py``, ``creation.py`` (``zeros``, ``eye`` …),
``reductions.py``, ``contractions.py`` and ``composites.py`` (numpy
functions written with the others). This module is their face: ``ops.sum``,
``adv.ops.mean`` read as one module.
"""
from __future__ import annotations

from .common import (NUMPY_FUNCTIONS, _axes, _axes_cached, _axes_uncached, _default_float, _no_out,
                     _refuse_numpy_keywords, _tensor, _UNSUPPORTED_FIX, _WITH_INITIAL)
from .elementwise import (abs, absolute, add, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, around,
                          cbrt, ceil, clip, clip_by_norm, cos, cosh, divide, equal, erf, exp, exp2, expm1, fix,
                          floor, floor_divide, greater, greater_equal, hypot, less, less_equal, log, log10, log1p,
                          log2, logaddexp, logaddexp2, matmul, maximum, minimum, mod, multiply, negative,
                          not_equal, positive, power, reciprocal, remainder, rint, round, sign, sin, sinh, sqrt,
                          square, subtract, tan, tanh, true_divide, trunc, where, _binary_op, _unary_op)
from .shapes import (broadcast_to, cast, concatenate, diag, diagonal, expand_dims, flip, fliplr, flipud, getitem,
                     identity, moveaxis, one_hot, pad, ravel, repeat, reshape, roll, split, squeeze, stack,
                     stop_gradient, swapaxes, take, take_along_axis, tile, transpose, tril, triu, _dims, _gather,
                     _normalize_index, _outer_index)
from .shapes import numpy_function, py_function
from .creation import (eye, full, ones, ones_like, shape, zeros, zeros_like, _filled, _filled_like, _new_shape,
                       _whole)
from .reductions import (all, amax, amin, any, argmax, argmin, argsort, cumprod, cumsum, logsumexp, max, mean,
                         min, prod, sort, std, sum, trace, var, _arg, _ddof, _reduce, _scan)
from .contractions import (dot, einsum, inner, outer, tensordot, vdot, _contract, _from_sublists, _letters,
                           _LETTERS, _NUMPY_SPELLING, _numpy_split, _parse_einsum)
from .composites import (append, array_split, atleast_1d, atleast_2d, atleast_3d, column_stack, cross, deg2rad,
                         degrees, diff, dsplit, dstack, fmax, fmin, gradient, hsplit, hstack, kron, linspace,
                         nan_to_num, partition, rad2deg, radians, rollaxis, rot90, row_stack, select, sinc,
                         vsplit, vstack, _values_of)

from .tf_names import (bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, betainc, boolean_mask, broadcast_dynamic_shape,
                       broadcast_static_shape, digamma, dynamic_partition, dynamic_stitch, ensure_shape, erfc,
                       erfcinv, erfinv, fill, gather, gather_nd, histogram_fixed_width, histogram_fixed_width_bins,
                       identity_n, igamma, igammac, in_top_k, lbeta, lgamma, meshgrid, ndtri, parallel_stack,
                       polygamma, rank, reverse, reverse_sequence, saturate_cast, scalar_mul, scatter_nd,
                       searchsorted, sequence_mask, shape_n, size, strided_slice, tensor_scatter_nd_add,
                       tensor_scatter_nd_max, tensor_scatter_nd_min, tensor_scatter_nd_sub,
                       tensor_scatter_nd_update, top_k, truncatediv, truncatemod, unique, unique_with_counts,
                       unravel_index, unstack, zeta)
from .tf_names import range, slice  # noqa: A004  (TensorFlow's names; Python's own stay Python's in the package)

# The names numpy has that deliberately differ here (tests/test_numpy_name_audit.py compares every other one
# with numpy on sample inputs; docs/coming-from.md explains each). Anything not listed means what numpy means.
NUMPY_DIFFERENCES = {
    "zeros": "float32 by default (Keras' and TensorFlow's floatx), numpy's float64 with dtype='float64'",
    "ones": "float32 by default, as zeros",
    "full": "float32 by default for a float fill value, as zeros",
    "eye": "float32 by default, as zeros",
    "identity": "TensorFlow's tf.identity(x) (a recorded copy); an integer n raises, naming adv.eye(n)",
    "size": "TensorFlow's tf.size(x): the number of entries as a 0-d int32 tensor (numpy's np.size: an int)",
    "searchsorted": "TensorFlow's tf.searchsorted(sorted_sequence, values) along the last axis, int32 positions "
                    "(the same positions as numpy's for a 1-D sequence, which gives int64)",
}
