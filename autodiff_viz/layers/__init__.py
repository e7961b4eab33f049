"""Layers with Keras semantics: ``adv.layers.Dense``, ``SimpleRNN``, ``RNN(cell)`` ...

Every layer call runs inside ``adv.name_scope(layer.name)``, so the ops it
records carry the layer's scope path and a trace can collapse a model into
its layers; every layer keeps ``layer.output`` from its latest call.
"""
from . import activations, initializers
from .base import InputSpec, Input, Layer, clear_session, floatx, set_floatx, to_snake_case
from .dense import Dense
from .initializers import set_random_seed
from .rnn import RNN, SimpleRNN, SimpleRNNCell

__all__ = ["Layer", "Dense", "RNN", "SimpleRNN", "SimpleRNNCell", "Input", "InputSpec", "activations",
           "initializers", "clear_session", "floatx", "set_floatx", "set_random_seed", "to_snake_case"]
