"""Recurrent cells: one time step of a recurrent layer (``RNN(cell)`` in :mod:`.recurrent` loops it).

Keras 3 names, defaults and weight layouts: ``SimpleRNNCell``, ``LSTMCell``,
``GRUCell`` and ``StackedRNNCells`` (several cells in one step). A cell is any
layer with a ``state_size`` attribute (an int, or a list of ints for several
states) whose ``call(inputs, states)`` returns ``(output, new_states)``; the
built-in ones compute every gate in its own name scope (``i``, ``f``, ``c̃``,
``o``; ``z``, ``r``, ``h̃``), so an expanded cell on the graph reads like the
textbook equations. ``autodiff_viz.layers.recurrent`` re-exports them all.
"""
from __future__ import annotations

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]

import functools
import inspect

import numpy as np

from .. import regularizers
from ..base import session
from ..base.state import name_scope
from ..core import rules as R
from ..core.engine import apply
from ..core.ops import matmul
from ..core.tensor import constant
from ..keras_base.serialization import deserialize_keras_object, serialize_keras_object
from . import activations, initializers
from .base import Layer
from .dense import activation_config


def _columns(z, start, stop):
    """``z[:, start:stop]``: one gate's block of a fused (batch, k·units) product."""
    return apply(R.getitem, z, index=(slice(None), slice(start, stop)), lead=0)


@functools.lru_cache(maxsize=None)
def _takes_training(call) -> bool:
    try:
        params = inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False
    return "training" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def _check_step_input(cell, inputs):
    """A cell built for ``input_dim`` features refuses other sizes with the fix."""
    if inputs.ndim != 2:
        raise ValueError(f"{cell.name}: a cell takes one time step of shape (batch, features), got {inputs.shape}. "
                         "To run it over a sequence (batch, time, features), wrap it: adv.layers.RNN(cell).")
    if inputs.shape[-1] != cell.kernel.shape[0]:
        raise ValueError(f"{cell.name}: this cell was built for {cell.kernel.shape[0]} input features, got shape "
                         f"{inputs.shape}. A layer keeps the input size of its first call; make a new layer for "
                         "another input size.")


