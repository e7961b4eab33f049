"""Layers with Keras semantics: ``adv.layers.Dense``, ``Conv2D``, ``LSTM``, ``MultiHeadAttention`` ...

One module per family, as Keras has them (core, conv, pooling,
normalization, regularization, embedding, recurrent, attention, merge, preprocessing).
Every layer call runs inside ``adv.name_scope(layer.name)``, so the ops it
records carry the layer's scope path and a trace can collapse a model into
its layers; every layer keeps ``layer.output`` from its latest call.
"""
from . import activations, initializers
from .base import Layer, clear_session, floatx, set_floatx, to_snake_case
from .input_layer import Input, InputLayer, Operation
from .keras_tensor import InputSpec, KerasTensor
from .dense import Dense
from .initializers import set_random_seed
from .core import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .regularization import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .merge import *  # noqa: F401,F403
from .preprocessing import *  # noqa: F401,F403
from . import attention, conv, core, embedding, merge, normalization, pooling, preprocessing, recurrent, regularization

__all__ = ["Layer", "Dense", "Input", "InputLayer", "KerasTensor", "InputSpec", "activations", "initializers",
           "clear_session", "floatx", "set_floatx", "set_random_seed", "to_snake_case",
           *core.__all__, *conv.__all__, *pooling.__all__, *normalization.__all__, *regularization.__all__,
           *embedding.__all__, *recurrent.__all__, *attention.__all__, *merge.__all__, *preprocessing.__all__]
