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
import math
import sys

import numpy as np

_ids = itertools.count(1)


class Tensor:
    """An immutable numpy value that ops can differentiate through.

    Make one with :func:`constant`; ops return new tensors. Tensors are
    hashable by identity (like PyTorch), so ``==`` compares elementwise
    (with ``None`` or a string it is False, as TensorFlow).

    The value is never handed out writable: ``t.numpy()`` is a copy and
    ``np.asarray(t)`` a read-only view, since a tape computes gradients from
    the values it saved and a write into them would silently change those
    gradients. ``copy.copy``/``copy.deepcopy`` of a tensor give the tensor
    itself (it is immutable); of a :class:`Variable`, a new variable.
    """

    __slots__ = ("_value", "_id", "name", "_node", "_lineage", "_keras_mask", "__weakref__")
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
        return _Size(self._value.size)

    def numpy(self) -> np.ndarray:
        """A copy of the value as a numpy array, as TensorFlow's ``Tensor.numpy()``.

        A copy, so that changing it (``a = t.numpy(); a -= a.mean()``) cannot change the tensor, nor the
        values a tape saved to compute gradients from. It leaves the tape: no gradient flows back through it.
        """
        engine.left_the_tape(self, "numpy()")
        return self._value.copy()

    def item(self):
        """The value as a Python number (only for one-element tensors)."""
        engine.left_the_tape(self, "item()")
        return self._value.item()

    def tolist(self):
        engine.left_the_tape(self, "tolist()")
        return self._value.tolist()

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: a read-only view of the value (no copy); ``np.array(t)``: a writable copy.

        Read-only because the array is the tensor's own: writing into it would change an immutable tensor
        and, silently, gradients computed from the values a tape saved. numpy 2 passes ``copy=True`` when
        it wants an array of its own (``np.array``), and a new dtype makes a new array anyway.
        """
        engine.left_the_tape(self, "np.asarray()")
        value = self._value
        if dtype is not None and dtype != value.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(t, dtype={dtype!r}, copy=False): the tensor holds {value.dtype}, "
                                 "so a new dtype needs a copy. Drop copy=False (or pass copy=None).")
            return value.astype(dtype)
        if copy:
            return value.copy()
        view = value.view()
        view.flags.writeable = False
        return view

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

    def __index__(self):
        """``[10, 20][t]``, ``range(t)``: a 0-d integer tensor is an index, as a 0-d integer numpy array."""
        if self._value.ndim != 0 or self._value.dtype.kind not in "iu":
            raise TypeError(f"only a 0-d integer tensor can be used as an index; this one has shape {self.shape} "
                            f"and dtype {self.dtype}. Use int(t) for a whole float, or index with t.numpy().")
        engine.left_the_tape(self, "an index")
        return int(self._value)

    def __format__(self, spec):
        """``f"{loss:.4f}"``: a tensor of one entry formats as that number; a larger one as numpy would.

        numpy formats only 0-d arrays with a spec; a loss of shape ``(1,)`` formats too here, since a
        format spec asks for one number. ``f"{t}"`` (no spec) is ``str(t)``.
        """
        if not spec:
            return str(self)
        if self._value.size == 1:
            return format(self._value.reshape(()).item(), spec)
        raise TypeError(f"format spec {spec!r} on a tensor of shape {self.shape}: a spec formats one number. "
                        f"Reduce it first (f\"{{t.mean():{spec}}}\"), or format the entries: "
                        f"np.array2string(t.numpy(), formatter={{'float_kind': '{{:{spec}}}'.format}}).")

    def __setitem__(self, index, value):
        var = _label(self)
        if isinstance(self, Variable):
            fix = (f"give {var} a whole new value: v.assign(adv.where(mask, new, v)), or "
                   "a = v.numpy(); a[index] = new; v.assign(a)")
        else:
            fix = ("make a new tensor: adv.where(mask, new, t), or a = t.numpy(); a[index] = new; "
                   "t = adv.constant(a)")
        raise TypeError(f"{type(self).__name__} {var} does not support item assignment ({var}[...] = ...): "
                        f"tensors are immutable, and ops that read one keep its value for the gradient. "
                        f"Instead, {fix}.")

    def __copy__(self):
        """A tensor is immutable, so a copy is the tensor itself (as ``copy.copy`` of a str or a tuple)."""
        return self

    def __deepcopy__(self, memo):
        """The tensor itself (immutable, as ``copy.deepcopy`` of a str); its identity on tapes stays the same."""
        return self

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
        """``np.exp(t)``, ``ndarray * t``, ``np.add.reduce(t)``: the differentiable op when there is one.

        A ufunc without a rule refuses (TypeError) while a tape tracks an input,
        unless its result carries no gradient anyway (``np.isnan``, logical ops).
        """
        out = kwargs.pop("out", None)
        if out is not None:
            name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
            if any(isinstance(o, Tensor) for o in out):
                raise TypeError(f"np.{name}(..., out=tensor): tensors are immutable; use the result instead "
                                "(y = x + 1, not x += 1 on a tensor).")
            if ufunc not in _VALUE_UFUNCS:     # `array += t`: the tensor's value is written into an array
                _refuse_if_tracked(f"np.{name} into an existing numpy array (out=, or `array += tensor`)",
                                   inputs, kwargs)
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
        from . import ops
        op = ops.numpy_op(func)
        if op is not None:
            return op(*args, **kwargs)
        name = _numpy_name(func)
        if name in _VALUE_FUNCTIONS:
            return func(*_values_tree(args), **_values_tree(kwargs))
        if name not in _ESCAPES:
            _refuse_if_tracked(name, args, kwargs)
        return func(*_to_numpy_tree(args), **_to_numpy_tree(kwargs))

    # ----- operators (defined below the class with _binary / _unary) -------
    def __getitem__(self, index):
        from .ops import getitem
        return getitem(self, index)

    # ----- methods that mirror numpy (most are installed by _install_methods below) ---
    def reshape(self, *shape, order="C"):
        from .ops import reshape
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, shape, order)

    def transpose(self, *axes):
        """Axes permuted: ``t.transpose()``, ``t.transpose(1, 0, 2)`` or ``t.transpose((1, 0, 2))``, as ndarray."""
        from .ops import transpose
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes or None)

    def astype(self, dtype, copy=True):
        from .ops import cast
        return cast(self, dtype)

    def sort(self, axis=-1, kind=None, order=None):
        """A sorted *copy* along ``axis``. Unlike ``ndarray.sort`` nothing is changed in place: tensors are immutable."""
        from .ops import sort
        return sort(self, axis, kind, order)

    @property
    def T(self):
        from .ops import transpose
        return transpose(self)

    @property
    def mT(self):
        from .ops import swapaxes
        return swapaxes(self, -1, -2)

    @property
    def real(self):
        return self

    def conj(self):
        return self

    conjugate = conj


class TorchSpellingError(AttributeError):
    """A PyTorch method name used on a Tensor; the message gives the numpy / autodiff_viz spelling."""


class _Hint:
    """A name a learner brings from PyTorch (``x.view``): reading it raises :class:`TorchSpellingError`.

    A class attribute rather than ``__getattr__``, so that ordinary missing
    attributes (numpy probes several on every conversion) stay as fast as before.
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        hint = _TORCH_HINTS[self.name]
        whose = ("an ndarray method that tensors, being immutable, do not need" if self.name == "copy"
                 else "that is PyTorch's spelling")
        raise TorchSpellingError(f"Tensor has no attribute '{self.name}' ({whose}). "
                                 f"In autodiff_viz (numpy's spelling): {hint}")


