"""A recording lets go of the large values a library module freed and no gradient needs (``torch/letgo.py``).

A value of at least ``letgo.RELEASE_FROM`` entries that an op inside a library module made, that nobody else holds
and that autograd did not save, lets go of its memory; a trace recomputes it by running its op again on the same
inputs (the same bits) — an op that drew random numbers (dropout) from the generator's state it ran from, so the
same draws. A value that cannot run again stays whole, or, with ``record(exact_values=False)``, is kept as
statistics. These tests check what a learner relies on: the same gradients and the same values in every figure as
a recording that keeps everything, their own tensors and random numbers untouched, the memory gone, and what the
why-zero diagnosis still says.
"""
import math

import pytest

torch = pytest.importorskip("torch")
import autodiff_viz as adv  # noqa: E402
from autodiff_viz.torch import letgo  # noqa: E402

nn = torch.nn
F = torch.nn.functional
VALUES = 10 ** 7        # value_limit: every entry of every value, to compare bit for bit


def _net():
    torch.manual_seed(0)
    # 8 × 64 × 256 = 131,072 entries per hidden value: Linear on 3-D input returns a view of its 2-D result,
    # which Dropout reads without autograd saving it; Tanh saves its output, the last Linear its input
    return nn.Sequential(nn.Linear(32, 256), nn.Dropout(0.25), nn.Tanh(), nn.Linear(256, 4))


def _step(exact_values=True, hold=False):
    net = _net()
    net.train()
    x = torch.randn(8, 64, 32, generator=torch.Generator().manual_seed(1))
    with adv.torch.record(exact_values=exact_values) as rec:
        torch.manual_seed(2)                    # the same dropout mask in every run
        if hold:
            h = net[0](x)
            out = net[3](net[2](net[1](h)))
        else:
            h = None
            out = net(x)
        loss = out.pow(2).mean()
        loss.backward()
    return net, rec, loss, out, h


def _keeping_everything(monkeypatch):
    """The recording as it was before it let anything go: every value held whole (the reference to compare with)."""
    monkeypatch.setattr(letgo, "RELEASE_FROM", 10 ** 12)


def _values(trace):
    return {n.id: n.value for n in trace.nodes if n.kind == "op"}


def _op(rec, name):
    return next(op for op in rec.ops if op.name == name)


def _not_again(monkeypatch, name="dropout"):
    """Make op ``name`` one that cannot run again, as an op drawing from a generator of its own would be
    (``generator=g``): the recording does not keep the generator's state before it."""
    before = letgo.Releases.before

    def keeping_nothing(self, op_name, index):
        before(self, op_name, index)
        if op_name == name:
            self._rng = None
    monkeypatch.setattr(letgo.Releases, "before", keeping_nothing)


def test_a_value_the_library_freed_lets_go_of_its_memory_and_a_random_one_runs_again_from_its_draws():
    net, rec, loss, out, _ = _step()
    made = _op(rec, "linear").outputs[0]
    assert isinstance(rec.freed.get(id(made)), tuple)                     # a recipe: recomputed when traced
    assert made.untyped_storage().nbytes() <= made.element_size()        # one element left, not 131,072
    assert made.shape == (8, 64, 256) and made.grad_fn is not None        # still drawn, still differentiable
    assert rec.freed[id(made)][0].rng is None                             # a linear layer draws nothing
    dropped = _op(rec, "dropout").outputs[0]
    recipe, _ = rec.freed[id(dropped)]                                    # dropout: run again from the generator's
    assert recipe.rng is not None                                         # state before it, the same mask
    assert dropped.untyped_storage().nbytes() <= dropped.element_size()
    tanh = _op(rec, "tanh").outputs[0]
    assert id(tanh) not in rec.freed                                      # autograd saved it: kept whole


