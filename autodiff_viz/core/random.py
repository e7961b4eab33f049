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

from ..base.session import generator, set_random_seed
from .ops import _axes, _default_float, _new_shape, _tensor, add, cast, multiply, subtract, take
from .tensor import Tensor, check_nbytes, constant

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "shuffle", "dropout",
           # TensorFlow's tf.random names
           "set_seed", "categorical", "gamma", "poisson", "stateless_normal", "stateless_uniform",
           "stateless_truncated_normal", "stateless_parameterized_truncated_normal", "stateless_categorical",
           "stateless_binomial", "stateless_gamma", "stateless_poisson", "create_rng_state", "split", "fold_in",
           "Generator", "get_global_generator", "set_global_generator"]

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


def _number(value, what: str, fn: str):
    """``value`` as a float; a 0-d tensor stays a tensor (TensorFlow takes one, and differentiates through it),
    a 0-d numpy array or numpy number becomes a float."""
    if isinstance(value, Tensor):
        if value.ndim != 0 or value.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: {what} must be a number or a 0-d numeric tensor, got a tensor of shape "
                            f"{value.shape} and dtype {value.dtype.name}. For one {what} per entry write "
                            f"{what} * {fn}(shape) (or + for a mean) yourself.")
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{fn}: {what} must be a number, got {value!r} ({type(value).__name__}).")
    return float(value)


def _affine(standard, scale, loc, dt) -> Tensor:
    """``standard · scale + loc`` (TensorFlow's ``rnd * stddev + mean``) in ``dt``: numbers are applied on the
    numpy draw; a tensor ``scale`` or ``loc`` through recorded ops, so a tape differentiates through it as
    TensorFlow's does (a float64 tensor, as ``adv.sqrt(2.0)`` makes, is cast to ``dt``)."""
    if not isinstance(scale, Tensor) and not isinstance(loc, Tensor):
        return Tensor._wrap((standard * scale + loc).astype(dt))
    out = Tensor._wrap(standard.astype(dt))
    scale, loc = (cast(v, dt) if isinstance(v, Tensor) else v for v in (scale, loc))
    return add(multiply(out, scale), loc)


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
    if np.any(np.asarray(stddev._value if isinstance(stddev, Tensor) else stddev) < 0):
        raise ValueError(f"{fn}: stddev must be 0 or more, got {stddev}.")
    return mean, stddev


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) -> Tensor:
    """Samples of the normal distribution N(mean, stddev²), as ``keras.random.normal``.

    Args:
        shape: an int or a tuple of ints (``adv.shape(x)`` works).
        mean: a number (or a 0-d tensor, as TensorFlow: the samples are then ``rnd * stddev + mean`` through
            recorded ops, so a tape differentiates with respect to it), the mean of the samples.
        stddev: a number ``≥ 0`` (or a 0-d tensor, likewise), their standard deviation.
        dtype: a floating dtype; None is ``adv.layers.floatx()`` (float32), as Keras.
        seed: an int, a :class:`SeedGenerator` or None (see the module).

    Returns:
        A constant tensor (sampling has no gradient).
    """
    fn = "random.normal"
    mean, stddev = _mean_stddev(mean, stddev, fn)
    shape, dt = _draw(fn, shape, dtype, seed)
    if not isinstance(mean, Tensor) and not isinstance(stddev, Tensor):
        return Tensor._wrap(_generator(seed).normal(loc=mean, scale=stddev, size=shape).astype(dt))
    return _affine(_generator(seed).standard_normal(size=shape), stddev, mean, dt)


