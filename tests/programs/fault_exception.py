"""Rank 2 raises; the others wait in a collective, then (if the run were not stopped) print."""
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()


def compute(x):
    return 1 / x


if rank == 2:
    time.sleep(0.25)
    compute(0)  # ZeroDivisionError
comm.Barrier()
time.sleep(100.0)
print(f"rank {rank} went on")
