"""Protocol probe under *real* mpi4py (launched by ``smpy calibrate network``): from which
message size does ``MPI_Send`` wait for the receiver?

MPI libraries send small messages *eagerly* (the sender copies them out and returns) and
large ones by *rendezvous* (the sender waits until the receive is posted). A ping-pong cannot
tell them apart, as its receives are always posted in time. Here rank 1 receives a small
header announcing the size, then stays busy for ``D`` seconds before posting the receive;
rank 0 times its ``Send``: about ``D`` means rendezvous. Sizes are scanned by powers of two,
then the threshold is found by bisection (to 8 bytes); each probe is the fastest of three.
Rank 0 prints ``{"size": n, "send": t}`` per probe, then ``{"threshold": n}``: the smallest
size whose ``Send`` waits (0 if none up to the largest size tried).

Then polling. Rank 0 sends a small message while rank 1 is busy (``D`` seconds, outside
MPI); rank 1 counts its ``Iprobe`` calls that miss it. MPICH's probe looks at what its
progress engine already pulled in, and polls only after looking: the first probe misses, so
``{"probe": "polled"}``; a library whose probe sees every message already sent gives
``"posted"`` (SimGrid's semantics). Rank 1 also times ``Iprobe`` and ``Test`` calls that find
nothing (the median of blocks of 200 calls, mpi4py's own cost included, as a program pays
it): ``{"iprobe": s, "test": s}``.

Usage: mpiexec -n 2 python -m smpy.calibrate.protocol_real MAX_EXP [DELAY_S]
"""
import json
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
max_exp = int(sys.argv[1]) if len(sys.argv) > 1 else 24
delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
buf = np.zeros((1 << max_exp) + 8, dtype=np.uint8)
head = np.zeros(1, dtype=np.int64)
STOP = -1


def probe(n: int) -> float:
    """Rank 0: the fastest of three timed Sends of n bytes to a late receiver."""
    best = float("inf")
    for _ in range(3):
        head[0] = n
        comm.Send([head, MPI.INT64_T], dest=1, tag=1)
        t0 = MPI.Wtime()
        comm.Send([buf, n, MPI.BYTE], dest=1, tag=2)
        t = MPI.Wtime() - t0
        best = min(best, t)
        comm.Recv([head, MPI.INT64_T], source=1, tag=3)
        print(json.dumps({"size": n, "send": t}), flush=True)
    return best


if rank == 0:
    waits = [n for n in (1 << e for e in range(0, max_exp + 1)) if probe(n) > delay / 2]
    threshold = 0
    if waits:
        hi = waits[0]  # the first power of two that waits (the others might not: probe them)
        lo = hi // 2   # returned at once
        while hi - lo > 8:
            mid = (lo + hi) // 2
            if probe(mid) > delay / 2:
                hi = mid
            else:
                lo = mid
        threshold = hi
    head[0] = STOP
    comm.Send([head, MPI.INT64_T], dest=1, tag=1)
    print(json.dumps({"threshold": threshold}), flush=True)
elif rank == 1:
    while True:
        comm.Recv([head, MPI.INT64_T], source=0, tag=1)
        n = int(head[0])
        if n == STOP:
            break
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < delay:  # busy, not in MPI: no progress on the receive
            pass
        comm.Recv([buf, n, MPI.BYTE], source=0, tag=2)
        comm.Send([head, MPI.INT64_T], dest=0, tag=3)


def busy(seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:  # outside MPI: no progress
        pass


def per_call(fn, blocks: int = 15, calls: int = 200) -> float:
    """Median over ``blocks`` of the mean time of ``calls`` calls of ``fn``."""
    means = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        means.append((time.perf_counter() - t0) / calls)
    return sorted(means)[len(means) // 2]


misses = []
for _ in range(3):
    comm.Barrier()
    if rank == 0:
        comm.Send([head, MPI.INT64_T], dest=1, tag=4)
    elif rank == 1:
        busy(delay)
        n = 0
        while not comm.Iprobe(source=0, tag=4):
            n += 1
        misses.append(n)
        comm.Recv([head, MPI.INT64_T], source=0, tag=4)
comm.Barrier()
if rank == 1:
    iprobe = per_call(lambda: comm.Iprobe(source=0, tag=5))
    req = comm.Irecv([head, MPI.INT64_T], source=0, tag=5)
    test = per_call(req.Test)
    req.Cancel()
    req.Wait()
    print(json.dumps({"probe": "polled" if min(misses) >= 1 else "posted", "misses": misses,
                      "iprobe": iprobe, "test": test}), flush=True)
