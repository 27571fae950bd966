"""``MPI.Comm`` / ``MPI.Intracomm``: each method parses its arguments, makes one runtime or
collective call, and wraps the result."""

from __future__ import annotations

from typing import Any

from smpy.colls import buffers as bcoll
from smpy.colls import objects as ocoll
from smpy.colls.basic import allgather_blocks as _allgather_blocks
from smpy.colls.basic import barrier as _barrier
from smpy.colls.basic import pack_ints as _pack_ints
from smpy.colls.basic import unpack_ints as _unpack_ints
from smpy.kernel import accel as _accel
from smpy.kernel import actors as _actors
from smpy.mpi import _call, msgspec, registry
from smpy.mpi import errhandler as _errhandler
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import coerce_ints
from smpy.mpi.comm_inter import CommFtMixin, IntraInterMixin
from smpy.mpi.comm_mgmt import Comm_create_from_group, CommMgmtMixin
from smpy.mpi.comm_persist import CommPersistMixin, comm_lock, recv_obarg, reduce_scatter_counts
from smpy.mpi.comm_topo import IntraTopoMixin
from smpy.mpi.environment import abort
from smpy.mpi.group import Group
from smpy.mpi.message import Message
from smpy.mpi.msgpickle import pickle
from smpy.mpi.objmodel import copy_arg
from smpy.mpi.op import SUM, Op
from smpy.mpi.request import Request
from smpy.mpi.spawn import DisconnectMixin, DpmMixin, SpawnMixin
from smpy.mpi.status import Status
from smpy.runtime import attributes as _attributes
from smpy.runtime import errors, p2p
from smpy.runtime.comm import CommImpl
from smpy.runtime.constants import (
    ANY_SOURCE,
    ANY_TAG,
    COLL,
    CONGRUENT,
    IDENT,
    P2P,
    PROC_NULL,
    SIMILAR,
    TAG_UB,
    UNDEFINED,
    UNEQUAL,
)
from smpy.runtime.group import GroupImpl
from smpy.runtime.inter import compare as inter_compare
from smpy.runtime.packing import pack_message
from smpy.runtime.world import Process, current


def _send_spec(buf: Any) -> Any:
    return msgspec.parse_send(buf)


def _in_place(buf: Any) -> Any:
    """Send spec, or None for MPI.IN_PLACE (mpi4py also takes None as IN_PLACE)."""
    return None if msgspec.is_in_place(buf) else msgspec.parse_send(buf)


def _fill(status: Status | None, req: p2p.Request) -> None:
    if status is not None:
        status._fill(req.source, req.tag, req.error, req.nbytes, req.cancelled)


