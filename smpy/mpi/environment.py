"""Module-level MPI functions: initialisation, clocks, processor name, versions, ABI and
hardware-resource queries (with MPICH's answers)."""

from __future__ import annotations

from typing import Any

from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.mpi.info import Info
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
    return lifecycle.wtime(proc())


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


@intargs
def Get_error_string(errorcode: int) -> str:
    return errors.get_error_string(errorcode)


@intargs
def Get_error_class(errorcode: int) -> int:
    return errors.get_error_class(errorcode)


@intargs
def Pcontrol(level: int) -> None:
    if not 0 <= int(level) <= 2:
        errors.raise_error(errors.ERR_ARG, f"MPI_Pcontrol: Invalid level {level}")


# -- MPI-5 ABI and MPI-4.1 hardware queries, with MPICH's answers -------------------------
def Get_abi_version() -> tuple[int, int]:
    """MPICH does not implement the standard ABI: (-1, -1)."""
    return (-1, -1)


def Get_abi_info() -> Any:
    """Sizes of MPI_Aint, MPI_Count and MPI_Offset (bytes), as MPICH on 64-bit Linux."""
    return Info.Create({"mpi_aint_size": "8", "mpi_count_size": "8", "mpi_offset_size": "8"})


_FORTRAN_ABI = [("mpi_logical_size", "4"), ("mpi_integer_size", "4"), ("mpi_real_size", "4"),
                ("mpi_double_precision_size", "8")] + [
    (f"mpi_{t}_supported", "true") for t in
    ("logical1", "logical2", "logical4", "logical8", "logical16", "integer1", "integer2", "integer4",
     "integer8", "integer16", "real2", "real4", "real8", "real16", "complex4", "complex8", "complex16",
     "complex32", "double_complex")]


def Get_abi_fortran_info() -> Any:
    """Fortran type sizes and support, as MPICH 5 reports them (keys in its order)."""
    return Info.Create(dict(_FORTRAN_ABI))


def Get_hw_resource_info() -> Any:
    """MPI_Get_hw_resource_info: MPICH returns an empty info."""
    return Info.Create()
