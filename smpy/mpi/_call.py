"""The entry/exit protocol every public MPI call goes through.

``@mpicall`` ends the rank's compute burst on entry (it becomes simulated computation,
see :mod:`smpy.timing.bench`) and restarts the timer on exit, so that smpy's own work is
never charged to the program. Nested calls (a facade method calling another) time only
at the outermost level.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from smpy.runtime import errors
from smpy.runtime.world import Process, current

F = TypeVar("F", bound=Callable[..., Any])
_thread_time = time.thread_time
#: called with (args, exception) when an outermost MPI call fails; set by smpy.mpi.errhandler
error_hook: Callable[[tuple[Any, ...], errors.MPIException], bool] | None = None


def mpicall(fn: F) -> F:
    name = "MPI_" + fn.__name__ if fn.__name__[:1].isupper() else fn.__qualname__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        proc = current()
        depth = proc.depth
        if depth == 0:
            if proc.finalized and fn.__name__ not in _AFTER_FINALIZE:
                errors.raise_error(errors.ERR_OTHER, f"{fn.__qualname__} called after MPI_Finalize")
            timing = proc.world.timing
            if timing.regions is not None:
                timing.regions.locate(proc, sys._getframe(1))
            timing.flush(proc)
        proc.depth = depth + 1
        if depth == 0:
            proc.mpi_calls += 1
        tracer = proc.world.tracer
        if tracer is not None:
            tracer.enter(proc.rank, name, sys._getframe(1) if depth == 0 else None)
        try:
            return fn(*args, **kwargs)
        except errors.MPIException as exc:
            # the object's error handler (smpy.mpi.errhandler); True: a user handler ran and
            # the call returns (MPICH then returns MPI_SUCCESS to mpi4py)
            if depth == 0 and error_hook is not None and error_hook(args, exc):
                return None
            raise
        finally:
            proc.depth = depth
            if tracer is not None:
                tracer.exit(proc.rank)
            if depth == 0 and proc.world.timing.measure:
                proc.bench.start = _thread_time()

    return wrapper  # type: ignore[return-value]


_AFTER_FINALIZE = {"Is_initialized", "Is_finalized", "Get_version", "Get_library_version", "Wtime", "Wtick",
                   "Get_processor_name", "Get_error_string", "Get_error_class", "Query_thread"}


def proc() -> Process:
    return current()
