"""Initial values for weights, by Keras name or as a callable.

    >>> init = get("glorot_uniform")
    >>> init((64, 10), "float32").shape
    (64, 10)

Every initializer draws from the session's generator (:mod:`autodiff_viz.session`), so
:func:`set_random_seed` makes model construction (and ``fit``'s shuffling)
repeatable, like ``keras.utils.set_random_seed``.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..session import generator, set_random_seed  # noqa: F401  (adv.layers.set_random_seed)


def _fans(shape) -> tuple[int, int]:
    """``(fan_in, fan_out)`` as Keras computes them (a kernel's last two axes; receptive field for more)."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


def zeros(shape, dtype="float32"):
    return np.zeros(shape, dtype=dtype)


def ones(shape, dtype="float32"):
    return np.ones(shape, dtype=dtype)


def random_uniform(shape, dtype="float32", minval=-0.05, maxval=0.05):
    """Uniform on ``[-0.05, 0.05]`` (Keras' ``"uniform"``)."""
    return generator().uniform(minval, maxval, size=shape).astype(dtype)


def random_normal(shape, dtype="float32", mean=0.0, stddev=0.05):
    """Normal with standard deviation 0.05 (Keras' ``"normal"``)."""
    return generator().normal(mean, stddev, size=shape).astype(dtype)


def glorot_uniform(shape, dtype="float32"):
    """Uniform on ``±sqrt(6 / (fan_in + fan_out))``: Keras' default for kernels."""
    fan_in, fan_out = _fans(shape)
    limit = np.sqrt(6.0 / max(1, fan_in + fan_out))
    return generator().uniform(-limit, limit, size=shape).astype(dtype)


def glorot_normal(shape, dtype="float32"):
    fan_in, fan_out = _fans(shape)
    return _truncated_normal(shape, np.sqrt(2.0 / max(1, fan_in + fan_out)), dtype)


def he_uniform(shape, dtype="float32"):
    limit = np.sqrt(6.0 / max(1, _fans(shape)[0]))
    return generator().uniform(-limit, limit, size=shape).astype(dtype)


def he_normal(shape, dtype="float32"):
    return _truncated_normal(shape, np.sqrt(2.0 / max(1, _fans(shape)[0])), dtype)


def orthogonal(shape, dtype="float32", gain=1.0):
    """A (semi-)orthogonal matrix: Keras' default for recurrent kernels."""
    if len(shape) < 2:
        raise ValueError(f"orthogonal initializer needs at least 2 axes, got shape {tuple(shape)}.")
    rows, cols = int(np.prod(shape[:-1])), shape[-1]
    a = generator().normal(size=(max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return (gain * q[:rows, :cols]).reshape(shape).astype(dtype)


def _truncated_normal(shape, stddev, dtype):
    """Normal cut at two standard deviations, rescaled to keep ``stddev`` (as Keras' variance scaling)."""
    scale = stddev / 0.87962566103423978
    out = generator().normal(0.0, 1.0, size=shape)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = generator().normal(0.0, 1.0, size=int(bad.sum()))
        bad = np.abs(out) > 2
    return (out * scale).astype(dtype)


ALIASES = {
    "zeros": zeros, "ones": ones,
    "uniform": random_uniform, "random_uniform": random_uniform,
    "normal": random_normal, "random_normal": random_normal,
    "glorot_uniform": glorot_uniform, "glorot_normal": glorot_normal,
    "he_uniform": he_uniform, "he_normal": he_normal, "orthogonal": orthogonal,
}


def get(identifier):
    """An initializer ``f(shape, dtype) -> ndarray`` from a name or a callable.

    A callable may take ``(shape, dtype)`` (Keras' signature) or just ``(shape)``.
    """
    if isinstance(identifier, str):
        key = identifier.lower()
        if key not in ALIASES:
            raise ValueError(f"Unknown initializer {identifier!r}. Use one of {sorted(ALIASES)} "
                             "or a callable f(shape, dtype).")
        return ALIASES[key]
    if callable(identifier):
        try:
            params = inspect.signature(identifier).parameters
            takes_dtype = "dtype" in params or len(params) >= 2 or any(
                p.kind == p.VAR_POSITIONAL or p.kind == p.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            takes_dtype = True
        if takes_dtype:
            return lambda shape, dtype: np.asarray(_unwrap(identifier(shape, dtype=dtype)), dtype=dtype)
        return lambda shape, dtype: np.asarray(_unwrap(identifier(shape)), dtype=dtype)
    raise TypeError(f"An initializer must be a name (e.g. 'glorot_uniform') or a callable, "
                    f"got {type(identifier).__name__}.")


def _unwrap(value):
    from ..core.tensor import Tensor
    return value._value if isinstance(value, Tensor) else value
