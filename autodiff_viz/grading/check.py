"""Grade a hand-written backward pass: the instructor's forward on a tape, the student's gradients against it.

A test cell of a backprop assignment calls :func:`check`::

    from affine_grader import reference, inputs, call        # the instructor's module: the forward only
    check(reference, affine_backward, inputs, dout=dout, call=call, names=("x", "w", "b"))

What it does, in order:

1. Runs ``reference`` — the instructor's **forward** pass — on a fresh tape
   (or a PyTorch recording with ``framework="torch"``). The student's forward
   is never trusted: the gradients the student is judged against come from
   the tape, so the instructor writes no backward pass at all.
2. Calls the student's function on copies of the values (the inputs, every
   local variable of the forward, and ``dout``), with warnings caught and
   ``stderr`` captured: a warning in a test cell would cost a correct answer
   its points in nbgrader. An exception, a wrong number of returned values,
   a wrong shape, NaN or a missing gradient becomes feedback, never a crash
   of the grader.
3. Compares every returned gradient with the tape's (``tape.compare``) and
   classifies each row (:mod:`autodiff_viz.records.mistakes`).
4. On a mistake: displays the table and the backward graph with the wrong
   node marked, then raises ``AssertionError`` with the first wrong node's
   message and its kind. On success: returns ``None`` (nbgrader gives full
   marks to a cell that ends without error and without a value). With
   ``partial=True`` it returns the points earned instead of raising.
5. Writes the structured record of the result for the class dashboard (see
   :mod:`.records`), only where a grader runs it.

Why ``None`` and not the comparison: nbgrader reads a test cell's last value
as its partial credit, and a value that is not a number as "passed, with a
warning" — a cell ending in a ``Comparison`` would give full marks to wrong
answers.
"""
from __future__ import annotations

import contextlib
import io
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..core.tensor import Tensor, as_tensor
from ..records.compare import Comparison, Row
from ..records.mistakes import MISSING, Kind, kinds_of
from ..records.tape import GradientTape

FRAMEWORKS = ("engine", "torch")


@dataclass
class Result:
    """The outcome of grading one function of one student.

    Attributes:
        label: what was graded (the student's function name unless given).
        comparison: the :class:`~autodiff_viz.Comparison` (None when the
            student's code raised or returned no gradients at all).
        error: the student's error in words (an exception, a return value of
            the wrong kind), else None.
        error_kind: ``error(TypeError)``, ``returned(None)`` … when ``error``.
        warnings: texts of the warnings the student's code (or the forward) raised.
        stderr: what the student's code wrote to ``stderr``.
        stdout: what the student's code printed (kept for the feedback, at most :data:`LIMIT` characters).
        seconds: the time the package's part took (forward, compare, record).
    """

    label: str
    comparison: Comparison | None = None
    error: str | None = None
    error_kind: str | None = None
    warnings: list = field(default_factory=list)
    stderr: str = ""
    stdout: str = ""
    seconds: float = 0.0
    _record: dict | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None and self.comparison is not None and self.comparison.ok

    def __repr__(self):
        """``Result(…)``; but ``0`` for a wrong answer while nbgrader runs the notebook.

        nbgrader reads a test cell's last value as its partial credit, and a
        value that is not a number as full marks: a test cell ending in
        ``grade(...)`` would pass a wrong answer. Under ``NBGRADER_EXECUTION``
        a wrong result therefore shows as the number 0 (no points).
        """
        import os
        if os.environ.get("NBGRADER_EXECUTION") and not self.ok:
            return "0"
        verdict = "ok" if self.ok else f"first_kind={self.first_kind!r}"
        return f"Result({self.label!r}, {verdict})"

    @property
    def kinds(self) -> list:
        return [] if self.comparison is None else kinds_of(self.comparison)

    @property
    def first_kind(self) -> str | None:
        """The kind of the first mistake (``wrong_local_factor(tanh)``, ``error(ValueError)``), None when right."""
        if self.error is not None:
            return self.error_kind
        rec = self.record()
        return rec["first_kind"]

    def fraction(self) -> float:
        """The share of the gradients that are right (0 when the code raised)."""
        if self.comparison is None or not len(self.comparison):
            return 0.0
        return sum(r.ok for r in self.comparison.rows) / len(self.comparison.rows)

    def message(self) -> str:
        """The first mistake in words, with its kind: what ``AssertionError`` says."""
        if self.error is not None:
            return f"[{self.error_kind}] {self.error}"
        if self.ok:
            return f"{self.label}: all {len(self.comparison)} gradients are right."
        rec = self.record()
        first = self.comparison.first_wrong
        kind = rec["first_kind"]
        text = f"{self.label}: the first wrong gradient along the backward pass is {first.name!r} [{kind}]: " \
               f"{Kind(*_split(kind)).phrase}. {first.message}"
        if first.factors:
            text += " The tape's local factors out of it: " + "; ".join(first.factors) + "."
        return text

    def record(self) -> dict:
        """The JSON-ready record: the comparison's rows with their kinds, or the error."""
        if self._record is None:
            if self.comparison is None:
                rec = {"ok": False, "first_wrong": None, "first_kind": self.error_kind, "rows": []}
            else:
                rec = self.comparison.to_dict()
                if self.comparison.trace is not None and not rec["ok"]:
                    rec["trace"] = self.comparison.marked_trace().to_dict()
            rec.update(label=self.label, error=self.error, error_kind=self.error_kind,
                       warnings=list(self.warnings), stderr=self.stderr)
            if self.error is not None:
                rec["ok"] = False
            self._record = rec
        return self._record


