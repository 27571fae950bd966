r"""MPI-IO access strategies as ROMIO runs them: data sieving and two-phase collective I/O.

Only the *time* is modelled here (the bytes themselves are written and read by
:mod:`smpy.runtime.io`, so file contents do not depend on the strategy). Every access goes
through the file system's data path (:mod:`smpy.runtime.fsio`).

Independent access (data sieving, ROMIO's ``ADIOI_GEN_ReadStrided``/``WriteStrided``)
    A contiguous access is one data-path access. A non-contiguous one with data sieving on
    (``romio_ds_read``/``romio_ds_write``: ``enable`` or ``automatic``, the default) covers the
    span from its first to its last byte in buffers of ``ind_rd_buffer_size`` (4 MiB) or
    ``ind_wr_buffer_size`` (512 KiB) bytes, one after the other; a buffer with data is read,
    and for a write, read (when the data does not cover it) and written back. With data
    sieving off, each contiguous piece is its own access, one after the other.

Collective access (two-phase, ROMIO's ``ADIOI_GEN_WriteStridedColl``)
    Each member's access is a list of file pieces. Every member first sends the others the
    first and the last byte it accesses (ROMIO's two ``MPI_Allgather`` of ``st_offsets`` and
    ``end_offsets``, which SMPI's ``File::op_all`` makes too: real messages, by the caller,
    :mod:`smpy.mpi.file`). Collective buffering is used when ``romio_cb_write``/``romio_cb_read``
    is ``enable``, or ``automatic`` (the default) and the members' byte ranges interleave
    (:func:`two_phase_wanted`); otherwise every member makes its own independent access and
    returns when it is done, as in ROMIO.

    *Aggregators*: ``cb_nodes`` of them (default: one per host of the communicator, as
    ROMIO's ``cb_config_list *:1``), the first rank of each host in rank order (then the
    second of each host, ... when ``cb_nodes`` exceeds the hosts; :func:`aggregators`).
    *File domains*: the range :math:`[lo, hi)` of all accessed bytes is cut into
    :math:`a` domains of :math:`\lceil (hi-lo)/a \rceil` bytes, boundaries rounded up to a
    multiple of the stripe size on a parallel file system (ROMIO's stripe alignment;
    :func:`file_domains`). The rounds and the exchange phase are messages between the ranks:
    :mod:`smpy.colls.twophase`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from smpy.kernel.activity import Activity
from smpy.runtime import fsio
from smpy.storage.filesystem import done

if TYPE_CHECKING:
    from smpy.runtime.io import FileShared
    from smpy.runtime.world import Process, World

__all__ = ["independent", "aggregators", "file_domains", "two_phase_wanted", "hint", "covered"]

CB_BUFFER_SIZE = 16 * 1024 * 1024
IND_RD_BUFFER_SIZE = 4 * 1024 * 1024
IND_WR_BUFFER_SIZE = 512 * 1024


def hint(info: dict[str, str], key: str, default: int) -> int:
    try:
        v = int(info.get(key, default))
    except (TypeError, ValueError):
        return default
    return v if v > 0 else default


def _mode(info: dict[str, str], key: str) -> str:
    v = str(info.get(key, "automatic")).lower()
    return v if v in ("enable", "disable", "automatic") else "automatic"


def covered(starts: np.ndarray, ends: np.ndarray, cummax: np.ndarray, a: int, b: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of the pieces (sorted by start) that meet ``[a, b)`` and their clipped bounds."""
    i0 = int(np.searchsorted(cummax, a, side="right"))
    i1 = int(np.searchsorted(starts, b, side="left"))
    if i1 <= i0:
        e = np.zeros(0, np.int64)
        return e, e, e
    idx = np.arange(i0, i1)
    lo = np.maximum(starts[i0:i1], a)
    hi = np.minimum(ends[i0:i1], b)
    keep = lo < hi
    return idx[keep], lo[keep], hi[keep]


