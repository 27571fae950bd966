"""``MPI.Message``: a message taken off the queue by a matched probe (Mprobe/Improbe)."""

from __future__ import annotations

from typing import Any

from smpy.mpi import msgspec
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.mpi.objmodel import HandleMixin, copy_arg
from smpy.mpi.request import Request
from smpy.mpi.status import Status
from smpy.runtime import errors, p2p
from smpy.runtime.constants import ANY_SOURCE, ANY_TAG

_NO_PROC = object()


#: MPICH's handles: messages are requests (kind 0xb); MPI_MESSAGE_NULL, MPI_MESSAGE_NO_PROC
_NULL_HANDLE = 0x2C000000
_NO_PROC_HANDLE = 0x6C000000
_DIRECT_BASE = 0xAC000000


def _handles() -> tuple[dict[int, Any], dict[int, int]]:
    """Per-run tables: handle -> matched send, id(send) -> handle."""
    world = proc().world
    tables = getattr(world, "_message_handles", None)
    if tables is None:
        tables = ({}, {})
        world._message_handles = tables
    return tables


class Message(HandleMixin):
    __slots__ = ("_send", "__weakref__")

    def __new__(cls, message: Message | None = None) -> Message:
        copy_arg(message, Message, "message")
        self = object.__new__(cls)
        self._send = None if message is None else message._send
        return self

    def _value(self) -> int:
        send = self._send
        if send is None:
            return _NULL_HANDLE
        if send is _NO_PROC:
            return _NO_PROC_HANDLE
        by_handle, by_id = _handles()
        h = by_id.get(id(send))
        if h is None:
            h = by_id[id(send)] = _DIRECT_BASE | len(by_handle)
            by_handle[h] = send
        return h

    @classmethod
    def _from_value(cls, value: int) -> Message:
        if value == _NULL_HANDLE:
            return cls()
        if value == _NO_PROC_HANDLE:
            return cls(MESSAGE_NO_PROC)
        send = _handles()[0].get(value)
        if send is None:
            errors.raise_error(errors.ERR_REQUEST, f"MPI_Message_f2c: invalid message handle {value:#x}")
        m = cls.__new__(cls)
        m._send = send
        return m

    def __init__(self, message: Message | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, send: Any) -> Message:
        if send is None:  # a new handle equal to MESSAGE_NO_PROC: it becomes null once received
            send = _NO_PROC
        m = cls.__new__(cls)
        m._send = send
        return m

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self._send is other._send

    __hash__ = None  # type: ignore[assignment]  # unhashable, like mpi4py's

    def __bool__(self) -> bool:
        return self._send is not None

    def __reduce__(self) -> str | tuple[Any, ...]:
        for name, const in (("MESSAGE_NULL", MESSAGE_NULL), ("MESSAGE_NO_PROC", MESSAGE_NO_PROC)):
            if self is const:
                return name
            if self._send is const._send:  # a copy of a predefined handle
                return (type(self), (const,))
        raise ValueError("cannot serialize 'mpi4py.MPI.Message' instance")

    def _take(self, call: str) -> Any:
        send = self._send
        if send is None:
            errors.raise_error(errors.ERR_REQUEST, f"{call}: invalid message (MPI_MESSAGE_NULL)")
        if self is not MESSAGE_NO_PROC:  # predefined handles stay as they are (mpi4py's constobj)
            self._send = None  # a message is received once; the handle becomes MESSAGE_NULL
        return send

    def _irecv(self, buf: Any, call: str, obj: bool) -> Request:
        send = self._take(call)
        if send is _NO_PROC:
            return Request._wrap(p2p.completed_null(proc(), call, p2p.RECV), obj)
        spec = None if obj else msgspec.parse_recv(buf)
        return Request._wrap(p2p.recv_matched(proc(), send, spec, call), obj)

    @mpicall
    def Recv(self, buf: Any, status: Status | None = None) -> None:
        self._irecv(buf, "MPI_Mrecv", False).Wait(status)

    @mpicall
    def Irecv(self, buf: Any) -> Request:
        return self._irecv(buf, "MPI_Imrecv", False)

    @mpicall
    def recv(self, status: Status | None = None) -> Any:
        return self._irecv(None, "MPI_Mrecv", True).wait(status)

    @mpicall
    def irecv(self) -> Request:
        return self._irecv(None, "MPI_Imrecv", True)

    # matched probes as class methods: Message.Probe(comm, source, tag, status)
    @classmethod
    @intargs
    def Probe(cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message:
        return comm.Mprobe(source, tag, status)

    @classmethod
    @intargs
    def Iprobe(cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG,
               status: Status | None = None) -> Message | None:
        return comm.Improbe(source, tag, status)

    @classmethod
    @intargs
    def probe(cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message:
        return comm.mprobe(source, tag, status)

    @classmethod
    @intargs
    def iprobe(cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG,
               status: Status | None = None) -> Message | None:
        return comm.improbe(source, tag, status)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Message object at {id(self):#x}>"

    def free(self) -> None:
        """Nullify a copy of ``MESSAGE_NO_PROC``; otherwise do nothing (a message is freed by
        receiving it), as mpi4py's."""
        if self._send is _NO_PROC and self is not MESSAGE_NO_PROC:
            self._send = None


MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message.__new__(Message)
MESSAGE_NO_PROC._send = _NO_PROC
