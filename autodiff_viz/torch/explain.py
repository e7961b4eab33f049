"""Why is ``.grad`` None (or zero) in PyTorch? The diagnosis, with the user's line.

:meth:`Recording.explain` walks the recorded history of the target back
towards the parameter and names the first place where the gradient stops
(in record order: the input of an in-place op such as ``z.mul_(2)`` is the
value ``z`` held before it, so the walk goes on to the op that made that);
:func:`explain` answers from PyTorch's autograd graph alone (no recording:
it can say *what* is wrong, and asks for a recording to say *where*).

Reasons (``Explanation.reason``):

==============================  ============================================================
``connected``                   the gradient reaches the parameter
``requires_grad_false``         the parameter does not require grad (frozen, or made without it)
``no_grad``                     an op on the path ran under ``torch.no_grad()``
``inference_mode``              an op on the path ran under ``torch.inference_mode()``
``detached``                    ``.detach()`` or ``.data`` on the path
``left_the_graph``              a value became a Python number / list / numpy array
                                (``.item()``, ``.tolist()``, ``.numpy()``) and came back
                                through ``torch.tensor(...)``
``non_differentiable_op``       an op without a gradient on the path (``argmax``, ``round``,
                                comparisons, a cast to an integer type)
``integer_dtype``               the parameter or a value on the path is an integer tensor
``not_used``                    the target does not depend on the parameter at all
``computed_outside_recording``  the target was not computed inside the recording (a loss
                                computed after the ``with`` block): its history is unknown
``non_leaf``                    the tensor is not a leaf: autograd does not keep its ``.grad``
                                unless ``retain_grad()`` was called
``read_before_backward``        the last ``.grad`` read saw None: no ``backward()`` ran before
                                it, or ``zero_grad(set_to_none=True)`` came after the last one
``non_scalar_target``           ``backward()`` on a non-scalar target needs ``gradient=``
``custom_backward_none``        the only path runs through a custom ``autograd.Function``
                                whose ``backward`` returned None for that input
``graph_cut``                   (without a recording) the target does not require grad:
                                the graph was cut somewhere; record to find where
==============================  ============================================================
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..base.naming import code_line as _line
from ..base.naming import file_line as _where
from ..diagnosis import reasons, twins
from ..diagnosis.provenance import Cut, depends, first_cut, fresh_starts, walk_back
from ..diagnosis.provenance import caller_names as provenance_names
from ..diagnosis.walk import Explanation, Explanations
from . import provenance
from .graph_only import _graph_nodes, _is_float, _leaves, _unregistered_row, unregistered
from .provenance import Birth

if TYPE_CHECKING:
    pass

REASONS = reasons.reasons_of("torch")


def caller_names(namespace: dict) -> dict:
    """``{id(tensor): name}`` from the caller's variables: ``w`` for a tensor, ``model.fc.weight`` for a parameter.

    The learner's own names for tensors made before the recording began (no
    recorded line assigns them); a tensor bound to several names keeps the first.
    """
    return provenance_names(namespace, lambda v: isinstance(v, torch.Tensor),
                            lambda v: v.named_parameters() if isinstance(v, torch.nn.Module) else None)


def _label(rec, t) -> str:
    name = rec.name_of(t) if rec is not None else None
    mine = (getattr(rec, "_caller_names", None) or {}).get(id(t))
    if isinstance(t, torch.nn.Parameter) and (mine or name and name not in rec._param_names.values()):
        name = None        # the caller's `model.fc.weight` first; `model = nn.Linear(3, 1)` names no weight
    name = name or mine
    return f"'{name}' (shape {tuple(t.shape)})" if name else f"a tensor of shape {tuple(t.shape)}"


# ---------------------------------------------------------------------------
# With a recording
# ---------------------------------------------------------------------------
_CASTS = {"long", "int", "short", "byte", "char", "bool", "to", "type", "type_as", "int_repr"}
_INDEX_OPS = {"argmax", "argmin", "max", "min", "topk", "sort", "argsort", "kthvalue", "mode", "median",
              "nonzero", "where", "searchsorted", "bucketize", "unique"}
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__lt__", "__gt__", "__le__", "__ge__", "__ne__",
                "isclose", "logical_and", "logical_or", "logical_not", "isnan", "isinf"}
_STEPS = {"round", "floor", "ceil", "sign", "trunc", "fix", "frac"}
# the fix for each kind of op without a useful gradient: the op, not the dtype, says what to do
_OP_FIXES = {
    "index": "it returns indices (integers), and an index has no derivative. Fix: compute the loss on the scores "
             "themselves (e.g. F.cross_entropy(logits, y)), or a soft version (softmax probabilities).",
    "comparison": "a comparison returns booleans: a step, so no gradient. Fix: keep comparisons for metrics; "
                  "in a loss use a smooth surrogate (e.g. torch.sigmoid((a - b) / t)).",
    "step": "a step function: its derivative is 0 almost everywhere, so PyTorch returns a zero gradient (and "
            "TensorFlow None). Fix: keep the value before the step in the loss, a smooth stand-in (sigmoid(k·x), "
            "tanh(k·x)), or a straight-through estimator x + (x.{op}() - x).detach().",
    "cast": "a cast to an integer type drops the fractional part and the gradient. Fix: keep the values floating "
            "(no .long()/.int() casts on the way to the loss).",
}


def _op_kind(op, t_in, out) -> str | None:
    """Which kind of non-differentiable step ``op`` is from ``t_in`` to ``out`` (a key of ``_OP_FIXES``), or None."""
    name = op.name.rstrip("_")
    if name in _COMPARISONS or out.dtype == torch.bool and name not in _CASTS:
        return "comparison"
    if name in _STEPS:
        return "step"
    if _is_float(t_in) and not _is_float(out):
        return "cast" if name in _CASTS else "index"
    return None


def _cut(op, t_in, out) -> tuple[str, str] | None:
    """``(reason, words)`` when ``op`` stops the gradient from ``out`` to its input ``t_in``.

    The op check comes before the dtype check: ``argmax`` and ``x > 0`` make
    integers or booleans, but the fix is about the op, not a cast. A
    non-floating input is no cut by itself: the walk goes on to the op that
    made it from floats (an integer leaf is answered before the walk): the
    walk skips such a cut when a recorded op made the integer value.
    """
    if op.kind == "detach":
        return "detached", f"{op.name} returns a tensor cut from the graph"
    if op.kind == "rewrap":
        return "left_the_graph", f"torch.{op.name}(...) makes a new leaf tensor from plain values"
    if op.inference:
        return "inference_mode", f"torch.{op.name} ran under torch.inference_mode()"
    if not op.grad_enabled:
        return "no_grad", f"torch.{op.name} ran under torch.no_grad()"
    if not _is_float(t_in):
        return "integer_dtype", f"torch.{op.name} works on integer values ({str(t_in.dtype)[6:]}): no gradient"
    kind = _op_kind(op, t_in, out)
    if kind is None and op.kind == "op" and t_in.is_leaf and t_in.requires_grad and _is_float(out) \
            and out.grad_fn is None and not out.is_inference():      # the leaf required grad only later
        return "requires_grad_false", (f"none of torch.{op.name}'s inputs required grad when it ran, so its "
                                       "output has no history")
    if kind == "cast":
        return "integer_dtype", f"torch.{op.name} casts to {str(out.dtype)[6:]}: {_OP_FIXES['cast']}"
    if kind is not None:
        return "non_differentiable_op", (f"torch.{op.name} has no gradient here: "
                                         f"{_OP_FIXES[kind].format(op=op.name.rstrip('_'))}")
    return None


def _escape_source(rec, rewrap_op):
    """The escape (``.item()`` ...) whose value a re-wrap brought back, if the values match."""
    data = rewrap_op.extra.get("data")
    if isinstance(data, (list, tuple)):     # torch.as_tensor((a, b)): tensors inside a Python sequence
        data = [d.detach().cpu().numpy() if isinstance(d, torch.Tensor) else d for d in data]
    try:
        back = np.asarray(data.detach().cpu().numpy() if isinstance(data, torch.Tensor) else data, dtype=float)
    except (TypeError, ValueError, RuntimeError):
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


def _sources(rec, sources) -> list | None:
    """``[(name, tensor)]`` for a list, tuple, dict or module of sources (None for one tensor)."""
    if isinstance(sources, torch.Tensor):
        return None
    if isinstance(sources, torch.nn.Module):
        return [(n, p) for n, p in sources.named_parameters()] + [(n, (sources, n, p)) for n, p in
                                                                   unregistered(sources)]
    if isinstance(sources, dict):
        return [(str(k), v) for k, v in sources.items()]
    if isinstance(sources, torch.optim.Optimizer):
        params = [p for g in sources.param_groups for p in g["params"]]
        return [(rec.name_of(p) or f"param_groups[{i}]", p) for i, p in enumerate(params)]
    if isinstance(sources, (list, tuple)) or hasattr(sources, "__iter__") and not isinstance(sources, str):
        items = list(sources)
        return [(rec.name_of(t) if isinstance(t, torch.Tensor) and rec.name_of(t) else f"sources[{i}]", t)
                for i, t in enumerate(items)]
    return None


def _python_target(rec, target, param) -> Explanation:
    """The target is already a Python number (``loss.item()``): name the line where it left the graph."""
    pid = rec.tensor_id(param) if isinstance(param, torch.Tensor) else None
    esc = next((op for op in reversed(rec.ops) if op.kind == "escape" and _same_value(op.extra.get("value"), target)),
               None)
    where = (f" It left the graph with {esc.extra['how']}{_line(esc.location)}\n" if esc else
             " No recorded .item()/.tolist()/.numpy() made this value.\n")
    return Explanation("left_the_graph", f"The target is a Python {type(target).__name__} ({target!r}), not a "
                       "tensor: a number has no history, so no gradient can flow back from it." + where +
                       "Fix: call backward() on the loss tensor; use .item() only to print or log it.",
                       _where(esc.location) if esc else None, nodes=(pid,) if pid is not None else (),
                       op=esc.name if esc else None)


def _other_instance(rec, target, param, found) -> Explanation | None:
    """``optimizer_other_instance``: the optimizer holds ``param``, but the loss reads a twin from another build.

    The model was built twice (``model = Net()`` again after the optimizer
    took the first one's parameters): the loss reads the second instance,
    the optimizer steps the first. Named by the twin's shape and name in
    its module; both construction lines come from the recording when the
    models were built inside it.
    """
    if target.grad_fn is None:
        return None
    leaves = [fn.variable for fn in _graph_nodes(target) if getattr(fn, "variable", None) is not None]
    copied = _copied_into(rec, param, leaves)
    if copied is not None:
        return copied
    if found.reason != "not_used":
        return None
    name = rec._param_names.get(id(param))
    twins = [t for t in leaves if t is not param and t.shape == param.shape and
             (name is None or rec._param_names.get(id(t), name).split(".")[-1] == name.split(".")[-1])]
    if not twins:
        return None
    twin, mine = _built_at(rec, twins[0]), _built_at(rec, param)
    return Explanation("optimizer_other_instance",
                       f"The optimizer holds {_label(rec, param)}, but the loss reads another tensor of the same "
                       "shape: the model was built twice, and the optimizer got the parameters of the other "
                       f"instance.\nThe optimizer's parameter was built{_built_words(mine)}"
                       f"\nthe loss's parameter was built{_built_words(twin)}"
                       "\nFix: build the model once, then the optimizer from that model's parameters "
                       "(opt = torch.optim.SGD(model.parameters(), ...)).",
                       _where(twin) if twin else (_where(mine) if mine else None),
                       nodes=(rec.tensor_id(param),),
                       locations=tuple(_where(o) for o in (mine, twin) if o))


def _copied_into(rec, param, leaves) -> Explanation | None:
    """The optimizer's parameter was copied into another parameter that the loss reads (``new.weight.copy_(old)``
    under ``no_grad``: a layer replaced after the optimizer was built, as pruning tools do). The no_grad of the
    copy is not the cause: the optimizer holds the old parameter, and the loss never reads it."""
    ids = {id(t) for t in leaves}
    for op in rec.ops:
        if op.kind != "op" or not op.name.endswith("_") or op.grad_enabled or not op.outputs:
            continue
        new = op.outputs[0]
        if new is param or id(new) not in ids or not (new.is_leaf and new.requires_grad) or \
                not any(_depends_on(rec, x, op.index, param) for x in op.inputs[1:]):
            continue
        made, mine = _built_at(rec, new), _built_at(rec, param)
        return Explanation(
            "optimizer_other_instance",
            f"The optimizer holds {_label(rec, param)}, but the loss reads another parameter "
            f"({_label(rec, new)}): the first one's values were copied into it with torch.{op.name}(...) under "
            f"no_grad{_line(op.location)}\nThat is how a layer is replaced after the optimizer was built (pruning, "
            f"surgery on a pretrained model): the new layer was built{_built_words(made)}\n"
            f"the optimizer's parameter{_built_words(mine)}\nThe optimizer still steps the old parameter, which "
            "the loss no longer reads, and the new one is in no optimizer.\nFix: build the optimizer again after "
            "replacing the layers (opt = torch.optim.SGD(model.parameters(), ...)).",
            _where(made) if made else _where(op.location), nodes=(rec.tensor_id(param), rec.tensor_id(new)),
            op=op.name, locations=tuple(_where(o) for o in (made, op.location) if o))
    return None


def _built_words(loc) -> str:
    return _line(loc) if loc else " before the recording"


def _built_at(rec, param):
    """The user's line that built ``param``'s model (``model = Net()``, the outermost user line of the call
    that put it onto its module), else the line of the op that made it; None when made before the recording."""
    birth = rec.provenance.birth(param) if getattr(rec, "provenance", None) is not None else None
    if birth is not None and (birth.outer or birth.location):
        return birth.outer or birth.location
    made = rec.producer(param)
    return made.location if made is not None else None


def _made_in_forward(rec, target, module) -> list:
    """``made_in_forward`` rows: parameters the loss reads that ``module``'s forward built on this call.

    ``torch.nn.Linear(D_in, H)(x)`` inside ``forward`` makes a new layer, with
    new random weights, on every call: they get a ``.grad`` but belong to no
    module, so ``model.parameters()`` is empty (an optimizer refuses it) and
    the next call starts afresh. Named by the line that built them.
    """
    scope = rec._module_names.get(id(module))
    mine = {id(p) for p in module.parameters()}
    rows = []
    for fn in _graph_nodes(target):
        t = getattr(fn, "variable", None)
        op = rec.producer(t) if isinstance(t, torch.nn.Parameter) and id(t) not in mine else None
        if op is None or scope is None or not (op.scope == scope or op.scope.startswith(scope + "/")):
            continue
        rows.append((f"made in forward, line {op.location[1] if op.location else '?'}, {tuple(t.shape)}", Explanation(
            "made_in_forward",
            f"The loss reads a parameter of shape {tuple(t.shape)} that {type(module).__name__}.forward built "
            f"during this call{_line(op.location)}\nA layer constructed inside forward is a new layer with new "
            "random weights on every call, and it is not registered: module.parameters() leaves it out, so no "
            "optimizer trains it (with none left, torch.optim raises 'empty parameter list'). Fix: build the "
            "layer once in __init__ (self.linear1 = torch.nn.Linear(D_in, H)) and call self.linear1(x) in "
            "forward.", _where(op.location), nodes=(rec.tensor_id(t),), op=op.name)))
    return sorted(rows, key=lambda r: r[1].location or "")


def _same_value(a, b) -> bool:
    try:
        return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    except (TypeError, ValueError):
        return False


def _made_at(rec, t):
    """The recorded op that last made or changed ``t`` (its line is where ``t`` came from), or None."""
    return rec.producer(t)


def explain_recorded(rec, target, param):
    """:meth:`Recording.explain`: why ``param.grad`` is None after backpropagating ``target``.

    ``param`` may be one tensor (one :class:`Explanation`) or what
    ``gradient`` takes: a list, a dict, a module (its named parameters),
    ``model.parameters()``: then one row per source, the broken ones first
    (an :class:`~autodiff_viz.diagnosis.walk.Explanations`).
    """
    many = _sources(rec, param)
    if many is not None:
        rows = [(n, explain_recorded(rec, target, p) if not isinstance(p, tuple) else
                 _unregistered_row(n, p[0], _depends_on(rec, target, len(rec.ops), p[2]), p[2], rec))
                for n, p in many]
        if isinstance(param, torch.optim.Optimizer) and isinstance(target, torch.Tensor):
            rows = [(n, _other_instance(rec, target, p, e) or e) for (n, e), (_, p) in zip(rows, many)]
        if isinstance(param, torch.nn.Module) and isinstance(target, torch.Tensor):
            rows += _made_in_forward(rec, target, param)
        return Explanations(rows)
    if isinstance(target, (int, float, complex, np.number)) and not isinstance(target, bool):
        return _python_target(rec, target, param)
    for what, t in (("target", target), ("param", param)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"explain: {what} must be a torch tensor (or, for param, a list, dict or module of "
                            f"them), got {type(t).__name__}.")
    pid, tid = rec.tensor_id(param), rec.tensor_id(target)
    pname = _label(rec, param)
    made = _made_at(rec, param)
    if not _is_float(param):
        return Explanation("integer_dtype", f"{pname} has dtype {str(param.dtype)[6:]}: only floating tensors "
                           f"have gradients.{_line(made.location) if made else ''}\nFix: make it float, e.g. "
                           "torch.tensor(values, dtype=torch.float32, requires_grad=True).",
                           _where(made.location) if made else None, nodes=(pid,))
    rebound = _rebound(rec, param, pname, made)
    if rebound is not None:
        return rebound
    if not param.requires_grad:
        return _frozen(rec, param, pname, made)
    outside = outside_recording(rec, target)
    if outside is not None:
        return Explanation("computed_outside_recording", outside, nodes=(pid, tid))
    parametrized = _parametrized(rec, param, pname)
    if parametrized is not None:
        return parametrized
    walk = walk_back(target, id(param), start=len(rec.ops), **_record(rec))
    if walk.reached:
        return _connected_but(rec, target, param, pname, walk)
    leaves = walk.leaves
    cut = first_cut(walk, id(param), rank=_cast_first, **_record(rec))
    if cut is not None:
        return _at_cut(rec, cut, pname, pid, param)
    used = any(any(x is param for x in op.inputs) for op in rec.ops if op.kind == "op")
    read = used or any(x is param for op in rec.ops if op.kind in ("detach", "escape") for x in op.inputs)
    unseen = _unseen_leaf(rec, target, param, pname, leaves, read)
    if unseen is not None:
        return unseen
    starts = fresh_starts(walk)
    if read and starts and not _escaped_from(rec, param):
        lines = "".join(_line(op.location) for op in starts[:3])
        return Explanation(
            "not_used",
            f"The target does not depend on {pname}: it was computed from new tensors made from plain values,"
            f"{lines}\nand no value computed from {pname} left the graph on the way (no .item(), .numpy() or "
            "tolist() of it was recorded), so those constants do not carry it. This happens when a branch "
            "returns a constant (a loss of torch.tensor(0) when a batch has no positive samples). Fix: make that "
            "branch return a value computed from the model's output (for example pred.sum() * 0), so that the "
            "loss stays connected to the model, or skip the step.", _where(starts[0].location), nodes=(pid, tid))
    if read and starts:
        return reasons.unexplained(
            [f"torch.{op.name}(...) made a new tensor from plain values{_line(op.location)}" for op in starts]
            + [f"{pname} was read by recorded ops, but the recording saw none of its values leave the graph"],
            nodes=(pid, tid), location=_where(starts[0].location))
    read = [fn.variable for fn in _graph_nodes(target) if isinstance(getattr(fn, "variable", None), torch.Tensor)]
    twin = twins.twin_of(param, sorted(read, key=rec.tensor_id), name=lambda p: rec.name_of(p) or "",
                         shape=lambda p: tuple(p.shape), fresh=lambda p: rec.producer(p) is not None)
    if twin is not None:
        made_twin, made_param = rec.producer(twin), rec.producer(param)
        anew = twins.made_anew(pname, _label(rec, twin), made_twin.location if made_twin else None,
                               made_param.location if made_param else None, (pid, rec.tensor_id(twin)))
        if anew is not None:
            return anew
    made, target_made = rec.producer(param), rec.producer(target)
    if made is not None and target_made is not None and made.index > target_made.index:
        inputs = ", ".join(_label(rec, x) for x in made.inputs if isinstance(x, torch.Tensor)) or "its inputs"
        return Explanation(
            "not_used",
            f"{pname} was computed after the target:{_line(made.location)}\nthe target was computed before it,"
            f"{_line(target_made.location)}\nso the target cannot depend on {pname}, even when both come from the "
            f"same tensors ({inputs}): a gradient flows only along the ops that made the target. Fix: ask for the "
            f"gradient with respect to the tensors the target was computed from ({inputs}), or compute the "
            f"target from {pname}.", _where(made.location), nodes=(pid, tid))
    return _unused(rec, param, pname, (pid, tid))


def _escaped_from(rec, param) -> bool:
    """Whether a value computed from ``param`` left the graph (``.item()``, ``.numpy()``, ``tolist()`` …)."""
    return any(op.kind == "escape" and op.inputs and _depends_on(rec, op.inputs[0], op.index, param)
               for op in rec.ops)


def _forward_use(op, param) -> bool:
    """Whether record ``op`` is a forward-pass use of ``param``: an op with grad on that reads it, not an
    in-place initialisation (``normal_``, ``kaiming_uniform_``: names ending in ``_``)."""
    return op.kind == "op" and op.grad_enabled and not op.name.endswith("_") and any(x is param for x in op.inputs)


def _unused(rec, param, pname, nodes) -> Explanation:
    """``not_used``, at a line: the last op of a forward pass that used the parameter, when what it computed
    never reaches the target (a dead end); else the line that made it (a layer built but never called on the
    way to the target). Initialisations (in-place, without grad) are not uses."""
    uses = [op for op in rec.ops if _forward_use(op, param)]
    if uses:
        loc = uses[-1].location
        return Explanation(
            "not_used",
            f"The target does not depend on {pname}: the forward pass used it{_line(loc)}\nbut nothing computed "
            "from it there reaches the target (an output the loss does not read). Its .grad stays None. Fix: if "
            "that part should not learn from this loss, freeze it (requires_grad_(False)) and leave it out of the "
            "optimizer; if it should, make the loss read its output.", _where(loc), nodes=nodes)
    prov = getattr(rec, "provenance", None)
    born = prov.birth(param) if prov is not None else None
    loc = born.location if born is not None else None
    made = f", made{_line(loc)}\n" if loc else " "
    return Explanation(
        "not_used",
        f"The target does not depend on {pname}: no op of the forward pass used it. The layer that holds it{made}"
        "was never called on the way to the target (a branch not taken, an argument not passed on — a block "
        "called without the input that feeds this layer — or a layer built and never used). Its .grad stays "
        "None. Fix: call it in forward where it belongs, or do not build it, so that the optimizer does not "
        "carry a parameter that never learns.", _where(loc), nodes=nodes)


def _parametrized(rec, param, pname) -> Explanation | None:
    """``non_leaf`` for a parametrized tensor (``torch.nn.utils.parametrize``: ``orthogonal``, ``weight_norm``,
    geotorch): reading ``module.weight`` computes it anew from ``module.parametrizations.weight.original`` each
    time, so it is never a leaf and keeps no ``.grad``; the parameter that learns is ``original``."""
    made = rec.producer(param)
    if param.is_leaf or made is None or not made.scope:
        return None
    found = re.search(r"parametrizations\.(\w+)(?:/|\.|$)", made.scope)
    if found is None:
        return None
    name = found.group(1)
    prov = getattr(rec, "provenance", None)
    setup = next((a for a in reversed(prov.assignments) if a.name == "parametrizations"), None) if prov else None
    owner = setup.owner if setup is not None else None
    original = getattr(getattr(getattr(owner, "parametrizations", None), name, None), "original", None)
    called = rec.name_of(original) if isinstance(original, torch.Tensor) else None
    path = called or f"<module>.parametrizations.{name}.original"
    loc = setup.location if setup is not None else made.location
    return Explanation(
        "non_leaf",
        f"{pname} is a parametrized tensor: each read of the module's .{name} computes it anew from "
        f"{path}, through the parametrization registered{_line(loc)}\nSo it is not a leaf and autograd keeps no .grad "
        f"for it. The parameter that learns, and gets the gradient, is {path}: read {path}.grad (an optimizer "
        f"built from module.parameters() already holds it).", _where(loc), nodes=(rec.tensor_id(param),),
        op="parametrization")


def _frozen(rec, param, pname, made) -> Explanation:
    """``requires_grad_false``, with the line that froze it, the line that made it, or "before the recording"."""
    frozen = next((op for op in reversed(rec.ops) if op.kind == "requires_grad" and op.inputs[0] is param), None)
    prov = getattr(rec, "provenance", None)
    born = prov.birth(param) if frozen is None and made is None and prov is not None else None
    if born is not None and born.location is not None:
        frozen = born             # made frozen inside a library call the recording saw (from_pretrained)
    where = frozen or made
    loc = where.location if where is not None else None
    why = (getattr(frozen, "why", None) or getattr(frozen, "extra", None) or {}) if frozen else {}
    if where is not None:
        how = f"\nIt was set{_line(frozen.location)}" if frozen else f"\nIt was made{_line(made.location)}"
        fix = "Fix: param.requires_grad_(True) (and pass it to the optimizer) if it should learn."
        if why.get("flags"):
            fn, flag, value = why["flags"][0]
            how += (f"\nby the library, because {fn}(...) ran with {flag}={value} (its default unless you pass "
                    "it).")
            fix = f"Fix: pass {flag}={not value} to {fn}(...) if it should learn (or requires_grad_(True) after it)."
        elif why.get("via"):
            fn, arg, loc = why["via"]
            how += f"\ninside {fn}(), from its argument {arg}, which was False in the call{_line(loc)}"
            fix = (f"Fix: call {fn}(..., {arg}=True) for it (or leave it out of that call) if it should learn — "
                   "the call above decided False for it.")
    else:
        how = ("\nIt was frozen before the recording began (requires_grad was already False when "
               "`with adv.torch.record()` opened: the usual fine-tuning order, load, freeze, then train).")
        name = (getattr(rec, "_caller_names", None) or {}).get(id(param)) or rec.name_of(param) or "param"
        fix = reasons.fix("requires_grad_false", "before", "", name=name)
    return Explanation("requires_grad_false",
                       f"{pname} has requires_grad=False, so autograd never computes its gradient (a frozen "
                       f"parameter: requires_grad_(False), or a tensor made without requires_grad=True).{how}\n"
                       + fix, _where(loc), nodes=(rec.tensor_id(param),))


_CUT_FIXES = {
    "detached": "Fix: use the tensor itself; detach only what must not be trained (e.g. a target).",
    "no_grad": "Fix: compute the loss outside `with torch.no_grad():` (keep no_grad for evaluation).",
    "inference_mode": "Fix: compute the loss outside `torch.inference_mode()`.",
    "integer_dtype": "",            # the words of the cut carry the fix that fits the op
    "non_differentiable_op": "",
}


def _at_cut(rec, cut, pname, pid, param=None) -> Explanation:
    """The explanation of the first cut the walk found, its fix chosen by the cut's kind and its context."""
    op, x, out, reason, words = cut.at, cut.x, cut.out, cut.reason, cut.words
    loc = op.location
    nodes, edges = (pid, rec.tensor_id(out)), ((rec.tensor_id(x), rec.tensor_id(out)),)
    if reason == "left_the_graph":
        return _left(rec, cut, pname, nodes, edges)
    if reason == "new_parameter":
        a = op.extra["assignment"]
        made = rec.producer(x)
        where = "inside forward" if a.in_forward else "inside the recording"
        return Explanation(
            "new_parameter",
            f"{pname} is not what the loss reads: {type(a.owner).__name__}.{a.name} was set {where} to "
            f"nn.Parameter(...) of {'a computed value' if made is not None else 'an existing tensor'}{_line(loc)}\n"
            + (f"whose values were computed{_line(made.location)}\n" if made is not None else "")
            + "nn.Parameter(t) copies t's values into a new leaf (it shares the storage, not the graph), so the "
            "gradient stops there and the old parameter (the one the optimizer holds) gets none. Fix: do not "
            "re-wrap in forward; compute with the tensor itself (F.linear(x, W, self.fc.bias)), or update the "
            "parameter in place under torch.no_grad() (self.fc.weight.copy_(W)) outside the loss.",
            _where(loc), nodes=nodes, edges=edges, op="nn.Parameter")
    if reason in ("no_grad", "inference_mode"):
        setter = rec.provenance.grad_setter(op.index) if getattr(rec, "provenance", None) is not None else None
        if setter is not None and setter.by == "library":
            callback = loc is not None and loc != setter.location and not provenance.is_library(loc[0])
            rule = reasons.library_rule(setter.function, setter.what, callback)
            return Explanation(
                reason,
                f"The gradient from the target cannot reach {pname}: {words}{_line(loc)}\n"
                f"You did not turn gradients off there: the library did, inside your call to "
                f"{setter.function}(...){_line(setter.location)}\n"
                + reasons.fix(reason, "library", "", rule=rule),
                _where(setter.location), nodes=nodes, edges=edges, op=op.name,
                locations=tuple(_where(v) for v in (setter.location, loc) if v))
        if setter is not None and setter.what.endswith(".forward"):
            return Explanation(
                reason,
                f"The gradient from the target cannot reach {pname}: {words}{_line(loc)}\n"
                f"It ran inside {setter.what}, called{_line(setter.location)}\n"
                f"Fix: {reasons.library_rule(None, setter.what)}",
                _where(loc), nodes=nodes, edges=edges, op=op.name,
                locations=tuple(_where(v) for v in (loc, setter.location) if v))
        if setter is not None and setter.location is not None and setter.location != loc:
            words = f"{words}{_line(loc)}\nGradients were turned off{_line(setter.location)}\n"
            msg = f"The gradient from the target cannot reach {pname}: {words}{_CUT_FIXES[reason]}"
            return Explanation(reason, msg, _where(setter.location), nodes=nodes, edges=edges, op=op.name,
                               locations=tuple(_where(v) for v in (setter.location, loc) if v))
    if reason == "requires_grad_false":
        return _required_later(rec, cut, pname, nodes, edges, param)
    reach = "reaches {} only as zeros" if op.name.rstrip("_") in _STEPS else "cannot reach {}"   # PyTorch: 0, not None
    msg = f"The gradient from the target {reach.format(pname)}: {words}{_line(loc)}\n{_CUT_FIXES[reason]}".rstrip()
    return Explanation(reason, msg, _where(loc), nodes=nodes, edges=edges, op=op.name)


