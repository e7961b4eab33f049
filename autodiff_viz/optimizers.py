"""Optimizers with Keras 3 update rules: SGD, RMSprop, Adam, AdamW, Adagrad, Nadam.

    >>> opt = Adam(learning_rate=1e-3)
    >>> with adv.GradientTape() as tape:
    ...     loss = loss_fn()
    >>> grads = tape.gradient(loss, model.trainable_variables)
    >>> opt.apply_gradients(zip(grads, model.trainable_variables))

``apply_gradients`` is all-or-nothing: it checks every (gradient, variable)
pair first and changes no variable (and no optimizer state) if any pair is
wrong. A ``None`` gradient is skipped with a warning that names the
variable (the usual cause: the loss does not depend on it, or was computed
outside the tape).

Updates are plain numpy on the variables' values: an optimizer step is not
part of any graph (as in Keras, where it runs outside the tape).

``learning_rate`` is a number, or a schedule: a callable of the step count
(``lambda step: 0.1 * 0.5 ** (step // 100)``, or :class:`ExponentialDecay`),
or a callable with no arguments (Keras 3's convention).

``weight_decay`` (every optimizer, as Keras 3) is *decoupled* weight decay:
before the update, ``w ← w − lr·wd·w`` for every variable that has a
gradient (not an L2 term in the loss: Adam with ``weight_decay`` is
:class:`AdamW`, which only changes the default to ``0.004``).
``exclude_from_weight_decay`` leaves variables out (biases, norms).
"""
from __future__ import annotations

import inspect
import sys
import types
import warnings

import numpy as np

from .base import interrupts
from .base.state import user_stacklevel
from .core.tensor import Tensor, Variable
from .diagnosis import reasons
from .keras_base.serialization import constructor_config
from .records.tape import GradientTape


def _real(value) -> bool:
    """A finite real number (not a bool, not a string)?"""
    return (not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))
            and bool(np.isfinite(value)))


def _hyper(owner: str, name: str, value, low: float, high: float | None = None, high_open=False) -> float:
    """``value`` as a float in ``[low, high]`` (``[low, high)`` with ``high_open``), or a ValueError naming it."""
    if not _real(value) or value < low or (high is not None and (value >= high if high_open else value > high)):
        span = f"in [{low}, {high}{')' if high_open else ']'}" if high is not None else f">= {low}"
        raise ValueError(f"{owner}: {name} must be a number {span}, got {value!r}.")
    return float(value)


_BLOCK = 1 << 16


def _subtract_scaled(w: np.ndarray, g: np.ndarray, lr: float) -> None:
    """``w −= lr·g`` in place, in blocks: the temporary ``lr·g`` never exceeds 512 KB (float64)."""
    if w.size <= _BLOCK or not w.flags.c_contiguous:
        w -= lr * g
        return
    wf, gf = w.reshape(-1), np.ascontiguousarray(g).reshape(-1)
    for start in range(0, wf.size, _BLOCK):
        wf[start:start + _BLOCK] -= lr * gf[start:start + _BLOCK]


class LearningRateSchedule:
    """Base class of a learning rate that depends on the step, as ``keras.optimizers.schedules.LearningRateSchedule``.

    A subclass defines ``__call__(self, step)``, the rate for the optimizer's
    step ``step`` (0 for its first update, as Keras' ``iterations``); pass an
    instance as ``learning_rate=``. ``get_config`` gives its arguments.
    """

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(self, step) returning the rate.")

    def get_config(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_config().items())})"


def _positive(owner: str, name: str, value) -> float:
    """``value`` as a float > 0, or a ValueError naming ``owner`` and ``name``."""
    if not _real(value) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a number > 0, got {value!r}.")
    return float(value)


