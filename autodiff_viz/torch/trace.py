"""A recorded PyTorch computation as an :class:`autodiff_viz.Trace`, with PyTorch's own gradients.

Values come from the recorded tensors; gradients of the target with respect
to every tensor on the path come from ``torch.autograd.grad`` (so they are
exactly what ``.grad`` receives); the contribution on each edge is the
op's vector–Jacobian product computed by autograd too. The factor text on
an edge is the rule table's, for every torch op that maps to a rule
(``torch.tanh`` → ``tanh``, ``a @ b`` → ``matmul``); other ops carry a note
("factor not shown for torch.xyz") instead of a made-up one.
"""
from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import torch

from ..base import naming
from ..base.naming import INPUT
from ..bridges import tracing
from ..bridges.recordings import compared_rows, hand_items
from ..records.traces.build import OpNames, factor_rule, view_title
from ..records.traces.model import Location, Summary, Trace, TraceNode, check_value_limit
from ..views import figure
from .capture import Replayed, assemble, differentiable_inputs, node_slots, stats_only
from .explain import _cut, caller_names, explain_recorded, outside_recording
from .letgo import LOST

# torch function / method name -> rule-table name (inputs in the same order)
RULES = {
    "add": "add", "__add__": "add", "__radd__": "add", "sub": "subtract", "__sub__": "subtract",
    "__rsub__": "subtract", "mul": "multiply", "__mul__": "multiply", "__rmul__": "multiply",
    "div": "divide", "true_divide": "divide", "__truediv__": "divide", "__rtruediv__": "divide",
    "pow": "power", "__pow__": "power", "neg": "negative", "__neg__": "negative", "exp": "exp", "log": "log",
    "sqrt": "sqrt", "square": "square", "abs": "abs", "sign": "sign", "tanh": "tanh", "sin": "sin", "cos": "cos",
    "sigmoid": "sigmoid", "relu": "relu", "softplus": "softplus", "leaky_relu": "leaky_relu",
    "maximum": "maximum", "minimum": "minimum", "where": "where", "clamp": "clip", "clip": "clip",
    "matmul": "matmul", "__matmul__": "matmul", "mm": "matmul", "bmm": "matmul", "sum": "sum", "mean": "mean",
    "amax": "max", "amin": "min", "logsumexp": "logsumexp", "softmax": "softmax", "log_softmax": "log_softmax",
    "reshape": "reshape", "view": "reshape", "flatten": "reshape", "unsqueeze": "expand_dims",
    "squeeze": "squeeze", "permute": "transpose", "transpose": "transpose", "t": "transpose", "T": "transpose",
    "expand": "broadcast_to", "broadcast_to": "broadcast_to", "__getitem__": "getitem", "chunk": "getitem",
    "split": "getitem", "split_with_sizes": "getitem", "tensor_split": "getitem", "unbind": "getitem",
    "cat": "concatenate",
    "concatenate": "concatenate", "stack": "stack", "gather": "take", "index_select": "take",
    "log1p": "log1p", "expm1": "expm1", "erf": "erf", "gelu": "gelu", "silu": "silu", "elu": "elu",
    "conv1d": "conv", "conv2d": "conv", "max_pool2d": "max_pool", "avg_pool2d": "avg_pool",
    "cumsum": "cumsum", "prod": "prod", "var": "var", "std": "std", "einsum": "einsum",
}

