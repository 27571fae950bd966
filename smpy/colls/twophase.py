r"""Two-phase collective I/O as ROMIO runs it (``ADIOI_GEN_WriteStridedColl`` /
``ReadStridedColl``), made of real messages between the ranks of the file's communicator.

Only the time and the messages are modelled: the file's bytes are written (read) by the
facade as an independent access would, so contents do not depend on the strategy; the
messages carry no data (:class:`smpy.colls.core.Blob` payloads of the right size), except
the lists of pieces the aggregators need to plan their windows.

Every member knows the first and last byte :math:`[lo_i, hi_i)` of every member (the two
``MPI_Allgather`` made before, :func:`smpy.mpi.file`). Then, on the file's communicator:

Aggregators and file domains
    ``cb_nodes`` aggregators (default: one per host, the first rank of each;
    :func:`smpy.runtime.collio.aggregators`); :math:`[\min lo, \max hi)` cut into as many
    domains of equal size, boundaries aligned to the stripe size on a parallel file system
    (:func:`smpy.runtime.collio.file_domains`).

Requests (``ADIOI_Calc_my_req`` / ``ADIOI_Calc_others_req``)
    each member cuts its pieces by domain; an ``MPI_Alltoall`` of the piece counts (4 bytes
    each), then each member sends every other aggregator whose domain it touches two
    messages of :math:`8k` bytes (the :math:`k` offsets, the :math:`k` lengths).

Rounds (``ADIOI_Exch_and_write`` / ``ADIOI_Read_and_exch``)
    an aggregator's requested bytes span :math:`[s, e)`; it needs
    :math:`\lceil (e - s) / b \rceil` rounds of ``cb_buffer_size`` :math:`b` (16 MiB), and
    an ``MPI_Allreduce`` (max) gives every member the number of rounds :math:`R`. In round
    :math:`m` an aggregator handles the window :math:`[s + mb, \min(s + (m+1)b, e))`: its
    members' bytes there, :math:`n_{ij}`, go to the members through an ``MPI_Alltoall`` of
    the sizes (4 bytes each); for a write, the aggregator reads the window's span first when
    the pieces leave holes in it (read-modify-write), receives :math:`n_{ij}` bytes from each
    member :math:`j` (a message each, point to point, nothing for its own bytes), then writes
    the span as one contiguous access of the file system's data path
    (:func:`smpy.runtime.fsio.access`); for a read it reads the span, then sends each member
    its bytes. After the last round of a write, an ``MPI_Allreduce`` of the error code (an
    ``MPI_Bcast`` from the aggregator when there is one) keeps later independent accesses
    behind it.

All of these are messages of the runtime (the protocol, the network's max-min sharing with
every other flow, the traces); the collectives are the selected algorithms.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from smpy.colls.core import Blob, Ctx, Reduction
from smpy.colls.nonblocking import start
from smpy.kernel.actors import block_on
from smpy.runtime import collio, fsio, p2p
from smpy.runtime.constants import P2P

if TYPE_CHECKING:
    from smpy.runtime.io import FileShared
    from smpy.runtime.world import Process

__all__ = ["run"]

_T_OFFSETS, _T_LENGTHS, _T_DATA = 1, 2, 3


def _isend(ctx: Ctx, payload: Any, nbytes: int, dest: int, t: int) -> p2p.Request:
    """ROMIO's ``MPI_Isend`` on the file's communicator: a point-to-point message (traced
    as one), on that private communicator so it never meets the program's own."""
    return p2p.isend(ctx.proc, ctx.comm, P2P, Blob(payload, nbytes), nbytes, dest, ctx.tag + t, ctx.call)


def _irecv(ctx: Ctx, src: int, t: int) -> p2p.Request:
    return p2p.irecv(ctx.proc, ctx.comm, P2P, src, ctx.tag + t, None, ctx.call)


def _imax(a: bytes, b: bytes) -> bytes:
    return a if struct.unpack("<i", a)[0] >= struct.unpack("<i", b)[0] else b


