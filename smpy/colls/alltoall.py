"""MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw algorithms (SimGrid's alltoall/ and
alltoallv/, ``smpi/alltoall:<name>``, ``smpi/alltoallv:<name>``).

Signature: ``fn(ctx, blocks) -> list`` — ``blocks[j]`` goes to rank j; returns the block
received from every rank, in rank order. Blocks are opaque, so the same schedules serve
the vector variants (SimGrid registers most of them under both names).
"""

from __future__ import annotations

from math import isqrt
from typing import TYPE_CHECKING

from smpy.colls.core import is_pof2
from smpy.colls.registry import algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx

POF2 = {"requires": is_pof2, "requirement": "a power-of-two number of ranks", "fallback": "ring"}


@algorithm("alltoall", "basic_linear", source="Open MPI coll_basic alltoall_intra (SimGrid alltoall-basic-linear.cpp)")
def basic_linear(ctx: Ctx, blocks: list) -> list:
    """All receives posted (from rank+1 on), all sends started in reverse order, one
    waitall. Cost ≈ α + (p−1) nβ per link, everything in flight at once."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = blocks[me]
    recvs = {}
    for k in range(1, size):
        i = (me + k) % size
        recvs[i] = ctx.irecv(i)
    sends = [ctx.isend(blocks[(me - k) % size], (me - k) % size) for k in range(1, size)]
    ctx.waitall(list(recvs.values()) + sends)
    for i, r in recvs.items():
        out[i] = r.payload
    return out


@algorithm("alltoall", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp ialltoall (SMPI's MPI_Ialltoall)")
def nbc_linear(ctx: Ctx, blocks: list) -> list:
    """SMPI's MPI_Ialltoall schedule, identical to ``basic_linear``."""
    return basic_linear(ctx, blocks)


@algorithm("alltoall", "pair", source="SimGrid alltoall-pair.cpp (MPICH long messages, power of two)", **POF2)
def pair(ctx: Ctx, blocks: list) -> list:
    """Pairwise exchange: step i swaps blocks with rank ^ i (step 0 is a local copy).
    Cost (p−1)(α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    for i in range(size):
        o = me ^ i
        out[o] = ctx.sendrecv(blocks[o], o, o)
    return out


@algorithm("alltoall", "pair_rma", source="SimGrid alltoall-pair.cpp alltoall__pair_rma (MPI_Put between fences)", **POF2)
def pair_rma(ctx: Ctx, blocks: list) -> list:
    """``pair`` over a window, as SMPI runs it: creating the window (the selected allgather
    of the 8-byte window handles), a fence (two selected barriers), a put of the block
    for rank ^ i to rank ^ i for every i (to oneself: a local copy), a fence (barrier,
    completion of every put from and to this rank, barrier), freeing the window (two
    barriers). SMPI's put posts the target's receive itself; here every rank posts its
    receives when the puts start.

    Cost allgather + 6 barriers + (p−1)(α + nβ) with every put in flight at once."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return [blocks[0]]
    ctx.sel.run("allgather", ctx.sub(0), bytes(8), [8] * size, 1)
    for k in (1, 2):
        _barrier(ctx, k)
    peers = [me ^ i for i in range(1, size)]
    recvs = {o: ctx.irecv(o) for o in peers}
    sends = [ctx.isend(blocks[o], o) for o in peers]
    _barrier(ctx, 3)
    ctx.waitall(sends + list(recvs.values()))
    for k in (4, 5, 6):
        _barrier(ctx, k)
    out = [None] * size
    out[me] = blocks[me]
    for o, r in recvs.items():
        out[o] = r.payload
    return out


