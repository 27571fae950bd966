"""An IOR-like benchmark: each rank writes then reads ``segments`` blocks of ``block`` bytes in
transfers of ``transfer`` bytes, through POSIX (os.pwrite/os.pread) or MPI-IO, to one shared
file (block ``s * nprocs + rank`` of segment ``s``) or a file per process. Runs unchanged under
``mpiexec`` and ``smpyrun``; rank 0 prints IOR's figures (bandwidth in MiB/s, time in s).

    smpyrun -np 64 --platform examples/io/pfs16.yaml --hostfile examples/io/compute.hosts \\
        examples/io/ior.py -a mpiio -b 4m -t 1m -o /tmp/smpy-ior/scratch/ior.dat -c -e
"""

import argparse
import os

import numpy as np
from mpi4py import MPI


def size(text):
    text = text.lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("kmg")) * mult


p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("-a", choices=("posix", "mpiio"), default="posix", help="I/O interface")
p.add_argument("-b", type=size, default=1 << 20, help="block size per rank and segment (1m)")
p.add_argument("-t", type=size, default=256 << 10, help="transfer size (256k)")
p.add_argument("-s", type=int, default=1, help="segments (1)")
p.add_argument("-F", action="store_true", help="file per process")
p.add_argument("-c", action="store_true", help="collective MPI-IO (*_at_all)")
p.add_argument("-e", action="store_true", help="fsync / MPI_File_sync after writing")
p.add_argument("-w", action="store_true", help="write only")
p.add_argument("-r", action="store_true", help="read only (of a file written before)")
p.add_argument("-o", default="ior.dat", help="test file (ior.dat)")
p.add_argument("-k", action="store_true", help="keep the file(s)")
p.add_argument("-H", action="append", default=[], metavar="KEY=VALUE",
               help="an MPI-IO hint (repeatable), e.g. romio_cb_write=enable")
args = p.parse_args()
if args.b % args.t:
    p.error("the block size must be a multiple of the transfer size")

comm = MPI.COMM_WORLD
rank, nprocs = comm.rank, comm.size
path = f"{args.o}.{rank:08d}" if args.F else args.o
buf = np.full(args.t, rank % 251, np.uint8)
per = args.b // args.t


def offsets():
    for s in range(args.s):
        for i in range(per):
            block = s if args.F else s * nprocs + rank
            yield block * args.b + i * args.t


def phase(write):
    if args.a == "posix":
        fd = os.open(path, (os.O_CREAT | os.O_WRONLY) if write else os.O_RDONLY, 0o644)
        for off in offsets():
            if write:
                os.pwrite(fd, buf, off)
            else:
                os.pread(fd, args.t, off)
        if write and args.e:
            os.fsync(fd)
        os.close(fd)
        return
    fcomm = MPI.COMM_SELF if args.F else comm
    amode = (MPI.MODE_CREATE | MPI.MODE_WRONLY) if write else MPI.MODE_RDONLY
    info = MPI.Info.Create()
    for hint in args.H:
        key, _, value = hint.partition("=")
        info.Set(key, value)
    f = MPI.File.Open(fcomm, path, amode, info)
    info.Free()
    for off in offsets():
        if write:
            (f.Write_at_all if args.c else f.Write_at)(off, buf)
        else:
            (f.Read_at_all if args.c else f.Read_at)(off, buf)
    if write and args.e:
        f.Sync()
    f.Close()


total = args.b * args.s * nprocs
for write in (True, False):
    if (write and args.r) or (not write and args.w):
        continue
    comm.Barrier()
    t0 = MPI.Wtime()
    phase(write)
    comm.Barrier()
    t = MPI.Wtime() - t0
    if rank == 0:
        print(f"{'write' if write else 'read':5s}  {total / t / (1 << 20):12.2f} MiB/s  "
              f"{t:.6f} s  ({args.a}, np {nprocs}, {total} bytes, "
              f"{'file per process' if args.F else 'shared file'}"
              f"{', collective' if args.c else ''})", flush=True)
comm.Barrier()
if not args.k and (args.F or rank == 0):
    try:
        os.remove(path)
    except OSError:
        pass
