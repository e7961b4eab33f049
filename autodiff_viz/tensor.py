"""Tensors and variables: numpy arrays that remember where they came from.

A :class:`Tensor` wraps a numpy array. Every op on tensors goes through the
engine (:func:`autodiff_viz.engine.apply`), which looks the op up in the rule
table and, when a :class:`~autodiff_viz.GradientTape` is watching, appends a
record to the tape. A :class:`Variable` is a tensor whose value can change
(``assign``) and that tapes watch automatically.

    >>> import autodiff_viz as adv
    >>> x = adv.constant([1.0, 2.0])
    >>> (x * 3).numpy()
    array([3., 6.])

Python numbers become float64 (or int64); numpy arrays keep their dtype, so
float32 stays float32. A Python number combined with a tensor takes the
tensor's dtype, as in numpy, TensorFlow and PyTorch.
"""
from __future__ import annotations

import itertools

import numpy as np

_ids = itertools.count(1)


class Tensor:
    """An immutable numpy value that ops can differentiate through.

    Make one with :func:`constant`; ops return new tensors. Tensors are
    hashable by identity (like PyTorch), so ``==`` compares elementwise.
    """

    __slots__ = ("_value", "_id", "name", "_node", "_lineage", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value, dtype=None, name=None):
        self._value = _to_array(value, dtype)
        self._id = next(_ids)
        self.name = name
        self._node = None
        self._lineage = False

    @classmethod
    def _wrap(cls, value, name=None):
        """A tensor around an array the engine just computed (no copy, no checks)."""
        t = object.__new__(Tensor)
        t._value = value if type(value) is np.ndarray else np.asarray(value)
        t._id = next(_ids)
        t.name = name
        t._node = None
        t._lineage = False
        return t

    @classmethod
    def _alias(cls, tensor_id, value, node=None, name=None):
        """A tensor that stands for an existing one (same id) with a fixed value.

        The engine uses aliases for an op's output during a recorded backward
        pass, and for a variable's value as it was when an op read it.
        """
        t = object.__new__(Tensor)
        t._value = value
        t._id = tensor_id
        t.name = name
        t._node = node
        t._lineage = True
        return t

    # ----- numpy view ------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    def numpy(self) -> np.ndarray:
        """The value as a numpy array. It leaves the tape: no gradient flows back through it."""
        engine.left_the_tape(self, "numpy()")
        return self._value

    def item(self):
        """The value as a Python number (only for one-element tensors)."""
        engine.left_the_tape(self, "item()")
        return self._value.item()

    def tolist(self):
        engine.left_the_tape(self, "tolist()")
        return self._value.tolist()

    def __array__(self, dtype=None, copy=None):
        engine.left_the_tape(self, "np.asarray()")
        if dtype is not None and dtype != self._value.dtype:
            return self._value.astype(dtype)
        return self._value.copy() if copy else self._value

    def __float__(self):
        engine.left_the_tape(self, "float()")
        return float(self._value)

    def __int__(self):
        engine.left_the_tape(self, "int()")
        return int(self._value)

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError(
                f"The truth value of a tensor of shape {self.shape} is ambiguous. "
                "Reduce it first (t.max(), t.min(), t.sum()) or test t.numpy() values."
            )
        return bool(self._value)

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d tensor (a scalar) is undefined")
        return self._value.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __hash__(self):
        return self._id

    def __repr__(self):
        kind = type(self).__name__
        name = f", name={self.name!r}" if self.name else ""
        body = np.array2string(self._value, precision=4, threshold=20, edgeitems=3,
                               separator=", ", prefix=" " * (len(kind) + 1))
        return f"{kind}({body}, shape={self.shape}, dtype={self.dtype}{name})"

    # ----- numpy interoperability ------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """``np.exp(t)``, ``ndarray * t``: use the differentiable op when there is one."""
        rule = _UFUNCS.get(ufunc)
        if rule is not None and method == "__call__" and not kwargs:
            return engine.call(rule, *inputs)
        arrays = [np.asarray(a) for a in inputs]
        return getattr(ufunc, method)(*arrays, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from . import ops
        op = getattr(ops, func.__name__, None) if func.__module__.startswith("numpy") else None
        if op is not None and func.__name__ in ops.NUMPY_FUNCTIONS:
            return op(*args, **kwargs)
        return func(*_to_numpy_tree(args), **_to_numpy_tree(kwargs))

    # ----- operators (defined below the class with _binary / _unary) -------
    def __getitem__(self, index):
        from .ops import getitem
        return getitem(self, index)

    # ----- methods that mirror numpy ---------------------------------------
    def sum(self, axis=None, keepdims=False):
        from .ops import sum as _sum
        return _sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        from .ops import mean
        return mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        from .ops import max as _max
        return _max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        from .ops import min as _min
        return _min(self, axis, keepdims)

    def reshape(self, *shape):
        from .ops import reshape
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, shape)

    def astype(self, dtype):
        from .ops import cast
        return cast(self, dtype)

    @property
    def T(self):
        from .ops import transpose
        return transpose(self)


