"""What autograd saved for the backward pass, inside a recording: used by the learner's ``backward()``, then let go
of, and computed again when a trace asks.

A recording keeps the graph (``backward(retain_graph=True)``) so that a trace can differentiate again. But the
graph holds more than the values the recording sees: the tensors an op saves *inside* itself — the attention
probabilities and dropout mask of ``scaled_dot_product_attention``, a dropout's mask, the indices of a max-pool —
which no recorded op returns. A plain ``backward()`` frees each of them once its node ran; a kept graph held them
all, on BERT-tiny a fifth of a training step's peak memory.

So with ``record(exact_values=False)``, which puts memory before time, each recorded op runs with autograd's
saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``): a tensor it saves of at least
:data:`SMALLEST` entries is packed into a :class:`Saved` that holds it (an alias of its data, for a tensor with a
node: the tensor itself would hold the node that holds it). The first time autograd reads it back — during the
learner's own backward pass — a tensor that nothing else holds (no recorded value, no view, no other owner of its
storage) is handed over and let go of, as a plain backward pass frees it, when its op can run again to the same
bits (:class:`~.letgo.Recipe`: the same inputs at the same version numbers, a random op from the generator's state
just before it). A later read (a trace, ``rec.explain``) runs the op once more on its inputs, under hooks that
collect what it saves, and serves the tensor in the same place of that list. Every other saved tensor is held as
autograd held it. The hooks cost Python on every op (about 0.12× of a tiny transformer's step), which is why they
are not on by default.

Hooks are not pushed when another pair is in force (``torch.utils.checkpoint``'s, or the learner's own): the op
then saves as it would without the recording. Nor while ``torch.func`` transforms run, which refuse saved-tensor
hooks.
"""
from __future__ import annotations

import sys
import weakref

import torch

from .letgo import SEEDED, Recipe, _drawing_from, _replaced, _takes_generator

_top = torch._C._autograd._top_saved_tensors_default_hooks
_enabled = torch._C._autograd._saved_tensors_hooks_is_enabled
push = torch._C._autograd._push_saved_tensors_default_hooks
pop = torch._C._autograd._pop_saved_tensors_default_hooks
_use_count = torch._C._storage_Use_Count
SMALLEST = 16384        # a saved tensor of fewer entries is never let go of: packed as itself, no bookkeeping


def free() -> bool:
    """Whether an op may run under a recording's hooks: no other pair in force, and hooks allowed."""
    return _top(False) is None and _enabled()


class Saved:
    """One tensor autograd saved for recorded op ``op.index`` (``op``: its :class:`OpSaves`), ``k``-th of them.
    ``tensor`` is None once let go of; ``shape``/``dtype`` then say what a recompute must give back."""

    __slots__ = ("tensor", "op", "k", "asked", "shape", "dtype")

    def __init__(self, tensor, op, k):
        self.tensor, self.op, self.k, self.asked = tensor, op, k, False


