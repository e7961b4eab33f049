"""How the engine's diagnosis names a tensor in prose: the learner's variable, never an id.

A tensor is ``'loss'`` when the learner named it (``adv.Variable(..., name=)``, or the variable its line
assigns: ``loss = adv.sum(...)``), ``'x'`` for a leaf made before the tape when the caller's variables are
known (:func:`callers_named`), else "the output of 'tanh' (train.py:8)". Ops inside a layer or a loss share
the learner's line of the call; only the call's result takes the line's name.
"""
from __future__ import annotations

import contextlib
import itertools

from ..base import naming
from ..base.state import live_tapes, resolve_location
from ..core.tensor import Tensor, Variable, full_name

_CALLER_NAMES: dict = {}      # id(tensor) -> the caller's variable name, while an explain runs


@contextlib.contextmanager
def callers_named(names: dict | None):
    """Inside the block, leaf tensors are named by ``names`` (``{id(tensor): name}``, see
    :func:`~autodiff_viz.diagnosis.walk.caller_names`) instead of "an unnamed constant"."""
    global _CALLER_NAMES
    saved, _CALLER_NAMES = _CALLER_NAMES, names or _CALLER_NAMES
    try:
        yield
    finally:
        _CALLER_NAMES = saved


def _label(t: Tensor) -> str:
    """The tensor in the learner's words, never an id: ``'loss' (the output of sum on cell [3], line 8;
    shape (), float64)``, ``'W' (shape (2, 3), float64)``, ``the output of 'tanh' (train.py:8; shape …)``."""
    name, origin = _naming(t)
    if name.startswith("an unnamed"):
        return f"({name} of shape {t.shape}, {t.dtype})"
    return f"{name} ({origin + '; ' if origin else ''}shape {t.shape}, {t.dtype})"


def _naming(t: Tensor) -> tuple[str, str]:
    """``(name, where it came from)`` of a tensor for prose."""
    node = t._node
    name = full_name(t)
    if name:
        return f"'{name}'", ""
    if node is None:
        mine = _CALLER_NAMES.get(id(t))
        if mine:            # the learner's variable for a leaf made before the tape: x = adv.constant(...)
            return f"'{mine}'", ""
        return ("an unnamed variable" if isinstance(t, Variable) else "an unnamed constant"), ""
    loc = node.location
    if loc is None:
        return f"the output of '{node.rule.name}'{_scope(node)}", ""
    place = naming.short_place(*loc)
    assigned = None if _left_on_its_line(t, loc) or not _assigned_on_its_line(node) else \
        naming.assigned_name_at(loc[0], loc[1])
    if assigned:
        return f"'{assigned}'", f"the output of {node.rule.name} on {place}"
    return f"the output of '{node.rule.name}'{_scope(node)}", place


def _made_line(t: Tensor):
    """``(file, line)`` where the learner made the leaf ``t`` (``adv.constant``, ``adv.Variable``), or None."""
    return resolve_location(getattr(t, "_made_at", None))


def _assigned_on_its_line(node) -> bool:
    """Is the op's output what its line assigns (the ``+`` of ``h = a @ a + c``, not the ``@``)?

    Ops inside a layer or a loss share the user's line of the call
    (``fake = generator(z)``), so the line cannot tell them apart: the one
    whose output no other op of the same call reads is the call's result and
    takes the line's name if the line stores that result at once (not the
    inner call of ``y = d(d(x))``); the others (the ``matmul`` inside a
    ``Dense``) are named by their op and scope.
    """
    where = node._where
    if where is None or isinstance(where[0], str):
        return True
    if node.scope and _read_in_the_same_call(node):
        return False
    return naming.is_stored_at_once(*where)


def _read_in_the_same_call(node) -> bool:
    """Does a later op of the same layer or loss call (the same shared location object) read ``node``'s output?"""
    where, oid = node._where, node.out_id
    for serial in node.tapes or ():
        tape = live_tapes.get(serial)
        if tape is None:
            continue
        nodes = tape.record.nodes
        try:
            start = nodes.index(node) + 1
        except ValueError:
            continue
        for later in itertools.islice(nodes, start, None):
            if later._where is where and any(t._id == oid for t in later.inputs):
                return True
    return False


def _left_on_its_line(t: Tensor, loc) -> bool:
    """Did ``t``'s value leave the tape on the line that made it (see :func:`naming.escape_sites`)?

    The escapes are the ones noted by the tapes that recorded ``t`` (every
    tape tracking it notes them).
    """
    site = (t._id, *loc)
    for serial in t._node.tapes or ():
        tape = live_tapes.get(serial)
        if tape is not None and site in naming.escape_sites(tape.record.escapes):
            return True
    return False


def _output_of(node) -> str:
    """An op's output for prose: ``'h' (the output of tanh on train.py:8)`` or ``the output of 'tanh' (train.py:8)``."""
    name, origin = _naming(node.output())
    return f"{name} ({origin})" if origin else name


def _scope(node) -> str:
    return f" in '{node.scope}'" if node.scope else ""
