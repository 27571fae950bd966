"""smpy side of the collective differential benchmark (twin of colls_cases.c).

Usage: smpyrun -np N colls_cases.py <coll> <label> <bytes>...  (see colls_cases.c)
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def p2p_barrier():
    b = np.zeros(1, dtype=np.uint8)
    if rank == 0:
        for i in range(1, size):
            comm.Recv([b, 0, MPI.BYTE], source=i, tag=99)
        for i in range(1, size):
            comm.Send([b, 0, MPI.BYTE], dest=i, tag=98)
    else:
        comm.Send([b, 0, MPI.BYTE], dest=0, tag=99)
        comm.Recv([b, 0, MPI.BYTE], source=0, tag=98)


def p2p_max(dt, bad):
    """(slowest rank's time, number of ranks with a wrong result) at rank 0."""
    v = np.array([dt, bad])
    if rank != 0:
        comm.Send([v, MPI.DOUBLE], dest=0, tag=97)
        return v
    x = np.zeros(2)
    for i in range(1, size):
        comm.Recv([x, MPI.DOUBLE], source=i, tag=97)
        v[0] = max(v[0], x[0])
        v[1] += x[1]
    return v


CHUNK = 16384  # elements checked at a time: no vector-sized temporaries, as the C loop


def _differs(got, expected_of):
    """Whether ``got[i] != expected_of(i)`` somewhere, computing the expected values a chunk
    at a time (``expected_of`` maps an index array to values)."""
    for lo in range(0, len(got), CHUNK):
        idx = np.arange(lo, min(len(got), lo + CHUNK), dtype=np.float64)
        if not np.array_equal(got[lo:lo + len(idx)], expected_of(idx)):
            return True
    return False


def wrong(coll, s, r, n):
    """Whether this rank's result differs from what the collective must give (as
    colls_cases.c checks it: s[i] = rank + i everywhere, SUM, root 0)."""
    tri = size * (size - 1) / 2
    if coll == "bcast":
        return _differs(s[:n], lambda k: k)
    if coll == "allreduce" or (coll == "reduce" and rank == 0):
        return _differs(r[:n], lambda k: tri + size * k)
    if coll == "scatter":
        return _differs(r[:n], lambda k: rank * n + k)
    if coll == "reduce_scatter":
        return _differs(r[:n], lambda k: tri + size * (rank * n + k))
    blocked = coll in ("alltoall", "alltoallv", "allgather", "allgatherv") or (coll == "gather" and rank == 0)
    if not blocked or n == 0:
        return False
    # r[j * n + k] must be j + k (+ rank * n for the alltoalls)
    shift = rank * n if coll in ("alltoall", "alltoallv") else 0

    def block_values(i):
        j = np.floor_divide(i, n)
        return j + (i - j * n) + shift

    return _differs(r[:size * n], block_values)


coll, label = sys.argv[1], sys.argv[2]
for arg in sys.argv[3:]:
    nbytes = int(arg)
    n = nbytes // 8
    total = n if coll in ("bcast", "reduce", "allreduce") else n * size
    s = np.arange(total, dtype=np.float64)
    s += rank
    r = np.zeros(total)
    if coll in ("alltoallv", "allgatherv", "reduce_scatter"):  # only where used (0.15 s at np 1024)
        counts = [n] * size
        displs = list(range(0, n * size, n)) if n else [0] * size
    p2p_barrier()
    t0 = MPI.Wtime()
    if coll == "bcast":
        comm.Bcast([s, n, MPI.DOUBLE], root=0)
    elif coll == "allreduce":
        comm.Allreduce([s, n, MPI.DOUBLE], [r, n, MPI.DOUBLE], op=MPI.SUM)
    elif coll == "alltoall":
        comm.Alltoall(s, r)  # whole arrays: n doubles per peer
    elif coll == "barrier":
        comm.Barrier()
    elif coll == "reduce":
        comm.Reduce([s, n, MPI.DOUBLE], [r, n, MPI.DOUBLE], op=MPI.SUM, root=0)
    elif coll == "alltoallv":
        comm.Alltoallv([s, counts, displs, MPI.DOUBLE], [r, counts, displs, MPI.DOUBLE])
    elif coll == "allgather":
        comm.Allgather([s, n, MPI.DOUBLE], r)
    elif coll == "allgatherv":
        comm.Allgatherv([s, n, MPI.DOUBLE], [r, counts, displs, MPI.DOUBLE])
    elif coll == "gather":
        comm.Gather([s, n, MPI.DOUBLE], r, root=0)
    elif coll == "scatter":
        comm.Scatter(s, [r, n, MPI.DOUBLE], root=0)
    elif coll == "reduce_scatter":
        comm.Reduce_scatter([s, MPI.DOUBLE], [r, n, MPI.DOUBLE], counts, op=MPI.SUM)
    dt = MPI.Wtime() - t0
    worst, bad = p2p_max(dt, 1.0 if wrong(coll, s, r, n) else 0.0)
    if rank == 0:
        print(f"{coll}_{label}_{nbytes} {worst:.9e}")
        if bad:
            print(f"WRONG {coll}_{label}_{nbytes} {int(bad)}")
