"""``MPI.Op`` and the predefined reduction operations (facade over ``OpImpl``).

``op(x, y)`` applies the operation to Python objects as mpi4py does (``MPI.SUM(1, 2) == 3``,
user ops call ``function(x, y, None)``); ``Reduce_local`` applies it to buffers. Equality is
identity of impls; ops are unhashable, like mpi4py's.
"""

from __future__ import annotations

import copyreg
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from smpy.mpi import msgspec
from smpy.mpi.buffer import buffer
from smpy.mpi.datatype import Datatype
from smpy.mpi.objmodel import copy_arg
from smpy.runtime import errors
from smpy.runtime.op import OP_NULL as _NULL_IMPL
from smpy.runtime.op import PREDEFINED as _IMPLS
from smpy.runtime.op import OpImpl
from smpy.runtime.world import NotInSimulation, current

__all__ = ["Op", "OP_NULL", "MAX", "MIN", "SUM", "PROD", "LAND", "BAND", "LOR", "BOR", "LXOR",
           "BXOR", "MAXLOC", "MINLOC", "REPLACE", "NO_OP"]


#: mpi4py keeps user functions in a registry of 32 slots per process, freed by ``Free``
_MAX_USER_OPS = 32


def _user_slots() -> set[int] | None:
    """Handles of the calling rank's live user-defined operations (None outside a rank)."""
    try:
        proc = current()
    except NotInSimulation:
        return None
    live = proc.attrs.get("user_ops")
    if live is None:
        live = proc.attrs["user_ops"] = set()
    return live


def _as_buffer(mem: memoryview) -> buffer:
    """The ``MPI.buffer`` a user-defined operation's function receives (writable bytes)."""
    return buffer._make(mem, None, mem.readonly)


