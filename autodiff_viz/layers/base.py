"""The Layer base class: weights, lazy build, names, scopes, losses and ``layer.output``.

Write a layer the Keras way:

    >>> class Scale(Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
    ...     def call(self, inputs):
    ...         return inputs * self.w
    >>> layer = Scale()
    >>> y = layer(np.ones((2, 3)))          # build((2, 3)) runs on the first call
    >>> layer.w.name, layer.w.path, layer.output.shape
    ('w', 'scale/w', (2, 3))

What a call does, in order: enter ``name_scope(layer.name)`` (so every op it
records carries the scope path, ``my_model/dense_1``), convert or cast
floating inputs to the layer's dtype (a nested list of numbers is one array,
``layer([[1., 2.]])``, as in Keras), build on first use, run ``call``, and
keep the result as ``layer.output``. Because a tape tracks tensors by id,
``tape.gradient(loss, layer.output)`` works inside the tape that recorded
that call. ``build`` sets ``built = True`` when it returns (also a ``build``
you call yourself, as in Keras 3), so the first call does not build again.

Layers held in attributes (also in lists, tuples and dicts) are tracked
automatically, in the order they were assigned, as in Keras.

Called on a *symbolic* tensor (what :func:`Input` returns), a layer builds
from the shape and returns symbolic outputs that remember the call: that is
Keras' functional API, and :class:`~autodiff_viz.Model` turns such a graph
into a model. A functional model runs its layers eagerly on real values, so
``layer.output`` is always a real tensor of the latest call; before any
real call it is the symbolic output (to build another model from it).
"""
from __future__ import annotations

import functools
import inspect
import threading
import warnings
import weakref
from collections import defaultdict

import numpy as np

from ..base.naming import INPUT, to_snake_case
from ..base.session import clear_session, floatx, set_floatx, unique_name  # noqa: F401  (re-exported by adv.layers)
from ..base.state import OWN_KIND, enter_scope, exit_scope, is_package_code, name_scope, paused, state, user_stacklevel
from ..base.structure import flatten
from ..core.ops import cast
from ..core.tensor import Tensor, Variable, _to_array, assigned, check_nbytes, constant
from ..diagnosis import walk as _diagnosis_walk
from . import initializers
from .keras_tensor import (
    InputSpec,
    KerasTensor,
    _describe_symbolic,
    _has_symbolic,
    _has_unknown_sizes,
    _placeholders,
    _python_array,
    _symbolic_shapes,
    _SymbolicNode,
)

_INTERNAL = frozenset({"_own_weights", "_output", "_output_shape", "_layers", "_weight_uids", "_frozen",
                       "_inbound_nodes", "_losses", "_regularizers", "_constraints", "_var_cache",
                       "_sub_cache", "_trainable", "built"})
_version = [0]              # bumped whenever a layer's weights or sublayers may have changed


class _Calls(threading.local):
    """This thread's layer-call context: how many calls are open, the ``training`` mode they pass on, and
    whether a model is running its build batch (placeholder zeros: warnings about the data do not apply)."""

    def __init__(self):
        self.depth = 0
        self.training = None
        self.building = False


def building() -> bool:
    """Is this thread running a model's build batch (:meth:`Model.build`'s zeros)?"""
    return _calls.building


_calls = _Calls()
_holding_losses: "weakref.WeakSet" = weakref.WeakSet()   # layers with add_loss losses to clear
_LIVE: "weakref.WeakSet" = weakref.WeakSet()             # every layer alive: who holds a weight (why-None)


def _touch() -> None:
    """Invalidate every layer's cached variable lists (weights or sublayers changed)."""
    _version[0] += 1


def _call_parameters(call) -> tuple:
    """``(takes training?, takes mask?)``: whether a layer's ``call`` names these parameters (Keras passes them
    only then)."""
    try:
        params = inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False, False
    return "training" in params, "mask" in params


def _call_facts(cls) -> tuple:
    """What ``Layer.__call__`` needs to know of a layer class, worked out once: ``(cls, cls.call, package code?,
    takes training?, takes mask?, converts one tensor with _convert alone?, class name, own compute_mask?)``."""
    call = cls.call
    return (cls, call, is_package_code(call), *_call_parameters(call), cls._convert_inputs is Layer._convert_inputs,
            _scope_kind(cls), cls.compute_mask is not Layer.compute_mask)


