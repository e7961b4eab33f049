"""Traces: the forward and backward record of a tape, as plain data.

A :class:`Trace` is what every view draws from. It is built lazily from a
tape's records (never by running user code again) when you ask for it::

    >>> import autodiff_viz as adv
    >>> w = adv.Variable([0.5, -1.0], name="w")
    >>> with adv.GradientTape() as tape:
    ...     loss = adv.sum(adv.tanh(w) ** 2)
    >>> tr = tape.trace(loss)
    >>> [n.op for n in tr.nodes]
    ['variable', 'tanh', 'constant', 'power', 'sum']
    >>> tr.edges[0].factor
    '∂y/∂x = 1 − y²'

It holds:

* **nodes** (:class:`TraceNode`): the leaves (variables, watched tensors,
  constants) and one node per recorded op, with ids ``n0, n1, ...`` in tape
  order, the op, name, scope path, shape, dtype, value, the gradient of the
  target with respect to the node, and the user code that made it;
* **edges** (:class:`TraceEdge`): input → op, with the rule's chain-rule factor
  text, the upstream gradient ``ḡ_y``, the contribution ``ḡ_x = vjp(ḡ_y)`` and,
  when both sides have at most 64 entries, the local Jacobian ``∂y/∂x``;
* **steps**: the op nodes in the order the backward pass visited them;
* **marks** (:class:`Mark`): nodes or edges that a diagnosis points at, with
  the reason (views draw them red).

Derivatives come only from the rule table: the gradients and contributions
are those of :func:`autodiff_viz.engine.backward`, and local Jacobians are the
rule's own VJP seeded with an identity.
"""
from __future__ import annotations

import json
import linecache
import math
from dataclasses import dataclass, field

import numpy as np

from . import engine
from .dot import NODE_BUDGET
from .tensor import Tensor, Variable

SCHEMA = "autodiff_viz.trace"
SCHEMA_VERSION = 1
VALUE_LIMIT = 256      # arrays with more entries keep summary statistics only
JACOBIAN_LIMIT = 64    # local Jacobians are kept when both sides have at most this many entries

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------
@dataclass(eq=False)
class Summary:
    """An array as a trace keeps it: in full when small, else statistics only.

    ``data`` is the array itself (``None`` above :data:`VALUE_LIMIT` entries);
    ``stats`` holds ``min``, ``mean``, ``max`` and ``norm`` (the 2-norm) of
    every array, so a view can describe a big tensor in one line.
    """

    shape: tuple
    dtype: str
    data: np.ndarray | None
    stats: dict

    @classmethod
    def of(cls, array, limit: int = VALUE_LIMIT) -> "Summary":
        a = np.asarray(array)
        if a.dtype.kind == "c":
            real = np.abs(a)
        elif a.dtype.kind in "fiub":
            real = a.astype(np.float64, copy=False)
        else:
            real = np.zeros(a.shape)
        with np.errstate(all="ignore"):
            if real.size:
                stats = {"min": float(real.min()), "mean": float(real.mean()),
                         "max": float(real.max()), "norm": float(np.sqrt(np.sum(real * real)))}
            else:
                stats = {"min": math.nan, "mean": math.nan, "max": math.nan, "norm": 0.0}
        data = np.array(a, copy=True) if a.size <= limit and a.dtype.kind in "fiub" else None
        return cls(tuple(a.shape), str(a.dtype), data, stats)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def brief(self, max_items: int = 6) -> str:
        """A one-line description: the numbers when few, else ``min … max`` and the norm."""
        if self.data is not None and self.data.size <= max_items:
            if self.data.ndim == 0:
                return _num(self.data.item())
            return "[" + ", ".join(_num(v) for v in self.data.ravel().tolist()) + "]"
        s = self.stats
        return f"{_num(s['min'])} … {_num(s['max'])}, ‖·‖={_num(s['norm'])}"

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype,
                "data": None if self.data is None else _encode_numbers(
                    (self.data.astype(np.int64) if self.data.dtype.kind == "b" else self.data).tolist()),
                "stats": {k: _encode_number(v) for k, v in self.stats.items()}}


def _num(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isfinite(v) and v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.4g}"


