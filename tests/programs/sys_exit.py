"""sys.exit(0) in one rank is a normal end for that rank."""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
total = comm.allreduce(rank)
if rank == 1:
    print("rank 1 exits")
    sys.exit(0)
print(f"rank {rank} total {total}")
