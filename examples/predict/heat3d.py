"""3-D heat distribution, SPMD with halo exchange (MERPSYS paradigm 2).

An N x N x N grid, split in slabs along z; each step exchanges one plane with each
neighbour (Sendrecv), applies the explicit 7-point stencil, and every 10 steps reduces the
residual (Allreduce). Usage: heat3d.py N STEPS
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
alpha = 1.0 / 8.0

counts = [n // size + (1 if r < n % size else 0) for r in range(size)]
nz, z0 = counts[rank], sum(counts[:rank])
u = np.zeros((nz + 2, n, n))
z = (np.arange(z0, z0 + nz) + 0.5) / n
x = (np.arange(n) + 0.5) / n
u[1:-1] = (np.sin(np.pi * z)[:, None, None] * np.sin(np.pi * x)[None, :, None]
           * np.sin(2 * np.pi * x)[None, None, :])
up = rank + 1 if rank < size - 1 else MPI.PROC_NULL
down = rank - 1 if rank > 0 else MPI.PROC_NULL
new = np.empty((nz, n, n))
res = np.zeros(1)

comm.Barrier()
t0 = MPI.Wtime()
c0 = time.thread_time()
for step in range(1, steps + 1):
    comm.Sendrecv(u[nz], dest=up, sendtag=0, recvbuf=u[0], source=down, recvtag=0)
    comm.Sendrecv(u[1], dest=down, sendtag=1, recvbuf=u[nz + 1], source=up, recvtag=1)
    if down == MPI.PROC_NULL:
        u[0] = 0.0
    if up == MPI.PROC_NULL:
        u[nz + 1] = 0.0
    c = u[1:-1]
    new[...] = c * (1.0 - 6.0 * alpha)
    new += alpha * (u[:-2] + u[2:])
    new[:, 1:, :] += alpha * c[:, :-1, :]
    new[:, :-1, :] += alpha * c[:, 1:, :]
    new[:, :, 1:] += alpha * c[:, :, :-1]
    new[:, :, :-1] += alpha * c[:, :, 1:]
    if step % 10 == 0:
        local = np.array([np.square(new - c).sum()])
        comm.Allreduce(local, res, op=MPI.SUM)
    u[1:-1] = new
total = np.zeros(1)
comm.Allreduce(np.array([u[1:-1].sum()]), total, op=MPI.SUM)
t1 = MPI.Wtime()
# CPU time of the busiest rank (MPICH polls while waiting: ~ the elapsed time on idle cores)
cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)
if rank == 0:
    print(f"heat3d: n={n} steps={steps} ranks={size}")
    print(f"residual {res[0]:.8e}, total heat {total[0]:.8f}")
    print(f"# elapsed {t1 - t0:.6f} s")
    print(f"# cpu {cpu:.6f} s")
