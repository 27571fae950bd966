"""An iterative program that checkpoints every K iterations and resumes from its last
checkpoint when it is run again (with smpyrun --restarts, after a failure).

    mpiexec -n 4 python examples/faults/checkpoint.py ckpt.txt 10 2
    smpyrun -np 4 --fail node-1@0.55s --restarts 1 --restart-delay 1s \\
        examples/faults/checkpoint.py ckpt.txt 10 2

Each iteration is 0.1 s of work (simulated under smpy) and an allreduce. Rank 0 writes the
number of completed iterations to the checkpoint file; the file is removed at the end.
"""

import os
import sys
import time

from mpi4py import MPI

try:
    import smpy
    SIMULATED = smpy.is_simulated()
except ImportError:
    SIMULATED = False

path, iters, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
comm = MPI.COMM_WORLD
start = 0
if comm.rank == 0 and os.path.exists(path):
    with open(path) as f:
        start = int(f.read())
start = comm.bcast(start, root=0)
for it in range(start, iters):
    if SIMULATED:
        smpy.sleep(0.1)
    else:
        time.sleep(0.1)
    comm.allreduce(it)
    if (it + 1) % every == 0 and comm.rank == 0:
        with open(path, "w") as f:
            f.write(str(it + 1))
if comm.rank == 0:
    print(f"done: iterations {start}..{iters - 1} in this run, ended at {MPI.Wtime():.3f} s")
    os.remove(path)
