"""``MPI.File``: MPI-IO on the real files the program names, with modelled time.

Thin facade: arguments are parsed here, the local work (descriptors, views, pointers, real
reads and writes, storage time) is :mod:`smpy.runtime.io`'s, the synchronisation of
collective calls is a barrier or an allgather of :mod:`smpy.colls` on a private duplicate of
the communicator (MPICH duplicates it at open too, so file collectives never mix with the
program's own).
"""

from __future__ import annotations

import copyreg
import os
from typing import Any

import numpy as np

from smpy.colls import twophase
from smpy.colls.basic import allgather as _allgather_raw
from smpy.colls.basic import barrier as _barrier
from smpy.colls.nonblocking import start as _coll_start
from smpy.mpi import msgspec
from smpy.mpi._call import mpicall, proc
from smpy.mpi.args import intargs
from smpy.mpi.datatype import BYTE, Datatype
from smpy.mpi.errhandler import ErrhandlerMixin
from smpy.mpi.group import Group
from smpy.mpi.info import Info
from smpy.mpi.objmodel import copy_arg
from smpy.mpi.request import Request
from smpy.mpi.status import Status
from smpy.runtime import collio, errors
from smpy.runtime import io as rio
from smpy.runtime.comm import CommImpl
from smpy.runtime.group import GroupImpl


class _NullFile:
    """The runtime object behind ``FILE_NULL`` (it has an error handler, as in MPI)."""

    __slots__ = ("__weakref__",)


_NULL_OBJ = _NullFile()

MODE_RDONLY = rio.MODE_RDONLY
MODE_WRONLY = rio.MODE_WRONLY
MODE_RDWR = rio.MODE_RDWR
MODE_CREATE = rio.MODE_CREATE
MODE_EXCL = rio.MODE_EXCL
MODE_DELETE_ON_CLOSE = rio.MODE_DELETE_ON_CLOSE
MODE_UNIQUE_OPEN = rio.MODE_UNIQUE_OPEN
MODE_SEQUENTIAL = rio.MODE_SEQUENTIAL
MODE_APPEND = rio.MODE_APPEND
SEEK_SET = rio.SEEK_SET
SEEK_CUR = rio.SEEK_CUR
SEEK_END = rio.SEEK_END
DISPLACEMENT_CURRENT = rio.DISPLACEMENT_CURRENT
DISP_CUR = DISPLACEMENT_CURRENT

__all__ = [
    "File", "FILE_NULL", "MODE_RDONLY", "MODE_WRONLY", "MODE_RDWR", "MODE_CREATE", "MODE_EXCL",
    "MODE_DELETE_ON_CLOSE", "MODE_UNIQUE_OPEN", "MODE_SEQUENTIAL", "MODE_APPEND", "SEEK_SET",
    "SEEK_CUR", "SEEK_END", "DISPLACEMENT_CURRENT", "DISP_CUR", "Register_datarep",
]

#: the hints MPICH's ROMIO reports for a file on a UNIX file system
_DEFAULT_HINTS = {
    "cb_buffer_size": "16777216", "romio_cb_read": "automatic", "romio_cb_write": "automatic",
    "cb_nodes": "1", "romio_no_indep_rw": "false", "romio_cb_pfr": "disable",
    "romio_cb_fr_types": "aar", "romio_cb_fr_alignment": "1", "romio_cb_ds_threshold": "0",
    "romio_cb_alltoall": "automatic", "ind_rd_buffer_size": "4194304",
    "ind_wr_buffer_size": "524288", "romio_ds_read": "automatic", "romio_ds_write": "automatic",
    "striping_unit": "0", "romio_synchronized_flush": "disabled",
    "romio_visibility_immediate": "true", "cb_config_list": "*:1",
    "romio_filesystem_type": "UFS: Generic ROMIO driver for all UNIX-like file systems",
    "romio_aggregator_list": "0 ", "striping_factor": "0", "start_iodevice": "0",
}


def _files() -> dict[int, File]:
    return proc().attrs.setdefault("mpi_files", {})


def _info_dict(info: Any) -> dict[str, str]:
    if info is None or not isinstance(info, Info) or info._null:
        return {}
    return dict(info._d)


def _path(filename: Any) -> Any:
    path = os.fspath(filename)
    if not isinstance(path, (str, bytes)):
        raise TypeError(f"expected str, bytes or os.PathLike object, not {type(filename).__name__}")
    return path


