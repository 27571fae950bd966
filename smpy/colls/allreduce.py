"""MPI_Allreduce algorithms (SimGrid's allreduce/, ``smpi/allreduce:<name>``).

Signature: ``fn(ctx, data, red) -> bytes`` (see :mod:`smpy.colls.reduce` for operand
order and the ``commutative_only`` fallbacks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.colls.core import (
    BlockVector,
    Reduction,
    block_split,
    cut,
    is_pof2,
    pof2_floor,
    segment_count,
)
from smpy.colls.reduce import rab_any
from smpy.colls.registry import algorithm
from smpy.colls.smp import smp_of

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


def _fold(red: Reduction, parts: list[bytes]) -> bytes:
    acc = parts[0]
    for p in parts[1:]:
        acc = red(acc, p)
    return acc


@algorithm("allreduce", "redbcast", source="SimGrid allreduce-redbcast.cpp")
def redbcast(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """The selected reduce to rank 0, then the selected bcast from rank 0.
    Cost: reduce + bcast (2⌈log2 p⌉ (α + nβ) with binomial trees)."""
    res = ctx.sel.run("reduce", ctx.sub(0), 0, data, red)
    return ctx.sel.run("bcast", ctx.sub(1), 0, res, len(data), red.elem)


def _fold_in(ctx: Ctx, buf: bytes, red: Reduction, rem: int) -> tuple[bytes, int]:
    """Non-power-of-two prologue (MPICH): among the first 2·rem ranks, evens send their
    vector to the next odd rank and sit out (new rank -1); the others get new ranks
    0..pof2-1."""
    me = ctx.me
    if me < 2 * rem:
        if me % 2 == 0:
            ctx.send(buf, me + 1)
            return buf, -1
        return red(ctx.recv(me - 1), buf), me // 2
    return buf, me - rem


def _fold_out(ctx: Ctx, buf: bytes, rem: int) -> bytes:
    """Epilogue of :func:`_fold_in`: the odd ranks hand the result back to their even peer."""
    me = ctx.me
    if me < 2 * rem:
        if me % 2:
            ctx.send(buf, me - 1)
        else:
            buf = ctx.recv(me + 1)
    return buf


@algorithm("allreduce", "rdb", source="MPICH recursive-doubling allreduce (SimGrid allreduce-rdb.cpp)")
def rdb(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Recursive doubling: pairwise exchange of the whole vector with rank ^ 2^k among the
    largest power of two (the first 2·rem ranks pair up first; evens get the result back).

    Cost ⌈log2 p⌉ (α + nβ) (+ 2(α + nβ) when p is not a power of two)."""
    size, me = ctx.size, ctx.me
    pof2 = pof2_floor(size)
    rem = size - pof2
    buf = data
    buf, newrank = _fold_in(ctx, buf, red, rem)
    if newrank != -1:
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            got = ctx.sendrecv(buf, dst, dst)
            buf = red(got, buf) if dst < me else red(buf, got)
            mask <<= 1
    return _fold_out(ctx, buf, rem)


@algorithm("allreduce", "lr", source="SimGrid allreduce-lr.cpp (logical-ring reduce-scatter + allgather)",
           commutative_only=True, fallback="rdb")
