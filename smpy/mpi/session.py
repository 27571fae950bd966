"""``MPI.Session`` and the private helpers mpi4py's pure-Python modules import from ``MPI``.

Session (MPI-4): ``Session.Init`` gives a local handle (no communication, as in MPICH);
its process sets are MPICH's ``mpi://WORLD`` and ``mpi://SELF``
(:mod:`smpy.runtime.session`), each with an info ``{"mpi_size": str(size)}``;
``Create_group`` / ``Group.Create_from_session_pset`` build a group from one, and
``Intracomm.Create_from_group`` (:func:`create_from_group`) a communicator from a group.
Errors on ``SESSION_NULL`` or on a finalized session raise ``MPI_ERR_SESSION``; bad pset
names and indices ``MPI_ERR_ARG``, like MPICH. The default error handler of a session is
``ERRORS_RETURN`` (mpi4py installs it, as for ``COMM_WORLD``).

Private helpers (names and semantics of mpi4py 4.1.2's ``MPI`` module):

* ``_comm_lock(comm, key)`` / ``_comm_lock_table(comm)``: a per-process table of locks
  attached to a communicator (mpi4py keeps it as a communicator attribute, so each
  process — each rank here — has its own, and a duplicate has a new one).
* ``_commctx_intra(comm)`` → ``(dupcomm, tag)``: a duplicate made once per communicator
  (collectively, at the first call) and a per-process tag counter that wraps at ``TAG_UB``;
  ``_commctx_inter(comm)`` → ``(dupcomm, tag, localcomm, low_group)`` for
  intercommunicators, built as mpi4py does (Merge with ``high = local > remote``, then
  ``Create`` of the local group on the merged communicator).
* ``_typedict``, ``_typedict_c``, ``_typedict_f``: type code → predefined datatype.
* ``_sizeof``, ``_addressof``, ``_handleof``: MPICH's handle sizes (4 bytes; ``MPI_Status``
  20 bytes; ``MPI_File`` a pointer), and an address holding the handle value.
* ``_set_abort_status(status)``: used by ``python -m mpi4py``; recorded for the calling rank,
  which calls MPI_Abort with it at its exit, after its ``atexit`` handlers, as mpi4py's exit
  hook does (smpy.cli.rank_end).
"""

from __future__ import annotations

import copyreg
import ctypes
import threading
import weakref
from collections.abc import Hashable
from typing import Any

from smpy.mpi import datatype, registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.comm import COMM_WORLD, Comm, Intracomm
from smpy.mpi.datatype import Datatype
from smpy.mpi.errhandler import ERRORS_RETURN, Errhandler, ErrhandlerMixin, set_errhandler
from smpy.mpi.file import File
from smpy.mpi.group import Group
from smpy.mpi.info import INFO_NULL, Info
from smpy.mpi.message import Message
from smpy.mpi.objmodel import (
    HandleMixin,
    arg_type_error,
    as_int,
    copy_arg,
    direct_handle,
    lookup_direct,
)
from smpy.mpi.op import Op
from smpy.mpi.request import Request
from smpy.mpi.status import Status
from smpy.mpi.win import Win
from smpy.runtime import errors
from smpy.runtime import session as rsession
from smpy.runtime.constants import KEYVAL_TAG_UB
from smpy.runtime.datatype import TYPEDICT
from smpy.runtime.group import GroupImpl

__all__ = [
    "Session", "SESSION_NULL", "MAX_PSET_NAME_LEN", "MAX_STRINGTAG_LEN",
    "MAX_PROCESSOR_NAME", "MAX_LIBRARY_VERSION_STRING", "MAX_OBJECT_NAME", "MAX_PORT_NAME",
    "MAX_DATAREP_STRING",
    "_comm_lock", "_comm_lock_table", "_commctx_intra", "_commctx_inter",
    "_typedict", "_typedict_c", "_typedict_f", "_sizeof", "_addressof", "_handleof",
    "_set_abort_status",
]

