"""Drawing traces: SVG through Graphviz, notebook display, files, and a standalone HTML page.

* :func:`svg` turns DOT into SVG with Graphviz's ``dot`` program; when the
  program is missing it raises :class:`GraphvizNotFound`, whose message says
  how to install it.
* :func:`mimebundle` is what a notebook shows for a trace: the SVG, or when
  ``dot`` is missing the install hint and the tape table.
* :func:`save` writes ``.svg``, ``.dot``, ``.json`` or ``.html``.
* :func:`html_document` is a page that works offline from a file: both views
  inline as SVG, a button to switch between them and buttons to step through
  the backward pass one op at a time (a few lines of inline script, no
  network, no CDN).
"""
from __future__ import annotations

import html
import json
import os

import graphviz

INSTALL_HINT = (
    "Drawing a trace needs Graphviz's `dot` program, which was not found on PATH. Install it with one of:\n"
    "  Debian/Ubuntu:  sudo apt-get install graphviz\n"
    "  macOS:          brew install graphviz\n"
    "  conda:          conda install -c conda-forge graphviz\n"
    "then restart the kernel. Meanwhile trace.table() shows the tape as a table and "
    "trace.to_dot() gives the DOT text."
)
INLINE_NODE_LIMIT = 40


class GraphvizNotFound(RuntimeError):
    """Graphviz's ``dot`` program is not installed; the message says how to install it."""


def svg(dot_source: str) -> str:
    """SVG text for DOT source (the ``<svg>`` element only, ready to inline in HTML)."""
    try:
        out = graphviz.Source(dot_source).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFound(INSTALL_HINT) from None
    start = out.find("<svg")
    return out[start:] if start >= 0 else out


def default_view(trace) -> str:
    """``"both"`` for small traces with a target, else ``"backward"`` (or ``"forward"`` without a target)."""
    if trace.target is None:
        return "forward"
    return "both" if len(trace.nodes) <= INLINE_NODE_LIMIT else "backward"


def mimebundle(trace) -> dict:
    """The notebook display of a trace: SVG, or the install hint and the tape table."""
    try:
        image = svg(trace.to_dot(default_view(trace)))
    except GraphvizNotFound as exc:
        table = trace.table()
        message = str(exc)
        return {
            "text/html": f'<pre style="color:#a33">{html.escape(message)}</pre>{table.to_html()}',
            "text/plain": f"{message}\n\n{table.to_text()}",
        }
    return {"image/svg+xml": image, "text/plain": repr(trace)}


def save(trace, path, view: str = "both", collapse=None) -> str:
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


def _steps(trace) -> list:
    out = []
    for nid in trace.steps:
        n = trace.node(nid)
        sent = [f"{e.src} += {e.contribution.brief()}" for e in trace.edges_into(nid) if e.contribution is not None]
        g = n.grad.brief() if n.grad is not None else "?"
        out.append({"node": nid, "text": f"{nid} · {n.title}: ḡ = {g}; sends " + ("; ".join(sent) or "nothing")})
    return out


def _script_json(obj) -> str:
    """JSON safe inside a <script> element (no ``</script>`` can appear)."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026")


PAGE_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 16px; color: #222; }
.controls button { margin-right: 4px; padding: 4px 10px; }
.controls button[aria-pressed="true"] { background: #1f4e99; color: white; }
#step-info { margin: 8px 0; font-family: monospace; min-height: 1.2em; }
.view svg { max-width: 100%; height: auto; }
.adv-stepping .node, .adv-stepping .edge { opacity: 0.3; }
.adv-stepping .adv-done, .adv-stepping .adv-current, .adv-stepping #bwd_legend { opacity: 1; }
.adv-current polygon, .adv-current path, .adv-current ellipse { stroke: #d62728; stroke-width: 3px; }
.adv-tape-table td, .adv-tape-table th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
"""

PAGE_SCRIPT = """
(function () {
  var steps = JSON.parse(document.getElementById("adv-steps").textContent);
  var k = 0;
  var views = {forward: document.getElementById("view-forward"),
               backward: document.getElementById("view-backward")};
  function show(name) {
    for (var v in views) {
      views[v].hidden = (v !== name);
      document.getElementById("show-" + v).setAttribute("aria-pressed", v === name ? "true" : "false");
    }
  }
  function paint() {
    var root = views.backward;
    root.querySelectorAll(".adv-done, .adv-current").forEach(function (el) {
      el.classList.remove("adv-done"); el.classList.remove("adv-current");
    });
    root.classList.toggle("adv-stepping", k > 0);
    for (var j = 0; j < k; j++) {
      root.querySelectorAll(".step_" + steps[j].node).forEach(function (el) {
        el.classList.add(j === k - 1 ? "adv-current" : "adv-done");
      });
    }
    document.getElementById("step-info").textContent = k === 0
      ? "before the backward pass (" + steps.length + " steps)"
      : "step " + k + " / " + steps.length + ": " + steps[k - 1].text;
  }
  function step(d) { show("backward"); k = Math.max(0, Math.min(steps.length, k + d)); paint(); }
  document.getElementById("show-forward").onclick = function () { show("forward"); };
  document.getElementById("show-backward").onclick = function () { show("backward"); };
  document.getElementById("step-next").onclick = function () { step(1); };
  document.getElementById("step-back").onclick = function () { step(-1); };
  document.getElementById("step-reset").onclick = function () { k = 0; paint(); };
  show("forward"); paint();
})();
"""


def html_document(trace, collapse=None, title: str = "autodiff_viz trace") -> str:
    """A self-contained HTML page: forward and backward SVG, switch and step controls, the tape table."""
    forward = svg(trace.to_dot("forward", collapse))
    backward = svg(trace.to_dot("backward", collapse))
    target = trace.node(trace.target) if trace.target else None
    subtitle = (f"target {target.id} · {target.title}, {len(trace.nodes)} nodes, {len(trace.steps)} backward steps"
                if target else f"{len(trace.nodes)} nodes, no target")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in trace.notes)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{PAGE_STYLE}</style>
</head>
<body>
<h1 style="font-size:18px">{html.escape(title)}</h1>
<p>{html.escape(subtitle)}</p>
{f"<ul>{notes}</ul>" if notes else ""}
<div class="controls">
<button id="show-forward" type="button">forward</button>
<button id="show-backward" type="button">backward</button>
<button id="step-back" type="button">◀ step</button>
<button id="step-next" type="button">step ▶</button>
<button id="step-reset" type="button">reset</button>
</div>
<div id="step-info"></div>
<div id="view-forward" class="view">{forward}</div>
<div id="view-backward" class="view" hidden>{backward}</div>
<h2 style="font-size:15px">tape</h2>
{trace.table().to_html()}
<script type="application/json" id="adv-steps">{_script_json(_steps(trace))}</script>
<script>{PAGE_SCRIPT}</script>
</body>
</html>
"""
