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
  order, the op, name, the learner's name for it (``h`` for ``h = adv.tanh(z)``),
  scope path, the user function it ran in, shape, dtype, value, the gradient
  of the target with respect to the node, and the user code that made it;
* **edges** (:class:`TraceEdge`): input → op, with the rule's chain-rule factor
  text and the whole formula (``ḡ_x = ḡ_y · Wᵀ``), the upstream gradient
  ``ḡ_y``, the contribution ``ḡ_x = vjp(ḡ_y)`` and, when both sides have at
  most 64 entries, the local Jacobian ``∂y/∂x``;
* **steps**: the op nodes in the order the backward pass visited them;
* **marks** (:class:`Mark`): nodes or edges that a diagnosis points at, with
  the reason (views draw them red).

Derivatives come only from the rule table: the gradients and contributions
are those of :func:`autodiff_viz.core.walks.backward`, and local Jacobians are the
rule's own VJP seeded with an identity.

Size: building, JSON and lookups are linear in the number of nodes
(``edges_into``/``edges_from`` are dict lookups), with no recursion, so a
50,000-node trace is built and drawn folded in seconds.
"""
from __future__ import annotations

import contextlib
import gc
import json
import linecache
import math
from dataclasses import dataclass, field

import numpy as np

from ...base import naming
from ...core.tensor import Tensor

SCHEMA = "autodiff_viz.trace"
SCHEMA_VERSION = 3      # 3: summary JSON shares texts, writes statistics as a list; 2 and 1 still read
VALUE_LIMIT = 256      # arrays with more entries keep summary statistics only
JSON_LIMIT = 16        # to_json(): arrays (values, gradients, Jacobians) above this many entries are summarised
PREVIEW = 8            # ... keeping their first entries as a preview
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
    preview: np.ndarray | None = None      # the first PREVIEW entries of an array kept as statistics only

    @classmethod
    def of(cls, array, limit: int = VALUE_LIMIT) -> "Summary":
        a = np.asarray(array)
        kind = a.dtype.kind
        if kind == "c":
            real = np.abs(a)
        elif kind in "fiub":
            real = a
        else:
            real = np.zeros(a.shape)
        size = real.size
        if size == 0:
            stats = {"min": math.nan, "mean": math.nan, "max": math.nan, "norm": 0.0}
        elif size <= _SMALL:
            stats = _small_stats(real.ravel().tolist())
        else:
            real = real.astype(np.float64, copy=False)
            with np.errstate(all="ignore"):
                stats = {"min": float(real.min()), "mean": float(real.mean()),
                         "max": float(real.max()), "norm": float(np.sqrt(np.dot(real.ravel(), real.ravel())))}
        data = a.copy() if size <= limit and kind in "fiub" else None
        preview = a.ravel()[:PREVIEW].copy() if data is None and kind in "fiub" else None
        return cls(a.shape, _dtype_name(a.dtype), data, stats, preview)

    @classmethod
    def unreadable(cls, shape, dtype: str) -> "Summary":
        """Shape and dtype only, for a value that cannot be read (a meta tensor, a resource handle)."""
        return cls(tuple(shape), dtype, None, {"min": math.nan, "mean": math.nan, "max": math.nan, "norm": math.nan})

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def brief(self, max_items: int = 6) -> str:
        """A one-line description: the numbers when few, else ``min … max`` and the norm.

        A summary reads ``min -3 … max 5, norm 5.9`` (smallest entry, largest
        entry, and the 2-norm ``‖·‖ = √Σ entries²``), so it explains itself.
        """
        if self.data is not None and self.data.size <= max_items:
            if self.data.ndim == 0:
                return _num(self.data.item())
            return "[" + ", ".join(_num(v) for v in self.data.ravel().tolist()) + "]"
        s = self.stats
        return f"min {_num(s['min'])} … max {_num(s['max'])}, norm {_num(s['norm'])}"

    def rows(self, max_rows: int = 6, max_cols: int = 6) -> list:
        """The value as lines of text, a matrix as one line per row.

        A ``(3, 2)`` weight gives three lines ``[0.1, -0.2]`` …; vectors,
        scalars and anything bigger than ``max_rows × max_cols`` give the one
        line of :meth:`brief`.
        """
        d = self.data
        if d is not None and d.ndim == 2 and 1 < d.shape[0] <= max_rows and d.shape[1] <= max_cols:
            return ["[" + ", ".join(_num(v) for v in row) + "]" for row in d.tolist()]
        return [self.brief()]

    def to_dict(self, full: bool = True) -> dict:
        """JSON fields. ``full=False``: an array above :data:`JSON_LIMIT` entries keeps its statistics and a
        :data:`PREVIEW` of its first entries (``"preview"``, five significant digits: it is there to be read, the
        statistics stay exact), not every value."""
        short = not full and self.dtype in _SHORT_DTYPES      # float32 numbers need 9 digits, not 17
        stats = [_encode_number(float(f"{self.stats[k]:.7g}") if short else self.stats[k]) for k in _STATS]
        out = {"shape": list(self.shape), "dtype": self.dtype,
               "data": None if self.data is None else _encode_array(self.data, short),
               "stats": dict(zip(_STATS, stats)) if full else stats}
        if not full and self.data is not None and self.data.size > JSON_LIMIT:
            out["preview"] = _preview(self.data.ravel()[:PREVIEW])
        elif self.data is None and self.preview is not None:
            out["preview"] = _preview(self.preview) if not full else _encode_array(self.preview, short)
        if not full:
            if out["data"] is None or "preview" in out:
                del out["data"]
            else:
                del out["stats"]             # the data is all there: the reader computes them
        return out


_STATS = ("min", "mean", "max", "norm")      # the order of a summary's statistics written as a list


def _preview(a: np.ndarray) -> list:
    """The first entries of a summarised array, to read: floats with five significant digits."""
    if a.dtype.kind != "f":
        return _encode_array(a)
    return [_encode_number(float(f"{v:.5g}")) for v in a.astype(np.float64).tolist()]


_SMALL = 32          # arrays up to this size get their statistics in plain Python (faster than numpy calls)
_DTYPE_NAMES: dict = {}


def _dtype_name(dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def _small_stats(values) -> dict:
    """min, mean, max and 2-norm of a few numbers, with numpy's NaN and overflow behaviour."""
    values = [float(v) for v in values]
    if any(v != v for v in values):
        return {"min": math.nan, "mean": math.nan, "max": math.nan, "norm": math.nan}
    total = math.fsum(values) if all(math.isfinite(v) for v in values) else sum(values)
    try:
        norm = math.sqrt(math.fsum(v * v for v in values))
    except (OverflowError, ValueError):
        norm = math.inf
    if math.isnan(total):
        mean = math.nan
    else:
        mean = total / len(values)
    return {"min": min(values), "mean": mean, "max": max(values), "norm": norm}


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


