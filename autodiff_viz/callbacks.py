"""Callbacks for ``fit``: History, EarlyStopping, ModelCheckpoint, LearningRateScheduler,
ReduceLROnPlateau, LambdaCallback, CSVLogger, and the progress display.

A callback is an object with any of the Keras hooks
(``on_train_begin``, ``on_epoch_begin``, ``on_train_batch_end``,
``on_epoch_end``, ``on_train_end`` ...), each receiving a ``logs`` dict such
as ``{"loss": 0.31, "accuracy": 0.91, "val_loss": 0.35, ...}``. Set
``self.model.stop_training = True`` to stop: ``fit`` checks it after every
batch (the epoch then ends early: validation and ``on_epoch_end`` still run)
and after every epoch, as Keras 3.

The progress display is an ipywidgets bar in a notebook and plain text in a
terminal (redrawn in place only when the output is a terminal, so logs and
captured output get one line per epoch); ``verbose=0`` shows nothing.
"""
from __future__ import annotations

import html
import inspect
import os
import string
import sys
import time
import warnings

import numpy as np

from .base.state import user_stacklevel
from .optimizers import _real


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where widgets can be displayed)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


class Callback:
    """Base class: every hook does nothing. ``self.model`` and ``self.params`` are set by ``fit``.

    ``on_train_batch_begin``/``on_train_batch_end`` call the old Keras hooks
    ``on_batch_begin``/``on_batch_end``, so a callback written for those
    still runs (Keras does the same); override one pair or the other.
    """

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


def as_list(callbacks, what="fit") -> list:
    """The user's ``callbacks=``: one :class:`Callback` or a (nested) list of them, as a flat list.

    Keras flattens what it is given, so ``callbacks=EarlyStopping()`` works
    too. Anything else is refused here, before training starts, with the
    entry that is wrong and the form that works.
    """
    if callbacks is None:
        return []
    if _is_callback(callbacks):
        return [callbacks]
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"{what}: callbacks= takes a callback or a list of them, e.g. "
                        f"callbacks=[adv.callbacks.EarlyStopping(patience=3)], got {type(callbacks).__name__} "
                        f"{callbacks!r:.40}.")
    flat = []
    for i, cb in enumerate(callbacks):
        if isinstance(cb, (list, tuple)):
            flat += as_list(cb, what)
        elif _is_callback(cb):
            flat.append(cb)
        else:
            raise TypeError(f"{what}: callbacks[{i}] is {type(cb).__name__} {cb!r:.40}, not a callback. Give "
                            "instances of adv.callbacks.Callback (or a subclass, or any object with on_... "
                            "hooks), e.g. callbacks=[adv.callbacks.EarlyStopping(patience=3)].")
    return flat


def _is_callback(obj) -> bool:
    """A :class:`Callback`, or any object with a Keras hook (``on_epoch_end`` ...): the module's duck typing."""
    return isinstance(obj, Callback) or (not isinstance(obj, (list, tuple, dict, str, type)) and any(
        name.startswith("on_") and callable(getattr(obj, name, None)) for name in dir(obj)))


_LOGS_ONLY = frozenset({"on_train_begin", "on_train_end", "on_test_begin", "on_test_end", "on_predict_begin",
                        "on_predict_end"})     # hooks that take (logs); the others take (epoch or batch, logs)


class CallbackList:
    """Calls one hook on every callback, in order.

    Every hook gets its ``logs``, ``None`` when the caller has none (the
    begin hooks), as Keras' ``CallbackList`` passes them: a callback written
    ``def on_train_begin(self, logs):`` without a default runs too.
    """

    def __init__(self, callbacks, model, params):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if hasattr(cb, "set_model"):
                cb.set_model(model)
            else:
                cb.model = model
            if hasattr(cb, "set_params"):
                cb.set_params(params)
            else:
                cb.params = params

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def run(*args, **kwargs):
            if "logs" not in kwargs and len(args) < (1 if hook in _LOGS_ONLY else 2):
                args = args + (None,)
            for cb in self.callbacks:
                fn = getattr(cb, hook, None)
                if fn is not None:
                    fn(*args, **kwargs)
        return run


