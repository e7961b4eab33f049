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
import weakref
from typing import TYPE_CHECKING

import numpy as np

from ..base.state import PYTHON_NUMBER, config, resolve_location, state, user_frame, user_location

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

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

    # _made_at: the learner's line that made a constant or a variable (why-None quotes it); ops leave it unset
    __slots__ = ("_value", "_id", "name", "_node", "_lineage", "_keras_mask", "_made_at", "__weakref__")
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
        left_the_tape(self, "numpy()")
        return self._value.copy()

    def item(self):
        """The value as a Python number (only for one-element tensors)."""
        left_the_tape(self, "item()")
        return self._value.item()

    def tolist(self):
        left_the_tape(self, "tolist()")
        return self._value.tolist()

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: a read-only view of the value (no copy); ``np.array(t)``: a writable copy.

        Read-only because the array is the tensor's own: writing into it would change an immutable tensor
        and, silently, gradients computed from the values a tape saved. numpy 2 passes ``copy=True`` when
        it wants an array of its own (``np.array``), and a new dtype makes a new array anyway.
        """
        left_the_tape(self, "np.asarray()")
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
        left_the_tape(self, "float()")
        return float(self._value)

    def __int__(self):
        left_the_tape(self, "int()")
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
        left_the_tape(self, "an index")
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
        else:   # both ways keep the gradient to t and to the new value (a round trip through numpy would cut it)
            fix = ("make a new tensor that keeps the gradient: mask = np.zeros(t.shape, bool); mask[index] = True; "
                   "t = adv.where(mask, new, t); or, for a loop that fills an output piece by piece (out[n, f, i, j] "
                   "= ...), append each piece to a list and build it with adv.stack(pieces) (then reshape)")
        raise TypeError(f"{type(self).__name__} {var} does not support item assignment ({var}[...] = ...): "
                        f"tensors are immutable, and ops that read one keep its value for the gradient. "
                        f"Instead, {fix}.")

    def __copy__(self):
        """A tensor is immutable, so a copy is the tensor itself (as ``copy.copy`` of a str or a tuple)."""
        return self

    def __deepcopy__(self, memo):
        """The tensor itself (immutable, as ``copy.deepcopy`` of a str); its identity on tapes stays the same."""
        return self

    def __getstate__(self):
        """The slots for pickle, the learner's line resolved to ``(file, line)`` (a code object cannot be pickled)."""
        state = object.__getstate__(self)
        slots = state[1] if isinstance(state, tuple) else None
        if slots and slots.get("_made_at") is not None:
            slots["_made_at"] = resolve_location(slots["_made_at"])
        return state

    def __hash__(self):
        return self._id

    def __repr__(self):
        kind = type(self).__name__
        name = f", name={self.name!r}" if self.name else ""
        body = np.array2string(self._value, precision=4, threshold=20, edgeitems=3,
                               separator=", ", prefix=" " * (len(kind) + 1))
        return f"{kind}({body}, shape={self.shape}, dtype={self.dtype}{name})"

    # ----- numpy interoperability ------------------------------------------

    # ----- operators (defined below the class with _binary / _unary) -------

    # ----- methods that mirror numpy (most are installed by _install_methods below) ---

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
    # x.max(1).indices / .values: numpy's max returns the values alone
    "indices": "x.argmax(axis=1) for the indices of x.max(1) (x.max(axis=1) returns the values alone)",
    "values": "x.max(axis=1) itself: numpy's max returns the values alone (x.argmax(axis=1) the indices)",
}
for _fn in ("exp", "log", "sqrt", "abs", "tanh", "sin", "cos", "sigmoid", "relu", "log1p", "expm1", "square",
            "sign", "floor", "ceil", "erf", "sinh", "cosh", "tan"):
    _where = "adv.nn" if _fn in ("sigmoid", "relu") else "adv"
    _TORCH_HINTS[_fn] = (f"{_where}.{_fn}(x) (or np.{_fn}(x), which dispatches)" if _where == "adv"
                         else f"{_where}.{_fn}(x)")
for _name in _TORCH_HINTS:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _Hint(_name))


#: a slice of a variable (``v[0:2]``, by the slice tensor's id) → (the variable, weakly; the normalized index)
_SLICE_OF: dict = {}


def note_slice(part: Tensor, variable: Variable, index: tuple) -> None:
    """Remember that ``part`` is ``variable[index]``, so ``part.assign(new)`` writes into the variable (as
    TensorFlow's ``v[0:2].assign(new)``). The note goes when ``part`` does."""
    _SLICE_OF[part._id] = (weakref.ref(variable), index)
    weakref.finalize(part, _SLICE_OF.pop, part._id, None)


