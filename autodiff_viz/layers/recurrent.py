"""Recurrent layers: a cell applied step by step, ``RNN(cell)`` to loop it.

Keras 3 names, defaults and weight layouts: ``SimpleRNN``, ``LSTM``, ``GRU``,
their cells ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``, ``StackedRNNCells``
(several cells in one step), ``Bidirectional`` and ``TimeDistributed``.

A cell is any layer with a ``state_size`` attribute (an int, or a list of
ints for several states) whose ``call(inputs, states)`` returns
``(output, new_states)``; ``states`` arrives as a list, and ``new_states``
may be a tensor or a list. That is how Keras users write custom cells:

    >>> class MinimalRNNCell(Layer):
    ...     def __init__(self, units, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.units = units
    ...         self.state_size = units
    ...     def build(self, input_shape):
    ...         self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
    ...         self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), name="recurrent_kernel")
    ...     def call(self, inputs, states):
    ...         output = adv.matmul(inputs, self.kernel) + adv.matmul(states[0], self.recurrent_kernel)
    ...         return output, [output]
    >>> rnn = RNN(MinimalRNNCell(4), return_sequences=True)

The loop is unrolled in Python, one recorded step per time step, so a
backward graph shows backpropagation through time explicitly. Inside the
LSTM and GRU cells every gate is computed in its own name scope (``i``,
``f``, ``c̃``, ``o``; ``z``, ``r``, ``h̃``), so an expanded cell on the graph
reads like the textbook equations.
"""
from __future__ import annotations

__all__ = ["RNN", "SimpleRNN", "SimpleRNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell", "StackedRNNCells",
           "Bidirectional", "TimeDistributed"]

import copy
import functools
import inspect

import numpy as np

from .. import regularizers, session
from ..core import rules as R
from ..core.engine import apply
from ..core.ops import cast, concatenate, matmul, reshape, stack, where
from ..core.tensor import Tensor, constant
from ..naming import to_snake_case
from ..serialization import deserialize_keras_object, serialize_keras_object
from ..session import unique_name
from ..state import is_package_code, name_scope
from . import activations, initializers
from .base import Layer, _call_parameters, boolean_mask
from .dense import activation_config
from .recurrent_text import ByClass


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


