"""What a recorded ``backward()`` computed, kept so that a trace needs no second backward pass — and no copy of
the weights an optimizer then writes.

``rec.trace(loss)`` shows ḡ of every value on the path and, where a value feeds several ops, what each of them
passes back. PyTorch computes all of it during the learner's own ``loss.backward()`` and frees it as it goes.
Asked again afterwards, autograd needs the graph's saved tensors as they were — the weights among them — but
``opt.step()`` writes the weights in place: a recording that could only ask afterwards had to copy every weight
before the step, the model's size again.

A :class:`Capture` listens to the backward pass itself: a hook on each recorded value on the path keeps its ḡ
(the tensor autograd made anyway), a hook on the node of each op with an input that feeds several ops keeps what
it passes back to each such input (to an input only it reads, it passes that input's whole ḡ, kept already), and a
weight's ḡ is its ``.grad`` when the pass started without one. A value only one op reads (after its last write,
for one written in place), an op that reads no weight (a BatchNorm's output, read by its ReLU alone; a sum
``h += x`` read by its ReLU), keeps no ḡ: the trace calls that
op's backward node again on ḡ of its output (:meth:`Capture.gradients`), which gives the same tensor the pass gave,
since nothing that node saved is an update's to write. What a capture keeps is about the size of the
path's values; a copy is the size of the weights; :func:`start` makes a capture only when it is the smaller (a CNN
on small images, a tiny transformer), and the recording copies otherwise.
Every kept tensor carries its version number: one changed in place since (``zero_grad(set_to_none=False)``) is
never shown, and the trace falls back to asking autograd.

:func:`node_slots` and :func:`assemble` say which recorded tensor each input of an autograd node is, and turn what
the node gave back into gradients of those tensors; the trace uses them too, to call a node's backward directly.
"""
from __future__ import annotations

import numpy as np
import torch

from ..records.traces.model import PREVIEW, VALUE_LIMIT, Summary

EXACT_UP_TO = 65536     # weights of at most this many entries keep their values before the update exactly


class Capture:
    """The gradients one ``backward()`` of ``target`` computed.

    ``grads``: ``{id(value): (ḡ, version)}`` for the recorded values on the path; ``contribs``: ``{op index:
    {id(input): (what the op passes back, version)}}`` for the inputs of an op that feed several ops; ``leaves``:
    ``{id(weight): (weight, its .grad, version)}`` once the pass is over.
    """

    __slots__ = ("target", "grads", "contribs", "leaves", "versions", "done", "replays", "_handles", "_waiting",
                 "_checked")

    def __init__(self, target):
        self.target = target
        self.grads: dict = {}
        self.replays: list = []      # (node, output, slots, {id(input)}): ḡ of those inputs, from the node again
        self.contribs: dict = {}
        self.leaves: dict = {}
        self.versions: dict = {}     # id(weight) -> its version when the pass ended (a later write moves it)
        self.done = False
        self._handles: list = []
        self._waiting: list = []
        self._checked: tuple = (-1, False)

    def finish(self) -> None:
        """The pass is over: take the hooks out and keep each weight's ``.grad`` (this pass's, as it began empty)."""
        for h in self._handles:
            h.remove()
        self._handles = []
        for t in self._waiting:
            g = t.grad
            if g is not None:
                self.leaves[id(t)] = (t, g, g._version)
                self.versions[id(t)] = t._version
        self._waiting = []
        self.done = True

    def valid(self, at: int | None = None) -> bool:
        """Nothing kept was changed in place since, and every weight still holds the ``.grad`` kept; ``at``: the
        recording's length, when asked for many weights at one moment (an update checks once)."""
        if not self.done:
            return False
        if at is not None and self._checked[0] == at:
            return self._checked[1]
        ok = self._valid()
        if at is not None:
            self._checked = (at, ok)
        return ok

    def _valid(self) -> bool:
        kept = [v for v in self.grads.values()] + [v for d in self.contribs.values() for v in d.values()]
        return all(g._version == version for g, version in kept) and \
            all(g._version == version for _t, g, version in self.leaves.values())

    def own(self, params) -> None:
        """The ``.grad`` of these weights is about to be zeroed in place (``zero_grad(set_to_none=False)``): keep a
        copy of what this pass gave them, for the trace."""
        for t in params:
            kept = self.leaves.get(id(t))
            if kept is not None and kept[1] is t.grad:
                g = kept[1].detach().clone()
                self.leaves[id(t)] = (t, g, g._version)

    def changed_since(self, t) -> bool:
        """Whether weight ``t`` was written in place after the pass (an update the recording did not see)."""
        version = self.versions.get(id(t))
        return version is not None and t._version != version

    def covers(self, t) -> bool:
        """Whether weight ``t``'s gradient in this pass is kept (so its values need not be copied for a trace)."""
        return id(t) in self.leaves

    def gradients(self) -> dict:
        """``{id(tensor): ḡ}``: what ``torch.autograd.grad(target, …)`` would give, for every tensor on the path.

        A value only one op reads (after its last write), an op that reads no weight (a BatchNorm's output, read by
        its ReLU alone), is not kept: its ḡ is what that op's backward node gives for ḡ of the op's output, which
        is kept or given the same way; the node is called again here, from the last op back, on the same input, so
        the values are the ones the learner's pass computed. Raises :class:`Replayed` when a node's saved values
        have changed in place since."""
        out = {k: g for k, (g, _) in self.grads.items()}
        out.update({k: g for k, (_t, g, _) in self.leaves.items()})
        for node, value, slots, keys in reversed(self.replays):
            g_out = out.get(id(value))
            if g_out is None:
                continue            # no gradient reached the op's output: none reached its inputs either
            try:
                got = node(g_out)
            except RuntimeError as exc:
                raise Replayed(node, value, str(exc)) from None
            passed = assemble(slots, got if isinstance(got, tuple) else (got,))
            if passed is None:
                raise Replayed(node, value, "its gradients do not fit its inputs' shapes")
            for k in keys:
                if k in passed:
                    out[k] = passed[k]
        return out

    def passed_back(self, op_index: int) -> dict | None:
        """``{id(input): ḡ_input from this op}`` for the inputs of a recorded op that feed other ops too, or None
        when the op kept nothing (an input only this op reads gets its whole ḡ from it: see :attr:`grads`)."""
        got = self.contribs.get(op_index)
        return None if got is None else {k: g for k, (g, _) in got.items()}


