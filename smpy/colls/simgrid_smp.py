"""SimGrid's own SMP-aware algorithms (Faraj/Yuan's STAR-MPI set, as SimGrid 3.32 ships
them): ranks are grouped ``num_core`` per node (the intra-node communicator's size when
nodes are uniform, else 1) and ``rank // num_core`` is the node, as SimGrid assumes.

* allreduce ``smp_rdb`` — binomial reduce in the node, recursive doubling among node
  leaders, binomial bcast in the node;
* allgather ``smp_simple`` — ring exchange in the node, all-to-all of node blocks among
  leaders, flat bcast of the whole vector in the node;
* allgather ``loosely_lr`` — a logical ring between nodes overlapped with all-to-all
  exchanges inside each node.

All pay SMPI's ``init_smp`` on first use. The allgathers need the size to be a multiple
of ``num_core`` (SimGrid throws otherwise; smpy runs ``ring`` and says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls import allgather as _allgather
from smpy.colls.allreduce import _smp_intra_bcast, _smp_intra_reduce
from smpy.colls.bcast import _remainder, _root_to_zero
from smpy.colls.core import Blob, BlockVector, cut
from smpy.colls.registry import algorithm
from smpy.colls.smp import smp_of

if TYPE_CHECKING:
    from smpy.colls.core import Ctx, Reduction


def _num_core(ctx: Ctx) -> int:
    info = smp_of(ctx)
    return info.intra_of[ctx.me].size if info.uniform else 1


@algorithm("allreduce", "smp_rdb", source="SimGrid allreduce-smp-rdb.cpp (Faraj & Yuan)",
           commutative_only=True, fallback="rdb")
def smp_rdb(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Binomial reduce inside each node, MPICH's recursive doubling (with its fold for a
    non-power-of-two number of nodes) among node leaders, binomial bcast inside each
    node. ≈ 2 log2 c (α + nβ) + log2(p/c) (α + nβ)."""
    nc = _num_core(ctx)
    size, me = ctx.size, ctx.me
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    buf = _smp_intra_reduce(ctx, data, red, nc)
    if intra_rank == 0:
        pof2 = 1
        while pof2 <= inter_size:
            pof2 <<= 1
        pof2 >>= 1
        rem = inter_size - pof2
        if inter_rank < 2 * rem:
            if inter_rank % 2 == 0:
                ctx.send(buf, me + nc)
                newrank = -1
            else:
                buf = red(ctx.recv(me - nc), buf)
                newrank = inter_rank // 2
        else:
            newrank = inter_rank - rem
        if newrank != -1:
            mask = 1
            while mask < pof2:
                newdst = newrank ^ mask
                dst = (newdst * 2 + 1 if newdst < rem else newdst + rem) * nc
                buf = red(ctx.sendrecv(buf, dst, dst), buf)
                mask <<= 1
        if inter_rank < 2 * rem:
            if inter_rank % 2:
                ctx.send(buf, me - nc)
            else:
                buf = ctx.recv(me + nc)
    return _smp_intra_bcast(ctx, buf, nc)


def _fits(ctx: Ctx, name: str, nc: int) -> bool:
    if ctx.size % nc:
        ctx.sel.note("allgather", name, f"the size is not a multiple of {nc} ranks per node", "ring")
        return False
    return True