# MPICH's string limits
MAX_PSET_NAME_LEN = 256
MAX_STRINGTAG_LEN = 256
MAX_PROCESSOR_NAME = 128
MAX_LIBRARY_VERSION_STRING = 8192
MAX_OBJECT_NAME = 128
MAX_PORT_NAME = 1024
MAX_DATAREP_STRING = 128


class _SessionState:
    """One initialised session of one process."""

    __slots__ = ("live", "errhandler", "info", "buffer", "__weakref__")

    def __init__(self, errhandler: Any, info: dict[str, str]) -> None:
        self.live = True
        self.errhandler = errhandler
        self.info = info
        self.buffer: Any = None


@registry.provides("Session")
class Session(HandleMixin, ErrhandlerMixin):
    """Session context (MPI-4)."""

    __slots__ = ("_st", "__weakref__")
    _errhandler_kind = "Session"

    def __new__(cls, session: Session | None = None) -> Session:
        copy_arg(session, Session, "session")
        self = object.__new__(cls)
        self._st = None if session is None else session._st
        return self

    @classmethod
    def _wrap(cls, st: _SessionState | None) -> Session:
        s = cls.__new__(cls)
        s._st = st
        return s

    def _errhandler_obj(self) -> _SessionState:
        return self._live(f"MPI_Session_{'errhandler'}")

    # handles (smpy.mpi.objmodel): MPICH's session objects are kind 0xe
    def _value(self) -> int:
        st = self._st
        return _SESSION_NULL_HANDLE if st is None else direct_handle(_T_SESSION, st)

    @classmethod
    def _from_value(cls, value: int) -> Session:
        if value == _SESSION_NULL_HANDLE:
            return cls._wrap(None)
        st = lookup_direct(value)
        if not isinstance(st, _SessionState):
            errors.raise_error(errors.ERR_SESSION, f"MPI_Session_f2c: Invalid MPI_Session handle "
                               f"{as_int(value)}")
        return cls._wrap(st)

    def __init__(self, session: Session | None = None) -> None:
        pass

    def _live(self, call: str) -> _SessionState:
        st = self._st
        if st is None or not st.live:
            errors.raise_error(errors.ERR_SESSION, f"{call}(MPI_SESSION_NULL) failed\nNull Session pointer")
        return st

    # -- object model --------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Session):
            return NotImplemented
        return self._st is other._st

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  # unhashable, like mpi4py's

    def __bool__(self) -> bool:
        return self._st is not None

    def __reduce__(self) -> str | tuple[Any, ...]:
        if self is SESSION_NULL:
            return "SESSION_NULL"
        if self._st is None:  # a copy of the null handle
            return (copyreg.__newobj__, (type(self), SESSION_NULL))
        raise ValueError(f"cannot serialize '{_qualname(self)}' instance")

    def __repr__(self) -> str:
        return f"<{_qualname(self)} object at {id(self):#x}>"

    def free(self) -> None:
        """Call ``Finalize`` if not null."""
        if self._st is not None and self is not SESSION_NULL:
            self.Finalize()

    # -- life cycle ----------------------------------------------------------------------
    @classmethod
    @mpicall
    def Init(cls, info: Info = INFO_NULL, errhandler: Any = None) -> Session:
        """A new session (local: MPICH's MPI_Session_init does not communicate)."""
        s = cls.__new__(cls)
        level = "MPI_THREAD_MULTIPLE"  # MPICH's default for a session
        if info is not None and info and info.Get("thread_level") is not None:
            level = info.Get("thread_level")
        hints = {"thread_level": level, "strict_finalize": "0", "mpi_memory_alloc_kinds": "mpi,system"}
        s._st = _SessionState(ERRORS_RETURN if errhandler is None else errhandler, hints)
        if errhandler is not None:
            set_errhandler(s._st, errhandler, "Session")
        return s

    @mpicall
    def Finalize(self) -> None:
        st = self._live("MPI_Session_finalize")
        st.live = False
        self._st = None

    # -- process sets --------------------------------------------------------------------
    @mpicall
    def Get_num_psets(self, info: Info = INFO_NULL) -> int:
        self._live("MPI_Session_get_num_psets")
        return len(rsession.PSET_NAMES)

    @mpicall
    def Get_nth_pset(self, n: int, info: Info = INFO_NULL) -> str:
        self._live("MPI_Session_get_nth_pset")
        n = int(n)
        if n < 0:
            errors.raise_error(errors.ERR_ARG, f"MPI_Session_get_nth_pset(n={n}) failed\n"
                               f"Invalid value for n, must be non-negative but is {n}")
        if n >= len(rsession.PSET_NAMES):
            errors.raise_error(errors.ERR_ARG, f"MPI_Session_get_nth_pset(n={n}) failed\n"
                               f"Invalid pset number - {n}")
        return rsession.PSET_NAMES[n]

    @mpicall
    def Get_info(self) -> Info:
        st = self._live("MPI_Session_get_info")
        return Info.Create(dict(st.info))

    @mpicall
    def Get_pset_info(self, pset_name: str) -> Info:
        self._live("MPI_Session_get_pset_info")
        members = rsession.pset_members(proc(), str(pset_name), "MPI_Session_get_pset_info")
        return Info.Create({"mpi_size": str(len(members))})

    @mpicall
    def Create_group(self, pset_name: str) -> Group:
        self._live("MPI_Group_from_session_pset")
        members = rsession.pset_members(proc(), str(pset_name), "MPI_Group_from_session_pset")
        return Group._wrap(GroupImpl(members))

    # -- buffered sends (MPI-4.1): the attached buffer is kept, as by MPI ----------------
    @mpicall
    def Attach_buffer(self, buf: Any) -> None:
        st = self._live("MPI_Session_attach_buffer")
        if st.buffer is not None:
            errors.raise_error(errors.ERR_BUFFER, "MPI_Session_attach_buffer: a buffer is already attached")
        st.buffer = buf

    @mpicall
    def Detach_buffer(self) -> Any:
        st = self._live("MPI_Session_detach_buffer")
        buf, st.buffer = st.buffer, None
        return buf

    @mpicall
    def Flush_buffer(self) -> None:
        self._live("MPI_Session_flush_buffer")

    @mpicall
    def Iflush_buffer(self) -> Any:
        self._live("MPI_Session_iflush_buffer")
        return Request()  # nothing is buffered on a session: already complete


