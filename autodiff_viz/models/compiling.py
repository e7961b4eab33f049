"""``model.compile`` and what it sets up: the loss, its weights per output, the metrics (Keras 3's ``Trainer.compile``).

:class:`Compiling` is a mixin of :class:`~autodiff_viz.models.Model`: it
keeps the optimizer, the loss and the metrics ``compile`` was given, and
computes ``compute_loss`` / ``compute_metrics`` for ``train_step`` and
``test_step``, one loss and metric per output where a model has several.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from .. import losses, optimizers
from .. import metrics as metrics_module
from ..base.state import is_package_code, user_stacklevel
from .data_adapters import _batch_len


class Compiling:
    """``compile`` and the losses and metrics it sets up (a mixin of :class:`Model`)."""

    # ----- training -------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1, jit_compile="auto",
                auto_scale_loss=True) -> None:
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
            run_eagerly, steps_per_execution, jit_compile, auto_scale_loss: Keras 3's, accepted and
                stored (``model.run_eagerly``, ``model.jit_compile``: ``"auto"`` is ``False``, as Keras 3 on
                the TensorFlow backend). They change nothing here: every step already runs eagerly, op by
                op, one batch at a time, in the model's own dtype.
        """
        if not isinstance(steps_per_execution, int) or isinstance(steps_per_execution, bool) \
                or steps_per_execution < 1:
            raise ValueError(f"compile: steps_per_execution must be a positive int, got {steps_per_execution!r}.")
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
        self.run_eagerly, self.jit_compile = bool(run_eagerly), jit_compile is True
        self.steps_per_execution = steps_per_execution
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
                      UserWarning, stacklevel=user_stacklevel())
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
        if getattr(fn, "__func__", None) is Compiling.compute_loss:
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


def _overrides(model, name) -> bool:
    """Whether the class of ``model`` has a method ``name`` of its own (written outside the package, not the one
    :class:`Model` and its mixins give)."""
    return not is_package_code(getattr(type(model), name))


class _DeprecatedCompiledMetrics:
    """What ``model.compiled_metrics`` gives (see :attr:`Model.compiled_metrics`)."""

    def __init__(self, model):
        self._model = model

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        warnings.warn("model.compiled_metrics is deprecated, as in Keras 3. Use: for metric in self.metrics: "
                      "metric.update_state(y, y_pred) (or return self.compute_metrics(x, y, y_pred, sample_weight)).",
                      UserWarning, stacklevel=user_stacklevel())
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


def _sum(terms):
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _first(y_pred):
    if isinstance(y_pred, dict):
        return next(iter(y_pred.values()))
    return y_pred[0] if isinstance(y_pred, (list, tuple)) else y_pred
