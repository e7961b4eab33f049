"""Taking a model on to Keras 3: :func:`to_keras` and :func:`load_from`.

``to_keras(model)`` builds a real Keras 3 model (TensorFlow backend) that
computes what an autodiff_viz ``Sequential`` or functional ``Model`` computes
(nested models, skip connections, merges and shared layers included), with
the trained weights copied; outputs agree to float64 1e-9 (float32 1e-5).
``load_from(model, keras_model)`` copies the weights back, so a model trained
with Keras' ``fit`` comes home.

Why there is no table of layers here (unlike ``adv.torch.to_module``): this
package's layers use Keras 3's names, arguments, defaults and weight layouts,
so each Keras layer is made from the layer's own ``get_config()`` with
``keras.layers.<ClassName>.from_config``. Every field is then checked, not
trusted: the Keras layer's config must give back each value of ours (and
each Keras field that our layer has as an attribute must agree), and the
weights must pair up one to one by name and shape. What cannot be checked
that way is refused with an :class:`ExportError` naming the layer, its class
and what to do:

* activations are sent by name (``"relu"``); a Python function is refused;
* initializers are sent by name, or left at Keras' default (the weights are
  copied anyway); regularizers and constraints go over when Keras has the
  same class (``L1``, ``L2``, ``L1L2``, ``MaxNorm`` ...) with the same config;
* a layer class of one's own, ``Lambda`` (its function computes with
  autodiff_viz ops) and a subclassed model (its ``call`` is Python code) have
  no Keras twin.

``Bidirectional`` is rebuilt from its two converted halves; an operator used
on symbolic tensors (``x + shortcut``) is applied to Keras' symbolic tensors,
which support the same operators.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import keras
import numpy as np

from ..base.structure import flatten
from ..layers.input_layer import InputLayer
from ..layers.keras_tensor import KerasTensor

if TYPE_CHECKING:
    from ..layers.base import Layer


class ExportError(TypeError):
    """A model or layer that has no Keras 3 counterpart here; the message names it, says why and what to do."""


_INITIALIZER, _REGULARIZER, _CONSTRAINT = "_initializer", "_regularizer", "_constraint"


def _where(layer) -> str:
    return f"layer {layer.name!r} ({type(layer).__name__})"


# ---------------------------------------------------------------------------
# One layer: config -> Keras layer, checked
# ---------------------------------------------------------------------------
def _keras_object(layer, key, value, module, kind):
    """A regularizer or constraint of ours as Keras' object of the same class and config (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    cls = getattr(module, type(value).__name__, None)
    if cls is None or not hasattr(value, "get_config"):
        raise ExportError(f"to_keras: {_where(layer)}: {key}={value!r} has no Keras counterpart (Keras has no "
                          f"{kind} class {type(value).__name__}). Use one of keras.{module.__name__.split('.')[-1]}"
                          f"'s classes, or set {key}=None before exporting.")
    return cls.from_config(value.get_config())


def _translated(layer) -> dict:
    """The layer's ``get_config()`` with every value in a form Keras reads (see the module docstring)."""
    config = dict(layer.get_config())
    for key, value in list(config.items()):
        if key in ("activation", "recurrent_activation"):
            if not isinstance(value, str):
                raise ExportError(f"to_keras: {_where(layer)}: {key} is the Python function {value!r}, which "
                                  "Keras cannot run (it computes with autodiff_viz ops). Use an activation by name "
                                  "(\"relu\", \"tanh\", \"gelu\", ...) or an Activation layer.")
            try:
                keras.activations.get(value)
            except ValueError:
                raise ExportError(f"to_keras: {_where(layer)}: Keras has no activation named {value!r}.") from None
        elif key.endswith(_INITIALIZER):
            if not isinstance(value, str):
                config.pop(key)          # a function of ours: irrelevant, the trained weights are copied over it
        elif key.endswith(_REGULARIZER):
            config[key] = _keras_object(layer, key, value, keras.regularizers, "regularizer")
        elif key.endswith(_CONSTRAINT):
            config[key] = _keras_object(layer, key, value, keras.constraints, "constraint")
    return config