def uniform(shape, minval=0.0, maxval=None, dtype=None, seed=None) -> Tensor:
    """Samples of the uniform distribution on ``[minval, maxval)``, as ``keras.random.uniform``.

    Args:
        shape: an int or a tuple of ints.
        minval: a number (or a 0-d tensor, as TensorFlow, differentiable), the lower bound (included).
        maxval: a number (or a 0-d tensor), the upper bound (excluded).
        dtype: a floating dtype; None is ``adv.layers.floatx()`` (float32).
        seed: an int, a :class:`SeedGenerator` or None.

    Returns:
        A constant tensor (sampling has no gradient).
    """
    fn = "random.uniform"
    if dtype is not None and np.dtype(dtype).kind in "iu":        # tf.random.uniform's integers
        if maxval is None:
            raise ValueError(f"random.uniform requires a floating dtype, or an explicit maxval for the integer "
                             f"dtype {np.dtype(dtype).name} (TensorFlow's rule): e.g. "
                             "adv.random.uniform((3,), 0, 10, dtype='int32'), or adv.random.randint.")
        return randint(shape, int(minval), int(maxval), dtype=dtype, seed=seed)
    maxval = 1.0 if maxval is None else maxval
    minval, maxval = _number(minval, "minval", fn), _number(maxval, "maxval", fn)
    shape, dt = _draw(fn, shape, dtype, seed)
    if not isinstance(minval, Tensor) and not isinstance(maxval, Tensor):
        return Tensor._wrap(_generator(seed).uniform(low=minval, high=maxval, size=shape).astype(dt))
    width = subtract(cast(maxval, dt) if isinstance(maxval, Tensor) else maxval,
                     cast(minval, dt) if isinstance(minval, Tensor) else minval)
    return _affine(_generator(seed).uniform(size=shape), width, minval, dt)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None) -> Tensor:
    """Samples of N(mean, stddev²) kept within two ``stddev`` of ``mean``, as ``keras.random.truncated_normal``.

    A sample outside ``[mean − 2·stddev, mean + 2·stddev]`` is drawn again.
    ``stddev`` is that of the normal before the cut: the samples' own
    standard deviation is about ``0.88·stddev``. (The ``"glorot_normal"`` and
    ``"he_normal"`` initializers rescale to keep their ``stddev``; this
    function, like Keras', does not.)

    Args:
        shape: an int or a tuple of ints.
        mean: a number (or a 0-d tensor, as :func:`normal`), the centre of the cut normal.
        stddev: a number ``≥ 0`` (or a 0-d tensor), the standard deviation of the normal before the cut.
        dtype: a floating dtype; None is ``adv.layers.floatx()`` (float32).
        seed: an int, a :class:`SeedGenerator` or None.

    Returns:
        A constant tensor (sampling has no gradient).
    """
    fn = "random.truncated_normal"
    mean, stddev = _mean_stddev(mean, stddev, fn)
    shape, dt = _draw(fn, shape, dtype, seed)
    rng, size = _generator(seed), int(np.prod(shape))
    given = isinstance(mean, Tensor) or isinstance(stddev, Tensor)     # then TensorFlow's rnd * stddev + mean
    loc, scale = (0.0, 1.0) if given else (mean, stddev)
    kept = np.empty(0)
    while kept.size < size:         # Keras' numpy backend: draw a batch, keep those inside, until enough
        batch = rng.normal(loc=loc, scale=scale, size=size)
        kept = np.append(kept, batch[(batch >= loc - 2 * scale) & (batch <= loc + 2 * scale)])
    kept = kept[:size].reshape(shape)
    return _affine(kept, stddev, mean, dt) if given else Tensor._wrap(kept.astype(dt))


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


# ----- tf.random's own names ------------------------------------------------------------------------------
def set_seed(seed):
    """``tf.random.set_seed``: seed the global generator behind every unseeded draw (and weight initialization),
    so a run repeats; the numbers differ from TensorFlow's own (another generator)."""
    set_random_seed(int(seed))


def _stateless(seed, fn):
    """A numpy generator from TensorFlow's stateless seed, a pair of ints: the same pair, the same draws."""
    pair = np.asarray(seed._value if isinstance(seed, Tensor) else seed).reshape(-1)
    if pair.shape != (2,):
        raise ValueError(f"{fn}: seed must be a pair of ints (seed=[1, 2]), got {seed!r}.")
    return np.random.default_rng([int(v) & 0xFFFFFFFF for v in pair] + [1])


def _in(dtype, default="float32"):
    return np.dtype(default if dtype is None else dtype)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """``tf.random.categorical``: for each row of ``logits`` (unnormalized log-probabilities), ``num_samples``
    class indices drawn with probabilities ``softmax(row)``."""
    z = np.asarray(_tensor(logits)._value, dtype=np.float64)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    rng = _generator(seed)
    draws = np.stack([rng.choice(len(row), size=int(num_samples), p=row) for row in p])
    return constant(draws.astype(_in(dtype, "int64")))