_SHORT_DTYPES = ("float32", "float16", "bfloat16")


def _encode_array(a: np.ndarray, short: bool = False):
    """Nested lists for JSON; the non-finite walk only when the array has NaN or ±Inf.

    ``short``: a float32 (or narrower) array written with the fewest digits that read back to the same float32
    (``0.001``, not ``0.0010000000474974513``).
    """
    if a.dtype.kind == "b":
        return a.astype(np.int64).tolist()
    if short and a.dtype.kind == "f" and a.dtype.itemsize <= 4:
        a = np.array([float(str(v)) for v in a.astype(np.float32).ravel()], dtype=np.float64).reshape(a.shape)
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        return _encode_numbers(a.tolist())
    return a.tolist()


# ---------------------------------------------------------------------------
# Nodes, edges, marks
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Location:
    """Where user code made a node: file, line and the text of that line.

    ``str(location)`` is how a learner finds it: ``"cell [3], line 8"`` in a
    notebook, ``"path/to/file.py:8"`` for a file (see :func:`autodiff_viz.base.naming.place`).
    """

    file: str
    line: int
    code: str = ""

    def __str__(self):
        return naming.place(self.file, self.line)

    @classmethod
    def of(cls, location) -> "Location | None":
        """The :class:`Location` of a recorded ``(filename, lineno)``, with that line's text; None for None."""
        if location is None:
            return None
        filename, lineno = location
        return cls(filename, int(lineno), linecache.getline(filename, lineno).strip())


LEAF_KINDS = ("variable", "watched", "constant", "outside", "state")


