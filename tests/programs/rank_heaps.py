"""Each rank in turn allocates, writes and frees a 16 MiB array four times, counting the
page faults of its thread each time; prints the handler of its arrays and the counts."""
import resource

import numpy as np
from mpi4py import MPI

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name

comm = MPI.COMM_WORLD


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


handler = get_handler_name(np.empty(1 << 18))
counts = []
for turn in range(comm.size):
    if turn == comm.rank:
        for _ in range(4):
            f0 = faults()
            a = np.ones(1 << 21)  # 16 MiB, written
            counts.append(faults() - f0)
            del a
    comm.Barrier()
print(handler, *counts)
