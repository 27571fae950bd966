"""A rank's program ends early (tests/test_rank_end.py); the same file runs under mpiexec.

raise: rank 1 raises ValueError at once, the others sleep 0.5 s and print (status 1);
needed: rank 1 raises, the others then need it in a barrier (mpiexec hangs);
kbd: rank 1 raises KeyboardInterrupt, rank 2 exits 4 (mpiexec: 2, the signal);
mixed: rank 1 SystemExit(0), rank 2 sys.exit(4), rank 0 raises after 0.5 s (4 | 1 = 5);
hook: a sys.excepthook that prints then calls MPI_Abort(7) (the run ends at rank 1's error);
exit: as raise, with sys.exit(1) instead of the exception.
Every rank prints "atexit R" from an atexit handler."""
import atexit
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
case = sys.argv[1]
atexit.register(lambda: print(f"atexit {rank}", flush=True))
if case == "hook":
    def hook(kind, value, tb):
        sys.__excepthook__(kind, value, tb)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(7)

    sys.excepthook = hook
if rank == 1:
    if case == "kbd":
        raise KeyboardInterrupt
    if case == "mixed":
        raise SystemExit(0)
    if case == "exit":
        sys.exit(1)
    raise ValueError("boom")
if rank == 2 and case in ("kbd", "mixed"):
    sys.exit(4)
time.sleep(2.0 if case == "hook" else 0.5)
if case == "needed":
    print(f"rank {rank} before barrier", flush=True)
    comm.Barrier()
print(f"rank {rank} still here", flush=True)
if case == "mixed" and rank == 0:
    raise RuntimeError("late")
