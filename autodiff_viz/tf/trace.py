"""A recorded TensorFlow computation as an :class:`autodiff_viz.Trace`, with TensorFlow's own gradients.

Values come from the recorded tensors. The gradient of the target with
respect to every node comes from the very tape the user differentiated with
(the recording kept its record, see :mod:`autodiff_viz.tf.record`), asked
once for all nodes: the gradient shown on a variable is bit for bit what
``tape.gradient`` returned. The contribution on an edge ``x → y = op(x, …)``
is TensorFlow's own vector–Jacobian product for that op — the gradient
function registered for the op type (``ḡ_x = grad_fn(op, ḡ_y)``), the same
function the tape called — and, when both sides have at most 64 entries,
the local Jacobian ``∂y/∂x`` is that function seeded with each unit vector.
The factor text is the rule table's, for every op type that maps to a rule
(``Tanh`` → ``tanh``, ``MatMul`` → ``matmul``); other ops carry a note
("factor not shown for tf Cumprod") instead of a made-up one.

A variable is one leaf node (its reads are not drawn); small integer inputs
without history (axes, shapes, permutations) are shown as parameters of the
op, not as nodes.
"""
from __future__ import annotations

import linecache
import re
from collections import Counter

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import backprop as _backprop

from ..base import naming
from ..bridges import frames, tracing
from ..bridges.recordings import compared_rows, hand_items
from ..diagnosis.provenance import caller_names
from ..records.compare import seed_array
from ..records.traces.build import factor_rule, view_title
from ..records.traces.model import Location, Summary, Trace, TraceNode, check_value_limit
from ..views import figure
from . import provenance
from .explain import cut, explain_recorded, pick_tape, tf_gradient
from .keys import tensor_key, trainable_dtype

# TensorFlow op type -> rule-table name (inputs in the same order)
RULES = {
    "AddV2": "add", "Add": "add", "BiasAdd": "bias_add", "Sub": "subtract", "Mul": "multiply",
    "RealDiv": "divide", "Div": "divide", "DivNoNan": "divide", "Pow": "power", "Neg": "negative",
    "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Square": "square", "Abs": "abs", "Sign": "sign",
    "Tanh": "tanh", "Sin": "sin", "Cos": "cos", "Sigmoid": "sigmoid", "Relu": "relu", "Softplus": "softplus",
    "LeakyRelu": "leaky_relu", "Maximum": "maximum", "Minimum": "minimum", "SelectV2": "where",
    "ClipByValue": "clip", "MatMul": "matmul", "BatchMatMulV2": "matmul", "BatchMatMulV3": "matmul",
    "Sum": "sum", "Mean": "mean", "Max": "max", "Min": "min", "Softmax": "softmax", "LogSoftmax": "log_softmax",
    "Reshape": "reshape", "ExpandDims": "expand_dims", "Squeeze": "squeeze", "Transpose": "transpose",
    "BroadcastTo": "broadcast_to", "ConcatV2": "concatenate", "Pack": "stack", "GatherV2": "take",
    "StridedSlice": "getitem", "SplitV": "getitem", "Unpack": "getitem", "Split": "getitem",
    "Log1p": "log1p", "Expm1": "expm1", "Erf": "erf", "Elu": "elu",
    "Cumsum": "cumsum", "Prod": "prod", "Einsum": "einsum", "Conv2D": "conv", "Conv1D": "conv",
    "MaxPool": "max_pool", "AvgPool": "avg_pool", "Cast": "cast", "Identity": "identity",
}
_PARAM_LIMIT = 8      # integer inputs without history up to this size are parameters (axis, shape, perm)


def _array(t) -> np.ndarray:
    if isinstance(t, tf.IndexedSlices):
        t = tf.convert_to_tensor(t)
    if hasattr(t, "dtype") and t.dtype == tf.resource:
        raise TypeError("a resource handle has no value")
    a = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def _summary(t, limit):
    try:
        return Summary.of(_array(t), limit)
    except (TypeError, ValueError, tf.errors.OpError):
        return Summary.unreadable(getattr(t, "shape", ()), getattr(getattr(t, "dtype", None), "name", "?"))