class History(Callback):
    """Records the logs of every epoch: ``history.history["val_loss"]`` is a list, one per epoch."""

    def __init__(self):
        super().__init__()
        self.history: dict = {}
        self.epoch: list = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


class EarlyStopping(Callback):
    """Stop training when a monitored value stops improving (Keras semantics).

    Args:
        monitor: the log to watch (``"val_loss"`` by default).
        min_delta: a change smaller than this does not count as improvement.
        patience: epochs without improvement before stopping.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (max for accuracy-like names).
        baseline: stop unless the value beats this within ``patience`` epochs.
        restore_best_weights: put back the weights of the best epoch at the end.
        start_from_epoch: epochs to wait before monitoring starts.
        verbose: 1 prints a line when it stops.
    """

    def __init__(self, monitor="val_loss", min_delta=0.0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.mode = monitor, _resolve_mode("EarlyStopping", mode, monitor)
        self.min_delta = abs(float(min_delta))
        self.patience, self.verbose, self.baseline = int(patience), verbose, baseline
        self.restore_best_weights, self.start_from_epoch = bool(restore_best_weights), int(start_from_epoch)

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
        self.best, self.best_weights = None, None

    def _improves(self, value, reference) -> bool:
        if reference is None:
            return True
        if self.mode == "min":
            return value + self.min_delta < reference
        return value - self.min_delta > reference

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            _warn_missing("EarlyStopping", self.monitor, logs, "it cannot tell whether to stop")
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improves(value, self.best):
            self.best, self.best_epoch = value, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improves(value, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


def _resolve_mode(owner, mode, monitor) -> str:
    """``"min"`` or ``"max"``; ``"auto"`` is ``"max"`` for accuracy-like names (acc, auc, precision, recall)."""
    if not isinstance(monitor, str):
        raise TypeError(f"{owner}: monitor must be the name of a log, e.g. 'val_loss' or 'accuracy', "
                        f"got {type(monitor).__name__} {monitor!r:.40}.")
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max', got {mode!r}. Use 'min' when lower is "
                         "better (a loss), 'max' when higher is better (accuracy), or 'auto' to decide by the name.")
    if mode == "auto":
        return "max" if any(k in monitor for k in ("acc", "auc", "precision", "recall")) else "min"
    return mode


def _beats(mode, value, best, min_delta=0.0) -> bool:
    """Is ``value`` better than ``best`` by more than ``min_delta`` (lower in mode ``"min"``, higher in ``"max"``)?"""
    return value < best - min_delta if mode == "min" else value > best + min_delta


def _warn_missing(owner, monitor, logs, consequence):
    """Warn (as Keras does, rather than fail mid-training) that ``monitor`` is not a key of ``logs``."""
    warnings.warn(f"{owner} is watching {monitor!r}, which is not in the logs, so {consequence}. Available: "
                  f"{sorted(logs or {})}. (val_* logs need validation_split or validation_data.)",
                  UserWarning, stacklevel=user_stacklevel())


def _settable_optimizer(owner, model):
    """The model's optimizer, if a callback may set its ``learning_rate`` to a number.

    A schedule (a callable of the step) already sets the rate at every step;
    replacing it with a number would silently drop it, so it is refused
    (Keras 3 refuses it too, with a TypeError).
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError(f"{owner}: the model has no optimizer with a learning_rate. Compile it first, e.g. "
                         "model.compile(optimizer=adv.optimizers.SGD(0.01), loss='mse').")
    rate = getattr(optimizer, "_learning_rate", None)
    if callable(rate):
        raise TypeError(f"{owner}: the optimizer's learning_rate is a schedule ({rate!r:.60}), which sets the "
                        f"rate at every step; {owner} would overwrite it with a number. Compile with a number "
                        f"(e.g. {type(optimizer).__name__}(learning_rate=0.01)) and let {owner} change it, or keep "
                        f"the schedule without {owner}.")
    return optimizer


def _log_learning_rate(cb, epoch, logs):
    """Add the optimizer's current rate to this epoch's logs as ``"learning_rate"``, as Keras 3 (``fit``
    runs the History after your callbacks, so ``history.history["learning_rate"]`` has one entry per epoch)."""
    if logs is not None:
        logs["learning_rate"] = float(cb.model.optimizer.learning_rate)


class ModelCheckpoint(Callback):
    """Save the model (or its weights) during ``fit``: every epoch, every ``save_freq`` batches, or only the best.

    As Keras 3: by default the whole model is written with ``model.save`` to
    a ``.keras`` file (architecture, weights, optimizer state; read back with
    ``adv.models.load_model``); with ``save_weights_only=True`` the weights
    alone, with ``model.save_weights``, to an ``.npz`` archive (Keras:
    ``.weights.h5``) read back with ``model.load_weights``. ``filepath`` may
    hold format fields filled at each save: ``{epoch}`` (counted from 1, as
    Keras), ``{batch}`` (from 1, with an integer ``save_freq``) and any log,
    e.g. ``"ckpt-{epoch:02d}-{val_loss:.2f}.keras"`` writes
    ``ckpt-03-0.41.keras`` after the third epoch. A fixed name is
    overwritten at each save. Missing folders are created.

    Args:
        filepath: where to save (str or ``pathlib.Path``), ending in
            ``.keras`` (or ``.npz`` with ``save_weights_only=True``).
        monitor: the log that decides "best" with ``save_best_only``.
        verbose: 1 prints a line at each save (and each skipped save).
        save_best_only: save only when ``monitor`` beats the best value so
            far (strictly: ``value < best`` in mode ``"min"``, ``value > best``
            in mode ``"max"``). The best is kept across ``fit`` calls, as Keras.
        save_weights_only: write the weights alone (``.npz``), not the whole model (``.keras``).
        mode: ``"min"``, ``"max"`` or ``"auto"`` (max for accuracy-like names).
        save_freq: ``"epoch"``, or a number of batches between saves (the
            count runs across epoch boundaries, as Keras).
        initial_value_threshold: the best value to beat at the start
            (with ``save_best_only``); by default any first value is saved.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        try:
            path = os.fspath(filepath)
        except TypeError:
            path = None
        if not isinstance(path, str):
            raise TypeError(f"ModelCheckpoint: filepath must be a path (str or pathlib.Path) ending in '.keras' "
                            f"(or '.npz' with save_weights_only=True), e.g. 'ckpt-{{epoch:02d}}.keras', got "
                            f"{type(filepath).__name__}.")
        if save_weights_only and not path.endswith(".npz"):
            keras = " ('.weights.h5' is Keras' format)" if path.endswith(".h5") else \
                " ('.keras' holds the whole model: leave save_weights_only False)" if path.endswith(".keras") else ""
            raise ValueError(f"ModelCheckpoint: with save_weights_only=True the filepath must end in '.npz', the "
                             f"format of model.save_weights{keras}; got {path!r}. Use e.g. "
                             "'ckpt-{epoch:02d}.weights.npz'.")
        if not save_weights_only and not path.endswith(".keras"):
            weights = " (an '.npz' file holds weights alone: pass save_weights_only=True)" \
                if path.endswith(".npz") else ""
            raise ValueError(f"ModelCheckpoint: the filepath must end in '.keras', the format of model.save (the "
                             f"whole model){weights}; got {path!r}. Use e.g. 'ckpt-{{epoch:02d}}.keras', or "
                             "save_weights_only=True with a name ending in '.npz'.")
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(path) if f is not None]
        except ValueError as exc:
            raise ValueError(f"ModelCheckpoint: filepath {path!r} is not a valid format string ({exc}). Fields "
                             "are written {epoch:02d} or {val_loss:.2f}; a literal brace is doubled: {{ }}.") from None
        if any(f == "" or f[0].isdigit() for f in fields):
            raise ValueError(f"ModelCheckpoint: filepath {path!r} has a positional field ({{}} or {{0}}); name "
                             "what goes there, e.g. {epoch:02d} or {val_loss:.2f}.")
        if not (save_freq == "epoch" or (isinstance(save_freq, (int, np.integer))
                                         and not isinstance(save_freq, bool) and save_freq > 0)):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive number of batches, "
                             f"got {save_freq!r}.")
        if initial_value_threshold is not None and not _real(initial_value_threshold):
            raise ValueError(f"ModelCheckpoint: initial_value_threshold must be None or a number, "
                             f"got {initial_value_threshold!r}.")
        self.filepath, self.monitor = path, monitor
        self.mode = _resolve_mode("ModelCheckpoint", mode, monitor)
        self.verbose, self.save_best_only = verbose, bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self.save_freq = save_freq if save_freq == "epoch" else int(save_freq)
        if initial_value_threshold is not None:
            self.best = float(initial_value_threshold)
        else:
            self.best = np.inf if self.mode == "min" else -np.inf
        self._current_epoch = 0
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._batches_seen_since_last_saving += batch + 1 if batch <= self._last_batch_seen \
            else batch - self._last_batch_seen
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _file_path(self, epoch, batch, logs) -> str:
        values = dict(logs or {})
        values["epoch"] = epoch + 1
        if batch is not None:
            values.setdefault("batch", batch + 1)
        try:
            return self.filepath.format(**values)
        except KeyError as exc:
            raise KeyError(f"ModelCheckpoint: filepath {self.filepath!r} has the field {{{exc.args[0]}}}, which "
                           f"has no value here. Available: {sorted(values)} ({{batch}} needs an integer "
                           "save_freq; val_* logs need validation_split or validation_data).") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"ModelCheckpoint: could not fill filepath {self.filepath!r} ({exc}). epoch and "
                             "batch are integers ({epoch:02d}), logged values are floats ({val_loss:.2f}).") from None

    def _should_save(self, epoch, logs, path) -> bool:
        if not self.save_best_only:
            if self.verbose:
                print(f"Epoch {epoch + 1}: saving model to {path}")
            return True
        current = (logs or {}).get(self.monitor)
        if current is None:
            _warn_missing("ModelCheckpoint", self.monitor, logs, "it cannot tell the best; saving anyway")
            return True
        if _beats(self.mode, current, self.best):
            if self.verbose:
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {current:.5f}, "
                      f"saving model to {path}")
            self.best = current
            return True
        if self.verbose:
            print(f"Epoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
        return False

    def _save(self, epoch, batch, logs):
        path = self._file_path(epoch, batch, logs)
        if not self._should_save(epoch, logs, path):
            return
        if os.path.isdir(path):
            ext = ".npz" if self.save_weights_only else ".keras"
            raise IsADirectoryError(f"ModelCheckpoint: {path!r} is a folder; give a file name ending in '{ext}' "
                                    f"(e.g. os.path.join(folder, 'ckpt-{{epoch:02d}}{ext}')).")
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of every epoch: ``lr ← schedule(epoch, lr)``.

    ``epoch`` counts from 0 and ``lr`` is the current rate, so
    ``lambda epoch, lr: lr * 0.9`` multiplies the rate by 0.9 each epoch
    (the first epoch too: it starts at 0.9 × the compiled rate), and
    ``lambda epoch, lr: 0.1 if epoch < 10 else 0.01`` switches once.
    ``schedule(epoch)`` with one argument also works (old Keras). At the end
    of each epoch the rate is logged as ``"learning_rate"``, so
    ``history.history["learning_rate"]`` holds the rate each epoch used.

    The optimizer must have a numeric rate, not a schedule of the step (a
    schedule already sets the rate at every step; see
    :mod:`autodiff_viz.optimizers`).

    Args:
        schedule: ``f(epoch, lr) -> new_lr`` (a number >= 0).
        verbose: 1 prints the new rate at each epoch.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError("LearningRateScheduler: schedule must be a function f(epoch, lr) -> new rate, e.g. "
                            f"lambda epoch, lr: lr * 0.9; got {type(schedule).__name__} {schedule!r:.40}.")
        if not (_accepts(schedule, 2) or _accepts(schedule, 1)):
            raise TypeError(f"LearningRateScheduler: schedule is called as schedule(epoch, lr) (or schedule(epoch)), "
                            f"but {schedule!r:.60} takes {inspect.signature(schedule)}. Write it as e.g. "
                            "lambda epoch, lr: lr * 0.9.")
        self.schedule, self.verbose = schedule, verbose
        self._takes_lr = _accepts(schedule, 2)

    def on_train_begin(self, logs=None):
        _settable_optimizer("LearningRateScheduler", self.model)

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        lr = float(optimizer.learning_rate)
        value = self.schedule(epoch, lr) if self._takes_lr else self.schedule(epoch)
        rate = _as_rate(value)
        if rate is None:
            call = f"schedule({epoch}, {lr})" if self._takes_lr else f"schedule({epoch})"
            raise ValueError(f"LearningRateScheduler: {call} returned {type(value).__name__} {value!r:.40}; it "
                             "must return the new learning rate, a finite number >= 0 (e.g. return lr * 0.9). "
                             "The rate was not changed.")
        optimizer.learning_rate = rate
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {rate}.")

    def on_epoch_end(self, epoch, logs=None):
        _log_learning_rate(self, epoch, logs)


def _accepts(fn, n: int) -> bool:
    """Can ``fn`` be called with ``n`` positional arguments? (True when Python cannot tell.)"""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*range(n))
    except TypeError:
        return False
    return True


