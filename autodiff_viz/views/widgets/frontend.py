"""The explorer's graph in the browser: one small script shared by the live widget and the HTML export.

Why this front end (measured, see docs/performance.md): the first explorer
sent a new ``<style>`` block through the kernel for every step, 90–150 ms
from a click to the changed picture on a 37-node graph. Here the browser
holds everything a step or a selection needs, so a click repaints without
asking the kernel:

* the kernel sends one **drawing** per fold state (view, collapse, expanded
  boxes): the tagged SVG and a *plan* — for every drawn element the step from
  which it counts as done in each pass, the box that is current at each step
  (run-length coded), the edges each step just computed, the title of every
  box and which boxes can be expanded;
* a step (◀, ▶, the slider), a selection, the zoom, panning and the
  colour-by-‖ḡ‖ option then only toggle classes on elements already in the
  page; the kernel hears about steps and clicks afterwards, to fill the
  panels (chain-rule step, inspector, edge factor in numbers);
* a click on a folded box asks the kernel for the expanded drawing (one
  layout per fold state, cached on both sides of the wire).

The same script (:data:`CORE_JS`) runs in the live widget (an
``anywidget.AnyWidget``: the JavaScript is this Python string, no CDN, no
build step; JupyterLab 4, Notebook 7 and VS Code) and, inline, in the
self-contained page of :func:`autodiff_viz.page.html_document`, which
carries the drawings of the fold states it can afford.

Fit and navigate: the drawing fits the width of its output on first display
(never scaled up past its natural size), but never below readable: when
fitting would draw its smallest label under ``min_px`` px (9 px, the
notebook display's bar), it opens at the scale where that label is 9 px,
centred on the current step (else on the target), and pans inside its own
viewport. The mouse wheel zooms around the pointer, dragging pans, "fit"
(or the key 0) shows the whole graph whatever its label size; a drawing
taller than the viewport opens scrolled to the current step.
"""
from __future__ import annotations

try:
    import anywidget
    import traitlets as T
except ImportError:          # the standalone HTML page needs only the script and styles below
    anywidget = None