def test_a_trace_draws_the_mask_again_without_moving_the_learners_random_numbers():
    net, rec, loss, out, _ = _step()
    dropped = _op(rec, "dropout").outputs[0]
    assert id(dropped) in rec.freed
    torch.manual_seed(5)
    state = torch.get_rng_state()
    node = next(n for n in rec.trace(loss, net, value_limit=VALUES).nodes if n.tensor_id == rec.tensor_id(dropped))
    assert torch.equal(torch.get_rng_state(), state)                      # the learner's next torch.rand is theirs
    torch.manual_seed(2)                                                  # the recorded step's seed, by hand
    expected = F.dropout(F.linear(torch.randn(8, 64, 32, generator=torch.Generator().manual_seed(1)),
                                  net[0].weight, net[0].bias), 0.25, training=True)
    assert (node.value.data == expected.detach().numpy()).all()
    assert ((node.value.data == 0).mean() - 0.25) ** 2 < 0.01 ** 2       # a real mask: about a quarter dropped


def test_with_exact_values_false_a_large_value_that_cannot_run_again_is_kept_as_statistics(monkeypatch):
    _not_again(monkeypatch)
    net, rec, loss, out, _ = _step(exact_values=False)
    assert isinstance(rec.freed.get(id(_op(rec, "linear").outputs[0])), tuple)
    kept = rec.freed.get(id(_op(rec, "dropout").outputs[0]))
    assert kept is not None and kept.stats and kept.data is None
    net2, rec2, *_ = _step()                                              # the default keeps it whole
    dropped = _op(rec2, "dropout").outputs[0]
    assert id(dropped) not in rec2.freed and dropped.untyped_storage().nbytes() == dropped.numel() * 4


