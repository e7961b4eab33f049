"""Why is ``.grad`` None (or zero) in PyTorch? The diagnosis, with the user's line.

:meth:`Recording.explain` walks the recorded history of the target back
towards the parameter and names the first place where the gradient stops
(in record order: the input of an in-place op such as ``z.mul_(2)`` is the
value ``z`` held before it, so the walk goes on to the op that made that);
:func:`explain` answers from PyTorch's autograd graph alone (no recording:
it can say *what* is wrong, and asks for a recording to say *where*).

Reasons (``Explanation.reason``):

==========================  ============================================================
``connected``               the gradient reaches the parameter
``requires_grad_false``     the parameter does not require grad (frozen, or made without it)
``no_grad``                 an op on the path ran under ``torch.no_grad()``
``inference_mode``          an op on the path ran under ``torch.inference_mode()``
``detached``                ``.detach()`` or ``.data`` on the path
``left_the_graph``          a value became a Python number / list / numpy array
                            (``.item()``, ``.tolist()``, ``.numpy()``) and came back
                            through ``torch.tensor(...)``
``non_differentiable_op``   an op without a gradient on the path (``argmax``, ``round``,
                            comparisons, a cast to an integer type)
``integer_dtype``           the parameter or a value on the path is an integer tensor
``not_used``                the target does not depend on the parameter at all
``computed_outside_recording``  the target was not computed inside the recording (a loss
                            computed after the ``with`` block): its history is unknown
``non_leaf``                the tensor is not a leaf: autograd does not keep its ``.grad``
                            unless ``retain_grad()`` was called
``read_before_backward``    the last ``.grad`` read saw None: no ``backward()`` ran before
                            it, or ``zero_grad(set_to_none=True)`` came after the last one
``non_scalar_target``       ``backward()`` on a non-scalar target needs ``gradient=``
``graph_cut``               (without a recording) the target does not require grad:
                            the graph was cut somewhere; record to find where
==========================  ============================================================
"""
from __future__ import annotations

import linecache
from collections import deque

import numpy as np
import torch

from .. import naming
from ..diagnosis import Explanation

REASONS = ("connected", "requires_grad_false", "no_grad", "inference_mode", "detached", "left_the_graph",
           "non_differentiable_op", "integer_dtype", "not_used", "non_leaf", "read_before_backward",
           "non_scalar_target", "graph_cut", "computed_outside_recording")
_NO_GRAD_NAMES = {"argmax", "argmin", "eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__lt__", "__gt__",
                  "__le__", "__ge__", "__ne__", "round", "floor", "ceil", "sign"}


def _where(loc) -> str | None:
    return None if loc is None else f"{loc[0]}:{loc[1]}"


def _line(loc) -> str:
    """The user's line, as ``  cell [3], line 4:  loss = ...`` or ``  train.py:12:  loss = ...``."""
    if loc is None:
        return ""
    text = linecache.getline(loc[0], loc[1]).strip()
    return f"\n    {naming.short_place(*loc)}:  {text}" if text else f"\n    {naming.short_place(*loc)}"