CORE_JS = r"""
function advMount(host, api) {
  "use strict";
  var PT = 4 / 3, MAXH = 640;
  var root = document.createElement("div");
  root.className = "adv-gv adv-mode-b";
  root.innerHTML =
    '<div class="adv-gv-bar">' +
    '<button type="button" data-a="back" title="one step back">\u25c0</button>' +
    '<input type="range" class="adv-gv-slider" min="0" max="0" step="1" value="0" aria-label="step">' +
    '<button type="button" data-a="next" title="one step forward">\u25b6</button>' +
    '<span class="adv-gv-step" aria-live="polite"></span>' +
    '</div>' +
    '<div class="adv-gv-bar adv-gv-bar2">' +
    '<button type="button" data-a="out" title="zoom out">\u2212</button>' +
    '<button type="button" data-a="fit" title="fit the width">fit</button>' +
    '<button type="button" data-a="in" title="zoom in">+</button>' +
    '<label class="adv-gv-heatbox"><input type="checkbox" class="adv-gv-heat"> colour by \u2016\u1e21\u2016</label>' +
    '<span class="adv-gv-scale"></span>' +
    '<span class="adv-gv-crumbs"></span>' +
    '<details class="adv-gv-legend"><summary>legend</summary><table></table></details>' +
    '</div>' +
    '<div class="adv-gv-note" role="note"></div>' +
    '<div class="adv-gv-vp"><div class="adv-gv-canvas"></div></div>';
  host.appendChild(root);
  var $ = function (s) { return root.querySelector(s); };
  var vp = $(".adv-gv-vp"), canvas = $(".adv-gv-canvas"), slider = $(".adv-gv-slider");
  var stepText = $(".adv-gv-step"), crumbs = $(".adv-gv-crumbs"), note = $(".adv-gv-note");
  var heatBox = $(".adv-gv-heat"), scaleEl = $(".adv-gv-scale");
  var d = null, items = [], byId = {}, svg = null, scale = 1, userZoom = false, shownKey = null;
  var pendingFirst = false, lastWidth = 0, wholeGraph = false;
  var marked = {cur: [], just: [], sel: [], flash: []};

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function mode() { return api.get("mode") === "forward" ? "forward" : "backward"; }
  function total() { return d && d.n ? (d.n[mode()] || 0) : 0; }
  function step() { return Math.max(0, Math.min(total(), api.get("step") | 0)); }
  function elsOf(box) {
    if (box === null || box === undefined) return [];
    var out = [];
    ["fwd_", "bwd_", "row_"].forEach(function (p) { var e = byId[p + box]; if (e) out.push(e); });
    return out;
  }
  function curBox(k) {
    var runs = d && d.cur ? d.cur[mode()] || [] : [];
    var lo = 0, hi = runs.length - 1, best = null;
    if (k < 1) return null;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (runs[mid][0] <= k) { best = runs[mid][1]; lo = mid + 1; } else { hi = mid - 1; }
    }
    return best;
  }
  function setMarks(kind, els, cls) {
    marked[kind].forEach(function (e) { e.classList.remove(cls); });
    els.forEach(function (e) { e.classList.add(cls); });
    marked[kind] = els;
  }

  // ----- painting: classes only, never a new layout ------------------------------
  function paint() {
    if (!d) return;
    var m = mode(), mi = m === "forward" ? 2 : 1, k = step(), n = total();
    root.classList.toggle("adv-mode-f", m === "forward");
    root.classList.toggle("adv-mode-b", m !== "forward");
    for (var i = 0; i < items.length; i++) {
      var it = items[i], kk = it[mi];
      var wait = kk !== null && kk !== undefined && k < kk;
      var done = kk !== null && kk !== undefined && !wait;
      if (it.w !== wait) { it[0].classList.toggle("adv-wait", wait); it.w = wait; }
      if (it.d !== done) { it[0].classList.toggle("adv-done", done); it.d = done; }
    }
    var box = curBox(k);
    setMarks("cur", elsOf(box), "adv-current");
    inside(box, k);
    var just = (d.just && d.just[m] && d.just[m][k]) || [];
    setMarks("just", just.map(function (id) { return byId[id]; }).filter(Boolean), "adv-just");
    setMarks("sel", elsOf(api.get("selected")), "adv-selected");
    slider.max = String(n);
    slider.value = String(k);
    var title = d.titles && k > 0 && d.titles[m] ? d.titles[m][k - 1] || "" : "";
    var outer = box !== null && d.boxes && d.boxes[box] ? d.boxes[box] : null;
    if (outer && outer.f) title = (title ? title + " in " : "") + outer.t;
    else if (!title && outer) title = outer.t;
    var what = m === "forward" ? "forward pass" : "backward pass";
    stepText.textContent = k === 0 ? "step 0 / " + n + " (" + what + " not started: press \u25b6)"
      : "step " + k + " / " + n + (title ? ": " + title : "");
  }

  // where the walk is inside a folded box: "3 / 12" beside it, so every step changes the picture
  var badge = null;
  function inside(box, k) {
    var runs = d.cur ? d.cur[mode()] || [] : [], text = "";
    var info = box !== null && d.boxes ? d.boxes[box] : null;
    if (info && info.f && k > 0) {
      for (var i = runs.length - 1; i >= 0; i--) {
        if (runs[i][0] <= k) {
          var end = i + 1 < runs.length ? runs[i + 1][0] : total() + 1;
          text = "\u25b6 " + (k - runs[i][0] + 1) + " / " + (end - runs[i][0]) + " inside";
          break;
        }
      }
    }
    if (badge) { badge.forEach(function (t) { t.parentNode && t.parentNode.removeChild(t); }); badge = null; }
    if (!text || !svg) return;
    var els = elsOf(box).filter(function (g) { return g.getBBox; });
    if (els.length && !els[0].getBBox().width) {       // not laid out yet (the output is still being attached)
      if (!inside.waiting) {
        inside.waiting = true;
        requestAnimationFrame(function () { inside.waiting = false; if (curBox(step()) === box) inside(box, step()); });
      }
      return;
    }
    badge = els.map(function (g) {
      var b = g.getBBox(), t = document.createElementNS("http://www.w3.org/2000/svg", "text");
      var room = g.getBoundingClientRect().top - svg.getBoundingClientRect().top;
      t.setAttribute("x", String(b.x + b.width));
      t.setAttribute("y", String(room < 14 ? b.y + b.height + 12 : b.y - 3));
      t.setAttribute("text-anchor", "end");
      t.setAttribute("class", "adv-inside");
      t.textContent = text;
      g.appendChild(t);
      return t;
    });
  }

  function setStep(k) {
    k = Math.max(0, Math.min(total(), k));
    api.set("step", k);
    paint();
    keepInView(elsOf(curBox(k)));
  }

  // ----- heat colours (colour by the norm of the gradient) --------------------------
  function dark(hex) {
    var n = parseInt(hex.slice(1), 16);
    return hex.length === 7 && 0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255) < 110;
  }
  function heat() {
    var asked = !!api.get("heat"), on = asked && mode() !== "forward";
    heatBox.checked = asked;
    if (!d) return;
    var colours = d.heat || {};
    Object.keys(colours).forEach(function (id) {
      var g = byId[id]; if (!g) return;
      var c = on ? colours[id] : "";
      if (g.classList.contains("node")) {
        var s = g.querySelector("polygon, path, ellipse, rect"); if (s) s.style.fill = c;
        g.querySelectorAll("text").forEach(function (t) { t.style.fill = c && dark(c) ? "white" : ""; });
      } else {
        g.querySelectorAll("path").forEach(function (p) { p.style.stroke = c; });
        g.querySelectorAll("polygon").forEach(function (p) { p.style.fill = c; p.style.stroke = c; });
      }
    });
    root.classList.toggle("adv-heat-on", on);
    var r = d.heat_range;
    scaleEl.innerHTML = on && r ? '<span class="adv-gv-tick">10^' + esc(r[0]) +
      '</span><span class="adv-gv-ramp" style="background:' + esc(d.heat_ramp) + '"></span>' +
      '<span class="adv-gv-tick">10^' + esc(r[1]) + '</span> <span class="adv-gv-tick">\u2016\u1e21\u2016, log scale' +
      '</span>' : (on ? '<span class="adv-gv-tick">no gradient to colour</span>' : "");
  }

  // ----- zoom, fit, pan --------------------------------------------------------------
  function natural() { return d && d.kind === "svg" ? [d.w * PT, d.h * PT] : null; }
  function applyScale(s, ax, ay) {
    var nat = natural(); if (!nat || !svg) return;
    s = Math.max(0.05, Math.min(4, s));
    var cx = (vp.scrollLeft + ax) / scale, cy = (vp.scrollTop + ay) / scale;
    scale = s;
    svg.style.width = (nat[0] * s).toFixed(1) + "px";
    svg.style.height = (nat[1] * s).toFixed(1) + "px";
    vp.style.height = Math.min(MAXH, nat[1] * s + 4).toFixed(0) + "px";
    vp.scrollLeft = cx * s - ax;
    vp.scrollTop = cy * s - ay;
  }
  // the scale at which the smallest label is min_px tall on screen (font in pt, 1 pt = PT px at scale 1)
  function readableScale() { return d && d.font && d.min_px ? Math.min(1, d.min_px / (d.font * PT)) : 0; }
  // whole: the whole graph in the width ("fit"); else that, but never below readable (the first view)
  function fit(whole) {
    var nat = natural(); if (!nat) return false;
    var w = vp.clientWidth;
    if (!w) return false;
    lastWidth = w;
    userZoom = false;
    wholeGraph = !!whole;
    var s = Math.min(1, (w - 4) / nat[0]);
    applyScale(whole ? s : Math.max(s, readableScale()), 0, 0);
    vp.scrollLeft = 0; vp.scrollTop = 0;
    return true;
  }
  function centreOn(els) {
    if (!els.length) return;
    var v = vp.getBoundingClientRect(), r = els[els.length - 1].getBoundingClientRect();
    if (!v.width || !v.height) return;
    vp.scrollTop += (r.top + r.bottom) / 2 - (v.top + v.bottom) / 2;
    vp.scrollLeft += (r.left + r.right) / 2 - (v.left + v.right) / 2;
  }
  function keepInView(els) {
    if (!els.length) return;
    var v = vp.getBoundingClientRect(), r = els[els.length - 1].getBoundingClientRect();
    if (!v.width || !v.height) return;
    if (r.top < v.top || r.bottom > v.bottom) vp.scrollTop += (r.top + r.bottom) / 2 - (v.top + v.bottom) / 2;
    if (r.left < v.left || r.right > v.right) vp.scrollLeft += (r.left + r.right) / 2 - (v.left + v.right) / 2;
  }
  function firstView() {
    if (!fit(false)) return false;
    var els = elsOf(curBox(step()));
    if (!els.length) els = elsOf(d.start);
    if (vp.scrollWidth > vp.clientWidth + 1) centreOn(els);     // zoomed past the width: the step in the middle
    else keepInView(els);
    return true;
  }

  // ----- a new drawing (a new fold state or view) ------------------------------------------
  function load() {
    d = api.get("drawing") || null;
    if (!d || d.key === shownKey) { paint(); return; }
    shownKey = d.key;
    canvas.innerHTML = d.body || "";
    svg = canvas.querySelector("svg");
    byId = {};
    var pre = d.prefix ? d.prefix + "-" : "";
    canvas.querySelectorAll("[id]").forEach(function (e) {
      if (e.id.indexOf(pre) === 0) byId[e.id.slice(pre.length)] = e;
    });
    items = [];
    (d.els || []).forEach(function (row) {
      var e = byId[row[0]]; if (e) items.push([e, row[1], row[2]]);
    });
    marked = {cur: [], just: [], sel: [], flash: []};
    badge = null;
    note.textContent = d.note || "";
    note.style.display = d.note ? "" : "none";
    crumbs.innerHTML = "";
    if (d.crumbs && d.crumbs.length) {
      var all = document.createElement("button");
      all.type = "button"; all.textContent = "collapse all"; all.setAttribute("data-a", "collapse_all");
      crumbs.appendChild(all);
      d.crumbs.forEach(function (c) {
        var b = document.createElement("button");
        b.type = "button"; b.className = "adv-gv-crumb"; b.textContent = "\u25be " + c[1];
        b.title = "fold " + c[1] + " back into one box";
        b.setAttribute("data-fold", c[0]);
        crumbs.appendChild(b);
      });
    }
    root.classList.toggle("adv-gv-table", d.kind !== "svg");
    var legend = $(".adv-gv-legend table");
    legend.innerHTML = "";
    (d.legend || []).forEach(function (row) {
      var tr = document.createElement("tr"), a = document.createElement("td"), b = document.createElement("td");
      a.textContent = row[0]; a.style.background = row[1]; b.textContent = row[2];
      tr.appendChild(a); tr.appendChild(b); legend.appendChild(tr);
    });
    $(".adv-gv-legend").style.display = (d.legend || []).length ? "" : "none";
    vp.style.height = "";
    if (svg) { svg.removeAttribute("width"); svg.removeAttribute("height"); scale = 1; }
    pendingFirst = !firstView();
    if (pendingFirst) requestAnimationFrame(function () { if (pendingFirst) pendingFirst = !firstView(); });
    paint();
    heat();
  }

  // ----- events ------------------------------------------------------------------------
  var drag = null, dragged = false;
  vp.addEventListener("pointerdown", function (ev) {
    if (ev.button !== 0) return;
    drag = {x: ev.clientX, y: ev.clientY, l: vp.scrollLeft, t: vp.scrollTop};
    dragged = false;
  });
  function onMove(ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!dragged && Math.abs(dx) + Math.abs(dy) > 4) { dragged = true; root.classList.add("adv-dragging"); }
    if (dragged) { vp.scrollLeft = drag.l - dx; vp.scrollTop = drag.t - dy; }
  }
  function onUp() { drag = null; root.classList.remove("adv-dragging"); }
  window.addEventListener("pointermove", onMove);
  window.addEventListener("pointerup", onUp);
  vp.addEventListener("wheel", function (ev) {
    if (!natural()) return;
    ev.preventDefault();
    var r = vp.getBoundingClientRect();
    userZoom = true;
    applyScale(scale * Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
  }, {passive: false});

  function boxOf(rest) {
    if (rest.indexOf("acc_") === 0) return rest.slice(4).replace(/_out$/, "");
    var at = rest.indexOf("_at_");
    return at > 0 ? rest.slice(0, at) : rest;
  }
  canvas.addEventListener("click", function (ev) {
    if (dragged) { dragged = false; return; }
    var g = ev.target.closest("g.node, g.edge, tr[id]");
    var pre = d && d.prefix ? d.prefix + "-" : "";
    if (!g || !d || g.id.indexOf(pre) !== 0) return;
    var id = g.id.slice(pre.length), rest = id.slice(4);
    if (g.classList.contains("edge") && rest.indexOf("acc_") !== 0) {
      setMarks("sel", [g], "adv-selected");
      api.send({event: "edge", edge: rest});
      return;
    }
    var box = boxOf(rest);
    if (d.boxes && d.boxes[box] && d.boxes[box].f) { api.send({event: "expand", box: box}); return; }
    api.set("selected", box);
    paint();
    api.send({event: "select", box: box});
  });
  root.addEventListener("click", function (ev) {
    var b = ev.target.closest("button"); if (!b) return;
    var a = b.getAttribute("data-a");
    if (a === "next") setStep(step() + 1);
    else if (a === "back") setStep(step() - 1);
    else if (a === "fit") fit(true);
    else if (a === "in" || a === "out") { userZoom = true; applyScale(scale * (a === "in" ? 1.25 : 0.8), 0, 0); }
    else if (a === "collapse_all") api.send({event: "collapse_all"});
    else if (b.hasAttribute("data-fold")) api.send({event: "fold", box: b.getAttribute("data-fold")});
  });
  slider.addEventListener("input", function () { setStep(parseInt(slider.value, 10) || 0); });
  vp.setAttribute("tabindex", "0");
  // Lumino stops looking for a shortcut at this attribute: without it Notebook 7, whose key handler runs
  // before ours (capture phase), takes the arrow keys for its command mode and the graph never steps
  vp.setAttribute("data-lm-suppress-shortcuts", "true");
  vp.setAttribute("aria-label", "graph: arrow keys step, + and - zoom, 0 fits");
  vp.addEventListener("keydown", function (ev) {
    var k = ev.key;
    if (k === "ArrowRight" || k === "ArrowDown") setStep(step() + 1);
    else if (k === "ArrowLeft" || k === "ArrowUp") setStep(step() - 1);
    else if (k === "Home") setStep(0);
    else if (k === "End") setStep(total());
    else if (k === "+" || k === "=") { userZoom = true; applyScale(scale * 1.25, 0, 0); }
    else if (k === "-") { userZoom = true; applyScale(scale * 0.8, 0, 0); }
    else if (k === "0") fit(true);
    else return;
    ev.preventDefault();
    ev.stopPropagation();            // JupyterLab's own shortcuts stay off while the graph has the focus
  });
  heatBox.addEventListener("change", function () { api.set("heat", heatBox.checked); heat(); });

  function hidden() {
    var h = api.get("hidden") || [];
    ["value", "shape", "factor", "grad"].forEach(function (k) {
      root.classList.toggle("adv-hide-" + k, h.indexOf(k) >= 0);
    });
  }
  function flash() {
    var f = api.get("flash") || [];
    var els = [];
    f.slice(1).forEach(function (box) { els = els.concat(elsOf(box)); });
    setMarks("flash", [], "adv-flash");
    if (!els.length) return;
    void root.offsetWidth;
    setMarks("flash", els, "adv-flash");
    keepInView(els);
  }
  var offs = [api.on("drawing", load), api.on("step", paint), api.on("mode", function () { paint(); heat(); }),
              api.on("selected", paint),
              api.on("heat", heat), api.on("hidden", hidden), api.on("flash", flash)];
  if (typeof ResizeObserver !== "undefined") {
    var ro = new ResizeObserver(function () {
      var w = vp.clientWidth;
      if (!w || w === lastWidth) return;            // only a new width refits (not the height fit() sets)
      lastWidth = w;
      if (pendingFirst) pendingFirst = !firstView();
      else if (!userZoom) { fit(wholeGraph); keepInView(elsOf(curBox(step()))); }
    });
    ro.observe(vp);
    offs.push(function () { ro.disconnect(); });
  }
  offs.push(function () {
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
  });
  hidden();
  load();
  return {
    paint: paint, fit: fit, setStep: setStep, load: load,
    dispose: function () { offs.forEach(function (f) { if (typeof f === "function") f(); }); }
  };
}
"""