class _Size(int):
    """``t.size``: the number of entries, an int as numpy's ``ndarray.size``. Calling it explains."""

    def __call__(self, *dim):
        raise TypeError(f"t.size is an int ({int(self)} entries), as in numpy, not a method as in PyTorch. "
                        "Use t.size for the count and t.shape (or t.shape[dim]) for the shape.")


_TORCH_HINTS = {
    "view": "x.reshape(n, -1)",
    "unsqueeze": "adv.expand_dims(x, axis) or x[:, None]",
    "permute": "x.transpose(1, 0, 2) or adv.transpose(x, (1, 0, 2))",
    "backward": "with adv.GradientTape() as tape: loss = ...; then tape.gradient(loss, x)",
    "grad": "tape.gradient(loss, x) (gradients are returned by the tape, not stored on tensors)",
    "requires_grad": "adv.Variable(value) (watched automatically) or tape.watch(x)",
    "requires_grad_": "adv.Variable(value) (watched automatically) or tape.watch(x)",
    "detach": "adv.stop_gradient(x) (or x.numpy() to leave the tape)",
    "numel": "x.size",
    "dim": "x.ndim",
    "clone": "x itself (tensors are immutable) or adv.constant(x.numpy())",
    "copy": "x itself (tensors are immutable); for a snapshot of a Variable, adv.constant(v.numpy())",
    "contiguous": "x itself (no memory layout to manage)",
    "cpu": "x itself (everything runs on the CPU with numpy)",
    "cuda": "x itself (everything runs on the CPU with numpy)",
    "to": "x.astype(dtype)",
    "float": "x.astype('float32')",
    "double": "x.astype('float64')",
    "long": "x.astype('int64')",
    "int": "x.astype('int32')",
    "mm": "x @ y or adv.matmul(x, y)",
    "matmul": "x @ y or adv.matmul(x, y)",
    "pow": "x ** p or adv.power(x, p)",
    "norm": "adv.linalg.norm(x) (np.linalg.norm(x) dispatches too)",
    "softmax": "adv.nn.softmax(x, axis=-1)",
    "log_softmax": "adv.nn.log_softmax(x, axis=-1)",
    "zero_": "adv.Variable.assign(zeros) (tensors are immutable)",
    "expand": "adv.broadcast_to(x, shape)",
    "narrow": "x[start:start + length] (slicing)",
    "masked_fill": "adv.where(mask, value, x)",
    "index_select": "adv.take(x, indices, axis=dim)",
    "gather": "adv.take_along_axis(x, indices, axis=dim)",
    "chunk": "adv.split(x, n, axis=dim)",
    "flatten_": "x.ravel()",
}
for _fn in ("exp", "log", "sqrt", "abs", "tanh", "sin", "cos", "sigmoid", "relu", "log1p", "expm1", "square",
            "sign", "floor", "ceil", "erf", "sinh", "cosh", "tan"):
    _where = "adv.nn" if _fn in ("sigmoid", "relu") else "adv"
    _TORCH_HINTS[_fn] = f"{_where}.{_fn}(x) (or np.{_fn}(x), which dispatches)" if _where == "adv" else f"{_where}.{_fn}(x)"