class RNN(Layer):
    """Run ``cell`` over the time axis of ``(batch, time, features)`` inputs.

    Args:
        cell: a layer with ``state_size`` and ``call(inputs, states)``, or a
            list of cells (wrapped in :class:`StackedRNNCells`).
        return_sequences: return every step's output ``(batch, time, units)``
            instead of only the last ``(batch, units)``.
        return_state: also return the final states: ``[output, *states]``.
        go_backwards: process the sequence from the last step to the first
            (with ``return_sequences`` the outputs come in that order too, as Keras).
        stateful: keep the last states of each call in ``self.states`` and
            start the next call from them (for one long sequence cut into
            batches: sample ``i`` of a batch continues sample ``i`` of the
            previous one). ``reset_states()`` sets them back to zero. The
            batch size is fixed by the first call (or ``build``).
        unroll: accepted for Keras compatibility; the loop is always unrolled.
        zero_output_for_mask: at a masked step, output zeros instead of
            repeating the previous output (``Bidirectional`` sets it to
            ``return_sequences``, as Keras).
        activity_regularizer: a penalty on the output, added to ``layer.losses``.

    Call as ``rnn(x)`` or ``rnn(x, initial_state=[h0])``; states start at
    zero. ``training=True`` turns on the cell's dropout, if it has one.
    ``mask`` (boolean ``(batch, time)``, e.g. ``embedding.compute_mask(tokens)``
    for padded sequences) skips steps, as Keras: at a masked step the states
    stay as they were and the output repeats the previous one (or is 0 with
    ``zero_output_for_mask``). The mask of an ``Embedding(mask_zero=True)``
    or ``Masking`` before it arrives by itself, as in Keras 3.
    """

    supports_masking = True

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, activity_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not isinstance(cell, Layer) or not hasattr(cell, "state_size"):
            raise TypeError(f"{self.name}: the cell must be a Layer with a `state_size` attribute and "
                            f"call(inputs, states) -> (output, new_states); got {type(cell).__name__}.")
        self.cell = cell
        self.stateful = bool(stateful)
        self.states = None
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.activity_regularizer = regularizers.get(activity_regularizer)

    def get_config(self) -> dict:
        """Every constructor argument; ``cell`` written as Keras 3 writes a nested layer."""
        return {**super().get_config(), "cell": serialize_keras_object(self.cell),
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask, "activity_regularizer": self.activity_regularizer}

    @classmethod
    def from_config(cls, config):
        if "cell" not in config:
            return cls(**config)
        return cls(**{**config, "cell": deserialize_keras_object(config["cell"])})

    @property
    def state_size(self) -> list:
        """The sizes of all states, flat (``[4, 4, 3]`` for ``[LSTMCell(4), GRUCell(3)]``)."""
        return _sizes(self.cell.state_size)

    def _nested(self) -> bool:
        size = self.cell.state_size
        return isinstance(size, (list, tuple)) and any(isinstance(s, (list, tuple)) for s in size)

    def _pack(self, flat):
        """Flat states in the cell's structure (one list per cell of a ``StackedRNNCells``)."""
        if not self._nested():
            return flat
        out, i = [], 0
        for size in self.cell.state_size:
            n = len(_sizes(size))
            out.append(flat[i:i + n])
            i += n
        return out

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs, as Keras 3: the input mask with ``return_sequences`` (each step's
        output belongs to an input step), else None; with ``return_state`` a list, ``None`` for each state."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self._pack(self.state_size))
        return output_mask

    def reset_states(self, states=None):
        """Set the kept states of a ``stateful`` layer to zeros, or to ``states`` (one array per state)."""
        if states is None and (not self.stateful or self.states is None):
            return                              # nothing kept (as Keras)
        if not self.stateful:
            raise ValueError(f"{self.name}: only a stateful layer keeps states to reset; make it with stateful=True, "
                             "or pass initial_state= to the call.")
        if states is None:
            self.states = self._kept([constant(np.zeros(s.shape, dtype=s.dtype)) for s in self.states])
            return
        batch = self.states[0].shape[0] if self.states is not None else \
            np.shape(_flatten(states)[0])[0] if _flatten(states) else None
        new = self._initial_states(states, batch)
        self.states = self._kept(new)

    reset_state = reset_states

    def get_initial_state(self, batch_size: int) -> list:
        """Zeros of shape ``(batch, size)`` per state, unless the cell defines ``get_initial_state``."""
        own = getattr(self.cell, "get_initial_state", None)
        if own is not None:
            return _flatten(own(batch_size=batch_size))
        return [constant(np.zeros((batch_size, n), dtype=self.cell.dtype)) for n in self.state_size]

    def _check_sequence(self, shape):
        if len(shape) != 3:
            raise ValueError(f"{self.name}: expected inputs of shape (batch, time, features), got {tuple(shape)}. "
                             "Add a time axis, e.g. x[:, None, :] for one step.")
        if shape[1] == 0:
            raise ValueError(f"{self.name}: the input has no time steps (shape {tuple(shape)}).")

    def build(self, input_shape):
        """Check the shape and build the cell for one time step ``(batch, features)``.

        Calling ``build`` yourself creates the weights, as in Keras, so
        they can be set before the first call.
        """
        self._check_sequence(input_shape)
        if not self.cell.built:
            self.cell.build((input_shape[0], input_shape[2]))
            self.cell.built = True
        if self.stateful and self.states is None and input_shape[0] is not None:
            self.states = self._zero_states(input_shape[0])
        self.built = True

    def _zero_states(self, batch):
        return self._kept(self.get_initial_state(batch))

    def _kept(self, states):
        """Snapshots of ``states`` to keep in ``self.states``: named constants, so a recorded graph shows them
        as inputs (``lstm/state_0`` ...) and a tape never takes them as sources (they are not trainable)."""
        return [constant(s.numpy(), name=f"{self.name}/state_{i}") for i, s in enumerate(states)]

    def call(self, inputs, initial_state=None, mask=None, training=None):
        self._check_sequence(inputs.shape)
        batch, steps = inputs.shape[0], inputs.shape[1]
        mask = self._step_mask(mask, batch, steps)
        if initial_state is None and self.stateful:
            if self.states is None:
                self.states = self._zero_states(batch)
            elif self.states[0].shape[0] != batch:
                raise ValueError(f"{self.name}: this stateful layer keeps states for batches of "
                                 f"{self.states[0].shape[0]} sequences, got a batch of {batch} "
                                 f"(inputs {inputs.shape}). "
                                 "Feed batches of that size (fit(..., batch_size=...) with a sample count it "
                                 "divides, shuffle=False), or make a new layer for another batch size.")
            states = list(self.states)
        elif initial_state is None:
            states = self.get_initial_state(batch)
        else:
            states = self._initial_states(initial_state, batch)
        reset = getattr(self.cell, "reset_dropout_mask", None)
        if reset is not None:
            reset()
        kwargs = {"training": training} if training is not None and _takes_training(type(self.cell).call) else {}
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        cell, outputs = self.cell, []
        # A built-in cell runs its call() directly in its scope: what cell(...) would do, minus per-step checks.
        direct = isinstance(cell, _KerasCell) and is_package_code(type(cell).call) and cell.built
        if direct and inputs.dtype != cell.dtype:
            inputs = cast(inputs, cell.dtype)
        for t in order:
            step = apply(R.getitem, inputs, index=(slice(None), t), lead=0)
            if direct:
                with name_scope(cell.name, type(cell).__name__):
                    out, new = cell.call(step, states, **kwargs)
            else:
                out, new = cell(step, self._pack(states), **kwargs)
            new = _flatten(new)
            if mask is not None:
                keep = constant(mask[:, t, None])
                previous = outputs[-1] if outputs and not self.zero_output_for_mask else \
                    constant(np.zeros(out.shape, dtype=out.dtype))
                out = where(keep, out, previous)
                new = [where(keep, s_new, s_old) for s_new, s_old in zip(new, states)]
            states = new
            outputs.append(out)
        if direct:
            cell._output = [out, states]
        if self.stateful:
            self.states = self._kept(states)
        output = stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.activity_regularizer is not None:
            self.add_loss(self.activity_regularizer(output))
        if self.return_state:
            return [output, *self._pack(states)]
        return output

    def _step_mask(self, mask, batch, steps):
        return None if mask is None else boolean_mask(self, mask, (batch, steps))

    def _initial_states(self, initial_state, batch):
        states = [self._convert(s) for s in _flatten(initial_state)]
        states = [cast(s, self.cell.dtype) if s.dtype.kind == "f" else s for s in states]   # as Keras
        want = [(batch, n) for n in self.state_size]
        got = [tuple(s.shape) for s in states]
        if got != want:
            raise ValueError(f"{self.name}: initial_state should be {len(want)} tensor(s) of shape "
                             f"{', '.join(map(str, want))} (batch, state size), got {', '.join(map(str, got))}.")
        return states

    def _recreate(self, go_backwards, name):
        """A fresh, unbuilt copy of this layer (for ``Bidirectional``)."""
        if self.built:
            raise ValueError(f"Bidirectional: {self.name} is already built, so it cannot be copied for the backward "
                             "direction; pass an unbuilt layer, or pass backward_layer= as well.")
        clone = copy.deepcopy(self)
        for layer in _all_layers(clone):
            layer._name = unique_name(to_snake_case(type(layer).__name__))
        clone._name, clone.go_backwards = name, bool(go_backwards)
        return clone