def _plain(value):
    """A config value in a comparable form: tuples as lists, Keras objects as their serialized config."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if hasattr(value, "get_config") and not isinstance(value, type):
        return _plain(keras.saving.serialize_keras_object(value))
    return value


def _same(a, b) -> bool:
    return _plain(a) == _plain(b)


def _check(layer, config: dict, klayer) -> None:
    """Refuse a Keras layer whose config does not give back ours (or disagrees with one of our attributes)."""
    kconfig = klayer.get_config()
    problems = []
    for key, ours in config.items():
        if key.endswith(_INITIALIZER):
            continue
        if key == "dtype":
            theirs = klayer.dtype_policy.name
        elif key in kconfig:
            theirs = kconfig[key]
        elif ours is None or ours is False:
            continue                # an option Keras keeps elsewhere, off in ours (activity_regularizer=None)
        else:
            theirs = getattr(klayer, key, "<missing>")
        if isinstance(ours, int) and not isinstance(ours, bool) and _plain(theirs) == [ours]:
            continue                # Keras keeps a size as a one-entry list (MultiHeadAttention's output_shape)
        if not _same(ours, theirs):
            problems.append(f"{key}: ours {_plain(ours)!r}, Keras {_plain(theirs)!r}")
    for key, theirs in kconfig.items():     # a Keras field our config leaves out: our attribute must agree
        if key in config or not hasattr(layer, key):
            continue
        ours = getattr(layer, key)
        if isinstance(ours, (bool, int, float, str, type(None), tuple, list)) and not _same(ours, theirs):
            problems.append(f"{key}: ours {_plain(ours)!r}, Keras {_plain(theirs)!r}")
    if problems:
        raise ExportError(f"to_keras: {_where(layer)}: the Keras layer made from its config differs: "
                          + "; ".join(problems) + ". Nothing was exported; please report this as a bug of "
                          "autodiff_viz (its layers follow Keras 3's configs).")


def keras_layer(layer: Layer) -> keras.layers.Layer:
    """An unbuilt Keras 3 layer equivalent to ``layer`` (from its config, checked field by field).

    Raises:
        ExportError: the layer has no Keras counterpart (a class of one's own, ``Lambda``, a Python
            activation, a regularizer Keras does not have); the message names it and says what to do.
    """
    from ..layers.recurrent import Bidirectional
    kind = type(layer).__name__
    if isinstance(layer, Bidirectional):
        forward, backward = keras_layer(layer.forward_layer), keras_layer(layer.backward_layer)
        return keras.layers.Bidirectional(forward, merge_mode=layer.merge_mode, backward_layer=backward,
                                          name=layer.name, trainable=layer.trainable, dtype=layer.dtype)
    ours = type(layer).__module__.startswith("autodiff_viz.layers")
    cls = getattr(keras.layers, kind, None) if ours else None
    if cls is None or kind in ("Lambda", "InputLayer"):
        why = ("its function computes with autodiff_viz ops, which Keras cannot run" if kind == "Lambda" else
               f"it is a layer class of your own (defined in {type(layer).__module__})" if not ours else
               "Keras 3 has no layer of that name")
        raise ExportError(f"to_keras: {_where(layer)} has no Keras counterpart: {why}. Write it as a "
                          "keras.layers.Layer (the same build/call with keras.ops) and build the Keras model "
                          "yourself, or replace it with built-in layers before exporting.")
    config = _translated(layer)
    try:
        klayer = cls.from_config(config)
    except (TypeError, ValueError) as error:
        raise ExportError(f"to_keras: {_where(layer)}: keras.layers.{kind}.from_config refused its config "
                          f"{config}: {error}") from error
    _check(layer, config, klayer)
    return klayer


# ---------------------------------------------------------------------------
# Weights, both ways
# ---------------------------------------------------------------------------
def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1].split(":")[0]


def _weight_pairs(layer, klayer) -> list:
    """``[(ours, keras)]`` variable pairs, in order, each checked by short name and shape."""
    ours, theirs = list(layer.weights), list(klayer.weights)
    describe = lambda ws: [f"{_short(w.name)}{tuple(w.shape)}" for w in ws]      # noqa: E731
    if len(ours) != len(theirs) or any(_short(a.name) != _short(b.name) or tuple(a.shape) != tuple(b.shape)
                                       for a, b in zip(ours, theirs)):
        raise ExportError(f"to_keras: {_where(layer)}: its weights {describe(ours)} do not pair with the Keras "
                          f"layer's {describe(theirs)}. Nothing was copied for this layer.")
    return list(zip(ours, theirs))


def _copy_to_keras(layer, klayer) -> None:
    for ours, theirs in _weight_pairs(layer, klayer):
        theirs.assign(np.asarray(ours.numpy(), dtype=theirs.dtype))


def _copy_from_keras(layer, klayer) -> list:
    """The assignments that bring ``klayer``'s weights into ``layer`` (checked first, applied by the caller)."""
    return [(ours, np.asarray(theirs.numpy(), dtype=ours.dtype)) for ours, theirs in _weight_pairs(layer, klayer)]


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------
def _layers(model, what):
    """The layers of a Sequential or functional model (no InputLayer); a subclassed model is refused."""
    from ..models import Functional, Sequential
    if isinstance(model, Sequential):
        return list(model._layers)
    if isinstance(model, Functional):
        return [layer for layer in model._functional_layers if not isinstance(layer, InputLayer)]
    mapped = [f"{child.name} ({type(child).__name__})" for child in model._sublayers()]
    raise ExportError(f"{what}: {model.name} ({type(model).__name__}) is a subclassed model: its call() is "
                      "Python code over autodiff_viz ops, which Keras cannot run, so there is no graph to export. "
                      "Rebuild it as adv.Sequential([...]) or a functional adv.Model(inputs, outputs) of the same "
                      f"layers ({', '.join(mapped) or 'none'}) and export that; the weights carry over with "
                      "model.save_weights / load_weights.")


