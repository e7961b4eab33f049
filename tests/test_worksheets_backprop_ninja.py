"""Karpathy's "Becoming a Backprop Ninja" (makemore part 4), exercise 1, unchanged under ``adv.torch.record()``.

The worksheet builds an MLP with batch norm in PyTorch, cut into atomic
steps, calls ``t.retain_grad()`` on every intermediate and ``loss.backward()``,
then asks the learner to derive each gradient by hand and check it with
``cmp(name, dt, t)`` (``dt`` against ``t.grad``: exact, approximate, maxdiff).
Here ``rec.compare`` takes ``cmp``'s place. The port is our own code with the
worksheet's structure, names and sizes (a batch of 32, 64 hidden units,
block size 3, 27 characters), on random indices instead of names.txt.

What a learner relies on: every correct hand gradient (built, as the
worksheet builds them, from forward tensors that still require grad) is
judged correct, even ``dbnmeani`` written with ``.sum(0)`` — shape ``(64,)`` for
``(1, 64)``, which ``cmp`` accepts too; a planted bug is named at its
intermediate; and comparing or tracing changes no ``.grad`` — the learner's
own ``cmp`` gives the same answers afterwards.

Source: https://github.com/karpathy/nn-zero-to-hero/blob/master/lectures/makemore/makemore_part4_backprop.ipynb
(lecture: https://www.youtube.com/watch?v=q8SA3rM6ckI).
"""
import pytest

torch = pytest.importorskip("torch")

import autodiff_viz as adv  # noqa: E402

N_EMBD, N_HIDDEN, BLOCK, VOCAB, BATCH = 10, 64, 3, 27, 32


def _forward():
    """The worksheet's forward pass, step by step, recorded; every intermediate retains its grad."""
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((VOCAB, N_EMBD), generator=g)
    W1 = torch.randn((N_EMBD * BLOCK, N_HIDDEN), generator=g) * (5 / 3) / ((N_EMBD * BLOCK) ** 0.5)
    b1 = torch.randn(N_HIDDEN, generator=g) * 0.1
    W2 = torch.randn((N_HIDDEN, VOCAB), generator=g) * 0.1
    b2 = torch.randn(VOCAB, generator=g) * 0.1
    bngain = torch.randn((1, N_HIDDEN), generator=g) * 0.1 + 1.0
    bnbias = torch.randn((1, N_HIDDEN), generator=g) * 0.1
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    for p in parameters:
        p.requires_grad = True
    Xb = torch.randint(0, VOCAB, (BATCH, BLOCK), generator=g)
    Yb = torch.randint(0, VOCAB, (BATCH,), generator=g)
    n = BATCH
    with adv.torch.record() as rec:
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
        bndiff = hprebn - bnmeani
        bndiff2 = bndiff ** 2
        bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)      # Bessel's correction, as the worksheet
        bnvar_inv = (bnvar + 1e-5) ** -0.5
        bnraw = bndiff * bnvar_inv
        hpreact = bngain * bnraw + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        logit_maxes = logits.max(1, keepdim=True).values
        norm_logits = logits - logit_maxes
        counts = norm_logits.exp()
        counts_sum = counts.sum(1, keepdims=True)
        counts_sum_inv = counts_sum ** -1
        probs = counts * counts_sum_inv
        logprobs = probs.log()
        loss = -logprobs[range(n), Yb].mean()
        for p in parameters:
            p.grad = None
        for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits, h,
                  hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
            t.retain_grad()
        loss.backward()
    return rec, loss, {k: v for k, v in locals().items() if isinstance(v, torch.Tensor)}


