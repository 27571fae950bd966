"""A thread started by a rank allocates from the rank's heap, as threads share their
process's allocator: prints the rank, the handler of its main thread's arrays and of the
thread's."""
import threading

import numpy as np
from mpi4py import MPI

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name

seen = {}


def work() -> None:
    seen["thread"] = get_handler_name(np.empty(1 << 18))


t = threading.Thread(target=work)
t.start()
t.join()
print(MPI.COMM_WORLD.rank, get_handler_name(np.empty(1 << 18)), seen["thread"])