class _KerasRNN(RNN):
    """An RNN that makes its own cell from the arguments (``SimpleRNN``, ``LSTM``, ``GRU``)."""
    backward_text = ByClass()   # SimpleRNN, LSTM, GRU: their formulas in recurrent_text.py

    _cell_class = None
    _rnn_args = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "activity_regularizer",
                 "zero_output_for_mask")
    _ignored_args = ()

    def __init__(self, units, **kwargs):
        _positive_units(type(self).__name__, units)
        for k in self._ignored_args:
            kwargs.pop(k, None)
        rnn_kwargs = {k: kwargs.pop(k) for k in self._rnn_args if k in kwargs}
        layer_kwargs = {k: kwargs.pop(k) for k in ("name", "dtype", "trainable", "input_shape") if k in kwargs}
        self._config = {"units": units, **kwargs, **rnn_kwargs, **layer_kwargs}
        cell_kwargs = {k: v for k, v in layer_kwargs.items() if k in ("dtype", "trainable")}
        try:
            cell = self._cell_class(units, **kwargs, **cell_kwargs)
        except (TypeError, ValueError) as error:    # name the layer the user built, not its cell
            who, sep, rest = str(error).partition(": ")
            if sep and (who == self._cell_class.__name__ or who.startswith(to_snake_case(self._cell_class.__name__))):
                raise type(error)(f"{type(self).__name__}: {rest}") from None
            raise
        super().__init__(cell, **rnn_kwargs, **layer_kwargs)
        self.units = cell.units

    def _recreate(self, go_backwards, name):
        return type(self)(**{**self._config, "go_backwards": go_backwards, "name": name})

    def get_config(self) -> dict:
        return {**Layer.get_config(self), **self._config, "name": self.name, "go_backwards": self.go_backwards,
                "zero_output_for_mask": self.zero_output_for_mask}


