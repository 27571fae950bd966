"""An mpipool application (MPIExecutor, the README's idiom), run unmodified under smpyrun
and mpiexec: the master submits and maps, the workers serve inside ``MPIExecutor()``.

mpipool's master waits for each job's result on a Python thread that calls MPI
(send / irecv / test), i.e. MPI from program threads (MPI_THREAD_MULTIPLE).
"""
from mpi4py.MPI import COMM_WORLD
from mpipool import MPIExecutor


def square(x):
    return x * x


with MPIExecutor() as pool:
    pool.workers_exit()
    print("submit", pool.submit(square, 12).result())
    print("map", list(pool.map(square, range(20))))

COMM_WORLD.Barrier()
print("continue", COMM_WORLD.Get_rank() >= 0)
