"""Models: ``adv.Model`` (subclass it) and ``adv.Sequential``, with Keras' training API.

    >>> model = adv.Sequential([adv.layers.Input((64,)),
    ...                         adv.layers.Dense(32, activation="relu"),
    ...                         adv.layers.Dense(10)])
    >>> model.compile(optimizer="adam", loss=adv.losses.SparseCategoricalCrossentropy(from_logits=True),
    ...               metrics=["accuracy"])
    >>> history = model.fit(x, y, epochs=10, validation_split=0.2)
    >>> model.evaluate(x_test, y_test)

A subclassed model tracks the layers it holds in attributes and runs each
inside its name scope, so ops recorded in ``model(x)`` carry paths such as
``my_model/dense_1``. ``fit`` is the loop you would write by hand — a tape
around the forward pass and the loss, ``tape.gradient`` for the trainable
variables, ``optimizer.apply_gradients`` — see :meth:`Model.train_step`.

Weights files are ``.npz`` archives (never pickle) whose keys are the
weights' paths *inside the model* (``dense/kernel``, ``dense_1/bias`` for a
Sequential; attribute names such as ``encoder/kernel`` for a subclassed
model), as in Keras 3's weights files. The keys do not depend on the
session-wide layer names, so a model built again in a new session (where its
layers may be ``dense_7``...) loads the file.
"""
from __future__ import annotations

import html
import inspect
import os

import numpy as np

from . import callbacks as callbacks_module
from . import engine, losses, metrics as metrics_module, optimizers
from .layers import initializers
from .layers.base import InputSpec, Layer, _default, _numbered
from .tape import GradientTape
from .tensor import Tensor


