"""The Layer base class: weights, lazy build, names, scopes and ``layer.output``.

Write a layer the Keras way:

    >>> class Scale(Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
    ...     def call(self, inputs):
    ...         return inputs * self.w
    >>> layer = Scale()
    >>> y = layer(np.ones((2, 3)))          # build((2, 3)) runs on the first call
    >>> layer.w.name, layer.output.shape
    ('scale/w', (2, 3))

What a call does, in order: enter ``name_scope(layer.name)`` (so every op it
records carries the scope path, ``my_model/dense_1``), convert or cast
floating inputs to the layer's dtype, build on first use, run ``call``, and
keep the result as ``layer.output``. Because a tape tracks tensors by id,
``tape.gradient(loss, layer.output)`` works inside the tape that recorded
that call.

Layers held in attributes (also in lists, tuples and dicts) are tracked
automatically, in the order they were assigned, as in Keras.

Differences from Keras, and why: there is no symbolic functional API
(``Input`` only tells a :class:`~autodiff_viz.Sequential` its input shape),
because every call here runs eagerly on real values; ``layer.output`` is
the output of the *most recent* call rather than a symbolic tensor, which is
what makes it usable as a gradient source.
"""
from __future__ import annotations

import functools
import re
from collections import defaultdict

import numpy as np

from .. import engine
from ..ops import cast
from ..structure import flatten
from ..tensor import Tensor, Variable, constant
from . import initializers

_uids: defaultdict = defaultdict(int)
_floatx = ["float32"]
_INTERNAL = frozenset({"_own_weights", "_output", "_output_shape", "_layers", "_weight_uids", "_frozen"})


# ---------------------------------------------------------------------------
# Session state: names and the default float type
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def to_snake_case(name: str) -> str:
    """``SimpleRNNCell`` -> ``simple_rnn_cell`` (Keras' rule for default layer names)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(prefix: str) -> str:
    """``dense``, then ``dense_1``, ``dense_2`` ... for each prefix in this session."""
    n = _uids[prefix]
    _uids[prefix] += 1
    return prefix if n == 0 else f"{prefix}_{n}"


def clear_session() -> None:
    """Restart default names at ``dense``, ``dense_1`` ... (``keras.backend.clear_session``)."""
    _uids.clear()


def floatx() -> str:
    """The default dtype of new layers: ``"float32"``, as in Keras."""
    return _floatx[0]


def set_floatx(dtype: str) -> None:
    """Set the default dtype of new layers (``"float64"`` to compare with numpy exactly)."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise ValueError(f"set_floatx: {dtype!r} is not a floating dtype; use 'float32' or 'float64'.")
    _floatx[0] = dt.name


def _default(method):
    method._is_default_build = True
    return method


