"""A batch job whose rank 0 spawns argv[1] children, which sleep argv[2] simulated seconds
and print (tests/test_batch_ends.py: spawned processes belong to their job)."""

import sys

from mpi4py import MPI

import smpy

parent = MPI.Comm.Get_parent()
if parent == MPI.COMM_NULL:
    if MPI.COMM_WORLD.Get_rank() == 0:
        MPI.COMM_SELF.Spawn(sys.executable, [__file__, "child", sys.argv[2]], maxprocs=int(sys.argv[1]))
else:
    smpy.sleep(float(sys.argv[2]))
    print(f"child {MPI.COMM_WORLD.Get_rank()} slept {sys.argv[2]} s", flush=True)
