"""Trace JSON: round trips, explicit NaN/Inf, and clear errors for foreign or broken files."""
import json

import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz.records.traces.encoding import TraceFormatError
from autodiff_viz.records.traces.model import SCHEMA


def _trace():
    x = adv.Variable([0.5, -1.0, 2.0], name="x")
    big = adv.Variable(np.linspace(0, 1, 300), name="big")
    with adv.GradientTape() as tape:
        with adv.name_scope("block"):
            h = adv.tanh(x) * x
        y = adv.sum(h) + adv.mean(big) + adv.argmax(x).astype("float64") + adv.sum(adv.where(x > 0.0, x, 0.0))
    return tape.trace(y).with_marks([("n1", "look here")])


def _strict_loads(text):
    def reject(name):
        raise AssertionError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=reject)


def test_round_trip_is_exact():
    tr = _trace()
    text = tr.to_json()
    back = adv.Trace.from_json(text)
    assert back.to_json() == text
    assert [n.id for n in back.nodes] == [n.id for n in tr.nodes]
    for a, b in zip(tr.nodes, back.nodes):
        assert (a.kind, a.op, a.name, a.scope, a.shape, a.dtype, a.on_path, a.location, a.params) == \
               (b.kind, b.op, b.name, b.scope, b.shape, b.dtype, b.on_path, b.location, b.params)
        if a.value.data is not None:
            np.testing.assert_array_equal(a.value.data, b.value.data)
            assert a.value.data.dtype == b.value.data.dtype
        assert a.value.stats == b.value.stats
    for a, b in zip(tr.edges, back.edges):
        assert (a.src, a.dst, a.factor, a.differentiable, a.no_grad_reason) == \
               (b.src, b.dst, b.factor, b.differentiable, b.no_grad_reason)
        if a.jacobian is not None:
            np.testing.assert_array_equal(a.jacobian, b.jacobian)
    assert back.marks == tr.marks and back.steps == tr.steps and back.target == tr.target
    assert back.node_id_of(tr.node("n1").tensor_id) == "n1"
    assert back.to_dot("both") == tr.to_dot("both")


def test_json_is_standard_and_versioned():
    doc = _strict_loads(_trace().to_json())
    assert doc["schema"] == SCHEMA and doc["version"] == 3
    big = next(n for n in doc["nodes"] if n.get("name") == "big")
    assert "data" not in big["value"]
    assert big["value"]["stats"] == pytest.approx([0.0, 0.5, 1.0, np.linalg.norm(np.linspace(0, 1, 300))])


def test_a_version_1_file_still_reads():
    """Version 1 wrote every field of every node and edge; version 2's summary leaves defaults out and shares
    locations. A file written by the older version reads back to the same trace."""
    tr = _trace()
    doc = json.loads(tr.to_json(values="full"))
    doc["version"] = 1
    back = adv.Trace.from_json(json.dumps(doc))
    assert back.to_json(values="full") == tr.to_json(values="full")
    assert back.to_dot("both") == tr.to_dot("both")


def test_summary_json_shares_locations_and_leaves_defaults_out():
    """A deep model's nodes mostly share the line that ran it and carry no label: the summary writes each line
    once (``locations``) and a node's index into it, and leaves out fields at their defaults."""
    tr = _trace()
    doc = json.loads(tr.to_json())
    located = [n for n in tr.nodes if n.location is not None]
    assert located and len(doc["locations"]) == len({(n.location.file, n.location.line) for n in located})
    for n, d in zip(tr.nodes, doc["nodes"]):
        if n.location is not None:
            assert doc["locations"][d["location"]]["line"] == n.location.line
        assert "label" in d or n.label is None
        assert "on_path" in d or not n.on_path


def test_nan_and_inf_are_encoded_explicitly():
    x = adv.Variable([0.0, 1.0, -1.0], name="x")
    with adv.GradientTape() as tape, np.errstate(divide="ignore", invalid="ignore"):
        y = adv.log(x) * adv.constant([1.0, np.nan, 1.0])
    tr = tape.trace(y)
    text = tr.to_json()
    doc = _strict_loads(text)
    log_node = next(n for n in doc["nodes"] if n["op"] == "log")
    assert log_node["value"]["data"] == ["-inf", 0.0, "nan"]
    back = adv.Trace.from_json(text)
    np.testing.assert_array_equal(back.node(log_node["id"]).value.data, [-np.inf, 0.0, np.nan])
    assert back.to_json() == text


def test_a_version_2_file_still_reads():
    """Version 2's summary wrote statistics as an object and every text inline; it reads as version 3 does."""
    tr = _trace()
    doc = json.loads(tr.to_json())
    texts = doc.pop("texts")
    for n in doc["nodes"]:
        n["scope"] = texts[n["scope"]]
        for key in ("value", "grad"):
            if isinstance(n.get(key, {}).get("stats"), list):
                n[key]["stats"] = dict(zip(("min", "mean", "max", "norm"), n[key]["stats"]))
    for e in doc["edges"]:
        for key in ("input_name", "factor", "no_grad_reason", "formula"):
            if key in e:
                e[key] = texts[e[key]]
    doc["version"] = 2
    back = adv.Trace.from_json(json.dumps(doc))
    assert back.to_json() == tr.to_json()


