"""``MPI.Topocomm``, ``MPI.Cartcomm``, ``MPI.Graphcomm``, ``MPI.Distgraphcomm``,
``MPI.Compute_dims`` and the topology constants; the neighbourhood collectives.

The topology itself lives on the runtime communicator (:mod:`smpy.runtime.topo`); the
classes here parse arguments as mpi4py does (``ValueError("expecting N items, got M")``
for arrays of the wrong length, ``TypeError`` when a handle does not carry the topology
the class needs) and raise MPICH's error classes for invalid ranks, coordinates and
directions. Neighbourhood collectives run on :mod:`smpy.colls.neighbor`.
"""

from __future__ import annotations

import ctypes
import operator
from collections.abc import Sequence
from typing import Any

from smpy.colls import neighbor as ncoll
from smpy.colls.basic import allgather as _allgather_raw
from smpy.mpi import msgspec, registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import UNWEIGHTED, WEIGHTS_EMPTY, chk_list, intargs
from smpy.mpi.comm import Intracomm
from smpy.mpi.comm_topo import self_cart
from smpy.mpi.datatype import Datatype
from smpy.mpi.msgpickle import pickle
from smpy.mpi.request import Request
from smpy.runtime import errors
from smpy.runtime import topo as rtopo
from smpy.runtime.comm import CommImpl
from smpy.runtime.packing import pack

__all__ = ["Topocomm", "Cartcomm", "Graphcomm", "Distgraphcomm", "Compute_dims", "CART", "GRAPH",
           "DIST_GRAPH", "UNWEIGHTED", "WEIGHTS_EMPTY"]

CART = rtopo.CART
GRAPH = rtopo.GRAPH
DIST_GRAPH = rtopo.DIST_GRAPH
def compute_dims(nnodes: int, dims: int | Sequence[int]) -> list[int]:
    if msgspec._is_integral(dims):
        dims = [0] * operator.index(dims)  # type: ignore[arg-type]
    return rtopo.dims_create(operator.index(nnodes), chk_list(dims, len(dims)))  # type: ignore[arg-type]


@intargs
def Compute_dims(nnodes: int, dims: int | Sequence[int]) -> list[int]:
    """Return a balanced distribution of processes per coordinate direction (MPI_Dims_create)."""
    return compute_dims(nnodes, dims)


# -- W messages (mpi4py's message_vector_w) -------------------------------------------------------
def _addr_view(addr: int, span: int, lb: int) -> tuple[memoryview, int]:
    """Memory at absolute address ``addr`` (MPI.BOTTOM messages) and the offset of addr in it."""
    start = addr + min(lb, 0)
    n = span - min(lb, 0)
    if n <= 0:
        return memoryview(bytearray()), 0
    return memoryview((ctypes.c_char * n).from_address(start)).cast("B"), addr - start


def parse_w(msg: Any, readonly: bool, blocks: int) -> list[tuple[memoryview, int, int, Any]]:
    """[(mem, byte offset, count, DatatypeImpl)] for each of ``blocks`` peers."""
    nargs = len(msg)
    if nargs == 2:
        o_buf, o_types = msg
        o_counts = o_displs = None
    elif nargs == 3:
        o_buf, (o_counts, o_displs), o_types = msg
    elif nargs == 4:
        o_buf, o_counts, o_displs, o_types = msg
    else:
        raise ValueError("message: expecting 2 to 4 items")
    bottom = o_buf is None or o_buf is msgspec.BOTTOM
    if bottom:
        if o_counts is None:
            raise ValueError("message: BOTTOM requires counts")
        if o_displs is None:
            raise ValueError("message: BOTTOM requires displs")
        mem = None
    else:
        mem, _ = msgspec.parse_buffer(o_buf, readonly)
    if o_counts is None and o_displs is None:
        counts, displs = [1] * blocks, [0] * blocks
    else:
        counts, displs = chk_list(o_counts, blocks), chk_list(o_displs, blocks)
    if len(o_types) != blocks:
        raise ValueError(f"expecting {blocks} items, got {len(o_types)}")
    out = []
    for i in range(blocks):
        t = o_types[i]
        if not isinstance(t, Datatype):
            raise TypeError(f"Argument has incorrect type (expected mpi4py.MPI.Datatype, got {type(t).__name__})")
        dt = t._impl
        if bottom:
            m, off = _addr_view(displs[i], dt.span(counts[i]), dt.true_lb)
            out.append((m, off, counts[i], dt))
        else:
            out.append((mem, displs[i], counts[i], dt))
    return out


