"""CS231n A2 ``affine_backward(dout, cache)``: ``out = x.reshape(N, -1) @ w + b`` given the upstream ``dout``."""
import numpy as np

import autodiff_viz as adv

TITLE = "Affine layer: backward"
FUNCTION = "affine_backward"
POINTS = 3
NAMES = ("x", "w", "b")

INTRO = f"""# {TITLE}

The forward pass reshapes each input `x[i]` of shape `(d_1, ..., d_k)` to a row of length `D` and computes
`out = x.reshape(N, D) @ w + b`. Write `affine_backward(dout, cache)` with `cache = (x, w, b)` and return
`dx, dw, db` (each of the shape of its tensor; `dx` of the shape of `x`)."""

SETUP = "import numpy as np"

STARTER = '''def affine_backward(dout, cache):
    """dx, dw, db of out = x.reshape(N, -1) @ w + b, given dout = dL/dout."""
'''

SOLUTION = """    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout
    db = dout.sum(axis=0)
    return dx, dw, db
"""


def reference(x, w, b):
    out = adv.reshape(x, (x.shape[0], -1)) @ w + b
    return out


def inputs(seed: int = 0):
    rng = np.random.default_rng(231 + seed)
    n, dims, m = (2, (3, 2), 4) if seed == 0 else (3, (2, 2, 2), 5)
    x = rng.normal(size=(n, *dims))
    w = rng.normal(size=(int(np.prod(dims)), m))
    b = rng.normal(size=(m,))
    return {"x": x, "w": w, "b": b}, rng.normal(size=(n, m))


def call(fn, v):
    return fn(v["dout"], (v["x"], v["w"], v["b"]))


def spec(seed: int = 0) -> dict:
    data, dout = inputs(seed)
    return {"reference": reference, "inputs": data, "dout": dout, "names": NAMES, "call": call}


def grade(student_fn, seed: int = 0, **kwargs):
    """The test cell's line: :func:`autodiff_viz.grading.check` of ``student_fn`` on the data of ``seed``."""
    from . import grade_with
    return grade_with(__name__, student_fn, seed, **kwargs)
