"""keras_base: what the Keras-style modules build on that no ``keras.*`` path names (objects as Keras 3 entries
and back: :mod:`~autodiff_viz.keras_base.serialization`, Keras' own ``saving/serialization_lib``). Its public names are
``adv.saving.serialize_keras_object`` and friends, as ``keras.saving``. See docs/architecture.md."""
