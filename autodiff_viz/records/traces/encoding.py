"""A trace as JSON and back: what :meth:`Trace.to_json` writes and :meth:`Trace.from_json` reads.

Version 3's summary (the default) says each thing once: fields at their defaults left out, each source line
and each repeated text (scopes, an edge's factor and formula) written once and indexed, statistics as a list,
an array above :data:`~autodiff_viz.records.traces.model.JSON_LIMIT` entries as its statistics and a preview.
Reading checks every field and names the one that is wrong (:class:`TraceFormatError`); versions 1 and 2 still
read.
"""
from __future__ import annotations

import json

import numpy as np

from .model import (
    _NONFINITE,
    _STATS,
    JSON_LIMIT,
    LEAF_KINDS,
    SCHEMA,
    SCHEMA_VERSION,
    Location,
    Mark,
    Summary,
    Trace,
    TraceEdge,
    TraceNode,
    _encode_array,
    _no_gc,
)


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
                 marks=marks, notes=r.strings("notes"), kinds=kinds,
                 idle=r.strings("idle") if "idle" in obj else (), own=r.strings("own") if "own" in obj else (),
                 roots=_roots(r.get("roots", dict, optional=True) or {}))


def _roots(roots: dict) -> dict:
    for k, v in roots.items():
        if not isinstance(v, str):
            raise TraceFormatError(f"roots.{k}: expected str, got {_jtype(v)}.")
    return roots


# ---------------------------------------------------------------------------
# The methods of Trace, installed here: the data model knows no file format
# ---------------------------------------------------------------------------
def to_dict(self, full: bool = True) -> dict:
    """The trace as JSON-ready data: every field (``full``), or version 3's summary (see :func:`to_json`)."""
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
    if self.idle:
        out["idle"] = sorted(self.idle)
    if self.own:
        out["own"] = sorted(self.own)
    if self.roots:
        out["roots"] = dict(self.roots)
    if places is not None:
        out["locations"] = [dict(zip(("file", "line", "code"), loc)) for loc in places]
        out["texts"] = list(texts)
    return out


def to_json(self, indent=None, values: str = "summary") -> str:
    """The trace as JSON text (numbers as numbers; NaN and ±Inf as ``"nan"``, ``"inf"``, ``"-inf"``), without
    spaces unless ``indent`` asks for a layout.

    ``values="summary"`` (default): an array above :data:`JSON_LIMIT` entries is written as its shape,
    dtype, statistics (min, mean, max, norm) and a preview of its first entries, and a local Jacobian above
    that size is left out, so a ResNet's trace stays small; ``values="full"``: every value the trace holds
    (as :meth:`to_dict`).
    """
    if values not in ("summary", "full"):
        raise ValueError(f"to_json: values must be 'summary' or 'full', got {values!r}.")
    with _no_gc():
        return json.dumps(self.to_dict(full=values == "full"), ensure_ascii=False, allow_nan=False, indent=indent,
                          separators=(",", ":") if indent is None else None)


def from_json(cls, text) -> "Trace":
    """Read a trace written by :meth:`to_json`.

    Raises :class:`TraceFormatError` (a ValueError) naming the field when the text is not JSON, is another
    kind of document, or has a field of the wrong type.
    """
    with _no_gc():
        return _decode(text)


Trace.to_dict, Trace.to_json, Trace.from_json = to_dict, to_json, classmethod(from_json)