def _required_later(rec, cut, pname, nodes, edges, param) -> Explanation:
    """``requires_grad_false`` at an op that read the source before it required grad (``x.requires_grad = True``
    after ``y = x * 2``): autograd records only ops whose inputs require grad at the moment they run. The line
    is the first op that read the source itself without recording it."""
    op = next((r for r in rec.ops[:cut.at.index + 1] if r.kind == "op" and any(x is param for x in r.inputs)
               and all(_is_float(o) and o.grad_fn is None for o in r.outputs)), cut.at)
    loc = op.location
    later = next((r for r in rec.ops[op.index:] if r.kind == "requires_grad" and r.extra.get("to")
                  and r.inputs[0] is param), None)
    when = f"\nrequires_grad was turned on only afterwards{_line(later.location)}" if later is not None else ""
    words = (f"{pname} did not require grad yet when torch.{op.name} read it, so autograd did not record it"
             if any(x is param for x in op.inputs) else cut.words)
    return Explanation(
        "requires_grad_false",
        f"The gradient from the target cannot reach {pname}: {words}{_line(loc)}{when}\n"
        "autograd records an op only if an input requires grad at the moment it runs; turning requires_grad on "
        "later does not reach back to ops already run. Fix: make the tensor with requires_grad=True "
        "(torch.ones(3, requires_grad=True)) or call x.requires_grad_() before the first op that uses it.",
        _where(loc), nodes=nodes, edges=edges, op=op.name,
        locations=tuple(_where(v) for v in (loc, later.location if later is not None else None) if v))