for _name in _TORCH_HINTS:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _Hint(_name))


class _VariableOnly(_Hint):
    """``t.assign`` (``assign_add``, ``assign_sub``) on a Tensor: an AttributeError that says what to write.

    TensorFlow's ``v[0:2].assign(new)`` changes a slice of a variable. Here
    ``v[0:2]`` is a new tensor (a getitem op, as every op on a variable), so
    an assign on it could not reach ``v``; the message gives the two ways.
    """

    __slots__ = ()

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        raise AttributeError(
            f"Tensor has no attribute '{self.name}': only a Variable changes, and this tensor is a value of its "
            f"own (v[0:2], like any op on a variable, makes a new tensor, so an assign could not reach v). To "
            f"change part of a variable, give it a whole new value: v.assign(adv.where(mask, new, v)), or "
            f"a = v.numpy(); a[0:2] = new; v.{self.name}(a) for the whole array.")


for _name in ("assign", "assign_add", "assign_sub"):
    setattr(Tensor, _name, _VariableOnly(_name))


class Variable(Tensor):
    """A tensor with a mutable value, watched automatically by every tape.

    ``assign``, ``assign_add`` and ``assign_sub`` replace the value; ops that
    read the variable earlier keep the value they read, so a gradient
    computed after an update is still the gradient of what was computed.

        >>> w = adv.Variable([1.0, 2.0], name="w")
        >>> w.assign_sub([0.5, 0.5]).numpy()
        array([0.5, 1.5])

    Values must be numeric (a list of strings, objects or datetimes is a
    ``TypeError`` here). Integer and bool variables are allowed, as in
    TensorFlow, and are never differentiable: tapes do not watch them, ops
    on them are not recorded for gradients, and ``tape.gradient`` with one
    as a source gives None with a warning that says to make it float, as
    TensorFlow (a step counter or a mask is a fine integer variable; a
    weight is not). They refuse a value they would change when casting it
    (``0.7`` into an integer, ``2`` into bool, ``300`` into int8), where
    numpy would silently truncate; whole floats (``3.0``) are taken.

    ``copy.copy(v)`` and ``copy.deepcopy(v)`` are new variables (a new
    identity for tapes, a value of their own) with the same name,
    ``trainable`` and dtype, as TensorFlow's.
    """

    __slots__ = ("trainable",)

    def __init__(self, value, trainable=True, name=None, dtype=None):
        super().__init__(value, dtype=dtype, name=name)
        self.trainable = bool(trainable)
        self._lineage = True

    def __copy__(self):
        """A new, independent variable holding the current value (a tape tells it apart from ``self``)."""
        return Variable(self._value, trainable=self.trainable, name=self.name)

    def __deepcopy__(self, memo):
        """As :meth:`__copy__`; one copy per variable however often a copied structure holds it."""
        new = memo.get(id(self))
        if new is None:
            new = memo[id(self)] = self.__copy__()
        return new

    def read_value(self):
        """The current value as a tensor, read as an op does: gradients flow back to the variable (TensorFlow's)."""
        from .ops import reshape
        return reshape(self, self._value.shape)

    @property
    def value(self):
        """The current value as a tensor (Keras 3's ``variable.value``, a property; TensorFlow spells it ``read_value()``)."""
        return self.read_value()

    def _checked(self, value, what, copy=True):
        var = f"variable {self.name!r}" if self.name else "the variable"
        if isinstance(value, Tensor):
            arr = value._value
        else:
            try:
                arr = value if type(value) is np.ndarray else _to_array(value, None)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{what} on {var}: {exc} The variable is unchanged.") from None
            if arr.dtype.kind not in "biufc":
                raise TypeError(f"{what}: {var} holds {self.dtype} numbers; the value is {arr.dtype} "
                                f"({_NOT_NUMERIC.get(arr.dtype.kind, 'not numbers')}). Give numbers, "
                                f"e.g. np.asarray(data, dtype='{self.dtype}'). The variable is unchanged.")
        current = self._value
        if arr.shape != current.shape:
            try:
                arr = np.broadcast_to(arr, self.shape)
            except ValueError:
                raise ValueError(
                    f"{what}: {var} has shape {self.shape}, the value has shape {arr.shape}. "
                    f"Give a value of shape {self.shape}. The variable is unchanged."
                ) from None
        if current.dtype.kind in "biu" and arr.dtype != current.dtype:
            _refuse_lossy(arr, current.dtype, f"{what}: {var}")
        if copy:
            return np.array(arr, dtype=current.dtype, copy=True)
        return arr if arr.dtype == current.dtype else arr.astype(current.dtype)

    def assign(self, value):
        """Set the value (same shape; cast to the variable's dtype). Returns the variable."""
        self._value = self._checked(value, "assign")
        if engine.state.recording:
            engine.assigned(self, value, "assign")
        return self

    def assign_add(self, delta):
        self._value = self._value + self._checked(delta, "assign_add")
        if engine.state.recording:
            engine.assigned(self, delta, "assign_add")
        return self

    def assign_sub(self, delta):
        given, delta = delta, self._checked(delta, "assign_sub", copy=False)
        if sys.getrefcount(self._value) <= _ONLY_ITS_HOLDER and self._value.base is None and \
                self._value.flags.writeable:
            self._value -= delta     # nothing but this variable holds its array (no record read it): in place
        else:
            self._value = self._value - delta
        if engine.state.recording:
            engine.assigned(self, given, "assign_sub")
        return self


