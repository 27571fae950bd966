"""Matched probes and communicator groups (prints 'ok <name>' or 'FAIL ...')."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def check(name, cond):
    print(f"ok {name}" if cond else f"FAIL {name}")


g = comm.Get_group()
check("group_size", g.Get_size() == size and g.Get_rank() == rank)
if rank == 0:
    comm.send({"a": 1}, dest=1, tag=5)
    comm.Send([np.arange(4, dtype="d"), MPI.DOUBLE], dest=1, tag=6)
elif rank == 1:
    st = MPI.Status()
    m = comm.mprobe(source=0, tag=5, status=st)
    check("mprobe_status", st.Get_source() == 0 and st.Get_tag() == 5)
    check("mprobe_recv", m.recv() == {"a": 1} and m == MPI.MESSAGE_NULL)
    m2 = None
    while m2 is None:
        m2 = comm.Improbe(source=0, tag=6, status=st)
    buf = np.zeros(4)
    check("improbe_count", st.Get_count(MPI.DOUBLE) == 4)
    m2.Recv([buf, MPI.DOUBLE])
    check("improbe_Recv", list(buf) == [0.0, 1.0, 2.0, 3.0])
    check("improbe_nothing", comm.Improbe(source=0, tag=7) is None)
    check("mprobe_proc_null", comm.Mprobe(source=MPI.PROC_NULL) == MPI.MESSAGE_NO_PROC)
