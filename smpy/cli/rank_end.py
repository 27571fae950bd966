"""How a rank's program ends, as it ends under ``mpiexec`` (MPICH's Hydra) with ``python app.py``.

Each process of a real job is a Python interpreter; what it does when its program ends, and
what Hydra then does with the job (measured with the venv's MPICH 5.0.2 hydra, mpi4py 4.1.2;
tests/test_rank_end.py compares both):

* the script ends, or ``sys.exit(0)``: the exit handlers run (``atexit``: mpi4py's
  ``MPI_Finalize``), status 0;
* ``sys.exit(n)``, ``n`` not 0: the same, status ``n`` (a message: printed, status 1);
* an uncaught exception: Python prints the traceback (``sys.excepthook``), runs the exit
  handlers and exits with status 1;
* an uncaught ``KeyboardInterrupt``: the same, then the interpreter kills itself with
  SIGINT (its wait status is the signal; Hydra prints ``BAD TERMINATION ... EXIT CODE: 2``).

In every case Hydra lets the other processes run on (it ends a job early only when a process
calls MPI_Abort or dies of another signal), and when all have ended it exits with the OR of
their wait statuses — ``n << 8`` for an exit with status ``n``, ``s`` for a death by signal
``s`` — read as a wait status: the signal if one is set, else the exit status (statuses 1
and 4 give 5; SIGINT and status 4 give 2). A process that waits for one that has ended
waits forever: ``mpiexec`` hangs; here the run ends in the deadlock report, which names each
blocked rank's call and the ranks that ended early, how and when (simulated time).

Two things make an uncaught exception end the whole job, and are kept:

* mpi4py's runner, ``python -m mpi4py app.py`` and ``python -m mpi4py.futures app.py``, records
  an abort status (``mpi4py.run.set_abort_status``: 1 for an exception, the status of a
  ``SystemExit``, 130 for a ``KeyboardInterrupt``) that mpi4py's exit hook turns into
  ``MPI_Abort(MPI_COMM_WORLD, status)`` after the ``atexit`` handlers: so does the rank here;
* a ``sys.excepthook`` set by the program is called as Python calls it (the common hook that
  prints the traceback then calls ``MPI.COMM_WORLD.Abort()`` aborts the run).

``--cfg smpy/abort-on-exception:yes`` restores the first-exception-ends-everything behaviour
(the traceback and the run's end at once, as ``MPI_Abort``), handy while debugging a program.

Control exceptions of smpy itself (``MPI_Abort``, a process failure, out of memory, a
signal's :class:`smpy.cli.stops.Stop`, an internal error, a platform routing error) are not
the program's and still end the run. A plain ``KeyboardInterrupt`` is the program's only
under ``smpyrun`` (whose signal handler raises ``Stop`` for a real Ctrl-C); under
:func:`smpy.run` it is the user's Ctrl-C and stops the run.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import smpy
from smpy.cli import stops
from smpy.network.routing import RoutingError
from smpy.runtime import ulfm
from smpy.runtime.lifecycle import AbortCalled
from smpy.shim.isolation import RankExit
from smpy.support.config import declare, parse_bool
from smpy.support.internal import SmpyInternalError

ABORT_ON_EXCEPTION = declare(
    "smpy/abort-on-exception", False, "An uncaught exception in a rank aborts the whole run at once, "
    "as MPI_Abort (its traceback in the run's report); default no: as under mpiexec with python "
    "app.py, the rank prints its traceback, runs its exit handlers and ends with status 1 while "
    "the others run on (the run's exit status is then Hydra's OR of the statuses; a rank waiting "
    "for it is reported as a deadlock). python -m mpi4py aborts either way, as mpi4py's runner does",
    parse=parse_bool)

#: exceptions raised inside a rank that are smpy's, not the program's: they end the run
_SMPY_OWN = (SmpyInternalError, RoutingError, ulfm.ProcessFailure)

#: the wait status of a process killed by SIGINT (an uncaught KeyboardInterrupt)
_SIGINT = int(signal.SIGINT)


@dataclass(frozen=True)
class Ended:
    """A rank that ended early: its wait status (``n << 8`` for status ``n``, the signal
    number for a death by signal), the simulated time, and how (a phrase of the report)."""

    rank: int
    wait_status: int
    time: float
    how: str


def job_status(wait_statuses: list[int]) -> int:
    """``mpiexec``'s exit status: the OR of the processes' wait statuses, read as one (the
    signal when a signal bit is set, else the exit status)."""
    raw = 0
    for s in wait_statuses:
        raw |= s
    return raw & 0x7F or (raw >> 8) & 0xFF


def who(world: Any, p: Any) -> str:
    """``rank N``; spawned processes: their global number and their rank in their world."""
    cw = p.comm_world
    if cw is None or cw is world.initial_world:
        return f"rank {p.rank}"
    return f"spawned process {p.rank} (rank {cw.rank_of[p.rank]} of its MPI_COMM_WORLD)"


def _smpy_file(path: str) -> bool:
    return os.path.abspath(path).startswith(_SMPY_DIR)


_SMPY_DIR = os.path.dirname(os.path.abspath(smpy.__file__))


def user_traceback(exc: BaseException) -> str:
    """The traceback Python prints, without smpy's own frames."""
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if not _smpy_file(f.filename)])
    return "".join(te.format())


def tagged(p: Any, text: str) -> str:
    """``text`` with each line prefixed by ``[rank N@host] ``."""
    return "".join(f"[rank {p.rank}@{p.host.name}] {line}\n" for line in text.rstrip("\n").split("\n"))