class Comm(CommMgmtMixin, CommPersistMixin, DisconnectMixin, CommFtMixin):
    """A communicator handle (one per rank; the runtime object is shared)."""

    __slots__ = ("__impl", "__weakref__")

    def __new__(cls, comm: Comm | None = None) -> Comm:
        # mpi4py initialises in __new__ (subclasses call super().__new__(cls, other))
        copy_arg(comm, Comm, "comm")
        self = object.__new__(cls)
        impl = self.__impl = None if comm is None else comm._raw()
        if getattr(impl, "remote", None) is not None and issubclass(cls, Intracomm):
            raise TypeError("expecting an intracommunicator")
        return self

    def __init__(self, comm: Comm | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, impl: CommImpl | None) -> Comm:
        c = cls.__new__(cls)
        c.__impl = impl
        return c

    @property
    def _impl(self) -> CommImpl:
        impl = self.__impl
        if impl is None:
            errors.raise_error(errors.ERR_COMM, "invalid communicator (MPI_COMM_NULL)")
        return impl

    def _raw(self) -> CommImpl | None:
        return self.__impl

    def _set_raw(self, impl: CommImpl | None) -> None:
        self.__impl = impl

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        return self._raw() is other._raw()

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._raw() is not None

    # -- basic information ---------------------------------------------------------------
    def Get_rank(self) -> int:
        return self._impl.rank_of[current().rank]

    def Get_size(self) -> int:
        return self._impl.size

    @property
    def rank(self) -> int:
        return self.Get_rank()

    @property
    def size(self) -> int:
        return self.Get_size()

    def Get_name(self) -> str:
        raw = self._raw()
        return "MPI_COMM_NULL" if raw is None else raw.name

    def Set_name(self, name: str) -> None:
        self._impl.name = name

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    def Is_inter(self) -> bool:
        self._impl  # noqa: B018 - COMM_NULL raises ERR_COMM
        return False

    def Is_intra(self) -> bool:
        self._impl  # noqa: B018
        return True

    @property
    def is_inter(self) -> bool:
        return self.Is_inter()

    @property
    def is_intra(self) -> bool:
        return self.Is_intra()

    def Get_topology(self) -> int:
        topo = self._impl.topology
        return UNDEFINED if topo is None else topo.kind

    @property
    def is_topo(self) -> bool:
        return self.Get_topology() != UNDEFINED

    @property
    def topology(self) -> int:
        return self.Get_topology()

    def Compare(self, comm: Comm) -> int:
        a, b = self._impl, comm._impl
        if a is b:
            return IDENT
        if a.remote is not None or b.remote is not None:
            return inter_compare(a, b)
        if a.group == b.group:
            return CONGRUENT
        return SIMILAR if sorted(a.group) == sorted(b.group) else UNEQUAL

    @mpicall
    def Abort(self, errorcode: int = 0) -> None:
        abort(errorcode)

    # -- point-to-point, buffers -------------------------------------------------------
    @mpicall
    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._send(buf, dest, tag, "MPI_Send", False)

    @mpicall
    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._send(buf, dest, tag, "MPI_Ssend", True)

    def _send(self, buf: Any, dest: int, tag: int, call: str, sync: bool) -> None:
        impl = self._impl
        pr = _actors._current.data  # type: ignore[union-attr]  # the rank (@mpicall checked it)
        if not 0 <= dest < impl.rsize:  # the checks' conditions inline: they pass on nearly every call
            p2p.check_dest(impl, dest, call)
        if not 0 <= tag <= TAG_UB:
            p2p.check_send_tag(tag, call)
        spec = msgspec.parse_send(buf) if dest != PROC_NULL else msgspec.null_spec()
        req = p2p.isend(pr, impl, P2P, pack_message(spec), spec.count * spec.datatype.size, dest, tag, call,
                        sync, blocking=True)
        p2p.wait(pr, req)

    def _isend(self, buf: Any, dest: int, tag: int, call: str, sync: bool, owned: bool = False) -> Request:
        """``owned``: copy the message now (its buffer receives before the send completes)."""
        impl = self._impl
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(tag, call)
        spec = msgspec.parse_send(buf) if dest != PROC_NULL else msgspec.null_spec()
        return Request._wrap(p2p.isend(proc(), impl, P2P, pack_message(spec, owned), spec.nbytes, dest, tag, call, sync))

    @mpicall
    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._isend(buf, dest, tag, "MPI_Isend", False)

    @mpicall
    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._isend(buf, dest, tag, "MPI_Issend", True)

    def _irecv(self, buf: Any, source: int, tag: int, call: str) -> p2p.Request:
        impl = self._impl
        if not 0 <= source < impl.rsize:  # the checks' conditions inline (as _send's)
            p2p.check_source(impl, source, call)
        if not 0 <= tag <= TAG_UB:
            p2p.check_recv_tag(tag, call)
        spec = msgspec.parse_recv(buf) if source != PROC_NULL else None
        return p2p.irecv(_actors._current.data, impl, P2P, source, tag, spec, call)  # type: ignore[union-attr]

    @mpicall
    def Recv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> None:
        req = p2p.wait(_actors._current.data, self._irecv(buf, source, tag, "MPI_Recv"))  # type: ignore[union-attr]
        if status is not None or req.error:  # fill the status, raise on truncation
            Request._wrap(req)._complete(status)

    @mpicall
    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return Request._wrap(self._irecv(buf, source, tag, "MPI_Irecv"))

    @mpicall
    def Sendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,
                 source: int = ANY_SOURCE, recvtag: int = ANY_TAG, status: Status | None = None) -> None:
        impl, call = self._impl, "MPI_Sendrecv"
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(sendtag, call)
        # both messages are parsed before anything is posted (a bad receive spec must not
        # leave a send behind, nor a bad send spec a receive)
        sspec = msgspec.parse_send(sendbuf) if dest != PROC_NULL else msgspec.null_spec()
        p = proc()
        ti = _ti_begin(p)
        try:
            r = self._irecv(recvbuf, source, recvtag, call)
            s = p2p.isend(p, impl, P2P, pack_message(sspec), sspec.nbytes, dest, sendtag, call, False)
            Request._wrap(s).Wait()
            Request._wrap(r).Wait(status)
        finally:
            if ti is not None:
                ti.end_sendrecv(p.rank)

    @mpicall
    def Sendrecv_replace(self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE,
                         recvtag: int = ANY_TAG, status: Status | None = None) -> None:
        p = proc()
        ti = _ti_begin(p)
        try:
            s = self._isend(buf, dest, sendtag, "MPI_Sendrecv_replace", False, True)  # packs (copies) first
            r = self._irecv(buf, source, recvtag, "MPI_Sendrecv_replace")
            s.Wait()
            Request._wrap(r).Wait(status)
        finally:
            if ti is not None:
                ti.end_sendrecv(p.rank)

    @mpicall
    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:
        impl = self._impl
        p2p.check_source(impl, source, "MPI_Probe")
        s = p2p.probe(proc(), impl, P2P, source, tag)
        _fill_probe(status, s)
        return True

    @mpicall
    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:
        impl = self._impl
        p2p.check_source(impl, source, "MPI_Iprobe")
        pr = proc()
        if source == -1:  # PROC_NULL: always true
            _fill_probe(status, None)
            return True
        s = p2p.iprobe(pr, impl, P2P, source, tag)
        if s is not None:
            _fill_probe(status, s)
        return s is not None

    # -- point-to-point, objects -------------------------------------------------------
    def _osend(self, obj: Any, dest: int, tag: int, call: str, sync: bool, blocking: bool = False) -> p2p.Request:
        impl = self._impl
        p2p.check_dest(impl, dest, call)
        p2p.check_send_tag(tag, call)
        data = pickle.dumps(obj)
        return p2p.isend(proc(), impl, P2P, data, len(data), dest, tag, call, sync, blocking)

    @mpicall
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        p2p.wait(proc(), self._osend(obj, dest, tag, "MPI_Send", False, True))

    @mpicall
    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        p2p.wait(proc(), self._osend(obj, dest, tag, "MPI_Ssend", True, True))

    @mpicall
    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return Request._wrap(self._osend(obj, dest, tag, "MPI_Isend", False), True)

    @mpicall
    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return Request._wrap(self._osend(obj, dest, tag, "MPI_Issend", True), True)

    def _orecv(self, source: int, tag: int, call: str) -> p2p.Request:
        impl = self._impl
        p2p.check_source(impl, source, call)
        p2p.check_recv_tag(tag, call)
        return p2p.irecv(proc(), impl, P2P, source, tag, None, call)

    @mpicall
    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG,
             status: Status | None = None) -> Any:
        if buf is not None:
            return recv_obarg(self, buf, source, tag, status)
        req = self._orecv(source, tag, "MPI_Recv")
        p2p.wait(proc(), req)
        return Request._wrap(req, True)._complete(status)

    @mpicall
    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return Request._wrap(self._orecv(source, tag, "MPI_Irecv"), True)

    @mpicall
    def sendrecv(self, sendobj: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,
                 source: int = ANY_SOURCE, recvtag: int = ANY_TAG, status: Status | None = None) -> Any:
        p = proc()
        ti = _ti_begin(p)
        try:
            r = self._orecv(source, recvtag, "MPI_Sendrecv")
            p2p.wait(p, self._osend(sendobj, dest, sendtag, "MPI_Sendrecv", False))
            p2p.wait(p, r)
        finally:
            if ti is not None:
                ti.end_sendrecv(p.rank)
        return Request._wrap(r, True)._complete(status)

    @mpicall
    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:
        return self.Probe(source, tag, status)

    @mpicall
    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:
        return self.Iprobe(source, tag, status)

    # -- collectives, buffers ------------------------------------------------------------
    @mpicall
    def Barrier(self) -> None:
        _barrier(proc(), self._impl)

    @mpicall
    def barrier(self) -> None:
        _barrier(proc(), self._impl)

    @mpicall
    def Bcast(self, buf: Any, root: int = 0) -> None:
        impl = self._impl
        p2p.check_root(impl, root, "MPI_Bcast")
        pr = proc()
        spec = msgspec.parse_send(buf) if impl.rank_of[pr.rank] == root else msgspec.parse_recv(buf)
        bcoll.bcast(pr, impl, spec, root)

    @mpicall
    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        impl = self._impl
        p2p.check_root(impl, root, "MPI_Reduce")
        pr = proc()
        is_root = impl.rank_of[pr.rank] == root
        sspec, rspec = msgspec.parse_reduce(sendbuf, recvbuf) if is_root else (msgspec.parse_send(sendbuf), None)
        bcoll.reduce(pr, impl, sspec, rspec, op._impl, root)

    @mpicall
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        bcoll.allreduce(proc(), self._impl, *msgspec.parse_reduce(sendbuf, recvbuf), op._impl)

    @mpicall
    def Scan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        bcoll.scan(proc(), self._impl, *msgspec.parse_reduce(sendbuf, recvbuf), op._impl, False)

    @mpicall
    def Exscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        bcoll.scan(proc(), self._impl, *msgspec.parse_reduce(sendbuf, recvbuf), op._impl, True)

    @mpicall
    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        impl = self._impl
        p2p.check_root(impl, root, "MPI_Gather")
        pr = proc()
        is_root = impl.rank_of[pr.rank] == root
        bcoll.gather(pr, impl, _in_place(sendbuf) if is_root else msgspec.parse_send(sendbuf),
                     msgspec.parse_cco(recvbuf, impl.size, False) if is_root else None, root)

    @mpicall
    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        impl = self._impl
        p2p.check_root(impl, root, "MPI_Gatherv")
        pr = proc()
        is_root = impl.rank_of[pr.rank] == root
        bcoll.gatherv(pr, impl, _in_place(sendbuf) if is_root else msgspec.parse_send(sendbuf),
                      msgspec.parse_vector(recvbuf, impl.size, False) if is_root else None, root)

    @mpicall
    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        impl = self._impl
        p2p.check_root(impl, root, "MPI_Scatter")
        pr = proc()
        is_root = impl.rank_of[pr.rank] == root
        rspec = None if (is_root and msgspec.is_in_place(recvbuf)) else msgspec.parse_recv(recvbuf)
        bcoll.scatter(pr, impl, msgspec.parse_cco(sendbuf, impl.size, True) if is_root else None, rspec, root)

    @mpicall
    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        impl = self._impl
        p2p.check_root(impl, root, "MPI_Scatterv")
        pr = proc()
        is_root = impl.rank_of[pr.rank] == root
        rspec = None if (is_root and msgspec.is_in_place(recvbuf)) else msgspec.parse_recv(recvbuf)
        bcoll.scatterv(pr, impl, msgspec.parse_vector(sendbuf, impl.size, True) if is_root else None, rspec, root)

    @mpicall
    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        bcoll.allgather(proc(), self._impl, _in_place(sendbuf), msgspec.parse_cco(recvbuf, self._impl.size, False))

    @mpicall
    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        impl = self._impl
        bcoll.allgatherv(proc(), impl, _in_place(sendbuf), msgspec.parse_vector(recvbuf, impl.size, False))

    @mpicall
    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        bcoll.alltoall(proc(), self._impl, *msgspec.parse_alltoall(sendbuf, recvbuf, self._impl.size))

    @mpicall
    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        impl = self._impl
        svec = None if sendbuf is msgspec.IN_PLACE else msgspec.parse_vector(sendbuf, impl.size, True)
        bcoll.alltoallv(proc(), impl, svec, msgspec.parse_vector(recvbuf, impl.size, False))

    # -- collectives, objects ------------------------------------------------------------
    @mpicall
    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        p2p.check_root(self._impl, root, "MPI_Bcast")
        comm_lock(self, "bcast")
        return ocoll.bcast(proc(), self._impl, obj, root, pickle.dumps, pickle.loads)

    @mpicall
    def reduce(self, sendobj: Any, op: Any = SUM, root: int = 0) -> Any:
        p2p.check_root(self._impl, root, "MPI_Reduce")
        return ocoll.reduce(proc(), self._impl, sendobj, op, root, pickle.dumps, pickle.loads, _commutes(op))

    @mpicall
    def allreduce(self, sendobj: Any, op: Any = SUM) -> Any:
        return ocoll.allreduce(proc(), self._impl, sendobj, op, pickle.dumps, pickle.loads, _commutes(op))

    @mpicall
    def scan(self, sendobj: Any, op: Any = SUM) -> Any:
        return ocoll.scan(proc(), self._impl, sendobj, op, pickle.dumps, pickle.loads, False)

    @mpicall
    def exscan(self, sendobj: Any, op: Any = SUM) -> Any:
        return ocoll.scan(proc(), self._impl, sendobj, op, pickle.dumps, pickle.loads, True)

    @mpicall
    def gather(self, sendobj: Any, root: int = 0) -> list | None:
        p2p.check_root(self._impl, root, "MPI_Gather")
        comm_lock(self, "gather")
        return ocoll.gather(proc(), self._impl, sendobj, root, pickle.dumps, pickle.loads)

    @mpicall
    def scatter(self, sendobj: Any, root: int = 0) -> Any:
        p2p.check_root(self._impl, root, "MPI_Scatter")
        comm_lock(self, "scatter")
        return ocoll.scatter(proc(), self._impl, sendobj, root, pickle.dumps, pickle.loads)

    @mpicall
    def allgather(self, sendobj: Any) -> list:
        comm_lock(self, "allgather")
        return ocoll.allgather(proc(), self._impl, sendobj, pickle.dumps, pickle.loads)

    @mpicall
    def alltoall(self, sendobj: Any) -> list:
        comm_lock(self, "alltoall")
        return ocoll.alltoall(proc(), self._impl, sendobj, pickle.dumps, pickle.loads)

    # -- communicator management ---------------------------------------------------------
    @mpicall
    def Dup(self, info: Any = None) -> Intracomm:
        impl, pr = self._impl, proc()
        _barrier(pr, impl)  # context-id agreement costs a collective, as in MPICH
        return self._dup(pr, impl, info)

    def _dup(self, pr: Any, impl: CommImpl, info: Any) -> Intracomm:
        """The duplicate, once the members agreed (after a barrier, or with an Ibarrier pending)."""
        new = impl.agree(pr, None, lambda: CommImpl(impl.world, list(impl.group), ""), impl.size)
        cls = type(self)
        if cls in (Comm, _WorldComm, _SelfComm):
            cls = Intracomm
        dup = cls._wrap(new)
        _attributes.copy_all(pr, impl, self, new, "MPI_Comm_dup")
        _errhandler.copy_errhandler(impl, new)
        if info is not None and not getattr(info, "_null", True):
            dup.Set_info(info)
        return dup

    def Clone(self) -> Intracomm:
        return self.Dup()

    @mpicall
    def Split(self, color: int = 0, key: int = 0) -> Intracomm:
        impl, pr = self._impl, proc()
        me = impl.rank_of[pr.rank]
        mine = _pack_ints((color, key, me), 12)
        # MPICH's message pattern: an allgather of (color, key) over the whole communicator;
        # every rank then holds the same list, so the first one to return sorts it into the
        # new groups for all (not each of n ranks its n triples: 9.4 M at 3072 ranks)
        blocks = _allgather_blocks(pr, impl, mine, "MPI_Comm_split")
        groups = impl.agree(pr, "split", lambda: _split_groups(impl, blocks), impl.size)
        if color == UNDEFINED:
            impl.agree(pr, UNDEFINED, lambda: None, groups[UNDEFINED])
            return COMM_NULL  # type: ignore[return-value]
        group = groups[color]
        new = impl.agree(pr, color, lambda: CommImpl(impl.world, group, ""), len(group))
        _errhandler.copy_errhandler(impl, new)
        return Intracomm._wrap(new)

    @mpicall
    def Free(self) -> None:
        impl = self._raw()
        if impl is None:
            errors.raise_error(errors.ERR_COMM, "MPI_Comm_free: Null communicator")
        pr = proc()
        if impl is pr.world.comm_world or impl is pr.comm_self:
            errors.raise_error(errors.ERR_COMM, "MPI_Comm_free: Cannot free permanent communicator")
        try:
            _attributes.delete_all(pr, impl, self, "MPI_Comm_free")
        finally:
            impl.refcount -= 1
            self._set_raw(None)

    def __repr__(self) -> str:
        kind = "Intracomm" if isinstance(self, Intracomm) else "Comm"
        return f"<mpi4py.MPI.{kind} object at {id(self):#x}>"

    def Get_group(self) -> Group:
        return Group._wrap(GroupImpl(self._impl.group))

    @property
    def group(self) -> Group:
        return self.Get_group()

    # -- matched probes ------------------------------------------------------------------
    def _mprobe(self, source: int, tag: int, status: Status | None, blocking: bool, call: str) -> Message | None:
        impl = self._impl
        p2p.check_source(impl, source, call)
        if source == PROC_NULL:
            _fill_probe(status, None)
            return Message._wrap(None)
        s = p2p.take_matched(proc(), impl, P2P, source, tag, blocking, call)
        if s is None:
            return None
        _fill_probe(status, s)
        return Message._wrap(s)

    @mpicall
    def Mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message:
        return self._mprobe(source, tag, status, True, "MPI_Mprobe")

    @mpicall
    def Improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message | None:
        return self._mprobe(source, tag, status, False, "MPI_Improbe")

    mprobe = Mprobe
    improbe = Improbe

    # -- non-blocking collectives: the selected algorithm runs in a helper actor -----------
    @mpicall
    def Ibarrier(self) -> Request:
        return Request._wrap(bcoll.barrier(proc(), self._impl, nb=True))

    @mpicall
    def Ibcast(self, buf: Any, root: int = 0) -> Request:
        impl, pr = self._impl, proc()
        p2p.check_root(impl, root, "MPI_Ibcast")
        spec = msgspec.parse_send(buf) if impl.rank_of[pr.rank] == root else msgspec.parse_recv(buf)
        return Request._wrap(bcoll.bcast(pr, impl, spec, root, nb=True))

    @mpicall
    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> Request:
        impl, pr = self._impl, proc()
        p2p.check_root(impl, root, "MPI_Ireduce")
        is_root = impl.rank_of[pr.rank] == root
        sspec, rspec = msgspec.parse_reduce(sendbuf, recvbuf) if is_root else (msgspec.parse_send(sendbuf), None)
        return Request._wrap(bcoll.reduce(pr, impl, sspec, rspec, op._impl, root, "MPI_Ireduce", nb=True))

    @mpicall
    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return Request._wrap(bcoll.allreduce(proc(), self._impl, *msgspec.parse_reduce(sendbuf, recvbuf),
                                             op._impl, nb=True))

    @mpicall
    def Iscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return Request._wrap(bcoll.scan(proc(), self._impl, *msgspec.parse_reduce(sendbuf, recvbuf),
                                        op._impl, False, nb=True))

    @mpicall
    def Iexscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return Request._wrap(bcoll.scan(proc(), self._impl, *msgspec.parse_reduce(sendbuf, recvbuf),
                                        op._impl, True, nb=True))

    @mpicall
    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        impl, pr = self._impl, proc()
        p2p.check_root(impl, root, "MPI_Igather")
        is_root = impl.rank_of[pr.rank] == root
        return Request._wrap(bcoll.gather(pr, impl, _in_place(sendbuf) if is_root else msgspec.parse_send(sendbuf),
                                          msgspec.parse_cco(recvbuf, impl.size, False) if is_root else None, root, nb=True))

    @mpicall
    def Igatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        impl, pr = self._impl, proc()
        p2p.check_root(impl, root, "MPI_Igatherv")
        is_root = impl.rank_of[pr.rank] == root
        rvec = msgspec.parse_vector(recvbuf, impl.size, False) if is_root else None
        sspec = _in_place(sendbuf) if is_root else msgspec.parse_send(sendbuf)
        return Request._wrap(bcoll.gatherv(pr, impl, sspec, rvec, root, nb=True))

    @mpicall
    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        impl, pr = self._impl, proc()
        p2p.check_root(impl, root, "MPI_Iscatter")
        is_root = impl.rank_of[pr.rank] == root
        rspec = None if (is_root and msgspec.is_in_place(recvbuf)) else msgspec.parse_recv(recvbuf)
        return Request._wrap(bcoll.scatter(pr, impl, msgspec.parse_cco(sendbuf, impl.size, True) if is_root else None, rspec, root,
                                           nb=True))

    @mpicall
    def Iscatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        impl, pr = self._impl, proc()
        p2p.check_root(impl, root, "MPI_Iscatterv")
        is_root = impl.rank_of[pr.rank] == root
        rspec = None if (is_root and msgspec.is_in_place(recvbuf)) else msgspec.parse_recv(recvbuf)
        svec = msgspec.parse_vector(sendbuf, impl.size, True) if is_root else None
        return Request._wrap(bcoll.scatterv(pr, impl, svec, rspec, root, nb=True))

    @mpicall
    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(bcoll.allgather(proc(), self._impl, _in_place(sendbuf), msgspec.parse_cco(recvbuf, self._impl.size, False),
                                             nb=True))

    @mpicall
    def Iallgatherv(self, sendbuf: Any, recvbuf: Any) -> Request:
        impl = self._impl
        rvec = msgspec.parse_vector(recvbuf, impl.size, False)
        return Request._wrap(bcoll.allgatherv(proc(), impl, _in_place(sendbuf), rvec, nb=True))

    @mpicall
    def Ialltoall(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(bcoll.alltoall(proc(), self._impl, *msgspec.parse_alltoall(sendbuf, recvbuf, self._impl.size),
                                            nb=True))

    @mpicall
    def Ialltoallv(self, sendbuf: Any, recvbuf: Any) -> Request:
        impl = self._impl
        svec = None if sendbuf is msgspec.IN_PLACE else msgspec.parse_vector(sendbuf, impl.size, True)
        rvec = msgspec.parse_vector(recvbuf, impl.size, False)
        return Request._wrap(bcoll.alltoallv(proc(), impl, svec, rvec, nb=True))

    @mpicall
    def Ireduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        impl = self._impl
        in_place = msgspec.is_in_place(sendbuf)
        rspec = msgspec.parse_recv(recvbuf, impl.size if in_place else 1)
        sspec = None if in_place else msgspec.parse_send(sendbuf, impl.size)
        return Request._wrap(bcoll.reduce_scatter(proc(), impl, sspec, rspec, [rspec.count] * impl.size, op._impl,
                                                  block=True, nb=True))

    @mpicall
    def Ireduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM) -> Request:
        impl, pr = self._impl, proc()
        rspec = msgspec.parse_recv(recvbuf)
        sspec = _in_place(sendbuf)
        counts = reduce_scatter_counts(pr, impl, sspec, rspec, recvcounts)
        return Request._wrap(bcoll.reduce_scatter(pr, impl, sspec, rspec, counts, op._impl, nb=True))


