"""A tensor property that computes (``s.T``) is an op of the recording, as ``s.t()`` is.

CLIP's contrastive loss (``transformers``' ``clip_loss``: ``(contrastive_loss(similarity) +
contrastive_loss(similarity.t())) / 2``, and code written after it with ``logits.T``) reads the similarity matrix
twice, once transposed. ``Tensor.T`` reaches a ``TorchFunctionMode`` as a property getter, which the recorder took
for an attribute read like ``.shape``: the transposed value entered the trace as an "outside" node, and the
trace drew only half of the loss's path, without a word. Found on tests/test_figure_unseen_architectures_3.py's
CLIP.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import autodiff_viz as adv  # noqa: E402


def _traced(transposed):
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    with adv.torch.record() as rec:
        s = w * 2
        loss = F.cross_entropy(s, torch.arange(3)) + F.cross_entropy(transposed(s), torch.arange(3))
        loss.backward()
    return rec.trace(loss, [w]), w


@pytest.mark.parametrize("transposed", [lambda s: s.T, lambda s: s.mT, lambda s: s.t()], ids=["T", "mT", "t()"])
def test_a_transpose_by_property_is_drawn_on_the_path(transposed):
    tr, w = _traced(transposed)
    assert not [n for n in tr.nodes if n.kind == "outside"]
    s = next(n for n in tr.nodes if n.title == "s")
    readers = [e for e in tr.edges if e.src == s.id and e.on_path]
    assert len(readers) == 2                            # both halves of the loss reach w through s
    assert any(tr.node(e.dst).title.startswith("s.") for e in readers)
    assert tr.node(tr.node_id_of(w)).grad.data.tolist() == w.grad.tolist()


def test_a_value_made_outside_the_recording_is_said():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    h = w * 3                                           # computed before the recording
    with adv.torch.record() as rec:
        loss = (h * h).sum()
    tr = rec.trace(loss, [w])
    assert any("already computed" in note and "not drawn" in note for note in tr.notes)
