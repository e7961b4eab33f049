"""Nested structures of tensors (lists, tuples, dicts), flattened and rebuilt.

``tape.gradient(loss, {"w": w, "b": b})`` answers with a dict of the same
keys; this module is how.
"""
from __future__ import annotations


def flatten(obj):
    """``(leaves, rebuild)``: the leaves of ``obj`` in order, and a function that
    puts a list of new leaves back into the same structure."""
    leaves: list = []

    def walk(o):
        if isinstance(o, (list, tuple)):
            kinds = [walk(x) for x in o]
            if isinstance(o, tuple) and hasattr(o, "_fields"):
                return lambda it: type(o)(*[k(it) for k in kinds])
            return lambda it: type(o)(k(it) for k in kinds)
        if isinstance(o, dict):
            kinds = {key: walk(v) for key, v in o.items()}
            return lambda it: {key: k(it) for key, k in kinds.items()}
        leaves.append(o)
        return lambda it: next(it)

    build = walk(obj)
    return leaves, lambda new: build(iter(new))
