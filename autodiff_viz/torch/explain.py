"""Why is ``.grad`` None (or zero) in PyTorch? The diagnosis, with the user's line.

:meth:`Recording.explain` walks the recorded history of the target back
towards the parameter and names the first place where the gradient stops;
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
``non_leaf``                the tensor is not a leaf: autograd does not keep its ``.grad``
                            unless ``retain_grad()`` was called
``read_before_backward``    ``.grad`` was read before ``backward()`` ran
                            (``zero_grad(set_to_none=True)`` leaves it None until then)
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
           "non_scalar_target", "graph_cut")
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
        return "integer_dtype", f"torch.{op.name} works on integer values ({str(out.dtype)[6:]}): no gradient"
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


def _history(rec, target):
    """Ops that made ``target`` (newest first) as ``{id(tensor): op}``, walking every input."""
    made = {}
    for op in rec.ops:
        if op.kind in ("op", "rewrap", "detach"):
            for out in op.outputs:
                made[id(out)] = op
    return made


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
    made = _history(rec, target)
    # Walk back from the target: the first cut on a path that reaches the parameter.
    frontier, seen, reached, cuts = deque([(target, None)]), set(), False, []
    while frontier:
        t, below = frontier.popleft()
        if (id(t), below is None) in seen:
            continue
        seen.add((id(t), below is None))
        if t is param:
            reached = reached or below is None
            continue
        op = made.get(id(t))
        if op is None:
            continue
        for x in op.inputs:
            cut = _cut(op, x, t)
            if cut is not None:
                cuts.append((op, x, t, cut))
                frontier.append((x, cut))
            else:
                frontier.append((x, below))
        if op.kind == "rewrap":
            esc = _escape_source(rec, op)
            if esc is not None and esc.inputs:
                cuts.append((op, esc.inputs[0], t, ("left_the_graph", "")))
                frontier.append((esc.inputs[0], ("left_the_graph", "")))
    if reached:
        return _connected_but(rec, target, param, pname)
    casts = [c for c in cuts if c[3][0] == "integer_dtype" and _is_float(c[1]) and not _is_float(c[2])]
    for op, x, out, (reason, words) in casts + cuts:
        if not _depends_on(rec, made, x, param):
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


def _depends_on(rec, made, t, param) -> bool:
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if x is param:
            return True
        if id(x) in seen:
            continue
        seen.add(id(x))
        op = made.get(id(x))
        if op is not None:
            stack.extend(op.inputs)
            if op.kind == "rewrap":
                esc = _escape_source(rec, op)
                if esc is not None:
                    stack.extend(esc.inputs)
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
    reads = [op for op in rec.ops if op.kind == "read_grad" and op.inputs[0] is param and op.extra["was_none"]]
    for read in reads:
        if not any(b.index < read.index for b in backwards):
            return Explanation("read_before_backward",
                               f".grad of {pname} was read before backward() ran{_line(read.location)}\n"
                               "After zero_grad(set_to_none=True) (the default) .grad is None until the next "
                               "backward(). Fix: read .grad after loss.backward().", _where(read.location),
                               nodes=(pid,))
    return Explanation("connected", f"The gradient of the target reaches {pname}.", nodes=(pid,))


# ---------------------------------------------------------------------------
# Without a recording
# ---------------------------------------------------------------------------
def _leaves(loss) -> set:
    """ids of the tensors autograd accumulates into from ``loss`` (AccumulateGrad nodes)."""
    out, stack, seen = set(), [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        var = getattr(fn, "variable", None)
        if var is not None:
            out.add(id(var))
        stack.extend(f for f, _ in fn.next_functions)
    return out


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
        return Explanation("read_before_backward", f"{label} is in the graph but its .grad is None: backward() has "
                           "not run since .grad was reset (zero_grad(set_to_none=True)). Fix: call loss.backward() "
                           "before reading .grad.")
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
