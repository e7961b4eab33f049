"""Recording TensorFlow: every eager op run inside ``with adv.tf.record() as rec:``.

The hook. TensorFlow calls the functions registered with
``op_callbacks.add_op_callback`` right after every eager op runs (this is how
``tf.debugging.enable_check_numerics`` sees each op): with the op type
(``"MatMul"``), its input and output ``EagerTensor`` objects and its
attributes. It sees what TensorFlow executes, including the ops inside Keras
layers, so it is the one hook that catches every way of computing. The other
candidates were weaker: wrapping the ``tf.*`` functions misses operators and
Keras internals; ``tf.Module`` / Keras layer hooks see calls, not ops; the
graph of a ``tf.function`` only exists for code under ``tf.function``.
Measured (``benchmarks/t2_tf_record.py``): one Keras CNN training step costs
about the same with and without the callback (see docs/tensorflow.md).

What the callback cannot see is added by small wrappers, installed while a
recording is active and taken out when the last one ends:

* ``GradientTape`` entering, leaving, ``stop_recording``, ``watch`` and
  ``gradient`` / ``jacobian`` (which tapes are recording when an op runs,
  what each watches, and each ``tape.gradient`` call with its targets,
  sources and ``output_gradients``). Tapes opened inside a recording keep
  their record after ``gradient`` (TensorFlow's tape is created persistent
  underneath; the Python object still refuses a second ``gradient`` call of
  a non-persistent tape exactly as before), so a trace can ask that same
  tape for the gradient of every intermediate: the values are TensorFlow's
  own.
* variable reads (``resource_variable_ops.variable_accessed``, called by
  TensorFlow before every read), variable creation (a
  ``tf.variable_creator_scope``) and assignment (the ``Assign*VariableOp``
  ops the callback sees);
* values leaving TensorFlow: ``.numpy()``, ``float(t)``, ``int(t)``,
  ``np.asarray(t)`` and every ``np.*`` function given a tensor (they go
  through ``__array__``), and values coming back: ``tf.constant(...)``,
  ``tf.convert_to_tensor(...)``;
* Keras 3 layer and model calls, read from Keras' own name-scope stack: an op
  inside ``model.dense_1`` gets the scope ``sequential/dense_1``, so a graph
  folds by layer.

``tf.function``: a function the user calls under the recording runs as one
graph, whose ops never reach the eager callback. Rather than record a
half-picture, the call is refused before it runs, with the way out
(``tf.config.run_functions_eagerly(True)``, or call the Python function).
Keras' own steps (``fit``, ``evaluate``, ``predict``, ``train_on_batch``) run
eagerly under the recording, as with ``run_eagerly=True``, so that their
forward pass, loss and gradient call are recorded; the model's graph step
comes back after the recording (:mod:`autodiff_viz.tf.keras_steps`). Functions
TensorFlow or Keras call for themselves (``tf.data``'s; Keras' jit-compiled
grouped convolution on CPU) run and appear as one opaque op (kind
``"function"``); the variables such an op takes by handle are recorded as
reads, so a trace shows the values it used even after an optimizer step.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf
from tensorflow.python import pywrap_tfe as _pywrap_tfe
from tensorflow.python.eager import backprop as _backprop
from tensorflow.python.eager import tape as _tape_mod
from tensorflow.python.eager.polymorphic_function import polymorphic_function as _polyfn
from tensorflow.python.framework import op_callbacks as _op_callbacks
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import resource_variable_ops as _rvo
from tensorflow.python.ops.gen_resource_variable_ops import read_variable_op as _read_variable

from ..base import naming
from ..bridges import recordings
from . import keras_steps, letgo, provenance
from .keys import tensor_key, trainable_dtype, unusable_sources

if TYPE_CHECKING:
    from typing import Any, Iterator

    from ..diagnosis.walk import Explanation, Explanations
    from ..records.traces.model import Trace

try:   # Keras 3's name-scope stack (layers and models push themselves on call), and its optimizers
    from keras.src.backend.common import global_state as _keras_state
    from keras.src.backend.tensorflow import trainer as _keras_trainer
    from keras.src.optimizers import base_optimizer as _keras_optimizer
except ImportError:  # pragma: no cover - Keras 3 ships with tensorflow 2.21
    _keras_state = _keras_optimizer = _keras_trainer = None


_ESCAPES = {"numpy": "numpy()", "__float__": "float()", "__int__": "int()", "__index__": "int()",
            "__array__": "np.asarray()", "item": "item()", "tolist": "tolist()"}
_REWRAPS = ("constant", "convert_to_tensor")
#: ops that write into a variable -> the input that holds the value written (a sliced ``v[i, j].assign(x)`` is
#: ``ResourceStridedSliceAssign``, ``scatter_nd_update`` a ``ResourceScatterNdUpdate``); recorded as ``assign``
#: with inputs ``[handle, value, *the rest]``
_ASSIGN_OPS = {"AssignVariableOp": 1, "AssignAddVariableOp": 1, "AssignSubVariableOp": 1,
               "ResourceStridedSliceAssign": 4, "ResourceScatterUpdate": 2, "ResourceScatterAdd": 2,
               "ResourceScatterSub": 2, "ResourceScatterMul": 2, "ResourceScatterDiv": 2, "ResourceScatterMin": 2,
               "ResourceScatterMax": 2, "ResourceScatterNdUpdate": 2, "ResourceScatterNdAdd": 2,
               "ResourceScatterNdSub": 2, "ResourceScatterNdMin": 2, "ResourceScatterNdMax": 2}
_CALL_OPS = ("StatefulPartitionedCall", "PartitionedCall")   # with "__inference_…", "__forward_…": a tf.function
_DT_RESOURCE = tf.resource.as_datatype_enum
_ACTIVE: list = []           # recordings whose ``with`` block is running (any thread)
_PATCHES: list = []          # (owner, attribute, original) while at least one recording is active
_LOCK = threading.RLock()




_NO_EXTRA: dict = {}     # shared by records that keep nothing extra (only a tape call's own ``extra`` is written)
_VALUE_KINDS = frozenset(("op", "read", "rewrap", "function"))    # records whose outputs are values
_NAMING_KINDS = _VALUE_KINDS | {"create"}                         # records a line's name may be given to
_SETTLED_KINDS = frozenset(("op", "function", "assign"))    # records whose inputs may be values let go of
_TAPED_KINDS = frozenset(("op", "read", "function", "assign"))   # records a tape follows from what it watched


def _watches(watched: set, inputs) -> bool:
    """Does a tape that follows ``watched`` (tensor ids) record an op on ``inputs``: one of them watched and of a
    dtype a tape differentiates."""
    for t in inputs:
        if getattr(t, "_id", None) in watched and trainable_dtype(t.dtype):
            return True
    return False


@dataclass(eq=False, slots=True)
class Op:
    """One recorded event.

    ``kind`` is ``"op"`` (a computation), ``"read"`` (a variable read:
    ``ReadVariableOp``, input the variable's handle), ``"assign"``
    (``v.assign``/``assign_add``/``assign_sub``), ``"create"`` (a
    ``tf.Variable`` made; output the handle, ``extra['init']`` the tensor it
    was made from when one was given), ``"escape"`` (a value left as numpy
    or a Python number), ``"rewrap"`` (``tf.constant`` /
    ``tf.convert_to_tensor`` from plain values), ``"function"`` (a
    ``tf.function`` that TensorFlow or Keras ran as one graph), ``"watch"``,
    ``"gradient"`` / ``"jacobian"`` (the tape calls), ``"update"`` (a Keras optimizer's
    ``apply_gradients``: one record, inputs the handles of the variables it writes). An op outside every layer
    keeps in ``extra['called']`` what the learner's line called: the library functions from that line down to
    the op, outermost first, and the line's bytecode offset (see :func:`autodiff_viz.tf.trace.scope_calls`).

    ``tapes``: ids of the ``GradientTape`` objects that recorded this op;
    ``recording``: ids of the tapes that were recording when it ran (a tape
    records an op only if it was recording *and* watched one of its
    floating inputs).
    """

    index: int
    name: str
    kind: str
    inputs: list
    outputs: list
    location: tuple | None
    assigned: str | None
    scope: str
    tapes: tuple = ()
    recording: tuple = ()
    attrs: tuple = ()
    extra: dict = field(default_factory=dict)


def _held(cache: dict, value: tuple) -> tuple:
    """One shared tuple per distinct small value (a place, a set of tape numbers): a step makes hundreds of
    records, and with these shared and :class:`Op` slotted the Python objects of a recorded Keras LSTM step went
    from 0.73 to 0.58 MB (``tracemalloc``)."""
    return cache.setdefault(value, value)


class TapeInfo:
    """What a recording knows of one ``tf.GradientTape``: its options, what it watched, its record."""

    def __init__(self, number, tape):
        self.number = number
        self.tape = tape
        self.persistent = tape._persistent
        self.watch_accessed_variables = tape._watch_accessed_variables
        self.watched: set = set()       # tensor ids (``t._id``; a variable: its handle's) the tape follows
        self.watch_calls: list = []     # op indices of the watch() events
        self.cpp = None                 # TensorFlow's tape (kept: a trace asks it for gradients later)
        self.enter = None               # location of the ``with``
        self.spans: list = []           # [start_op, end_op) ranges of records made while it was recording
        self.persistent_underneath = False

    @property
    def recording(self) -> bool:
        return bool(self.tape._recording)


def assigned_name(filename: str, lineno: int) -> str | None:
    """The variable a recorded source line assigns (``h = tf.tanh(z)`` → ``h``), or None."""
    return naming.assigned_name_at(filename, lineno)


def _tensors(obj, out):
    if isinstance(obj, (tf.Tensor, tf.Variable)) or hasattr(obj, "_id") and hasattr(obj, "dtype"):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out




# ---------------------------------------------------------------------------
# The wrappers (installed once for all active recordings)
# ---------------------------------------------------------------------------
def _recordings():
    me = threading.get_ident()
    return [r for r in _ACTIVE if r._thread == me and not r._busy]


def _patch(owner, name, make):
    original = getattr(owner, name)
    _PATCHES.append((owner, name, original))
    setattr(owner, name, make(original))


def _install():
    def push_new_tape(original):
        @functools.wraps(original)
        def call(persistent=False, watch_accessed_variables=True):
            if _recordings():       # keep the record after gradient(): a trace asks the same tape again
                return original(True, watch_accessed_variables)
            return original(persistent, watch_accessed_variables)
        return call

    def push(original):
        @functools.wraps(original)
        def call(self):
            fresh = self._tape is None
            out = original(self)
            for rec in _recordings():
                rec._tape_pushed(self, fresh)
            return out
        return call

    def pop(original):
        @functools.wraps(original)
        def call(self):
            out = original(self)
            for rec in _recordings():
                rec._tape_popped(self)
            return out
        return call

    def watch(original):
        @functools.wraps(original)
        def call(self, tensor):
            out = original(self, tensor)
            for rec in _recordings():
                rec._watched(self, tensor)
            return out
        return call

    def differentiate(kind):
        def make(original):
            @functools.wraps(original)
            def call(self, target, sources, *args, **kwargs):
                recs = _recordings()
                events = [rec._gradient_called(kind, self, target, sources, args, kwargs) for rec in recs]
                for rec in recs:
                    rec._busy = True
                try:
                    result = original(self, target, sources, *args, **kwargs)
                except AttributeError as err:
                    wrong = unusable_sources(sources)
                    if not wrong or "_id" not in str(err):
                        raise
                    more = f"\n(and {len(wrong) - 1} more source(s) that are not tensors)" if len(wrong) > 1 else ""
                    raise AttributeError(f"tape.{kind} ({err}): {wrong[0]}{more}") from err
                finally:
                    for rec in recs:
                        rec._busy = False
                for ev in events:
                    ev.extra["result"] = result
                return result
            return call
        return make

    def accessed(original):
        @functools.wraps(original)
        def call(variable):
            for rec in _recordings():
                rec._variable_read(variable)
            return original(variable)
        return call

    def escape(name):
        def make(original):
            @functools.wraps(original)
            def call(self, *args, **kwargs):
                out = original(self, *args, **kwargs)
                by_user = provenance.PACKAGES.called_by_user()
                for rec in _recordings():
                    rec._escaped(self, _ESCAPES[name], out, library=not by_user)
                return out
            return call
        return make

    def rewrap(original):
        @functools.wraps(original)
        def call(value, *args, **kwargs):
            out = original(value, *args, **kwargs)
            if provenance.PACKAGES.called_by_user() and isinstance(out, tf.Tensor):
                for rec in _recordings():
                    rec._rewrapped(original.__name__, value, out)
            return out
        return call

    def tf_function(original):
        @functools.wraps(original)
        def call(self, *args, **kwargs):
            if _recordings() and not self._run_functions_eagerly and not tf.config.functions_run_eagerly() \
                    and provenance.PACKAGES.called_by_user():
                loc = provenance.LIBRARY.user_line()
                where = f" at {naming.short_place(*loc)}" if loc else ""
                raise RuntimeError(
                    f"adv.tf.record: the tf.function '{self._name}' was called{where} inside the recording. "
                    "A tf.function runs as one TensorFlow graph, so its ops never reach the recording one by "
                    "one and a trace of it would be a guess. Nothing ran. Fix: record it eagerly — call "
                    "tf.config.run_functions_eagerly(True) before the `with adv.tf.record()` block (and False "
                    f"after), or call the plain Python function ({self._name}.python_function(...)).")
            return original(self, *args, **kwargs)
        return call

    def fast_path(original):
        # TensorFlow's C++ fast path reads a tf.Variable given straight to an op (tf.sin(v)) without calling
        # any Python hook: note which inputs are variables, so the callback can record those reads.
        @functools.wraps(original)
        def call(*args):
            if _PLAIN_ARGS.issuperset(map(type, args[3:])):
                return original(*args)
            recs = _recordings()
            found = [(j, a) for j, a in enumerate(_flat(args[3:])) if _is_variable(a)] if recs else ()
            if not found:
                if recs:
                    _PLAIN_ARGS.update(t for t in map(type, args[3:]) if not issubclass(t, (list, tuple)))
                return original(*args)
            for rec in recs:
                rec._pending.append((args[1], found))
            try:
                return original(*args)
            finally:
                for rec in recs:
                    rec._pending.pop()
        return call

    _patch(_pywrap_tfe, "TFE_Py_FastPathExecute", fast_path)
    _patch(_tape_mod, "push_new_tape", push_new_tape)
    _patch(_backprop.GradientTape, "_push_tape", push)
    _patch(_backprop.GradientTape, "_pop_tape", pop)
    _patch(_backprop.GradientTape, "watch", watch)
    _patch(_backprop.GradientTape, "gradient", differentiate("gradient"))
    _patch(_backprop.GradientTape, "jacobian", differentiate("jacobian"))
    _patch(_backprop.GradientTape, "batch_jacobian", differentiate("jacobian"))
    _patch(_rvo, "variable_accessed", accessed)
    base = _ops._EagerTensorBase
    for name in ("numpy", "__float__", "__int__", "__index__", "__array__"):
        if name in base.__dict__:
            _patch(base, name, escape(name))
    for name in _REWRAPS:
        _patch(tf, name, rewrap)
    # numpy reads an EagerTensor through the buffer protocol, which no Python hook sees; numpy's own
    # dispatch protocols do see np.* calls on tensors, so the recording answers them (same values).
    base.__array_function__ = _array_function
    base.__array_ufunc__ = _array_ufunc
    _PATCHES.append((base, "__array_function__", None))
    _PATCHES.append((base, "__array_ufunc__", None))
    _patch(_polyfn.Function, "__call__", tf_function)
    if _keras_optimizer is not None:
        _patch(_keras_optimizer.BaseOptimizer, "apply", lambda apply: keras_steps.keras_update(apply, _recordings))
    if _keras_trainer is not None:
        for kind in ("train", "test", "predict"):
            _patch(_keras_trainer.TensorFlowTrainer, f"make_{kind}_function",
                   keras_steps.keras_step(f"{kind}_function", _recordings))


def _flat(items):
    out = []
    for a in items:
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out


def _is_variable(a) -> bool:
    """A ``tf.Variable`` or a Keras variable (asked once per class: every input of every fast-path op)."""
    cls = type(a)
    known = _variable_class.get(cls)
    if known is None:
        known = _variable_class[cls] = issubclass(cls, tf.Variable) or hasattr(a, "handle") \
            and hasattr(a, "trainable") and not isinstance(a, tf.Tensor)
    return known


_variable_class: dict = {}
#: classes of fast-path arguments that are neither a variable nor a list of inputs (tensors, strings, numbers,
#: dtypes …): a call given only these has no variable to note, which a set look-up per argument tells
_PLAIN_ARGS: set = set()


def _uninstall():
    keras_steps.drop_eager_steps()
    while _PATCHES:
        owner, name, original = _PATCHES.pop()
        if original is None:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


_REFLECTED = {np.add: "__radd__", np.subtract: "__rsub__", np.multiply: "__rmul__", np.true_divide: "__rtruediv__",
              np.power: "__rpow__", np.matmul: "__rmatmul__", np.floor_divide: "__rfloordiv__", np.mod: "__rmod__"}


def _to_numpy(obj, found):
    if isinstance(obj, _ops._EagerTensorBase):
        found.append(obj)
        return obj._numpy()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(o, found) for o in obj)
    return obj


def _escape_all(found, how):
    if found and provenance.PACKAGES.called_by_user(3):
        for rec in _recordings():
            for t in found:
                rec._escaped(t, how, None)


def _array_function(self, func, types, args, kwargs):
    """``np.mean(t)`` and friends while recording: the escape is noted, numpy computes on the values."""
    found = []
    args, kwargs = _to_numpy(args, found), {k: _to_numpy(v, found) for k, v in kwargs.items()}
    _escape_all(found, f"np.{func.__name__}()")
    return func(*args, **kwargs)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """``np.square(t)`` while recording: noted as an escape. ``array * t`` stays TensorFlow's ``t.__rmul__``."""
    if method == "__call__" and len(inputs) == 2 and not isinstance(inputs[0], _ops._EagerTensorBase) \
            and isinstance(inputs[1], _ops._EagerTensorBase) and ufunc in _REFLECTED and not kwargs:
        return getattr(inputs[1], _REFLECTED[ufunc])(inputs[0])
    found = []
    inputs = _to_numpy(inputs, found)
    _escape_all(found, f"np.{ufunc.__name__}()")
    return getattr(ufunc, method)(*inputs, **kwargs)


# ---------------------------------------------------------------------------
# The recording
# ---------------------------------------------------------------------------
class Recording(recordings.Recording):
    """What :func:`record` saw: TensorFlow ops, variable reads and writes, escapes, re-wraps, tape calls.

    Attributes:
        tapes: ``{tape number: TapeInfo}`` for every ``tf.GradientTape`` seen.

    Its records, :attr:`ops`, are a property: reading them puts back the values the recording let go of.
    """

    framework = "tf"

    def __init__(self, keep_values: bool = False):
        self._ops: list[Op] = []
        self._keep = keep_values
        self._unkept: dict = {}             # tensor id -> letgo.Unkept, for the values the records do not hold
        self._settled = letgo.Settled()
        self.tapes: dict = {}
        self._tape_numbers: dict = {}       # id(GradientTape) -> number
        self._tape_objects: list = []       # keeps the GradientTape objects alive (ids stay unique)
        self._producer: dict = {}           # tensor key -> index of the op that made it
        self._variables: dict = {}          # handle key -> variable (tf.Variable)
        self._names: dict = {}              # tensor key -> learner's name
        self._layers: dict = {}             # scope path -> Keras layer (the caller of the scope)
        self._scope_cache = (None, "")
        self._active = False
        self._busy = False
        self._thread = None
        self._creator = None
        self._creating = 0
        self._pending: list = []            # (op type, [(input position, variable)]) of a fast-path call
        self.provenance = None              # escapes of variables, numpy functions, frozen layers (provenance.py)
        self._line_names: dict = {}         # (file, line) -> the variable the line assigns
        self._held: dict = {}               # one shared tuple per place and per set of tape numbers (_held)

    # ----- context -----------------------------------------------------------
    def __enter__(self) -> Recording:
        if self._active:
            raise RuntimeError("this recording is already active; use a new adv.tf.record().")
        if not tf.executing_eagerly():
            raise RuntimeError("adv.tf.record() records eager TensorFlow; it was entered while building a graph "
                               "(inside a tf.function or tf.compat.v1 graph mode). Enter it in eager code.")
        self._active = True
        self._thread = threading.get_ident()
        with _LOCK:
            if not _ACTIVE:
                _install()
            _ACTIVE.append(self)
        _op_callbacks.add_op_callback(self._callback)
        self._creator = tf.variable_creator_scope(self._create_variable)
        self._creator.__enter__()
        self.provenance = provenance.start(self)
        return self

    def __exit__(self, *exc):
        provenance.stop(self.provenance)
        self._creator.__exit__(*exc)
        _op_callbacks.remove_op_callback(self._callback)
        with _LOCK:
            _ACTIVE.remove(self)
            if not _ACTIVE:
                _uninstall()
        self._active = False
        return False

    # ----- context of each op -------------------------------------------------
    def _scope(self) -> str:
        """The Keras layer path the current op runs in (``sequential/dense_1``), or ``""``."""
        if _keras_state is None:
            return ""
        stack = getattr(_keras_state.GLOBAL_STATE_TRACKER, "name_scope_stack", None)
        if not stack:
            return ""
        key = tuple(stack)          # the scopes themselves (held by the cache, so no other takes their ids)
        if self._scope_cache[0] == key:
            return self._scope_cache[1]
        parts = []
        for entry in stack:            # the nesting of the calls (a functional model's layers sit inside it)
            parts.append(entry.name)
            caller = entry.caller
            if caller is not None and hasattr(caller, "weights"):
                self._layers.setdefault("/".join(parts), caller)
        path = "/".join(parts)
        self._scope_cache = (key, path)
        return path

    @property
    def ops(self) -> list[Op]:
        """The records in order. Reading them puts back the values the recording let go of (:mod:`.letgo`)."""
        if self._unkept:
            with self.paused():                 # running an op again is not part of what is recorded
                letgo.settle(self)
        return self._ops

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing the block runs is recorded: the recording's own work (a trace reading values and asking the
        tape, an op run again, an assignment put back) is not the learner's. Nests; the state before comes back."""
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def __len__(self):
        return len(self._ops)        # counting the records puts nothing back

    def _note(self, name, kind, inputs, outputs, extra=None, attrs=(), loc=..., unkept=False):
        scope = self._scope()
        if loc is ...:
            if kind == "op" and not scope:
                # outside every layer: keep what the learner's line called (a loss function's several ops)
                loc, called = provenance.LIBRARY.user_call(3)
                if called is not None:
                    extra = dict(extra or (), called=called)
            else:
                loc = provenance.LIBRARY.user_line(3)
        held = self._held
        assigned = None
        if loc:
            loc = held.setdefault(loc, loc)
            if kind in _NAMING_KINDS:
                assigned = self._line_names.get(loc, ...)
                if assigned is ...:
                    assigned = self._line_names[loc] = assigned_name(*loc)
        kept = self._unkept
        if kept and kind in _SETTLED_KINDS:
            held_in = tuple([kept.get(getattr(t, "_id", None), t) for t in inputs])
        else:
            held_in = tuple(inputs)
        if unkept:
            outputs = [letgo.Unkept(t) for t in outputs]
            for u in outputs:
                kept[u._id] = u
        ops = self._ops
        op = Op(len(ops), name, kind, held_in, tuple(outputs), loc, assigned, scope,
                attrs=attrs, extra=extra or _NO_EXTRA)
        if assigned is not None:
            for prev in reversed(ops):     # only the line's last op makes the value the line assigns
                if prev.assigned is None or prev.location != loc or prev.kind not in _VALUE_KINDS:
                    break                       # (each op cleared the ones before it: stop at a cleared one)
                prev.assigned = None
        ids = [o._id for o in op.outputs]
        if self.tapes:
            recording = []
            tapes = []
            follows = kind in _TAPED_KINDS
            for info in self.tapes.values():
                if not info.recording:
                    continue
                recording.append(info.number)
                if follows and _watches(info.watched, inputs):
                    tapes.append(info.number)
                    if kind != "assign":
                        info.watched.update(ids)
            op.recording, op.tapes = _held(held, tuple(recording)), _held(held, tuple(tapes))
        if kind in _VALUE_KINDS:
            producer = self._producer
            for i in ids:
                producer[i] = op.index
        ops.append(op)
        return op

    def _callback(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is not None or self._busy or threading.get_ident() != self._thread:
            return None           # graph construction (tf.data, Keras' own tf.functions): not eager ops
        if op_type.__class__ is bytes:
            op_type = op_type.decode()
        outs = [o for o in outputs if hasattr(o, "_id")] if outputs else []
        ins = [i for i in inputs if hasattr(i, "_id")]
        if self._pending and self._pending[-1][0] == op_type:
            for j, variable in self._pending[-1][1]:
                if j < len(ins) and ins[j].dtype == variable.dtype and ins[j].shape == variable.shape:
                    self._variable_read(variable)
                    self._note("ReadVariableOp", "read", [variable.handle], [ins[j]], {"variable": variable},
                               loc=provenance.LIBRARY.user_line(2))
        if op_type == "ReadVariableOp":
            self._note(op_type, "read", ins, outs, {"variable": self._variables.get(ins[0]._id) if ins else None},
                       attrs)
        elif op_type in _ASSIGN_OPS and self._creating:
            return None
        elif op_type in _ASSIGN_OPS:
            at = _ASSIGN_OPS[op_type]
            if len(ins) > at:
                ins = [ins[0], ins[at]] + [x for k, x in enumerate(ins) if k not in (0, at)]
            self._note(op_type, "assign", ins, [], {"variable": self._variables.get(ins[0]._id) if ins else None},
                       attrs)
        elif op_type in ("VarHandleOp", "DestroyResourceOp", "VarIsInitializedOp"):
            return None
        else:
            handles = [t for t in ins if t._datatype_enum() == _DT_RESOURCE]
            if handles:
                self._captured_reads(handles)
            kind = "function" if op_type.startswith("__") or op_type in _CALL_OPS else "op"
            self._note(op_type, kind, ins, outs, {}, attrs, unkept=kind == "op" and not self._keep and not handles
                       and letgo.runs_again(op_type, ins, len(inputs), outs, len(outputs or ())))
        return None

    def _captured_reads(self, handles):
        """A ``read`` of each variable whose handle an op takes: a function call's captured variables (Keras runs
        a grouped convolution on CPU as its own jit-compiled ``tf.function``), ``ResourceGather``'s table.

        The op reads the variable inside TensorFlow, where no hook sees it; without a read on record,
        :meth:`as_at` would show a trace the value an optimizer wrote afterwards. The value read here shares the
        variable's buffer until the next assignment, which copies it (TensorFlow's copy-on-write), so the
        value the op used is kept at the cost of one read per handle.
        """
        loc = provenance.LIBRARY.user_line(3)
        for h in handles:
            v = self._variables.get(h._id)
            v = self._layer_variable(h._id) if v is None else v
            if v is None:
                continue                        # a resource that is not a variable (an iterator, a lookup table)
            self._variable_read(v)
            with self.paused():
                value = _read_variable(h, v.dtype)
            self._note("ReadVariableOp", "read", [h], [value], {"variable": v, "captured": True}, loc=loc)

    def _layer_variable(self, key):
        """The variable of a Keras layer seen so far whose handle has key ``key`` (remembered), or None."""
        for layer in list(self._layers.values()):
            for w in getattr(layer, "weights", ()):
                v = getattr(w, "value", w) if not isinstance(w, tf.Variable) else w
                if getattr(getattr(v, "handle", None), "_id", None) == key:
                    self._remember_variable(v)
                    return v
        return None

    # ----- tapes ----------------------------------------------------------------
    def tape_info(self, tape: Any) -> TapeInfo | None:
        number = self._tape_numbers.get(id(tape))
        return None if number is None else self.tapes[number]

    def _tape_pushed(self, tape, fresh):
        info = self.tape_info(tape)
        if info is None or fresh:
            number = len(self._tape_objects)
            self._tape_objects.append(tape)
            info = self.tapes[number] = TapeInfo(number, tape)
            self._tape_numbers[id(tape)] = number
            info.enter = provenance.LIBRARY.user_line(3)
            info.persistent_underneath = fresh     # made inside the recording: its record outlives gradient()
        info.cpp = tape._tape
        info.spans.append([len(self._ops), None])

    def _tape_popped(self, tape):
        info = self.tape_info(tape)
        if info is not None and info.spans and info.spans[-1][1] is None:
            info.spans[-1][1] = len(self._ops)

    def _watched(self, tape, tensor):
        info = self.tape_info(tape)
        if info is None:
            return
        flat = tf.nest.flatten(tensor)
        for t in flat:
            if hasattr(t, "handle") and not isinstance(t, tf.Tensor):
                self._remember_variable(t)
            if hasattr(t, "_id") or hasattr(t, "handle"):
                info.watched.add(tensor_key(t))
        op = self._note("watch", "watch", [t for t in flat if hasattr(t, "_id") or hasattr(t, "handle")], [],
                        {"tape": info.number})
        info.watch_calls.append(op.index)

    def _gradient_called(self, kind, tape, target, sources, args, kwargs):
        info = self.tape_info(tape)
        names = ("output_gradients", "unconnected_gradients") if kind == "gradient" else ()
        options = dict(zip(names, args))
        options.update(kwargs)
        return self._note(kind, kind, [t for t in tf.nest.flatten(target) if hasattr(t, "_id")], [],
                          {"tape": None if info is None else info.number, "target": target, "sources": sources,
                           "output_gradients": options.get("output_gradients")})

    # ----- variables ------------------------------------------------------------
    def _remember_variable(self, v):
        handle = getattr(v, "handle", None)
        if handle is not None and hasattr(handle, "_id"):
            self._variables.setdefault(handle._id, v)

    def _variable_read(self, variable):
        self._remember_variable(variable)
        if not variable.trainable:
            return
        key = variable.handle._id
        for info in self.tapes.values():
            if info.recording and info.watch_accessed_variables:
                info.watched.add(key)

    def _create_variable(self, next_creator, **kwargs):
        self._creating += 1          # the AssignVariableOp that initialises it is part of the creation
        try:
            v = next_creator(**kwargs)
        finally:
            self._creating -= 1
        if self._busy or threading.get_ident() != self._thread:
            return v
        self._remember_variable(v)
        init = kwargs.get("initial_value")
        init = init if isinstance(init, tf.Tensor) else None
        loc = provenance.LIBRARY.user_line(3)
        op = self._note("Variable", "create", [init] if init is not None else [], [v.handle],
                        {"variable": v, "init": init, "trainable": v.trainable}, loc=loc)
        if op.assigned:
            self._names.setdefault(v.handle._id, op.assigned)
        return v

    # ----- escapes and re-wraps ------------------------------------------------
    def _escaped(self, tensor, how, value, library=False):
        """A value left TensorFlow (``.numpy()``, ``float()`` ...). Called inside a library (Keras' ``predict``
        returning numpy), it is kept apart as a ``library_escape`` at the user's line that called the library:
        the diagnosis links it to the target only through a constant holding the very same values."""
        self._note(how, "library_escape" if library else "escape", [tensor], [], {"how": how, "value": value})

    def _rewrapped(self, fn, value, out):
        self._note(f"tf.{fn}", "rewrap", [value] if isinstance(value, tf.Tensor) else [], [out],
                   {"data": value})

    # ----- lookups ----------------------------------------------------------------
    def producer(self, t: Any) -> Op | None:
        """The op that made tensor ``t`` (a variable read counts), or None for a leaf."""
        k = self._producer.get(getattr(t, "_id", None))
        return None if k is None else self.ops[k]

    def _computed_again(self, old: int, t) -> None:
        """``t``, computed again by :func:`letgo.settle`, stands for the value with tensor id ``old``."""
        self._producer[t._id] = self._producer[old]
        for info in self.tapes.values():
            if old in info.watched:
                info.watched.add(t._id)

    def variable_of(self, handle_key: Any) -> Any:
        return self._variables.get(handle_key)

    def name_of(self, t: Any) -> str | None:
        """The learner's name for a tensor or variable: the assigned variable of its line, else its Keras path."""
        key = tensor_key(t) if hasattr(t, "_id") or hasattr(t, "handle") else None
        if key is None:
            return None
        if key in self._names:
            return self._names[key]
        op = self.producer(t) if isinstance(t, tf.Tensor) else None
        if op is not None and op.assigned:
            return op.assigned
        if not isinstance(t, tf.Tensor):
            self._remember_variable(t)
        v = self._variables.get(key)
        if v is not None:
            keras_name = self.keras_names().get(key)
            return keras_name or _variable_name(v)
        return None

    def keras_names(self) -> dict:
        """``{handle key: 'dense/kernel'}`` for the weights of every Keras layer seen (Keras' own paths)."""
        names = {}
        for layer in self._layers.values():
            for w in getattr(layer, "weights", ()):
                handle = getattr(w, "handle", None)
                if handle is not None and hasattr(handle, "_id"):
                    names.setdefault(handle._id, getattr(w, "path", None) or _variable_name(w))
        return names

    # ----- views ------------------------------------------------------------------
    def trace(self, target: Any, sources: Any = None, value_limit: int | None = None,
              output_gradients: Any = None) -> Trace:
        """An ``adv.Trace`` of the recorded computation with TensorFlow's own gradients.

        ``target``: the tensor to differentiate (a non-scalar target is
        seeded with ones, the gradient of its sum, as ``tape.gradient``; or
        with ``output_gradients``); ``sources``: variables or tensors whose
        gradients to show, a Keras model/layer (its trainable variables), or
        None for every variable the recording read.
        """
        from ..base import state
        from .trace import build
        frame = state.user_frame_object()       # the learner's names for the data fed in (model(x_batch))
        namespace = {**frame.f_globals, **frame.f_locals} if frame is not None else {}
        self._check_settled(target)
        with self.as_at(target):
            return build(self, target, sources, value_limit, output_gradients, namespace)

    def _check_settled(self, target) -> None:
        """Put back the values let go of, and check them on ``target`` (:meth:`letgo.Settled.check`)."""
        ops = self.ops
        if hasattr(target, "_id") and ops:
            with self.paused():
                self._settled.check(self, target)

    @contextlib.contextmanager
    def as_at(self, target: Any) -> Iterator[None]:
        """Variables written after ``target`` was computed hold, inside the block, the values it was computed with.

        ``tape.gradient`` then ``optimizer.apply_gradients`` (or ``v.assign_sub(lr * g)``) recorded together:
        the tape's gradients are unaffected (TensorFlow's tape keeps the values each op read), but a
        variable now holds its updated value. The value the forward pass used is the tensor of its last
        recorded read before ``target``'s op — kept by the recording anyway, so nothing is copied while
        recording; inside this block it is assigned back, and afterwards the current value returns.
        """
        made = self.producer(target) if hasattr(target, "_id") else None
        if made is None:
            yield
            return
        written = {}
        for op in self.ops[made.index + 1:]:
            if op.kind == "update" or op.kind == "assign" and op.inputs:
                for h in (op.inputs if op.kind == "update" else op.inputs[:1]):
                    written.setdefault(h._id, op)
        if not written:
            yield
            return
        then = {}
        for op in self.ops[:made.index]:
            if op.kind == "read" and op.inputs and op.outputs and op.inputs[0]._id in written:
                then[op.inputs[0]._id] = op.outputs[0]
        swapped = []
        try:
            with self.paused():                     # our assignments are not the learner's
                for key, value in then.items():
                    v = self._variables.get(key)
                    if v is None or tuple(v.shape) != tuple(value.shape):
                        continue
                    swapped.append((v, tf.identity(v)))
                    v.assign(value)
            yield
        finally:
            with self.paused():
                for v, now in reversed(swapped):
                    v.assign(now)

    def explain(self, target: Any, source: Any) -> Explanation | Explanations:
        """Why ``tape.gradient(target, source)`` is None (or not): an ``adv.Explanation`` with the user's line."""
        from .explain import explain_recorded
        with self.paused():                          # asking is not part of what is recorded
            return explain_recorded(self, target, source)

    def _compare(self, target, hand, rtol, atol, namespace, output_gradients):
        """:meth:`compare` (shared by the bridges) on the tape that recorded ``target``."""
        from .trace import compare
        self._check_settled(target)
        return compare(self, target, hand, rtol, atol, namespace, output_gradients)


def _variable_name(v, rec=None) -> str:
    """A variable's name as the learner sees it: Keras' path (``dense/kernel``), else its tf name without ``:0``."""
    path = getattr(v, "path", None)
    if isinstance(path, str) and path:
        return path
    name = getattr(v, "name", None) or "variable"
    return name[:-2] if name.endswith(":0") else name


def record(keep_values: bool = False) -> Recording:
    """Record every eager TensorFlow op run inside the ``with`` block (see :class:`Recording`).

        >>> with adv.tf.record() as rec:
        ...     with tf.GradientTape() as tape:
        ...         loss = tf.reduce_mean((model(x) - y) ** 2)
        ...     grads = tape.gradient(loss, model.trainable_variables)
        >>> rec.explain(loss, model.layers[0].kernel)

    ``keep_values``: hold every value the recorded ops made. By default a value nobody else holds (not the tape,
    not the learner's code, not a layer) is freed as in a plain step, and computed again when the recording is
    first asked something (:mod:`autodiff_viz.tf.letgo`): a step's peak memory stays near a plain one's. Keep
    them when a trace reports that an op did not run again to the same bits.
    """
    return Recording(keep_values)