class Variable(Tensor):
    """A tensor with a mutable value, watched automatically by every tape.

    ``assign``, ``assign_add`` and ``assign_sub`` replace the value; ops that
    read the variable earlier keep the value they read, so a gradient
    computed after an update is still the gradient of what was computed.

        >>> w = adv.Variable([1.0, 2.0], name="w")
        >>> w.assign_sub([0.5, 0.5]).numpy()
        array([0.5, 1.5])
    """

    __slots__ = ("trainable",)

    def __init__(self, value, trainable=True, name=None, dtype=None):
        super().__init__(value, dtype=dtype, name=name)
        self.trainable = bool(trainable)
        self._lineage = True

    def numpy(self) -> np.ndarray:
        """A copy of the current value (changing it does not change the variable)."""
        engine.left_the_tape(self, "numpy()")
        return self._value.copy()

    def _checked(self, value, what):
        arr = np.asarray(value._value if isinstance(value, Tensor) else value)
        if arr.shape != self.shape:
            try:
                arr = np.broadcast_to(arr, self.shape)
            except ValueError:
                raise ValueError(
                    f"{what}: variable {self.name or ''!s} has shape {self.shape}, "
                    f"the value has shape {arr.shape}. Give a value of shape {self.shape}."
                ) from None
        return np.array(arr, dtype=self.dtype, copy=True)

    def assign(self, value):
        """Set the value (same shape; cast to the variable's dtype). Returns the variable."""
        self._value = self._checked(value, "assign")
        return self

    def assign_add(self, delta):
        self._value = self._value + self._checked(delta, "assign_add")
        return self

    def assign_sub(self, delta):
        self._value = self._value - self._checked(delta, "assign_sub")
        return self


def constant(value, dtype=None, name=None) -> Tensor:
    """A tensor holding ``value``. Tapes do not watch it unless you call ``tape.watch``.

    Python floats become float64, Python ints int64; numpy arrays keep their
    dtype unless ``dtype`` is given.
    """
    if isinstance(value, Tensor):
        if dtype is None and name is None:
            return value
        from .ops import cast
        out = cast(value, dtype) if dtype is not None else value
        if name is not None:
            out.name = name
        return out
    return Tensor(value, dtype=dtype, name=name)


def as_tensor(value, like: Tensor | None = None) -> Tensor:
    """``value`` as a Tensor; a Python number takes the dtype of ``like`` (weak typing)."""
    if isinstance(value, Tensor):
        return value
    if like is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        kind = like._value.dtype.kind
        if kind in "fc" or (kind in "iu" and isinstance(value, int)):
            return Tensor._wrap(np.asarray(value, dtype=like._value.dtype))
    return Tensor(value)


def _to_array(value, dtype) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value._value
    if dtype is not None:
        return np.array(value, dtype=np.dtype(dtype))
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, np.generic):
        return np.asarray(value)
    arr = np.array(value)
    if arr.dtype.kind == "O":
        raise TypeError(f"cannot make a tensor from {type(value).__name__}: {value!r:.80}")
    return arr


def _to_numpy_tree(obj):
    if isinstance(obj, Tensor):
        return np.asarray(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy_tree(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_numpy_tree(v) for k, v in obj.items()}
    return obj


from . import engine  # noqa: E402  (engine needs Tensor defined first)
from . import rules as R  # noqa: E402


def _binary(rule, reflected=False):
    """An operator method: straight to the engine when both sides are tensors."""
    apply, call = engine.apply, engine.call
    if reflected:
        def method(self, other):
            return apply(rule, other, self) if isinstance(other, Tensor) else call(rule, other, self)
    else:
        def method(self, other):
            return apply(rule, self, other) if isinstance(other, Tensor) else call(rule, self, other)
    method.__name__ = rule.name
    method.__doc__ = f"{rule.doc} (the '{rule.name}' rule)"
    return method


def _unary(rule):
    apply = engine.apply

    def method(self):
        return apply(rule, self)
    method.__doc__ = f"{rule.doc} (the '{rule.name}' rule)"
    return method


for _name, _rule in {"add": R.add, "sub": R.subtract, "mul": R.multiply, "truediv": R.divide,
                     "pow": R.power, "matmul": R.matmul}.items():
    setattr(Tensor, f"__{_name}__", _binary(_rule))
    setattr(Tensor, f"__r{_name}__", _binary(_rule, reflected=True))
for _name, _rule in {"lt": R.less, "le": R.less_equal, "gt": R.greater, "ge": R.greater_equal,
                     "eq": R.equal, "ne": R.not_equal}.items():
    setattr(Tensor, f"__{_name}__", _binary(_rule))
Tensor.__neg__ = _unary(R.negative)
Tensor.__abs__ = _unary(R.abs)
Tensor.__pos__ = lambda self: self

_UFUNCS = {
    np.add: R.add, np.subtract: R.subtract, np.multiply: R.multiply,
    np.true_divide: R.divide, np.power: R.power, np.negative: R.negative,
    np.matmul: R.matmul, np.exp: R.exp, np.log: R.log, np.sqrt: R.sqrt,
    np.square: R.square, np.absolute: R.abs, np.tanh: R.tanh, np.sin: R.sin,
    np.cos: R.cos, np.maximum: R.maximum, np.minimum: R.minimum,
    np.less: R.less, np.less_equal: R.less_equal, np.greater: R.greater,
    np.greater_equal: R.greater_equal, np.equal: R.equal, np.not_equal: R.not_equal,
}
