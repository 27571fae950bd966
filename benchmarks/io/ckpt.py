"""An fsync'ed single-node checkpoint: every rank saves its array with np.save and fsyncs it,
``reps`` times; rank 0 prints the median seconds of one checkpoint (barrier to barrier).
Runs unchanged under mpiexec and smpyrun (checkpoint_vs_real.py runs both).

    mpiexec -n 2 python ckpt.py DIR MIB REPS
"""

import os
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
d, mib, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a = np.random.default_rng(comm.rank).random(mib * (1 << 20) // 8)
path = os.path.join(d, f"ckpt.{comm.rank}.npy")
times = []
for _ in range(reps):
    comm.Barrier()
    t0 = MPI.Wtime()
    with open(path, "wb") as f:
        np.save(f, a)
        f.flush()
        os.fsync(f.fileno())
    comm.Barrier()
    times.append(MPI.Wtime() - t0)
os.remove(path)
if comm.rank == 0:
    print(f"checkpoint {np.median(times):.6f}", flush=True)