_Uninitialized = torch.nn.parameter.UninitializedTensorMixin


def nbytes(t) -> int:
    """Bytes of ``t``'s values; 0 for a lazy layer's weight not made yet (``nn.LazyLinear`` before its first call,
    whose ``numel()`` raises)."""
    if isinstance(t, _Uninitialized):
        return 0
    return t.numel() * t.element_size()


def outweighs(ops, target, ceiling: int) -> bool:
    """Whether the values on ``target``'s path through recorded ``ops`` (all of them, in order) take at least
    ``ceiling`` bytes — the weights' size, above which :func:`start` copies the weights instead.

    Walks back from the target and stops as soon as it knows: on a transformer the values near the loss
    already outweigh every weight, so the answer costs a few ops, not a pass over the whole recording.
    """
    need, total = {id(target)}, 0
    for op in reversed(ops):
        if op.kind not in ("op", "rewrap", "detach") or not any(id(t) in need for t in op.outputs):
            continue
        need.update(id(t) for t in op.inputs)
        out = op.outputs[0]
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            total += nbytes(out)
            if total >= ceiling:
                return True
    return False


def start(rec, target, gradient, ops) -> Capture | None:
    """A capture of the ``backward()`` of ``target`` about to run over recorded ``ops`` (the target's history), or
    None when copying the weights before an update is cheaper, or a capture could not tell this pass's gradients
    apart (a weight whose ``.grad`` already holds an earlier pass's, a seed other than ones)."""
    if gradient is not None or target.grad_fn is None or target.numel() != 1 or not ops:
        return None
    values, leaves, readers, needs = {}, {}, {}, []
    value_bytes = leaf_bytes = 0
    for op in ops:      # one pass: it runs inside the learner's backward() call, on every recorded step
        need = needing(op)
        needs.append(need)
        for key, t in need.items():
            readers[key] = readers.get(key, 0) + 1
            if t.grad_fn is None and key not in leaves:
                if t.grad is not None:          # an earlier pass's gradient: this one's cannot be told apart
                    return None
                leaves[key] = t
                leaf_bytes += nbytes(t)
        out = op.outputs[0] if op.outputs else None
        if isinstance(out, torch.Tensor) and out.grad_fn is not None and id(out) not in values:
            values[id(out)] = out
            value_bytes += nbytes(out)
    if not leaves or value_bytes >= leaf_bytes:
        return None
    cap = Capture(target)
    handles = cap._handles
    made: dict = {}                 # id(tensor) -> how many recorded ops wrote it (more than one: in place)
    last: dict = {}                 # id(tensor) -> the position of the last op that wrote it
    for k, op in enumerate(ops):
        for t in op.outputs:
            made[id(t)] = made.get(id(t), 0) + 1
            last[id(t)] = k
    since: dict = {}                # id(tensor) -> how many ops read it after its last write (its final value)
    for k, need in enumerate(needs):
        for key in need:
            if k > last.get(key, -1):
                since[key] = since.get(key, 0) + 1
    replayed = set()
    for op, need in zip(ops, needs):
        out = op.outputs[0] if op.outputs else None
        if not isinstance(out, torch.Tensor):
            continue
        shared = {key for key in need if readers[key] > 1}
        replays = id(out) in values and made[id(out)] == 1 and id(out) not in need and \
            all(t.grad_fn is not None for t in need.values())       # no weight: its saved values stay as they are
        # ḡ kept for a value is that of its final value (its hook sits on the last write's node), which the ops
        # reading it after that write pass back: h += x; relu(h) gives ḡ of h's final value from the ReLU alone
        alone = {key for key in need if key in values and since.get(key) == 1} if replays else ()
        if shared:
            slots = node_slots(out, list(need.values()))
            if slots is not None:
                handles.append(out.grad_fn.register_hook(_pass_back(cap.contribs, op.index, slots, shared)))
        if alone:
            slots = node_slots(out, list(need.values()), overwritten=False)
            if slots is not None:
                cap.replays.append((out.grad_fn, out, slots, alone))
                replayed |= alone
    for key, t in values.items():
        if key not in replayed:
            handles.append(t.register_hook(_keep(cap.grads, key)))
    cap._waiting = list(leaves.values())
    return cap


