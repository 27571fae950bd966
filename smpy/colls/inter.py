"""Collectives on intercommunicators, with MPICH's intercommunicator algorithms.

Every function runs on one *side* of an intercommunicator (see :mod:`smpy.runtime.inter`):
``ctx.isend``/``ctx.irecv`` address the remote group, and the intra-group steps run the
selected intracommunicator algorithm on the side's private ``local`` communicator
(:func:`_lc`). Rooted collectives follow MPI: in the root's group the root passes
``ROOT`` and the others ``PROC_NULL`` (they do nothing); in the other group ``root`` is
the root's rank in the remote group. The schedules are MPICH's (mpir_coll ``*_inter_*``):

* Barrier — local barrier; leaders (local rank 0) swap one byte; local bcast of it.
* Bcast — root → remote rank 0; local bcast. Reduce — local reduce to 0; 0 → root.
* Gather — local gather to 0; 0 → root (all blocks in one message). Scatter — root →
  remote 0 (all blocks); local scatter. Gatherv/Scatterv — linear, root ↔ each rank.
* Allreduce / Allgather(v) / Reduce_scatter_block — local reduce (gather) to 0, leaders
  swap, local bcast (scatter).
* Alltoall(v) — pairwise exchange: at step i, send to ``(me + i) % m``, receive from
  ``(me - i) % m`` (``m`` = the larger group size; ranks past a group's size skip).

The lowercase (pickle) versions follow mpi4py's msgpickle.pxi: the counts collective, then
the ``v`` collective of the pickles; reduce/allreduce use mpi4py's point-to-point reduce
on the local group, then one hop (reduce) or a leader swap and a local bcast (allreduce).

Results: in the non-root directions each group gets the *remote* group's data (Allgather
fills ``remote size`` blocks, Allreduce reduces the remote group's vectors).
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smpy.colls import objects as _obj
from smpy.colls.core import Reduction, cut, op_reduction
from smpy.colls.nonblocking import start
from smpy.colls.selectors import Query
from smpy.runtime import p2p
from smpy.runtime.comm import CommImpl
from smpy.runtime.constants import COLL, PROC_NULL, ROOT, UNDEFINED
from smpy.runtime.inter import make_pair
from smpy.runtime.packing import block_offset, pack, pack_block, unpack, unpack_block
from smpy.support.internal import SmpyInternalError

if TYPE_CHECKING:
    from smpy.colls.core import Ctx
    from smpy.runtime.world import Process

Dumps = Callable[[Any], bytes]
Loads = Callable[[bytes], Any]
COUNT = 8  # MPI_COUNT


def _lc(ctx: Ctx, n: int) -> Ctx:
    """The context of the ``n``-th intra-group step of this call, on the local group."""
    return ctx.on(ctx.comm.local, 16 * n)


def _swap(ctx: Ctx, data: Any, t: int = 0) -> Any:
    """Leaders (local rank 0 of both groups) exchange ``data``."""
    s = ctx.isend(data, 0, t)
    r = ctx.irecv(0, t)
    ctx.waitall([s, r])
    return r.payload


def _cnt(n: int) -> bytes:
    return struct.pack("<q", n)


def _n(b: bytes) -> int:
    return struct.unpack("<q", b)[0]


# -- schedules on payloads -------------------------------------------------------------------
def _barrier(ctx: Ctx) -> None:
    ctx.sel.run("barrier", _lc(ctx, 0))
    tok = _swap(ctx, b"\0") if ctx.me == 0 else None
    ctx.sel.run("bcast", _lc(ctx, 1), 0, tok, 1, 1)


def _bcast(ctx: Ctx, root: int, data: bytes | None, nbytes: int, elem: int, n: int = 0) -> bytes | None:
    if root == ROOT:
        ctx.send(data, 0, n)
        return None
    if root == PROC_NULL:
        return None
    got = ctx.recv(root, n) if ctx.me == 0 else None
    return ctx.sel.run("bcast", _lc(ctx, n), 0, got, nbytes, elem)


def _gather(ctx: Ctx, root: int, data: bytes | None, elem: int, n: int = 0) -> list | None:
    if root == ROOT:
        return list(ctx.recv(0, n))
    if root == PROC_NULL:
        return None
    blocks = ctx.sel.run("gather", _lc(ctx, n), 0, data, elem)
    if ctx.me == 0:
        ctx.send(tuple(blocks), root, n)
    return None


def _gatherv(ctx: Ctx, root: int, data: bytes | None, rsize: int, n: int = 0) -> list | None:
    if root == ROOT:
        reqs = [ctx.irecv(i, n) for i in range(rsize)]
        ctx.waitall(reqs)
        return [r.payload for r in reqs]
    if root != PROC_NULL:
        ctx.send(data, root, n)
    return None


def _scatter(ctx: Ctx, root: int, blocks: list | None, nbytes: int, elem: int, n: int = 0) -> bytes | None:
    if root == ROOT:
        ctx.send(tuple(blocks), 0, n)
        return None
    if root == PROC_NULL:
        return None
    got = list(ctx.recv(root, n)) if ctx.me == 0 else None
    lctx = _lc(ctx, n)
    return ctx.sel.run("scatter", lctx, 0, got, elem, q=Query(lctx.size, nbytes))


def _scatterv(ctx: Ctx, root: int, blocks: list | None, n: int = 0) -> bytes | None:
    if root == ROOT:
        ctx.waitall([ctx.isend(b, i, n) for i, b in enumerate(blocks)])
        return None
    if root == PROC_NULL:
        return None
    return ctx.recv(root, n)


def _allgather(ctx: Ctx, data: bytes, sizes: list[int], elem: int, n: int = 0) -> list[bytes]:
    """Blocks of the remote group (``sizes``: their byte sizes, known to every rank)."""
    blocks = ctx.sel.run("gather", _lc(ctx, 2 * n), 0, data, elem)
    cat = b"".join(_swap(ctx, tuple(blocks), n)) if ctx.me == 0 else None
    out = ctx.sel.run("bcast", _lc(ctx, 2 * n + 1), 0, cat, sum(sizes), elem)
    pieces, pos = [], 0
    for s in sizes:
        pieces.append(out[pos:pos + s])
        pos += s
    return pieces


def _alltoall(ctx: Ctx, blocks: list, n: int = 0) -> list:
    me, rsize = ctx.me, ctx.comm.rsize
    m = max(ctx.size, rsize)
    out: list = [b""] * rsize
    for i in range(m):
        dst, src = (me + i) % m, (me - i) % m
        reqs = []
        r = None
        if src < rsize:
            r = ctx.irecv(src, n)
            reqs.append(r)
        if dst < rsize:
            reqs.append(ctx.isend(blocks[dst], dst, n))
        ctx.waitall(reqs)
        if r is not None:
            out[src] = r.payload
    return out


def _allreduce(ctx: Ctx, data: bytes, red: Reduction) -> bytes:
    res = ctx.sel.run("reduce", _lc(ctx, 0), 0, data, red)
    if ctx.me == 0:
        res = _swap(ctx, res)
    return ctx.sel.run("bcast", _lc(ctx, 1), 0, res, len(data), red.elem)


# -- buffer collectives (specs parsed by the facade; None where the role has no buffer) ----------
def barrier(proc: Process, side: CommImpl, nb: bool = False) -> Any:
    return start(proc, side, "MPI_Ibarrier" if nb else "MPI_Barrier", _barrier, nb)


def bcast(proc: Process, side: CommImpl, spec: Any, root: int, nb: bool = False) -> Any:
    call = "MPI_Ibcast" if nb else "MPI_Bcast"
    data = pack(spec) if root == ROOT else None
    nbytes, elem = (spec.count * spec.datatype.size, spec.datatype.size) if spec is not None else (0, 1)

    def work(ctx: Ctx) -> None:
        out = _bcast(ctx, root, data, nbytes, elem)
        if out is not None:
            unpack(spec, out, call=call)

    return start(proc, side, call, work, nb)


def reduce(proc: Process, side: CommImpl, sspec: Any, rspec: Any, op: Any, root: int, nb: bool = False) -> Any:
    call = "MPI_Ireduce" if nb else "MPI_Reduce"
    data = red = None
    if root not in (ROOT, PROC_NULL):
        data, red = pack(sspec), op_reduction(op, sspec.datatype)

    def work(ctx: Ctx) -> None:
        if root == ROOT:
            unpack(rspec, ctx.recv(0), call=call)
        elif root != PROC_NULL:
            res = ctx.sel.run("reduce", _lc(ctx, 0), 0, data, red)
            if ctx.me == 0:
                ctx.send(res, root)

    return start(proc, side, call, work, nb)


def allreduce(proc: Process, side: CommImpl, sspec: Any, rspec: Any, op: Any, nb: bool = False) -> Any:
    call = "MPI_Iallreduce" if nb else "MPI_Allreduce"
    src = sspec if sspec is not None else rspec
    data, red = pack(src), op_reduction(op, src.datatype)
    return start(proc, side, call, lambda ctx: unpack(rspec, _allreduce(ctx, data, red), call=call), nb)


def reduce_scatter(proc: Process, side: CommImpl, sspec: Any, rspec: Any, counts: list[int], op: Any,
                   block: bool = False, nb: bool = False) -> Any:
    """Reduce the remote group's vectors (``sum(counts)`` elements), scatter by ``counts``."""
    name = "MPI_Reduce_scatter_block" if block else "MPI_Reduce_scatter"
    call = name.replace("MPI_", "MPI_I") if nb else name
    src = sspec if sspec is not None else rspec
    total = sum(counts)
    data, red = pack(src, total), op_reduction(op, src.datatype)
    elem = src.datatype.size

    def work(ctx: Ctx) -> None:
        res = ctx.sel.run("reduce", _lc(ctx, 0), 0, data, red)
        blocks = None
        if ctx.me == 0:
            blocks = cut(_swap(ctx, res), counts, elem)
        lctx = _lc(ctx, 1)
        unpack(rspec, ctx.sel.run("scatterv", lctx, 0, blocks, elem, q=Query(lctx.size, 0)),
               capacity=max(rspec.count, counts[ctx.me]), call=call)

    return start(proc, side, call, work, nb)


