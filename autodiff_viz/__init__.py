"""autodiff_viz: learn and debug backpropagation by seeing it.

A tape-based automatic differentiation over numpy (TensorFlow's
``GradientTape`` semantics) that records every step, so the forward graph,
the backward graph with the chain-rule factor on each edge, and the reason a
gradient is ``None`` can all be shown.

    >>> import autodiff_viz as adv
    >>> w = adv.Variable([1.0, -2.0], name="w")
    >>> with adv.GradientTape() as tape:
    ...     loss = adv.sum(adv.tanh(w) ** 2)
    >>> tape.gradient(loss, w)
"""
from .base.compiled import use_pure_python_where_stale as _use_pure_python_where_stale

_use_pure_python_where_stale()      # first: decides whether the compiled hot path is used (see setup.py)
from .core import tensor as _tensor  # noqa: F401  (first: the other modules build on it)
from .core import methods as _methods  # noqa: F401  (gives the tensor its operators and numpy methods)
from .core import nn, rules
from .base.state import config, name_scope
from .core.ops import (abs, argmax, argmin, broadcast_to, cast, clip, concatenate, cos, divide, equal, exp,
                  expand_dims, greater, greater_equal, less, less_equal, log, matmul, max, maximum, mean,
                  min, minimum, multiply, negative, not_equal, one_hot, power, reshape, sign, sin, split,
                  sqrt, square, squeeze, stack, stop_gradient, subtract, sum, take, tanh, transpose, where)
from .core.ops import add
from .core.ops import (absolute, all, amax, amin, any, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
                  argsort, around, cbrt, ceil, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, erf, exp2,
                  expm1, fix, flip, fliplr, flipud, floor, floor_divide, hypot, inner, log1p, log2, log10,
                  logaddexp, logaddexp2, logsumexp, mod, moveaxis, outer, pad, positive, prod, ravel,
                  reciprocal, remainder, repeat, rint, roll, round, sinh, sort, std, swapaxes, take_along_axis,
                  tan, tensordot, tile, trace, tril, triu, true_divide, trunc, var, vdot)
from .core.ops import (append, array_split, atleast_1d, atleast_2d, atleast_3d, column_stack, cross, deg2rad,
                  degrees, diff, dsplit, dstack, fmax, fmin, gradient, hsplit, hstack, kron, linspace, nan_to_num,
                  partition, rad2deg, radians, rollaxis, rot90, row_stack, select, sinc, vsplit, vstack)
from .core.ops import full, ones, shape, zeros
from .core.ops import clip_by_norm, eye, identity, ones_like, zeros_like
from .core.ops import numpy_function, py_function    # tf.numpy_function, tf.py_function
from .records.anomaly import AnomalyError, detect_anomaly
from .diagnosis.escapes import PartialGradientWarning
from .diagnosis.walk import Explanation, UnconnectedGradientError
from .records.compare import Comparison, compare
from .records.tape import GradientTape, TapeRecord, UnconnectedGradients
from .core.tensor import Tensor, TorchSpellingError, Variable, constant
from .records.traces.encoding import TraceFormatError
from .records.traces.model import Trace
from .views.widgets import show
from .records.transforms import custom_gradient, grad, hessian, jacobian, jvp, value_and_grad, vjp
from .records.gradcheck import GradCheckReport, check_grads

from . import callbacks, layers, losses, metrics, optimizers
from . import utils
from .core import linalg, random
from . import ops    # Keras 3's keras.ops namespace (the numpy-named ops themselves are autodiff_viz.core.ops)
from .core.linalg import norm
from .views import plots, widgets
from . import regularizers
from .models import Model, Sequential
from . import saving
from . import data, datasets
from . import backend    # keras.backend's clear_session, floatx
from . import errors     # tf.errors: TensorFlow's exception classes
from . import keras      # keras.* and tf.keras.*: the same modules under Keras' top-level names
from . import image      # tf.image's adjustments
from . import math    # tf.math's names (adv.math.sin, adv.math.reduce_sum)
from .math import (add_n, clip_by_value, concat, convert_to_tensor, reduce_all, reduce_any, reduce_logsumexp,
                      reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum)   # tf.<name>: the same ops