def _array(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.is_sparse:
        t = t.to_dense()
    if t.is_complex():
        t = t.abs()
    return t.cpu().numpy() if t.dtype != torch.bfloat16 else t.float().cpu().numpy()


def _summary(t, limit):
    try:
        return Summary.of(_array(t), limit)
    except (RuntimeError, TypeError):   # meta tensors and the like: shape only
        return _unreadable(t)


def _unreadable(t):
    return Summary.unreadable(t.shape, str(t.dtype).replace("torch.", ""))




def buffer_names(rec) -> dict:
    """``{id(buffer): its path}`` for the buffers of every module the recording saw (``layer1.0.bn1.running_mean``):
    BatchNorm's running statistics, counters, fixed position ids — state, not inputs a gradient flows into."""
    out = {}
    for module in rec._modules:
        for qual, b in module.named_buffers():
            out.setdefault(id(b), qual)
    return out


def rule_input(op_name: str, i: int):
    """``(rule, input spec)`` of the rule table for input ``i`` of a torch op, or None when none maps."""
    return factor_rule(RULES.get(op_name, ""), i)


def _sources(rec, sources):
    """The source tensors: a module's parameters (named as in the module), one tensor, or a dict's or list's."""
    if sources is None:
        return None
    if isinstance(sources, torch.nn.Module):
        for name, p in sources.named_parameters():
            rec._param_names[id(p)] = name
        return list(sources.parameters())
    if isinstance(sources, torch.Tensor):
        return [sources]
    flat = list(sources.values()) if isinstance(sources, dict) else \
        list(sources) if isinstance(sources, (list, tuple)) else [sources]
    for s in flat:
        if not isinstance(s, torch.Tensor):
            raise TypeError(f"trace: sources must be tensors, got {type(s).__name__}. Pass the tensors themselves "
                            "(rec.trace(loss, [model.fc.weight])) or the module (rec.trace(loss, model)).")
    return flat


def _graph(rec):
    """Op records that are computations, and the tensors they touch, in order."""
    return [op for op in rec.ops if op.kind in ("op", "rewrap", "detach")]


def _history(ops, target):
    """The ops of ``ops`` that ``target`` depends on, in order: what ``rec.trace(target)`` draws.

    A worksheet that writes its hand backward in the same ``record()`` block as the forward (Backprop Ninja's
    exercise 4) records both; the hand ops read the forward's tensors but the loss does not depend on them,
    so they are left out, as the engine's trace keeps only the target's history. An in-place op keeps its
    tensor needed, so the op that made the value it changed is kept too.
    """
    need, kept = {id(target)}, []
    for op in reversed(ops):
        if any(id(t) in need for t in op.outputs):
            kept.append(op)
            need.update(id(t) for t in op.inputs)
    return kept[::-1]


def _autograd(target, tensors, seed):
    need = [t for t in tensors if t.requires_grad]
    if not need or target.grad_fn is None and not target.requires_grad:
        return {}
    try:
        grads = torch.autograd.grad(target, need, grad_outputs=seed, retain_graph=True, allow_unused=True)
    except RuntimeError as exc:
        raise RuntimeError(f"trace: PyTorch could not backpropagate the target again ({exc}). Build the trace "
                           "before the graph is freed: call rec.trace(...) inside or right after the recording, "
                           "and call loss.backward() inside the recording (it keeps the graph).") from None
    return {id(t): g for t, g in zip(need, grads) if g is not None}


@contextlib.contextmanager
def learners_grads_kept(rec, *more):
    """Leave every ``.grad`` of the recording as the learner had it, whatever autograd does inside.

    ``torch.autograd.grad`` runs the hooks of ``t.retain_grad()``, which add
    into ``t.grad`` (makemore part 4 retains every intermediate): a trace or
    a comparison would multiply the learner's ``logprobs.grad``. The values
    are saved before and written back after, into the same tensor objects
    (a learner holding ``g = logprobs.grad`` keeps seeing the right values).
    Leaves (parameters) need no copy: ``torch.autograd.grad`` accumulates
    into no leaf's ``.grad``, and a ResNet's parameters are most of its memory.
    """
    seen, saved = set(), []
    tensors = [t for op in rec.ops for t in op.inputs + op.outputs] + [t for t in more if t is not None]
    for t in tensors:
        if not isinstance(t, torch.Tensor) or id(t) in seen or not t.requires_grad:
            continue
        seen.add(id(t))
        if t.retains_grad:     # a leaf's .grad is never touched: autograd.grad runs no AccumulateGrad node
            g = t.grad
            saved.append((t, g, None if g is None else g.detach().clone()))
    try:
        yield
    finally:
        with torch.no_grad():
            for t, g, values in saved:
                if g is not None:
                    g.copy_(values)
                t.grad = g


def build(rec, target, sources=None, value_limit=None, names=None) -> Trace:
    """The :class:`~autodiff_viz.Trace` of recording ``rec`` (see :meth:`Recording.trace`); no ``.grad`` changes.

    ``names``: ``{id(tensor): the learner's variable}`` for tensors made before the recording (``x_batch``).
    """
    with learners_grads_kept(rec, target, *(sources if isinstance(sources, (list, tuple)) else ())):
        return _build(rec, target, sources, value_limit, names)


def _build(rec, target, sources=None, value_limit=None, names=None) -> Trace:
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"trace: target must be a torch tensor (the loss), got {type(target).__name__}.")
    limit = check_value_limit(value_limit)
    outside = outside_recording(rec, target)
    if outside is not None:
        raise ValueError(f"trace: {outside}")
    src = _sources(rec, sources)
    everything = _graph(rec)
    ops = _history(everything, target)
    nodes, owner, raw_edges, tensors, node_tensor = [], {}, [], {}, {}

    buffers = buffer_names(rec)
    kept_as_stats: list = []
    freed_as_stats: list = []              # values a library let go of, kept as statistics (letgo.py)
    not_again: list = []                   # values a library let go of that cannot be recomputed any more
    again: dict = {}                       # id(value) -> the value recomputed, once per trace

    def value(t):
        kept_value = rec.freed.get(id(t))
        if kept_value is None:
            return _summary(t, limit)
        if isinstance(kept_value, tuple):
            made = rec.releases.recompute(t, again)
            if made is not None:
                return _summary(made, limit)
            kept_value = LOST
        if kept_value is LOST:
            not_again.append(rec.name_of(t) or tuple(t.shape))
            return _unreadable(t)
        if stats_only(kept_value, limit):
            freed_as_stats.append(kept_value)
        return kept_value
    unknown: list = []                     # weights written after the backward pass without the recording seeing
    kept = rec._captures.get(id(target))   # what the target's backward() computed, when the recording kept it

    def leaf(t):
        kind = "variable" if isinstance(t, torch.nn.Parameter) else \
            ("watched" if t.requires_grad and t.is_leaf else ("outside" if t.grad_fn is not None else "constant"))
        name = rec.name_of(t) or (names or {}).get(id(t))
        if kind == "constant" and id(t) in buffers:
            kind, name = "state", buffers[id(t)]
        before = rec.shown.get(id(t))          # a weight's values at the backward pass, kept as statistics
        if before is not None and stats_only(before, limit):
            kept_as_stats.append(name or tuple(t.shape))
        if before is None and kept is not None and kept.changed_since(t):   # opt.step() after the `with`
            before = _unreadable(t)
            unknown.append(name or tuple(t.shape))
        n = TraceNode(f"n{len(nodes)}", kind, kind, name, rec.tensor_id(t), None, "",
                      before if before is not None else value(t),
                      location=None, label=INPUT if name is None and kind == "constant" else None)
        nodes.append(n)
        owner[id(t)] = n
        tensors[id(t)] = node_tensor[n.id] = t
        return n

    named_by = OpNames(lambda node: _module_name(node, rec.root_vars))
    unpacked = naming.unpacked_outputs(ops)                         # q, k, v = h.chunk(3, dim=-1)
    per_scope = Counter(op.scope for op in ops)
    outer = {op.scope[:k] for op in ops for k, ch in enumerate(op.scope) if ch == "/"}    # scopes with modules inside
    for op in ops:
        for t in op.inputs:
            if id(t) not in owner:
                leaf(t)
        several = sum(isinstance(o, torch.Tensor) for o in op.outputs) > 1     # chunk, split, unbind, topk …
        targets = unpacked.get(op.index, ()) if several else ()
        targets = targets if len(targets) == len(op.outputs) else ()
        for j, out in enumerate(op.outputs):
            if not isinstance(out, torch.Tensor) or id(out) in owner and several:
                continue
            base = owner[id(op.inputs[0])] if op.inputs else None
            alone = op.scope and per_scope[op.scope] == 1 and op.scope not in outer    # nn.Flatten's one op
            own = op.scope in outer and out is not target       # the loss keeps its op's name
            label = op.assigned or (_scope_name(op.scope, rec.root_vars) if alone else
                                    view_title(op.name, named_by(base, op.scope if own else None), own=own))
            if several:                 # each output its own value: a, b = h.chunk(2) is a and b, not h.chunk twice
                label = (names or {}).get(id(out)) or (targets[j] if targets else None) or \
                    (f"{label}[{j}]" if label else None if j == 0 else f"{op.name}[{j}]")
            inplace = base is not None and op.inputs[0] is out        # h.relu_(), w.uniform_(): still h, w
            n = TraceNode(f"n{len(nodes)}", "op", op.name, base.name if inplace else None, rec.tensor_id(out),
                          op.index, op.scope, value(out), location=Location.of(op.location),
                          params={k: repr(v)[:60] for k, v in op.extra.get("params", {}).items()},
                          label=label)
            for i, t in enumerate(op.inputs):
                raw_edges.append((op, i, t, owner[id(t)], n, out))
            nodes.append(n)
            owner[id(out)] = n
            tensors[id(out)] = node_tensor[n.id] = out
            if label is not None and not op.assigned and own:
                named_by.made(n, base, op.scope)

    _labels_by_role(raw_edges)
    notes = []
    target_node = owner.get(id(target))
    if target_node is None:
        notes.append("no recorded op used the target (a leaf tensor): no gradients to show")
    if src is None:
        source_ids = [n.id for n in nodes if n.is_leaf and node_tensor[n.id].requires_grad]
    else:
        source_ids, missing, read = [], [], None
        for s in src:
            n = owner.get(id(s))
            if n is None:
                if read is None:        # every tensor a recorded op read, once for all the sources off the path
                    read = {id(t) for op in everything for t in op.inputs}
                missing.append((rec.name_of(s) or str(tuple(s.shape)), id(s) in read))
            else:
                source_ids.append(n.id)
        notes += tracing.unreached_notes(missing)

    grads, cap = {}, None
    if target_node is not None and target.is_floating_point():
        if target.numel() != 1:
            notes.append("the target is not a scalar: it is seeded with ones (the gradient of its sum)")
        cap = kept if kept is not None and kept.target is target and kept.valid() else None
        try:
            by_tensor = cap.gradients() if cap is not None else \
                _autograd(target, list(tensors.values()), torch.ones_like(target))
        except Replayed as exc:
            raise RuntimeError(
                f"trace: {exc}. The recording keeps ḡ of a value only one op without weights reads as that op's "
                "backward gives it again, and something that op saved was changed in place after the backward "
                "pass. Call rec.trace(...) before that line, or record with adv.torch.record(exact_weights=True), "
                "which keeps a copy of every weight the update writes and asks autograd instead.") from None
        except RuntimeError:
            if kept is None:
                raise
            raise RuntimeError(
                "trace: the gradients this recording kept from the target's backward() were changed in place "
                "afterwards (a .grad zeroed with model.zero_grad(set_to_none=False), or a second backward() adding "
                "into it), and an update changed the weights since, so PyTorch cannot compute them again. Call "
                "rec.trace(...) before those lines, or record with adv.torch.record(exact_weights=True), which "
                "keeps a copy of every weight the update writes.") from None
        grads = {n.id: by_tensor[id(node_tensor[n.id])] for n in nodes if id(node_tensor[n.id]) in by_tensor}
        overwritten = [n for n in nodes if owner.get(id(node_tensor[n.id])) is not n]
        if overwritten:
            _grads_before_the_write(overwritten, raw_edges, grads, node_tensor)
    unseen = [n for n in nodes if n.kind == "outside"]
    if unseen:
        names = ", ".join(n.title for n in unseen[:3]) + (" …" if len(unseen) > 3 else "")
        notes.append(f"{len(unseen)} value(s) entered the recorded ops already computed ({names}): made before the "
                     "recording, or by a call the recording does not see; what made them is not drawn")
    if unknown:
        notes.append(f"{len(unknown)} weight(s) were changed in place after the backward pass, outside the recording "
                     f"({unknown[0]} …: an opt.step() after the `with` block): their values at that pass are not "
                     "known and not shown; their gradients are. Record the update inside the block, or trace before "
                     "it.")
    if kept_as_stats:
        notes.append(f"{len(kept_as_stats)} weight(s) changed in place after the backward pass (opt.step()) are "
                     f"shown by their statistics and first entries at that pass ({kept_as_stats[0]} …): record with "
                     "adv.torch.record(exact_weights=True) to keep all of their values")
    if not_again:
        notes.append(f"{len(not_again)} value(s) that library modules computed and freed ({not_again[0]} …) are shown "
                     "by shape only: the recording let go of them, and could not compute them again — a tensor they "
                     "were computed from has changed in place since, outside the recording (call rec.trace(...) "
                     "before that change, or inside the recording), or their op failed when run again")
    if freed_as_stats:
        notes.append(f"{len(freed_as_stats)} value(s) that library modules computed and freed, and that no "
                     "gradient needs, are shown by their statistics and first entries: record with "
                     "the default adv.torch.record() (exact_values=True) to keep all of their values")
    segments = {seg for n in nodes if n.scope for seg in n.scope.split("/")}
    known = dict(rec._tensor_ids)          # id(tensor) -> tensor id, as the recording saw them
    trace = tracing.finish(_Torch(raw_edges, cap), nodes, raw_edges, grads, target_node, source_ids, notes, limit,
                           {k: v for k, v in rec.module_kinds.items() if k in segments},
                           lambda t: known.get(id(t)) if isinstance(t, torch.Tensor) else _not_a_tensor(t))
    trace.idle = frozenset(rec.idle_modules() & segments)
    trace.own = frozenset(rec.own_modules() & segments)
    trace.roots = {k: v for k, v in rec.root_vars.items() if k in segments}
    return trace


