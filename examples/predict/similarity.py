"""Master-worker (MERPSYS paradigm 1): similarity of points.

Rank 0 hands out chunks of point indices on demand; a worker computes, for each point of its
chunk, the sum over all points of exp(-|p - q|^2) and returns the chunk's sums. With one rank
the master computes everything itself. Usage: similarity.py NPOINTS [DIM] [CHUNK]
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
dim = int(sys.argv[2]) if len(sys.argv) > 2 else 8
chunk = int(sys.argv[3]) if len(sys.argv) > 3 else 50
TAG_WORK, TAG_STOP, TAG_RESULT = 1, 2, 3

pts = np.random.default_rng(42).random((n, dim))
sq = np.einsum("ij,ij->i", pts, pts)
nchunks = (n + chunk - 1) // chunk


def similarity(c):
    lo, hi = c * chunk, min(n, (c + 1) * chunk)
    d2 = sq[lo:hi, None] + sq[None, :] - 2.0 * (pts[lo:hi] @ pts.T)
    return np.exp(-np.maximum(d2, 0.0)).sum(axis=1)


comm.Barrier()
t0 = MPI.Wtime()
c0 = time.thread_time()
if rank == 0:
    sums = np.zeros(n)
    if size == 1:
        for c in range(nchunks):
            sums[c * chunk:(c + 1) * chunk] = similarity(c)
    else:
        nxt, active = 0, 0
        for w in range(1, size):
            if nxt < nchunks:
                comm.send(nxt, dest=w, tag=TAG_WORK)
                nxt += 1
                active += 1
            else:
                comm.send(None, dest=w, tag=TAG_STOP)
        status = MPI.Status()
        while active:
            c, res = comm.recv(source=MPI.ANY_SOURCE, tag=TAG_RESULT, status=status)
            sums[c * chunk:(c + 1) * chunk] = res
            w = status.Get_source()
            if nxt < nchunks:
                comm.send(nxt, dest=w, tag=TAG_WORK)
                nxt += 1
            else:
                comm.send(None, dest=w, tag=TAG_STOP)
                active -= 1
else:
    status = MPI.Status()
    while True:
        c = comm.recv(source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == TAG_STOP:
            break
        comm.send((c, similarity(c)), dest=0, tag=TAG_RESULT)
t1 = MPI.Wtime()
# CPU time of the busiest rank (MPICH polls while waiting: ~ the elapsed time on idle cores)
cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)
if rank == 0:
    print(f"similarity: n={n} dim={dim} chunk={chunk} ranks={size}")
    print(f"mean similarity {sums.mean():.10f}, most similar point {int(sums.argmax())}")
    print(f"# elapsed {t1 - t0:.6f} s")
    print(f"# cpu {cpu:.6f} s")