def _dropout_in_place(exact):
    """``(rec, loss, net, h, expected)``: a step of a network whose ``Dropout(inplace=True)`` writes its mask into the
    linear layer's output ``h``, which nobody saves (Tanh keeps its own output); ``expected``: ``h`` after the write."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 256), nn.Dropout(0.5, inplace=True), nn.Tanh(), nn.Linear(256, 4))
    x = torch.randn(512, 32)
    torch.manual_seed(2)
    expected = F.dropout(F.linear(x, net[0].weight, net[0].bias), 0.5, training=True).detach()
    with adv.torch.record(exact_values=exact) as rec:
        torch.manual_seed(2)
        loss = net(x).pow(2).mean()
        loss.backward()
    return rec, loss, net, _op(rec, "linear").outputs[0], expected


def test_a_value_written_in_place_after_its_op_ran_is_made_again_by_both_ops():
    """Running the linear layer again alone would show the values before the dropout's mask. The trace runs the
    linear layer, then the dropout on what it made, from the generator's state before it: the values the forward
    pass left — with and without ``exact_values``."""
    for exact in (True, False):
        rec, loss, net, h, expected = _dropout_in_place(exact)
        recipe, _ = rec.freed[id(h)]
        assert [rec.ops[r.index].name for r in (recipe,) + recipe.then] == ["linear", "dropout"], exact
        assert h.untyped_storage().nbytes() <= h.element_size()
        shown = [n.value.data for n in rec.trace(loss, net, value_limit=VALUES).nodes
                 if n.tensor_id == rec.tensor_id(h)]
        assert shown and all((v == expected.numpy()).all() for v in shown), exact


def test_a_value_written_in_place_by_an_op_that_cannot_run_again_stays_whole(monkeypatch):
    _not_again(monkeypatch)
    for exact in (True, False):
        rec, loss, net, h, expected = _dropout_in_place(exact)
        kept = rec.freed.get(id(h))
        assert not isinstance(kept, tuple), exact                         # never the linear layer's output alone
        if exact:
            assert kept is None and torch.equal(h, expected)
        else:
            assert kept.stats["mean"] == pytest.approx(float(expected.mean()), rel=1e-5, abs=1e-7)
            assert kept.stats["min"] == pytest.approx(float(expected.min()), rel=1e-6)


def test_recomputed_values_and_gradients_are_those_of_the_recording_that_keeps_everything(monkeypatch):
    net, rec, loss, out, _ = _step()
    assert rec.freed
    tr = rec.trace(loss, net, value_limit=VALUES)
    _keeping_everything(monkeypatch)
    net2, rec2, loss2, out2, _ = _step()
    assert not rec2.freed
    assert torch.equal(loss, loss2) and torch.equal(out, out2)
    for (name, p), p2 in zip(net.named_parameters(), net2.parameters()):
        assert torch.equal(p.grad, p2.grad), name                        # bit for bit
    tr2 = rec2.trace(loss2, net2, value_limit=VALUES)
    assert [n.title for n in tr.nodes] == [n.title for n in tr2.nodes]
    for n, n2 in zip(tr.nodes, tr2.nodes):
        assert (n.grad is None) == (n2.grad is None), n.title
        if n.grad is not None:
            assert n.grad.stats == n2.grad.stats, n.title                   # the same ḡ on every node
    v, v2 = _values(tr), _values(tr2)
    for k in v:
        assert v[k].data is not None and (v[k].data == v2[k].data).all(), k   # the same bits, every entry
    assert not any("freed" in note for note in tr.notes)


def test_a_value_the_learner_holds_is_never_touched():
    net, rec, loss, out, h = _step(hold=True)
    assert id(h) not in rec.freed
    again = net[0](torch.randn(8, 64, 32, generator=torch.Generator().manual_seed(1)))
    assert torch.equal(h, again)
    assert out.untyped_storage().nbytes() == out.numel() * out.element_size()


def test_a_trace_asked_for_all_values_says_which_it_kept_as_statistics_and_how_to_keep_them(monkeypatch):
    _not_again(monkeypatch)
    net, rec, loss, *_ = _step(exact_values=False)
    full = rec.trace(loss, net, value_limit=VALUES)
    assert any("exact_values=True" in note for note in full.notes)
    assert not any("exact_values" in note for note in rec.trace(loss, net).notes)   # the default limit: statistics
    net2, rec2, loss2, *_ = _step()
    full2 = rec2.trace(loss2, net2, value_limit=VALUES)
    assert not any("exact_values" in note for note in full2.notes)
    assert all(n.value.data is not None for n in full2.nodes if n.kind == "op")


def test_values_the_learners_own_lines_make_stay_whole():
    torch.manual_seed(0)
    w = torch.randn(32, 256, requires_grad=True)
    x = torch.randn(512, 32)
    with adv.torch.record(exact_values=False) as rec:
        loss = (x @ w).relu().sum()         # x @ w: 131,072 entries, made by the learner's line, then freed
        loss.backward()
    assert not rec.freed
    mm = next(op for op in rec.ops if op.name in ("matmul", "__matmul__"))
    assert mm.outputs[0].untyped_storage().nbytes() == 512 * 256 * 4


def test_an_op_that_draws_random_numbers_runs_again_on_the_same_draws_whatever_its_name():
    """RReLU draws a random slope per entry in training: it runs again from the generator's state it ran from, and
    the trace shows the slopes the forward pass drew (seen by a forward hook). Tanh after it saves its own output,
    so RReLU's is let go of."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 256), nn.RReLU(), nn.Tanh(), nn.Linear(256, 4))
    seen = []
    net[1].register_forward_hook(lambda m, i, o: seen.append(o.clone().detach()))
    with adv.torch.record() as rec:
        loss = net(torch.randn(512, 32)).pow(2).mean()
        loss.backward()
    rrelu = next(op for op in rec.ops if "rrelu" in op.name)
    kept = rec.freed.get(id(rrelu.outputs[0]))
    assert isinstance(kept, tuple) and kept[0].rng is not None              # let go of, with its draws
    node = next(n for n in rec.trace(loss, net, value_limit=VALUES).nodes if n.op and "rrelu" in n.op)
    assert (node.value.data == seen[0].numpy()).all()


