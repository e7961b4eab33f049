"""``tape.record``: the public, read-only view of what a tape recorded (what diagnosis, compare and traces read)."""
import numpy as np

import autodiff_viz as adv


def test_the_record_shows_the_ops_the_sources_and_the_escapes_in_order():
    w = adv.Variable([1.0, 2.0], name="w")
    c = adv.constant(3.0)
    with adv.GradientTape() as tape:
        tape.watch(c)
        h = adv.tanh(w * c)
        leaked = float(adv.sum(h))          # a value leaves the tape here
        v = adv.Variable([0.0, 0.0])
        v.assign(h)                          # and a tracked value is stored in a variable here
    rec = tape.record
    assert isinstance(rec, adv.TapeRecord)
    assert [n.rule.name for n in rec.nodes] == ["multiply", "tanh", "sum"]
    assert set(rec.watched) == {w._id, c._id}
    assert {w._id, c._id, h._id} <= rec.tracked
    assert [e.how for e in rec.escapes] == ["float()"] and leaked == float(np.sum(np.tanh([3.0, 6.0])))
    assert [(a.variable_id, a.value_id, a.how) for a in rec.assigns] == [(v._id, h._id, "assign")]
    assert rec.start_id < w._id or rec.start_id > w._id       # ids are counters: comparable with the block's
    assert rec.start_id < h._id < rec.end_id
    assert rec.serial == tape.serial and rec.persistent is False and rec.released is False


def test_the_record_is_a_view_that_follows_the_tape():
    x = adv.constant([1.0, 2.0])
    with adv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        rec = tape.record
        assert rec.nodes == [] and rec.end_id is None           # the block is open
        y = adv.exp(x)
    assert [n.out_id for n in rec.nodes] == [y._id]             # seen through the same view, no copy
    tape.reset()
    assert tape.record.nodes == [] and tape.record.resets        # a reset is kept as a moment
