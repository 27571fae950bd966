"""Benchmark program of the host memory-contention model (benchmarks/predict/contention.py).

Each rank owns an N x N x N grid and applies heat3d's explicit 7-point stencil to it STEPS
times. SCHEDULE ``together``: every step, all ranks compute at once (they compete for the
node's memory bandwidth, as SPMD ranks do); ``turns``: a token goes around the ranks and only
its holder computes (as in a pipelined sweep without tiling), so no two ranks compute at once.
Both schedules make the same MPI calls from the same lines (a ``PROC_NULL`` peer when the
token is not used), so their regions have the same keys and one factor file serves both.

Usage: contention_app.py N STEPS together|turns
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
schedule = sys.argv[3] if len(sys.argv) > 3 else "together"
if schedule not in ("together", "turns"):
    raise SystemExit(f"schedule must be 'together' or 'turns', not {schedule!r}")
turns = schedule == "turns"
alpha = 1.0 / 8.0
x = (np.arange(n) + 0.5) / n
u = np.zeros((n + 2, n, n))
u[1:-1] = (np.sin(np.pi * x)[:, None, None] * np.sin(np.pi * x)[None, :, None]
           * np.sin(2 * np.pi * x)[None, None, :]) * (rank + 1)
new = np.empty((n, n, n))
token = np.zeros(1)
prev = rank - 1 if turns and rank > 0 else MPI.PROC_NULL
after = rank + 1 if turns and rank < size - 1 else MPI.PROC_NULL

comm.Barrier()
t0 = MPI.Wtime()
for step in range(steps):
    comm.Recv(token, source=prev, tag=step)
    c = u[1:-1]
    new[...] = c * (1.0 - 6.0 * alpha)
    new += alpha * (u[:-2] + u[2:])
    new[:, 1:, :] += alpha * c[:, :-1, :]
    new[:, :-1, :] += alpha * c[:, 1:, :]
    new[:, :, 1:] += alpha * c[:, :, :-1]
    new[:, :, :-1] += alpha * c[:, :, 1:]
    u[1:-1] = new
    comm.Send(token, dest=after, tag=step)
    comm.Barrier()
t1 = MPI.Wtime()
total = comm.reduce(float(u[1:-1].sum()), op=MPI.SUM, root=0)
if rank == 0:
    print(f"contention_app: n={n} steps={steps} ranks={size} schedule={schedule}")
    print(f"total heat {total:.10e}")
    print(f"# elapsed {t1 - t0:.6f} s")