WIDGET_JS = CORE_JS + r"""
export default {
  render({ model, el }) {
    const api = {
      get: (k) => model.get(k),
      set: (k, v) => { model.set(k, v); model.save_changes(); },
      on: (k, cb) => { const f = () => cb(); model.on("change:" + k, f); return () => model.off("change:" + k, f); },
      send: (msg) => model.send(msg),
    };
    const view = advMount(el, api);
    el.__adv = view;
    return () => view.dispose();
  },
};
"""

CSS = (r"""
.adv-gv { font-family: Helvetica, Arial, sans-serif; font-size: 14px; color: #222; }
.adv-gv-bar { display: flex; align-items: center; gap: 6px; margin: 4px 0; flex-wrap: wrap; }
.adv-gv-bar button { font-size: 14px; padding: 2px 10px; min-width: 32px; cursor: pointer; }
.adv-gv-slider { width: 320px; max-width: 40%; }
.adv-gv-step { font-size: 14px; }
.adv-gv-crumbs { display: inline-flex; gap: 4px; flex-wrap: wrap; }
.adv-gv-crumb { background: #f1ecfa; border: 1px solid #b9a6de; }
.adv-gv-note { color: #555; font-style: italic; margin: 2px 0; }
.adv-gv-legend { position: relative; font-size: 13px; }
.adv-gv-legend summary { cursor: pointer; padding: 2px 8px; border: 1px solid #ccc; border-radius: 3px; }
.adv-gv-legend[open] table { position: absolute; right: 0; z-index: 10; background: white; border-collapse: collapse;
  box-shadow: 0 2px 8px rgba(0,0,0,0.2); white-space: nowrap; }
.adv-gv-legend td { border: 1px solid #ccc; padding: 2px 6px; }
.adv-gv-vp { overflow: auto; max-height: 640px; border: 1px solid #ddd; background: white; cursor: grab;
  position: relative; }
.adv-gv.adv-gv-table .adv-gv-vp { cursor: auto; }
.adv-gv.adv-dragging .adv-gv-vp { cursor: grabbing; user-select: none; }
.adv-gv-canvas svg { display: block; }
.adv-gv g.node, .adv-gv g.edge { cursor: pointer; }
.adv-gv-scale { display: inline-flex; align-items: center; gap: 4px; font-size: 12px; }
.adv-gv-ramp { display: inline-block; width: 120px; height: 10px; border: 1px solid #888; }
.adv-gv-tick { font-size: 12px; color: #444; }
.adv-gv .adv-hide-value .adv-t-value, .adv-gv.adv-hide-value .adv-t-value,
.adv-gv.adv-hide-shape .adv-t-shape, .adv-gv.adv-hide-factor .adv-t-factor,
.adv-gv.adv-hide-grad .adv-t-grad, .adv-gv.adv-hide-grad .adv-t-contrib { display: none; }
.adv-gv.adv-mode-b g.node.adv-wait .adv-t-grad, .adv-gv.adv-mode-b tr.adv-wait .adv-t-grad { visibility: hidden; }
.adv-gv.adv-mode-b g.edge.adv-wait, .adv-gv.adv-mode-b g.adv-acc.adv-wait { opacity: 0.35; }
.adv-gv.adv-mode-b g.edge.adv-wait path { stroke-dasharray: 2 4; }
.adv-gv.adv-mode-b g.edge.adv-wait .adv-t-contrib { display: none; }
.adv-gv.adv-mode-b g.edge.adv-done path { stroke-width: 2px; }
.adv-gv.adv-mode-f .adv-t-grad, .adv-gv.adv-mode-f .adv-t-contrib { visibility: hidden; }
.adv-gv.adv-mode-f g.node.adv-wait, .adv-gv.adv-mode-f g.edge.adv-wait,
.adv-gv.adv-mode-f tr.adv-wait { opacity: 0.35; }
.adv-gv.adv-mode-f g.node.adv-wait :is(polygon, path, ellipse, rect) { stroke-dasharray: 3 3; }
.adv-gv.adv-mode-f g.node.adv-wait .adv-t-value, .adv-gv.adv-mode-f tr.adv-wait .adv-t-value { visibility: hidden; }
.adv-gv.adv-mode-b.adv-heat-on g.node.adv-wait :is(polygon, path, ellipse, rect) { fill: #f4f4f4 !important; }
.adv-gv.adv-mode-b.adv-heat-on g.node.adv-wait text { fill: #222 !important; }
.adv-gv.adv-mode-b.adv-heat-on g.edge.adv-wait path { stroke: #bbbbbb !important; }
.adv-gv.adv-mode-b.adv-heat-on g.edge.adv-wait polygon { stroke: #bbbbbb !important; fill: #bbbbbb !important; }
.adv-gv g.edge.adv-just path { stroke-width: 3.5px; stroke: #c2185b; }
.adv-gv g.edge.adv-just text { font-weight: bold; }
"""
       ".adv-gv g.node.adv-selected :is(polygon, path, ellipse, rect) "
       "{ stroke: #4a148c; stroke-width: 3px; stroke-dasharray: 7 3; }\n"
       ".adv-gv g.node.adv-current :is(polygon, path, ellipse, rect) "
       "{ stroke: #c2185b; stroke-width: 4px; stroke-dasharray: none; }\n"
       r""".adv-gv g.node.adv-current text { font-weight: bold; }
.adv-gv text.adv-inside { font-size: 11px; fill: #c2185b; font-weight: bold; }
.adv-gv g.edge.adv-selected path { stroke: #4a148c; stroke-width: 3px; }
.adv-gv tr.adv-current { background: #fde0ec; font-weight: bold; outline: 3px solid #c2185b; }
.adv-gv tr.adv-selected { outline: 2px dashed #4a148c; }
.adv-gv .adv-flash :is(polygon, path, ellipse, rect) { animation: adv-flash 0.6s ease-in-out 4; }
@keyframes adv-flash { 50% { stroke: #ff6f00; stroke-width: 6px; } }
.adv-gv .adv-tape-table td, .adv-gv .adv-tape-table th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
""")


