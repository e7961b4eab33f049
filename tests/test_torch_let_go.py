"""``record(exact_values=False)`` lets go of the large values a library module freed and no gradient needs.

``Recording._let_go``: a value of more than 65,536 entries that a library module computed, no longer holds, and
autograd did not save is kept as its statistics; everything a gradient depends on, and every value the learner
holds, stays whole. These tests check what a learner relies on: the same gradients, the same figures' values,
their own tensors untouched, the full values with the default ``record()``, and what the why-zero diagnosis
still says.
"""
import math

import pytest

torch = pytest.importorskip("torch")
import autodiff_viz as adv  # noqa: E402

nn = torch.nn


def _net():
    torch.manual_seed(0)
    # 8 × 64 × 256 = 131,072 entries per hidden value: Linear on 3-D input returns a view of its 2-D result,
    # which Dropout reads without autograd saving it; Tanh saves its output, the last Linear its input
    return nn.Sequential(nn.Linear(32, 256), nn.Dropout(0.25), nn.Tanh(), nn.Linear(256, 4))


def _step(exact_values=False, hold=False):
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


def _values(trace):
    return {n.label or n.title: n.value for n in trace.nodes if n.kind == "op"}


def test_a_value_the_library_freed_is_kept_as_statistics_and_its_memory_goes():
    net, rec, loss, out, _ = _step()
    lin = next(op for op in rec.ops if op.name == "linear")
    made = lin.outputs[0]
    assert id(made) in rec.freed
    assert made.untyped_storage().nbytes() <= made.element_size()      # one element left, not 131,072
    assert made.shape == (8, 64, 256) and made.grad_fn is not None       # still drawn, still differentiable
    drop = next(op for op in rec.ops if op.name == "dropout")
    assert id(drop.outputs[0]) in rec.freed
    tanh = next(op for op in rec.ops if op.name == "tanh")
    assert id(tanh.outputs[0]) not in rec.freed                          # autograd saved it: kept whole
    assert tanh.outputs[0].untyped_storage().nbytes() == tanh.outputs[0].numel() * 4


def test_gradients_and_shown_statistics_match_the_recording_that_keeps_everything():
    net, rec, loss, out, _ = _step()
    net2, rec2, loss2, out2, _ = _step(exact_values=True)
    assert not rec2.freed
    assert torch.equal(loss, loss2) and torch.equal(out, out2)
    for (name, p), p2 in zip(net.named_parameters(), net2.parameters()):
        assert torch.equal(p.grad, p2.grad), name                        # bit for bit
    tr, tr2 = rec.trace(loss, net), rec2.trace(loss2, net2)
    assert len(tr.nodes) == len(tr2.nodes)
    for n, n2 in zip(tr.nodes, tr2.nodes):
        assert (n.grad is None) == (n2.grad is None), n.title
        if n.grad is not None:
            assert n.grad.stats == n2.grad.stats, n.title                   # the same ḡ on every node
    v, v2 = _values(tr), _values(tr2)
    assert v.keys() == v2.keys()
    for k in v:
        for s in ("min", "mean", "max", "norm"):
            assert math.isclose(v[k].stats[s], v2[k].stats[s], rel_tol=1e-5, abs_tol=1e-6), (k, s)


def test_a_value_the_learner_holds_is_never_touched():
    net, rec, loss, out, h = _step(hold=True)
    assert id(h) not in rec.freed
    again = net[0](torch.randn(8, 64, 32, generator=torch.Generator().manual_seed(1)))
    assert torch.equal(h, again)
    assert out.untyped_storage().nbytes() == out.numel() * out.element_size()


def test_a_trace_asked_for_all_values_says_which_it_kept_as_statistics_and_how_to_keep_them():
    net, rec, loss, *_ = _step()
    full = rec.trace(loss, net, value_limit=10**6)
    assert any("exact_values=True" in note for note in full.notes)
    assert not any("exact_values" in note for note in rec.trace(loss, net).notes)   # the default limit: statistics
    net2, rec2, loss2, *_ = _step(exact_values=True)
    full2 = rec2.trace(loss2, net2, value_limit=10**6)
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


def test_the_default_recording_keeps_every_value_and_the_diagnosis_counts_dead_units():
    """The default keeps every value: the why-zero diagnosis reads a ReLU's input and counts its dead units. With
    ``exact_values=False`` the input (autograd saved the ReLU's output, not it) is let go, and the diagnosis reads
    the output instead — ``y = 0`` exactly where ``x ≤ 0`` — and the input's kept maximum: the same words."""
    from autodiff_viz.diagnosis import flow

    def dead(**kw):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(32, 256), nn.Dropout(0.25), nn.ReLU(), nn.Linear(256, 4))
        with torch.no_grad():
            net[0].bias.fill_(-100.0)          # every pre-activation negative: a dead layer
        with adv.torch.record(**kw) as rec:
            loss = net(torch.randn(8, 64, 32)).pow(2).mean()
            loss.backward()
        return rec, str(flow.explain_recording(rec, loss, net[0].weight))

    rec, words = dead()
    assert not rec.freed
    assert "All 256 units" in words and "dead ReLU" in words
    rec, kept_words = dead(exact_values=False)
    assert rec.freed
    assert kept_words == words


def test_with_values_let_go_the_diagnosis_still_counts_which_units_are_dead():
    """Half a layer dead (every other unit's weights 0 and bias −100): the recording that lets values go names the
    same 128 units as the one that keeps them, read from the ReLU's kept output."""
    from autodiff_viz.diagnosis import flow

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
    assert not rec.freed and "128 of the 256 units" in kept and "units 0, 2, 4," in kept
    rec, let_go = words(exact_values=False)
    assert rec.freed
    assert let_go == kept
