"""MPI_Scan and MPI_Exscan algorithms (``smpi/scan:<name>``, ``smpi/exscan:<name>``).

Signature: ``fn(ctx, data, red) -> bytes | None`` — the inclusive prefix ``x0 op … op
x_me`` (scan), or the exclusive one (exscan: None at rank 0). SMPI has one schedule per
collective (``linear``); the others are what Open MPI and MPICH run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.colls.core import Reduction
from smpy.colls.registry import algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


def _linear(ctx: Ctx, data: bytes, red: Reduction, exclusive: bool) -> bytes | None:
    me, size = ctx.me, ctx.size
    recvs = [ctx.irecv(o) for o in range(me)]
    sends = [ctx.isend(data, o) for o in range(me + 1, size)]
    ctx.waitall(recvs + sends)
    parts = [r.payload for r in recvs]
    if not exclusive:
        parts.append(data)
    if not parts:
        return None
    acc = parts[0]
    for p in parts[1:]:
        acc = red(acc, p)
    return acc


@algorithm("scan", "linear", source="SimGrid smpi_coll.cpp colls::scan (SMPI's only MPI_Scan)")
def linear(ctx: Ctx, data: bytes, red: Reduction) -> bytes | None:
    """Every rank sends its vector to every higher rank and receives from every lower
    one (all posted at once), then folds in rank order. Cost ≈ α + (p−1) nβ per link,
    p(p−1)/2 messages."""
    return _linear(ctx, data, red, False)


@algorithm("exscan", "linear", source="SimGrid smpi_coll.cpp colls::exscan (SMPI's only MPI_Exscan)")
def ex_linear(ctx: Ctx, data: bytes, red: Reduction) -> bytes | None:
    """As ``scan:linear``, without my own contribution. p(p−1)/2 messages."""
    return _linear(ctx, data, red, True)


def _chain(ctx: Ctx, data: bytes, red: Reduction, exclusive: bool) -> bytes | None:
    me, size = ctx.me, ctx.size
    prefix = ctx.recv(me - 1) if me > 0 else None
    incl = data if prefix is None else red(prefix, data)
    if me + 1 < size:
        ctx.send(incl, me + 1)
    return prefix if exclusive else incl


@algorithm("scan", "ompi_linear", source="Open MPI coll_basic scan_intra (chain)")
def ompi_linear(ctx: Ctx, data: bytes, red: Reduction) -> bytes | None:
    """Chain: receive the prefix from rank−1, combine, pass it on. Cost (p−1)(α + nβ)."""
    return _chain(ctx, data, red, False)


@algorithm("exscan", "ompi_linear", source="Open MPI coll_basic exscan_intra (chain)")
def ex_ompi_linear(ctx: Ctx, data: bytes, red: Reduction) -> bytes | None:
    """Chain of inclusive prefixes; each rank keeps the one it received.
    Cost (p−1)(α + nβ)."""
    return _chain(ctx, data, red, True)


def _rdb(ctx: Ctx, data: bytes, red: Reduction, exclusive: bool) -> bytes | None:
    me, size = ctx.me, ctx.size
    partial = data
    result = None if exclusive else data
    mask = 1
    while mask < size:
        dst = me ^ mask
        if dst < size:
            got = ctx.sendrecv(partial, dst, dst)
            if me > dst:
                partial = red(got, partial)
                result = got if result is None else red(got, result)
            else:
                partial = red(partial, got)
        mask <<= 1
    return result


@algorithm("scan", "mpich_rdb", source="MPICH scan recursive doubling")
def mpich_rdb(ctx: Ctx, data: bytes, red: Reduction) -> bytes | None:
    """Recursive doubling on (partial, result) pairs. Cost ⌈log2 p⌉ (α + nβ)."""
    return _rdb(ctx, data, red, False)


@algorithm("exscan", "mpich_rdb", source="MPICH exscan recursive doubling")
def ex_mpich_rdb(ctx: Ctx, data: bytes, red: Reduction) -> bytes | None:
    """Recursive doubling, the result built only from lower ranks. ⌈log2 p⌉ (α + nβ)."""
    return _rdb(ctx, data, red, True)
