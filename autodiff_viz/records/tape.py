"""GradientTape: record ops, then ask for gradients and Jacobians (TensorFlow semantics).

    >>> import autodiff_viz as adv
    >>> x = adv.constant(3.0)
    >>> with adv.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.gradient(y, x).numpy()
    array(6.)

The tape records every op whose input it tracks: a watched tensor, a
trainable variable (watched on first use unless
``watch_accessed_variables=False``), or the output of an op it recorded.
``gradient`` walks that record backwards once; ``jacobian`` does the same
walk seeded with an identity, so a whole Jacobian costs one walk.
"""
from __future__ import annotations

import contextlib
import enum
import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from ..base import interrupts
from ..base.state import config, live_tapes, state, user_frame, user_frame_object, user_location, user_stacklevel
from ..base.structure import flatten
from ..core import engine, rules, walks
from ..core.tensor import Tensor, Variable, _ids, _label, full_name
from ..diagnosis.escapes import warn_partial
from ..diagnosis.reasons import wrong_source
from ..diagnosis.walk import UnconnectedGradientError, explain, require_recorded
from .traces.build import build_trace

_serials = itertools.count(1)
_UNCONNECTED = ("none", "zero")
_UNANSWERED: list = []      # [(tape, targets, ids of the sources that got None)]: the last gradient() with a None


class UnconnectedGradients(str, enum.Enum):
    """What ``gradient``/``jacobian`` give for a source the target does not depend on (as ``tf.UnconnectedGradients``).

    ``NONE``: None (the default); ``ZERO``: zeros of the source's shape. The
    strings ``"none"`` and ``"zero"`` mean the same (and ``gradient`` also
    takes ``"raise"``: an error that says why).
    """

    NONE = "none"
    ZERO = "zero"


def _unconnected(value, allowed: tuple, what: str) -> str:
    """``value`` (a string or an :class:`UnconnectedGradients`) as one of the ``allowed`` strings."""
    if isinstance(value, UnconnectedGradients):
        value = value.value
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{what}: unconnected_gradients must be one of {allowed} or "
                         f"adv.UnconnectedGradients.NONE / .ZERO, got {value!r}.")
    return value


MAX_JACOBIAN_BYTES = 2 * 2 ** 30   # refuse Jacobian seeds and results larger than this, before allocating


def _check_jacobian_size(what: str, rows: int, target_size: int, dtype, source_sizes) -> None:
    """Refuse a Jacobian whose seed (``rows × target``) or result (``rows × source``) would not fit, before
    allocating."""
    itemsize = np.dtype(dtype).itemsize
    biggest = max([target_size] + list(source_sizes))
    need = int(rows) * int(biggest) * itemsize
    if need > MAX_JACOBIAN_BYTES:
        raise ValueError(
            f"{what}: the full Jacobian here needs {rows:,} rows of up to {biggest:,} entries "
            f"({need / 2 ** 30:.1f} GiB), more than the {MAX_JACOBIAN_BYTES / 2 ** 30:.0f} GiB allowed "
            "(adv.tape.MAX_JACOBIAN_BYTES). Ask for less: tape.gradient(target, source) for the summed "
            "gradient, output_gradients=v for one vector-Jacobian product, batch_jacobian for per-example "
            "blocks, or the Jacobian of a slice of the target.")


def _pfor_options(what: str, parallel_iterations, experimental_use_pfor) -> None:
    """TensorFlow's loop options for Jacobians: accepted so TF code runs; the pass is already one vectorized walk."""
    if parallel_iterations is not None and (isinstance(parallel_iterations, bool) or
                                            not isinstance(parallel_iterations, int) or parallel_iterations < 1):
        raise ValueError(f"{what}: parallel_iterations must be None or a positive integer, "
                         f"got {parallel_iterations!r}.")
    if not isinstance(experimental_use_pfor, bool):
        raise TypeError(f"{what}: experimental_use_pfor must be True or False, got {experimental_use_pfor!r}.")


@dataclass(frozen=True)
class Escape:
    """A tracked tensor's value left the tape (``.numpy()``, ``float()`` ...) at ``location``."""

    tensor_id: int
    how: str
    location: tuple | None
    value: np.ndarray
    clock: int = 0      # the tensor counter when it left: only a constant made later can bring the value back