def _as_rate(value):
    """``value`` as a learning rate (a finite float >= 0: a number, numpy scalar or 0-d tensor), else None."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or tuple(getattr(value, "shape", ())) != ():
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return None
    return rate if np.isfinite(rate) and rate >= 0 else None


class ReduceLROnPlateau(Callback):
    """Divide the learning rate when a monitored value stops improving (Keras semantics).

    At the end of each epoch: a value better than the best so far by more
    than ``min_delta`` (``value < best − min_delta`` in mode ``"min"``,
    ``value > best + min_delta`` in mode ``"max"``) becomes the best and
    resets the count. Otherwise, after ``patience`` epochs in a row without
    improvement, ``lr ← max(lr · factor, min_lr)`` (only while
    ``lr > min_lr``), and a cooldown starts so the smaller rate has time to
    act. Keras counts the cooldown down at the start of each later epoch's
    check and skips the epochs after which it is still above 0, so
    ``cooldown=N`` leaves ``N − 1`` epochs uncounted (``cooldown=1`` changes
    nothing). The rate of the epoch, before any reduction, is logged as
    ``"learning_rate"``.

    Example: ``patience=2, factor=0.5`` on a loss whose best is at epoch 3
    (counting from 1): epochs 4 and 5 do not improve, so after epoch 5 the
    rate halves.

    Args:
        monitor: the log to watch (``"val_loss"`` by default).
        factor: the multiplier, in ``[0, 1)``: ``0.1`` divides by 10.
        patience: epochs without improvement before the rate is reduced.
        verbose: 1 prints a line at each reduction.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (max for accuracy-like names).
        min_delta: a change smaller than this does not count as improvement.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: the rate never goes below this.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0):
        super().__init__()
        if not _real(factor) or not 0.0 <= factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be a number in [0, 1), got {factor!r}: the new rate "
                             "is lr * factor, so a factor >= 1 would never reduce it. Use e.g. factor=0.5 to "
                             "halve the rate, factor=0.1 to divide it by 10.")
        for name, value in (("patience", patience), ("cooldown", cooldown)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"ReduceLROnPlateau: {name} must be a whole number of epochs >= 0, got {value!r}.")
        if not _real(min_lr) or min_lr < 0:
            raise ValueError(f"ReduceLROnPlateau: min_lr (the lowest rate) must be a number >= 0, got {min_lr!r}.")
        if not _real(min_delta):
            raise ValueError(f"ReduceLROnPlateau: min_delta must be a number, got {min_delta!r}.")
        self.monitor, self.mode = monitor, _resolve_mode("ReduceLROnPlateau", mode, monitor)
        self.factor, self.min_lr, self.min_delta = float(factor), float(min_lr), abs(float(min_delta))
        self.patience, self.cooldown, self.verbose = int(patience), int(cooldown), verbose
        self._reset()

    def _reset(self):
        self.wait, self.cooldown_counter = 0, 0
        self.best = np.inf if self.mode == "min" else -np.inf

    def on_train_begin(self, logs=None):
        _settable_optimizer("ReduceLROnPlateau", self.model)
        self._reset()

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        _log_learning_rate(self, epoch, logs)
        current = (logs or {}).get(self.monitor)
        if current is None:
            _warn_missing("ReduceLROnPlateau", self.monitor, logs, "the learning rate is not reduced")
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if _beats(self.mode, current, self.best, self.min_delta):
            self.best, self.wait = current, 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                optimizer = self.model.optimizer
                old = float(optimizer.learning_rate)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    optimizer.learning_rate = new
                    if self.verbose:
                        print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0