def gamma(shape, alpha, beta=None, dtype=None, seed=None, name=None):
    """``tf.random.gamma``: Gamma(α, β) samples of shape ``shape + alpha.shape`` (β the rate, 1 when None)."""
    a = np.asarray(alpha, dtype=np.float64)
    b = 1.0 if beta is None else np.asarray(beta, dtype=np.float64)
    size = _new_shape(shape, "random.gamma") + np.broadcast_shapes(a.shape, np.shape(b))
    return constant((_generator(seed).gamma(a, size=size) / b).astype(_in(dtype)))


def poisson(shape, lam, dtype=None, seed=None, name=None):
    """``tf.random.poisson``: Poisson(λ) samples of shape ``shape + lam.shape``."""
    lam = np.asarray(lam, dtype=np.float64)
    size = _new_shape(shape, "random.poisson") + lam.shape
    return constant(_generator(seed).poisson(lam, size=size).astype(_in(dtype)))


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=None, name=None, alg="auto_select"):
    """``tf.random.stateless_normal``: N(mean, stddev²) samples fixed by the seed pair."""
    size = _new_shape(shape, "random.stateless_normal")
    return constant((_stateless(seed, "stateless_normal").normal(size=size) * stddev + mean).astype(_in(dtype)))


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=None, name=None, alg="auto_select"):
    """``tf.random.stateless_uniform``: uniform samples on ``[minval, maxval)`` fixed by the seed pair (integers
    in ``minval … maxval − 1`` for an integer dtype)."""
    size, dt = _new_shape(shape, "random.stateless_uniform"), _in(dtype)
    rng = _stateless(seed, "stateless_uniform")
    if dt.kind in "iu":
        return constant(rng.integers(int(minval), int(maxval), size=size).astype(dt))
    return constant(rng.uniform(minval, 1.0 if maxval is None else maxval, size=size).astype(dt))


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=None, name=None, alg="auto_select"):
    """``tf.random.stateless_truncated_normal``: as :func:`truncated_normal`, fixed by the seed pair."""
    size = _new_shape(shape, "random.stateless_truncated_normal")
    rng = _stateless(seed, "stateless_truncated_normal")
    z = rng.normal(size=size)
    while (bad := np.abs(z) > 2).any():
        z[bad] = rng.normal(size=int(bad.sum()))
    return constant((z * stddev + mean).astype(_in(dtype)))


def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0, minvals=-2.0, maxvals=2.0,
                                             name=None):
    """``tf.random.stateless_parameterized_truncated_normal``: N(mean, stddev²) kept within ``[minval, maxval]``."""
    size = _new_shape(shape, "random.stateless_parameterized_truncated_normal")
    rng = _stateless(seed, "stateless_parameterized_truncated_normal")
    lo, hi = (np.broadcast_to(np.asarray(v, dtype=np.float64), size) for v in (minvals, maxvals))
    m, sd = (np.broadcast_to(np.asarray(v, dtype=np.float64), size) for v in (means, stddevs))
    z = rng.normal(m, sd)
    while (bad := (z < lo) | (z > hi)).any():
        z[bad] = rng.normal(m[bad], sd[bad])
    return constant(z.astype(np.float32))


def stateless_categorical(logits, num_samples, seed, dtype=None, name=None):
    """``tf.random.stateless_categorical``: as :func:`categorical`, fixed by the seed pair."""
    z = np.asarray(_tensor(logits)._value, dtype=np.float64)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    rng = _stateless(seed, "stateless_categorical")
    return constant(np.stack([rng.choice(len(r), size=int(num_samples), p=r) for r in p]).astype(_in(dtype, "int64")))


def stateless_binomial(shape, seed, counts, probs, output_dtype=np.int32, name=None):
    """``tf.random.stateless_binomial``: Binomial(counts, probs) samples fixed by the seed pair."""
    size = _new_shape(shape, "random.stateless_binomial")
    return constant(_stateless(seed, "stateless_binomial").binomial(counts, probs, size=size).astype(output_dtype))


def stateless_gamma(shape, seed, alpha, beta=None, dtype=None, name=None):
    """``tf.random.stateless_gamma``: Gamma(α, β) samples of shape ``shape`` fixed by the seed pair."""
    size = _new_shape(shape, "random.stateless_gamma")
    b = 1.0 if beta is None else np.asarray(beta, dtype=np.float64)
    return constant((_stateless(seed, "stateless_gamma").gamma(np.asarray(alpha, dtype=np.float64), size=size) / b)
                    .astype(_in(dtype)))


