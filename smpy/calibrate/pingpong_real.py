"""Ping-pong run under *real* mpi4py (launched by ``smpy calibrate network``).

Sizes are drawn in random order (so that drifts of the machine do not line up with sizes),
each repeated; rank 0 prints one JSON object per measurement: {"size": s, "t": one-way s}.
A measurement is the fastest of ``inner`` consecutive round trips (argument 4, default 1): a
round trip in which either process was descheduled measures the scheduler, not MPI (on a
loaded machine one in a few is; a single round trip per measurement then fitted latencies of
1.4 ms for empty messages).
"""
import json
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
max_exp, reps, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
inner = int(sys.argv[4]) if len(sys.argv) > 4 else 1
sizes = [0] + [int(2 ** (e / 2)) for e in range(0, 2 * max_exp + 1)]
order = np.random.default_rng(seed).permutation(np.repeat(sizes, reps))
buf = np.zeros(max(sizes) + 1, dtype=np.uint8)
for _ in range(20):  # warm-up
    if rank == 0:
        comm.Send([buf, 1, MPI.BYTE], dest=1)
        comm.Recv([buf, 1, MPI.BYTE], source=1)
    elif rank == 1:
        comm.Recv([buf, 1, MPI.BYTE], source=0)
        comm.Send([buf, 1, MPI.BYTE], dest=0)
for s in order:
    s = int(s)
    comm.Barrier()
    best = float("inf")
    for _ in range(inner):
        if rank == 0:
            t0 = MPI.Wtime()
            comm.Send([buf, s, MPI.BYTE], dest=1)
            comm.Recv([buf, s, MPI.BYTE], source=1)
            best = min(best, (MPI.Wtime() - t0) / 2)
        elif rank == 1:
            comm.Recv([buf, s, MPI.BYTE], source=0)
            comm.Send([buf, s, MPI.BYTE], dest=0)
    if rank == 0:
        print(json.dumps({"size": s, "t": best}))