SESSION_NULL = Session()
_T_SESSION = 0xE
_SESSION_NULL_HANDLE = 0x38000000  # MPICH's MPI_SESSION_NULL


def _qualname(obj: object) -> str:
    return f"mpi4py.MPI.{type(obj).__name__}"


# -- communicator locks and contexts (mpi4py's commimpl/msgpickle helpers) ------------------
_locks: weakref.WeakKeyDictionary[Any, dict[int, dict[Hashable, Any]]] = weakref.WeakKeyDictionary()
_ctx: weakref.WeakKeyDictionary[Any, dict[int, list[Any]]] = weakref.WeakKeyDictionary()


def _comm_key(comm: Any, call: str) -> Any:
    if not isinstance(comm, Comm):
        raise arg_type_error("comm", "mpi4py.MPI.Comm", comm)
    return comm._impl


def _comm_lock_table(comm: Any) -> dict[Hashable, Any]:
    """Internal communicator lock table (this process's)."""
    impl = _comm_key(comm, "_comm_lock_table")
    per_rank = _locks.get(impl)
    if per_rank is None:
        per_rank = _locks[impl] = {}
    return per_rank.setdefault(proc().rank, {})


def _comm_lock(comm: Any, key: Hashable | None = None) -> Any:
    """Create/get communicator lock."""
    table = _comm_lock_table(comm)
    lock = table.get(key)
    if lock is None:
        lock = table[key] = threading.Lock()
    return lock


