"""Values a library module made and let go of: a recording lets go of their memory too, and a trace recomputes them.

A plain forward pass frees what a module computed and no longer needs — a LayerNorm's output once the projection
after it ran, the terms of GPT-2's GELU, a BatchNorm's output once the ReLU read it. Autograd keeps only what the
backward pass needs (its saved tensors). A recording that held every value would cost the model's activations a
second time: on the tiny transformers of ``benchmarks/real_models.py`` those values were a third of a step's peak.

So a value that

* an op inside a library module made (``torch``, ``transformers`` … — never a line of the learner's own code),
* has at least :data:`RELEASE_FROM` entries (256 KB in float32: letting go of a value costs a few microseconds
  of Python, which a small value does not repay on a step of a few milliseconds), or
  :data:`RELEASE_FROM_ALL` with ``record(exact_values=False)``, which puts memory before time,
* nobody but the recording holds (no Python reference outside it, no other owner of its storage: autograd's saved
  tensors share it, and so do views),
* lives on the CPU (a device's own generator is not looked at; no GPU here to test it),

lets go of its memory when a module returns and nobody holds it any more — as a plain forward pass frees it, so
the forward pass's peak stays near the plain one — or at the latest before ``backward()``: its storage is swapped
for one element broadcast to its shape. Its shape, dtype and autograd identity stay, so a trace still draws it and
differentiates through it — no gradient reads it, as autograd did not save it. Who holds it is counted: the
recording's own references, and the one reference PyTorch adds to a tensor that C++ holds too (a view's base, an
input autograd saved), whose owner the storage's use count names. A view goes with its base, and waits with it
while either is held (GPT-2's logits, returned in the model's output, read by the loss through a view).

What the trace shows of it:

* **recomputed**, when its op can run again to the same numbers: the op took no generator of its own and its
  inputs still hold the values it read (their version numbers say so). An op that may draw random numbers —
  PyTorch tags every such ATen op ``nondeterministic_seeded`` (dropout, rrelu, bernoulli,
  scaled_dot_product_attention …), and a name ATen does not know may too — has the CPU generator's state taken
  just before it runs, and runs again from that state, as activation checkpointing does: the same draws, so the
  same mask. A value an op wrote into afterwards (``hidden += residual`` after a BatchNorm, a
  ``Dropout(inplace=True)``) runs its op, then each such write, on what it made. A trace runs them on copies of
  their inputs with the same strides — the same kernels on the same numbers, so the same bits, and the learner's
  tensors and random numbers untouched. A write to such an input inside the recording first computes the value
  again and keeps it (:meth:`Releases.before_write`).
* **statistics**, with ``record(exact_values=False)`` only: a value that cannot be recomputed is kept as its
  minimum, mean, maximum, norm and first entries — what a trace shows of any large array; a value let go of whose
  recipe reads it is summarised first, as a recipe never reads statistics.

Every other value stays whole.
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import sys

import torch

from .capture import statistics

RELEASE_FROM = 65536    # values with at least this many entries may let go of their memory
RELEASE_FROM_ALL = 4096  # ... with record(exact_values=False), which puts memory before time
LOST = "lost"           # in Releases.freed: a value let go of whose inputs changed before it could be put back
_generator = torch.default_generator
_Generator = torch._C.Generator


@functools.lru_cache(maxsize=256)
def _stand_in(dtype, shape) -> torch.Tensor:
    """What a value let go of holds: one zero of ``dtype`` on the CPU, broadcast to ``shape`` (one element of
    memory). The same object serves every value of that dtype and shape (``.data =`` copies its description)."""
    return torch.zeros((), dtype=dtype).expand(shape)


class Recipe:
    """How to compute again the outputs of recorded op ``index``: ``func(*args, **kwargs)`` as the op was called
    (a list among the arguments copied), each of the op's inputs at the version number it had then, ``made``: the
    version number of each output (a later write in place, ``relu_``, changes what the op made), and ``rng``:
    the CPU generator's state before the op ran, for an op that may draw random numbers (else None). ``writes``: the
    op writes into one of its inputs (``add_``), so it only changes a value some other op made; ``then``: such ops, run
    after this one on what it made."""

    __slots__ = ("index", "func", "args", "kwargs", "versions", "made", "rng", "writes", "then")

    def __init__(self, index, func, args, kwargs, versions, made, rng=None, writes=False, then=()):
        self.index, self.func, self.args, self.kwargs, self.versions = index, func, args, kwargs, versions
        self.made, self.rng, self.writes, self.then = made, rng, writes, then

    def followed_by(self, then: tuple) -> Recipe:
        """This recipe, then the in-place ops ``then`` (``hidden += residual`` after a BatchNorm) on what it made."""
        return Recipe(self.index, self.func, self.args, self.kwargs, self.versions, self.made, self.rng, self.writes,
                      then)


@contextlib.contextmanager
def _drawing_from(state):
    """Run with the CPU generator at ``state`` (a :class:`Recipe`'s ``rng``), then put back the learner's."""
    if state is None:
        yield
        return
    now = _generator.get_state()
    _generator.set_state(state)
    try:
        yield
    finally:
        _generator.set_state(now)


def tensors_in(obj, out: list) -> list:
    """The tensors of a call's arguments or result, in order, appended to ``out``: ``obj`` itself, or those in its
    lists, tuples and dicts (nested ones too)."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            if isinstance(o, torch.Tensor):
                out.append(o)
            elif isinstance(o, (list, tuple, dict)):
                tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            tensors_in(o, out)
    return out


def _replaced(obj, by: dict):
    """A call's arguments ``obj`` with each tensor ``t`` replaced by ``by[id(t)]``."""
    if isinstance(obj, torch.Tensor):
        return by[id(obj)]
    if isinstance(obj, (list, tuple)):
        out = [_replaced(o, by) for o in obj]
        return out if isinstance(obj, list) else tuple(out)
    if isinstance(obj, dict):
        return {k: _replaced(v, by) for k, v in obj.items()}
    return obj


SEEDED: dict = {}       # op name -> whether ATen says it draws random numbers (None: no ATen op of that name)
_UNSEEN = object()


def _seeded(name: str) -> bool | None:
    """Whether the ATen op a recorded name stands for draws random numbers — PyTorch tags every such overload
    ``nondeterministic_seeded`` (dropout, rrelu, bernoulli, scaled_dot_product_attention …) — or None when no ATen op
    has that name (a ``torch.nn.functional`` wrapper), for the generator's state to tell. A Python operator
    (``__getitem__``, ``__rsub__``, ``__truediv__``) draws nothing."""
    if name[:2] == "__" and name[-2:] == "__":
        SEEDED[name] = False
        return False
    try:
        packet = getattr(torch.ops.aten, name.strip("_"))
        seeded = any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags for o in packet.overloads())
    except (AttributeError, RuntimeError, TypeError):
        seeded = None
    SEEDED[name] = seeded
    return seeded


