"""Models: ``adv.Model`` (functional or subclassed) and ``adv.Sequential``, with Keras' training API.

    >>> model = adv.Sequential([adv.layers.Input((64,)),
    ...                         adv.layers.Dense(32, activation="relu"),
    ...                         adv.layers.Dense(10)])
    >>> model.compile(optimizer="adam", loss=adv.losses.SparseCategoricalCrossentropy(from_logits=True),
    ...               metrics=["accuracy"])
    >>> history = model.fit(x, y, epochs=10, validation_split=0.2)
    >>> model.evaluate(x_test, y_test)

The functional API builds a graph of layer calls on symbolic tensors and
makes a model of it (several inputs and outputs, skip connections, shared
layers, models used as layers):

    >>> x = adv.layers.Input(shape=(8,), name="x")
    >>> h = adv.layers.Dense(16, activation="relu")(x)
    >>> y = adv.layers.Dense(1)(adv.layers.Add()([h, adv.layers.Dense(16)(x)]))
    >>> model = adv.Model(inputs=x, outputs=y)

A model tracks the layers it holds and runs each inside its name scope, so
ops recorded in ``model(x)`` carry paths such as ``my_model/dense_1``.
``fit`` is the loop you would write by hand — a tape around the forward pass
and the loss, ``tape.gradient`` for the trainable variables,
``optimizer.apply_gradients`` — see :meth:`Model.train_step`.

Weights files are ``.npz`` archives (never pickle) whose keys are the
weights' paths *inside the model* (``dense/kernel``, ``dense_1/bias`` for a
Sequential or a functional model, numbered by class in the order of the
layers; attribute names such as ``encoder/kernel`` for a subclassed model),
as in Keras 3's weights files. The keys do not depend on the session-wide
layer names, so a model built again in a new session (where its layers may
be ``dense_7``...) loads the file.
"""
from __future__ import annotations

import html
import inspect
import itertools
import os
import warnings
import zipfile

import numpy as np

from . import callbacks as callbacks_module
from . import engine, losses, metrics as metrics_module, optimizers
from .errors import WeightsFileError
from .layers import initializers
from .layers.base import (InputLayer, InputSpec, KerasTensor, Layer, _batchless, _calls, _default, _numbered,
                          _symbolic_layers, _symbolic_shapes, _touch, positive_int)
from .ops import cast, expand_dims, squeeze
from .structure import flatten
from .tape import GradientTape
from .tensor import Tensor, constant
from .trace import check_folder


