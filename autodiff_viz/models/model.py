"""The model classes: ``Model`` (subclassed or functional), ``Sequential`` and ``Functional``.

    >>> model = adv.Sequential([adv.layers.Input((64,)),
    ...                         adv.layers.Dense(32, activation="relu"),
    ...                         adv.layers.Dense(10)])
    >>> x = adv.layers.Input(shape=(8,), name="x")
    >>> y = adv.layers.Dense(1)(adv.layers.Dense(16, activation="relu")(x))
    >>> model = adv.Model(inputs=x, outputs=y)

A model is a layer that holds layers, runs each inside its name scope (so
ops recorded in ``model(x)`` carry paths such as ``my_model/dense_1``), and
has Keras' training API from its mixins (:mod:`.trainer`, :mod:`.compiling`).

Weights files are ``.npz`` archives (never pickle) whose keys are the
weights' paths *inside the model* (``dense/kernel``, ``dense_1/bias`` for a
Sequential or a functional model, numbered by class in the order of the
layers; attribute names such as ``encoder/kernel`` for a subclassed model),
as in Keras 3's weights files. The keys do not depend on the session-wide
layer names, so a model built again in a new session (where its layers may
be ``dense_7``...) loads the file.
"""
from __future__ import annotations

import os

import numpy as np

from ..base.errors import ModelFileError, WeightsFileError
from ..base.files import check_folder
from ..base.naming import INPUT
from ..base.state import paused
from ..base.structure import flatten
from ..core.ops import cast, expand_dims, squeeze
from ..core.tensor import Tensor, constant
from ..keras_base.serialization import (
    _at,
    _build,
    _construct,
    _decode,
    _decode_entry,
    _encode,
    _entered,
    _entry,
    _is_entry,
    _layer_entry,
    serialize_keras_object,
)
from ..layers.base import Layer, _batchless, _calls, _default, _numbered, _touch
from ..layers.input_layer import InputLayer
from ..layers.keras_tensor import InputSpec, KerasTensor, _symbolic_layers, _symbolic_shapes, keras_layer_order
from ..saving import _read_npz, _write_npz, path_of, save_model
from .summary import Summary
from .trainer import Trainer


