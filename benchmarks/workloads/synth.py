"""A short synthetic MPI job for the batch benchmark (benchmarks/workloads/bench_batch.py):
ITERS iterations of modelled computation (FLOPS per rank, smpy.execute_flops), a ring halo
exchange of BYTES with both neighbours and an 8-byte Allreduce.

    smpy batch ...   # program: synth.py, args: [ITERS, FLOPS, BYTES]
"""

import sys

import numpy as np
from mpi4py import MPI

import smpy

iters, flops, nbytes = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
w = MPI.COMM_WORLD
rank, size = w.Get_rank(), w.Get_size()
left, right = (rank - 1) % size, (rank + 1) % size
out = np.zeros(nbytes, dtype=np.uint8)
inn = np.empty(nbytes, dtype=np.uint8)
acc = np.zeros(1)
for _ in range(iters):
    smpy.execute_flops(flops)
    w.Sendrecv(out, dest=right, recvbuf=inn, source=left)
    w.Sendrecv(out, dest=left, recvbuf=inn, source=right)
    acc += w.allreduce(1.0)
if rank == 0:
    print(f"{size} ranks, {iters} iterations, sum {acc[0]:g}")
