"""Input makers for the rule cases: each takes a numpy Generator and returns an array."""
import numpy as np


def pos(shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def real(shape):
    return lambda rng: rng.normal(size=shape)


def away0(shape):
    """Values at least 0.2 away from 0 (kinks of abs, relu, sign)."""
    return lambda rng: rng.choice([-1, 1], size=shape) * rng.uniform(0.2, 2.0, shape)


def const(value):
    return lambda rng: np.asarray(value)