if anywidget is not None:
    class GraphView(anywidget.AnyWidget):
        """The graph of an explorer in the browser (see the module docstring).

        Traits (synced with the page):

        * ``drawing``: the current fold state's drawing and plan (a dict made by
          :meth:`autodiff_viz.widgets.state.ExplorerState.drawing_payload`);
        * ``step``, ``mode``: where the walk is (the page changes them on ◀ ▶ and the slider);
        * ``selected``: the drawn box that is selected (a node id or a folded box id);
        * ``heat``: colour nodes and edges by ‖ḡ‖; ``hidden``: label kinds hidden;
        * ``flash``: ``[counter, box, ...]`` boxes to scroll to and flash once.

        Clicks come back as messages ``{"event": "select" | "expand" | "fold" |
        "collapse_all" | "edge", ...}``, handled by the explorer.
        """

        _esm = WIDGET_JS
        _css = CSS
        drawing = T.Dict().tag(sync=True)
        step = T.Int(0).tag(sync=True)
        mode = T.Unicode("backward").tag(sync=True)
        selected = T.Unicode(None, allow_none=True).tag(sync=True)
        heat = T.Bool(False).tag(sync=True)
        hidden = T.List(T.Unicode()).tag(sync=True)
        flash = T.List().tag(sync=True)
else:
    class GraphView:
        """Stands in for the live graph when ``anywidget`` is missing: says how to install it."""

        def __init__(self, *args, **kwargs):
            raise ImportError("The explorer's graph needs the anywidget package (it ships the page's script "
                              "inside autodiff_viz, no CDN): pip install anywidget, then restart the kernel. "
                              "Meanwhile trace.save('graph.html') writes the same view as a standalone page.")
