"""Object (lowercase, pickle-based) collectives, with mpi4py 4's schedules.

Every contribution is serialised with the program's pickle (``dumps``/``loads`` given by
the facade, i.e. ``MPI.pickle``) and every rank gets fresh copies, as with real mpi4py.
What goes on the wire is what mpi4py sends (src/mpi4py/MPI.src/msgpickle.pxi):

* ``bcast`` — MPI_Bcast of the 8-byte size, then MPI_Bcast of the pickle (bytes);
* ``gather``/``scatter``/``allgather``/``alltoall`` — the collective on the 8-byte sizes,
  then its ``v`` variant on the pickles;
* ``reduce``/``allreduce``/``scan``/``exscan`` — no MPI reduction at all: mpi4py's own
  point-to-point trees (``PyMPI_reduce_p2p``: binomial towards 0, a hop to the root;
  allreduce = that reduce + a bcast; ``PyMPI_scan_p2p``: recursive doubling), each
  object message being two blocking sends (size, then pickle) on a private channel.
  So they do not depend on the MPI library's selector — only the bcast inside allreduce
  does. (mpi4py's reduce keeps looping after a rank has sent its partial result: it then
  receives, and its children send, a few useless messages. smpy sends them too.)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.colls.nonblocking import start
from smpy.colls.selectors import Query

if TYPE_CHECKING:
    from smpy.colls.core import Ctx
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process

Dumps = Callable[[Any], bytes]
Loads = Callable[[bytes], Any]
COUNT = 8  # MPI_COUNT


def _cnt(n: int) -> bytes:
    return struct.pack("<q", n)


def _n(b: bytes) -> int:
    return struct.unpack("<q", b)[0]


def _bcast_bytes(ctx: Ctx, root: int, data: bytes | None, k: int) -> bytes:
    """mpi4py's PyMPI_bcast: the size, then the bytes."""
    n = _n(ctx.sel.run("bcast", ctx.sub(k), root, _cnt(len(data)) if data is not None else None, COUNT, 1))
    return ctx.sel.run("bcast", ctx.sub(k + 1), root, data, n, 1)