def _unpack_at(mem: memoryview, offset: int, count: int, dt: Any, data: bytes, call: str) -> None:
    """Store a received block; MPICH's neighbourhood schedules drop truncation errors and
    keep the bytes that fit, so does smpy."""
    cap = count * dt.size
    if len(data) > cap:
        data = data[:cap]
    n = len(data) // dt.size if dt.size else 0
    if n:
        dt.unpack(data[:n * dt.size], mem, offset, n)


# -- topology access that works on any communicator (unbound calls: Cartcomm.Get_dim(comm)) --
def topo_of(comm: Any, kind: int | None, call: str) -> Any:
    topo = comm._impl.topology
    if topo is None or (kind is not None and topo.kind != kind):
        what = {CART: "Cartesian topology", GRAPH: "graph topology",
                DIST_GRAPH: "distributed graph topology"}.get(kind, "topology")  # type: ignore[arg-type]
        errors.raise_error(errors.ERR_TOPOLOGY, f"{call}: No {what} associated with this communicator")
    return topo


def edges_of(comm: Any, call: str) -> tuple[list[int], list[int]]:
    return topo_of(comm, None, call).neighbors(comm._impl.rank_of[proc().rank])


# -- neighbourhood collectives (module functions: unbound calls on any communicator) -------
def ngh_allgather(comm: Any, sendbuf: Any, recvbuf: Any, v: bool, nb: bool) -> Any:
    name = ("MPI_Ineighbor_allgather" if nb else "MPI_Neighbor_allgather") + ("v" if v else "")
    impl = comm._impl
    srcs, dsts = edges_of(comm, name)
    sspec = msgspec.parse_send(sendbuf)
    data = pack(sspec)
    if v:
        rvec = msgspec.parse_vector(recvbuf, len(srcs), False)
        dt = rvec.datatype

        def store(i: int, b: bytes) -> None:
            _unpack_at(rvec.mem, rvec.displs[i] * dt.extent, rvec.counts[i], dt, b, name)
    else:
        rspec = msgspec.parse_recv(recvbuf, len(srcs))
        rdt, per = rspec.datatype, rspec.count

        def store(i: int, b: bytes) -> None:
            _unpack_at(rspec.mem, rspec.offset + i * per * rdt.extent, per, rdt, b, name)

    return ncoll.run(proc(), impl, name, srcs, dsts, [data] * len(dsts), store, (topo_of(comm, None, name).kind == CART), nb)

def ngh_alltoall(comm: Any, sendbuf: Any, recvbuf: Any, v: bool, nb: bool) -> Any:
    name = ("MPI_Ineighbor_alltoall" if nb else "MPI_Neighbor_alltoall") + ("v" if v else "")
    impl = comm._impl
    srcs, dsts = edges_of(comm, name)
    if v:
        svec = msgspec.parse_vector(sendbuf, len(dsts), True)
        rvec = msgspec.parse_vector(recvbuf, len(srcs), False)
        sdt, dt = svec.datatype, rvec.datatype
        blocks = [sdt.pack(svec.mem, svec.displs[j] * sdt.extent, svec.counts[j]) for j in range(len(dsts))]

        def store(i: int, b: bytes) -> None:
            _unpack_at(rvec.mem, rvec.displs[i] * dt.extent, rvec.counts[i], dt, b, name)
    else:
        sspec = msgspec.parse_send(sendbuf, len(dsts))
        rspec = msgspec.parse_recv(recvbuf, len(srcs))
        sdt, sper = sspec.datatype, sspec.count
        rdt, rper = rspec.datatype, rspec.count
        blocks = [sdt.pack(sspec.mem, sspec.offset + j * sper * sdt.extent, sper) for j in range(len(dsts))]

        def store(i: int, b: bytes) -> None:
            _unpack_at(rspec.mem, rspec.offset + i * rper * rdt.extent, rper, rdt, b, name)

    return ncoll.run(proc(), impl, name, srcs, dsts, blocks, store, (topo_of(comm, None, name).kind == CART), nb)

