"""Buffer (uppercase) collectives: pack send buffers, run the algorithm, unpack results.

Specs are the facade's parsed buffer specifications (duck-typed: ``mem``, ``offset``,
``count``, ``datatype`` with ``pack``/``unpack``/``size``/``extent``; vector specs add
``counts``/``displs``). ``None`` as a send spec means ``MPI.IN_PLACE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smpy.colls import basic
from smpy.runtime import errors

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process


def pack(spec: Any, count: int | None = None, offset: int | None = None) -> bytes:
    return spec.datatype.pack(spec.mem, spec.offset if offset is None else offset,
                              spec.count if count is None else count)


def unpack(spec: Any, data: bytes, offset: int | None = None, capacity: int | None = None, call: str = "") -> None:
    dt = spec.datatype
    cap = (spec.count if capacity is None else capacity) * dt.size
    if len(data) > cap:
        errors.raise_error(errors.ERR_TRUNCATE, f"{call}: message of {len(data)} bytes, buffer holds {cap}")
    if data:
        dt.unpack(data, spec.mem, spec.offset if offset is None else offset, len(data) // dt.size)


def _block(spec: Any, i: int, per: int) -> int:
    return spec.offset + i * per * spec.datatype.extent


def _combiner(op: Any, count: int, dt: Any):
    def combine(a: bytes, b: bytes) -> bytes:
        out = bytearray(b)
        op.apply(a, out, count, dt)
        return bytes(out)
    return combine


def bcast(proc: Process, comm: CommImpl, spec: Any, root: int) -> None:
    me = comm.rank_of[proc.rank]
    data = pack(spec) if me == root else None
    data = basic.bcast(proc, comm, root, data, len(data) if data is not None else 0)
    if me != root:
        unpack(spec, data, call="MPI_Bcast")


def reduce(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, op: Any, root: int,
           call: str = "MPI_Reduce") -> None:
    me = comm.rank_of[proc.rank]
    src = sspec if sspec is not None else rspec
    data = pack(src)
    res = basic.reduce(proc, comm, root, data, len(data), _combiner(op, src.count, src.datatype),
                       op.commutative, call)
    if me == root:
        unpack(rspec, res, call=call)


def allreduce(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, op: Any) -> None:
    src = sspec if sspec is not None else rspec
    data = pack(src)
    res = basic.allreduce(proc, comm, data, len(data), _combiner(op, src.count, src.datatype), op.commutative)
    unpack(rspec, res, call="MPI_Allreduce")


def scan(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, op: Any, exclusive: bool) -> None:
    src = sspec if sspec is not None else rspec
    data = pack(src)
    res = basic.scan(proc, comm, data, len(data), _combiner(op, src.count, src.datatype), exclusive,
                     "MPI_Exscan" if exclusive else "MPI_Scan")
    if res is not None:
        unpack(rspec, res, call="MPI_Scan")


def gather(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, root: int) -> None:
    me = comm.rank_of[proc.rank]
    size = comm.size
    if me == root:
        per = rspec.count // size
        data = pack(rspec, per, _block(rspec, me, per)) if sspec is None else pack(sspec)
    else:
        data = pack(sspec)
    blocks = basic.gather(proc, comm, root, data, len(data))
    if blocks is not None:
        for i, b in enumerate(blocks):
            if i != me or sspec is not None:
                unpack(rspec, b, _block(rspec, i, per), per, "MPI_Gather")


def gatherv(proc: Process, comm: CommImpl, sspec: Any, rvec: Any, root: int) -> None:
    me = comm.rank_of[proc.rank]
    if sspec is None:
        data = rvec.datatype.pack(rvec.mem, rvec.displs[me] * rvec.datatype.extent, rvec.counts[me])
    else:
        data = pack(sspec)
    blocks = basic.gather(proc, comm, root, data, len(data), "MPI_Gatherv")
    if blocks is not None:
        for i, b in enumerate(blocks):
            if i != me or sspec is not None:
                _unpack_vec(rvec, i, b, "MPI_Gatherv")


def _unpack_vec(vec: Any, i: int, data: bytes, call: str) -> None:
    dt = vec.datatype
    cap = vec.counts[i] * dt.size
    if len(data) > cap:
        errors.raise_error(errors.ERR_TRUNCATE, f"{call}: block {i} has {len(data)} bytes, room for {cap}")
    if data:
        dt.unpack(data, vec.mem, vec.displs[i] * dt.extent, len(data) // dt.size)


def _pack_vec(vec: Any, i: int) -> bytes:
    return vec.datatype.pack(vec.mem, vec.displs[i] * vec.datatype.extent, vec.counts[i])


def scatter(proc: Process, comm: CommImpl, sspec: Any, rspec: Any, root: int) -> None:
    me = comm.rank_of[proc.rank]
    size = comm.size
    blocks = nbytes = None
    if me == root:
        per = sspec.count // size
        blocks = [pack(sspec, per, _block(sspec, i, per)) for i in range(size)]
        nbytes = [len(b) for b in blocks]
    data = basic.scatter(proc, comm, root, blocks, nbytes)
    if rspec is not None:
        unpack(rspec, data, call="MPI_Scatter")


def scatterv(proc: Process, comm: CommImpl, svec: Any, rspec: Any, root: int) -> None:
    me = comm.rank_of[proc.rank]
    blocks = nbytes = None
    if me == root:
        blocks = [_pack_vec(svec, i) for i in range(comm.size)]
        nbytes = [len(b) for b in blocks]
    data = basic.scatter(proc, comm, root, blocks, nbytes, "MPI_Scatterv")
    if rspec is not None:
        unpack(rspec, data, call="MPI_Scatterv")


def allgather(proc: Process, comm: CommImpl, sspec: Any, rspec: Any) -> None:
    me = comm.rank_of[proc.rank]
    per = rspec.count // comm.size
    data = pack(rspec, per, _block(rspec, me, per)) if sspec is None else pack(sspec)
    blocks = basic.allgather(proc, comm, data, len(data))
    for i, b in enumerate(blocks):
        unpack(rspec, b, _block(rspec, i, per), per, "MPI_Allgather")


def allgatherv(proc: Process, comm: CommImpl, sspec: Any, rvec: Any) -> None:
    me = comm.rank_of[proc.rank]
    data = _pack_vec(rvec, me) if sspec is None else pack(sspec)
    blocks = basic.allgather(proc, comm, data, len(data), "MPI_Allgatherv")
    for i, b in enumerate(blocks):
        _unpack_vec(rvec, i, b, "MPI_Allgatherv")


def alltoall(proc: Process, comm: CommImpl, sspec: Any, rspec: Any) -> None:
    size = comm.size
    src = sspec if sspec is not None else rspec
    per = src.count // size
    blocks = [pack(src, per, _block(src, i, per)) for i in range(size)]
    out = basic.alltoall(proc, comm, blocks, [len(b) for b in blocks])
    rper = rspec.count // size
    for i, b in enumerate(out):
        unpack(rspec, b, _block(rspec, i, rper), rper, "MPI_Alltoall")


def alltoallv(proc: Process, comm: CommImpl, svec: Any, rvec: Any) -> None:
    src = svec if svec is not None else rvec
    blocks = [_pack_vec(src, i) for i in range(comm.size)]
    out = basic.alltoall(proc, comm, blocks, [len(b) for b in blocks], "MPI_Alltoallv")
    for i, b in enumerate(out):
        _unpack_vec(rvec, i, b, "MPI_Alltoallv")
