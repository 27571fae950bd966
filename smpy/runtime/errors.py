"""MPI error classes, codes and strings with MPICH's values, and ``MPI.Exception``.

Error classes are MPICH's numbers and strings, as real mpi4py 4.1.2 on MPICH 5 reports them
(``MPI.ERR_TRUNCATE == 14``, ``MPI.Get_error_string(14) == 'Message truncated'``); a test
compares every one against the real library.

Error codes
-----------
MPICH raises *codes*, not classes: a code keeps its class in its low 7 bits and, above them,
the index of an entry of a ring of detailed messages, so ``e.error_code`` is a large number
(e.g. ``806524686``) while ``e.error_class == MPI.ERR_TRUNCATE``, and ``str(e)`` reads::

    Message truncated, error stack:
    MPIDI_Self_irecv(163): Message from rank 0 and tag 1 truncated; ...

smpy does the same: :func:`raise_error` stores ``"<class string>, error stack:\\n<detail>"``
in a ring and raises ``MPIException((index << 7) | class)``. Only the class is meant to
match real MPICH; the code's upper bits are smpy's own ring index. ``get_error_class`` of
any non-dynamic code is ``code & 0x7f``, as in MPICH.

User-defined classes and codes (``MPI_Add_error_class`` ...) are *dynamic*: bit 30 set, as in
MPICH: classes are ``0x40000000 | (0x80 + n)`` and codes ``0x40000000 | (n << 8) | class``
(low byte). They live in an :class:`ErrorRegistry`; MPI keeps them per process, so the runtime
installs a provider returning the calling rank's registry (:func:`set_registry_provider`);
without one, a single process-wide registry is used.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable
from typing import NoReturn

__all__ = [
    "SUCCESS", "ERR_BUFFER", "ERR_COUNT", "ERR_TYPE", "ERR_TAG", "ERR_COMM", "ERR_RANK",
    "ERR_ROOT", "ERR_GROUP", "ERR_OP", "ERR_TOPOLOGY", "ERR_DIMS", "ERR_ARG", "ERR_UNKNOWN",
    "ERR_TRUNCATE", "ERR_OTHER", "ERR_INTERN", "ERR_IN_STATUS", "ERR_PENDING", "ERR_REQUEST",
    "ERR_ACCESS", "ERR_AMODE", "ERR_BAD_FILE", "ERR_CONVERSION", "ERR_DUP_DATAREP",
    "ERR_FILE_EXISTS", "ERR_FILE_IN_USE", "ERR_FILE", "ERR_INFO", "ERR_INFO_KEY",
    "ERR_INFO_VALUE", "ERR_INFO_NOKEY", "ERR_IO", "ERR_NAME", "ERR_NO_MEM", "ERR_NOT_SAME",
    "ERR_NO_SPACE", "ERR_NO_SUCH_FILE", "ERR_PORT", "ERR_QUOTA", "ERR_READ_ONLY",
    "ERR_SERVICE", "ERR_SPAWN", "ERR_UNSUPPORTED_DATAREP", "ERR_UNSUPPORTED_OPERATION",
    "ERR_WIN", "ERR_BASE", "ERR_LOCKTYPE", "ERR_KEYVAL", "ERR_RMA_CONFLICT", "ERR_RMA_SYNC",
    "ERR_SIZE", "ERR_DISP", "ERR_ASSERT", "ERR_RMA_RANGE", "ERR_RMA_ATTACH", "ERR_RMA_SHARED",
    "ERR_RMA_FLAVOR", "ERR_SESSION", "ERR_PROC_ABORTED", "ERR_VALUE_TOO_LARGE",
    "ERR_ERRHANDLER", "ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING", "ERR_REVOKED", "ERR_ABI",
    "ERR_LASTCODE", "MAX_ERROR_STRING",
]

# -- error classes: MPICH 5.0.2 values, as exported by mpi4py 4.1.2 ------------------------
SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_ROOT = 7
ERR_GROUP = 8
ERR_OP = 9
ERR_TOPOLOGY = 10
ERR_DIMS = 11
ERR_ARG = 12
ERR_UNKNOWN = 13
ERR_TRUNCATE = 14
ERR_OTHER = 15
ERR_INTERN = 16
ERR_IN_STATUS = 17
ERR_PENDING = 18
ERR_REQUEST = 19
ERR_ACCESS = 20
ERR_AMODE = 21
ERR_BAD_FILE = 22
ERR_CONVERSION = 23
ERR_DUP_DATAREP = 24
ERR_FILE_EXISTS = 25
ERR_FILE_IN_USE = 26
ERR_FILE = 27
ERR_INFO = 28
ERR_INFO_KEY = 29
ERR_INFO_VALUE = 30
ERR_INFO_NOKEY = 31
ERR_IO = 32
ERR_NAME = 33
ERR_NO_MEM = 34
ERR_NOT_SAME = 35
ERR_NO_SPACE = 36
ERR_NO_SUCH_FILE = 37
ERR_PORT = 38
ERR_QUOTA = 39
ERR_READ_ONLY = 40
ERR_SERVICE = 41
ERR_SPAWN = 42
ERR_UNSUPPORTED_DATAREP = 43
ERR_UNSUPPORTED_OPERATION = 44
ERR_WIN = 45
ERR_BASE = 46
ERR_LOCKTYPE = 47
ERR_KEYVAL = 48
ERR_RMA_CONFLICT = 49
ERR_RMA_SYNC = 50
ERR_SIZE = 51
ERR_DISP = 52
ERR_ASSERT = 53
ERR_RMA_RANGE = 55
ERR_RMA_ATTACH = 56
ERR_RMA_SHARED = 57
ERR_RMA_FLAVOR = 58
ERR_SESSION = 75
ERR_PROC_ABORTED = 76
ERR_VALUE_TOO_LARGE = 77
ERR_ERRHANDLER = 80
# MPICH defines no MPI_ERR_PROC_FAILED/_PENDING/REVOKED (only MPIX_ ones): mpi4py falls
# back to MPI_ERR_UNKNOWN, and to MPI_ERR_LASTCODE for the missing MPI_ERR_ABI.
ERR_PROC_FAILED = ERR_UNKNOWN
ERR_PROC_FAILED_PENDING = ERR_UNKNOWN
ERR_REVOKED = ERR_UNKNOWN
ERR_LASTCODE = 0x3FFFFFFF
ERR_ABI = ERR_LASTCODE

MAX_ERROR_STRING = 512

#: ``MPI_Error_string`` of each class, verbatim (trailing spaces included)
CLASS_STRINGS: dict[int, str] = {
    SUCCESS: "No MPI error",
    ERR_BUFFER: "Invalid buffer pointer",
    ERR_COUNT: "Invalid count",
    ERR_TYPE: "Invalid datatype",
    ERR_TAG: "Invalid tag",
    ERR_COMM: "Invalid communicator",
    ERR_RANK: "Invalid rank",
    ERR_ROOT: "Invalid root",
    ERR_GROUP: "Invalid group",
    ERR_OP: "Invalid MPI_Op",
    ERR_TOPOLOGY: "Invalid topology",
    ERR_DIMS: "Invalid dimension argument",
    ERR_ARG: "Invalid argument",
    ERR_UNKNOWN: "Unknown error.  Please file a bug report.",
    ERR_TRUNCATE: "Message truncated",
    ERR_OTHER: "Other MPI error",
    ERR_INTERN: "Internal MPI error!",
    ERR_IN_STATUS: "See the MPI_ERROR field in MPI_Status for the error code",
    ERR_PENDING: "Pending request (no error)",
    ERR_REQUEST: "Invalid MPI_Request",
    ERR_ACCESS: "Access denied to file",
    ERR_AMODE: "Invalid amode value in MPI_File_open ",
    ERR_BAD_FILE: "Invalid file name",
    ERR_CONVERSION: "An error occurred in a user-defined data conversion function",
    ERR_DUP_DATAREP: "The requested datarep name has already been specified to MPI_REGISTER_DATAREP",
    ERR_FILE_EXISTS: "File exists",
    ERR_FILE_IN_USE: "File in use by some process",
    ERR_FILE: "Invalid MPI_File",
    ERR_INFO: "Invalid MPI_Info",
    ERR_INFO_KEY: "Invalid key for MPI_Info ",
    ERR_INFO_VALUE: "Invalid MPI_Info value ",
    ERR_INFO_NOKEY: "MPI_Info key is not defined ",
    ERR_IO: "Other I/O error ",
    ERR_NAME: "Invalid service name (see MPI_Publish_name)",
    ERR_NO_MEM: "Unable to allocate memory for MPI_Alloc_mem",
    ERR_NOT_SAME: "Inconsistent arguments to collective routine ",
    ERR_NO_SPACE: "Not enough space for file ",
    ERR_NO_SUCH_FILE: "File does not exist",
    ERR_PORT: "Invalid port",
    ERR_QUOTA: "Quota exceeded for files",
    ERR_READ_ONLY: "Read-only file or filesystem name",
    ERR_SERVICE: "Attempt to lookup an unknown service name ",
    ERR_SPAWN: "Error in spawn call",
    ERR_UNSUPPORTED_DATAREP: "Unsupported datarep passed to MPI_File_set_view ",
    ERR_UNSUPPORTED_OPERATION: "Unsupported file operation ",
    ERR_WIN: "Invalid MPI_Win",
    ERR_BASE: "Invalid base address",
    ERR_LOCKTYPE: "Invalid locktype argument",
    ERR_KEYVAL: "Invalid keyval",
    ERR_RMA_CONFLICT: "Conflicting accesses to window ",
    ERR_RMA_SYNC: "Wrong synchronization of RMA calls ",
    ERR_SIZE: "Invalid size argument in RMA call",
    ERR_DISP: "Invalid displacement argument in RMA call ",
    ERR_ASSERT: "Invalid assert argument",
    ERR_RMA_RANGE: "Target memory is not contained within the window",
    ERR_RMA_ATTACH: "Memory cannot be attached",
    ERR_RMA_SHARED: "Memory cannot be shared",
    ERR_RMA_FLAVOR: "Incorrect window flavor",
    ERR_SESSION: "Invalid MPI_Session handle",
    ERR_PROC_ABORTED: "Process was aborted",
    ERR_VALUE_TOO_LARGE: "Value is too large to store",
    ERR_ERRHANDLER: "Invalid errhandler",
    81: "Fortran ABI already set",
}
UNKNOWN_CLASS_STRING = "Unknown error class"

_CLASS_MASK = 0x7F
_CLASS_BITS = 7
_DYN_BIT = 0x40000000
_FIRST_USER_CLASS = 0x81  # low byte of the first MPI_Add_error_class result (MPICH)
_MAX_USER_CLASSES = 0x7F  # 0x81 .. 0xff
_MAX_USER_CODES = (_DYN_BIT >> 8) - 1
_RING_SIZE = 1024  # detailed messages kept (MPICH keeps 128)
_RING_MAX_SEQ = (1 << (30 - _CLASS_BITS)) - 1  # codes stay <= ERR_LASTCODE


# -- ring of detailed messages (codes raised by smpy) ---------------------------------------
_ring: OrderedDict[int, str] = OrderedDict()
_ring_seq = 0


def _ring_put(error_class: int, text: str) -> int:
    global _ring_seq
    _ring_seq = _ring_seq % _RING_MAX_SEQ + 1
    _ring[_ring_seq] = text
    _ring.move_to_end(_ring_seq)
    while len(_ring) > _RING_SIZE:
        _ring.popitem(last=False)
    return (_ring_seq << _CLASS_BITS) | error_class


def class_string(error_class: int) -> str:
    """MPICH's string of a predefined error class (``"Unknown error class"`` otherwise)."""
    return CLASS_STRINGS.get(error_class, UNKNOWN_CLASS_STRING)