def gather(proc: Process, side: CommImpl, sspec: Any, rspec: Any, root: int, nb: bool = False) -> Any:
    call = "MPI_Igather" if nb else "MPI_Gather"
    data = pack(sspec) if root not in (ROOT, PROC_NULL) else None
    elem = sspec.datatype.size if data is not None else 1

    def work(ctx: Ctx) -> None:
        blocks = _gather(ctx, root, data, elem)
        if blocks is not None:
            per = rspec.count // side.rsize
            for i, b in enumerate(blocks):
                unpack(rspec, b, block_offset(rspec, i, per), per, call)

    return start(proc, side, call, work, nb)


def gatherv(proc: Process, side: CommImpl, sspec: Any, rvec: Any, root: int, nb: bool = False) -> Any:
    call = "MPI_Igatherv" if nb else "MPI_Gatherv"
    data = pack(sspec) if root not in (ROOT, PROC_NULL) else None

    def work(ctx: Ctx) -> None:
        blocks = _gatherv(ctx, root, data, side.rsize)
        if blocks is not None:
            for i, b in enumerate(blocks):
                unpack_block(rvec, i, b, call)

    return start(proc, side, call, work, nb)


def scatter(proc: Process, side: CommImpl, sspec: Any, rspec: Any, root: int, nb: bool = False) -> Any:
    call = "MPI_Iscatter" if nb else "MPI_Scatter"
    blocks = None
    nbytes, elem = 0, 1
    if root == ROOT:
        per = sspec.count // side.rsize
        blocks = [pack(sspec, per, block_offset(sspec, i, per)) for i in range(side.rsize)]
    elif root != PROC_NULL:
        nbytes, elem = rspec.count * rspec.datatype.size, rspec.datatype.size

    def work(ctx: Ctx) -> None:
        out = _scatter(ctx, root, blocks, nbytes, elem)
        if out is not None:
            unpack(rspec, out, call=call)

    return start(proc, side, call, work, nb)


