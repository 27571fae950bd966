"""mpi4py.futures: MPIPoolExecutor (spawned workers, or the world's under
``python -m mpi4py.futures``), MPICommExecutor and mpi4py.util.pool; prints the results."""

import sys

from mpi4py import MPI
from mpi4py.futures import MPICommExecutor, MPIPoolExecutor
from mpi4py.util.pool import Pool


def work(x):
    return x * x + MPI.COMM_WORLD.Get_size() * 1000


def fail(x):
    raise ValueError(f"bad {x}")


def out(*args):
    sys.stdout.write(" ".join(map(str, args)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    with MPIPoolExecutor(max_workers=2) as ex:
        out("map", list(ex.map(work, range(8))))
        out("map chunks", list(ex.map(work, range(5), chunksize=2)))
        out("submit", ex.submit(pow, 3, 4).result())
        try:
            ex.submit(fail, 7).result()
        except ValueError as e:
            out("error", type(e).__name__, e)
        out("starmap", list(ex.starmap(pow, [(2, 5), (3, 3)])))
    with MPICommExecutor(MPI.COMM_WORLD, root=0) as ex:
        if ex is not None:
            out("commexec", sorted(ex.map(work, range(6))))
    if MPI.COMM_WORLD.Get_size() == 1:
        with Pool(2) as p:
            out("pool", p.map(abs, [-1, -2, 3]), p.apply(pow, (2, 3)))
