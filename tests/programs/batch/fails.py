"""A batch job whose rank 1 raises after 1 simulated second (tests/test_batch.py)."""

from mpi4py import MPI

import smpy

smpy.sleep(1.0)
if MPI.COMM_WORLD.Get_rank() == 1:
    raise RuntimeError("boom")
