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

    def __init__(self, nodes, edges, target=None, sources=(), steps=(), marks=(), notes=(), kinds=None, idle=(),
                 own=(), roots=None):
        self.nodes: list[TraceNode] = list(nodes)
        self.kinds: dict = dict(kinds or {})    # scope segment -> the class that made it ("dense_1": "Dense")
        # scope segments of modules the recording knows by name but that never ran as a call of their own (a
        # PyTorch ModuleList, ModuleDict or any container whose forward nobody calls): names, not steps
        self.idle: frozenset = frozenset(idle)
        # scope segments made by a class whose forward / call the learner wrote: its class name says nothing of
        # what it computes (a class of yours named RNN or Attention is not torch's), so no library formula
        self.own: frozenset = frozenset(own)
        # an outermost model's scope segment -> the learner's variable it was called through ("mlp_1": "decoder"),
        # where the two differ: the figure titles the box as the learner's code names the model
        self.roots: dict = dict(roots or {})
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
                    self.kinds, self.idle, self.own, self.roots)
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


def check_value_limit(value_limit) -> int:
    """``value_limit`` as an int (``None``: :data:`VALUE_LIMIT`), refused when it is not a count of entries."""
    if value_limit is None:
        return VALUE_LIMIT
    if isinstance(value_limit, bool) or not isinstance(value_limit, (int, np.integer)) or value_limit < 0:
        raise ValueError(f"trace: value_limit is the most entries an array keeps in full (a whole number >= 0, or "
                         f"None for {VALUE_LIMIT}), got {value_limit!r}.")
    return int(value_limit)
