"""Process life cycle: init, finalize, abort."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from smpy.kernel.activity import Sleep
from smpy.kernel.actors import block_on
from smpy.runtime import errors

if TYPE_CHECKING:
    from smpy.runtime.world import Process


class AbortCalled(BaseException):
    """Raised by MPI_Abort; unwinds the calling rank and stops the whole run."""

    def __init__(self, rank: int, errorcode: int, reason: str = "") -> None:
        super().__init__(f"MPI_Abort called by rank {rank} with error code {errorcode}")
        self.rank = rank
        self.errorcode = errorcode
        #: why, when the program did not call it itself (mpi4py's runner at exit)
        self.reason = reason


def init(proc: Process, thread_level: int = 0, explicit: bool = True) -> None:
    if proc.initialized and explicit:
        errors.raise_error(errors.ERR_OTHER, "Cannot call MPI_INIT or MPI_INIT_THREAD more than once")
    proc.initialized = True
    proc.thread_level = thread_level
    if proc.world.init_time > 0:
        block_on(Sleep(proc.world.engine, proc.world.init_time))


#: called with the process at the start of an explicit MPI_Finalize (layers above register;
#: e.g. the attribute delete callbacks of COMM_SELF then COMM_WORLD, as MPI requires)
finalize_hooks: list[Callable[[Process], None]] = []


def finalize(proc: Process) -> None:
    if proc.finalized:
        errors.raise_error(errors.ERR_OTHER, "MPI_Finalize called twice")
    for hook in finalize_hooks:
        hook(proc)
    proc.finalized = True


def wtime(proc: Process) -> float:
    """MPI_Wtime: the simulated time; each read then costs ``smpi/wtime`` of simulated time."""
    world = proc.world
    now = world.engine.now
    if world.ti is not None:
        world.ti.wtime(proc.rank)
    if world.wtime_cost > 0:
        block_on(Sleep(world.engine, world.wtime_cost))
    return now


def abort(proc: Process, errorcode: int) -> None:
    raise AbortCalled(proc.rank, errorcode)
