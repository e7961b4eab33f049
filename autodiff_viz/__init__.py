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
from ._compiled import use_pure_python_where_stale as _use_pure_python_where_stale

_use_pure_python_where_stale()      # first: decides whether the compiled hot path is used (see setup.py)
from . import tensor as _tensor  # noqa: F401  (first: the other modules build on it)
from . import nn, rules
from .engine import config, name_scope
from .ops import (abs, argmax, argmin, broadcast_to, cast, clip, concatenate, cos, divide, equal, exp,
                  expand_dims, greater, greater_equal, less, less_equal, log, matmul, max, maximum, mean,
                  min, minimum, multiply, negative, not_equal, one_hot, power, reshape, sign, sin, split,
                  sqrt, square, squeeze, stack, stop_gradient, subtract, sum, take, tanh, transpose, where)
from .ops import add
from .ops import (absolute, all, amax, amin, any, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
                  argsort, around, cbrt, ceil, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, erf, exp2,
                  expm1, fix, flip, fliplr, flipud, floor, floor_divide, hypot, inner, log1p, log2, log10,
                  logaddexp, logaddexp2, logsumexp, mod, moveaxis, norm, outer, pad, positive, prod, ravel,
                  reciprocal, remainder, repeat, rint, roll, round, sinh, sort, std, swapaxes, take_along_axis,
                  tan, tensordot, tile, trace, tril, triu, true_divide, trunc, var, vdot)
from .ops import (append, array_split, atleast_1d, atleast_2d, atleast_3d, column_stack, cross, deg2rad,
                  degrees, diff, dsplit, dstack, fmax, fmin, gradient, hsplit, hstack, kron, linspace, nan_to_num,
                  partition, rad2deg, radians, rollaxis, rot90, row_stack, select, sinc, vsplit, vstack)
from .ops import full, ones, shape, zeros
from .ops import clip_by_norm, eye, identity, ones_like, zeros_like
from .anomaly import AnomalyError, detect_anomaly
from .diagnosis import Explanation, UnconnectedGradientError
from .compare import Comparison, compare
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, TorchSpellingError, Variable, constant
from .trace import Trace, TraceFormatError
from .widgets import show
from .transforms import (check_grads, custom_gradient, grad, hessian, jacobian, jvp, value_and_grad, vjp,
                         GradCheckReport)

from . import callbacks, layers, losses, metrics, optimizers
from . import utils
from . import linalg
from . import random
from . import plots, regularizers
from .models import Model, Sequential
from . import saving
from .layers import Input, Layer, activations, initializers   # Keras 3's keras.Input, keras.Layer, keras.activations

__version__ = "0.1.0"


def _callable_module(name, op):
    """``adv.dot`` and ``adv.trace`` are both a submodule (graph drawing, traces) and numpy's function:
    the module object is kept (``from . import dot`` still finds it) and calling it runs the op."""
    import sys
    import types
    module = sys.modules[f"{__name__}.{name}"]

    class _CallableModule(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return op(*args, **kwargs)
    _CallableModule.__call__.__doc__ = op.__doc__
    module.__class__ = _CallableModule
    globals()[name] = module


from . import dot as _dot_module, trace as _trace_module  # noqa: E402,F401
from . import ops as _ops  # noqa: E402
_callable_module("dot", _ops.dot)
_callable_module("trace", _ops.trace)


def _torch_tensor(*args, **kwargs):
    """``adv.tensor`` is the module of :class:`Tensor`; calling it as ``torch.tensor(data)`` says what to write."""
    raise TypeError("adv.tensor(...) is PyTorch's torch.tensor(data); here adv.tensor is the module that defines "
                    "Tensor. Write adv.constant(data) for a tensor, adv.Variable(data) for a trainable one "
                    "(TensorFlow's tf.constant / tf.Variable).")


_callable_module("tensor", _torch_tensor)


def __getattr__(name):
    """``adv.reduce_sum``, ``adv.math.sin``, ``adv.clamp``: another library's name raises an AttributeError that
    gives the one to write here (``adv.sum(x, axis=...)``); any other missing name raises Python's usual one."""
    from .ops import foreign_spelling
    hint = foreign_spelling(name)
    if hint is None:
        import sys
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name, obj=sys.modules[__name__])
    raise AttributeError(hint)
