"""Persistent, partitioned, buffered and ready point-to-point; persistent collectives
(``*_init``); Isendrecv(_replace); the blocking collectives not in comm.py (Reduce_scatter,
Reduce_scatter_block, Alltoallw) and Ialltoallw; the buffered-mode buffer
(``Attach_buffer``/``Detach_buffer``/``Flush_buffer``, per process, communicator or session).
Mixed into :class:`smpy.mpi.comm.Comm`.

Persistent operations post, at each ``Start``, the ordinary operation they stand for (an
isend, an irecv, the non-blocking collective), so they cost what that operation costs
(:mod:`smpy.runtime.prequest`).

Buffered mode follows MPICH: a buffered send of ``n`` bytes needs ``n + BSEND_OVERHEAD``
free bytes in the attached buffer (else ``ERR_BUFFER``, "Insufficient space in Bsend
buffer"), and completes at once for the sender (the data was copied). The space is used
until the message has been handed to the network; ``Detach_buffer`` and ``Flush_buffer``
wait for that. ``BUFFER_AUTOMATIC`` attaches an unbounded buffer.
"""

from __future__ import annotations

import ctypes
import operator
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from smpy.colls import buffers as bcoll
from smpy.mpi import msgspec
from smpy.mpi._call import mpicall, proc
from smpy.mpi.msgpickle import pickle
from smpy.mpi.op import SUM, Op
from smpy.mpi.request import Prequest, Request
from smpy.mpi.sentinels import BUFFER_AUTOMATIC
from smpy.runtime import errors, p2p
from smpy.runtime.constants import ANY_SOURCE, ANY_TAG, P2P, PROC_NULL
from smpy.runtime.packing import pack_message
from smpy.runtime.prequest import (
    PARTITION_CHANNEL,
    PartitionedRequest,
    PersistentRequest,
    partition_tag,
)

__all__ = ["BSEND_OVERHEAD", "BUFFER_AUTOMATIC", "Attach_buffer", "Detach_buffer", "Flush_buffer",
           "Iflush_buffer", "_comm_lock", "_comm_lock_table"]

#: MPICH's MPI_BSEND_OVERHEAD
BSEND_OVERHEAD = 96

_BSEND_KEY = "smpy.bsend"


# -- buffered mode ---------------------------------------------------------------------------
class _Attached:
    """An attached buffer: the user's object, its size (None: automatic), buffered sends
    still occupying it."""

    __slots__ = ("obj", "size", "pending")

    def __init__(self, obj: Any, size: int | None) -> None:
        self.obj = obj
        self.size = size
        self.pending: list[tuple[p2p.Request, int]] = []

    def in_use(self) -> int:
        self.pending = [(r, n) for r, n in self.pending if _occupies(r)]
        return sum(n for _, n in self.pending)


def _occupies(req: p2p.Request) -> bool:
    """A buffered send holds its space until its data is on the network (or delivered)."""
    if req.cancelled:
        return False
    flow = getattr(req, "flow", None)
    if flow is not None:
        return flow.state == 0
    return req.payload is not None


def _buffers() -> dict[Any, _Attached]:
    attrs = proc().attrs
    table = attrs.get(_BSEND_KEY)
    if table is None:
        table = attrs[_BSEND_KEY] = {}
    return table


def _attach(key: Any, buf: Any, call: str) -> None:
    table = _buffers()
    if key in table:
        errors.raise_error(errors.ERR_BUFFER, f"{call}: a buffer is already attached")
    if buf is None or buf is BUFFER_AUTOMATIC:
        table[key] = _Attached(BUFFER_AUTOMATIC, None)
        return
    mem, _ = msgspec.parse_buffer(buf, readonly=False)
    table[key] = _Attached(buf, mem.nbytes)


def _flush(att: _Attached | None) -> None:
    if att is None:
        return
    while att.in_use():
        r = att.pending[0][0]
        flow = getattr(r, "flow", None)
        if flow is not None and flow.state == 0:
            p2p.wait_transfer(r, "MPI_Buffer_detach: waiting for buffered messages to be sent")
        else:
            att.pending.pop(0)  # never matched: MPICH would have sent it eagerly


