"""``MPI.Intercomm``: remote groups, Merge, communicator creation and collectives across
two groups.

Point-to-point calls are :class:`~smpy.mpi.comm.Comm`'s (ranks address the remote group,
the runtime side routes them). Collectives parse their buffers by role, as mpi4py does on
intercommunicators: ``root=MPI.ROOT`` is the root (send buffers of one-to-all, receive
buffers of all-to-one, sized by the *remote* group), ``MPI.PROC_NULL`` the other members
of the root's group (no buffer), any other value the root's rank in the remote group;
then :mod:`smpy.colls.inter` runs the schedule.
"""

from __future__ import annotations

from typing import Any

from smpy.colls import inter as icoll
from smpy.mpi import msgspec, registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.mpi.comm import COMM_NULL, Comm, Intracomm
from smpy.mpi.comm_inter import CommFtMixin, create_from_groups, inherit
from smpy.mpi.datatype import Datatype
from smpy.mpi.group import Group
from smpy.mpi.msgpickle import pickle
from smpy.mpi.op import SUM, Op
from smpy.mpi.request import Request
from smpy.runtime import errors, p2p
from smpy.runtime.constants import PROC_NULL, ROOT, UNDEFINED
from smpy.runtime.group import GroupImpl

__all__ = ["Intercomm"]


_ROLE = (ROOT, PROC_NULL)


_root = p2p.check_root  # ROOT, PROC_NULL or a rank of the remote group


def _send(buf: Any) -> Any:
    return None if msgspec.is_in_place(buf) else msgspec.parse_send(buf)


def _no_attr(name: str) -> property:
    def get(self: Any) -> Any:
        raise AttributeError(f"'mpi4py.MPI.Intercomm' object has no attribute '{name}'")
    return property(get)


def _parse_w(msg: Any, readonly: bool, n: int) -> list[tuple[Any, int, int, Any]]:
    """[(memory, byte displacement, count, DatatypeImpl)] of an Alltoallw message
    ``(buf, (counts, displs), types)`` or ``(buf, counts, displs, types)``."""
    if len(msg) == 3:
        buf, (counts, displs), types = msg
    elif len(msg) == 4:
        buf, counts, displs, types = msg
    else:
        raise ValueError("message: expecting 3 or 4 items")
    mem, _ = msgspec.parse_buffer(buf, readonly)
    counts, displs, types = list(counts), list(displs), list(types)
    for seq in (counts, displs, types):
        if len(seq) != n:
            raise ValueError(f"expecting {n} items, got {len(seq)}")
    out = []
    for c, d, t in zip(counts, displs, types):
        if not isinstance(t, Datatype):
            raise TypeError(f"expected mpi4py.MPI.Datatype, got {type(t).__name__}")
        out.append((mem, int(d), int(c), t._impl))
    return out


