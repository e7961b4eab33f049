"""The training loop: ``fit``, ``evaluate``, ``predict``, ``train_step`` (Keras 3's ``Trainer``).

:class:`Trainer` is a mixin of :class:`~autodiff_viz.models.Model`. ``fit``
is the loop a learner writes by hand — a tape around the forward pass and
the loss, ``tape.gradient`` for the trainable variables,
``optimizer.apply_gradients`` — run over batches and epochs with callbacks,
validation and a progress bar; :meth:`Trainer.train_step` is one step of it
and may be overridden.
"""
from __future__ import annotations

import inspect
import itertools
import warnings

import numpy as np

from .. import callbacks as callbacks_module
from ..base import interrupts, session
from ..base.state import paused, state, user_stacklevel
from ..base.structure import flatten
from ..core.tensor import Tensor, constant
from ..layers.base import positive_int
from ..records.tape import GradientTape, note_predict
from .compiling import Compiling, _by_output, _first, _overrides
from .data_adapters import (
    _ArrayBatches,
    _batch_len,
    _batch_size,
    _Batches,
    _check_validation_freq,
    _data,
    _is_batches,
    _length,
    _packed,
    _refuse_missing_y,
    _refuse_with_batches,
    _same_length,
    _should_validate,
    _step_logs,
    _steps,
    _take,
    _takes_data,
    _test_batches,
    _unpack_data,
)


class Trainer(Compiling):
    """``fit``, ``evaluate``, ``predict`` and their steps (a mixin of :class:`Model`)."""

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
        with interrupts.deferred():    # a Ctrl-C waits for the update and the constraints: a whole step or none
            if any(g is None for g in grads):   # fit's user has no tape: the optimizer's message carries the why
                from ..optimizers import explaining
                with explaining({id(v): tape.explain(loss, v) for v, g in zip(variables, grads) if g is None}):
                    self.optimizer.apply_gradients(zip(grads, variables))
            else:
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
        rng = np.random.default_rng(seed) if seed is not None else session.generator()
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
        interrupts.arm()     # Ctrl-C stops fit every time, between whole steps (see autodiff_viz.base.interrupts)
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
                                      stacklevel=user_stacklevel())
                        break
                    batches = itertools.chain([first], batches)
                self._reset_all_metrics()
                cbs.on_epoch_begin(epoch)
                logs = {}
                for step, (xb, yb, swb) in enumerate(batches):
                    interrupts.check()
                    cbs.on_train_batch_begin(step)
                    logs = self._train_batch(xb, yb, swb, own_step)
                    cbs.on_train_batch_end(step, logs)
                    if self.stop_training:     # Keras 3 checks after every batch
                        break
                if train.ran_out and steps_per_epoch is not None:
                    warnings.warn(train.ran_out_message(epoch - initial_epoch + 1), UserWarning,
                                  stacklevel=user_stacklevel())
                    if isinstance(train, _Batches):
                        self.stop_training = True
                validate = _should_validate(epoch, validation_freq)
                if val_batches is not None and validate:
                    val, seen = _test_batches(self, val_batches.epoch(), cbs)
                    if val_batches.ran_out and validation_steps is not None:
                        warnings.warn(val_batches.ran_out_message(epoch - initial_epoch + 1), UserWarning,
                                      stacklevel=user_stacklevel())
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
        except KeyboardInterrupt:
            interrupts.clear()
            raise
        finally:
            self._forget_outputs()
        interrupts.check()
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
            warnings.warn(batches.ran_out_message(), UserWarning, stacklevel=user_stacklevel())
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
        with paused(), interrupts.guard():
            for step, (xb, _, _) in enumerate(batches.epoch()):
                interrupts.check()
                cbs.on_predict_batch_begin(step)
                out = self(xb, training=False)
                leaves, rebuild = flatten(out)
                parts.append([o._value for o in leaves])
                n += _batch_len(xb)
                cbs.on_predict_batch_end(step, {"outputs": rebuild(parts[-1])})
                if self.stop_predicting:
                    break
        cbs.on_predict_end()
        if state.recording and parts:       # inside a tape: the numpy it returns has no history; say where it left
            note_predict(self, [np.concatenate(p) for p in zip(*parts)])
        if batches.ran_out and steps is not None:
            warnings.warn(batches.ran_out_message(), UserWarning, stacklevel=user_stacklevel())
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
