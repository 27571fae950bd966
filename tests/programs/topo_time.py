"""Neighbourhood collectives cost simulated time with the message size (smpy only)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
cart = comm.Create_cart([comm.size], [True])
for n in (1, 1 << 20):
    send = np.ones(2 * n)
    recv = np.empty(2 * n)
    cart.Barrier()
    t = MPI.Wtime()
    cart.Neighbor_alltoall(send, recv)
    a2a = MPI.Wtime() - t
    cart.Barrier()
    t = MPI.Wtime()
    req = cart.Ineighbor_allgather(send[:n], recv)
    posted = MPI.Wtime() - t
    req.Wait()
    ag = MPI.Wtime() - t
    got = cart.neighbor_allgather(comm.rank)
    print(f"{comm.rank} {n} {a2a!r} {posted!r} {ag!r} {got}")