class SimpleRNN(_KerasRNN):
    """``RNN(SimpleRNNCell(units, ...))`` in one layer, as ``keras.layers.SimpleRNN``.

        >>> rnn = SimpleRNN(8, return_sequences=True)
        >>> rnn(np.zeros((2, 5, 3))).shape
        (2, 5, 8)

    The weights live in ``rnn.cell``: ``kernel``, ``recurrent_kernel`` and
    ``bias``. Takes the cell's arguments (:class:`SimpleRNNCell`) and the
    RNN's (:class:`RNN`).
    """

    _cell_class = SimpleRNNCell

    def __init__(self, units, activation="tanh", **kwargs):
        super().__init__(units, activation=activation, **kwargs)


class LSTM(_KerasRNN):
    """``RNN(LSTMCell(units, ...))`` in one layer, as ``keras.layers.LSTM``.

        >>> lstm = LSTM(8, return_sequences=True, return_state=True)
        >>> seq, h, c = lstm(np.zeros((2, 5, 3)))
        >>> seq.shape, h.shape, c.shape
        ((2, 5, 8), (2, 8), (2, 8))

    See :class:`LSTMCell` for the gates, the weight layout and the
    arguments; :class:`RNN` for ``return_sequences``, ``return_state``,
    ``go_backwards``. ``use_cudnn`` is accepted and ignored (everything runs
    on the CPU here, step by step).
    """

    _cell_class = LSTMCell
    _ignored_args = ("use_cudnn",)

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         unit_forget_bias=unit_forget_bias, **kwargs)


class GRU(_KerasRNN):
    """``RNN(GRUCell(units, ...))`` in one layer, as ``keras.layers.GRU`` (``reset_after=True`` by default).

        >>> gru = GRU(8)
        >>> gru(np.zeros((2, 5, 3))).shape
        (2, 8)

    See :class:`GRUCell` for the gates, the weight layout and the
    arguments; :class:`RNN` for ``return_sequences``, ``return_state``,
    ``go_backwards``. ``use_cudnn`` is accepted and ignored (everything runs
    on the CPU here, step by step).
    """

    _cell_class = GRUCell
    _ignored_args = ("use_cudnn",)

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", reset_after=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         reset_after=reset_after, **kwargs)


_MERGE_MODES = ("concat", "sum", "mul", "ave", None)


