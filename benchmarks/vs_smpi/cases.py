"""smpy side of the differential benchmark: the same patterns as cases.c, in mpi4py.

Usage: smpyrun -np N cases.py <pattern>. Prints "<case> <simulated seconds>" from rank 0.
"""
import sys

import numpy as np
from mpi4py import MPI

try:
    import smpy
except ImportError:  # under real MPI the injected computation is skipped
    smpy = None

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def p2p_barrier():
    """All to 0 then 0 to all, with point-to-point messages (same on both emulators)."""
    b = np.zeros(1, dtype=np.uint8)
    if rank == 0:
        for i in range(1, size):
            comm.Recv([b, 0, MPI.BYTE], source=i, tag=99)
        for i in range(1, size):
            comm.Send([b, 0, MPI.BYTE], dest=i, tag=98)
    else:
        comm.Send([b, 0, MPI.BYTE], dest=0, tag=99)
        comm.Recv([b, 0, MPI.BYTE], source=0, tag=98)


def _worst(dt):
    """Max over ranks, gathered by point-to-point messages to rank 0."""
    v = np.array([dt])
    if rank != 0:
        comm.Send([v, MPI.DOUBLE], dest=0, tag=97)
        return dt
    x = np.zeros(1)
    for i in range(1, size):
        comm.Recv([x, MPI.DOUBLE], source=i, tag=97)
        v[0] = max(v[0], x[0])
    return v[0]


def pingpong():
    buf = np.ones(8388608, dtype=np.uint8)
    for n in (1, 16, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 8388608):
        p2p_barrier()
        t0 = MPI.Wtime()
        if rank == 0:
            comm.Send([buf, n, MPI.BYTE], dest=1, tag=1)
            comm.Recv([buf, n, MPI.BYTE], source=1, tag=2)
            print(f"pingpong_{n} {MPI.Wtime() - t0:.9e}")
        elif rank == 1:
            comm.Recv([buf, n, MPI.BYTE], source=0, tag=1)
            comm.Send([buf, n, MPI.BYTE], dest=0, tag=2)


def ring():
    token = np.zeros(1, dtype=np.intc)
    p2p_barrier()
    t0 = MPI.Wtime()
    for _ in range(3):
        if rank == 0:
            comm.Send([token, MPI.INT], dest=1 % size, tag=7)
            comm.Recv([token, MPI.INT], source=size - 1, tag=7)
        else:
            comm.Recv([token, MPI.INT], source=rank - 1, tag=7)
            comm.Send([token, MPI.INT], dest=(rank + 1) % size, tag=7)
    if rank == 0:
        print(f"ring_{size} {MPI.Wtime() - t0:.9e}")


def many_to_one():
    n = 1048576
    buf = np.ones(n * (size if rank == 0 else 1), dtype=np.uint8)
    p2p_barrier()
    t0 = MPI.Wtime()
    if rank == 0:
        reqs = [comm.Irecv([buf[i * n:(i + 1) * n], MPI.BYTE], source=i, tag=3) for i in range(1, size)]
        MPI.Request.Waitall(reqs)
        print(f"many_to_one_{size} {MPI.Wtime() - t0:.9e}")
    else:
        comm.Send([buf, MPI.BYTE], dest=0, tag=3)


def all_pairs():
    n = 4194304
    s, r = np.ones(n, dtype=np.uint8), np.ones(n, dtype=np.uint8)
    peer = (rank + size // 2) % size
    p2p_barrier()
    t0 = MPI.Wtime()
    comm.Sendrecv([s, MPI.BYTE], dest=peer, sendtag=4, recvbuf=[r, MPI.BYTE], source=peer, recvtag=4)
    worst = _worst(MPI.Wtime() - t0)
    if rank == 0:
        print(f"all_pairs_{size} {worst:.9e}")


def stencil():
    n = 65536
    s, r = np.ones(n, dtype=np.uint8), np.ones(n, dtype=np.uint8)
    left, right = (rank - 1) % size, (rank + 1) % size
    p2p_barrier()
    t0 = MPI.Wtime()
    for _ in range(10):
        if smpy is not None:
            smpy.execute_flops(5e6 * (1 + rank % 3))
        comm.Sendrecv([s, MPI.BYTE], dest=right, sendtag=5, recvbuf=[r, MPI.BYTE], source=left, recvtag=5)
        comm.Sendrecv([s, MPI.BYTE], dest=left, sendtag=6, recvbuf=[r, MPI.BYTE], source=right, recvtag=6)
    worst = _worst(MPI.Wtime() - t0)
    if rank == 0:
        print(f"stencil_{size} {worst:.9e}")


def _flops(f):
    if smpy is not None:
        smpy.execute_flops(f)


def polling():
    """Every rank polls at once: Testall over 4 receives, Testany over 4, an Iprobe loop
    (SMPI's polling costs grow with failures, counted per call for all ranks together)."""
    n = 4096
    b, s = np.ones(4 * n, dtype=np.uint8), np.ones(n, dtype=np.uint8)
    left, right = (rank - 1) % size, (rank + 1) % size
    p2p_barrier()
    t0 = MPI.Wtime()
    for _ in range(3):
        rq = [comm.Irecv([b[k * n:(k + 1) * n], MPI.BYTE], source=left, tag=20 + k) for k in range(4)]
        _flops(2e6 * (1 + rank % 3))
        for k in range(4):
            comm.Send([s, MPI.BYTE], dest=right, tag=20 + k)
        while not MPI.Request.Testall(rq):
            pass
        rq = [comm.Irecv([b[k * n:(k + 1) * n], MPI.BYTE], source=right, tag=30 + k) for k in range(4)]
        _flops(1e6 * (1 + rank % 2))
        for k in range(4):
            comm.Send([s, MPI.BYTE], dest=left, tag=30 + k)
        for _got in range(4):
            while not MPI.Request.Testany(rq)[1]:
                pass
        _flops(3e6 * (rank % 4))
        comm.Send([s, 1, MPI.BYTE], dest=right, tag=40)
        while not comm.Iprobe(source=left, tag=40):
            pass
        comm.Recv([b, 1, MPI.BYTE], source=left, tag=40)
    worst = _worst(MPI.Wtime() - t0)
    if rank == 0:
        print(f"polling_{size} {worst:.9e}")


{"pingpong": pingpong, "ring": ring, "many_to_one": many_to_one, "all_pairs": all_pairs,
 "stencil": stencil, "polling": polling}[sys.argv[1] if len(sys.argv) > 1 else "pingpong"]()
