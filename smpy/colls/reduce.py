"""MPI_Reduce algorithms (SimGrid's reduce/, ``smpi/reduce:<name>``).

Signature: ``fn(ctx, root, data, red) -> bytes | None`` — ``data`` is this rank's packed
contribution, ``red`` the :class:`~smpy.colls.core.Reduction`; the result is returned at
the root only. Operands are always combined lower ranks first where the schedule allows
it; schedules that cannot (``commutative_only``) are replaced by ``fallback`` for
non-commutative ops, as Open MPI's and MPICH's selectors do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smpy.colls import topo
from smpy.colls.core import BlockVector, Reduction, pof2_floor, segment_count
from smpy.colls.registry import algorithm
from smpy.colls.smp import smp_of

if TYPE_CHECKING:
    from smpy.colls.core import Ctx


@algorithm("reduce", "binomial", source="MPICH binomial reduce (SimGrid reduce-binomial.cpp)")
def binomial(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Binomial tree towards the root (towards 0 then a final hop to the root when the op
    does not commute, which keeps operands in rank order).

    ⌈log2 p⌉ steps; cost ⌈log2 p⌉ (α + nβ)."""
    size, me = ctx.size, ctx.me
    lroot = root if red.commutative else 0
    rel = (me - lroot) % size
    acc = data
    mask = 1
    while mask < size:
        if mask & rel == 0:
            src = rel | mask
            if src < size:
                acc = red(acc, ctx.recv((src + lroot) % size))
        else:
            ctx.send(acc, ((rel & ~mask) + lroot) % size)
            break
        mask <<= 1
    if not red.commutative and root != 0:
        if me == 0:
            ctx.send(acc, root)
        elif me == root:
            acc = ctx.recv(0)
    return acc if me == root else None


