"""MPI_Bcast algorithms (SimGrid's src/smpi/colls/bcast/, names as ``smpi/bcast:<name>``).

Signature: ``fn(ctx, root, data, nbytes, elem) -> bytes`` — ``data`` is the packed buffer
at the root (None elsewhere), ``nbytes`` its size (every rank knows it, as every rank
knows ``count``), ``elem`` the datatype size: segments are cut at element boundaries.
Costs use α (latency), β (s/byte), p ranks, n bytes, s segment bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.colls import topo
from smpy.colls.core import segment_count
from smpy.colls.registry import algorithm
from smpy.colls.smp import smp_of

if TYPE_CHECKING:
    from smpy.colls.core import Ctx

SEG_8K = 8192  # bcast_NTSL/NTSB/flattree/SMP_linear segment size in bytes (SimGrid)


def _segments(data: bytes, seg_bytes: int) -> list[bytes]:
    return [data[i:i + seg_bytes] for i in range(0, len(data), seg_bytes)]


@algorithm("bcast", "binomial_tree", source="SimGrid bcast-binomial-tree.cpp (MPICH short-message bcast)")
def binomial_tree(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Binomial tree on ranks relative to the root, blocking sends to children.

    ⌈log2 p⌉ steps; cost ⌈log2 p⌉ (α + nβ)."""
    size, me = ctx.size, ctx.me
    rel = (me - root) % size
    mask = 1
    while mask < size:
        if rel & mask:
            data = ctx.recv((me - mask) % size)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < size:
            ctx.send(data, (me + mask) % size)
        mask >>= 1
    return data  # type: ignore[return-value]