class Model(Layer):
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

    # ----- summary ------------------------------------------------------------
    _summary_head = ("Layer (type)", "Output Shape", "Param #")

    def _summary_rows(self):
        rows = []
        for layer in self.layers:
            try:
                shape = str(layer.output_shape)
            except AttributeError:
                shape = "?"
            params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
            rows.append((f"{layer.name} ({type(layer).__name__})", shape, params))
        return rows

    def _summary_totals(self):
        tr, non = self._variables()

        def size(vs):
            n, b = sum(v.size for v in vs), sum(v._value.nbytes for v in vs)
            return f"{n:,} ({_bytes(b)})"
        return [("Total params", size(tr + non)), ("Trainable params", size(tr)), ("Non-trainable params", size(non))]

    def summary_text(self) -> str:
        """The summary as a text table (what ``summary()`` prints in a terminal)."""
        head = self._summary_head
        rows = self._summary_rows()
        w = [max(len(r[i]) for r in [head, *rows]) + 2 for i in range(len(head))]

        def line(cells):
            return "│" + "│".join(f"{c:>{w[i] - 1}} " if i == 2 else f" {c:<{w[i] - 1}}"
                                  for i, c in enumerate(cells)) + "│"
        rule = lambda l, m, r, ch: l + m.join(ch * n for n in w) + r  # noqa: E731
        out = [f'Model: "{self.name}"', rule("┏", "┳", "┓", "━"), line(head).replace("│", "┃"),
               rule("┡", "╇", "┩", "━")]
        out += [line(r) for r in rows] or [line(("(no layers)", *[""] * (len(head) - 1)))]
        out.append(rule("└", "┴", "┘", "─"))
        out += [f" {k}: {v}" for k, v in self._summary_totals()]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(h)}</th>" for h in self._summary_head)
        body = "".join("<tr>" + "".join(f"<td style='text-align:right'>{esc(c)}</td>" if i == 2 else
                                        f"<td>{esc(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                       for row in self._summary_rows())
        totals = "".join(f"<div>{esc(k)}: {esc(v)}</div>" for k, v in self._summary_totals())
        return (f"<div class='adv-model-summary'><b>Model: &quot;{esc(self.name)}&quot;</b>"
                f"<table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{totals}</div>")

    def summary(self, print_fn=None) -> None:
        """Show the layers, their output shapes and parameter counts (and, for a functional
        model, which layer outputs each layer is connected to).

        In a notebook this displays an HTML table; elsewhere it prints text.
        ``print_fn`` (e.g. ``print`` or ``lines.append``) receives the text instead.
        """
        if print_fn is not None:
            print_fn(self.summary_text())
        elif callbacks_module.in_notebook():
            from IPython.display import HTML, display
            display(HTML(self._repr_html_()))
        else:
            print(self.summary_text())

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
        (:class:`~autodiff_viz.errors.WeightsFileError`, a ``ValueError``)
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
        from .saving import save_model
        save_model(self, filepath, overwrite=overwrite)

    def to_json(self, **kwargs) -> str:
        """The architecture as a JSON string (no weights, no compile state), as Keras:
        ``adv.models.model_from_json(json_string)`` builds it again with fresh weights. ``kwargs`` go to
        ``json.dumps`` (``indent=2``)."""
        import json

        from .saving import serialize_keras_object
        return json.dumps(serialize_keras_object(self), **kwargs)

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        """A new model from :meth:`get_config`'s dict (``adv.Model.from_config`` for a functional model,
        ``adv.Sequential.from_config`` for a Sequential; a subclass's own from its ``get_config``), as
        Keras 3. Weights are not part of the config: the model gets fresh ones. ``custom_objects`` names
        your own classes and functions (see :func:`adv.saving.load_model`)."""
        from .saving import model_from_config
        return model_from_config(cls, config, custom_objects=custom_objects, safe_mode=safe_mode)

    # ----- training -------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None) -> None:
        """Choose the optimizer, the loss and the metrics for ``fit`` and ``evaluate``.

        Args:
            optimizer: a name (``"adam"``, ``"adamw"``, ``"sgd"``, ``"rmsprop"``, ``"adagrad"``, ``"nadam"``)
                or an optimizer.
            loss: a name (``"mse"``, ``"sparse_categorical_crossentropy"`` ...),
                a loss object or a function ``f(y_true, y_pred)``; for a model
                with several outputs, one loss for all of them, or a list (a
                dict keyed by output name) with one loss per output, where
                ``None`` leaves that output without a loss (as Keras 3: its
                targets may then be left out of ``y``, see :meth:`fit`). The
                training loss is their sum plus ``model.losses``. Without any
                loss (``None``, or ``None`` for every output) the training
                loss is ``sum(model.losses)`` alone, the ``add_loss`` terms of
                the layers (Keras 3's guide trains its ``LogisticEndpoint``
                model so); a step that finds neither is an error.
            loss_weights: as Keras 3, a number per output that scales its loss
                before the sum: ``total = Σ_k loss_weights[k] · loss_k +
                sum(model.losses)``. A list with one number per output, a dict
                with one entry per output name (``{"cls": 1.0, "box": 0.2}``;
                every output needs one, Keras 3 refuses a partial dict too), or
                one number for every output. ``None``: every weight is 1.
            metrics: a list of names (``"accuracy"``) or functions; for a model
                with several outputs, per output (as Keras 3): a dict
                ``{"cls": ["accuracy"], "box": [box_error]}`` keyed by output
                name, or a list of lists with one list per output. They are
                logged as ``cls_accuracy``, ``box_box_error``. A flat list is
                refused there: it would not say which output it measures.
                These metrics are never weighted by ``sample_weight`` or
                ``class_weight`` (Keras 3's ``metrics=`` are not either).
            weighted_metrics: metrics in the same forms as ``metrics``, each
                updated with the batch's sample weights (from
                ``sample_weight`` or ``class_weight``; for several outputs
                each output's weights): a mean metric gives ``Σ_i w_i · m_i /
                Σ_i w_i`` over the samples seen. Logged under their own names
                after the ``metrics``, as Keras 3's ``CompileMetrics``; one
                whose name is taken by a metric of ``metrics=`` is logged as
                ``weighted_<name>`` (``<output>_weighted_<name>``).
        """
        optimizer = optimizers.get(optimizer)
        if loss is None:
            pass
        elif isinstance(loss, (list, tuple)):
            loss = [None if fn is None else losses.get(fn) for fn in loss]
        elif isinstance(loss, dict):
            loss = {k: None if fn is None else losses.get(fn) for k, fn in loss.items()}
        else:
            loss = losses.get(loss)
        if isinstance(loss, (list, dict)) and all(fn is None for fn in _values(loss)):
            loss = None                    # no output has a loss: as no loss at all (Keras 3)
        loss_weights = _checked_loss_weights(loss_weights)
        specs, weighted = (_checked_metric_specs(m, name) for m, name in ((metrics, "metrics"),
                                                                            (weighted_metrics, "weighted_metrics")))
        labels = self._known_output_labels()
        if labels is not None:
            _metric_plan(specs, labels, "metrics")
            _metric_plan(weighted, labels, "weighted_metrics")
            keys = self._known_output_keys(labels)
            _loss_weight_list(loss_weights, *self._output_aliases(keys), "compile", " Nothing was compiled.")
        self.optimizer, self.loss, self.loss_weights = optimizer, loss, loss_weights
        self._metric_specs, self._weighted_specs = specs, weighted
        self._loss_tracker = metrics_module.Mean("loss")
        self._compile_metrics = None if metrics is None and weighted_metrics is None else _CompileMetrics(self)
        self._loss_metrics = []

    def _require_compiled(self, what):
        """Refuse to train or evaluate before ``compile``. A compiled loss is not required: the loss may
        come from ``add_loss`` alone, or from a step of one's own (Keras 3's guides compile such models
        with an optimizer alone); :meth:`compute_loss` refuses a step that finds no loss at all."""
        if self.optimizer is None:
            own = (f" {type(self).__name__} overrides compile(): it must call super().compile(...) (as Keras 3's GAN "
                   "example does: super().compile() then its own optimizers)." if _overrides(self, "compile") else "")
            raise RuntimeError(f"{what}: call model.compile(optimizer=..., loss=...) first.{own}")

    def _takes_x_alone(self, step) -> bool:
        """Whether the built-in ``step`` (``"train_step"``/``"test_step"``, not overridden) runs on ``x``
        alone: when nothing compiled needs targets (see :meth:`_needs_y`)."""
        return not self._needs_y() and not _overrides(self, step)

    def _needs_y(self) -> bool:
        """Whether the built-in steps need targets: a compiled loss or compiled metrics measure them. Without
        either (a loss from ``add_loss`` alone) ``fit(x)`` and ``evaluate(x)`` run on ``x`` alone, as Keras 3."""
        return self.loss is not None or self._compile_metrics is not None

    # ----- metrics, as Keras 3 lists them -----------------------------------------
    @property
    def metrics(self) -> list:
        """The metric objects that ``fit`` resets at the start of each epoch and ``evaluate`` at its start,
        in Keras 3's order: the loss tracker (a ``Mean`` named ``"loss"``), then ``compile_metrics`` (one
        object for every metric of ``compile(metrics=...)``, whose ``result()`` is a dict such as
        ``{"mae": 0.3}``), then for a model with several outputs one ``Mean`` per output loss
        (``"<output>_loss"``), then the metrics the model holds as attributes
        (``self.loss_tracker = adv.metrics.Mean(name="loss")``).

        The first two exist after ``compile`` (``compile_metrics`` only when
        ``metrics=`` was given); the per-output trackers after the first
        :meth:`compute_loss`. A subclass may override this property to list
        its own trackers instead; ``fit`` then resets those.
        """
        out = [m for m in (self._loss_tracker, self._compile_metrics) if m is not None]
        out += self._loss_metrics
        out += [v for v in vars(self).values() if isinstance(v, metrics_module.Metric) and v is not self._loss_tracker]
        return out

    def _returned(self, logs: dict, return_dict: bool):
        """``evaluate``'s answer, as Keras 3's ``_flatten_metrics_in_order``: the dict, or the values in the order
        of :attr:`metrics` (``compile_metrics`` standing for its metrics' names, which match the logs of a model
        with one output), then the other logs in sorted order; one value alone, not a list.

        For two outputs ``a`` and ``b`` with metrics: ``[loss, a_loss, b_loss, a_mae, b_mse]``.
        """
        if return_dict:
            return logs
        names = []
        for m in self.metrics:
            if m is self._compile_metrics:
                names += [name for key, name, _, _ in m.plan or [] if key is None]
            else:
                names.append(m.name)
        values = [logs[n] for n in names if n in logs] + [logs[k] for k in sorted(logs) if k not in names]
        return values[0] if len(values) == 1 else values

    @property
    def metrics_names(self) -> list:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        """``reset_state()`` on every metric of :attr:`metrics`."""
        for m in self.metrics:
            m.reset_state()

    def _reset_all_metrics(self) -> None:
        """:meth:`reset_metrics`, and the compiled trackers too when a subclass's ``metrics`` leaves them out."""
        seen = set()
        for m in [*self.metrics, self._loss_tracker, self._compile_metrics, *self._loss_metrics]:
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                m.reset_state()

    def compiled_loss(self, y, y_pred, sample_weight=None, regularization_losses=None):
        """Keras 2's ``self.compiled_loss(y, y_pred, regularization_losses=self.losses)``, kept as Keras 3 keeps
        it: a deprecation warning, then :meth:`compute_loss` (which adds ``model.losses`` itself, so
        ``regularization_losses`` is not added again).

        As in Keras 2 the loss also goes into the ``"loss"`` tracker (Keras 3
        leaves it out), so a Keras 2 ``train_step`` that ends with
        ``return {m.name: m.result() for m in self.metrics}`` logs its loss.
        """
        warnings.warn("model.compiled_loss() is deprecated, as in Keras 3. Use model.compute_loss(y=y, y_pred=y_pred, "
                      "sample_weight=sample_weight) and update the trackers of model.metrics yourself.",
                      UserWarning, stacklevel=engine.user_stacklevel())
        loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        if self._loss_tracker is not None:
            self._loss_tracker.update_state(loss._value, weight=_batch_len(y_pred))
        return loss

    @property
    def compiled_metrics(self):
        """Keras 2's ``self.compiled_metrics``: its ``update_state(y, y_pred, sample_weight=None)`` warns that it is
        deprecated (as Keras 3) and adds the batch to the metrics of ``compile(metrics=...)``; iterating it gives
        those metric objects."""
        return _DeprecatedCompiledMetrics(self)

    def get_metrics_result(self) -> dict:
        """``{name: current value}`` for every metric of :attr:`metrics`; a metric whose result is a dict
        (``compile_metrics``) adds its entries (Keras 3)."""
        out = {}
        for m in self.metrics:
            result = m.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[m.name] = result
        return out

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        """Add a batch to the metrics of ``compile(metrics=..., weighted_metrics=...)`` and return
        :meth:`get_metrics_result`, as Keras 3 (``x`` is unused here; a subclass may use it). The loss
        tracker is not updated here: the built-in steps update it before this call.

        ``sample_weight`` goes to the ``weighted_metrics`` only (see :meth:`compile`).
        """
        if self._compile_metrics is not None and y is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def _make_metrics(self, y, y_pred):
        """New metric objects for ``compile(metrics=..., weighted_metrics=...)``, matched to the outputs of
        ``y_pred``: ``[(output key or None, log name, metric, weighted)]``, the ``metrics`` first. A weighted
        metric whose log name is taken is logged as ``weighted_<name>`` (Keras 3's ``CompileMetrics``)."""
        single = not isinstance(y_pred, (list, tuple, dict)) or len(y_pred) == 1
        if single:
            keys, labels, ys, yps = [None], [None], {None: _first(y)}, {None: _first(y_pred)}
        else:
            keys, _, ys = self._per_output(y, y_pred)
            labels, yps = self._output_labels(keys), y_pred
        out, taken = [], set()
        for specs, weighted in ((self._metric_specs, False), (self._weighted_specs, True)):
            for i, prefix, spec in _metric_plan(specs, labels):
                key = keys[i]
                if ys[key] is None:
                    raise ValueError(f"compile: metrics are given for output {labels[i]!r}, but y has no targets "
                                     "for it; give its targets in y, or leave its metrics out.")
                m = metrics_module.get(spec, ys[key], yps[key])
                name = prefix + m.name
                if weighted and name in taken:
                    name = f"{prefix}weighted_{m.name}"
                taken.add(name)
                out.append((key, name, m, weighted))
        return out

    def _update_metrics(self, plan, y, y_pred, sample_weight=None) -> None:
        """Add a batch to every metric of ``plan`` (from :meth:`_make_metrics`); the weighted ones get the
        sample weights of their output (one array for all outputs when a single one is given, as Keras 3)."""
        several = any(key is not None for key, _, _, _ in plan)
        ys = self._per_output(y, y_pred)[2] if several else None
        sws = None
        if sample_weight is not None and any(weighted for *_, weighted in plan):
            if not several:
                one = isinstance(sample_weight, (list, tuple, dict)) and len(sample_weight) == 1
                sws = _first(sample_weight) if one else sample_weight
            elif isinstance(sample_weight, (list, tuple, dict)):
                keys, names, _ = self._per_output(y, y_pred)
                sws = _by_output(sample_weight, keys, names, "sample_weight", "weight arrays")
            else:
                sws = dict.fromkeys(ys, sample_weight)
        for key, name, m, weighted in plan:
            yt, yp = (_first(y), _first(y_pred)) if key is None else (ys[key], y_pred[key])
            if weighted and sws is not None:
                m.update_state(yt, yp, sample_weight=sws if key is None else sws[key])
            else:
                m.update_state(yt, yp)

    def _output_labels(self, keys) -> list:
        """The name of each output in logs: a dict output's key, else the output tensor's name
        (``output_0``... for a subclassed model, whose outputs have no names)."""
        names = self._output_names()
        return [k if isinstance(k, str) else names[i] if names else f"output_{i}" for i, k in enumerate(keys)]

    def _known_output_labels(self):
        """The output labels when they are known before any call (a functional model), else None."""
        return None

    def _known_output_keys(self, labels) -> list:
        """The keys of the outputs whose ``labels`` are known before a call: dict keys, else positions."""
        struct = self._output_struct
        return list(struct) if isinstance(struct, dict) else list(range(len(labels)))

    def _per_output(self, y, y_pred):
        """``(keys, names, {key: y_true})`` for ``y_pred`` with several outputs (a list or a dict). When some
        outputs have no loss (``None`` in ``compile(loss=[...])``), ``y`` may hold only the targets of the
        others, as Keras 3 accepts: a list of them in output order, a dict without the other keys, or for
        one such output its array alone; the outputs left out get None."""
        names = self._output_names()
        keys = list(y_pred) if isinstance(y_pred, dict) else list(range(len(y_pred)))
        return keys, names, _by_output(y, keys, names, "y", partial=self._loss_keys(keys, names))

    def _loss_keys(self, keys, names):
        """The keys of the outputs that have a compiled loss, when only some of them do (else None)."""
        loss = self.loss
        if isinstance(loss, (list, tuple)) and len(loss) == len(keys):
            having = [k for k, fn in zip(keys, loss) if fn is not None]
        elif isinstance(loss, dict):
            having = [k for i, k in enumerate(keys)          # an output the dict leaves out: refused later
                      if (loss[k] if k in loss else loss[names[i]] if names and names[i] in loss else 0) is not None]
        else:
            return None
        return having if len(having) < len(keys) else None

    def compute_loss(self, y=None, y_pred=None, sample_weight=None, *, x=None, training=True):
        """The loss of a batch (a scalar tensor), as Keras 3: the compiled loss of each output, weighted
        by its sample weights, times its ``loss_weights`` entry, summed, plus ``sum(model.losses)``
        (regularization and ``add_loss`` terms, never weighted).

        ``sample_weight`` (one weight per sample of the batch, or for a model
        with several outputs a list/dict with one array per output) goes to
        each loss, which multiplies the per-sample losses by it before its
        reduction: with the default ``"sum_over_batch_size"``,
        ``Σ_i w_i · loss_i / batch size``.

        ``x`` and ``training`` are Keras 3's keywords; this loss uses neither
        (a subclass's ``compute_loss`` may). Keras' positional order is
        ``(x, y, y_pred, sample_weight)``, this one's ``(y, y_pred,
        sample_weight)``: when porting Keras code, pass keywords
        (``self.compute_loss(y=y, y_pred=y_pred)``, as Keras' guides do).

        For a model with several outputs, each output's loss (before its
        ``loss_weights`` factor) is also added to a ``Mean`` named
        ``<output>_loss`` in :attr:`metrics`, so ``fit`` and ``evaluate``
        log it beside the total, as Keras 3 does.
        """
        if y_pred is None:
            raise TypeError(f"{self.name}.compute_loss needs y_pred, the model's output: "
                            "compute_loss(y=y, y_pred=y_pred, sample_weight=None). (Keras' positional order starts "
                            "with x; pass keywords when porting Keras code.)")
        values, unweighted = [], []
        for key, fn, yt, yp, sw, weight in self._loss_terms(y, y_pred, sample_weight):
            value = fn(yt, yp, sample_weight=sw)
            unweighted.append((key, value, yp))
            values.append(value if weight is None else value * weight)
        if len(unweighted) > 1:
            self._track_output_losses(y_pred, unweighted)
        extra = self.losses
        if not values and not extra:
            raise ValueError(f"{self.name}: no loss to compute (Keras 3 refuses it too): model.compile() was given "
                             "no loss (loss=None, or None for every output) and no layer added one (model.losses "
                             "is empty after the forward pass). Pass loss=... to model.compile(), or call "
                             "self.add_loss(value) in a layer's call(). No weight was changed.")
        return _sum(values + extra)

    def _track_output_losses(self, y_pred, values) -> None:
        """Add each output's loss to its ``<output>_loss`` tracker, counted by the batch size (Keras 3's
        ``CompileLoss`` does it as it computes the loss, for the outputs that have a loss when there are
        two or more); the trackers are made at the first call."""
        keys = list(y_pred) if isinstance(y_pred, dict) else list(range(len(y_pred)))
        labels = dict(zip(keys, self._output_labels(keys)))
        names = [f"{labels[key]}_loss" for key, _, _ in values]
        if [m.name for m in self._loss_metrics] != names:
            self._loss_metrics = [metrics_module.Mean(name) for name in names]
        for m, (_, value, yp) in zip(self._loss_metrics, values):
            m.update_state(value._value, weight=_batch_len(yp))

    def _loss_for(self, x, y, y_pred, sample_weight, training):
        """``self.compute_loss`` called in the form it was written in: Keras 3's ``(x, y, y_pred,
        sample_weight, training=...)`` when its first parameter is ``x``, else ``(y, y_pred[,
        sample_weight])`` (sample weights only when there are some, so a ``compute_loss(self, y, y_pred)``
        of one's own still works)."""
        fn = self.compute_loss
        if getattr(fn, "__func__", None) is Model.compute_loss:
            return fn(y, y_pred, sample_weight)
        form = _loss_form(fn)
        if form == "x, training":
            return fn(x, y, y_pred, sample_weight, training=training)
        if form == "x":
            return fn(x, y, y_pred, sample_weight)
        return fn(y, y_pred) if sample_weight is None else fn(y, y_pred, sample_weight)

    def _loss_terms(self, y, y_pred, sample_weight=None):
        """``(output key, loss, y_true, y_pred, sample_weight, loss weight or None)`` per output that has a
        loss (none without a compiled loss)."""
        loss = self.loss
        if loss is None:
            return []
        if not isinstance(y_pred, (list, tuple, dict)):
            if isinstance(loss, (list, tuple, dict)):
                if len(loss) != 1:
                    raise ValueError(f"compute_loss: {len(loss)} losses were compiled, the model has one output.")
                loss = next(iter(loss.values())) if isinstance(loss, dict) else loss[0]
            if isinstance(y, (list, tuple)) and len(y) == 1:
                y = y[0]
            if isinstance(sample_weight, (list, tuple, dict)) and len(sample_weight) == 1:
                sample_weight = next(iter(sample_weight.values())) if isinstance(sample_weight, dict) \
                    else sample_weight[0]
            (weight,) = _loss_weight_list(self.loss_weights, *self._output_aliases([0]), "compute_loss")
            return [] if loss is None else [(0, loss, y, y_pred, sample_weight, weight)]
        keys, names, ys = self._per_output(y, y_pred)
        if isinstance(loss, (list, tuple)):
            if len(loss) != len(keys):
                raise ValueError(f"compute_loss: {len(loss)} losses were compiled for {len(keys)} outputs "
                                 f"({names}). Give one loss per output, or a single loss for all.")
            fns = dict(zip(keys, loss))
        elif isinstance(loss, dict):
            fns = {}
            for i, k in enumerate(keys):
                key = k if k in loss else names[i] if names and names[i] in loss else None
                if key is None:
                    raise ValueError(f"compute_loss: no loss for output {names[i] if names else k!r}; the "
                                     f"compiled losses are for {sorted(loss)}.")
                fns[k] = loss[key]
        else:
            fns = dict.fromkeys(keys, loss)
        if isinstance(sample_weight, (list, tuple, dict)):
            sws = _by_output(sample_weight, keys, names, "sample_weight", "weight arrays")
        else:
            sws = dict.fromkeys(keys, sample_weight)     # one array for every output, as Keras 3
        weights = _loss_weight_list(self.loss_weights, *self._output_aliases(keys), "compute_loss")
        return [(k, fns[k], ys[k], y_pred[k], sws[k], w) for k, w in zip(keys, weights) if fns[k] is not None]

    def _output_aliases(self, keys):
        """``(labels, aliases)`` for the outputs ``keys``: the label of each in logs and errors, and the
        names a dict (``loss_weights``) may give it: its dict key or its output name. The one output of
        a model whose outputs have no names has no aliases (any one key names it)."""
        names = self._output_names()
        if len(keys) == 1 and not names and not isinstance(keys[0], str):
            return ["output"], [set()]
        labels = self._output_labels(keys)
        aliases = [{labels[i], *([names[i]] if names else []), *([k] if isinstance(k, str) else [])}
                   for i, k in enumerate(keys)]
        return labels, aliases

    def _output_names(self):
        return None

    def train_step(self, x, y=None, sample_weight=None):
        """One optimisation step on a batch. Two forms:

        * ``train_step(x, y, sample_weight=None)`` returns ``(loss,
          y_pred)``, plain values (no history); ``fit`` then updates the
          loss tracker and the metrics.
        * ``train_step(data)``, Keras 3's form, with ``data`` = ``(x, y)`` or
          ``(x, y, sample_weight)``: the same step, then the loss tracker and
          :meth:`compute_metrics`; returns the logs dict (``{"loss": ...,
          "mae": ...}``). This is what ``super().train_step(data)`` gives a
          subclass.

        The step is the whole of what ``fit`` does per batch::

            with adv.GradientTape() as tape:
                y_pred = model(x, training=True)
                loss = model.compute_loss(y, y_pred, sample_weight)   # + sum(model.losses)
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))

        then each weight's constraint, if any, is applied. The outputs that
        layers kept from the previous step are dropped first, so two steps'
        graphs are never alive together.

        To customise ``fit``, override it in either form. A subclass's
        ``train_step(self, data)`` (one parameter) is called by ``fit`` and
        ``train_on_batch`` with ``data`` and must return a dict of logs, as
        in Keras 3's guide "Customizing what happens in fit()"::

            class CustomModel(adv.Model):
                def train_step(self, data):
                    x, y = data                  # (x, y, sample_weight) with sample or class weights
                    with adv.GradientTape() as tape:
                        y_pred = self(x, training=True)
                        loss = self.compute_loss(y=y, y_pred=y_pred)
                    grads = tape.gradient(loss, self.trainable_variables)
                    self.optimizer.apply(grads, self.trainable_variables)
                    for metric in self.metrics:
                        if metric.name == "loss":
                            metric.update_state(loss)
                        else:
                            metric.update_state(y, y_pred)
                    return {m.name: m.result() for m in self.metrics}

        The dict's values are numbers or 0-d tensors/arrays; a nested dict
        (``compile_metrics``' result) is flattened into it, as Keras 3 does.
        A subclass's ``train_step(self, x, y, sample_weight=None)`` returns
        ``(loss, y_pred)`` as the first form; ``fit`` passes
        ``sample_weight`` only when there are sample (or class) weights, so
        a ``train_step(self, x, y)`` still works without them.
        """
        if y is None:
            x, y, sample_weight = _unpack_data(x, "train_step", need_y=self._needs_y())
            loss, y_pred = self._one_step(x, y, sample_weight)
            self._loss_tracker.update_state(loss._value, weight=_batch_len(x))
            return self.compute_metrics(x, y, y_pred, sample_weight)
        return self._one_step(x, y, sample_weight)

    def _one_step(self, x, y, sample_weight):
        """The optimisation step of :meth:`train_step`; ``(loss, y_pred)`` as plain values."""
        self._forget_outputs()
        with GradientTape() as tape:
            y_pred = self(x, **self._training_kwargs(True))
            loss = self._loss_for(x, y, y_pred, sample_weight, training=True)
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        self._constrain()
        leaves, rebuild = flatten(y_pred)
        return constant(loss._value), rebuild([constant(t._value) if isinstance(t, Tensor) else t for t in leaves])

    def test_step(self, data) -> dict:
        """One evaluation step on ``data`` = ``(x, y)`` or ``(x, y, sample_weight)``, as Keras 3: the
        prediction (``training=False``), :meth:`compute_loss` into the loss tracker (counted by the batch
        size), then :meth:`compute_metrics`; returns the logs dict.

        ``evaluate``, ``test_on_batch`` and ``fit``'s validation call it for
        every batch (nothing is recorded on any tape there). Override it as
        ``test_step(self, data)`` returning a dict of logs to change what
        they measure; ``evaluate`` returns the last batch's dict.
        """
        x, y, sample_weight = _unpack_data(data, "test_step", need_y=self._needs_y())
        y_pred = self(x, **self._training_kwargs(False))
        loss = self._loss_for(x, y, y_pred, sample_weight, training=False)
        self._loss_tracker.update_state(loss._value, weight=_batch_len(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def _forget_outputs(self) -> None:
        """Drop every layer's kept output (it pins the whole graph of the call that made it)."""
        self._output = None
        for layer in self._sublayers():
            layer._output = None

    def _training_kwargs(self, training):
        """``training=`` for a call of this model: always given, as Keras 3's steps do; a ``call`` without the
        parameter does not get it, but the layers inside that take it do (the call context, see ``Layer.__call__``)."""
        return {"training": training}

    def fit(self, x, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_freq=1, seed=None):
        """Train for ``epochs`` passes over ``(x, y)`` in mini-batches.

        The arguments are checked before the first step (the number of
        sample weights, the keys of ``class_weight`` included).

        Args:
            x: an array, or for a model with several inputs a list of
                arrays (a dict keyed by input name), all with the same
                number of samples. Or a generator (any iterator) of batches,
                as Keras 3: each item is ``(x, y)`` or ``(x, y,
                sample_weight)``, and for a ``train_step(self, data)`` of
                your own also ``x`` alone (or ``(x,)``), given to it as
                ``data`` = the batch of ``x``. The targets and weights then
                come from the generator: ``y``, ``sample_weight``,
                ``batch_size`` and ``validation_split`` are refused with it
                (Keras 3 refuses them too), and ``shuffle`` is ignored (the
                generator yields the batches in its own order). An item of
                another form is an error naming its number, before its step.
            y: an array, or a list (dict) with one array per output; when
                ``compile(loss=[...])`` has ``None`` for some outputs, the
                targets of the others alone are enough (a list of them in
                output order, a dict without the other keys, or the array
                alone for one such output), as Keras 3. Only a
                ``train_step(self, data)`` of your own, or a model compiled
                without loss and metrics (its loss comes from ``add_loss``),
                may train without it: ``data`` is then the batch of ``x``
                alone, as in Keras 3.
            batch_size: samples per step (32 by default, as Keras; with
                ``steps_per_epoch`` and arrays, ``ceil(n / steps_per_epoch)``
                as Keras 3).
            verbose: ``"auto"``/1 a progress bar (a widget in notebooks), 2 one
                line per epoch, 0 silent.
            callbacks: a callback or a list of them, e.g.
                ``[adv.callbacks.EarlyStopping(patience=3)]``. One that sets
                ``model.stop_training = True`` in a batch hook ends the epoch
                after that batch (validation and ``on_epoch_end`` still run)
                and the training, as Keras 3.
            validation_split: the *last* fraction of the data (taken before
                shuffling, as Keras) is held out and evaluated after each
                epoch; ``sample_weight`` is split with it.
            validation_data: ``(x_val, y_val)`` or ``(x_val, y_val,
                val_sample_weight)`` instead, or a generator of such batches.
            shuffle: shuffle the training samples each epoch (their sample
                weights go with them).
            class_weight: ``{class index: weight}``, as Keras 3: each training
                sample gets the weight of its class (read from ``y``: integer
                labels, or the position of the largest entry of one-hot
                labels), 1 for classes the dict leaves out; it weights the
                loss and the ``weighted_metrics``. Only for a model
                with one output; not with ``sample_weight`` (Keras 3 refuses
                both at once: fold the class weights into ``sample_weight``);
                not applied to the validation data. A key outside the classes
                (from 0 to the number of columns of one-hot labels, or of the
                model's output; 0 and 1 for one output column) is an error.
                With a generator it weights each batch the same way (Keras 3
                refuses it there); a batch that brings its own sample weights
                is then an error.
            sample_weight: one weight per training sample (shape ``(n,)`` or
                ``(n, 1)``; ``(n, steps)`` weights each step of a sequence
                output), or for a model with several outputs a list/dict with
                one array per output (one array alone weights every output).
                Each batch's weights scale its per-sample losses before the
                loss's reduction: with the default ``"sum_over_batch_size"``
                the batch loss is ``Σ_i w_i · loss_i / batch size`` (Keras 3:
                divided by the number of samples, not by ``Σ w_i``). The
                logged ``loss`` is that weighted loss; the
                ``weighted_metrics`` are weighted too, the ``metrics`` not
                (see :meth:`compile`).
            initial_epoch: the epoch to start counting from (resuming a run).
            steps_per_epoch: batches per epoch (a positive integer). With a
                generator each epoch draws that many from the same iterator,
                which goes on across epochs; if it runs out first, training
                stops after that epoch with Keras' warning "Your input ran
                out of data; interrupting training". Without it an epoch
                reads the generator to its end, and training stops with that
                warning when a later epoch gets no batch at all (a generator
                is read once; Keras 3 would replay the two batches it peeked
                at). With arrays, as Keras 3: an epoch takes that many
                batches and the pass over the data goes on in the next
                epoch; when the pass ends before the epoch, the epoch ends
                there with the warning and the next epoch starts a new pass.
            validation_steps: batches per validation (a positive integer). A
                validation generator goes on across epochs; without it, the
                first validation reads the generator to its end and keeps its
                batches for the later ones (a generator cannot be rewound).
                With arrays, the first ``validation_steps`` batches.
            validation_freq: when to validate, as Keras 3: an integer ``n``
                validates after every ``n``-th epoch (epochs counted from 1:
                ``validation_freq=2`` validates after epochs 2, 4, ...), a
                list of epochs (``[1, 3]``) after those. The epochs without
                validation have no ``val_*`` logs.
            seed: seed for the shuffling (our addition; by default the
                generator of :func:`adv.layers.set_random_seed` is used).

        Each epoch starts by resetting every metric of :attr:`metrics`, so
        the logged values are that epoch's. A ``train_step(self, data)`` of
        one's own (see :meth:`train_step`) is called with ``data`` = ``(x,
        y)`` or ``(x, y, sample_weight)`` and its dict is the batch's logs;
        the epoch's logs are the last batch's (as Keras 3). For a model with
        several outputs, each output's loss is logged as ``<output>_loss``
        beside ``loss``. The callbacks' ``params["steps"]`` is the number of
        steps per epoch, or None for a generator without ``steps_per_epoch``.
        Each validation pass calls their ``on_test_begin``,
        ``on_test_batch_begin``/``on_test_batch_end`` per batch and
        ``on_test_end`` (Keras 3 runs ``evaluate`` with fit's callbacks),
        between the epoch's last batch and ``on_epoch_end``.

        Returns:
            a :class:`~autodiff_viz.callbacks.History`; ``history.history``
            maps ``"loss"``, ``"accuracy"``, ``"val_loss"``... to per-epoch lists.
        """
        own_step = _takes_data(self.train_step)
        self._require_compiled("fit")
        x_alone = own_step or self._takes_x_alone("train_step")
        callbacks = callbacks_module.as_list(callbacks, "fit")
        _check_validation_freq(validation_freq)
        epochs = positive_int("fit", "epochs", epochs, minimum=0)
        initial_epoch = positive_int("fit", "initial_epoch", initial_epoch, minimum=0)
        steps_per_epoch = _steps(steps_per_epoch, "fit", "steps_per_epoch")
        validation_steps = _steps(validation_steps, "fit", "validation_steps")
        _refuse_class_and_sample_weight(class_weight, sample_weight, "fit")
        rng = np.random.default_rng(seed) if seed is not None else initializers.generator()
        if _is_batches(x):
            _refuse_with_batches("fit", y=y, batch_size=batch_size, sample_weight=sample_weight,
                                 validation_split=validation_split)
            train = _Batches(self, x, "fit", steps_per_epoch, step="train_step", own_step=x_alone,
                             class_weight=class_weight)
        else:
            x, y = self._x(x), None if y is None else self._y(y)
            _refuse_missing_y(y, x_alone, sample_weight, class_weight, "fit", "train_step")
            n = _same_length(x, y, "fit")
            sample_weight = self._sample_weight(sample_weight, n, "fit")
        val_batches = None
        if validation_data is not None and _is_batches(validation_data):
            val_batches = _Batches(self, validation_data, "fit (validation_data)", validation_steps,
                                   step="test_step", keep=True,
                                   own_step=_overrides(self, "test_step") or self._takes_x_alone("test_step"))
            x_val = None
        elif validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                got = f"{len(validation_data)} items" if isinstance(validation_data, (tuple, list)) else \
                    type(validation_data).__name__
                raise ValueError("fit: validation_data must be (x_val, y_val) or (x_val, y_val, val_sample_weight), "
                                 f"got {got}. A generator of such batches works too.")
            x_val, y_val = self._x(validation_data[0], "x_val"), self._y(validation_data[1], "y_val")
            n_val = _same_length(x_val, y_val, "fit (validation_data)")
            sw_val = self._sample_weight(validation_data[2] if len(validation_data) == 3 else None, n_val,
                                         "fit (validation_data)")
        elif validation_split and not _is_batches(x):
            if not 0.0 < validation_split < 1.0:
                raise ValueError(f"fit: validation_split must be between 0 and 1, got {validation_split}.")
            split = int(n * (1.0 - validation_split))
            x, x_val = _take(x, slice(None, split)), _take(x, slice(split, None))
            y, y_val = _take(y, slice(None, split)), _take(y, slice(split, None))
            if sample_weight is not None:
                sample_weight, sw_val = _take(sample_weight, slice(None, split)), \
                    _take(sample_weight, slice(split, None))
            else:
                sw_val = None
            n = split
        else:
            x_val = y_val = sw_val = None
        if not _is_batches(x):
            if n == 0:
                raise ValueError("fit: no training samples (after validation_split).")
            sample_weight = self._step_weights(class_weight, sample_weight, x, y, "fit", own_step)
            train = _ArrayBatches(x, y, sample_weight, _batch_size(batch_size, "fit", n, steps_per_epoch),
                                  steps_per_epoch, shuffle, rng)
        verbose = 1 if verbose == "auto" else int(verbose)
        history = callbacks_module.History()
        extra = [callbacks_module.ProgbarLogger(verbose)] if verbose else []
        cbs = callbacks_module.CallbackList([*callbacks, history, *extra], self,   # Keras' order: yours first
                                            {"epochs": epochs, "steps": train.steps, "verbose": verbose})
        self.stop_training = False
        logs = {}
        cbs.on_train_begin()
        try:
            for epoch in range(initial_epoch, epochs):
                batches = train.epoch()
                if isinstance(train, _Batches):
                    first = next(batches, None)
                    if first is None:
                        if not train.drawn:
                            raise ValueError("fit: the generator given as x yielded no batch at all; nothing to "
                                             "train on.")
                        warnings.warn(train.ran_out_message(epoch - initial_epoch + 1), UserWarning,
                                      stacklevel=engine.user_stacklevel())
                        break
                    batches = itertools.chain([first], batches)
                self._reset_all_metrics()
                cbs.on_epoch_begin(epoch)
                logs = {}
                for step, (xb, yb, swb) in enumerate(batches):
                    cbs.on_train_batch_begin(step)
                    logs = self._train_batch(xb, yb, swb, own_step)
                    cbs.on_train_batch_end(step, logs)
                    if self.stop_training:     # Keras 3 checks after every batch
                        break
                if train.ran_out and steps_per_epoch is not None:
                    warnings.warn(train.ran_out_message(epoch - initial_epoch + 1), UserWarning,
                                  stacklevel=engine.user_stacklevel())
                    if isinstance(train, _Batches):
                        self.stop_training = True
                validate = _should_validate(epoch, validation_freq)
                if val_batches is not None and validate:
                    val, seen = _test_batches(self, val_batches.epoch(), cbs)
                    if val_batches.ran_out and validation_steps is not None:
                        warnings.warn(val_batches.ran_out_message(epoch - initial_epoch + 1), UserWarning,
                                      stacklevel=engine.user_stacklevel())
                    if seen:
                        logs = {**logs, **{f"val_{k}": v for k, v in val.items()}}
                elif x_val is not None and validate:
                    steps = {} if validation_steps is None else {"steps": validation_steps}
                    val = self.evaluate(x_val, y_val, batch_size=batch_size, verbose=0, sample_weight=sw_val,
                                        callbacks=cbs, return_dict=True, **steps)
                    logs = {**logs, **{f"val_{k}": v for k, v in val.items()}}
                cbs.on_epoch_end(epoch, logs)
                if self.stop_training:
                    break
        finally:
            self._forget_outputs()
        cbs.on_train_end(logs)          # the last epoch's logs, as Keras 3
        self.history = history
        return history

    def _train_batch(self, x, y, sample_weight, own_step) -> dict:
        """One training step on a batch and its logs: a ``train_step(data)`` of one's own (``own_step``)
        returns them; the built-in form's ``(loss, y_pred)`` goes to the loss tracker, counted by the
        batch size, and to :meth:`compute_metrics`."""
        if own_step or y is None:     # y None: the built-in step on x alone (a loss from add_loss only)
            self._forget_outputs()
            return _step_logs(self.train_step(_packed(x, y, sample_weight)), "train_step(self, data)")
        if sample_weight is None:
            loss, y_pred = self.train_step(x, y)
        else:
            loss, y_pred = self.train_step(x, y, sample_weight=sample_weight)
        self._loss_tracker.update_state(loss._value, weight=_batch_len(x))
        logs = self.compute_metrics(x, y, y_pred, sample_weight)
        return _step_logs(logs, "compute_metrics(x, y, y_pred, sample_weight)")

    def _sample_weight(self, sample_weight, n, what):
        """``sample_weight`` as numpy arrays (one, or a list/dict with one per output), each with ``n``
        entries along its first axis; None stays None. Checked before anything runs."""
        if sample_weight is None:
            return None
        if not isinstance(sample_weight, (list, tuple, dict, Tensor)) and np.ndim(sample_weight) == 0:
            raise ValueError(f"{what}: sample_weight must hold one weight per sample (an array of shape ({n},)), "
                             f"got the single value {sample_weight!r:.40}. For one weight on every sample, use "
                             f"np.full({n}, {sample_weight!r:.20}).")
        if isinstance(sample_weight, (list, tuple)) and all(np.ndim(v) == 0 for v in sample_weight):
            sample_weight = np.asarray(sample_weight)    # numbers, one per sample: not one array per output
        sw = self._y(sample_weight, f"{what}: sample_weight")
        leaves = list(sw.values()) if isinstance(sw, dict) else sw if isinstance(sw, list) else [sw]
        for leaf in leaves:
            if leaf.dtype.kind not in "biuf":
                raise TypeError(f"{what}: sample_weight must be numbers, got an array of dtype {leaf.dtype} "
                                f"({leaf.ravel()[:3].tolist()!r:.40}...).")
            if leaf.ndim == 0 or len(leaf) != n:
                got = "a single value" if leaf.ndim == 0 else f"{len(leaf)} weights (shape {leaf.shape})"
                raise ValueError(f"{what}: sample_weight has {got} but there are {n} samples; give one weight "
                                 f"per sample, an array of shape ({n},).")
        labels = self._known_output_labels()
        if isinstance(sw, (list, dict)) and labels is not None and len(labels) > 1:
            _by_output(sw, self._known_output_keys(labels), self._output_names(), f"{what}: sample_weight",
                       "weight arrays")
        return sw

    def _step_weights(self, class_weight, sample_weight, x, y, what, own_step=False):
        """The sample weights ``train_step`` gets for ``(x, y)``: from ``class_weight`` if given, else
        ``sample_weight`` (checked); a ``train_step(x, y, ...)`` of one's own must then take them (one
        that takes ``data`` finds them in it)."""
        if class_weight is not None:
            sample_weight = self._class_weights(class_weight, x, y, what)
        if sample_weight is not None and not own_step:
            _check_takes_sample_weight(self.train_step, what)
        return sample_weight

    def _class_weights(self, class_weight, x, y, what) -> np.ndarray:
        """One weight per sample from ``class_weight = {class index: weight}``, as Keras 3's
        ``class_weight_to_sample_weights``: the class of a sample is its label (rounded) or, for one-hot
        labels, the position of its largest entry; classes left out of the dict weigh 1.

        Refused, before anything runs: a model with several outputs (as
        Keras 3), labels with more than one class per sample, keys that are
        not whole numbers or lie outside the classes, weights that are not
        numbers. The classes are ``0 … k − 1`` for one-hot labels with ``k``
        columns, else for a model output with ``k > 1`` columns (found by
        predicting the first sample); 0 and 1 for one output column.
        """
        if not isinstance(class_weight, dict):
            raise ValueError(f"{what}: class_weight must be a dict {{class index: weight}}, e.g. {{0: 1.0, 1: 5.0}}; "
                             f"got {type(class_weight).__name__} {class_weight!r:.40}.")
        if isinstance(y, (list, dict)):
            raise ValueError(f"{what}: class_weight is only for a model with one output (as Keras 3); this one has "
                             f"{len(y)}. Pass sample_weight with one weight array per output instead.")
        if y.dtype.kind not in "biuf":
            raise TypeError(f"{what}: class_weight needs numeric labels in y, got dtype {y.dtype}.")
        if y.ndim > 1 and y.shape[-1] != 1:
            classes, source = y.shape[-1], f"one-hot labels with {y.shape[-1]} columns"
            labels = np.argmax(y, axis=-1)
        else:
            labels = y[..., 0] if y.ndim > 1 else y
            out = np.asarray(_first(self.predict(_take(x, slice(0, 1)))))
            width = out.shape[-1] if out.ndim > 1 else 1
            classes = width if width > 1 else 2
            source = f"the model's output with {width} columns" if width > 1 else "one output column (0 and 1)"
        if labels.ndim != 1:
            raise ValueError(f"{what}: class_weight needs one class per sample: labels of shape (n,), (n, 1) or "
                             f"one-hot (n, classes); y has shape {y.shape}. Use sample_weight for other shapes.")
        table = {}
        for key, value in class_weight.items():
            try:
                index = int(key)
                whole = isinstance(key, str) or float(key) == index
            except (TypeError, ValueError):
                whole = False
            if isinstance(key, (bool, np.bool_)) or not whole:
                raise ValueError(f"{what}: class_weight keys must be class indices (whole numbers), got {key!r}.")
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"{what}: class_weight[{key!r}] must be a number, got {value!r:.40}.")
            table[index] = float(value)
        outside = sorted(k for k in table if not 0 <= k < classes)
        if outside:
            raise ValueError(f"{what}: class_weight has keys {outside} outside the classes 0 to {classes - 1} "
                             f"({source}). Number the classes from 0, as the labels are.")
        lookup = np.ones(classes)
        lookup[list(table)] = list(table.values())
        labels = np.round(labels).astype(np.int64)
        inside = (labels >= 0) & (labels < classes)
        weights = np.ones(len(labels))
        weights[inside] = lookup[labels[inside]]
        return weights

    def evaluate(self, x, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False):
        """The compiled loss (plus ``model.losses``) and metrics over ``(x, y)``, without training.

        ``sample_weight`` (one weight per sample) weights the loss as in
        :meth:`fit`; the loss returned is the mean of the batch losses,
        each counted by its number of samples (Keras 3); of the metrics,
        only the ``weighted_metrics`` are weighted. Returns the loss (a
        float) when it is the only value, else a list in Keras 3's order:
        ``[loss, metric, ...]`` for one output, ``[loss, a_loss, b_loss,
        then the outputs' metrics in sorted order]`` for outputs ``a`` and
        ``b``; or a dict with ``return_dict=True``.
        ``verbose`` ("auto" or 1) prints one summary line.

        ``x`` may be a generator (any iterator) of batches ``(x, y)`` or
        ``(x, y, sample_weight)`` as in :meth:`fit` (then without ``y``,
        ``batch_size`` or ``sample_weight``); ``steps`` (a positive integer)
        stops after that many batches, else it is read to its end. With
        arrays, ``steps`` evaluates the first ``steps`` batches (batches of
        ``ceil(n / steps)`` samples when ``batch_size`` is not given, as
        Keras 3). Either way, running out before ``steps`` batches warns.

        It starts by resetting every metric of :attr:`metrics`, then calls
        :meth:`test_step` on each batch (a ``test_step(self, data)`` of
        one's own included) and returns the last batch's logs (Keras 3).
        ``callbacks`` (a callback or a list of them) get, as in Keras 3,
        ``on_test_begin()``, ``on_test_batch_begin(i)`` and
        ``on_test_batch_end(i, logs)`` for each batch, ``on_test_end(logs)``
        with the logs returned; one that sets ``model.stop_evaluating =
        True`` ends the evaluation after that batch.
        For a model with several outputs the dict also holds each output's
        loss (``<output>_loss``); the list form leaves them out, so ``loss
        = model.evaluate(x, ys)`` stays one number (Keras 3 would append
        them).
        """
        own_step = _overrides(self, "test_step")
        if own_step:
            if not _takes_data(self.test_step):
                raise TypeError(f"evaluate: {type(self).__name__}.test_step must take one argument besides self, "
                                "data = (x, y) or (x, y, sample_weight), and return a dict of logs (Keras 3's form: "
                                "def test_step(self, data)).")
        self._require_compiled("evaluate")
        x_alone = own_step or self._takes_x_alone("test_step")
        steps = _steps(steps, "evaluate", "steps")
        cbs = callbacks if isinstance(callbacks, callbacks_module.CallbackList) else None
        callbacks = [] if cbs is not None else callbacks_module.as_list(callbacks, "evaluate")
        if _is_batches(x):
            _refuse_with_batches("evaluate", y=y, batch_size=batch_size, sample_weight=sample_weight)
            batches = _Batches(self, x, "evaluate", steps, step="test_step", own_step=x_alone)
        else:
            x, y = self._x(x), None if y is None else self._y(y)
            _refuse_missing_y(y, x_alone, sample_weight, None, "evaluate", "test_step")
            n = _same_length(x, y, "evaluate")
            sample_weight = self._sample_weight(sample_weight, n, "evaluate")
            batches = _ArrayBatches(x, y, sample_weight, _batch_size(batch_size, "evaluate", n, steps), steps)
        if cbs is None:
            cbs = callbacks_module.CallbackList(callbacks, self, {"epochs": 1, "steps": batches.steps,
                                                                  "verbose": verbose})
        result, n = _test_batches(self, batches.epoch(), cbs)
        if batches.ran_out and steps is not None:
            warnings.warn(batches.ran_out_message(), UserWarning, stacklevel=engine.user_stacklevel())
        if verbose == "auto" or verbose:
            print(f"{n} samples - {callbacks_module.format_logs(result)}")
        return self._returned(result, return_dict)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One optimizer step on ``(x, y)`` taken as one batch (Keras 3); the batch's loss and metrics.

        The values are those of the forward pass before the step, as ``fit``
        logs them; returned as :meth:`evaluate` returns them (the loss alone
        without metrics, else ``[loss, metric, ...]``, or a dict).
        ``sample_weight`` and ``class_weight`` are those of :meth:`fit`.
        """
        own_step = _takes_data(self.train_step)
        self._require_compiled("train_on_batch")
        _refuse_class_and_sample_weight(class_weight, sample_weight, "train_on_batch")
        x, y = self._x(x), None if y is None else self._y(y)
        _refuse_missing_y(y, own_step or self._takes_x_alone("train_step"), sample_weight, class_weight,
                          "train_on_batch", "train_step")
        n = _same_length(x, y, "train_on_batch")
        sample_weight = self._sample_weight(sample_weight, n, "train_on_batch")
        sample_weight = self._step_weights(class_weight, sample_weight, x, y, "train_on_batch", own_step)
        self._reset_all_metrics()
        result = self._train_batch(x, y, sample_weight, own_step)
        return self._returned(result, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """:meth:`evaluate` on ``(x, y)`` as one batch, silently (Keras 3)."""
        x, y = self._x(x), None if y is None else self._y(y)
        n = _same_length(x, y, "test_on_batch")
        return self.evaluate(x, y, batch_size=max(n, 1), verbose=0, sample_weight=sample_weight,
                             return_dict=return_dict)

    def predict_on_batch(self, x):
        """:meth:`predict` on ``x`` as one batch (Keras 3)."""
        x = self._x(x)
        return self.predict(x, batch_size=max(_length(x, "predict_on_batch"), 1))

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None):
        """The model's outputs for ``x`` as numpy arrays (a list or dict of them for several
        outputs), computed batch by batch (nothing recorded).

        ``x`` may be a generator (any iterator) of batches, as Keras 3: each
        item is ``x`` alone, ``(x,)``, ``(x, y)`` or ``(x, y,
        sample_weight)`` (only ``x`` is used); then without ``batch_size``.
        ``steps`` (a positive integer) stops after that many batches (with
        arrays: the first ``steps`` batches, of ``ceil(n / steps)`` samples
        when ``batch_size`` is not given, as Keras 3).

        ``verbose`` defaults to 0 here (Keras prints a bar): a prediction is quick.

        ``callbacks`` (a callback or a list of them) get, as in Keras 3,
        ``on_predict_begin()``, ``on_predict_batch_begin(i)`` and
        ``on_predict_batch_end(i, {"outputs": batch outputs})`` for each
        batch (numpy arrays, in the model's output structure), then
        ``on_predict_end()``; one that sets ``model.stop_predicting = True``
        ends the prediction after that batch.
        """
        steps = _steps(steps, "predict", "steps")
        callbacks = callbacks_module.as_list(callbacks, "predict")
        if _is_batches(x):
            _refuse_with_batches("predict", batch_size=batch_size)
            batches = _Batches(self, x, "predict", steps, step=None)
        else:
            x = self._x(x)
            n = _length(x, "predict")
            batches = _ArrayBatches(x, None, None, _batch_size(batch_size, "predict", n, steps), steps)
        cbs = callbacks_module.CallbackList(callbacks, self, {"epochs": 1, "steps": batches.steps,
                                                              "verbose": verbose})
        parts, n = [], 0
        self.stop_predicting = False
        cbs.on_predict_begin()
        with engine.paused():
            for step, (xb, _, _) in enumerate(batches.epoch()):
                cbs.on_predict_batch_begin(step)
                out = self(xb, training=False)
                leaves, rebuild = flatten(out)
                parts.append([o._value for o in leaves])
                n += _batch_len(xb)
                cbs.on_predict_batch_end(step, {"outputs": rebuild(parts[-1])})
                if self.stop_predicting:
                    break
        cbs.on_predict_end()
        if batches.ran_out and steps is not None:
            warnings.warn(batches.ran_out_message(), UserWarning, stacklevel=engine.user_stacklevel())
        if verbose:
            print(f"{n} samples predicted")
        if not parts:
            return np.empty((0,))
        return rebuild([np.concatenate(p) for p in zip(*parts)])

    def _data(self, data, what, several=False):
        """Numpy arrays in the structure given; ``several``: a list is one array per input/output."""
        if several and isinstance(data, (list, tuple)):
            return [_data(d, f"{what}[{i}]") for i, d in enumerate(data)]
        return _data(data, what)

    def _x(self, data, what="x"):
        return self._data(data, what)

    def _y(self, data, what="y"):
        return self._data(data, what)


class Sequential(Model):
    """A stack of layers, each feeding the next, as ``keras.Sequential``.

        >>> model = adv.Sequential([adv.layers.Input((4,)), adv.layers.Dense(8, activation="relu"),
        ...                         adv.layers.Dense(1)])
        >>> [w.name for w in model.weights]
        ['dense/kernel', 'dense/bias', 'dense_1/kernel', 'dense_1/bias']

    With an ``Input`` first (or ``input_shape=`` on the first layer) the
    model is built at once; otherwise on its first call.
    """

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
        from .saving import sequential_config
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
                x = constant(self._array(x), dtype=dtype)
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
        layers, seen = [], set()
        for t in in_leaves:
            layer = t._keras_history[0].layer if t._keras_history else None
            if isinstance(layer, InputLayer) and id(layer) not in seen:
                seen.add(id(layer))
                layers.append(layer)
        for node in self._nodes:
            if id(node.layer) not in seen:
                seen.add(id(node.layer))
                layers.append(node.layer)
        self._functional_layers = layers
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
        from .saving import functional_config
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
    _summary_head = ("Layer (type)", "Output Shape", "Param #", "Connected to")

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
        return rows


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


_LOSS_FORMS: dict = {}


def _loss_form(fn) -> str:
    """How a ``compute_loss`` of one's own is called (looked up once per function):
    ``"x, training"`` or ``"x"`` for Keras 3's form (first parameter ``x``), ``"y"`` for ``(y, y_pred[, ...])``."""
    key = getattr(fn, "__func__", fn)
    form = _LOSS_FORMS.get(key)
    if form is None:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        if next(iter(params), None) != "x":
            form = "y"
        elif "training" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            form = "x, training"
        else:
            form = "x"
        _LOSS_FORMS[key] = form
    return form


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


def _checked_metric_specs(metrics, what):
    """``compile(metrics=...)`` (or ``weighted_metrics``): a list or dict whose every metric is known, or []."""
    if metrics is not None and not isinstance(metrics, (list, tuple, dict)):
        raise TypeError(f"compile: {what} must be a list (e.g. {what}=[{metrics!r}]), or for a model with "
                        f"several outputs a dict keyed by output name ({what}={{'out': [...]}}); got "
                        f"{type(metrics).__name__} {metrics!r:.40}. Nothing was compiled.")
    specs = metrics or []
    for entry in _values(specs):
        for m in entry if isinstance(entry, (list, tuple)) else [entry]:
            metrics_module.check(m)
    return specs


def _values(struct) -> list:
    """The entries of a list or a dict."""
    return list(struct.values()) if isinstance(struct, dict) else list(struct)


def _metric_plan(specs, labels, what="metrics") -> list:
    """``[(output index, log-name prefix, metric spec)]`` for ``compile(metrics=specs)`` (``what``: or
    ``weighted_metrics``) and the outputs ``labels``.

    One output (``labels == [None]``): a list of metrics (or a dict, whose
    values are used), logged under their own names. Several outputs, as
    Keras 3: a dict keyed by output name or a list with one list per
    output, logged as ``<output>_<metric>``; a flat list is an error that
    shows both forms, since it does not say which output it measures.
    """
    def entries(value):
        return list(value) if isinstance(value, (list, tuple)) else [] if value is None else [value]

    if not specs:
        return []
    if labels == [None]:
        if isinstance(specs, dict):
            flat = [m for v in specs.values() for m in entries(v)]
        elif len(specs) == 1 and isinstance(specs[0], (list, tuple)):
            flat = list(specs[0])
        else:
            flat = list(specs)
        return [(0, "", m) for m in flat]
    n = len(labels)
    if isinstance(specs, dict):
        unknown = [k for k in specs if k not in labels]
        if unknown:
            raise ValueError(f"compile: {what} has keys {unknown} that are not outputs of the model; its outputs "
                             f"are {labels}. Key the dict by those names. Nothing was compiled.")
        per_output = [entries(specs.get(label)) for label in labels]
    elif all(isinstance(s, (list, tuple)) or s is None for s in specs):
        if len(specs) != n:
            raise ValueError(f"compile: {what} has {len(specs)} lists for the {n} outputs {labels}; give one list "
                             "per output ([] for none), or a dict keyed by output name. Nothing was compiled.")
        per_output = [entries(s) for s in specs]
    else:
        shown = [m if isinstance(m, str) else getattr(m, "name", None) or getattr(m, "__name__", "metric")
                 for m in specs if not isinstance(m, (list, tuple))]
        as_dict = {label: shown if i == 0 else [] for i, label in enumerate(labels)}
        as_lists = [shown if i == 0 else [] for i in range(n)]
        raise ValueError(f"compile: the model has {n} outputs {labels}, so {what} must say which output each "
                         f"metric measures: a dict keyed by output name, e.g. {what}={as_dict}, or a list with one "
                         f"list per output, e.g. {what}={as_lists}. Got {what}={specs!r:.80} (Keras 3 refuses "
                         "it too). Nothing was compiled.")
    return [(i, f"{labels[i]}_", m) for i, ms in enumerate(per_output) for m in ms]


def _unknown_where_different(a, b):
    """Shapes ``a`` and ``b`` (or nested lists/tuples of them) with ``None`` wherever they differ."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(isinstance(n, (int, type(None))) for n in a + b):
        return tuple(n if n == m else None for n, m in zip(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return type(a)(_unknown_where_different(x, y) for x, y in zip(a, b))
    return a if a == b else None


def path_of(filepath, what: str, ending: str) -> str:
    """``filepath`` (a str or ``pathlib.Path``) as a str, or a TypeError naming ``what`` and the ``ending``
    the file needs (``'.npz'`` for weights, ``'.keras'`` for a whole model)."""
    try:
        path = os.fspath(filepath)
    except TypeError:
        raise TypeError(f"{what}: the file must be a path (str or pathlib.Path) ending in '{ending}', got "
                        f"{type(filepath).__name__}.") from None
    if not isinstance(path, str):
        raise TypeError(f"{what}: the file must be a path (str or pathlib.Path) ending in '{ending}', got bytes.")
    return path


def run_build_batch(model, shapes: list) -> None:
    """Build ``model`` by running one batch of zeros of each of ``shapes`` through it (``None`` → 1).

    Nothing is recorded, the call is marked as a build batch (zeros are not data: a layer's warnings
    about the data do not apply), and the layers forget the outputs it made.
    """
    batch = [np.zeros(tuple(1 if n is None else n for n in shape), dtype=model.dtype) for shape in shapes]
    outer, _calls.building = _calls.building, True
    try:
        with engine.paused():
            model(batch if len(batch) > 1 else batch[0])
    finally:
        _calls.building = outer
    for layer in [model, *model._all_layers()]:
        layer._output = None


def _write_npz(target, arrays: dict) -> None:
    """Write ``{key: array}`` as an ``.npz`` archive (numpy's format, no pickle) to a path or a binary file:
    the weights file of ``save_weights``, and the weights inside a ``.keras`` file."""
    np.savez(target, **arrays)


def _read_npz(path, what="load_weights", file=None,
              expected="an .npz archive written by model.save_weights()") -> dict:
    """The arrays of an ``.npz`` weights file, or a :class:`WeightsFileError` that says what is wrong.

    ``file``: a binary file object to read instead of ``path`` (a member of a ``.keras`` archive); ``path``
    then only names it in messages.
    """
    if file is None and not os.path.exists(path):
        raise FileNotFoundError(f"{what}: {path} does not exist (expected {expected}).")
    if file is None and os.path.isdir(path):
        raise WeightsFileError(f"{what}: {path} is a directory, not {expected}.")
    try:
        f = np.load(path if file is None else file, allow_pickle=False)
        if not hasattr(f, "files"):
            raise WeightsFileError(f"{what}: {path} holds a single array, not {expected} "
                                   "(one array per weight).")
        with f:
            return {k: f[k] for k in f.files}
    except WeightsFileError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise WeightsFileError(f"{what}: {path} is not a readable .npz (zip) archive ({exc}); expected "
                               f"{expected}. Nothing was loaded.") from None
    except ValueError as exc:
        if "pickle" in str(exc):
            raise WeightsFileError(f"{what}: {path} holds pickled Python objects, which are never loaded "
                                   f"(they can run code); expected {expected}, with numeric arrays only. "
                                   "Nothing was loaded.") from None
        raise WeightsFileError(f"{what}: {path} could not be read as {expected} ({exc}). "
                               "Nothing was loaded.") from None


# ---------------------------------------------------------------------------
# whole models: Keras 3's keras.models functions (the work is in adv.saving)
# ---------------------------------------------------------------------------
def save_model(model, filepath, overwrite=True) -> None:
    """``model.save(filepath)`` as a function (Keras 3's ``keras.models.save_model``)."""
    from .saving import save_model as save
    save(model, filepath, overwrite=overwrite)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a ``.keras`` file written by ``model.save``: see :func:`autodiff_viz.saving.load_model`."""
    from .saving import load_model as load
    return load(filepath, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode)


def model_from_json(json_string, custom_objects=None, safe_mode=True):
    """A model from ``model.to_json()``'s string, with fresh weights: see
    :func:`autodiff_viz.saving.model_from_json`."""
    from .saving import model_from_json as from_json
    return from_json(json_string, custom_objects=custom_objects, safe_mode=safe_mode)


def clone_model(model):
    """A new model with the same architecture and freshly initialised weights, as Keras 3's ``clone_model``:
    see :func:`autodiff_viz.saving.clone_model`."""
    from .saving import clone_model as clone
    return clone(model)


# ---------------------------------------------------------------------------
# data: arrays, or lists/dicts of arrays for several inputs or outputs
# ---------------------------------------------------------------------------
def _is_batches(data) -> bool:
    """Whether ``data`` is a generator (an iterator, or an iterable that is neither an array nor a
    sequence) of batches, which ``fit``/``evaluate``/``predict`` read one item at a time; or a dataset
    (``adv.data.Dataset``, known by its ``element_spec``), which has a length but is read the same way."""
    if _is_dataset(data):
        return True
    return hasattr(data, "__next__") or (hasattr(data, "__iter__") and not isinstance(data, (list, tuple, str, bytes))
                                         and not hasattr(data, "__array__") and not hasattr(data, "__len__"))


def _is_dataset(data) -> bool:
    """An ``adv.data.Dataset`` (or anything iterable with tf.data's ``element_spec``): re-iterable."""
    return hasattr(type(data), "element_spec") and hasattr(data, "__iter__")   # on the type: no property runs


def _refuse_with_batches(what, **given) -> None:
    """The arguments a generator of batches replaces, refused when given with one (as Keras 3)."""
    for name, value in given.items():
        if value is None or (name == "validation_split" and not value):
            continue
        fix = {"y": "the targets come from the generator: yield (x, y) batches and call "
                    f"{what}(batches) without y",
               "sample_weight": "the weights come from the generator: yield (x, y, sample_weight) batches",
               "batch_size": "the generator makes the batches: yield batches of the size you want (for an "
                             "adv.data.Dataset, batch it: dataset.batch(32))",
               "validation_split": "a generator cannot be split: pass validation_data=(x_val, y_val) or a "
                                   "second generator of validation batches"}[name]
        shown = f"{name} (an array of shape {np.shape(value)})" if np.ndim(value) else f"{name}={value!r:.40}"
        raise ValueError(f"{what}: {shown} cannot be given with a generator (or Dataset) of batches as x "
                         f"(Keras 3 refuses it too); {fix}.")


def _check_validation_freq(value) -> None:
    """``fit(validation_freq=...)``: a positive integer or a list of epochs (1-based), as Keras 3."""
    if isinstance(value, list) and all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in value):
        return
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1:
        return
    raise ValueError(f"fit: validation_freq must be a positive integer (validate every n epochs) or a list of "
                     f"epochs counted from 1 (e.g. [1, 3]), as Keras 3; got {type(value).__name__} {value!r:.40}.")


def _should_validate(epoch, validation_freq) -> bool:
    """Whether fit validates after ``epoch`` (0-based), as Keras 3's ``_should_eval``: epochs count from 1."""
    if isinstance(validation_freq, list):
        return epoch + 1 in validation_freq
    return (epoch + 1) % validation_freq == 0


def _steps(value, what, name):
    """``steps_per_epoch``/``validation_steps``/``steps``: None, or checked to be a positive integer."""
    return None if value is None else positive_int(what, name, value)


def _test_batches(model, batches, cbs):
    """``(logs, samples)``: :meth:`Model.test_step` on each ``(x, y, sample_weight)`` of ``batches`` after
    resetting the metrics; the logs are the last step's (the metrics' results when there was no batch).
    The callbacks ``cbs`` (a ``CallbackList``) get Keras 3's ``on_test_*`` hooks around it."""
    model.stop_evaluating = False
    cbs.on_test_begin()
    model._reset_all_metrics()
    result, n = None, 0
    try:
        # with the ops' records (lineage): the loss of a final sigmoid/softmax reads the logits off them,
        # as fit's does (clipped probabilities would give 15.9 where fit logs 25); one user line for all
        with engine.paused(lineage=True), engine.shared_location():
            for step, (x, y, sample_weight) in enumerate(batches):
                cbs.on_test_batch_begin(step)
                result = _step_logs(model.test_step(_packed(x, y, sample_weight)), "test_step(self, data)")
                n += _batch_len(x)
                model._forget_outputs()
                cbs.on_test_batch_end(step, result)
                if model.stop_evaluating:
                    break
    finally:
        model._forget_outputs()
    if result is None:
        result = _step_logs(model.get_metrics_result(), "get_metrics_result()")
    cbs.on_test_end(result)
    return result, n


class _ArrayBatches:
    """The mini-batches ``(x, y, sample_weight)`` of arrays, as Keras 3's ``ArrayDataAdapter`` read by its
    ``EpochIterator``: a pass over the data is ``ceil(n / batch_size)`` batches in one order (a new
    permutation of the samples per pass when shuffling). Without ``steps`` an epoch is one pass. With
    ``steps`` an epoch takes that many batches and the pass goes on in the next epoch; a pass that ends
    before the epoch does ends the epoch (``ran_out``), and the next epoch starts a new pass."""

    def __init__(self, x, y, sample_weight, batch_size, steps=None, shuffle=False, rng=None):
        self._data, self._batch_size = (x, y, sample_weight), batch_size
        self._n = _length(x, "x")
        self._shuffle, self._rng = shuffle, rng
        self.per_pass = -(-self._n // batch_size)
        self.steps = steps or self.per_pass
        self.ran_out = False
        self._order, self._next = None, 0

    def epoch(self):
        self.ran_out = False
        for _ in range(self.steps):
            if self._order is None:
                self._order = self._rng.permutation(self._n) if self._shuffle else np.arange(self._n)
                self._next = 0
            if self._next >= self.per_pass:
                self.ran_out, self._order = True, None
                return
            idx = self._order[self._next * self._batch_size:(self._next + 1) * self._batch_size]
            self._next += 1
            yield tuple(_take(d, idx) for d in self._data)
        if self._order is not None and self._next >= self.per_pass:
            self._order = None

    def ran_out_message(self, epoch=None) -> str:
        where = f"epoch {epoch} ran" if epoch is not None else "it ran"
        return (f"Your input ran out of data: the arrays make {self.per_pass} batches of {self._batch_size} per "
                f"pass, and steps={self.steps} asked for more; {where} to the end of the pass (the next epoch "
                "starts a new one), as Keras 3. Pass steps_per_epoch (steps) at most the number of batches.")


class _Batches:
    """The batches of a generator (any iterator) given as ``x``, drawn one item at a time and checked
    before their step; ``epoch()`` yields ``(x, y, sample_weight)`` as numpy arrays.

    ``steps``: the items one epoch draws (the iterator goes on across
    epochs, as Keras 3's ``EpochIterator`` with ``steps_per_epoch``); None:
    up to the end of the iterator. ``ran_out`` tells afterwards whether it
    ended first. ``step`` is the step the batches go to (``"train_step"`` or
    ``"test_step"``; None: ``predict``, only ``x`` is used): the built-in
    ones need ``y``, one's own (``own_step``) also takes ``x`` alone.
    ``keep``: without ``steps``, keep the batches of the first pass and give
    them again once the iterator is used up (fit's validation generator).
    """

    def __init__(self, model, source, what, steps, step, own_step=False, class_weight=None, keep=False):
        self._model, self._what, self._step, self._own_step = model, what, step, own_step
        self._class_weight = class_weight
        # a Dataset without steps is read anew each epoch (Keras 3); with steps its iterator goes on
        self._dataset = source if steps is None and _is_dataset(source) else None
        if getattr(source, "_one_sample_per_element", False):     # from_tensor_slices(...) without .batch()
            warnings.warn(f"{what}: the Dataset gives one sample per element (it was never batched), and each "
                          "element is taken as a batch, as in Keras. Add .batch(32) to it, e.g. "
                          "Dataset.from_tensor_slices((x, y)).shuffle(1000).batch(32).", UserWarning,
                          stacklevel=engine.user_stacklevel())
        self._it = None if self._dataset is not None else iter(source)
        self.steps = steps
        self.drawn = 0
        self.ran_out = False
        self._kept = [] if keep and steps is None and self._dataset is None else None
        self._replay = False

    def epoch(self):
        self.ran_out = False
        if self._dataset is not None:
            self._it = iter(self._dataset)
        if self._replay:
            yield from self._kept
            return
        count = 0
        while self.steps is None or count < self.steps:
            try:
                item = next(self._it)
            except StopIteration:
                self.ran_out = True
                self._replay = bool(self._kept)
                return
            self.drawn += 1
            batch = self._parts(item)
            if self._kept is not None:
                self._kept.append(batch)
            count += 1
            yield batch

    def ran_out_message(self, epoch=None) -> str:
        if self.steps is None:
            return (f"Your input ran out of data; interrupting training. The generator was used up "
                    f"({self.drawn} batches in all) and gave no batch for epoch {epoch}: a generator is read "
                    "once. Make it loop over the data forever (while True: ...) and pass steps_per_epoch=, or "
                    "train for fewer epochs.")
        where = f"epoch {epoch}" if epoch is not None else "this call"
        stop = "; interrupting training" if self._step == "train_step" else ""
        return (f"Your input ran out of data{stop}. The generator gave {self.drawn} batches in all, fewer than "
                f"{where} needed (steps={self.steps}, drawn from the same iterator in every epoch). Make sure it "
                "can generate at least steps * epochs batches, e.g. loop over the data forever (while True: ...), "
                "or for an adv.data.Dataset add .repeat().")

    def _parts(self, item):
        """``(x, y, sample_weight)`` of one item, converted and checked (``what``: batch number, got, forms)."""
        alone = self._step is None or self._own_step
        forms = "(x, y) or (x, y, sample_weight)" + (", or x alone (or (x,))" if alone else "")
        where = f"{self._what}: batch {self.drawn} from the generator"
        if isinstance(item, tuple) and 1 <= len(item) <= 3:
            x, y, sample_weight = (*item, None, None)[:3]
        elif isinstance(item, (Tensor, np.ndarray)) or (hasattr(item, "__array__") and
                                                        not isinstance(item, (list, dict, str, bytes))):
            x, y, sample_weight = item, None, None
        else:
            if isinstance(item, dict):
                got, hint = f"a dict with keys {sorted(map(str, item))}", \
                    " Named inputs go in a dict as x inside the tuple: ({'name': array, ...}, y)."
            elif isinstance(item, list):
                got, hint = f"a list of {len(item)}", " Yield a tuple, e.g. (x, y), not a list."
            elif isinstance(item, tuple):
                got, hint = f"a tuple of {len(item)}", ""
            else:
                got, hint = f"{type(item).__name__} {item!r:.40}", ""
            raise TypeError(f"{where} is {got}; each batch must be {forms}.{hint}")
        if self._step is None:
            return self._model._x(x, f"{where}: x"), None, None
        if y is None and (not self._own_step or sample_weight is not None or self._class_weight is not None):
            got = f"x alone (shape {np.shape(_data(x, where))})" if not isinstance(item, tuple) \
                else f"a tuple of {len(item)} without y"
            if sample_weight is not None or self._class_weight is not None:
                need = "sample weights go with targets"
            else:
                need = f"the built-in {self._step} computes the compiled loss against y (only a " \
                       f"{self._step}(self, data) of your own takes x alone)"
            raise ValueError(f"{where} is {got}; {need}: each batch must be {forms}.")
        x = self._model._x(x, f"{where}: x")
        y = None if y is None else self._model._y(y, f"{where}: y")
        n = _same_length(x, y, where)
        if sample_weight is not None:
            if self._class_weight is not None:
                raise ValueError(f"{where} brings sample weights and class_weight was given; they cannot be used "
                                 "together (as Keras 3). Fold the class weights into the generator's "
                                 "sample_weight, or leave out class_weight.")
            sample_weight = self._model._sample_weight(sample_weight, n, where)
        if self._step == "train_step":
            sample_weight = self._model._step_weights(self._class_weight, sample_weight, x, y, where,
                                                      self._own_step)
        return x, y, sample_weight


def _data(data, what):
    """Numpy arrays in the structure given: one array, or a list/tuple/dict of arrays."""
    if isinstance(data, Tensor):
        return data._value
    if isinstance(data, dict):
        return {k: _data(v, f"{what}[{k!r}]") for k, v in data.items()}
    if _is_batches(data):
        raise TypeError(f"{what}: got a {type(data).__name__} of batches where arrays are expected. A generator of "
                        "batches goes in x itself: fit(batches), evaluate(batches), predict(batches), each batch "
                        "(x, y) or (x, y, sample_weight) (validation_data=batches for validation); elsewhere "
                        "collect the arrays first, e.g. np.concatenate([xb for xb, yb in batches]).")
    if isinstance(data, (list, tuple)) and data and all(isinstance(d, (np.ndarray, Tensor)) for d in data):
        shapes = {np.shape(d._value if isinstance(d, Tensor) else d) for d in data}
        if len(shapes) > 1:
            return [_data(d, f"{what}[{i}]") for i, d in enumerate(data)]
    try:
        arr = np.asarray(data)
    except ValueError as exc:
        if "inhomogeneous" not in str(exc):
            raise
        raise ValueError(f"{what}: its nested lists have different lengths (a ragged array), so it is not one "
                         "array of samples. Give a rectangular array (pad the short rows), or one array per "
                         "input in a list for a model with several inputs.") from None
    if arr.ndim == 0:
        raise ValueError(f"{what}: got one value ({type(data).__name__} {data!r:.40}), not an array of samples. "
                         f"Give an array with one row per sample, e.g. np.asarray(rows, dtype='float32') of shape "
                         "(samples, features).")
    return arr




def _takes_data(step) -> bool:
    """Whether a bound ``train_step``/``test_step`` has Keras 3's form ``step(data)``: one parameter."""
    try:
        params = inspect.signature(step).parameters.values()
    except (TypeError, ValueError):
        return False
    return len([p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]) == 1


def _overrides(model, name) -> bool:
    """Whether the class of ``model`` defines its own method ``name`` (not :class:`Model`'s)."""
    return getattr(type(model), name) is not getattr(Model, name)


def _packed(x, y, sample_weight):
    """What a step of one's own gets as ``data``, as Keras 3's ``pack_x_y_sample_weight``: ``(x, y)``,
    ``(x, y, sample_weight)``, or without targets ``x`` itself (a list of inputs: ``(x,)``)."""
    if y is None:
        return (x,) if isinstance(x, (list, tuple)) else x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def _refuse_missing_y(y, own_step, sample_weight, class_weight, what, step) -> None:
    """Without ``y`` only a step of one's own can run (a GAN's ``train_step(self, data)`` gets the batch of
    ``x`` alone, as in Keras 3); sample or class weights need targets. Checked before anything runs."""
    if y is not None:
        return
    if not own_step:
        raise ValueError(f"{what}: y (the targets) is missing. The built-in {step} computes the compiled loss "
                         f"against y: pass {what}(x, y, ...). Only a {step}(self, data) of your own may go without "
                         "y; its data is then the batch of x alone, as in Keras 3.")
    if sample_weight is not None or class_weight is not None:
        given = "sample_weight" if sample_weight is not None else "class_weight"
        raise ValueError(f"{what}: {given} without y: weights go with targets (data = (x, y, sample_weight)). "
                         f"Pass y too, or leave out {given} (Keras 3 would drop it without a word).")


def _unpack_data(data, what, need_y=True):
    """``(x, y, sample_weight)`` from ``data`` = ``(x, y)`` or ``(x, y, sample_weight)`` (Keras 3's
    ``unpack_x_y_sample_weight``, with y required: these steps compute a loss against it). ``need_y=False``
    (no compiled loss or metrics): ``data`` may also be ``x`` alone or ``(x,)``, as :func:`_packed` gives."""
    if isinstance(data, list):
        data = tuple(data)
    if not need_y and not isinstance(data, tuple):
        return data, None, None
    if not need_y and len(data) == 1:
        return data[0], None, None
    if not isinstance(data, tuple) or len(data) not in (2, 3) or data[1] is None:
        got = f"a tuple of {len(data)}" if isinstance(data, tuple) else type(data).__name__
        raise ValueError(f"{what}(data): data must be (x, y) or (x, y, sample_weight), got {got}. Called by hand, "
                         f"it is model.{what}((x, y)).")
    return data if len(data) == 3 else (*data, None)


def _batch_len(x) -> int:
    """The number of samples in a batch: the length of its first array (or tensor)."""
    first = flatten(x)[0][0]
    return int(np.shape(first._value if isinstance(first, Tensor) else first)[0])


def _step_logs(logs, what) -> dict:
    """The logs a step returned, as ``{name: float}``: numbers and 0-d (or one-entry) tensors and arrays
    become floats; a nested dict (``compile_metrics``' result) is flattened into the top level, as Keras 3's
    ``pythonify_logs`` does. Anything else is a TypeError that names the step and says what to return."""
    if not isinstance(logs, dict):
        hint = (" A step that returns (loss, y_pred) takes (self, x, y, sample_weight=None) instead of (self, data)."
                if isinstance(logs, tuple) and len(logs) == 2 else "")
        raise TypeError(f"{what} returned {type(logs).__name__}, not a dict of logs. Return a dict "
                        "{name: value}, e.g. {m.name: m.result() for m in self.metrics} or "
                        f"self.compute_metrics(x, y, y_pred, sample_weight).{hint}")
    out = {}
    for key, value in logs.items():
        if isinstance(value, dict):
            out.update(_step_logs(value, what))
            continue
        raw = value._value if isinstance(value, Tensor) else value
        try:
            number = None if raw is None or isinstance(raw, str) else np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError):
            number = None
        if number is None or number.size != 1:
            if number is not None:
                got = f"an array of shape {number.shape}"
            elif hasattr(value, "result"):
                got = f"the metric object {type(value).__name__}; return its .result()"
            else:
                got = f"{type(value).__name__} {value!r:.40}"
            raise TypeError(f"{what} returned logs[{key!r}] = {got}. Each log is one number (a float, a 0-d tensor, "
                            "a metric's result()); reduce an array first (e.g. its mean).")
        out[key] = float(number.reshape(()))
    return out


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
        made = type(cls.__name__, (cls, Functional), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _FUNCTIONAL_SUBCLASSES[cls] = made
    return made


class _DeprecatedCompiledMetrics:
    """What ``model.compiled_metrics`` gives (see :attr:`Model.compiled_metrics`)."""

    def __init__(self, model):
        self._model = model

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        warnings.warn("model.compiled_metrics is deprecated, as in Keras 3. Use: for metric in self.metrics: "
                      "metric.update_state(y, y_pred) (or return self.compute_metrics(x, y, y_pred, sample_weight)).",
                      UserWarning, stacklevel=engine.user_stacklevel())
        compiled = self._model._compile_metrics
        if compiled is not None:
            compiled.update_state(y_true, y_pred, sample_weight)

    def __iter__(self):
        compiled = self._model._compile_metrics
        return iter(compiled.metrics if compiled is not None else [])

    def __len__(self):
        return len(list(iter(self)))


class _CompileMetrics:
    """The metrics of ``compile(metrics=...)`` as one object named ``"compile_metrics"``, as Keras 3's
    ``CompileMetrics``: ``update_state(y, y_pred, sample_weight=None)`` adds a batch to each metric (of
    the output it measures), ``result()`` is ``{log name: value}`` (``{"mae": 0.3}``, or
    ``{"cls_accuracy": ...}`` per output), ``reset_state()`` resets them all. The metric objects are made
    at the first update, when the shapes of ``y`` and ``y_pred`` pick the flavour of ``"accuracy"``.
    ``sample_weight`` goes to the metrics of ``weighted_metrics=`` only."""

    name = "compile_metrics"

    def __init__(self, model):
        self._model = model
        self.plan = None

    @property
    def built(self) -> bool:
        return self.plan is not None

    @property
    def metrics(self) -> list:
        return [m for _, _, m, _ in self.plan or []]

    def build(self, y_true, y_pred) -> None:
        self.plan = self._model._make_metrics(y_true, y_pred)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        if self.plan is None:
            self.build(y_true, y_pred)
        self._model._update_metrics(self.plan, y_true, y_pred, sample_weight)

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def result(self) -> dict:
        return {name: m.result() for _, name, m, _ in self.plan or []}

    def __repr__(self):
        return f"<compile_metrics {[name for _, name, _, _ in self.plan or []]}>"


def _batch_size(value, what, n=None, steps=None) -> int:
    """``batch_size`` checked to be a positive integer; when None, as Keras 3: ``ceil(n / steps)`` when a
    number of ``steps`` is given for ``n`` samples, else 32."""
    if value is None:
        return max(-(-n // steps), 1) if steps and n else 32
    return positive_int(what, "batch_size", value)


def _length(data, what) -> int:
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else [(None, data)]
    sizes = {k: len(np.atleast_1d(a)) for k, a in items}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"[{k!r}] has {n}" for k, n in sizes.items())
        raise ValueError(f"{what}: every array needs the same number of samples; {listed}.")
    return next(iter(sizes.values()))


def _take(data, idx):
    if data is None:
        return None
    if isinstance(data, dict):
        return {k: v[idx] for k, v in data.items()}
    if isinstance(data, list):
        return [v[idx] for v in data]
    return data[idx]


def _same_length(x, y, what) -> int:
    """The number of samples of ``x``, checked against ``y``'s (``y`` None: there are no targets)."""
    nx = _length(x, f"{what} (x)")
    if y is None:
        return nx
    ny = _length(y, f"{what} (y)")
    if nx != ny:
        raise ValueError(f"{what}: x has {nx} samples but y has {ny}; they must match.")
    return nx


def _by_output(y, keys, names, what, kind="target arrays", partial=None):
    """``{output key: y_true}`` from a list (by position) or a dict (by output key or name).

    ``partial``: the keys of the outputs that have a loss, when only some
    do; the others may then be left out (they get None), as Keras 3's
    ``CompileLoss`` reads a ``y`` with the targets of those outputs only.
    """
    if isinstance(y, dict):
        out = {}
        for i, k in enumerate(keys):
            key = k if k in y else names[i] if names and names[i] in y else None
            if key is None and partial is not None and k not in partial:
                out[k] = None
                continue
            if key is None:
                raise ValueError(f"{what}: no targets for output {names[i] if names else k!r}; got keys {sorted(y)}.")
            out[k] = y[key]
        return out
    if isinstance(y, (list, tuple)) and len(y) == len(keys):
        return dict(zip(keys, y))
    if partial is not None and isinstance(y, (list, tuple)) and len(y) == len(partial):
        return {k: y[partial.index(k)] if k in partial else None for k in keys}
    if partial is not None and len(partial) == 1 and not isinstance(y, (list, tuple)):
        return {k: y if k in partial else None for k in keys}
    labels = [names[keys.index(k)] if names else k for k in partial] if partial is not None else None
    also = (f", or the {len(partial)} of the outputs that have a loss ({labels}), in that order"
            if partial is not None else "")
    raise ValueError(f"{what}: the model has {len(keys)} outputs{f' {names}' if names else ''}; give a list of "
                     f"{len(keys)} {kind}{also} (or a dict keyed by output name).")


def _checked_loss_weights(loss_weights):
    """``compile(loss_weights=...)`` with every entry a float: None, a number, or a list/dict of numbers."""
    def number(value, where):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            hint = " Metrics go to metrics=[...] (the third argument, as in Keras 3, is loss_weights)." \
                if isinstance(value, str) else ""
            raise TypeError(f"compile: loss_weights{where} must be a number (the factor of that output's loss), "
                            f"got {type(value).__name__} {value!r:.40}.{hint} Nothing was compiled.")
        return float(value)
    if loss_weights is None:
        return None
    if isinstance(loss_weights, dict):
        return {k: number(v, f"[{k!r}]") for k, v in loss_weights.items()}
    if isinstance(loss_weights, (list, tuple)):
        return [number(v, f"[{i}]") for i, v in enumerate(loss_weights)]
    return number(loss_weights, "")


def _loss_weight_list(loss_weights, labels, aliases, what, tail=""):
    """One factor (or None: no ``loss_weights``) per output for ``compile(loss_weights=...)``.

    ``labels`` name the outputs in errors; ``aliases`` are the keys a dict
    may use for each (see :meth:`Model._output_aliases`). A list needs one
    number per output and a dict one entry per output, as Keras 3; a
    number applies to every output.
    """
    n = len(labels)
    if loss_weights is None or not isinstance(loss_weights, (list, dict)):
        return [loss_weights] * n
    if isinstance(loss_weights, list):
        if len(loss_weights) != n:
            raise ValueError(f"{what}: loss_weights has {len(loss_weights)} entries for the {n} output"
                             f"{'s' if n > 1 else ''} {labels}; give one number per output (in that order), or a "
                             f"dict keyed by output name.{tail}")
        return list(loss_weights)
    if n == 1 and not aliases[0]:
        if len(loss_weights) != 1:
            raise ValueError(f"{what}: loss_weights has {len(loss_weights)} entries {sorted(map(str, loss_weights))} "
                             f"but the model has one output; give one number.{tail}")
        return list(loss_weights.values())
    unknown = [k for k in loss_weights if not any(k in a for a in aliases)]
    missing = [labels[i] for i, a in enumerate(aliases) if not any(k in loss_weights for k in a)]
    if unknown or missing:
        problem = f"keys {unknown} that are not outputs of the model" if unknown else f"no entry for {missing}"
        raise ValueError(f"{what}: loss_weights has {problem}; the model's outputs are {labels}. Give one number "
                         f"per output name (1.0 keeps a loss as it is).{tail}")
    return [loss_weights[next(k for k in loss_weights if k in a)] for a in aliases]


def _refuse_class_and_sample_weight(class_weight, sample_weight, what) -> None:
    if class_weight is not None and sample_weight is not None:
        raise ValueError(f"{what}: class_weight and sample_weight cannot be given together (Keras 3 refuses it "
                         "too). Multiply them yourself: sample_weight * np.array([class_weight[c] for c in "
                         "labels]).")


def _check_takes_sample_weight(train_step, what) -> None:
    """A ``train_step`` of one's own must take ``sample_weight`` for ``fit`` to pass sample weights."""
    try:
        params = inspect.signature(train_step).parameters
    except (TypeError, ValueError):
        return
    if "sample_weight" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise TypeError(f"{what}: sample_weight (or class_weight) was given, but this model's train_step takes "
                        f"({', '.join(params)}); add a sample_weight=None parameter and pass it to "
                        "self.compute_loss(y, y_pred, sample_weight).")


def _sum(terms):
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _first(y_pred):
    if isinstance(y_pred, dict):
        return next(iter(y_pred.values()))
    return y_pred[0] if isinstance(y_pred, (list, tuple)) else y_pred


def _bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