def stateless_poisson(shape, seed, lam, dtype=np.int32, name=None):
    """``tf.random.stateless_poisson``: Poisson(λ) samples of shape ``shape`` fixed by the seed pair."""
    size = _new_shape(shape, "random.stateless_poisson")
    return constant(_stateless(seed, "stateless_poisson").poisson(lam, size=size).astype(dtype))


def create_rng_state(seed, alg):
    """``tf.random.create_rng_state``: a state array made from ``seed`` (for :class:`Generator`)."""
    return np.asarray([int(seed) & 0xFFFFFFFF, 0, 0], dtype=np.int64)


def split(seed, num=2, alg="auto_select"):
    """``tf.random.split``: ``num`` new seed pairs derived from a seed pair (for the stateless functions)."""
    rng = _stateless(seed, "random.split")
    return constant(rng.integers(0, 2 ** 31 - 1, size=(int(num), 2)).astype(_seed_dtype(seed)))


def _seed_dtype(seed):
    """A seed tensor keeps its integer dtype; a Python list is int32, as TensorFlow converts it."""
    return seed.dtype if isinstance(seed, Tensor) else np.int32


def fold_in(seed, data, alg="auto_select"):
    """``tf.random.fold_in``: a new seed pair from a seed pair and an integer (a step number, say)."""
    pair = np.asarray(seed._value if isinstance(seed, Tensor) else seed).reshape(-1)
    rng = np.random.default_rng([int(v) & 0xFFFFFFFF for v in pair] + [int(data) & 0xFFFFFFFF, 2])
    return constant(rng.integers(0, 2 ** 31 - 1, size=2).astype(_seed_dtype(seed)))


class Generator:
    """``tf.random.Generator``: a generator object with its own state (``Generator.from_seed(1)``), whose
    ``normal``, ``uniform``, ``truncated_normal`` … draw in sequence. Numbers differ from TensorFlow's."""

    def __init__(self, copy_from=None, state=None, alg=None, *, seed=None):
        if seed is None and state is not None:
            seed = int(np.asarray(state).reshape(-1)[0])
        self._seed_generator = SeedGenerator(0 if seed is None else int(seed))

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(seed=seed)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls(seed=int(np.random.SeedSequence().entropy % (2 ** 31)))

    @classmethod
    def from_state(cls, state, alg=None):
        return cls(state=state)

    def reset_from_seed(self, seed):
        self._seed_generator = SeedGenerator(int(seed))

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=None, name=None):
        return normal(shape, mean, stddev, dtype, seed=self._seed_generator)

    def uniform(self, shape, minval=0, maxval=None, dtype=None, name=None):
        return uniform(shape, minval, maxval, dtype, seed=self._seed_generator)

    def uniform_full_int(self, shape, dtype="int64", name=None):
        info = np.iinfo(np.dtype(dtype))
        return randint(shape, info.min, info.max, dtype=dtype, seed=self._seed_generator)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=None, name=None):
        return truncated_normal(shape, mean, stddev, dtype, seed=self._seed_generator)

    def binomial(self, shape, counts, probs, dtype="int32", name=None):
        return constant(_generator(self._seed_generator).binomial(counts, probs, size=_new_shape(shape, "binomial"))
                        .astype(dtype))

    def make_seeds(self, count=1):
        return constant(_generator(self._seed_generator).integers(0, 2 ** 31 - 1, size=(2, int(count))))

    def split(self, count=1):
        return [Generator(seed=int(s)) for s in _generator(self._seed_generator).integers(0, 2 ** 31 - 1, count)]


_GLOBAL = []


def get_global_generator():
    """``tf.random.get_global_generator``: the one :class:`Generator` shared by the program."""
    if not _GLOBAL:
        _GLOBAL.append(Generator(seed=int(generator().integers(2 ** 31 - 1))))
    return _GLOBAL[0]


def set_global_generator(generator):
    """``tf.random.set_global_generator``: replace the shared :class:`Generator`."""
    _GLOBAL[:] = [generator]


def __getattr__(name):
    """A TensorFlow name of ``tf.random`` that is out of scope here raises the reason and the fix (the table in
    ``base/tf_surface.py``); any other missing name raises Python's usual AttributeError."""
    from ..base.tf_surface import out_of_scope_message
    message = out_of_scope_message(f"tf.random.{name}", "autodiff_viz.random")
    if message is None:
        raise AttributeError(f"module 'autodiff_viz.random' has no attribute {name!r}", name=name)
    raise AttributeError(message)
