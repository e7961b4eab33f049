"""``keras.ops.rearrange``: einops' axis notation, read as one reshape, one transpose and one reshape.

A pattern names the axes of the input and of the output: ``"b h w c -> b c h w"`` moves the channels,
``"b h w c -> b (h w) c"`` merges two axes into one of length ``h·w``, ``"b (h1 h) w c -> (b h1) h w c"``
splits one axis in two (a length given as a keyword, ``h1=2``, the other inferred). No entry is computed:
the output is the input's entries in another order, so the gradient is ḡ put back in the input's order —
the reshape and transpose rules' own VJPs, nothing new.
"""
from __future__ import annotations

import re

from ..tensor import Tensor, constant
from . import reshape, transpose

_TOKEN = re.compile(r"\(([^()]*)\)|([A-Za-z_]\w*)|(\S+)")


def _side(text: str, side: str, pattern: str) -> list:
    """One side of the arrow as a list of groups, each a list of axis names (a bare name is a group of one)."""
    groups = []
    for inner, name, other in _TOKEN.findall(text):
        if other:
            raise ValueError(f"rearrange: {other!r} in the {side} of {pattern!r} is not supported; write axis "
                             "names and (grouped names), e.g. 'b (h w) c -> b h w c' (Keras' rearrange has no "
                             "'...', no '1' and no anonymous axes either).")
        names = inner.split() if name == "" else [name]
        if not names or any(not re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
            raise ValueError(f"rearrange: the group ({inner}) in {pattern!r} must hold one or more axis names.")
        groups.append(names)
    return groups


def rearrange(tensor, pattern, **axes_lengths):
    """``keras.ops.rearrange(x, "b h w c -> b c h w")``: the axes of ``x`` moved, merged and split as the
    einops pattern says.

    Read left to right: each input group ``(h1 h)`` splits that axis into its named parts (row-major: ``h``
    varies fastest), lengths from ``axes_lengths`` with at most one inferred; the named axes are then
    transposed into the output's order; each output group ``(h w)`` merges its axes into one of length
    ``h·w``. Every name must appear once on each side (rearrange neither repeats nor reduces).
    """
    x = tensor if isinstance(tensor, Tensor) else constant(tensor)
    if not isinstance(pattern, str) or pattern.count("->") != 1:
        raise ValueError(f"rearrange: the pattern must read 'input axes -> output axes', got {pattern!r}.")
    left, right = pattern.split("->")
    ins, outs = _side(left, "input", pattern), _side(right, "output", pattern)
    if len(ins) != x.ndim:
        raise ValueError(f"rearrange: {pattern!r} names {len(ins)} input axes, the tensor has {x.ndim} "
                         f"(shape {x.shape}).")
    flat_in = [n for g in ins for n in g]
    flat_out = [n for g in outs for n in g]
    for flat, side in ((flat_in, "input"), (flat_out, "output")):
        repeated = sorted({n for n in flat if flat.count(n) > 1})
        if repeated:
            raise ValueError(f"rearrange: {repeated} appear more than once in the {side} of {pattern!r}.")
    if set(flat_in) != set(flat_out):
        raise ValueError(f"rearrange: every axis must appear on both sides of {pattern!r}; only on one side: "
                         f"{sorted(set(flat_in) ^ set(flat_out))}.")
    unknown = sorted(set(axes_lengths) - set(flat_in))
    if unknown:
        raise ValueError(f"rearrange: lengths given for {unknown}, which {pattern!r} does not name.")
    lengths = {}
    for group, n in zip(ins, x.shape):
        known = [a for a in group if a in axes_lengths]
        free = [a for a in group if a not in axes_lengths]
        product = 1
        for a in known:
            product *= int(axes_lengths[a])
            lengths[a] = int(axes_lengths[a])
        if len(free) > 1:
            raise ValueError(f"rearrange: the axis of length {n} is split into {group}; give the lengths of all "
                             f"but one of {free} as keywords, e.g. rearrange(x, pattern, {free[0]}=...).")
        if free:
            if product == 0 or n % product:
                raise ValueError(f"rearrange: the axis of length {n} cannot be split into {group} with "
                                 f"{dict((a, lengths[a]) for a in known)}.")
            lengths[free[0]] = n // product
        elif product != n:
            raise ValueError(f"rearrange: the axis ({' '.join(group)}) has length {n}, not "
                             f"{' · '.join(str(lengths[a]) for a in group)} = {product}.")
    if len(flat_in) != x.ndim:
        x = reshape(x, tuple(lengths[a] for a in flat_in))
    order = tuple(flat_in.index(a) for a in flat_out)
    if order != tuple(range(len(order))):
        x = transpose(x, order)
    out_shape = []
    for group in outs:
        size = 1
        for a in group:
            size *= lengths[a]
        out_shape.append(size)
    return reshape(x, tuple(out_shape)) if tuple(out_shape) != x.shape else x
