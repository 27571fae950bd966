"""Application B of the interference example: rank 0 streams COUNT messages of MB megabytes
to rank 1, back to back (one flow across the backbone at any time)."""

import sys

import numpy as np
from mpi4py import MPI

count, mb = int(sys.argv[1]), int(sys.argv[2])
w = MPI.COMM_WORLD
buf = np.zeros(mb * 1_000_000, dtype=np.uint8)
for _ in range(count):
    if w.rank == 0:
        w.Send(buf, dest=1)
    else:
        w.Recv(buf, source=0)
if w.rank == 1:
    print(f"mover: {count} x {mb} MB received at {MPI.Wtime():.6f} s")