class _KerasCell(Layer):
    """What Keras' built-in cells share (``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``, and so their layers).

    Arguments, with Keras' defaults:

    * ``use_bias=True``; ``kernel_initializer="glorot_uniform"``,
      ``recurrent_initializer="orthogonal"``, ``bias_initializer="zeros"``.
    * ``dropout=0.0`` drops input features and ``recurrent_dropout=0.0``
      state features, with the same mask at every time step of a sequence
      (variational dropout, as Keras), only when called with
      ``training=True``; ``seed`` makes the masks repeatable. One mask
      serves all gates, as Keras' fused ``implementation=2`` (Keras
      switches to one mask per gate, and per-gate products, when
      ``recurrent_dropout > 0``: same rates, a different random pattern).
    * ``kernel_regularizer``, ``recurrent_regularizer``, ``bias_regularizer``:
      penalties added to ``layer.losses`` (``fit`` adds them to the loss);
      ``kernel_constraint``, ``recurrent_constraint``, ``bias_constraint``:
      functions applied to the weights after each optimizer step of ``fit``.
    """

    def _init_common(self, units, activation, use_bias, kernel_initializer, recurrent_initializer,
                     bias_initializer, dropout, recurrent_dropout, seed, kernel_regularizer, recurrent_regularizer,
                     bias_regularizer, kernel_constraint, recurrent_constraint, bias_constraint):
        self.units = _positive_units(self.name, units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= float(rate) < 1.0:
                raise ValueError(f"{self.name}: {what} must be in [0, 1), got {rate!r}.")
        self.dropout = float(dropout)
        self.recurrent_dropout = float(recurrent_dropout)
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)
        self._masks = {}
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = kernel_constraint
        self.recurrent_constraint = recurrent_constraint
        self.bias_constraint = bias_constraint

    def _make_weights(self, input_dim, gates, bias_shape=None, bias_initializer=None):
        """``kernel (input_dim, gates·units)``, ``recurrent_kernel (units, gates·units)`` and the bias."""
        u = self.units
        self.kernel = self.add_weight((input_dim, gates * u), self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight((u, gates * u), self.recurrent_initializer, name="recurrent_kernel",
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        self.bias = (self.add_weight(bias_shape or (gates * u,), bias_initializer or self.bias_initializer,
                                     name="bias", regularizer=self.bias_regularizer, constraint=self.bias_constraint)
                     if self.use_bias else None)

    def get_config(self) -> dict:
        """Every constructor argument (names as Keras): the activations by name where they have one, the
        initializers, regularizers and constraints as given."""
        config = {**super().get_config(), "units": self.units, "activation": activation_config(self.activation)}
        if hasattr(self, "recurrent_activation"):
            config["recurrent_activation"] = activation_config(self.recurrent_activation)
        config.update({k: getattr(self, k) for k in _COMMON})
        for attr in ("unit_forget_bias", "reset_after"):
            if hasattr(self, attr):
                config[attr] = getattr(self, attr)
        return config

    def reset_dropout_mask(self):
        """Forget the masks: the next sequence draws new ones (the RNN calls this on every call)."""
        self._masks = {}

    def _mask(self, key, rate, like):
        mask = self._masks.get(key)
        if mask is None:
            rng = self._rng or session.generator()
            keep = rng.random(like.shape) >= rate
            mask = self._masks[key] = constant(keep.astype(like.dtype) / (1.0 - rate))
        return mask

    def _dropped(self, inputs, h, training):
        if training:
            if self.dropout > 0:
                inputs = inputs * self._mask("input", self.dropout, inputs)
            if self.recurrent_dropout > 0:
                h = h * self._mask("state", self.recurrent_dropout, h)
        return inputs, h

    def get_initial_state(self, batch_size=None):
        """Zeros of shape ``(batch, size)`` per state."""
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [self.state_size]
        return [constant(np.zeros((batch_size, n), dtype=self.dtype)) for n in sizes]


_COMMON = dict(use_bias=True, kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
               bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, seed=None, kernel_regularizer=None,
               recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
               bias_constraint=None)


def _split_common(kwargs):
    """The arguments every Keras cell takes (with Keras' defaults), and the rest (for Layer)."""
    common = {k: kwargs.pop(k, v) for k, v in _COMMON.items()}
    return common, kwargs


class SimpleRNNCell(_KerasCell):
    """One step of an Elman RNN: ``h_t = activation(x_t @ kernel + bias + h_{t−1} @ recurrent_kernel)``.

    Weights: ``kernel (input_dim, units)``, ``recurrent_kernel (units, units)``
    (orthogonal by default, as Keras) and ``bias (units,)``.
    """

    def __init__(self, units, activation="tanh", **kwargs):
        common, rest = _split_common(kwargs)
        super().__init__(**rest)
        self._init_common(units, activation, **common)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        self._make_weights(input_shape[-1], 1)

    def call(self, inputs, states, training=None):
        _check_step_input(self, inputs)
        prev = states[0] if isinstance(states, (list, tuple)) else states
        inputs, prev = self._dropped(inputs, prev, training)
        h = matmul(inputs, self.kernel)
        if self.use_bias:
            h = h + self.bias
        output = self.activation(h + matmul(prev, self.recurrent_kernel))
        return output, ([output] if isinstance(states, (list, tuple)) else output)


class LSTMCell(_KerasCell):
    """One step of a long short-term memory, as ``keras.layers.LSTMCell``.

    With ``z = x_t W + h_{t−1} U + b`` cut into four blocks of ``units``
    columns, in Keras' order (the same as PyTorch's ``i, f, g, o``)::

        i = σ(z_i)          input gate
        f = σ(z_f)          forget gate
        c̃ = tanh(z_c)       candidate cell state
        o = σ(z_o)          output gate
        c_t = f ⊙ c_{t−1} + i ⊙ c̃
        h_t = o ⊙ tanh(c_t)

    (σ is ``recurrent_activation``, tanh is ``activation``.) The four gates
    share one matrix product, as in Keras: ``kernel (input_dim, 4·units)``,
    ``recurrent_kernel (units, 4·units)``, ``bias (4·units,)``. With
    ``unit_forget_bias=True`` (the default) the forget gate's bias starts at
    1, so the cell remembers by default early in training. States:
    ``[h, c]``; output: ``h``. On the graph each gate sits in its own
    scope (``lstm_cell/i`` ...).
    """

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        common, rest = _split_common(kwargs)
        super().__init__(**rest)
        self._init_common(units, activation, **common)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape):
        u, init = self.units, None
        if self.unit_forget_bias:
            base = initializers.get(self.bias_initializer)

            def init(shape, dtype):
                return np.concatenate([base((u,), dtype), np.ones(u, dtype=dtype), base((2 * u,), dtype)])
        self._make_weights(input_shape[-1], 4, bias_initializer=init)

    def call(self, inputs, states, training=None):
        _check_step_input(self, inputs)
        h_prev, c_prev = states
        inputs, h_in = self._dropped(inputs, h_prev, training)
        u, act, rec = self.units, self.activation, self.recurrent_activation
        z = matmul(inputs, self.kernel) + matmul(h_in, self.recurrent_kernel)
        if self.use_bias:
            z = z + self.bias
        with name_scope("i"):
            i = rec(_columns(z, 0, u))
        with name_scope("f"):
            f = rec(_columns(z, u, 2 * u))
        with name_scope("c̃"):
            c_bar = act(_columns(z, 2 * u, 3 * u))
        with name_scope("o"):
            o = rec(_columns(z, 3 * u, 4 * u))
        c = f * c_prev + i * c_bar
        h = o * act(c)
        return h, [h, c]


class GRUCell(_KerasCell):
    """One step of a gated recurrent unit, as ``keras.layers.GRUCell``.

    Gates in Keras' order ``z, r, h̃`` (columns of ``kernel (input_dim,
    3·units)`` and ``recurrent_kernel (units, 3·units)``)::

        z = σ(x W_z + b_z + h_{t−1} U_z + b'_z)          update gate
        r = σ(x W_r + b_r + h_{t−1} U_r + b'_r)          reset gate
        h̃ = tanh(x W_h + b_h + r ⊙ (h_{t−1} U_h + b'_h))  candidate (reset_after=True)
        h̃ = tanh(x W_h + b_h + (r ⊙ h_{t−1}) U_h)         candidate (reset_after=False)
        h_t = z ⊙ h_{t−1} + (1 − z) ⊙ h̃

    ``reset_after=True`` (Keras 3's default, and PyTorch's ``nn.GRU``) applies
    the reset gate after the recurrent product and has two biases, input and
    recurrent: ``bias (2, 3·units)``. ``reset_after=False`` has one bias
    ``(3·units,)`` and no ``b'``. On the graph each gate sits in its own
    scope (``gru_cell/z`` ...).
    """

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", reset_after=True, **kwargs):
        common, rest = _split_common(kwargs)
        super().__init__(**rest)
        self._init_common(units, activation, **common)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        self._make_weights(input_shape[-1], 3, bias_shape=(2, 3 * self.units) if self.reset_after else None)

    def call(self, inputs, states, training=None):
        _check_step_input(self, inputs)
        listed = isinstance(states, (list, tuple))
        h_prev = states[0] if listed else states
        inputs, h_in = self._dropped(inputs, h_prev, training)
        u, act, rec = self.units, self.activation, self.recurrent_activation
        x_all = matmul(inputs, self.kernel)
        if self.use_bias:
            x_all = x_all + (self.bias[0] if self.reset_after else self.bias)
        if self.reset_after:
            inner = matmul(h_in, self.recurrent_kernel)
            if self.use_bias:
                inner = inner + self.bias[1]
        else:
            inner = matmul(h_in, self.recurrent_kernel[:, :2 * u])
        with name_scope("z"):
            z = rec(_columns(x_all, 0, u) + _columns(inner, 0, u))
        with name_scope("r"):
            r = rec(_columns(x_all, u, 2 * u) + _columns(inner, u, 2 * u))
        with name_scope("h̃"):
            if self.reset_after:
                recurrent_h = r * _columns(inner, 2 * u, 3 * u)
            else:
                recurrent_h = matmul(r * h_in, self.recurrent_kernel[:, 2 * u:])
            h_bar = act(_columns(x_all, 2 * u, 3 * u) + recurrent_h)
        h = z * h_prev + (1 - z) * h_bar
        return h, ([h] if listed else h)


class StackedRNNCells(Layer):
    """Several cells as one, each feeding the next within a time step, as ``keras.layers.StackedRNNCells``.

        >>> rnn = RNN(StackedRNNCells([LSTMCell(4), GRUCell(3)]), return_state=True)
        >>> out, (h1, c1), (h2,) = rnn(np.zeros((2, 5, 3)))

    At step ``t`` the first cell reads ``x_t``, the second reads the first's
    output, and so on; the output is the last cell's. ``state_size`` is the
    list of the cells' state sizes (``[[4, 4], 3]`` above), and states go
    in and out per cell, in order: ``[[h1, c1], [h2]]``. ``RNN([cell, ...])``
    wraps a list of cells in this layer.
    """

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        cells = list(cells) if isinstance(cells, (list, tuple)) else [cells]
        if not cells:
            raise ValueError(f"{self.name}: give at least one cell, e.g. StackedRNNCells([LSTMCell(4), GRUCell(3)]).")
        for cell in cells:
            if not isinstance(cell, Layer) or not hasattr(cell, "state_size"):
                raise TypeError(f"{self.name}: every cell must be a Layer with a `state_size` attribute and "
                                f"call(inputs, states) -> (output, new_states); got {type(cell).__name__}.")
        self.cells = cells

    @property
    def state_size(self) -> list:
        return [cell.state_size for cell in self.cells]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def get_config(self) -> dict:
        """The base keys and ``cells``, each written as Keras 3 writes a nested layer
        (``{"module", "class_name", "config", ...}``)."""
        return {**super().get_config(), "cells": [serialize_keras_object(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "cells": [deserialize_keras_object(c) for c in config["cells"]]})

    def get_initial_state(self, batch_size=None) -> list:
        """One list of zero states per cell (or what the cell's own ``get_initial_state`` gives)."""
        out = []
        for cell in self.cells:
            own = getattr(cell, "get_initial_state", None)
            states = own(batch_size=batch_size) if own is not None else \
                [constant(np.zeros((batch_size, n), dtype=cell.dtype)) for n in _sizes(cell.state_size)]
            out.append(list(states) if isinstance(states, (list, tuple)) else [states])
        return out

    def reset_dropout_mask(self):
        """Let each cell draw new dropout masks for the next sequence (the RNN calls this on every call)."""
        for cell in self.cells:
            reset = getattr(cell, "reset_dropout_mask", None)
            if reset is not None:
                reset()

    def build(self, input_shape):
        """Build each cell for the output size of the one before it."""
        shape = tuple(input_shape)
        for cell in self.cells:
            if not cell.built:
                cell.build(shape)
                cell.built = True
            shape = (shape[0], _output_size(cell))
        self.built = True

    def call(self, inputs, states, training=None):
        if len(states) != len(self.cells):
            raise ValueError(f"{self.name}: expected one list of states per cell ({len(self.cells)}), "
                             f"got {len(states)}.")
        new_states = []
        for cell, cell_states in zip(self.cells, states):
            cell_states = list(cell_states) if isinstance(cell_states, (list, tuple)) else [cell_states]
            kwargs = {"training": training} if training is not None and _takes_training(type(cell).call) else {}
            inputs, new = cell(inputs, cell_states, **kwargs)
            new_states.append(list(new) if isinstance(new, (list, tuple)) else [new])
        return inputs, new_states


def _positive_units(who: str, units) -> int:
    if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
        raise ValueError(f"{who}: units must be a positive integer, got {units!r}.")
    return int(units)


def _sizes(state_size) -> list:
    """A state size (an int, or a list, maybe nested) as a flat list of ints."""
    if isinstance(state_size, (list, tuple)):
        return [n for s in state_size for n in _sizes(s)]
    return [int(state_size)]


def _output_size(cell) -> int:
    size = getattr(cell, "output_size", None)
    return int(size) if size is not None else _sizes(cell.state_size)[0]
