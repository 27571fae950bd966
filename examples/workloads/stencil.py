"""Application A of the interference example: ITERS iterations of 0.2 s of computation
(2e8 flops at 1 Gflop/s) and a ring exchange of MB megabytes with the right neighbour
(one flow per rank, all crossing the backbone)."""

import sys

import numpy as np
from mpi4py import MPI

import smpy

iters, mb = int(sys.argv[1]), int(sys.argv[2])
w = MPI.COMM_WORLD
out = np.zeros(mb * 1_000_000, dtype=np.uint8)
inn = np.empty_like(out)
for _ in range(iters):
    smpy.execute_flops(2e8)
    w.Sendrecv(out, dest=(w.rank + 1) % w.size, recvbuf=inn, source=(w.rank - 1) % w.size)
if w.rank == 0:
    print(f"stencil: {iters} iterations done at {MPI.Wtime():.6f} s")
