"""Error messages a learner can act on: the op, the shapes or dtypes, and the fix."""
from __future__ import annotations


def _describe(inputs) -> str:
    return ", ".join(f"{t.name or s}: shape {t.shape} {t.dtype}"
                     for s, t in zip("abcdefgh", inputs))


def op_failed(rule, inputs, params, exc: Exception) -> Exception:
    """An exception of the same type as numpy's, saying what went wrong in words."""
    name = rule.name
    shapes = [t.shape for t in inputs]
    if name == "matmul" and len(inputs) == 2:
        a, b = shapes
        if 0 in (len(a), len(b)):
            msg = (f"matmul: operands must have at least one axis, got shapes {a} and {b}. "
                   "Use multiply (*) for scalars.")
        else:
            k_a, k_b = a[-1], (b[0] if len(b) == 1 else b[-2])
            msg = (f"matmul: cannot multiply shapes {a} @ {b}: the last axis of the left operand "
                   f"({k_a}) must equal the {'only' if len(b) == 1 else 'second-to-last'} axis of the "
                   f"right operand ({k_b}). Fix: transpose one operand (W.T) or check which axis "
                   "holds the features.")
            if k_a == k_b:
                msg = (f"matmul: the stacked (batch) axes of {a} and {b} do not broadcast. "
                       "Fix: give both the same leading axes, or add axes of size 1.")
    elif rule.elementwise and len(inputs) >= 2 and "broadcast" in str(exc):
        msg = (f"{name}: shapes {' and '.join(map(str, shapes))} do not broadcast. Aligned from the "
               "right, each pair of axes must be equal or one of them 1. Fix: reshape one input "
               "(e.g. x[:, None] or adv.expand_dims) so the axes line up.")
    else:
        extra = "".join(f", {k}={v!r}" for k, v in params.items())
        msg = f"{name}({_describe(inputs)}{extra}) failed: {exc}"
    err = type(exc)(msg)
    return err


class WeightsFileError(ValueError):
    """A weights file that cannot be read as what ``save_weights`` writes.

    Raised by ``load_weights`` for a missing file, a file that is not an
    ``.npz`` (zip) archive, an archive that holds pickled objects or
    non-numeric arrays, or weights that do not match the model. The message
    names the file and says what was expected; no weight has changed.
    """


class ModelFileError(ValueError):
    """A ``.keras`` file, or a model's config or JSON, that cannot be read as what ``model.save`` writes.

    Raised by ``adv.saving.load_model`` for a file that is not a zip
    archive, an archive without ``config.json`` or ``model.weights.npz``,
    JSON that does not parse, a config written by Keras or by another
    package, a functional graph that cannot be rebuilt, or an optimizer
    state that does not fit the model. The message names the file (or the
    config) and what was expected; nothing was loaded.
    """
