"""With ``record(exact_values=False)`` a recording lets go of what autograd saved inside an op once the learner's
``backward()`` has read it, and runs the op again when a trace reads it (``torch/saved.py``).

What a learner relies on: the trace's values and gradients are those of a recording that keeps every saved tensor,
bit for bit; code that uses saved-tensor hooks of its own (``torch.utils.checkpoint``) or refuses them
(``torch.func``) runs inside such a recording as it runs outside it.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import autodiff_viz as adv  # noqa: E402
from autodiff_viz.records.traces.model import Summary  # noqa: E402
from autodiff_viz.torch import letgo, saved  # noqa: E402

nn = torch.nn
F = torch.nn.functional
VALUES = 10 ** 7        # value_limit: every entry, so that values compare bit for bit


def _counting(monkeypatch) -> list:
    """Names of the ops whose saved tensors were let go of, as autograd reads them back."""
    dropped = []
    unpack = saved.unpack

    def counting(h):
        was = isinstance(h, saved.Saved) and h.tensor is not None      # no reference kept: it would be a holder
        t = unpack(h)
        if was and h.tensor is None:
            dropped.append(h.op._name())
        return t
    monkeypatch.setattr(saved, "unpack", counting)
    return dropped


def _held_through_backward():
    """A step whose RReLU output ``h`` the learner holds until after ``backward()``, then drops: the let-go at the
    recording's end takes it then. The dropout after it saves its mask (8 × 64 × 256 entries)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 256), nn.RReLU(), nn.Dropout(0.25), nn.Linear(256, 4))
    x = torch.randn(8, 64, 32, generator=torch.Generator().manual_seed(1))
    with adv.torch.record(exact_values=False) as rec:
        torch.manual_seed(2)
        h = net[1](net[0](x))
        loss = net[3](net[2](h)).pow(2).mean()
        loss.backward()
        del h
    return net, rec, loss


def _same_trace(a, b):
    assert [n.title for n in a.nodes] == [n.title for n in b.nodes]
    for n, m in zip(a.nodes, b.nodes):
        assert (n.value.data is None) == (m.value.data is None), n.title
        if n.value.data is not None:
            assert np.array_equal(n.value.data, m.value.data), n.title
        assert (n.grad is None) == (m.grad is None), n.title
        if n.grad is not None:
            assert np.array_equal(n.grad.data, m.grad.data), f"ḡ of {n.title}"


def test_a_value_an_op_must_run_again_from_is_never_kept_as_statistics(monkeypatch):
    """The dropout's mask goes after the backward pass, so a trace runs the dropout again on its input, the RReLU's
    output. That output cannot be computed again itself (here: its draws were not kept, as for an op given a
    generator of its own), and ``exact_values=False`` keeps such a value as statistics when it is let go of — which a
    run cannot read. It is kept whole instead, and the trace is the one a recording keeping the mask shows."""
    before = letgo.Releases.before

    def rrelu_keeps_no_state(self, op_name, index):
        before(self, op_name, index)
        if op_name == "rrelu":
            self._rng = None
    monkeypatch.setattr(letgo.Releases, "before", rrelu_keeps_no_state)
    dropped = _counting(monkeypatch)
    net, rec, loss = _held_through_backward()
    assert dropped == ["dropout"]
    made = next(op for op in rec.ops if op.name == "rrelu").outputs[0]
    assert not isinstance(rec.freed.get(id(made)), Summary)
    assert made.untyped_storage().nbytes() == made.numel() * made.element_size()      # whole
    trace = rec.trace(loss, net, value_limit=VALUES)

    monkeypatch.setattr(saved, "free", lambda: False)
    net2, rec2, loss2 = _held_through_backward()
    _same_trace(trace, rec2.trace(loss2, net2, value_limit=VALUES))


def test_a_checkpointed_block_keeps_its_own_hooks():
    """``torch.utils.checkpoint`` (non-reentrant) saves through hooks of its own: the recording pushes none over
    them, so the checkpoint still runs the block again in the backward pass instead of keeping what it saved (the
    block's forward runs twice, as without the recording), and the gradients are the same."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(64, 256), nn.Dropout(0.25), nn.GELU(), nn.Linear(256, 64))
    x = torch.randn(16, 64)
    runs = []

    def run(h):
        runs.append(1)
        return block(h)

    def step():
        for p in block.parameters():
            p.grad = None
        torch.manual_seed(3)
        loss = checkpoint(run, x, use_reentrant=False).pow(2).mean()
        loss.backward()
        return loss, [p.grad.clone() for p in block.parameters()]

    plain_loss, plain = step()
    assert len(runs) == 2
    with adv.torch.record(exact_values=False) as rec:
        loss, grads = step()
    assert len(runs) == 4, "the checkpoint did not run the block again: its hooks were overridden"
    assert torch.equal(loss, plain_loss) and all(torch.equal(a, b) for a, b in zip(grads, plain))
    assert rec.trace(loss, block).nodes


def test_torch_func_runs_inside_the_recording():
    """``torch.func`` transforms refuse saved-tensor hooks ("don't yet support saved tensor hooks"); inside a
    recording with ``exact_values=False`` none is pushed while they run."""
    w = torch.randn(32, 32)
    x = torch.randn(8, 32)

    def f(w):
        return torch.tanh(x @ w).pow(2).sum()

    expected = torch.func.grad(f)(w)
    with adv.torch.record(exact_values=False):
        got = torch.func.grad(f)(w)
    assert torch.equal(got, expected)
