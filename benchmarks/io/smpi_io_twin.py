"""Python twin of smpi_io.c (same cases, same output), run by smpy; see vs_smpi.py."""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def out(mode, op, n, t):
    print(f"{mode}.{op}.{n}.{rank} {t:.9f}", flush=True)


def open_file(d, mode, n):
    return MPI.File.Open(comm, f"{d}/{mode}.{n}", MPI.MODE_RDWR | MPI.MODE_CREATE)


def timed_at(fh, off, buf, write, coll):
    comm.Barrier()
    t0 = MPI.Wtime()
    if write:
        (fh.Write_at_all if coll else fh.Write_at)(off, buf)
    else:
        (fh.Read_at_all if coll else fh.Read_at)(off, buf)
    return MPI.Wtime() - t0


def simple(d, mode, n, buf):
    coll = mode == "coll"
    fh = open_file(d, mode, n)
    off = rank * n
    out(mode, "write", n, timed_at(fh, off, buf, True, coll))
    out(mode, "read", n, timed_at(fh, off, buf, False, coll))
    fh.Close()


def mixed(d, n, buf):
    fh = open_file(d, "mixed", n)
    off = rank * n
    fh.Write_at(off, buf)
    w = rank % 2 == 0
    out("mixed", "write" if w else "read", n, timed_at(fh, off, buf, w, False))
    fh.Close()


def strided(d, n, buf):
    b = 4096
    ft = MPI.BYTE.Create_vector(n // b, b, size * b).Commit()
    fh = open_file(d, "strided", n)
    fh.Set_view(rank * b, MPI.BYTE, ft, "native")
    out("strided", "write", n, timed_at(fh, 0, buf, True, True))
    fh.Close()
    ft.Free()


def main():
    d = sys.argv[1]
    for a in sys.argv[2:]:
        n = int(a)
        buf = np.full(n, ord("a") + rank % 26, dtype=np.uint8)
        simple(d, "indep", n, buf)
        simple(d, "coll", n, buf)
        if size > 1:
            mixed(d, n, buf)
        if size > 1 and n % 4096 == 0:
            strided(d, n, buf)


main()