@registry.provides("Intercomm")
class Intercomm(Comm, CommFtMixin):
    """An intercommunicator handle: this rank's side of a two-group communicator."""

    __slots__ = ()

    def __init__(self, comm: Comm | None = None) -> None:
        raw = None if comm is None else comm._raw()
        if raw is not None and raw.remote is None:
            raise TypeError("expecting an intercommunicator")
        super().__init__(comm)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Intercomm object at {id(self):#x}>"

    # -- groups ---------------------------------------------------------------------------
    def Is_inter(self) -> bool:
        _ = self._impl
        return True

    def Is_intra(self) -> bool:
        _ = self._impl
        return False

    def Get_remote_group(self) -> Group:
        return Group._wrap(GroupImpl(self._impl.remote))

    def Get_remote_size(self) -> int:
        return self._impl.rsize

    @property
    def remote_group(self) -> Group:
        return self.Get_remote_group()

    @property
    def remote_size(self) -> int:
        return self.Get_remote_size()

    @classmethod
    @intargs
    def Create_from_groups(cls, local_group: Group, local_leader: int, remote_group: Group, remote_leader: int,
                           stringtag: str = "org.mpi4py", info: Any = None, errhandler: Any = None) -> Intercomm:
        return cls._wrap(create_from_groups(local_group, local_leader, remote_group, remote_leader, stringtag))

    # -- new communicators ------------------------------------------------------------------
    @mpicall
    def Merge(self, high: bool = False) -> Intracomm:
        side = self._impl
        return Intracomm._wrap(inherit(side, icoll.merge(proc(), side, bool(high))))

    @mpicall
    def Dup(self, info: Any = None) -> Intercomm:
        side = self._impl
        return type(self)._wrap(inherit(side, icoll.dup(proc(), side)))  # subclasses keep their type

    def Clone(self) -> Intercomm:
        return self.Dup()

    def Dup_with_info(self, info: Any) -> Intercomm:
        return self.Dup(info)

    @mpicall
    def Idup(self, info: Any = None) -> tuple[Intercomm, Request]:
        side, pr = self._impl, proc()
        req = icoll.barrier(pr, side, nb=True)
        return type(self)._wrap(inherit(side, icoll.dup_agree(pr, side))), Request._wrap(req)

    def Idup_with_info(self, info: Any) -> tuple[Intercomm, Request]:
        return self.Idup(info)

    def _split(self, color: int, key: int, call: str) -> Any:
        side = self._impl
        new = icoll.split(proc(), side, int(color), int(key), call)
        return COMM_NULL if new is None else Intercomm._wrap(inherit(side, new))

    @mpicall
    def Split(self, color: int = 0, key: int = 0) -> Any:
        return self._split(color, key, "MPI_Comm_split")

    @mpicall
    def Split_type(self, split_type: int, key: int = 0, info: Any = None) -> Any:
        """Shared-memory split: processes on one simulated host share a color."""
        color = UNDEFINED if split_type == UNDEFINED else proc().host.index
        return self._split(color, key, "MPI_Comm_split_type")

    @mpicall
    def Create(self, group: Group) -> Any:
        g = group._g()
        rank = g.rank_of(proc().rank)
        return self._split(0 if rank != UNDEFINED else UNDEFINED, rank if rank != UNDEFINED else 0,
                           "MPI_Comm_create")

    def Compare(self, comm: Comm) -> int:
        return Comm.Compare(self, comm)

    # -- collectives, buffers ------------------------------------------------------------
    @mpicall
    def Barrier(self) -> None:
        icoll.barrier(proc(), self._impl)

    @mpicall
    def Ibarrier(self) -> Request:
        return Request._wrap(icoll.barrier(proc(), self._impl, nb=True))

    def _bcast(self, buf: Any, root: int, call: str, nb: bool) -> Any:
        side = self._impl
        _root(side, root, call)
        spec = None if root == PROC_NULL else (msgspec.parse_send(buf) if root == ROOT else msgspec.parse_recv(buf))
        return icoll.bcast(proc(), side, spec, root, nb)

    @mpicall
    def Bcast(self, buf: Any, root: int = 0) -> None:
        self._bcast(buf, root, "MPI_Bcast", False)

    @mpicall
    def Ibcast(self, buf: Any, root: int = 0) -> Request:
        return Request._wrap(self._bcast(buf, root, "MPI_Ibcast", True))

    def _reduce(self, sendbuf: Any, recvbuf: Any, op: Op, root: int, call: str, nb: bool) -> Any:
        side = self._impl
        _root(side, root, call)
        sspec = rspec = None
        if root == ROOT:
            rspec = msgspec.parse_recv(recvbuf)
        elif root != PROC_NULL:
            sspec = msgspec.parse_send(sendbuf)
        return icoll.reduce(proc(), side, sspec, rspec, op._impl, root, nb)

    @mpicall
    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        self._reduce(sendbuf, recvbuf, op, root, "MPI_Reduce", False)

    @mpicall
    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> Request:
        return Request._wrap(self._reduce(sendbuf, recvbuf, op, root, "MPI_Ireduce", True))

    @mpicall
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        icoll.allreduce(proc(), self._impl, _send(sendbuf), msgspec.parse_recv(recvbuf), op._impl)

    @mpicall
    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return Request._wrap(icoll.allreduce(proc(), self._impl, _send(sendbuf), msgspec.parse_recv(recvbuf),
                                             op._impl, nb=True))

    def _reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op, nb: bool) -> Any:
        side = self._impl
        rspec = msgspec.parse_recv(recvbuf)
        sspec = msgspec.parse_send(sendbuf, side.size)
        return icoll.reduce_scatter(proc(), side, sspec, rspec, [rspec.count] * side.size, op._impl, True, nb)

    @mpicall
    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        self._reduce_scatter_block(sendbuf, recvbuf, op, False)

    @mpicall
    def Ireduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        return Request._wrap(self._reduce_scatter_block(sendbuf, recvbuf, op, True))

    def _reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any, op: Op, nb: bool) -> Any:
        side = self._impl
        rspec = msgspec.parse_recv(recvbuf)
        counts = [rspec.count] * side.size if recvcounts is None else [int(c) for c in recvcounts]
        if len(counts) != side.size:
            raise ValueError(f"expecting {side.size} items, got {len(counts)}")
        return icoll.reduce_scatter(proc(), side, msgspec.parse_send(sendbuf), rspec, counts, op._impl, False, nb)

    @mpicall
    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM) -> None:
        self._reduce_scatter(sendbuf, recvbuf, recvcounts, op, False)

    @mpicall
    def Ireduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Any = None, op: Op = SUM) -> Request:
        return Request._wrap(self._reduce_scatter(sendbuf, recvbuf, recvcounts, op, True))

    def _gather(self, sendbuf: Any, recvbuf: Any, root: int, v: bool, nb: bool) -> Any:
        side = self._impl
        call = ("MPI_Igatherv" if v else "MPI_Igather") if nb else ("MPI_Gatherv" if v else "MPI_Gather")
        _root(side, root, call)
        sspec = rspec = None
        if root == ROOT:
            rspec = msgspec.parse_vector(recvbuf, side.rsize, False) if v else msgspec.parse_recv(recvbuf)
        elif root != PROC_NULL:
            sspec = msgspec.parse_send(sendbuf)
        return (icoll.gatherv if v else icoll.gather)(proc(), side, sspec, rspec, root, nb)

    @mpicall
    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self._gather(sendbuf, recvbuf, root, False, False)

    @mpicall
    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self._gather(sendbuf, recvbuf, root, True, False)

    @mpicall
    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        return Request._wrap(self._gather(sendbuf, recvbuf, root, False, True))

    @mpicall
    def Igatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        return Request._wrap(self._gather(sendbuf, recvbuf, root, True, True))

    def _scatter(self, sendbuf: Any, recvbuf: Any, root: int, v: bool, nb: bool) -> Any:
        side = self._impl
        call = ("MPI_Iscatterv" if v else "MPI_Iscatter") if nb else ("MPI_Scatterv" if v else "MPI_Scatter")
        _root(side, root, call)
        sspec = rspec = None
        if root == ROOT:
            sspec = msgspec.parse_vector(sendbuf, side.rsize, True) if v else msgspec.parse_send(sendbuf)
        elif root != PROC_NULL:
            rspec = msgspec.parse_recv(recvbuf)
        return (icoll.scatterv if v else icoll.scatter)(proc(), side, sspec, rspec, root, nb)

    @mpicall
    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self._scatter(sendbuf, recvbuf, root, False, False)

    @mpicall
    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        self._scatter(sendbuf, recvbuf, root, True, False)

    @mpicall
    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        return Request._wrap(self._scatter(sendbuf, recvbuf, root, False, True))

    @mpicall
    def Iscatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        return Request._wrap(self._scatter(sendbuf, recvbuf, root, True, True))

    def _allgather(self, sendbuf: Any, recvbuf: Any, v: bool, nb: bool) -> Any:
        side = self._impl
        sspec = msgspec.parse_send(sendbuf)
        if v:
            return icoll.allgatherv(proc(), side, sspec, msgspec.parse_vector(recvbuf, side.rsize, False), nb)
        return icoll.allgather(proc(), side, sspec, msgspec.parse_recv(recvbuf), nb)

    @mpicall
    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        self._allgather(sendbuf, recvbuf, False, False)

    @mpicall
    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        self._allgather(sendbuf, recvbuf, True, False)

    @mpicall
    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(self._allgather(sendbuf, recvbuf, False, True))

    @mpicall
    def Iallgatherv(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(self._allgather(sendbuf, recvbuf, True, True))

    def _alltoall(self, sendbuf: Any, recvbuf: Any, v: bool, nb: bool) -> Any:
        side = self._impl
        if v:
            return icoll.alltoallv(proc(), side, msgspec.parse_vector(sendbuf, side.rsize, True),
                                   msgspec.parse_vector(recvbuf, side.rsize, False), nb)
        return icoll.alltoall(proc(), side, msgspec.parse_send(sendbuf), msgspec.parse_recv(recvbuf), nb)

    @mpicall
    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        self._alltoall(sendbuf, recvbuf, False, False)

    @mpicall
    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        self._alltoall(sendbuf, recvbuf, True, False)

    @mpicall
    def Ialltoall(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(self._alltoall(sendbuf, recvbuf, False, True))

    @mpicall
    def Ialltoallv(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(self._alltoall(sendbuf, recvbuf, True, True))

    def _alltoallw(self, sendbuf: Any, recvbuf: Any, nb: bool) -> Any:
        side = self._impl
        call = "MPI_Ialltoallw" if nb else "MPI_Alltoallw"
        sblocks = [dt.pack(mem, off, n) for mem, off, n, dt in _parse_w(sendbuf, True, side.rsize)]

        def unpacker(mem: Any, off: int, n: int, dt: Any) -> Any:
            def store(data: bytes) -> None:
                if len(data) > n * dt.size:
                    errors.raise_error(errors.ERR_TRUNCATE, f"{call}: message of {len(data)} bytes, "
                                       f"room for {n * dt.size}")
                if data:
                    dt.unpack(data, mem, off, len(data) // dt.size)
            return store

        unpackers = [unpacker(*w) for w in _parse_w(recvbuf, False, side.rsize)]
        return icoll.alltoallw(proc(), side, sblocks, unpackers, nb)

    @mpicall
    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        self._alltoallw(sendbuf, recvbuf, False)

    @mpicall
    def Ialltoallw(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(self._alltoallw(sendbuf, recvbuf, True))

    # -- collectives, objects ------------------------------------------------------------
    @mpicall
    def barrier(self) -> None:
        icoll.barrier(proc(), self._impl)

    @mpicall
    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        side = self._impl
        _root(side, root, "MPI_Bcast")
        return icoll.obj_bcast(proc(), side, obj, root, pickle.dumps, pickle.loads)

    @mpicall
    def reduce(self, sendobj: Any, op: Any = SUM, root: int = 0) -> Any:
        side = self._impl
        _root(side, root, "MPI_Reduce")
        return icoll.obj_reduce(proc(), side, sendobj, op, root, pickle.dumps, pickle.loads)

    @mpicall
    def allreduce(self, sendobj: Any, op: Any = SUM) -> Any:
        return icoll.obj_allreduce(proc(), self._impl, sendobj, op, pickle.dumps, pickle.loads)

    @mpicall
    def gather(self, sendobj: Any, root: int = 0) -> list | None:
        side = self._impl
        _root(side, root, "MPI_Gather")
        return icoll.obj_gather(proc(), side, sendobj, root, pickle.dumps, pickle.loads)

    @mpicall
    def scatter(self, sendobj: Any, root: int = 0) -> Any:
        side = self._impl
        _root(side, root, "MPI_Scatter")
        return icoll.obj_scatter(proc(), side, sendobj, root, pickle.dumps, pickle.loads)

    @mpicall
    def allgather(self, sendobj: Any) -> list:
        return icoll.obj_allgather(proc(), self._impl, sendobj, pickle.dumps, pickle.loads)

    @mpicall
    def alltoall(self, sendobj: Any) -> list:
        return icoll.obj_alltoall(proc(), self._impl, sendobj, pickle.dumps, pickle.loads)

    # intracommunicator-only operations: mpi4py's Intercomm has no such attributes
    Scan = _no_attr("Scan")
    Exscan = _no_attr("Exscan")
    Iscan = _no_attr("Iscan")
    Iexscan = _no_attr("Iexscan")
    scan = _no_attr("scan")
    exscan = _no_attr("exscan")
    Create_intercomm = _no_attr("Create_intercomm")
