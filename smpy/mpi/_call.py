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
from pathlib import Path
from typing import Any, TypeVar

from smpy.kernel import accel as _accel
from smpy.kernel import actors as _actors
from smpy.mpi.args import coerce_ints, int_params
from smpy.runtime import errors
from smpy.runtime.world import Process, current
from smpy.support import cext

F = TypeVar("F", bound=Callable[..., Any])
_thread_time = time.thread_time
#: called with (args, exception) when an outermost MPI call fails; set by smpy.mpi.errhandler
error_hook: Callable[[tuple[Any, ...], errors.MPIException], bool] | None = None


def mpicall(fn: F) -> F:
    """Make ``fn`` a public MPI call: the protocol above, and its ``int``-annotated
    parameters converted as mpi4py converts them (:func:`smpy.mpi.args.cint`)."""
    name = "MPI_" + fn.__name__ if fn.__name__[:1].isupper() else fn.__qualname__
    after_finalize_ok = fn.__name__ in _AFTER_FINALIZE
    ints = int_params(fn)  # scalar integer arguments, converted as mpi4py's Cython signatures do

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # the running rank, read straight from the kernel (``current()`` does the checks
        # and raises outside a simulation); this wrapper runs on every MPI call
        actor = _actors._current
        proc = actor.data if actor is not None else None
        if type(proc) is not Process:
            proc = current()
        depth = proc.depth
        world = proc.world
        if depth == 0:
            if proc.finalized and not after_finalize_ok:
                _after_finalize(fn)
            proc.mpi_calls += 1
            if proc.bench.sampling is not None:
                return _hooked(fn, name, ints, proc, depth, args, kwargs)
        if world.tracer is not None or world.probe_polled or world.timing.measure:
            return _hooked(fn, name, ints, proc, depth, args, kwargs)
        # fast path: no feature watches MPI calls in this run
        proc.depth = depth + 1
        try:
            if ints:  # inline check first: the arguments are ints on nearly every call
                n = len(args)
                for i, pname in ints:
                    if i < n:
                        if type(args[i]) is not int:
                            args = coerce_ints(ints, args, kwargs)
                            break
                    elif pname in kwargs and type(kwargs[pname]) is not int:
                        args = coerce_ints(ints, args, kwargs)
                        break
            return fn(*args, **kwargs)
        except errors.MPIException as exc:
            # the object's error handler (smpy.mpi.errhandler); True: a user handler ran and
            # the call returns (MPICH then returns MPI_SUCCESS to mpi4py)
            if depth == 0 and error_hook is not None and error_hook(args, exc):
                return None
            raise
        finally:
            proc.depth = depth

    wrapper.__smpy_call__ = (fn, name, ints, after_finalize_ok)  # type: ignore[attr-defined]
    _wrappers.append(wrapper)
    return wrapper  # type: ignore[return-value]


#: every wrapper made by :func:`mpicall`: the compiled accelerator makes its own version of
#: each (smpy.kernel.accel, ``MpiCall`` in ``_callaccel.c``: the fast path above in C, the rest
#: through :func:`_hooked` and :func:`_after_finalize`)
_wrappers: list[Callable[..., Any]] = []


def _after_finalize(fn: Callable[..., Any]) -> None:
    """The error of an MPI call after MPI_Finalize (the compiled wrapper calls it)."""
    errors.raise_error(errors.ERR_OTHER, f"{fn.__qualname__} called after MPI_Finalize")


def _hooked_from_c(fn: Callable[..., Any], name: str, ints: tuple[tuple[int, str], ...], proc: Process,
                   depth: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """:func:`_hooked` for the compiled wrapper, which has no frame of its own: this frame
    stands for the Python wrapper's, so that ``sys._getframe(2)`` is still the caller's
    (the tracer's and the regions' source locations)."""
    return _hooked(fn, name, ints, proc, depth, args, kwargs)


def _hooked(fn: Callable[..., Any], name: str, ints: tuple[tuple[int, str], ...], proc: Process, depth: int,
            args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """An MPI call with the features that watch calls: timing of the compute bursts,
    regions, the tracer, ``smpy/probe-sees:polled`` (the fast path below has none)."""
    world = proc.world
    timing = world.timing
    if depth == 0:
        if timing.regions is not None:
            timing.regions.locate(proc, sys._getframe(2))
        if timing.measure or proc.bench.sampling is not None:
            timing.flush(proc, False)  # the faults are marked at the exit (below)
    # smpy/probe-sees:polled: a call during which simulated time passed waited in the
    # progress engine (the time a call burns before it starts is the burst flushed above)
    t_in = world.engine.now if world.probe_polled and depth == 0 else -1.0
    proc.depth = depth + 1
    tracer = world.tracer
    if tracer is not None:
        tracer.enter(proc.rank, name, sys._getframe(2) if depth == 0 else None)
    try:
        if ints:
            args = _check_ints(ints, args, kwargs)
        return fn(*args, **kwargs)
    except errors.MPIException as exc:
        if depth == 0 and error_hook is not None and error_hook(args, exc):
            return None
        raise
    finally:
        proc.depth = depth
        if t_in >= 0.0 and world.engine.now > t_in:
            proc.progressed_at = world.engine.now
        if tracer is not None:
            tracer.exit(proc.rank)
        if depth == 0 and timing.measure:
            if timing.count_faults:
                timing.mark_faults(proc)  # restarts the timer after its own work
            else:
                proc.bench.start = _thread_time()


def _check_ints(ints: tuple[tuple[int, str], ...], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` with the integer parameters converted (:func:`smpy.mpi.args.coerce_ints`),
    checked inline first: they are ints on nearly every call, positional or by keyword."""
    n = len(args)
    for i, pname in ints:
        if i < n:
            if type(args[i]) is not int:
                return coerce_ints(ints, args, kwargs)
        elif pname in kwargs and type(kwargs[pname]) is not int:
            return coerce_ints(ints, args, kwargs)
    return args


_AFTER_FINALIZE = {"Is_initialized", "Is_finalized", "Get_version", "Get_library_version", "Wtime", "Wtick",
                   "Get_processor_name", "Get_error_string", "Get_error_class", "Query_thread"}


def _compiled() -> list[tuple[Any, Any]]:
    """(Python wrapper, compiled wrapper) pairs for :mod:`smpy.kernel.accel`, from
    ``_callaccel.c`` (none when it cannot be built: the facade then stays in Python)."""
    mod, _why = cext.load(Path(__file__).with_name("_callaccel.c"), "smpy.mpi._callaccel")
    if mod is None:
        return []
    mod.setup(Process, current, globals(), _hooked_from_c, coerce_ints, errors.MPIException, _after_finalize,
              vars(_actors))
    pairs = [(w, mod.mpicall(w, *w.__smpy_call__)) for w in _wrappers]  # type: ignore[attr-defined]
    compiled_calls.update((id(w), c) for w, c in pairs)
    return pairs


#: id(Python wrapper) -> its compiled MpiCall (for the facade's compiled bodies, smpy.mpi.comm)
compiled_calls: dict[int, Any] = {}


#: the running rank (``smpy.runtime.world.current``)
proc: Callable[[], Process] = current

_accel.register(_compiled)
