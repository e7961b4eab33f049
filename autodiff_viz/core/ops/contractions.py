"""Contractions under their numpy names: ``matmul``, ``dot``, ``inner``, ``outer``, ``tensordot``, ``einsum``.
"""
from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from .. import rules as R
from ..engine import call
from .common import _no_out, _tensor
from .elementwise import multiply
from .shapes import broadcast_to, cast, reshape, split

if TYPE_CHECKING:
    from typing import Any

    from ..types import Axis, DTypeLike, Tensor, TensorLike

# ----- the numpy surface: contractions --------------------------------------------
_LETTERS = R._LETTERS


def _parse_einsum(subscripts, operands):
    """Explicit subscripts (``'ij,jk->ik'``), broadcasting operands whose ``...`` axes differ."""
    s = subscripts.replace(" ", "")
    if "->" not in s:       # implicit output: the indices used once, in alphabetical order (as numpy)
        letters = s.replace("...", "").replace(",", "")
        s += "->" + ("..." if "..." in s else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins, out = s.split("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: '{subscripts}' names {len(ins)} operand(s) but {len(operands)} were given.")
    for term, x in zip(ins, operands):
        if "..." not in term and len(term) != x.ndim:
            raise ValueError(f"einsum: '{term}' has {len(term)} indices but its operand has shape {x.shape}.")
    if "..." in s:      # numpy broadcasts the `...` axes (right-aligned) of the operands
        spans = [(t.index("..."), x.ndim - len(t.replace("...", ""))) if "..." in t else None
                 for t, x in zip(ins, operands)]
        common = np.broadcast_shapes(*[x.shape[p:p + w] for x, sp in zip(operands, spans) if sp for p, w in [sp]])
        fixed = []
        for x, sp in zip(operands, spans):
            if sp:
                p, w = sp
                want = x.shape[:p] + common[len(common) - w:] + x.shape[p + w:]
                if want != x.shape:
                    x = broadcast_to(x, want)
            fixed.append(x)
        operands = fixed
        ins, out = R._explicit(",".join(ins) + "->" + out, [x.ndim for x in operands])
    return ",".join(ins) + "->" + out, operands


def _contract(rule, subscripts, *operands):
    xs = [_tensor(x) for x in operands]
    subs, xs = _parse_einsum(subscripts, xs)
    return call(rule, *xs, subscripts=subs)


def einsum(subscripts: str, *operands: TensorLike, optimize: Any = None, out: None = None,
           dtype: DTypeLike | None = None) -> Tensor:
    """``np.einsum``: explicit (``'bij,bjk->bik'``) or implicit (``'ii'``) output, ``...`` for leading axes.

    The gradient for each operand is an einsum of ḡ with the other operands.
    """
    _no_out(out, "einsum")
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts,) + operands)
    y = _contract(R.einsum, subscripts, *operands)
    return y if dtype is None else cast(y, dtype)


def _from_sublists(args):
    """numpy's other einsum form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as a subscripts string."""
    def term(sub):
        return "".join("..." if i is Ellipsis else _LETTERS[int(i)] for i in sub)
    operands, terms = list(args[0::2]), [term(sub) for sub in args[1::2]]
    if len(args) % 2:       # an output sublist at the end
        out = term(args[-1])
        operands = operands[:-1]
        return ",".join(terms) + "->" + out, tuple(operands)
    return ",".join(terms), tuple(operands)


def _letters(n, start=0):
    return _LETTERS[start:start + n]


def tensordot(a: TensorLike, b: TensorLike, axes: Axis = 2) -> Tensor:
    """``Σ a·b`` over pairs of axes (``axes`` an int n: the last n of a with the first n of b)."""
    a, b = _tensor(a), _tensor(b)
    if isinstance(axes, Integral):
        n = int(axes)
        pa, pb = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        pa, pb = ([int(v)] if isinstance(v, Integral) else [int(u) for u in v] for v in axes)
    pa, pb = [p % a.ndim for p in pa], [p % b.ndim for p in pb]
    sa = list(_letters(a.ndim))
    sb = list(_letters(b.ndim, a.ndim))
    for i, j in zip(pa, pb):
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in pa] + [c for k, c in enumerate(sb) if k not in pb]
    return call(R.tensordot, a, b, subscripts="".join(sa) + "," + "".join(sb) + "->" + "".join(out))


def dot(a: TensorLike, b: TensorLike, out: None = None) -> Tensor:
    """``np.dot``: a product of numbers, a matrix product for 1-D/2-D, else the last axis of ``a`` with the
    second-to-last of ``b``."""
    _no_out(out, "dot")
    a, b = _tensor(a), _tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    sa = _letters(a.ndim)
    sb = list(_letters(b.ndim, a.ndim))
    sb[-2 if b.ndim > 1 else -1] = sa[-1]
    sb = "".join(sb)
    out = sa[:-1] + "".join(c for c in sb if c != sa[-1])
    return call(R.dot, a, b, subscripts=f"{sa},{sb}->{out}")


def inner(a: TensorLike, b: TensorLike) -> Tensor:
    """``Σ a·b`` over the last axes (``np.inner``)."""
    a, b = _tensor(a), _tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    sa, sb = _letters(a.ndim), _letters(b.ndim, a.ndim)
    sb = sb[:-1] + sa[-1]
    return call(R.inner, a, b, subscripts=f"{sa},{sb}->{sa[:-1]}{sb[:-1]}")


def outer(a: TensorLike, b: TensorLike, out: None = None) -> Tensor:
    """``yᵢⱼ = aᵢ·bⱼ`` of the flattened inputs (``np.outer``)."""
    _no_out(out, "outer")
    return call(R.outer, reshape(a, (-1,)), reshape(b, (-1,)), subscripts="i,j->ij")


def vdot(a: TensorLike, b: TensorLike) -> Tensor:
    return inner(reshape(a, (-1,)), reshape(b, (-1,)))


# np.split on a tensor is adv.split itself (numpy's indices); kept for the dispatch table of numpy's names.
_numpy_split = split
_NUMPY_SPELLING = {"split": split}
