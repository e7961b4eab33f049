"""Keras' top-level namespace — what ``keras.X`` and TensorFlow's ``tf.keras.X`` name — over this package.

The Keras-style modules of this package already sit where Keras puts them
(``adv.layers`` is ``keras.layers``, ``adv.optimizers`` is
``keras.optimizers``). A learner who writes ``import autodiff_viz as tf`` and
then types the official guides' ``tf.keras.layers.Dense(10)`` or
``tf.keras.optimizers.Adam(1e-3)`` reaches the same objects through this
module: ``adv.keras.layers is adv.layers``. Nothing is copied or wrapped.

``keras.config`` is Keras' configuration (``floatx``, ``epsilon``,
``image_data_format``), which is not TensorFlow's ``tf.config`` (devices):
here it is :data:`config`. A Keras name with no counterpart here
(``keras.applications``, ``keras.mixed_precision``) raises an AttributeError
that says so and where to go instead.
"""
from __future__ import annotations

import types

from . import (
    backend,
    callbacks,
    datasets,
    layers,
    losses,
    metrics,
    models,
    ops,
    optimizers,
    regularizers,
    saving,
    utils,
)
from .base.devices import device
from .base.state import name_scope
from .base.version import __version__
from .core import random
from .core.tensor import Variable
from .layers import Input, InputSpec, Layer, activations, initializers
from .layers.initializers import Initializer
from .losses import Loss
from .metrics import Metric
from .models import Model, Sequential
from .optimizers import Optimizer
from .regularizers import Regularizer

config = types.SimpleNamespace(
    floatx=backend.floatx, set_floatx=backend.set_floatx, epsilon=backend.epsilon,
    image_data_format=backend.image_data_format, backend=lambda: "numpy")
config.__doc__ = "Keras' ``keras.config``: the default float type, the fuzz factor and the image layout."


def version() -> str:
    """This package's version (Keras' ``keras.version()`` gives Keras')."""
    return __version__


_ELSEWHERE = {
    "applications": "pretrained architectures are not shipped here (no downloads of weights): build the model from "
                    "adv.layers, or record the real keras.applications model with adv.tf.record()",
    "mixed_precision": "every computation here is float32 or float64 numpy; there is no float16 policy",
    "dtype_policies": "every computation here is float32 or float64 numpy; there is no float16 policy",
    "distribution": "one process and one device: nothing is distributed",
    "preprocessing": "load data with adv.datasets and adv.data.Dataset; preprocessing layers are in adv.layers",
}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    why = _ELSEWHERE.get(name, "this package mirrors Keras' layers, models, losses, metrics, optimizers, "
                               "callbacks, initializers, regularizers, activations, datasets, ops, random, saving, "
                               "utils and backend")
    raise AttributeError(f"keras.{name} has no counterpart here: {why}.", name=name)


__all__ = ["Initializer", "Input", "InputSpec", "Layer", "Loss", "Metric", "Model", "Optimizer", "Regularizer",
           "Sequential", "Variable", "activations", "backend", "callbacks", "config", "datasets", "device",
           "initializers", "layers", "losses", "metrics", "models", "name_scope", "ops", "optimizers", "random",
           "regularizers", "saving", "utils", "version"]
