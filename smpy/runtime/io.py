"""MPI-IO inside the runtime: open files, views, file pointers, real data, modelled time.

Files are real: ``MPI_File_open`` opens the path the program names (one OS descriptor per
collective open, shared by the ranks of the communicator, since they all live in this one
process), and reads and writes move real bytes with ``pread``/``pwrite``. Time comes from
the storage model (:mod:`smpy.storage`): every data access of ``n`` bytes by a rank is an
operation of ``n`` bytes on the disk of the rank's host (latency + ``n`` / shared bandwidth);
metadata operations (open, close, delete, sync, set_size, the update of the shared file
pointer by ``*_shared`` calls, which ROMIO keeps in a hidden file) cost one latency.

Views
-----
A view is ``(disp, etype, filetype, datarep)``. The file seen through it is the filetype
tiled from byte ``disp``: instance ``q`` starts at ``disp + q * extent(filetype)``, and the
data bytes of one instance lie at the displacements of the filetype's typemap (in typemap
order). Stream byte ``k`` of the view (``k = offset * size(etype)``) is therefore at file
byte ``disp + (k div S) * E + map[k mod S]`` with ``S = size(filetype)`` and
``E = extent(filetype)``. ``map`` is computed from any datatype that can ``pack`` (so it
follows whatever derived datatypes the runtime has), and is None for contiguous filetypes.

File pointers are in etypes: one individual pointer per rank, one shared pointer per open.
Collective synchronisation (barriers, the ordering of ``*_ordered`` calls) belongs to the
callers above (collectives live in a higher layer); this module does the local part.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from smpy.kernel.activity import Activity
from smpy.kernel.actors import block_on
from smpy.runtime import collio, errors, fsio
from smpy.runtime import datatype as _datatypes
from smpy.runtime.constants import UNDEFINED
from smpy.runtime.fsio import storage
from smpy.runtime.p2p import NULL_KIND, Request

if TYPE_CHECKING:
    from smpy.runtime.comm import CommImpl
    from smpy.runtime.datatype import DatatypeImpl
    from smpy.runtime.world import Process

# MPICH's values
MODE_CREATE = 1
MODE_RDONLY = 2
MODE_WRONLY = 4
MODE_RDWR = 8
MODE_DELETE_ON_CLOSE = 16
MODE_UNIQUE_OPEN = 32
MODE_EXCL = 64
MODE_APPEND = 128
MODE_SEQUENTIAL = 256
SEEK_SET = 600
SEEK_CUR = 602
SEEK_END = 604
DISPLACEMENT_CURRENT = -54278278

DATAREPS = ("native", "internal", "external32")

__all__ = [
    "FileShared", "FileHandle", "View", "open_file", "delete_file", "storage", "MODE_RDONLY",
    "MODE_WRONLY", "MODE_RDWR", "MODE_CREATE", "MODE_EXCL", "MODE_DELETE_ON_CLOSE",
    "MODE_UNIQUE_OPEN", "MODE_SEQUENTIAL", "MODE_APPEND", "SEEK_SET", "SEEK_CUR", "SEEK_END",
    "DISPLACEMENT_CURRENT", "IoRequest", "charge", "charge_wait", "wait", "resize", "to_datarep",
    "bind_fs", "meta_wait", "sync_wait", "charge_file", "view_pieces", "span",
]


# -- the storage model of a world ---------------------------------------------------------------


def charge(proc: Process, nbytes: int, write: bool) -> Activity:
    """Start the storage operation of ``nbytes`` for ``proc`` (not waited)."""
    model = storage(proc.world)
    return model.io(model.disk_of(proc.host.name), nbytes, write)


def charge_wait(proc: Process, nbytes: int, write: bool, label: str) -> None:
    act = charge(proc, nbytes, write)
    block_on(act, label)


def _hint_int(info: dict[str, str], key: str, default: int = 0) -> int:
    try:
        v = int(info.get(key, default))
    except (TypeError, ValueError):
        return default
    return v if v > 0 else default


def bind_fs(proc: Process, shared: FileShared) -> None:
    """Find the file system of an opened file and fix its layout (``striping_factor`` and
    ``striping_unit`` hints apply when the file is first used)."""
    fs = fsio.fs_of(proc.world, shared.apath)
    shared.fs = fs
    if fs is not None:
        fss = fsio.filesystems(proc.world)
        assert fss is not None
        shared.layout = fss.layout(fs, shared.apath, _hint_int(shared.info, "striping_factor"),
                                   _hint_int(shared.info, "striping_unit"))


def _ti(proc: Process, action: str, path: str, *nums: Any) -> None:
    """An MPI-IO operation in the time-independent trace (smpy's own actions, docs/io.md)."""
    ti = proc.world.ti
    if ti is not None:
        ti.file(proc.rank, action, path, *nums)


def _pieces(offs: np.ndarray, lens: np.ndarray) -> list[int]:
    out = [len(offs)]
    for o, n in zip(offs.tolist(), lens.tolist()):
        out += (o, n)
    return out


def _timed(proc: Process, fh: FileHandle | None, path: Any, act: Activity, label: str) -> None:
    """Wait for ``act``; on a file system, its time goes to the file's and rank's figures."""
    fs = fh.shared.fs if fh is not None else None
    if fs is None:
        block_on(act, label)
        return
    fsio.timed_wait(proc, fh.shared.apath if fh is not None else path, act, label)


def meta_wait(proc: Process, fh: FileHandle | None, label: str, path: Any = None) -> None:
    """A metadata operation (open, close, delete, set_size, ...): the file system's metadata
    server when the path has one, else the legacy disk's latency."""
    if fh is not None and label != "MPI_File_open":
        _ti(proc, "mpi_file_close" if label == "MPI_File_close" else "mpi_file_meta", fh.shared.apath)
    fs = fh.shared.fs if fh is not None else fsio.fs_of(proc.world, path)
    if fs is None:
        charge_wait(proc, 0, True, label)
        return
    _timed(proc, fh, path, fsio.metadata(proc.world, proc.host, fs), label)


def sync_wait(proc: Process, fh: FileHandle, label: str) -> None:
    """``MPI_File_sync``: waits for the servers' flush of the file (file systems), else one
    legacy disk latency."""
    sh = fh.shared
    _ti(proc, "mpi_file_sync", sh.apath)
    if sh.fs is None:
        charge_wait(proc, 0, True, label)
        return
    _timed(proc, fh, None, fsio.sync(proc.world, proc.host, sh.fs, sh.apath), label)


def charge_file(proc: Process, fh: FileHandle, offset: int, nbytes: int, write: bool) -> Activity:
    """Start the time of an independent access of ``nbytes`` stream bytes at etype ``offset``
    of ``fh``'s view: through the file system's data path (data sieving for non-contiguous
    views, :func:`smpy.runtime.collio.independent`), or the legacy disk model."""
    sh = fh.shared
    if sh.fs is None or nbytes <= 0:
        if nbytes > 0:
            _ti(proc, "mpi_file_write" if write else "mpi_file_read", sh.apath, 1,
                offset * fh.view.esize, nbytes)
        return charge(proc, nbytes, write)
    offs, lens = fh.view.segment_arrays(offset * fh.view.esize, nbytes)
    return access_pieces(proc, fh, offs, lens, write)


def access_pieces(proc: Process, fh: FileHandle, offs: np.ndarray, lens: np.ndarray,
                  write: bool) -> Activity:
    """Start an independent access to the file byte ranges ``offs``/``lens`` (also what
    ``smpy replay`` calls for a recorded ``mpi_file_write``/``mpi_file_read``)."""
    sh = fh.shared
    if len(offs):
        _ti(proc, "mpi_file_write" if write else "mpi_file_read", sh.apath, *_pieces(offs, lens))
    if sh.fs is None:
        return charge(proc, int(np.sum(lens)), write)
    return collio.independent(proc, sh, offs, lens, write)


def view_pieces(fh: FileHandle, offset: int, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """The file byte ranges (offsets, lengths) of ``nbytes`` stream bytes at etype ``offset``
    of ``fh``'s view (none for 0 bytes)."""
    if nbytes > 0:
        return fh.view.segment_arrays(offset * fh.view.esize, nbytes)
    empty = np.zeros(0, np.int64)
    return empty, empty


def span(offs: np.ndarray, lens: np.ndarray) -> tuple[int, int]:
    """First byte and end of the ranges ``offs``/``lens`` (``(-1, -1)`` for none): what the
    members of a collective access tell each other (ROMIO's ``st_offsets``/``end_offsets``)."""
    if len(offs) == 0:
        return -1, -1
    return int(offs.min()), int((offs + lens).max())


def collective_pieces(proc: Process, fh: FileHandle, offs: np.ndarray, lens: np.ndarray,
                      write: bool, label: str, two_phase: Callable[[], None] | None = None) -> None:
    """A member's part of a collective access to the byte ranges ``offs``/``lens`` (file
    systems only; also what ``smpy replay`` calls for ``mpi_file_write_all``/``read_all``):
    ``two_phase()``, the member's part of two-phase collective buffering (made of messages,
    :mod:`smpy.colls.twophase`, the caller's), or without it the member's own independent
    access; returns when that is done. The members exchanged their ranges first
    (:func:`span`, the caller's)."""
    sh = fh.shared
    _ti(proc, "mpi_file_write_all" if write else "mpi_file_read_all", sh.apath, *_pieces(offs, lens))
    t0 = proc.world.engine.now
    if two_phase is not None:
        two_phase()
    else:
        block_on(collio.independent(proc, sh, offs, lens, write), label)
    fsio.stats(proc.world).timed(sh.apath, proc.rank, proc.world.engine.now - t0)


def wait(act: Activity, label: str, proc: Process | None = None, fh: FileHandle | None = None) -> None:
    """Block the calling rank until ``act`` (a storage operation) is done (its time goes to
    the figures of ``fh``'s file when given, on a file system)."""
    if proc is None or fh is None:
        block_on(act, label)
        return
    _timed(proc, fh, None, act, label)


def record_open(proc: Process, fh: FileHandle) -> None:
    """``MPI_File_open`` in the time-independent trace: path, amode and the hints."""
    sh = fh.shared
    _ti(proc, "mpi_file_open", sh.apath, sh.amode,
        *(f"{k}={v}" for k, v in sorted(sh.info.items()) if " " not in k + v))


# -- views ----------------------------------------------------------------------------------------
def typemap_offsets(dt: DatatypeImpl) -> np.ndarray | None:
    """Displacement of every data byte of one element of ``dt``, in typemap order; None
    when the type is contiguous from 0 (displacement ``i`` for byte ``i``)."""
    if dt.contiguous or (dt.size == dt.extent and dt.true_lb == 0 and dt.true_extent == dt.size
                         and dt.lb == 0 and getattr(dt, "basic", None) is dt):
        return None
    base = min(0, dt.true_lb)
    span = dt.true_lb + dt.true_extent - base
    if dt.size == 0 or span <= 0:
        return np.zeros(0, np.int64)
    idx = np.arange(span, dtype=np.int64)
    out = np.zeros(dt.size, np.int64)
    shift = 0
    while True:
        mem = bytearray(((idx >> shift) & 0xFF).astype(np.uint8).tobytes())
        packed = dt.pack(memoryview(mem), -base, 1)
        out |= np.frombuffer(bytes(packed), np.uint8).astype(np.int64) << shift
        shift += 8
        if (span - 1) >> shift == 0:
            break
    out += base
    if dt.lb == 0 and dt.extent == dt.size and np.array_equal(out, np.arange(dt.size)):
        return None
    return out


def filetype_runs(dt: DatatypeImpl) -> tuple[np.ndarray, np.ndarray] | None:
    """(displacements, lengths) of the maximal byte runs of one element of ``dt`` in typemap
    order; None when the type is contiguous from 0. Uses the datatype's own flattening
    (``flat()``) when it has one, else :func:`typemap_offsets`."""
    flat = getattr(dt, "flat", None)
    if flat is not None:
        starts, lens = flat()
        starts = np.asarray(starts, np.int64)
        lens = np.asarray(lens, np.int64)
        if len(starts) == 1 and starts[0] == 0 and lens[0] == dt.size == dt.extent and dt.lb == 0:
            return None
        return starts, lens
    m = typemap_offsets(dt)
    if m is None:
        return None
    if len(m) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cuts = np.flatnonzero(np.diff(m) != 1) + 1
    first = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(m)]))
    return m[first].astype(np.int64), (ends - first).astype(np.int64)


