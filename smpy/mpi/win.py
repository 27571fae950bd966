"""``MPI.Win``: one-sided communication (RMA), a facade over :mod:`smpy.runtime.rma`.

Each method parses mpi4py's arguments (origin/result/compare buffers as messages, target
specs ``disp`` or ``[disp, count, datatype]``), makes one runtime call and wraps the result.

mpi4py's ``Win`` exposes the local window memory through the buffer protocol
(``memoryview(win)``, used by ``mpi4py.util.sync``). Python 3.11 classes cannot implement
that protocol, so ``Win`` is a (1-d, uint8) ``numpy.ndarray`` subclass viewing the local
memory; the handle semantics (equality, ``bool``, hash, pickling, repr) are mpi4py's.
"""

from __future__ import annotations

import copyreg
import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from smpy.mpi import msgspec
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.mpi.buffer import buffer
from smpy.mpi.comm import COMM_SELF, Comm
from smpy.mpi.errhandler import ErrhandlerMixin
from smpy.mpi.group import Group
from smpy.mpi.info import Info
from smpy.mpi.objmodel import AttrMixin, HandleMixin, arg_type_error, copy_arg
from smpy.mpi.op import SUM, Op
from smpy.mpi.request import Request
from smpy.runtime import attributes as _attributes
from smpy.runtime import errors
from smpy.runtime import rma as R
from smpy.runtime.constants import PROC_NULL
from smpy.runtime.group import GroupImpl

__all__ = [
    "Win", "WIN_NULL",
    "WIN_FLAVOR_CREATE", "WIN_FLAVOR_ALLOCATE", "WIN_FLAVOR_DYNAMIC", "WIN_FLAVOR_SHARED",
    "WIN_SEPARATE", "WIN_UNIFIED",
    "MODE_NOCHECK", "MODE_NOSTORE", "MODE_NOPUT", "MODE_NOPRECEDE", "MODE_NOSUCCEED",
    "LOCK_EXCLUSIVE", "LOCK_SHARED",
    "WIN_BASE", "WIN_SIZE", "WIN_DISP_UNIT", "WIN_CREATE_FLAVOR", "WIN_FLAVOR", "WIN_MODEL",
]

WIN_FLAVOR_CREATE = R.FLAVOR_CREATE
WIN_FLAVOR_ALLOCATE = R.FLAVOR_ALLOCATE
WIN_FLAVOR_DYNAMIC = R.FLAVOR_DYNAMIC
WIN_FLAVOR_SHARED = R.FLAVOR_SHARED
WIN_SEPARATE = R.SEPARATE
WIN_UNIFIED = R.UNIFIED
MODE_NOCHECK = R.MODE_NOCHECK
MODE_NOSTORE = R.MODE_NOSTORE
MODE_NOPUT = R.MODE_NOPUT
MODE_NOPRECEDE = R.MODE_NOPRECEDE
MODE_NOSUCCEED = R.MODE_NOSUCCEED
LOCK_EXCLUSIVE = R.LOCK_EXCLUSIVE
LOCK_SHARED = R.LOCK_SHARED
WIN_BASE = R.KEYVAL_WIN_BASE
WIN_SIZE = R.KEYVAL_WIN_SIZE
WIN_DISP_UNIT = R.KEYVAL_WIN_DISP_UNIT
WIN_CREATE_FLAVOR = R.KEYVAL_WIN_CREATE_FLAVOR
WIN_FLAVOR = WIN_CREATE_FLAVOR  # mpi4py's alias
WIN_MODEL = R.KEYVAL_WIN_MODEL


def _tobuffer(mem: memoryview) -> Any:
    """mpi4py's ``MPI.buffer`` over ``mem``."""
    return buffer.frombuffer(mem)


# -- object model -------------------------------------------------------------------------------
T_WIN = 8  #: MPICH's object type of windows in handles (the first window is 0xa0000000)
_NULL_VALUE = T_WIN << 26  # MPI_WIN_NULL = 0x20000000