def _label(t) -> str:
    """How messages name a tensor: ``'w'`` when it has a name, else ``(unnamed, shape (2,))``."""
    return repr(t.name) if t.name else f"(unnamed, shape {t.shape})"


def _refuse_lossy(arr: np.ndarray, dtype: np.dtype, what: str) -> None:
    """The TypeError for a value that casting to an integer or bool ``dtype`` would change (TensorFlow refuses too).

    numpy's cast truncates 0.7 to 0, wraps 300 into int8 and makes 2 True, so an update to a counter or
    a mask would be lost without a word. Lossless means: cast and cast back gives the value again.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        cast = arr.astype(dtype)
        changed = cast.astype(arr.dtype) != arr
    if not changed.any():
        return
    i = int(np.flatnonzero(changed)[0])
    raise TypeError(f"{what} holds {dtype}, and the value ({arr.dtype}) has {arr.reshape(-1)[i]!r}, which "
                    f"would become {cast.reshape(-1)[i]!r} in {dtype}. Fix: round or convert it yourself "
                    f"(np.round(value).astype('{dtype}')) if that is what you mean, or make the variable "
                    "floating: adv.Variable(value, dtype='float64'). The variable is unchanged.")


def constant(value, dtype=None, name=None) -> Tensor:
    """A tensor holding ``value``. Tapes do not watch it unless you call ``tape.watch``.

    Of a :class:`Variable`: a new tensor holding its current value (a snapshot that later ``assign`` calls
    do not change, as ``tf.constant(v)``). Of a tensor: that tensor (cast to ``dtype`` if given); with a
    ``name``, the same tensor for tapes under that name (the input keeps its own name).

    Python floats become float64, Python ints int64; numpy arrays keep their
    dtype unless ``dtype`` is given. The value is copied, so an array larger
    than ``adv.tensor.MAX_BYTES`` (2 GiB; a broadcast view counts in full)
    is refused before the copy.
    """
    if isinstance(value, Variable):
        return Tensor(value._value, dtype=dtype, name=name)
    if isinstance(value, Tensor):
        if dtype is None and name is None:
            return value
        from .ops import cast
        out = cast(value, dtype) if dtype is not None else value
        if name is not None and name != out.name:
            alias = Tensor._alias(out._id, out._value, out._node, name)
            alias._lineage = out._lineage
            out = alias
        return out
    return Tensor(value, dtype=dtype, name=name)


def as_tensor(value, like: Tensor | None = None) -> Tensor:
    """``value`` as a Tensor; a Python number takes the dtype of ``like`` (weak typing)."""
    if isinstance(value, Tensor):
        return value
    if like is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        kind = like._value.dtype.kind      # the usual operand (x / 2, 0.1 * g): checked first
        if kind in "fc" or (kind in "iu" and isinstance(value, int)):
            return Tensor._wrap(np.asarray(value, dtype=like._value.dtype))
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        from .ops import stack
        return stack([as_tensor(v, like) for v in value])
    return Tensor(value)


_NOT_NUMERIC = {"U": "strings", "S": "byte strings", "O": "Python objects", "M": "datetimes",
                "m": "time deltas", "V": "structured records"}

MAX_BYTES = 2 * 2 ** 30   # refuse to allocate one array (a weight, a copied constant, a one-hot) larger than this


def check_nbytes(what: str, shape, dtype, fix: str) -> None:
    """Refuse an array of ``shape`` and ``dtype`` over :data:`MAX_BYTES` before allocating it.

    ``what`` names the op or layer, ``fix`` says what to ask for instead. A
    learner's huge shape is nearly always a mistake (units=10**12, a depth
    that is a label value); raise ``adv.tensor.MAX_BYTES`` for a real one.
    """
    need = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize
    if need > MAX_BYTES:
        raise ValueError(f"{what}: shape {tuple(int(s) for s in shape)} of {np.dtype(dtype).name} needs {need:,} bytes "
                         f"({need / 2 ** 30:,.1f} GiB), more than the {MAX_BYTES / 2 ** 30:g} GiB limit "
                         f"(adv.tensor.MAX_BYTES); nothing was allocated. {fix}")


def _to_array(value, dtype) -> np.ndarray:
    """``value`` as a new numpy array of a numeric dtype (bool, integer, float, complex), or a clear error."""
    if isinstance(value, Tensor):
        value = value._value
    if dtype is None and type(value) is np.ndarray and value.dtype.kind in "biufc" and value.nbytes <= MAX_BYTES:
        return value.copy()         # the usual case (a batch of data): nothing to convert or refuse
    if isinstance(value, np.ndarray):
        check_nbytes("constant", value.shape, value.dtype if dtype is None else dtype,
                     "The array is copied in full (a broadcast view too): slice it first, or keep it small and "
                     "expand it with adv.broadcast_to(t, shape).")
    try:
        if dtype is not None:
            arr = np.array(value, dtype=np.dtype(dtype))
        elif isinstance(value, np.ndarray):
            arr = value.copy()
        elif isinstance(value, np.generic):
            arr = np.asarray(value)
        else:
            arr = np.array(value)
    except (ValueError, TypeError) as exc:
        what = f"dtype {dtype!r}" if dtype is not None else "an array"
        ragged = "inhomogeneous" in str(exc)
        raise (ValueError if ragged else TypeError)(
            f"cannot make a tensor ({what}) from {type(value).__name__} {value!r:.80}: "
            + ("its nested lists have different lengths (a ragged array). Give a rectangular array, "
               "padding the short rows." if ragged else
               f"{str(exc).rstrip('.')}. Tensors hold numeric dtypes only (bool, integers, floats, complex): "
               "give numbers, e.g. np.asarray(data, dtype='float64').")) from None
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"cannot make a tensor of dtype {arr.dtype} ({_NOT_NUMERIC.get(arr.dtype.kind, 'not numbers')}) "
                        f"from {type(value).__name__} {value!r:.80}: tensors hold numeric dtypes only (bool, "
                        "integers, floats, complex). Convert the data to numbers first, e.g. "
                        "np.asarray(data, dtype='float64').")
    return arr


def _holds_tensor(seq) -> bool:
    for v in seq:
        if isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _holds_tensor(v)):
            return True
    return False


def _values_tree(obj):
    """Tensors replaced by their values, without noting an escape (for results that carry no gradient)."""
    if isinstance(obj, Tensor):
        return obj._value
    if isinstance(obj, (list, tuple)):
        return type(obj)(_values_tree(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _values_tree(v) for k, v in obj.items()}
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


def _tracked(t) -> bool:
    """Does a recording tape track ``t`` (or would it, as a trainable variable read under the tape)?"""
    for tape in engine.state.recording:
        if t._id in tape._tracked or (type(t) is Variable and t.trainable and tape.watch_accessed_variables):
            return True
    return False


def _numpy_name(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    prefix = "np." + module[len("numpy."):] + "." if module.startswith("numpy.") else "np."
    return prefix + getattr(func, "__name__", repr(func))


def _refuse_if_tracked(name, args, kwargs):
    """The TypeError of a numpy function without a gradient rule applied to a tensor a tape tracks."""
    if not engine.state.recording:
        return
    for t in itertools.chain(_tensors_in(args), _tensors_in(kwargs)):
        if _tracked(t):
            if not name.startswith("np."):
                name = "np." + name
            hint = _NEAREST.get(name.split(".")[-1].split(" ")[0], "compute it from the supported ops (see the "
                                "'numpy functions on tensors' page)")
            if " into " in name:
                hint = "write a new tensor instead (a = a + t), tensors and the tape never write into arrays"
            raise TypeError(
                f"{name} has no gradient rule in autodiff_viz, and a GradientTape is tracking its input"
                f"{' ' + repr(t.name) if t.name else ''} (shape {t.shape}), so numpy would silently drop the gradient. Instead: "
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
)}
_VALUE_FUNCTIONS |= {"np.linalg.matrix_rank"}


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
    from . import ops
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
    from . import ops
    names = ("sum", "mean", "max", "min", "prod", "var", "std", "cumsum", "cumprod", "argmax", "argmin", "any",
             "all", "clip", "round", "dot", "squeeze", "swapaxes", "trace", "diagonal", "repeat", "take", "ravel",
             "argsort")
    for name in names:
        setattr(Tensor, name, _method(getattr(ops, name), name))
    Tensor.flatten = _method(ops.ravel, "flatten")
    Tensor.__round__ = lambda self, ndigits=None: ops.round(self, ndigits or 0)


def _method(op, name):
    def method(self, *args, **kwargs):
        if "keepdim" in kwargs or "dim" in kwargs:
            raise TypeError(_torch_kwargs(name, kwargs))
        return op(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``adv.{op.__name__}(t, ...)`` as a method (numpy's signature).\n\n{op.__doc__ or ''}"
    return method


def _torch_kwargs(name, kwargs):
    fixed = ", ".join(("keepdims" if k == "keepdim" else "axis" if k == "dim" else k) + f"={v!r}"
                      for k, v in kwargs.items())
    return (f"t.{name}() takes numpy's keywords, not PyTorch's: write t.{name}({fixed}) "
            "(keepdims=, axis= instead of keepdim=, dim=).")


_install_methods()


class _Holder:
    __slots__ = ("_value",)


def _refs_of_a_value_only_its_holder_holds() -> int:
    """What ``sys.getrefcount(self._value)`` gives in :meth:`Variable.assign_sub` when only ``self`` holds the array.

    2 in Python (the slot and the call's argument); compiled code (setup.py)
    may count otherwise. Measured with the same expression, so an array a
    record still reads is never updated in place.
    """
    self = _Holder()
    self._value = np.empty(1)
    return sys.getrefcount(self._value)


_ONLY_ITS_HOLDER = _refs_of_a_value_only_its_holder_holds()