from .layers import Input, Layer, activations, initializers   # Keras 3's keras.Input, keras.Layer, keras.activations
# TensorFlow's top-level names (tf.range, tf.gather, tf.cond, tf.device …): each means what TensorFlow means
# (docs/tf-coverage.md lists every name of tf, tf.math, tf.nn, tf.random, tf.linalg and its status)
from .base.devices import device
from .core.linalg import clip_by_global_norm, sqrtm as matrix_square_root
from .core.nn import conv_nd as conv, sigmoid
from .core.ops import (arccos as acos, arccosh as acosh, arcsin as asin, arcsinh as asinh, arctan as atan,
                       arctan2 as atan2, arctanh as atanh, divide as realdiv, divide as truediv, identity as
                       guarantee_const, power as pow)  # noqa: A004
from .core.ops import (boolean_mask, broadcast_dynamic_shape, broadcast_static_shape, dynamic_partition,
                       dynamic_stitch, ensure_shape, fill, gather, gather_nd, histogram_fixed_width,
                       histogram_fixed_width_bins, identity_n, meshgrid, parallel_stack, rank, reverse,
                       reverse_sequence, saturate_cast, scalar_mul, scatter_nd, searchsorted, sequence_mask, shape_n,
                       size, strided_slice, tensor_scatter_nd_add, tensor_scatter_nd_max, tensor_scatter_nd_min,
                       tensor_scatter_nd_sub, tensor_scatter_nd_update, truncatediv, truncatemod, unique_with_counts,
                       unstack)
from .core.ops import range, slice  # noqa: A004
from .core.ops.tf_control import (case, cond, control_dependencies, executing_eagerly, foldl, foldr, get_static_value,
                                  grad_pass_through, group, init_scope, inside_function, is_symbolic_tensor,
                                  is_tensor, map_fn, no_op, recompute_grad, scan, switch_case, timestamp,
                                  vectorized_map, while_loop)
from .core.ops.tf_control import print_ as print, tuple_ as tuple  # noqa: A004
from .math import logical_and, logical_not, logical_or
from .layers.initializers import (Constant as constant_initializer, Ones as ones_initializer,
                                  RandomNormal as random_normal_initializer,
                                  RandomUniform as random_uniform_initializer, Zeros as zeros_initializer)
from numpy import dtype as DType, dtype as as_dtype, float16 as half, float64 as double  # noqa: N812
from numpy import uint16, uint32, uint64
newaxis = None
# dtypes: numpy's own objects, so `dtype=adv.float32` (tf.float32 renamed) means what np.float32 means
# (numpy.bool_, not numpy.bool: the short name exists only from numpy 2.0, and both name one type there)
from numpy import bool_ as bool  # noqa: A004
from numpy import complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8
from .base.version import __version__
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import NoReturn as _NoReturn