def _left(rec, cut, pname, nodes, edges) -> Explanation:
    """``left_the_graph``: the escape (``.item()``) and the re-wrap (``torch.tensor``) that brought it back."""
    op, loc = cut.at, cut.at.location
    esc = cut.via if cut.via is not None else (_escape_source(rec, op) if op.kind == "rewrap" else None)
    esc_loc = esc.location if esc else None
    how = esc.extra["how"] if esc else "a Python value"
    default = "Fix: keep computing with the tensor itself (no .item()/.tolist()/.numpy() in the middle)."
    msg = (f"The value on the way from {pname} to the target left the graph with {how}"
           f"{_line(esc_loc)}\nand came back as a new tensor with torch.{op.name}(...){_line(loc)}\n"
           "A Python number or a new tensor built from one has no history, so no gradient flows back. "
           + reasons.fix("left_the_graph", reasons.context_of(esc_loc), default))
    data = op.extra.get("data")
    if esc is None and isinstance(data, (list, tuple)) and any(isinstance(d, torch.Tensor) for d in data):
        msg = (f"torch.{op.name}(...) was given a Python sequence of tensors that holds "
               f"{pname} (or a value computed from it){_line(loc)}\nIt copies their values into a new "
               "leaf tensor with no history (setting requires_grad=True on it afterwards makes a new leaf, "
               "it does not reconnect the graph), so no gradient flows back. Fix: torch.stack(seq) (or "
               "torch.cat) joins tensors and keeps the graph.")
    return Explanation("left_the_graph", msg, _where(esc_loc or loc), nodes=nodes, edges=edges, op=op.name,
                       locations=tuple(_where(v) for v in (esc_loc, loc) if v))


