"""1-D heat equation, explicit scheme, domain split across ranks.

Halo exchange with Sendrecv, convergence check with Allreduce every 10 steps.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n_global = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
alpha = 0.25

counts = [n_global // size + (1 if r < n_global % size else 0) for r in range(size)]
n = counts[rank]
start = sum(counts[:rank])
x = (np.arange(start, start + n) + 0.5) / n_global
u = np.zeros(n + 2)
u[1:-1] = np.sin(np.pi * x) + 0.5 * np.sin(3 * np.pi * x)
left = rank - 1 if rank > 0 else MPI.PROC_NULL
right = rank + 1 if rank < size - 1 else MPI.PROC_NULL

t0 = MPI.Wtime()
residual = np.zeros(1)
for step in range(1, steps + 1):
    comm.Sendrecv(u[1:2], dest=left, sendtag=0, recvbuf=u[-1:], source=right, recvtag=0)
    comm.Sendrecv(u[-2:-1], dest=right, sendtag=1, recvbuf=u[0:1], source=left, recvtag=1)
    if left == MPI.PROC_NULL:
        u[0] = 0.0
    if right == MPI.PROC_NULL:
        u[-1] = 0.0
    new = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])
    local = np.array([np.sum((new - u[1:-1]) ** 2)])
    u[1:-1] = new
    if step % 10 == 0:
        comm.Allreduce(local, residual, op=MPI.SUM)
total = np.zeros(1)
comm.Allreduce(np.array([u[1:-1].sum()]), total, op=MPI.SUM)
t1 = MPI.Wtime()
if rank == 0:
    print(f"heat: n={n_global} steps={steps} ranks={size}")
    print(f"final residual {residual[0]:.6e}, total heat {total[0]:.8f}")
    # MPI.Wtime: the simulated clock under smpyrun, the real one under mpiexec
    print(f"# elapsed (MPI.Wtime) {t1 - t0:.6f} s")
