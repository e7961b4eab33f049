"""The engine: applying rules, recording them on tapes, and walking the record.

Everything that differentiates goes through three functions here:

* :func:`apply` runs an op's numpy forward from the rule table, wraps the
  result in a :class:`Tensor`, and appends a :class:`Node` to every tape that
  is recording and tracks one of the inputs (TensorFlow's semantics).
* :func:`backward` walks a tape's nodes in reverse with a dict of incoming
  gradients (no recursion, nothing mutated on tensors), calling each rule's
  VJP. Cotangents may carry leading batch axes, so a full Jacobian is one
  walk seeded with an identity.
* :func:`push_tangents` walks the nodes forward, calling each rule's JVP
  (forward mode).

Both walks run on raw numpy arrays unless some tape is recording, in which
case they run on tensors so that the outer tape records the walk itself
(gradient of a gradient, Hessians). A walk nobody records pays nothing for
recording.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
from typing import Callable

import numpy as np

from .. import errors
from .tensor import Tensor, Variable, _ids, as_tensor

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep   # the package, not core/


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------
class In:
    """One input of a rule: its chain-rule factor text, VJP and JVP.

    ``vjp(g, y, *inputs, **params)`` returns this input's share of the
    gradient for an upstream ``g`` of shape ``batch + y.shape``;
    ``jvp(dx, y, *inputs, **params)`` returns this input's contribution to
    the output tangent for a tangent ``dx`` of shape ``batch + x.shape``.
    An input whose ``vjp`` is None has no gradient (indices, conditions).
    """

    __slots__ = ("name", "factor", "vjp", "jvp")

    def __init__(self, name, factor=None, vjp=None, jvp=None):
        self.name, self.factor, self.vjp, self.jvp = name, factor, vjp, jvp

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None


class Rule:
    """One entry of the rule table: an op's forward and, per input, its derivative.

    Calling a rule dispatches on its arguments: with a tensor among them it
    is recorded like any op; with numpy arrays only it is just the numpy
    forward. Rules are written with other rules' calls, so one VJP serves a
    plain backward pass (numpy) and a recorded one (tensors).

    ``saves`` says which values the VJPs read, as PyTorch's saved tensors:
    ``"all"`` (the default), ``"inputs"`` (``matmul``: x and W, not y),
    ``"output"`` (``tanh``: y only) or ``"nothing"`` (``add``: shapes
    only). A non-persistent tape's walk lets go of the others as it starts,
    so a pre-activation nobody needs is not held through the backward pass.
    Shapes and dtypes always stay (a released value keeps them).
    """

    __slots__ = ("name", "forward", "inputs", "elementwise", "variadic", "doc", "vjps", "saves")

    def __init__(self, name, forward, inputs, elementwise=False, variadic=False, doc="", saves="all"):
        if saves not in SAVES:
            raise ValueError(f"Rule {name!r}: saves must be one of {SAVES}, got {saves!r}.")
        self.name = name
        self.forward = forward
        self.inputs = tuple(inputs)
        self.vjps = tuple(s.vjp for s in self.inputs)   # read by the backward walk's plan for every node
        self.elementwise = elementwise
        self.variadic = variadic
        self.doc = doc
        self.saves = saves

    def spec(self, i: int) -> In:
        return self.inputs[0] if self.variadic else self.inputs[i]

    @property
    def differentiable(self) -> bool:
        return any(s.differentiable for s in self.inputs)

    def renamed(self, name: str, doc: str = "") -> "Rule":
        """The same rule under another op name (``take`` is ``getitem`` on one axis)."""
        return Rule(name, self.forward, self.inputs, self.elementwise, self.variadic, doc or self.doc, self.saves)

    def __call__(self, *args, **params):
        for a in args:
            if isinstance(a, Tensor):
                return call(self, *args, **params)
        return self.forward(*args, **params)

    def __repr__(self):
        return f"Rule({self.name!r}, inputs={[s.name for s in self.inputs]})"


SAVES = ("all", "inputs", "output", "nothing")


# ---------------------------------------------------------------------------
# Recording state
# ---------------------------------------------------------------------------
class Config:
    """Switches that trade information for speed, shared by every thread.

    ``capture_locations``: remember the ``file:line`` of the user code that
    made each recorded op (on by default: it is what lets a diagnosis point
    at your line).

    Unlike the recording state (:data:`state`, one per thread), ``config`` is
    global: setting a switch in one thread changes it for all of them.
    """

    def __init__(self):
        self.capture_locations = True

    def __repr__(self):
        return f"Config(capture_locations={self.capture_locations})"


config = Config()


class _State(threading.local):
    """What the engine is doing, one copy per thread (TensorFlow's tapes are thread-local too).

    A tape opened in one thread records the ops run in that thread only:
    each thread has its own list of recording tapes, entered tapes, name
    scope, shared location, lineage switch and anomaly detector. A new
    thread starts with nothing recording, no scope, lineage on and no
    anomaly detection. ``config`` is the one global switchboard.
    """

    def __init__(self):
        self.recording: list = []   # tapes that record now, innermost last
        self.entered: list = []     # tapes inside whose `with` block we are
        self.scope: tuple = ()      # name scope stack, pushed by layers
        self.scope_path: str = ""
        self.lineage = True         # False while the engine runs its own walks
        self.anomaly = None         # set by adv.detect_anomaly(): checks every op and backward step
        self.location = None        # set by shared_location(): the user line for every op inside


state = _State()
_anomaly_threads = 0        # how many threads run detect_anomaly(): apply skips the per-thread look-up at 0
_anomaly_lock = threading.Lock()


def _count_anomaly_thread(delta: int) -> None:
    """``detect_anomaly`` blocks entered (+1) and left (−1), over all threads."""
    global _anomaly_threads
    with _anomaly_lock:
        _anomaly_threads += delta


class Node:
    """One record of the tape: ``out = rule(*inputs, **params)``.

    Keeps the input tensors (a variable's value as it was read), the output's
    id and value, the name scope and the user-code location. A tensor made by
    an op points at its node, so its history can be followed even when no
    tape recorded it.
    """

    __slots__ = ("rule", "inputs", "params", "out_id", "out", "_where", "scope", "tapes")

    def __init__(self, rule, inputs, params, out_id, out, where, scope, tapes):
        self.rule, self.inputs, self.params = rule, inputs, params
        self.out_id, self.out = out_id, out
        self._where, self.scope, self.tapes = where, scope, tapes

    @property
    def location(self):
        """``(filename, lineno)`` of the user code that made this op, or None."""
        return resolve_location(self._where)

    def output(self) -> Tensor:
        """The output as a tensor (same identity as the one user code holds)."""
        return Tensor._alias(self.out_id, self.out, self)

    def __repr__(self):
        ins = ", ".join(f"#{t._id}" for t in self.inputs)
        return f"<Node #{self.out_id} = {self.rule.name}({ins})>"


class Released(np.ndarray):
    """Stands in for a value that a record let go of: the right shape and dtype, NaN, no memory.

    A non-persistent tape answers one gradient call; after it, its records
    drop the values they saved for the backward pass (as TensorFlow's tapes
    do), so a step's activations and the weights it read are freed as soon
    as the user lets go of them. The records themselves stay, light, so
    ``tape.explain`` still follows the history (ids, ops, lines, shapes).
    """


_released_arrays: dict = {}


def released_array(dtype, shape) -> Released:
    """A shared, read-only :class:`Released` array of ``shape`` and ``dtype`` (zero strides)."""
    key = (dtype.num, shape)      # hashing a dtype object is slow; its number is enough here
    try:
        return _released_arrays[key]    # nearly always there: a step releases the same shapes every time
    except KeyError:
        pass
    if len(_released_arrays) > 4096:
        _released_arrays.clear()
    fill = np.array(np.nan if dtype.kind in "fc" else 0, dtype=dtype)
    arr = _released_arrays[key] = np.broadcast_to(fill, shape).view(Released)
    return arr


def holds_values(node) -> bool:
    """Does ``node`` still hold the values it saved (False once its tape released the large ones)?"""
    return type(node.out) is not Released and all(type(t._value) is not Released for t in node.inputs)


KEEP_SIZE = 256   # values up to this many entries stay when a record is released: tiny, and explain compares them


def release(nodes, serial: int, also_done=None, done=()) -> None:
    """Drop the large values ``nodes`` saved (more than :data:`KEEP_SIZE` entries): they become :class:`Released`.

    Only the records made by tape ``serial`` alone, or by tapes that are all
    done (``also_done(serials)``), are released: another live tape may still
    walk the others. ``done`` holds the output ids of records a
    :func:`backward` walk has already released (its ``freed``), skipped here.

    An input tensor with a large value is replaced in the record by a
    stand-in with the same id, name, shape, dtype and history (``_node``),
    so the diagnosis can still follow it. Tensors the user holds are not
    touched: only the records' references go. Small values stay (they cost
    less than the stand-in) so a walk over many tiny ops pays little.
    """
    stand_ins: dict = {}
    mine = (serial,)
    for node in nodes:
        if node.out_id in done:
            continue
        if node.tapes == mine or (also_done is not None and also_done(node.tapes)):
            _release_node(node, stand_ins)


def _release_node(node, stand_ins: dict) -> None:
    """:func:`release` for one record; ``stand_ins`` shares one stand-in per tensor id."""
    _release_out(node)
    _release_inputs(node, stand_ins)


def _release_unsaved(nodes, mine: tuple, stand_ins: dict) -> None:
    """Before a releasing walk: let go of the values no VJP reads (see ``Rule.saves``) in the records of tape ``mine``."""
    for node in nodes:
        saves = node.rule.saves
        if saves == "all" or node.tapes != mine:
            continue
        if saves != "output":
            _release_out(node)
        if saves != "inputs":
            _release_inputs(node, stand_ins)


def _release_out(node) -> None:
    """The output half of :func:`_release_node`."""
    out = node.out
    if out.size > KEEP_SIZE and type(out) is not Released:
        node.out = released_array(out.dtype, out.shape)


def _release_inputs(node, stand_ins: dict) -> None:
    """The input half of :func:`_release_node`."""
    keep = KEEP_SIZE
    new_inputs = None
    i = 0
    for t in node.inputs:
        v = t._value
        if v.size > keep and type(v) is not Released:
            if _refcount(t) <= _ONLY_THE_RECORD:    # nobody else sees it, so no stand-in
                t._value = released_array(v.dtype, v.shape)
                i += 1
                continue
            if new_inputs is None:
                new_inputs = list(node.inputs)
            tid = t._id
            s = stand_ins.get(tid)
            if s is None:           # Tensor._alias(tid, released, t._node, t.name), inlined: one per large input
                s = stand_ins[tid] = _new(Tensor)
                s._value = released_array(v.dtype, v.shape)
                s._id, s.name, s._node, s._lineage = tid, t.name, t._node, True
            new_inputs[i] = s
        i += 1
    if new_inputs is not None:
        node.inputs = tuple(new_inputs)


def user_frame(skip: int = 0):
    """``(code, lasti)`` of the first frame outside this package, or None.

    Cheap on purpose (it runs for every recorded op): the line number is
    worked out later, by :func:`resolve_location`, only when a trace or a
    diagnosis asks. The walk goes up ``f_back`` from the caller, one dict
    look-up per frame (file name -> inside the package?); ops run two to
    four package frames below the user's line, so that is a few steps.
    ``skip`` counts extra package frames between the caller and this function.
    """
    try:
        f = _getframe(0 if COMPILED else 1 + skip)
    except ValueError:
        return None
    return _first_user_frame(f)


def user_frame_object():
    """The first frame outside this package (the frame itself: its locals name the learner's tensors), or None."""
    f = _getframe(0)
    while f is not None and _inside(f.f_code.co_filename):
        f = f.f_back
    return f


def _first_user_frame(f):
    """:func:`user_frame` from frame ``f`` upwards."""
    internal = _internal_file
    while f is not None:
        code = f.f_code
        inside = internal.get(code.co_filename)
        if inside is None:
            inside = _inside(code.co_filename)
        if not inside:
            return (code, f.f_lasti)
        f = f.f_back
    return None


def resolve_location(where):
    """``(filename, lineno)`` from what :func:`user_frame` recorded (or an already resolved pair)."""
    if where is None or isinstance(where[0], str):
        return where
    code, lasti = where
    line = code.co_firstlineno
    for start, end, lineno in code.co_lines():
        if start <= lasti < end and lineno is not None:
            line = lineno
            break
    return (code.co_filename, line)


def user_location():
    """``(filename, lineno)`` of the first frame outside this package, or None."""
    return resolve_location(user_frame(skip=1))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the caller point at the learner's line.

    Counts the package frames between the function that warns and the first
    frame outside the package, so a warning names the user's call whether it
    came directly (``opt.apply_gradients``) or through another entry point
    (``opt.apply``, ``fit``).
    """
    f, level = _getframe(0 if COMPILED else 1), 1     # warnings.warn counts from the nearest Python frame
    while f is not None and _inside(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


def is_package_code(func) -> bool:
    """Was ``func`` written in this package (not by the user)?"""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    filename = code.co_filename
    if not os.path.isabs(filename):     # compiled (setup.py): named from the folder that holds the package
        filename = os.path.join(os.path.dirname(_PACKAGE_DIR.rstrip(os.sep)), filename)
    return _inside(filename)


def _inside(filename: str) -> bool:
    # Keyed by file name: hashing a code object hashes all its constants (slow for a notebook cell).
    inside = _internal_file.get(filename)
    if inside is None:
        inside = _internal_file[filename] = filename.startswith(_PACKAGE_DIR)
    return inside


_internal_file: dict = {}   # file name -> is it inside this package?


scope_kinds: dict = {}   # scope name -> what opened it most recently ("Dense" for a layer; None for a plain scope)


class name_scope:
    """Prefix the scope of every op recorded inside (``model/dense_1``).

        >>> with adv.name_scope("encoder"):
        ...     h = adv.tanh(x)        # recorded with scope "encoder"

    ``kind`` says what the scope is (a layer passes its class, ``"Dense"``), so
    a drawing can title the folded box as ``summary()`` does: ``dense_1 (Dense)``.
    ``share_location`` (True or False) also does :class:`shared_location`'s
    work for the block, in the same ``with``: what a layer or a loss does on
    every call.
    """

    __slots__ = ("name", "kind", "share", "_saved")

    def __init__(self, name: str, kind: str | None = None, share_location: bool | None = None):
        self.name = str(name)
        self.kind = kind
        self.share = share_location

    def __enter__(self):
        self._saved = enter_scope(self.name, self.kind, self.share)
        return state.scope_path

    def __exit__(self, *exc):
        exit_scope(self._saved)
        return False


def enter_scope(name: str, kind: str | None = None, share: bool | None = None) -> tuple:
    """Open :class:`name_scope` ``name`` in this thread; returns what :func:`exit_scope` needs to close it.

    The scope itself, without a context-manager object: a layer opens one on
    every call.
    """
    scope_kinds[name] = kind
    st = state.__dict__         # this thread's attributes: one thread-local look-up, then plain dict reads
    scope = st["scope"]
    saved = (scope, st["scope_path"], _NOT_SHARED if share is None else _enter_location(st, share, 1))
    scope = st["scope"] = scope + (name,)
    st["scope_path"] = "/".join(scope)
    return saved


def exit_scope(saved: tuple) -> None:
    """Close the scope :func:`enter_scope` opened (``saved`` is what it returned)."""
    st = state.__dict__
    st["scope"], st["scope_path"], location = saved
    if location is not _NOT_SHARED:
        st["location"] = location


_NOT_SHARED = object()     # a name_scope that leaves the shared location alone


def _enter_location(st: dict, share: bool, skip: int = 0):
    """Set this thread's shared location for a block (see :class:`shared_location`); returns the one to restore.

    ``st``: ``state.__dict__``. ``skip``: package frames between the ``__enter__`` that calls this and the
    block's caller.
    """
    saved = st["location"]
    if not share:
        if saved is not None:
            st["location"] = None
    elif saved is None and config.capture_locations:
        st["location"] = user_frame(skip + 1)
    return saved


class shared_location:
    """Ops run inside share one user-code location, found once on entry.

    For package code that runs many ops on behalf of one user call (a
    built-in layer, a loss), every op would find the same location by
    walking the stack, so walk once. ``share=False`` clears a shared
    location for the block: code the user wrote (a custom layer's ``call``,
    an RNN cell) runs inside, and its ops get their own lines.
    """

    __slots__ = ("share", "_saved")

    def __init__(self, share: bool = True):
        self.share = share

    def __enter__(self):
        self._saved = _enter_location(state.__dict__, self.share, 1)
        return self

    def __exit__(self, *exc):
        state.location = self._saved
        return False


@contextlib.contextmanager
def paused(lineage: bool = False):
    """Run engine-internal computation: no tape records anything, and no history is kept.

    ``lineage=True`` keeps the history (each op's record, as outside any
    tape) while still recording on no tape: ``evaluate`` uses it so a loss
    can read the logits off the record of a final ``sigmoid``/``softmax``.
    """
    old_rec, old_lin = state.recording, state.lineage
    state.recording, state.lineage = [], lineage
    try:
        yield
    finally:
        state.recording, state.lineage = old_rec, old_lin


# ---------------------------------------------------------------------------
# Applying a rule
# ---------------------------------------------------------------------------
def call(rule: Rule, *args, **params) -> Tensor:
    """Apply ``rule`` to tensors or values; Python numbers take a tensor's dtype."""
    for a in args:
        if not isinstance(a, Tensor):
            break
    else:
        return apply(rule, *args, **params)
    like = None
    for a in args:
        if isinstance(a, Tensor):
            if like is None or a._value.dtype.kind in "fc":
                like = a
                if a._value.dtype.kind in "fc":
                    break
    return apply(rule, *[as_tensor(a, like) for a in args], **params)


def apply(rule: Rule, *inputs: Tensor, **params) -> Tensor:
    """Run ``rule`` forward on tensors and record it where a tape tracks an input.

    This runs for every op, so it is written flat: one look-up of this
    thread's state, the output tensor made in place, the one-tape case
    without a loop.

    Meant to be called by package code (operators, op functions,
    :func:`call`): the user's line recorded for the op is searched from the
    caller's caller upwards. Code outside the package that calls ``apply``
    itself gets the line of its own caller; it should go through
    :func:`call` or a rule call (``rule(x)``) instead.
    """
    try:
        if params:
            out = rule.forward(*[t._value for t in inputs], **params)
        elif len(inputs) == 2:
            out = rule.forward(inputs[0]._value, inputs[1]._value)
        elif len(inputs) == 1:
            out = rule.forward(inputs[0]._value)
        else:
            out = rule.forward(*[t._value for t in inputs])
    except (ValueError, TypeError, IndexError) as exc:
        raise errors.op_failed(rule, inputs, params, exc) from None
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    y = _new(Tensor)
    y._value = out
    y._id = y_id = next(_ids)
    y.name = None
    y._node = None              # set below when the op is recorded or has history
    y._lineage = False
    st = state.__dict__     # this thread's attributes: one thread-local look-up, then plain dict reads
    if _anomaly_threads and st["anomaly"] is not None:
        st["anomaly"].forward(rule, inputs, y)
    recording = st["recording"]
    recorders = None
    if recording:
        if len(recording) == 1:
            tape = recording[0]
            tracked = tape._tracked
            for t in inputs:
                if t._id in tracked:
                    recorders = recording
                elif type(t) is Variable and t.trainable and tape.watch_accessed_variables and \
                        t._value.dtype.kind in "fc":
                    tape._watch_one(t)
                    recorders = recording
        else:
            for tape in recording:
                if tape._tracks_any(inputs):
                    recorders = (tape,) if recorders is None else recorders + (tape,)
    if recorders is None:
        if not st["lineage"]:
            return y
        for t in inputs:
            if t._lineage:
                break
        else:
            return y
    heavy = out.size > KEEP_SIZE
    for t in inputs:
        if type(t) is Variable:
            # the record keeps each variable's value as it was read (an alias, as Tensor._alias, inlined)
            read = []
            for v in inputs:
                value = v._value
                if type(v) is Variable:
                    a = _new(Tensor)
                    a._value, a._id, a.name, a._node, a._lineage = value, v._id, v.name, None, True
                    v = a
                if value.size > KEEP_SIZE:
                    heavy = True
                read.append(v)
            inputs = tuple(read)
            break
    where = st["location"]
    if where is None and config.capture_locations:
        # user_frame(), starting at our caller's caller: apply is called by package code (an operator,
        # an op function, engine.call), so that frame is never the user's; skipping it saves making a
        # frame object per op (a third of the cost of capturing locations). Compiled, the package's
        # functions make no frames: the walk starts at the nearest Python frame.
        try:
            where = _first_user_frame(_getframe(_APPLY_SKIP))
        except ValueError:          # called from a module's top level: no frame above
            where = None
    node = _new(Node)
    node.rule = rule
    node.inputs = inputs
    node.params = params or _NO_PARAMS
    node.out_id = y_id
    node.out = out
    node._where = where
    node.scope = st["scope_path"]
    if recorders is None:
        node.tapes = ()
    elif len(recorders) == 1:
        tape = recorders[0]
        node.tapes = tape._serials
        tape._nodes.append(node)
        tape._tracked.add(y_id)
        if heavy:
            tape._heavy = True
    else:
        node.tapes = tuple([t.serial for t in recorders])
        for tape in recorders:
            tape._nodes.append(node)
            tape._tracked.add(y_id)
            if heavy:
                tape._heavy = True
    y._node = node
    y._lineage = True
    return y


_new = object.__new__
_NO_PARAMS = types.MappingProxyType({})    # one shared, read-only empty params for the many ops without any
_alias = Tensor._alias
_getframe = sys._getframe
#: Is this module compiled (see ``setup.py``)? Its functions, and those of the package's other compiled
#: modules, then run without Python frames, so a walk up the stack starts at the nearest Python frame.
COMPILED = type(user_frame) is not types.FunctionType
_APPLY_SKIP = 0 if COMPILED else 2
_refcount = sys.getrefcount


def _refs_of_an_input_only_the_record_holds() -> int:
    """What ``_refcount(t)`` gives in :func:`_release_inputs`'s loop when only the record holds ``t``.

    Python counts the record's tuple, the loop variable and the call's
    argument (3); compiled code (setup.py) may count fewer. Measured here,
    with the same loop, so the test is right either way: a count too high
    would overwrite a value someone else still reads.
    """
    for t in (object(),):
        return _refcount(t)
    return 0


_ONLY_THE_RECORD = _refs_of_an_input_only_the_record_holds()


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
        return
    for tape in state.recording:
        if value._id in tape._tracked or (
                type(value) is Variable and value.trainable and tape.watch_accessed_variables):
            tape._assigned(variable, value, how, user_location() if config.capture_locations else None)


# ---------------------------------------------------------------------------
# Broadcasting, with leading batch axes
# ---------------------------------------------------------------------------
def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Does an array of ``shape`` broadcast to exactly ``target`` (numpy's rules, ``target`` unchanged)?

    What a mask, a weight or a fill value must do to stand for ``target``:
    each of its axes, counted from the right, is 1 or ``target``'s size, and
    it has no more axes than ``target``.
    """
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def unbroadcast(g, shape: tuple, out_ndim: int):
    """Sum ``g`` (shape ``batch + out_shape``) back to ``batch + shape``.

    An input of ``shape`` that numpy broadcast to ``out_shape`` was used once
    per broadcast copy, so its gradient is the sum over the copies: over the
    leading axes numpy added, and over the axes where ``shape`` has 1. The
    first ``g.ndim - out_ndim`` axes of ``g`` are cotangent batch axes (rows
    of a Jacobian) and are never summed.
    """
    nb = g.ndim - out_ndim
    lead = out_ndim - len(shape)
    gshape = g.shape
    axes = tuple(range(nb, nb + lead)) + tuple(
        nb + lead + i for i, n in enumerate(shape) if n == 1 and gshape[nb + lead + i] != 1
    )
    if not axes:
        return g
    if type(g) is np.ndarray:
        g = np.add.reduce(g, axis=axes, keepdims=True)     # the ufunc itself: ndarray.sum adds a Python wrapper
    else:
        g = g.sum(axis=axes, keepdims=True)                # a tensor: a recorded walk (higher order)
    return g.reshape(g.shape[:nb] + tuple(shape))


def lift(dx, x_ndim: int, out_ndim: int):
    """Insert axes after the batch axes of a tangent so it broadcasts like its input."""
    k = out_ndim - x_ndim
    nb = dx.ndim - x_ndim
    if k <= 0 or nb == 0:
        return dx
    return dx.reshape(dx.shape[:nb] + (1,) * k + dx.shape[nb:])


def _float(t) -> bool:
    return t._value.dtype.kind in "fc"


# ---------------------------------------------------------------------------
# Walking the record
# ---------------------------------------------------------------------------
def reachable(nodes, sources: set) -> tuple[set, list]:
    """Ids that depend differentiably on ``sources``, and the nodes on those paths."""
    reach = set(sources)
    path = []
    for node in nodes:
        if node.out.dtype.kind not in "fc":
            continue
        specs = node.rule.inputs
        variadic = node.rule.variadic
        for i, t in enumerate(node.inputs):
            if t._id in reach and specs[0 if variadic else i].vjp is not None:
                reach.add(node.out_id)
                path.append(node)
                break
    return reach, path


def _values(inputs):
    if len(inputs) == 2:
        return (inputs[0]._value, inputs[1]._value)
    if len(inputs) == 1:
        return (inputs[0]._value,)
    return [t._value for t in inputs]


def backward(nodes, seeds: dict, sources: set, on_step: Callable | None = None, free: int | None = None,
             freed: set | None = None, reach: set | None = None) -> dict:
    """Reverse-mode walk: ``{id: gradient}`` for every id on a path to ``seeds``.

    ``seeds`` maps target ids to upstream gradients of shape ``batch +
    target.shape`` (numpy arrays, or tensors when a tape records the walk).
    Gradients of ids not in ``sources`` are dropped once used, unless
    ``on_step(node, g, contributions)`` is given (it sees every step).
    ``free``: the serial of a non-persistent tape whose walk this is; each
    of its records (made by it alone) lets go of its large values as soon
    as the walk is past it, so activations are freed during the walk, not
    after it (as PyTorch does). ``freed``, if given, receives the output
    ids of those records, so that :func:`release` need not visit them again.

    ``reach``: the ids a gradient may flow into. By default the walk works
    them out first (:func:`reachable` from ``sources``). A tape whose every
    watched tensor is a source passes the ids it tracks instead, which it
    collected while recording: every one depends on a watched tensor, so
    the forward pass is not needed. (An id that depends on a source only
    through an op without gradient, ``stop_gradient(x)``, then receives a
    contribution the walk drops at that op; integer ids never do.)

    This loop runs once per recorded op, so it reads everything it needs
    into locals first and keeps the common step (numpy arrays, no batch
    axes, one tape) free of branches it does not need.
    """
    if state.anomaly is not None:
        return state.anomaly.backward(nodes, seeds, sources, on_step)   # checks every step: frees after
    keep_all = on_step is not None
    if reach is None or keep_all:
        reach = reachable(nodes, sources)[0]
    recorded = bool(state.recording)
    grads = {k: v for k, v in seeds.items() if k in reach}
    get, pop = grads.get, grads.pop
    mine, stand_ins = (free,), {}
    releasing = free is not None and not keep_all
    if releasing:
        _release_unsaved(nodes, mine, stand_ins)
    ndarray = np.ndarray
    owned = set()       # ids whose gradient is an array this walk made (a sum): later contributions add in place
    for node in reversed(nodes):
        oid = node.out_id
        g = get(oid) if keep_all or oid in sources else pop(oid, None)
        if g is None:
            continue
        inputs = node.inputs
        if recorded:
            xs, y = inputs, node.output()
        else:
            n = len(inputs)
            xs = (inputs[0]._value, inputs[1]._value) if n == 2 else (inputs[0]._value,) if n == 1 else \
                [t._value for t in inputs]
            y = node.out
        rule = node.rule
        vjps, variadic, elementwise, params = rule.vjps, rule.variadic, rule.elementwise, node.params
        contributions = [] if keep_all else None
        i = -1
        for t in inputs:
            i += 1
            tid = t._id
            if tid not in reach:
                continue
            vjp = vjps[0 if variadic else i]
            value = t._value
            if vjp is None or value.dtype.kind not in "fc":
                continue
            if variadic:
                gi = vjp(g, y, *xs, i=i, **params)
            elif params:
                gi = vjp(g, y, *xs, **params)
            else:
                gi = vjp(g, y, *xs)
            if gi is None:
                continue
            if elementwise and gi.shape != value.shape:
                gi = unbroadcast(gi, value.shape, y.ndim)
            prev = get(tid)
            if prev is None:
                grads[tid] = gi
            elif tid in owned and type(prev) is ndarray and type(gi) is ndarray and \
                    prev.shape == gi.shape and prev.dtype == gi.dtype:
                prev += gi
            else:
                grads[tid] = prev + gi
                if not recorded:
                    owned.add(tid)
            if keep_all:
                contributions.append((i, gi))
        if keep_all:
            on_step(node, g, contributions)
        elif releasing and node.tapes == mine:
            xs = y = g = gi = value = None
            saves = rule.saves          # what the pre-pass kept (see _release_unsaved) is all there is to let go of
            if saves == "all":
                _release_node(node, stand_ins)
            elif saves == "inputs":
                _release_inputs(node, stand_ins)
            elif saves == "output":
                _release_out(node)
            if freed is not None:
                freed.add(oid)
    return grads


def push_tangents(nodes, tangents: dict) -> dict:
    """Forward-mode walk: extend ``{id: tangent}`` through ``nodes`` with the JVP rules.

    Tangents have shape ``batch + x.shape``; pushing an identity gives a
    whole Jacobian in one walk.
    """
    recorded = bool(state.recording)
    for node in nodes:
        rule, params, inputs = node.rule, node.params, node.inputs
        if node.out.dtype.kind not in "fc":
            continue
        total, batch = None, None
        for i, t in enumerate(inputs):
            dx = tangents.get(t._id)
            if dx is None:
                continue
            spec = rule.spec(i)
            if spec.vjp is None or not _float(t):
                continue
            if spec.jvp is None:
                raise NotImplementedError(
                    f"forward mode: the op '{rule.name}' has no JVP rule for its input "
                    f"'{spec.name}'. Use reverse mode for this function: tape.gradient, adv.vjp, or "
                    "adv.jacobian(f, mode='reverse') (the default)."
                )
            if recorded:
                xs, y = inputs, node.output()
            else:
                xs, y = _values(inputs), node.out
            batch = dx.shape[:dx.ndim - t.ndim]
            if rule.elementwise:
                dx = lift(dx, t.ndim, y.ndim)
            c = spec.jvp(dx, y, *xs, i=i, **params) if rule.variadic else spec.jvp(dx, y, *xs, **params)
            total = c if total is None else total + c
        if total is not None:
            full = tuple(batch) + node.out.shape
            if total.shape != full:
                from . import rules
                total = rules.broadcast_to(total, shape=full)
            tangents[node.out_id] = total
    return tangents