def rule_input(op, i: int):
    """``(rule, input spec)`` of the rule table for input ``i`` of a recorded TensorFlow op, or None when none maps.

    ``MatMul`` with a transposed operand and integer inputs (an axis) do not map: their factor would be wrong.
    """
    name = RULES.get(op.name, "")
    if name == "matmul" and any(op.attrs[k + 1] for k in range(0, len(op.attrs), 2)
                                if op.attrs[k] in ("transpose_a", "transpose_b", "adj_x", "adj_y")):
        return None
    if not trainable_dtype(op.inputs[i].dtype):
        return None
    # each output of a split is a slice of its input, as x[…] is; TensorFlow's Split takes the axis first
    return factor_rule(name, i - 1 if op.name == "Split" else i)


def sources_of(rec, sources):
    """The source objects: a Keras model's/layer's trainable variables, one tensor or variable, or a list's/dict's."""
    if sources is None:
        return None
    if hasattr(sources, "trainable_variables") and not hasattr(sources, "_id"):
        for layer in [sources] + list(getattr(sources, "_flatten_layers", lambda: [])()):
            rec._layers.setdefault(getattr(layer, "path", None) or layer.name, layer)
        return list(sources.trainable_variables)
    if hasattr(sources, "_id") or hasattr(sources, "handle"):
        return [sources]
    flat = list(sources.values()) if isinstance(sources, dict) else list(sources)
    for s in flat:
        if not hasattr(s, "_id") and not hasattr(s, "handle"):
            raise TypeError(f"trace: sources must be tensors or variables, got {type(s).__name__}. Pass them "
                            "(rec.trace(loss, model.trainable_variables)) or the model (rec.trace(loss, model)).")
    return flat


def graph_ops(rec):
    return [op for op in rec.ops if op.kind in ("op", "read", "rewrap", "function")]


def scope_calls(ops) -> None:
    """Give the ops of one call of a library function the learner wrote on a line outside every layer that
    function's name as their scope, when the call ran more than one op.

    ``keras.losses.binary_crossentropy(data, reconstruction)`` in a ``train_step`` (keras.io's VAE) runs ten
    TensorFlow ops (``ZerosLike``, ``Select``, ``Log1p`` …) in no name scope: the figure drew ten loose boxes
    titled by TensorFlow's op names, and the labels' edge carried a ``Mul``'s formula. Scoped
    ``binary_crossentropy`` they are one box, as a Keras ``Loss`` object's call is, with the loss's formula and
    the labels' role; PyTorch's ``F.cross_entropy`` is one op already. The function is the outermost library
    frame of the op's call (``Op.extra['called']``) that the line's text calls by name (``name(``), so
    TensorFlow's dispatch wrappers are passed over; a call that ran one op (``tf.reduce_sum``) keeps its op.
    Idempotent: each trace asks again.
    """
    runs, prev = [], None
    for op in ops:
        called = op.extra.get("called") if op.kind == "op" else None
        if called is None:
            if op.kind == "op":
                prev = None
            continue
        code = linecache.getline(*op.location) if op.location else ""
        name = next((n for n in called[0] if re.search(rf"\b{re.escape(n)}\s*\(", code)), None)
        key = (op.location, called[1], name) if name else None
        if key is not None and key == prev:
            runs[-1][1].append(op)
        elif key is not None:
            runs.append((name, [op]))
        prev = key
    for name, run in runs:
        if len(run) > 1:
            for op in run:
                op.scope = name


def _is_param(t) -> bool:
    return not trainable_dtype(t.dtype) and t.shape.num_elements() is not None \
        and t.shape.num_elements() <= _PARAM_LIMIT


