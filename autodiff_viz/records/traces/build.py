"""Building a :class:`~autodiff_viz.Trace` from a tape: what ``tape.trace()`` does.

The forward record comes from the tape's nodes; the backward record from one
walk (:func:`autodiff_viz.core.walks.backward`) whose every step is kept: per
edge the rule's factor text made into a formula (``ḡ_x = ḡ_y · (1 − y²)``),
the upstream gradient, the contribution and, where both sides are small, the
local Jacobian. Nodes are titled with the learner's names (the variable
assigned on the recorded line) and folded by scope (layer, loss, function).
"""
from __future__ import annotations

import re

import numpy as np

from ...base import naming, state
from ...base.state import OWN_KIND, paused, resolve_location, scope_kinds
from ...core import engine, walks
from ...core.tensor import Tensor, Variable, full_name
from .model import (
    JACOBIAN_LIMIT,
    VALUE_LIMIT,
    Location,
    Summary,
    Trace,
    TraceEdge,
    TraceNode,
    _no_gc,
    check_value_limit,
)

_NOT_A_BOX = ("call", "__call__", "build", "forward", "apply", "update_step")


class _Where:
    """Resolve record locations once per distinct ``(code, lasti)`` and find the learner's names.

    A run of consecutive records made by one execution of a source line (same
    code and line, the bytecode offset never going back) is one assignment:
    its last op gets the line's assignment target as ``label``. A record made
    in a code object other than the tape's own (the ``with`` block's) is in
    the user's function of that name; consecutive records in one function are
    one call of it, unless the code starts again at or before the line where
    the call began (``y = f(f(x))``: two calls). A call of another function
    in between (``helper`` called by ``block``) does not end the call: it is
    nested in it (see :func:`autodiff_viz.dot.hierarchy`).
    """

    def __init__(self, opener, escaped=frozenset()):
        self.opener = opener[0] if opener else None
        self.escaped = escaped      # (tensor id, file, line) of values that left the tape as numbers or numpy
        self.cache: dict = {}
        self.locations: dict = {}
        self.calls: dict = {}

    def resolve(self, where):
        """``(code or None, lasti, Location or None)`` of a record's raw ``_where``."""
        if where is None:
            return None, -1, None
        if isinstance(where[0], str):
            loc = self.locations.get(where)
            if loc is None:
                loc = self.locations[where] = Location.of(where)
            return None, -1, loc
        code, lasti = where
        key = (id(code), lasti)
        loc = self.cache.get(key)
        if loc is None:
            loc = self.cache[key] = Location.of(resolve_location(where))
        return code, lasti, loc

    def function_of(self, code) -> str | None:
        if code is None or self.opener is None or code is self.opener:
            return None
        name = code.co_name
        if name.startswith("<") or name in _NOT_A_BOX:
            return None
        return getattr(code, "co_qualname", name).split("<locals>.")[-1]

    def annotate(self, records, op_nodes) -> None:
        """Set ``label``, ``location``, ``function`` and ``call`` on the op nodes of ``records``."""
        run_key, run_last, last_lasti, run_code = None, None, -1, None
        calls: dict = {}      # function -> [last bytecode offset, line where the call began, call number]
        for rec, n in zip(records, op_nodes):
            code, lasti, loc = self.resolve(rec._where)
            n.location = loc
            key = None if loc is None else (id(code), loc.file, loc.line)
            if key is None or key != run_key or lasti < last_lasti:
                self._close(run_last, run_code)
                run_key, run_code = key, code
            run_last, last_lasti = (n if key is not None else None), lasti
            fn = self.function_of(code)
            if fn is not None:
                line = loc.line if loc is not None else 0
                state = calls.get(fn)
                # a new call: the code starts again at or before the line where the last call began
                # (a loop inside the function goes back too, but to a later line; a call of another
                # function in between, `helper` inside `block`, resumes at a later offset)
                if state is None or (lasti < state[0] and line <= state[1]):
                    self.calls[fn] = self.calls.get(fn, 0) + 1
                    state = calls[fn] = [lasti, line, self.calls[fn]]
                state[0] = lasti
                n.function, n.call = fn, state[2]
        self._close(run_last, run_code)

    def _close(self, node, code) -> None:
        """Name the last op of a line's run: the assigned variable, or ``f(…)`` for ``return …`` in ``f``.

        Not when that op's output left the tape on the same line (``loss = loss - math.log(p[i])``: the
        line assigns a Python number made from it, not the op's output).
        """
        if node is None or node.location is None or node.label is not None:
            return
        if (node.tensor_id, node.location.file, node.location.line) in self.escaped:
            return
        node.label = naming.assigned_name_at(node.location.file, node.location.line)
        if node.label is None and self.function_of(code) and naming.is_return(node.location.code):
            node.label = f"{code.co_name}(…)"


