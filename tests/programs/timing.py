"""Simulated time: ``timing.py sleep|execute|flops F|wtime_sleep``."""
import sys
import time

from mpi4py import MPI

import smpy

case = sys.argv[1]
if case == "sleep":
    time.sleep(0.5)
elif case == "wtime_sleep":
    t0 = MPI.Wtime()
    time.sleep(0.5)
    t1 = MPI.Wtime()
    print(f"{MPI.COMM_WORLD.Get_rank()} {t1 - t0!r}")
elif case == "execute":
    smpy.execute(1.0)
elif case == "flops":
    smpy.execute_flops(float(sys.argv[2]))
    print(f"{MPI.COMM_WORLD.Get_rank()} {smpy.host_name()} {smpy.now()!r}")