# What `from autodiff_viz import *` gives, and what type checkers and editors take as the public names: the ops,
# classes, dtypes and functions above, and the namespaces that mirror Keras' and TensorFlow's modules (the
# layers' folders base/, core/, records/, diagnosis/, views/ are the house, not its face). adv.torch and adv.tf
# load on first use and are left out, so that `import *` never imports PyTorch or TensorFlow.
__all__ = [
    "abs", "absolute", "add", "add_n", "all", "amax", "amin", "AnomalyError", "any", "append", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "around", "array_split",
    "atleast_1d", "atleast_2d", "atleast_3d", "bool", "broadcast_to", "cast", "cbrt", "ceil", "check_grads", "clip",
    "clip_by_norm", "clip_by_value", "column_stack", "compare", "Comparison", "complex128", "complex64", "concat",
    "concatenate", "config", "constant", "convert_to_tensor", "cos", "cosh", "cross", "cumprod", "cumsum",
    "custom_gradient", "deg2rad", "degrees", "detect_anomaly", "diag", "diagonal", "diff", "divide", "dot",
    "dsplit", "dstack", "einsum", "equal", "erf", "exp", "exp2", "expand_dims", "Explanation", "expm1", "eye",
    "fix", "flip", "fliplr", "flipud", "float16", "float32", "float64", "floor", "floor_divide", "fmax", "fmin",
    "full", "grad", "GradCheckReport", "gradient", "GradientTape", "greater", "greater_equal", "hessian", "hsplit",
    "hstack", "hypot", "identity", "inner", "Input", "int16", "int32", "int64", "int8", "jacobian", "jvp", "kron",
    "Layer", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2",
    "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum", "mod", "Model", "moveaxis", "multiply",
    "name_scope", "nan_to_num", "negative", "norm", "not_equal", "numpy_function", "one_hot", "ones", "ones_like",
    "outer", "pad", "partition", "positive", "power", "prod", "py_function", "rad2deg", "radians", "ravel",
    "reciprocal", "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min",
    "reduce_prod", "reduce_sum", "remainder", "repeat", "reshape", "rint", "roll", "rollaxis", "rot90", "round",
    "row_stack", "select", "Sequential", "shape", "show", "sign", "sin", "sinc", "sinh", "sort", "split", "sqrt",
    "square", "squeeze", "stack", "std", "stop_gradient", "subtract", "sum", "swapaxes", "take", "take_along_axis",
    "tan", "tanh", "TapeRecord", "Tensor", "tensor", "tensordot", "tile", "TorchSpellingError", "trace", "Trace",
    "TraceFormatError", "transpose", "tril", "triu", "true_divide", "trunc", "uint8", "UnconnectedGradientError",
    "UnconnectedGradients", "value_and_grad", "var", "Variable", "vdot", "vjp", "vsplit", "vstack", "where",
    "zeros", "zeros_like",
    "activations", "backend", "callbacks", "data", "datasets", "errors", "image", "initializers", "keras", "layers",
    "linalg", "losses", "math", "metrics", "models", "nn", "ops", "optimizers", "plots", "random", "regularizers",
    "rules", "saving", "utils", "widgets",
]


def tensor(*args: object, **kwargs: object) -> _NoReturn:
    """PyTorch's ``torch.tensor(data)``: here it raises, saying what to write instead.

    A tensor is ``adv.constant(data)``; a trainable one is ``adv.Variable(data)``
    (TensorFlow's ``tf.constant`` / ``tf.Variable``). PyTorch's ``requires_grad``
    is a property of a tensor, where TensorFlow's (and this package's) tape decides
    what to watch, so a silent translation would mislead.
    """
    raise TypeError("adv.tensor(...) is PyTorch's torch.tensor(data). Write adv.constant(data) for a tensor, "
                    "adv.Variable(data) for a trainable one (TensorFlow's tf.constant / tf.Variable).")


_BRIDGES = {"torch": "PyTorch", "tf": "TensorFlow"}
if _TYPE_CHECKING:      # editors and type checkers see the bridges; at run time they load on first use
    from . import tf, torch


def __getattr__(name):
    """``adv.torch`` and ``adv.tf`` load their bridge on first use (only then is PyTorch or TensorFlow imported).

    Another library's name that has no counterpart under that name here (``adv.clamp``, ``adv.gather``) raises
    an AttributeError that gives the one to write (``adv.clip(x, min, max)``); any other missing name raises
    Python's usual one.
    """
    if name in _BRIDGES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")    # sets the attribute: next time, no call here
    from .core.spellings import foreign_spelling
    hint = foreign_spelling(name)
    if hint is None:
        import sys
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name, obj=sys.modules[__name__])
    raise AttributeError(hint)