def _scope_kind(cls) -> str:
    """What a layer of class ``cls`` writes as the kind of its name scope: its class name, marked
    :data:`~..base.state.OWN_KIND` when its ``call`` is the learner's code (no library formula for it)."""
    return cls.__name__ if is_package_code(cls.call) else OWN_KIND + cls.__name__


_masks_made = [False]   # has any layer attached a mask yet? Until then a layer call does not look for one


def _carried(first):
    """The mask the first argument carries; for a list of tensors the list of their masks (None if none has one)."""
    if isinstance(first, (list, tuple)):
        masks = [getattr(t, "_keras_mask", None) for t in first]
        return masks if any(m is not None for m in masks) else None
    return getattr(first, "_keras_mask", None)


def _carry_mask(out, mask) -> None:
    """Attach ``mask`` to the output tensor (or to each of a list), where the next layer's ``__call__`` finds it."""
    for i, t in enumerate(out if isinstance(out, (list, tuple)) else [out]):
        m = mask[i] if isinstance(mask, (list, tuple)) else mask
        if isinstance(t, Tensor):
            t._keras_mask = None if m is None else (m._value if isinstance(m, Tensor) else np.asarray(m))
            if m is not None:
                _masks_made[0] = True


def boolean_mask(layer, mask, shape: tuple) -> np.ndarray:
    """``mask`` (booleans or 0/1 numbers, an array, list or tensor) as a numpy bool array of ``shape``.

    True marks a real step, False a padded one, as in Keras. A mask of another
    shape is an error naming ``layer`` and the shape it needs.
    """
    m = np.asarray(mask._value if isinstance(mask, Tensor) else mask)
    if m.shape != tuple(shape):
        want = f"(batch, time) = {tuple(shape)}" if len(shape) == 2 else f"{tuple(shape)}"
        raise ValueError(f"{layer.name} ({type(layer).__name__}): mask should have shape {want}, got {m.shape}. "
                         "True marks the steps to use (Embedding(mask_zero=True).compute_mask(tokens) gives it).")
    if m.dtype.kind not in "biuf":
        raise TypeError(f"{layer.name} ({type(layer).__name__}): mask must hold booleans (True: a real step), "
                        f"got {m.dtype}.")
    return m if m.dtype == np.bool_ else m != 0


_warned_masks: "weakref.WeakSet" = weakref.WeakSet()


def _mask_dropped(layer) -> None:
    """Warn once per layer, as Keras 3: a masked input reached a layer that does not support masking."""
    if layer in _warned_masks:
        return
    _warned_masks.add(layer)
    warnings.warn(f"Layer {layer.name!r} ({type(layer).__name__}) was passed an input with a mask attached to it "
                  "(from Embedding(mask_zero=True) or Masking). This layer does not support masking, so it treats "
                  "the padded steps as data and the mask stops here, as in Keras 3. Put the layers that need the "
                  "mask (a recurrent layer) before this one, or pass it yourself: layer(x, mask=m).",
                  UserWarning, stacklevel=user_stacklevel())


# ---------------------------------------------------------------------------
# Session state: names and the default float type
# ---------------------------------------------------------------------------










def _default(method):
    method._is_default_build = True
    return method


def _sets_built(build):
    """Wrap a ``build`` method so that it runs inside ``name_scope(layer.name)`` and ``built`` is True once
    it returns (Keras 3 does both)."""
    if getattr(build, "_sets_built", False):
        return build

    @functools.wraps(build)
    def build_then_mark(self, *args, **kwargs):
        name = self.name
        if state.scope[-1:] == (name,):
            build(self, *args, **kwargs)
        else:   # inside its own scope, as Keras 3: the weights of the layers it builds get its name in their path
            scope = enter_scope(name, _scope_kind(type(self)))
            try:
                build(self, *args, **kwargs)
            finally:
                exit_scope(scope)
        self.built = True
        _touch()
    build_then_mark._sets_built = True
    return build_then_mark


def _holds_weights(container) -> bool:
    values = container.values() if isinstance(container, dict) else container
    return any(isinstance(v, _STRUCTURAL) for v in values)