def _split(kind: str) -> tuple:
    if "(" not in kind:
        return kind, ()
    name, rest = kind.split("(", 1)
    return name, tuple(a.strip() for a in rest.rstrip(")").split(","))


class _Captured(dict):
    """The local variables of the reference forward when it returned (its intermediates, by name)."""


def _run_captured(f, kwargs: dict) -> tuple:
    """``(out, locals)``: ``f(**kwargs)`` and its local variables at return (sys.setprofile, as adv.compare)."""
    import sys
    captured = _Captured()
    code = getattr(f, "__code__", None)

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update(frame.f_locals)

    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        out = f(**kwargs)
    finally:
        sys.setprofile(old)
    return out, captured


class _Forward:
    """The instructor's forward, recorded: the target, the intermediates by name, and how to compare."""

    def __init__(self, reference, inputs: dict, dout, framework: str):
        if framework not in FRAMEWORKS:
            raise ValueError(f"check: framework must be one of {FRAMEWORKS}, got {framework!r}.")
        self.framework = framework
        self.dout = None if dout is None else np.asarray(dout, dtype=np.float64)
        if framework == "engine":
            self._engine(reference, inputs)
        else:
            self._torch(reference, inputs)

    def _engine(self, reference, inputs):
        tensors = {k: as_tensor(np.array(v, dtype=np.float64)) for k, v in inputs.items()}
        with GradientTape(persistent=True) as tape:
            for t in tensors.values():
                tape.watch(t)
            out, names = _run_captured(reference, tensors)
            target = _target(out, self.dout, None)
        self.tape, self.target, self.names = tape, target, {**tensors, **names}
        self.values = {k: np.array(v.numpy()) for k, v in self.names.items() if isinstance(v, Tensor)}

    def _torch(self, reference, inputs):
        import torch

        from .. import torch as adv_torch
        tensors = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for k, v in inputs.items()}
        with adv_torch.record() as rec:
            out, names = _run_captured(reference, tensors)
            target = _target(out, self.dout, lambda o, d: (o * torch.as_tensor(d, dtype=o.dtype)).sum())
        self.rec, self.target, self.names = rec, target, {**tensors, **names}
        self.values = {k: v.detach().clone() for k, v in self.names.items() if isinstance(v, torch.Tensor)}

    def student_values(self) -> dict:
        """Fresh copies for the student (so their code can change nothing the grader keeps)."""
        vals = {k: (v.copy() if isinstance(v, np.ndarray) else v.clone()) for k, v in self.values.items()}
        if self.dout is not None:
            vals["dout"] = self.dout.copy()
            if self.framework == "torch":
                import torch
                vals["dout"] = torch.as_tensor(vals["dout"])
        return vals

    def node_of(self, trace, tensor):
        """The trace node id of one of the forward's tensors (None without a trace)."""
        if trace is None:
            return None
        if self.framework == "engine":
            return trace.node_id_of(tensor)
        tid = self.rec.tensor_id(tensor)
        return next((n.id for n in trace.nodes if n.tensor_id == tid), None)

    def compare(self, hand: dict, rtol, atol) -> Comparison:
        if self.framework == "engine":
            from ..records.compare import compare_tape
            cmp = compare_tape(self.tape, self.target, hand, rtol, atol, namespace=self.names,
                               output_gradients=self.dout)
        else:
            cmp = self.rec._compare(self.target, hand, rtol, atol, self.names, None)
        self._name_nodes(cmp.trace)
        return cmp

    def _name_nodes(self, trace) -> None:
        """Title the trace's nodes by the forward's variable names (``z``, ``h``), as the assignment writes them.

        The forward ran inside the grader, so the line each op recorded is the
        test cell's call, not the forward's: its names and places would say
        nothing to the student. The names come from the forward's own locals.
        """
        if trace is None:
            return
        for name, tensor in self.names.items():
            if name.startswith("_"):
                continue
            node_id = self.node_of(trace, tensor)
            if node_id is not None:
                node = trace.node(node_id)
                node.label = name
        for node in trace.nodes:
            node.location = None


