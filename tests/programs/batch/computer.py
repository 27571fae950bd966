"""A batch job whose rank r computes (r + 1) * argv[1] simulated seconds (smpy.execute),
then waits in a barrier for the others unless argv[2] is ``alone`` (tests/test_batch.py:
the utilisation)."""

import sys

from mpi4py import MPI

import smpy

comm = MPI.COMM_WORLD
smpy.execute((comm.Get_rank() + 1) * float(sys.argv[1]))
if sys.argv[2:] != ["alone"]:
    comm.Barrier()
