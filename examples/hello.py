"""Hello world: every rank greets; rank 0 prints the greetings in rank order."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
greeting = f"Hello from rank {rank} of {size}"
greetings = comm.gather(greeting, root=0)
if rank == 0:
    print("\n".join(greetings))
    print(f"# ranks run on: {', '.join(sorted(set(comm.gather(MPI.Get_processor_name(), root=0) or [])))}")
else:
    comm.gather(MPI.Get_processor_name(), root=0)