def _detach(key: Any) -> Any:
    att = _buffers().pop(key, None)
    if att is None:
        return None
    _flush(att)
    return att.obj


def _bsend_buffer(comm: Any) -> _Attached | None:
    table = _buffers()
    att = table.get(("comm", id(comm)))
    if att is None:
        att = table.get(("session", id(getattr(comm, "session", None)))) if getattr(comm, "session", None) else None
    if att is None:
        att = table.get(None)
    return att


@mpicall
def Attach_buffer(buf: Any) -> None:
    _attach(None, buf, "MPI_Buffer_attach")


@mpicall
def Detach_buffer() -> Any:
    return _detach(None)


@mpicall
def Flush_buffer() -> None:
    _flush(_buffers().get(None))


@mpicall
def Iflush_buffer() -> Request:
    _flush(_buffers().get(None))
    return Request._wrap(p2p.completed_null(proc(), "MPI_Buffer_iflush", p2p.NULL_KIND))


# -- mpi4py's per-communicator lock table (lowercase calls take a lock per operation) ----------
_LOCK_KEY = "smpy.commlock"


def _lock_table(impl: Any) -> dict:
    attrs = proc().attrs
    tables = attrs.get(_LOCK_KEY)
    if tables is None:
        tables = attrs[_LOCK_KEY] = weakref.WeakKeyDictionary()
    table = tables.get(impl)
    if table is None:
        table = tables[impl] = {}
    return table


def comm_lock(comm: Any, key: Any) -> Any:
    """mpi4py's ``PyMPI_Lock(comm, key)``: the lock of ``key`` in ``comm``'s table (the one
    ``MPI._comm_lock`` serves, when smpy.mpi.session provides it)."""
    session = sys.modules.get("smpy.mpi.session")
    shared = getattr(session, "_comm_lock", None)
    if shared is not None and shared is not _comm_lock:
        return shared(comm, key)
    table = _lock_table(comm._impl)
    lock = table.get(key)
    if lock is None:
        lock = table[key] = threading.Lock()
    return lock


def _comm_lock(comm: Any, key: Any = None) -> Any:
    table = _lock_table(comm._impl)
    lock = table.get(key)
    if lock is None:
        lock = table[key] = threading.Lock()
    return lock


def _comm_lock_table(comm: Any) -> dict:
    return _lock_table(comm._impl)


def recv_obarg(comm: Any, buf: Any, source: int, tag: int, status: Any) -> Any:
    """``comm.recv(buf, ...)``: deprecated (UserWarning); the message must fit in ``buf``
    (a writable buffer or a byte count)."""
    warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=3)
    impl = comm._impl
    p2p.check_source(impl, source, "MPI_Recv")
    p2p.check_recv_tag(tag, "MPI_Recv")
    if source != PROC_NULL:
        cap = operator.index(buf) if _integral(buf) else msgspec.parse_buffer(buf, readonly=False)[0].nbytes
    req = p2p.irecv(proc(), impl, P2P, source, tag, None, "MPI_Recv")
    p2p.wait(proc(), req)
    if source != PROC_NULL and req.nbytes > cap:
        errors.raise_error(errors.ERR_TRUNCATE, f"MPI_Recv: message truncated ({req.nbytes} bytes received, "
                           f"buffer holds {cap})")
    return Request._wrap(req, True)._complete(status)


def _integral(obj: Any) -> bool:
    try:
        operator.index(obj)
    except TypeError:
        return False
    return True