class Model(Trainer, Summary, Layer):
    """A layer that holds layers, plus ``compile``/``fit``/``evaluate``/``predict``.

    Two ways to make one, as in Keras:

    * functional: ``adv.Model(inputs, outputs)`` with symbolic tensors from
      :func:`adv.layers.Input` and layer calls (see :class:`Functional`);
    * subclassing: create layers in ``__init__`` (after ``super().__init__()``)
      and use them in ``call``:

        >>> class MLP(adv.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.hidden = adv.layers.Dense(32, activation="relu")
        ...         self.out = adv.layers.Dense(10)
        ...     def call(self, x):
        ...         return self.out(self.hidden(x))

    A subclass may also be called with symbolic inputs and outputs, as in
    Keras 3: ``CustomModel(inputs, outputs)`` is a functional model that has
    the subclass's methods (a ``train_step`` of its own, say; see
    :meth:`train_step`).
    """

    _autocast = False
    _keras_kind = "model"   # how autodiff_viz.keras_base.serialization writes it
    _config_is_complete = False

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(Functional)
        if not issubclass(cls, (Functional, Sequential)) and _functional_arguments(args, kwargs):
            return super().__new__(_functional_subclass(cls))
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise TypeError(f"{type(self).__name__}: inputs and outputs go to adv.Model(inputs, outputs) itself "
                            "(the functional API), or to a subclass as MyModel(inputs, outputs), both symbolic "
                            "tensors (from adv.layers.Input and layer calls); otherwise a subclass of adv.Model "
                            "makes its layers in __init__ and uses them in call().")
        super().__init__(**kwargs)
        self.optimizer = None
        self.loss = None
        self.loss_weights = None
        self._metric_specs = []
        self._weighted_specs = []
        self._loss_tracker = None
        self._compile_metrics = None
        self._loss_metrics = []
        self.run_eagerly = False          # Keras 3's; every step here is eager whatever it says
        self.jit_compile = False
        self.stop_training = False
        self.stop_evaluating = False
        self.stop_predicting = False
        self.history = None

    # ----- structure --------------------------------------------------------
    @_default
    def build(self, input_shape):
        """Create every weight by running one batch of zeros through the model (``None`` → 1)."""
        shape = tuple(None if s is None else int(s) for s in input_shape)
        self.__dict__.setdefault("_build_input_shape", (None, *shape[1:]))
        run_build_batch(self, [shape])
        if None in shape[1:]:       # an axis of any size (a sequence's steps): find the output axes that follow it
            layers = [self, *self._all_layers()]
            ones = [layer._output_shape for layer in layers]
            run_build_batch(self, [tuple(2 if n is None else n for n in shape)])
            for layer, one in zip(layers, ones):
                layer._output_shape = _unknown_where_different(one, layer._output_shape)

    def get_build_config(self):
        """``{"input_shape": ...}`` of the first call, when the model was built by one (Keras 3): a loaded copy
        is built from it. None for a model whose config already says how to build it."""
        shape = self.__dict__.get("_build_input_shape")
        if self._config_is_complete or not self.built or shape is None:
            return None
        return {"input_shape": shape}

    def build_from_config(self, config) -> None:
        """Build from :meth:`get_build_config`'s dict (``input_shape``: a shape, or a list of shapes, one per
        input), by running one batch of zeros of that shape through the model."""
        run_build_batch(self, config["input_shape"])

    def _maybe_build(self, input_shape) -> None:
        """Build on the first call, recording the input shape (batch axis None): ``model.save`` keeps it so
        that a loaded Sequential or subclassed model can be built again (Keras 3's ``build_config``)."""
        self.__dict__.setdefault("_build_input_shape", _batchless(input_shape))
        super()._maybe_build(input_shape)

    def _all_layers(self):
        return list(self._sublayers())

    def get_layer(self, name=None, index=None) -> Layer:
        """The layer called ``name`` (looked for among direct children first, then deeper), or at ``index``."""
        if index is not None:
            layers = self.layers
            if not -len(layers) <= index < len(layers):
                raise IndexError(f"get_layer: index {index} is out of range; {self.name} has {len(layers)} layers.")
            return layers[index]
        if name is None:
            raise ValueError("get_layer: give a name (e.g. 'dense_1') or an index.")
        for layer in [*self.layers, *self._all_layers()]:
            if layer.name == name:
                return layer
        raise ValueError(f"No layer named {name!r} in {self.name}. Its layers are: "
                         f"{[layer.name for layer in self._all_layers()]}.")

    # ----- weights on disk ------------------------------------------------------
    def _weight_paths(self) -> dict:
        """``{path inside the model: variable}``: ``dense/kernel``, ``encoder/dense/bias``..."""
        out, seen = {}, set()

        def walk(layer, prefix):
            counts: dict = {}
            for v in layer._own_variables():
                if id(v) in seen:
                    continue
                seen.add(id(v))
                base = (v.name or "variable").rsplit("/", 1)[-1]
                n = counts.get(base, 0)
                counts[base] = n + 1
                out[prefix + (base if n == 0 else f"{base}_{n}")] = v
            for path, child in layer._children():
                walk(child, prefix + path + "/")
        walk(self, "")
        return out

    def _weights_or_error(self, what) -> dict:
        paths = self._weight_paths()
        unbuilt = [layer.name for layer in self._all_layers() if not layer.built]
        if not paths or unbuilt:
            raise ValueError(f"{what}: {self.name} is not built yet (no weights for {unbuilt or 'any layer'}). "
                             "Call it on a batch first (model(x[:1])) or model.build(input_shape).")
        return paths

    @staticmethod
    def _check_path(filepath, what):
        path = path_of(filepath, what, ".npz")
        if not path.endswith(".npz"):
            raise ValueError(f"{what}: the file name must end in '.npz' (e.g. 'model.weights.npz'), got {path!r}.")
        return path

    def save_weights(self, filepath, overwrite=True) -> None:
        """Write every weight (trainable and not, e.g. moving statistics) to an ``.npz`` file,
        keyed by its path inside the model."""
        path = self._check_path(filepath, "save_weights")
        check_folder("save_weights", path)
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"save_weights: {path} exists; pass overwrite=True to replace it.")
        paths = self._weights_or_error("save_weights")
        _write_npz(path, {k: v._value for k, v in paths.items()})

    def load_weights(self, filepath) -> None:
        """Read weights saved by ``save_weights``; on any problem nothing changes.

        Every weight of the model must be in the file with the same shape,
        and the file must hold no other weights; the error
        (:class:`~autodiff_viz.base.errors.WeightsFileError`, a ``ValueError``)
        names the file and lists every problem at once. A missing file is a
        ``FileNotFoundError``; a file that is not an ``.npz`` archive, or
        that holds pickled objects or non-numeric arrays, is refused.
        Values are cast to each weight's dtype.
        """
        path = self._check_path(filepath, "load_weights")
        paths = self._weights_or_error("load_weights")
        stored = _read_npz(path)
        self._check_weights(paths, stored, path, "load_weights")
        for k, v in paths.items():
            v.assign(stored[k])

    def _check_weights(self, paths, stored, source, what) -> None:
        """Refuse ``stored`` (``{path: array}`` read from ``source``) unless it holds exactly the weights
        ``paths`` of this model, with their shapes and numeric values: a WeightsFileError that lists every
        problem."""
        problems = [f"missing from the file: {k} {v.shape}" for k, v in paths.items() if k not in stored]
        problems += [f"in the file but not in the model: {k} {stored[k].shape}" for k in stored if k not in paths]
        problems += [f"{k}: the model has shape {v.shape}, the file {stored[k].shape}"
                     for k, v in paths.items() if k in stored and stored[k].shape != v.shape]
        problems += [f"{k}: the file holds {stored[k].dtype} values, not numbers" for k in paths
                     if k in stored and stored[k].dtype.kind not in "fiub"]
        if problems:
            raise WeightsFileError(f"{what}: {source} does not match {self.name}; nothing was loaded.\n  - "
                                   + "\n  - ".join(problems))

    # ----- the whole model on disk and as data (adv.saving does the work) ---------------
    def save(self, filepath, overwrite=True) -> None:
        """Write the whole model to a ``.keras`` file, as Keras 3: its architecture (``get_config``), every
        weight, and when compiled the optimizer, loss and metrics with the optimizer's state, so that
        ``adv.models.load_model(filepath)`` gives a model that predicts the same and trains on from here.

        The file is a zip archive of JSON and ``.npz`` (never pickle), written to a temporary file first
        and then renamed, so a save that fails leaves an earlier file as it was. See :mod:`autodiff_viz.saving`.
        """
        save_model(self, filepath, overwrite=overwrite)

    def to_json(self, **kwargs) -> str:
        """The architecture as a JSON string (no weights, no compile state), as Keras:
        ``adv.models.model_from_json(json_string)`` builds it again with fresh weights. ``kwargs`` go to
        ``json.dumps`` (``indent=2``)."""
        import json

        return json.dumps(serialize_keras_object(self), **kwargs)

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        """A new model from :meth:`get_config`'s dict (``adv.Model.from_config`` for a functional model,
        ``adv.Sequential.from_config`` for a Sequential; a subclass's own from its ``get_config``), as
        Keras 3. Weights are not part of the config: the model gets fresh ones. ``custom_objects`` names
        your own classes and functions (see :func:`adv.saving.load_model`)."""
        return model_from_config(cls, config, custom_objects=custom_objects, safe_mode=safe_mode)