def build(rec, target, sources=None, value_limit=None, output_gradients=None, namespace=None) -> Trace:
    """The :class:`~autodiff_viz.Trace` of recording ``rec`` (see :meth:`Recording.trace`).

    ``namespace``: the learner's variables, which name the data fed in (``x_batch``, converted by the model).
    """
    if not hasattr(target, "_id"):
        raise TypeError(f"trace: target must be a TensorFlow tensor (the loss), got {type(target).__name__}. "
                        "A loss computed with numpy is not differentiable: rec.explain(loss, w) says where the "
                        "value left TensorFlow.")
    limit = check_value_limit(value_limit)
    with rec.paused():      # reading values and asking TensorFlow must not record anything
        return _build(rec, target, sources_of(rec, sources), limit, output_gradients, namespace or {})


def _build(rec, target, src, limit, output_gradients, namespace=None) -> Trace:
    ops = graph_ops(rec)
    scope_calls(ops)
    if rec.producer(target) is None and not any(tensor_key(x) == target._id for op in ops for x in op.inputs):
        raise ValueError(f"trace: the target (shape {tuple(target.shape)}) was not computed inside this "
                         "recording. Fix: compute it inside the `with adv.tf.record()` block (indent the line that "
                         "makes the loss), then ask again.")
    info = pick_tape(rec, target)
    nodes, owner, raw_edges, node_obj = [], {}, [], {}
    keras_names = rec.keras_names()
    names = caller_names(namespace, _is_tensor) if namespace else {}    # tensors made before: x_batch, labels
    owned: dict = {}                                                     # layer path -> its own state variables

    def leaf(t, key, scope=""):
        variable = rec.variable_of(key) if t.dtype == tf.resource else None
        if variable is not None:
            kind = "variable" if variable.trainable else "state"      # moving_mean, seed_generator_state
            name = keras_names.get(key) or rec.name_of(variable)
            value = _summary(variable.value() if hasattr(variable, "value") else variable, limit)
            obj = variable
        else:
            watched = info is not None and key in info.watched
            held = None if watched or rec.producer(t) is not None else layer_state(rec, t, scope, owned)
            kind = "watched" if watched else "state" if held is not None else "constant"
            name, value, obj = rec.name_of(t), _summary(t, limit), t
            if held is not None:
                name = getattr(held, "path", None) or held.name
            elif name is None and not watched and namespace:
                name = names.get(id(t)) or naming.array_name(_array(t), namespace)
        n = TraceNode(f"n{len(nodes)}", kind, kind, name, key, None, "", value, location=None)
        nodes.append(n)
        owner[key] = n
        node_obj[n.id] = obj
        return n

    unpacked = naming.unpacked_outputs(ops)                         # mean, logvar = tf.split(…)
    per_scope = Counter(op.scope for op in ops if op.kind != "read" and op.outputs and op.inputs)
    outer = {op.scope[:k] for op in ops for k, ch in enumerate(op.scope) if ch == "/"}    # scopes with layers inside
    for op in ops:
        if op.kind == "read":
            handle = op.inputs[0]
            n = owner.get(handle._id) or leaf(handle, handle._id)
            for out in op.outputs:
                owner[out._id] = n
            continue
        if op.kind == "rewrap" and not op.inputs:
            n = TraceNode(f"n{len(nodes)}", "constant", op.name, None, op.outputs[0]._id, op.index, op.scope,
                          _summary(op.outputs[0], limit), location=Location.of(op.location), label=op.assigned)
            nodes.append(n)
            owner[op.outputs[0]._id] = n
            node_obj[n.id] = op.outputs[0]
            continue
        if not op.outputs:
            continue
        params = {}
        for i, t in enumerate(op.inputs):
            if t._id not in owner and _is_param(t) and id(t) not in names:
                params[f"input {i}"] = repr(t.numpy().tolist())[:60]
            elif t._id not in owner:
                leaf(t, t._id, op.scope)
        base = owner.get(op.inputs[0]._id) if op.inputs else None
        alone = op.scope and per_scope[op.scope] == 1 and op.scope not in outer     # Conv1's one Conv2D op
        label = op.assigned or (op.scope.rsplit("/", 1)[-1] if alone else
                                view_title(op.name, base and (base.label or base.name)))
        several = len(op.outputs) > 1 and all(trainable_dtype(o.dtype) for o in op.outputs)    # Split, Unpack …
        targets = unpacked.get(op.index, ()) if several else ()
        targets = targets if len(targets) == len(op.outputs) else ()
        for j, out in enumerate(op.outputs if several else op.outputs[:1]):
            # each output of a Split (an LSTM cell's four gates) its own value, with what it passes back
            mine = (names.get(id(out)) or (targets[j] if targets else None) or
                    (f"{label}[{j}]" if label else None if j == 0 else f"{op.name}[{j}]")) if several else label
            n = TraceNode(f"n{len(nodes)}", "op", op.name, None, out._id, op.index, op.scope,
                          _summary(out, limit), location=Location.of(op.location), params=params, label=mine)
            for i, t in enumerate(op.inputs):
                if t._id in owner:
                    raw_edges.append((op, i, t, owner[t._id], n, out))
            nodes.append(n)
            owner[out._id] = n
            node_obj[n.id] = out
        if not several:
            for o in op.outputs[1:]:
                owner[o._id] = owner[op.outputs[0]._id]

    notes = []
    target_node = owner.get(target._id)
    linked = {x.id for _, _, _, a, b, _ in raw_edges for x in (a, b)}     # an op that reads nothing recorded and
    nodes = [n for n in nodes if n.kind != "op" or n.id in linked or n is target_node]   # feeds nothing (an
    if src is None:                                       # optimizer's Cast of its learning rate) is no step here
        source_ids = [n.id for n in nodes if n.kind in ("variable", "watched")]
    else:
        source_ids, missing = [], []
        for s in src:
            n = owner.get(tensor_key(s))
            if n is None:
                missing.append((rec.name_of(s) or str(tuple(s.shape)), False))
            else:
                source_ids.append(n.id)
        notes += tracing.unreached_notes(missing)

    grads = {}
    if target_node is not None and info is not None and trainable_dtype(target.dtype):
        if target.shape.num_elements() != 1 and output_gradients is None:
            notes.append("the target is not a scalar: it is seeded with ones (the gradient of its sum)")
        wanted = [n for n in nodes if trainable_dtype(node_obj[n.id].dtype)]
        got = tf_gradient(rec, info, target, [node_obj[n.id] for n in wanted], output_gradients)
        grads = {n.id: g for n, g in zip(wanted, got) if g is not None}
    elif info is None:
        notes.append("no tf.GradientTape was opened inside the recording: no gradients to show")
    weighted = {n.id for n in nodes if n.kind in ("variable", "watched")}
    for _, _, _, a, b, _ in raw_edges:          # in recorded order: what is computed from a weight or input
        if a.id in weighted:
            weighted.add(b.id)
    trace = tracing.finish(_TensorFlow(rec, info, weighted), nodes, raw_edges, grads, target_node, source_ids,
                           notes, limit, _kinds(rec), _key_of)
    trace.own = frozenset(path.rsplit("/", 1)[-1] for path, layer in rec._layers.items()
                          if not provenance.LIBRARY.computes(type(layer), "call")) & set(trace.kinds)
    roots = {path: frames.name_in(layer, namespace or {}) for path, layer in rec._layers.items() if "/" not in path}
    trace.roots = {path: var for path, var in roots.items() if var is not None and var != path}
    return trace