def may_draw(name: str) -> bool:
    """Whether torch function ``name`` may draw random numbers: ATen tags it so, or ATen does not know the name."""
    seeded = SEEDED.get(name, _UNSEEN)
    if seeded is _UNSEEN:
        seeded = _seeded(name)
    return seeded is not False


def _takes_generator(args, kwargs) -> bool:
    # type(...) is: isinstance against torch.Generator goes through a metaclass check costing microseconds
    return any(type(v) is _Generator for v in args) or bool(kwargs) and any(type(v) is _Generator
                                                                            for v in kwargs.values())


def _same_strides(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` with its strides (so a kernel takes the same path on it), or ``t`` itself when it has none of
    its own to copy into (a broadcast view: no op writes into one)."""
    if 0 in t.stride() or t.layout != torch.strided:
        return t
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def _position(op, t) -> int:
    """Where ``t`` is among the outputs of recorded op ``op``."""
    return next(p for p, o in enumerate(op.outputs) if o is t)


def _root(t: torch.Tensor) -> torch.Tensor:
    """The tensor that owns ``t``'s storage: its base if ``t`` is a view, else ``t``."""
    base = t._base
    return t if base is None else base


def _alone(members, recorded, least: int) -> bool:
    """Whether nothing but ``members`` (values held only by a recording, all on one storage) owns that storage:
    no other view of it, no copy autograd saved (a saved output shares the storage), no C++ holder of one of
    them (autograd saving an input keeps the tensor itself), and each a plain tensor of at least ``least`` real
    entries (no subclass, no quantized or inference tensor, whose data cannot be
    swapped). A view goes with its base: a recorded base must be a member; a base no one recorded (``F.linear``
    on 3-D input returns a view of its 2-D result) goes with them when no Python code holds it."""
    first = members[0]
    root = first if first._base is None else first._base
    views = sum(1 for t in members if t is not root)
    hidden = views == len(members)
    if hidden and (id(root) in recorded or sys.getrefcount(root) != _HIDDEN_BASE_REFS):
        return False
    for t in members:
        if type(t) is not torch.Tensor or t.numel() < least or t.is_complex() or t.is_quantized or \
                t.is_inference() or t.layout != torch.strided or t is not root and t._use_count() != 1:
            return False
    if root._use_count() != 1 + views:
        return False
    try:
        return torch._C._storage_Use_Count(root.untyped_storage()._cdata) == 1 + len(members) + hidden
    except (RuntimeError, NotImplementedError):     # a layout without storage
        return False


def _base_refs(view) -> int:
    """Python references to the base of ``view``, counted as :func:`_alone` counts them (a local, the argument,
    and whatever this PyTorch keeps for a base only its views hold)."""
    root = view._base
    return sys.getrefcount(root)


_HIDDEN_BASE_REFS = _base_refs(torch.zeros(4, 4).view(16))


class Releases:
    """What one recording let go of (see the module's docstring).

    ``freed``: ``{id(value): (Recipe, position among the op's outputs) or Summary}``; ``pending``: values library
    modules made, not yet let go of (someone held them when last asked), with the index of the op that made each.
    """

    __slots__ = ("ops", "recorded", "exact", "least", "freed", "recipes", "pending", "at", "later", "uses", "feeds",
                 "saving", "read_again", "_rng", "__weakref__")

    def __init__(self, ops: list, recorded: dict, exact: bool):
        self.ops = ops              # the recording's ops and its ids of tensors (not the recording: no cycle,
        self.recorded = recorded    # so a recording dropped frees its tensors at once)
        self.exact = exact
        self.least = RELEASE_FROM if exact else RELEASE_FROM_ALL     # entries of the smallest value let go of
        self.freed: dict = {}
        self.recipes: dict = {}     # op index -> its Recipe, for ops whose outputs may be let go of
        self.pending: list = []
        self.at: list = []
        self.later: list = []       # (op index, value): storage owned by someone else when last asked
        self.uses: dict = {}        # id(pending value) -> how many places of rec.ops hold it
        self.feeds: dict | None = None  # id(input) -> the values let go of that a recipe computes from it (on demand)
        self.saving: dict = {}      # op index -> its Recipe, for ops whose saved tensors may be let go of (saved.py)
        self.read_again: set = set()    # id(input) of an op whose saved tensors went: never kept as statistics
        self._rng = None

    def before(self, name: str, index: int) -> None:
        """Op ``name``, recorded as op ``index`` of a library module, is about to run: when it may draw random
        numbers (ATen's tag says so, or ATen does not know the name), keep the CPU generator's state now, so that
        it can run again on the same draws."""
        self._rng = (index, _generator.get_state()) if may_draw(name) else None

    # ----- while recording -------------------------------------------------------------
    def note(self, op, func, args, kwargs) -> None:
        """Op ``op`` inside a library module made its outputs: keep the ones large enough in :attr:`pending`,
        with a recipe when the op can be run again to the same numbers."""
        big = [t for t in op.outputs if type(t) is torch.Tensor and t.numel() >= self.least and t.is_cpu]
        if not big:
            return
        rng, again, writes = None, True, any(o is i for o in op.outputs for i in op.inputs)
        if SEEDED.get(op.name, _UNSEEN) is not False:     # may draw: from the state before it ran
            before = self._rng
            if before is not None and before[0] == op.index and not _takes_generator(args, kwargs):
                rng = before[1]
            else:
                again = False
        if again:
            if any(type(a) is list for a in args):      # torch.cat(parts): parts may grow afterwards
                args = tuple(list(a) if type(a) is list else a for a in args)
            ins = op.inputs
            self.recipes[op.index] = Recipe(op.index, func, args, kwargs, [t._version for t in ins],
                                            [t._version for t in op.outputs], rng, writes)
            uses = self.uses
            for t in ins:                       # the recipe's arguments hold the inputs too
                if id(t) in uses:
                    uses[id(t)] += 1
        elif self.exact:
            return
        uses, pending, at = self.uses, self.pending, self.at
        for t in big:
            if id(t) not in uses:       # the op's outputs hold it (an op writing into a value noted already: counted)
                uses[id(t)] = 1
            pending.append(t)
            at.append(op.index)

    def let_go(self, since: int = 0, final: bool = False) -> None:
        """Let go of the pending values made since op ``since`` that nobody but the recording holds any more.

        Asked when a module returns (for the values made inside it), before a ``backward()`` and when the recording
        ends (``final``). A value some Python code still holds is asked again at the next of these. One whose
        storage has another owner — autograd saved it, or a view of it lives — waits in :attr:`later` for the next
        ``final`` ask (a view may have died by then), and is not asked again after that: autograd keeps what it
        saved as long as the recording keeps the graph.
        """
        at = self.at
        if final and self.later:
            merged = sorted([*zip(at, self.pending), *self.later], key=lambda e: e[0])     # stable: by op index
            self.at, self.pending, self.later = [k for k, _ in merged], [t for _, t in merged], []
            at = self.at
            del merged                  # its tuples would count as holders
        if not at or at[-1] < since:
            return
        with torch._C.DisableTorchFunction():   # ._base, ._use_count(), .data = : no recorded events
            failed = self._ask(since)
        if not final:
            self.later += failed

    def _ask(self, since: int) -> list:
        """:meth:`let_go` once: the ``(op index, value)`` whose storage had another owner."""
        at, pending = self.at, self.pending
        k = bisect.bisect_left(at, since)
        tail, made = pending[k:], at[k:]
        del pending[k:], at[k:]
        uses, refcount = self.uses, sys.getrefcount
        entries: dict = {}              # a value an op wrote into (add_) or returned (contiguous()) is listed again
        for t in tail:
            entries[id(t)] = entries.get(id(t), 0) + 1
        back, alone = [], []
        for j in range(len(tail)):
            t = tail[j]
            # + its entries in tail, t, refcount's argument, and the one reference PyTorch adds while C++ holds the
            # tensor too (a view's base, autograd's saved input): _free asks the storage who that is
            if refcount(t) > uses.get(id(t), 0) + entries[id(t)] + 2 + (t._use_count() > 1):
                back.append(j)
            else:
                alone.append(j)
        if back and alone:      # a view goes with its base: one held (a model's returned logits) keeps its views
            held = {id(_root(tail[j])) for j in back}
            joins = [j for j in alone if id(_root(tail[j])) in held]
            if joins:
                back = sorted(back + joins)
                alone = [j for j in alone if j not in joins]
        for j in back:
            pending.append(tail[j])
            at.append(made[j])
        return self._free([(tail[j], made[j]) for j in alone]) if alone else []

    def _free(self, alone) -> None:
        """Let go of the values in ``alone`` (``(tensor, op index)``, none held outside the recording) whose storage
        nothing else owns; a view goes with its base and the other views of it. Returns ``(op index, value)`` of the
        ones whose storage has another owner."""
        groups: dict = {}
        for t, k in alone:
            base = t._base
            groups.setdefault(id(t if base is None else base), []).append((t, k))
            del base                    # a reference held here would count as someone else's in _alone
        freed, recorded, owned = self.freed, self.recorded, []
        for members in groups.values():
            made_by: dict = {}              # an op that writes into its input (add_) or returns it (contiguous())
            firsts = []                     # records it again: the op that made it, then those that wrote into it
            for t, k in members:
                ks = made_by.get(id(t))
                if ks is None:
                    made_by[id(t)] = [k]
                    firsts.append((t, k))
                else:
                    ks.append(k)
            members = firsts
            values = [t for t, _ in members]
            if not _alone(values, recorded, self.least):
                owned += [(k, t) for t, _ in members for k in made_by[id(t)]]
                continue
            kept = {}
            for t, _ in members:
                if id(t) in freed:
                    continue
                recipe = self._recipe(t, made_by[id(t)])
                if recipe is not None:
                    kept[id(t)] = recipe
                elif not self.exact and id(t) not in self.read_again:
                    try:
                        kept[id(t)] = statistics(t)
                    except (RuntimeError, TypeError, ValueError):   # a dtype numpy cannot read: keep it whole
                        break
                else:
                    break
            else:
                for t in values:            # what a recipe computes from a value kept as statistics: summarised now
                    if not isinstance(kept.get(id(t)), tuple):
                        self.before_write(t, whole=False)
                self._swap(values, kept)
        return owned

    def _recipe(self, t, made_by: list):
        """``(Recipe, position)`` that computes value ``t`` again — the op that made it (``made_by[0]``), then the
        in-place ops that wrote into it — or None when one of them cannot run again, or read an input that changed
        since."""
        ops, recipes = self.ops, self.recipes
        chain = [recipes.get(k) for k in made_by]
        first = chain[0]
        if first is None or first.writes or any(r is None or not r.writes for r in chain[1:]):
            return None
        position = _position(ops[first.index], t)
        last = chain[-1]
        if t._version != last.made[_position(ops[last.index], t)] or \
                not all(self._unchanged(ops[r.index].inputs, r.versions, t) for r in chain):
            return None
        return (first if len(chain) == 1 else first.followed_by(tuple(chain[1:]))), position

    def _unchanged(self, inputs, versions, written=None) -> bool:
        """Whether ``inputs`` (but ``written``, the value a chain of recipes writes into) still hold what a recipe
        read: each at its version then, or itself let go of and recomputable."""
        freed = self.freed
        for i, v in zip(inputs, versions):
            if i is written:
                continue
            kept = freed.get(id(i))
            if kept is not None and not isinstance(kept, tuple) or i._version != v and kept is None:
                return False
        return True

    def _swap(self, values, kept) -> None:
        base = values[0]._base
        try:
            for t in values + ([] if base is None else [base]):     # the base holds the same storage
                t.data = _stand_in(t.dtype, t.shape)
        except RuntimeError:        # a tensor whose data cannot be swapped: the storage stays, the values too
            return
        self.freed.update(kept)
        if self.feeds is not None:          # kept up to date once built, not built again for every value let go of
            for t in values:
                got = kept.get(id(t))
                if isinstance(got, tuple):
                    self._feed(t, got[0])

    def before_write(self, t, whole: bool = True) -> None:
        """``t`` is about to change in place and no copy will put its values back for a trace: the values let go
        of that a recipe computes from it are computed now and kept whole — or as their statistics and first
        entries (``whole=False``: ``t`` is a weight the recording keeps that way itself,
        :func:`.capture.values_before`)."""
        if self.feeds is None:
            self.feeds, values = {}, self._values_by_id()
            for key, got in self.freed.items():
                if isinstance(got, tuple):
                    self._feed(values[key], got[0])
        waiting = self.feeds.pop(id(t), None)
        if not waiting:
            return
        memo: dict = {}
        for v in waiting:
            if not isinstance(self.freed.get(id(v)), tuple):
                continue
            again = self.recompute(v, memo)
            if again is None:
                self.freed[id(v)] = LOST
            elif not whole:
                with torch._C.DisableTorchFunction():
                    self.freed[id(v)] = statistics(again)
            else:
                del self.freed[id(v)]
                with torch._C.DisableTorchFunction():
                    v.data = again

    def _feed(self, value, recipe) -> None:
        """Note in :attr:`feeds` that ``recipe`` (and the writes it is followed by) computes ``value`` from its
        inputs."""
        feeds = self.feeds
        for r in (recipe,) + recipe.then:
            for i in self.ops[r.index].inputs:
                if i is not value:
                    feeds.setdefault(id(i), []).append(value)

    def _values_by_id(self) -> dict:
        """``{id(value): value}`` for the values let go of (they are the outputs of recorded ops)."""
        freed = self.freed
        return {id(t): t for op in self.ops for t in op.outputs if id(t) in freed}

    # ----- when a trace reads them ---------------------------------------------------------
    def recompute(self, t, memo: dict):
        """Value ``t`` as its op made it, run again; None when an input changed since (its version moved) or the op
        cannot run again."""
        key = id(t)
        if key in memo:
            return memo[key]
        memo[key] = None
        recipe, position = self.freed[key]
        got = self._run(recipe, position, t, memo, None)
        for then in recipe.then:                # the in-place ops that wrote into it, on our copy
            if got is None:
                break
            got = self._run(then, _position(self.ops[then.index], t), t, memo, got)
        memo[key] = got
        return got

    def input_again(self, i, version, memo):
        """Input ``i`` of a recipe as the recipe read it (at ``version``): computed again when it was let go of, ``i``
        itself when unchanged (the caller copies it if the run could write into it), None when it changed since or is
        kept as statistics."""
        kept = self.freed.get(id(i))
        if isinstance(kept, tuple):
            return self.recompute(i, memo)
        return None if kept is not None or i._version != version else i

    def _run(self, recipe, position, t, memo, written):
        """Output ``position`` of ``recipe`` run again on copies of its inputs (``written``: what stands for ``t``,
        the value an in-place recipe writes into), or None."""
        op = self.ops[recipe.index]
        by = {}
        for i, v in zip(op.inputs, recipe.versions):
            now = written if written is not None and i is t else self.input_again(i, v, memo)
            if now is i:
                with torch._C.DisableTorchFunction():
                    now = _same_strides(i)
            if now is None:
                return None
            by[id(i)] = now
        try:
            # grad mode as recorded: a kernel may choose its path by whether a gradient is wanted
            # (scaled_dot_product_attention with a mask: another path, other roundings)
            with torch._C.DisableTorchFunction(), torch.set_grad_enabled(op.grad_enabled), _drawing_from(recipe.rng):
                out = recipe.func(*_replaced(recipe.args, by), **_replaced(recipe.kwargs or {}, by))
        except (RuntimeError, TypeError, ValueError):     # an op that cannot run again: its value is not shown
            return None
        outs = [out] if isinstance(out, torch.Tensor) else tensors_in(out, [])
        return outs[position] if position < len(outs) and outs[position].shape == t.shape else None