_PRODUCT = ("·", "⋆", "@", "⊙")
_WORDS = re.compile(r"\b(back|over|copies|window|read|place|spread|slice|with|the|every|summed|at)\b")


def factor_rule(name: str, i: int):
    """``(rule, input spec)`` of the rule table's op ``name`` for its input ``i``, when that input has factor
    text; else None (no such rule, an input past a fixed-arity rule's, or a factor the table does not write).
    The bridges map their ops to rule names (``Tanh`` → ``tanh``) and ask here for the text on an edge."""
    from ...core.rules import TABLE
    rule = TABLE.get(name)
    if rule is None or (not rule.variadic and i >= len(rule.inputs)):
        return None
    spec = rule.spec(i)
    return None if spec.factor is None else (rule, spec)


# ops that only move entries (views, reshapes, slices): a bridge names their output by what they act on
_VIEWS = {"view": ".view", "reshape": ".reshape", "flatten": ".flatten", "permute": ".permute",
          "transpose": ".transpose", "t": ".T", "T": ".T", "mT": ".mT", "contiguous": ".contiguous",
          "squeeze": ".squeeze",
          "unsqueeze": ".unsqueeze", "expand": ".expand", "__getitem__": "[…]", "Reshape": ".reshape",
          "Transpose": ".transpose", "Squeeze": ".squeeze", "ExpandDims": ".expand_dims",
          "StridedSlice": "[…]", "Slice": "[…]"}


def view_title(op_name: str, base: str | None, own: bool = False) -> str | None:
    """The name of a view, reshape or slice the learner did not name, by what it acts on: ``logits.view``,
    ``logits[…]`` (never ``__getitem__``, never the library's ``view`` standing for the user's ``logits``).

    ``own``: the op is one a model's own ``forward`` computes between its layers (ConvNeXt's pooling ``mean``
    of the encoder's output, T5's shift of the labels), drawn beside those layers' boxes when the model is open:
    any such op is named by what it acts on too — ``encoder.mean``, ``labels == …``, ``labels[…] = …`` — not by
    the library's op. None for any other op, or when the tensor it acts on has no name either."""
    if not base:
        return None
    suffix = _VIEWS.get(op_name)
    if suffix is not None:
        return base + suffix
    if not own:
        return None
    if op_name in _SAME:
        return base
    if op_name in ("__setitem__", "setitem"):
        return f"{base}[…] = …"
    sym = _OPERATORS.get(op_name)
    return f"{base} {sym} …" if sym else f"{base}.{op_name.strip('_')}"


