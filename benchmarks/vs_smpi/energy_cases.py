"""smpy side of the energy differential benchmark: the twin of energy_cases.c.

Usage: smpyrun -np N --energy energy_cases.py <P>  (P < 0: pstates left to the DVFS governor)
"""
import sys

import numpy as np
from mpi4py import MPI

import smpy

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
pstate = int(sys.argv[1]) if len(sys.argv) > 1 else 0
if pstate >= 0:
    smpy.set_pstate(pstate)
n = 65536
s, r = np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.uint8)
left, right = (rank - 1) % size, (rank + 1) % size
for _ in range(10):
    smpy.execute_flops(5e7 * (1 + rank % 3))
    comm.Sendrecv([s, MPI.BYTE], dest=right, sendtag=5, recvbuf=[r, MPI.BYTE], source=left, recvtag=5)
    comm.Sendrecv([s, MPI.BYTE], dest=left, sendtag=6, recvbuf=[r, MPI.BYTE], source=right, recvtag=6)
if rank == 0:
    print(f"stencil_{size}_p{pstate} {MPI.Wtime():.9e}")
