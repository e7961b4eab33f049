"""``adv.keras`` — the names a learner types as ``keras.X`` or, with ``import autodiff_viz as tf``, ``tf.keras.X``.

The TensorFlow guides and most TensorFlow courses write ``tf.keras.layers.Dense``, ``tf.keras.optimizers.Adam``,
``tf.keras.Sequential``; this package's Keras-style modules already sit where Keras puts them, and ``adv.keras``
reaches them under Keras' top-level names, without copies.
"""
from __future__ import annotations

import numpy as np
import pytest

import autodiff_viz as adv


def test_keras_names_are_the_packages_own_modules_and_classes():
    k = adv.keras
    assert k.layers is adv.layers and k.optimizers is adv.optimizers and k.losses is adv.losses
    assert k.Sequential is adv.Sequential and k.Model is adv.Model and k.Input is adv.layers.Input
    assert k.activations is adv.activations and k.initializers is adv.initializers
    assert k.callbacks is adv.callbacks and k.metrics is adv.metrics and k.datasets is adv.datasets
    assert k.backend is adv.backend and k.ops is adv.ops and k.utils is adv.utils
    assert issubclass(adv.optimizers.Adam, k.Optimizer) and issubclass(adv.losses.MeanSquaredError, k.Loss)


def test_the_tensorflow_guides_spelling_trains_a_model():
    """The "tf.keras" quickstart's structure, typed with ``import autodiff_viz as tf``."""
    import autodiff_viz as tf
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)).astype("float32"), rng.integers(0, 3, size=64)
    model = tf.keras.models.Sequential([
        tf.keras.Input((4,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(3),
    ])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss=loss_fn, metrics=["accuracy"])
    history = model.fit(x, y, epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert tf.keras.config.floatx() == adv.backend.floatx() and tf.keras.config.epsilon() == adv.backend.epsilon()


def test_a_keras_name_with_no_counterpart_says_so():
    with pytest.raises(AttributeError, match=r"keras\.applications has no counterpart here: .*adv\.tf\.record"):
        adv.keras.applications  # noqa: B018
    with pytest.raises(AttributeError, match=r"keras\.visualization has no counterpart here"):
        adv.keras.visualization  # noqa: B018


def test_every_name_is_one_keras_has():
    """No invented names: each public name of ``adv.keras`` is a name of Keras 3's own top level."""
    keras = pytest.importorskip("keras")
    assert set(adv.keras.__all__) <= set(dir(keras))
    assert all(hasattr(adv.keras, n) for n in adv.keras.__all__)
