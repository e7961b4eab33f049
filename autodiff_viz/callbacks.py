"""Callbacks for ``fit``: History, EarlyStopping, and the progress display.

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
import sys
import time
import warnings

import numpy as np


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
                            "instances of adv.callbacks.Callback (or a subclass, or any object with on_... hooks), e.g. "
                            "callbacks=[adv.callbacks.EarlyStopping(patience=3)].")
    return flat


def _is_callback(obj) -> bool:
    """A :class:`Callback`, or any object with a Keras hook (``on_epoch_end`` ...): the module's duck typing."""
    return isinstance(obj, Callback) or (not isinstance(obj, (list, tuple, dict, str, type)) and any(
        name.startswith("on_") and callable(getattr(obj, name, None)) for name in dir(obj)))


class CallbackList:
    """Calls one hook on every callback, in order."""

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
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}.")
        if mode == "auto":
            mode = "max" if any(k in monitor for k in ("acc", "auc", "precision", "recall")) else "min"
        self.monitor, self.mode = monitor, mode
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
            warnings.warn(f"EarlyStopping is watching {self.monitor!r}, which is not in the logs. Available: "
                          f"{sorted(logs or {})}. (val_* logs need validation_split or validation_data.)",
                          UserWarning, stacklevel=2)
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
        elif self.verbose == 1:
            self._write(f"Epoch {epoch + 1}/{self.epochs}\n")

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        now = time.perf_counter()
        if self.verbose != 1 or (now - self._last_draw < 0.1 and self._seen < self.steps):
            return
        self._last_draw = now
        if self.use_widget:
            self._bar.value = self._seen
            self._metrics.value = html.escape(format_logs(logs or {}))
        elif self._out.isatty():
            self._write("\r" + self._line(logs or {}, bar=True))

    def on_epoch_end(self, epoch, logs=None):
        line = self._line(logs or {}, bar=self.verbose == 1)
        if self.use_widget:
            self._bar.value = self.steps
            self._metrics.value = html.escape(format_logs(logs or {}))
            self._history.value += f"<div>Epoch {epoch + 1}/{self.epochs}: {html.escape(format_logs(logs or {}))}</div>"
        elif self.verbose == 1:
            self._write(("\r" if self._out.isatty() else "") + line + "\n")
        else:
            self._write(f"Epoch {epoch + 1}/{self.epochs}\n{line}\n")

    def _line(self, logs, bar):
        n, total = self._seen, max(self.steps, 1)
        elapsed = time.perf_counter() - self._start
        text = f"{n}/{total}"
        if bar:
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
        self._bar = w.IntProgress(value=0, min=0, max=max(self.steps, 1), layout=w.Layout(width="40%"))
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