def _labels_by_role(raw_edges):
    """An op's output nobody named, read only as a loss's labels (CLIP's ``torch.arange(len(logits))`` made inside
    the library's loss), is called ``labels``: what it is to the learner, not ``arange``, and not the model it
    was made in."""
    roles: dict = {}
    for op, i, _t, src, _dst, _out in raw_edges:
        roles.setdefault(src.id, (src, set()))[1].add(i == 1 and figure.is_loss(op.name))
    for src, labels in roles.values():
        if labels == {True} and src.kind == "op" and src.label is None and src.name is None:
            src.label = "labels"


def _grads_before_the_write(overwritten, raw_edges, grads, node_tensor):
    """The gradient of each value an in-place op overwrote (``h`` before ``h.relu_()``), in ``grads`` by node id.

    Autograd knows one tensor for both versions and answers for the latest: asked for ``h`` it gives ḡ of the
    ReLU's output, not of its input. The value before the write gets the sum, over the ops that read it (the
    in-place op among them), of what each passes back (:func:`_op_vjp`), nearest the target first, so that a
    value overwritten twice gets its reader's corrected gradient. A value one of whose readers cannot be asked
    keeps autograd's answer."""
    readers: dict = {}
    for op, _i, _t, src, dst, out in raw_edges:
        readers.setdefault(src.id, {})[op.index] = (op, dst, out)
    for n in reversed(overwritten):
        t, total = node_tensor[n.id], None
        for op, dst, out in readers.get(n.id, {}).values():
            g_out = grads.get(dst.id)
            if g_out is None:
                continue
            got = _op_vjp(op, out, g_out).get(id(t))
            if got is None:
                total = None
                break
            total = got if total is None else total + got
        if total is not None:
            grads[n.id] = total.detach()