def scatterv(proc: Process, side: CommImpl, svec: Any, rspec: Any, root: int, nb: bool = False) -> Any:
    call = "MPI_Iscatterv" if nb else "MPI_Scatterv"
    blocks = [pack_block(svec, i) for i in range(side.rsize)] if root == ROOT else None

    def work(ctx: Ctx) -> None:
        out = _scatterv(ctx, root, blocks)
        if out is not None:
            unpack(rspec, out, call=call)

    return start(proc, side, call, work, nb)


def allgather(proc: Process, side: CommImpl, sspec: Any, rspec: Any, nb: bool = False) -> Any:
    call = "MPI_Iallgather" if nb else "MPI_Allgather"
    data = pack(sspec)
    rsize, elem = side.rsize, rspec.datatype.size
    per = rspec.count // rsize

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(_allgather(ctx, data, [per * elem] * rsize, sspec.datatype.size)):
            unpack(rspec, b, block_offset(rspec, i, per), per, call)

    return start(proc, side, call, work, nb)


def allgatherv(proc: Process, side: CommImpl, sspec: Any, rvec: Any, nb: bool = False) -> Any:
    call = "MPI_Iallgatherv" if nb else "MPI_Allgatherv"
    data = pack(sspec)
    elem = rvec.datatype.size
    sizes = [c * elem for c in rvec.counts]

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(_allgather(ctx, data, sizes, sspec.datatype.size)):
            unpack_block(rvec, i, b, call)

    return start(proc, side, call, work, nb)