class _StepDecay(LearningRateSchedule):
    """What :class:`ExponentialDecay` and :class:`InverseTimeDecay` share: their arguments, and the progress
    ``step / decay_steps`` (floored with ``staircase``: the rate changes every ``decay_steps`` steps)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        owner = type(self).__name__
        self.initial_learning_rate = _hyper(owner, "initial_learning_rate", initial_learning_rate, 0.0)
        self.decay_steps = _positive(owner, "decay_steps", decay_steps)
        self.decay_rate = _hyper(owner, "decay_rate", decay_rate, 0.0)
        self.staircase = bool(staircase)

    def _progress(self, step):
        p = step / self.decay_steps
        return np.floor(p) if self.staircase else p


class ExponentialDecay(_StepDecay):
    """``initial_learning_rate · decay_rate ** (step / decay_steps)`` (the exponent floored with ``staircase``)."""

    def __call__(self, step):
        return self.initial_learning_rate * self.decay_rate ** self._progress(step)


class InverseTimeDecay(_StepDecay):
    """``initial_learning_rate / (1 + decay_rate · step / decay_steps)`` (``step / decay_steps`` floored with
    ``staircase``), as Keras."""

    def __call__(self, step):
        return self.initial_learning_rate / (1.0 + self.decay_rate * self._progress(step))


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` up to ``boundaries[0]`` (included), ``values[i]`` for steps in ``(boundaries[i-1],
    boundaries[i]]``, ``values[-1]`` after the last boundary, as Keras: ``PiecewiseConstantDecay([100, 200],
    [1.0, 0.5, 0.1])``."""

    def __init__(self, boundaries, values):
        boundaries, values = list(boundaries), list(values)
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: {len(boundaries)} boundaries need {len(boundaries) + 1} "
                             f"values (one per interval), got {len(values)}: e.g. PiecewiseConstantDecay([100, 200], "
                             "[1.0, 0.5, 0.1]).")
        if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase, got {boundaries}.")
        self.boundaries = [float(_hyper("PiecewiseConstantDecay", "a boundary", b, 0.0)) for b in boundaries]
        self.values = [_hyper("PiecewiseConstantDecay", "a value", v, 0.0) for v in values]

    def __call__(self, step):
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` in ``decay_steps`` steps, as Keras:

        lr = (initial − end) · (1 − s / decay_steps) ** power + end,   s = min(step, decay_steps)

    With ``cycle=True`` the decay restarts: ``decay_steps`` is stretched to the
    first multiple of it that reaches ``step`` (1 at step 0) instead of
    ``step`` being capped.
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
        self.initial_learning_rate = _hyper("PolynomialDecay", "initial_learning_rate", initial_learning_rate, 0.0)
        self.decay_steps = _positive("PolynomialDecay", "decay_steps", decay_steps)
        self.end_learning_rate = _hyper("PolynomialDecay", "end_learning_rate", end_learning_rate, 0.0)
        self.power = _hyper("PolynomialDecay", "power", power, 0.0)
        self.cycle = bool(cycle)

    def __call__(self, step):
        steps = self.decay_steps
        if self.cycle:
            steps = steps * (1.0 if step == 0 else np.ceil(step / steps))
        else:
            step = min(step, steps)
        return (self.initial_learning_rate - self.end_learning_rate) * (1.0 - step / steps) ** self.power + \
            self.end_learning_rate


class CosineDecay(LearningRateSchedule):
    """Half a cosine from the rate down to ``alpha`` times it over ``decay_steps`` steps, after an optional
    linear warm-up, as Keras 3:

        lr = rate · ((1 − alpha) · ½(1 + cos(π · s / decay_steps)) + alpha),   s = min(step, decay_steps)

    With ``warmup_target``, the rate first goes linearly from
    ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps``
    steps, then decays from ``warmup_target`` as above (``s`` counted after
    the warm-up).
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        self.initial_learning_rate = _hyper("CosineDecay", "initial_learning_rate", initial_learning_rate, 0.0)
        self.decay_steps = _positive("CosineDecay", "decay_steps", decay_steps)
        self.alpha = _hyper("CosineDecay", "alpha", alpha, 0.0, 1.0)
        self.name = name
        self.warmup_target = None if warmup_target is None else _hyper("CosineDecay", "warmup_target",
                                                                        warmup_target, 0.0)
        self.warmup_steps = _hyper("CosineDecay", "warmup_steps", warmup_steps, 0.0)

    def _decayed(self, step, rate):
        return rate * ((1.0 - self.alpha) * 0.5 * (1.0 + np.cos(np.pi * step / self.decay_steps)) + self.alpha)

    def __call__(self, step):
        if self.warmup_target is None:
            return self._decayed(min(step, self.decay_steps), self.initial_learning_rate)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            return self.initial_learning_rate + (self.warmup_target - self.initial_learning_rate) * \
                step / self.warmup_steps
        return self._decayed(step - self.warmup_steps, self.warmup_target)


schedules = types.ModuleType(f"{__name__}.schedules", "Learning-rate schedules, as ``keras.optimizers.schedules``.")
for _cls in (LearningRateSchedule, ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, PolynomialDecay,
             CosineDecay):
    setattr(schedules, _cls.__name__, _cls)
sys.modules[schedules.__name__] = schedules     # `from autodiff_viz.optimizers.schedules import CosineDecay` works


_EXPLAINED: dict = {}       # id(variable) -> Explanation: set by fit's train step around one apply_gradients


def _computed_before_minimize(e):
    """``e`` with the fix for ``minimize(loss_fn, …)`` when ``loss_fn`` returned a loss computed before the call.

    ``minimize`` opens its own tape and calls ``loss_fn`` inside it, so the tape sees only what the function
    computes; a ``lambda: cost`` over a ``cost`` computed earlier returns a value the tape never saw.
    """
    if e.reason != "computed_outside_tape" or "\nFix:" not in e.message:
        return e
    import dataclasses
    fix = reasons.fix("computed_outside_tape", "minimize", None)
    return dataclasses.replace(e, message=e.message.split("\nFix:")[0] + "\n" + fix)


def explaining(explanations: dict):
    """A context in which ``apply_gradients`` words its None-gradient error or warning with ``explanations``.

    ``fit`` has a tape but the learner does not: its train step asks the tape
    why each None gradient is None (reason, line, fix) and the optimizer's
    message carries that diagnosis instead of "ask tape.explain".
    """
    import contextlib

    @contextlib.contextmanager
    def scope():
        saved = dict(_EXPLAINED)
        _EXPLAINED.update(explanations)
        try:
            yield
        finally:
            _EXPLAINED.clear()
            _EXPLAINED.update(saved)
    return scope()


def _why_missing(variables) -> str:
    """Per variable, why its gradient is None (when ``fit`` diagnosed it), else how to ask."""
    rows = [(v, _EXPLAINED.get(id(v)) or GradientTape.why_unanswered(v)) for v in variables]
    if not any(e is not None for _, e in rows):
        return "tape.explain(loss, variable) says why."
    lines = [f"\n- {v.path}: {e.reason}: {e.message}" for v, e in rows if e is not None]
    return "why, per variable:" + "".join(lines)


# Keras 3's names for the slots this module keys shorter (Adam's and Nadam's moments); others are the same
_KERAS_SLOT = {"m": "momentum", "v": "velocity", "v_hat": "velocity_hat"}


class Optimizer:
    """Base class: validation, schedules, clipping and slot state; subclasses define ``_step``.

    Args:
        learning_rate: a float or a schedule (see the module docstring).
        clipnorm: clip each gradient to this L2 norm.
        clipvalue: clip each gradient entry to ``[-clipvalue, clipvalue]``.
        global_clipnorm: scale all gradients together so their joint norm is at most this.
        weight_decay: decoupled weight decay (see the module docstring), or None.
    """

    slot_names: tuple = ()
    _keras_kind = "optimizer"   # how autodiff_viz.keras_base.serialization writes it
    _config_base_parameters = ("learning_rate", "name", "clipnorm", "clipvalue", "global_clipnorm", "weight_decay")

    def __init__(self, learning_rate=0.001, name=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 weight_decay=None):
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError("Give either clipnorm or global_clipnorm, not both.")
        for what, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue), ("global_clipnorm", global_clipnorm),
                            ("weight_decay", weight_decay)):
            if value is not None and (not _real(value) or value < 0):
                raise ValueError(f"{type(self).__name__}: {what} must be None or a non-negative number, "
                                 f"got {value!r}.")
        self.learning_rate = learning_rate
        self.name = name or type(self).__name__.lower()
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self._no_decay_ids: set = set()
        self._no_decay_names: tuple = ()
        self.iterations = 0
        self._state: dict = {}
        self._slot_variables: dict = {}     # var id -> {slot name: Variable}, made by build()

    def build(self, var_list) -> None:
        """Make the slots of each variable now, as Keras 3's ``optimizer.build(var_list)``.

        Afterwards :attr:`variables` holds them as variables (``momentum`` for
        SGD with momentum, ``m`` and ``v`` for Adam ...), so a worksheet can
        preset them — CS231n's optimizer checks start from a given velocity
        or first and second moments — and read them after a step:

            >>> opt = SGD(0.1, momentum=0.9); w = Variable([1.0, 2.0])
            >>> opt.build([w]); opt.variables[0].assign([0.5, 0.5])
        """
        for var in var_list:
            if not isinstance(var, Variable):
                raise TypeError(f"{type(self).__name__}.build: var_list holds the variables to train "
                                f"(model.trainable_variables), got {type(var).__name__}.")
            if var._id in self._slot_variables:
                continue
            state = self._state.get(var._id) or self._new_state(var)
            self._slot_variables[var._id] = {k: self._slot_variable(var, k, state[k]) for k in self.slot_names}

    def _slot_variable(self, var, slot, value) -> Variable:
        """Slot ``slot`` of ``var`` named as Keras 3's ``add_variable_from_reference``: the variable's path
        with ``_`` for ``/`` and the slot, ``"dense_kernel_momentum"``, at ``"<optimizer name>/<that>"``."""
        name = f"{(var.path or 'variable').replace('/', '_')}_{_KERAS_SLOT.get(slot, slot)}"
        out = Variable(value, name=name, trainable=False)
        out._path = f"{self.name}/{name}"
        return out

    @property
    def variables(self) -> list:
        """The slot variables :meth:`build` made, variable by variable in the order given, slot by slot.

        (The step count is ``iterations``, an int, not a variable in this list as in Keras.)
        """
        return [v for slots in self._slot_variables.values() for v in slots.values()]

    def exclude_from_weight_decay(self, var_list=None, var_names=None) -> None:
        """Leave variables out of weight decay: these variables, or those whose name contains one of ``var_names``."""
        self._no_decay_ids |= {v._id for v in (var_list or ())}
        self._no_decay_names += tuple(str(n) for n in (var_names or ()))

    def _decays(self, var) -> bool:
        if var._id in self._no_decay_ids:
            return False
        name = var.name or ""       # the short name ("kernel"), as Keras 3 matches var_names
        return not any(n in name for n in self._no_decay_names)

    # ----- learning rate ----------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The learning rate for the next step (a schedule is evaluated at ``iterations``)."""
        lr = self._learning_rate
        if callable(lr):
            return float(lr(self.iterations) if self._schedule_takes_step else lr())
        return float(lr)

    @learning_rate.setter
    def learning_rate(self, value):
        if callable(value):
            try:
                self._schedule_takes_step = len(inspect.signature(value).parameters) > 0
            except (TypeError, ValueError):
                self._schedule_takes_step = True
        elif not _real(value) or value < 0:
            raise ValueError(f"{type(self).__name__}: learning_rate must be a non-negative number or a "
                             f"schedule (a callable of the step), got {value!r}.")
        self._learning_rate = value

    # ----- applying gradients -------------------------------------------------
    def apply_gradients(self, grads_and_vars) -> int:
        """Update each variable from its gradient; all-or-nothing.

        Args:
            grads_and_vars: an iterable of ``(gradient, variable)`` pairs, e.g.
                ``zip(grads, model.trainable_variables)``.

        Returns:
            the new value of ``iterations``.

        Raises:
            ValueError: a gradient's shape does not match its variable (the
                error names the pair, the variable and the shapes), before any
                variable has changed.
            TypeError: a pair is not ``(gradient, variable)`` or not floating,
                before any variable has changed.

        A Ctrl-C (Jupyter's interrupt) that arrives during the update waits
        for it to end: every variable, its slots and ``iterations`` move
        together or not at all (see :mod:`autodiff_viz.base.interrupts`).
        """
        with interrupts.deferred():
            return self._apply_gradients(grads_and_vars)

    def _apply_gradients(self, grads_and_vars) -> int:
        pairs = self._checked_pairs(grads_and_vars)
        if pairs:
            grads = self._clipped([g for g, _ in pairs])
            lr = self.learning_rate
            step = self.iterations + 1
            wd = self.weight_decay
            slots, states, step_fn = self.slot_names, self._state, self._step
            for g, (_, var) in zip(grads, pairs):     # every pair was checked above: no failure from here on
                if slots:
                    held = self._slot_variables.get(var._id)
                    state = {k: v._value for k, v in held.items()} if held else states.get(var._id)
                    if state is None:
                        state = self._new_state(var)
                else:
                    state = None
                delta, new_state = step_fn(g, state, lr, step)
                w = var._value
                if wd and self._decays(var):
                    w = w - w * wd * lr
                elif sys.getrefcount(w) > _ONLY_THE_VARIABLE or w.base is not None or not w.flags.writeable:
                    w = w.copy()     # a record or a user holds the old value: it keeps it
                # else only the variable holds its array: update it in place (no copy)
                if delta is None:
                    _subtract_scaled(w, g, lr)
                else:
                    w -= delta if delta.dtype == w.dtype else delta.astype(w.dtype)
                var._value = w
                if new_state is not None:
                    states[var._id] = new_state
                    held = self._slot_variables.get(var._id)
                    for k, value in (new_state.items() if held else ()):
                        held[k]._value = value       # the slot variables follow the step
        self.iterations += 1
        return self.iterations

    def apply(self, grads, trainable_variables=None) -> int:
        """Keras 3's form of :meth:`apply_gradients`: ``opt.apply(grads, model.trainable_variables)``.

        ``grads`` and ``trainable_variables`` are two lists in the same order
        (what ``tape.gradient(loss, variables)`` returns, and those variables).
        """
        if trainable_variables is None:
            raise TypeError(f"{type(self).__name__}.apply needs the variables as well as the gradients: "
                            "opt.apply(grads, model.trainable_variables) (this package's optimizers are not "
                            "built on a fixed list of variables).")
        grads, variables = list(grads), list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"{type(self).__name__}.apply: {len(grads)} gradients for {len(variables)} variables; "
                             "pass tape.gradient(loss, variables) with the same variables. Nothing was updated.")
        return self.apply_gradients(zip(grads, variables))

    def _checked_pairs(self, grads_and_vars) -> list:
        try:
            pairs = list(grads_and_vars)
        except TypeError:
            raise TypeError(f"{type(self).__name__}.apply_gradients takes an iterable of (gradient, variable) "
                            "pairs, e.g. zip(grads, model.trainable_variables).") from None
        checked, missing, missing_vars = [], [], []
        for i, pair in enumerate(pairs, start=1):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"apply_gradients: pair {i} is {type(pair).__name__}, not a (gradient, variable) "
                                "pair. Nothing was updated.")
            g, var = pair
            if not isinstance(var, Variable):
                raise TypeError(f"apply_gradients: pair {i} holds a {type(var).__name__} where a Variable belongs "
                                "(the second item of each pair). Did you swap them? Use zip(grads, variables). "
                                "Nothing was updated.")
            if g is None:
                missing.append(var.path or f"pair {i}")
                missing_vars.append(var)
                continue
            arr = g._value if isinstance(g, Tensor) else np.asarray(g)
            value = var._value
            if arr.shape != value.shape:
                raise ValueError(f"apply_gradients: pair {i}: the gradient has shape {arr.shape} but variable "
                                 f"{var.path or ''!s} has shape {var.shape}. Pass tape.gradient(loss, variables) "
                                 "zipped with the same variables. Nothing was updated.")
            dtype = value.dtype
            if dtype.kind != "f" or arr.dtype.kind not in "fiu":
                raise TypeError(f"apply_gradients: pair {i}: variable {var.path} ({var.dtype}) and gradient "
                                f"({arr.dtype}) must be floating. Nothing was updated.")
            checked.append((arr if arr.dtype == dtype else arr.astype(dtype), var))
        if missing and not checked:
            raise ValueError(f"apply_gradients: no gradients provided for any variable ({missing}): every gradient "
                             "is None, so there is nothing to apply (Keras 3 refuses this too). The loss does not "
                             "depend on these variables, or was computed outside the tape (e.g. a model called "
                             "before `with adv.GradientTape()`); " + _why_missing(missing_vars) + " Nothing was "
                             "updated.")
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss, so they "
                          "were not updated. Their loss does not depend on them, or was computed outside the "
                          "tape; " + _why_missing(missing_vars), UserWarning,
                          stacklevel=user_stacklevel())
        return checked

    def _clipped(self, grads):
        if self.clipvalue is not None:
            grads = [np.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        if self.clipnorm is not None:
            grads = [g * min(1.0, self.clipnorm / max(float(np.linalg.norm(g)), 1e-12)) for g in grads]
        if self.global_clipnorm is not None:
            total = float(np.sqrt(sum(float(np.sum(np.square(g))) for g in grads)))
            scale = min(1.0, self.global_clipnorm / max(total, 1e-12))
            grads = [g * scale for g in grads]
        return grads

    def _new_state(self, var) -> dict:
        """The slots of a variable before its first step: zeros (Adagrad starts elsewhere)."""
        return {k: np.zeros(var.shape, dtype=var.dtype) for k in self.slot_names}

    def _step(self, g, state, lr, step):
        """``(delta, new_state)`` from numpy arrays: the update is ``w ← w − delta``
        (``delta`` None means ``lr·g``, applied without a full-size temporary).

        Must not modify its arguments. The optimizer subtracts ``delta`` in
        place when nothing but the variable holds its value (a recorded op
        that read the variable, or a user's reference, keeps the old value).
        """
        raise NotImplementedError

    def minimize(self, loss, var_list, tape=None):
        """One step on ``loss``: record it, differentiate, apply.

        Args:
            loss: a callable with no arguments that returns the loss (or a
                loss tensor, together with the ``tape`` that recorded it).
            var_list: the variables to update (or a callable returning them).

        Returns:
            the loss tensor.
        """
        if callable(loss):
            with GradientTape() as tape:
                value = loss()
        elif tape is None:
            raise ValueError("minimize: give the loss as a function (minimize(lambda: loss_fn(), var_list)) "
                             "or pass the tape that recorded the loss tensor.")
        else:
            value = loss
        variables = list(var_list() if callable(var_list) else var_list)
        grads = tape.gradient(value, variables)
        why = {id(v): tape.explain(value, v) for v, g in zip(variables, grads)
               if g is None and isinstance(value, Tensor)}
        if callable(loss):
            why = {k: _computed_before_minimize(e) for k, e in why.items()}
        with explaining(why):       # minimize holds the tape: its message says why, per variable
            self.apply_gradients(zip(grads, variables))
        return value

    def get_config(self) -> dict:
        """The constructor's arguments (``learning_rate`` as given: a number or a schedule), as Keras 3:
        ``type(opt).from_config(opt.get_config())`` is a new optimizer of the same kind, with no state."""
        return constructor_config(self)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"{type(self).__name__}(learning_rate={self._learning_rate!r}, iterations={self.iterations})"


class SGD(Optimizer):
    """Gradient descent, with optional (Nesterov) momentum, as Keras 3.

    ``momentum = 0``: ``w ← w − lr·g``.
    ``momentum > 0``: ``v ← momentum·v − lr·g``; ``w ← w + v``.
    ``nesterov=True``: ``v`` as above; ``w ← w + momentum·v − lr·g``.
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.momentum = _hyper("SGD", "momentum", momentum, 0.0, 1.0)
        self.nesterov = bool(nesterov)
        self.slot_names = ("momentum",) if self.momentum else ()

    def _step(self, g, state, lr, step):
        if not self.momentum:
            return None, state
        v = self.momentum * state["momentum"] - lr * g
        if self.nesterov:
            return -(self.momentum * v - lr * g), {"momentum": v}
        return -v, {"momentum": v}


class RMSprop(Optimizer):
    """RMSprop with Keras 3's update (epsilon *inside* the square root).

    ``v ← rho·v + (1 − rho)·g²``; with ``centered=True`` also
    ``a ← rho·a + (1 − rho)·g`` and ``v`` is replaced by ``v − a²`` below.
    ``Δ = lr·g / sqrt(v + epsilon)``; with ``momentum``: ``m ← momentum·m + Δ``
    and ``w ← w − m``, otherwise ``w ← w − Δ``.

    Note the difference from the common hand-written
    ``g / (sqrt(v) + eps)``: with ``eps`` inside the root the smallest
    denominator is ``sqrt(1e-7) ≈ 3e-4``, not ``1e-7``, so tiny ``v`` gives
    steps at most ``lr·g/3e-4`` instead of up to ``lr·g/1e-7``. The two
    agree once ``v`` is much larger than ``eps``; comparing with a
    hand-written version on the first steps (where ``v`` is small) shows the
    difference.
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.rho = _hyper("RMSprop", "rho", rho, 0.0, 1.0)
        self.momentum = _hyper("RMSprop", "momentum", momentum, 0.0, 1.0)
        self.epsilon = _hyper("RMSprop", "epsilon", epsilon, 0.0)
        self.centered = bool(centered)
        self.slot_names = ("velocity",) + (("average_gradient",) if centered else ()) + (
            ("momentum",) if self.momentum else ())

    def _step(self, g, state, lr, step):
        rho = self.rho
        new = {"velocity": rho * state["velocity"] + (1 - rho) * g * g}
        denominator = new["velocity"]
        if self.centered:
            new["average_gradient"] = rho * state["average_gradient"] + (1 - rho) * g
            denominator = denominator - new["average_gradient"] ** 2
        increment = lr * g / np.sqrt(denominator + self.epsilon)
        if self.momentum:
            new["momentum"] = self.momentum * state["momentum"] + increment
            return new["momentum"], new
        return increment, new


class Adam(Optimizer):
    """Adam with bias correction, in Keras 3's form.

    At step ``t`` (1, 2, ...): ``m ← β₁·m + (1 − β₁)·g``,
    ``v ← β₂·v + (1 − β₂)·g²``, ``α = lr·sqrt(1 − β₂ᵗ)/(1 − β₁ᵗ)`` and
    ``w ← w − α·m / (sqrt(v) + epsilon)``. This is the paper's "epsilon hat"
    form: the same as ``m̂ / (sqrt(v̂) + ε)`` with a slightly different ε.

    ``amsgrad=True`` (Reddi et al., 2018, as Keras): keep ``v̂ ← max(v̂, v)``
    and divide by ``sqrt(v̂)`` instead of ``sqrt(v)``, so the step size never
    grows back when gradients shrink.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.beta_1 = _hyper(type(self).__name__, "beta_1", beta_1, 0.0, 1.0, high_open=True)
        self.beta_2 = _hyper(type(self).__name__, "beta_2", beta_2, 0.0, 1.0, high_open=True)
        self.epsilon = _hyper(type(self).__name__, "epsilon", epsilon, 0.0)
        self.amsgrad = bool(amsgrad)
        self.slot_names = ("m", "v", "v_hat") if self.amsgrad else ("m", "v")

    def _step(self, g, state, lr, step):
        b1, b2 = self.beta_1, self.beta_2
        m = state["m"] + (g - state["m"]) * (1 - b1)
        v = state["v"] + (g * g - state["v"]) * (1 - b2)
        alpha = lr * np.sqrt(1 - b2 ** step) / (1 - b1 ** step)
        new = {"m": m, "v": v}
        if self.amsgrad:
            v = new["v_hat"] = np.maximum(state["v_hat"], v)
        return alpha * m / (np.sqrt(v) + self.epsilon), new


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019), as Keras 3.

    The same update as :class:`Adam`, preceded by ``w ← w − lr·weight_decay·w``
    for every variable that has a gradient (and is not excluded with
    ``exclude_from_weight_decay``). The only difference from
    ``Adam(weight_decay=...)`` is the default: AdamW decays by ``0.004``, and
    ``weight_decay=None`` is refused (use :class:`Adam` for no decay).

    Why decoupled: an L2 term ``wd/2·||w||²`` in the loss adds ``wd·w`` to the
    gradient, which Adam then divides by ``sqrt(v)``, so weights with large
    gradients are barely decayed. Decaying ``w`` directly shrinks every weight
    by the same fraction ``lr·wd`` per step.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        if weight_decay is None or not _real(weight_decay) or weight_decay < 0:
            raise ValueError(f"AdamW: weight_decay must be a non-negative number (Keras' default is 0.004), "
                             f"got {weight_decay!r}. For Adam without weight decay, use Adam.")
        super().__init__(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, amsgrad=amsgrad,
                         weight_decay=weight_decay, **kwargs)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011) with Keras 3's update (epsilon *inside* the square root).

    Each entry keeps the sum of its squared gradients, starting from
    ``initial_accumulator_value``: ``a ← a + g²``, then
    ``w ← w − lr·g / sqrt(a + epsilon)``. Entries that have seen large (or
    many) gradients take smaller steps; the step size only ever shrinks, so
    Adagrad tends to want a larger ``learning_rate`` than Adam (the paper's
    form uses ``1.0``).

    PyTorch's ``torch.optim.Adagrad`` puts eps outside the root,
    ``g / (sqrt(a) + eps)``; with ``initial_accumulator_value = 0.1`` the two
    differ by about ``eps/(2·sqrt(a))`` relative, and agree exactly with
    ``epsilon=0``. Its default accumulator start is ``0``, Keras' is ``0.1``.
    """

    slot_names = ("accumulator",)

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.initial_accumulator_value = _hyper("Adagrad", "initial_accumulator_value",
                                                initial_accumulator_value, 0.0)
        self.epsilon = _hyper("Adagrad", "epsilon", epsilon, 0.0)
        if self.initial_accumulator_value == 0 and self.epsilon == 0:
            raise ValueError("Adagrad: initial_accumulator_value and epsilon are both 0, so a zero first "
                             "gradient would divide 0 by 0. Make one of them positive (Keras' defaults: 0.1 "
                             "and 1e-7).")

    def _new_state(self, var) -> dict:
        return {"accumulator": np.full(var.shape, self.initial_accumulator_value, dtype=var.dtype)}

    def _step(self, g, state, lr, step):
        accumulator = state["accumulator"] + g * g
        return lr * g / np.sqrt(accumulator + self.epsilon), {"accumulator": accumulator}


class Nadam(Optimizer):
    """Adam with Nesterov momentum (Dozat, 2016), in Keras 3's form.

    The momentum coefficient warms up over the first steps:
    ``μₜ = β₁·(1 − 0.5·0.96ᵗ)``, and ``Πₜ = μ₁·μ₂·…·μₜ``. At step ``t``:
    ``m ← β₁·m + (1 − β₁)·g``, ``v ← β₂·v + (1 − β₂)·g²``,
    ``m̂ = μₜ₊₁·m/(1 − Πₜ₊₁) + (1 − μₜ)·g/(1 − Πₜ)``, ``v̂ = v/(1 − β₂ᵗ)`` and
    ``w ← w − lr·m̂ / (sqrt(v̂) + epsilon)``.

    The Nesterov "look ahead": ``m̂`` uses next step's momentum coefficient
    on ``m`` and adds the current gradient directly, so the step already
    includes the gradient it would get from one more momentum update. This is
    ``torch.optim.NAdam`` with ``momentum_decay=1`` (PyTorch's default
    ``0.004`` warms ``μₜ`` up far more slowly: ``0.96^(0.004·t)``).
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.beta_1 = _hyper("Nadam", "beta_1", beta_1, 0.0, 1.0, high_open=True)
        self.beta_2 = _hyper("Nadam", "beta_2", beta_2, 0.0, 1.0, high_open=True)
        self.epsilon = _hyper("Nadam", "epsilon", epsilon, 0.0)
        self.slot_names = ("m", "v")
        self._mu_products = (0, 1.0)

    def _mu(self, t: int) -> float:
        return self.beta_1 * (1.0 - 0.5 * 0.96 ** t)

    def _mu_product(self, step: int) -> float:
        """``Πₜ`` for ``t = step``, carried forward from the last step asked for (one multiply per step)."""
        done, product = self._mu_products
        if step < done:
            done, product = 0, 1.0
        for t in range(done + 1, step + 1):
            product *= self._mu(t)
        self._mu_products = (step, product)
        return product

    def _step(self, g, state, lr, step):
        b1, b2 = self.beta_1, self.beta_2
        m = state["m"] + (g - state["m"]) * (1 - b1)
        v = state["v"] + (g * g - state["v"]) * (1 - b2)
        mu, mu_next = self._mu(step), self._mu(step + 1)
        product = self._mu_product(step)
        m_hat = (mu_next / (1 - product * mu_next)) * m + ((1 - mu) / (1 - product)) * g
        v_hat = v / (1 - b2 ** step)
        return lr * m_hat / (np.sqrt(v_hat) + self.epsilon), {"m": m, "v": v}


_BY_NAME = {"sgd": SGD, "rmsprop": RMSprop, "adam": Adam, "adamw": AdamW, "adagrad": Adagrad, "nadam": Nadam}


def get(identifier) -> Optimizer:
    """An optimizer from a name (``"adam"``, ``"adamw"``, ``"adagrad"``, ``"nadam"``, ``"sgd"``,
    ``"rmsprop"``, any case, with Keras' defaults) or an instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Unknown optimizer {identifier!r}. Use one of {sorted(_BY_NAME)} or an optimizer "
                     "instance such as adv.optimizers.Adam(learning_rate=1e-3).")


class _Holder:
    __slots__ = ("_value",)


def _refs_of_a_weight_only_its_variable_holds() -> int:
    """What ``sys.getrefcount(w)`` gives in :meth:`Optimizer.apply_gradients` when only the variable holds ``w``.

    3 in Python (the variable, the local ``w``, the call's argument);
    compiled code (setup.py) may count fewer. Measured with the same
    statements, so a weight a record or the user still holds is copied,
    never changed under them.
    """
    var = _Holder()
    var._value = np.empty(1)
    w = var._value
    return sys.getrefcount(w)


_ONLY_THE_VARIABLE = _refs_of_a_weight_only_its_variable_holds()
