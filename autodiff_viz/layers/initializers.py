"""Initial values for weights, by Keras name or as a callable.

    >>> init = get("glorot_uniform")
    >>> init((64, 10), "float32").shape
    (64, 10)

Every initializer draws from the session's generator (:mod:`autodiff_viz.base.session`), so
:func:`set_random_seed` makes model construction (and ``fit``'s shuffling)
repeatable, like ``keras.utils.set_random_seed``.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..base.session import generator, seeded, set_random_seed  # noqa: F401  (adv.layers.set_random_seed)


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


class Initializer:
    """Keras 3's initializer objects: ``adv.initializers.RandomNormal(mean=0.0, stddev=0.01, seed=1)``.

    Call one with ``(shape, dtype)`` for an array; pass one as a layer's
    ``kernel_initializer``. With an integer ``seed`` every call draws the same
    values (as Keras 3's seeded initializers); without one, the session's
    generator (:func:`set_random_seed`) is used. ``get_config`` /
    ``from_config`` round-trip the arguments.
    """

    def __init__(self, seed=None, **config):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}: seed must be an int or None, got {type(seed).__name__}.")
        self.seed, self._config = seed, config

    def _draw(self, shape, dtype):   # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __call__(self, shape, dtype="float32"):
        shape = tuple(int(n) for n in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        if self.seed is None:
            return self._draw(shape, dtype or "float32")
        with seeded(int(self.seed)):
            return self._draw(shape, dtype or "float32")

    def get_config(self) -> dict:
        return {**self._config, **({"seed": self.seed} if self._seeded else {})}

    _seeded = True

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    _seeded = False

    def __init__(self):
        super().__init__()

    def _draw(self, shape, dtype):
        return zeros(shape, dtype)


class Ones(Zeros):
    def _draw(self, shape, dtype):
        return ones(shape, dtype)


class Constant(Initializer):
    _seeded = False

    def __init__(self, value=0.0):
        super().__init__(value=value)

    def _draw(self, shape, dtype):
        return np.full(shape, self._config["value"], dtype=dtype)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed, mean=mean, stddev=stddev)

    def _draw(self, shape, dtype):
        return random_normal(shape, dtype, **self._config)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed, minval=minval, maxval=maxval)

    def _draw(self, shape, dtype):
        return random_uniform(shape, dtype, **self._config)


class TruncatedNormal(Initializer):
    """Normal cut at two standard deviations (redrawn there), as Keras'."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed, mean=mean, stddev=stddev)

    def _draw(self, shape, dtype):
        out = generator().normal(0.0, 1.0, size=shape)
        bad = np.abs(out) > 2
        while bad.any():
            out[bad] = generator().normal(0.0, 1.0, size=int(bad.sum()))
            bad = np.abs(out) > 2
        return (self._config["mean"] + self._config["stddev"] * out).astype(dtype)


def _by_function(name, fn, doc):
    def __init__(self, seed=None):
        Initializer.__init__(self, seed)

    cls = type(name, (Initializer,), {"__init__": __init__, "_draw": lambda self, shape, dtype: fn(shape, dtype),
                                      "__doc__": doc})
    cls.__module__ = __name__
    return cls


GlorotUniform = _by_function("GlorotUniform", glorot_uniform, "Uniform on ±sqrt(6 / (fan_in + fan_out)).")
GlorotNormal = _by_function("GlorotNormal", glorot_normal, "Truncated normal, stddev sqrt(2 / (fan_in + fan_out)).")
HeUniform = _by_function("HeUniform", he_uniform, "Uniform on ±sqrt(6 / fan_in).")
HeNormal = _by_function("HeNormal", he_normal, "Truncated normal, stddev sqrt(2 / fan_in).")


class Orthogonal(Initializer):
    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed, gain=gain)

    def _draw(self, shape, dtype):
        return orthogonal(shape, dtype, gain=self._config["gain"])


