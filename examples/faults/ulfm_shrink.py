"""A fault-tolerant iterative solver (ULFM): when a process fails, the survivors revoke the
communicator, shrink it and continue from the last iteration they all completed.

    mpiexec -n 4 python examples/faults/ulfm_shrink.py           # no failure: 4 ranks to the end
    smpyrun -np 4 --disable-auto-cleanup --fail node-2@0.35s examples/faults/ulfm_shrink.py

Each iteration computes for 0.1 s (simulated under smpy) then sums the ranks' contributions with
an allreduce. Under smpy, node-2 fails at 0.35 s; its rank dies, the allreduce of the others
raises MPI.ERR_PROC_FAILED, they shrink to 3 ranks and finish.
"""

import time

from mpi4py import MPI

try:
    import smpy
    SIMULATED = smpy.is_simulated()
except ImportError:
    SIMULATED = False


def work() -> None:
    """0.1 s of work (simulated time under smpy)."""
    if SIMULATED:
        smpy.sleep(0.1)
    else:
        time.sleep(0.1)


ITERS = 8
comm = MPI.COMM_WORLD.Dup()
comm.Set_errhandler(MPI.ERRORS_RETURN)
it = 0
total = 0
shrinks = 0
while it < ITERS:
    try:
        work()
        total = comm.allreduce(it + 1)
        it += 1
    except MPI.Exception as exc:
        if exc.Get_error_class() not in (MPI.ERR_PROC_FAILED, MPI.ERR_REVOKED):
            raise
        try:
            comm.Revoke()  # wake the survivors blocked elsewhere on comm
        except NotImplementedError:
            pass
        comm = comm.Shrink()
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        shrinks += 1
        it = comm.allreduce(it, op=MPI.MIN)  # restart from the last iteration all completed
if comm.Get_rank() == 0:
    print(f"finished {ITERS} iterations on {comm.Get_size()} ranks after {shrinks} shrink(s); "
          f"last sum {total}")
