"""First collective algorithms, on payloads (the facade packs and unpacks buffers).

Each function runs the real message schedule of its algorithm through
:mod:`smpy.runtime.p2p` on the communicator's collective channel, so its simulated time
comes from those messages. Payloads are opaque: ``bytes`` for buffer collectives, pickled
bytes or objects for the lowercase ones; ``nbytes`` gives the wire size.

Algorithms (the collectives issue adds the named algorithms and selectors):

* barrier — dissemination (Hensgen et al.): ⌈log2 p⌉ rounds, rank r sends to r + 2^k
  and receives from r − 2^k.
* bcast — binomial tree rooted at ``root`` (MPICH's short-message bcast).
* reduce — binomial tree on ranks relative to the root for commutative ops; for
  non-commutative ops a binomial tree on absolute ranks towards rank 0, which keeps the
  operands in rank order, then 0 → root.
* allreduce — reduce to 0 then bcast.
* gather / scatter — linear (root posts all receives / sends, Open MPI's basic_linear).
* allgather — gather to 0 then bcast of the list.
* alltoall — every rank posts all its receives and sends (Open MPI's basic_linear).
* scan / exscan — linear chain.

``combine(a, b)`` must return ``a op b`` with ``a`` from lower ranks than ``b``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.runtime import p2p
from smpy.runtime.constants import COLL

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.world import Process

TAG_BARRIER = 1
TAG_BCAST = 2
TAG_REDUCE = 3
TAG_GATHER = 4
TAG_SCATTER = 5
TAG_ALLTOALL = 6
TAG_SCAN = 7

Combine = Callable[[Any, Any], Any]


def barrier(proc: Process, comm: CommImpl) -> None:
    size = comm.size
    me = comm.rank_of[proc.rank]
    k = 1
    while k < size:
        r = p2p.irecv(proc, comm, COLL, (me - k) % size, TAG_BARRIER, call="MPI_Barrier")
        p2p.send(proc, comm, COLL, None, 0, (me + k) % size, TAG_BARRIER, call="MPI_Barrier")
        p2p.wait(proc, r)
        k <<= 1


def bcast(proc: Process, comm: CommImpl, root: int, payload: Any, nbytes: int, call: str = "MPI_Bcast") -> Any:
    """Binomial tree. ``payload``/``nbytes`` matter at the root; returns the payload."""
    size = comm.size
    me = comm.rank_of[proc.rank]
    rel = (me - root) % size
    mask = 1
    while mask < size:
        if rel & mask:
            src = (me - mask) % size
            r = p2p.recv(proc, comm, COLL, src, TAG_BCAST, call=call)
            payload, nbytes = r.payload, r.nbytes
            break
        mask <<= 1
    mask >>= 1
    reqs = []
    while mask > 0:
        if rel + mask < size:
            reqs.append(p2p.isend(proc, comm, COLL, payload, nbytes, (me + mask) % size, TAG_BCAST, call=call))
        mask >>= 1
    p2p.waitall(proc, reqs)
    return payload


def reduce(proc: Process, comm: CommImpl, root: int, value: Any, nbytes: int, combine: Combine,
           commutative: bool, call: str = "MPI_Reduce") -> Any:
    """Binomial reduction; returns the result at ``root`` and None elsewhere."""
    size = comm.size
    me = comm.rank_of[proc.rank]
    target = root if commutative else 0
    rel = (me - target) % size
    acc = value
    mask = 1
    while mask < size:
        if rel & mask:
            p2p.send(proc, comm, COLL, acc, nbytes, (me - mask) % size, TAG_REDUCE, call=call)
            acc = None
            break
        if rel + mask < size:
            r = p2p.recv(proc, comm, COLL, (me + mask) % size, TAG_REDUCE, call=call)
            acc = combine(acc, r.payload)
        mask <<= 1
    if target != root:
        if me == target:
            p2p.send(proc, comm, COLL, acc, nbytes, root, TAG_REDUCE, call=call)
            acc = None
        elif me == root:
            acc = p2p.recv(proc, comm, COLL, target, TAG_REDUCE, call=call).payload
    return acc if me == root else None


def allreduce(proc: Process, comm: CommImpl, value: Any, nbytes: int, combine: Combine,
              commutative: bool, call: str = "MPI_Allreduce") -> Any:
    res = reduce(proc, comm, 0, value, nbytes, combine, commutative, call)
    return bcast(proc, comm, 0, res, nbytes, call)


def gather(proc: Process, comm: CommImpl, root: int, value: Any, nbytes: int,
           call: str = "MPI_Gather") -> list[Any] | None:
    size = comm.size
    me = comm.rank_of[proc.rank]
    if me != root:
        p2p.send(proc, comm, COLL, value, nbytes, root, TAG_GATHER, call=call)
        return None
    reqs = [p2p.irecv(proc, comm, COLL, i, TAG_GATHER, call=call) if i != me else None for i in range(size)]
    out = []
    for r in reqs:
        if r is None:
            out.append(value)
        else:
            p2p.wait(proc, r)
            out.append(r.payload)
    return out


def scatter(proc: Process, comm: CommImpl, root: int, values: list[Any] | None, nbytes: list[int] | None,
            call: str = "MPI_Scatter") -> Any:
    size = comm.size
    me = comm.rank_of[proc.rank]
    if me != root:
        return p2p.recv(proc, comm, COLL, root, TAG_SCATTER, call=call).payload
    assert values is not None and nbytes is not None
    reqs = [p2p.isend(proc, comm, COLL, values[i], nbytes[i], i, TAG_SCATTER, call=call)
            for i in range(size) if i != me]
    p2p.waitall(proc, reqs)
    return values[me]


def allgather(proc: Process, comm: CommImpl, value: Any, nbytes: int, call: str = "MPI_Allgather") -> list[Any]:
    vals = gather(proc, comm, 0, value, nbytes, call)
    return bcast(proc, comm, 0, vals, nbytes * comm.size, call)


def alltoall(proc: Process, comm: CommImpl, values: list[Any], nbytes: list[int],
             call: str = "MPI_Alltoall") -> list[Any]:
    size = comm.size
    me = comm.rank_of[proc.rank]
    rreqs = [p2p.irecv(proc, comm, COLL, (me - k) % size, TAG_ALLTOALL, call=call) for k in range(1, size)]
    sreqs = [p2p.isend(proc, comm, COLL, values[(me + k) % size], nbytes[(me + k) % size], (me + k) % size,
                       TAG_ALLTOALL, call=call) for k in range(1, size)]
    out: list[Any] = [None] * size
    out[me] = values[me]
    for k, r in enumerate(rreqs, start=1):
        p2p.wait(proc, r)
        out[(me - k) % size] = r.payload
    p2p.waitall(proc, sreqs)
    return out


def scan(proc: Process, comm: CommImpl, value: Any, nbytes: int, combine: Combine, exclusive: bool,
         call: str = "MPI_Scan") -> Any:
    """Inclusive (or exclusive) prefix reduction along a chain; exscan gives None at rank 0."""
    size = comm.size
    me = comm.rank_of[proc.rank]
    prefix = None
    if me > 0:
        prefix = p2p.recv(proc, comm, COLL, me - 1, TAG_SCAN, call=call).payload
    incl = value if prefix is None else combine(prefix, value)
    if me + 1 < size:
        p2p.send(proc, comm, COLL, incl, nbytes, me + 1, TAG_SCAN, call=call)
    return prefix if exclusive else incl