class _TensorFlow(tracing.Adapter):
    """TensorFlow for the shared trace builder: the tape's gradients, the registered gradient functions, cuts."""

    def __init__(self, rec, info, weighted=frozenset()):
        self.rec, self.info, self.weighted = rec, info, weighted

    def summary(self, value, limit):
        return _summary(value, limit)

    def size(self, t) -> int:
        return t.shape.num_elements()

    def reason(self, op, i, t, src, out):
        if src.kind == "state":
            return f"{src.name or 'this variable'} is non-trainable state (read or updated by the layer): " \
                   "no gradient reaches it"
        loss = _loss_scope(op.scope)
        if loss and src.id not in self.weighted and (
                src.kind == "op" and src.scope != op.scope and not src.scope.startswith(op.scope + "/") or
                src.kind != "op" and (src.name or src.index is not None)):
            # by role: what enters a loss from outside and is computed from no weight or watched input is its
            # labels (a prediction cut from the tape keeps the cut's own reason)
            return f"the labels of {loss}: a loss sends its gradient to the prediction only"
        c = cut(self.rec, self.info, op, i)
        return c[1] if c else None

    def rule(self, op, i):
        return rule_input(op, i)

    def label(self, op) -> str:
        return f"tf {op.name}"

    def vjp(self, op, out, g_out) -> dict:
        got = _vjp(op, _seeds(op, out, g_out)) if op.kind == "op" else None
        return {} if got is None else {i: g for i, g in enumerate(got) if g is not None}

    def jacobian(self, op, i, t, out):
        return _local_jacobian(op, i, out)