class Sequential(Model):
    """A stack of layers, each feeding the next, as ``keras.Sequential``.

        >>> model = adv.Sequential([adv.layers.Input((4,)), adv.layers.Dense(8, activation="relu"),
        ...                         adv.layers.Dense(1)])
        >>> [(w.name, w.path) for w in model.weights][:2]      # Keras 3's: the model built them
        [('kernel', 'sequential/dense/kernel'), ('bias', 'sequential/dense/bias')]

    With an ``Input`` first (or ``input_shape=`` on the first layer) the
    model is built at once; otherwise on its first call.
    """

    _config_is_complete = True   # get_config() lists every layer: no build_config needed

    def __init__(self, layers=None, trainable=True, name=None, dtype=None):
        super().__init__(trainable=trainable, name=name, dtype=dtype)
        self._layers = []
        self._input_spec = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer) -> None:
        """Append a layer (or an ``Input`` as the very first entry)."""
        spec = _input_spec(layer)
        if spec is not None:
            if self._layers:
                raise ValueError(f"{self.name}: Input must come first, before any layer.")
            self._input_spec = spec
            return
        if isinstance(layer, KerasTensor):
            raise TypeError(f"{self.name}.add: {layer.name} is the output of a layer call; a Sequential takes "
                            "layers (and an Input first). For graphs, use adv.Model(inputs, outputs).")
        if not isinstance(layer, Layer):
            raise TypeError(f"{self.name}.add: expected a layer, got {type(layer).__name__}.")
        if not self._layers and self._input_spec is None and layer._input_shape_arg is not None:
            self._input_spec = InputSpec(layer._input_shape_arg)
        self._layers.append(layer)
        _touch()
        if self._input_spec is not None:
            self.build(self._input_spec.shape)

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._layers:
            raise IndexError(f"{self.name}.pop: there are no layers to remove.")
        _touch()
        return self._layers.pop()

    def _children(self):
        return _numbered("", self._layers)

    def get_config(self) -> dict:
        """Keras 3's Sequential config: ``name``, ``trainable``, ``dtype``, ``layers`` (an ``InputLayer``
        first when the model has an Input, then each layer as ``{"module", "class_name", "config",
        "registered_name"}``) and, for a model built by a call, ``build_input_shape``."""
        return sequential_config(self)

    def _x(self, data, what="x"):
        out = self._data(data, what)
        if isinstance(out, (list, dict)):
            raise TypeError(f"{what}: several input arrays are for a model with several inputs "
                            "(adv.Model(inputs=[a, b], outputs=...)); a Sequential takes one array.")
        return out

    def _convert(self, x):
        """A tensor of the declared input's dtype and rank (see :func:`_adjust_rank`), when there is one."""
        spec = self._input_spec
        dtype = getattr(spec, "dtype", None)
        if dtype is not None and not isinstance(x, KerasTensor):
            if isinstance(x, Tensor):
                x = cast(x, dtype) if x.dtype != dtype else x
            else:
                x = constant(self._array(x), dtype=dtype, name=INPUT)     # drawn as the model's input
        else:
            x = super()._convert(x)
        return x if spec is None else _adjust_rank(x, spec.shape, self.name, spec.name or "input")

    def call(self, inputs, training=None):
        x = inputs
        if training is None:    # no mode given: each layer reads the call context, which is None here too
            for layer in self._layers:
                x = layer(x)
            return x
        for layer in self._layers:
            x = layer(x, training=training)     # a layer whose call has no training passes it to its own layers
        return x


def _input_spec(entry):
    """An :class:`InputSpec` for an ``Input(...)`` (or ``InputLayer``/``InputSpec``) given to a Sequential."""
    if isinstance(entry, InputSpec):
        return entry
    if isinstance(entry, KerasTensor) and entry._keras_history is not None:
        entry = entry._keras_history[0].layer
    if isinstance(entry, InputLayer):
        spec = InputSpec(entry.batch_shape[1:], entry.dtype if entry._explicit_dtype else None, entry.name)
        spec.shape = entry.batch_shape
        return spec
    return None