def _encode_number(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _encode_numbers(obj):
    if isinstance(obj, list):
        return [_encode_numbers(o) for o in obj]
    return _encode_number(obj)


# ---------------------------------------------------------------------------
# Nodes, edges, marks
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Location:
    """Where user code made a node: file, line and the text of that line."""

    file: str
    line: int
    code: str = ""

    def __str__(self):
        return f"{self.file}:{self.line}"


LEAF_KINDS = ("variable", "watched", "constant", "outside")


@dataclass(eq=False)
class TraceNode:
    """A leaf or an op of the trace.

    ``kind`` is ``"op"`` for a recorded op, else the kind of leaf:
    ``"variable"`` (a trainable variable), ``"watched"`` (``tape.watch``),
    ``"constant"`` (never watched) or ``"outside"`` (computed while this tape
    did not record). ``grad`` is the gradient of the target with respect to
    this node (``None`` off the path). ``on_path`` is False for what lies on no
    path between the target and the sources (views grey it out).
    """

    id: str
    kind: str
    op: str
    name: str | None
    tensor_id: int
    index: int | None
    scope: str
    value: Summary
    grad: Summary | None = None
    location: Location | None = None
    params: dict = field(default_factory=dict)
    on_path: bool = False

    @property
    def shape(self) -> tuple:
        return self.value.shape

    @property
    def dtype(self) -> str:
        return self.value.dtype

    @property
    def is_leaf(self) -> bool:
        return self.kind != "op"

    @property
    def title(self) -> str:
        """``name`` when the tensor has one, else the op (``tanh``) or leaf kind."""
        return self.name or self.op


@dataclass(eq=False)
class TraceEdge:
    """Input ``src`` → op ``dst`` with what the chain rule did along it.

    ``factor`` is the rule's text (``∂y/∂x = 1 − y²``); ``upstream`` is ḡ of
    the op's output, ``contribution`` the VJP result ḡ_x (what this edge adds
    to the input's gradient), ``jacobian`` the local ``∂y/∂x`` as an
    ``(out.size, in.size)`` matrix when both are small. An edge with
    ``differentiable=False`` carries no gradient; ``no_grad_reason`` says why.
    """

    id: str
    src: str
    dst: str
    input_index: int
    input_name: str
    factor: str | None
    differentiable: bool
    no_grad_reason: str | None = None
    upstream: Summary | None = None
    contribution: Summary | None = None
    jacobian: np.ndarray | None = None
    on_path: bool = False


@dataclass(frozen=True)
class Mark:
    """A node or edge id that a view draws red, with the reason shown beside it."""

    ref: str
    reason: str


# ---------------------------------------------------------------------------
# The trace
# ---------------------------------------------------------------------------
class Trace:
    """The forward and backward record of one tape, as plain data.

    Build one with ``tape.trace(target, sources)``; draw it with
    :meth:`to_dot` / :meth:`to_svg`, store it with :meth:`to_json` or
    :meth:`save`. In a notebook a trace displays itself as its graph.
    """

    def __init__(self, nodes, edges, target=None, sources=(), steps=(), marks=(), notes=()):
        self.nodes: list[TraceNode] = list(nodes)
        self.edges: list[TraceEdge] = list(edges)
        self.target: str | None = target
        self.sources: list[str] = list(sources)
        self.steps: list[str] = list(steps)
        self.marks: list[Mark] = list(marks)
        self.notes: list[str] = list(notes)
        self._by_id = {n.id: n for n in self.nodes}
        self._edge_by_id = {e.id: e for e in self.edges}
        self._by_tensor = {n.tensor_id: n.id for n in self.nodes}

    # ----- lookup ------------------------------------------------------------
    def node(self, node_id: str) -> TraceNode:
        """The node with this id (``"n3"``)."""
        try:
            return self._by_id[node_id]
        except KeyError:
            raise KeyError(f"the trace has no node {node_id!r} (it has n0 … n{len(self.nodes) - 1}).") from None

    def edge(self, edge_id: str) -> TraceEdge:
        return self._edge_by_id[edge_id]

    def node_id_of(self, tensor) -> str | None:
        """The trace node id of a tensor (or of a tensor id), or None if the tape never saw it."""
        tid = tensor._id if isinstance(tensor, Tensor) else int(tensor)
        return self._by_tensor.get(tid)

    def edges_into(self, node_id: str) -> list[TraceEdge]:
        return [e for e in self.edges if e.dst == node_id]

    def edges_from(self, node_id: str) -> list[TraceEdge]:
        return [e for e in self.edges if e.src == node_id]

    # ----- marks -------------------------------------------------------------
    def with_marks(self, marks) -> "Trace":
        """A copy of the trace with ``marks`` added (this trace is unchanged).

        ``marks``: a dict ``{ref: reason}`` or pairs ``(ref, reason)`` (or
        :class:`Mark`), where ``ref`` is a node id (``"n3"``), an edge id
        (``"e2"``), a ``(src, dst)`` pair of node ids, a tensor or a tensor id.
        """
        items = marks.items() if isinstance(marks, dict) else marks
        added = []
        for item in items:
            ref, reason = (item.ref, item.reason) if isinstance(item, Mark) else item
            added.append(Mark(self._resolve(ref), str(reason)))
        out = self._shallow()
        out.marks = self.marks + added
        return out

    def _shallow(self) -> "Trace":
        return Trace(self.nodes, self.edges, self.target, self.sources, self.steps, self.marks, self.notes)

    def _resolve(self, ref) -> str:
        if isinstance(ref, tuple) and len(ref) == 2:
            src, dst = (self._resolve(r) for r in ref)
            for e in self.edges:
                if e.src == src and e.dst == dst:
                    return e.id
            raise ValueError(f"with_marks: no edge from {src} to {dst} in this trace.")
        if isinstance(ref, str):
            if ref in self._by_id or ref in self._edge_by_id:
                return ref
            raise ValueError(f"with_marks: {ref!r} is neither a node id (n0 …) nor an edge id (e0 …) of this trace.")
        if isinstance(ref, (Tensor, int, np.integer)):
            nid = self.node_id_of(ref)
            if nid is None:
                raise ValueError(f"with_marks: the tensor {getattr(ref, 'name', None) or ref!s:.60} is not in "
                                 "this trace (this tape never recorded it).")
            return nid
        raise TypeError(f"with_marks: cannot mark a {type(ref).__name__}; give a node id, an edge id, "
                        "a (src, dst) pair, a tensor or a tensor id.")

    def marks_of(self, ref: str) -> list[str]:
        """The reasons marked on a node or edge id."""
        return [m.reason for m in self.marks if m.ref == ref]

    # ----- views -------------------------------------------------------------
    def to_dot(self, view: str = "forward", collapse=None, highlight=None, budget=NODE_BUDGET) -> str:
        """Graphviz DOT source of a view; see :func:`autodiff_viz.dot.to_dot` (``budget=None``: no folding)."""
        from . import dot
        return dot.to_dot(self, view=view, collapse=collapse, highlight=highlight, budget=budget)

    def to_svg(self, view: str = "forward", collapse=None, highlight=None) -> str:
        """The view drawn as SVG text (needs Graphviz's ``dot`` program)."""
        from . import render
        return render.svg(self.to_dot(view, collapse, highlight))

    def table(self):
        """The tape as a table (the Wengert list): HTML in notebooks, text in a terminal."""
        from .tape_table import TapeTable
        return TapeTable(self)

    def save(self, path, view: str = "both", collapse=None) -> str:
        """Write the trace to ``path``: ``.svg``, ``.dot``, ``.json`` or a self-contained ``.html``."""
        from . import render
        return render.save(self, path, view=view, collapse=collapse)

    def _repr_mimebundle_(self, include=None, exclude=None):
        from . import render
        return render.mimebundle(self)

    def __repr__(self):
        ops = sum(1 for n in self.nodes if n.kind == "op")
        return (f"<Trace {len(self.nodes)} nodes ({ops} ops), {len(self.edges)} edges, "
                f"target={self.target}>")

    # ----- JSON ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA, "version": SCHEMA_VERSION,
            "target": self.target, "sources": list(self.sources), "steps": list(self.steps),
            "notes": list(self.notes),
            "marks": [{"ref": m.ref, "reason": m.reason} for m in self.marks],
            "nodes": [_node_dict(n) for n in self.nodes],
            "edges": [_edge_dict(e) for e in self.edges],
        }

    def to_json(self, indent=None) -> str:
        """The trace as JSON text (numbers as numbers; NaN and ±Inf as ``"nan"``, ``"inf"``, ``"-inf"``)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False, indent=indent)

    @classmethod
    def from_json(cls, text) -> "Trace":
        """Read a trace written by :meth:`to_json`.

        Raises :class:`TraceFormatError` (a ValueError) naming the field when the
        text is not JSON, is another kind of document, or has a field of the
        wrong type.
        """
        return _decode(text)


# ---------------------------------------------------------------------------
# Encoding and decoding
# ---------------------------------------------------------------------------
def _summary_dict(s):
    return None if s is None else s.to_dict()


def _node_dict(n: TraceNode) -> dict:
    return {
        "id": n.id, "kind": n.kind, "op": n.op, "name": n.name, "tensor_id": n.tensor_id,
        "index": n.index, "scope": n.scope, "value": n.value.to_dict(), "grad": _summary_dict(n.grad),
        "location": None if n.location is None else
        {"file": n.location.file, "line": n.location.line, "code": n.location.code},
        "params": dict(n.params), "on_path": n.on_path,
    }


def _edge_dict(e: TraceEdge) -> dict:
    return {
        "id": e.id, "src": e.src, "dst": e.dst, "input_index": e.input_index, "input_name": e.input_name,
        "factor": e.factor, "differentiable": e.differentiable, "no_grad_reason": e.no_grad_reason,
        "upstream": _summary_dict(e.upstream), "contribution": _summary_dict(e.contribution),
        "jacobian": None if e.jacobian is None else _encode_numbers(e.jacobian.tolist()),
        "on_path": e.on_path,
    }


class TraceFormatError(ValueError):
    """A JSON document that is not a valid trace; the message names the field."""


class _Reader:
    """Typed access to a decoded JSON object that names the field in every error."""

    def __init__(self, obj, where: str):
        if not isinstance(obj, dict):
            raise TraceFormatError(f"{where or 'the document'}: expected a JSON object, got {_jtype(obj)}.")
        self.obj, self.where = obj, where

    def path(self, key) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key, types, optional=False):
        if key not in self.obj:
            if optional:
                return None
            raise TraceFormatError(f"{self.path(key)}: missing (a trace written by Trace.to_json() has it).")
        v = self.obj[key]
        if v is None and optional:
            return None
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in _astuple(types)):
            names = " or ".join(t.__name__ for t in _astuple(types))
            raise TraceFormatError(f"{self.path(key)}: expected {names}, got {_jtype(v)}.")
        return v

    def sub(self, key, optional=False):
        v = self.get(key, dict, optional)
        return None if v is None else _Reader(v, self.path(key))

    def items(self, key):
        return [(f"{self.path(key)}[{i}]", v) for i, v in enumerate(self.get(key, list))]

    def strings(self, key):
        out = []
        for where, v in self.items(key):
            if not isinstance(v, str):
                raise TraceFormatError(f"{where}: expected str, got {_jtype(v)}.")
            out.append(v)
        return out


def _astuple(types):
    return types if isinstance(types, tuple) else (types,)


def _jtype(v) -> str:
    if v is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(v), f"{type(v).__name__} {v!r:.40}")


def _decode_number(v, where):
    if isinstance(v, str) and v in _NONFINITE:
        return _NONFINITE[v]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TraceFormatError(f"{where}: expected a number (or \"nan\", \"inf\", \"-inf\"), got {_jtype(v)}.")
    return v


def _decode_array(v, where, shape, dtype):
    def walk(o, w):
        if isinstance(o, list):
            return [walk(x, f"{w}[{i}]") for i, x in enumerate(o)]
        return _decode_number(o, w)
    try:
        arr = np.array(walk(v, where), dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise TraceFormatError(f"{where}: not an array of {dtype}: {exc}") from None
    if arr.shape != tuple(shape):
        raise TraceFormatError(f"{where}: has shape {arr.shape}, but the shape field says {tuple(shape)}.")
    return arr


def _decode_shape(r: _Reader, key="shape"):
    shape = r.get(key, list)
    for i, n in enumerate(shape):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TraceFormatError(f"{r.path(key)}[{i}]: expected a non-negative integer, got {_jtype(n)}.")
    return tuple(shape)


def _decode_dtype(r: _Reader):
    text = r.get("dtype", str)
    try:
        return np.dtype(text)
    except TypeError:
        raise TraceFormatError(f"{r.path('dtype')}: {text!r} is not a numpy dtype name.") from None


def _decode_summary(r: _Reader | None):
    if r is None:
        return None
    shape, dtype = _decode_shape(r), _decode_dtype(r)
    if "data" not in r.obj:
        r.get("data", list)
    data = r.obj["data"]
    if data is not None:
        data = _decode_array(data, r.path("data"), shape, dtype)
    st = r.sub("stats")
    stats = {k: float(_decode_number(st.get(k, (int, float, str)), st.path(k))) for k in ("min", "mean", "max", "norm")}
    return Summary(shape, str(dtype), data, stats)


def _decode_node(where, obj) -> TraceNode:
    r = _Reader(obj, where)
    kind = r.get("kind", str)
    if kind != "op" and kind not in LEAF_KINDS:
        raise TraceFormatError(f"{r.path('kind')}: {kind!r} is not one of 'op', {', '.join(map(repr, LEAF_KINDS))}.")
    loc = r.sub("location", optional=True)
    location = None if loc is None else Location(loc.get("file", str), loc.get("line", int), loc.get("code", str))
    params = r.get("params", dict)
    for k, v in params.items():
        if not isinstance(v, str):
            raise TraceFormatError(f"{r.path('params')}.{k}: expected str, got {_jtype(v)}.")
    return TraceNode(
        id=r.get("id", str), kind=kind, op=r.get("op", str), name=r.get("name", str, optional=True),
        tensor_id=r.get("tensor_id", int), index=r.get("index", int, optional=True), scope=r.get("scope", str),
        value=_decode_summary(r.sub("value")), grad=_decode_summary(r.sub("grad", optional=True)),
        location=location, params=dict(params), on_path=r.get("on_path", bool))


def _decode_edge(where, obj, node_ids) -> TraceEdge:
    r = _Reader(obj, where)
    for key in ("src", "dst"):
        if r.get(key, str) not in node_ids:
            raise TraceFormatError(f"{r.path(key)}: {r.obj[key]!r} is not the id of a node of this trace.")
    jac = r.get("jacobian", list, optional=True)
    if jac is not None:
        rows = len(jac)
        cols = len(jac[0]) if rows and isinstance(jac[0], list) else 0
        jac = _decode_array(jac, r.path("jacobian"), (rows, cols), np.float64)
    return TraceEdge(
        id=r.get("id", str), src=r.obj["src"], dst=r.obj["dst"], input_index=r.get("input_index", int),
        input_name=r.get("input_name", str), factor=r.get("factor", str, optional=True),
        differentiable=r.get("differentiable", bool), no_grad_reason=r.get("no_grad_reason", str, optional=True),
        upstream=_decode_summary(r.sub("upstream", optional=True)),
        contribution=_decode_summary(r.sub("contribution", optional=True)), jacobian=jac,
        on_path=r.get("on_path", bool))


def _decode(text) -> Trace:
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    if not isinstance(text, str):
        raise TypeError(f"Trace.from_json takes the JSON text (str), got {type(text).__name__}. "
                        "To read a file: Trace.from_json(open(path).read()).")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    r = _Reader(obj, "")
    schema = r.get("schema", str) if isinstance(obj, dict) and "schema" in obj else None
    if schema != SCHEMA:
        raise TraceFormatError(f"schema: expected {SCHEMA!r}, got {schema!r}: this JSON is not an autodiff_viz trace.")
    version = r.get("version", int)
    if version != SCHEMA_VERSION:
        raise TraceFormatError(f"version: this autodiff_viz reads trace version {SCHEMA_VERSION}, the file has "
                               f"version {version}. Rebuild the trace with this version (tape.trace(...)).")
    nodes = [_decode_node(w, o) for w, o in r.items("nodes")]
    ids = {n.id for n in nodes}
    if len(ids) != len(nodes):
        raise TraceFormatError("nodes: two nodes share an id.")
    edges = [_decode_edge(w, o, ids) for w, o in r.items("edges")]
    target = r.get("target", str, optional=True)
    if target is not None and target not in ids:
        raise TraceFormatError(f"target: {target!r} is not the id of a node of this trace.")
    marks = []
    for w, o in r.items("marks"):
        m = _Reader(o, w)
        marks.append(Mark(m.get("ref", str), m.get("reason", str)))
    return Trace(nodes, edges, target=target, sources=r.strings("sources"), steps=r.strings("steps"),
                 marks=marks, notes=r.strings("notes"))


# ---------------------------------------------------------------------------
# Building a trace from a tape
# ---------------------------------------------------------------------------
def _location(loc) -> Location | None:
    if loc is None:
        return None
    filename, lineno = loc
    return Location(filename, int(lineno), linecache.getline(filename, lineno).strip())


def _param_text(v) -> str:
    text = repr(v.tolist() if isinstance(v, np.ndarray) else v)
    return text if len(text) <= 60 else text[:57] + "..."


def _leaf_kind(tape, t: Tensor) -> str:
    watched = tape._watched.get(t._id)
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
    rule, y = node.rule, node.out
    xs = [t._value for t in node.inputs]
    x = xs[i]
    seed = np.eye(y.size, dtype=y.dtype).reshape(y.shape + y.shape)
    spec = rule.spec(i)
    with engine.paused(), np.errstate(all="ignore"):
        gi = spec.vjp(seed, y, *xs, i=i, **node.params) if rule.variadic else spec.vjp(seed, y, *xs, **node.params)
        if rule.elementwise:
            gi = engine.unbroadcast(gi, x.shape, y.ndim)
        gi = np.broadcast_to(np.asarray(gi), y.shape + x.shape)
    return np.array(gi, dtype=np.float64).reshape(y.size, x.size)


def build_trace(tape, target=None, sources=None, value_limit: int = VALUE_LIMIT) -> Trace:
    """The :class:`Trace` of ``tape``'s record.

    Args:
        tape: a :class:`~autodiff_viz.GradientTape` (inside or after its ``with``).
        target: the tensor whose gradient the backward view shows; ``None``
            means the output of the last recorded op. A non-scalar target is
            seeded with ones (the gradient of the sum, as ``tape.gradient``).
        sources: tensors to differentiate with respect to (a tensor or a list);
            ``None`` means every tensor the tape watches.
        value_limit: arrays with more entries keep summary statistics only.

    Nothing here runs user code: values come from the records, derivatives
    from the rule table.
    """
    records = list(tape._nodes)
    nodes: list[TraceNode] = []
    owner: dict[int, TraceNode] = {}
    leaf_tensors: dict[int, Tensor] = {}
    raw_edges = []

    def leaf(t: Tensor) -> TraceNode:
        kind = _leaf_kind(tape, t)
        n = TraceNode(f"n{len(nodes)}", kind, kind, t.name, t._id, None, "", Summary.of(t._value, value_limit))
        nodes.append(n)
        owner[t._id] = n
        leaf_tensors[t._id] = t
        return n

    for index, rec in enumerate(records):
        for i, t in enumerate(rec.inputs):
            if t._id not in owner:
                leaf(t)
        n = TraceNode(f"n{len(nodes)}", "op", rec.rule.name, None, rec.out_id, index, rec.scope or "",
                      Summary.of(rec.out, value_limit), location=_location(rec.location),
                      params={k: _param_text(v) for k, v in rec.params.items()})
        for i, t in enumerate(rec.inputs):
            raw_edges.append((rec, i, t, owner[t._id], n))
        nodes.append(n)
        owner[rec.out_id] = n

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
        source_ids = [tid for tid in tape._watched if tid in owner]
    else:
        flat = sources if isinstance(sources, (list, tuple)) else [sources]
        source_ids = []
        for s in flat:
            if not isinstance(s, Tensor):
                raise TypeError(f"trace: sources must be tensors, got {type(s).__name__}.")
            if s._id in owner and s._id in tape._tracked:
                source_ids.append(s._id)
            elif s._id in owner:
                notes.append(f"the source {s.name or 'tensor'} (shape {s.shape}) is not watched by this tape, "
                             "so it gets no gradient: tape.watch it or make it an adv.Variable")
            else:
                notes.append(f"the source {s.name or 'tensor'} (shape {s.shape}) is not in this tape's record")

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

        with engine.paused(), np.errstate(all="ignore"):
            grads = engine.backward(records, seeds, set(source_ids), on_step=on_step)
    elif target_node is not None:
        notes.append(f"the target has dtype {target_node.dtype}: integers have no gradient")

    reach = engine.reachable(records, set(source_ids))[0]
    for n in nodes:
        g = grads.get(n.tensor_id)
        if g is not None and n.tensor_id in reach:
            n.grad = Summary.of(g, value_limit)
            n.on_path = True

    edges = []
    for k, (rec, i, t, src, dst) in enumerate(raw_edges):
        reason = _no_grad_reason(rec.rule, i, t._value, rec)
        e = TraceEdge(f"e{k}", src.id, dst.id, i, rec.rule.spec(i).name,
                      None if rec.rule.spec(i).factor is None else
                      f"∂y/∂{rec.rule.spec(i).name} = {rec.rule.spec(i).factor}",
                      reason is None, reason)
        gi = contributions.get((rec.out_id, i))
        if gi is not None:
            e.upstream = Summary.of(upstream[rec.out_id], value_limit)
            e.contribution = Summary.of(gi, value_limit)
            e.on_path = src.on_path and dst.on_path
        if e.differentiable and t.size <= JACOBIAN_LIMIT and rec.out.size <= JACOBIAN_LIMIT:
            e.jacobian = local_jacobian(rec, i)
        edges.append(e)

    return Trace(nodes, edges, target=None if target_node is None else target_node.id,
                 sources=[owner[s].id for s in source_ids], steps=steps, notes=notes)