def _seeds(op, out, g):
    """The upstream gradients of ``op``'s outputs when only ``out`` sends ``g`` back (the others zero)."""
    j = next((k for k, o in enumerate(op.outputs) if o is out), 0)
    return [tf.zeros_like(o) for o in op.outputs[:j]] + [g]


def _loss_scope(scope: str) -> str | None:
    """The Keras loss whose name scope ``scope`` ends in (``sparse_categorical_crossentropy``, a second instance
    ``…_1``), else None."""
    last = scope.rsplit("/", 1)[-1] if scope else ""
    for name in (last, last.rstrip("0123456789").rstrip("_")):
        if name and figure.is_loss(name):
            return name
    return None


def layer_state(rec, t, scope: str, owned: dict):
    """The non-trainable variable of the Keras layer running at ``scope`` (or around it) that tensor ``t`` holds,
    else None.

    A layer may turn its state into tensors once, when built: Keras' ``Normalization`` keeps ``self.mean =
    ops.convert_to_tensor(self.adapt_mean)`` reshaped, so the recording sees a constant without history, not the
    variable ``normalization/mean``. ``t`` is taken for a variable when the layer holds ``t`` as an attribute
    and a non-trainable variable has its dtype and values (the attribute's name picks among several), or when
    a non-trainable variable has its shape and values (more than one entry: a scalar 0 matches too much).
    Each layer along ``scope`` is asked for its own variables (not its sublayers'), cached in ``owned``.
    """
    path = scope
    while path:
        layer = rec._layers.get(path)
        if layer is not None:
            if path not in owned:
                own = getattr(layer, "_non_trainable_variables", None)
                owned[path] = [(w, tf.as_dtype(w.dtype), int(np.prod(w.shape))) for w in
                               (own if own is not None else getattr(layer, "non_trainable_weights", ()))]
            found = _held_by(layer, t, owned[path])
            if found is not None:
                return found
        path = path.rpartition("/")[0]
    return None


def _held_by(layer, t, own):
    state = [w for w, dtype, size in own if dtype == t.dtype and size == t.shape.num_elements()]
    if not state:
        return None
    attrs = {k for k, v in vars(layer).items() if v is t}
    by_name = sorted(state, key=lambda w: (getattr(w, "name", "").rsplit("/", 1)[-1] not in attrs))
    value = _array(t)
    for w in by_name:
        held = np.asarray(w.numpy())
        if (attrs or held.shape == value.shape and value.size > 1) and \
                np.array_equal(held.reshape(-1), value.reshape(-1)):
            return w
    return None


def _key_of(t):
    """A TensorFlow tensor's or variable's key (a Keras variable by its TensorFlow variable's handle)."""
    if not _is_tensor(t):
        raise TypeError(f"node_id_of takes a TensorFlow tensor or variable (or a node's tensor id) on a TensorFlow "
                        f"trace, got {type(t).__name__}.")
    return tensor_key(getattr(t, "value", t) if not hasattr(t, "handle") and not hasattr(t, "_id") else t)