class Functional(Model):
    """A model made of layer calls on symbolic tensors: ``adv.Model(inputs, outputs)``.

        >>> a = adv.layers.Input(shape=(3,), name="a")
        >>> b = adv.layers.Input(shape=(2,), name="b")
        >>> shared = adv.layers.Dense(4, activation="tanh")
        >>> h = adv.layers.Concatenate()([shared(a), adv.layers.Dense(4)(b)])
        >>> model = adv.Model(inputs=[a, b], outputs=[adv.layers.Dense(1)(h), h], name="two_heads")
        >>> y, features = model([np.ones((5, 3)), np.ones((5, 2))])

    Calling the model runs every recorded layer call once, in the order they
    were made (a topological order), on real values: inside a tape each op
    is recorded under ``model_name/layer_name``, and
    ``model.get_layer(name).output`` is the real output of that call — a
    gradient source (``tape.gradient(loss, model.get_layer("dense").output)``).
    ``training=`` goes to every layer whose ``call`` takes it, unless the
    graph fixed it (``Dropout(0.5)(x, training=True)``).

    Args:
        inputs: a symbolic tensor from :func:`adv.layers.Input`, or a list
            (dict) of them; the model is then called with an array, or a
            list (dict with the same keys, or keyed by input name) of arrays.
        outputs: a symbolic tensor, or a list (dict) of them; the model
            returns the same structure.
        name: the model's name (default ``functional``, ``functional_1``...).
    """

    _config_is_complete = True   # get_config() lists every layer: no build_config needed

    def __init__(self, inputs, outputs, name=None, trainable=True, dtype=None):
        super().__init__(name=name, trainable=trainable, dtype=dtype)
        in_leaves, _ = flatten(inputs)
        for i, t in enumerate(in_leaves):
            if not isinstance(t, KerasTensor):
                raise TypeError(f"{self.name}: inputs must be symbolic tensors from adv.layers.Input(shape), got "
                                f"{type(t).__name__} at position {i}.")
        if len({id(t) for t in in_leaves}) != len(in_leaves):
            raise ValueError(f"{self.name}: the same input is listed twice in inputs.")
        out_leaves, out_rebuild = flatten(outputs)
        if not out_leaves:
            raise ValueError(f"{self.name}: outputs is empty; give the tensor(s) the model computes.")
        out_leaves = [_as_symbolic(t, self.name, i) for i, t in enumerate(out_leaves)]
        self._input_struct = inputs if isinstance(inputs, (list, tuple, dict)) else in_leaves[0]
        self._inputs_flat = in_leaves
        self._outputs_flat = out_leaves
        self._output_struct = out_rebuild(out_leaves)
        self._nodes = self._walk(in_leaves, out_leaves)
        keys = list(outputs) if isinstance(outputs, dict) and len(outputs) == len(out_leaves) else None
        walk = [out_leaves[keys.index(k)] for k in sorted(keys)] if keys else out_leaves    # Keras: keys sorted
        order = keras_layer_order(in_leaves, walk)              # Keras' order: by depth, deepest first
        unused = [t._keras_history[0].layer for t in in_leaves if not t._keras_history[0].inputs]  # Inputs too
        self._functional_layers = [*(lay for lay in unused if all(lay is not o for o in order)), *order]
        self.built = True
        _symbolic_layers.add(self)
        _touch()

    def _walk(self, inputs, outputs):
        """The nodes between ``inputs`` and ``outputs``, in creation (topological) order; an output that
        does not come from the inputs is an error that names it and the input it needs."""
        known = {id(t) for t in inputs}
        nodes, seen = [], set()
        for out in outputs:
            stack = [(out, [out.name])]
            while stack:
                t, path = stack.pop()
                if id(t) in known:
                    continue
                node = t._keras_history[0] if t._keras_history else None
                if node is None or not node.inputs:
                    given = [i.name for i in inputs]
                    via = " <- ".join(path)
                    raise ValueError(f"{self.name}: output {out.name!r} (shape {out.shape}) is not connected to "
                                     f"the inputs {given}: it depends on {t.name!r} (shape {t.shape}), which is "
                                     f"not among them (path: {via}). Add {t.name!r} to inputs, or compute the "
                                     "output from the given inputs.")
                if id(node) not in seen:
                    seen.add(id(node))
                    nodes.append(node)
                stack.extend((i, path + [i.name]) for i in node.inputs)
                known.add(id(t))
        return sorted(nodes, key=lambda n: n.order)

    # ----- structure ------------------------------------------------------------
    @property
    def layers(self) -> list:
        """Every layer of the graph in topological order, the ``InputLayer`` s first (as Keras 3)."""
        return list(self._functional_layers)

    def _children(self):
        return _numbered("", [layer for layer in self._functional_layers if not isinstance(layer, InputLayer)])

    def get_config(self) -> dict:
        """Keras 3's functional config: ``name``, ``trainable``, ``layers`` in the order of
        :attr:`layers`, each with ``inbound_nodes`` (for every call of the layer in this graph, its
        arguments with each tensor written ``[layer name, call index, output index]``), and
        ``input_layers`` / ``output_layers`` in the structure of the model's inputs and outputs."""
        return functional_config(self)

    @property
    def inputs(self) -> list:
        """The symbolic input tensors, in order."""
        return list(self._inputs_flat)

    @property
    def outputs(self) -> list:
        """The symbolic output tensors, in order."""
        return list(self._outputs_flat)

    @property
    def input(self):
        """The symbolic inputs, in the structure given to ``adv.Model``."""
        return self._input_struct

    @property
    def input_names(self) -> list:
        return [t.name for t in self._inputs_flat]

    @property
    def output_names(self) -> list:
        return [t.name for t in self._outputs_flat]

    def _output_names(self):
        return self.output_names

    def _known_output_labels(self):
        struct = self._output_struct
        if not isinstance(struct, (list, tuple, dict)) or len(struct) == 1:
            return [None]
        return self._output_labels(list(struct) if isinstance(struct, dict) else list(range(len(struct))))

    def _x(self, data, what="x"):
        return self._data(data, what, several=len(self._inputs_flat) > 1)

    def _y(self, data, what="y"):
        return self._data(data, what, several=len(self._outputs_flat) > 1)

    @property
    def output(self):
        """The real output of the most recent call (a gradient source), or before any call the
        symbolic outputs (``model.output`` to build a bigger model)."""
        if self._output is not None:
            return self._output
        return self._output_struct

    @property
    def output_shape(self):
        return _symbolic_shapes(self._output_struct)

    def build(self, input_shape=None):
        """A functional model is built when it is made; nothing to do."""

    # ----- calling ----------------------------------------------------------------
    def _convert_inputs(self, inputs):
        leaves = self._match_inputs(inputs)
        converted = []
        for t, x in zip(self._inputs_flat, leaves):
            layer = t._keras_history[0].layer if t._keras_history else None
            x = layer._convert(x) if isinstance(layer, InputLayer) else Layer._convert(self, x)
            x = _adjust_rank(x, t.shape, self.name, t.name)
            bad = [i for i, (want, got) in enumerate(zip(t.shape, getattr(x, "shape", ())))
                   if want is not None and want != got]
            if bad:
                raise ValueError(f"{self.name}: input {t.name!r} expects shape {t.shape}, got {x.shape} "
                                 f"(axis {bad[0]} differs).")
            converted.append(x)
        return converted

    def _match_inputs(self, inputs):
        """The user's inputs as a flat list in the order of ``self.inputs``."""
        want = self._inputs_flat
        names = [t.name for t in want]
        if isinstance(inputs, dict):
            keys = list(self._input_struct) if isinstance(self._input_struct, dict) else names
            missing = [k for k in keys if k not in inputs]
            if missing:
                raise ValueError(f"{self.name}: the inputs dict lacks {missing}; the model's inputs are {keys}.")
            return [inputs[k] for k in keys]
        if len(want) == 1:
            if isinstance(inputs, (list, tuple)) and len(inputs) == 1 and \
                    isinstance(inputs[0], (np.ndarray, Tensor)):
                return [inputs[0]]
            return [inputs]
        if not isinstance(inputs, (list, tuple)) or len(inputs) != len(want):
            got = f"{len(inputs)} arrays" if isinstance(inputs, (list, tuple)) else f"one {type(inputs).__name__}"
            raise ValueError(f"{self.name} has {len(want)} inputs {names}; call it with a list of {len(want)} "
                             f"arrays (or a dict keyed by those names), got {got}.")
        return list(inputs)

    def call(self, inputs, training=None):
        values = {}
        for t, x in zip(self._inputs_flat, inputs):
            values[id(t)] = x
            layer = t._keras_history[0].layer if t._keras_history else None
            if isinstance(layer, InputLayer):
                layer._output = x
        for node in self._nodes:
            leaves, rebuild = flatten([list(node.args), node.kwargs])
            args, kwargs = rebuild([values[id(a)] if isinstance(a, KerasTensor) else a for a in leaves])
            if "training" not in kwargs:        # a value the graph fixed at this call stays
                kwargs["training"] = training
            out = node.layer(*args, **kwargs)
            got = flatten(out)[0]
            if len(got) != len(node.flat_outputs):
                raise ValueError(f"{self.name}: layer {node.layer.name!r} returned {len(got)} tensors here but "
                                 f"{len(node.flat_outputs)} when the model was built.")
            for t, v in zip(node.flat_outputs, got):
                values[id(t)] = v
        _, rebuild = flatten(self._output_struct)
        return rebuild([values[id(t)] for t in self._outputs_flat])

    # ----- summary ------------------------------------------------------------------
    @property
    def _summary_head(self):   # Keras leaves out "Connected to" for one chain (each row feeds the next)
        return ("Layer (type)", "Output Shape", "Param #") + (() if self._one_chain() else ("Connected to",))

    def _one_chain(self) -> bool:
        """One input, each layer called once, on the output of the layer before (a Sequential's graph)."""
        before = [self._inputs_flat, *(n.flat_outputs for n in self._nodes)]
        return len(self._inputs_flat) == 1 and len({id(n.layer) for n in self._nodes}) == len(self._nodes) and all(
            len(n.inputs) == 1 and any(n.inputs[0] is t for t in prev) for n, prev in zip(self._nodes, before))

    def _summary_rows(self):
        mine = {id(node) for node in self._nodes}
        rows = []
        for layer in self._functional_layers:
            nodes = layer._inbound_nodes[:1] if isinstance(layer, InputLayer) else \
                [n for n in layer._inbound_nodes if id(n) in mine]
            shapes = {str(_symbolic_shapes(n.outputs)) for n in nodes}
            shape = shapes.pop() if len(shapes) == 1 else "multiple"
            sources = [f"{t._keras_history[0].layer.name}[{t._keras_history[0].index}][{t._keras_history[1]}]"
                       for n in nodes for t in n.inputs]
            params = f"{layer.count_params():,}"
            rows.append((f"{layer.name} ({type(layer).__name__})", shape, params, ", ".join(sources) or "-"))
        return [row[:3] for row in rows] if self._one_chain() else rows