_LAMBDA_HOOKS = {
    "on_train_begin": ("logs",), "on_train_end": ("logs",),
    "on_epoch_begin": ("epoch", "logs"), "on_epoch_end": ("epoch", "logs"),
    "on_train_batch_begin": ("batch", "logs"), "on_train_batch_end": ("batch", "logs"),
    "on_batch_begin": ("batch", "logs"), "on_batch_end": ("batch", "logs"),
    "on_test_begin": ("logs",), "on_test_end": ("logs",),
    "on_test_batch_begin": ("batch", "logs"), "on_test_batch_end": ("batch", "logs"),
    "on_predict_begin": ("logs",), "on_predict_end": ("logs",),
    "on_predict_batch_begin": ("batch", "logs"), "on_predict_batch_end": ("batch", "logs"),
}


class LambdaCallback(Callback):
    """A callback made of plain functions, one per hook, called with Keras' positional arguments.

        >>> LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch, logs["loss"]),
        ...                on_train_end=lambda logs: print("done"))

    ``on_epoch_begin``/``on_epoch_end`` get ``(epoch, logs)``, the batch hooks
    ``(batch, logs)``, ``on_train_begin``/``on_train_end`` get ``(logs)``;
    ``logs`` is None where ``fit`` has none yet (the begin hooks), and
    ``on_train_end`` gets the last epoch's logs, as Keras 3. ``on_batch_begin``
    and ``on_batch_end`` (old Keras names) may be given by keyword. Each
    function's argument count is checked here, before training.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        unknown = sorted(k for k in kwargs if k not in _LAMBDA_HOOKS)
        if unknown:
            raise TypeError(f"LambdaCallback: {', '.join(unknown)} is not a Keras hook. Hooks: "
                            f"{', '.join(_LAMBDA_HOOKS)}.")
        given = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in given.items():
            if fn is None:
                continue
            args = ", ".join(_LAMBDA_HOOKS[name])
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be a function called as f({args}), e.g. "
                                f"{name}=lambda {args}: ...; got {type(fn).__name__} {fn!r:.40}.")
            if not _accepts(fn, len(_LAMBDA_HOOKS[name])):
                raise TypeError(f"LambdaCallback: {name} is called as f({args}), as Keras, but {fn!r:.60} takes "
                                f"{inspect.signature(fn)}. Write it as {name}=lambda {args}: ...")
        self.functions = {name: fn for name, fn in given.items() if fn is not None}

    def _call(self, name, *args):
        fn = self.functions.get(name)
        if fn is not None:
            fn(*args)

    def on_train_batch_begin(self, batch, logs=None):
        if "on_train_batch_begin" in self.functions:
            self._call("on_train_batch_begin", batch, logs)
        else:
            self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        if "on_train_batch_end" in self.functions:
            self._call("on_train_batch_end", batch, logs)
        else:
            self.on_batch_end(batch, logs)


def _forwarding(hook: str, arity: int):
    """A :class:`LambdaCallback` method for ``hook`` that calls the given function with Keras' ``arity`` arguments."""
    def method(self, *args, logs=None):
        self._call(hook, *(args if len(args) == arity else args + (logs,)))
    method.__name__ = hook
    return method