def make_error(error_class: int, detail: str | None = None) -> MPIException:
    """An ``MPI.Exception`` of ``error_class`` whose string is MPICH-like::

        <class string>, error stack:
        <detail>

    e.g. ``make_error(ERR_TRUNCATE, "MPI_Recv: 800 bytes received, buffer holds 400")``.
    Without a detail, or for a user-defined (dynamic) class, the code is the class itself.
    """
    if detail is None or not 0 <= error_class <= _CLASS_MASK:
        return MPIException(error_class)
    return MPIException(_ring_put(error_class, f"{class_string(error_class)}, error stack:\n{detail}"))


def raise_error(error_class: int, detail: str | None = None) -> NoReturn:
    """Raise :func:`make_error` ``(error_class, detail)``.

    Callers put the MPI call first in ``detail``, as MPICH's stack does:
    ``raise_error(ERR_RANK, "MPI_Send: Invalid rank has value 5 but must be nonnegative and
    less than 4")`` prints ``Invalid rank, error stack:\\nMPI_Send: Invalid rank has ...``.
    """
    raise make_error(error_class, detail)


# -- user-defined classes and codes ----------------------------------------------------------
class ErrorRegistry:
    """Dynamic error classes, codes and strings of one MPI process."""

    __slots__ = ("classes", "codes", "strings", "last_used", "_next_code")

    def __init__(self) -> None:
        self.classes: dict[int, int] = {}  # class -> number of codes in it
        self.codes: dict[int, int] = {}  # code -> class
        self.strings: dict[int, str] = {}  # dynamic class/code -> string
        self.last_used = ERR_LASTCODE  # the MPI_LASTUSEDCODE attribute
        self._next_code = 1

    def add_class(self) -> int:
        if len(self.classes) >= _MAX_USER_CLASSES:
            raise_error(ERR_OTHER, "MPI_Add_error_class: no more user-defined error classes")
        low = _FIRST_USER_CLASS
        while (_DYN_BIT | low) in self.classes:
            low += 1
        cls = _DYN_BIT | low
        self.classes[cls] = 0
        self.last_used = cls
        return cls

    def add_code(self, error_class: int) -> int:
        if not (0 <= error_class <= _CLASS_MASK or error_class in self.classes):
            raise_error(ERR_ARG, f"MPI_Add_error_code: Invalid error class {error_class}")
        if self._next_code > _MAX_USER_CODES:
            raise_error(ERR_OTHER, "MPI_Add_error_code: no more user-defined error codes")
        code = _DYN_BIT | (self._next_code << 8) | (error_class & 0xFF)
        self._next_code += 1
        self.codes[code] = error_class
        if error_class in self.classes:
            self.classes[error_class] += 1
        return code

    def add_string(self, code: int, string: str) -> None:
        if code not in self.classes and code not in self.codes:
            raise_error(ERR_ARG, f"MPI_Add_error_string: Invalid error code {code} "
                                 "(only user-defined classes and codes take strings)")
        self.strings[code] = str(string)[: MAX_ERROR_STRING - 1]

    def remove_class(self, error_class: int) -> None:
        if error_class not in self.classes:
            raise_error(ERR_ARG, f"MPI_Remove_error_class: Invalid error class {error_class}")
        if self.classes[error_class] or error_class in self.strings:
            raise_error(ERR_OTHER, f"MPI_Remove_error_class: Error class {error_class:x} still in use")
        del self.classes[error_class]

    def remove_code(self, code: int) -> None:
        if code not in self.codes:
            raise_error(ERR_ARG, f"MPI_Remove_error_code: Invalid error code {code}")
        if code in self.strings:
            raise_error(ERR_OTHER, f"MPI_Remove_error_code: Error code {code:x} still in use")
        cls = self.codes.pop(code)
        if cls in self.classes:
            self.classes[cls] -= 1

    def remove_string(self, code: int) -> None:
        if code not in self.classes and code not in self.codes:
            raise_error(ERR_ARG, f"MPI_Remove_error_string: Invalid error code {code}")
        self.strings.pop(code, None)


