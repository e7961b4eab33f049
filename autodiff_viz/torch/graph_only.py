"""Why ``.grad`` is None from autograd's graph alone (``adv.torch.explain``), and the parameters a module holds
where ``nn.Module`` does not register them.

Without a recording there is no line for a cut: the answer comes from the graph reachable from the loss (its
leaves) and from the module's own attributes. The recorded diagnosis (:mod:`autodiff_viz.torch.explain`) uses
the same :func:`unregistered` rows, with the line that stored each attribute.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..base import naming
from ..base.naming import code_line as _line
from ..base.naming import file_line as _where
from ..diagnosis.walk import Explanation

if TYPE_CHECKING:
    from typing import Any


def _is_float(t) -> bool:
    return t.is_floating_point() or t.is_complex()


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


def unregistered(module) -> list:
    """``[(path, tensor)]``: trainable tensors a module holds where ``nn.Module`` does not register them.

    Layers kept in a plain Python list or dict (``self.layers = [nn.Linear(...)]``
    instead of ``nn.ModuleList``/``nn.ModuleDict``), or tensors kept as plain
    attributes: ``module.parameters()`` leaves them out, so the optimizer
    never updates them, although the loss reads them.
    """
    known = {id(p) for p in module.parameters()}
    found, seen = [], set()

    def visit(path, value):
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            if value.requires_grad and id(value) not in known and not isinstance(value, torch.nn.Parameter) \
                    or value.requires_grad and value.is_leaf and id(value) not in known:
                found.append((path, value))
        elif isinstance(value, torch.nn.Module):
            for qual, p in value.named_parameters():
                if id(p) not in known:
                    found.append((f"{path}.{qual}", p))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                visit(f"{path}[{i}]", v)
        elif isinstance(value, dict):
            for k, v in value.items():
                visit(f"{path}[{k!r}]", v)

    for qual, m in module.named_modules():
        for key, value in vars(m).items():
            if not key.startswith("_") and isinstance(value, (list, tuple, dict, torch.Tensor)):
                visit(f"{qual + '.' if qual else ''}{key}", value)
    return found


def _unregistered_row(path, module, used, tensor=None, rec=None) -> Explanation:
    """``unregistered_parameter`` for ``path``, at the line that stored it: the assignment the recording saw,
    else the ``self.<name> =`` line in the class's source (the model was built before the recording)."""
    holder = path.split("[")[0].split(".")[-1]
    kind = "a plain dict" if "['" in path else "a plain list" if "[" in path else "a plain attribute"
    box = ("nn.ModuleDict" if kind == "a plain dict" else "nn.ModuleList" if kind == "a plain list"
           else "nn.Parameter")
    owner = _owner_of(module, path)
    seen = rec.provenance.assignment_of(tensor) if tensor is not None and getattr(rec, "provenance", None) else None
    stored = naming.attribute_assignment(type(owner), holder) if seen is None else None
    loc = seen.location if seen is not None else stored[:2] if stored else None
    reads = ", although the loss reads it." if used else "."
    copied = getattr(tensor, "grad_fn", None)
    if kind == "a plain attribute" and copied is not None:
        made = type(copied).__name__.replace("Backward0", "").replace("Backward", "")
        if made == "ToCopy":
            what = ("a copy of an nn.Parameter (`.cuda()`, `.to(...)`, `.double()` and `.float()` of a Parameter "
                    "return a plain tensor), which nn.Module does not register")
            fix = (f"create the parameter on its device and dtype, self.{holder} = nn.Parameter(torch.rand(..., "
                   "device=device, dtype=dtype)), or move the whole module after building it (model.to(device) / "
                   "model.double()), which keeps parameters registered.")
        else:
            what = (f"a tensor computed ({made}) from a parameter and stored once, which nn.Module does not "
                    "register and whose graph is not rebuilt at each step")
            fix = (f"store the parameter itself (self.{holder} = nn.Parameter(...)) and compute from it in forward, "
                   "so each step builds a fresh graph from the registered parameter.")
        return Explanation(
            "unregistered_parameter",
            f"{path} is not a parameter: it holds {what}{_line(loc)}\n{type(module).__name__}.parameters() "
            f"leaves it out, and an optimizer built from them never updates it{reads} Fix: {fix}", _where(loc))
    return Explanation("unregistered_parameter",
                       f"{path} is kept in {kind} ({type(module).__name__}.{holder}), so nn.Module does not "
                       f"register it: {type(module).__name__}.parameters() leaves it out, and an optimizer built "
                       f"from them never updates it{reads} Fix: wrap it in {box} (self.{holder} = {box}(...)), then "
                       f"rebuild the optimizer." + (f"\nIt was stored{_line(loc)}" if loc else ""), _where(loc))


def _owner_of(module, path):
    """The sub-module that holds ``path`` (``block.layers[0].weight`` → ``module.block``)."""
    head = path.split("[")[0].rsplit(".", 1)
    try:
        return module.get_submodule(head[0]) if len(head) == 2 else module
    except AttributeError:
        return module



def explain(loss: torch.Tensor, params: Any) -> Explanation | dict | list:
    """Why ``.grad`` is None for each of ``params`` after ``loss.backward()``, from autograd's graph.

    ``params``: a tensor, a list of tensors, a dict, or an ``nn.Module`` (its
    named parameters); the answer has the same structure (a dict for a
    module). A module's answer also has a row for each tensor it holds
    without registering it (layers in a plain list or dict:
    ``unregistered_parameter``). For the line of code that cut the graph, record the forward
    pass with :func:`record` and use ``rec.explain``.
    """
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"explain: loss must be a torch tensor, got {type(loss).__name__}.")
    leaves = _leaves(loss) if loss.grad_fn is not None else set()
    if isinstance(params, torch.nn.Module):
        rows = {n: _one(loss, p, n, leaves) for n, p in params.named_parameters()}
        for path, p in unregistered(params):
            rows[path] = _unregistered_row(path, params, id(p) in leaves, p)
        return rows
    if isinstance(params, dict):
        return {k: _one(loss, p, str(k), leaves) for k, p in params.items()}
    if isinstance(params, torch.Tensor):
        return _one(loss, params, None, leaves)
    return [_one(loss, p, None, leaves) for p in params]
