"""Buffer (uppercase) collectives: pack the send buffers, run the selected algorithm, unpack.

Specs are the facade's parsed buffer specifications (duck-typed: ``mem``, ``offset``,
``count``, ``datatype`` with ``pack``/``unpack``/``size``/``extent``; vector specs add
``counts``/``displs``). ``None`` as a send spec means ``MPI.IN_PLACE``.

Every function takes ``nb``: False runs the collective now; True starts it in a helper
actor and returns a :class:`~smpy.colls.nonblocking.CollRequest` (MPI_Ibcast...), the
receive buffer being written when the schedule completes. Send buffers are packed at
call time, as MPI lets a library do. Receive buffers with folded bytes (smpy.shared_array)
get only their private bytes written (smpy.support.folded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls.core import op_reduction
from smpy.colls.nonblocking import start
from smpy.colls.selectors import Query
from smpy.runtime.packing import block_offset, pack, pack_block, pack_owned, unpack, unpack_block
from smpy.support import folded as _folded

if TYPE_CHECKING:
    from smpy.colls.core import Ctx
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process


# -- one-to-all, all-to-one -------------------------------------------------------------------
def bcast(proc: Process, comm: CommImpl, spec: Any, root: int, nb: bool = False) -> Any:
    me = comm.rank_of[proc.rank]
    data = pack(spec) if me == root else None
    nbytes, elem = spec.count * spec.datatype.size, spec.datatype.size

    def work(ctx: Ctx) -> None:
        out = ctx.sel.run("bcast", ctx, root, data, nbytes, elem)
        if me != root:
            unpack(spec, out, call="MPI_Bcast")

    return start(proc, comm, "MPI_Ibcast" if nb else "MPI_Bcast", work, nb, ti=("bcast", nbytes, root, spec.datatype))


def reduce(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, op: Any, root: int,
           call: str = "MPI_Reduce", nb: bool = False) -> Any:
    me = comm.rank_of[proc.rank]
    src = sspec if sspec is not None else rspec
    data = pack(src)
    red = op_reduction(op, src.datatype)

    def work(ctx: Ctx) -> None:
        res = ctx.sel.run("reduce", ctx, root, data, red)
        if me == root:
            unpack(rspec, res, call=call)

    return start(proc, comm, "MPI_Ireduce" if nb else call, work, nb, ti=("reduce", len(data), root, src.datatype))


def _recv_region(spec: Any) -> memoryview | None:
    """The receive buffer's bytes as one writable view, when the collective may work in it:
    a contiguous datatype and no folded bytes."""
    dt = spec.datatype
    if not dt.contiguous or _folded.active or spec.mem.readonly:
        return None
    return spec.mem[spec.offset:spec.offset + spec.count * dt.size]


def allreduce(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, op: Any, nb: bool = False) -> Any:
    src = sspec if sspec is not None else rspec
    red = op_reduction(op, src.datatype)
    region = None if nb else _recv_region(rspec)
    if region is not None and (sspec is None or sspec.count * sspec.datatype.size == len(region)):
        # A blocking call may work in the receive buffer, as MPICH's and SimGrid's
        # Rabenseifner do (copy the send buffer there, reduce there): an algorithm marked
        # in_place adopts it, saving a copy and a fresh vector per rank; the others get
        # the packed bytes as usual. One marked deferred reads a contiguous send buffer
        # where it is and fills the receive buffer itself (no copy of the vector at all)
        nbytes = len(region)

        def work_in_place(ctx: Ctx) -> None:
            sel = ctx.sel
            algo = sel.resolve("allreduce", sel.name_for("allreduce"), ctx, (region, red))
            if sspec is not None and algo.deferred and sspec.datatype.contiguous:
                res = algo.fn(ctx, region, red, src=sspec.mem[sspec.offset:sspec.offset + nbytes])
            else:
                if sspec is not None:
                    region[:] = (sspec.mem[sspec.offset:sspec.offset + nbytes] if sspec.datatype.contiguous
                                 else pack(sspec))
                res = algo.fn(ctx, region if algo.in_place else region.tobytes(), red)
            if res is not region:
                unpack(rspec, res, call="MPI_Allreduce")

        return start(proc, comm, "MPI_Allreduce", work_in_place, False, ti=("allreduce", nbytes, src.datatype))
    data = pack_owned(src)

    def work(ctx: Ctx) -> None:
        unpack(rspec, ctx.sel.run("allreduce", ctx, data, red), call="MPI_Allreduce")

    return start(proc, comm, "MPI_Iallreduce" if nb else "MPI_Allreduce", work, nb,
                 ti=("allreduce", len(data), src.datatype))


def scan(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, op: Any, exclusive: bool, nb: bool = False) -> Any:
    src = sspec if sspec is not None else rspec
    data = pack(src)
    red = op_reduction(op, src.datatype)
    family = "exscan" if exclusive else "scan"
    call = ("MPI_Iexscan" if nb else "MPI_Exscan") if exclusive else ("MPI_Iscan" if nb else "MPI_Scan")

    def work(ctx: Ctx) -> None:
        res = ctx.sel.run(family, ctx, data, red)
        if res is not None:
            unpack(rspec, res, call=call)

    return start(proc, comm, call, work, nb, ti=(family, len(data), src.datatype))


def reduce_scatter(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, counts: list[int], op: Any,
                   block: bool = False, nb: bool = False) -> Any:
    """MPI_Reduce_scatter (``counts`` per rank) or _block; IN_PLACE: the whole vector is in
    ``rspec`` on input (its first ``counts[me]`` elements get the result)."""
    me = comm.rank_of[proc.rank]
    total = sum(counts)
    if sspec is None:
        data = rspec.datatype.pack(rspec.mem, rspec.offset, total)
        dt = rspec.datatype
    else:
        data, dt = pack(sspec, total), sspec.datatype
    red = op_reduction(op, dt)
    name = "MPI_Reduce_scatter_block" if block else "MPI_Reduce_scatter"
    call = name.replace("MPI_", "MPI_I") if nb else name

    def work(ctx: Ctx) -> None:
        unpack(rspec, ctx.sel.run("reduce_scatter", ctx, data, list(counts), red), capacity=max(rspec.count, counts[me]),
               call=call)

    return start(proc, comm, call, work, nb, ti=("reducescatter", [c * dt.size for c in counts], dt))


def gather(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, root: int, nb: bool = False) -> Any:
    me, size = comm.rank_of[proc.rank], comm.size
    per = rspec.count // size if me == root else 0
    if me == root and sspec is None:
        data = pack(rspec, per, block_offset(rspec, me, per))
    else:
        data = pack(sspec)
    elem = (sspec if sspec is not None else rspec).datatype.size
    call = "MPI_Igather" if nb else "MPI_Gather"

    def work(ctx: Ctx) -> None:
        blocks = ctx.sel.run("gather", ctx, root, data, elem)
        if blocks is not None:
            for i, b in enumerate(blocks):
                if i != me or sspec is not None:
                    unpack(rspec, b, block_offset(rspec, i, per), per, call)

    sdt = (sspec if sspec is not None else rspec).datatype
    rdt = rspec.datatype if me == root else sdt
    return start(proc, comm, call, work, nb, ti=("gather", len(data), len(data), root, sdt, rdt))


def gatherv(proc: Process, comm: CommImpl, sspec: Any, rvec: Any, root: int, nb: bool = False) -> Any:
    me = comm.rank_of[proc.rank]
    data = pack_block(rvec, me) if sspec is None else pack(sspec)
    elem = (sspec if sspec is not None else rvec).datatype.size
    call = "MPI_Igatherv" if nb else "MPI_Gatherv"

    def work(ctx: Ctx) -> None:
        blocks = ctx.sel.run("gatherv", ctx, root, data, elem)
        if blocks is not None:
            for i, b in enumerate(blocks):
                if i != me or sspec is not None:
                    unpack_block(rvec, i, b, call)

    rsizes = [c * rvec.datatype.size for c in rvec.counts] if me == root else [0] * comm.size
    sdt = (sspec if sspec is not None else rvec).datatype
    rdt = rvec.datatype if me == root else sdt
    return start(proc, comm, call, work, nb, ti=("gatherv", len(data), rsizes, root, sdt, rdt))


def scatter(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, root: int, nb: bool = False) -> Any:
    me, size = comm.rank_of[proc.rank], comm.size
    blocks = None
    if me == root:
        per = sspec.count // size
        blocks = [pack(sspec, per, block_offset(sspec, i, per)) for i in range(size)]
        elem, nbytes = sspec.datatype.size, per * sspec.datatype.size
    else:
        elem, nbytes = rspec.datatype.size, rspec.count * rspec.datatype.size
    call = "MPI_Iscatter" if nb else "MPI_Scatter"

    def work(ctx: Ctx) -> None:
        data = ctx.sel.run("scatter", ctx, root, blocks, elem, q=Query(size, nbytes))
        if rspec is not None:
            unpack(rspec, data, call=call)

    rdt = rspec.datatype if rspec is not None else sspec.datatype
    sdt = sspec.datatype if me == root else rdt
    return start(proc, comm, call, work, nb, ti=("scatter", nbytes, nbytes, root, sdt, rdt))


def scatterv(proc: Process, comm: CommImpl, svec: Any, rspec: Any, root: int, nb: bool = False) -> Any:
    me = comm.rank_of[proc.rank]
    blocks = [pack_block(svec, i) for i in range(comm.size)] if me == root else None
    elem = (svec.datatype if me == root else rspec.datatype).size
    call = "MPI_Iscatterv" if nb else "MPI_Scatterv"

    def work(ctx: Ctx) -> None:
        data = ctx.sel.run("scatterv", ctx, root, blocks, elem, q=Query(comm.size, 0))
        if rspec is not None:
            unpack(rspec, data, call=call)

    ti = None
    if proc.world.ti is not None:
        ssizes = [len(b) for b in blocks] if blocks is not None else [0] * comm.size
        rbytes = rspec.count * rspec.datatype.size if rspec is not None else ssizes[me]
        rdt = rspec.datatype if rspec is not None else svec.datatype
        ti = ("scatterv", ssizes, rbytes, root, svec.datatype if me == root else rdt, rdt)
    return start(proc, comm, call, work, nb, ti=ti)


# -- all-to-all -----------------------------------------------------------------------------
def allgather(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, nb: bool = False) -> Any:
    me, size = comm.rank_of[proc.rank], comm.size
    per = rspec.count // size
    data = pack(rspec, per, block_offset(rspec, me, per)) if sspec is None else pack(sspec)
    elem = rspec.datatype.size
    call = "MPI_Iallgather" if nb else "MPI_Allgather"

    def work(ctx: Ctx) -> None:
        blocks = ctx.sel.run("allgather", ctx, data, [len(data)] * size, elem)
        for i, b in enumerate(blocks):
            unpack(rspec, b, block_offset(rspec, i, per), per, call)

    return start(proc, comm, call, work, nb, ti=("allgather", len(data), len(data),
                                                (sspec if sspec is not None else rspec).datatype, rspec.datatype))


def allgatherv(proc: Process, comm: CommImpl, sspec: Any, rvec: Any, nb: bool = False) -> Any:
    me = comm.rank_of[proc.rank]
    data = pack_block(rvec, me) if sspec is None else pack(sspec)
    elem = rvec.datatype.size
    sizes = [c * elem for c in rvec.counts]
    call = "MPI_Iallgatherv" if nb else "MPI_Allgatherv"

    def work(ctx: Ctx) -> None:
        blocks = ctx.sel.run("allgatherv", ctx, data, sizes, elem)
        for i, b in enumerate(blocks):
            unpack_block(rvec, i, b, call)

    return start(proc, comm, call, work, nb, ti=("allgatherv", len(data), sizes,
                                                (sspec if sspec is not None else rvec).datatype, rvec.datatype))


def alltoall(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, nb: bool = False) -> Any:
    size = comm.size
    src = sspec if sspec is not None else rspec
    per = src.count // size
    blocks = [pack(src, per, block_offset(src, i, per)) for i in range(size)]
    rper = rspec.count // size
    call = "MPI_Ialltoall" if nb else "MPI_Alltoall"

    def work(ctx: Ctx) -> None:
        out = ctx.sel.run("alltoall", ctx, blocks)
        for i, b in enumerate(out):
            unpack(rspec, b, block_offset(rspec, i, rper), rper, call)

    return start(proc, comm, call, work, nb, ti=("alltoall", len(blocks[0]) if blocks else 0,
                                                rper * rspec.datatype.size, src.datatype, rspec.datatype))


def alltoallv(proc: Process, comm: CommImpl, svec: Any, rvec: Any, nb: bool = False) -> Any:
    src = svec if svec is not None else rvec
    blocks = [pack_block(src, i) for i in range(comm.size)]
    call = "MPI_Ialltoallv" if nb else "MPI_Alltoallv"

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(ctx.sel.run("alltoallv", ctx, blocks)):
            unpack_block(rvec, i, b, call)

    ti = None
    if proc.world.ti is not None:
        ti = ("alltoallv", [len(b) for b in blocks], [c * rvec.datatype.size for c in rvec.counts],
              src.datatype, rvec.datatype)
    return start(proc, comm, call, work, nb, ti=ti)


def alltoallw(proc: Process, comm: CommImpl, sblocks: list[bytes], unpackers: list[Any], nb: bool = False) -> Any:
    """MPI_Alltoallw: ``sblocks[j]`` is packed for rank j (its own datatype);
    ``unpackers[i](data)`` stores the block from rank i (and checks truncation)."""
    call = "MPI_Ialltoallw" if nb else "MPI_Alltoallw"

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(ctx.sel.run("alltoallw", ctx, list(sblocks))):
            unpackers[i](b)

    return start(proc, comm, call, work, nb)


def barrier(proc: Process, comm: CommImpl, nb: bool = False) -> Any:
    return start(proc, comm, "MPI_Ibarrier" if nb else "MPI_Barrier", lambda ctx: ctx.sel.run("barrier", ctx), nb)

