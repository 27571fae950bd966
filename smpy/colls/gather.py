"""MPI_Gather and MPI_Gatherv algorithms (SimGrid's gather/, ``smpi/gather:<name>``).

Signature: ``fn(ctx, root, block, elem) -> list | None`` — every rank's block, in rank
order, at the root. Blocks are opaque (their sizes may differ: the same schedules serve
MPI_Gatherv); ``elem`` is the element size, for the algorithms that cut blocks in segments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls import topo
from smpy.colls.core import segment_count, wire
from smpy.colls.registry import algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


@algorithm("gather", "ompi_basic_linear", source="Open MPI coll_basic gather_intra (SimGrid gather-ompi.cpp)")
def ompi_basic_linear(ctx: Ctx, root: int, block: Any, elem: int) -> list | None:
    """Non-roots send; the root receives in rank order, one blocking receive at a time.

    Cost (p−1)(α + nβ) serialised at the root."""
    if ctx.me != root:
        ctx.send(block, root)
        return None
    return [block if i == root else ctx.recv(i) for i in range(ctx.size)]


@algorithm("gather", "ompi_binomial", source="Open MPI coll_tuned gather_intra_binomial (SimGrid gather-ompi.cpp; MPICH's gather)")
def ompi_binomial(ctx: Ctx, root: int, block: Any, elem: int) -> list | None:
    """In-order binomial tree: each node receives its children's subtrees (in rank order
    relative to the root) and sends the concatenation to its parent.

    ⌈log2 p⌉ steps; cost ⌈log2 p⌉ α + (p−1)/p · pnβ at the root."""
    size, me = ctx.size, ctx.me
    parent, kids = topo.in_order_bmtree(size, me, root)
    vrank = (me - root) % size
    got: list[Any] = [block]
    if vrank % 2 == 0:
        for k in kids:
            got.extend(ctx.recv(k))
    if me != root:
        ctx.send(tuple(got), parent)
        return None
    # got is in vrank order: rotate back to rank order
    return [got[(i - root) % size] for i in range(size)]


@algorithm("gather", "ompi_linear_sync", source="Open MPI coll_tuned gather_intra_linear_sync (SimGrid gather-ompi.cpp)")
def ompi_linear_sync(ctx: Ctx, root: int, block: Any, elem: int) -> list | None:
    """The root handshakes with each rank in turn (0-byte go message); each rank then
    sends its first segment (1 KiB, or 32 KiB above 90 KiB blocks) synchronously and the
    rest in a second message, received while the root moves on to the next rank.

    Cost ≈ (p−1)(3α + s β) + (p−1) nβ."""
    size, me = ctx.size, ctx.me
    nbytes = wire(block)
    first_seg = 32768 if nbytes > 92160 else 1024
    if me != root:
        first = segment_count(first_seg, elem, nbytes // elem) * elem
        ctx.recv(root)
        ctx.send(block[:first], root)
        ctx.send(block[first:], root)
        return None
    out: list[Any] = [None] * size
    seconds: list[Any] = [None] * size
    firsts: list[Any] = [None] * size
    for i in range(size):
        if i == root:
            continue
        fr = ctx.irecv(i)
        ctx.send(b"", i)
        seconds[i] = ctx.irecv(i)
        firsts[i] = ctx.wait(fr)
    ctx.waitall([r for r in seconds if r is not None])
    for i in range(size):
        out[i] = block if i == root else firsts[i] + seconds[i].payload
    return out


@algorithm("gather", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp igather (SMPI's MPI_Igather/MPI_Gatherv and 'default' gather)")
def nbc_linear(ctx: Ctx, root: int, block: Any, elem: int) -> list | None:
    """Non-roots start a send to the root; the root posts every receive at once and waits.

    Cost ≈ α + (p−1) nβ at the root's link (receives overlap)."""
    if ctx.me != root:
        ctx.waitall([ctx.isend(block, root)])
        return None
    reqs = [None if i == root else ctx.irecv(i) for i in range(ctx.size)]
    ctx.waitall([r for r in reqs if r is not None])
    return [block if r is None else r.payload for r in reqs]


algorithm("gatherv", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp igatherv (SMPI's only MPI_Gatherv)")(nbc_linear)
algorithm("gatherv", "ompi_basic_linear", source="Open MPI coll_basic gatherv_intra (same schedule as gather)")(ompi_basic_linear)
algorithm("gatherv", "ompi_binomial", source="binomial gather schedule applied to vectors (smpy)")(ompi_binomial)
