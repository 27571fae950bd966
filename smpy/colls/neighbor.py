"""Neighbourhood collectives (MPI_Neighbor_allgather/alltoall and their v, w and
non-blocking variants) and the edge exchange of MPI_Dist_graph_create.

MPICH runs every neighbourhood collective as one linear schedule (its ``_allcomm_nb``
default: the blocking call is the non-blocking one plus a wait): an ``isend`` of block
``j`` to out-neighbour ``j`` for every ``j``, an ``irecv`` into slot ``i`` from
in-neighbour ``i`` for every ``i``, then waiting for all of them. So the cost is one
message per edge, all in flight at once. ``PROC_NULL`` neighbours (the edges of a
non-periodic Cartesian dimension) send and receive nothing: their receive slot is left
untouched.

Matching, when a neighbour occurs twice (periodic dimension of size 1 or 2, multigraphs):

* graph and distributed graph topologies — one tag, so the k-th message from a peer goes
  to the k-th slot naming that peer (FIFO);
* Cartesian topologies — the message sent in direction ``(d, +1)`` lands in the
  receiver's ``(d, -1)`` slot and vice versa, whatever the dimension's size (MPI-4's
  rule, which MPICH follows): the message for out-slot ``j`` carries tag ``j`` and in-slot
  ``i`` takes tag ``i ^ 1``.

The object (lowercase) variants are mpi4py's: a neighbour allgather/alltoall of the
8-byte pickle sizes, then the ``v`` variant on the pickles.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from smpy.colls.nonblocking import start
from smpy.runtime.constants import PROC_NULL

if TYPE_CHECKING:
    from smpy.colls.core import Ctx
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process

Store = Callable[[int, bytes], None]
COUNT = 8  # MPI_COUNT


def exchange(ctx: Ctx, srcs: Sequence[int], dsts: Sequence[int], blocks: Sequence[Any],
             cart: bool) -> list[Any]:
    """One linear neighbourhood exchange: ``blocks[j]`` to ``dsts[j]``; returns what came
    from each ``srcs[i]`` (None for PROC_NULL sources)."""
    recvs = [ctx.irecv(s, (i ^ 1) if cart else 0) if s != PROC_NULL else None for i, s in enumerate(srcs)]
    sends = [ctx.isend(blocks[j], d, j if cart else 0) for j, d in enumerate(dsts) if d != PROC_NULL]
    ctx.waitall(sends + [r for r in recvs if r is not None])
    return [None if r is None else r.payload for r in recvs]


def run(proc: Process, comm: CommImpl, call: str, srcs: Sequence[int], dsts: Sequence[int],
        blocks: Sequence[bytes], store: Store, cart: bool, nb: bool = False) -> Any:
    """A buffer neighbourhood collective: ``blocks`` packed at call time, ``store(i, data)``
    unpacks (and checks truncation of) what came from in-neighbour ``i``."""
    srcs, dsts, blocks = list(srcs), list(dsts), list(blocks)

    def work(ctx: Ctx) -> None:
        for i, data in enumerate(exchange(ctx, srcs, dsts, blocks, cart)):
            if data is not None:
                store(i, data)

    return start(proc, comm, call, work, nb)


def _cnt(n: int) -> bytes:
    return struct.pack("<q", n)


def objects(proc: Process, comm: CommImpl, call: str, srcs: Sequence[int], dsts: Sequence[int],
            blocks: Sequence[bytes], cart: bool) -> list[bytes | None]:
    """mpi4py's neighbor_allgather/alltoall of pickles: the sizes, then the pickles.
    Returns the pickle from each in-neighbour (None for PROC_NULL)."""
    srcs, dsts, blocks = list(srcs), list(dsts), list(blocks)

    def work(ctx: Ctx) -> list[bytes | None]:
        exchange(ctx.sub(0), srcs, dsts, [_cnt(len(b)) for b in blocks], cart)
        return exchange(ctx.sub(1), srcs, dsts, blocks, cart)

    return start(proc, comm, call, work)


def dist_graph_edges(proc: Process, comm: CommImpl, rin: list[list[int]], rout: list[list[int]]
                     ) -> tuple[list[int], list[int]]:
    """MPI_Dist_graph_create's exchange: ``rin[p]`` are the (source, weight) pairs of the
    edges into ``p`` this rank knows, ``rout[p]`` the (dest, weight) pairs out of ``p``.
    MPICH sums peer counts with a reduce_scatter_block, then sends each non-empty list to
    its process; smpy moves the lists with the selected alltoallv (one message per pair
    of processes, empty when nothing is known). Returns this rank's (in, out) flat pairs,
    by sender rank."""
    size = comm.size
    blocks = []
    for p in range(size):
        a, b = rin[p], rout[p]
        blocks.append(struct.pack(f"<{2 + len(a) + len(b)}i", len(a), len(b), *a, *b) if (a or b) else b"")

    def work(ctx: Ctx) -> list[bytes]:
        return ctx.sel.run("alltoallv", ctx, blocks)

    got = start(proc, comm, "MPI_Dist_graph_create", work)
    ins: list[int] = []
    outs: list[int] = []
    for data in got:
        if not data:
            continue
        vals = struct.unpack(f"<{len(data) // 4}i", data)
        na, nb_ = vals[0], vals[1]
        ins.extend(vals[2:2 + na])
        outs.extend(vals[2 + na:2 + na + nb_])
    return ins, outs
