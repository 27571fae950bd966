"""Hello world: every rank reports itself; rank 0 gathers the host names."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
print(f"Hello from rank {rank} of {size}")
names = comm.gather(MPI.Get_processor_name(), root=0)
if rank == 0:
    print(f"{size} ranks on {len(set(names))} distinct host name(s)")
