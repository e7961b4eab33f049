"""Nested structures of tensors (lists, tuples, dicts), flattened and rebuilt.

``tape.gradient(loss, {"w": w, "b": b})`` answers with a dict of the same
keys; this module is how. The structure is kept as plain data (no closures
that refer to themselves), so flattening never creates reference cycles
that would keep a step's graph alive until the garbage collector runs.
"""
from __future__ import annotations


def flatten(obj, is_leaf=None):
    """``(leaves, rebuild)``: the leaves of ``obj`` in order, and a function that
    puts a list of new leaves back into the same structure.

    ``is_leaf(container)``: True keeps that list, tuple or dict whole as one
    leaf (as ``jax.tree_util.tree_flatten``'s ``is_leaf``).
    """
    kind = type(obj)
    if kind is list or kind is tuple:       # the usual structure (a list of variables): one level, no spec
        for o in obj:
            if isinstance(o, (list, tuple, dict)):
                break
        else:
            if is_leaf is None or not is_leaf(obj):
                return list(obj), kind
    leaves: list = []
    spec = _spec(obj, leaves, is_leaf)
    if spec is None:
        return leaves, _single
    return leaves, lambda new: _build(spec, iter(new))


def _single(new):
    return new[0]


def _spec(o, leaves, is_leaf):
    if isinstance(o, (list, tuple, dict)) and (is_leaf is None or not is_leaf(o)):
        if isinstance(o, dict):
            return dict, {key: _spec(v, leaves, is_leaf) for key, v in o.items()}
        return type(o), [_spec(x, leaves, is_leaf) for x in o]
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