def _unseen_leaf(rec, target, param, pname, leaves, used) -> Explanation | None:
    """The recording missed a step: never ``not_used`` when the source is in fact read on the way.

    Two signs. PyTorch's own graph of the target reaches the parameter
    although the recorded history does not (an op the recorder did not see),
    or the walk back from the target meets a leaf that requires grad whose
    making was not recorded while the parameter was read by recorded ops (a
    re-wrap the recorder does not see, such as the legacy
    ``torch.autograd.Variable(t.data, requires_grad=True)``): its values may
    come from the parameter, but its graph starts afresh.
    """
    pid = rec.tensor_id(param)
    if target.grad_fn is not None and id(param) in _leaves(target):
        # the tensor the walk met without a recorded maker, though autograd made it from the parameter
        hidden = next((t for t in leaves if t.grad_fn is not None and id(param) in _leaves(t)), None)
        reader = None if hidden is None else next(
            (op for op in rec.ops if op.kind == "op" and any(x is hidden for x in op.inputs)), None)
        seen = (f": {_label(rec, hidden)} was computed from it where the recorder could not see; its first "
                f"recorded use is{_line(reader.location)}\n" if reader is not None else
                ": an op ran that the recorder did not see.\n")
        return Explanation("unrecorded_op", f"PyTorch's graph of the target reaches {pname}, but the recording "
                           f"does not show the whole path{seen}"
                           "The gradient does flow (.grad is filled); only rec.trace and explain miss that step. "
                           "The recorder sees the torch calls of this thread: a forward run in another thread "
                           "(a thread pool), a TorchScript module (torch.jit.script / trace) or a C++ extension "
                           "runs unseen. Fix: to see the step, run it in the recording's thread with the eager "
                           "module (not the scripted one).",
                           _where(reader.location) if reader is not None else None,
                           nodes=(pid,) + ((rec.tensor_id(hidden),) if hidden is not None else ()),
                           op=reader.name if reader is not None else None)
    fresh = [t for t in leaves if t is not param and t.requires_grad and t.is_leaf and id(t) not in rec._param_names]
    if not used or not fresh:
        return None
    leaf = fresh[0]
    reader = next((op for op in rec.ops if op.kind == "op" and any(x is leaf for x in op.inputs)), None)
    source = next((op for op in rec.ops if op.kind in ("op", "detach") and any(
        o.data_ptr() == leaf.data_ptr() and o is not leaf for o in op.outputs)), None)
    shared = (f"\nIts values are those of{_line(source.location)}\n" if source is not None else "\n")
    where = source or reader
    return Explanation("unseen_leaf",
                       f"The target is computed from {_label(rec, leaf)}, a new leaf the recording did not see "
                       f"being made (first used{_line(reader.location) if reader else ' here'}){shared}"
                       f"{pname} is read by recorded ops, but the gradient stops at that new leaf: "
                       "a tensor re-made from values "
                       "(e.g. the legacy torch.autograd.Variable(t.data, requires_grad=True), "
                       "t.detach().requires_grad_()) starts a new graph. Fix: use the tensor itself, not a "
                       "re-made copy.", _where(where.location) if where else None,
                       nodes=(pid, rec.tensor_id(leaf)), op=where.name if where else None)