@algorithm("allgather", "smp_simple", source="SimGrid allgather-smp-simple.cpp (Faraj & Yuan)")
def smp_simple(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Pairwise ring exchange of the blocks inside each node, then node leaders post all
    receives and sends of whole node blocks at once, then each leader sends the full
    vector to every other rank of its node (flat tree). ≈ (c−1)(α + nβ) + (p/c − 1) c nβ
    + (c−1)(α + pnβ)."""
    nc = _num_core(ctx)
    if not _fits(ctx, "smp_simple", nc):
        return _allgather.ring(ctx, block, sizes, elem)
    size, me = ctx.size, ctx.me
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    in_node = nc if inter_rank != inter_size - 1 else size - inter_rank * nc
    out: list[Any] = [None] * size
    out[me] = block
    base = inter_rank * nc
    for i in range(1, in_node):
        dst = base + (intra_rank + i) % in_node
        src = base + (intra_rank - i + in_node) % in_node
        out[src] = ctx.sendrecv(block, dst, src)
    if intra_rank == 0:
        recvs = []
        for i in range(1, inter_size):
            src = ((inter_rank - i + inter_size) % inter_size) * nc
            recvs.append((src, ctx.irecv(src)))
        sends = []
        mine = tuple(out[base:base + nc])
        for i in range(1, inter_size):
            sends.append(ctx.isend(mine, ((inter_rank + i) % inter_size) * nc))
        ctx.waitall([r for _, r in recvs] + sends)
        for src, r in recvs:
            out[src:src + nc] = list(r.payload)
        whole = tuple(out)
        for i in range(1, in_node):
            ctx.send(whole, me + i)
        return out
    return list(ctx.recv(base))


@algorithm("allgather", "loosely_lr", source="SimGrid allgather-loosely-lr.cpp (Faraj & Yuan)")
def loosely_lr(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Logical ring between nodes (each rank forwards to the same core of the next node)
    overlapped with non-blocking all-to-all exchanges inside the node of the blocks that
    just arrived. ≈ (p/c)(α + nβ) + (p/c)(c−1) nβ in the node."""
    nc = _num_core(ctx)
    if not _fits(ctx, "loosely_lr", nc):
        return _allgather.ring(ctx, block, sizes, elem)
    size, me = ctx.size, ctx.me
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    out: list[Any] = [None] * size
    out[me] = block
    recvs: list = []
    sends: list = []
    inter_dst = (me + nc) % size
    inter_src = (me - nc + size) % size
    for i in range(inter_size):
        cur = ((inter_rank - i + inter_size) % inter_size) * nc
        src_seg = ((inter_rank - 1 - i + inter_size) % inter_size) * nc + intra_rank
        inter_r = None
        for j in range(nc):
            if j == intra_rank and i != inter_size - 1:
                inter_r = ctx.irecv(inter_src)
                sends.append(ctx.isend(out[cur + intra_rank], inter_dst))
            if j != intra_rank:
                peer = inter_rank * nc + j
                recvs.append((cur + j, ctx.irecv(peer)))
                sends.append(ctx.isend(out[cur + intra_rank], peer))
        if inter_r is not None:
            out[src_seg] = ctx.wait(inter_r)
    ctx.waitall([r for _, r in recvs])
    for k, r in recvs:
        out[k] = r.payload
    ctx.waitall(sends)
    return out


@algorithm("allgather", "SMP_NTS", source="SimGrid allgather-SMP-NTS.cpp (Faraj & Yuan)")
def SMP_NTS(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Ring exchange inside each node, then a logical ring of node leaders passing whole
    node blocks (non-blocking, one tag per step), each block also forwarded down the
    node as a chain leader → +1 → +2 …; one node only: SimGrid's default allgather.
    ≈ (c−1)(α + nβ) + (p/c − 1)(α + c nβ) + chain latency."""
    nc = _num_core(ctx)
    if not _fits(ctx, "SMP_NTS", nc):
        return _allgather.ring(ctx, block, sizes, elem)
    size, me = ctx.size, ctx.me
    if size <= nc:
        return ctx.sel.run_named("allgather", "default", ctx, block, sizes, elem)
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    in_node = nc if inter_rank != inter_size - 1 else size - inter_rank * nc
    out: list[Any] = [None] * size
    out[me] = block
    base = inter_rank * nc
    for i in range(1, in_node):
        dst = base + (intra_rank + i) % in_node
        src = base + (intra_rank - i + in_node) % in_node
        out[src] = ctx.sendrecv(block, dst, src)

    def node_of(i: int) -> int:  # first rank of the node block received at step i
        return ((inter_rank - i - 1 + inter_size) % inter_size) * nc

    def put(i: int, payload: Any) -> None:
        out[node_of(i):node_of(i) + nc] = list(payload)

    if intra_rank == 0:
        src = ((inter_rank - 1 + inter_size) % inter_size) * nc
        dst = ((inter_rank + 1) % inter_size) * nc
        rreqs = [ctx.irecv(src, i) for i in range(inter_size - 1)]
        sreqs = [ctx.isend(tuple(out[base:base + nc]), dst, 0)]
        for i in range(inter_size - 1):
            put(i, ctx.wait(rreqs[i]))
            got = tuple(out[node_of(i):node_of(i) + nc])
            if i < inter_size - 2:
                sreqs.append(ctx.isend(got, dst, i + 1))
            if in_node > 1:
                ctx.send(got, me + 1, i + 1)
        ctx.waitall(sreqs)
    else:
        for i in range(inter_size - 1):
            got = ctx.recv(me - 1, i + 1)
            put(i, got)
            if intra_rank != in_node - 1:
                ctx.send(got, me + 1, i + 1)
    return out


SMP_BINARY_SEGMENT = 8192  # bcast_SMP_binary_segment_byte


@algorithm("bcast", "SMP_binary", source="SimGrid bcast-SMP-binary.cpp (Faraj & Yuan)")
def SMP_binary(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Root → 0, then a binary tree over nodes (node k feeds nodes 2k+1, 2k+2 through their
    leaders) and a binary tree inside each node, 8 KiB segments pipelined (blocking sends
    in the order inter-left, inter-right, intra-left, intra-right); the remainder of the
    last partial segment through the selected bcast. Non-uniform nodes: mpich's bcast.
    ≈ (log2(p/c) + log2 c + n/s)(α + sβ) with two sends per level."""
    info = smp_of(ctx)
    if not info.uniform:
        return ctx.sel.run_selector("bcast", "mpich", ctx, root, data, nbytes, elem)
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    nc = info.intra_of[me].size
    node, local = me // nc, me % nc
    base = node * nc
    num_core = size - base if base == (size // nc) * nc else nc
    kids = []
    if local == 0:
        kids += [c for c in ((node * 2 + 1) * nc, (node * 2 + 2) * nc) if c < size]
        parent = ((node - 1) // 2) * nc
    else:
        parent = base + (local - 1) // 2
    kids += [base + c for c in (local * 2 + 1, local * 2 + 2) if c < num_core]
    seg = max(1, SMP_BINARY_SEGMENT // elem)
    count = nbytes // elem
    data = _root_to_zero(ctx, root, data)
    if count <= seg:
        if me != 0:
            data = ctx.recv(parent)
        for k in kids:
            ctx.send(data, k)
        return data  # type: ignore[return-value]
    pipe = count // seg
    step = seg * elem
    if me == 0:
        segs = [data[i * step:(i + 1) * step] for i in range(pipe)]  # type: ignore[index]
        for i, s in enumerate(segs):
            for k in kids:
                ctx.send(s, k, i)
    else:
        reqs = [ctx.irecv(parent, i) for i in range(pipe)]
        if kids:
            segs = []
            for i, r in enumerate(reqs):
                s = ctx.wait(r)
                segs.append(s)
                for k in kids:
                    ctx.send(s, k, i)
        else:
            ctx.waitall(reqs)
            segs = [r.payload for r in reqs]
    head = b"".join(segs)
    if count % seg:
        return head + _remainder(ctx, root, data if me == root else None, pipe * step, nbytes, elem)
    return head


PIPELINE_SEGMENT = 4096  # allreduce_smp_binomial_pipeline_segment_size (elements)


@algorithm("allreduce", "smp_binomial_pipeline", source="SimGrid allreduce-smp-binomial-pipeline.cpp (P. Patarasuk)",
           commutative_only=True, fallback="rdb")
def smp_binomial_pipeline(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """``smp_binomial`` pipelined over segments of 4096 elements: at phase k, segment k is
    reduced in the node (binomial), k−1 among node leaders, k−2 broadcast among leaders,
    k−3 broadcast in the node. SimGrid drops the ``count % 4096`` last elements; smpy
    carries them in the last segment. ≈ (n/s + 3)·(log2 c + log2(p/c))(α + sβ)."""
    nc = _num_core(ctx)
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    if size == 1 or count == 0:
        return data
    pcount = min(PIPELINE_SEGMENT, count)
    pipe = count // pcount
    step = pcount * elem
    segs = [data[i * step:(i + 1) * step] for i in range(pipe)]
    segs[-1] += data[pipe * step:]
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    in_node = nc if inter_rank != inter_size - 1 else size - inter_rank * nc
    for phase in range(pipe + 3):
        if phase < pipe:
            mask = 1
            while mask < nc:
                if mask & intra_rank == 0:
                    if (intra_rank | mask) < in_node:  # SimGrid: src < p (see smp_binomial)
                        segs[phase] = red(ctx.recv(inter_rank * nc + (intra_rank | mask)), segs[phase])
                else:
                    ctx.send(segs[phase], inter_rank * nc + (intra_rank & ~mask))
                    break
                mask <<= 1
        if 0 < phase < pipe + 1 and intra_rank == 0:
            k = phase - 1
            mask = 1
            while mask < inter_size:
                if mask & inter_rank == 0:
                    src = (inter_rank | mask) * nc
                    if src < size:
                        segs[k] = red(ctx.recv(src), segs[k])
                else:
                    ctx.send(segs[k], (inter_rank & ~mask) * nc)
                    break
                mask <<= 1
        if 1 < phase < pipe + 2 and intra_rank == 0:
            k = phase - 2
            mask = 1
            while mask < inter_size:
                if inter_rank & mask:
                    segs[k] = ctx.recv((inter_rank - mask) * nc)
                    break
                mask <<= 1
            mask >>= 1
            while mask > 0:
                dst = (inter_rank + mask) * nc
                if dst < size:
                    ctx.send(segs[k], dst)
                mask >>= 1
        if phase > 2:
            k = phase - 3
            mask = 1
            while mask < in_node:
                if intra_rank & mask:
                    segs[k] = ctx.recv(inter_rank * nc + intra_rank - mask)
                    break
                mask <<= 1
            mask >>= 1
            while mask > 0:
                if intra_rank + mask < in_node:  # SimGrid: dst < p (crosses into the next node)
                    ctx.send(segs[k], inter_rank * nc + intra_rank + mask)
                mask >>= 1
    return b"".join(segs)


@algorithm("allreduce", "smp_rsag_lr", source="SimGrid allreduce-smp-rsag-lr.cpp (Faraj & Yuan)",
           commutative_only=True, fallback="rdb")
def smp_rsag_lr(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """``smp_rsag`` whose last block carries the ``count % nodes`` remainder: binomial
    reduce in the node, ring reduce-scatter then ring allgather of n/(p/c) blocks among
    node leaders, binomial bcast in the node. With fewer elements than nodes every block
    sits at SimGrid's "last segment" offset, so each ring message carries the whole
    vector (smpy moves the same bytes and keeps the result exact).
    ≈ 2 log2 c (α + nβ) + 2(p/c − 1)(α + nβ c/p)."""
    nc = _num_core(ctx)
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    intra_rank, inter_rank = me % nc, me // nc
    inter_size = (size + nc - 1) // nc
    buf = _smp_intra_reduce(ctx, data, red, nc)
    if intra_rank == 0 and inter_size > 1:
        seg, rem = divmod(count, inter_size)
        cnts = [seg] * inter_size
        cnts[-1] += rem

        def wire_of(b: int) -> int:  # SimGrid: offset == last_segment_ptr → seg + rem
            return (seg + rem if b * seg == (inter_size - 1) * seg else seg) * elem

        blocks = cut(buf, cnts, elem)
        to = ((inter_rank + 1) % inter_size) * nc
        frm = ((inter_rank - 1) % inter_size) * nc
        for i in range(inter_size - 1):
            s = (inter_rank - 1 - i) % inter_size
            r = (inter_rank - 2 - i) % inter_size
            got = ctx.sendrecv(Blob(blocks[s], wire_of(s)), to, frm, i)
            blocks[r] = red(got.obj, blocks[r])
        for i in range(inter_size - 1):
            s = (inter_rank - i) % inter_size
            r = (inter_rank - 1 - i) % inter_size
            blocks[r] = ctx.sendrecv(Blob(blocks[s], wire_of(s)), to, frm, i).obj
        buf = b"".join(blocks)
    return _smp_intra_bcast(ctx, buf, nc)


def _is_pof2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@algorithm("allreduce", "smp_rsag_rab", source="SimGrid allreduce-smp-rsag-rab.cpp (Faraj & Yuan)",
           commutative_only=True, fallback="rdb", requires=_is_pof2,
           requirement="a power-of-two number of ranks")
def smp_rsag_rab(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """Binomial reduce in the node, recursive-halving reduce-scatter then recursive-doubling
    allgather among the p/c node leaders, binomial bcast in the node. Message sizes are
    SimGrid's (step k of the reduce-scatter moves ⌊n/2^(k+1)⌋ elements, the allgather
    doubles 2⌊n/2^(L+1)⌋); SimGrid's own data is only right when p/c divides the count, smpy
    carries the exact pieces in messages of those sizes.
    ≈ 2 log2 c (α + nβ) + 2 log2(p/c) α + 2 (p/c − 1)/(p/c) nβ."""
    nc = _num_core(ctx)
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    intra_rank, inter_rank = me % nc, me // nc
    buf = _smp_intra_reduce(ctx, data, red, nc)
    nodes = size // nc
    if intra_rank == 0 and nodes > 1:
        seg = count // nodes
        cnts = [seg] * nodes
        cnts[-1] += count - seg * nodes
        vec = BlockVector(buf, cnts, elem)
        lo, hi = 0, nodes
        curr = count // 2
        mask = 1
        while mask < nodes:
            dst = (inter_rank ^ mask) * nc
            half = (hi - lo) // 2
            if inter_rank & mask:
                keep, give = (lo + half, hi), (lo, lo + half)
            else:
                keep, give = (lo, lo + half), (lo + half, hi)
            got = ctx.sendrecv(Blob(vec.run(*give), curr * elem), dst, dst).obj
            vec.reduce(keep[0], keep[1], got, red)
            lo, hi = keep
            mask *= 2
            curr //= 2
        curr *= 2
        mask >>= 1
        while mask >= 1:
            dst = (inter_rank ^ mask) * nc
            width = hi - lo
            got = ctx.sendrecv(Blob(vec.run(lo, hi), curr * elem), dst, dst).obj
            if inter_rank & mask:
                vec.put(lo - width, lo, got)
                lo -= width
            else:
                vec.put(hi, hi + width, got)
                hi += width
            curr *= 2
            mask >>= 1
        buf = vec.tobytes()
    return _smp_intra_bcast(ctx, buf, nc)