def _frozen_first_layer():
    """A first layer whose weights are frozen: its input gets a gradient, but autograd saves only the weights (for
    ḡ_x = ḡ W), so a write to the input breaks nothing autograd needs — only the recomputation of the layer's
    output, which the recording let go of."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
    net[0].requires_grad_(False)
    x0 = torch.randn(512, 32, requires_grad=True)    # its output: 512 × 256 = 131,072 entries
    return net, x0


def test_a_write_to_an_input_puts_the_values_computed_from_it_back_first():
    """``x.mul_(2)`` after the model read ``x``: the first layer's output, let go of, is computed again from ``x``
    before the write and kept whole, so the trace shows what the forward pass computed."""
    net, x0 = _frozen_first_layer()
    expected = F.linear(x0, net[0].weight, net[0].bias).detach()
    with adv.torch.record() as rec:
        x = x0 * 1.0
        out = net(x)
        made = _op(rec, "linear").outputs[0]
        assert isinstance(rec.freed.get(id(made)), tuple)
        x.mul_(2)
        loss = out.pow(2).mean()
        loss.backward()
    assert id(made) not in rec.freed
    assert made.untyped_storage().nbytes() == made.numel() * 4
    node = next(n for n in rec.trace(loss, net, value_limit=VALUES).nodes if n.tensor_id == rec.tensor_id(made))
    assert (node.value.data == expected.numpy()).all()


def test_a_write_after_the_recording_is_said_not_guessed():
    net, x0 = _frozen_first_layer()
    with adv.torch.record() as rec:
        x = x0 * 1.0
        loss = net(x).pow(2).mean()
        loss.backward()
    with torch.no_grad():
        x.mul_(2)                           # outside the recording: nothing can be put back
    tr = rec.trace(loss, net, value_limit=VALUES)
    made = _op(rec, "linear").outputs[0]
    node = next(n for n in tr.nodes if n.tensor_id == rec.tensor_id(made))
    assert node.value.data is None and node.value.preview is None and math.isnan(node.value.stats["mean"])
    assert any("shown by shape only" in note and "before that change" in note for note in tr.notes)
    assert tr.node(tr.target).grad is not None


def test_a_recorded_training_step_recomputes_with_the_weights_before_the_update():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    x = torch.randn(512, 32)
    expected = F.linear(x, net[0].weight, net[0].bias).detach()
    with adv.torch.record() as rec:
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
    made = _op(rec, "linear").outputs[0]
    assert isinstance(rec.freed.get(id(made)), tuple)
    node = next(n for n in rec.trace(loss, net, value_limit=VALUES).nodes if n.tensor_id == rec.tensor_id(made))
    assert (node.value.data == expected.numpy()).all()
    assert not torch.equal(F.linear(x, net[0].weight, net[0].bias), expected)      # the model did update


def test_the_diagnosis_counts_dead_units_from_the_recomputed_input():
    """The why-zero diagnosis reads a ReLU's input, which autograd did not save and the recording let go of: it is
    computed again, and the words are those of the recording that keeps everything."""
    from autodiff_viz.diagnosis import flow

    def words(**kw):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
        with torch.no_grad():
            net[0].bias[::2] = -100.0
            net[0].weight[::2] = 0.0
        with adv.torch.record(**kw) as rec:
            loss = net(torch.randn(8, 64, 32)).pow(2).mean()
            loss.backward()
        return rec, str(flow.explain_recording(rec, loss, net[0].weight))

    rec, kept = words()
    assert rec.freed and "128 of the 256 units" in kept and "units 0, 2, 4," in kept
    rec, let_go = words(exact_values=False)
    assert let_go == kept


def test_with_values_as_statistics_the_diagnosis_still_counts_which_units_are_dead(monkeypatch):
    """Dropout between the layer and its ReLU, made an op that cannot run again (as one drawing from a generator
    of its own): ``exact_values=False`` keeps its output as statistics; the diagnosis then reads the ReLU's kept
    output — ``y = 0`` exactly where ``x ≤ 0`` — and the input's kept maximum: the same words as the default
    recording."""
    from autodiff_viz.diagnosis import flow
    _not_again(monkeypatch)

    def words(**kw):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(32, 256), nn.Dropout(0.25), nn.ReLU(), nn.Linear(256, 4))
        with torch.no_grad():
            net[0].bias[::2] = -100.0
            net[0].weight[::2] = 0.0
        with adv.torch.record(**kw) as rec:
            loss = net(torch.randn(8, 64, 32)).pow(2).mean()
            loss.backward()
        return rec, str(flow.explain_recording(rec, loss, net[0].weight))

    rec, kept = words()
    assert "128 of the 256 units" in kept and "units 0, 2, 4," in kept
    rec, let_go = words(exact_values=False)
    assert any(not isinstance(v, tuple) for v in rec.freed.values())
    assert let_go == kept


def test_a_value_computed_from_a_weight_kept_as_statistics_is_kept_as_statistics_too():
    """A capture of the backward pass lets the recording keep a large weight the update writes as its statistics
    (``capture.values_before``): the value the layer computed from that weight, let go of, can no longer be run
    again after the update, so it is summarised just before — not put back whole, which would cost the memory the
    capture saved."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2048, 512), nn.ReLU(), nn.Linear(512, 4))    # 1,048,576-entry weight
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    x = torch.randn(128, 2048)
    expected = F.linear(x, net[0].weight, net[0].bias).detach()             # 128 × 512 = 65,536 entries
    with adv.torch.record() as rec:
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
    assert rec._captures, "the recording kept the backward pass (the weights outweigh the values)"
    made = _op(rec, "linear").outputs[0]
    kept = rec.freed.get(id(made))
    assert kept is not None and not isinstance(kept, tuple) and kept.data is None
    assert made.untyped_storage().nbytes() <= made.element_size()
    for stat, want in (("min", expected.min()), ("max", expected.max()), ("mean", expected.mean())):
        assert kept.stats[stat] == pytest.approx(float(want), rel=1e-5, abs=1e-6), stat
    node = next(n for n in rec.trace(loss, net).nodes if n.tensor_id == rec.tensor_id(made))
    assert node.value.stats == kept.stats