class _Torch(tracing.Adapter):
    """PyTorch for the shared trace builder: autograd's gradients, the diagnosis's cuts, torch's names."""

    def __init__(self, raw_edges, capture=None):
        self.raw_edges = raw_edges
        self.capture = capture          # what the learner's backward() passed back, when the recording kept it

    def summary(self, value, limit):
        return _summary(value, limit)

    def size(self, t) -> int:
        return t.numel()

    def reason(self, op, i, t, src, out):
        if src.kind == "state":
            return f"{src.name} is a buffer (state the forward pass reads or updates): no gradient reaches it"
        if i == 1 and not t.requires_grad and figure.is_loss(op.name):      # by role, integer or not
            return f"the labels of torch.{op.name}: a loss sends its gradient to the prediction only"
        return _no_grad_reason(op, t, out)

    def rule(self, op, i):
        return rule_input(op.name, i)

    def label(self, op) -> str:
        return f"torch.{op.name}"

    def said(self, k, op, i, src, out):
        return None if i else _loss_text(op, src, self.raw_edges, k, out)

    def vjp(self, op, out, g_out) -> dict:
        if out.grad_fn is None:
            return {}
        kept = self.capture.passed_back(op.index) if self.capture is not None else None
        by_tensor = kept if kept is not None else _op_vjp(op, out, g_out)
        return {i: by_tensor[id(t)] for i, t in enumerate(op.inputs) if id(t) in by_tensor}

    def jacobian(self, op, i, t, out):
        return _local_jacobian(out, t)


