"""A weight the target no longer uses because the code made a new one like it: ``made_in_forward``.

A layer that creates its weight inside ``call()`` / ``forward()``
(``self.w = tf.Variable(...)``, ``adv.Variable(...)``, ``nn.Linear(...)(x)``)
makes a new weight on every call. The variable a learner holds (from an
earlier call, or ``layer.w`` read before the step) is then not the one the
loss read: the gradient with respect to it is ``None``, and "the target does
not depend on it" is true but says nothing useful. The useful fact is the
*twin*: among the weights the target did read, one with the same name and
shape, made later — where it was made says why.

One function for the engine and both bridges: each hands over its source,
the weights the target read (oldest first) and how to read a name, a shape
and the line that made a weight.
"""
from __future__ import annotations

import re

from ..base.naming import code_line, file_line
from . import reasons
from .explanation import Explanation

_SUFFIX = re.compile(r"(:\d+)$|(_\d+)$")


def base_name(name: str | None) -> str:
    """A weight's name without the framework's path and uniquifying suffixes: ``my_dense/w_1:0`` -> ``w``,
    ``fc.weight`` -> ``weight``."""
    name = re.split(r"[/.]", name or "")[-1]
    while True:
        stripped = _SUFFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


def twin_of(source, used, *, name, shape, fresh=None):
    """The newest of ``used`` (oldest first) that is another weight with the source's base name and shape.

    A weight whose name is unknown (a parameter made inside ``forward`` that no module registered) is
    taken when ``fresh(u)`` says it was made inside the recording and it is the only such one of that shape.
    """
    others = [u for u in used if u is not source and tuple(shape(u)) == tuple(shape(source))]
    want = base_name(name(source))
    found = [u for u in others if want and base_name(name(u)) == want]
    if found:
        return found[-1]
    found = [u for u in others if fresh is not None and fresh(u) and not (want and base_name(name(u)))]
    return found[0] if len(found) == 1 else None


def made_anew(sname: str, twin_name: str, twin_made, source_made, nodes=()) -> Explanation | None:
    """``made_in_forward``: the target read ``twin_name``, a weight like the source made at ``twin_made``
    (``(file, line)``) inside a ``call()``/``forward()``; None when it was made elsewhere (a model built twice at
    the top level is another mistake, not this one). The fix depends on which of the two."""
    context = reasons.context_of(twin_made)
    if context.kind not in ("call", "forward"):
        return None
    earlier = ("" if not source_made else f" {sname} was made by the same line, on an earlier call." if
               tuple(source_made) == tuple(twin_made) else f" {sname} was made earlier{code_line(source_made)}")
    default = ("Fix: create the weight once — in build() with self.add_weight(...) (Keras), in __init__ "
               "(PyTorch: self.fc = nn.Linear(...)) — and only use it in call()/forward().")
    fix = reasons.fix("made_in_forward", context, default)
    message = (f"The target does not read {sname}: it read another weight of the same name and shape, "
               f"{twin_name}, made inside {context.function}(){code_line(twin_made)}\n"
               f"A weight made in {context.function}() is a new one on every call, so the one you asked for is "
               f"left behind.{earlier}\n{fix}")
    return Explanation("made_in_forward", message, file_line(twin_made), nodes=tuple(nodes))