_MOVES = {"to", "cuda", "cpu", "double", "float", "half", "bfloat16", "type", "type_as"}


def _rebound(rec, param, pname, made) -> Explanation | None:
    """``rebound_parameter``: ``w = w - lr * w.grad`` made a new tensor named ``w``; the old leaf got the gradient.

    The sign: the op that made ``param`` ran on the same line as a read of
    ``.grad`` of a leaf it was computed from. Under ``no_grad`` the new ``w``
    does not require grad; outside it, it is a non-leaf. Either way the next
    ``backward()`` has no ``w.grad`` to fill, and the fix is the in-place
    update, which keeps the same leaf.
    """
    if made is None or made.kind != "op" or made.location is None:
        return None
    reads = [op for op in rec.ops if op.kind == "read_grad" and op.location == made.location]
    if not reads:
        return None
    old = reads[-1].inputs[0]
    name = rec.name_of(old) or rec.name_of(param) or "w"
    what = ("under torch.no_grad() the new tensor does not require grad" if not param.requires_grad else
            "the new tensor is computed from the old one (a non-leaf), so autograd keeps no .grad for it")
    return Explanation("rebound_parameter",
                       f"{pname} is not the parameter any more: this line made a new tensor and bound the name "
                       f"to it{_line(made.location)}\n{what}; the optimizer (and .grad) still refer to the old "
                       f"leaf. Fix: update in place, keeping the same leaf:\n    with torch.no_grad():\n"
                       f"        {name} -= lr * {name}.grad\n        {name}.grad.zero_()",
                       _where(made.location), nodes=(rec.tensor_id(param),), op=made.name)


