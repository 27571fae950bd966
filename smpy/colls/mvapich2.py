"""MVAPICH2's algorithms (as SimGrid 3.32 ports them) that the ``mvapich2`` and ``impi``
selectors need: two-level (node-aware) bcast, allgather, gather and scatter, the
reduce-scatter/allgather allreduce, and MPICH's recursive-doubling alltoall.

Two-level algorithms work on SMPI's node structure (:mod:`smpy.colls.smp`: one intra-node
communicator per host, leaders = the lowest rank of each host) and pay ``init_smp`` the
first time, as SimGrid does. Their inner steps are MVAPICH2's function pointers, which
SimGrid keeps in globals that the ``mvapich2`` selector sets from its tables
(``MV2_Bcast_intra_node_function``...); smpy keeps them per world in ``ctx.sel.mv2``
(:class:`smpy.colls.dispatch.Selection`), with SimGrid's defaults when an algorithm is
forced without the selector ever running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls import allgather as _allgather
from smpy.colls import allreduce as _allreduce
from smpy.colls import bcast as _bcast
from smpy.colls import gather as _gather
from smpy.colls import reduce_scatter as _rs
from smpy.colls import scatter as _scatter
from smpy.colls.core import is_pof2, pof2_floor
from smpy.colls.registry import algorithm
from smpy.colls.smp import smp_of

if TYPE_CHECKING:
    from smpy.colls.core import Ctx, Reduction


def mv2(ctx: Ctx, key: str, default: str) -> str:
    """The MVAPICH2 function pointer ``key`` as last set by the ``mvapich2`` selector."""
    state = getattr(ctx.sel, "mv2", None)
    return (state or {}).get(key) or default


# -- bcast (SimGrid bcast-mvapich-smp.cpp) -----------------------------------------------------
def _bcast_inter(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes | None:
    """``bcast__mvapich2_inter_node``: a non-leader root hands its data to its node leader,
    then the leaders run ``MV2_Bcast_function`` (default: the mpich selection) on the
    leaders communicator. Returns the data on leaders (and the root), None elsewhere."""
    info = smp_of(ctx)
    me = ctx.me
    intra = info.intra_of[me]
    local_rank = intra.rank_of[ctx.comm.group[me]]
    leaders = info.leaders
    leader_of_root = info.leader_of[root]
    leader_root = leaders.rank_of[ctx.comm.group[leader_of_root]]
    if intra.size > 1:
        if local_rank == 0 and root != me and me == leader_of_root:
            data = ctx.recv(root, 1)
        if local_rank != 0 and root == me:
            ctx.send(data, leader_of_root, 1)
    if local_rank == 0:
        fn = mv2(ctx, "bcast_inter", "mpich")
        data = ctx.sel.run_named("bcast", fn, ctx.on(leaders, 2), leader_root, data, nbytes, elem)
    return data if local_rank == 0 or me == root else None


def _bcast_intra(ctx: Ctx, fn: str, data: bytes | None, nbytes: int, elem: int) -> bytes:
    info = smp_of(ctx)
    intra = ctx.on(info.intra_of[ctx.me], 3)
    got = ctx.sel.run_named("bcast", fn, intra, 0, data if intra.me == 0 else None, nbytes, elem)
    return got


@algorithm("bcast", "mvapich2_inter_node", source="MVAPICH2 MPIR_Bcast_inter_node_helper_MV2 (SimGrid bcast-mvapich-smp.cpp)")
def mvapich2_inter_node(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """Two-level bcast: root → its node leader, ``MV2_Bcast_function`` among the node
    leaders (mpich's choice unless the mvapich2 selector set it), then
    ``MV2_Bcast_intra_node_function`` from each leader inside its node (mpich's choice by
    default) — the sequence SimGrid's ``bcast__mvapich2`` runs for its two-level rows.
    SimGrid's function alone stops after the leaders' phase (other ranks keep stale
    buffers); smpy always completes the intra-node phase. Pays ``init_smp`` on first use.

    Cost ≈ α + nβ (root to leader) + bcast over nodes + bcast inside a node."""
    if ctx.size == 1 or nbytes == 0:
        return data if data is not None else b""
    data = _bcast_inter(ctx, root, data, nbytes, elem)
    return _bcast_intra(ctx, mv2(ctx, "bcast_intra", "mpich"), data, nbytes, elem)


TWO_LEVEL_SYSTEM_SIZE = 64  # mv2_bcast_two_level_system_size
SHORT_MSG = 16384  # mv2_bcast_short_msg
LARGE_MSG = 512 * 1024  # mv2_bcast_large_msg
KNOMIAL_INTRA_THRESHOLD = 131072  # mv2_knomial_intra_node_threshold


@algorithm("bcast", "mvapich2_intra_node", source="MVAPICH2 MPIR_Bcast_intra_MV2 (SimGrid bcast-mvapich-smp.cpp)")
def mvapich2_intra_node(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int) -> bytes:
    """MVAPICH2's untuned bcast: up to 64 ranks, binomial below 16 KiB and
    scatter + ring allgather above 512 KiB; otherwise two-level (the inter-node phase, then
    mpich's bcast below 128 KiB or the 4-nomial tree inside each node). Pays ``init_smp``.

    Cost: one of binomial_tree / scatter_LR_allgather / mvapich2_inter_node."""
    if nbytes == 0:
        return data if data is not None else b""
    smp_of(ctx)
    two_level = True
    if ctx.size <= TWO_LEVEL_SYSTEM_SIZE:
        two_level = SHORT_MSG < nbytes < LARGE_MSG
    if two_level:
        data = _bcast_inter(ctx, root, data, nbytes, elem)
        fn = "mpich" if nbytes <= KNOMIAL_INTRA_THRESHOLD else "mvapich2_knomial_intra_node"
        return _bcast_intra(ctx, fn, data, nbytes, elem)
    if nbytes <= SHORT_MSG:
        return _bcast.binomial_tree(ctx, root, data, nbytes, elem)
    return _bcast.scatter_LR_allgather(ctx, root, data, nbytes, elem)


# -- allgather (SimGrid allgather-mvapich-smp.cpp) ---------------------------------------------
@algorithm("allgather", "mvapich2_smp", source="MVAPICH2 MPIR_2lvl_Allgather_MV2 (SimGrid allgather-mvapich-smp.cpp)")
def mvapich2_smp(ctx: Ctx, block: bytes, sizes: list[int], elem: int) -> list:
    """Gather (selected) to each node leader, mpich's allgather of the nodes' blocks among
    leaders, then the selected bcast of the whole vector inside each node. Needs uniform
    nodes with contiguous ranks (SimGrid throws otherwise; smpy runs mpich's allgather
    and says so). Pays ``init_smp``.

    Cost gather in node + allgather of (p/nodes)·n blocks over nodes + bcast of pn bytes."""
    info = smp_of(ctx)
    if not info.uniform or not info.blocked:
        ctx.sel.note("allgather", "mvapich2_smp", "nodes are not uniform and contiguous", "mpich")
        return ctx.sel.run_selector("allgather", "mpich", ctx, block, sizes, elem)
    if ctx.size == 1 or not sum(sizes):
        return [block] if ctx.size == 1 else [b""] * ctx.size
    me = ctx.me
    intra = ctx.on(info.intra_of[me], 0)
    local = intra.size
    mine = ctx.sel.run("gather", intra, 0, block, elem)
    out: list[Any] = [None] * ctx.size
    leaders = info.leaders
    if intra.me == 0:
        first = me  # blocked: the node holds ranks me .. me + local - 1
        out[first:first + local] = mine
        if leaders.size > 1:
            lctx = ctx.on(leaders, 1)
            nsizes = [sum(sizes[n * local:(n + 1) * local]) for n in range(leaders.size)]
            nodes = ctx.sel.run_selector("allgather", "mpich", lctx, b"".join(mine), nsizes, elem)
            for n, chunk in enumerate(nodes):
                pos = 0
                for r in range(n * local, (n + 1) * local):
                    out[r] = chunk[pos:pos + sizes[r]]
                    pos += sizes[r]
        whole: bytes | None = b"".join(out)
    else:
        whole = None
    whole = ctx.sel.run("bcast", ctx.on(info.intra_of[me], 2), 0, whole, sum(sizes), elem)
    res, pos = [], 0
    for n in sizes:
        res.append(whole[pos:pos + n])
        pos += n
    return res


# -- gather (SimGrid gather-mvapich.cpp) --------------------------------------------------------
@algorithm("gather", "mvapich2_two_level", source="MVAPICH2 MPIR_Gather_MV2_two_level_Direct (SimGrid gather-mvapich.cpp)")
def gather_two_level(ctx: Ctx, root: int, block: Any, elem: int) -> list | None:
    """``MV2_Gather_intra_node_function`` (mpich's binomial by default) to each node leader,
    a linear gather of the nodes' blocks to the root's leader (the selected gatherv when
    nodes differ in size), then leader → root when the root is not a leader. Pays
    ``init_smp``.

    Cost gather in node + (nodes−1)(α + (p/nodes) nβ) + pnβ (to a non-leader root)."""
    info = smp_of(ctx)
    size, me = ctx.size, ctx.me
    if size == 1:
        return [block]
    intra = ctx.on(info.intra_of[me], 0)
    fn = mv2(ctx, "gather_intra", "mpich")
    mine = ctx.sel.run_named("gather", fn, intra, 0, block, elem)
    leaders = info.leaders
    leader_of_root = info.leader_of[root]
    leader_root = leaders.rank_of[ctx.comm.group[leader_of_root]]
    res = None
    if intra.me == 0:
        lctx = ctx.on(leaders, 1)
        pack = tuple(mine)
        if info.uniform:
            nodes = _gather.ompi_basic_linear(lctx, leader_root, pack, elem)
        else:
            nodes = ctx.sel.run("gatherv", lctx, leader_root, pack, elem)
        if nodes is not None:
            # node blocks in leaders order; place each rank's block at its rank
            res = [None] * size
            comm = ctx.comm
            for lr, chunk in enumerate(nodes):
                lead = comm.rank_of[leaders.group[lr]]
                members = [r for r in range(size) if info.leader_of[r] == lead]
                for r, b in zip(members, chunk, strict=True):
                    res[r] = b
    if intra.me == 0 and root != me and me == leader_of_root:
        ctx.send(tuple(res), root, 2)  # type: ignore[arg-type]
    if me == root and intra.me != 0:
        return list(ctx.recv(leader_of_root, 2))
    return res if me == root else None


# -- scatter (SimGrid scatter-mvapich-two-level.cpp) ------------------------------------------
def _scatter_two_level(ctx: Ctx, root: int, blocks: list | None, elem: int, leaders_fn: Any) -> Any:
    info = smp_of(ctx)
    size, me = ctx.size, ctx.me
    intra_comm = info.intra_of[me]
    if intra_comm.size == size:
        return _scatter.ompi_basic_linear(ctx, root, blocks, elem)
    intra = ctx.on(intra_comm, 0)
    leaders = info.leaders
    leader_of_root = info.leader_of[root]
    leader_root = leaders.rank_of[ctx.comm.group[leader_of_root]]
    if intra.me == 0 and root != me and me == leader_of_root:
        blocks = list(ctx.recv(root, 1))
    if me == root and intra.me != 0:
        ctx.send(tuple(blocks), leader_of_root, 1)  # type: ignore[arg-type]
    node_blocks = None
    if intra.me == 0:
        if leaders.size > 1:
            lctx = ctx.on(leaders, 2)
            packs = None
            if me == leader_of_root:
                packs = []
                comm = ctx.comm
                for lr in range(leaders.size):
                    lead = comm.rank_of[leaders.group[lr]]
                    packs.append(tuple(blocks[r] for r in range(size) if info.leader_of[r] == lead))  # type: ignore[index]
            if info.uniform:
                node_blocks = leaders_fn(lctx, leader_root, packs, elem)
            else:
                node_blocks = ctx.sel.run("scatterv", lctx, leader_root, packs, elem)
        else:
            node_blocks = tuple(blocks)  # type: ignore[arg-type]
    fn = mv2(ctx, "scatter_intra", "mpich")
    return ctx.sel.run_named("scatter", fn, ctx.on(intra_comm, 3), 0,
                             list(node_blocks) if node_blocks is not None else None, elem)


@algorithm("scatter", "mvapich2_two_level_direct", source="MVAPICH2 MPIR_Scatter_MV2_two_level_Direct (SimGrid scatter-mvapich-two-level.cpp)")
def scatter_two_level_direct(ctx: Ctx, root: int, blocks: list | None, elem: int) -> Any:
    """Root → its node leader (the whole vector), a linear scatter of the nodes' blocks
    among leaders (the selected scatterv for uneven nodes), then
    ``MV2_Scatter_intra_function`` (mpich's binomial by default) inside each node; a
    single node runs the linear scatter. Pays ``init_smp``.

    Cost pnβ + (nodes−1)(α + (p/nodes) nβ) + scatter in node."""
    smp_of(ctx)
    return _scatter_two_level(ctx, root, blocks, elem, _scatter.ompi_basic_linear)


@algorithm("scatter", "mvapich2_two_level_binomial", source="MVAPICH2 MPIR_Scatter_MV2_two_level_Binomial (SimGrid scatter-mvapich-two-level.cpp)")
def scatter_two_level_binomial(ctx: Ctx, root: int, blocks: list | None, elem: int) -> Any:
    """As ``mvapich2_two_level_direct`` with a binomial scatter among the node leaders.

    Cost pnβ + ⌈log2 nodes⌉ α + (nodes−1)/nodes · pnβ + scatter in node."""
    smp_of(ctx)
    return _scatter_two_level(ctx, root, blocks, elem, _scatter.ompi_binomial)


# -- allreduce (SimGrid allreduce-mvapich-rs.cpp) ---------------------------------------------
@algorithm("allreduce", "mvapich2_rs", source="MVAPICH2 MPIR_Allreduce_pt2pt_rs_MV2 (SimGrid allreduce-mvapich-rs.cpp)",
           commutative_only=True, fallback="rdb")
def mvapich2_rs(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    """MPICH's allreduce: the 2·(p − 2^⌊log2 p⌋) first ranks fold pairwise, then recursive
    doubling of whole vectors when count < 2^⌊log2 p⌋, else Rabenseifner's
    reduce-scatter + allgather; the folded ranks get the result at the end.

    Cost 2 log2 p α + 2 (p−1)/p nβ (Rabenseifner) or log2 p (α + nβ)."""
    size = ctx.size
    count = len(data) // red.elem
    if not data or size == 1:
        return data
    pof2 = pof2_floor(size)
    if count >= pof2:
        return _allreduce.rab_rdb(ctx, data, red)
    return _allreduce.rdb(ctx, data, red)  # MPICH's recursive doubling (same schedule)


# -- alltoall (SimGrid alltoall-rdb.cpp) --------------------------------------------------------
@algorithm("alltoall", "rdb", source="MPICH recursive-doubling alltoall, A. Faraj (SimGrid alltoall-rdb.cpp)")
def alltoall_rdb(ctx: Ctx, blocks: list) -> list:
    """Every rank's whole send vector travels through MPICH's recursive-doubling allgather
    (with its tree patch-up for non-powers of two); each rank keeps its column.

    Cost log2 p α + (p−1) pnβ: p times the data of an allgather."""
    size, me = ctx.size, ctx.me
    rows = _allgather.rdb(ctx, tuple(blocks), [], 1)
    return [rows[i][me] for i in range(size)]


# -- reduce_scatter (SimGrid smpi_mvapich2_selector.cpp) ----------------------------------------
@algorithm("reduce_scatter", "mvapich2_noncomm", source="SimGrid smpi_mvapich2_selector.cpp reduce_scatter__mvapich2 (non-commutative path)",
           requires=is_pof2, requirement="a power-of-two number of ranks", fallback="mpich_rdb")
def mvapich2_noncomm(ctx: Ctx, data: bytes, counts: list[int], red: Reduction) -> bytes:
    """What SimGrid's mvapich2 selector runs for a non-commutative op on a power-of-two
    communicator with equal blocks: ``mpich_noncomm`` and then, as its missing ``else``
    makes it, ``mpich_rdb`` again on the same input (the second result is kept).

    Cost mpich_noncomm + mpich_rdb."""
    _rs.mpich_noncomm(ctx.sub(0), data, counts, red)
    return _rs.mpich_rdb(ctx.sub(1), data, counts, red)