class OpSaves:
    """The tensors one recorded op had autograd save, in order, and how to compute them again.

    ``index``: the op's place in the recording, once it can run again to the same bits (else None: nothing is let
    go of); its :class:`~.letgo.Recipe` is kept in the recording's :class:`~.letgo.Releases` (``saving``), reached
    through ``releases``, a weak reference. The op's node holds this object, and the recording holds the values
    whose nodes lead to it: a strong reference from here to the recording (or to a recipe's inputs, one of which an
    in-place write ``h += f(h)`` makes hold the node of ``f``) would be a cycle through C++ that Python's collector
    cannot free — the loss, the graph and the recording would outlive the step. ``again``: the saved tensors of the
    op run again, while a trace reads them; ``store``: the recording's list of those, emptied after it."""

    __slots__ = ("items", "count", "index", "releases", "again", "store")

    def __init__(self):
        self.items: list = []       # the saved tensors large enough to be let go of
        self.count = 0              # every tensor the op saved
        self.index = None
        self.again = None

    def pack(self, t):
        # an op's output holds its node, which holds what it saved: holding the output itself would be a cycle
        # through C++ that Python's collector cannot see (the value would never be freed); an alias of its data
        # is not
        k = self.count
        self.count = k + 1
        t = t if t.grad_fn is None else t.detach()
        if t.numel() < SMALLEST:        # never let go of: packed as itself
            return t
        h = Saved(t, self, k)
        self.items.append(h)
        return h

    def settle(self, op, func, args, kwargs, releases, store) -> None:
        """The op ran and was recorded as ``op``: keep how to run it again, when it can be (see the module)."""
        ins = op.inputs
        if any(id(o) in map(id, ins) for o in op.outputs) or _takes_generator(args, kwargs):
            return          # it writes into an input (its saves are that value's), or draws from its own generator
        rng = None
        if SEEDED.get(op.name) is not False:
            before = releases._rng
            if before is None or before[0] != op.index:
                return      # may draw random numbers, and the generator's state was not taken before it ran
            rng = before[1]
        if any(type(a) is list for a in args):      # torch.cat(parts): parts may grow afterwards
            args = tuple(list(a) if type(a) is list else a for a in args)
        releases.saving[op.index] = Recipe(op.index, func, args, kwargs, [t._version for t in ins], (), rng)
        self.index, self.releases, self.store = op.index, weakref.ref(releases), store
        uses = releases.uses
        for t in ins:         # the recipe's arguments hold them too: one more holder for the let-go to count
            if id(t) in uses:
                uses[id(t)] += 1

    def _releases(self):
        releases = self.releases()
        if releases is None:
            raise RuntimeError("PyTorch asked again for a tensor saved for the backward pass inside an "
                               "adv.torch.record() that no longer exists: keep the recording (rec) alive while "
                               "differentiating its graph again.")
        return releases

    def may_let_go(self) -> bool:
        """Whether the op's inputs still hold what it read, so that it can run again to the same bits: each at its
        version then, or let go of with a recipe (not as statistics, which a run cannot read). When they do, they
        are marked never to be kept as statistics afterwards (the let-go at the recording's end)."""
        releases = self.releases()
        if releases is None:
            return False
        ins = releases.ops[self.index].inputs
        if not releases._unchanged(ins, releases.saving[self.index].versions):
            return False
        releases.read_again.update(map(id, ins))
        return True

    def run_again(self) -> list:
        """The op run again on its inputs (requiring grad as they do), under hooks that collect what it saves."""
        releases = self._releases()
        op, recipe = releases.ops[self.index], releases.saving[self.index]
        memo, by = {}, {}
        for i, v in zip(op.inputs, recipe.versions):
            now = releases.input_again(i, v, memo)
            if now is i:
                now = i.detach()            # the op writes into none of its inputs (settle): no copy needed
            elif now is None:
                raise RuntimeError(
                    f"PyTorch could not compute again what '{op.name}' saved for the backward pass: one of its inputs "
                    "changed in place since it ran. Trace or explain before that change (right after "
                    "loss.backward(), inside the recording).")
            by[id(i)] = now.requires_grad_(i.requires_grad) if now.is_floating_point() or now.is_complex() else now
        got: list = []
        push(lambda t: got.append(t if t.grad_fn is None else t.detach()), _same)   # packs None: the run's own
        #                                                                          graph is never differentiated
        try:
            with torch._C.DisableTorchFunction(), torch.set_grad_enabled(op.grad_enabled), \
                    _drawing_from(recipe.rng):
                recipe.func(*_replaced(recipe.args, by), **_replaced(recipe.kwargs or {}, by))
        finally:
            pop()
        return got

    def read(self, h) -> torch.Tensor:
        """Saved tensor ``h``, let go of: from the op run again (once per trace: the store forgets it after)."""
        got = self.again
        if got is None:
            got = self.run_again()
            if len(got) != self.count:
                raise RuntimeError(f"PyTorch saved {len(got)} tensors running '{self._name()}' again, "
                                   f"{self.count} the first time: its saved tensors cannot be given back.")
            self.again = got
            self.store.append(self)
        t = got[h.k]
        if t.shape != h.shape or t.dtype != h.dtype:
            raise RuntimeError(f"running '{self._name()}' again saved a tensor of shape {tuple(t.shape)} ({t.dtype}) "
                               f"where it had saved {tuple(h.shape)} ({h.dtype}).")
        return t

    def _name(self) -> str:
        return self._releases().ops[self.index].name


def _same(t):
    return t


def unpack(h) -> torch.Tensor:
    """Autograd reads saved tensor ``h`` back. The first time, a tensor nothing else holds is handed over and let go
    of when its op can run again; afterwards it is computed again."""
    if type(h) is not Saved:        # a small tensor, packed as itself
        return h
    t = h.tensor
    if t is None:
        return h.op.read(h)
    if not h.asked:
        h.asked = True
        # held by h, this frame and getrefcount's argument only; its storage by t alone (+ the storage object asked)
        if h.op.index is not None and sys.getrefcount(t) == 3 and t._base is None and \
                _use_count(t.untyped_storage()._cdata) == 2 and h.op.may_let_go():
            h.shape, h.dtype, h.tensor = t.shape, t.dtype, None
    return t
