"""MPI_Barrier algorithms (SimGrid's src/smpi/colls/barrier/, ``smpi/barrier:<name>``).

Signature: ``fn(ctx)``. Every message is empty (0 bytes + envelope); costs in α.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.colls.core import pof2_floor
from smpy.colls.registry import algorithm
from smpy.colls.smp import smp_of

if TYPE_CHECKING:
    from smpy.colls.core import Ctx

E = b""


@algorithm("barrier", "ompi_basic_linear", source="Open MPI coll_basic barrier_intra_lin (SimGrid barrier-ompi.cpp)")
def ompi_basic_linear(ctx: Ctx) -> None:
    """Everyone sends to 0 and waits for 0's answer; 0 receives all, then sends to all.

    Cost 2α + 2(p−1) message overheads at rank 0."""
    size, me = ctx.size, ctx.me
    if me > 0:
        ctx.send(E, 0)
        ctx.recv(0)
        return
    ctx.waitall([ctx.irecv(i) for i in range(1, size)])
    ctx.waitall([ctx.isend(E, i) for i in range(1, size)])


@algorithm("barrier", "ompi_two_procs", source="Open MPI coll_tuned barrier_intra_two_procs (SimGrid barrier-ompi.cpp)",
           requires=lambda p: p == 2, requirement="exactly 2 ranks", fallback="ompi_basic_linear")
def ompi_two_procs(ctx: Ctx) -> None:
    """One sendrecv between the two ranks. Cost α."""
    other = (ctx.me + 1) & 1
    ctx.sendrecv(E, other, other)


@algorithm("barrier", "ompi_tree", source="Open MPI coll_tuned barrier_intra_tree (SimGrid barrier-ompi.cpp)")
def ompi_tree(ctx: Ctx) -> None:
    """Fan-in up a binomial tree to 0, then fan-out back down. Cost 2⌈log2 p⌉ α."""
    size, me = ctx.size, ctx.me
    depth = 1
    while depth < size:
        depth <<= 1
    jump = 1
    while jump < depth:
        partner = me ^ jump
        if not partner & (jump - 1) and partner < size:
            if partner > me:
                ctx.recv(partner)
            elif partner < me:
                ctx.send(E, partner)
        jump <<= 1
    jump = depth >> 1
    while jump > 0:
        partner = me ^ jump
        if not partner & (jump - 1) and partner < size:
            if partner > me:
                ctx.send(E, partner)
            elif partner < me:
                ctx.recv(partner)
        jump >>= 1


@algorithm("barrier", "ompi_bruck", source="Open MPI coll_tuned barrier_intra_bruck (SimGrid barrier-ompi.cpp; MPICH's barrier)")
def ompi_bruck(ctx: Ctx) -> None:
    """Dissemination: at step k, send to rank+2^k and receive from rank−2^k.
    Cost ⌈log2 p⌉ α."""
    size, me = ctx.size, ctx.me
    d = 1
    while d < size:
        ctx.sendrecv(E, (me + d) % size, (me - d) % size)
        d <<= 1


@algorithm("barrier", "ompi_recursivedoubling", source="Open MPI coll_tuned barrier_intra_recursivedoubling (SimGrid barrier-ompi.cpp)")
def ompi_recursivedoubling(ctx: Ctx) -> None:
    """Pairwise exchanges with rank ^ 2^k among the largest power of two; the extra ranks
    check in before and are released after. Cost (⌊log2 p⌋ + 2) α."""
    size, me = ctx.size, ctx.me
    adj = pof2_floor(size)
    if adj != size:
        if me >= adj:
            ctx.sendrecv(E, me - adj, me - adj)
        elif me < size - adj:
            ctx.recv(me + adj)
    if me < adj:
        mask = 1
        while mask < adj:
            remote = me ^ mask
            mask <<= 1
            if remote < adj:
                ctx.sendrecv(E, remote, remote)
    if adj != size and me < size - adj:
        ctx.send(E, me + adj)


@algorithm("barrier", "ompi_doublering", source="Open MPI coll_tuned barrier_intra_doublering (SimGrid barrier-ompi.cpp)")
def ompi_doublering(ctx: Ctx) -> None:
    """A token goes twice around the ring 0 → 1 → … → 0. Cost 2p α."""
    size, me = ctx.size, ctx.me
    left, right = (me - 1) % size, (me + 1) % size
    for _ in range(2):
        if me > 0:
            ctx.recv(left)
        ctx.send(E, right)
        if me == 0:
            ctx.recv(left)


@algorithm("barrier", "mvapich2_pair", source="MVAPICH2 pairwise barrier (SimGrid barrier-mvapich2-pair.cpp)")
def mvapich2_pair(ctx: Ctx) -> None:
    """Like recursive doubling: extra ranks fan in to rank − 2^⌊log2 p⌋, pairwise exchanges
    on the power-of-two subset, fan out. Cost (⌊log2 p⌋ + 2) α."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return
    n2 = pof2_floor(size)
    surfeit = size - n2
    if me < n2:
        if me < surfeit:
            ctx.recv(n2 + me)
        d = 1
        while d < n2:
            ctx.sendrecv(E, me ^ d, me ^ d)
            d <<= 1
        if me < surfeit:
            ctx.send(E, n2 + me)
    else:
        ctx.sendrecv(E, me - n2, me - n2)


@algorithm("barrier", "mpich_smp", source="MPICH SMP barrier (SimGrid barrier-mpich-smp.cpp)")
def mpich_smp(ctx: Ctx) -> None:
    """Bruck barrier inside each node, then among node leaders, then a 1-byte MPICH bcast
    inside each node to release it. Pays SMPI's ``init_smp`` on first use."""
    info = smp_of(ctx)
    intra = ctx.on(info.intra_of[ctx.me], 0)
    ompi_bruck(intra)
    if intra.me == 0:
        ompi_bruck(ctx.on(info.leaders, 1))
    ctx.sel.run_selector("bcast", "mpich", ctx.on(info.intra_of[ctx.me], 2), 0,
                         b"\0" if intra.me == 0 else None, 1, 1)
