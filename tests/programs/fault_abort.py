"""Rank 1 calls Abort(3) while the others wait."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
if comm.Get_rank() == 1:
    comm.Abort(3)
comm.Barrier()
print("not reached")