def _tag_ub() -> int:
    ub = COMM_WORLD.Get_attr(KEYVAL_TAG_UB)
    return int(ub) if ub else 32767


def _context(comm: Any) -> list[Any]:
    """[dupcomm, next tag, localcomm, low_group] of this process for ``comm``."""
    impl = comm._impl
    per_rank = _ctx.get(impl)
    if per_rank is None:
        per_rank = _ctx[impl] = {}
    rank = proc().rank
    ctx = per_rank.get(rank)
    if ctx is None:
        ctx = per_rank[rank] = [comm.Dup(), 0, None, -1]
    return ctx


def _next_tag(ctx: list[Any]) -> int:
    tag = ctx[1]
    ctx[1] = tag + 1 if tag + 1 < _tag_ub() else 0
    return tag


def _commctx_intra(comm: Any) -> tuple[Any, int]:
    """Create/get intracommunicator duplicate."""
    if not isinstance(comm, Intracomm) or comm.Is_inter():
        raise TypeError(f"Argument 'comm' has incorrect type (expected mpi4py.MPI.Intracomm, "
                        f"got mpi4py.MPI.{type(comm).__name__})")
    with _comm_lock(comm, "@commctx_intra"):
        ctx = _context(comm)
        return ctx[0], _next_tag(ctx)


def _commctx_inter(comm: Any) -> tuple[Any, int, Any, bool]:
    """Create/get intercommunicator duplicate."""
    if not isinstance(comm, Comm) or not comm.Is_inter():
        raise TypeError(f"Argument 'comm' has incorrect type (expected mpi4py.MPI.Intercomm, "
                        f"got mpi4py.MPI.{type(comm).__name__})")
    with _comm_lock(comm, "@commctx_inter"):
        ctx = _context(comm)
        if ctx[2] is None:
            local, remote = comm.Get_size(), comm.Get_remote_size()
            merged = comm.Merge(local > remote)
            low = 0 if local > remote else 1 if local < remote else int(merged.Get_rank() < local)
            group = comm.Get_group()
            ctx[2] = merged.Create(group)
            ctx[3] = low
            group.Free()
            merged.Free()
        return ctx[0], _next_tag(ctx), ctx[2], bool(ctx[3])


