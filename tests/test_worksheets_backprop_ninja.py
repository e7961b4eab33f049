"""Karpathy's "Becoming a Backprop Ninja" (makemore part 4), exercises 1–4, unchanged under ``adv.torch.record()``.

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

Exercises 2–4 (the fused backward passes and the training loop) are at the
end of this file, each with the worksheet's cell it ports.

Source: https://github.com/karpathy/nn-zero-to-hero/blob/master/lectures/makemore/makemore_part4_backprop.ipynb
(lecture: https://www.youtube.com/watch?v=q8SA3rM6ckI).
"""
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

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


# ----- exercise 2: cross-entropy backward in one line ------------------------------------------------------
def _dlogits(logits, Yb, n, divide=True):
    """Exercise 2's answer, the worksheet's three lines: ∂loss/∂logits = (softmax(logits) − onehot(Yb)) / n.

    With ``loss = −(1/n) Σ_i log softmax(logits_i)[Yb_i]``, each row's
    derivative is ``p_i − e_{Yb_i}``, and the mean contributes the ``1/n``.
    ``divide=False`` is the planted bug: the mean's ``1/n`` forgotten.
    """
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    if divide:
        dlogits /= n
    return dlogits


def test_exercise_two_cross_entropy_in_one_line_in_a_cell_of_its_own():
    """Exercise 2 as its own notebook cell: ``loss_fast = F.cross_entropy(logits, Yb)`` recorded apart.

    The worksheet's ``cmp('logits', dlogits, logits)`` reads "approximate"
    (maxdiff 6e-9): ``rec.compare`` says ``close``; the ``/ n`` forgotten is
    named at ``logits`` as "times 32". The hand ``dlogits`` is built by
    in-place writes into a softmax that still requires grad, as the cell does;
    neither the comparison nor the trace changes ``logits.grad`` or ``logits``.
    """
    _, loss, v = _forward()
    logits, Yb, n = v["logits"], v["Yb"], BATCH
    with adv.torch.record() as rec2:            # the learner's next cell: a recording of its own
        loss_fast = F.cross_entropy(logits, Yb)
    assert abs(loss_fast.item() - loss.item()) < 1e-6
    dlogits = _dlogits(logits, Yb, n)
    assert dlogits.requires_grad                 # as in the worksheet: built from a tensor that requires grad
    grad_before, values_before = logits.grad.clone(), logits.detach().clone()
    cmp = rec2.compare(loss_fast, {logits: dlogits})
    assert cmp.ok and cmp["logits"].status in ("exact", "close"), str(cmp)
    assert cmp["logits"].max_abs < 1e-6
    assert rec2.compare(loss_fast, {"logits": dlogits}).ok          # by the learner's name, too
    bad = rec2.compare(loss_fast, {logits: _dlogits(logits, Yb, n, divide=False)})
    assert bad.first_wrong.name == "logits" and "times 32" in bad.first_wrong.message
    rec2.trace(loss_fast)
    assert torch.equal(logits.grad, grad_before) and torch.equal(logits.detach(), values_before)
    assert _cmp_maxdiff(dlogits.detach(), logits) < 1e-6             # the worksheet's own cmp still agrees


def test_a_loss_under_no_grad_is_not_called_independent_of_its_logits():
    """The worksheet's final loop runs ``with torch.no_grad():``; a comparison there has nothing to read.

    The loss does depend on ``logits``: the row must say PyTorch kept no graph
    (``no_grad``, at the learner's line, with the fix), not "the target does
    not depend on it", and show the shape the gradient would have.
    """
    _, _, v = _forward()
    logits, Yb = v["logits"], v["Yb"]
    with torch.no_grad():
        with adv.torch.record() as rec:
            loss = F.cross_entropy(logits, Yb)
    row = rec.compare(loss, {logits: _dlogits(logits, Yb, BATCH)})["logits"]
    assert row.status == "no_gradient" and row.tape_shape == (32, 27)
    assert "no_grad" in row.message and "does not depend" not in row.message
    assert "loss = F.cross_entropy(logits, Yb)" in row.message and "'logits'" in row.message