def _split_groups(impl: CommImpl, blocks: list[bytes]) -> dict:
    """MPI_Comm_split's outcome from the gathered (color, key, rank) triples: each color's
    new group (world ranks ordered by key, then by old rank), and how many ranks gave
    MPI_UNDEFINED."""
    members: dict[int, list[tuple[int, int]]] = {}
    for c, k, r in _unpack_ints(blocks, 3, 12):
        members.setdefault(c, []).append((k, r))
    groups: dict = {c: [impl.group[r] for _, r in sorted(m)] for c, m in members.items()
                    if c != UNDEFINED}
    groups[UNDEFINED] = len(members.get(UNDEFINED, ()))
    return groups


def _commutes(op: Any) -> bool:
    impl = getattr(op, "_impl", None)
    return True if impl is None else impl.commutative


def _fill_probe(status: Status | None, s: p2p.SendRequest | None) -> None:
    if status is None:
        return
    if s is None:
        status._fill(-1, ANY_TAG, 0, 0)
    else:
        status._fill(s.src_local, s.tag, 0, s.nbytes)


@registry.provides("Intracomm")
class Intracomm(Comm, IntraTopoMixin, IntraInterMixin, SpawnMixin, DpmMixin):
    __slots__ = ()

    @classmethod
    def Create_from_group(cls, group: Group, stringtag: str = "org.mpi4py", info: Any = None,
                          errhandler: Any = None) -> Intracomm:
        return Comm_create_from_group(group, stringtag, errhandler, cls)


