"""Per-rank interpreter state: ``isolation.py <case> [args...]`` (runs under mpiexec too)."""
import importlib
import random
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
case = sys.argv[1]
COUNTER = 0


class Point:
    """A class of the program's ``__main__``: pickled by reference to ``__main__.Point``."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm2(self):
        return self.x * self.x + self.y * self.y


if case == "globals":
    if rank == 0:
        for _ in range(5):
            COUNTER += 1
            MPI.Wtime()  # an MPI call between mutations: other ranks may run
    comm.Barrier()  # rank 0 has mutated its COUNTER before anyone goes on
    if rank == 1:
        COUNTER += 100
    comm.Barrier()
    import __main__
    print(f"rank {rank} COUNTER {COUNTER} main {__main__.COUNTER} case {__main__.case}")
elif case == "random":
    if len(sys.argv) > 2 and rank == 0:
        random.seed(int(sys.argv[2]))
        np.random.seed(int(sys.argv[2]))
    comm.Barrier()
    a = [random.random() for _ in range(3)] + [random.randint(0, 10**9)]
    comm.Barrier()
    b = np.random.rand(3).tolist() + [int(np.random.randint(0, 10**9))]
    print(f"rank {rank} random {a!r} numpy {b!r}")
elif case == "argv":
    print(f"rank {rank} argv {sys.argv[1:]!r}")
elif case == "pickle_class":
    if size >= 2:
        if rank == 0:
            comm.send(Point(3, 4), dest=1, tag=1)
            comm.send([Point(1, 1), {"p": Point(0, 2)}], dest=1, tag=2)
        elif rank == 1:
            p = comm.recv(source=0, tag=1)
            q = comm.recv(source=0, tag=2)
            same = type(p) is Point and type(q[0]) is Point and type(q[1]["p"]) is Point
            print(f"rank 1 got {type(p).__module__}.{type(p).__qualname__} "
                  f"own_class {same} norm2 {p.norm2()} {q[0].norm2()} {q[1]['p'].norm2()}")
elif case == "imports":
    import mpi4py.MPI as B  # noqa: E402
    from mpi4py import MPI as A
    C = importlib.import_module("mpi4py.MPI")
    import mpi4py  # noqa: E402
    print(f"rank {rank} same {A is B is C is MPI is mpi4py.MPI is sys.modules['mpi4py.MPI']} "
          f"vendor {MPI.get_vendor()[0]} module {A.__name__}")
