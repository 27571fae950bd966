"""Ping-pong of numpy buffers at one message size, for the copy benchmark
(benchmarks/speed/copies.py). Runs unchanged under real mpiexec.

    python pingpong_sizes.py SIZE REPS [pingpong|window|late] [rusage]

``pingpong``: ranks 0 and 1 exchange ``REPS`` round trips of SIZE bytes (Send/Recv);
``window``: rank 0 sends 16 Isends, rank 1 has 16 Irecvs posted, then a 4-byte ack (osu_bw's
pattern), ``REPS`` times; ``late``: rank 1 receives each message after a 1 ms sleep (the
message is unexpected when it is small). The data is checked at the end. With ``rusage``,
every rank prints ``rusage RANK CPU_S MINFLT`` of its process over the loop (between two
barriers, after one warm-up round): under smpy every rank's figure is the whole emulation's.
"""
import resource
import sys
import time

import numpy as np
from mpi4py import MPI

size, reps = int(sys.argv[1]), int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "pingpong"
measured = "rusage" in sys.argv[4:]
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = np.full(size, rank + 1, dtype=np.uint8)
ack = np.zeros(4, dtype=np.uint8)


def round_trip() -> None:
    if rank == 0:
        comm.Send(buf, dest=1, tag=1)
        comm.Recv(buf, source=1, tag=2)
    elif rank == 1:
        comm.Recv(buf, source=0, tag=1)
        comm.Send(buf, dest=0, tag=2)


if measured:  # one warm-up round trip, then the measured window
    round_trip()
    comm.Barrier()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
if mode == "pingpong":
    for _ in range(reps):
        round_trip()
elif mode == "window":
    bufs = [np.zeros(size, dtype=np.uint8) for _ in range(16)] if rank == 1 else None
    for _ in range(reps):
        if rank == 0:
            MPI.Request.Waitall([comm.Isend(buf, dest=1, tag=1) for _ in range(16)])
            comm.Recv(ack, source=1, tag=2)
        elif rank == 1:
            MPI.Request.Waitall([comm.Irecv(b, source=0, tag=1) for b in bufs])
            comm.Send(ack, dest=0, tag=2)
    if rank == 1:
        buf = bufs[-1]
elif mode == "late":
    for _ in range(reps):
        if rank == 0:
            comm.Send(buf, dest=1, tag=1)
        elif rank == 1:
            time.sleep(0.001)
            comm.Recv(buf, source=0, tag=1)
    comm.Barrier()
else:
    raise SystemExit(f"unknown mode {mode!r}")
if measured:
    comm.Barrier()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    sys.stdout.write(f"rusage {rank} {cpu:.6f} {r1.ru_minflt - r0.ru_minflt}\n")  # one write
    sys.stdout.flush()
if rank == 1 and size and int(buf[0]) != 1:
    raise SystemExit(f"pingpong_sizes: rank 1 got {int(buf[0])}, want 1")