def _relu_step():
    """``(net, rec, loss)``: a two-layer ReLU network's loss and backward pass recorded; the first layer's output
    (512 × 256 entries), read by the ReLU only, is let go of."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
    with adv.torch.record() as rec:
        loss = net(torch.randn(512, 32)).pow(2).mean()
        loss.backward()
    return net, rec, loss


def _dropped_recording():
    """A recording made and dropped inside a function (whose frame, and its locals, end with it)."""
    import weakref
    _, rec, _ = _relu_step()
    assert rec.freed
    return weakref.ref(rec)


def test_a_recording_dropped_frees_what_it_held_at_once():
    """What a recording keeps for letting go holds no reference back to it: dropping the recording frees its values
    without waiting for Python's cycle collector (a training loop that records every step would otherwise pile
    them up)."""
    import gc
    gc.disable()
    try:
        assert _dropped_recording()() is None
    finally:
        gc.enable()


def test_an_op_that_cannot_run_again_leaves_its_value_shown_by_shape_and_the_trace_whole():
    net, rec, loss = _relu_step()
    made = _op(rec, "linear").outputs[0]
    recipe, _ = rec.freed[id(made)]

    def fails(*args, **kwargs):
        raise RuntimeError("this op cannot run again")
    recipe.func = fails
    tr = rec.trace(loss, net, value_limit=VALUES)
    node = next(n for n in tr.nodes if n.tensor_id == rec.tensor_id(made))
    assert node.value.data is None and node.grad is not None                # the gradient is still autograd's
    assert any("failed when run again" in note for note in tr.notes)
