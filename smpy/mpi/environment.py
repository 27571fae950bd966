"""Module-level MPI functions: initialisation, clocks, processor name, versions."""

from __future__ import annotations

from smpy.kernel.activity import Sleep
from smpy.kernel.actors import block_on
from smpy.mpi._call import mpicall, proc
from smpy.runtime import errors, lifecycle
from smpy.runtime.constants import THREAD_MULTIPLE, THREAD_SINGLE

VERSION = 4
SUBVERSION = 1


@mpicall
def Init() -> None:
    lifecycle.init(proc(), THREAD_SINGLE)


@mpicall
def Init_thread(required: int = THREAD_MULTIPLE) -> int:
    lifecycle.init(proc(), required)
    return required


@mpicall
def Finalize() -> None:
    lifecycle.finalize(proc())


def Is_initialized() -> bool:
    return proc().initialized


def Is_finalized() -> bool:
    return proc().finalized


def Query_thread() -> int:
    return proc().thread_level


def Is_thread_main() -> bool:
    return True


def abort(errorcode: int = 0) -> None:
    lifecycle.abort(proc(), errorcode)


@mpicall
def Wtime() -> float:
    """Simulated time (s); each read costs ``smpi/wtime`` of simulated time."""
    p = proc()
    world = p.world
    now = world.engine.now
    if world.wtime_cost > 0:
        block_on(Sleep(world.engine, world.wtime_cost))
    return now


def Wtick() -> float:
    return 1e-9


def Get_processor_name() -> str:
    return proc().host.name


def Get_version() -> tuple[int, int]:
    return (VERSION, SUBVERSION)


def Get_library_version() -> str:
    from smpy import __version__
    return f"smpy {__version__} (simulated MPI {VERSION}.{SUBVERSION} on a discrete-event platform model)"


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    from smpy import __version__
    parts = tuple(int(x) for x in __version__.split(".")[:3])
    return ("smpy", parts)  # type: ignore[return-value]


def Get_error_string(errorcode: int) -> str:
    return errors.get_error_string(errorcode)


def Get_error_class(errorcode: int) -> int:
    return errors.get_error_class(errorcode)


def Pcontrol(level: int) -> None:
    pass