_global_registry = ErrorRegistry()
_provider: Callable[[], ErrorRegistry] | None = None


def set_registry_provider(provider: Callable[[], ErrorRegistry] | None) -> None:
    """Install ``provider()`` -> the calling rank's :class:`ErrorRegistry` (None: one global)."""
    global _provider
    _provider = provider


def registry() -> ErrorRegistry:
    if _provider is not None:
        try:
            return _provider()
        except Exception:  # outside a rank (e.g. printing an exception after the run)
            pass
    return _global_registry


def add_error_class() -> int:
    """``MPI_Add_error_class``: a new class, above ``ERR_LASTCODE``."""
    return registry().add_class()


def add_error_code(error_class: int) -> int:
    """``MPI_Add_error_code``: a new code of a predefined or user-defined class."""
    return registry().add_code(operator.index(error_class))


def add_error_string(code: int, string: str) -> None:
    """``MPI_Add_error_string`` for a user-defined class or code."""
    registry().add_string(operator.index(code), string)


def remove_error_class(error_class: int) -> None:
    registry().remove_class(operator.index(error_class))


def remove_error_code(code: int) -> None:
    registry().remove_code(operator.index(code))


def remove_error_string(code: int) -> None:
    registry().remove_string(operator.index(code))


def last_used_code() -> int:
    """The ``MPI_LASTUSEDCODE`` attribute of ``MPI_COMM_WORLD``."""
    return registry().last_used