# -- type code dictionaries ----------------------------------------------------------------
def _typemap(pairs: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code, name in pairs.items():
        dt = getattr(datatype, name, None)
        if dt is not None and dt:
            out[code] = dt
    return out


def _build_typedict() -> dict[str, Any]:
    """mpi4py's ``_typedict``: the runtime's type-code table, as facade constants."""
    by_impl = datatype._BY_IMPL
    return {code: by_impl[id(impl)] for code, impl in TYPEDICT.items() if id(impl) in by_impl}


_typedict: dict[str, Any] = _build_typedict()
_typedict_c: dict[str, Any] = _typemap({
    "?": "C_BOOL", "b": "SIGNED_CHAR", "h": "SHORT", "i": "INT", "l": "LONG", "q": "LONG_LONG",
    "B": "UNSIGNED_CHAR", "H": "UNSIGNED_SHORT", "I": "UNSIGNED", "L": "UNSIGNED_LONG",
    "Q": "UNSIGNED_LONG_LONG", "f": "FLOAT", "d": "DOUBLE", "g": "LONG_DOUBLE",
    "F": "C_COMPLEX", "D": "C_DOUBLE_COMPLEX", "G": "C_LONG_DOUBLE_COMPLEX", "b1": "C_BOOL",
    "i1": "INT8_T", "i2": "INT16_T", "i4": "INT32_T", "i8": "INT64_T", "u1": "UINT8_T",
    "u2": "UINT16_T", "u4": "UINT32_T", "u8": "UINT64_T", "f2": "FLOAT16_T", "f4": "FLOAT",
    "c8": "C_COMPLEX", "f8": "DOUBLE", "c16": "C_DOUBLE_COMPLEX", "f16": "LONG_DOUBLE",
    "c32": "C_LONG_DOUBLE_COMPLEX",
})
_typedict_f: dict[str, Any] = _typemap({
    "l": "LOGICAL", "i": "INTEGER", "r": "REAL", "s": "REAL", "d": "DOUBLE_PRECISION",
    "c": "COMPLEX", "z": "DOUBLE_COMPLEX", "i1": "INTEGER1", "i2": "INTEGER2", "i4": "INTEGER4",
    "i8": "INTEGER8", "r4": "REAL4", "r8": "REAL8", "r16": "REAL16", "c8": "COMPLEX8",
    "c16": "COMPLEX16", "c32": "COMPLEX32",
})


# -- handles: sizes, values, addresses -----------------------------------------------------
_STATUS_SIZE = 20  # MPICH's MPI_Status: five ints

#: id(object) -> (object, ctypes cell holding its handle); objects are kept alive
_cells: dict[int, tuple[Any, Any]] = {}


#: (class, handle size) of every MPI class
_MPI_CLASSES: tuple[tuple[type, int], ...] = (
    (Status, _STATUS_SIZE), (Datatype, 4), (Request, 4), (Message, 4), (Op, 4), (Group, 4), (Info, 4),
    (Errhandler, 4), (Session, 4), (Comm, 4), (Win, 4), (File, ctypes.sizeof(ctypes.c_void_p)),
)


def _classify(arg: Any) -> tuple[type, int] | None:
    for cls, size in _MPI_CLASSES:
        if (isinstance(arg, type) and issubclass(arg, cls)) or isinstance(arg, cls):
            return cls, size
    return None


def _sizeof(arg: Any) -> int:
    """Size in bytes of the underlying MPI handle."""
    found = _classify(arg)
    if found is None:
        raise TypeError("expecting an MPI type or instance")
    return found[1]


def _cell(obj: Any, size: int) -> Any:
    entry = _cells.get(id(obj))
    if entry is None or entry[0] is not obj:
        cell = (ctypes.c_char * size)() if size == _STATUS_SIZE else \
            (ctypes.c_uint32() if size == 4 else ctypes.c_uint64())
        entry = _cells[id(obj)] = (obj, cell)
    return entry[1]


def _raw_handle(obj: Any, size: int) -> int:
    if isinstance(obj, Session):
        if obj._st is None:
            return _SESSION_NULL_HANDLE
        return _SESSION_NULL_HANDLE | (id(obj._st) >> 4 & 0x3FFFFF)
    h = None
    try:
        h = getattr(obj, "handle", None)
    except Exception:  # noqa: BLE001 - a facade class without a usable handle property
        h = None
    if isinstance(h, int):
        return h & (0xFFFFFFFF if size == 4 else 0xFFFFFFFFFFFFFFFF)
    return id(obj) & (0xFFFFFFFF if size == 4 else 0xFFFFFFFFFFFFFFFF)


def _addressof(arg: Any) -> int:
    """Memory address of the underlying MPI handle."""
    found = None if isinstance(arg, type) else _classify(arg)
    if found is None:
        raise TypeError("expecting an MPI instance")
    size = found[1]
    cell = _cell(arg, size)
    if size != _STATUS_SIZE:
        cell.value = _raw_handle(arg, size)
    return ctypes.addressof(cell)


def _handleof(arg: Any) -> int:
    """Unsigned integer value with the underlying MPI handle."""
    found = None if isinstance(arg, type) else _classify(arg)
    if found is None:
        raise TypeError("expecting an MPI instance")
    if found[1] == _STATUS_SIZE:
        return ctypes.addressof(_cell(arg, _STATUS_SIZE))
    return _raw_handle(arg, found[1])


def _set_abort_status(status: int) -> None:
    """Helper for ``python -m mpi4py.run ...``: the calling rank aborts the job with
    ``status`` at its exit (0: it does not)."""
    proc().attrs["abort_status"] = int(status)
