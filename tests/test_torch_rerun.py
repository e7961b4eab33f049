"""``adv.torch.record()`` keeps a library model's call as its boundary and runs it again for a trace (``rerun.py``).

A model's first call is recorded whole and says whether its later calls are kept so (its values outweigh its
weights, its ``forward`` leaves the model as it found it); the tests call each model once before the step they
trace. What a learner relies on (issue 42's cost: the step costs about a plain one; see docs/performance.md):

* the trace, the explanation and the comparison are those of the recording that keeps every op — the same nodes,
  names, lines, formulas and, bit for bit, the same values, gradients and per-edge contributions — on real
  architectures built by their libraries (transformers' BERT, GPT-2, ViT, ResNet with tiny configurations, random
  weights, dropout on), for a whole training step recorded with ``loss.backward(); opt.step()``;
* a trace changes nothing of the learner's: weights, ``.grad``, buffers, training flags and random numbers are as
  before it;
* when the call cannot run again the same way (its state changed after it), the trace says so and names the
  recorder that keeps every op, instead of drawing other numbers;
* a call the recorder cannot run again unseen (a hook of the learner's inside the model), a model whose weights
  outweigh its values (ResNet-18 on small images), or whose ``forward`` changes it, is recorded op by op.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import autodiff_viz as adv  # noqa: E402
import autodiff_viz.torch  # noqa: E402,F401

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
nn = torch.nn
VALUES = 10 ** 8     # value_limit: every entry kept, so values compare bit for bit


def _same_traces(a, b):
    """The two traces draw the same thing with the same numbers (a large weight both kept as statistics, by its
    statistics)."""
    assert [(n.kind, n.op, n.name, n.label, n.location, n.scope, tuple(n.shape)) for n in a.nodes] == \
        [(n.kind, n.op, n.name, n.label, n.location, n.scope, tuple(n.shape)) for n in b.nodes]
    assert [(e.src, e.dst, e.factor, e.formula, e.differentiable) for e in a.edges] == \
        [(e.src, e.dst, e.factor, e.formula, e.differentiable) for e in b.edges]

    def same(u, v):
        if u is None or v is None:
            return u is None and v is None
        if u.data is None or v.data is None:
            return u.data is None and v.data is None and all(
                u.stats[k] == pytest.approx(v.stats[k], rel=1e-4, abs=1e-9) for k in ("min", "mean", "max", "norm"))
        return np.array_equal(u.data, v.data, equal_nan=True)
    for x, y in zip(a.nodes, b.nodes):
        assert same(x.value, y.value) and same(x.grad, y.grad), x.title
    for x, y in zip(a.edges, b.edges):
        assert same(x.contribution, y.contribution) and same(x.upstream, y.upstream), (x.src, x.dst)


def _judged(model, *args, **kwargs):
    """``model`` called once inside a recording: its first call, recorded whole, judges the later ones."""
    with adv.torch.record():
        model(*args, **kwargs)


def _hf_step(kind, **options):
    """One whole training step of a tiny transformers ``kind`` (called once before) recorded with
    ``record(**options)``: ``(recording, loss, model)``."""
    try:
        from benchmarks import real_models
        model, inputs, opt = real_models.torch_model(kind)
    except Exception as exc:   # noqa: BLE001 - a broken torchvision beside transformers raises RuntimeError
        pytest.skip(f"transformers is not usable ({type(exc).__name__}: {exc}); pip install 'autodiff_viz[models]'")
    _judged(model, **inputs)
    with adv.torch.record(**options) as rec:
        opt.zero_grad(set_to_none=True)
        loss = model(**inputs).loss
        loss.backward()
        opt.step()
    return rec, loss, model


def _state(model):
    return ([p.detach().clone() for p in model.parameters()], [p.grad.clone() for p in model.parameters()],
            [b.clone() for b in model.buffers()], [m.training for m in model.modules()], torch.get_rng_state())


def _unchanged(before, after):
    for xs, ys in zip(before[:3], after[:3]):
        assert all(torch.equal(x, y) for x, y in zip(xs, ys))
    assert before[3] == after[3] and torch.equal(before[4], after[4])


@pytest.mark.parametrize("kind", ["bert", "gpt2", "vit", "resnet"])
def test_a_recorded_training_step_of_a_real_model_traces_as_the_recording_that_keeps_every_op(kind):
    """The model's call is one record; its trace is the whole recorder's, bit for bit; the learner's state is
    untouched. ResNet-18 on 32×32 images makes less than its 45 MB of weights: it is recorded whole, as copying
    its weights before the update would cost more than its values."""
    whole, loss_w, model_w = _hf_step(kind, rerun_models=False)
    rec, loss, model = _hf_step(kind)
    assert torch.equal(loss, loss_w)
    assert sum(op.kind == "op" for op in whole.ops) > 50
    if kind == "resnet":
        assert "call" not in {op.kind for op in rec.ops} and len(rec.ops) == len(whole.ops)
    else:
        assert [op.kind for op in rec.ops if op.kind in ("op", "call")] == ["call"]
    before = _state(model)
    got = rec.trace(loss, model, value_limit=VALUES)
    _unchanged(before, _state(model))
    _same_traces(whole.trace(loss_w, model_w, value_limit=VALUES), got)
    assert got.node_id_of(loss) == got.nodes[-1].id


def test_the_learners_backward_keeps_no_graph_as_in_plain_pytorch():
    """The recording no longer keeps autograd's graph past ``backward()``: a second backward fails as it does
    without the recording, and the trace still works (it runs the step again)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    _judged(net, torch.randn(5, 4))
    with adv.torch.record() as rec:
        loss = net(torch.randn(5, 4)).pow(2).mean()
        loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    tr = rec.trace(loss, net)
    assert {n.name for n in tr.nodes if n.kind == "variable"} >= {"0.weight", "2.weight"}


