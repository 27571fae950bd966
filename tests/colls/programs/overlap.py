"""Non-blocking collectives overlap with computation: ``overlap.py <mode> <seconds> <doubles>``.

mode ``comm``: one Iallreduce + Wait; ``compute``: smpy.execute only; ``overlap``: Iallreduce,
smpy.execute, Wait; ``serial``: Allreduce then smpy.execute. Rank 0 prints the elapsed time.
"""
import sys

import numpy as np
from mpi4py import MPI

import smpy

comm = MPI.COMM_WORLD
mode, seconds, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
send = np.full(n, float(comm.rank + 1))
recv = np.zeros(n)
comm.Barrier()
t0 = MPI.Wtime()
if mode == "comm":
    comm.Iallreduce(send, recv).Wait()
elif mode == "compute":
    smpy.execute(seconds)
elif mode == "overlap":
    req = comm.Iallreduce(send, recv)
    smpy.execute(seconds)
    req.Wait()
elif mode == "serial":
    comm.Allreduce(send, recv)
    smpy.execute(seconds)
dt = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
if mode != "compute":
    assert recv[0] == comm.size * (comm.size + 1) / 2, recv[0]
if comm.rank == 0:
    print(f"elapsed {dt:.9e}")