def _target(out, dout, weighted):
    """The scalar being differentiated: the output itself, or ``sum(out · dout)`` (CS231n's upstream ``dout``).

    The product is recorded on the tape, so every gradient on the trace — the
    upstream values and each edge's contribution — is the one the student had
    to compute from ``dout``.
    """
    if dout is None:
        if int(np.prod(out.shape)) != 1:
            raise ValueError(f"check: the reference returned shape {tuple(out.shape)}; a forward that does not "
                             "end in a scalar loss needs dout= (the upstream gradient).")
        return out
    if tuple(out.shape) != dout.shape:
        raise ValueError(f"check: dout has shape {dout.shape}, the reference's output {tuple(out.shape)}.")
    return out if weighted is None else weighted(out, dout)


def _hand(result, names) -> dict:
    """``{name: gradient}`` from what the student returned (a dict, a tuple in ``names`` order, or one array)."""
    if isinstance(result, dict):
        return dict(result)
    if names is None:
        raise _Returned(f"returned {type(result).__name__}; this check expects a dict {{name: gradient}}.",
                        f"returned({type(result).__name__})")
    names = list(names)
    if len(names) == 1 and not isinstance(result, (tuple, list)):
        return {names[0]: result}
    if not isinstance(result, (tuple, list)):
        raise _Returned(f"returned {'nothing (None)' if result is None else type(result).__name__}; "
                        f"return the gradients {', '.join(names)} (in that order).",
                        f"returned({type(result).__name__})")
    if len(result) != len(names):
        raise _Returned(f"returned {len(result)} values; return {len(names)}: {', '.join(names)} (in that order).",
                        f"returned({len(result)} of {len(names)})")
    return dict(zip(names, result))


class _Returned(Exception):
    def __init__(self, message, kind):
        super().__init__(message)
        self.kind = kind


#: seconds a student's function may run: below nbgrader's cell timeout (30 s by default), so an endless loop
#: ends in this feedback, not in nbgrader's interrupt
TIMEOUT = 10.0
#: at most this many characters of what a student's code prints or raises are kept (a loop of prints is feedback
#: of a few lines, not a page of megabytes)
LIMIT = 4000


class _TimedOut(BaseException):
    """Raised in the student's code when its time is up (a BaseException: a bare ``except Exception`` in the
    student's code cannot swallow it)."""