def _invalidating(method):
    """Wrap a mutating list/dict method: when weights or layers were held before or after, drop the caches."""
    @functools.wraps(method)
    def changed(self, *args, **kwargs):
        had = _holds_weights(self)
        out = method(self, *args, **kwargs)
        if had or _holds_weights(self):
            _touch()
        return out
    return changed


class _TrackedList(list):
    """A list held by a layer: adding or removing a layer or a variable invalidates the cached
    variable lists (other items, e.g. arrays kept between calls, change nothing)."""

    for _m in ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__",
               "__delitem__", "__iadd__", "__imul__"):
        locals()[_m] = _invalidating(getattr(list, _m))
    del _m


class _TrackedDict(dict):
    """A dict held by a layer: adding or removing a layer or a variable invalidates the cached
    variable lists."""

    for _m in ("__setitem__", "__delitem__", "pop", "popitem", "clear", "update", "setdefault", "__ior__"):
        locals()[_m] = _invalidating(getattr(dict, _m))
    del _m


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
    _keras_kind = "layer"   # how autodiff_viz.keras_base.serialization writes it (see there)
    _config_base_parameters = ("trainable", "name", "dtype")   # what Layer.__init__ takes behind **kwargs
    _single_input = False   # True: call(inputs) takes one tensor (Dense, Conv, Embedding ...), checked in __call__
    _takes_list = False     # True: call(inputs) takes a list of tensors (merge layers, Attention)
    _call_shares = (None,) * 8      # _call_facts(cls), made at the class's first call
    supports_masking = False   # True: the output carries the input's mask (see compute_mask), as Keras 3
    # The layer's backward formula, as a course writes it on the edges of the layer's folded box: {"x": the
    # gradient of the input, weight name: its gradient}, in ḡ_x / ḡ_y (y the output). None: a generic sentence.
    backward_text: dict | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "build" in cls.__dict__:
            cls.build = _sets_built(cls.__dict__["build"])

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
        self._losses: list = []
        self._regularizers: list = []
        self._constraints: list = []
        self._inbound_nodes: list = []
        _LIVE.add(self)

    def __setattr__(self, name, value):
        if name not in _INTERNAL:
            if type(value) is list:
                value = _TrackedList(value)
            elif type(value) is dict:
                value = _TrackedDict(value)
            if _structural(value) or _structural(self.__dict__.get(name)):
                if "_own_weights" not in self.__dict__:
                    raise RuntimeError(f"{type(self).__name__}: self.{name} is set before the layer was initialised. "
                                       f"Call super().__init__() first in {type(self).__name__}.__init__ (as in "
                                       "Keras), before creating layers or weights.")
                _touch()
        object.__setattr__(self, name, value)

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
        _touch()
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
                   name: str | None = None, *, regularizer=None, constraint=None, autocast=True,
                   aggregation="none", overwrite_with_gradient=False) -> Variable:
        """Create a weight named ``name`` (Keras 3: ``"kernel"``) at path ``layer_name/name`` and track it.

        The path, as Keras 3's, adds the scopes the weight is made in: a
        layer built inside a model's or an outer layer's call gets their
        names in front (``"lstm/lstm_cell/kernel"``).

        Args:
            shape: tuple of ints (``()`` for a scalar).
            initializer: ``"glorot_uniform"`` (the default, as Keras),
                ``"uniform"``, ``"normal"``, ``"zeros"``, ``"ones"``, another
                Keras name, or a callable ``f(shape, dtype)``.
            trainable: whether optimizers update it (and tapes watch it).
            regularizer: a callable ``f(weight) -> scalar tensor`` (e.g.
                ``adv.regularizers.L2(0.01)``) or its name; its value is in
                ``layer.losses`` and ``fit`` adds it to the loss.
            constraint: a callable ``f(weight) -> new value`` applied after
                each optimizer step of ``fit`` (e.g. a max-norm projection).

        A weight larger than ``adv.tensor.MAX_BYTES`` (2 GiB) is refused
        before anything is allocated: ``Dense(10**12)`` is a typo, not a model.
        Keras 3's ``autocast``, ``aggregation`` (distributed training) and
        ``overwrite_with_gradient`` (float8 training) are accepted so Keras
        code runs; they change nothing here (one process, float weights).
        """
        if isinstance(shape, str):
            raise TypeError(f"{self.name}.add_weight: the first argument is the shape (Keras 3), got the string "
                            f"{shape!r}. Pass the name as a keyword: add_weight(shape=(...), name={shape!r}).")
        shape = () if shape is None else tuple(int(s) for s in shape)
        dtype = np.dtype(dtype or self.dtype).name
        check_nbytes(f"{self.name} ({type(self).__name__}).add_weight({name!r})", shape, dtype,
                     "Check the layer's sizes (units, filters, input_dim/output_dim) and the input's last axis: "
                     "one of them is far larger than intended.")
        regularizer = _regularizer(regularizer, self.name, name)
        if constraint is not None and not callable(constraint):
            raise TypeError(f"{self.name}.add_weight({name!r}): constraint must be a callable f(weight) -> value, "
                            f"got {type(constraint).__name__}.")
        init = initializers.get(initializer if initializer is not None else "glorot_uniform")
        value = init(shape, dtype)
        if value.shape != shape:
            raise ValueError(f"{self.name}.add_weight({name!r}): the initializer returned shape {value.shape}, "
                             f"expected {shape}.")
        base = name or "variable"
        n = self._weight_uids[base]
        self._weight_uids[base] += 1
        short = base if n == 0 else f"{base}_{n}"
        var = Variable(value, trainable=trainable and self._trainable, name=short, constraint=constraint)
        var._path = _weight_path(self.name, short)
        if trainable and not self._trainable:          # made while the layer is frozen
            self._frozen = getattr(self, "_frozen", []) + [var]
        self._own_weights.append(var)
        if regularizer is not None:
            self._regularizers.append((var, regularizer))
        if constraint is not None:
            self._constraints.append((var, constraint))
        _touch()
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

    def _sublayers(self) -> list:
        """Every layer inside this one, depth first, each once (cached until the structure changes)."""
        cache = self.__dict__.get("_sub_cache")
        if cache is not None and cache[0] == _version[0]:
            return cache[1]
        out, seen, stack = [], {id(self)}, list(reversed(self.layers))
        while stack:
            layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            stack.extend(reversed(layer.layers))
        self._sub_cache = (_version[0], out)
        return out

    def _split_variables(self, parent_trainable=True):
        """``(trainable, non_trainable, every)``: own first, then each layer inside's; ``every`` in Keras 3's
        ``weights`` order, layer by layer (a layer's own in the order it made them)."""
        trainable_here = parent_trainable and self.trainable
        own = self._own_variables()
        tr = [v for v in own if v.trainable and trainable_here]
        non = [v for v in own if not (v.trainable and trainable_here)]
        every = list(own)
        for layer in self.layers:
            t, n, e = layer._split_variables(trainable_here)
            tr += t
            non += n
            every += e
        return _unique(tr), _unique(non), _unique(every)

    def _variables(self):
        """``(trainable, non_trainable)``, cached: rebuilt only when weights, sublayers or a
        ``trainable`` flag (of a layer or of a variable) changed since the last time."""
        cache = self.__dict__.get("_var_cache")
        if cache is not None and cache[0] == _version[0] and [v.trainable for v in cache[1]] == cache[2]:
            return cache[3], cache[4]
        tr, non, every = self._split_variables()
        self._var_cache = (_version[0], every, [v.trainable for v in every], tr, non)
        return tr, non

    @property
    def trainable_variables(self) -> list:
        """Weights an optimizer updates: own first, then those of the layers inside."""
        return list(self._variables()[0])

    @property
    def non_trainable_variables(self) -> list:
        return list(self._variables()[1])

    @property
    def weights(self) -> list:
        """All weights in Keras 3's order: layer by layer, each layer's own in the order it made them
        (``BatchNormalization``: gamma, beta, moving_mean, moving_variance), then those of the layers
        inside it. ``get_weights`` and ``set_weights`` use this order, so a list from Keras fits."""
        self._variables()
        return list(self._var_cache[1])

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
                raise ValueError(f"{self.name}.set_weights: weight {v.path} has shape {v.shape}, "
                                 f"the array has shape {a.shape}. Nothing was changed.")
            arrays.append(a)
        for v, a in zip(weights, arrays):
            v.assign(a)
        if state.recording:         # under a tape: note each value, so why-None can name this call
            for v, given in zip(weights, values):
                assigned(v, given, "set_weights")

    def count_params(self) -> int:
        return int(sum(v.size for v in self.weights))

    # ----- losses -----------------------------------------------------------
    def add_metric(self, *args, **kwargs):
        """Removed in Keras 3, as here: raises ``NotImplementedError`` with where a metric goes instead."""
        raise NotImplementedError(
            f"{self.name} ({type(self).__name__}): Layer.add_metric() was removed in Keras 3 (as here). Add the "
            "metric in model.compile(metrics=[...]), or, for a value computed inside a layer, track it in a "
            "metric of your model's own train_step (self.tracker = adv.metrics.Mean(name=...); "
            "self.tracker.update_state(value)) or log it with a callback.")

    def add_loss(self, loss) -> None:
        """Add a scalar to the loss that ``fit`` minimises (an activity penalty, a KL term ...).

        Call it inside ``call``: the losses of a call replace those of the
        previous call (they are cleared when the outermost layer or model
        is called again), and ``layer.losses`` gathers them with those of the
        layers inside.
        """
        if isinstance(loss, KerasTensor):
            raise TypeError(f"{self.name}.add_loss: got a symbolic tensor ({loss.name}). Add losses inside a "
                            "layer's call(), where the values are real.")
        if not isinstance(loss, Tensor):
            loss = constant(np.asarray(loss, dtype=self.dtype))
        self._losses.append(loss)
        _holding_losses.add(self)

    @property
    def losses(self) -> list:
        """Scalar losses to add to the training loss: those added by ``add_loss`` during the latest
        call (of this layer and the layers inside), then the regularization of every trainable
        weight that has a regularizer, computed now, inside ``name_scope("regularization")``."""
        layers = [self, *self._sublayers()]
        out = [loss for layer in layers for loss in layer._losses]
        regularized = [(layer, v, fn) for layer in layers for v, fn in layer._regularizers]
        if regularized:
            trainable = {id(v) for v in self._variables()[0]}
            with name_scope("regularization"):
                for layer, v, fn in regularized:
                    if id(v) in trainable:
                        with name_scope(layer.name, type(layer).__name__):
                            value = fn(v)
                        out.append(value if isinstance(value, Tensor) else constant(value))
        return out

    def _clear_losses(self) -> None:
        """Forget the ``add_loss`` losses of this layer and the layers inside (a new outermost call)."""
        if not len(_holding_losses):
            return
        holding = list(_holding_losses)
        inside = {id(self)} | {id(layer) for layer in self._sublayers()}
        for layer in holding:
            if id(layer) in inside:
                layer._losses = []
                _holding_losses.discard(layer)

    def _constrain(self) -> None:
        """Apply each weight's constraint (after an optimizer step)."""
        for layer in [self, *self._sublayers()]:
            for v, fn in layer._constraints:
                with paused():
                    value = fn(v)
                v.assign(value._value if isinstance(value, Tensor) else value)

    # ----- calling ----------------------------------------------------------
    @_default
    def build(self, input_shape) -> None:
        """Create the weights, knowing the input shape. Called once, before the first ``call``."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call(self, inputs).")

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if "_own_weights" not in d:
            raise RuntimeError(f"{type(self).__name__}.__init__ did not call super().__init__(); "
                               "add `super().__init__(**kwargs)` as its first line.")
        if not args:
            raise TypeError(f"{self.name}: call the layer with its inputs, e.g. layer(x).")
        first = args[0]
        plain = type(first) is Tensor and len(args) == 1 and not kwargs    # the usual call: layer(x), x concrete
        if not plain and _has_symbolic(args, kwargs):
            return self._symbolic_call(args, kwargs)
        calls = _calls.__dict__     # this thread's: one thread-local look-up, then plain dict reads and writes
        depth = calls["depth"]
        if depth == 0 and _holding_losses.data:
            self._clear_losses()
        cls = type(self)
        known = cls._call_shares        # see _call_facts: once per class
        if known[0] is not cls or known[1] is not cls.call:
            known = cls._call_shares = _call_facts(cls)
        _, _, shares, takes_training, takes_mask, converts_plainly, kind, own_mask = known
        outer = calls["training"]
        if "training" in kwargs:        # Keras 3's call context: the given value goes to the layers inside
            training = kwargs["training"] if takes_training else kwargs.pop("training")
        else:
            training = outer
            if training is not None and takes_training:
                kwargs["training"] = training
        scope = enter_scope(d["_name"], kind, shares)
        calls["depth"] = depth + 1
        if training is not outer:
            calls["training"] = training
        try:
            if plain and converts_plainly:
                inputs = self._convert(first)
            else:
                inputs = self._convert_inputs(first)
                if self._single_input and not isinstance(inputs, Tensor):
                    _refuse_structure(self, first)
            if not d["built"]:
                self._maybe_build(_shapes(inputs))
            # carried by the input tensor (Keras 3), also when cast; no look-up until some layer made a mask
            mask = _carried(first) if _masks_made[0] else None
            if mask is not None and takes_mask and kwargs.get("mask") is None:
                kwargs["mask"] = mask
            out = self.call(inputs, **kwargs) if plain else self.call(inputs, *args[1:], **kwargs)
            if (mask is not None or own_mask) and self.supports_masking:
                _carry_mask(out, self.compute_mask(inputs, kwargs.get("mask", mask)))
            elif mask is not None and not takes_mask:       # a layer that takes the mask has used it
                _mask_dropped(self)
        finally:
            exit_scope(scope)
            calls["depth"] = depth
            if training is not outer:
                calls["training"] = outer
        d["_output"] = out
        d["_output_shape"] = _shapes(out)
        return out

    def get_config(self) -> dict:
        """The arguments that rebuild this layer (Keras 3's base: ``name``, ``trainable``, ``dtype``); a layer of
        one's own adds its own: ``config = super().get_config(); config.update(units=self.units)``."""
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict):
        """A new layer from :meth:`get_config`'s dict: ``cls(**config)``, as Keras 3 (weights are not included)."""
        return cls(**config)

    def compute_mask(self, inputs, mask=None):
        """The mask of the output, for a layer that ``supports_masking``: the input's (Keras 3's default).

        A mask says which steps of a sequence are real (True) and which are
        padding (False). ``Embedding(mask_zero=True)`` and ``Masking`` make
        one; layers that keep the steps (``Dense``, activations, ``Dropout``)
        pass it on; a recurrent layer uses it to skip the padded steps.
        """
        return mask

    def _maybe_build(self, input_shape) -> None:
        if not getattr(type(self).build, "_is_default_build", False):
            self.build(input_shape)
        self.built = True

    def _convert_inputs(self, inputs):
        """Tensors for the inputs: arrays, numbers and nested lists of numbers become constants.

        A nested list of numbers is one array (``layer([[1., 2.]])``, as
        Keras), except at the top of a layer that takes a list of inputs
        (``Concatenate()([[[1.]], [[2.]]])``: two inputs, as Keras).
        """
        if type(inputs) in _LEAVES:         # one value (the usual call): no structure to flatten
            return self._convert(inputs)
        if not self._takes_list:
            if _python_array(inputs):
                return self._convert(inputs)
            leaves, rebuild = flatten(inputs, is_leaf=_python_array)
        else:
            leaves, rebuild = flatten(inputs, is_leaf=lambda o: o is not inputs and _python_array(o))
        return rebuild([self._convert(x) for x in leaves])

    def _convert(self, x):
        if isinstance(x, Tensor):
            dtype = x._value.dtype
            if dtype.kind == "f" and self._autocast and dtype is not _dtype_object(self.dtype) and dtype != self.dtype:
                out = cast(x, self.dtype)
                # a float64 batch the model named "input", cast here outside any tape's view: still the input
                return constant(out, name=INPUT) if x.name == INPUT and out.name is None else out
            return x
        if isinstance(x, InputSpec):
            raise TypeError(f"{self.name}: an InputSpec only gives a Sequential its input shape; call layers "
                            "on arrays, tensors, or on adv.layers.Input(shape) for the functional API.")
        if isinstance(x, (np.ndarray, list, tuple, float, int, np.generic)):
            arr = self._array(x)
            keep = arr.dtype.kind == "f" and not self._autocast
            # named "input" (traces look the learner's variable up first): drawn as the model's input, not a
            # constant folded into this layer's box
            return constant(arr, dtype=None if keep or arr.dtype.kind not in "fiub" else self.dtype, name=INPUT)
        return x

    def _array(self, x) -> np.ndarray:
        """``x`` (an array, a number or a nested list of numbers) as a numpy array, or an error naming this layer."""
        if type(x) is np.ndarray:
            return x
        try:
            return _to_array(x, None)
        except (TypeError, ValueError) as exc:     # a ragged list, strings: the error says which
            raise type(exc)(f"{self.name} ({type(self).__name__}): {exc}") from None

    # ----- the functional API ------------------------------------------------
    def _symbolic_call(self, args, kwargs):
        """Record a call on symbolic tensors: build from their shapes, infer the output shapes by
        running the layer on placeholder batches (nothing recorded), and return symbolic outputs."""
        first = args[0]
        described = _describe_symbolic(args, kwargs)
        try:
            if not self.built:
                with name_scope(self.name, type(self).__name__):
                    self._maybe_build(_symbolic_shapes(first))
            shapes = self._infer_output_shapes(args, kwargs)
        except Exception as exc:   # noqa: BLE001  (re-raised with the layer and the shapes named)
            msg = (f"Layer {self.name!r} ({type(self).__name__}) cannot be called on {described}: {exc}")
            try:
                err = type(exc)(msg)
            except Exception:   # noqa: BLE001
                err = ValueError(msg)
            raise err from exc
        node = _SymbolicNode(self, args, kwargs, shapes)
        return node.outputs

    def _infer_output_shapes(self, args, kwargs):
        """Output shapes (``None`` where a dimension follows an unknown input dimension).

        The layer runs twice on placeholder batches whose unknown sizes are 2,
        then 3: a dimension that differs follows an unknown one. A layer that
        cannot take so few entries (a crop of 1 + 1 on an unknown length, a
        5-wide valid convolution on an unknown width) gets a second try with
        16 and 17 before its error is reported.
        """
        probe_kwargs = dict(kwargs)
        if "training" in probe_kwargs:
            probe_kwargs["training"] = False
        layers = [self, *self._sublayers()]
        kept = [(layer, layer._output, layer._output_shape) for layer in layers]
        losses = [(layer, list(layer._losses)) for layer in layers]
        try:
            first_error = None
            for sizes in ((2, 3), (16, 17)):
                try:
                    runs = []
                    for size in sizes:
                        a, k = _placeholders((list(args), probe_kwargs), size)
                        with paused(), np.errstate(all="ignore"):
                            out = self(*a, **k)
                        runs.append(out)
                    break
                except Exception as exc:   # noqa: BLE001  (tried again with larger sizes, else re-raised)
                    first_error = first_error or exc
                    if not _has_unknown_sizes(args):
                        raise
            else:
                raise first_error
        finally:
            for layer, output, shape in kept:
                layer._output = output
            for layer, saved in losses:
                layer._losses = saved
        leaves2, rebuild = flatten(runs[0])
        leaves3, _ = flatten(runs[1])
        shapes = []
        for a, b in zip(leaves2, leaves3):
            if not isinstance(a, Tensor):
                raise TypeError(f"call() returned a {type(a).__name__}; a layer must return tensors.")
            sa, sb = tuple(a.shape), tuple(b.shape)
            if len(sa) != len(sb):
                shape = (None,) + sb[1:]
            else:
                shape = tuple(None if x != y else x for x, y in zip(sa, sb))
            shapes.append((shape, a.dtype.name))
        return shapes, rebuild

    @property
    def output(self):
        """The output of the most recent call: a tensor you can ask a gradient for.

            >>> with adv.GradientTape() as tape:
            ...     loss = adv.sum(model(x) ** 2)
            >>> tape.gradient(loss, model.get_layer("dense").output)

        Use it inside the tape that recorded that call: the output of an
        earlier call is unknown to a new tape, and its gradient there is None.
        Before any real call, a layer used in a functional model gives its
        symbolic output (``adv.Model(model.input, layer.output)`` builds a
        feature extractor).
        """
        if self._output is not None:
            return self._output
        nodes = self._inbound_nodes
        if len(nodes) == 1:
            return nodes[0].outputs
        if nodes:
            raise AttributeError(f"Layer {self.name!r} has been called at {len(nodes)} places of a functional "
                                 "graph and not yet on data, so `output` is ambiguous. Use the tensors that "
                                 "those calls returned.")
        raise AttributeError(f"Layer {self.name!r} has not been called yet, so it has no output. "
                             "Call the model (or layer) on data first, inside the tape if you want gradients.")

    @property
    def output_shape(self):
        """The shape of the most recent output with the batch axis as None (for summaries)."""
        if self._output_shape is None:
            if len(self._inbound_nodes) == 1:
                return _symbolic_shapes(self._inbound_nodes[0].outputs)
            raise AttributeError(f"Layer {self.name!r} has not been called yet; its output shape is unknown.")
        return _batchless(self._output_shape)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