class VarianceScaling(Initializer):
    """Keras' ``VarianceScaling``: values with variance ``scale / n``, ``n`` the fan in, the fan out or their
    mean (``mode``); drawn from a normal cut at two standard deviations (``"truncated_normal"``, its spread
    rescaled so the variance stays ``scale / n``), a plain normal (``"untruncated_normal"``) or a uniform on
    ``±√(3·scale/n)``. Glorot, He and LeCun initializers are this with fixed arguments."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, input_axes=None,
                 output_axes=None):
        if scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale}.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r}.")
        distribution = distribution.lower()
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform", "normal"):
            raise ValueError("VarianceScaling: distribution must be 'truncated_normal', 'untruncated_normal' or "
                             f"'uniform', got {distribution!r}.")
        super().__init__(seed, scale=scale, mode=mode,
                         distribution="truncated_normal" if distribution == "normal" else distribution,
                         input_axes=input_axes, output_axes=output_axes)

    def _draw(self, shape, dtype):
        fan_in, fan_out = _fans(shape)
        ins, outs = self._config["input_axes"], self._config["output_axes"]
        if ins is not None:                  # Keras 3.15: the fans as products over the axes named
            fan_in = int(np.prod([shape[a] for a in np.atleast_1d(ins)]))
        if outs is not None:
            fan_out = int(np.prod([shape[a] for a in np.atleast_1d(outs)]))
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self._config["mode"]]
        var = self._config["scale"] / max(1.0, n)
        kind = self._config["distribution"]
        if kind == "uniform":
            limit = np.sqrt(3.0 * var)
            return generator().uniform(-limit, limit, size=shape).astype(dtype)
        if kind == "untruncated_normal":
            return generator().normal(0.0, np.sqrt(var), size=shape).astype(dtype)
        return _truncated_normal(shape, np.sqrt(var), dtype)


class LecunNormal(VarianceScaling):
    """Truncated normal with variance ``1 / fan_in`` (for SELU networks)."""

    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}

    @classmethod
    def from_config(cls, config):
        return cls(seed=config.get("seed"))      # Keras writes the fixed scale, mode and distribution too


class LecunUniform(VarianceScaling):
    """Uniform on ``±√(3 / fan_in)``."""

    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "uniform", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}

    @classmethod
    def from_config(cls, config):
        return cls(seed=config.get("seed"))      # Keras writes the fixed scale, mode and distribution too


class Identity(Initializer):
    """Keras' ``Identity``: ``gain`` times the identity matrix (2-D shapes only; a non-square one is cut)."""
    _seeded = False

    def __init__(self, gain=1.0):
        super().__init__(gain=gain)

    def _draw(self, shape, dtype):
        if len(shape) != 2:
            raise ValueError(f"Identity initializer: the shape must have 2 axes, got {tuple(shape)}. Use it for "
                             "square or rectangular kernels (Dense), not for convolution kernels.")
        return (self._config["gain"] * np.eye(*shape)).astype(dtype)


IdentityInitializer = Identity
OrthogonalInitializer = Orthogonal
# Keras 3 also exports its initializer classes under snake_case names
constant, identity, lecun_normal, lecun_uniform = Constant, Identity, LecunNormal, LecunUniform
truncated_normal, variance_scaling = TruncatedNormal, VarianceScaling


def serialize(initializer) -> dict:
    """Keras' ``serialize``: ``{"module", "class_name", "config", "registered_name"}`` for an initializer
    object (a name given as a string is made an object first)."""
    init = deserialize(initializer) if isinstance(initializer, str) else initializer
    if not isinstance(init, Initializer):
        raise TypeError(f"serialize: expected an initializer object, got {type(initializer).__name__}.")
    return {"module": "keras.initializers", "class_name": type(init).__name__, "config": init.get_config(),
            "registered_name": None}


def deserialize(config):
    """Keras' ``deserialize``: an initializer object from :func:`serialize`'s dict, a ``{"class_name",
    "config"}`` dict or a name (``"lecun_uniform"``)."""
    if isinstance(config, str):
        key = config.lower()
        if key in _CLASS_NAMES:
            return _CLASSES[_CLASS_NAMES[key]]()
        if config in _CLASSES:
            return _CLASSES[config]()
        raise ValueError(f"deserialize: unknown initializer {config!r}; known: {sorted(_CLASS_NAMES)}.")
    if isinstance(config, dict) and config.get("class_name") in _CLASSES:
        return _CLASSES[config["class_name"]].from_config(config.get("config") or {})
    raise ValueError(f"deserialize: expected a name or a dict with a known 'class_name', got {config!r}.")


def get(identifier):
    """An initializer ``f(shape, dtype) -> ndarray`` from a name or a callable.

    A callable may take ``(shape, dtype)`` (Keras' signature) or just ``(shape)``.
    """
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, dict) and identifier.get("class_name") in _CLASSES:
        return _CLASSES[identifier["class_name"]].from_config(identifier.get("config", {}))
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


_CLASSES = {c.__name__: c for c in (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
                                    GlorotUniform, GlorotNormal, HeUniform, HeNormal, Orthogonal, VarianceScaling,
                                    LecunNormal, LecunUniform, Identity)}
_CLASS_NAMES = {"zeros": "Zeros", "ones": "Ones", "constant": "Constant", "random_normal": "RandomNormal",
                "random_uniform": "RandomUniform", "truncated_normal": "TruncatedNormal",
                "glorot_uniform": "GlorotUniform", "glorot_normal": "GlorotNormal", "he_uniform": "HeUniform",
                "he_normal": "HeNormal", "orthogonal": "Orthogonal", "variance_scaling": "VarianceScaling",
                "lecun_normal": "LecunNormal", "lecun_uniform": "LecunUniform", "identity": "Identity"}
ALIASES.update({"lecun_normal": LecunNormal(), "lecun_uniform": LecunUniform(), "identity": Identity(),
                "truncated_normal": TruncatedNormal(), "variance_scaling": VarianceScaling()})
