"""smpy side of the side-by-side speed benchmark: the same programs as twins.c, in mpi4py.

Usage: smpyrun -np N twins.py <pattern> [n]. Prints "<case> <simulated seconds>" from rank 0.
Runs unchanged under real mpiexec (the injected flops are then skipped).
"""
import sys

import numpy as np
from mpi4py import MPI

try:
    import smpy
except ImportError:
    smpy = None

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
pattern = sys.argv[1] if len(sys.argv) > 1 else "ring"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def ring(laps):
    token = np.zeros(1)  # 8 B
    t0 = MPI.Wtime()
    for _ in range(laps):
        if rank == 0:
            comm.Send([token, MPI.DOUBLE], dest=1 % size, tag=7)
            comm.Recv([token, MPI.DOUBLE], source=size - 1, tag=7)
        else:
            comm.Recv([token, MPI.DOUBLE], source=rank - 1, tag=7)
            token[0] += 1
            comm.Send([token, MPI.DOUBLE], dest=(rank + 1) % size, tag=7)
    if rank == 0:
        print(f"ring_{laps} {MPI.Wtime() - t0:.9e}")


def pingpong(reps):
    buf = np.ones(8388608, dtype=np.uint8)
    t0 = MPI.Wtime()
    m = 1
    while m <= 8388608:
        for _ in range(reps):
            if rank == 0:
                comm.Send([buf, m, MPI.BYTE], dest=1, tag=1)
                comm.Recv([buf, m, MPI.BYTE], source=1, tag=2)
            elif rank == 1:
                comm.Recv([buf, m, MPI.BYTE], source=0, tag=1)
                comm.Send([buf, m, MPI.BYTE], dest=0, tag=2)
        m *= 2
    if rank == 0:
        print(f"pingpong_{reps} {MPI.Wtime() - t0:.9e}")


def stencil(steps):
    s, r = np.full(1024, float(rank)), np.zeros(1024)
    left, right = (rank - 1) % size, (rank + 1) % size
    local, glob = np.zeros(1), np.zeros(1)
    t0 = MPI.Wtime()
    for _ in range(steps):
        if smpy is not None:
            smpy.execute_flops(1e6 * (1 + rank % 3))
        comm.Sendrecv([s, MPI.DOUBLE], dest=right, sendtag=5, recvbuf=[r, MPI.DOUBLE], source=left, recvtag=5)
        comm.Sendrecv([s, MPI.DOUBLE], dest=left, sendtag=6, recvbuf=[r, MPI.DOUBLE], source=right, recvtag=6)
        local[0] = r[0]
        comm.Allreduce([local, MPI.DOUBLE], [glob, MPI.DOUBLE], op=MPI.SUM)
    if rank == 0:
        print(f"stencil_{steps} {MPI.Wtime() - t0:.9e}")


def allreduce(reps):
    s, r = np.ones(131072), np.zeros(131072)  # 1 MiB of doubles
    t0 = MPI.Wtime()
    for _ in range(reps):
        comm.Allreduce([s, MPI.DOUBLE], [r, MPI.DOUBLE], op=MPI.SUM)
    if rank == 0:
        print(f"allreduce_{reps} {MPI.Wtime() - t0:.9e}")


{"ring": ring, "pingpong": pingpong, "stencil": stencil, "allreduce": allreduce}[pattern](n)
