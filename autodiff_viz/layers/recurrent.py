"""Recurrent layers: a cell applied step by step, ``RNN(cell)`` to loop it.

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
backward graph shows backpropagation through time explicitly.
"""
from __future__ import annotations

__all__ = ["RNN", "SimpleRNN", "SimpleRNNCell"]

import numpy as np

from ..ops import matmul, stack
from ..tensor import constant
from . import activations
from .base import Layer


class SimpleRNNCell(Layer):
    """One step of an Elman RNN: ``h_t = activation(x_t @ kernel + bias + h_{t−1} @ recurrent_kernel)``.

    Weights: ``kernel (input_dim, units)``, ``recurrent_kernel (units, units)``
    (orthogonal by default, as Keras) and ``bias (units,)``.
    """

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        self.kernel = self.add_weight((input_shape[-1], self.units), self.kernel_initializer, name="kernel")
        self.recurrent_kernel = self.add_weight((self.units, self.units), self.recurrent_initializer,
                                                name="recurrent_kernel")
        self.bias = self.add_weight((self.units,), self.bias_initializer, name="bias") if self.use_bias else None

    def call(self, inputs, states):
        prev = states[0] if isinstance(states, (list, tuple)) else states
        h = matmul(inputs, self.kernel)
        if self.use_bias:
            h = h + self.bias
        output = self.activation(h + matmul(prev, self.recurrent_kernel))
        return output, ([output] if isinstance(states, (list, tuple)) else output)


class RNN(Layer):
    """Run ``cell`` over the time axis of ``(batch, time, features)`` inputs.

    Args:
        cell: a layer with ``state_size`` and ``call(inputs, states)``.
        return_sequences: return every step's output ``(batch, time, units)``
            instead of only the last ``(batch, units)``.
        return_state: also return the final states: ``[output, *states]``.
        go_backwards: process the sequence from the last step to the first.

    Call as ``rnn(x)`` or ``rnn(x, initial_state=[h0])``; states start at zero.
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(cell, Layer) or not hasattr(cell, "state_size"):
            raise TypeError(f"{self.name}: the cell must be a Layer with a `state_size` attribute and "
                            f"call(inputs, states) -> (output, new_states); got {type(cell).__name__}.")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)

    @property
    def state_size(self) -> list:
        size = self.cell.state_size
        return [int(s) for s in size] if isinstance(size, (list, tuple)) else [int(size)]

    def get_initial_state(self, batch_size: int) -> list:
        """Zeros of shape ``(batch, size)`` per state, unless the cell defines ``get_initial_state``."""
        own = getattr(self.cell, "get_initial_state", None)
        if own is not None:
            states = own(batch_size=batch_size)
            return list(states) if isinstance(states, (list, tuple)) else [states]
        return [constant(np.zeros((batch_size, n), dtype=self.cell.dtype)) for n in self.state_size]

    def call(self, inputs, initial_state=None):
        if inputs.ndim != 3:
            raise ValueError(f"{self.name}: expected inputs of shape (batch, time, features), got {inputs.shape}. "
                             "Add a time axis, e.g. x[:, None, :] for one step.")
        batch, steps = inputs.shape[0], inputs.shape[1]
        if steps == 0:
            raise ValueError(f"{self.name}: the input has no time steps (shape {inputs.shape}).")
        if initial_state is None:
            states = self.get_initial_state(batch)
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            states = [self._convert(s) for s in states]
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        outputs = []
        for t in order:
            out, new = self.cell(inputs[:, t], states)
            states = list(new) if isinstance(new, (list, tuple)) else [new]
            outputs.append(out)
        output = stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.return_state:
            return [output, *states]
        return output


class SimpleRNN(RNN):
    """``RNN(SimpleRNNCell(units, ...))`` in one layer, as ``keras.layers.SimpleRNN``.

        >>> rnn = SimpleRNN(8, return_sequences=True)
        >>> rnn(np.zeros((2, 5, 3))).shape
        (2, 5, 8)

    The weights live in ``rnn.cell``: ``kernel``, ``recurrent_kernel`` and ``bias``.
    """

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", return_sequences=False,
                 return_state=False, go_backwards=False, name=None, dtype=None, trainable=True, **kwargs):
        cell = SimpleRNNCell(units, activation=activation, use_bias=use_bias,
                             kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                             bias_initializer=bias_initializer, dtype=dtype, trainable=trainable)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.units = cell.units