def _detached_head(**options):
    """A feature extractor (a library ``nn.Sequential``) whose output the learner detached before the head: the
    extractor's weights get no gradient."""
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 6))
    head = nn.Parameter(torch.randn(6, 1))
    x = torch.randn(5, 4)
    _judged(body, x)
    with adv.torch.record(**options) as rec:
        feats = body(x)
        out = feats.detach() @ head
        loss = out.pow(2).mean()
        loss.backward()
    return rec, loss, body, head, out


def test_why_none_and_compare_read_the_call_run_again():
    """``explain`` names the ``.detach()`` at the learner's line, as the whole recorder does, and ``compare``
    judges a hand gradient of ``out`` the same way."""
    def asked(rec, loss, body, head, out):
        hand = 2 * out.detach() / out.numel()
        return rec.explain(loss, body[0].weight), rec.compare(loss, {"out": hand, "head": torch.zeros(6, 1)})
    e_w, rows_w = asked(*_detached_head(rerun_models=False))
    e, rows = asked(*_detached_head())
    assert e.reason == e_w.reason and e.message == e_w.message and e.location == e_w.location
    assert "detach" in e.message
    assert [(r.name, r.status) for r in rows.rows] == [(r.name, r.status) for r in rows_w.rows]
    assert not rows.ok and dict((r.name, r.status) for r in rows.rows)["out"] in ("close", "exact")


def test_a_learners_hook_inside_the_model_keeps_the_call_recorded_op_by_op_and_fires_once():
    """A forward hook of the learner's would fire again when the call ran again: such a call is recorded op by
    op, and the hook sees one call."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    seen = []
    _judged(net, torch.randn(5, 4))
    net[1].register_forward_hook(lambda m, i, o: seen.append(o.shape))
    with adv.torch.record() as rec:
        loss = net(torch.randn(5, 4)).sum()
        loss.backward()
    rec.trace(loss, net)
    assert seen == [torch.Size([5, 8])]
    assert "call" not in {op.kind for op in rec.ops} and sum(op.kind == "op" for op in rec.ops) >= 4


def _conv_bn(**options):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    _judged(net, torch.randn(2, 3, 6, 6))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(3, 3, 6, 6)
    with adv.torch.record(**options) as rec:
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
    net.eval()
    return rec, loss, net


def test_batchnorm_runs_again_in_training_mode_from_its_statistics_then_and_leaves_them_as_they_are():
    """The learner switched to ``eval()`` after the step: the call runs again as it ran (training mode, the
    running statistics as at its entry, which the call itself updated), and the trace is the whole recorder's;
    the statistics, the flags and the updated weights stay the learner's."""
    whole, loss_w, net_w = _conv_bn(rerun_models=False)
    rec, loss, net = _conv_bn()
    assert "call" in {op.kind for op in rec.ops}
    stats = [b.clone() for b in net.buffers()]
    weights = [p.detach().clone() for p in net.parameters()]
    got = rec.trace(loss, net, value_limit=VALUES)
    _same_traces(whole.trace(loss_w, net_w, value_limit=VALUES), got)
    assert all(torch.equal(a, b) for a, b in zip(stats, net.buffers()))
    assert all(torch.equal(a, b) for a, b in zip(weights, net.parameters()))
    assert not any(m.training for m in net.modules())