class OpNames:
    """What a bridge names an unnamed op's output after: the tensor it acts on.

    A view names its output after its input's label or name, or the module that made it (``lm_head.view``).
    An op a model's own ``forward`` computes (``own``, its ``scope`` given) names its input by the child module
    that made it, as that module's box is titled beside it (``encoder.mean`` in ConvNeXt's model), and never
    builds on a name made up this way: the next op is named from the same root with ``…`` for the steps
    between (``labels….masked_fill``, not ``labels.new_zeros[…] = …[…] = ….masked_fill``)."""

    def __init__(self, module_name):
        self.module_name, self.roots = module_name, {}

    def __call__(self, base, scope: str | None = None) -> str | None:
        if base is None:
            return None
        if scope is not None:
            child = _child_of(scope, base)
            if child:
                return child
            root = self.roots.get(base.id)
            if root is not None:
                return root + "…"
        name = base.label or base.name or self.module_name(base)
        return _relative(name, scope) if scope and name else name

    def made(self, node, base, scope: str) -> None:
        """``node``'s label was made from ``base`` by an op of ``scope``: later ops name it from its root."""
        named = self(base, scope) if base is not None else None
        root = self.roots.get(base.id) if base is not None else None
        if root is not None or node.label != named:        # a cast keeps its input's name and is no new root
            self.roots[node.id] = root or named or node.label


def _child_of(scope: str, node) -> str | None:
    """The child module of ``scope`` whose op made ``node`` (``encoder`` for ``…/convnext/convnext.encoder/…``,
    said relative to ``scope``'s own name), or None when ``node`` was not made inside ``scope``."""
    if node.kind != "op" or not node.scope.startswith(scope + "/"):
        return None
    return _relative(node.scope[len(scope) + 1:].split("/", 1)[0], scope)


def _relative(name: str, scope: str) -> str:
    """``name`` said inside ``scope``: without the scope's own dotted path in front (``convnext.encoder`` in
    ``…/convnext`` → ``encoder``)."""
    own = scope.rsplit("/", 1)[-1] + "."
    return name[len(own):] if name.startswith(own) else name


# casts and moves: the value is the same numbers, so it keeps the name of what it acts on
_SAME = frozenset({"to", "type", "type_as", "float", "double", "half", "bfloat16", "long", "int", "cpu", "Cast",
                   "Identity"})

_OPERATORS = {f"__{k}__": v for k, v in {
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "add": "+", "radd": "+", "iadd": "+=",
    "sub": "−", "rsub": "−", "isub": "−=", "mul": "·", "rmul": "·", "imul": "·=", "truediv": "/", "rtruediv": "/",
    "itruediv": "/=", "matmul": "@", "rmatmul": "@", "pow": "**", "rpow": "**", "and": "&", "or": "|",
    "neg": "−", "invert": "~", "mod": "%", "floordiv": "//"}.items()}


def bridge_edge(eid: str, src: str, dst: str, i: int, mapped, reason, op_label: str, in_shape, out_shape) -> TraceEdge:
    """The edge into input ``i`` of a bridge's recorded op: the rule table's factor and whole formula when
    ``mapped`` (from :func:`factor_rule`), else "factor not shown for ``op_label``"; ``reason`` (why no
    gradient flows there) marks the edge cut and drops the formula."""
    if mapped is None:
        return TraceEdge(eid, src, dst, i, f"input {i}", None if reason else f"factor not shown for {op_label}",
                         reason is None, reason)
    rule, spec = mapped
    return TraceEdge(eid, src, dst, i, spec.name, f"∂y/∂{spec.name} = {spec.factor}", reason is None, reason,
                     formula=None if reason else formula(spec.factor, spec.name, rule.elementwise,
                                                         tuple(in_shape), tuple(out_shape)))