@dataclass(eq=False)
class TraceNode:
    """A leaf or an op of the trace.

    ``kind`` is ``"op"`` for a recorded op, else the kind of leaf:
    ``"variable"`` (a trainable variable), ``"watched"`` (``tape.watch``),
    ``"constant"`` (never watched), ``"outside"`` (computed while this tape
    did not record) or ``"state"`` (a layer's state that no gradient reaches:
    BatchNorm's running statistics, a dropout's seed, a step counter — named
    by its path, ``layer1.0.bn1.running_mean``). ``grad`` is the gradient of the target with respect to
    this node (``None`` off the path). ``on_path`` is False for what lies on no
    path between the target and the sources (views grey it out).

    Names and grouping (all optional, JSON fields of the same name):

    * ``label``: the learner's name for the tensor, the assignment target of
      the recorded source line (``h = adv.tanh(z)`` → ``"h"``), given to the
      last op recorded by one run of that line (the op whose output the line
      assigns); None when the line assigns nothing simple.
    * ``function``: the qualified name of the user's own Python function the
      op ran in (``"block"``, ``"Net.encode"``), None for code of the
      function (or cell) that opened the tape; ``call`` numbers the calls of
      that function (1, 2, … in tape order) so two calls are two boxes.
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
    label: str | None = None
    function: str | None = None
    call: int | None = None

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
        """The learner's name (``label``, else ``name``), else the op (``tanh``) or leaf kind."""
        return self.label or self.name or self.op

    def describe(self) -> str:
        """The node in words, without internal ids: ``'h'``, ``'W'`` or ``the output of tanh (cell [3], line 8)``."""
        if self.label or self.name:
            return f"'{self.title}'"
        if self.kind != "op":
            return f"a {self.kind} of shape {tuple(self.shape)}"
        where = f" ({self.location})" if self.location is not None else ""
        return f"the output of {self.op}{where}"