for _hook, _args in _LAMBDA_HOOKS.items():
    if _hook not in ("on_train_batch_begin", "on_train_batch_end"):     # those fall back on the old batch names
        setattr(LambdaCallback, _hook, _forwarding(_hook, len(_args)))


class CSVLogger(Callback):
    """Each epoch's logs as one row of a CSV file, as ``keras.callbacks.CSVLogger``.

        >>> model.fit(x, y, epochs=5, callbacks=[adv.callbacks.CSVLogger("training.csv")])

    The columns are ``epoch`` and the logs' keys in sorted order, fixed by
    the first epoch; when that epoch has no ``val_`` keys, a ``val_`` column
    is added for each key (Keras 3 does this for ``validation_freq``), and a
    value an epoch does not log is written ``NA``. The file is opened when
    training begins (a folder that does not exist is an error then, before
    the first step), written and flushed after every epoch, and closed at
    the end.

    Args:
        filename: the CSV file.
        separator: the string between the values of a row.
        append: add rows to an existing file (resuming a run; no second
            header) instead of writing it anew.
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        if not isinstance(separator, str) or len(separator) != 1:
            raise ValueError(f"CSVLogger: separator must be one character, got {separator!r}, e.g. ',' or ';'.")
        self.sep, self.append = separator, bool(append)
        self.keys, self._file, self._writer = None, None, None

    def on_train_begin(self, logs=None):
        header = not (self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0)
        try:
            self._file = open(self.filename, "a" if self.append else "w", newline="", encoding="utf-8")
        except OSError as exc:
            raise OSError(f"CSVLogger: cannot open {self.filename!r} for writing ({exc.strerror}). Check that its "
                          "folder exists and can be written; nothing was trained.") from None
        self._header, self.keys, self._writer = header, None, None

    def on_epoch_end(self, epoch, logs=None):
        import csv
        logs = logs or {}
        if self._file is None:          # fit not begun through this callback (called by hand): open now
            self.on_train_begin()
        if self.keys is None:
            self.keys = sorted(logs)
            if not any(k.startswith("val_") for k in self.keys):
                self.keys += ["val_" + k for k in self.keys]
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch", *self.keys], delimiter=self.sep)
            if self._header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, _csv_value(logs.get(k, "NA"))) for k in self.keys)
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
        self._file, self._writer = None, None


def _csv_value(v):
    """A log value as the CSV shows it: numbers as they are, a 1-D array as ``"[1, 2]"`` (as Keras)."""
    if isinstance(v, np.ndarray) and v.ndim:
        return f"[{', '.join(map(str, v.ravel()))}]"
    return float(v) if isinstance(v, np.floating) else v


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------
def format_logs(logs: dict) -> str:
    return " - ".join(f"{k}: {_fmt(v)}" for k, v in logs.items())


def _fmt(v) -> str:
    return f"{v:.4f}" if isinstance(v, (float, np.floating)) else str(v)


class ProgbarLogger(Callback):
    """The progress of ``fit``: a widget in a notebook, text in a terminal.

    Args:
        verbose: 1 for a bar per epoch, 2 for one line per epoch.
        stream: where text goes (``sys.stdout`` at the time of writing by default).
        widget: force (True) or refuse (False) the ipywidgets display;
            None decides by whether this runs in a notebook.
    """

    def __init__(self, verbose=1, stream=None, widget=None):
        super().__init__()
        self.verbose = verbose
        self.stream = stream
        self.use_widget = (in_notebook() if widget is None else widget) and verbose == 1
        self.widget = None

    @property
    def _out(self):
        return self.stream or sys.stdout

    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs", 1)
        self.steps = self.params.get("steps", 0)
        if self.use_widget:
            self._make_widget()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        self._start = self._last_draw = time.perf_counter()
        self._seen = 0
        if self.use_widget:
            self._label.value = f"Epoch {epoch + 1}/{self.epochs}"
            self._bar.value = 0
        elif self.verbose == 1 and self.epochs > 1:       # Keras names the epoch only when there are several
            self._write(f"Epoch {epoch + 1}/{self.epochs}\n")

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        now = time.perf_counter()
        if self.verbose != 1 or (now - self._last_draw < 0.1 and (self.steps is None or self._seen < self.steps)):
            return
        self._last_draw = now
        if self.use_widget:
            self._bar.value = self._seen
            self._metrics.value = html.escape(format_logs(logs or {}))
        elif self._out.isatty():
            self._write("\r" + self._line(logs or {}, bar=True))

    def on_epoch_end(self, epoch, logs=None):
        if self.steps is None:          # a generator without steps_per_epoch: known after one epoch, as Keras
            self.steps = self._seen
            if self.use_widget:
                self._bar.max = max(self.steps, 1)
        line = self._line(logs or {}, bar=self.verbose == 1)
        if self.use_widget:
            self._bar.value = self.steps
            self._metrics.value = html.escape(format_logs(logs or {}))
            self._history.value += f"<div>Epoch {epoch + 1}/{self.epochs}: {html.escape(format_logs(logs or {}))}</div>"
        elif self.verbose == 1:
            self._write(("\r" if self._out.isatty() else "") + line + "\n")
        else:
            self._write((f"Epoch {epoch + 1}/{self.epochs}\n" if self.epochs > 1 else "") + f"{line}\n")

    def _line(self, logs, bar):
        n, total = self._seen, None if self.steps is None else max(self.steps, 1)
        elapsed = time.perf_counter() - self._start
        text = f"{n}/{'Unknown' if total is None else total}"
        if bar and total is not None:
            width = 20
            done = int(width * n / total)
            text += " " + "━" * done + "─" * (width - done)
        text += f" {elapsed:.0f}s {1000 * elapsed / max(n, 1):.0f}ms/step"
        if logs:
            text += " - " + format_logs(logs)
        return text

    def _write(self, text):
        self._out.write(text)
        self._out.flush()

    def _make_widget(self):
        import ipywidgets as w
        from IPython.display import display
        self._label = w.Label(value="")
        self._bar = w.IntProgress(value=0, min=0, max=max(self.steps or 1, 1), layout=w.Layout(width="40%"))
        self._metrics = w.HTML(value="")
        self._history = w.HTML(value="")
        self.widget = w.VBox([w.HBox([self._label, self._bar, self._metrics]), self._history])
        self._handle = display(self._bundle(), raw=True, display_id=True)

    def static_html(self) -> str:
        """The bar as plain HTML (no script): what an HTML export of the notebook shows instead of the widget."""
        n, total = self._bar.value, max(self._bar.max, 1)
        return (f'<div class="adv-progbar" style="font-family:Helvetica,Arial,sans-serif;font-size:13px">'
                f'<div>{html.escape(self._label.value)} <progress value="{n}" max="{total}"></progress> '
                f'{n}/{total} {self._metrics.value}</div>{self._history.value}</div>')

    def _bundle(self) -> dict:
        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["text/html"] = self.static_html()
        return bundle

    def on_train_end(self, logs=None):
        """Bring the saved output up to date: the live widget moved on, its static copy did not."""
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.update(self._bundle(), raw=True)
