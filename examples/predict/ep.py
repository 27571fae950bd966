"""NAS-EP-like embarrassingly parallel kernel.

2^M pairs of uniform deviates, in batches of 2^16 (each batch seeded by its index, so the
result does not depend on the number of ranks); accepted pairs (Marsaglia polar method) give
Gaussian deviates, counted per square annulus; sums and counts are reduced at the end.
Batches are cyclically distributed. Usage: ep.py M [--sample]
(--sample: under smpyrun, time a few batches and inject the rest; counts become garbage)
"""
import sys
import time

import numpy as np
from _hints import sample
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
args = [a for a in sys.argv[1:] if not a.startswith("--")]
m = int(args[0]) if args else 20
SAMPLE = "--sample" in sys.argv
BATCH = 1 << 16
nbatch = max(1, (1 << m) // BATCH)

comm.Barrier()
t0 = MPI.Wtime()
c0 = time.thread_time()
acc = np.zeros(12)  # sx, sy, q[0..9]
mine = range(rank, nbatch, size)
# warmup=1: the process's first batch pays first-call costs (~10x a batch), not a sample
for b in sample(mine, iters=20, threshold=0.01, scope="global", tag=str(BATCH), warmup=1,
                enabled=SAMPLE):
    xy = 2.0 * np.random.default_rng(1000 + b).random((2, BATCH)) - 1.0
    t = xy[0] ** 2 + xy[1] ** 2
    ok = (t <= 1.0) & (t > 0.0)
    x, y, t = xy[0][ok], xy[1][ok], t[ok]
    f = np.sqrt(-2.0 * np.log(t) / t)
    gx, gy = x * f, y * f
    acc[0] += gx.sum()
    acc[1] += gy.sum()
    lvl = np.minimum(np.maximum(np.abs(gx), np.abs(gy)).astype(np.int64), 9)
    acc[2:] += np.bincount(lvl, minlength=10)
tot = np.zeros(12)
comm.Reduce(acc, tot, op=MPI.SUM, root=0)
t1 = MPI.Wtime()
# CPU time of the busiest rank (MPICH polls while waiting: ~ the elapsed time on idle cores)
cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)
if rank == 0:
    print(f"ep: M={m} batches={nbatch} ranks={size}")
    print(f"pairs {int(tot[2:].sum())}, sx {tot[0]:.6f}, sy {tot[1]:.6f}")
    print("counts " + " ".join(str(int(c)) for c in tot[2:]))
    print(f"# elapsed {t1 - t0:.6f} s")
    print(f"# cpu {cpu:.6f} s")