def alltoall(proc: Process, side: CommImpl, sspec: Any, rspec: Any, nb: bool = False) -> Any:
    call = "MPI_Ialltoall" if nb else "MPI_Alltoall"
    rsize = side.rsize
    per, rper = sspec.count // rsize, rspec.count // rsize
    blocks = [pack(sspec, per, block_offset(sspec, i, per)) for i in range(rsize)]

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(_alltoall(ctx, blocks)):
            unpack(rspec, b, block_offset(rspec, i, rper), rper, call)

    return start(proc, side, call, work, nb)


def alltoallv(proc: Process, side: CommImpl, svec: Any, rvec: Any, nb: bool = False) -> Any:
    call = "MPI_Ialltoallv" if nb else "MPI_Alltoallv"
    blocks = [pack_block(svec, i) for i in range(side.rsize)]

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(_alltoall(ctx, blocks)):
            unpack_block(rvec, i, b, call)

    return start(proc, side, call, work, nb)


def alltoallw(proc: Process, side: CommImpl, sblocks: list[bytes], unpackers: list[Any], nb: bool = False) -> Any:
    call = "MPI_Ialltoallw" if nb else "MPI_Alltoallw"

    def work(ctx: Ctx) -> None:
        for i, b in enumerate(_alltoall(ctx, list(sblocks))):
            unpackers[i](b)

    return start(proc, side, call, work, nb)