class Bidirectional(Layer):
    """Run a recurrent layer forwards and a copy of it backwards, and merge, as ``keras.layers.Bidirectional``.

        >>> bi = Bidirectional(LSTM(8, return_sequences=True))
        >>> bi(np.zeros((2, 5, 3))).shape
        (2, 5, 16)

    The backward layer reads the sequence from the end; with
    ``return_sequences`` its outputs are flipped back, so position ``t`` of
    both halves belongs to input step ``t`` (as Keras and PyTorch's
    ``bidirectional=True``).

    Args:
        layer: an unbuilt ``RNN`` (``LSTM``, ``GRU``, ``SimpleRNN`` or
            ``RNN(cell)``); it becomes ``forward_layer``, renamed
            ``forward_<name>``. (Keras makes a copy; here the layer you pass
            is used, so ``layer.cell.kernel`` is the forward kernel.)
        merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"``
            or ``None`` (a list ``[forward, backward]``).
        backward_layer: an RNN with ``go_backwards`` opposite to ``layer``'s;
            by default a fresh copy of ``layer`` named ``backward_<name>``.

    ``return_state=True`` returns ``[output, *forward_states, *backward_states]``;
    ``initial_state`` is split the same way.
    """

    supports_masking = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, RNN):
            raise TypeError(f"{self.name}: Bidirectional wraps a recurrent layer (LSTM, GRU, SimpleRNN or RNN(cell)), "
                            f"got {type(layer).__name__}.")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"{self.name}: merge_mode={merge_mode!r} is not one of {list(_MERGE_MODES)}.")
        if weights is not None:
            raise NotImplementedError(f"{self.name}: weights= is not supported; call set_weights() after building.")
        if backward_layer is None:
            backward_layer = layer._recreate(not layer.go_backwards, "backward_" + layer.name)
        else:
            if not isinstance(backward_layer, RNN):
                raise TypeError(f"{self.name}: backward_layer must be a recurrent layer, "
                                f"got {type(backward_layer).__name__}.")
            if backward_layer.go_backwards == layer.go_backwards:
                raise ValueError(f"{self.name}: backward_layer.go_backwards must be the opposite of "
                                 f"layer.go_backwards ({layer.go_backwards}); pass go_backwards="
                                 f"{not layer.go_backwards} to the backward layer.")
            for attr in ("return_sequences", "return_state"):
                if getattr(backward_layer, attr) != getattr(layer, attr):
                    raise ValueError(f"{self.name}: backward_layer.{attr} must equal layer.{attr} "
                                     f"({getattr(layer, attr)}).")
        if not layer.name.startswith("forward_"):       # as Keras 3: a rebuilt forward layer keeps its name
            layer._name = "forward_" + layer.name
        for rnn in (layer, backward_layer):       # masked steps give 0, so the halves line up (Keras)
            rnn.zero_output_for_mask = rnn.return_sequences
        self.forward_layer = layer
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def get_config(self) -> dict:
        """The base keys, ``merge_mode``, and ``layer`` and ``backward_layer`` written as Keras 3 writes nested
        layers (``Bidirectional.from_config`` rebuilds both, with their names)."""
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": serialize_keras_object(self.forward_layer),
                "backward_layer": serialize_keras_object(self.backward_layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("layer", "backward_layer"):
            if config.get(key) is not None:
                config[key] = deserialize_keras_object(config[key])
        return cls(**config)

    def compute_mask(self, inputs, mask=None):
        """As Keras 3: the input mask with ``return_sequences`` (twice, ``[mask, mask]``, for
        ``merge_mode=None``), else None; with ``return_state`` followed by ``None`` for each state."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        if self.return_sequences:
            output_mask = mask if self.merge_mode else [mask, mask]
        else:
            output_mask = None if self.merge_mode else [None, None]
        if self.return_state:
            n = len(self.forward_layer._pack(self.forward_layer.state_size))
            n += len(self.backward_layer._pack(self.backward_layer.state_size))
            return (output_mask if isinstance(output_mask, list) else [output_mask]) + [None] * n
        return output_mask

    def build(self, input_shape):
        self.forward_layer._check_sequence(input_shape)
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                layer.build(input_shape)
        self.built = True

    def call(self, inputs, initial_state=None, mask=None, training=None):
        self.forward_layer._check_sequence(inputs.shape)
        kwargs = {} if training is None else {"training": training}
        if mask is not None:
            kwargs["mask"] = mask
        fwd_init = bwd_init = None
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            n = len(self.forward_layer.state_size)
            if len(states) != n + len(self.backward_layer.state_size):
                raise ValueError(f"{self.name}: initial_state needs {n} state(s) for the forward layer followed by "
                                 f"{len(self.backward_layer.state_size)} for the backward one, got {len(states)}.")
            fwd_init, bwd_init = states[:n], states[n:]
        y = self.forward_layer(inputs, initial_state=fwd_init, **kwargs)
        y_rev = self.backward_layer(inputs, initial_state=bwd_init, **kwargs)
        states = []
        if self.return_state:
            y, *fwd_states = y
            y_rev, *bwd_states = y_rev
            states = fwd_states + bwd_states
        if self.return_sequences:
            y_rev = apply(R.getitem, y_rev, index=(slice(None), slice(None, None, -1)), lead=0)
        if self.merge_mode == "concat":
            out = concatenate([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            out = y + y_rev
        elif self.merge_mode == "ave":
            out = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            out = y * y_rev
        else:
            out = [y, y_rev]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out


class TimeDistributed(Layer):
    """Apply a layer to every step of ``(batch, time, ...)``, with the same weights, as
    ``keras.layers.TimeDistributed``.

        >>> td = TimeDistributed(Dense(4))
        >>> td(np.zeros((2, 5, 3))).shape, td.layer.kernel.shape
        ((2, 5, 4), (3, 4))

    The time axis is folded into the batch axis (``reshape`` to ``(batch·time,
    ...)``), the wrapped layer is called once on that, and the result is
    unfolded (``reshape`` to ``(batch, time, ...)``). So the graph shows one
    call of the inner layer between two ``reshape`` nodes, and the gradient
    of each weight is the sum of its gradients over all steps. The values
    equal Keras 3's, which calls the layer once per step, for every layer
    whose output for a sample depends on that sample alone; a layer that
    mixes the batch (``BatchNormalization`` while training) sees
    ``batch·time`` samples at once here, and ``batch`` per step in Keras 3.

    ``training`` is passed on to the inner layer; a mask of shape ``(batch,
    time, ...)`` is folded the same way and passed to an inner layer whose
    ``call`` takes ``mask``. The output carries the input's mask, as Keras 3.

    Args:
        layer: a layer instance (``Dense``, ``Conv2D``, a model ...); it is
            ``td.layer`` and its weights are this layer's weights.
    """

    supports_masking = True

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"TimeDistributed: layer must be a layer instance, e.g. TimeDistributed(Dense(4)); got "
                             f"{layer!r} (a {type(layer).__name__}).")
        super().__init__(**kwargs)
        self.layer = layer

    def get_config(self) -> dict:
        """The base keys and ``layer``, written as Keras 3 writes nested layers (``from_config`` rebuilds it)."""
        return {**super().get_config(), "layer": serialize_keras_object(self.layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = deserialize_keras_object(config["layer"])
        return cls(**config)

    def _child_shape(self, input_shape):
        if not isinstance(input_shape, (tuple, list)) or len(input_shape) < 3 or isinstance(input_shape[0],
                                                                                            (tuple, list)):
            raise ValueError(f"{self.name} (TimeDistributed): needs one input of shape (batch, time, ...) with at "
                             f"least 3 axes, got shape {input_shape!r}. For (batch, features) call "
                             f"{type(self.layer).__name__} directly.")
        batch, steps = input_shape[0], input_shape[1]
        folded = None if batch is None or steps is None else batch * steps
        return (folded, *input_shape[2:])

    def build(self, input_shape):
        child = self._child_shape(tuple(input_shape) if isinstance(input_shape, list) else input_shape)
        if not self.layer.built:
            with name_scope(self.layer.name, type(self.layer).__name__):
                self.layer._maybe_build(child)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        if not isinstance(inputs, Tensor):
            raise TypeError(f"{self.name} (TimeDistributed): call it on one tensor of shape (batch, time, ...), "
                            f"got a {type(inputs).__name__}.")
        shape = tuple(inputs.shape)
        self._child_shape(shape)
        batch, steps = shape[:2]
        kwargs = {} if training is None else {"training": training}
        if mask is not None:
            m = np.asarray(mask._value if isinstance(mask, Tensor) else mask)
            if m.shape[:2] != (batch, steps):
                raise ValueError(f"{self.name} (TimeDistributed): the mask must have shape ({batch}, {steps}, ...) "
                                 f"like the inputs' first two axes, got {m.shape}.")
            if _call_parameters(type(self.layer).call)[1]:
                kwargs["mask"] = m.reshape((batch * steps,) + m.shape[2:])
        y = self.layer(reshape(inputs, (batch * steps,) + shape[2:]), **kwargs)
        if not isinstance(y, Tensor):
            raise TypeError(f"{self.name} (TimeDistributed): the wrapped layer {self.layer.name} returned a "
                            f"{type(y).__name__}; TimeDistributed needs a layer that returns one tensor.")
        if y.ndim == 0 or y.shape[0] != batch * steps:
            raise ValueError(f"{self.name} (TimeDistributed): the wrapped layer {self.layer.name} turned "
                             f"{batch * steps} samples into output of shape {tuple(y.shape)}; it must keep one "
                             "output per sample (axis 0).")
        return reshape(y, (batch, steps) + tuple(y.shape[1:]))


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _positive_units(who: str, units) -> int:
    if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
        raise ValueError(f"{who}: units must be a positive integer, got {units!r}.")
    return int(units)


def _sizes(state_size) -> list:
    """A state size (an int, or a list, maybe nested) as a flat list of ints."""
    if isinstance(state_size, (list, tuple)):
        return [n for s in state_size for n in _sizes(s)]
    return [int(state_size)]


def _flatten(states) -> list:
    if isinstance(states, (list, tuple)):
        return [s for item in states for s in _flatten(item)]
    return [states]


def _output_size(cell) -> int:
    size = getattr(cell, "output_size", None)
    return int(size) if size is not None else _sizes(cell.state_size)[0]


def _all_layers(layer):
    out = [layer]
    for _, child in layer._children():
        out += _all_layers(child)
    return out

