"""``adv.backend``: the ``keras.backend`` names a guide types (``keras.backend.clear_session()``,
``floatx()``, ``epsilon()``), gathered from :mod:`autodiff_viz.base.session` where they live, and the legacy
Keras 2 backend functions that ``tf.keras.backend`` still has in TensorFlow 2.21 (``K.square``,
``K.transpose``, ``K.mean`` ...; Géron's *Hands-On ML* writes ``K = tf.keras.backend``), each the package's op
of the same meaning, with the legacy function's value (``K.mean`` of bools is float, ``K.sqrt`` clips
negatives to 0, reductions and ``argmax`` default as there).

    >>> adv.backend.clear_session()     # default layer names start again at "dense"
    >>> adv.backend.floatx()            # "float32", the default dtype of new layers
    >>> K = adv.keras.backend
    >>> K.square(K.transpose(adv.constant([[1.0, 2.0]]))).numpy().tolist()
    [[1.0], [4.0]]
"""
import numpy as np

from .base.session import clear_session, floatx, set_floatx
from .core import nn, ops
from .core.tensor import Tensor, Variable
from .losses import EPSILON

# elementwise and structural ops whose legacy function is the op itself
abs = ops.abs                       # noqa: A001 - the legacy backend's name
square, exp, log, sign, round = ops.square, ops.exp, ops.log, ops.sign, ops.round  # noqa: A001
sin, cos, tanh, maximum, minimum = ops.sin, ops.cos, ops.tanh, ops.maximum, ops.minimum
equal, not_equal, greater, greater_equal = ops.equal, ops.not_equal, ops.greater, ops.greater_equal
less, less_equal, dot, stop_gradient = ops.less, ops.less_equal, ops.dot, ops.stop_gradient
sigmoid, softplus, softsign, elu, hard_sigmoid = nn.sigmoid, nn.softplus, nn.softsign, nn.elu, nn.hard_sigmoid


def epsilon() -> float:
    """Keras' fuzz factor, ``1e-7``: the clip of probabilities in the cross-entropies (``keras.backend.epsilon``)."""
    return EPSILON


def image_data_format() -> str:
    """``"channels_last"``: the only layout of images here, Keras' default (``keras.backend.image_data_format``)."""
    return "channels_last"


def transpose(x):
    """All axes reversed (``K.transpose``)."""
    return ops.transpose(x)


def _floats(x):
    """``x`` as a tensor, bools cast to floatx as the legacy reductions do."""
    x = ops._tensor(x)
    return ops.cast(x, floatx()) if x.dtype == np.bool_ else x