def _record(rec) -> dict:
    """What the shared walk (:mod:`autodiff_viz.diagnosis.provenance`) needs from a recording: key, producer, edges.

    An edge from an op's input carries the op's cut (:func:`_cut`); a re-wrap
    (``torch.tensor(v)``) also comes from the escape whose value it holds
    (``v = x.item()``), cut ``left_the_graph`` — or, when no single escape holds
    its values (``total += l.item()`` in a loop), from every escape before it.
    An integer input is no cut of its own when a recorded op made it: the walk
    goes on to that op (the cast). A parameter put onto a module inside the
    recording (``self.weight = nn.Parameter(W)``) is born there: its birth is a
    record whose input is the value it copies, cut ``new_parameter``. The
    outputs of a custom ``autograd.Function`` come from its tensor inputs
    (a ``function`` record, no cut): its ``forward`` always runs without grad,
    and its own ``backward`` carries the gradient.
    """
    births = _births(rec)
    prov = getattr(rec, "provenance", None)
    applied = {id(o): a for a in (prov.applied if prov is not None else ()) for o in a.outputs}

    def producer(t, k=None):
        a = applied.get(id(t))
        if a is not None and (k is None or a.index <= k):
            return a
        op = rec.producer(t, k)
        if op is None:
            birth = births.get(id(t))
            if birth is not None and (k is None or birth.index <= k):
                return birth
        return op

    def edges(op, t):
        if op.kind == "function":      # a custom Function: its own backward carries the gradient
            for x in op.inputs:
                yield x, op.index, None
            return
        if op.kind == "birth":
            for x in op.inputs:
                yield x, op.index, Cut(op, x, t, op.index, "new_parameter", "nn.Parameter(...) makes a new leaf")
            return
        for x in op.inputs:
            c = _cut(op, x, t)
            yield x, op.index, None if c is None else Cut(
                op, x, t, op.index, *c,
                listed=not (c[0] == "integer_dtype" and not _is_float(x) and rec.producer(x, op.index)))
        if op.kind == "rewrap":
            esc = _escape_source(rec, op)
            for e in [esc] if esc is not None else [e for e in rec.ops[:op.index] if e.kind == "escape"]:
                if e.inputs:
                    yield e.inputs[0], e.index, Cut(op, e.inputs[0], t, e.index, "left_the_graph", "", via=e)
    return {"key": id, "producer": producer, "edges": edges}


