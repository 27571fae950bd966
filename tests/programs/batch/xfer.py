"""A batch job of two ranks: rank 0 sends argv[1] bytes to rank 1 (one message)."""

import sys

import numpy as np
from mpi4py import MPI

w = MPI.COMM_WORLD
buf = np.zeros(int(sys.argv[1]), dtype=np.uint8)
if w.Get_rank() == 0:
    w.Send(buf, dest=1)
else:
    w.Recv(buf, source=0)
    print(f"received {buf.size} bytes at {MPI.Wtime():.9f}", flush=True)
