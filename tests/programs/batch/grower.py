"""A batch job that grows: argv[2] s after the job's start, its rank 0 spawns argv[1]
children, which end argv[3] s after the job's start (giving their nodes back); the parent
ends argv[4] s after it (tests/test_batch_grow.py). A failed spawn prints its MPI error
class."""

import sys

from mpi4py import MPI

import smpy

parent = MPI.Comm.Get_parent()
if parent == MPI.COMM_NULL:
    t0 = MPI.Wtime()
    n, at, back, end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    smpy.sleep(t0 + at - MPI.Wtime())
    if MPI.COMM_WORLD.Get_rank() == 0 and n:
        try:
            MPI.COMM_SELF.Spawn(sys.executable, [__file__, "child", repr(t0 + back)], maxprocs=n)
        except MPI.Exception as exc:
            print(f"spawn failed: {exc.Get_error_class() == MPI.ERR_SPAWN and 'MPI_ERR_SPAWN'}", flush=True)
    smpy.sleep(max(0.0, t0 + end - MPI.Wtime()))
else:
    smpy.sleep(float(sys.argv[2]) - MPI.Wtime())
    print(f"child {MPI.COMM_WORLD.Get_rank()} on {MPI.Get_processor_name()}", flush=True)