@contextlib.contextmanager
def _time_limit(seconds):
    """Stop the block after ``seconds`` (SIGALRM; only in the main thread of a Unix process, else no limit)."""
    import signal
    import threading
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise _TimedOut()

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _Capped(io.TextIOBase):
    """A text stream that keeps the first :data:`LIMIT` characters and counts the rest."""

    def __init__(self):
        self._parts, self._kept, self._cut = [], 0, 0

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        room = LIMIT - self._kept
        if room > 0:
            self._parts.append(text[:room])
            self._kept += min(room, len(text))
        self._cut += max(0, len(text) - max(room, 0))
        return len(text)

    def getvalue(self) -> str:
        tail = f"\n… ({self._cut} more characters not kept)" if self._cut else ""
        return "".join(self._parts) + tail


def _cut(text: str, limit: int = LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f" … ({len(text) - limit} more characters)"


def _distinct(texts: list, most: int = 10) -> list:
    """The first ``most`` distinct texts (a warning raised in a loop is said once), and how many more."""
    seen = list(dict.fromkeys(texts))
    return seen[:most] + ([f"… and {len(seen) - most} more distinct warnings"] if len(seen) > most else [])


def _student_trace(exc: BaseException) -> str:
    """The student's error, with the frames of their own code only (the grader's frames say nothing to them)."""
    tb = traceback.extract_tb(exc.__traceback__)
    mine = __file__
    frames = [f for f in tb if f.filename != mine]
    where = f" (line {frames[-1].lineno}: {frames[-1].line})" if frames and frames[-1].line else ""
    return f"your code raised {type(exc).__name__}: {_cut(str(exc), 1000)}{_cut(where, 300)}"


def grade(reference, student_fn, inputs: dict, *, names=None, dout=None, call=None, framework: str = "engine",
          rtol: float = 1e-5, atol: float = 1e-8, label: str | None = None, timeout: float | None = TIMEOUT) -> Result:
    """Grade ``student_fn`` against the tape of ``reference`` and return a :class:`Result` (never raises for
    the student's mistakes; :func:`check` is the test-cell form).

    Args:
        reference: the instructor's forward, ``reference(**inputs)`` on tensors
            (autodiff_viz tensors, or torch tensors for ``framework="torch"``),
            returning the scalar loss, or the output when ``dout`` is given.
            Its argument and local variable names are the names gradients are
            given under (``"x"``, ``"h"``, ``"z"``).
        student_fn: the student's backward.
        inputs: ``{name: array}``, the forward's inputs; all are watched.
        names: the names of the values ``student_fn`` returns, in order (not
            needed when it returns a dict).
        dout: the upstream gradient of the reference's output (then every
            gradient is of ``sum(out · dout)``, CS231n's convention).
        call: ``call(student_fn, values)`` calls the student's function, where
            ``values`` holds copies of the inputs, every local variable of the
            forward (``values["h"]``) and ``dout``; the default is
            ``student_fn(**{name: values[name] for name in inputs})``.
        framework: ``"engine"`` (this package's tape) or ``"torch"`` (real
            PyTorch, recorded by ``adv.torch.record``).
        timeout: seconds the student's function may run; an endless loop is
            stopped and becomes the feedback ``error(timeout)`` (None: no
            limit; the limit needs the main thread, as a notebook's cells run).
    """
    start = time.perf_counter()
    label = label or getattr(student_fn, "__name__", "backward")
    result = Result(label)
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        forward = _Forward(reference, inputs, dout, framework)
        values = forward.student_values()
        err, out_text = _Capped(), _Capped()
        spent = time.perf_counter() - start
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out_text), _time_limit(timeout):
                if call is None:
                    out = student_fn(**{k: values[k] for k in inputs})
                else:
                    out = call(student_fn, values)
            hand = _hand(out, names)
        except _Returned as exc:
            result.error, result.error_kind = f"your function {exc}", exc.kind
        except _TimedOut:
            result.error = (f"your function did not return within {timeout:g} s (an endless loop?); "
                            "it was stopped.")
            result.error_kind = "error(timeout)"
        except (Exception, SystemExit) as exc:   # the student's code: every error is feedback
            result.error, result.error_kind = _student_trace(exc), f"error({type(exc).__name__})"
        restart = time.perf_counter()
        if result.error is None:
            wanted = list(names) if names is not None else list(hand)
            unknown = [k for k in hand if k not in forward.names]
            if unknown:
                result.error = (f"your function returned gradients named {unknown}, but the forward has no such "
                                f"variable; its names are {sorted(k for k in forward.names if not k.startswith('_'))}.")
                result.error_kind = "returned(unknown names)"
            else:
                given = {k: hand[k] for k in wanted if k in hand and hand[k] is not None}
                missing = [k for k in wanted if k not in given]
                result.comparison = _with_missing(forward, given, missing, rtol, atol)
        result.stderr, result.stdout = err.getvalue(), out_text.getvalue()
    result.warnings = _distinct([f"{w.category.__name__}: {_cut(str(w.message), 300)}" for w in caught])
    result.seconds = spent + time.perf_counter() - restart
    return result


