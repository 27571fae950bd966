"""MPI_Reduce_scatter (and _block) algorithms (SimGrid's reduce_scatter/,
``smpi/reduce_scatter:<name>``).

Signature: ``fn(ctx, data, counts, red) -> bytes`` — ``data`` is the whole packed vector
(``sum(counts)`` elements), ``counts[i]`` the elements rank i receives; returns my block,
reduced over all ranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.colls.core import BlockVector, Reduction, cut, is_pof2, pof2_floor
from smpy.colls.registry import algorithm

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


@algorithm("reduce_scatter", "default", source="SimGrid smpi_default_selector.cpp reduce_scatter__default (Open MPI's 'non-overlapping')")
def default(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """The reduce of the 'default' selector to rank 0, then SMPI's linear scatterv;
    irregular counts go to the MPICH selection. Cost reduce + scatter."""
    if any(c != counts[0] for c in counts):
        return ctx.sel.run_selector("reduce_scatter", "mpich", ctx, data, counts, red)
    res = ctx.sel.run_selector("reduce", "default", ctx.sub(0), 0, data, red)
    blocks = cut(res, counts, red.elem) if ctx.me == 0 else None
    return ctx.sel.run_named("scatterv", "nbc_linear", ctx.sub(1), 0, blocks, red.elem)


@algorithm("reduce_scatter", "ompi_basic_recursivehalving", source="Open MPI coll_basic reduce_scatter_intra_basic_recursivehalving (SimGrid reduce_scatter-ompi.cpp)",
           commutative_only=True, fallback="ompi_butterfly")
def ompi_basic_recursivehalving(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Fold the first 2·rem ranks pairwise, recursive halving of the vector on the largest
    power of two, then odd ranks hand their neighbour its block. (Open MPI skips a step's
    exchange when either direction is empty, which loses data with zero counts; smpy
    moves each non-empty direction.)
    Cost log2 p α + (p−1)/p nβ (+ α + nβ)."""
    size, me = ctx.size, ctx.me
    elem = red.elem
    if sum(counts) == 0:
        return b""
    blocks = cut(data, counts, elem)
    tmp_size = pof2_floor(size)
    remain = size - tmp_size
    if me < 2 * remain:
        if me % 2 == 0:
            ctx.send(data, me + 1)
            tmp_rank = -1
        else:
            blocks = [red(a, b) for a, b in zip(cut(ctx.recv(me - 1), counts, elem), blocks, strict=True)]
            tmp_rank = me // 2
    else:
        tmp_rank = me - remain
    if tmp_rank >= 0:
        # merged blocks: tmp block i covers ranks (2i, 2i+1) for i < remain
        groups = [[2 * i, 2 * i + 1] if i < remain else [i + remain] for i in range(tmp_size)]
        mask = tmp_size >> 1
        send_index = recv_index = 0
        last_index = tmp_size
        while mask > 0:
            tmp_peer = tmp_rank ^ mask
            peer = tmp_peer * 2 + 1 if tmp_peer < remain else tmp_peer + remain
            if tmp_rank < tmp_peer:
                send_index = recv_index + mask
                s_rng, r_rng = range(send_index, last_index), range(recv_index, send_index)
            else:
                recv_index = send_index + mask
                s_rng, r_rng = range(send_index, recv_index), range(recv_index, last_index)
            s_ranks = [r for g in s_rng for r in groups[g]]
            r_ranks = [r for g in r_rng for r in groups[g]]
            send_count = sum(counts[r] for r in s_ranks)
            recv_count = sum(counts[r] for r in r_ranks)
            # Open MPI skips the exchange when either side is empty, losing contributions
            # to non-empty blocks; here each direction only needs data to move
            req = ctx.irecv(peer) if recv_count > 0 else None
            if send_count > 0:
                ctx.send(tuple(blocks[r] for r in s_ranks), peer)
            if req is not None:
                got = ctx.wait(req)
                for r, g in zip(r_ranks, got, strict=True):
                    blocks[r] = red(g, blocks[r])
            send_index = recv_index
            last_index = recv_index + mask
            mask >>= 1
    if me < 2 * remain:
        if me % 2 == 0:
            if counts[me]:
                return ctx.recv(me + 1)
            return b""
        if counts[me - 1]:
            ctx.send(blocks[me - 1], me - 1)
    return blocks[me]