class Replayed(RuntimeError):
    """An op's backward node, called again for ḡ of an input the capture did not keep (:meth:`Capture.gradients`),
    refused: something it saved was changed in place after the pass."""

    def __init__(self, node, value, why):
        super().__init__(f"{type(node).__name__}, the backward of the op that made a value of shape "
                         f"{tuple(value.shape)}, could not run again: {why}")


def needing(op) -> dict:
    """``{id(input): input}`` for the inputs of recorded ``op`` that require grad, each once (an input read twice
    is one tensor)."""
    return {id(t): t for t in op.inputs if isinstance(t, torch.Tensor) and t.requires_grad}


def differentiable_inputs(op) -> list:
    """The inputs of recorded ``op`` that require grad, each once, in order (see :func:`needing`)."""
    return list(needing(op).values())


def _keep(into, key):
    def hook(g):
        into[key] = (g, g._version)
    return hook


def _pass_back(into, index, slots, shared):
    """A hook on op ``index``'s autograd node keeping what it passes back to each of its ``shared`` inputs (those
    that feed other ops too). What it passes to an input it alone reads is that input's whole ḡ, which the capture
    has already (a value's hook, a weight's ``.grad``); holding a weight's would cost the weight's size again, as
    autograd then copies it into ``.grad`` instead of handing it over."""
    def hook(grad_inputs, grad_outputs):
        got = assemble(slots, grad_inputs)
        if got is not None:
            into[index] = {k: (g, g._version) for k, g in got.items() if k in shared}
    return hook


def values_before(t) -> torch.Tensor | Summary:
    """Weight ``t``'s values before an update writes it: the values themselves when small, else the statistics
    and the first entries a trace shows of any large array (computed in place, without a float64 copy)."""
    d = t.detach()
    return d.clone() if d.numel() <= EXACT_UP_TO else statistics(d)