def _with_missing(forward: _Forward, given: dict, missing: list, rtol, atol) -> Comparison:
    """The comparison of ``given``, with a ``missing`` row for each gradient the student did not return."""
    if given:
        cmp = forward.compare(given, rtol, atol)
    else:
        cmp = forward.compare({missing[0]: np.zeros(tuple(forward.names[missing[0]].shape))}, rtol, atol)
        cmp.rows = []
    trace = cmp.trace
    for k in missing:
        t = forward.names[k]
        node = forward.node_of(trace, t)
        if node is None and trace is not None:
            node = next((n.id for n in trace.nodes if k in (n.name, n.label)), None)
        cmp.rows.append(Row(k, node, "invalid", (), tuple(t.shape), np.nan, np.nan,
                            f"Missing: no gradient for {k!r} was returned.", (), MISSING, None))
    order = {n.id: i for i, n in enumerate(trace.nodes)} if trace is not None else {}
    cmp.rows.sort(key=lambda r: -order.get(r.node, -1))
    return cmp


def check(reference, student_fn, inputs: dict, *, points: float | None = None, partial: bool = False,
          names=None, dout=None, call=None, framework: str = "engine", rtol: float = 1e-5, atol: float = 1e-8,
          label: str | None = None, records=None, student: str | None = None, show: bool = True,
          timeout: float | None = TIMEOUT, assignment: str | None = None):
    """The test-cell check: grade, show what is wrong, raise on a mistake (see the module docstring).

    Arguments as :func:`grade`, and:

    Args:
        points: the cell's points (needed for ``partial``).
        partial: return ``points × (share of gradients right)`` instead of
            raising (nbgrader reads a number as partial credit).
        records: a folder for the per-student record (default: chosen by
            :func:`autodiff_viz.grading.records.records_folder`, only when a
            grader runs the notebook).
        student: the student's id for the record (default: from the folder).
        assignment: the assignment's name for the record (default: nbgrader's
            folder, else ``ADV_GRADING_ASSIGNMENT``).
        show: display the table and the marked graph when something is wrong.

    Returns:
        None when every gradient is right (or the partial score with ``partial=True``).

    Raises:
        AssertionError: the first wrong gradient, in words, with its kind.
    """
    from . import feedback
    from .records import write_record
    result = grade(reference, student_fn, inputs, names=names, dout=dout, call=call, framework=framework,
                   rtol=rtol, atol=atol, label=label, timeout=timeout)
    write_record(result, records, student, assignment)
    if show:
        feedback.display(result)
    if partial:
        if points is None:
            raise ValueError("check(partial=True) needs points= (the cell's points).")
        return round(float(points) * (1.0 if result.ok else result.fraction()), 4)
    if not result.ok:
        raise AssertionError(result.message())
    return None