def _input_dtype(model) -> str:
    first = model._layers[0] if model._layers else None
    if type(first).__name__ == "Embedding":
        return "int32"
    return getattr(first, "dtype", None) or model.dtype


def _sequential(model, convert):
    spec = model._input_spec
    shape = spec.shape if spec is not None else model.__dict__.get("_build_input_shape")
    if shape is None:
        raise ExportError(f"to_keras: {model.name} (Sequential) is not built yet: it has no Input and was never "
                          "called, so its input shape is unknown. Call the model on a batch first, or start it "
                          "with adv.layers.Input(shape).")
    dtype = (spec.dtype if spec is not None and spec.dtype is not None else None) or _input_dtype(model)
    inputs = keras.Input(batch_shape=tuple(shape), dtype=dtype, name=getattr(spec, "name", None))
    return keras.Sequential([inputs, *(convert(layer) for layer in model._layers)], name=model.name,
                            trainable=model.trainable)


def _operation(layer, operands):
    """An operator used on symbolic tensors (``x + shortcut``, ``h[:, 0]``) as a Keras ``Lambda`` of the same
    name: Keras' symbolic tensors take the same operators, and the name keeps Keras from naming it ``add``
    too (a functional Keras model refuses two operations of one name)."""
    where = [i for i, v in enumerate(operands) if isinstance(v, keras.KerasTensor)]
    fixed = list(operands)

    def apply(tensors, fn=layer.fn):
        values = list(fixed)
        for i, t in zip(where, tensors):
            values[i] = t
        return fn(*values)
    tensors = [operands[i] for i in where]
    floating = [t.dtype for t in tensors if "float" in str(t.dtype)]
    # Lambda would cast its inputs to float32 (Keras' default policy); keep the operands' own float type
    return keras.layers.Lambda(apply, name=layer.name, dtype=floating[0] if floating else None)(tensors)