@dataclass(eq=False)
class TraceEdge:
    """Input ``src`` → op ``dst`` with what the chain rule did along it.

    ``factor`` is the rule's text (``∂y/∂x = 1 − y²``); ``upstream`` is ḡ of
    the op's output, ``contribution`` the VJP result ḡ_x (what this edge adds
    to the input's gradient), ``jacobian`` the local ``∂y/∂x`` as an
    ``(out.size, in.size)`` matrix when both are small. An edge with
    ``differentiable=False`` carries no gradient; ``no_grad_reason`` says why.

    ``formula`` is the whole chain-rule step for a beginner, built from the
    factor: ``ḡ_x = ḡ_y · Wᵀ``, ``ḡ_W = xᵀ · ḡ_y``, ``ḡ_x = ḡ_y · (1 − y²)``,
    and for an input that numpy broadcast ``ḡ_b = Σ_batch ḡ_y (b is shared by
    every row of the batch: its gradient sums the batch)`` (see :func:`formula`).
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
    formula: str | None = None


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

    def __init__(self, nodes, edges, target=None, sources=(), steps=(), marks=(), notes=(), kinds=None):
        self.nodes: list[TraceNode] = list(nodes)
        self.kinds: dict = dict(kinds or {})    # scope segment -> the class that made it ("dense_1": "Dense")
        self.edges: list[TraceEdge] = list(edges)
        self.target: str | None = target
        self.sources: list[str] = list(sources)
        self.steps: list[str] = list(steps)
        self.marks: list[Mark] = list(marks)
        self.notes: list[str] = list(notes)
        self._by_id = {n.id: n for n in self.nodes}
        self._edge_by_id = {e.id: e for e in self.edges}
        self._by_tensor = {n.tensor_id: n.id for n in self.nodes}
        self._index = None
        self._mark_index = None
        self.key_of = None     # a bridge's trace: its framework tensor or variable -> tensor_id (not in the JSON)

    # ----- lookup ------------------------------------------------------------
    def node(self, node_id: str) -> TraceNode:
        """The node with this id (``"n3"``)."""
        try:
            return self._by_id[node_id]
        except KeyError:
            raise KeyError(f"the trace has no node {node_id!r} (it has n0 … n{len(self.nodes) - 1}).") from None

    def edge(self, edge_id: str) -> TraceEdge:
        """The edge with this id (``"e4"``)."""
        try:
            return self._edge_by_id[edge_id]
        except (KeyError, TypeError):
            ids = f"{self.edges[0].id} … {self.edges[-1].id}" if self.edges else "none"
            raise KeyError(f"the trace has no edge {edge_id!r}: it has {len(self.edges)} edges ({ids}). Use an id "
                           "from trace.edges (or from the drawn picture).") from None

    def node_id_of(self, tensor) -> str | None:
        """The trace node id of a tensor (or of a tensor id), or None if the tape never saw it.

        On a bridge's trace, the framework's own tensors and variables too (a ``torch.Tensor``, a
        ``torch.nn.Parameter``, a ``tf.Variable`` or Keras variable): the bridge sets :attr:`key_of`.
        """
        if isinstance(tensor, Tensor):
            tid = tensor._id
        elif isinstance(tensor, (int, np.integer)) and not isinstance(tensor, bool):
            tid = int(tensor)
        elif self.key_of is not None:
            tid = self.key_of(tensor)
        else:
            raise TypeError(f"node_id_of takes a tensor of this trace or its tensor id, got {type(tensor).__name__}. "
                            "A trace read back from JSON knows tensor ids only: pass node.tensor_id, or build the "
                            "trace again with rec.trace(...) to look up framework tensors.")
        return self._by_tensor.get(tid)

    def _edge_index(self):
        """``(into, out_of, by_pair)`` dicts over the edges, built once (rebuilt if the edge list grew)."""
        if self._index is None or self._index[0] != len(self.edges):
            into, out_of, pair = {}, {}, {}
            for e in self.edges:
                into.setdefault(e.dst, []).append(e)
                out_of.setdefault(e.src, []).append(e)
                pair.setdefault((e.src, e.dst), e)
            self._index = (len(self.edges), into, out_of, pair)
        return self._index

    def edges_into(self, node_id: str) -> list[TraceEdge]:
        """The edges into ``node_id`` (its inputs, in input order): a dict lookup."""
        return list(self._edge_index()[1].get(node_id, ()))

    def edges_from(self, node_id: str) -> list[TraceEdge]:
        """The edges out of ``node_id`` (the ops that read it), in tape order: a dict lookup."""
        return list(self._edge_index()[2].get(node_id, ()))

    def path(self, source, target=None) -> list[str]:
        """The ids of the nodes and edges on every path from ``source`` to ``target``: nodes first, in tape order.

        These are the edges the chain rule multiplies along: ḡ reaches
        ``source`` only through them, so ``∂target/∂source`` is the sum over
        these paths of the product of their factors. Pass the list to
        ``to_svg(..., highlight=trace.path(W))`` to draw it in bold.

        Args:
            source: a tensor (a variable), a tensor id or a node id (``"n3"``).
            target: the same kinds; by default the trace's target.

        Returns:
            an empty list when ``target`` does not depend on ``source`` here
            (``tape.explain`` says why).
        """
        src = self._resolve(source, "path")
        if target is None and self.target is None:
            raise ValueError("path: this trace has no target; give one: trace.path(source, target).")
        dst = self.target if target is None else self._resolve(target, "path")
        _, into, out_of, _ = self._edge_index()
        downstream, frontier = {src}, [src]
        while frontier:
            for e in out_of.get(frontier.pop(), ()):
                if e.dst not in downstream:
                    downstream.add(e.dst)
                    frontier.append(e.dst)
        if dst not in downstream:
            return []
        on, frontier = {dst}, [dst]
        while frontier:
            for e in into.get(frontier.pop(), ()):
                if e.src in downstream and e.src not in on:
                    on.add(e.src)
                    frontier.append(e.src)
        return [n.id for n in self.nodes if n.id in on] + \
            [e.id for e in self.edges if e.src in on and e.dst in on]

    def grad_known(self, k: int) -> set:
        """Ids of the nodes whose ḡ is final after ``k`` steps of the backward pass.

        Step 0 knows only the target (its seed); after step ``j`` the op
        ``steps[j-1]`` has sent its contributions, and a node's ḡ is known
        once every op on the path that reads it has been stepped. Views and
        exports show a gradient only for these nodes (nothing before the step
        that computes it). See :meth:`grad_known_at` for the per-node step.
        """
        k = max(0, int(k))
        return {nid for nid, at in self.grad_known_at().items() if at <= k}

    def grad_known_at(self) -> dict:
        """``{node id: the backward step after which its ḡ is known}`` (0 for the target), computed once.

        A view that steps through the backward pass compares this number
        with the step instead of rescanning the edges (constant work per node).
        """
        cached = getattr(self, "_known_at", None)
        if cached is not None and cached[0] == (len(self.steps), len(self.edges)):
            return cached[1]
        pos = {nid: j + 1 for j, nid in enumerate(self.steps)}
        at: dict = {}
        for e in self.edges:
            if e.contribution is not None:
                at[e.src] = max(at.get(e.src, 0), pos.get(e.dst, len(self.steps) + 1))
        for nid, j in pos.items():
            at[nid] = min(at.get(nid, j), j)
        if self.target is not None:
            at[self.target] = 0
        self._known_at = ((len(self.steps), len(self.edges)), at)
        return at

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
        out = Trace(self.nodes, self.edges, self.target, self.sources, self.steps, self.marks, self.notes,
                    self.kinds)
        out._index = self._index
        out.key_of = self.key_of
        return out

    def _resolve(self, ref, what: str = "with_marks") -> str:
        """The node or edge id ``ref`` stands for (see :meth:`with_marks`); ``what`` names the caller in errors.

        For :meth:`path` (``what="path"``) only nodes are meant: an edge id or pair is refused.
        """
        nodes_only = what == "path"
        if isinstance(ref, tuple) and len(ref) == 2 and not nodes_only:
            src, dst = (self._resolve(r, what) for r in ref)
            e = self._edge_index()[3].get((src, dst))
            if e is not None:
                return e.id
            raise ValueError(f"{what}: no edge from {src} to {dst} in this trace.")
        if isinstance(ref, str):
            if ref in self._by_id or (ref in self._edge_by_id and not nodes_only):
                return ref
            kinds = "a node id (n0 …)" if nodes_only else "a node id (n0 …) nor an edge id (e0 …)"
            raise ValueError(f"{what}: {ref!r} is {'not ' if nodes_only else 'neither '}{kinds} of this trace.")
        if isinstance(ref, (Tensor, int, np.integer)) and not isinstance(ref, bool):
            nid = self.node_id_of(ref)
            if nid is None:
                raise ValueError(f"{what}: the tensor {getattr(ref, 'name', None) or ref!s:.60} is not in "
                                 "this trace (this tape never recorded it).")
            return nid
        if nodes_only:
            raise TypeError(f"path: give a tensor, a tensor id or a node id (n0 …), got a {type(ref).__name__}.")
        raise TypeError(f"with_marks: cannot mark a {type(ref).__name__}; give a node id, an edge id, "
                        "a (src, dst) pair, a tensor or a tensor id.")

    def marks_of(self, ref: str) -> list[str]:
        """The reasons marked on a node or edge id."""
        if not self.marks:
            return []
        if self._mark_index is None or self._mark_index[0] != len(self.marks):
            index = {}
            for m in self.marks:
                index.setdefault(m.ref, []).append(m.reason)
            self._mark_index = (len(self.marks), index)
        return list(self._mark_index[1].get(ref, ()))

    # ----- views -------------------------------------------------------------

    def __repr__(self):
        ops = sum(1 for n in self.nodes if n.kind == "op")
        return (f"<Trace {len(self.nodes)} nodes ({ops} ops), {len(self.edges)} edges, "
                f"target={self.target}>")

    # ----- JSON ----------------------------------------------------------------
    def to_dict(self, full: bool = True) -> dict:
        places = None if full else {}
        texts = None if full else {}
        out = {
            "schema": SCHEMA, "version": SCHEMA_VERSION,
            "target": self.target, "sources": list(self.sources), "steps": list(self.steps),
            "notes": list(self.notes),
            "marks": [{"ref": m.ref, "reason": m.reason} for m in self.marks],
            "nodes": [_node_dict(n, full, places, texts) for n in self.nodes],
            "edges": [_edge_dict(e, full, self._by_id[e.dst].grad, self._by_id[e.src].grad, texts, k)
                      for k, e in enumerate(self.edges)],
            "kinds": dict(self.kinds),
        }
        if places is not None:
            out["locations"] = [dict(zip(("file", "line", "code"), loc)) for loc in places]
            out["texts"] = list(texts)
        return out

    def to_json(self, indent=None, values: str = "summary") -> str:
        """The trace as JSON text (numbers as numbers; NaN and ±Inf as ``"nan"``, ``"inf"``, ``"-inf"``).

        ``values="summary"`` (default): an array above :data:`JSON_LIMIT` entries is written as its shape,
        dtype, statistics (min, mean, max, norm) and a preview of its first :data:`PREVIEW` entries, and a local
        Jacobian above that size is left out, so a ResNet's trace stays small; ``values="full"``: every value
        the trace holds (as :meth:`to_dict`).
        """
        if values not in ("summary", "full"):
            raise ValueError(f"to_json: values must be 'summary' or 'full', got {values!r}.")
        with _no_gc():
            return json.dumps(self.to_dict(full=values == "full"), ensure_ascii=False, allow_nan=False,
                              indent=indent)

    @classmethod
    def from_json(cls, text) -> "Trace":
        """Read a trace written by :meth:`to_json`.

        Raises :class:`TraceFormatError` (a ValueError) naming the field when the
        text is not JSON, is another kind of document, or has a field of the
        wrong type.
        """
        with _no_gc():
            return _decode(text)


def check_value_limit(value_limit) -> int:
    """``value_limit`` as an int (``None``: :data:`VALUE_LIMIT`), refused when it is not a count of entries."""
    if value_limit is None:
        return VALUE_LIMIT
    if isinstance(value_limit, bool) or not isinstance(value_limit, (int, np.integer)) or value_limit < 0:
        raise ValueError(f"trace: value_limit is the most entries an array keeps in full (a whole number >= 0, or "
                         f"None for {VALUE_LIMIT}), got {value_limit!r}.")
    return int(value_limit)




# ---------------------------------------------------------------------------
# Encoding and decoding
# ---------------------------------------------------------------------------
@contextlib.contextmanager
def _no_gc():
    """Pause the cyclic garbage collector while building many small objects (a 50,000-node
    trace makes millions): its full passes would make the build quadratic. Nothing built here
    forms cycles, so nothing is missed; the collector's state is restored after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _summary_dict(s, full=True):
    return None if s is None else s.to_dict(full)


