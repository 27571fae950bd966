"""A schwimmbad MPIPool application (run unmodified under smpyrun and mpiexec).

The master maps tasks over the workers (map, map with a callback, batched_map; with
``--dill`` the pool serialises with dill and can ship a lambda); workers wait inside
``MPIPool()`` and exit there. Only the master prints, results in task order.
"""
import sys

from schwimmbad.mpi import MPIPool


def square(x):
    return x * x


def batch_sum(batch):
    return repr(batch)


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x


use_dill = "--dill" in sys.argv
with MPIPool(use_dill=use_dill) as pool:
    print("workers", pool.size)
    print("map", pool.map(square, range(100)))
    seen = []
    print("callback", pool.map(Scale(3), range(30), callback=seen.append), sorted(seen))
    print("batched", pool.batched_map(batch_sum, list(range(60))))
    if use_dill:
        print("lambda", pool.map(lambda x: x + 7, range(20)))
print("done")
