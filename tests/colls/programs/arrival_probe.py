"""Arrival-pattern collectives while user messages wait at rank 0: rank 0's probes (which,
like SMPI's MPI_ANY_TAG probes, notice user messages) must neither consume nor corrupt
them, and every rank gets the right data. Prints "ok <what>" lines.

Usage: arrival_probe.py <bcast|reduce> <doubles>
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
what, n = sys.argv[1], int(sys.argv[2])

if rank:
    comm.send(("early", rank), dest=0, tag=5)  # still unreceived during the collective
for root in range(size):
    if what == "bcast":
        buf = np.arange(n, dtype="d") + root if rank == root else np.zeros(n)
        comm.Bcast(buf, root=root)
        assert np.array_equal(buf, np.arange(n, dtype="d") + root), (root, buf[:4])
    else:
        out = np.zeros(n)
        comm.Reduce(np.arange(n, dtype="d") + rank, out, op=MPI.SUM, root=root)
        if rank == root:
            assert np.array_equal(out, size * np.arange(n, dtype="d") + size * (size - 1) / 2), out[:4]
    comm.send(("late", rank, root), dest=0, tag=6)  # arrives while rank 0 may still be probing
    print(f"ok {what} root {root}")
if rank == 0:
    early = sorted(comm.recv(source=i, tag=5) for i in range(1, size))
    assert early == [("early", i) for i in range(1, size)], early
    late = sorted(comm.recv(source=i, tag=6) for i in range(size) for _ in range(size))
    assert late == sorted(("late", i, r) for i in range(size) for r in range(size)), late
    print("ok user messages intact")