def _node_dict(n: TraceNode, full=True, places=None, texts=None) -> dict:
    """A node's JSON fields. In summary mode (``places`` given) a field left at its default (None, ``{}``,
    False, kind ``"op"``) is not written, the location is an index into the
    trace's ``locations`` list and the scope one into its ``texts``: a deep model's 1,500 nodes mostly share
    one line (``loss = loss_fn(y, model(x))``) and a few dozen scopes, and carry no label."""
    loc = None if n.location is None else (n.location.file, n.location.line, n.location.code)
    out = {
        "id": n.id, "kind": n.kind, "op": n.op, "name": n.name, "tensor_id": n.tensor_id,
        "index": n.index, "scope": n.scope, "value": n.value.to_dict(full), "grad": _summary_dict(n.grad, full),
        "location": None if loc is None else
        places.setdefault(loc, len(places)) if places is not None else dict(zip(("file", "line", "code"), loc)),
        "params": dict(n.params), "on_path": n.on_path,
        "label": n.label, "function": n.function, "call": n.call,
    }
    if places is not None:
        for key in _NODE_DEFAULTS:
            if _left_at_default(out[key]):
                del out[key]
        if out["kind"] == "op":
            del out["kind"]
        out["scope"] = texts.setdefault(out["scope"], len(texts))
        grad = out.get("grad")
        if grad is not None and grad["shape"] == out["value"]["shape"] and grad["dtype"] == out["value"]["dtype"]:
            del grad["shape"], grad["dtype"]          # a gradient has its value's shape and dtype
    return out


