"""Python file I/O of the ranks, timed by the file system of each path.

During a run, ``builtins.open``/``io.open`` and ``os.open``/``read``/``write``/``pread``/
``pwrite``/``fsync``/``close`` are replaced. When the calling code is a rank's own code
(not inside an MPI call, not a thread of the program), an access to a regular file is the
real operation (the bytes land where the program asked) followed by the model's time as a
blocking operation of the rank: the rank's computation burst ends, the access of ``n``
bytes at the file's position goes through the data path of the path's file system
(:mod:`smpy.runtime.fsio`; paths outside every mount without a default file system use the
``storage:`` disk model), and the rank continues when it is done. ``os.fsync`` (and
``f.flush(); os.fsync(f.fileno())``) waits for the servers' flush. Opening a file is a
metadata operation.

So ``numpy.save``/``load``/``tofile``/``fromfile`` on paths or ``open()`` files, ``pickle``
on files, ``json``/``csv`` on files are charged. numpy's ``tofile``/``fromfile`` on an open
file (and ``np.save``/``np.load``, which use them) bypass Python and use the descriptor: the
bytes they move are found from the descriptor's position at the next operation or at close,
and charged then (as a write if the file is write-only or grew, else as a read).

*Virtual* file systems (``kind: virtual`` or ``virtual: true``): ``open()`` of a path under
the mount returns an in-memory file; the contents are kept while the file system's total
stays under ``keep`` bytes, beyond that discarded (reads give zeros, sizes stay right).
Nothing is written to disk. ``open()``/``io.open`` return an in-memory file object;
``os.open`` returns a descriptor of ``/dev/null`` that ``os.read``/``write``/``pread``/
``pwrite``/``lseek``/``fsync``/``close`` map to the virtual file (``os.fstat`` describes
``/dev/null``); ``os.path``/``os.stat``, ``mmap`` and C extensions (h5py, netCDF) see the real
directory.

smpy's own files (the time-independent trace recorder, ``smpy replay`` reading traces) are
opened by smpy's modules and are never charged.

Not intercepted: C extensions doing their own I/O (h5py/HDF5, netCDF, compiled readers),
``mmap`` (``np.memmap``, ``np.load(mmap_mode=...)``), ``io.FileIO`` created directly,
``pathlib.Path.read_bytes``/``write_bytes`` (they call ``io.open``: intercepted), files opened
by the maestro or by the program's threads, and descriptors not opened by the rank through
these functions.
"""

from __future__ import annotations

import builtins
import io
import os
import stat
import sys
import sysconfig
from typing import Any

from smpy.kernel.actors import block_on
from smpy.runtime import fsio
from smpy.shim.isolation import state

__all__ = ["FilePatches"]

_session: Any = None
_orig: dict[str, Any] = {}
#: descriptor -> (absolute path, file system or None) of the regular files the ranks opened
_fds: dict[int, tuple[str, Any]] = {}
#: virtual files of the run: (fs name, path) -> _VFile
_vfiles: dict[tuple[str, str], _VFile] = {}


#: ranks (their isolation contexts) inside smpy's own bookkeeping of a file operation: the
#: files smpy itself reads there (/proc for the folded-memory fault count) are not the program's
_inside: set[int] = set()


_SMPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: smpy's wrappers that forward the program's own call (this module; smpy.shim.coop wraps
#: os.read/os.write for pipes and forwards the others here): not smpy's own I/O
_FORWARDERS = (__file__, os.path.join(os.path.dirname(__file__), "coop.py"))
_LIB_DIRS = tuple({os.path.join(sysconfig.get_paths()[k], "") for k in
                   ("stdlib", "platstdlib", "purelib", "platlib")})


def _smpy_caller() -> bool:
    """Whether the file operation comes from smpy itself (trace and report writers, the
    folded-memory bookkeeping) rather than the program: walking out from the call through
    the interpreter's libraries (io, pathlib, json, numpy, ...), smpy's code comes before any
    code of the program's."""
    f: Any = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(_SMPY_DIR):
            if name not in _FORWARDERS:
                return True
        elif not name.startswith(_LIB_DIRS) and not name.startswith("<frozen"):
            return False
        f = f.f_back
    return False


def _proc() -> Any:
    """The calling rank's process when its time may advance here, else None."""
    s = _session
    ctx = state.ctx
    if s is None or ctx is None or id(ctx) in _inside or not s._can_block(ctx) or _smpy_caller():
        return None
    return ctx.proc


#: kernel pseudo-file systems: their "regular" files (/proc/self/statm) are not storage
_PSEUDO = ("/proc/", "/sys/", "/dev/")


def _pseudo(path: str) -> bool:
    return path.startswith(_PSEUDO)


def _flush(proc: Any) -> None:
    """End the rank's computation burst (smpy's own file reads there are not charged)."""
    key = id(state.ctx)
    _inside.add(key)
    try:
        _session.timing.flush(proc)
    finally:
        _inside.discard(key)


def _restart(proc: Any) -> None:
    key = id(state.ctx)
    _inside.add(key)
    try:
        _session.timing.restart(proc)
    finally:
        _inside.discard(key)


def _begin() -> Any:
    """The calling rank, its computation burst ended (so the real operation's wall time is
    not counted as computation), or None when the call is not timed."""
    proc = _proc()
    if proc is not None:
        _flush(proc)
    return proc


def _end(proc: Any) -> None:
    if proc is not None:
        _restart(proc)


def _wait(proc: Any, act: Any, name: str, path: str | None = None) -> None:
    """Block the rank on ``act``; with ``--trace``/``--report`` the wait is a call ``name``
    of the timeline (``file_write``, ``file_read``, ``file_open``, ``file_sync``); the time
    goes to the file's and the rank's figures (``--report``, :class:`smpy.runtime.fsio.Stats`)."""
    tracer = proc.world.tracer
    t0 = proc.world.engine.now
    if tracer is None:
        block_on(act, name)
    else:
        tracer.enter(proc.rank, name, sys._getframe(2))
        try:
            block_on(act, name)
        finally:
            tracer.exit(proc.rank)
    if path is not None:
        fsio.stats(proc.world).timed(path, proc.rank, proc.world.engine.now - t0)


def _ti(proc: Any, action: str, path: str, *nums: int) -> None:
    """The operation in the time-independent trace (``--trace-ti``), as smpy's own action."""
    ti = proc.world.ti
    if ti is not None:
        ti.file(proc.rank, action, path, *nums)


def _charge(proc: Any, path: str, fs: Any, offset: int, nbytes: int, write: bool) -> None:
    """Block the rank for the time of one access (after :func:`_begin`)."""
    if nbytes <= 0 or proc is None:
        return
    world = proc.world
    name = "file_write" if write else "file_read"
    _ti(proc, name, path, max(0, offset), nbytes)
    fsio.stats(world).add(path, proc.rank, nbytes, write)
    if fs is None:
        from smpy.runtime import io as rio
        act = rio.charge(proc, nbytes, write)
    else:
        act = fsio.access(world, proc.host, fs, path, max(0, offset), nbytes, write)
    _wait(proc, act, name, path)


def _meta(proc: Any, fs: Any, label: str, path: str | None = None) -> None:
    if path is not None:
        _ti(proc, "file_" + label, path)
    if fs is None:
        from smpy.runtime import io as rio
        act = rio.charge(proc, 0, True)
    else:
        act = fsio.metadata(proc.world, proc.host, fs)
    _wait(proc, act, "file_" + label, path)


def _sync(proc: Any, path: str, fs: Any) -> None:
    _ti(proc, "file_sync", path)
    if fs is None:
        from smpy.runtime import io as rio
        act = rio.charge(proc, 0, True)
    else:
        act = fsio.sync(proc.world, proc.host, fs, path)
    _wait(proc, act, "file_sync", path)


# -- real files --------------------------------------------------------------------------------
class _ChargedFileIO(io.FileIO):
    """A FileIO whose reads and writes are charged to the rank that opened it."""

    _smpy: tuple[str, Any] | None = None
    _pos = 0
    _size = 0
    _exposed = False

    def _timed(self) -> Any:
        return _begin() if self._smpy is not None else None

    def fileno(self) -> int:
        # handing out the descriptor lets C code (numpy's tofile/fromfile) move bytes
        self._exposed = True
        return super().fileno()

    def _settle(self, proc: Any, target: int = -1) -> None:
        """Charge what C code moved through the descriptor since :meth:`fileno` (numpy's
        tofile/fromfile, which then seek the file object to the end of what they moved):
        the growth of the file as a write, else the seek forward as a read."""
        if self._smpy is None or not self._exposed:
            return
        self._exposed = False
        try:
            size = os.fstat(io.FileIO.fileno(self)).st_size
        except (OSError, ValueError):
            return
        grown = size - self._size
        if grown > 0 and self.writable():
            _charge(proc, self._smpy[0], self._smpy[1], self._size, grown, True)
            self._size = size
        elif target > self._pos and self.readable():
            _charge(proc, self._smpy[0], self._smpy[1], self._pos, target - self._pos, False)

    def write(self, b: Any) -> Any:
        proc = self._timed()
        self._settle(proc)
        start = self._pos
        n = super().write(b)
        if n and self._smpy is not None:
            self._pos = start + n
            self._size = max(self._size, self._pos)
            _charge(proc, self._smpy[0], self._smpy[1], start, n, True)
        _end(proc)
        return n

    def _after_read(self, proc: Any, start: int, n: int | None) -> None:
        if n and self._smpy is not None:
            self._pos = start + n
            _charge(proc, self._smpy[0], self._smpy[1], start, n, False)
        _end(proc)

    def readinto(self, b: Any) -> Any:
        proc = self._timed()
        self._settle(proc)
        start = self._pos
        n = super().readinto(b)
        self._after_read(proc, start, n)
        return n

    def read(self, size: int = -1) -> Any:
        proc = self._timed()
        self._settle(proc)
        start = self._pos
        data = super().read(size)
        self._after_read(proc, start, len(data) if data else 0)
        return data

    def readall(self) -> Any:
        proc = self._timed()
        self._settle(proc)
        start = self._pos
        data = super().readall()
        self._after_read(proc, start, len(data) if data else 0)
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        proc = self._timed()
        self._settle(proc, pos if whence == 0 else self._pos + pos if whence == 1 else -1)
        self._pos = super().seek(pos, whence)
        _end(proc)
        return self._pos

    def close(self) -> None:
        if not self.closed and self._smpy is not None:
            proc = self._timed()
            self._settle(proc)
            _end(proc)
            _fds.pop(io.FileIO.fileno(self), None)
        super().close()


def _virtual_fs(path: str) -> Any:
    world = _session.world
    fs = fsio.fs_of(world, path)
    return fs if fs is not None and fs.virtual else None


class _VFile:
    """The contents of one virtual file: ``data`` (None once discarded) and its size."""

    __slots__ = ("data", "size")

    def __init__(self) -> None:
        self.data: bytearray | None = bytearray()
        self.size = 0


class _VirtualRaw(io.RawIOBase):
    """An open virtual file (in memory or discarded), timed like a file of its file system."""

    def __init__(self, path: str, fs: Any, mode: str) -> None:
        super().__init__()
        self.name = path
        self.mode = mode
        self._fs = fs
        self._r = "r" in mode or "+" in mode
        self._w = any(c in mode for c in "waxc+")
        key = (fs.name, path)
        vf = _vfiles.get(key)
        if vf is None:
            if "r" in mode and "c" not in mode:
                raise FileNotFoundError(2, "No such file or directory (virtual file system "
                                        f"{fs.name!r})", path)
            vf = _vfiles[key] = _VFile()
        elif "x" in mode:
            raise FileExistsError(17, "File exists", path)
        if "w" in mode:
            self._resize(vf, 0)
        self._vf = vf
        self._pos = vf.size if "a" in mode else 0

    def _resize(self, vf: _VFile, size: int) -> None:
        kept = _session_kept()
        if vf.data is not None:
            kept[self._fs.name] = kept.get(self._fs.name, 0) - len(vf.data)
            del vf.data[size:]
            kept[self._fs.name] += len(vf.data)
        vf.size = size

    def readable(self) -> bool:
        return self._r

    def writable(self) -> bool:
        return self._w

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("a virtual file has no descriptor")

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        base = (0, self._pos, self._vf.size)[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def truncate(self, size: int | None = None) -> int:
        size = self._pos if size is None else size
        self._resize(self._vf, size)
        return size

    def readinto(self, b: Any) -> int:
        vf = self._vf
        mv = memoryview(b).cast("B")
        n = max(0, min(len(mv), vf.size - self._pos))
        if n:
            if vf.data is not None:
                chunk = vf.data[self._pos:self._pos + n]
                mv[:len(chunk)] = chunk
                mv[len(chunk):n] = bytes(n - len(chunk))
            else:
                mv[:n] = bytes(n)
            proc = _begin()
            _charge(proc, self.name, self._fs, self._pos, n, False)
            _end(proc)
            self._pos += n
        return n

    def write(self, b: Any) -> int:
        vf = self._vf
        mv = memoryview(b).cast("B")
        n = len(mv)
        if vf.data is not None:
            kept = _session_kept()
            end = self._pos + n
            grow = max(0, end - len(vf.data))
            if kept.get(self._fs.name, 0) + grow <= self._fs.keep:
                if self._pos > len(vf.data):
                    vf.data.extend(bytes(self._pos - len(vf.data)))
                vf.data[self._pos:end] = mv
                kept[self._fs.name] = kept.get(self._fs.name, 0) + grow
            else:  # over the limit: this file's contents are dropped (reads give zeros)
                kept[self._fs.name] = kept.get(self._fs.name, 0) - len(vf.data)
                vf.data = None
        proc = _begin()
        _charge(proc, self.name, self._fs, self._pos, n, True)
        _end(proc)
        self._pos += n
        vf.size = max(vf.size, self._pos)
        return n


def _session_kept() -> dict[str, int]:
    fss = fsio.filesystems(_session.world)
    return fss.kept if fss is not None else {}


def _wrap(raw: Any, mode: str, buffering: int, encoding: Any, errors: Any, newline: Any) -> Any:
    """The buffered and text layers ``io.open`` would put on ``raw``."""
    binary = "b" in mode
    line_buffering = False
    if buffering == 1 or (buffering < 0 and raw.isatty()):
        buffering = -1
        line_buffering = True
    if buffering < 0:
        buffering = io.DEFAULT_BUFFER_SIZE
    if buffering == 0:
        if binary:
            return raw
        raise ValueError("can't have unbuffered text I/O")
    if "+" in mode:
        buf: Any = io.BufferedRandom(raw, buffering)
    elif any(c in mode for c in "wax"):
        buf = io.BufferedWriter(raw, buffering)
    else:
        buf = io.BufferedReader(raw, buffering)
    if binary:
        return buf
    text = io.TextIOWrapper(buf, io.text_encoding(encoding), errors, newline, line_buffering)
    text.mode = mode
    return text


def _raw_mode(mode: str) -> str:
    m = "".join(c for c in mode if c in "rwxa+")
    return m or "r"


def _open(file: Any, mode: str = "r", buffering: int = -1, encoding: Any = None, errors: Any = None,
          newline: Any = None, closefd: bool = True, opener: Any = None) -> Any:
    proc = _proc()
    if proc is None or isinstance(file, int) or not isinstance(mode, str) or "U" in mode:
        return _orig["open"](file, mode, buffering, encoding, errors, newline, closefd, opener)
    path = os.path.abspath(os.fsdecode(file))
    if _pseudo(path):
        return _orig["open"](file, mode, buffering, encoding, errors, newline, closefd, opener)
    vfs = _virtual_fs(path)
    if vfs is not None:
        raw: Any = _VirtualRaw(path, vfs, _raw_mode(mode))
        _flush(proc)
        _meta(proc, vfs, "open", path)
        _end(proc)
        return _wrap(raw, mode, buffering, encoding, errors, newline)
    raw = _ChargedFileIO(file, _raw_mode(mode), closefd, opener=opener)
    st = os.fstat(io.FileIO.fileno(raw))
    if not stat.S_ISREG(st.st_mode):  # a pipe, a device: not a file system's business
        return _wrap(raw, mode, buffering, encoding, errors, newline)
    fs = fsio.fs_of(proc.world, path)
    fd = io.FileIO.fileno(raw)
    raw._smpy = (path, fs)
    raw._pos = os.lseek(fd, 0, os.SEEK_CUR)
    raw._size = st.st_size
    _fds[fd] = (path, fs)
    _flush(proc)
    _meta(proc, fs, "open", path)
    _end(proc)
    if "a" in mode:
        raw._pos = raw.seek(0, 2)
    return _wrap(raw, mode, buffering, encoding, errors, newline)


# -- os-level calls -----------------------------------------------------------------------------
def _flags_mode(flags: int) -> str:
    """The ``_VirtualRaw`` mode of ``os.open`` flags (``c``: create if missing, no truncation)."""
    acc = flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
    plus = "+" if acc == os.O_RDWR else ""
    if flags & os.O_CREAT and flags & os.O_EXCL:
        return "x" + plus
    if flags & os.O_APPEND:
        return "a" + plus
    if flags & os.O_TRUNC and acc != os.O_RDONLY:
        return "w" + plus
    if acc == os.O_RDONLY:
        return "r"
    return "rc+" if flags & os.O_CREAT else "r+"


#: descriptor (of /dev/null) -> the virtual file that ``os.open`` opened on a virtual mount
_vfds: dict[int, _VirtualRaw] = {}


def _os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
    proc = _proc()
    pseudo = proc is not None and _pseudo(os.path.abspath(os.fsdecode(path)))
    if proc is not None and dir_fd is None and not pseudo:
        apath = os.path.abspath(os.fsdecode(path))
        vfs = _virtual_fs(apath)
        if vfs is not None:  # a virtual file behind a descriptor of /dev/null
            raw = _VirtualRaw(apath, vfs, _flags_mode(flags))
            fd = _orig["os.open"](os.devnull, os.O_RDWR)
            _vfds[fd] = raw
            _flush(proc)
            _meta(proc, vfs, "open", apath)
            _end(proc)
            return fd
    fd = _orig["os.open"](path, flags, mode, dir_fd=dir_fd)
    if proc is not None and dir_fd is None and not pseudo:
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            regular = False
        if regular:
            apath = os.path.abspath(os.fsdecode(path))
            fs = fsio.fs_of(proc.world, apath)
            _fds[fd] = (apath, fs)
            _flush(proc)
            _meta(proc, fs, "open", apath)
            _end(proc)
    return fd


def _os_close(fd: int) -> None:
    _fds.pop(fd, None)
    _vfds.pop(fd, None)
    _orig["os.close"](fd)


def _os_lseek(fd: int, pos: int, how: int) -> int:
    v = _vfds.get(fd)
    if v is not None:
        return v.seek(pos, how)
    return _orig["os.lseek"](fd, pos, how)


def _vread(v: _VirtualRaw, n: int, offset: int | None) -> bytes:
    keep = v.tell()
    if offset is not None:
        v.seek(offset)
    b = bytearray(max(0, n))
    got = v.readinto(b)
    if offset is not None:
        v.seek(keep)
    return bytes(b[:got])


def _vwrite(v: _VirtualRaw, data: Any, offset: int | None) -> int:
    keep = v.tell()
    if offset is not None:
        v.seek(offset)
    n = v.write(data)
    if offset is not None:
        v.seek(keep)
    return n


def _os_read(fd: int, n: int) -> bytes:
    v = _vfds.get(fd)
    if v is not None:
        return _vread(v, n, None)
    known = _fds.get(fd)
    proc = _begin() if known is not None else None
    start = os.lseek(fd, 0, os.SEEK_CUR) if proc is not None else 0
    data = _orig["os.read"](fd, n)
    if known is not None:
        _charge(proc, known[0], known[1], start, len(data), False)
        _end(proc)
    return data


def _os_write(fd: int, data: Any) -> int:
    v = _vfds.get(fd)
    if v is not None:
        return _vwrite(v, data, None)
    known = _fds.get(fd)
    proc = _begin() if known is not None else None
    start = os.lseek(fd, 0, os.SEEK_CUR) if proc is not None else 0
    n = _orig["os.write"](fd, data)
    if known is not None:
        _charge(proc, known[0], known[1], start, n, True)
        _end(proc)
    return n


def _os_pread(fd: int, n: int, offset: int) -> bytes:
    v = _vfds.get(fd)
    if v is not None:
        return _vread(v, n, offset)
    known = _fds.get(fd)
    proc = _begin() if known is not None else None
    data = _orig["os.pread"](fd, n, offset)
    if known is not None:
        _charge(proc, known[0], known[1], offset, len(data), False)
        _end(proc)
    return data


def _os_pwrite(fd: int, data: Any, offset: int) -> int:
    v = _vfds.get(fd)
    if v is not None:
        return _vwrite(v, data, offset)
    known = _fds.get(fd)
    proc = _begin() if known is not None else None
    n = _orig["os.pwrite"](fd, data, offset)
    if known is not None:
        _charge(proc, known[0], known[1], offset, n, True)
        _end(proc)
    return n


def _os_fsync(fd: Any) -> None:
    num = fd if isinstance(fd, int) else fd.fileno()
    v = _vfds.get(num)
    if v is not None:
        proc = _begin()
        if proc is not None:
            _sync(proc, v.name, v._fs)
        _end(proc)
        return
    known = _fds.get(num)
    proc = _begin() if known is not None else None
    _orig["os.fsync"](fd)
    if known is not None and proc is not None:
        _sync(proc, known[0], known[1])
    _end(proc)


_OS = {"open": _os_open, "close": _os_close, "read": _os_read, "write": _os_write,
       "pread": _os_pread, "pwrite": _os_pwrite, "fsync": _os_fsync, "lseek": _os_lseek}


class FilePatches:
    """Install/uninstall the file-I/O interception of one run (an idempotent pair)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.installed = False

    def install(self) -> None:
        global _session
        if self.installed:
            return
        _session = self.session
        _orig["open"] = builtins.open
        for name in _OS:
            _orig["os." + name] = getattr(os, name)
        builtins.open = _open
        io.open = _open
        for name, fn in _OS.items():
            setattr(os, name, fn)
        self.installed = True

    def uninstall(self) -> None:
        global _session
        if not self.installed:
            return
        builtins.open = _orig["open"]
        io.open = _orig["open"]
        for name in _OS:
            setattr(os, name, _orig["os." + name])
        _session = None
        _fds.clear()
        _vfds.clear()
        _vfiles.clear()
        self.installed = False
