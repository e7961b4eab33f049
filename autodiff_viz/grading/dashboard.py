"""The class view: read a folder of grading records, count who got each gradient right and the common mistakes.

    >>> from autodiff_viz.grading import dashboard
    >>> dashboard.write("grading_records/mlp", "mlp_dashboard.html")     # one self-contained page

The page answers what a teacher asks after a deadline: how many got each
gradient right; which mistakes were most common, by kind and by node
("41% — ``wrong_local_factor(tanh)`` at ``z``: the local derivative of
tanh is wrong"); and, for each common mistake, one **anonymised** example:
the backward graph with that node marked, drawn again from the record's
trace (no student's name, no student's code), ready for a lecture slide.

Records are untrusted (a student's code ran in the process that wrote
them): they are read as JSON only (:func:`~autodiff_viz.grading.records.read_records`),
every string from them is escaped, a picture is redrawn from the trace's
data — never an SVG copied from a record — and the page runs no script.
"""
from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path

from ..records.compare import STATUSES, Comparison, Row
from ..records.mistakes import Kind
from ..records.traces.model import Trace
from .records import read_records

_CELL = "border:1px solid #bbb;padding:3px 8px;text-align:left"
_HEAD = _CELL + ";background:#eee"


def _kind(text: str) -> Kind:
    name, _, rest = str(text).partition("(")
    return Kind(name, tuple(a.strip() for a in rest.rstrip(")").split(",")) if rest else ())


def _phrase(kind: str) -> str:
    """The kind in words (an endless loop stopped by the check's time limit is not an exception of the code's)."""
    if kind == "error(timeout)":
        return "the code did not return in time (an endless loop?)"
    return _kind(kind).phrase


def summary(records: list, label: str | None = None) -> dict:
    """The counts behind the page.

    Returns ``{"label", "students", "all_right", "per_gradient": {name: [right, graded]},
    "first_kinds": Counter(kind), "mistakes": [(count, kind, node)], "examples": {(kind, node): check},
    "no_gradients": int}`` (``no_gradients``: submissions with no row, whose code raised or returned none);
    ``mistakes`` counts students per root mistake (kind at node), most common first.
    """
    labels = Counter(k for r in records for k in r["checks"])
    if label is None:
        if not labels:
            return {"label": None, "students": 0, "all_right": 0, "per_gradient": {}, "first_kinds": Counter(),
                    "mistakes": [], "examples": {}, "no_gradients": 0}
        label = labels.most_common(1)[0][0]
    per_gradient: dict = {}
    first_kinds: Counter = Counter()
    mistakes: Counter = Counter()
    examples: dict = {}
    students = all_right = no_gradients = 0
    for rec in records:
        check = rec["checks"].get(label)
        if check is None:
            continue
        students += 1
        if check.get("ok") is True:
            all_right += 1
        else:
            first_kinds[str(check.get("first_kind"))] += 1
        rows = check.get("rows") or []
        seen = set()
        for row in rows:
            name = row["name"]
            right, graded = per_gradient.get(name, [0, 0])
            per_gradient[name] = [right + (row["kind"] == "correct"), graded + 1]
            if row.get("root") is True and (row["kind"], name) not in seen:
                seen.add((row["kind"], name))
                mistakes[(row["kind"], name)] += 1
                examples.setdefault((row["kind"], name), check)
        if not rows:
            no_gradients += 1
            if check.get("error_kind"):
                mistakes[(str(check["error_kind"]), "—")] += 1
    ranked = sorted(((c, k, n) for (k, n), c in mistakes.items()), key=lambda t: (-t[0], t[1], t[2]))
    return {"label": label, "students": students, "all_right": all_right, "per_gradient": per_gradient,
            "first_kinds": first_kinds, "mistakes": ranked, "examples": examples, "no_gradients": no_gradients}


def _no_rows(s: dict) -> str:
    """A sentence on the submissions that count in no gradient's row (their code raised, or returned no gradients)."""
    none = s.get("no_gradients", 0)
    if not none:
        return ""
    return (f" {none} returned no gradients to compare (an error, an endless loop, or the wrong number of "
            "values): they count in no gradient's row below.")


def _example_picture(check: dict) -> str:
    """The marked backward graph of one record, redrawn from its trace data (empty when there is none)."""
    from .feedback import fit_svg
    trace_data = check.get("trace")
    if not isinstance(trace_data, dict):
        return ""
    try:
        trace = Trace.from_json(json.dumps(trace_data))
        ids = {n.id for n in trace.nodes}
        rows = [Row(str(r["name"]), r.get("node") if r.get("node") in ids else None,
                    r["status"] if r.get("status") in STATUSES else "wrong", (), (), float("nan"), float("nan"), "")
                for r in check.get("rows", [])]
        return fit_svg(Comparison(rows, trace).to_svg("backward"))
    except Exception as exc:     # a record that does not draw costs its picture, not the page
        return f"<p style='color:#8a4500'>(no picture: {html.escape(type(exc).__name__)})</p>"