class _WinHandles:
    """One process's window handles, allocated as MPICH does: ``0xa0000000 + index`` with
    freed indices reused first (last freed, first reused)."""

    __slots__ = ("by_impl", "by_value", "next", "free")

    def __init__(self) -> None:
        self.by_impl: weakref.WeakKeyDictionary[R.WinImpl, int] = weakref.WeakKeyDictionary()
        self.by_value: weakref.WeakValueDictionary[int, R.WinImpl] = weakref.WeakValueDictionary()
        self.next = 0
        self.free: list[int] = []

    def new(self, impl: R.WinImpl) -> int:
        index = self.free.pop() if self.free else self.next
        if index == self.next:
            self.next += 1
        value = 0x80000000 | (T_WIN << 26) | index
        self.by_impl[impl] = value
        self.by_value[value] = impl
        return value

    def release(self, impl: R.WinImpl) -> None:
        value = self.by_impl.pop(impl, None)
        if value is not None:
            self.by_value.pop(value, None)
            self.free.append(value & 0x03FFFFFF)


def _handles() -> _WinHandles:
    attrs = proc().attrs
    table = attrs.get("win_handles")
    if table is None:
        table = attrs["win_handles"] = _WinHandles()
    return table


def _win_value(impl: R.WinImpl | None) -> int:
    """The unsigned 32-bit MPICH handle of a window in this process."""
    if impl is None:
        return _NULL_VALUE
    table = _handles()
    value = table.by_impl.get(impl)
    return table.new(impl) if value is None else value


def _win_lookup(value: int) -> R.WinImpl | None:
    if value == _NULL_VALUE:
        return None
    impl = _handles().by_value.get(value)
    if impl is None:
        errors.raise_error(errors.ERR_WIN, f"Invalid MPI_Win handle ({value:#x})")
    return impl


def _parse_target(target: Any, ocount: int, otype: Any) -> tuple[int, int, Any]:
    """mpi4py's target spec: None, an integer displacement, or ``[disp[, count[, datatype]]]``."""
    if target is None:
        return 0, ocount, otype
    if msgspec._is_integral(target):
        return operator.index(target), ocount, otype
    if isinstance(target, (list, tuple)):
        n = len(target)
        disp, count, dtype = 0, ocount, otype
        if n >= 1:
            disp = operator.index(target[0])
        if n >= 2:
            count = operator.index(target[1])
        if n >= 3:
            dtype = msgspec.as_datatype(target[2])
        if n >= 4:
            raise ValueError("target: expecting 3 items at most")
        return disp, count, dtype
    raise ValueError("target: expecting integral or list/tuple")


