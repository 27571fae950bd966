"""Rank 0 waits for a message from rank 1, which has already finished."""
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
if comm.Get_rank() == 0:
    time.sleep(0.125)
    comm.recv(source=1, tag=5)