# -- independent --------------------------------------------------------------------------------
def independent(proc: Process, sh: FileShared, offs: np.ndarray, lens: np.ndarray, write: bool,
                host: Any = None) -> Activity:
    """The time of one member's independent access to the pieces ``offs``/``lens``."""
    world = proc.world
    host = host if host is not None else proc.host
    fs, path, layout = sh.fs, sh.apath, sh.layout
    if len(offs) == 0:
        return done(world.engine)
    if len(offs) == 1:
        fsio.stats(world).add(path, proc.rank, int(lens[0]), write)
        return fsio.access(world, host, fs, path, int(offs[0]), int(lens[0]), write, layout)
    total = int(lens.sum())
    fsio.stats(world).add(path, proc.rank, total, write)
    ds = _mode(sh.info, "romio_ds_write" if write else "romio_ds_read")
    steps: list[Callable[[], Activity]] = []
    if ds == "disable":
        for o, n in zip(offs.tolist(), lens.tolist()):
            steps.append(lambda o=o, n=n: fsio.access(world, host, fs, path, o, n, write, layout))
        return fsio.chain(world, steps)
    buf = hint(sh.info, "ind_wr_buffer_size" if write else "ind_rd_buffer_size",
                IND_WR_BUFFER_SIZE if write else IND_RD_BUFFER_SIZE)
    order = np.argsort(offs, kind="stable")
    starts = offs[order]
    ends = starts + lens[order]
    cummax = np.maximum.accumulate(ends)
    lo, hi = int(starts[0]), int(cummax[-1])
    for a in range(lo, hi, buf):
        b = min(a + buf, hi)
        _i, clo, chi = covered(starts, ends, cummax, a, b)
        if len(clo) == 0:
            continue
        s0, s1 = int(clo.min()), int(chi.max())
        holes = int((chi - clo).sum()) < s1 - s0
        if not write or holes:
            steps.append(lambda s0=s0, s1=s1: fsio.access(world, host, fs, path, s0, s1 - s0, False, layout))
        if write:
            steps.append(lambda s0=s0, s1=s1: fsio.access(world, host, fs, path, s0, s1 - s0, True, layout))
    return fsio.chain(world, steps)


# -- collective ----------------------------------------------------------------------------------
def aggregators(world: World, group: list[int], cb_nodes: int) -> list[int]:
    """World ranks of the aggregators: the first rank of each host (in rank order), then the
    second of each, ... until ``cb_nodes`` (default: one per host)."""
    per_host: dict[int, list[int]] = {}
    for r in group:
        per_host.setdefault(world.processes[r].host.index, []).append(r)
    lists = list(per_host.values())
    want = min(cb_nodes or len(lists), len(group))
    out: list[int] = []
    depth = 0
    while len(out) < want:
        for lst in lists:
            if depth < len(lst) and len(out) < want:
                out.append(lst[depth])
        depth += 1
    return out


def file_domains(lo: int, hi: int, naggs: int, align: int) -> list[tuple[int, int]]:
    """``naggs`` domains covering ``[lo, hi)``, boundaries rounded up to ``align`` bytes."""
    size = -(-(hi - lo) // naggs)
    bounds = [lo]
    for i in range(1, naggs):
        b = lo + i * size
        if align > 1:
            b = -(-b // align) * align
        bounds.append(min(max(b, bounds[-1]), hi))
    bounds.append(hi)
    return [(bounds[i], bounds[i + 1]) for i in range(naggs)]


def _ranges_interleave(ranges: list[tuple[int, int]]) -> bool:
    ranges = sorted(ranges)
    return any(ranges[i][0] < ranges[i - 1][1] for i in range(1, len(ranges)))


def two_phase_wanted(info: dict[str, str], write: bool, ranges: list[tuple[int, int]]) -> bool:
    """Whether a collective access whose members cover the byte ranges ``[lo, hi)`` (``lo < 0``
    for a member with nothing to access) uses two-phase collective buffering: the hint
    ``romio_cb_write``/``romio_cb_read`` is ``enable``, or ``automatic`` and the ranges
    interleave (ROMIO's ``interleave_count``); all members compute the same answer."""
    mode = _mode(info, "romio_cb_write" if write else "romio_cb_read")
    if mode == "disable":
        return False
    live = [(lo, hi) for lo, hi in ranges if lo >= 0]
    if not live:
        return False
    return mode == "enable" or _ranges_interleave(live)