def test_a_call_whose_state_changed_after_it_is_said_not_drawn():
    """The learner turned dropout off after the step (``body[2].p = 0``): the call cannot run again to the same
    numbers, so the trace says so and names the recorder that keeps every op; a weight replaced after the call is
    said too."""
    rec, loss, body, head, out = _detached_head()
    body[2].p = 0.0
    with pytest.raises(RuntimeError, match=r"did not run again the same way.*adv\.torch\.record\(\)"):
        rec.trace(out)
    body[2].p = 0.5
    assert rec.trace(out).nodes[-1].op == "matmul"
    body[0].weight = nn.Parameter(body[0].weight.detach().clone())
    with pytest.raises(RuntimeError, match="weights changed since the call"):
        rec.trace(out)


def test_two_steps_in_one_recording_each_traced_with_its_own_weights():
    """Two training steps recorded together: each loss traces with the weights its backward pass saw (the first
    with the weights before both updates), as the whole recorder draws them."""
    def steps(**options):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Dropout(0.2), nn.Linear(8, 1))
        opt = torch.optim.Adam(net.parameters(), lr=0.1)
        xs = torch.randn(2, 6, 4)
        _judged(net, xs[0])
        losses = []
        with adv.torch.record(**options) as rec:
            for x in xs:
                opt.zero_grad()
                loss = net(x).pow(2).mean()
                loss.backward()
                opt.step()
                losses.append(loss)
        return rec, losses, net
    whole, losses_w, net_w = steps(rerun_models=False)
    rec, losses, net = steps()
    assert [op.kind for op in rec.ops].count("call") == 2
    for lw, lr in zip(losses_w, losses):
        _same_traces(whole.trace(lw, net_w, value_limit=VALUES), rec.trace(lr, net, value_limit=VALUES))


def test_a_lazy_layers_first_call_records_and_traces():
    """``nn.LazyLinear`` makes its weight during its first call: recording that call counted the bytes of a weight
    not made yet and raised PyTorch's "uninitialized parameter" error; it records and traces."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.Linear(3, 1))
    with adv.torch.record() as rec:
        loss = net(torch.randn(4, 5)).sum()
        loss.backward()
    tr = rec.trace(loss, net)
    assert tuple(next(n for n in tr.nodes if n.name == "0.weight").shape) == (3, 5)


class _Clip(torch.autograd.Function):
    """A learner's own ReLU-like Function whose backward passes ḡ straight through (a straight-through
    estimator)."""

    @staticmethod
    def forward(ctx, x):
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        return g


def _around_a_model(**options):
    """A library model between the learner's own custom Function and a head computed under ``torch.no_grad()``:
    the head's weight gets no gradient, cut at the ``no_grad`` line."""
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    head = nn.Parameter(torch.randn(3, 2))
    x = torch.randn(6, 4)
    _judged(body, x)
    with adv.torch.record(**options) as rec:
        h = body(_Clip.apply(x * 2.0))
        with torch.no_grad():
            side = h @ head
        loss = (_Clip.apply(h) ** 2).mean() + side.sum()
        loss.backward()
    return rec, loss, body, head


def test_a_custom_function_and_a_grad_mode_beside_a_kept_call_run_again_as_recorded():
    """The learner's custom ``Function`` runs again as itself (its own backward, not the ops of its forward), and
    the ``torch.no_grad()`` after the model's call stays at its line: the trace and both explanations are the
    whole recorder's."""
    def asked(rec, loss, body, head):
        return rec.trace(loss, body, value_limit=VALUES), rec.explain(loss, head), rec.explain(loss, body[0].weight)
    tr_w, cut_w, ok_w = asked(*_around_a_model(rerun_models=False))
    rec, loss, body, head = _around_a_model()
    assert "call" in {op.kind for op in rec.ops}
    tr, cut, ok = asked(rec, loss, body, head)
    _same_traces(tr_w, tr)
    assert (cut.reason, cut.message, cut.location) == (cut_w.reason, cut_w.message, cut_w.location)
    assert "no_grad" in cut.message and cut.location.endswith(f":{_line_of('with torch.no_grad():')}")
    assert ok.reason == ok_w.reason and ok.connected


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == text)


