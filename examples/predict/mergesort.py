"""Divide-and-conquer merge sort (MERPSYS paradigm 3).

Rank 0 holds the array; at each level of a binary tree a rank keeps the lower half and sends
the upper half to its partner; leaves sort their part, then partners merge back up the tree
(a vectorised two-way merge). Usage: mergesort.py N
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000


def merge(a, b):
    out = np.empty(a.size + b.size, dtype=a.dtype)
    pos = np.searchsorted(a, b, side="right") + np.arange(b.size)
    mask = np.ones(out.size, dtype=bool)
    mask[pos] = False
    out[pos] = b
    out[mask] = a
    return out


def leaf_sort(a, cut=1 << 15):
    """Sequential merge sort down to blocks of ``cut`` items sorted by numpy."""
    if a.size <= cut:
        return np.sort(a, kind="stable")
    mid = a.size // 2
    return merge(leaf_sort(a[:mid], cut), leaf_sort(a[mid:], cut))


data = np.random.default_rng(7).random(n) if rank == 0 else None
comm.Barrier()
t0 = MPI.Wtime()
c0 = time.thread_time()
# scatter down the tree: at level `step`, ranks that are multiples of 2*step send to rank+step
step = 1
while step < size:
    step *= 2
part = data
while step > 1:
    half = step // 2
    if rank % step == 0 and rank + half < size:
        mid = part.size // 2
        comm.Send([np.array([part.size - mid]), MPI.INT64_T], dest=rank + half, tag=0)
        comm.Send(part[mid:], dest=rank + half, tag=1)
        part = part[:mid]
    elif rank % step == half:
        cnt = np.empty(1, dtype=np.int64)
        comm.Recv([cnt, MPI.INT64_T], source=rank - half, tag=0)
        part = np.empty(int(cnt[0]))
        comm.Recv(part, source=rank - half, tag=1)
    step = half
part = leaf_sort(part)
# merge up the tree
step = 1
while step < size:
    if rank % (2 * step) == step:
        comm.Send([np.array([part.size]), MPI.INT64_T], dest=rank - step, tag=2)
        comm.Send(part, dest=rank - step, tag=3)
        break
    if rank % (2 * step) == 0 and rank + step < size:
        cnt = np.empty(1, dtype=np.int64)
        comm.Recv([cnt, MPI.INT64_T], source=rank + step, tag=2)
        other = np.empty(int(cnt[0]))
        comm.Recv(other, source=rank + step, tag=3)
        part = merge(part, other)
    step *= 2
t1 = MPI.Wtime()
# CPU time of the busiest rank (MPICH polls while waiting: ~ the elapsed time on idle cores)
cpu = comm.reduce(time.thread_time() - c0, op=MPI.MAX, root=0)
if rank == 0:
    ok = bool(np.all(part[1:] >= part[:-1])) and part.size == n
    print(f"mergesort: n={n} ranks={size}")
    print(f"sorted {ok}, checksum {part[::max(1, n // 1000)].sum():.10f}, median {part[n // 2]:.10f}")
    print(f"# elapsed {t1 - t0:.6f} s")
    print(f"# cpu {cpu:.6f} s")
