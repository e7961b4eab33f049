"""CS231n A2 ``relu_backward(dout, cache)``: ``out = max(x, 0)`` given the upstream ``dout`` (``cache = x``)."""
import numpy as np

import autodiff_viz as adv

TITLE = "ReLU: backward"
FUNCTION = "relu_backward"
POINTS = 2
NAMES = ("x",)

INTRO = f"""# {TITLE}

The forward pass is `out = np.maximum(x, 0)`. Write `relu_backward(dout, cache)` with `cache = x`; return `dx`."""

SETUP = "import numpy as np"

STARTER = '''def relu_backward(dout, cache):
    """dx of out = max(x, 0), given dout = dL/dout."""
'''

SOLUTION = """    x = cache
    dx = dout * (x > 0)
    return dx
"""


def reference(x):
    out = adv.nn.relu(x)
    return out


def inputs(seed: int = 0):
    rng = np.random.default_rng(7 + seed)
    shape = (3, 4) if seed == 0 else (5, 2, 3)
    x = rng.normal(size=shape)
    x[np.abs(x) < 1e-3] = 0.5       # no entry at the kink, where the derivative is a convention
    return {"x": x}, rng.normal(size=shape)


def call(fn, v):
    return fn(v["dout"], v["x"])


def spec(seed: int = 0) -> dict:
    data, dout = inputs(seed)
    return {"reference": reference, "inputs": data, "dout": dout, "names": NAMES, "call": call}


def grade(student_fn, seed: int = 0, **kwargs):
    """The test cell's line: :func:`autodiff_viz.grading.check` of ``student_fn`` on the data of ``seed``."""
    from . import grade_with
    return grade_with(__name__, student_fn, seed, **kwargs)