def statistics(t) -> Summary:
    """``t`` as a trace shows a large array: its minimum, mean, maximum, 2-norm and first entries, computed by
    torch in ``t``'s own dtype (a float64 pass over a large tensor costs as much as a copy of it)."""
    d = t.detach()          # no graph, and no grad-mode switch (which a recording notes, with a frame walk)
    if d.device.type != "cpu" or d.dtype == torch.bfloat16 or d.dtype == torch.float16:
        f = d if d.is_floating_point() else d.float()
        low, high = torch.aminmax(f)
        stats = {"min": float(low), "mean": float(f.mean()), "max": float(high),
                 "norm": float(torch.linalg.vector_norm(f))}
        first = d.reshape(-1)[:PREVIEW]
        preview = (first.float() if first.dtype == torch.bfloat16 else first).cpu().numpy().copy()
    else:                   # numpy's reductions on the same memory: half the time of torch's on small arrays
        a = d.numpy().reshape(-1)
        f = a if a.dtype.kind == "f" else a.astype(np.float32)
        stats = {"min": float(f.min()), "mean": float(f.sum()) / f.size, "max": float(f.max()),
                 "norm": float(np.sqrt(np.dot(f, f)))}
        preview = a[:PREVIEW].copy()
    return Summary(tuple(d.shape), str(d.dtype).replace("torch.", ""), None, stats, preview)


def stats_only(summary, limit: int = VALUE_LIMIT) -> bool:
    """Whether a kept :class:`Summary` holds less than a trace with ``value_limit=limit`` would show."""
    return isinstance(summary, Summary) and summary.size <= limit


def node_slots(out, need, overwritten: bool = True) -> list | None:
    """Which tensor of ``need`` each input of ``out.grad_fn`` is (None for an input not in ``need``), or None when
    the op that made ``out`` is not one autograd node over ``need``.

    Each of the node's next functions is an input's node: ``(t.grad_fn, t.output_nr)``, or the
    ``AccumulateGrad`` of a leaf ``t``; an input overwritten in place since (or the input of the in-place op
    itself) takes the one node left. With ``overwritten`` False (an op none of whose inputs was written since),
    a node left over is one inside the op — ``F.cross_entropy`` is two nodes, ``NllLoss`` over ``LogSoftmax`` — and
    the answer is None: ḡ reaches an input through it too.
    """
    fn = out.grad_fn
    if fn is None or out.output_nr != 0 or len(fn._input_metadata) != 1 or not need:
        return None
    where = {}
    for t in need:
        if t.grad_fn is not None:
            where[(id(t.grad_fn), t.output_nr)] = t
    leaves = {id(t): t for t in need if t.grad_fn is None}
    slots = []
    for nxt, nr in fn.next_functions:
        if nxt is None:
            slots.append(None)
            continue
        t = where.get((id(nxt), nr))
        if t is None and type(nxt).__name__ == "AccumulateGrad":
            t = leaves.get(id(nxt.variable))
        slots.append(t)
    free = [k for k, (nxt, _) in enumerate(fn.next_functions) if nxt is not None and slots[k] is None]
    unmatched = [t for t in need if not any(t is u for u in slots)]
    if not overwritten and free:
        return None         # a node inside the op between it and an input: ḡ also flows that way
    if overwritten and len(free) == 1 and len(unmatched) == 1:
        slots[free[0]] = unmatched[0]    # a value overwritten in place since (h.relu_(), h += x): its tensor's
        #                                  node is now the write's, this op's input is the node before it
    if {id(t) for t in slots if t is not None} != {id(t) for t in need}:
        return None
    return slots


def assemble(slots, got) -> dict | None:
    """``{id(input): its gradient}`` from what a node's backward gave for each of its inputs (``got``, in the
    order of :func:`node_slots`), done as the engine would on the way: a broadcast input's gradient summed back to
    its shape, its real part for a real input, cast to its dtype, an input read twice given the sum."""
    out_grads: dict = {}
    for t, g in zip(slots, got):
        if t is None or g is None:
            continue
        if g.shape != t.shape:
            try:
                g = g.sum_to_size(t.shape)
            except RuntimeError:
                return None
        if g.is_complex() and not t.is_complex():
            g = torch.real(g)       # a real input of a complex op (FNet's fft): the engine keeps the real part
        g = g.to(t.dtype) if g.dtype != t.dtype else g
        out_grads[id(t)] = g if id(t) not in out_grads else out_grads[id(t)] + g
    return out_grads
