"""An fsync'ed single-node checkpoint: every rank saves its array with np.save and fsyncs it,
``reps`` times; rank 0 prints the median seconds of one checkpoint (barrier to barrier) and of
the slowest rank's ``fsync`` (the write-back: an I/O wait, which other processes' CPU load
hardly stretches, unlike the ``np.save`` copy into the page cache).
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
times, syncs = [], []
for _ in range(reps):
    comm.Barrier()
    t0 = MPI.Wtime()
    with open(path, "wb") as f:
        np.save(f, a)
        f.flush()
        t1 = MPI.Wtime()
        os.fsync(f.fileno())
        dt = MPI.Wtime() - t1
    comm.Barrier()
    times.append(MPI.Wtime() - t0)
    syncs.append(comm.allreduce(dt, op=MPI.MAX))  # the slowest rank's write-back
os.remove(path)
if comm.rank == 0:
    print(f"checkpoint {np.median(times):.6f}\nfsync {np.median(syncs):.6f}", flush=True)