def test_summary_json_shares_texts_and_computes_the_statistics_of_small_arrays():
    """A deep model repeats a few dozen scopes and chain-rule texts over thousands of nodes and edges: each is
    written once (``texts``). An array written in full carries no statistics: the reader computes them."""
    tr = _trace()
    doc = json.loads(tr.to_json())
    assert len(doc["texts"]) == len(set(doc["texts"]))
    assert doc["texts"][doc["nodes"][-1]["scope"]] == tr.nodes[-1].scope
    x = doc["nodes"][0]
    assert "data" in x["value"] and "stats" not in x["value"] and "id" not in doc["edges"][0]
    back = adv.Trace.from_json(json.dumps(doc))
    assert back.nodes[0].value.stats == tr.nodes[0].value.stats and back.edges[0].id == tr.edges[0].id


def _doc():
    return json.loads(_trace().to_json())


def _big(doc):
    return next(n for n in doc["nodes"] if n.get("name") == "big")


def _broken(edit):
    doc = _doc()
    edit(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("text, field", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"nodes": []}', "schema"),
    (_broken(lambda d: d.update(schema="something.else")), "schema"),
    (_broken(lambda d: d.update(version=99)), "version"),
    (_broken(lambda d: d.pop("nodes")), "nodes: missing"),
    (_broken(lambda d: d.update(nodes={})), "nodes: expected list"),
    (_broken(lambda d: d["nodes"][1].update(kind="wizard")), "nodes[1].kind"),
    (_broken(lambda d: d["nodes"][1]["value"].update(shape="abc")), "nodes[1].value.shape"),
    (_broken(lambda d: d["nodes"][1]["value"].update(shape=[-1])), "nodes[1].value.shape[0]"),
    (_broken(lambda d: d["nodes"][0]["value"].update(data=[1.0])), "nodes[0].value.data"),
    (_broken(lambda d: d["nodes"][0]["value"].update(data=[1.0, "x", 2.0])), "nodes[0].value.data[1]"),
    (_broken(lambda d: d["nodes"][0]["value"].update(dtype="float99")), "nodes[0].value.dtype"),
    (_broken(lambda d: _big(d)["value"]["stats"].__setitem__(0, None)), "value.stats[0]"),
    (_broken(lambda d: _big(d)["value"]["stats"].pop()), "value.stats: expected 4 numbers"),
    (_broken(lambda d: d["edges"][0].update(factor=999)), "edges[0].factor: 999 is not an index"),
    (_broken(lambda d: d["nodes"][2].update(on_path="yes")), "nodes[2].on_path"),
    (_broken(lambda d: d["nodes"][2].update(location=99)), "nodes[2].location"),
    (_broken(lambda d: d["nodes"][2].pop("tensor_id")), "nodes[2].tensor_id: missing"),
    (_broken(lambda d: d["edges"][0].update(src="n404")), "edges[0].src"),
    (_broken(lambda d: d["edges"][1].update(jacobian=[[1.0, "?"]])), "edges[1].jacobian"),
    (_broken(lambda d: d.update(target="n404")), "target"),
    (_broken(lambda d: d["marks"][0].pop("reason")), "marks[0].reason"),
    (_broken(lambda d: d.update(steps=[3])), "steps[0]"),
])
def test_malformed_json_names_the_field(text, field):
    with pytest.raises(TraceFormatError) as info:
        adv.Trace.from_json(text)
    assert str(info.value).startswith(field) or field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_from_json_wants_text():
    with pytest.raises(TypeError, match="JSON text"):
        adv.Trace.from_json({"schema": SCHEMA})


def test_save_formats(tmp_path):
    tr = _trace()
    back = adv.Trace.from_json(open(tr.save(tmp_path / "t.json"), encoding="utf-8").read())
    assert back.to_json() == tr.to_json()
    assert open(tr.save(tmp_path / "t.dot"), encoding="utf-8").read() == tr.to_dot("both")
    assert open(tr.save(tmp_path / "t.svg"), encoding="utf-8").read().startswith("<svg")
    page = open(tr.save(tmp_path / "t.html"), encoding="utf-8").read()
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace("http://www.w3.org", "")
    with pytest.raises(ValueError, match=r"\.svg, \.dot, \.json or \.html"):
        tr.save(tmp_path / "t.png")


def test_json_summarises_large_arrays_and_keeps_every_value_on_request():
    """Issue 42: a ResNet's trace was megabytes of numbers; arrays above 16 entries are now written as shape,
    dtype, statistics and a preview (five significant digits, to read); ``values="full"`` writes every value the
    trace holds."""
    rng = np.random.default_rng(0)
    W = adv.Variable(rng.normal(size=(20, 30)).astype("float32"), name="W")
    x = adv.constant(rng.normal(size=(4, 20)).astype("float32"), name="x")
    with adv.GradientTape() as tape:
        loss = adv.mean(adv.tanh(x @ W) ** 2)
    tr = tape.trace(loss)
    summary, full = tr.to_json(), tr.to_json(values="full")
    assert len(summary) * 4 < len(full)
    node = json.loads(summary)["nodes"][int(tr.node_id_of(W)[1:])]
    assert "data" not in node["value"] and len(node["value"]["preview"]) == 8
    assert node["value"]["preview"][0] == float(f"{W.numpy().ravel()[0]:.5g}")
    back = adv.Trace.from_json(summary)
    w = back.node(tr.node_id_of(W))
    assert w.value.data is None and w.value.stats["norm"] == pytest.approx(np.linalg.norm(W.numpy()), rel=1e-6)
    assert all(e.upstream is not None for e in back.edges if e.on_path)           # ḡ_y written once, on its op
    again = adv.Trace.from_json(full)
    assert np.array_equal(again.node(tr.node_id_of(x)).value.data, x.numpy())    # every value, exactly
    with pytest.raises(ValueError, match="'summary' or 'full'"):
        tr.to_json(values="all")