def formula(factor: str | None, input_name: str, elementwise: bool, in_shape, out_shape) -> str | None:
    """The chain-rule step of one edge as a whole formula a beginner can read.

    ``factor`` is the rule table's text for ``∂y/∂x``. A factor written as a
    right product (``· Wᵀ``) or a left product (``xᵀ ·``) is completed with
    ``ḡ_y`` on the open side; a factor that already names the upstream
    gradient ``ḡ`` is the VJP itself; a factor with conditions or notes is
    shown beside ``ḡ_y · ∂y/∂x``; one said in words (``reshape back``) follows
    ``ḡ_y,``; any other factor ``f`` multiplies: ``ḡ_x = ḡ_y · (f)`` (entry by
    entry for elementwise ops). When numpy
    broadcast the input (a bias added to every row of a batch), its
    gradient sums over the copies, which the formula says: ``ḡ_b = Σ_batch ḡ_y``.
    """
    if factor is None:
        return None
    x, f, note = input_name, factor.strip(), ""
    if f[:1] in _PRODUCT:
        body = f"ḡ_y {f}"
    elif f[-1:] in _PRODUCT:
        body = f"{f} ḡ_y"
    elif "ḡ" in f:
        body = f.replace("ḡ", "ḡ_y")          # the factor is already written as the VJP
    elif f == "1":
        body = "ḡ_y"
    elif f in ("−1", "-1"):
        body = "−ḡ_y"
    elif any(c in f for c in ";:=") or " if " in f:
        body, note = f"ḡ_y · ∂y/∂{x}", f"  (∂y/∂{x} = {f})"
    elif _WORDS.search(f):
        body = f"ḡ_y, {f}"                   # a factor said in words: "reshape back", "sum over copies"
    else:
        grouped = any(op in f for op in (" + ", " − ", " - ")) or f.startswith(("−", "-"))
        body = f"ḡ_y · ({f})" if grouped else f"ḡ_y · {f}"
    in_shape, out_shape = tuple(in_shape), tuple(out_shape)
    if not elementwise or in_shape == out_shape:
        return f"ḡ_{x} = {body}{note}"
    if all(a == 1 for a in in_shape):
        return f"ḡ_{x} = Σ_all {body}{note}  ({x} is one number used for every entry: its gradient sums them)"
    if len(out_shape) - len(in_shape) == 1 and in_shape == out_shape[1:]:
        return (f"ḡ_{x} = Σ_batch {body}{note}  ({x} is added to every row of the batch, "
                "so its gradient sums the rows)")
    return (f"ḡ_{x} = Σ_broadcast {body}{note}  ({x} was broadcast from {in_shape} to {out_shape}: "
            "its gradient sums the copies)")


def _param_text(v) -> str:
    text = repr(v.tolist() if isinstance(v, np.ndarray) else v)
    return text if len(text) <= 60 else text[:57] + "..."


def _leaf_kind(tape, t: Tensor) -> str:
    watched = tape.record.watched.get(t._id)
    if isinstance(watched, Variable):
        return "variable"
    if watched is not None:
        return "watched"
    return "outside" if t._node is not None else "constant"


def _no_grad_reason(rule, i, x, node) -> str | None:
    spec = rule.spec(i)
    if spec.vjp is None:
        if not rule.differentiable:
            return f"{rule.name} has no gradient"
        return f"{rule.name} has no gradient for its input '{spec.name}'"
    if x.dtype.kind not in "fc":
        return f"integer input ({x.dtype}): gradients exist only for floating tensors"
    if node.out.dtype.kind not in "fc":
        return f"{rule.name} gives {node.out.dtype} values: no gradient flows through integers"
    return None


def local_jacobian(node, i: int) -> np.ndarray:
    """``∂y/∂x_i`` of one record as an ``(y.size, x_i.size)`` matrix, from the rule's VJP.

    One VJP call seeded with the identity of shape ``y.shape + y.shape`` (each
    row of the identity is a batch entry of the cotangent).
    """
    with paused(), np.errstate(all="ignore"):
        return _local_jacobian(node, i)


_EYES: dict = {}


