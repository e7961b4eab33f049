"""Ctrl-C (Jupyter's "interrupt the kernel") stops the engine's loops every time.

This is base: it knows no tensor, only Python's signals.

Jupyter's interrupt is a SIGINT. Python handles it by raising
``KeyboardInterrupt`` at the next bytecode it runs, wherever that is. When
that bytecode belongs to a weakref callback or a ``__del__`` (the garbage
collector runs them in the middle of anything: the registry of live tapes,
:data:`autodiff_viz.base.state.live_tapes`, drops a tape through one every
training step), the interpreter cannot pass the exception on: it prints
"Exception ignored in: ... KeyboardInterrupt" and carries on, and the loop
the learner wanted to stop runs to its end.

Three pieces make the interrupt arrive:

* :func:`arm` wraps ``sys.unraisablehook`` (it is done once on import and
  again whenever someone else replaced the hook): a ``KeyboardInterrupt``
  the interpreter had to drop is remembered as *pending* instead of
  printed. Every other unraisable exception goes to the previous hook.
* :func:`check` raises the pending interrupt. The engine calls it where a
  loop can stop cleanly: a tape's ``with`` block opening and closing, the
  end of ``gradient``/``jacobian``, every batch of ``fit``, ``evaluate``
  and ``predict`` (through :func:`guard`).
* :func:`deferred` holds a SIGINT back while a piece of work must finish as
  a whole: the optimizer updating every variable of a step. The interrupt
  is raised as the section ends, so a stopped ``fit`` leaves the weights
  of its last whole step and the optimizer's slots and ``iterations`` in
  agreement, and ``fit`` can be called again.

An interrupt that goes up through :func:`guard` (or a tape's ``with``
block) clears the pending one: one press of "interrupt" stops one loop.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading

_pending = False       # a KeyboardInterrupt was dropped in a callback and not raised yet
_previous_hook = None  # the unraisable hook ours hands everything else to
_deferring = 0         # depth of deferred() sections in the main thread
_held = False          # a SIGINT arrived inside a deferred() section


def _hook(unraisable) -> None:
    """``sys.unraisablehook``: remember a dropped ``KeyboardInterrupt``; pass the rest on."""
    global _pending
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _pending = True
        return
    (_previous_hook or sys.__unraisablehook__)(unraisable)


def arm() -> None:
    """Make sure a ``KeyboardInterrupt`` dropped by the interpreter is remembered (cheap: one comparison)."""
    global _previous_hook
    current = sys.unraisablehook
    if current is not _hook:
        _previous_hook = current
        sys.unraisablehook = _hook


def pending() -> bool:
    """Is there an interrupt the interpreter dropped that :func:`check` has not raised yet?"""
    return _pending


def check() -> None:
    """Raise ``KeyboardInterrupt`` now if one was dropped inside a weakref callback or ``__del__``."""
    global _pending
    if _pending:
        _pending = False
        raise KeyboardInterrupt


def clear() -> None:
    """Forget a pending interrupt (one that went up by itself already stopped what it meant to stop)."""
    global _pending
    _pending = False


@contextlib.contextmanager
def guard():
    """Around a loop of the engine (``evaluate``, ``predict``): arm, and raise a dropped interrupt on the way out.

    Inside, call :func:`check` once per step. A ``KeyboardInterrupt``
    leaving the loop clears any pending one, so it is raised once.
    """
    arm()
    try:
        yield
    except KeyboardInterrupt:
        clear()
        raise
    check()


def _hold(signum, frame) -> None:
    """The SIGINT handler inside :func:`deferred`: note it, raise later."""
    global _held
    _held = True


@contextlib.contextmanager
def deferred():
    """Run the body as a whole: a SIGINT arriving inside is raised as ``KeyboardInterrupt`` once it ends.

    Only in the main thread (signals arrive there) and only while Python's
    own handler is installed (a program that set its own SIGINT handler,
    or ignores SIGINT, keeps it). Sections nest: the outermost one holds.
    The order of the steps matters: ``_hold`` is installed before the
    section counts as open and the section is closed before Python's
    handler comes back, so an interrupt landing between two steps can
    never leave a section open for good (every later update would then
    run unprotected).
    """
    global _deferring, _held
    if (_deferring or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    _held = False
    signal.signal(signal.SIGINT, _hold)      # from here on a SIGINT only sets _held
    try:
        _deferring = 1
        yield
    finally:
        _deferring = 0
        signal.signal(signal.SIGINT, signal.default_int_handler)
        held, _held = _held, False
        if held:
            raise KeyboardInterrupt
    check()

arm()
