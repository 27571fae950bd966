"""RMA costs simulated time: prints durations of a 1 MB Put/Get epoch vs a 1 MB Send."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
n = 1 << 20
buf = np.zeros(n, np.uint8)
win = MPI.Win.Create(buf, comm=comm)
src = np.ones(n, np.uint8)
res = {}
for label, size in (("small", 1024), ("big", n)):
    comm.Barrier()
    t0 = MPI.Wtime()
    win.Fence()
    if rank == 0:
        win.Put([src, size, MPI.BYTE], 1)
    win.Fence()
    res["put_" + label] = MPI.Wtime() - t0
comm.Barrier()
t0 = MPI.Wtime()
win.Lock(1)
if rank == 0:
    win.Get([src, n, MPI.BYTE], 1)
win.Unlock(1)
res["get_big"] = MPI.Wtime() - t0
comm.Barrier()
t0 = MPI.Wtime()
if rank == 0:
    comm.Send([src, n, MPI.BYTE], 1)
elif rank == 1:
    comm.Recv([buf, n, MPI.BYTE], 0)
res["send_big"] = MPI.Wtime() - t0
win.Free()
slowest = {k: comm.allreduce(v, op=MPI.MAX) for k, v in sorted(res.items())}
landed = comm.bcast(int(buf[n - 1]), root=1)
if rank == 0:
    print("TIMES", " ".join(f"{k}={v:.9f}" for k, v in slowest.items()), landed)
