"""Idle ranks for the memory benchmark: every rank calls Barrier once and ends.

    python barrier.py [rss]

With ``rss``, the last rank prints ``RSS_KIB <resident set size>`` of its process just
before its Barrier: under smpy every other rank is then blocked in its Barrier, so this is
the memory of ``size`` idle ranks.
"""
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
if len(sys.argv) > 1 and sys.argv[1] == "rss" and comm.Get_rank() == comm.Get_size() - 1:
    import psutil

    print("RSS_KIB", psutil.Process().memory_info().rss // 1024)
comm.Barrier()
