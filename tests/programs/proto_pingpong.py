"""One 4-byte message 0 -> 1 (buffer API); rank 1 prints the arrival time."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
buf = np.zeros(1, dtype=np.intc)
if comm.rank == 0:
    comm.Send([buf, MPI.INT], dest=1, tag=3)
elif comm.rank == 1:
    comm.Recv([buf, MPI.INT], source=0, tag=3)
    print(f"arrived {MPI.Wtime():.12f}")