def _is_float(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def _label(rec, t) -> str:
    name = rec.name_of(t) if rec is not None else None
    return f"'{name}' (shape {tuple(t.shape)})" if name else f"a tensor of shape {tuple(t.shape)}"


# ---------------------------------------------------------------------------
# With a recording
# ---------------------------------------------------------------------------
def _cut(op, t_in, out) -> tuple[str, str] | None:
    """``(reason, words)`` when ``op`` stops the gradient from ``out`` to its input ``t_in``."""
    if op.kind == "detach":
        return "detached", f"{op.name} returns a tensor cut from the graph"
    if op.kind == "rewrap":
        return "left_the_graph", f"torch.{op.name}(...) makes a new leaf tensor from plain values"
    if op.inference:
        return "inference_mode", f"torch.{op.name} ran under torch.inference_mode()"
    if not op.grad_enabled:
        return "no_grad", f"torch.{op.name} ran under torch.no_grad()"
    if not _is_float(t_in) or not _is_float(out):
        integer = t_in if not _is_float(t_in) else out
        return "integer_dtype", f"torch.{op.name} works on integer values ({str(integer.dtype)[6:]}): no gradient"
    if op.name in _NO_GRAD_NAMES:
        return "non_differentiable_op", f"torch.{op.name} has no gradient"
    return None


def _escape_source(rec, rewrap_op):
    """The escape (``.item()`` ...) whose value a re-wrap brought back, if the values match."""
    data = rewrap_op.extra.get("data")
    try:
        back = np.asarray(data.detach().cpu().numpy() if isinstance(data, torch.Tensor) else data, dtype=float)
    except (TypeError, ValueError):
        return None
    for esc in reversed(rec.ops[:rewrap_op.index]):
        if esc.kind != "escape":
            continue
        val = esc.extra.get("value")
        try:
            v = np.asarray(val, dtype=float)
        except (TypeError, ValueError):
            continue
        if v.size and back.size and (v.shape == back.shape and np.array_equal(v, back)
                                     or v.size == 1 and np.any(back == v.reshape(()))):
            return esc
    return None


def outside_recording(rec, target) -> str | None:
    """Words saying that ``target`` was not computed inside recording ``rec``, or None when it was.

    "Inside" means a recorded op made it or used it. A leaf that requires
    grad is never "outside": it has no history to record. Whether the target
    was computed after the block ended is told by autograd's graph: it then
    holds the ``grad_fn`` of a recorded op's output.
    """
    if target.is_leaf and target.requires_grad or any(
            t is target for op in rec.ops if op.kind in ("op", "rewrap", "detach") for t in op.inputs + op.outputs):
        return None
    recorded = {out.grad_fn for op in rec.ops if op.kind == "op" for out in op.outputs if out.grad_fn is not None}
    after = target.grad_fn is not None and not recorded.isdisjoint(_graph_nodes(target))
    when = ("after the `with adv.torch.record()` block ended" if after else
            "outside the `with adv.torch.record()` block (after it ended, or before it began)")
    return (f"The target (shape {tuple(target.shape)}) was not computed inside this recording: the ops that "
            f"made it ran {when}, so the recording never saw them. Fix: compute it inside the block (indent "
            "the line that makes the loss), then ask again.")


def explain_recorded(rec, target, param) -> Explanation:
    """:meth:`Recording.explain`: why ``param.grad`` is None after backpropagating ``target``."""
    for what, t in (("target", target), ("param", param)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"explain: {what} must be a torch tensor, got {type(t).__name__}.")
    pid, tid = rec.tensor_id(param), rec.tensor_id(target)
    pname = _label(rec, param)
    if not _is_float(param):
        return Explanation("integer_dtype", f"{pname} has dtype {str(param.dtype)[6:]}: only floating tensors "
                           "have gradients. Fix: make it float, e.g. torch.tensor(values, dtype=torch.float32, "
                           "requires_grad=True).", nodes=(pid,))
    if not param.requires_grad:
        return Explanation("requires_grad_false",
                           f"{pname} has requires_grad=False, so autograd never computes its gradient (a frozen "
                           "parameter: requires_grad_(False), or a tensor made without requires_grad=True). Fix: "
                           "param.requires_grad_(True) (and pass it to the optimizer) if it should learn.",
                           nodes=(pid,))
    outside = outside_recording(rec, target)
    if outside is not None:
        return Explanation("computed_outside_recording", outside, nodes=(pid, tid))
    # Walk back from the target: the first cut on a path that reaches the parameter. A frontier entry
    # (tensor, k, cut) is the value the record k read (len(ops): the target as it is now).
    frontier, seen, reached, cuts = deque([(target, len(rec.ops), None)]), set(), False, []
    while frontier:
        t, k, below = frontier.popleft()
        if t is param:
            reached = reached or below is None
            continue
        op = rec.producer(t, k)
        if op is None or (op.index, id(t), below is None) in seen:
            continue
        seen.add((op.index, id(t), below is None))
        for x in op.inputs:
            cut = _cut(op, x, t)
            if cut is not None:
                cuts.append((op, x, op.index, t, cut))
            frontier.append((x, op.index, cut or below))
        if op.kind == "rewrap":
            esc = _escape_source(rec, op)
            if esc is not None and esc.inputs:
                cuts.append((op, esc.inputs[0], esc.index, t, ("left_the_graph", "")))
                frontier.append((esc.inputs[0], esc.index, ("left_the_graph", "")))
    if reached:
        return _connected_but(rec, target, param, pname)
    casts = [c for c in cuts if c[4][0] == "integer_dtype" and _is_float(c[1]) and not _is_float(c[3])]
    for op, x, k, out, (reason, words) in casts + cuts:
        if not _depends_on(rec, x, k, param):
            continue
        loc = op.location
        if reason == "left_the_graph":
            esc = _escape_source(rec, op) if op.kind == "rewrap" else None
            esc_loc = esc.location if esc else None
            how = esc.extra["how"] if esc else "a Python value"
            msg = (f"The value on the way from {pname} to the target left the graph with {how}"
                   f"{_line(esc_loc)}\nand came back as a new tensor with torch.{op.name}(...){_line(loc)}\n"
                   "A Python number or a new tensor built from one has no history, so no gradient flows back. "
                   "Fix: keep computing with the tensor itself (no .item()/.tolist()/.numpy() in the middle).")
            return Explanation("left_the_graph", msg, _where(esc_loc or loc), nodes=(pid, rec.tensor_id(out)),
                               edges=((rec.tensor_id(x), rec.tensor_id(out)),), op=op.name,
                               locations=tuple(_where(v) for v in (esc_loc, loc) if v))
        fixes = {
            "detached": "Fix: use the tensor itself; detach only what must not be trained (e.g. a target).",
            "no_grad": "Fix: compute the loss outside `with torch.no_grad():` (keep no_grad for evaluation).",
            "inference_mode": "Fix: compute the loss outside `torch.inference_mode()`.",
            "integer_dtype": "Fix: keep the values floating (no .long()/.int() casts on the way to the loss).",
            "non_differentiable_op": "Fix: use a differentiable relaxation (e.g. softmax instead of argmax).",
        }
        msg = (f"The gradient from the target cannot reach {pname}: {words}{_line(loc)}\n{fixes[reason]}")
        return Explanation(reason, msg, _where(loc), nodes=(pid, rec.tensor_id(out)),
                           edges=((rec.tensor_id(x), rec.tensor_id(out)),), op=op.name)
    used = any(any(x is param for x in op.inputs) for op in rec.ops if op.kind == "op")
    msg = (f"The target does not depend on {pname}: " +
           ("it is used by recorded ops, but none of them leads to the target." if used else
            "no recorded op used it in this forward pass (an unused layer or a branch not taken).") +
           " Its .grad stays None. Fix: check that the forward pass uses it; optimizers skip None gradients.")
    return Explanation("not_used", msg, nodes=(pid, tid))


def _depends_on(rec, t, before, param) -> bool:
    """Whether the value ``t`` had when record ``before`` read it was computed from ``param`` (cuts or not)."""
    stack, seen = [(t, before)], set()
    while stack:
        x, k = stack.pop()
        if x is param:
            return True
        op = rec.producer(x, k)
        if op is None or op.index in seen:
            continue
        seen.add(op.index)
        stack.extend((i, op.index) for i in op.inputs)
        if op.kind == "rewrap":
            esc = _escape_source(rec, op)
            if esc is not None:
                stack.extend((i, esc.index) for i in esc.inputs)
    return False


def _connected_but(rec, target, param, pname) -> Explanation:
    pid = rec.tensor_id(param)
    if not param.is_leaf and not param.retains_grad:
        return Explanation("non_leaf", f"{pname} is not a leaf (it was computed by an op), and autograd keeps "
                           ".grad only for leaves. The gradient flows through it, but is not stored. Fix: call "
                           f"{rec.name_of(param) or 't'}.retain_grad() before backward(), or use "
                           "torch.autograd.grad(loss, t).", nodes=(pid,))
    backwards = [op for op in rec.ops if op.kind == "backward"]
    if target.numel() != 1 and not any(op.inputs[0] is target and op.extra.get("gradient") is not None
                                       for op in backwards):
        return Explanation("non_scalar_target", f"The target has shape {tuple(target.shape)}: backward() needs "
                           "a scalar, or the upstream gradient (RuntimeError 'grad can be implicitly created only "
                           "for scalar outputs'). Fix: reduce it first (loss.mean().backward()) or pass "
                           "gradient=torch.ones_like(loss) for the gradient of the sum.",
                           nodes=(rec.tensor_id(target),))
    unset = _grad_unset(rec, param, pname)
    if unset is not None:
        return unset
    return Explanation("connected", f"The gradient of the target reaches {pname}.", nodes=(pid,))


def _grad_unset(rec, param, pname) -> Explanation | None:
    """``read_before_backward`` when the ``.grad`` the user last saw was None although the gradient connects.

    What the user saw is the last recorded read of ``param.grad`` (with no
    read: ``.grad`` as it is now). Why it was None is the last event before
    that moment: a reset to None (``zero_grad(set_to_none=True)``,
    ``p.grad = None``) after the last ``backward()``, or no ``backward()`` at
    all. Events after a read do not change what the read returned, so a
    read before ``backward()`` is named even when ``.grad`` holds a gradient now.
    """
    events = [op for op in rec.ops if op.kind == "backward" or op.kind in ("read_grad", "set_grad")
              and op.inputs[0] is param]
    reads = [op for op in events if op.kind == "read_grad"]
    read = reads[-1] if reads else None
    if (read.extra["was_none"] if read else param.grad is None) is False:
        return None
    before = [op for op in events if op.kind != "read_grad" and (read is None or op.index < read.index)]
    last = before[-1] if before else None
    reset = last if last is not None and last.kind == "set_grad" and last.extra["to_none"] else None
    if read is None and reset is None:
        return None           # nothing recorded says .grad was looked at or cleared: the gradient connects
    backward = next((op for op in reversed(before) if op.kind == "backward"), None)
    parts = [f"The .grad of {pname} read{_line(read.location)}\nwas None: " if read else
             f"The .grad of {pname} is None: "]
    if reset is not None:
        parts.append(f"it was reset to None (zero_grad(set_to_none=True), the default, or .grad = None)"
                     f"{_line(reset.location)}\n")
        if backward is not None:
            parts.append(f"after the last backward(){_line(backward.location)}\n")
        parts.append("Fix: read .grad between loss.backward() and opt.zero_grad().")
    elif backward is not None:
        parts.append(f"the last backward() before that read did not fill it (it backpropagated another tensor)"
                     f"{_line(backward.location)}\nFix: call backward() on this target before reading .grad.")
    else:
        parts.append("no backward() had run before that read.\n")
        later = [op for op in events if op.kind == "backward" and op.index > read.index]
        if later and param.grad is not None:
            parts.append(f".grad holds a gradient now: backward() ran after the read{_line(later[-1].location)}\n")
        parts.append("Fix: read .grad after loss.backward().")
    return Explanation("read_before_backward", "".join(parts), _where((read or reset).location),
                       nodes=(rec.tensor_id(param),))


# ---------------------------------------------------------------------------
# Without a recording
# ---------------------------------------------------------------------------
def _graph_nodes(loss) -> set:
    """The nodes of autograd's backward graph of ``loss`` (its ``grad_fn`` and every node it reaches)."""
    stack, seen = [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack.extend(f for f, _ in fn.next_functions)
    return seen


def _leaves(loss) -> set:
    """ids of the tensors autograd accumulates into from ``loss`` (AccumulateGrad nodes)."""
    return {id(fn.variable) for fn in _graph_nodes(loss) if getattr(fn, "variable", None) is not None}


def _one(loss, param, name, leaves) -> Explanation:
    label = f"'{name}' (shape {tuple(param.shape)})" if name else f"a tensor of shape {tuple(param.shape)}"
    if not _is_float(param):
        return Explanation("integer_dtype", f"{label} has dtype {str(param.dtype)[6:]}: only floating tensors "
                           "have gradients.")
    if not param.requires_grad:
        return Explanation("requires_grad_false", f"{label} has requires_grad=False (frozen): autograd skips it. "
                           "Fix: param.requires_grad_(True) if it should learn.")
    if not param.is_leaf and not param.retains_grad:
        return Explanation("non_leaf", f"{label} is not a leaf; autograd keeps .grad only for leaves. Fix: call "
                           ".retain_grad() on it before backward().")
    if loss.grad_fn is None:
        return Explanation("graph_cut", "The loss does not require grad: the graph was cut on the way (no_grad, "
                           ".detach(), .item() and torch.tensor(...), an integer cast). Record the forward pass "
                           "with `with adv.torch.record() as rec:` and call rec.explain(loss, param) to get the line.")
    if id(param) not in leaves:
        return Explanation("not_used", f"The loss does not depend on {label}: it is not in the loss's autograd "
                           "graph (unused in this forward pass, or cut from it). Record the forward pass to see where.")
    if loss.numel() != 1:
        return Explanation("non_scalar_target", f"The loss has shape {tuple(loss.shape)}: backward() needs a "
                           "scalar or gradient=. Fix: loss.mean().backward().")
    if param.grad is None:
        return Explanation("read_before_backward", f"{label} is in the graph but its .grad is None: no backward() "
                           "has filled it yet (.grad stays None until the first backward(), and after "
                           "zero_grad(set_to_none=True) until the next). Fix: call loss.backward() before reading "
                           ".grad.")
    return Explanation("connected", f"The gradient of the loss reaches {label}.")


def explain(loss, params):
    """Why ``.grad`` is None for each of ``params`` after ``loss.backward()``, from autograd's graph.

    ``params``: a tensor, a list of tensors, a dict, or an ``nn.Module`` (its
    named parameters); the answer has the same structure (a dict for a
    module). For the line of code that cut the graph, record the forward
    pass with :func:`record` and use ``rec.explain``.
    """
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"explain: loss must be a torch tensor, got {type(loss).__name__}.")
    leaves = _leaves(loss) if loss.grad_fn is not None else set()
    if isinstance(params, torch.nn.Module):
        return {n: _one(loss, p, n, leaves) for n, p in params.named_parameters()}
    if isinstance(params, dict):
        return {k: _one(loss, p, str(k), leaves) for k, p in params.items()}
    if isinstance(params, torch.Tensor):
        return _one(loss, params, None, leaves)
    return [_one(loss, p, None, leaves) for p in params]
