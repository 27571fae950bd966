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


def wrong(coll, s, r, n):
    """Whether this rank's result differs from what the collective must give (as
    colls_cases.c checks it: s[i] = rank + i everywhere, SUM, root 0)."""
    k = np.arange(n, dtype=np.float64)
    tri = size * (size - 1) / 2
    if coll == "bcast":
        return not np.array_equal(s[:n], k)
    if coll == "allreduce" or (coll == "reduce" and rank == 0):
        return not np.array_equal(r[:n], tri + size * k)
    if coll == "scatter":
        return not np.array_equal(r[:n], rank * n + k)
    if coll == "reduce_scatter":
        return not np.array_equal(r[:n], tri + size * (rank * n + k))
    blocked = coll in ("alltoall", "alltoallv", "allgather", "allgatherv") or (coll == "gather" and rank == 0)
    if not blocked:
        return False
    blocks = np.arange(size, dtype=np.float64)[:, None] + k[None, :]  # j + k (size x n: only here)
    if coll in ("alltoall", "alltoallv"):
        blocks += rank * n
    return not np.array_equal(r.reshape(size, n), blocks)


coll, label = sys.argv[1], sys.argv[2]
for arg in sys.argv[3:]:
    nbytes = int(arg)
    n = nbytes // 8
    total = n if coll in ("bcast", "reduce", "allreduce") else n * size
    s = rank + np.arange(total, dtype=np.float64)
    r = np.zeros(total)
    counts = [n] * size
    displs = [i * n for i in range(size)]
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
