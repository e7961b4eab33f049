"""Random tensors, as ``keras.random``: ``normal``, ``uniform``, ``truncated_normal``, ``randint``,
``shuffle``, ``dropout`` and ``SeedGenerator``.

    >>> import autodiff_viz as adv
    >>> z = adv.random.normal((2, 3), seed=1337)          # the same numbers on every call
    >>> bool((z.numpy() == adv.random.normal((2, 3), seed=1337).numpy()).all())
    True
    >>> gen = adv.random.SeedGenerator(1337)              # different numbers on every call ...
    >>> a, b = adv.random.normal((2,), seed=gen), adv.random.normal((2,), seed=gen)
    >>> bool((a.numpy() != b.numpy()).all())              # ... and the same sequence in every run
    True

``seed`` works as in Keras 3, where every random function is *stateless*:

* an **int** gives the same draws on every call (Keras: "passing an integer
  as the seed value will produce the same random values for each call");
* a :class:`SeedGenerator` carries the state: each call takes the next seed
  from it, so two calls differ, and two generators made with the same seed
  give the same sequence (the way to get fresh noise in every ``train_step``
  and still a repeatable run);
* **None** draws from the package's global generator, the one behind weight
  initialisation and ``fit``'s shuffling, so ``adv.layers.set_random_seed(0)``
  makes these calls repeatable too (as ``keras.utils.set_random_seed``).

The draws are those of Keras' numpy backend: an int seed ``s`` (or the
``n``-th seed of ``SeedGenerator(s)``) is turned into the numpy generator
``np.random.default_rng([s, n])``, with ``n = 0`` for an int, so the first
draw of ``SeedGenerator(s)`` equals the draw of ``seed=s``.

Samples are constants: nothing is recorded and no gradient flows to
``mean``, ``stddev`` or the bounds (write ``mean + stddev * normal(shape)``,
the reparameterization trick, for a gradient to them). ``dropout`` and
``shuffle`` keep the gradient to their input: they are recorded as a
multiplication by a constant mask and a gather.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..base.session import generator
from .ops import _axes, _default_float, _new_shape, _tensor, multiply, take
from .tensor import Tensor, check_nbytes, constant

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "shuffle", "dropout"]

_SIZE_FIX = ("Check the shape (a batch size or latent size that is much too large?); draws are made in float64 "
             "before the cast to dtype.")


class SeedGenerator:
    """The state behind a sequence of seeds, as ``keras.random.SeedGenerator``.

    Pass it as ``seed=`` to the functions of ``adv.random``: each call takes
    the next seed, so repeated calls give new numbers, while the whole
    sequence is fixed by the start seed. The GAN of Keras' guide "Customizing
    what happens in fit()" keeps one on the model::

        self.seed_generator = adv.random.SeedGenerator(1337)
        ...
        z = adv.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)

    The state is the pair ``[seed, n]`` (``n`` counts the seeds taken), as in
    Keras. Unlike Keras it is a plain attribute, not a variable of the model,
    so ``save_weights`` does not store it.

    Args:
        seed: an int; None draws a start seed from the global generator (so
            :func:`adv.layers.set_random_seed` fixes it too).
        name: a label for the generator (``repr`` shows it).
    """

    def __init__(self, seed=None, name=None):
        if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, Integral)):
            raise TypeError(f"SeedGenerator: seed must be an int or None, got {seed!r} "
                            f"({type(seed).__name__}); write e.g. SeedGenerator(1337).")
        self._initial_seed = None if seed is None else int(seed)
        start = generator().integers(1, 10 ** 9) if seed is None else seed
        self._seed = int(start) & 0xFFFFFFFF      # a 32-bit seed, as Keras (-1 and 2**32 - 1 are the same)
        self._count = 0
        self.name = "seed_generator" if name is None else str(name)

    @property
    def state(self) -> Tensor:
        """``[seed, n]`` (uint32): the seed and how many seeds were taken; a copy, as a constant."""
        return constant(np.array([self._seed, self._count], dtype=np.uint32))

    def next(self) -> np.ndarray:
        """The next seed ``[seed, n]``, advancing the state (the random functions call it)."""
        key = np.array([self._seed, self._count], dtype=np.uint32)
        self._count += 1
        return key

    def get_config(self) -> dict:
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "SeedGenerator":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<SeedGenerator {self.name!r} seed={self._seed} taken={self._count}>"


def _check_seed(seed, fn: str) -> None:
    if isinstance(seed, SeedGenerator) or seed is None:
        return
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, Integral):
        raise TypeError(f"{fn}: seed must be an int (the same draws on every call), an adv.random.SeedGenerator "
                        f"(new draws on every call) or None (the global generator), got {seed!r} "
                        f"({type(seed).__name__}); e.g. seed=1337 or seed=adv.random.SeedGenerator(1337).")


def _generator(seed) -> np.random.Generator:
    """The numpy generator for one call; a SeedGenerator advances here, after every check has passed."""
    if seed is None:
        return generator()
    if isinstance(seed, SeedGenerator):
        return np.random.default_rng(seed.next())
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, 0])


def _number(value, what: str, fn: str) -> float:
    if isinstance(value, Tensor):
        raise TypeError(f"{fn}: {what} must be a number, got a tensor. Samples have no gradient, so a tensor "
                        f"{what} would be cut off; for a differentiable mean and spread write "
                        f"mean + stddev * {fn}(shape) (the reparameterization trick).")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{fn}: {what} must be a number, got {value!r} ({type(value).__name__}).")
    return float(value)


def _float_dtype(dtype, fn: str) -> np.dtype:
    dt = _default_float(dtype, fn)
    if dt.kind != "f":
        raise ValueError(f"{fn} requires a floating dtype, got {dt.name}; use 'float32' or 'float64' "
                         "(adv.random.randint draws integers).")
    return dt


def _draw(fn, shape, dtype, seed):
    """Checks common to the sampling functions: ``(shape, dtype)``, all before anything is drawn."""
    shape, dt = _new_shape(shape, fn), _float_dtype(dtype, fn)
    _check_seed(seed, fn)
    check_nbytes(fn, shape, np.float64, _SIZE_FIX)
    return shape, dt


def _mean_stddev(mean, stddev, fn: str) -> tuple:
    """``mean`` and ``stddev`` as numbers, ``stddev ≥ 0``, or an error naming ``fn``."""
    mean, stddev = _number(mean, "mean", fn), _number(stddev, "stddev", fn)
    if stddev < 0:
        raise ValueError(f"{fn}: stddev must be 0 or more, got {stddev}.")
    return mean, stddev


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) -> Tensor:
    """Samples of the normal distribution N(mean, stddev²), as ``keras.random.normal``.

    Args:
        shape: an int or a tuple of ints (``adv.shape(x)`` works).
        mean: a number, the mean of the samples.
        stddev: a number ``≥ 0``, their standard deviation.
        dtype: a floating dtype; None is ``adv.layers.floatx()`` (float32), as Keras.
        seed: an int, a :class:`SeedGenerator` or None (see the module).

    Returns:
        A constant tensor (sampling has no gradient).
    """
    fn = "random.normal"
    mean, stddev = _mean_stddev(mean, stddev, fn)
    shape, dt = _draw(fn, shape, dtype, seed)
    return Tensor._wrap(_generator(seed).normal(loc=mean, scale=stddev, size=shape).astype(dt))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None) -> Tensor:
    """Samples of the uniform distribution on ``[minval, maxval)``, as ``keras.random.uniform``.

    Args:
        shape: an int or a tuple of ints.
        minval: a number, the lower bound (included).
        maxval: a number, the upper bound (excluded).
        dtype: a floating dtype; None is ``adv.layers.floatx()`` (float32).
        seed: an int, a :class:`SeedGenerator` or None.

    Returns:
        A constant tensor (sampling has no gradient).
    """
    fn = "random.uniform"
    minval, maxval = _number(minval, "minval", fn), _number(maxval, "maxval", fn)
    shape, dt = _draw(fn, shape, dtype, seed)
    return Tensor._wrap(_generator(seed).uniform(low=minval, high=maxval, size=shape).astype(dt))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) -> Tensor:
    """Samples of N(mean, stddev²) kept within two ``stddev`` of ``mean``, as ``keras.random.truncated_normal``.

    A sample outside ``[mean − 2·stddev, mean + 2·stddev]`` is drawn again.
    ``stddev`` is that of the normal before the cut: the samples' own
    standard deviation is about ``0.88·stddev``. (The ``"glorot_normal"`` and
    ``"he_normal"`` initializers rescale to keep their ``stddev``; this
    function, like Keras', does not.)

    Args:
        shape: an int or a tuple of ints.
        mean: a number, the centre of the cut normal.
        stddev: a number ``≥ 0``, the standard deviation of the normal before the cut.
        dtype: a floating dtype; None is ``adv.layers.floatx()`` (float32).
        seed: an int, a :class:`SeedGenerator` or None.

    Returns:
        A constant tensor (sampling has no gradient).
    """
    fn = "random.truncated_normal"
    mean, stddev = _mean_stddev(mean, stddev, fn)
    shape, dt = _draw(fn, shape, dtype, seed)
    rng, size = _generator(seed), int(np.prod(shape))
    kept = np.empty(0)
    while kept.size < size:         # Keras' numpy backend: draw a batch, keep those inside, until enough
        batch = rng.normal(loc=mean, scale=stddev, size=size)
        kept = np.append(kept, batch[(batch >= mean - 2 * stddev) & (batch <= mean + 2 * stddev)])
    return Tensor._wrap(kept[:size].astype(dt).reshape(shape))


def randint(shape, minval, maxval, dtype="int32", seed=None) -> Tensor:
    """Integers drawn uniformly from ``minval, ..., maxval − 1``, as ``keras.random.randint``.

    Args:
        shape: an int or a tuple of ints.
        minval: an int, the smallest value.
        maxval: an int above ``minval``; the largest value is ``maxval − 1``.
        dtype: an integer dtype that holds both bounds (``"int32"``, as Keras).
        seed: an int, a :class:`SeedGenerator` or None.

    Returns:
        A constant integer tensor.
    """
    fn = "random.randint"
    shape = _new_shape(shape, fn)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{fn}: {dtype!r} is not a dtype; use e.g. 'int32' or 'int64'.") from None
    if dt.kind not in "iu":
        raise ValueError(f"{fn} requires an integer dtype, got {dt.name}; use 'int32' or 'int64' "
                         "(adv.random.uniform draws floats).")
    for what, value in (("minval", minval), ("maxval", maxval)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
            raise TypeError(f"{fn}: {what} must be an int, got {value!r} ({type(value).__name__}).")
    minval, maxval = int(minval), int(maxval)
    if minval >= maxval:
        raise ValueError(f"{fn}: minval ({minval}) must be less than maxval ({maxval}); the values are "
                         f"minval, ..., maxval - 1 (maxval is excluded), e.g. randint(shape, 0, 10) for 0 to 9.")
    info = np.iinfo(dt)
    if minval < info.min or maxval - 1 > info.max:
        raise ValueError(f"{fn}: the values {minval} to {maxval - 1} do not fit in {dt.name} "
                         f"({info.min} to {info.max}); pass a wider dtype, e.g. dtype='int64'.")
    _check_seed(seed, fn)
    check_nbytes(fn, shape, dt, "Check the shape (a size that is much too large?).")
    return Tensor._wrap(_generator(seed).integers(low=minval, high=maxval, size=shape, dtype=dt))


def shuffle(x, axis=0, seed=None) -> Tensor:
    """``x`` with its slices along ``axis`` in a random order; differentiable in ``x``.

    One permutation moves whole slices (for ``axis=0``: whole rows, so the
    entries of an example stay together), as ``np.random.permutation`` and
    Keras' TensorFlow backend do. (Keras' numpy and JAX backends shuffle
    each 1-D line along ``axis`` on its own instead.) It is recorded as a
    gather, ``adv.take(x, perm, axis)``, so the gradient of an entry goes back
    to the place it came from.

    Args:
        x: a tensor (or array) with at least one axis.
        axis: the axis to shuffle along.
        seed: an int, a :class:`SeedGenerator` or None.
    """
    fn = "random.shuffle"
    x = _tensor(x)
    if x.ndim == 0:
        raise ValueError(f"{fn}: x is a scalar (shape ()); there is no axis to shuffle. Give a tensor with at "
                         "least one axis.")
    ax = _axes(axis, x.ndim, fn)[0] % x.ndim
    _check_seed(seed, fn)
    return take(x, _generator(seed).permutation(x.shape[ax]), axis=ax)


def dropout(inputs, rate, noise_shape=None, seed=None) -> Tensor:
    """Zero each entry with probability ``rate`` and scale the rest by ``1/(1 − rate)``, as ``keras.random.dropout``.

    ``y = inputs · mask / (1 − rate)`` with ``mask`` 1 where a uniform draw
    is below ``1 − rate`` (Keras' rule), so ``E[y] = inputs``. It is recorded
    as one multiplication by the constant ``mask / (1 − rate)`` (named
    ``dropout_mask``): the gradient with respect to ``inputs`` is that
    constant. ``rate == 0`` returns ``inputs`` itself and draws nothing, as
    in Keras.

    Args:
        inputs: a floating tensor (or array).
        rate: the fraction to drop, in ``[0, 1)``.
        noise_shape: the shape of the mask, one entry per axis of ``inputs``,
            each 1 (the same choice along that axis), None or the input's size:
            ``(batch, 1, features)`` drops whole features at every step.
        seed: an int, a :class:`SeedGenerator` or None.
    """
    fn = "random.dropout"
    x = _tensor(inputs)
    if x.dtype.kind != "f":
        raise TypeError(f"{fn}: inputs must be floating, got dtype {x.dtype}; cast first, "
                        "e.g. adv.cast(x, 'float32').")
    if isinstance(rate, (bool, np.bool_, Tensor)) or not isinstance(rate, Real) or not 0 <= rate < 1:
        raise ValueError(f"{fn}: rate must be a number in [0, 1) (the fraction of entries to drop), got {rate!r}. "
                         "rate=1 would drop everything and divide by 0; adv.zeros(adv.shape(x)) is that tensor.")
    mask_shape = _noise_shape(noise_shape, x.shape, fn)
    _check_seed(seed, fn)
    if rate == 0:
        return x
    keep = 1.0 - float(rate)
    kept = _generator(seed).uniform(size=mask_shape) < keep
    return multiply(x, constant(kept.astype(x.dtype) * x.dtype.type(1.0 / keep), name="dropout_mask"))


def _noise_shape(noise_shape, shape: tuple, fn: str) -> tuple:
    if noise_shape is None:
        return tuple(shape)
    given = tuple(noise_shape)
    if len(given) != len(shape):
        raise ValueError(f"{fn}: noise_shape {given} must have one entry per axis of inputs, which has shape "
                         f"{tuple(shape)}.")
    out = []
    for s, n in zip(given, shape):
        if s is not None and (isinstance(s, (bool, np.bool_)) or not isinstance(s, Integral) or int(s) not in (1, n)):
            raise ValueError(f"{fn}: noise_shape {given} does not broadcast to the shape of inputs {tuple(shape)}: "
                             "each entry must be 1, None or the input's size.")
        out.append(n if s is None else int(s))
    return tuple(out)