def _hand(v, bessel=True):
    """Exercise 1's answers, written as the worksheet writes them: from forward tensors (which require grad)."""
    n = BATCH
    d = {}
    d["logprobs"] = torch.zeros_like(v["logprobs"])
    d["logprobs"][range(n), v["Yb"]] = -1.0 / n
    d["probs"] = (1.0 / v["probs"]) * d["logprobs"]
    d["counts_sum_inv"] = (v["counts"] * d["probs"]).sum(1, keepdim=True)
    d["counts_sum"] = (-v["counts_sum"] ** -2) * d["counts_sum_inv"]
    d["counts"] = v["counts_sum_inv"] * d["probs"] + torch.ones_like(v["counts"]) * d["counts_sum"]
    d["norm_logits"] = v["counts"] * d["counts"]
    d["logit_maxes"] = (-d["norm_logits"]).sum(1, keepdim=True)
    d["logits"] = d["norm_logits"].clone() + torch.nn.functional.one_hot(
        v["logits"].max(1).indices, num_classes=v["logits"].shape[1]) * d["logit_maxes"]
    d["h"] = d["logits"] @ v["W2"].T
    d["W2"] = v["h"].T @ d["logits"]
    d["b2"] = d["logits"].sum(0)
    d["hpreact"] = (1.0 - v["h"] ** 2) * d["h"]
    d["bngain"] = (v["bnraw"] * d["hpreact"]).sum(0, keepdim=True)
    d["bnraw"] = v["bngain"] * d["hpreact"]
    d["bnbias"] = d["hpreact"].sum(0, keepdim=True)
    d["bndiff"] = v["bnvar_inv"] * d["bnraw"]
    d["bnvar_inv"] = (v["bndiff"] * d["bnraw"]).sum(0, keepdim=True)
    d["bnvar"] = (-0.5 * (v["bnvar"] + 1e-5) ** -1.5) * d["bnvar_inv"]
    d["bndiff2"] = (1.0 / (n - 1) if bessel else 1.0 / n) * torch.ones_like(v["bndiff2"]) * d["bnvar"]
    d["bndiff"] = d["bndiff"] + (2 * v["bndiff"]) * d["bndiff2"]
    d["hprebn"] = d["bndiff"].clone()
    d["bnmeani"] = (-d["bndiff"]).sum(0)                 # (64,): cmp accepts it against (1, 64) by broadcasting
    d["hprebn"] = d["hprebn"] + 1.0 / n * (torch.ones_like(v["hprebn"]) * d["bnmeani"])
    d["embcat"] = d["hprebn"] @ v["W1"].T
    d["W1"] = v["embcat"].T @ d["hprebn"]
    d["b1"] = d["hprebn"].sum(0)
    return d


def _cmp_maxdiff(dt, t):
    """The worksheet's ``cmp``: the largest |dt − t.grad| (what the learner reads)."""
    return (dt - t.grad).abs().max().item()


def test_exercise_one_is_judged_right_and_changes_no_grad():
    rec, loss, v = _forward()
    hand = _hand(v)
    assert all(t.requires_grad for t in (hand["probs"], hand["h"], hand["W1"]))   # built from forward tensors
    kept = {k: (v[k].grad, v[k].grad.clone()) for k in hand}
    cmp = rec.compare(loss, {v[k]: hand[k] for k in hand})
    assert cmp.ok, str(cmp)
    row = cmp["bnmeani"]
    assert row.status in ("exact", "close") and row.hand_shape == (64,) and row.tape_shape == (1, 64)
    assert "shape (64,) vs (1, 64)" in row.message
    for r in cmp.rows:              # "close" is rounding: never a huge relative difference against a zero gradient
        assert r.status == "exact" or r.max_rel < 1e-2, (r.name, r.max_rel)
    rec.trace(loss)
    for k, (obj, values) in kept.items():
        assert v[k].grad is obj and torch.equal(v[k].grad, values), k     # same object, same values
        assert _cmp_maxdiff(hand[k].detach(), v[k]) < 1e-5, k            # the learner's own cmp still agrees


def test_a_planted_bug_is_named_at_its_intermediate():
    rec, loss, v = _forward()
    hand = _hand(v, bessel=False)                        # 1/n where the forward pass used 1/(n-1)
    cmp = rec.compare(loss, {v[k]: hand[k] for k in ("logprobs", "h", "bnvar", "bndiff2", "hprebn", "W1")})
    assert cmp.first_wrong.name == "bndiff2"
    assert cmp["bnvar"].ok and cmp["h"].ok and cmp["logprobs"].ok
    assert "times" in cmp.first_wrong.message        # (n-1)/n: a constant factor


def test_output_gradients_seed_a_non_scalar_target_on_the_bridge():
    rec, loss, v = _forward()
    dh = torch.randn(v["h"].shape)
    hpreact_grad = (1.0 - v["h"] ** 2) * dh
    assert rec.compare(v["h"], {v["hpreact"]: hpreact_grad}, output_gradients=dh).ok
    assert not rec.compare(v["h"], {v["hpreact"]: hpreact_grad}).ok
