"""The engine: applying rules and recording them on tapes.

Everything that differentiates goes through here:

* :func:`apply` runs an op's numpy forward from the rule table, wraps the
  result in a :class:`Tensor`, and appends a :class:`Node` to every tape that
  is recording and tracks one of the inputs (TensorFlow's semantics).
* the walks over the record (reverse and forward mode) read those nodes;
  they live in :mod:`~autodiff_viz.core.walks`, above the rule table.
"""
from __future__ import annotations

import sys
import threading
import types

import numpy as np

from ..base import errors
from ..base.state import _first_user_frame, config, resolve_location, state
from .tensor import Tensor, Variable, _ids, as_tensor


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
    """Before a releasing walk: let go of the values no VJP reads (see ``Rule.saves``) in the records of tape
    ``mine``."""
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
                    # named by its path ("dense/kernel"): unique in traces, tables and diagnoses
                    a._value, a._id, a.name, a._node, a._lineage = value, v._id, v._path or v.name, None, True
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
COMPILED = type(apply) is not types.FunctionType
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