def _program_tb(exc: BaseException) -> Any:
    """The traceback of ``exc`` from the program's first frame (smpy's launching frames off)."""
    tb = exc.__traceback__
    while tb is not None and _smpy_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def is_program_exception(exc: BaseException) -> bool:
    """Whether ``exc``, uncaught in a rank, is the program's (ends that rank only) rather than
    one of smpy's control exceptions (ends the run)."""
    if isinstance(exc, KeyboardInterrupt):
        # a real Ctrl-C under smpyrun is a Stop; a plain one there was raised by the program
        return not isinstance(exc, stops.Stop) and stops.active is not None and stops.fired() is None
    return isinstance(exc, Exception) and not isinstance(exc, _SMPY_OWN)


class RankEnds:
    """The ranks of a run that ended early (non-zero exit, uncaught exception), and the run's
    outcome from them."""

    def __init__(self, world: Any, abort_on_exception: bool) -> None:
        self.world = world
        self.abort_on_exception = abort_on_exception
        self.ended: list[Ended] = []
        #: ``sys.excepthook`` when the run started: a different one was set by the program
        self.hook = sys.excepthook

    def restore(self) -> None:
        """Put back the ``sys.excepthook`` of before the run (a program may have set one)."""
        sys.excepthook = self.hook

    def exited(self, proc: Any, e: SystemExit) -> None:
        """``sys.exit(n)``, ``n`` not 0: a message is printed on the rank's stderr (status 1),
        as Python does."""
        stop = stops.fired()
        if stop is not None:  # the program caught the signal's Stop and exited: the run stops
            raise stop
        code = e.code
        if not isinstance(code, int):
            sys.stderr.write(f"{code}\n")
            code = 1
        self.ended.append(Ended(proc.rank, (code & 0xFF) << 8, self.world.engine.now, f"exited with status {code}"))

    def uncaught(self, proc: Any, exc: BaseException) -> None:
        """An exception of the program left the rank's program: the traceback on the rank's
        stderr (through the program's ``sys.excepthook`` if it set one), status 1 (SIGINT for
        a KeyboardInterrupt). With smpy/abort-on-exception, the run ends (``exc`` re-raised)."""
        stop = stops.fired()
        if stop is not None:
            raise stop
        if self.abort_on_exception:
            raise exc
        t = self.world.engine.now
        self._print(proc, exc)
        try:
            text = str(exc).strip().split("\n", 1)[0]
        except Exception:  # noqa: BLE001 - as Python's traceback says it
            text = "<exception str() failed>"
        if len(text) > 160:
            text = text[:157] + "..."
        name = type(exc).__name__ + (f": {text}" if text else "")
        if isinstance(exc, KeyboardInterrupt):
            self.ended.append(Ended(proc.rank, _SIGINT, t, f"raised {name} (so killed itself with SIGINT, "
                                                           "as Python does; mpiexec: EXIT CODE: 2)"))
        else:
            self.ended.append(Ended(proc.rank, 1 << 8, t, f"raised {name} (exit status 1)"))

    def _print(self, proc: Any, exc: BaseException) -> None:
        hook = sys.excepthook
        if hook is self.hook or hook is sys.__excepthook__:
            sys.stderr.write(tagged(proc, user_traceback(exc)))
            return
        tb = _program_tb(exc)
        exc.__traceback__ = tb  # what Python's default hook prints when the program's calls it
        try:
            hook(type(exc), exc, tb)
        except Exception as he:  # noqa: BLE001 - reported as Python reports a failing hook
            sys.stderr.write(tagged(proc, f"Error in sys.excepthook:\n{user_traceback(he)}\n"
                                          f"Original exception was:\n{user_traceback(exc)}"))

    @staticmethod
    def abort_at_exit(proc: Any) -> None:
        """mpi4py's exit hook: MPI_Abort with the abort status mpi4py's runner recorded
        (``python -m mpi4py``; smpy.mpi.session._set_abort_status), after the exit handlers."""
        status = proc.attrs.pop("abort_status", 0)
        if status:
            raise AbortCalled(proc.rank, status, "mpi4py's runner (python -m mpi4py) aborts on an uncaught "
                                                 "exception or a non-zero exit")

    def report(self) -> tuple[str, int, str]:
        """The run's end when ranks ended early: status error, ``mpiexec``'s exit status."""
        lines = []
        for e in self.ended:
            p = self.world.processes[e.rank]
            lines.append(f"[smpy] {who(self.world, p)} (host {p.host.name}) {e.how} at simulated time "
                         f"{e.time:.9g} s; the other ranks ran on, as under mpiexec")
        return "error", job_status([e.wait_status for e in self.ended]) or 1, "\n".join(lines)


def how_ended(launch: Any, proc: Any, e: BaseException) -> bool:
    """Sort out the exception ``e`` that ended the program of ``proc`` (a rank of ``launch``,
    whose ``nonzero_exit`` and ``uncaught`` decide): whether the rank's exit handlers run.
    Anything that is not the program's end is re-raised: the run ends."""
    if isinstance(e, SystemExit):
        if e.code not in (None, 0):
            launch.nonzero_exit(proc, e)
        return True
    if isinstance(e, RankExit):  # os._exit(0): the process ends here, without its exit handlers
        if e.status != 0:
            raise e
        return False
    if is_program_exception(e):
        launch.uncaught(proc, e)
        return True
    raise e