def _as_symbolic(t, model_name, i):
    """An output given as a symbolic tensor, or as the real ``output`` of a layer (or functional model)
    that was called in a functional graph (``adv.Model(m.input, m.get_layer("h").output)`` after a call)."""
    if isinstance(t, KerasTensor):
        return t
    if isinstance(t, Tensor):
        for layer in list(_symbolic_layers):
            if layer._output is None:
                continue
            real = flatten(layer._output)[0]
            hit = next((k for k, r in enumerate(real) if r is t), None)
            if hit is None:
                continue
            if isinstance(layer, Functional):
                return layer._outputs_flat[hit]
            if len(layer._inbound_nodes) == 1:
                return layer._inbound_nodes[0].flat_outputs[hit]
            raise ValueError(f"{model_name}: output {i} is the output of layer {layer.name!r}, which is called at "
                             f"{len(layer._inbound_nodes)} places of the graph; pass the symbolic tensor of the "
                             "call you mean.")
    raise TypeError(f"{model_name}: outputs must be symbolic tensors made by calling layers on "
                    f"adv.layers.Input(...), got {type(t).__name__} at position {i}.")


def _adjust_rank(x, shape, model_name, input_name):
    """``x`` with the rank of a declared input ``shape`` (batch axis included), as Keras 3's
    ``Functional._adjust_input_rank``: a missing trailing axis of size 1 is added (samples given as a
    vector of shape ``(6,)`` for ``Input((1,))`` become ``(6, 1)``), an extra trailing axis of size 1 is
    dropped; any other rank is an error. Both are ops, so gradients flow through to ``x``."""
    if not isinstance(x, Tensor) or x.ndim == len(shape):
        return x
    if x.ndim == len(shape) - 1 and shape[-1] == 1:
        return expand_dims(x, -1)
    if x.ndim == len(shape) + 1 and x.shape[-1] == 1:
        return squeeze(x, -1)
    example = f" (e.g. x.reshape(-1, {', '.join(map(str, shape[1:]))}))" if None not in shape[1:] else ""
    raise ValueError(f"{model_name}: input {input_name!r} expects shape {shape} (rank {len(shape)}), got an array "
                     f"of shape {x.shape}. Give one row per sample with the input's shape after the first axis"
                     f"{example}, or change the model's Input.")


