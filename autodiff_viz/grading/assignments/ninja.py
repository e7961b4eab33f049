"""Backprop Ninja in PyTorch: every intermediate of a tanh MLP's cross-entropy, by hand (Karpathy's makemore 4).

The forward runs in real PyTorch (recorded by ``adv.torch.record``); the
student returns a dict ``{name: gradient}`` of torch tensors for the names
of :data:`NAMES`. ``counts`` feeds two ops (the normaliser and the product),
so forgetting one of its two contributions is a ``lost_path``.
"""
import numpy as np

TITLE = "Backprop Ninja: a PyTorch MLP by hand"
FUNCTION = "manual_backward"
POINTS = 5
NAMES = ("logprobs", "probs", "counts_sum_inv", "counts_sum", "counts", "logits", "h", "hpre", "W2", "b2", "W1",
         "b1")

INTRO = f"""# {TITLE}

The forward pass, in PyTorch (`n` examples, labels `Yb`):

```python
hpre = X @ W1 + b1
h = torch.tanh(hpre)
logits = h @ W2 + b2
counts = (logits - logits.max(1, keepdim=True).values.detach()).exp()
counts_sum = counts.sum(1, keepdim=True)
counts_sum_inv = counts_sum ** -1
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()
```

Write `manual_backward(X, Yb, W1, W2, h, probs, counts, counts_sum, counts_sum_inv)`: return a dict with the
gradient of `loss` for each of {', '.join(f'`{n}`' for n in NAMES)} (torch tensors, no `.backward()`)."""

SETUP = "import torch"

STARTER = '''def manual_backward(X, Yb, W1, W2, h, probs, counts, counts_sum, counts_sum_inv):
    """Every intermediate gradient of the cross-entropy loss, by hand: {name: tensor}."""
'''

SOLUTION = """    n = X.shape[0]
    dlogprobs = torch.zeros_like(probs)
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = dlogprobs / probs
    dcounts_sum_inv = (dprobs * counts).sum(1, keepdim=True)
    dcounts = dprobs * counts_sum_inv
    dcounts_sum = -dcounts_sum_inv * counts_sum ** -2
    dcounts = dcounts + dcounts_sum * torch.ones_like(counts)
    dlogits = dcounts * counts
    dh = dlogits @ W2.T
    dhpre = dh * (1 - h ** 2)
    return {"logprobs": dlogprobs, "probs": dprobs, "counts_sum_inv": dcounts_sum_inv, "counts_sum": dcounts_sum,
            "counts": dcounts, "logits": dlogits, "h": dh, "hpre": dhpre, "W2": h.T @ dlogits,
            "b2": dlogits.sum(0), "W1": X.T @ dhpre, "b1": dhpre.sum(0)}
"""


def reference(X, W1, b1, W2, b2):
    import torch
    n = X.shape[0]
    hpre = X @ W1 + b1
    h = torch.tanh(hpre)
    logits = h @ W2 + b2
    counts = (logits - logits.max(1, keepdim=True).values.detach()).exp()
    counts_sum = counts.sum(1, keepdim=True)
    counts_sum_inv = counts_sum ** -1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), _LABELS[n]].mean()
    return loss


_LABELS = {}


def inputs(seed: int = 0) -> dict:
    rng = np.random.default_rng(42 + seed)
    n, d, hdim, c = (4, 3, 5, 3) if seed == 0 else (6, 4, 3, 4)
    _LABELS[n] = rng.integers(0, c, size=n)
    return {"X": rng.normal(size=(n, d)), "W1": rng.normal(size=(d, hdim)) * 0.5,
            "b1": rng.normal(size=(hdim,)) * 0.1, "W2": rng.normal(size=(hdim, c)) * 0.5,
            "b2": rng.normal(size=(c,)) * 0.1}


def spec(seed: int = 0) -> dict:
    import torch
    data = inputs(seed)
    labels = torch.as_tensor(_LABELS[data["X"].shape[0]])

    def call(fn, v):
        return fn(v["X"], labels.clone(), v["W1"], v["W2"], v["h"], v["probs"], v["counts"], v["counts_sum"],
                  v["counts_sum_inv"])

    return {"reference": reference, "inputs": data, "names": NAMES, "call": call, "framework": "torch"}


def grade(student_fn, seed: int = 0, **kwargs):
    """The test cell's line: :func:`autodiff_viz.grading.check` of ``student_fn`` on the data of ``seed``."""
    from . import grade_with
    return grade_with(__name__, student_fn, seed, **kwargs)