def _local_jacobian(node, i: int) -> np.ndarray:
    """:func:`local_jacobian` without entering ``paused``/``errstate`` (the caller has)."""
    rule, y = node.rule, node.out
    xs = [t._value for t in node.inputs]
    x = xs[i]
    key = (y.shape, y.dtype)
    seed = _EYES.get(key)
    if seed is None:
        seed = _EYES[key] = np.eye(y.size, dtype=y.dtype).reshape(y.shape + y.shape)
        seed.flags.writeable = False
    spec = rule.spec(i)
    gi = spec.vjp(seed, y, *xs, i=i, **node.params) if rule.variadic else spec.vjp(seed, y, *xs, **node.params)
    if rule.elementwise:
        gi = engine.unbroadcast(gi, x.shape, y.ndim)
    gi = np.broadcast_to(np.asarray(gi), y.shape + x.shape)
    return np.array(gi, dtype=np.float64).reshape(y.size, x.size)


def build_trace(tape, target=None, sources=None, value_limit: int | None = VALUE_LIMIT) -> Trace:
    """The :class:`Trace` of ``tape``'s record.

    Args:
        tape: a :class:`~autodiff_viz.GradientTape` (inside or after its ``with``).
        target: the tensor whose gradient the backward view shows; ``None``
            means the output of the last recorded op. A non-scalar target is
            seeded with ones (the gradient of the sum, as ``tape.gradient``).
        sources: tensors to differentiate with respect to (a tensor or a list);
            ``None`` means every tensor the tape watches.
        value_limit: arrays with more entries keep summary statistics only
            (``None``: :data:`VALUE_LIMIT`).

    Nothing here runs user code: values come from the records, derivatives
    from the rule table.
    """
    value_limit = check_value_limit(value_limit)
    with _no_gc():
        return _build_trace(tape, target, sources, value_limit)


def _build_trace(tape, target, sources, value_limit) -> Trace:
    records = list(tape.record.nodes)
    nodes: list[TraceNode] = []
    op_nodes: list[TraceNode] = []
    owner: dict[int, TraceNode] = {}
    leaf_tensors: dict[int, Tensor] = {}
    raw_edges = []

    frame = None

    def leaf(t: Tensor) -> TraceNode:
        nonlocal frame
        kind = _leaf_kind(tape, t)
        name = full_name(t)
        if name in (None, naming.INPUT) and kind == "constant":
            # an array the model converted (model(x_batch), named "input"): the learner's variable that holds it
            frame = frame or state.user_frame_object()
            name = (frame and naming.array_name(t._value, {**frame.f_globals, **frame.f_locals})) or name
        n = TraceNode(f"n{len(nodes)}", kind, kind, name, t._id, None, "", Summary.of(t._value, value_limit))
        nodes.append(n)
        owner[t._id] = n
        leaf_tensors[t._id] = t
        return n

    for index, rec in enumerate(records):
        for i, t in enumerate(rec.inputs):
            if t._id not in owner:
                leaf(t)
        n = TraceNode(f"n{len(nodes)}", "op", rec.rule.name, None, rec.out_id, index, rec.scope or "",
                      Summary.of(rec.out, value_limit),
                      params={k: _param_text(v) for k, v in rec.params.items()})
        for i, t in enumerate(rec.inputs):
            raw_edges.append((rec, i, t, owner[t._id], n))
        nodes.append(n)
        op_nodes.append(n)
        owner[rec.out_id] = n
    escaped = naming.escape_sites(getattr(tape, "_escapes", ()))
    _Where(getattr(tape, "_opened_in", None), escaped).annotate(records, op_nodes)

    notes = []
    if target is None and records:
        target_id = records[-1].out_id
    elif target is None:
        target_id = None
    else:
        if not isinstance(target, Tensor):
            raise TypeError(f"trace: target must be a tensor, got {type(target).__name__}.")
        target_id = target._id
    target_node = owner.get(target_id) if target_id is not None else None
    if target is not None and target_node is None:
        notes.append(f"the target {target.name or ''} (shape {target.shape}) was not recorded by this tape: "
                     "no gradients to show".replace("  ", " "))

    if sources is None:
        source_ids = [tid for tid in tape.record.watched if tid in owner]
    else:
        flat = sources if isinstance(sources, (list, tuple)) else [sources]
        source_ids = []
        for s in flat:
            if not isinstance(s, Tensor):
                raise TypeError(f"trace: sources must be tensors, got {type(s).__name__}.")
            if s._id in owner and s._id in tape.record.tracked:
                source_ids.append(s._id)
            elif s._id in owner:
                notes.append(f"the source {full_name(s) or 'tensor'} (shape {s.shape}) is not watched by this tape, "
                             "so it gets no gradient: tape.watch it or make it an adv.Variable")
            else:
                notes.append(f"the source {full_name(s) or 'tensor'} (shape {s.shape}) is not in this tape's record")

    steps, upstream, contributions = [], {}, {}
    grads = {}
    if target_node is not None and np.dtype(target_node.dtype).kind in "fc":
        seed_value = records[target_node.index].out if target_node.index is not None else \
            leaf_tensors[target_id]._value
        seeds = {target_id: np.ones(seed_value.shape, dtype=seed_value.dtype)}

        def on_step(rec, g, contribs):
            steps.append(owner[rec.out_id].id)
            upstream[rec.out_id] = g
            for i, gi in contribs:
                contributions[(rec.out_id, i)] = gi

        with paused(), np.errstate(all="ignore"):
            grads = walks.backward(records, seeds, set(source_ids), on_step=on_step)
    elif target_node is not None:
        notes.append(f"the target has dtype {target_node.dtype}: integers have no gradient")

    reach = walks.reachable(records, set(source_ids))[0]
    for n in nodes:
        g = grads.get(n.tensor_id)
        if g is not None and n.tensor_id in reach:
            n.grad = Summary.of(g, value_limit)
            n.on_path = True

    edges = []
    with paused(), np.errstate(all="ignore"):
        _make_edges(raw_edges, contributions, upstream, value_limit, edges)
    return Trace(nodes, edges, target=None if target_node is None else target_node.id,
                 sources=[owner[s].id for s in source_ids], steps=steps, notes=notes, **_scope_kinds(nodes))