def page(records: list, label: str | None = None, title: str = "Backprop assignment: the class view",
         examples: int = 6, needs_help: bool = True) -> str:
    """The dashboard as one self-contained HTML page (inline styles and SVG, no script)."""
    s = summary(records, label)
    esc = html.escape
    n = max(s["students"], 1)
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title></head>"
           "<body style='font-family:sans-serif;max-width:1000px;margin:16px auto;padding:0 12px'>",
           f"<h1 style='font-size:22px'>{esc(title)}</h1>",
           f"<p id='overview'>Graded: <b>{s['students']}</b> submissions of <code>{esc(str(s['label']))}</code>; "
           f"all gradients right: <b>{s['all_right']}</b> ({100 * s['all_right'] / n:.0f}%).{_no_rows(s)}</p>",
           "<h2 style='font-size:18px'>Each gradient</h2>",
           "<table id='per-gradient' style='border-collapse:collapse'><thead><tr>"
           + "".join(f"<th style='{_HEAD}'>{h}</th>" for h in ("gradient", "right", "of", "share"))
           + "</tr></thead><tbody>"]
    for name, (right, graded) in s["per_gradient"].items():
        out.append(f"<tr><td style='{_CELL}'><code>{esc(name)}</code></td><td style='{_CELL}'>{right}</td>"
                   f"<td style='{_CELL}'>{graded}</td>"
                   f"<td style='{_CELL}'>{100 * right / max(graded, 1):.0f}%</td></tr>")
    out.append("</tbody></table><h2 style='font-size:18px'>The most common mistakes</h2><ol id='mistakes'>")
    for count, kind, node in s["mistakes"]:
        where = "" if node == "—" else f" at <code>{esc(node)}</code>"
        out.append(f"<li><b>{100 * count / n:.0f}%</b> ({count}) — <code>{esc(kind)}</code>{where}: "
                   f"{esc(_phrase(kind))}</li>")
    out.append("</ol><h2 style='font-size:18px'>One example of each (anonymised)</h2>")
    drawn = 0
    for count, kind, node in s["mistakes"]:
        picture = _example_picture(s["examples"].get((kind, node), {})) if drawn < examples else ""
        if picture:
            drawn += 1
            out.append(f"<figure style='margin:12px 0;border:1px solid #ddd;padding:6px'><figcaption>"
                       f"<code>{esc(kind)}</code> at <code>{esc(node)}</code> "
                       f"({count} student{'' if count == 1 else 's'})</figcaption>"
                       f"<div style='max-width:100%;overflow:hidden'>{picture}</div></figure>")
    if needs_help:
        out.append("<h2 style='font-size:18px'>Who to help first</h2><table id='students' "
                   f"style='border-collapse:collapse'><thead><tr><th style='{_HEAD}'>student</th>"
                   f"<th style='{_HEAD}'>first mistake</th><th style='{_HEAD}'>at</th></tr></thead><tbody>")
        for rec in records:
            check = rec["checks"].get(s["label"])
            if check is None or check.get("ok") is True:
                continue
            out.append(f"<tr><td style='{_CELL}'>{esc(rec['student'])}</td><td style='{_CELL}'>"
                       f"<code>{esc(str(check.get('first_kind')))}</code></td>"
                       f"<td style='{_CELL}'>{esc(str(check.get('first_wrong') or '—'))}</td></tr>")
        out.append("</tbody></table>")
    out.append("</body></html>")
    return "".join(out)


def write(folder, path, label: str | None = None, **kwargs) -> Path:
    """Read every record under ``folder`` and write the dashboard page to ``path``; the path."""
    path = Path(path)
    path.write_text(page(read_records(folder), label, **kwargs), encoding="utf-8")
    return path


class Dashboard:
    """The dashboard in a notebook: ``Dashboard("grading_records/mlp")`` displays the page."""

    def __init__(self, folder, label: str | None = None, **kwargs):
        self.records = read_records(folder)
        self.label, self.kwargs = label, kwargs

    @property
    def summary(self) -> dict:
        return summary(self.records, self.label)

    def _repr_html_(self):
        body = page(self.records, self.label, **self.kwargs)
        return body[body.find("<body"):].replace("<body", "<div", 1).replace("</body></html>", "</div>")