@algorithm("alltoall", "ring", source="SimGrid alltoall-ring.cpp (MPICH long messages)")
def ring(ctx: Ctx, blocks: list) -> list:
    """Step i sends to rank+i the block for it and receives from rank−i.
    Cost (p−1)(α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    for i in range(size):
        src, dst = (me - i) % size, (me + i) % size
        out[src] = ctx.sendrecv(blocks[dst], dst, src)
    return out


def _barrier(ctx: Ctx, k: int) -> None:
    ctx.sel.run("barrier", ctx.sub(k))


@algorithm("alltoall", "pair_mpi_barrier", source="SimGrid alltoall-pair-mpi-barrier.cpp", **POF2)
def pair_mpi_barrier(ctx: Ctx, blocks: list) -> list:
    """``pair`` with the selected barrier before every step. Cost p (barrier + α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    for i in range(size):
        o = me ^ i
        _barrier(ctx, i)
        out[o] = ctx.sendrecv(blocks[o], o, o)
    return out


@algorithm("alltoall", "pair_one_barrier", source="SimGrid alltoall-pair-one-barrier.cpp", **POF2)
def pair_one_barrier(ctx: Ctx, blocks: list) -> list:
    """The selected barrier, then ``pair``. Cost barrier + (p−1)(α + nβ)."""
    _barrier(ctx, 0)
    return pair(ctx, blocks)


@algorithm("alltoall", "pair_light_barrier", source="SimGrid alltoall-pair-light-barrier.cpp", **POF2)
def pair_light_barrier(ctx: Ctx, blocks: list) -> list:
    """``pair`` with a 1-byte handshake with the next partner after every step.
    Cost (p−1)(2α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = blocks[me]
    for i in range(1, size):
        o = me ^ i
        out[o] = ctx.sendrecv(blocks[o], o, o)
        if i + 1 < size:
            nxt = me ^ (i + 1)
            ctx.sendrecv(b"a", nxt, nxt, 1)
    return out


@algorithm("alltoall", "ring_mpi_barrier", source="SimGrid alltoall-ring-mpi-barrier.cpp")
def ring_mpi_barrier(ctx: Ctx, blocks: list) -> list:
    """``ring`` with the selected barrier before every step. Cost p (barrier + α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    for i in range(size):
        src, dst = (me - i) % size, (me + i) % size
        _barrier(ctx, i)
        out[src] = ctx.sendrecv(blocks[dst], dst, src)
    return out


@algorithm("alltoall", "ring_one_barrier", source="SimGrid alltoall-ring-one-barrier.cpp")
def ring_one_barrier(ctx: Ctx, blocks: list) -> list:
    """The selected barrier, then ``ring``. Cost barrier + (p−1)(α + nβ)."""
    _barrier(ctx, 0)
    return ring(ctx, blocks)


@algorithm("alltoall", "ring_light_barrier", source="SimGrid alltoall-ring-light-barrier.cpp")
def ring_light_barrier(ctx: Ctx, blocks: list) -> list:
    """``ring`` with a 1-byte handshake with the next source/destination after every step.
    Cost (p−1)(2α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = blocks[me]
    for i in range(1, size):
        src, dst = (me - i) % size, (me + i) % size
        out[src] = ctx.sendrecv(blocks[dst], dst, src)
        if i + 1 < size:
            ctx.sendrecv(b"a", (me - i - 1) % size, (me + i + 1) % size, 1)
    return out


@algorithm("alltoall", "bruck", source="Bruck et al. 1997, MPICH short messages (SimGrid alltoall-bruck.cpp)")
def bruck(ctx: Ctx, blocks: list) -> list:
    """Local rotation, then ⌈log2 p⌉ steps: step k sends to rank+2^k every block whose
    index has bit k set (packed in one message), then the inverse rotation.
    Cost ⌈log2 p⌉ (α + nβ p/2)."""
    size, me = ctx.size, ctx.me
    rot = [blocks[(me + i) % size] for i in range(size)]
    pof2 = 1
    while pof2 < size:
        idx = [b for b in range(1, size) if b & pof2]
        got = ctx.sendrecv(tuple(rot[b] for b in idx), (me + pof2) % size, (me - pof2) % size)
        for b, v in zip(idx, got, strict=True):
            rot[b] = v
        pof2 *= 2
    tmp = rot[me + 1:] + rot[:me + 1]
    out = [None] * size
    for i in range(size):
        out[size - i - 1] = tmp[i]
    return out


def _mesh2(n: int) -> tuple[int, int] | None:
    x = isqrt(n)
    while x <= n // 2:
        if n % x == 0:
            i, j = x, n // x
            return (i, j) if i <= j else (j, i)
        x += 1
    return None


@algorithm("alltoall", "2dmesh", source="Faraj & Yuan, ICS 2005 (SimGrid alltoall-2dmesh.cpp)",
           requires=lambda p: _mesh2(p) is not None, requirement="at least 2 ranks", fallback="ring")
def mesh2d(ctx: Ctx, blocks: list) -> list:
    """Ranks on an X×Y mesh: everyone sends its whole buffer to its row, then forwards to
    each column member the Y blocks its row holds for it. Cost (X + Y − 2) α + (Y p + p) nβ."""
    size, me = ctx.size, ctx.me
    X, Y = _mesh2(size)  # type: ignore[misc]
    row = (me // Y) * Y
    col = me % Y
    rowdata: dict[int, list] = {me: list(blocks)}
    reqs = {row + i: ctx.irecv(row + i) for i in range(Y) if row + i != me}
    for i in range(Y):
        if row + i != me:
            ctx.send(tuple(blocks), row + i)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        rowdata[s] = list(r.payload)
    out: list = [None] * size
    for j in range(Y):
        out[row + j] = rowdata[row + j][me]
    reqs = {i * Y + col: ctx.irecv(i * Y + col) for i in range(X) if i * Y + col != me}
    for i in range(X):
        dst = i * Y + col
        if dst != me:
            ctx.send(tuple(rowdata[row + j][dst] for j in range(Y)), dst)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        base = (s // Y) * Y
        for j, b in enumerate(r.payload):
            out[base + j] = b
    return out


THROTTLE = 4  # MV2_ALLTOALL_THROTTLE_FACTOR / MPIR_PARAM_ALLTOALL_THROTTLE


@algorithm("alltoall", "mvapich2_scatter_dest", source="MVAPICH2/MPICH medium-message alltoall (SimGrid alltoall-mvapich-scatter-dest.cpp)")
def mvapich2_scatter_dest(ctx: Ctx, blocks: list) -> list:
    """Batches of 4 receives (from rank+i) and 4 sends (to rank−i), each batch waited for;
    the first batch includes a real message to oneself. Cost ⌈p/4⌉ (α + 4nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    bblock = min(THROTTLE, size)
    for ii in range(0, size, bblock):
        ss = min(bblock, size - ii)
        recvs = {}
        for i in range(ss):
            src = (me + i + ii) % size
            recvs[src] = ctx.irecv(src)
        sends = [ctx.isend(blocks[(me - i - ii) % size], (me - i - ii) % size) for i in range(ss)]
        ctx.waitall(list(recvs.values()) + sends)
        for s, r in recvs.items():
            out[s] = r.payload
    return out


# -- alltoallv / alltoallw -----------------------------------------------------------------
def v_bruck(ctx: Ctx, blocks: list) -> list:
    """MPICH's alltoallv (SimGrid calls it bruck): batches of 4 receives and 4 sends
    skipping oneself, each batch waited for. Cost ⌈p/4⌉ (α + 4nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = blocks[me]
    for ii in range(0, size, THROTTLE):
        ss = min(THROTTLE, size - ii)
        recvs = {}
        for i in range(ss):
            src = (me + i + ii) % size
            if src != me:
                recvs[src] = ctx.irecv(src)
        sends = []
        for i in range(ss):
            dst = (me - i - ii) % size
            if dst != me:
                sends.append(ctx.isend(blocks[dst], dst))
        ctx.waitall(list(recvs.values()) + sends)
        for s, r in recvs.items():
            out[s] = r.payload
    return out


def v_linear(ctx: Ctx, blocks: list) -> list:
    """All receives then all sends posted in rank order, one waitall (Open MPI's basic
    alltoallv and SMPI's MPI_Ialltoallv/MPI_Alltoallw). Cost ≈ α + (p−1) nβ per link."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = blocks[me]
    recvs = {i: ctx.irecv(i) for i in range(size) if i != me}
    sends = [ctx.isend(blocks[i], i) for i in range(size) if i != me]
    ctx.waitall(list(recvs.values()) + sends)
    for i, r in recvs.items():
        out[i] = r.payload
    return out


algorithm("alltoallv", "bruck", source="MPICH alltoallv, throttled isend/irecv (SimGrid alltoallv-bruck.cpp)")(v_bruck)
algorithm("alltoallv", "ompi_basic_linear", source="Open MPI coll_basic alltoallv_intra (SimGrid alltoallv-ompi-basic-linear.cpp)")(v_linear)
algorithm("alltoallv", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp ialltoallv (SMPI's MPI_Ialltoallv and 'default' alltoallv)")(v_linear)
algorithm("alltoallw", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp ialltoallw (SMPI's only MPI_Alltoallw)")(v_linear)
algorithm("alltoallw", "ring", source="ring schedule applied to alltoallw (smpy)")(ring)
for _name, _fn in (("pair", pair), ("ring", ring), ("pair_light_barrier", pair_light_barrier),
                   ("pair_mpi_barrier", pair_mpi_barrier), ("pair_one_barrier", pair_one_barrier),
                   ("ring_light_barrier", ring_light_barrier), ("ring_mpi_barrier", ring_mpi_barrier),
                   ("ring_one_barrier", ring_one_barrier)):
    _pof2 = POF2 if _name.startswith("pair") else {}
    algorithm("alltoallv", _name, source=f"SimGrid alltoallv-{_name.replace('_', '-')}.cpp", **_pof2)(_fn)