def _scope_kinds(nodes) -> dict:
    """``kinds``: ``{scope segment: layer class}`` for the layers a trace's scopes name (``"dense_1": "Dense"``),
    and ``own``: the segments whose class's ``call`` the learner wrote (see :data:`~...base.state.OWN_KIND`)."""
    kinds, own = {}, set()
    for seg in {seg for n in nodes if n.scope for seg in n.scope.split("/")}:
        cls = scope_kinds.get(seg)
        if cls is not None:
            if cls.startswith(OWN_KIND):
                cls = cls[len(OWN_KIND):]
                own.add(seg)
            kinds[seg] = cls
    return {"kinds": kinds, "own": own}


def _make_edges(raw_edges, contributions, upstream, value_limit, edges) -> None:
    for k, (rec, i, t, src, dst) in enumerate(raw_edges):
        reason = _no_grad_reason(rec.rule, i, t._value, rec)
        spec = rec.rule.spec(i)
        e = TraceEdge(f"e{k}", src.id, dst.id, i, spec.name,
                      None if spec.factor is None else f"∂y/∂{spec.name} = {spec.factor}",
                      reason is None, reason,
                      formula=None if reason is not None else
                      formula(spec.factor, spec.name, rec.rule.elementwise, t.shape, rec.out.shape))
        gi = contributions.get((rec.out_id, i))
        if gi is not None:
            e.upstream = Summary.of(upstream[rec.out_id], value_limit)
            e.contribution = Summary.of(gi, value_limit)
            e.on_path = src.on_path and dst.on_path
        if e.differentiable and t.size <= JACOBIAN_LIMIT and rec.out.size <= JACOBIAN_LIMIT:
            e.jacobian = _local_jacobian(rec, i)
        edges.append(e)