def _not_a_tensor(t):
    raise TypeError(f"node_id_of takes a torch tensor (or a node's tensor id) on a PyTorch trace, got "
                    f"{type(t).__name__}.")


def _module_name(node, roots=None) -> str | None:
    """The short name of the module whose op made ``node`` (``query`` for ``…attention.self.query``, ``layers.0``
    for ``…stages.0.layers.0``; an outermost model by the learner's variable for it, ``roots``), or None."""
    if node.kind != "op" or not node.scope:
        return None
    return _scope_name(node.scope, roots) or None


def _scope_name(scope: str, roots=None) -> str:
    """The short name of a scope's innermost module; an outermost model by the learner's variable (``roots``)."""
    last = scope.rsplit("/", 1)[-1]
    return figure.short_name((roots or {}).get(last, last))


def _loss_text(op, pred, raw_edges, k, out):
    """The formula on the edge from loss op ``op`` (``F.cross_entropy``, ``F.mse_loss`` …) back to its prediction.

    The engine's text for the same loss (:func:`figure.loss_formula`), in the learner's names: the prediction
    and the labels (the op's second input, when recorded), with the op's ``reduction``. None for any other op.
    """
    labels = next((t for (o, i, t, _, _, _) in raw_edges[k + 1:k + 3] if o is op and i == 1), None)
    lnode = next((s for (o, i, _, s, _, _) in raw_edges[k + 1:k + 3] if o is op and i == 1), None)
    params = op.extra.get("params", {})
    reduction = params.get("reduction", "mean")
    if len(op.inputs) > 2 or not figure.plain_loss(params):     # class weights (a tensor input), label smoothing
        return None
    soft = labels is not None and labels.is_floating_point()
    return figure.loss_formula(op.name, _named(pred), "y" if lnode is None else _named(lnode), reduction, soft)