def sum(x, axis=None, keepdims=False):                    # noqa: A001
    return ops.sum(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    """The mean (``K.mean``; bools counted as floatx 0/1)."""
    return ops.mean(_floats(x), axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):                    # noqa: A001
    return ops.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):                    # noqa: A001
    return ops.min(x, axis=axis, keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    return ops.prod(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    """The population variance (``K.var``; bools as floatx)."""
    return ops.var(_floats(x), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    """The population standard deviation (``K.std``; bools as floatx)."""
    return ops.std(_floats(x), axis=axis, keepdims=keepdims)


def any(x, axis=None, keepdims=False):                    # noqa: A001
    return ops.any(x, axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False):                    # noqa: A001
    return ops.all(x, axis=axis, keepdims=keepdims)


def cumsum(x, axis=0):
    return ops.cumsum(x, axis=axis)


def argmax(x, axis=-1):
    return ops.argmax(x, axis=axis)


def argmin(x, axis=-1):
    return ops.argmin(x, axis=axis)


def sqrt(x):
    """``√x`` with negatives clipped to 0 first, as the legacy ``K.sqrt``."""
    return ops.sqrt(ops.maximum(x, 0.0))


def pow(x, a):                                            # noqa: A001
    return ops.power(x, a)


def clip(x, min_value, max_value):
    """``x`` within ``[min_value, max_value]`` (``max_value`` below ``min_value`` is taken as ``min_value``)."""
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return ops.clip(x, min_value, max_value)


def cast(x, dtype):
    return ops.cast(x, dtype)


def concatenate(tensors, axis=-1):
    return ops.concatenate(tensors, axis=axis)


def reshape(x, shape):
    return ops.reshape(x, shape)


def expand_dims(x, axis=-1):
    return ops.expand_dims(x, axis)


def squeeze(x, axis):
    return ops.squeeze(x, axis)


def stack(x, axis=0):
    return ops.stack(x, axis=axis)


def flatten(x):
    return ops.reshape(x, (-1,))


def tile(x, n):
    return ops.tile(x, n)


def gather(reference, indices):
    return ops.take(reference, indices, axis=0)


def permute_dimensions(x, pattern):
    return ops.transpose(x, pattern)


def switch(condition, then_expression, else_expression):
    return ops.where(condition, then_expression, else_expression)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """The legacy ``K.relu``: ``x`` above ``threshold``, ``alpha·(x − threshold)`` below, capped at ``max_value``."""
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return nn.relu(x)
    x = ops._tensor(x)
    out = ops.where(x > threshold, x, alpha * (x - threshold))
    return out if max_value is None else ops.minimum(out, max_value)


def softmax(x, axis=-1):
    return nn.softmax(x, axis=axis)


def l2_normalize(x, axis=None):
    return nn.l2_normalize(x, axis=axis)


def constant(value, dtype=None, shape=None, name=None):
    """A constant of ``dtype`` (floatx when None, as the legacy ``K.constant``)."""
    out = ops.cast(ops._tensor(value), dtype or floatx())
    return ops.broadcast_to(out, shape) if shape is not None else out


def variable(value, dtype=None, name=None, constraint=None):
    """A variable of ``dtype`` (floatx when None), as the legacy ``K.variable``."""
    return Variable(np.asarray(value._value if isinstance(value, Tensor) else value, dtype=dtype or floatx()),
                    name=name, constraint=constraint)


def zeros(shape, dtype=None, name=None):
    """An all-zeros variable (floatx when ``dtype`` is None), as the legacy ``K.zeros``."""
    return Variable(np.zeros(shape, dtype=dtype or floatx()), name=name)


def ones(shape, dtype=None, name=None):
    """An all-ones variable (floatx when ``dtype`` is None), as the legacy ``K.ones``."""
    return Variable(np.ones(shape, dtype=dtype or floatx()), name=name)


def zeros_like(x, dtype=None, name=None):
    return ops.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return ops.ones_like(x, dtype=dtype)


def int_shape(x):
    """The shape as a tuple of ints."""
    return tuple(ops._tensor(x).shape) if not hasattr(x, "shape") else tuple(x.shape)


def ndim(x):
    return len(int_shape(x))


def get_value(x):
    """The value as a numpy array (``K.get_value``, ``K.eval``)."""
    return np.asarray(x._value if isinstance(x, Tensor) else x)


eval = get_value                                         # noqa: A001


def set_value(x, value):
    x.assign(value)


def count_params(x):
    return int(np.prod(int_shape(x)))


__all__ = ["clear_session", "floatx", "set_floatx", "epsilon", "image_data_format",
           "abs", "square", "exp", "log", "sign", "round", "sin", "cos", "tanh", "maximum", "minimum", "equal",
           "not_equal", "greater", "greater_equal", "less", "less_equal", "dot", "stop_gradient", "sigmoid",
           "softplus", "softsign", "elu", "hard_sigmoid", "transpose", "sum", "mean", "max", "min", "prod", "var",
           "std", "any", "all", "cumsum", "argmax", "argmin", "sqrt", "pow", "clip", "cast", "concatenate",
           "reshape", "expand_dims", "squeeze", "stack", "flatten", "tile", "gather", "permute_dimensions",
           "switch", "relu", "softmax", "l2_normalize", "constant", "variable", "zeros", "ones", "zeros_like",
           "ones_like", "int_shape", "ndim", "get_value", "eval", "set_value", "count_params"]