def _births(rec) -> dict:
    """``{id(parameter): birth record}`` for the parameters assigned onto a module inside the recording whose
    values are those of a recorded op's output (``nn.Parameter(W)`` shares ``W``'s storage)."""
    prov = getattr(rec, "provenance", None)
    if prov is None:
        return {}
    out = {}
    for k, a in enumerate(prov.assignments):
        p = a.value
        if not isinstance(p, torch.nn.Parameter) or rec.producer(p) is not None:
            continue
        # the newest holder of the same storage first: nn.Parameter(mu) of a parameter mu that was itself made
        # from torch.zeros(...) comes from mu
        pool = [b.value for b in reversed(prov.assignments[:k]) if isinstance(b.value, torch.nn.Parameter)]
        pool += [o for op in reversed(rec.ops[:a.index]) if op.kind in ("op", "detach", "rewrap") for o in op.outputs]
        src = next((o for o in pool if o is not p and o.data_ptr() == p.data_ptr() and o.shape == p.shape), None)
        if src is not None:
            out[id(p)] = Birth(a.index, f"nn.Parameter -> {type(a.owner).__name__}.{a.name}", [src], [p],
                               a.location, {"assignment": a})
    return out


def _cast_first(cut) -> int:
    """A cast to an integer type names the cause; a later op reading the integers only repeats it."""
    return 0 if cut.reason == "integer_dtype" and _is_float(cut.x) and not _is_float(cut.out) else 1


def _depends_on(rec, t, before, param) -> bool:
    """Whether the value ``t`` had when record ``before`` read it was computed from ``param`` (cuts or not)."""
    return depends(t, before, id(param), **_record(rec))


