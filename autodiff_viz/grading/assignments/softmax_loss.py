"""CS231n A2 ``softmax_loss(x, y)``: the mean cross-entropy of softmax scores; the student returns ``loss, dx``."""
import numpy as np

import autodiff_viz as adv

TITLE = "Softmax loss: value and gradient"
FUNCTION = "softmax_loss"
POINTS = 3
NAMES = ("x",)

INTRO = f"""# {TITLE}

`x` has shape `(N, C)` (scores), `y` shape `(N,)` (the right class of each row). Write `softmax_loss(x, y)`
returning `loss, dx`: the mean over the rows of `-log(softmax(x)[i, y[i]])` and its gradient."""

SETUP = "import numpy as np"

STARTER = '''def softmax_loss(x, y):
    """loss, dx of the mean cross-entropy of softmax(x) against the labels y."""
'''

SOLUTION = """    shifted = x - x.max(axis=1, keepdims=True)
    p = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(p[np.arange(n), y]).mean()
    dx = p.copy()
    dx[np.arange(n), y] -= 1
    dx /= n
    return loss, dx
"""


def _labels(seed):
    n, c = (5, 4) if seed == 0 else (7, 3)
    return np.random.default_rng(3 + seed).integers(0, c, size=n), (n, c)


def reference(x, onehot):
    log_probs = adv.nn.log_softmax(x, axis=1)
    loss = -adv.mean(adv.sum(log_probs * onehot, axis=1))
    return loss


def inputs(seed: int = 0):
    y, (n, c) = _labels(seed)
    x = np.random.default_rng(5 + seed).normal(size=(n, c))
    return {"x": x, "onehot": np.eye(c)[y]}, y


def _check_loss(loss, right: float) -> None:
    """The loss value counts too (CS231n checks it): a wrong one is feedback, ``returned(wrong loss)``."""
    from ..check import _Returned
    try:
        value = float(np.asarray(loss, dtype=np.float64).reshape(()))
    except (TypeError, ValueError):
        raise _Returned(f"returned a loss that is not one number ({type(loss).__name__}); return loss, dx.",
                        "returned(wrong loss)") from None
    if not np.isclose(value, right, rtol=1e-6, atol=1e-10):
        raise _Returned(f"returned the loss {value:.6g}; the mean cross-entropy of these scores is {right:.6g}.",
                        "returned(wrong loss)")


def spec(seed: int = 0) -> dict:
    data, y = inputs(seed)

    def call(fn, v):
        out = fn(v["x"], y.copy())
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            return out                       # the check says what is wrong with what was returned
        _check_loss(out[0], float(v["loss"]))
        return {"x": out[1]}

    return {"reference": reference, "inputs": data, "names": NAMES, "call": call}


def grade(student_fn, seed: int = 0, **kwargs):
    """The test cell's line: :func:`autodiff_viz.grading.check` of ``student_fn`` on the data of ``seed``."""
    from . import grade_with
    return grade_with(__name__, student_fn, seed, **kwargs)
