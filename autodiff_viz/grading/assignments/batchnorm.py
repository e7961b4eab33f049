"""CS231n A2 ``batchnorm_backward(dout, cache)`` (training mode): ``x`` feeds the mean and the centring.

Forgetting the path through the batch mean in ``dx`` is the classic slip;
the record calls it ``lost_path`` when the intermediates are given, else a
plain ``wrong`` for ``dx`` (the tool does not guess).
"""
import numpy as np

import autodiff_viz as adv

TITLE = "Batch normalization: backward"
FUNCTION = "batchnorm_backward"
POINTS = 4
NAMES = ("x", "gamma", "beta")
EPS = 1e-5

INTRO = f"""# {TITLE}

The forward pass (training mode) is

```python
mu = x.mean(axis=0)
xc = x - mu
var = (xc ** 2).mean(axis=0)
std = np.sqrt(var + {EPS})
xhat = xc / std
out = gamma * xhat + beta
```

Write `batchnorm_backward(dout, cache)` with `cache = (x, gamma, xhat, std)`; return `dx, dgamma, dbeta`."""

SETUP = "import numpy as np"

STARTER = '''def batchnorm_backward(dout, cache):
    """dx, dgamma, dbeta of batch normalization (training mode), given dout = dL/dout."""
'''

SOLUTION = """    x, gamma, xhat, std = cache
    n = x.shape[0]
    dbeta = dout.sum(axis=0)
    dgamma = (dout * xhat).sum(axis=0)
    dxhat = dout * gamma
    dx = (dxhat - dxhat.mean(axis=0) - xhat * (dxhat * xhat).mean(axis=0)) / std
    return dx, dgamma, dbeta
"""


def reference(x, gamma, beta):
    mu = adv.mean(x, axis=0)
    xc = x - mu
    var = adv.mean(xc ** 2, axis=0)
    std = adv.sqrt(var + EPS)
    xhat = xc / std
    out = gamma * xhat + beta
    return out


def inputs(seed: int = 0):
    rng = np.random.default_rng(11 + seed)
    n, d = (4, 3) if seed == 0 else (6, 4)
    data = {"x": rng.normal(size=(n, d)) * 2 + 1, "gamma": rng.normal(size=(d,)), "beta": rng.normal(size=(d,))}
    return data, rng.normal(size=(n, d))


def call(fn, v):
    return fn(v["dout"], (v["x"], v["gamma"], v["xhat"], v["std"]))


def spec(seed: int = 0) -> dict:
    data, dout = inputs(seed)
    return {"reference": reference, "inputs": data, "dout": dout, "names": NAMES, "call": call}


def grade(student_fn, seed: int = 0, **kwargs):
    """The test cell's line: :func:`autodiff_viz.grading.check` of ``student_fn`` on the data of ``seed``."""
    from . import grade_with
    return grade_with(__name__, student_fn, seed, **kwargs)
