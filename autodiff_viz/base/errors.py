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
    if type(exc) is ValueError:      # TensorFlow's InvalidArgumentError for the same op, and still a ValueError
        return InvalidArgumentError(None, name, msg)
    return type(exc)(msg)


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


# ---------------------------------------------------------------------------
# TensorFlow's exception classes (tf.errors), for the learner's ``except``
# ---------------------------------------------------------------------------
class OpError(Exception):
    """TensorFlow's ``tf.errors.OpError``: the base of the errors an op raises, made as TensorFlow's,
    ``OpError(node_def, op, message)`` (a message alone works too). Each subclass is also the Python
    exception this package raises in the same situation (``InvalidArgumentError`` is a ``ValueError``:
    operands whose shapes do not broadcast, or matmul's inner axes that differ), so ``except ValueError`` and
    ``except tf.errors.InvalidArgumentError`` both catch it."""

    error_code = 2

    def __init__(self, node_def=None, op=None, message=None, *args):
        if message is None and op is None and isinstance(node_def, str):
            node_def, message = None, node_def
        super().__init__(message)
        self.node_def, self.op, self.message = node_def, op, message

    def __str__(self):
        return str(self.message)


def _op_error(name, code, builtin, doc):
    return type(name, (OpError, builtin) if builtin is not None else (OpError,),
                {"error_code": code, "__doc__": f"TensorFlow's ``tf.errors.{name}``: {doc}",
                 "__module__": __name__})


CancelledError = _op_error("CancelledError", 1, None, "an operation was cancelled.")
UnknownError = _op_error("UnknownError", 2, None, "an error of no other kind.")
InvalidArgumentError = _op_error("InvalidArgumentError", 3, ValueError,
                                 "an op got an argument it cannot take (shapes that do not broadcast, ...); "
                                 "a ValueError, as this package raises there.")
DeadlineExceededError = _op_error("DeadlineExceededError", 4, TimeoutError, "a deadline passed.")
NotFoundError = _op_error("NotFoundError", 5, FileNotFoundError, "a file or other entity was not found.")
AlreadyExistsError = _op_error("AlreadyExistsError", 6, FileExistsError, "an entity already exists.")
PermissionDeniedError = _op_error("PermissionDeniedError", 7, PermissionError, "the caller may not do this.")
ResourceExhaustedError = _op_error("ResourceExhaustedError", 8, MemoryError, "memory (or another resource) ran out.")
FailedPreconditionError = _op_error("FailedPreconditionError", 9, RuntimeError,
                                    "the system is not in a state the operation needs.")
AbortedError = _op_error("AbortedError", 10, RuntimeError, "an operation was aborted.")
OutOfRangeError = _op_error("OutOfRangeError", 11, IndexError, "past the end of a range (an input exhausted).")
UnimplementedError = _op_error("UnimplementedError", 12, NotImplementedError, "an operation is not implemented.")
InternalError = _op_error("InternalError", 13, RuntimeError, "an internal invariant broke.")
UnavailableError = _op_error("UnavailableError", 14, RuntimeError, "a service is not available.")
DataLossError = _op_error("DataLossError", 15, None, "data were lost or corrupted.")
UnauthenticatedError = _op_error("UnauthenticatedError", 16, PermissionError, "no valid credentials.")

TF_ERRORS = ("OpError", "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
             "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "ResourceExhaustedError",
             "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError", "InternalError",
             "UnavailableError", "DataLossError", "UnauthenticatedError")
