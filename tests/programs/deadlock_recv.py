"""Both ranks receive first: a deadlock."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
other = 1 - rank
buf = np.zeros(4)
comm.Recv(buf, source=other, tag=0)
comm.Send(buf, dest=other, tag=0)