def test_features_computed_under_no_grad_by_a_kept_call_are_said_at_the_learners_with():
    """The classic question — "why is my backbone's gradient None?" — with the backbone's call kept: its ops ran
    under the learner's ``with torch.no_grad():``, and the answer names that line, as the whole recorder's does
    (the run again's own copies must not read as grad-mode changes)."""
    def asked(**options):
        torch.manual_seed(0)
        backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 6))
        head = nn.Linear(6, 2)
        x = torch.randn(5, 4)
        _judged(backbone, x)
        with adv.torch.record(**options) as rec:
            with torch.no_grad():
                feats = backbone(x)
            loss = head(feats).pow(2).mean()
            loss.backward()
        assert ("call" in {op.kind for op in rec.ops}) == options.get("rerun_models", True)
        return rec.explain(loss, backbone[0].weight)
    whole, got = asked(rerun_models=False), asked()
    assert (got.reason, got.message, got.location) == (whole.reason, whole.message, whole.location)
    assert got.reason == "no_grad" and "Gradients were turned off" in got.message, got.message


def test_a_layer_frozen_between_two_recorded_steps_is_traced_as_each_step_saw_it():
    """The learner freezes the first layer after the first step (``requires_grad_(False)``): run again, the first
    step's call still gives that layer its gradient and the second's does not; a bias frozen before the recording
    and unfrozen after it gets no gradient the backward passes never computed — each step as its backward pass saw
    it, as the whole recorder draws it (and explains it: by the flags as they are now) — and the flags stay the
    learner's."""
    def steps(**options):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        xs = torch.randn(2, 5, 4)
        _judged(net, xs[0])
        net[2].bias.requires_grad_(False)           # frozen before the recording, unfrozen after it
        losses = []
        with adv.torch.record(**options) as rec:
            for k, x in enumerate(xs):
                if k == 1:
                    net[0].weight.requires_grad_(False)
                loss = net(x).pow(2).mean()
                loss.backward()
                losses.append(loss)
        net[2].bias.requires_grad_(True)
        net[2].weight.requires_grad_(False)         # frozen after the recording
        answers = [rec.explain(loss, net[0].weight) for loss in losses]
        traces = [rec.trace(loss, value_limit=VALUES) for loss in losses]
        return rec, answers, traces, net
    rec_w, answers_w, traces_w, _ = steps(rerun_models=False)
    rec, answers, traces, net = steps()
    assert [op.kind for op in rec.ops].count("call") == 2
    assert [(a.reason, a.message) for a in answers] == [(a.reason, a.message) for a in answers_w]
    for a, b in zip(traces_w, traces):
        _same_traces(a, b)
    assert not net[0].weight.requires_grad and not net[2].weight.requires_grad and net[2].bias.requires_grad


def test_a_model_whose_first_recorded_call_raised_is_not_kept_alive():
    """The recorder notes a library model's modules and weights at its first recorded call, to judge its later calls
    when that call ends. A call that raised never got there, and the note — which lists the model among its own
    modules — kept the model, and its weights, alive for the rest of the process."""
    import gc
    import weakref
    try:
        from benchmarks import real_models
        model, inputs, _opt = real_models.torch_model("bert")
    except Exception as exc:   # noqa: BLE001 - a broken torchvision beside transformers raises RuntimeError
        pytest.skip(f"transformers is not usable ({type(exc).__name__}: {exc}); pip install 'autodiff_viz[models]'")
    ref = weakref.ref(model)
    assert "indices" in _first_call_raises(model, inputs["input_ids"].float())    # an embedding refuses float ids
    del model, inputs, _opt
    gc.collect()
    assert ref() is None


def _first_call_raises(model, ids) -> str:
    """The message of the error ``model(input_ids=ids)`` raises inside a recording (the exception, its traceback and
    their frames gone with this call)."""
    try:
        with adv.torch.record():
            model(input_ids=ids)
    except RuntimeError as exc:
        return str(exc)
    return ""