def bcast(proc: Process, comm: CommImpl, obj: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    me = comm.rank_of[proc.rank]
    data = dumps(obj) if me == root else None
    return loads(start(proc, comm, "MPI_Bcast", lambda ctx: _bcast_bytes(ctx, root, data, 0)))


def gather(proc: Process, comm: CommImpl, obj: Any, root: int, dumps: Dumps, loads: Loads) -> list | None:
    data = dumps(obj)

    def work(ctx: Ctx) -> list | None:
        ctx.sel.run("gather", ctx.sub(0), root, _cnt(len(data)), COUNT)
        return ctx.sel.run("gatherv", ctx.sub(1), root, data, 1)

    blocks = start(proc, comm, "MPI_Gather", work)
    return None if blocks is None else [loads(b) for b in blocks]


def scatter(proc: Process, comm: CommImpl, objs: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    me, size = comm.rank_of[proc.rank], comm.size
    blocks = None
    if me == root:
        objs = list(objs) if objs is not None else [None] * size  # mpi4py: None sends None to all
        if len(objs) != size:
            raise ValueError(f"expecting {size} items, got {len(objs)}")
        blocks = [dumps(o) for o in objs]

    def work(ctx: Ctx) -> bytes:
        counts = [_cnt(len(b)) for b in blocks] if blocks is not None else None
        ctx.sel.run("scatter", ctx.sub(0), root, counts, COUNT, q=Query(size, COUNT))
        return ctx.sel.run("scatterv", ctx.sub(1), root, blocks, 1, q=Query(size, 0))

    return loads(start(proc, comm, "MPI_Scatter", work))


def allgather(proc: Process, comm: CommImpl, obj: Any, dumps: Dumps, loads: Loads) -> list:
    data = dumps(obj)
    size = comm.size

    def work(ctx: Ctx) -> list:
        sizes = [_n(b) for b in ctx.sel.run("allgather", ctx.sub(0), _cnt(len(data)), [COUNT] * size, COUNT)]
        return ctx.sel.run("allgatherv", ctx.sub(1), data, sizes, 1)

    return [loads(b) for b in start(proc, comm, "MPI_Allgather", work)]


def alltoall(proc: Process, comm: CommImpl, objs: Any, dumps: Dumps, loads: Loads) -> list:
    objs = list(objs) if objs is not None else [None] * comm.size  # as mpi4py's pickle_dumpv
    if len(objs) != comm.size:
        raise ValueError(f"expecting {comm.size} items, got {len(objs)}")
    blocks = [dumps(o) for o in objs]

    def work(ctx: Ctx) -> list:
        ctx.sel.run("alltoall", ctx.sub(0), [_cnt(len(b)) for b in blocks])
        return ctx.sel.run("alltoallv", ctx.sub(1), blocks)

    return [loads(b) for b in start(proc, comm, "MPI_Alltoall", work)]


# -- mpi4py's point-to-point reductions ---------------------------------------------------------
def _send_p2p(ctx: Ctx, data: bytes, dest: int) -> None:
    ctx.send(_cnt(len(data)), dest)
    ctx.send(data, dest)


def _recv_p2p(ctx: Ctx, src: int) -> bytes:
    ctx.recv(src)
    return ctx.recv(src)


def _sendrecv_p2p(ctx: Ctx, data: bytes, peer: int) -> bytes:
    ctx.sendrecv(_cnt(len(data)), peer, peer)
    return ctx.sendrecv(data, peer, peer)


def _reduce_p2p(ctx: Ctx, obj: Any, op: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    size, me = ctx.size, ctx.me
    result = obj
    mask = 1
    while mask < size:
        if mask & me:
            _send_p2p(ctx, dumps(result), (me & ~mask) % size)
        elif me | mask < size:
            result = op(result, loads(_recv_p2p(ctx, me | mask)))
        mask <<= 1
    if root != 0:
        if me == 0:
            _send_p2p(ctx, dumps(result), root)
        elif me == root:
            result = loads(_recv_p2p(ctx, 0))
    return result if me == root else None


def reduce(proc: Process, comm: CommImpl, obj: Any, op: Any, root: int, dumps: Dumps, loads: Loads,
           commutative: bool = True) -> Any:
    obj = loads(dumps(obj))  # PyMPI_copy
    return start(proc, comm, "MPI_Reduce", lambda ctx: _reduce_p2p(ctx, obj, op, root, dumps, loads))


def allreduce(proc: Process, comm: CommImpl, obj: Any, op: Any, dumps: Dumps, loads: Loads,
              commutative: bool = True) -> Any:
    obj = loads(dumps(obj))
    me = comm.rank_of[proc.rank]

    def work(ctx: Ctx) -> Any:
        res = _reduce_p2p(ctx.sub(0), obj, op, 0, dumps, loads)
        return loads(_bcast_bytes(ctx, 0, dumps(res) if me == 0 else None, 1))

    return start(proc, comm, "MPI_Allreduce", work)


def scan(proc: Process, comm: CommImpl, obj: Any, op: Any, dumps: Dumps, loads: Loads, exclusive: bool) -> Any:
    obj = loads(dumps(obj))

    def work(ctx: Ctx) -> Any:
        size, me = ctx.size, ctx.me
        partial = result = obj
        have = not exclusive
        mask = 1
        while mask < size:
            peer = me ^ mask
            if peer < size:
                tmp = loads(_sendrecv_p2p(ctx, dumps(partial), peer))
                if me > peer:
                    partial = op(tmp, partial)
                    result = op(tmp, result) if have else tmp
                    have = True
                else:
                    partial = op(partial, tmp)
            mask <<= 1
        if exclusive and me == 0:
            return None
        return result

    return start(proc, comm, "MPI_Exscan" if exclusive else "MPI_Scan", work)