def ngh_alltoallw(comm: Any, sendbuf: Any, recvbuf: Any, nb: bool) -> Any:
    name = "MPI_Ineighbor_alltoallw" if nb else "MPI_Neighbor_alltoallw"
    impl = comm._impl
    srcs, dsts = edges_of(comm, name)
    rw = parse_w(recvbuf, False, len(srcs))
    sw = parse_w(sendbuf, True, len(dsts))
    blocks = [dt.pack(mem, off, cnt) for mem, off, cnt, dt in sw]

    def store(i: int, b: bytes) -> None:
        mem, off, cnt, dt = rw[i]
        _unpack_at(mem, off, cnt, dt, b, name)

    return ncoll.run(proc(), impl, name, srcs, dsts, blocks, store, (topo_of(comm, None, name).kind == CART), nb)


def graph_rank(comm: Any, rank: int, call: str) -> tuple[rtopo.GraphTopo, int]:
    t = topo_of(comm, GRAPH, call)
    rank = operator.index(rank)
    if rank < 0 or rank >= t.nnodes:
        errors.raise_error(errors.ERR_RANK, f"{call}: Invalid rank has value {rank} but must be "
                           f"nonnegative and less than {t.nnodes}")
    return t, rank


# -- the classes ----------------------------------------------------------------------------------
class Topocomm(Intracomm):
    """Topology intracommunicator."""

    __slots__ = ()
    _kind: int | None = None
    _what = "a topology communicator"

    def __new__(cls, comm: Any = None) -> Any:
        self = super().__new__(cls)
        Intracomm.__init__(self)  # a null handle until set
        if comm is None:
            return self
        impl = comm._raw()
        if impl is not None:
            topo = impl.topology
            kind = None if topo is None else topo.kind
            if kind is None or (cls._kind is not None and kind != cls._kind):
                raise TypeError(f"expecting {cls._what}")
        return cls._wrap(impl)

    def __init__(self, comm: Any = None) -> None:
        pass  # the handle is set by __new__ (mpi4py's __cinit__)

    def __repr__(self) -> str:
        cls = type(self)
        name = cls.__name__ if cls.__module__ == __name__ else cls.__qualname__
        mod = "mpi4py.MPI" if cls.__module__ == __name__ else cls.__module__
        return f"<{mod}.{name} object at {id(self):#x}>"

    @property
    def degrees(self) -> tuple[int, int]:
        """Number of incoming and outgoing neighbors."""
        ins, outs = edges_of(self, "MPI_Topo_test")
        return len(ins), len(outs)

    @property
    def indegree(self) -> int:
        return self.degrees[0]

    @property
    def outdegree(self) -> int:
        return self.degrees[1]

    @property
    def inoutedges(self) -> tuple[list[int], list[int]]:
        ins, outs = edges_of(self, "MPI_Topo_test")
        return list(ins), list(outs)

    @property
    def inedges(self) -> list[int]:
        return self.inoutedges[0]

    @property
    def outedges(self) -> list[int]:
        return self.inoutedges[1]

    # -- communicator copies keep the topology --------------------------------------------------
    def _keep_topology(self, new: Any) -> Any:
        """``new`` (a copy of this communicator) with this topology, as ``type(self)``."""
        impl = new._raw() if new is not None else None
        if impl is None:
            return new
        impl.topology = self._impl.topology
        return type(self)._wrap(impl)

    def Dup(self, info: Any = None) -> Any:
        return self._keep_topology(Intracomm.Dup(self) if info is None else Intracomm.Dup(self, info))

    def Clone(self) -> Any:
        return self.Dup()

    def Dup_with_info(self, info: Any) -> Any:
        return self._keep_topology(Intracomm.Dup_with_info(self, info))  # type: ignore[attr-defined]

    def Idup(self, info: Any = None) -> Any:
        comm, request = Intracomm.Idup(self) if info is None else Intracomm.Idup(self, info)  # type: ignore[attr-defined]
        return self._keep_topology(comm), request

    # -- neighbourhood collectives --------------------------------------------------------------
    @mpicall
    def Neighbor_allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        ngh_allgather(self, sendbuf, recvbuf, False, False)

    @mpicall
    def Neighbor_allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        ngh_allgather(self, sendbuf, recvbuf, True, False)

    @mpicall
    def Neighbor_alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        ngh_alltoall(self, sendbuf, recvbuf, False, False)

    @mpicall
    def Neighbor_alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        ngh_alltoall(self, sendbuf, recvbuf, True, False)

    @mpicall
    def Neighbor_alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        ngh_alltoallw(self, sendbuf, recvbuf, False)

    @mpicall
    def Ineighbor_allgather(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(ngh_allgather(self, sendbuf, recvbuf, False, True))

    @mpicall
    def Ineighbor_allgatherv(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(ngh_allgather(self, sendbuf, recvbuf, True, True))

    @mpicall
    def Ineighbor_alltoall(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(ngh_alltoall(self, sendbuf, recvbuf, False, True))

    @mpicall
    def Ineighbor_alltoallv(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(ngh_alltoall(self, sendbuf, recvbuf, True, True))

    @mpicall
    def Ineighbor_alltoallw(self, sendbuf: Any, recvbuf: Any) -> Request:
        return Request._wrap(ngh_alltoallw(self, sendbuf, recvbuf, True))

    @mpicall
    def neighbor_allgather(self, sendobj: Any) -> list[Any]:
        srcs, dsts = edges_of(self, "MPI_Neighbor_allgather")
        data = pickle.dumps(sendobj)
        got = ncoll.objects(proc(), self._impl, "MPI_Neighbor_allgather", srcs, dsts, [data] * len(dsts),
                            topo_of(self, None, "MPI_Neighbor_allgather").kind == CART)
        return [pickle.loads(b) if b else None for b in got]

    @mpicall
    def neighbor_alltoall(self, sendobj: list[Any]) -> list[Any]:
        srcs, dsts = edges_of(self, "MPI_Neighbor_alltoall")
        items = [None] * len(dsts) if sendobj is None else list(sendobj)
        if len(items) != len(dsts):
            raise ValueError(f"expecting {len(dsts)} items, got {len(items)}")
        blocks = [pickle.dumps(o) for o in items]
        got = ncoll.objects(proc(), self._impl, "MPI_Neighbor_alltoall", srcs, dsts, blocks,
                            topo_of(self, None, "MPI_Neighbor_alltoall").kind == CART)
        return [pickle.loads(b) if b else None for b in got]


@registry.provides("Cartcomm")
class Cartcomm(Topocomm):
    """Cartesian topology intracommunicator."""

    __slots__ = ()
    _kind = CART
    _what = "a Cartesian communicator"

    def Get_dim(self) -> int:
        return topo_of(self, CART, "MPI_Cartdim_get").ndims

    @property
    def dim(self) -> int:
        return self.Get_dim()

    @property
    def ndim(self) -> int:
        return self.Get_dim()

    def Get_topo(self) -> tuple[list[int], list[int], list[int]]:
        t = topo_of(self, CART, "MPI_Cart_get")
        return list(t.dims), list(t.periods), t.coords(self._impl.rank_of[proc().rank])

    @property
    def topo(self) -> tuple[list[int], list[int], list[int]]:
        return self.Get_topo()

    @property
    def dims(self) -> list[int]:
        return self.Get_topo()[0]

    @property
    def periods(self) -> list[int]:
        return self.Get_topo()[1]

    @property
    def coords(self) -> list[int]:
        return self.Get_topo()[2]

    def Get_cart_rank(self, coords: Sequence[int]) -> int:
        t = topo_of(self, CART, "MPI_Cart_rank")
        c = chk_list(coords, t.ndims)
        for i, (x, d) in enumerate(zip(c, t.dims)):
            if not t.periods[i] and (x < 0 or x >= d):
                errors.raise_error(errors.ERR_ARG, f"MPI_Cart_rank: Cartesian coordinate for the {i} coordinate "
                                   f"is {x} but must be between 0 and {d - 1}")
        return t.rank(c)

    @intargs
    def Get_coords(self, rank: int) -> list[int]:
        t = topo_of(self, CART, "MPI_Cart_coords")
        rank = operator.index(rank)
        size = self._impl.size
        if rank < 0 or rank >= size:
            errors.raise_error(errors.ERR_RANK, f"MPI_Cart_coords: Invalid rank has value {rank} but must be "
                               f"nonnegative and less than {size}")
        return t.coords(rank)

    @intargs
    def Shift(self, direction: int, disp: int) -> tuple[int, int]:
        t = topo_of(self, CART, "MPI_Cart_shift")
        direction, disp = operator.index(direction), operator.index(disp)
        if direction < 0:
            errors.raise_error(errors.ERR_ARG, f"MPI_Cart_shift: Invalid value for direction, must be "
                               f"non-negative but is {direction}")
        if t.ndims and direction >= t.ndims:
            errors.raise_error(errors.ERR_ARG, f"MPI_Cart_shift: Number of dimensions {direction} is too large "
                               f"(maximum is {t.ndims})")
        return t.shift(self._impl.rank_of[proc().rank], direction, disp)

    @mpicall
    def Sub(self, remain_dims: Sequence[bool]) -> Cartcomm:
        t = topo_of(self, CART, "MPI_Cart_sub")
        keep = chk_list(remain_dims, t.ndims)
        impl, pr = self._impl, proc()
        me = impl.rank_of[pr.rank]
        pos = t.coords(me)
        color = key = 0
        for i, d in enumerate(t.dims):
            if keep[i]:
                key = key * d + pos[i]
            else:
                color = color * d + pos[i]
        triples = _allgather_raw(pr, impl, (color, key, me), 12, "MPI_Comm_split")
        if not any(keep):
            return Cartcomm._wrap(impl.agree(pr, me, lambda: self_cart(impl), 1))
        members = sorted((k, r) for c, k, r in triples if c == color)
        group = [impl.group[r] for _, r in members]
        sub = rtopo.CartTopo([d for i, d in enumerate(t.dims) if keep[i]],
                             [p for i, p in enumerate(t.periods) if keep[i]])

        def build() -> CommImpl:
            c = CommImpl(impl.world, group, "")
            c.topology = sub
            return c

        return Cartcomm._wrap(impl.agree(pr, color, build, len(group)))


@registry.provides("Graphcomm")
class Graphcomm(Topocomm):
    """General graph topology intracommunicator."""

    __slots__ = ()
    _kind = GRAPH
    _what = "a general graph communicator"

    def Get_dims(self) -> tuple[int, int]:
        t = topo_of(self, GRAPH, "MPI_Graphdims_get")
        return t.nnodes, len(t.edges)

    @property
    def dims(self) -> tuple[int, int]:
        return self.Get_dims()

    @property
    def nnodes(self) -> int:
        return self.Get_dims()[0]

    @property
    def nedges(self) -> int:
        return self.Get_dims()[1]

    def Get_topo(self) -> tuple[list[int], list[int]]:
        t = topo_of(self, GRAPH, "MPI_Graph_get")
        return list(t.index), list(t.edges)

    @property
    def topo(self) -> tuple[list[int], list[int]]:
        return self.Get_topo()

    @property
    def index(self) -> list[int]:
        return self.Get_topo()[0]

    @property
    def edges(self) -> list[int]:
        return self.Get_topo()[1]

    @intargs
    def Get_neighbors_count(self, rank: int) -> int:
        t, rank = graph_rank(self, rank, "MPI_Graph_neighbors_count")
        return t.count(rank)

    @property
    def nneighbors(self) -> int:
        return self.Get_neighbors_count(self.Get_rank())

    @intargs
    def Get_neighbors(self, rank: int) -> list[int]:
        t, rank = graph_rank(self, rank, "MPI_Graph_neighbors_count")
        return list(t.of(rank))

    @property
    def neighbors(self) -> list[int]:
        return self.Get_neighbors(self.Get_rank())


@registry.provides("Distgraphcomm")
class Distgraphcomm(Topocomm):
    """Distributed graph topology intracommunicator."""

    __slots__ = ()
    _kind = DIST_GRAPH
    _what = "a distributed graph communicator"

    def Get_dist_neighbors_count(self) -> tuple[int, int, bool]:
        t = topo_of(self, DIST_GRAPH, "MPI_Dist_graph_neighbors_count")
        src, _, dst, _, weighted = t.by_rank[self._impl.rank_of[proc().rank]]
        return len(src), len(dst), weighted

    def Get_dist_neighbors(self) -> tuple[list[int], list[int], tuple[list[int], list[int]] | None]:
        t = topo_of(self, DIST_GRAPH, "MPI_Dist_graph_neighbors")
        src, sw, dst, dw, weighted = t.by_rank[self._impl.rank_of[proc().rank]]
        if not weighted:
            return list(src), list(dst), None
        return list(src), list(dst), (list(sw), list(dw))