# ---------------------------------------------------------------------------
# Layer
# ---------------------------------------------------------------------------
class Layer:
    """A callable with weights: ``build(input_shape)`` once, then ``call(inputs)``.

    Floating inputs are cast to the layer's dtype on the way in (Keras'
    autocasting); containers (models) pass them on as they are, so each
    layer casts to its own dtype.

    Args:
        name: unique, readable name; defaults to the snake-case class name
            made unique (``dense``, ``dense_1``).
        dtype: dtype of the weights and of floating inputs (they are cast
            on the way in); defaults to :func:`floatx` (``float32``).
        trainable: ``False`` moves every weight of the layer (and of the
            layers inside it) to ``non_trainable_variables``.
    """

    _autocast = True

    def __init__(self, trainable: bool = True, name: str | None = None, dtype=None, input_shape=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {sorted(kwargs)}.")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: name must be a string, got {type(name).__name__}.")
        self._name = name or unique_name(to_snake_case(type(self).__name__))
        self.dtype = np.dtype(dtype or floatx()).name
        if np.dtype(self.dtype).kind != "f":
            raise ValueError(f"{self._name}: dtype must be floating, got {self.dtype!r}.")
        self.trainable = bool(trainable)
        self.built = False
        self._own_weights: list[Variable] = []
        self._weight_uids: defaultdict = defaultdict(int)
        self._output = None
        self._output_shape = None
        self._input_shape_arg = None if input_shape is None else tuple(input_shape)

    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value) -> None:
        """Freezing a layer freezes its variables and its sublayers' (Keras 3), so tapes stop watching
        them; unfreezing gives back trainability only to the variables that freezing took it from."""
        value = bool(value)
        self._trainable = value
        if "_own_weights" not in vars(self):
            return
        if not value:
            frozen = [v for v in self._own_variables() if v.trainable]
            for v in frozen:
                v.trainable = False
            self._frozen = getattr(self, "_frozen", []) + frozen
        else:
            for v in getattr(self, "_frozen", []):
                v.trainable = True
            self._frozen = []
        for _, layer in self._children():
            layer.trainable = value

    # ----- weights --------------------------------------------------------
    def add_weight(self, shape=None, initializer=None, dtype=None, trainable: bool = True,
                   name: str | None = None) -> Variable:
        """Create a weight named ``layer_name/name`` and track it.

        Args:
            shape: tuple of ints (``()`` for a scalar).
            initializer: ``"glorot_uniform"`` (the default, as Keras),
                ``"uniform"``, ``"normal"``, ``"zeros"``, ``"ones"``, another
                Keras name, or a callable ``f(shape, dtype)``.
            trainable: whether optimizers update it (and tapes watch it).
        """
        if isinstance(shape, str):
            raise TypeError(f"{self.name}.add_weight: the first argument is the shape (Keras 3), got the string "
                            f"{shape!r}. Pass the name as a keyword: add_weight(shape=(...), name={shape!r}).")
        shape = () if shape is None else tuple(int(s) for s in shape)
        dtype = np.dtype(dtype or self.dtype).name
        init = initializers.get(initializer if initializer is not None else "glorot_uniform")
        value = init(shape, dtype)
        if value.shape != shape:
            raise ValueError(f"{self.name}.add_weight({name!r}): the initializer returned shape {value.shape}, "
                             f"expected {shape}.")
        base = name or "variable"
        n = self._weight_uids[base]
        self._weight_uids[base] += 1
        short = base if n == 0 else f"{base}_{n}"
        var = Variable(value, trainable=trainable and self._trainable, name=f"{self.name}/{short}")
        if trainable and not self._trainable:          # made while the layer is frozen
            self._frozen = getattr(self, "_frozen", []) + [var]
        self._own_weights.append(var)
        return var

    def _children(self):
        """``(path, layer)`` for each layer held in an attribute, in assignment order."""
        out, seen = [], {id(self)}
        for attr, value in vars(self).items():
            if attr in _INTERNAL:
                continue
            key = attr.lstrip("_") or attr
            if isinstance(value, Layer):
                items = [(key, value)]
            elif isinstance(value, (list, tuple)):
                items = _numbered(key, [v for v in value if isinstance(v, Layer)])
            elif isinstance(value, dict):
                items = [(f"{key}/{k}", v) for k, v in value.items() if isinstance(v, Layer)]
            else:
                continue
            for path, layer in items:
                if id(layer) not in seen:
                    seen.add(id(layer))
                    out.append((path, layer))
        return out

    def _attribute_variables(self):
        return [v for a, v in vars(self).items() if a not in _INTERNAL and isinstance(v, Variable)]

    def _own_variables(self):
        own = list(self._own_weights)
        ids = {id(v) for v in own}
        own += [v for v in self._attribute_variables() if id(v) not in ids]
        return own

    @property
    def layers(self) -> list:
        """The layers directly inside this one (attributes, in assignment order)."""
        return [layer for _, layer in self._children()]

    def _split_variables(self, parent_trainable=True):
        trainable_here = parent_trainable and self.trainable
        own = self._own_variables()
        tr = [v for v in own if v.trainable and trainable_here]
        non = [v for v in own if not (v.trainable and trainable_here)]
        for layer in self.layers:
            t, n = layer._split_variables(trainable_here)
            tr += t
            non += n
        return _unique(tr), _unique(non)

    @property
    def trainable_variables(self) -> list:
        """Weights an optimizer updates: own first, then those of the layers inside."""
        return self._split_variables()[0]

    @property
    def non_trainable_variables(self) -> list:
        return self._split_variables()[1]

    @property
    def weights(self) -> list:
        """All weights: trainable first, then non-trainable (Keras' order)."""
        t, n = self._split_variables()
        return t + n

    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables
    variables = weights

    def get_weights(self) -> list:
        """The weights' values as numpy arrays (copies), in ``weights`` order."""
        return [v._value.copy() for v in self.weights]

    def set_weights(self, values) -> None:
        """Set every weight from a list of arrays; on any mismatch nothing changes."""
        weights = self.weights
        values = list(values)
        if len(values) != len(weights):
            hint = (" It is not built yet: call it on a batch first so its weights exist."
                    if not self.built else " Pass a list like layer.get_weights().")
            raise ValueError(f"{self.name}.set_weights: the layer has {len(weights)} weights, got "
                             f"{len(values)} arrays.{hint}")
        arrays = []
        for v, a in zip(weights, values):
            a = np.asarray(a._value if isinstance(a, Tensor) else a)
            if a.shape != v.shape:
                raise ValueError(f"{self.name}.set_weights: weight {v.name} has shape {v.shape}, "
                                 f"the array has shape {a.shape}. Nothing was changed.")
            arrays.append(a)
        for v, a in zip(weights, arrays):
            v.assign(a)

    def count_params(self) -> int:
        return int(sum(v.size for v in self.weights))

    # ----- calling ----------------------------------------------------------
    @_default
    def build(self, input_shape) -> None:
        """Create the weights, knowing the input shape. Called once, before the first ``call``."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call(self, inputs).")

    def __call__(self, *args, **kwargs):
        if "_own_weights" not in vars(self):
            raise RuntimeError(f"{type(self).__name__}.__init__ did not call super().__init__(); "
                               "add `super().__init__(**kwargs)` as its first line.")
        if not args:
            raise TypeError(f"{self.name}: call the layer with its inputs, e.g. layer(x).")
        with engine.name_scope(self.name), engine.shared_location(engine.is_package_code(type(self).call)):
            inputs = self._convert_inputs(args[0])
            if not self.built:
                self._maybe_build(_shapes(inputs))
            out = self.call(inputs, *args[1:], **kwargs)
        self._output = out
        self._output_shape = _shapes(out)
        return out

    def _maybe_build(self, input_shape) -> None:
        if not getattr(type(self).build, "_is_default_build", False):
            self.build(input_shape)
        self.built = True

    def _convert_inputs(self, inputs):
        leaves, rebuild = flatten(inputs)
        return rebuild([self._convert(x) for x in leaves])

    def _convert(self, x):
        if isinstance(x, InputSpec):
            raise TypeError(f"{self.name}: adv.layers.Input is a placeholder for Sequential([Input(shape), ...]); "
                            "there is no symbolic functional API. Call layers on real arrays or tensors.")
        if isinstance(x, Tensor):
            if self._autocast and x.dtype.kind == "f" and x.dtype != self.dtype:
                return cast(x, self.dtype)
            return x
        if isinstance(x, (np.ndarray, list, float, int, np.generic)):
            arr = np.asarray(x)
            keep = arr.dtype.kind == "f" and not self._autocast
            return constant(arr, dtype=None if keep or arr.dtype.kind not in "fiub" else self.dtype)
        return x

    @property
    def output(self):
        """The output of the most recent call: a tensor you can ask a gradient for.

            >>> with adv.GradientTape() as tape:
            ...     loss = adv.sum(model(x) ** 2)
            >>> tape.gradient(loss, model.get_layer("dense").output)

        Use it inside the tape that recorded that call: the output of an
        earlier call is unknown to a new tape, and its gradient there is None.
        """
        if self._output is None:
            raise AttributeError(f"Layer {self.name!r} has not been called yet, so it has no output. "
                                 "Call the model (or layer) on data first, inside the tape if you want gradients.")
        return self._output

    @property
    def output_shape(self):
        """The shape of the most recent output with the batch axis as None (for summaries)."""
        if self._output_shape is None:
            raise AttributeError(f"Layer {self.name!r} has not been called yet; its output shape is unknown.")
        return _batchless(self._output_shape)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


class InputSpec:
    """What ``adv.layers.Input(shape)`` returns: the input shape for a Sequential model."""

    def __init__(self, shape, dtype=None, name=None):
        self.shape = (None,) + tuple(shape)
        self.dtype = dtype
        self.name = name

    def __repr__(self):
        return f"<Input shape={self.shape}>"


def Input(shape, dtype=None, name=None) -> InputSpec:
    """Declare the input shape (without the batch axis) as the first entry of a Sequential."""
    return InputSpec(shape, dtype, name)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _shapes(obj):
    if isinstance(obj, (Tensor, np.ndarray)):
        return tuple(obj.shape)
    if isinstance(obj, (list, tuple)):
        return [_shapes(o) for o in obj]
    return None


def _batchless(shape):
    if isinstance(shape, list):
        return [_batchless(s) for s in shape]
    if isinstance(shape, tuple) and shape:
        return (None,) + shape[1:]
    return shape


def _numbered(prefix: str, layers: list) -> list:
    """Paths for layers in a container: class names made unique among siblings (Keras' file layout)."""
    counts: defaultdict = defaultdict(int)
    out = []
    for layer in layers:
        base = to_snake_case(type(layer).__name__)
        n = counts[base]
        counts[base] += 1
        name = base if n == 0 else f"{base}_{n}"
        out.append((f"{prefix}/{name}" if prefix else name, layer))
    return out


def _unique(items):
    seen, out = set(), []
    for v in items:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out

