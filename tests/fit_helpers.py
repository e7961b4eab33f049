"""What the fit, weighting and callback tests share: a fresh session per test, a small linear regression
``y = x·[1, −2, 0.5] + 0.1`` and a one-Dense model compiled with SGD for it."""
import numpy as np
import pytest

import autodiff_viz as adv
from autodiff_viz import layers, optimizers


@pytest.fixture(autouse=True)
def fresh_session():
    """Layer names start afresh in every test (import it into a test module to use it); the weights' generator
    is seeded for every test by conftest.py."""
    layers.clear_session()


def regression_data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return x, x @ np.array([[1.0], [-2.0], [0.5]]) + 0.1


def linear_model(lr=0.05, loss="mse", dtype="float64"):
    model = adv.Sequential([layers.Input((3,)), layers.Dense(1, dtype=dtype)], dtype=dtype)
    model.compile(optimizer=optimizers.SGD(lr), loss=loss)
    return model