_STRUCTURAL = (Layer, Variable)


def _structural(value) -> bool:
    """Does this attribute value hold weights or layers (itself, or as an item of a container)?"""
    if isinstance(value, _STRUCTURAL):
        return True
    return isinstance(value, (list, tuple, dict)) and _holds_weights(value)


def _weight_path(layer_name: str, short: str) -> str:
    """Keras 3's ``variable.path`` of a weight made now: the open scopes, the layer's name (unless the
    innermost scope is the layer's own), then the weight's name. A scope opened again by the same layer
    (a model's build calling the model) counts once, as Keras 3's ``name_scope(caller=...)``."""
    parts: list = []
    for name in state.scope + (layer_name,):
        if not parts or parts[-1] != name:
            parts.append(name)
    parts.append(short)
    return "/".join(parts)


def _regularizer(identifier, layer_name, weight_name):
    if identifier is None or callable(identifier) and not isinstance(identifier, (str, dict)):
        return identifier
    try:
        from .. import regularizers
    except ImportError:
        regularizers = None
    if regularizers is not None and hasattr(regularizers, "get"):
        return regularizers.get(identifier)
    raise TypeError(f"{layer_name}.add_weight({weight_name!r}): regularizer must be a callable "
                    f"f(weight) -> scalar, got {identifier!r}.")


