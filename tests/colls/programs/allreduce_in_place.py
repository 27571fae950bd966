"""Blocking Allreduce that works in the receive buffer: results, send buffer untouched,
IN_PLACE, integer ops, for vectors around the number of ranks."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
for n in (1, size - 1, size, 3 * size + 1, 1000, 40000):
    if n < 1:
        continue
    send = rank * 1000.0 + np.arange(n)
    keep = send.copy()
    recv = np.full(n, -1.0)
    comm.Allreduce(send, recv, op=MPI.SUM)
    want = size * (size - 1) / 2 * 1000.0 + size * np.arange(n)
    print("ok" if np.array_equal(recv, want) else "BAD", "plain", n)
    print("ok" if np.array_equal(send, keep) else "BAD", "send buffer untouched", n)
    buf = send.copy()
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    print("ok" if np.array_equal(buf, want) else "BAD", "in place", n)
    ints = np.arange(n, dtype=np.int64) + rank
    iout = np.zeros(n, dtype=np.int64)
    comm.Allreduce([ints, MPI.INT64_T], [iout, MPI.INT64_T], op=MPI.BXOR)
    wx = np.zeros(n, dtype=np.int64)
    for r in range(size):
        wx ^= np.arange(n, dtype=np.int64) + r
    print("ok" if np.array_equal(iout, wx) else "BAD", "bxor", n)
