"""The data a model is trained on, in batches: arrays, generators and datasets (Keras 3's ``trainers/data_adapters``).

``fit``, ``evaluate`` and ``predict`` take numpy arrays (split into batches,
shuffled each epoch when asked), a generator or iterable of batches, or an
``adv.data.Dataset``; everything here turns one of those into the batches
of one epoch, with errors that name the argument and the fix (a batch size
given with a generator, labels of another length, a generator that ran dry).
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from ..base import interrupts
from ..base.state import paused, shared_location, user_stacklevel
from ..base.structure import flatten
from ..core.tensor import Tensor
from ..layers.base import positive_int


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
        with paused(lineage=True), shared_location(), interrupts.guard():
            for step, (x, y, sample_weight) in enumerate(batches):
                interrupts.check()
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
                          stacklevel=user_stacklevel())
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