def _filecall(fn: Any) -> Any:
    """``@mpicall`` under MPI's name of the call (``Seek`` -> ``MPI_File_seek`` in traces)."""
    name = fn.__name__
    fn.__name__ = "File_" + name.strip("_").lower()
    wrapper = mpicall(fn)
    wrapper.__name__ = fn.__name__ = name
    return wrapper


class File(ErrhandlerMixin):
    """An open file (one handle per rank); ``FILE_NULL`` once closed."""

    __slots__ = ("_fh", "__weakref__")
    _errhandler_kind = "File"

    def __new__(cls, file: File | None = None) -> File:
        copy_arg(file, File, "file")
        self = object.__new__(cls)
        self._fh = None if file is None else file._fh
        return self

    def __init__(self, file: File | None = None) -> None:
        pass

    @classmethod
    def _wrap(cls, fh: rio.FileHandle | _NullFile | None) -> File:
        if fh is None or fh is _NULL_OBJ:
            return FILE_NULL
        f = File.__new__(cls)
        f._fh = fh  # type: ignore[assignment]
        return f

    def _errhandler_obj(self) -> Any:
        """The runtime object whose error handler applies (FILE_NULL's for open/delete)."""
        return _NULL_OBJ if self._fh is None else self._fh

    def _live(self, call: str) -> rio.FileHandle:
        fh = self._fh
        if fh is None:
            errors.raise_error(errors.ERR_FILE, f"{call}: Invalid file handle")
        return fh

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, File):
            return NotImplemented
        return self._fh is other._fh

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment] - unhashable, as mpi4py's handles

    def _unorderable(self, other: object) -> bool:
        raise TypeError(f"unorderable type '{type(self).__module__}.{type(self).__name__}'")

    __lt__ = __le__ = __gt__ = __ge__ = _unorderable

    def __bool__(self) -> bool:
        return self._fh is not None

    def __reduce__(self) -> str | tuple[Any, ...]:
        if self._fh is None:  # a null file: the constant itself, or a copy of it
            return "FILE_NULL" if self is FILE_NULL else (copyreg.__newobj__, (type(self), FILE_NULL))
        raise ValueError(f"cannot serialize '{type(self).__module__}.{type(self).__name__}' instance")

    # -- handles -----------------------------------------------------------------------------
    @property
    def handle(self) -> int:
        return 0 if self._fh is None else self._fh.handle

    def py2f(self) -> int:
        return self.handle

    def toint(self) -> int:
        return self.handle

    @classmethod
    def f2py(cls, arg: int) -> File:
        return cls.fromhandle(arg)

    @classmethod
    def fromint(cls, arg: int) -> File:
        return cls.fromhandle(arg)

    @classmethod
    def fromhandle(cls, handle: int) -> File:
        if handle == 0:
            return FILE_NULL
        f = _files().get(handle)
        return cls._wrap(f._fh if f is not None else None)

    def free(self) -> None:
        if self._fh is not None:
            self.Close()

    # -- opening and closing ---------------------------------------------------------------
    @classmethod
    @intargs
    def Open(cls, comm: Any, filename: Any, amode: int = MODE_RDONLY, info: Any = None) -> File:
        f = FILE_NULL._open(cls, comm, filename, amode, info)
        if f is None:  # a user error handler of FILE_NULL ran: mpi4py returns its new, null File
            f = cls.__new__(cls)
        return f

    @_filecall
    def _open(self, cls: type, comm: Any, filename: Any, amode: int, info: Any) -> File:
        """``MPI_File_open``, called on FILE_NULL: its error handler takes the errors."""
        path = _path(filename)
        impl: CommImpl = comm._impl
        pr = proc()
        rio.check_amode(amode)
        # MPICH checks that every member passed the same amode (a collective on comm)
        if len({a[0] for a in _allgather_raw(pr, impl, (amode,), 4, "MPI_File_open")}) > 1:
            errors.raise_error(errors.ERR_NOT_SAME, "MPI_File_open: amode must be the same on all processors")
        fcomm = impl.agree(pr, ("MPI_File_open",), lambda: _file_comm(impl), impl.size)
        rio.meta_wait(pr, None, "MPI_File_open", path)
        fh = rio.open_file(pr, fcomm, path, amode, _info_dict(info), BYTE._impl)
        rio.record_open(pr, fh)
        f = File.__new__(cls)
        f._fh = fh
        _files()[fh.handle] = f
        return f

    @_filecall
    def Close(self) -> None:
        fh = self._live("MPI_File_close")
        pr = proc()
        _barrier(pr, fh.shared.comm)
        self._close_now(pr, fh)

    def _close_now(self, pr: Any, fh: rio.FileHandle) -> None:
        """``MPI_File_close`` once the members met (also ``smpy replay``'s close)."""
        rio.meta_wait(pr, fh, "MPI_File_close")
        rio.close_file(fh)
        _files().pop(fh.handle, None)
        self._fh = None

    @classmethod
    def Delete(cls, filename: Any, info: Any = None) -> None:
        FILE_NULL._delete(filename)

    @_filecall
    def _delete(self, filename: Any) -> None:
        rio.delete_file(proc(), _path(filename))

    # -- size, mode, group, info -----------------------------------------------------------
    @_filecall
    def Set_size(self, size: int) -> None:
        fh = self._live("MPI_File_set_size")
        if size < 0:
            errors.raise_error(errors.ERR_ARG, "MPI_File_set_size: Invalid size argument")
        fh.check_write("MPI_File_set_size")
        pr = proc()
        _same_everywhere(pr, fh, size, "MPI_File_set_size")
        rio.resize(pr, fh, size, False)
        rio.meta_wait(pr, fh, "MPI_File_set_size")

    @_filecall
    def Preallocate(self, size: int) -> None:
        fh = self._live("MPI_File_preallocate")
        if size < 0:
            errors.raise_error(errors.ERR_ARG, "MPI_File_preallocate: Invalid size argument")
        fh.check_write("MPI_File_preallocate")
        pr = proc()
        _same_everywhere(pr, fh, size, "MPI_File_preallocate")
        rio.resize(pr, fh, size, True)
        rio.meta_wait(pr, fh, "MPI_File_preallocate")

    @_filecall
    def Get_size(self) -> int:
        return self._live("MPI_File_get_size").size()

    @property
    def size(self) -> int:
        return self.Get_size()

    @_filecall
    def Get_amode(self) -> int:
        return self._live("MPI_File_get_amode").amode

    @property
    def amode(self) -> int:
        return self.Get_amode()

    @_filecall
    def Get_group(self) -> Group:
        return Group._wrap(GroupImpl(list(self._live("MPI_File_get_group").shared.group)))

    @property
    def group(self) -> Group:
        return self.Get_group()

    @property
    def group_size(self) -> int:
        return len(self._live("MPI_File_get_group").shared.group)

    @property
    def group_rank(self) -> int:
        fh = self._live("MPI_File_get_group")
        return fh.shared.comm.local_rank(proc())

    @_filecall
    def Set_info(self, info: Any) -> None:
        fh = self._live("MPI_File_set_info")
        fh.shared.info.update(_info_dict(info))

    @_filecall
    def Get_info(self) -> Info:
        fh = self._live("MPI_File_get_info")
        d = dict(_DEFAULT_HINTS)
        # ROMIO's default aggregators: the first rank of the group on each node
        comm = fh.shared.comm
        first: dict[str, int] = {}
        for r in range(comm.size):
            first.setdefault(comm.host_of(r).name, r)
        d["cb_nodes"] = str(len(first))
        d["romio_aggregator_list"] = "".join(f"{r} " for r in first.values())
        d.update(fh.shared.info)
        return Info.Create(d)

    @property
    def info(self) -> Info:
        return self.Get_info()

    @info.setter
    def info(self, info: Any) -> None:
        self.Set_info(info)

    # -- views -----------------------------------------------------------------------------
    @_filecall
    def Set_view(self, disp: int = 0, etype: Datatype = BYTE, filetype: Datatype | None = None,
                 datarep: str = "native", info: Any = None) -> None:
        fh = self._live("MPI_File_set_view")
        if filetype is None:
            filetype = etype
        et = msgspec.as_datatype(etype)
        ft = msgspec.as_datatype(filetype)
        for t in (et, ft):
            if not t.committed:
                errors.raise_error(errors.ERR_TYPE, "MPI_File_set_view: Datatype has not been committed ")
        if datarep not in rio.DATAREPS and datarep not in _datareps():
            errors.raise_error(errors.ERR_UNSUPPORTED_DATAREP,
                               "MPI_File_set_view: Only native data representation currently supported")
        if disp == DISPLACEMENT_CURRENT:
            if not fh.amode & MODE_SEQUENTIAL:
                errors.raise_error(errors.ERR_ARG, "MPI_File_set_view: disp must be set to "
                                   "MPI_DISPLACEMENT_CURRENT since file was opened with MPI_MODE_SEQUENTIAL")
            disp = fh.size()
        elif disp < 0:
            errors.raise_error(errors.ERR_ARG, f"MPI_File_set_view: Invalid value for disp, must be "
                               f"non-negative but is {disp}")
        if et.size <= 0 or ft.size % et.size:
            errors.raise_error(errors.ERR_ARG, "MPI_File_set_view: Filetype must be constructed out of one "
                               "or more etypes")
        pr = proc()
        fh.view = rio.View(disp, et, ft, datarep)
        fh.pos = 0
        fh.shared.shared_pos = 0
        fh.shared.info.update(_info_dict(info))
        _barrier(pr, fh.shared.comm)

    @_filecall
    def Get_view(self) -> tuple[int, Datatype, Datatype, str]:
        v = self._live("MPI_File_get_view").view
        return v.disp, _out_type(v.etype), _out_type(v.filetype), v.datarep

    @_filecall
    def Get_byte_offset(self, offset: int) -> int:
        fh = self._live("MPI_File_get_byte_offset")
        if offset < 0:
            errors.raise_error(errors.ERR_ARG, "MPI_File_get_byte_offset: Invalid offset argument")
        return fh.view.byte_offset(offset * fh.view.esize)

    @_filecall
    def Get_type_extent(self, datatype: Datatype) -> int:
        self._live("MPI_File_get_type_extent")
        return msgspec.as_datatype(datatype).extent

    # -- data access: explicit offsets -----------------------------------------------------
    def _write(self, fh: rio.FileHandle, offset: int, buf: Any, call: str,
               timed: bool = True) -> tuple[int, Any]:
        fh.check_write(call)
        spec = msgspec.parse_send(buf)
        _check_etypes(fh, spec.nbytes, call)
        data = spec.datatype.pack(spec.mem, spec.offset, spec.count) if spec.count else b""
        data = rio.to_datarep(fh.view, spec.datatype, data, spec.count)
        n = fh.write_bytes(offset, data)
        return n, (rio.charge_file(proc(), fh, offset, n, True) if timed else None)

    def _read(self, fh: rio.FileHandle, offset: int, buf: Any, call: str,
              timed: bool = True) -> tuple[int, Any]:
        fh.check_read(call)
        spec = msgspec.parse_recv(buf)
        want = spec.nbytes
        _check_etypes(fh, want, call)
        data = fh.read_bytes(offset, want) if want else b""
        n = len(data)
        if n:
            dt = spec.datatype
            data = rio.to_datarep(fh.view, dt, data, spec.count)
            if n < want and not dt.contiguous:
                full = bytearray(dt.pack(spec.mem, spec.offset, spec.count))
                full[:n] = data
                data = bytes(full)
            dt.unpack(data, spec.mem, spec.offset, spec.count)
        return n, (rio.charge_file(proc(), fh, offset, n, False) if timed else None)

    def _finish(self, fh: rio.FileHandle, n: int, act: Any, status: Status | None, call: str) -> None:
        rio.wait(act, call, proc(), fh)
        if status is not None:
            status._set_count(n, False)

    def _advance(self, fh: rio.FileHandle, n: int) -> None:
        es = fh.view.esize
        fh.pos += n // es if es else 0

    def _at(self, offset: int, buf: Any, status: Status | None, write: bool, coll: bool, call: str) -> int:
        fh = self._live(call)
        fh.check_individual(call)
        if offset < 0:
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid offset argument")
        pr = proc()
        if coll and fh.shared.fs is not None:
            return self._coll(fh, offset, buf, status, write, call)
        if coll:
            _barrier(pr, fh.shared.comm)
        n, act = (self._write if write else self._read)(fh, offset, buf, call)
        self._finish(fh, n, act, status, call)
        return n

    def _coll(self, fh: rio.FileHandle, offset: int, buf: Any, status: Status | None, write: bool,
              call: str) -> int:
        """A collective access on a file system: the data moves as an independent access
        would (writes before, reads after the members met), the time is the collective's."""
        pr = proc()
        if write:
            n, _act = self._write(fh, offset, buf, call, timed=False)
            _collective_access(pr, fh, *rio.view_pieces(fh, offset, n), True, call)
        else:
            want = msgspec.parse_recv(buf).nbytes
            _collective_access(pr, fh, *rio.view_pieces(fh, offset, want), False, call)
            n, _act = self._read(fh, offset, buf, call, timed=False)
        if status is not None:
            status._set_count(n, False)
        return n

    @_filecall
    def Read_at(self, offset: int, buf: Any, status: Status | None = None) -> None:
        self._at(offset, buf, status, False, False, "MPI_File_read_at")

    @_filecall
    def Read_at_all(self, offset: int, buf: Any, status: Status | None = None) -> None:
        self._at(offset, buf, status, False, True, "MPI_File_read_at_all")

    @_filecall
    def Write_at(self, offset: int, buf: Any, status: Status | None = None) -> None:
        self._at(offset, buf, status, True, False, "MPI_File_write_at")

    @_filecall
    def Write_at_all(self, offset: int, buf: Any, status: Status | None = None) -> None:
        self._at(offset, buf, status, True, True, "MPI_File_write_at_all")

    def _iat(self, offset: int, buf: Any, write: bool, coll: bool, call: str) -> Request:
        fh = self._live(call)
        fh.check_individual(call)
        if offset < 0:
            errors.raise_error(errors.ERR_ARG, f"{call}: Invalid offset argument")
        pr = proc()
        n, act = (self._write if write else self._read)(fh, offset, buf, call)
        parts = [act]
        if coll:
            parts.append(_ibarrier(pr, fh.shared.comm, call))
        return Request._wrap(rio.IoRequest(pr, call, n, parts))

    @_filecall
    def Iread_at(self, offset: int, buf: Any) -> Request:
        return self._iat(offset, buf, False, False, "MPI_File_iread_at")

    @_filecall
    def Iread_at_all(self, offset: int, buf: Any) -> Request:
        return self._iat(offset, buf, False, True, "MPI_File_iread_at_all")

    @_filecall
    def Iwrite_at(self, offset: int, buf: Any) -> Request:
        return self._iat(offset, buf, True, False, "MPI_File_iwrite_at")

    @_filecall
    def Iwrite_at_all(self, offset: int, buf: Any) -> Request:
        return self._iat(offset, buf, True, True, "MPI_File_iwrite_at_all")

    # -- data access: individual file pointer ---------------------------------------------
    def _ind(self, buf: Any, status: Status | None, write: bool, coll: bool, call: str) -> int:
        fh = self._live(call)
        fh.check_individual(call)
        pr = proc()
        if coll and fh.shared.fs is not None:
            n = self._coll(fh, fh.pos, buf, status, write, call)
            self._advance(fh, n)
            return n
        if coll:
            _barrier(pr, fh.shared.comm)
        n, act = (self._write if write else self._read)(fh, fh.pos, buf, call)
        self._advance(fh, n)
        self._finish(fh, n, act, status, call)
        return n

    @_filecall
    def Read(self, buf: Any, status: Status | None = None) -> None:
        self._ind(buf, status, False, False, "MPI_File_read")

    @_filecall
    def Read_all(self, buf: Any, status: Status | None = None) -> None:
        self._ind(buf, status, False, True, "MPI_File_read_all")

    @_filecall
    def Write(self, buf: Any, status: Status | None = None) -> None:
        self._ind(buf, status, True, False, "MPI_File_write")

    @_filecall
    def Write_all(self, buf: Any, status: Status | None = None) -> None:
        self._ind(buf, status, True, True, "MPI_File_write_all")

    def _iind(self, buf: Any, write: bool, coll: bool, call: str) -> Request:
        fh = self._live(call)
        fh.check_individual(call)
        pr = proc()
        n, act = (self._write if write else self._read)(fh, fh.pos, buf, call)
        self._advance(fh, n)
        parts = [act]
        if coll:
            parts.append(_ibarrier(pr, fh.shared.comm, call))
        return Request._wrap(rio.IoRequest(pr, call, n, parts))

    @_filecall
    def Iread(self, buf: Any) -> Request:
        return self._iind(buf, False, False, "MPI_File_iread")

    @_filecall
    def Iread_all(self, buf: Any) -> Request:
        return self._iind(buf, False, True, "MPI_File_iread_all")

    @_filecall
    def Iwrite(self, buf: Any) -> Request:
        return self._iind(buf, True, False, "MPI_File_iwrite")

    @_filecall
    def Iwrite_all(self, buf: Any) -> Request:
        return self._iind(buf, True, True, "MPI_File_iwrite_all")

    @_filecall
    def Seek(self, offset: int, whence: int = SEEK_SET) -> None:
        fh = self._live("MPI_File_seek")
        fh.check_individual("MPI_File_seek")
        fh.pos = _seek(fh, fh.pos, offset, whence, "MPI_File_seek")

    @_filecall
    def Get_position(self) -> int:
        fh = self._live("MPI_File_get_position")
        fh.check_individual("MPI_File_get_position")
        return fh.pos

    # -- data access: shared file pointer --------------------------------------------------
    def _shared(self, buf: Any, status: Status | None, write: bool, call: str) -> Any:
        fh = self._live(call)
        spec = msgspec.parse_send(buf) if write else msgspec.parse_recv(buf)
        _check_etypes(fh, spec.nbytes, call)
        es = fh.view.esize
        shared = fh.shared
        pos = shared.shared_pos
        shared.shared_pos = pos + (spec.nbytes // es if es else 0)
        # ROMIO keeps the shared pointer in a hidden file: its update is a storage access
        rio.meta_wait(proc(), fh, call)
        n, act = (self._write if write else self._read)(fh, pos, buf, call)
        return n, act

    @_filecall
    def Read_shared(self, buf: Any, status: Status | None = None) -> None:
        n, act = self._shared(buf, status, False, "MPI_File_read_shared")
        self._finish(self._fh, n, act, status, "MPI_File_read_shared")

    @_filecall
    def Write_shared(self, buf: Any, status: Status | None = None) -> None:
        n, act = self._shared(buf, status, True, "MPI_File_write_shared")
        self._finish(self._fh, n, act, status, "MPI_File_write_shared")

    @_filecall
    def Iread_shared(self, buf: Any) -> Request:
        n, act = self._shared(buf, None, False, "MPI_File_iread_shared")
        return Request._wrap(rio.IoRequest(proc(), "MPI_File_iread_shared", n, [act]))

    @_filecall
    def Iwrite_shared(self, buf: Any) -> Request:
        n, act = self._shared(buf, None, True, "MPI_File_iwrite_shared")
        return Request._wrap(rio.IoRequest(proc(), "MPI_File_iwrite_shared", n, [act]))

    def _ordered(self, buf: Any, status: Status | None, write: bool, call: str) -> int:
        fh = self._live(call)
        spec = msgspec.parse_send(buf) if write else msgspec.parse_recv(buf)
        _check_etypes(fh, spec.nbytes, call)
        es = fh.view.esize
        mine = spec.nbytes // es if es else 0
        shared = fh.shared
        pr = proc()
        base = shared.shared_pos  # nobody moves it before every member reached the allgather
        counts = [c[0] for c in _allgather_raw(pr, shared.comm, (mine,), 8, call)]
        rank = shared.comm.local_rank(pr)
        pos = base + sum(counts[:rank])
        shared.shared_pos = base + sum(counts)
        n, act = (self._write if write else self._read)(fh, pos, buf, call)
        self._finish(fh, n, act, status, call)
        return n

    @_filecall
    def Read_ordered(self, buf: Any, status: Status | None = None) -> None:
        self._ordered(buf, status, False, "MPI_File_read_ordered")

    @_filecall
    def Write_ordered(self, buf: Any, status: Status | None = None) -> None:
        self._ordered(buf, status, True, "MPI_File_write_ordered")

    @_filecall
    def Seek_shared(self, offset: int, whence: int = SEEK_SET) -> None:
        fh = self._live("MPI_File_seek_shared")
        pr = proc()
        # nobody moves the pointer before every member is in the call: all read the same one
        new = _seek(fh, fh.shared.shared_pos, offset, whence, "MPI_File_seek_shared")
        comm = fh.shared.comm
        args = _allgather_raw(pr, comm, (offset, whence), 16, "MPI_File_seek_shared")
        root = comm.local_rank(pr) == 0
        if root:  # MPICH: the root moves the pointer, the others check their arguments
            fh.shared.shared_pos = new
        _barrier(pr, comm)
        if not root and args[0] != (offset, whence):
            errors.raise_error(errors.ERR_ARG, "MPI_File_seek_shared: Inconsistent arguments to "
                               "collective routine ")

    @_filecall
    def Get_position_shared(self) -> int:
        return self._live("MPI_File_get_position_shared").shared.shared_pos

    # -- split collectives ----------------------------------------------------------------
    def _begin(self, kind: str, run: Any, call: str) -> None:
        fh = self._live(call)
        if fh.split is not None:
            errors.raise_error(errors.ERR_IO, f"{call}: Only one active split collective I/O operation is "
                               "allowed per file handle")
        n = run()
        fh.split = (kind, n)

    def _end(self, kind: str, status: Status | None, call: str) -> None:
        fh = self._live(call)
        if fh.split is None:  # MPICH does not check that the kinds of begin and end match
            errors.raise_error(errors.ERR_IO, f"{call}: No split collective I/O operation is active")
        n = fh.split[1]
        fh.split = None
        if status is not None:  # MPICH fills source and tag with 0 here
            status._fill(0, 0, 0, n)

    @_filecall
    def Read_at_all_begin(self, offset: int, buf: Any) -> None:
        self._begin("read_at_all", lambda: self._at(offset, buf, None, False, True, "MPI_File_read_at_all_begin"),
                    "MPI_File_read_at_all_begin")

    @_filecall
    def Read_at_all_end(self, buf: Any, status: Status | None = None) -> None:
        self._end("read_at_all", status, "MPI_File_read_at_all_end")

    @_filecall
    def Write_at_all_begin(self, offset: int, buf: Any) -> None:
        self._begin("write_at_all", lambda: self._at(offset, buf, None, True, True, "MPI_File_write_at_all_begin"),
                    "MPI_File_write_at_all_begin")

    @_filecall
    def Write_at_all_end(self, buf: Any, status: Status | None = None) -> None:
        self._end("write_at_all", status, "MPI_File_write_at_all_end")

    @_filecall
    def Read_all_begin(self, buf: Any) -> None:
        self._begin("read_all", lambda: self._ind(buf, None, False, True, "MPI_File_read_all_begin"),
                    "MPI_File_read_all_begin")

    @_filecall
    def Read_all_end(self, buf: Any, status: Status | None = None) -> None:
        self._end("read_all", status, "MPI_File_read_all_end")

    @_filecall
    def Write_all_begin(self, buf: Any) -> None:
        self._begin("write_all", lambda: self._ind(buf, None, True, True, "MPI_File_write_all_begin"),
                    "MPI_File_write_all_begin")

    @_filecall
    def Write_all_end(self, buf: Any, status: Status | None = None) -> None:
        self._end("write_all", status, "MPI_File_write_all_end")

    @_filecall
    def Read_ordered_begin(self, buf: Any) -> None:
        self._begin("read_ordered", lambda: self._ordered(buf, None, False, "MPI_File_read_ordered_begin"),
                    "MPI_File_read_ordered_begin")

    @_filecall
    def Read_ordered_end(self, buf: Any, status: Status | None = None) -> None:
        self._end("read_ordered", status, "MPI_File_read_ordered_end")

    @_filecall
    def Write_ordered_begin(self, buf: Any) -> None:
        self._begin("write_ordered", lambda: self._ordered(buf, None, True, "MPI_File_write_ordered_begin"),
                    "MPI_File_write_ordered_begin")

    @_filecall
    def Write_ordered_end(self, buf: Any, status: Status | None = None) -> None:
        self._end("write_ordered", status, "MPI_File_write_ordered_end")

    # -- consistency ------------------------------------------------------------------------
    @_filecall
    def Set_atomicity(self, flag: bool) -> None:
        fh = self._live("MPI_File_set_atomicity")
        pr = proc()
        comm = fh.shared.comm
        flags = _allgather_raw(pr, comm, (1 if flag else 0,), 4, "MPI_File_set_atomicity")
        if flags[0][0] != (1 if flag else 0):  # MPICH checks against the root's
            errors.raise_error(errors.ERR_ARG, "MPI_File_set_atomicity: Inconsistent arguments to "
                               "collective routine ")
        fh.atomic = bool(flag)  # a per-process mode in ROMIO

    @_filecall
    def Get_atomicity(self) -> bool:
        return self._live("MPI_File_get_atomicity").atomic

    @property
    def atomicity(self) -> bool:
        return self.Get_atomicity()

    @atomicity.setter
    def atomicity(self, flag: bool) -> None:
        self.Set_atomicity(flag)

    @_filecall
    def Sync(self) -> None:
        fh = self._live("MPI_File_sync")
        fh.check_write("MPI_File_sync")
        # ROMIO: an fsync of the process's descriptor, no synchronisation of the members
        rio.sync_wait(proc(), fh, "MPI_File_sync")

FILE_NULL = File()


def _same_everywhere(pr: Any, fh: rio.FileHandle, value: int, call: str) -> None:
    """MPICH's check that every member passed the same ``value`` (all fail otherwise)."""
    values = _allgather_raw(pr, fh.shared.comm, (value,), 8, call)
    if any(v != values[0] for v in values):
        errors.raise_error(errors.ERR_ARG, f"{call}: Inconsistent arguments to collective routine ")


def _file_comm(impl: CommImpl) -> CommImpl:
    """The file's private duplicate of ``impl`` (ROMIO's ``fd->comm``)."""
    fcomm = CommImpl(impl.world, list(impl.group), "")
    fcomm.internal = True
    return fcomm


def _collective_access(pr: Any, fh: rio.FileHandle, offs: np.ndarray, lens: np.ndarray, write: bool,
                       call: str) -> None:
    """The time of a member's part of a collective access to the file byte ranges
    ``offs``/``lens``: the members send each other their first and last byte (ROMIO's and
    SMPI's two ``MPI_Allgather``, real messages on the file's communicator), then two-phase
    collective buffering when the hints and the ranges ask for it, else each member's own
    independent access (:func:`smpy.runtime.collio.two_phase_wanted`)."""
    lo, hi = rio.span(offs, lens)
    comm = fh.shared.comm
    los = _allgather_raw(pr, comm, (lo,), 8, call)
    his = _allgather_raw(pr, comm, (hi,), 8, call)
    ranges = [(a[0], b[0]) for a, b in zip(los, his)]
    sh = fh.shared
    two = None
    if collio.two_phase_wanted(sh.info, write, ranges):
        def two() -> None:
            twophase.run(pr, sh, offs, lens, write, call, ranges)
    rio.collective_pieces(pr, fh, offs, lens, write, call, two)


def _check_etypes(fh: rio.FileHandle, nbytes: int, call: str) -> None:
    es = fh.view.esize
    if es and nbytes % es:
        errors.raise_error(errors.ERR_IO, f"{call}: Only an integral number of etypes can be accessed")


def _ibarrier(pr: Any, comm: CommImpl, call: str) -> Any:
    return _coll_start(pr, comm, call, lambda ctx: ctx.sel.run("barrier", ctx), nonblocking=True)


def _out_type(impl: Any) -> Datatype:
    """Get_view's datatypes: predefined ones as themselves, derived ones duplicated."""
    if impl.is_predefined:
        return Datatype._wrap(impl)
    return Datatype._wrap(impl.dup())


def _seek(fh: rio.FileHandle, cur: int, offset: int, whence: int, call: str) -> int:
    if whence == SEEK_SET:
        new = offset
    elif whence == SEEK_CUR:
        new = cur + offset
    elif whence == SEEK_END:
        new = fh.view.eof_offset(fh.size()) + offset
    else:
        errors.raise_error(errors.ERR_ARG, f"{call}: Invalid whence argument")
    if new < 0:
        errors.raise_error(errors.ERR_ARG, f"{call}: Invalid offset argument")
    return new


def _datareps() -> set[str]:
    return proc().attrs.setdefault("mpi_datareps", set())


@mpicall
def Register_datarep(datarep: str, read_fn: Any, write_fn: Any, extent_fn: Any) -> None:
    """Register a user data representation (conversions are not applied: native layout)."""
    reps = _datareps()
    if datarep in reps or datarep in rio.DATAREPS:
        errors.raise_error(errors.ERR_DUP_DATAREP, f"MPI_Register_datarep: datarep {datarep} already defined")
    reps.add(datarep)


def replay(f: File, action: str, offs: Any = (), lens: Any = ()) -> None:
    """``smpy replay`` of a recorded MPI-IO action on the open file ``f``: the time of the
    access to the file byte ranges ``offs``/``lens`` (``write``, ``read``, ``write_all``,
    ``read_all``; no data moves), a metadata operation (``meta``) or the close (``close``:
    the members' synchronisation before it is the trace's own ``barrier``)."""
    fh = f._live("smpy replay")
    pr = proc()
    if action == "meta":
        rio.meta_wait(pr, fh, "MPI_File_meta")
        return
    if action == "close":
        f._close_now(pr, fh)
        return
    write = action.startswith("write")
    o = np.asarray(offs, np.int64)
    n = np.asarray(lens, np.int64)
    call = "MPI_File_" + action
    if action.endswith("_all"):
        _collective_access(pr, fh, o, n, write, call)
    else:
        rio.wait(rio.access_pieces(pr, fh, o, n, write), call, pr, fh)
