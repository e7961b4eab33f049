"""The tensor's operators and numpy-style methods, installed on :class:`Tensor` from above.

:mod:`~autodiff_viz.core.tensor` defines the tensor and knows no op; this
module, which sits above the ops, gives it ``+ - * / ** @``, comparisons,
``t[idx]``, ``t.T``, ``t.sum(axis=...)`` and the rest of ndarray's methods,
and numpy's protocols (``np.exp(t)`` and ``np.var(t)`` dispatch to the rule;
a numpy function without one refuses while a tape tracks the tensor). JAX
(``_src/numpy/array_methods.py``) and HIPS autograd (``numpy_boxes.py``)
attach their array methods the same way, so the tensor's module needs no
import of the ops and no import cycle.

Importing this module installs everything (the package face does it first).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..base.state import state
from . import engine, linalg, ops
from . import rules as R
from .tensor import Tensor, Variable, _tracked, as_tensor, left_the_tape, note_slice


def _binary(rule, reflected=False):
    """An operator method: straight to the engine when both sides are tensors.

    Arithmetic between a floating tensor without history and a Python
    number (``lr * g`` in an update, outside any tape) is just numpy's: no
    tape can record it (no tape tracks such a tensor and the number is a new
    constant), so the number is not made a tensor first. numpy's weak typing
    of the number gives the result :func:`as_tensor` would: the tensor's dtype.
    """
    apply = engine.apply
    forward = rule.forward
    arithmetic = rule in (R.add, R.subtract, R.multiply, R.divide)
    if reflected:
        def method(self, other):
            if isinstance(other, Tensor):
                return apply(rule, other, self)
            if arithmetic and _numpy_only(self, other):
                return _wrap(forward(other, self._value))
            return apply(rule, as_tensor(other, self), self)
    else:
        def method(self, other):
            if isinstance(other, Tensor):
                return apply(rule, self, other)
            if arithmetic and _numpy_only(self, other):
                return _wrap(forward(self._value, other))
            return apply(rule, self, as_tensor(other, self))
    method.__name__ = rule.name
    method.__doc__ = f"{rule.doc} (the '{rule.name}' rule)"
    return method


def _numpy_only(tensor: Tensor, number) -> bool:
    """Is ``tensor <op> number`` plain numpy (see :func:`_binary`): a floating tensor without history, a Python
    number, and no anomaly detector to check the result?"""
    return not tensor._lineage and (type(number) is float or type(number) is int) and \
        tensor._value.dtype.kind == "f" and not engine._anomaly_threads


_wrap = Tensor._wrap


def _unary(rule):
    apply = engine.apply

    def method(self):
        return apply(rule, self)
    method.__doc__ = f"{rule.doc} (the '{rule.name}' rule)"
    return method


for _name, _rule in {"add": R.add, "sub": R.subtract, "mul": R.multiply, "truediv": R.divide,
                     "pow": R.power, "matmul": R.matmul, "mod": R.mod, "floordiv": R.floor_divide}.items():
    setattr(Tensor, f"__{_name}__", _binary(_rule))
    setattr(Tensor, f"__r{_name}__", _binary(_rule, reflected=True))
for _name, _rule in {"lt": R.less, "le": R.less_equal, "gt": R.greater, "ge": R.greater_equal,
                     "eq": R.equal, "ne": R.not_equal}.items():
    setattr(Tensor, f"__{_name}__", _binary(_rule))


def _equality(method):
    """``==`` / ``!=`` that leave an operand that is not numbers (None, a string) to Python, as TensorFlow.

    ``t == None`` is then False and ``t != None`` True (identity), where numpy gives an all-False array;
    so ``if x == None`` and ``t in [None, t]`` work, and numbers compare elementwise as before.
    """
    def compare(self, other):
        if not isinstance(other, Tensor):
            if other is None or isinstance(other, (str, bytes)):
                return NotImplemented
            try:
                other = as_tensor(other, self)
            except TypeError:           # not numbers (an object, a list of strings)
                return NotImplemented
        return method(self, other)
    compare.__name__, compare.__doc__ = method.__name__, method.__doc__
    return compare


Tensor.__eq__ = _equality(Tensor.__eq__)
Tensor.__ne__ = _equality(Tensor.__ne__)


def _logical(name, ufunc, symbol, reflected=False):
    """``&``, ``|``, ``^``: numpy's operator on the values (logical for bool, bitwise for integers); no gradient.

    The result is a new tensor without history: booleans and bits carry no gradient, so no tape needs
    the op (``adv.where(mask, a, b)`` is what a gradient flows through).
    """
    def method(self, other):
        a, b = (other, self) if reflected else (self, other)
        return Tensor._wrap(_bits(symbol, ufunc, a, b))
    method.__name__ = name
    method.__doc__ = f"``a {symbol} b`` as numpy's ``np.{ufunc.__name__}``: logical for bool tensors, bitwise " \
                     "for integers; no gradient."
    return method


def _bits(symbol, ufunc, *operands, **kwargs):
    """``ufunc`` on the values of the operands, after refusing floats with the fix (make a mask first)."""
    values = [o._value if isinstance(o, Tensor) else o for o in operands]
    for o, v in zip(operands, values):
        kind = np.asarray(v).dtype.kind
        if kind not in "biu":
            what = f"a tensor of dtype {o.dtype}" if isinstance(o, Tensor) else f"{type(o).__name__} {o!r:.40}"
            raise TypeError(f"{symbol} takes bool tensors (logical) or integer tensors (bitwise), got {what}. "
                            "Make a mask first: (x > 0) & (x < 1), or ~(x > 0); a gradient flows through "
                            "adv.where(mask, a, b).")
    return ufunc(*values, **kwargs)


for _name, _ufunc, _symbol in (("and", np.bitwise_and, "&"), ("or", np.bitwise_or, "|"),
                               ("xor", np.bitwise_xor, "^")):
    setattr(Tensor, f"__{_name}__", _logical(f"__{_name}__", _ufunc, _symbol))
    setattr(Tensor, f"__r{_name}__", _logical(f"__r{_name}__", _ufunc, _symbol, reflected=True))
Tensor.__invert__ = lambda self: Tensor._wrap(_bits("~", np.invert, self))
Tensor.__invert__.__doc__ = "``~t``: logical not of a bool tensor, bitwise not of an integer one; no gradient."
Tensor.__neg__ = _unary(R.negative)
Tensor.__abs__ = _unary(R.abs)
Tensor.__pos__ = lambda self: self

def _ufunc_ops():
    table = {
        np.add: ops.add, np.subtract: ops.subtract, np.multiply: ops.multiply, np.true_divide: ops.divide,
        np.power: ops.power, np.float_power: None, np.negative: ops.negative, np.positive: ops.positive,
        np.matmul: ops.matmul, np.exp: ops.exp, np.log: ops.log, np.sqrt: ops.sqrt, np.square: ops.square,
        np.absolute: ops.abs, np.fabs: ops.abs, np.sign: ops.sign, np.tanh: ops.tanh, np.sin: ops.sin,
        np.cos: ops.cos, np.maximum: ops.maximum, np.minimum: ops.minimum, np.less: ops.less,
        np.less_equal: ops.less_equal, np.greater: ops.greater, np.greater_equal: ops.greater_equal,
        np.equal: ops.equal, np.not_equal: ops.not_equal, np.rint: ops.rint, np.reciprocal: ops.reciprocal,
        np.remainder: ops.mod, np.floor_divide: ops.floor_divide, np.conjugate: ops.positive,
    }
    for name in ("log1p", "expm1", "log2", "log10", "exp2", "sinh", "cosh", "tan", "arcsin", "arccos", "arctan",
                 "arcsinh", "arccosh", "arctanh", "cbrt", "floor", "ceil", "trunc", "arctan2", "hypot",
                 "logaddexp", "logaddexp2", "fmax", "fmin", "deg2rad", "rad2deg", "radians", "degrees"):
        table[getattr(np, name)] = getattr(ops, name)
    table = {k: v for k, v in table.items() if v is not None}
    methods = {
        (np.add, "reduce"): ops.sum, (np.multiply, "reduce"): ops.prod, (np.maximum, "reduce"): ops.max,
        (np.minimum, "reduce"): ops.min, (np.logaddexp, "reduce"): ops.logsumexp,
        (np.add, "accumulate"): ops.cumsum, (np.multiply, "accumulate"): ops.cumprod,
        (np.logical_or, "reduce"): ops.any, (np.logical_and, "reduce"): ops.all,
    }
    return table, methods


_UFUNCS, _UFUNC_METHODS = _ufunc_ops()
# ufuncs whose result carries no gradient (booleans, integer bit operations): computed on values
_VALUE_UFUNCS = {np.isnan, np.isinf, np.isfinite, np.signbit, np.logical_and, np.logical_or, np.logical_not,
                 np.logical_xor, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift,
                 np.right_shift, np.gcd, np.lcm, np.isnat, np.equal, np.not_equal, np.less, np.less_equal,
                 np.greater, np.greater_equal}

# the ufuncs behind &, |, ^ and ~ (see _logical): a tensor whichever side the tensor is on
_OPERATOR_UFUNCS = {np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^", np.invert: "~"}


def _install_methods():
    """ndarray's methods, with numpy's signatures, as the ops of the same name (``t.var(axis=0, ddof=1)``)."""
    names = ("sum", "mean", "max", "min", "prod", "var", "std", "cumsum", "cumprod", "argmax", "argmin", "any",
             "all", "clip", "round", "dot", "squeeze", "swapaxes", "trace", "diagonal", "repeat", "take", "ravel",
             "argsort")
    for name in names:
        setattr(Tensor, name, _method(getattr(ops, name), name))
    Tensor.flatten = _method(ops.ravel, "flatten")
    Tensor.__round__ = lambda self, ndigits=None: ops.round(self, ndigits or 0)


def _method(op, name):
    def method(self, *args, **kwargs):
        if {"keepdim", "dim", "unbiased", "correction"} & set(kwargs):
            raise TypeError(_torch_kwargs(name, args, kwargs))
        return op(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    doc = op.__doc__ or ""
    if doc.startswith(f"{op.__name__}("):        # a compiled function's embedded signature line
        doc = doc.split("\n", 1)[1].lstrip("\n") if "\n" in doc else ""
    method.__doc__ = f"``adv.{op.__name__}(t, ...)`` as a method (numpy's signature).\n\n{doc}"
    return method


def _torch_kwargs(name, args, kwargs):
    """The numpy spelling of a call written with PyTorch's keywords, the axis kept.

    ``x.sum(0, keepdim=True)`` → ``t.sum(axis=0, keepdims=True)``: PyTorch's
    first positional argument is the dimension, numpy's is ``axis`` (written
    out, since ``var``'s second positional is ``dtype``). ``unbiased=True`` is
    ``ddof=1`` (Bessel's correction, the divisor n − 1), ``correction=k`` is ``ddof=k``.
    """
    parts = [f"axis={args[0]!r}"] if args and "dim" not in kwargs else []
    parts += [f"{a!r}" for a in args[1:]]
    for k, v in kwargs.items():
        if k == "unbiased":
            parts.append(f"ddof={1 if v else 0}")
        elif k == "correction":
            parts.append(f"ddof={v!r}")
        else:
            parts.append(("keepdims" if k == "keepdim" else "axis" if k == "dim" else k) + f"={v!r}")
    ddof = ", ddof= instead of unbiased=/correction=" if {"unbiased", "correction"} & set(kwargs) else ""
    return (f"t.{name}() takes numpy's keywords, not PyTorch's: write t.{name}({', '.join(parts)}) "
            f"(keepdims=, axis= instead of keepdim=, dim={ddof}).")


_install_methods()

# how an escape through `array += t` is noted: a hand gradient accumulated in an array (CS231n's
# `dW[:, j] += (p[j] - (j == y[i])) * X[i]`), which compare does not count as a lost path of the loss
ACCUMULATED = "into an array (`array += tensor`)"


def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
    """``np.exp(t)``, ``ndarray * t``, ``np.add.reduce(t)``: the differentiable op when there is one.

    A ufunc without a rule refuses (TypeError) while a tape tracks an input,
    unless its result carries no gradient anyway (``np.isnan``, logical ops).
    Writing into an ndarray (``out=array``, ``array += t``) writes the values
    and notes the escape, as an item write ``array[i] = t`` does.
    """
    out = kwargs.pop("out", None)
    if out is not None:
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        if any(isinstance(o, Tensor) for o in out):
            raise TypeError(f"np.{name}(..., out=tensor): tensors are immutable; use the result instead "
                            "(y = x + 1, not x += 1 on a tensor).")
        if ufunc not in _VALUE_UFUNCS:
            # `dW += 2 * reg * W` (a hand gradient kept in an array): numpy writes numbers into the array, as
            # an item write `dW[i] = t` does. Allowed, and noted as an escape, so if that array ever reaches a
            # loss, explain/compare say the path was lost at this line.
            for t in _tensors_in(inputs):
                left_the_tape(t, f"np.{name} {ACCUMULATED}")
            return getattr(ufunc, method)(*_values_tree(inputs), out=out, **kwargs)   # noted once, above
        return getattr(ufunc, method)(*_to_numpy_tree(inputs), out=out, **kwargs)
    if method == "__call__":
        op = _UFUNCS.get(ufunc)
        if op is not None and not kwargs:
            return op(*inputs)
    else:
        op = _UFUNC_METHODS.get((ufunc, method))
        if op is not None and set(kwargs) <= {"axis", "keepdims", "dtype"} and len(inputs) == 1:
            if kwargs.get("dtype") is not None:
                inputs = (as_tensor(inputs[0]).astype(kwargs.pop("dtype")),)
            kwargs.pop("dtype", None)
            kwargs.setdefault("axis", 0)
            return op(inputs[0], **kwargs)
    if method == "__call__" and ufunc in _OPERATOR_UFUNCS:     # `mask_array & t`: a tensor, as `t & mask_array`
        return Tensor._wrap(_bits(_OPERATOR_UFUNCS[ufunc], ufunc, *inputs, **kwargs))
    if ufunc in _VALUE_UFUNCS:      # booleans and bits: nothing to differentiate, no escape to note
        return getattr(ufunc, method)(*_values_tree(inputs), **_values_tree(kwargs))
    _refuse_if_tracked(ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}", inputs, kwargs)
    return getattr(ufunc, method)(*_to_numpy_tree(inputs), **_to_numpy_tree(kwargs))


def __array_function__(self, func, types, args, kwargs):
    """``np.var(t)``, ``np.einsum(..., t)``: the differentiable op when there is one.

    Without one: numpy on the values when no tape tracks the tensor or when
    the result carries no gradient (``np.argsort``, ``np.shape``); else a
    TypeError naming the function and what to use instead.
    """
    op = numpy_op(func)
    if op is not None:
        return op(*args, **kwargs)
    name = _numpy_name(func)
    if name in _VALUE_FUNCTIONS:
        return func(*_values_tree(args), **_values_tree(kwargs))
    if name not in _ESCAPES:
        _refuse_if_tracked(name, args, kwargs)
    return func(*_to_numpy_tree(args), **_to_numpy_tree(kwargs))


def __getitem__(self, index):
    """``t[index]``, recorded as ``getitem``; read off a Variable, the slice remembers where it came from, so
    ``v[0:2].assign(new)`` writes into ``v`` (TensorFlow's slice assignment)."""
    part = ops.getitem(self, index)
    if type(self) is Variable:
        note_slice(part, self, ops._normalize_index(index, self.ndim))
    return part


def reshape(self, *shape, order="C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return ops.reshape(self, shape, order)


def transpose(self, *axes):
    """Axes permuted: ``t.transpose()``, ``t.transpose(1, 0, 2)`` or ``t.transpose((1, 0, 2))``, as ndarray."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return ops.transpose(self, axes or None)


def astype(self, dtype, copy=True):
    return ops.cast(self, dtype)


def sort(self, axis=-1, kind=None, order=None):
    """A sorted *copy* along ``axis``. Unlike ``ndarray.sort`` nothing is changed in place: tensors are immutable."""
    return ops.sort(self, axis, kind, order)


@property
def T(self):
    return ops.transpose(self)


@property
def mT(self):
    return ops.swapaxes(self, -1, -2)


def _values_tree(obj):
    """Tensors replaced by their values, without noting an escape (for results that carry no gradient)."""
    if isinstance(obj, Tensor):
        return obj._value
    if isinstance(obj, (list, tuple)):
        return type(obj)(_values_tree(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _values_tree(v) for k, v in obj.items()}
    return obj


def _numpy_name(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    prefix = "np." + module[len("numpy."):] + "." if module.startswith("numpy.") else "np."
    return prefix + getattr(func, "__name__", repr(func))


def _refuse_if_tracked(name, args, kwargs):
    """The TypeError of a numpy function without a gradient rule applied to a tensor a tape tracks."""
    if not state.recording:
        return
    for t in itertools.chain(_tensors_in(args), _tensors_in(kwargs)):
        if _tracked(t):
            if not name.startswith("np."):
                name = "np." + name
            hint = _NEAREST.get(name.split(".")[-1].split(" ")[0], "compute it from the supported ops (see the "
                                "'numpy functions on tensors' page)")
            raise TypeError(
                f"{name} has no gradient rule in autodiff_viz, and a GradientTape is tracking its input"
                f"{' ' + repr(t.name) if t.name else ''} (shape {t.shape}), so numpy would silently drop the gradient. "
                "Instead: "
                f"{hint}; or compute it on t.numpy() explicitly if you do not need its gradient.")


# numpy functions with no rule: what to write instead
_NEAREST = {
    "median": "adv.sort then take the middle entries (adv.sort(x, axis)[..., n // 2], or adv.take)",
    "percentile": "adv.sort then adv.take the entries at the rank you want",
    "quantile": "adv.sort then adv.take the entries at the rank you want",
    "nanmean": "adv.mean(adv.where(np.isnan(x), 0.0, x)) divided by the count of non-NaN entries",
    "nansum": "adv.sum(adv.where(np.isnan(x), 0.0, x))",
    "nanmax": "adv.max(adv.where(np.isnan(x), -np.inf, x))",
    "nanmin": "adv.min(adv.where(np.isnan(x), np.inf, x))",
    "average": "adv.sum(x * w) / adv.sum(w)",
    "ptp": "adv.max(x) - adv.min(x)",
    "diff": "x[1:] - x[:-1] (slicing is differentiable)",
    "cross": "the components: a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], ...",
    "convolve": "adv.layers.Conv1D or a sum of shifted slices",
    "correlate": "a sum of shifted slices",
    "interp": "adv.take of the neighbours and a weighted sum",
    "unique": "np.unique(x.numpy()) for the values (no gradient) and adv.take for the entries",
    "cov": "adv.mean of centred products: xc = x - adv.mean(x, axis=0); xc.T @ xc / (n - 1)",
    "corrcoef": "the covariance divided by adv.std products",
    "sinc": "adv.sin(np.pi * x) / (np.pi * x)",
    "deg2rad": "x * (np.pi / 180)",
    "rad2deg": "x * (180 / np.pi)",
    "radians": "x * (np.pi / 180)",
    "degrees": "x * (180 / np.pi)",
    "copysign": "adv.abs(a) * adv.sign(b)",
    "fmod": "adv.mod (numpy's %, sign of the divisor) or a - adv.trunc(a / b) * b",
    "fmax": "adv.maximum", "fmin": "adv.minimum",
    "heaviside": "adv.where(x > 0, 1.0, 0.0) (its gradient is 0)",
    "frexp": "adv.log2 and adv.floor", "ldexp": "x * adv.exp2(e)",
    "modf": "adv.trunc(x) and x - adv.trunc(x)",
    "float_power": "x ** p (adv.power)",
    "cumulative_sum": "adv.cumsum", "cumulative_prod": "adv.cumprod",
    "nancumsum": "adv.cumsum(adv.where(np.isnan(x), 0.0, x))",
    "kron": "adv.einsum('ij,kl->ikjl', a, b).reshape(...)",
    "hstack": "adv.concatenate(..., axis=1) (axis=0 for 1-D)", "vstack": "adv.concatenate / adv.stack(..., axis=0)",
    "column_stack": "adv.stack(..., axis=1)", "dstack": "adv.stack(..., axis=2)",
    "append": "adv.concatenate", "insert": "adv.concatenate of slices", "delete": "slicing or adv.take",
    "atleast_1d": "adv.reshape", "atleast_2d": "adv.reshape", "atleast_3d": "adv.reshape",
    "array_split": "adv.split", "hsplit": "adv.split(x, n, axis=1)", "vsplit": "adv.split(x, n, axis=0)",
    "rot90": "adv.flip and adv.swapaxes", "select": "nested adv.where", "piecewise": "nested adv.where",
    "put_along_axis": "adv.where with a mask, or a sum of adv.one_hot products",
}


# numpy functions that say "give me the numbers": allowed, and noted as the value leaving the tape
_ESCAPES = {"np.copy", "np.asarray", "np.asanyarray", "np.ascontiguousarray", "np.asfortranarray", "np.array",
            "np.asarray_chkfinite", "np.require"}


# numpy functions whose result carries no gradient (indices, booleans, shapes, printing): computed on values
_VALUE_FUNCTIONS = {"np." + n for n in (
    "argsort", "argmax", "argmin", "argwhere", "nonzero", "flatnonzero", "count_nonzero", "shape", "ndim",
    "size", "isclose", "allclose", "array_equal", "array_equiv", "searchsorted", "digitize", "result_type",
    "can_cast", "min_scalar_type", "iscomplexobj", "isrealobj", "isreal", "iscomplex", "isscalar",
    "may_share_memory", "shares_memory", "unravel_index", "ravel_multi_index", "argpartition", "lexsort",
    "nanargmax", "nanargmin", "array_repr", "array_str", "array2string", "save", "savez", "savez_compressed",
    "savetxt", "isneginf", "isposinf", "sometrue", "alltrue", "iterable", "isin", "in1d",
    "empty_like", "zeros_like", "ones_like", "full_like", "ix_", "indices", "broadcast_shapes", "isfortran",
)} | {"np.linalg.matrix_rank"}


def _to_numpy_tree(obj):
    if isinstance(obj, Tensor):
        return np.asarray(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy_tree(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_numpy_tree(v) for k, v in obj.items()}
    return obj


def _tensors_in(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)




for _method_ in (__array_ufunc__, __array_function__, __getitem__, reshape, transpose, astype, sort):
    setattr(Tensor, _method_.__name__, _method_)
Tensor.T, Tensor.mT = T, mT


def numpy_op(func):
    """The differentiable op standing for the numpy function ``func``, or None."""
    module = getattr(func, "__module__", None) or ""
    name = getattr(func, "__name__", "")
    if module.startswith("numpy.linalg"):
        return getattr(linalg, name, None) if name in linalg.NUMPY_FUNCTIONS else None
    if module.startswith("numpy") and name in ops.NUMPY_FUNCTIONS:
        return ops._NUMPY_SPELLING.get(name) or getattr(ops, name)
    return None
