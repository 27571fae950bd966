"""A 256 x 256 matrix product in a loop, run in full or sampled (benchmarks/sampling/bias.py).

    matmul_loop.py full|default|W ITEMS   (W: smpy.sample's warmup)
"""
import sys

import numpy as np
from mpi4py import MPI

import smpy

mode, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(MPI.COMM_WORLD.rank)
A = rng.random((256, 256))
B = rng.random((256, 256))
MPI.COMM_WORLD.Barrier()
t0 = MPI.Wtime()
if mode == "full":
    for _ in range(n):
        C = A @ B
else:
    kw = {} if mode == "default" else {"warmup": int(mode)}
    for _ in smpy.sample(range(n), iters=10, threshold=0.01, **kw):
        C = A @ B
MPI.COMM_WORLD.Barrier()
if MPI.COMM_WORLD.rank == 0:
    print(f"elapsed {MPI.Wtime() - t0:.6f}")
