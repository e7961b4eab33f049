"""What is recording now, where, and on whose behalf: the state every op reads.

This is the bottom of the house (base): it knows no tensor and no rule.

* :data:`state` — one copy per thread (TensorFlow's tapes are thread-local):
  the tapes recording now, the tapes whose ``with`` block we are in, the name
  scope, the shared user location, the lineage switch and the anomaly
  detector.
* :data:`config` — the global switches (``capture_locations``).
* The learner's line: :func:`user_frame` finds the first frame outside the
  package cheaply, :func:`resolve_location` turns it into ``file:line`` only
  when a trace or a diagnosis asks.
* Scopes: :class:`name_scope`, :func:`enter_scope` / :func:`exit_scope` (a
  layer opens one on every call), :class:`shared_location`, :func:`paused`.
* :data:`live_tapes` — every tape not yet garbage-collected, so a diagnosis
  can ask other tapes whether they saw a tensor.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
import weakref

from .devices import DeviceSettings

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep   # the package, above base/
_getframe = sys._getframe


class Config(DeviceSettings):     # tf.config's device functions: adv.config.list_physical_devices
    """Switches that trade information for speed, shared by every thread.

    ``capture_locations``: remember the ``file:line`` of the user code that
    made each recorded op (on by default: it is what lets a diagnosis point
    at your line).

    Unlike the recording state (:data:`state`, one per thread), ``config`` is
    global: setting a switch in one thread changes it for all of them.
    """

    def __init__(self):
        self.capture_locations = True

    def __repr__(self):
        return f"Config(capture_locations={self.capture_locations})"


config = Config()


class _State(threading.local):
    """What the engine is doing, one copy per thread (TensorFlow's tapes are thread-local too).

    A tape opened in one thread records the ops run in that thread only:
    each thread has its own list of recording tapes, entered tapes, name
    scope, shared location, lineage switch and anomaly detector. A new
    thread starts with nothing recording, no scope, lineage on and no
    anomaly detection. ``config`` is the one global switchboard.
    """

    def __init__(self):
        self.recording: list = []   # tapes that record now, innermost last
        self.entered: list = []     # tapes inside whose `with` block we are
        self.scope: tuple = ()      # name scope stack, pushed by layers
        self.scope_path: str = ""
        self.lineage = True         # False while the engine runs its own walks
        self.anomaly = None         # set by adv.detect_anomaly(): checks every op and backward step
        self.location = None        # set by shared_location(): the user line for every op inside


state = _State()


def user_frame(skip: int = 0):
    """``(code, lasti)`` of the first frame outside this package, or None.

    Cheap on purpose (it runs for every recorded op): the line number is
    worked out later, by :func:`resolve_location`, only when a trace or a
    diagnosis asks. The walk goes up ``f_back`` from the caller, one dict
    look-up per frame (file name -> inside the package?); ops run two to
    four package frames below the user's line, so that is a few steps.
    ``skip`` counts extra package frames between the caller and this function.
    """
    try:
        f = _getframe(0 if COMPILED else 1 + skip)
    except ValueError:
        return None
    return _first_user_frame(f)


def user_frame_object():
    """The first frame outside this package (the frame itself: its locals name the learner's tensors), or None."""
    f = _getframe(0)
    while f is not None and _inside(f.f_code.co_filename):
        f = f.f_back
    return f


def _first_user_frame(f):
    """:func:`user_frame` from frame ``f`` upwards."""
    internal = _internal_file
    while f is not None:
        code = f.f_code
        inside = internal.get(code.co_filename)
        if inside is None:
            inside = _inside(code.co_filename)
        if not inside:
            return (code, f.f_lasti)
        f = f.f_back
    return None


#: the ``_made_at`` of a constant an op made from a Python number the code wrote (``t ** 2``, ``0.5 * x``):
#: no line of its own, and no evidence that a value which left a tape as numpy came back
PYTHON_NUMBER = ("<a Python number>", 0)


def resolve_location(where):
    """``(filename, lineno)`` from what :func:`user_frame` recorded (or an already resolved pair)."""
    if where is None or where is PYTHON_NUMBER:
        return None
    if isinstance(where[0], str):
        return where
    code, lasti = where
    line = code.co_firstlineno
    for start, end, lineno in code.co_lines():
        if start <= lasti < end and lineno is not None:
            line = lineno
            break
    return (code.co_filename, line)


def user_location():
    """``(filename, lineno)`` of the first frame outside this package, or None."""
    return resolve_location(user_frame(skip=1))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the caller point at the learner's line.

    Counts the package frames between the function that warns and the first
    frame outside the package, so a warning names the user's call whether it
    came directly (``opt.apply_gradients``) or through another entry point
    (``opt.apply``, ``fit``).
    """
    f, level = _getframe(0 if COMPILED else 1), 1     # warnings.warn counts from the nearest Python frame
    while f is not None and _inside(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


def is_package_code(func) -> bool:
    """Was ``func`` written in this package (not by the user)?"""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    filename = code.co_filename
    if not os.path.isabs(filename):     # compiled (setup.py): named from the folder that holds the package
        filename = os.path.join(os.path.dirname(_PACKAGE_DIR.rstrip(os.sep)), filename)
    return _inside(filename)


def _inside(filename: str) -> bool:
    # Keyed by file name: hashing a code object hashes all its constants (slow for a notebook cell).
    inside = _internal_file.get(filename)
    if inside is None:
        inside = _internal_file[filename] = filename.startswith(_PACKAGE_DIR)
    return inside


_internal_file: dict = {}   # file name -> is it inside this package?


scope_kinds: dict = {}   # scope name -> what opened it most recently ("Dense" for a layer; None for a plain scope)
# A kind that starts with this is a class whose ``call`` the learner wrote ("own:Linear"): a trace titles the box
# by the class name but gives it no library formula (``Trace.own``), whatever the name.
OWN_KIND = "own:"


class name_scope:
    """Prefix the scope of every op recorded inside (``model/dense_1``).

        >>> with adv.name_scope("encoder"):
        ...     h = adv.tanh(x)        # recorded with scope "encoder"

    ``kind`` says what the scope is (a layer passes its class, ``"Dense"``), so
    a drawing can title the folded box as ``summary()`` does: ``dense_1 (Dense)``.
    ``share_location`` (True or False) also does :class:`shared_location`'s
    work for the block, in the same ``with``: what a layer or a loss does on
    every call.
    """

    __slots__ = ("name", "kind", "share", "_saved")

    def __init__(self, name: str, kind: str | None = None, share_location: bool | None = None):
        self.name = str(name)
        self.kind = kind
        self.share = share_location

    def __enter__(self):
        self._saved = enter_scope(self.name, self.kind, self.share)
        return state.scope_path

    def __exit__(self, *exc):
        exit_scope(self._saved)
        return False


def enter_scope(name: str, kind: str | None = None, share: bool | None = None) -> tuple:
    """Open :class:`name_scope` ``name`` in this thread; returns what :func:`exit_scope` needs to close it.

    The scope itself, without a context-manager object: a layer opens one on
    every call.
    """
    scope_kinds[name] = kind
    st = state.__dict__         # this thread's attributes: one thread-local look-up, then plain dict reads
    scope = st["scope"]
    saved = (scope, st["scope_path"], _NOT_SHARED if share is None else _enter_location(st, share, 1))
    scope = st["scope"] = scope + (name,)
    st["scope_path"] = "/".join(scope)
    return saved


def exit_scope(saved: tuple) -> None:
    """Close the scope :func:`enter_scope` opened (``saved`` is what it returned)."""
    st = state.__dict__
    st["scope"], st["scope_path"], location = saved
    if location is not _NOT_SHARED:
        st["location"] = location


_NOT_SHARED = object()     # a name_scope that leaves the shared location alone


def _enter_location(st: dict, share: bool, skip: int = 0):
    """Set this thread's shared location for a block (see :class:`shared_location`); returns the one to restore.

    ``st``: ``state.__dict__``. ``skip``: package frames between the ``__enter__`` that calls this and the
    block's caller.
    """
    saved = st["location"]
    if not share:
        if saved is not None:
            st["location"] = None
    elif saved is None and config.capture_locations:
        st["location"] = user_frame(skip + 1)
    return saved


class shared_location:
    """Ops run inside share one user-code location, found once on entry.

    For package code that runs many ops on behalf of one user call (a
    built-in layer, a loss), every op would find the same location by
    walking the stack, so walk once. ``share=False`` clears a shared
    location for the block: code the user wrote (a custom layer's ``call``,
    an RNN cell) runs inside, and its ops get their own lines.
    """

    __slots__ = ("share", "_saved")

    def __init__(self, share: bool = True):
        self.share = share

    def __enter__(self):
        self._saved = _enter_location(state.__dict__, self.share, 1)
        return self

    def __exit__(self, *exc):
        state.location = self._saved
        return False


@contextlib.contextmanager
def paused(lineage: bool = False):
    """Run engine-internal computation: no tape records anything, and no history is kept.

    ``lineage=True`` keeps the history (each op's record, as outside any
    tape) while still recording on no tape: ``evaluate`` uses it so a loss
    can read the logits off the record of a final ``sigmoid``/``softmax``.
    """
    old_rec, old_lin = state.recording, state.lineage
    state.recording, state.lineage = [], lineage
    try:
        yield
    finally:
        state.recording, state.lineage = old_rec, old_lin


#: Every tape not yet garbage-collected, by serial: a diagnosis asks the other tapes whether they saw a tensor,
#: and a walk asks whether a record's other tapes are done with it.
live_tapes: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


#: Is this module compiled (see ``setup.py``)? Its functions then make no Python frames, so a walk up the
#: stack starts at the nearest Python frame.
COMPILED = type(user_frame) is not types.FunctionType
