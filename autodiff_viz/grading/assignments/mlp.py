"""A tanh layer with an L2 penalty: the backward pass of issue 45's assignment.

``loss = mean((tanh(X W + b) − Y)²) + reg · sum(W²)``; the student writes
``backward(X, Y, W, h)`` returning ``dh, dz, dW, db``. Each classic slip has
its kind: ``1 − h`` for tanh′ (``wrong_local_factor(tanh)``), a missing
``/N`` (``scale(N)``), ``db`` not summed over the batch
(``missing_batch_sum``), the penalty's gradient forgotten in ``dW``
(``lost_path``: ``W`` is used twice).
"""
import numpy as np

import autodiff_viz as adv

TITLE = "Backprop through a tanh layer"
FUNCTION = "backward"
POINTS = 4
NAMES = ("h", "z", "W", "b")
REG = 0.05

INTRO = f"""# {TITLE}

The forward pass is

```python
z = X @ W + b
h = np.tanh(z)
loss = np.mean((h - Y) ** 2) + {REG} * np.sum(W ** 2)
```

Write `backward(X, Y, W, h)`: return the gradients of `loss` with respect to `h`, `z`, `W` and `b`, in that order
(`dh, dz, dW, db`), each of the shape of its tensor. The test cell names the first wrong one and marks it on the
backward graph."""

SETUP = "import numpy as np"

STARTER = f'''REG = {REG}


def backward(X, Y, W, h):
    """dh, dz, dW, db of loss = mean((h - Y)**2) + REG * sum(W**2), with h = tanh(X @ W + b)."""
'''

SOLUTION = """    dh = 2 * (h - Y) / h.size
    dz = dh * (1 - h ** 2)
    dW = X.T @ dz + 2 * REG * W
    db = dz.sum(axis=0)
    return dh, dz, dW, db
"""


def reference(X, Y, W, b):
    """The forward (the instructor's; the tape gives every gradient)."""
    z = X @ W + b
    h = adv.tanh(z)
    loss = adv.mean((h - Y) ** 2) + REG * adv.sum(W ** 2)
    return loss


def inputs(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n, d, k = (4, 3, 2) if seed == 0 else (6, 5, 3)
    return {"X": rng.normal(size=(n, d)), "Y": rng.normal(size=(n, k)), "W": rng.normal(size=(d, k)) * 0.5,
            "b": rng.normal(size=(k,)) * 0.1}


def call(fn, v):
    return fn(v["X"], v["Y"], v["W"], v["h"])


def spec(seed: int = 0) -> dict:
    """What :func:`autodiff_viz.grading.check` needs besides the student's function, on the data of ``seed``."""
    return {"reference": reference, "inputs": inputs(seed), "names": NAMES, "call": call}


def grade(student_fn, seed: int = 0, **kwargs):
    """The test cell's line: :func:`autodiff_viz.grading.check` of ``student_fn`` on the data of ``seed``."""
    from . import grade_with
    return grade_with(__name__, student_fn, seed, **kwargs)