class Model(Layer):
    """A layer that holds layers, plus ``compile``/``fit``/``evaluate``/``predict``.

    Subclass it: create layers in ``__init__`` (after ``super().__init__()``)
    and use them in ``call``:

        >>> class MLP(adv.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.hidden = adv.layers.Dense(32, activation="relu")
        ...         self.out = adv.layers.Dense(10)
        ...     def call(self, x):
        ...         return self.out(self.hidden(x))

    Keras' functional API (``Model(inputs, outputs)``) does not exist here:
    every call runs on real values.
    """

    _autocast = False

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise TypeError("adv.Model(inputs, outputs) (Keras' functional API) is not supported: subclass "
                            "adv.Model and write call(), or use adv.Sequential([...]).")
        super().__init__(**kwargs)
        self.optimizer = None
        self.loss = None
        self.compiled_metrics = None
        self._metric_specs = []
        self.stop_training = False
        self.history = None

    # ----- structure --------------------------------------------------------
    @_default
    def build(self, input_shape):
        """Create every weight by running one batch of zeros through the model (``None`` → 1)."""
        shape = tuple(1 if s is None else int(s) for s in input_shape)
        with engine.paused():
            self(np.zeros(shape, dtype=self.dtype))
        for layer in [self, *self._all_layers()]:
            layer._output = None

    def _all_layers(self):
        out = []
        for layer in self.layers:
            out.append(layer)
            if isinstance(layer, Layer):
                out.extend(Model._all_layers(layer))
        return out

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
        tr, non = self._split_variables()

        def size(vs):
            n, b = sum(v.size for v in vs), sum(v._value.nbytes for v in vs)
            return f"{n:,} ({_bytes(b)})"
        return [("Total params", size(tr + non)), ("Trainable params", size(tr)), ("Non-trainable params", size(non))]

    def summary_text(self) -> str:
        """The summary as a text table (what ``summary()`` prints in a terminal)."""
        head = ("Layer (type)", "Output Shape", "Param #")
        rows = self._summary_rows()
        w = [max(len(r[i]) for r in [head, *rows]) + 2 for i in range(3)]

        def line(cells):
            return "│" + "│".join(f" {c:<{w[i] - 1}}" if i < 2 else f"{c:>{w[i] - 1}} " for i, c in enumerate(cells)) + "│"
        rule = lambda l, m, r, ch: l + m.join(ch * n for n in w) + r  # noqa: E731
        out = [f'Model: "{self.name}"', rule("┏", "┳", "┓", "━"), line(head).replace("│", "┃"),
               rule("┡", "╇", "┩", "━")]
        out += [line(r) for r in rows] or [line(("(no layers)", "", ""))]
        out.append(rule("└", "┴", "┘", "─"))
        out += [f" {k}: {v}" for k, v in self._summary_totals()]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        esc = html.escape
        body = "".join(f"<tr><td>{esc(a)}</td><td>{esc(b)}</td><td style='text-align:right'>{esc(c)}</td></tr>"
                       for a, b, c in self._summary_rows())
        totals = "".join(f"<div>{esc(k)}: {esc(v)}</div>" for k, v in self._summary_totals())
        return (f"<div class='adv-model-summary'><b>Model: &quot;{esc(self.name)}&quot;</b>"
                "<table><thead><tr><th>Layer (type)</th><th>Output Shape</th><th>Param #</th></tr></thead>"
                f"<tbody>{body}</tbody></table>{totals}</div>")

    def summary(self, print_fn=None) -> None:
        """Show the layers, their output shapes (from the latest call) and parameter counts.

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
        path = os.fspath(filepath)
        if not path.endswith(".npz"):
            raise ValueError(f"{what}: the file name must end in '.npz' (e.g. 'model.weights.npz'), got {path!r}.")
        return path

    def save_weights(self, filepath, overwrite=True) -> None:
        """Write every weight to an ``.npz`` file, keyed by its path inside the model."""
        path = self._check_path(filepath, "save_weights")
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"save_weights: {path} exists; pass overwrite=True to replace it.")
        paths = self._weights_or_error("save_weights")
        np.savez(path, **{k: v._value for k, v in paths.items()})

    def load_weights(self, filepath) -> None:
        """Read weights saved by ``save_weights``; on any mismatch nothing changes.

        Every weight of the model must be in the file with the same shape,
        and the file must hold no other weights; the error lists every
        problem at once.
        """
        path = self._check_path(filepath, "load_weights")
        paths = self._weights_or_error("load_weights")
        with np.load(path, allow_pickle=False) as f:
            stored = {k: f[k] for k in f.files}
        problems = [f"missing from the file: {k} {v.shape}" for k, v in paths.items() if k not in stored]
        problems += [f"in the file but not in the model: {k} {stored[k].shape}" for k in stored if k not in paths]
        problems += [f"{k}: the model has shape {v.shape}, the file {stored[k].shape}"
                     for k, v in paths.items() if k in stored and stored[k].shape != v.shape]
        if problems:
            raise ValueError(f"load_weights: {path} does not match {self.name}; nothing was loaded.\n  - "
                             + "\n  - ".join(problems))
        for k, v in paths.items():
            v.assign(stored[k])

    # ----- training -------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None) -> None:
        """Choose the optimizer, the loss and the metrics for ``fit`` and ``evaluate``.

        Args:
            optimizer: a name (``"adam"``, ``"sgd"``, ``"rmsprop"``) or an optimizer.
            loss: a name (``"mse"``, ``"sparse_categorical_crossentropy"`` ...),
                a loss object or a function ``f(y_true, y_pred)``.
            metrics: a list of names (``"accuracy"``) or functions.
        """
        self.optimizer = optimizers.get(optimizer)
        self.loss = None if loss is None else losses.get(loss)
        self._metric_specs = list(metrics or [])
        self.compiled_metrics = None

    def _require_compiled(self, what):
        if self.optimizer is None:
            raise RuntimeError(f"{what}: call model.compile(optimizer=..., loss=...) first.")
        if self.loss is None:
            raise ValueError(f"{what}: no loss to minimise; pass loss=... to model.compile().")

    def _metrics_for(self, y, y_pred):
        if self.compiled_metrics is None:
            self.compiled_metrics = [metrics_module.get(m, y, y_pred) for m in self._metric_specs]
        return self.compiled_metrics

    def compute_loss(self, y, y_pred, sample_weight=None):
        """The compiled loss of a batch (a scalar tensor)."""
        return self.loss(y, y_pred, sample_weight=sample_weight)

    def train_step(self, x, y):
        """One optimisation step on a batch; returns ``(loss, y_pred)``.

        This is the whole of what ``fit`` does per batch::

            with adv.GradientTape() as tape:
                y_pred = model(x, training=True)
                loss = model.compute_loss(y, y_pred)
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
        """
        with GradientTape() as tape:
            y_pred = self(x, **self._training_kwargs(True))
            loss = self.compute_loss(y, y_pred)
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return loss, y_pred

    def _training_kwargs(self, training):
        return {"training": training} if _accepts_training(self) else {}

    def fit(self, x, y, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, initial_epoch=0, seed=None):
        """Train for ``epochs`` passes over ``(x, y)`` in mini-batches.

        Args:
            batch_size: samples per step (32 by default, as Keras).
            verbose: ``"auto"``/1 a progress bar (a widget in notebooks), 2 one
                line per epoch, 0 silent.
            callbacks: e.g. ``[adv.callbacks.EarlyStopping(patience=3)]``.
            validation_split: the *last* fraction of the data (taken before
                shuffling, as Keras) is held out and evaluated after each epoch.
            validation_data: ``(x_val, y_val)`` instead.
            shuffle: shuffle the training samples each epoch.
            seed: seed for the shuffling (our addition; by default the
                generator of :func:`adv.layers.set_random_seed` is used).

        Returns:
            a :class:`~autodiff_viz.callbacks.History`; ``history.history``
            maps ``"loss"``, ``"accuracy"``, ``"val_loss"``... to per-epoch lists.
        """
        self._require_compiled("fit")
        x, y = _array(x, "x"), _array(y, "y")
        _same_length(x, y, "fit")
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise ValueError("fit: validation_data must be a pair (x_val, y_val).")
            x_val, y_val = _array(validation_data[0], "x_val"), _array(validation_data[1], "y_val")
        elif validation_split:
            if not 0.0 < validation_split < 1.0:
                raise ValueError(f"fit: validation_split must be between 0 and 1, got {validation_split}.")
            split = int(len(x) * (1.0 - validation_split))
            x, x_val, y, y_val = x[:split], x[split:], y[:split], y[split:]
        else:
            x_val = y_val = None
        if len(x) == 0:
            raise ValueError("fit: no training samples (after validation_split).")
        batch_size = int(batch_size or 32)
        steps = -(-len(x) // batch_size)
        verbose = 1 if verbose == "auto" else int(verbose)
        rng = np.random.default_rng(seed) if seed is not None else initializers.generator()
        history = callbacks_module.History()
        extra = [callbacks_module.ProgbarLogger(verbose)] if verbose else []
        cbs = callbacks_module.CallbackList([history, *extra, *(callbacks or [])], self,
                                            {"epochs": epochs, "steps": steps, "verbose": verbose})
        self.stop_training = False
        loss_mean = metrics_module.Mean("loss")
        cbs.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            loss_mean.reset_state()
            for m in self.compiled_metrics or []:
                m.reset_state()
            cbs.on_epoch_begin(epoch)
            order = rng.permutation(len(x)) if shuffle else np.arange(len(x))
            logs = {}
            for step in range(steps):
                idx = order[step * batch_size:(step + 1) * batch_size]
                cbs.on_train_batch_begin(step)
                loss, y_pred = self.train_step(x[idx], y[idx])
                loss_mean.update_state(loss._value, weight=len(idx))
                logs = {"loss": loss_mean.result()}
                for m in self._metrics_for(y[idx], y_pred):
                    m.update_state(y[idx], _first(y_pred))
                    logs[m.name] = m.result()
                cbs.on_train_batch_end(step, logs)
            if x_val is not None:
                val = self.evaluate(x_val, y_val, batch_size=batch_size, verbose=0, return_dict=True)
                logs.update({f"val_{k}": v for k, v in val.items()})
            cbs.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        cbs.on_train_end()
        self.history = history
        return history

    def evaluate(self, x, y, batch_size=None, verbose="auto", return_dict=False):
        """The compiled loss and metrics over ``(x, y)``, without training.

        Returns the loss (a float) when there are no metrics, else
        ``[loss, metric, ...]``, or a dict with ``return_dict=True``.
        ``verbose`` ("auto" or 1) prints one summary line.
        """
        if self.loss is None:
            raise ValueError("evaluate: compile the model with a loss first (model.compile(loss=...)).")
        x, y = _array(x, "x"), _array(y, "y")
        _same_length(x, y, "evaluate")
        batch_size = int(batch_size or 32)
        loss_mean = metrics_module.Mean("loss")
        ms = None
        with engine.paused():
            for start in range(0, len(x), batch_size):
                xb, yb = x[start:start + batch_size], y[start:start + batch_size]
                y_pred = self(xb)
                loss_mean.update_state(self.compute_loss(yb, y_pred)._value, weight=len(xb))
                if ms is None:
                    ms = [metrics_module.get(s, yb, y_pred) for s in self._metric_specs]
                    for m in ms:
                        m.reset_state()
                for m in ms:
                    m.update_state(yb, _first(y_pred))
        result = {"loss": loss_mean.result(), **{m.name: m.result() for m in ms or []}}
        if verbose == "auto" or verbose:
            print(f"{len(x)} samples - {callbacks_module.format_logs(result)}")
        if return_dict:
            return result
        return result["loss"] if len(result) == 1 else list(result.values())

    def predict(self, x, batch_size=None, verbose=0):
        """The model's outputs for ``x`` as numpy arrays, computed batch by batch (nothing recorded).

        ``verbose`` defaults to 0 here (Keras prints a bar): a prediction is quick.
        """
        x = _array(x, "x")
        batch_size = int(batch_size or 32)
        parts = []
        with engine.paused():
            for start in range(0, len(x), batch_size):
                out = self(x[start:start + batch_size])
                parts.append([o._value for o in out] if isinstance(out, (list, tuple)) else out._value)
        if verbose:
            print(f"{len(x)} samples predicted")
        if parts and isinstance(parts[0], list):
            return [np.concatenate(p) for p in zip(*parts)]
        return np.concatenate(parts) if parts else np.empty((0,))


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
        if isinstance(layer, InputSpec):
            if self._layers:
                raise ValueError(f"{self.name}: Input must come first, before any layer.")
            self._input_spec = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"{self.name}.add: expected a layer, got {type(layer).__name__}.")
        if not self._layers and self._input_spec is None and layer._input_shape_arg is not None:
            self._input_spec = InputSpec(layer._input_shape_arg)
        self._layers.append(layer)
        if self._input_spec is not None:
            self.build(self._input_spec.shape)

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._layers:
            raise IndexError(f"{self.name}.pop: there are no layers to remove.")
        return self._layers.pop()

    def _children(self):
        return _numbered("", self._layers)

    def call(self, inputs, training=None):
        x = inputs
        for layer in self._layers:
            x = layer(x, training=training) if _accepts_training(layer) else layer(x)
        return x


_TAKES_TRAINING: dict = {}


def _accepts_training(layer) -> bool:
    """Whether ``layer.call`` has a ``training`` parameter (looked up once per call function)."""
    fn = getattr(layer.call, "__func__", layer.call)
    known = _TAKES_TRAINING.get(fn)
    if known is None:
        try:
            known = "training" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            known = False
        _TAKES_TRAINING[fn] = known
    return known


def _array(data, what) -> np.ndarray:
    if isinstance(data, Tensor):
        return data._value
    if isinstance(data, (list, tuple)) and any(isinstance(d, (np.ndarray, Tensor)) for d in data) \
            and len({np.shape(d) for d in data}) > 1:
        raise TypeError(f"{what}: several input arrays (a multi-input model) are not supported; pass one array.")
    return np.asarray(data)


def _same_length(x, y, what):
    if len(x) != len(y):
        raise ValueError(f"{what}: x has {len(x)} samples but y has {len(y)}; they must match.")


def _first(y_pred):
    return y_pred[0] if isinstance(y_pred, (list, tuple)) else y_pred


def _bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