@dataclass(frozen=True)
class Assign:
    """A tracked tensor's value was stored in a variable (``v.assign(t)``, ``assign_add``, ``assign_sub``) at
    ``location``.

    The variable is a leaf afterwards: the gradient stops at the assign. The
    diagnosis reads these notes to say so.
    """

    variable_id: int
    value_id: int
    how: str
    location: tuple | None


class TapeRecord:
    """What a tape recorded, as its readers see it: the diagnosis, exercise mode, traces and the bridges.

    ``tape.record`` is a read-only view (nothing is copied): read it, never change it. Its parts:

    * ``nodes`` — the records (:class:`~autodiff_viz.core.engine.Node`: rule, inputs, params, output
      id and value, scope, user location) in the order the ops ran; a gradient walks them backwards.
    * ``tracked`` — the ids of every tensor the tape tracks: the watched sources and all that was
      computed from them while it recorded.
    * ``watched`` — ``{id: tensor}`` of the sources it watches (``tape.watch``, or a trainable
      variable read while recording).
    * ``escapes`` — :class:`Escape` notes: a tracked value that left as numpy or a Python number.
    * ``assigns`` — :class:`Assign` notes: a tracked value stored into a variable.
    * ``pauses`` — ``[start id, end id]`` of each ``stop_recording()`` block; ``resets`` — the id
      counter at each ``reset()``; ``start_id`` / ``end_id`` — the counter when the ``with`` block
      was entered and left (``end_id`` None while it is open). Tensor ids grow with time, so a
      tensor's id says whether it was made before, during or after the block.
    * ``serial``, ``persistent``, ``released`` (the values were let go after a non-persistent
      ``gradient``).
    """

    __slots__ = ("_tape",)

    def __init__(self, tape: "GradientTape"):
        self._tape = tape

    nodes = property(lambda self: self._tape._nodes)
    tracked = property(lambda self: self._tape._tracked)
    watched = property(lambda self: self._tape._watched)
    escapes = property(lambda self: self._tape._escapes)
    assigns = property(lambda self: self._tape._assigns)
    pauses = property(lambda self: self._tape._pauses)
    resets = property(lambda self: self._tape._resets)
    start_id = property(lambda self: self._tape._start_id)
    end_id = property(lambda self: self._tape._end_id)
    serial = property(lambda self: self._tape.serial)
    persistent = property(lambda self: self._tape.persistent)
    released = property(lambda self: self._tape._released)

    def __repr__(self):
        return (f"<TapeRecord of tape #{self.serial}: {len(self.nodes)} records, {len(self.watched)} watched, "
                f"{len(self.escapes)} escapes, {len(self.assigns)} assigns>")



def note_predict(model, outputs) -> None:
    """``model.predict`` ran while tapes record: note its numpy outputs and the line, for ``explain``.

    ``predict`` computes without recording and returns numpy, so a loss built
    from its result does not depend on the model's variables; ``explain``
    names the ``predict`` call instead of calling the variables unused.
    """
    ids = {v._id for v in getattr(model, "variables", ())}
    where = user_location() if config.capture_locations else None
    mark = Tensor(0.0)._id            # tensors made after this one were made after the prediction
    for tape in state.recording:
        tape._predicted(ids, outputs, where, mark)