class Op:
    """Reduction operation."""

    __slots__ = ("_impl", "_user", "__weakref__")

    _impl: OpImpl
    #: holds mpi4py's registry slot of a user function (``Create`` and copies of its result;
    #: not ``fromhandle``/``fromint`` objects, which can be neither called nor pickled)
    _user: bool

    def __new__(cls, op: Op | None = None) -> Op:
        copy_arg(op, Op, "op")
        self = object.__new__(cls)
        self._impl = _NULL_IMPL if op is None else op._impl
        self._user = op is not None and op._user
        return self

    def __init__(self, op: Op | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, impl: OpImpl) -> Op:
        const = _BY_IMPL.get(id(impl))
        if const is not None and const._impl is impl:
            return const
        new = cls.__new__(cls)
        new._impl = impl
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return self._impl is other._impl

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return self._impl is not other._impl

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        return self._impl is not _NULL_IMPL

    def __call__(self, x: Any, y: Any) -> Any:
        impl = self._impl
        if not impl.is_predefined and not self._user:
            raise ValueError("cannot call user-defined operation")
        return impl.apply_object(x, y)

    def __reduce__(self) -> str | tuple[Any, ...]:
        impl = self._impl
        if impl.is_predefined:
            const = _BY_IMPL.get(id(impl))
            if const is None or self is const:
                return impl.attr
            # a copy of a predefined op: a new object equal to the constant (mpi4py's
            # ``copyreg.__newobj__`` form)
            return (copyreg.__newobj__, (type(self), const))
        if not self._user:
            raise ValueError("cannot pickle user-defined reduction operation")
        return (type(self).Create, (impl.function, impl.commutative))

    # -- user-defined ops ---------------------------------------------------------------------
    @classmethod
    def Create(cls, function: Callable[[Any, Any, Datatype], None], commute: bool = False) -> Op:
        """Create a user-defined reduction operation."""
        live = _user_slots()
        if live is not None and len(live) >= _MAX_USER_OPS:
            raise RuntimeError("cannot create too many user-defined reduction operations")
        impl = OpImpl.user(function, commute, Datatype._wrap, _as_buffer)
        _USER_HANDLES[impl.handle] = impl
        if live is not None:
            live.add(impl.handle)
        op = cls._wrap(impl)
        op._user = True
        return op

    def Free(self) -> None:
        """Free a user-defined reduction operation."""
        impl = self._impl
        if impl is _NULL_IMPL or (impl.function is None and not impl.is_predefined):
            errors.raise_error(errors.ERR_OP, "MPI_Op_free: Null Op pointer")
        if impl.is_predefined:
            errors.raise_error(errors.ERR_OP, "MPI_Op_free: Cannot free permanent MPI_Op")
        impl.free()
        _USER_HANDLES.pop(impl.handle, None)
        live = _user_slots()
        if live is not None:
            live.discard(impl.handle)
        self._impl = _NULL_IMPL

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        impl = self._impl
        if impl is _NULL_IMPL or _BY_IMPL.get(id(impl)) is self:
            return  # null, or a module constant (never freed)
        if impl.is_predefined:
            self._impl = _NULL_IMPL  # a copy of a predefined op: nullified (mpi4py)
            return
        self.Free()

    # -- queries ------------------------------------------------------------------------------
    def Is_commutative(self) -> bool:
        """Query reduction operations for their commutativity."""
        if self._impl is _NULL_IMPL:
            errors.raise_error(errors.ERR_OP, "MPI_Op_commutative: Null Op pointer")
        return self._impl.commutative

    @property
    def is_commutative(self) -> bool:
        """Is a commutative operation."""
        return self.Is_commutative()

    @property
    def is_predefined(self) -> bool:
        """Is a predefined operation."""
        return self._impl.is_predefined

    def Reduce_local(self, inbuf: Any, inoutbuf: Any) -> None:
        """Apply a reduction operation to local data: ``inoutbuf = inbuf op inoutbuf``."""
        r = msgspec.parse_recv(inoutbuf)
        s = msgspec.parse_send(inbuf)
        if s.in_place:
            errors.raise_error(errors.ERR_BUFFER,
                               "MPI_Reduce_local: buffer 'inbuf' cannot be MPI_IN_PLACE")
        if s.datatype is not r.datatype:
            raise ValueError("mismatch in send and receive MPI datatypes")
        if s.count != r.count:
            raise ValueError(f"mismatch in send count {s.count} and receive count {r.count}")
        if _address(s) == _address(r) is not None:
            errors.raise_error(errors.ERR_BUFFER, "MPI_Reduce_local: Buffers must not be aliased")
        self._impl.reduce_local(s.mem, s.offset, r.mem, r.offset, r.count, r.datatype)

    # -- handles ------------------------------------------------------------------------------
    def py2f(self) -> int:
        return self._impl.py2f

    @classmethod
    def f2py(cls, arg: int) -> Op:
        impl = _HANDLES.get(arg & 0xFFFFFFFF) or _USER_HANDLES.get(arg & 0xFFFFFFFF)
        if impl is None:
            errors.raise_error(errors.ERR_OP, f"MPI_Op_f2c: Invalid MPI_Op handle {arg}")
        return cls._wrap(impl)

    def toint(self) -> int:
        return self._impl.handle

    @classmethod
    def fromint(cls, arg: int) -> Op:
        return cls.f2py(arg)

    @property
    def handle(self) -> int:
        """MPI handle."""
        return self._impl.handle

    @classmethod
    def fromhandle(cls, handle: int) -> Op:
        return cls.f2py(handle)


def _address(spec: msgspec.BufSpec) -> int | None:
    """Address of a message's first element (MPICH refuses in == inout)."""
    if spec.mem.nbytes == 0:
        return None
    return np.frombuffer(spec.mem, np.uint8).ctypes.data + spec.offset


_BY_IMPL: dict[int, Op] = {}
_HANDLES: dict[int, OpImpl] = {impl.handle: impl for impl in _IMPLS.values()}
_USER_HANDLES: weakref.WeakValueDictionary[int, OpImpl] = weakref.WeakValueDictionary()


def _named(attr: str) -> Op:
    impl = _IMPLS[attr]
    obj = Op.__new__(Op)
    obj._impl = impl
    _BY_IMPL[id(impl)] = obj
    return obj


OP_NULL = _named("OP_NULL")
MAX = _named("MAX")
MIN = _named("MIN")
SUM = _named("SUM")
PROD = _named("PROD")
LAND = _named("LAND")
BAND = _named("BAND")
LOR = _named("LOR")
BOR = _named("BOR")
LXOR = _named("LXOR")
BXOR = _named("BXOR")
MAXLOC = _named("MAXLOC")
MINLOC = _named("MINLOC")
REPLACE = _named("REPLACE")
NO_OP = _named("NO_OP")

#: every predefined op by mpi4py attribute name (OP_NULL included)
PREDEFINED_OPS: dict[str, Op] = {name: _BY_IMPL[id(impl)] for name, impl in _IMPLS.items()}
