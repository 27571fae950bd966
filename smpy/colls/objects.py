"""Object (lowercase, pickle-based) collectives, as mpi4py runs them.

Every contribution is serialised with the program's pickle (``dumps``/``loads`` given by
the facade, i.e. ``MPI.pickle``); the serialised size is what crosses the network, and
every rank gets fresh copies (real mpi4py never hands back the caller's own object).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.colls import basic

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process

Dumps = Callable[[Any], bytes]
Loads = Callable[[bytes], Any]


def bcast(proc: Process, comm: CommImpl, obj: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    me = comm.rank_of[proc.rank]
    data = dumps(obj) if me == root else None
    data = basic.bcast(proc, comm, root, data, len(data) if data is not None else 0)
    return loads(data)


def _combiner(op: Any, dumps: Dumps, loads: Loads):
    def combine(a: bytes, b: bytes) -> bytes:
        return dumps(op(loads(a), loads(b)))
    return combine


def reduce(proc: Process, comm: CommImpl, obj: Any, op: Any, root: int, dumps: Dumps, loads: Loads,
           commutative: bool) -> Any:
    data = dumps(obj)
    res = basic.reduce(proc, comm, root, data, len(data), _combiner(op, dumps, loads), commutative)
    return None if res is None else loads(res)


def allreduce(proc: Process, comm: CommImpl, obj: Any, op: Any, dumps: Dumps, loads: Loads,
              commutative: bool) -> Any:
    data = dumps(obj)
    res = basic.allreduce(proc, comm, data, len(data), _combiner(op, dumps, loads), commutative)
    return loads(res)


def scan(proc: Process, comm: CommImpl, obj: Any, op: Any, dumps: Dumps, loads: Loads, exclusive: bool) -> Any:
    data = dumps(obj)
    res = basic.scan(proc, comm, data, len(data), _combiner(op, dumps, loads), exclusive,
                     "MPI_Exscan" if exclusive else "MPI_Scan")
    return None if res is None else loads(res)


def gather(proc: Process, comm: CommImpl, obj: Any, root: int, dumps: Dumps, loads: Loads) -> list | None:
    data = dumps(obj)
    blocks = basic.gather(proc, comm, root, data, len(data))
    return None if blocks is None else [loads(b) for b in blocks]


def scatter(proc: Process, comm: CommImpl, objs: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    me = comm.rank_of[proc.rank]
    blocks = nbytes = None
    if me == root:
        objs = list(objs) if objs is not None else []
        if len(objs) != comm.size:
            raise ValueError(f"expecting {comm.size} items, got {len(objs)}")
        blocks = [dumps(o) for o in objs]
        nbytes = [len(b) for b in blocks]
    return loads(basic.scatter(proc, comm, root, blocks, nbytes))


def allgather(proc: Process, comm: CommImpl, obj: Any, dumps: Dumps, loads: Loads) -> list:
    data = dumps(obj)
    return [loads(b) for b in basic.allgather(proc, comm, data, len(data))]


def alltoall(proc: Process, comm: CommImpl, objs: Any, dumps: Dumps, loads: Loads) -> list:
    objs = list(objs)
    if len(objs) != comm.size:
        raise ValueError(f"expecting {comm.size} items, got {len(objs)}")
    blocks = [dumps(o) for o in objs]
    return [loads(b) for b in basic.alltoall(proc, comm, blocks, [len(b) for b in blocks])]
