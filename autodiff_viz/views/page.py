"""A trace as a file: ``.svg``, ``.dot``, ``.json``, or a standalone HTML page that works offline.

* :func:`save` writes ``.svg``, ``.dot``, ``.json`` or ``.html`` (what ``Trace.save`` does).
* :func:`html_document` is a page that works offline from a file: both views
  inline as SVG, a button to switch between them and buttons to step through
  the backward pass one op at a time — the explorer's static copy, with its
  script and styles inline (no network, no CDN).
"""
from __future__ import annotations

import copy
import html
import json
import os
import time

from .render import svg
from .widgets.frontend import CORE_JS, CSS
from .widgets.state import ExplorerState


def save(trace, path, view: str = "both", collapse="auto") -> str:
    """Write ``trace`` to ``path``; the extension chooses the format. Returns the path."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".json":
        text = trace.to_json(indent=1)
    elif ext == ".dot":
        text = trace.to_dot(view, collapse)
    elif ext == ".svg":
        text = svg(trace.to_dot(view, collapse))
    elif ext in (".html", ".htm"):
        text = html_document(trace, collapse)
    else:
        raise ValueError(f"Trace.save: cannot tell the format of {path!r}; use a name ending in "
                         ".svg, .dot, .json or .html.")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


HTML_FOLD_STATES = 16          # fold states (sets of opened boxes) carried by a standalone page, at most


HTML_BUDGET_CHARS = 2_000_000  # and at most about this much drawing text


HTML_BUDGET_SECONDS = 1.5      # and at most this long spent drawing them


def _script_json(obj) -> str:
    """JSON safe inside a <script> element (no ``</script>`` or ``<svg`` can appear)."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026")


def _texts(trace) -> dict:
    """Short texts the page shows on a click or a step, by node / edge id, without internal ids."""
    def name(n):
        return n.title if n.title != n.op else f"{n.op} output"
    nodes = {}
    for n in trace.nodes[:3000]:
        where = f"; {n.location}" if n.location is not None else ""
        nodes[n.id] = [f"{name(n)}: {n.op}, {n.shape}{where}; value {n.value.brief()}",
                       f"ḡ = {n.grad.brief()}" if n.grad is not None else "ḡ: none (off the path)"]
    edges = {}
    for e in trace.edges[:6000]:
        src, dst = trace.node(e.src), trace.node(e.dst)
        head = f"{name(src)} → {name(dst)}: {getattr(e, 'formula', None) or e.factor or 'no factor'}"
        edges[e.id] = [head, f"ḡ_y = {e.upstream.brief()}; adds ḡ_{e.input_name} = {e.contribution.brief()}"
                       if e.contribution is not None else ""]
    return {"nodes": nodes, "edges": edges}