@algorithm("bcast", "flattree", source="SimGrid bcast-flattree.cpp")
def flattree(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """The root posts one non-blocking send per rank and waits for them all.

    One step; cost ≈ α + (p−1) nβ at the root's link."""
    if ctx.me != root:
        return ctx.recv(root)
    ctx.waitall([ctx.isend(data, i) for i in range(ctx.size) if i != root])
    return data  # type: ignore[return-value]


@algorithm("bcast", "flattree_pipeline", source="SimGrid bcast-flattree-pipeline.cpp")
def flattree_pipeline(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Flat tree sending 8 KiB segments one after the other (blocking), rank by rank.

    (p−1)·n/s sends from the root. SimGrid drops the ``count % segment`` remainder
    elements; smpy sends them as one more segment."""
    seg = max(1, SEG_8K // elem)
    count = nbytes // elem
    if count // seg == 0:
        return flattree(ctx, root, data, nbytes, elem)
    seg_bytes = seg * elem
    if ctx.me != root:
        nseg = -(-nbytes // seg_bytes)
        reqs = [ctx.irecv(root) for _ in range(nseg)]
        ctx.waitall(reqs)
        return b"".join(r.payload for r in reqs)
    segs = _segments(data, seg_bytes)  # type: ignore[arg-type]
    for j in range(ctx.size):
        if j != root:
            for s in segs:
                ctx.send(s, j)
    return data  # type: ignore[return-value]


def _root_to_zero(ctx: Ctx, root: int, data: bytes | None) -> bytes | None:
    """SimGrid's NTS*/SMP_* algorithms start by moving the whole buffer from root to 0."""
    if root != 0:
        if ctx.me == root:
            ctx.send(data, 0)
        elif ctx.me == 0:
            data = ctx.recv(root)
    return data


def _remainder(ctx: Ctx, root: int, data: bytes | None, done: int, nbytes: int, elem: int) -> bytes:
    """Broadcast the bytes after ``done`` with the selected bcast (SimGrid's colls::bcast)."""
    rest = data[done:] if data is not None and ctx.me == root else None
    tail = ctx.sel.run("bcast", ctx.sub(0), root, rest, nbytes - done, elem)
    return tail


@algorithm("bcast", "NTSL", source="SimGrid bcast-NTSL.cpp (Non-Topology-Specific Linear pipeline)")
def NTSL(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Chain 0 → 1 → … → p−1 (root first sends everything to 0), 8 KiB segments pipelined
    with non-blocking sends; the remainder of the last partial segment goes through the
    selected bcast.

    ≈ (p − 1 + n/s)(α + sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    to, frm = (me + 1) % size, (me - 1) % size
    seg = max(1, SEG_8K // elem)
    count = nbytes // elem
    pipe = count // seg
    data = _root_to_zero(ctx, root, data)
    if count <= seg:
        if me == 0:
            ctx.send(data, to)
        elif me == size - 1:
            data = ctx.wait(ctx.irecv(frm))
        else:
            data = ctx.wait(ctx.irecv(frm))
            ctx.send(data, to)
        return data  # type: ignore[return-value]
    seg_bytes = seg * elem
    if me == 0:
        segs = [data[i * seg_bytes:(i + 1) * seg_bytes] for i in range(pipe)]  # type: ignore[index]
        ctx.waitall([ctx.isend(s, to, i) for i, s in enumerate(segs)])
    elif me == size - 1:
        reqs = [ctx.irecv(frm, i) for i in range(pipe)]
        ctx.waitall(reqs)
        segs = [r.payload for r in reqs]
    else:
        reqs = [ctx.irecv(frm, i) for i in range(pipe)]
        sends = []
        for i, r in enumerate(reqs):
            sends.append(ctx.isend(ctx.wait(r), to, i))
        ctx.waitall(sends)
        segs = [r.payload for r in reqs]
    done = pipe * seg_bytes
    head = b"".join(segs)
    if count % seg:
        return head + _remainder(ctx, root, data, done, nbytes, elem)
    return head if me != root else data  # type: ignore[return-value]


algorithm("bcast", "NTSL_Isend", source="SimGrid bcast-NTSL-Isend.cpp (same schedule as NTSL)")(NTSL)


@algorithm("bcast", "NTSB", source="SimGrid bcast-NTSB.cpp (Non-Topology-Specific pipelined Binary tree)")
def NTSB(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Binary heap tree rooted at 0 (children 2r+1, 2r+2; root first sends to 0), 8 KiB
    segments pipelined down the tree; remainder through the selected bcast.

    ≈ (log2 p + n/s)(α + 2sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    frm = (me - 1) // 2
    kids = [c for c in (2 * me + 1, 2 * me + 2) if c < size]
    seg = max(1, SEG_8K // elem)
    count = nbytes // elem
    pipe = count // seg
    data = _root_to_zero(ctx, root, data)
    if count <= seg:
        if me != 0:
            data = ctx.recv(frm)
        for k in kids:
            ctx.send(data, k)
        return data  # type: ignore[return-value]
    seg_bytes = seg * elem
    if me == 0:
        segs = [data[i * seg_bytes:(i + 1) * seg_bytes] for i in range(pipe)]  # type: ignore[index]
        sends = [ctx.isend(s, kids[0], i) for i, s in enumerate(segs)]
        if len(kids) > 1:
            sends += [ctx.isend(s, kids[1], i) for i, s in enumerate(segs)]
        ctx.waitall(sends)
    else:
        reqs = [ctx.irecv(frm, i) for i in range(pipe)]
        if not kids:
            ctx.waitall(reqs)
        else:
            sends = []
            for i, r in enumerate(reqs):
                s = ctx.wait(r)
                sends += [ctx.isend(s, k, i) for k in kids]
            ctx.waitall(sends)
        segs = [r.payload for r in reqs]
    done = pipe * seg_bytes
    head = b"".join(segs)
    if count % seg:
        return head + _remainder(ctx, root, data, done, nbytes, elem)
    return head if me != root else data  # type: ignore[return-value]


def _pipeline_segsize(size: int, message_size: int) -> int:
    if size < 1.6134e-6 * message_size + 2.1102:
        return 1024 << 7
    if size < 2.3679e-6 * message_size + 1.1787:
        return 1024 << 6
    if size < 3.2118e-6 * message_size + 8.7936:
        return 1024 << 4
    return 1024 << 7


@algorithm("bcast", "ompi_pipeline", source="Open MPI coll_tuned bcast_intra_pipeline (SimGrid bcast-ompi-pipeline.cpp)")
def ompi_pipeline(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Pipeline along a chain from the root; segment 16/64/128 KiB chosen by Open MPI's
    linear model of (p, n); every node keeps one receive ahead.

    ≈ (p − 1 + n/s)(α + sβ)."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    count = nbytes // elem
    segsize = _pipeline_segsize(size, nbytes)
    cbs = segment_count(segsize, elem, count)
    if count == 0 or cbs == 0:
        return data if data is not None else b""
    nseg = -(-count // cbs)
    seg_bytes = cbs * elem
    parent, kids = topo.chain(1, size, me, root)
    if me == root:
        for s in _segments(data, seg_bytes):  # type: ignore[arg-type]
            ctx.waitall([ctx.isend(s, k) for k in kids])
        return data  # type: ignore[return-value]
    segs = []
    prev = ctx.irecv(parent)
    for _ in range(1, nseg):
        nxt = ctx.irecv(parent)
        s = ctx.wait(prev)
        segs.append(s)
        if kids:
            ctx.waitall([ctx.isend(s, k) for k in kids])
        prev = nxt
    s = ctx.wait(prev)
    segs.append(s)
    if kids:
        ctx.waitall([ctx.isend(s, k) for k in kids])
    return b"".join(segs)


@algorithm("bcast", "ompi_split_bintree", source="Open MPI coll_tuned bcast_intra_split_bintree (SimGrid bcast-ompi-split-bintree.cpp)")
def ompi_split_bintree(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """The buffer is halved; each half is pipelined (1 or 8 KiB segments) down one subtree
    of a binary tree, then paired nodes of the two subtrees swap halves. Messages too small
    to split go to SMP_linear.

    ≈ (log2 p + n/2s)(α + sβ) + α + nβ/2."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data  # type: ignore[return-value]
    segsize = 1024 if nbytes < 370728 else 1024 << 3
    count = nbytes // elem
    counts = [count - count // 2, count // 2]
    if segsize < elem:
        segsize = elem
    segcount = segsize // elem
    nsegs = [-(-c // segcount) for c in counts]
    if counts[0] == 0 or counts[1] == 0 or segsize > counts[0] * elem or segsize > counts[1] * elem:
        return ctx.sel.run_named("bcast", "SMP_linear", ctx, root, data, nbytes, elem)
    parent, kids = topo.kary_tree(2, size, me, root)
    halves: list[bytes | None] = [None, None]
    seg_bytes = segcount * elem
    lr = ((me - root) % size + 1) % 2
    if me == root:
        halves = [data[:counts[0] * elem], data[counts[0] * elem:]]  # type: ignore[index]
        parts = [_segments(h, seg_bytes) for h in halves]  # type: ignore[arg-type]
        for segindex in range(nsegs[0]):
            for i in range(min(len(kids), 2)):
                if segindex < nsegs[i]:
                    ctx.send(parts[i][segindex], kids[i])
    elif kids:
        segs = []
        base = ctx.irecv(parent)
        for _ in range(1, nsegs[lr]):
            new = ctx.irecv(parent)
            s = ctx.wait(base)
            segs.append(s)
            for k in kids:
                ctx.send(s, k)
            base = new
        s = ctx.wait(base)
        segs.append(s)
        for k in kids:
            ctx.send(s, k)
        halves[lr] = b"".join(segs)
    else:
        halves[lr] = b"".join(ctx.recv(parent) for _ in range(nsegs[lr]))
    pair = (me + 1) % size if lr == 0 else (me - 1) % size
    if size % 2 and me != root:
        halves[1 - lr] = ctx.sendrecv(halves[lr], pair, pair)
    elif size % 2 == 0:
        if me == root:
            ctx.send(halves[1], (root + size - 1) % size)
        elif me == (root + size - 1) % size:
            halves[1] = ctx.recv(root)
        else:
            halves[1 - lr] = ctx.sendrecv(halves[lr], pair, pair)
    return halves[0] + halves[1]  # type: ignore[operator]


def _scatter_for_bcast(ctx: Ctx, root: int, nbytes: int, buf: bytearray) -> int:
    """MPICH's binomial scatter of the bytes (root+k gets the k-th ⌈n/p⌉ piece);
    returns the bytes this rank now holds at offset rel·⌈n/p⌉."""
    size, me = ctx.size, ctx.me
    rel = (me - root) % size
    scatter_size = -(-nbytes // size)
    curr = nbytes if me == root else 0
    mask = 1
    while mask < size:
        if rel & mask:
            if nbytes - rel * scatter_size <= 0:
                curr = 0
            else:
                got = ctx.recv((me - mask) % size)
                off = rel * scatter_size
                buf[off:off + len(got)] = got
                curr = len(got)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < size:
            send_size = curr - scatter_size * mask
            if send_size > 0:
                off = scatter_size * (rel + mask)
                ctx.send(bytes(buf[off:off + send_size]), (me + mask) % size)
                curr -= send_size
        mask >>= 1
    return curr


@algorithm("bcast", "scatter_rdb_allgather", source="MPICH bcast scatter + recursive-doubling allgather (SimGrid bcast-scatter-rdb-allgather.cpp)")
def scatter_rdb_allgather(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Binomial scatter of n/p pieces, then recursive-doubling allgather of the pieces
    (with MPICH's recursive-halving patch-up for non-powers of two).

    Cost 2 log2 p α + 2 (p−1)/p nβ."""
    size, me = ctx.size, ctx.me
    if size == 1 or nbytes == 0:
        return data if data is not None else b""
    buf = bytearray(data) if me == root else bytearray(nbytes)  # type: ignore[arg-type]
    rel = (me - root) % size
    scatter_size = -(-nbytes // size)
    _scatter_for_bcast(ctx, root, nbytes, buf)
    curr = max(0, min(scatter_size, nbytes - rel * scatter_size))
    mask, i = 1, 0
    recv_size = 0
    while mask < size:
        rel_dst = rel ^ mask
        dst = (rel_dst + root) % size
        dst_tree_root = (rel_dst >> i) << i
        my_tree_root = (rel >> i) << i
        send_off = my_tree_root * scatter_size
        recv_off = dst_tree_root * scatter_size
        if rel_dst < size:
            got = ctx.sendrecv(bytes(buf[send_off:send_off + curr]), dst, dst)
            buf[recv_off:recv_off + len(got)] = got
            recv_size = len(got)
            curr += recv_size
        if dst_tree_root + mask > size:
            nprocs_completed = size - my_tree_root - mask
            k = mask.bit_length() - 1
            offset = scatter_size * (my_tree_root + mask)
            tmp_mask = mask >> 1
            while tmp_mask:
                rel_dst = rel ^ tmp_mask
                dst = (rel_dst + root) % size
                tree_root = (rel >> k) << k
                if rel_dst > rel and rel < tree_root + nprocs_completed <= rel_dst:
                    ctx.send(bytes(buf[offset:offset + recv_size]), dst)
                elif rel_dst < tree_root + nprocs_completed <= rel and rel_dst < rel:
                    got = ctx.recv(dst)
                    buf[offset:offset + len(got)] = got
                    recv_size = len(got)
                    curr += recv_size
                tmp_mask >>= 1
                k -= 1
        mask <<= 1
        i += 1
    return bytes(buf)


@algorithm("bcast", "scatter_LR_allgather", source="MPICH bcast scatter + ring allgather (SimGrid bcast-scatter-LR-allgather.cpp)")
def scatter_LR_allgather(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Binomial scatter of n/p pieces, then a ring allgather (p−1 sendrecv steps).

    Cost (log2 p + p − 1) α + 2 (p−1)/p nβ."""
    size, me = ctx.size, ctx.me
    if size == 1:
        return data if data is not None else b""
    buf = bytearray(data) if me == root else bytearray(nbytes)  # type: ignore[arg-type]
    scatter_size = -(-nbytes // size)
    _scatter_for_bcast(ctx, root, nbytes, buf)
    counts = [max(0, min(scatter_size, nbytes - i * scatter_size)) for i in range(size)]
    disps = [0] * size
    for i in range(1, size):
        disps[i] = disps[i - 1] + counts[i - 1]
    left, right = (me - 1) % size, (me + 1) % size
    src, next_src = me, left
    for _ in range(1, size):
        s = (src - root) % size
        n = (next_src - root) % size
        got = ctx.sendrecv(bytes(buf[disps[s]:disps[s] + counts[s]]), right, left)
        buf[disps[n]:disps[n] + len(got)] = got
        src, next_src = next_src, (next_src - 1) % size
    return bytes(buf)


@algorithm("bcast", "SMP_binomial", source="SimGrid bcast-SMP-binomial.cpp")
def SMP_binomial(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Two-level binomial: root → 0, binomial tree among node leaders (rank k·c, c ranks
    per node), then a binomial tree inside each node. Non-uniform nodes: MPICH selection.

    ≈ (log2(p/c) + log2 c)(α + nβ), intra-node steps on the loopback."""
    info = smp_of(ctx)
    if not info.uniform:
        return ctx.sel.run_selector("bcast", "mpich", ctx, root, data, nbytes, elem)
    size, me = ctx.size, ctx.me
    nc = info.num_core
    inter_rank, intra_rank = me // nc, me % nc
    inter_size = (size - 1) // nc + 1
    intra_size = nc
    if (me // nc) * nc == (size // nc) * nc:
        intra_size = size - (me // nc) * nc
    data = _root_to_zero(ctx, root, data)
    if intra_rank == 0:
        mask = 1
        while mask < inter_size:
            if inter_rank & mask:
                data = ctx.recv((inter_rank - mask) * nc)
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if inter_rank < inter_size:
                to = (inter_rank + mask) * nc
                if to < size:
                    ctx.send(data, to)
            mask >>= 1
    base = (me // nc) * nc
    mask = 1
    while mask < intra_size:
        if intra_rank & mask:
            data = ctx.recv(base + intra_rank - mask)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        # SimGrid only checks intra_rank < intra_size, so with a non-power-of-two number of
        # ranks per node it also sends to the next node (a message nobody receives)
        if intra_rank + mask < intra_size:
            to = base + intra_rank + mask
            if to < size:
                ctx.send(data, to)
        mask >>= 1
    return data  # type: ignore[return-value]


@algorithm("bcast", "SMP_linear", source="SimGrid bcast-SMP-linear.cpp")
def SMP_linear(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Chain among node leaders, each leader also feeding a chain inside its node, 8 KiB
    segments pipelined; remainder through the selected bcast. Non-uniform nodes: MPICH
    selection; a single node: binomial tree.

    With one rank per node SimGrid sends every segment twice to the next rank (its
    "inter" and "intra" neighbours coincide) and leaves the copies unmatched; smpy sends
    it once (a plain pipelined chain)."""
    info = smp_of(ctx)
    if not info.uniform:
        return ctx.sel.run_selector("bcast", "mpich", ctx, root, data, nbytes, elem)
    size, me = ctx.size, ctx.me
    nc = info.num_core
    if size <= nc:
        return binomial_tree(ctx, root, data, nbytes, elem)
    seg = max(1, SEG_8K // elem)
    count = nbytes // elem
    pipe = count // seg
    # leaders chain to the next leader and into their node; others chain inside the node
    # (SimGrid's neighbours wrap around when nodes hold one rank or the last one is
    # partial: those sends are never received there, and are not made here)
    outs: list[int] = []
    if me % nc == 0:
        src = (me - nc) % size
        if me + nc < size:
            outs.append(me + nc)
    else:
        src = me - 1
    if me + 1 < size and (me + 1) // nc == me // nc:
        outs.append(me + 1)
    data = _root_to_zero(ctx, root, data)
    if count <= seg:
        if me != 0:
            data = ctx.wait(ctx.irecv(src))
        for o in outs:
            ctx.send(data, o)
        return data  # type: ignore[return-value]
    seg_bytes = seg * elem
    if me == 0:
        segs = [data[i * seg_bytes:(i + 1) * seg_bytes] for i in range(pipe)]  # type: ignore[index]
        for i, s in enumerate(segs):
            for o in outs:
                ctx.send(s, o, i)
    else:
        reqs = [ctx.irecv(src, i) for i in range(pipe)]
        segs = []
        for i, r in enumerate(reqs):
            s = ctx.wait(r)
            segs.append(s)
            for o in outs:
                ctx.send(s, o, i)
    done = pipe * seg_bytes
    head = b"".join(segs)
    if count % seg:
        return head + _remainder(ctx, root, data, done, nbytes, elem)
    return head if me != root else data  # type: ignore[return-value]


KNOMIAL_FACTOR = 4  # mv2_intra_node_knomial_factor (SimGrid's default)


@algorithm("bcast", "mvapich2_knomial_intra_node", source="MVAPICH2 knomial intra-node bcast (SimGrid bcast-mvapich-smp.cpp)")
def mvapich2_knomial_intra_node(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """k-nomial tree (k = 4) on ranks relative to the root: each node forwards to up to
    3 children per level with non-blocking sends. Pays SMPI's ``init_smp`` on first use.

    ⌈log4 p⌉ levels; cost ⌈log4 p⌉ (α + 3nβ)."""
    smp_of(ctx)
    size, me = ctx.size, ctx.me
    k = KNOMIAL_FACTOR
    if size <= 1:
        return data  # type: ignore[return-value]
    rel = (me - root) % size
    mask = 1
    while mask < size:
        if rel % (k * mask):
            src = (rel // (k * mask) * (k * mask) + root) % size
            data = ctx.recv(src)
            break
        mask *= k
    mask //= k
    while mask > 0:
        reqs = []
        for j in range(1, k):
            if rel + mask * j < size:
                reqs.append(ctx.isend(data, (me + mask * j) % size))
        ctx.waitall(reqs)
        mask //= k
    return data  # type: ignore[return-value]


@algorithm("bcast", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp ibcast (MPI_Ibcast, and the 'default' selector's gather-like schedules)")
def nbc_linear(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """SMPI's MPI_Ibcast schedule: the root starts one send per rank, all at once.

    Same messages as ``flattree``; cost ≈ α + (p−1) nβ at the root's link."""
    return flattree(ctx, root, data, nbytes, elem)