def _kinds(rec) -> dict:
    """Scope segment -> the Keras class that made it (``"dense_1": "Dense"``), so folded boxes say what they are."""
    return {path.rsplit("/", 1)[-1]: type(layer).__name__ for path, layer in rec._layers.items()}


def _vjp(op, out_grads):
    """TensorFlow's registered gradient function of ``op`` applied to ``out_grads`` (others zero), or None."""
    grads = list(out_grads) + [tf.zeros_like(o) if trainable_dtype(o.dtype) else None
                               for o in op.outputs[len(out_grads):]]
    try:
        got = _backprop._gradient_function(op.name, op.attrs, len(op.inputs), op.inputs, op.outputs, grads,
                                           None, "")
    except Exception:        # an op whose gradient function needs what the mock op lacks: no contribution shown
        return None
    if not isinstance(got, (list, tuple)):
        got = [got]           # one-input ops return their gradient alone
    return [g if g is None or isinstance(g, tf.Tensor) else tf.convert_to_tensor(g) for g in got]


def _local_jacobian(op, i, out=None):
    out = op.outputs[0] if out is None else out
    size = out.shape.num_elements()
    rows = []
    for j in range(size):
        seed = np.zeros(size, dtype=out.dtype.as_numpy_dtype)
        seed[j] = 1
        got = _vjp(op, _seeds(op, out, tf.constant(seed.reshape(out.shape))))
        if got is None or i >= len(got):
            return None
        g = got[i]
        rows.append(np.zeros(op.inputs[i].shape.num_elements()) if g is None else
                    _array(g).astype(np.float64).reshape(-1))
    return np.stack(rows) if rows else None


def compare(rec, target, hand, rtol, atol, namespace, output_gradients=None):
    """:meth:`Recording.compare`: hand gradients against TensorFlow's, in backward order.

    The gradients are the recorded tape's own (``tape.gradient(target,
    [...], output_gradients=dout)``); a tensor TensorFlow gives None for
    carries :func:`~autodiff_viz.tf.explain.explain_recorded`'s reason (an
    unwatched ``tf.constant``, a value that left through ``.numpy()``).
    """
    items = hand_items(rec, hand, namespace, graph_ops(rec), _is_tensor, _key)
    info = pick_tape(rec, target)
    with rec.paused():          # converting the seed and asking the tape must not record anything
        seed = None if output_gradients is None else tf.constant(seed_array(
            _array(output_gradients) if hasattr(output_gradients, "numpy") else np.asarray(output_gradients),
            tuple(target.shape), target.dtype.as_numpy_dtype))
        trace = build(rec, target, output_gradients=seed)
        got = tf_gradient(rec, info, target, [t for _, t, _ in items], seed) if info is not None \
            else [None] * len(items)
        by_key = {n.tensor_id: n.id for n in trace.nodes}
        return compared_rows(trace, items, got, lambda t: by_key.get(tensor_key(t)),
                             lambda label, t: _explained_as(rec, target, t, label),
                             lambda v: _array(v) if _is_tensor(v) else v, rtol, atol, "TensorFlow")


def _explained_as(rec, target, t, label):
    """``rec.explain(target, t)``, naming ``t`` as the learner's hand key did (``'x'``, not "a tensor of shape
    (1, 2)": a ``tf.constant`` made before the recording has no name of its own there)."""
    key = tensor_key(t)
    unnamed = rec.name_of(t) is None and label.isidentifier()
    if unnamed:
        rec._names[key] = label
    try:
        return explain_recorded(rec, target, t)
    finally:
        if unnamed:
            rec._names.pop(key, None)


def _is_tensor(v) -> bool:
    """A TensorFlow tensor or variable (not the class ``tf.Variable`` itself)."""
    return (hasattr(v, "_id") or hasattr(v, "handle")) and not isinstance(v, type)


def _key(v):
    try:
        return tensor_key(v)
    except AttributeError:
        return None