PAGE_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 16px; color: #222; }
.controls button { margin-right: 4px; padding: 4px 10px; font-size: 14px; }
.controls button[aria-pressed="true"] { background: #1f4e99; color: white; }
.controls label { margin-right: 10px; font-size: 14px; }
#info { margin: 8px 0; font-family: monospace; min-height: 1.2em; white-space: pre-wrap; }
"""


PAGE_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("adv-data").textContent);
  var init = data.init;
  var state = data.states[init.state] ? init.state : "", view = init.view, subs = {};
  ["forward", "backward", "both"].forEach(function (v) {
    var src = document.getElementById("src-" + v);
    if (src && data.states[state][v]) { data.states[state][v].body = src.innerHTML; }
    if (src) src.parentNode.removeChild(src);
  });
  var store = {step: init.step, mode: init.mode, selected: init.selected, heat: init.heat, hidden: init.hidden,
               flash: [], drawing: data.states[state][view] || data.states[""][view]};
  function fire(k) { (subs[k] || []).forEach(function (f) { f(); }); }
  var info = document.getElementById("info");
  function say(lines) { info.textContent = lines.filter(Boolean).join("\\n"); }
  function known(nid) {
    var k = data.known[nid];
    return store.mode === "backward" && k !== undefined && k !== null && store.step >= k;
  }
  var api = {
    get: function (k) { return store[k]; },
    set: function (k, v) { store[k] = v; fire(k); },
    on: function (k, f) { (subs[k] = subs[k] || []).push(f); return function () {}; },
    send: function (msg) {
      if (msg.event === "select") {
        var box = (store.drawing.boxes || {})[msg.box], t = data.texts.nodes[msg.box];
        say(t ? [t[0], known(msg.box) ? t[1] : (data.known[msg.box] !== undefined
                 ? "ḡ: not computed yet at this step" : t[1])] : [box ? box.t : msg.box]);
      } else if (msg.event === "edge") {
        var id = msg.edge.split("_x")[0], e = data.texts.edges[id];
        var reached = store.mode === "backward" && store.step >= (data.edge_step[id] || 1e9);
        say(e ? [e[0], reached ? e[1] : "ḡ has not reached this edge at this step"] : [msg.edge]);
      } else if (msg.event === "expand") {
        var info = (store.drawing.boxes || {})[msg.box];
        var next = info && info.k ? keyOf(opened().concat([info.k])) : null;
        if (next !== null && data.states[next]) { state = next; show(view); }
        else say(["This box's inside is not carried in this page: open the notebook to expand it."]);
      } else if (msg.event === "fold") {
        var base = msg.box.replace(/\\*$/, "") + "/";
        var kept = keyOf(opened().filter(function (k) { return k !== msg.box && k.indexOf(base) !== 0; }));
        state = data.states[kept] ? kept : ""; show(view);
      } else if (msg.event === "collapse_all") { state = ""; show(view); }
    }
  };
  function opened() { return state ? state.split("|") : []; }
  function keyOf(keys) { return keys.filter(function (k, i) { return keys.indexOf(k) === i; }).sort().join("|"); }
  function show(v) {
    view = v;
    var st = data.states[state] || data.states[""];
    store.drawing = st[v] || data.states[""][v];
    document.querySelectorAll(".controls [data-view]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-view") === v ? "true" : "false");
    });
    fire("drawing");
  }
  document.querySelectorAll(".controls [data-view]").forEach(function (b) {
    b.onclick = function () { show(b.getAttribute("data-view")); };
  });
  document.querySelectorAll(".controls [data-mode]").forEach(function (b) {
    b.onclick = function () {
      store.mode = b.getAttribute("data-mode"); store.step = Math.min(1, store.drawing.n[store.mode] || 0);
      document.querySelectorAll(".controls [data-mode]").forEach(function (c) {
        c.setAttribute("aria-pressed", c === b ? "true" : "false"); });
      fire("mode");
    };
  });
  document.querySelectorAll(".controls [data-label]").forEach(function (c) {
    c.onchange = function () {
      api.set("hidden", Array.prototype.filter.call(document.querySelectorAll(".controls [data-label]"),
        function (x) { return !x.checked; }).map(function (x) { return x.getAttribute("data-label"); }));
    };
  });
  var viewer = advMount(document.getElementById("viewer"), api);
  window.advViewer = viewer;
  show(view);
})();
"""


def _page_data(trace, collapse, fold_states=HTML_FOLD_STATES, budget_chars=HTML_BUDGET_CHARS,
               budget_seconds=HTML_BUDGET_SECONDS, start=None):
    """The drawings (per fold state and view) and texts a standalone page carries, and where it starts.

    ``start``: an :class:`~autodiff_viz.widgets.state.ExplorerState` whose
    view, fold state, walk, step, heat colours, hidden labels and selection
    the page opens with (the explorer's static copy). Its fold state is
    always carried, whatever the budgets, with the states its breadcrumb
    buttons fold back to and "collapse all"; then the states one more click
    opens, breadth first from the start and then from the top, within the
    budgets. The drawings it has made already are reused (the copy shares
    its caches), never redrawn; its own fold state and view are left alone.
    """
    if start is not None:
        st = copy.copy(start)
    else:
        st = ExplorerState(trace)
        st.prefix = ""
        st.set_collapse(collapse)
    first = frozenset(st.expanded)
    views = ("forward", "backward") + (("both",) if start is not None and start.view == "both" else ())
    states = {}
    size = 0

    def capture(opened):
        nonlocal size
        st.expanded = frozenset(opened)
        out = {}
        for view in views + ("tape",) if not opened else views:
            p = dict(st.payload(view))
            size += len(p["body"])
            out[view] = p
        states[_state_key(opened)] = out

    def over_budget():
        return (len(states) >= fold_states or size > budget_chars
                or time.perf_counter() - began > budget_seconds)

    began = time.perf_counter()
    capture(frozenset())
    if first:
        capture(first)
    for key in sorted(first):                    # what each breadcrumb folds back to
        st.expanded = first
        st.fold(key)
        if _state_key(st.expanded) not in states:
            capture(st.expanded)
    queue = [first] + ([frozenset()] if first else [])
    while queue and not over_budget():
        opened = queue.pop(0)
        st.expanded = opened
        for box in st.foldable():
            if over_budget():
                break
            st.expanded = opened
            key = _state_key(st.expanded) if st.expand(box) else None
            if key is not None and key not in states:
                before = size
                grown = st.expanded
                capture(grown)
                if size > budget_chars:          # too big to carry: leave this state out
                    del states[key]
                    size = before
                    continue
                queue.append(grown)
    start_key = _state_key(first)
    inline = {}
    for v in views:
        inline[v] = states[start_key][v]["body"]
        states[start_key][v] = dict(states[start_key][v], body="")
    flowing = {}
    for k, nid in enumerate(trace.steps, start=1):
        for e in trace.edges_into(nid):
            if e.contribution is not None:
                flowing[e.id] = k
    st.expanded = first
    if start is not None:
        init = {"state": start_key, "view": start.view, "mode": start.mode, "step": start.step,
                "heat": bool(start.heat), "hidden": sorted(start.hidden), "selected": start.box_of(start.selected)}
    else:
        init = {"state": start_key, "view": "forward", "mode": "backward", "step": min(1, len(trace.steps)),
                "heat": False, "hidden": [], "selected": None}
    data = {"states": states, "start": min(1, len(trace.steps)), "init": init,
            "known": st._known, "edge_step": flowing, "texts": _texts(trace)}
    return data, inline, st


def _state_key(expanded) -> str:
    return "|".join(sorted(expanded))


def html_document(trace, collapse="auto", title: str = "autodiff_viz trace", fold_states: int = HTML_FOLD_STATES,
                  budget_chars: int = HTML_BUDGET_CHARS, budget_seconds: float = HTML_BUDGET_SECONDS,
                  start=None) -> str:
    """A self-contained HTML page: the explorer's graph without a kernel.

    Forward and backward drawings (inline SVG: readable even with scripts
    off), the tape table, the same stepping as the live explorer (◀, slider,
    ▶; nothing shown before the step that computes it), fit, zoom and pan,
    colour by ‖ḡ‖, label toggles, a click on a node or edge to read it, and a
    click on a folded box to open it for the fold states the page can carry
    (boxes opened breadth first, up to ``fold_states`` states, about
    ``budget_chars`` of drawings and ``budget_seconds`` of drawing). Works
    from a ``file://`` with no network: the script and the styles are inline.
    Without Graphviz the drawings come from the built-in renderer.

    ``start``: an :class:`~autodiff_viz.widgets.state.ExplorerState` to open
    as it stands (view, opened boxes, walk and step, colour by ‖ḡ‖, hidden
    labels, selection), as :meth:`autodiff_viz.widgets.explorer.Explorer.static_html`
    does; by default the page opens on the forward view with the default
    fold (a model drawn open one level: its layers are the boxes), at step 1
    of the backward pass. ``collapse`` is then the state's own.
    """
    data, inline, _ = _page_data(trace, collapse, fold_states, budget_chars, budget_seconds, start)
    init = data["init"]
    target = trace.node(trace.target) if trace.target else None
    subtitle = (f"target {target.title}, {len(trace.nodes)} nodes, {len(trace.steps)} backward steps"
                if target else f"{len(trace.nodes)} nodes, no target")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in trace.notes)

    def pressed(on):
        return ' aria-pressed="true"' if on else ' aria-pressed="false"'
    view_buttons = "\n".join(
        f'<button id="show-{v}" type="button" data-view="{v}"{pressed(init["view"] == v)}>{text}</button>'
        for v, text in (("forward", "forward"), ("backward", "backward"), ("both", "both"), ("tape", "tape table"))
        if v in data["states"][""])
    mode_buttons = "\n".join(
        f'<button type="button" data-mode="{m}"{pressed(init["mode"] == m)}>{m} pass</button>'
        for m in ("backward", "forward"))
    label_boxes = "\n".join(
        f'<label><input type="checkbox" data-label="{k}"{"" if k in init["hidden"] else " checked"}> {text}</label>'
        for k, text in (("value", "values"), ("shape", "shapes"), ("factor", "∂y/∂x factors"),
                        ("grad", "gradients ḡ")))
    sources = "\n".join(f'<div id="src-{v}" hidden>{body}</div>' for v, body in inline.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{PAGE_STYLE}{CSS}</style>
</head>
<body>
<h1 style="font-size:18px">{html.escape(title)}</h1>
<p>{html.escape(subtitle)}</p>
{f"<ul>{notes}</ul>" if notes else ""}
<div class="controls">
view: {view_buttons}
&nbsp; walk: {mode_buttons}
<br>show: {label_boxes}
</div>
<div id="viewer"></div>
<div id="info" aria-live="polite">Click a node or an edge to read it.</div>
{sources}
<script type="application/json" id="adv-data">{_script_json(data)}</script>
<script>{CORE_JS}</script>
<script>{PAGE_SCRIPT}</script>
</body>
</html>
"""