class Win(np.ndarray, HandleMixin, AttrMixin, ErrhandlerMixin):  # type: ignore[misc]
    """Remote memory access context (one handle per rank; the runtime window is shared)."""

    _impl: R.WinImpl | None = None
    _named: str | None = None
    _errhandler_kind = "Win"
    _attr_name = "Win"

    def __new__(cls, win: Win | None = None) -> Win:
        copy_arg(win, Win, "win")
        return cls._wrap(None if win is None else win._impl)

    def __array_finalize__(self, obj: Any) -> None:
        pass

    @classmethod
    def _wrap(cls, impl: R.WinImpl | None) -> Win:
        mem: Any = None
        if impl is not None:
            try:
                me = impl.rank(proc())
                seg = impl.segments[me]
                mem = seg.mem if seg is not None and seg.size else None
            except Exception:  # noqa: BLE001 - outside a rank: no local memory
                mem = None
        if mem is None:
            w = np.ndarray.__new__(cls, (0,), np.uint8)
        else:
            w = np.ndarray.__new__(cls, (mem.nbytes,), np.uint8, buffer=mem)
        w._impl = impl
        return w

    @property
    def _win(self) -> R.WinImpl:
        impl = self._impl
        if impl is None:
            errors.raise_error(errors.ERR_WIN, "Invalid MPI_Win (MPI_WIN_NULL)")
        return impl

    # -- handle semantics ---------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Win):
            return NotImplemented
        return self._impl is other._impl

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Win):
            return NotImplemented
        return self._impl is not other._impl

    __hash__ = None  # type: ignore[assignment]  # unhashable, like mpi4py's

    def __bool__(self) -> bool:
        return self._impl is not None

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Win object at {id(self):#x}>"

    __str__ = __repr__

    def _unorderable(self, other: object) -> bool:
        raise TypeError(f"unorderable type 'mpi4py.MPI.{type(self).__name__}'")

    __lt__ = __le__ = __gt__ = __ge__ = _unorderable  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        if self._impl is None:
            if self._named:
                return self._named
            return (copyreg.__newobj__, (type(self), WIN_NULL))  # a copy of the null handle
        raise ValueError(f"cannot serialize 'mpi4py.MPI.{type(self).__name__}' instance")

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self.__reduce__()

    def __copy__(self) -> Win:  # copy.copy goes through __reduce__ in mpi4py
        r = self.__reduce__()
        if isinstance(r, str):
            return self
        return r[0](*r[1])

    def __deepcopy__(self, memo: Any) -> Win:
        return self.__copy__()

    # -- hooks of the handle, attribute and error-handler mixins ------------------------------
    def _value(self) -> int:
        return _win_value(self._impl)

    @classmethod
    def _from_value(cls, value: int) -> Win:
        return cls._wrap(_win_lookup(value))

    def _attr_obj(self) -> R.WinImpl:
        return self._win

    def _errhandler_obj(self) -> R.WinImpl:
        return self._win

    def _errhandler_target(self) -> tuple[Any, str]:
        return self._win, "Win"

    def _predefined_attr(self, keyval: int) -> Any:
        impl = self._win
        if keyval == WIN_BASE:
            return self._local().base
        if keyval == WIN_SIZE:
            return self._local().size
        if keyval == WIN_DISP_UNIT:
            return self._local().disp_unit
        if keyval == WIN_CREATE_FLAVOR:
            return impl.flavor
        if keyval == WIN_MODEL:
            return impl.model
        return NotImplemented

    def free(self) -> None:
        """Call `Free` if not null."""
        if self._impl is not None:
            self.Free()

    # -- creation (collective over comm; errors go to comm's error handler, as in MPI) ------
    @classmethod
    @intargs
    def Create(cls, memory: Any, disp_unit: int = 1, info: Info | None = None,
               comm: Any = None) -> Win:
        """Create an window object for one-sided communication."""
        if memory is None or memory is msgspec.BOTTOM:
            mem = None
        else:
            mem, _ = msgspec.parse_buffer(memory, readonly=False)
        return _Win_create(_intracomm(comm), cls, R.FLAVOR_CREATE, mem,
                           0 if mem is None else mem.nbytes, int(disp_unit))

    @classmethod
    @intargs
    def Allocate(cls, size: int, disp_unit: int = 1, info: Info | None = None, comm: Any = None) -> Win:
        """Create an window object for one-sided communication."""
        return _Win_allocate(_intracomm(comm), cls, R.FLAVOR_ALLOCATE, None, int(size), int(disp_unit))

    @classmethod
    @intargs
    def Allocate_shared(cls, size: int, disp_unit: int = 1, info: Info | None = None,
                        comm: Any = None) -> Win:
        """Create an window object for one-sided communication."""
        return _Win_allocate_shared(_intracomm(comm), cls, R.FLAVOR_SHARED, None, int(size),
                                    int(disp_unit))

    @classmethod
    def Create_dynamic(cls, info: Info | None = None, comm: Any = None) -> Win:
        """Create an window object for one-sided communication."""
        return _Win_create_dynamic(_intracomm(comm), cls, R.FLAVOR_DYNAMIC, None, 0, 1)

    @mpicall
    def Shared_query(self, rank: int) -> tuple[Any, int]:
        """Query the process-local address for remote memory segments."""
        seg = R.shared_query(proc(), self._win, int(rank))
        return _tobuffer(seg.mem), seg.disp_unit

    @mpicall
    def Attach(self, memory: Any) -> None:
        """Attach a local memory region."""
        mem, _ = msgspec.parse_buffer(memory, readonly=False)
        R.attach(proc(), self._win, mem)

    @mpicall
    def Detach(self, memory: Any) -> None:
        """Detach a local memory region."""
        mem, _ = msgspec.parse_buffer(memory, readonly=False)
        R.detach(proc(), self._win, mem)

    @mpicall
    def Free(self) -> None:
        """Free a window."""
        impl = self._win
        pr = proc()
        R.free(pr, impl)
        _attributes.delete_all(pr, impl, self, "MPI_Win_free")
        _handles().release(impl)
        self._impl = None

    # -- info, group, name ----------------------------------------------------------------------
    def Set_info(self, info: Info) -> None:
        """Set new values for the hints associated with a window."""
        impl = self._win
        if info:
            for k, v in info.items():
                if k in impl.info:
                    impl.info[k] = v

    def Get_info(self) -> Info:
        """Return the current hints for a window."""
        return Info.Create(self._win.info)

    @property
    def info(self) -> Info:
        """Info hints."""
        return self.Get_info()

    @info.setter
    def info(self, value: Info) -> None:
        """Info hints."""
        self.Set_info(value)

    def Get_group(self) -> Group:
        """Access the group of processes that created the window."""
        return Group._wrap(GroupImpl(self._win.comm.group))

    @property
    def group(self) -> Group:
        """Group."""
        return self.Get_group()

    @property
    def group_size(self) -> int:
        """Group size."""
        return self._win.size

    @property
    def group_rank(self) -> int:
        """Group rank."""
        return self._win.rank(proc())

    def Get_name(self) -> str:
        """Get the print name for this window."""
        if self._impl is None:
            return "MPI_WIN_NULL"
        return self._impl.name

    def Set_name(self, name: str) -> None:
        """Set the print name for this window."""
        self._win.name = str(name)

    @property
    def name(self) -> str:
        """Print name."""
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        """Print name."""
        self.Set_name(value)

    # -- attributes ---------------------------------------------------------------------------
    def _local(self) -> R.Segment:
        impl = self._win
        seg = impl.segments[impl.rank(proc())]
        assert seg is not None
        return seg

    @property
    def attrs(self) -> tuple[int, int, int]:
        """Attributes."""
        seg = self._local()
        return (seg.base, seg.size, seg.disp_unit)

    @property
    def flavor(self) -> int:
        """Create flavor."""
        return self._win.flavor

    @property
    def model(self) -> int:
        """Memory model."""
        return self._win.model

    def tomemory(self) -> Any:
        """Return window memory buffer."""
        return _tobuffer(self._local().mem)

    # -- communication --------------------------------------------------------------------------
    def _origin(self, origin: Any, target_rank: int, readonly: bool) -> msgspec.BufSpec:
        return msgspec.parse_send(origin) if readonly else msgspec.parse_recv(origin)

    def _target(self, spec: msgspec.BufSpec, target: Any) -> R.Target:
        disp, count, dtype = _parse_target(target, spec.count, spec.datatype)
        return R.Target(disp, count, dtype)

    @staticmethod
    def _proc_null(origin: Any, target: Any) -> None:
        if target is not None and not msgspec._is_integral(target):
            _parse_target(target, 0, None)

    def _put(self, origin: Any, target_rank: int, target: Any, call: str, op: Op | None) -> Any:
        impl = self._win
        if target_rank == PROC_NULL:
            self._proc_null(origin, target)
            return R.done_request(proc(), call)
        spec = msgspec.parse_send(origin)
        t = self._target(spec, target)
        data = spec.datatype.pack(spec.mem, spec.offset, spec.count)
        return R.put(proc(), impl, data, int(target_rank), t, call, None if op is None else op._impl)

    def _get(self, origin: Any, target_rank: int, target: Any, call: str) -> Any:
        impl = self._win
        if target_rank == PROC_NULL:
            self._proc_null(origin, target)
            return R.done_request(proc(), call)
        spec = msgspec.parse_recv(origin)
        t = self._target(spec, target)

        def deliver(data: bytes) -> None:
            spec.datatype.unpack(data, spec.mem, spec.offset, spec.count)

        return R.get(proc(), impl, deliver, int(target_rank), t, call)

    def _get_acc(self, origin: Any, result: Any, target_rank: int, target: Any, op: Op,
                 call: str) -> Any:
        impl = self._win
        if target_rank == PROC_NULL:
            self._proc_null(origin, target)
            return R.done_request(proc(), call)
        spec = msgspec.parse_recv(origin)
        t = self._target(spec, target)
        res = msgspec.parse_recv(result)
        data = spec.datatype.pack(spec.mem, spec.offset, spec.count)

        def deliver(old: bytes) -> None:
            res.datatype.unpack(old, res.mem, res.offset, res.count)

        return R.get_accumulate(proc(), impl, data, deliver, int(target_rank), t, op._impl, call)

    @mpicall
    def Put(self, origin: Any, target_rank: int, target: Any = None) -> None:
        """Put data into a memory window on a remote process."""
        self._put(origin, target_rank, target, "MPI_Put", None)

    @mpicall
    def Get(self, origin: Any, target_rank: int, target: Any = None) -> None:
        """Get data from a memory window on a remote process."""
        self._get(origin, target_rank, target, "MPI_Get")

    @mpicall
    def Accumulate(self, origin: Any, target_rank: int, target: Any = None, op: Op = SUM) -> None:
        """Accumulate data into the target process."""
        self._put(origin, target_rank, target, "MPI_Accumulate", op)

    @mpicall
    def Get_accumulate(self, origin: Any, result: Any, target_rank: int, target: Any = None,
                       op: Op = SUM) -> None:
        """Fetch-and-accumulate data into the target process."""
        self._get_acc(origin, result, target_rank, target, op, "MPI_Get_accumulate")

    @mpicall
    def Rput(self, origin: Any, target_rank: int, target: Any = None) -> Request:
        """Put data into a memory window on a remote process."""
        return Request._wrap(self._put(origin, target_rank, target, "MPI_Rput", None))

    @mpicall
    def Rget(self, origin: Any, target_rank: int, target: Any = None) -> Request:
        """Get data from a memory window on a remote process."""
        return Request._wrap(self._get(origin, target_rank, target, "MPI_Rget"))

    @mpicall
    def Raccumulate(self, origin: Any, target_rank: int, target: Any = None, op: Op = SUM) -> Request:
        """Fetch-and-accumulate data into the target process."""
        return Request._wrap(self._put(origin, target_rank, target, "MPI_Raccumulate", op))

    @mpicall
    def Rget_accumulate(self, origin: Any, result: Any, target_rank: int, target: Any = None,
                        op: Op = SUM) -> Request:
        """Accumulate data into the target process using remote memory access."""
        return Request._wrap(self._get_acc(origin, result, target_rank, target, op,
                                           "MPI_Rget_accumulate"))

    @mpicall
    def Fetch_and_op(self, origin: Any, result: Any, target_rank: int, target_disp: int = 0,
                     op: Op = SUM) -> None:
        """Perform one-sided read-modify-write."""
        impl = self._win
        if target_rank == PROC_NULL:
            return
        o = msgspec.parse_send(origin)
        r = msgspec.parse_recv(result)
        if o.count != 1:
            raise ValueError(f"origin: expecting a single element, got {o.count}")
        if r.count != 1:
            raise ValueError(f"result: expecting a single element, got {r.count}")
        if o.datatype is not r.datatype:
            raise ValueError("mismatch in origin and result MPI datatypes")
        data = o.datatype.pack(o.mem, o.offset, 1)

        def deliver(old: bytes) -> None:
            r.datatype.unpack(old, r.mem, r.offset, 1)

        R.get_accumulate(proc(), impl, data, deliver, int(target_rank),
                         R.Target(int(target_disp), 1, o.datatype), op._impl, "MPI_Fetch_and_op")

    @mpicall
    def Compare_and_swap(self, origin: Any, compare: Any, result: Any, target_rank: int,
                         target_disp: int = 0) -> None:
        """Perform one-sided atomic compare-and-swap."""
        impl = self._win
        if target_rank == PROC_NULL:
            return
        o = msgspec.parse_send(origin)
        c = msgspec.parse_send(compare)
        r = msgspec.parse_recv(result)
        if o.count != 1:
            raise ValueError(f"origin: expecting a single element, got {o.count}")
        if c.count != 1:
            raise ValueError(f"compare: expecting a single element, got {c.count}")
        if r.count != 1:
            raise ValueError(f"result: expecting a single element, got {r.count}")
        if o.datatype is not c.datatype:
            raise ValueError("mismatch in origin and compare MPI datatypes")
        if o.datatype is not r.datatype:
            raise ValueError("mismatch in origin and result MPI datatypes")
        cat = o.datatype.basic.category if o.datatype.basic is not None else ""
        if cat not in ("cint", "fint", "byte", "bool", "flogical", "multi"):
            if cat in ("float", "complex", "ffloat", "fcomplex"):
                errors.raise_error(errors.ERR_TYPE, "MPI_Compare_and_swap: invalid datatype for "
                                   "compare-and-swap (floating point)")
        data = o.datatype.pack(o.mem, o.offset, 1)
        cmp = c.datatype.pack(c.mem, c.offset, 1)

        def deliver(old: bytes) -> None:
            r.datatype.unpack(old, r.mem, r.offset, 1)

        from smpy.runtime.op import REPLACE
        R.get_accumulate(proc(), impl, data, deliver, int(target_rank),
                         R.Target(int(target_disp), 1, o.datatype), REPLACE,
                         "MPI_Compare_and_swap", compare=cmp)

    # -- synchronisation ------------------------------------------------------------------------
    @mpicall
    def Fence(self, assertion: int = 0) -> None:
        """Perform an MPI fence synchronization on a window."""
        R.fence(proc(), self._win, int(assertion))

    @mpicall
    def Start(self, group: Group, assertion: int = 0) -> None:
        """Start an RMA access epoch for MPI."""
        R.start(proc(), self._win, group._g().members, int(assertion))

    @mpicall
    def Complete(self) -> None:
        """Complete an RMA operation begun after an `Start`."""
        R.complete(proc(), self._win)

    @mpicall
    def Post(self, group: Group, assertion: int = 0) -> None:
        """Start an RMA exposure epoch."""
        R.post(proc(), self._win, group._g().members, int(assertion))

    @mpicall
    def Wait(self) -> bool:
        """Complete an RMA exposure epoch begun with `Post`."""
        R.wait(proc(), self._win)
        return True

    @mpicall
    def Test(self) -> bool:
        """Test whether an RMA exposure epoch has completed."""
        return R.test(proc(), self._win)

    @mpicall
    def Lock(self, rank: int, lock_type: int = LOCK_EXCLUSIVE, assertion: int = 0) -> None:
        """Begin an RMA access epoch at the target process."""
        R.lock(proc(), self._win, int(lock_type), int(rank), int(assertion))

    @mpicall
    def Unlock(self, rank: int) -> None:
        """Complete an RMA access epoch at the target process."""
        R.unlock(proc(), self._win, int(rank))

    @mpicall
    def Lock_all(self, assertion: int = 0) -> None:
        """Begin an RMA access epoch at all processes."""
        R.lock_all(proc(), self._win, int(assertion))

    @mpicall
    def Unlock_all(self) -> None:
        """Complete an RMA access epoch at all processes."""
        R.unlock_all(proc(), self._win)

    @mpicall
    def Flush(self, rank: int) -> None:
        """Complete all outstanding RMA operations at a target."""
        R.flush(proc(), self._win, int(rank), "MPI_Win_flush")

    @mpicall
    def Flush_all(self) -> None:
        """Complete all outstanding RMA operations at all targets."""
        R.flush(proc(), self._win, None, "MPI_Win_flush_all")

    @mpicall
    def Flush_local(self, rank: int) -> None:
        """Complete locally all outstanding RMA operations at a target."""
        R.flush(proc(), self._win, int(rank), "MPI_Win_flush_local")

    @mpicall
    def Flush_local_all(self) -> None:
        """Complete locally all outstanding RMA operations at all targets."""
        R.flush(proc(), self._win, None, "MPI_Win_flush_local_all")

    @mpicall
    def Sync(self) -> None:
        """Synchronize public and private copies of the window."""
        R.sync(proc(), self._win)


# -- creation entry points ----------------------------------------------------------------------
def _intracomm(comm: Any) -> Any:
    if comm is None:
        return COMM_SELF
    if not isinstance(comm, Comm):
        raise arg_type_error("comm", "mpi4py.MPI.Intracomm", comm)
    return comm


def _creator(call: str) -> Callable[..., Win]:
    def create(comm: Any, cls: type[Win], flavor: int, mem: memoryview | None, size: int,
               disp_unit: int) -> Win:
        impl = R.create(proc(), comm._impl, flavor, mem, size, disp_unit, call)
        _handles().new(impl)
        return cls._wrap(impl)

    create.__name__ = create.__qualname__ = call[4:]
    return mpicall(create)


_Win_create = _creator("MPI_Win_create")
_Win_allocate = _creator("MPI_Win_allocate")
_Win_allocate_shared = _creator("MPI_Win_allocate_shared")
_Win_create_dynamic = _creator("MPI_Win_create_dynamic")

WIN_NULL = Win._wrap(None)
WIN_NULL._named = "WIN_NULL"
