"""sys.exit(n != 0) in some ranks: the rank ends, the others run on (as under mpiexec).

alone: rank 1 exits 3 at once, the others sleep 0.5 s and print; two: ranks 1 and 2 exit 3
and 5 (mpiexec's status: 7); message: rank 1 exits with a message (status 1); needed:
rank 1 exits 3 and the others then need it in a barrier (a deadlock; mpiexec hangs)."""
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
case = sys.argv[1]
if rank == 1:
    sys.exit("bad input" if case == "message" else 3)
if rank == 2 and case == "two":
    sys.exit(5)
time.sleep(0.5)
if case == "needed":
    comm.Barrier()
print(f"rank {rank} done")
