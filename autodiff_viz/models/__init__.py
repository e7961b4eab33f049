"""Models: ``adv.Model`` (functional or subclassed) and ``adv.Sequential``, with Keras' training API.

    >>> model = adv.Sequential([adv.layers.Input((64,)),
    ...                         adv.layers.Dense(32, activation="relu"),
    ...                         adv.layers.Dense(10)])
    >>> model.compile(optimizer="adam", loss=adv.losses.SparseCategoricalCrossentropy(from_logits=True),
    ...               metrics=["accuracy"])
    >>> history = model.fit(x, y, epochs=10, validation_split=0.2)
    >>> model.evaluate(x_test, y_test)

As in Keras 3, the package is split by meaning: :mod:`.model` (the classes and their configs),
:mod:`.trainer` (``fit``, ``evaluate``, ``predict``), :mod:`.compiling` (``compile``, losses and metrics
per output) and :mod:`.data_adapters` (arrays, generators and datasets in batches). The whole-model files
(``save_model``, ``load_model`` …, Keras 3's ``keras.models`` functions) are :mod:`autodiff_viz.saving`'s.
"""
from ..saving import clone_model, load_model, model_from_json, save_model
from .model import Functional, Model, Sequential, run_build_batch

__all__ = ["Model", "Sequential", "Functional", "save_model", "load_model", "model_from_json", "clone_model",
           "run_build_batch"]