def _linear(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    size, me = ctx.size, ctx.me
    if me != root:
        ctx.send(data, root)
        return None
    acc = data if me == size - 1 else ctx.recv(size - 1)
    for i in range(size - 2, -1, -1):
        acc = red(data if i == me else ctx.recv(i), acc)
    return acc


@algorithm("reduce", "flat_tree", source="SimGrid reduce-flat-tree.cpp")
def flat_tree(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Everyone sends to the root, which receives from p−1 down to 0 (blocking) and
    folds right to left. Cost (p−1)(α + nβ) serialised at the root."""
    return _linear(ctx, root, data, red)


@algorithm("reduce", "ompi_basic_linear", source="Open MPI coll_basic reduce_lin_intra (SimGrid reduce-ompi.cpp)")
def ompi_basic_linear(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Same schedule as ``flat_tree``: receives from p−1 down to 0 at the root.
    Cost (p−1)(α + nβ)."""
    return _linear(ctx, root, data, red)


@algorithm("reduce", "nbc_linear", source="SimGrid smpi_nbc_impl.cpp ireduce (SMPI's MPI_Ireduce and 'default' reduce)")
def nbc_linear(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Non-roots start a send to the root, which posts all receives at once and folds the
    contributions in rank order. Cost ≈ α + (p−1) nβ at the root's link."""
    size, me = ctx.size, ctx.me
    if me != root:
        ctx.waitall([ctx.isend(data, root)])
        return None
    reqs = [None if i == me else ctx.irecv(i) for i in range(size)]
    ctx.waitall([r for r in reqs if r is not None])
    parts = [data if r is None else r.payload for r in reqs]
    acc = parts[0]
    for p in parts[1:]:
        acc = red(acc, p)
    return acc


def _ompi_generic(ctx: Ctx, root: int, data: bytes, red: Reduction, parent: int, kids: list[int],
                  segcount: int) -> bytes | None:
    """Open MPI's ompi_coll_tuned_reduce_generic: segments flow up ``(parent, kids)``;
    a node keeps one receive ahead (next child or next segment) while it combines, and
    forwards each finished segment to its parent. Leaves send segments with blocking
    sends. Operands: ``child_last op … op child_0 op mine`` per segment."""
    me = ctx.me
    elem = red.elem
    count = len(data) // elem
    if count == 0 or ctx.size == 1:
        return data if me == root else None
    nseg = -(-count // segcount)
    seg_bytes = segcount * elem
    if not kids:
        for s in range(nseg):
            ctx.send(data[s * seg_bytes:(s + 1) * seg_bytes], parent)
        return None
    accum = [data[s * seg_bytes:(s + 1) * seg_bytes] for s in range(nseg)]
    reqs: list = [None, None]
    inbi = 0
    for segindex in range(nseg + 1):
        for i, child in enumerate(kids):
            if segindex < nseg:
                reqs[inbi] = ctx.irecv(child)
            prev = reqs[inbi ^ 1]
            got = None
            if prev is not None:
                got = ctx.wait(prev)
                reqs[inbi ^ 1] = None
            if i > 0:
                accum[segindex] = red(got, accum[segindex])
            elif segindex > 0:
                accum[segindex - 1] = red(got, accum[segindex - 1])
                if me != root:
                    ctx.send(accum[segindex - 1], parent)
                if segindex == nseg:
                    break
            inbi ^= 1
    return b"".join(accum) if me == root else None


@algorithm("reduce", "ompi_chain", source="Open MPI coll_tuned reduce_intra_chain (SimGrid reduce-ompi.cpp)",
           commutative_only=True, fallback="ompi_in_order_binary")
def ompi_chain(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """p/2 chains hanging from the root, 64 KiB segments pipelined up the chains.

    ≈ (2 + n/s)(α + sβ) per chain link."""
    count = len(data) // red.elem
    seg = segment_count(64 * 1024, red.elem, count)
    parent, kids = topo.chain(ctx.size // 2, ctx.size, ctx.me, root)
    return _ompi_generic(ctx, root, data, red, parent, kids, seg)


@algorithm("reduce", "ompi_pipeline", source="Open MPI coll_tuned reduce_intra_pipeline (SimGrid reduce-ompi.cpp)",
           commutative_only=True, fallback="ompi_in_order_binary")
def ompi_pipeline(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """One chain p−1 → … → root; segments of 1, 32 or 64 KiB chosen by Open MPI's model.

    ≈ (p − 1 + n/s)(α + sβ)."""
    n = len(data)
    size = ctx.size
    if size > 0.0410 / 1024.0 * n + 9.7128:
        segsize = 1024
    elif size > 0.0033 / 1024.0 * n + 1.6761:
        segsize = 32 * 1024
    else:
        segsize = 64 * 1024
    seg = segment_count(segsize, red.elem, n // red.elem)
    parent, kids = topo.chain(1, size, ctx.me, root)
    return _ompi_generic(ctx, root, data, red, parent, kids, seg)


@algorithm("reduce", "ompi_binary", source="Open MPI coll_tuned reduce_intra_binary (SimGrid reduce-ompi.cpp)",
           commutative_only=True, fallback="ompi_in_order_binary")
def ompi_binary(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Binary tree, 32 KiB segments pipelined. ≈ (log2 p + n/s)(α + 2sβ)."""
    seg = segment_count(32 * 1024, red.elem, len(data) // red.elem)
    parent, kids = topo.kary_tree(2, ctx.size, ctx.me, root)
    return _ompi_generic(ctx, root, data, red, parent, kids, seg)


@algorithm("reduce", "ompi_binomial", source="Open MPI coll_tuned reduce_intra_binomial (SimGrid reduce-ompi.cpp)",
           commutative_only=True, fallback="ompi_in_order_binary")
def ompi_binomial(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """In-order binomial tree; unsegmented below 2 KiB (20 KiB under 8 ranks), else 1 KiB
    segments when p > 0.6016 n/1024 + 1.3496. ⌈log2 p⌉ (α + nβ) unsegmented."""
    n = len(data)
    count = n // red.elem
    size = ctx.size
    segsize = 0
    if (size < 8 and n < 20480) or n < 2048 or count <= 1:
        segsize = 0
    elif size > 0.6016 / 1024.0 * n + 1.3496:
        segsize = 1024
    seg = segment_count(segsize, red.elem, count)
    parent, kids = topo.in_order_bmtree(size, ctx.me, root)
    return _ompi_generic(ctx, root, data, red, parent, kids, seg)


@algorithm("reduce", "ompi_in_order_binary", source="Open MPI coll_tuned reduce_intra_in_order_binary (SimGrid reduce-ompi.cpp)")
def ompi_in_order_binary(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """In-order binary tree rooted at p−1 (so non-commutative ops stay exact), then p−1
    sends the result to the root. ⌈log2 p⌉ (α + nβ) + α + nβ."""
    size, me = ctx.size, ctx.me
    io_root = size - 1
    parent, kids = topo.in_order_bintree(size, me)
    seg = segment_count(0, red.elem, len(data) // red.elem)
    res = _ompi_generic(ctx, io_root, data, red, parent, kids, max(seg, 1))
    if io_root != root:
        if me == root:
            return ctx.recv(io_root)
        if me == io_root:
            ctx.send(res, root)
        return None
    return res


@algorithm("reduce", "scatter_gather", source="MPICH Rabenseifner reduce: reduce-scatter + binomial gather (SimGrid reduce-scatter-gather.cpp)",
           commutative_only=True, fallback="binomial")
def scatter_gather(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Recursive-halving reduce-scatter among the largest power of two (odd ranks of the
    first 2·rem pairs fold into their even neighbour first), then a binomial gather of the
    pieces to the root. Vectors shorter than p elements are padded to p elements (zero
    bytes) and cut back at the end, as SimGrid does.

    Cost 2 log2 p α + 2 (p−1)/p nβ (+ α + nβ when p is not a power of two)."""
    size, me = ctx.size, ctx.me
    elem = red.elem
    count = len(data) // elem
    if count == 0:
        return data if me == root else None
    if count < size:
        padded = _scatter_gather(ctx, root, data + bytes((size - count) * elem), red, size)
        return padded[:count * elem] if padded is not None else None
    return _scatter_gather(ctx, root, data, red, count)


def _scatter_gather(ctx: Ctx, root: int, data: bytes, red: Reduction, count: int) -> bytes | None:
    size, me = ctx.size, ctx.me
    elem = red.elem
    pof2 = pof2_floor(size)
    rem = size - pof2
    buf = data
    if me < 2 * rem:
        if me % 2:
            ctx.send(buf, me - 1)
            newrank = -1
        else:
            buf = red(buf, ctx.recv(me + 1))
            newrank = me // 2
    else:
        newrank = me - rem
    cnts = [count // pof2] * pof2
    cnts[-1] = count - (count // pof2) * (pof2 - 1)
    disps = [0] * pof2
    for i in range(1, pof2):
        disps[i] = disps[i - 1] + cnts[i - 1]
    pieces = [b""] * pof2
    send_idx = recv_idx = 0
    last_idx = pof2
    if newrank != -1:
        vec = BlockVector(buf, cnts, elem)
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 if newdst < rem else newdst + rem
            if newrank < newdst:
                send_idx = recv_idx + pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, last_idx, recv_idx, send_idx
            else:
                recv_idx = send_idx + pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, recv_idx, recv_idx, last_idx
            vec.reduce(r_lo, r_hi, ctx.sendrecv(vec.run(s_lo, s_hi), dst, dst), red, got_first=newrank > newdst)
            send_idx = recv_idx
            mask <<= 1
            if mask < pof2:
                last_idx = recv_idx + pof2 // mask
        pieces = vec.blocks()
    # gather to the root
    if root < 2 * rem:
        if root % 2:
            if me == root:
                pieces = [b""] * pof2
                pieces[0] = ctx.recv(0)[0]
                newrank, send_idx, last_idx = 0, 0, 2
            elif newrank == 0:
                ctx.send((pieces[0],), root)
                newrank = -1
            newroot = 0
        else:
            newroot = root // 2
    else:
        newroot = root - rem
    if newrank != -1:
        j = pof2.bit_length() - 1
        mask = pof2 >> 1
        j -= 1
        while mask > 0:
            newdst = newrank ^ mask
            dst = newdst * 2 if newdst < rem else newdst + rem
            if newdst == 0 and root < 2 * rem and root % 2:
                dst = root
            same = (newdst >> j) << j == (newroot >> j) << j
            if newrank < newdst:
                if mask != pof2 // 2:
                    last_idx += pof2 // (mask * 2)
                recv_idx = send_idx + pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, recv_idx, recv_idx, last_idx
            else:
                recv_idx = send_idx - pof2 // (mask * 2)
                s_lo, s_hi, r_lo, r_hi = send_idx, last_idx, recv_idx, send_idx
            if same:
                ctx.send(tuple(pieces[s_lo:s_hi]), dst)
                break
            got = ctx.recv(dst)
            pieces[r_lo:r_hi] = list(got)
            if newrank > newdst:
                send_idx = recv_idx
            mask >>= 1
            j -= 1
    return b"".join(pieces) if me == root else None


KNOMIAL = 4  # SMPI_DEFAULT_KNOMIAL_FACTOR


@algorithm("reduce", "mvapich2_knomial", source="MVAPICH2 knomial reduce (SimGrid reduce-mvapich-knomial.cpp)",
           commutative_only=True, fallback="binomial")
def mvapich2_knomial(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """4-nomial tree towards the root: a node posts receives from all its children at once,
    folds them as they arrive, then sends to its parent. ⌈log4 p⌉ (α + 3nβ)."""
    size, me = ctx.size, ctx.me
    if not data:
        return data if me == root else None
    rel = (me - root) % size
    mask = 1
    dst = -1
    while mask < size:
        if rel % (KNOMIAL * mask):
            dst = (rel // (KNOMIAL * mask) * (KNOMIAL * mask) + root) % size
            break
        mask *= KNOMIAL
    mask //= KNOMIAL
    srcs = []
    while mask > 0:
        for k in range(1, KNOMIAL):
            if rel + mask * k < size:
                srcs.append((me + mask * k) % size)
        mask //= KNOMIAL
    acc = data
    reqs = [ctx.irecv(s) for s in reversed(srcs)]
    for r in reqs:
        acc = red(ctx.wait(r), acc)
    if me != root:
        ctx.waitall([ctx.isend(acc, dst)])
        return None
    return acc


@algorithm("reduce", "mvapich2_two_level", source="MVAPICH2 two-level reduce (SimGrid reduce-mvapich-two-level.cpp)",
           commutative_only=True, fallback="binomial")
def mvapich2_two_level(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Reduce inside each node to its leader (MPICH selection), among leaders to the
    root's leader (MPICH selection), then leader → root. On a single node: linear below
    2 KiB, else 4-nomial. Pays SMPI's ``init_smp`` on first use."""
    info = smp_of(ctx)
    me = ctx.me
    intra = ctx.on(info.intra_of[me], 0)
    local_size = intra.size
    leader_of_root = info.leader_of[root]
    if local_size == ctx.size:
        if len(data) <= 2048:
            res = ompi_basic_linear(intra, 0, data, red) if len(data) < local_size << 17 else \
                mvapich2_knomial(intra, 0, data, red)
            if intra.me == 0 and root != me:
                ctx.send(res, root, 1)
            if intra.me != 0 and root == me:
                return ctx.recv(leader_of_root, 1)
            return res if me == root else None
        return mvapich2_knomial(ctx, root, data, red)
    # MV2_Reduce_intra_function / MV2_Reduce_function: mpich's unless the mvapich2 selector set them
    state = getattr(ctx.sel, "mv2", {})
    intra_fn = state.get("reduce_intra") or "mpich"
    inter_fn = state.get("reduce_inter") or "mpich"
    tmp = data
    if local_size > 1:
        if intra_fn == "ompi_basic_linear":  # MPIR_Reduce_shmem_MV2
            intra_fn = intra_fn if red.commutative and len(data) < local_size << 17 else "mvapich2_knomial"
        tmp = ctx.sel.run_named("reduce", intra_fn, intra, 0, data, red)
    leaders = info.leaders
    res = tmp
    if intra.me == 0 and leaders.size > 1:
        lctx = ctx.on(leaders, 1)
        leader_root = leaders.rank_of[ctx.comm.group[leader_of_root]]
        res = ctx.sel.run_named("reduce", inter_fn, lctx, leader_root, tmp, red)
    if local_size > 1:
        if intra.me == 0 and root != me and me == leader_of_root:
            ctx.send(res, root, 2)
        if intra.me != 0 and root == me:
            return ctx.recv(leader_of_root, 2)
    return res if me == root else None


# -- Rabenseifner's 1997 reduce/allreduce (SimGrid reduce-rab.cpp: reduce__rab, allreduce__rab)
class _RabVector:
    """The working vector of :func:`rab_any` and its pieces, in elements: ``even[i]`` /
    ``odd[i]`` = (start, count) of the lower / upper half split at step ``i`` of the
    recursive halving."""

    __slots__ = ("buf", "elem", "count", "even", "odd", "r")

    def __init__(self, data: bytes, elem: int, n: int, r: int) -> None:
        self.buf = bytearray(data)
        self.elem = elem
        self.count = len(data) // elem
        self.even = [(0, 0)] * n
        self.odd = [(0, 0)] * n
        self.r = r

    def get(self, piece: tuple[int, int]) -> bytes:
        start, cnt = piece
        return bytes(self.buf[start * self.elem:(start + cnt) * self.elem])

    def put(self, start: int, v: bytes) -> None:
        self.buf[start * self.elem:start * self.elem + len(v)] = v

    def split(self, idx: int, x_start: int, x_count: int) -> None:
        self.even[idx] = (x_start, x_count // 2)
        self.odd[idx] = (x_start + x_count // 2, x_count - x_count // 2)

    def old(self, nr: int) -> int:
        """The rank of new rank ``nr``."""
        return nr * 2 if nr < self.r else nr + self.r


def _rab_fold(ctx: Ctx, v: _RabVector, red: Reduction) -> None:
    """Step 2: the first 2r ranks fold pairwise (the even one ends with the pair's sum)."""
    me, count = ctx.me, v.count
    half = count // 2
    if me % 2 == 0:
        got = ctx.sendrecv(v.get((half, count - half)), me + 1, me + 1, 1)
        v.put(0, red(v.get((0, half)), got))
        v.put(half, ctx.recv(me + 1, 2))
    else:
        got = ctx.sendrecv(v.get((0, half)), me - 1, me - 1, 1)
        ctx.send(red(got, v.get((half, count - half))), me - 1, 2)


def _rab_halve(ctx: Ctx, v: _RabVector, red: Reduction, newrank: int, n: int) -> tuple[int, int]:
    """Steps 3-5: recursive halving among the 2^n new ranks; the piece this rank reduced."""
    x_start, x_count = 0, v.count
    for idx in range(n):
        x_base = 1 << idx
        v.split(idx, x_start, x_count)
        if (newrank // x_base) % 2 == 0:
            x_start, x_count = v.even[idx]
            peer = v.old(newrank + x_base)
            got = ctx.sendrecv(v.get(v.odd[idx]), peer, peer, 10 + idx)
            v.put(x_start, red(v.get((x_start, x_count)), got))
        else:
            x_start, x_count = v.odd[idx]
            peer = v.old(newrank - x_base)
            got = ctx.sendrecv(v.get(v.even[idx]), peer, peer, 10 + idx)
            v.put(x_start, red(got, v.get((x_start, x_count))))
    return x_start, x_count


def _rab_double(ctx: Ctx, v: _RabVector, newrank: int, n: int) -> None:
    """Allreduce, step 6: the pieces travel back by recursive doubling."""
    for idx in range(n - 1, -1, -1):
        x_base = 1 << idx
        if (newrank // x_base) % 2 == 0:
            peer = v.old(newrank + x_base)
            v.put(v.odd[idx][0], ctx.sendrecv(v.get(v.even[idx]), peer, peer, 40 + idx))
        else:
            peer = v.old(newrank - x_base)
            v.put(v.even[idx][0], ctx.sendrecv(v.get(v.odd[idx]), peer, peer, 40 + idx))


def _rab_odd_root(ctx: Ctx, v: _RabVector, root: int, newrank: int, piece: tuple[int, int], n: int) -> int:
    """Reduce, step 6.0: an odd root among the first 2r takes rank 0's place (new rank 0);
    returns this rank's new rank."""
    me = ctx.me
    if me == 0:
        ctx.send(v.get(piece), root, 60)
        newrank = -1
    if me == root:
        newrank = 0
        x_start, x_count = 0, v.count
        for idx in range(n):
            v.split(idx, x_start, x_count)
            x_start, x_count = v.even[idx]
        v.put(0, ctx.recv(0, 60))
    return newrank


def _rab_gather_to_root(ctx: Ctx, v: _RabVector, root: int, newrank: int, newroot: int, n: int) -> None:
    """Reduce, steps 6.1-6.n: pieces move towards the root's half at distances 2^(n-1) … 1."""
    def old_r(nr: int) -> int:
        return root if nr == newroot else v.old(nr)

    for idx in range(n - 1, -1, -1):
        x_base = 1 << idx
        even = (newrank // x_base) % 2 == 0
        peer = old_r(newrank + x_base if even else newrank - x_base)
        if (newrank & x_base) != (newroot & x_base):
            ctx.send(v.get(v.even[idx] if even else v.odd[idx]), peer, 40 + idx)
        else:
            v.put(v.odd[idx][0] if even else v.even[idx][0], ctx.recv(peer, 40 + idx))


def rab_any(ctx: Ctx, root: int, data: bytes, red: Reduction, is_all: bool) -> bytes | None:
    """``MPI_I_anyReduce`` of SimGrid's reduce-rab.cpp, shared by reduce ``rab`` and
    allreduce ``rab``. With p = 2^n + r:

    1. the first 2r ranks pair up (2k, 2k+1) and swap vector halves; the even one reduces
       the lower half, the odd one the upper half and sends it back (the even rank now
       holds the pair's sum, the odd one sits out);
    2. the 2^n remaining ranks (new ranks) halve the vector n times: at distance 2^i the
       lower new rank keeps (and reduces) the lower half of its current piece and sends
       the upper one, the other the reverse;
    3. allreduce: the pieces travel back with doubling sizes (distances 2^(n-1) … 1), then
       each even rank of the first 2r hands the whole result to its odd neighbour;
       reduce: every pair at distance 2^(n-1) … 1 moves a piece towards the root's side
       (SimGrid's schedule moves pieces on the other half too); a root among the odd ranks
       of the first 2r first receives rank 0's piece and takes rank 0's place.

    Operands are combined lower ranks first, so non-commutative ops stay exact. An empty
    vector or a single rank returns at once (SimGrid would fall back to the selected
    algorithm, which is this one again when it is forced).

    Cost (r = 0): 2n α + 2 (1 − 2^-n) nβ for allreduce, n α + 2 (1 − 2^-n) nβ … for reduce;
    (r > 0) two more α and 1½ nβ."""
    size, me = ctx.size, ctx.me
    if size == 1 or len(data) // red.elem == 0:
        return data if is_all or me == root else None
    if is_all:
        root = me
    x_size = pof2_floor(size)
    n = x_size.bit_length() - 1
    r = size - x_size
    v = _RabVector(data, red.elem, n, r)
    if me < 2 * r:
        _rab_fold(ctx, v, red)
    newrank = me - r if me >= 2 * r else (me // 2 if me % 2 == 0 else -1)
    piece = (0, v.count)
    if newrank >= 0:
        piece = _rab_halve(ctx, v, red, newrank, n)
    if is_all:
        if newrank >= 0:
            _rab_double(ctx, v, newrank, n)
        if me < 2 * r:  # step 7: each even rank of the first 2r hands the result to its odd neighbour
            if me % 2 == 0:
                ctx.send(bytes(v.buf), me + 1, 70)
            else:
                v.buf = bytearray(ctx.recv(me - 1, 70))
        return bytes(v.buf)
    if root < 2 * r and root % 2 == 1:
        newrank = _rab_odd_root(ctx, v, root, newrank, piece, n)
        newroot = 0
    else:
        newroot = root // 2 if root < 2 * r else root - r
    if newrank >= 0:
        _rab_gather_to_root(ctx, v, root, newrank, newroot, n)
    return bytes(v.buf) if me == root else None


@algorithm("reduce", "rab", source="Rabenseifner 1997 (SimGrid reduce-rab.cpp reduce__rab)")
def rab(ctx: Ctx, root: int, data: bytes, red: Reduction) -> bytes | None:
    """Rabenseifner's reduce: pairwise folding of the first 2r ranks (p = 2^n + r),
    recursive-halving reduce-scatter among 2^n ranks, then the pieces move towards the
    root with doubling sizes (see :func:`rab_any`).

    Cost ≈ (n + 1)(α) + 2 (1 − 2^-n) nβ (+ α + nβ/2 … when p is not a power of two)."""
    return rab_any(ctx, root, data, red, False)