def _left_at_default(v) -> bool:
    return v is None or v is False or (isinstance(v, (dict, str)) and not v)


_NODE_DEFAULTS = ("name", "index", "grad", "location", "params", "on_path", "label", "function", "call")
_EDGE_DEFAULTS = ("factor", "no_grad_reason", "upstream", "contribution", "jacobian", "on_path", "formula")


_DST_GRAD = "dst.grad"     # a summarised edge's upstream ḡ_y when it is its op's gradient (written once, there)
_SRC_GRAD = "src.grad"     # ... its contribution ḡ_x when it is the whole gradient of its input (its only reader)


_SHARED_TEXTS = ("input_name", "factor", "no_grad_reason", "formula")   # an edge's texts, shared in summary mode


def _edge_dict(e: TraceEdge, full=True, dst_grad=None, src_grad=None, texts=None, k=None) -> dict:
    """An edge's JSON fields. In summary mode a field at its default is not written (nor input 0, nor the
    id ``e{k}`` of its position), a gradient that is its node's is written as ``"dst.grad"`` / ``"src.grad"``,
    and the texts (input name, factor, formula, why no gradient) are indexes into the trace's ``texts``."""
    jacobian = e.jacobian if e.jacobian is not None and (full or e.jacobian.size <= JSON_LIMIT) else None
    same = not full and e.upstream is not None and dst_grad is not None and e.upstream.shape == dst_grad.shape \
        and e.upstream.stats == dst_grad.stats
    out = {
        "id": e.id, "src": e.src, "dst": e.dst, "input_index": e.input_index, "input_name": e.input_name,
        "factor": e.factor, "differentiable": e.differentiable, "no_grad_reason": e.no_grad_reason,
        "upstream": _DST_GRAD if same else _summary_dict(e.upstream, full),
        "contribution": _SRC_GRAD if not full and e.contribution is not None and e.contribution is src_grad
        else _summary_dict(e.contribution, full),
        "jacobian": None if jacobian is None else _encode_array(jacobian),
        "on_path": e.on_path, "formula": e.formula,
    }
    if not full:
        for key in _EDGE_DEFAULTS:
            if _left_at_default(out[key]):
                del out[key]
        if out["differentiable"]:
            del out["differentiable"]
        if out["id"] == f"e{k}":
            del out["id"]
        if out["input_index"] == 0:
            del out["input_index"]
        for key in _SHARED_TEXTS:
            if key in out:
                out[key] = texts.setdefault(out[key], len(texts))
    return out


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
    if isinstance(v, list):
        try:
            flat = np.array(v, dtype=object).ravel() if v else ()
        except ValueError:
            flat = [None]
        if all(type(x) in (int, float) for x in flat):
            try:
                arr = np.array(v, dtype=dtype)
            except (ValueError, TypeError, OverflowError):
                arr = None
            if arr is not None and arr.shape == tuple(shape):
                return arr
            if arr is not None and arr.size == 0 and arr.shape == _empty_nesting(shape):
                return arr.reshape(shape)

    def walk(o, w):
        if isinstance(o, list):
            return [walk(x, f"{w}[{i}]") for i, x in enumerate(o)]
        return _decode_number(o, w)
    try:
        arr = np.array(walk(v, where), dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise TraceFormatError(f"{where}: not an array of {dtype}: {exc}") from None
    if arr.size == 0 and arr.shape == _empty_nesting(shape):
        return arr.reshape(shape)
    if arr.shape != tuple(shape):
        raise TraceFormatError(f"{where}: has shape {arr.shape}, but the shape field says {tuple(shape)}.")
    return arr


def _empty_nesting(shape) -> tuple | None:
    """The shape numpy reads back from ``tolist()`` of an empty array of ``shape``: nesting stops at the first 0.

    ``np.zeros((0, 2)).tolist()`` is ``[]`` (shape ``(0,)``) and ``np.zeros((2, 0, 3)).tolist()`` is
    ``[[], []]`` (shape ``(2, 0)``), so the axes after the first empty one live only in the shape field.
    None for a shape without an empty axis.
    """
    shape = tuple(shape)
    return shape[:shape.index(0) + 1] if 0 in shape else None


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


def _decode_summary(r: _Reader | None, like=None):
    """A summary; ``like``: the node's value, whose shape and dtype a gradient written without them has."""
    if r is None:
        return None
    if like is not None and "shape" not in r.obj and "dtype" not in r.obj:
        shape, dtype = like.shape, np.dtype(like.dtype)
    else:
        shape, dtype = _decode_shape(r), _decode_dtype(r)
    data = r.obj.get("data")      # left out of a summary that keeps statistics and a preview only
    if data is not None:
        data = _decode_array(data, r.path("data"), shape, dtype)
    stats = _decode_stats(r, data)
    preview = r.get("preview", list, optional=True) if data is None else None
    if preview is not None:
        preview = _decode_array(preview, r.path("preview"), (len(preview),), dtype)
    return Summary(shape, str(dtype), data, stats, preview)


def _decode_stats(r: _Reader, data) -> dict:
    """A summary's statistics: an object (versions 1, 2 and full values), a list in :data:`_STATS`' order
    (version 3's summary), or left out beside data written in full (computed from it, as the writer did)."""
    if "stats" not in r.obj and data is not None:
        return Summary.of(data, limit=data.size).stats
    if isinstance(r.obj.get("stats"), list):
        values = r.get("stats", list)
        if len(values) != len(_STATS):
            raise TraceFormatError(f"{r.path('stats')}: expected {len(_STATS)} numbers ({', '.join(_STATS)}), got "
                                   f"{len(values)}.")
        return {k: float(_decode_number(v, f"{r.path('stats')}[{i}]")) for i, (k, v) in enumerate(zip(_STATS, values))}
    st = r.sub("stats")
    return {k: float(_decode_number(st.get(k, (int, float, str)), st.path(k))) for k in _STATS}


def _text(r: _Reader, key, texts, optional=False):
    """A string field, written inline or (version 3's summary) as an index into the trace's ``texts``."""
    v = r.get(key, (str, int), optional)
    if isinstance(v, int):
        if not 0 <= v < len(texts):
            raise TraceFormatError(f"{r.path(key)}: {v} is not an index of the trace's texts ({len(texts)} of them).")
        return texts[v]
    return v


def _decode_location(where, obj) -> Location:
    loc = _Reader(obj, where)
    return Location(loc.get("file", str), loc.get("line", int), loc.get("code", str))


def _decode_node(where, obj, places=(), texts=()) -> TraceNode:
    r = _Reader(obj, where)
    kind = r.get("kind", str) if "kind" in obj else "op"
    if kind != "op" and kind not in LEAF_KINDS:
        raise TraceFormatError(f"{r.path('kind')}: {kind!r} is not one of 'op', {', '.join(map(repr, LEAF_KINDS))}.")
    at = r.get("location", (dict, int), optional=True)
    if isinstance(at, int):
        if not 0 <= at < len(places):
            raise TraceFormatError(f"{r.path('location')}: {at} is not an index of the trace's locations "
                                   f"({len(places)} of them).")
        location = places[at]
    else:
        location = None if at is None else _decode_location(r.path("location"), at)
    params = r.get("params", dict, optional=True) or {}
    value = _decode_summary(r.sub("value"))
    for k, v in params.items():
        if not isinstance(v, str):
            raise TraceFormatError(f"{r.path('params')}.{k}: expected str, got {_jtype(v)}.")
    return TraceNode(
        id=r.get("id", str), kind=kind, op=r.get("op", str),
        name=r.get("name", str, optional=True), tensor_id=r.get("tensor_id", int),
        index=r.get("index", int, optional=True), scope=_text(r, "scope", texts),
        value=value, grad=_decode_summary(r.sub("grad", optional=True), like=value),
        location=location, params=dict(params), on_path=bool(r.get("on_path", bool, optional=True)),
        label=r.get("label", str, optional=True), function=r.get("function", str, optional=True),
        call=r.get("call", int, optional=True))


def _decode_edge(where, obj, nodes: dict, texts=(), position=0) -> TraceEdge:
    """One edge; its Jacobian has the shape ``(dst size, src size)`` (as :func:`local_jacobian` makes it)."""
    r = _Reader(obj, where)
    for key in ("src", "dst"):
        if r.get(key, str) not in nodes:
            raise TraceFormatError(f"{r.path(key)}: {r.obj[key]!r} is not the id of a node of this trace.")
    jac = r.get("jacobian", list, optional=True)
    if jac is not None:
        shape = (nodes[r.obj["dst"]].value.size, nodes[r.obj["src"]].value.size)
        jac = _decode_array(jac, r.path("jacobian"), shape, np.float64)
    return TraceEdge(
        id=r.get("id", str) if "id" in obj else f"e{position}", src=r.obj["src"], dst=r.obj["dst"],
        input_index=r.get("input_index", int) if "input_index" in obj else 0,
        input_name=_text(r, "input_name", texts),
        factor=_text(r, "factor", texts, optional=True),
        differentiable=r.get("differentiable", bool, optional=True) is not False,
        no_grad_reason=_text(r, "no_grad_reason", texts, optional=True),
        upstream=nodes[r.obj["dst"]].grad if r.obj.get("upstream") == _DST_GRAD else
        _decode_summary(r.sub("upstream", optional=True)),
        contribution=nodes[r.obj["src"]].grad if r.obj.get("contribution") == _SRC_GRAD else
        _decode_summary(r.sub("contribution", optional=True)), jacobian=jac,
        on_path=bool(r.get("on_path", bool, optional=True)), formula=_text(r, "formula", texts, optional=True))


def _decode(text) -> Trace:
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceFormatError(f"not UTF-8 text: byte 0x{text[exc.start]:02x} at byte offset {exc.start} "
                                   f"({exc.reason}). A trace file is UTF-8 JSON written by Trace.to_json / "
                                   "Trace.save('.json'); read it with open(path, 'rb').read() unchanged.") from None
    if not isinstance(text, str):
        raise TypeError(f"Trace.from_json takes the JSON text (str), got {type(text).__name__}. "
                        "To read a file: Trace.from_json(open(path).read()).")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    except RecursionError:
        raise TraceFormatError("not a trace: its arrays/objects are nested too deeply to read (a trace nests a "
                               "few levels). The text is corrupt or another kind of document; write it again "
                               "with Trace.to_json.") from None
    r = _Reader(obj, "")
    schema = r.get("schema", str) if isinstance(obj, dict) and "schema" in obj else None
    if schema != SCHEMA:
        raise TraceFormatError(f"schema: expected {SCHEMA!r}, got {schema!r}: this JSON is not an autodiff_viz trace.")
    version = r.get("version", int)
    if version not in range(1, SCHEMA_VERSION + 1):
        raise TraceFormatError(f"version: this autodiff_viz reads trace versions 1 to {SCHEMA_VERSION}, the file "
                               f"has version {version}. Rebuild the trace with this version (tape.trace(...)).")
    places = [_decode_location(w, o) for w, o in r.items("locations")] if "locations" in obj else []
    texts = r.strings("texts") if "texts" in obj else []
    nodes = [_decode_node(w, o, places, texts) for w, o in r.items("nodes")]
    ids = {n.id: n for n in nodes}
    if len(ids) != len(nodes):
        raise TraceFormatError("nodes: two nodes share an id.")
    edges = [_decode_edge(w, o, ids, texts, k) for k, (w, o) in enumerate(r.items("edges"))]
    target = r.get("target", str, optional=True)
    if target is not None and target not in ids:
        raise TraceFormatError(f"target: {target!r} is not the id of a node of this trace.")
    marks = []
    for w, o in r.items("marks"):
        m = _Reader(o, w)
        marks.append(Mark(m.get("ref", str), m.get("reason", str)))
    kinds = r.get("kinds", dict, optional=True) or {}
    for k, v in kinds.items():
        if not isinstance(v, str):
            raise TraceFormatError(f"kinds.{k}: expected str, got {_jtype(v)}.")
    return Trace(nodes, edges, target=target, sources=r.strings("sources"), steps=r.strings("steps"),
                 marks=marks, notes=r.strings("notes"), kinds=kinds)