class View:
    """``(disp, etype, filetype, datarep)`` and the byte runs of one filetype instance."""

    __slots__ = ("disp", "etype", "filetype", "datarep", "esize", "fsize", "fextent", "contiguous",
                 "rs", "rd", "rl")

    def __init__(self, disp: int, etype: DatatypeImpl, filetype: DatatypeImpl, datarep: str) -> None:
        self.disp = disp
        self.etype = etype
        self.filetype = filetype
        self.datarep = datarep
        self.esize = etype.size
        self.fsize = filetype.size
        self.fextent = filetype.extent
        runs = filetype_runs(filetype)
        self.contiguous = runs is None
        #: runs of one instance: stream offset, displacement and length of each
        if runs is None:
            self.rd = np.zeros(1, np.int64)
            self.rl = np.array([self.fsize], np.int64)
        else:
            self.rd, self.rl = runs
        self.rs = np.cumsum(self.rl) - self.rl

    @property
    def runs(self) -> list[tuple[int, int, int]]:
        """(stream offset, displacement, length) of each run of one filetype instance."""
        return list(zip(self.rs.tolist(), self.rd.tolist(), self.rl.tolist()))

    def byte_offset(self, k: int) -> int:
        """File byte of stream byte ``k``."""
        if self.contiguous:
            return self.disp + k
        if self.fsize == 0:
            return self.disp
        q, r = divmod(k, self.fsize)
        i = int(np.searchsorted(self.rs, r, side="right")) - 1
        return self.disp + q * self.fextent + int(self.rd[i]) + r - int(self.rs[i])

    def segments(self, start: int, n: int) -> list[tuple[int, int]]:
        """File ``(offset, length)`` runs of stream bytes ``[start, start + n)``, in order."""
        offs, lens = self.segment_arrays(start, n)
        return list(zip(offs.tolist(), lens.tolist()))

    def segment_arrays(self, start: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`segments` as two arrays (offsets, lengths), adjacent runs merged."""
        if n <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if self.contiguous:
            return np.array([self.disp + start], np.int64), np.array([n], np.int64)
        S, E = self.fsize, self.fextent
        if S <= 0:  # a filetype without data: nothing of the file is visible
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        end = start + n
        rs, rd, rl = self.rs, self.rd, self.rl
        q = np.arange(start // S, (end - 1) // S + 1, dtype=np.int64)[:, None]
        base = q * S + rs  # stream offset of each run of each instance
        lo = np.maximum(base, start)
        hi = np.minimum(base + rl, end)
        keep = lo < hi
        offs = (self.disp + q * E + rd + (lo - base))[keep]
        lens = (hi - lo)[keep]
        if len(offs) > 1:  # merge runs that continue each other in the file
            new = np.empty(len(offs), bool)
            new[0] = True
            new[1:] = offs[1:] != offs[:-1] + lens[:-1]
            first = np.flatnonzero(new)
            lens = np.add.reduceat(lens, first)
            offs = offs[first]
        return offs, lens

    def eof_offset(self, fsize: int) -> int:
        """Etypes of the view before the end of a file of ``fsize`` bytes (partial rounds up)."""
        if fsize <= self.disp or self.esize == 0:
            return 0
        rel = fsize - self.disp
        if self.contiguous:
            k = rel
        elif self.fextent <= 0:
            k = self.fsize
        else:
            q, r = divmod(rel, self.fextent)
            k = q * self.fsize + int(np.clip(r - self.rd, 0, self.rl).sum())
        return -(-k // self.esize)


# -- open files ----------------------------------------------------------------------------------
class FileShared:
    """What the ranks of one collective open share: descriptor, path, shared pointer."""

    __slots__ = ("path", "fd", "amode", "comm", "group", "shared_pos", "info", "open", "closed",
                 "readable", "fs", "apath", "layout")

    def __init__(self, path: Any, fd: int, amode: int, comm: CommImpl, info: dict[str, str]) -> None:
        self.path = path
        self.fd = fd
        self.amode = amode
        self.comm = comm
        self.group = list(comm.group)
        self.shared_pos = 0
        self.info = info
        self.open = comm.size
        self.closed = False
        #: the descriptor can be read (False: a write-only file without read permission)
        self.readable = True
        #: the file system of the path (smpy.runtime.fsio; None: the legacy disk model),
        #: the absolute path and the file's layout on it
        self.fs: Any = None
        self.apath = os.path.abspath(os.fsdecode(path))
        self.layout: tuple[int, int, int, int] | None = None


class FileHandle:
    """One rank's open file: the shared part, its view and individual pointer."""

    __slots__ = ("shared", "view", "pos", "split", "handle", "atomic", "__weakref__")

    def __init__(self, shared: FileShared, view: View, handle: int) -> None:
        self.shared = shared
        self.view = view
        self.pos = 0
        #: pending split collective: (kind name, nbytes) or None
        self.split: tuple[str, int] | None = None
        #: MPI_File_set_atomicity's mode (per process, as ROMIO keeps it)
        self.atomic = False
        self.handle = handle

    @property
    def amode(self) -> int:
        return self.shared.amode

    @property
    def fd(self) -> int:
        return self.shared.fd

    def size(self) -> int:
        return os.fstat(self.shared.fd).st_size

    # -- access checks ---------------------------------------------------------------------
    def check_read(self, call: str) -> None:
        if self.shared.amode & MODE_WRONLY:
            errors.raise_error(errors.ERR_ACCESS, f"{call}: Cannot read from a file opened with amode "
                               "MPI_MODE_WRONLY")

    def check_write(self, call: str) -> None:
        if self.shared.amode & MODE_RDONLY:
            errors.raise_error(errors.ERR_READ_ONLY, f"{call}: Cannot write to a file opened with amode "
                               "MPI_MODE_RDONLY")

    def check_individual(self, call: str) -> None:
        if self.shared.amode & MODE_SEQUENTIAL:
            errors.raise_error(errors.ERR_UNSUPPORTED_OPERATION, f"{call}: Cannot use individual file "
                               "pointers or explicit offsets on a file opened with MPI_MODE_SEQUENTIAL")

    # -- data --------------------------------------------------------------------------------
    def write_bytes(self, offset: int, data: bytes | memoryview) -> int:
        """Write the stream bytes ``data`` at etype ``offset`` of the view (real I/O)."""
        view = self.view
        fd = self.shared.fd
        mv = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        n = len(mv)
        if view.contiguous:
            _pwrite_all(fd, mv, view.disp + offset * view.esize)
            return n
        offs, lens = view.segment_arrays(offset * view.esize, n)
        span = _span(offs, lens, n) if self.shared.readable else None
        if span is not None:  # many small runs close together: one read-modify-write
            lo = int(offs[0])
            buf = bytearray(span)
            old = _pread_all(fd, span, lo)  # bytes between the runs stay (beyond the end: zeros)
            buf[:len(old)] = old
            np.frombuffer(buf, np.uint8)[_positions(offs, lens, lo, n)] = np.frombuffer(mv, np.uint8)
            _pwrite_all(fd, memoryview(buf), lo)
            return n
        pos = 0
        for off, ln in zip(offs.tolist(), lens.tolist()):
            _pwrite_all(fd, mv[pos:pos + ln], off)
            pos += ln
        return pos

    def read_bytes(self, offset: int, n: int) -> bytes:
        """Read up to ``n`` stream bytes at etype ``offset`` (short at the end of the file)."""
        view = self.view
        fd = self.shared.fd
        if view.contiguous:
            return _pread_all(fd, n, view.disp + offset * view.esize)
        offs, lens = view.segment_arrays(offset * view.esize, n)
        span = _span(offs, lens, n)
        if span is not None:
            lo = int(offs[0])
            raw = _pread_all(fd, span, lo)
            idx = _positions(offs, lens, lo, n)
            ok = int(np.searchsorted(idx, len(raw)))  # positions ascend: a prefix is in the file
            return np.frombuffer(raw, np.uint8)[idx[:ok]].tobytes()
        chunks = []
        for off, ln in zip(offs.tolist(), lens.tolist()):
            got = _pread_all(fd, ln, off)
            chunks.append(got)
            if len(got) < ln:
                break
        return b"".join(chunks)


#: above this many runs, an access close enough together goes through one covering buffer
_RUNS_VECTOR = 32


def _span(offs: np.ndarray, lens: np.ndarray, n: int) -> int | None:
    """Bytes covered from the first run to the end of the last one, when one buffer over
    them is the cheaper way (many runs, not much more than twice the data); else None."""
    if len(offs) <= _RUNS_VECTOR:
        return None
    span = int(offs[-1] + lens[-1] - offs[0])
    return span if span <= 2 * n + (1 << 20) else None


def _positions(offs: np.ndarray, lens: np.ndarray, lo: int, n: int) -> np.ndarray:
    """Position of each stream byte in the buffer that starts at file offset ``lo``."""
    starts = np.cumsum(lens) - lens  # stream offset of each run
    return np.arange(n, dtype=np.int64) + np.repeat(offs - lo - starts, lens)


def _pread_all(fd: int, n: int, off: int) -> bytes:
    """``n`` bytes at ``off`` (fewer at the end of the file; one call reads at most ~2 GiB)."""
    if n <= 0:
        return b""
    first = os.pread(fd, n, off)
    if len(first) == n or not first:
        return first
    parts = [first]
    got = len(first)
    while got < n:
        more = os.pread(fd, n - got, off + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _pwrite_all(fd: int, data: memoryview, off: int) -> None:
    while len(data):
        k = os.pwrite(fd, data, off)
        data = data[k:]
        off += k


def check_amode(amode: int, call: str = "MPI_File_open") -> None:
    modes = [m for m in (MODE_RDONLY, MODE_WRONLY, MODE_RDWR) if amode & m]
    if len(modes) != 1:
        errors.raise_error(errors.ERR_AMODE, f"{call}: Exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY, "
                           "or MPI_MODE_RDWR must be specified")
    if amode & MODE_RDONLY and amode & (MODE_CREATE | MODE_EXCL):
        errors.raise_error(errors.ERR_AMODE, f"{call}: Cannot use MPI_MODE_CREATE or MPI_MODE_EXCL with "
                           "MPI_MODE_RDONLY ")
    if amode & MODE_RDWR and amode & MODE_SEQUENTIAL:
        errors.raise_error(errors.ERR_AMODE, f"{call}: Cannot specify MPI_MODE_SEQUENTIAL with MPI_MODE_RDWR")


def _os_error(exc: OSError, path: Any) -> tuple[int, str]:
    name = os.fsdecode(path)
    if exc.errno == errno.ENOENT:
        return errors.ERR_NO_SUCH_FILE, f"File {name} does not exist"
    if exc.errno == errno.EEXIST:
        return errors.ERR_FILE_EXISTS, "File exists"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return errors.ERR_ACCESS, f"Access denied to file {name}"
    if exc.errno == errno.EROFS:
        return errors.ERR_READ_ONLY, f"File {name} is on a read-only file system"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return errors.ERR_NO_SPACE, "Not enough space for file"
    if exc.errno == errno.EISDIR:
        return errors.ERR_BAD_FILE, f"Invalid file name {name}: is a directory"
    if exc.errno == errno.ENAMETOOLONG:
        return errors.ERR_BAD_FILE, f"Invalid file name {name}"
    return errors.ERR_IO, f"Other I/O error {exc.strerror}"


def _do_open(path: Any, amode: int, comm: CommImpl, info: dict[str, str]) -> FileShared | tuple[int, str]:
    extra = (os.O_CREAT if amode & MODE_CREATE else 0) | (os.O_EXCL if amode & MODE_EXCL else 0)
    extra |= getattr(os, "O_CLOEXEC", 0)
    readable = True
    try:
        if amode & MODE_WRONLY:  # read access too if allowed (read-modify-write of strided views)
            try:
                fd = os.open(path, os.O_RDWR | extra, 0o666)
            except PermissionError:
                fd = os.open(path, os.O_WRONLY | extra, 0o666)
                readable = False
        else:
            fd = os.open(path, (os.O_RDWR if amode & MODE_RDWR else os.O_RDONLY) | extra, 0o666)
    except OSError as exc:
        return _os_error(exc, path)
    shared = FileShared(path, fd, amode, comm, info)
    shared.readable = readable
    return shared


_next_handle = 0


def open_file(proc: Process, comm: CommImpl, path: Any, amode: int, info: dict[str, str],
              datatype_byte: DatatypeImpl) -> FileHandle:
    """The local part of ``MPI_File_open`` (the caller synchronised the ranks): the first
    rank of the communicator opens the file, the others share the descriptor."""
    global _next_handle
    check_amode(amode)
    shared = comm.agree(proc, ("MPI_File_open",), lambda: _do_open(path, amode, comm, info), comm.size)
    if isinstance(shared, tuple):
        errors.raise_error(shared[0], f"MPI_File_open: {shared[1]}")
    _next_handle += 1
    fh = FileHandle(shared, View(0, datatype_byte, datatype_byte, "native"), _next_handle)
    if shared.fs is None:
        bind_fs(proc, shared)
    if amode & MODE_APPEND:
        end = fh.size()
        fh.pos = end
        shared.shared_pos = end
    return fh


def close_file(fh: FileHandle) -> None:
    """The local part of ``MPI_File_close``, once every member entered the call (the caller
    synchronised them): the first rank out closes the descriptor (and deletes the file on
    request), so that the file is gone when any rank returns."""
    shared = fh.shared
    shared.open -= 1
    if not shared.closed:
        shared.closed = True
        try:
            os.close(shared.fd)
        finally:
            if shared.amode & MODE_DELETE_ON_CLOSE:
                try:
                    os.unlink(shared.path)
                except OSError:
                    pass


def resize(proc: Process, fh: FileHandle, size: int, grow_only: bool) -> None:
    """The local part of ``MPI_File_set_size``/``preallocate`` once every member entered the
    call: the first rank out resizes, so that no member's later write can be cut."""
    def build() -> bool:
        if not grow_only or fh.size() < size:
            os.ftruncate(fh.fd, size)
        return True

    comm = fh.shared.comm
    comm.agree(proc, ("MPI_File_set_size",), build, comm.size)


def delete_file(proc: Process, path: Any) -> None:
    try:
        os.unlink(path)
    except OSError as exc:
        cls, msg = _os_error(exc, path)
        errors.raise_error(cls, f"MPI_File_delete: {msg}")
    meta_wait(proc, None, "MPI_File_delete", path)


# -- data representations ------------------------------------------------------------------------
def to_datarep(view: View, dt: DatatypeImpl, data: bytes, count: int) -> bytes:
    """Packed native bytes of ``count`` elements of ``dt`` -> the view's representation, and
    back (the conversion is a byte swap, its own inverse): ``external32`` files hold big-endian
    data, as MPICH writes them; ``native`` and ``internal`` are the memory's bytes. Without the
    runtime's ``external32_swap`` the data stays native."""
    if view.datarep != "external32" or count <= 0 or dt.size <= 0:
        return data
    swap = getattr(_datatypes, "external32_swap", None)
    if swap is None:
        return data
    whole = min(count, len(data) // dt.size)
    if whole <= 0:
        return data
    cut = whole * dt.size
    return swap(dt, bytes(data[:cut]), whole) + bytes(data[cut:])


# -- requests ------------------------------------------------------------------------------------
class IoRequest(Request):
    """A non-blocking file operation: completes when all its parts (storage operations,
    a synchronising collective) are done; ``nbytes`` is the data moved."""

    __slots__ = ("_pending",)

    def __init__(self, owner: Process, call: str, nbytes: int, parts: list[Activity]) -> None:
        super().__init__(owner, NULL_KIND, None, 0, call, UNDEFINED, UNDEFINED)
        self.source = UNDEFINED  # what MPICH's status says for a file request's source and tag
        self.nbytes = nbytes
        self._pending = 0
        for a in parts:
            if not a.done:
                self._pending += 1
                a.add_callback(self._part_done)
        if self._pending == 0:
            self._finish()

    def _part_done(self, _a: Activity) -> None:
        self._pending -= 1
        if self._pending == 0:
            self._finish()

    def status_fields(self) -> tuple[int, int, int, int]:
        """(source, tag, error, bytes) of the status: MPICH leaves source and tag undefined."""
        return UNDEFINED, UNDEFINED, self.error, self.nbytes

    def describe(self) -> str:
        return f"{self.call} ({self.nbytes} bytes)"
