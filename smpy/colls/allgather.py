"""MPI_Allgather and MPI_Allgatherv algorithms (SimGrid's allgather/ and allgatherv/,
``smpi/allgather:<name>``, ``smpi/allgatherv:<name>``).

Signature: ``fn(ctx, block, sizes, elem) -> list`` — this rank's block (bytes), every
rank's block size in bytes (known everywhere, as recvcounts are), the element size;
returns all blocks in rank order. Multi-block messages are tuples of blocks, so their
wire size is the sum of the blocks'. The schedules do not depend on block sizes, so the
same functions serve MPI_Allgatherv.
"""

from __future__ import annotations

from math import isqrt
from typing import TYPE_CHECKING

from smpy.colls.core import is_pof2
from smpy.colls.registry import ALGORITHMS, algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


@algorithm("allgather", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp iallgather (SMPI's MPI_Iallgather and 'default' allgather)")
def nbc_linear(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Every rank starts a send to and a receive from every other rank at once.
    Cost ≈ α + (p−1) nβ per link."""
    size, me = ctx.size, ctx.me
    reqs, recvs = [], [None] * size
    for o in range(size):
        if o != me:
            reqs.append(ctx.isend(block, o))
            recvs[o] = ctx.irecv(o)
            reqs.append(recvs[o])
    ctx.waitall(reqs)
    return [block if r is None else r.payload for r in recvs]


@algorithm("allgather", "ring", source="SimGrid allgather-ring.cpp")
def ring(ctx: Ctx, block: bytes, sizes: list[int] | None = None, elem: int = 1) -> list:
    """Direct exchange, not a ring: step i sends my block to rank+i and receives from
    rank−i (sendrecv). Cost (p−1)(α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = block
    for i in range(1, size):
        src = (me - i) % size
        out[src] = ctx.sendrecv(block, (me + i) % size, src)
    return out


@algorithm("allgather", "NTSLR", source="SimGrid allgather-NTSLR.cpp (Non-Topology-Specific Logical Ring)")
def NTSLR(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Logical ring: at step i forward the block received at step i−1 to rank+1.
    Cost (p−1)(α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = block
    to, frm = (me + 1) % size, (me - 1) % size
    for i in range(size - 1):
        out[(me - i - 1) % size] = ctx.sendrecv(out[(me - i) % size], to, frm, i)
    return out


@algorithm("allgather", "NTSLR_NB", source="SimGrid allgather-NTSLR-NB.cpp")
def NTSLR_NB(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Logical ring with every receive posted up front; each step sends the block received
    at the previous step. Cost (p−1)(α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = block
    to, frm = (me + 1) % size, (me - 1) % size
    rreqs = [ctx.irecv(frm, i) for i in range(size - 1)]
    for i in range(size - 1):
        s = ctx.isend(out[(me - i) % size], to, i)
        out[(me - i - 1) % size] = ctx.wait(rreqs[i])
        ctx.wait(s)
    return out


@algorithm("allgather", "rdb", source="MPICH recursive-doubling allgather (SimGrid allgather-rdb.cpp)")
def rdb(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Recursive doubling: step k exchanges the 2^k blocks gathered so far with rank ^ 2^k;
    MPICH's tree patch-up completes non-powers of two. Cost log2 p α + (p−1) nβ."""
    size, me = ctx.size, ctx.me
    out: list = [None] * size
    out[me] = block
    curr = 1
    last_recv = 0
    mask, i = 1, 0
    while mask < size:
        dst = me ^ mask
        dst_tree_root = (dst >> i) << i
        my_tree_root = (me >> i) << i
        if dst < size:
            got = ctx.sendrecv(tuple(out[my_tree_root:my_tree_root + curr]), dst, dst)
            out[dst_tree_root:dst_tree_root + len(got)] = list(got)
            last_recv = len(got)
            curr += last_recv
        if dst_tree_root + mask > size:
            completed = size - my_tree_root - mask
            k = mask.bit_length() - 1
            offset = my_tree_root + mask
            tmp_mask = mask >> 1
            while tmp_mask:
                dst = me ^ tmp_mask
                tree_root = (me >> k) << k
                if dst > me and me < tree_root + completed <= dst:
                    ctx.send(tuple(out[offset:offset + last_recv]), dst)
                elif dst < tree_root + completed <= me and dst < me:
                    got = ctx.recv(dst)
                    out[offset:offset + len(got)] = list(got)
                    last_recv = len(got)
                    curr += last_recv
                tmp_mask >>= 1
                k -= 1
        mask <<= 1
        i += 1
    return out


@algorithm("allgather", "bruck", source="Bruck et al. 1997 (SimGrid allgather-bruck.cpp; MPICH short messages)")
def bruck(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Step k sends the 2^k blocks held so far to rank − 2^k and receives as many from
    rank + 2^k; a last partial step completes non-powers of two, then a local rotation.
    Cost ⌈log2 p⌉ α + (p−1) nβ."""
    size, me = ctx.size, ctx.me
    tmp: list = [block]
    pof2 = 1
    while pof2 <= size // 2:
        got = ctx.sendrecv(tuple(tmp), (me - pof2) % size, (me + pof2) % size)
        tmp.extend(got)
        pof2 *= 2
    rem = size - pof2
    if rem:
        got = ctx.sendrecv(tuple(tmp[:rem]), (me - pof2) % size, (me + pof2) % size)
        tmp.extend(got)
    out = [None] * size
    for k, b in enumerate(tmp):
        out[(me + k) % size] = b
    return out


@algorithm("allgather", "pair", source="SimGrid allgather-pair.cpp",
           requires=is_pof2, requirement="a power-of-two number of ranks", fallback="ring")
def pair(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Pairwise exchange: step i swaps blocks with rank ^ i. Cost (p−1)(α + nβ)."""
    size, me = ctx.size, ctx.me
    out = [None] * size
    out[me] = block
    for i in range(1, size):
        out[me ^ i] = ctx.sendrecv(block, me ^ i, me ^ i)
    return out


@algorithm("allgather", "rhv", source="SimGrid allgather-rhv.cpp (recursive halving of distances)",
           requires=is_pof2, requirement="a power-of-two number of ranks", fallback="ring")
def rhv(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """First swap my block with the rank whose number is my bit-reversal, then recursive
    exchanges with rank ^ 2^k for decreasing k, doubling the data. Cost (log2 p + 1) α."""
    size, me = ctx.size, ctx.me
    out: list = [None] * size
    half = size // 2
    base = 0
    mask = 1
    while mask < size:
        if me & mask:
            base += half
        mask <<= 1
        half //= 2
    out[base] = ctx.sendrecv(block, base, base)
    mask >>= 1
    i = 1
    curr = 1
    while mask >= 1:
        dst = me ^ mask
        send_base = base
        if me & mask:
            recv_base = base - i
            base -= i
        else:
            recv_base = base + i
        got = ctx.sendrecv(tuple(out[send_base:send_base + curr]), dst, dst)
        out[recv_base:recv_base + curr] = list(got)
        curr *= 2
        i *= 2
        mask >>= 1
    return out


def _gb(ctx: Ctx, block: bytes, sizes: list[int], elem: int, gather: str) -> list:
    blocks = ctx.sel.run(gather, ctx.sub(0), 0, block, elem)
    data = b"".join(blocks) if ctx.me == 0 else None
    data = ctx.sel.run("bcast", ctx.sub(1), 0, data, sum(sizes), elem)
    out, pos = [], 0
    for n in sizes:
        out.append(data[pos:pos + n])
        pos += n
    return out


@algorithm("allgather", "GB", source="SimGrid allgather-GB.cpp (Gather + Bcast)")
def GB(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """The selected gather to 0, then the selected bcast of the p blocks.
    Cost gather + bcast of pn bytes."""
    return _gb(ctx, block, sizes, elem, "gather")


@algorithm("allgatherv", "GB", source="SimGrid allgatherv-GB.cpp (Gatherv + Bcast)")
def GB_v(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """The selected gatherv to 0, then the selected bcast of all the blocks.
    Cost gatherv + bcast of Σn bytes."""
    return _gb(ctx, block, sizes, elem, "gatherv")


@algorithm("allgather", "ompi_neighborexchange", source="Open MPI coll_tuned allgather_intra_neighborexchange (SimGrid allgather-ompi-neighborexchange.cpp)")
def ompi_neighborexchange(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Even ranks pair alternately with their right and left neighbours; after a first
    single-block swap, each step exchanges the two blocks received last. Odd p: ``ring``.
    Cost (p/2)(α + 2nβ)."""
    size, me = ctx.size, ctx.me
    if size % 2:
        return ring(ctx, block, sizes, elem)
    out: list = [None] * size
    out[me] = block
    if me % 2 == 0:
        neighbor = [(me + 1) % size, (me - 1) % size]
        recv_from = [me, me]
        step = [2, -2]
    else:
        neighbor = [(me - 1) % size, (me + 1) % size]
        recv_from = [neighbor[0], neighbor[0]]
        step = [-2, 2]
    out[neighbor[0]] = ctx.sendrecv(block, neighbor[0], neighbor[0])
    send_from = me if me % 2 == 0 else recv_from[0]
    for i in range(1, size // 2):
        par = i % 2
        recv_from[par] = (recv_from[par] + step[par]) % size
        got = ctx.sendrecv((out[send_from], out[(send_from + 1) % size]), neighbor[par], neighbor[par])
        out[recv_from[par]], out[(recv_from[par] + 1) % size] = got
        send_from = recv_from[par]
    return out


def _mesh2(n: int) -> tuple[int, int] | None:
    x = isqrt(n)
    while x <= n // 2:
        if n % x == 0:
            i, j = x, n // x
            return (i, j) if i <= j else (j, i)
        x += 1
    return None


def _mesh3(n: int) -> tuple[int, int, int] | None:
    x = round(n ** (1 / 3))
    if x ** 3 > n:
        x -= 1
    x = max(x, 1)
    while x <= n // 3:
        if n % (x * x) == 0:
            return x, x, n // (x * x)
        x += 1
    return None


@algorithm("allgather", "2dmesh", source="Faraj & Yuan, ICS 2005 (SimGrid allgather-2dmesh.cpp)",
           requires=lambda p: _mesh2(p) is not None, requirement="at least 2 ranks", fallback="ring")
def mesh2d(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Ranks on an X×Y mesh: direct exchange inside my row, then of whole rows inside my
    column. Cost (X + Y − 2) α + (p−1) nβ."""
    size, me = ctx.size, ctx.me
    X, Y = _mesh2(size)  # type: ignore[misc]
    out: list = [None] * size
    out[me] = block
    row = (me // Y) * Y
    col = me % Y
    reqs = {row + i: ctx.irecv(row + i) for i in range(Y) if row + i != me}
    for i in range(Y):
        if row + i != me:
            ctx.send(block, row + i)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        out[s] = r.payload
    reqs = {i * Y + col: ctx.irecv(i * Y + col) for i in range(X) if i * Y + col != me}
    mine = tuple(out[row:row + Y])
    for i in range(X):
        if i * Y + col != me:
            ctx.send(mine, i * Y + col)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        b = (s // Y) * Y
        out[b:b + Y] = list(r.payload)
    return out


@algorithm("allgather", "3dmesh", source="Faraj & Yuan, ICS 2005 (SimGrid allgather-3dmesh.cpp)",
           requires=lambda p: _mesh3(p) is not None, requirement="p = X·X·Z", fallback="ring")
def mesh3d(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Ranks on an X×X×Z mesh: direct exchange in my row, then rows in my column, then
    planes along Z. Cost (2X + Z − 3) α + (p−1) nβ."""
    size, me = ctx.size, ctx.me
    X, Y, Z = _mesh3(size)  # type: ignore[misc]
    two = X * Y
    out: list = [None] * size
    out[me] = block
    my_z = me // two
    row = (me // X) * X
    col = me % Y + my_z * two
    zbase = my_z * two
    reqs = {row + i: ctx.irecv(row + i) for i in range(Y) if row + i != me}
    for i in range(Y):
        if row + i != me:
            ctx.send(block, row + i)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        out[s] = r.payload
    reqs = {i * Y + col: ctx.irecv(i * Y + col) for i in range(X) if i * Y + col != me}
    mine = tuple(out[row:row + X])
    for i in range(X):
        if i * Y + col != me:
            ctx.send(mine, i * Y + col)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        b = (s // X) * X
        out[b:b + X] = list(r.payload)
    reqs = {}
    for i in range(1, Z):
        s = (me + i * two) % size
        reqs[s] = ctx.irecv(s)
    plane = tuple(out[zbase:zbase + two])
    for i in range(1, Z):
        ctx.send(plane, (me + i * two) % size)
    ctx.waitall(list(reqs.values()))
    for s, r in reqs.items():
        b = (s // two) * two
        out[b:b + two] = list(r.payload)
    return out



@algorithm("allgather", "spreading_simple", source="SimGrid allgather-spreading-simple.cpp")
def spreading_simple(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """All receives posted (rank+1, rank+2, … order), then all sends started, one waitall.
    Cost ≈ α + (p−1) nβ per link."""
    size, me = ctx.size, ctx.me
    recvs = {}
    for i in range(1, size):
        src = (me + i) % size
        recvs[src] = ctx.irecv(src)
    sends = [ctx.isend(block, (me + i) % size) for i in range(1, size)]
    ctx.waitall(list(recvs.values()) + sends)
    out = [None] * size
    out[me] = block
    for s, r in recvs.items():
        out[s] = r.payload
    return out


# -- allgatherv: the same schedules over blocks of different sizes -------------------------
for _name, _fn in (("nbc_linear", nbc_linear), ("ring", ring), ("pair", pair),
                   ("ompi_neighborexchange", ompi_neighborexchange), ("ompi_bruck", bruck),
                   ("mpich_rdb", rdb)):
    _a = ALGORITHMS["allgather"].get(_name)
    algorithm("allgatherv", _name, source=("Open MPI allgatherv_intra_bruck" if _name == "ompi_bruck"
                                           else "MPICH allgatherv recursive doubling" if _name == "mpich_rdb"
                                           else "SimGrid allgatherv-" + _name.replace("_", "-") + ".cpp"),
              requires=_a.requires if _a else None, requirement=_a.requirement if _a else "",
              fallback=_a.fallback if _a else "")(_fn)


@algorithm("allgatherv", "mpich_ring", source="MPICH allgatherv ring with pipelined chunks (SimGrid allgatherv-mpich-ring.cpp)")
def mpich_ring(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Logical ring whose blocks travel in chunks of max(smallest block, 256 KiB) bytes, a
    chunk received from the left while another goes to the right.
    Cost (p−1)(α + nβ) for equal blocks."""
    size, me = ctx.size, ctx.me
    counts = [s // elem for s in sizes]
    out: list = [None] * size
    out[me] = block
    parts: dict[int, list[bytes]] = {i: [] for i in range(size)}
    left, right = (me - 1) % size, (me + 1) % size
    total = sum(counts)
    torecv = total - counts[me]
    tosend = total - counts[right]
    mn = max(1, min(counts) if min(counts) * elem >= 32768 * 8 else (32768 * 8) // elem)
    sidx, ridx = me, left
    soff = roff = 0
    while tosend or torecv:
        sendnow = min(mn, counts[sidx] - soff) if tosend else 0
        recvnow = min(mn, counts[ridx] - roff) if torecv else 0
        src_block = out[sidx] if sidx == me else b"".join(parts[sidx])
        chunk = src_block[soff * elem:(soff + sendnow) * elem] if sendnow else b""
        if sendnow and recvnow:
            parts[ridx].append(ctx.sendrecv(chunk, right, left))
        elif sendnow:
            ctx.send(chunk, right)
        elif recvnow:
            parts[ridx].append(ctx.recv(left))
        tosend -= sendnow
        torecv -= recvnow
        soff += sendnow
        roff += recvnow
        if soff == counts[sidx]:
            soff = 0
            sidx = (sidx - 1) % size
        if roff == counts[ridx]:
            roff = 0
            ridx = (ridx - 1) % size
    for i in range(size):
        if i != me:
            out[i] = b"".join(parts[i])
    return out