def _named(node) -> str:
    """A node as a formula calls it: the learner's name, else its module's (``fc2``), else ``input``."""
    if node.label or node.name:
        return node.title
    return node.scope.rsplit("/", 1)[-1] if node.scope else "input"


def _op_vjp(op, out, g_out) -> dict:
    """``{id(input): ḡ_out · ∂out/∂input}`` for every input of ``op`` that requires grad: autograd's own
    vector–Jacobian product, one backward pass for all of the op's inputs (an input used twice gets the sum).

    When the op is one autograd node whose inputs are its inputs' own nodes (a convolution, an add, a relu …),
    that node's backward function is called directly: ``torch.autograd.grad`` first walks everything the
    output depends on (down to the model's first layer), which made each call cost the depth of the model and
    a whole trace grow with the square of it."""
    need = differentiable_inputs(op)
    direct = _node_vjp(out, need, g_out)
    if direct is not None:
        return direct
    try:
        got = torch.autograd.grad(out, need, grad_outputs=g_out, retain_graph=True, allow_unused=True)
    except RuntimeError:
        return {}
    return {id(t): g for t, g in zip(need, got) if g is not None}


def _node_vjp(out, need, g_out) -> dict | None:
    """:func:`_op_vjp` by calling ``out.grad_fn`` itself, or None when the op is not one node over ``need``."""
    slots = node_slots(out, need)
    if slots is None:
        return None
    try:
        got = out.grad_fn(g_out)
    except RuntimeError:
        return None
    return assemble(slots, got if isinstance(got, tuple) else (got,))