# -- MPI_Alltoallw message specs ------------------------------------------------------------------
class _WSpec:
    """``[buf, (counts, displs), datatypes]``: block i is counts[i] elements of datatypes[i]
    at byte displacement displs[i]."""

    __slots__ = ("mem", "counts", "displs", "types", "bottom")

    def __init__(self, mem: memoryview, counts: list[int], displs: list[int], types: list[Any],
                 bottom: bool = False) -> None:
        self.mem, self.counts, self.displs, self.types = mem, counts, displs, types
        self.bottom = bottom

    def block(self, i: int) -> tuple[memoryview, int]:
        """Memory and byte offset of block i; with ``MPI.BOTTOM`` the displacements (and the
        datatypes' bounds) are absolute addresses, as in C."""
        if not self.bottom:
            return self.mem, self.displs[i]
        dt, count = self.types[i], self.counts[i]
        lo = self.displs[i] + dt.true_lb
        length = dt.span(count) - dt.true_lb
        if count <= 0 or length <= 0:
            return memoryview(bytearray()), 0
        return memoryview((ctypes.c_char * length).from_address(lo)).cast("B"), -dt.true_lb

    def pack(self, i: int) -> bytes:
        mem, offset = self.block(i)
        return self.types[i].pack(mem, offset, self.counts[i])


def _int_seq(obj: Any, n: int, what: str) -> list[int]:
    if isinstance(obj, int):
        return [obj] * n
    seq = [int(x) for x in obj]
    if len(seq) != n:
        raise ValueError(f"expecting {n} items, got {len(seq)}")
    return seq


def _parse_w(msg: Any, n: int, readonly: bool) -> _WSpec:
    """mpi4py's ``message_vector_w``: 2 to 4 items, displacements in bytes."""
    items = len(msg)
    if items == 2:
        o_buf, o_types = msg
        o_counts = o_displs = None
    elif items == 3:
        o_buf, (o_counts, o_displs), o_types = msg
    elif items == 4:
        o_buf, o_counts, o_displs, o_types = msg
    else:
        raise ValueError("message: expecting 2 to 4 items")
    if o_buf is msgspec.BOTTOM:
        if o_counts is None:
            raise ValueError("message: BOTTOM requires counts")
        if o_displs is None:
            raise ValueError("message: BOTTOM requires displs")
        mem = memoryview(bytearray())
    else:
        mem, _ = msgspec.parse_buffer(o_buf, readonly)
    if o_counts is None and o_displs is None:
        counts, displs = [1] * n, [0] * n
    else:
        counts, displs = _int_seq(o_counts, n, "counts"), _int_seq(o_displs, n, "displs")
    if isinstance(o_types, (list, tuple)):
        if len(o_types) != n:
            raise ValueError(f"expecting {n} items, got {len(o_types)}")
        types = [msgspec.as_datatype(t) for t in o_types]
    else:
        types = [msgspec.as_datatype(o_types)] * n
    return _WSpec(mem, counts, displs, types, o_buf is msgspec.BOTTOM)