def _unknown_where_different(a, b):
    """Shapes ``a`` and ``b`` (or nested lists/tuples of them) with ``None`` wherever they differ."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(isinstance(n, (int, type(None))) for n in a + b):
        return tuple(n if n == m else None for n, m in zip(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return type(a)(_unknown_where_different(x, y) for x, y in zip(a, b))
    return a if a == b else None


def run_build_batch(model, shapes: list) -> None:
    """Build ``model`` by running one batch of zeros of each of ``shapes`` through it (``None`` → 1).

    Nothing is recorded, the call is marked as a build batch (zeros are not data: a layer's warnings
    about the data do not apply), and the layers forget the outputs it made.
    """
    batch = [np.zeros(tuple(1 if n is None else n for n in shape), dtype=model.dtype) for shape in shapes]
    outer, _calls.building = _calls.building, True
    try:
        with paused():
            model(batch if len(batch) > 1 else batch[0])
    finally:
        _calls.building = outer
    for layer in [model, *model._all_layers()]:
        layer._output = None


def _functional_arguments(args, kwargs) -> bool:
    """Whether a Model subclass is called as ``MyModel(inputs, outputs)`` with symbolic tensors."""
    inputs = args[0] if args else kwargs.get("inputs")
    outputs = args[1] if len(args) > 1 else kwargs.get("outputs")
    if inputs is None or outputs is None:
        return False
    leaves = flatten(inputs)[0]
    return bool(leaves) and all(isinstance(t, KerasTensor) for t in leaves)


_FUNCTIONAL_SUBCLASSES: dict = {}


def _functional_subclass(cls):
    """``cls`` with :class:`Functional` mixed in (made once per class), as Keras 3 does when a subclass of
    ``Model`` is called with inputs and outputs: the instance is a functional model with the subclass's
    methods. The subclass's ``__init__``, if any, calls ``super().__init__(inputs, outputs)``, which is
    then ``Functional.__init__``."""
    made = _FUNCTIONAL_SUBCLASSES.get(cls)
    if made is None:
        made = type(cls.__name__, (cls, Functional), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                                      "_written_as": cls})
        _FUNCTIONAL_SUBCLASSES[cls] = made
    return made


# ---------------------------------------------------------------------------
# Sequential and functional configs
# ---------------------------------------------------------------------------
def sequential_config(model) -> dict:
    """What ``Sequential.get_config()`` returns (see :meth:`autodiff_viz.Sequential.get_config`)."""
    where = f"model {model.name!r}"
    entries = []
    spec = model._input_spec
    if spec is not None:
        entries.append(_entry(InputLayer, {
            "batch_shape": list(spec.shape), "dtype": None if spec.dtype is None else np.dtype(spec.dtype).name,
            "name": spec.name}))
    entries += [_layer_entry(layer, f"{where} > layer {layer.name!r}") for layer in model._layers]
    config = {"name": model.name, "trainable": model.trainable, "dtype": model.dtype, "layers": entries}
    shape = model.__dict__.get("_build_input_shape")
    if spec is None and model.built and shape is not None:
        config["build_input_shape"] = _encode(shape, where)
    return config


def functional_config(model) -> dict:
    """What a functional model's ``get_config()`` returns (see :meth:`autodiff_viz.models.Functional.get_config`)."""
    where = f"model {model.name!r}"
    mine = {id(n) for n in model._nodes}
    index, calls, named = {}, {}, {}
    for layer in model._functional_layers:
        other = named.setdefault(layer.name, layer)
        if other is not layer:
            raise ValueError(f"{_at(where)}: two layers are named {layer.name!r} ({type(other).__name__} and "
                             f"{type(layer).__name__}); a saved graph names each layer once. Give them distinct "
                             "names (name=...) when you make them.")
        nodes = layer._inbound_nodes[:1] if isinstance(layer, InputLayer) else \
            [n for n in layer._inbound_nodes if id(n) in mine]
        calls[id(layer)] = nodes
        for i, node in enumerate(nodes):
            index[id(node)] = i

    def reference(t):
        node, i = t._keras_history
        return [node.layer.name, index[id(node)], i]

    def arguments(obj, at):
        if isinstance(obj, KerasTensor):
            return {"class_name": "__keras_tensor__", "config": {"shape": list(obj.shape), "dtype": obj.dtype,
                                                                 "keras_history": reference(obj)}}
        if isinstance(obj, list):
            return [arguments(o, at) for o in obj]
        if isinstance(obj, tuple):
            return {"class_name": "__tuple__", "config": {"value": [arguments(o, at) for o in obj]}}
        if isinstance(obj, dict):
            return {k: arguments(v, at) for k, v in obj.items()}
        return _encode(obj, at, tuples=True)

    def structure(obj):
        if isinstance(obj, KerasTensor):
            return reference(obj)
        if isinstance(obj, dict):
            return {k: structure(v) for k, v in obj.items()}
        return [structure(o) for o in obj]

    for t in model._inputs_flat:
        layer = t._keras_history[0].layer if t._keras_history else None
        if not isinstance(layer, InputLayer):
            raise ValueError(f"{_at(where)}: input {t.name!r} is not made by adv.layers.Input, so the graph cannot "
                             "be written from its inputs. Make the model's inputs with adv.layers.Input(shape).")
    entries = []
    for layer in model._functional_layers:
        at = f"{where} > layer {layer.name!r}"
        entry = _layer_entry(layer, at)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [] if isinstance(layer, InputLayer) else [
            {"args": arguments(list(node.args), at), "kwargs": arguments(dict(node.kwargs), at)}
            for node in calls[id(layer)]]
        entries.append(entry)
    return {"name": model.name, "trainable": model.trainable, "dtype": model.dtype, "layers": entries,
            "input_layers": structure(model._input_struct), "output_layers": structure(model._output_struct)}