# ----- exercise 3: batch norm backward in one formula ------------------------------------------------------
def _dhprebn(v, dhpreact, bessel=True):
    """Exercise 3's answer: the batch-norm backward in one formula, from ``dhpreact``.

    With ``x̂ = (x − μ)·(σ² + ε)^−½`` and ``σ²`` the unbiased variance (÷ (n−1)):
    ``dx = γ·(σ² + ε)^−½ / n · (n·dy − Σ dy − n/(n−1)·x̂·Σ(dy·x̂))``, sums over
    the batch axis. ``bessel=False`` is the planted bug: ``n/(n−1)`` left out
    (the formula of the biased variance, while the forward pass used Bessel's).
    """
    n = BATCH
    k = n / (n - 1) if bessel else 1.0
    bnraw, bngain, bnvar_inv = v["bnraw"], v["bngain"], v["bnvar_inv"]
    return bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - k * bnraw * (dhpreact * bnraw).sum(0))


def test_exercise_three_batchnorm_in_one_formula():
    """``cmp('hprebn', dhprebn, hprebn)`` as ``rec.compare``, on the atomic forward and on the fused one.

    The worksheet checks the fused forward (``hprebn.mean``, ``hprebn.var(...,
    unbiased=True)``, ``torch.sqrt``) against the atomic one, then the one-line
    ``dhprebn`` against autograd. Here also against ``hpreact_fast`` seeded
    with ``dhpreact`` (``output_gradients``): the torch ops of the fused line
    are recorded and differentiated as PyTorch does. The forgotten ``n/(n−1)``
    is named at ``hprebn`` while ``hpreact`` (upstream) stays right.
    """
    rec, loss, v = _forward()
    hprebn, bngain, bnbias = v["hprebn"], v["bngain"], v["bnbias"]
    with adv.torch.record() as rec3:
        hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(
            hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias
    assert (hpreact_fast - v["hpreact"]).abs().max().item() < 1e-5
    dhpreact = _hand(v)["hpreact"]
    dhprebn = _dhprebn(v, dhpreact)
    kept = (hprebn.grad.clone(), v["hpreact"].grad.clone())
    cmp = rec.compare(loss, {v["hpreact"]: dhpreact, hprebn: dhprebn})
    assert cmp.ok, str(cmp)
    assert cmp["hprebn"].max_abs < 1e-6                      # the worksheet: approximate, maxdiff 9e-10
    fused = rec3.compare(hpreact_fast, {hprebn: dhprebn}, output_gradients=dhpreact.detach())
    assert fused.ok, str(fused)
    bad = rec.compare(loss, {v["hpreact"]: dhpreact, hprebn: _dhprebn(v, dhpreact, bessel=False),
                             v["W1"]: v["embcat"].T @ _dhprebn(v, dhpreact, bessel=False)})
    assert bad.first_wrong.name == "hprebn" and bad["hpreact"].ok
    rec.trace(loss)
    rec3.trace(hpreact_fast)
    assert torch.equal(hprebn.grad, kept[0]) and torch.equal(v["hpreact"].grad, kept[1])


# ----- exercise 4: the training loop with the manual backward ----------------------------------------------
def _manual_backward(t, parameters, n, scatter="add"):
    """Exercise 4's manual backprop, the worksheet's block: exercise 2's dlogits, exercise 3's dhprebn, dC.

    ``scatter="assign"`` is the planted bug: ``dC[ix] = demb[k, j]`` where a
    character that appears twice in the batch must collect both rows (``+=``).
    """
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    dlogits = F.softmax(t["logits"], 1)
    dlogits[range(n), t["Yb"]] -= 1
    dlogits /= n
    dh = dlogits @ W2.T
    dW2 = t["h"].T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - t["h"] ** 2) * dh
    dbngain = (t["bnraw"] * dhpreact).sum(0, keepdim=True)
    dbnbias = dhpreact.sum(0, keepdim=True)
    bnraw, bnvar_inv = t["bnraw"], t["bnvar_inv"]
    dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)
                                        - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
    dembcat = dhprebn @ W1.T
    dW1 = t["embcat"].T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(t["emb"].shape)
    dC = torch.zeros_like(C)
    Xb = t["Xb"]
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            ix = Xb[k, j]
            if scatter == "add":
                dC[ix] += demb[k, j]
            else:
                dC[ix] = demb[k, j]
    return [dC, dW1, db1, dW2, db2, dbngain, dbnbias]


