"""Replaying smpy's file actions of a time-independent trace (docs/io.md, "Seeing it").

SMPI's TI format has no file operations; smpy records its own (paths percent-encoded,
offsets and sizes in bytes):

* Python file I/O of a rank: ``file_open PATH``, ``file_read PATH OFFSET BYTES``,
  ``file_write PATH OFFSET BYTES``, ``file_sync PATH``;
* MPI-IO: ``mpi_file_open PATH AMODE [HINT=VALUE ...]``, ``mpi_file_close PATH``,
  ``mpi_file_sync PATH``, ``mpi_file_meta PATH`` (another metadata operation: set_size,
  preallocate, the shared pointer's update), and the accesses
  ``mpi_file_write|mpi_file_read PATH K OFF_1 LEN_1 ... OFF_K LEN_K`` (independent) and
  ``mpi_file_write_all|mpi_file_read_all PATH K ...`` (collective), as the file byte ranges
  the view gave. The members' synchronisations of MPI-IO (in ``set_view``, ``close``, a
  collective call on the legacy disk) are the trace's ordinary ``barrier`` lines.

Under smpy the replay charges the same model operations without moving data, so a replay
takes the recorded run's simulated time. Under a real ``mpiexec`` (no smpy) the operations
are done for real on the recorded paths with zero bytes: files are opened on
``MPI_COMM_WORLD``, an access of several ranges goes through an ``hindexed`` view.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote

import numpy as np
from mpi4py import MPI

try:
    import smpy
except ImportError:  # pragma: no cover - under a real mpiexec without smpy installed
    smpy = None


def _ranges(a: list[str], start: int) -> tuple[list[int], list[int]]:
    k = int(a[start])
    vals = [int(x) for x in a[start + 1:start + 1 + 2 * k]]
    return vals[0::2], vals[1::2]


class FileActions:
    """The ``do_file_*`` and ``do_mpi_file_*`` actions of :class:`smpy.replay.program.Replayer`."""

    comm: MPI.Intracomm
    files: dict[str, list[Any]]

    # -- Python file I/O --------------------------------------------------------------------
    def _posix(self, action: str, path: str, offset: int = 0, nbytes: int = 0) -> None:
        if smpy is not None and smpy._replay_file(action, path, offset, nbytes):
            return
        flags = os.O_RDWR | os.O_CREAT  # pragma: no cover - a real replay
        fd = os.open(path, flags, 0o644)
        try:
            if action == "write":
                os.pwrite(fd, bytes(nbytes), offset)
            elif action == "read":
                os.pread(fd, nbytes, offset)
            elif action == "sync":
                os.fsync(fd)
        finally:
            os.close(fd)

    def do_file_open(self, a: list[str]) -> None:
        self._posix("open", unquote(a[0]))

    def do_file_read(self, a: list[str]) -> None:
        self._posix("read", unquote(a[0]), int(a[1]), int(a[2]))

    def do_file_write(self, a: list[str]) -> None:
        self._posix("write", unquote(a[0]), int(a[1]), int(a[2]))

    def do_file_sync(self, a: list[str]) -> None:
        self._posix("sync", unquote(a[0]))

    # -- MPI-IO ------------------------------------------------------------------------------
    def _file(self, a: list[str]) -> Any:
        path = unquote(a[0])
        stack = self.files.get(path)
        if not stack:
            raise ValueError(f"rank {self.comm.Get_rank()}: MPI-IO action on {path!r}, which the "
                             "trace never opened")
        return stack[-1]

    def do_mpi_file_open(self, a: list[str]) -> None:
        info = MPI.Info.Create()
        for kv in a[2:]:
            k, _, v = kv.partition("=")
            info.Set(unquote(k), unquote(v))
        f = MPI.File.Open(self.comm, unquote(a[0]), int(a[1]), info)
        info.Free()
        self.files.setdefault(unquote(a[0]), []).append(f)

    def do_mpi_file_close(self, a: list[str]) -> None:
        f = self._file(a)
        self.files[unquote(a[0])].pop()
        if smpy is None or not smpy._replay_mpi_file(f, "close"):  # pragma: no cover
            f.Close()

    def do_mpi_file_sync(self, a: list[str]) -> None:
        self._file(a).Sync()

    def do_mpi_file_meta(self, a: list[str]) -> None:
        f = self._file(a)
        if smpy is None or not smpy._replay_mpi_file(f, "meta"):  # pragma: no cover
            f.Get_size()

    def _access(self, a: list[str], action: str) -> None:
        f = self._file(a)
        offs, lens = _ranges(a, 1)
        if smpy is not None and smpy._replay_mpi_file(f, action, offs, lens):
            return
        self._real_access(f, action, offs, lens)  # pragma: no cover - a real replay

    def _real_access(self, f: Any, action: str, offs: list[int], lens: list[int]) -> None:  # pragma: no cover
        buf = np.zeros(max(1, sum(lens)), np.uint8)
        write = action.startswith("write")
        if not action.endswith("_all"):
            pos = 0
            for o, n in zip(offs, lens):
                (f.Write_at if write else f.Read_at)(o, [buf[pos:pos + n], n, MPI.BYTE])
                pos += n
            return
        ft = MPI.BYTE.Create_hindexed(lens, offs).Commit() if offs else MPI.BYTE
        f.Set_view(0, MPI.BYTE, ft)
        (f.Write_all if write else f.Read_all)([buf, sum(lens), MPI.BYTE])
        f.Set_view(0, MPI.BYTE, MPI.BYTE)
        if offs:
            ft.Free()

    def do_mpi_file_write(self, a: list[str]) -> None:
        self._access(a, "write")

    def do_mpi_file_read(self, a: list[str]) -> None:
        self._access(a, "read")

    def do_mpi_file_write_all(self, a: list[str]) -> None:
        self._access(a, "write_all")

    def do_mpi_file_read_all(self, a: list[str]) -> None:
        self._access(a, "read_all")