class _NotReady(Exception):
    """A graph call whose input tensors are not all made yet."""


def _is_reference(data) -> bool:
    return (isinstance(data, list) and len(data) == 3 and isinstance(data[0], str)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in data[1:]))


def _functional_from_config(cls, config, where):
    entries = config.get("layers")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ModelFileError(f"{_at(where)}: 'layers' must be a list of layer entries.")
    created, pending, order, made = {}, {}, [], {}
    for entry in entries:
        name = entry.get("name") or (entry.get("config") or {}).get("name")
        if not isinstance(name, str) or name in created:
            raise ModelFileError(f"{_at(where)}: each layer entry needs a name of its own, got {name!r}.")
        layer = _decode_entry(entry, f"{where} > layer {name!r}")
        if not isinstance(layer, Layer):
            raise ModelFileError(f"{_at(where)}: the entry of {name!r} is a {type(layer).__name__}, not a layer.")
        created[name], pending[name] = layer, list(entry.get("inbound_nodes") or [])
        order.append(name)
        if isinstance(layer, InputLayer):
            made[(name, 0)] = [layer._tensor]

    def tensor(ref, at):
        if not _is_reference(ref):
            raise ModelFileError(f"{_at(at)}: a tensor must be written [layer name, call, output], got {ref!r}.")
        name, call, i = ref
        if name not in created:
            raise ModelFileError(f"{_at(at)}: it reads a tensor of layer {name!r}, which the config does not have.")
        if (name, call) not in made:
            raise _NotReady(ref)
        outputs = made[(name, call)]
        if not 0 <= i < len(outputs):
            raise ModelFileError(f"{_at(at)}: it reads output {i} of layer {name!r}, which has {len(outputs)}.")
        return outputs[i]

    def arguments(data, at):
        if isinstance(data, list):
            return [arguments(d, at) for d in data]
        if isinstance(data, dict):
            if data.get("class_name") == "__keras_tensor__":
                return tensor((data.get("config") or {}).get("keras_history"), at)
            if data.get("class_name") == "__tuple__" and isinstance(data.get("config"), dict):
                return tuple(arguments(data["config"].get("value", []), at))
            if _is_entry(data):
                return _decode_entry(data, at)
            return {k: arguments(v, at) for k, v in data.items()}
        return data

    calls_done = dict.fromkeys(order, 0)
    while any(pending.values()):
        progressed = False
        for name in order:
            layer, queue = created[name], pending[name]
            while queue:
                at = f"{where} > layer {name!r} (call {calls_done[name]})"
                node = queue[0]
                if not isinstance(node, dict):
                    raise ModelFileError(f"{_at(at)}: an inbound node must be {{\"args\": [...], \"kwargs\": "
                                         f"{{...}}}}, got {node!r:.80}.")
                try:
                    args = arguments(node.get("args", []), at)
                    kwargs = arguments(node.get("kwargs", {}), at)
                except _NotReady:
                    break
                outputs = layer(*args, **kwargs)
                made[(name, calls_done[name])] = flatten(outputs)[0]
                calls_done[name] += 1
                queue.pop(0)
                progressed = True
        if not progressed:
            stuck = next(n for n in order if pending[n])
            raise ModelFileError(f"{_at(where)}: the graph cannot be rebuilt: call {calls_done[stuck]} of layer "
                                 f"{stuck!r} reads tensors that no call of the config makes. The config is "
                                 "damaged or was edited by hand.")

    def structure(data, at):
        if _is_reference(data):
            return tensor(data, at)
        if isinstance(data, dict):
            return {k: structure(v, at) for k, v in data.items()}
        if isinstance(data, list):
            return [structure(d, at) for d in data]
        raise ModelFileError(f"{_at(at)}: must be a tensor [layer name, call, output] or a list or dict of them, "
                             f"got {data!r:.80}.")

    try:
        inputs = structure(config.get("input_layers"), f"{where} input_layers")
        outputs = structure(config.get("output_layers"), f"{where} output_layers")
    except _NotReady as exc:
        raise ModelFileError(f"{_at(where)}: the model's inputs or outputs name {exc.args[0]}, which no call of the "
                             "config makes.") from None
    kwargs = {k: config[k] for k in ("name", "trainable", "dtype") if config.get(k) is not None}
    model_cls = Functional if cls is Model else cls
    try:
        model = model_cls(inputs=inputs, outputs=outputs, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{_at(where)}: {cls.__name__}(inputs, outputs, name=...) failed: {exc}. A Model subclass "
                        "saved as a functional model must take inputs, outputs and **kwargs in __init__ (and pass "
                        "them to super().__init__), or define from_config.") from exc
    position = {id(created[n]): i for i, n in enumerate(order)}
    model._functional_layers = sorted(model._functional_layers, key=lambda layer: position.get(id(layer), -1))
    _touch()
    return model


