"""Pair-wise ping-pong for the speed benchmark: ranks 2k and 2k+1 exchange ``reps``
round trips (an odd last rank stays idle).

    python pingpong.py [reps] [obj|buf]

``obj``: lowercase ``send``/``recv`` of a Python int; ``buf``: uppercase ``Send``/``Recv``
of a 1-element numpy int64 buffer. Runs unchanged under real mpiexec.
"""
import sys

from mpi4py import MPI

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
mode = sys.argv[2] if len(sys.argv) > 2 else "obj"

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
peer = rank ^ 1
if peer < size:
    if mode == "obj":
        x = 0
        for _ in range(reps):
            if rank & 1 == 0:
                comm.send(x, dest=peer, tag=1)
                x = comm.recv(source=peer, tag=2)
            else:
                x = comm.recv(source=peer, tag=1) + 1
                comm.send(x, dest=peer, tag=2)
    elif mode == "buf":
        import numpy as np

        buf = np.zeros(1, dtype=np.int64)
        for _ in range(reps):
            if rank & 1 == 0:
                comm.Send(buf, dest=peer, tag=1)
                comm.Recv(buf, source=peer, tag=2)
            else:
                comm.Recv(buf, source=peer, tag=1)
                buf[0] += 1
                comm.Send(buf, dest=peer, tag=2)
        x = int(buf[0])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    if x != reps:
        raise SystemExit(f"pingpong: rank {rank} ended with {x} != {reps}")