class GradientTape:
    """Records operations for automatic differentiation.

    Args:
        persistent: allow more than one ``gradient``/``jacobian`` call.
        watch_accessed_variables: watch every trainable :class:`Variable`
            that an op reads while the tape records.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self.persistent = bool(persistent)
        self.watch_accessed_variables = bool(watch_accessed_variables)
        self.serial = next(_serials)
        self._serials = (self.serial,)     # what a record made by this tape alone stores as its tapes
        live_tapes[self.serial] = self
        self._released = False
        self._heavy = False       # set by the engine when a record saves a value worth letting go of
        self._nodes: list = []
        self._tracked: set = set()
        self._watched: dict = {}
        self._escapes: list = []
        self._predicts: list = []      # (the model's variable ids, its numpy outputs, the line, a tensor id)
        self._assigns: list = []
        self._pauses: list = []
        self._resets: list = []   # the id counter at each reset(): what was recorded before it is forgotten
        self._start_id = None
        self._end_id = None
        self._used = False

    # ----- context --------------------------------------------------------
    def __enter__(self) -> GradientTape:
        interrupts.arm()
        interrupts.check()    # an interrupt the interpreter dropped during the last step stops the loop here
        if self in state.entered:
            raise RuntimeError("This tape is already recording; a tape cannot be entered twice at once.")
        self._start_id = next(_ids)
        self._end_id = None
        self._opened_in = user_frame() if config.capture_locations else None
        state.entered.append(self)
        self._resume()
        return self

    def __exit__(self, *exc):
        self._pause()
        state.entered.remove(self)
        self._end_id = next(_ids)
        if exc[0] is not None and issubclass(exc[0], KeyboardInterrupt):
            interrupts.clear()
        elif exc[0] is None:
            interrupts.check()
        return False

    @property
    def record(self) -> TapeRecord:
        """What this tape recorded (a read-only view; see :class:`TapeRecord`)."""
        return TapeRecord(self)

    @property
    def recording(self) -> bool:
        return self in state.recording

    def _resume(self):
        state.recording = state.recording + [self]

    def _pause(self):
        state.recording = [t for t in state.recording if t is not self]

    @contextlib.contextmanager
    def stop_recording(self):
        """Compute inside without recording (the results have no gradient from this tape)."""
        if not self.recording:
            raise RuntimeError("stop_recording() works only while the tape records, inside its `with` block.")
        pause = [next(_ids), None]
        self._pauses.append(pause)
        self._pause()
        try:
            yield
        finally:
            pause[1] = next(_ids)
            self._resume()

    def reset(self):
        """Forget everything recorded so far (the tape keeps recording if it was).

        The moment is kept (``_resets``), so :meth:`explain` can say that a
        gradient is None because the ops that used a source were recorded
        before the reset.
        """
        self._nodes, self._tracked, self._watched, self._escapes, self._assigns = [], set(), {}, [], []
        self._predicts = []
        self._used = self._released = self._heavy = False
        self._resets.append(next(_ids))

    # ----- what the tape tracks ---------------------------------------------
    def watch(self, tensor) -> None:
        """Track ``tensor`` (or every tensor in a list/tuple/dict) as a gradient source."""
        for t in flatten(tensor)[0]:
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"tape.watch() takes tensors, got {type(t).__name__}. "
                    "Wrap the value first: x = adv.constant(value), then tape.watch(x).")
            if t.dtype.kind not in "fc":
                warnings.warn(
                    f"tape.watch(): {full_name(t) or 'the tensor'} has dtype {t.dtype}; gradients exist only "
                    "for floating tensors. Use adv.constant(value, dtype='float64').",
                    stacklevel=user_stacklevel())
            self._watch_one(t)

    def _watch_one(self, t: Tensor) -> None:
        self._watched[t._id] = t
        self._tracked.add(t._id)
        t._lineage = True

    def _tracks_any(self, inputs) -> bool:
        tracked = self._tracked
        hit = False
        for t in inputs:
            if t._id in tracked:
                hit = True
            elif self.watch_accessed_variables and type(t) is Variable and t.trainable and \
                    t._value.dtype.kind in "fc":
                self._watch_one(t)
                hit = True
        return hit

    def _escaped(self, tensor, how, location) -> None:
        self._escapes.append(Escape(tensor._id, how, location, tensor._value, next(_ids)))

    def _predicted(self, variable_ids, values, location, mark) -> None:
        self._predicts.append((frozenset(variable_ids), values, location, mark))

    def _assigned(self, variable, value, how, location) -> None:
        self._assigns.append(Assign(variable._id, value._id, how, location))

    def watched_variables(self) -> tuple:
        """The variables this tape watches, in the order they were created (as TensorFlow documents)."""
        return tuple(sorted((t for t in self._watched.values() if isinstance(t, Variable)), key=lambda v: v._id))

    @property
    def nodes(self) -> tuple:
        """The records of the tape, in the order they were made."""
        return tuple(self._nodes)

    # ----- differentiation ----------------------------------------------------
    def _claim(self, what: str) -> None:
        if self._used and not self.persistent:
            again = "a second time" if self._used == what else f"after {self._used}()"
            raise RuntimeError(
                f"GradientTape.{what}() was called {again} on a non-persistent tape. A tape "
                "answers one gradient or jacobian call unless created with "
                "adv.GradientTape(persistent=True); do that to ask several times.")
        self._used = what       # the name of the one call a non-persistent tape answers

    def _release(self, done=()) -> None:
        """After the one call of a non-persistent tape: let go of the values the records saved.

        As TensorFlow's tapes do, so a training step's activations and the
        weights it read are freed once the user drops the outputs. Records
        that another live tape also made keep their values until that tape
        lets go too. The light records stay for :meth:`explain`. ``done``:
        output ids of records the gradient walk already released (its ``freed``).
        """
        if self.persistent or self._released:
            return
        self._released = True
        if not self._heavy:
            return
        mine = self.serial
        engine.release(self._nodes, mine, lambda serials: all(
            s == mine or getattr(live_tapes.get(s), "_released", True) for s in serials), done)

    def _frees(self):
        """The serial to pass as ``walks.backward(free=...)``: records let go during the walk (non-persistent only)."""
        return None if self.persistent or not self._heavy else self.serial

    def _require_values(self, what: str) -> None:
        """Refuse, with the fix, to draw a non-persistent tape whose gradient call let go of large values.

        A tape whose values were all small (≤ ``engine.KEEP_SIZE`` entries each) kept them, so it can still be
        drawn and compared after its gradient call: the why-None workflow (gradient, then show) works on the
        small examples of a course.
        """
        if self._released and self._heavy:
            raise RuntimeError(
                f"{what}: this non-persistent tape let go of the values it recorded when gradient() or "
                "jacobian() was called (as TensorFlow's tapes do, to free memory), so it has nothing left "
                "to draw. Call tape.trace()/adv.show(tape) before tape.gradient(), or create the tape with "
                "adv.GradientTape(persistent=True). tape.explain() still works.")

    @contextlib.contextmanager
    def _walking(self):
        """Walk this tape's record without recording the walk on the tape itself."""
        saved = state.recording
        state.recording = [t for t in saved if t is not self]
        try:
            yield bool(state.recording)
        finally:
            state.recording = saved

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """The gradient of ``target`` with respect to ``sources``.

        Args:
            target: a tensor, or a list of tensors whose gradients add up. A
                non-scalar target gives the gradient of the *sum* of its
                entries (``1ᵀJ``), the shape of each source, as TensorFlow.
            sources: a tensor, or a list / tuple / dict of them; the result
                has the same structure.
            output_gradients: the upstream gradient ``v`` for each target
                (same shapes); the result is then the vector-Jacobian product ``vᵀJ``.
            unconnected_gradients: ``"none"`` (a source the target does not
                depend on gets None), ``"zero"`` (zeros of its shape) or
                ``"raise"`` (an :class:`~autodiff_viz.UnconnectedGradientError`
                whose text is :meth:`explain`'s answer);
                ``adv.UnconnectedGradients.NONE`` / ``.ZERO`` as in TensorFlow.

        An integer or bool source gets None (zeros with ``"zero"``) and a
        ``UserWarning`` that says to make it float, as TensorFlow warns and
        returns None; a source that is not a tensor is a ``TypeError``.

        A non-persistent tape lets go of the values it saved once this call
        has answered (see :meth:`_release`); :meth:`explain` still works.
        """
        unconnected_gradients = _unconnected(unconnected_gradients, _UNCONNECTED + ("raise",), "gradient")
        flat_sources, rebuild = flatten(sources)
        self._check_sources(flat_sources, "gradient")
        targets = flatten(target)[0]
        for t in targets:
            if not isinstance(t, (Tensor, int, float, complex, np.number, np.ndarray)) or isinstance(t, bool):
                raise TypeError(f"gradient: the target must be a tensor (or a list of tensors), got "
                                f"{type(t).__name__}. Pass the loss tensor computed inside the tape.")
        if output_gradients is None:
            ogs = [None] * len(targets)
        else:
            ogs = flatten(output_gradients)[0]
            if len(ogs) != len(targets):
                raise ValueError(f"gradient: {len(targets)} target(s) but {len(ogs)} output_gradients.")
            ogs = [og if og is None or isinstance(og, Tensor) else Tensor(og) for og in ogs]
            for t, og in zip(targets, ogs):
                if og is not None and isinstance(t, Tensor) and og.shape != t.shape:
                    raise ValueError(f"gradient: output_gradients has shape {og.shape}, but the target has shape "
                                     f"{t.shape}; they must be equal (one upstream value per target entry).")
        self._claim("gradient")
        freed: set = set()     # records the walk lets go of (see _release)
        saved = state.recording           # walk without recording the walk on this tape (as _walking)
        state.recording = [t for t in saved if t is not self] if saved else saved
        try:
            recorded = bool(state.recording)
            seeds = {}
            for t, og in zip(targets, ogs):
                seed = self._seed(t, og, recorded)
                if seed is not None:
                    seeds[t._id] = seed if t._id not in seeds else seeds[t._id] + seed
            source_ids, reach = self._walk_ids(flat_sources, targets)
            grads = walks.backward(self._nodes, seeds, source_ids, free=self._frees(), freed=freed, reach=reach)
            out = [self._result(grads.get(s._id), s, unconnected_gradients) for s in flat_sources]
        finally:
            state.recording = saved
        del grads, seeds
        if any(g is None for g in out):
            _UNANSWERED[:] = [(self, [t for t in targets if isinstance(t, Tensor)],
                               {id(s) for s, g in zip(flat_sources, out) if g is None})]
        if self._escapes:
            warn_partial(self, targets, flat_sources, out)
        self._release(freed)
        if unconnected_gradients == "raise":
            self._raise_unconnected(targets, flat_sources, out)
        interrupts.check()
        return rebuild(out)

    def explain(self, target, source):
        """Why ``self.gradient(target, source)`` is None (or that it is not): an :class:`~autodiff_viz.Explanation`.

        ``source`` may be a list, a dict or a model (as ``gradient`` takes): one
        row per source, broken ones first. Leaves are named by the caller's variables.
        """
        from ..diagnosis.walk import caller_names
        frame = user_frame_object()     # the learner's frame, compiled or not (a compiled explain makes no frame)
        names = caller_names({**frame.f_globals, **frame.f_locals}) if frame is not None else {}
        return explain(self, target, source, names)

    @staticmethod
    def why_unanswered(variable):
        """Why the last ``gradient()`` call that returned None for ``variable`` did so (an Explanation), or None
        when the last call with a None answer did not ask about it.

        An optimizer's "no gradients provided for any variable" uses it: the learner who wrote
        ``tape.gradient(-loss, variables)`` holds no tensor to pass to :meth:`explain`. Only that one call is
        kept (its tape and targets), until the next call with a None answer.
        """
        if not _UNANSWERED or id(variable) not in _UNANSWERED[0][2]:
            return None
        tape, targets, _ = _UNANSWERED[0]
        if not targets:
            return None
        return explain(tape, targets[0] if len(targets) == 1 else targets, variable, {})

    def _raise_unconnected(self, targets, sources, grads) -> None:
        for s, g in zip(sources, grads):
            if g is None:
                raise UnconnectedGradientError(explain(self, [t for t in targets if isinstance(t, Tensor)], s))

    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """Every partial derivative: shape ``target.shape + source.shape`` per source.

        One backward walk seeded with the identity of shape
        ``target.shape + target.shape`` (each row of the Jacobian is a batch
        entry). ``parallel_iterations`` and ``experimental_use_pfor`` are
        TensorFlow's options for its loop over rows; they are accepted so TF
        code runs as is, and change nothing: the pass here is already
        vectorized (all rows in one walk).
        """
        unconnected_gradients = _unconnected(unconnected_gradients, _UNCONNECTED, "jacobian")
        _pfor_options("jacobian", parallel_iterations, experimental_use_pfor)
        if not isinstance(target, Tensor):
            raise TypeError(f"jacobian: target must be a tensor, got {type(target).__name__}.")
        flat_sources, rebuild = flatten(sources)
        self._check_sources(flat_sources, "jacobian")
        _check_jacobian_size("jacobian", target.size, target.size, target.dtype,
                             [s.size for s in flat_sources if isinstance(s, Tensor)])
        self._claim("jacobian")
        freed: set = set()     # records the walk lets go of (see _release)
        with self._walking() as recorded:
            n = target.size
            eye = np.eye(n, dtype=target.dtype).reshape(target.shape + target.shape)
            seeds = {} if target.dtype.kind not in "fc" else {target._id: Tensor(eye) if recorded else eye}
            source_ids, reach = self._walk_ids(flat_sources, [target])
            grads = walks.backward(self._nodes, seeds, source_ids, free=self._frees(), freed=freed, reach=reach)
            out = [self._result(grads.get(s._id), s, unconnected_gradients, batch=target.shape)
                   for s in flat_sources]
        del grads, seeds
        self._release(freed)
        interrupts.check()
        return rebuild(out)

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per-example Jacobians: ``(batch,) + target.shape[1:] + source.shape[1:]``.

        Assumes example ``i`` of the target depends only on example ``i`` of the
        source (as TensorFlow). One backward walk seeded with an identity over
        the per-example entries of the target. ``parallel_iterations`` and
        ``experimental_use_pfor`` are accepted as in TensorFlow and change
        nothing: the walk is already vectorized over every row.
        """
        unconnected_gradients = _unconnected(unconnected_gradients, _UNCONNECTED, "batch_jacobian")
        _pfor_options("batch_jacobian", parallel_iterations, experimental_use_pfor)
        for name, t in (("target", target), ("source", source)):
            if not isinstance(t, Tensor) or t.ndim < 1:
                raise ValueError(f"batch_jacobian: {name} must be a tensor with a batch axis first.")
        if target.shape[0] != source.shape[0]:
            raise ValueError(f"batch_jacobian: target has batch size {target.shape[0]}, "
                             f"source has {source.shape[0]}; they must match.")
        self._check_sources([source], "batch_jacobian")
        per_entries = int(np.prod(target.shape[1:], dtype=np.int64))
        _check_jacobian_size("batch_jacobian", per_entries, target.size, target.dtype, [source.size])
        self._claim("batch_jacobian")
        freed: set = set()     # records the walk lets go of (see _release)
        per = target.shape[1:]
        with self._walking() as recorded:
            m = int(np.prod(per, dtype=int))
            eye = np.eye(m, dtype=target.dtype).reshape(per + (1,) + per)
            seed = np.broadcast_to(eye, per + target.shape).copy()
            grads = walks.backward(self._nodes, {target._id: Tensor(seed) if recorded else seed},
                                   self._walk_ids([source], [target])[0], free=self._frees(), freed=freed)
            g = grads.get(source._id)
            if g is not None:
                k = len(per)
                axes = (k,) + tuple(range(k)) + tuple(range(k + 1, g.ndim))
                g = rules.transpose(g, axes=axes)
            del grads, seed
        self._release(freed)
        interrupts.check()
        if g is None:
            if unconnected_gradients == "zero":
                return Tensor(np.zeros((source.shape[0],) + per + source.shape[1:], dtype=source.dtype))
            return None
        return g if isinstance(g, Tensor) else Tensor._wrap(np.ascontiguousarray(g))

    def _reach(self, source_ids: set):
        """What to pass as ``walks.backward(reach=...)``: the ids this tape tracks when it watches sources only.

        Every tracked id depends on a watched tensor (the tape added it while
        recording), so when each watched tensor is a source the walk needs no
        forward pass to find the ids a gradient can reach. Otherwise (a
        gradient with respect to some of the watched tensors) ``None``: the
        walk works out the exact paths and computes nothing for the others.
        """
        return self._tracked if self._watched.keys() <= source_ids else None

    def _source_ids(self, sources) -> set:
        """Ids of the sources this tape tracks; the others get no gradient (TensorFlow semantics)."""
        return {s._id for s in sources if s._id in self._tracked}

    def _walk_ids(self, sources, targets) -> tuple:
        """``(source ids, reach)`` for :func:`walks.backward`: the sources this tape tracks, and any source
        that is itself a target, tracked or not (``tape.gradient(v, v)`` is 1, as TensorFlow's
        ``sources_that_are_targets``: ``result = v0`` in an ``if`` branch has gradient 1 for ``v0``)."""
        ids = self._source_ids(sources)
        itself = {t._id for t in targets if isinstance(t, Tensor)} & {s._id for s in sources} - ids
        ids |= itself
        reach = self._reach(ids)
        return ids, (reach | itself if itself and reach is not None else reach)

    def _check_sources(self, sources, what):
        """Refuse sources that are not tensors; warn about integer/bool ones (their gradient is None, as TensorFlow)."""
        for s in sources:
            if (type(s) is Variable or type(s) is Tensor) and s._value.dtype.kind in "fc":
                continue        # the usual source: nothing to explain
            if not isinstance(s, Tensor):
                raise TypeError(f"{what}: {wrong_source(s, 'engine')}")
            if s.dtype.kind not in "fc":
                warnings.warn(
                    f"{what}: the source {_label(s)} has dtype {s.dtype}, so its gradient is None (gradients "
                    "exist only for floating tensors; TensorFlow warns and returns None too). Fix: make it "
                    "float, e.g. adv.constant(value, dtype='float64') or "
                    "adv.Variable(np.asarray(value, dtype='float64')).", UserWarning,
                    stacklevel=user_stacklevel())

    @staticmethod
    def _seed(target, output_gradient, recorded):
        if not isinstance(target, Tensor) or target.dtype.kind not in "fc":
            return None
        if output_gradient is None:
            shape = target.shape
            seed = np.array(1, dtype=target.dtype) if not shape else np.ones(shape, dtype=target.dtype)
            return Tensor._wrap(seed) if recorded else seed
        og = output_gradient if isinstance(output_gradient, Tensor) else Tensor(output_gradient)
        if og.shape != target.shape:
            raise ValueError(f"gradient: output_gradients has shape {og.shape}, but the target has shape "
                             f"{target.shape}; they must be equal (one upstream value per target entry).")
        if recorded:
            return og
        return og._value.astype(target.dtype, copy=False)

    @staticmethod
    def _result(g, source, unconnected, batch=()):
        if g is None:
            if unconnected == "zero":
                return Tensor(np.zeros(tuple(batch) + source.shape, dtype=source.dtype))
            return None
        dtype = source._value.dtype
        if isinstance(g, Tensor):
            return g if g._value.dtype == dtype else g.astype(dtype)
        if type(g) is not np.ndarray or g.dtype != dtype or not g.flags.writeable:
            g = np.asarray(g).astype(dtype)
        return Tensor._wrap(g)

    def _push(self, tangents: dict) -> dict:
        """Forward-mode walk of this tape's record from ``{id: tangent}``."""
        with self._walking():
            return walks.push_tangents(self._nodes, tangents)

    def trace(self, target=None, sources=None, value_limit=None):
        """The forward and backward record as an :class:`autodiff_viz.Trace` (built now, from the record).

        ``target`` defaults to the output of the last recorded op, ``sources``
        to every watched tensor; arrays with more than ``value_limit``
        entries keep summary statistics only (``None``: ``adv.trace.VALUE_LIMIT``).
        A target this tape did not record (computed outside the ``with``
        block, or a constant) is a ``ValueError`` that says why, as
        :meth:`explain` does. Does not use up a non-persistent tape, but
        needs the values it recorded: ask before ``gradient`` on a
        non-persistent tape (after it, the tape has let go of them).
        """
        self._require_values("tape.trace()")
        require_recorded(self, target, "tape.trace()")
        return build_trace(self, target, sources, value_limit)

    def table(self, target=None, sources=None):
        """The tape as a table (the Wengert list): HTML in notebooks, text in a terminal."""
        return self.trace(target, sources).table()

    def __repr__(self):
        state_ = "recording" if self.recording else "stopped"
        return f"<GradientTape #{self.serial} {state_}, {len(self._nodes)} records>"
