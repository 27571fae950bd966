"""Topology constructors on intracommunicators (Create_cart, Create_graph,
Create_dist_graph, Create_dist_graph_adjacent) and the mapping queries (Cart_map,
Graph_map). The topology communicator classes live in :mod:`smpy.mpi.topo`, above this
module: the constructors find them in :mod:`smpy.mpi.registry`.

As MPICH: the new communicator holds the first ``prod(dims)`` (``nnodes``) ranks of the
parent in their order (MPICH's maps never reorder), the others get a null handle of the
topology's class; a 0-dimensional Cartesian topology is rank 0 alone; the distributed
graph constructors keep every rank. Creation costs the parent's context-id agreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smpy.colls import buffers as bcoll
from smpy.colls.basic import allgather as _allgather_raw
from smpy.colls.basic import barrier
from smpy.colls.neighbor import dist_graph_edges
from smpy.mpi import registry
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import UNWEIGHTED, chk_list, int_list, periods_arg, weights_arg
from smpy.runtime import errors
from smpy.runtime import topo as rtopo
from smpy.runtime.comm import CommImpl
from smpy.runtime.constants import UNDEFINED

__all__: list[str] = []


# -- creation on the runtime ---------------------------------------------------------------------
def copy_comm(parent: CommImpl, nnodes: int, topo: Any, reorder: bool = False) -> CommImpl | None:
    """MPICH's topology constructors: the first ``nnodes`` ranks of ``parent``, in order,
    as a new communicator carrying ``topo`` (None elsewhere). The context-id agreement
    costs a barrier (a Split's allgather with ``reorder``, as MPICH splits then)."""
    pr = proc()
    me = parent.rank_of[pr.rank]
    if reorder:
        _allgather_raw(pr, parent, (1 if me < nnodes else UNDEFINED, me), 8, "MPI_Comm_split")
    else:
        bcoll.barrier(pr, parent)
    inside = 0 <= me < nnodes
    members = parent.group[:max(nnodes, 0)]

    def build() -> CommImpl:
        c = CommImpl(parent.world, list(members), "")
        c.topology = topo
        return c

    if not inside:
        parent.agree(pr, UNDEFINED, lambda: None, parent.size - len(members))
        return None
    return parent.agree(pr, 1, build, len(members))


def self_cart(parent: CommImpl) -> CommImpl:
    """A 0-dimensional Cartesian communicator of the calling rank alone (a dup of COMM_SELF)."""
    pr = proc()
    c = CommImpl(parent.world, [pr.rank], "")
    c.topology = rtopo.CartTopo([], [])
    return c


def _graph_args(index: Sequence[int], edges: Sequence[int]) -> tuple[list[int], list[int]]:
    idx, edg = int_list(index), int_list(edges)
    if idx and idx[0] == 0 and idx[-1] == len(edg):  # mpi4py: 'standard' adjacency arrays
        idx = idx[1:]
    return idx, edg


class IntraTopoMixin:
    __slots__ = ()

    @mpicall
    def Create_cart(self, dims: Sequence[int], periods: Sequence[bool] | None = None,
                    reorder: bool = False) -> Any:
        impl = self._impl  # type: ignore[attr-defined]
        d = int_list(dims)
        p = periods_arg(periods, len(d))
        n = 1
        for x in d:
            n *= x
        if n > impl.size:
            errors.raise_error(errors.ERR_ARG, f"MPI_Cart_create: Size of the communicator ({impl.size}) is "
                               f"smaller than the size of the Cartesian topology ({n})")
        if not d:
            pr = proc()
            me = impl.rank_of[pr.rank]
            barrier(pr, impl)
            if me != 0:
                return registry.get("Cartcomm")._wrap(None)
            return registry.get("Cartcomm")._wrap(self_cart(impl))
        return registry.get("Cartcomm")._wrap(copy_comm(impl, n, rtopo.CartTopo(d, p), bool(reorder)))

    @mpicall
    def Create_graph(self, index: Sequence[int], edges: Sequence[int], reorder: bool = False) -> Any:
        impl = self._impl  # type: ignore[attr-defined]
        idx, edg = _graph_args(index, edges)
        nnodes = len(idx)
        if nnodes > impl.size:
            errors.raise_error(errors.ERR_ARG, f"MPI_Graph_create: Topology size {nnodes} is larger than "
                               f"communicator size ({impl.size})")
        nedges = idx[-1] if idx else 0
        for i, e in enumerate(edg[:nedges]):
            if e < 0 or e > impl.size:  # sic: MPICH accepts edges[i] == size
                errors.raise_error(errors.ERR_ARG, f"MPI_Graph_create: Edge index edges[{i}] is {e} but must "
                                   f"be nonnegative and less than {impl.size}")
        topo = rtopo.GraphTopo(idx, edg[:nedges])
        return registry.get("Graphcomm")._wrap(copy_comm(impl, nnodes, topo, bool(reorder)))

    @mpicall
    def Create_dist_graph_adjacent(self, sources: Sequence[int] | None, destinations: Sequence[int] | None,
                                   sourceweights: Any = None, destweights: Any = None,
                                   info: Any = None, reorder: bool = False) -> Any:
        impl = self._impl  # type: ignore[attr-defined]
        src = int_list(sources) if sources is not None else []
        sw = weights_arg(sourceweights, len(src))
        dst = int_list(destinations) if destinations is not None else []
        dw = weights_arg(destweights, len(dst))
        weighted = not (sourceweights is None or sourceweights is UNWEIGHTED)
        new = copy_comm(impl, impl.size, rtopo.DistGraphTopo())
        if new is not None:
            me = new.rank_of[proc().rank]
            # MPICH copies the destination weights only when the source weights are given
            new.topology.by_rank[me] = (src, sw or [], dst, dw if dw is not None else [1] * len(dst), weighted)
        return registry.get("Distgraphcomm")._wrap(new)

    @mpicall
    def Create_dist_graph(self, sources: Sequence[int], degrees: Sequence[int], destinations: Sequence[int],
                          weights: Any = None, info: Any = None, reorder: bool = False) -> Any:
        impl = self._impl  # type: ignore[attr-defined]
        src = int_list(sources)
        deg = chk_list(degrees, len(src))
        dst = chk_list(destinations, sum(deg))
        w = weights_arg(weights, len(dst))
        size = impl.size
        for s in src:
            if s < 0 or s >= size:
                errors.raise_error(errors.ERR_ARG, f"MPI_Dist_graph_create: invalid source rank {s} "
                                   f"(communicator of {size})")
        for t in dst:
            if t < 0 or t >= size:
                errors.raise_error(errors.ERR_ARG, f"MPI_Dist_graph_create: invalid destination rank {t} "
                                   f"(communicator of {size})")
        rin: list[list[int]] = [[] for _ in range(size)]
        rout: list[list[int]] = [[] for _ in range(size)]
        k = 0
        for s, n in zip(src, deg):
            for _ in range(n):
                d, wt = dst[k], (w[k] if w else 0)
                rout[s] += (d, wt)
                rin[d] += (s, wt)
                k += 1
        new = copy_comm(impl, size, rtopo.DistGraphTopo())
        ins, outs = dist_graph_edges(proc(), impl, rin, rout)
        me = new.rank_of[proc().rank]  # type: ignore[union-attr]
        weighted = w is not None
        new.topology.by_rank[me] = (ins[0::2], ins[1::2] if weighted else [], outs[0::2],  # type: ignore[union-attr]
                                    outs[1::2] if weighted else [], weighted)
        return registry.get("Distgraphcomm")._wrap(new)

    @mpicall
    def Cart_map(self, dims: Sequence[int], periods: Sequence[bool] | None = None) -> int:
        impl = self._impl  # type: ignore[attr-defined]
        d = int_list(dims)
        periods_arg(periods, len(d))
        n = 1
        for x in d:
            n *= x
        if impl.size < n:
            errors.raise_error(errors.ERR_DIMS, f"MPI_Cart_map: Topology size {impl.size} is larger than "
                               f"communicator size ({n})")
        me = impl.rank_of[proc().rank]
        return me if me < n else UNDEFINED

    @mpicall
    def Graph_map(self, index: Sequence[int], edges: Sequence[int]) -> int:
        impl = self._impl  # type: ignore[attr-defined]
        idx, _ = _graph_args(index, edges)
        if len(idx) > impl.size:
            errors.raise_error(errors.ERR_ARG, "MPI_Graph_map: Number of graph nodes exceeds size of communicator.")
        me = impl.rank_of[proc().rank]
        return me if me < len(idx) else UNDEFINED
