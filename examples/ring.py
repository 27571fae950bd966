"""Token ring: a token goes around the ring N times; every rank adds its rank to it.

    smpyrun -np 1024 --platform examples/platforms/cluster64.yaml examples/ring.py [laps]
"""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
laps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
right, left = (rank + 1) % size, (rank - 1) % size

t0 = MPI.Wtime()
token = 0
for _ in range(laps):
    if rank == 0:
        comm.send(token + rank, dest=right, tag=7)
        token = comm.recv(source=left, tag=7)
    else:
        token = comm.recv(source=left, tag=7)
        comm.send(token + rank, dest=right, tag=7)
t1 = MPI.Wtime()
if rank == 0:
    print(f"ring of {size} ranks, {laps} lap(s): token = {token} (expected {laps * size * (size - 1) // 2})")
    print(f"# time per hop: {(t1 - t0) / (laps * size) * 1e6:.3f} us")