_MAX = Reduction(_imax, True, 4)


def _ints(values: Any) -> list[bytes]:
    """One 4-byte C int block per rank (an alltoall's send blocks)."""
    raw = np.asarray(values, "<i4").tobytes()
    return [raw[i:i + 4] for i in range(0, len(raw), 4)]


def _unints(blocks: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(blocks), "<i4").astype(np.int64)


class _Plan:
    """What one member knows of a two-phase access: the aggregators (local ranks), the file
    domains, its own pieces per domain and, on an aggregator, its members' requests."""

    def __init__(self, ctx: Ctx, sh: FileShared, offs: np.ndarray, lens: np.ndarray,
                 ranges: list[tuple[int, int]]) -> None:
        world = ctx.proc.world
        comm = ctx.comm
        live = [(lo, hi) for lo, hi in ranges if lo >= 0]
        lo, hi = min(a for a, _b in live), max(b for _a, b in live)
        aggs = collio.aggregators(world, sh.group, collio.hint(sh.info, "cb_nodes", 0))
        self.aggs = [comm.rank_of[a] for a in aggs]
        align = sh.layout[3] if sh.fs is not None and sh.fs.kind == "parallel" and sh.layout else 1
        self.domains = collio.file_domains(lo, hi, len(aggs), align)
        self.cb = collio.hint(sh.info, "cb_buffer_size", collio.CB_BUFFER_SIZE)
        self.mine = self._my_req(offs, lens)
        self.agg_index = self.aggs.index(ctx.me) if ctx.me in self.aggs else -1
        #: on an aggregator: its members' requests (start, end, member) sorted by start
        self.req: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.span = (0, 0)

    def _my_req(self, offs: np.ndarray, lens: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """``ADIOI_Calc_my_req``: this member's pieces clipped to each domain it touches."""
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if len(offs) == 0:
            return out
        order = np.argsort(offs, kind="stable")
        starts = offs[order].astype(np.int64)
        ends = starts + lens[order].astype(np.int64)
        cummax = np.maximum.accumulate(ends)
        for i, (d0, d1) in enumerate(self.domains):
            _idx, clo, chi = collio.covered(starts, ends, cummax, d0, d1)
            if len(clo):
                out[i] = (clo, chi - clo)
        return out

    def others_req(self, ctx: Ctx) -> None:
        """``ADIOI_Calc_others_req``: the counts by alltoall, the pieces by messages."""
        counts = [0] * ctx.size
        for i, (o, _n) in self.mine.items():
            counts[self.aggs[i]] = len(o)
        theirs = _unints(ctx.sel.run("alltoall", ctx.sub(0), _ints(counts)))
        peers = [j for j in np.flatnonzero(theirs).tolist() if j != ctx.me] if self.agg_index >= 0 else []
        offsets = [_irecv(ctx, j, _T_OFFSETS) for j in peers]
        reqs = offsets + [_irecv(ctx, j, _T_LENGTHS) for j in peers]
        sends = []
        for i, (o, n) in self.mine.items():
            if self.aggs[i] != ctx.me:
                sends.append(_isend(ctx, (o, n), 8 * len(o), self.aggs[i], _T_OFFSETS))
                sends.append(_isend(ctx, None, 8 * len(o), self.aggs[i], _T_LENGTHS))
        ctx.waitall(reqs + sends)
        if self.agg_index < 0:
            return
        got = [(ctx.me, *self.mine[self.agg_index])] if self.agg_index in self.mine else []
        got += [(j, *r.payload.obj) for j, r in zip(peers, offsets)]
        if not got:
            return
        starts = np.concatenate([o for _j, o, _n in got])
        ends = starts + np.concatenate([n for _j, _o, n in got])
        owner = np.concatenate([np.full(len(o), j, np.int64) for j, o, _n in got])
        order = np.argsort(starts, kind="stable")
        starts, ends, owner = starts[order], ends[order], owner[order]
        self.req = (starts, ends, np.maximum.accumulate(ends), owner)
        self.span = (int(starts[0]), int(self.req[2][-1]))

    def rounds(self) -> int:
        s, e = self.span
        return -(-(e - s) // self.cb) if self.req is not None else 0

    def window(self, m: int, size: int) -> tuple[np.ndarray, int, int, bool]:
        """Round ``m`` on this aggregator: bytes per member, the span and whether it has holes."""
        per = np.zeros(size, np.int64)
        if self.req is None:
            return per, 0, 0, False
        s, e = self.span
        a, b = s + m * self.cb, min(s + (m + 1) * self.cb, e)
        if a >= b:
            return per, 0, 0, False
        starts, ends, cummax, owner = self.req
        idx, clo, chi = collio.covered(starts, ends, cummax, a, b)
        if len(idx) == 0:
            return per, 0, 0, False
        per = np.bincount(owner[idx], weights=(chi - clo), minlength=size).astype(np.int64)
        s0, s1 = int(clo.min()), int(chi.max())
        return per, s0, s1, int((chi - clo).sum()) < s1 - s0


def run(proc: Process, sh: FileShared, offs: np.ndarray, lens: np.ndarray, write: bool, call: str,
        ranges: list[tuple[int, int]]) -> None:
    """A member's part of a two-phase collective access to its pieces ``offs``/``lens``
    (``ranges``: every member's ``[lo, hi)``, already exchanged). Returns when this member's
    part is done (for a write: when every aggregator wrote, ROMIO's final synchronisation)."""
    fsio.stats(proc.world).add(sh.apath, proc.rank, int(lens.sum()) if len(lens) else 0, write)
    comm = sh.comm
    plan: list[_Plan] = []

    def setup(ctx: Ctx) -> int:
        p = _Plan(ctx, sh, offs, lens, ranges)
        p.others_req(ctx)
        plan.append(p)
        got = ctx.sel.run("allreduce", ctx.sub(1), struct.pack("<i", p.rounds()), _MAX)
        return struct.unpack("<i", bytes(got))[0]

    rounds = start(proc, comm, call, setup)
    p = plan[0]
    for m in range(rounds):
        start(proc, comm, call, lambda ctx, m=m: _round(ctx, sh, p, m, write))
    if write:
        if len(p.aggs) == 1:
            root = p.aggs[0]
            start(proc, comm, call, lambda ctx: ctx.sel.run("bcast", ctx, root, b"\0\0\0\0" if ctx.me == root
                                                            else None, 4, 4))
        else:
            start(proc, comm, call, lambda ctx: ctx.sel.run("allreduce", ctx, b"\0\0\0\0", _MAX))


def _round(ctx: Ctx, sh: FileShared, p: _Plan, m: int, write: bool) -> None:
    world = ctx.proc.world
    per, s0, s1, holes = p.window(m, ctx.size)

    def io(w: bool) -> None:
        block_on(fsio.access(world, ctx.proc.host, sh.fs, sh.apath, s0, s1 - s0, w, sh.layout),
                 "two-phase I/O")

    if not write and s1 > s0:
        io(False)
    # the aggregator tells each member how many bytes go between them this round
    mine = _unints(ctx.sel.run("alltoall", ctx.sub(0), _ints(per)))
    if write and holes:
        io(False)
    agg_peers = [j for j in np.flatnonzero(per).tolist() if j != ctx.me]
    member_peers = [i for i in np.flatnonzero(mine).tolist() if i != ctx.me]
    if write:
        reqs = [_irecv(ctx, j, _T_DATA) for j in agg_peers]
        reqs += [_isend(ctx, None, int(mine[i]), i, _T_DATA) for i in member_peers]
    else:
        reqs = [_isend(ctx, None, int(per[j]), j, _T_DATA) for j in agg_peers]
        reqs += [_irecv(ctx, i, _T_DATA) for i in member_peers]
    ctx.waitall(reqs)
    if write and s1 > s0:
        io(True)