def lr(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Ring reduce-scatter (p−1 steps) then ring allgather (p−1 steps) of n/p blocks; the
    ``count % p`` tail goes through the selected allreduce; fewer elements than ranks:
    ``redbcast``. Cost 2(p−1)(α + nβ/p)."""
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    if count < size:
        return redbcast(ctx, data, red)
    bc = count // size
    blocks = cut(data, [bc] * size, elem)
    mine = list(blocks)
    right, left = (me + 1) % size, (me - 1) % size
    for i in range(size - 1):
        s = (me - 1 - i) % size
        r = (me - 2 - i) % size
        got = ctx.sendrecv(mine[s], right, left, i)
        mine[r] = red(blocks[r], got)
    for i in range(size - 1):
        s = (me - i) % size
        r = (me - 1 - i) % size
        mine[r] = ctx.sendrecv(mine[s], right, left, i)
    head = b"".join(mine)
    if count % size:
        tail = ctx.sel.run("allreduce", ctx.sub(0), data[bc * size * elem:], red)
        return head + tail
    return head


def _rab_pieces(count: int, pof2: int) -> list[int]:
    cnts = [count // pof2] * pof2
    cnts[-1] = count - (count // pof2) * (pof2 - 1)
    return cnts


@algorithm("allreduce", "rab_rdb", source="MPICH Rabenseifner allreduce (SimGrid allreduce-rab-rdb.cpp)",
           commutative_only=True, fallback="rdb", in_place=True, deferred=True)
def rab_rdb(ctx: Ctx, data: bytes, red: Reduction, src: memoryview | None = None) -> bytes:
    """Rabenseifner: recursive-halving reduce-scatter then recursive-doubling allgather on
    the largest power of two (non-power-of-two ranks fold in first and get the result at
    the end). Cost 2 log2 p α + 2 (p−1)/p nβ.

    ``src``: ``data`` (a writable vector) is not filled yet and ``src`` holds its contents,
    as the send buffer of an allreduce working in its receive buffer: the first halving
    step sends from ``src`` and reduces into ``data`` (``got op src``), and the allgather
    writes the rest, so the vector is never copied (MPICH copies it first)."""
    size = ctx.size
    elem = red.elem
    count = len(data) // elem
    pof2 = pof2_floor(size)
    rem = size - pof2
    if src is not None and (pof2 == 1 or ctx.me < 2 * rem):  # folding ranks: copy it in
        data[:] = src  # type: ignore[index]
        src = None
    buf = data
    buf, newrank = _fold_in(ctx, buf, red, rem)
    if newrank != -1:
        cnts = _rab_pieces(count, pof2)
        vec = BlockVector(buf, cnts, elem, adopt=True)  # the caller's vector or _fold_in's result
        mask = 1
        send_idx = recv_idx = 0
        last_idx = pof2
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            if newrank < newdst:
                send_idx = recv_idx + pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, last_idx, recv_idx, send_idx
            else:
                recv_idx = send_idx + pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, recv_idx, recv_idx, last_idx
            vec.exchange_reduce(ctx, dst, s_lo, s_hi, r_lo, r_hi, red, src)
            src = None
            send_idx = recv_idx
            mask <<= 1
            if mask < pof2:
                last_idx = recv_idx + pof2 // mask
        mask >>= 1
        while mask > 0:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            if newrank < newdst:
                if mask != pof2 // 2:
                    last_idx += pof2 // (mask * 2)
                recv_idx = send_idx + pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, recv_idx, recv_idx, last_idx
            else:
                recv_idx = send_idx - pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, last_idx, recv_idx, send_idx
            vec.exchange_put(ctx, dst, s_lo, s_hi, r_lo, r_hi)
            if newrank > newdst:
                send_idx = recv_idx
            mask >>= 1
        buf = vec.result()
    return _fold_out(ctx, buf, rem)


@algorithm("allreduce", "rab", source="Rabenseifner 1997 (SimGrid reduce-rab.cpp allreduce__rab)")
def rab(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Rabenseifner's allreduce: pairwise folding of the first 2r ranks (p = 2^n + r),
    recursive-halving reduce-scatter then recursive-doubling allgather among 2^n ranks,
    then the folded ranks get the whole result (see :func:`smpy.colls.reduce.rab_any`).

    Cost 2n α + 2 (1 − 2^-n) nβ (+ 3α + 1½ nβ when p is not a power of two)."""
    out = rab_any(ctx, 0, data, red, True)
    assert out is not None
    return out


@algorithm("allreduce", "rab1", source="SimGrid allreduce-rab1.cpp (recursive-halving reduce-scatter + selected allgather)",
           commutative_only=True, fallback="rdb", requires=is_pof2, requirement="a power-of-two number of ranks")
def rab1(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Recursive-halving reduce-scatter (vector padded to a multiple of p), then the
    selected allgather of the n/p pieces. Cost log2 p α + (p−1)/p nβ + allgather."""
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    if count % size:
        share_cnt = (count + size) // size
        newcnt = share_cnt * size
        buf = data + b"\0" * ((newcnt - count) * elem)
    else:
        newcnt = count
        buf = data
    share = newcnt // size
    vec = BlockVector(buf, [share] * size, elem)
    send_idx = recv_idx = 0
    mask = size // 2
    while mask > 0:
        dst = me ^ mask
        n = newcnt // (size // mask) // share
        if me < dst:
            send_idx = recv_idx + mask
        else:
            recv_idx = send_idx + mask
        vec.reduce(recv_idx, recv_idx + n, ctx.sendrecv(vec.run(send_idx, send_idx + n), dst, dst), red)
        send_idx = recv_idx
        mask >>= 1
    mine = vec.block(recv_idx)
    blocks = ctx.sel.run("allgather", ctx.sub(0), mine, [len(mine)] * size, elem)
    return b"".join(blocks)[:count * elem]


@algorithm("allreduce", "rab2", source="SimGrid allreduce-rab2.cpp (selected alltoall + local reduce + selected allgather)",
           commutative_only=True, fallback="rdb")
def rab2(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Alltoall of the n/p blocks (vector padded to a multiple of p), local reduction of
    the p copies of my block, allgather of the results. Cost alltoall + allgather."""
    size = ctx.size
    elem = red.elem
    count = len(data) // elem
    if count % size:
        send_size = size if count < size else (count + size) // size
        buf = data + b"\0" * ((send_size * size - count) * elem)
    else:
        send_size = count // size
        buf = data
    got = ctx.sel.run("alltoall", ctx.sub(0), cut(buf, [send_size] * size, elem))
    mine = _fold(red, list(got))
    blocks = ctx.sel.run("allgather", ctx.sub(1), mine, [len(mine)] * size, elem)
    return b"".join(blocks)[:count * elem]


RING_SEGSIZE = 1 << 20  # bytes per segment of ompi_ring_segmented (Open MPI: 1 MiB)


def _get(blocks: list[bytes], ph: list[tuple[int, int]], b: int) -> bytes:
    o, n = ph[b]
    return blocks[b][o:o + n]


def _put(blocks: list[bytes], ph: list[tuple[int, int]], b: int, v: bytes) -> None:
    o, n = ph[b]
    blocks[b] = blocks[b][:o] + v + blocks[b][o + n:]


@algorithm("allreduce", "ompi_ring_segmented", source="Open MPI coll_tuned allreduce_intra_ring_segmented (SimGrid allreduce-ompi-ring-segmented.cpp)",
           commutative_only=True, fallback="rdb")
def ompi_ring_segmented(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Ring allreduce whose reduce-scatter runs in phases of 1 MiB segments (one receive
    ahead); then a ring allgather of the blocks. Below p·1 MiB: ``lr``.

    Cost 2(p−1) α per phase + 2 (p−1)/p nβ."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data
    elem = red.elem
    count = len(data) // elem
    segcount = segment_count(RING_SEGSIZE, elem, count)
    if count < size * segcount:
        return lr(ctx, data, red)
    num_phases = count // (size * segcount)
    if count % (size * segcount) >= size and count % (size * segcount) > (size * segcount) // 2:
        num_phases += 1
    split_rank, early, late = block_split(count, size)
    bcounts = [early if b < split_rank else late for b in range(size)]
    boffs = [b * early if b < split_rank else b * late + split_rank for b in range(size)]
    mine = [data[boffs[b] * elem:(boffs[b] + bcounts[b]) * elem] for b in range(size)]

    def piece(b: int, phase: int) -> tuple[int, int]:
        split_phase, ep, lp = block_split(bcounts[b], num_phases)
        n = ep if phase < split_phase else lp
        off = phase * ep if phase < split_phase else phase * lp + split_phase
        return off * elem, n * elem

    send_to, recv_from = (me + 1) % size, (me - 1) % size
    for phase in range(num_phases):
        ph = [piece(b, phase) for b in range(size)]
        reqs = [ctx.irecv(recv_from), None]
        inbi = 0
        ctx.send(_get(mine, ph, me), send_to)
        for k in range(2, size):
            prevblock = (me + size - k + 1) % size
            inbi ^= 1
            reqs[inbi] = ctx.irecv(recv_from)
            got = ctx.wait(reqs[inbi ^ 1])
            _put(mine, ph, prevblock, red(got, _get(mine, ph, prevblock)))
            ctx.send(_get(mine, ph, prevblock), send_to)
        got = ctx.wait(reqs[inbi])
        b = (me + 1) % size
        _put(mine, ph, b, red(got, _get(mine, ph, b)))
    for k in range(size - 1):
        recv_data_from = (me + size - k) % size
        send_data_from = (me + 1 + size - k) % size
        mine[recv_data_from] = ctx.sendrecv(mine[send_data_from], send_to, recv_from)
    return b"".join(mine)


def _node_size(size: int, me: int, nc: int) -> int:
    inter_size = (size + nc - 1) // nc
    return nc if me // nc != inter_size - 1 else size - (me // nc) * nc


def _smp_intra_reduce(ctx: Ctx, buf: bytes, red: Reduction, nc: int) -> bytes:
    size, me = ctx.size, ctx.me
    intra_rank, inter_rank = me % nc, me // nc
    in_node = _node_size(size, me, nc)
    mask = 1
    while mask < nc:
        if mask & intra_rank == 0:
            # SimGrid tests src < p only: with a non-power-of-two node size it then
            # receives from the next node's ranks (which never send)
            if (intra_rank | mask) < in_node:
                src = inter_rank * nc + (intra_rank | mask)
                buf = red(buf, ctx.recv(src))
        else:
            ctx.send(buf, inter_rank * nc + (intra_rank & ~mask))
            break
        mask <<= 1
    return buf


def _smp_intra_bcast(ctx: Ctx, buf: bytes, nc: int) -> bytes:
    size, me = ctx.size, ctx.me
    intra_rank, inter_rank = me % nc, me // nc
    in_node = _node_size(size, me, nc)
    mask = 1
    while mask < in_node:
        if intra_rank & mask:
            buf = ctx.recv(inter_rank * nc + intra_rank - mask)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if intra_rank + mask < in_node:  # SimGrid: dst < p (crosses into the next node)
            ctx.send(buf, inter_rank * nc + intra_rank + mask)
        mask >>= 1
    return buf


@algorithm("allreduce", "smp_binomial", source="SimGrid allreduce-smp-binomial.cpp",
           commutative_only=True, fallback="rdb")
def smp_binomial(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Binomial reduce inside each node (c ranks per node, rank // c is the node), binomial
    reduce then bcast among node leaders, binomial bcast inside each node. Pays SMPI's
    ``init_smp`` on first use. ≈ 2(log2 c + log2(p/c))(α + nβ)."""
    info = smp_of(ctx)
    nc = info.num_core if info.uniform else 1
    size, me = ctx.size, ctx.me
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    buf = _smp_intra_reduce(ctx, data, red, nc)
    if intra_rank == 0:
        mask = 1
        while mask < inter_size:
            if mask & inter_rank == 0:
                src = (inter_rank | mask) * nc
                if src < size:
                    buf = red(buf, ctx.recv(src))
            else:
                ctx.send(buf, (inter_rank & ~mask) * nc)
                break
            mask <<= 1
        mask = 1
        while mask < inter_size:
            if inter_rank & mask:
                buf = ctx.recv((inter_rank - mask) * nc)
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            dst = (inter_rank + mask) * nc
            if inter_rank < inter_size and dst < size:
                ctx.send(buf, dst)
            mask >>= 1
    return _smp_intra_bcast(ctx, buf, nc)


@algorithm("allreduce", "smp_rsag", source="SimGrid allreduce-smp-rsag.cpp",
           commutative_only=True, fallback="rdb")
def smp_rsag(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Binomial reduce inside each node, ring reduce-scatter + ring allgather among node
    leaders, binomial bcast inside each node. Pays SMPI's ``init_smp`` on first use.
    SimGrid leaves the ``count % nodes`` last elements unreduced across nodes; smpy folds
    them into the last block. ≈ 2 log2 c (α + nβ) + 2(p/c − 1)(α + nβ c/p)."""
    info = smp_of(ctx)
    nc = info.num_core if info.uniform else 1
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    buf = _smp_intra_reduce(ctx, data, red, nc)
    if intra_rank == 0 and inter_size > 1:
        seg = count // inter_size
        cnts = [seg] * inter_size
        cnts[-1] = count - seg * (inter_size - 1)
        blocks = cut(buf, cnts, elem)
        to = ((inter_rank + 1) % inter_size) * nc
        frm = ((inter_rank - 1) % inter_size) * nc
        for i in range(inter_size - 1):
            s = (inter_rank - 1 - i) % inter_size
            r = (inter_rank - 2 - i) % inter_size
            got = ctx.sendrecv(blocks[s], to, frm, i)
            blocks[r] = red(got, blocks[r])
        for i in range(inter_size - 1):
            s = (inter_rank - i) % inter_size
            r = (inter_rank - 1 - i) % inter_size
            blocks[r] = ctx.sendrecv(blocks[s], to, frm, i)
        buf = b"".join(blocks)
    return _smp_intra_bcast(ctx, buf, nc)


@algorithm("allreduce", "mvapich2_two_level", source="MVAPICH2 two-level allreduce (SimGrid allreduce-mvapich-two-level.cpp)",
           commutative_only=True, fallback="rdb")
def mvapich2_two_level(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Allreduce inside each node (MPICH selection), recursive doubling among node leaders,
    then the selected bcast inside each node. Pays SMPI's ``init_smp`` on first use."""
    info = smp_of(ctx)
    me = ctx.me
    if not data:
        return data
    intra = ctx.on(info.intra_of[me], 0)
    # MV2_Allreduce_intra_function / MV2_Allreducection: mpich / rdb unless the mvapich2
    # selector set them; its intra "reduce" entries run the selected reduce to rank 0
    state = getattr(ctx.sel, "mv2", {})
    intra_fn = state.get("allreduce_intra") or "mpich"
    if intra_fn in ("MPIR_Allreduce_reduce_shmem_MV2", "MPIR_Allreduce_reduce_p2p_MV2"):
        buf = ctx.sel.run("reduce", intra, 0, data, red)
    else:
        buf = ctx.sel.run_named("allreduce", intra_fn, intra, data, red)
    if intra.me == 0 and intra.size != ctx.size:
        inter = "rdb" if (state.get("allreduce_inter") or "rdb") == "rdb" else "mvapich2_rs"
        buf = ctx.sel.run_named("allreduce", inter, ctx.on(info.leaders, 1), buf, red)
    return ctx.sel.run("bcast", ctx.on(info.intra_of[me], 2), 0, buf if intra.me == 0 else None, len(data), red.elem)


@algorithm("allreduce", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp iallreduce (SMPI's MPI_Iallreduce)")
def nbc_linear(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Every rank starts a send to and a receive from every other rank, then folds the p
    contributions in rank order. Cost ≈ α + (p−1) nβ per link."""
    size, me = ctx.size, ctx.me
    reqs: list = []
    recvs: list = [None] * size
    for o in range(size):
        if o != me:
            reqs.append(ctx.isend(data, o))
            recvs[o] = ctx.irecv(o)
            reqs.append(recvs[o])
    ctx.waitall(reqs)
    return _fold(red, [data if r is None else r.payload for r in recvs])