class _WorldComm(Intracomm):
    """COMM_WORLD: resolves to the running simulation's world communicator."""

    __slots__ = ()

    @property
    def _impl(self) -> CommImpl:
        if self is not COMM_WORLD:  # a copy (type(COMM_WORLD)(COMM_WORLD), fromhandle...)
            return Comm._impl.fget(self)  # type: ignore[attr-defined]
        # the running rank's own world communicator (World.comm_world, read directly: this
        # runs for every call on COMM_WORLD)
        a = _actors._current
        if a is not None:
            p = a.data
            if type(p) is Process:
                c = p.comm_world
                if c is not None:
                    return c
        return current().world.comm_world

    def _raw(self) -> CommImpl | None:
        if self is not COMM_WORLD:
            return Comm._raw(self)
        try:
            return current().world.comm_world
        except RuntimeError:
            return None

    def Free(self) -> None:
        errors.raise_error(errors.ERR_COMM, "MPI_Comm_free: cannot free a predefined communicator")


class _SelfComm(Intracomm):
    """COMM_SELF: resolves to the running rank's self communicator."""

    __slots__ = ()

    @property
    def _impl(self) -> CommImpl:
        if self is not COMM_SELF:
            return Comm._impl.fget(self)  # type: ignore[attr-defined]
        return current().comm_self

    def _raw(self) -> CommImpl | None:
        if self is not COMM_SELF:
            return Comm._raw(self)
        try:
            return current().comm_self
        except RuntimeError:
            return None

    def Free(self) -> None:
        errors.raise_error(errors.ERR_COMM, "MPI_Comm_free: cannot free a predefined communicator")