def _connected_but(rec, target, param, pname, walk=None) -> Explanation:
    pid = rec.tensor_id(param)
    if not param.is_leaf and not param.retains_grad:
        made = rec.producer(param)
        name = rec.name_of(param) or "t"
        fix = (f"Fix: make the leaf after the move, e.g. torch.randn(..., device=device, requires_grad=True), or "
               f"call {name}.retain_grad() before backward()." if made is not None and made.name in _MOVES else
               f"Fix: call {name}.retain_grad() before backward(), or use torch.autograd.grad(loss, {name}).")
        return Explanation("non_leaf", f"{pname} is not a leaf: it was computed by torch.{made.name if made else '?'}"
                           f"{_line(made.location) if made else ''}\nand autograd keeps .grad only for leaves. The "
                           f"gradient flows through it, but is not stored. {fix}",
                           _where(made.location) if made else None, nodes=(pid,), op=made.name if made else None)
    backwards = [op for op in rec.ops if op.kind == "backward"]
    if target.numel() != 1 and not any(op.inputs[0] is target and op.extra.get("gradient") is not None
                                       for op in backwards):
        call = next((op for op in reversed(backwards) if op.inputs[0] is target), None) or rec.producer(target)
        return Explanation("non_scalar_target", f"The target has shape {tuple(target.shape)}: backward() needs "
                           "a scalar, or the upstream gradient (RuntimeError 'grad can be implicitly created only "
                           f"for scalar outputs'){_line(call.location) if call else ''}\nFix: reduce it first "
                           "(loss.mean().backward()) or pass gradient=torch.ones_like(loss) for the gradient of the "
                           "sum.", _where(call.location) if call else None, nodes=(rec.tensor_id(target),))
    unset = _grad_unset(rec, param, pname) or _read_by_library_too_early(rec, param, pname)
    if unset is not None:
        return unset
    custom = _custom_backward_none(rec, target, param, pname, walk)
    if custom is not None:
        return custom
    from ..diagnosis.flow import explain_recording  # zero, vanishing or NaN although connected (issue 44)
    return explain_recording(rec, target, param) or \
        Explanation("connected", f"The gradient of the target reaches {pname}.", nodes=(pid,))


def _custom_backward_none(rec, target, param, pname, walk) -> Explanation | None:
    """``custom_backward_none``: the target's backward ran and the graph reaches ``param`` only through a custom
    ``autograd.Function``, yet ``.grad`` stayed None.

    Built-in ops always hand back a gradient (zeros at worst) for an input
    that needs one; ``None`` reaches a leaf only when some ``backward`` on
    the way returned ``None`` for it. With a custom Function on every path,
    that is its ``backward`` — often one that calls ``torch.autograd.grad``
    on values recomputed inside it, where grad mode is off.
    """
    if walk is None or param.grad is not None or not any(
            op.kind == "backward" and op.inputs and op.inputs[0] is target for op in rec.ops):
        return None
    keys = _record(rec)
    found = [op for op in walk.records if op.kind == "function"
             and any(depends(x, op.index, id(param), **keys) for x in op.inputs)]
    if not found or _reached_around(target, param, {id(o) for op in found for o in op.outputs}, keys):
        return None
    fn = found[-1]
    cls = fn.extra["cls"]
    slot = next(k for k, x in enumerate(fn.inputs) if depends(x, fn.index, id(param), **keys))
    try:
        import inspect
        src, first = inspect.getsourcelines(cls.backward)
        first += next((k for k, text in enumerate(src) if text.lstrip().startswith("def ")), 0)
        where = (inspect.getsourcefile(cls.backward), first)
    except (OSError, TypeError):
        where = None
    cname = cls.__name__
    return Explanation(
        "custom_backward_none",
        f"The target's backward() ran and its graph reaches {pname} only through {cname}, a custom "
        f"autograd.Function{_line(fn.location)}\nbut its .grad is None: {cname}.backward returned None for "
        f"its input {slot}{_line(where) if where else ''}\n(built-in ops always return a gradient, zeros at worst). "
        f"backward runs with gradients off: a value recomputed inside it has no history, so torch.autograd.grad "
        f"there gives None.\nFix: return a gradient for input {slot} from {cname}.backward — write its formula "
        f"(e.g. grad_output * w), or compute it under `with torch.enable_grad():` from detached copies that "
        f"require grad.", _where(where or fn.location), nodes=(rec.tensor_id(param),), op=fn.name)


def _reached_around(target, param, through: set, keys) -> bool:
    """Does a path from ``target`` reach ``param`` without passing through the values in ``through``?"""
    def edges(op, t):
        for x, k, cut in keys["edges"](op, t):
            if id(x) not in through:
                yield x, k, cut
    return walk_back(target, id(param), key=keys["key"], producer=keys["producer"], edges=edges).reached


def _grad_unset(rec, param, pname) -> Explanation | None:
    """``read_before_backward`` when the ``.grad`` the user last saw was None although the gradient connects.

    What the user saw is the last recorded read of ``param.grad`` (with no
    read: ``.grad`` as it is now). Why it was None is the last event before
    that moment: a reset to None (``zero_grad(set_to_none=True)``,
    ``p.grad = None``) after the last ``backward()``, or no ``backward()`` at
    all. Events after a read do not change what the read returned, so a
    read before ``backward()`` is named even when ``.grad`` holds a gradient now.
    """
    events = [op for op in rec.ops if op.kind == "backward" and op.name == "backward"    # autograd.grad fills no .grad
              or op.kind in ("read_grad", "set_grad")
              and any(x is param for x in op.inputs)]
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


def _read_by_library_too_early(rec, param, pname) -> Explanation | None:
    """``read_before_backward`` when a library function the user called read ``param.grad`` while it was None,
    after a forward pass used ``param`` and before the ``backward()`` that filled it: ``clip_grad_norm_`` before
    ``loss.backward()`` finds no gradients, clips nothing and returns a norm of 0, without an error."""
    backwards = [op for op in rec.ops if op.kind == "backward"]
    for read in (op for op in rec.ops if op.kind == "library_read_grad" and op.inputs[0] is param):
        used = next((op.index for op in reversed(rec.ops[:read.index]) if _forward_use(op, param)
                     and any(getattr(o, "requires_grad", False) for o in op.outputs)), None)
        later = next((op for op in backwards if op.index > read.index), None)
        if used is None or later is None or any(used < op.index < read.index for op in backwards):
            continue        # not between a forward pass that used it and its backward (model.double(), a reset)
        fn = read.extra["function"]
        return Explanation(
            "read_before_backward",
            f"{fn}(...) read the .grad of {pname} before any backward() had filled it{_line(read.location)}\n"
            f"It was None there, so {fn} saw no gradient"
            + (" (a gradient-norm clip finds a norm of 0 and clips nothing)" if "clip" in fn else "")
            + f"; the gradient came only later, from the backward(){_line(later.location)}\n"
            f"Fix: call loss.backward() before {fn}(...)"
            + (": backward, then clip, then optimizer.step()." if "clip" in fn else "."),
            _where(read.location), nodes=(rec.tensor_id(param),), locations=(_where(read.location),
                                                                              _where(later.location)))
    return None