def _alltoallw(comm: Any, sendbuf: Any, recvbuf: Any, nb: bool) -> Any:
    impl = comm._impl
    size = impl.size
    call = "MPI_Ialltoallw" if nb else "MPI_Alltoallw"
    rw = _parse_w(recvbuf, size, False)
    sw = rw if msgspec.is_in_place(sendbuf) else _parse_w(sendbuf, size, True)
    sblocks = [sw.pack(j) for j in range(size)]

    def unpacker(i: int) -> Callable[[bytes], None]:
        def store(data: bytes) -> None:
            dt = rw.types[i]
            cap = rw.counts[i] * dt.size
            if len(data) > cap:
                errors.raise_error(errors.ERR_TRUNCATE, f"{call}: block {i} has {len(data)} bytes, room for {cap}")
            if data and dt.size:
                mem, offset = rw.block(i)
                dt.unpack(data, mem, offset, len(data) // dt.size)
        return store

    return bcoll.alltoallw(proc(), impl, sblocks, [unpacker(i) for i in range(size)], nb=nb)


def _in_place(buf: Any) -> Any:
    return None if msgspec.is_in_place(buf) else msgspec.parse_send(buf)


def reduce_scatter_counts(pr: Any, impl: Any, sspec: Any, rspec: Any, recvcounts: Any) -> list[int]:
    """mpi4py's ``for_reduce_scatter``: the receive counts (allgathered from each rank's receive
    count when None and not in place) and its checks of the counts and datatypes."""
    from smpy.colls.basic import allgather as allgather_raw

    size = impl.size
    if recvcounts is None and sspec is not None:  # MPI_Allgather of MPI_COUNTs first
        counts = [int(c) for (c,) in allgather_raw(pr, impl, (rspec.count,), 8, "MPI_Allgather")]
    else:
        counts = _int_seq(recvcounts, size, "recvcounts")
    total = sum(counts)
    if sspec is not None:
        if sspec.datatype is not rspec.datatype:
            raise ValueError("mismatch in send and receive MPI datatypes")
        if sspec.count != total:
            raise ValueError(f"mismatch in send count {sspec.count} and sum(counts) {total}")
        me = impl.rank_of[pr.rank]
        if rspec.count != counts[me]:
            raise ValueError(f"mismatch in receive count {rspec.count} and counts[{me}] "
                             f"{counts[me]}")
    elif rspec.count != total:
        raise ValueError(f"mismatch in receive count {rspec.count} and sum(counts) {total}")
    return counts


class CommPersistMixin:
    __slots__ = ()

    # -- buffered mode, per communicator ---------------------------------------------------
    @mpicall
    def Attach_buffer(self, buf: Any) -> None:
        _attach(("comm", id(self._impl)), buf, "MPI_Comm_attach_buffer")  # type: ignore[attr-defined]

    @mpicall
    def Detach_buffer(self) -> Any:
        return _detach(("comm", id(self._impl)))  # type: ignore[attr-defined]

    @mpicall
    def Flush_buffer(self) -> None:
        _flush(_buffers().get(("comm", id(self._impl))))  # type: ignore[attr-defined]

    @mpicall
    def Iflush_buffer(self) -> Request:
        _flush(_buffers().get(("comm", id(self._impl))))  # type: ignore[attr-defined]
        return Request._wrap(p2p.completed_null(proc(), "MPI_Comm_iflush_buffer", p2p.NULL_KIND))

    def _buffered(self, req: p2p.Request, nbytes: int, dest: int, call: str) -> p2p.Request:
        """Account a buffered send in the attached buffer; it completes at once."""
        if dest == PROC_NULL:
            return req
        att = _bsend_buffer(self._impl)  # type: ignore[attr-defined]
        if req.state == 0:
            req.detached = True  # type: ignore[attr-defined]
            req._finish()
        if att is not None:
            att.pending.append((req, nbytes + BSEND_OVERHEAD))
        return req

    def _bcheck(self, nbytes: int, dest: int, call: str) -> None:
        if dest == PROC_NULL:
            return
        att = _bsend_buffer(self._impl)  # type: ignore[attr-defined]
        total = 0 if att is None else att.size
        if total is None:
            return
        if nbytes + BSEND_OVERHEAD > total - (att.in_use() if att is not None else 0):
            errors.raise_error(errors.ERR_BUFFER, f"{call}: Insufficient space in Bsend buffer; "
                               f"requested {nbytes}; total buffer size is {total}")

    def _bpost(self, buf: Any, dest: int, tag: int, call: str, blocking: bool) -> p2p.Request:
        impl = self._impl  # type: ignore[attr-defined]
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(tag, call)
        spec = msgspec.parse_send(buf) if dest != PROC_NULL else msgspec.null_spec()
        self._bcheck(spec.nbytes, dest, call)
        # copied now, as into the attached buffer: the send completes at once
        req = p2p.isend(proc(), impl, P2P, pack_message(spec, True), spec.nbytes, dest, tag, call, blocking=blocking)
        return self._buffered(req, spec.nbytes, dest, call)

    @mpicall
    def Bsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        p2p.wait(proc(), self._bpost(buf, dest, tag, "MPI_Bsend", True))

    @mpicall
    def Ibsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return Request._wrap(self._bpost(buf, dest, tag, "MPI_Ibsend", False))

    def _obpost(self, obj: Any, dest: int, tag: int, call: str, blocking: bool) -> p2p.Request:
        impl = self._impl  # type: ignore[attr-defined]
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(tag, call)
        data = pickle.dumps(obj)
        self._bcheck(len(data), dest, call)
        req = p2p.isend(proc(), impl, P2P, data, len(data), dest, tag, call, blocking=blocking)
        return self._buffered(req, len(data), dest, call)

    @mpicall
    def bsend(self, obj: Any, dest: int, tag: int = 0) -> None:
        p2p.wait(proc(), self._obpost(obj, dest, tag, "MPI_Bsend", True))

    @mpicall
    def ibsend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return Request._wrap(self._obpost(obj, dest, tag, "MPI_Ibsend", False), True)

    # -- ready mode (MPICH sends it as a standard-mode message) -----------------------------
    @mpicall
    def Rsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._send(buf, dest, tag, "MPI_Rsend", False)  # type: ignore[attr-defined]

    @mpicall
    def Irsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._isend(buf, dest, tag, "MPI_Irsend", False)  # type: ignore[attr-defined]

    # -- combined send-receive, non-blocking --------------------------------------------------
    @mpicall
    def Isendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,
                  source: int = ANY_SOURCE, recvtag: int = ANY_TAG) -> Request:
        r = self._irecv(recvbuf, source, recvtag, "MPI_Isendrecv")  # type: ignore[attr-defined]
        s = self._isend(sendbuf, dest, sendtag, "MPI_Isendrecv", False)  # type: ignore[attr-defined]
        return Request._wrap(_join(s._impl, r, "MPI_Isendrecv"))

    @mpicall
    def Isendrecv_replace(self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE,
                          recvtag: int = ANY_TAG) -> Request:
        s = self._isend(buf, dest, sendtag, "MPI_Isendrecv_replace", False, True)  # type: ignore[attr-defined]
        r = self._irecv(buf, source, recvtag, "MPI_Isendrecv_replace")  # type: ignore[attr-defined]
        return Request._wrap(_join(s._impl, r, "MPI_Isendrecv_replace"))

    # -- persistent point-to-point ----------------------------------------------------------
    def _psend(self, buf: Any, dest: int, tag: int, call: str, sync: bool = False,
               buffered: bool = False) -> Prequest:
        impl = self._impl  # type: ignore[attr-defined]
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(tag, call)
        spec = msgspec.parse_send(buf) if dest != PROC_NULL else msgspec.null_spec()
        pr = proc()

        def starter() -> p2p.Request:
            if buffered:
                self._bcheck(spec.nbytes, dest, call)
            req = p2p.isend(pr, impl, P2P, pack_message(spec, buffered), spec.nbytes, dest, tag, call, sync)
            return self._buffered(req, spec.nbytes, dest, call) if buffered else req

        return Prequest._wrap(PersistentRequest(pr, p2p.SEND, impl, call, starter, dest, tag))  # type: ignore[return-value]

    @mpicall
    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return self._psend(buf, dest, tag, "MPI_Send_init")

    @mpicall
    def Ssend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return self._psend(buf, dest, tag, "MPI_Ssend_init", sync=True)

    @mpicall
    def Bsend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return self._psend(buf, dest, tag, "MPI_Bsend_init", buffered=True)

    @mpicall
    def Rsend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return self._psend(buf, dest, tag, "MPI_Rsend_init")

    @mpicall
    def Recv_init(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
        impl = self._impl  # type: ignore[attr-defined]
        call = "MPI_Recv_init"
        p2p.check_source(impl, source, call)
        p2p.check_recv_tag(tag, call)
        spec = msgspec.parse_recv(buf) if source != PROC_NULL else None
        pr = proc()

        def starter() -> p2p.Request:
            req = p2p.irecv(pr, impl, P2P, source, tag, spec, call)
            if source == PROC_NULL:  # MPICH: an empty status
                req.source = ANY_SOURCE
            return req

        return Prequest._wrap(PersistentRequest(pr, p2p.RECV, impl, call, starter, source, tag))  # type: ignore[return-value]

    # -- partitioned point-to-point -------------------------------------------------------------
    @mpicall
    def Psend_init(self, buf: Any, partitions: int, dest: int, tag: int = 0, info: Any = None) -> Prequest:
        impl = self._impl  # type: ignore[attr-defined]
        call = "MPI_Psend_init"
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(tag, call)
        _check_partitions(partitions, call)
        spec = msgspec.parse_send(buf) if dest != PROC_NULL else msgspec.null_spec()
        pr = proc()

        def sender() -> p2p.Request:
            return p2p.isend(pr, impl, PARTITION_CHANNEL, pack_message(spec), spec.nbytes, dest, partition_tag(tag), call)

        req = PartitionedRequest(pr, p2p.SEND, impl, call, int(partitions), None, sender, dest, tag)
        return Prequest._wrap(req)  # type: ignore[return-value]

    @mpicall
    def Precv_init(self, buf: Any, partitions: int, source: int = ANY_SOURCE, tag: int = ANY_TAG,
                   info: Any = None) -> Prequest:
        impl = self._impl  # type: ignore[attr-defined]
        call = "MPI_Precv_init"
        p2p.check_dest(impl, source, call)  # no wildcards in partitioned communication
        p2p.check_send_tag(tag, call)
        _check_partitions(partitions, call)
        spec = msgspec.parse_recv(buf) if source != PROC_NULL else None
        pr = proc()

        def starter() -> p2p.Request:
            return p2p.irecv(pr, impl, PARTITION_CHANNEL, source, partition_tag(tag), spec, call)

        req = PartitionedRequest(pr, p2p.RECV, impl, call, int(partitions), starter, None, source, tag)
        return Prequest._wrap(req)  # type: ignore[return-value]

    # -- blocking and non-blocking collectives not in comm.py ----------------------------------
    @mpicall
    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        impl = self._impl  # type: ignore[attr-defined]
        in_place = msgspec.is_in_place(sendbuf)
        rspec = msgspec.parse_recv(recvbuf, impl.size if in_place else 1)
        sspec = None if in_place else msgspec.parse_send(sendbuf, impl.size)
        bcoll.reduce_scatter(proc(), impl, sspec, rspec, [rspec.count] * impl.size, op._impl, block=True)

    @mpicall
    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM) -> None:
        impl, pr = self._impl, proc()  # type: ignore[attr-defined]
        rspec = msgspec.parse_recv(recvbuf)
        sspec = _in_place(sendbuf)
        counts = reduce_scatter_counts(pr, impl, sspec, rspec, recvcounts)
        bcoll.reduce_scatter(pr, impl, sspec, rspec, counts, op._impl)

    @mpicall
    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        _alltoallw(self, sendbuf, recvbuf, False)

    @mpicall
    def Ialltoallw(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(_alltoallw(self, sendbuf, recvbuf, True))

    # -- persistent collectives: each Start posts the non-blocking collective -------------------
    def _pcoll(self, call: str, start: Callable[[], Request], root: int | None = None) -> Prequest:
        impl = self._impl  # type: ignore[attr-defined]
        if root is not None:
            p2p.check_root(impl, root, call)
        req = PersistentRequest(proc(), p2p.NULL_KIND, impl, call, lambda: start()._impl)
        return Prequest._wrap(req)  # type: ignore[return-value]

    @mpicall
    def Barrier_init(self, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Barrier_init", lambda: self.Ibarrier())  # type: ignore[attr-defined]

    @mpicall
    def Bcast_init(self, buf: Any, root: int = 0, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Bcast_init", lambda: self.Ibcast(buf, root), root)  # type: ignore[attr-defined]

    @mpicall
    def Gather_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Gather_init", lambda: self.Igather(sendbuf, recvbuf, root), root)  # type: ignore[attr-defined]

    @mpicall
    def Gatherv_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Gatherv_init", lambda: self.Igatherv(sendbuf, recvbuf, root), root)  # type: ignore[attr-defined]

    @mpicall
    def Scatter_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Scatter_init", lambda: self.Iscatter(sendbuf, recvbuf, root), root)  # type: ignore[attr-defined]

    @mpicall
    def Scatterv_init(self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Scatterv_init", lambda: self.Iscatterv(sendbuf, recvbuf, root), root)  # type: ignore[attr-defined]

    @mpicall
    def Allgather_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Allgather_init", lambda: self.Iallgather(sendbuf, recvbuf))  # type: ignore[attr-defined]

    @mpicall
    def Allgatherv_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Allgatherv_init", lambda: self.Iallgatherv(sendbuf, recvbuf))  # type: ignore[attr-defined]

    @mpicall
    def Alltoall_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Alltoall_init", lambda: self.Ialltoall(sendbuf, recvbuf))  # type: ignore[attr-defined]

    @mpicall
    def Alltoallv_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Alltoallv_init", lambda: self.Ialltoallv(sendbuf, recvbuf))  # type: ignore[attr-defined]

    @mpicall
    def Alltoallw_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Alltoallw_init", lambda: self.Ialltoallw(sendbuf, recvbuf))

    @mpicall
    def Reduce_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Reduce_init", lambda: self.Ireduce(sendbuf, recvbuf, op, root), root)  # type: ignore[attr-defined]

    @mpicall
    def Allreduce_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Allreduce_init", lambda: self.Iallreduce(sendbuf, recvbuf, op))  # type: ignore[attr-defined]

    @mpicall
    def Reduce_scatter_block_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Reduce_scatter_block_init",
                           lambda: self.Ireduce_scatter_block(sendbuf, recvbuf, op))  # type: ignore[attr-defined]

    @mpicall
    def Reduce_scatter_init(self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM,
                            info: Any = None) -> Prequest:
        return self._pcoll("MPI_Reduce_scatter_init",
                           lambda: self.Ireduce_scatter(sendbuf, recvbuf, recvcounts, op))  # type: ignore[attr-defined]

    @mpicall
    def Scan_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Scan_init", lambda: self.Iscan(sendbuf, recvbuf, op))  # type: ignore[attr-defined]

    @mpicall
    def Exscan_init(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Any = None) -> Prequest:
        return self._pcoll("MPI_Exscan_init", lambda: self.Iexscan(sendbuf, recvbuf, op))  # type: ignore[attr-defined]

    @mpicall
    def Neighbor_allgather_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        start = self.Ineighbor_allgather  # type: ignore[attr-defined]
        return self._pcoll("MPI_Neighbor_allgather_init", lambda: start(sendbuf, recvbuf))

    @mpicall
    def Neighbor_allgatherv_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        start = self.Ineighbor_allgatherv  # type: ignore[attr-defined]
        return self._pcoll("MPI_Neighbor_allgatherv_init", lambda: start(sendbuf, recvbuf))

    @mpicall
    def Neighbor_alltoall_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        start = self.Ineighbor_alltoall  # type: ignore[attr-defined]
        return self._pcoll("MPI_Neighbor_alltoall_init", lambda: start(sendbuf, recvbuf))

    @mpicall
    def Neighbor_alltoallv_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        start = self.Ineighbor_alltoallv  # type: ignore[attr-defined]
        return self._pcoll("MPI_Neighbor_alltoallv_init", lambda: start(sendbuf, recvbuf))

    @mpicall
    def Neighbor_alltoallw_init(self, sendbuf: Any, recvbuf: Any, info: Any = None) -> Prequest:
        start = self.Ineighbor_alltoallw  # type: ignore[attr-defined]
        return self._pcoll("MPI_Neighbor_alltoallw_init", lambda: start(sendbuf, recvbuf))


def _check_partitions(partitions: int, call: str) -> None:
    if int(partitions) < 1:
        errors.raise_error(errors.ERR_ARG, f"{call}: invalid number of partitions {partitions} (must be positive)")


def _join(send: p2p.Request, recv: p2p.Request, call: str) -> p2p.Request:
    """One request completing when both halves of a send-receive have (status: the receive's)."""
    from smpy.runtime.prequest import join
    return join(proc(), send, recv, call)
