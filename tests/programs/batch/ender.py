"""A batch job that ends as argv[1] says after argv[2] simulated seconds (rank 1 only for a
failure; tests/test_batch_ends.py): ``ok``, ``raise``, ``abort`` (MPI_Abort 7), ``exit``
(sys.exit(3)), ``oom`` (sets 2 GiB as its memory), ``deadlock`` (both ranks receive first),
``compute`` (every rank computes)."""

import sys

from mpi4py import MPI

import smpy

how, after = sys.argv[1], float(sys.argv[2])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if how == "compute":
    smpy.execute(after)
else:
    smpy.sleep(after)
if how == "deadlock":
    comm.recv(source=(rank + 1) % comm.Get_size())
if rank == 1:
    if how == "raise":
        raise ValueError("bad input")
    if how == "abort":
        comm.Abort(7)
    if how == "exit":
        sys.exit(3)
    if how == "oom":
        smpy.set_memory(2 * 2**30)
comm.Barrier()