class _VariableOnly(_Hint):
    """``t.assign`` (``assign_add``, ``assign_sub``) on a Tensor: on a slice of a variable, the write into it;
    on any other tensor, an AttributeError that says what to write.

    ``v[0:2]`` is a new tensor (a getitem op, as every op on a variable); read
    straight off a variable, it remembers where it came from (:func:`note_slice`),
    so ``v[0:2].assign(new)`` changes those entries of ``v``, as in TensorFlow.
    Any other tensor is a value of its own that no assign could reach.
    """

    __slots__ = ()

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        found = _SLICE_OF.get(obj._id)
        variable = found[0]() if found is not None else None
        if variable is not None:
            index, how = found[1], self.name
            return lambda value, use_locking=False, name=None, read_value=True: variable._write_at(index, value,
                                                                                                   how)
        raise AttributeError(
            f"Tensor has no attribute '{self.name}': only a Variable changes, and this tensor is a value of its "
            f"own (an op's result, which an assign could not reach). To change part of a variable, index the "
            f"variable itself: v[0:2].{self.name}(new) (or v.assign(adv.where(mask, new, v)) for a mask).")


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

    ``constraint`` is TensorFlow's and Keras': ``None`` unless given (``Variable(v, constraint=f)``, or a
    layer's ``add_weight(constraint=f)``); a custom training loop applies it after each step
    (``v.assign(v.constraint(v))``), as ``fit`` does.
    """

    __slots__ = ("trainable", "_path", "constraint")

    def __init__(self, value, trainable=True, name=None, dtype=None, constraint=None):
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Variable: the constraint must be callable (a function f(variable) -> new value), "
                             f"got {type(constraint).__name__} {constraint!r}.")
        super().__init__(value, dtype=dtype, name=name)
        self.trainable = bool(trainable)
        self.constraint = constraint
        self._path = None           # set by whatever owns it (add_weight, an optimizer): "dense/kernel"
        self._lineage = True
        # the learner's line that made it (adv.Variable(...), add_weight), so why-None can quote it
        self._made_at = user_location() if config.capture_locations else None

    def __copy__(self):
        """A new, independent variable holding the current value (a tape tells it apart from ``self``)."""
        new = Variable(self._value, trainable=self.trainable, name=self.name, constraint=self.constraint)
        new._path = self._path
        return new

    def __deepcopy__(self, memo):
        """As :meth:`__copy__`; one copy per variable however often a copied structure holds it."""
        new = memo.get(id(self))
        if new is None:
            new = memo[id(self)] = self.__copy__()
        return new

    @property
    def path(self):
        """Keras 3's ``variable.path``: where the variable lives, unique in a model.

        As Keras 3, ``name`` is the short name its owner gave it and ``path`` adds the owners around it:
        a ``Dense`` layer named ``"dense"`` holds ``name == "kernel"``, ``path == "dense/kernel"``; inside
        a ``Sequential`` built as one model, ``"sequential/dense/kernel"``; an optimizer's slot is
        ``"adam/dense_kernel_momentum"``. A variable made on its own, ``adv.Variable(0.0, name="w")``, has
        ``path == name == "w"`` (TensorFlow's ``tf.Variable`` and ``keras.Variable`` alike). Messages and
        tables that list weights of several layers use the path; a drawing of a layer's box, the name.
        """
        return self._path or self.name

    def read_value(self):
        """The current value as a tensor, read as an op does: gradients flow back to the variable (TensorFlow's)."""
        return self.reshape(self._value.shape)     # an op (installed by core.methods): recorded like any read

    @property
    def value(self):
        """The current value as a tensor (Keras 3's ``variable.value``, a property; TensorFlow spells it
        ``read_value()``)."""
        return self.read_value()

    def _checked(self, value, what, copy=True):
        var = f"variable {self.path!r}" if self.path else "the variable"
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
        if state.recording:
            assigned(self, value, "assign")
        return self

    def assign_add(self, delta):
        self._value = self._value + self._checked(delta, "assign_add")
        if state.recording:
            assigned(self, delta, "assign_add")
        return self

    def _write_at(self, index, value, how):
        """``v[index].assign(value)`` (``assign_add``, ``assign_sub``; ``scatter_nd_*`` with an index tuple):
        a new array with those entries written, so ops that read ``v`` before keep what they read.

        Like ``assign``, a write is not differentiable (TensorFlow's neither): a tape notes it with its line,
        and ``tape.explain`` names it when a gradient stops there.
        """
        var = f"variable {self.path!r}" if self.path else "the variable"
        what = f"{how} into {var}[...]"
        part = self._value[index]
        arr = value._value if isinstance(value, Tensor) else _to_array(value, None)
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"{what}: the value is {arr.dtype}, not numbers. The variable is unchanged.")
        if np.shape(part) != arr.shape:
            try:
                arr = np.broadcast_to(arr, np.shape(part))
            except ValueError:
                raise ValueError(f"{what}: the slice has shape {np.shape(part)}, the value has shape {arr.shape}. "
                                 f"Give a value of shape {np.shape(part)}. The variable is unchanged.") from None
        if self.dtype.kind in "biu" and arr.dtype != self.dtype:
            _refuse_lossy(arr, self.dtype, what)
        new = self._value.copy()
        if how in ("assign", "scatter_nd_update"):
            new[index] = arr
        elif how in ("assign_add", "scatter_nd_add"):
            np.add.at(new, index, arr.astype(new.dtype, copy=False))
        else:
            np.subtract.at(new, index, arr.astype(new.dtype, copy=False))
        self._value = new
        if state.recording:
            assigned(self, value, how)
        return self

    def scatter_nd_update(self, indices, updates, use_locking=False, name=None):
        """``v.scatter_nd_update(indices, updates)``: the entries (or slices) at ``indices[..., :]`` replaced
        by ``updates`` (the last write wins where an index repeats). Returns the variable."""
        return self._write_at(self._nd_index(indices, "scatter_nd_update"), updates, "scatter_nd_update")

    def scatter_nd_add(self, indices, updates, use_locking=False, name=None):
        """``v.scatter_nd_add(indices, updates)``: ``updates`` added at ``indices`` (repeats add up)."""
        return self._write_at(self._nd_index(indices, "scatter_nd_add"), updates, "scatter_nd_add")

    def scatter_nd_sub(self, indices, updates, use_locking=False, name=None):
        """``v.scatter_nd_sub(indices, updates)``: ``updates`` subtracted at ``indices``."""
        return self._write_at(self._nd_index(indices, "scatter_nd_sub"), updates, "scatter_nd_sub")

    def _nd_index(self, indices, how):
        idx = np.asarray(indices._value if isinstance(indices, Tensor) else indices)
        if idx.dtype.kind not in "iu" or idx.ndim < 1 or idx.shape[-1] > self.ndim:
            raise TypeError(f"{how}: indices must be integers of shape (..., k) with k ≤ {self.ndim} (index tuples "
                            f"into the variable's first k axes), got {idx.dtype} of shape {idx.shape}.")
        return tuple(np.moveaxis(idx, -1, 0))

    def assign_sub(self, delta):
        given, delta = delta, self._checked(delta, "assign_sub", copy=False)
        if sys.getrefcount(self._value) <= _ONLY_ITS_HOLDER and self._value.base is None and \
                self._value.flags.writeable:
            self._value -= delta     # nothing but this variable holds its array (no record read it): in place
        else:
            self._value = self._value - delta
        if state.recording:
            assigned(self, given, "assign_sub")
        return self


def full_name(t) -> str | None:
    """The name messages, tables and traces use: a variable's ``path`` (``"dense/kernel"``: the layer is
    part of it, so two layers' kernels differ), else the tensor's ``name``."""
    return getattr(t, "_path", None) or t.name


def _label(t) -> str:
    """How messages name a tensor: ``'w'`` (a layer's weight by its path, ``'dense/kernel'``) when it has a
    name, else ``(unnamed, shape (2,))``."""
    name = full_name(t)
    return repr(name) if name else f"(unnamed, shape {t.shape})"


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
    raise TypeError(f"{what} holds {dtype}, and the value ({arr.dtype}) has {arr.reshape(-1)[i].item()!r}, which "
                    f"would become {cast.reshape(-1)[i].item()!r} in {dtype}. Fix: round or convert it yourself "
                    f"(np.round(value).astype('{dtype}')) if that is what you mean, or make the variable "
                    "floating: adv.Variable(value, dtype='float64'). The variable is unchanged.")


def constant(value: ArrayLike | Tensor, dtype: DTypeLike | None = None, name: str | None = None) -> Tensor:
    """A tensor holding ``value``. Tapes do not watch it unless you call ``tape.watch``.

    Of a :class:`Variable`: a new tensor holding its current value (a snapshot that later ``assign`` calls
    do not change, as ``tf.constant(v)``). Of a tensor: that tensor (cast to ``dtype`` if given); with a
    ``name``, the same tensor for tapes under that name (the input keeps its own name).

    Python floats become float64, Python ints int64; numpy arrays keep their
    dtype unless ``dtype`` is given. The value is copied, so an array larger
    than ``adv.tensor.MAX_BYTES`` (2 GiB; a broadcast view counts in full)
    is refused before the copy.
    """
    if isinstance(value, Tensor) and not isinstance(value, Variable):
        if dtype is None and name is None:
            return value
        out = value.astype(dtype) if dtype is not None else value     # the cast op, so tapes see it
        if name is not None and name != out.name:
            alias = Tensor._alias(out._id, out._value, out._node, name)
            alias._lineage = out._lineage
            out = alias
        return out
    out = Tensor(value._value if isinstance(value, Variable) else value, dtype=dtype, name=name)
    # the learner's line, kept cheap (code object and offset, resolved only by a diagnosis): an unwatched
    # constant has no recorded op to point at, so `explain` quotes the line that made it
    out._made_at = user_frame(skip=0) if config.capture_locations else None
    return out


def as_tensor(value, like: Tensor | None = None) -> Tensor:
    """``value`` as a Tensor; a Python number takes the dtype of ``like`` (weak typing)."""
    if isinstance(value, Tensor):
        return value
    if like is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        kind = like._value.dtype.kind      # the usual operand (x / 2, 0.1 * g): checked first
        if kind in "fc" or (kind in "iu" and isinstance(value, int)):
            out = Tensor._wrap(np.asarray(value, dtype=like._value.dtype))
            if type(value) is int or type(value) is float:     # typed in the code, not a numpy scalar
                out._made_at = PYTHON_NUMBER
            return out
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return np.stack([as_tensor(v, like) for v in value])    # dispatches to the stack op (core.methods)
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
        raise TypeError(f"cannot make a tensor of dtype {arr.dtype} "
                        f"({_NOT_NUMERIC.get(arr.dtype.kind, 'not numbers')}) "
                        f"from {type(value).__name__} {value!r:.80}: tensors hold numeric dtypes only (bool, "
                        "integers, floats, complex). Convert the data to numbers first, e.g. "
                        "np.asarray(data, dtype='float64').")
    return arr


def _holds_tensor(seq) -> bool:
    for v in seq:
        if isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _holds_tensor(v)):
            return True
    return False


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


def left_the_tape(tensor: Tensor, how: str) -> None:
    """Note that ``tensor``'s value left as numpy or a Python number while tapes record."""
    for tape in state.recording:
        if tensor._id in tape._tracked or (
                type(tensor) is Variable and tensor.trainable and tape.watch_accessed_variables):
            tape._escaped(tensor, how, user_location() if config.capture_locations else None)


def assigned(variable: Variable, value, how: str) -> None:
    """Note that a tracked tensor ``value`` was stored in ``variable`` (``how``: ``"assign"`` ...) while tapes record.

    An assign is not differentiable: the variable is a leaf afterwards, so a
    loss that reads it does not depend on ``value``'s history. The note lets
    ``tape.explain`` say where the gradient stopped.
    """
    if not isinstance(value, Tensor):
        _assigned_escaped(variable, value, how)
        return
    for tape in state.recording:
        if value._id in tape._tracked or (
                type(value) is Variable and value.trainable and tape.watch_accessed_variables):
            tape._assigned(variable, value, how, user_location() if config.capture_locations else None)


def _assigned_escaped(variable: Variable, value, how: str) -> None:
    """An array stored in ``variable`` that is the value of a tracked tensor which left a tape (``.numpy()``).

    ``v.assign((w * l).numpy())`` goes through numpy on its way into the
    variable: the tape noted the escape, and this note ties the variable to
    the tensor that escaped, so a diagnosis names the assign, not "not used".
    """
    arr = value if isinstance(value, np.ndarray) else None
    if arr is None or arr.dtype.kind not in "fc":
        return
    for tape in state.recording:
        for esc in reversed(tape._escapes):
            if esc.value.shape == arr.shape and np.array_equal(esc.value, arr):
                tape._assigned(variable, Tensor._alias(esc.tensor_id, esc.value), how,
                               user_location() if config.capture_locations else None)
                break


def _tracked(t) -> bool:
    """Does a recording tape track ``t`` (or would it, as a trainable variable read under the tape)?"""
    for tape in state.recording:
        if t._id in tape._tracked or (type(t) is Variable and t.trainable and tape.watch_accessed_variables):
            return True
    return False
