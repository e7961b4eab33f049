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
from typing import Callable

import numpy as np

from . import errors
from .tensor import Tensor, Variable, as_tensor

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


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
    """

    __slots__ = ("name", "forward", "inputs", "elementwise", "variadic", "doc")

    def __init__(self, name, forward, inputs, elementwise=False, variadic=False, doc=""):
        self.name = name
        self.forward = forward
        self.inputs = tuple(inputs)
        self.elementwise = elementwise
        self.variadic = variadic
        self.doc = doc

    def spec(self, i: int) -> In:
        return self.inputs[0] if self.variadic else self.inputs[i]

    @property
    def differentiable(self) -> bool:
        return any(s.differentiable for s in self.inputs)

    def renamed(self, name: str, doc: str = "") -> "Rule":
        """The same rule under another op name (``take`` is ``getitem`` on one axis)."""
        return Rule(name, self.forward, self.inputs, self.elementwise, self.variadic, doc or self.doc)

    def __call__(self, *args, **params):
        for a in args:
            if isinstance(a, Tensor):
                return call(self, *args, **params)
        return self.forward(*args, **params)

    def __repr__(self):
        return f"Rule({self.name!r}, inputs={[s.name for s in self.inputs]})"


# ---------------------------------------------------------------------------
# Recording state
# ---------------------------------------------------------------------------
class Config:
    """Switches that trade information for speed.

    ``capture_locations``: remember the ``file:line`` of the user code that
    made each recorded op (on by default: it is what lets a diagnosis point
    at your line).
    """

    def __init__(self):
        self.capture_locations = True

    def __repr__(self):
        return f"Config(capture_locations={self.capture_locations})"


config = Config()


class _State:
    def __init__(self):
        self.recording: list = []   # tapes that record now, innermost last
        self.entered: list = []     # tapes inside whose `with` block we are
        self.scope: tuple = ()      # name scope stack, pushed by layers
        self.scope_path: str = ""
        self.lineage = True         # False while the engine runs its own walks
        self.anomaly = None         # set by adv.detect_anomaly(): checks every op and backward step
        self.location = None        # set by shared_location(): the user line for every op inside


state = _State()


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
        where = self._where
        if where is not None and not isinstance(where[0], str):
            where = self._where = resolve_location(where)
        return where

    def output(self) -> Tensor:
        """The output as a tensor (same identity as the one user code holds)."""
        return Tensor._alias(self.out_id, self.out, self)

    def __repr__(self):
        ins = ", ".join(f"#{t._id}" for t in self.inputs)
        return f"<Node #{self.out_id} = {self.rule.name}({ins})>"


def user_frame(skip: int = 0):
    """``(code, lasti)`` of the first frame outside this package, or None.

    Cheap on purpose (it runs for every recorded op): the line number is
    worked out later, by :func:`resolve_location`, only when a trace or a
    diagnosis asks. Ops are usually called from the same depth as last time,
    so that depth is tried first: two frame look-ups instead of a walk.
    ``skip`` counts extra package frames between the caller and this function.
    """
    global _last_depth
    getframe, internal = sys._getframe, _internal_file
    d = _last_depth + skip
    try:
        f = getframe(d)
        if internal.get(f.f_code.co_filename) is False and \
                internal.get(getframe(d - 1).f_code.co_filename) is True:
            return (f.f_code, f.f_lasti)
    except ValueError:
        pass
    d = 1 + skip
    while True:
        try:
            f = getframe(d)
        except ValueError:
            return None
        if not _inside(f.f_code.co_filename):
            _last_depth = d - skip
            return (f.f_code, f.f_lasti)
        d += 1


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


def is_package_code(func) -> bool:
    """Was ``func`` written in this package (not by the user)?"""
    code = getattr(func, "__code__", None)
    return code is not None and _inside(code.co_filename)


def _inside(filename: str) -> bool:
    # Keyed by file name: hashing a code object hashes all its constants (slow for a notebook cell).
    inside = _internal_file.get(filename)
    if inside is None:
        inside = _internal_file[filename] = filename.startswith(_PACKAGE_DIR)
    return inside


_internal_file: dict = {}   # file name -> is it inside this package?
_last_depth = 2


class name_scope:
    """Prefix the scope of every op recorded inside (``model/dense_1``).

        >>> with adv.name_scope("encoder"):
        ...     h = adv.tanh(x)        # recorded with scope "encoder"
    """

    __slots__ = ("name", "_saved")

    def __init__(self, name: str):
        self.name = str(name)

    def __enter__(self):
        self._saved = (state.scope, state.scope_path)
        state.scope = state.scope + (self.name,)
        state.scope_path = "/".join(state.scope)
        return state.scope_path

    def __exit__(self, *exc):
        state.scope, state.scope_path = self._saved
        return False


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
        self._saved = state.location
        if not self.share:
            state.location = None
        elif state.location is None and config.capture_locations:
            state.location = user_frame()
        return self

    def __exit__(self, *exc):
        state.location = self._saved
        return False


@contextlib.contextmanager
def paused():
    """Run engine-internal computation: nothing is recorded, no history kept."""
    old_rec, old_lin = state.recording, state.lineage
    state.recording, state.lineage = [], False
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
    """Run ``rule`` forward on tensors and record it where a tape tracks an input."""
    try:
        if len(inputs) == 2:
            out = rule.forward(inputs[0]._value, inputs[1]._value, **params)
        elif len(inputs) == 1:
            out = rule.forward(inputs[0]._value, **params)
        else:
            out = rule.forward(*[t._value for t in inputs], **params)
    except (ValueError, TypeError, IndexError) as exc:
        raise errors.op_failed(rule, inputs, params, exc) from None
    y = Tensor._wrap(out)
    if state.anomaly is not None:
        state.anomaly.forward(rule, inputs, y)
    recorders = None
    for tape in state.recording:
        if tape._tracks_any(inputs):
            if recorders is None:
                recorders = [tape]
            else:
                recorders.append(tape)
    if not recorders:
        if not state.lineage:
            return y
        for t in inputs:
            if t._lineage:
                break
        else:
            return y
    for t in inputs:
        if type(t) is Variable:
            inputs = tuple([Tensor._alias(v._id, v._value, None, v.name) if type(v) is Variable else v
                            for v in inputs])
            break
    y_id = y._id
    node = Node(rule, inputs, params, y_id, out if type(out) is np.ndarray else y._value,
                state.location or (user_frame() if config.capture_locations else None),
                state.scope_path, (recorders[0].serial,) if recorders and len(recorders) == 1
                else tuple([tape.serial for tape in recorders or ()]))
    y._node = node
    y._lineage = True
    if recorders:
        for tape in recorders:
            tape._nodes.append(node)
            tape._tracked.add(y_id)
    return y


def left_the_tape(tensor: Tensor, how: str) -> None:
    """Note that ``tensor``'s value left as numpy or a Python number while tapes record."""
    for tape in state.recording:
        if tensor._id in tape._tracked or (
                type(tensor) is Variable and tensor.trainable and tape.watch_accessed_variables):
            tape._escaped(tensor, how, user_location() if config.capture_locations else None)