# programs and tools print type names: the predefined handles are Intracomms to them
for _cls in (_WorldComm, _SelfComm):
    _cls.__name__ = _cls.__qualname__ = "Intracomm"

COMM_WORLD = _WorldComm.__new__(_WorldComm)
COMM_SELF = _SelfComm.__new__(_SelfComm)
COMM_NULL = Comm()
for _name in ("COMM_WORLD", "COMM_SELF", "COMM_NULL"):
    registry.register(_name, globals()[_name])
COLL_CHANNEL = COLL


def _ti_begin(p: Any) -> Any:
    """The time-independent trace recorder, told that a Sendrecv begins (one action), if one
    is recorded."""
    ti = p.world.ti
    if ti is not None:
        ti.begin_sendrecv(p.rank)
    return ti


# -- the compiled common case (smpy.kernel.accel) -------------------------------------------
def _wait_label(label: str, req: p2p.Request) -> str:
    """The deadlock label of a blocking wait (``p2p.wait``'s), for the compiled Sendrecv."""
    return f"{label} on {req.describe()}"


def _compiled() -> list[tuple[Any, Any]]:
    """(Python, compiled) pairs of :meth:`Comm._send`, :meth:`Comm._irecv` and COMM_WORLD's
    ``_impl`` property from ``_callaccel.c`` (none when it cannot be built); and the bodies
    of ``Send``, ``Recv``, ``Isend``, ``Irecv``, ``Request.Waitall`` and ``Sendrecv`` put in
    their compiled ``@mpicall`` wrappers' fast path, with :meth:`Comm._isend`."""
    from pathlib import Path

    from smpy.support import cext

    mod, _why = cext.load(Path(__file__).with_name("_callaccel.c"), "smpy.mpi._callaccel")
    if mod is None:
        return []
    mod.setup(Process, current, vars(_call), _call._hooked_from_c, coerce_ints, errors.MPIException,
              _call._after_finalize, vars(_actors))
    world_impl = _WorldComm.__dict__["_impl"]
    send, irecv = mod.setup_facade(Comm, Comm.__dict__["_send"], Comm.__dict__["_irecv"], world_impl.fget,
                                   globals(), msgspec, p2p, COMM_WORLD, TAG_UB, PROC_NULL, P2P)
    pairs = [(Comm.__dict__["_send"], send), (Comm.__dict__["_irecv"], irecv),
             (world_impl, property(mod.world_impl, doc=world_impl.__doc__))]
    send_call, recv_call = (_call.compiled_calls.get(id(Comm.__dict__[n])) for n in ("Send", "Recv"))
    if send_call is not None and recv_call is not None:  # the bodies of Send and Recv
        mod.setup_bodies(send_call, Comm.__dict__["Send"].__wrapped__, recv_call, Comm.__dict__["Recv"].__wrapped__)
        # and of Isend, Irecv and Request.Waitall, with Comm._isend
        waitall = Request.__dict__["Waitall"].__func__
        calls = [_call.compiled_calls.get(id(f)) for f in (Comm.__dict__["Isend"], Comm.__dict__["Irecv"], waitall)]
        if None not in calls:
            isend = mod.setup_nonblocking(Comm, Comm.__dict__["_isend"], calls[0], Comm.__dict__["Isend"].__wrapped__,
                                          calls[1], Comm.__dict__["Irecv"].__wrapped__, calls[2], waitall.__wrapped__,
                                          Request, p2p.SendRequest, p2p.RecvRequest)
            # the classmethod holds the Python wrapper, which the rebinding does not look into
            pairs += [(Comm.__dict__["_isend"], isend), (Request.__dict__["Waitall"], classmethod(calls[2]))]
            sendrecv_call = _call.compiled_calls.get(id(Comm.__dict__["Sendrecv"]))
            if sendrecv_call is not None:  # and the body of Sendrecv
                import functools

                mod.setup_sendrecv(sendrecv_call, Comm.__dict__["Sendrecv"].__wrapped__, _wait_label,
                                   functools.partial)
    return pairs


_accel.register(_compiled)