def _init():
    """Exercise 4's init cell on synthetic data (200 random 3-character contexts for names.txt).

    ``bngain`` and ``bnbias`` are drawn from ``g`` too (the worksheet uses the global generator), so
    the two training runs start from the same numbers.
    """
    vocab_size, block_size, n_embd, n_hidden = VOCAB, BLOCK, 10, 200
    gdata = torch.Generator().manual_seed(42)
    Xtr = torch.randint(0, vocab_size, (200, block_size), generator=gdata)
    Ytr = torch.randint(0, vocab_size, (200,), generator=gdata)
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((vocab_size, n_embd), generator=g)
    W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5 / 3) / ((n_embd * block_size) ** 0.5)
    b1 = torch.randn(n_hidden, generator=g) * 0.1
    W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.1
    b2 = torch.randn(vocab_size, generator=g) * 0.1
    bngain = torch.randn((1, n_hidden), generator=g) * 0.1 + 1.0
    bnbias = torch.randn((1, n_hidden), generator=g) * 0.1
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    for p in parameters:
        p.requires_grad = True
    return Xtr, Ytr, g, parameters


def _train(steps, scatter="add"):
    """Exercise 4's loop, a few steps, each loop body recorded whole (forward, ``loss.backward()`` kept "for
    correctness comparisons", and the manual backward: its ops land in the same recording).

    Reduced: 200 random 3-character contexts of a 27-character vocabulary
    stand in for names.txt's 182,625 training examples; the sizes are the
    worksheet's (n_embd 10, n_hidden 200, batch 32), lr 0.1. Returns per step
    the comparison, the parameters' ``.grad`` before and after it, and the
    parameters after training.
    """
    Xtr, Ytr, g, parameters = _init()
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    batch_size = 32
    n = batch_size
    out = []
    for i in range(steps):
        ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]
        with adv.torch.record() as rec:
            emb = C[Xb]
            embcat = emb.view(emb.shape[0], -1)
            hprebn = embcat @ W1 + b1
            bnmean = hprebn.mean(0, keepdim=True)
            bnvar = hprebn.var(0, keepdim=True, unbiased=True)
            bnvar_inv = (bnvar + 1e-5) ** -0.5
            bnraw = (hprebn - bnmean) * bnvar_inv
            hpreact = bngain * bnraw + bnbias
            h = torch.tanh(hpreact)
            logits = h @ W2 + b2
            loss = F.cross_entropy(logits, Yb)
            for p in parameters:
                p.grad = None
            loss.backward()
            grads = _manual_backward(locals(), parameters, n, scatter)     # recorded too, as the loop body runs
        before = [p.grad.clone() for p in parameters]
        cmp = rec.compare(loss, dict(zip(parameters, grads)))
        rec.trace(loss)
        after = [p.grad.clone() for p in parameters]
        lr = 0.1 if i < 100000 else 0.01
        for p, grad in zip(parameters, grads):
            p.data += -lr * grad
        out.append((cmp, before, after, Xb))
    return out, [p.detach().clone() for p in parameters]


