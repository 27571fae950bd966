"""Ping-pong between ranks 0 and 1 over a range of message sizes (numpy buffers)."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
reps = 10
if comm.Get_size() < 2:
    raise SystemExit("pingpong needs at least 2 ranks")
for size in [1, 64, 1024, 65536, 1 << 20, 1 << 23]:
    buf = np.full(size, rank, dtype=np.uint8)
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(reps):
        if rank == 0:
            comm.Send([buf, MPI.BYTE], dest=1, tag=1)
            comm.Recv([buf, MPI.BYTE], source=1, tag=2)
        elif rank == 1:
            comm.Recv([buf, MPI.BYTE], source=0, tag=1)
            buf += 1
            comm.Send([buf, MPI.BYTE], dest=0, tag=2)
    t1 = MPI.Wtime()
    if rank == 0:
        print(f"size {size:>8} B: checksum {int(buf.astype(np.int64).sum())}")
        print(f"# size {size:>8} B: one-way {((t1 - t0) / (2 * reps)) * 1e6:10.2f} us, "
              f"{size * 2 * reps / (t1 - t0) / 1e6:10.2f} MB/s")