# -- object (lowercase) collectives ----------------------------------------------------------
def obj_bcast(proc: Process, side: CommImpl, obj: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    data = dumps(obj) if root == ROOT else None

    def work(ctx: Ctx) -> Any:
        c = _bcast(ctx, root, _cnt(len(data)) if data is not None else None, COUNT, COUNT, 0)
        out = _bcast(ctx, root, data, _n(c) if c is not None else 0, 1, 1)
        return None if out is None else loads(out)

    return start(proc, side, "MPI_Bcast", work)


def obj_gather(proc: Process, side: CommImpl, obj: Any, root: int, dumps: Dumps, loads: Loads) -> list | None:
    data = dumps(obj) if root not in (ROOT, PROC_NULL) else None

    def work(ctx: Ctx) -> list | None:
        _gather(ctx, root, _cnt(len(data)) if data is not None else None, COUNT, 0)
        blocks = _gatherv(ctx, root, data, side.rsize, 1)
        return None if blocks is None else [loads(b) for b in blocks]

    return start(proc, side, "MPI_Gather", work)


def obj_scatter(proc: Process, side: CommImpl, objs: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    blocks = None
    if root == ROOT:
        objs = list(objs) if objs is not None else [None] * side.rsize  # as mpi4py's pickle_dumpv
        if len(objs) != side.rsize:
            raise ValueError(f"expecting {side.rsize} items, got {len(objs)}")
        blocks = [dumps(o) for o in objs]

    def work(ctx: Ctx) -> Any:
        counts = [_cnt(len(b)) for b in blocks] if blocks is not None else None
        _scatter(ctx, root, counts, COUNT, COUNT, 0)
        out = _scatterv(ctx, root, blocks, 1)
        return None if out is None else loads(out)

    return start(proc, side, "MPI_Scatter", work)


def obj_allgather(proc: Process, side: CommImpl, obj: Any, dumps: Dumps, loads: Loads) -> list:
    data = dumps(obj)
    rsize = side.rsize

    def work(ctx: Ctx) -> list:
        sizes = [_n(b) for b in _allgather(ctx, _cnt(len(data)), [COUNT] * rsize, COUNT, 0)]
        return [loads(b) for b in _allgather(ctx, data, sizes, 1, 1)]

    return start(proc, side, "MPI_Allgather", work)


def obj_alltoall(proc: Process, side: CommImpl, objs: Any, dumps: Dumps, loads: Loads) -> list:
    objs = list(objs) if objs is not None else [None] * side.rsize  # as mpi4py's pickle_dumpv
    if len(objs) != side.rsize:
        raise ValueError(f"expecting {side.rsize} items, got {len(objs)}")
    blocks = [dumps(o) for o in objs]

    def work(ctx: Ctx) -> list:
        _alltoall(ctx, [_cnt(len(b)) for b in blocks], 0)
        return [loads(b) for b in _alltoall(ctx, blocks, 1)]

    return start(proc, side, "MPI_Alltoall", work)


def obj_reduce(proc: Process, side: CommImpl, obj: Any, op: Any, root: int, dumps: Dumps, loads: Loads) -> Any:
    """mpi4py's PyMPI_reduce_inter: p2p reduce in the local group, then 0 → root."""
    obj = loads(dumps(obj))

    def work(ctx: Ctx) -> Any:
        if root == ROOT:
            return loads(_obj._recv_p2p(ctx, 0))
        if root == PROC_NULL:
            return None
        res = _obj._reduce_p2p(_lc(ctx, 0), obj, op, 0, dumps, loads)
        if ctx.me == 0:
            _obj._send_p2p(ctx, dumps(res), root)
        return None

    return start(proc, side, "MPI_Reduce", work)


def obj_allreduce(proc: Process, side: CommImpl, obj: Any, op: Any, dumps: Dumps, loads: Loads) -> Any:
    """mpi4py's PyMPI_allreduce_inter: local p2p reduce, leaders swap, local bcast."""
    obj = loads(dumps(obj))

    def work(ctx: Ctx) -> Any:
        res = _obj._reduce_p2p(_lc(ctx, 0), obj, op, 0, dumps, loads)
        data = None
        if ctx.me == 0:
            mine = dumps(res)
            _swap(ctx, _cnt(len(mine)), 0)
            data = _swap(ctx, mine, 1)
        return loads(_obj._bcast_bytes(_lc(ctx, 1), 0, data, 0))

    return start(proc, side, "MPI_Allreduce", work)


# -- agreement (ULFM's MPI_Comm_agree with no failed process) --------------------------------
def _band(a: bytes, b: bytes) -> bytes:
    return struct.pack("<i", struct.unpack("<i", a)[0] & struct.unpack("<i", b)[0])


_ft_shadows: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _ft_shadow(comm: CommImpl) -> CommImpl:
    """A private copy of ``comm`` (same groups) for the agreement's messages: like ULFM's
    own context, so that agreements do not take part in the ordering of the
    communicator's other collectives (a rank may issue Iagree before a Barrier that the
    others issue first)."""
    if comm.remote is None:
        shadow = _ft_shadows.get(comm)
        if shadow is None:
            shadow = _ft_shadows[comm] = CommImpl(comm.world, comm.group, comm.name)
        return shadow
    pair = comm.pair
    shadow = _ft_shadows.get(pair)
    if shadow is None:
        shadow = _ft_shadows[pair] = make_pair(comm.world, pair.a.group, pair.b.group, pair.low is pair.a)
    return shadow.a if comm is pair.a else shadow.b


def agree(proc: Process, comm: CommImpl, flag: int, nb: bool = False, store: Callable[[int], None] | None = None) -> Any:
    """Bitwise AND of ``flag`` over every process of ``comm`` (an allreduce); on an
    intercommunicator, as MPICH does, each group gets the AND over the remote group. Returns the
    result (blocking) or a request that calls ``store(result)`` when it completes."""
    data = struct.pack("<i", flag)
    red = Reduction(_band, True, 4)
    call = "MPIX_Comm_iagree" if nb else "MPIX_Comm_agree"

    def work(ctx: Ctx) -> int:
        if ctx.comm.remote is None:
            out = ctx.sel.run("allreduce", ctx, data, red)
        else:
            res = ctx.sel.run("reduce", _lc(ctx, 0), 0, data, red)
            if ctx.me == 0:  # MPICH: each group gets the remote group's AND
                res = _swap(ctx, res)
            out = ctx.sel.run("bcast", _lc(ctx, 1), 0, res, 4, 4)
        value = struct.unpack("<i", out)[0]
        if store is not None:
            store(value)
        return value

    return start(proc, _ft_shadow(comm), call, work, nb)


# -- creation of intercommunicators -------------------------------------------------------------
_XTAG = 1 << 39  # leader exchanges on the peer communicator's collective channel (below every seq)


def create_intercomm(proc: Process, local: CommImpl, local_leader: int, peer: CommImpl | None,
                     remote_leader: int, tag: int, call: str = "MPI_Intercomm_create") -> CommImpl:
    """MPI_Intercomm_create: the leaders swap their groups over ``peer`` (the lower world
    rank builds the pair), then each leader bcasts the remote group in its local group.
    Returns the calling process's side."""
    me = local.rank_of[proc.rank]
    side: CommImpl | None = None
    if me == local_leader:
        other = peer.group[remote_leader]
        mine = list(local.group)
        t = _XTAG + tag
        if proc.rank < other:
            r = p2p.recv(proc, peer, COLL, remote_leader, t, None, call)
            pair = make_pair(proc.world, mine, r.payload, True)
            p2p.send(proc, peer, COLL, (mine, pair), 4 * len(mine), remote_leader, t, call)
            side = pair.a
        else:
            p2p.send(proc, peer, COLL, mine, 4 * len(mine), remote_leader, t, call)
            _, pair = p2p.recv(proc, peer, COLL, remote_leader, t, None, call).payload
            side = pair.b
        local.agree(proc, ("intercomm", local_leader), lambda: side, local.size)

    def work(ctx: Ctx) -> None:
        if ctx.me == local_leader:
            n, rg = _cnt(side.rsize), struct.pack(f"<{side.rsize}i", *side.remote)
        else:
            n = rg = None
        k = _n(ctx.sel.run("bcast", ctx.sub(0), local_leader, n, COUNT, COUNT))
        ctx.sel.run("bcast", ctx.sub(1), local_leader, rg, 4 * k, 4)

    start(proc, local, call, work)
    if side is None:
        side = local.agree(proc, ("intercomm", local_leader), _missing, local.size)
    return side


def _missing() -> Any:
    raise SmpyInternalError("intercommunicator side not built by its leader")


# -- communicators made from an intercommunicator -------------------------------------------
def dup(proc: Process, side: CommImpl, call: str = "MPI_Comm_dup") -> CommImpl:
    """A new intercommunicator over the same groups (a barrier agrees on it, as MPICH's
    context-id allocation costs one)."""
    start(proc, side, call, _barrier)
    return dup_agree(proc, side)


def dup_agree(proc: Process, side: CommImpl) -> CommImpl:
    """This process's side of the copy of ``side``'s intercommunicator (no communication)."""
    pair = side.pair
    new = pair.agree(proc, None, lambda: make_pair(proc.world, pair.a.group, pair.b.group, pair.low is pair.a),
                     pair.a.size + pair.b.size)
    return new.a if side is pair.a else new.b


def split(proc: Process, side: CommImpl, color: int, key: int, call: str = "MPI_Comm_split") -> CommImpl | None:
    """MPI_Comm_split on an intercommunicator: (color, key) allgathered in each group and
    swapped by the leaders; each color present in both groups makes an intercommunicator
    (members ordered by key, then old rank); others get None (MPI_COMM_NULL)."""
    lsize, rsize = side.size, side.rsize

    def work(ctx: Ctx) -> tuple[list, list]:
        loc = ctx.sel.run("allgather", _lc(ctx, 0), struct.pack("<2i", color, key), [8] * lsize, 4)
        rem = _swap(ctx, b"".join(loc)) if ctx.me == 0 else None
        rem = ctx.sel.run("bcast", _lc(ctx, 1), 0, rem, 8 * rsize, 4)
        return ([struct.unpack("<2i", b) for b in loc],
                [struct.unpack_from("<2i", rem, 8 * i) for i in range(rsize)])

    loc, rem = start(proc, side, call, work)
    lm = [side.group[r] for _, r in sorted((k, r) for r, (c, k) in enumerate(loc) if c == color)]
    rm = [side.remote[r] for _, r in sorted((k, r) for r, (c, k) in enumerate(rem) if c == color)]
    pair = side.pair
    nl = sum(1 for c, _ in loc if c == color)
    nr = sum(1 for c, _ in rem if c == color)
    if color == UNDEFINED or not lm or not rm:
        pair.agree(proc, ("null", color), lambda: None, nl + nr)
        return None
    ga, gb = (lm, rm) if side is pair.a else (rm, lm)
    low_a = pair.low is pair.a
    new = pair.agree(proc, color, lambda: make_pair(proc.world, ga, gb, low_a), len(lm) + len(rm))
    return new.a if side is pair.a else new.b


def merge(proc: Process, side: CommImpl, high: bool) -> CommImpl:
    """MPI_Intercomm_merge: the leaders swap their group's ``high``; the group with
    high=False comes first (the low group when both agree)."""
    def work(ctx: Ctx) -> bytes:
        mine = b"\1" if high else b"\0"
        both = mine + _swap(ctx, mine) if ctx.me == 0 else None
        return ctx.sel.run("bcast", _lc(ctx, 0), 0, both, 2, 1)

    flags = start(proc, side, "MPI_Intercomm_merge", work)
    pair = side.pair
    other = pair.other(side)
    if flags[0] == flags[1]:
        first = pair.low
    else:
        first = other if flags[0] else side
    group = list(first.group) + list(pair.other(first).group)
    return pair.agree(proc, "merge", lambda: CommImpl(proc.world, group, ""), len(group))