@algorithm("reduce_scatter", "ompi_ring", source="Open MPI coll_tuned reduce_scatter_intra_ring (SimGrid reduce_scatter-ompi.cpp)",
           commutative_only=True, fallback="ompi_butterfly")
def ompi_ring(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Ring: each block travels p−1 hops, accumulating one contribution per hop, one
    receive kept ahead. Cost (p−1)(α + nβ/p)."""
    size, me = ctx.size, ctx.me
    blocks = cut(data, counts, red.elem)
    if size == 1:
        return blocks[0]
    send_to, recv_from = (me + 1) % size, (me - 1) % size
    reqs = [ctx.irecv(recv_from), None]
    inbi = 0
    ctx.send(blocks[recv_from], send_to)
    for k in range(2, size):
        prev = (me + size - k) % size
        inbi ^= 1
        reqs[inbi] = ctx.irecv(recv_from)
        blocks[prev] = red(ctx.wait(reqs[inbi ^ 1]), blocks[prev])
        ctx.send(blocks[prev], send_to)
    return red(ctx.wait(reqs[inbi]), blocks[me])


def _mirror(x: int, nbits: int) -> int:
    return int(format(x, f"0{nbits}b")[::-1], 2) if nbits else 0


@algorithm("reduce_scatter", "ompi_butterfly", source="Open MPI coll_base reduce_scatter_intra_butterfly (SimGrid reduce_scatter-ompi.cpp)")
def ompi_butterfly(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Butterfly: recursive halving with the low bit first (so every partial result covers
    consecutive ranks: exact for non-commutative ops), then each rank sends the block it
    ended with to its owner (mirror permutation). Cost log2 p α + (p−1)/p nβ."""
    size, me = ctx.size, ctx.me
    elem = red.elem
    blocks = cut(data, counts, elem)
    if size < 2:
        return blocks[me]
    pof2 = pof2_floor(size)
    rem = size - pof2
    log2 = pof2.bit_length() - 1
    if me < 2 * rem:
        if me % 2 == 0:
            ctx.send(data, me + 1)
            vrank = -1
        else:
            blocks = [red(a, b) for a, b in zip(cut(ctx.recv(me - 1), counts, elem), blocks, strict=True)]
            vrank = me // 2
    else:
        vrank = me - rem

    def ranks_of(lo: int, hi: int) -> list[int]:  # merged blocks lo..hi → real ranks
        a = lo * 2 if lo < rem else lo + rem
        b = hi * 2 + 1 if hi < rem else hi + rem
        return list(range(a, b + 1))

    if vrank != -1:
        nblocks = pof2
        send_index = recv_index = 0
        mask = 1
        while mask < pof2:
            vpeer = vrank ^ mask
            peer = vpeer * 2 + 1 if vpeer < rem else vpeer + rem
            nblocks //= 2
            if vrank & mask == 0:
                send_index += nblocks
            else:
                recv_index += nblocks
            s_ranks = ranks_of(send_index, send_index + nblocks - 1)
            r_ranks = ranks_of(recv_index, recv_index + nblocks - 1)
            got = ctx.sendrecv(tuple(blocks[r] for r in s_ranks), peer, peer)
            for r, g in zip(r_ranks, got, strict=True):
                blocks[r] = red(blocks[r], g) if vrank < vpeer else red(g, blocks[r])
            send_index = recv_index
            mask <<= 1
        vpeer = _mirror(vrank, log2)
        peer = vpeer * 2 + 1 if vpeer < rem else vpeer + rem
        index = 2 * send_index if send_index < rem else rem + send_index
        if vpeer < rem:
            ctx.send(blocks[index], peer - 1)
            index += 1
        if vpeer != vrank:
            return ctx.sendrecv(blocks[index], peer, peer)
        return blocks[me]
    vpeer = _mirror((me + 1) // 2, log2)
    peer = vpeer * 2 + 1 if vpeer < rem else vpeer + rem
    return ctx.recv(peer)


@algorithm("reduce_scatter", "mpich_pair", source="MPICH reduce_scatter pairwise exchange (SimGrid reduce_scatter-mpich.cpp)",
           commutative_only=True, fallback="mpich_rdb")
def mpich_pair(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Step i sends rank+i its block and receives mine from rank−i.
    Cost (p−1)(α + nβ/p)."""
    size, me = ctx.size, ctx.me
    blocks = cut(data, counts, red.elem)
    acc = blocks[me]
    for i in range(1, size):
        src, dst = (me - i) % size, (me + i) % size
        got = ctx.sendrecv(blocks[dst], dst, src)
        acc = red(got, acc) if src < me else red(acc, got)
    return acc


@algorithm("reduce_scatter", "mpich_rdb", source="MPICH reduce_scatter recursive doubling (SimGrid reduce_scatter-mpich.cpp)")
def mpich_rdb(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Recursive doubling on the whole vector minus the blocks the partner's subtree
    already owns (with MPICH's patch-up for non-powers of two); exact for non-commutative
    ops. Cost log2 p α + n(log2 p − (p−1)/p) β."""
    size, me = ctx.size, ctx.me
    results: list = cut(data, counts, red.elem)
    recvbuf: list = [None] * size
    mask, i = 1, 0
    while mask < size:
        dst = me ^ mask
        dst_tree_root = (dst >> i) << i
        my_tree_root = (me >> i) << i
        send_idx = [j for j in range(size) if not my_tree_root <= j < my_tree_root + mask]
        recv_idx = [j for j in range(size) if not dst_tree_root <= j < dst_tree_root + mask]
        received = False
        if dst < size:
            got = ctx.sendrecv(tuple(results[j] for j in send_idx), dst, dst)
            recvbuf = [None] * size
            for j, g in zip(recv_idx, got, strict=True):
                recvbuf[j] = g
            received = True
        if dst_tree_root + mask > size:
            completed = size - my_tree_root - mask
            k = mask.bit_length() - 1
            tmp_mask = mask >> 1
            while tmp_mask:
                dst = me ^ tmp_mask
                tree_root = (me >> k) << k
                if dst > me and me < tree_root + completed <= dst:
                    ctx.send(tuple(recvbuf[j] for j in recv_idx), dst)
                elif dst < tree_root + completed <= me and dst < me:
                    got = ctx.recv(dst)
                    recvbuf = [None] * size
                    for j, g in zip(recv_idx, got, strict=True):
                        recvbuf[j] = g
                    received = True
                tmp_mask >>= 1
                k -= 1
        if received:
            for j in recv_idx:
                if recvbuf[j] is not None:
                    if red.commutative or dst_tree_root < my_tree_root:
                        results[j] = red(recvbuf[j], results[j])
                    else:
                        results[j] = red(results[j], recvbuf[j])
        mask <<= 1
        i += 1
    return results[me]


@algorithm("reduce_scatter", "mpich_noncomm", source="MPICH reduce_scatter for non-commutative ops (SimGrid reduce_scatter-mpich.cpp)",
           requires=is_pof2, requirement="a power-of-two number of ranks", fallback="mpich_rdb")
def mpich_noncomm(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Recursive halving on blocks laid out in mirror (bit-reversed) order, so partial
    results always cover consecutive ranks; equal counts only (else ``mpich_rdb``).
    Cost log2 p α + (p−1)/p nβ."""
    size, me = ctx.size, ctx.me
    if any(c != counts[0] for c in counts):
        return mpich_rdb(ctx, data, counts, red)
    log2 = size.bit_length() - 1
    blocks = cut(data, counts, red.elem)
    buf: list = [None] * size
    for i in range(size):
        buf[_mirror(i, log2)] = blocks[i]
    vec = BlockVector(b"".join(buf), counts, red.elem)  # equal counts: the mirrored layout
    lo, n = 0, size
    for k in range(log2):
        peer = me ^ (1 << k)
        n //= 2
        if me > peer:
            keep, give = lo + n, lo
        else:
            keep, give = lo, lo + n
        vec.reduce(keep, keep + n, ctx.sendrecv(vec.run(give, give + n), peer, peer), red, got_first=me > peer)
        lo = keep
    return vec.block(lo)


@algorithm("reduce_scatter", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp ireduce_scatter (SMPI's MPI_Ireduce_scatter)")
def nbc_linear(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """Every rank sends each other rank its block and receives p−1 copies of its own,
    folded in rank order. Cost ≈ α + (p−1)/p nβ per link."""
    size, me = ctx.size, ctx.me
    blocks = cut(data, counts, red.elem)
    reqs, recvs = [], [None] * size
    for o in range(size):
        if o != me:
            reqs.append(ctx.isend(blocks[o], o))
            recvs[o] = ctx.irecv(o)
            reqs.append(recvs[o])
    ctx.waitall(reqs)
    parts = [blocks[me] if r is None else r.payload for r in recvs]
    acc = parts[0]
    for p in parts[1:]:
        acc = red(acc, p)
    return acc