# ---------------------------------------------------------------------------
# Broadcasting, with leading batch axes
# ---------------------------------------------------------------------------
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
    g = g.sum(axis=axes, keepdims=True)
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


def backward(nodes, seeds: dict, sources: set, on_step: Callable | None = None) -> dict:
    """Reverse-mode walk: ``{id: gradient}`` for every id on a path to ``seeds``.

    ``seeds`` maps target ids to upstream gradients of shape ``batch +
    target.shape`` (numpy arrays, or tensors when a tape records the walk).
    Gradients of ids not in ``sources`` are dropped once used, unless
    ``on_step(node, g, contributions)`` is given (it sees every step).
    """
    if state.anomaly is not None:
        return state.anomaly.backward(nodes, seeds, sources, on_step)
    reach, path = reachable(nodes, sources)
    recorded = bool(state.recording)
    grads = {k: v for k, v in seeds.items() if k in reach}
    keep_all = on_step is not None
    for node in reversed(path):
        g = grads.get(node.out_id)
        if g is None:
            continue
        if not keep_all and node.out_id not in sources:
            del grads[node.out_id]
        rule, params, inputs = node.rule, node.params, node.inputs
        if recorded:
            xs, y = inputs, node.output()
        else:
            xs, y = _values(inputs), node.out
        contributions = [] if keep_all else None
        specs, variadic = rule.inputs, rule.variadic
        for i, t in enumerate(inputs):
            if t._id not in reach:      # reach holds only float tensors that lead to a source
                continue
            vjp = specs[0 if variadic else i].vjp
            if vjp is None:
                continue
            gi = vjp(g, y, *xs, i=i, **params) if variadic else vjp(g, y, *xs, **params)
            if gi is None:
                continue
            if rule.elementwise and gi.shape != t._value.shape:
                gi = unbroadcast(gi, t._value.shape, y.ndim)
            prev = grads.get(t._id)
            grads[t._id] = gi if prev is None else prev + gi
            if keep_all:
                contributions.append((i, gi))
        if keep_all:
            on_step(node, g, contributions)
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
                    f"'{spec.name}'. Use reverse mode (mode='reverse') for this function."
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