def _builtin(structure):
    """The model's output structure with plain lists, tuples and dicts (Keras refuses the tracked list a
    model attribute becomes)."""
    if isinstance(structure, dict):
        return {k: _builtin(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return (tuple if isinstance(structure, tuple) else list)(_builtin(v) for v in structure)
    return structure


def _functional(model, convert):
    slots = {}
    inputs = []
    for t in model._inputs_flat:
        source = t._keras_history[0].layer if t._keras_history else None
        k = keras.Input(batch_shape=t.shape, dtype=t.dtype, name=getattr(source, "name", None))
        slots[id(t)] = k
        inputs.append(k)
    for node in model._nodes:
        leaves, rebuild = flatten([list(node.args), node.kwargs])
        args, kwargs = rebuild([slots[id(a)] if isinstance(a, KerasTensor) else a for a in leaves])
        layer = node.layer
        if type(layer).__name__ == "Operation":
            out = _operation(layer, args[0])
        else:
            out = convert(layer)(*args, **kwargs)
        for ours, theirs in zip(node.flat_outputs, flatten(out)[0]):
            slots[id(ours)] = theirs
    _, rebuild = flatten(model._output_struct)
    outputs = _builtin(rebuild([slots[id(t)] for t in model._outputs_flat]))
    structure = model._input_struct
    if isinstance(structure, dict):
        inputs = dict(zip(structure.keys(), inputs))
    elif not isinstance(structure, (list, tuple)):
        inputs = inputs[0]
    return keras.Model(inputs=inputs, outputs=outputs, name=model.name, trainable=model.trainable)


def to_keras(model: Layer) -> keras.Model:
    """A Keras 3 model computing what ``model`` computes, with the same (trained) weights, copied.

    Works for ``Sequential`` and functional models, nested ones included, made of layers with a Keras
    twin (Dense, convolutions and their transposes, pooling, reshaping, Dropout, the normalizations,
    Embedding, SimpleRNN/LSTM/GRU, Bidirectional, MultiHeadAttention, merge layers, activations ...).
    Each Keras layer keeps the layer's name, so ``keras_model.get_layer("dense")`` is ``model``'s
    ``dense``. Call it with ``training=False`` (or ``predict``) to compare with ``model.predict``.

        >>> km = adv.tf.to_keras(model)
        >>> np.allclose(km(x, training=False).numpy(), model.predict(x))
        True
        >>> km.compile("adam", "mse"); km.fit(x, y)        # train in Keras ...
        >>> adv.tf.load_from(model, km)                     # ... and bring the weights home

    Raises:
        ExportError: a subclassed model, or a layer without a Keras counterpart (named, with the fix).
    """
    from ..models import Model, Sequential
    if not isinstance(model, Model):
        raise TypeError(f"to_keras: expected an autodiff_viz model (adv.Sequential or adv.Model), got "
                        f"{type(model).__name__}.")
    pairs, made = [], {}

    def convert(layer):
        if id(layer) in made:               # a shared layer (or nested model) is one Keras layer, called again
            return made[id(layer)]
        if not layer.built:
            raise ExportError(f"to_keras: {_where(layer)} in {model.name} is not built yet; call the model on a "
                              "batch first.")
        klayer = to_keras(layer) if isinstance(layer, Model) else keras_layer(layer)
        if not isinstance(layer, Model):
            pairs.append((layer, klayer))
        made[id(layer)] = klayer
        return klayer

    _layers(model, "to_keras")              # a subclassed model: refused before anything is built
    kmodel = _sequential(model, convert) if isinstance(model, Sequential) else _functional(model, convert)
    for layer, klayer in pairs:             # every Keras layer is built now (by the symbolic calls)
        _copy_to_keras(layer, klayer)
    return kmodel


def load_from(model: Layer, keras_model: keras.Model) -> None:
    """Copy the weights of ``keras_model`` (made by :func:`to_keras` from this model, then perhaps trained)
    back into ``model``: kernels, biases, BatchNormalization's moving statistics, recurrent weights.

    Layers are matched by name (``to_keras`` keeps the names). Everything is checked before anything is
    written: on a missing layer or a weight of another shape, nothing is copied.
    """
    from ..models import Model
    if not isinstance(model, Model):
        raise TypeError(f"load_from: expected an autodiff_viz model first, got {type(model).__name__}.")
    if not isinstance(keras_model, keras.Model):
        raise TypeError(f"load_from: the second argument must be a Keras model (from adv.tf.to_keras(model)), "
                        f"got {type(keras_model).__name__}.")
    writes = []
    _plan_load(model, keras_model, writes)
    for variable, value in writes:
        variable.assign(value)


def _plan_load(model, keras_model, writes) -> None:
    from ..models import Model
    names = [layer.name for layer in keras_model.layers]
    for layer in _layers(model, "load_from"):
        if layer.name not in names:
            raise ValueError(f"load_from: {model.name} has {_where(layer)}, but the Keras model "
                             f"{keras_model.name!r} has no layer of that name (its layers: {names}); nothing "
                             "was copied. Use a Keras model made by adv.tf.to_keras(model).")
        klayer = keras_model.get_layer(layer.name)
        if isinstance(layer, Model):
            _plan_load(layer, klayer, writes)
        else:
            writes.extend(_copy_from_keras(layer, klayer))