# ---------------------------------------------------------------------------
# Symbolic tensors (the functional API)
# ---------------------------------------------------------------------------












# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


_LEAVES = frozenset({Tensor, Variable, np.ndarray})   # inputs that are one value: converted without flatten()














def positive_int(who: str, what: str, value, minimum: int = 1) -> int:
    """``value`` as an int if it is an integer ≥ ``minimum`` (not a bool, a float or a string), else a
    ``ValueError`` as Keras 3 (``Dense("3")``, ``Dense(2.5)``, ``fit(batch_size=0)`` are mistakes, not sizes)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else "a non-negative integer" if minimum == 0 else \
            f"an integer ≥ {minimum}"
        plain = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        got = repr(value) if plain else f"{value!r} (a {type(value).__name__})"
        example = f"int({value!r})" if isinstance(value, (str, float)) else max(minimum, 8)
        raise ValueError(f"{who}: {what} must be {kind}, got {got}. Pass a whole number, e.g. "
                         f"{who}({what}={example}).")
    return int(value)


def _refuse_structure(layer, given):
    """The TypeError of a one-input layer called on a dict, a list of inputs, a string or None."""
    kind = (f"a {type(given).__name__} of {len(given)} entries" if isinstance(given, (dict, list, tuple))
            else f"a {type(given).__name__} ({given!r:.40})")
    raise TypeError(f"{layer.name} ({type(layer).__name__}): takes one tensor or numpy array, got {kind}. Pass "
                    "the array itself (np.asarray(data, dtype='float32')); for several inputs use a layer that "
                    "takes a list (adv.layers.Concatenate, Add ...) first.")


_dtype_objects: dict = {}


def _dtype_object(name: str) -> np.dtype:
    """``np.dtype(name)``, made once per name: a layer compares each input's dtype with its own on every call."""
    dt = _dtype_objects.get(name)
    if dt is None:
        dt = _dtype_objects[name] = np.dtype(name)
    return dt


def _shapes(obj):
    if type(obj) is Tensor:         # the usual output: no property, no copy
        return obj._value.shape
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


def _holding(variable) -> list:
    """The live layers whose own weights include ``variable`` (for why-None: a tensor computed from it in
    ``build`` and kept as an attribute)."""
    return [layer for layer in list(_LIVE) if any(w is variable for w in layer.__dict__.get("_own_weights", ()))]


_diagnosis_walk.HOLDERS.append(_holding)
