"""A 1-second (simulated) bulk-synchronous program for the reliability sweep: 10 iterations
of 0.1 s of computation (smpy.execute: 1e8 flops at 1 Gflop/s) and an allreduce."""

from mpi4py import MPI

import smpy

comm = MPI.COMM_WORLD
x = 0
for _ in range(10):
    smpy.execute_flops(1e8)
    x = comm.allreduce(x + 1)
if comm.rank == 0:
    print("result", x)
