"""Ending a run early without losing its results: signals, time limits, a rank's ``os._exit``.

A run that is stopped — Ctrl-C (SIGINT), SIGTERM (what ``timeout``, Slurm and most schedulers
send), SIGHUP (the terminal went away), ``smpyrun --timeout`` (wall clock, delivered as
SIGALRM) — ends like an MPI_Abort: the ranks are unwound, the trace files are closed (valid
JSON / Paje), the summary and ``--json`` are written, and the process exits with the shell's
convention ``128 + signal`` (130, 143, 129) or 124 for a time limit, as ``timeout`` does.

Python runs a signal handler in the main thread between two bytecodes, i.e. inside whichever
greenlet is running: the handler raises :class:`Stop` (a ``KeyboardInterrupt``, so that
``except Exception`` in the program does not swallow it). Raised in a rank, the kernel takes
it as the rank's failure and aborts the simulation; raised in the kernel's loop, it leaves
:meth:`smpy.kernel.engine.Engine.run`; either way :func:`smpy.cli.launch.run` reports it.

Outside the simulation — while the platform loads, or while the results are written — a
signal must not cut a file in half: :class:`StopSignals` then only records it. A signal that
arrived before the simulation stops it as soon as it starts (at simulated time 0, with all
outputs written); one that arrives after it is ignored (the results are complete), and a
second one during a stop is ignored too (a scheduler's SIGKILL follows if it insists). A
second Ctrl-C outside the simulation is a plain ``KeyboardInterrupt``, the user's way out.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class Stop(KeyboardInterrupt):
    """The run was stopped from outside: ``status`` and ``exit_code`` of the result, and the
    line the summary prints."""

    def __init__(self, status: str, exit_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.exit_code = exit_code
        self.message = message


_SIGNALS = {"SIGINT": ("interrupted", "interrupted by the user (Ctrl-C)"),
            "SIGTERM": ("interrupted", "terminated by SIGTERM"),
            "SIGHUP": ("interrupted", "hung up (SIGHUP)")}


def signal_stop(signum: int) -> Stop:
    name = signal.Signals(signum).name
    status, what = _SIGNALS.get(name, ("interrupted", f"stopped by {name}"))
    return Stop(status, 128 + signum, f"[smpy] {what}")


#: signals received before a StopSignals was installed (see :func:`record_early`)
_early: list[int] = []
_STOP_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")


def record_early() -> None:
    """From the very start of an ``smpyrun`` process until :meth:`StopSignals.install`,
    remember SIGINT, SIGTERM and SIGHUP instead of dying with no outputs: the run then stops
    at simulated time 0 with every output written. Only the interpreter's own start-up,
    before the console script calls this, is left uncovered."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in _STOP_NAMES:
        signum = getattr(signal, name, None)
        if signum is not None:
            signal.signal(signum, lambda s, _f: _early.append(s))


class StopSignals:
    """SIGINT, SIGTERM, SIGHUP and the wall-clock limit, for the duration of a command
    (see the module docstring). Only one is active at a time: :data:`active`."""

    def __init__(self) -> None:
        self.pending: Stop | None = None
        #: the Stop raised in the simulation (a program may catch it: pytest turns a
        #: KeyboardInterrupt into its exit status 2, see :func:`fired`)
        self.stop: Stop | None = None
        self.armed = False
        self.fired = False
        self.wall_limit = 0.0
        self._saved: dict[int, Any] = {}

    def install(self, wall_timeout: float | None = None) -> StopSignals:
        global active
        if threading.current_thread() is not threading.main_thread():
            return self  # signals are delivered to the main thread only
        for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM"):
            signum = getattr(signal, name, None)
            if signum is not None:
                self._saved[signum] = signal.signal(signum, self._handler)
        if _early and self.pending is None:  # arrived while the command was starting
            self.pending = signal_stop(_early[0])
        if wall_timeout:
            self.wall_limit = float(wall_timeout)
            signal.setitimer(signal.ITIMER_REAL, self.wall_limit)
        active = self
        return self

    def uninstall(self) -> None:
        global active
        if self.wall_limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, old in self._saved.items():
            signal.signal(signum, old)
        self._saved.clear()
        if active is self:
            active = None

    def _handler(self, signum: int, frame: Any) -> None:
        if signum == getattr(signal, "SIGALRM", None):
            stop = Stop("timeout", 124, f"[smpy] wall-clock limit of {self.wall_limit:g} s reached "
                        "(--timeout); the run was stopped")
        else:
            stop = signal_stop(signum)
        if self.fired:
            return  # already stopping: let the teardown finish
        if self.armed:
            self.fired = True
            self.stop = stop
            raise stop
        if self.pending is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C outside the simulation: leave now
        if self.pending is None:
            self.pending = stop

    @contextlib.contextmanager
    def simulating(self) -> Iterator[None]:
        """Signals raise :class:`Stop` inside this block; one received before raises at once."""
        if self.pending is not None:
            self.fired = True
            raise self.pending
        self.armed = True
        try:
            yield
        finally:
            self.armed = False


#: the command's StopSignals, if it installed one (library calls of smpy.run have none and
#: keep Python's default: Ctrl-C is a KeyboardInterrupt, reported as an interrupted run)
active: StopSignals | None = None


def fired() -> Stop | None:
    """The Stop raised in the running simulation, if any: a rank that ends after catching it
    (``except KeyboardInterrupt``, pytest) must still end the run."""
    return active.stop if active is not None and active.fired else None


@contextlib.contextmanager
def simulating() -> Iterator[None]:
    """:meth:`StopSignals.simulating` of the active handler, if any."""
    if active is None:
        yield
        return
    with active.simulating():
        yield