def _local_jacobian(out, x):
    """``∂out/∂x`` as a matrix (one row per entry of ``out``): every row in one batched backward pass
    (``is_grads_batched``, PyTorch's vmap over the seed), else row by row for an op vmap cannot batch."""
    n = out.numel()
    if n == 0:
        return None
    seeds = torch.eye(n, dtype=out.dtype, device=out.device).reshape((n,) + tuple(out.shape))
    if x is out:        # an in-place op: the derivative to the value it overwrote is its node's, row by row
        rows = [_node_vjp(out, [x], seed) for seed in seeds]
        if all(r is not None for r in rows):
            return np.stack([_array(r[id(x)]).astype(np.float64).reshape(-1) if id(x) in r
                             else np.zeros(x.numel()) for r in rows])
    try:
        (g,) = torch.autograd.grad(out, [x], grad_outputs=seeds, retain_graph=True, allow_unused=True,
                                   is_grads_batched=True)
    except (RuntimeError, NotImplementedError, TypeError):
        return _jacobian_by_rows(out, x)
    return np.zeros((n, x.numel())) if g is None else _array(g).astype(np.float64).reshape(n, -1)


def _jacobian_by_rows(out, x):
    rows = []
    flat = out.reshape(-1)
    for j in range(flat.numel()):
        seed = torch.zeros_like(out).reshape(-1)
        seed[j] = 1
        try:
            (g,) = torch.autograd.grad(out, [x], grad_outputs=seed.reshape(out.shape), retain_graph=True,
                                       allow_unused=True)
        except RuntimeError:
            return None
        rows.append(np.zeros(x.numel()) if g is None else _array(g).astype(np.float64).reshape(-1))
    return np.stack(rows) if rows else None


def _no_grad_reason(op, t, out) -> str | None:
    """Why no gradient flows along the edge ``t`` → ``op`` (the diagnosis's own test, :func:`explain._cut`), or None."""
    cut = _cut(op, t, out)
    if cut is not None:
        return cut[1]
    if not t.requires_grad and not out.requires_grad:
        return "no input of this op requires grad"
    return None


def compare(rec, target, hand, rtol, atol, namespace, output_gradients=None):
    """:meth:`Recording.compare`: hand gradients against autograd's, in backward order.

    Changes no ``.grad`` (see :func:`learners_grads_kept`). A hand gradient
    may be a torch tensor that still requires grad (``dh = 2 * h`` built from
    forward tensors, as the worksheets do): it is read detached.
    ``output_gradients``: the upstream gradient ``dout`` of a non-scalar target.
    """
    with learners_grads_kept(rec, target, *(k for k in hand if isinstance(k, torch.Tensor))):
        return _compare(rec, target, hand, rtol, atol, namespace, output_gradients)


def _compare(rec, target, hand, rtol, atol, namespace, output_gradients):
    trace = _build(rec, target)
    items = hand_items(rec, hand, namespace, _graph(rec), lambda v: isinstance(v, torch.Tensor), id)
    need = [t for _, t, _ in items if t.requires_grad]
    grads = {}
    if need and target.requires_grad:
        seed = torch.ones_like(target) if output_gradients is None else \
            torch.as_tensor(_array(output_gradients) if isinstance(output_gradients, torch.Tensor)
                            else np.asarray(output_gradients), dtype=target.dtype).reshape(target.shape)
        got = torch.autograd.grad(target, need, grad_outputs=seed, retain_graph=True, allow_unused=True)
        grads = {id(t): g for t, g in zip(need, got) if g is not None}

    def why_none(label, t):              # say why (a loss under torch.no_grad() does depend on its logits)
        kept, rec._caller_names = getattr(rec, "_caller_names", None), caller_names(namespace)
        try:
            return explain_recorded(rec, target, t)
        finally:
            rec._caller_names = kept

    by_tid = {n.tensor_id: n.id for n in trace.nodes}
    return compared_rows(trace, items, [grads.get(id(t)) for _, t, _ in items],
                         lambda t: by_tid.get(rec.tensor_id(t)), why_none,
                         lambda v: _array(v) if isinstance(v, torch.Tensor) else v,   # dh = 2 * h may require grad
                         rtol, atol, "PyTorch")
