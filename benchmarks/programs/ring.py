"""Token ring for the speed benchmark: the token goes ``laps`` times around the ring.

    python ring.py [laps] [obj|buf]

``obj``: lowercase ``send``/``recv`` of a Python int (pickled);
``buf``: uppercase ``Send``/``Recv`` of a 1-element numpy int64 buffer.
Runs unchanged under real mpiexec. Rank 0 checks the token.
"""
import sys

from mpi4py import MPI

laps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
mode = sys.argv[2] if len(sys.argv) > 2 else "obj"

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
expected = laps * size * (size - 1) // 2

if mode == "obj":
    token = 0
    for _ in range(laps):
        if rank == 0:
            comm.send(token, dest=right, tag=7)
            token = comm.recv(source=left, tag=7)
        else:
            token = comm.recv(source=left, tag=7)
            comm.send(token + rank, dest=right, tag=7)
    result = token
elif mode == "buf":
    import numpy as np

    buf = np.zeros(1, dtype=np.int64)
    for _ in range(laps):
        if rank == 0:
            comm.Send(buf, dest=right, tag=7)
            comm.Recv(buf, source=left, tag=7)
        else:
            comm.Recv(buf, source=left, tag=7)
            buf[0] += rank
            comm.Send(buf, dest=right, tag=7)
    result = int(buf[0])
else:
    raise SystemExit(f"unknown mode {mode!r}")

if rank == 0 and result != expected:
    raise SystemExit(f"ring: token {result} != expected {expected}")
