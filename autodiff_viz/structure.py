"""Nested structures of tensors (lists, tuples, dicts), flattened and rebuilt.

``tape.gradient(loss, {"w": w, "b": b})`` answers with a dict of the same
keys; this module is how. The structure is kept as plain data (no closures
that refer to themselves), so flattening never creates reference cycles
that would keep a step's graph alive until the garbage collector runs.
"""
from __future__ import annotations


def flatten(obj):
    """``(leaves, rebuild)``: the leaves of ``obj`` in order, and a function that
    puts a list of new leaves back into the same structure."""
    kind = type(obj)
    if kind is list or kind is tuple:       # the usual structure (a list of variables): one level, no spec
        for o in obj:
            if isinstance(o, (list, tuple, dict)):
                break
        else:
            return list(obj), kind
    leaves: list = []
    spec = _spec(obj, leaves)
    if spec is None:
        return leaves, _single
    return leaves, lambda new: _build(spec, iter(new))


def _single(new):
    return new[0]


def _spec(o, leaves):
    if isinstance(o, (list, tuple)):
        return type(o), [_spec(x, leaves) for x in o]
    if isinstance(o, dict):
        return dict, {key: _spec(v, leaves) for key, v in o.items()}
    leaves.append(o)
    return None


def _build(spec, it):
    if spec is None:
        return next(it)
    kind, children = spec
    if kind is dict:
        return {key: _build(c, it) for key, c in children.items()}
    items = [_build(c, it) for c in children]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)
