"""``adv.errors``: TensorFlow's ``tf.errors`` exception classes, for code that catches them
(``except tf.errors.InvalidArgumentError``). Each is also the Python exception the package raises in the
same situation (see :class:`~autodiff_viz.base.errors.OpError`); they live in :mod:`autodiff_viz.base.errors`.

    >>> try:
    ...     adv.constant([1.0, 2.0]) + adv.constant([1.0, 2.0, 3.0])
    ... except adv.errors.InvalidArgumentError as error:
    ...     print(type(error).__name__)
    InvalidArgumentError
"""
from .base.errors import (  # noqa: F401 - the tf.errors names
    TF_ERRORS,
    AbortedError,
    AlreadyExistsError,
    CancelledError,
    DataLossError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    OpError,
    OutOfRangeError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    UnknownError,
)

__all__ = list(TF_ERRORS)
