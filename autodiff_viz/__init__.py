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
from . import tensor as _tensor  # noqa: F401  (first: the other modules build on it)
from . import nn, rules
from .engine import config, name_scope
from .ops import (abs, argmax, argmin, broadcast_to, cast, clip, concatenate, cos, divide, equal, exp,
                  expand_dims, greater, greater_equal, less, less_equal, log, matmul, max, maximum, mean,
                  min, minimum, multiply, negative, not_equal, one_hot, power, reshape, sign, sin, split,
                  sqrt, square, squeeze, stack, stop_gradient, subtract, sum, take, tanh, transpose, where)
from .ops import add
from .anomaly import AnomalyError, detect_anomaly
from .diagnosis import Explanation, UnconnectedGradientError
from .compare import Comparison, compare
from .tape import GradientTape
from .tensor import Tensor, Variable, constant
from .trace import Trace
from .widgets import show
from .transforms import (check_grads, custom_gradient, grad, hessian, jacobian, jvp, value_and_grad, vjp,
                         GradCheckReport)

from . import callbacks, layers, losses, metrics, optimizers
from .models import Model, Sequential

__version__ = "0.1.0"
