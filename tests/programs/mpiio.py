"""MPI-IO behaviour probe: run under real mpi4py+MPICH and under smpy, outputs compared.

Usage: mpiio.py DIR. Each rank writes DIR/out<rank>.json: {"rank": r, "results": [[key, value], ...]}.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
out: list = []


def rec(key, fn):
    try:
        v = fn()
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, bytes):
            v = v.hex()
        out.append([key, v])
    except MPI.Exception as e:
        out.append([key, "ERR", e.Get_error_class()])
    except Exception as e:  # noqa: BLE001
        out.append([key, "PYERR", type(e).__name__])


d = sys.argv[1]
path = os.path.join(d, "data.bin")
missing = os.path.join(d, "missing.bin")
rec("open-missing", lambda: MPI.File.Open(comm, missing, MPI.MODE_RDONLY))
rec("open-no-access-mode", lambda: MPI.File.Open(comm, path, MPI.MODE_CREATE))
rec("open-two-modes", lambda: MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_WRONLY))
rec("open-rdonly-create", lambda: MPI.File.Open(comm, path, MPI.MODE_RDONLY | MPI.MODE_CREATE))
rec("open-seq-rdwr", lambda: MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_SEQUENTIAL))
rec("open-amode-not-same", lambda: MPI.File.Open(comm, path, MPI.MODE_CREATE | (
    MPI.MODE_RDWR if rank == 0 else MPI.MODE_WRONLY)) if size > 1 else "n/a")
comm.Barrier()

fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE)
rec("amode", fh.Get_amode)
rec("atomicity", fh.Get_atomicity)
rec("group-size", lambda: fh.group_size)
rec("group-rank", lambda: fh.group_rank)
rec("errhandler-return", lambda: fh.Get_errhandler() == MPI.ERRORS_RETURN)
rec("info-cb", lambda: fh.Get_info().Get("cb_buffer_size"))
rec("view0", lambda: [fh.Get_view()[0], fh.Get_view()[1].size, fh.Get_view()[3]])
rec("size0", fh.Get_size)

# explicit offsets, etype INT
fh.Set_view(0, MPI.INT)
w = np.arange(4, dtype="i") + 10 * rank
st = MPI.Status()
rec("write_at", lambda: fh.Write_at(4 * rank, w, st))
rec("write_at-count", lambda: st.Get_count(MPI.INT))
fh.Sync()
comm.Barrier()
fh.Sync()
rec("size1", fh.Get_size)
r = np.full(4 * size + 2, -1, dtype="i")
st2 = MPI.Status()
rec("read_at-past-eof", lambda: (fh.Read_at(0, r, st2), r)[1])
rec("read_at-count", lambda: st2.Get_count(MPI.INT))
rec("read_at-bytes", lambda: st2.Get_count(MPI.BYTE))
rec("position-unchanged", fh.Get_position)

# individual pointer
fh.Seek(4 * rank + 1, MPI.SEEK_SET)
r2 = np.zeros(2, dtype="i")
rec("read", lambda: (fh.Read(r2), r2)[1])
rec("position", fh.Get_position)
rec("seek-cur", lambda: (fh.Seek(-1, MPI.SEEK_CUR), fh.Get_position())[1])
rec("seek-end", lambda: (fh.Seek(0, MPI.SEEK_END), fh.Get_position())[1])
rec("seek-neg", lambda: fh.Seek(-1, MPI.SEEK_SET))
rec("seek-whence", lambda: fh.Seek(0, 12345))
rec("byte-offset", lambda: fh.Get_byte_offset(3))
rec("type-extent", lambda: fh.Get_type_extent(MPI.DOUBLE_INT))
comm.Barrier()

# shared pointer: ordered, then Write_shared by rank 0 only
fh.Set_view(0, MPI.INT)
rec("pos-shared0", fh.Get_position_shared)
comm.Barrier()
rec("write_ordered", lambda: fh.Write_ordered(np.full(rank + 1, 100 + rank, dtype="i")))
rec("pos-shared1", fh.Get_position_shared)
comm.Barrier()
fh.Seek_shared(0, MPI.SEEK_SET)
ro = np.zeros(rank + 1, dtype="i")
rec("read_ordered", lambda: (fh.Read_ordered(ro), ro)[1])
fh.Seek_shared(0, MPI.SEEK_END)
rec("pos-shared-end", fh.Get_position_shared)
comm.Barrier()
if rank == 0:
    rec("write_shared", lambda: fh.Write_shared(np.array([7, 7], dtype="i")))
comm.Barrier()
rec("pos-shared2", fh.Get_position_shared)

# collectives: all, at_all, nonblocking, split
fh.Set_size(0)
rec("size-after-set", fh.Get_size)
fh.Seek(3 * rank, MPI.SEEK_SET)
rec("write_all", lambda: fh.Write_all(np.full(3, rank + 1, dtype="i")))
rec("iwrite_at_all", lambda: fh.Iwrite_at_all(3 * size + rank, np.array([50 + rank], dtype="i")).Wait())
fh.Sync()
comm.Barrier()
fh.Seek(0, MPI.SEEK_SET)
ra = np.zeros(4 * size, dtype="i")
rec("read_all", lambda: (fh.Read_all(ra), ra)[1])
rb = np.zeros(2, dtype="i")
rec("iread_at", lambda: (fh.Iread_at(1, rb).Wait(), rb)[1])
rc = np.zeros(3, dtype="i")
st3 = MPI.Status()
fh.Read_at_all_begin(3 * rank, rc)
rec("read_at_all_end", lambda: (fh.Read_at_all_end(rc, st3), rc, st3.Get_count(MPI.INT))[1:])
rec("end-without-begin", lambda: fh.Write_all_end(rc))
rec("begin-twice", lambda: (fh.Read_all_begin(rc), fh.Read_all_begin(rc)))
rec("end-other-kind", lambda: fh.Write_all_end(rc))
st4 = MPI.Status()
rec("status-iread", lambda: (fh.Iread_at(0, rb).Wait(st4), st4.source, st4.tag, st4.Get_count(MPI.BYTE))[1:])
st5 = MPI.Status()
rec("status-read", lambda: (fh.Read_at(0, rb, st5), st5.source, st5.tag, st5.Get_count(MPI.BYTE))[1:])
rec("partial-etype", lambda: fh.Write_at(0, b"12345"))
rec("partial-etype-read", lambda: fh.Read(bytearray(6)))
rec("call-errhandler", lambda: fh.Call_errhandler(MPI.ERR_OTHER))
rec("preallocate", lambda: (fh.Preallocate(10), fh.Get_size())[1])
rec("preallocate-big", lambda: (fh.Preallocate(1000), fh.Get_size())[1])
rec("set-size-not-same", lambda: fh.Set_size(10 + rank) if size > 1 else "n/a")
rec("preallocate-not-same", lambda: fh.Preallocate(10 + rank) if size > 1 else "n/a")
rec("atomicity-not-same", lambda: (fh.Set_atomicity(rank == 0), fh.Get_atomicity())[1])
fh.Set_atomicity(False)

# a non-contiguous filetype among the predefined ones: DOUBLE_INT is 12 bytes over 16
fh.Set_size(0)
fh.Set_view(0, MPI.BYTE, MPI.DOUBLE_INT)
rec("view-dint", lambda: [fh.Get_view()[0], fh.Get_view()[2].extent])
rec("dint-byte-offset", lambda: [fh.Get_byte_offset(k) for k in (0, 11, 12, 13, 25)])
if rank == 0:
    fh.Write_at(0, bytearray(range(1, 31)))
fh.Sync()
comm.Barrier()
rec("dint-size", fh.Get_size)
if rank == 0:
    with open(path, "rb") as f:
        data = bytearray(f.read())
        data[12:16] = data[28:32] = b"...."  # holes: what ROMIO's data sieving left there
        out.append(["dint-contents", data.hex()])
rd = bytearray(30)
rec("dint-read", lambda: bytes((fh.Read_at(0, rd), rd)[1]))
rec("dint-seek-end", lambda: (fh.Seek(0, MPI.SEEK_END), fh.Get_position())[1])
rec("view-displacement", lambda: (fh.Set_view(8, MPI.INT, MPI.INT), fh.Get_byte_offset(2))[1])
rec("set-view-datarep", lambda: fh.Set_view(0, MPI.INT, MPI.INT, "bogus"))
# external32: big-endian in the file, native in memory
fh.Set_size(0)
fh.Set_view(0, MPI.INT, MPI.INT, "external32")
if rank == 0:
    fh.Write_at(0, np.array([1, 2, 3], dtype="i"))
fh.Set_view(12, MPI.DOUBLE, MPI.DOUBLE, "external32")
if rank == 0:
    fh.Write_at(0, np.array([1.5], dtype="d"))
fh.Set_view(0, MPI.INT, MPI.INT, "external32")
fh.Sync()
comm.Barrier()
fh.Sync()
rec("ext32-view", lambda: fh.Get_view()[3])
rec("ext32-file", lambda: open(path, "rb").read())
r32 = np.zeros(3, dtype="i")
rec("ext32-read", lambda: (fh.Read_at(0, r32), r32)[1])
rec("ext32-type-extent", lambda: fh.Get_type_extent(MPI.LONG_DOUBLE))
rec("set-size-neg", lambda: fh.Set_size(-1))
fh.Close()
rec("closed", lambda: fh == MPI.FILE_NULL)
rec("close-again", fh.Close)
rec("closed-size", fh.Get_size)

# access modes
comm.Barrier()
fr = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
rec("write-rdonly", lambda: fr.Write_at(0, b"xx"))
rec("sync-rdonly", fr.Sync)
fr.Close()
fw = MPI.File.Open(comm, path, MPI.MODE_WRONLY | MPI.MODE_APPEND)
rec("append-position", fw.Get_position)
rec("read-wronly", lambda: fw.Read_at(0, bytearray(2)))
fw.Close()
rec("excl", lambda: MPI.File.Open(MPI.COMM_SELF, path, MPI.MODE_WRONLY | MPI.MODE_CREATE | MPI.MODE_EXCL))
comm.Barrier()
if rank == 0:
    with open(path, "rb") as f:
        out.append(["contents", f.read().hex()])
    rec("delete", lambda: MPI.File.Delete(path))
    rec("delete-again", lambda: MPI.File.Delete(path))
comm.Barrier()
# delete on close
tmp = os.path.join(d, "doc.bin")
f2 = MPI.File.Open(comm, tmp, MPI.MODE_WRONLY | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE)
f2.Write_at_all(rank, bytes([rank]))
f2.Close()
rec("deleted-on-close", lambda: os.path.exists(tmp))
rec("null-errhandler", lambda: MPI.FILE_NULL.Get_errhandler() == MPI.ERRORS_RETURN)
rec("f2py-null", lambda: MPI.File.f2py(0) == MPI.FILE_NULL)
with open(os.path.join(d, f"out{rank}.json"), "w") as f:
    json.dump({"rank": rank, "results": out}, f, default=lambda o: o.tolist() if hasattr(o, "tolist") else repr(o))