def _sequential_from_config(cls, config, where):
    entries = config.get("layers")
    if not isinstance(entries, list):
        raise ModelFileError(f"{_at(where)}: 'layers' must be a list of layer entries.")
    model = cls(name=config.get("name"), dtype=config.get("dtype"))
    for i, entry in enumerate(entries):
        name = (entry.get("config") or {}).get("name") if isinstance(entry, dict) else None
        layer = _decode(entry, f"{where} > layer {name or i!r}")
        if not isinstance(layer, Layer):
            raise ModelFileError(f"{_at(where)}: layer {i} of the config is a {type(layer).__name__}, not a layer.")
        model.add(layer)
    shape = config.get("build_input_shape")
    if shape is not None and not model.built:
        _build(model, {"input_shape": shape}, where)
    if config.get("trainable") is False:
        model.trainable = False
    return model


def model_from_config(cls, config, custom_objects=None, safe_mode=None):
    """What ``Model.from_config`` does (see :meth:`autodiff_viz.Model.from_config`)."""
    if isinstance(config, dict) and _is_entry(config) and isinstance(config.get("config"), dict) \
            and "layers" in config["config"]:
        config = config["config"]       # a whole entry (to_json's), as Keras 3 accepts
    if not isinstance(config, dict):
        raise TypeError(f"{cls.__name__}.from_config: the config must be a dict (what get_config() returns), "
                        f"got {type(config).__name__}.")
    with _entered(custom_objects=custom_objects, safe_mode=safe_mode):
        where = f"model {config.get('name', cls.__name__)!r}"
        if "layers" in config and "input_layers" in config:
            if issubclass(cls, Sequential):
                raise ValueError(f"{_at(where)}: this is a functional model's config (it has input_layers); "
                                 "rebuild it with adv.Model.from_config(config).")
            return _functional_from_config(cls, config, where)
        if "layers" in config and (issubclass(cls, Sequential) or cls in (Model, Functional)):
            return _sequential_from_config(cls if issubclass(cls, Sequential) else Sequential, config, where)
        if cls in (Model, Functional):
            raise ValueError(f"{_at(where)}: {cls.__name__}.from_config needs a functional model's config (with "
                             f"layers, input_layers and output_layers); got keys {sorted(config)}.")
        return _construct(cls, _decode(config, where), where, layer_name=config.get("name"))
