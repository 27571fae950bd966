"""The ``nbv`` case of ti_cases.c in mpi4py: non-blocking point-to-point (isend, irecv, test,
wait, waitall) and the v-collectives (gatherv, scatterv, allgatherv, alltoallv,
reduce_scatter with per-rank counts). Usage: smpyrun -np N --trace-ti FILE nbv.py
"""
import numpy as np
from mpi4py import MPI

try:
    import smpy
except ImportError:  # under a real mpiexec the injected computation is skipped
    smpy = None


def flops(n: float) -> None:
    if smpy is not None:
        smpy.execute_flops(n)


comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
left, right = (rank - 1) % size, (rank + 1) % size
a = np.zeros(1 << 14)
b = np.zeros(1 << 14)
v = [10 * (1 + i % 3) for i in range(size)]           # rank i's part of the rooted ones
x = [10 * (1 + (rank + i) % 3) for i in range(size)]  # this rank's exchange with i (symmetric)
vd = list(np.cumsum([0] + v[:-1]))
xd = list(np.cumsum([0] + x[:-1]))

flops(1e6 * (rank + 1))
r0 = comm.Irecv(b[:2000], left, 4)
r1 = comm.Isend(a[:2000], right, 4)
if not r0.Test():
    r0.Wait()
r1.Wait()
flops(2e6)
reqs = [comm.Irecv(b[:500], right, 8), comm.Irecv(b[500:1000], left, 8),
        comm.Isend(a[:500], left, 8), comm.Isend(a[500:1000], right, 8)]
MPI.Request.Waitall(reqs)
comm.Gatherv(a[:v[rank]], [b, v, vd, MPI.DOUBLE], root=0)
comm.Scatterv([a, v, vd, MPI.DOUBLE], b[:v[rank]], root=size - 1)
comm.Allgatherv(a[:v[rank]], [b, v, vd, MPI.DOUBLE])
comm.Alltoallv([a, x, xd, MPI.DOUBLE], [b, x, xd, MPI.DOUBLE])
comm.Reduce_scatter(a[:sum(v)], b[:v[rank]], v, op=MPI.SUM)
