"""Recurrent layers: a cell applied step by step, ``RNN(cell)`` to loop it.

Keras 3 names, defaults and weight layouts: ``SimpleRNN``, ``LSTM``, ``GRU``,
their cells ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``, ``StackedRNNCells``
(several cells in one step), ``Bidirectional`` and ``TimeDistributed``. The
cells (one time step) live in :mod:`.recurrent_cells` and are re-exported
here; this module holds what loops them over time and wraps the loop.

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

import numpy as np

from .. import regularizers
from ..base.naming import to_snake_case
from ..base.session import unique_name
from ..base.state import is_package_code, name_scope
from ..core import rules as R
from ..core.engine import apply
from ..core.ops import cast, concatenate, reshape, stack, where
from ..core.tensor import Tensor, constant
from ..keras_base.serialization import deserialize_keras_object, serialize_keras_object
from .base import Layer, _call_parameters, boolean_mask
from .recurrent_cells import (
    GRUCell,
    LSTMCell,
    SimpleRNNCell,
    StackedRNNCells,
    _KerasCell,
    _positive_units,
    _sizes,
    _takes_training,
)
from .recurrent_text import ByClass


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
def _flatten(states) -> list:
    if isinstance(states, (list, tuple)):
        return [s for item in states for s in _flatten(item)]
    return [states]


def _all_layers(layer):
    out = [layer]
    for _, child in layer._children():
        out += _all_layers(child)
    return out