def test_exercise_four_the_manual_backward_trains_as_autograd_does():
    """Every step's seven hand gradients are judged right; the weights they train are autograd's.

    The worksheet's check (``for p, g in zip(parameters, grads): cmp(...)``)
    becomes one ``rec.compare(loss, dict(zip(parameters, grads)))`` a step; its
    rows are called by the shapes' owners (``C``, ``W1`` … the learner's names).
    Three steps with the hand gradients land where three steps with
    ``p.grad`` land (the worksheet's "old way"), and no comparison or trace changes a ``.grad``.
    """
    steps, trained = _train(3)
    for cmp, before, after, _ in steps:
        assert cmp.ok, str(cmp)
        assert [r.name for r in sorted(cmp.rows, key=lambda r: r.name)] == sorted(
            ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"])
        assert all(torch.equal(a, b) for a, b in zip(before, after))
    # the same three steps with autograd's gradients (p.data += -lr * p.grad)
    autograd_trained = _train_with_autograd(3)
    for mine, theirs in zip(trained, autograd_trained):
        assert torch.allclose(mine, theirs, atol=1e-5), (mine - theirs).abs().max()


def _train_with_autograd(steps):
    """The same loop, updated with ``p.grad`` (the worksheet's "old way"): the reference for exercise 4."""
    Xtr, Ytr, g, parameters = _init()
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    for _ in range(steps):
        ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]
        emb = C[Xb].view(32, -1)
        hprebn = emb @ W1 + b1
        hpreact = bngain * (hprebn - hprebn.mean(0, keepdim=True)) * (
            hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) ** -0.5 + bnbias
        loss = F.cross_entropy(torch.tanh(hpreact) @ W2 + b2, Yb)
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -0.1 * p.grad
    return [p.detach().clone() for p in parameters]


def test_exercise_four_a_scatter_that_overwrites_is_named_at_C():
    """``dC[ix] = demb[k, j]`` (for ``+=``): a character seen twice in the batch keeps only its last row.

    Only the embedding table is wrong; the comparison names ``C`` and judges
    the six other parameters right.
    """
    steps, _ = _train(1, scatter="assign")
    cmp, _, _, Xb = steps[0]
    assert len(torch.unique(Xb)) < Xb.numel()               # some character repeats: the bug shows
    assert cmp.first_wrong.name == "C"
    assert [r.name for r in cmp.rows if not r.ok] == ["C"]


def _exercise_four_step(with_hand_backward):
    """One step of exercise 4's loop body, recorded whole; ``with_hand_backward=False`` records the forward alone."""
    Xtr, Ytr, g, parameters = _init()
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    n = 32
    ix = torch.randint(0, Xtr.shape[0], (n,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    with adv.torch.record() as rec:
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        bnmean = hprebn.mean(0, keepdim=True)
        bnvar = hprebn.var(0, keepdim=True, unbiased=True)
        bnvar_inv = (bnvar + 1e-5) ** -0.5
        bnraw = (hprebn - bnmean) * bnvar_inv
        hpreact = bngain * bnraw + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        loss.backward()
        if with_hand_backward:
            _manual_backward(locals(), parameters, n)
    return rec, rec.trace(loss)         # traced where the learner's names (Yb) are in scope


def test_exercise_four_trace_draws_the_forward_not_the_hand_backward_recorded_with_it():
    """``rec.trace(loss)`` of the loop body draws what ``loss`` depends on: the forward's 25 nodes, not the 442
    the block recorded with the hand backward (dlogits, dh, … and the 96-step scatter into dC), as the engine's
    trace draws only the target's history. The hand backward is still there to compare against."""
    rec, tr = _exercise_four_step(True)
    forward_rec, forward = _exercise_four_step(False)
    assert len(rec) > 10 * len(forward_rec)                  # the block did record the hand backward
    assert len(tr.nodes) == len(forward.nodes) == 25
    assert [n.title for n in tr.nodes] == [n.title for n in forward.nodes]
    assert not {"dlogits", "dh", "dW2", "dC", "dhprebn"} & {n.title for n in tr.nodes}
    assert tr.node(tr.target).title == "loss" and len(tr.edges) == len(forward.edges)
    # the edge out of F.cross_entropy states exercise 2's answer
    assert "ḡ_logits = (softmax(logits) − onehot(Yb)) / N" in tr.to_dot("backward")