def get_error_class(code: int) -> int:
    """``MPI_Error_class``: the class of an error code (MPICH: its low 7 bits)."""
    code = operator.index(code)
    if code < 0:
        raise_error(ERR_ARG, f"MPI_Error_class: Invalid error code {code}")
    if code & _DYN_BIT:
        reg = registry()
        if code in reg.classes:
            return code
        if code in reg.codes:
            return reg.codes[code]
        raise_error(ERR_ARG, f"MPI_Error_class: Invalid error code {code}")
    return code & _CLASS_MASK


def get_error_string(code: int) -> str:
    """``MPI_Error_string``: a class's string, or the detailed string of a raised code."""
    code = operator.index(code)
    if 0 <= code <= _CLASS_MASK:
        return class_string(code)
    if code < 0:
        raise_error(ERR_ARG, f"MPI_Error_string: Invalid error code {code}")
    if code & _DYN_BIT:
        return registry().strings.get(code, "" if _is_dynamic_known(code) else UNKNOWN_CLASS_STRING)
    text = _ring.get(code >> _CLASS_BITS)
    return text if text is not None else class_string(code & _CLASS_MASK)


def _is_dynamic_known(code: int) -> bool:
    reg = registry()
    return code in reg.classes or code in reg.codes


# -- the exception ---------------------------------------------------------------------------
class MPIException(RuntimeError):
    """``MPI.Exception``: a ``RuntimeError`` carrying an MPI error code, like mpi4py's.

    ``int(e)`` and ``e.error_code`` are the code, ``e.error_class`` its class, ``str(e)``
    its error string; comparisons and hashing go through ``int(e)``; ``repr(e)`` is
    ``MPI.Exception(<code>)``. A negative code becomes ``ERR_UNKNOWN``.
    """

    def __init__(self, ierr: int = SUCCESS, /) -> None:
        try:
            ierr = operator.index(ierr)
        except TypeError:
            ierr = int(ierr)  # type: ignore[call-overload]  # Cython's C int accepts floats
        if not -0x80000000 <= ierr <= 0x7FFFFFFF:
            raise OverflowError("value too large to convert to int")
        if ierr < SUCCESS:
            ierr = ERR_UNKNOWN
        RuntimeError.__init__(self, ierr)

    def __int__(self) -> int:
        return self.args[0]

    def __bool__(self) -> bool:
        return self.args[0] != SUCCESS

    def __hash__(self) -> int:
        return hash(self.args[0])

    def __eq__(self, other: object) -> bool:
        return self.args[0] == other

    def __ne__(self, other: object) -> bool:
        return self.args[0] != other

    def __lt__(self, other: int) -> bool:
        return self.args[0] < other

    def __le__(self, other: int) -> bool:
        return self.args[0] <= other

    def __gt__(self, other: int) -> bool:
        return self.args[0] > other

    def __ge__(self, other: int) -> bool:
        return self.args[0] >= other

    def __repr__(self) -> str:
        return f"MPI.Exception({self.args[0]})"

    def __str__(self) -> str:
        try:
            return get_error_string(self.args[0])
        except MPIException:
            return f"error code: {self.args[0]}"

    def Get_error_code(self) -> int:
        """Error code."""
        return self.args[0]

    def Get_error_class(self) -> int:
        """Error class."""
        return get_error_class(self.args[0])

    def Get_error_string(self) -> str:
        """Error string."""
        return get_error_string(self.args[0])

    @property
    def error_code(self) -> int:
        """Error code."""
        return self.Get_error_code()

    @property
    def error_class(self) -> int:
        """Error class."""
        return self.Get_error_class()

    @property
    def error_string(self) -> str:
        """Error string."""
        return self.Get_error_string()
