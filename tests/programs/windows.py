"""osu_bw / osu_bibw-like windows of nonblocking messages between rank pairs, with simulated
computation between the posts (deterministic under smpi/simulate-computation=no): many
concurrent flows of a few routes, starting and ending at distinct dates. Prints each
request's completion date (repr) on rank 0, so that runs can be compared bit for bit."""

import sys

from mpi4py import MPI

import smpy

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
window = int(sys.argv[1]) if len(sys.argv) > 1 else 32
peer = rank ^ 1
bidir = (rank // 2) % 2 == 0  # pairs 0-1, 4-5: both ways; pairs 2-3, 6-7: one way
buf = bytearray(1 << 20)
rbuf = bytearray(1 << 20)
lines = []
for it, nbytes in enumerate((1 << 10, 1 << 16, 300000, 1 << 20)):
    comm.Barrier()
    reqs = []
    for j in range(window):
        if bidir or rank % 2 == 1:
            reqs.append(comm.Irecv([rbuf, nbytes, MPI.BYTE], peer, 7))
        smpy.execute(1e-6 * (1 + (j * 7 + rank * 3 + it) % 5))
    for j in range(window):
        if bidir or rank % 2 == 0:
            reqs.append(comm.Isend([buf, nbytes - j * 11, MPI.BYTE], peer, 7))
        smpy.execute(2e-6 * (1 + (j * 5 + rank + it) % 3))
    done = []
    for r in reqs:
        r.Wait()
        done.append(repr(MPI.Wtime()))
    lines.append(f"{rank} {nbytes} " + " ".join(done))
out = comm.gather(lines, root=0)
if rank == 0:
    for rows in out:
        for row in rows:
            print(row)
