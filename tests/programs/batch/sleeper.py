"""A batch job that computes for argv[1] simulated seconds (smpy.sleep, no communication)."""

import sys

from mpi4py import MPI

import smpy

smpy.sleep(float(sys.argv[1]))
if MPI.COMM_WORLD.Get_rank() == 0:
    print(f"{MPI.COMM_WORLD.Get_size()} ranks slept {sys.argv[1]} s", flush=True)
